//! `audit run`: a catalogue entry on its witness pair, a dataset search (`--finder`, and always
//! for `--exec`), or the sequential audit. This module parses and checks the flags and
//! dispatches; the runs themselves are [`crate::modes::run`]'s.

use std::path::PathBuf;

use clap::Args;

use super::{Outcome, ReportArgs};
use crate::audit::AuditConfig;
use crate::error::{Error, Result};
use crate::mechanisms::math::readable;
use crate::mechanisms::{Neighboring, Params, PrivacyClaim, catalogue};
use crate::modes::run::{RunOptions, SearchOptions, SizesGiven, Target, check_memory};
use crate::report::output::OutputOptions;
use crate::sources::exec::{ExecMechanism, ExecOptions};
use crate::testers;

pub use crate::modes::checks::{
    MAX_EXEC_TIMEOUT_SECONDS, MAX_SEARCH_SECONDS, MIN_FAILURE_PROBABILITY, max_jobs,
};
pub(crate) use crate::modes::checks::{check_beta, check_count, check_seconds, parse_range};
pub use crate::modes::run::DEFAULT_EXEC_BUDGET_SECONDS;
pub(crate) use crate::report::reproduce::reproduce_line;

/// Options of `audit run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Catalogue id of the mechanism (see `audit list`).
    #[arg(long, required_unless_present = "exec", conflicts_with = "exec")]
    pub mechanism: Option<String>,
    /// Audit an external program speaking the exec protocol (see docs/exec-protocol.md); needs --claim.
    #[arg(long, value_name = "COMMAND")]
    pub exec: Option<String>,
    /// Time-out and batch size of the exec program.
    #[command(flatten)]
    pub limits: ExecLimits,
    /// Worker threads (and so exec processes running at once), 1 to 4 × the cores; default: all
    /// cores.
    #[arg(allow_hyphen_values = true, long)]
    pub jobs: Option<usize>,
    /// Dataset search (default: the catalogue witness; for --exec, random search).
    #[command(flatten)]
    pub search: SearchArgs,
    /// With --exec: where the program runs, for the report: central (a trusted curator runs it
    /// on the whole dataset; the default), local (each user randomizes their own value) or
    /// shuffle (local reports permuted by a trusted shuffler). Reporting only: the audit is the
    /// same.
    #[arg(long, value_name = "SETTING")]
    pub setting: Option<String>,
    /// With --exec: what one neighbouring change is, in your words, for the report (e.g. "one
    /// patient's visits"); default: the relation's words ("one record of the dataset, added or
    /// removed").
    #[arg(long, value_name = "TEXT")]
    pub privacy_unit: Option<String>,
    /// With --exec: what the guarantee covers, for the DP-fy ML report: the data accesses,
    /// single-training-run or training-and-tuning (it also covers hyperparameter tuning); over a
    /// ledger claim's dp-fy-ml line. Reporting only: the audit is the same.
    #[arg(long, value_name = "WHICH")]
    pub data_accesses: Option<String>,
    /// With --exec: the outputs the guarantee covers, final-model, checkpoints or every-iterate
    /// (the full sequence of privatized gradients), for the DP-fy ML report; over a ledger
    /// claim's dp-fy-ml line. Reporting only.
    #[arg(long, value_name = "WHICH")]
    pub outputs_covered: Option<String>,
    /// Override the claim: pure:EPS, approx:EPS:DELTA, renyi:ALPHA:EPS, zcdp:RHO, gdp:MU,
    /// dpsgd:Q:Z:T, bdp:EPS:DELTA (with --data), ledger:FILE[:DELTA] (the PLD accountant's ε
    /// on a privacy ledger at δ, default 1e-5: one JSON event per line,
    /// {"event": "sampling", "probability": Q, "repetitions": T} then
    /// {"event": "gaussian-sum", "noise_multiplier": Z}; format in docs/accountant.md, example in
    /// examples/ledger/dpsgd.jsonl), or rsc:K:EPS0:DELTA (k reorder-slice-compute steps of pure
    /// ε₀-DP compute: the k-free RSC bound at δ, docs/seeds/rsc-applications.md).
    #[arg(long)]
    pub claim: Option<String>,
    /// The data distribution μ of a Bayesian DP claim (bdp:EPS:DELTA): one record per line, a
    /// JSON number or array. The differing record x' is drawn from these lines (see
    /// dp_audit::audit::bayesian); required with a bdp: claim and read by nothing else.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// The definition a bdp: claim is tested as: 1 (strong BDP, Pr[L ≥ ε] ≤ δ over x' and the
    /// output; the joint test, events on (x', output)) or 2 (weak BDP, an (ε, δ) inequality for
    /// every set of outputs, x' averaged out; events on the output only) [default: 1].
    #[arg(long, value_name = "1|2")]
    pub bdp_definition: Option<String>,
    /// With a bdp: claim: draw the rest of the dataset from the data distribution too, fresh for
    /// every release (as many records as the fixed rest would have), so that the claim tested
    /// holds on average over the whole dataset, not for one fixed rest. One mechanism call
    /// (exec request) per release, or per --exec-datasets releases.
    #[arg(long)]
    pub draw_dataset: bool,
    /// With a bdp: claim: K records x'_1..x'_K drawn i.i.d. from the data differ instead of
    /// one (D against D with all K added; under replace-one, the last K records replaced). The
    /// claim stays the per-record bdp:EPS:DELTA; the audit tests the K-record claim it implies,
    /// (K·EPS, K·e^{(K−1)·EPS}·DELTA) (Triastcyn & Faltings 2020, Proposition 4), so a
    /// violation of it refutes the per-record claim [default: 1].
    #[arg(allow_hyphen_values = true, long, value_name = "K", value_parser = super::parse_count)]
    pub group: Option<usize>,
    /// Mechanism parameter NAME=VALUE (repeatable), e.g. --param epsilon=0.5.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Releases drawn on each side of the pair.
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, default_value_t = AuditConfig::default().samples_per_side)]
    pub samples: usize,
    /// Seed of every random choice; the same seed gives the same result.
    #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
    pub seed: u64,
    /// β: probability of reporting a violation against a mechanism that keeps its claim.
    #[arg(allow_hyphen_values = true, long, default_value_t = AuditConfig::default().failure_probability)]
    pub failure_probability: f64,
    /// Testers, comma-separated, or "all" (β is split over all their bounds).
    #[arg(long, default_value = "hockey-stick")]
    pub tester: String,
    /// Audit through one view instead of the layers: none, values, float-repr, tanh, tanh:S,
    /// chebyshev:K, float-bits or auto (a fixed function, so bounds stay valid by data
    /// processing). Default: for --exec the two layers (see --check); for the catalogue, the
    /// entry's recommended transform if it has one, else none.
    #[arg(long, value_name = "NAME")]
    pub transform: Option<String>,
    /// Which layers run and decide the exit code: mechanism (the algorithm, on the output
    /// values), float (the floating-point representation of the outputs) or both, each layer
    /// with its own share of β [default: both for --exec; a catalogue entry is audited through
    /// its own transform unless --check is given]. Conflicts with --transform.
    #[arg(long, value_name = "LAYERS", conflicts_with = "transform")]
    pub check: Option<String>,
    /// Anytime-valid sequential audit (see dp_audit::audit::sequential): draw releases in batches that
    /// double from --first-batch and stop as soon as a betting e-process reaches 1/β. Uses its
    /// own event search (not --tester); its report (DIR/sequential-<mechanism>-seed<seed>-<hash>/)
    /// plots the betting wealth against the 1/β threshold. It tests one pair: the pair of
    /// --pairs FILE (one line), else the catalogue witness; an --exec program needs --pairs
    /// (one batch per program call, in both layers unless --check or --transform says otherwise).
    #[arg(long, conflicts_with_all = ["samples", "finder"])]
    pub sequential: bool,
    /// Most releases per side of a sequential audit (default: the fixed-n default).
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, requires = "sequential", value_name = "N")]
    pub max_samples: Option<usize>,
    /// Releases per side of a sequential audit's first (training-only) batch.
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, requires = "sequential", value_name = "N")]
    pub first_batch: Option<usize>,
    /// Print one JSON object (deterministic: no timings) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Reports.
    #[command(flatten)]
    pub report: ReportArgs,
}

/// How an exec program is run (`audit run --exec`, `audit sample --exec`).
#[derive(Debug, Args)]
pub struct ExecLimits {
    /// Seconds one exec batch may run (writing the request and reading every release) before
    /// its process group is killed [default: 60; with --exec only].
    #[arg(allow_hyphen_values = true, long, value_name = "SECONDS")]
    pub exec_timeout: Option<f64>,
    /// Releases per exec request (one process each); lower it for slow programs. The same seed
    /// gives the same samples only with the same batch size [default: 50000; with --exec only].
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, value_name = "N")]
    pub exec_batch: Option<usize>,
    /// The program reads requests of up to N datasets at once (`"datasets": [[…], …]`, one
    /// release each, in order; see docs/exec-protocol.md), so that where every release has its
    /// own dataset (`--draw-dataset`) one process serves N releases instead of one. Checked at
    /// start with a request of two datasets [with --exec only].
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, value_name = "N")]
    pub exec_datasets: Option<usize>,
}

impl ExecLimits {
    /// Checks the flags: given only with --exec (`exec`), numbers in range.
    pub(crate) fn check(&self, exec: bool) -> Result<()> {
        if !exec {
            for (flag, on) in [
                ("--exec-timeout", self.exec_timeout.is_some()),
                ("--exec-batch", self.exec_batch.is_some()),
                ("--exec-datasets", self.exec_datasets.is_some()),
            ] {
                if on {
                    return Err(Error::InvalidConfig(format!(
                        "{flag} applies to --exec programs only; leave it out with --mechanism"
                    )));
                }
            }
        }
        if let Some(t) = self.exec_timeout {
            check_seconds("--exec-timeout", t, MAX_EXEC_TIMEOUT_SECONDS)?;
        }
        if let Some(b) = self.exec_batch {
            check_count("--exec-batch", b, 1, crate::audit::MAX_SAMPLES_PER_SIDE)?;
        }
        if let Some(k) = self.exec_datasets {
            check_count("--exec-datasets", k, 1, crate::audit::MAX_SAMPLES_PER_SIDE)?;
        }
        Ok(())
    }

    /// The time-out (default [`crate::sources::exec::DEFAULT_TIMEOUT`]).
    pub(crate) fn timeout(&self) -> Result<std::time::Duration> {
        check_seconds(
            "--exec-timeout",
            self.exec_timeout
                .unwrap_or(crate::sources::exec::DEFAULT_TIMEOUT.as_secs_f64()),
            MAX_EXEC_TIMEOUT_SECONDS,
        )
    }

    /// The batch size (default [`crate::sources::exec::DEFAULT_BATCH`]).
    pub(crate) fn batch(&self) -> usize {
        self.exec_batch
            .unwrap_or(crate::sources::exec::DEFAULT_BATCH)
    }
}

/// Dataset-finder options of `audit run`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Dataset finder: portfolio (structured proposals, then random and optimizer steps; the
    /// default for --exec), fixed, grid, random, corners (random vertices of the record box),
    /// halton, nelder-mead, pso, annealing, bayes, from-data (pairs drawn from --typical-data;
    /// `typical` is accepted as its old name).
    #[arg(long)]
    pub finder: Option<String>,
    /// Pairs scored in the exploratory search [default: 20].
    #[arg(allow_hyphen_values = true, long)]
    pub trials: Option<usize>,
    /// Releases per side for each exploratory score [default: 5000].
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long)]
    pub search_samples: Option<usize>,
    /// Pairs re-audited with fresh samples (β is split over them) [default: 3].
    #[arg(allow_hyphen_values = true, long)]
    pub confirm: Option<usize>,
    /// Record range LO:HI, e.g. 0:1 or -5:5 (default: the mechanism's; 0:1 for --exec).
    #[arg(long, value_name = "LO:HI", allow_hyphen_values = true)]
    pub record_range: Option<String>,
    /// Record dimension (default: the mechanism's; 1 for --exec).
    #[arg(allow_hyphen_values = true, long, value_name = "D")]
    pub record_dim: Option<usize>,
    /// Records in D (default: the witness's size, or 3).
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, value_name = "N")]
    pub dataset_size: Option<usize>,
    /// Neighboring relation: add-remove, replace-one or zero-out (a record replaced by the null
    /// record, all zeros) (default: the mechanism's; add-remove for --exec).
    #[arg(long)]
    pub neighbors: Option<String>,
    /// Pairs for the fixed finder: one JSON object per line, {"first": [...], "second": [...]}.
    #[arg(long, value_name = "FILE")]
    pub pairs: Option<PathBuf>,
    /// Data sample for the from-data finder: a JSON array of records.
    #[arg(long, value_name = "FILE")]
    pub typical_data: Option<PathBuf>,
    /// Stop the search after this many seconds (the confirm phase still runs).
    #[arg(allow_hyphen_values = true, long, value_name = "SECONDS")]
    pub max_search_seconds: Option<f64>,
    /// Time for the whole run, search and confirmation: 60s, 2m, 1.5h or seconds. The search
    /// stops when the time left would not hold the confirming audits. Default for --exec: 60s
    /// (unless --trials is given); the report records the trials scored, and the Reproduce line
    /// replays exactly those with --trials.
    #[arg(allow_hyphen_values = true, long, value_name = "TIME")]
    pub budget: Option<String>,
}

impl SearchArgs {
    /// The flags given that only a dataset search reads, as the user spells them.
    fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let flags: [(&'static str, bool); 11] = [
            ("--trials", self.trials.is_some()),
            ("--search-samples", self.search_samples.is_some()),
            ("--confirm", self.confirm.is_some()),
            ("--record-range", self.record_range.is_some()),
            ("--record-dim", self.record_dim.is_some()),
            ("--dataset-size", self.dataset_size.is_some()),
            ("--neighbors", self.neighbors.is_some()),
            ("--pairs", self.pairs.is_some()),
            ("--typical-data", self.typical_data.is_some()),
            ("--max-search-seconds", self.max_search_seconds.is_some()),
            ("--budget", self.budget.is_some()),
        ];
        for (name, on) in flags {
            if on {
                v.push(name);
            }
        }
        v
    }
}

/// Flags that do not apply to this run are errors, not silently ignored settings; every number
/// is checked before any sampling, naming the flag.
fn check_flags(args: &RunArgs) -> Result<()> {
    args.limits.check(args.exec.is_some())?;
    let searching = args.search.finder.is_some() || args.exec.is_some();
    if !searching && let Some(flag) = args.search.given().first() {
        return Err(Error::InvalidConfig(format!(
            "{flag} applies to a dataset search only; add --finder NAME (e.g. --finder random) or leave {flag} out (without --finder the catalogue witness pair is audited)"
        )));
    }
    if let Some(t) = args.search.max_search_seconds {
        check_seconds("--max-search-seconds", t, MAX_SEARCH_SECONDS)?;
    }
    if let Some(j) = args.jobs {
        check_count("--jobs", j, 1, max_jobs())?;
    }
    check_beta(args.failure_probability)?;
    check_count(
        "--samples",
        args.samples,
        crate::modes::checks::MIN_SAMPLES_PER_SIDE,
        crate::audit::MAX_SAMPLES_PER_SIDE,
    )?;
    if let Some(t) = args.search.trials {
        check_count("--trials", t, 1, 100_000)?;
    }
    if let Some(n) = args.search.search_samples {
        check_count(
            "--search-samples",
            n,
            100,
            crate::audit::MAX_SAMPLES_PER_SIDE,
        )?;
    }
    if let Some(c) = args.search.confirm {
        check_count("--confirm", c, 1, 100)?;
    }
    Ok(())
}

impl From<&SearchArgs> for SearchOptions {
    fn from(s: &SearchArgs) -> Self {
        Self {
            finder: s.finder.clone(),
            trials: s.trials,
            search_samples: s.search_samples,
            confirm: s.confirm,
            // Parsed and checked against the target by `checked_search` before a search.
            record_range: None,
            dataset_size: s.dataset_size,
            pairs: s.pairs.clone(),
            typical_data: s.typical_data.clone(),
            max_search_seconds: s.max_search_seconds,
            budget_seconds: None,
        }
    }
}

impl From<&RunArgs> for RunOptions {
    fn from(a: &RunArgs) -> Self {
        Self {
            mechanism: a.mechanism.clone(),
            params: a.params.clone(),
            exec: a.exec.is_some(),
            data: a.data.clone(),
            // Parsed and checked by `check_bayesian_flags` before a Bayesian audit.
            bdp_definition: a
                .bdp_definition
                .as_deref()
                .and_then(|d| crate::audit::bayesian::Definition::parse_flag(d).ok())
                .unwrap_or_default(),
            draw_dataset: a.draw_dataset,
            // Checked by `check_bayesian_flags` (K ≥ 1) before a Bayesian audit.
            group: a.group.unwrap_or(1),
            seed: a.seed,
            samples: a.samples,
            failure_probability: a.failure_probability,
            max_samples: a.max_samples,
            first_batch: a.first_batch,
            search: (&a.search).into(),
            output: OutputOptions {
                report_dir: a.report.report_dir.clone(),
                no_report: a.report.no_report,
                quiet: a.report.quiet,
                json: a.json,
            },
            sizes_given: SizesGiven {
                samples: given_on_command_line("--samples"),
                search_samples: given_on_command_line("--search-samples"),
                confirm: given_on_command_line("--confirm"),
                exec_batch: a.limits.exec_batch.is_some(),
            },
            exec_timeout_seconds: a
                .limits
                .exec_timeout
                .unwrap_or(crate::sources::exec::DEFAULT_TIMEOUT.as_secs_f64()),
            started: std::time::Instant::now(),
        }
    }
}

pub(super) fn run_audit(args: &RunArgs) -> Result<Outcome> {
    run_audit_with(args, None)
}

/// What a mechanism given in process is built from ([`run_given`]): the claim, relation and
/// record domain the flags give, as `--exec` builds its program from them.
#[derive(Clone, Debug)]
pub struct GivenSpec {
    /// The claim (`--claim`).
    pub claim: PrivacyClaim,
    /// The relation (`--neighbors`, add-remove by default).
    pub neighboring: Neighboring,
    /// The records' domain (`--record-range`, `--record-dim`; sizes as for `--exec`).
    pub domain: crate::mechanisms::RecordDomain,
    /// Releases per call (`--exec-batch`, the program's default otherwise): a mechanism that
    /// answers it as its [`crate::mechanisms::Mechanism::batch_size`] is called with the same
    /// sizes and seeds as the program would be, so the same function gives the same record.
    pub batch: usize,
    /// Where the mechanism runs (`--setting`, central by default): the built mechanism's
    /// [`crate::mechanisms::Mechanism::setting`], as [`ExecMechanism::with_unit`] makes it a
    /// program's. For the report only.
    pub setting: crate::mechanisms::DpSetting,
    /// What one neighbouring change is, in the user's words (`--privacy-unit`, checked and
    /// trimmed); `None`: the words of the relation and setting. The built mechanism's
    /// [`crate::mechanisms::Mechanism::privacy_unit`]. For the report only.
    pub privacy_unit: Option<String>,
}

/// Builds the mechanism of [`run_given`] from the flags' [`GivenSpec`].
pub type GivenMechanism<'a> =
    &'a (dyn Fn(&GivenSpec) -> Result<Box<dyn crate::mechanisms::Mechanism>> + Sync);

/// `audit run --exec NAME …` with the mechanism built by `build` in this process instead of a
/// program (the Python package's `audit_run`): the same flags, checks, search, layers, audits
/// and record (`args.exec` names the target), `--sequential` included (each layer wraps a view
/// of the one mechanism built, as each wraps a copy of the program).
pub fn run_given(args: &RunArgs, build: GivenMechanism<'_>) -> Result<Outcome> {
    if args.exec.is_none() {
        return Err(Error::InvalidConfig(
            "run_given: no name for the mechanism (--exec NAME); allowed: a non-empty name".into(),
        ));
    }
    run_audit_with(args, Some(build))
}

fn run_audit_with(args: &RunArgs, given: Option<GivenMechanism<'_>>) -> Result<Outcome> {
    // The budget's clock starts here: setting up the target (a program's first request) counts.
    let started = std::time::Instant::now();
    check_flags(args)?;
    match args.jobs {
        None => run_audit_inner(args, given, started),
        Some(0) => Err(Error::InvalidConfig("--jobs 0; allowed: at least 1".into())),
        Some(j) => rayon::ThreadPoolBuilder::new()
            .num_threads(j)
            .build()
            .map_err(|e| Error::InvalidConfig(format!("--jobs {j}: {e}")))?
            // The pool's thread reads the same command line as this one (an in-process
            // caller's words are thread-local).
            .install(|| {
                crate::report::reproduce::with_args(
                    crate::report::reproduce::command_line(),
                    || run_audit_inner(args, given, started),
                )
            }),
    }
}

/// The target of the flags: an exec program (its flags checked, its claim parsed, then probed)
/// or a catalogue entry.
fn build_target(
    args: &RunArgs,
    given: Option<GivenMechanism<'_>>,
    started: std::time::Instant,
) -> Result<Target> {
    use super::claim_arg::parse_claim_arg;
    if let Some(command) = &args.exec {
        let claim_text = args.claim.as_deref().ok_or_else(|| {
            Error::InvalidConfig(format!(
                "--exec needs --claim; allowed: {} (bdp:EPS:DELTA with --data FILE)",
                super::claim_arg::claim_forms()
            ))
        })?;
        if !args.params.is_empty() {
            return Err(Error::InvalidConfig(
                "--param applies to catalogue mechanisms, not to --exec".into(),
            ));
        }
        let (lo, hi) = match &args.search.record_range {
            Some(r) => parse_range(r)?,
            None => (0.0, 1.0),
        };
        let dim = args.search.record_dim.unwrap_or(1);
        if dim == 0 || dim > 1000 {
            return Err(Error::InvalidConfig(format!(
                "--record-dim {dim}; allowed: 1 to 1000"
            )));
        }
        let relation: Neighboring = match &args.search.neighbors {
            Some(n) => n.parse()?,
            None => Neighboring::AddRemove,
        };
        let domain = ExecMechanism::domain(lo, hi, dim);
        let timeout = args.limits.timeout()?;
        let size = args.search.dataset_size.unwrap_or(3);
        let (min_n, max_n) = exec_dataset_sizes(&domain, relation);
        if !(min_n..=max_n).contains(&size) {
            return Err(Error::InvalidConfig(format!(
                "--dataset-size {size}; allowed for --exec with {relation} neighbors: {min_n} to {max_n} (D and its neighbor, of up to {} records: {} values / --record-dim {dim})",
                domain.max_size,
                crate::sources::exec::MAX_DATASET_VALUES
            )));
        }
        // The probe that learns the output dimension runs on at least one record (a program
        // may refuse the empty dataset; an audit of D = ∅ still uses 0).
        let size = size.max(1);
        let parsed = parse_claim_arg(claim_text, relation)?;
        let setting: crate::mechanisms::DpSetting = match &args.setting {
            Some(s) => s.parse().map_err(|_| {
                Error::InvalidConfig(format!(
                    "--setting {s:?}; allowed: central, local or shuffle"
                ))
            })?,
            None => crate::mechanisms::DpSetting::Central,
        };
        let privacy_unit = match &args.privacy_unit {
            Some(u) if u.trim().is_empty() || u.len() > 200 || u.chars().any(char::is_control) => {
                return Err(Error::InvalidConfig(format!(
                    "--privacy-unit {u:?}; allowed: 1 to 200 characters of text, no control characters"
                )));
            }
            Some(u) => Some(u.trim().to_string()),
            None => None,
        };
        if let Some(build) = given {
            let m = build(&GivenSpec {
                claim: parsed.claim,
                neighboring: relation,
                domain,
                batch: args.limits.batch(),
                setting,
                privacy_unit: privacy_unit.clone(),
            })?;
            // The record states what the flags say, or the run stops: a builder that dropped
            // them would report a setting or unit the user did not give.
            let unit = privacy_unit.unwrap_or_else(|| {
                crate::mechanisms::mechanism::privacy_unit_words(relation, setting)
            });
            if m.setting() != setting || m.privacy_unit() != unit {
                return Err(Error::InvalidConfig(format!(
                    "run_given: the mechanism built reports setting {} and privacy unit {:?}, not the {setting} and {unit:?} of --setting/--privacy-unit; allowed: a mechanism that reports GivenSpec's setting and privacy_unit",
                    m.setting(),
                    m.privacy_unit()
                )));
            }
            return Target::given_shared(
                std::sync::Arc::from(m),
                parsed.claim,
                parsed.source,
                args.check.as_deref(),
                args.transform.as_deref(),
            );
        }
        // The program's first request is bounded by the run's deadline too: a program that
        // hangs on start-up costs the budget, not the time-out.
        let first_timeout = match run_budget(args)? {
            Some(b) => timeout.min(
                crate::modes::run::call_deadline(started, b)
                    .saturating_duration_since(std::time::Instant::now())
                    .max(std::time::Duration::from_millis(1)),
            ),
            None => timeout,
        };
        let m =
            ExecMechanism::from_options(&ExecOptions {
                command: command.clone(),
                claim: parsed.claim,
                neighboring: relation,
                lower: lo,
                upper: hi,
                dim,
                timeout: first_timeout,
                batch: args.limits.batch(),
                probe_size: size,
                accountant: parsed.accountant,
                datasets_per_request: args.limits.exec_datasets,
            })?
            .with_unit(setting, privacy_unit)
            .with_dp_fy_scope(parsed.scope.overridden_by(
                crate::modes::accountant::scope_from_flags(
                    args.data_accesses.as_deref(),
                    args.outputs_covered.as_deref(),
                )?,
            ))
            .with_timeout(timeout);
        return Target::exec(
            m,
            parsed.claim,
            parsed.source,
            args.check.as_deref(),
            args.transform.as_deref(),
        );
    }
    refuse_exec_only_flags(args)?;
    let id = args.mechanism.as_deref().unwrap_or_default();
    let params = Params::parse(&args.params)?;
    let entry = catalogue::build(id, &params)?;
    let claim = match &args.claim {
        Some(c) => Some(parse_claim_arg(c, entry.mechanism.neighboring())?),
        None => None,
    };
    Target::catalogue(
        id,
        entry,
        claim.map(|c| (c.claim, c.source)),
        args.transform.as_deref(),
        args.check.as_deref(),
    )
}

/// Checks the flags against the target and the claim, then runs the kind of audit they ask for.
fn run_audit_inner(
    args: &RunArgs,
    given: Option<GivenMechanism<'_>>,
    started: std::time::Instant,
) -> Result<Outcome> {
    // Validate everything cheap before any sampling.
    testers::parse_list(&args.tester)?;
    let target = build_target(args, given, started)?;
    let mut opts = RunOptions::from(args);
    opts.started = started;
    let claim = target.claim;
    if !opts.output.quiet
        && let Some(w) = delta_warning(&claim, audited_records(args, &target))
    {
        eprintln!("audit: warning: {w}");
    }
    if args.sequential {
        if !crate::modes::checks::runs_sequentially(&args.tester) {
            return Err(Error::InvalidConfig(format!(
                "--tester {} with --sequential; the sequential audit uses its own betting test, leave --tester out",
                args.tester
            )));
        }
        return crate::modes::run::run_sequential(&opts, &target);
    }
    if !(claim.is_bayesian() || args.data.is_some()) {
        for (flag, on) in [
            ("--bdp-definition", args.bdp_definition.is_some()),
            ("--draw-dataset", args.draw_dataset),
            ("--group", args.group.is_some()),
        ] {
            if on {
                return Err(Error::InvalidConfig(format!(
                    "{flag} applies to a Bayesian DP claim (--claim bdp:EPS:DELTA with --data FILE); the claim is {claim}, leave {flag} out"
                )));
            }
        }
    }
    if claim.is_bayesian() || args.data.is_some() {
        if args.check.is_some() {
            return Err(Error::InvalidConfig(
                "--check applies to audits of a pair of datasets (catalogue entries, --exec, --sequential); a Bayesian DP audit has one view of the releases, leave --check out".into(),
            ));
        }
        check_bayesian_flags(args, &target)?;
        return crate::modes::run::run_bayesian(&opts, &target);
    }
    let (testers, skipped) = super::testers_for(&args.tester, &claim, args.samples)?;
    let config = AuditConfig {
        seed: args.seed,
        samples_per_side: args.samples,
        failure_probability: args.failure_probability,
    };
    config.validate(target.mechanism.output_dim())?;
    check_memory(
        "--samples",
        args.samples.max(args.search.search_samples.unwrap_or(0)),
        target.mechanism.output_dim(),
    )?;
    if opts.searching() {
        opts.search = checked_search(args, &target)?;
    }
    if let Some(check) = target.layers {
        return crate::modes::run::run_layered(&opts, &target, check, &testers, &skipped, &config);
    }
    if opts.searching() {
        return crate::modes::run::run_search(&opts, &target, &testers, &skipped, &config);
    }
    crate::modes::run::run_pair(&opts, &target, &testers, skipped, &config)
}

/// The largest dataset the run audits: the catalogue witness's larger side, or the searched size
/// plus the differing record.
fn audited_records(args: &RunArgs, target: &Target) -> usize {
    match (&target.witness, args.search.dataset_size) {
        (_, Some(n)) => n + 1,
        (Some(w), None) => w.first().len().max(w.second().len()),
        (None, None) => 4,
    }
}

/// A warning when the claim's δ is not small against 1/n for the n records audited: a mechanism
/// that publishes one of its n records at random, in the clear, is (0, 1/n)-DP, so a claim with
/// δ ≥ 1/(10·n) allows a release that no one would call private, and an audit passing it says
/// little (seed 002's DP-Auditorium post; Dwork & Roth 2014, §2.3: δ should be much smaller
/// than 1/n).
pub(crate) fn delta_warning(claim: &PrivacyClaim, records: usize) -> Option<String> {
    let delta = match claim {
        PrivacyClaim::Approximate { delta, .. } => *delta,
        _ => return None,
    };
    let n = records.max(1) as f64;
    (delta * n >= 0.1).then(|| {
        format!(
            "the claim's δ = {} is not small against 1/n = {} for the {} records audited: a mechanism that publishes one of the n records at random, unprotected, is (0, 1/n)-DP and would keep a claim with δ ≥ 1/n; choose δ much smaller than 1/n (e.g. δ ≤ {}) for the datasets the mechanism is used on",
            readable(delta),
            readable(1.0 / n),
            records,
            readable(0.01 / n)
        )
    })
}

/// The search flags checked against the target (the record range inside the mechanism's, the
/// record dimension and relation the mechanism's, the files their finders' own) and parsed.
fn checked_search(args: &RunArgs, target: &Target) -> Result<SearchOptions> {
    let m = &*target.mechanism;
    let s = &args.search;
    let mut search = SearchOptions::from(s);
    let domain = m.domain();
    if let Some(r) = &s.record_range
        && args.exec.is_none()
    {
        let (lo, hi) = parse_range(r)?;
        if lo < domain.lower || hi > domain.upper {
            return Err(Error::InvalidConfig(format!(
                "--record-range {r} leaves the mechanism's record range [{}, {}]",
                domain.lower, domain.upper
            )));
        }
        search.record_range = Some((lo, hi));
    }
    if let Some(d) = s.record_dim
        && d != domain.dim
    {
        return Err(Error::InvalidConfig(format!(
            "--record-dim {d}, but {} takes records of dimension {}",
            m.id(),
            domain.dim
        )));
    }
    let relation = m.neighboring();
    if let Some(n) = &s.neighbors {
        let r: Neighboring = n.parse()?;
        if r != relation {
            return Err(Error::InvalidConfig(format!(
                "--neighbors {r}, but the claim of {} is stated for {relation} neighbors",
                m.id()
            )));
        }
    }
    let finder_name = search.finder_name();
    if s.pairs.is_some() && finder_name != "fixed" {
        return Err(Error::InvalidConfig(
            "--pairs is read by --finder fixed".into(),
        ));
    }
    if s.typical_data.is_some() != (finder_name == "from-data") {
        return Err(Error::InvalidConfig(
            "--finder from-data (old name: typical) and --typical-data FILE go together".into(),
        ));
    }
    search.budget_seconds = s.budget.as_deref().map(parse_budget).transpose()?;
    Ok(search)
}

/// True when `flag` was given on this run's command line (`--flag V` or `--flag=V`; the words
/// an in-process caller gives with [`crate::report::reproduce::with_args`], else the process's
/// arguments): the planner keeps the sizes a user chose and chooses the others.
fn given_on_command_line(flag: &str) -> bool {
    crate::report::reproduce::command_line()
        .iter()
        .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
}
/// The time budget a run of `args` keeps, seconds: `--budget`, else the default of a program
/// audit that names no `--trials` (`None`: no budget).
fn run_budget(args: &RunArgs) -> Result<Option<f64>> {
    Ok(match (&args.search.budget, args.search.trials) {
        (Some(b), _) => Some(parse_budget(b)?),
        (None, None) if args.exec.is_some() && !args.sequential => {
            Some(crate::modes::run::DEFAULT_EXEC_BUDGET_SECONDS)
        }
        _ => None,
    })
}

/// Parses `--budget`: seconds, or a number followed by `s`, `m` or `h` (`60s`, `2m`, `1.5h`).
pub(crate) fn parse_budget(s: &str) -> Result<f64> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    let v: f64 = num.trim().parse().map_err(|_| {
        Error::InvalidConfig(format!(
            "--budget {s}; allowed: seconds, or a number with s, m or h (e.g. 60s, 2m)"
        ))
    })?;
    let secs = v * unit;
    if !(secs.is_finite() && (1.0..=MAX_SEARCH_SECONDS).contains(&secs)) {
        return Err(Error::InvalidConfig(format!(
            "--budget {s}; allowed: 1 s to {} s (a week)",
            readable(MAX_SEARCH_SECONDS)
        )));
    }
    Ok(secs)
}

/// The flags a Bayesian DP audit (`--claim bdp:EPS:DELTA`, `--data FILE`) needs and refuses.
fn check_bayesian_flags(args: &RunArgs, target: &Target) -> Result<()> {
    let claim = target.claim;
    if !claim.is_bayesian() {
        return Err(Error::InvalidConfig(format!(
            "--data is the data distribution of a Bayesian DP claim; the claim is {claim}, allowed with --data: --claim bdp:EPS:DELTA"
        )));
    }
    // A catalogue bdp-* entry states its claim for the data it ships with (examples/bdp-data.txt):
    // without --data that is the distribution audited, so `audit run --mechanism ID` alone
    // works for every entry `audit list` shows.
    let shipped = args.data.is_none()
        && args.exec.is_none()
        && args
            .mechanism
            .as_deref()
            .is_some_and(|id| catalogue::bayesian_ids().contains(&id));
    if args.data.is_none() && !shipped {
        return Err(Error::InvalidConfig(format!(
            "claim {claim} is Bayesian DP: it needs its data distribution, --data FILE (one record per line)"
        )));
    }
    for (flag, on) in [
        ("--finder", args.search.finder.is_some()),
        ("--sequential", args.sequential),
        ("--transform", args.transform.is_some()),
    ] {
        if on {
            return Err(Error::InvalidConfig(format!(
                "{flag} does not apply to a Bayesian DP audit (claim {claim}); leave it out"
            )));
        }
    }
    if let Some(d) = &args.bdp_definition {
        crate::audit::bayesian::Definition::parse_flag(d)?;
    }
    if let Some(k) = args.group
        && !(1..=crate::accounting::bayesian::MAX_GROUP as usize).contains(&k)
    {
        return Err(Error::InvalidConfig(format!(
            "--group {k}; allowed: a whole number from 1 to {} (the records that differ, each drawn from --data)",
            crate::accounting::bayesian::MAX_GROUP
        )));
    }
    // An exec program is not searched: x' comes from --data, D is --dataset-size records at the
    // middle of --record-range (see crate::modes::run::run_bayesian). The flags only a search
    // reads are refused.
    if args.exec.is_some() {
        let s = &args.search;
        for (flag, on) in [
            ("--trials", s.trials.is_some()),
            ("--search-samples", s.search_samples.is_some()),
            ("--confirm", s.confirm.is_some()),
            ("--pairs", s.pairs.is_some()),
            ("--typical-data", s.typical_data.is_some()),
            ("--max-search-seconds", s.max_search_seconds.is_some()),
            ("--budget", s.budget.is_some()),
        ] {
            if on {
                return Err(Error::InvalidConfig(format!(
                    "{flag} applies to a dataset search; a Bayesian DP audit of --exec draws x' from --data and searches nothing, leave {flag} out"
                )));
            }
        }
    }
    if args.tester != "hockey-stick" && args.tester != crate::audit::bayesian::TESTER_NAME {
        return Err(Error::InvalidConfig(format!(
            "--tester {} with a Bayesian DP claim; only {} tests it (the worst-case testers bound a fixed pair, about which a bdp: claim says nothing); leave --tester out",
            args.tester,
            crate::audit::bayesian::TESTER_NAME
        )));
    }
    Ok(())
}

/// The `--dataset-size` values an exec audit under `relation` can use: D and its neighbor must
/// both have a size the program's domain allows (add-remove: n and n + 1; replace-one: n and n,
/// n ≥ 1, a record to replace; zero-out: n + 1 and n + 1), as
/// [`crate::finders::PairSpace::new`] and the Bayesian exec audit require.
fn exec_dataset_sizes(
    domain: &crate::mechanisms::RecordDomain,
    relation: Neighboring,
) -> (usize, usize) {
    match relation {
        Neighboring::AddRemove => (domain.min_size, domain.max_size.saturating_sub(1)),
        Neighboring::ReplaceOne => (domain.min_size.max(1), domain.max_size),
        Neighboring::ZeroOut => (
            domain.min_size.saturating_sub(1),
            domain.max_size.saturating_sub(1),
        ),
    }
}

#[cfg(test)]
mod dataset_size_tests {
    use super::*;

    /// The sizes the --exec message states are those the dataset search accepts: its minimum
    /// and maximum pass, one past either is refused.
    #[test]
    fn the_stated_exec_sizes_are_the_real_ones() {
        // A record dimension that leaves 10 records per dataset, so the search's own limit of 64
        // does not hide the domain's.
        let dim = crate::sources::exec::MAX_DATASET_VALUES / 10;
        let domain = ExecMechanism::domain(0.0, 1.0, dim);
        for relation in [
            Neighboring::AddRemove,
            Neighboring::ReplaceOne,
            Neighboring::ZeroOut,
        ] {
            let (lo, hi) = exec_dataset_sizes(&domain, relation);
            let space = |n| crate::finders::PairSpace::new(domain, n, relation);
            assert!(space(lo).is_ok(), "{relation} {lo}");
            assert!(space(hi).is_ok(), "{relation} {hi}");
            assert!(space(hi + 1).is_err(), "{relation} {}", hi + 1);
            if lo > 0 {
                assert!(space(lo - 1).is_err(), "{relation} {}", lo - 1);
            }
        }
        // D = ∅ is allowed under add-remove (∅ against one record).
        assert_eq!(exec_dataset_sizes(&domain, Neighboring::AddRemove).0, 0);
    }
}

#[cfg(test)]
mod delta_warning_tests {
    use super::*;

    #[test]
    fn a_delta_near_one_over_n_is_warned_about_and_a_small_one_is_not() {
        let approx = |delta| PrivacyClaim::Approximate {
            epsilon: 1.0,
            delta,
        };
        let w = delta_warning(&approx(0.1), 6).expect("δ = 0.1 with 6 records");
        assert!(
            w.contains("δ = 0.1") && w.contains("6 records") && w.contains("(0, 1/n)"),
            "{w}"
        );
        assert!(delta_warning(&approx(1e-5), 6).is_none());
        assert!(delta_warning(&approx(1e-3), 1000).is_some());
        assert!(delta_warning(&PrivacyClaim::Pure { epsilon: 1.0 }, 6).is_none());
    }
}

/// The reporting flags a catalogue entry refuses (it declares its own).
fn refuse_exec_only_flags(args: &RunArgs) -> Result<()> {
    if args.setting.is_some()
        || args.privacy_unit.is_some()
        || args.data_accesses.is_some()
        || args.outputs_covered.is_some()
    {
        return Err(Error::InvalidConfig(
            "--setting/--privacy-unit/--data-accesses/--outputs-covered with --mechanism; allowed: those flags with --exec PROGRAM (a catalogue entry declares its own setting, privacy unit and what its guarantee covers: `audit list ID`)".into(),
        ));
    }
    Ok(())
}
