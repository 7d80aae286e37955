//! The `audit` binary: listing, exit codes, JSON, repeatability and bad input.

mod util;

use util::{audit, stderr, stdout};

#[test]
fn list_prints_one_line_per_entry() {
    let o = audit(&["list"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    // Entry lines start in column 0 (ID STATUS CLAIM SUMMARY); parameter lines are indented.
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.is_empty() && !l.starts_with('('))
        .collect();
    assert!(lines.len() >= 20, "{text}");
    assert!(
        lines.iter().any(|l| l.contains(" buggy "))
            && lines.iter().any(|l| l.contains(" correct "))
    );
    for l in &lines {
        let cols: Vec<&str> = l.split_whitespace().collect();
        assert!(cols.len() >= 4, "ID STATUS CLAIM SUMMARY: {l}");
        assert!(cols[1] == "correct" || cols[1] == "buggy", "{l}");
    }
    assert!(
        text.contains("params: epsilon=1 [1e-6, 100], range=1 [1e-6, 1e6]"),
        "{text}"
    );
    let o = audit(&["list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = util::payload(v);
    let arr = v.as_array().unwrap();
    assert_eq!(arr.len(), lines.len());
    for e in arr {
        assert!(e["id"].is_string() && e["status"].is_string() && e["claim"].is_string());
        assert!(e["summary"].is_string() && e["params"].is_array() && e["witness"].is_array());
    }
}

/// `audit describe ID`: the bug, the witness pair and every parameter with its range; an unknown
/// `--param` names the valid ones.
#[test]
fn describe_shows_an_entry_in_full() {
    let o = audit(&["describe", "svt3"]);
    assert_eq!(o.status.code(), Some(0));
    let text = stdout(&o);
    for want in [
        "status       buggy",
        "bug          releases the noisy value",
        "neighbors    replace-one",
        "witness      D  = [",
        "--param k=10  (allowed 2 to 64)",
    ] {
        assert!(text.contains(want), "{want:?} not in {text}");
    }
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--param", "bogus=1"],
        &[
            "bogus",
            "allowed: epsilon=1 [1e-6, 100], range=1 [1e-6, 1e6]",
        ],
    );
    assert_error(
        &[
            "run",
            "--mechanism",
            "laplace-sum",
            "--param",
            "epsilon=1",
            "--param",
            "epsilon=2",
        ],
        &["\"epsilon\" is given twice"],
    );
    assert_error(&["describe", "nope"], &["no catalogue id is close"]);
}

/// A correct mechanism: exit 0 with the honest verdict words. (Fails only if the audit reports a
/// violation against a correct mechanism: probability ≤ β = 1e-3 by the runner's guarantee.)
#[test]
fn correct_mechanism_exits_zero() {
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--samples",
        "20000",
        "--seed",
        "3",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("no violation found"), "{text}");
    assert!(
        !text.contains("private") && !text.contains("passed"),
        "{text}"
    );
}

/// A false claim (Laplace with scale 1/ε = 1 claimed as 0.5-DP; true ε = 1): exit 1.
/// On the witness the event {x ≤ t} has P(S) − e^0.5 Q(S) ≈ 0.13 at the best t, far above what
/// 2e4 samples per side can miss (the held-out standard error is ≈ 0.005).
#[test]
fn violation_exits_one_with_json() {
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--claim",
        "pure:0.5",
        "--samples",
        "20000",
        "--json",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = util::payload(v);
    assert_eq!(v["verdict"], "violation");
    assert_eq!(v["mechanism"]["id"], "laplace-sum");
    assert_eq!(v["mechanism"]["claim"]["kind"], "pure");
    assert_eq!(v["samples_per_side"], 20000);
    assert_eq!(v["seed"], 0);
    assert!(v["beta"]["total"].as_f64().unwrap() > 0.0);
    let bounds = v["bounds"].as_array().unwrap();
    // The hockey-stick tester picks its direction on its training split: one bound, full β.
    assert_eq!(bounds.len(), 1);
    assert_eq!(v["beta"]["bounds"], 1);
    for b in bounds {
        assert!(b["value"].is_number() && b["allowed"].is_number());
        assert_eq!(b["tester"], "hockey-stick");
    }
    assert!(
        v.get("wall_time_seconds").is_none(),
        "--json output must be deterministic"
    );
}

#[test]
fn same_seed_same_json() {
    let args = [
        "run",
        "--mechanism",
        "laplace-sum",
        "--samples",
        "5000",
        "--seed",
        "9",
        "--json",
        "--no-report",
    ];
    let a = audit(&args);
    let b = audit(&args);
    assert_eq!(a.stdout, b.stdout);
    let c = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--samples",
        "5000",
        "--seed",
        "10",
        "--json",
        "--no-report",
    ]);
    assert_ne!(a.stdout, c.stdout);
}

fn assert_error(args: &[&str], must_contain: &[&str]) {
    let o = audit(args);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stdout(&o));
    let err = stderr(&o);
    for m in must_contain {
        assert!(err.contains(m), "{args:?}: stderr {err:?} lacks {m:?}");
    }
    assert!(!err.contains("panicked"), "{err}");
    assert!(stdout(&o).is_empty(), "no verdict on error");
}

#[test]
fn bad_input_is_a_clear_error() {
    assert_error(
        &["run", "--mechanism", "laplace-sun"],
        &["did you mean laplace-sum?"],
    );
    // A word close to no id gets no list of unrelated ids (it suggested svt1, svt2, svt3).
    assert_error(
        &["run", "--mechanism", "nope"],
        &["\"nope\"", "no catalogue id is close", "audit list"],
    );
    assert_error(
        &[
            "run",
            "--mechanism",
            "laplace-sum",
            "--tester",
            "hockey-stick,hockey-stick",
        ],
        &["named twice", "β"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--samples", "0"],
        &["--samples 0", "allowed: 100 to 5e7"],
    );
    assert_error(
        &[
            "run",
            "--mechanism",
            "laplace-sum",
            "--samples",
            "999999999999",
        ],
        &["--samples 999999999999", "allowed: 100 to 5e7"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--claim", "pure:-1"],
        &["epsilon = -1", "[0, 700]"],
    );
    // e^ε overflows a double above ~709.78: named, not an error from deep inside a tester.
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--claim", "pure:1e300"],
        &["epsilon = 1e300", "[0, 700]", "finite double"],
    );
    assert_error(
        &[
            "run",
            "--mechanism",
            "laplace-sum",
            "--claim",
            "approx:800:1e-5",
        ],
        &["epsilon = 800", "[0, 700]"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--claim", "pure:inf"],
        &["epsilon = inf"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--claim", "approx:1:1"],
        &["delta = 1", "0 <= delta < 1"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--claim", "renyi:1:1"],
        &["alpha = 1", "> 1"],
    );
    assert_error(
        &[
            "run",
            "--mechanism",
            "laplace-sum",
            "--failure-probability",
            "1.5",
        ],
        &["--failure-probability 1.5", "β < 1"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--param", "bogus=1"],
        &["bogus"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--tester", "nope"],
        &["nope", "hockey-stick"],
    );
    // Flags that do not apply are errors, not silently ignored settings.
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--trials", "5"],
        &["--trials applies to a dataset search only", "--finder"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--exec-timeout", "5"],
        &["--exec-timeout applies to --exec programs only"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--max-samples", "1000"],
        &["--sequential"],
    );
    // Negative numbers are values, and the message names the option.
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--seed", "-1"],
        &["'-1'", "--seed"],
    );
    // clap's own usage errors also exit 2.
    let o = audit(&["run"]);
    assert_eq!(o.status.code(), Some(2));
}

/// `audit accountant` reproduces the reference values of STATISTICS.md §4 (RDP accountant, to
/// the printed 7 decimals) and refuses bad input with exit 2.
#[test]
fn accountant_command() {
    for (q, z, t, eps) in [
        ("0.01", "4.0", "1000", 0.3011612),
        ("1.0", "1.0", "1", 4.7285071),
    ] {
        let o = audit(&[
            "accountant",
            "--sampling-rate",
            q,
            "--noise-multiplier",
            z,
            "--steps",
            t,
            "--delta",
            "1e-5",
            "--json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let v = util::payload(v);
        let got = v["rdp"]["epsilon"].as_f64().unwrap();
        assert!((got - eps).abs() <= 1e-6 * eps, "q = {q}: {got} vs {eps}");
        // The PLD upper bound beside it: within 0.1 % of dp_accounting's PLD accountant
        // (../shared/STATISTICS.md §4) and never below it; the optimistic estimate below it.
        let pld_ref = if q == "1.0" { 4.3771781 } else { 0.2721729 };
        let upper = v["pld"]["epsilon_upper"].as_f64().unwrap();
        let lower = v["pld"]["epsilon_lower"].as_f64().unwrap();
        assert!(
            upper >= pld_ref && upper <= pld_ref * 1.001,
            "{upper} vs {pld_ref}"
        );
        assert!(lower <= upper && lower >= pld_ref * 0.999, "{lower}");
    }
    // The inverse: the noise multiplier reaching dp_accounting's ε at q = 0.01, T = 1000 is
    // z = 4 to within the search's precision, erring large.
    let o = audit(&[
        "accountant",
        "--sampling-rate",
        "0.01",
        "--steps",
        "1000",
        "--delta",
        "1e-5",
        "--target-epsilon",
        "0.2721729",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = util::payload(v);
    let z = v["noise_multiplier"].as_f64().unwrap();
    assert!((4.0..4.0 * 1.001).contains(&z), "{z}");
    assert!(v["pld"]["epsilon_upper"].as_f64().unwrap() <= 0.2721729);
    // A logged ledger with two noise groups on one sample (multipliers z√2 each, which compose
    // to z) and a second block re-accounts to the same ε as the plain run of 2 × 500 steps.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ledger-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ledger = dir.join("ledger.jsonl");
    let zg = 4.0 * 2f64.sqrt();
    std::fs::write(
        &ledger,
        format!(
            "# two noise groups\n{{\"event\": \"sampling\", \"probability\": 0.01, \"repetitions\": 500}}\n\
             {{\"event\": \"gaussian-sum\", \"noise_multiplier\": {zg}}}\n{{\"event\": \"gaussian-sum\", \"noise_multiplier\": {zg}}}\n\
             {{\"event\": \"sampling\", \"probability\": 0.01, \"repetitions\": 500}}\n{{\"event\": \"gaussian-sum\", \"noise_multiplier\": 4.0}}\n"
        ),
    )
    .unwrap();
    let o = audit(&[
        "accountant",
        "--ledger",
        ledger.to_str().unwrap(),
        "--delta",
        "1e-5",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = util::payload(v);
    let upper = v["pld"]["epsilon_upper"].as_f64().unwrap();
    assert!((upper / 0.2721729 - 1.0).abs() < 1e-3, "{upper}");
    // Malformed ledgers name the line and the field.
    for (text, must) in [
        (
            "{\"event\": \"sampling\", \"probability\": 0.01}\n",
            "line 1",
        ),
        (
            "{\"event\": \"sampling\", \"probability\": 0.01, \"repetitions\": 5}\n{\"event\": \"gaussian-sum\", \"noise_multiplier\": -1}\n",
            "line 2: field \"noise_multiplier\"",
        ),
        (
            "{\"event\": \"gaussian-sum\", \"noise_multiplier\": 1}\n",
            "before any sampling",
        ),
        ("# nothing\n", "no event"),
    ] {
        std::fs::write(&ledger, text).unwrap();
        let o = audit(&[
            "accountant",
            "--ledger",
            ledger.to_str().unwrap(),
            "--delta",
            "1e-5",
        ]);
        assert_eq!(o.status.code(), Some(2), "{text}");
        assert!(stderr(&o).contains(must), "{text}: {}", stderr(&o));
    }
    // A target no noise multiplier reaches.
    let o = audit(&[
        "accountant",
        "--sampling-rate",
        "0.01",
        "--steps",
        "100",
        "--delta",
        "1e-5",
        "--target-epsilon",
        "1e-9",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--target-epsilon"), "{}", stderr(&o));
    for bad in [
        ["1.5", "1", "1", "1e-5"],
        ["0.5", "0", "1", "1e-5"],
        ["0.5", "1", "0", "1e-5"],
        ["0.5", "1", "1", "1.5"],
    ] {
        let o = audit(&[
            "accountant",
            "--sampling-rate",
            bad[0],
            "--noise-multiplier",
            bad[1],
            "--steps",
            bad[2],
            "--delta",
            bad[3],
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}");
        assert!(stderr(&o).contains("allowed"), "{}", stderr(&o));
    }
}

/// `audit sweep` counts detections per value; bad ranges are errors before any work.
/// (The detections at R = 3 are a power check: margin ≈ 0.6 at 2e4 samples; the R = 1 point is
/// a correct mechanism, flagged with probability ≤ β = 0.05 per audit.)
#[test]
fn sweep_command() {
    let o = audit(&[
        "sweep",
        "--mechanism",
        "laplace-sum-ignores-range",
        "--param",
        "range=1:3:2",
        "--repeats",
        "3",
        "--samples",
        "20000",
        "--json",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = util::payload(v);
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2);
    assert_eq!(pts[0]["status"], "correct");
    assert_eq!(pts[1]["detections"], 3);
    // The printed JSON is the sweep's audit.json schema: `audit report` renders it.
    assert_eq!(v["kind"], "sweep");
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("cli-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sweep.json");
    std::fs::write(&file, &o.stdout).unwrap();
    let r = audit(&[
        "report",
        file.to_str().unwrap(),
        "--report-dir",
        dir.join("reports").to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(stdout(&r).contains("index.html"), "{}", stdout(&r));
    for bad in ["range=3:1:1", "range=1:3", "range=1:3:0"] {
        let o = audit(&[
            "sweep",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--param",
            bad,
        ]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains(bad), "{}", stderr(&o));
    }
}

/// `pure:0` is a claim (the output must not depend on any one record): a Laplace sum violates it.
#[test]
fn pure_zero_is_a_valid_claim() {
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--claim",
        "pure:0",
        "--samples",
        "20000",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
}

/// `--tester all` runs the testers that can test the claim and names the one it skipped
/// (it failed on every (ε, δ) claim because the Rényi tester cannot test one).
#[test]
fn tester_all_skips_what_cannot_test_the_claim_and_says_so() {
    let o = audit(&[
        "run",
        "--mechanism",
        "gaussian-sum-analytic",
        "--tester",
        "all",
        "--samples",
        "5000",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("testers      hockey-stick, mmd, histogram"),
        "{text}"
    );
    assert!(text.contains("skipped renyi: "), "{text}");
    // Named explicitly, the tester that cannot test the claim is an error.
    assert_error(
        &[
            "run",
            "--mechanism",
            "gaussian-sum-analytic",
            "--tester",
            "renyi",
        ],
        &["renyi cannot test claim approx:1:1e-5"],
    );
}

/// Every numeric flag of every subcommand, driven with NaN, ±∞, 0, a negative number, 1e30 and
/// 1e-300: the exit code is 0, 1 or 2 (never a panic's 101), an error names the flag, and no run
/// outlives a generous limit (the values that are valid run small audits).
#[test]
fn numeric_flags_never_panic_or_hang() {
    use std::time::{Duration, Instant};
    let values = ["nan", "inf", "-inf", "0", "-1", "1e30", "1e-300"];
    let base_run = [
        "run",
        "--mechanism",
        "laplace-sum",
        "--samples",
        "2000",
        "--no-report",
    ];
    let search_run = [
        "run",
        "--mechanism",
        "laplace-sum",
        "--finder",
        "random",
        "--trials",
        "2",
        "--search-samples",
        "500",
        "--samples",
        "1000",
        "--no-report",
    ];
    let exec_run = [
        "run",
        "--exec",
        "python3 -c 'import sys,json; r=json.load(sys.stdin); print(*([0.0]*r[\"samples\"]), sep=chr(10))'",
        "--claim",
        "pure:1",
        "--trials",
        "1",
        "--search-samples",
        "200",
        "--samples",
        "200",
        "--no-report",
    ];
    let sequential = [
        "run",
        "--mechanism",
        "laplace-sum",
        "--sequential",
        "--no-report",
    ];
    let cases: Vec<(&[&str], &str)> = vec![
        (&base_run, "--samples"),
        (&base_run, "--seed"),
        (&base_run, "--failure-probability"),
        (&base_run, "--jobs"),
        (&search_run, "--trials"),
        (&search_run, "--search-samples"),
        (&search_run, "--confirm"),
        (&search_run, "--dataset-size"),
        (&search_run, "--max-search-seconds"),
        (&exec_run, "--exec-timeout"),
        (&exec_run, "--exec-batch"),
        (&exec_run, "--record-dim"),
        (&sequential, "--max-samples"),
        (&sequential, "--first-batch"),
        (
            &[
                "sweep",
                "--mechanism",
                "laplace-sum",
                "--param",
                "epsilon=1:1:1",
                "--repeats",
                "1",
                "--samples",
                "1000",
                "--no-report",
            ],
            "--repeats",
        ),
        (
            &[
                "sweep",
                "--mechanism",
                "laplace-sum",
                "--param",
                "epsilon=1:1:1",
                "--repeats",
                "1",
                "--samples",
                "1000",
                "--no-report",
            ],
            "--failure-probability",
        ),
        (
            &[
                "accountant",
                "--sampling-rate",
                "0.01",
                "--noise-multiplier",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            "--sampling-rate",
        ),
        (
            &[
                "accountant",
                "--sampling-rate",
                "0.01",
                "--noise-multiplier",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            "--noise-multiplier",
        ),
        (
            &[
                "accountant",
                "--sampling-rate",
                "0.01",
                "--noise-multiplier",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            "--steps",
        ),
        (
            &[
                "accountant",
                "--sampling-rate",
                "0.01",
                "--noise-multiplier",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
            ],
            "--delta",
        ),
        (
            &[
                "accountant",
                "--bayesian",
                "--sampling-rate",
                "0.01",
                "--noise-multiplier",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
                "--weibull-shape",
                "1",
                "--weibull-samples",
                "50",
            ],
            "--weibull-shape",
        ),
        (
            &[
                "accountant",
                "--bayesian",
                "--sampling-rate",
                "0.01",
                "--noise-multiplier",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
                "--weibull-shape",
                "1",
                "--weibull-samples",
                "50",
            ],
            "--weibull-scale",
        ),
        (
            &[
                "accountant",
                "--bayesian",
                "--sampling-rate",
                "0.01",
                "--noise-multiplier",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
                "--weibull-shape",
                "1",
                "--weibull-samples",
                "50",
            ],
            "--weibull-samples",
        ),
        (
            &[
                "accountant",
                "--bayesian",
                "--sampling-rate",
                "0.01",
                "--noise-multiplier",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
                "--weibull-shape",
                "1",
                "--weibull-samples",
                "50",
            ],
            "--seed",
        ),
        (
            &[
                "accountant",
                "--bayesian",
                "--sampling-rate",
                "0.01",
                "--noise-multiplier",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
                "--weibull-shape",
                "1",
                "--weibull-samples",
                "50",
            ],
            "--max-distance",
        ),
        (
            &[
                "accountant",
                "--bayesian",
                "--sampling-rate",
                "0.01",
                "--noise-multiplier",
                "1",
                "--steps",
                "10",
                "--delta",
                "1e-5",
                "--weibull-shape",
                "1",
                "--weibull-samples",
                "50",
            ],
            "--group",
        ),
        (
            &[
                "run",
                "--mechanism",
                "bdp-gaussian-sum",
                "--samples",
                "2000",
                "--no-report",
            ],
            "--group",
        ),
        (
            &["one-run", "--canaries", "100", "--no-report"],
            "--canaries",
        ),
        (
            &["one-run", "--canaries", "100", "--no-report"],
            "--inclusion-probability",
        ),
        (
            &["one-run", "--canaries", "100", "--no-report"],
            "--failure-probability",
        ),
        (&["one-run", "--canaries", "100", "--no-report"], "--seed"),
        (
            &[
                "bench",
                "seeds",
                "--seeds",
                "1",
                "--samples",
                "200",
                "--tester",
                "hockey-stick",
            ],
            "--failure-probability",
        ),
        (
            &[
                "bench",
                "power",
                "--samples",
                "200",
                "--repeats",
                "1",
                "--tester",
                "hockey-stick",
                "--no-report",
            ],
            "--repeats",
        ),
    ];
    for (base, flag) in cases {
        for v in values {
            // The flag replaces its earlier value, if the base sets one.
            let mut args: Vec<&str> = Vec::new();
            let mut i = 0;
            while i < base.len() {
                if base[i] == flag {
                    i += 2;
                    continue;
                }
                args.push(base[i]);
                i += 1;
            }
            args.push(flag);
            args.push(v);
            let start = Instant::now();
            let o = audit(&args);
            let took = start.elapsed();
            let code = o.status.code();
            assert!(
                matches!(code, Some(0..=2)),
                "{args:?}: exit {code:?}\n{}",
                stderr(&o)
            );
            assert!(!stderr(&o).contains("panicked"), "{args:?}: {}", stderr(&o));
            if code == Some(2) {
                assert!(
                    stderr(&o).contains(flag) || stderr(&o).contains(&flag[2..]),
                    "{args:?}: the error does not name {flag}: {}",
                    stderr(&o)
                );
            }
            assert!(took < Duration::from_secs(120), "{args:?} took {took:?}");
        }
    }
}

/// A run whose releases would not fit in memory is refused before any sampling, with the
/// estimate and the limit (here a limit of 100 MB set through DP_AUDIT_MEMORY_LIMIT).
#[test]
fn a_run_that_would_not_fit_in_memory_is_refused() {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_audit"))
        .args([
            "run",
            "--mechanism",
            "laplace-sum",
            "--samples",
            "2000000",
            "--no-report",
        ])
        .env("DP_AUDIT_MEMORY_LIMIT", "1e8")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("--samples 2000000") && err.contains("GB are available"),
        "{err}"
    );
}

/// A report that cannot be written (here the directory's `index.html` is a directory, as a full
/// disk or a permission change would also do) never costs the verdict: it is printed first, the
/// error after it (naming the path, its OS error once); a confirmed violation still exits 1.
#[test]
fn a_report_write_failure_after_the_verdict_keeps_the_verdict() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("late-error-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("index.html").join("blocker")).unwrap();
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum-ignores-range",
        "--samples",
        "10000",
        "--report-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("verdict      violation found"), "{out}");
    let err = stderr(&o);
    assert!(err.contains("after the verdict above"), "{err}");
    assert!(err.contains("index.html"), "{err}");
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    // Nothing half-written is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".tmp-") || n.starts_with(".old-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Text flags of every subcommand with malformed values (empty, punctuation only, non-ASCII, a
/// 10 000-character word, numbers where names belong, missing or garbage files): the exit code is
/// 0, 1 or 2, never a panic, each run ends within its limits, and no temporary report folder is
/// left behind.
#[test]
fn text_flags_of_every_subcommand_never_panic() {
    use std::time::{Duration, Instant};
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("text-fuzz-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let garbage_file = dir.join("garbage.json");
    std::fs::write(
        &garbage_file,
        "{\"kind\": \"sweep\", \"points\": [1e999, \"x\"]\n\u{0}",
    )
    .unwrap();
    let lines_file = dir.join("lines.txt");
    std::fs::write(&lines_file, "1\n[2, 3]\nnan\n\"x\"\n").unwrap();
    let reports = dir.join("reports");
    let long = "x".repeat(10_000);
    let values: Vec<&str> = vec![
        "",
        ":",
        "::::",
        "-",
        "--",
        "1e999",
        "-0",
        "ünïcødé/..",
        "a=b=c",
        "x=1:2:0",
        "x=nan",
        long.as_str(),
        garbage_file.to_str().unwrap(),
        "/nonexistent/path/file",
    ];
    let reports_s = reports.to_str().unwrap();
    let base_run: Vec<&str> = vec![
        "run",
        "--mechanism",
        "laplace-sum",
        "--samples",
        "2000",
        "--report-dir",
        reports_s,
        "--quiet",
    ];
    let finder_run: Vec<&str> = vec![
        "run",
        "--mechanism",
        "laplace-sum",
        "--finder",
        "random",
        "--trials",
        "2",
        "--search-samples",
        "500",
        "--samples",
        "1000",
        "--report-dir",
        reports_s,
        "--quiet",
    ];
    let exec_run: Vec<&str> = vec![
        "run",
        "--exec",
        "python3 -c 'import sys,json; r=json.load(sys.stdin); print(*([0.0]*r[\"samples\"]), sep=chr(10))'",
        "--claim",
        "pure:1",
        "--trials",
        "1",
        "--search-samples",
        "200",
        "--samples",
        "200",
        "--report-dir",
        reports_s,
        "--quiet",
    ];
    let sweep: Vec<&str> = vec![
        "sweep",
        "--mechanism",
        "laplace-sum",
        "--param",
        "epsilon=1:1:1",
        "--repeats",
        "1",
        "--samples",
        "1000",
        "--report-dir",
        reports_s,
        "--quiet",
    ];
    let lines_s = lines_file.to_str().unwrap();
    let test: Vec<&str> = vec![
        "test",
        "--samples-a",
        lines_s,
        "--samples-b",
        lines_s,
        "--claim",
        "pure:1",
        "--report-dir",
        reports_s,
        "--quiet",
    ];
    let cases: Vec<(&[&str], &str)> = vec![
        (&base_run, "--mechanism"),
        (&base_run, "--claim"),
        (&base_run, "--param"),
        (&base_run, "--tester"),
        (&base_run, "--transform"),
        (&base_run, "--report-dir"),
        (&finder_run, "--finder"),
        (&finder_run, "--neighbors"),
        (&finder_run, "--record-range"),
        (&finder_run, "--pairs"),
        (&finder_run, "--typical-data"),
        (&finder_run, "--budget"),
        (&exec_run, "--exec"),
        (&exec_run, "--claim"),
        (&exec_run, "--record-range"),
        (&exec_run, "--transform"),
        (&sweep, "--mechanism"),
        (&sweep, "--param"),
        (&sweep, "--tester"),
        (&sweep, "--claim"),
        (&test, "--samples-a"),
        (&test, "--claim"),
        (&test, "--tester"),
        (&test, "--transform"),
        (&["one-run", "--canaries", "100"], "--threat-model"),
        (&["one-run", "--canaries", "100"], "--param"),
        (&["one-run", "--canaries", "100"], "--guesses"),
        (
            &[
                "one-run",
                "--exec",
                "cat >/dev/null; echo 1 2",
                "--claim",
                "pure:1",
                "--canaries",
                "2",
            ],
            "--claim",
        ),
        (
            &[
                "one-run",
                "--exec",
                "cat >/dev/null; echo 1 2",
                "--claim",
                "pure:1",
                "--canaries",
                "2",
            ],
            "--data",
        ),
        (
            &[
                "one-run",
                "--exec",
                "cat >/dev/null; echo 1 2",
                "--claim",
                "pure:1",
                "--canaries",
                "2",
            ],
            "--record-range",
        ),
        (
            &[
                "one-run",
                "--exec",
                "cat >/dev/null; echo 1 2",
                "--claim",
                "pure:1",
                "--canaries",
                "2",
            ],
            "--exec",
        ),
        (&["report"], ""),
        (&["describe"], ""),
        (&["bench", "speed", "--repeats", "1"], "--tester"),
        (
            &["bench", "seeds", "--seeds", "1", "--samples", "200"],
            "--tester",
        ),
        (
            &["bench", "seeds", "--seeds", "1", "--samples", "200"],
            "--only",
        ),
        (
            &[
                "bench",
                "table",
                "--only",
                "laplace-sum",
                "--epsilons",
                "1",
                "--repeats",
                "1",
                "--samples",
                "200",
                "--tester",
                "hockey-stick",
            ],
            "--only",
        ),
        (
            &[
                "bench",
                "table",
                "--only",
                "laplace-sum",
                "--epsilons",
                "1",
                "--repeats",
                "1",
                "--samples",
                "200",
                "--tester",
                "hockey-stick",
            ],
            "--epsilons",
        ),
    ];
    for (base, flag) in cases {
        for v in &values {
            let mut args: Vec<&str> = Vec::new();
            let mut i = 0;
            while i < base.len() {
                if !flag.is_empty() && base[i] == flag {
                    i += 2;
                    continue;
                }
                args.push(base[i]);
                i += 1;
            }
            if !flag.is_empty() {
                args.push(flag);
            }
            args.push(v);
            let start = Instant::now();
            // Run inside the scratch directory: relative paths among the values (a report
            // directory named "-" or "1e999") must land there, not in the repository.
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_audit"))
                .args(&args)
                .current_dir(&dir)
                .output()
                .unwrap();
            let took = start.elapsed();
            let code = o.status.code();
            let shown: Vec<String> = args.iter().map(|a| a.chars().take(60).collect()).collect();
            assert!(
                matches!(code, Some(0..=2)),
                "{shown:?}: exit {code:?}\n{}",
                stderr(&o)
            );
            assert!(
                !stderr(&o).contains("panicked"),
                "{shown:?}: {}",
                stderr(&o)
            );
            assert!(took < Duration::from_secs(120), "{shown:?} took {took:?}");
        }
    }
    let repo = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for junk in ["-", "1e999", ":", "a=b=c", "x=nan"] {
        assert!(
            !repo.join(junk).exists(),
            "a run wrote into the repository: {}",
            repo.join(junk).display()
        );
    }
    for d in [&dir, &reports, &repo] {
        if let Ok(entries) = std::fs::read_dir(d) {
            for e in entries {
                let name = e.unwrap().file_name().to_string_lossy().into_owned();
                assert!(
                    !name.starts_with(".tmp-") && !name.starts_with(".old-"),
                    "left behind: {}",
                    d.join(name).display()
                );
            }
        }
    }
}

/// `audit run` with a Bayesian DP claim: the correct target exits 0, the buggy twin 1, the
/// worst-case testers and a missing or bad `--data` exit 2 naming what is wrong.
#[test]
fn bayesian_dp_run_exit_codes_and_errors() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/bdp-data.txt");
    let o = audit(&[
        "run",
        "--mechanism",
        "bdp-gaussian-sum",
        "--data",
        data,
        "--samples",
        "20000",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("weaker than DP"), "{}", stdout(&o));
    let o = audit(&[
        "run",
        "--mechanism",
        "bdp-gaussian-sum-excludes-outliers",
        "--data",
        data,
        "--samples",
        "100000",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    // A bdp-* entry runs alone on the data it ships with, and says so; any other target of a
    // bdp: claim needs --data.
    let o = audit(&[
        "run",
        "--mechanism",
        "bdp-gaussian-sum",
        "--samples",
        "20000",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("examples/bdp-data.txt"),
        "{}",
        stdout(&o)
    );
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--claim",
        "bdp:1:0.01",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--data FILE"), "{}", stderr(&o));
    let o = audit(&[
        "run",
        "--mechanism",
        "bdp-gaussian-sum",
        "--data",
        data,
        "--tester",
        "renyi",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let o = audit(&[
        "run",
        "--mechanism",
        "gaussian-sum-analytic",
        "--claim",
        "bdp:1:0.01",
        "--tester",
        "hockey-stick",
        "--data",
        data,
        "--finder",
        "random",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let bad = std::env::temp_dir().join(format!("dp-audit-bdp-bad-{}.txt", std::process::id()));
    std::fs::write(&bad, "0.5\n1.5\n").unwrap();
    let o = audit(&[
        "run",
        "--mechanism",
        "bdp-gaussian-sum",
        "--data",
        bad.to_str().unwrap(),
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("line 2") && stderr(&o).contains("outside"),
        "{}",
        stderr(&o)
    );
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--data",
        data,
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bdp:EPS:DELTA"), "{}", stderr(&o));
}

/// A report whose verdict disagrees with its own bounds (edited by hand) is refused by `audit
/// report`, never rendered under a false headline; a claim that underflows to 0 is refused.
#[test]
fn edited_reports_and_underflowing_claims_are_refused() {
    let dir = std::env::temp_dir().join(format!("dp-audit-edited-{}", std::process::id()));
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum-ignores-range",
        "--samples",
        "5000",
        "--quiet",
        "--report-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let index = stdout(&o)
        .lines()
        .find_map(|l| {
            l.strip_prefix("report       ")
                .map(|s| s.trim().to_string())
        })
        .unwrap();
    let json = std::path::Path::new(&index).with_file_name("audit.json");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // The page is drawn from the record's section: edit the verdict there.
    let mut v = util::payload(v);
    v["verdict"] = serde_json::json!("no-violation");
    let edited = dir.join("edited.json");
    std::fs::write(&edited, serde_json::to_string(&v).unwrap()).unwrap();
    let o = audit(&[
        "report",
        edited.to_str().unwrap(),
        "--report-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("verdict"), "{}", stderr(&o));
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--claim",
        "pure:1e-400",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("1e-400"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every entry `audit list` shows runs with `audit run --mechanism ID` alone (the Bayesian
/// entries with the data they ship with): exit 0 or 1, never 2. `--samples 2000` only keeps
/// the test short; no flag an entry needs is given.
#[test]
fn every_listed_entry_runs_as_listed() {
    let o = audit(&["list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let v = util::payload(v);
    let ids: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    assert!(ids.iter().any(|id| id.starts_with("bdp-")), "{ids:?}");
    // Scripts get the witness pair's records in full, not only the shortened display.
    for d in v.as_array().unwrap() {
        let recs = d["witness_records"].as_array().unwrap();
        assert_eq!(recs.len(), 2, "{}", d["id"]);
        assert!(recs[1].is_array(), "{}", d["id"]);
    }
    for id in &ids {
        let o = audit(&[
            "run",
            "--mechanism",
            id,
            "--samples",
            "2000",
            "--no-report",
            "--quiet",
        ]);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{id}: {}",
            stderr(&o)
        );
    }
}

/// Issue 26, item 4: a DP-SGD audit shows the empirical ε beside the accountant's range, and
/// the one-run audit of the built-in trainer its tightness line.
#[test]
fn dpsgd_audits_show_how_tight_their_claim_is() {
    let out = audit(&[
        "run",
        "--mechanism",
        "dpsgd-wrong-sampling-rate",
        "--no-report",
    ]);
    let text = stdout(&out);
    assert!(
        text.contains("≤ ε_true; accountant: ") && text.contains("PLD accountant"),
        "{text}"
    );
    let out = audit(&["run", "--mechanism", "dpsgd", "--no-report", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let v = util::payload(v);
    let acct = &v["empirical_epsilon"]["accountant"];
    assert_eq!(acct["pessimistic"].as_f64(), Some(1.0), "{v}");
}
