//! The `audit` command line: one module per subcommand, each holding the clap structure of its
//! options beside the orchestration that turns them into library calls. Text, JSON and HTML
//! renderings of a report live together in [`crate::report`]. The binary (`src/bin/audit.rs`)
//! only parses, calls [`run`] and maps the outcome to an exit code.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::error::{Error, Result};

pub mod accountant;
pub mod bench;
pub mod claim_arg;
pub mod list;
pub mod one_run;
pub mod pacing;
pub mod report;
pub mod run;
pub mod sample;
pub mod suite;
pub mod sweep;
pub mod test;

pub use run::{RunArgs, SearchArgs};

pub use crate::report::output::Outcome;
pub(crate) use crate::report::output::{announce_report, split_late, to_json};

/// Audits differential-privacy claims of mechanisms, black-box.
///
/// Exit codes: 0 = no violation found, 1 = violation found, 2 = error.
#[derive(Debug, Parser)]
#[command(name = "audit", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
// The enum is built once per process; boxing `RunArgs` to shrink it would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the catalogue: one line per entry, `ID  STATUS  CLAIM  SUMMARY`, and its parameters.
    List {
        /// Print a JSON array of descriptions (id, status, claim, summary, params, witness, …).
        #[arg(long)]
        json: bool,
    },
    /// One catalogue entry in full: what it is, its bug, claim, witness pair and parameters.
    Describe {
        /// Catalogue id (see `audit list`).
        id: String,
        /// Print JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Audit a catalogue mechanism's claim on its witness pair.
    Run(run::RunArgs),
    /// Privacy of the Poisson-subsampled Gaussian (DP-SGD) or of a logged privacy ledger: ε at δ
    /// from the PLD accountant (an upper bound, with the optimistic estimate, a lower bound,
    /// beside it), the RDP accountant (add-remove), and for q = 1 the exact Gaussian value and
    /// zCDP; or the noise multiplier that reaches a target ε; or, with --bayesian, Bayesian DP.
    Accountant(accountant::AccountantArgs),
    /// Audit a mechanism repeatedly over a range of one parameter and count detections. Exit 0
    /// when the sweep completes, whatever it detected (a sweep measures detection rates, it is
    /// not a verdict: read the table), 2 on an error.
    Sweep(sweep::SweepArgs),
    /// Test a claim on release samples drawn elsewhere (shards: JSON lines, .gz, .zst, .bin).
    Test(test::TestArgs),
    /// Write one shard of releases of a catalogue entry or an exec program (for `audit test`),
    /// with a seed derived from the run's seed, the shard index and the side.
    Sample(sample::SampleArgs),
    /// Re-render a report (index.html and figures) from its audit.json without re-running.
    Report(report::ReportCommandArgs),
    /// Benchmarks: power on the scaled-noise Gaussian, tester speed, the real-world suite, the
    /// DP-Auditorium table, the ε estimate against the true ε, soundness seed sweep.
    Bench(bench::BenchArgs),
    /// Audit a DP-SGD training run in one run: m canaries, each included with probability 1/2.
    OneRun(one_run::OneRunArgs),
}

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

/// Runs a parsed command.
pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::List { json } => list::list(json),
        Command::Describe { id, json } => list::describe(&id, json),
        Command::Run(args) => run::run_audit(&args),
        Command::Accountant(args) => accountant::accountant(&args),
        Command::Sweep(args) => sweep::sweep(&args),
        Command::Test(args) => test::test_samples(&args),
        Command::Sample(args) => sample::sample(&args),
        Command::Report(args) => report::rerender_report(&args),
        Command::Bench(args) => bench::run_cli(&args),
        Command::OneRun(args) => one_run::one_run(&args),
    }
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
