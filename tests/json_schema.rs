//! Every kind of audit prints one result record (`--json`) and stores it (`audit.json`), and
//! both validate against the versioned schema `docs/schema/result-record.schema.json`
//! (see docs/json.md). Each mode runs once at small sizes; the assertions are about the layout,
//! not the verdicts, so no statistical test is made here (no false-failure rate to state).

mod util;

use std::path::{Path, PathBuf};

use serde_json::Value;
use util::{audit, stderr, stdout};

fn schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schema/result-record.schema.json");
    let text = std::fs::read_to_string(&path).expect("the schema file is in the repository");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the schema is a valid JSON Schema 2020-12")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dp-audit-schema-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The errors of `v` against the schema, one line each (empty: valid).
fn errors(validator: &jsonschema::Validator, v: &Value) -> Vec<String> {
    validator
        .iter_errors(v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Runs `args` with `--json` and a report directory, and checks that stdout and every
/// `audit.json` written validate; returns the stdout record.
fn check_mode(validator: &jsonschema::Validator, name: &str, mode: &str, args: &[&str]) -> Value {
    let dir = scratch(name);
    let mut all: Vec<&str> = args.to_vec();
    let dir_s = dir.to_str().unwrap().to_string();
    all.extend(["--json", "--quiet", "--report-dir", &dir_s]);
    let o = audit(&all);
    assert!(
        matches!(o.status.code(), Some(0 | 1)),
        "{name}: exit {:?}: {}",
        o.status.code(),
        stderr(&o)
    );
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{name}: stdout is not JSON: {e}"));
    let errs = errors(validator, &v);
    assert!(errs.is_empty(), "{name} (--json): {errs:#?}");
    assert_eq!(v["mode"], mode, "{name}");
    assert_eq!(v["schema_version"], 3, "{name}");
    // The run directories: one record each, valid too, and `audit report` re-renders it.
    let mut pages = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path().join("audit.json");
        if !p.exists() {
            continue;
        }
        pages += 1;
        let page: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let errs = errors(validator, &page);
        assert!(errs.is_empty(), "{name} ({}): {errs:#?}", p.display());
        let again = audit(&["report", p.to_str().unwrap()]);
        assert_eq!(again.status.code(), Some(0), "{name}: {}", stderr(&again));
    }
    assert!(pages >= 1, "{name}: no run directory written in {dir_s}");
    let _ = std::fs::remove_dir_all(&dir);
    v
}

#[test]
fn every_mode_prints_and_stores_a_valid_record() {
    let v = schema();
    let fixed = check_mode(
        &v,
        "fixed",
        "fixed-pair",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--samples",
            "4000",
        ],
    );
    // The envelope carries what every reader needs without knowing the mode.
    assert_eq!(fixed["verdict"], "violation");
    assert_eq!(fixed["layers"][0]["bounds"][0]["violation"], true);
    let eps = &fixed["empirical_epsilon"];
    assert!(eps["attack_success_floor"].as_f64().unwrap() > 0.5, "{eps}");
    assert!(
        eps["words"]
            .as_str()
            .unwrap()
            .contains("membership attacker")
    );
    assert_eq!(fixed["section"]["kind"], "audit");
    check_mode(
        &v,
        "search",
        "search",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--finder",
            "random",
            "--trials",
            "3",
            "--search-samples",
            "1000",
            "--confirm",
            "1",
            "--samples",
            "4000",
        ],
    );
    check_mode(
        &v,
        "sequential",
        "sequential",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--sequential",
        ],
    );
    check_mode(
        &v,
        "layered-sequential",
        "layered-sequential",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--sequential",
            "--check",
            "both",
        ],
    );
    check_mode(
        &v,
        "layered",
        "layered",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--check",
            "both",
            "--samples",
            "4000",
        ],
    );
    check_mode(
        &v,
        "bayesian",
        "bayesian",
        &[
            "run",
            "--mechanism",
            "bdp-gaussian-sum-excludes-outliers",
            "--samples",
            "4000",
        ],
    );
    check_mode(
        &v,
        "one-run",
        "one-run",
        &[
            "one-run",
            "--canaries",
            "1000",
            "--param",
            "noise_scale=0.3",
        ],
    );
    check_mode(
        &v,
        "sweep",
        "sweep",
        &[
            "sweep",
            "--mechanism",
            "laplace-sum",
            "--param",
            "epsilon=0.5:1:0.5",
            "--repeats",
            "1",
            "--samples",
            "2000",
        ],
    );
    check_mode(
        &v,
        "table",
        "table",
        &[
            "bench",
            "table",
            "--only",
            "laplace-sum",
            "--epsilons",
            "1",
            "--tester",
            "hockey-stick",
            "--repeats",
            "1",
            "--samples",
            "2000",
        ],
    );
    // Releases read from files: one view, and both layers.
    let shards = scratch("shards");
    let a = shards.join("a.jsonl");
    let b = shards.join("b.jsonl");
    for (side, out) in [("a", &a), ("b", &b)] {
        let o = audit(&[
            "sample",
            "--mechanism",
            "laplace-sum",
            "--side",
            side,
            "--samples",
            "4000",
            "--shard-index",
            "0",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let files = [
        "test",
        "--samples-a",
        a.to_str().unwrap(),
        "--samples-b",
        b.to_str().unwrap(),
        "--claim",
        "pure:1",
    ];
    let mut plain = files.to_vec();
    plain.extend(["--transform", "none"]);
    check_mode(&v, "sample-test", "sample-test", &plain);
    check_mode(&v, "layered-sample-test", "layered-sample-test", &files);
    // Bayesian DP over shards of (x', release) pairs, and over a program.
    let root = env!("CARGO_MANIFEST_DIR");
    let mu = format!("{root}/examples/bdp-data.txt");
    for (side, out) in [("a", &a), ("b", &b)] {
        let o = audit(&[
            "sample",
            "--mechanism",
            "bdp-gaussian-sum",
            "--side",
            side,
            "--samples",
            "4000",
            "--shard-index",
            "0",
            "--bdp-data",
            &mu,
            "--out",
            out.to_str().unwrap(),
            "--force",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    let bdp = [
        "test",
        "--samples-a",
        a.to_str().unwrap(),
        "--samples-b",
        b.to_str().unwrap(),
        "--claim",
        "bdp:1:0.01",
    ];
    check_mode(&v, "bayesian-shards", "bayesian", &bdp);
    let program = format!("python3 {root}/examples/exec/bdp_gaussian_sum.py");
    let small = format!("{root}/examples/bdp-data-small.txt");
    check_mode(
        &v,
        "bayesian-exec",
        "bayesian",
        &[
            "run",
            "--exec",
            &program,
            "--claim",
            "bdp:1:0.0141",
            "--data",
            &small,
            "--record-range",
            "0:1",
            "--dataset-size",
            "3",
            "--samples",
            "4000",
        ],
    );
    let _ = std::fs::remove_dir_all(&shards);
}

#[test]
fn the_schema_rejects_a_record_missing_what_every_mode_fills() {
    // The check above can fail: a record without its verdict words, or with a mode the schema
    // does not know, or a section without its kind's fields, is refused.
    let v = schema();
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--samples",
        "2000",
        "--json",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let good: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(errors(&v, &good).is_empty());
    let mut bad = good.clone();
    bad.as_object_mut().unwrap().remove("verdict_words");
    assert!(!errors(&v, &bad).is_empty());
    let mut bad = good.clone();
    bad["mode"] = "guess".into();
    assert!(!errors(&v, &bad).is_empty());
    let mut bad = good.clone();
    bad["section"]["data"]
        .as_object_mut()
        .unwrap()
        .remove("bounds");
    assert!(!errors(&v, &bad).is_empty());
    let mut bad = good;
    bad["schema_version"] = 2.into();
    assert!(!errors(&v, &bad).is_empty());
}

#[test]
fn the_committed_gallery_holds_valid_records() {
    // reports/examples is regenerated by reports/regenerate.sh; a layout change that forgets it
    // fails here.
    let v = schema();
    let gallery = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/examples");
    let mut seen = 0;
    for entry in std::fs::read_dir(&gallery).unwrap() {
        let p = entry.unwrap().path().join("audit.json");
        if !p.exists() {
            continue;
        }
        seen += 1;
        let rec: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let errs = errors(&v, &rec);
        assert!(errs.is_empty(), "{}: {errs:#?}", p.display());
    }
    assert!(seen >= 10, "{seen} reports in {}", gallery.display());
}

#[test]
fn audit_report_takes_a_search_record_and_a_fixed_pair_record() {
    let dir = scratch("report-json");
    let saved = dir.join("search.json");
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum-ignores-range",
        "--finder",
        "random",
        "--trials",
        "2",
        "--search-samples",
        "1000",
        "--confirm",
        "1",
        "--samples",
        "2000",
        "--json",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    std::fs::write(&saved, &o.stdout).unwrap();
    let r = audit(&[
        "report",
        saved.to_str().unwrap(),
        "--report-dir",
        dir.to_str().unwrap(),
    ]);
    // A search's --json output re-renders as its deciding confirmation's page
    // (tests/report_records.rs does every mode).
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    assert!(stdout(&r).contains("violation found"), "{}", stdout(&r));
    // A fixed pair's --json output becomes a run directory.
    let saved = dir.join("fixed.json");
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--samples",
        "2000",
        "--json",
        "--no-report",
    ]);
    std::fs::write(&saved, &o.stdout).unwrap();
    let r = audit(&[
        "report",
        saved.to_str().unwrap(),
        "--report-dir",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
    let _ = std::fs::remove_dir_all(&dir);
}
