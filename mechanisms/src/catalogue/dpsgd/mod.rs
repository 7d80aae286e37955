//! DP-SGD / DP-GD (Abadi et al. 2016) in the general form of McMahan, Andrew, Erlingsson, Chien,
//! Mironov, Papernot & Kairouz (2018), "A General Approach to Adding Differential Privacy to
//! Iterative Training Procedures" (arXiv:1812.06210), and four realistic mistakes.
//!
//! (Why one file of ~1,400 lines: the five entries share one training loop, ledger and witness,
//! and each bug is a one-line change to that loop; keeping them together shows the difference.
//! The catalogue-v2 issue turns entries into declarations and will shrink it. Tests are in
//! `dpsgd/tests.rs`.)
//!
//! The rest of the DP-SGD family lives beside it in this folder, each file its own entries:
//! `variants/` (DP-SGD as it is really run), `microbatch.rs`, `shuffled.rs`, `fixed_batches/`,
//! `batch_coupling/`, `normalisation.rs` and `adam.rs`; [`specs`] lists this module's entries,
//! then theirs, in that order.
//!
//! | id | status (defaults) | claim (defaults) | true guarantee (defaults) |
//! |---|---|---|---|
//! | `dpsgd` | correct | (1, 1e-5) | the claim is tight on the witness |
//! | `dpsgd-scaled-noise` | buggy | (1, 1e-5) | ε = 2.1547 at δ = 1e-5; δ = 1.04e-2 at ε = 1 |
//! | `dpsgd-clip-batch-sum` | buggy | (1, 1e-5) | ε = 2.1547 at δ = 1e-5; δ = 1.04e-2 at ε = 1 |
//! | `dpsgd-wrong-sampling-rate` | buggy | (0.0576, 1e-5) | ε = 0.5861 at δ = 1e-5; δ = 3.16e-2 at ε = 0.0576 |
//! | `dpsgd-joint-clip-rescale` | buggy | (1, 1e-5) | ε = 2.1547 at δ = 1e-5; δ = 1.04e-2 at ε = 1 |
//!
//! δ at the claimed ε is the larger of the two directions on the entry's witness, which is a
//! worst pair; the claim allows 1e-5. All true values were cross-checked against an independent
//! scipy computation.
//!
//! The claim is never computed inside the training loop: every entry builds a privacy ledger
//! ([`RdpAccountant`]: one Poisson sampling event per step, followed by the Gaussian sum queries
//! answered on that sample) from its configuration, and the claim is read off the ledger
//! afterwards (see [`claim_from_ledger`]). Buggy entries get their *true* guarantee from an exact
//! computation of the privacy profile of the released final model (see [`final_model_deltas`]);
//! their status (correct or buggy) is decided by that computation, so e.g. `noise_scale ≥ 1` is
//! correct.

use std::ops::Range;

use rand::Rng;
use statrs::function::gamma::ln_gamma;

use super::{Entry, Spec, Status};
use crate::accountant::{LedgerEvent, RdpAccountant, gaussian_exact_epsilon};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::math::{analytic_gaussian_sigma, gaussian_dp_delta, std_normal_cdf};
use crate::mechanism::{Mechanism, Params};
use crate::noise::GaussianNoise;
use crate::pld::{Estimate, PldAccountant, poisson_gaussian_pld};
use crate::samples::Samples;

// The rest of the family, each its own group of entries, listed after this module's in this
// order (the order `audit list` shows).
mod adam;
mod batch_coupling;
mod fixed_batches;
mod microbatch;
mod normalisation;
mod shuffled;
mod variants;

/// The family's entries: this module's, then its submodules' in listing order.
pub(crate) fn specs() -> Vec<Spec> {
    let mut all = own_specs();
    all.extend(variants::specs());
    all.extend(microbatch::specs());
    all.extend(shuffled::specs());
    all.extend(fixed_batches::specs());
    all.extend(batch_coupling::specs());
    all.extend(normalisation::specs());
    all.extend(adam::specs());
    all
}

/// This module's entries: DP-SGD / DP-GD and its four mistakes.
fn own_specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "dpsgd",
            summary: "DP-GD/DP-SGD (clip, sum, Gaussian noise) with its claim from its privacy ledger (PLD)",
            build: dpsgd,
        },
        Spec {
            id: "dpsgd-scaled-noise",
            summary: "DP-GD whose noise is a fraction of the accounted noise (the missing factor)",
            build: dpsgd_scaled_noise,
        },
        Spec {
            id: "dpsgd-clip-batch-sum",
            summary: "DP-GD that clips the batch sum instead of each example",
            build: dpsgd_clip_batch_sum,
        },
        Spec {
            id: "dpsgd-wrong-sampling-rate",
            summary: "DP-SGD accounted with a smaller sampling rate than it uses",
            build: dpsgd_wrong_sampling_rate,
        },
        Spec {
            id: "dpsgd-joint-clip-rescale",
            summary: "DP-GD that rescales every gradient jointly instead of clipping each",
            build: dpsgd_joint_clip_rescale,
        },
    ]
}

/// Smallest ε a ledger-based claim states: a claim needs ε > 0, and a larger ε is a weaker (so
/// still true) claim.
const MIN_CLAIM_EPSILON: f64 = 1e-6;

/// Relative slack added to an ε read from the RDP accountant (covers the floating-point error of
/// the conversion; the exact-Gaussian route rounds up by itself).
const RDP_EPSILON_SLACK: f64 = 1e-12;

/// A buggy variant is labelled buggy when the exact δ of its released model at the claimed ε
/// exceeds the claimed δ by more than this relative amount. Closer to the boundary than that,
/// no audit can tell the difference and the numerical profile is accurate to about that.
const STATUS_TOLERANCE: f64 = 1e-6;

/// How a record becomes a gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordForm {
    /// The one-step/gradient form: the loss is linear, ℓ(θ; x) = ⟨θ, x⟩, so a record x ∈
    /// [−1, 1]^d *is* its gradient, whatever the model.
    Gradient,
    /// Logistic regression: a record is (x, y) with features x ∈ [−1, 1]^d and the label
    /// y = clamp(last coordinate, 0, 1) (y ∈ {0, 1} is the usual case; values in between are
    /// soft labels, negative values count as 0). The gradient of the logistic loss at θ is
    /// (σ(⟨θ, x⟩) − y)·x.
    Logistic,
}

/// How per-example gradients are clipped (McMahan et al. 2018: several vector groups, each with
/// its own clipping and noise, or joint clipping with per-group scale parameters).
///
/// The d model coordinates are split into k contiguous groups of sizes m_j as equal as possible
/// (the first d mod k groups have one coordinate more).
#[derive(Clone, Debug, PartialEq)]
pub enum Clipping {
    /// Separate clipping per group: the part of group j is clipped to ℓ2 norm C_j = C·√(m_j/d)
    /// (so Σ C_j² = C²) and group j of the sum gets noise N(0, σ_j²) per coordinate with
    /// σ_j = z·√k·C_j. The ledger records k Gaussian sum queries of noise multiplier σ_j/C_j =
    /// z√k on the same sample, which compose to one query of multiplier z (Mironov, Talwar &
    /// Zhang 2019, §3). With k = 1 this is plain DP-SGD: clip to C, noise z·C.
    PerGroup,
    /// Joint clipping with per-group scale parameters s_j: the gradient's group j is divided by
    /// s_j, the whole scaled vector is clipped to ℓ2 norm C, the scaled batch sum gets noise
    /// N(0, (zC)²) per coordinate, and only then group j is multiplied back by s_j
    /// (post-processing). The ledger records one Gaussian sum query of multiplier z.
    Joint {
        /// s_j > 0, one per group.
        scales: Vec<f64>,
    },
}

/// The mistake a variant makes; [`Fault::None`] is the correct mechanism. Every variant's true
/// guarantee is computed exactly for the released final model (see [`final_model_deltas`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    /// No mistake: `dpsgd`.
    None,
    /// `dpsgd-scaled-noise`.
    ///
    /// # Bug
    /// The noise has standard deviation s·σ_j while the ledger records the multiplier z the
    /// noise was meant to have: the claim is accounted for noise the mechanism does not add.
    /// s = 0.5 is the common "missing factor of two" (../shared/STATISTICS.md §3; Tramèr et al.
    /// 2022, "Debugging Differential Privacy: A Case Study for Privacy Auditing", found a
    /// sensitivity off by a batch-size factor in a published implementation, the same family).
    /// s ≥ 1 adds *more* noise than accounted and is correct.
    ///
    /// # True guarantee
    /// The final model is the Gaussian mechanism with multiplier s·z (q = 1: exactly
    /// √T/(s·z)-GDP). Defaults (s = 0.5, q = 1, T = 1): μ = 2/z = 0.536, ε = 2.1547 at
    /// δ = 1e-5; at the claimed ε = 1, H_e = 1.04e-2 in both directions on the witness (the
    /// claim allows 1e-5). With q < 1 and T > 1 the final model of the linear loss hides much of
    /// the transcript (the noise of every step accumulates, the record shows in about qT of
    /// them), so a noise deficit can leave the claim intact; the status is computed, not
    /// assumed.
    ScaledNoise {
        /// s > 0.
        factor: f64,
    },
    /// `dpsgd-clip-batch-sum`.
    ///
    /// # Bug
    /// The batch *sum* is clipped to C instead of each example. Clipping is the projection onto
    /// the C-ball, 1-Lipschitz, and both clipped sums lie in the ball, so one example moves the
    /// clipped sum by up to Δ_j = min(2C_j, √m_j) per group (a record of [−1, 1]^{m_j} has norm
    /// ≤ √m_j), not C_j. Realized by D = {−g/2}, D' = D ∪ {g} with ‖g_j‖ = Δ_j: the sum moves
    /// from −g/2 to g/2, both inside the ball. The entry is full-batch (q = 1), where this is the
    /// exact worst case. With d = 1, Δ = min(2C, 1) exceeds C only for C < 1 (with C = 1 the
    /// mistake is harmless and the entry is correct), so the default clip is C = 0.5, where
    /// Δ = 2C.
    ///
    /// # True guarantee
    /// Exactly √T·(Σ_j (Δ_j/σ_j)²)^{1/2}-GDP. Defaults (d = 1, C = 0.5): Δ = 1 = 2C against
    /// noise z·C, μ = 2/z = 0.536, ε = 2.1547 at δ = 1e-5; H_e = 1.04e-2 at the claimed
    /// ε = 1.
    ClipBatchSum,
    /// `dpsgd-wrong-sampling-rate`.
    ///
    /// # Bug
    /// Batches are drawn at rate q = b/n (batch size b over the size n of the dataset actually
    /// sampled), but the accountant is fed b/N with N = k·n the size of the wrong dataset (e.g.
    /// the full corpus a shard was cut from): the ledger's sampling events say q/k.
    ///
    /// # True guarantee
    /// The final model's exact profile at rate q. Defaults (q = 0.5, k = 10, z = 3.7306,
    /// T = 1): claimed ε = 0.0576 (PLD accountant at q = 0.05); true ε = 0.5861 at δ = 1e-5;
    /// at the claimed ε the witness has H = 3.16e-2 (the larger direction; 1.83e-2 at the
    /// RDP claim ε = 0.1106 the entry used to make).
    WrongSamplingRate {
        /// k = N/n ≥ 1.
        dataset_size_ratio: f64,
    },
    /// `dpsgd-joint-clip-rescale`.
    ///
    /// # Bug
    /// Joint clipping with per-group scales multiplies group j back by s_j *before* the noise
    /// is added instead of after: an example's contribution x·min(1, C/‖x/s‖) then has norm up
    /// to Δ = max_x ‖x‖·min(1, C/‖x/s‖) ≤ min(max_j s_j·C, √d), not C, against noise z·C. (Δ is
    /// computed exactly: fill the groups in decreasing order of scale until ‖x/s‖ = C.)
    ///
    /// # True guarantee
    /// The Gaussian mechanism with sensitivity Δ and noise z·C (q = 1: exactly √T·Δ/(zC)-GDP).
    /// Defaults (d = 2, two groups, scales (1, 2), C = 0.5): Δ = 1 (the record (0, 1)),
    /// μ = 2/z = 0.536, ε = 2.1547 at δ = 1e-5; H_e = 1.04e-2 at the claimed ε = 1.
    RescaleBeforeNoise,
}

/// Settings of a [`DpSgd`] mechanism.
#[derive(Clone, Debug, PartialEq)]
pub struct DpSgdConfig {
    /// How records become gradients.
    pub form: RecordForm,
    /// Model dimension d (= output dimension).
    pub dim: usize,
    /// Number k of vector groups (1 ≤ k ≤ d).
    pub groups: usize,
    /// Per-group or joint clipping.
    pub clipping: Clipping,
    /// Poisson sampling rate q ∈ (0, 1] (1 is full-batch DP-GD).
    pub sampling_rate: f64,
    /// Noise multiplier z > 0.
    pub noise_multiplier: f64,
    /// Clipping norm C > 0.
    pub clip: f64,
    /// Number of steps T ≥ 1.
    pub steps: u64,
    /// Learning rate η > 0 (multiplies the noisy sum; see [`DpSgd`]).
    pub learning_rate: f64,
    /// δ of the claim, in (0, 1).
    pub delta: f64,
    /// The mistake, if any.
    pub fault: Fault,
    /// What is released: 0 = the final model θ_T only; k ≥ 1 = the checkpoints θ_k, θ_2k, …
    /// and θ_T (k = 1: every iterate, the threat model of Nasr et al. 2021, 2023, for which the
    /// ledger's accounting is exact).
    pub release_every: u64,
    /// Claim the whole privacy profile of the ledger (`dpsgd:Q:Z:T`) instead of one (ε, δ).
    pub profile_claim: bool,
}

/// DP-SGD / DP-GD with Poisson sampling, per-example clipping, Gaussian noise and a privacy
/// ledger (Abadi et al. 2016, "Deep Learning with Differential Privacy"; McMahan et al. 2018,
/// "A General Approach to Adding Differential Privacy to Iterative Training Procedures").
///
/// From θ₀ = 0, for t = 1, …, T:
/// 1. Poisson sampling: every record joins the batch B_t independently with probability q;
/// 2. per-example gradients g_i = ∇ℓ(θ_{t−1}; x_i), clipped (see [`Clipping`]);
/// 3. the clipped sum plus Gaussian noise (per group, see [`Clipping`]);
/// 4. θ_t = θ_{t−1} − η·(noisy sum).
///
/// The update uses the noisy *sum* times η, not an average over the batch: dividing by the
/// batch size or by q·|D| would make the scale of the release depend on the private dataset
/// size (add/remove neighbors). McMahan et al.'s fixed-denominator estimator divides by a
/// public constant, which is absorbed into η here.
///
/// # Claim
/// (ε, δ)-DP under add/remove-one neighbors, ε computed after the fact from the privacy ledger
/// (T × [sampling at rate q; the Gaussian sum queries of one step]) by [`claim_from_ledger`]:
/// the exact Gaussian privacy profile when every sampling event has q = 1 (T steps of
/// multiplier z are exactly √T/z-GDP; Dong, Roth & Su 2022, Corollary 3.3), otherwise the PLD
/// accountant of the Poisson-subsampled Gaussian (pessimistic Connect-the-Dots, an upper bound;
/// [`crate::pld`]), which replaced the RDP accountant (Mironov, Talwar & Zhang 2019; loose by
/// 10–40 % in ε, room in which a real bug could pass). With `profile_claim = 1` the entry
/// claims the ledger's whole profile (`dpsgd:Q:Z:T`) instead of one (ε, δ). With
/// `release_every = k ≥ 1` it releases the checkpoints θ_k, θ_2k, … (k = 1: every iterate,
/// for which this accounting is exact), audited through the `checkpoints:d` transform. The final model is a post-processing of the transcript the
/// ledger accounts for. With the defaults (q = 1, T = 1, C = 1, z = the analytic Gaussian σ for
/// (1, 1e-5); Balle & Wang 2018) the claim is (1, 1e-5), exactly tight on the witness.
///
/// # Output
/// d reals: the final model θ_T. For T = 1 and the gradient form this is −η·(clipped sum + noise).
#[derive(Clone, Debug)]
pub struct DpSgd {
    id: &'static str,
    config: DpSgdConfig,
    groups: Vec<Range<usize>>,
    /// Per-group clipping norm C_j (per-group clipping) or C (joint clipping).
    group_clip: Vec<f64>,
    /// Standard deviation of the noise actually added to each coordinate of group j (in the
    /// scaled space for joint clipping).
    noise_std: Vec<f64>,
    /// The privacy ledger: what the implementation believes it does.
    ledger: RdpAccountant,
    /// ε of the claim, computed from the ledger at construction.
    epsilon: f64,
    /// The ledger's accountant range, once computed (see [`DpSgd::compute_accountant_range`]).
    accountant: std::sync::OnceLock<Option<crate::mechanism::AccountantRange>>,
}

fn invalid(id: &str, message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: id.to_string(),
        message,
    }
}

/// Contiguous groups of sizes as equal as possible (the first d mod k one larger).
fn split_groups(dim: usize, groups: usize) -> Vec<Range<usize>> {
    let (base, extra) = (dim / groups, dim % groups);
    let mut start = 0;
    (0..groups)
        .map(|j| {
            let len = base + usize::from(j < extra);
            let r = start..start + len;
            start += len;
            r
        })
        .collect()
}

/// Scales `v` so that its ℓ2 norm is at most `bound`.
fn clip_to(v: &mut [f64], bound: f64) {
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    if norm > bound {
        let f = bound / norm;
        v.iter_mut().for_each(|x| *x *= f);
    }
}

fn sigmoid(t: f64) -> f64 {
    if t >= 0.0 {
        1.0 / (1.0 + (-t).exp())
    } else {
        let e = t.exp();
        e / (1.0 + e)
    }
}

impl DpSgd {
    /// Validates `config`, builds the privacy ledger and computes the claim from it.
    ///
    /// # Errors
    /// Any setting outside its range (q ∉ (0, 1], z ≤ 0, C ≤ 0, T = 0, η ≤ 0, δ ∉ (0, 1),
    /// d = 0, k ∉ [1, d], a scale ≤ 0 or a scale list of the wrong length, a fault parameter out
    /// of range), a fault combined with the logistic form or with a clipping it is not defined
    /// for; an accountant error.
    pub fn new(id: &'static str, config: DpSgdConfig) -> Result<Self> {
        let c = &config;
        let pos = |v: f64| v.is_finite() && v > 0.0;
        if !(pos(c.sampling_rate) && c.sampling_rate <= 1.0) {
            return Err(invalid(
                id,
                format!(
                    "sampling_rate = {}; allowed: 0 < sampling_rate ≤ 1",
                    c.sampling_rate
                ),
            ));
        }
        for (name, v) in [
            ("noise_multiplier", c.noise_multiplier),
            ("clip", c.clip),
            ("learning_rate", c.learning_rate),
        ] {
            if !pos(v) {
                return Err(invalid(
                    id,
                    format!("{name} = {v}; allowed: a finite number > 0"),
                ));
            }
        }
        if c.steps == 0 {
            return Err(invalid(id, "steps = 0; allowed: steps ≥ 1".into()));
        }
        if !(c.delta > 0.0 && c.delta < 1.0) {
            return Err(invalid(
                id,
                format!("delta = {}; allowed: 0 < delta < 1", c.delta),
            ));
        }
        if c.dim == 0 || c.groups == 0 || c.groups > c.dim {
            return Err(invalid(
                id,
                format!(
                    "dim = {}, groups = {}; allowed: dim ≥ 1 and 1 ≤ groups ≤ dim",
                    c.dim, c.groups
                ),
            ));
        }
        if let Clipping::Joint { scales } = &c.clipping
            && (scales.len() != c.groups || !scales.iter().all(|&s| pos(s)))
        {
            return Err(invalid(
                id,
                format!(
                    "group scales {scales:?}; allowed: {} finite numbers > 0 (one per group)",
                    c.groups
                ),
            ));
        }
        let joint = matches!(c.clipping, Clipping::Joint { .. });
        match c.fault {
            Fault::None => {}
            _ if c.form == RecordForm::Logistic => {
                return Err(invalid(
                    id,
                    "the buggy variants take the gradient form only (their true guarantee is \
                     computed for it)"
                        .into(),
                ));
            }
            Fault::ScaledNoise { factor } if !pos(factor) => {
                return Err(invalid(
                    id,
                    format!("noise_scale = {factor}; allowed: a finite number > 0"),
                ));
            }
            Fault::WrongSamplingRate { dataset_size_ratio }
                if !(dataset_size_ratio.is_finite() && dataset_size_ratio >= 1.0) =>
            {
                return Err(invalid(
                    id,
                    format!(
                        "dataset_size_ratio = {dataset_size_ratio}; allowed: a finite number ≥ 1"
                    ),
                ));
            }
            Fault::ClipBatchSum if joint || c.sampling_rate != 1.0 => {
                return Err(invalid(
                    id,
                    format!(
                        "batch-sum clipping is defined here for per-group clipping and full \
                         batches only; got sampling_rate = {}{}; allowed: sampling_rate = 1",
                        c.sampling_rate,
                        if joint { " with joint clipping" } else { "" }
                    ),
                ));
            }
            Fault::RescaleBeforeNoise if !joint => {
                return Err(invalid(
                    id,
                    "rescaling before the noise needs joint clipping".into(),
                ));
            }
            _ => {}
        }

        let groups = split_groups(c.dim, c.groups);
        let k = c.groups as f64;
        let noise_factor = match c.fault {
            Fault::ScaledNoise { factor } => factor,
            _ => 1.0,
        };
        let (group_clip, noise_std): (Vec<f64>, Vec<f64>) = match &c.clipping {
            Clipping::PerGroup => groups
                .iter()
                .map(|g| {
                    let cj = c.clip * (g.len() as f64 / c.dim as f64).sqrt();
                    (cj, noise_factor * c.noise_multiplier * k.sqrt() * cj)
                })
                .unzip(),
            Clipping::Joint { .. } => groups
                .iter()
                .map(|_| (c.clip, noise_factor * c.noise_multiplier * c.clip))
                .unzip(),
        };
        for &s in &noise_std {
            GaussianNoise::new(s)?;
        }

        // The ledger: what the implementation *believes* it does.
        let accounted_rate = match c.fault {
            Fault::WrongSamplingRate { dataset_size_ratio } => c.sampling_rate / dataset_size_ratio,
            _ => c.sampling_rate,
        };
        let mut ledger = RdpAccountant::new();
        ledger.record_sampling(accounted_rate, c.steps)?;
        match &c.clipping {
            Clipping::PerGroup => {
                for _ in 0..c.groups {
                    ledger.record_gaussian_sum(c.noise_multiplier * k.sqrt())?;
                }
            }
            Clipping::Joint { .. } => ledger.record_gaussian_sum(c.noise_multiplier)?,
        }
        let (epsilon, _) = claim_from_ledger(&ledger, c.delta)?;
        Ok(Self {
            id,
            config,
            groups,
            group_clip,
            noise_std,
            ledger,
            epsilon,
            accountant: std::sync::OnceLock::new(),
        })
    }

    fn scales(&self) -> Option<&[f64]> {
        match &self.config.clipping {
            Clipping::Joint { scales } => Some(scales),
            Clipping::PerGroup => None,
        }
    }

    /// Length of a record.
    fn record_dim(&self) -> usize {
        match self.config.form {
            RecordForm::Gradient => self.config.dim,
            RecordForm::Logistic => self.config.dim + 1,
        }
    }

    /// Clips a gradient (or, for batch-sum clipping, a batch sum) in place. For joint clipping
    /// the result is in the scaled space, unless the fault rescales before the noise.
    fn clip_example(&self, g: &mut [f64]) {
        match self.scales() {
            None => {
                for (r, &cj) in self.groups.iter().zip(&self.group_clip) {
                    clip_to(&mut g[r.clone()], cj);
                }
            }
            Some(scales) => {
                for (r, &s) in self.groups.iter().zip(scales) {
                    g[r.clone()].iter_mut().for_each(|x| *x /= s);
                }
                clip_to(g, self.config.clip);
                if self.config.fault == Fault::RescaleBeforeNoise {
                    for (r, &s) in self.groups.iter().zip(scales) {
                        g[r.clone()].iter_mut().for_each(|x| *x *= s);
                    }
                }
            }
        }
    }

    /// Raw gradient of `record` at `theta`.
    fn gradient(&self, record: &[f64], theta: &[f64], out: &mut [f64]) {
        let d = self.config.dim;
        match self.config.form {
            RecordForm::Gradient => out.copy_from_slice(&record[..d]),
            RecordForm::Logistic => {
                let x = &record[..d];
                let y = record[d].clamp(0.0, 1.0);
                let margin: f64 = x.iter().zip(theta).map(|(a, b)| a * b).sum();
                let r = sigmoid(margin) - y;
                out.iter_mut().zip(x).for_each(|(o, xi)| *o = r * xi);
            }
        }
    }

    /// Exact ℓ2 contribution of the worst record to one step's (clipped) sum, per group, for
    /// per-group clipping: min(C_j, √m_j), or min(2C_j, √m_j) when the batch sum is clipped.
    fn per_group_sensitivities(&self) -> Vec<f64> {
        let factor = if self.config.fault == Fault::ClipBatchSum {
            2.0
        } else {
            1.0
        };
        self.groups
            .iter()
            .zip(&self.group_clip)
            .map(|(g, &cj)| (factor * cj).min((g.len() as f64).sqrt()))
            .collect()
    }

    /// μ of one step on the worst pair, in units of the noise actually added: the ℓ2 norm of the
    /// worst record's contribution after whitening each group by its noise standard deviation.
    pub fn true_step_mu(&self) -> f64 {
        match self.scales() {
            None => self
                .per_group_sensitivities()
                .iter()
                .zip(&self.noise_std)
                .map(|(delta, s)| (delta / s).powi(2))
                .sum::<f64>()
                .sqrt(),
            Some(scales) => {
                // Noise is isotropic (same std in every group) in the space it is added in.
                let (_, contribution) = joint_worst_record(&self.groups, scales, self.config.clip);
                let sensitivity = if self.config.fault == Fault::RescaleBeforeNoise {
                    contribution
                } else {
                    // In the scaled space: min(C, max ‖x/s‖).
                    let max_scaled: f64 = self
                        .groups
                        .iter()
                        .zip(scales)
                        .map(|(g, s)| g.len() as f64 / (s * s))
                        .sum::<f64>()
                        .sqrt();
                    self.config.clip.min(max_scaled)
                };
                sensitivity / self.noise_std[0]
            }
        }
    }

    /// The exact privacy profile of the released final model: δ(ε), the larger of the two
    /// directions on the worst neighboring pair. Gradient form only (see
    /// [`final_model_deltas`] for why the worst pair reduces to one dimension).
    pub fn true_delta(&self, epsilon: f64) -> f64 {
        let (a, b) = final_model_deltas(
            self.config.sampling_rate,
            self.true_step_mu(),
            self.config.steps,
            epsilon,
        );
        a.max(b)
    }

    /// The exact ε at δ of the released final model (gradient form).
    pub fn true_epsilon(&self, delta: f64) -> Result<f64> {
        let mu = self.true_step_mu();
        if self.config.sampling_rate >= 1.0 {
            Ok(gaussian_exact_epsilon(1.0 / mu, self.config.steps, delta)?)
        } else {
            Ok(final_model_epsilon(
                self.config.sampling_rate,
                mu,
                self.config.steps,
                delta,
            ))
        }
    }

    /// Releases per run: 1 (the final model) or the number of checkpoints.
    fn checkpoints(&self) -> u64 {
        match self.config.release_every {
            0 => 1,
            k => self.config.steps.div_ceil(k),
        }
    }

    /// Bounds (lower, upper) on δ(ε) of the whole transcript (every iterate released) on the
    /// worst pair: T steps of the Poisson-subsampled Gaussian at the true rate with noise
    /// multiplier 1/μ_step. Exact at q = 1 (√T·μ-GDP); the optimistic and pessimistic PLDs
    /// (Connect-the-Dots) otherwise.
    fn transcript_delta_bounds(&self, epsilon: f64) -> Result<(f64, f64)> {
        let (q, t) = (self.config.sampling_rate, self.config.steps);
        let mu = self.true_step_mu();
        if q >= 1.0 {
            let d = gaussian_dp_delta(epsilon, (t as f64).sqrt() * mu);
            return Ok((d, d));
        }
        let pld = |e| {
            poisson_gaussian_pld(
                q,
                1.0 / mu,
                t,
                Neighboring::AddRemove,
                e,
                crate::pld::DEFAULT_DISCRETIZATION,
            )
        };
        let lo = pld(Estimate::Optimistic)?.delta(epsilon);
        let hi = pld(Estimate::Pessimistic)?.delta(epsilon);
        Ok((lo, hi))
    }

    /// Ground truth: correct when an upper bound on the true δ of what is released, at the
    /// claimed ε, is within the claimed δ (up to [`STATUS_TOLERANCE`] relative); buggy when a
    /// lower bound exceeds it. For the final model both bounds are its exact profile; for every
    /// iterate, the transcript's PLD bounds; for sparser checkpoints, the final model (a
    /// post-processing of the checkpoints) below and the transcript above. A setting where the
    /// two disagree is an error rather than a guess.
    fn status(&self, bug: String) -> Result<Status> {
        if self.config.fault == Fault::None {
            return Ok(Status::Correct);
        }
        let delta = self.config.delta;
        let limit = delta * (1.0 + STATUS_TOLERANCE);
        let (lower, upper) = match self.config.release_every {
            0 => {
                let d = self.true_delta(self.epsilon);
                (d, d)
            }
            1 => self.transcript_delta_bounds(self.epsilon)?,
            _ => (
                self.true_delta(self.epsilon),
                self.transcript_delta_bounds(self.epsilon)?.1,
            ),
        };
        if upper <= limit {
            return Ok(Status::Correct);
        }
        if lower <= limit {
            return Err(invalid(
                self.id,
                format!(
                    "with release_every = {}, the true delta at the claimed epsilon lies between \
                     {lower:.3e} and {upper:.3e} around the claimed {delta:e}, so the status is \
                     not determined; allowed: release_every = 0 or 1, or parameters further from \
                     the boundary",
                    self.config.release_every
                ),
            ));
        }
        let mu = self.true_step_mu();
        let t = self.config.steps;
        if self.config.release_every >= 1 {
            let q = self.config.sampling_rate;
            let (what, true_eps) = if q >= 1.0 {
                (
                    format!("exactly {:.6}-GDP", (t as f64).sqrt() * mu),
                    gaussian_exact_epsilon(1.0 / mu, t, delta)?,
                )
            } else {
                (
                    format!(
                        "the transcript of T = {t} Poisson-subsampled Gaussian steps at q = {q} with \
                         noise multiplier 1/μ = {:.6} on the worst pair (epsilon from the optimistic PLD, a lower bound)",
                        1.0 / mu
                    ),
                    poisson_gaussian_pld(
                        q,
                        1.0 / mu,
                        t,
                        Neighboring::AddRemove,
                        Estimate::Optimistic,
                        crate::pld::DEFAULT_DISCRETIZATION,
                    )?
                    .epsilon(delta)?,
                )
            };
            return Ok(Status::Buggy {
                bug,
                true_guarantee: format!(
                    "no better than ({true_eps:.6}, {delta:e})-DP for the {} released checkpoint(s) \
                     ({what}); at the claimed epsilon = {:.6} their delta is at least {lower:.4e}",
                    self.checkpoints(),
                    self.epsilon
                ),
            });
        }
        let at_claim = lower;
        let true_eps = self.true_epsilon(delta)?;
        let how = if self.config.sampling_rate >= 1.0 {
            format!(
                "exactly {:.6}-GDP (√T·μ with T = {t}, per-step μ = {mu:.6} on the worst pair), \
                 epsilon from the exact Gaussian profile",
                (t as f64).sqrt() * mu
            )
        } else {
            format!(
                "exact profile of Σ_k Bin(T, q)(k)·N(k·μ, T) against N(0, T) with T = {t}, q = {}, \
                 per-step μ = {mu:.6} on the worst pair",
                self.config.sampling_rate
            )
        };
        Ok(Status::Buggy {
            bug,
            true_guarantee: format!(
                "({true_eps:.6}, {delta:e})-DP for the released final model and no smaller epsilon \
                 ({how}); at the claimed epsilon = {:.6} its delta is {at_claim:.4e}",
                self.epsilon
            ),
        })
    }
}

/// The record of [−1, 1]^d maximizing ‖x‖·min(1, C/‖x/s‖) (the contribution of an example when
/// joint clipping rescales before the noise), and that maximum Δ.
///
/// With u_j = ‖x_j‖² ∈ [0, m_j], A = Σ u_j and B = Σ u_j/s_j², the objective squared is A for
/// B ≤ C² and C²·A/B beyond. The largest A at a given B, A*(B), is reached by filling the groups
/// in decreasing order of s_j (a fractional knapsack) and is concave with A*(0) = 0, so A*(B)/B
/// is non-increasing and the maximum is A*(min(C², Σ m_j/s_j²)). The same record maximizes
/// ‖x/s‖ up to C, so it is also a worst record for correct joint clipping.
fn joint_worst_record(groups: &[Range<usize>], scales: &[f64], clip: f64) -> (Vec<f64>, f64) {
    let dim = groups.last().map_or(0, |g| g.end);
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by(|&a, &b| scales[b].total_cmp(&scales[a]));
    let mut budget = clip * clip;
    let mut x = vec![0.0; dim];
    let mut total = 0.0;
    for j in order {
        if budget <= 0.0 {
            break;
        }
        let (m, s2) = (groups[j].len() as f64, scales[j] * scales[j]);
        let u = if m / s2 <= budget { m } else { budget * s2 };
        budget -= u / s2;
        total += u;
        let v = (u / m).sqrt().min(1.0);
        x[groups[j].clone()].iter_mut().for_each(|e| *e = v);
    }
    (x, total.sqrt())
}

impl DpSgd {
    /// See [`Mechanism::accountant_range`]; computed once per mechanism (every confirming audit
    /// of a run asks for it).
    fn compute_accountant_range(&self) -> Option<crate::mechanism::AccountantRange> {
        if self.config.profile_claim {
            return None;
        }
        let ledger = self.ledger.ledger();
        let full = ledger.iter().all(|e| match e {
            LedgerEvent::Sampling { probability, .. } => *probability >= 1.0,
            _ => true,
        });
        if full {
            return Some(crate::mechanism::AccountantRange {
                delta: self.config.delta,
                optimistic: self.epsilon,
                pessimistic: self.epsilon,
                accountant: "exact Gaussian profile (full batches)".into(),
            });
        }
        crate::mechanism::AccountantRange::pld_of_ledger(
            ledger,
            Neighboring::AddRemove,
            self.config.delta,
        )
        .ok()
    }
}

impl Mechanism for DpSgd {
    fn id(&self) -> &str {
        self.id
    }
    fn claim(&self) -> PrivacyClaim {
        if self.config.profile_claim {
            // The ledger's whole profile: the accounted rate and the effective multiplier of one
            // step's queries (z for joint clipping; k queries of z√k compose to z).
            let q = match self.config.fault {
                Fault::WrongSamplingRate { dataset_size_ratio } => {
                    self.config.sampling_rate / dataset_size_ratio
                }
                _ => self.config.sampling_rate,
            };
            return PrivacyClaim::SubsampledGaussian {
                sampling_rate: q,
                noise_multiplier: self.config.noise_multiplier,
                steps: self.config.steps,
                neighbors: Neighboring::AddRemove,
                policy: crate::accountant::SamplingPolicy::Poisson,
            };
        }
        PrivacyClaim::Approximate {
            epsilon: self.epsilon,
            delta: self.config.delta,
        }
    }
    /// The ledger's accountant at the claim's δ: exact for full batches (q = 1, the claim is the
    /// exact Gaussian ε), else the PLD accountant's optimistic and pessimistic ε. `None` for a
    /// profile claim.
    fn accountant_range(&self) -> Option<crate::mechanism::AccountantRange> {
        self.accountant
            .get_or_init(|| self.compute_accountant_range())
            .clone()
    }
    /// Recomputed from the ledger (the same computation that gave the claim).
    fn claim_source(&self) -> String {
        claim_from_ledger(&self.ledger, self.config.delta)
            .map_or_else(|e| format!("privacy ledger: {e}"), |(_, source)| source)
    }
    fn neighboring(&self) -> Neighboring {
        Neighboring::AddRemove
    }
    fn domain(&self) -> RecordDomain {
        RecordDomain::real(-1.0, 1.0, self.record_dim())
    }
    fn output_dim(&self) -> usize {
        self.config.dim * self.checkpoints() as usize
    }
    /// Released checkpoints are audited through `checkpoints:d` (per model coordinate the final
    /// value and the extreme increments): a record that joins few of many steps shows in a few
    /// increments, not in their sum.
    fn recommended_transform(&self) -> Option<String> {
        (self.config.release_every > 0).then(|| format!("checkpoints:{}", self.config.dim))
    }
    fn sample(&self, data: &Dataset, n: usize, rng: &mut dyn Rng) -> Result<Samples> {
        let c = &self.config;
        let (d, rd) = (c.dim, self.record_dim());
        if data.dim() != rd {
            return Err(MechanismError::InvalidDataset(format!(
                "records have dimension {}, {} takes dimension {rd}",
                data.dim(),
                self.id
            )));
        }
        let records: Vec<f64> = data.records().iter().copied().collect();
        let n_records = data.len();
        let noise: Vec<GaussianNoise> = self
            .noise_std
            .iter()
            .map(|&s| GaussianNoise::new(s))
            .collect::<Result<_>>()?;
        let batch_clip = c.fault == Fault::ClipBatchSum;
        // Gradient form with per-example clipping: the clipped gradients do not depend on θ.
        let precomputed: Option<Vec<f64>> =
            (c.form == RecordForm::Gradient && !batch_clip).then(|| {
                let mut all = records.clone();
                for g in all.chunks_mut(d) {
                    self.clip_example(g);
                }
                all
            });
        let scale_after: Vec<f64> = match self.scales() {
            Some(s) if c.fault != Fault::RescaleBeforeNoise => s.to_vec(),
            _ => vec![1.0; self.groups.len()],
        };
        // Records skipped before the next one in the batch: Geometric(q) failures,
        // P(skip ≥ k) = (1 − q)^k, drawn by inversion (noise::GeometricSkips).
        let skips = crate::noise::GeometricSkips::new(c.sampling_rate)?;
        let skip = |rng: &mut dyn Rng| -> usize { skips.sample(rng, n_records) };
        let mut theta = vec![0.0; d];
        let mut sum = vec![0.0; d];
        let mut grad = vec![0.0; d];
        let mut flat = Vec::with_capacity(n * d * self.checkpoints() as usize);
        for _ in 0..n {
            theta.fill(0.0);
            for step in 1..=c.steps {
                sum.fill(0.0);
                let mut i = skip(rng);
                while i < n_records {
                    match &precomputed {
                        Some(p) => sum
                            .iter_mut()
                            .zip(&p[i * d..(i + 1) * d])
                            .for_each(|(s, g)| *s += g),
                        None => {
                            self.gradient(&records[i * rd..(i + 1) * rd], &theta, &mut grad);
                            if !batch_clip {
                                self.clip_example(&mut grad);
                            }
                            sum.iter_mut().zip(&grad).for_each(|(s, g)| *s += g);
                        }
                    }
                    i = i.saturating_add(1).saturating_add(skip(rng));
                }
                if batch_clip {
                    self.clip_example(&mut sum);
                }
                for ((r, nz), &s) in self.groups.iter().zip(&noise).zip(&scale_after) {
                    for j in r.clone() {
                        theta[j] -= c.learning_rate * (sum[j] + nz.sample(rng)) * s;
                    }
                }
                let k = c.release_every;
                if k > 0 && (step % k == 0 || step == c.steps) {
                    flat.extend_from_slice(&theta);
                }
            }
            if c.release_every == 0 {
                flat.extend_from_slice(&theta);
            }
        }
        Samples::from_flat(d * self.checkpoints() as usize, flat)
    }
}

/// `x` rounded up to `digits` significant digits (never below `x`).
fn round_up_significant(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits - 1 - x.log10().floor() as i32);
    let r = (x * scale).ceil() / scale;
    if r < x { r.next_up() } else { r }
}

/// The claim of a privacy ledger: (ε at `delta`, where it came from).
///
/// If every sampling event has probability 1, the ledger is a composition of full-batch
/// Gaussian sum queries, which is exactly μ-GDP with μ² = Σ_blocks repetitions·Σ_queries z⁻²
/// (Dong, Roth & Su 2022, Corollary 3.3; several queries on one sample compose the same way), and
/// ε is read off the exact Gaussian profile ([`gaussian_exact_epsilon`], which rounds up).
/// Otherwise ε is the PLD accountant's pessimistic (upper-bound) ε over the same ledger
/// ([`PldAccountant::compose_ledger`]; Doroshenko et al. 2022), rounded up by a relative 1e-12.
/// ε is floored at 1e-6 (a claim needs ε > 0).
///
/// # Errors
/// δ outside (0, 1); an accountant that gives no finite ε.
pub fn claim_from_ledger(ledger: &RdpAccountant, delta: f64) -> Result<(f64, String)> {
    // (q, repetitions, noise multipliers of the queries on the sample).
    let mut blocks: Vec<(f64, u64, Vec<f64>)> = Vec::new();
    for event in ledger.ledger() {
        match *event {
            LedgerEvent::Sampling {
                probability,
                repetitions,
            } => blocks.push((probability, repetitions, Vec::new())),
            LedgerEvent::GaussianSum { noise_multiplier } => {
                if let Some(b) = blocks.last_mut() {
                    b.2.push(noise_multiplier);
                }
            }
        }
    }
    let description = blocks
        .iter()
        .map(|(q, reps, zs)| {
            let zs: Vec<String> = zs.iter().map(|z| format!("{z:.6}")).collect();
            format!(
                "{reps} × (Poisson sampling q = {q}; Gaussian sum z = {})",
                zs.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join(" + ");
    let accountant_error = |what: String| MechanismError::InvalidParameter {
        mechanism: "privacy-ledger".into(),
        message: what,
    };
    let (epsilon, how) = if blocks.iter().all(|b| b.0 == 1.0) {
        let mu2: f64 = blocks
            .iter()
            .map(|(_, reps, zs)| *reps as f64 * zs.iter().map(|z| z.powi(-2)).sum::<f64>())
            .sum();
        if mu2 <= 0.0 {
            return Err(accountant_error(format!(
                "the ledger [{description}] has no Gaussian sum query; allowed: at least one"
            )));
        }
        let mu = mu2.sqrt();
        let eps = gaussian_exact_epsilon(1.0 / mu, 1, delta)?;
        (
            eps,
            format!(
                "exact Gaussian privacy profile (Balle & Wang 2018; Dong, Roth & Su 2022) of the \
                 privacy ledger [{description}]: mu = {mu:.6}"
            ),
        )
    } else {
        // The PLD accountant's pessimistic ε (an upper bound, rounded up; 10–40 % tighter than
        // RDP, so a claim from it leaves less room for a bug to hide).
        let mut pld = PldAccountant::new(Neighboring::AddRemove);
        pld.compose_ledger(ledger.ledger())?;
        let (eps, _) = pld.epsilon_bounds(delta)?;
        if !eps.is_finite() {
            return Err(accountant_error(format!(
                "the PLD accountant gives no finite epsilon for the ledger [{description}] at \
                 delta = {delta:e}"
            )));
        }
        (
            (eps * (1.0 + RDP_EPSILON_SLACK)).next_up(),
            format!(
                "PLD accountant (pessimistic Connect-the-Dots PLD, Doroshenko et al. 2022; \
                 composed by FFT) over the privacy ledger [{description}]"
            ),
        )
    };
    let floored = epsilon < MIN_CLAIM_EPSILON;
    // Rounded up to 9 significant digits: a slightly weaker claim (the safe side) that reads
    // as 1 rather than 0.9999999999999964.
    let epsilon = round_up_significant(epsilon.max(MIN_CLAIM_EPSILON), 9);
    Ok((
        epsilon,
        format!(
            "{how}: epsilon = {epsilon:.6} at delta = {delta:e}{}",
            if floored {
                " (floored at 1e-6: a claim needs epsilon > 0)"
            } else {
                ""
            }
        ),
    ))
}

/// ln of the Bin(T, q) probabilities, pruned below e^{−60} of the largest (the dropped mass is at
/// most (T + 1)·e^{−60} ≈ 1e-26·(T + 1)): pairs (k, ln P(K = k)).
fn binomial_log_weights(q: f64, steps: u64) -> Vec<(f64, f64)> {
    let t = steps as f64;
    let (ln_q, ln_keep) = (q.ln(), (-q).ln_1p());
    let ln_t = ln_gamma(t + 1.0);
    let all: Vec<(f64, f64)> = (0..=steps)
        .map(|k| {
            let k = k as f64;
            (
                k,
                ln_t - ln_gamma(k + 1.0) - ln_gamma(t - k + 1.0) + k * ln_q + (t - k) * ln_keep,
            )
        })
        .collect();
    let top = all.iter().map(|w| w.1).fold(f64::NEG_INFINITY, f64::max);
    all.into_iter().filter(|w| w.1 >= top - 60.0).collect()
}

/// Bisection for the root of an increasing function `f` on the real line.
fn increasing_root(f: impl Fn(f64) -> f64) -> f64 {
    let (mut lo, mut hi) = (-1.0_f64, 1.0_f64);
    while f(lo) > 0.0 && lo > -1e300 {
        lo = 2.0 * lo - 1.0;
    }
    while f(hi) < 0.0 && hi < 1e300 {
        hi = 2.0 * hi + 1.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// `e^eps · p`, 0 when `p` is 0 (so that a huge e^ε times an underflowed p is not NaN).
fn scaled(eps: f64, p: f64) -> f64 {
    if p > 0.0 { (eps + p.ln()).exp() } else { 0.0 }
}

/// Hockey-stick divergences (H_{e^ε}(P ‖ Q), H_{e^ε}(Q ‖ P)) of the released final model of the
/// gradient form on the worst neighboring pair, for sampling rate `q`, per-step μ `mu_step` and
/// `steps` steps:
/// P = Σ_k Bin(T, q)(k)·N(k·μ, T), Q = N(0, T) (one dimension, noise whitened).
///
/// Why this is the exact profile over all add/remove pairs: with per-example clipping and a linear
/// loss, θ_T(D ∪ {x}) = θ_T(D) − η·K·c(x), where c(x) is x's clipped contribution,
/// K ~ Bin(T, q) counts the steps x is sampled in, and θ_T(D) = A + N with A (the other records'
/// contributions) independent of the Gaussian noise N and of K. By joint convexity of the
/// hockey-stick divergence and translation invariance, A can only lower it, so D = ∅ (or any
/// dataset of zero records) is worst; whitening the noise per group turns the pair into the
/// one-dimensional pair above with μ = ‖c(x)‖ in noise units; and the divergence grows with μ
/// (x ↦ x/λ + N(0, T(1 − λ⁻²)) maps the pair at λμ to the pair at μ), so the record with the
/// largest contribution is worst. For q = 1 this is the Gaussian profile with μ√T (Balle & Wang
/// 2018, Theorem 8). Full-batch batch-sum clipping is the same with the exact sensitivity.
///
/// For q < 1 the likelihood ratio P/Q = Σ_k w_k exp(k·a·x − k²a²/2) (standardized, a = μ/√T) is
/// increasing in x, so the optimal events are half-lines: H(P ‖ Q) = P(X > x₁) − e^ε Q(X > x₁)
/// where the ratio equals e^ε at x₁, and H(Q ‖ P) = Q(X < x₂) − e^ε P(X < x₂) where it equals
/// e^{−ε} (0 if it never gets that low: P(K = 0) ≥ e^{−ε}). The crossing points are found by
/// bisection and the probabilities are sums of normal CDFs.
pub fn final_model_deltas(q: f64, mu_step: f64, steps: u64, epsilon: f64) -> (f64, f64) {
    let t = steps as f64;
    if q >= 1.0 {
        let d = gaussian_dp_delta(epsilon, t.sqrt() * mu_step);
        return (d, d);
    }
    let a = mu_step / t.sqrt();
    let w = binomial_log_weights(q, steps);
    let log_ratio = |x: f64| {
        let terms: Vec<f64> = w
            .iter()
            .map(|&(k, lw)| lw + k * a * x - 0.5 * k * k * a * a)
            .collect();
        let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        top + terms.iter().map(|v| (v - top).exp()).sum::<f64>().ln()
    };
    let tail_p = |x: f64| -> f64 {
        w.iter()
            .map(|&(k, lw)| lw.exp() * std_normal_cdf(-(x - k * a)))
            .sum()
    };
    let head_p = |x: f64| -> f64 {
        w.iter()
            .map(|&(k, lw)| lw.exp() * std_normal_cdf(x - k * a))
            .sum()
    };
    let x1 = increasing_root(|x| log_ratio(x) - epsilon);
    let add = (tail_p(x1) - scaled(epsilon, std_normal_cdf(-x1))).clamp(0.0, 1.0);
    let ln_p0 = w
        .first()
        .filter(|w0| w0.0 == 0.0)
        .map_or(f64::NEG_INFINITY, |w0| w0.1);
    let remove = if ln_p0 >= -epsilon {
        0.0
    } else {
        let x2 = increasing_root(|x| log_ratio(x) + epsilon);
        (std_normal_cdf(x2) - scaled(epsilon, head_p(x2))).clamp(0.0, 1.0)
    };
    (add, remove)
}

/// The smallest ε with max(both directions of [`final_model_deltas`]) ≤ `delta`, by bisection
/// (the upper end of the final bracket is returned, so it errs large).
pub fn final_model_epsilon(q: f64, mu_step: f64, steps: u64, delta: f64) -> f64 {
    let f = |eps: f64| {
        let (a, b) = final_model_deltas(q, mu_step, steps, eps);
        a.max(b)
    };
    if f(0.0) <= delta {
        return 0.0;
    }
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while f(hi) > delta && hi < 1e6 {
        lo = hi;
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if mid <= lo || mid >= hi {
            break;
        }
        if f(mid) <= delta {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

// ---------------------------------------------------------------------------------------------
// Parameters and entries
// ---------------------------------------------------------------------------------------------

/// The analytic Gaussian σ for (ε = 1, δ = 1e-5, Δ = 1) (Balle & Wang 2018): ≈ 3.7306316348.
fn default_noise_multiplier() -> Result<f64> {
    analytic_gaussian_sigma(1.0, 1e-5, 1.0).ok_or_else(|| {
        invalid(
            "dpsgd",
            "no analytic Gaussian calibration for (1, 1e-5)".into(),
        )
    })
}

/// Takes a real parameter that must satisfy `ok` (and be finite); the error names the value and
/// `allowed`.
fn real(
    params: &mut Params,
    id: &str,
    name: &str,
    default: f64,
    ok: impl Fn(f64) -> bool,
    allowed: &str,
) -> Result<f64> {
    let v = params.take(name, default);
    if v.is_finite() && ok(v) {
        Ok(v)
    } else {
        Err(invalid(id, format!("{name} = {v}; allowed: {allowed}")))
    }
}

/// Takes an integer parameter in `[lo, hi]`.
fn integer(
    params: &mut Params,
    id: &str,
    name: &str,
    default: u64,
    lo: u64,
    hi: u64,
) -> Result<u64> {
    let v = params.take(name, default as f64);
    if v.is_finite() && v.fract() == 0.0 && v >= lo as f64 && v <= hi as f64 {
        Ok(v as u64)
    } else {
        Err(invalid(
            id,
            format!("{name} = {v}; allowed: an integer from {lo} to {hi}"),
        ))
    }
}

/// Per-entry defaults of the common parameters.
struct Defaults {
    sampling_rate: f64,
    clip: f64,
    dim: u64,
    groups: u64,
}

const DEFAULTS: Defaults = Defaults {
    sampling_rate: 1.0,
    clip: 1.0,
    dim: 1,
    groups: 1,
};

/// Reads the parameters every entry takes: `sampling_rate`, `noise_multiplier`, `clip`, `steps`,
/// `learning_rate`, `delta`, `dim`, `groups`.
fn common(params: &mut Params, id: &str, d: Defaults) -> Result<DpSgdConfig> {
    let sampling_rate = real(
        params,
        id,
        "sampling_rate",
        d.sampling_rate,
        |v| v > 0.0 && v <= 1.0,
        "0 < sampling_rate ≤ 1",
    )?;
    let noise_multiplier = real(
        params,
        id,
        "noise_multiplier",
        default_noise_multiplier()?,
        |v| v > 0.0 && v <= 1e6,
        "0 < noise_multiplier ≤ 1e6",
    )?;
    let clip = real(
        params,
        id,
        "clip",
        d.clip,
        |v| v > 0.0 && v <= 1e6,
        "0 < clip ≤ 1e6",
    )?;
    let steps = integer(params, id, "steps", 1, 1, 1_000_000)?;
    let learning_rate = real(
        params,
        id,
        "learning_rate",
        1.0,
        |v| v > 0.0 && v <= 1e6,
        "0 < learning_rate ≤ 1e6",
    )?;
    let delta = real(
        params,
        id,
        "delta",
        1e-5,
        |v| v > 0.0 && v < 1.0,
        "0 < delta < 1",
    )?;
    let dim = integer(params, id, "dim", d.dim, 1, 256)?;
    let groups = integer(params, id, "groups", d.groups.min(dim), 1, dim)?;
    let release_every = integer(params, id, "release_every", 0, 0, steps)?;
    let checkpoints = if release_every == 0 {
        1
    } else {
        steps.div_ceil(release_every)
    };
    if dim * checkpoints > 4096 {
        return Err(invalid(
            id,
            format!(
                "dim = {dim} with {checkpoints} released checkpoints (steps = {steps}, \
                 release_every = {release_every}) gives outputs of dimension {}; allowed: at most 4096",
                dim * checkpoints
            ),
        ));
    }
    let profile_claim = integer(params, id, "profile_claim", 0, 0, 1)? == 1;
    Ok(DpSgdConfig {
        form: RecordForm::Gradient,
        dim: dim as usize,
        groups: groups as usize,
        clipping: Clipping::PerGroup,
        sampling_rate,
        noise_multiplier,
        clip,
        steps,
        learning_rate,
        delta,
        fault: Fault::None,
        release_every,
        profile_claim,
    })
}

/// Scales (1, …, 1, r): the last group has scale r.
fn last_group_scaled(groups: usize, r: f64) -> Vec<f64> {
    let mut s = vec![1.0; groups];
    s[groups - 1] = r;
    s
}

/// The witness of per-example clipping: a few records contributing nothing, and the same plus
/// one record at the clipping boundary of every group, concentrated on the group's first
/// coordinate when that reaches C_j (for the default d = 1: {0, 0, 0} against {0, 0, 0, 1}).
fn boundary_witness(m: &DpSgd) -> Result<DatasetPair> {
    let d = m.config.dim;
    let mut x = vec![0.0; d];
    match m.scales() {
        None => {
            for (g, &cj) in m.groups.iter().zip(&m.group_clip) {
                if cj <= 1.0 {
                    x[g.start] = 1.0;
                } else {
                    x[g.clone()].iter_mut().for_each(|v| *v = 1.0);
                }
            }
        }
        Some(scales) => x = joint_worst_record(&m.groups, scales, m.config.clip).0,
    }
    if m.config.form == RecordForm::Logistic {
        // Label 0 and zero features: zero gradient. The added record's gradient at θ₀ = 0 is ½x.
        x.push(0.0);
    }
    let zero = vec![0.0; m.record_dim()];
    let base = Dataset::vectors(m.record_dim(), &[zero.clone(), zero.clone(), zero])?;
    DatasetPair::new(base.clone(), base.with_record(&x)?, Neighboring::AddRemove)
}

/// The witness of batch-sum clipping: D = {−g/2}, D' = D ∪ {g} with ‖g_j‖ = Δ_j = min(2C_j, √m_j)
/// in every group, so that the batch sum moves from −g/2 to g/2, both inside the clipping
/// ball (default: {−0.5} against {−0.5, 1}).
fn batch_sum_witness(m: &DpSgd) -> Result<DatasetPair> {
    let mut g = vec![0.0; m.config.dim];
    for (r, &cj) in m.groups.iter().zip(&m.group_clip) {
        if 2.0 * cj <= 1.0 {
            g[r.start] = 2.0 * cj;
        } else {
            let v = (2.0 * cj / (r.len() as f64).sqrt()).min(1.0);
            g[r.clone()].iter_mut().for_each(|e| *e = v);
        }
    }
    let half: Vec<f64> = g.iter().map(|v| -0.5 * v).collect();
    let base = Dataset::vectors(m.config.dim, &[half])?;
    DatasetPair::new(base.clone(), base.with_record(&g)?, Neighboring::AddRemove)
}

/// `dpsgd`: the correct mechanism. Parameters: the common ones (`sampling_rate` 1,
/// `noise_multiplier` analytic σ for (1, 1e-5), `clip` 1, `steps` 1, `learning_rate` 1, `delta`
/// 1e-5, `dim` 1, `groups` 1) and `logistic` (0 or 1: the logistic-regression record form),
/// `joint_clipping` (0 or 1) with `group_scale` (the last group's scale; only with joint
/// clipping), and `noise_scale` (default 1; any other s adds noise s·z·C as `dpsgd-scaled-noise`
/// does, and the entry's status then comes from its exact privacy profile).
fn dpsgd(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd";
    let mut config = common(params, id, DEFAULTS)?;
    if integer(params, id, "logistic", 0, 0, 1)? == 1 {
        config.form = RecordForm::Logistic;
    }
    let joint = integer(params, id, "joint_clipping", 0, 0, 1)? == 1;
    let r = real(
        params,
        id,
        "group_scale",
        1.0,
        |v| v > 0.0 && v <= 1e6,
        "0 < group_scale ≤ 1e6",
    )?;
    if joint {
        config.clipping = Clipping::Joint {
            scales: last_group_scaled(config.groups, r),
        };
    } else if r != 1.0 {
        return Err(invalid(
            id,
            format!("group_scale = {r}; allowed: only with joint_clipping = 1"),
        ));
    }
    // `noise_scale` (default 1) lets `audit sweep --mechanism dpsgd --param noise_scale=…` walk
    // from the correct entry into the scaled-noise bug; any s ≠ 1 gets its status from the exact
    // privacy profile, exactly as `dpsgd-scaled-noise` does.
    let s = real(
        params,
        id,
        "noise_scale",
        1.0,
        |v| v > 0.0 && v <= 2.0,
        "0 < noise_scale ≤ 2",
    )?;
    if s != 1.0 {
        config.fault = Fault::ScaledNoise { factor: s };
    }
    let m = DpSgd::new(id, config)?;
    let witness = boundary_witness(&m)?;
    if s != 1.0 {
        let bug = format!(
            "noise standard deviation s·z·C with s = {s} while the privacy ledger records noise \
             multiplier z = {:.6}",
            m.config.noise_multiplier
        );
        return entry(m, witness, bug);
    }
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness,
    })
}

fn entry(m: DpSgd, witness: DatasetPair, bug: String) -> Result<Entry> {
    let status = m.status(bug)?;
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness,
    })
}

/// `dpsgd-scaled-noise` (see [`Fault::ScaledNoise`]): the common parameters and `noise_scale`
/// s ∈ (0, 2] (default 0.5; s ≥ 1 is correct).
fn dpsgd_scaled_noise(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-scaled-noise";
    let mut config = common(params, id, DEFAULTS)?;
    let s = real(
        params,
        id,
        "noise_scale",
        0.5,
        |v| v > 0.0 && v <= 2.0,
        "0 < noise_scale ≤ 2",
    )?;
    config.fault = Fault::ScaledNoise { factor: s };
    let m = DpSgd::new(id, config)?;
    let witness = boundary_witness(&m)?;
    let bug = format!(
        "noise standard deviation s·z·C with s = {s} while the privacy ledger records noise \
         multiplier z = {:.6}",
        m.config.noise_multiplier
    );
    entry(m, witness, bug)
}

/// `dpsgd-clip-batch-sum` (see [`Fault::ClipBatchSum`]): full batch; the common parameters with
/// `clip` 0.5 by default (`sampling_rate` must be 1).
fn dpsgd_clip_batch_sum(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-clip-batch-sum";
    let mut config = common(
        params,
        id,
        Defaults {
            clip: 0.5,
            ..DEFAULTS
        },
    )?;
    if config.sampling_rate != 1.0 {
        return Err(invalid(
            id,
            format!(
                "sampling_rate = {}; allowed: 1 (this entry is full-batch DP-GD, where its true \
                 guarantee is exact)",
                config.sampling_rate
            ),
        ));
    }
    config.fault = Fault::ClipBatchSum;
    let m = DpSgd::new(id, config)?;
    let witness = batch_sum_witness(&m)?;
    let sens: Vec<String> = m
        .per_group_sensitivities()
        .iter()
        .map(|s| format!("{s:.6}"))
        .collect();
    let bug = format!(
        "the batch sum is clipped to C = {} instead of each example; one example moves the \
         clipped sum by up to min(2C_j, √m_j) = {} per group",
        m.config.clip,
        sens.join(", ")
    );
    entry(m, witness, bug)
}

/// `dpsgd-wrong-sampling-rate` (see [`Fault::WrongSamplingRate`]): the common parameters with
/// `sampling_rate` 0.5 by default (the rate batches are really drawn at) and
/// `dataset_size_ratio` k ∈ [1, 1e6] (default 10; k = 1 is correct).
fn dpsgd_wrong_sampling_rate(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-wrong-sampling-rate";
    let mut config = common(
        params,
        id,
        Defaults {
            sampling_rate: 0.5,
            ..DEFAULTS
        },
    )?;
    let k = real(
        params,
        id,
        "dataset_size_ratio",
        10.0,
        |v| (1.0..=1e6).contains(&v),
        "1 ≤ dataset_size_ratio ≤ 1e6",
    )?;
    config.fault = Fault::WrongSamplingRate {
        dataset_size_ratio: k,
    };
    let m = DpSgd::new(id, config)?;
    let witness = boundary_witness(&m)?;
    let q = m.config.sampling_rate;
    let bug = format!(
        "batches are sampled at rate q = {q} but the accountant is fed q/{k} = {} (the batch \
         size over the size of a dataset {k} times larger)",
        q / k
    );
    entry(m, witness, bug)
}

/// `dpsgd-joint-clip-rescale` (see [`Fault::RescaleBeforeNoise`]): joint clipping; the common
/// parameters with `dim` 2, `groups` 2, `clip` 0.5 by default, and `group_scale` r (the last
/// group's scale, the others 1; default 2; r ≤ 1 is correct).
fn dpsgd_joint_clip_rescale(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-joint-clip-rescale";
    let mut config = common(
        params,
        id,
        Defaults {
            clip: 0.5,
            dim: 2,
            groups: 2,
            ..DEFAULTS
        },
    )?;
    let r = real(
        params,
        id,
        "group_scale",
        2.0,
        |v| v > 0.0 && v <= 1e6,
        "0 < group_scale ≤ 1e6",
    )?;
    config.clipping = Clipping::Joint {
        scales: last_group_scaled(config.groups, r),
    };
    config.fault = Fault::RescaleBeforeNoise;
    let m = DpSgd::new(id, config)?;
    let witness = boundary_witness(&m)?;
    let (_, sensitivity) = joint_worst_record(&m.groups, m.scales().unwrap_or(&[]), m.config.clip);
    let bug = format!(
        "joint clipping multiplies each group back by its scale before the noise is added \
         instead of after; an example then contributes up to {sensitivity:.6} against noise \
         z·C accounted for sensitivity C = {}",
        m.config.clip
    );
    entry(m, witness, bug)
}

#[cfg(test)]
mod tests;
