//! Confidence bounds used by the testers. Every function rounds toward the safe side: lower
//! bounds down, upper bounds up, and says so.
//!
//! # Clopper–Pearson
//! For K ~ Binomial(m, p) the exact one-sided bounds (Clopper & Pearson 1934) are
//! - lower: p_lo(k) = the p at which P_p(K ≥ k) = a (0 when k = 0), so P[p_lo(K) > p] ≤ a;
//! - upper: p_hi(k) = the p at which P_p(K ≤ k) = a (1 when k = m), so P[p_hi(K) < p] ≤ a.
//!
//! They are *exact*: valid for every m and p, including rare events (p ~ 1e-6) where normal
//! approximations are anti-conservative. Binomial tails are evaluated through the regularized
//! incomplete beta function, P_p(K ≥ k) = I_p(k, m − k + 1), with `statrs`. The root is found by
//! bisection (100 halvings of [0, 1], far below f64 resolution at any p of interest) keeping the
//! bracket end on the safe side, against the level a·(1 − 1e-6) so that a relative error of up to
//! 1e-6 in the incomplete beta function cannot make the bound unsafe. (statrs' Beta quantile has
//! no such guarantee of direction, which is why the inversion is written here.)

use statrs::function::beta::checked_beta_reg;

pub mod unconditional;
pub use unconditional::{binomial_contrast_epsilon, binomial_contrast_lower};

/// Relative error tolerated in the regularized incomplete beta function.
const BETA_REG_REL_ERROR: f64 = 1e-6;

fn beta_reg(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    // a, b > 0 by construction at every call site; on the impossible error path return the
    // value that makes the caller's bisection move toward the safe side (see callers).
    checked_beta_reg(a, b, x).unwrap_or(f64::NAN)
}

/// One-sided Clopper–Pearson **lower** bound on a binomial proportion: with probability at least
/// 1 − `a` (over K ~ Bin(m, p)), `p ≥ clopper_pearson_lower(K, m, a)`. Rounded down.
///
/// # Examples
/// ```
/// use dp_audit::bounds::clopper_pearson_lower;
/// // 0 successes: the lower bound is 0.
/// assert_eq!(clopper_pearson_lower(0, 100, 0.05), 0.0);
/// // All successes: p ≥ a^(1/m), computed at the level a·(1 − 1e-6) that absorbs the error of
/// // the regularized beta function, so slightly below (by about 1e-6/m relative).
/// let l = clopper_pearson_lower(100, 100, 0.05);
/// assert!(l <= 0.05f64.powf(0.01) && l > 0.05f64.powf(0.01) - 1e-7);
/// ```
pub fn clopper_pearson_lower(k: u64, m: u64, a: f64) -> f64 {
    assert!(
        k <= m && m > 0 && a > 0.0 && a < 1.0,
        "clopper_pearson_lower({k}, {m}, {a})"
    );
    if k == 0 {
        return 0.0;
    }
    let level = a * (1.0 - BETA_REG_REL_ERROR);
    // f(p) = P_p(K ≥ k) = I_p(k, m − k + 1), increasing in p. Keep f(lo) ≤ level.
    let f = |p: f64| beta_reg(k as f64, (m - k + 1) as f64, p);
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        let v = f(mid);
        // NaN (impossible) counts as "too large": the bound moves down, the safe side.
        if v <= level {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// One-sided Clopper–Pearson **upper** bound: with probability at least 1 − `a`,
/// `p ≤ clopper_pearson_upper(K, m, a)`. Rounded up.
///
/// # Examples
/// ```
/// use dp_audit::bounds::clopper_pearson_upper;
/// // 0 successes in m trials: p ≤ 1 − a^(1/m) ≈ ln(1/a)/m ("rule of three" for a = 0.05).
/// let u = clopper_pearson_upper(0, 1000, 0.05);
/// assert!(u >= 1.0 - 0.05f64.powf(1e-3) && u < 3.0e-3);
/// ```
pub fn clopper_pearson_upper(k: u64, m: u64, a: f64) -> f64 {
    assert!(
        k <= m && m > 0 && a > 0.0 && a < 1.0,
        "clopper_pearson_upper({k}, {m}, {a})"
    );
    if k == m {
        return 1.0;
    }
    let level = a * (1.0 - BETA_REG_REL_ERROR);
    // g(p) = P_p(K ≤ k) = I_{1−p}(m − k, k + 1), decreasing in p. Keep g(hi) ≤ level.
    let g = |p: f64| beta_reg((m - k) as f64, (k + 1) as f64, 1.0 - p);
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        let v = g(mid);
        // NaN counts as "too large": the bound moves up, the safe side.
        if v <= level {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Exact one-sided lower confidence bound on a **Poisson mean**: with probability at least 1 − `a`
/// (over K ~ Poisson(μ)), `μ ≥ poisson_mean_lower(K, a)` (Garwood 1936). It is the μ at which
/// P_μ(K ≥ k) = a, i.e. the regularized lower incomplete gamma P(k, μ) = a, found by bisection
/// against a·(1 − 1e-6) (absorbing the error of statrs' `gamma_lr`) keeping the lower end: rounded
/// down. 0 when k = 0.
pub fn poisson_mean_lower(k: u64, a: f64) -> f64 {
    assert!(a > 0.0 && a < 1.0, "poisson_mean_lower({k}, {a})");
    if k == 0 {
        return 0.0;
    }
    let level = a * (1.0 - BETA_REG_REL_ERROR);
    let kf = k as f64;
    // P_μ(K ≥ k) = P(k, μ), increasing in μ; at μ = k + 20√k + 50 it is ≈ 1 > level.
    let f = |mu: f64| statrs::function::gamma::checked_gamma_lr(kf, mu).unwrap_or(f64::NAN);
    let (mut lo, mut hi) = (0.0_f64, kf + 20.0 * kf.sqrt() + 50.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        // NaN counts as "too large": the bound moves down, the safe side.
        if f(mid) <= level {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// P(Bin(m, π) ≥ k), the binomial upper tail I_π(k, m − k + 1), inflated by the tolerated
/// relative error of the incomplete beta function so that it is never reported too small.
pub fn binomial_upper_tail(k: u64, m: u64, pi: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > m {
        return 0.0;
    }
    let v = beta_reg(k as f64, (m - k + 1) as f64, pi);
    if v.is_nan() {
        1.0
    } else {
        (v * (1.0 + BETA_REG_REL_ERROR)).min(1.0)
    }
}

/// The exact conditional test behind the hockey-stick tester's bound (see
/// [`poisson_contrast_lower`]): does the pair of independent Poisson counts (u, w) reject
/// H0: μ_U − e^ε·μ_W ≤ c at level `level`, given the lower confidence bound `mu_w_lower` on μ_W?
///
/// Given u + w = m, U ~ Bin(m, π) with π = μ_U/(μ_U + μ_W) ≤ π0(μ_W) = (e^ε μ_W + c)/((1 + e^ε)
/// μ_W + c) under H0, and π0 decreases in μ_W, so on {μ_W ≥ mu_w_lower} π ≤ π0(mu_w_lower).
fn contrast_rejects(u: u64, w: u64, e_eps: f64, c: f64, mu_w_lower: f64, level: f64) -> bool {
    if u == 0 {
        return false;
    }
    // Round π0 up (safe side) before the tail.
    let pi0 = (contrast_null_share(mu_w_lower, e_eps, c) * (1.0 + 1e-12)).min(1.0);
    binomial_upper_tail(u, u + w, pi0) <= level
}

/// π0(μ_W) = (e^ε μ_W + c)/((1 + e^ε) μ_W + c), the largest share μ_U/(μ_U + μ_W) the null
/// μ_U − e^ε μ_W ≤ c allows at μ_W (at most 1; decreasing in μ_W for c > 0). At μ_W = 0 and
/// c = 0 the null allows μ_U = 0 only, and the limit e^ε/(1 + e^ε) covers it.
pub fn contrast_null_share(mu_w: f64, e_eps: f64, c: f64) -> f64 {
    let den = (1.0 + e_eps) * mu_w + c;
    if den > 0.0 {
        ((e_eps * mu_w + c) / den).min(1.0)
    } else {
        e_eps / (1.0 + e_eps)
    }
}

/// Lower confidence bound on θ from two **independent Poisson counts** U ~ Poisson(μ_U),
/// W ~ Poisson(μ_W), for the contrast μ_U − e^ε·μ_W ≤ `scale`·θ (the hockey-stick tester uses
/// μ_U = λ·P(S), μ_W = λ·Q(S), scale = λ for one event, and sums two directions with
/// scale = 2λ).
///
/// # Guarantee
/// Pr(L > θ*) ≤ β for θ* = (μ_U − e^ε μ_W)/scale: L is a one-sided lower confidence bound on
/// θ*. Construction (inverting a family of level-β tests, each valid by the argument of Berger &
/// Boos 1994 for a nuisance parameter restricted to a confidence set):
/// 1. μ_W ≥ μ_lo := [`poisson_mean_lower`](W, γ) with probability ≥ 1 − γ, γ = `nuisance_beta`;
/// 2. for each θ, the exact conditional binomial test of U given U + W at level β − γ
///    with c = scale·θ, valid on {μ_W ≥ μ_lo} because its p-value only grows as μ_W decreases;
/// 3. its p-value increases with θ, so the rejected θ form an interval [0, L) and L is found by
///    bisection, keeping the rejected end (rounded down).
///
/// Returns 0 when even θ = 0 is not rejected (the contrast is then not shown positive).
pub fn poisson_contrast_lower(
    u: u64,
    w: u64,
    e_eps: f64,
    scale: f64,
    beta: f64,
    nuisance_beta: f64,
) -> f64 {
    assert!(
        nuisance_beta > 0.0 && nuisance_beta < beta && beta < 1.0 && scale > 0.0,
        "poisson_contrast_lower({u}, {w}, {e_eps}, {scale}, {beta}, {nuisance_beta})"
    );
    let level = beta - nuisance_beta;
    let mu_lo = poisson_mean_lower(w, nuisance_beta);
    let rejects = |theta: f64| contrast_rejects(u, w, e_eps, scale * theta, mu_lo, level);
    if !rejects(0.0) {
        return 0.0;
    }
    // θ* ≤ μ_U/scale; the test cannot reject θ beyond u/scale plus a wide margin.
    let (mut lo, mut hi) = (
        0.0_f64,
        (u as f64 + 10.0 * (u as f64).sqrt() + 10.0) / scale,
    );
    largest_rejected(&mut lo, &mut hi, rejects);
    lo.next_down().max(0.0)
}

/// Bisection for the end of a rejected interval [lo, x*) of a monotone test (`rejects(lo)` is
/// true): moves `lo` up to the last rejected point found (the safe end) and `hi` down to the
/// first accepted one; if `rejects(hi)` already, `lo` becomes `hi` (the search range's end,
/// itself a valid, smaller answer).
fn largest_rejected(lo: &mut f64, hi: &mut f64, rejects: impl Fn(f64) -> bool) {
    if rejects(*hi) {
        *lo = *hi;
        return;
    }
    for _ in 0..100 {
        let mid = 0.5 * (*lo + *hi);
        if rejects(mid) {
            *lo = mid;
        } else {
            *hi = mid;
        }
    }
}

/// The largest ε' at which the same test rejects μ_U − e^{ε'}·μ_W ≤ `scale`·δ, i.e. a lower
/// confidence bound (level 1 − β, simultaneous with [`poisson_contrast_lower`] at the same
/// counts) on the ε at which the mechanism's events exceed δ. The p-value grows with ε', so the
/// rejected ε' form an interval [0, ε̂); rounded down. `None` when ε' = 0 is not rejected.
pub fn poisson_contrast_epsilon(
    u: u64,
    w: u64,
    delta: f64,
    scale: f64,
    beta: f64,
    nuisance_beta: f64,
) -> Option<f64> {
    assert!(
        nuisance_beta > 0.0 && nuisance_beta < beta && beta < 1.0 && scale > 0.0 && delta >= 0.0,
        "poisson_contrast_epsilon({u}, {w}, {delta}, {scale}, {beta}, {nuisance_beta})"
    );
    let level = beta - nuisance_beta;
    let mu_lo = poisson_mean_lower(w, nuisance_beta);
    let rejects = |eps: f64| contrast_rejects(u, w, eps.exp(), scale * delta, mu_lo, level);
    if !rejects(0.0) {
        return None;
    }
    let (mut lo, mut hi) = (0.0_f64, 60.0_f64);
    largest_rejected(&mut lo, &mut hi, rejects);
    (lo > 0.0).then(|| lo.next_down())
}

/// A quick *approximate* lower bound (Wilson score interval, one-sided at quantile `z`), for
/// choosing among candidate events on a training split only. Never used for a reported bound.
pub fn wilson_lower(k: f64, m: f64, z: f64) -> f64 {
    if m <= 0.0 {
        return 0.0;
    }
    let p = k / m;
    let z2 = z * z;
    let centre = p + z2 / (2.0 * m);
    let spread = z * (p * (1.0 - p) / m + z2 / (4.0 * m * m)).sqrt();
    ((centre - spread) / (1.0 + z2 / m)).max(0.0)
}

/// Approximate upper counterpart of [`wilson_lower`] (selection only).
pub fn wilson_upper(k: f64, m: f64, z: f64) -> f64 {
    if m <= 0.0 {
        return 1.0;
    }
    let p = k / m;
    let z2 = z * z;
    let centre = p + z2 / (2.0 * m);
    let spread = z * (p * (1.0 - p) / m + z2 / (4.0 * m * m)).sqrt();
    ((centre + spread) / (1.0 + z2 / m)).min(1.0)
}

/// Standard normal upper quantile z with P(Z > z) = a (statrs inverse CDF).
pub fn normal_upper_quantile(a: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    // Normal::new(0, 1) cannot fail; fall back to a conservative large z if it ever did.
    Normal::new(0.0, 1.0)
        .map(|n| n.inverse_cdf(1.0 - a))
        .unwrap_or(10.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use statrs::distribution::{Binomial, DiscreteCDF};

    /// The bounds are the exact binomial tail inversions: at the returned p the tail is at most
    /// a (safe side) and within a tiny step of a.
    #[test]
    fn inverts_binomial_tails() {
        for &(k, m, a) in &[
            (3u64, 100u64, 0.05),
            (0, 1000, 0.01),
            (50, 100_000, 1e-4),
            (99_999, 100_000, 0.025),
            (1, 1, 0.3),
        ] {
            let lo = clopper_pearson_lower(k, m, a);
            let hi = clopper_pearson_upper(k, m, a);
            assert!(lo <= k as f64 / m as f64 && k as f64 / m as f64 <= hi);
            if k > 0 {
                // P_lo(K ≥ k) = 1 − P_lo(K ≤ k − 1) ≤ a.
                let b = Binomial::new(lo, m).unwrap();
                let tail = 1.0 - b.cdf(k - 1);
                assert!(
                    tail <= a * (1.0 + 1e-6) && tail > a * 0.999,
                    "lower {k}/{m}: tail {tail}"
                );
            }
            if k < m {
                let b = Binomial::new(hi, m).unwrap();
                let tail = b.cdf(k);
                assert!(
                    tail <= a * (1.0 + 1e-6) && tail > a * 0.999,
                    "upper {k}/{m}: tail {tail}"
                );
            }
        }
    }

    /// Garwood's bound inverts the Poisson tail: P_{μ_lo}(K ≥ k) ≤ a, within a hair of a.
    #[test]
    fn poisson_lower_inverts_the_tail() {
        use statrs::distribution::Poisson;
        for &(k, a) in &[(1u64, 0.05), (7, 0.01), (300, 0.0025), (20_000, 0.05)] {
            let mu = poisson_mean_lower(k, a);
            let tail = 1.0 - Poisson::new(mu).unwrap().cdf(k - 1);
            assert!(
                tail <= a * (1.0 + 1e-6) && tail > a * 0.999,
                "k {k}: tail {tail}"
            );
        }
        assert_eq!(poisson_mean_lower(0, 0.05), 0.0);
    }

    /// Coverage of the contrast bound by simulation at the boundary of the null (θ* exactly
    /// where the bound is tightest): over 4000 draws, L > θ* in at most a β fraction, up to the
    /// binomial 1 − 1e-6 quantile (β = 0.05: 4000·0.05 = 200, fail above 265). A false failure
    /// happens with probability below 1e-6.
    #[test]
    fn contrast_bound_covers() {
        use rand::SeedableRng;
        use rand_distr::{Distribution, Poisson};
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(11);
        let e = std::f64::consts::E;
        for &(mu_w, theta, scale) in &[(400.0, 5e-4, 8e4), (30.0, 1e-5, 1.6e5), (2.0, 0.0, 1e3)] {
            let mu_u = e * mu_w + scale * theta;
            let (pu, pw) = (Poisson::new(mu_u).unwrap(), Poisson::new(mu_w).unwrap());
            let mut misses = 0;
            for _ in 0..4000 {
                let (u, w) = (pu.sample(&mut rng) as u64, pw.sample(&mut rng) as u64);
                if poisson_contrast_lower(u, w, e, scale, 0.05, 0.0025) > theta {
                    misses += 1;
                }
            }
            assert!(misses <= 265, "μ_W {mu_w}, θ {theta}: {misses} of 4000");
        }
    }

    /// Power sanity and monotonicity: a clear contrast is shown; the bound is below the truth's
    /// point estimate; the empirical ε is positive exactly when the bound at δ = 0 is.
    #[test]
    fn contrast_bound_detects_and_orders() {
        let e = std::f64::consts::E;
        // 1300 vs 300: (1300 − e·300)/8e4 ≈ 6.1e-3.
        let l = poisson_contrast_lower(1300, 300, e, 8e4, 0.05, 0.0025);
        assert!(l > 3e-3 && l < 6.1e-3, "{l}");
        let eps = poisson_contrast_epsilon(1300, 300, 0.0, 8e4, 0.05, 0.0025).unwrap();
        assert!(eps > 1.0 && eps < (1300.0f64 / 300.0).ln(), "{eps}");
        assert_eq!(poisson_contrast_lower(100, 100, e, 8e4, 0.05, 0.0025), 0.0);
        assert!(poisson_contrast_epsilon(100, 100, 0.0, 8e4, 0.05, 0.0025).is_none());
        assert_eq!(poisson_contrast_lower(0, 0, e, 8e4, 0.05, 0.0025), 0.0);
    }

    #[test]
    fn monotone_in_k_and_a() {
        let m = 10_000;
        let mut prev = 0.0;
        for k in [0, 1, 2, 5, 10, 100, 1000] {
            let l = clopper_pearson_lower(k, m, 0.05);
            assert!(l >= prev);
            prev = l;
        }
        assert!(clopper_pearson_lower(10, m, 0.01) <= clopper_pearson_lower(10, m, 0.05));
        assert!(clopper_pearson_upper(10, m, 0.01) >= clopper_pearson_upper(10, m, 0.05));
    }

    /// Coverage by simulation: over 20 000 binomial draws with p = 3e-4, m = 10 000, the lower bound
    /// at a = 0.05 exceeds p in at most a fraction ~0.05 of draws. Exact: P(K ≥ k*) for the
    /// smallest k* with p_lo(k*) > p, computed below, must be ≤ 0.05; we check the exact value.
    #[test]
    fn exact_coverage() {
        let (p, m, a) = (3e-4, 10_000u64, 0.05);
        let b = Binomial::new(p, m).unwrap();
        let k_star = (0..=m)
            .find(|&k| clopper_pearson_lower(k, m, a) > p)
            .unwrap();
        let miss = 1.0 - b.cdf(k_star - 1);
        assert!(miss <= a, "non-coverage {miss}");
        let k_up = (0..=m).rev().find(|&k| clopper_pearson_upper(k, m, a) < p);
        let miss_up = k_up.map(|k| b.cdf(k)).unwrap_or(0.0);
        assert!(miss_up <= a, "non-coverage {miss_up}");
    }
}
