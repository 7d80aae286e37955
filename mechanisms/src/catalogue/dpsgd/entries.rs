//! The entries of `dpsgd/mod.rs`: their parameters (the common ones every entry reads, and
//! each entry's own), their witnesses, and the five builders `dpsgd`, `dpsgd-scaled-noise`,
//! `dpsgd-clip-batch-sum`, `dpsgd-wrong-sampling-rate` and `dpsgd-joint-clip-rescale`.

use super::{Clipping, DpSgd, DpSgdConfig, Fault, RecordForm, invalid, joint_worst_record};
use crate::catalogue::{Entry, Spec, Status};
use crate::dataset::{Dataset, DatasetPair, Neighboring};
use crate::error::Result;
use crate::math::analytic_gaussian_sigma;
use crate::mechanism::Params;

/// The entries of `dpsgd/mod.rs`: DP-SGD / DP-GD and its four mistakes.
pub(super) fn specs() -> Vec<Spec> {
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
