//! DP-SGD / DP-GD (Abadi et al. 2016) in the general form of McMahan, Andrew, Erlingsson, Chien,
//! Mironov, Papernot & Kairouz (2018), "A General Approach to Adding Differential Privacy to
//! Iterative Training Procedures" (arXiv:1812.06210), and four realistic mistakes.
//!
//! (Why one module: the five entries share one training loop, ledger and witness, and each bug
//! is a one-line change to that loop; keeping them together shows the difference. The loop is
//! here; `entries.rs` holds the entries' parameters, witnesses and builders, and `guarantee.rs`
//! the claim read off the ledger and the exact profile of the final model. The catalogue-v2
//! issue turns entries into declarations and will shrink it. Tests are in `dpsgd/tests.rs`.)
//!
//! The rest of the DP-SGD family lives beside it in this folder, each file its own entries:
//! `variants/` (DP-SGD as it is really run), `microbatch.rs`, `shuffled.rs`, `fixed_batches/`,
//! `batch_coupling/`, `normalisation.rs`, `averaged.rs` and `adam.rs`; [`specs`] lists this
//! module's entries, then theirs, in that order.
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

use super::{Spec, Status};
use crate::accountant::{LedgerEvent, RdpAccountant, gaussian_exact_epsilon};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::math::gaussian_dp_delta;
use crate::mechanism::Mechanism;
use crate::noise::GaussianNoise;
use crate::pld::{Estimate, poisson_gaussian_pld};
use crate::samples::Samples;

// This module's own files: its entries, and the privacy of a run apart from its loop.
mod entries;
mod guarantee;

/// The exact final-model profile of the gradient (linear) form, which is the last-iterate
/// heuristic of Steinke et al. 2025 ("The Last Iterate Advantage", arXiv:2410.06186): used by
/// [`crate::final_model`] as a labelled reference, never as a verdict.
pub use guarantee::final_model_epsilon;
use guarantee::{claim_from_ledger, final_model_deltas};

// The rest of the family, each its own group of entries, listed after this module's in this
// order (the order `audit list` shows).
mod adam;
mod averaged;
mod batch_coupling;
mod fixed_batches;
mod microbatch;
mod normalisation;
mod shuffled;
mod variants;

/// The family's entries: this module's, then its submodules' in listing order.
pub(crate) fn specs() -> Vec<Spec> {
    let mut all = entries::specs();
    all.extend(variants::specs());
    all.extend(microbatch::specs());
    all.extend(shuffled::specs());
    all.extend(fixed_batches::specs());
    all.extend(batch_coupling::specs());
    all.extend(normalisation::specs());
    all.extend(averaged::specs());
    all.extend(adam::specs());
    all
}

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
    /// What is released, in the DP-fy ML guide's terms: the final model (`release_every` 0),
    /// checkpoints (k > 1) or every iterate (k = 1); one training run (no tuning).
    fn dp_fy_scope(&self) -> crate::accounting::dpfy::DpFyScope {
        use crate::accounting::dpfy::{DataAccesses, DpFyScope, OutputsCovered};
        DpFyScope {
            data_accesses: Some(DataAccesses::SingleTrainingRun),
            outputs: Some(match self.config.release_every {
                0 => OutputsCovered::FinalModel,
                1 => OutputsCovered::EveryIterate,
                _ => OutputsCovered::Checkpoints,
            }),
        }
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

#[cfg(test)]
mod tests;
