//! Every report's Reproduce line, run again, gives the same verdict and the same bounds: for a
//! catalogue run, a finder run (the page used to show the catalogue witness's command), and an
//! exec run under a time budget (replayed with the trials the budget allowed), a sequential run,
//! a sweep and a test of release files.

mod util;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use util::stderr;

fn scratch(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("reproduce-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&p);
    fs::create_dir_all(&p).unwrap();
    p
}

/// Runs `audit ARGS --report-dir DIR`, returns (exit code, the run's audit.json).
fn run_with_report(args: &[&str], dir: &Path) -> (Option<i32>, serde_json::Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_audit"))
        .args(args)
        .arg("--report-dir")
        .arg(dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{args:?}: {}",
        stderr(&o)
    );
    let run = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("audit.json").is_file())
        .unwrap_or_else(|| panic!("{args:?}: no run directory in {}", dir.display()));
    let v = serde_json::from_str(&fs::read_to_string(run.join("audit.json")).unwrap()).unwrap();
    let v = util::payload(v);
    (o.status.code(), v)
}

/// The Reproduce line of `report`, run with its report in a fresh directory.
fn rerun(report: &serde_json::Value, name: &str) -> (Option<i32>, serde_json::Value) {
    let line = report["reproduce"]
        .as_str()
        .expect("the report records its command line");
    let words = shlex::split(line).unwrap();
    assert_eq!(words[0], "audit", "{line}");
    // Drop the original --report-dir: the re-run writes into a fresh directory.
    let mut args: Vec<String> = Vec::new();
    let mut i = 1;
    while i < words.len() {
        if words[i] == "--report-dir" {
            i += 2;
            continue;
        }
        args.push(words[i].clone());
        i += 1;
    }
    let dir = scratch(name);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run_with_report(&refs, &dir)
}

fn assert_same_run(a: &serde_json::Value, b: &serde_json::Value) {
    assert_eq!(a["verdict"], b["verdict"]);
    assert_eq!(a["bounds"], b["bounds"]);
    assert_eq!(a["pair"], b["pair"]);
    assert_eq!(a["reproduce"], b["reproduce"]);
}

#[test]
fn a_catalogue_run_reproduces() {
    let dir = scratch("catalogue");
    let (code, report) = run_with_report(
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--samples",
            "20000",
            "--quiet",
        ],
        &dir,
    );
    assert_eq!(code, Some(1));
    let (code2, again) = rerun(&report, "catalogue-again");
    assert_eq!(code, code2);
    assert_same_run(&report, &again);
}

/// A finder run records its search (every confirmed pair and its verdict) and its own command,
/// not the catalogue witness's.
#[test]
fn a_finder_run_records_its_search_and_reproduces() {
    let dir = scratch("finder");
    let (code, report) = run_with_report(
        &[
            "run",
            "--mechanism",
            "svt3",
            "--finder",
            "bayes",
            "--trials",
            "4",
            "--search-samples",
            "1000",
            "--samples",
            "4000",
            "--quiet",
        ],
        &dir,
    );
    let line = report["reproduce"].as_str().unwrap();
    assert!(
        line.contains("--finder bayes") && line.contains("--trials 4"),
        "{line}"
    );
    let search = &report["search"];
    assert_eq!(search["finder"], "bayes");
    assert_eq!(search["trials"].as_array().unwrap().len(), 4);
    assert!(!search["confirmations"].as_array().unwrap().is_empty());
    let (code2, again) = rerun(&report, "finder-again");
    assert_eq!(code, code2);
    assert_same_run(&report, &again);
    assert_eq!(report["search"], again["search"]);
}

/// An exec run under a time budget is replayed with the trials the budget allowed.
#[test]
fn an_exec_run_under_a_budget_reproduces_with_its_trial_count() {
    let dir = scratch("exec");
    let (code, report) = run_with_report(
        &[
            "run",
            "--exec",
            "python3 examples/exec/stdlib_laplace_count.py --scale-factor 0.3",
            "--claim",
            "pure:1",
            "--budget",
            "20s",
            "--samples",
            "5000",
            "--search-samples",
            "1000",
            "--quiet",
        ],
        &dir,
    );
    assert_eq!(code, Some(1), "the noise is 0.3 of what ε = 1 needs");
    let line = report["reproduce"].as_str().unwrap();
    assert!(
        line.starts_with(
            "audit run --exec 'python3 examples/exec/stdlib_laplace_count.py --scale-factor 0.3'"
        ),
        "{line}"
    );
    assert!(
        !line.contains("--budget") && line.contains("--trials "),
        "{line}"
    );
    let (code2, again) = rerun(&report, "exec-again");
    assert_eq!(code, code2);
    assert_same_run(&report, &again);
}

/// A sequential run records its command line; run again it stops at the same time with the same
/// wealth.
#[test]
fn a_sequential_run_reproduces() {
    let dir = scratch("sequential");
    let (code, report) = run_with_report(
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--sequential",
            "--max-samples",
            "20000",
            "--quiet",
        ],
        &dir,
    );
    assert_eq!(code, Some(1));
    let line = report["reproduce"].as_str().unwrap();
    assert!(line.contains("--sequential --max-samples 20000"), "{line}");
    let (code2, again) = rerun(&report, "sequential-again");
    assert_eq!(code, code2);
    for key in ["verdict", "stopping_time", "log_wealth", "reproduce"] {
        assert_eq!(report[key], again[key], "{key}");
    }
}

#[test]
fn a_sweep_reproduces() {
    let dir = scratch("sweep");
    let (code, report) = run_with_report(
        &[
            "sweep",
            "--mechanism",
            "dpsgd-scaled-noise",
            "--param",
            "noise_scale=0.5:1:0.5",
            "--repeats",
            "2",
            "--samples",
            "20000",
            "--quiet",
        ],
        &dir,
    );
    assert_eq!(code, Some(0));
    assert_eq!(report["kind"], "sweep");
    let line = report["reproduce"].as_str().unwrap();
    assert!(
        line.starts_with("audit sweep --mechanism dpsgd-scaled-noise"),
        "{line}"
    );
    let (code2, again) = rerun(&report, "sweep-again");
    assert_eq!(code, code2);
    for key in ["points", "claims", "seed", "reproduce"] {
        assert_eq!(report[key], again[key], "{key}");
    }
}

#[test]
fn a_test_of_sample_files_writes_its_report_and_reproduces() {
    let dir = scratch("samples");
    // Releases of N(0.5, 1) and N(0, 1) from a fixed linear congruential stream (no randomness
    // in the test itself): the claim gdp:0.1 is far below the true μ = 0.5.
    let mut state: u64 = 1;
    let mut uniform = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let mut normal = || {
        let (u, v) = (uniform(), uniform());
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    };
    let a: Vec<String> = (0..20000).map(|_| (normal() + 0.5).to_string()).collect();
    let b: Vec<String> = (0..20000).map(|_| normal().to_string()).collect();
    let (fa, fb) = (dir.join("a.txt"), dir.join("b.txt"));
    fs::write(&fa, a.join("\n")).unwrap();
    fs::write(&fb, b.join("\n")).unwrap();
    let reports = dir.join("reports");
    let (code, report) = run_with_report(
        &[
            "test",
            "--samples-a",
            fa.to_str().unwrap(),
            "--samples-b",
            fb.to_str().unwrap(),
            "--claim",
            "gdp:0.1",
        ],
        &reports,
    );
    assert_eq!(code, Some(1));
    assert!(
        report.get("pair").is_none(),
        "no dataset was seen: {report}"
    );
    assert_eq!(report["sample_files"]["samples_a"], 20000);
    let run = fs::read_dir(&reports)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("index.html").is_file())
        .unwrap();
    let page = fs::read_to_string(run.join("index.html")).unwrap();
    assert!(page.contains("id=\"sample-files\""), "{page}");
    let (code2, again) = rerun(&report, "samples-again");
    assert_eq!(code, code2);
    assert_eq!(report["bounds"], again["bounds"]);
    assert_eq!(report["verdict"], again["verdict"]);
}
