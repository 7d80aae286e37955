//! Finders find bugs without the catalogue witness; the search/confirm runner never reports a
//! violation it did not confirm on fresh samples.
//!
//! False-failure rate: each correct-entry check runs at β = 1e-6 (the confirm phase's union
//! bound), 6 checks, so they fail spuriously with probability < 1e-5. The buggy-entry checks are
//! power checks at fixed seeds on gross bugs.

mod util;

use dp_audit::audit::{AuditConfig, Verdict};
use dp_audit::finders::{PairSpace, SearchConfig, finder_by_name, finder_rng, search_and_confirm};
use dp_audit::mechanisms::catalogue;
use dp_audit::testers::{HockeyStickTester, PropertyTester};

fn run(id: &str, finder: &str, seed: u64, beta: f64) -> dp_audit::finders::SearchReport {
    run_with(id, finder, seed, beta, 20)
}

fn run_with(
    id: &str,
    finder: &str,
    seed: u64,
    beta: f64,
    trials: usize,
) -> dp_audit::finders::SearchReport {
    run_sized(id, finder, seed, beta, trials, 4_000, 2, 50_000)
}

/// `run_with` with the search and confirm sizes spelled out.
#[allow(clippy::too_many_arguments)]
fn run_sized(
    id: &str,
    finder: &str,
    seed: u64,
    beta: f64,
    trials: usize,
    search_samples: usize,
    confirm_top: usize,
    confirm_samples: usize,
) -> dp_audit::finders::SearchReport {
    let e = catalogue::build(id, &Default::default()).unwrap();
    // As `audit run --mechanism` does: through the entry's recommended output transform, if any.
    let (boxed, _) =
        dp_audit::testers::transforms::with_recommended_transform(e.mechanism).unwrap();
    let m = &*boxed;
    let size = e.witness.first().len().clamp(1, 4);
    let space = PairSpace::new(m.domain(), size, m.neighboring()).unwrap();
    let mut f = finder_by_name(
        finder,
        space,
        vec![e.witness.clone()],
        trials,
        finder_rng(seed),
    )
    .unwrap();
    let testers: Vec<Box<dyn PropertyTester>> = vec![Box::new(HockeyStickTester::default())];
    let search = SearchConfig {
        trials,
        search_samples,
        confirm_top,
        ..Default::default()
    };
    let audit = AuditConfig {
        seed,
        samples_per_side: confirm_samples,
        failure_probability: beta,
    };
    search_and_confirm(m, &m.claim(), &mut *f, &testers, &search, &audit).unwrap()
}

#[test]
fn finders_find_bugs_without_the_witness() {
    let mut misses = Vec::new();
    for id in [
        "laplace-sum-ignores-range",
        "mean-fixed-n",
        "histogram-scale-epsilon",
    ] {
        for finder in [
            "random",
            "corners",
            "halton",
            "bayes",
            "nelder-mead",
            "pso",
            "annealing",
            "grid",
        ] {
            let r = run(id, finder, 1, 1e-3);
            let used = r.trials.len();
            eprintln!(
                "{id:28} {finder:12} verdict={:?} trials={used} confirmations={}",
                r.verdict,
                r.confirmations.len()
            );
            if r.verdict != Verdict::Violation {
                misses.push(format!("{id}/{finder}"));
            }
        }
    }
    assert!(misses.is_empty(), "missed: {misses:?}");
}

#[test]
fn correct_entries_are_not_flagged_by_search() {
    for id in ["laplace-sum", "noisy-histogram", "randomized-response"] {
        for finder in ["random", "corners", "bayes"] {
            let r = run(id, finder, 2, 1e-6);
            assert_eq!(r.verdict, Verdict::NoViolation, "{id}/{finder}");
            // Exploration is labelled and β is split over the confirm slots.
            assert!(r.beta_rule.contains("exploratory"), "{}", r.beta_rule);
            for c in &r.confirmations {
                assert!((c.beta.total - 1e-6 / 2.0).abs() < 1e-18);
            }
        }
    }
}

/// Entries claiming zero-out neighbors are searched over zero-out pairs only (D′ is D with one
/// record replaced by the null record; `DatasetPair::new` refuses anything else), and the
/// portfolio still finds the user-level bug. A power check at a fixed seed on a gross bug
/// (true 2ε against ε).
#[test]
fn zero_out_entries_are_searched_over_zero_out_pairs() {
    use dp_audit::mechanisms::Neighboring;
    for finder in ["portfolio", "random", "bayes"] {
        let r = run("user-level-sum-example-noise", finder, 3, 1e-3);
        for t in &r.trials {
            assert_eq!(t.pair.relation(), Neighboring::ZeroOut, "{finder}");
            let null = Neighboring::null_record(t.pair.first().dim());
            let nulls = |d: &dp_audit::mechanisms::Dataset| {
                d.to_rows().iter().filter(|r| **r == null).count()
            };
            assert_eq!(
                nulls(t.pair.second()),
                nulls(t.pair.first()) + 1,
                "{finder}"
            );
        }
        assert_eq!(r.verdict, Verdict::Violation, "{finder}");
    }
}

#[test]
fn search_is_repeatable() {
    let a = run("mean-fixed-n", "bayes", 7, 1e-3);
    let b = run("mean-fixed-n", "bayes", 7, 1e-3);
    assert_eq!(
        serde_json::to_string(&a.trials).unwrap(),
        serde_json::to_string(&b.trials).unwrap()
    );
    assert_eq!(a.verdict, b.verdict);
}

/// The finder benchmark of the finders issue: for each buggy catalogue entry, audited without
/// its witness, the median number of exploratory evaluations until a confirmed violation, per
/// finder, over 10 seeds (a run that finds nothing in 50 trials counts as 51). Sizes are the CLI's
/// defaults (`audit run --finder F --trials 50`): 5 000 exploratory releases per side per trial,
/// the best 3 pairs confirmed on 200 000 fresh releases per side, β = 1e-3.
///
/// `cargo test --release --test finders -- --ignored --nocapture finder_benchmark`; set
/// `AUDIT_FINDERS=random,corners,bayes` to run some finders only, and `AUDIT_IDS=ID,ID` some
/// entries only.
#[test]
#[ignore = "benchmark: about 10 min on 2 cores; run with --ignored --nocapture"]
fn finder_benchmark() {
    let all = [
        "random",
        "corners",
        "halton",
        "grid",
        "nelder-mead",
        "pso",
        "annealing",
        "bayes",
    ];
    // AUDIT_FINDERS=random,bayes restricts the run to some finders.
    let chosen = std::env::var("AUDIT_FINDERS").unwrap_or_default();
    let finders: Vec<&str> = all
        .into_iter()
        .filter(|f| chosen.is_empty() || chosen.split(',').any(|c| c.trim() == *f))
        .collect();
    let ids: Vec<&str> = catalogue::catalogue()
        .unwrap()
        .into_iter()
        .filter(|e| e.status.is_buggy())
        // AUDIT_IDS=a,b restricts the run to some entries.
        .filter(|e| {
            let ids = std::env::var("AUDIT_IDS").unwrap_or_default();
            ids.is_empty() || ids.split(',').any(|i| i.trim() == e.mechanism.id())
        })
        .map(|e| {
            catalogue::ids()
                .into_iter()
                .find(|i| *i == e.mechanism.id())
                .unwrap()
        })
        .collect();
    print!("{:28}", "entry");
    for f in &finders {
        print!(" {f:>11}");
    }
    println!();
    for id in ids {
        print!("{id:28}");
        for &f in &finders {
            let mut evals: Vec<usize> = (0..10u64)
                .map(|seed| {
                    let search = SearchConfig::default();
                    let r = run_sized(
                        id,
                        f,
                        100 + seed,
                        1e-3,
                        50,
                        search.search_samples,
                        search.confirm_top,
                        AuditConfig::default().samples_per_side,
                    );
                    if r.verdict == Verdict::Violation {
                        r.trials.len()
                    } else {
                        51
                    }
                })
                .collect();
            evals.sort();
            print!(" {:>11}", (evals[4] + evals[5]) as f64 / 2.0);
        }
        println!();
    }
}

/// Soundness of the default finder for unknown programs: the portfolio on correct catalogue
/// entries (one meets its claim with equality on constant datasets) reports a violation in at
/// most a β share of seeds. β = 0.05 per run, 100 seeds per entry; fails above 19 (the
/// Binomial(100, 0.05) 1 − 1e-6 quantile), so the false-failure rate is ≤ 2e-6 per entry.
/// Measured at session 20 with 100 seeds each on six correct entries: 0–5 per 100 (20/600).
#[test]
fn portfolio_on_correct_entries_keeps_its_level() {
    for entry in ["laplace-sum", "randomized-response"] {
        let mut violations = 0;
        for seed in 0..100u64 {
            let seed = seed.to_string();
            let o = util::audit(&[
                "run",
                "--mechanism",
                entry,
                "--finder",
                "portfolio",
                "--trials",
                "12",
                "--search-samples",
                "2000",
                "--samples",
                "20000",
                "--failure-probability",
                "0.05",
                "--seed",
                &seed,
                "--no-report",
                "--quiet",
            ]);
            let code = o.status.code();
            assert!(
                matches!(code, Some(0 | 1)),
                "{entry} seed {seed}: {}",
                util::stderr(&o)
            );
            violations += usize::from(code == Some(1));
        }
        eprintln!("portfolio on {entry}: {violations}/100 violations at β = 0.05");
        assert!(violations <= 19, "{entry}: {violations}/100 at β = 0.05");
    }
}

/// Order-dependent processing: the default finder (`portfolio`) finds the microbatch bug
/// without the witness, from its alternating-blocks proposal with the first record removed
/// (every later record changes microbatch; a Gaussian shift of 3–4 C against a claim for C).
/// A power check at the CLI's fixed seed on a gross bug; the verdict comes from the confirm
/// phase on fresh samples as always.
#[test]
fn portfolio_finds_the_position_shift_of_microbatches() {
    let o = util::audit(&[
        "run",
        "--mechanism",
        "dpsgd-microbatches-add-remove",
        "--finder",
        "portfolio",
        "--no-report",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", util::stdout(&o));
}

/// Shuffled fixed-size batches accounted as Poisson (`dpsgd/shuffled.rs`): the default finder
/// refutes the Poisson profile without the witness (20/20 at seeds 100–119 when measured; here
/// the CLI's fixed seed). A power check on a gross gap (δ 0.46 against 0.37 on the witness);
/// the verdict comes from the confirm phase on fresh samples.
#[test]
fn portfolio_finds_shuffled_batches_accounted_as_poisson() {
    let o = util::audit(&[
        "run",
        "--mechanism",
        "dpsgd-shuffled-accounted-as-poisson",
        "--finder",
        "portfolio",
        "--no-report",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", util::stdout(&o));
}
