//! What a run hands back to the command line: its stdout text, exit code and any error after
//! the verdict, and the common end of every audit run (the report announced, the code from the
//! verdict).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::record::Verdict;

/// What a command produced: text for stdout and the exit code.
#[derive(Debug)]
pub struct Outcome {
    /// Text for stdout.
    pub stdout: String,
    /// 0 = no violation found (or nothing to judge), 1 = violation found.
    pub code: u8,
    /// An error that happened after the verdict (the report could not be written): the verdict
    /// is printed first, then this, and the exit code is 2.
    pub late_error: Option<Error>,
}

impl Outcome {
    /// Text and exit code, no late error.
    pub fn new(stdout: String, code: u8) -> Self {
        Self {
            stdout,
            code,
            late_error: None,
        }
    }
}

/// Splits the result of writing a report into (where it is, the error that kept it from being
/// written): the verdict is printed either way.
pub(crate) fn split_late<T>(r: Result<Option<T>>) -> (Option<T>, Option<Error>) {
    match r {
        Ok(v) => (v, None),
        Err(e) => (None, Some(e)),
    }
}

/// Where a written report is announced: the last line of text output, or stderr beside
/// `--json` (whose stdout stays deterministic).
pub(crate) fn announce_report(index: &Path, json: bool, quiet: bool, stdout: &mut String) {
    if json {
        if !quiet {
            eprintln!("report       {}", index.display());
        }
    } else {
        let _ = writeln!(stdout, "report       {}", index.display());
    }
}

/// `v` as pretty JSON with a final newline, the form every `--json` prints.
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
    Ok(serde_json::to_string_pretty(v).map_err(|e| Error::InvalidConfig(e.to_string()))? + "\n")
}

/// The exit code of a verdict: 1 for a violation found, else 0.
pub(crate) fn exit_code(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Violation => 1,
        Verdict::NoViolation => 0,
    }
}

/// Where the reports of a run go and how it is shown (the plain form of `--report-dir`,
/// `--no-report`, `--quiet` and `--json`).
#[derive(Clone, Debug)]
pub struct OutputOptions {
    /// Directory of the reports.
    pub report_dir: PathBuf,
    /// Write no report.
    pub no_report: bool,
    /// No progress display on stderr.
    pub quiet: bool,
    /// Print JSON instead of text.
    pub json: bool,
}

impl OutputOptions {
    /// Creates the report directory, unless no report is written.
    pub(crate) fn prepare(&self) -> Result<()> {
        if !self.no_report {
            crate::report::prepare_report_dir(&self.report_dir)?;
        }
        Ok(())
    }

    /// Writes a report with `write` into the report directory, unless no report is written.
    pub(crate) fn write(
        &self,
        write: impl FnOnce(&Path) -> Result<PathBuf>,
    ) -> Result<Option<PathBuf>> {
        if self.no_report {
            Ok(None)
        } else {
            write(&self.report_dir).map(Some)
        }
    }

    /// The end every run shares: `stdout` (already rendered) followed by where the report
    /// `written` went, with the exit `code`; a report that could not be written never costs
    /// the verdict (it is printed first and the error after it).
    pub(crate) fn finish(
        &self,
        mut stdout: String,
        code: u8,
        written: Result<Option<PathBuf>>,
    ) -> Outcome {
        let (report_index, late_error) = split_late(written);
        if let Some(index) = &report_index {
            announce_report(index, self.json, self.quiet, &mut stdout);
        }
        Outcome {
            stdout,
            code,
            late_error,
        }
    }
}
