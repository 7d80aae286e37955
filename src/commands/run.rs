//! `audit run`: a catalogue entry on its witness pair, a dataset search (`--finder`, and always
//! for `--exec`), or the sequential audit.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{Outcome, ReportArgs, announce_report, to_json};
use crate::audit::{AuditConfig, Verdict, audit_pair};
use crate::error::{Error, Result};
use crate::mechanisms::math::readable;
use crate::mechanisms::{
    Dataset, DatasetPair, Mechanism, Neighboring, Params, PrivacyClaim, RecordDomain, catalogue,
};
use crate::report::text::{render_search_text, render_text};
use crate::testers::{self, PropertyTester, Transform, TransformedMechanism};

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
    /// Override the claim: pure:EPS, approx:EPS:DELTA, renyi:ALPHA:EPS, zcdp:RHO, gdp:MU,
    /// dpsgd:Q:Z:T, or ledger:FILE[:DELTA] (the PLD accountant's ε on a privacy ledger at δ,
    /// default 1e-5).
    #[arg(long)]
    pub claim: Option<String>,
    /// The data distribution μ of a Bayesian DP claim (bdp:EPS:DELTA): one record per line, a
    /// JSON number or array. The differing record x' is drawn from these lines (see
    /// dp_audit::audit::bayesian); required with a bdp: claim and read by nothing else.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
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
    /// plots the betting wealth against the 1/β threshold.
    #[arg(long, conflicts_with_all = ["samples", "finder", "exec"])]
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
}

impl ExecLimits {
    /// Checks the flags: given only with --exec (`exec`), numbers in range.
    pub(crate) fn check(&self, exec: bool) -> Result<()> {
        if !exec {
            for (flag, on) in [
                ("--exec-timeout", self.exec_timeout.is_some()),
                ("--exec-batch", self.exec_batch.is_some()),
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

/// Longest `--exec-timeout`: a day.
pub const MAX_EXEC_TIMEOUT_SECONDS: f64 = 86_400.0;
/// Longest `--max-search-seconds`: a week.
pub const MAX_SEARCH_SECONDS: f64 = 604_800.0;
/// Smallest β a run accepts: below it the bounds' tail computations lose their meaning (γ = β/20
/// must stay a normal f64 with room to spare), and no audit needs it.
pub const MIN_FAILURE_PROBABILITY: f64 = 1e-100;

/// Checks seconds given on the command line: finite, from 1 ms to `max`.
pub(crate) fn check_seconds(flag: &str, v: f64, max: f64) -> Result<std::time::Duration> {
    if !(v.is_finite() && (1e-3..=max).contains(&v)) {
        return Err(Error::InvalidConfig(format!(
            "{flag} {}; allowed: 0.001 to {} seconds",
            readable(v),
            readable(max)
        )));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}

/// Checks `--failure-probability`: MIN_FAILURE_PROBABILITY ≤ β < 1.
pub(crate) fn check_beta(v: f64) -> Result<()> {
    if !(v.is_finite() && (MIN_FAILURE_PROBABILITY..1.0).contains(&v)) {
        return Err(Error::InvalidConfig(format!(
            "--failure-probability {}; allowed: {} ≤ β < 1",
            readable(v),
            readable(MIN_FAILURE_PROBABILITY)
        )));
    }
    Ok(())
}

/// Checks a count flag against `[lo, hi]`.
pub(crate) fn check_count(flag: &str, v: usize, lo: usize, hi: usize) -> Result<()> {
    if !(lo..=hi).contains(&v) {
        return Err(Error::InvalidConfig(format!(
            "{flag} {v}; allowed: {} to {}",
            readable(lo as f64),
            readable(hi as f64)
        )));
    }
    Ok(())
}

/// The largest `--jobs`: 4 × the cores this process may use.
pub fn max_jobs() -> usize {
    4 * std::thread::available_parallelism().map_or(1, |n| n.get())
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
        100,
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

/// What `audit run` audits: a catalogue entry or an exec program.
struct Target {
    mechanism: Box<dyn Mechanism>,
    /// The catalogue witness, if any.
    witness: Option<DatasetPair>,
    /// Catalogue status word, if any.
    status: Option<String>,
    /// The claim to test.
    claim: PrivacyClaim,
    /// Where the claim came from, when it is not the mechanism's own statement.
    claim_source: Option<String>,
    /// The output transform `mechanism` applies (already wrapped in), `None` for the identity.
    transform: Option<Transform>,
    /// The layers to check (then `mechanism` returns raw releases), `None` for a single view.
    layers: Option<crate::record::layers::Check>,
}

pub(super) fn run_audit(args: &RunArgs) -> Result<Outcome> {
    check_flags(args)?;
    match args.jobs {
        None => run_audit_inner(args),
        Some(0) => Err(Error::InvalidConfig("--jobs 0; allowed: at least 1".into())),
        Some(j) => rayon::ThreadPoolBuilder::new()
            .num_threads(j)
            .build()
            .map_err(|e| Error::InvalidConfig(format!("--jobs {j}: {e}")))?
            .install(|| run_audit_inner(args)),
    }
}

pub(crate) fn parse_range(s: &str) -> Result<(f64, f64)> {
    let bad = || {
        Error::InvalidConfig(format!(
            "--record-range {s}; allowed: LO:HI with finite LO < HI, e.g. 0:1 or -5:5"
        ))
    };
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let lo: f64 = a.trim().parse().map_err(|_| bad())?;
    let hi: f64 = b.trim().parse().map_err(|_| bad())?;
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(bad());
    }
    if lo >= hi {
        return Err(Error::InvalidConfig(format!(
            "--record-range {s}: LO = {lo} is not below HI = {hi}; allowed: LO:HI with LO < HI, e.g. {}:{}",
            hi.min(lo),
            hi.max(lo)
        )));
    }
    Ok((lo, hi))
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

/// The `audit` command line that re-runs this process's run exactly: the arguments as given,
/// less how the result is shown (`--report-dir`, `--no-report`, `--json`, `--quiet`), and except
/// that a time budget (`--budget`, `--max-search-seconds`) and `--trials` are replaced by
/// `--trials K`, the trials this run scored (a time budget stops at a machine-dependent trial; the
/// same trials from the same seed give the same pairs and samples).
pub(crate) fn reproduce_line(trials_scored: Option<usize>) -> String {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut kept: Vec<String> = vec!["audit".into()];
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let timed = ["--budget", "--max-search-seconds", "--trials"];
        // Where the report goes and how quiet the run is do not change the result.
        if a == "--report-dir" {
            i += 2;
            continue;
        }
        if a.starts_with("--report-dir=")
            || ["--quiet", "-q", "--json", "--no-report"].contains(&a.as_str())
        {
            i += 1;
            continue;
        }
        if trials_scored.is_some() && timed.contains(&a.as_str()) {
            i += 2;
            continue;
        }
        if trials_scored.is_some() && timed.iter().any(|t| a.starts_with(&format!("{t}="))) {
            i += 1;
            continue;
        }
        kept.push(a.clone());
        i += 1;
    }
    if let Some(k) = trials_scored {
        kept.push("--trials".into());
        kept.push(k.to_string());
    }
    shlex::try_join(kept.iter().map(String::as_str)).unwrap_or_else(|_| kept.join(" "))
}

/// Peak memory of a run per byte of releases (both sides as f64), measured (max RSS, release
/// build): hockey-stick 1.06× on `svt3 --samples 2000000` (675 MB for 640 MB of releases) and
/// 1.93× on `laplace-sum --samples 20000000`; MMD 1.9×, histogram 1.7× on
/// `gaussian-sum-analytic --samples 10000000`; Rényi 3.25× on `gradient-perturbation --samples
/// 5000000` (its sorted copies per side). The largest, rounded up.
const PEAK_PER_RELEASE_BYTE: f64 = 3.5;

/// Memory this process may still use: `MemAvailable` of /proc/meminfo (Linux), or less when the
/// environment variable `DP_AUDIT_MEMORY_LIMIT` (bytes, e.g. `8e9`) says so; `None` when neither
/// is known.
fn available_memory_bytes() -> Option<f64> {
    let limit: Option<f64> = std::env::var("DP_AUDIT_MEMORY_LIMIT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|v: &f64| v.is_finite() && *v > 0.0);
    let meminfo = (|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024.0)
    })();
    match (limit, meminfo) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Refuses, before any sampling, a run whose releases (n per side of dimension `dim`) would not
/// fit in memory, with the estimate and the limit.
fn check_memory(flag: &str, n: usize, dim: usize) -> Result<()> {
    let releases = 2.0 * n as f64 * dim.max(1) as f64 * 8.0;
    let need = releases * PEAK_PER_RELEASE_BYTE;
    if let Some(avail) = available_memory_bytes()
        && need > avail
    {
        return Err(Error::InvalidConfig(format!(
            "{flag} {n} with output dimension {dim}: the run needs about {} GB of memory ({} MB of releases × {PEAK_PER_RELEASE_BYTE} for the testers' copies) and {} GB are available; allowed: fewer releases",
            readable(need / 1e9),
            readable(releases / 1e6),
            readable(avail / 1e9)
        )));
    }
    Ok(())
}

/// Default time budget of an exec audit (search and confirmation together).
pub const DEFAULT_EXEC_BUDGET_SECONDS: f64 = 60.0;

fn build_target(args: &RunArgs) -> Result<Target> {
    use super::claim_arg::parse_claim_arg;
    if let Some(command) = &args.exec {
        let claim_text = args.claim.as_deref().ok_or_else(|| {
            Error::InvalidConfig(
                "--exec needs --claim (pure:EPS, approx:EPS:DELTA, renyi:ALPHA:EPS, zcdp:RHO, gdp:MU, dpsgd:Q:Z:T or ledger:FILE[:DELTA])".into(),
            )
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
        let domain = crate::sources::exec::ExecMechanism::domain(lo, hi, dim);
        let timeout = args.limits.timeout()?;
        let size = args.search.dataset_size.unwrap_or(3).max(1);
        if size > domain.max_size {
            return Err(Error::InvalidConfig(format!(
                "--dataset-size {size}; allowed for --exec: 1 to {} ({} values / --record-dim {dim})",
                domain.max_size,
                crate::sources::exec::MAX_DATASET_VALUES
            )));
        }
        let parsed = parse_claim_arg(claim_text, relation)?;
        let claim = parsed.claim;
        // One allocation for the probe, however large the dataset.
        let probe = Dataset::from_array(ndarray::Array2::from_elem((size, dim), 0.5 * (lo + hi)))?;
        let m = crate::sources::exec::ExecMechanism::new(
            command, claim, relation, domain, timeout, &probe,
        )?
        .with_batch_size(args.limits.batch())?
        .with_accountant(parsed.accountant);
        // Layers by default; an explicit --transform audits through that one view.
        let layers = match (&args.check, &args.transform) {
            (_, Some(_)) => None,
            (Some(c), None) => Some(c.parse()?),
            (None, None) => Some(crate::record::layers::Check::Both),
        };
        // Without layers an explicit --transform names the one view.
        let (mechanism, transform) = match (&layers, &args.transform) {
            (None, Some(t)) => with_transform(Box::new(m), t)?,
            _ => (Box::new(m) as Box<dyn Mechanism>, None),
        };
        return Ok(Target {
            mechanism,
            witness: None,
            status: None,
            claim,
            claim_source: parsed.source,
            transform,
            layers,
        });
    }
    let id = args.mechanism.as_deref().unwrap_or_default();
    let params = Params::parse(&args.params)?;
    let entry = catalogue::build(id, &params)?;
    let claim_arg = match &args.claim {
        Some(c) => Some(parse_claim_arg(c, entry.mechanism.neighboring())?),
        None => None,
    };
    let claim_source = claim_arg.as_ref().map(|c| {
        format!(
            "{} (the mechanism states {})",
            c.source.as_deref().unwrap_or("given on the command line"),
            entry.mechanism.claim()
        )
    });
    let claim = claim_arg.map_or_else(|| entry.mechanism.claim(), |c| c.claim);
    // An entry whose bug lives in the float representation names the transform it is audited
    // through; an explicit --transform (including `none`) overrides it.
    let recommended = catalogue::recommended_transform_for(id, &*entry.mechanism);
    let spelling = args
        .transform
        .as_deref()
        .or(recommended.as_deref())
        .unwrap_or("none");
    let layers: Option<crate::record::layers::Check> = match &args.check {
        Some(c) => Some(c.parse()?),
        None => None,
    };
    let (mechanism, transform) = if layers.is_some() {
        (entry.mechanism, None)
    } else {
        with_transform(entry.mechanism, spelling)?
    };
    Ok(Target {
        mechanism,
        witness: Some(entry.witness),
        status: Some(entry.status.word().to_string()),
        claim,
        claim_source,
        transform,
        layers,
    })
}

/// Wraps `m` in the output transform spelled `spelling` (`none`: unchanged).
fn with_transform(
    m: Box<dyn Mechanism>,
    spelling: &str,
) -> Result<(Box<dyn Mechanism>, Option<Transform>)> {
    let t: Transform = spelling.parse()?;
    if t.is_identity() {
        Ok((m, None))
    } else {
        Ok((Box::new(TransformedMechanism::new(m, t)?), Some(t)))
    }
}

fn run_audit_inner(args: &RunArgs) -> Result<Outcome> {
    // Validate everything cheap before any sampling.
    testers::parse_list(&args.tester)?;
    let target = build_target(args)?;
    let claim = target.claim;
    if args.sequential {
        return run_sequential(args, &target);
    }
    if claim.is_bayesian() || args.data.is_some() {
        if args.check.is_some() {
            return Err(Error::InvalidConfig(
                "--check applies to audits of a pair of datasets (catalogue entries, --exec, --sequential); a Bayesian DP audit has one view of the releases, leave --check out".into(),
            ));
        }
        return run_bayesian(args, &target);
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
    let searching = args.search.finder.is_some() || args.exec.is_some();
    if let Some(check) = target.layers {
        return run_layered(args, &target, check, &testers, &skipped, &config);
    }
    if searching {
        return run_search(args, &target, &testers, &skipped, &config);
    }
    let entry_mechanism = &target.mechanism;
    let witness = target.witness.clone().ok_or_else(|| {
        Error::InvalidConfig(
            "this target has no witness pair; allowed: a catalogue --mechanism, or --finder to search for a pair"
                .into(),
        )
    })?;
    let mechanism_name = args.mechanism.clone().unwrap_or_default();
    if !args.report.no_report {
        crate::report::prepare_report_dir(&args.report.report_dir)?;
    }
    let spinner = crate::report::progress::Spinner::start_counting(
        args.report.quiet,
        &format!("auditing {mechanism_name}"),
        Some(2 * args.samples as u64),
    );
    let mut report = audit_pair(&**entry_mechanism, &claim, &witness, &testers, &config)?;
    report.skipped_testers = skipped;
    report.reproduce = Some(reproduce_line(None));
    report.mechanism.catalogue_status = target.status.clone();
    report.output_transform = target.transform;
    if let Some(src) = &target.claim_source {
        report.mechanism.claim_source = src.clone();
    }
    let code = match report.verdict {
        Verdict::Violation => 1,
        Verdict::NoViolation => 0,
    };
    // A report that cannot be written (disk full) never costs the verdict: it is printed first
    // and the error after it.
    let written = (|| -> Result<Option<PathBuf>> {
        if args.report.no_report {
            return Ok(None);
        }
        // Plot samples come from streams of their own: the verdict's samples are untouched.
        let plots = crate::report::PlotData::draw(
            &**entry_mechanism,
            &witness,
            args.seed,
            crate::report::PLOT_SAMPLES_PER_SIDE,
        )?;
        Ok(Some(crate::report::write_run_report(
            &args.report.report_dir,
            &report,
            &plots,
        )?))
    })();
    let (report_index, late_error) = super::split_late(written);
    drop(spinner);
    let mut stdout = if args.json {
        let mut r = report.clone();
        r.wall_time_seconds = None;
        serde_json::to_string_pretty(&r).map_err(|e| Error::InvalidConfig(e.to_string()))? + "\n"
    } else {
        render_text(&report)
    };
    if let Some(index) = &report_index {
        announce_report(index, args.json, args.report.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}

/// `audit run --claim bdp:EPS:DELTA --data FILE`: the Bayesian DP audit ([`crate::audit::bayesian`]) on
/// the catalogue witness's smaller dataset as the fixed rest of the data.
fn run_bayesian(args: &RunArgs, target: &Target) -> Result<Outcome> {
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
        ("--exec", args.exec.is_some()),
        ("--sequential", args.sequential),
        ("--transform", args.transform.is_some()),
    ] {
        if on {
            return Err(Error::InvalidConfig(format!(
                "{flag} does not apply to a Bayesian DP audit (claim {claim}); leave it out"
            )));
        }
    }
    if args.tester != "hockey-stick" && args.tester != crate::audit::bayesian::TESTER_NAME {
        return Err(Error::InvalidConfig(format!(
            "--tester {} with a Bayesian DP claim; only {} tests it (the worst-case testers bound a fixed pair, about which a bdp: claim says nothing); leave --tester out",
            args.tester,
            crate::audit::bayesian::TESTER_NAME
        )));
    }
    let witness = target.witness.as_ref().ok_or_else(|| {
        Error::InvalidConfig("a Bayesian DP audit needs a catalogue --mechanism".into())
    })?;
    let base = if witness.first().len() <= witness.second().len() {
        witness.first()
    } else {
        witness.second()
    };
    let m = &*target.mechanism;
    let (data, source) = match &args.data {
        Some(path) => (
            crate::audit::bayesian::read_data(path, &m.domain())?,
            path.display().to_string(),
        ),
        None => {
            let records = catalogue::bayesian::data();
            let text: String = records.iter().map(|r| format!("{r:?}\n")).collect();
            (
                crate::audit::bayesian::parse_data(&text, "examples/bdp-data.txt", &m.domain())?,
                "the entry's own data: the 1000 records of examples/bdp-data.txt (shipped with the catalogue; --data FILE audits another distribution)".to_string(),
            )
        }
    };
    check_memory("--samples", args.samples, m.output_dim() + 2)?;
    if !args.report.no_report {
        crate::report::prepare_report_dir(&args.report.report_dir)?;
    }
    let config = crate::audit::bayesian::BayesianConfig {
        seed: args.seed,
        draws_per_side: args.samples,
        failure_probability: args.failure_probability,
    };
    let spinner = crate::report::progress::Spinner::start(
        args.report.quiet,
        &format!("auditing {} (Bayesian DP)", m.id()),
    );
    let mut report =
        crate::audit::bayesian::audit_bayesian(m, &claim, base, &data, &source, &config)?;
    drop(spinner);
    report.reproduce = Some(reproduce_line(None));
    report.mechanism.catalogue_status = target.status.clone();
    if let Some(src) = &target.claim_source {
        report.mechanism.claim_source = src.clone();
    }
    let code = match report.verdict {
        Verdict::Violation => 1,
        Verdict::NoViolation => 0,
    };
    let (report_index, late_error) = super::split_late(if args.report.no_report {
        Ok(None)
    } else {
        crate::report::write_run_report(
            &args.report.report_dir,
            &report,
            &crate::report::PlotData::none(),
        )
        .map(Some)
    });
    let mut stdout = if args.json {
        report.wall_time_seconds = None;
        to_json(&report)?
    } else {
        render_text(&report)
    };
    if let Some(index) = &report_index {
        announce_report(index, args.json, args.report.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}

/// `audit run --sequential`: the anytime-valid betting audit on the catalogue witness.
fn run_sequential(args: &RunArgs, target: &Target) -> Result<Outcome> {
    use crate::audit::sequential::{SequentialConfig, audit_sequential};
    if args.tester != "hockey-stick" {
        return Err(Error::InvalidConfig(format!(
            "--tester {} with --sequential; the sequential audit uses its own betting test, leave --tester out",
            args.tester
        )));
    }
    let witness = target
        .witness
        .as_ref()
        .ok_or_else(|| Error::InvalidConfig("--sequential needs a catalogue --mechanism".into()))?;
    if let Some(check) = target.layers {
        return run_sequential_layered(args, target, check, witness);
    }
    let defaults = SequentialConfig::default();
    let config = SequentialConfig {
        seed: args.seed,
        max_samples_per_side: args.max_samples.unwrap_or(defaults.max_samples_per_side),
        first_batch: args.first_batch.unwrap_or(defaults.first_batch),
        failure_probability: args.failure_probability,
    };
    config.validate(target.mechanism.output_dim())?;
    check_memory(
        "--max-samples",
        config.max_samples_per_side,
        target.mechanism.output_dim(),
    )?;
    if !args.report.no_report {
        crate::report::prepare_report_dir(&args.report.report_dir)?;
    }
    let spinner = crate::report::progress::Spinner::start(
        args.report.quiet,
        &format!("auditing {} sequentially", target.mechanism.id()),
    );
    let mut report = audit_sequential(&*target.mechanism, &target.claim, witness, &config)?;
    drop(spinner);
    report.reproduce = Some(reproduce_line(None));
    report.mechanism.catalogue_status = target.status.clone();
    report.output_transform = target.transform;
    if let Some(src) = &target.claim_source {
        report.mechanism.claim_source = src.clone();
    }
    let code = match report.verdict {
        Verdict::Violation => 1,
        Verdict::NoViolation => 0,
    };
    let (report_index, late_error) = super::split_late(if args.report.no_report {
        Ok(None)
    } else {
        crate::report::sequential::write_sequential_report(&args.report.report_dir, &report)
            .map(Some)
    });
    let mut stdout = if args.json {
        report.wall_time_seconds = None;
        to_json(&report)?
    } else {
        crate::audit::sequential::render_text(&report)
    };
    if let Some(index) = &report_index {
        announce_report(index, args.json, args.report.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}

/// Reads `--pairs FILE`: one JSON object per line, `{"first": [...], "second": [...]}`, records
/// as numbers or arrays. Errors name the line and what is wrong.
fn read_pairs(
    path: &Path,
    domain: &RecordDomain,
    relation: Neighboring,
) -> Result<Vec<DatasetPair>> {
    let text = crate::sources::text::read_text(path)
        .map_err(|e| Error::InvalidConfig(format!("--pairs {}: {e}", path.display())))?;
    let mut pairs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        let at = |what: String| {
            Error::InvalidConfig(format!("--pairs {} line {}: {what}", path.display(), i + 1))
        };
        let v: serde_json::Value =
            serde_json::from_str(l).map_err(|e| at(format!("not JSON ({e})")))?;
        let side = |key: &str| -> Result<Dataset> {
            let recs = v.get(key).ok_or_else(|| {
                at(format!(
                    "missing \"{key}\"; expected {{\"first\": [...], \"second\": [...]}}"
                ))
            })?;
            let d = Dataset::from_json_records(recs, Some(domain.dim))
                .map_err(|e| at(format!("\"{key}\": {e}")))?;
            domain
                .check(&d)
                .map_err(|e| at(format!("\"{key}\": {e}")))?;
            Ok(d)
        };
        let pair = DatasetPair::new(side("first")?, side("second")?, relation)
            .map_err(|e| at(e.to_string()))?;
        pairs.push(pair);
    }
    if pairs.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "--pairs {}: no pairs in the file",
            path.display()
        )));
    }
    Ok(pairs)
}

/// The finder and search settings of a dataset search (`--finder`, `--exec`), checked.
fn search_setup(
    args: &RunArgs,
    target: &Target,
) -> Result<(
    Box<dyn crate::finders::DatasetFinder>,
    String,
    crate::finders::SearchConfig,
)> {
    use crate::finders::{
        DatasetFinder, PairSpace, SearchConfig, TypicalFinder, finder_by_name, finder_rng,
    };
    let m = &*target.mechanism;
    let s = &args.search;
    let mut domain = m.domain();
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
        domain.lower = lo;
        domain.upper = hi;
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
    let size = s.dataset_size.unwrap_or_else(|| {
        target
            .witness
            .as_ref()
            .map_or(3, |w| w.first().len().min(w.second().len()).clamp(1, 16))
    });
    // Unknown programs get the portfolio; a catalogue search names its finder. `typical` is
    // the old name of `from-data` (it never tested Bayesian DP; see dp_audit::audit::bayesian).
    let finder_name = match s.finder.clone().unwrap_or_else(|| "portfolio".into()) {
        f if f == "typical" => "from-data".to_string(),
        f => f,
    };
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
    let defaults = SearchConfig::default();
    let budget = match (&s.budget, s.trials) {
        (Some(b), _) => Some(parse_budget(b)?),
        (None, None) if args.exec.is_some() => Some(DEFAULT_EXEC_BUDGET_SECONDS),
        _ => None,
    };
    // With a time budget the trial count is the budget's to decide (at most the largest
    // --trials); without one it is --trials or 20.
    let trials = s.trials.unwrap_or(if budget.is_some() {
        100_000
    } else {
        defaults.trials
    });
    let rng = finder_rng(args.seed);
    let finder: Box<dyn DatasetFinder> = if finder_name == "from-data" {
        let path = s.typical_data.as_ref().ok_or_else(|| {
            Error::InvalidConfig("--finder from-data needs --typical-data FILE".into())
        })?;
        let text = crate::sources::text::read_text(path)
            .map_err(|e| Error::InvalidConfig(format!("--typical-data {}: {e}", path.display())))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            Error::InvalidConfig(format!("--typical-data {}: not JSON ({e})", path.display()))
        })?;
        let data = Dataset::from_json_records(&v, Some(domain.dim))?;
        domain
            .check(&Dataset::from_array(data.records().clone())?)
            .or_else(|e| {
                // The sample may be larger than the mechanism's dataset sizes; check records only.
                let one = Dataset::vectors(domain.dim, &data.to_rows()[..1])?;
                domain.check(&one).map_err(|_| e)
            })?;
        Box::new(TypicalFinder::new(data, size, relation, rng)?)
    } else if finder_name == "portfolio" {
        // The portfolio builds its pairs directly, so it takes datasets of any size the domain
        // accepts (the box finders it contains search at smaller sizes).
        Box::new(crate::finders::PortfolioFinder::new(
            domain, size, relation, rng,
        )?)
    } else {
        let space = PairSpace::new(domain, size, relation)?;
        let fixed = match &s.pairs {
            Some(p) => read_pairs(p, &domain, relation)?,
            None => target.witness.iter().cloned().collect(),
        };
        finder_by_name(&finder_name, space, fixed, trials, rng)?
    };
    let search = SearchConfig {
        trials,
        search_samples: s.search_samples.unwrap_or(defaults.search_samples),
        confirm_top: s.confirm.unwrap_or(defaults.confirm_top),
        wall_clock_seconds: s.max_search_seconds,
        max_samples: None,
        budget_seconds: budget,
    };
    Ok((finder, finder_name, search))
}

fn run_search(
    args: &RunArgs,
    target: &Target,
    testers: &[Box<dyn PropertyTester>],
    skipped: &[String],
    config: &AuditConfig,
) -> Result<Outcome> {
    let m = &*target.mechanism;
    let (mut finder, finder_name, search) = search_setup(args, target)?;
    if !args.report.no_report {
        crate::report::prepare_report_dir(&args.report.report_dir)?;
    }
    let ticker = crate::report::progress::Ticker::start(
        args.report.quiet,
        &format!("{} with {finder_name}", m.id()),
        None,
    );
    let observe = |p: &crate::finders::SearchProgress| ticker.update(p);
    let rep = crate::finders::search_and_confirm_observed(
        m,
        &target.claim,
        &mut *finder,
        testers,
        &search,
        config,
        &observe,
    );
    drop(ticker);
    let mut rep = rep?;
    for c in &mut rep.confirmations {
        c.skipped_testers = skipped.to_vec();
        c.mechanism.catalogue_status = target.status.clone();
        c.output_transform = target.transform;
        if let Some(src) = &target.claim_source {
            c.mechanism.claim_source = src.clone();
        }
    }
    let code = match rep.verdict {
        Verdict::Violation => 1,
        Verdict::NoViolation => 0,
    };
    let summary = crate::audit::SearchSummary {
        finder: rep.finder.clone(),
        trials: rep
            .trials
            .iter()
            .map(|t| crate::audit::TrialSummary {
                index: t.index,
                sizes: [t.pair.first().len(), t.pair.second().len()],
                score: t.score,
            })
            .collect(),
        skipped: rep
            .skipped
            .iter()
            .map(|t| crate::audit::SkippedSummary {
                index: t.index,
                pair: t.pair.short_sides(),
                error: t.error.clone(),
            })
            .collect(),
        confirmations: rep
            .confirmations
            .iter()
            // A confirmation is an audit of a pair, so it always has one.
            .filter_map(|c| {
                Some(crate::audit::ConfirmationSummary {
                    pair: c.pair.clone()?,
                    verdict: c.verdict,
                    margin: c
                        .bounds
                        .iter()
                        .map(|b| b.value - b.allowed)
                        .fold(f64::NEG_INFINITY, f64::max),
                })
            })
            .collect(),
        beta_rule: rep.beta_rule.clone(),
        verdict: rep.verdict,
        samples_drawn: rep.samples_drawn,
    };
    // Refused proposals count as trials: `--trials` bounds the proposals.
    let reproduce = reproduce_line(Some(rep.trials.len() + rep.skipped.len()));
    // The page shows the confirmation that decided: the violating one, else the last.
    let deciding = rep
        .confirmations
        .iter()
        .find(|c| c.verdict == Verdict::Violation)
        .or(rep.confirmations.last())
        .cloned()
        .map(|mut c| {
            c.reproduce = Some(reproduce.clone());
            c.search = Some(summary.clone());
            c
        });
    let written = write_deciding_page(args, m, deciding.as_ref(), false);
    let (report_index, late_error) = super::split_late(written);
    let mut stdout = if args.json {
        let mut r = rep.clone();
        for c in &mut r.confirmations {
            c.wall_time_seconds = None;
        }
        to_json(&r)?
    } else {
        render_search_text(&rep)
    };
    if let Some(index) = &report_index {
        announce_report(index, args.json, args.report.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}

/// Writes the page of a search's deciding confirmation `r` (none: no page, nor with
/// --no-report), its figures drawn from `m` on the confirmed pair from plot streams of their
/// own. `through_view`: `m` returns raw releases and the figures show them through the view the
/// confirmation's testers saw (a wide output's floating-point view, cut to a few coordinates,
/// falls back to the values).
fn write_deciding_page(
    args: &RunArgs,
    m: &dyn Mechanism,
    r: Option<&crate::audit::AuditReport>,
    through_view: bool,
) -> Result<Option<PathBuf>> {
    let Some(r) = r.filter(|_| !args.report.no_report) else {
        return Ok(None);
    };
    let pair = r
        .pair
        .as_ref()
        .ok_or_else(|| Error::InvalidConfig("internal: a confirmation without its pair".into()))?;
    let mut plots =
        crate::report::PlotData::draw(m, pair, args.seed, crate::report::PLOT_SAMPLES_PER_SIDE)?;
    if through_view && let (Some(t), Some((a, b))) = (r.output_transform, plots.sides.take()) {
        let whole = t != Transform::FloatRepr || a.dim() <= crate::finders::layered::FLOAT_COORDS;
        plots.sides = Some(if whole {
            (t.apply(&a)?, t.apply(&b)?)
        } else {
            (a, b)
        });
    }
    Ok(Some(crate::report::write_run_report(
        &args.report.report_dir,
        r,
        &plots,
    )?))
}

/// True when `flag` was given on this process's command line (`--flag V` or `--flag=V`): the
/// planner keeps the sizes a user chose and chooses the others.
fn given_on_command_line(flag: &str) -> bool {
    std::env::args()
        .skip(1)
        .any(|a| a == flag || a.starts_with(&format!("{flag}=")))
}

/// Two layers (see [`crate::record::layers`]): a dataset search that scores and confirms each layer
/// separately from the same releases. Without `--finder` on a catalogue entry the search is
/// its witness pair alone.
fn run_layered(
    args: &RunArgs,
    target: &Target,
    check: crate::record::layers::Check,
    testers: &[Box<dyn PropertyTester>],
    skipped: &[String],
    config: &AuditConfig,
) -> Result<Outcome> {
    use crate::finders::layered::{RunPlan, measure_speed, search_and_confirm_layered};
    let m = &*target.mechanism;
    let searching = args.search.finder.is_some() || args.exec.is_some();
    let (mut finder, finder_name, mut search) = if searching {
        search_setup(args, target)?
    } else {
        let witness = target.witness.clone().ok_or_else(|| {
            Error::InvalidConfig(
                "this target has no witness pair; allowed: a catalogue --mechanism, or --finder to search for a pair".into(),
            )
        })?;
        let finder: Box<dyn crate::finders::DatasetFinder> =
            Box::new(crate::finders::FixedFinder::new(vec![witness])?);
        let search = crate::finders::SearchConfig {
            trials: 1,
            search_samples: 5_000,
            confirm_top: 1,
            ..Default::default()
        };
        (finder, "fixed (the witness pair)".to_string(), search)
    };
    let mut config = config.clone();
    let layers = check.layers();
    // Plan the run to the budget at the speed measured on the probe dataset.
    let mut plan: Option<RunPlan> = None;
    if let Some(budget) = search.budget_seconds {
        let domain = m.domain();
        let size = args
            .search
            .dataset_size
            .unwrap_or(3)
            .max(domain.min_size)
            .max(1);
        let mid = 0.5 * (domain.lower + domain.upper);
        let mid = if domain.integer { mid.round() } else { mid };
        let probe = crate::mechanisms::Dataset::from_array(ndarray::Array2::from_elem(
            (size.min(domain.max_size), domain.dim),
            mid,
        ))?;
        let (per_call, per_release) = measure_speed(m, &probe, args.seed)?;
        let defaults = (
            config.samples_per_side,
            search.search_samples,
            search.confirm_top,
        );
        let p = RunPlan::fit(
            per_call,
            per_release,
            budget,
            layers.len(),
            crate::rng::chunk_len(m),
            rayon::current_num_threads(),
            given_on_command_line("--samples").then_some(config.samples_per_side),
            given_on_command_line("--search-samples").then_some(search.search_samples),
            given_on_command_line("--confirm").then_some(search.confirm_top),
            defaults,
        );
        config.samples_per_side = p.samples_per_side;
        search.search_samples = p.search_samples;
        search.confirm_top = p.confirm_per_layer;
        if !args.report.quiet {
            eprintln!("audit: {}", p.describe());
        }
        plan = Some(p);
    }
    if !args.report.no_report {
        crate::report::prepare_report_dir(&args.report.report_dir)?;
    }
    let what = format!(
        "{} with {finder_name}, layers: {}",
        m.id(),
        layers
            .iter()
            .map(|l| l.title())
            .collect::<Vec<_>>()
            .join(" + ")
    );
    let ticker = crate::report::progress::Ticker::start(
        args.report.quiet,
        &what,
        plan.as_ref().map(|p| (p.trials, p.total_seconds())),
    );
    let observe = |p: &crate::finders::SearchProgress| ticker.update(p);
    let rep = search_and_confirm_layered(
        m,
        &target.claim,
        &mut *finder,
        testers,
        &search,
        &config,
        &layers,
        &observe,
    );
    drop(ticker);
    let mut rep = rep?;
    rep.plan = plan.clone();
    let verdicts = rep.verdicts();
    for l in &mut rep.layers {
        if let Some(s) = &mut l.search {
            for c in &mut s.confirmations {
                c.skipped_testers = skipped.to_vec();
                c.mechanism.catalogue_status = target.status.clone();
                if let Some(src) = &target.claim_source {
                    c.mechanism.claim_source = src.clone();
                }
            }
        }
    }
    let code = match rep.verdict {
        Verdict::Violation => 1,
        Verdict::NoViolation => 0,
    };
    let planned: Vec<(&str, String)> = match &plan {
        Some(p) => vec![
            ("--samples", p.samples_per_side.to_string()),
            ("--search-samples", p.search_samples.to_string()),
            ("--confirm", p.confirm_per_layer.to_string()),
        ],
        None => Vec::new(),
    };
    let reproduce = reproduce_line_planned(
        searching.then_some(rep.trials_scored + rep.skipped.len()),
        &planned,
    );
    let deciding = rep.deciding().cloned().map(|mut c| {
        c.reproduce = Some(reproduce.clone());
        c.layers = Some(verdicts.clone());
        c
    });
    let written = write_deciding_page(args, m, deciding.as_ref(), true);
    let (report_index, late_error) = super::split_late(written);
    let mut stdout = if args.json {
        let mut r = rep.clone();
        r.plan = None;
        for l in &mut r.layers {
            if let Some(s) = &mut l.search {
                for c in &mut s.confirmations {
                    c.wall_time_seconds = None;
                }
            }
        }
        to_json(&r)?
    } else {
        crate::report::text::render_layered_text(&rep, &reproduce)
    };
    if let Some(index) = &report_index {
        announce_report(index, args.json, args.report.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}

/// [`reproduce_line`] with the sizes a planner chose (`--samples`, …) written out, replacing any
/// the user gave.
pub(crate) fn reproduce_line_planned(
    trials_scored: Option<usize>,
    planned: &[(&str, String)],
) -> String {
    let line = reproduce_line(trials_scored);
    if planned.is_empty() {
        return line;
    }
    let words = shlex::split(&line).unwrap_or_default();
    let mut kept: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if planned.iter().any(|(f, _)| w == f) {
            i += 2;
            continue;
        }
        if planned.iter().any(|(f, _)| w.starts_with(&format!("{f}="))) {
            i += 1;
            continue;
        }
        kept.push(w.clone());
        i += 1;
    }
    // `--trials K` stays last, as reproduce_line writes it, so that the line is a fixed point of
    // re-running it.
    let trials = kept.iter().position(|w| w == "--trials").map(|i| {
        let t: Vec<String> = kept.drain(i..(i + 2).min(kept.len())).collect();
        t
    });
    for (f, v) in planned {
        kept.push((*f).to_string());
        kept.push(v.clone());
    }
    kept.extend(trials.unwrap_or_default());
    shlex::try_join(kept.iter().map(String::as_str)).unwrap_or_else(|_| kept.join(" "))
}

/// `--sequential --check …`: the sequential audit once per layer, each through the layer's
/// view of a release at its share of β (union bound over the layers); the releases are drawn
/// again for each layer (catalogue entries are fast, and the same seed gives the same releases).
fn run_sequential_layered(
    args: &RunArgs,
    target: &Target,
    check: crate::record::layers::Check,
    witness: &DatasetPair,
) -> Result<Outcome> {
    use crate::audit::sequential::{SequentialConfig, audit_sequential};
    use crate::record::layers::{LayerKind, LayerVerdict};
    let id = args.mechanism.as_deref().unwrap_or_default();
    let params = Params::parse(&args.params)?;
    let layers = check.layers();
    let share = args.failure_probability / layers.len() as f64;
    let defaults = SequentialConfig::default();
    let config = SequentialConfig {
        seed: args.seed,
        max_samples_per_side: args.max_samples.unwrap_or(defaults.max_samples_per_side),
        first_batch: args.first_batch.unwrap_or(defaults.first_batch),
        failure_probability: share,
    };
    let mut reports = Vec::new();
    let mut verdicts: Vec<LayerVerdict> = Vec::new();
    let mut mechanism_violates = false;
    for kind in layers {
        let m =
            TransformedMechanism::new(catalogue::build(id, &params)?.mechanism, kind.transform())?;
        config.validate(m.output_dim())?;
        check_memory("--max-samples", config.max_samples_per_side, m.output_dim())?;
        let spinner = crate::report::progress::Spinner::start(
            args.report.quiet,
            &format!("auditing {id} sequentially, layer {}", kind.title()),
        );
        let mut report = audit_sequential(&m, &target.claim, witness, &config)?;
        drop(spinner);
        report.reproduce = Some(reproduce_line(None));
        report.mechanism.catalogue_status = target.status.clone();
        report.output_transform = Some(kind.transform());
        if let Some(src) = &target.claim_source {
            report.mechanism.claim_source = src.clone();
        }
        let v = LayerVerdict::from_verdict(
            kind,
            share,
            report.verdict,
            None,
            None,
            None,
            kind == LayerKind::FloatingPoint && mechanism_violates,
            1,
        );
        mechanism_violates |= kind == LayerKind::Mechanism && report.verdict == Verdict::Violation;
        verdicts.push(v);
        reports.push(report);
    }
    let violation = verdicts
        .iter()
        .any(|v| v.verdict == Some(Verdict::Violation));
    let code = u8::from(violation);
    let stdout = if args.json {
        #[derive(serde::Serialize)]
        struct Layer<'a> {
            verdict: &'a LayerVerdict,
            sequential: &'a crate::audit::sequential::SequentialReport,
        }
        #[derive(serde::Serialize)]
        struct Layered<'a> {
            layers: Vec<Layer<'a>>,
            verdict: Verdict,
        }
        let mut clean = reports.clone();
        for r in &mut clean {
            r.wall_time_seconds = None;
        }
        to_json(&Layered {
            layers: verdicts
                .iter()
                .zip(&clean)
                .map(|(verdict, sequential)| Layer {
                    verdict,
                    sequential,
                })
                .collect(),
            verdict: if violation {
                Verdict::Violation
            } else {
                Verdict::NoViolation
            },
        })?
    } else {
        let mut s = String::new();
        for (v, r) in verdicts.iter().zip(&reports) {
            s += &format!("\n===== layer: {} =====\n", v.title);
            s += &crate::audit::sequential::render_text(r);
        }
        s += "\n===== answers =====\n";
        s += &crate::record::layers::render_text(&verdicts);
        s += &format!(
            "β            {} split evenly over the {} layer(s) (union bound)\nverdict      {}\n",
            readable(args.failure_probability),
            verdicts.len(),
            if violation {
                "violation found"
            } else {
                "no violation found"
            }
        );
        s
    };
    // One page per layer (each is a complete sequential report).
    let mut stdout = stdout;
    let mut late_error = None;
    if !args.report.no_report {
        crate::report::prepare_report_dir(&args.report.report_dir)?;
        for r in &reports {
            match crate::report::sequential::write_sequential_report(&args.report.report_dir, r) {
                Ok(index) => announce_report(&index, args.json, args.report.quiet, &mut stdout),
                Err(e) => {
                    late_error.get_or_insert(e);
                }
            }
        }
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}
