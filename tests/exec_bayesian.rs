//! Bayesian DP (`--claim bdp:EPS:DELTA --data FILE`) of exec programs: the correct Gaussian sum
//! of `examples/exec/bdp_gaussian_sum.py` is not flagged and its twin whose noise is calibrated
//! for the in-distribution records only is caught, under both definitions; the flags' errors.
//!
//! False-failure rate: every audit of the correct program runs at β = 1e-3, so each of its
//! assertions fails with probability ≤ 1e-3 for a sound test (4 of them here, with the
//! text-report and shard tests: ≤ 4e-3 in all).
//! Power (measured at seed 0, n = 20 000 draws per side): the twin's bound is 4.5e-2 under
//! either definition against δ_μ = 1.41e-2 allowed (its E_{x'} H_e(M(D') ‖ M(D)) is 7.5e-2,
//! exact, scipy); the held-out event {w ≥ 1.92} has 1777 against 284 of 16 000 releases, far
//! beyond the Poisson noise (≈ 17), so a miss is not expected at any seed.

mod util;

use util::{audit, stderr, stdout};

fn path(p: &str) -> String {
    format!("{}/{p}", env!("CARGO_MANIFEST_DIR"))
}

/// `audit run --exec PROGRAM --claim bdp:1:0.0141` on the small data file, Definition `def`,
/// as JSON.
fn run(program: &str, def: &str, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let exec = format!("python3 {}", path(&format!("examples/exec/{program}")));
    let data = path("examples/bdp-data-small.txt");
    let mut args = vec![
        "run",
        "--exec",
        &exec,
        // δ_μ of the σ = 1 Gaussian sum for this data at ε = 1 is 1.4088e-2 (exact, scipy),
        // rounded up.
        "--claim",
        "bdp:1:0.0141",
        "--data",
        &data,
        "--record-range",
        "0:1",
        "--dataset-size",
        "3",
        "--bdp-definition",
        def,
        "--failure-probability",
        "1e-3",
        "--json",
        "--no-report",
    ];
    args.extend_from_slice(extra);
    let o = audit(&args);
    let v = util::payload(serde_json::from_str(&stdout(&o)).unwrap_or(serde_json::Value::Null));
    (o.status.code(), v, stderr(&o))
}

#[test]
fn correct_program_passes_and_its_twin_is_caught_under_both_definitions() {
    for def in ["1", "2"] {
        let (code, v, err) = run("bdp_gaussian_sum.py", def, &["--samples", "20000"]);
        assert_eq!(code, Some(0), "definition {def}: {err}");
        let b = &v["bayesian"];
        let label = b["definition"].as_str().unwrap_or_default();
        assert!(label.starts_with(&format!("Definition {def}")), "{label}");
        // Every x' sent to the program is recorded, with its draws on each side.
        let drawn = b["drawn"].as_array().unwrap();
        let total: u64 = drawn.iter().map(|d| d["second"].as_u64().unwrap()).sum();
        assert_eq!(total, 20_000);
        assert!(drawn.len() <= 20, "{}", drawn.len());
        let (code, v, err) = run(
            "bdp_gaussian_sum_ignores_outliers.py",
            def,
            &["--samples", "20000"],
        );
        assert_eq!(code, Some(1), "definition {def}: {err} {v}");
        let bound = v["bounds"][0]["value"].as_f64().unwrap();
        assert!(bound > 0.0141, "{bound}");
    }
}

/// `--group 2` on the correct program (the per-record claim (1, 0.0141) implies (2, 0.0767) for
/// two records; its true group divergence is far below), with many datasets per request: not
/// flagged (β = 1e-3), every release on the second side carried two records, and the record
/// names the group claim tested.
#[test]
fn group_of_two_on_a_program() {
    let (code, v, err) = run(
        "bdp_gaussian_sum.py",
        "1",
        &[
            "--samples",
            "20000",
            "--group",
            "2",
            "--exec-datasets",
            "5000",
        ],
    );
    assert_eq!(code, Some(0), "{err}");
    let b = &v["bayesian"];
    assert_eq!(b["group"]["records"], 2, "{b}");
    let dk = b["group"]["delta"].as_f64().unwrap();
    assert!(dk >= 2.0 * 1f64.exp() * 0.0141, "{dk}");
    assert_eq!(v["bounds"][0]["allowed"].as_f64().unwrap(), dk);
    let total: u64 = b["drawn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["second"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 40_000);
    assert!(b["features"].as_str().unwrap().contains("x'_1 + … + x'_2"));
}

/// The text report names the definition; Definition 2's features are the output alone.
#[test]
fn text_report_names_the_definition() {
    let exec = format!("python3 {}", path("examples/exec/bdp_gaussian_sum.py"));
    let data = path("examples/bdp-data-small.txt");
    let o = audit(&[
        "run",
        "--exec",
        &exec,
        "--claim",
        "bdp:1:0.0141",
        "--data",
        &data,
        "--samples",
        "2000",
        "--bdp-definition",
        "2",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("Definition 2 (weak BDP, events on the output only)"),
        "{s}"
    );
    assert!(s.contains("[w (dimension 1)] only"), "{s}");
}

/// Bad flags exit 2 naming the value and what is allowed.
#[test]
fn flag_errors() {
    let exec = format!("python3 {}", path("examples/exec/bdp_gaussian_sum.py"));
    let data = path("examples/bdp-data-small.txt");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "--claim",
                "bdp:1:0.01",
                "--data",
                &data,
                "--bdp-definition",
                "3",
            ],
            "--bdp-definition 3",
        ),
        (vec!["--claim", "bdp:1:0.01"], "--data FILE"),
        (
            vec!["--claim", "pure:1", "--draw-dataset"],
            "--draw-dataset applies to a Bayesian DP claim",
        ),
        (
            vec!["--claim", "bdp:1:0.01", "--data", &data, "--trials", "3"],
            "--trials applies to a dataset search",
        ),
        (
            vec![
                "--claim",
                "bdp:1:0.01",
                "--data",
                &data,
                "--neighbors",
                "zero-out",
            ],
            "zero-out",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["run", "--exec", exec.as_str(), "--no-report"];
        args.extend(extra.iter().copied());
        let o = audit(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{extra:?}: {}", stderr(&o));
    }
}

/// `--draw-dataset` with an exec program: one request per release (400 processes here, about
/// 45 s on 2 cores), so ignored by default. Plumbing only: the report says the dataset was drawn
/// and counts one call per release; the verdict on the correct program is a no-violation with
/// probability ≥ 1 − 1e-3.
#[test]
#[ignore = "one exec request per release: about 45 s"]
fn draw_dataset_over_exec() {
    let (code, v, err) = run(
        "bdp_gaussian_sum.py",
        "1",
        &["--samples", "200", "--draw-dataset"],
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        v["bayesian"]["dataset_drawn"],
        serde_json::Value::Bool(true)
    );
    assert_eq!(v["mechanism_calls"].as_u64(), Some(400));
}

/// `--draw-dataset` with `--exec-datasets`: the program reads requests of many datasets, so 200
/// draws per side take one process per side (2 calls), not 400; the same seed gives the same
/// record. The verdict on the correct program is a no-violation with probability ≥ 1 − 1e-3.
#[test]
fn draw_dataset_over_exec_with_many_datasets_per_request() {
    let extra = [
        "--samples",
        "200",
        "--draw-dataset",
        "--exec-datasets",
        "1000",
    ];
    let (code, v, err) = run("bdp_gaussian_sum.py", "1", &extra);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        v["bayesian"]["dataset_drawn"],
        serde_json::Value::Bool(true)
    );
    assert_eq!(v["mechanism_calls"].as_u64(), Some(2));
    let (_, again, _) = run("bdp_gaussian_sum.py", "1", &extra);
    assert_eq!(v, again);
    // A program that reads one dataset per request is told so, before any audit.
    let exec = format!("python3 {}", path("examples/exec/stdlib_laplace_count.py"));
    let data = path("examples/bdp-data-small.txt");
    let o = audit(&[
        "run",
        "--exec",
        &exec,
        "--claim",
        "bdp:1:0.0141",
        "--data",
        &data,
        "--record-range",
        "0:1",
        "--draw-dataset",
        "--exec-datasets",
        "100",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("--exec-datasets 100: the program did not answer a request of two datasets")
            && e.contains("leave --exec-datasets out"),
        "{e}"
    );
}

/// Soundness sweep over exec: the correct program at the boundary of Definition 1's tested
/// null, δ = E_{x'} H_e(N(x', 1) ‖ N(0, 1)) = 5.4842e-3 for examples/bdp-data-small.txt (exact,
/// scipy; rounded up to 5.485e-3), n = 2000 draws per side, β = 0.05, seeds 0..AUDIT_SEED_SWEEP
/// (default 200). An exact level-β test rejects with probability ≤ 0.05 per seed; k ≤ 27 per
/// 200 seeds fails with probability < 1e-6 when that holds (P[Bin(200, 0.05) ≥ 28] < 1e-6).
#[test]
#[ignore = "soundness sweep: AUDIT_SEED_SWEEP=200, minutes"]
fn soundness_sweep_over_exec() {
    sweep_over_exec(&[], "exec");
    // The rest of the dataset drawn too, many datasets per request: the tested null's boundary
    // is the same E_{x'} H_e (the drawn records shift both sides alike); measured 0/200.
    sweep_over_exec(
        &["--draw-dataset", "--exec-datasets", "5000"],
        "exec, --draw-dataset --exec-datasets",
    );
}

fn sweep_over_exec(extra: &[&str], what: &str) {
    let seeds: u64 = std::env::var("AUDIT_SEED_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let exec = format!("python3 {}", path("examples/exec/bdp_gaussian_sum.py"));
    let data = path("examples/bdp-data-small.txt");
    let mut k = 0;
    for seed in 0..seeds {
        let seed = seed.to_string();
        let mut args = vec![
            "run",
            "--exec",
            &exec,
            "--claim",
            "bdp:1:5.485e-3",
            "--data",
            &data,
            "--samples",
            "2000",
            "--failure-probability",
            "0.05",
            "--seed",
            &seed,
            "--no-report",
            "--quiet",
        ];
        args.extend_from_slice(extra);
        let o = audit(&args);
        match o.status.code() {
            Some(0) => {}
            Some(1) => k += 1,
            other => panic!("seed {seed}: exit {other:?}: {}", stderr(&o)),
        }
    }
    eprintln!("{what}: rejections at the boundary {k}/{seeds} at β = 0.05");
    assert!(k as f64 <= 27.0 * seeds as f64 / 200.0, "{k}/{seeds}");
}

/// Shards of an exec program: `audit sample --exec --bdp-data --data D` then `audit test`: the
/// correct program passes and the twin is caught (measured at shard seed 0: bound 5.1e-2
/// against 1.41e-2), at β = 1e-3 (the correct program's assertion fails with probability
/// ≤ 1e-3); --exec without --data (the rest D) exits 2 naming it.
#[test]
fn exec_shards() {
    let dir = std::env::temp_dir().join(format!("dp-audit-bdp-exec-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.join("d.txt");
    std::fs::write(&d, "0.5\n0.5\n0.5\n").unwrap();
    let data = path("examples/bdp-data-small.txt");
    for (program, want) in [
        ("bdp_gaussian_sum.py", 0),
        ("bdp_gaussian_sum_ignores_outliers.py", 1),
    ] {
        let exec = format!("python3 {}", path(&format!("examples/exec/{program}")));
        let mut files = Vec::new();
        for side in ["a", "b"] {
            let out = dir.join(format!("{program}-{side}.jsonl"));
            let out_s = out.to_str().unwrap().to_string();
            let o = audit(&[
                "sample",
                "--exec",
                &exec,
                "--data",
                d.to_str().unwrap(),
                "--bdp-data",
                &data,
                "--side",
                side,
                "--shard-index",
                "0",
                "--samples",
                "20000",
                "--out",
                &out_s,
                "--force",
            ]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            files.push(out_s);
        }
        let o = audit(&[
            "test",
            "--claim",
            "bdp:1:0.0141",
            "--samples-a",
            &files[0],
            "--samples-b",
            &files[1],
            "--failure-probability",
            "1e-3",
            "--no-report",
        ]);
        assert_eq!(
            o.status.code(),
            Some(want),
            "{program}: {}{}",
            stdout(&o),
            stderr(&o)
        );
    }
    let exec = format!("python3 {}", path("examples/exec/bdp_gaussian_sum.py"));
    let out = dir.join("x.jsonl");
    let o = audit(&[
        "sample",
        "--exec",
        &exec,
        "--bdp-data",
        &data,
        "--side",
        "a",
        "--shard-index",
        "0",
        "--samples",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs --data FILE"), "{}", stderr(&o));
}
