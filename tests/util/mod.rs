//! Shared helpers for integration tests (ripgrep's tests/util.rs style).

#![allow(dead_code)]

use std::process::{Command, Output};

/// Runs the built `audit` binary with `args`.
pub fn audit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_audit"))
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
