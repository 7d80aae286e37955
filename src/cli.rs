//! The `audit` command line: clap structures, validation into library calls, and text rendering.
//! The binary (`src/bin/audit.rs`) only parses, calls [`run`] and maps the outcome to an exit code.

use std::fmt::Write as _;

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
    /// Tester: hockey-stick.
    #[arg(long, default_value = "hockey-stick")]
    pub tester: String,
    /// Print one JSON object (deterministic: no timings) instead of text.
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
    }
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
    let tester = testers::by_name(&args.tester)?;
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
    let testers: Vec<Box<dyn PropertyTester>> = vec![tester];
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
    let stdout = if args.json {
        let mut r = report.clone();
        r.wall_time_seconds = None;
        serde_json::to_string_pretty(&r).map_err(|e| Error::InvalidConfig(e.to_string()))? + "\n"
    } else {
        render_text(&report)
    };
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
