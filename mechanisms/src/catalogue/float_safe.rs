//! Float-safe twins of the textbook entries: the same algorithm, with noise whose floating-point
//! representation carries nothing about the data. Beside its textbook twin (which keeps its
//! claim only in the real-valued model, see [`super::float_model`]) each is a lesson in itself:
//! both pass dp-audit's mechanism layer, only this one passes the floating-point layer.

use super::correct::{
    categories_param, epsilon_param, histogram_with_noise, histogram_witness, top_of_range_witness,
};
use super::declare::scalar;
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::exact::ExactDiscreteGaussian;
use crate::mechanism::Params;
use crate::noise::DiscreteLaplaceNoise;
use crate::snapping::SnappingLaplace;

/// Id of the snapping twin of `laplace-sum`.
pub(crate) const LAPLACE_SUM_SNAPPING: &str = "laplace-sum-snapping";

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: LAPLACE_SUM_SNAPPING,
            summary: "laplace-sum made float-safe: the snapping mechanism (Mironov 2012), outputs on a power-of-two grid, clamped to ±bound",
            build: laplace_sum_snapping,
        },
        Spec {
            id: "gaussian-sum-discrete",
            summary: "gaussian-sum made float-safe: records rounded to the grid 2^-k, integer sum plus exact discrete Gaussian noise (Canonne, Kamath & Steinke 2020), rescaled exactly",
            build: gaussian_sum_discrete,
        },
        Spec {
            id: "noisy-histogram-geometric",
            summary: "noisy-histogram made float-safe: each integer count plus discrete Laplace (two-sided geometric) noise of scale 1/ε",
            build: noisy_histogram_geometric,
        },
    ]
}

/// Counts of k bins (records are integers 0..k), each plus discrete Laplace noise
/// P(j) ∝ exp(−ε|j|) ([`crate::noise::DiscreteLaplaceNoise`]).
///
/// # Claim
/// Pure ε under add/remove: one record moves one count by 1 (L1 sensitivity 1), and the
/// discrete Laplace mechanism with parameter e^−ε is ε-DP for integer queries of sensitivity 1
/// (Ghosh, Roughgarden & Sundararajan 2009).
///
/// # Why it is correct as shipped
/// Integer counts plus integer noise: every output is an integer, represented exactly in
/// binary64, so there is no representation to leak (the floating-point layer is skipped and
/// says so), where `noisy-histogram` (f64 Laplace on each count) fails that layer.
///
/// # Output
/// k integers: the noisy counts.
fn noisy_histogram_geometric(params: &mut Params) -> Result<Entry> {
    let id = "noisy-histogram-geometric";
    let epsilon = epsilon_param(params, id)?;
    let k = categories_param(params, id, 4.0)?;
    let noise = DiscreteLaplaceNoise::new(1.0 / epsilon)?;
    let m = histogram_with_noise(id, epsilon, k, move |rng| noise.sample(rng))?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: histogram_witness()?,
    })
}

/// Sum of records in [0, range] released by the snapping mechanism
/// ([`crate::snapping::SnappingLaplace`]) at ε, with the sum clamped to ±`bound` (default 1024,
/// in the sum's units).
///
/// # Claim
/// Pure ε′ = ε·(1 + 2^−49·bound/range) rounded up (Mironov 2012, Theorem 1, for the sum scaled
/// to sensitivity 1: `range` must be a power of two so that the scaling is exact). At the
/// defaults ε′ exceeds ε by 1.8e-12.
///
/// # Why it is correct as shipped
/// Every output is a multiple of the grid Λ·range (Λ the smallest power of two ≥ 1/ε) in
/// [−bound, bound]: which doubles occur does not depend on the data, so the floating-point
/// layer has nothing to find, while `laplace-sum` (statrs' Laplace added to the exact sum)
/// fails it (ε ≥ 7.8 at 10^6 releases per side).
///
/// # Output
/// One real: the snapped noisy sum.
fn laplace_sum_snapping(params: &mut Params) -> Result<Entry> {
    let id = LAPLACE_SUM_SNAPPING;
    let epsilon = epsilon_param(params, id)?;
    let range = params.take_in(id, "range", 1.0, 2f64.powi(-20), 2f64.powi(20))?;
    let bound = params.take_in(id, "bound", 1024.0, 1.0, 2f64.powi(40))?;
    let snapping = SnappingLaplace::with_sensitivity(epsilon, range, bound).map_err(|e| {
        MechanismError::InvalidParameter {
            mechanism: id.into(),
            message: parameter_message(e),
        }
    })?;
    let m = scalar(
        id,
        PrivacyClaim::pure(snapping.epsilon())?,
        RecordDomain::real(0.0, range, 1),
        |d| d.column(0).iter().sum::<f64>(),
        move |s, rng| snapping.release(*s, rng),
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: top_of_range_witness(range)?,
    })
}

/// Sum of records in [0, 1], each rounded to the grid γ = 2^−k (k = `grid_bits`, default 6), plus
/// discrete Gaussian noise N_ℤ(0, σ_ℤ²) on the integer sum in grid units
/// ([`crate::exact::ExactDiscreteGaussian`], exact), released as γ·(sum + noise).
///
/// # Claim
/// ρ-zCDP with ρ = Δ²/(2σ_ℤ²) (Canonne, Kamath & Steinke 2020, Theorem 4), Δ = 2^k the largest
/// rounded record in grid units (add/remove), σ_ℤ = 2^k·σ and σ = 1/√(2·`rho`) (default
/// ρ = 0.5, σ = 1 in the sum's units): the claim is ρ recomputed from the σ_ℤ actually used,
/// rounded up. Rounding each record is a per-record map, so neighbours stay neighbours.
///
/// # Why it is correct as shipped
/// The noise is an exact integer and the rescaling by γ (a power of two) is exact: every output
/// is a multiple of γ whatever the data, so the representation carries nothing the value does not,
/// where `gaussian-sum-analytic` (rand_distr's Normal added in f64) fails the floating-point
/// layer.
///
/// # Output
/// One real: the noisy sum, a multiple of 2^−k.
fn gaussian_sum_discrete(params: &mut Params) -> Result<Entry> {
    let id = "gaussian-sum-discrete";
    let rho = params.take_in(id, "rho", 0.5, 1e-4, 100.0)?;
    let k = params.take_integer_in(id, "grid_bits", 6.0, 0.0, 20.0)?;
    let scale = 2f64.powi(k as i32);
    let sigma_z = scale / (2.0 * rho).sqrt();
    let noise =
        ExactDiscreteGaussian::new(sigma_z).map_err(|e| MechanismError::InvalidParameter {
            mechanism: id.into(),
            message: parameter_message(e),
        })?;
    // ρ = Δ²/(2σ_ℤ²) for the σ_ℤ used; two roundings, two steps up.
    let claimed = (scale * scale / (2.0 * sigma_z * sigma_z))
        .next_up()
        .next_up();
    let m = scalar(
        id,
        PrivacyClaim::ZeroConcentrated { rho: claimed },
        RecordDomain::real(0.0, 1.0, 1),
        move |d: &Dataset| -> i64 { d.column(0).iter().map(|x| (x * scale).round() as i64).sum() },
        move |q, rng| (*q + noise.sample(rng)) as f64 / scale,
    );
    let d = Dataset::scalars(vec![0.5; 5])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[1.0])?, Neighboring::AddRemove)?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness,
    })
}

/// The message of a sampler's parameter error, without the sampler's own prefix (the entry's id
/// names the parameter's owner).
fn parameter_message(e: MechanismError) -> String {
    match e {
        MechanismError::InvalidParameter { message, .. } => message,
        other => other.to_string(),
    }
}
