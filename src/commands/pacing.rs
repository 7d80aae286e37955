//! `audit bench pacing`: does the default program audit do what its plan says? Each case runs
//! `audit run --exec` with default flags and a time budget, as a separate process, and the row
//! reads the result record: trials planned and run, the time taken against the budget, why the
//! search stopped. The cases are correct programs (a violation found ends a search early by
//! design): the README's textbook Laplace sum and a clamped mean at start-up costs of 0, 0.1
//! and 0.4 s (the cost of importing numpy or a DP library) and at 150 µs per release.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One program of the pacing benchmark.
pub struct PacingCase {
    /// Short name.
    pub id: &'static str,
    /// The command, run from the repository root.
    pub command: &'static str,
    /// The claim.
    pub claim: &'static str,
    /// The record range.
    pub record_range: &'static str,
    /// Records in D.
    pub dataset_size: usize,
}

/// The cases.
pub const CASES: &[PacingCase] = &[
    PacingCase {
        id: "readme-textbook-laplace",
        command: "python3 examples/exec/textbook_laplace_sum.py",
        claim: "pure:1",
        record_range: "-5:5",
        dataset_size: 10,
    },
    PacingCase {
        id: "mean-startup-0",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1",
        claim: "pure:1",
        record_range: "0:10",
        dataset_size: 10,
    },
    PacingCase {
        id: "mean-startup-0.1",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --startup 0.1",
        claim: "pure:1",
        record_range: "0:10",
        dataset_size: 10,
    },
    PacingCase {
        id: "mean-startup-0.4",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --startup 0.4",
        claim: "pure:1",
        record_range: "0:10",
        dataset_size: 10,
    },
    PacingCase {
        id: "mean-150us-per-release",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --cost-us 150",
        claim: "pure:1",
        record_range: "0:10",
        dataset_size: 10,
    },
];

/// One row: how the run kept its plan.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PacingRow {
    /// Case id.
    pub id: String,
    /// The command line run.
    pub command: String,
    /// The budget, seconds.
    pub budget_seconds: f64,
    /// Trials the plan announced.
    pub trials_planned: Option<usize>,
    /// Trials run.
    pub trials_run: Option<usize>,
    /// Wall seconds of the whole `audit run` process.
    pub seconds: f64,
    /// Exit code.
    pub exit: i32,
    /// Why the search stopped.
    pub stopped: Option<String>,
    /// The error line, when the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl PacingRow {
    /// Trials run / trials planned.
    pub fn ratio(&self) -> Option<f64> {
        match (self.trials_run, self.trials_planned) {
            (Some(r), Some(p)) if p > 0 => Some(r as f64 / p as f64),
            _ => None,
        }
    }

    /// The run kept its plan: ≥ 80 % of the planned trials, and a total time within 20 % of
    /// the budget.
    pub fn kept(&self) -> bool {
        self.ratio().is_some_and(|r| r >= 0.8)
            && (self.seconds - self.budget_seconds).abs() <= 0.2 * self.budget_seconds
    }
}

/// Runs `cases` with `--budget budget` (and `extra` flags) from `root`.
pub fn run_pacing(
    cases: &[&PacingCase],
    root: &Path,
    budget: f64,
    seed: u64,
    extra: &[String],
    on_row: &dyn Fn(&PacingRow),
) -> Result<Vec<PacingRow>> {
    let exe: PathBuf = std::env::current_exe()
        .map_err(|e| Error::InvalidConfig(format!("cannot find the audit binary: {e}")))?;
    let mut rows = Vec::new();
    for c in cases {
        let mut args: Vec<String> = vec![
            "run".into(),
            "--exec".into(),
            c.command.into(),
            "--claim".into(),
            c.claim.into(),
            format!("--record-range={}", c.record_range),
            "--dataset-size".into(),
            c.dataset_size.to_string(),
            "--budget".into(),
            crate::mechanisms::math::readable(budget),
            "--seed".into(),
            seed.to_string(),
        ];
        args.extend(extra.iter().cloned());
        let command = format!(
            "audit {}",
            args.iter()
                .map(|a| shlex::try_quote(a).map_or_else(|_| a.clone(), |q| q.into_owned()))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let start = Instant::now();
        let out = Command::new(&exe)
            .current_dir(root)
            .args(&args)
            .args(["--json", "--no-report", "--quiet"])
            .output()
            .map_err(|e| Error::InvalidConfig(format!("cannot run {}: {e}", exe.display())))?;
        let seconds = start.elapsed().as_secs_f64();
        let exit = out.status.code().unwrap_or(-1);
        let record: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
        let effort = record.as_ref().and_then(|r| r.get("effort"));
        let get = |k: &str| effort.and_then(|e| e.get(k)).and_then(|v| v.as_u64());
        let error = (exit != 0 && exit != 1).then(|| super::suite::error_line(&out.stderr));
        let row = PacingRow {
            id: c.id.to_string(),
            command,
            budget_seconds: budget,
            trials_planned: get("trials_planned").map(|v| v as usize),
            trials_run: get("trials_run").map(|v| v as usize),
            seconds,
            exit,
            stopped: effort
                .and_then(|e| e.get("stopped"))
                .and_then(|v| v.as_str())
                .map(str::to_string),
            error,
        };
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// One row of the table.
pub fn render_row(r: &PacingRow) -> String {
    let opt = |v: Option<usize>| v.map_or("-".to_string(), |v| v.to_string());
    format!(
        "{:26} {:>7} {:>7} {:>6} {:>8.1} {:>7.2} {:>4} {:12} {}",
        r.id,
        opt(r.trials_planned),
        opt(r.trials_run),
        r.ratio().map_or("-".to_string(), |x| format!("{x:.2}")),
        r.seconds,
        r.seconds / r.budget_seconds,
        r.exit,
        r.stopped.as_deref().unwrap_or("-"),
        r.error.as_deref().unwrap_or("")
    )
}

/// The table's header.
pub fn header() -> String {
    format!(
        "{:26} {:>7} {:>7} {:>6} {:>8} {:>7} {:>4} {:12}",
        "case", "planned", "run", "ratio", "seconds", "/budget", "exit", "stopped"
    )
}

/// `pacing: K of N runs kept their plan (trials run ≥ 0.8 × planned, time within 20 % of the
/// budget)`, with every command.
pub fn summary(rows: &[PacingRow]) -> String {
    let mut s = String::from("commands:\n");
    for r in rows {
        s += &format!("  {}\n", r.command);
    }
    s += &format!(
        "pacing: {} of {} runs kept their plan (trials run ≥ 0.8 × planned, total time within 20 % of the budget)\n",
        rows.iter().filter(|r| r.kept()).count(),
        rows.len()
    );
    s
}

/// The cases whose id is in `only` (comma-separated), or all.
pub fn select(only: Option<&str>) -> Result<Vec<&'static PacingCase>> {
    let Some(only) = only else {
        return Ok(CASES.iter().collect());
    };
    let keep: Vec<&str> = only.split(',').map(str::trim).collect();
    for k in &keep {
        if !CASES.iter().any(|c| c.id == *k) {
            return Err(Error::InvalidConfig(format!(
                "--only {k}: no such pacing case; allowed: {}",
                CASES.iter().map(|c| c.id).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    Ok(CASES.iter().filter(|c| keep.contains(&c.id)).collect())
}
