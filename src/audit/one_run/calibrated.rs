//! Membership scores of a one-run audit: the raw score, or a score calibrated per example on
//! holdout points (`--score loss|calibrated`).
//!
//! # The calibrated score
//! After Bertran et al. (NeurIPS 2023, quantile-regression membership inference) as used for
//! one-run black-box audits by Liu, Boglioni, Fu, Hu, Thaker & Wu (arXiv:2506.15349): k
//! **holdout points**, never included in training, are scored by the same released model as the
//! canaries. A heteroscedastic Gaussian model of a non-member's score given its public features
//! φ(x) ∈ R^p (an intercept is added) is fitted on the holdouts by two least-squares fits:
//!
//! 1. μ(x) = ⟨b, (1, φ(x))⟩ with b = argmin Σ_h (s_h − ⟨b, (1, φ(x_h))⟩)²;
//! 2. ln σ(x) = (⟨c, (1, φ(x))⟩ − E[ln χ²₁]) / 2 with c = argmin Σ_h (ln r_h² − ⟨c, (1, φ(x_h))⟩)²,
//!    r_h = s_h − μ(x_h): if r = σ(x)·N, N ~ N(0, 1), then ln r² = 2 ln σ(x) + ln N², and
//!    E[ln N²] = ψ(1/2) + ln 2 ≈ −1.2704 (Harvey 1976, multiplicative heteroscedasticity).
//!
//! The canary's calibrated score is q(x) = Φ((s(x) − μ(x))/σ(x)), the probability that a
//! non-member with x's features scores below x. The guesses rank by z = (s − μ(x))/σ(x), which
//! orders the canaries exactly as Φ(z) does (Φ is strictly increasing) and keeps their order
//! where Φ(z) would round to 1 in floating point.
//!
//! # Why the bounds stay valid
//! Every bound of [`super`] holds for **any** guesses that are a function of the release and of
//! public information fixed independently of the inclusion bits (Steinke et al. Theorem 3.1:
//! T = A(M(S)) is any post-processing; Mahloujifar et al. likewise; the order-statistics bound
//! for any size-r rule measurable in the release of a product of per-canary channels). The
//! holdouts' definitions are public and drawn before training; their scores are computed from the
//! released model; the fit uses only those scores and the public features. So q, and the guesses
//! made from it, are a post-processing of the release: **the inclusion bits are never read**, and
//! each bound keeps its guarantee unchanged. (The holdouts are extra records in the training
//! program's input space that are never trained on; the claim, which holds for adding or removing
//! one canary whatever the rest, is unaffected.)
//!
//! # Where it can help, and where it cannot
//! It helps when non-members' scores vary with public features of the example (hard and easy
//! examples, as in image models): q removes that variation, so the guesses rank by the
//! membership signal instead of by difficulty. It is a **no-op for exchangeable canaries**: the
//! built-in trainer's Dirac canaries (x = a·e_slot, each on its own coordinate) have no
//! distinguishing public feature (φ is empty), so μ and σ are constants, z is an increasing affine
//! map of s, and the guesses, hence every bound, are exactly those of the raw score. The unit
//! tests below show both: the no-op, and a heteroscedastic score model where the calibrated
//! score recovers the per-canary signal that the raw score loses.
//!
//! Least squares by the normal equations and a Cholesky factorisation written here: p + 1 is
//! small (the built-in trainer: 1), ndarray (a dependency) has no solver without LAPACK
//! (`ndarray-linalg`), and linfa's `linfa-linear` is not a dependency; adding either for two
//! fits of at most a few columns is not worth it.

use ndarray::{Array1, Array2};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// E[ln N²] for N ~ N(0, 1): ψ(1/2) + ln 2.
pub const EXPECTED_LN_CHI2_1: f64 = -1.270_362_845_461_478;

/// Relative size below which a Cholesky pivot means collinear features.
const PIVOT_TOLERANCE: f64 = 1e-12;

/// Which membership score the guesses rank by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScoreKind {
    /// The raw score: white-box the updates' alignment with the canary, black-box −loss.
    Loss,
    /// Calibrated per example on never-included holdouts (module documentation).
    Calibrated,
}

impl ScoreKind {
    /// Parses `loss` or `calibrated`.
    ///
    /// # Errors
    /// Anything else, naming the flag and what is allowed.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim() {
            "loss" => Ok(Self::Loss),
            "calibrated" => Ok(Self::Calibrated),
            other => Err(Error::InvalidConfig(format!(
                "--score {other:?}; allowed: loss (the raw score: -loss black-box, the \
                 updates' alignment white-box) or calibrated (Phi((s - mu(x))/sigma(x)) fitted \
                 on never-included holdout points)"
            ))),
        }
    }

    /// `loss` or `calibrated`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Loss => "loss",
            Self::Calibrated => "calibrated",
        }
    }
}

/// The fitted non-member model (for the report).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Holdout points the fit used.
    pub holdouts: usize,
    /// b: μ(x) = ⟨b, (1, φ(x))⟩.
    pub mean: Vec<f64>,
    /// c: ln σ(x) = (⟨c, (1, φ(x))⟩ − E[ln χ²₁]) / 2.
    pub log_variance: Vec<f64>,
}

impl Calibration {
    /// μ(x) and σ(x) at features φ(x).
    pub fn mean_sd(&self, features: &[f64]) -> (f64, f64) {
        let dot = |w: &[f64]| w[0] + w[1..].iter().zip(features).map(|(a, b)| a * b).sum::<f64>();
        let mu = dot(&self.mean);
        let sd = (0.5 * (dot(&self.log_variance) - EXPECTED_LN_CHI2_1)).exp();
        (mu, sd)
    }
}

/// The design matrix (1, φ(x)) of `rows`, each with `p` features.
fn design(rows: &[Vec<f64>], p: usize) -> Result<Array2<f64>> {
    let mut x = Array2::<f64>::zeros((rows.len(), p + 1));
    for (i, r) in rows.iter().enumerate() {
        if r.len() != p {
            return Err(Error::InvalidConfig(format!(
                "point {i} has {} features; allowed: {p}, as the first point",
                r.len()
            )));
        }
        x[[i, 0]] = 1.0;
        for (k, &v) in r.iter().enumerate() {
            if !v.is_finite() {
                return Err(Error::InvalidSamples(format!(
                    "feature {k} of point {i} is {v}; allowed: finite numbers"
                )));
            }
            x[[i, k + 1]] = v;
        }
    }
    Ok(x)
}

/// argmin_w ‖y − X w‖² by the normal equations XᵀX w = Xᵀy and a Cholesky factorisation.
///
/// # Errors
/// Collinear columns (a pivot below 1e-12 of the diagonal's scale).
fn least_squares(x: &Array2<f64>, y: &Array1<f64>) -> Result<Vec<f64>> {
    let a = x.t().dot(x);
    let b = x.t().dot(y);
    let n = a.nrows();
    let scale = (0..n).map(|i| a[[i, i]]).fold(0.0_f64, f64::max);
    // Lower-triangular L with L Lᵀ = A.
    let mut l = Array2::<f64>::zeros((n, n));
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[[i, k]] * l[[j, k]]).sum();
            if i == j {
                let d = a[[i, i]] - s;
                // Also refuses a NaN pivot (non-finite features are refused earlier).
                if d.is_nan() || d <= PIVOT_TOLERANCE * scale {
                    return Err(Error::InvalidConfig(format!(
                        "the holdouts' features are collinear (column {i}); allowed: features \
                         that vary independently over at least p + 1 holdouts"
                    )));
                }
                l[[i, i]] = d.sqrt();
            } else {
                l[[i, j]] = (a[[i, j]] - s) / l[[j, j]];
            }
        }
    }
    // Forward then back substitution.
    let mut z = vec![0.0; n];
    for i in 0..n {
        let s: f64 = (0..i).map(|k| l[[i, k]] * z[k]).sum();
        z[i] = (b[i] - s) / l[[i, i]];
    }
    let mut w = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[[k, i]] * w[k]).sum();
        w[i] = (z[i] - s) / l[[i, i]];
    }
    Ok(w)
}

/// Fits μ(x) and ln σ(x) on the holdouts (module documentation).
///
/// # Errors
/// Fewer holdouts than p + 2, rows of unequal length, non-finite values, collinear features.
pub fn fit(holdout_scores: &[f64], holdout_features: &[Vec<f64>]) -> Result<Calibration> {
    let k = holdout_scores.len();
    let p = holdout_features.first().map_or(0, Vec::len);
    if holdout_features.len() != k || k < p + 2 {
        return Err(Error::InvalidConfig(format!(
            "{k} holdout scores for {} holdout points of {p} features; allowed: one score per \
             point and at least p + 2 points",
            holdout_features.len()
        )));
    }
    if let Some((i, s)) = holdout_scores
        .iter()
        .enumerate()
        .find(|(_, s)| !s.is_finite())
    {
        return Err(Error::InvalidSamples(format!(
            "score of holdout {i} is {s}; allowed: finite numbers"
        )));
    }
    let x = design(holdout_features, p)?;
    let y = Array1::from(holdout_scores.to_vec());
    let mean = least_squares(&x, &y)?;
    let fitted = x.dot(&Array1::from(mean.clone()));
    // ln r² with r² floored at the smallest normal number (a holdout fitted exactly).
    let ln_r2 = (&y - &fitted).mapv(|r| (r * r).max(f64::MIN_POSITIVE).ln());
    let log_variance = least_squares(&x, &ln_r2)?;
    Ok(Calibration {
        holdouts: k,
        mean,
        log_variance,
    })
}

/// The calibrated scores of the canaries, as z = (s − μ(x))/σ(x) (ranked as Φ(z); module
/// documentation), and the fit.
///
/// # Errors
/// As [`fit`]; canary rows of another length than the holdouts'; a non-finite score.
pub fn calibrate(
    canary_scores: &[f64],
    canary_features: &[Vec<f64>],
    holdout_scores: &[f64],
    holdout_features: &[Vec<f64>],
) -> Result<(Vec<f64>, Calibration)> {
    let cal = fit(holdout_scores, holdout_features)?;
    let p = cal.mean.len() - 1;
    if canary_features.len() != canary_scores.len() {
        return Err(Error::InvalidConfig(format!(
            "{} canary scores for {} canary points; allowed: one each",
            canary_scores.len(),
            canary_features.len()
        )));
    }
    let mut z = Vec::with_capacity(canary_scores.len());
    for (i, (&s, f)) in canary_scores.iter().zip(canary_features).enumerate() {
        if f.len() != p || !s.is_finite() {
            return Err(Error::InvalidSamples(format!(
                "canary {i}: score {s} with {} features; allowed: a finite score and {p} \
                 features, as the holdouts",
                f.len()
            )));
        }
        let (mu, sd) = cal.mean_sd(f);
        let v = (s - mu) / sd;
        z.push(if v.is_finite() {
            v
        } else {
            v.clamp(f64::MIN, f64::MAX)
        });
    }
    Ok((z, cal))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::one_run::{CanaryModel, audit_scores_with, default_guess_sizes};
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha20Rng;
    use rand_distr::StandardNormal;

    /// Exact recovery: scores 2 + 3u with noise sd e^{u}: the fit finds b ≈ (2, 3) and
    /// ln σ ≈ u (c ≈ (0, 2) in ln σ² units) from 20 000 holdouts.
    #[test]
    fn fit_recovers_a_heteroscedastic_gaussian() -> Result<()> {
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let (mut s, mut f) = (Vec::new(), Vec::new());
        for _ in 0..20_000 {
            let u: f64 = rng.random_range(-1.0..1.0);
            let n: f64 = rng.sample(StandardNormal);
            s.push(2.0 + 3.0 * u + u.exp() * n);
            f.push(vec![u]);
        }
        let c = fit(&s, &f)?;
        assert!(
            (c.mean[0] - 2.0).abs() < 0.05 && (c.mean[1] - 3.0).abs() < 0.05,
            "{c:?}"
        );
        // ln r² = 2u + ln N²: slope 2, intercept E[ln N²] (sd of ln N² is 2.2, so ±0.1).
        assert!((c.log_variance[1] - 2.0).abs() < 0.1, "{c:?}");
        assert!(
            (c.log_variance[0] - EXPECTED_LN_CHI2_1).abs() < 0.1,
            "{c:?}"
        );
        let (mu, sd) = c.mean_sd(&[0.5]);
        assert!((mu - 3.5).abs() < 0.05 && (sd - 0.5f64.exp()).abs() < 0.1);
        assert!(fit(&s[..2], &f[..2]).is_err());
        assert!(fit(&[1.0, 2.0, 3.0], &[vec![1.0], vec![1.0], vec![1.0]]).is_err());
        Ok(())
    }

    /// Exchangeable canaries (no features: intercept only): z is an increasing affine map of
    /// the raw score, so the guesses and every bound are the raw score's.
    #[test]
    fn no_features_is_a_no_op() -> Result<()> {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let m = 1000;
        let included: Vec<bool> = (0..m).map(|_| rng.random_bool(0.5)).collect();
        let raw: Vec<f64> = included
            .iter()
            .map(|&b| rng.sample::<f64, _>(StandardNormal) + if b { 1.0 } else { 0.0 })
            .collect();
        let hold: Vec<f64> = (0..m).map(|_| rng.sample(StandardNormal)).collect();
        let (z, _) = calibrate(&raw, &vec![vec![]; m], &hold, &vec![vec![]; m])?;
        let sizes = default_guess_sizes(m);
        let model = CanaryModel::Unknown("test".into());
        let a = audit_scores_with(&raw, &included, 1e-5, 0.05, &sizes, &model)?;
        let b = audit_scores_with(&z, &included, 1e-5, 0.05, &sizes, &model)?;
        assert_eq!(a, b);
        assert!(a.mu_lower > 0.3, "{}", a.mu_lower);
        Ok(())
    }

    /// A heteroscedastic score model, each canary exactly μ-GDP (μ = 1): s = 4u + σ(u)(N + μ·b),
    /// σ(u) = e^{2u}, u uniform on [−1, 1] public. The raw score ranks mostly by u; the
    /// calibrated one by N + μ·b. Measured at seed 3: raw μ̂ 0 (no bound), calibrated μ̂ > 0.5.
    #[test]
    fn heteroscedastic_scores_gain_from_calibration() -> Result<()> {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let m = 1000;
        let point = |rng: &mut ChaCha20Rng, b: bool| {
            let u: f64 = rng.random_range(-1.0..1.0);
            let n: f64 = rng.sample(StandardNormal);
            let shift = if b { 1.0 } else { 0.0 };
            (4.0 * u + (2.0 * u).exp() * (n + shift), vec![u])
        };
        let included: Vec<bool> = (0..m).map(|_| rng.random_bool(0.5)).collect();
        let (raw, feats): (Vec<f64>, Vec<Vec<f64>>) =
            included.iter().map(|&b| point(&mut rng, b)).unzip();
        let (hs, hf): (Vec<f64>, Vec<Vec<f64>>) = (0..m).map(|_| point(&mut rng, false)).unzip();
        let (z, _) = calibrate(&raw, &feats, &hs, &hf)?;
        let sizes = default_guess_sizes(m);
        let model = CanaryModel::Independent("test: independent by construction".into());
        let a = audit_scores_with(&raw, &included, 1e-5, 0.05, &sizes, &model)?;
        let b = audit_scores_with(&z, &included, 1e-5, 0.05, &sizes, &model)?;
        let (_, raw_mu, _) = a.deciding(4.38, Some(1.0));
        let (_, cal_mu, _) = b.deciding(4.38, Some(1.0));
        assert!(
            cal_mu > 0.5 && cal_mu > raw_mu + 0.3,
            "raw {raw_mu}, calibrated {cal_mu}"
        );
        assert!(cal_mu <= 1.0, "calibrated {cal_mu} above the true mu = 1");
        Ok(())
    }
}
