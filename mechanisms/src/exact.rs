//! Exact samplers for the discrete Laplace and the discrete Gaussian distributions.
//!
//! [`ExactDiscreteLaplace`] samples Lap_ℤ(t), P(k) = tanh(1/(2t))·e^{−|k|/t} for k ∈ ℤ, and
//! [`ExactDiscreteGaussian`] samples N_ℤ(0, σ²), P(k) = e^{−k²/(2σ²)} / Σ_{j∈ℤ} e^{−j²/(2σ²)}.
//! Both follow Canonne, Kamath & Steinke (2020), Algorithms 1–3:
//!
//! 1. **Bernoulli(e^{−γ})** for a rational γ ≥ 0 (Algorithm 1): for γ ≤ 1, draw A_k ~
//!    Bernoulli(γ/k) for k = 1, 2, … until the first A_k = 0 and answer "yes" iff that k is odd
//!    (P = Σ_k (−γ)^k/k! = e^{−γ}); for γ > 1, ⌊γ⌋ draws of Bernoulli(e^{−1}) must all say yes,
//!    then one Bernoulli(e^{−(γ−⌊γ⌋)}). Bernoulli(γ/k) for γ = r/q is drawn as Bernoulli(r/q) and
//!    Bernoulli(1/k) together, so no product q·k is ever formed.
//! 2. **Discrete Laplace of scale t = a/b** (Algorithm 2): U uniform on {0, …, a−1}, kept with
//!    probability e^{−U/a}; V ~ Geometric (count of Bernoulli(e^{−1}) successes); X = U + a·V has
//!    P(X = x) ∝ e^{−x/a}; Y = ⌊X/b⌋ has P(Y = y) ∝ e^{−y·b/a}; a fair sign, rejecting "−0".
//! 3. **Discrete Gaussian** (Algorithm 3): Y ~ Lap_ℤ(τ) with τ = ⌊σ⌋ + 1, kept with probability
//!    exp(−(|Y| − σ²/τ)²/(2σ²)). The product of the two is ∝ e^{−Y²/(2σ²)} for every τ > 0; τ
//!    only sets the expected number of rounds, 1/(tanh(1/(2τ))·e^{−σ²/(2τ²)}·Σ_k e^{−k²/(2σ²)}):
//!    1.32 for large σ, at most 1.85 for σ ≥ 1 and at most 2.25 below (computed on a grid).
//!
//! # Why the output is exact
//! A parameter given as an `f64` is an exact dyadic rational m·2^e, and is converted as such (no
//! rounding); the rational constructors take numerator and denominator directly. The sampling
//! path then performs no floating-point operation: only integer arithmetic (`u64`/`u128`, with
//! arguments in the comments on why nothing overflows, and `num-bigint`'s `BigUint` for the
//! discrete Gaussian's acceptance exponent, whose numerator and denominator have about 200–250
//! bits for a typical σ and more for tiny ones)
//! and uniform draws, namely fair bits and uniform integers on {0, …, n−1} from
//! `rand::distr::Uniform` (Lemire's widening multiply with rejection: unbiased). The
//! integer-range draw `rng.random_range(..)` is **not** used on purpose: in rand 0.10 it samples
//! with Canon's method, which is biased by up to 2^−64 per draw unless rand's `unbiased` feature
//! is on. So P(k) is exactly the distribution above, with two caveats that no computer can reach:
//! loop counters are 64-bit (a wrap needs 2^64 consecutive successes of a Bernoulli(e^{−1})), and
//! the discrete Laplace is conditioned on |k| ≤ i64::MAX (its scale is at most 2^40, so the
//! excluded mass is below e^{−2^23}).
//!
//! Bernoulli(r/q) for big r < q compares a lazily drawn uniform binary fraction with the binary
//! expansion of r/q, one digit at a time (double r; the digit is whether r ≥ q; subtract q), so
//! the only big-number operations are multiplication (to build the exponent), shift, comparison
//! and subtraction: no big-number division anywhere (OpenDP's samplers were biased for two years
//! by a rational-division bug; see the tests below and `tests/samplers.rs`).
//!
//! # Guarantee
//! For an **integer-valued** query q with sensitivity Δ (|q(x) − q(x′)| ≤ Δ on neighbors):
//! - q(x) + Lap_ℤ(Δ/ε) is ε-DP (pure): a release o has
//!   P[o | x]/P[o | x′] = e^{(|o − q(x′)| − |o − q(x)|)·ε/Δ} ≤ e^{|q(x) − q(x′)|·ε/Δ} ≤ e^ε.
//! - q(x) + N_ℤ(0, σ²) is ρ-zCDP with ρ = Δ²/(2σ²) (CKS20, Theorem 4), and (ε, δ)-DP for every
//!   ε ≥ 0 with δ = P[Y > εσ²/Δ − Δ/2] − e^ε·P[Y > εσ²/Δ + Δ/2], Y ~ N_ℤ(0, σ²) (CKS20,
//!   Theorem 7; for a pair whose queries differ by exactly Δ this δ is the exact hockey-stick
//!   divergence), which is never more than what ρ-zCDP implies.
//!
//! The releases are integers, so there are no low-order bits to leak (Mironov 2012). That holds
//! for [`ExactDiscreteLaplace::sample`]/[`ExactDiscreteGaussian::sample`] added to an integer; the
//! `sample_f64` conveniences return the same integer as an `f64` (exact for |k| ≤ 2^53, i.e. all
//! but a mass below e^{−8000}), which stays exact only if the query value is an integer of at most
//! 2^53 too.
//!
//! # Citations
//! - C. Canonne, G. Kamath, T. Steinke. *The Discrete Gaussian for Differential Privacy.*
//!   NeurIPS 2020, arXiv:2004.00010 (CKS20).
//! - I. Mironov. *On Significance of the Least Significant Bits for Differential Privacy.* CCS 2012.
//! - D. Lemire. *Fast Random Integer Generation in an Interval.* ACM TOMACS 2019.
//!
//! # Examples
//! ```
//! use dp_audit_mechanisms::exact::{ExactDiscreteGaussian, ExactDiscreteLaplace};
//! use rand::SeedableRng;
//! let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
//! // A count of sensitivity 1 released with ε = 0.5 (scale Δ/ε = 2, pure DP)…
//! let laplace = ExactDiscreteLaplace::new(2.0)?;
//! let noisy_count: i64 = 42 + laplace.sample(&mut rng);
//! // …and with ρ = 1/8-zCDP (σ² = Δ²/(2ρ) = 4).
//! let gaussian = ExactDiscreteGaussian::from_variance(4, 1)?;
//! let other: i64 = 42 + gaussian.sample(&mut rng);
//! assert!(ExactDiscreteLaplace::new(f64::NAN).is_err());
//! # let _ = (noisy_count, other);
//! # Ok::<(), dp_audit_mechanisms::MechanismError>(())
//! ```

use std::num::{NonZeroU64, NonZeroU128};

use num_bigint::BigUint;
use rand::distr::{Distribution, Uniform};
use rand::{Rng, RngExt};

use crate::error::{MechanismError, Result};

/// Largest accepted discrete Laplace scale and discrete Gaussian σ: 2^40 (≈ 1.1e12). It keeps
/// every quantity of the discrete Laplace sampler in `u64`/`u128` and the outputs far inside
/// `i64` (see the module docs).
pub const MAX_SCALE: f64 = 1_099_511_627_776.0;

/// Smallest accepted discrete Laplace scale given as an `f64`: 2^−64 (≈ 5.4e-20). Every `f64` in
/// [2^−64, 2^40] is a ratio of a numerator below 2^64 and a power-of-two denominator below 2^128.
pub const MIN_LAPLACE_SCALE: f64 = 5.421010862427522e-20;

/// A positive finite `f64` as m·2^e exactly, with m odd; `None` for anything else.
fn dyadic(x: f64) -> Option<(u64, i32)> {
    if !(x.is_finite() && x > 0.0) {
        return None;
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1u64 << 52) - 1);
    // Subnormals have no implicit leading one and the exponent of the smallest normal.
    let (m, e) = if biased == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1u64 << 52), biased - 1075)
    };
    // m > 0 because x > 0.
    let zeros = m.trailing_zeros();
    Some((m >> zeros, e + zeros as i32))
}

/// A uniform integer on {0, …, n − 1}, by rand's `Uniform` (Lemire's method, unbiased); not
/// `random_range`, which is biased in rand 0.10 (module docs).
fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: NonZeroU64) -> u64 {
    match Uniform::new(0, n.get()) {
        Ok(uniform) => uniform.sample(rng),
        // Unreachable: the range 0..n with n ≥ 1 is never empty.
        Err(_) => 0,
    }
}

/// Bernoulli(1/k).
fn bernoulli_one_over<R: Rng + ?Sized>(rng: &mut R, k: NonZeroU64) -> bool {
    k.get() == 1 || uniform_below(rng, k) == 0
}

/// Bernoulli(e^{−γ}) for γ ∈ [0, 1], given a sampler of Bernoulli(γ) (CKS20 Algorithm 1, first
/// half): the first k with A_k = 0, A_k ~ Bernoulli(γ/k) = Bernoulli(γ)·Bernoulli(1/k), is odd
/// with probability Σ_{k≥0} (−γ)^k/k! = e^{−γ}.
fn bernoulli_exp_fraction<R, F>(rng: &mut R, mut bernoulli_gamma: F) -> bool
where
    R: Rng + ?Sized,
    F: FnMut(&mut R) -> bool,
{
    let mut k = NonZeroU64::MIN;
    loop {
        if !(bernoulli_one_over(rng, k) && bernoulli_gamma(rng)) {
            return k.get() % 2 == 1;
        }
        // Saturation needs 2^64 successes with probability 1/k! each: unreachable.
        k = k.saturating_add(1);
    }
}

/// Bernoulli(e^{−1}).
fn bernoulli_exp_minus_one<R: Rng + ?Sized>(rng: &mut R) -> bool {
    bernoulli_exp_fraction(rng, |_| true)
}

/// Bernoulli(r/q) for r < q (q > 0): true iff a uniform U ∈ [0, 1), drawn one binary digit at a
/// time, is below r/q, whose binary digits are produced by long division (r ← 2r; digit = r ≥ q;
/// then r ← r − q). The first digit where they differ decides; expected two digits.
fn bernoulli_ratio_big<R: Rng + ?Sized>(rng: &mut R, r: &BigUint, q: &BigUint) -> bool {
    let mut rest = r.clone();
    loop {
        rest <<= 1u32;
        let digit = rest >= *q;
        if digit {
            rest -= q;
        }
        let bit: bool = rng.random();
        if bit != digit {
            // U's digit 0 against r/q's digit 1: U < r/q.
            return digit;
        }
    }
}

/// Bernoulli(e^{−p/q}) for big p ≥ 0, q > 0 (CKS20 Algorithm 1): ⌊p/q⌋ draws of
/// Bernoulli(e^{−1}) (by repeated subtraction, no division), then Bernoulli(e^{−(p mod q)/q}).
fn bernoulli_exp_big<R: Rng + ?Sized>(rng: &mut R, p: &BigUint, q: &BigUint) -> bool {
    let mut rest = p.clone();
    while rest >= *q {
        if !bernoulli_exp_minus_one(rng) {
            return false;
        }
        rest -= q;
    }
    bernoulli_exp_fraction(rng, |rng| bernoulli_ratio_big(rng, &rest, q))
}

fn bad_parameter(mechanism: &str, message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: mechanism.into(),
        message,
    }
}

const LAPLACE: &str = "exact-discrete-laplace";
const GAUSSIAN: &str = "exact-discrete-gaussian";

/// Exact discrete Laplace noise Lap_ℤ(t): P(k) = tanh(1/(2t))·e^{−|k|/t}, k ∈ ℤ (module docs;
/// CKS20 Algorithm 2). Added to an integer query of sensitivity Δ with t = Δ/ε it is ε-DP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExactDiscreteLaplace {
    /// The scale's numerator a (t = a/b).
    numerator: NonZeroU64,
    /// The scale's denominator b.
    denominator: NonZeroU128,
}

impl ExactDiscreteLaplace {
    /// The scale t exactly as the `f64` given (an `f64` is an exact dyadic rational).
    ///
    /// # Errors
    /// [`MechanismError::InvalidParameter`] unless `scale` is finite and in
    /// [[`MIN_LAPLACE_SCALE`], [`MAX_SCALE`]] = [2^−64, 2^40].
    pub fn new(scale: f64) -> Result<Self> {
        let refuse = || {
            bad_parameter(
                LAPLACE,
                format!(
                    "scale must be finite and in [2^-64, 2^40] (about 5.42e-20 to 1.1e12), got {}",
                    crate::math::exact(scale)
                ),
            )
        };
        if !(MIN_LAPLACE_SCALE..=MAX_SCALE).contains(&scale) {
            return Err(refuse());
        }
        let (m, e) = dyadic(scale).ok_or_else(refuse)?;
        // scale ≤ 2^40 bounds m·2^e (e ≥ 0) below 2^41; scale ≥ 2^−64 with m < 2^53 gives
        // e ≥ −116, so 2^−e fits a u128. The checked forms only restate that.
        let (numerator, denominator) = if e >= 0 {
            (m.checked_shl(e.unsigned_abs()), Some(1u128))
        } else {
            (Some(m), 1u128.checked_shl(e.unsigned_abs()))
        };
        match (
            numerator.and_then(NonZeroU64::new),
            denominator.and_then(NonZeroU128::new),
        ) {
            (Some(numerator), Some(denominator)) => Ok(Self {
                numerator,
                denominator,
            }),
            _ => Err(refuse()),
        }
    }

    /// The scale t = `numerator`/`denominator` exactly, e.g. Δ/ε for ε = 3/10 as `(10·Δ, 3)`.
    ///
    /// # Errors
    /// [`MechanismError::InvalidParameter`] unless both are ≥ 1 and the ratio is ≤ 2^40.
    pub fn from_ratio(numerator: u64, denominator: u64) -> Result<Self> {
        let fits = u128::from(numerator) <= u128::from(denominator) << 40;
        match (
            NonZeroU64::new(numerator),
            NonZeroU128::new(denominator.into()),
        ) {
            (Some(numerator), Some(denominator)) if fits => Ok(Self {
                numerator,
                denominator,
            }),
            _ => Err(bad_parameter(
                LAPLACE,
                format!(
                    "scale numerator/denominator needs both ≥ 1 and a ratio ≤ 2^40, got \
                     {numerator}/{denominator}"
                ),
            )),
        }
    }

    /// The scale as (numerator, denominator), exactly.
    pub fn scale_ratio(&self) -> (u64, u128) {
        (self.numerator.get(), self.denominator.get())
    }

    /// One draw k ∈ ℤ with P(k) = tanh(1/(2t))·e^{−|k|/t} (conditioned on |k| ≤ i64::MAX; module
    /// docs).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        let a = self.numerator;
        loop {
            let u = uniform_below(rng, a);
            // Keep U with probability e^{−U/a}; U/a < 1.
            if !bernoulli_exp_fraction(rng, |rng| uniform_below(rng, a) < u) {
                continue;
            }
            let mut v: u64 = 0;
            while bernoulli_exp_minus_one(rng) {
                // Saturation needs 2^64 successes at probability e^{−1}: unreachable.
                v = v.saturating_add(1);
            }
            // X = U + a·V ≤ (2^64 − 2) + (2^64 − 1)² < 2^128: no overflow.
            let x = u128::from(u) + u128::from(a.get()) * u128::from(v);
            let y = x / self.denominator;
            let negative: bool = rng.random();
            if negative && y == 0 {
                continue;
            }
            // Condition on |k| ≤ i64::MAX (symmetric, so the sign stays fair).
            let Ok(y) = i64::try_from(y) else {
                continue;
            };
            return if negative { -y } else { y };
        }
    }

    /// [`Self::sample`] as an `f64` (exact for |k| ≤ 2^53; module docs).
    pub fn sample_f64<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.sample(rng) as f64
    }
}

impl Distribution<i64> for ExactDiscreteLaplace {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        ExactDiscreteLaplace::sample(self, rng)
    }
}

/// Exact discrete Gaussian noise N_ℤ(0, σ²): P(k) ∝ e^{−k²/(2σ²)}, k ∈ ℤ (module docs; CKS20
/// Algorithm 3). Added to an integer query of sensitivity Δ it is Δ²/(2σ²)-zCDP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExactDiscreteGaussian {
    /// The proposal Lap_ℤ(τ), τ = ⌊σ⌋ + 1.
    proposal: ExactDiscreteLaplace,
    /// σ² = n/d: n.
    n: BigUint,
    /// τ·d.
    tau_d: BigUint,
    /// 2·n·d·τ², the denominator of the acceptance exponent.
    exponent_denominator: BigUint,
}

impl ExactDiscreteGaussian {
    /// σ exactly as the `f64` given (so σ² = m²·2^{2e} exactly).
    ///
    /// # Errors
    /// [`MechanismError::InvalidParameter`] unless `sigma` is finite, > 0 and ≤ [`MAX_SCALE`]
    /// (2^40).
    pub fn new(sigma: f64) -> Result<Self> {
        let refuse = || {
            bad_parameter(
                GAUSSIAN,
                format!(
                    "sigma must be finite, > 0 and ≤ 2^40 (about 1.1e12), got {}",
                    crate::math::exact(sigma)
                ),
            )
        };
        if sigma > MAX_SCALE {
            return Err(refuse());
        }
        let (m, e) = dyadic(sigma).ok_or_else(refuse)?;
        let m2 = BigUint::from(m) * m;
        let shift = 2 * u64::from(e.unsigned_abs());
        let (n, d) = if e >= 0 {
            (m2 << shift, BigUint::from(1u32))
        } else {
            (m2, BigUint::from(1u32) << shift)
        };
        // σ ≤ 2^40, so ⌊σ⌋ + 1 fits (float floor and this conversion are exact).
        let tau = sigma.floor() as u64 + 1;
        Self::build(n, d, tau).ok_or_else(refuse)
    }

    /// σ² = `numerator`/`denominator` exactly, e.g. Δ²/(2ρ) for a target ρ-zCDP.
    ///
    /// # Errors
    /// [`MechanismError::InvalidParameter`] unless both are ≥ 1.
    pub fn from_variance(numerator: u64, denominator: u64) -> Result<Self> {
        let refuse = || {
            bad_parameter(
                GAUSSIAN,
                format!(
                    "variance numerator/denominator needs both ≥ 1, got {numerator}/{denominator}"
                ),
            )
        };
        if numerator == 0 || denominator == 0 {
            return Err(refuse());
        }
        // ⌊σ⌋ = ⌊√⌊σ²⌋⌋ ≤ 2^32, so τ fits; any τ ≥ 1 would be correct (module docs).
        let tau = (numerator / denominator).isqrt() + 1;
        Self::build(numerator.into(), denominator.into(), tau).ok_or_else(refuse)
    }

    fn build(n: BigUint, d: BigUint, tau: u64) -> Option<Self> {
        let proposal = ExactDiscreteLaplace {
            numerator: NonZeroU64::new(tau)?,
            denominator: NonZeroU128::MIN,
        };
        let tau = BigUint::from(tau);
        let tau_d = &tau * &d;
        let exponent_denominator = BigUint::from(2u32) * &n * &d * &tau * &tau;
        Some(Self {
            proposal,
            n,
            tau_d,
            exponent_denominator,
        })
    }

    /// The acceptance exponent (|y| − σ²/τ)²/(2σ²) = (|y|·τ·d − n)²/(2·n·d·τ²) for σ² = n/d,
    /// as (numerator, denominator).
    fn acceptance_exponent(&self, y: i64) -> (BigUint, &BigUint) {
        let a = BigUint::from(y.unsigned_abs()) * &self.tau_d;
        let gap = if a >= self.n {
            a - &self.n
        } else {
            &self.n - a
        };
        (&gap * &gap, &self.exponent_denominator)
    }

    /// One draw k ∈ ℤ with P(k) ∝ e^{−k²/(2σ²)}.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        loop {
            let y = self.proposal.sample(rng);
            let (p, q) = self.acceptance_exponent(y);
            if bernoulli_exp_big(rng, &p, q) {
                return y;
            }
        }
    }

    /// [`Self::sample`] as an `f64` (exact for |k| ≤ 2^53; module docs).
    pub fn sample_f64<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.sample(rng) as f64
    }
}

impl Distribution<i64> for ExactDiscreteGaussian {
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> i64 {
        ExactDiscreteGaussian::sample(self, rng)
    }
}

#[cfg(test)]
mod tests {
    //! The pieces the samplers are built from, each against its exact value. Frequency checks
    //! are two-sided z-tests at |z| < 5 on 10^6 draws (false-failure rate 5.7e-7 each by the CLT;
    //! fewer than 20 checks here, so below 1.2e-5 together). The whole samplers are tested
    //! against their pmfs in `tests/samplers.rs`.

    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    const N: usize = 1_000_000;

    fn check_frequency(name: &str, n: usize, p: f64, mut draw: impl FnMut() -> bool) {
        let hits = (0..n).filter(|_| draw()).count();
        if p == 0.0 || p == 1.0 {
            assert_eq!(hits as f64, p * n as f64, "{name}");
            return;
        }
        let f = hits as f64 / n as f64;
        let z = (f - p) / (p * (1.0 - p) / n as f64).sqrt();
        assert!(
            z.abs() < 5.0,
            "{name}: frequency {f}, expected {p}, z = {z}"
        );
    }

    fn big(x: u128) -> BigUint {
        BigUint::from(x)
    }

    #[test]
    fn dyadic_is_exact() {
        let values = [
            0.1,
            1.0 / 3.0,
            1.0,
            3.0,
            0.5,
            12345.678,
            3.7306316348159374,
            1e-300,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            MAX_SCALE,
            MIN_LAPLACE_SCALE,
        ];
        for x in values {
            let (m, e) = dyadic(x).unwrap();
            assert_eq!(m % 2, 1, "{x}: mantissa {m} not odd");
            assert!(m < 1 << 53);
            // Two power-of-two steps keep the intermediate normal, so the product is exact.
            let back = m as f64 * 2f64.powi(e / 2) * 2f64.powi(e - e / 2);
            assert_eq!(back.to_bits(), x.to_bits(), "{x} = {m}·2^{e}");
        }
        assert_eq!(dyadic(0.1), Some((3602879701896397, -55)));
        assert_eq!(dyadic(5e-324), Some((1, -1074)));
        assert_eq!(dyadic(6.0), Some((3, 1)));
        for x in [0.0, -0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(dyadic(x), None, "{x}");
        }
        assert_eq!(MAX_SCALE, 2f64.powi(40));
        assert_eq!(MIN_LAPLACE_SCALE, 2f64.powi(-64));
    }

    #[test]
    fn scales_convert_exactly() {
        let l = ExactDiscreteLaplace::new(0.1).unwrap();
        assert_eq!(l.scale_ratio(), (3602879701896397, 1 << 55));
        assert_eq!(
            ExactDiscreteLaplace::new(6.0).unwrap().scale_ratio(),
            (6, 1)
        );
        assert_eq!(
            ExactDiscreteLaplace::new(MIN_LAPLACE_SCALE)
                .unwrap()
                .scale_ratio(),
            (1, 1 << 64)
        );
        assert_eq!(
            ExactDiscreteLaplace::new(MAX_SCALE).unwrap().scale_ratio(),
            (1 << 40, 1)
        );
        assert_eq!(
            ExactDiscreteLaplace::from_ratio(10, 3)
                .unwrap()
                .scale_ratio(),
            (10, 3)
        );
        // σ = 1.5: σ² = 9/4, τ = 2.
        let g = ExactDiscreteGaussian::new(1.5).unwrap();
        assert_eq!(g.n, big(9));
        assert_eq!(g.proposal.scale_ratio(), (2, 1));
        assert_eq!(g.tau_d, big(8));
        assert_eq!(g.exponent_denominator, big(2 * 9 * 4 * 4));
        // σ = 0.1 = m·2^−55: σ² = m²/2^110, τ = 1.
        let g = ExactDiscreteGaussian::new(0.1).unwrap();
        assert_eq!(g.n, big(3602879701896397u128 * 3602879701896397));
        assert_eq!(g.tau_d, big(1 << 110));
        assert_eq!(g.proposal.scale_ratio(), (1, 1));
        // σ² = 10/3: τ = ⌊√3⌋ + 1 = 2.
        let g = ExactDiscreteGaussian::from_variance(10, 3).unwrap();
        assert_eq!(g.proposal.scale_ratio(), (2, 1));
        assert_eq!(
            ExactDiscreteGaussian::from_variance(100, 1)
                .unwrap()
                .proposal
                .scale_ratio(),
            (11, 1)
        );
    }

    #[test]
    fn acceptance_exponent_is_the_rational_formula() {
        // σ = 1.5, τ = 2, y = 3: (3 − 9/8)²/(2·9/4) = (15/8)²·(2/9) = 25/32.
        let g = ExactDiscreteGaussian::new(1.5).unwrap();
        let (p, q) = g.acceptance_exponent(-3);
        assert_eq!(&p * 32u32, q * 25u32);
        // y = 0: (9/8)²/(9/2) = 81/64·2/9 = 9/32 = σ²/(2τ²).
        let (p, q) = g.acceptance_exponent(0);
        assert_eq!(&p * 32u32, q * 9u32);
        // Against the f64 formula for messy σ (relative 1e-12: only the f64 side rounds).
        for sigma in [0.1, 0.7, 3.7306316348159374, 25.0, 1e6 + 0.25] {
            let g = ExactDiscreteGaussian::new(sigma).unwrap();
            let tau = (sigma.floor() + 1.0) as i64;
            for y in [0, 1, -1, 2, tau, -3 * tau, 40 * tau] {
                let (p, q) = g.acceptance_exponent(y);
                // Each to f64 through its top 60 bits (relative error 2^−60).
                let to_f64 = |v: &BigUint| {
                    let shift = v.bits().saturating_sub(60);
                    let top = (v >> shift).to_u64_digits().first().copied().unwrap_or(0);
                    top as f64 * 2f64.powi(shift as i32)
                };
                let exact = to_f64(&p) / to_f64(q);
                let s2 = sigma * sigma;
                let want = (y.abs() as f64 - s2 / tau as f64).powi(2) / (2.0 * s2);
                assert!(
                    (exact - want).abs() <= 1e-9 * want.max(1e-300),
                    "σ {sigma} y {y}: {exact} vs {want}"
                );
            }
        }
    }

    #[test]
    fn bernoulli_ratio_of_big_numbers() {
        let mut rng = ChaCha20Rng::seed_from_u64(101);
        // 1/3 with 200-bit numerator and denominator.
        let (r, q) = (big(1) << 200u32, big(3) << 200u32);
        check_frequency("1/3 big", N, 1.0 / 3.0, || {
            bernoulli_ratio_big(&mut rng, &r, &q)
        });
        // (2^127 + 1)/2^130 ≈ 1/8, a terminating expansion.
        let (r, q) = (big((1 << 127) + 1), big(1) << 130u32);
        check_frequency("1/8 dyadic", N, 0.125, || {
            bernoulli_ratio_big(&mut rng, &r, &q)
        });
        // 0 and (q − 1)/q for tiny q.
        assert!((0..1000).all(|_| !bernoulli_ratio_big(&mut rng, &big(0), &big(7))));
        check_frequency("6/7", N, 6.0 / 7.0, || {
            bernoulli_ratio_big(&mut rng, &big(6), &big(7))
        });
    }

    #[test]
    fn bernoulli_exp_matches_exp() {
        let mut rng = ChaCha20Rng::seed_from_u64(102);
        check_frequency("e^-1", N, (-1.0f64).exp(), || {
            bernoulli_exp_minus_one(&mut rng)
        });
        let a = NonZeroU64::new(7).unwrap();
        check_frequency("e^-3/7 (u64 path)", N, (-3.0f64 / 7.0).exp(), || {
            bernoulli_exp_fraction(&mut rng, |rng| uniform_below(rng, a) < 3)
        });
        for (p, q) in [
            (0u128, 5u128),
            (1, 2),
            (7, 3),
            (5, 1),
            (10u128.pow(30) + 1, 10u128.pow(30)),
        ] {
            let gamma = p as f64 / q as f64;
            check_frequency(&format!("e^-{p}/{q}"), N, (-gamma).exp(), || {
                bernoulli_exp_big(&mut rng, &big(p), &big(q))
            });
        }
        // A 300-bit exponent of 1/2 takes the big-number path end to end.
        let (p, q) = (big(1) << 300u32, big(1) << 301u32);
        check_frequency("e^-1/2 big", N, (-0.5f64).exp(), || {
            bernoulli_exp_big(&mut rng, &p, &q)
        });
    }

    #[test]
    fn bad_parameters_are_refused_with_their_value() {
        for s in [0.0, -1.0, f64::NAN, f64::INFINITY, 2f64.powi(41), 1e-30] {
            let e = ExactDiscreteLaplace::new(s).unwrap_err().to_string();
            assert!(
                e.contains("exact-discrete-laplace") && e.contains("[2^-64, 2^40]"),
                "{e}"
            );
            assert!(e.contains(&crate::math::exact(s)), "{e}");
        }
        for s in [0.0, -2.0, f64::NAN, f64::NEG_INFINITY, 2e12] {
            let e = ExactDiscreteGaussian::new(s).unwrap_err().to_string();
            assert!(e.contains("sigma must be finite") && e.contains(&crate::math::exact(s)));
        }
        assert!(ExactDiscreteLaplace::from_ratio(0, 1).is_err());
        assert!(ExactDiscreteLaplace::from_ratio(1, 0).is_err());
        assert!(ExactDiscreteLaplace::from_ratio((1 << 40) + 1, 1).is_err());
        assert!(ExactDiscreteLaplace::from_ratio(u64::MAX, 1 << 24).is_ok());
        let e = ExactDiscreteGaussian::from_variance(3, 0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("3/0"), "{e}");
        assert!(ExactDiscreteGaussian::from_variance(u64::MAX, 1).is_ok());
        assert!(ExactDiscreteGaussian::new(5e-324).is_ok());
        assert!(ExactDiscreteGaussian::new(MAX_SCALE).is_ok());
    }

    #[test]
    fn seeded_draws_repeat_and_extremes_run() {
        let l = ExactDiscreteLaplace::new(3.5).unwrap();
        let g = ExactDiscreteGaussian::new(2.5).unwrap();
        let run = |seed| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed);
            (0..100)
                .map(|_| (l.sample(&mut rng), g.sample(&mut rng)))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
        let mut rng = ChaCha20Rng::seed_from_u64(103);
        // Tiny scales are (almost) all zeros; the largest ones stay far inside i64 and f64.
        let tiny = ExactDiscreteLaplace::new(MIN_LAPLACE_SCALE).unwrap();
        assert!((0..1000).all(|_| tiny.sample(&mut rng) == 0));
        let tiny = ExactDiscreteGaussian::new(5e-324).unwrap();
        assert!((0..1000).all(|_| tiny.sample(&mut rng) == 0));
        let huge = ExactDiscreteLaplace::new(MAX_SCALE).unwrap();
        let huge_g = ExactDiscreteGaussian::new(MAX_SCALE).unwrap();
        for _ in 0..1000 {
            assert!(huge.sample(&mut rng).unsigned_abs() < 1 << 50);
            assert!(huge_g.sample_f64(&mut rng).abs() < 2f64.powi(46));
        }
    }
}
