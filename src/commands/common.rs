//! What several commands share: where reports go, count flags, the testers `--tester` names.
//! A leaf of [`crate::commands`]: the commands import it, it imports none of them.

use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result};

/// Where reports go; shared by every command that audits.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Directory of the reports: each run writes DIR/<run-id>/ (audit.json, index.html, PNGs)
    /// and refreshes DIR/index.html.
    #[arg(long, value_name = "DIR", default_value = "reports")]
    pub report_dir: PathBuf,
    /// Write no report.
    #[arg(long)]
    pub no_report: bool,
    /// No progress display on stderr (it is also hidden when stderr is not a terminal).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Parses a count flag: a whole number, also in scientific notation (`1e5`, `2.5e4`).
pub(crate) fn parse_count(s: &str) -> std::result::Result<usize, String> {
    if let Ok(n) = s.trim().parse::<usize>() {
        return Ok(n);
    }
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 => Ok(v as usize),
        _ => Err(format!(
            "{s:?} is not a whole number ≥ 0; allowed: e.g. 100000 or 1e5"
        )),
    }
}

/// The testers `--tester SPEC` names for `claim`: with `all`, those that can test the claim, and
/// the others as `name: why` (reported, never silently dropped); a named tester that cannot test
/// the claim stays and its error is shown.
#[allow(clippy::type_complexity)]
pub(crate) fn testers_for(
    spec: &str,
    claim: &crate::mechanisms::PrivacyClaim,
    samples_per_side: usize,
) -> Result<(Vec<Box<dyn crate::testers::PropertyTester>>, Vec<String>)> {
    let list = crate::testers::parse_list(spec)?;
    if spec.trim() != "all" {
        return Ok((list, Vec::new()));
    }
    let (keep, skipped) = crate::testers::applicable(list, claim, samples_per_side)?;
    if keep.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "--tester all: no tester can test claim {claim} ({})",
            skipped.join("; ")
        )));
    }
    Ok((keep, skipped))
}
