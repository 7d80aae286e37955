//! Tuning and adaptive steps (`mechanisms/src/catalogue/tuning.rs`, `rsc_steps.rs`): each twin
//! is caught by `audit run --mechanism ID` as listed and by the default finder without the
//! witness; each correct entry is not flagged.
//!
//! Error rates. The correct entries keep their claims (proved in their module docs:
//! Papernot & Steinke 2022 Theorem 2 for `best-of-k-tuning`, parallel composition over slices
//! fixed by earlier outputs for `rsc-steps`), so each run reports a violation with probability
//! at most its β = 0.001 (the hockey-stick tester's guarantee; a portfolio search splits the same
//! β over its confirming audits): the false-failure rate of each correct entry's run, six runs
//! in this file (`correct_*` and `claims_follow_the_parameters`), 6e-3 for the file. The twins' checks are power checks at the CLI's fixed seeds. At the default 2·10^5
//! releases per side (1.6·10^5 held out): `best-of-k-tuning-one-run-epsilon` has an exact
//! H_{e^1} = 0.145 on its witness, the bound came out at 0.127 (seed 0);
//! `rsc-steps-exact-rank-slices` has H_{e^1} = 0.537, the bound came out at 0.470. Measured at
//! seeds 100–119 with the witness (`--samples N`): the tuning twin is caught 20/20 at N = 2,000
//! (1/100 of the default), 11/20 at 1,000; the RSC twin 20/20 at N = 1,000, 11/20 at 500; the
//! correct entries were flagged 0/20 at the default N. With `--finder portfolio` both were
//! caught at seeds 100–109 in 10/10 runs. A miss at the default is not expected at any seed.

mod util;

fn exit_code(args: &[&str]) -> (Option<i32>, String) {
    let o = util::audit(args);
    (
        o.status.code(),
        format!("{}{}", util::stdout(&o), util::stderr(&o)),
    )
}

#[test]
fn twins_are_caught_as_listed() {
    for id in [
        "best-of-k-tuning-one-run-epsilon",
        "rsc-steps-exact-rank-slices",
    ] {
        let (code, out) = exit_code(&["run", "--mechanism", id, "--no-report"]);
        assert_eq!(code, Some(1), "{id}: {out}");
        assert!(out.contains("VIOLATION"), "{id}: {out}");
    }
}

#[test]
fn correct_entries_pass() {
    for id in ["best-of-k-tuning", "rsc-steps"] {
        let (code, out) = exit_code(&["run", "--mechanism", id, "--no-report"]);
        assert_eq!(code, Some(0), "{id}: {out}");
    }
}

#[test]
fn twins_are_caught_by_the_default_finder_without_the_witness() {
    for id in [
        "best-of-k-tuning-one-run-epsilon",
        "rsc-steps-exact-rank-slices",
    ] {
        let (code, out) = exit_code(&[
            "run",
            "--mechanism",
            id,
            "--finder",
            "portfolio",
            "--no-report",
        ]);
        assert_eq!(code, Some(1), "{id}: {out}");
    }
}

#[test]
fn correct_entries_pass_the_default_finder() {
    for id in ["best-of-k-tuning", "rsc-steps"] {
        let (code, out) = exit_code(&[
            "run",
            "--mechanism",
            id,
            "--finder",
            "portfolio",
            "--no-report",
        ]);
        assert_eq!(code, Some(0), "{id}: {out}");
    }
}

/// The claims follow the parameters: (2 + η)ε for the tuning, one step's ε for any k.
#[test]
fn claims_follow_the_parameters() {
    let (code, out) = exit_code(&[
        "run",
        "--mechanism",
        "best-of-k-tuning",
        "--param",
        "eta=0",
        "--param",
        "epsilon=0.5",
        "--samples",
        "20000",
        "--no-report",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("pure:1 "), "{out}");
    let (code, out) = exit_code(&[
        "run",
        "--mechanism",
        "rsc-steps",
        "--param",
        "steps=7",
        "--samples",
        "20000",
        "--no-report",
    ]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("for all 7 steps"), "{out}");
    // Bad input: exit 2 with the value and what is allowed.
    let (code, out) = exit_code(&[
        "run",
        "--mechanism",
        "best-of-k-tuning",
        "--param",
        "gamma=1",
        "--no-report",
    ]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("gamma") && out.contains("allowed"), "{out}");
}
