//! Privacy accountants: Rényi DP of the Poisson-subsampled Gaussian mechanism, the RDP → (ε, δ)
//! conversion, zCDP → (ε, δ), and the exact (ε, δ) curve of composed full-batch Gaussians.
//!
//! # What is computed, and from where
//! - [`subsampled_gaussian_rdp`]: the Rényi DP of one step of the Poisson-subsampled Gaussian
//!   mechanism under add/remove-one neighbors, by the series of Mironov, Talwar & Zhang (2019),
//!   "Rényi Differential Privacy of the Sampled Gaussian Mechanism" (arXiv:1908.10530, §3.3),
//!   evaluated as Google's `dp_accounting` (0.6.0, `rdp/rdp_privacy_accountant.py`,
//!   `_compute_rdp_poisson_subsampled_gaussian`) does, in log space.
//! - [`rdp_to_epsilon`]: the improved RDP → DP conversion of Balle, Barthe, Gaboardi, Hsu & Sato
//!   (2020, "Hypothesis testing interpretations and Rényi differential privacy", Theorem 21) and
//!   Canonne, Kamath & Steinke (2020, "The discrete Gaussian for differential privacy",
//!   Proposition 12), with the special cases of `dp_accounting`'s `_compute_epsilon`.
//! - [`RdpAccountant`]: a ledger of sampling and Gaussian sum-query events in the style of the
//!   privacy ledger of McMahan, Ramage, Talwar & Zhang (2018, "Learning differentially private
//!   recurrent language models"), composed additively in RDP (Mironov 2017, Proposition 1).
//! - [`gaussian_zcdp_rho`], [`zcdp_to_epsilon`]: Bun & Steinke (2016, "Concentrated differential
//!   privacy: simplifications, extensions, and lower bounds").
//! - [`gaussian_exact_epsilon`]: Gaussian DP (Dong, Roth & Su 2022), exact for full-batch steps.
//!
//! # Rounding
//! Values that are *bounds on privacy loss* err on the safe (large) side where a direction can be
//! chosen: ε from zCDP and from the exact Gaussian curve are rounded up; a Rényi divergence whose
//! series cannot be evaluated is reported as an error (or as +∞ by [`RdpAccountant::rdp`], a
//! vacuous but valid bound), never as a guessed value.

use std::collections::BTreeMap;
use std::f64::consts::{LN_2, PI, SQRT_2};

use statrs::function::erf::erfc;
use statrs::function::gamma::ln_gamma;

use crate::accountant::{ADD_REMOVE, DeltaRange, EpsilonRange, PrivacyAccountant, Scope};
use crate::error::{AccountingError, Result};
use crate::ledger::{LedgerEvent, SamplingPolicy};
use crate::math::gaussian_dp_delta_upper;

/// Name used in the `accountant` field of [`AccountingError`] for errors raised by this module.
const ACCOUNTANT: &str = "rdp-accountant";

/// Largest number of terms summed for one order (each series of the fractional-order formula, or
/// the binomial sum of an integer order). Beyond it the computation is reported as an error.
pub const MAX_SERIES_TERMS: usize = 100_000;

/// A series is stopped once its terms are below exp(−30) times the running total (and past the
/// point where they can still grow), the tolerance of `dp_accounting`.
const LOG_SERIES_TOLERANCE: f64 = -30.0;

fn invalid(message: String) -> AccountingError {
    AccountingError::invalid(ACCOUNTANT, message)
}

/// Shared with the PLD accountant ([`crate::pld`]).
pub(crate) fn check_sampling_rate(q: f64, allow_zero: bool) -> Result<()> {
    let ok = q.is_finite() && q <= 1.0 && if allow_zero { q >= 0.0 } else { q > 0.0 };
    if ok {
        Ok(())
    } else if allow_zero {
        Err(invalid(format!(
            "sampling rate q = {q}; allowed: 0 ≤ q ≤ 1"
        )))
    } else {
        Err(invalid(format!(
            "sampling rate q = {q}; allowed: 0 < q ≤ 1"
        )))
    }
}

fn check_noise_multiplier(z: f64) -> Result<()> {
    if z.is_finite() && z > 0.0 {
        Ok(())
    } else {
        Err(invalid(format!(
            "noise multiplier z = {z}; allowed: 0 < z < ∞ (finite)"
        )))
    }
}

/// Shared with the PLD accountant ([`crate::pld`]).
pub(crate) fn check_delta(delta: f64) -> Result<()> {
    if delta > 0.0 && delta < 1.0 {
        Ok(())
    } else {
        Err(invalid(format!("delta = {delta}; allowed: 0 < δ < 1")))
    }
}

/// Shared with the PLD accountant ([`crate::pld`]).
pub(crate) fn check_steps(steps: u64) -> Result<()> {
    if steps >= 1 {
        Ok(())
    } else {
        Err(invalid(format!("steps T = {steps}; allowed: T ≥ 1")))
    }
}

/// The default grid of Rényi orders of Google's `dp_accounting` (as used by its
/// `compute_dp_sgd_privacy_lib`): 1.1, 1.2, …, 10.9 (step 0.1), then 11, 12, …, 63, then
/// 128, 256, 512, 1024 — 156 orders.
///
/// The fractional orders are computed as `1 + k/10` exactly as in the Python source, so integer
/// orders such as 2.0 are exact and take the integer-order formula of
/// [`subsampled_gaussian_rdp`].
pub fn default_orders() -> Vec<f64> {
    let mut orders: Vec<f64> = (1..100).map(|k| 1.0 + f64::from(k) / 10.0).collect();
    orders.extend((11..64).map(f64::from));
    orders.extend([128.0, 256.0, 512.0, 1024.0]);
    orders
}

// ---------------------------------------------------------------------------------------------
// Log-space arithmetic
// ---------------------------------------------------------------------------------------------

/// log(eˣ + eʸ), with −∞ standing for 0.
fn log_add(x: f64, y: f64) -> f64 {
    let (a, b) = if x < y { (x, y) } else { (y, x) };
    if a == f64::NEG_INFINITY {
        return b;
    }
    b + (a - b).exp().ln_1p()
}

/// log(eˣ − eʸ) for x ≥ y; an error if the difference would be negative.
fn log_sub(x: f64, y: f64) -> Result<f64> {
    if x.is_nan() || y.is_nan() || x < y {
        return Err(AccountingError::LostPrecision {
            accountant: ACCOUNTANT.to_string(),
            message: format!(
                "log-space subtraction exp({x}) − exp({y}) would be negative; the series for \
                 the subsampled Gaussian RDP lost precision"
            ),
        });
    }
    if y == f64::NEG_INFINITY {
        return Ok(x);
    }
    if x == y {
        return Ok(f64::NEG_INFINITY);
    }
    // eˣ − eʸ = eˣ (1 − e^{y−x}); −expm1 is accurate both for y ≈ x and y ≪ x.
    Ok(x + (-(y - x).exp_m1()).ln())
}

/// Where [`log_erfc`] switches from `ln(erfc(x))` to the asymptotic expansion. erfc(25) ≈ 8.3e-274
/// is still a normal double, and the expansion's truncation error there is below 1e-25.
const LOG_ERFC_ASYMPTOTIC_FROM: f64 = 25.0;

/// ln(erfc(x)), accurate in the far right tail where erfc underflows.
///
/// For x < 25 this is `ln` of statrs' `erfc` (a Boost-derived rational approximation with relative
/// accuracy near machine precision, including the tail). For x ≥ 25 it is the asymptotic series
/// erfc(x) = e^{−x²}/(x√π) · Σₖ (−1)ᵏ (2k−1)!!/(2x²)ᵏ (Abramowitz & Stegun 7.1.23), truncated
/// after 8 terms.
fn log_erfc(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x < LOG_ERFC_ASYMPTOTIC_FROM {
        return erfc(x).ln();
    }
    if x == f64::INFINITY {
        return f64::NEG_INFINITY;
    }
    let inv = 1.0 / (2.0 * x * x);
    let mut term = 1.0;
    let mut sum = 0.0;
    for k in 1..=8 {
        term *= -f64::from(2 * k - 1) * inv;
        sum += term;
    }
    -x * x - x.ln() - 0.5 * PI.ln() + sum.ln_1p()
}

/// ln C(n, k) for integers 0 ≤ k ≤ n (as floats), via ln Γ.
fn log_comb(n: f64, k: f64) -> f64 {
    ln_gamma(n + 1.0) - ln_gamma(k + 1.0) - ln_gamma(n - k + 1.0)
}

fn not_converged(q: f64, sigma: f64, alpha: f64, what: &str) -> AccountingError {
    AccountingError::NotConverged {
        accountant: ACCOUNTANT.to_string(),
        series: what.to_string(),
        terms: MAX_SERIES_TERMS,
        q,
        noise_multiplier: sigma,
        alpha,
    }
}

/// ln A_α for integer α ≥ 2 and 0 < q < 1 (Mironov, Talwar & Zhang 2019, §3.3, integer case):
/// A_α = Σ_{i=0}^{α} C(α, i) qⁱ (1−q)^{α−i} exp((i² − i)/(2σ²)).
fn log_a_int(q: f64, sigma: f64, alpha: f64) -> Result<f64> {
    if alpha > MAX_SERIES_TERMS as f64 {
        return Err(not_converged(q, sigma, alpha, "the binomial sum"));
    }
    let n = alpha as u64;
    let (ln_q, ln_1mq) = (q.ln(), (-q).ln_1p());
    let two_s2 = 2.0 * sigma * sigma;
    let mut log_a = f64::NEG_INFINITY;
    for i in 0..=n {
        let fi = i as f64;
        let log_coef = log_comb(alpha, fi) + fi * ln_q + (alpha - fi) * ln_1mq;
        log_a = log_add(log_a, log_coef + (fi * fi - fi) / two_s2);
    }
    Ok(log_a)
}

/// ln A_α for fractional α > 1 and 0 < q < 1 (Mironov, Talwar & Zhang 2019, §3.3, fractional
/// case): A_α = A₀ + A₁, the integrals of the privacy-loss moment over (−∞, z₀] and [z₀, ∞) with
/// z₀ = σ² ln(1/q − 1) + ½, each expanded as a binomial series with erfc factors:
///
/// A₀ = Σᵢ C(α, i) qⁱ (1−q)^{α−i} e^{(i²−i)/(2σ²)} · ½ erfc((i − z₀)/(√2σ)),
/// A₁ = Σᵢ C(α, i) q^{α−i} (1−q)ⁱ e^{(j²−j)/(2σ²)} · ½ erfc((z₀ − j)/(√2σ)), j = α − i.
///
/// Terms are added or subtracted in log space according to the sign of C(α, i). The sums are
/// stopped, as in `dp_accounting`, once both current terms are below e^{−30} (here: relative to the
/// running total, which is ≥ 1 at the end since A_α ≥ 1). Unlike `dp_accounting`, the stop also
/// requires i > α: before that the binomial terms can still grow (e.g. α = 100.5, q = ½, σ = 100,
/// where the first terms are ≈ e^{−69} but A_α ≥ 1), and stopping there would return a wrong,
/// even negative, RDP. Beyond i > α the coefficients alternate in sign and the terms decay, so
/// the truncation error is at most the first omitted term.
fn log_a_frac(q: f64, sigma: f64, alpha: f64) -> Result<f64> {
    let (ln_q, ln_1mq) = (q.ln(), (-q).ln_1p());
    let two_s2 = 2.0 * sigma * sigma;
    // ln(1/q − 1) = ln((1 − q)/q).
    let z0 = sigma * sigma * (ln_1mq - ln_q) + 0.5;
    let erfc_scale = SQRT_2 * sigma;

    let (mut log_a0, mut log_a1) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
    // ln |C(α, i)| and its sign, updated by C(α, i+1) = C(α, i)·(α − i)/(i + 1).
    let mut log_coef = 0.0_f64;
    let mut positive = true;
    for i in 0..MAX_SERIES_TERMS {
        let fi = i as f64;
        let j = alpha - fi;

        let log_t0 = log_coef + fi * ln_q + j * ln_1mq;
        let log_t1 = log_coef + j * ln_q + fi * ln_1mq;
        let log_e0 = -LN_2 + log_erfc((fi - z0) / erfc_scale);
        let log_e1 = -LN_2 + log_erfc((z0 - j) / erfc_scale);
        let log_s0 = log_t0 + (fi * fi - fi) / two_s2 + log_e0;
        let log_s1 = log_t1 + (j * j - j) / two_s2 + log_e1;
        if log_s0.is_nan() || log_s1.is_nan() {
            return Err(not_converged(
                q,
                sigma,
                alpha,
                "a series term is NaN; the series",
            ));
        }

        if positive {
            log_a0 = log_add(log_a0, log_s0);
            log_a1 = log_add(log_a1, log_s1);
        } else {
            log_a0 = log_sub(log_a0, log_s0)?;
            log_a1 = log_sub(log_a1, log_s1)?;
        }

        let total = log_add(log_a0, log_a1);
        if fi > alpha && log_s0.max(log_s1) < total.max(0.0) + LOG_SERIES_TOLERANCE {
            return Ok(total);
        }

        let factor = alpha - fi;
        log_coef += factor.abs().ln() - (fi + 1.0).ln();
        if factor < 0.0 {
            positive = !positive;
        }
    }
    Err(not_converged(q, sigma, alpha, "the erfc series"))
}

/// Rényi DP ε(α) of **one** step of the Poisson-subsampled Gaussian mechanism (add/remove-one
/// neighbors): each record is included independently with probability `q`, the sum of the
/// included records' contributions (ℓ2-sensitivity 1) is released with N(0, z²) noise per
/// coordinate.
///
/// Computed as in Mironov, Talwar & Zhang (2019), "Rényi Differential Privacy of the Sampled
/// Gaussian Mechanism", §3.3, following Google `dp_accounting`'s
/// `_compute_rdp_poisson_subsampled_gaussian`:
/// - q = 0 → 0; q = 1 → α/(2z²) (the Gaussian mechanism; Mironov 2017, Table II);
/// - integer α → ln A_α from the finite binomial sum (`_compute_log_a_int`);
/// - fractional α → ln A_α from the two erfc series (`_compute_log_a_frac`), summed in log space
///   until the terms are below e^{−30} of the total (see the notes in the source on a stopping
///   safeguard `dp_accounting` lacks);
/// - result ln A_α/(α − 1), clipped at 0 from below (RDP is non-negative; this only absorbs
///   rounding).
///
/// T steps compose to T·ε(α) (Mironov 2017, Proposition 1).
///
/// # Errors
/// q outside [0, 1], z ≤ 0 or non-finite, α ≤ 1 or non-finite: [`AccountingError::InvalidParameter`]
/// naming the value. A series that does not converge within [`MAX_SERIES_TERMS`] terms, or that
/// loses precision, gives [`AccountingError::NotConverged`] or [`AccountingError::LostPrecision`]: no value is returned rather than a wrong
/// one.
///
/// # Examples
/// ```
/// use dp_audit_accounting::rdp::subsampled_gaussian_rdp;
/// let r = subsampled_gaussian_rdp(0.01, 1.1, 2.0)?;
/// assert!((r / 1.28510e-4 - 1.0).abs() < 1e-4);
/// # Ok::<(), dp_audit_accounting::AccountingError>(())
/// ```
pub fn subsampled_gaussian_rdp(q: f64, noise_multiplier: f64, alpha: f64) -> Result<f64> {
    check_sampling_rate(q, true)?;
    check_noise_multiplier(noise_multiplier)?;
    if !(alpha.is_finite() && alpha > 1.0) {
        return Err(invalid(format!(
            "Rényi order alpha = {alpha}; allowed: 1 < α < ∞"
        )));
    }
    if q == 0.0 {
        return Ok(0.0);
    }
    let sigma = noise_multiplier;
    if q == 1.0 {
        return Ok(alpha / (2.0 * sigma * sigma));
    }
    let log_a = if alpha.fract() == 0.0 {
        log_a_int(q, sigma, alpha)?
    } else {
        log_a_frac(q, sigma, alpha)?
    };
    let rdp = log_a / (alpha - 1.0);
    if rdp.is_nan() {
        return Err(not_converged(q, sigma, alpha, "the RDP (NaN)"));
    }
    Ok(rdp.max(0.0))
}

/// Converts RDP guarantees at several orders into (ε, δ)-DP: returns `(ε, optimal order)`.
///
/// For each order α with RDP value r, following `dp_accounting`'s `_compute_epsilon`:
/// - if δ² + expm1(−r) > 0, ε = 0: the KL bound δ ≤ √(1 − e^{−KL}) (Pinsker-type bound via
///   Bretagnolle–Huber; KL ≤ D_α) already gives δ;
/// - else if α > 1.01, ε = r + ln(1 − 1/α) − ln(δ·α)/(α − 1) (Balle et al. 2020, Theorem 21;
///   Canonne, Kamath & Steinke 2020, Proposition 12; also Asoodeh et al. 2020, eq. (20));
/// - else if α = +∞, ε = r (D_∞ ≤ r is pure r-DP);
/// - else (1 ≤ α ≤ 1.01, where the formula is numerically unstable and useless) ε = +∞.
///
/// The minimum over orders is returned (the first order attaining it), clipped at 0. An RDP
/// value of +∞ is allowed (it gives ε = +∞ at that order). The result may be +∞ if no order
/// gives a finite bound.
///
/// # Errors
/// δ outside (0, 1); `orders` and `rdp` of different lengths or empty; an order < 1 or NaN; an
/// RDP value < 0 or NaN.
pub fn rdp_to_epsilon(orders: &[f64], rdp: &[f64], delta: f64) -> Result<(f64, f64)> {
    check_delta(delta)?;
    if orders.len() != rdp.len() {
        return Err(invalid(format!(
            "{} orders but {} RDP values; allowed: equal lengths",
            orders.len(),
            rdp.len()
        )));
    }
    if orders.is_empty() {
        return Err(invalid(
            "no Rényi orders given; allowed: at least one order".to_string(),
        ));
    }
    let mut best: Option<(f64, f64)> = None;
    for (&a, &r) in orders.iter().zip(rdp) {
        if a.is_nan() || a < 1.0 {
            return Err(invalid(format!("Rényi order alpha = {a}; allowed: α ≥ 1")));
        }
        if r.is_nan() || r < 0.0 {
            return Err(invalid(format!(
                "RDP value {r} at order {a}; allowed: 0 ≤ ε(α) ≤ ∞"
            )));
        }
        let eps = if delta * delta + (-r).exp_m1() > 0.0 {
            0.0
        } else if a == f64::INFINITY {
            // D_∞ ≤ r is pure r-DP.
            r
        } else if a > 1.01 {
            r + (-1.0 / a).ln_1p() - (delta * a).ln() / (a - 1.0)
        } else {
            f64::INFINITY
        };
        if best.is_none_or(|(e, _)| eps < e) {
            best = Some((eps, a));
        }
    }
    let (eps, order) = best.unwrap_or((f64::INFINITY, orders[0]));
    Ok((eps.max(0.0), order))
}

/// A Rényi-DP accountant for Poisson-subsampled Gaussian sum queries (DP-SGD and DP-FedAvg
/// style; Abadi et al. 2016, McMahan et al. 2018), under add/remove-one neighbors.
///
/// The ledger is a list of [`LedgerEvent`]s. Several Gaussian sum queries on one sample are
/// one Gaussian query with effective noise multiplier (Σᵢ zᵢ⁻²)^{−1/2} (Mironov, Talwar & Zhang
/// 2019, §3; `dp_accounting`'s `_effective_gaussian_noise_multiplier`); each sample contributes
/// [`subsampled_gaussian_rdp`] at its rate and effective multiplier; samples compose by adding
/// RDP (Mironov 2017, Proposition 1). A sample with no query contributes nothing.
///
/// # Examples
/// ```
/// use dp_audit_accounting::rdp::RdpAccountant;
/// let mut acct = RdpAccountant::new();
/// acct.compose_poisson_gaussian(0.01, 1.1, 6000)?;
/// let (eps, order) = acct.epsilon(1e-5)?;
/// assert!((eps - 4.2465987).abs() < 1e-5 && order == 5.6);
/// # Ok::<(), dp_audit_accounting::AccountingError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RdpAccountant {
    ledger: Vec<LedgerEvent>,
    /// The full-batch queries other than Gaussian sums, with their block's repetitions
    /// ([`RdpAccountant::record_other_query`]).
    others: Vec<(u64, LedgerEvent)>,
}

impl RdpAccountant {
    /// An accountant with an empty ledger (no privacy spent).
    pub fn new() -> Self {
        Self::default()
    }

    /// The ledger, in the order events were recorded.
    pub fn ledger(&self) -> &[LedgerEvent] {
        &self.ledger
    }

    /// The full-batch queries other than Gaussian sums recorded by
    /// [`RdpAccountant::record_other_query`], each with its block's repetitions (not in
    /// [`RdpAccountant::ledger`], which holds the sampling and Gaussian-sum events).
    pub fn other_queries(&self) -> &[(u64, LedgerEvent)] {
        &self.others
    }

    /// Records a Poisson sampling event with rate `probability`, repeated `repetitions` times
    /// together with the Gaussian sum queries recorded after it.
    ///
    /// # Errors
    /// q outside (0, 1]; `repetitions` = 0.
    pub fn record_sampling(&mut self, probability: f64, repetitions: u64) -> Result<()> {
        check_sampling_rate(probability, false)?;
        check_steps(repetitions)?;
        self.ledger.push(LedgerEvent::Sampling {
            probability,
            repetitions,
        });
        Ok(())
    }

    /// [`RdpAccountant::record_sampling`] for a sample drawn by `policy`: this accountant
    /// amplifies Poisson sampling only, so any other policy is refused, named.
    ///
    /// # Errors
    /// As [`RdpAccountant::record_sampling`]; a policy other than [`SamplingPolicy::Poisson`].
    pub fn record_sampling_with_policy(
        &mut self,
        probability: f64,
        repetitions: u64,
        policy: SamplingPolicy,
    ) -> Result<()> {
        if !policy.is_poisson() {
            return Err(invalid(format!(
                "sampling policy \"{policy}\" (q = {probability}, {repetitions} repetitions): the RDP accountant amplifies Poisson sampling only; allowed: policy \"poisson\" (for {policy} batches, account without amplification: probability 1 under replace-one)"
            )));
        }
        self.record_sampling(probability, repetitions)
    }

    /// Records a Gaussian sum query on the current sample (the last sampling event).
    ///
    /// # Errors
    /// z ≤ 0 or non-finite; no sampling event recorded yet (a query must be on a sample; for a
    /// full-batch query record sampling with probability 1).
    pub fn record_gaussian_sum(&mut self, noise_multiplier: f64) -> Result<()> {
        check_noise_multiplier(noise_multiplier)?;
        if self.ledger.is_empty() {
            return Err(invalid(format!(
                "Gaussian sum query (z = {noise_multiplier}) recorded before any sampling event; \
                 allowed: after a sampling event (probability 1 for a full batch)"
            )));
        }
        self.ledger
            .push(LedgerEvent::GaussianSum { noise_multiplier });
        Ok(())
    }

    /// Records a query other than a Gaussian sum on the current sample, which must have
    /// probability 1: a Laplace sum, k-ary randomized response or an attribution summary, each
    /// with its closed-form RDP ([`other_query_rdp`]) times the sample's repetitions.
    ///
    /// # Errors
    /// No sampling event yet; a sample of probability < 1 (no subsampled RDP bound for these
    /// queries here: the PLD accountant amplifies a Laplace sum); a parameter out of range; a
    /// sampling or Gaussian-sum event.
    pub fn record_other_query(&mut self, query: LedgerEvent) -> Result<()> {
        if !query.is_query() || matches!(query, LedgerEvent::GaussianSum { .. }) {
            return Err(invalid(format!(
                "a {} event given as another query; allowed: laplace-sum, randomized-response or attribution-summary",
                query.kind()
            )));
        }
        query
            .check_other_query()
            .map_err(|m| invalid(format!("a {} event: {m}", query.kind())))?;
        let last = self.ledger.iter().rev().find_map(|e| match *e {
            LedgerEvent::Sampling {
                probability,
                repetitions,
            } => Some((probability, repetitions)),
            _ => None,
        });
        match last {
            None => Err(invalid(format!(
                "a {} event recorded before any sampling event; allowed: after a sampling event (probability 1 for a full batch)",
                query.kind()
            ))),
            Some((q, _)) if q < 1.0 => Err(invalid(format!(
                "a {} event on a Poisson sample of rate q = {q}: the RDP accountant has no subsampled bound for it; allowed: probability 1 (full batch), or the PLD accountant, which amplifies a laplace-sum by Poisson sampling",
                query.kind()
            ))),
            Some((_, reps)) => {
                self.others.push((reps, query));
                Ok(())
            }
        }
    }

    /// Records `steps` steps of the Poisson-subsampled Gaussian mechanism (rate `q`, noise
    /// multiplier `z`): one sampling event with `steps` repetitions followed by one Gaussian sum.
    ///
    /// # Errors
    /// q outside (0, 1], z ≤ 0 or non-finite, steps = 0. Nothing is recorded on error.
    pub fn compose_poisson_gaussian(&mut self, q: f64, z: f64, steps: u64) -> Result<()> {
        check_sampling_rate(q, false)?;
        check_noise_multiplier(z)?;
        check_steps(steps)?;
        self.record_sampling(q, steps)?;
        self.record_gaussian_sum(z)
    }

    /// The samples of the ledger as (q, effective z, total repetitions), identical (q, z) pairs
    /// merged so that each is evaluated once.
    fn samples(&self) -> Vec<(f64, f64, u64)> {
        // (q, Σ z⁻², repetitions) per sampling block.
        let mut blocks: Vec<(f64, f64, u64)> = Vec::new();
        for event in &self.ledger {
            match *event {
                LedgerEvent::Sampling {
                    probability,
                    repetitions,
                } => blocks.push((probability, 0.0, repetitions)),
                LedgerEvent::GaussianSum { noise_multiplier } => {
                    if let Some(block) = blocks.last_mut() {
                        block.1 += noise_multiplier.powi(-2);
                    }
                }
                // Never in `ledger`: kept in `others` by `record_other_query`.
                LedgerEvent::LaplaceSum { .. }
                | LedgerEvent::RandomizedResponse { .. }
                | LedgerEvent::AttributionSummary { .. } => {}
            }
        }
        let mut merged: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for (q, inv_z2, reps) in blocks {
            if inv_z2 > 0.0 {
                let z = inv_z2.powf(-0.5);
                let count = merged.entry((q.to_bits(), z.to_bits())).or_insert(0);
                *count = count.saturating_add(reps);
            }
        }
        merged
            .into_iter()
            .map(|((q, z), reps)| (f64::from_bits(q), f64::from_bits(z), reps))
            .collect()
    }

    /// Total RDP of the ledger at each order, with errors: the sum over samples of
    /// repetitions × [`subsampled_gaussian_rdp`].
    ///
    /// # Errors
    /// An order ≤ 1 or non-finite, or a series that does not converge (see
    /// [`subsampled_gaussian_rdp`]).
    pub fn try_rdp(&self, orders: &[f64]) -> Result<Vec<f64>> {
        let samples = self.samples();
        orders
            .iter()
            .map(|&alpha| {
                if !(alpha.is_finite() && alpha > 1.0) {
                    return Err(invalid(format!(
                        "Rényi order alpha = {alpha}; allowed: 1 < α < ∞"
                    )));
                }
                let gaussian = samples.iter().try_fold(0.0, |acc, &(q, z, reps)| {
                    Ok(acc + reps as f64 * subsampled_gaussian_rdp(q, z, alpha)?)
                })?;
                Ok(self.others.iter().fold(gaussian, |acc, (reps, query)| {
                    acc + *reps as f64 * other_query_rdp(query, alpha)
                }))
            })
            .collect()
    }

    /// Total RDP of the ledger at each order (Mironov 2017, Proposition 1: RDP adds up under
    /// composition).
    ///
    /// An order at which the value cannot be computed (order ≤ 1 or non-finite, series not
    /// converging) gets +∞: a vacuous but valid bound, which [`rdp_to_epsilon`] simply never
    /// selects. Use [`RdpAccountant::try_rdp`] to see the error instead.
    pub fn rdp(&self, orders: &[f64]) -> Vec<f64> {
        orders
            .iter()
            .map(|&alpha| {
                self.try_rdp(std::slice::from_ref(&alpha))
                    .map_or(f64::INFINITY, |v| v[0])
            })
            .collect()
    }

    /// (ε, optimal order) at `delta`, over [`default_orders`], by [`rdp_to_epsilon`].
    ///
    /// # Errors
    /// δ outside (0, 1).
    pub fn epsilon(&self, delta: f64) -> Result<(f64, f64)> {
        self.epsilon_with_orders(&default_orders(), delta)
    }

    /// (ε, optimal order) at `delta` over the given orders (each > 1), by [`rdp_to_epsilon`].
    ///
    /// # Errors
    /// δ outside (0, 1); no orders; an order < 1 or NaN.
    pub fn epsilon_with_orders(&self, orders: &[f64], delta: f64) -> Result<(f64, f64)> {
        check_delta(delta)?;
        rdp_to_epsilon(orders, &self.rdp(orders), delta)
    }
}

/// The Rényi divergence of order α > 1 of one full-batch query other than a Gaussian sum,
/// under add/remove (closed forms; +∞ for a sampling or Gaussian-sum event, which do not come
/// here):
/// - Laplace sum, a = 1/b: (1/(α−1))·ln(α/(2α−1)·e^{(α−1)a} + (α−1)/(2α−1)·e^{−αa})
///   (Mironov 2017, "Rényi differential privacy", Table II);
/// - k-ary randomized response with ε, p = e^ε/(e^ε + k − 1), r = p·e^{−ε}:
///   (1/(α−1))·ln(p^α r^{1−α} + r^α p^{1−α} + (k − 2)r), the divergence of the reports of two
///   different values (the module `pld::privacy_loss_events` derives the pair);
/// - attribution summary: the report is ε₀-DP with ε₀ = L/t and so dominated by binary
///   randomized response with ε₀ (Kairouz, Oh & Viswanath 2015), whose divergence it takes
///   (Rényi divergence respects that order by data processing).
pub fn other_query_rdp(query: &LedgerEvent, alpha: f64) -> f64 {
    let rr = |eps: f64, k: u64| -> f64 {
        let others = (k - 1) as f64;
        let ln_p = -(others * (-eps).exp()).ln_1p();
        let ln_r = ln_p - eps;
        let mut terms = vec![
            alpha * ln_p + (1.0 - alpha) * ln_r,
            alpha * ln_r + (1.0 - alpha) * ln_p,
        ];
        if k > 2 {
            terms.push(((k - 2) as f64).ln() + ln_r);
        }
        let m = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = terms.iter().map(|t| (t - m).exp()).sum();
        ((m + sum.ln()) / (alpha - 1.0)).max(0.0)
    };
    match *query {
        LedgerEvent::LaplaceSum { scale } => {
            let a = 1.0 / scale;
            let x = (alpha / (2.0 * alpha - 1.0)).ln() + (alpha - 1.0) * a;
            let y = ((alpha - 1.0) / (2.0 * alpha - 1.0)).ln() - alpha * a;
            let m = x.max(y);
            ((m + ((x - m).exp() + (y - m).exp()).ln()) / (alpha - 1.0)).max(0.0)
        }
        LedgerEvent::RandomizedResponse { epsilon, values } => rr(epsilon, values),
        LedgerEvent::AttributionSummary { l1_budget, scale } => rr(l1_budget as f64 / scale, 2),
        LedgerEvent::Sampling { .. } | LedgerEvent::GaussianSum { .. } => f64::INFINITY,
    }
}

/// (α, ε_α)-RDP ⇒ (ε, δ)-DP with
/// log δ = (α−1)(ε_α + log1p(−1/α) − ε) − log α (Balle et al. 2020, Thm 21; CKS 2020, Prop 12).
pub fn rdp_to_delta(alpha: f64, epsilon_alpha: f64, epsilon: f64) -> f64 {
    let log_delta = (alpha - 1.0) * (epsilon_alpha + (-1.0 / alpha).ln_1p() - epsilon) - alpha.ln();
    log_delta.exp().min(1.0)
}

/// ρ-zCDP ⇒ (ε, δ)-DP: the RDP conversion with ε_α = ρα, minimized over α > 1.
///
/// The minimization is a scan over a log-spaced grid of α − 1 followed by golden-section refinement
/// around the best grid point; every evaluated α yields a valid δ, so the result is valid whatever
/// the minimizer's accuracy.
pub fn zcdp_to_delta(rho: f64, epsilon: f64) -> f64 {
    let f = |log_am1: f64| {
        let alpha = 1.0 + log_am1.exp();
        rdp_to_delta(alpha, rho * alpha, epsilon)
    };
    let (lo, hi) = (-12.0_f64, 12.0_f64);
    let steps = 480;
    let mut best_x = lo;
    let mut best = f(lo);
    for i in 1..=steps {
        let x = lo + (hi - lo) * i as f64 / steps as f64;
        let v = f(x);
        if v < best {
            best = v;
            best_x = x;
        }
    }
    let h = (hi - lo) / steps as f64;
    let (mut a, mut b) = (best_x - h, best_x + h);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..80 {
        let c = b - g * (b - a);
        let d = a + g * (b - a);
        let (fc, fd) = (f(c), f(d));
        best = best.min(fc).min(fd);
        if fc < fd {
            b = d;
        } else {
            a = c;
        }
    }
    best
}

/// ρ of the Gaussian mechanism with noise multiplier z (noise standard deviation z × the
/// ℓ2-sensitivity): ρ = 1/(2z²)-zCDP (Bun & Steinke 2016, Proposition 1.6).
///
/// Returns +∞ (no guarantee) unless z > 0; z = +∞ gives 0.
pub fn gaussian_zcdp_rho(noise_multiplier: f64) -> f64 {
    if noise_multiplier > 0.0 {
        0.5 / (noise_multiplier * noise_multiplier)
    } else {
        f64::INFINITY
    }
}

/// ε(α) of the RDP → DP conversion (as in [`rdp_to_epsilon`]) for ε_α = ρα, and a bound on its
/// floating-point evaluation error.
fn zcdp_eps_at(rho: f64, delta: f64, alpha: f64) -> (f64, f64) {
    let t1 = rho * alpha;
    let t2 = (-1.0 / alpha).ln_1p();
    let t3 = (delta * alpha).ln() / (alpha - 1.0);
    let value = t1 + t2 - t3;
    // Each term is within a few ulps; 1e-14 of their absolute sum covers ≈ 45 ulps.
    let error = 1e-14 * (t1.abs() + t2.abs() + t3.abs());
    (value, error)
}

/// ρ-zCDP ⇒ (ε, δ)-DP: minimizes the RDP → DP conversion of [`rdp_to_epsilon`]
/// (Balle et al. 2020, Theorem 21; Canonne, Kamath & Steinke 2020, Proposition 12) over α > 1
/// with ε_α = ρα (ρ-zCDP is (α, ρα)-RDP for every α > 1; Bun & Steinke 2016, Definition 1.1).
///
/// The minimization scans ln(α − 1) over a grid of 2,200 points on [−15, 40] and refines the best
/// point by golden-section search; every evaluated α gives a valid ε, so the minimum over the
/// evaluated points is valid whatever the minimizer's accuracy. It is returned rounded **up** by
/// a bound on its floating-point error, so it is never smaller than the exact conversion at the
/// best evaluated α. If δ² + expm1(−ρ) > 0 the KL bound already gives ε = 0 (as in
/// `dp_accounting`). ρ = 0 gives 0.
///
/// # Errors
/// ρ < 0 or non-finite; δ outside (0, 1).
pub fn zcdp_to_epsilon(rho: f64, delta: f64) -> Result<f64> {
    if !(rho.is_finite() && rho >= 0.0) {
        return Err(invalid(format!("rho = {rho}; allowed: 0 ≤ ρ < ∞")));
    }
    check_delta(delta)?;
    if rho == 0.0 || delta * delta + (-rho).exp_m1() > 0.0 {
        return Ok(0.0);
    }
    // Best (value + error bound) over all evaluated points.
    let mut best = f64::INFINITY;
    let mut eval = |x: f64| -> f64 {
        let alpha = 1.0 + x.exp();
        let (v, err) = zcdp_eps_at(rho, delta, alpha);
        if v.is_finite() {
            best = best.min(v + err);
        }
        if v.is_nan() { f64::INFINITY } else { v }
    };
    let (lo, hi, steps) = (-15.0_f64, 40.0_f64, 2200_u32);
    let h = (hi - lo) / f64::from(steps);
    let mut best_x = lo;
    let mut best_v = eval(lo);
    for i in 1..=steps {
        let x = lo + h * f64::from(i);
        let v = eval(x);
        if v < best_v {
            best_v = v;
            best_x = x;
        }
    }
    let (mut a, mut b) = (best_x - h, best_x + h);
    let g = (5f64.sqrt() - 1.0) / 2.0;
    for _ in 0..100 {
        let c = b - g * (b - a);
        let d = a + g * (b - a);
        if eval(c) < eval(d) {
            b = d;
        } else {
            a = c;
        }
    }
    if !best.is_finite() {
        return Err(invalid(format!(
            "rho = {rho}, delta = {delta}: no finite ε found; allowed: parameters giving a \
             finite conversion"
        )));
    }
    Ok(best.next_up().max(0.0))
}

/// Exact ε at `delta` for `steps` full-batch (q = 1) Gaussian steps with noise multiplier z.
///
/// T compositions of the Gaussian mechanism with multiplier z are exactly μ-GDP with
/// μ = √T / z (Dong, Roth & Su 2022, Corollary 3.3 with Theorem 2.7), whose (ε, δ) curve is
/// δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018, Theorem 8; Dong, Roth & Su,
/// Corollary 2.13). The smallest ε with δ(ε) ≤ `delta` is found by bisection on the curve with its
/// error margin ([`gaussian_dp_delta_upper`]); the upper end of the final bracket is returned, so
/// the value errs large. 0 if δ(0) ≤ `delta` already.
///
/// # Errors
/// z ≤ 0 or non-finite; steps = 0; δ outside (0, 1); μ not finite.
pub fn gaussian_exact_epsilon(noise_multiplier: f64, steps: u64, delta: f64) -> Result<f64> {
    check_noise_multiplier(noise_multiplier)?;
    check_steps(steps)?;
    check_delta(delta)?;
    let mu = (steps as f64).sqrt() / noise_multiplier;
    if !(mu.is_finite() && mu > 0.0) {
        return Err(invalid(format!(
            "mu = sqrt(T)/z = {mu} (T = {steps}, z = {noise_multiplier}); allowed: 0 < μ < ∞"
        )));
    }
    let ok = |eps: f64| gaussian_dp_delta_upper(eps, mu) <= delta;
    if ok(0.0) {
        return Ok(0.0);
    }
    // lo violates the constraint, hi satisfies it.
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while !ok(hi) {
        lo = hi;
        hi *= 2.0;
        if hi > 1e300 {
            return Err(invalid(format!(
                "mu = {mu}: no finite ε reaches delta = {delta}; allowed: smaller μ"
            )));
        }
    }
    for _ in 0..300 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// The RDP accountant behind the one interface: Poisson samples only, under add/remove (and
/// zero-out, the same pairs); its ε is an upper bound at the best of [`default_orders`], its
/// parameter that `order`.
impl PrivacyAccountant for RdpAccountant {
    fn name(&self) -> &'static str {
        "rdp"
    }

    fn scope(&self) -> Scope {
        Scope {
            relations: ADD_REMOVE,
            full_batch_only: false,
        }
    }

    fn compose(&mut self, event: &LedgerEvent, policy: SamplingPolicy) -> Result<()> {
        match *event {
            LedgerEvent::Sampling {
                probability,
                repetitions,
            } => self.record_sampling_with_policy(probability, repetitions, policy),
            LedgerEvent::GaussianSum { noise_multiplier } => {
                self.record_gaussian_sum(noise_multiplier)
            }
            other => self.record_other_query(other),
        }
    }

    fn epsilon(&self, delta: f64) -> Result<EpsilonRange> {
        let (upper, order) = RdpAccountant::epsilon(self, delta)?;
        Ok(EpsilonRange {
            lower: None,
            upper,
            parameter: Some(("order", order)),
        })
    }

    /// The least δ over [`default_orders`] of the RDP → DP conversion ([`rdp_to_delta`]).
    fn delta(&self, epsilon: f64) -> Result<DeltaRange> {
        if epsilon.is_nan() {
            return Err(invalid("epsilon = NaN; allowed: a number".to_string()));
        }
        let orders = default_orders();
        let upper = orders
            .iter()
            .zip(self.rdp(&orders))
            .map(|(&alpha, r)| rdp_to_delta(alpha, r, epsilon))
            .fold(1.0, f64::min);
        Ok(DeltaRange { lower: None, upper })
    }
}

#[cfg(test)]
mod tests;
