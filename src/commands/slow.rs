//! `audit bench slow`: the slow-program suite (examples/exec/slow/cases.json). Stand-ins for
//! DP-library pipelines, standard-library Python: 0.5 to 3 s of start-up spent as CPU (as an
//! import spends it), 1 to 6 ms of CPU per release, and bugs that only structured datasets show
//! (small, near-constant, all-small, or holding the range's top), each beside its correct twin
//! (`--fixed`). Each program's docstring derives its true guarantee.
//!
//! Every case runs `audit run --exec … --claim … --record-range … --dataset-size …` with
//! default flags and `--budget` (the runner of [`super::pacing`]), optionally under `--load K`;
//! a buggy program must be caught (exit 1), a correct twin must not be (exit 0).

use super::pacing::{CaseSpec, PacingRow};
use super::suite::SuiteCase;
use crate::error::{Error, Result};

/// The benchmark's cases from a suite manifest (the format of tests/suite/cases.json), those
/// whose id is in `only` or all. Record dimension 1 only (every slow program's).
pub fn specs(cases: &[SuiteCase], only: Option<&str>) -> Result<Vec<CaseSpec>> {
    let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    let keep = super::pacing::select_ids(only, &ids)?;
    cases
        .iter()
        .filter(|c| keep.contains(&c.id.as_str()))
        .map(|c| {
            let expect_exit = match c.status.as_str() {
                "buggy" => 1,
                "correct" => 0,
                other => {
                    return Err(Error::InvalidConfig(format!(
                        "case {}: status {other:?}; allowed: \"buggy\" or \"correct\"",
                        c.id
                    )));
                }
            };
            if c.record_dim != 1 {
                return Err(Error::InvalidConfig(format!(
                    "case {}: record_dim {}; allowed: 1 (the slow suite's programs read numbers)",
                    c.id, c.record_dim
                )));
            }
            Ok(CaseSpec {
                id: c.id.clone(),
                command: c.command.clone(),
                claim: c.claim.clone(),
                record_range: c.record_range.clone(),
                dataset_size: c.dataset_size,
                neighbors: Some(c.neighbors.clone()),
                status: c.status.clone(),
                expect_exit,
            })
        })
        .collect()
}

/// The table's header.
pub fn header() -> String {
    format!(
        "{:28} {:8} {:>4} {:>6} {:>8} {:>7} {:>7} {:>5} {:12} {}",
        "id", "status", "exit", "expect", "seconds", "/budget", "run", "pairs", "stopped", "result"
    )
}

/// One row: the verdict against the expected one, and the time against the budget.
pub fn render_row(r: &PacingRow) -> String {
    let verdict = match (r.exit, r.expect_exit) {
        (1, 1) => "caught",
        (0, 0) => "passed",
        (0, _) => "MISSED (buggy, no violation found)",
        (1, _) => "FALSE ALARM (correct, violation found)",
        _ => "ERROR",
    };
    let time = if r.time_ok { "" } else { ", over time" };
    format!(
        "{:28} {:8} {:>4} {:>6} {:>8.1} {:>7.2} {:>7} {:>5} {:12} {verdict}{time}{}",
        r.id,
        r.status,
        r.exit,
        r.expect_exit,
        r.seconds,
        r.seconds / r.budget_seconds,
        r.trials_run.map_or("-".into(), |v| v.to_string()),
        r.pairs_scored.map_or("-".into(), |v| v.to_string()),
        r.stopped.as_deref().unwrap_or("-"),
        r.error
            .as_deref()
            .map_or(String::new(), |e| format!(" ({e})"))
    )
}

/// The commands, then `slow: caught B/NB buggy, passed C/NC correct, T/N within 1.1 × budget
/// + 5 s, at load K`.
pub fn summary(rows: &[PacingRow], load: usize) -> String {
    let buggy: Vec<_> = rows.iter().filter(|r| r.expect_exit == 1).collect();
    let correct: Vec<_> = rows.iter().filter(|r| r.expect_exit == 0).collect();
    let mut s = String::from("commands:\n");
    for r in rows {
        s += &format!("  {}\n", r.command);
    }
    s += &format!(
        "slow: caught {}/{} buggy, passed {}/{} correct, {}/{} within 1.1 × budget + 5 s, {} errors, at load {load}\n",
        buggy.iter().filter(|r| r.exit == 1).count(),
        buggy.len(),
        correct.iter().filter(|r| r.exit == 0).count(),
        correct.len(),
        rows.iter().filter(|r| r.time_ok).count(),
        rows.len(),
        rows.iter().filter(|r| r.exit != 0 && r.exit != 1).count(),
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> Vec<SuiteCase> {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/exec/slow/cases.json");
        super::super::suite::read_cases(&path).expect("the slow manifest parses")
    }

    #[test]
    fn every_buggy_program_has_a_correct_twin() {
        let cases = manifest();
        let specs = specs(&cases, None).unwrap();
        assert!(specs.len() >= 8);
        for s in specs.iter().filter(|s| s.expect_exit == 1) {
            let twin = format!("{}-fixed", s.id);
            let t = specs.iter().find(|t| t.id == twin).expect(&twin);
            assert_eq!(t.expect_exit, 0);
            assert_eq!(t.command, format!("{} --fixed", s.command));
            assert_eq!((&t.claim, &t.neighbors), (&s.claim, &s.neighbors));
        }
        for s in &specs {
            let file = s.command.split_whitespace().nth(1).unwrap();
            let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
            assert!(path.exists(), "{}", path.display());
        }
    }

    #[test]
    fn only_and_status_are_checked() {
        let cases = manifest();
        assert_eq!(
            specs(&cases, Some("mean-true-n")).unwrap()[0].id,
            "mean-true-n"
        );
        let e = specs(&cases, Some("nope")).unwrap_err().to_string();
        assert!(
            e.contains("--only nope") && e.contains("mean-true-n-fixed"),
            "{e}"
        );
        let mut odd = cases[..1].to_vec();
        odd[0].status = "fine".into();
        let e = specs(&odd, None).unwrap_err().to_string();
        assert!(
            e.contains("\"fine\"") && e.contains("\"buggy\" or \"correct\""),
            "{e}"
        );
    }
}
