//! Buggy mechanisms: realistic mistakes with known true guarantees. Each type's `# Bug` section
//! says what is wrong; the entry's [`Status::Buggy`] carries the same text for reports.

use super::correct::{
    categories_param, epsilon_param, histogram_witness, noisy_histogram_mechanism, report_noisy_max,
};
use super::declare::{noisy_statistic, scalar};
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::Result;
use crate::mechanism::Params;
use crate::noise::LaplaceNoise;

pub(crate) fn specs() -> Vec<Spec> {
    let mut all = vec![
        Spec {
            id: "laplace-sum-ignores-range",
            summary: "Laplace sum whose noise scale ignores the record range",
            build: laplace_sum_ignores_range,
        },
        Spec {
            id: "mean-fixed-n",
            summary: "mean calibrated for a public dataset size that add/remove makes private",
            build: mean_fixed_n,
        },
        Spec {
            id: "mean-noisy-count-scale",
            summary: "mean whose noise scale uses an unaccounted noisy count",
            build: mean_noisy_count_scale,
        },
        Spec {
            id: "histogram-scale-epsilon",
            summary: "histogram with Laplace scale ε instead of 1/ε",
            build: histogram_scale_epsilon,
        },
        Spec {
            id: "report-noisy-max-with-value",
            summary: "report noisy max that also releases the noisy maximum value",
            build: report_noisy_max_with_value,
        },
    ];
    all.extend(super::svt::buggy_specs());
    all
}

/// `laplace-sum-ignores-range`: the sum of records in [0, R] with Laplace noise of scale 1/ε: calibrated as if the range were
/// [0, 1].
///
/// # Bug
/// The sensitivity of the sum is R, not 1. With R = 10 (the default) the mechanism is 10ε-DP,
/// not ε-DP: true guarantee R·ε-DP.
fn laplace_sum_ignores_range(params: &mut Params) -> Result<Entry> {
    let id = "laplace-sum-ignores-range";
    let epsilon = epsilon_param(params, id)?;
    let range = params.take_in(id, "range", 10.0, 1.0, 1e6)?;
    let noise = LaplaceNoise::new(1.0 / epsilon)?;
    let m = noisy_statistic(
        id,
        PrivacyClaim::pure(epsilon)?,
        RecordDomain::real(0.0, range, 1),
        |d| d.column(0).iter().sum(),
        move |rng| noise.sample(rng),
    );
    let d = Dataset::scalars(vec![0.5 * range; 5])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[range])?, Neighboring::AddRemove)?;
    Ok(Entry {
        mechanism: Box::new(m),
        // With R = 1 the scale happens to be right.
        status: if range <= 1.0 {
            Status::Correct
        } else {
            Status::Buggy {
                bug:
                    "Laplace scale 1/ε ignores the record range [0, R]; the sum's sensitivity is R"
                        .into(),
                true_guarantee: format!("{}-DP (R·ε with R = {range})", range * epsilon),
            }
        },
        witness,
    })
}

/// `mean-fixed-n`: the mean of records in [0, 1] as true sum / true count plus Laplace noise of scale
/// 1/(n₀·ε), calibrated for datasets of a fixed size n₀ (default 100).
///
/// # Bug
/// Under add/remove the size is not public: the mean of n records moves by up to 1/(n + 1) when
/// one is added, so on small datasets the noise is far too small. On datasets of n ≥ 1 records
/// the true guarantee is (n₀/2)·ε-DP (the worst case is n = 1).
fn mean_fixed_n(params: &mut Params) -> Result<Entry> {
    let id = "mean-fixed-n";
    let epsilon = epsilon_param(params, id)?;
    let assumed_n = params.take_in(id, "assumed_n", 100.0, 1.0, 1e6)?;
    let noise = LaplaceNoise::new(1.0 / (assumed_n * epsilon))?;
    let m = noisy_statistic(
        id,
        PrivacyClaim::pure(epsilon)?,
        RecordDomain::real(0.0, 1.0, 1).with_sizes(1, 1000),
        |d| {
            let col = d.column(0);
            col.iter().sum::<f64>() / col.len().max(1) as f64
        },
        move |rng| noise.sample(rng),
    );
    let d = Dataset::scalars(vec![0.0; 10])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[1.0])?, Neighboring::AddRemove)?;
    // The worst case is n = 1 (mean moves by 1/2), so the true ε is n₀·ε/2: the claim fails
    // exactly when n₀ > 2.
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::buggy_if(
            assumed_n > 2.0,
            "noise calibrated for a public dataset size n₀, but under add/remove the size is \
             private and the mean's sensitivity is 1/(n + 1)",
            format!(
                "{}-DP on datasets of at least one record (n₀·ε/2)",
                assumed_n * epsilon / 2.0
            ),
        ),
        witness,
    })
}

/// `mean-noisy-count-scale`: the mean of records in [0, 1]: true sum / true count plus Laplace noise of scale 1/(ε·ñ), the
/// mean's sensitivity at a *noisy* count ñ = max(1, n + Lap(1/ε)).
///
/// # Bug
/// The noisy count is treated as free because it is never released, and the noise is then
/// calibrated to it: the count's ε is spent without being accounted, and whenever ñ overshoots
/// the true count the mean's noise is too small. The privacy loss conditioned on ñ grows
/// linearly in ñ and ñ is unbounded, so the mechanism is not ε′-DP for any finite ε′. On the
/// witness ({0} against {0, 1}, ε = 1) numerical integration gives H_e ≈ 0.026 in each
/// direction, where ε-DP allows 0.
fn mean_noisy_count_scale(params: &mut Params) -> Result<Entry> {
    let id = "mean-noisy-count-scale";
    let epsilon = epsilon_param(params, id)?;
    let count_noise = LaplaceNoise::new(1.0 / epsilon)?;
    let unit = LaplaceNoise::new(1.0)?;
    let m = scalar(
        id,
        PrivacyClaim::pure(epsilon)?,
        RecordDomain::real(0.0, 1.0, 1).with_sizes(1, 1000),
        |d| {
            let col = d.column(0);
            let count = col.len() as f64;
            (count, col.iter().sum::<f64>() / count.max(1.0))
        },
        move |&(count, mean), rng| {
            let noisy_count = (count + count_noise.sample(rng)).max(1.0);
            mean + unit.sample(rng) / (epsilon * noisy_count)
        },
    );
    let d = Dataset::scalars(vec![0.0])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[1.0])?, Neighboring::AddRemove)?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Buggy {
            bug: "noise scale 1/(ε·ñ) uses an unreleased, unaccounted noisy count ñ while the \
                  mean uses the true count"
                .into(),
            true_guarantee: "not ε′-DP for any finite ε′ (the noise scale is unbounded below)"
                .into(),
        },
        witness,
    })
}

fn histogram_scale_epsilon(params: &mut Params) -> Result<Entry> {
    let id = "histogram-scale-epsilon";
    // ε = 1 would hide the bug (ε = 1/ε); the default is ε = 0.5.
    let epsilon = params.take_in(id, "epsilon", 0.5, 1e-6, 100.0)?;
    let k = categories_param(params, id, 4.0)?;
    Ok(Entry {
        mechanism: Box::new(noisy_histogram_mechanism(id, epsilon, k, epsilon)?),
        // The bins' ℓ1-sensitivity is 1, so scale ε gives (1/ε)-DP: the claim fails only for
        // ε < 1 (at ε ≥ 1 the noise is at least the 1/ε the claim needs).
        status: Status::buggy_if(
            1.0 / epsilon > epsilon,
            "Laplace scale ε instead of 1/ε on every bin",
            format!("{}-DP (1/ε)", 1.0 / epsilon),
        ),
        witness: histogram_witness()?,
    })
}

fn report_noisy_max_with_value(params: &mut Params) -> Result<Entry> {
    let id = "report-noisy-max-with-value";
    let epsilon = epsilon_param(params, id)?;
    let k = categories_param(params, id, 2.0)?;
    // A clear winner losing one vote: a low released maximum is far likelier with 4 votes.
    let d = Dataset::scalars(vec![0.0; 4])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[0.0])?, Neighboring::AddRemove)?;
    Ok(Entry {
        mechanism: Box::new(report_noisy_max(epsilon, k, true)?),
        status: Status::Buggy {
            bug: "releases the noisy maximum value along with its index; Gumbel noise has a \
                  doubly exponential left tail, so a low released value is far likelier when the \
                  winner has one vote less"
                .into(),
            true_guarantee: "not ε′-DP for any finite ε′".into(),
        },
        witness,
    })
}
