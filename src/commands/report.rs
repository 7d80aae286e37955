//! `audit report FILE`: re-render a report's page and figures without re-running.

use std::path::PathBuf;

use clap::Args;

use super::Outcome;
use crate::error::Result;

/// Options of `audit report`.
#[derive(Debug, Args)]
pub struct ReportCommandArgs {
    /// A report file: DIR/<run-id>/audit.json is re-rendered in place; any other file (e.g.
    /// saved `audit run --json` output) becomes a new run directory in --report-dir.
    pub file: PathBuf,
    /// Where a report that is not already in a run directory is written.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub report_dir: PathBuf,
}

/// `audit report FILE`: prints the report's text (the verdict as the audit printed it) and the
/// page written; exit 0 whatever the verdict (re-rendering is not an audit).
pub(super) fn rerender_report(a: &ReportCommandArgs) -> Result<Outcome> {
    let (index, text) = crate::report::rerender_with_text(&a.file, &a.report_dir)?;
    Ok(Outcome::new(
        format!("{text}report       {}\n", index.display()),
        0,
    ))
}
