//! Privacy-loss-distribution (PLD) accounting of the Poisson-subsampled Gaussian mechanism
//! (and of the ledger's Laplace sums, randomized response and Attribution Reporting summary
//! reports: [`privacy_loss_events`], whose documentation derives their pairs): discretized
//! PLDs, composition by FFT, and (ε, δ) upper and lower bounds.
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
//!
//! # Layers
//! As in `dp_accounting`'s `pld/`, one module per layer, each using only the ones above it:
//! [`common`] (constants, input checks, scalar helpers) ← [`pld_pmf`] (a discretised PLD and its
//! composition by FFT) ← [`privacy_loss_mechanism`] (the mechanisms' losses, discretised; the
//! Gaussian's there, the other ledger events' in [`privacy_loss_events`], which builds their
//! [`Pld`]s) ←
//! [`privacy_loss_distribution`] (a mechanism's PLD, composed and queried) ←
//! [`pld_privacy_accountant`] (the ledger's accountant).

pub mod common;
pub mod pld_pmf;
pub mod pld_privacy_accountant;
pub mod privacy_loss_distribution;
pub mod privacy_loss_events;
pub mod privacy_loss_mechanism;

pub use common::{
    DEFAULT_DISCRETIZATION, DELTA_ROUNDING_MARGIN, LOG_MASS_TRUNCATION, MAX_COMPOSED_POINTS,
    MAX_GRID_POINTS, MAX_NOISE_MULTIPLIER, MAX_STEPS, MIN_NOISE_MULTIPLIER, SMALLEST_ACCOUNTED_Z,
    TAIL_MASS_TRUNCATION, WINDOW_TOO_LARGE,
};
pub use pld_pmf::Estimate;
pub use pld_privacy_accountant::{
    PldAccountant, PoissonGaussianEvent, epsilon_bounds, noise_multiplier_for,
    noise_multiplier_for_policy,
};
pub use privacy_loss_distribution::{Pld, poisson_gaussian_pld};
pub use privacy_loss_events::NoiseEvent;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_events;
