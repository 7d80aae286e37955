//! `audit bench suite`: the real-world suite (tests/suite/cases.json) run through `audit run
//! --exec` with the data description and the claim only, as a new user would run it.
//!
//! Each case runs in a child process of this same binary (`std::env::current_exe`), so the
//! defaults measured are exactly the command line's, and a case that crashes or hangs cannot take
//! the table down with it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One case of the manifest.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct SuiteCase {
    /// Stable id.
    pub id: String,
    /// The command speaking the exec protocol, run from the repository root.
    pub command: String,
    /// The claim, as `--claim` spells it.
    pub claim: String,
    /// `LO:HI`.
    pub record_range: String,
    /// Record dimension.
    pub record_dim: usize,
    /// Records in D.
    pub dataset_size: usize,
    /// `add-remove`, `replace-one` or `zero-out`.
    pub neighbors: String,
    /// `buggy` or `correct`.
    pub status: String,
    /// Kind of bug, short.
    #[serde(default)]
    pub kind: String,
}

/// What one case gave.
#[derive(Clone, Debug, Serialize)]
pub struct SuiteRow {
    /// The case.
    pub id: String,
    /// `buggy` or `correct`.
    pub status: String,
    /// Kind of bug.
    pub kind: String,
    /// Exit code of `audit run`: 0 no violation, 1 violation, 2 error.
    pub exit: i32,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// The error line of stderr when the run failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Reads the manifest.
pub fn read_cases(path: &Path) -> Result<Vec<SuiteCase>> {
    let text = crate::sources::text::read_text(path)
        .map_err(|e| Error::InvalidConfig(format!("--cases {}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        Error::InvalidConfig(format!(
            "--cases {}: not a suite manifest ({e})",
            path.display()
        ))
    })
}

/// Runs every case (or those whose id is in `only`) with `samples` releases per side and
/// `extra` flags appended, from directory `root`.
pub fn run_suite(
    cases: &[SuiteCase],
    root: &Path,
    samples: usize,
    seed: u64,
    extra: &[String],
    on_row: &dyn Fn(&SuiteRow),
) -> Result<Vec<SuiteRow>> {
    let exe: PathBuf = std::env::current_exe()
        .map_err(|e| Error::InvalidConfig(format!("cannot find the audit binary: {e}")))?;
    let mut rows = Vec::new();
    for c in cases {
        let start = Instant::now();
        let out = Command::new(&exe)
            .current_dir(root)
            .args(["run", "--exec", &c.command, "--claim", &c.claim])
            .arg(format!("--record-range={}", c.record_range))
            .args(["--record-dim", &c.record_dim.to_string()])
            .args(["--dataset-size", &c.dataset_size.to_string()])
            .args(["--neighbors", &c.neighbors])
            .args(["--samples", &samples.to_string()])
            .args(["--seed", &seed.to_string()])
            .args(["--json", "--no-report", "--quiet"])
            .args(extra)
            .output()
            .map_err(|e| Error::InvalidConfig(format!("cannot run {}: {e}", exe.display())))?;
        let exit = out.status.code().unwrap_or(-1);
        let error = (exit != 0 && exit != 1).then(|| error_line(&out.stderr));
        let row = SuiteRow {
            id: c.id.clone(),
            status: c.status.clone(),
            kind: c.kind.clone(),
            exit,
            seconds: start.elapsed().as_secs_f64(),
            error,
        };
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// The line of a failed run's stderr that says what went wrong (the first naming an error, else
/// the last).
pub fn error_line(stderr: &[u8]) -> String {
    let err = String::from_utf8_lossy(stderr);
    err.lines()
        .find(|l| l.contains("error"))
        .or(err.lines().last())
        .unwrap_or("")
        .to_string()
}

/// `suite: caught B/NB buggy, flagged F/NC correct`.
pub fn summary(rows: &[SuiteRow]) -> String {
    let buggy: Vec<_> = rows.iter().filter(|r| r.status == "buggy").collect();
    let correct: Vec<_> = rows.iter().filter(|r| r.status != "buggy").collect();
    format!(
        "suite: caught {}/{} buggy, flagged {}/{} correct",
        buggy.iter().filter(|r| r.exit == 1).count(),
        buggy.len(),
        correct.iter().filter(|r| r.exit == 1).count(),
        correct.len()
    )
}

/// One table line.
pub fn render_row(r: &SuiteRow) -> String {
    let verdict = match r.exit {
        0 => "no violation found",
        1 => "violation found",
        _ => "error",
    };
    let mut s = format!(
        "{:42} {:8} {:30} {:>4} {:7.1}  {verdict}",
        r.id, r.status, r.kind, r.exit, r.seconds
    );
    if let Some(e) = &r.error {
        let _ = write!(s, ": {e}");
    }
    s
}
