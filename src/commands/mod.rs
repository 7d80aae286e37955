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

impl Cli {
    /// The command line `args` (the program's name first), parsed; exits with clap's message
    /// on help, version or an error, as [`Parser::parse_from`].
    ///
    /// `audit test …` (run once per pair of shards by pipelines and benchmarks) is parsed first
    /// against its own subcommand alone: building every subcommand's arguments costs more than
    /// parsing them (0.7 ms of a 5 ms test of 10^3 releases per side, interleaved medians).
    /// Whatever does not parse that way (help, version, an error) is parsed again against the
    /// whole command, so its message is the whole command's; what does parse is read by the
    /// same [`test::TestArgs`], so it gives the same arguments (unit test
    /// `test_alone_parses_as_the_whole_command`).
    pub fn parse_args(args: Vec<std::ffi::OsString>) -> Cli {
        Self::test_alone(&args).unwrap_or_else(|| Cli::parse_from(args))
    }

    /// `args` parsed against `audit test` alone; `None` for another subcommand, or when they
    /// do not parse there.
    fn test_alone(args: &[std::ffi::OsString]) -> Option<Cli> {
        use clap::{Args, FromArgMatches};
        if args.get(1).is_none_or(|a| a != "test") {
            return None;
        }
        let alone = clap::Command::new("audit")
            .subcommand(test::TestArgs::augment_args(clap::Command::new("test")));
        let matches = alone.try_get_matches_from(args).ok()?;
        Cli::from_arg_matches(&matches).ok()
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The `audit test` fast path gives the whole command's parse, on argument lists of every
    /// kind of option; and declines what the whole command refuses or answers itself.
    #[test]
    fn test_alone_parses_as_the_whole_command() {
        let lines = [
            "audit test --samples-a a.jsonl --samples-b b.jsonl --claim pure:1",
            "audit test --samples-a a.jsonl --samples-a a2.jsonl --samples-b b.jsonl --claim approx:1,1e-6 --tester renyi --json --no-report -q --jobs 2 --seed 7",
            "audit test --samples-a a.bin --samples-b b.bin --claim pure:0.5 --check mechanism --in-memory",
            "audit test --samples-a=a.jsonl --samples-b=b.jsonl --claim=zcdp:0.1 --failure-probability 0.01",
        ];
        for line in lines {
            let args: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
            let fast = Cli::test_alone(&args).expect(line);
            let whole = Cli::try_parse_from(&args).expect(line);
            assert_eq!(format!("{fast:?}"), format!("{whole:?}"), "{line}");
        }
        for line in [
            "audit test --help",
            "audit test --version",
            "audit test --bogus",
            "audit test",
            "audit list",
            "audit",
        ] {
            let args: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
            assert!(Cli::test_alone(&args).is_none(), "{line}");
        }
    }
}
