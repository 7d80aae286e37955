//! `audit bench`: the power, speed and seed-sweep benchmarks run end to end at small sizes (the
//! figures themselves are quoted from full runs in docs/benchmarks.md; these tests check the
//! machinery).

mod util;

use util::{audit, stderr, stdout};

/// Power table at a small n. s = 0.5 at n = 20000 has true δ(1) ≈ 1.04e-2 ≫ 1e-5, so the
/// hockey-stick tester detects it in nearly every audit; the assertion only needs one detection
/// out of 2 (it fails if both miss: far below 1e-6 at this size by the coverage of the event
/// bound — measured margins are ~5e-3 at n = 1e5).
#[test]
fn bench_power_prints_a_table_and_json() {
    let o = audit(&[
        "bench",
        "power",
        "--samples",
        "20000",
        "--tester",
        "hockey-stick,renyi",
        "--repeats",
        "2",
        "--json",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = util::payload(v);
    let rows = v.as_array().unwrap();
    // 2 claims × 1 size × 2 testers × 8 scales.
    assert_eq!(rows.len(), 32);
    let hs_point_05 = rows
        .iter()
        .find(|r| r["claim"] == "point" && r["tester"] == "hockey-stick" && r["scale"] == 0.5)
        .unwrap();
    assert!(hs_point_05["detections"].as_u64().unwrap() >= 1);
    // The Rényi tester cannot test an (ε, δ) claim with δ > 0: reported as n/a with the reason.
    let renyi_point = rows
        .iter()
        .find(|r| r["claim"] == "point" && r["tester"] == "renyi")
        .unwrap();
    assert!(renyi_point["detections"].is_null());
    assert!(renyi_point["note"].as_str().unwrap().contains("Rényi"));
}

#[test]
fn bench_speed_reports_medians_against_sampling() {
    let o = audit(&[
        "bench",
        "speed",
        "--samples",
        "5000",
        "--tester",
        "hockey-stick",
        "--repeats",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("sampling") && text.contains("hockey-stick"),
        "{text}"
    );
}

/// Seed sweep at a tiny size: every row is a correct entry; the rows exist for each tester.
/// (No assertion on the counts here: the soundness assertions live in tests/soundness.rs and
/// tests/testers.rs with their stated false-failure rates.)
#[test]
fn bench_seeds_covers_every_correct_entry() {
    let o = audit(&[
        "bench",
        "seeds",
        "--seeds",
        "2",
        "--samples",
        "2000",
        "--tester",
        "hockey-stick",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = util::payload(v);
    let rows = v.as_array().unwrap();
    // The Bayesian DP entries (bdp-*, listed last) are audited against a data file, not by the
    // worst-case seed sweep.
    let list = audit(&["list"]);
    // Entry lines start in column 0 (ID STATUS CLAIM SUMMARY); notes under them are indented.
    let correct = stdout(&list)
        .lines()
        .filter(|l| !l.starts_with(' ') && !l.starts_with("bdp-"))
        .filter(|l| l.split_whitespace().nth(1) == Some("correct"))
        .count();
    assert_eq!(rows.len(), correct);
    for r in rows {
        assert_eq!(r["seeds"], 2);
    }
}

/// `--only` keeps each entry's seeds: the rows of a two-entry sweep equal those rows of the
/// sweep over the whole catalogue (same seeds, same counts). Deterministic, no false failure.
#[test]
fn bench_seeds_only_keeps_each_entrys_seeds() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "seeds",
            "--seeds",
            "3",
            "--samples",
            "2000",
            "--tester",
            "hockey-stick",
            "--json",
        ];
        args.extend_from_slice(extra);
        let o = audit(&args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let all = run(&[]);
    let some = run(&["--only", "laplace-count,randomized-response"]);
    let some = some.as_array().unwrap();
    assert_eq!(some.len(), 2);
    for r in some {
        let same = all
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["mechanism"] == r["mechanism"])
            .unwrap();
        assert_eq!(same, r);
    }
}

/// The detection table on two entries at ε = 1: `laplace-sum-ignores-range` is 10-DP against a
/// 1-DP claim (R = 10); at n = 20 000 the hockey-stick bound on its witness exceeds the claim in
/// every audit of the benchmark runs (margins ≈ 10× the claim's allowance), so 3/3 fails only if
/// three level-0.05 audits of a grossly violating pair all miss (not seen in the runs of
/// docs/benchmarks.md).
/// The correct `laplace-sum` is not asserted on (its cells may hold a β-rate detection). The
/// report is written, read back by `audit report`, and its page shows the table.
#[test]
fn bench_table_counts_detections_and_writes_a_report() {
    let dir = tempfile_dir("bench-table");
    let o = audit(&[
        "bench",
        "table",
        "--only",
        "laplace-sum-ignores-range,laplace-sum",
        "--epsilons",
        "1",
        "--tester",
        "hockey-stick",
        "--repeats",
        "3",
        "--report-dir",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = util::payload(v);
    assert_eq!(v["mode"], "table");
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    let buggy = cells
        .iter()
        .find(|c| c["mechanism"] == "laplace-sum-ignores-range")
        .unwrap();
    assert_eq!(buggy["status"], "buggy");
    assert_eq!(buggy["epsilon"], 1.0);
    assert_eq!(buggy["detections"], 3);
    let run = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.join("audit.json").is_file())
        .expect("a report directory");
    assert!(run.join("table.png").is_file());
    let page = std::fs::read_to_string(run.join("index.html")).unwrap();
    assert!(page.contains("laplace-sum-ignores-range") && page.contains("3/3"));
    let again = audit(&["report", run.join("audit.json").to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempfile_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("dp-audit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn bench_bad_input_exits_two() {
    for args in [
        &["bench", "power", "--samples", "ten"][..],
        &["bench", "power", "--failure-probability", "1.5"][..],
        &["bench", "speed", "--repeats", "0"][..],
        &["bench", "seeds", "--tester", "nope"][..],
        &["bench", "seeds", "--only", "laplace-sun"][..],
        &["bench", "table", "--epsilons", "0"][..],
        &["bench", "table", "--epsilons", "1,x"][..],
        &["bench", "table", "--only", ","][..],
        &["bench", "table", "--repeats", "0"][..],
        &["bench", "table", "--samples", "10"][..],
    ] {
        let o = audit(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("allowed")
                || stderr(&o).contains("nope")
                || stderr(&o).contains("did you mean"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// Issue 49's instruments refuse bad input before starting anything (no busy process, no run):
/// exit 2, the message names the value and what is allowed, and no panic.
#[test]
fn bench_pacing_probe_slow_bad_input_exits_two() {
    for (args, named) in [
        (&["bench", "pacing", "--load", "-1"][..], "--load -1"),
        (&["bench", "pacing", "--load", "65"][..], "--load 65"),
        (&["bench", "pacing", "--only", "s9"][..], "--only s9"),
        (&["bench", "pacing", "--budget", "0"][..], "--budget 0"),
        (&["bench", "probe", "--load", "x"][..], "--load x"),
        (&["bench", "probe", "--clock", "tsc"][..], "--clock tsc"),
        (&["bench", "probe", "--cost-us", "-5"][..], "--cost-us -5"),
        (&["bench", "slow", "--only", "nope"][..], "--only nope"),
        (
            &["bench", "slow", "--load", "-1", "--only", "nope"][..],
            "--only nope",
        ),
    ] {
        let o = audit(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(named) && err.contains("allowed") && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// `audit bench floor` at tiny sizes: it writes the shards it lacks, times the floor (in its
/// process and as a fresh one) and `audit test` per layer, and prints the per-stage profile, whose stages include the parse of
/// the text (read once) and the held-out count. Fails if a stage goes missing or the table
/// loses a row.
#[test]
fn bench_floor_times_the_floor_and_profiles_the_stages() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-floor");
    let _ = std::fs::remove_dir_all(&dir);
    let o = audit(&[
        "bench",
        "floor",
        "--dir",
        dir.to_str().unwrap(),
        "--samples",
        "2000",
        "--threads",
        "1,2",
        "--repeats",
        "1",
        "--profile",
        "2000",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    // 1 size × 2 formats × 2 thread counts.
    assert_eq!(rows.len(), 4, "{v}");
    for r in rows {
        for k in [
            "floor_s",
            "floor_process_s",
            "both_s",
            "mechanism_s",
            "float_s",
        ] {
            assert!(r[k].as_f64().unwrap() > 0.0, "{k} in {r}");
        }
    }
    let profiles = v["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 2, "{v}");
    let stages = |i: usize| -> Vec<String> {
        profiles[i]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s[0].as_str().unwrap().to_string())
            .collect()
    };
    let text = stages(0);
    for stage in [
        "open: read the text",
        "parse text",
        "select the event",
        "count the held-out rows",
        "the ε estimate",
    ] {
        assert!(text.iter().any(|s| s == stage), "{stage} missing: {text:?}");
    }
    // One parse of each text file: the profile shows no line-count pass.
    assert!(!text.iter().any(|s| s == "count the lines"), "{text:?}");
    assert!(dir.join("2000.a.jsonl").exists() && dir.join("2000.b.bin").exists());
}

/// A bad `--formats` value is refused with exit code 2, naming the value and what is allowed.
#[test]
fn bench_floor_refuses_an_unknown_format() {
    let o = audit(&[
        "bench",
        "floor",
        "--dir",
        "/tmp",
        "--formats",
        "csv",
        "--samples",
        "1000",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("csv") && stderr(&o).contains("jsonl, bin"),
        "{}",
        stderr(&o)
    );
}
