//! One ledger reader: `--claim ledger:FILE` and `audit accountant --ledger FILE` accept the same
//! files (a byte-order mark and CRLF line ends included) and state the same ε; the example of
//! docs/accountant.md is read by both; messages state the program's real limits.

mod util;

use util::{audit, stderr, stdout};

const EXAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ledger/dpsgd.jsonl");

fn temp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("dp-audit-ledger-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// ε of the PLD upper bound `audit accountant --ledger FILE` prints (JSON).
fn accountant_epsilon(ledger: &str, delta: &str) -> f64 {
    let o = audit(&["accountant", "--ledger", ledger, "--delta", delta, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    v["pld"]["epsilon_upper"].as_f64().unwrap()
}

/// The claim `audit run … --claim ledger:FILE[:DELTA]` tests: (ε, δ) of its record.
fn claimed(ledger_arg: &str, reports: &std::path::Path) -> (f64, f64) {
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--claim",
        &format!("ledger:{ledger_arg}"),
        "--samples",
        "1000",
        "--report-dir",
        reports.to_str().unwrap(),
        "--json",
    ]);
    // 0 or 1 (the verdict is not what is tested here), never 2.
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v = util::payload(serde_json::from_slice(&o.stdout).unwrap());
    let c = &v["mechanism"]["claim"];
    assert_eq!(c["kind"], "approximate", "{v}");
    (c["epsilon"].as_f64().unwrap(), c["delta"].as_f64().unwrap())
}

#[test]
fn a_bom_and_crlf_ledger_is_read_alike_by_both_readers() {
    let dir = temp_dir("bom");
    let plain = "{\"event\": \"sampling\", \"probability\": 0.01, \"repetitions\": 1000}\n{\"event\": \"gaussian-sum\", \"noise_multiplier\": 4.0}\n";
    let windows = dir.join("windows.jsonl");
    std::fs::write(&windows, format!("\u{feff}{}", plain.replace('\n', "\r\n"))).unwrap();
    let unix = dir.join("unix.jsonl");
    std::fs::write(&unix, plain).unwrap();
    let (w, u) = (windows.to_str().unwrap(), unix.to_str().unwrap());
    let by_accountant = accountant_epsilon(w, "1e-5");
    assert_eq!(by_accountant, accountant_epsilon(u, "1e-5"));
    let (eps, delta) = claimed(w, &dir.join("reports"));
    assert_eq!((eps, delta), (by_accountant, 1e-5));
    assert_eq!(claimed(u, &dir.join("reports")), (eps, delta));
}

#[test]
fn the_documented_example_is_read_by_both_readers() {
    let dir = temp_dir("example");
    let by_accountant = accountant_epsilon(EXAMPLE, "1e-6");
    let (eps, delta) = claimed(&format!("{EXAMPLE}:1e-6"), &dir.join("reports"));
    assert_eq!((eps, delta), (by_accountant, 1e-6));
    // The example has what the docs say it shows: two blocks, one with two noise groups, a
    // policy field, comment lines.
    let text = std::fs::read_to_string(EXAMPLE).unwrap();
    assert!(text.contains("\"policy\": \"poisson\"") && text.starts_with('#'));
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/accountant.md"))
        .unwrap();
    for line in text.lines().filter(|l| l.starts_with('{')) {
        assert!(
            docs.contains(line),
            "docs/accountant.md does not show {line}"
        );
    }
    // `audit accountant --help` documents the policy field and points at the example.
    let help = stdout(&audit(&["accountant", "--help"]));
    assert!(
        help.contains("\"policy\"") && help.contains("examples/ledger/dpsgd.jsonl"),
        "{help}"
    );
}

#[test]
fn ledger_errors_name_one_line() {
    let dir = temp_dir("errors");
    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"event\": \"sampling\", \"probability\": 0.5, \"repetitions\": 3}\n{\"event\": \"gaussian-sum\", \"noise_multiplier\": }\n",
    )
    .unwrap();
    let b = bad.to_str().unwrap();
    for args in [
        vec!["accountant", "--ledger", b, "--delta", "1e-5"],
        vec![
            "run",
            "--mechanism",
            "laplace-sum",
            "--claim",
            &format!("ledger:{b}"),
        ],
    ] {
        let o = audit(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = stderr(&o);
        assert!(
            e.contains("line 2:") && e.matches("line ").count() == 1,
            "{e}"
        );
    }
}

#[test]
fn accountant_messages_say_what_the_user_can_do() {
    // A tiny noise multiplier is printed as given, not as 0.
    let o = audit(&[
        "accountant",
        "--sampling-rate",
        "0.01",
        "--noise-multiplier",
        "1e-300",
        "--steps",
        "10",
        "--delta",
        "1e-5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(e.contains("z = 1e-300") && !e.contains("z = 0 "), "{e}");
    // A huge target: no hint at a discretization no flag sets.
    let o = audit(&[
        "accountant",
        "--sampling-rate",
        "0.01",
        "--target-epsilon",
        "1e9",
        "--steps",
        "10",
        "--delta",
        "1e-5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        !e.contains("discretization") && e.contains("a smaller --target-epsilon"),
        "{e}"
    );
    // An error bound that overflowed is not offered as a δ to stay above.
    let o = audit(&[
        "accountant",
        "--sampling-rate",
        "1e-9",
        "--noise-multiplier",
        "1",
        "--steps",
        "9007199254740992",
        "--delta",
        "1e-5",
    ]);
    if o.status.code() == Some(2) {
        let e = stderr(&o);
        assert!(
            !e.contains("above inf") && !e.contains("δ well above"),
            "{e}"
        );
    }
    // The flag it suggests exists.
    let help = stdout(&audit(&["accountant", "--help"]));
    assert!(help.contains("--noise-multiplier"));
    // --target-epsilon carries the attack-success bound like every other ε, and it is the
    // bound at the ε printed.
    let o = audit(&[
        "accountant",
        "--sampling-rate",
        "0.01",
        "--target-epsilon",
        "2",
        "--steps",
        "1000",
        "--delta",
        "1e-5",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let eps = v["pld"]["epsilon_upper"].as_f64().unwrap();
    let bound = v["attack_success_bound"].as_f64().unwrap();
    assert!(
        (bound - (1.0 - (1.0 - 1e-5) / (1.0 + eps.exp()))).abs() < 1e-12,
        "{v}"
    );
}

/// The DP-fy ML report (seed 002's guide, §5.3): a ledger's `dp-fy-ml` line states the data
/// accesses and outputs covered, which both readers skip as an event (the same ε with or
/// without it) and the accountant reports with the tier of its ε; the flags override the line;
/// a bad value is an error naming it (exit 2). A catalogue DP-SGD audit's record carries the
/// tier of its claim and what the trainer releases; an exec audit carries what the flags say.
#[test]
fn dp_fy_ml_fields_from_the_ledger_and_the_flags() {
    let dir = temp_dir("dpfy");
    let plain = std::fs::read_to_string(EXAMPLE).unwrap();
    let path = dir.join("scoped.jsonl");
    std::fs::write(
        &path,
        format!(
            "{plain}{{\"event\": \"dp-fy-ml\", \"data_accesses\": \"training-and-tuning\", \"outputs\": \"final-model\"}}\n"
        ),
    )
    .unwrap();
    let p = path.to_str().unwrap();
    assert_eq!(
        accountant_epsilon(p, "1e-5"),
        accountant_epsilon(EXAMPLE, "1e-5")
    );
    let json = |extra: &[&str]| {
        let mut args = vec!["accountant", "--ledger", p, "--delta", "1e-5", "--json"];
        args.extend(extra);
        let o = audit(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["dp_fy_ml"].clone()
    };
    let d = json(&[]);
    assert_eq!(d["data_accesses"], "training-and-tuning");
    assert_eq!(d["outputs_covered"], "final-model");
    // ε = 4.285 at δ = 1e-5: tier 2 (ε ≤ 10).
    assert_eq!(d["tier"], 2, "{d}");
    assert!(d["assumptions"].as_str().unwrap().contains("Poisson"));
    let d = json(&["--outputs-covered", "every-iterate"]);
    assert_eq!(d["outputs_covered"], "every-iterate");
    assert_eq!(d["data_accesses"], "training-and-tuning");
    let o = audit(&["accountant", "--ledger", p, "--delta", "1e-5"]);
    let text = stdout(&o);
    assert!(
        text.contains("DP-fy ML report") && text.contains("Tier 2"),
        "{text}"
    );
    let o = audit(&[
        "accountant",
        "--ledger",
        p,
        "--delta",
        "1e-5",
        "--data-accesses",
        "everything",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--data-accesses everything; allowed: single-training-run"));
    // The same line read by --claim ledger:FILE: the record states it.
    let o = audit(&[
        "run",
        "--exec",
        "python3 examples/exec/textbook_laplace_sum.py",
        "--record-range=-5:5",
        "--claim",
        &format!("ledger:{p}"),
        "--outputs-covered",
        "checkpoints",
        "--samples",
        "2000",
        "--trials",
        "1",
        "--no-report",
        "--json",
    ]);
    if matches!(o.status.code(), Some(0 | 1)) {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let d = &v["dp_fy_ml"];
        assert_eq!(d["data_accesses"], "training-and-tuning", "{v}");
        assert_eq!(d["outputs_covered"], "checkpoints", "{v}");
    } else {
        // No python3 here: every test that runs Python programs skips alike.
        assert!(stderr(&o).contains("python3"), "{}", stderr(&o));
    }
    // A catalogue trainer states what it releases.
    let o = audit(&["run", "--mechanism", "dpsgd", "--no-report", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["dp_fy_ml"]["tier"], 1, "{v}");
    assert_eq!(v["dp_fy_ml"]["outputs_covered"], "final-model");
    assert_eq!(v["dp_fy_ml"]["data_accesses"], "single-training-run");
}
