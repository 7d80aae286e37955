//! Real DP libraries from PyPI audited through their adapters in `examples/exec/`: IBM's
//! diffprivlib (`diffprivlib_mean.py`) and OpenDP (`opendp_laplace_sum.py`).
//!
//! Ignored (needs the libraries, hence network to install them). Run with
//!
//! ```sh
//! python3 -m venv /tmp/dpvenv
//! /tmp/dpvenv/bin/pip install diffprivlib==0.6.6 "scikit-learn>=1.4,<1.8" opendp==0.16.0
//! DP_AUDIT_PYTHON=/tmp/dpvenv/bin/python \
//!     cargo test --release --test exec_libs -- --ignored --nocapture
//! ```
//!
//! `DP_AUDIT_PYTHON` names the interpreter that has the libraries (default `python3`). A library
//! that does not import is skipped with the reason printed, so the test passes without it.
//!
//! For each library: the correct configuration is not flagged, and a mis-configured one (a claim
//! below the epsilon the library's own parameters give) is flagged.
//!
//! False-failure rates. diffprivlib is seeded from the request, so its audits are deterministic;
//! each "not flagged" audit runs at β = 1e-6, so a correct configuration is flagged with
//! probability ≤ 1e-6 over the seed choice. OpenDP cannot be seeded (its adapter ignores the
//! seed), so its "not flagged" audit is random from run to run: at β = 1e-6 it fails with
//! probability ≤ 1e-6 per run. The "flagged" checks are power checks on gross mis-configurations
//! (true ε twice or ten times the claim) with large margins at these sample sizes.

mod util;

use std::path::PathBuf;
use std::process::Command;

fn python() -> String {
    std::env::var("DP_AUDIT_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/exec")
        .join(name)
}

/// `None` when `module` imports; otherwise the reason it does not.
fn missing(module: &str) -> Option<String> {
    match Command::new(python())
        .args(["-c", &format!("import {module}")])
        .output()
    {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "{} cannot import {module}: {}",
            python(),
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Err(e) => Some(format!("cannot run {}: {e}", python())),
    }
}

fn pairs_file(name: &str, lines: &str) -> String {
    let dir = std::env::temp_dir().join(format!("dp-audit-exec-libs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, lines).unwrap();
    p.to_str().unwrap().to_string()
}

/// Runs `audit run --exec` and returns (exit code, stdout).
fn audit_exec(command: &str, claim: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec![
        "run",
        "--exec",
        command,
        "--claim",
        claim,
        "--finder",
        "fixed",
        "--no-report",
        "--quiet",
        "--failure-probability",
        "1e-6",
    ];
    args.extend_from_slice(extra);
    util::audit_reported(
        &args,
        &format!("`{command}` --claim {claim} {}", extra.join(" ")),
        |out| out.lines().last().unwrap_or("").to_string(),
    )
}

#[test]
#[ignore = "needs diffprivlib (pip); see the module docs for the command"]
fn diffprivlib_mean() {
    if let Some(why) = missing("diffprivlib") {
        println!("SKIPPED diffprivlib_mean: {why}");
        return;
    }
    let script = example("diffprivlib_mean.py");
    // Replace-one pairs of 3 records: the replaced record moves across the whole range [0, 1]
    // (the mean moves by the full sensitivity 1/3), in the middle and at an edge of the range.
    let pairs = pairs_file(
        "dpl_pairs.jsonl",
        "{\"first\": [0.5, 0.5, 0.0], \"second\": [0.5, 0.5, 1.0]}\n\
         {\"first\": [0.0, 0.0, 0.0], \"second\": [0.0, 0.0, 1.0]}\n",
    );
    let common = [
        "--pairs",
        &pairs,
        "--neighbors",
        "replace-one",
        "--record-range",
        "0:1",
        "--samples",
        "20000",
        "--search-samples",
        "2000",
    ];
    let py = python();
    // Correct: epsilon 1, bounds = the record range, claim pure:1.
    let ok = format!("{py} {} --epsilon 1 --bounds 0:1", script.display());
    let (code, out) = audit_exec(&ok, "pure:1", &common);
    assert_eq!(code, 0, "correct diffprivlib mean flagged:\n{out}");
    // Bounds narrower than the records: diffprivlib clips to them, so the claim still holds.
    let clipped = format!("{py} {} --epsilon 1 --bounds 0:0.5", script.display());
    let (code, out) = audit_exec(&clipped, "pure:1", &common);
    assert_eq!(code, 0, "diffprivlib mean with clipping flagged:\n{out}");
    // Mis-configured: the library runs at epsilon 1 but the claim says 0.5.
    let (code, out) = audit_exec(&ok, "pure:0.5", &common);
    assert_eq!(
        code, 1,
        "claim below diffprivlib's epsilon not flagged:\n{out}"
    );
}

#[test]
#[ignore = "needs opendp (pip); see the module docs for the command"]
fn opendp_laplace_sum() {
    if let Some(why) = missing("opendp") {
        println!("SKIPPED opendp_laplace_sum: {why}");
        return;
    }
    let script = example("opendp_laplace_sum.py");
    let py = python();
    // The claim is what OpenDP's privacy map states for one added or removed record.
    let epsilon_of = |args: &str| -> String {
        let o = Command::new(&py)
            .arg(&script)
            .args(args.split_whitespace())
            .arg("--print-epsilon")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    // Correct: bounds 0:1, scale 1; OpenDP says epsilon ≈ 1 (slightly above, for float error).
    let eps = epsilon_of("--bounds 0:1 --scale 1");
    println!("  OpenDP's epsilon for --bounds 0:1 --scale 1: {eps}");
    let pairs = pairs_file(
        "odp_pairs.jsonl",
        "{\"first\": [0.5, 0.5], \"second\": [0.5, 0.5, 1.0]}\n",
    );
    let common = [
        "--pairs",
        &pairs,
        "--record-range",
        "0:1",
        "--samples",
        "20000",
        "--search-samples",
        "2000",
    ];
    let ok = format!("{py} {} --bounds 0:1 --scale 1", script.display());
    let (code, out) = audit_exec(&ok, &format!("pure:{eps}"), &common);
    assert_eq!(code, 0, "correct OpenDP sum flagged:\n{out}");
    // Mis-configured: clamping bounds 0:10 with the scale chosen for records in [0, 1]. OpenDP's
    // own map says epsilon ≈ 10; the user claims pure:1.
    let eps10 = epsilon_of("--bounds 0:10 --scale 1");
    println!("  OpenDP's epsilon for --bounds 0:10 --scale 1: {eps10}");
    let pairs10 = pairs_file(
        "odp_pairs10.jsonl",
        "{\"first\": [5.0, 5.0], \"second\": [5.0, 5.0, 10.0]}\n",
    );
    let wide = format!("{py} {} --bounds 0:10 --scale 1", script.display());
    let (code, out) = audit_exec(
        &wide,
        "pure:1",
        &[
            "--pairs",
            &pairs10,
            "--record-range",
            "0:10",
            "--samples",
            "20000",
            "--search-samples",
            "2000",
        ],
    );
    assert_eq!(
        code, 1,
        "OpenDP sum with the wrong scale for its bounds not flagged:\n{out}"
    );
}
