//! Unit tests of `dpsgd/mod.rs` (a sibling file so the module stays readable).

use super::*;
use crate::catalogue::Entry;
use crate::math::analytic_gaussian_sigma;
use crate::mechanism::Params;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn build(id: &str, assignments: &[&str]) -> Entry {
    super::super::build(id, &Params::parse(assignments).unwrap())
        .unwrap_or_else(|e| panic!("{id} {assignments:?}: {e}"))
}

fn sigma() -> f64 {
    analytic_gaussian_sigma(1.0, 1e-5, 1.0).unwrap()
}

/// Draws `n` releases of `entry` on `data` and returns coordinate `j`.
fn draws(e: &Entry, data: &Dataset, n: usize, j: usize, seed: u64) -> Vec<f64> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let s = e.mechanism.sample(data, n, &mut rng).unwrap();
    s.column(j).to_vec()
}

/// z-tests of the sample mean and the sample variance (about the known mean) against exact
/// values, each at |z| < 5.3: two-sided false-failure rate ≈ 1.2e-7 per check by the CLT.
/// `m4` is the exact fourth central moment (3σ⁴ for a Gaussian), so the variance test uses
/// Var((X − μ)²) = m4 − σ⁴.
fn assert_moments(name: &str, xs: &[f64], mean: f64, var: f64, m4: f64) {
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let zm = (m - mean) / (var / n).sqrt();
    let zv = (v - var) / ((m4 - var * var) / n).sqrt();
    assert!(zm.abs() < 5.3, "{name}: mean {m} vs {mean} (z = {zm:.2})");
    assert!(
        zv.abs() < 5.3,
        "{name}: variance {v} vs {var} (z = {zv:.2})"
    );
}

fn gaussian_moments(name: &str, xs: &[f64], mean: f64, sd: f64) {
    assert_moments(name, xs, mean, sd * sd, 3.0 * sd.powi(4));
}

/// a·K + N(0, s²) with K ~ Bin(t, p): exact variance and fourth central moment.
fn binomial_gaussian_moments(name: &str, xs: &[f64], a: f64, t: f64, p: f64, s: f64) {
    let vk = t * p * (1.0 - p);
    let m4k = vk * (1.0 + 3.0 * (t - 2.0) * p * (1.0 - p));
    let var = a * a * vk + s * s;
    let m4 = a.powi(4) * m4k + 6.0 * a * a * vk * s * s + 3.0 * s.powi(4);
    assert_moments(name, xs, a * t * p, var, m4);
}

const N: usize = 200_000;

#[test]
fn dpsgd_claim_is_one_at_1e5() {
    let e = build("dpsgd", &[]);
    match e.mechanism.claim() {
        PrivacyClaim::Approximate { epsilon, delta } => {
            assert!((epsilon - 1.0).abs() < 1e-6, "{epsilon}");
            assert_eq!(delta, 1e-5);
        }
        c => panic!("{c:?}"),
    }
    let src = e.mechanism.claim_source();
    eprintln!("{src}");
    assert!(src.contains("exact Gaussian privacy profile"), "{src}");
    assert!(src.contains("epsilon = 1.000000 at delta = 1e-5"), "{src}");
    assert_eq!(e.status, Status::Correct);
}

#[test]
fn ledger_claim_matches_the_accountant_reference() {
    // ../shared/STATISTICS.md §4: q = 0.01, z = 1.1, T = 6000, δ = 1e-5 → ε = 3.8997714 from
    // dp_accounting's PLD accountant (4.2465987 from its RDP accountant, the looser claim the
    // entries made before).
    let e = build(
        "dpsgd",
        &["sampling_rate=0.01", "noise_multiplier=1.1", "steps=6000"],
    );
    let PrivacyClaim::Approximate { epsilon, .. } = e.mechanism.claim() else {
        panic!()
    };
    let (reference, _) = crate::pld::epsilon_bounds(
        0.01,
        1.1,
        6000,
        1e-5,
        crate::dataset::Neighboring::AddRemove,
    )
    .unwrap();
    eprintln!("{}", e.mechanism.claim_source());
    // Rounded up to 9 significant digits.
    assert!(epsilon >= reference && epsilon / reference - 1.0 < 1e-8);
    assert!(
        epsilon >= 3.8997714 && epsilon / 3.8997714 - 1.0 < 1e-3,
        "{epsilon}"
    );
    let mut acct = RdpAccountant::new();
    acct.compose_poisson_gaussian(0.01, 1.1, 6000).unwrap();
    assert!(epsilon < acct.epsilon(1e-5).unwrap().0);
    assert!(e.mechanism.claim_source().contains("PLD accountant"));
}

#[test]
fn groups_record_one_query_per_group_with_the_same_total() {
    let one = build("dpsgd", &["dim=4"]);
    let two = build("dpsgd", &["dim=4", "groups=2"]);
    let three = build(
        "dpsgd",
        &["dim=5", "groups=3", "sampling_rate=0.1", "steps=10"],
    );
    let single = build("dpsgd", &["dim=5", "sampling_rate=0.1", "steps=10"]);
    let eps = |e: &Entry| e.mechanism.claim().natural_epsilon().unwrap();
    assert!((eps(&one) / eps(&two) - 1.0).abs() < 1e-9);
    assert!((eps(&three) / eps(&single) - 1.0).abs() < 1e-9);
    let src = three.mechanism.claim_source();
    assert!(
        src.contains("10 × (Poisson sampling q = 0.1; Gaussian sum z = "),
        "{src}"
    );
    assert_eq!(src.matches("Gaussian sum z = ").count(), 1, "{src}");
    let m = DpSgd::new(
        "dpsgd",
        DpSgdConfig {
            groups: 3,
            dim: 5,
            ..test_config()
        },
    )
    .unwrap();
    assert_eq!(m.ledger.ledger().len(), 4);
    assert_eq!(m.groups, vec![0..2, 2..4, 4..5]);
}

fn test_config() -> DpSgdConfig {
    DpSgdConfig {
        form: RecordForm::Gradient,
        dim: 1,
        groups: 1,
        clipping: Clipping::PerGroup,
        sampling_rate: 1.0,
        noise_multiplier: sigma(),
        clip: 1.0,
        steps: 1,
        learning_rate: 1.0,
        delta: 1e-5,
        fault: Fault::None,
        release_every: 0,
        profile_claim: false,
    }
}

#[test]
fn dpsgd_noise_scale_walks_into_the_bug() {
    let build = |a: &[&str]| super::super::build("dpsgd", &Params::parse(a).unwrap()).unwrap();
    assert_eq!(build(&[]).status.word(), "correct");
    assert_eq!(build(&["noise_scale=1"]).status.word(), "correct");
    assert_eq!(build(&["noise_scale=0.5"]).status.word(), "buggy");
    assert_eq!(build(&["noise_scale=1.2"]).status.word(), "correct");
}

#[test]
fn bad_parameters_name_the_value_and_the_range() {
    let err = |id: &str, a: &[&str]| {
        super::super::build(id, &Params::parse(a).unwrap())
            .unwrap_err()
            .to_string()
    };
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "dpsgd",
            &["sampling_rate=0"],
            &["sampling_rate = 0", "0 < sampling_rate ≤ 1"],
        ),
        ("dpsgd", &["sampling_rate=1.5"], &["sampling_rate = 1.5"]),
        (
            "dpsgd",
            &["noise_multiplier=0"],
            &["noise_multiplier = 0", "0 < noise_multiplier"],
        ),
        (
            "dpsgd",
            &["noise_multiplier=-1"],
            &["noise_multiplier = -1"],
        ),
        ("dpsgd", &["steps=0"], &["steps = 0", "an integer from 1"]),
        ("dpsgd", &["steps=2.5"], &["steps = 2.5"]),
        ("dpsgd", &["clip=0"], &["clip = 0", "0 < clip"]),
        ("dpsgd", &["clip=-2"], &["clip = -2"]),
        ("dpsgd", &["delta=0"], &["delta = 0", "0 < delta < 1"]),
        ("dpsgd", &["delta=1"], &["delta = 1", "0 < delta < 1"]),
        ("dpsgd", &["groups=2"], &["groups = 2", "from 1 to 1"]),
        (
            "dpsgd",
            &["group_scale=2"],
            &["group_scale = 2", "joint_clipping = 1"],
        ),
        ("dpsgd", &["logistic=2"], &["logistic = 2"]),
        (
            "dpsgd",
            &["noise_scale=0"],
            &["noise_scale = 0", "0 < noise_scale ≤ 2"],
        ),
        (
            "dpsgd",
            &["noise_sclae=0.5"],
            &["unknown parameter", "noise_sclae"],
        ),
        (
            "dpsgd-scaled-noise",
            &["noise_scale=0"],
            &["noise_scale = 0", "0 < noise_scale ≤ 2"],
        ),
        (
            "dpsgd-scaled-noise",
            &["noise_scale=2.5"],
            &["noise_scale = 2.5"],
        ),
        (
            "dpsgd-clip-batch-sum",
            &["sampling_rate=0.5"],
            &["sampling_rate = 0.5", "allowed: 1"],
        ),
        (
            "dpsgd-wrong-sampling-rate",
            &["dataset_size_ratio=0.5"],
            &["dataset_size_ratio = 0.5"],
        ),
        (
            "dpsgd-joint-clip-rescale",
            &["group_scale=0"],
            &["group_scale = 0"],
        ),
    ];
    for (id, a, wants) in cases {
        let m = err(id, a);
        for w in *wants {
            assert!(m.contains(w), "{id} {a:?}: {m:?} lacks {w:?}");
        }
    }
    // The constructor checks too.
    let bad = |c: DpSgdConfig| DpSgd::new("dpsgd", c).unwrap_err().to_string();
    assert!(
        bad(DpSgdConfig {
            sampling_rate: 0.0,
            ..test_config()
        })
        .contains("sampling_rate = 0")
    );
    assert!(
        bad(DpSgdConfig {
            steps: 0,
            ..test_config()
        })
        .contains("steps = 0")
    );
    assert!(
        bad(DpSgdConfig {
            delta: 1.0,
            ..test_config()
        })
        .contains("delta = 1")
    );
    assert!(
        bad(DpSgdConfig {
            clip: f64::NAN,
            ..test_config()
        })
        .contains("clip = NaN")
    );
    assert!(
        bad(DpSgdConfig {
            form: RecordForm::Logistic,
            fault: Fault::ScaledNoise { factor: 0.5 },
            ..test_config()
        })
        .contains("gradient form")
    );
}

#[test]
fn dpsgd_samples_the_gaussian_mechanism() {
    let e = build("dpsgd", &[]);
    let z = sigma();
    gaussian_moments("dpsgd D", &draws(&e, e.witness.first(), N, 0, 1), 0.0, z);
    gaussian_moments("dpsgd D'", &draws(&e, e.witness.second(), N, 0, 2), -1.0, z);
}

#[test]
fn scaled_noise_samples_the_smaller_gaussian() {
    let e = build("dpsgd-scaled-noise", &[]);
    let z = sigma();
    gaussian_moments(
        "scaled D'",
        &draws(&e, e.witness.second(), N, 0, 3),
        -1.0,
        0.5 * z,
    );
    let e = build("dpsgd-scaled-noise", &["noise_scale=0.7", "clip=0.5"]);
    gaussian_moments(
        "scaled 0.7",
        &draws(&e, e.witness.second(), N, 0, 4),
        -0.5,
        0.35 * z,
    );
}

#[test]
fn clip_batch_sum_samples_the_clipped_sum() {
    let e = build("dpsgd-clip-batch-sum", &[]);
    let z = sigma();
    assert_eq!(e.witness.first().column(0), vec![-0.5]);
    assert_eq!(e.witness.second().column(0), vec![-0.5, 1.0]);
    gaussian_moments(
        "batch D",
        &draws(&e, e.witness.first(), N, 0, 5),
        0.5,
        0.5 * z,
    );
    gaussian_moments(
        "batch D'",
        &draws(&e, e.witness.second(), N, 0, 6),
        -0.5,
        0.5 * z,
    );
}

#[test]
fn wrong_sampling_rate_samples_at_the_true_rate() {
    let e = build("dpsgd-wrong-sampling-rate", &[]);
    let z = sigma();
    let xs = draws(&e, e.witness.second(), N, 0, 7);
    binomial_gaussian_moments("wrong-rate D'", &xs, -1.0, 1.0, 0.5, z);
    gaussian_moments(
        "wrong-rate D",
        &draws(&e, e.witness.first(), N, 0, 8),
        0.0,
        z,
    );
}

#[test]
fn joint_clipping_rescales_after_the_noise_and_the_bug_before() {
    let z = sigma();
    let bug = build("dpsgd-joint-clip-rescale", &[]);
    assert_eq!(bug.witness.second().record(3).to_vec(), vec![0.0, 1.0]);
    let d2 = bug.witness.second();
    gaussian_moments("rescale coord 0", &draws(&bug, d2, N, 0, 9), 0.0, 0.5 * z);
    gaussian_moments("rescale coord 1", &draws(&bug, d2, N, 1, 9), -1.0, 0.5 * z);
    let ok = build(
        "dpsgd",
        &[
            "joint_clipping=1",
            "dim=2",
            "groups=2",
            "clip=0.5",
            "group_scale=2",
        ],
    );
    assert_eq!(ok.status, Status::Correct);
    gaussian_moments("joint coord 0", &draws(&ok, d2, N, 0, 10), 0.0, 0.5 * z);
    gaussian_moments("joint coord 1", &draws(&ok, d2, N, 1, 10), -1.0, z);
    // A record beyond the clip in the scaled space: (1, 1)/(1, 2) = (1, ½), norm √5/2,
    // clipped to C = ½ → (1, ½)/√5, rescaled → (1, 1)/√5.
    let d = Dataset::vectors(2, &[vec![1.0, 1.0]]).unwrap();
    let m = 1.0 / 5f64.sqrt();
    gaussian_moments("joint clip 0", &draws(&ok, &d, N, 0, 11), -m, 0.5 * z);
    gaussian_moments("joint clip 1", &draws(&ok, &d, N, 1, 11), -m, z);
}

#[test]
fn per_group_clipping_and_noise() {
    // d = 3, k = 2: groups {0, 1} and {2}; C_1 = √(2/3), C_2 = √(1/3); σ_j = z√2·C_j.
    let e = build("dpsgd", &["dim=3", "groups=2"]);
    let z = sigma();
    let d = Dataset::vectors(3, &[vec![1.0, 1.0, 1.0]]).unwrap();
    let mean = -1.0 / 3f64.sqrt();
    let s1 = z * (4.0f64 / 3.0).sqrt();
    let s2 = z * (2.0f64 / 3.0).sqrt();
    for (j, s) in [(0, s1), (1, s1), (2, s2)] {
        gaussian_moments(
            &format!("group coord {j}"),
            &draws(&e, &d, N, j, 12),
            mean,
            s,
        );
    }
    // The witness adds one unit per group: (1, 0, 1).
    assert_eq!(e.witness.second().record(3).to_vec(), vec![1.0, 0.0, 1.0]);
}

#[test]
fn multi_step_and_poisson_sampling() {
    let z = sigma();
    // T = 10, q = 1: θ_T = −(10·1 + N(0, 10 z²)).
    let e = build("dpsgd", &["steps=10"]);
    gaussian_moments(
        "T=10",
        &draws(&e, e.witness.second(), N, 0, 13),
        -10.0,
        10f64.sqrt() * z,
    );
    // q = 0.3, T = 2, five unit records, η = 0.5, z = 1: θ = −0.5(K + N(0, 2)), K ~ Bin(10, 0.3).
    let e = build(
        "dpsgd",
        &[
            "sampling_rate=0.3",
            "steps=2",
            "noise_multiplier=1",
            "learning_rate=0.5",
        ],
    );
    let d = Dataset::scalars(vec![1.0; 5]).unwrap();
    let xs = draws(&e, &d, N, 0, 14);
    binomial_gaussian_moments("poisson", &xs, -0.5, 10.0, 0.3, 0.5 * 2f64.sqrt());
    // Empty dataset: noise only.
    let xs = draws(&e, &Dataset::empty(1).unwrap(), N, 0, 15);
    gaussian_moments("empty", &xs, 0.0, 0.5 * 2f64.sqrt());
}

#[test]
fn logistic_regression_follows_the_clipped_gradient_path() {
    // Negligible noise: the release is the noiseless clipped-gradient trajectory.
    let e = build(
        "dpsgd",
        &[
            "logistic=1",
            "dim=2",
            "steps=3",
            "learning_rate=0.5",
            "clip=0.3",
            "noise_multiplier=1e-9",
        ],
    );
    let recs = vec![
        vec![1.0, -0.5, 1.0],
        vec![0.2, 0.3, 0.0],
        vec![-1.0, 1.0, 0.4],
    ];
    let d = Dataset::vectors(3, &recs).unwrap();
    let mut theta = [0.0f64; 2];
    for _ in 0..3 {
        let mut sum = [0.0; 2];
        for r in &recs {
            let p = 1.0 / (1.0 + (-(theta[0] * r[0] + theta[1] * r[1])).exp());
            let g = [(p - r[2]) * r[0], (p - r[2]) * r[1]];
            let norm = (g[0] * g[0] + g[1] * g[1]).sqrt();
            let f = if norm > 0.3 { 0.3 / norm } else { 1.0 };
            sum[0] += g[0] * f;
            sum[1] += g[1] * f;
        }
        theta[0] -= 0.5 * sum[0];
        theta[1] -= 0.5 * sum[1];
    }
    let mut rng = ChaCha20Rng::seed_from_u64(16);
    let s = e.mechanism.sample(&d, 3, &mut rng).unwrap();
    for i in 0..3 {
        for j in 0..2 {
            assert!(
                (s.values()[[i, j]] - theta[j]).abs() < 1e-6,
                "{:?} {theta:?}",
                s.row(i)
            );
        }
    }
    assert_eq!(e.mechanism.domain().dim, 3);
    assert_eq!(e.witness.second().record(3).to_vec(), vec![1.0, 0.0, 0.0]);
    // One step at θ₀ = 0 on the witness: −(½ + N(0, z²)).
    let e = build("dpsgd", &["logistic=1"]);
    gaussian_moments(
        "logistic",
        &draws(&e, e.witness.second(), N, 0, 17),
        -0.5,
        sigma(),
    );
}

#[test]
fn final_model_profile_agrees_with_closed_forms_and_quadrature() {
    // q = 1 is the Gaussian profile.
    let (a, b) = final_model_deltas(1.0, 0.5, 4, 1.0);
    assert_eq!(a, gaussian_dp_delta(1.0, 1.0));
    assert_eq!(a, b);
    // q < 1, T = 1: trapezoidal quadrature of ∫ max(p − e^ε q, 0).
    let quad = |q: f64, mu: f64, eps: f64| {
        let phi = |x: f64| (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let (lo, hi, n) = (-40.0, 40.0 + mu, 400_000);
        let h = (hi - lo) / n as f64;
        let (mut s1, mut s2) = (0.0, 0.0);
        for i in 0..=n {
            let x = lo + h * i as f64;
            let p = (1.0 - q) * phi(x) + q * phi(x - mu);
            let w = if i == 0 || i == n { 0.5 } else { 1.0 };
            s1 += w * (p - eps.exp() * phi(x)).max(0.0);
            s2 += w * (phi(x) - eps.exp() * p).max(0.0);
        }
        (s1 * h, s2 * h)
    };
    for (q, mu, eps) in [
        (0.5, 0.268, 0.11),
        (0.1, 1.0, 0.3),
        (0.9, 2.0, 1.5),
        (0.3, 3.0, 0.0),
    ] {
        let (a, b) = final_model_deltas(q, mu, 1, eps);
        let (qa, qb) = quad(q, mu, eps);
        eprintln!("q {q} mu {mu} eps {eps}: {a:.10e} {b:.10e} quadrature {qa:.10e} {qb:.10e}");
        assert!((a - qa).abs() <= 1e-7 * qa.max(1e-3), "{a} {qa}");
        assert!((b - qb).abs() <= 1e-7 * qb.max(1e-3), "{b} {qb}");
    }
    // The final model leaks no more than the transcript: below the PLD accountant's 3.8997714
    // for q = 0.01, z = 1.1, T = 6000 (STATISTICS.md §4), which is below the RDP 4.2465987.
    let eps = final_model_epsilon(0.01, 1.0 / 1.1, 6000, 1e-5);
    eprintln!("final model of q = 0.01, z = 1.1, T = 6000: eps = {eps}");
    assert!(eps > 0.0 && eps < 3.8997714, "{eps}");
    // T = 1: the final model is the transcript; the exact ε is below the RDP bound.
    let exact = final_model_epsilon(0.5, 1.0 / sigma(), 1, 1e-5);
    let mut acct = RdpAccountant::new();
    acct.compose_poisson_gaussian(0.5, sigma(), 1).unwrap();
    assert!(exact < acct.epsilon(1e-5).unwrap().0);
}

fn delta_at_claim(e: &Entry) -> f64 {
    let eps = e.mechanism.claim().natural_epsilon().unwrap();
    let Status::Buggy { true_guarantee, .. } = &e.status else {
        panic!("{} is not buggy", e.mechanism.id())
    };
    eprintln!("{}: claim eps {eps:.6}; {true_guarantee}", e.mechanism.id());
    let tail = true_guarantee.rsplit("its delta is ").next().unwrap();
    tail.parse().unwrap()
}

/// The defaults' violations are large: the exact δ at the claimed ε on the worst pair, which
/// the witness realizes.
#[test]
fn buggy_defaults_violate_their_claims_by_far() {
    for id in [
        "dpsgd-scaled-noise",
        "dpsgd-clip-batch-sum",
        "dpsgd-joint-clip-rescale",
    ] {
        let e = build(id, &[]);
        // 4 significant digits in the report; STATISTICS.md §3 gives 1.04e-2.
        let d = delta_at_claim(&e);
        assert!((d / 1.0394911872878e-2 - 1.0).abs() < 1e-3, "{id}: {d}");
        let eps = e.mechanism.claim().natural_epsilon().unwrap();
        assert!((eps - 1.0).abs() < 1e-6, "{id}: {eps}");
    }
    // The same through the mechanism itself, to full precision: μ = 2/z.
    let m = DpSgd::new(
        "dpsgd-scaled-noise",
        DpSgdConfig {
            fault: Fault::ScaledNoise { factor: 0.5 },
            ..test_config()
        },
    )
    .unwrap();
    assert!((m.true_step_mu() * sigma() - 2.0).abs() < 1e-12);
    let d = m.true_delta(m.epsilon);
    assert!((d - gaussian_dp_delta(m.epsilon, 2.0 / sigma())).abs() < 1e-15);
    let e = build("dpsgd-wrong-sampling-rate", &[]);
    let d = delta_at_claim(&e);
    let eps = e.mechanism.claim().natural_epsilon().unwrap();
    // The claim is the PLD accountant's at q = 0.05 (one step), tighter than the RDP claim
    // ε = 0.1106 it used to be, at which a Python quadrature (scipy) gave δ = 1.8301e-2 adding
    // the record: at the smaller ε the δ is larger still.
    let (pld_eps, _) = crate::pld::epsilon_bounds(
        0.05,
        sigma(),
        1,
        1e-5,
        crate::dataset::Neighboring::AddRemove,
    )
    .unwrap();
    assert!(
        eps >= pld_eps && eps / pld_eps - 1.0 < 1e-8,
        "{eps} vs {pld_eps}"
    );
    assert!(eps < 0.11062732792545141, "{eps}");
    assert!(d > 1.830123699450172e-2, "{d}");
    let src = e.mechanism.claim_source();
    assert!(src.contains("q = 0.05"), "{src}");
}

#[test]
fn harmless_parameters_are_correct() {
    for (id, a) in [
        ("dpsgd-scaled-noise", &["noise_scale=1"][..]),
        ("dpsgd-scaled-noise", &["noise_scale=1.5"]),
        ("dpsgd-clip-batch-sum", &["clip=1"]),
        ("dpsgd-wrong-sampling-rate", &["dataset_size_ratio=1"]),
        ("dpsgd-joint-clip-rescale", &["group_scale=1"]),
        ("dpsgd-joint-clip-rescale", &["group_scale=0.5"]),
    ] {
        let e = build(id, a);
        assert_eq!(e.status, Status::Correct, "{id} {a:?}");
    }
    // Still buggy just below the boundary (q = 1: exact).
    assert!(
        build("dpsgd-scaled-noise", &["noise_scale=0.99"])
            .status
            .is_buggy()
    );
    // q < 1: with the RDP claim (loose by 10–40 %) 3 % less noise, and over 100 steps even
    // half the noise, kept the claim for the final model; the PLD claim is tight enough that
    // both are now violations of the final model's exact profile. Over 1000 steps the final
    // model hides half the noise again (the noise of every step accumulates, the record shows
    // in about qT of them), while the released iterates do not. Computed, not assumed.
    for a in [
        &[
            "noise_scale=0.97",
            "sampling_rate=0.01",
            "noise_multiplier=1.1",
        ][..],
        &[
            "noise_scale=0.5",
            "sampling_rate=0.01",
            "noise_multiplier=1.1",
            "steps=100",
        ],
        &[
            "noise_scale=0.5",
            "sampling_rate=0.01",
            "noise_multiplier=1.1",
            "steps=100",
            "release_every=1",
        ],
    ] {
        let e = build("dpsgd-scaled-noise", a);
        eprintln!("{a:?}: {:?}", e.status);
        assert!(e.status.is_buggy(), "{a:?}");
    }
    for (a, buggy) in [
        (&["noise_scale=1", "release_every=1"][..], false),
        (&["noise_scale=1.2", "release_every=1"][..], false),
    ] {
        let e = build(
            "dpsgd-scaled-noise",
            &[
                &["sampling_rate=0.01", "noise_multiplier=1.1", "steps=100"][..],
                a,
            ]
            .concat(),
        );
        assert_eq!(e.status.is_buggy(), buggy, "{a:?}: {:?}", e.status);
    }
    let e = build(
        "dpsgd-scaled-noise",
        &[
            "noise_scale=0.5",
            "sampling_rate=0.01",
            "noise_multiplier=1.1",
        ],
    );
    eprintln!("{:?}", e.status);
    assert!(e.status.is_buggy());
}

#[test]
fn joint_worst_record_is_a_knapsack() {
    // Scales (1, 2), C = ½, one coordinate each: (0, 1), Δ = 1.
    let g = split_groups(2, 2);
    assert_eq!(
        joint_worst_record(&g, &[1.0, 2.0], 0.5),
        (vec![0.0, 1.0], 1.0)
    );
    // C = 1: group 2 costs ¼ of the budget, group 1 gets the rest (¾ → u = ¾).
    let (x, d) = joint_worst_record(&g, &[1.0, 2.0], 1.0);
    assert!((d - 1.75f64.sqrt()).abs() < 1e-15 && (x[0] - 0.75f64.sqrt()).abs() < 1e-15);
    // Brute force over a grid of [−1, 1]² agrees.
    let f = |a: f64, b: f64| {
        let n = (a * a + b * b).sqrt();
        let ns = (a * a + b * b / 4.0).sqrt();
        if ns > 1.0 { n / ns } else { n }
    };
    let mut best: f64 = 0.0;
    for i in 0..=400 {
        for j in 0..=400 {
            best = best.max(f(i as f64 / 400.0, j as f64 / 400.0));
        }
    }
    assert!(best <= d + 1e-12 && best > d - 1e-3, "{best} {d}");
}

/// 200k releases of the one-step mechanism are fast (informational; no timing assertion, the
/// debug build is slow).
#[test]
fn sampling_speed() {
    let e = build("dpsgd", &[]);
    let mut rng = ChaCha20Rng::seed_from_u64(0);
    let t = std::time::Instant::now();
    let s = e.mechanism.sample(e.witness.second(), N, &mut rng).unwrap();
    eprintln!("200k one-step releases: {:?}", t.elapsed());
    assert_eq!(s.n(), N);
    let e = build("dpsgd-wrong-sampling-rate", &["steps=10"]);
    let t = std::time::Instant::now();
    e.mechanism.sample(e.witness.second(), N, &mut rng).unwrap();
    eprintln!("200k ten-step Poisson releases: {:?}", t.elapsed());
}
