//! Noise samplers shared by the catalogue. All draw from the generator passed in.
//!
//! Laplace comes from `statrs` (rand_distr 0.6 has none); Gaussian, Gumbel and geometric from
//! `rand_distr`. These are the textbook floating-point samplers; see the crate docs on what that
//! means for floating-point attacks (Mironov 2012). [`crate::exact`] has exact integer-valued
//! ones. `tests/samplers.rs` checks every sampler here against its exact distribution.

use rand::{Rng, RngExt};
use rand_distr::{Distribution, Geometric, Gumbel, Normal};
use statrs::distribution::Laplace;

use crate::error::{MechanismError, Result};

fn bad(what: &str, value: f64) -> MechanismError {
    MechanismError::Sampling {
        mechanism: "noise".into(),
        message: format!("{what} must be finite and > 0, got {value}"),
    }
}

/// Laplace(0, scale) noise.
#[derive(Clone, Copy, Debug)]
pub struct LaplaceNoise(Laplace);

impl LaplaceNoise {
    /// Errors unless `scale` is finite and > 0.
    pub fn new(scale: f64) -> Result<Self> {
        Laplace::new(0.0, scale)
            .map(Self)
            .map_err(|_| bad("Laplace scale", scale))
    }
    /// One draw.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.0.sample(rng)
    }
}

/// N(0, σ²) noise.
#[derive(Clone, Copy, Debug)]
pub struct GaussianNoise(Normal<f64>);

impl GaussianNoise {
    /// Errors unless `sigma` is finite and > 0.
    pub fn new(sigma: f64) -> Result<Self> {
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(bad("Gaussian standard deviation", sigma));
        }
        Normal::new(0.0, sigma)
            .map(Self)
            .map_err(|_| bad("Gaussian standard deviation", sigma))
    }
    /// One draw.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.0.sample(rng)
    }
}

/// Gumbel(0, scale) noise.
#[derive(Clone, Copy, Debug)]
pub struct GumbelNoise(Gumbel<f64>);

impl GumbelNoise {
    /// Errors unless `scale` is finite and > 0.
    pub fn new(scale: f64) -> Result<Self> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(bad("Gumbel scale", scale));
        }
        Gumbel::new(0.0, scale)
            .map(Self)
            .map_err(|_| bad("Gumbel scale", scale))
    }
    /// One draw.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        self.0.sample(rng)
    }
}

/// Two-sided geometric (discrete Laplace) noise: P(k) ∝ exp(−|k|/scale), k ∈ ℤ.
///
/// Drawn as the difference of two i.i.d. geometric variables with success probability
/// p = 1 − e^{−1/scale} (Ghosh, Roughgarden & Sundararajan 2009; Inusah & Kozubowski 2006).
///
/// # Not exact
/// p is rounded to an `f64`, and `rand_distr`'s `Geometric` (Bringmann & Friedrich 2013) compares
/// `f64` uniforms with `f64` powers of 1 − p, so the pmf is ∝ e^{−|k|/scale} only up to
/// floating-point rounding (far below what `tests/samplers.rs` can see at 10^6 draws, where it
/// passes). It stays the catalogue's sampler because the seeded figures in `docs/` and `reports/`
/// were measured with its random stream, and because it takes any finite scale > 0. For exact
/// noise use [`crate::exact::ExactDiscreteLaplace`]: the same distribution from integer
/// arithmetic only, about as fast (release build, per 10^6 draws: 0.10 s at scales 0.5, 3.3 and
/// 100, against 0.03, 0.12 and 0.24 s here).
#[derive(Clone, Copy, Debug)]
pub struct DiscreteLaplaceNoise(Geometric);

impl DiscreteLaplaceNoise {
    /// Errors unless `scale` is finite and > 0.
    pub fn new(scale: f64) -> Result<Self> {
        if !(scale.is_finite() && scale > 0.0) {
            return Err(bad("discrete Laplace scale", scale));
        }
        let p = -(-1.0 / scale).exp_m1();
        Geometric::new(p)
            .map(Self)
            .map_err(|_| bad("discrete Laplace scale", scale))
    }
    /// One draw, as an exact integer-valued f64.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> f64 {
        let a = self.0.sample(rng) as f64;
        let b = self.0.sample(rng) as f64;
        a - b
    }
}

/// The number of failures before the first success of independent Bernoulli(q) trials,
/// P(K = k) = (1 − q)^k·q for k ≥ 0: how many records Poisson subsampling at rate q skips before
/// the next one it puts in the batch (DP-SGD's batches, `catalogue/dpsgd/`). Drawn by inversion,
/// K = ⌊ln U / ln(1 − q)⌋ with U uniform on (0, 1], one uniform per record kept rather than one
/// per record. Tested against its pmf in `tests/samplers.rs`.
///
/// Hand-written: `rand_distr::Geometric` draws the same law, but the batch sampler's seeded
/// stream (and every figure measured with it) is this inversion's.
#[derive(Clone, Copy, Debug)]
pub struct GeometricSkips {
    q: f64,
    ln_keep: f64,
}

impl GeometricSkips {
    /// Errors unless 0 < q ≤ 1.
    pub fn new(q: f64) -> Result<Self> {
        if !(q > 0.0 && q <= 1.0) {
            return Err(MechanismError::Sampling {
                mechanism: "noise".into(),
                message: format!("sampling rate q = {q}; allowed: 0 < q ≤ 1"),
            });
        }
        Ok(Self {
            q,
            ln_keep: (-q).ln_1p(),
        })
    }

    /// One draw, capped at `cap` (a skip past the end of the data is reported as `cap`).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R, cap: usize) -> usize {
        if self.q >= 1.0 {
            return 0;
        }
        let u = 1.0 - rng.random::<f64>();
        let s = (u.ln() / self.ln_keep).floor();
        if s >= cap as f64 { cap } else { s as usize }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// Sample means and variances against closed forms. Each check is a z-test on 2e5 draws at
    /// |z| < 5.3 (two-sided false-failure rate ≈ 1.2e-7 each, by the CLT; fourth moments are finite).
    #[test]
    fn noise_moments() {
        let n = 200_000;
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let check = |name: &str, draws: Vec<f64>, mean: f64, var: f64, kurt_var: f64| {
            let m = draws.iter().sum::<f64>() / n as f64;
            let v = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            let zm = (m - mean) / (var / n as f64).sqrt();
            // Var of the sample second moment = E(x-μ)^4 − var².
            let zv = (v - var) / (kurt_var / n as f64).sqrt();
            assert!(zm.abs() < 5.3, "{name} mean z = {zm}");
            assert!(zv.abs() < 5.3, "{name} var z = {zv}");
        };
        let l = LaplaceNoise::new(2.0).unwrap();
        let draws: Vec<f64> = (0..n).map(|_| l.sample(&mut rng)).collect();
        // Laplace(b): var 2b², 4th moment 24b⁴.
        check("laplace", draws, 0.0, 8.0, 24.0 * 16.0 - 64.0);
        let g = GaussianNoise::new(3.0).unwrap();
        let draws: Vec<f64> = (0..n).map(|_| g.sample(&mut rng)).collect();
        check("gaussian", draws, 0.0, 9.0, 3.0 * 81.0 - 81.0);
        let dl = DiscreteLaplaceNoise::new(1.0).unwrap();
        let draws: Vec<f64> = (0..n).map(|_| dl.sample(&mut rng)).collect();
        assert!(draws.iter().all(|x| x.fract() == 0.0));
        // Discrete Laplace with a = e^{-1/s}: var = 2a/(1-a)².
        let a = (-1.0f64).exp();
        let var = 2.0 * a / (1.0 - a).powi(2);
        // 4th central moment of the discrete Laplace: 2a(1 + 10a + a²)/(1−a)⁴.
        let m4 = 2.0 * a * (1.0 + 10.0 * a + a * a) / (1.0 - a).powi(4);
        check("discrete-laplace", draws, 0.0, var, m4 - var * var);
        assert!(LaplaceNoise::new(0.0).is_err());
        assert!(GaussianNoise::new(f64::NAN).is_err());
    }
}
