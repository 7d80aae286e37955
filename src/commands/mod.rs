//! The `audit` command line: one module per subcommand, each holding the clap structure of its
//! options beside the orchestration that turns them into library calls. Text, JSON and HTML
//! renderings of a report live together in [`crate::report`]. The binary (`src/bin/audit.rs`)
//! only parses, calls [`run`] and maps the outcome to an exit code.

use clap::{Parser, Subcommand};

use crate::error::Result;

pub mod accountant;
pub mod bench;
mod common;
pub mod final_model;
mod floor;
pub mod list;
pub mod load;
pub mod one_run;
pub mod pacing;
pub mod probe;
pub mod report;
pub mod run;
pub mod sample;
pub mod slow;
pub mod suite;
pub mod sweep;
pub mod test;

pub(crate) use crate::modes::checks::{parse_count, testers_for};
pub use crate::modes::claim as claim_arg;
pub use common::ReportArgs;
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
    /// Audit the built-in DP-SGD trainer from its final model only, over many training runs:
    /// the auditor chooses the initial model and the target record on exploration runs, then
    /// fresh runs on each side decide (black-box, final model only, many runs).
    FinalModel(final_model::FinalModelArgs),
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
        Command::FinalModel(args) => final_model::final_model(&args),
    }
}
