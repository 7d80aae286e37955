//! Correct mechanisms: textbook constructions that keep their claims.

use rand::distr::{Distribution, weighted::WeightedIndex};
use rand::{Rng, RngExt};

use super::declare::{Declared, noisy_statistic, scalar, vector};
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::math::{analytic_gaussian_sigma, classical_gaussian_sigma};
use crate::mechanism::Params;
use crate::noise::{DiscreteLaplaceNoise, GaussianNoise, GumbelNoise, LaplaceNoise};
use crate::samples::Samples;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "laplace-sum",
            summary: "sum of records clamped to the range, plus Laplace noise of scale range/ε",
            build: laplace_sum,
        },
        Spec {
            id: "laplace-count",
            summary: "number of records plus Laplace noise of scale 1/ε",
            build: laplace_count,
        },
        Spec {
            id: "laplace-mean",
            summary: "mean as a noisy sum over a noisy count, ε split between them",
            build: laplace_mean,
        },
        Spec {
            id: "gaussian-sum-analytic",
            summary: "clamped sum plus Gaussian noise with σ from the analytic Gaussian mechanism (Balle & Wang 2018)",
            build: gaussian_sum_analytic,
        },
        Spec {
            id: "gaussian-sum-classical",
            summary: "clamped sum plus Gaussian noise with the classical σ = Δ·√(2 ln(1.25/δ))/ε (valid for ε < 1)",
            build: gaussian_sum_classical,
        },
        Spec {
            id: "geometric-count",
            summary: "count plus two-sided geometric noise (the discrete Laplace mechanism)",
            build: geometric_count,
        },
        Spec {
            id: "randomized-response",
            summary: "one bit, kept with probability e^ε/(1 + e^ε)",
            build: randomized_response,
        },
        Spec {
            id: "kary-randomized-response",
            summary: "one of k categories, kept with probability e^ε/(e^ε + k − 1)",
            build: kary_randomized_response,
        },
        Spec {
            id: "report-noisy-max-gumbel",
            summary: "index of the largest count after Gumbel noise (the exponential mechanism)",
            build: report_noisy_max_gumbel,
        },
        Spec {
            id: "exponential-mechanism",
            summary: "a candidate sampled with probability ∝ exp(ε·utility/(2Δ))",
            build: exponential_mechanism,
        },
        Spec {
            id: "noisy-histogram",
            summary: "counts of each bin plus Laplace noise of scale 1/ε",
            build: noisy_histogram,
        },
    ]
}

/// Reads the common ε parameter (default 1).
pub(crate) fn epsilon_param(params: &mut Params, id: &str) -> Result<f64> {
    params.take_in(id, "epsilon", 1.0, 1e-6, 100.0)
}

/// `laplace-sum`: the sum of records in `[0, R]` plus Laplace noise of scale R/ε.
///
/// # Claim
/// ε-DP under add/remove: the sum has ℓ1-sensitivity R (Dwork, McSherry, Nissim & Smith 2006,
/// Theorem 1; Dwork & Roth 2014, Theorem 3.6).
///
/// # Output
/// One real: the noisy sum.
fn laplace_sum(params: &mut Params) -> Result<Entry> {
    let id = "laplace-sum";
    let epsilon = epsilon_param(params, id)?;
    let range = params.take_in(id, "range", 1.0, 1e-6, 1e6)?;
    let noise = LaplaceNoise::new(range / epsilon)?;
    let m = noisy_statistic(
        id,
        PrivacyClaim::pure(epsilon)?,
        RecordDomain::real(0.0, range, 1),
        |d| d.column(0).iter().sum(),
        move |rng| noise.sample(rng),
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: top_of_range_witness(range)?,
    })
}

/// The tightest pair of a clamped sum over [0, range]: adding a record at the top of the range
/// to five records at its middle (`laplace-sum` and its float-safe twin).
pub(crate) fn top_of_range_witness(range: f64) -> Result<DatasetPair> {
    let d = Dataset::scalars(vec![0.5 * range; 5])?;
    DatasetPair::new(d.clone(), d.with_record(&[range])?, Neighboring::AddRemove)
}

/// Reads the number of categories `k` (default `default`, 2 to 64).
pub(crate) fn categories_param(params: &mut Params, id: &str, default: f64) -> Result<usize> {
    let k = params.take_in(id, "k", default, 2.0, 64.0)?;
    if k.fract() != 0.0 {
        return Err(MechanismError::InvalidParameter {
            mechanism: id.into(),
            message: format!("k = {k}; allowed: an integer from 2 to 64"),
        });
    }
    Ok(k as usize)
}

/// Counts of integer records `0..k` (records are validated against the domain by the caller;
/// values outside `0..k` are ignored).
pub(crate) fn category_counts(data: &Dataset, k: usize) -> Vec<f64> {
    let mut counts = vec![0.0; k];
    for x in data.column(0) {
        if x >= 0.0 && (x as usize) < k {
            counts[x as usize] += 1.0;
        }
    }
    counts
}

/// `laplace-count`: the number of records plus Laplace noise of scale 1/ε.
///
/// # Claim
/// ε-DP under add/remove: the count has sensitivity 1 (Dwork & Roth 2014, Theorem 3.6).
///
/// # Output
/// One real: the noisy count.
fn laplace_count(params: &mut Params) -> Result<Entry> {
    let epsilon = epsilon_param(params, "laplace-count")?;
    let noise = LaplaceNoise::new(1.0 / epsilon)?;
    let m = noisy_statistic(
        "laplace-count",
        PrivacyClaim::pure(epsilon)?,
        RecordDomain::real(0.0, 1.0, 1),
        |d| d.len() as f64,
        move |rng| noise.sample(rng),
    );
    let d = Dataset::scalars(vec![0.5; 3])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[0.5])?, Neighboring::AddRemove)?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness,
    })
}

/// `laplace-mean`: the mean as a noisy sum divided by a noisy count, each with half the budget.
///
/// S̃ = Σx + Lap(2R/ε), ñ = |D| + Lap(2/ε), output clamp(S̃ / max(ñ, 1), 0, R).
///
/// # Claim
/// ε-DP under add/remove: S̃ and ñ are each (ε/2)-DP (sensitivities R and 1), basic composition
/// gives ε, and the division and clamping are post-processing (Dwork & Roth 2014, Theorem 3.16
/// and Proposition 2.1).
///
/// # Output
/// One real in [0, R].
fn laplace_mean(params: &mut Params) -> Result<Entry> {
    let id = "laplace-mean";
    let epsilon = epsilon_param(params, id)?;
    let range = params.take_in(id, "range", 1.0, 1e-6, 1e6)?;
    let sum_noise = LaplaceNoise::new(2.0 * range / epsilon)?;
    let count_noise = LaplaceNoise::new(2.0 / epsilon)?;
    let m = scalar(
        id,
        PrivacyClaim::pure(epsilon)?,
        RecordDomain::real(0.0, range, 1),
        |d| (d.column(0).iter().sum::<f64>(), d.len() as f64),
        move |&(sum, count), rng| {
            let s = sum + sum_noise.sample(rng);
            let c = (count + count_noise.sample(rng)).max(1.0);
            (s / c).clamp(0.0, range)
        },
    );
    let d = Dataset::scalars(vec![0.0])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[range])?, Neighboring::AddRemove)?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness,
    })
}

/// The sum of records in [0, 1] plus Gaussian noise of standard deviation σ calibrated for
/// (ε, δ) (`gaussian-sum-analytic`, `gaussian-sum-classical`).
///
/// # Claim
/// (ε, δ)-DP under add/remove (ℓ2-sensitivity 1). Analytic: the Gaussian mechanism with
/// σ = Δ/μ is exactly μ-GDP and δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (Balle & Wang 2018,
/// Theorem 8); σ is found by bisection and rounded up. Classical: Dwork & Roth 2014, Theorem A.1,
/// σ = √(2 ln(1.25/δ))·Δ/ε, which requires ε < 1; the builder refuses ε ≥ 1.
///
/// # Output
/// One real: the noisy sum.
fn gaussian_sum(
    id: &'static str,
    epsilon: f64,
    delta: f64,
    sigma: f64,
    calibration: &str,
) -> Result<Declared> {
    let noise = GaussianNoise::new(sigma)?;
    Ok(noisy_statistic(
        id,
        PrivacyClaim::approximate(epsilon, delta)?,
        RecordDomain::real(0.0, 1.0, 1),
        |d| d.column(0).iter().sum(),
        move |rng| noise.sample(rng),
    )
    .with_claim_source(format!(
        "{calibration}: sigma = {sigma:.6} for sensitivity 1"
    )))
}

/// Reads δ (default 1e-5, allowed 1e-12 to 0.1).
pub(crate) fn delta_param(params: &mut Params, id: &str) -> Result<f64> {
    params.take_in(id, "delta", 1e-5, 1e-12, 0.1)
}

/// A sum pair where one record at the top of [0, 1] is added: the Gaussian's worst case.
fn unit_sum_witness() -> Result<DatasetPair> {
    let d = Dataset::scalars(vec![0.5; 5])?;
    DatasetPair::new(d.clone(), d.with_record(&[1.0])?, Neighboring::AddRemove)
}

fn gaussian_sum_analytic(params: &mut Params) -> Result<Entry> {
    let id = "gaussian-sum-analytic";
    let epsilon = epsilon_param(params, id)?;
    let delta = delta_param(params, id)?;
    let sigma = analytic_gaussian_sigma(epsilon, delta, 1.0).ok_or_else(|| {
        MechanismError::InvalidParameter {
            mechanism: id.into(),
            message: format!(
                "no analytic Gaussian calibration for epsilon = {epsilon}, delta = {delta}"
            ),
        }
    })?;
    Ok(Entry {
        mechanism: Box::new(gaussian_sum(
            id,
            epsilon,
            delta,
            sigma,
            "analytic Gaussian calibration (Balle & Wang 2018)",
        )?),
        status: Status::Correct,
        witness: unit_sum_witness()?,
    })
}

fn gaussian_sum_classical(params: &mut Params) -> Result<Entry> {
    let id = "gaussian-sum-classical";
    let epsilon = params.take("epsilon", 0.5);
    if !(epsilon.is_finite() && epsilon > 0.0 && epsilon < 1.0) {
        return Err(MechanismError::InvalidParameter {
            mechanism: id.into(),
            message: format!(
                "epsilon = {epsilon}; allowed: 0 < epsilon < 1 (the classical calibration of Dwork & Roth 2014, Thm A.1, is only valid for epsilon < 1; use gaussian-sum-analytic)"
            ),
        });
    }
    let delta = delta_param(params, id)?;
    let sigma = classical_gaussian_sigma(epsilon, delta, 1.0);
    Ok(Entry {
        mechanism: Box::new(gaussian_sum(
            id,
            epsilon,
            delta,
            sigma,
            "classical Gaussian calibration (Dwork & Roth 2014, Thm A.1)",
        )?),
        status: Status::Correct,
        witness: unit_sum_witness()?,
    })
}

/// `geometric-count`: the number of records plus two-sided geometric (discrete Laplace) noise,
/// P(k) ∝ e^{−ε|k|}.
///
/// # Claim
/// ε-DP under add/remove (Ghosh, Roughgarden & Sundararajan 2009): the count has sensitivity 1
/// and the noise ratio P(k)/P(k±1) is at most e^ε.
///
/// # Output
/// One integer (as a real): the noisy count.
fn geometric_count(params: &mut Params) -> Result<Entry> {
    let epsilon = epsilon_param(params, "geometric-count")?;
    let noise = DiscreteLaplaceNoise::new(1.0 / epsilon)?;
    let m = noisy_statistic(
        "geometric-count",
        PrivacyClaim::pure(epsilon)?,
        RecordDomain::integer(0, 1, 1),
        |d| d.len() as f64,
        move |rng| noise.sample(rng),
    );
    let d = Dataset::scalars(vec![1.0; 3])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[1.0])?, Neighboring::AddRemove)?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness,
    })
}

/// k-ary randomized response (Warner 1965; Kairouz, Oh & Viswanath 2014) applied to every
/// record, released as the histogram of the randomized values.
///
/// Each record x ∈ {0, …, k−1} is reported truthfully with probability e^ε/(e^ε + k − 1) and as
/// each other value with probability 1/(e^ε + k − 1). With k = 2 this is binary randomized
/// response; the release is then the number of reported ones.
///
/// # Claim
/// ε-DP under replace-one: each record's report is ε-locally-DP, the reports are independent and
/// only the replaced record's report changes distribution; the histogram is post-processing.
///
/// # Output
/// k = 2: one integer (the count of reported ones). k > 2: k counts.
/// One response: `x` kept with probability e^ε/(e^ε + k − 1), else uniform over the k − 1 others.
fn respond(epsilon: f64, k: usize, x: usize, rng: &mut dyn Rng) -> usize {
    let e = epsilon.exp();
    let keep = e / (e + k as f64 - 1.0);
    if rng.random::<f64>() < keep {
        x
    } else {
        // Uniform over the k − 1 other values.
        let j = rng.random_range(0..k - 1);
        if j >= x { j + 1 } else { j }
    }
}

/// Randomized response over k values as a declaration (`randomized-response` for k = 2, whose
/// release is the count of ones; `kary-randomized-response` otherwise, releasing the k counts).
fn randomized_response_mechanism(epsilon: f64, k: usize) -> Result<Declared> {
    let (id, dim) = if k == 2 {
        ("randomized-response", 1)
    } else {
        ("kary-randomized-response", k)
    };
    Ok(vector(
        id,
        PrivacyClaim::pure(epsilon)?,
        Neighboring::ReplaceOne,
        RecordDomain::integer(0, k as i64 - 1, 1).with_sizes(1, 1000),
        dim,
        |data: &Dataset| -> Vec<usize> { data.column(0).iter().map(|&x| x as usize).collect() },
        move |records, rng, out| {
            let mut counts = vec![0.0; k];
            for &x in records {
                counts[respond(epsilon, k, x, rng)] += 1.0;
            }
            if k == 2 {
                out.push(counts[1]);
            } else {
                out.extend(counts);
            }
        },
    ))
}

fn randomized_response(params: &mut Params) -> Result<Entry> {
    let epsilon = epsilon_param(params, "randomized-response")?;
    // One record, flipped: the tight case.
    let witness = DatasetPair::new(
        Dataset::scalars(vec![0.0])?,
        Dataset::scalars(vec![1.0])?,
        Neighboring::ReplaceOne,
    )?;
    Ok(Entry {
        mechanism: Box::new(randomized_response_mechanism(epsilon, 2)?),
        status: Status::Correct,
        witness,
    })
}

fn kary_randomized_response(params: &mut Params) -> Result<Entry> {
    let id = "kary-randomized-response";
    let epsilon = epsilon_param(params, id)?;
    let k = categories_param(params, id, 4.0)?;
    if k == 2 {
        return Err(MechanismError::InvalidParameter {
            mechanism: id.into(),
            message: "k = 2; allowed: 3 to 64 (k = 2 is randomized-response)".into(),
        });
    }
    let witness = DatasetPair::new(
        Dataset::scalars(vec![0.0, 2.0])?,
        Dataset::scalars(vec![1.0, 2.0])?,
        Neighboring::ReplaceOne,
    )?;
    Ok(Entry {
        mechanism: Box::new(randomized_response_mechanism(epsilon, k)?),
        status: Status::Correct,
        witness,
    })
}

/// Report noisy max: the index of the largest of k category counts after adding Gumbel noise of
/// scale 1/ε to each.
///
/// # Claim
/// ε-DP under add/remove. With Gumbel noise, the argmax is distributed exactly as the exponential
/// mechanism with P(i) ∝ exp(ε·c_i) (the Gumbel-max trick; Durfee & Rogers 2019). Adding or
/// removing a record changes one count by 1 and all in the same direction, so the monotone
/// version of the exponential mechanism's analysis applies (McSherry & Talwar 2007; Dwork & Roth
/// 2014, Theorem 3.10 and the remark on monotone utilities).
///
/// # Output
/// One integer (as a real): the reported index.
/// Report noisy max over `k` category counts with Gumbel noise of scale 1/ε as a declaration;
/// `with_value` also releases the noisy maximum (the bug of `report-noisy-max-with-value`).
pub(crate) fn report_noisy_max(epsilon: f64, k: usize, with_value: bool) -> Result<Declared> {
    let noise = GumbelNoise::new(1.0 / epsilon)?;
    let (id, dim) = if with_value {
        ("report-noisy-max-with-value", 2)
    } else {
        ("report-noisy-max-gumbel", 1)
    };
    Ok(vector(
        id,
        PrivacyClaim::pure(epsilon)?,
        Neighboring::AddRemove,
        RecordDomain::integer(0, k as i64 - 1, 1),
        dim,
        move |data: &Dataset| category_counts(data, k),
        move |counts, rng, out| {
            let (mut best, mut best_value) = (0usize, f64::NEG_INFINITY);
            for (i, c) in counts.iter().enumerate() {
                let v = c + noise.sample(rng);
                if v > best_value {
                    best = i;
                    best_value = v;
                }
            }
            out.push(best as f64);
            if with_value {
                out.push(best_value);
            }
        },
    ))
}

fn report_noisy_max_gumbel(params: &mut Params) -> Result<Entry> {
    let id = "report-noisy-max-gumbel";
    let epsilon = epsilon_param(params, id)?;
    let k = categories_param(params, id, 4.0)?;
    // A tie broken by one extra vote.
    let d = Dataset::scalars(vec![0.0, 1.0])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[0.0])?, Neighboring::AddRemove)?;
    Ok(Entry {
        mechanism: Box::new(report_noisy_max(epsilon, k, false)?),
        status: Status::Correct,
        witness,
    })
}

/// Exponential mechanism for the median over the finite set {0, …, k−1}.
///
/// Utility u(D, r) = −|#{x ∈ D : x ≤ r} − |D|/2|, sensitivity 1 under replace-one (the size is
/// fixed and one rank count moves by at most 1); P(r) ∝ exp(ε·u(D, r)/2).
///
/// # Claim
/// ε-DP under replace-one (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10).
///
/// # Output
/// One integer (as a real): the released candidate.
/// Selection probabilities of the exponential mechanism for the median of `data` over
/// {0, …, k−1} (utility −|rank − |D|/2|, weight exp(ε·u/2)).
pub fn median_probabilities(epsilon: f64, k: usize, data: &Dataset) -> Vec<f64> {
    let counts = category_counts(data, k);
    let half = data.len() as f64 / 2.0;
    let mut below = 0.0;
    let logits: Vec<f64> = counts
        .iter()
        .map(|c| {
            below += c;
            -epsilon * (below - half).abs() / 2.0
        })
        .collect();
    let max = logits.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let w: Vec<f64> = logits.iter().map(|l| (l - max).exp()).collect();
    let total: f64 = w.iter().sum();
    w.iter().map(|x| x / total).collect()
}

fn exponential_mechanism(params: &mut Params) -> Result<Entry> {
    let id = "exponential-mechanism";
    let epsilon = epsilon_param(params, id)?;
    let k = categories_param(params, id, 8.0)?;
    let top = (k - 1) as f64;
    let witness = DatasetPair::new(
        Dataset::scalars(vec![0.0, 0.0, top, top])?,
        Dataset::scalars(vec![0.0, top, top, top])?,
        Neighboring::ReplaceOne,
    )?;
    Ok(Entry {
        mechanism: Box::new(Declared {
            id,
            claim: PrivacyClaim::pure(epsilon)?,
            claim_source: None,
            neighboring: Neighboring::ReplaceOne,
            domain: RecordDomain::integer(0, k as i64 - 1, 1).with_sizes(1, 1000),
            output_dim: 1,
            recommended_transform: None,
            setting: crate::mechanism::DpSetting::Central,
            sample: Box::new(move |data, n, rng| {
                let p = median_probabilities(epsilon, k, data);
                let dist = WeightedIndex::new(&p).map_err(|e| MechanismError::Sampling {
                    mechanism: "exponential-mechanism".into(),
                    message: format!("selection probabilities {p:?}: {e}"),
                })?;
                Ok(Samples::from_column(
                    (0..n).map(|_| dist.sample(rng) as f64).collect(),
                ))
            }),
        }),
        status: Status::Correct,
        witness,
    })
}

/// Histogram of integer records over k bins with Laplace noise of scale 1/ε on every bin.
///
/// # Claim
/// ε-DP under add/remove: the histogram has ℓ1-sensitivity 1 (Dwork, McSherry, Nissim & Smith
/// 2006; Dwork & Roth 2014, Example 3.3).
///
/// # Output
/// k reals: the noisy counts.
/// The noisy histogram over `k` bins with Laplace noise of `scale` on every bin (1/ε when
/// correct; the buggy twin `histogram-scale-epsilon` shares it) as a declaration.
pub(crate) fn noisy_histogram_mechanism(
    id: &'static str,
    epsilon: f64,
    k: usize,
    scale: f64,
) -> Result<Declared> {
    let noise = LaplaceNoise::new(scale)?;
    histogram_with_noise(id, epsilon, k, move |rng| noise.sample(rng))
}

/// Counts of k bins, each plus an independent draw of `noise`, claimed pure ε under add/remove.
pub(crate) fn histogram_with_noise(
    id: &'static str,
    epsilon: f64,
    k: usize,
    noise: impl Fn(&mut dyn Rng) -> f64 + Send + Sync + 'static,
) -> Result<Declared> {
    Ok(vector(
        id,
        PrivacyClaim::pure(epsilon)?,
        Neighboring::AddRemove,
        RecordDomain::integer(0, k as i64 - 1, 1),
        k,
        move |data: &Dataset| category_counts(data, k),
        move |counts, rng, out| out.extend(counts.iter().map(|c| c + noise(&mut *rng))),
    ))
}

/// The histogram witness: one more record in bin 0.
pub(crate) fn histogram_witness() -> Result<DatasetPair> {
    let d = Dataset::scalars(vec![0.0, 1.0, 2.0])?;
    DatasetPair::new(d.clone(), d.with_record(&[0.0])?, Neighboring::AddRemove)
}

fn noisy_histogram(params: &mut Params) -> Result<Entry> {
    let id = "noisy-histogram";
    let epsilon = epsilon_param(params, id)?;
    let k = categories_param(params, id, 4.0)?;
    Ok(Entry {
        mechanism: Box::new(noisy_histogram_mechanism(id, epsilon, k, 1.0 / epsilon)?),
        status: Status::Correct,
        witness: histogram_witness()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The noisy sum's mean is the true sum: z-test on 1e5 draws, |z| < 5.3
    /// (false-failure rate ≈ 1.2e-7, CLT).
    #[test]
    fn laplace_sum_is_centered_on_the_sum() {
        let e = laplace_sum(&mut Params::new()).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let n = 100_000;
        let s = e.mechanism.sample(e.witness.second(), n, &mut rng).unwrap();
        let mean = s.column(0).sum() / n as f64;
        let sd = (2.0f64).sqrt(); // Laplace(1): var = 2
        let z = (mean - 3.5) / (sd / (n as f64).sqrt());
        assert!(z.abs() < 5.3, "z = {z}");
    }
}
