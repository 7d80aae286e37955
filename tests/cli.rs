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
        &["samples per side = 0"],
    );
    assert_error(
        &[
            "run",
            "--mechanism",
            "laplace-sum",
            "--samples",
            "999999999999",
        ],
        &["999999999999", "at most"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--claim", "pure:0"],
        &["epsilon = 0", "> 0"],
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
        &["β = 1.5"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--param", "bogus=1"],
        &["bogus"],
    );
    assert_error(
        &["run", "--mechanism", "laplace-sum", "--tester", "nope"],
        &["nope", "hockey-stick"],
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
        let got = v["rdp"]["epsilon"].as_f64().unwrap();
        assert!((got - eps).abs() <= 1e-6 * eps, "q = {q}: {got} vs {eps}");
    }
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
    let pts = v["points"].as_array().unwrap();
    assert_eq!(pts.len(), 2);
    assert_eq!(pts[0]["status"], "correct");
    assert_eq!(pts[1]["detections"], 3);
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
