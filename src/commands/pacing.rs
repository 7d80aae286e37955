//! `audit bench pacing`: does the default program audit keep to its budget and its plan? Each
//! case runs `audit run --exec` with default flags and a time budget, as a separate process, and
//! the row reads the result record: trials planned and run, pairs scored, the time taken against
//! the budget, why the search stopped, the exit code.
//!
//! The cases are the clamped mean of examples/exec/clamped_mean_min_rows.py at start-ups of 0,
//! 0.5, 1 and 3 s (importing numpy or a DP library) and at 20 µs, 1 ms and 5 ms per release,
//! spent as CPU time (`--clock cpu`: a fixed amount of work, which takes longer on a busy
//! machine, as an import does). Every case but one runs the correct mechanism (`--min-rows 1`),
//! so a violation never ends its search early; `s3-5ms-bug` runs the buggy one (noise sized for
//! 10 rows, true ε = 10 on D = [] vs [10]) at the slowest setting, where a search that scores
//! one or two pairs misses it. With `--load K` ([`super::load`]) K busy processes spin on the
//! CPU for the whole benchmark. The same runner serves `audit bench slow` ([`super::slow`]).
//!
//! A row passes ([`PacingRow::pass`]) when the run took at most 1.1 × the budget + 5 s, ran at
//! least 80 % of the trials it planned or stopped on a violation found, and exited as expected
//! (0 for a correct program, 1 for a buggy one).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One program of the pacing benchmark.
pub struct PacingCase {
    /// Short name: start-up and per-release cost.
    pub id: &'static str,
    /// The command, run from the repository root.
    pub command: &'static str,
    /// The program's start-up, CPU seconds.
    pub startup_seconds: f64,
    /// The program's cost per release, CPU seconds.
    pub seconds_per_release: f64,
    /// The exit code a sound audit gives: 0 (correct program) or 1 (buggy).
    pub expect_exit: i32,
}

/// The pacing cases: start-ups 0, 0.5, 1, 3 s against 20 µs, 1 ms, 5 ms per release (not the
/// whole cross product), and the buggy mean at the slowest setting.
pub const CASES: &[PacingCase] = &[
    PacingCase {
        id: "s0-20us",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --clock cpu --cost-us 20",
        startup_seconds: 0.0,
        seconds_per_release: 20e-6,
        expect_exit: 0,
    },
    PacingCase {
        id: "s0-1ms",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --clock cpu --cost-us 1000",
        startup_seconds: 0.0,
        seconds_per_release: 1e-3,
        expect_exit: 0,
    },
    PacingCase {
        id: "s0.5-20us",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --clock cpu --startup 0.5 --cost-us 20",
        startup_seconds: 0.5,
        seconds_per_release: 20e-6,
        expect_exit: 0,
    },
    PacingCase {
        id: "s0.5-5ms",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --clock cpu --startup 0.5 --cost-us 5000",
        startup_seconds: 0.5,
        seconds_per_release: 5e-3,
        expect_exit: 0,
    },
    PacingCase {
        id: "s1-1ms",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --clock cpu --startup 1 --cost-us 1000",
        startup_seconds: 1.0,
        seconds_per_release: 1e-3,
        expect_exit: 0,
    },
    PacingCase {
        id: "s3-20us",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --clock cpu --startup 3 --cost-us 20",
        startup_seconds: 3.0,
        seconds_per_release: 20e-6,
        expect_exit: 0,
    },
    PacingCase {
        id: "s3-5ms",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 1 --clock cpu --startup 3 --cost-us 5000",
        startup_seconds: 3.0,
        seconds_per_release: 5e-3,
        expect_exit: 0,
    },
    PacingCase {
        id: "s3-5ms-bug",
        command: "python3 examples/exec/clamped_mean_min_rows.py --min-rows 10 --clock cpu --startup 3 --cost-us 5000",
        startup_seconds: 3.0,
        seconds_per_release: 5e-3,
        expect_exit: 1,
    },
];

/// What one `audit run --exec` of a benchmark needs: the program and its data description.
#[derive(Clone, Debug)]
pub struct CaseSpec {
    /// Short name.
    pub id: String,
    /// The command, run from the repository root.
    pub command: String,
    /// The claim, as `--claim` spells it.
    pub claim: String,
    /// `LO:HI`.
    pub record_range: String,
    /// Records in D.
    pub dataset_size: usize,
    /// `--neighbors`, when not the default.
    pub neighbors: Option<String>,
    /// `correct` or `buggy`.
    pub status: String,
    /// The exit code a sound audit gives: 0 (correct program) or 1 (buggy).
    pub expect_exit: i32,
}

impl From<&PacingCase> for CaseSpec {
    fn from(c: &PacingCase) -> Self {
        CaseSpec {
            id: c.id.to_string(),
            command: c.command.to_string(),
            claim: "pure:1".into(),
            record_range: "0:10".into(),
            dataset_size: 10,
            neighbors: None,
            status: if c.expect_exit == 1 {
                "buggy".into()
            } else {
                "correct".into()
            },
            expect_exit: c.expect_exit,
        }
    }
}

/// One row: how the run kept its budget and its plan.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PacingRow {
    /// Case id.
    pub id: String,
    /// The command line run.
    pub command: String,
    /// `correct` or `buggy`.
    #[serde(default)]
    pub status: String,
    /// Busy processes running beside it (`--load`).
    #[serde(default)]
    pub load: usize,
    /// The budget, seconds.
    pub budget_seconds: f64,
    /// Trials the plan announced.
    pub trials_planned: Option<usize>,
    /// Trials run.
    pub trials_run: Option<usize>,
    /// Pairs scored.
    #[serde(default)]
    pub pairs_scored: Option<usize>,
    /// Wall seconds of the whole `audit run` process.
    pub seconds: f64,
    /// Exit code.
    pub exit: i32,
    /// The exit code a sound audit gives.
    #[serde(default)]
    pub expect_exit: i32,
    /// Why the search stopped.
    pub stopped: Option<String>,
    /// The error line, when the run failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// [`time_ok`]: seconds ≤ 1.1 × budget + 5.
    #[serde(default)]
    pub time_ok: bool,
    /// [`PacingRow::plan_ok`]: trials run ≥ 0.8 × planned, or a violation found.
    #[serde(default)]
    pub plan_ok: bool,
    /// [`PacingRow::pass`]: time, plan and exit code all as they should be.
    #[serde(default)]
    pub pass: bool,
}

/// The time criterion: a run may overrun its budget by 10 % plus 5 s (the process's own start,
/// the report, a last call stopped at the deadline).
pub fn time_ok(seconds: f64, budget: f64) -> bool {
    seconds <= 1.1 * budget + 5.0
}

impl PacingRow {
    /// Trials run / trials planned.
    pub fn ratio(&self) -> Option<f64> {
        match (self.trials_run, self.trials_planned) {
            (Some(r), Some(p)) if p > 0 => Some(r as f64 / p as f64),
            _ => None,
        }
    }

    /// The run kept its plan: ≥ 80 % of the planned trials, or it stopped because it found a
    /// violation (exit 1: a search ends early by design then).
    pub fn plan_ok(&self) -> bool {
        self.exit == 1 || self.ratio().is_some_and(|r| r >= 0.8)
    }

    /// The row passes: [`time_ok`], [`PacingRow::plan_ok`], and the exit code expected.
    pub fn pass(&self) -> bool {
        time_ok(self.seconds, self.budget_seconds)
            && self.plan_ok()
            && self.exit == self.expect_exit
    }

    /// Fills `time_ok`, `plan_ok` and `pass` from the measured fields.
    pub fn judged(mut self) -> Self {
        self.time_ok = time_ok(self.seconds, self.budget_seconds);
        self.plan_ok = self.plan_ok();
        self.pass = self.pass();
        self
    }
}

/// The `audit run` arguments of one case.
pub fn run_args(c: &CaseSpec, budget: f64, seed: u64, extra: &[String]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "run".into(),
        "--exec".into(),
        c.command.clone(),
        "--claim".into(),
        c.claim.clone(),
        format!("--record-range={}", c.record_range),
        "--dataset-size".into(),
        c.dataset_size.to_string(),
    ];
    if let Some(n) = &c.neighbors {
        args.extend(["--neighbors".into(), n.clone()]);
    }
    args.extend([
        "--budget".into(),
        crate::mechanisms::math::readable(budget),
        "--seed".into(),
        seed.to_string(),
    ]);
    args.extend(extra.iter().cloned());
    args
}

/// Runs `cases` with `--budget budget` (and `extra` flags) from `root`, `load` busy processes
/// running beside them (started by the caller; the number is recorded in each row).
pub fn run_cases(
    cases: &[CaseSpec],
    root: &Path,
    budget: f64,
    seed: u64,
    extra: &[String],
    load: usize,
    on_row: &dyn Fn(&PacingRow),
) -> Result<Vec<PacingRow>> {
    let exe: PathBuf = std::env::current_exe()
        .map_err(|e| Error::InvalidConfig(format!("cannot find the audit binary: {e}")))?;
    let mut rows = Vec::new();
    for c in cases {
        let args = run_args(c, budget, seed, extra);
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
        let get = |k: &str| {
            effort
                .and_then(|e| e.get(k))
                .and_then(|v| v.as_u64())
                .map(|v| v as usize)
        };
        let error = (exit != 0 && exit != 1).then(|| super::suite::error_line(&out.stderr));
        let row = PacingRow {
            id: c.id.clone(),
            command,
            status: c.status.clone(),
            load,
            budget_seconds: budget,
            trials_planned: get("trials_planned"),
            trials_run: get("trials_run"),
            pairs_scored: get("pairs_scored"),
            seconds,
            exit,
            expect_exit: c.expect_exit,
            stopped: effort
                .and_then(|e| e.get("stopped"))
                .and_then(|v| v.as_str())
                .map(str::to_string),
            error,
            time_ok: false,
            plan_ok: false,
            pass: false,
        }
        .judged();
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

fn opt(v: Option<usize>) -> String {
    v.map_or("-".to_string(), |v| v.to_string())
}

/// One row of the table.
pub fn render_row(r: &PacingRow) -> String {
    format!(
        "{:24} {:>4} {:>7} {:>7} {:>6} {:>5} {:>8.1} {:>7.2} {:>4} {:>6} {:12} {}{}",
        r.id,
        r.load,
        opt(r.trials_planned),
        opt(r.trials_run),
        r.ratio().map_or("-".to_string(), |x| format!("{x:.2}")),
        opt(r.pairs_scored),
        r.seconds,
        r.seconds / r.budget_seconds,
        r.exit,
        r.expect_exit,
        r.stopped.as_deref().unwrap_or("-"),
        if r.pass { "PASS" } else { "FAIL" },
        r.error
            .as_deref()
            .map_or(String::new(), |e| format!(" ({e})"))
    )
}

/// The table's header.
pub fn header() -> String {
    format!(
        "{:24} {:>4} {:>7} {:>7} {:>6} {:>5} {:>8} {:>7} {:>4} {:>6} {:12} {}",
        "case",
        "load",
        "planned",
        "run",
        "ratio",
        "pairs",
        "seconds",
        "/budget",
        "exit",
        "expect",
        "stopped",
        "criterion"
    )
}

/// The criterion in words.
pub const CRITERION: &str =
    "seconds ≤ 1.1 × budget + 5, trials run ≥ 0.8 × planned or a violation found, exit as expected";

/// The commands, then `pacing: P of N rows PASS (…) at load K; T of N within the time`.
pub fn summary(rows: &[PacingRow], load: usize) -> String {
    let mut s = String::from("commands:\n");
    for r in rows {
        s += &format!("  {}\n", r.command);
    }
    s += &format!(
        "pacing: {} of {} rows PASS ({CRITERION}) at load {load}; {} within the time, {} kept the plan\n",
        rows.iter().filter(|r| r.pass).count(),
        rows.len(),
        rows.iter().filter(|r| r.time_ok).count(),
        rows.iter().filter(|r| r.plan_ok).count(),
    );
    s
}

/// Parses `--only a,b`: each id must be in `ids` (an unknown one is an error naming it and the
/// ids allowed); `None` keeps all. Returns the kept ids in `ids`' order.
pub fn select_ids<'a>(flag_value: Option<&str>, ids: &[&'a str]) -> Result<Vec<&'a str>> {
    let Some(only) = flag_value else {
        return Ok(ids.to_vec());
    };
    let keep: Vec<&str> = only
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    if keep.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "--only {only:?}; allowed: comma-separated case ids: {}",
            ids.join(", ")
        )));
    }
    for k in &keep {
        if !ids.contains(k) {
            return Err(Error::InvalidConfig(format!(
                "--only {k}: no such case; allowed: {}",
                ids.join(", ")
            )));
        }
    }
    Ok(ids.iter().copied().filter(|i| keep.contains(i)).collect())
}

/// The pacing cases whose id is in `only` (comma-separated), or all.
pub fn select(only: Option<&str>) -> Result<Vec<&'static PacingCase>> {
    let ids: Vec<&str> = CASES.iter().map(|c| c.id).collect();
    let keep = select_ids(only, &ids)?;
    Ok(CASES.iter().filter(|c| keep.contains(&c.id)).collect())
}

/// Reads `--budget`: seconds from 1 to 86 400.
pub fn check_budget(budget: f64) -> Result<()> {
    if budget.is_finite() && (1.0..=86_400.0).contains(&budget) {
        Ok(())
    } else {
        Err(Error::InvalidConfig(format!(
            "--budget {budget}; allowed: 1 to 86400 seconds"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(planned: Option<usize>, run: Option<usize>, seconds: f64, exit: i32) -> PacingRow {
        PacingRow {
            id: "x".into(),
            command: "audit run".into(),
            status: "correct".into(),
            load: 0,
            budget_seconds: 60.0,
            trials_planned: planned,
            trials_run: run,
            pairs_scored: None,
            seconds,
            exit,
            expect_exit: 0,
            stopped: None,
            error: None,
            time_ok: false,
            plan_ok: false,
            pass: false,
        }
        .judged()
    }

    #[test]
    fn time_criterion_is_ten_percent_plus_five_seconds() {
        assert!(time_ok(71.0, 60.0));
        assert!(!time_ok(71.01, 60.0));
        assert!(time_ok(27.0, 20.0));
        assert!(!time_ok(27.5, 20.0));
    }

    #[test]
    fn plan_criterion_and_pass() {
        assert!(row(Some(100), Some(80), 60.0, 0).pass);
        assert!(!row(Some(100), Some(79), 60.0, 0).pass);
        assert!(!row(Some(100), Some(100), 72.0, 0).pass, "too slow");
        // No plan in the record (the run failed): never passes.
        assert!(!row(None, None, 1.0, 2).pass);
        // A violation found ends the search early by design: the plan criterion holds...
        let mut bug = row(Some(100), Some(5), 10.0, 1);
        assert!(
            bug.plan_ok && !bug.pass,
            "...but exit 1 on a correct program is a failure"
        );
        bug.expect_exit = 1;
        assert!(bug.judged().pass);
    }

    #[test]
    fn only_names_the_unknown_id_and_the_allowed_ones() {
        assert_eq!(select(None).unwrap().len(), CASES.len());
        let two = select(Some("s3-5ms, s0-20us")).unwrap();
        assert_eq!(
            two.iter().map(|c| c.id).collect::<Vec<_>>(),
            ["s0-20us", "s3-5ms"]
        );
        let e = select(Some("s0-20us,s9")).err().unwrap().to_string();
        assert!(e.contains("--only s9") && e.contains("s3-5ms-bug"), "{e}");
        assert!(select(Some(",")).is_err());
    }

    #[test]
    fn cases_span_the_startups_and_costs_asked_for() {
        for s in [0.0, 0.5, 1.0, 3.0] {
            assert!(CASES.iter().any(|c| c.startup_seconds == s), "start-up {s}");
        }
        for p in [20e-6, 1e-3, 5e-3] {
            assert!(CASES.iter().any(|c| c.seconds_per_release == p), "{p}");
        }
        assert!(
            CASES
                .iter()
                .any(|c| c.startup_seconds == 3.0 && c.seconds_per_release == 5e-3)
        );
        assert!(
            CASES
                .iter()
                .any(|c| c.startup_seconds == 0.0 && c.seconds_per_release == 20e-6)
        );
        // Each command spends what its row says it does.
        for c in CASES {
            let startup = if c.startup_seconds > 0.0 {
                format!(
                    "--startup {}",
                    crate::mechanisms::math::readable(c.startup_seconds)
                )
            } else {
                String::new()
            };
            assert!(c.command.contains(&startup) && c.command.contains("--clock cpu"));
            let us = format!("--cost-us {}", (c.seconds_per_release * 1e6).round());
            assert!(c.command.contains(&us), "{}: {us}", c.id);
        }
    }

    #[test]
    fn budget_is_checked() {
        assert!(check_budget(20.0).is_ok());
        for b in [0.5, -1.0, f64::NAN, 1e6] {
            let e = check_budget(b).unwrap_err().to_string();
            assert!(e.contains("--budget") && e.contains("1 to 86400"), "{e}");
        }
    }
}
