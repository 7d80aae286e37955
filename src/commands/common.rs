//! What several commands share: where reports go. A leaf of [`crate::commands`]: the commands
//! import it, it imports none of them.

use std::path::PathBuf;

use clap::Args;

use crate::report::output::OutputOptions;

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

impl ReportArgs {
    /// The plain options of these flags, with `--json` as given.
    pub fn output(&self, json: bool) -> OutputOptions {
        OutputOptions {
            report_dir: self.report_dir.clone(),
            no_report: self.no_report,
            quiet: self.quiet,
            json,
        }
    }
}
