//! A DP-SGD trainer for logistic regression with canaries, the target of a one-run audit
//! (Steinke, Nasr & Jagielski 2023, "Privacy Auditing with One (1) Training Run",
//! arXiv:2305.08846, §6).
//!
//! The trainer is DP-SGD (Abadi et al. 2016): Poisson sampling at rate q, per-example clipping
//! to ℓ2 norm C, the clipped sum plus N(0, (zC)²) per coordinate, T steps of
//! θ ← θ − η·(noisy sum)/(q·n) (a fixed denominator, so it leaks nothing). Its claim is read
//! off the privacy ledger (q, z, T): for q = 1 the exact Gaussian profile (T steps of the
//! Gaussian mechanism are exactly √T/z-GDP; Dong, Roth & Su 2022, Cor. 3.3), otherwise the PLD
//! accountant's pessimistic ε ([`dp_audit_accounting::pld::epsilon_bounds`], Doroshenko et al. 2022). Both
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
//! `canary_norm` a (default 1) scales the canaries: a white-box gradient canary is a·C·e_slot(i),
//! a black-box input canary is x = a·e_slot(i). A correct trainer clips them to C like any
//! example, so a > 1 costs a correct trainer nothing and exposes twins that skip per-example
//! clipping.
//!
//! **Saturated black-box canaries** ([`BLACK_BOX_CANARY_NORM`], the black-box default of
//! [`TrainerConfig::from_params_for`]): an input canary's logistic-loss gradient is
//! (σ(a·θ[slot]) − 1)·a·e_slot, of norm a·(1 − σ(a·θ[slot])); at θ[slot] = 0 that is a/2, so
//! with a = 1 a canary carries C/2 (half the clipping norm) and is only μ/2-GDP in effect, while
//! the claim is μ. With a = 4 the norm is ≥ C as long as σ(4·θ[slot]) ≤ 3/4, i.e.
//! θ[slot] ≤ ln(3)/4 ≈ 0.27 (the defaults move θ[slot] by about 0.01): the clipped gradient is
//! then exactly −C·e_slot at every step, the canary's whole budget. This is sound for any a: a
//! correct trainer clips every example to C, and the claim holds for adding or removing any
//! record. The ranking of logistic-regression scores does not depend on a (ln σ(a·θ) is
//! increasing in θ for a > 0); for the network a larger a also puts more of the clipped norm on
//! the canary's own input column.
//!
//! # Models
//! - `hidden` = 0: logistic regression, θ ∈ R^d.
//! - `hidden` = h > 0: a multilayer network with one hidden layer of h tanh units and a sigmoid
//!   output, θ = (W₁ ∈ R^{h×d} row-major, b₁, w₂ ∈ R^h, b₂), logistic loss, W₁'s real-feature
//!   columns and w₂ initialised N(0, 1/fan-in) from the training stream (θ₀ is released
//!   white-box), the canary columns of W₁ at 0. Canary i's white-box coordinate is W₁[0,
//!   slot(i)], a weight no real record moves (real records are 0 on the canary inputs), so the
//!   same index `slot(i)` serves both models. Hand-written: no maintained Rust crate does
//!   per-example-clipped DP-SGD (linfa has no neural networks; burn/candle/tch compute batch
//!   gradients, and per-example gradients of a one-hidden-layer network are a few lines).
//!
//! # Buggy twins
//! - `noise_scale` s ≠ 1: the noise added is s·z·C while the ledger records z (s = 0.5 is the
//!   missing factor of two, as the catalogue's `dpsgd-scaled-noise`).
//! - `sampling_rate_ratio` k > 1: the ledger records rate q/k while batches are drawn at rate q
//!   (the catalogue's `dpsgd-wrong-sampling-rate`).
//! - `batch_clip` = 1: the batch *sum* is clipped to C instead of each example (the catalogue's
//!   `dpsgd-clip-batch-sum`). True guarantee: clipping is the projection onto the C-ball,
//!   1-Lipschitz, and both clipped sums lie in the ball, so one example moves the clipped sum by
//!   up to 2C (attained by D = {−g/2}, D' = D ∪ {g}, ‖g‖ = 2C): the ledger at multiplier z/2
//!   (q = 1: μ = 2√T/(s·z)). A one-run audit with many canaries cannot see it: the m canaries
//!   *together* move the clipped sum by at most 2C, so jointly they are only 2μ-GDP and each
//!   canary's share of the signal shrinks like 1/√m (measured in `tests/one_run.rs`).
//! - `clip_after_noise` = 1: per-example gradients are summed unclipped, the noise N(0, (zC)²)
//!   is added, and the noisy sum is clipped to C. True guarantee: **no finite ε** at any δ < 1:
//!   the unclipped sum has unbounded sensitivity, and for a record with gradient g, ‖g‖ → ∞,
//!   the clipped noisy sum tends to the point C·g/‖g‖, which the neighbour's output (a
//!   continuous law) hits with probability → 0, so H_{e^ε} → 1 for every ε. The white-box
//!   canaries see it when a > 1: the common clipping factor rescales signal and noise alike,
//!   so each canary is a √T·a/(s·z)-GDP shift.
//!
//! # Data
//! `synthetic` (default): `records` feature vectors uniform on [−1, 1]^features, labels
//! y ~ Bernoulli(σ(⟨θ*, x⟩)) for a random θ*, from the data stream. `winequality`: the red wine
//! quality data shipped by `linfa-datasets` (Cortez et al. 2009; 1599 records, 11
//! physico-chemical features), standardised per feature and divided by √11, label
//! quality ≥ 6.

use dp_audit_accounting::rdp::gaussian_exact_epsilon;
use rand::{Rng, RngExt};
use rand_distr::StandardNormal;

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
    /// h: hidden units (0: logistic regression).
    pub hidden: usize,
    /// a: canary scale (gradient canaries a·C·e_slot, input canaries a·e_slot).
    pub canary_norm: f64,
    /// Bug: clip the batch sum instead of each example.
    pub batch_clip: bool,
    /// Bug: sum unclipped gradients, add noise, clip the noisy sum.
    pub clip_after_noise: bool,
    /// The training data.
    pub dataset: DataSet,
}

/// Which training data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataSet {
    /// Drawn from the seed (`records` × `features`).
    Synthetic,
    /// The red wine quality data of `linfa-datasets` (1599 × 11).
    Winequality,
}

impl DataSet {
    /// Parses `synthetic` or `winequality`.
    ///
    /// # Errors
    /// Anything else, naming the flag.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim() {
            "synthetic" => Ok(Self::Synthetic),
            "winequality" => Ok(Self::Winequality),
            other => Err(invalid(format!(
                "--dataset {other:?}; allowed: synthetic or winequality"
            ))),
        }
    }

    /// `synthetic` or `winequality`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Synthetic => "synthetic",
            Self::Winequality => "winequality",
        }
    }
}

/// Records of the wine quality data.
pub const WINE_RECORDS: usize = 1599;
/// Features of the wine quality data.
pub const WINE_FEATURES: usize = 11;

/// The canary scale a of black-box input canaries when `canary_norm` is not given: saturated
/// canaries (module documentation). White-box gradient canaries keep a = 1.
pub const BLACK_BOX_CANARY_NORM: f64 = 4.0;

impl TrainerConfig {
    /// As [`Self::from_params_on`], with the threat model's default canary scale: a = 1
    /// white-box, [`BLACK_BOX_CANARY_NORM`] black-box (saturated input canaries; see the
    /// module documentation). A given `canary_norm` is kept.
    ///
    /// # Errors
    /// As [`Self::from_params_on`].
    pub fn from_params_for(p: Params, dataset: DataSet, threat: ThreatModel) -> Result<Self> {
        let given = p.iter().any(|(n, _)| n == "canary_norm");
        let mut config = Self::from_params_on(p, dataset)?;
        if threat == ThreatModel::BlackBox && !given {
            config.canary_norm = BLACK_BOX_CANARY_NORM;
        }
        Ok(config)
    }

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
            hidden: whole(&mut p, "hidden", 0.0, 0.0, 256.0)? as usize,
            canary_norm: p.take_in(ID, "canary_norm", 1.0, 1e-3, 1e3)?,
            batch_clip: flag(&mut p, "batch_clip")?,
            clip_after_noise: flag(&mut p, "clip_after_noise")?,
            dataset: DataSet::Synthetic,
        };
        p.finish(ID)?;
        if config.batch_clip && config.clip_after_noise {
            return Err(invalid(
                "--param batch_clip = 1 with clip_after_noise = 1; allowed: at most one of the \
                 two clipping twins"
                    .into(),
            ));
        }
        Ok(config)
    }

    /// As [`Self::from_params`], on `dataset`; `records` and `features` are then the data
    /// set's and may not be given.
    ///
    /// # Errors
    /// As [`Self::from_params`]; `records` or `features` given with the wine data.
    pub fn from_params_on(p: Params, dataset: DataSet) -> Result<Self> {
        if dataset == DataSet::Winequality
            && let Some((name, _)) = p.iter().find(|(n, _)| *n == "records" || *n == "features")
        {
            return Err(invalid(format!(
                "--param {name} with --dataset winequality; allowed: none (the wine data has \
                 {WINE_RECORDS} records of {WINE_FEATURES} features)"
            )));
        }
        let mut config = Self::from_params(p)?;
        if dataset == DataSet::Winequality {
            config.records = WINE_RECORDS;
            config.features = WINE_FEATURES;
        }
        config.dataset = dataset;
        Ok(config)
    }

    /// True when the trainer does what its ledger says (s ≥ 1 adds more noise than recorded,
    /// which is also correct; k = 1; per-example clipping before the noise).
    pub fn is_correct(&self) -> bool {
        self.noise_scale >= 1.0
            && self.sampling_rate_ratio == 1.0
            && !self.batch_clip
            && !self.clip_after_noise
    }

    /// Number of model parameters for m canaries (d = features + m inputs).
    pub fn parameters(&self, m: usize) -> usize {
        let d = self.features + m;
        if self.hidden == 0 {
            d
        } else {
            self.hidden * d + 2 * self.hidden + 1
        }
    }
}

fn whole(p: &mut Params, name: &str, default: f64, lo: f64, hi: f64) -> Result<f64> {
    let v = p.take_in(ID, name, default, lo, hi)?;
    if v.fract() != 0.0 {
        return Err(invalid(format!(
            "--param {name} = {v}; allowed: a whole number"
        )));
    }
    Ok(v)
}

fn flag(p: &mut Params, name: &str) -> Result<bool> {
    let v = p.take_in(ID, name, 0.0, 0.0, 1.0)?;
    if v != 0.0 && v != 1.0 {
        return Err(invalid(format!("--param {name} = {v}; allowed: 0 or 1")));
    }
    Ok(v == 1.0)
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
        let (eps, _) =
            dp_audit_accounting::pld::epsilon_bounds(q, z, steps, delta, Neighboring::AddRemove)?;
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

    /// The claim's accountant at its δ, both ways: the exact Gaussian ε for full batches, else
    /// the PLD accountant's optimistic and pessimistic ε on the same ledger (for the tightness
    /// line of a report; never used to decide).
    ///
    /// # Errors
    /// From the accountants.
    pub fn accountant_range(&self) -> Result<crate::mechanism::AccountantRange> {
        let q = self.sampling_rate / self.sampling_rate_ratio;
        if q >= 1.0 {
            let c = self.claim()?;
            return Ok(crate::mechanism::AccountantRange {
                delta: c.delta,
                optimistic: c.epsilon,
                pessimistic: c.epsilon,
                accountant: "exact Gaussian profile (full batches)".into(),
            });
        }
        let ledger = [
            dp_audit_accounting::LedgerEvent::Sampling {
                probability: q,
                repetitions: self.steps,
            },
            dp_audit_accounting::LedgerEvent::GaussianSum {
                noise_multiplier: self.noise_multiplier,
            },
        ];
        crate::mechanism::AccountantRange::pld_of_ledger(
            &ledger,
            Neighboring::AddRemove,
            self.delta,
        )
    }

    /// What the trainer actually provides (same accountant at rate q and multiplier s·z, halved
    /// for batch clipping whose sensitivity is 2C; none for clipping after the noise): equal
    /// to the claim for a correct trainer. See the module documentation for the derivations.
    ///
    /// # Errors
    /// From [`ledger_claim`].
    pub fn true_guarantee(&self) -> Result<LedgerClaim> {
        if self.clip_after_noise {
            return Ok(LedgerClaim {
                epsilon: f64::INFINITY,
                delta: self.delta,
                mu: None,
                source: "no finite epsilon at any delta < 1: the noise is added to unclipped \
                         gradients (unbounded sensitivity) and the clipped noisy sum of a record \
                         with a huge gradient is a point mass its neighbour's output misses"
                    .into(),
            });
        }
        let sensitivity = if self.batch_clip { 2.0 } else { 1.0 };
        ledger_claim(
            self.sampling_rate,
            self.noise_multiplier * self.noise_scale.min(1.0) / sensitivity,
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

    /// The red wine quality data of `linfa-datasets` (see the module documentation): 1599
    /// records, 11 features standardised and divided by √11, label quality ≥ 6.
    ///
    /// # Errors
    /// A constant feature (none in the shipped data).
    pub fn winequality() -> Result<Self> {
        let ds = linfa_datasets::winequality();
        let records = ds.records();
        let (n, f) = records.dim();
        let mut x = vec![0.0; n * f];
        for k in 0..f {
            let col = records.column(k);
            let mean = col.sum() / n as f64;
            let var = col.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
            if var <= 0.0 {
                return Err(invalid(format!("wine data feature {k} is constant")));
            }
            let scale = 1.0 / (var.sqrt() * (f as f64).sqrt());
            for (i, v) in col.iter().enumerate() {
                x[i * f + k] = (v - mean) * scale;
            }
        }
        let y = ds
            .targets()
            .iter()
            .map(|&q| if q >= 6 { 1.0 } else { 0.0 })
            .collect();
        Ok(Self { x, y, features: f })
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

/// Sparse gradient of one example: (parameter index, value) pairs.
type Sparse = Vec<(usize, f64)>;

/// The model's logit at an input given as (index, value) pairs of the d inputs.
fn forward(
    config: &TrainerConfig,
    d: usize,
    theta: &[f64],
    x: &[(usize, f64)],
    act: &mut [f64],
) -> f64 {
    let h = config.hidden;
    if h == 0 {
        return x.iter().map(|&(k, v)| theta[k] * v).sum();
    }
    let (b1, w2, b2) = (h * d, h * d + h, h * d + 2 * h);
    let mut out = theta[b2];
    for (j, a) in act.iter_mut().enumerate() {
        let z: f64 = theta[b1 + j] + x.iter().map(|&(k, v)| theta[j * d + k] * v).sum::<f64>();
        *a = z.tanh();
        out += theta[w2 + j] * *a;
    }
    out
}

/// The logistic-loss gradient of one example (inputs as (index, value) pairs, label y) into
/// `out` (cleared first).
fn example_gradient(
    config: &TrainerConfig,
    d: usize,
    theta: &[f64],
    x: &[(usize, f64)],
    y: f64,
    act: &mut [f64],
    out: &mut Sparse,
) {
    out.clear();
    let coef = sigmoid(forward(config, d, theta, x, act)) - y;
    let h = config.hidden;
    if h == 0 {
        out.extend(x.iter().map(|&(k, v)| (k, coef * v)));
        return;
    }
    let (b1, w2, b2) = (h * d, h * d + h, h * d + 2 * h);
    for (j, &a) in act.iter().enumerate() {
        let dz = coef * theta[w2 + j] * (1.0 - a * a);
        out.extend(x.iter().map(|&(k, v)| (j * d + k, dz * v)));
        out.push((b1 + j, dz));
        out.push((w2 + j, coef * a));
    }
    out.push((b2, coef));
}

/// Scales a sparse vector to ℓ2 norm at most c.
fn clip_sparse(g: &mut Sparse, c: f64) {
    let norm = g.iter().map(|(_, v)| v * v).sum::<f64>().sqrt();
    if norm > c {
        let f = c / norm;
        g.iter_mut().for_each(|(_, v)| *v *= f);
    }
}

/// Scales a dense vector to ℓ2 norm at most c.
fn clip_dense(g: &mut [f64], c: f64) {
    let norm = g.iter().map(|v| v * v).sum::<f64>().sqrt();
    if norm > c {
        let f = c / norm;
        g.iter_mut().for_each(|v| *v *= f);
    }
}

/// The initial parameters: 0 for logistic regression; for the network W₁'s real-feature
/// columns N(0, 1/features) and w₂ N(0, 1/h) from `rng`, the rest 0.
fn initial_parameters<R: Rng + ?Sized>(
    config: &TrainerConfig,
    d: usize,
    p: usize,
    rng: &mut R,
) -> Vec<f64> {
    let mut theta = vec![0.0_f64; p];
    let h = config.hidden;
    if h > 0 {
        let f = config.features;
        let s1 = 1.0 / (f as f64).sqrt();
        for j in 0..h {
            for k in 0..f {
                theta[j * d + k] = s1 * rng.sample::<f64, _>(StandardNormal);
            }
        }
        let s2 = 1.0 / (h as f64).sqrt();
        for j in 0..h {
            theta[h * d + h + j] = s2 * rng.sample::<f64, _>(StandardNormal);
        }
    }
    theta
}

/// Trains once on `data` plus the canaries with `included[i]`, drawing the initial network
/// weights, sampling and noise from `rng`, and releases what `threat` allows.
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
    let p = config.parameters(canaries.len());
    let members: Vec<usize> = (0..canaries.len()).filter(|&i| included[i]).collect();
    let mut theta = initial_parameters(config, d, p, rng);
    let mut iterates = Vec::new();
    if threat == ThreatModel::WhiteBox {
        iterates.reserve(config.steps as usize + 1);
        iterates.push(theta.clone());
    }
    let extra = Extra::Canaries {
        slots: &canaries.slot,
        members: &members,
        threat,
    };
    descend(config, data, d, &mut theta, &extra, rng, |t| {
        if threat == ThreatModel::WhiteBox {
            iterates.push(t.to_vec());
        }
    });
    if threat == ThreatModel::BlackBox {
        iterates.push(theta);
    }
    Ok(Release { iterates })
}

/// What joins the real records at every step of [`descend`].
enum Extra<'a> {
    /// The canaries of a one-run audit: the `members` (indices into `slots`) that are in.
    Canaries {
        slots: &'a [usize],
        members: &'a [usize],
        threat: ThreatModel,
    },
    /// Extra input records (sparse x over the d inputs, label y), as [`train_final`]'s.
    Records(&'a [(Vec<(usize, f64)>, f64)]),
}

/// The T steps of DP-SGD shared by [`train`] and [`train_final`], from `theta` (updated in
/// place) on d inputs; `on_step` sees θ_t after each step. Per step, in this order: one
/// Poisson coin per real record (q < 1), one per extra example, one standard normal per
/// parameter — the draw order [`train`] has always had (tests/byte_identity.rs, goldens).
fn descend<R: Rng + ?Sized>(
    config: &TrainerConfig,
    data: &TrainingData,
    d: usize,
    theta: &mut [f64],
    extra: &Extra<'_>,
    rng: &mut R,
    mut on_step: impl FnMut(&[f64]),
) {
    let f = config.features;
    let p = theta.len();
    let q = config.sampling_rate;
    let c = config.clip;
    let a = config.canary_norm;
    let sigma = config.noise_scale * config.noise_multiplier * c;
    let per_example_clip = !(config.batch_clip || config.clip_after_noise);
    let denominator = q * data.len().max(1) as f64;
    let step_size = config.learning_rate / denominator;
    let mut grad = vec![0.0_f64; p];
    let mut g: Sparse = Vec::new();
    let mut x: Vec<(usize, f64)> = Vec::with_capacity(f);
    let mut act = vec![0.0_f64; config.hidden];
    let extras = match extra {
        Extra::Canaries { members, .. } => members.len(),
        Extra::Records(r) => r.len(),
    };
    for _ in 0..config.steps {
        grad.iter_mut().for_each(|v| *v = 0.0);
        // Real records.
        for (j, row) in data.x.chunks_exact(f).enumerate() {
            if q < 1.0 && !rng.random_bool(q) {
                continue;
            }
            x.clear();
            x.extend(row.iter().copied().enumerate());
            example_gradient(config, d, theta, &x, data.y[j], &mut act, &mut g);
            if per_example_clip {
                clip_sparse(&mut g, c);
            }
            for &(k, v) in &g {
                grad[k] += v;
            }
        }
        // Canaries that are in the data set, or the extra records.
        for e in 0..extras {
            if q < 1.0 && !rng.random_bool(q) {
                continue;
            }
            match extra {
                Extra::Canaries {
                    slots,
                    members,
                    threat,
                } => {
                    let s = slots[members[e]];
                    match threat {
                        // Gradient canary: a·C·e_slot, whatever θ.
                        ThreatModel::WhiteBox => {
                            g.clear();
                            g.push((s, a * c));
                        }
                        // Input canary (x = a·e_slot, y = 1).
                        ThreatModel::BlackBox => {
                            example_gradient(config, d, theta, &[(s, a)], 1.0, &mut act, &mut g);
                        }
                    }
                }
                Extra::Records(r) => {
                    let (rx, ry) = &r[e];
                    example_gradient(config, d, theta, rx, *ry, &mut act, &mut g);
                }
            }
            if per_example_clip {
                clip_sparse(&mut g, c);
            }
            for &(k, v) in &g {
                grad[k] += v;
            }
        }
        if config.batch_clip {
            clip_dense(&mut grad, c);
        }
        for gv in grad.iter_mut() {
            let noise: f64 = rng.sample(StandardNormal);
            *gv += sigma * noise;
        }
        if config.clip_after_noise {
            clip_dense(&mut grad, c);
        }
        for (t, gv) in theta.iter_mut().zip(&grad) {
            *t -= step_size * gv;
        }
        on_step(theta);
    }
}

/// A record given to [`train_final`]: sparse x over the model's d inputs, label y ∈ {0, 1}.
pub type InputRecord = (Vec<(usize, f64)>, f64);

/// Checks θ₀ and the extra records against a model with d = features + `extra_inputs` inputs.
fn check_final(
    config: &TrainerConfig,
    data: &TrainingData,
    extra_inputs: usize,
    extra: &[InputRecord],
    theta0: &[f64],
) -> Result<usize> {
    if data.features != config.features {
        return Err(invalid(format!(
            "data with {} features for a model of {}; allowed: equal",
            data.features, config.features
        )));
    }
    let d = config.features + extra_inputs;
    let p = config.parameters(extra_inputs);
    if theta0.len() != p {
        return Err(invalid(format!(
            "an initial model of {} parameters for a model of {p} ({d} inputs, hidden = {}); \
             allowed: exactly {p}",
            theta0.len(),
            config.hidden
        )));
    }
    if let Some(bad) = theta0.iter().find(|v| !v.is_finite()) {
        return Err(invalid(format!(
            "initial model parameter {bad}; allowed: finite numbers"
        )));
    }
    for (x, y) in extra {
        if *y != 0.0 && *y != 1.0 {
            return Err(invalid(format!("extra record label {y}; allowed: 0 or 1")));
        }
        if let Some(&(k, v)) = x.iter().find(|(k, v)| *k >= d || !v.is_finite()) {
            return Err(invalid(format!(
                "extra record input ({k}, {v}); allowed: index below {d}, finite value"
            )));
        }
    }
    Ok(d)
}

/// Trains once from the given initial model `theta0` on `data` plus the `extra` records (each
/// goes through the same loss, Poisson sampling and per-example clipping as a real record),
/// with d = features + `extra_inputs` inputs (extra inputs no real record touches), and
/// returns θ_T only: the final model. The step loop is [`train`]'s; sampling coins and noise
/// come from `rng` in the same order (no draw for θ₀, which is given).
///
/// DP-SGD's guarantee ([`TrainerConfig::claim`]) holds for every θ₀ and every record, so an
/// auditor may choose both (Annamalai & De Cristofaro 2024).
///
/// # Errors
/// `theta0` is not of [`TrainerConfig::parameters`]`(extra_inputs)` finite values; an extra
/// record's index is not below d or its label not 0 or 1; the data's feature dimension is
/// not the config's.
pub fn train_final<R: Rng + ?Sized>(
    config: &TrainerConfig,
    data: &TrainingData,
    extra_inputs: usize,
    extra: &[InputRecord],
    theta0: &[f64],
    rng: &mut R,
) -> Result<Vec<f64>> {
    let d = check_final(config, data, extra_inputs, extra, theta0)?;
    let mut theta = theta0.to_vec();
    descend(
        config,
        data,
        d,
        &mut theta,
        &Extra::Records(extra),
        rng,
        |_| {},
    );
    Ok(theta)
}

/// Non-private full-batch gradient descent on `data` alone (logistic loss, unclipped mean
/// gradient, step η = `learning_rate`), `steps` steps from `theta0`, on d = features +
/// `extra_inputs` inputs: the pre-trained initial model of Annamalai & De Cristofaro (2024).
/// Deterministic (no generator): the extra inputs' parameters of a logistic regression are
/// left where `theta0` puts them (no real record touches them).
///
/// # Errors
/// As [`train_final`].
pub fn pretrain(
    config: &TrainerConfig,
    data: &TrainingData,
    extra_inputs: usize,
    theta0: &[f64],
    steps: usize,
) -> Result<Vec<f64>> {
    let d = check_final(config, data, extra_inputs, &[], theta0)?;
    let f = config.features;
    let mut theta = theta0.to_vec();
    let scale = config.learning_rate / data.len().max(1) as f64;
    let mut grad = vec![0.0_f64; theta.len()];
    let mut g: Sparse = Vec::new();
    let mut x: Vec<(usize, f64)> = Vec::with_capacity(f);
    let mut act = vec![0.0_f64; config.hidden];
    for _ in 0..steps {
        grad.iter_mut().for_each(|v| *v = 0.0);
        for (j, row) in data.x.chunks_exact(f).enumerate() {
            x.clear();
            x.extend(row.iter().copied().enumerate());
            example_gradient(config, d, &theta, &x, data.y[j], &mut act, &mut g);
            for &(k, v) in &g {
                grad[k] += v;
            }
        }
        for (t, gv) in theta.iter_mut().zip(&grad) {
            *t -= scale * gv;
        }
    }
    Ok(theta)
}

/// The model's logit at input x (sparse over d = features + `extra_inputs` inputs) under θ.
///
/// # Errors
/// θ is not of [`TrainerConfig::parameters`]`(extra_inputs)` values, or an index is not below d.
pub fn logit(
    config: &TrainerConfig,
    extra_inputs: usize,
    theta: &[f64],
    x: &[(usize, f64)],
) -> Result<f64> {
    let d = config.features + extra_inputs;
    let p = config.parameters(extra_inputs);
    if theta.len() != p || x.iter().any(|(k, _)| *k >= d) {
        return Err(invalid(format!(
            "a model of {} parameters and an input of indices {:?}; allowed: {p} parameters, \
             indices below {d}",
            theta.len(),
            x.iter().map(|(k, _)| *k).collect::<Vec<_>>()
        )));
    }
    let mut act = vec![0.0_f64; config.hidden];
    Ok(forward(config, d, theta, x, &mut act))
}

/// The logistic-loss gradient of one example (x sparse over d = features + `extra_inputs`
/// inputs, label y) at θ, before clipping, as (parameter index, value) pairs.
///
/// # Errors
/// As [`logit`].
pub fn input_gradient(
    config: &TrainerConfig,
    extra_inputs: usize,
    theta: &[f64],
    x: &[(usize, f64)],
    y: f64,
) -> Result<Vec<(usize, f64)>> {
    logit(config, extra_inputs, theta, x)?;
    let d = config.features + extra_inputs;
    let mut act = vec![0.0_f64; config.hidden];
    let mut g = Vec::new();
    example_gradient(config, d, theta, x, y, &mut act, &mut g);
    Ok(g)
}

/// The trainer's own random initial model on d = features + `extra_inputs` inputs (0 for
/// logistic regression; the network's N(0, 1/fan-in) weights from `rng`), as [`train`] draws it.
pub fn random_initial_model<R: Rng + ?Sized>(
    config: &TrainerConfig,
    extra_inputs: usize,
    rng: &mut R,
) -> Vec<f64> {
    let d = config.features + extra_inputs;
    initial_parameters(config, d, config.parameters(extra_inputs), rng)
}

/// The auditor's scores (higher = "in"), from the release and the public canary definitions
/// only: white-box Σ_t ⟨θ_{t−1} − θ_t, g_i⟩ with g_i = a·C·e_slot(i) (the sign and scale do not
/// change the ranking; C is kept so scores read in gradient units); black-box
/// −ℓ(θ_T; a·e_slot(i), 1) = ln σ(model(a·e_slot(i))).
///
/// # Errors
/// A release that does not fit the canaries and model (no iterates, or too short).
pub fn scores(
    release: &Release,
    canaries: &Canaries,
    config: &TrainerConfig,
    threat: ThreatModel,
) -> Result<Vec<f64>> {
    let d = config.features + canaries.len();
    let need = config.parameters(canaries.len());
    if release.iterates.is_empty() || release.iterates.iter().any(|t| t.len() < need) {
        return Err(invalid(format!(
            "release of {} iterates does not cover the {need} parameters of the model",
            release.iterates.len()
        )));
    }
    let clip = config.clip;
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
            let mut act = vec![0.0_f64; config.hidden];
            canaries
                .slot
                .iter()
                .map(|&s| {
                    let logit = forward(config, d, last, &[(s, config.canary_norm)], &mut act);
                    sigmoid(logit).max(f64::MIN_POSITIVE).ln()
                })
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
        let s = scores(&release, &canaries, &config, ThreatModel::WhiteBox)?;
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
            scores(&bb, &canaries, &config, ThreatModel::BlackBox)?.len(),
            200
        );
        Ok(())
    }
    /// The network's hand-written per-example gradient against central finite differences of
    /// the logistic loss (step 1e-6; agreement to 1e-6 absolute, far above the O(h²) ≈ 1e-12
    /// truncation and rounding error).
    #[test]
    fn network_gradient_matches_finite_differences() -> Result<()> {
        let config =
            TrainerConfig::from_params(Params::new().set("hidden", 3.0).set("features", 2.0))?;
        let m = 2;
        let d = config.features + m;
        let p = config.parameters(m);
        assert_eq!(p, 3 * 4 + 7);
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let mut theta = initial_parameters(&config, d, p, &mut rng);
        for t in theta.iter_mut() {
            *t += 0.3 * rng.sample::<f64, _>(StandardNormal);
        }
        let x = [(0usize, 0.4), (1, -0.7), (3, 1.5)];
        let y = 1.0;
        let mut act = vec![0.0; 3];
        let mut g = Vec::new();
        example_gradient(&config, d, &theta, &x, y, &mut act, &mut g);
        let mut dense = vec![0.0; p];
        for &(k, v) in &g {
            dense[k] += v;
        }
        let loss = |th: &[f64]| {
            let mut act = vec![0.0; 3];
            let z = forward(&config, d, th, &x, &mut act);
            -(y * sigmoid(z).ln() + (1.0 - y) * (1.0 - sigmoid(z)).ln())
        };
        for k in 0..p {
            let (mut a, mut b) = (theta.clone(), theta.clone());
            a[k] += 1e-6;
            b[k] -= 1e-6;
            let fd = (loss(&a) - loss(&b)) / 2e-6;
            assert!(
                (fd - dense[k]).abs() < 1e-6,
                "parameter {k}: {fd} vs {}",
                dense[k]
            );
        }
        Ok(())
    }

    /// `train_final` shares `train`'s step loop and draw order: a black-box canary included in
    /// `train` and the same record given to `train_final` from θ₀ = 0 give the same bits.
    #[test]
    fn train_final_matches_train() -> Result<()> {
        let config = TrainerConfig::from_params(
            Params::new()
                .set("records", 200.0)
                .set("sampling_rate", 0.5)
                .set("canary_norm", 3.0),
        )?;
        let mut rng = ChaCha20Rng::seed_from_u64(8);
        let data = TrainingData::synthetic(config.records, config.features, &mut rng);
        let canaries = Canaries { slot: vec![8] };
        let mut r1 = ChaCha20Rng::seed_from_u64(9);
        let a = train(
            &config,
            &data,
            &canaries,
            &[true],
            ThreatModel::BlackBox,
            &mut r1,
        )?;
        let mut r2 = ChaCha20Rng::seed_from_u64(9);
        let extra = vec![(vec![(8usize, 3.0)], 1.0)];
        let b = train_final(&config, &data, 1, &extra, &[0.0; 9], &mut r2)?;
        assert_eq!(a.iterates[0], b);
        // A given θ₀ is where training starts: shifting θ₀ on the untouched extra input shifts
        // θ_T there by the same amount when the record is absent.
        let mut r3 = ChaCha20Rng::seed_from_u64(9);
        let zero = train_final(&config, &data, 1, &[], &[0.0; 9], &mut r3)?;
        let mut start = vec![0.0; 9];
        start[8] = -2.0;
        let mut r4 = ChaCha20Rng::seed_from_u64(9);
        let moved = train_final(&config, &data, 1, &[], &start, &mut r4)?;
        assert!((moved[8] - zero[8] + 2.0).abs() < 1e-12);
        assert_eq!(moved[..8], zero[..8]);
        assert!(train_final(&config, &data, 1, &extra, &[0.0; 8], &mut r4).is_err());
        assert!(
            train_final(
                &config,
                &data,
                1,
                &[(vec![(9, 1.0)], 1.0)],
                &[0.0; 9],
                &mut r4
            )
            .is_err()
        );
        Ok(())
    }

    /// Non-private pre-training lowers the mean logistic loss, is deterministic and leaves the
    /// extra input's parameter of a logistic regression where θ₀ put it.
    #[test]
    fn pretrain_fits_the_data() -> Result<()> {
        let config = TrainerConfig::from_params(Params::new().set("records", 500.0))?;
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let data = TrainingData::synthetic(config.records, config.features, &mut rng);
        let loss = |th: &[f64]| -> Result<f64> {
            let mut s = 0.0;
            for (j, row) in data.x.chunks_exact(8).enumerate() {
                let x: Vec<(usize, f64)> = row.iter().copied().enumerate().collect();
                let z = logit(&config, 1, th, &x)?;
                let p = sigmoid(z);
                s -= if data.y[j] == 1.0 {
                    p.ln()
                } else {
                    (1.0 - p).ln()
                };
            }
            Ok(s / 500.0)
        };
        let mut start = vec![0.0; 9];
        start[8] = 0.7;
        let fitted = pretrain(&config, &data, 1, &start, 100)?;
        assert_eq!(fitted, pretrain(&config, &data, 1, &start, 100)?);
        assert_eq!(fitted[8], 0.7);
        assert!(
            loss(&fitted)? < loss(&start)? - 0.05,
            "{} vs {}",
            loss(&fitted)?,
            loss(&start)?
        );
        Ok(())
    }

    #[test]
    fn twins_true_guarantees_and_params() -> Result<()> {
        let bc = TrainerConfig::from_params(Params::new().set("batch_clip", 1.0))?;
        assert!(!bc.is_correct());
        // Sensitivity 2C against the recorded noise: μ = 2·√25/10 = 1.
        assert_eq!(bc.true_guarantee()?.mu, Some(1.0));
        assert_eq!(bc.claim()?.mu, Some(0.5));
        let an = TrainerConfig::from_params(Params::new().set("clip_after_noise", 1.0))?;
        assert!(!an.is_correct());
        assert!(an.true_guarantee()?.epsilon.is_infinite());
        assert!(TrainerConfig::from_params(Params::new().set("batch_clip", 0.5)).is_err());
        assert!(TrainerConfig::from_params(Params::new().set("hidden", 2.5)).is_err());
        assert!(
            TrainerConfig::from_params(
                Params::new()
                    .set("batch_clip", 1.0)
                    .set("clip_after_noise", 1.0)
            )
            .is_err()
        );
        assert!(
            TrainerConfig::from_params_on(Params::new().set("records", 10.0), DataSet::Winequality)
                .is_err()
        );
        assert!(DataSet::parse("mnist").is_err());
        Ok(())
    }

    /// The black-box default canary scale is saturated: at θ[slot] = 0 the input canary's
    /// gradient norm a·(1 − σ(0)) = a/2 is 2 ≥ C = 1, so it is clipped to exactly C.
    #[test]
    fn black_box_canaries_saturate_by_default() -> Result<()> {
        let bb = TrainerConfig::from_params_for(
            Params::new(),
            DataSet::Synthetic,
            ThreatModel::BlackBox,
        )?;
        assert_eq!(bb.canary_norm, BLACK_BOX_CANARY_NORM);
        let wb = TrainerConfig::from_params_for(
            Params::new(),
            DataSet::Synthetic,
            ThreatModel::WhiteBox,
        )?;
        assert_eq!(wb.canary_norm, 1.0);
        let given = TrainerConfig::from_params_for(
            Params::new().set("canary_norm", 1.0),
            DataSet::Synthetic,
            ThreatModel::BlackBox,
        )?;
        assert_eq!(given.canary_norm, 1.0);
        let d = bb.features + 1;
        let theta = vec![0.0; d];
        let mut g = Vec::new();
        let s = bb.features;
        example_gradient(&bb, d, &theta, &[(s, bb.canary_norm)], 1.0, &mut [], &mut g);
        assert_eq!(g, vec![(s, -2.0)]);
        clip_sparse(&mut g, bb.clip);
        assert_eq!(g, vec![(s, -1.0)]);
        Ok(())
    }

    #[test]
    fn wine_data_loads() -> Result<()> {
        let w = TrainingData::winequality()?;
        assert_eq!((w.len(), w.features), (WINE_RECORDS, WINE_FEATURES));
        let good = w.y.iter().filter(|&&y| y == 1.0).count();
        // 855 of the 1599 red wines have quality ≥ 6.
        assert_eq!(good, 855);
        let mean0: f64 = w.x.chunks_exact(WINE_FEATURES).map(|r| r[0]).sum::<f64>() / 1599.0;
        assert!(mean0.abs() < 1e-12);
        let c = TrainerConfig::from_params_on(Params::new(), DataSet::Winequality)?;
        assert_eq!((c.records, c.features), (WINE_RECORDS, WINE_FEATURES));
        Ok(())
    }
}
