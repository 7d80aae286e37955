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
