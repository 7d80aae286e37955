//! The `audit` command line: clap structures, validation into library calls, and text rendering.
//! The binary (`src/bin/audit.rs`) only parses, calls [`run`] and maps the outcome to an exit code.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use crate::audit::{AuditConfig, AuditReport, Direction, Verdict, audit_pair};
use crate::error::{Error, Result};
use crate::mechanisms::{Dataset, Params, PrivacyClaim, catalogue};
use crate::testers::{self, PropertyTester};

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
    /// Re-render a report (index.html and figures) from its audit.json without re-running.
    Report(ReportCommandArgs),
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
    #[arg(long)]
    pub mechanism: String,
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
    /// Print one JSON object (deterministic: no timings) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Reports.
    #[command(flatten)]
    pub report: ReportArgs,
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
        Command::Report(args) => rerender_report(&args),
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
fn announce_report(index: &Path, json: bool, quiet: bool, stdout: &mut String) {
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

fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
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

fn run_audit(args: &RunArgs) -> Result<Outcome> {
    // Validate everything cheap before any sampling.
    let testers = parse_testers(&args.tester)?;
    let params = Params::parse(&args.params)?;
    let entry = catalogue::build(&args.mechanism, &params)?;
    let claim: PrivacyClaim = match &args.claim {
        Some(c) => c.parse()?,
        None => entry.mechanism.claim(),
    };
    let config = AuditConfig {
        seed: args.seed,
        samples_per_side: args.samples,
        failure_probability: args.failure_probability,
    };
    config.validate(entry.mechanism.output_dim())?;
    if !args.report.no_report {
        crate::report::prepare_report_dir(&args.report.report_dir)?;
    }
    let spinner = crate::report::progress::Spinner::start(
        args.report.quiet,
        &format!("auditing {}", args.mechanism),
    );
    let mut report = audit_pair(&*entry.mechanism, &claim, &entry.witness, &testers, &config)?;
    report.mechanism.catalogue_status = Some(entry.status.word().to_string());
    if args.claim.is_some() {
        report.mechanism.claim_source = format!(
            "given on the command line (the mechanism states {})",
            entry.mechanism.claim()
        );
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
            &*entry.mechanism,
            &entry.witness,
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
            let _ = writeln!(
                s,
                "      event S: {}; P(S) ≥ {:.4e} ({} of {}), Q(S) ≤ {:.4e} ({} of {})",
                e.description, e.p_lower, e.count_p, e.n_p, e.q_upper, e.count_q, e.n_q
            );
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
