//! Components that couple the examples of a batch (`mechanisms/src/catalogue/dpsgd/batch_coupling/`):
//! each twin (batch normalization with the batch's own statistics, a contrastive loss, gradient
//! accumulation noised at every micro-step, each accounted per example) is caught by
//! `audit run --mechanism ID` on its witness and by the default finder (`--finder portfolio`)
//! without it; each correct entry passes both.
//!
//! Error rates. A correct entry keeps its claim (the contrastive and accumulation ones with
//! equality on their witness), so a run reports a violation with probability at most its
//! β = 1e-3 (the runner's guarantee; the portfolio's search never touches the confirm phase's
//! samples): `correct_entries_pass` fails spuriously with probability ≤ 6e-3 over seeds (six
//! runs), and the CLI's seed is fixed, so the test is deterministic; if it fails, investigate
//! the entry, never the seed. The twin checks are power checks at the CLI's fixed seed on gross
//! gaps: on the witnesses the true μ is 3.65, 2 and 2 against a claimed μ = 1, which the
//! hockey-stick tester's bound exceeds by 0.67, 0.33 and 0.33 in δ at 2·10^5 releases per side
//! (measured); its Clopper–Pearson margins at β = 1e-3 are about 0.01, so a miss given the
//! event chosen needs a deviation of over 30 standard deviations. Measured without the witness
//! (`--finder portfolio`, seeds 100–119): see `docs/seeds/batch-coupling.md`.

mod util;

use statrs::distribution::{Binomial, DiscreteCDF};

const TWINS: [&str; 3] = [
    "dpsgd-batch-norm-unaccounted",
    "dpsgd-contrastive-per-example-sensitivity",
    "dpsgd-accumulation-noised-every-micro-step",
];

const CORRECT: [&str; 3] = [
    "dpsgd-batch-norm-private-stats",
    "dpsgd-contrastive",
    "dpsgd-accumulation",
];

fn run(id: &str, extra: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["run", "--mechanism", id, "--no-report"];
    args.extend_from_slice(extra);
    let o = util::audit(&args);
    (
        o.status.code(),
        format!("{}{}", util::stdout(&o), util::stderr(&o)),
    )
}

#[test]
fn twins_are_caught_as_listed() {
    for id in TWINS {
        let (code, out) = run(id, &[]);
        assert_eq!(code, Some(1), "{id}: {out}");
        assert!(out.contains("VIOLATION"), "{id}: {out}");
    }
}

/// The batch-norm twin releasing its exact running statistics too (`release_statistics=1`): a
/// deterministic difference in the released mean, δ(ε) = 1 at every ε.
#[test]
fn released_batch_statistics_are_caught() {
    let (code, out) = run(TWINS[0], &["--param", "release_statistics=1"]);
    assert_eq!(code, Some(1), "{out}");
}

#[test]
fn twins_are_caught_by_the_default_finder_without_the_witness() {
    for id in TWINS {
        let (code, out) = run(id, &["--finder", "portfolio", "--quiet"]);
        assert_eq!(code, Some(1), "{id}: {out}");
    }
}

#[test]
fn correct_entries_pass() {
    for id in CORRECT {
        let (code, out) = run(id, &[]);
        assert_eq!(code, Some(0), "{id}: {out}");
        let (code, out) = run(id, &["--finder", "portfolio", "--quiet"]);
        assert_eq!(code, Some(0), "{id} (portfolio): {out}");
    }
}

/// The describe page names how each true guarantee was derived.
#[test]
fn twins_state_their_true_guarantee() {
    for (id, words) in [
        (TWINS[0], "2(√(n−1) + 1)"),
        (TWINS[1], "sensitivity 4C"),
        (TWINS[2], "2√k/z"),
    ] {
        let o = util::audit(&["describe", id]);
        let out = util::stdout(&o);
        assert_eq!(o.status.code(), Some(0), "{id}: {}", util::stderr(&o));
        assert!(
            out.contains(words) && out.contains("true guarantee"),
            "{id}: {out}"
        );
    }
}

/// Soundness of the default finder with its batch-partner proposals on the correct entries:
/// over `AUDIT_SEED_SWEEP` seeds (default 200) at β = 0.05 with small sizes (12 trials, 2 000
/// exploratory and 20 000 confirming releases per side), the count of runs reporting a
/// violation must stay within the Binomial(seeds, 0.05) 1 − 1e-6 quantile (false-failure rate
/// ≤ 1e-6 per entry for a runner whose level is β). Two of the entries meet their claim with
/// equality on their witness, the hardest case for the level. Measured 0/200 for each, 91 s
/// for the 3 × 200 runs on 2 cores, hence ignored:
/// `AUDIT_SEED_SWEEP=200 cargo test --release --test batch_coupling -- --ignored --nocapture`.
#[test]
#[ignore = "seed sweep: about 90 s (600 audit runs); run with --ignored"]
fn portfolio_on_correct_batch_coupling_entries_keeps_its_level() {
    let seeds: u64 = std::env::var("AUDIT_SEED_SWEEP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let beta = 0.05;
    let crit = Binomial::new(beta, seeds).unwrap().inverse_cdf(1.0 - 1e-6);
    for id in CORRECT {
        let mut violations = 0;
        for seed in 0..seeds {
            let seed = seed.to_string();
            let (code, out) = run(
                id,
                &[
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
                    "--quiet",
                ],
            );
            assert!(matches!(code, Some(0 | 1)), "{id} seed {seed}: {out}");
            violations += u64::from(code == Some(1));
        }
        eprintln!("portfolio on {id}: {violations}/{seeds} violations at β = {beta}");
        assert!(
            violations <= crit,
            "{id}: {violations}/{seeds} (fail above {crit})"
        );
    }
}

/// The batch-partner proposals are the ones that find the batch-norm coupling at its largest.
/// The twin's release is f(D) + N(0, z²) with f the clipped gradient sum, so the difference of
/// the release means on D and D′ estimates the pair's shift |f(D) − f(D′)|. Over the portfolio's
/// fixed proposals at the entry's size (n = 8), the largest shift must come from a pair whose
/// common records are not constant at an end of the box (proposal 8: partners at (0, −1), the
/// record (−1, 1) against (1, 1), shift 7.29), and exceed 7; the constant-partner pairs reach
/// 3.65. Each estimate has standard deviation 2·√(2/20 000) = 0.02, so 7 is 14 standard
/// deviations below 7.29 (false-failure rate < 1e-40), and the best pair's identity could flip
/// only if another pair's shift were within 0.1 of 7.29 (the test prints them all). Seeds fixed.
#[test]
fn batch_partner_proposals_find_the_largest_batch_norm_shift() {
    use dp_audit::finders::{DatasetFinder, PortfolioFinder, finder_rng};
    use dp_audit::mechanisms::catalogue;
    use dp_audit::rng::{Seed, Stream};

    let e = catalogue::build(TWINS[0], &Default::default()).unwrap();
    let m = &*e.mechanism;
    let mut f = PortfolioFinder::new(m.domain(), 8, m.neighboring(), finder_rng(1)).unwrap();
    let mut rng = Seed(5).rng(Stream::Other { tag: 29, index: 2 });
    let k = 20_000;
    let mut mean = |d: &dp_audit::mechanisms::Dataset| {
        m.sample(d, k, &mut rng)
            .unwrap()
            .column(0)
            .iter()
            .sum::<f64>()
            / k as f64
    };
    let mut best: Option<(f64, Vec<Vec<f64>>)> = None;
    for i in 0..f.fixed_len() {
        let p = f.ask().unwrap().unwrap();
        let shift = (mean(p.first()) - mean(p.second())).abs();
        let rows = p.first().to_rows();
        eprintln!(
            "proposal {i}: shift {shift:.3} on {rows:?} vs {:?}",
            p.second().to_rows()[0]
        );
        if best.as_ref().is_none_or(|b| shift > b.0) {
            best = Some((shift, rows));
        }
    }
    let (shift, rows) = best.unwrap();
    assert!(shift > 7.0, "best shift {shift} on {rows:?}");
    assert!(
        rows[1..].iter().all(|r| r == &vec![0.0, -1.0]),
        "the best pair's partners: {rows:?}"
    );
}
