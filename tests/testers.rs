//! Integration tests of the Rényi, MMD and histogram testers through the public API.
//!
//! 1. **Bad input** gives an error naming what is wrong.
//! 2. **Soundness** on pairs whose divergence is known in closed form (Gaussian shift, Laplace
//!    shift, randomized response): over 40 seeds at n = 20 000 per side and β = 0.05, the number of
//!    seeds where a bound exceeds the truth must be at most 8. For a tester whose non-coverage is
//!    ≤ β, that count is stochastically at most Bin(40, 0.05), and
//!    P(Bin(40, 0.05) ≥ 9) = 1.30e-4 (computed in [`critical_count`] with statrs), so with the
//!    16 configurations below (4 pairs, including P = Q where any positive bound is an
//!    exceedance; × MMD, histogram, Rényi at α = 2 and 8) the test fails spuriously with
//!    probability ≤ 16 × 1.30e-4 = 2.1e-3 (and, seeds being fixed, either always or never for a
//!    given build). The ignored sweep runs ≥ 200 seeds with the failure
//!    threshold at the binomial 1 − 1e-6 quantile:
//!    `AUDIT_SEED_SWEEP=200 cargo test --release --test testers -- --ignored --nocapture`
//! 3. **Power**: each tester flags the DP-GD scaled-noise bug (STATISTICS.md §3, s = 0.5) at
//!    n = 1e5 per side and β = 0.05 in total (split over the planned divergences and both
//!    directions, as the runner does), on a fixed seed, and does not flag the correct mechanism
//!    (s = 1) on that seed. Not flaky: the seed is fixed, and the expected bounds are far above
//!    what the claim allows (hockey-stick divergence ≈ 4e-3 against an allowed 1e-5; Rényi ≈ 0.25
//!    against an allowed 0.072), so a change of seed would not change the outcome either.

use dp_audit::Error;
use dp_audit::mechanisms::math::gaussian_dp_delta;
use dp_audit::mechanisms::{PrivacyClaim, Samples};
use dp_audit::rng::{Seed, Stream};
use dp_audit::testers::{
    Divergence, HistogramTester, MmdTester, PropertyTester, RenyiTester, TESTER_NAMES, allowed,
    by_name, violates,
};
use rand::RngExt;
use rand_distr::{Distribution, Normal};
use rayon::prelude::*;
use statrs::distribution::{Binomial, DiscreteCDF};

/// Analytic-Gaussian noise for (1, 1e-5)-DP at sensitivity 1 (STATISTICS.md §1).
const SIGMA_C: f64 = 3.7306316348159374;

fn rng(seed: u64, side: u64) -> dp_audit::rng::AuditRng {
    Seed(seed).rng(Stream::Other {
        tag: 300,
        index: side,
    })
}

fn normal(n: usize, mean: f64, sd: f64, seed: u64, side: u64) -> Samples {
    let mut r = rng(seed, side);
    let d = Normal::new(mean, sd).unwrap();
    Samples::from_column((0..n).map(|_| d.sample(&mut r)).collect())
}

/// Laplace(mean, b) by inversion.
fn laplace(n: usize, mean: f64, b: f64, seed: u64, side: u64) -> Samples {
    let mut r = rng(seed, side);
    Samples::from_column(
        (0..n)
            .map(|_| {
                let u: f64 = r.random::<f64>() - 0.5;
                mean - b * u.signum() * (-2.0 * u.abs()).ln_1p()
            })
            .collect(),
    )
}

fn bernoulli(n: usize, p: f64, seed: u64, side: u64) -> Samples {
    let mut r = rng(seed, side);
    Samples::from_column((0..n).map(|_| f64::from(r.random::<f64>() < p)).collect())
}

/// A pair of distributions with known divergences.
#[derive(Clone, Copy, Debug)]
enum Pair {
    /// N(μ, 1) vs N(0, 1).
    Gaussian { mu: f64 },
    /// Laplace(μ, 1) vs Laplace(0, 1).
    Laplace { mu: f64 },
    /// Bern(p1) vs Bern(p0).
    Rr { p1: f64, p0: f64 },
    /// N(0, 1) vs N(0, 1): every divergence is 0, so any positive bound is an exceedance.
    Null,
}

impl Pair {
    fn sample(self, n: usize, seed: u64) -> (Samples, Samples) {
        match self {
            Pair::Gaussian { mu } => (normal(n, mu, 1.0, seed, 0), normal(n, 0.0, 1.0, seed, 1)),
            Pair::Laplace { mu } => (laplace(n, mu, 1.0, seed, 0), laplace(n, 0.0, 1.0, seed, 1)),
            Pair::Rr { p1, p0 } => (bernoulli(n, p1, seed, 0), bernoulli(n, p0, seed, 1)),
            Pair::Null => (normal(n, 0.0, 1.0, seed, 0), normal(n, 0.0, 1.0, seed, 1)),
        }
    }

    /// Exact H_{e^ε}(P ‖ Q).
    fn hockey_stick(self, epsilon: f64) -> f64 {
        match self {
            Pair::Gaussian { mu } => gaussian_dp_delta(epsilon, mu),
            // Privacy profile of the Laplace shift with ε0 = μ/b: 1 − e^{(ε − ε0)/2} for ε ≤ ε0.
            Pair::Laplace { mu } => (1.0 - ((epsilon - mu) / 2.0).exp()).max(0.0),
            Pair::Rr { p1, p0 } => {
                let e = epsilon.exp();
                (p1 - e * p0).max(0.0) + ((1.0 - p1) - e * (1.0 - p0)).max(0.0)
            }
            Pair::Null => 0.0,
        }
    }

    /// Exact D_α(P ‖ Q).
    fn renyi(self, alpha: f64) -> f64 {
        match self {
            // Mironov 2017, Prop. 7.
            Pair::Gaussian { mu } => alpha * mu * mu / 2.0,
            // Mironov 2017, Prop. 6 (scale 1).
            Pair::Laplace { mu } => {
                let a = alpha;
                ((a / (2.0 * a - 1.0)) * ((a - 1.0) * mu).exp()
                    + ((a - 1.0) / (2.0 * a - 1.0)) * (-a * mu).exp())
                .ln()
                    / (a - 1.0)
            }
            Pair::Rr { p1, p0 } => {
                let a = alpha;
                (p1.powf(a) * p0.powf(1.0 - a) + (1.0 - p1).powf(a) * (1.0 - p0).powf(1.0 - a)).ln()
                    / (a - 1.0)
            }
            Pair::Null => 0.0,
        }
    }
}

/// Largest number of exceedances out of `seeds` accepted at level β: the test fails when the
/// count is above it, which for a valid tester happens with probability
/// P(Bin(seeds, β) > critical) ≤ `false_failure`.
fn critical_count(seeds: u64, beta: f64, false_failure: f64) -> u64 {
    let b = Binomial::new(beta, seeds).unwrap();
    (0..=seeds)
        .find(|&k| 1.0 - b.cdf(k) <= false_failure)
        .unwrap()
}

/// (tester, divergence, pair, truth) configurations of the soundness tests.
fn configurations() -> Vec<(Box<dyn PropertyTester>, Divergence, Pair, f64)> {
    let pairs = [
        Pair::Gaussian { mu: 1.0 },
        Pair::Laplace { mu: 1.0 },
        // Randomized response with ε0 = 1.
        Pair::Rr {
            p1: 1f64.exp() / (1.0 + 1f64.exp()),
            p0: 1.0 / (1.0 + 1f64.exp()),
        },
        Pair::Null,
    ];
    let mut out: Vec<(Box<dyn PropertyTester>, Divergence, Pair, f64)> = Vec::new();
    for pair in pairs {
        // ε = 0 (total variation) on the null pair: the sharpest case, every event attains 0.
        let eps = if matches!(pair, Pair::Null) { 0.0 } else { 0.5 };
        let h = pair.hockey_stick(eps);
        out.push((
            Box::new(MmdTester::default()),
            Divergence::HockeyStick { epsilon: eps },
            pair,
            h,
        ));
        out.push((
            Box::new(HistogramTester::default()),
            Divergence::HockeyStick { epsilon: eps },
            pair,
            h,
        ));
        for alpha in [2.0, 8.0] {
            out.push((
                Box::new(RenyiTester::default()),
                Divergence::Renyi { alpha },
                pair,
                pair.renyi(alpha),
            ));
        }
    }
    out
}

/// Runs every configuration over `seeds` seeds; returns (description, exceedances, mean bound).
fn sweep(seeds: u64, n: usize, beta: f64) -> Vec<(String, u64, f64)> {
    configurations()
        .into_par_iter()
        .map(|(tester, divergence, pair, truth)| {
            let results: Vec<f64> = (0..seeds)
                .into_par_iter()
                .map(|s| {
                    let (p, q) = pair.sample(n, 1000 + s);
                    let mut r = Seed(s).rng(Stream::Tester { bound: 0 });
                    tester
                        .lower_bound(&p, &q, divergence, beta, &mut r)
                        .unwrap()
                        .value
                })
                .collect();
            let exceed = results.iter().filter(|&&v| v > truth).count() as u64;
            let mean = results.iter().sum::<f64>() / seeds as f64;
            (
                format!(
                    "{} {divergence} on {pair:?}: truth {truth:.4e}",
                    tester.name()
                ),
                exceed,
                mean,
            )
        })
        .collect()
}

#[test]
fn false_failure_rate_of_the_soundness_test() {
    // The numbers quoted in the module docs.
    assert_eq!(critical_count(40, 0.05, 2e-4), 8);
    let b = Binomial::new(0.05, 40).unwrap();
    let tail = 1.0 - b.cdf(8);
    assert!((tail - 1.296e-4).abs() < 1e-6, "{tail}");
    assert!(16.0 * tail < 2.1e-3);
}

/// Soundness on 40 seeds (quick version; see the module docs for the numbers).
#[test]
fn bounds_exceed_known_divergences_rarely() {
    let (seeds, beta) = (40, 0.05);
    let crit = critical_count(seeds, beta, 2e-4);
    for (what, exceed, mean) in sweep(seeds, 20_000, beta) {
        eprintln!("{what}; bound > truth in {exceed}/{seeds} seeds; mean bound {mean:.4e}");
        assert!(
            exceed <= crit,
            "{what}: {exceed}/{seeds} exceedances (max {crit})"
        );
    }
}

/// The same with `AUDIT_SEED_SWEEP` (default 200) seeds; fails above the binomial 1 − 1e-6
/// quantile. Run: `AUDIT_SEED_SWEEP=200 cargo test --release --test testers -- --ignored --nocapture`
#[test]
#[ignore = "seed sweep: about 30 s on 2 cores; run with --ignored"]
fn seed_sweep_bounds_exceed_known_divergences_rarely() {
    let seeds: u64 = std::env::var("AUDIT_SEED_SWEEP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let beta = 0.05;
    let crit = critical_count(seeds, beta, 1e-6);
    let mut failed = Vec::new();
    for (what, exceed, mean) in sweep(seeds, 20_000, beta) {
        eprintln!(
            "{what}; bound > truth in {exceed}/{seeds} seeds (β = {beta}; fail above {crit}); mean bound {mean:.4e}"
        );
        if exceed > crit {
            failed.push(what);
        }
    }
    assert!(
        failed.is_empty(),
        "non-coverage above threshold: {failed:?}"
    );
}

/// Audits like the runner: the tester's plan, both directions, β split evenly; returns whether
/// any bound exceeds what the claim allows, and the largest bound.
fn flags(
    tester: &dyn PropertyTester,
    claim: &PrivacyClaim,
    p: &Samples,
    q: &Samples,
) -> (bool, f64) {
    let beta = 0.05;
    let plan = tester.plan(claim, p.n()).unwrap();
    let per = beta / (2 * plan.len()) as f64;
    let mut flagged = false;
    let mut largest: f64 = 0.0;
    for (i, d) in plan.iter().enumerate() {
        let allow = allowed(claim, d).unwrap();
        for (j, (a, b)) in [(p, q), (q, p)].into_iter().enumerate() {
            let mut r = Seed(7).rng(Stream::Tester {
                bound: (2 * i + j) as u64,
            });
            let m = tester.lower_bound(a, b, *d, per, &mut r).unwrap();
            largest = largest.max(m.value);
            flagged |= violates(m.value, allow);
        }
    }
    (flagged, largest)
}

/// Power on the DP-GD scaled-noise bug (s = 0.5) at n = 1e5, fixed seed; the correct mechanism
/// (s = 1) on the same seed is not flagged.
#[test]
fn each_tester_flags_the_scaled_noise_gaussian() {
    let n = 100_000;
    let approx = PrivacyClaim::approximate(1.0, 1e-5).unwrap();
    // The RDP at α = 2 of the correct mechanism: α/(2σ_c²).
    let rdp = PrivacyClaim::renyi(2.0, 2.0 / (2.0 * SIGMA_C * SIGMA_C)).unwrap();
    let cases: Vec<(Box<dyn PropertyTester>, PrivacyClaim)> = vec![
        (Box::new(MmdTester::default()), approx),
        (Box::new(HistogramTester::default()), approx),
        (Box::new(RenyiTester::default()), rdp),
    ];
    for s in [0.5, 1.0] {
        let p = normal(n, 1.0, s * SIGMA_C, 11, 0);
        let q = normal(n, 0.0, s * SIGMA_C, 11, 1);
        let results: Vec<(String, bool, f64)> = cases
            .par_iter()
            .map(|(t, claim)| {
                let (f, largest) = flags(&**t, claim, &p, &q);
                (format!("{} vs {claim}", t.name()), f, largest)
            })
            .collect();
        for (what, flagged, largest) in results {
            eprintln!("s = {s}: {what}: largest bound {largest:.4e}, flagged {flagged}");
            assert_eq!(
                flagged,
                s < 1.0,
                "s = {s}: {what}: largest bound {largest:.4e}"
            );
        }
    }
}

fn testers() -> Vec<Box<dyn PropertyTester>> {
    vec![
        Box::new(RenyiTester::default()),
        Box::new(MmdTester::default()),
        Box::new(HistogramTester::default()),
    ]
}

fn divergence_for(t: &dyn PropertyTester) -> Divergence {
    if t.name() == "renyi" {
        Divergence::Renyi { alpha: 2.0 }
    } else {
        Divergence::HockeyStick { epsilon: 1.0 }
    }
}

#[test]
fn bad_samples_are_errors_naming_the_problem() {
    let good = normal(1000, 0.0, 1.0, 1, 0);
    let mut with_nan: Vec<f64> = (0..1000).map(|i| i as f64).collect();
    with_nan[17] = f64::NAN;
    let nan = Samples::from_column(with_nan);
    let inf = Samples::from_column(vec![f64::INFINITY; 1000]);
    let two_d = Samples::from_flat(2, vec![0.0; 2000]).unwrap();
    let tiny = normal(5, 0.0, 1.0, 1, 1);
    for t in testers() {
        let d = divergence_for(&*t);
        let mut r = Seed(0).rng(Stream::Tester { bound: 0 });
        let mut err = |a: &Samples, b: &Samples, beta: f64| {
            t.lower_bound(a, b, d, beta, &mut r)
                .expect_err("bad input must be an error")
                .to_string()
        };
        let e = err(&nan, &good, 0.05);
        assert!(
            e.contains("NaN") && e.contains("release 17"),
            "{}: {e}",
            t.name()
        );
        let e = err(&good, &inf, 0.05);
        assert!(
            e.contains("inf") && e.contains("second side"),
            "{}: {e}",
            t.name()
        );
        let e = err(&good, &two_d, 0.05);
        assert!(
            e.contains("different output dimensions"),
            "{}: {e}",
            t.name()
        );
        let e = err(&tiny, &good, 0.05);
        assert!(
            e.contains("5 samples") && e.contains("at least"),
            "{}: {e}",
            t.name()
        );
        for beta in [0.0, 1.0, -0.1, 1.5, f64::NAN] {
            let e = err(&good, &good, beta);
            assert!(
                e.contains("failure probability"),
                "{}: β = {beta}: {e}",
                t.name()
            );
        }
    }
}

#[test]
fn wrong_divergences_are_errors() {
    let p = normal(1000, 0.0, 1.0, 1, 0);
    let mut r = Seed(0).rng(Stream::Tester { bound: 0 });
    let renyi = RenyiTester::default();
    let e = renyi
        .lower_bound(
            &p,
            &p,
            Divergence::HockeyStick { epsilon: 1.0 },
            0.05,
            &mut r,
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("bounds Rényi divergences"), "{e}");
    for alpha in [1.0, 0.5, f64::INFINITY, f64::NAN] {
        let e = renyi
            .lower_bound(&p, &p, Divergence::Renyi { alpha }, 0.05, &mut r)
            .unwrap_err()
            .to_string();
        assert!(e.contains("Rényi order"), "{e}");
    }
    for t in [
        Box::new(MmdTester::default()) as Box<dyn PropertyTester>,
        Box::new(HistogramTester::default()),
    ] {
        let e = t
            .lower_bound(&p, &p, Divergence::Renyi { alpha: 2.0 }, 0.05, &mut r)
            .unwrap_err()
            .to_string();
        assert!(e.contains("bounds hockey-stick divergences"), "{e}");
        let e = t
            .lower_bound(
                &p,
                &p,
                Divergence::HockeyStick { epsilon: -1.0 },
                0.05,
                &mut r,
            )
            .unwrap_err()
            .to_string();
        assert!(e.contains("ε = -1"), "{e}");
    }
}

#[test]
fn untestable_claims_are_errors() {
    let renyi = RenyiTester::default();
    let e = renyi
        .plan(&PrivacyClaim::approximate(1.0, 1e-5).unwrap(), 10_000)
        .unwrap_err();
    assert!(matches!(e, Error::ClaimNotTestable { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("renyi") && text.contains("approx:1:") && text.contains("δ > 0"),
        "{text}"
    );
    // A Gaussian-DP claim so strong that it allows δ ≥ 1/(10n) nowhere: nothing to test.
    let tiny = PrivacyClaim::gaussian_dp(1e-12).unwrap();
    for t in [
        Box::new(MmdTester::default()) as Box<dyn PropertyTester>,
        Box::new(HistogramTester::default()),
    ] {
        let e = t.plan(&tiny, 10).unwrap_err();
        assert!(
            matches!(e, Error::ClaimNotTestable { .. }),
            "{}: {e}",
            t.name()
        );
        assert!(e.to_string().contains(t.name()), "{e}");
    }
}

#[test]
fn plans_follow_the_claims() {
    let renyi = RenyiTester::default();
    assert_eq!(
        renyi
            .plan(&PrivacyClaim::renyi(5.0, 1.0).unwrap(), 1000)
            .unwrap(),
        vec![Divergence::Renyi { alpha: 5.0 }]
    );
    for claim in [
        PrivacyClaim::zcdp(0.1).unwrap(),
        PrivacyClaim::gaussian_dp(0.5).unwrap(),
        PrivacyClaim::pure(1.0).unwrap(),
    ] {
        let plan = renyi.plan(&claim, 1000).unwrap();
        assert!(plan.len() >= 3, "{claim}: {plan:?}");
        assert!(plan.iter().all(|d| allowed(&claim, d).is_some()), "{claim}");
    }
    let approx = PrivacyClaim::approximate(1.0, 1e-5).unwrap();
    for t in [
        Box::new(MmdTester::default()) as Box<dyn PropertyTester>,
        Box::new(HistogramTester::default()),
    ] {
        assert_eq!(
            t.plan(&approx, 1000).unwrap(),
            vec![Divergence::HockeyStick { epsilon: 1.0 }]
        );
        assert_eq!(
            t.plan(&PrivacyClaim::gaussian_dp(0.5).unwrap(), 1000)
                .unwrap()
                .len(),
            20
        );
    }
}

#[test]
fn every_name_builds_its_tester() {
    for name in TESTER_NAMES {
        assert_eq!(by_name(name).unwrap().name(), *name);
    }
    assert!(TESTER_NAMES.contains(&"renyi"));
    assert!(TESTER_NAMES.contains(&"mmd"));
    assert!(TESTER_NAMES.contains(&"histogram"));
    let e = by_name("kde").unwrap_err().to_string();
    assert!(e.contains("histogram") && e.contains("renyi"), "{e}");
}

/// Outputs of dimension > 1, discrete and mixed: valid bounds (below the truth) that see the
/// difference.
#[test]
fn multidimensional_and_discrete_outputs() {
    let n = 20_000;
    // 3-D Gaussian, shift 1 in coordinate 1 only: D_2 = 1, H_e^0 = TV = 0.3829.
    let mk = |mean: f64, side: u64| {
        let mut r = rng(5, side);
        let d = Normal::new(0.0, 1.0).unwrap();
        let flat: Vec<f64> = (0..n)
            .flat_map(|_| [d.sample(&mut r), d.sample(&mut r) + mean, d.sample(&mut r)])
            .collect();
        Samples::from_flat(3, flat).unwrap()
    };
    let (p, q) = (mk(1.0, 0), mk(0.0, 1));
    let tv = gaussian_dp_delta(0.0, 1.0);
    let mut r = Seed(0).rng(Stream::Tester { bound: 0 });
    for t in testers() {
        let (d, truth) = if t.name() == "renyi" {
            (Divergence::Renyi { alpha: 2.0 }, 1.0)
        } else {
            (Divergence::HockeyStick { epsilon: 0.0 }, tv)
        };
        let m = t.lower_bound(&p, &q, d, 0.05, &mut r).unwrap();
        assert!(
            m.value <= truth && m.value > 0.6 * truth,
            "{}: {m:?}",
            t.name()
        );
    }
    // 2-D discrete: two independent RR bits (ε0 = 1 each) vs their flips in the first bit.
    let e = 1f64.exp() / (1.0 + 1f64.exp());
    let bits = |p1: f64, side: u64| {
        let mut r = rng(6, side);
        let flat: Vec<f64> = (0..n)
            .flat_map(|_| {
                [
                    f64::from(r.random::<f64>() < p1),
                    f64::from(r.random::<f64>() < 0.5),
                ]
            })
            .collect();
        Samples::from_flat(2, flat).unwrap()
    };
    let (p, q) = (bits(e, 0), bits(1.0 - e, 1));
    let pair = Pair::Rr { p1: e, p0: 1.0 - e };
    for t in testers() {
        let (d, truth) = if t.name() == "renyi" {
            (Divergence::Renyi { alpha: 2.0 }, pair.renyi(2.0))
        } else {
            (
                Divergence::HockeyStick { epsilon: 0.0 },
                pair.hockey_stick(0.0),
            )
        };
        let m = t.lower_bound(&p, &q, d, 0.05, &mut r).unwrap();
        assert!(
            m.value <= truth && m.value > 0.6 * truth,
            "{}: truth {truth}: {m:?}",
            t.name()
        );
    }
}

/// Degenerate inputs: constant outputs (equal or different on the two sides) and the smallest
/// accepted sample sizes give valid bounds, not panics.
#[test]
fn degenerate_inputs_give_valid_bounds() {
    let constant = |v: f64, n: usize| Samples::from_column(vec![v; n]);
    let mut r = Seed(0).rng(Stream::Tester { bound: 0 });
    for t in testers() {
        let d = divergence_for(&*t);
        // Identical constants: every divergence is 0.
        let m = t
            .lower_bound(&constant(3.0, 1000), &constant(3.0, 1000), d, 0.05, &mut r)
            .unwrap();
        assert_eq!(m.value, 0.0, "{}: {m:?}", t.name());
        // Different constants: H_e^1 = 1 and D_α = ∞.
        let m = t
            .lower_bound(&constant(1.0, 1000), &constant(0.0, 1000), d, 0.05, &mut r)
            .unwrap();
        assert!(m.point_estimate.is_finite(), "{}: {m:?}", t.name());
        if t.name() == "renyi" {
            assert!(m.value > 1.0, "{m:?}");
        } else {
            assert!(m.value > 0.9 && m.value <= 1.0, "{}: {m:?}", t.name());
        }
        // Smallest accepted sizes (40 per side covers every tester).
        let p = normal(40, 1.0, 1.0, 3, 0);
        let q = normal(40, 0.0, 1.0, 3, 1);
        let m = t.lower_bound(&p, &q, d, 0.05, &mut r).unwrap();
        assert!(m.value >= 0.0 && m.value.is_finite(), "{}: {m:?}", t.name());
    }
}
