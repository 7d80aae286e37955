//! Benchmark of the exec protocol's overhead (issue target: auditing a trivial Python mechanism
//! at n = 10^5 per side costs < 2× the time Python itself needs to produce the samples).
//!
//! Run with
//!
//! ```sh
//! cargo test --release --test exec_bench -- --ignored --nocapture
//! ```
//!
//! It times, interleaved in the same run so both see the same machine load, with medians of
//! [`REPS`] repetitions:
//! - (a) Python alone: `python3 examples/exec/stdlib_laplace_count.py` on the request for D and
//!   then on the request for D', 10^5 releases each, output to /dev/null (two start-ups, 2×10^5
//!   releases: the samples the audit's confirm phase needs);
//! - (b) `audit run --exec` on the same program at `--samples 100000 --finder fixed` (one pair,
//!   so: one probe request, the exploratory phase of 5 000 releases per side, and the confirming
//!   audit), `--no-report`, default `--exec-batch` and `--jobs`;
//! - (b1) the same with `--jobs 1` (one process at a time);
//! - (b4096) the same with `--exec-batch 4096`, the runner's default chunk and the behaviour
//!   before exec batches existed.
//!
//! It prints the medians and the ratios b/a. It asserts nothing about time (house rule: speed is
//! measured, not asserted); it does assert that every run succeeded with "no violation found".

mod util;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Repetitions of each measurement.
const REPS: usize = 7;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/exec")
        .join(name)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let k = v.len();
    if k % 2 == 1 {
        v[k / 2]
    } else {
        0.5 * (v[k / 2 - 1] + v[k / 2])
    }
}

/// Seconds for python3 to answer one request of `n` releases on `dataset`, output discarded.
fn python_alone(script: &PathBuf, dataset: &str, n: usize, seed: u64) -> f64 {
    let request = format!("{{\"dataset\": {dataset}, \"samples\": {n}, \"seed\": {seed}}}\n");
    let t = Instant::now();
    let mut child = Command::new("python3")
        .arg(script)
        .args(["--epsilon", "1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("python3 runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(request.as_bytes()).unwrap();
    }
    let status = child.wait().unwrap();
    assert!(status.success());
    t.elapsed().as_secs_f64()
}

fn audit_run(command: &str, pairs: &str, extra: &[&str]) -> f64 {
    let mut args = vec![
        "run",
        "--exec",
        command,
        "--claim",
        "pure:1",
        "--samples",
        "100000",
        "--finder",
        "fixed",
        "--pairs",
        pairs,
        "--no-report",
        "--quiet",
    ];
    args.extend_from_slice(extra);
    let t = Instant::now();
    let o = util::audit(&args);
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    assert!(util::stdout(&o).contains("no violation found"));
    secs
}

#[test]
#[ignore = "benchmark; run with --ignored --nocapture"]
fn exec_overhead_against_python_alone() {
    let script = example("stdlib_laplace_count.py");
    let dir = std::env::temp_dir().join(format!("dp-audit-exec-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pairs = dir.join("pairs.jsonl");
    std::fs::write(
        &pairs,
        "{\"first\": [0.5, 0.5], \"second\": [0.5, 0.5, 1.0]}\n",
    )
    .unwrap();
    let pairs = pairs.to_str().unwrap();
    let command = format!("python3 {} --epsilon 1", script.display());

    let (mut a, mut b, mut b1, mut b4096) = (vec![], vec![], vec![], vec![]);
    for r in 0..REPS {
        a.push(
            python_alone(&script, "[0.5, 0.5]", 100_000, r as u64)
                + python_alone(&script, "[0.5, 0.5, 1.0]", 100_000, r as u64 + 1000),
        );
        b.push(audit_run(&command, pairs, &[]));
        b1.push(audit_run(&command, pairs, &["--jobs", "1"]));
        b4096.push(audit_run(&command, pairs, &["--exec-batch", "4096"]));
        eprintln!(
            "rep {r}: python alone {:.3} s, audit {:.3} s, audit --jobs 1 {:.3} s, audit --exec-batch 4096 {:.3} s",
            a[r], b[r], b1[r], b4096[r]
        );
    }
    let (ma, mb, mb1, mb4) = (median(a), median(b), median(b1), median(b4096));
    println!("medians over {REPS} repetitions (wall clock):");
    println!("  (a)     python3 alone, 2 × 10^5 releases      {ma:.3} s");
    println!(
        "  (b)     audit run --exec, default batch/jobs  {mb:.3} s   ratio b/a = {:.2}",
        mb / ma
    );
    println!(
        "  (b1)    audit run --exec --jobs 1             {mb1:.3} s   ratio = {:.2}",
        mb1 / ma
    );
    println!(
        "  (b4096) audit run --exec --exec-batch 4096    {mb4:.3} s   ratio = {:.2}",
        mb4 / ma
    );
    println!("target: ratio (b)/(a) < 2");
}
