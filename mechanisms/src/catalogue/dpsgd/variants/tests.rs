//! Unit tests of `dpsgd/variants/` (a sibling file so the module stays readable).
//!
//! Monte Carlo checks use a fixed seed and a tolerance of 5.3 standard errors (two-sided
//! false-failure rate ≈ 1.2e-7 per check by the CLT).

use super::*;
use crate::pld;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn build(id: &str, assignments: &[&str]) -> Entry {
    crate::catalogue::build(id, &Params::parse(assignments).unwrap())
        .unwrap_or_else(|e| panic!("{id} {assignments:?}: {e}"))
}

fn build_err(id: &str, assignments: &[&str]) -> String {
    match crate::catalogue::build(id, &Params::parse(assignments).unwrap()) {
        Ok(_) => panic!("{id} {assignments:?} should fail"),
        Err(e) => e.to_string(),
    }
}

fn epsilon(e: &Entry) -> f64 {
    e.mechanism.claim().natural_epsilon().unwrap()
}

const BUGGY: [&str; 5] = [
    "dpsgd-groups-composed-independently",
    "dpsgd-noise-allocator-reused-constant",
    "dpsgd-user-level-example-clipping",
    "dpsgd-batch-size-leak",
    "dpsgd-private-clip-norm",
];
const CORRECT: [&str; 5] = [
    "dpsgd-per-group-clipping",
    "dpsgd-noise-allocator",
    "dpsgd-user-level",
    "dpsgd-batch-size-released",
    "dpsgd-private-clip-norm-accounted",
];

#[test]
fn statuses_at_defaults() {
    for id in BUGGY {
        let e = build(id, &[]);
        eprintln!("{id}: {:?}\n  {:?}", e.mechanism.claim(), e.status);
        assert!(e.status.is_buggy(), "{id}");
    }
    for id in CORRECT {
        let e = build(id, &[]);
        eprintln!("{id}: {:?}", e.mechanism.claim());
        assert_eq!(e.status, Status::Correct, "{id}");
    }
    assert_eq!(specs().len(), 10);
}

#[test]
fn construction_errors_name_the_value() {
    let cases: [(&str, &[&str], &str); 9] = [
        ("dpsgd-per-group-clipping", &["groups=9"], "groups = 9"),
        ("dpsgd-per-group-clipping", &["noise_2=0"], "noise_2 = 0"),
        (
            "dpsgd-groups-composed-independently",
            &["clip_1=-1"],
            "clip_1 = -1",
        ),
        ("dpsgd-user-level", &["examples=0"], "examples = 0"),
        ("dpsgd-user-level", &["examples=1.5"], "an integer"),
        (
            "dpsgd-batch-size-leak",
            &["sampling_rate=1.5"],
            "sampling_rate = 1.5",
        ),
        (
            "dpsgd-batch-size-released",
            &["size_noise_multiplier=0"],
            "size_noise_multiplier = 0",
        ),
        (
            "dpsgd-private-clip-norm",
            &["clip_floor=2"],
            "clip_floor = 2",
        ),
        (
            "dpsgd-private-clip-norm-accounted",
            &["sampling_rate=0.5"],
            "unknown parameter",
        ),
    ];
    for (id, params, needle) in cases {
        let err = build_err(id, params);
        assert!(err.contains(needle), "{id} {params:?}: {err}");
    }
    // Direct construction: a full-batch variant refuses q < 1; group lists must match.
    let err = DpSgdVariant::new(
        "x",
        Variant::MedianClip { floor: 0.1 },
        0.5,
        1,
        1.0,
        1.0,
        1e-5,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("sampling_rate = 0.5; allowed: 1"), "{err}");
    let err = DpSgdVariant::new(
        "x",
        Variant::PerGroup {
            clips: vec![1.0],
            sigmas: vec![],
            independent: false,
            ledger_z: None,
        },
        1.0,
        1,
        1.0,
        1.0,
        1e-5,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("1 clip norms and 0 noise scales"), "{err}");
    let err = DpSgdVariant::new(
        "x",
        Variant::UserLevel {
            examples: 2,
            per_example: false,
        },
        1.0,
        0,
        1.0,
        1.0,
        1e-5,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("steps = 0"), "{err}");
}

#[test]
fn harmless_mistakes_are_correct() {
    // One group: the max over groups is the joint multiplier.
    let e = build("dpsgd-groups-composed-independently", &["groups=1"]);
    assert_eq!(e.status, Status::Correct);
    // One example per user: per-example clipping is user clipping.
    let e = build("dpsgd-user-level-example-clipping", &["examples=1"]);
    assert_eq!(e.status, Status::Correct);
    // A floor of 1: the clip norm is always 1 (gradients lie in [−1, 1]).
    let e = build("dpsgd-private-clip-norm", &["clip_floor=1"]);
    assert_eq!(e.status, Status::Correct);
    // Independent accounting of groups with one dominant group is still caught when the others
    // add enough.
    let e = build(
        "dpsgd-groups-composed-independently",
        &["groups=2", "noise_2=1.0"],
    );
    assert!(e.status.is_buggy(), "{:?}", e.status);
}

#[test]
fn claims_are_the_pld_upper_epsilon() {
    let sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0).unwrap();
    // (entry, q, the ledger's multiplier, steps)
    let cases: [(&str, &[&str], f64, f64, u64); 5] = [
        ("dpsgd-per-group-clipping", &[], 1.0, sigma / 2.0, 1),
        ("dpsgd-groups-composed-independently", &[], 1.0, sigma, 1),
        (
            "dpsgd-user-level",
            &["sampling_rate=0.2", "steps=3"],
            0.2,
            sigma,
            3,
        ),
        ("dpsgd-batch-size-leak", &[], 0.5, sigma, 1),
        (
            "dpsgd-batch-size-released",
            &[],
            0.5,
            1.0 / (sigma.powi(-2) + (2.0 * sigma).powi(-2)).sqrt(),
            1,
        ),
    ];
    for (id, params, q, z, steps) in cases {
        let e = build(id, params);
        let (upper, lower) =
            pld::epsilon_bounds(q, z, steps, 1e-5, Neighboring::AddRemove).unwrap();
        let eps = epsilon(&e);
        eprintln!("{id}: claim {eps} upper {upper} lower {lower}");
        // Rounded up to 9 significant digits.
        assert!(
            eps >= upper && eps / upper - 1.0 < 1e-8,
            "{id}: {eps} vs {upper}"
        );
        assert!(lower <= upper);
        assert!(e.mechanism.claim_source().contains("PLD accountant"));
        // The accountant bracket shown beside the empirical ε: the optimistic ε of the same
        // ledger below, the claim above.
        let r = e
            .mechanism
            .accountant_range()
            .unwrap_or_else(|| panic!("{id}: no accountant range"));
        assert_eq!((r.pessimistic, r.delta), (eps, 1e-5), "{id}");
        assert!(
            r.optimistic <= eps && (r.optimistic - lower).abs() <= 1e-6 * upper,
            "{id}: {r:?} vs lower {lower}"
        );
    }
    // Every variant (their claims all come from the ledger) carries the bracket.
    for id in BUGGY.iter().chain(CORRECT.iter()) {
        assert!(
            build(id, &[]).mechanism.accountant_range().is_some(),
            "{id}"
        );
    }
    // The correct per-group claim is tight on its witness: the exact Gaussian ε of μ = 2/σ.
    let e = build("dpsgd-per-group-clipping", &[]);
    let exact = crate::accountant::gaussian_exact_epsilon(sigma / 2.0, 1, 1e-5).unwrap();
    assert!(
        epsilon(&e) >= exact && epsilon(&e) < exact + 2e-4,
        "{} {exact}",
        epsilon(&e)
    );
}

/// Simpson's rule for ∫ (p − e^ε q)₊ over ±14 standard deviations of both Gaussians.
fn hockey_stick_quadrature(m1: f64, s1: f64, m2: f64, s2: f64, eps: f64) -> f64 {
    let pdf = |x: f64, m: f64, s: f64| {
        (-0.5 * ((x - m) / s).powi(2)).exp() / (s * (2.0 * std::f64::consts::PI).sqrt())
    };
    let lo = (m1 - 14.0 * s1).min(m2 - 14.0 * s2);
    let hi = (m1 + 14.0 * s1).max(m2 + 14.0 * s2);
    let n = 400_000;
    let h = (hi - lo) / n as f64;
    let f = |x: f64| (pdf(x, m1, s1) - eps.exp() * pdf(x, m2, s2)).max(0.0);
    let mut acc = f(lo) + f(hi);
    for i in 1..n {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        acc += w * f(lo + i as f64 * h);
    }
    acc * h / 3.0
}

#[test]
fn gaussian_pair_hockey_stick_matches_quadrature_and_gdp() {
    for &(m1, s1, m2, s2, eps) in &[
        (-2.0, 3.7306, -0.2, 0.37306, 1.0),
        (-0.2, 0.37306, -2.0, 3.7306, 1.0),
        (0.0, 1.0, 0.5, 1.3, 0.3),
        (0.0, 2.0, 0.0, 1.0, 0.2),
        (1.0, 1.0, 0.0, 1.0, 0.5),
    ] {
        let exact = gaussian_pair_hockey_stick(m1, s1, m2, s2, eps);
        let quad = hockey_stick_quadrature(m1, s1, m2, s2, eps);
        assert!(
            (exact - quad).abs() < 1e-7,
            "({m1}, {s1}) vs ({m2}, {s2}) at {eps}: {exact} vs {quad}"
        );
    }
    // Equal variances: the Gaussian DP profile (Balle & Wang 2018).
    let mu = 0.536;
    let a = gaussian_pair_hockey_stick(mu, 1.0, 0.0, 1.0, 1.0);
    assert!((a - gaussian_dp_delta(1.0, mu)).abs() < 1e-12);
}

#[test]
fn batch_size_profile_matches_closed_forms() {
    // T = 1: adding the record makes size n0 + 1 possible (mass q^(n0+1), impossible without
    // it), so at a huge ε only that atom is left: δ = q^(n0+1).
    let (add, _) = batch_size_deltas(3, 0.5, 1, 50.0).unwrap();
    assert!((add - 0.0625).abs() < 1e-15, "{add}");
    // T = 2 at a huge ε: 1 − (1 − q^(n0+1))².
    let (add, _) = batch_size_deltas(3, 0.5, 2, 50.0).unwrap();
    assert!(
        (add - (1.0 - (1.0 - 0.0625f64).powi(2))).abs() < 1e-15,
        "{add}"
    );
    // T = 1 at ε = 0: the total variation distance, by hand for n0 = 1, q = 0.5:
    // P = (1/2, 1/2, 0), P′ = (1/4, 1/2, 1/4): TV = 1/4.
    let (add, remove) = batch_size_deltas(1, 0.5, 1, 0.0).unwrap();
    assert!((add - 0.25).abs() < 1e-15 && (remove - 0.25).abs() < 1e-15);
    assert!(batch_size_deltas(3, 0.5, 16, 1.0).is_err());
}

#[test]
fn batch_size_leak_samples_have_the_binomial_sizes() {
    // The released size of `dpsgd-batch-size-leak` on the witness's larger side is
    // Bin(4, 1/2): P(size = 4) = 1/16 (z-test at 5.3 standard errors).
    let e = build("dpsgd-batch-size-leak", &[]);
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let n = 200_000;
    let s = e.mechanism.sample(e.witness.second(), n, &mut rng).unwrap();
    let full = s.column(1).iter().filter(|&&v| v == 4.0).count() as f64 / n as f64;
    let se = (0.0625 * 0.9375 / n as f64).sqrt();
    assert!((full - 0.0625).abs() < 5.3 * se, "{full}");
    let s = e.mechanism.sample(e.witness.first(), n, &mut rng).unwrap();
    assert!(s.column(1).iter().all(|&v| v <= 3.0));
}

/// The exact true δ of the sensitivity twins against a Monte Carlo estimate of P(S) − e^ε Q(S) on
/// the optimal event S of the Gaussian profile, from the mechanism's own samples.
#[test]
fn sensitivity_truth_matches_monte_carlo() {
    // dpsgd-user-level-example-clipping: the released θ₁ is −(2 + N(0, σ²)) with the user and
    // −N(0, σ²) without; dpsgd-groups-composed-independently: −(1 + N(0, σ²)) in each of 4
    // coordinates. Both are μ = 2/σ along the (whitened) direction of the record, and the optimal
    // event is the half-line {statistic > ε/μ + μ/2}.
    for id in [
        "dpsgd-user-level-example-clipping",
        "dpsgd-groups-composed-independently",
    ] {
        let e = build(id, &[]);
        let eps = epsilon(&e);
        let Status::Buggy { true_guarantee, .. } = &e.status else {
            panic!()
        };
        assert!(true_guarantee.contains("1.0395e-2"), "{true_guarantee}");
        let sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0).unwrap();
        let mu = 2.0 / sigma;
        let d_out = e.mechanism.output_dim();
        // Whitened statistic along the record's direction: −Σ_j θ_j/(σ√d).
        let stat = |row: ndarray::ArrayView1<f64>| -> f64 {
            -row.iter().sum::<f64>() / (sigma * (d_out as f64).sqrt())
        };
        // Optimal event of N(μ, 1) against N(0, 1) at ε: {x > ε/μ + μ/2}.
        let t = eps / mu + mu / 2.0;
        let n = 400_000;
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let p = e.mechanism.sample(e.witness.second(), n, &mut rng).unwrap();
        let q = e.mechanism.sample(e.witness.first(), n, &mut rng).unwrap();
        let fp = p
            .values()
            .rows()
            .into_iter()
            .filter(|r| stat(*r) > t)
            .count() as f64
            / n as f64;
        let fq = q
            .values()
            .rows()
            .into_iter()
            .filter(|r| stat(*r) > t)
            .count() as f64
            / n as f64;
        let est = fp - eps.exp() * fq;
        let se = ((fp * (1.0 - fp) + (2.0 * eps).exp() * fq * (1.0 - fq)) / n as f64).sqrt();
        let exact = gaussian_dp_delta(eps, mu);
        eprintln!("{id}: Monte Carlo {est:.4e} ± {se:.1e}, exact {exact:.4e}");
        assert!((est - exact).abs() < 5.3 * se, "{id}: {est} vs {exact}");
    }
}

#[test]
fn private_clip_norm_truth_matches_monte_carlo() {
    // The first iterate on each side of the witness: N(−2, σ²) and N(−0.2, (0.1σ)²). Check the
    // mechanism's samples have those moments, and the exact divergence against a Monte Carlo
    // estimate on its own optimal event.
    let e = build("dpsgd-private-clip-norm", &[]);
    let sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0).unwrap();
    let m = DpSgdVariant::new(
        "x",
        Variant::MedianClip { floor: 0.1 },
        1.0,
        1,
        sigma,
        1.0,
        1e-5,
    )
    .unwrap();
    let (m1, s1) = m.median_first_iterate(e.witness.first(), 0.1);
    let (m2, s2) = m.median_first_iterate(e.witness.second(), 0.1);
    assert!((m1 + 2.0).abs() < 1e-12 && (s1 - sigma).abs() < 1e-12);
    assert!((m2 + 0.2).abs() < 1e-12 && (s2 - 0.1 * sigma).abs() < 1e-12);
    let eps = epsilon(&e);
    let exact = gaussian_pair_hockey_stick(m2, s2, m1, s1, eps);
    // Optimal event {ln p₂ − ln p₁ > ε}: the interval found by the quadratic; estimate by
    // sampling both sides and evaluating the log ratio.
    let lr =
        |x: f64| (s1 / s2).ln() - 0.5 * ((x - m2) / s2).powi(2) + 0.5 * ((x - m1) / s1).powi(2);
    let n = 200_000;
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let p = e.mechanism.sample(e.witness.second(), n, &mut rng).unwrap();
    let q = e.mechanism.sample(e.witness.first(), n, &mut rng).unwrap();
    let fp = p.column(0).iter().filter(|&&x| lr(x) > eps).count() as f64 / n as f64;
    let fq = q.column(0).iter().filter(|&&x| lr(x) > eps).count() as f64 / n as f64;
    let est = fp - eps.exp() * fq;
    let se = ((fp * (1.0 - fp) + (2.0 * eps).exp() * fq * (1.0 - fq)) / n as f64).sqrt();
    eprintln!("private clip: Monte Carlo {est:.4} ± {se:.1e}, exact {exact:.4}");
    assert!((est - exact).abs() < 5.3 * se, "{est} vs {exact}");
}

#[test]
fn adaptive_clip_moves_toward_the_quantile() {
    // Four gradients of 0.5 ≤ C₁ = 1: the noisy fraction below is b̃ = (4 + N(0, σ_b²))/4 with
    // σ_b = 1, so C₂ = e^{−η(b̃ − γ)} = c·e^{−(η/4)·N} with c = e^{−η(1 − γ)}, a lognormal with
    // s = η/4 = 0.05 (C₂ > 0.5 except with probability < 1e-40, so no gradient is clipped). The
    // second step's increment θ₁ − θ₂ = 2 + C₂·N′ (z = 1): mean 2, variance E[C₂²] = c²e^{2s²},
    // and Var((θ₁ − θ₂ − 2)²) = 3c⁴e^{8s²} − c⁴e^{4s²}. z-tests at 5.3 standard errors.
    let e = build(
        "dpsgd-private-clip-norm-accounted",
        &["count_noise_multiplier=1", "noise_multiplier=1"],
    );
    let data = Dataset::scalars(vec![0.5; 4]).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    let n = 200_000;
    let s = e.mechanism.sample(&data, n, &mut rng).unwrap();
    let (c, sd) = ((-0.2f64 * 0.5).exp(), 0.05f64);
    let incr: Vec<f64> = (0..n)
        .map(|i| s.values()[[i, 0]] - s.values()[[i, 1]] - 2.0)
        .collect();
    let var = c * c * (2.0 * sd * sd).exp();
    let m4 = 3.0 * c.powi(4) * (8.0 * sd * sd).exp();
    let nf = n as f64;
    let mean = incr.iter().sum::<f64>() / nf;
    let v = incr.iter().map(|x| x * x).sum::<f64>() / nf;
    assert!(mean.abs() < 5.3 * (var / nf).sqrt(), "{mean}");
    assert!(
        (v - var).abs() < 5.3 * ((m4 - var * var) / nf).sqrt(),
        "{v} vs {var}"
    );
    // The first step uses C₁ = 1: θ₁ = −(2 + N(0, 1)).
    let first: Vec<f64> = s.column(0).iter().map(|x| x + 2.0).collect();
    let v1 = first.iter().map(|x| x * x).sum::<f64>() / nf;
    assert!((v1 - 1.0).abs() < 5.3 * (2.0 / nf).sqrt(), "{v1}");
}

#[test]
fn subsampled_sensitivity_twin_uses_the_optimistic_pld() {
    // q < 1: the lower bound is the optimistic PLD at the true multiplier σ/2, which lies below
    // the pessimistic one and, for this configuration, still far above the claimed δ.
    let e = build(
        "dpsgd-user-level-example-clipping",
        &["sampling_rate=0.5", "steps=2"],
    );
    let Status::Buggy { true_guarantee, .. } = &e.status else {
        panic!("{:?}", e.status)
    };
    assert!(
        true_guarantee.contains("optimistic PLD"),
        "{true_guarantee}"
    );
    let sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0).unwrap();
    let mut acct = PldAccountant::new(Neighboring::AddRemove);
    acct.compose_poisson_gaussian(0.5, sigma / 2.0, 2).unwrap();
    let (upper, lower) = acct.delta_bounds(epsilon(&e)).unwrap();
    assert!(lower <= upper && lower > 1e-3, "{lower} {upper}");
    assert_eq!(e.mechanism.output_dim(), 2);
}

#[test]
fn binomial_pmf_matches_statrs() {
    // The exact Bin(n, q) pmf behind `batch_size_deltas`, against statrs' Binomial.
    use statrs::distribution::{Binomial, Discrete};
    for (n, q) in [(1usize, 0.5), (3, 0.5), (10, 0.01), (40, 0.3), (200, 0.05)] {
        let pmf = binomial_pmf(n, q);
        let reference = Binomial::new(q, n as u64).unwrap();
        assert!(
            (pmf.iter().sum::<f64>() - 1.0).abs() < 1e-13,
            "Bin({n}, {q}) sum"
        );
        for (k, &p) in pmf.iter().enumerate() {
            let want = reference.pmf(k as u64);
            assert!(
                (p - want).abs() <= 1e-12 * want + 1e-300,
                "Bin({n}, {q}) pmf({k}) = {p}, statrs {want}"
            );
        }
    }
}

/// The allocator (seed 000 §4): the dimension-adjusted σ_j compose to the target z (μ = 1/z to
/// rounding, never above) and the claim is the target's; the twin's σ_j compose to
/// z·√(k/Σ d) = z·√(4/1111) (μ = 4.4673 at the default z) while its ledger records z, and its
/// status is buggy with δ ≥ 0.95 at the claimed ε (the exact Gaussian profile).
#[test]
fn the_allocator_meets_its_target_and_the_twin_misses_it() {
    use crate::accounting::allocation::{AllocationRule, Group, allocate};
    let z = default_noise_multiplier("x").unwrap();
    let groups: Vec<Group> = [(1.0, 100), (0.5, 10), (0.25, 1000), (1.0, 1)]
        .iter()
        .map(|&(clip, dim)| Group { clip, dim })
        .collect();
    let clips: Vec<f64> = groups.iter().map(|g| g.clip).collect();
    let sigmas = allocate(AllocationRule::DimensionAdjusted, &groups, z).unwrap();
    let variant = |sigmas: Vec<f64>, ledger_z| Variant::PerGroup {
        clips: clips.clone(),
        sigmas,
        independent: false,
        ledger_z,
    };
    let m = DpSgdVariant::new("x", variant(sigmas, None), 1.0, 1, 1.0, 1.0, 1e-5).unwrap();
    let mu = m.true_step_mu().unwrap();
    assert!(mu <= 1.0 / z && mu > (1.0 - 1e-12) / z, "{mu} vs {}", 1.0 / z);
    assert!((m.accounted_z - z).abs() < 1e-12 * z, "{}", m.accounted_z);
    let e = build("dpsgd-noise-allocator", &[]);
    assert_eq!(e.status, Status::Correct);
    assert_eq!(e.mechanism.claim(), m.claim());
    let twin: Vec<f64> = groups
        .iter()
        .map(|g| z * 2.0 * g.clip / (g.dim as f64).sqrt())
        .collect();
    let m = DpSgdVariant::new("x", variant(twin, Some(z)), 1.0, 1, 1.0, 1.0, 1e-5).unwrap();
    let mu = m.true_step_mu().unwrap();
    assert!((mu - (1111.0f64 / 4.0).sqrt() / z).abs() < 1e-9, "{mu}");
    assert_eq!(m.accounted_z, z);
    let e = build("dpsgd-noise-allocator-reused-constant", &[]);
    assert_eq!(e.mechanism.claim(), m.claim());
    let Status::Buggy { true_guarantee, .. } = &e.status else {
        panic!("{:?}", e.status)
    };
    assert!(true_guarantee.contains("4.467"), "{true_guarantee}");
    assert!(gaussian_dp_delta(1.0, mu) > 0.95);
}
