//! A DP-SGD trainer for logistic regression with canaries, the target of a one-run audit
//! (Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One (1) Training Run",
//! arXiv:2305.08846, §6).
//!
//! The trainer is DP-SGD (Abadi et al. 2016): Poisson sampling at rate q, per-example clipping
//! to ℓ2 norm C, the clipped sum plus N(0, (zC)²) per coordinate, T steps of
//! θ ← θ − η·(noisy sum)/(q·n) (a fixed denominator, so it leaks nothing). Its claim is read
//! off the privacy ledger (q, z, T): for q = 1 the exact Gaussian profile (T steps of the
//! Gaussian mechanism are exactly √T/z-GDP; Dong, Roth & Su 2022, Cor. 3.3), otherwise the PLD
//! accountant's pessimistic ε ([`crate::pld::epsilon_bounds`], Doroshenko et al. 2022). Both
//! hold for adding or removing one record whatever its gradient, and for the whole sequence of
//! iterates (adaptive composition), so they hold for each canary.
//!
//! # Canaries
//! The model has d = features + m coordinates; canary i owns coordinate `slot[i]`, a random
//! (seeded) permutation of the last m coordinates, which no real record touches ("Dirac
//! canaries" on random coordinates, as in Steinke et al. §6 and Andrew et al. 2024).
//! - [`ThreatModel::WhiteBox`]: *gradient canaries* — canary i's per-example gradient is the
//!   fixed vector g_i = C·e_slot(i) whatever θ (norm C, so clipping leaves it alone); every
//!   iterate is released. Score s_i = Σ_t ⟨θ_{t−1} − θ_t, g_i⟩.
//! - [`ThreatModel::BlackBox`]: *input canaries* — canary i is the record (x = e_slot(i),
//!   y = 1) and goes through the same loss and clipping as real records; only θ_T is released.
//!   Score s_i = −ℓ(θ_T; x_i, y_i) = ln σ(θ_T[slot(i)]).
//!
//! # Buggy twins
//! - `noise_scale` s ≠ 1: the noise added is s·z·C while the ledger records z (s = 0.5 is the
//!   missing factor of two, as the catalogue's `dpsgd-scaled-noise`).
//! - `sampling_rate_ratio` k > 1: the ledger records rate q/k while batches are drawn at rate q
//!   (the catalogue's `dpsgd-wrong-sampling-rate`).
//!
//! The data set is synthetic and generated from the caller's generator: `records` feature
//! vectors uniform on [−1, 1]^features, labels y ~ Bernoulli(σ(⟨θ*, x⟩)) for a random θ*.

use rand::{Rng, RngExt};
use rand_distr::StandardNormal;

use crate::accountant::gaussian_exact_epsilon;
use crate::dataset::Neighboring;
use crate::error::{MechanismError, Result};
use crate::mechanism::Params;

/// Id used in error messages and reports.
pub const ID: &str = "dpsgd-logistic-canaries";

/// What the auditor sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThreatModel {
    /// Every iterate is released; canaries are gradient canaries.
    WhiteBox,
    /// Only the final model is released; canaries are input records.
    BlackBox,
}

impl ThreatModel {
    /// Parses `white-box` or `black-box`.
    ///
    /// # Errors
    /// Anything else, naming the flag and what is allowed.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim() {
            "white-box" => Ok(Self::WhiteBox),
            "black-box" => Ok(Self::BlackBox),
            other => Err(MechanismError::InvalidParameter {
                mechanism: ID.into(),
                message: format!(
                    "--threat-model {other:?}; allowed: white-box (all iterates) or black-box \
                     (final model)"
                ),
            }),
        }
    }

    /// `white-box` or `black-box`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::WhiteBox => "white-box",
            Self::BlackBox => "black-box",
        }
    }
}

/// The trainer's configuration (all `--param`s).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TrainerConfig {
    /// n: real records.
    pub records: usize,
    /// Feature dimension of a real record.
    pub features: usize,
    /// T: training steps.
    pub steps: u64,
    /// q: Poisson sampling rate actually used.
    pub sampling_rate: f64,
    /// z: noise multiplier the ledger records.
    pub noise_multiplier: f64,
    /// C: per-example clipping norm.
    pub clip: f64,
    /// η: learning rate.
    pub learning_rate: f64,
    /// δ of the claim.
    pub delta: f64,
    /// s: the noise actually added is s·z·C (bug when s < 1).
    pub noise_scale: f64,
    /// k: the ledger records rate q/k (bug when k > 1).
    pub sampling_rate_ratio: f64,
}

impl TrainerConfig {
    /// Reads the `--param`s (defaults: 3000 records, 8 features, T = 25, q = 1, z = 10, C = 1,
    /// η = 0.5, δ = 1e-5: μ = √T/z = 0.5-GDP, ε = 1.99 at δ = 1e-5) and refuses unknown ones.
    ///
    /// # Errors
    /// A value outside its range or an unknown name, each naming the parameter.
    pub fn from_params(mut p: Params) -> Result<Self> {
        let records = p.take_in(ID, "records", 3000.0, 10.0, 1e6)?;
        let features = p.take_in(ID, "features", 8.0, 1.0, 1000.0)?;
        let steps = p.take_in(ID, "steps", 25.0, 1.0, 1e5)?;
        for (name, v) in [
            ("records", records),
            ("features", features),
            ("steps", steps),
        ] {
            if v.fract() != 0.0 {
                return Err(invalid(format!(
                    "--param {name} = {v}; allowed: a whole number"
                )));
            }
        }
        let config = Self {
            records: records as usize,
            features: features as usize,
            steps: steps as u64,
            sampling_rate: p.take_in(ID, "sampling_rate", 1.0, 1e-6, 1.0)?,
            noise_multiplier: p.take_in(ID, "noise_multiplier", 10.0, 0.05, 1e4)?,
            clip: p.take_in(ID, "clip", 1.0, 1e-6, 1e6)?,
            learning_rate: p.take_in(ID, "learning_rate", 0.5, 1e-9, 1e6)?,
            delta: p.take_in(ID, "delta", 1e-5, 1e-300, 0.5)?,
            noise_scale: p.take_in(ID, "noise_scale", 1.0, 1e-6, 1e3)?,
            sampling_rate_ratio: p.take_in(ID, "sampling_rate_ratio", 1.0, 1.0, 1e6)?,
        };
        p.finish(ID)?;
        Ok(config)
    }

    /// True when the trainer does what its ledger says (s ≥ 1 adds more noise than recorded,
    /// which is also correct; k = 1).
    pub fn is_correct(&self) -> bool {
        self.noise_scale >= 1.0 && self.sampling_rate_ratio == 1.0
    }
}

fn invalid(message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: ID.into(),
        message,
    }
}

/// A privacy statement read off a ledger (q, z, T) at δ.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LedgerClaim {
    /// ε at δ, rounded up.
    pub epsilon: f64,
    /// δ.
    pub delta: f64,
    /// μ when the ledger is full-batch (μ-GDP exactly), else none.
    pub mu: Option<f64>,
    /// Which accountant and ledger.
    pub source: String,
}

/// ε at δ for T steps of the Poisson-subsampled Gaussian at rate q, multiplier z: exact
/// Gaussian for q = 1, the PLD accountant's pessimistic value (rounded up by 1e-12 relative)
/// otherwise.
///
/// # Errors
/// From the accountants (q, z, T or δ out of range).
pub fn ledger_claim(q: f64, z: f64, steps: u64, delta: f64) -> Result<LedgerClaim> {
    if q >= 1.0 {
        let eps = gaussian_exact_epsilon(z, steps, delta)?;
        let mu = (steps as f64).sqrt() / z;
        Ok(LedgerClaim {
            epsilon: eps,
            delta,
            mu: Some(mu),
            source: format!(
                "exact Gaussian profile of {steps} full-batch steps, z = {z}: mu = {mu:.6} \
                 (Dong, Roth & Su 2022, Cor. 3.3; Balle & Wang 2018)"
            ),
        })
    } else {
        let (eps, _) = crate::pld::epsilon_bounds(q, z, steps, delta, Neighboring::AddRemove)?;
        Ok(LedgerClaim {
            epsilon: (eps * (1.0 + 1e-12)).next_up(),
            delta,
            mu: None,
            source: format!(
                "PLD accountant (pessimistic; Doroshenko et al. 2022) of {steps} steps of \
                 Poisson sampling q = {q} with Gaussian sums z = {z}"
            ),
        })
    }
}

impl TrainerConfig {
    /// The claim its ledger states: rate q/k, multiplier z.
    ///
    /// # Errors
    /// From [`ledger_claim`].
    pub fn claim(&self) -> Result<LedgerClaim> {
        ledger_claim(
            self.sampling_rate / self.sampling_rate_ratio,
            self.noise_multiplier,
            self.steps,
            self.delta,
        )
    }

    /// What the trainer actually provides (same accountant at rate q and multiplier s·z):
    /// equal to the claim for a correct trainer.
    ///
    /// # Errors
    /// From [`ledger_claim`].
    pub fn true_guarantee(&self) -> Result<LedgerClaim> {
        ledger_claim(
            self.sampling_rate,
            self.noise_multiplier * self.noise_scale.min(1.0),
            self.steps,
            self.delta,
        )
    }
}

/// The synthetic training set.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainingData {
    /// Row-major n × features.
    pub x: Vec<f64>,
    /// Labels in {0, 1}.
    pub y: Vec<f64>,
    /// Feature dimension.
    pub features: usize,
}

impl TrainingData {
    /// `records` rows uniform on [−1, 1]^features, labels from a random logistic model.
    pub fn synthetic<R: Rng + ?Sized>(records: usize, features: usize, rng: &mut R) -> Self {
        let scale = 2.0 / (features as f64).sqrt();
        let truth: Vec<f64> = (0..features)
            .map(|_| scale * rng.sample::<f64, _>(StandardNormal))
            .collect();
        let mut x = Vec::with_capacity(records * features);
        let mut y = Vec::with_capacity(records);
        for _ in 0..records {
            let row: Vec<f64> = (0..features)
                .map(|_| rng.random_range(-1.0..=1.0))
                .collect();
            let margin: f64 = row.iter().zip(&truth).map(|(a, b)| a * b).sum();
            y.push(if rng.random_bool(sigmoid(margin)) {
                1.0
            } else {
                0.0
            });
            x.extend(row);
        }
        Self { x, y, features }
    }

    /// n.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// True with no records.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }
}

/// The canaries: which model coordinate each owns.
#[derive(Clone, Debug, PartialEq)]
pub struct Canaries {
    /// slot[i]: canary i's coordinate, in features..features + m.
    pub slot: Vec<usize>,
}

impl Canaries {
    /// m canaries on a random permutation of the coordinates after the features.
    pub fn random<R: Rng + ?Sized>(m: usize, features: usize, rng: &mut R) -> Self {
        let mut slot: Vec<usize> = (features..features + m).collect();
        // Fisher–Yates.
        for i in (1..m).rev() {
            let j = rng.random_range(0..=i);
            slot.swap(i, j);
        }
        Self { slot }
    }

    /// m.
    pub fn len(&self) -> usize {
        self.slot.len()
    }

    /// True with no canaries.
    pub fn is_empty(&self) -> bool {
        self.slot.is_empty()
    }
}

/// What one training run releases.
#[derive(Clone, Debug, PartialEq)]
pub struct Release {
    /// White-box: θ_0, θ_1, …, θ_T; black-box: θ_T only.
    pub iterates: Vec<Vec<f64>>,
}

fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

/// Trains once on `data` plus the canaries with `included[i]`, drawing sampling and noise from
/// `rng`, and releases what `threat` allows.
///
/// # Errors
/// `included` and `canaries` differ in length; the data's feature dimension is not the
/// config's.
pub fn train<R: Rng + ?Sized>(
    config: &TrainerConfig,
    data: &TrainingData,
    canaries: &Canaries,
    included: &[bool],
    threat: ThreatModel,
    rng: &mut R,
) -> Result<Release> {
    if included.len() != canaries.len() {
        return Err(invalid(format!(
            "{} inclusion bits for {} canaries; allowed: one per canary",
            included.len(),
            canaries.len()
        )));
    }
    if data.features != config.features {
        return Err(invalid(format!(
            "data with {} features for a model of {}; allowed: equal",
            data.features, config.features
        )));
    }
    let f = config.features;
    let d = f + canaries.len();
    let q = config.sampling_rate;
    let c = config.clip;
    let sigma = config.noise_scale * config.noise_multiplier * c;
    let denominator = q * data.len().max(1) as f64;
    let step_size = config.learning_rate / denominator;
    let members: Vec<usize> = (0..canaries.len()).filter(|&i| included[i]).collect();
    let mut theta = vec![0.0_f64; d];
    let mut iterates = Vec::new();
    if threat == ThreatModel::WhiteBox {
        iterates.reserve(config.steps as usize + 1);
        iterates.push(theta.clone());
    }
    let mut grad = vec![0.0_f64; d];
    let mut g = vec![0.0_f64; f];
    for _ in 0..config.steps {
        grad.iter_mut().for_each(|v| *v = 0.0);
        // Real records: logistic-loss gradient, clipped to C.
        for (j, row) in data.x.chunks_exact(f).enumerate() {
            if q < 1.0 && !rng.random_bool(q) {
                continue;
            }
            let margin: f64 = row.iter().zip(&theta[..f]).map(|(a, b)| a * b).sum();
            let coef = sigmoid(margin) - data.y[j];
            for (gk, xk) in g.iter_mut().zip(row) {
                *gk = coef * xk;
            }
            let norm = g.iter().map(|v| v * v).sum::<f64>().sqrt();
            let factor = if norm > c { c / norm } else { 1.0 };
            for (acc, gk) in grad[..f].iter_mut().zip(&g) {
                *acc += factor * gk;
            }
        }
        // Canaries that are in the data set.
        for &i in &members {
            if q < 1.0 && !rng.random_bool(q) {
                continue;
            }
            let s = canaries.slot[i];
            let value = match threat {
                // Gradient canary: C·e_slot, whatever θ.
                ThreatModel::WhiteBox => c,
                // Input canary (x = e_slot, y = 1): (σ(θ_slot) − 1)·e_slot, clipped.
                ThreatModel::BlackBox => {
                    let v = sigmoid(theta[s]) - 1.0;
                    v.clamp(-c, c)
                }
            };
            grad[s] += value;
        }
        for (t, gv) in theta.iter_mut().zip(&grad) {
            let noise: f64 = rng.sample(StandardNormal);
            *t -= step_size * (gv + sigma * noise);
        }
        if threat == ThreatModel::WhiteBox {
            iterates.push(theta.clone());
        }
    }
    if threat == ThreatModel::BlackBox {
        iterates.push(theta);
    }
    Ok(Release { iterates })
}

/// The auditor's scores (higher = "in"), from the release and the public canary definitions
/// only: white-box Σ_t ⟨θ_{t−1} − θ_t, g_i⟩ with g_i = C·e_slot(i); black-box
/// −ℓ(θ_T; e_slot(i), 1) = ln σ(θ_T[slot(i)]).
///
/// # Errors
/// A release that does not fit the canaries (no iterates, or too short).
pub fn scores(
    release: &Release,
    canaries: &Canaries,
    clip: f64,
    threat: ThreatModel,
) -> Result<Vec<f64>> {
    let need = canaries.slot.iter().copied().max().map_or(0, |s| s + 1);
    if release.iterates.is_empty() || release.iterates.iter().any(|t| t.len() < need) {
        return Err(invalid(format!(
            "release of {} iterates does not cover canary coordinates up to {need}",
            release.iterates.len()
        )));
    }
    Ok(match threat {
        ThreatModel::WhiteBox => canaries
            .slot
            .iter()
            .map(|&s| {
                release
                    .iterates
                    .windows(2)
                    .map(|w| (w[0][s] - w[1][s]) * clip)
                    .sum()
            })
            .collect(),
        ThreatModel::BlackBox => {
            let last = &release.iterates[release.iterates.len() - 1];
            canaries
                .slot
                .iter()
                .map(|&s| sigmoid(last[s]).max(f64::MIN_POSITIVE).ln())
                .collect()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn defaults_and_claim() -> Result<()> {
        let c = TrainerConfig::from_params(Params::new())?;
        assert!(c.is_correct());
        let claim = c.claim()?;
        // μ = √25/10 = 0.5; exact Gaussian ε at 1e-5 ≈ 1.993 (see STATISTICS.md §1 curve).
        assert_eq!(claim.mu, Some(0.5));
        assert!(
            claim.epsilon > 1.99 && claim.epsilon < 2.0,
            "{}",
            claim.epsilon
        );
        assert_eq!(claim, c.true_guarantee()?);
        let twin = TrainerConfig::from_params(Params::new().set("noise_scale", 0.5))?;
        assert!(!twin.is_correct());
        assert_eq!(twin.true_guarantee()?.mu, Some(1.0));
        let wrong = TrainerConfig::from_params(Params::new().set("sampling_rate_ratio", 10.0))?;
        let wc = wrong.claim()?;
        assert!(wc.mu.is_none() && wc.epsilon < claim.epsilon);
        assert!(TrainerConfig::from_params(Params::new().set("bogus", 1.0)).is_err());
        assert!(TrainerConfig::from_params(Params::new().set("steps", 2.5)).is_err());
        assert!(ThreatModel::parse("grey-box").is_err());
        Ok(())
    }

    /// White-box, q = 1: a canary's score is C·(T·C·η/(qn))·[in] plus Gaussian noise, so the
    /// included canaries' mean score exceeds the excluded ones' by T·C²·η/(qn).
    #[test]
    fn white_box_scores_separate() -> Result<()> {
        let config = TrainerConfig::from_params(Params::new().set("noise_multiplier", 0.5))?;
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let data = TrainingData::synthetic(config.records, config.features, &mut rng);
        let canaries = Canaries::random(200, config.features, &mut rng);
        let included: Vec<bool> = (0..200).map(|i| i % 2 == 0).collect();
        let release = train(
            &config,
            &data,
            &canaries,
            &included,
            ThreatModel::WhiteBox,
            &mut rng,
        )?;
        assert_eq!(release.iterates.len(), 26);
        let s = scores(&release, &canaries, config.clip, ThreatModel::WhiteBox)?;
        let mean = |b: bool| {
            let v: Vec<f64> = (0..200)
                .filter(|&i| included[i] == b)
                .map(|i| s[i])
                .collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        let gap = 25.0 * 0.5 / 3000.0;
        let diff = mean(true) - mean(false);
        // Per-canary noise sd: √25·0.5·0.5/3000 = 4.2e-4; the mean of 100 has sd 4.2e-5 each.
        assert!((diff - gap).abs() < 4e-4, "{diff} vs {gap}");
        let bb = train(
            &config,
            &data,
            &canaries,
            &included,
            ThreatModel::BlackBox,
            &mut rng,
        )?;
        assert_eq!(bb.iterates.len(), 1);
        assert_eq!(
            scores(&bb, &canaries, 1.0, ThreatModel::BlackBox)?.len(),
            200
        );
        Ok(())
    }
}
