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
