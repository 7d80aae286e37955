//! Small numerical helpers of the accountants, shared with the claims, calibrations and the
//! catalogue of `dp-audit-mechanisms` (which re-exports them as `dp_audit_mechanisms::math`).
//!
//! Everything here is a thin layer over `statrs` special functions; the only hand-written
//! pieces are root-finding loops whose *direction of rounding* matters (a calibrated noise scale
//! must err large, an allowed δ must err large), which no library offers with that guarantee.

use statrs::function::erf::erfc;

/// A generous bound on the relative error of [`std_normal_cdf`] (measured ≤ 5e-11 down to
/// x = −10; 1e-9 leaves a factor 20).
pub const NORMAL_CDF_REL_ERROR: f64 = 1e-9;

/// Standard normal CDF Φ(x), computed as ½·erfc(−x/√2) so that the lower tail keeps its
/// relative accuracy. Measured against CPython's `math.erfc`: relative error 1e-12 at x = 1.96 and
/// 5e-11 at x = −10; callers that need a safe side add [`NORMAL_CDF_REL_ERROR`].
pub fn std_normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// The privacy profile of μ-Gaussian DP: the hockey-stick divergence H_{e^ε}(N(μ,1) ‖ N(0,1)).
///
/// δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
/// (Balle & Wang 2018, Theorem 8; Dong, Roth & Su 2022, Corollary 2.13). `e^ε Φ(·)` is evaluated
/// as `exp(ε + ln Φ(·))` so that a huge `e^ε` times an underflowed `Φ` gives 0, not NaN.
/// Negative ε is allowed (the curve continues); the value is clamped to [0, 1]. This is a point
/// value; [`gaussian_dp_delta_upper`] adds the error margin for use as an allowance.
pub fn gaussian_dp_delta(epsilon: f64, mu: f64) -> f64 {
    let a = std_normal_cdf(-epsilon / mu + mu / 2.0);
    let b = std_normal_cdf(-epsilon / mu - mu / 2.0);
    let second = if b > 0.0 {
        (epsilon + b.ln()).exp()
    } else {
        0.0
    };
    (a - second).clamp(0.0, 1.0)
}

/// [`gaussian_dp_delta`] plus a margin covering the relative error of both Φ terms
/// (each at most [`NORMAL_CDF_REL_ERROR`]; the subtracted term is at most the first), so the
/// result is ≥ the exact profile.
pub fn gaussian_dp_delta_upper(epsilon: f64, mu: f64) -> f64 {
    let first = std_normal_cdf(-epsilon / mu + mu / 2.0);
    (gaussian_dp_delta(epsilon, mu) + 2.0 * NORMAL_CDF_REL_ERROR * first).min(1.0)
}

/// Analytic Gaussian calibration (Balle & Wang 2018, Theorem 8 and Algorithm 1): the smallest
/// noise standard deviation σ such that the Gaussian mechanism with ℓ2-sensitivity `sensitivity`
/// is (ε, δ)-DP, i.e. `gaussian_dp_delta(ε, sensitivity/σ) ≤ δ` (checked with the error margin of
/// [`gaussian_dp_delta_upper`]).
///
/// Solved by bisection on μ = Δ/σ (δ(ε; μ) is increasing in μ); the returned σ is taken from the
/// bracket end that satisfies the constraint, so it errs *large* (the safe side).
///
/// Returns `None` unless ε > 0, 0 < δ < 1 and Δ > 0 (all finite).
///
/// # Examples
/// ```
/// let sigma = dp_audit_accounting::math::analytic_gaussian_sigma(1.0, 1e-5, 1.0).unwrap();
/// assert!(sigma >= 3.7306316348159374 && sigma < 3.7306317);
/// ```
pub fn analytic_gaussian_sigma(epsilon: f64, delta: f64, sensitivity: f64) -> Option<f64> {
    let ok = epsilon.is_finite()
        && epsilon > 0.0
        && delta > 0.0
        && delta < 1.0
        && sensitivity.is_finite()
        && sensitivity > 0.0;
    if !ok {
        return None;
    }
    // lo satisfies δ(ε; lo) ≤ δ; hi violates it.
    let mut lo = 0.0_f64;
    let mut hi = 1.0_f64;
    while gaussian_dp_delta_upper(epsilon, hi) <= delta {
        lo = hi;
        hi *= 2.0;
        if hi > 1e6 {
            return None;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if gaussian_dp_delta_upper(epsilon, mid) <= delta {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if lo <= 0.0 {
        return None;
    }
    // σ = Δ/lo, rounded up by one ulp so floating division never makes it smaller.
    Some((sensitivity / lo).next_up())
}

/// Classical Gaussian calibration σ = Δ·√(2 ln(1.25/δ))/ε (Dwork & Roth 2014, Theorem A.1),
/// valid only for ε < 1.
pub fn classical_gaussian_sigma(epsilon: f64, delta: f64, sensitivity: f64) -> f64 {
    sensitivity * (2.0 * (1.25 / delta).ln()).sqrt() / epsilon
}

/// A number exactly and briefly, for values that must stay exact (records, claim parameters):
/// the shortest decimal that reads back to the same f64, in plain notation for magnitudes in
/// [1e-4, 1e15) and 0 (`0.5`, `3`, `-0`, `123456.75`), else in scientific notation (`1e308`,
/// `-2.5e-300`), so ±1e308 is not printed as a 309-digit integer nor 1e-300 with 300 zeros.
/// `inf`, `-inf` and `NaN` as Rust prints them.
pub fn exact(x: f64) -> String {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() || (1e-4..1e15).contains(&a) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// A number as people read it: integers below 10^6 exactly (`4096`), otherwise 4 significant
/// digits in fixed notation, or 3 in scientific notation below 1e-3 and from 1e6 up (`1e-6`,
/// `3.33e-4`, `2.5e6`), trailing zeros dropped; `-0` as `0`; `inf`, `-inf` and `NaN`. For messages,
/// tables and figures, never for values that must round-trip (JSON keeps full precision).
pub fn readable(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if x.fract() == 0.0 && a < 1e6 {
        return format!("{x:.0}");
    }
    if !(1e-3..1e6).contains(&a) {
        let s = format!("{x:.2e}");
        return match s.split_once('e') {
            Some((m, exp)) if m.contains('.') => {
                format!("{}e{exp}", m.trim_end_matches('0').trim_end_matches('.'))
            }
            _ => s,
        };
    }
    let digits = (3 - a.log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

#[cfg(test)]
mod tests {
    #[test]
    fn exact_numbers_are_short_and_round_trip() {
        for (x, s) in [
            (1e308, "1e308"),
            (-1e308, "-1e308"),
            (1e-300, "1e-300"),
            (0.5, "0.5"),
            (3.0, "3"),
            (-0.0, "-0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-5"),
            (123456.75, "123456.75"),
            (1e15, "1e15"),
            (f64::MAX, "1.7976931348623157e308"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(super::exact(x), s);
            assert_eq!(s.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{s}");
        }
    }

    #[test]
    fn readable_numbers() {
        let cases = [
            (0.000001, "1e-6"),
            (1.0 / 3000.0, "3.33e-4"),
            (0.001, "0.001"),
            (0.05, "0.05"),
            (4096.0, "4096"),
            (-5.0, "-5"),
            (0.63, "0.63"),
            (2.5e6 + 0.5, "2.5e6"),
            (1e300, "1e300"),
            (1e-300, "1e-300"),
            (123.456789, "123.5"),
            (f64::INFINITY, "inf"),
        ];
        for (x, want) in cases {
            assert_eq!(super::readable(x), want, "{x}");
        }
    }

    use super::*;

    #[test]
    fn normal_cdf_reference_values() {
        // scipy.stats.norm.cdf(1.96) = 0.9750021048517795; norm.cdf(-10) = 7.619853024160527e-24
        // (Values also given by CPython: 0.5*math.erfc(-1.96/math.sqrt(2)).)
        assert!((std_normal_cdf(1.96) / 0.9750021048517795 - 1.0).abs() < NORMAL_CDF_REL_ERROR);
        assert!((std_normal_cdf(-10.0) / 7.619853024160527e-24 - 1.0).abs() < NORMAL_CDF_REL_ERROR);
    }

    #[test]
    fn analytic_gaussian_matches_statistics_md() {
        // ../shared/STATISTICS.md §1: ε = 1, δ = 1e-5, Δ = 1 → σ = 3.7306316348159374.
        let s = analytic_gaussian_sigma(1.0, 1e-5, 1.0).unwrap();
        // Safe side: never below the exact value; within 1e-7 relative of it.
        assert!(
            s >= 3.7306316348159374 && s / 3.7306316348159374 - 1.0 < 1e-7,
            "{s}"
        );
        assert!(gaussian_dp_delta(1.0, 1.0 / s) <= 1e-5);
        // Sensitivity scales σ linearly.
        let s2 = analytic_gaussian_sigma(1.0, 1e-5, 2.0).unwrap();
        assert!((s2 / s - 2.0).abs() < 1e-9);
        assert!(analytic_gaussian_sigma(0.0, 1e-5, 1.0).is_none());
        assert!(analytic_gaussian_sigma(1.0, 0.0, 1.0).is_none());
    }

    #[test]
    fn gdp_profile_reference_value() {
        // Exact Gaussian value from STATISTICS.md §4: ε(σ = 4, δ = 1e-3) = 0.5920067,
        // i.e. δ(0.5920067; μ = 1/4) ≈ 1e-3.
        let d = gaussian_dp_delta(0.5920067, 0.25);
        assert!((d - 1e-3).abs() < 1e-8, "{d}");
        // Huge ε: no NaN.
        assert_eq!(gaussian_dp_delta(800.0, 1.0), 0.0);
    }

    #[test]
    fn classical_is_larger_than_analytic_for_small_epsilon() {
        let c = classical_gaussian_sigma(0.5, 1e-5, 1.0);
        let a = analytic_gaussian_sigma(0.5, 1e-5, 1.0).unwrap();
        assert!(c > a);
        assert!((classical_gaussian_sigma(1.0, 1e-5, 1.0) - 4.8448).abs() < 1e-3);
    }
}
