//! The `audit` command line: clap structures, validation into library calls, and text rendering.
//! The binary (`src/bin/audit.rs`) only parses, calls [`run`] and maps the outcome to an exit code.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use crate::audit::{AuditConfig, AuditReport, Direction, Verdict, audit_pair};
use crate::error::{Error, Result};
use crate::mechanisms::{
    Dataset, DatasetPair, Mechanism, Neighboring, Params, PrivacyClaim, RecordDomain, catalogue,
};
use crate::testers::{self, PropertyTester, Transform, TransformedMechanism};

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
    /// List the catalogue: one line per entry, `ID  STATUS  CLAIM`.
    List {
        /// Print a JSON array of {id, status, claim} instead.
        #[arg(long)]
        json: bool,
    },
    /// Audit a catalogue mechanism's claim on its witness pair.
    Run(RunArgs),
    /// Privacy of the Poisson-subsampled Gaussian (DP-SGD): ε at δ from the RDP accountant,
    /// and for q = 1 the exact Gaussian value.
    Accountant(AccountantArgs),
    /// Audit a mechanism repeatedly over a range of one parameter and count detections.
    Sweep(SweepArgs),
    /// Test a claim on release samples drawn elsewhere (files in the exec line format).
    Test(TestArgs),
    /// Re-render a report (index.html and figures) from its audit.json without re-running.
    Report(ReportCommandArgs),
    /// Benchmarks: power on the scaled-noise Gaussian, tester speed, soundness seed sweep.
    Bench(crate::bench::BenchArgs),
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

/// Options of `audit accountant`.
#[derive(Debug, Args)]
pub struct AccountantArgs {
    /// Sampling rate q in (0, 1] (1 = full batch).
    #[arg(long)]
    pub sampling_rate: f64,
    /// Noise multiplier z > 0 (noise std = z · clipping norm).
    #[arg(long)]
    pub noise_multiplier: f64,
    /// Number of steps T ≥ 1.
    #[arg(long)]
    pub steps: u64,
    /// δ in (0, 1).
    #[arg(long)]
    pub delta: f64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Options of `audit sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Catalogue id of the mechanism.
    #[arg(long)]
    pub mechanism: String,
    /// Parameters NAME=VALUE; exactly one may be a range NAME=LO:HI:STEP (inclusive).
    #[arg(long = "param", value_name = "NAME=VALUE|NAME=LO:HI:STEP")]
    pub params: Vec<String>,
    /// Audits per parameter value, each with its own seed derived from --seed.
    #[arg(long, default_value_t = 10)]
    pub repeats: u64,
    /// Releases per side per audit.
    #[arg(long, default_value_t = 100_000)]
    pub samples: usize,
    /// Seed of the whole sweep.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// β of each audit.
    #[arg(long, default_value_t = 0.05)]
    pub failure_probability: f64,
    /// Testers, comma-separated, or "all"; each tester is a separate audit.
    #[arg(long, default_value = "hockey-stick")]
    pub tester: String,
    /// Override the claim.
    #[arg(long)]
    pub claim: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Reports.
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Options of `audit run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Catalogue id of the mechanism (see `audit list`).
    #[arg(long, required_unless_present = "exec", conflicts_with = "exec")]
    pub mechanism: Option<String>,
    /// Audit an external program speaking the exec protocol (see README); needs --claim.
    #[arg(long, value_name = "COMMAND")]
    pub exec: Option<String>,
    /// Seconds one exec batch may run before it is killed.
    #[arg(long, default_value_t = 60.0, value_name = "SECONDS")]
    pub exec_timeout: f64,
    /// Releases per exec request (one process each); lower it for slow programs. The same seed
    /// gives the same samples only with the same batch size.
    #[arg(long, default_value_t = crate::exec::DEFAULT_BATCH, value_name = "N")]
    pub exec_batch: usize,
    /// Worker threads (and so exec processes running at once); default: all cores.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Dataset search (default: the catalogue witness; for --exec, random search).
    #[command(flatten)]
    pub search: SearchArgs,
    /// Override the claim: pure:EPS, approx:EPS:DELTA, renyi:ALPHA:EPS, zcdp:RHO or gdp:MU.
    #[arg(long)]
    pub claim: Option<String>,
    /// Mechanism parameter NAME=VALUE (repeatable), e.g. --param epsilon=0.5.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Releases drawn on each side of the pair.
    #[arg(long, default_value_t = AuditConfig::default().samples_per_side)]
    pub samples: usize,
    /// Seed of every random choice; the same seed gives the same result.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// β: probability of reporting a violation against a mechanism that keeps its claim.
    #[arg(long, default_value_t = AuditConfig::default().failure_probability)]
    pub failure_probability: f64,
    /// Testers, comma-separated, or "all" (β is split over all their bounds).
    #[arg(long, default_value = "hockey-stick")]
    pub tester: String,
    /// Post-process every release before the testers: none, tanh, tanh:S, chebyshev:K or
    /// float-bits (a fixed function, so bounds stay valid by data processing). Default: the
    /// catalogue entry's recommended transform if it has one, else none.
    #[arg(long, value_name = "NAME")]
    pub transform: Option<String>,
    /// Anytime-valid sequential audit (see dp_audit::sequential): draw releases in batches that
    /// double from --first-batch and stop as soon as a betting e-process reaches 1/β. Uses its
    /// own event search (not --tester); its report (DIR/sequential-<mechanism>-seed<seed>-<hash>/)
    /// plots the betting wealth against the 1/β threshold.
    #[arg(long, conflicts_with_all = ["samples", "finder", "exec"])]
    pub sequential: bool,
    /// Most releases per side of a sequential audit (default: the fixed-n default).
    #[arg(long, requires = "sequential", value_name = "N")]
    pub max_samples: Option<usize>,
    /// Releases per side of a sequential audit's first (training-only) batch.
    #[arg(long, requires = "sequential", value_name = "N")]
    pub first_batch: Option<usize>,
    /// Print one JSON object (deterministic: no timings) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Reports.
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Dataset-finder options of `audit run`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Dataset finder: fixed, grid, random, corners (random vertices of the record box), halton,
    /// nelder-mead, pso, annealing, bayes, typical.
    #[arg(long)]
    pub finder: Option<String>,
    /// Pairs scored in the exploratory search.
    #[arg(long, default_value_t = 20)]
    pub trials: usize,
    /// Releases per side for each exploratory score.
    #[arg(long, default_value_t = 5_000)]
    pub search_samples: usize,
    /// Pairs re-audited with fresh samples (β is split over them).
    #[arg(long, default_value_t = 3)]
    pub confirm: usize,
    /// Record range LO:HI (default: the mechanism's; 0:1 for --exec).
    #[arg(long, value_name = "LO:HI")]
    pub record_range: Option<String>,
    /// Record dimension (default: the mechanism's; 1 for --exec).
    #[arg(long, value_name = "D")]
    pub record_dim: Option<usize>,
    /// Records in D (default: the witness's size, or 3).
    #[arg(long, value_name = "N")]
    pub dataset_size: Option<usize>,
    /// Neighboring relation: add-remove or replace-one (default: the mechanism's; add-remove
    /// for --exec).
    #[arg(long)]
    pub neighbors: Option<String>,
    /// Pairs for the fixed finder: one JSON object per line, {"first": [...], "second": [...]}.
    #[arg(long, value_name = "FILE")]
    pub pairs: Option<PathBuf>,
    /// Data sample for the typical finder: a JSON array of records.
    #[arg(long, value_name = "FILE")]
    pub typical_data: Option<PathBuf>,
    /// Stop the search after this many seconds (the confirm phase still runs).
    #[arg(long, value_name = "SECONDS")]
    pub max_search_seconds: Option<f64>,
}

/// Options of `audit test`: a claim tested on samples drawn elsewhere.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Releases on D: one JSON number or array per line (the exec protocol's line format).
    #[arg(long, value_name = "FILE")]
    pub samples_a: Vec<PathBuf>,
    /// Releases on D' (same format); several files (shards) are concatenated in order.
    #[arg(long, value_name = "FILE")]
    pub samples_b: Vec<PathBuf>,
    /// The claim: pure:EPS, approx:EPS:DELTA, renyi:ALPHA:EPS, zcdp:RHO or gdp:MU.
    #[arg(long)]
    pub claim: String,
    /// Seed of the testers' own randomness.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// β of the test.
    #[arg(long, default_value_t = AuditConfig::default().failure_probability)]
    pub failure_probability: f64,
    /// Testers, comma-separated, or "all".
    #[arg(long, default_value = "hockey-stick")]
    pub tester: String,
    /// Post-process both sides' releases before the testers: none, tanh, tanh:S, chebyshev:K
    /// or float-bits.
    #[arg(long, value_name = "NAME", default_value = "none")]
    pub transform: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// What a command produced: text for stdout and the exit code.
#[derive(Debug)]
pub struct Outcome {
    /// Text for stdout.
    pub stdout: String,
    /// 0 = no violation found (or nothing to judge), 1 = violation found.
    pub code: u8,
}

/// Runs a parsed command.
pub fn run(cli: Cli) -> Result<Outcome> {
    match cli.command {
        Command::List { json } => list(json),
        Command::Run(args) => run_audit(&args),
        Command::Accountant(args) => accountant(&args),
        Command::Sweep(args) => sweep(&args),
        Command::Test(args) => test_samples(&args),
        Command::Report(args) => rerender_report(&args),
        Command::Bench(args) => crate::bench::run_cli(&args),
    }
}

/// `audit report FILE`.
fn rerender_report(a: &ReportCommandArgs) -> Result<Outcome> {
    let index = crate::report::rerender(&a.file, &a.report_dir)?;
    Ok(Outcome {
        stdout: format!("report       {}\n", index.display()),
        code: 0,
    })
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

/// Parses `--tester`: a name, a comma-separated list, or `all`.
pub fn parse_testers(spec: &str) -> Result<Vec<Box<dyn PropertyTester>>> {
    let names: Vec<&str> = if spec.trim() == "all" {
        testers::TESTER_NAMES.to_vec()
    } else {
        spec.split(',').map(str::trim).collect()
    };
    names.into_iter().map(testers::by_name).collect()
}

pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
    Ok(serde_json::to_string_pretty(v).map_err(|e| Error::InvalidConfig(e.to_string()))? + "\n")
}

fn accountant(a: &AccountantArgs) -> Result<Outcome> {
    use crate::mechanisms::accountant::{
        RdpAccountant, gaussian_exact_epsilon, gaussian_zcdp_rho, zcdp_to_epsilon,
    };
    let mut acc = RdpAccountant::new();
    acc.compose_poisson_gaussian(a.sampling_rate, a.noise_multiplier, a.steps)?;
    let (eps, order) = acc.epsilon(a.delta)?;
    // q = 1: T Gaussian steps are exactly (√T/z)-GDP (Dong, Roth & Su 2019), and
    // ρ = T/(2z²)-zCDP (Bun & Steinke 2016).
    let full = a.sampling_rate == 1.0;
    let exact = if full {
        Some(gaussian_exact_epsilon(
            a.noise_multiplier,
            a.steps,
            a.delta,
        )?)
    } else {
        None
    };
    let zcdp = if full {
        let rho = gaussian_zcdp_rho(a.noise_multiplier) * a.steps as f64;
        Some((rho, zcdp_to_epsilon(rho, a.delta)?))
    } else {
        None
    };
    let stdout = if a.json {
        to_json(&json!({
            "sampling_rate": a.sampling_rate,
            "noise_multiplier": a.noise_multiplier,
            "steps": a.steps,
            "delta": a.delta,
            "rdp": {"epsilon": eps, "order": order,
                    "method": "RDP of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019), composed over steps, converted with Balle et al. 2020 / Canonne, Kamath & Steinke 2020"},
            "exact_gaussian": exact.map(|e| json!({"epsilon": e, "method": "exact Gaussian privacy profile, mu = sqrt(T)/z (Balle & Wang 2018; Dong, Roth & Su 2019)"})),
            "zcdp": zcdp.map(|(rho, e)| json!({"rho": rho, "epsilon": e, "method": "rho = T/(2 z^2) (Bun & Steinke 2016), converted through RDP at the best order"})),
        }))?
    } else {
        let mut s = format!(
            "Poisson-subsampled Gaussian: q = {}, z = {}, T = {}, δ = {}\n",
            a.sampling_rate, a.noise_multiplier, a.steps, a.delta
        );
        let _ = writeln!(
            s,
            "RDP accountant   ε = {eps:.7}  (optimal order {order}; Mironov, Talwar & Zhang 2019; conversion of Balle et al. 2020)"
        );
        if let Some(e) = exact {
            let _ = writeln!(
                s,
                "exact Gaussian   ε = {e:.7}  (μ = √T/z = {:.6}; analytic Gaussian, Balle & Wang 2018)",
                (a.steps as f64).sqrt() / a.noise_multiplier
            );
        }
        if let Some((rho, e)) = zcdp {
            let _ = writeln!(
                s,
                "zCDP             ε = {e:.7}  (ρ = {rho:.6e}; Bun & Steinke 2016)"
            );
        }
        s
    };
    Ok(Outcome { stdout, code: 0 })
}

/// Seed tag of `audit sweep` repeats (ASCII "SWEEP").
const SWEEP_TAG: u64 = 0x0053_5745_4550;

/// The swept parameter: name and values (LO, LO+STEP, …, ≤ HI + STEP/1e6).
fn parse_sweep_params(params: &[String]) -> Result<(Vec<String>, String, Vec<f64>)> {
    let mut fixed = Vec::new();
    let mut swept: Option<(String, Vec<f64>)> = None;
    for p in params {
        let Some((name, value)) = p.split_once('=') else {
            fixed.push(p.clone());
            continue;
        };
        if !value.contains(':') {
            fixed.push(p.clone());
            continue;
        }
        let parts: Vec<&str> = value.split(':').collect();
        let nums: Vec<f64> = parts.iter().filter_map(|x| x.trim().parse().ok()).collect();
        if parts.len() != 3 || nums.len() != 3 {
            return Err(Error::InvalidConfig(format!(
                "--param {p}: a range must be NAME=LO:HI:STEP with three numbers"
            )));
        }
        let (lo, hi, step) = (nums[0], nums[1], nums[2]);
        if !(lo.is_finite() && hi.is_finite() && step.is_finite() && step > 0.0 && lo <= hi) {
            return Err(Error::InvalidConfig(format!(
                "--param {p}: need finite LO <= HI and STEP > 0"
            )));
        }
        let count = ((hi - lo) / step + 1e-9).floor() as usize + 1;
        if count > 1000 {
            return Err(Error::InvalidConfig(format!(
                "--param {p}: {count} values; allowed: at most 1000"
            )));
        }
        if swept.is_some() {
            return Err(Error::InvalidConfig(
                "only one --param may be a range".into(),
            ));
        }
        // Values computed as LO + i·STEP (not by accumulation) and rounded to 12 digits so
        // 0.5:1.0:0.05 gives exactly the decimals a reader expects.
        let values = (0..count)
            .map(|i| ((lo + i as f64 * step) * 1e12).round() / 1e12)
            .collect();
        swept = Some((name.trim().to_string(), values));
    }
    let (name, values) = swept.ok_or_else(|| {
        Error::InvalidConfig("audit sweep needs one --param NAME=LO:HI:STEP".into())
    })?;
    Ok((fixed, name, values))
}

pub use crate::report::SweepPoint;

fn sweep(a: &SweepArgs) -> Result<Outcome> {
    let (fixed, name, values) = parse_sweep_params(&a.params)?;
    let tester_names: Vec<String> = parse_testers(&a.tester)?
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    if a.repeats == 0 || a.repeats > 10_000 {
        return Err(Error::InvalidConfig(format!(
            "--repeats {}; allowed: 1 to 10000",
            a.repeats
        )));
    }
    // Build every point first so bad values fail before any sampling.
    let mut entries = Vec::new();
    for &v in &values {
        let params = Params::parse(&fixed)?.set(&name, v);
        entries.push(catalogue::build(&a.mechanism, &params)?);
    }
    let claim_override: Option<PrivacyClaim> = match &a.claim {
        Some(c) => Some(c.parse()?),
        None => None,
    };
    if !a.report.no_report {
        crate::report::prepare_report_dir(&a.report.report_dir)?;
    }
    let start = std::time::Instant::now();
    let progress = crate::report::progress::bar(
        (values.len() * tester_names.len()) as u64 * a.repeats,
        a.report.quiet,
        &format!("sweep {} over {name}", a.mechanism),
    );
    let root = crate::rng::Seed(a.seed);
    let mut points = Vec::new();
    let mut claims = Vec::new();
    for (i, (entry, &v)) in entries.iter().zip(&values).enumerate() {
        let m = &*entry.mechanism;
        let claim = claim_override.unwrap_or_else(|| m.claim());
        claims.push(crate::report::SweepClaim {
            value: v,
            claim: claim.to_string(),
        });
        for tname in &tester_names {
            let testers = vec![testers::by_name(tname)?];
            let mut margins = Vec::new();
            let mut detections = 0;
            for r in 0..a.repeats {
                let config = AuditConfig {
                    seed: root.child(SWEEP_TAG, (i as u64) << 32 | r).0,
                    samples_per_side: a.samples,
                    failure_probability: a.failure_probability,
                };
                config.validate(m.output_dim())?;
                let rep = audit_pair(m, &claim, &entry.witness, &testers, &config)?;
                progress.inc(1);
                if rep.verdict == Verdict::Violation {
                    detections += 1;
                }
                margins.push(
                    rep.bounds
                        .iter()
                        .map(|b| b.value - b.allowed)
                        .fold(f64::NEG_INFINITY, f64::max),
                );
            }
            margins.sort_by(f64::total_cmp);
            let mid = margins.len() / 2;
            let median_margin = if margins.len() % 2 == 1 {
                margins[mid]
            } else {
                0.5 * (margins[mid - 1] + margins[mid])
            };
            points.push(SweepPoint {
                value: v,
                status: entry.status.word().to_string(),
                tester: tname.clone(),
                detections,
                repeats: a.repeats,
                median_margin,
            });
        }
    }
    progress.finish_and_clear();
    let report_index = if a.report.no_report {
        None
    } else {
        let sweep_report = crate::report::SweepReport {
            schema_version: crate::audit::SCHEMA_VERSION,
            kind: "sweep".into(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            mechanism: a.mechanism.clone(),
            fixed_params: fixed.clone(),
            parameter: name.clone(),
            claims,
            testers: tester_names.clone(),
            repeats: a.repeats,
            samples_per_side: a.samples,
            failure_probability_per_audit: a.failure_probability,
            seed: a.seed,
            points: points.clone(),
            notes: Vec::new(),
            wall_time_seconds: Some(start.elapsed().as_secs_f64()),
        };
        Some(crate::report::write_sweep_report(
            &a.report.report_dir,
            &sweep_report,
        )?)
    };
    let mut stdout = if a.json {
        to_json(&json!({
            "mechanism": a.mechanism,
            "parameter": name,
            "samples_per_side": a.samples,
            "failure_probability_per_audit": a.failure_probability,
            "seed": a.seed,
            "points": points,
        }))?
    } else {
        let mut s = format!(
            "sweep of {} over {name}: {} audits per value and tester, {} samples per side, β = {} per audit, seed {}\n",
            a.mechanism, a.repeats, a.samples, a.failure_probability, a.seed
        );
        let _ = writeln!(
            s,
            "{:>10}  {:8}  {:14}  {:>10}  {:>14}",
            name, "status", "tester", "detected", "median margin"
        );
        for p in &points {
            let _ = writeln!(
                s,
                "{:>10}  {:8}  {:14}  {:>4} / {:<3}  {:>+14.3e}",
                p.value, p.status, p.tester, p.detections, p.repeats, p.median_margin
            );
        }
        let _ = writeln!(
            s,
            "(each audit reports a violation against a mechanism keeping its claim with probability ≤ β; margin = largest bound − allowed)"
        );
        s
    };
    if let Some(index) = &report_index {
        announce_report(index, a.json, a.report.quiet, &mut stdout);
    }
    Ok(Outcome { stdout, code: 0 })
}

fn list(as_json: bool) -> Result<Outcome> {
    let entries = catalogue::catalogue()?;
    let stdout = if as_json {
        let arr: Vec<_> = entries
            .iter()
            .map(|e| {
                json!({
                    "id": e.mechanism.id(),
                    "status": e.status.word(),
                    "claim": e.mechanism.claim().to_string(),
                })
            })
            .collect();
        serde_json::to_string_pretty(&arr).map_err(|e| Error::InvalidConfig(e.to_string()))? + "\n"
    } else {
        let w = entries
            .iter()
            .map(|e| e.mechanism.id().len())
            .max()
            .unwrap_or(0);
        let mut s = String::new();
        for e in &entries {
            let _ = writeln!(
                s,
                "{:w$}  {:7}  {}",
                e.mechanism.id(),
                e.status.word(),
                e.mechanism.claim()
            );
        }
        s
    };
    Ok(Outcome { stdout, code: 0 })
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
}

fn run_audit(args: &RunArgs) -> Result<Outcome> {
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

fn parse_range(s: &str) -> Result<(f64, f64)> {
    let bad = || {
        Error::InvalidConfig(format!(
            "--record-range {s}; allowed: LO:HI with finite LO < HI, e.g. 0:1"
        ))
    };
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let lo: f64 = a.trim().parse().map_err(|_| bad())?;
    let hi: f64 = b.trim().parse().map_err(|_| bad())?;
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(bad());
    }
    Ok((lo, hi))
}

fn build_target(args: &RunArgs) -> Result<Target> {
    let claim_arg: Option<PrivacyClaim> = match &args.claim {
        Some(c) => Some(c.parse()?),
        None => None,
    };
    if let Some(command) = &args.exec {
        let claim = claim_arg.ok_or_else(|| {
            Error::InvalidConfig(
                "--exec needs --claim (pure:EPS, approx:EPS:DELTA, renyi:ALPHA:EPS, zcdp:RHO or gdp:MU)".into(),
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
        let domain = RecordDomain::real(lo, hi, dim);
        if !(args.exec_timeout.is_finite() && args.exec_timeout > 0.0) {
            return Err(Error::InvalidConfig(format!(
                "--exec-timeout {}; allowed: > 0 seconds",
                args.exec_timeout
            )));
        }
        let size = args.search.dataset_size.unwrap_or(3).max(1);
        let probe = Dataset::vectors(dim, &vec![vec![0.5 * (lo + hi); dim]; size])?;
        let m = crate::exec::ExecMechanism::new(
            command,
            claim,
            relation,
            domain,
            std::time::Duration::from_secs_f64(args.exec_timeout),
            &probe,
        )?
        .with_batch_size(args.exec_batch)?;
        let (mechanism, transform) =
            with_transform(Box::new(m), args.transform.as_deref().unwrap_or("none"))?;
        return Ok(Target {
            mechanism,
            witness: None,
            status: None,
            claim,
            claim_source: None,
            transform,
        });
    }
    let id = args.mechanism.as_deref().unwrap_or_default();
    let params = Params::parse(&args.params)?;
    let entry = catalogue::build(id, &params)?;
    let claim = claim_arg.unwrap_or_else(|| entry.mechanism.claim());
    let claim_source = args.claim.as_ref().map(|_| {
        format!(
            "given on the command line (the mechanism states {})",
            entry.mechanism.claim()
        )
    });
    // An entry whose bug lives in the float representation names the transform it is audited
    // through; an explicit --transform (including `none`) overrides it.
    let spelling = args
        .transform
        .as_deref()
        .or_else(|| catalogue::recommended_transform(id))
        .unwrap_or("none");
    let (mechanism, transform) = with_transform(entry.mechanism, spelling)?;
    Ok(Target {
        mechanism,
        witness: Some(entry.witness),
        status: Some(entry.status.word().to_string()),
        claim,
        claim_source,
        transform,
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
    let testers = parse_testers(&args.tester)?;
    let target = build_target(args)?;
    let claim = target.claim;
    if args.sequential {
        return run_sequential(args, &target);
    }
    let config = AuditConfig {
        seed: args.seed,
        samples_per_side: args.samples,
        failure_probability: args.failure_probability,
    };
    config.validate(target.mechanism.output_dim())?;
    let searching = args.search.finder.is_some() || args.exec.is_some();
    if searching {
        return run_search(args, &target, &testers, &config);
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
    let spinner = crate::report::progress::Spinner::start(
        args.report.quiet,
        &format!("auditing {mechanism_name}"),
    );
    let mut report = audit_pair(&**entry_mechanism, &claim, &witness, &testers, &config)?;
    report.mechanism.catalogue_status = target.status.clone();
    report.output_transform = target.transform;
    if let Some(src) = &target.claim_source {
        report.mechanism.claim_source = src.clone();
    }
    let code = match report.verdict {
        Verdict::Violation => 1,
        Verdict::NoViolation => 0,
    };
    let report_index = if args.report.no_report {
        None
    } else {
        // Plot samples come from streams of their own: the verdict's samples are untouched.
        let plots = crate::report::PlotData::draw(
            &**entry_mechanism,
            &witness,
            args.seed,
            crate::report::PLOT_SAMPLES_PER_SIDE,
        )?;
        Some(crate::report::write_run_report(
            &args.report.report_dir,
            &report,
            &plots,
        )?)
    };
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
    Ok(Outcome { stdout, code })
}

/// `audit run --sequential`: the anytime-valid betting audit on the catalogue witness.
fn run_sequential(args: &RunArgs, target: &Target) -> Result<Outcome> {
    use crate::sequential::{SequentialConfig, audit_sequential};
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
    let defaults = SequentialConfig::default();
    let config = SequentialConfig {
        seed: args.seed,
        max_samples_per_side: args.max_samples.unwrap_or(defaults.max_samples_per_side),
        first_batch: args.first_batch.unwrap_or(defaults.first_batch),
        failure_probability: args.failure_probability,
    };
    config.validate(target.mechanism.output_dim())?;
    if !args.report.no_report {
        crate::report::prepare_report_dir(&args.report.report_dir)?;
    }
    let spinner = crate::report::progress::Spinner::start(
        args.report.quiet,
        &format!("auditing {} sequentially", target.mechanism.id()),
    );
    let mut report = audit_sequential(&*target.mechanism, &target.claim, witness, &config)?;
    drop(spinner);
    report.mechanism.catalogue_status = target.status.clone();
    report.output_transform = target.transform;
    if let Some(src) = &target.claim_source {
        report.mechanism.claim_source = src.clone();
    }
    let code = match report.verdict {
        Verdict::Violation => 1,
        Verdict::NoViolation => 0,
    };
    let report_index = if args.report.no_report {
        None
    } else {
        Some(crate::report::sequential::write_sequential_report(
            &args.report.report_dir,
            &report,
        )?)
    };
    let mut stdout = if args.json {
        report.wall_time_seconds = None;
        to_json(&report)?
    } else {
        crate::sequential::render_text(&report)
    };
    if let Some(index) = &report_index {
        announce_report(index, args.json, args.report.quiet, &mut stdout);
    }
    Ok(Outcome { stdout, code })
}

fn short_dataset(d: &Dataset) -> String {
    let rows = d.to_rows();
    let fmt_row = |r: &Vec<f64>| {
        if r.len() == 1 {
            format!("{}", r[0])
        } else {
            format!(
                "({})",
                r.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    };
    let shown: Vec<String> = rows.iter().take(8).map(fmt_row).collect();
    let more = if rows.len() > 8 {
        format!(", … {} more", rows.len() - 8)
    } else {
        String::new()
    };
    format!("[{}{}] ({} records)", shown.join(", "), more, rows.len())
}

/// Renders a report as the text `audit run` prints.
pub fn render_text(r: &AuditReport) -> String {
    let mut s = String::new();
    let m = &r.mechanism;
    let status = m
        .catalogue_status
        .as_ref()
        .map(|s| format!(" (catalogue: {s})"))
        .unwrap_or_default();
    let _ = writeln!(s, "mechanism    {}{status}", m.id);
    let _ = writeln!(s, "claim        {}  [{}]", m.claim, m.claim_source);
    let _ = writeln!(s, "neighbors    {}", m.neighboring);
    let _ = writeln!(s, "pair         D  = {}", short_dataset(r.pair.first()));
    let _ = writeln!(s, "             D' = {}", short_dataset(r.pair.second()));
    let _ = writeln!(s, "testers      {}", r.testers.join(", "));
    if let Some(t) = &r.output_transform {
        let _ = writeln!(
            s,
            "transform    {t}: {} (a fixed post-processing: bounds on it are bounds on the mechanism)",
            t.describe()
        );
    }
    let _ = writeln!(
        s,
        "samples      {} per side ({} mechanism calls), seed {}",
        r.samples_per_side, r.mechanism_calls, r.seed
    );
    let _ = writeln!(s, "β            {}", r.beta.rule);
    let _ = writeln!(
        s,
        "bounds       (lower confidence bound vs what the claim allows)"
    );
    for b in &r.bounds {
        let dir = match b.direction {
            Direction::FirstVsSecond => "M(D)‖M(D')",
            Direction::SecondVsFirst => "M(D')‖M(D)",
            Direction::Larger => "larger of both",
        };
        let flag = if b.violation { "  VIOLATION" } else { "" };
        let _ = writeln!(
            s,
            "  {:<16} {:<12} ≥ {:<11.4e} allowed {:<11.4e}{flag}",
            b.divergence.to_string(),
            dir,
            b.value,
            b.allowed
        );
        if b.violation
            && let Some(e) = &b.event
        {
            let _ = match (&e.contrast, e.p_lower, e.q_upper) {
                (Some(c), _, _) => writeln!(
                    s,
                    "      event: {}; U = {}, W = {} (Poisson λ = {:.1} releases per side, E[W] ≥ {:.3})",
                    e.description, c.u, c.w, c.lambda, c.mu_w_lower
                ),
                (None, Some(pl), Some(qu)) => writeln!(
                    s,
                    "      event S: {}; P(S) ≥ {:.4e} ({} of {}), Q(S) ≤ {:.4e} ({} of {})",
                    e.description, pl, e.count_p, e.n_p, qu, e.count_q, e.n_q
                ),
                _ => writeln!(s, "      event S: {}", e.description),
            };
        }
    }
    let conf = format!("{:.6}", (1.0 - r.beta.total) * 100.0)
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string();
    match r.verdict {
        Verdict::Violation => {
            let _ = writeln!(
                s,
                "verdict      violation found: a lower confidence bound exceeds what the claim allows; the chance that this happens to a mechanism keeping its claim is at most β = {}",
                r.beta.total
            );
        }
        Verdict::NoViolation => {
            let _ = writeln!(
                s,
                "verdict      no violation found: no bound exceeded what the claim allows. This does not show the claim holds: only this pair, these testers and {} samples per side were tried",
                r.samples_per_side
            );
        }
    }
    if let Some(e) = &r.empirical_epsilon {
        let _ = writeln!(
            s,
            "empirical ε  ≥ {:.4} at δ = {:e} (confidence 1 − β = {conf}%, simultaneous with the verdict)",
            e.lower_bound, e.delta
        );
    }
    if let Some(t) = r.wall_time_seconds {
        let _ = writeln!(s, "time         {t:.2} s");
    }
    s
}

/// Reads `--pairs FILE`: one JSON object per line, `{"first": [...], "second": [...]}`, records
/// as numbers or arrays. Errors name the line and what is wrong.
fn read_pairs(
    path: &Path,
    domain: &RecordDomain,
    relation: Neighboring,
) -> Result<Vec<DatasetPair>> {
    let text = std::fs::read_to_string(path)
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

fn run_search(
    args: &RunArgs,
    target: &Target,
    testers: &[Box<dyn PropertyTester>],
    config: &AuditConfig,
) -> Result<Outcome> {
    use crate::finders::{
        DatasetFinder, PairSpace, SearchConfig, TypicalFinder, finder_by_name, finder_rng,
        search_and_confirm,
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
    let finder_name = s.finder.clone().unwrap_or_else(|| "random".into());
    if s.pairs.is_some() && finder_name != "fixed" {
        return Err(Error::InvalidConfig(
            "--pairs is read by --finder fixed".into(),
        ));
    }
    if s.typical_data.is_some() != (finder_name == "typical") {
        return Err(Error::InvalidConfig(
            "--finder typical and --typical-data FILE go together".into(),
        ));
    }
    let rng = finder_rng(args.seed);
    let mut finder: Box<dyn DatasetFinder> = if finder_name == "typical" {
        let path = s.typical_data.as_ref().ok_or_else(|| {
            Error::InvalidConfig("--finder typical needs --typical-data FILE".into())
        })?;
        let text = std::fs::read_to_string(path)
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
    } else {
        let space = PairSpace::new(domain, size, relation)?;
        let fixed = match &s.pairs {
            Some(p) => read_pairs(p, &domain, relation)?,
            None => target.witness.iter().cloned().collect(),
        };
        finder_by_name(&finder_name, space, fixed, s.trials, rng)?
    };
    let search = SearchConfig {
        trials: s.trials,
        search_samples: s.search_samples,
        confirm_top: s.confirm,
        wall_clock_seconds: s.max_search_seconds,
        max_samples: None,
    };
    if !args.report.no_report {
        crate::report::prepare_report_dir(&args.report.report_dir)?;
    }
    let spinner = crate::report::progress::Spinner::start(
        args.report.quiet,
        &format!("searching {} with {finder_name}", m.id()),
    );
    let mut rep = search_and_confirm(m, &target.claim, &mut *finder, testers, &search, config)?;
    for c in &mut rep.confirmations {
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
    let deciding = rep.confirmations.last().cloned();
    let report_index = match (&deciding, args.report.no_report) {
        (Some(r), false) => {
            let plots = crate::report::PlotData::draw(
                m,
                &r.pair,
                args.seed,
                crate::report::PLOT_SAMPLES_PER_SIDE,
            )?;
            Some(crate::report::write_run_report(
                &args.report.report_dir,
                r,
                &plots,
            )?)
        }
        _ => None,
    };
    drop(spinner);
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
    Ok(Outcome { stdout, code })
}

fn render_search_text(r: &crate::finders::SearchReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "search       finder {}, {} exploratory trials of {} releases per side (no statistical claim; used only to choose pairs)",
        r.finder,
        r.trials.len(),
        r.config.search_samples
    );
    let pct: Vec<String> = r
        .score_percentiles
        .iter()
        .map(|(p, v)| format!("p{p:.0} {v:+.3e}"))
        .collect();
    let _ = writeln!(
        s,
        "scores       point estimates of (divergence − allowed) across trials: {}",
        pct.join(", ")
    );
    let _ = writeln!(s, "β            {}", r.beta_rule);
    for (k, c) in r.confirmations.iter().enumerate() {
        let _ = writeln!(
            s,
            "\n--- confirmation {} of at most {} ---",
            k + 1,
            r.config.confirm_top
        );
        s += &render_text(c);
    }
    let _ = writeln!(
        s,
        "\nverdict      {} ({} mechanism calls, {} releases drawn in both phases)",
        r.verdict.words(),
        r.mechanism_calls,
        r.samples_drawn
    );
    s
}

fn test_samples(a: &TestArgs) -> Result<Outcome> {
    let claim: PrivacyClaim = a.claim.parse()?;
    let testers = parse_testers(&a.tester)?;
    let transform: Transform = a.transform.parse()?;
    if a.samples_a.is_empty() || a.samples_b.is_empty() {
        return Err(Error::InvalidConfig(
            "audit test needs --samples-a FILE and --samples-b FILE".into(),
        ));
    }
    let read = |paths: &[PathBuf]| -> Result<(crate::mechanisms::Samples, String)> {
        let mut parts = Vec::new();
        for p in paths {
            let text = std::fs::read_to_string(p)
                .map_err(|e| Error::InvalidConfig(format!("{}: {e}", p.display())))?;
            let s = crate::exec::parse_lines(
                &text,
                None,
                parts.first().map(|s: &crate::mechanisms::Samples| s.dim()),
            )
            .map_err(|e| Error::InvalidSamples(format!("{}: {e}", p.display())))?;
            parts.push(s);
        }
        let names = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" + ");
        Ok((crate::mechanisms::Samples::concat(&parts)?, names))
    };
    let (sa, na) = read(&a.samples_a)?;
    let (sb, nb) = read(&a.samples_b)?;
    let (sa, sb) = (transform.apply(&sa)?, transform.apply(&sb)?);
    let config = AuditConfig {
        seed: a.seed,
        samples_per_side: sa.n().min(sb.n()),
        failure_probability: a.failure_probability,
    };
    let mut r = crate::audit::audit_samples(&sa, &sb, (&na, &nb), &claim, &testers, &config)?;
    r.output_transform = (!transform.is_identity()).then_some(transform);
    let code = match r.verdict {
        Verdict::Violation => 1,
        Verdict::NoViolation => 0,
    };
    let stdout = if a.json {
        to_json(&r)?
    } else {
        let mut s = format!(
            "samples      A = {} ({} releases), B = {} ({} releases), dimension {}\nclaim        {}\ntesters      {}\n{}β            {}\nbounds       (lower confidence bound vs what the claim allows)\n",
            r.source_a,
            r.samples_a,
            r.source_b,
            r.samples_b,
            sa.dim(),
            r.claim,
            r.testers.join(", "),
            r.output_transform
                .map(|t| format!("transform    {t}: {}\n", t.describe()))
                .unwrap_or_default(),
            r.beta.rule
        );
        for b in &r.bounds {
            let dir = match b.direction {
                Direction::FirstVsSecond => "A‖B",
                Direction::SecondVsFirst => "B‖A",
                Direction::Larger => "max ",
            };
            let _ = writeln!(
                s,
                "  {:16} {dir}   ≥ {:.4e}   allowed {:.4e}   {}",
                b.divergence.to_string(),
                b.value,
                b.allowed,
                if b.violation { "VIOLATION" } else { "ok" }
            );
        }
        let _ = writeln!(
            s,
            "verdict      {} (β = {}; assumes the releases are i.i.d. within each file set and independent across them)",
            r.verdict.words(),
            r.beta.total
        );
        if let Some(e) = &r.empirical_epsilon {
            let _ = writeln!(
                s,
                "empirical ε  ≥ {:.4} at δ = {:e}",
                e.lower_bound, e.delta
            );
        }
        s
    };
    Ok(Outcome { stdout, code })
}
