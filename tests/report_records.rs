//! Records a reviewer can rely on: every mode's `--json` output, saved, re-renders with
//! `audit report` into a page whose verdict is the run's; a record edited to lie (verdicts,
//! violation flags and bound values rewritten, the stored counts left) is refused, naming the
//! field that contradicts the counts.
//!
//! The runs are small (seconds each) and their verdicts are not what is tested: whatever the run
//! found, the page must say the same. Runs that find a violation are chosen where one exists
//! (buggy catalogue entries, a release file shifted by three times the sensitivity), so that the
//! lying copy has a violation to hide.

mod util;

use std::path::{Path, PathBuf};

use util::{audit, stderr, stdout};

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("report-records-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs `args` (a mode with `--json`), saves its stdout, re-renders it with `audit report` and
/// checks the page's record has the run's verdict. Returns the saved file and the run's record.
fn saved_and_rerendered(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, serde_json::Value) {
    let o = audit(args);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        stderr(&o)
    );
    let saved = dir.join(format!("{name}.json"));
    std::fs::write(&saved, &o.stdout).unwrap();
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let out = dir.join(format!("{name}-pages"));
    let r = audit(&[
        "report",
        saved.to_str().unwrap(),
        "--report-dir",
        out.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{name}: {}", stderr(&r));
    let text = stdout(&r);
    let index = text
        .lines()
        .find_map(|l| l.strip_prefix("report       "))
        .unwrap_or_else(|| panic!("{name}: no report line in {text}"));
    let page_dir = Path::new(index.trim()).parent().unwrap().to_path_buf();
    let page: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(page_dir.join("audit.json")).unwrap())
            .unwrap();
    assert!(page_dir.join("index.html").is_file(), "{name}");
    // The page's verdict is the run's; the text shows it too.
    if let Some(v) = rec["verdict"].as_str() {
        assert_eq!(
            page["verdict"].as_str(),
            Some(v),
            "{name}: page against run"
        );
        let words = if v == "violation" {
            "violation found"
        } else {
            "no violation found"
        };
        assert!(text.to_lowercase().contains(words), "{name}: {text}");
    }
    (saved, rec)
}

/// Every string `verdict` set to no-violation, every `violation` flag to false, every bound
/// `value` to 0: what someone hiding a finding would edit.
fn lie(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                match (k.as_str(), &*x) {
                    ("verdict", serde_json::Value::String(_)) => *x = "no-violation".into(),
                    ("violation", serde_json::Value::Bool(_)) => *x = false.into(),
                    ("value", serde_json::Value::Number(_)) => *x = 0.0.into(),
                    _ => lie(x),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(lie),
        _ => {}
    }
}

/// The lying copy of a violating record is refused (exit 2), naming a bound's value and its
/// counts.
fn lying_copy_refused(dir: &Path, name: &str, saved: &Path, rec: &serde_json::Value) {
    assert_eq!(rec["verdict"], "violation", "{name}: a violation to hide");
    let mut v = rec.clone();
    lie(&mut v);
    let f = dir.join(format!("{name}-lie.json"));
    std::fs::write(&f, serde_json::to_vec(&v).unwrap()).unwrap();
    let r = audit(&[
        "report",
        f.to_str().unwrap(),
        "--report-dir",
        dir.join("lies").to_str().unwrap(),
    ]);
    let err = stderr(&r);
    assert_eq!(r.status.code(), Some(2), "{name}: {err}");
    assert!(
        err.contains(".value = 0 but its") && err.contains("allowed: the bound its counts give"),
        "{name}: {err}"
    );
    assert!(!dir.join("lies").join("index.html").exists() || saved.exists());
}

#[test]
fn fixed_pair_search_and_sequential_records_rerender() {
    let d = scratch("catalogue");
    let base = [
        "run",
        "--mechanism",
        "laplace-sum-ignores-range",
        "--samples",
        "20000",
        "--json",
        "--no-report",
    ];
    let (saved, rec) = saved_and_rerendered(&d, "fixed", &base);
    assert_eq!(rec["mode"], "fixed-pair");
    lying_copy_refused(&d, "fixed", &saved, &rec);
    // The run directory's audit.json, edited in place, is refused too (and its page is not
    // redrawn).
    let runs = d.join("runs");
    let with_report: Vec<&str> = base
        .iter()
        .copied()
        .filter(|a| *a != "--no-report")
        .chain(["--report-dir", runs.to_str().unwrap()])
        .collect();
    let o = audit(&with_report);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let run_dir = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("audit.json").is_file())
        .expect("a run directory");
    let file = run_dir.join("audit.json");
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["verdict"], "violation");
    lie(&mut v);
    std::fs::write(&file, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let page_before = std::fs::read(run_dir.join("index.html")).unwrap();
    let r = audit(&["report", file.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(2), "{}", stderr(&r));
    assert!(
        stderr(&r).contains("bounds[0].value = 0 but its"),
        "{}",
        stderr(&r)
    );
    assert_eq!(
        std::fs::read(run_dir.join("index.html")).unwrap(),
        page_before
    );
    let search: Vec<&str> = base
        .iter()
        .copied()
        .chain([
            "--finder",
            "random",
            "--trials",
            "3",
            "--search-samples",
            "2000",
        ])
        .collect();
    let (saved, rec) = saved_and_rerendered(&d, "search", &search);
    assert_eq!(rec["mode"], "search");
    lying_copy_refused(&d, "search", &saved, &rec);
    let (_, rec) = saved_and_rerendered(
        &d,
        "sequential",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--sequential",
            "--json",
            "--no-report",
        ],
    );
    assert_eq!(rec["mode"], "sequential");
    let (saved, rec) = saved_and_rerendered(
        &d,
        "layered-sequential",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--sequential",
            "--check",
            "both",
            "--json",
            "--no-report",
        ],
    );
    assert_eq!(rec["mode"], "layered-sequential");
    assert_eq!(rec["verdict"], "violation");
    // A sequential record's bound is the wealth: the lie (the section's verdicts included) is
    // refused because the section's verdict contradicts its own wealth.
    let mut v = rec.clone();
    lie(&mut v);
    let f = d.join("layered-sequential-lie.json");
    std::fs::write(&f, serde_json::to_vec(&v).unwrap()).unwrap();
    let r = audit(&[
        "report",
        f.to_str().unwrap(),
        "--report-dir",
        d.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2));
    assert!(
        stderr(&r).contains("allowed: a report whose verdict follows from its wealth"),
        "{}",
        stderr(&r)
    );
    // Only the summary edited, the section left: refused by the summary its section gives.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    v["verdict"] = "no-violation".into();
    for l in v["layers"].as_array_mut().unwrap() {
        l["verdict"] = "no-violation".into();
    }
    std::fs::write(&f, serde_json::to_vec(&v).unwrap()).unwrap();
    let r = audit(&[
        "report",
        f.to_str().unwrap(),
        "--report-dir",
        d.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(2));
    assert!(
        stderr(&r).contains(
            "verdict = no violation found but the section it summarizes gives violation found"
        ),
        "{}",
        stderr(&r)
    );
}

#[test]
fn program_records_rerender_and_lies_are_refused() {
    let d = scratch("program");
    let program = concat!(
        "python3 ",
        env!("CARGO_MANIFEST_DIR"),
        "/examples/exec/clamped_mean_min_rows.py --startup 0"
    );
    let (saved, rec) = saved_and_rerendered(
        &d,
        "layered",
        &[
            "run",
            "--exec",
            program,
            "--claim",
            "pure:0.1",
            "--trials",
            "4",
            "--search-samples",
            "2000",
            "--samples",
            "40000",
            "--json",
            "--no-report",
            "-q",
        ],
    );
    assert_eq!(rec["mode"], "layered");
    lying_copy_refused(&d, "layered", &saved, &rec);
}

#[test]
fn release_file_records_rerender_and_lies_are_refused() {
    let d = scratch("files");
    // Laplace(0, 1) against Laplace(3, 1): ε = 3 against a claim of 1, from a fixed generator.
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut laplace = |shift: f64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let u = ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64 - 0.5;
        shift - u.signum() * (1.0 - 2.0 * u.abs()).ln()
    };
    let a: String = (0..20_000).map(|_| format!("{}\n", laplace(0.0))).collect();
    let b: String = (0..20_000).map(|_| format!("{}\n", laplace(3.0))).collect();
    std::fs::write(d.join("a.jsonl"), a).unwrap();
    std::fs::write(d.join("b.jsonl"), b).unwrap();
    let (fa, fb) = (d.join("a.jsonl"), d.join("b.jsonl"));
    let args = |check: &'static str| -> Vec<String> {
        [
            "test",
            "--samples-a",
            fa.to_str().unwrap(),
            "--samples-b",
            fb.to_str().unwrap(),
            "--claim",
            "pure:1",
            "--check",
            check,
            "--json",
            "--no-report",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    for check in ["both", "mechanism"] {
        let a = args(check);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let (saved, rec) = saved_and_rerendered(&d, check, &a);
        lying_copy_refused(&d, check, &saved, &rec);
    }
    // Through one view (--transform): a test without layers, section kind sample-test.
    let mut a = args("both");
    let at = a.iter().position(|x| x == "--check").unwrap();
    a.splice(at..at + 2, ["--transform".to_string(), "none".to_string()]);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (saved, rec) = saved_and_rerendered(&d, "one-view", &a);
    assert_eq!(rec["section"]["kind"], "sample-test");
    lying_copy_refused(&d, "one-view", &saved, &rec);
}

#[test]
fn sweep_and_one_run_records_rerender() {
    let d = scratch("many");
    let (_, rec) = saved_and_rerendered(
        &d,
        "sweep",
        &[
            "sweep",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--param",
            "range=1:3:2",
            "--repeats",
            "2",
            "--samples",
            "5000",
            "--json",
            "--no-report",
        ],
    );
    assert_eq!(rec["mode"], "sweep");
    let (_, rec) = saved_and_rerendered(
        &d,
        "one-run",
        &[
            "one-run",
            "--canaries",
            "200",
            "--json",
            "--no-report",
            "--quiet",
        ],
    );
    assert_eq!(rec["mode"], "one-run");
}
