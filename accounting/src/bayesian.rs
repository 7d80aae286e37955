//! The Bayesian accountant of the Poisson-subsampled Gaussian mechanism (DP-SGD): (ε_μ, δ_μ)-BDP
//! from samples of gradient distances, after Triastcyn & Faltings (2020), Theorem 3, the
//! composition of Theorem 1 and the estimator of §4.3.
//!
//! # Privacy cost (Theorem 3)
//! One step releases the sum of the clipped gradients of a Poisson sample (rate q) plus
//! N(0, z²C²) noise. For neighbors differing in one record whose gradient is at distance
//! d·C from the other side's (d = ‖g_t − g'_t‖/C), the cost at integer order λ ≥ 1 is
//! c(λ, d) = ln E_{k~Bin(λ+1, q)} exp((k² − k) d²/(2z²)).
//! The paper's cost is the larger of the two orders of the pair; for the subsampled Gaussian the
//! order "mixture against the base" dominates (Mironov, Talwar & Zhang 2019, §3.3: A_α ≥ B_α),
//! and the authors' code evaluates this same binomial form for both orders (equal-variance
//! Gaussians). (A reverse-order form E_{k~Bin(λ,q)} exp((k² + k)d²/(2z²)) is *not* used: it is a
//! different quantity, and exceeds ln A_{λ+1} by orders of magnitude at small q.)
//!
//! At d = 1 (every distance at the clipping bound: the worst case of DP), c_L is ln A_{λ+1} of
//! the sampled Gaussian, i.e. λ times its RDP at order λ + 1 (Mironov, Talwar & Zhang 2019), and
//! the BDP bound becomes the moments accountant (Abadi et al. 2016): tested in this module.
//!
//! # Composition (Theorem 1) and the estimator (§4.3)
//! Over T steps, ln Pr[L ≥ ε] ≤ Σ_t c_t(λ) − λε. The expectation over the data inside c_t is not
//! known; it is estimated from m samples d_1..d_m of the distance. As the authors' code does,
//! the steps are coupled by Hölder's inequality, so the total cost is ln E[e^{T·c(λ, d)}], and
//! that expectation is over-estimated by the one-sided Student-t upper confidence bound
//! M̂ + t_{1−γ', m−1}·Ŝ/√(m − 1) of the sample mean M̂ and standard deviation Ŝ of e^{T·c(λ, d_i)}.
//! Then with probability ≥ 1 − γ the estimate is not below the truth, and
//! ε_μ = min_λ (ĉ_total(λ) − ln(δ_μ − γ))/λ: γ is folded into δ_μ (the paper's
//! (ε_μ, δ_μ) holds with δ_μ = e^{ĉ − λε} + γ).
//!
//! Here one estimate is made per order, so γ is split evenly over the orders tried
//! (γ' = γ/#orders, union bound), where the authors' code uses the same confidence for every
//! order. The Student-t bound assumes e^{T·c} is close enough to normal for its sample mean: it
//! is the paper's estimator, not an exact bound. On a known μ (`tests/bayesian_estimator.rs`)
//! it under-states the cost far more often than γ at high orders, where e^{T·c} is very skewed.
//! Two estimators with exact guarantees sit beside it: [`bayesian_epsilon_dkw`]
//! (distribution-free, a DKW band on distances in a known range) and, for binary distances,
//! [`bayesian_epsilon_binary`] (Clopper–Pearson). [`bayesian_epsilon_unclipped`] is the paper's
//! unbounded-sensitivity regime (§5.1), with its assumptions. `audit accountant --bayesian` uses
//! the distribution-free estimator by default for clipped gradients (soundness before power) and
//! the Student-t one only when asked for by name or for unclipped gradients.
//!
//! # Group privacy (Proposition 4)
//! [`group_privacy`]: an (ε, δ)-BDP guarantee per record gives (Kε, K·e^{(K−1)ε}·δ) for datasets
//! differing in K records each drawn i.i.d. from μ; the chain argument is in its doc.
//!
//! # Assumptions
//! The distance samples are i.i.d. draws of the distance at every step (one sample set for the
//! whole run), each in [0, 2] (clipped gradients are at most 2C apart; add-remove neighbors at
//! most C, d ≤ 1).
//!
//! # Citations
//! A. Triastcyn and B. Faltings, "Bayesian Differential Privacy for Machine Learning",
//! ICML 2020 (arXiv:1901.09697), Theorems 1 and 3, §4.3; the authors' reference implementation
//! (`bayesian_privacy_accountant.py`). Abadi et al. 2016, "Deep Learning with Differential
//! Privacy" (moments accountant).

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::error::{AccountingError, Result};

fn invalid(message: String) -> AccountingError {
    AccountingError::InvalidParameter {
        accountant: "bayesian accountant".into(),
        message,
    }
}

/// ln Σ exp(v_i).
fn log_sum_exp(v: impl Iterator<Item = f64> + Clone) -> f64 {
    let m = v.clone().fold(f64::NEG_INFINITY, f64::max);
    if !m.is_finite() {
        return m;
    }
    m + v.map(|x| (x - m).exp()).sum::<f64>().ln()
}

/// ln E_{k~Bin(n, q)} exp(s(k)), summed in log space.
fn log_binomial_expectation(n: u32, q: f64, s: impl Fn(f64) -> f64) -> f64 {
    let (lq, l1q) = (q.ln(), (-q).ln_1p());
    let mut log_choose = 0.0; // ln C(n, 0)
    let mut terms = Vec::with_capacity(n as usize + 1);
    for k in 0..=n {
        if k > 0 {
            log_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        let kf = k as f64;
        let lp = log_choose
            + if k > 0 { kf * lq } else { 0.0 }
            + if k < n { (n - k) as f64 * l1q } else { 0.0 };
        terms.push(lp + s(kf));
    }
    log_sum_exp(terms.into_iter())
}

/// The one-step privacy cost c(λ, d) of Theorem 3 (module docs), at integer order λ ≥ 1,
/// sampling rate q ∈ (0, 1], noise multiplier z > 0, distance d = ‖g − g'‖/C.
pub fn step_cost(q: f64, z: f64, d: f64, lambda: u32) -> f64 {
    let a = d * d / (2.0 * z * z);
    log_binomial_expectation(lambda + 1, q, |k| (k * k - k) * a)
}

/// Orders λ the accountant tries by default: 1 to 256.
pub fn default_orders() -> Vec<u32> {
    (1..=256).collect()
}

/// The result of [`bayesian_epsilon`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BayesianAccount {
    /// ε_μ.
    pub epsilon: f64,
    /// δ_μ (γ included).
    pub delta: f64,
    /// The order λ attaining ε_μ.
    pub order: u32,
    /// γ: the probability that the estimate under-states the cost, folded into δ_μ.
    pub gamma: f64,
    /// Distance samples used.
    pub samples: usize,
}

/// (ε_μ, δ_μ)-BDP of `steps` steps of the subsampled Gaussian (q, z) from distance samples
/// `distances` (each in [0, 2], as a fraction of the clipping norm), with estimator failure
/// probability γ folded into δ (see the module docs). Rounded up.
///
/// # Errors
/// Fewer than 3 samples, a sample outside [0, 2] or NaN, q ∉ (0, 1], z ≤ 0, T = 0, δ ∉ (0, 1),
/// γ ∉ (0, δ), no orders or an order 0.
pub fn bayesian_epsilon(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    gamma: f64,
    orders: &[u32],
) -> Result<BayesianAccount> {
    student_t_epsilon(distances, q, z, steps, delta, gamma, orders, 2.0)
}

/// The Student-t account of [`bayesian_epsilon`] with distance samples in [0, `largest`]
/// (`f64::INFINITY`: [`bayesian_epsilon_unclipped`]'s regime).
#[allow(clippy::too_many_arguments)]
fn student_t_epsilon(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    gamma: f64,
    orders: &[u32],
    largest: f64,
) -> Result<BayesianAccount> {
    if distances.len() < 3 {
        return Err(invalid(format!(
            "{} distance sample(s); allowed: at least 3 (the Student-t estimator needs m − 1 ≥ 2)",
            distances.len()
        )));
    }
    check_inputs_up_to(distances, q, z, steps, delta, orders, largest)?;
    check_gamma(gamma, delta)?;
    let t = student_t_quantile(distances.len(), gamma / orders.len() as f64)?;
    best_order(orders, delta, gamma, distances.len(), |lambda| {
        log_cost_student_t_at(distances, q, z, steps, lambda, t)
    })
}

/// γ, the probability that an estimate under-states the cost, folded into δ: 0 < γ < δ.
fn check_gamma(gamma: f64, delta: f64) -> Result<()> {
    if gamma > 0.0 && gamma < delta {
        Ok(())
    } else {
        Err(invalid(format!(
            "gamma = {gamma}; allowed: 0 < γ < δ = {delta} (γ is folded into δ)"
        )))
    }
}

/// The unbounded-sensitivity regime (Triastcyn & Faltings 2020, §5.1 and App. B.2): gradients are
/// not clipped, so the distance samples d = ‖g − g'‖/C (C now only the unit of the noise std z·C)
/// may be any finite number ≥ 0, and [`bayesian_epsilon`]'s Student-t estimator is applied to
/// them as the paper does. No DP guarantee exists in this regime (the sensitivity is unbounded).
///
/// # Assumptions
/// Theorem 4 needs e^{T·c(λ, d)} to have a finite mean and variance under μ. For large d,
/// c(λ, d) ≥ ln(q^{λ+1}) + λ(λ + 1)d²/(2z²), so that mean is finite only if μ's tail is lighter
/// than every e^{−a·d²}: for a Weibull law of shape k < 2 (the paper's heavy-tailed gradients),
/// an exponential or a Pareto one, E_μ[e^{T·c(λ, d)}] = ∞ at every order λ ≥ 1, and the finite
/// estimate from finite samples bounds nothing. The samples cannot show which case holds; the
/// caller must state it (`audit accountant --bayesian --unclipped` prints this).
///
/// # Errors
/// As [`bayesian_epsilon`], with samples any finite number ≥ 0.
pub fn bayesian_epsilon_unclipped(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    gamma: f64,
    orders: &[u32],
) -> Result<BayesianAccount> {
    student_t_epsilon(distances, q, z, steps, delta, gamma, orders, f64::INFINITY)
}

/// Which estimator of the expectation over μ an account uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Estimator {
    /// The paper's Student-t estimator (§4.3.2, [`bayesian_epsilon`]), distances in [0, 2].
    StudentT,
    /// Binary distances (0 or 1): the Clopper–Pearson bound ([`bayesian_epsilon_binary`]).
    Binary,
    /// The distribution-free DKW bound for distances in [0, B] ([`bayesian_epsilon_dkw`]).
    DistributionFree {
        /// B, the largest possible distance.
        max_distance: f64,
    },
    /// The Student-t estimator on unclipped distances ([`bayesian_epsilon_unclipped`]).
    Unclipped,
}

impl Estimator {
    /// ε at each order λ of `orders` (the paper's App. B.3 curve): (ĉ_total(λ) − ln(δ − γ))/λ
    /// with this estimator's cost at λ, γ handled as in [`Estimator::account`] (split over the
    /// orders for the Student-t estimators), so the least value is the account's ε (before its
    /// rounding up). Checked as the account is.
    ///
    /// # Errors
    /// Those of [`Estimator::account`].
    #[allow(clippy::too_many_arguments)]
    pub fn epsilon_by_order(
        self,
        distances: &[f64],
        q: f64,
        z: f64,
        steps: u64,
        delta: f64,
        gamma: f64,
        orders: &[u32],
    ) -> Result<Vec<(u32, f64)>> {
        self.account(distances, q, z, steps, delta, gamma, orders)?;
        let cost: Box<dyn Fn(u32) -> f64 + '_> = match self {
            Estimator::StudentT | Estimator::Unclipped => {
                let t = student_t_quantile(distances.len(), gamma / orders.len() as f64)?;
                Box::new(move |l| log_cost_student_t_at(distances, q, z, steps, l, t))
            }
            Estimator::Binary => {
                let ones = distances.iter().filter(|&&d| d == 1.0).count() as u64;
                let p = clopper_pearson_upper(ones, distances.len() as u64 - ones, gamma)?;
                Box::new(move |l| log_cost_binary(p, q, z, steps, l))
            }
            Estimator::DistributionFree { max_distance } => {
                let mut sorted = distances.to_vec();
                sorted.sort_by(f64::total_cmp);
                let band = dkw_band(sorted.len(), gamma);
                Box::new(move |l| log_cost_dkw(&sorted, q, z, steps, l, band, max_distance))
            }
        };
        let log_rest = (delta - gamma).ln();
        Ok(orders
            .iter()
            .map(|&l| (l, ((cost(l) - log_rest) / l as f64).max(0.0)))
            .collect())
    }

    /// The account of `distances` with this estimator.
    #[allow(clippy::too_many_arguments)]
    pub fn account(
        self,
        distances: &[f64],
        q: f64,
        z: f64,
        steps: u64,
        delta: f64,
        gamma: f64,
        orders: &[u32],
    ) -> Result<BayesianAccount> {
        match self {
            Estimator::StudentT => bayesian_epsilon(distances, q, z, steps, delta, gamma, orders),
            Estimator::Binary => {
                bayesian_epsilon_binary(distances, q, z, steps, delta, gamma, orders)
            }
            Estimator::DistributionFree { max_distance } => {
                bayesian_epsilon_dkw(distances, q, z, steps, delta, gamma, orders, max_distance)
            }
            Estimator::Unclipped => {
                bayesian_epsilon_unclipped(distances, q, z, steps, delta, gamma, orders)
            }
        }
    }
}

/// t_{1−γ, m−1}: the Student-t quantile of the §4.3.2 estimator for m samples.
fn student_t_quantile(m: usize, gamma: f64) -> Result<f64> {
    let df = m as f64 - 1.0;
    Ok(StudentsT::new(0.0, 1.0, df)
        .map_err(|e| invalid(format!("Student t with {df} degrees of freedom: {e}")))?
        .inverse_cdf(1.0 - gamma))
}

/// ln of the §4.3.2 Student-t estimate at quantile `t`: ln(M̂ + t·Ŝ/√(m − 1)) for the sample mean
/// M̂ and the population-form standard deviation Ŝ of e^{T·c(λ, d_i)}, in log space.
fn log_cost_student_t_at(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    lambda: u32,
    t: f64,
) -> f64 {
    let (m, tf) = (distances.len() as f64, steps as f64);
    // v_i = T·c(λ, d_i) = ln of the i-th sample of e^{T·c}.
    let v: Vec<f64> = distances
        .iter()
        .map(|&d| tf * step_cost(q, z, d, lambda))
        .collect();
    let log_mean = log_sum_exp(v.iter().copied()) - m.ln();
    let vmax = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // ln Ŝ² (population form, as the reference code) = ln mean(e^{2v}) − ... in log space.
    let var_scaled: f64 = v
        .iter()
        .map(|&x| ((x - vmax).exp() - (log_mean - vmax).exp()).powi(2))
        .sum::<f64>()
        / m;
    if var_scaled > 0.0 {
        let log_penalty = t.ln() + vmax + 0.5 * var_scaled.ln() - 0.5 * (m - 1.0).ln();
        log_sum_exp([log_mean, log_penalty].into_iter())
    } else {
        log_mean
    }
}

/// The paper's Student-t estimate (§4.3.2, eq. 14) of ln E_μ[e^{T·c(λ, d)}] at one order λ from
/// the distance samples, at estimator failure probability `gamma` for this one order: Theorem 4
/// says it is not below the truth with probability ≥ 1 − γ. That holds when the sample mean of
/// e^{T·c} is close to normal; `tests/bayesian_estimator.rs` measures how often it is below the
/// truth on a known μ (often, at the orders a long run picks: the values are very skewed).
///
/// # Errors
/// Fewer than 3 samples, γ ∉ (0, 1).
pub fn log_cost_student_t(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    lambda: u32,
    gamma: f64,
) -> Result<f64> {
    if distances.len() < 3 {
        return Err(invalid(format!(
            "{} distance sample(s); allowed: at least 3",
            distances.len()
        )));
    }
    if !(gamma > 0.0 && gamma < 1.0) {
        return Err(invalid(format!("gamma = {gamma}; allowed: 0 < γ < 1")));
    }
    let t = student_t_quantile(distances.len(), gamma)?;
    Ok(log_cost_student_t_at(distances, q, z, steps, lambda, t))
}

/// ln E_μ[e^{T·c(λ, d)}] when μ is the uniform distribution over `distances` (exact: the mean).
pub fn log_cost_exact(distances: &[f64], q: f64, z: f64, steps: u64, lambda: u32) -> f64 {
    let tf = steps as f64;
    log_sum_exp(distances.iter().map(|&d| tf * step_cost(q, z, d, lambda)))
        - (distances.len() as f64).ln()
}

/// The one-sided DKW band width ε_m with Pr[sup_x (F̂_m(x) − F(x)) > ε_m] ≤ γ for the empirical
/// CDF F̂_m of m i.i.d. draws (Massart 1990: ≤ e^{−2mε²} when that is ≤ 1/2; for γ > 1/2 the
/// two-sided 2e^{−2mε²} is used). Rounded up.
pub fn dkw_band(m: usize, gamma: f64) -> f64 {
    let l = if gamma <= 0.5 {
        (1.0 / gamma).ln()
    } else {
        (2.0 / gamma).ln()
    };
    ((l / (2.0 * m as f64)).sqrt() * (1.0 + 1e-12)).next_up()
}

/// A distribution-free upper bound on ln E_μ[e^{T·c(λ, d)}] from the sorted distance samples
/// (ascending), for any μ supported on [0, `max_distance`]: on the event sup (F̂ − F) ≤ `band`
/// (probability ≥ 1 − γ at `band` = [`dkw_band`]), F lies above G = max(F̂ − band, 0) with G = 1
/// at the support's end, so μ is stochastically below the law that moves the lowest `band` of
/// the samples' mass to `max_distance`; c(λ, d) increases in d (its exponents (k² − k)d² are
/// non-negative), so that law's mean of e^{T·c} bounds μ's. One event serves every order λ: no
/// union bound over orders.
fn log_cost_dkw(
    sorted: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    lambda: u32,
    band: f64,
    max_distance: f64,
) -> f64 {
    let (m, tf) = (sorted.len() as f64, steps as f64);
    let mut remove = band;
    let mut terms = Vec::with_capacity(sorted.len() + 1);
    for &d in sorted {
        let w = 1.0 / m;
        let keep = (w - remove).max(0.0);
        remove = (remove - w).max(0.0);
        if keep > 0.0 {
            terms.push(keep.ln() + tf * step_cost(q, z, d, lambda));
        }
    }
    terms.push(band.min(1.0).ln() + tf * step_cost(q, z, max_distance, lambda));
    log_sum_exp(terms.into_iter())
}

/// (ε_μ, δ_μ)-BDP of `steps` steps of the subsampled Gaussian (q, z) with the distribution-free
/// estimator: the expectation over μ in the Hölder-composed cost is bounded by the DKW band
/// ([`dkw_band`], one event of probability ≤ γ for every order) on the law of the distance, which
/// must lie in [0, `max_distance`] (the clipping bound: an assumption on μ, not read off the
/// samples). Unlike the Student-t estimator it needs no normality: Pr[estimate < truth] ≤ γ
/// for every μ on that range and every sample size (Massart's DKW inequality). The price: the
/// data cannot exclude that a fraction ε_m = √(ln(1/γ)/(2m)) of records sits at the clipping
/// bound, so with few samples ε_μ approaches the moments accountant's. γ is folded into δ as in
/// [`bayesian_epsilon`]. Rounded up.
///
/// # Errors
/// No samples, a sample outside [0, `max_distance`], `max_distance` ∉ (0, 2], and the range
/// errors of [`bayesian_epsilon`].
#[allow(clippy::too_many_arguments)]
pub fn bayesian_epsilon_dkw(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    gamma: f64,
    orders: &[u32],
    max_distance: f64,
) -> Result<BayesianAccount> {
    check_inputs(distances, q, z, steps, delta, orders)?;
    if !(max_distance > 0.0 && max_distance <= 2.0) {
        return Err(invalid(format!(
            "largest distance {max_distance}; allowed: 0 < B ≤ 2 (a fraction of the clipping norm)"
        )));
    }
    if let Some((i, d)) = distances
        .iter()
        .enumerate()
        .find(|(_, d)| **d > max_distance)
    {
        return Err(invalid(format!(
            "distance sample {} = {d} is above the largest possible distance {max_distance}; allowed: samples in [0, {max_distance}]",
            i + 1
        )));
    }
    check_gamma(gamma, delta)?;
    let mut sorted = distances.to_vec();
    sorted.sort_by(f64::total_cmp);
    let band = dkw_band(sorted.len(), gamma);
    best_order(orders, delta, gamma, distances.len(), |lambda| {
        log_cost_dkw(&sorted, q, z, steps, lambda, band, max_distance)
    })
}

/// The Hölder-composed account at the order that gives the smallest ε: for each order λ,
/// ε(λ) = (ln E[e^{T·c}] − ln(δ − γ))/λ with `log_cost(λ)` = ln E[e^{T·c}] (the estimate's
/// upper bound), rounded up; γ is folded into δ.
fn best_order(
    orders: &[u32],
    delta: f64,
    gamma: f64,
    samples: usize,
    log_cost: impl Fn(u32) -> f64,
) -> Result<BayesianAccount> {
    let log_rest = (delta - gamma).ln();
    let mut best: Option<(f64, u32)> = None;
    for &lambda in orders {
        let eps = (log_cost(lambda) - log_rest) / lambda as f64;
        if eps.is_finite() && best.is_none_or(|(b, _)| eps < b) {
            best = Some((eps, lambda));
        }
    }
    let (eps, order) =
        best.ok_or_else(|| invalid("no order gave a finite ε (costs overflow)".into()))?;
    Ok(BayesianAccount {
        epsilon: (eps.max(0.0) * (1.0 + 1e-12)).next_up(),
        delta,
        order,
        gamma,
        samples,
    })
}

/// The range checks shared by [`bayesian_epsilon`] and [`bayesian_epsilon_exact`] (distances in
/// [0, 2]).
fn check_inputs(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    orders: &[u32],
) -> Result<()> {
    check_inputs_up_to(distances, q, z, steps, delta, orders, 2.0)
}

/// The range checks with distances in [0, `largest`] (`f64::INFINITY`: finite and ≥ 0, the
/// unclipped regime).
fn check_inputs_up_to(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    orders: &[u32],
    largest: f64,
) -> Result<()> {
    if distances.is_empty() {
        return Err(invalid("no distances; allowed: at least one".into()));
    }
    if let Some((i, d)) = distances
        .iter()
        .enumerate()
        .find(|(_, d)| !(d.is_finite() && (0.0..=largest).contains(*d)))
    {
        return Err(invalid(if largest.is_finite() {
            format!(
                "distance sample {} = {d}; allowed: 0 to {largest} (a fraction of the clipping norm)",
                i + 1
            )
        } else {
            format!(
                "distance sample {} = {d}; allowed: a finite number ≥ 0 (in units of the noise scale's C)",
                i + 1
            )
        }));
    }
    if !(q > 0.0 && q <= 1.0) {
        return Err(invalid(format!(
            "sampling rate q = {q}; allowed: 0 < q ≤ 1"
        )));
    }
    if !(z.is_finite() && z > 0.0) {
        return Err(invalid(format!(
            "noise multiplier z = {z}; allowed: finite and > 0"
        )));
    }
    if steps == 0 {
        return Err(invalid("steps T = 0; allowed: at least 1".into()));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(invalid(format!("delta = {delta}; allowed: 0 < δ < 1")));
    }
    if orders.is_empty() || orders.contains(&0) {
        return Err(invalid(
            "orders must be a non-empty list of integers ≥ 1".into(),
        ));
    }
    Ok(())
}

/// (ε_μ, δ_μ)-BDP of `steps` steps of the subsampled Gaussian (q, z) when μ is *known*: the
/// uniform distribution over `distances` (each in [0, 2]). The expectation over μ inside the
/// Hölder-composed cost is then computed exactly, ln E_μ[e^{T·c(λ, d)}] = ln mean_i e^{T·c(λ, d_i)},
/// so no estimator is needed and no γ enters δ: by Markov's inequality on e^{λL} for each
/// record (both orders: the binomial cost bounds the larger one, module docs) and averaging over
/// μ, Pr_{x'~μ, w}[L ≥ ε] ≤ E_μ[e^{T·c(λ, d)}]·e^{−λε} = δ at the returned ε. Rounded up.
/// Returns (ε, the order attaining it).
///
/// # Errors
/// As [`bayesian_epsilon`], without γ; at least one distance.
pub fn bayesian_epsilon_exact(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    orders: &[u32],
) -> Result<(f64, u32)> {
    check_inputs(distances, q, z, steps, delta, orders)?;
    let (m, tf) = (distances.len() as f64, steps as f64);
    // γ = 0: the exact mean, nothing folded into δ.
    let a = best_order(orders, delta, 0.0, distances.len(), |lambda| {
        log_sum_exp(distances.iter().map(|&d| tf * step_cost(q, z, d, lambda))) - m.ln()
    })?;
    Ok((a.epsilon, a.order))
}

/// The moments accountant's ε (Abadi et al. 2016): min over integer λ of
/// (T·ln A_{λ+1} − ln δ)/λ with the sampled Gaussian's A (Mironov, Talwar & Zhang 2019), from
/// [`crate::rdp::subsampled_gaussian_rdp`]. What [`bayesian_epsilon`] gives when every
/// distance is at the clipping bound and γ → 0.
pub fn moments_accountant_epsilon(
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    orders: &[u32],
) -> Result<(f64, u32)> {
    let mut best: Option<(f64, u32)> = None;
    for &lambda in orders {
        let rdp = crate::rdp::subsampled_gaussian_rdp(q, z, lambda as f64 + 1.0)?;
        let eps = (steps as f64 * lambda as f64 * rdp - delta.ln()) / lambda as f64;
        if eps.is_finite() && best.is_none_or(|(b, _)| eps < b) {
            best = Some((eps, lambda));
        }
    }
    best.ok_or_else(|| invalid("no order gave a finite ε".into()))
}

/// One row of [`record_epsilon_distance_quantiles`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DistanceQuantile {
    /// The quantile p of the distance samples, in % (0 < p ≤ 100).
    pub quantile: f64,
    /// The distance d_p: at least p % of the records have a distance ≤ d_p (the ⌈p·m/100⌉-th
    /// smallest of the m samples).
    pub distance: f64,
    /// An upper bound on the individual ε at δ of a record whose distance is at most d_p at
    /// every step: the pessimistic PLD ε of the subsampled Gaussian with noise multiplier z/d_p.
    pub epsilon: f64,
}

/// Individual DP at quantiles of the distances (`audit accountant --bayesian
/// --distance-quantiles`): "p % of the distance samples are ≤ d_p, and a record at distance ≤ d_p
/// enjoys ε ≤ ε_p". This is *not* the paper's §4.4.1 percentile curve (that one is
/// [`markov_percentile_epsilon`], from the BDP δ_μ by Markov's inequality); it is a per-record
/// worst-case statement read off the distance file. A record whose clipped gradient stays within d·C of its neighbor's at every step
/// meets individual (ε, δ)-DP with the ε of the Poisson-subsampled Gaussian at noise multiplier
/// z/d (its sensitivity is d·C against noise of std z·C; Feldman & Zrnic 2021, individual privacy
/// accounting), and that ε grows with d, so the records at or below the p-th percentile of the
/// distances enjoy at most ε_p. Computed with the pessimistic PLD (an upper bound, rounded up)
/// under add/remove neighbors. The fraction is of the samples given, not of the population;
/// the assumption that a record's distance is the same at every step is the file's to meet.
///
/// A noise multiplier above [`crate::pld::MAX_NOISE_MULTIPLIER`] is evaluated at that maximum
/// (less noise: a larger ε, the safe side); d_p = 0 gives ε = 0.
///
/// # Errors
/// No samples, a percentile outside (0, 100], or the PLD accountant's own range errors.
pub fn record_epsilon_distance_quantiles(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    quantiles: &[f64],
) -> Result<Vec<DistanceQuantile>> {
    if distances.is_empty() {
        return Err(invalid("no distance samples; allowed: at least one".into()));
    }
    let mut sorted = distances.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantiles
        .iter()
        .map(|&p| {
            if !(p > 0.0 && p <= 100.0) {
                return Err(invalid(format!(
                    "distance quantile {p} %; allowed: numbers in (0, 100]"
                )));
            }
            let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
            let distance = sorted[rank.min(sorted.len()) - 1];
            let epsilon = if distance <= 0.0 {
                0.0
            } else {
                let zr = (z / distance).min(crate::pld::MAX_NOISE_MULTIPLIER);
                crate::pld::epsilon_bounds(q, zr, steps, delta, crate::Neighboring::AddRemove)?.0
            };
            Ok(DistanceQuantile {
                quantile: p,
                distance,
                epsilon,
            })
        })
        .collect()
}

/// The paper's binary-data estimator (Triastcyn & Faltings 2020, §4.3.1), kept for reference:
/// the accountant uses [`clopper_pearson_upper`] instead, because this credible bound misses a
/// fixed p more often than γ. For records in
/// {0, 1} with `ones` ones and `zeros` zeros, a flat prior on the mean p gives the posterior
/// Beta(1 + ones, 1 + zeros), and the estimate is its (1 − γ) quantile F^{-1}(1 − γ), which is
/// above p with posterior probability 1 − γ. Unlike the sample mean it never returns 0 on data
/// without ones (the paper's example: 100 zeros give Beta(1, 101), F^{-1}(1 − γ) = 1 − γ^{1/101}).
///
/// Computed by bisection on the upper tail I_{1−p}(1 + zeros, 1 + ones) (statrs'
/// regularized incomplete beta), keeping the end where the tail is ≤ γ·(1 − 1e-6): rounded up,
/// so a relative error up to 1e-6 in the incomplete beta cannot make it an under-estimate.
/// Hand-written because statrs' Beta quantile gives no direction guarantee (as in the
/// Clopper–Pearson bounds of `dp_audit::bounds`).
///
/// # Errors
/// γ ∉ (0, 1).
pub fn beta_posterior_mean_upper(ones: u64, zeros: u64, gamma: f64) -> Result<f64> {
    if !(gamma > 0.0 && gamma < 1.0) {
        return Err(invalid(format!(
            "estimator failure probability γ = {gamma}; allowed: 0 < γ < 1"
        )));
    }
    Ok(beta_upper_quantile(
        1.0 + ones as f64,
        1.0 + zeros as f64,
        gamma,
    ))
}

/// The Clopper–Pearson upper confidence bound on p = Pr[d = 1] from `ones` ones and `zeros`
/// zeros: the (1 − γ) quantile of Beta(1 + ones, zeros), 1 when there are no zeros. Exact for
/// every p and every sample size: Pr_p[bound < p] ≤ γ (the bound is below p only when
/// Pr[Bin(n, p) ≤ ones] < γ). This is what the accountant uses on binary data: the paper's
/// flat-prior posterior quantile ([`beta_posterior_mean_upper`], Beta(1 + ones, 1 + zeros)) is a
/// credible bound, not a confidence bound, and lies below this one; its chance of falling below
/// a fixed p exceeds γ (exactly, at n = 20, γ = 0.05: 0.0688 at p = 0.49; tested).
///
/// # Errors
/// γ ∉ (0, 1).
pub fn clopper_pearson_upper(ones: u64, zeros: u64, gamma: f64) -> Result<f64> {
    if !(gamma > 0.0 && gamma < 1.0) {
        return Err(invalid(format!(
            "estimator failure probability γ = {gamma}; allowed: 0 < γ < 1"
        )));
    }
    if zeros == 0 {
        return Ok(1.0);
    }
    Ok(beta_upper_quantile(1.0 + ones as f64, zeros as f64, gamma))
}

/// The (1 − γ) quantile of Beta(a, b), a, b > 0, by bisection on the upper tail
/// I_{1−p}(b, a), keeping the end where the tail is ≤ γ·(1 − 1e-6): rounded up.
fn beta_upper_quantile(a: f64, b: f64, gamma: f64) -> f64 {
    let level = gamma * (1.0 - 1e-6);
    // Upper tail Pr[P > p] = I_{1−p}(b, a), decreasing in p; keep tail(hi) ≤ level.
    let tail = |p: f64| -> f64 {
        if p >= 1.0 {
            return 0.0;
        }
        if p <= 0.0 {
            return 1.0;
        }
        // a, b > 0: the error path cannot happen; NaN moves the bisection up (the safe side).
        statrs::function::beta::checked_beta_reg(b, a, 1.0 - p).unwrap_or(f64::NAN)
    };
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if tail(mid) <= level {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// (ε_μ, δ_μ)-BDP of `steps` steps of the subsampled Gaussian (q, z) when every distance sample
/// is 0 or 1 (a record either leaves the gradient unchanged or moves it by the clipping norm):
/// the expectation over μ in the Hölder-composed cost is E[e^{T·c(λ, d)}] = 1 + p·(A_λ − 1),
/// A_λ = e^{T·c(λ, 1)}, p = Pr_μ[d = 1], and p is over-estimated by the Clopper–Pearson bound
/// [`clopper_pearson_upper`] at confidence 1 − γ (the paper's §4.3.1 estimator with the
/// flat-prior posterior replaced by the exact confidence bound, which is above it: the
/// posterior quantile misses p more often than γ; one estimate serves every order, so γ is not
/// split), folded into δ as in [`bayesian_epsilon`]. Rounded up.
///
/// # Errors
/// A sample other than 0 or 1, no samples, and the range errors of [`bayesian_epsilon`].
pub fn bayesian_epsilon_binary(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    gamma: f64,
    orders: &[u32],
) -> Result<BayesianAccount> {
    check_inputs(distances, q, z, steps, delta, orders)?;
    if let Some((i, d)) = distances
        .iter()
        .enumerate()
        .find(|(_, d)| **d != 0.0 && **d != 1.0)
    {
        return Err(invalid(format!(
            "distance sample {} = {d}; the binary estimator takes 0 or 1 only",
            i + 1
        )));
    }
    check_gamma(gamma, delta)?;
    let ones = distances.iter().filter(|&&d| d == 1.0).count() as u64;
    let zeros = distances.len() as u64 - ones;
    let p = clopper_pearson_upper(ones, zeros, gamma)?;
    best_order(orders, delta, gamma, distances.len(), |lambda| {
        log_cost_binary(p, q, z, steps, lambda)
    })
}

/// ln(1 + p(A_λ − 1)) = ln((1 − p) + p·A_λ), A_λ = e^{T·c(λ, 1)}, in log space.
fn log_cost_binary(p: f64, q: f64, z: f64, steps: u64, lambda: u32) -> f64 {
    let log_a = steps as f64 * step_cost(q, z, 1.0, lambda);
    log_sum_exp([(1.0 - p).max(0.0).ln(), p.ln() + log_a].into_iter())
}

/// One row of the paper's percentile curve ([`markov_percentile_epsilon`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MarkovPercentile {
    /// The fraction of μ covered, in % (0 < p < 100).
    pub percentile: f64,
    /// ε_p: at least p % of the records x' ~ μ have Pr_w[L ≥ ε_p | x'] ≤ δ.
    pub epsilon: f64,
    /// The δ of the statement (the run's δ).
    pub delta: f64,
    /// The BDP δ_μ = (1 − p/100)·δ at which ε_p was accounted (γ included).
    pub delta_mu: f64,
}

/// The paper's percentile curve (Triastcyn & Faltings 2020, §4.4.1, eq. 18–20). Write
/// δ(x') = Pr_w[L ≥ ε | x'] for the conditional tail of the privacy loss given the differing
/// record (eq. 18); the BDP tail is its average, Pr_{x',w}[L ≥ ε] = E_{x'~μ} δ(x') ≤ δ_μ
/// (eq. 20). δ(x') ≥ 0, so Markov's inequality gives Pr_{x'}[δ(x') > δ] ≤ δ_μ/δ: at
/// δ_μ = (1 − p)·δ, at least a fraction p of the records x' ~ μ have δ(x') ≤ δ, i.e. the pair
/// (D, D ∪ {x'}) meets Pr_w[L ≥ ε] ≤ δ (hence an (ε, δ) indistinguishability for that pair, the
/// hockey-stick divergence being at most the tail). For each percentile p the returned ε_p is
/// the `estimator`'s ε at δ_μ = (1 − p/100)·δ (γ folded in as there).
///
/// # Errors
/// A percentile outside (0, 100), γ ≥ (1 − p/100)·δ (then γ alone exceeds the δ_μ needed: lower
/// γ or the percentile), and the accountant's own errors.
#[allow(clippy::too_many_arguments)]
pub fn markov_percentile_epsilon(
    distances: &[f64],
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    gamma: f64,
    orders: &[u32],
    percentiles: &[f64],
    estimator: Estimator,
) -> Result<Vec<MarkovPercentile>> {
    percentiles
        .iter()
        .map(|&p| {
            if !(p > 0.0 && p < 100.0) {
                return Err(invalid(format!(
                    "percentile {p}; allowed: numbers in (0, 100) (at 100 Markov's inequality gives nothing)"
                )));
            }
            // Rounded down: a smaller δ_μ only makes ε_p larger (the safe side).
            let delta_mu = ((1.0 - p / 100.0) * delta).next_down();
            if gamma >= delta_mu {
                return Err(invalid(format!(
                    "percentile {p}: δ_μ = (1 − p/100)·δ = {delta_mu:e} is not above γ = {gamma:e}; allowed: a smaller --gamma or percentile"
                )));
            }
            let acc = estimator.account(distances, q, z, steps, delta_mu, gamma, orders)?;
            Ok(MarkovPercentile {
                percentile: p,
                epsilon: acc.epsilon,
                delta,
                delta_mu,
            })
        })
        .collect()
}

/// Two-sample tests of the §4.4.3 leakage check ([`compare_distances`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DistanceComparison {
    /// Samples in the first (training) set.
    pub train_samples: usize,
    /// Samples in the second (held-out) set.
    pub test_samples: usize,
    /// Sample means of the two sets.
    pub train_mean: f64,
    /// Sample mean of the held-out set.
    pub test_mean: f64,
    /// Welch's t statistic (train − test).
    pub t_statistic: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub t_degrees_of_freedom: f64,
    /// Two-sided p-value of Welch's t-test for equal means.
    pub t_p_value: f64,
    /// Levene's W statistic (deviations from the group medians: Brown–Forsythe).
    pub levene_statistic: f64,
    /// p-value of Levene's test for equal variances (F(1, n − 2)).
    pub levene_p_value: f64,
}

/// The paper's §4.4.3 / §5.2 check that the privacy-cost estimator leaks little: compare the
/// gradient distances of training records with those of held-out records by Welch's t-test for
/// equal means (unequal variances allowed; scipy `ttest_ind(equal_var=False)`) and Levene's test
/// for equal variances with median centring (Brown–Forsythe; scipy `levene`'s default), p-values
/// from statrs' Student-t and Fisher–Snedecor laws. Large p-values say the data show no
/// difference; they do not bound the leakage (the paper's own caveat: a statistical check, not a
/// guarantee).
///
/// # Errors
/// Fewer than 2 samples in a set, a non-finite sample, or both sets constant.
pub fn compare_distances(train: &[f64], test: &[f64]) -> Result<DistanceComparison> {
    use statrs::distribution::FisherSnedecor;
    for (name, x) in [("training", train), ("held-out", test)] {
        if x.len() < 2 {
            return Err(invalid(format!(
                "{} {name} distance sample(s); allowed: at least 2",
                x.len()
            )));
        }
        if let Some((i, v)) = x.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(invalid(format!(
                "{name} distance sample {} = {v}; allowed: finite numbers",
                i + 1
            )));
        }
    }
    let mean = |x: &[f64]| x.iter().sum::<f64>() / x.len() as f64;
    let var = |x: &[f64]| {
        let m = mean(x);
        x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() as f64 - 1.0)
    };
    let (n1, n2) = (train.len() as f64, test.len() as f64);
    let (m1, m2) = (mean(train), mean(test));
    let (s1, s2) = (var(train) / n1, var(test) / n2);
    if s1 + s2 <= 0.0 {
        return Err(invalid(
            "both distance sets are constant; allowed: sets with some spread".into(),
        ));
    }
    let t = (m1 - m2) / (s1 + s2).sqrt();
    let df = (s1 + s2).powi(2) / (s1 * s1 / (n1 - 1.0) + s2 * s2 / (n2 - 1.0));
    let student = StudentsT::new(0.0, 1.0, df)
        .map_err(|e| invalid(format!("Student t with {df} degrees of freedom: {e}")))?;
    let t_p = (2.0 * student.cdf(-t.abs())).min(1.0);
    // Levene: one-way ANOVA on z = |x − median| of each group.
    let median = |x: &[f64]| {
        let mut v = x.to_vec();
        v.sort_by(f64::total_cmp);
        let k = v.len();
        if k % 2 == 1 {
            v[k / 2]
        } else {
            0.5 * (v[k / 2 - 1] + v[k / 2])
        }
    };
    let z1: Vec<f64> = train.iter().map(|v| (v - median(train)).abs()).collect();
    let z2: Vec<f64> = test.iter().map(|v| (v - median(test)).abs()).collect();
    let (zm1, zm2) = (mean(&z1), mean(&z2));
    let zm = (z1.iter().sum::<f64>() + z2.iter().sum::<f64>()) / (n1 + n2);
    let between = n1 * (zm1 - zm).powi(2) + n2 * (zm2 - zm).powi(2);
    let within = z1.iter().map(|v| (v - zm1).powi(2)).sum::<f64>()
        + z2.iter().map(|v| (v - zm2).powi(2)).sum::<f64>();
    let dof = n1 + n2 - 2.0;
    let (w, w_p) = if within > 0.0 {
        let w = dof * between / within;
        let f = FisherSnedecor::new(1.0, dof).map_err(|e| invalid(format!("F(1, {dof}): {e}")))?;
        (w, f.sf(w))
    } else {
        // No spread around the medians in either set: nothing to compare.
        (0.0, 1.0)
    };
    Ok(DistanceComparison {
        train_samples: train.len(),
        test_samples: test.len(),
        train_mean: m1,
        test_mean: m2,
        t_statistic: t,
        t_degrees_of_freedom: df,
        t_p_value: t_p,
        levene_statistic: w,
        levene_p_value: w_p,
    })
}

/// Largest group size K that [`group_privacy`] accepts.
pub const MAX_GROUP: u64 = 1_000_000;

/// Group privacy of Bayesian DP (Triastcyn & Faltings 2020, Proposition 4): if M is
/// (ε, δ)-BDP for μ (one differing record x' ~ μ, any fixed rest of the dataset), then for
/// datasets differing in K records x'_1..x'_K drawn i.i.d. from μ it is
/// (K·ε, K·e^{(K−1)ε}·δ)-BDP. Returns that pair, both rounded up (the safe side: a larger
/// claim is weaker).
///
/// *Derivation (the chain D_0..D_K).* Let D_0 = D and D_i = D_{i−1} with x'_i (added under
/// add/remove; under replace-one the i-th of the last K records replaced), and write R_i for the
/// law of (x'_1..x'_K, w ~ M(D_i)). Fix every record but x'_i: D_{i−1} is then a fixed dataset
/// and x'_i ~ μ independent of it, so the per-record claim applies to the pair
/// (D_{i−1}, D_i). For any event S (on the output, or jointly on the records and the output),
/// its section in (x'_i, w) satisfies Pr[S | rest] under D_i ≤ e^ε·Pr[S | rest] under
/// D_{i−1} + δ (for a Definition 1 claim through H_{e^ε} ≤ Pr[L ≥ ε]; see
/// `dp_audit::audit::bayesian`),
/// and averaging over the rest gives R_i(S) ≤ e^ε R_{i−1}(S) + δ, and the same with R_i and
/// R_{i−1} exchanged. Chaining K steps:
/// R_K(S) ≤ e^{Kε} R_0(S) + δ·(1 + e^ε + … + e^{(K−1)ε}), and each of the K terms of the sum is
/// ≤ e^{(K−1)ε}, so the sum is ≤ K·e^{(K−1)ε}: the proposition's factor (the chain gives the
/// smaller (e^{Kε} − 1)/(e^ε − 1) when ε > 0; the proposition's, which is what the paper states
/// and what is reported, is the larger and so also valid).
///
/// # Errors
/// ε or δ out of range (ε finite ≥ 0, 0 ≤ δ < 1), K = 0 or K > [`MAX_GROUP`], and a group δ
/// that is not below 1 (no guarantee for K records: the message gives the largest K that keeps
/// one).
pub fn group_privacy(epsilon: f64, delta: f64, k: u64) -> Result<(f64, f64)> {
    if !(epsilon.is_finite() && epsilon >= 0.0) {
        return Err(invalid(format!(
            "per-record ε {epsilon}; allowed: a finite number ≥ 0"
        )));
    }
    if !(0.0..1.0).contains(&delta) {
        return Err(invalid(format!("per-record δ {delta}; allowed: 0 ≤ δ < 1")));
    }
    if !(1..=MAX_GROUP).contains(&k) {
        return Err(invalid(format!(
            "group of {k} records; allowed: a whole number from 1 to {MAX_GROUP}"
        )));
    }
    let up = |x: f64| (x * (1.0 + 1e-12)).next_up();
    let kf = k as f64;
    let eps = if k == 1 { epsilon } else { up(kf * epsilon) };
    // K·e^{(K−1)ε}·δ through its logarithm, so that an overflow of e^{(K−1)ε} reads as "not
    // below 1"; rounded up (the log's rounding error, a few ulps of a number below ~10^3, is far
    // inside the 10^-12 margin).
    let log_of = |k: u64| (k as f64).ln() + (k as f64 - 1.0) * epsilon + delta.ln();
    let group_delta = |k: u64| {
        if k == 1 {
            delta
        } else if delta == 0.0 {
            0.0
        } else {
            up(log_of(k).exp())
        }
    };
    let log_delta = log_of(k);
    let d = group_delta(k);
    if d.is_nan() || d >= 1.0 {
        // The group δ grows with K: the largest K with a group δ below 1, by bisection.
        let ok = |k: u64| group_delta(k) < 1.0;
        let (mut lo, mut hi) = (1u64, k);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if ok(mid) { lo = mid } else { hi = mid }
        }
        return Err(invalid(format!(
            "group of {k} records: Proposition 4 gives δ = K·e^{{(K−1)ε}}·δ = {} for ε = {epsilon}, δ = {delta}, which is not below 1 (no guarantee for {k} records); allowed: K ≤ {lo} here",
            if log_delta > 700.0 {
                format!("e^{log_delta:.1}")
            } else {
                format!("{:.4e}", log_delta.exp())
            }
        )));
    }
    Ok((eps, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Proposition 4's arithmetic: K = 1 is the claim itself, K = 2 and 3 by hand, the factor is
    /// at least the chain's geometric sum, the results are rounded up, and bad K or a δ that
    /// reaches 1 are refused with the largest K that keeps a guarantee.
    #[test]
    fn group_privacy_proposition_4() {
        assert_eq!(group_privacy(0.5, 1e-5, 1).unwrap(), (0.5, 1e-5));
        let (e, d) = group_privacy(0.5, 1e-5, 2).unwrap();
        assert!((1.0..1.0 + 1e-9).contains(&e), "{e}");
        let want = 2.0 * 0.5f64.exp() * 1e-5;
        assert!((want..want * (1.0 + 1e-9)).contains(&d), "{d} vs {want}");
        let (e, d) = group_privacy(1.0, 1e-4, 3).unwrap();
        assert!((3.0..3.0 + 1e-9).contains(&e));
        let want = 3.0 * 2f64.exp() * 1e-4;
        assert!((want..want * (1.0 + 1e-9)).contains(&d), "{d} vs {want}");
        // The chain's sum 1 + e^ε + e^{2ε} is below the proposition's 3e^{2ε}.
        let chain = (1.0 + 1f64.exp() + 2f64.exp()) * 1e-4;
        assert!(chain < d);
        // δ = 0 stays 0 (pure Bayesian claims stay pure).
        let (e, d) = group_privacy(1.0, 0.0, 4).unwrap();
        assert!(d == 0.0 && (4.0..4.0 + 1e-9).contains(&e), "{e} {d}");
        for (k, needle) in [(0, "group of 0"), (MAX_GROUP + 1, "from 1 to")] {
            let e = group_privacy(1.0, 1e-5, k).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
        // ε = 1, δ = 1e-5: K = 9 gives 9e^8·1e-5 = 0.268, K = 10 gives 10e^9·1e-5 = 0.81,
        // K = 11 gives 11e^10·1e-5 = 2.42 ≥ 1.
        assert!(group_privacy(1.0, 1e-5, 10).is_ok());
        let e = group_privacy(1.0, 1e-5, 11).unwrap_err().to_string();
        assert!(e.contains("not below 1") && e.contains("K ≤ 10"), "{e}");
        // An overflowing e^{(K−1)ε}: refused, not infinite.
        let e = group_privacy(700.0, 1e-5, 1000).unwrap_err().to_string();
        assert!(e.contains("not below 1") && e.contains("K ≤ 1 here"), "{e}");
        assert!(group_privacy(f64::NAN, 1e-5, 2).is_err());
        assert!(group_privacy(1.0, 1.0, 2).is_err());
    }

    /// With every distance at 1 the exact accountant is the moments accountant (same orders).
    #[test]
    fn exact_at_the_clipping_bound_is_the_moments_accountant() {
        let orders = default_orders();
        let (e, o) = bayesian_epsilon_exact(&[1.0; 4], 0.01, 1.1, 1000, 1e-5, &orders).unwrap();
        let (m, mo) = moments_accountant_epsilon(0.01, 1.1, 1000, 1e-5, &orders).unwrap();
        assert_eq!(o, mo);
        assert!((e / m - 1.0).abs() < 1e-9, "{e} vs {m}");
        let (small, _) = bayesian_epsilon_exact(&[0.1; 4], 0.01, 1.1, 1000, 1e-5, &orders).unwrap();
        assert!(small < e);
        assert!(bayesian_epsilon_exact(&[], 0.01, 1.1, 1000, 1e-5, &orders).is_err());
        assert!(bayesian_epsilon_exact(&[3.0], 0.01, 1.1, 1000, 1e-5, &orders).is_err());
    }

    /// Distance quantiles: ranks are the upper empirical quantiles, ε grows with the distance, the
    /// largest distance at 1 gives the worst-case (DP) PLD ε, and d = 0 gives 0.
    #[test]
    fn distance_quantiles_rank_and_bound() {
        let d: Vec<f64> = (0..100).map(|i| i as f64 / 99.0).collect();
        let rows =
            record_epsilon_distance_quantiles(&d, 0.01, 1.1, 100, 1e-5, &[1.0, 50.0, 90.0, 100.0])
                .unwrap();
        assert_eq!(rows[0].distance, 0.0);
        assert_eq!(rows[0].epsilon, 0.0);
        assert_eq!(rows[1].distance, d[49]);
        assert_eq!(rows[2].distance, d[89]);
        assert_eq!(rows[3].distance, 1.0);
        assert!(rows[1].epsilon < rows[2].epsilon && rows[2].epsilon < rows[3].epsilon);
        let worst = crate::pld::epsilon_bounds(0.01, 1.1, 100, 1e-5, crate::Neighboring::AddRemove)
            .unwrap()
            .0;
        assert_eq!(rows[3].epsilon, worst);
        assert!(record_epsilon_distance_quantiles(&d, 0.01, 1.1, 100, 1e-5, &[0.0]).is_err());
        assert!(record_epsilon_distance_quantiles(&[], 0.01, 1.1, 100, 1e-5, &[50.0]).is_err());
    }

    /// At d = 1 the cost is the sampled Gaussian's ln A_{λ+1} = λ·RDP(λ + 1),
    /// so the Bayesian accountant with worst-case distances is the moments accountant.
    #[test]
    fn worst_case_distances_reproduce_the_moments_accountant() {
        for (q, z) in [(0.01, 1.1), (0.01, 4.0), (0.1, 2.0)] {
            for lambda in [1u32, 2, 4, 8, 16, 32] {
                let c = step_cost(q, z, 1.0, lambda);
                let rdp = crate::rdp::subsampled_gaussian_rdp(q, z, lambda as f64 + 1.0).unwrap();
                let want = lambda as f64 * rdp;
                assert!(
                    (c / want - 1.0).abs() < 1e-9,
                    "q {q} z {z} λ {lambda}: {c} vs {want}"
                );
            }
        }
        let orders = default_orders();
        let (ma, _) = moments_accountant_epsilon(0.01, 1.1, 6000, 1e-5, &orders).unwrap();
        let b = bayesian_epsilon(&[1.0; 50], 0.01, 1.1, 6000, 1e-5, 1e-12, &orders).unwrap();
        assert!((b.epsilon / ma - 1.0).abs() < 1e-6, "{} vs {ma}", b.epsilon);
        // The moments accountant's conversion is looser than the RDP accountant's
        // (4.2465987 in STATISTICS.md §4 on a fractional grid).
        assert!(ma > 4.2465987, "{ma}");
    }

    /// In-distribution distances well inside the clipping bound give a much smaller ε.
    #[test]
    fn typical_distances_give_a_smaller_epsilon() {
        let d: Vec<f64> = (0..1000)
            .map(|i| 0.05 + 0.25 * (i as f64 + 0.5) / 1000.0)
            .collect();
        let orders = default_orders();
        let b = bayesian_epsilon(&d, 0.01, 1.1, 6000, 1e-5, 1e-8, &orders).unwrap();
        let (ma, _) = moments_accountant_epsilon(0.01, 1.1, 6000, 1e-5, &orders).unwrap();
        assert!(b.epsilon < 0.5 * ma, "{} vs {ma}", b.epsilon);
        assert!(bayesian_epsilon(&d, 0.01, 1.1, 6000, 1e-5, 1e-4, &orders).is_err());
        assert!(bayesian_epsilon(&[0.1, 2.5, 0.1], 0.01, 1.1, 1, 1e-5, 1e-8, &orders).is_err());
    }

    /// The paper's worked example (§4.3.1): 100 zeros and no ones give Beta(1, 101), whose
    /// (1 − γ) quantile is 1 − γ^{1/101} (closed form; scipy's beta.ppf(0.95, 1, 101) =
    /// 0.0292252...). Rounded up (the 1e-6 relative margin on the level moves it by < 1e-5
    /// relative); never 0.
    #[test]
    fn beta_posterior_matches_the_papers_example() {
        for gamma in [0.05_f64, 1e-3, 1e-8] {
            let exact = 1.0 - gamma.powf(1.0 / 101.0);
            let e = beta_posterior_mean_upper(0, 100, gamma).unwrap();
            assert!(
                e >= exact && e < exact * (1.0 + 1e-5),
                "{gamma}: {e} vs {exact}"
            );
        }
        let e = beta_posterior_mean_upper(0, 100, 0.05).unwrap();
        assert!((e - 0.029_225_2).abs() < 1e-6, "{e}");
        // scipy: beta.ppf(0.999, 11, 91) = 0.2226054...
        let f = beta_posterior_mean_upper(10, 90, 1e-3).unwrap();
        assert!((f - 0.222_605_4).abs() < 1e-6, "{f}");
        assert!(beta_posterior_mean_upper(0, 100, 0.0).is_err());
        assert!(beta_posterior_mean_upper(0, 100, 1.0).is_err());
    }

    /// The per-order curve's least value is the account's ε, for every estimator.
    #[test]
    fn epsilon_by_order_matches_the_account() {
        let orders: Vec<u32> = (1..=64).collect();
        let d: Vec<f64> = (0..200).map(|i| 0.05 + 0.25 * i as f64 / 199.0).collect();
        for e in [
            Estimator::StudentT,
            Estimator::Unclipped,
            Estimator::DistributionFree { max_distance: 1.0 },
        ] {
            let acc = e.account(&d, 0.01, 1.1, 1000, 1e-5, 1e-8, &orders).unwrap();
            let curve = e
                .epsilon_by_order(&d, 0.01, 1.1, 1000, 1e-5, 1e-8, &orders)
                .unwrap();
            let (l, min) = curve
                .iter()
                .copied()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap();
            assert_eq!(l, acc.order, "{e:?}");
            assert!(
                min <= acc.epsilon && acc.epsilon < min * (1.0 + 1e-9),
                "{e:?}"
            );
        }
    }

    /// Welch's t-test and Levene's test against scipy 1.x on a small example:
    /// ttest_ind(a, b, equal_var=False) = (−1.6200972274, p 0.1331965763, df 11.1210316666),
    /// levene(a, b) (median) = (0.2804458642, p 0.6053353886).
    #[test]
    fn compare_distances_matches_scipy() {
        let a = [0.11, 0.25, 0.19, 0.31, 0.22, 0.18, 0.27, 0.2];
        let b = [0.15, 0.29, 0.33, 0.21, 0.4, 0.26, 0.3];
        let c = compare_distances(&a, &b).unwrap();
        assert!((c.t_statistic + 1.620_097_227_4).abs() < 1e-8, "{c:?}");
        assert!((c.t_degrees_of_freedom - 11.121_031_666_6).abs() < 1e-8);
        assert!((c.t_p_value - 0.133_196_576_3).abs() < 1e-7);
        assert!((c.levene_statistic - 0.280_445_864_2).abs() < 1e-8);
        assert!((c.levene_p_value - 0.605_335_388_6).abs() < 1e-7);
        assert!(compare_distances(&[0.1], &b).is_err());
        assert!(compare_distances(&a, &[0.1, f64::NAN]).is_err());
        assert!(compare_distances(&[0.1, 0.1], &[0.1, 0.1]).is_err());
    }

    /// Pr_p[bound(K) < p] for K ~ Bin(n, p), summed exactly over k.
    fn miss_probability(n: u64, p: f64, bound: impl Fn(u64, u64) -> f64) -> f64 {
        use statrs::distribution::{Binomial, Discrete};
        let b = Binomial::new(p, n).unwrap();
        (0..=n)
            .filter(|&k| bound(k, n - k) < p)
            .map(|k| b.pmf(k))
            .sum()
    }

    /// Theorem 4 on binary data, exactly (no simulation): the Clopper–Pearson bound the accountant
    /// uses misses a fixed p with probability ≤ γ on a grid of p for n = 20 and 100; the paper's
    /// flat-prior posterior quantile misses more often than γ (0.0688 at n = 20, p = 0.49, γ =
    /// 0.05; scipy: sum of binom.pmf(k, 20, 0.49) over k with beta.ppf(0.95, k+1, 21-k) < 0.49),
    /// which is why the accountant does not use it. The pmf sums carry 1e-12 slack.
    #[test]
    fn binary_estimators_miss_rates() {
        for n in [20u64, 100] {
            for gamma in [0.05, 1e-3] {
                for i in 1..200 {
                    let p = i as f64 / 200.0;
                    let miss =
                        miss_probability(n, p, |o, z| clopper_pearson_upper(o, z, gamma).unwrap());
                    assert!(miss <= gamma + 1e-12, "n {n} γ {gamma} p {p}: {miss}");
                }
            }
        }
        let flat = miss_probability(20, 0.49, |o, z| {
            beta_posterior_mean_upper(o, z, 0.05).unwrap()
        });
        assert!((flat - 0.068_754).abs() < 1e-5, "{flat}");
        // Above the flat-prior bound, equal to 1 with no zeros.
        assert!(
            clopper_pearson_upper(3, 17, 0.05).unwrap()
                > beta_posterior_mean_upper(3, 17, 0.05).unwrap()
        );
        assert_eq!(clopper_pearson_upper(5, 0, 0.05).unwrap(), 1.0);
        // scipy: beta.ppf(0.95, 1, 100) = 1 - 0.05**(1/100) = 0.0295130...
        let cp = clopper_pearson_upper(0, 100, 0.05).unwrap();
        assert!((cp - (1.0 - 0.05f64.powf(0.01))).abs() < 1e-6, "{cp}");
        assert!(clopper_pearson_upper(0, 100, 0.0).is_err());
    }

    /// The distribution-free estimator: at or above the exact mean when every sample is the whole
    /// support (the band only adds mass at the top), at the moments accountant when the band covers
    /// everything, and refusing samples above its declared largest distance.
    #[test]
    fn distribution_free_estimator_brackets() {
        let orders = default_orders();
        let d: Vec<f64> = (0..1000)
            .map(|i| 0.05 + 0.25 * (i as f64 + 0.5) / 1000.0)
            .collect();
        let (exact, _) = bayesian_epsilon_exact(&d, 0.01, 1.1, 6000, 1e-5 - 1e-8, &orders).unwrap();
        let dkw = bayesian_epsilon_dkw(&d, 0.01, 1.1, 6000, 1e-5, 1e-8, &orders, 1.0).unwrap();
        let (ma, _) = moments_accountant_epsilon(0.01, 1.1, 6000, 1e-5 - 1e-8, &orders).unwrap();
        assert!(
            dkw.epsilon > exact && dkw.epsilon < ma,
            "{} {exact} {ma}",
            dkw.epsilon
        );
        // Three samples at γ = 1e-8: ε_m = √(ln(1e8)/6) > 1, every bit of mass at d = 1.
        let all =
            bayesian_epsilon_dkw(&[0.1; 3], 0.01, 1.1, 6000, 1e-5, 1e-8, &orders, 1.0).unwrap();
        assert!(
            (all.epsilon / ma - 1.0).abs() < 1e-9,
            "{} vs {ma}",
            all.epsilon
        );
        assert!(
            bayesian_epsilon_dkw(&[0.1, 1.5], 0.01, 1.1, 60, 1e-5, 1e-8, &orders, 1.0).is_err()
        );
        assert!(bayesian_epsilon_dkw(&[0.1], 0.01, 1.1, 60, 1e-5, 1e-8, &orders, 3.0).is_err());
        // Massart's band: √(ln(1/γ)/(2m)), rounded up.
        assert!(dkw_band(1000, 0.05) >= (20f64.ln() / 2000.0).sqrt());
    }

    /// Binary distances: all ones is at most the accountant at known distances 1 (the moments
    /// accountant with γ folded into δ: p̂ ≤ 1) and within 5 % of it; no ones is below it but
    /// above the data-blind ε of a zero cost; non-binary data is refused.
    #[test]
    fn binary_estimator_brackets() {
        let orders = default_orders();
        let ma = bayesian_epsilon(&[1.0; 100], 0.01, 1.1, 1000, 1e-5, 1e-8, &orders)
            .unwrap()
            .epsilon;
        let ones = bayesian_epsilon_binary(&[1.0; 100], 0.01, 1.1, 1000, 1e-5, 1e-8, &orders)
            .unwrap()
            .epsilon;
        let zeros = bayesian_epsilon_binary(&[0.0; 100], 0.01, 1.1, 1000, 1e-5, 1e-8, &orders)
            .unwrap()
            .epsilon;
        assert!(
            ones <= ma * (1.0 + 1e-9) && ones > 0.95 * ma,
            "{ones} vs {ma}"
        );
        assert!(zeros < ones && zeros > 0.0, "{zeros}");
        // The sample mean of no ones is 0: the cost would vanish and ε be ln(1/(δ − γ))/λ_max.
        let blind = -(1e-5f64 - 1e-8).ln() / *orders.iter().max().unwrap() as f64;
        assert!(zeros > blind, "{zeros} vs {blind}");
        assert!(
            bayesian_epsilon_binary(&[0.5, 1.0], 0.01, 1.1, 1000, 1e-5, 1e-8, &orders).is_err()
        );
    }

    /// The percentile curve grows with the percentile, is the accountant's ε at δ_μ = (1 − p)δ,
    /// and refuses percentiles that leave no room above γ.
    #[test]
    fn markov_percentiles() {
        let d: Vec<f64> = (0..1000)
            .map(|i| 0.05 + 0.25 * (i as f64 + 0.5) / 1000.0)
            .collect();
        let orders = default_orders();
        let rows = markov_percentile_epsilon(
            &d,
            0.01,
            1.1,
            6000,
            1e-5,
            1e-9,
            &orders,
            &[50.0, 90.0, 99.0],
            Estimator::StudentT,
        )
        .unwrap();
        assert!(rows.windows(2).all(|w| w[0].epsilon < w[1].epsilon));
        let at90 = bayesian_epsilon(&d, 0.01, 1.1, 6000, rows[1].delta_mu, 1e-9, &orders).unwrap();
        assert_eq!(rows[1].epsilon, at90.epsilon);
        assert!(rows[1].delta_mu <= 1e-6);
        assert!(
            markov_percentile_epsilon(
                &d,
                0.01,
                1.1,
                6000,
                1e-5,
                1e-8,
                &orders,
                &[99.95],
                Estimator::StudentT
            )
            .is_err()
        );
        assert!(
            markov_percentile_epsilon(
                &d,
                0.01,
                1.1,
                6000,
                1e-5,
                1e-9,
                &orders,
                &[100.0],
                Estimator::StudentT
            )
            .is_err()
        );
    }
}
