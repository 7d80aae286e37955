//! The privacy of a DP-SGD run, apart from the training loop: the claim read off its privacy
//! ledger ([`claim_from_ledger`]) and the true guarantee of its released final model, from the
//! exact privacy profile ([`final_model_deltas`], [`final_model_epsilon`]).

use statrs::function::gamma::ln_gamma;

use crate::accountant::{LedgerEvent, RdpAccountant, gaussian_exact_epsilon};
use crate::dataset::Neighboring;
use crate::error::{MechanismError, Result};
use crate::math::{gaussian_dp_delta, std_normal_cdf};
use crate::pld::PldAccountant;

/// Smallest ε a ledger-based claim states: a claim needs ε > 0, and a larger ε is a weaker (so
/// still true) claim.
const MIN_CLAIM_EPSILON: f64 = 1e-6;

/// Relative slack added to an ε read from the RDP accountant (covers the floating-point error of
/// the conversion; the exact-Gaussian route rounds up by itself).
const RDP_EPSILON_SLACK: f64 = 1e-12;

/// `x` rounded up to `digits` significant digits (never below `x`).
fn round_up_significant(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits - 1 - x.log10().floor() as i32);
    let r = (x * scale).ceil() / scale;
    if r < x { r.next_up() } else { r }
}

/// The claim of a privacy ledger: (ε at `delta`, where it came from).
///
/// If every sampling event has probability 1, the ledger is a composition of full-batch
/// Gaussian sum queries, which is exactly μ-GDP with μ² = Σ_blocks repetitions·Σ_queries z⁻²
/// (Dong, Roth & Su 2022, Corollary 3.3; several queries on one sample compose the same way), and
/// ε is read off the exact Gaussian profile ([`gaussian_exact_epsilon`], which rounds up).
/// Otherwise ε is the PLD accountant's pessimistic (upper-bound) ε over the same ledger
/// ([`PldAccountant::compose_ledger`]; Doroshenko et al. 2022), rounded up by a relative 1e-12.
/// ε is floored at 1e-6 (a claim needs ε > 0).
///
/// # Errors
/// δ outside (0, 1); an accountant that gives no finite ε.
pub fn claim_from_ledger(ledger: &RdpAccountant, delta: f64) -> Result<(f64, String)> {
    // (q, repetitions, noise multipliers of the queries on the sample).
    let mut blocks: Vec<(f64, u64, Vec<f64>)> = Vec::new();
    for event in ledger.ledger() {
        match *event {
            LedgerEvent::Sampling {
                probability,
                repetitions,
            } => blocks.push((probability, repetitions, Vec::new())),
            LedgerEvent::GaussianSum { noise_multiplier } => {
                if let Some(b) = blocks.last_mut() {
                    b.2.push(noise_multiplier);
                }
            }
            other => {
                return Err(MechanismError::InvalidParameter {
                    mechanism: "privacy-ledger".into(),
                    message: format!(
                        "a {} event in a DP-SGD ledger; allowed: sampling and gaussian-sum events",
                        other.kind()
                    ),
                });
            }
        }
    }
    if let Some((_, other)) = ledger.other_queries().first() {
        return Err(MechanismError::InvalidParameter {
            mechanism: "privacy-ledger".into(),
            message: format!(
                "a {} event in a DP-SGD ledger; allowed: sampling and gaussian-sum events",
                other.kind()
            ),
        });
    }
    let description = blocks
        .iter()
        .map(|(q, reps, zs)| {
            let zs: Vec<String> = zs.iter().map(|z| format!("{z:.6}")).collect();
            format!(
                "{reps} × (Poisson sampling q = {q}; Gaussian sum z = {})",
                zs.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join(" + ");
    let accountant_error = |what: String| MechanismError::InvalidParameter {
        mechanism: "privacy-ledger".into(),
        message: what,
    };
    let (epsilon, how) = if blocks.iter().all(|b| b.0 == 1.0) {
        let mu2: f64 = blocks
            .iter()
            .map(|(_, reps, zs)| *reps as f64 * zs.iter().map(|z| z.powi(-2)).sum::<f64>())
            .sum();
        if mu2 <= 0.0 {
            return Err(accountant_error(format!(
                "the ledger [{description}] has no Gaussian sum query; allowed: at least one"
            )));
        }
        let mu = mu2.sqrt();
        let eps = gaussian_exact_epsilon(1.0 / mu, 1, delta)?;
        (
            eps,
            format!(
                "exact Gaussian privacy profile (Balle & Wang 2018; Dong, Roth & Su 2022) of the \
                 privacy ledger [{description}]: mu = {mu:.6}"
            ),
        )
    } else {
        // The PLD accountant's pessimistic ε (an upper bound, rounded up; 10–40 % tighter than
        // RDP, so a claim from it leaves less room for a bug to hide).
        let mut pld = PldAccountant::new(Neighboring::AddRemove);
        pld.compose_ledger(ledger.ledger())?;
        let (eps, _) = pld.epsilon_bounds(delta)?;
        if !eps.is_finite() {
            return Err(accountant_error(format!(
                "the PLD accountant gives no finite epsilon for the ledger [{description}] at \
                 delta = {delta:e}"
            )));
        }
        (
            (eps * (1.0 + RDP_EPSILON_SLACK)).next_up(),
            format!(
                "PLD accountant (pessimistic Connect-the-Dots PLD, Doroshenko et al. 2022; \
                 composed by FFT) over the privacy ledger [{description}]"
            ),
        )
    };
    let floored = epsilon < MIN_CLAIM_EPSILON;
    // Rounded up to 9 significant digits: a slightly weaker claim (the safe side) that reads
    // as 1 rather than 0.9999999999999964.
    let epsilon = round_up_significant(epsilon.max(MIN_CLAIM_EPSILON), 9);
    Ok((
        epsilon,
        format!(
            "{how}: epsilon = {epsilon:.6} at delta = {delta:e}{}",
            if floored {
                " (floored at 1e-6: a claim needs epsilon > 0)"
            } else {
                ""
            }
        ),
    ))
}

/// ln of the Bin(T, q) probabilities, pruned below e^{−60} of the largest (the dropped mass is at
/// most (T + 1)·e^{−60} ≈ 1e-26·(T + 1)): pairs (k, ln P(K = k)).
fn binomial_log_weights(q: f64, steps: u64) -> Vec<(f64, f64)> {
    let t = steps as f64;
    let (ln_q, ln_keep) = (q.ln(), (-q).ln_1p());
    let ln_t = ln_gamma(t + 1.0);
    let all: Vec<(f64, f64)> = (0..=steps)
        .map(|k| {
            let k = k as f64;
            (
                k,
                ln_t - ln_gamma(k + 1.0) - ln_gamma(t - k + 1.0) + k * ln_q + (t - k) * ln_keep,
            )
        })
        .collect();
    let top = all.iter().map(|w| w.1).fold(f64::NEG_INFINITY, f64::max);
    all.into_iter().filter(|w| w.1 >= top - 60.0).collect()
}

/// Bisection for the root of an increasing function `f` on the real line.
fn increasing_root(f: impl Fn(f64) -> f64) -> f64 {
    let (mut lo, mut hi) = (-1.0_f64, 1.0_f64);
    while f(lo) > 0.0 && lo > -1e300 {
        lo = 2.0 * lo - 1.0;
    }
    while f(hi) < 0.0 && hi < 1e300 {
        hi = 2.0 * hi + 1.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// `e^eps · p`, 0 when `p` is 0 (so that a huge e^ε times an underflowed p is not NaN).
fn scaled(eps: f64, p: f64) -> f64 {
    if p > 0.0 { (eps + p.ln()).exp() } else { 0.0 }
}

/// Hockey-stick divergences (H_{e^ε}(P ‖ Q), H_{e^ε}(Q ‖ P)) of the released final model of the
/// gradient form on the worst neighboring pair, for sampling rate `q`, per-step μ `mu_step` and
/// `steps` steps:
/// P = Σ_k Bin(T, q)(k)·N(k·μ, T), Q = N(0, T) (one dimension, noise whitened).
///
/// Why this is the exact profile over all add/remove pairs: with per-example clipping and a linear
/// loss, θ_T(D ∪ {x}) = θ_T(D) − η·K·c(x), where c(x) is x's clipped contribution,
/// K ~ Bin(T, q) counts the steps x is sampled in, and θ_T(D) = A + N with A (the other records'
/// contributions) independent of the Gaussian noise N and of K. By joint convexity of the
/// hockey-stick divergence and translation invariance, A can only lower it, so D = ∅ (or any
/// dataset of zero records) is worst; whitening the noise per group turns the pair into the
/// one-dimensional pair above with μ = ‖c(x)‖ in noise units; and the divergence grows with μ
/// (x ↦ x/λ + N(0, T(1 − λ⁻²)) maps the pair at λμ to the pair at μ), so the record with the
/// largest contribution is worst. For q = 1 this is the Gaussian profile with μ√T (Balle & Wang
/// 2018, Theorem 8). Full-batch batch-sum clipping is the same with the exact sensitivity.
///
/// For q < 1 the likelihood ratio P/Q = Σ_k w_k exp(k·a·x − k²a²/2) (standardized, a = μ/√T) is
/// increasing in x, so the optimal events are half-lines: H(P ‖ Q) = P(X > x₁) − e^ε Q(X > x₁)
/// where the ratio equals e^ε at x₁, and H(Q ‖ P) = Q(X < x₂) − e^ε P(X < x₂) where it equals
/// e^{−ε} (0 if it never gets that low: P(K = 0) ≥ e^{−ε}). The crossing points are found by
/// bisection and the probabilities are sums of normal CDFs.
pub fn final_model_deltas(q: f64, mu_step: f64, steps: u64, epsilon: f64) -> (f64, f64) {
    let t = steps as f64;
    if q >= 1.0 {
        let d = gaussian_dp_delta(epsilon, t.sqrt() * mu_step);
        return (d, d);
    }
    let a = mu_step / t.sqrt();
    let w = binomial_log_weights(q, steps);
    let log_ratio = |x: f64| {
        let terms: Vec<f64> = w
            .iter()
            .map(|&(k, lw)| lw + k * a * x - 0.5 * k * k * a * a)
            .collect();
        let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        top + terms.iter().map(|v| (v - top).exp()).sum::<f64>().ln()
    };
    let tail_p = |x: f64| -> f64 {
        w.iter()
            .map(|&(k, lw)| lw.exp() * std_normal_cdf(-(x - k * a)))
            .sum()
    };
    let head_p = |x: f64| -> f64 {
        w.iter()
            .map(|&(k, lw)| lw.exp() * std_normal_cdf(x - k * a))
            .sum()
    };
    let x1 = increasing_root(|x| log_ratio(x) - epsilon);
    let add = (tail_p(x1) - scaled(epsilon, std_normal_cdf(-x1))).clamp(0.0, 1.0);
    let ln_p0 = w
        .first()
        .filter(|w0| w0.0 == 0.0)
        .map_or(f64::NEG_INFINITY, |w0| w0.1);
    let remove = if ln_p0 >= -epsilon {
        0.0
    } else {
        let x2 = increasing_root(|x| log_ratio(x) + epsilon);
        (std_normal_cdf(x2) - scaled(epsilon, head_p(x2))).clamp(0.0, 1.0)
    };
    (add, remove)
}

/// The smallest ε with max(both directions of [`final_model_deltas`]) ≤ `delta`, by bisection
/// (the upper end of the final bracket is returned, so it errs large).
pub fn final_model_epsilon(q: f64, mu_step: f64, steps: u64, delta: f64) -> f64 {
    let f = |eps: f64| {
        let (a, b) = final_model_deltas(q, mu_step, steps, eps);
        a.max(b)
    };
    if f(0.0) <= delta {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while f(hi) > delta && hi < 1e6 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) <= delta {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}
