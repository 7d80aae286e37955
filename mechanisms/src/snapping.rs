//! The snapping mechanism (Mironov 2012): Laplace noise that stays private in binary64.
//!
//! # Why textbook Laplace leaks
//! `x + λ·ln(U)` computed in doubles (what `statrs`' Laplace and most libraries do) does not have
//! the density of x + Lap(λ): the doubles it can produce, and how often, depend on x, because
//! the sum is rounded to the binade of the result and `U` takes only some values. Mironov
//! (2012, "On significance of the least significant bits for differential privacy", CCS) shows
//! outputs that occur under one dataset and never under its neighbour, so the textbook sampler
//! satisfies no finite ε. dp-audit's floating-point layer finds exactly this (ε ≥ 7.8 on
//! `laplace-sum` at 10^6 releases per side).
//!
//! # The mechanism
//! For a query of sensitivity 1 (|f(D) − f(D′)| ≤ 1 for neighbours), scale λ and bound B:
//!
//! ```text
//! M(D) = clamp_B( round_Λ( clamp_B(f(D)) ⊕ S ⊗ λ ⊗ ln(U*) ) )
//! ```
//!
//! - `clamp_B` clamps to [−B, B] (1-Lipschitz, so the clamped query keeps sensitivity 1);
//! - `S` is a uniform sign and `U*` is uniform on the doubles of (0, 1), each double drawn with
//!   probability proportional to the gap it stands for (every bit of the mantissa random, the
//!   exponent geometric): [`uniform_double`];
//! - ⊕, ⊗ and `ln` are binary64 operations, correctly rounded (`ln` within one ulp: the
//!   platform's libm, the assumption of the theorem);
//! - `round_Λ` rounds to the nearest multiple of Λ, the smallest power of two ≥ λ (exact in
//!   binary64: a division and a multiplication by a power of two, and a rounding to an integer).
//!
//! Every output is a multiple of Λ in [−B, B] (or ±B): which doubles can occur no longer
//! depends on the data, so the representation carries nothing the value does not.
//!
//! # Guarantee
//! **Theorem 1 of Mironov (2012).** If λ < B < 2^46·λ, the snapping mechanism is
//! ε′-differentially private with
//!
//! ```text
//! ε′ = 1/λ + 2^−49 · B/λ
//! ```
//!
//! for every query of sensitivity 1. With λ = 1/ε this is ε·(1 + 2^−49·B): at B = 2^20 the
//! extra cost is a factor 1 + 2^−29. The price is in accuracy, not privacy: outputs are on the
//! grid Λ (so up to Λ/2 further from the answer) and clamped at ±B (a bias when |f(D)| is near
//! B). [`SnappingLaplace::epsilon`] returns ε′ rounded up to the next double.
//!
//! **Other sensitivities.** A query of sensitivity Δ is released as Δ · M(f/Δ): division and
//! multiplication by Δ are exact when Δ is a power of two, so f/Δ has sensitivity exactly 1,
//! and multiplying the output by Δ is post-processing. [`SnappingLaplace::with_sensitivity`]
//! does this and refuses any other Δ (round Δ up to the next power of two: a larger Δ is still
//! a valid sensitivity, at the cost of more noise); B is then the bound in the query's units.
//!
//! Hand-written: no crate on crates.io implements the snapping mechanism with this theorem's
//! conditions (OpenDP's float Laplace uses a different exact construction tied to its own types).

use rand::{Rng, RngExt};

use crate::error::{MechanismError, Result};

fn bad(message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: "the snapping mechanism".into(),
        message,
    }
}

/// A uniform double on (0, 1), every double d drawn with probability equal to the length of the
/// interval it represents (Mironov's U*): exponent −1 − k with k ~ Geometric(1/2) (one random bit
/// per halving), then 52 uniform mantissa bits. Below 2^−1022 (probability 2^−1021) it returns
/// the smallest normal double.
pub fn uniform_double<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    // Count leading zero bits of a random bit stream, 64 at a time.
    let mut exponent: i32 = -1;
    loop {
        let bits: u64 = rng.random();
        if bits != 0 {
            exponent -= bits.leading_zeros() as i32;
            break;
        }
        exponent -= 64;
        if exponent < -1022 {
            return f64::MIN_POSITIVE;
        }
    }
    if exponent < -1022 {
        return f64::MIN_POSITIVE;
    }
    let mantissa: u64 = rng.random::<u64>() >> 12;
    f64::from_bits((((exponent + 1023) as u64) << 52) | mantissa)
}

/// The snapping mechanism for a sensitivity-1 query (see the module docs): Laplace noise of
/// scale λ, outputs snapped to the grid Λ and clamped to [−B, B].
#[derive(Clone, Copy, Debug)]
pub struct SnappingLaplace {
    scale: f64,
    bound: f64,
    grid: f64,
    /// Δ: outputs are Δ · M(value / Δ) (a power of two; 1 by default).
    sensitivity: f64,
}

impl SnappingLaplace {
    /// Scale λ = 1/ε for a query of sensitivity 1, clamped to [−bound, bound]. Errors unless ε
    /// and the bound are finite and positive and λ < bound < 2^46·λ (Theorem 1's conditions).
    pub fn new(epsilon: f64, bound: f64) -> Result<Self> {
        if !(epsilon.is_finite() && epsilon > 0.0) {
            return Err(bad(format!("ε = {epsilon}; allowed: a finite number > 0")));
        }
        let scale = 1.0 / epsilon;
        if !(bound.is_finite() && bound > scale && bound < 2f64.powi(46) * scale) {
            return Err(bad(format!(
                "bound B = {bound} with λ = 1/ε = {scale}; allowed: λ < B < 2^46·λ (Mironov 2012, Theorem 1)"
            )));
        }
        // Λ: the smallest power of two ≥ λ (computed exactly: powers of two are exact).
        let mut grid = 2f64.powi(scale.log2().ceil() as i32);
        while grid < scale {
            grid *= 2.0;
        }
        while grid / 2.0 >= scale {
            grid /= 2.0;
        }
        Ok(Self {
            scale,
            bound,
            grid,
            sensitivity: 1.0,
        })
    }

    /// For a query of sensitivity Δ (a power of two), ε-DP up to the theorem's factor, clamped
    /// to [−bound, bound] in the query's units: releases Δ · M(value / Δ), both scalings exact.
    pub fn with_sensitivity(epsilon: f64, sensitivity: f64, bound: f64) -> Result<Self> {
        let is_power_of_two = sensitivity.is_finite()
            && sensitivity > 0.0
            && sensitivity.is_normal()
            && (sensitivity.to_bits() & ((1u64 << 52) - 1)) == 0;
        if !is_power_of_two {
            return Err(bad(format!(
                "sensitivity Δ = {sensitivity}; allowed: a power of two (2^k), so that scaling by Δ is exact in binary64; round Δ up to the next power of two ({}), which is still a valid sensitivity",
                if sensitivity.is_finite() && sensitivity > 0.0 {
                    2f64.powi(sensitivity.log2().ceil() as i32).to_string()
                } else {
                    "none: Δ must be finite and > 0".into()
                }
            )));
        }
        let mut m = Self::new(epsilon, bound / sensitivity)?;
        m.sensitivity = sensitivity;
        Ok(m)
    }

    /// The grid Λ of the outputs, in the query's units (Δ·Λ).
    pub fn grid(&self) -> f64 {
        self.sensitivity * self.grid
    }

    /// ε′ = 1/λ + 2^−49·B/λ (B and λ of the sensitivity-1 query), rounded up.
    pub fn epsilon(&self) -> f64 {
        let e = 1.0 / self.scale + 2f64.powi(-49) * self.bound / self.scale;
        // Two roundings (the division, the sum) each err by at most half an ulp: two steps up.
        e.next_up().next_up()
    }

    /// One release for the exact answer `value`.
    pub fn release<R: Rng + ?Sized>(&self, value: f64, rng: &mut R) -> f64 {
        let b = self.bound;
        // Exact: Δ is a power of two.
        let x = (value / self.sensitivity).clamp(-b, b);
        let x = if x.is_nan() { 0.0 } else { x };
        let sign = if rng.random::<bool>() { 1.0 } else { -1.0 };
        let noisy = x + sign * self.scale * uniform_double(rng).ln();
        // `+ 0.0` turns −0.0 into +0.0: `round` keeps the sign of a noisy value in
        // (−Λ/2, 0), and the sign of a zero would tell which side of 0 the noisy value fell on,
        // a function of the exact answer beyond the snapped value.
        let snapped = ((noisy / self.grid).round() * self.grid).clamp(-b, b) + 0.0;
        snapped * self.sensitivity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// A release of zero is +0.0 whatever the sign of the noisy value it was rounded from.
    #[test]
    fn zero_has_no_sign() {
        let m = SnappingLaplace::new(3.0, 64.0).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let mut zeros = 0;
        for x in [0.0, 0.2, -0.2, 1.0] {
            for _ in 0..2_000 {
                let y = m.release(x, &mut rng);
                if y == 0.0 {
                    zeros += 1;
                    assert!(y.is_sign_positive(), "−0.0 from {x}");
                }
            }
        }
        assert!(zeros > 100, "the test saw {zeros} zeros");
    }

    #[test]
    fn outputs_lie_on_the_grid_whatever_the_answer() {
        let m = SnappingLaplace::new(3.0, 64.0).unwrap();
        assert_eq!(m.grid(), 0.5);
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        for x in [0.0, 0.3, 2.0, 2.3, 1e-9] {
            for _ in 0..2_000 {
                let y = m.release(x, &mut rng);
                assert_eq!((y / 0.5).fract(), 0.0, "{y} from {x}");
                assert!(y.abs() <= 64.0);
            }
        }
    }

    #[test]
    fn sensitivities_must_be_powers_of_two() {
        let m = SnappingLaplace::with_sensitivity(1.0, 4.0, 1000.0).unwrap();
        assert_eq!(m.grid(), 4.0);
        let e = SnappingLaplace::with_sensitivity(1.0, 3.0, 1000.0)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("Δ = 3") && e.contains("power of two") && e.contains('4'),
            "{e}"
        );
        assert!(SnappingLaplace::new(1.0, 0.5).is_err());
        assert!(SnappingLaplace::new(f64::NAN, 10.0).is_err());
        assert!(SnappingLaplace::new(1.0, 2f64.powi(47)).is_err());
    }

    #[test]
    fn the_guarantee_is_the_theorem_rounded_up() {
        let m = SnappingLaplace::new(1.0, 2f64.powi(20)).unwrap();
        assert!(m.epsilon() > 1.0 + 2f64.powi(-29));
        assert!(m.epsilon() < 1.0 + 2f64.powi(-28));
    }

    #[test]
    fn uniform_doubles_are_in_the_open_unit_interval_and_halve_per_binade() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let n = 200_000;
        let mut upper_half = 0usize;
        for _ in 0..n {
            let u = uniform_double(&mut rng);
            assert!(u > 0.0 && u < 1.0);
            upper_half += usize::from(u >= 0.5);
        }
        // Binomial(n, 1/2): |z| < 5.3 (false failure ≈ 1e-7).
        let z = (upper_half as f64 - 0.5 * n as f64) / (0.25 * n as f64).sqrt();
        assert!(z.abs() < 5.3, "z = {z}");
    }
}
