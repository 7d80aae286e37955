//! Privacy-loss-distribution (PLD) accounting of the Poisson-subsampled Gaussian mechanism:
//! discretized PLDs, composition by FFT, and (ε, δ) upper and lower bounds.
//!
//! # What is computed, and from where
//! - The **privacy loss distribution** of a pair (P, Q) is the law of L = ln(p(X)/q(X)) for
//!   X ~ P; its hockey-stick divergence is δ(ε) = E_P[(1 − e^{ε−L})₊] (plus the mass at L = +∞),
//!   and the PLD of a composition is the convolution of the PLDs (Meiser & Mohammadi 2018,
//!   "Tight on budget? Tight bounds for r-fold approximate differential privacy", CCS; Sommer,
//!   Meiser & Mohammadi 2019, "Privacy loss classes: the central limit theorem in differential
//!   privacy", PoPETs). Convolving discretized PLDs by FFT is the accountant of Koskela, Jälkö &
//!   Honkela (2020, "Computing tight differential privacy guarantees using FFT", AISTATS).
//! - **Dominating pairs** of one step of the Poisson-subsampled Gaussian mechanism (rate q, noise
//!   N(0, z²), each record's contribution of norm ≤ 1), as in Zhu, Dong & Wang (2022, "Optimal
//!   accounting of differential privacy via characteristic function", AISTATS) and Google's
//!   `dp_accounting` (0.6.0, `pld/privacy_loss_mechanism.py`, `GaussianPrivacyLoss` with
//!   `sampling_prob` and `adjacency_type`), with φ = N(0, z²):
//!   - add/remove, "remove" direction: P = (1−q)·φ + q·φ(· + 1), Q = φ;
//!   - add/remove, "add" direction: P = φ, Q = (1−q)·φ + q·φ(· − 1);
//!   - replace-one: P = (1−q)·φ + q·φ(· + 1), Q = (1−q)·φ + q·φ(· − 1) (the replaced record
//!     moves the sum by up to 2; for q = 1 this is the Gaussian mechanism with sensitivity 2).
//!
//!   For q < 1 the two add/remove directions differ, and a neighboring pair keeps its direction
//!   across all steps, so each direction is composed on its own and δ(ε) is the larger of the
//!   two (ε the larger of the two ε), as `dp_accounting`'s `PrivacyLossDistribution` does with
//!   its `_pmf_remove` and `_pmf_add`. For q = 1 both directions are the same pair (computed
//!   once); replace-one is symmetric (the pair is its own mirror image).
//! - **Pessimistic discretization**: connect-the-dots (Doroshenko, Ghazi, Kamath, Kumar &
//!   Manurangsi 2022, "Connect the dots: tighter discrete approximations of privacy loss
//!   distributions", PETS, Algorithm 1, on the fixed grid εₖ = k·Δ as `dp_accounting`'s
//!   `create_pmf_pessimistic_connect_dots_fixed_gap`). The discrete PLD is that of a pair whose
//!   δ curve, as a function of e^ε, is the chord interpolation of the true (convex) curve through
//!   the grid points: an **upper bound** on δ(ε) for every ε, and (being a dominating pair) after
//!   any number of compositions.
//! - **Optimistic discretization**: the outcomes are merged into buckets of consecutive privacy
//!   loss (post-processing, so the merged pair is dominated and its δ after composition is a
//!   **lower bound**), with bucket boundaries chosen so that each merged bucket's loss
//!   ln(P(B)/Q(B)) is (just above) a grid point εₖ; that loss is then rounded down to εₖ (which
//!   lowers δ after composition further, as (1 − e^{ε−L})₊ is increasing in L). Choosing the
//!   boundaries adaptively avoids the bias of rounding every loss down by up to one grid step
//!   (the "privacy buckets" of Meiser & Mohammadi 2018, `dp_accounting`'s
//!   `pessimistic_estimate=False`), which would add ≈ T·Δ/2 to the loss after T steps.
//! - **Composition**: the discrete PLDs are convolved by FFT (rustfft); the mass at +∞ composes as
//!   1 − (1 − m₁)(1 − m₂) (1 − (1 − m)^T for T-fold self-composition, which is one FFT raised
//!   to the T-th power over a window holding all but [`TAIL_MASS_TRUNCATION`] of the mass, that
//!   bound being added to +∞ for the pessimistic PLD). After every convolution at most
//!   [`TAIL_MASS_TRUNCATION`]/2 of mass is cut from each end: for the
//!   pessimistic PLD the low end's mass is moved up to the first kept loss and the high end's to
//!   +∞ (so it stays an upper bound), for the optimistic one the low end's mass is dropped and the
//!   high end's moved down to the last kept loss (so it stays a lower bound).
//! - The noise tails beyond the quantiles of mass e^{−50}/2 ([`LOG_MASS_TRUNCATION`], the default
//!   of `dp_accounting`) are not resolved on the grid: the pessimistic PLD puts the upper loss
//!   tail at +∞ (through δ at the last grid point), the optimistic one drops the lower tail.
//!
//! # Defaults, and what the reference is
//! The grid step Δ = [`DEFAULT_DISCRETIZATION`] = 10⁻⁴ is the default `value_discretization_interval`
//! of `dp_accounting`'s `PLDAccountant`, whose Gaussian PLDs use connect-the-dots (pessimistic)
//! with `log_mass_truncation_bound = −50` and `tail_mass_truncation = 1e-15`; those are the
//! settings of the reference values in the tests (`dp_accounting` 0.6.0, add/remove).
//!
//! # Rounding, and what is an upper bound
//! In exact arithmetic the pessimistic δ(ε) is an upper bound on the mechanism's δ(ε) (connect-
//! the-dots dominates, tails go to +∞), and the optimistic one a lower bound (merging is
//! post-processing, losses are rounded down, tails are dropped). In floating point:
//! - **FFT round-off is bounded.** Every composed PLD carries a bound on the ℓ¹ norm of its
//!   floating-point error against the same composition in exact arithmetic (the FFT error
//!   analysis of Higham 2002, Theorem 24.2, taken componentwise, with a safety factor of 4:
//!   see `fft_error`; measured errors are ≈ 500 times below it), and δ(ε) is read with that
//!   bound added (pessimistic) or subtracted (optimistic): [`Pld::delta`], [`Pld::epsilon`].
//!   An FFT's error is absolute, ≈ 10⁻¹⁶ of the total mass per entry, T-fold amplified by the
//!   power: without more, δ ≲ 10⁻⁸ would not be resolved (the untilted T-fold FFT was measured
//!   1.6 % high in δ at δ = 10⁻⁹, q = 2·10⁻⁵, z = 0.5, T = 10⁵, and 47 % high at 5·10⁻¹¹; its
//!   clipped negative entries biased the optimistic ε up, above the pessimistic one).
//!   [`PldAccountant::epsilon_bounds`] therefore composes a one-event ledger **exponentially
//!   tilted** (masses times e^{λL}, normalized; tilting commutes with convolution) by the λ
//!   of the Chernoff bound at δ, so the masses that make δ(ε) are resolved to a relative
//!   precision and the error bound at ε is ≈ 10⁻¹⁰ of δ even at δ = 10⁻¹⁰. A several-event
//!   ledger is composed untilted; its bound is ≈ 10⁻⁹ absolute, so at smaller δ its ε is
//!   looser (never false), and where no ε can be certified the call is refused naming δ.
//! - the connect-the-dots masses are second differences of δ on the grid; where δ is close to 1
//!   its round-off makes some of them negative, and they are clipped to 0 (as in
//!   `dp_accounting`), which adds mass (≈ 10⁻⁸ per step for q = 0.01): safe for the pessimistic
//!   PLD (δ only grows), slightly loose. The one-step PLDs themselves (closed-form δ and the
//!   bucket boundaries) are taken as exact; their round-off is relative, ≈ 10⁻¹⁵, and not
//!   bounded here.
//!
//! The pessimistic ε is moreover computed at δ·(1 − [`DELTA_ROUNDING_MARGIN`]) and moved up
//! one ulp (rounded **up**), a margin for the unbounded one-step round-off and the summation of
//! δ; the optimistic ε is a point where the optimistic δ minus its error bound exceeds δ
//! (rounded down). The upper bound is never below the lower one; if it ever were, the call is
//! refused.
//!
//! # Cost
//! One step's grid has about (1/(2z²) + 20/z)/Δ points for q = 1 (fewer for small q). T-fold
//! self-composition is one forward and one inverse FFT over a window of mass 1 − 10⁻¹⁵ found by a
//! Chernoff bound (as `dp_accounting`'s `self_convolve`), the spectrum raised to the power T by
//! ⌈log₂T⌉ squarings (O(log T) per frequency, however large T); q = 0.01, z = 1.1, T = 6000
//! takes ≈ 0.45 s for both bounds (both directions, 2 threads) in release mode, most of it
//! building the optimistic PLD's buckets.

use std::f64::consts::{LN_2, SQRT_2};
use std::sync::Arc;

use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};
use statrs::function::erf::{erfc, erfc_inv};

use crate::accountant::SamplingPolicy;
use crate::dataset::Neighboring;
use crate::error::{MechanismError, Result};

/// Name used in the `mechanism` field of [`MechanismError::InvalidParameter`] for errors raised
/// by this module.
const PLD: &str = "pld-accountant";

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
const NOISE_SEARCH_RELATIVE_TOLERANCE: f64 = 1e-4;

/// Below this many products a convolution is computed directly rather than by FFT.
const DIRECT_CONVOLUTION_MAX_WORK: usize = 1 << 16;

fn invalid(message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: PLD.to_string(),
        message,
    }
}

// The range checks shared with the RDP accountant (one rule, one message).
fn check_sampling_rate(q: f64) -> Result<()> {
    crate::accountant::check_sampling_rate(q, false)
}
use crate::accountant::{check_delta, check_steps};

fn check_noise_multiplier(z: f64) -> Result<()> {
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

fn check_discretization(d: f64) -> Result<()> {
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
fn log_add(x: f64, y: f64) -> f64 {
    let (a, b) = if x < y { (x, y) } else { (y, x) };
    if a == f64::NEG_INFINITY {
        return b;
    }
    b + (a - b).exp().ln_1p()
}

/// ln(eˣ − eʸ) for x > y; −∞ if x ≤ y.
fn log_sub(x: f64, y: f64) -> f64 {
    if x <= y {
        return f64::NEG_INFINITY;
    }
    if y == f64::NEG_INFINITY {
        return x;
    }
    x + (-(y - x).exp_m1()).ln()
}

/// Standard normal CDF Φ(x) = ½ erfc(−x/√2) (keeps relative accuracy in the lower tail).
fn ndtr(x: f64) -> f64 {
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
fn log_ndtr(x: f64) -> f64 {
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
fn log_sinh(a: f64) -> f64 {
    a + (-(-2.0 * a).exp()).ln_1p() - LN_2
}

/// asinh(eᵃ) for any real a (no overflow for large a).
fn asinh_exp(a: f64) -> f64 {
    // asinh(y) = ln(y + √(y² + 1)) = logaddexp(½·logaddexp(0, 2a), a) for y = eᵃ.
    log_add(0.5 * log_add(0.0, 2.0 * a), a)
}

// ---------------------------------------------------------------------------------------------
// The dominating pairs of one step
// ---------------------------------------------------------------------------------------------

/// Which pair of one step (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Remove,
    Add,
    Replace,
}

/// One step's pair (P, Q) of the Poisson-subsampled Gaussian mechanism, noise σ = z,
/// contribution 1. The privacy loss L(x) = ln(p(x)/q(x)) is non-increasing in x for all three.
#[derive(Clone, Copy, Debug)]
struct Pair {
    q: f64,
    sigma: f64,
    direction: Direction,
    ln_q: f64,
    ln_1mq: f64,
}

impl Pair {
    fn new(q: f64, sigma: f64, direction: Direction) -> Self {
        Self {
            q,
            sigma,
            direction,
            ln_q: q.ln(),
            ln_1mq: (-q).ln_1p(),
        }
    }

    fn s2(&self) -> f64 {
        self.sigma * self.sigma
    }

    /// Loss of the "remove" pair: ln((1−q) + q·e^{ℓ(x)}), ℓ(x) = (−½ − x)/σ².
    fn loss_remove(&self, x: f64) -> f64 {
        let ell = (-0.5 - x) / self.s2();
        if self.q == 1.0 {
            ell
        } else {
            log_add(self.ln_1mq, self.ln_q + ell)
        }
    }

    /// The privacy loss at x.
    fn loss(&self, x: f64) -> f64 {
        match self.direction {
            Direction::Remove => self.loss_remove(x),
            // By the symmetry of φ, the "add" loss at x is minus the "remove" loss at −x.
            Direction::Add => -self.loss_remove(-x),
            Direction::Replace => self.loss_remove(x) - self.loss_remove(-x),
        }
    }

    /// Largest x with L(x) ≥ l for the "remove" pair (±∞ outside the range of L).
    fn x_of_loss_remove(&self, l: f64) -> f64 {
        if l == f64::INFINITY {
            return f64::NEG_INFINITY;
        }
        let ell = if self.q == 1.0 {
            l
        } else if l <= self.ln_1mq {
            return f64::INFINITY;
        } else {
            // ℓ = ln(1 + (eˡ − 1)/q) = ln(eˡ − (1 − q)) − ln q.
            log_sub(l, self.ln_1mq) - self.ln_q
        };
        -0.5 - self.s2() * ell
    }

    /// Largest x with L(x) ≥ l: {L ≥ l} = {X ≤ x}.
    fn x_of_loss(&self, l: f64) -> f64 {
        match self.direction {
            Direction::Remove => self.x_of_loss_remove(l),
            Direction::Add => -self.x_of_loss_remove(-l),
            Direction::Replace => {
                if l == f64::INFINITY {
                    return f64::NEG_INFINITY;
                }
                if l == f64::NEG_INFINITY {
                    return f64::INFINITY;
                }
                if self.q == 1.0 {
                    return -0.5 * self.s2() * l;
                }
                if l == 0.0 {
                    return 0.0;
                }
                // With a = (1−q)/q · e^{1/(2σ²)} and u = x/σ²: e^L = (a + e^{−u})/(a + e^{u}),
                // so u = −L/2 − asinh(a·sinh(L/2)).
                let ln_a = self.ln_1mq - self.ln_q + 0.5 / self.s2();
                let asinh = l.signum() * asinh_exp(ln_a + log_sinh(0.5 * l.abs()));
                self.s2() * (-0.5 * l - asinh)
            }
        }
    }

    /// P(X ≤ x).
    fn p_cdf(&self, x: f64) -> f64 {
        let s = self.sigma;
        match self.direction {
            Direction::Add => ndtr(x / s),
            Direction::Remove | Direction::Replace => {
                if self.q == 1.0 {
                    ndtr((x + 1.0) / s)
                } else {
                    (1.0 - self.q) * ndtr(x / s) + self.q * ndtr((x + 1.0) / s)
                }
            }
        }
    }

    /// ln Q(X ≤ x).
    fn q_log_cdf(&self, x: f64) -> f64 {
        let s = self.sigma;
        match self.direction {
            Direction::Remove => log_ndtr(x / s),
            Direction::Add | Direction::Replace => {
                if self.q == 1.0 {
                    log_ndtr((x - 1.0) / s)
                } else {
                    log_add(
                        self.ln_1mq + log_ndtr(x / s),
                        self.ln_q + log_ndtr((x - 1.0) / s),
                    )
                }
            }
        }
    }

    /// The range of x resolved on the grid: outside it P has mass ≤ e^{−50} (each mixture
    /// component's tail is ≤ e^{−50}/2), as in `dp_accounting`'s `privacy_loss_tail`.
    fn x_range(&self) -> (f64, f64) {
        // Φ⁻¹(p) = −√2 · erfc⁻¹(2p).
        let z0 = -SQRT_2 * erfc_inv(LOG_MASS_TRUNCATION.exp()) * self.sigma;
        match self.direction {
            Direction::Remove | Direction::Replace => (z0 - 1.0, -z0),
            Direction::Add => (z0, 1.0 - z0),
        }
    }

    /// P(X ≤ x) − e^ε Q(X ≤ x) = P(L ≥ l) − e^ε Q(L ≥ l) for x = x(l).
    fn hockey_at(&self, epsilon: f64, x: f64) -> f64 {
        if x == f64::INFINITY {
            return -epsilon.exp_m1();
        }
        if x == f64::NEG_INFINITY {
            return 0.0;
        }
        let lq = self.q_log_cdf(x);
        let second = if lq == f64::NEG_INFINITY {
            0.0
        } else {
            (epsilon + lq).exp()
        };
        self.p_cdf(x) - second
    }

    /// The hockey-stick divergence δ(ε) = sup over events, attained at {L ≥ ε}.
    fn delta(&self, epsilon: f64) -> f64 {
        self.hockey_at(epsilon, self.x_of_loss(epsilon))
            .clamp(0.0, 1.0)
    }
}

// ---------------------------------------------------------------------------------------------
// Discrete PLDs of one direction
// ---------------------------------------------------------------------------------------------

/// A discrete PLD: mass at loss Lᵢ = (offset + i)·Δ + shift, plus `infinity` at +∞.
///
/// The masses are held **tilted**: `probs[i]` = pᵢ·e^{λLᵢ − log_scale} with λ = `tilt` ≥ 0, so
/// pᵢ = `probs[i]`·e^{log_scale − λLᵢ} (λ = 0, log_scale = 0: untilted). Exponential tilting
/// commutes with convolution (the tilted composition is the composition of the tilted PLDs,
/// scales multiplying), and an FFT's round-off is absolute in the tilted masses, so after the
/// tilt the small masses at large loss, the ones δ(ε) at small δ is made of, are resolved to
/// a relative precision instead of to 10⁻¹⁶ of the whole (see [`PldAccountant::pld_at`]).
///
/// `error` bounds Σᵢ |probs[i] − exact tilted mass i| (ℓ¹, in tilted units), the floating-point
/// error of the composition against the same composition in exact arithmetic, so that
/// |δ̂(ε) − δ(ε)| ≤ error·c(λ)·e^{log_scale − λε} (see [`Pmf::error_at`]). `floor`: a tilted
/// pessimistic PLD drops the mass below its window; its δ(ε) holds for ε ≥ `floor` only
/// (−∞ otherwise). The shift is 0 for pessimistic PLDs; an optimistic one may sit on a grid
/// shifted by a real number (see [`optimistic_pmf`]), and shifts add under composition.
#[derive(Clone, Debug, PartialEq)]
struct Pmf {
    offset: i64,
    probs: Vec<f64>,
    infinity: f64,
    shift: f64,
    tilt: f64,
    log_scale: f64,
    error: f64,
    floor: f64,
}

impl Pmf {
    fn identity() -> Self {
        Self::on_grid(0, vec![1.0], 0.0, 0.0)
    }

    /// An untilted PLD, exact by definition (error 0).
    fn on_grid(offset: i64, probs: Vec<f64>, infinity: f64, shift: f64) -> Self {
        Self {
            offset,
            probs,
            infinity,
            shift,
            tilt: 0.0,
            log_scale: 0.0,
            error: 0.0,
            floor: f64::NEG_INFINITY,
        }
    }

    fn is_identity(&self) -> bool {
        self.probs.len() == 1
            && self.probs[0] == 1.0
            && self.offset == 0
            && self.shift == 0.0
            && self.infinity == 0.0
            && self.error == 0.0
            && self.log_scale == 0.0
    }

    /// The loss of entry `i`.
    fn loss(&self, d: f64, i: usize) -> f64 {
        (self.offset + i as i64) as f64 * d + self.shift
    }

    /// The (untilted) mass of entry `i`.
    fn mass(&self, d: f64, i: usize) -> f64 {
        let p = self.probs[i];
        if self.tilt == 0.0 || p == 0.0 {
            p
        } else {
            p * (self.log_scale - self.tilt * self.loss(d, i)).exp()
        }
    }

    /// The bound on |δ̂(ε) − δ(ε)| from `error`: Σ_{Lᵢ>ε} |eᵢ|·e^{log_scale − λLᵢ}(1 − e^{ε−Lᵢ})
    /// ≤ error·e^{log_scale − λε}·max_{x>0} e^{−λx}(1 − e^{−x}), and that maximum is
    /// c(λ) = λ^λ/(1 + λ)^{1+λ} (1 for λ = 0).
    fn error_at(&self, epsilon: f64) -> f64 {
        if self.error == 0.0 {
            return 0.0;
        }
        let l = self.tilt;
        if l == 0.0 {
            return self.error;
        }
        let log_c = l * l.ln() - (1.0 + l) * l.ln_1p();
        self.error * (self.log_scale - l * epsilon + log_c).exp()
    }

    /// δ̂(ε): the hockey-stick divergence of the computed masses (no error term).
    fn delta(&self, d: f64, epsilon: f64) -> f64 {
        let mut delta = self.infinity;
        for i in 0..self.probs.len() {
            let loss = self.loss(d, i);
            if loss > epsilon && self.probs[i] > 0.0 {
                delta += -(epsilon - loss).exp_m1() * self.mass(d, i);
            }
        }
        delta.clamp(0.0, 1.0)
    }

    /// An upper bound on the exact composition's δ(ε): δ̂(ε) plus the error bound (1 below the
    /// floor).
    fn delta_upper(&self, d: f64, epsilon: f64) -> f64 {
        if epsilon < self.floor {
            return 1.0;
        }
        (self.delta(d, epsilon) + self.error_at(epsilon)).min(1.0)
    }

    /// A lower bound on the exact composition's δ(ε): δ̂(ε) minus the error bound.
    fn delta_lower(&self, d: f64, epsilon: f64) -> f64 {
        (self.delta(d, epsilon) - self.error_at(epsilon)).max(0.0)
    }

    /// Smallest ε ≥ 0 with δ̂(ε) ≤ `delta` (+∞ if the mass at +∞ exceeds it), exactly for the
    /// discrete PLD: on each gap between consecutive losses δ(ε) = M − e^ε·W with M, W the masses
    /// of P and Q above the gap (as `dp_accounting`'s `_get_epsilon_for_delta`). W is summed
    /// as ln W (log-sum-exp): e^{−L} underflows for L > 745 (10⁸ steps reach ε ≈ 6700, where
    /// W = 0 once made every ε a grid point and the optimistic ε 0).
    fn epsilon(&self, d: f64, delta: f64) -> f64 {
        if self.infinity > delta {
            return f64::INFINITY;
        }
        let (mut mass_p, mut log_q) = (self.infinity, f64::NEG_INFINITY);
        for i in (0..self.probs.len()).rev() {
            let loss = self.loss(d, i);
            if mass_p > delta && log_q > f64::NEG_INFINITY && (mass_p - delta).ln() - log_q >= loss
            {
                break;
            }
            let p = self.mass(d, i);
            if p > 0.0 {
                mass_p += p;
                log_q = log_add(log_q, p.ln() - loss);
            }
        }
        if mass_p <= delta || log_q == f64::NEG_INFINITY {
            return 0.0;
        }
        ((mass_p - delta).ln() - log_q).max(0.0)
    }

    /// An ε ≥ 0 with [`Pmf::delta_upper`](ε) ≤ `delta`, as small as found: then the exact
    /// composition's δ(ε) ≤ δ, so its ε is at most this (δ(ε) is non-increasing). `None` when
    /// no ε up to 10⁶ passes although the mass at +∞ is below δ: the error bound is too large
    /// for this δ.
    fn epsilon_upper(&self, d: f64, delta: f64) -> Option<f64> {
        if self.infinity > delta {
            return Some(f64::INFINITY);
        }
        let ok = |eps: f64| self.delta_upper(d, eps) <= delta;
        let mut best: Option<f64> = None;
        let mut x = self.epsilon(d, delta).max(self.floor).max(0.0);
        for _ in 0..6 {
            if ok(x) {
                best = Some(best.map_or(x, |b: f64| b.min(x)));
            }
            // A little below δ − E(x), so that the next point passes despite the rounding of
            // δ̂ at it (it solves δ̂ = target only up to rounding).
            let target = delta - 1.01 * self.error_at(x) - 1e-12 * delta;
            if target <= self.infinity {
                break;
            }
            let next = self.epsilon(d, target).max(self.floor).max(0.0);
            if next == x {
                break;
            }
            x = next;
        }
        if best.is_some() {
            return best;
        }
        // The error term is not small at these points: step up until one passes, then bisect.
        let mut fail = x;
        let mut step = 1e-3_f64.max(x * 1e-3);
        let mut pass = x + step;
        while !ok(pass) {
            if pass > 1e6 {
                return None;
            }
            fail = pass;
            step *= 2.0;
            pass += step;
        }
        for _ in 0..60 {
            let mid = 0.5 * (fail + pass);
            if mid <= fail || mid >= pass {
                break;
            }
            if ok(mid) {
                pass = mid;
            } else {
                fail = mid;
            }
        }
        Some(pass)
    }

    /// An ε ≥ 0 at which [`Pmf::delta_lower`](ε) > `delta`, as large as found (0 if none):
    /// then the exact composition's δ(ε) > δ, so its ε is above this.
    fn epsilon_lower(&self, d: f64, delta: f64) -> f64 {
        let ok = |eps: f64| self.delta_lower(d, eps) > delta;
        let mut best = 0.0_f64;
        let mut x = self.epsilon(d, delta);
        if !x.is_finite() {
            // The mass at +∞ alone exceeds δ (it carries no round-off).
            return f64::INFINITY;
        }
        for _ in 0..6 {
            let below = x - 1e-12 * x.abs().max(1.0);
            if below > best && ok(below) {
                best = below;
            }
            // A little above δ + E, so that the next point passes despite rounding (the
            // error term grows as ε falls: ≥ 1 % above it here).
            let next = self.epsilon(d, delta + 1.01 * self.error_at(below) + 1e-12 * delta);
            if next >= x {
                break;
            }
            x = next;
        }
        best
    }
}

/// Unit round-off of f64.
const U: f64 = f64::EPSILON / 2.0;

/// Error bound of one FFT of length n, per unit of input: each output's error is at most
/// `fft_error(n)`·‖x‖₁, and the whole output's 2-norm error at most `fft_error(n)`·‖y‖₂.
///
/// Why this constant (hand-written: no crate bounds rustfft's error). Higham (2002, *Accuracy
/// and Stability of Numerical Algorithms*, 2nd ed., Theorem 24.2): the radix-2 Cooley–Tukey FFT
/// computes ŷ with ‖ŷ − y‖₂ ≤ (log₂n·η/(1 − log₂n·η))·‖y‖₂, η = μ + γ₄(√2 + μ), μ the error of
/// the twiddle factors (≈ 7.7u with μ = 2u). The proof is the error analysis of a product of
/// log₂n sparse butterfly matrices (Higham §3.5); the same analysis taken componentwise gives
/// |ŷₖ − yₖ| ≤ ((1 + η)^{log₂n} − 1)·‖x‖₁, as in an FFT every input reaches every output by
/// exactly one path of twiddles of modulus 1. rustfft's plans for n = 2ᵃ3ᵇ5ᶜ ([`fast_len`])
/// are mixed-radix and Good–Thomas factorizations of the same kind, with butterflies of sizes
/// 2–32 whose per-stage error per factor of two in n is below radix-2's; the bound takes
/// η = 8u per ⌈log₂n⌉ and a safety factor of 4 on top. Measured (tests): the actual errors are
/// 100–1000 times below it.
fn fft_error(n: usize) -> f64 {
    let stages = f64::from(usize::BITS - n.max(2).saturating_sub(1).leading_zeros());
    4.0 * ((stages * (8.0 * U).ln_1p()).exp_m1())
}

/// Relative error bound of zᵀ by [`complex_pow`]: at most 2⌈log₂T⌉ complex products, each
/// within √5·u relative (Brent, Percival & Zimmermann 2007), taken as 3u.
fn pow_error(times: u64) -> f64 {
    let products = 2.0 * f64::from(u64::BITS - times.leading_zeros());
    (products * (3.0 * U).ln_1p()).exp_m1()
}

/// Pessimistic connect-the-dots PLD of one pair on the grid kΔ covering the losses of the
/// resolved x range (Doroshenko et al. 2022, Algorithm 1, fixed gap).
fn pessimistic_pmf(pair: &Pair, d: f64) -> Result<Pmf> {
    let (x_lo, x_hi) = pair.x_range();
    let (l_hi, l_lo) = (pair.loss(x_lo), pair.loss(x_hi));
    connect_dots(l_lo, l_hi, |e| pair.delta(e), d, (pair.q, pair.sigma))
}

/// Pessimistic connect-the-dots PLD of one step of the Gaussian mechanism on a batch of fixed
/// size drawn without replacement, under replace-one (see [`Pld::fixed_size_gaussian`]): the
/// privacy profile δ(ε) = max(δ_remove(ε), δ_add(ε)) of the two add/remove pairs of rate `q` at
/// noise z/2 (contribution 1; i.e. contribution 2 against noise z), on the grid covering the
/// losses of both. The profile of a
/// pair is a convex, non-increasing function of e^ε; so is the larger of two, and the
/// construction needs nothing else (Doroshenko et al. 2022, Algorithm 1, reads the pair only
/// through δ on the grid).
fn pessimistic_pmf_fixed_size(q: f64, z: f64, d: f64) -> Result<Pmf> {
    let sigma = 0.5 * z;
    let remove = Pair::new(q, sigma, Direction::Remove);
    let add = Pair::new(q, sigma, Direction::Add);
    let range = |pair: &Pair| {
        let (x_lo, x_hi) = pair.x_range();
        (pair.loss(x_hi), pair.loss(x_lo))
    };
    let ((r_lo, r_hi), (a_lo, a_hi)) = (range(&remove), range(&add));
    connect_dots(
        r_lo.min(a_lo),
        r_hi.max(a_hi),
        |e| remove.delta(e).max(add.delta(e)),
        d,
        (q, z),
    )
}

/// The connect-the-dots PLD of the privacy profile `delta` on the grid kΔ from ⌊l_lo/Δ⌋ to
/// ⌈l_hi/Δ⌉ (Doroshenko et al. 2022, Algorithm 1, fixed gap); `what` = (q, σ) names the step in
/// an error.
fn connect_dots(
    l_lo: f64,
    l_hi: f64,
    delta: impl Fn(f64) -> f64,
    d: f64,
    what: (f64, f64),
) -> Result<Pmf> {
    let k_lo = (l_lo / d).floor();
    let k_hi = (l_hi / d).ceil();
    let n = check_grid(k_hi - k_lo + 1.0, what, d)?;
    let k_lo = k_lo as i64;
    let mut deltas: Vec<f64> = (0..n)
        .map(|i| delta((k_lo + i as i64) as f64 * d))
        .collect();
    // δ is non-increasing in ε; enforce it against rounding (as dp_accounting's
    // `np.minimum.accumulate`).
    for i in 1..n {
        deltas[i] = deltas[i].min(deltas[i - 1]);
    }
    let infinity = deltas[n - 1];
    if n == 1 {
        return Ok(Pmf::on_grid(k_lo, vec![1.0 - deltas[0]], infinity, 0.0));
    }
    let em1 = d.exp_m1();
    let e = d.exp();
    let mut probs = vec![0.0; n];
    // p₁ = 1 − δ₁ + (δ₂ − δ₁)/(e^Δ − 1); pᵢ = ((δᵢ₊₁ − δᵢ) − e^Δ(δᵢ − δᵢ₋₁))/(e^Δ − 1);
    // pₙ = (δₙ − δₙ₋₁)/(e^{−Δ} − 1); mass δₙ at +∞.
    probs[0] = 1.0 - deltas[0] + (deltas[1] - deltas[0]) / em1;
    for i in 1..n - 1 {
        probs[i] = ((deltas[i + 1] - deltas[i]) - e * (deltas[i] - deltas[i - 1])) / em1;
    }
    probs[n - 1] = (deltas[n - 1] - deltas[n - 2]) / (-d).exp_m1();
    for p in &mut probs {
        *p = p.max(0.0);
    }
    Ok(Pmf::on_grid(k_lo, probs, infinity, 0.0))
}

/// Optimistic PLD of one pair on the grid εₖ = g + kΔ (g ∈ (−Δ, 0], the grid's `shift`): buckets
/// of consecutive loss merged (post-processing), each bucket's boundaries chosen top-down so
/// that its merged loss ln(P(B)/Q(B)) is ≥ a grid point εₖ and as close to it as found; its
/// P-mass is put at εₖ. The loss tail above the resolved range is put at the top grid point
/// below it; the tail below is dropped. Also returns the rounding bias of the last bucket (the
/// rest of the losses, merged): its P-mass times (its merged loss − the grid point it is put
/// at), the one bucket whose loss is rounded down by up to Δ rather than matched.
fn optimistic_pmf_on(pair: &Pair, d: f64, g: f64) -> Result<(Pmf, Leftover)> {
    let (x_lo, x_hi) = pair.x_range();
    let (t_top, l_bot) = (pair.loss(x_lo), pair.loss(x_hi));
    let k_top = ((t_top - g) / d).floor();
    let k_bot = ((l_bot - g) / d).floor();
    let n = check_grid(k_top - k_bot + 1.0, (pair.q, pair.sigma), d)?;
    let (k_top, k_bot) = (k_top as i64, k_bot as i64);
    let level = |k: i64| g + k as f64 * d;
    let mut probs = vec![0.0; n];
    let index = |k: i64| (k - k_bot) as usize;
    // The tail of losses above t_top, rounded down (grid points are exact only up to rounding:
    // step down while the level is above t_top).
    let mut k_tail = k_top;
    while k_tail > k_bot && level(k_tail) > t_top {
        k_tail -= 1;
    }
    probs[index(k_tail)] += pair.p_cdf(x_lo);

    let mut t = t_top;
    let mut x_t = x_lo;
    let mut k = ((t - g) / d).ceil() as i64 - 1;
    while k >= k_bot && level(k) >= t {
        k -= 1;
    }
    let f_bot = |eps: f64| pair.hockey_at(eps, x_hi);
    let mut leftover = Leftover::default();
    while k >= k_bot {
        let eps = level(k);
        let target = pair.hockey_at(eps, x_t);
        if f_bot(eps) >= target {
            // The rest, [l_bot, t), merged has loss ≥ εₖ.
            let mass_p = (pair.p_cdf(x_hi) - pair.p_cdf(x_t)).max(0.0);
            probs[index(k)] += mass_p;
            let mass_q = pair.q_log_cdf(x_hi).exp() - pair.q_log_cdf(x_t).exp();
            if mass_p > 0.0 && mass_q > 0.0 {
                let merged = (mass_p / mass_q).ln();
                leftover = Leftover {
                    merged,
                    bias: mass_p * (merged - eps).max(0.0),
                };
            }
            break;
        }
        let b = bucket_bottom(pair, eps, target, t, l_bot, d);
        let x_b = pair.x_of_loss(b);
        probs[index(k)] += (pair.p_cdf(x_b) - pair.p_cdf(x_t)).max(0.0);
        t = b;
        x_t = x_b;
        k -= 1;
        while k >= k_bot && level(k) >= t {
            k -= 1;
        }
    }
    Ok((Pmf::on_grid(k_bot, probs, 0.0, g), leftover))
}

/// The last bucket of [`optimistic_pmf_on`]: its merged loss, and its P-mass times the amount
/// its loss is rounded down.
#[derive(Clone, Copy, Debug, Default)]
struct Leftover {
    merged: f64,
    bias: f64,
}

/// A rounding bias per step (P-mass × loss, see [`optimistic_pmf_on`]) below which the grid is
/// not shifted: 10⁻⁹ per step is 10⁻⁴ nats after 10⁵ steps (at q = 0.01, z = 1.1 it is 10⁻¹⁰
/// and a shift does not lower it: the last bucket there is the far lower tail).
const OPTIMISTIC_BIAS_TOLERANCE: f64 = 1e-9;

/// Optimistic PLD of one pair (see [`optimistic_pmf_on`]), on the grid kΔ or, when the last
/// bucket would be rounded down by a noticeable amount, on a shifted grid g + kΔ.
///
/// Why the shift: at small q (q ≪ Δ) most of the mass has |loss| ≲ q (the losses of the "remove"
/// pair are ≥ ln(1 − q)), and the merged buckets of the unshifted grid leave that bulk as the
/// last bucket, merged loss ≈ −q, rounded down to −Δ: about −Δ/2 of loss per step, which after
/// T = 10⁵ steps at q = 2·10⁻⁵, z = 0.5 pulled the optimistic ε at δ = 10⁻⁸ down to 0 (the
/// pessimistic one is 2.28). A grid through the last bucket's merged loss puts it there
/// exactly. The shift is chosen by a few fixed-point steps g ← (merged loss of the last bucket
/// on the grid through g); whatever g is chosen, the PLD is a valid optimistic one (merging is
/// post-processing and every loss is rounded down to a grid point), so the choice (the
/// candidate of least bias) needs no proof of convergence.
fn optimistic_pmf(pair: &Pair, d: f64) -> Result<Pmf> {
    let (mut best, mut leftover) = optimistic_pmf_on(pair, d, 0.0)?;
    let mut best_bias = leftover.bias;
    // Plain fixed-point steps from below: measured at q = 2·10⁻⁵, z = 0.5, the bias falls by a
    // factor ≈ 20 per build (5·10⁻⁵, 5.6·10⁻⁶, 2.5·10⁻⁷, 1.1·10⁻⁸, 4.8·10⁻¹⁰). A secant step
    // was tried and is worse: past the fixed point the last bucket changes (its merged loss
    // jumps to ≈ ln(1 − q)), so the map is not smooth there.
    for _ in 0..4 {
        if best_bias <= OPTIMISTIC_BIAS_TOLERANCE || !leftover.merged.is_finite() {
            break;
        }
        // A hair below the merged loss, so that rounding in the next build's merged loss does
        // not push it under the grid point; g ∈ (−Δ, 0].
        let target = leftover.merged - 1e-9 * d;
        let g = target - (target / d).ceil() * d;
        let (pmf, next) = optimistic_pmf_on(pair, d, g)?;
        let helped = next.bias < 0.5 * best_bias;
        if next.bias < best_bias {
            best = pmf;
            best_bias = next.bias;
        }
        if !helped {
            break;
        }
        leftover = next;
    }
    Ok(best)
}

/// The smallest b (up to a tolerance, erring high) in [l_bot, ε] with
/// D(b) := P(L ≥ b) − e^ε Q(L ≥ b) ≥ `target`: the bucket [b, t) then has merged loss ≥ ε.
/// D is increasing on b ≤ ε, with D(ε) = δ(ε) ≥ target and D(l_bot) < target.
/// Solved by the Illinois variant of regula falsi.
fn bucket_bottom(pair: &Pair, eps: f64, target: f64, t: f64, l_bot: f64, d: f64) -> f64 {
    let f = |b: f64| pair.hockey_at(eps, pair.x_of_loss(b)) - target;
    let (mut hi, mut f_hi) = (eps, f(eps));
    if f_hi < 0.0 {
        // Rounding: δ(ε) computed below D(t); the bucket is empty.
        return t.min(eps);
    }
    // The root is near 2ε − t (a symmetric bucket); try a narrow bracket first.
    let guess = (2.0 * eps - t - d).max(l_bot);
    let (mut lo, mut f_lo) = (guess, f(guess));
    if f_lo >= 0.0 {
        hi = guess;
        f_hi = f_lo;
        lo = l_bot;
        f_lo = f(l_bot);
        if f_lo >= 0.0 {
            return l_bot;
        }
    }
    let tolerance = 1e-7 * d;
    let mut side = 0_i8;
    for _ in 0..100 {
        if hi - lo <= tolerance {
            break;
        }
        let mut m = (lo * f_hi - hi * f_lo) / (f_hi - f_lo);
        if !(m > lo && m < hi) {
            m = 0.5 * (lo + hi);
        }
        let f_m = f(m);
        if f_m >= 0.0 {
            hi = m;
            f_hi = f_m;
            if side == 1 {
                f_lo *= 0.5;
            }
            side = 1;
        } else {
            lo = m;
            f_lo = f_m;
            if side == -1 {
                f_hi *= 0.5;
            }
            side = -1;
        }
    }
    hi
}

fn check_grid(points: f64, (q, sigma): (f64, f64), d: f64) -> Result<usize> {
    if points.is_finite() && points >= 1.0 && points <= MAX_GRID_POINTS as f64 {
        Ok(points as usize)
    } else {
        Err(invalid(format!(
            "one step's PLD would need {points} grid points (q = {q}, z = {sigma}, discretization \
             {d}); allowed: at most {MAX_GRID_POINTS} (use a larger z or discretization)"
        )))
    }
}

// ---------------------------------------------------------------------------------------------
// Convolution
// ---------------------------------------------------------------------------------------------

fn fft_pair(planner: &mut FftPlanner<f64>, n: usize) -> (Arc<dyn Fft<f64>>, Arc<dyn Fft<f64>>) {
    (planner.plan_fft_forward(n), planner.plan_fft_inverse(n))
}

/// Linear convolution of two non-negative sequences (FFT for large inputs), with a bound on
/// the ℓ¹ norm of its floating-point error (see [`fft_error`]).
fn convolve(a: &[f64], b: &[f64]) -> (Vec<f64>, f64) {
    let len = a.len() + b.len() - 1;
    let (mass_a, mass_b): (f64, f64) = (a.iter().sum(), b.iter().sum());
    if a.len().saturating_mul(b.len()) <= DIRECT_CONVOLUTION_MAX_WORK {
        let mut out = vec![0.0; len];
        for (i, &x) in a.iter().enumerate() {
            for (j, &y) in b.iter().enumerate() {
                out[i + j] += x * y;
            }
        }
        // Sums of at most min(|a|, |b|) non-negative products: relative error ≤ γ_{k+1}.
        let k = a.len().min(b.len()) as f64 + 1.0;
        let error = (k * U / (1.0 - k * U)) * mass_a * mass_b * (1.0 + 2.0 * U);
        return (out, error);
    }
    let n = len.next_power_of_two();
    let mut planner = FftPlanner::<f64>::new();
    let (forward, inverse) = fft_pair(&mut planner, n);
    let same = std::ptr::eq(a, b);
    // The spectra's componentwise error bound.
    let e = fft_error(n) * (mass_a + if same { 0.0 } else { mass_b });
    let mut spectral_error_sq = 0.0;
    let spectrum: Vec<Complex<f64>> = if same {
        let mut buf: Vec<Complex<f64>> = (0..n)
            .map(|i| Complex::new(a.get(i).copied().unwrap_or(0.0), 0.0))
            .collect();
        forward.process(&mut buf);
        buf.iter()
            .map(|c| {
                let m = c.norm();
                let bound = e * (2.0 * m + e) + 3.0 * U * m * m;
                spectral_error_sq += bound * bound;
                c * c
            })
            .collect()
    } else {
        // Both real inputs in one complex FFT: c = a + i·b, A_k = (C_k + conj C_{n−k})/2,
        // B_k = (C_k − conj C_{n−k})/(2i).
        let mut buf: Vec<Complex<f64>> = (0..n)
            .map(|i| {
                Complex::new(
                    a.get(i).copied().unwrap_or(0.0),
                    b.get(i).copied().unwrap_or(0.0),
                )
            })
            .collect();
        forward.process(&mut buf);
        (0..n)
            .map(|k| {
                let c = buf[k];
                let cr = buf[(n - k) % n].conj();
                let fa = (c + cr) * 0.5;
                let fb = (c - cr) * Complex::new(0.0, -0.5);
                // A_k and B_k are within e (+ one rounding) of the exact ones.
                let ek = e * (1.0 + 2.0 * U);
                let (ma, mb) = (fa.norm(), fb.norm());
                let bound = ek * (ma + mb + ek) + 3.0 * U * ma * mb;
                spectral_error_sq += bound * bound;
                fa * fb
            })
            .collect()
    };
    let mut out = spectrum;
    inverse.process(&mut out);
    let scale = 1.0 / n as f64;
    let result: Vec<f64> = out.iter().take(len).map(|c| c.re * scale).collect();
    (result, inverse_error(&out, scale, n, spectral_error_sq))
}

/// ℓ¹ bound on the error of an inverse FFT's output (all n entries, `scale` = 1/n applied),
/// given the 2-norm bound of its input's error: the exact inverse DFT maps a spectral error E
/// to an output error of 2-norm ‖E‖₂/√n, so ℓ¹ ≤ ‖E‖₂; its own round-off is at most
/// [`fft_error`]·‖output‖₂ in 2-norm (Higham, Theorem 24.2), so ℓ¹ ≤ √n times that.
fn inverse_error(out: &[Complex<f64>], scale: f64, n: usize, spectral_error_sq: f64) -> f64 {
    let norm2: f64 = out
        .iter()
        .map(|c| (c * scale).norm_sqr())
        .sum::<f64>()
        .sqrt();
    let g = fft_error(n);
    spectral_error_sq.sqrt() + (n as f64).sqrt() * g * norm2 / (1.0 - g)
}

/// A shift (only optimistic PLDs have one) rounded toward −∞: a computed sum or product of
/// shifts is within one rounding of the exact one, and a lower loss keeps the optimistic PLD a
/// lower bound.
fn round_shift_down(shift: f64) -> f64 {
    if shift == 0.0 { 0.0 } else { shift.next_down() }
}

/// The shift of a composition (see [`round_shift_down`]).
fn add_shifts(a: f64, b: f64) -> f64 {
    round_shift_down(a + b)
}

/// Composition of two discrete PLDs of one direction, with tails truncated to the safe side,
/// and the error bound carried: ‖â∗b̂ − a∗b‖₁ ≤ e_a·‖b‖₁ + e_b·‖a‖₁ + e_a·e_b + the
/// convolution's own round-off. Only untilted PLDs are composed here (a tilted one is the
/// whole ledger's, composed by [`self_compose_pmf`] with the identity).
fn compose_pmfs(a: &Pmf, b: &Pmf, estimate: Estimate, d: f64) -> Pmf {
    if a.is_identity() {
        return b.clone();
    }
    if b.is_identity() {
        return a.clone();
    }
    debug_assert!(a.tilt == 0.0 && b.tilt == 0.0);
    let (probs, round_off) = convolve(&a.probs, &b.probs);
    let (mass_a, mass_b): (f64, f64) = (a.probs.iter().sum(), b.probs.iter().sum());
    let error = (a.error * (mass_b + b.error) + b.error * mass_a + round_off) * (1.0 + 4.0 * U);
    let infinity = a.infinity + b.infinity - a.infinity * b.infinity;
    let mut out = Pmf::on_grid(
        a.offset + b.offset,
        probs,
        infinity,
        add_shifts(a.shift, b.shift),
    );
    out.error = error;
    truncate(&mut out, estimate, d);
    out
}

/// Clips FFT round-off below zero, then cuts at most [`TAIL_MASS_TRUNCATION`]/2 (tilted) from
/// each end: pessimistic — low end moved up to the first kept loss (tilted: dropped, and the
/// floor raised to the first kept loss), high end to +∞ (tilted: untilted, with its error
/// bound); optimistic — low end dropped, high end moved down to the last kept loss. Clipping
/// and moving mass do not increase the ℓ¹ error (moving a tilted mass down by j steps
/// multiplies it by e^{−λjΔ} ≤ 1); an untilted cut's error stays inside the error term.
fn truncate(pmf: &mut Pmf, estimate: Estimate, d: f64) {
    for p in &mut pmf.probs {
        // NaN or negative → 0.
        if p.is_nan() || *p < 0.0 {
            *p = 0.0;
        }
    }
    let half = TAIL_MASS_TRUNCATION / 2.0;
    let n = pmf.probs.len();
    let prefix = |iter: &mut dyn Iterator<Item = f64>| {
        let mut s = 0.0;
        let mut count = 0;
        for v in iter {
            if s + v > half {
                break;
            }
            s += v;
            count += 1;
        }
        (count, s)
    };
    let (left, left_mass) = prefix(&mut pmf.probs.iter().copied());
    let (right, right_mass) = prefix(&mut pmf.probs.iter().rev().copied());
    if left + right >= n {
        // Everything is below the threshold (e.g. all mass at +∞): keep as is.
        return;
    }
    let tilted = pmf.tilt > 0.0;
    let mut kept: Vec<f64> = pmf.probs[left..n - right].to_vec();
    match estimate {
        Estimate::Pessimistic => {
            if !tilted {
                kept[0] += left_mass;
            } else if left > 0 {
                pmf.floor = pmf.floor.max(pmf.loss(d, left));
            }
            if right > 0 {
                let cut = if tilted {
                    // e^{log_scale − λL} is largest at the lowest cut loss.
                    let scale = (pmf.log_scale - pmf.tilt * pmf.loss(d, n - right)).exp();
                    (right_mass + pmf.error) * scale
                } else {
                    right_mass
                };
                pmf.infinity = (pmf.infinity + cut).min(1.0);
            }
        }
        Estimate::Optimistic => {
            let last = kept.len() - 1;
            if tilted {
                let factor = (-pmf.tilt * d).exp();
                let mut f = factor;
                for &v in &pmf.probs[n - right..] {
                    kept[last] += v * f;
                    f *= factor;
                }
            } else {
                kept[last] += right_mass;
            }
        }
    }
    pmf.offset += left as i64;
    pmf.probs = kept;
}

/// T-fold self-composition by repeated squaring (pairwise FFT convolutions, truncated after
/// each): a slower, independent route to the same PLD, kept to cross-check
/// [`self_compose_pmf`] in the tests.
#[cfg(test)]
fn self_compose_pmf_by_squaring(pmf: &Pmf, times: u64, estimate: Estimate, d: f64) -> Pmf {
    let mut result: Option<Pmf> = None;
    let mut base = pmf.clone();
    let mut t = times;
    while t > 0 {
        if t & 1 == 1 {
            result = Some(match result {
                None => base.clone(),
                Some(r) => compose_pmfs(&r, &base, estimate, d),
            });
        }
        t >>= 1;
        if t > 0 {
            base = compose_pmfs(&base, &base, estimate, d);
        }
    }
    result.unwrap_or_else(Pmf::identity)
}

/// Smallest n ≥ `len` of the form 2ᵃ3ᵇ5ᶜ (sizes rustfft transforms fast).
fn fast_len(len: usize) -> usize {
    let mut best = len.next_power_of_two();
    let mut p5 = 1_usize;
    while p5 < best {
        let mut p35 = p5;
        while p35 < best {
            let mut n = p35;
            while n < len {
                n *= 2;
            }
            best = best.min(n);
            p35 *= 3;
        }
        p5 *= 5;
    }
    best
}

/// Index window [lower, upper] (relative to T·offset) outside which the T-fold composition of
/// `probs` has mass ≤ `tail` (≤ tail/2 each side), by the Chernoff bound
/// P(S ≥ u) ≤ exp(T·K(λ) − λu), K the cumulant generating function of one index, minimized over
/// a geometric grid of λ (as `dp_accounting`'s `compute_self_convolve_bounds`, with a wider grid).
fn chernoff_window(probs: &[f64], times: u64, tail: f64) -> (u64, u64) {
    let m = probs.len();
    let full = (m as u64 - 1).saturating_mul(times);
    let t = times as f64;
    let log_2_over = (2.0 / tail).ln();
    let log_p: Vec<f64> = probs.iter().map(|&p| p.ln()).collect();
    let cgf = |lambda: f64| -> f64 {
        let max = log_p
            .iter()
            .enumerate()
            .map(|(i, &lp)| lp + lambda * i as f64)
            .fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = log_p
            .iter()
            .enumerate()
            .map(|(i, &lp)| (lp + lambda * i as f64 - max).exp())
            .sum();
        max + sum.ln()
    };
    let (mut lower, mut upper) = (0_u64, full);
    let scale = 1.0 / (m.max(2) - 1) as f64;
    // λ·(m − 1) from 1e-4 to ≈ 700, factor √2.
    let mut x = 1e-4;
    while x < 700.0 {
        let lambda = x * scale;
        let up = (t * cgf(lambda) + log_2_over) / lambda;
        if up.is_finite() && up >= 0.0 {
            upper = upper.min(up.ceil() as u64);
        }
        let lo = (t * cgf(-lambda) + log_2_over) / -lambda;
        if lo.is_finite() && lo > 0.0 {
            lower = lower.max(lo.floor() as u64);
        }
        x *= std::f64::consts::SQRT_2;
    }
    if lower > upper {
        (0, full)
    } else {
        (lower, upper)
    }
}

/// z^T by repeated squaring.
fn complex_pow(z: Complex<f64>, times: u64) -> Complex<f64> {
    let mut result = Complex::new(1.0, 0.0);
    let mut base = z;
    let mut t = times;
    while t > 0 {
        if t & 1 == 1 {
            result *= base;
        }
        t >>= 1;
        if t > 0 {
            base = base * base;
        }
    }
    result
}

/// `pmf` (untilted) tilted by λ ≥ 0: masses pᵢ·e^{λLᵢ − log M}, M = Σ pᵢe^{λLᵢ} (the mass at +∞
/// is kept untilted, apart). Each tilted mass is within 4u relative of the exact one: an ℓ¹
/// error of 4u·(mass), carried in `error`.
fn tilt_pmf(pmf: &Pmf, lambda: f64, d: f64) -> Pmf {
    if lambda == 0.0 {
        return pmf.clone();
    }
    let logs: Vec<f64> = (0..pmf.probs.len())
        .map(|i| pmf.probs[i].ln() + lambda * pmf.loss(d, i))
        .collect();
    let log_m = log_sum_exp(&logs);
    let probs: Vec<f64> = logs.iter().map(|l| (l - log_m).exp()).collect();
    let mass: f64 = probs.iter().sum();
    Pmf {
        probs,
        tilt: lambda,
        log_scale: log_m,
        error: pmf.error * (-log_m).exp() + 4.0 * U * mass,
        ..pmf.clone()
    }
}

/// ln Σ e^{xᵢ} (−∞ for none).
fn log_sum_exp(xs: &[f64]) -> f64 {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return max;
    }
    max + xs.iter().map(|x| (x - max).exp()).sum::<f64>().ln()
}

/// T-fold self-composition by a single FFT: the circular T-fold convolution over a length
/// covering the Chernoff window of mass ≥ 1 − [`TAIL_MASS_TRUNCATION`] (as `dp_accounting`'s
/// `self_convolve`), of the (possibly tilted, see [`Pmf`]) masses. The ≤
/// [`TAIL_MASS_TRUNCATION`] outside the window wraps around into it (carried in the error);
/// the pessimistic PLD adds that bound, untilted, to its mass at +∞ (a tilted one only the part
/// above the window, the part below being under its floor). The mass at +∞ composes as
/// 1 − (1 − m)^T.
///
/// The error bound (ℓ¹, tilted units) of the result: with F̂ₖ the computed spectrum, e = its
/// componentwise error bound ([`fft_error`]·‖p‖₁) and m = ‖p‖₁ ≥ |Fₖ|,
/// |F̂ₖᵀ − Fₖᵀ| ≤ T·e·Wₖ^{T−1} with Wₖ = min(|F̂ₖ| + e, m + e) (mean value theorem), plus
/// [`pow_error`]·|F̂ₖ|ᵀ; their 2-norm over k bounds the output's ℓ¹ error through the inverse
/// transform ([`inverse_error`]); plus the input's own error, ((m + e₀)ᵀ − mᵀ), and the
/// wrapped tail.
fn self_compose_pmf(pmf: &Pmf, times: u64, estimate: Estimate, d: f64) -> Result<Pmf> {
    if times == 1 {
        return Ok(pmf.clone());
    }
    let infinity = -(times as f64 * (-pmf.infinity).ln_1p()).exp_m1();
    let times_i = i64::try_from(times)
        .ok()
        .filter(|_| times <= MAX_STEPS)
        .ok_or_else(|| {
            invalid(format!(
                "steps T = {times}; allowed: 1 to {MAX_STEPS} (2^53)"
            ))
        })?;
    let (lower, upper) = chernoff_window(&pmf.probs, times, TAIL_MASS_TRUNCATION);
    // Checked: a window of 2^64 points must be refused, never wrap to 0 (which once made an
    // empty PLD and a false ε ≤ 0).
    let points = upper.checked_sub(lower).and_then(|w| w.checked_add(1));
    let window = points
        .filter(|&w| w <= MAX_COMPOSED_POINTS)
        .and_then(|w| usize::try_from(w).ok())
        .ok_or_else(|| {
            invalid(format!(
                "the {times}-fold composition would need {} grid points in its window; allowed: at most {MAX_COMPOSED_POINTS} {WINDOW_TOO_LARGE}",
                points.map_or_else(|| "more than 2^64".to_string(), |p| p.to_string()),
            ))
        })?;
    let n = fast_len(window.max(pmf.probs.len()));
    let mut planner = FftPlanner::<f64>::new();
    let (forward, inverse) = fft_pair(&mut planner, n);
    let mut buf: Vec<Complex<f64>> = (0..n)
        .map(|i| Complex::new(pmf.probs.get(i).copied().unwrap_or(0.0), 0.0))
        .collect();
    forward.process(&mut buf);
    let mass: f64 = pmf.probs.iter().sum::<f64>() * (1.0 + pmf.probs.len() as f64 * U);
    let e = fft_error(n) * mass;
    let t = times as f64;
    let rho = pow_error(times);
    let mut spectral_error_sq = 0.0;
    for c in &mut buf {
        let m = c.norm();
        let w = (m + e).min(mass + e);
        let bound = t * e * w.powf(t - 1.0) + rho * m.powf(t);
        spectral_error_sq += bound * bound;
        *c = complex_pow(*c, times);
    }
    inverse.process(&mut buf);
    let scale = 1.0 / n as f64;
    let round_off = inverse_error(&buf, scale, n, spectral_error_sq);
    let input_error = if pmf.error > 0.0 {
        mass.powf(t) * (t * (pmf.error / mass).ln_1p()).exp_m1()
    } else {
        0.0
    };
    let start = (lower % n as u64) as usize;
    let probs: Vec<f64> = (0..window)
        .map(|j| buf[(start + j) % n].re * scale)
        .collect();
    let offset = pmf
        .offset
        .checked_mul(times_i)
        .and_then(|o| o.checked_add(i64::try_from(lower).ok()?))
        .ok_or_else(|| {
            invalid(format!(
                "composing {times} times needs loss indices beyond 2^63 on this grid {WINDOW_TOO_LARGE}"
            ))
        })?;
    let tilted = pmf.tilt > 0.0;
    let mut out = Pmf {
        offset,
        probs,
        infinity,
        shift: round_shift_down(t * pmf.shift),
        tilt: pmf.tilt,
        log_scale: t * pmf.log_scale,
        error: (round_off + input_error + TAIL_MASS_TRUNCATION) * (1.0 + 4.0 * U),
        floor: f64::NEG_INFINITY,
    };
    if estimate == Estimate::Pessimistic {
        out.infinity = if tilted {
            // Above the window: tilted mass ≤ tail/2, untilted ≤ that times e^{log_scale − λL}
            // at the window's top; below it, the floor.
            let top = out.loss(d, window - 1);
            out.floor = out.loss(d, 0);
            out.infinity + TAIL_MASS_TRUNCATION * (out.log_scale - out.tilt * top).exp()
        } else {
            out.infinity + TAIL_MASS_TRUNCATION
        }
        .min(1.0);
    }
    truncate(&mut out, estimate, d);
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/// Which side a discrete PLD errs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Estimate {
    /// Connect-the-dots: δ(ε) is an upper bound on the true δ(ε), after any composition.
    Pessimistic,
    /// Merged buckets, losses rounded down: δ(ε) is a lower bound on the true δ(ε).
    Optimistic,
}

/// A discrete privacy loss distribution of a composition, for one neighboring relation: one
/// PLD per direction ("remove" and "add") under add/remove, or a single one when the pair is
/// symmetric (q = 1, or replace-one).
#[derive(Clone, Debug, PartialEq)]
pub struct Pld {
    discretization: f64,
    estimate: Estimate,
    remove: Pmf,
    /// `None`: the same as `remove`.
    add: Option<Pmf>,
}

impl Pld {
    /// The PLD of no mechanism (all mass at loss 0).
    ///
    /// # Errors
    /// Discretization outside (0, 1].
    pub fn identity(discretization: f64, estimate: Estimate) -> Result<Self> {
        check_discretization(discretization)?;
        Ok(Self {
            discretization,
            estimate,
            remove: Pmf::identity(),
            add: None,
        })
    }

    /// The discrete PLD of **one** step of the Poisson-subsampled Gaussian mechanism (rate `q`,
    /// noise multiplier `z`, contributions of norm ≤ 1) under `neighbors`.
    ///
    /// # Errors
    /// q outside (0, 1]; z ≤ 0 or non-finite; discretization outside (0, 1]; a grid of more
    /// than [`MAX_GRID_POINTS`] points.
    pub fn poisson_gaussian(
        q: f64,
        z: f64,
        neighbors: Neighboring,
        estimate: Estimate,
        discretization: f64,
    ) -> Result<Self> {
        check_sampling_rate(q)?;
        check_noise_multiplier(z)?;
        check_discretization(discretization)?;
        let build = |direction: Direction| -> Result<Pmf> {
            let pair = Pair::new(q, z, direction);
            match estimate {
                Estimate::Pessimistic => pessimistic_pmf(&pair, discretization),
                Estimate::Optimistic => optimistic_pmf(&pair, discretization),
            }
        };
        let (remove, add) = match neighbors {
            Neighboring::ReplaceOne => (build(Direction::Replace)?, None),
            // Zero-out: the null record contributes 0 whether sampled or not, so D′'s law is the
            // law of D without the record: the add/remove pair (Ponomareva et al. 2023, §5.2).
            Neighboring::AddRemove | Neighboring::ZeroOut if q == 1.0 => {
                (build(Direction::Remove)?, None)
            }
            Neighboring::AddRemove | Neighboring::ZeroOut => {
                let (remove, add) = std::thread::scope(|s| {
                    let add = s.spawn(|| build(Direction::Add));
                    let remove = build(Direction::Remove);
                    (remove, add.join())
                });
                let add = add.map_err(|_| {
                    invalid("the thread building the \"add\" PLD panicked".to_string())
                })??;
                (remove?, Some(add))
            }
        };
        Ok(Self {
            discretization,
            estimate,
            remove,
            add,
        })
    }

    /// The discrete PLD of **one** step of the Gaussian mechanism on a batch of **fixed size**
    /// B drawn uniformly without replacement from n records (rate `q` = B/n, noise multiplier
    /// `z`, contributions of norm ≤ 1), under **replace-one** neighbors (seed 000's "equally
    /// sized and independent" batches; the only relation under which a fixed B/n is defined).
    ///
    /// - **Upper bound (pessimistic).** Replacing one record changes the batch's sum by at most
    ///   2, so the un-subsampled step is G_{2/z} (Gaussian DP with μ = 2/z). Sampling B of n
    ///   without replacement under substitution makes it C_q(G_{2/z})-DP with C_q(f) =
    ///   min{f_q, f_q⁻¹}** and f_q = q·f + (1 − q)·Id (Dong, Roth & Su 2022, "Gaussian
    ///   differential privacy", Theorem 4.2; the pair form of Zhu, Dong & Wang 2022 and Lebeda,
    ///   Regehr, Kamath & Steinke 2024, §5). f_q is the trade-off function of the "remove" pair
    ///   ((1−q)·φ + q·φ(· + 2), φ) at noise z (φ = N(0, z²)) and f_q⁻¹ that of its mirror, the
    ///   "add" pair; the privacy profile of C_q(f) is therefore the larger of the two pairs'
    ///   profiles at every ε (the convex conjugate of the convex hull of a minimum is the maximum
    ///   of the conjugates). That profile is symmetric, so the connect-the-dots pair built from it
    ///   dominates the step in both orders of every neighbouring pair (at every ε, negative ones
    ///   included), which is what composition needs (Zhu, Dong & Wang 2022, Theorem 10; f-DP
    ///   composition, Dong, Roth & Su 2022, Theorem 3.2). Composing the two directions each on
    ///   its own, as [`Pld::poisson_gaussian`] does for Poisson add/remove, would need every
    ///   neighbouring pair's step to be dominated by one of the two pairs at every ε, which is
    ///   not shown (Lebeda et al. 2024 show that a single step's worst case need not survive
    ///   composition); that is the lower bound below, not the upper one.
    /// - **Lower bound (optimistic).** The two add/remove pairs at noise z/2 (contribution 1),
    ///   each composed on its own, δ the larger. Each is realized: on D = {−1, …, −1, +1} against
    ///   D′ = {−1, …, −1} a batch's sum is −B + 2 on D when it holds the replaced record
    ///   (probability q, independently across steps) and −B otherwise, against −B always on D′:
    ///   exactly the "remove" pair, step by step; swapping D and D′ gives the "add" pair
    ///   (`dpsgd-fixed-batches` in the catalogue derives it).
    ///
    /// For q = 1 (B = n) both are the Gaussian mechanism with sensitivity 2, the same as
    /// [`Pld::poisson_gaussian`] under replace-one.
    ///
    /// # Errors
    /// q outside (0, 1]; z ≤ 0 or non-finite; discretization outside (0, 1]; a grid of more
    /// than [`MAX_GRID_POINTS`] points.
    pub fn fixed_size_gaussian(
        q: f64,
        z: f64,
        estimate: Estimate,
        discretization: f64,
    ) -> Result<Self> {
        check_sampling_rate(q)?;
        check_noise_multiplier(z)?;
        check_discretization(discretization)?;
        match estimate {
            Estimate::Pessimistic => Ok(Self {
                discretization,
                estimate,
                remove: pessimistic_pmf_fixed_size(q, z, discretization)?,
                add: None,
            }),
            // z/2 is exact in binary floating point (unless it underflows, which
            // `check_noise_multiplier` then refuses).
            Estimate::Optimistic => {
                Self::poisson_gaussian(q, 0.5 * z, Neighboring::AddRemove, estimate, discretization)
            }
        }
    }

    /// The grid step Δ of the privacy loss.
    pub fn discretization(&self) -> f64 {
        self.discretization
    }

    /// Which side this PLD errs on.
    pub fn estimate(&self) -> Estimate {
        self.estimate
    }

    /// The number of grid points held (both directions).
    pub fn size(&self) -> usize {
        self.remove.probs.len() + self.add.as_ref().map_or(0, |a| a.probs.len())
    }

    /// The composition of `self` and `other` (each direction convolved with the same direction).
    ///
    /// # Errors
    /// Different discretizations or estimates.
    pub fn compose(&self, other: &Pld) -> Result<Pld> {
        if self.discretization != other.discretization || self.estimate != other.estimate {
            return Err(invalid(format!(
                "composing a {:?} PLD with discretization {} and a {:?} PLD with \
                 discretization {}; allowed: the same discretization and estimate",
                self.estimate, self.discretization, other.estimate, other.discretization
            )));
        }
        self.check_composable()?;
        other.check_composable()?;
        let estimate = self.estimate;
        let d = self.discretization;
        let remove = compose_pmfs(&self.remove, &other.remove, estimate, d);
        let add = match (&self.add, &other.add) {
            (None, None) => None,
            (a, b) => {
                let a = a.as_ref().unwrap_or(&self.remove);
                let b = b.as_ref().unwrap_or(&other.remove);
                Some(compose_pmfs(a, b, estimate, d))
            }
        };
        Ok(Pld {
            discretization: self.discretization,
            estimate,
            remove,
            add,
        })
    }

    /// `times`-fold composition of `self` with itself (one FFT per direction, raised to the
    /// power `times`; the two directions on two threads).
    ///
    /// # Errors
    /// `times` = 0.
    pub fn self_compose(&self, times: u64) -> Result<Pld> {
        self.self_compose_tilted(times, [0.0, 0.0])
    }

    /// [`Pld::self_compose`] of this PLD tilted by λ (one per direction: "remove", "add"; see
    /// [`Pmf`]), for a δ(ε) resolved to a relative precision around the ε where
    /// e^{T·K(λ) − λε} is smallest. The result's δ holds (as an upper bound, pessimistic) only
    /// above its floor, and it cannot be composed further.
    fn self_compose_tilted(&self, times: u64, tilts: [f64; 2]) -> Result<Pld> {
        check_steps(times)?;
        self.check_composable()?;
        let estimate = self.estimate;
        let d = self.discretization;
        let run = |pmf: &Pmf, lambda: f64| -> Result<Pmf> {
            if lambda > 0.0 && pmf.tilt == 0.0 && pmf.error == 0.0 {
                self_compose_pmf(&tilt_pmf(pmf, lambda, d), times, estimate, d)
            } else {
                self_compose_pmf(pmf, times, estimate, d)
            }
        };
        let (remove, add) = match &self.add {
            None => (run(&self.remove, tilts[0])?, None),
            Some(add) => {
                let (remove, add) = std::thread::scope(|s| {
                    let add = s.spawn(|| run(add, tilts[1]));
                    let remove = run(&self.remove, tilts[0]);
                    (remove, add.join())
                });
                let add = add.map_err(|_| {
                    invalid("the thread composing the \"add\" PLD panicked".to_string())
                })??;
                (remove?, Some(add))
            }
        };
        Ok(Pld {
            discretization: self.discretization,
            estimate,
            remove,
            add,
        })
    }

    /// A PLD read for one δ ([`PldAccountant::pld_at`]: tilted, its low tail dropped) is not
    /// composed further: its dropped tail would be needed.
    fn check_composable(&self) -> Result<()> {
        let tilted = std::iter::once(&self.remove)
            .chain(self.add.as_ref())
            .any(|p| p.tilt != 0.0 || p.floor > f64::NEG_INFINITY);
        if tilted {
            Err(invalid(
                "composing a PLD composed for reading ε at one δ (PldAccountant::pld_at: tilted, its low tail dropped); allowed: PLDs from Pld::poisson_gaussian, Pld::self_compose or PldAccountant::pld".to_string(),
            ))
        } else {
            Ok(())
        }
    }

    /// The hockey-stick divergence δ(ε) of the discrete PLD, the larger of the two directions,
    /// with the bound on its floating-point error added (pessimistic) or subtracted
    /// (optimistic): an upper bound on the true δ(ε) for a pessimistic PLD, a lower bound for
    /// an optimistic one. Any real ε is allowed (ε = +∞ gives the mass at +∞); NaN gives NaN.
    pub fn delta(&self, epsilon: f64) -> f64 {
        if epsilon.is_nan() {
            return f64::NAN;
        }
        let d = self.discretization;
        let one = |pmf: &Pmf| match self.estimate {
            Estimate::Pessimistic => pmf.delta_upper(d, epsilon),
            Estimate::Optimistic => pmf.delta_lower(d, epsilon),
        };
        let remove = one(&self.remove);
        self.add.as_ref().map_or(remove, |a| remove.max(one(a)))
    }

    /// The bound on the floating-point error of δ(ε) (the larger of the two directions), the
    /// amount [`Pld::delta`] adds or subtracts.
    pub fn delta_error(&self, epsilon: f64) -> f64 {
        let remove = self.remove.error_at(epsilon);
        self.add
            .as_ref()
            .map_or(remove, |a| remove.max(a.error_at(epsilon)))
    }

    /// The smallest ε ≥ 0 found with δ(ε) ≤ `delta` (the larger of the two directions; δ(ε)
    /// with its error bound, see [`Pld::delta`]); +∞ if the mass at +∞ exceeds δ. For a
    /// pessimistic PLD it is computed at δ·(1 − [`DELTA_ROUNDING_MARGIN`]) and moved up one ulp
    /// (rounded toward the safe side).
    ///
    /// # Errors
    /// δ outside (0, 1); a pessimistic PLD whose floating-point error bound is too large to
    /// certify any ε at this δ (the error names δ and the bound).
    pub fn epsilon(&self, delta: f64) -> Result<f64> {
        check_delta(delta)?;
        let d = self.discretization;
        let eps = match self.estimate {
            Estimate::Pessimistic => {
                let target = delta * (1.0 - DELTA_ROUNDING_MARGIN);
                let mut eps = 0.0_f64;
                for pmf in std::iter::once(&self.remove).chain(self.add.as_ref()) {
                    let e = pmf.epsilon_upper(d, target).ok_or_else(|| {
                        let near = pmf.epsilon(d, target);
                        let bound = pmf.error_at(near);
                        if bound.is_nan() || bound >= 1.0 {
                            // δ is a probability: a bound of 1 or more (∞ when it overflows)
                            // certifies nothing, however large δ.
                            return invalid(format!(
                                "at δ = {} the composition's floating-point error bound on δ is {} (near ε = {}): no δ < 1 can be certified at any ε; allowed: fewer compositions (fewer steps or ledger events: the bound adds up the rounding error of each)",
                                crate::math::readable(delta),
                                crate::math::readable(bound),
                                crate::math::readable(near)
                            ));
                        }
                        invalid(format!(
                            "at δ = {delta} the composition's floating-point error bound ({bound:.1e} in δ near ε = {near:.4}) is too large to certify any ε; allowed: δ well above {bound:.1e} (a ledger of one (q, z) event is composed tilted and resolves far smaller δ)"
                        ))
                    })?;
                    eps = eps.max(e);
                }
                eps
            }
            Estimate::Optimistic => {
                let remove = self.remove.epsilon_lower(d, delta);
                self.add
                    .as_ref()
                    .map_or(remove, |a| remove.max(a.epsilon_lower(d, delta)))
            }
        };
        Ok(match self.estimate {
            Estimate::Pessimistic if eps > 0.0 && eps.is_finite() => eps.next_up(),
            _ => eps,
        })
    }
}

/// The discrete PLD of `steps` steps of the Poisson-subsampled Gaussian mechanism (rate `q`,
/// noise multiplier `z`, contributions of norm ≤ 1) under `neighbors`.
///
/// # Errors
/// q outside (0, 1]; z ≤ 0 or non-finite; steps = 0; discretization outside (0, 1]; a grid of
/// more than [`MAX_GRID_POINTS`] points.
///
/// # Examples
/// ```
/// use dp_audit_mechanisms::Neighboring;
/// use dp_audit_mechanisms::pld::{poisson_gaussian_pld, Estimate, DEFAULT_DISCRETIZATION};
/// let pld = poisson_gaussian_pld(
///     0.01, 4.0, 1000, Neighboring::AddRemove, Estimate::Pessimistic, DEFAULT_DISCRETIZATION,
/// )?;
/// let eps = pld.epsilon(1e-5)?;
/// // dp_accounting 0.6.0 (PLDAccountant): 0.2721729.
/// assert!(eps >= 0.2721729 && eps < 0.2721729 * 1.001);
/// # Ok::<(), dp_audit_mechanisms::MechanismError>(())
/// ```
pub fn poisson_gaussian_pld(
    q: f64,
    z: f64,
    steps: u64,
    neighbors: Neighboring,
    estimate: Estimate,
    discretization: f64,
) -> Result<Pld> {
    check_steps(steps)?;
    Pld::poisson_gaussian(q, z, neighbors, estimate, discretization)?.self_compose(steps)
}

/// (pessimistic ε, optimistic ε) at `delta` for `steps` steps of the Poisson-subsampled Gaussian
/// mechanism, with [`DEFAULT_DISCRETIZATION`]: the first is an upper bound on the true ε
/// (rounded up), the second a lower bound (see the module documentation for the caveat on
/// floating-point error). The two estimates are computed on two threads.
///
/// # Errors
/// As [`poisson_gaussian_pld`]; δ outside (0, 1).
pub fn epsilon_bounds(
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    neighbors: Neighboring,
) -> Result<(f64, f64)> {
    let mut acct = PldAccountant::new(neighbors);
    acct.compose_poisson_gaussian(q, z, steps)?;
    acct.epsilon_bounds(delta)
}

/// The smallest noise multiplier z (to a relative precision of 10⁻⁴, erring large) whose
/// pessimistic ε at `delta` after `steps` steps at rate `q` is ≤ `target_epsilon`, by bisection
/// on z (ε is non-increasing in z), with [`DEFAULT_DISCRETIZATION`].
///
/// # Errors
/// q outside (0, 1]; steps = 0; δ outside (0, 1); target ε ≤ 0 or non-finite; a target not
/// reached by z = [`MAX_NOISE_MULTIPLIER`], or already reached by z = [`MIN_NOISE_MULTIPLIER`]
/// (the search range), each naming the target.
pub fn noise_multiplier_for(
    q: f64,
    steps: u64,
    target_epsilon: f64,
    delta: f64,
    neighbors: Neighboring,
) -> Result<f64> {
    noise_multiplier_for_policy(
        q,
        steps,
        target_epsilon,
        delta,
        neighbors,
        SamplingPolicy::Poisson,
    )
}

/// [`noise_multiplier_for`] with batches drawn as `policy` says: Poisson, or fixed-size
/// ([`Pld::fixed_size_gaussian`], replace-one only).
///
/// # Errors
/// As [`noise_multiplier_for`]; a shuffled policy; fixed-size under neighbors other than
/// replace-one.
pub fn noise_multiplier_for_policy(
    q: f64,
    steps: u64,
    target_epsilon: f64,
    delta: f64,
    neighbors: Neighboring,
    policy: SamplingPolicy,
) -> Result<f64> {
    if policy == SamplingPolicy::FixedSize {
        PldAccountant::new(neighbors)
            .check_fixed_size(|| format!("fixed-size batches (q = {q}, T = {steps})"))?;
    }
    if policy == SamplingPolicy::Shuffled {
        return Err(invalid(
            "shuffled batches; allowed: Poisson or fixed-size (no accountant here amplifies shuffled batches)".to_string(),
        ));
    }
    check_sampling_rate(q)?;
    check_steps(steps)?;
    check_delta(delta)?;
    if !(target_epsilon.is_finite() && target_epsilon > 0.0) {
        return Err(invalid(format!(
            "target epsilon = {target_epsilon}; allowed: 0 < ε < ∞"
        )));
    }
    let eps_at = |z: f64| -> Result<f64> {
        let event = PoissonGaussianEvent {
            q,
            z,
            steps,
            policy,
        };
        event
            .step(neighbors, Estimate::Pessimistic, DEFAULT_DISCRETIZATION)?
            .self_compose(steps)?
            .epsilon(delta)
    };
    let ok = |z: f64| -> Result<bool> { Ok(eps_at(z)? <= target_epsilon) };

    // Bracket: lo fails, hi meets the target.
    let (mut lo, mut hi);
    if ok(1.0)? {
        hi = 1.0;
        lo = 0.5;
        while ok(lo)? {
            hi = lo;
            if lo <= MIN_NOISE_MULTIPLIER {
                return Err(invalid(format!(
                    "target epsilon = {target_epsilon} (delta = {delta}, q = {q}, T = {steps}) \
                     is already met at z = {MIN_NOISE_MULTIPLIER}, the smallest noise multiplier \
                     searched; allowed: targets that need z > {MIN_NOISE_MULTIPLIER}"
                )));
            }
            lo = (lo * 0.5).max(MIN_NOISE_MULTIPLIER);
        }
    } else {
        lo = 1.0;
        hi = 2.0;
        while !ok(hi)? {
            if hi >= MAX_NOISE_MULTIPLIER {
                let eps = eps_at(MAX_NOISE_MULTIPLIER)?;
                let r = crate::math::readable;
                return Err(invalid(format!(
                    "target epsilon = {} (delta = {}, q = {q}, T = {steps}) is not reached by any \
                     noise multiplier z ≤ {MAX_NOISE_MULTIPLIER} (ε = {} there); allowed: \
                     targets ≥ {}",
                    r(target_epsilon),
                    r(delta),
                    r(eps),
                    r(eps.next_up())
                )));
            }
            lo = hi;
            hi = (hi * 2.0).min(MAX_NOISE_MULTIPLIER);
        }
    }
    while hi / lo - 1.0 > NOISE_SEARCH_RELATIVE_TOLERANCE {
        let mid = (lo * hi).sqrt();
        if ok(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// Where a tilted composition is to be accurate.
#[derive(Clone, Copy, Debug)]
enum TiltTarget {
    /// At the ε of this δ, estimated by the Chernoff bound.
    Delta(f64),
    /// At this ε (the saddle point).
    Epsilon(f64),
}

/// The tilt λ for a T-fold composition of `pmf`, K(λ) = ln Σ pᵢe^{λLᵢ}: for a δ, the minimizer
/// over λ ∈ [2⁻¹⁰, 64] of the Chernoff estimate (T·K(λ) + ln(1/δ))/λ of ε; for an ε, the
/// minimizer of T·K(λ) − λε, whose tilted composition is centred on ε (on a geometric grid of
/// ratio √2, then golden-section search around the best point); 0 when the estimate of ε is
/// not positive. Any λ ≥ 0 gives valid bounds (the error bound accounts for it); this one
/// makes them tight near the answer.
fn choose_tilt(pmf: &Pmf, d: f64, times: u64, target: TiltTarget) -> f64 {
    let t = times as f64;
    let logs: Vec<f64> = pmf
        .probs
        .iter()
        .filter(|&&p| p > 0.0)
        .map(|p| p.ln())
        .collect();
    let losses: Vec<f64> = (0..pmf.probs.len())
        .filter(|&i| pmf.probs[i] > 0.0)
        .map(|i| pmf.loss(d, i))
        .collect();
    let estimate = |lambda: f64| -> f64 {
        let terms: Vec<f64> = logs
            .iter()
            .zip(&losses)
            .map(|(lp, l)| lp + lambda * l)
            .collect();
        let k = t * log_sum_exp(&terms);
        match target {
            TiltTarget::Delta(delta) => (k - delta.ln()) / lambda,
            TiltTarget::Epsilon(eps) => k - lambda * eps,
        }
    };
    let (mut best, mut best_value) = (0.0, f64::INFINITY);
    let mut x = -10.0_f64;
    while x <= 6.0 {
        let lambda = x.exp2();
        let v = estimate(lambda);
        if v < best_value {
            best = x;
            best_value = v;
        }
        x += 0.5;
    }
    if !best_value.is_finite() {
        return 0.0;
    }
    // Golden section on log₂λ in [best − ½, best + ½] (λ to ≈ 1 %: the bounds are valid for
    // any λ, and their tightness is flat near the optimum).
    let (mut a, mut b) = (best - 0.5, best + 0.5);
    let r = 0.5 * (5.0_f64.sqrt() - 1.0);
    for _ in 0..8 {
        let (c, e) = (b - r * (b - a), a + r * (b - a));
        if estimate(c.exp2()) < estimate(e.exp2()) {
            b = e;
        } else {
            a = c;
        }
    }
    let lambda = (0.5 * (a + b)).exp2();
    match target {
        TiltTarget::Delta(_) if estimate(lambda) <= 0.0 => 0.0,
        TiltTarget::Epsilon(eps) if eps <= 0.0 => 0.0,
        _ => lambda,
    }
}

/// One entry of a [`PldAccountant`] ledger: `steps` steps of the subsampled Gaussian mechanism
/// with rate `q` and noise multiplier `z`, the batch drawn as `policy` says (Poisson, the
/// type's name, or fixed-size; [`Pld::poisson_gaussian`], [`Pld::fixed_size_gaussian`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoissonGaussianEvent {
    /// Sampling rate q ∈ (0, 1].
    pub q: f64,
    /// Noise multiplier z > 0.
    pub z: f64,
    /// Number of steps T ≥ 1.
    pub steps: u64,
    /// How each step's batch is drawn: [`SamplingPolicy::Poisson`] or
    /// [`SamplingPolicy::FixedSize`] (replace-one only).
    pub policy: SamplingPolicy,
}

impl PoissonGaussianEvent {
    /// One step's discrete PLD under `neighbors`.
    fn step(&self, neighbors: Neighboring, estimate: Estimate, d: f64) -> Result<Pld> {
        match self.policy {
            SamplingPolicy::FixedSize => Pld::fixed_size_gaussian(self.q, self.z, estimate, d),
            _ => Pld::poisson_gaussian(self.q, self.z, neighbors, estimate, d),
        }
    }
}

/// A PLD accountant: a ledger of Poisson-subsampled Gaussian events (each with its own q, z and
/// number of steps) under one neighboring relation and grid step, composed by FFT.
///
/// # Examples
/// ```
/// use dp_audit_mechanisms::Neighboring;
/// use dp_audit_mechanisms::pld::PldAccountant;
/// let mut acct = PldAccountant::new(Neighboring::AddRemove);
/// acct.compose_poisson_gaussian(0.01, 4.0, 500)?;
/// acct.compose_poisson_gaussian(0.02, 8.0, 100)?;
/// let (upper, lower) = acct.epsilon_bounds(1e-5)?;
/// assert!(lower <= upper && upper < 1.0);
/// # Ok::<(), dp_audit_mechanisms::MechanismError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PldAccountant {
    neighbors: Neighboring,
    discretization: f64,
    events: Vec<PoissonGaussianEvent>,
}

impl PldAccountant {
    /// An empty ledger with [`DEFAULT_DISCRETIZATION`].
    pub fn new(neighbors: Neighboring) -> Self {
        Self {
            neighbors,
            discretization: DEFAULT_DISCRETIZATION,
            events: Vec::new(),
        }
    }

    /// An empty ledger with grid step `discretization`.
    ///
    /// # Errors
    /// Discretization outside (0, 1].
    pub fn with_discretization(neighbors: Neighboring, discretization: f64) -> Result<Self> {
        check_discretization(discretization)?;
        Ok(Self {
            neighbors,
            discretization,
            events: Vec::new(),
        })
    }

    /// The neighboring relation.
    pub fn neighbors(&self) -> Neighboring {
        self.neighbors
    }

    /// The ledger, in the order events were recorded.
    pub fn events(&self) -> &[PoissonGaussianEvent] {
        &self.events
    }

    /// Records `steps` steps of the Poisson-subsampled Gaussian mechanism.
    ///
    /// # Errors
    /// q outside (0, 1], z ≤ 0 or non-finite, steps = 0. Nothing is recorded on error.
    pub fn compose_poisson_gaussian(&mut self, q: f64, z: f64, steps: u64) -> Result<()> {
        check_sampling_rate(q)?;
        check_noise_multiplier(z)?;
        check_steps(steps)?;
        self.events.push(PoissonGaussianEvent {
            q,
            z,
            steps,
            policy: SamplingPolicy::Poisson,
        });
        Ok(())
    }

    /// Records `steps` steps of the Gaussian mechanism on batches of fixed size B = q·n drawn
    /// without replacement, independently per step ([`Pld::fixed_size_gaussian`]).
    ///
    /// # Errors
    /// Neighbors other than replace-one (a fixed B/n needs a fixed n: under add/remove the two
    /// datasets would have different sampling rates); q outside (0, 1], z ≤ 0 or non-finite,
    /// steps = 0. Nothing is recorded on error.
    pub fn compose_fixed_size_gaussian(&mut self, q: f64, z: f64, steps: u64) -> Result<()> {
        self.check_fixed_size(|| format!("fixed-size batches (q = {q}, z = {z}, T = {steps})"))?;
        check_sampling_rate(q)?;
        check_noise_multiplier(z)?;
        check_steps(steps)?;
        self.events.push(PoissonGaussianEvent {
            q,
            z,
            steps,
            policy: SamplingPolicy::FixedSize,
        });
        Ok(())
    }

    /// Ok when this accountant's relation is replace-one, the only one under which fixed-size
    /// batches are accounted; otherwise the error that says why, naming `what` (the ledger
    /// event, or the flag, that asked for them). The one check and wording of every fixed-size
    /// path ([`PldAccountant::compose_fixed_size_gaussian`], ledgers,
    /// [`noise_multiplier_for_policy`], `audit accountant --policy fixed-size`).
    ///
    /// # Errors
    /// Neighbors other than replace-one.
    pub fn check_fixed_size(&self, what: impl FnOnce() -> String) -> Result<()> {
        if self.neighbors == Neighboring::ReplaceOne {
            Ok(())
        } else {
            Err(invalid(format!(
                "{} accounted under {} neighbors; allowed: replace-one neighbors (`--neighbors replace-one`; a batch of exactly B of the n records has rate B/n only for a fixed n, so its privacy unit is replacing one record: Balle, Barthe & Gaboardi 2018; Lebeda et al. 2024)",
                what(),
                self.neighbors
            )))
        }
    }

    /// Records a privacy ledger ([`crate::accountant::LedgerEvent`]s, as the RDP accountant and
    /// `audit accountant --ledger` read them): each sampling event with the Gaussian sum queries
    /// that follow it is `repetitions` steps of one Poisson-subsampled Gaussian mechanism whose
    /// noise multiplier is the effective one of its queries, (Σᵢ zᵢ⁻²)^{−1/2} (the queries see the
    /// same sample, so one record moves them jointly: Mironov, Talwar & Zhang 2019, §3; the
    /// same rule as [`crate::accountant::RdpAccountant`]). A sample with no query adds nothing.
    ///
    /// # Errors
    /// A query before any sampling event; an event with a value out of range. Nothing is
    /// recorded on error.
    pub fn compose_ledger(&mut self, ledger: &[crate::accountant::LedgerEvent]) -> Result<()> {
        let with: Vec<_> = ledger
            .iter()
            .map(|e| (*e, SamplingPolicy::Poisson))
            .collect();
        self.compose_ledger_with_policies(&with)
    }

    /// [`PldAccountant::compose_ledger`] for a ledger whose sampling events say how their batches
    /// are drawn ([`crate::accountant::parse_ledger_with_policies`]; a Gaussian sum has its
    /// sample's policy, which is what is read from a sampling event): Poisson blocks as there,
    /// fixed-size blocks as [`PldAccountant::compose_fixed_size_gaussian`].
    ///
    /// # Errors
    /// As [`PldAccountant::compose_ledger`]; a shuffled block (no accountant here amplifies
    /// shuffled batches: the message says how to account it); a fixed-size block under
    /// neighbors other than replace-one. Nothing is recorded on error.
    pub fn compose_ledger_with_policies(
        &mut self,
        ledger: &[(crate::accountant::LedgerEvent, SamplingPolicy)],
    ) -> Result<()> {
        use crate::accountant::LedgerEvent;
        // (q, repetitions, Σ z⁻², policy)
        let mut blocks: Vec<(f64, u64, f64, SamplingPolicy)> = Vec::new();
        for (i, (event, policy)) in ledger.iter().enumerate() {
            match *event {
                LedgerEvent::Sampling {
                    probability,
                    repetitions,
                } => {
                    check_sampling_rate(probability)?;
                    check_steps(repetitions)?;
                    match policy {
                        SamplingPolicy::Poisson => {}
                        SamplingPolicy::FixedSize => self.check_fixed_size(|| {
                            format!(
                                "ledger event {}: a sampling event with \"policy\": \"fixed-size\"",
                                i + 1
                            )
                        })?,
                        SamplingPolicy::Shuffled => {
                            return Err(invalid(format!(
                                "ledger event {}: a sampling event with \"policy\": \"shuffled\" (each epoch a permutation cut into batches); no accountant here amplifies shuffled batches (the Poisson accountant at q = B/n can under-count them: Chua et al. 2024); allowed: \"poisson\" or \"fixed-size\" (under replace-one), or a shuffled run accounted without amplification as \"probability\": 1 under replace-one",
                                i + 1
                            )));
                        }
                    }
                    blocks.push((probability, repetitions, 0.0, *policy));
                }
                LedgerEvent::GaussianSum { noise_multiplier } => {
                    check_noise_multiplier(noise_multiplier)?;
                    let Some(b) = blocks.last_mut() else {
                        return Err(invalid(format!(
                            "ledger event {}: a Gaussian sum query before any sampling event; allowed: a sampling event first (probability 1 for a full batch)",
                            i + 1
                        )));
                    };
                    b.2 += noise_multiplier.powi(-2);
                }
            }
        }
        let mut added = Vec::new();
        for (k, (q, steps, inv, policy)) in blocks.into_iter().enumerate() {
            if inv <= 0.0 {
                // A sample with no query is a ledger cut off (or a step that released
                // nothing): charging it nothing silently could under-count, so it is refused.
                return Err(invalid(format!(
                    "ledger sampling event {} (probability {q}, {steps} repetitions) has no Gaussian sum query after it (is the ledger cut off?); allowed: every sampling event followed by the gaussian_sum queries its steps release",
                    k + 1
                )));
            }
            if !inv.is_finite() {
                return Err(invalid(format!(
                    "ledger sampling event {} (probability {q}, {steps} repetitions): its Gaussian sum queries together add so little noise that Σ z⁻² overflows a double (an effective noise multiplier below {}); allowed: noise multipliers whose Σ z⁻² per sample is finite",
                    k + 1,
                    crate::math::readable(SMALLEST_ACCOUNTED_Z)
                )));
            }
            let z = inv.powf(-0.5);
            check_noise_multiplier(z)?;
            added.push(PoissonGaussianEvent {
                q,
                z,
                steps,
                policy,
            });
        }
        self.events.extend(added);
        Ok(())
    }

    /// The discrete PLD of the whole ledger. Events with the same (q, z) are merged first.
    ///
    /// # Errors
    /// A grid of more than [`MAX_GRID_POINTS`] points for one step.
    pub fn pld(&self, estimate: Estimate) -> Result<Pld> {
        self.pld_tilted(estimate, None)
    }

    /// [`PldAccountant::pld`] for reading ε at `delta`: a ledger of one event is composed
    /// tilted (masses times e^{λL}, see the module documentation) by the λ that minimizes the
    /// Chernoff estimate (T·K(λ) + ln(1/δ))/λ of ε (K the cumulant generating function of one step's loss), so
    /// that δ(ε) near there is resolved to a relative precision and its floating-point error
    /// bound is far below δ even at δ = 10⁻¹⁰. Its δ(ε) is accurate near that ε only: it is for
    /// [`Pld::epsilon`] at `delta`. A ledger of several events is composed untilted.
    ///
    /// # Errors
    /// As [`PldAccountant::pld`].
    pub fn pld_at(&self, estimate: Estimate, delta: f64) -> Result<Pld> {
        self.pld_tilted(estimate, Some(TiltTarget::Delta(delta)))
    }

    /// Whether the ledger is one event (after merging repeats), composed tilted by
    /// [`PldAccountant::pld_at`].
    fn is_one_event(&self) -> bool {
        self.events.iter().all(|e| {
            e.q == self.events[0].q && e.z == self.events[0].z && e.policy == self.events[0].policy
        }) && !self.events.is_empty()
    }

    fn pld_tilted(&self, estimate: Estimate, tilt_for: Option<TiltTarget>) -> Result<Pld> {
        let mut merged: Vec<PoissonGaussianEvent> = Vec::new();
        for e in &self.events {
            match merged
                .iter_mut()
                .find(|m| m.q == e.q && m.z == e.z && m.policy == e.policy)
            {
                // Checked: a saturated count would under-charge the ledger.
                Some(m) => {
                    m.steps = m
                        .steps
                        .checked_add(e.steps)
                        .filter(|&t| t <= MAX_STEPS)
                        .ok_or_else(|| {
                            invalid(format!(
                                "the ledger repeats (q = {}, z = {}) {} + {} times; allowed: at most {MAX_STEPS} (2^53) steps in all",
                                e.q, e.z, m.steps, e.steps
                            ))
                        })?
                }
                None => merged.push(*e),
            }
        }
        let mut pld = Pld::identity(self.discretization, estimate)?;
        if let (Some(target), [e]) = (tilt_for, merged.as_slice()) {
            // One event: its composition tilted toward the ε of δ (see `Pmf`).
            let step = e.step(self.neighbors, estimate, self.discretization)?;
            let d = self.discretization;
            let tilts = [
                choose_tilt(&step.remove, d, e.steps, target),
                step.add
                    .as_ref()
                    .map_or(0.0, |a| choose_tilt(a, d, e.steps, target)),
            ];
            return step.self_compose_tilted(e.steps, tilts);
        }
        for e in merged {
            let step = e.step(self.neighbors, estimate, self.discretization)?;
            pld = pld.compose(&step.self_compose(e.steps)?)?;
        }
        Ok(pld)
    }

    /// (pessimistic ε, optimistic ε) at `delta`: an upper bound (rounded up) and a lower bound
    /// on the ε of the ledger; both 0 for an empty ledger.
    ///
    /// # Errors
    /// δ outside (0, 1); see [`PldAccountant::pld`].
    pub fn epsilon_bounds(&self, delta: f64) -> Result<(f64, f64)> {
        self.epsilon_bounds_adaptive(delta).map(|(u, l, _)| (u, l))
    }

    /// [`PldAccountant::epsilon_bounds`], also returning the grid step used: the ledger's, or,
    /// when a composition does not fit its grid ([`MAX_COMPOSED_POINTS`] points, or loss
    /// indices below 2^63: very many steps), the first of 2Δ, 4Δ, … (up to 1) on which it does.
    /// A coarser pessimistic PLD is still an upper bound and a coarser optimistic one still a
    /// lower bound, only looser. The upper bound is never below the lower one: if rounding ever
    /// made it so, the call is refused rather than print a false bound.
    ///
    /// # Errors
    /// As [`PldAccountant::epsilon_bounds`]; no grid up to Δ = 1 fits.
    pub fn epsilon_bounds_adaptive(&self, delta: f64) -> Result<(f64, f64, f64)> {
        check_delta(delta)?;
        let mut acct = self.clone();
        loop {
            let (upper, lower) = std::thread::scope(|s| {
                let lower = s.spawn(|| acct.pld_at(Estimate::Optimistic, delta));
                let upper = acct.pld_at(Estimate::Pessimistic, delta);
                (upper, lower.join())
            });
            let lower = lower.map_err(|_| {
                invalid("the thread computing the optimistic PLD panicked".to_string())
            })?;
            match (upper, lower) {
                (Ok(u), Ok(l)) => {
                    let (mut eu, mut el) = (u.epsilon(delta)?, l.epsilon(delta)?);
                    if acct.is_one_event() && eu.is_finite() && eu - el > 1e-3 * eu {
                        // The Chernoff estimate of ε the tilt was chosen for can be far from
                        // the answer (e.g. 10⁸ steps: the error bound then swamps δ at the
                        // optimistic ε): once more, centred on the pessimistic ε found. Both
                        // pairs of bounds are valid; the tighter of each is kept.
                        let target = Some(TiltTarget::Epsilon(eu));
                        let (u2, l2) = std::thread::scope(|s| {
                            let lower = s.spawn(|| acct.pld_tilted(Estimate::Optimistic, target));
                            let upper = acct.pld_tilted(Estimate::Pessimistic, target);
                            (upper, lower.join())
                        });
                        if let Ok(Ok(e)) = u2.map(|p| p.epsilon(delta)) {
                            eu = eu.min(e);
                        }
                        if let Ok(Ok(Ok(e))) = l2.map(|r| r.map(|p| p.epsilon(delta))) {
                            el = el.max(e);
                        }
                    }
                    if eu.is_nan() || el.is_nan() || eu < el {
                        // Seen at very small δ (1e-10, replace-one, z = 0.3): the FFT's
                        // round-off in the composed probabilities is then comparable to δ, so
                        // the two bounds cross and neither is trusted.
                        return Err(invalid(format!(
                            "at δ = {delta} the composition's floating-point round-off is comparable to δ: the pessimistic ε {eu} came out below the optimistic {el} (grid step {}), so neither is trusted and no bound is printed; allowed: a larger δ (e.g. 1e-8), or the RDP bound",
                            acct.discretization
                        )));
                    }
                    return Ok((eu, el, acct.discretization));
                }
                (Err(e), _) | (_, Err(e))
                    if e.to_string().contains(WINDOW_TOO_LARGE) && acct.discretization < 1.0 =>
                {
                    acct.discretization = (acct.discretization * 2.0).min(1.0);
                }
                (Err(e), _) | (_, Err(e)) => return Err(e),
            }
        }
    }

    /// (pessimistic δ, optimistic δ) at `epsilon`: an upper and a lower bound on δ(ε).
    ///
    /// # Errors
    /// ε NaN; see [`PldAccountant::pld`].
    pub fn delta_bounds(&self, epsilon: f64) -> Result<(f64, f64)> {
        if epsilon.is_nan() {
            return Err(invalid("epsilon = NaN; allowed: a number".to_string()));
        }
        let upper = self.pld(Estimate::Pessimistic)?;
        let lower = self.pld(Estimate::Optimistic)?;
        Ok((upper.delta(epsilon), lower.delta(epsilon)))
    }
}

#[cfg(test)]
#[path = "pld_tests.rs"]
mod tests;
