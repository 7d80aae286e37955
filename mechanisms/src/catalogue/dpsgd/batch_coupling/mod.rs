//! Components that **couple the examples of a batch** (issue 29, item 2): per-example clipping
//! bounds each example's own gradient, but a component that lets one example move the *other*
//! examples' gradients escapes it. Seed 000 names batch-normalization statistics among the
//! vector queries a training step makes from the same examples (each needs its own privacy
//! mechanism and its place in the ledger); seed 002's DP-fy ML guide warns that contrastive
//! losses "should be examined to ensure privacy guarantees are not violated" and recommends
//! gradient accumulation for large batches. Three pairs, each a correct entry and a buggy twin
//! whose claim is the per-example accounting that ignores the coupling.
//!
//! | id | records | claim (defaults) | true guarantee (defaults) |
//! |---|---|---|---|
//! | `dpsgd-batch-norm-private-stats` | (x, y) ∈ [−1, 1]² | μ = √((2/σ_s)² + (1/σ_s)² + (2/z)²) = 1.038 | valid (adaptive GDP composition) |
//! | `dpsgd-batch-norm-unaccounted` | (x, y) ∈ [−1, 1]² | μ = 2/z = 1 | μ ≥ 3.646 (witness, exact shift), μ ≤ 2n/z = 8 |
//! | `dpsgd-contrastive` | x ∈ [−1, 1] | μ = 4/z = 2 | exactly as claimed |
//! | `dpsgd-contrastive-per-example-sensitivity` | x ∈ [−1, 1] | μ = 2/z = 1 | μ = 4/z = 2 exactly |
//! | `dpsgd-accumulation` | x ∈ [−1, 1] | μ = 2/z = 1 | exactly as claimed |
//! | `dpsgd-accumulation-noised-every-micro-step` | x ∈ [−1, 1] | μ = 2/z = 1 | μ = 2√k/z = 2 exactly |
//!
//! # The step
//! Every entry is one full-batch DP-GD step in gradient form (as the other DP-SGD entries): the
//! batch is the whole dataset of exactly n records (`records`, default 8; every example's batch
//! partners are the other n − 1), per-example gradients are clipped to C = 1, and the step
//! releases the noisy sum Σ_i clip(g_i) + N(0, (zC)²) (`noise_multiplier` z, default 2). The
//! privacy unit is replacing one record (replace-one: a batch of fixed size n, as in
//! `dpsgd/fixed_batches/`). The per-example accounting every twin claims is the Gaussian
//! mechanism with sensitivity 2C (one record's clipped gradient moves from −C to C): μ = 2/z
//! (Dong, Roth & Su 2022, the Gaussian mechanism is exactly Δ/σ-GDP), as the ledger of one
//! full-batch step (q = 1, one repetition, noise multiplier z) reads: the PLD accountant's
//! profile of that ledger, `dpsgd:1:z:1:replace-one`, is this Gaussian up to its
//! discretization (test `the_ledger_reads_as_the_claimed_gaussian`), and the entries claim it in
//! closed form. For a statistic f of the
//! dataset plus N(0, σ²), the release is exactly μ-GDP with μ = sup_{D ~ D'} |f(D) − f(D')|/σ
//! (the hockey-stick divergence of the pair is the Gaussian shift's, increasing in the shift):
//! each true guarantee below is that sensitivity, computed.
//!
//! # Batch normalization (`dpsgd-batch-norm-*`)
//! A record is a feature and a label (x, y). The model is y ≈ w · BN(x): the forward pass
//! normalizes the feature with the **batch's** statistics, x̂_i = (x_i − m)/√(v + η) with
//! m = mean(x), v = the biased variance and η = 1e-5 (PyTorch's default), and the per-example
//! gradient of ½(w x̂_i − y_i)² at w = 0 is g_i = −y_i x̂_i, clipped to [−C, C].
//!
//! *Twin (`dpsgd-batch-norm-unaccounted`)*: the batch statistics are used in the forward pass
//! and not accounted; the claim is the per-example μ = 2/z. But one record moves m and v, hence
//! every partner's x̂_i and clipped gradient. Upper bound: each of the n clipped gradients moves
//! by at most 2C, so |f(D) − f(D')| ≤ 2nC and μ ≤ 2n/z. Lower bound (the witness): n − 1
//! partners at (0, −1) and the record at (−1, 1) against (1, 1). On D, m = −1/n and
//! v = (n − 1)/n², the partners' x̂ = 1/(n√(v + η)) ≈ 1/√(n − 1) with label −1 give gradients
//! ≈ +1/√(n − 1) each, the record's x̂ ≈ −√(n − 1) gives +√(n − 1), clipped to +1: f(D) ≈
//! √(n − 1) + 1; D′ is the mirror image, f(D′) = −f(D). The shift 2(√(n − 1) + 1) (7.2915 at
//! n = 8, computed in floating point by the entry, η included) is 3.65 times the 2C the claim
//! allows: μ ≥ 3.646 against 1. The status is computed from that shift. Partners at the centre
//! of the feature range make the record dominate the batch variance; constant partners at an
//! end give only √(n − 1) + 1 (3.65 at n = 8). With `release_statistics = 1` the step also
//! releases the exact batch mean and variance (the running statistics a BN layer ships with
//! the model, unnoised): the mean is −1/n on D and 1/n on D′ of the witness, a deterministic
//! difference, so δ(ε) = 1 at every ε and no (ε, δ < 1) claim holds.
//!
//! *Correct (`dpsgd-batch-norm-private-stats`)*: the statistics are privatized and released
//! with the step (they are the running statistics a BN layer ships with the model):
//! m̃ = (Σ x_i + N(0, σ_s²))/n, s̃ = (Σ x_i² + N(0, σ_s²))/n (σ_s = `stats_noise`, default 8),
//! ṽ = max(s̃ − m̃², 0), and the forward pass uses x̂_i = (x_i − m̃)/√(ṽ + η): each g_i now
//! depends on its own record and the released statistics only. The release (m̃, s̃, noisy sum)
//! is the adaptive composition of three Gaussian mechanisms with replace-one sensitivities 2
//! (Σx, x ∈ [−1, 1]), 1 (Σx², x² ∈ [0, 1]) and 2C (the clipped sum given m̃, s̃), so it is
//! μ-GDP with μ = √((2/σ_s)² + (1/σ_s)² + (2/z)²) (Dong, Roth & Su 2022, Corollary 3.3, which
//! holds for adaptive composition; n is public under replace-one). A valid upper bound.
//!
//! # Contrastive loss (`dpsgd-contrastive*`)
//! A record x ∈ [−1, 1] is a one-dimensional embedding; the similarity of a pair is
//! s_ij = θ x_i x_j. The anchor loss of InfoNCE, ℓ_i = −s_{ii⁺} + log Σ_{j≠i} e^{s_ij}, has at
//! θ = 0 the negatives' gradient g_i = x_i · x̄_{−i}, the anchor times the mean of its n − 1
//! batch partners (the positive term depends on the record alone and is left out of the model).
//! |g_i| ≤ 1 = C, so the clip never binds, and f(D) = Σ_i g_i = ((Σx)² − Σx²)/(n − 1).
//! Replacing x_k by x′_k changes it by 2 S_{−k}(x_k − x′_k)/(n − 1) with S_{−k} the partners'
//! sum: |S_{−k}| ≤ n − 1 and |x_k − x′_k| ≤ 2 give a sensitivity of **exactly 4C**, attained with
//! every partner at 1 (or −1) and the record at 1 against −1 (the witness). Half of it is the
//! record's own anchor gradient, half its presence among the other anchors' negatives.
//!
//! *Correct (`dpsgd-contrastive`)*: claims μ = 4/z; exact (tight on the witness).
//! *Twin (`dpsgd-contrastive-per-example-sensitivity`)*: claims the per-example μ = 2/z; the
//! truth is μ = 4/z exactly, twice the claim.
//!
//! # Gradient accumulation (`dpsgd-accumulation*`)
//! The batch is processed in k micro-batches (`micro_batches`, default 4) cut by position
//! (sizes as equal as possible, the first n mod k one larger); micro-batch m's clipped sum M_m
//! is added to a gradient buffer.
//!
//! *Correct (`dpsgd-accumulation`)*: the buffer is noised once, after the k-th micro-batch:
//! Σ_m M_m + N(0, (zC)²), the full-batch step; μ = 2/z, exact.
//! *Twin (`dpsgd-accumulation-noised-every-micro-step`)*: the DP step (noise and update) runs
//! at every micro-step on the buffer, which is zeroed only once per logical step (an optimizer
//! step per micro-batch without `zero_grad`: the Opacus maintainers' "not calling zero_grad()
//! after step() does break privacy accounting", meta-pytorch/opacus pull 203), and the ledger
//! records one step per logical batch. The model after the logical step (released) has moved by
//! Σ_m (B_m + N_m) with B_m = M_1 + … + M_m, i.e. Σ_m (k − m + 1) M_m + N(0, k(zC)²). A record of
//! micro-batch m has weight k − m + 1: in the first micro-batch its shift is 2kC against noise
//! √k·zC, so the step is exactly μ = 2√k/z-GDP (the sup over m is m = 1; √k times the claim).
//! The witness puts the differing record first: {1, 0, …, 0} against {−1, 0, …, 0}.

use rand::Rng;

use crate::catalogue::declare::Declared;
use crate::catalogue::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::math::readable;
use crate::mechanism::Params;
use crate::noise::GaussianNoise;
use crate::samples::Samples;

/// Per-example clip norm.
const CLIP: f64 = 1.0;
/// Largest batch (dataset) the entries take.
const MAX_RECORDS: usize = 256;
/// Most micro-batches of the accumulation entries.
const MAX_MICRO_BATCHES: usize = 64;
/// Batch normalization's variance floor η (PyTorch's `eps` default).
pub const BN_EPS: f64 = 1e-5;

/// Ids, for tests.
pub(crate) const BN_CORRECT: &str = "dpsgd-batch-norm-private-stats";
pub(crate) const BN_TWIN: &str = "dpsgd-batch-norm-unaccounted";
pub(crate) const CONTRASTIVE_CORRECT: &str = "dpsgd-contrastive";
pub(crate) const CONTRASTIVE_TWIN: &str = "dpsgd-contrastive-per-example-sensitivity";
pub(crate) const ACCUMULATION_CORRECT: &str = "dpsgd-accumulation";
pub(crate) const ACCUMULATION_TWIN: &str = "dpsgd-accumulation-noised-every-micro-step";

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: BN_CORRECT,
            summary: "full-batch DP-GD through batch normalization whose batch statistics are privatized, released and composed (μ = √((2/σ_s)² + (1/σ_s)² + (2/z)²), replace-one)",
            build: batch_norm_private_stats,
        },
        Spec {
            id: BN_TWIN,
            summary: "full-batch DP-GD through batch normalization with the exact batch statistics, accounted per example (μ = 2/z), though one record moves every partner's gradient",
            build: batch_norm_unaccounted,
        },
        Spec {
            id: CONTRASTIVE_CORRECT,
            summary: "full-batch DP-GD on a contrastive (InfoNCE negatives) loss accounted with sensitivity 4C: the record's own anchor and its place among the partners' negatives (μ = 4/z, replace-one)",
            build: contrastive,
        },
        Spec {
            id: CONTRASTIVE_TWIN,
            summary: "full-batch DP-GD on a contrastive loss accounted per example (sensitivity 2C, μ = 2/z), though each anchor's gradient depends on its batch partners (true 4C)",
            build: contrastive_per_example,
        },
        Spec {
            id: ACCUMULATION_CORRECT,
            summary: "gradient accumulation over k micro-batches, the buffer noised once per logical step (μ = 2/z, replace-one)",
            build: accumulation,
        },
        Spec {
            id: ACCUMULATION_TWIN,
            summary: "gradient accumulation noised and applied at every micro-step on a buffer zeroed once per logical step, accounted as one step (μ = 2/z; true 2√k/z)",
            build: accumulation_every_micro_step,
        },
    ]
}

fn invalid(id: &str, message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: id.into(),
        message,
    }
}

/// n and z, the settings every entry takes.
#[derive(Clone, Copy, Debug)]
struct Step {
    /// n: records in the batch (the dataset).
    records: usize,
    /// z: noise multiplier.
    noise_multiplier: f64,
}

fn step_params(params: &mut Params, id: &str) -> Result<Step> {
    let records = params.take_integer_in(id, "records", 8.0, 2.0, MAX_RECORDS as f64)?;
    let noise_multiplier = params.take_in(id, "noise_multiplier", 2.0, 0.1, 100.0)?;
    Ok(Step {
        records,
        noise_multiplier,
    })
}

/// μ of the per-example accounting: the Gaussian mechanism with sensitivity 2C, noise zC.
fn per_example_mu(step: &Step) -> f64 {
    2.0 / step.noise_multiplier
}

/// A declared entry on datasets of exactly `n` records of dimension `dim`: `release(rows,
/// rng, out)` appends one release of `output_dim` values.
fn declared(
    id: &'static str,
    claim: PrivacyClaim,
    source: String,
    n: usize,
    dim: usize,
    output_dim: usize,
    release: impl Fn(&[Vec<f64>], &mut dyn Rng, &mut Vec<f64>) + Send + Sync + 'static,
) -> Declared {
    Declared {
        id,
        claim,
        claim_source: Some(source),
        neighboring: Neighboring::ReplaceOne,
        domain: RecordDomain::real(-1.0, 1.0, dim).with_sizes(n, n),
        output_dim,
        recommended_transform: None,
        setting: crate::mechanism::DpSetting::Central,
        sample: Box::new(move |data: &Dataset, count, rng| {
            if data.len() != n {
                return Err(MechanismError::InvalidDataset(format!(
                    "{id}: a dataset of {} records; allowed: exactly {n} (--param records), the batch of the full-batch step",
                    data.len()
                )));
            }
            // Records outside the box are clamped into it (the domain is [−1, 1] per coordinate).
            let rows: Vec<Vec<f64>> = data
                .to_rows()
                .into_iter()
                .map(|r| r.into_iter().map(|v| v.clamp(-1.0, 1.0)).collect())
                .collect();
            let mut flat = Vec::with_capacity(count * output_dim);
            for _ in 0..count {
                release(&rows, &mut *rng, &mut flat);
            }
            Samples::from_flat(output_dim, flat)
        }),
    }
}

// ----------------------------------------------------------------------------------------
// Batch normalization.

/// Σ_i clip(−y_i x̂_i) with x̂_i = (x_i − mean)/√(var + η): the step's clipped gradient sum
/// through batch normalization with the given statistics.
pub fn batch_norm_gradient_sum(rows: &[Vec<f64>], mean: f64, var: f64) -> f64 {
    let scale = 1.0 / (var.max(0.0) + BN_EPS).sqrt();
    rows.iter()
        .map(|r| (-r[1] * (r[0] - mean) * scale).clamp(-CLIP, CLIP))
        .sum()
}

/// The batch's mean and biased variance of the feature (two passes).
pub fn batch_statistics(rows: &[Vec<f64>]) -> (f64, f64) {
    let n = rows.len() as f64;
    let mean = rows.iter().map(|r| r[0]).sum::<f64>() / n;
    let var = rows.iter().map(|r| (r[0] - mean).powi(2)).sum::<f64>() / n;
    (mean, var)
}

/// The twin's statistic: the gradient sum with the exact batch statistics.
pub fn batch_norm_exact_sum(rows: &[Vec<f64>]) -> f64 {
    let (mean, var) = batch_statistics(rows);
    batch_norm_gradient_sum(rows, mean, var)
}

/// n − 1 partners at (0, −1), the record at (−1, 1) against (1, 1) (first position).
fn batch_norm_witness(n: usize) -> Result<DatasetPair> {
    let mut d = vec![vec![0.0, -1.0]; n];
    let mut d2 = d.clone();
    d[0] = vec![-1.0, 1.0];
    d2[0] = vec![1.0, 1.0];
    DatasetPair::new(
        Dataset::vectors(2, &d)?,
        Dataset::vectors(2, &d2)?,
        Neighboring::ReplaceOne,
    )
}

/// |f(D) − f(D′)| of the twin on its witness.
pub fn batch_norm_witness_shift(n: usize) -> Result<f64> {
    let w = batch_norm_witness(n)?;
    Ok(
        (batch_norm_exact_sum(&w.first().to_rows()) - batch_norm_exact_sum(&w.second().to_rows()))
            .abs(),
    )
}

fn batch_norm_private_stats(params: &mut Params) -> Result<Entry> {
    let id = BN_CORRECT;
    let step = step_params(params, id)?;
    let stats_noise = params.take_in(id, "stats_noise", 8.0, 0.1, 1000.0)?;
    let z = step.noise_multiplier;
    let mu = ((2.0 / stats_noise).powi(2) + (1.0 / stats_noise).powi(2) + (2.0 / z).powi(2)).sqrt();
    let stats = GaussianNoise::new(stats_noise)?;
    let noise = GaussianNoise::new(z * CLIP)?;
    let n = step.records;
    let m = declared(
        id,
        PrivacyClaim::gaussian_dp(mu)?,
        format!(
            "adaptive composition (Dong, Roth & Su 2022, Cor. 3.3) of the batch statistics Σx (sensitivity 2, noise {}) and Σx² (sensitivity 1, noise {}), released, and the clipped gradient sum through the privatized normalization (sensitivity 2C, noise {}·C): μ = {} (replace-one, n = {n} public)",
            readable(stats_noise),
            readable(stats_noise),
            readable(z),
            readable(mu)
        ),
        n,
        2,
        3,
        move |rows, rng, out| {
            let nf = rows.len() as f64;
            let sum: f64 = rows.iter().map(|r| r[0]).sum();
            let sum_sq: f64 = rows.iter().map(|r| r[0] * r[0]).sum();
            let mean = (sum + stats.sample(&mut *rng)) / nf;
            let second = (sum_sq + stats.sample(&mut *rng)) / nf;
            let var = (second - mean * mean).max(0.0);
            let g = batch_norm_gradient_sum(rows, mean, var) + noise.sample(&mut *rng);
            out.extend([mean, second, g]);
        },
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: batch_norm_witness(n)?,
    })
}

fn batch_norm_unaccounted(params: &mut Params) -> Result<Entry> {
    let id = BN_TWIN;
    let step = step_params(params, id)?;
    let released = params.take_integer_in(id, "release_statistics", 0.0, 0.0, 1.0)? == 1;
    let z = step.noise_multiplier;
    let n = step.records;
    let claimed = per_example_mu(&step);
    let shift = batch_norm_witness_shift(n)?;
    let lower = shift / (z * CLIP);
    let upper = 2.0 * n as f64 / z;
    let status = if released {
        Status::buggy_if(
            true,
            "batch normalization's batch statistics released with the step unnoised (the running statistics shipped with the model), and used in the forward pass, accounted per example",
            "no (ε, δ)-DP with δ < 1: the released batch mean differs between the witness's datasets, so δ(ε) = 1 at every ε".into(),
        )
    } else {
        Status::buggy_if(
            lower > claimed * (1.0 + 1e-12),
            "batch normalization with the batch's own statistics accounted per example: one record moves the batch mean and variance and with them every partner's clipped gradient",
            format!(
                "μ-GDP with {} ≤ μ ≤ {} (the witness moves the clipped sum by {} = 2(√(n−1) + 1) up to η, not 2C; any pair by at most 2nC)",
                readable(lower),
                readable(upper),
                readable(shift)
            ),
        )
    };
    let noise = GaussianNoise::new(z * CLIP)?;
    let m = declared(
        id,
        PrivacyClaim::gaussian_dp(claimed)?,
        format!(
            "privacy ledger of one full-batch step (q = 1, one repetition, noise multiplier {}): the Gaussian mechanism with per-example sensitivity 2C, μ = {} (replace-one); the batch-norm statistics are not in the ledger",
            readable(z),
            readable(claimed)
        ),
        n,
        2,
        if released { 3 } else { 1 },
        move |rows, rng, out| {
            if released {
                let (mean, var) = batch_statistics(rows);
                out.extend([mean, var]);
            }
            out.push(batch_norm_exact_sum(rows) + noise.sample(&mut *rng));
        },
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness: batch_norm_witness(n)?,
    })
}

// ----------------------------------------------------------------------------------------
// Contrastive loss.

/// Σ_i clip(x_i · x̄_{−i}): the negatives' gradient of InfoNCE at θ = 0, each anchor against
/// the mean of its batch partners (n ≥ 2).
pub fn contrastive_gradient_sum(xs: &[f64]) -> f64 {
    let n = xs.len();
    let total: f64 = xs.iter().sum();
    xs.iter()
        .map(|&x| (x * (total - x) / (n - 1) as f64).clamp(-CLIP, CLIP))
        .sum()
}

/// Every partner at 1, the record at 1 against −1 (last position).
fn contrastive_witness(n: usize) -> Result<DatasetPair> {
    let d = vec![CLIP; n];
    let mut d2 = d.clone();
    d2[n - 1] = -CLIP;
    DatasetPair::new(
        Dataset::scalars(d)?,
        Dataset::scalars(d2)?,
        Neighboring::ReplaceOne,
    )
}

fn contrastive_entry(params: &mut Params, id: &'static str, per_example: bool) -> Result<Entry> {
    let step = step_params(params, id)?;
    let z = step.noise_multiplier;
    let n = step.records;
    // The exact sensitivity is 4C (module docs).
    let true_mu = 4.0 * CLIP / (z * CLIP);
    let (claimed, source, status) = if per_example {
        let claimed = per_example_mu(&step);
        (
            claimed,
            format!(
                "privacy ledger of one full-batch step (q = 1, one repetition, noise multiplier {}): per-example clipping, sensitivity 2C, μ = {} (replace-one)",
                readable(z),
                readable(claimed)
            ),
            Status::buggy_if(
                true,
                "a contrastive loss accounted per example: each anchor's gradient depends on its batch partners (the negatives), so one record moves every anchor's gradient as well as its own",
                format!(
                    "{}-GDP exactly (sensitivity 4C: 2C from its own anchor, 2C from its place among the partners' negatives)",
                    readable(true_mu)
                ),
            ),
        )
    } else {
        (
            true_mu,
            format!(
                "sensitivity of the contrastive gradient sum, 4C (its own anchor and its place among the partners' negatives), noise {}·C: μ = {} (replace-one)",
                readable(z),
                readable(true_mu)
            ),
            Status::Correct,
        )
    };
    let noise = GaussianNoise::new(z * CLIP)?;
    let m = declared(
        id,
        PrivacyClaim::gaussian_dp(claimed)?,
        source,
        n,
        1,
        1,
        move |rows, rng, out| {
            let xs: Vec<f64> = rows.iter().map(|r| r[0]).collect();
            out.push(contrastive_gradient_sum(&xs) + noise.sample(&mut *rng));
        },
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness: contrastive_witness(n)?,
    })
}

fn contrastive(params: &mut Params) -> Result<Entry> {
    contrastive_entry(params, CONTRASTIVE_CORRECT, false)
}

fn contrastive_per_example(params: &mut Params) -> Result<Entry> {
    contrastive_entry(params, CONTRASTIVE_TWIN, true)
}

// ----------------------------------------------------------------------------------------
// Gradient accumulation.

/// The clipped sums M_1, …, M_k of k micro-batches cut by position (sizes as equal as
/// possible, the first n mod k one larger).
pub fn micro_batch_sums(xs: &[f64], k: usize) -> Vec<f64> {
    let (base, extra) = (xs.len() / k, xs.len() % k);
    let mut start = 0;
    (0..k)
        .map(|m| {
            let len = base + usize::from(m < extra);
            let s = xs[start..start + len]
                .iter()
                .map(|x| x.clamp(-CLIP, CLIP))
                .sum();
            start += len;
            s
        })
        .collect()
}

/// {1, 0, …, 0} against {−1, 0, …, 0}: the record in the first micro-batch.
fn accumulation_witness(n: usize) -> Result<DatasetPair> {
    let mut d = vec![0.0; n];
    let mut d2 = d.clone();
    d[0] = CLIP;
    d2[0] = -CLIP;
    DatasetPair::new(
        Dataset::scalars(d)?,
        Dataset::scalars(d2)?,
        Neighboring::ReplaceOne,
    )
}

fn accumulation_entry(params: &mut Params, id: &'static str, every_step: bool) -> Result<Entry> {
    let step = step_params(params, id)?;
    let k = params.take_integer_in(id, "micro_batches", 4.0, 1.0, MAX_MICRO_BATCHES as f64)?;
    let (z, n) = (step.noise_multiplier, step.records);
    if k > n {
        return Err(invalid(
            id,
            format!(
                "micro_batches = {k} with records = {n}; allowed: micro_batches ≤ records (every micro-batch holds a record)"
            ),
        ));
    }
    let claimed = per_example_mu(&step);
    let source = format!(
        "privacy ledger of one logical step (q = 1, one repetition, noise multiplier {}): the Gaussian mechanism with per-example sensitivity 2C, μ = {} (replace-one)",
        readable(z),
        readable(claimed)
    );
    let status = if every_step {
        let true_mu = 2.0 * (k as f64).sqrt() / z;
        Status::buggy_if(
            k > 1,
            "gradient accumulation noised and applied at every micro-step on a buffer zeroed once per logical step, accounted as one step: the first micro-batch's gradients enter all k noisy updates",
            format!(
                "{}-GDP exactly (μ = 2√k/z with k = {k}: a first-micro-batch record shifts the step by 2kC against noise √k·zC)",
                readable(true_mu)
            ),
        )
    } else {
        Status::Correct
    };
    let noise = GaussianNoise::new(z * CLIP)?;
    let m = declared(
        id,
        PrivacyClaim::gaussian_dp(claimed)?,
        source,
        n,
        1,
        1,
        move |rows, rng, out| {
            let xs: Vec<f64> = rows.iter().map(|r| r[0]).collect();
            let sums = micro_batch_sums(&xs, k);
            let mut buffer = 0.0;
            let mut update = 0.0;
            for (m, s) in sums.iter().enumerate() {
                buffer += s;
                if every_step {
                    // The optimizer steps on the noisy buffer at every micro-step.
                    update += buffer + noise.sample(&mut *rng);
                } else if m + 1 == k {
                    update = buffer + noise.sample(&mut *rng);
                }
            }
            out.push(update);
        },
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness: accumulation_witness(n)?,
    })
}

fn accumulation(params: &mut Params) -> Result<Entry> {
    accumulation_entry(params, ACCUMULATION_CORRECT, false)
}

fn accumulation_every_micro_step(params: &mut Params) -> Result<Entry> {
    accumulation_entry(params, ACCUMULATION_TWIN, true)
}

#[cfg(test)]
mod tests;
