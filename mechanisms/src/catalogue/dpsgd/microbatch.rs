//! DP-GD with microbatches, as TensorFlow Privacy's optimizers run it (`num_microbatches`): the
//! batch is split **by position** into microbatches of b = 2 examples, each microbatch's mean
//! gradient is clipped to C, the clipped means are summed and N(0, σ²) noise is added. Gradients
//! are one-dimensional (a record is its gradient, in [−R, R] with R = 4, C = 1), one full-batch
//! step, the noisy sum released.
//!
//! | id | neighbors | claim | true guarantee |
//! |---|---|---|---|
//! | `dpsgd-microbatches` | replace-one | (ε, 1e-5) with σ for sensitivity 2C | as claimed, tight on the witness |
//! | `dpsgd-microbatches-add-remove` | add-remove | (ε, 1e-5) with σ for sensitivity C | sensitivity ≥ 4C on its 16-record witness |
//!
//! # Claim (`dpsgd-microbatches`)
//! Replacing one example keeps every position, so only its own microbatch changes, and that
//! microbatch's clipped mean moves by at most 2C: the sum has ℓ2-sensitivity 2C and the release
//! is the Gaussian mechanism with σ from the analytic calibration (Balle & Wang 2018) for
//! (ε, δ) at sensitivity 2C. The witness {4, 2} against {−4, 2} moves the clipped mean from 1 to
//! −1, so the claim is tight there.
//!
//! # Bug (`dpsgd-microbatches-add-remove`)
//! The ledger accounts the run as per-example DP-SGD under add/remove (sensitivity C, σ
//! calibrated for it), but adding or removing an example shifts every later example into the
//! next microbatch, and each of those microbatches' clipped means can move. On the witness
//! D = [0, 4, 4, 0] repeated 4 times (16 records, 8 microbatches: each mean 2, clipped to 1,
//! sum 8) against D without its first record (microbatches (4, 4), (0, 0), …, (0): sum 4), the sum
//! moves by 4C: the pair is a Gaussian shift of 4C/σ, four times what the claim allows for. The
//! status is computed from that shift (exact Gaussian profile at the claimed ε). Position-based
//! microbatching is only per-example-private under replace-one, or after a random permutation
//! that the accountant models.

use crate::catalogue::declare::Declared;
use crate::catalogue::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::math::{analytic_gaussian_sigma, gaussian_dp_delta, readable};
use crate::mechanism::Params;
use crate::noise::GaussianNoise;
use crate::samples::Samples;

/// Examples per microbatch.
const MICROBATCH: usize = 2;
/// Clip norm of a microbatch's mean gradient.
const CLIP: f64 = 1.0;
/// Gradients lie in [−R, R].
const RANGE: f64 = 4.0;
/// δ of both claims.
const DELTA: f64 = 1e-5;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "dpsgd-microbatches",
            summary: "DP-GD with position-based microbatches of 2 (mean clipped per microbatch), replace-one claim for sensitivity 2C",
            build: microbatches,
        },
        Spec {
            id: "dpsgd-microbatches-add-remove",
            summary: "the same microbatched DP-GD accounted per example under add/remove (sensitivity C), though a removal shifts every later microbatch",
            build: microbatches_add_remove,
        },
    ]
}

/// Σ over position-based microbatches of the clipped microbatch mean (the last one may be short).
pub fn clipped_microbatch_sum(gradients: &[f64]) -> f64 {
    gradients
        .chunks(MICROBATCH)
        .map(|m| (m.iter().sum::<f64>() / m.len() as f64).clamp(-CLIP, CLIP))
        .sum()
}

fn mechanism(
    id: &'static str,
    epsilon: f64,
    sensitivity: f64,
    neighboring: Neighboring,
) -> Result<(Declared, f64)> {
    let sigma = analytic_gaussian_sigma(epsilon, DELTA, sensitivity).ok_or_else(|| {
        MechanismError::InvalidParameter {
            mechanism: id.into(),
            message: format!("analytic Gaussian calibration failed at epsilon = {epsilon}"),
        }
    })?;
    let noise = GaussianNoise::new(sigma)?;
    let m = Declared {
        id,
        claim: PrivacyClaim::approximate(epsilon, DELTA)?,
        claim_source: Some(format!(
            "privacy ledger: one full-batch Gaussian step, σ = {} for sensitivity {} under {} (analytic Gaussian, Balle & Wang 2018)",
            readable(sigma),
            readable(sensitivity),
            neighboring
        )),
        neighboring,
        domain: RecordDomain::real(-RANGE, RANGE, 1).with_sizes(1, 64),
        output_dim: 1,
        recommended_transform: None,
        setting: crate::mechanism::DpSetting::Central,
        sample: Box::new(move |data: &Dataset, n, rng| {
            let s = clipped_microbatch_sum(&data.column(0));
            Ok(Samples::from_column(
                (0..n).map(|_| s + noise.sample(&mut *rng)).collect(),
            ))
        }),
    };
    Ok((m, sigma))
}

fn epsilon_param(params: &mut Params, id: &str) -> Result<f64> {
    params.take_in(id, "epsilon", 1.0, 0.05, 20.0)
}

fn microbatches(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-microbatches";
    let epsilon = epsilon_param(params, id)?;
    let (m, _) = mechanism(id, epsilon, 2.0 * CLIP, Neighboring::ReplaceOne)?;
    let witness = DatasetPair::new(
        Dataset::scalars(vec![RANGE, 2.0])?,
        Dataset::scalars(vec![-RANGE, 2.0])?,
        Neighboring::ReplaceOne,
    )?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness,
    })
}

fn microbatches_add_remove(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-microbatches-add-remove";
    let epsilon = epsilon_param(params, id)?;
    let (m, sigma) = mechanism(id, epsilon, CLIP, Neighboring::AddRemove)?;
    let d: Vec<f64> = [0.0, RANGE, RANGE, 0.0].repeat(4);
    let witness = DatasetPair::new(
        Dataset::scalars(d.clone())?,
        Dataset::scalars(d[1..].to_vec())?,
        Neighboring::AddRemove,
    )?;
    // The witness is a Gaussian shift of |Δ|/σ; its exact δ at the claimed ε is a lower bound on
    // the mechanism's δ there.
    let shift = (clipped_microbatch_sum(&d) - clipped_microbatch_sum(&d[1..])).abs();
    let true_delta = gaussian_dp_delta(epsilon, shift / sigma);
    let status = Status::buggy_if(
        true_delta > DELTA * (1.0 + 1e-6),
        "position-based microbatches accounted per example under add/remove: removing an example shifts every later microbatch",
        format!(
            "δ ≥ {} at ε = {} on the witness (a Gaussian shift of {}C/σ, μ = {})",
            readable(true_delta),
            readable(epsilon),
            readable(shift / CLIP),
            readable(shift / sigma)
        ),
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn witness_shifts_and_statuses() {
        let d: Vec<f64> = [0.0, RANGE, RANGE, 0.0].repeat(4);
        assert_eq!(clipped_microbatch_sum(&d), 8.0);
        assert_eq!(clipped_microbatch_sum(&d[1..]), 4.0);
        assert_eq!(clipped_microbatch_sum(&[RANGE, 2.0]), 1.0);
        assert_eq!(clipped_microbatch_sum(&[-RANGE, 2.0]), -1.0);
        let ok = crate::catalogue::build("dpsgd-microbatches", &Params::default()).unwrap();
        assert!(!ok.status.is_buggy());
        let bad = crate::catalogue::build("dpsgd-microbatches-add-remove", &Params::default()).unwrap();
        assert!(bad.status.is_buggy());
        let e = crate::catalogue::build("dpsgd-microbatches", &Params::default().set("epsilon", 0.0))
            .unwrap_err()
            .to_string();
        assert!(e.contains("epsilon"), "{e}");
    }
}
