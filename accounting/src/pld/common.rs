//! The PLD accountant's constants, the range checks of its inputs (shared with the RDP
//! accountant: one rule, one message) and its scalar helpers in log space (`dp_accounting`'s
//! `pld/common.py`).

use std::f64::consts::{LN_2, SQRT_2};

use statrs::function::erf::erfc;

use crate::error::{AccountingError, Result};

/// Name used in the `mechanism` field of [`AccountingError::InvalidParameter`] for errors raised
/// by this module.
pub(super) const PLD: &str = "pld-accountant";

/// The default grid step Δ of the privacy loss (`dp_accounting`'s
/// `value_discretization_interval` of `PLDAccountant`).
pub const DEFAULT_DISCRETIZATION: f64 = 1e-4;

/// ln of the noise mass left out of the grid at each end of the noise distribution
/// (`dp_accounting`'s `log_mass_truncation_bound` of `from_gaussian_mechanism`).
pub const LOG_MASS_TRUNCATION: f64 = -50.0;

/// Mass cut from the two ends of a PLD after each convolution (half at each end), moved to the
/// safe side (see the module documentation); `dp_accounting`'s `tail_mass_truncation`.
pub const TAIL_MASS_TRUNCATION: f64 = 1e-15;

/// Largest number of grid points of one step's discrete PLD. The number is about
/// (1/(2z²) + 20/z)/Δ for add/remove; beyond it the computation is refused (use a larger
/// discretization or a larger z).
pub const MAX_GRID_POINTS: usize = 1 << 24;

/// Largest window (grid points) of a T-fold self-composition. Beyond it the composition is
/// refused, and [`PldAccountant::epsilon_bounds`] retries on a coarser grid (a coarser
/// pessimistic PLD is still an upper bound, a coarser optimistic one still a lower bound). At
/// 2^22 points one composition takes about a second and 200 MB.
pub const MAX_COMPOSED_POINTS: u64 = 1 << 22;

/// Largest number of steps the PLD accountant composes: 2^53, the largest count every f64
/// holds exactly (the loss grid's index arithmetic is exact below it).
pub const MAX_STEPS: u64 = 1 << 53;

/// Ends the error of a composition that does not fit this grid (its window exceeds
/// [`MAX_COMPOSED_POINTS`], or its loss indices 2^63): the accountant retries on a coarser grid
/// when it sees it.
pub const WINDOW_TOO_LARGE: &str = "(use a larger discretization)";

/// Relative margin taken off δ before the pessimistic ε is computed, to cover floating-point
/// error in the composed δ. Measured: the δ of one FFT and of repeated pairwise squaring differ
/// by 3–5·10⁻⁷ relative at δ ≈ 10⁻⁵ (q = 0.01, z = 1.1, T = 6000 and 10⁴); the margin is 20
/// times that. It moves ε up by ≈ 2·10⁻⁶ there.
pub const DELTA_ROUNDING_MARGIN: f64 = 1e-5;

/// Largest noise multiplier [`noise_multiplier_for`] searches.
pub const MAX_NOISE_MULTIPLIER: f64 = 1e4;

/// Smallest noise multiplier [`noise_multiplier_for`] searches (below it one step's grid grows as
/// 1/z²).
pub const MIN_NOISE_MULTIPLIER: f64 = 0.05;

/// Relative precision of the noise multiplier returned by [`noise_multiplier_for`].
pub(super) const NOISE_SEARCH_RELATIVE_TOLERANCE: f64 = 1e-4;

/// Below this many products a convolution is computed directly rather than by FFT.
pub(super) const DIRECT_CONVOLUTION_MAX_WORK: usize = 1 << 16;

pub(super) fn invalid(message: String) -> AccountingError {
    AccountingError::InvalidParameter {
        accountant: PLD.to_string(),
        message,
    }
}

// The range checks shared with the RDP accountant (one rule, one message).
pub(super) fn check_sampling_rate(q: f64) -> Result<()> {
    crate::rdp::check_sampling_rate(q, false)
}
pub(super) use crate::rdp::{check_delta, check_steps};

pub(super) fn check_noise_multiplier(z: f64) -> Result<()> {
    if z.is_finite() && z > 0.0 && z.powi(-2).is_finite() {
        Ok(())
    } else if z.is_finite() && z > 0.0 {
        // Positive, but z⁻² (the precision the accountant composes) overflows a double.
        Err(invalid(format!(
            "noise multiplier z = {} is too small to account: z⁻² overflows a double (about z < {}), and with so little noise ε is unbounded at any useful δ; allowed: z ≥ {} (finite)",
            crate::math::readable(z),
            crate::math::readable(SMALLEST_ACCOUNTED_Z),
            crate::math::readable(SMALLEST_ACCOUNTED_Z)
        )))
    } else {
        Err(invalid(format!(
            "noise multiplier z = {}; allowed: 0 < z < ∞ (finite, z ≥ {})",
            crate::math::readable(z),
            crate::math::readable(SMALLEST_ACCOUNTED_Z)
        )))
    }
}

/// The smallest noise multiplier the PLD accountant takes (not to be confused with
/// [`MIN_NOISE_MULTIPLIER`], where `--target-epsilon`'s search stops): the least z with z⁻² finite
/// (√(1/f64::MAX) ≈ 7.46e-155, rounded up).
pub const SMALLEST_ACCOUNTED_Z: f64 = 7.5e-155;

pub(super) fn check_discretization(d: f64) -> Result<()> {
    if d.is_finite() && d > 0.0 && d <= 1.0 {
        Ok(())
    } else {
        Err(invalid(format!(
            "discretization interval = {d}; allowed: 0 < Δ ≤ 1"
        )))
    }
}

// ---------------------------------------------------------------------------------------------
// Scalar helpers
// ---------------------------------------------------------------------------------------------

/// ln(eˣ + eʸ), with −∞ standing for 0.
pub(super) fn log_add(x: f64, y: f64) -> f64 {
    let (a, b) = if x < y { (x, y) } else { (y, x) };
    if a == f64::NEG_INFINITY {
        return b;
    }
    b + (a - b).exp().ln_1p()
}

/// ln(eˣ − eʸ) for x > y; −∞ if x ≤ y.
pub(super) fn log_sub(x: f64, y: f64) -> f64 {
    if x <= y {
        return f64::NEG_INFINITY;
    }
    if y == f64::NEG_INFINITY {
        return x;
    }
    x + (-(y - x).exp_m1()).ln()
}

/// Standard normal CDF Φ(x) = ½ erfc(−x/√2) (keeps relative accuracy in the lower tail).
pub(super) fn ndtr(x: f64) -> f64 {
    if x == f64::NEG_INFINITY {
        return 0.0;
    }
    if x == f64::INFINITY {
        return 1.0;
    }
    0.5 * erfc(-x / SQRT_2)
}

/// ln Φ(x), accurate in the far lower tail where Φ underflows.
///
/// For x ≥ −30 this is `ln` of [`ndtr`]; below, the asymptotic series
/// Φ(x) = φ(x)/|x| · (1 − 1/x² + 3/x⁴ − 15/x⁶ + 105/x⁸ − …) (Abramowitz & Stegun 26.2.12),
/// whose truncation error at x = −30 is below 1e-14 relative.
pub(super) fn log_ndtr(x: f64) -> f64 {
    if x.is_nan() {
        return f64::NAN;
    }
    if x >= -30.0 {
        return ndtr(x).ln();
    }
    if x == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    let inv = 1.0 / (x * x);
    let mut term = 1.0;
    let mut sum = 0.0;
    for k in 1..=6 {
        term *= -f64::from(2 * k - 1) * inv;
        sum += term;
    }
    -0.5 * x * x - (-x).ln() - 0.5 * (2.0 * std::f64::consts::PI).ln() + sum.ln_1p()
}

/// ln sinh(a) for a > 0.
pub(super) fn log_sinh(a: f64) -> f64 {
    a + (-(-2.0 * a).exp()).ln_1p() - LN_2
}

/// asinh(eᵃ) for any real a (no overflow for large a).
pub(super) fn asinh_exp(a: f64) -> f64 {
    // asinh(y) = ln(y + √(y² + 1)) = logaddexp(½·logaddexp(0, 2a), a) for y = eᵃ.
    log_add(0.5 * log_add(0.0, 2.0 * a), a)
}
