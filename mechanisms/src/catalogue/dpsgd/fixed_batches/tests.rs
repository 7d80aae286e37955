//! Tests of `dpsgd/fixed_batches/`: the release distribution, the claims, the twin's status,
//! and the ledger's sampling policy.
//!
//! The distribution checks are two-sided z-tests with |z| < 5.3 on 2·10^5 releases (CLT;
//! false-failure rate ≈ 1.2e-7 per check); there are fewer than 80 of them, so a correct
//! implementation fails this file with probability below 1e-5 (union bound). Seeds are fixed: a
//! failure is a bug to investigate, not a seed to change.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::*;
use crate::accountant::{RdpAccountant, parse_ledger, parse_ledger_with_policies};
use crate::pld::{DEFAULT_DISCRETIZATION, Estimate, poisson_gaussian_pld};

const N: usize = 200_000;
const Z: f64 = 5.3;

/// μ of the no-amplification claim the correct entry made before the fixed-size accountant: T
/// Gaussian queries of sensitivity 2C against noise zC (still a valid, looser bound).
fn no_amplification_mu(run: &Run) -> f64 {
    2.0 * (run.steps as f64).sqrt() / run.noise_multiplier
}

fn fixed_size(q: f64, z: f64, t: u64) -> PrivacyClaim {
    PrivacyClaim::subsampled_gaussian_with_policy(
        q,
        z,
        t,
        Neighboring::ReplaceOne,
        SamplingPolicy::FixedSize,
    )
    .unwrap()
}

const TWIN: &str = "dpsgd-fixed-batches-accounted-as-poisson";
const CORRECT: &str = "dpsgd-fixed-batches";

fn check_z(name: &str, value: f64, expected: f64, sd: f64) {
    let z = (value - expected) / sd;
    assert!(z.abs() < Z, "{name}: {value}, expected {expected}, z = {z}");
}

fn check_freq(name: &str, hits: usize, n: usize, p: f64) {
    let f = hits as f64 / n as f64;
    check_z(name, f, p, (p * (1.0 - p) / n as f64).sqrt());
}

#[test]
fn defaults_refute_the_poisson_profile() {
    let e = crate::catalogue::build(TWIN, &Params::default()).unwrap();
    assert!(e.status.is_buggy(), "{:?}", e.status);
    let claim = e.mechanism.claim();
    let (eps, lower, allowed) = largest_excess(&claim, 8, 2, 4, 1.0).unwrap();
    println!("largest excess: eps {eps} lower {lower} allowed {allowed}");
    assert!(lower - allowed > 0.1, "{eps} {lower} {allowed}");
    // The figures the docs quote.
    let at1 = event_lower_bound(0.25, 4, 1.0, 1.0);
    let allowed1 = claim.delta_at(1.0).unwrap();
    println!("eps 1: event bound {at1}, Poisson claim {allowed1}");
    assert!((at1 - 0.2407).abs() < 5e-4, "{at1}");
    assert!((allowed1 - 0.1039).abs() < 5e-4, "{allowed1}");
    let at2 = event_lower_bound(0.25, 4, 1.0, 2.0);
    let allowed2 = claim.delta_at(2.0).unwrap();
    println!("eps 2: event bound {at2}, Poisson claim {allowed2}");
    assert!((at2 - 0.128).abs() < 5e-4, "{at2}");
    assert!((allowed2 - 0.019).abs() < 5e-4, "{allowed2}");
    let ok = crate::catalogue::build(CORRECT, &Params::default()).unwrap();
    assert!(!ok.status.is_buggy());
    // One batch of all n records is full-batch DP-GD: the Poisson claim is then exact.
    let full = crate::catalogue::build(
        TWIN,
        &Params::default().set("records", 4.0).set("batch_size", 4.0),
    )
    .unwrap();
    assert!(!full.status.is_buggy());
}

#[test]
fn claims_at_the_defaults() {
    let ok = crate::catalogue::build(CORRECT, &Params::default()).unwrap();
    assert_eq!(ok.mechanism.claim(), fixed_size(0.25, 1.0, 4));
    assert_eq!(
        ok.mechanism.claim().to_string(),
        "dpsgd:0.25:1:4:replace-one:fixed-size"
    );
    let twin = crate::catalogue::build(TWIN, &Params::default()).unwrap();
    assert_eq!(
        twin.mechanism.claim(),
        PrivacyClaim::subsampled_gaussian(0.25, 1.0, 4, Neighboring::ReplaceOne).unwrap()
    );
    // Other settings: the claims follow the parameters.
    let p = Params::default()
        .set("records", 16.0)
        .set("batch_size", 4.0)
        .set("steps", 9.0)
        .set("noise_multiplier", 1.5);
    let ok = crate::catalogue::build(CORRECT, &p).unwrap();
    assert_eq!(ok.mechanism.claim(), fixed_size(0.25, 1.5, 9));
    let twin = crate::catalogue::build(TWIN, &p).unwrap();
    assert_eq!(
        twin.mechanism.claim(),
        PrivacyClaim::subsampled_gaussian(0.25, 1.5, 9, Neighboring::ReplaceOne).unwrap()
    );
}

/// The witness's exact profile is the Poisson add/remove PLD at noise multiplier z/2 (both
/// directions). The event bound must lie below its pessimistic PLD (an upper bound on the
/// truth), the correct (fixed-size) claim above its optimistic PLD (a lower bound on the truth)
/// and below the no-amplification claim it replaced, and the optimistic PLD above the Poisson
/// claim (the exact profile refutes it too).
#[test]
fn bounds_are_ordered_around_the_witness_profile() {
    for (n, b, t, z) in [(8, 2, 4, 1.0), (4, 2, 2, 1.0), (16, 4, 4, 1.5)] {
        let q = b as f64 / n as f64;
        let half = z / 2.0;
        let upper = poisson_gaussian_pld(
            q,
            half,
            t as u64,
            Neighboring::AddRemove,
            Estimate::Pessimistic,
            DEFAULT_DISCRETIZATION,
        )
        .unwrap();
        let lower = poisson_gaussian_pld(
            q,
            half,
            t as u64,
            Neighboring::AddRemove,
            Estimate::Optimistic,
            DEFAULT_DISCRETIZATION,
        )
        .unwrap();
        let run = Run {
            records: n,
            batch_size: b,
            steps: t,
            noise_multiplier: z,
        };
        let correct = fixed_size(q, z, t as u64);
        let unamplified = PrivacyClaim::gaussian_dp(no_amplification_mu(&run)).unwrap();
        let poisson =
            PrivacyClaim::subsampled_gaussian(q, z, t as u64, Neighboring::ReplaceOne).unwrap();
        let mut refuted = false;
        for i in 0..=40 {
            let eps = 0.1 * f64::from(i);
            let ev = event_lower_bound(q, t, z, eps);
            let (lo, hi) = (lower.delta(eps), upper.delta(eps));
            assert!(ev <= hi + 1e-9, "{n} {b} {t} {z} eps {eps}: {ev} > {hi}");
            let claimed = correct.delta_at(eps).unwrap();
            assert!(
                claimed >= lo,
                "{n} {b} {t} {z} eps {eps}: the correct claim is below the witness profile"
            );
            assert!(
                claimed <= unamplified.delta_at(eps).unwrap(),
                "{n} {b} {t} {z} eps {eps}: the amplified claim is above the unamplified one"
            );
            refuted |= lo > poisson.delta_at(eps).unwrap() + 0.01;
        }
        assert!(refuted, "{n} {b} {t} {z}");
        // The defaults' exact figure the docs quote.
        if (n, b, t) == (8, 2, 4) {
            let d = lower.delta(1.0);
            println!("witness profile at eps 1: {d} ≤ δ ≤ {}", upper.delta(1.0));
            assert!((d - 0.261).abs() < 2e-3, "{d}");
        }
    }
}

/// On the twin's own side the bound also holds in the harmless direction: with B = n the two
/// claims coincide (2/z per step), and the event bound stays below them.
#[test]
fn full_batch_event_bound_stays_below_the_gaussian() {
    let run = Run {
        records: 4,
        batch_size: 4,
        steps: 3,
        noise_multiplier: 0.8,
    };
    let claim = PrivacyClaim::gaussian_dp(no_amplification_mu(&run)).unwrap();
    assert!(largest_excess(&claim, 4, 4, 3, 0.8).is_none());
}

/// The release on the witness: increments θ_t − θ_{t−1} = B − 2·1[record in batch] − noise on
/// D (mean B − 2q, variance 4q(1−q) + z²) and B − noise on D′, independent across steps.
#[test]
fn release_distribution_on_the_witness() {
    let e = crate::catalogue::build(TWIN, &Params::default()).unwrap();
    let (q, z, b, t) = (0.25_f64, 1.0_f64, 2.0_f64, 4);
    for (side, data, mean, var, m4) in [
        (
            "D",
            e.witness.first(),
            b - 2.0 * q,
            4.0 * q * (1.0 - q) + z * z,
            // E[(2(I − q))⁴] + 6·E[(2(I − q))²]·z² + 3z⁴.
            16.0 * q * (1.0 - q) * (1.0 - 3.0 * q + 3.0 * q * q)
                + 6.0 * 4.0 * q * (1.0 - q) * z * z
                + 3.0 * z.powi(4),
        ),
        ("D'", e.witness.second(), b, z * z, 3.0 * z.powi(4)),
    ] {
        let mut rng = ChaCha20Rng::seed_from_u64(61);
        let s = e.mechanism.sample(data, N, &mut rng).unwrap();
        assert_eq!(s.dim(), t);
        let inc: Vec<Vec<f64>> = (0..t)
            .map(|k| {
                let cur = s.column(k);
                if k == 0 {
                    cur.to_vec()
                } else {
                    let prev = s.column(k - 1);
                    cur.iter().zip(prev.iter()).map(|(c, p)| c - p).collect()
                }
            })
            .collect();
        let n = N as f64;
        for (k, col) in inc.iter().enumerate() {
            let m = col.iter().sum::<f64>() / n;
            check_z(&format!("{side} step {k} mean"), m, mean, (var / n).sqrt());
            let v = col.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
            check_z(
                &format!("{side} step {k} variance"),
                v,
                var,
                ((m4 - var * var) / n).sqrt(),
            );
        }
        // Independence of consecutive steps: E[(Y₁ − m)(Y₂ − m)] = 0 with variance var².
        for k in 1..t {
            let c = inc[k - 1]
                .iter()
                .zip(&inc[k])
                .map(|(a, b)| (a - mean) * (b - mean))
                .sum::<f64>()
                / n;
            check_z(
                &format!("{side} steps {k}, {} covariance", k + 1),
                c,
                0.0,
                var / n.sqrt(),
            );
        }
    }
}

/// Every batch holds exactly B distinct records, each B-subset is drawn with probability
/// 1/C(n, B), and two steps' batches are independent. Records 2^{−k} make a batch's sum name its
/// members; the noise is negligible (σ = 1e-9).
#[test]
fn batches_are_uniform_fixed_size_and_independent() {
    let run = Run {
        records: 8,
        batch_size: 2,
        steps: 2,
        noise_multiplier: 1e-9,
    };
    let noise = GaussianNoise::new(1e-9).unwrap();
    let values: Vec<f64> = (0..8).map(|k| 0.5_f64.powi(k)).collect();
    let mut order: Vec<usize> = (0..8).collect();
    let mut rng = ChaCha20Rng::seed_from_u64(62);
    let mut counts = [[0usize; 256]; 2];
    let mut same_first_pair = 0;
    let mut last_in_both = 0;
    for _ in 0..N {
        let mut out = Vec::with_capacity(2);
        release(&values, &run, &noise, &mut order, &mut rng, &mut out);
        let sums = [-out[0], -(out[1] - out[0])];
        let masks: Vec<usize> = sums.iter().map(|s| (s * 128.0).round() as usize).collect();
        for (k, &m) in masks.iter().enumerate() {
            assert_eq!(
                m.count_ones(),
                2,
                "step {k}: batch {m:#010b} is not of size 2"
            );
            counts[k][m] += 1;
        }
        same_first_pair += usize::from(masks[0] == 0b1100_0000 && masks[1] == 0b1100_0000);
        // Record 7 (value 2^−7) is bit 0.
        last_in_both += usize::from(masks[0] & 1 == 1 && masks[1] & 1 == 1);
    }
    // 28 pairs per step, 56 checks.
    for (k, c) in counts.iter().enumerate() {
        for (m, &hits) in c.iter().enumerate() {
            if m.count_ones() == 2 {
                check_freq(&format!("step {k} batch {m:#010b}"), hits, N, 1.0 / 28.0);
            }
        }
    }
    check_freq("one pair at both steps", same_first_pair, N, 1.0 / 784.0);
    check_freq("record 7 at both steps", last_in_both, N, 1.0 / 16.0);
}

#[test]
fn a_dataset_of_another_size_is_refused() {
    let e = crate::catalogue::build(CORRECT, &Params::default()).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let err = e
        .mechanism
        .sample(&Dataset::scalars(vec![0.0; 5]).unwrap(), 3, &mut rng)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("5 records") && err.contains("exactly 8"),
        "{err}"
    );
}

#[test]
fn bad_parameters_are_named() {
    for (name, v) in [
        ("records", 0.0),
        ("batch_size", 1.5),
        ("steps", 300.0),
        ("noise_multiplier", 0.0),
    ] {
        let e = crate::catalogue::build(CORRECT, &Params::default().set(name, v))
            .unwrap_err()
            .to_string();
        assert!(e.contains(name), "{e}");
    }
    let e = crate::catalogue::build(CORRECT, &Params::default().set("batch_size", 9.0))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("batch_size = 9") && e.contains("records = 8"),
        "{e}"
    );
    let e = crate::catalogue::build(
        TWIN,
        &Params::default()
            .set("records", 1024.0)
            .set("batch_size", 1.0)
            .set("steps", 1.0)
            .set("noise_multiplier", 100.0),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("cannot be decided"), "{e}");
}

/// The ledger's sampling event records its policy: the correct entry's `fixed-size` ledger is
/// refused by the Poisson accountant (named), the twin's (no policy) reads as Poisson.
#[test]
fn the_ledger_records_its_policy() {
    let fixed = ledger_text(8, 2, 4, 1.0, SamplingPolicy::FixedSize);
    assert!(fixed.contains("\"policy\":\"fixed-size\""), "{fixed}");
    let err = parse_ledger(&fixed).unwrap_err().to_string();
    assert!(
        err.contains("line 1") && err.contains("\"fixed-size\"") && err.contains("allowed"),
        "{err}"
    );
    let kept = parse_ledger_with_policies(&fixed).unwrap();
    assert_eq!(kept.len(), 2);
    assert!(kept.iter().all(|&(_, _, p)| p == SamplingPolicy::FixedSize));
    assert_eq!(
        kept[0].1,
        LedgerEvent::Sampling {
            probability: 0.25,
            repetitions: 4
        }
    );

    let poisson = ledger_text(8, 2, 4, 1.0, SamplingPolicy::Poisson);
    assert!(!poisson.contains("policy"), "{poisson}");
    let events = parse_ledger(&poisson).unwrap();
    assert_eq!(events, kept.iter().map(|&(_, e, _)| e).collect::<Vec<_>>());
    // An old ledger line (no policy) and an explicit Poisson line read the same.
    let old = "{\"event\": \"sampling\", \"probability\": 0.25, \"repetitions\": 4}\n\
               {\"event\": \"gaussian-sum\", \"noise_multiplier\": 1.0}";
    assert_eq!(parse_ledger(old).unwrap(), events);
    let explicit = old.replace(
        "\"repetitions\": 4",
        "\"repetitions\": 4, \"policy\": \"poisson\"",
    );
    assert_eq!(parse_ledger(&explicit).unwrap(), events);

    let shuffled = old.replace(
        "\"repetitions\": 4",
        "\"repetitions\": 4, \"policy\": \"shuffled\"",
    );
    let err = parse_ledger(&shuffled).unwrap_err().to_string();
    assert!(err.contains("\"shuffled\""), "{err}");
    let bogus = old.replace(
        "\"repetitions\": 4",
        "\"repetitions\": 4, \"policy\": \"bogus\"",
    );
    let err = parse_ledger(&bogus).unwrap_err().to_string();
    assert!(
        err.contains("line 1") && err.contains("bogus") && err.contains("fixed-size"),
        "{err}"
    );

    let mut rdp = RdpAccountant::new();
    let err = rdp
        .record_sampling_with_policy(0.25, 4, SamplingPolicy::FixedSize)
        .unwrap_err()
        .to_string();
    assert!(err.contains("\"fixed-size\""), "{err}");
    assert!(rdp.ledger().is_empty());
    rdp.record_sampling_with_policy(0.25, 4, SamplingPolicy::Poisson)
        .unwrap();
    assert_eq!(rdp.ledger().len(), 1);
}
