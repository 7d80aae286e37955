//! Shared helpers for integration tests (ripgrep's tests/util.rs style).

#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs the built `audit` binary with `args` (or the one `DP_AUDIT_BIN` names, e.g. an older
/// build, to see a new test fail before its change).
pub fn audit(args: &[&str]) -> Output {
    let bin = std::env::var_os("DP_AUDIT_BIN")
        .unwrap_or_else(|| std::ffi::OsString::from(env!("CARGO_BIN_EXE_audit")));
    Command::new(bin)
        .args(args)
        .output()
        .expect("the audit binary runs")
}

/// Stdout as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The mode's own result inside a result record (its `section.data`, see docs/json.md), or `v`
/// itself when it is not a record (benchmark rows, the accountant, version 1 and 2 reports).
pub fn payload(v: serde_json::Value) -> serde_json::Value {
    if v.get("schema_version").and_then(|s| s.as_u64()) == Some(3)
        && let Some(data) = v.get("section").and_then(|s| s.get("data"))
    {
        data.clone()
    } else {
        v
    }
}

/// Runs `audit ARGS` for a library adapter's test (those tests are run by hand with
/// `--nocapture`): prints `label`, the exit code, the time taken and `summary` of stdout; fails on
/// any exit but 0 or 1 (a verdict) with stdout and stderr; returns (exit code, stdout).
pub fn audit_reported(
    args: &[&str],
    label: &str,
    summary: impl Fn(&str) -> String,
) -> (i32, String) {
    let t = std::time::Instant::now();
    let o = audit(args);
    let code = o.status.code().unwrap_or(-1);
    let out = stdout(&o);
    println!(
        "  {label}: exit {code} in {:.1} s: {}",
        t.elapsed().as_secs_f64(),
        summary(&out)
    );
    assert!(
        code == 0 || code == 1,
        "audit error:\n{out}\n{}",
        stderr(&o)
    );
    (code, out)
}
