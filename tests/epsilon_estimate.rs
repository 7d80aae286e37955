//! The ε-estimate stage: near the truth where the claim is tight (power), and never above the
//! truth more often than its share of β (soundness).
//!
//! False-failure rates: the power checks expect bounds about 0.09 above their thresholds with a
//! standard deviation below 0.005 (Clopper–Pearson widths at 8·10^5 held-out releases), so they
//! fail spuriously with probability far below 1e-9. The soundness check counts, over 200 seeds
//! per entry, the stage's bounds (at β = 0.05) that exceed the true ε; each exceeds it with
//! probability at most 0.05, so more than 25 of 200 has probability < 1e-4 per entry (binomial
//! tail), < 3e-4 for the three entries.

use dp_audit::audit::{AuditConfig, ESTIMATE_SHARE, audit_pair};
use dp_audit::mechanisms::catalogue;
use dp_audit::testers::{HockeyStickTester, PropertyTester};

fn estimate(id: &str, seed: u64, n: usize, beta: f64) -> (f64, f64) {
    let e = catalogue::build(id, &Default::default()).unwrap();
    let m = &*e.mechanism;
    let testers: Vec<Box<dyn PropertyTester>> = vec![Box::new(HockeyStickTester::default())];
    let config = AuditConfig {
        seed,
        samples_per_side: n,
        failure_probability: beta,
    };
    let r = audit_pair(m, &m.claim(), &e.witness, &testers, &config).unwrap();
    let emp = r.empirical_epsilon.expect("an ε estimate");
    (emp.lower_bound, emp.delta)
}

/// Issue 26's targets on Laplace with ε = 1 on its witness pair, β = 0.05: ≥ 0.90 at 10^6
/// releases per side (measured 0.9898) and ≥ 0.97 at 10^7 (measured 0.9955, ignored here for its
/// 5 s and 340 MB; `cargo test --release --test epsilon_estimate -- --ignored`).
#[test]
fn laplace_estimate_is_near_its_true_epsilon() {
    let (lb, delta) = estimate("laplace-sum", 0, 1_000_000, 0.05);
    assert_eq!(delta, 0.0);
    assert!((0.90..=1.0).contains(&lb), "ε ≥ {lb} at 10^6");
    // Randomized response: the event is one output value, ε = 1 exactly.
    let (lb, _) = estimate("randomized-response", 0, 1_000_000, 0.05);
    assert!((0.95..=1.0).contains(&lb), "randomized response: ε ≥ {lb}");
}

#[test]
#[ignore = "10^7 releases per side: 5 s and 340 MB; run with --ignored"]
fn laplace_estimate_at_ten_million() {
    let (lb, _) = estimate("laplace-sum", 0, 10_000_000, 0.05);
    assert!((0.97..=1.0).contains(&lb), "ε ≥ {lb} at 10^7");
}

/// The analytic Gaussian with ε = 1, δ = 1e-5 (σ = 3.7306, true ε at δ = 1e-5 exactly 1): the
/// bound needs events rare enough that δ matters; at 10^6 per side it is 0.86 (measured).
#[test]
fn gaussian_estimate_at_its_delta() {
    let (lb, delta) = estimate("gaussian-sum-analytic", 0, 1_000_000, 0.05);
    assert_eq!(delta, 1e-5);
    assert!((0.75..=1.0).contains(&lb), "ε ≥ {lb}");
}

/// The stage's own bound (not the reported maximum with the verdict's events, which holds at
/// the whole β) on fresh releases of the entry's witness pair.
fn stage_bound(id: &str, seed: u64, n: usize, beta: f64) -> f64 {
    use dp_audit::rng::{Seed, Side, Stream, sample_parallel};
    let e = catalogue::build(id, &Default::default()).unwrap();
    let m = &*e.mechanism;
    let draw = |d, side| {
        let stream = Stream::Confirm {
            trial: 0,
            side,
            chunk: 0,
        };
        sample_parallel(m, d, n, Seed(seed), stream).unwrap()
    };
    let p = draw(e.witness.first(), Side::First);
    let q = draw(e.witness.second(), Side::Second);
    let delta = dp_audit::audit::estimate_delta(&m.claim()).unwrap();
    HockeyStickTester::default()
        .estimate_epsilon_in_memory(&p, &q, delta, beta, &mut estimate_rng(seed))
        .unwrap()
        .and_then(|f| f.lower_bound)
        .unwrap_or(0.0)
}

/// The stage's own stream for the Poisson numbers of held-out releases, as the audit derives it.
fn estimate_rng(seed: u64) -> impl rand::Rng {
    use dp_audit::rng::{Seed, Stream};
    Seed(seed).rng(Stream::Other {
        tag: dp_audit::audit::ESTIMATE_TAG,
        index: 0,
    })
}

/// Soundness: the stage at β = 0.05 (large enough for exceedances to show if it were
/// anti-conservative), 200 seeds, 2·10^4 releases per side, on three entries whose true ε at the
/// estimate's δ is exactly 1 (the audit spends β·[`ESTIMATE_SHARE`] on it).
#[test]
fn estimate_exceeds_the_truth_at_most_at_its_share_of_beta() {
    const { assert!(ESTIMATE_SHARE > 0.0 && ESTIMATE_SHARE < 1.0) };
    let mut rates = Vec::new();
    for id in [
        "laplace-sum",
        "randomized-response",
        "gaussian-sum-analytic",
    ] {
        let k = (0..200u64)
            .filter(|&s| stage_bound(id, 1000 + s, 20_000, 0.05) > 1.0)
            .count();
        rates.push((id, k));
    }
    eprintln!("exceedances of the true ε over 200 seeds (β = 0.05): {rates:?}");
    for (id, k) in rates {
        assert!(
            k <= 25,
            "{id}: the estimate exceeded the true ε in {k}/200 audits"
        );
    }
}

/// The μ estimate (certified Gaussian-DP curve, `HockeyStickTester::estimate_mu_in_memory`):
/// power and soundness on N(0, 1) against N(μ, 1), which is exactly μ-GDP.
///
/// Soundness: 200 seeds at μ = 1, 10⁴ releases per side, β = 0.05; each bound exceeds μ with
/// probability at most 0.05, so more than 22 of 200 has probability ≤ 1.9e-4 (the false-failure
/// rate). Power: at 10⁵ per side and μ = 1, the median of 11 seeds is ≥ 0.95 (measured
/// `audit bench gdp --repeats 50`: median 0.980, smallest 0.959; Clopper–Pearson widths give a
/// per-seed standard deviation near 0.005, so a median below 0.95 is a regression).
#[test]
fn mu_estimate_certifies_the_gaussian_curve_and_keeps_beta() {
    use dp_audit::rng::{Seed, Stream};
    use rand::RngExt;
    use rand_distr::StandardNormal;
    let draw = |seed: u64, n: usize, shift: f64, side: u64| {
        let mut rng = Seed(seed).rng(Stream::Other {
            tag: 0x37_0005,
            index: side,
        });
        let flat: Vec<f64> = (0..n)
            .map(|_| shift + rng.sample::<f64, _>(StandardNormal))
            .collect();
        dp_audit::mechanisms::Samples::from_flat(1, flat).unwrap()
    };
    let mu_hat = |seed: u64, n: usize| {
        HockeyStickTester::default()
            .estimate_mu_in_memory(&draw(seed, n, 1.0, 0), &draw(seed, n, 0.0, 1), 0.05)
            .unwrap()
            .and_then(|e| e.lower_bound)
            .unwrap_or(0.0)
    };
    let above = (0..200u64).filter(|&s| mu_hat(s, 10_000) > 1.0).count();
    eprintln!("mu estimate above mu = 1: {above}/200");
    assert!(above <= 22, "{above}/200 μ estimates above the true μ = 1");
    let mut at_1e5: Vec<f64> = (1000..1011u64).map(|s| mu_hat(s, 100_000)).collect();
    at_1e5.sort_by(f64::total_cmp);
    assert!(
        at_1e5[5] >= 0.95,
        "median μ estimate {} at 10^5 (all: {at_1e5:?})",
        at_1e5[5]
    );
}

/// A Gaussian-DP claim's audit certifies μ beside ε (half of the estimate's share of β each):
/// N(1, 1) against N(0, 1) claimed gdp:1 at 10⁵ per side gives μ ≥ 0.96 on this seed (the
/// bound is 0.98 ± 0.01 over seeds at the full share, `audit bench gdp`; 0.9 leaves a wide
/// margin), never above the true μ; other claims carry no μ.
#[test]
fn gaussian_dp_claims_get_a_certified_mu() {
    use dp_audit::audit::audit_samples;
    use dp_audit::mechanisms::PrivacyClaim;
    use dp_audit::rng::{Seed, Stream};
    use rand::RngExt;
    use rand_distr::StandardNormal;
    let draw = |shift: f64, side: u64| {
        let mut rng = Seed(7).rng(Stream::Other {
            tag: 0x37_0006,
            index: side,
        });
        let flat: Vec<f64> = (0..100_000)
            .map(|_| shift + rng.sample::<f64, _>(StandardNormal))
            .collect();
        dp_audit::mechanisms::Samples::from_flat(1, flat).unwrap()
    };
    let (a, b) = (draw(0.0, 0), draw(1.0, 1));
    let testers: Vec<Box<dyn PropertyTester>> = vec![Box::new(HockeyStickTester::default())];
    let config = AuditConfig {
        seed: 7,
        samples_per_side: 100_000,
        failure_probability: 0.05,
    };
    let gdp = audit_samples(
        &a,
        &b,
        ("a", "b"),
        &PrivacyClaim::GaussianDp { mu: 1.0 },
        &testers,
        &config,
    )
    .unwrap();
    let mu = gdp
        .empirical_epsilon
        .and_then(|e| e.mu_lower)
        .expect("a μ estimate");
    assert!((0.9..=1.0).contains(&mu), "μ ≥ {mu}");
    assert!(gdp.beta.rule.contains("μ estimate"), "{}", gdp.beta.rule);
    let pure = audit_samples(
        &a,
        &b,
        ("a", "b"),
        &PrivacyClaim::Pure { epsilon: 1.0 },
        &testers,
        &config,
    )
    .unwrap();
    assert!(pure.empirical_epsilon.is_none_or(|e| e.mu_lower.is_none()));
}
