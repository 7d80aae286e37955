//! Targets for the Bayesian DP audit (`bdp:` claims; Triastcyn & Faltings 2020, Definition 1,
//! strong Bayesian DP).
//!
//! Both entries release the sum of records in [0, 1] plus N(0, σ²) noise (add-remove neighbors),
//! and state an (ε_μ, δ_μ)-BDP claim for the data distribution μ of [`data`] (written out as
//! `examples/bdp-data.txt`, which `audit run --data` reads). They are kept out of
//! [`super::specs`] (the worst-case suites cannot test a typical-case claim) and built by
//! [`super::build`] all the same.
//!
//! # Claim (exact, for the Gaussian sum)
//! Adding x' ≥ 0 shifts the mean by x'. With w ~ N(s + x', σ²) against N(s, σ²) the privacy loss
//! is L = x'²/(2σ²) + (x'/σ)Z, Z ~ N(0, 1), in either order of the pair, so
//! Pr_w[L ≥ ε] = Φ(x'/(2σ) − εσ/x') (0 at x' = 0) and
//! δ_μ(ε) = E_{x'~μ} Φ(x'/(2σ) − εσ/x'), μ uniform over the records: computed exactly and
//! rounded up ([`gaussian_sum_bdp_delta`]).
//!
//! # Bug (`bdp-gaussian-sum-excludes-outliers`)
//! The claim's δ_μ is computed on the data with its outliers (records above 0.5) left out, as
//! happens when the paper's estimator is fed a cleaned subsample: at σ = 1, ε = 1 the in-range
//! records (≤ 0.2) give δ ≈ 1.7e-8, while the 5 % of records near 1 alone contribute
//! 0.05·Φ(−0.5) ≈ 0.015. The BDP-implied hockey-stick bound E_{x'} H_e(N(x',1) ‖ N(0,1)) is
//! 5.49e-3 (exact, scipy), far above the claimed δ.

use super::declare::noisy_statistic;
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::Result;
use crate::math::std_normal_cdf;
use crate::mechanism::Params;
use crate::noise::GaussianNoise;
use crate::samples::Samples;

/// Records of μ: 950 in-distribution values spread evenly over (0, 0.2) and 50 outliers spread
/// evenly over (0.9, 1).
pub fn data() -> Vec<f64> {
    let inliers = (0..950).map(|i| 0.2 * (i as f64 + 0.5) / 950.0);
    let outliers = (0..50).map(|i| 0.9 + 0.1 * (i as f64 + 0.5) / 50.0);
    inliers.chain(outliers).collect()
}

/// Records above this are the outliers the buggy entry leaves out.
pub const OUTLIER_THRESHOLD: f64 = 0.5;

/// Exact δ_μ(ε) of the Gaussian sum with noise σ for μ uniform over `records` (each ≥ 0; see the
/// module docs), rounded up by a relative 1e-9 (Φ's error is far smaller).
pub fn gaussian_sum_bdp_delta(records: &[f64], sigma: f64, epsilon: f64) -> f64 {
    if records.is_empty() {
        return 0.0;
    }
    let total: f64 = records
        .iter()
        .filter(|&&x| x > 0.0)
        .map(|&x| std_normal_cdf(x / (2.0 * sigma) - epsilon * sigma / x))
        .sum();
    ((total / records.len() as f64) * (1.0 + 1e-9))
        .next_up()
        .min(1.0)
}

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "bdp-gaussian-sum",
            summary: "sum of records in [0, 1] plus N(0, σ²); Bayesian DP claim computed exactly for the data of examples/bdp-data.txt",
            build: bdp_gaussian_sum,
        },
        Spec {
            id: "bdp-gaussian-sum-excludes-outliers",
            summary: "the same release; its Bayesian DP claim is computed with the data's outliers left out",
            build: bdp_gaussian_sum_excludes_outliers,
        },
        Spec {
            id: "bdp-dpsgd",
            summary: "T steps of Poisson-subsampled DP-SGD on 1-D gradients, every iterate released; Bayesian DP claim from the Bayesian accountant over the data of examples/bdp-data.txt",
            build: bdp_dpsgd,
        },
        Spec {
            id: "bdp-dpsgd-excludes-outliers",
            summary: "the same training run; its Bayesian accountant is fed the data with its outliers left out",
            build: bdp_dpsgd_excludes_outliers,
        },
    ]
}

fn witness() -> Result<DatasetPair> {
    let d = Dataset::scalars(vec![0.1; 5])?;
    DatasetPair::new(d.clone(), d.with_record(&[1.0])?, Neighboring::AddRemove)
}

fn build(
    id: &'static str,
    params: &mut Params,
    records: &[f64],
    source: &str,
) -> Result<(Box<super::declare::Declared>, f64, f64, f64)> {
    let sigma = params.take_in(id, "sigma", 1.0, 0.05, 100.0)?;
    let epsilon = params.take_in(id, "epsilon", 1.0, 0.0, 50.0)?;
    let delta = gaussian_sum_bdp_delta(records, sigma, epsilon);
    let noise = GaussianNoise::new(sigma)?;
    let m = noisy_statistic(
        id,
        PrivacyClaim::bayesian(epsilon, delta)?,
        RecordDomain::real(0.0, 1.0, 1),
        |d| d.column(0).iter().sum(),
        move |rng| noise.sample(rng),
    )
    .with_claim_source(format!(
        "exact Bayesian DP of the Gaussian sum (sigma = {sigma}) for μ = {source}"
    ));
    Ok((Box::new(m), sigma, epsilon, delta))
}

fn bdp_gaussian_sum(params: &mut Params) -> Result<Entry> {
    let (m, ..) = build(
        "bdp-gaussian-sum",
        params,
        &data(),
        "the 1000 records of examples/bdp-data.txt",
    )?;
    Ok(Entry {
        mechanism: m,
        status: Status::Correct,
        witness: witness()?,
    })
}

fn bdp_gaussian_sum_excludes_outliers(params: &mut Params) -> Result<Entry> {
    let inliers: Vec<f64> = data()
        .into_iter()
        .filter(|&x| x <= OUTLIER_THRESHOLD)
        .collect();
    let (m, sigma, epsilon, _) = build(
        "bdp-gaussian-sum-excludes-outliers",
        params,
        &inliers,
        "the records of examples/bdp-data.txt up to 0.5 (outliers left out)",
    )?;
    let true_delta = gaussian_sum_bdp_delta(&data(), sigma, epsilon);
    Ok(Entry {
        mechanism: m,
        status: Status::Buggy {
            bug: "the Bayesian DP claim's δ is computed on the data with its outliers left out"
                .into(),
            true_guarantee: format!("bdp:{epsilon}:{true_delta:e} for the full data"),
        },
        witness: witness()?,
    })
}

/// The DP-SGD target's settings.
struct DpSgd {
    q: f64,
    z: f64,
    steps: u64,
    epsilon: f64,
    delta: f64,
}

fn dpsgd_params(id: &str, params: &mut Params) -> Result<DpSgd> {
    Ok(DpSgd {
        q: params.take_in(id, "sampling_rate", 0.5, 1e-3, 1.0)?,
        z: params.take_in(id, "noise_multiplier", 1.0, 0.1, 100.0)?,
        steps: params.take_in(id, "steps", 10.0, 1.0, 100.0)?.round() as u64,
        epsilon: 0.0,
        delta: params.take_in(id, "delta", 1e-5, 1e-12, 0.1)?,
    })
}

/// DP-SGD (Abadi et al. 2016) on one-dimensional gradients, as the Bayesian accountant models
/// it: each record x ∈ [0, 1] is its own gradient (clipping norm C = 1, so clipping is the
/// identity on the domain); each of T steps samples every record independently with
/// probability q (Poisson) and releases the sum of the sampled gradients plus N(0, z²). Every
/// iterate is released (the white-box threat model), so a release is the T noisy sums.
///
/// # Claim
/// (ε_μ, δ)-BDP for μ uniform over the records of `examples/bdp-data.txt`, with ε_μ from
/// [`crate::bayesian_accountant::bayesian_epsilon_exact`] fed with the distances d = x' (the
/// gradient of an added record is x'): Theorem 3's cost composed by Hölder's inequality, the
/// expectation over μ computed exactly (μ is known), so no estimator's γ enters.
fn dpsgd_mechanism(
    id: &'static str,
    s: &DpSgd,
    claim_records: &[f64],
    source: &str,
) -> Result<(super::declare::Declared, f64)> {
    let (epsilon, order) = crate::bayesian_accountant::bayesian_epsilon_exact(
        claim_records,
        s.q,
        s.z,
        s.steps,
        s.delta,
        &crate::bayesian_accountant::default_orders(),
    )?;
    let noise = GaussianNoise::new(s.z)?;
    let (q, steps) = (s.q, s.steps as usize);
    let m = super::declare::Declared {
        id,
        claim: PrivacyClaim::bayesian(epsilon, s.delta)?,
        claim_source: Some(format!(
            "Bayesian accountant (Triastcyn & Faltings 2020, Theorem 3 with the exact mean over μ, order λ = {order}) for μ = {source}"
        )),
        neighboring: Neighboring::AddRemove,
        domain: RecordDomain::real(0.0, 1.0, 1).with_sizes(0, 1000),
        output_dim: steps,
        recommended_transform: None,
        setting: crate::mechanism::DpSetting::Central,
        sample: Box::new(move |data, n, rng| {
            use rand::RngExt;
            let x = data.column(0);
            let mut flat = Vec::with_capacity(n * steps);
            for _ in 0..n {
                for _ in 0..steps {
                    let sum: f64 = x.iter().filter(|_| rng.random::<f64>() < q).sum();
                    flat.push(sum + noise.sample(rng));
                }
            }
            Samples::from_flat(steps, flat)
        }),
    };
    Ok((m, epsilon))
}

/// A lower bound on the BDP δ of [`dpsgd_mechanism`] at `epsilon` for μ uniform over
/// `records`, on the empty rest of the dataset (the witness's D). For an added record x',
/// M(D ∪ {x'}) is the T sums B_t·x' + N_t (B_t ~ Bernoulli(q)) and M(D) the noise alone, so the
/// sum of the iterates is N(K·x', T·z²) with K ~ Bin(T, q) against N(0, T·z²). For every
/// threshold τ the event {Σ_t w_t ≥ τ} gives H_{e^ε}(M(D ∪ {x'}) ‖ M(D)) ≥
/// Σ_k Bin(k; T, q)·Φ̄((τ − k·x')/(z√T)) − e^ε·Φ̄(τ/(z√T)), and the BDP δ (the order
/// "w ~ M(D')") is at least Pr_{x', w}[L ≥ ε] ≥ E_{x'~μ} H_{e^ε}(M(D ∪ {x'}) ‖ M(D)) (the
/// inequality of `src/audit/bayesian.rs`). The best τ on a grid is taken per record (any τ gives a
/// valid bound); rounded down (each Φ's relative error [`crate::math::NORMAL_CDF_REL_ERROR`]
/// taken against the bound, the mean lowered further for summation error).
pub fn dpsgd_bdp_delta_lower(records: &[f64], q: f64, z: f64, steps: u64, epsilon: f64) -> f64 {
    let t = steps as f64;
    let sd = z * t.sqrt();
    let pmf: Vec<f64> = (0..=steps)
        .map(|k| {
            let mut c = 1.0;
            for i in 0..k {
                c *= (t - i as f64) / (i as f64 + 1.0);
            }
            c * q.powi(k as i32) * (1.0 - q).powi((steps - k) as i32)
        })
        .collect();
    let sf = |x: f64| std_normal_cdf(-x);
    let r = crate::math::NORMAL_CDF_REL_ERROR;
    let per_record = |x: f64| -> f64 {
        (0..=400)
            .map(|i| {
                let tau = -2.0 * sd + (t * x + 8.0 * sd) * i as f64 / 400.0;
                let p: f64 = pmf
                    .iter()
                    .enumerate()
                    .map(|(k, w)| w * sf((tau - k as f64 * x) / sd))
                    .sum();
                // Each Φ within a relative NORMAL_CDF_REL_ERROR: lower p, raise the subtracted term.
                p * (1.0 - r) - epsilon.exp() * sf(tau / sd) * (1.0 + r)
            })
            .fold(0.0, f64::max)
    };
    if records.is_empty() {
        return 0.0;
    }
    let mean = records.iter().map(|&x| per_record(x)).sum::<f64>() / records.len() as f64;
    (mean * (1.0 - 1e-12)).max(0.0)
}

fn dpsgd_witness() -> Result<DatasetPair> {
    let d = Dataset::empty(1)?;
    DatasetPair::new(d.clone(), d.with_record(&[1.0])?, Neighboring::AddRemove)
}

fn bdp_dpsgd(params: &mut Params) -> Result<Entry> {
    let id = "bdp-dpsgd";
    let s = dpsgd_params(id, params)?;
    let (m, _) = dpsgd_mechanism(id, &s, &data(), "the 1000 records of examples/bdp-data.txt")?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: dpsgd_witness()?,
    })
}

/// # Bug
/// The accountant is fed the data with its outliers (records above 0.5, 5 % of μ) left out, as
/// when the distances are measured on a cleaned subsample: the claimed ε_μ is that of gradients
/// at most 0.2, while the outliers' gradients are near 1. The status compares the claimed δ
/// with [`dpsgd_bdp_delta_lower`] on the full data at the claimed ε (buggy when the lower bound
/// exceeds it).
fn bdp_dpsgd_excludes_outliers(params: &mut Params) -> Result<Entry> {
    let id = "bdp-dpsgd-excludes-outliers";
    let mut s = dpsgd_params(id, params)?;
    let inliers: Vec<f64> = data()
        .into_iter()
        .filter(|&x| x <= OUTLIER_THRESHOLD)
        .collect();
    let (m, epsilon) = dpsgd_mechanism(
        id,
        &s,
        &inliers,
        "the records of examples/bdp-data.txt up to 0.5 (outliers left out)",
    )?;
    s.epsilon = epsilon;
    let lower = dpsgd_bdp_delta_lower(&data(), s.q, s.z, s.steps, s.epsilon);
    let status = Status::buggy_if(
        lower > s.delta,
        "the Bayesian accountant is fed the data with its outliers left out",
        format!(
            "BDP δ at the claimed ε = {} is at least {} for the full data (claimed {})",
            crate::math::readable(s.epsilon),
            crate::math::readable(lower),
            crate::math::readable(s.delta)
        ),
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness: dpsgd_witness()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_file_is_the_data() {
        let text = include_str!("../../../examples/bdp-data.txt");
        let file: Vec<f64> = text
            .lines()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
            .map(|l| l.trim().parse().unwrap())
            .collect();
        assert_eq!(file, data());
    }

    /// Reference values: δ_μ(1) at σ = 1, from the same formula in Python
    /// (`np.mean(norm.cdf(x/2 - 1/x))` over the 1000 records): full data 1.4082e-2; inliers only
    /// 1.6687e-8. The buggy claim is more than 10^4 times too small.
    #[test]
    fn claims_on_full_and_cleaned_data() {
        let full = gaussian_sum_bdp_delta(&data(), 1.0, 1.0);
        let inl: Vec<f64> = data().into_iter().filter(|&x| x <= 0.5).collect();
        let cleaned = gaussian_sum_bdp_delta(&inl, 1.0, 1.0);
        assert!((full / 1.4081955252237845e-2 - 1.0).abs() < 1e-8, "{full}");
        assert!(
            (cleaned / 1.6686996265832663e-08 - 1.0).abs() < 1e-6,
            "{cleaned}"
        );
        let e = super::super::build("bdp-gaussian-sum", &Params::default()).unwrap();
        assert!(e.mechanism.claim().is_bayesian());
        let b =
            super::super::build("bdp-gaussian-sum-excludes-outliers", &Params::default()).unwrap();
        assert!(b.status.is_buggy());
    }
}
