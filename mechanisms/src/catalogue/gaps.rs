//! The gaps the DP-Auditorium post names (Kong et al. 2024): a non-private Gaussian mean, the
//! Gaussian mechanism calibrated with the wrong norm on a vector query, and private top-k with
//! and without its budget split across the k selections.
//!
//! The fourth gap, the classical Gaussian formula σ = Δ·√(2 ln(1.25/δ))/ε used at ε ≥ 1, has no
//! entry: `gaussian-sum-classical` refuses ε ≥ 1, and the violation a twin would have is too
//! small to audit. Its true δ at ε is the μ-GDP profile with μ = 1/σ (Balle & Wang 2018,
//! Theorem 8); over ε ∈ [1, 8] and δ ∈ [1e-5, 0.1] the excess δ_true − δ is at most 0.136
//! (ε = 8, δ = 0.1), and even an oracle that knows the optimal event {x > t} and bounds P(S) and
//! e^ε Q(S) with ±3 standard errors needs more than 10^5 releases per side there (10^6 suffice;
//! at ε = 6 more than 10^6, at ε ≤ 5 more than 10^9; the default audit draws 2·10^5): the
//! violation hides behind e^ε times the error on Q(S). (The real-world suite's
//! `gaussian_classical_sigma_large_eps`, at ε = 10, is missed for the same reason.)

use rand::Rng;

use super::correct::{category_counts, delta_param, epsilon_param};
use super::declare::{scalar, vector};
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::math::{analytic_gaussian_sigma, gaussian_dp_delta, readable, std_normal_cdf};
use crate::mechanism::Params;
use crate::noise::{GaussianNoise, GumbelNoise};

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "gaussian-mean-data-n",
            summary: "Gaussian mean whose σ is calibrated to the sensitivity 1/n at the data's own n",
            build: gaussian_mean_data_n,
        },
        Spec {
            id: "gaussian-vector-coordinate-sensitivity",
            summary: "Gaussian vector sum calibrated to the per-coordinate sensitivity, not the ℓ2 one",
            build: gaussian_vector_coordinate_sensitivity,
        },
        Spec {
            id: "top-k-gumbel",
            summary: "top-k categories by one-shot Gumbel noise of scale k/ε (peeling, ε/k each)",
            build: top_k_gumbel,
        },
        Spec {
            id: "top-k-one-selection",
            summary: "top-k by Gumbel noise of scale 1/ε, accounted as a single selection",
            build: top_k_one_selection,
        },
    ]
}

fn invalid(id: &str, message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: id.into(),
        message,
    }
}

/// The analytic Gaussian σ (Balle & Wang 2018) for (ε, δ) and `sensitivity`, or an error naming
/// the parameters.
fn analytic_sigma(id: &str, epsilon: f64, delta: f64, sensitivity: f64) -> Result<f64> {
    analytic_gaussian_sigma(epsilon, delta, sensitivity).ok_or_else(|| {
        invalid(
            id,
            format!("no analytic Gaussian calibration for epsilon = {epsilon}, delta = {delta}"),
        )
    })
}

/// H_{e^ε}(N(m1, s1²) ‖ N(m2, s2²)) in closed form.
///
/// The event {p > e^ε q} is where the quadratic a·x² + b·x + c > 0 with a = 1/(2 s2²) −
/// 1/(2 s1²), b = m1/s1² − m2/s2², c = m2²/(2 s2²) − m1²/(2 s1²) + ln(s2/s1) − ε; it is a union
/// of at most two half-lines or one interval, whose probabilities are differences of Φ. Used to
/// state a buggy entry's true δ on its witness (a point value, not an allowance).
pub(crate) fn gaussian_pair_hockey_stick(m1: f64, s1: f64, m2: f64, s2: f64, eps: f64) -> f64 {
    let a = 0.5 / (s2 * s2) - 0.5 / (s1 * s1);
    let b = m1 / (s1 * s1) - m2 / (s2 * s2);
    let c = m2 * m2 / (2.0 * s2 * s2) - m1 * m1 / (2.0 * s1 * s1) + (s2 / s1).ln() - eps;
    // Mass of (lo, hi) under N(m, s²).
    let mass = |m: f64, s: f64, lo: f64, hi: f64| {
        std_normal_cdf((hi - m) / s) - std_normal_cdf((lo - m) / s)
    };
    let contrast = |lo: f64, hi: f64| mass(m1, s1, lo, hi) - eps.exp() * mass(m2, s2, lo, hi);
    let h = if a.abs() < 1e-15 {
        // Linear: b·x + c > 0.
        if b > 0.0 {
            contrast(-c / b, f64::INFINITY)
        } else if b < 0.0 {
            contrast(f64::NEG_INFINITY, -c / b)
        } else if c > 0.0 {
            1.0 - eps.exp()
        } else {
            0.0
        }
    } else {
        let disc = b * b - 4.0 * a * c;
        if disc <= 0.0 {
            // The quadratic keeps the sign of a.
            if a > 0.0 { 1.0 - eps.exp() } else { 0.0 }
        } else {
            let r = disc.sqrt();
            let (x1, x2) = {
                let (u, v) = ((-b - r) / (2.0 * a), (-b + r) / (2.0 * a));
                (u.min(v), u.max(v))
            };
            if a > 0.0 {
                contrast(f64::NEG_INFINITY, x1) + contrast(x2, f64::INFINITY)
            } else {
                contrast(x1, x2)
            }
        }
    };
    h.clamp(0.0, 1.0)
}

/// `gaussian-mean-data-n`: the mean of records in [0, 1] plus N(0, σ_n²), σ_n the analytic
/// Gaussian σ for (ε, δ) and the sensitivity 1/n of the mean at the dataset's own size n.
///
/// # Bug
/// The sensitivity 1/n is computed from the data: under add/remove the size is private, and a
/// neighbor with one record more gets a noise scale n/(n + 1) times smaller. The two output laws
/// differ in variance, so the privacy loss is unbounded in the tails; on the witness ({0} vs
/// {0, 1}: N(0, σ_1²) vs N(1/2, σ_1²/4)) the true δ at ε, computed in closed form
/// ([`gaussian_pair_hockey_stick`], both directions), is ≈ 0.20 at ε = 1 where the claim allows
/// 1e-5. The status compares that computed δ with the claimed δ.
fn gaussian_mean_data_n(params: &mut Params) -> Result<Entry> {
    let id = "gaussian-mean-data-n";
    let epsilon = epsilon_param(params, id)?;
    let delta = delta_param(params, id)?;
    // σ for sensitivity 1 scales linearly with the sensitivity: σ_n = σ_1/n.
    let sigma_one = analytic_sigma(id, epsilon, delta, 1.0)?;
    let unit = GaussianNoise::new(1.0)?;
    let m = scalar(
        id,
        PrivacyClaim::approximate(epsilon, delta)?,
        RecordDomain::real(0.0, 1.0, 1).with_sizes(1, 1000),
        |d| {
            let col = d.column(0);
            let n = col.len().max(1) as f64;
            (col.iter().sum::<f64>() / n, n)
        },
        move |&(mean, n), rng| mean + sigma_one / n * unit.sample(rng),
    );
    let d = Dataset::scalars(vec![0.0])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[1.0])?, Neighboring::AddRemove)?;
    let true_delta = gaussian_pair_hockey_stick(0.0, sigma_one, 0.5, sigma_one / 2.0, epsilon).max(
        gaussian_pair_hockey_stick(0.5, sigma_one / 2.0, 0.0, sigma_one, epsilon),
    );
    let status = Status::buggy_if(
        true_delta > delta,
        "noise calibrated to the mean's sensitivity 1/n at the data's own size n, which \
         add/remove makes private: neighbors get different noise scales",
        format!(
            "not ({epsilon}, {delta})-DP: on the witness H_(e^ε) = {} (closed form)",
            readable(true_delta)
        ),
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness,
    })
}

/// `gaussian-vector-coordinate-sensitivity`: the sum of records in [0, 1]^d plus N(0, σ² I_d),
/// σ the analytic Gaussian σ for (ε, δ) and sensitivity 1: each coordinate's sensitivity.
///
/// # Bug
/// One record moves every coordinate by up to 1, so the ℓ2-sensitivity is √d, not 1. The
/// Gaussian mechanism is exactly (Δ₂/σ)-GDP, so the true guarantee is (√d/σ)-GDP and the true δ
/// at ε is the GDP profile δ(ε; √d/σ) (Balle & Wang 2018, Theorem 8): with d = 4, ε = 1,
/// δ = 1e-5, ≈ 0.0104. Which way the norms break: ‖v‖₂ ≤ ‖v‖₁ for every vector, so a Gaussian
/// calibrated to the *ℓ1*-sensitivity over-noises and keeps its claim; the realistic failing
/// confusions are a smaller norm than ℓ2 (here the per-coordinate ℓ∞ sensitivity, "each
/// coordinate changes by at most 1") for a Gaussian, or ℓ2 for a Laplace (whose ℓ1-sensitivity
/// is up to √d times larger). The status compares δ(ε; √d/σ) with the claimed δ.
fn gaussian_vector_coordinate_sensitivity(params: &mut Params) -> Result<Entry> {
    let id = "gaussian-vector-coordinate-sensitivity";
    let epsilon = epsilon_param(params, id)?;
    let delta = delta_param(params, id)?;
    let dim = params.take_integer_in(id, "dim", 4.0, 1.0, 16.0)?;
    let sigma = analytic_sigma(id, epsilon, delta, 1.0)?;
    let noise = GaussianNoise::new(sigma)?;
    let m = vector(
        id,
        PrivacyClaim::approximate(epsilon, delta)?,
        Neighboring::AddRemove,
        RecordDomain::real(0.0, 1.0, dim),
        dim,
        move |d| (0..dim).map(|j| d.column(j).iter().sum()).collect(),
        move |sums: &Vec<f64>, rng: &mut dyn Rng, out| {
            out.extend(sums.iter().map(|s| s + noise.sample(rng)));
        },
    )
    .with_claim_source(format!(
        "analytic Gaussian calibration for sensitivity 1 per coordinate: sigma = {sigma:.6}"
    ));
    let d = Dataset::vectors(dim, &vec![vec![0.5; dim]; 3])?;
    let witness = DatasetPair::new(
        d.clone(),
        d.with_record(&vec![1.0; dim])?,
        Neighboring::AddRemove,
    )?;
    let mu_true = (dim as f64).sqrt() / sigma;
    let true_delta = gaussian_dp_delta(epsilon, mu_true);
    let status = Status::buggy_if(
        true_delta > delta,
        "Gaussian σ calibrated to the per-coordinate sensitivity 1; the ℓ2-sensitivity \
         of a sum of records in [0, 1]^d is √d",
        format!(
            "{}-GDP (√d/σ): δ({epsilon}) = {}",
            readable(mu_true),
            readable(true_delta)
        ),
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness,
    })
}

/// Reads the number of categories m (default 4, 2 to 6: the status enumerates the ordered
/// k-tuples of m categories) and the number selected k (default 3, 1 to m).
fn top_k_params(params: &mut Params, id: &str) -> Result<(usize, usize)> {
    let m = params.take_integer_in(id, "categories", 4.0, 2.0, 6.0)?;
    let k = params.take_integer_in(id, "k", 3.0, 1.0, 6.0)?;
    if k > m {
        return Err(invalid(
            id,
            format!("--param k = {k}, categories = {m}; allowed: 1 ≤ k ≤ categories"),
        ));
    }
    Ok((m, k))
}

/// The exact law of peeling with the exponential mechanism at `step` per selection on `counts`
/// (P(i) ∝ e^{step·c_i} among the categories not yet selected): every ordered k-tuple with its
/// probability. By the Gumbel-max trick this is also the law of the k largest of c_i + Gumbel(1/step),
/// in order (Durfee & Rogers 2019, Lemma 4.2).
fn peeling_law(counts: &[f64], k: usize, step: f64) -> Vec<(Vec<usize>, f64)> {
    let mut out = Vec::new();
    let mut stack = vec![(Vec::new(), 1.0)];
    while let Some((seq, p)) = stack.pop() {
        if seq.len() == k {
            out.push((seq, p));
            continue;
        }
        let rest: Vec<usize> = (0..counts.len()).filter(|i| !seq.contains(i)).collect();
        let top = rest
            .iter()
            .map(|&i| counts[i])
            .fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = rest.iter().map(|&i| (step * (counts[i] - top)).exp()).sum();
        for &i in &rest {
            let mut next = seq.clone();
            next.push(i);
            stack.push((next, p * (step * (counts[i] - top)).exp() / z));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// max over both directions of H_{e^ε} between two laws on the same ordered tuples.
fn discrete_hockey_stick(p: &[(Vec<usize>, f64)], q: &[(Vec<usize>, f64)], eps: f64) -> f64 {
    let one = |a: &[(Vec<usize>, f64)], b: &[(Vec<usize>, f64)]| {
        a.iter()
            .zip(b)
            .map(|((_, pa), (_, pb))| (pa - eps.exp() * pb).max(0.0))
            .sum::<f64>()
    };
    one(p, q).max(one(q, p))
}

/// Top-k of m category counts (records are category indices) by one-shot Gumbel noise of scale
/// `scale`; the release is the k indices, largest noisy count first.
fn top_k(
    id: &'static str,
    epsilon: f64,
    m: usize,
    k: usize,
    scale: f64,
) -> Result<super::declare::Declared> {
    let noise = GumbelNoise::new(scale)?;
    Ok(vector(
        id,
        PrivacyClaim::pure(epsilon)?,
        Neighboring::AddRemove,
        RecordDomain::integer(0, m as i64 - 1, 1),
        k,
        move |d| category_counts(d, m),
        move |counts: &Vec<f64>, rng: &mut dyn Rng, out| {
            let mut noisy: Vec<(f64, usize)> = counts
                .iter()
                .enumerate()
                .map(|(i, c)| (c + noise.sample(rng), i))
                .collect();
            noisy.sort_by(|a, b| b.0.total_cmp(&a.0));
            out.extend(noisy.iter().take(k).map(|&(_, i)| i as f64));
        },
    ))
}

/// The two candidate count vectors of the witness: all m categories empty, or only the last
/// one holding a record; in both the added record goes to the last category.
fn top_k_candidates(m: usize) -> [Vec<f64>; 2] {
    let mut leading = vec![0.0; m];
    leading[m - 1] = 1.0;
    [vec![0.0; m], leading]
}

/// The witness of both top-k entries: of the two candidates ([`top_k_candidates`]), the one
/// where the exact laws ([`peeling_law`]) of one-shot top-k with Gumbel(1/ε) over-spend most,
/// with that H_{e^ε} (both directions). Exact values at ε = 1 (m, k: empty / leading):
/// 4, 3: 0.087 / 0.055; 4, 2: 0 / 0.055; 3, 2: 0.023 / 0.045; 6, 2: 0 / 0.0004.
fn top_k_witness(m: usize, k: usize, epsilon: f64) -> Result<(DatasetPair, f64)> {
    let [empty, leading] = top_k_candidates(m);
    let h_empty = top_k_divergence(&empty, k, 1.0 / epsilon, epsilon);
    let h_leading = top_k_divergence(&leading, k, 1.0 / epsilon, epsilon);
    let (records, h): (Vec<f64>, f64) = if h_empty >= h_leading {
        (Vec::new(), h_empty)
    } else {
        (vec![(m - 1) as f64], h_leading)
    };
    let d = Dataset::scalars(records)?;
    let pair = DatasetPair::new(
        d.clone(),
        d.with_record(&[(m - 1) as f64])?,
        Neighboring::AddRemove,
    )?;
    Ok((pair, h))
}

/// H_{e^ε} between the top-k laws (Gumbel scale `scale`) on `counts` and on `counts` with one
/// more record in the last category, both directions, exact.
fn top_k_divergence(counts: &[f64], k: usize, scale: f64, epsilon: f64) -> f64 {
    let mut more = counts.to_vec();
    more[counts.len() - 1] += 1.0;
    discrete_hockey_stick(
        &peeling_law(counts, k, 1.0 / scale),
        &peeling_law(&more, k, 1.0 / scale),
        epsilon,
    )
}

/// `top-k-gumbel`: the k largest of c_i + Gumbel(k/ε), c_i the count of category i.
///
/// # Claim
/// ε-DP under add/remove. One-shot Gumbel top-k has the law of peeling k times with the
/// exponential mechanism P(i) ∝ e^{(ε/k)·c_i} (Durfee & Rogers 2019, Lemma 4.2). Counts are
/// monotone under add/remove (one record raises or lowers one count by 1, all others fixed), so
/// each peel is (ε/k)-DP (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10 and the
/// remark on monotone utilities); removing the selected categories is post-processing of the
/// earlier outputs, and basic adaptive composition of k peels gives ε.
fn top_k_gumbel(params: &mut Params) -> Result<Entry> {
    let id = "top-k-gumbel";
    let epsilon = epsilon_param(params, id)?;
    let (m, k) = top_k_params(params, id)?;
    Ok(Entry {
        mechanism: Box::new(top_k(id, epsilon, m, k, k as f64 / epsilon)?),
        status: Status::Correct,
        witness: top_k_witness(m, k, epsilon)?.0,
    })
}

/// `top-k-one-selection`: the k largest of c_i + Gumbel(1/ε), accounted as one selection.
///
/// # Bug
/// Gumbel(1/ε) is the noise of *one* ε-DP report-noisy-max; its top k is k peels at ε each
/// (Durfee & Rogers 2019, Lemma 4.2), so composition gives kε-DP, not ε. The status is decided
/// on the exact laws of the witness ([`top_k_witness`]): buggy when H_{e^ε} there is positive
/// (with m = 4, k = 3, ε = 1: ≈ 0.087). k = 1 is report noisy max itself, and k = m = 2 is
/// decided by its first selection: both keep the claim (H = 0 exactly). Over the allowed
/// parameters (m ≤ 6) every other (m, k) has H > 0 at ε = 1 on one of the two candidates
/// (checked by enumeration); at m = 6, k = 2 it is only 4e-4, far below what the default
/// audit resolves: the default m = 4, k = 3 is the audited one.
fn top_k_one_selection(params: &mut Params) -> Result<Entry> {
    let id = "top-k-one-selection";
    let epsilon = epsilon_param(params, id)?;
    let (m, k) = top_k_params(params, id)?;
    let scale = 1.0 / epsilon;
    let (witness, h) = top_k_witness(m, k, epsilon)?;
    // 1e-12: far above the rounding of sums of at most 6! products, far below any audit.
    let status = Status::buggy_if(
        h > 1e-12,
        "Gumbel noise of one selection (scale 1/ε) for k selections: the budget is not \
         split across them",
        format!(
            "{}-DP (k·ε by composition); on the witness H_(e^ε) = {} (exact)",
            readable(k as f64 * epsilon),
            readable(h)
        ),
    );
    Ok(Entry {
        mechanism: Box::new(top_k(id, epsilon, m, k, scale)?),
        status,
        witness,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaussian_pair_hockey_stick_matches_the_gdp_profile_and_known_values() {
        // Equal variances: the μ-GDP profile with μ = |m1 − m2|/s.
        for (m, s, e) in [(1.0, 3.73, 1.0), (1.0, 1.0, 0.5), (0.5, 2.0, 0.0)] {
            let h = gaussian_pair_hockey_stick(m, s, 0.0, s, e);
            assert!((h - gaussian_dp_delta(e, m / s)).abs() < 1e-9, "{h}");
        }
        // ε = 0 is total variation; N(0, 1) vs N(0, 4): 2·(Φ(x) − Φ(x/2)) at
        // x = √(8 ln 2 / 3) (where the densities cross) ≈ 0.2611.
        let x = (8.0 * 2f64.ln() / 3.0).sqrt();
        let tv = 2.0 * (std_normal_cdf(x) - std_normal_cdf(x / 2.0));
        let h = gaussian_pair_hockey_stick(0.0, 1.0, 0.0, 2.0, 0.0);
        assert!((h - tv).abs() < 1e-9, "{h} vs {tv}");
    }

    #[test]
    fn peeling_law_sums_to_one_and_top_k_statuses() {
        let law = peeling_law(&[1.0, 2.0, 0.0, 1.0], 3, 0.7);
        assert_eq!(law.len(), 24);
        assert!((law.iter().map(|x| x.1).sum::<f64>() - 1.0).abs() < 1e-12);
        // The correct entry keeps ε on both candidates; the twin does not, for k ≥ 2.
        for c in top_k_candidates(4) {
            assert_eq!(top_k_divergence(&c, 3, 3.0, 1.0), 0.0);
        }
        let h = top_k_witness(4, 3, 1.0).unwrap().1;
        assert!((h - 0.0874).abs() < 1e-3, "{h}");
        assert!((top_k_witness(4, 2, 1.0).unwrap().1 - 0.0552).abs() < 1e-3);
        let word = |k: f64| {
            super::super::build("top-k-one-selection", &Params::new().set("k", k))
                .unwrap()
                .status
                .word()
        };
        assert_eq!(word(1.0), "correct");
        assert_eq!(word(2.0), "buggy");
        let both = Params::new().set("k", 2.0).set("categories", 2.0);
        let e = super::super::build("top-k-one-selection", &both).unwrap();
        assert!(!e.status.is_buggy());
    }

    #[test]
    fn gaussian_twins_are_buggy_with_the_derived_delta() {
        let e = super::super::build("gaussian-mean-data-n", &Params::new()).unwrap();
        assert!(e.status.is_buggy());
        let e =
            super::super::build("gaussian-vector-coordinate-sensitivity", &Params::new()).unwrap();
        assert!(e.status.is_buggy());
        // d = 1: per-coordinate and ℓ2 sensitivity agree, the claim holds.
        let e = super::super::build(
            "gaussian-vector-coordinate-sensitivity",
            &Params::new().set("dim", 1.0),
        )
        .unwrap();
        assert!(!e.status.is_buggy());
    }

    #[test]
    fn bad_parameters_name_the_parameter() {
        let cases: [(&str, &str, f64); 8] = [
            ("top-k-gumbel", "k", 0.0),
            ("top-k-gumbel", "k", 4.5),
            ("top-k-gumbel", "k", 5.0),
            ("top-k-one-selection", "categories", 1.0),
            ("top-k-gumbel", "epsilon", 0.0),
            ("gaussian-mean-data-n", "epsilon", -1.0),
            ("gaussian-mean-data-n", "delta", 0.0),
            ("gaussian-vector-coordinate-sensitivity", "dim", 0.0),
        ];
        for (id, name, value) in cases {
            let err = super::super::build(id, &Params::new().set(name, value))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name) && err.contains("allowed"), "{id}: {err}");
        }
    }
}
