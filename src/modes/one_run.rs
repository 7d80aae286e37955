//! `audit one-run` as a library: train the canary DP-SGD trainer (or your own training program)
//! once and audit its claim from the canaries (see [`crate::audit::one_run`]), from plain
//! [`OneRunOptions`]. The command line ([`crate::commands::one_run`]) and the Python package
//! both call it; the defaults are written once, in [`OneRunOptions::default`].

use std::fmt::Write as _;

use crate::audit::one_run::calibrated::ScoreKind;
use crate::audit::one_run::{TrainerAuditConfig, audit_trainer};
use crate::error::{Error, Result};
use crate::mechanisms::Params;
use crate::mechanisms::canary_trainer::{DataSet, ThreatModel, TrainerConfig};
use crate::mechanisms::math::readable;
use crate::report::output::{Outcome, OutputOptions, announce_report, split_late, to_json};

/// δ at which the ε of a `--claim gdp:MU` is read (the verdict uses μ).
const GDP_READ_DELTA: f64 = 1e-5;

/// Largest μ a `--claim gdp:MU` may state (the bound's bisection stops at 40).
const GDP_MAX_MU: f64 = 40.0;

/// What `audit one-run` does, as plain options (the form of its flags; see `audit one-run
/// --help` for each one's meaning).
#[derive(Clone, Debug)]
pub struct OneRunOptions {
    /// m: canaries, each included with probability `inclusion_probability`.
    pub canaries: usize,
    /// white-box or black-box (the built-in trainer).
    pub threat_model: Option<String>,
    /// A training program of your own, `sh -c COMMAND` (or its name, in process).
    pub exec: Option<String>,
    /// The program's claim.
    pub claim: Option<String>,
    /// The data set the program trains on besides the canaries.
    pub data: Option<std::path::PathBuf>,
    /// The range LO:HI of every canary coordinate.
    pub record_range: Option<String>,
    /// Coordinates per record.
    pub record_dim: Option<usize>,
    /// The release is a product of per-canary channels.
    pub independent_canaries: bool,
    /// Seconds the training run may take.
    pub exec_timeout: Option<f64>,
    /// Trainer parameters NAME=VALUE.
    pub params: Vec<String>,
    /// The built-in trainer's data.
    pub dataset: Option<String>,
    /// Probability that a canary is included.
    pub inclusion_probability: f64,
    /// Guess sizes K+:K-, comma-separated.
    pub guesses: Option<String>,
    /// The membership score: loss (default) or calibrated (the built-in trainer).
    pub score: Option<String>,
    /// Seed of every random choice.
    pub seed: u64,
    /// β.
    pub failure_probability: f64,
    /// Reports, and text or JSON.
    pub output: OutputOptions,
}

impl Default for OneRunOptions {
    /// `audit one-run`'s defaults: 1 000 canaries included with probability 1/2, seed 0, the
    /// default β, reports in `reports/`, text.
    fn default() -> Self {
        OneRunOptions {
            canaries: 1000,
            threat_model: None,
            exec: None,
            claim: None,
            data: None,
            record_range: None,
            record_dim: None,
            independent_canaries: false,
            exec_timeout: None,
            params: Vec::new(),
            dataset: None,
            inclusion_probability: 0.5,
            guesses: None,
            score: None,
            seed: 0,
            failure_probability: crate::audit::AuditConfig::default().failure_probability,
            output: OutputOptions {
                report_dir: "reports".into(),
                no_report: false,
                quiet: false,
                json: false,
            },
        }
    }
}

impl OneRunOptions {
    /// The `audit one-run` command for these options, as a user would type it: the flags at
    /// their defaults left out (the report flags too: they do not change the record).
    pub fn reproduce_line(&self) -> String {
        let d = OneRunOptions::default();
        let mut words: Vec<String> = vec!["audit".into(), "one-run".into()];
        let mut flag = |f: &str, v: Option<String>| {
            if let Some(v) = v {
                words.push(f.into());
                words.push(v);
            }
        };
        flag("--exec", self.exec.clone());
        flag("--claim", self.claim.clone());
        flag(
            "--canaries",
            (self.canaries != d.canaries).then(|| self.canaries.to_string()),
        );
        flag("--threat-model", self.threat_model.clone());
        flag(
            "--data",
            self.data.as_ref().map(|p| p.display().to_string()),
        );
        flag("--record-range", self.record_range.clone());
        flag("--record-dim", self.record_dim.map(|n| n.to_string()));
        flag("--guesses", self.guesses.clone());
        flag("--score", self.score.clone());
        flag("--exec-timeout", self.exec_timeout.map(|t| format!("{t}")));
        for p in &self.params {
            flag("--param", Some(p.clone()));
        }
        flag("--dataset", self.dataset.clone());
        flag(
            "--inclusion-probability",
            (self.inclusion_probability != d.inclusion_probability)
                .then(|| format!("{}", self.inclusion_probability)),
        );
        flag(
            "--seed",
            (self.seed != d.seed).then(|| self.seed.to_string()),
        );
        flag(
            "--failure-probability",
            (self.failure_probability != d.failure_probability)
                .then(|| format!("{}", self.failure_probability)),
        );
        if self.independent_canaries {
            words.push("--independent-canaries".into());
        }
        shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
    }
}

/// Writes the report (unless --no-report) and announces it; the verdict is printed even when
/// the report cannot be written (the error comes after it, exit code 2).
fn finish(
    args: &OneRunOptions,
    report: crate::report::one_run::OneRunReport,
    mut stdout: String,
    code: u8,
) -> Result<Outcome> {
    let (index, late_error) = split_late(if args.output.no_report {
        Ok(None)
    } else {
        crate::report::prepare_report_dir(&args.output.report_dir)
            .and_then(|()| {
                crate::report::one_run::write_one_run_report(&args.output.report_dir, &report)
            })
            .map(Some)
    });
    if let Some(index) = &index {
        announce_report(index, args.output.json, args.output.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}

#[allow(clippy::too_many_arguments)]
fn report_of(
    target: String,
    threat_model: String,
    claim: (f64, f64, String),
    claim_mu: Option<f64>,
    seed: u64,
    bound: crate::audit::one_run::OneRunBound,
    violation: bool,
    accountant: Option<crate::mechanisms::AccountantRange>,
    reproduce: Option<String>,
) -> crate::report::one_run::OneRunReport {
    crate::report::one_run::OneRunReport {
        schema_version: crate::audit::SCHEMA_VERSION,
        mode: "one-run".into(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        target,
        threat_model,
        claim_epsilon: claim.0,
        claim_delta: claim.1,
        claim_source: claim.2,
        seed,
        bound,
        claim_mu,
        violation,
        accountant,
        reproduce: Some(
            reproduce.unwrap_or_else(|| crate::report::reproduce::reproduce_line(None)),
        ),
    }
}

fn parse_guesses(s: &str) -> Result<Vec<(usize, usize)>> {
    let bad = |part: &str| {
        Error::InvalidConfig(format!(
            "--guesses {s:?}: {part:?} is not K+:K-; allowed: comma-separated pairs of whole \
             numbers, e.g. 10:10,50:0"
        ))
    };
    let mut out = Vec::new();
    for part in s.split(',') {
        let (a, b) = part.split_once(':').ok_or_else(|| bad(part))?;
        let kp: usize = a.trim().parse().map_err(|_| bad(part))?;
        let km: usize = b.trim().parse().map_err(|_| bad(part))?;
        if kp.checked_add(km).is_none_or(|r| r == 0) {
            return Err(Error::InvalidConfig(format!(
                "--guesses {s:?}: {part:?} makes no guess or too many; allowed: 1 <= K+ + K- <= m"
            )));
        }
        out.push((kp, km));
    }
    Ok(out)
}

/// Checks the flags and builds the audit's configuration.
pub(crate) fn config_from_args(args: &OneRunOptions) -> Result<TrainerAuditConfig> {
    super::checks::check_beta(args.failure_probability)?;
    if args.canaries < crate::audit::one_run::MIN_CANARIES {
        return Err(Error::InvalidConfig(format!(
            "--canaries {}; allowed: at least {} (and at most 10000000)",
            args.canaries,
            crate::audit::one_run::MIN_CANARIES
        )));
    }
    super::checks::check_count("--canaries", args.canaries, 2, 10_000_000)?;
    let p = args.inclusion_probability;
    if !(p.is_finite() && p > 0.0 && p < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "--inclusion-probability {}; allowed: 0 < p < 1, and the bound needs exactly 0.5",
            readable(p)
        )));
    }
    if p != 0.5 {
        return Err(Error::InvalidConfig(format!(
            "--inclusion-probability {}; allowed: 0.5 (Steinke et al. Theorem 3.1 assumes each \
             canary is included with probability 1/2)",
            readable(p)
        )));
    }
    let threat = ThreatModel::parse(args.threat_model.as_deref().unwrap_or("white-box"))?;
    let dataset = DataSet::parse(args.dataset.as_deref().unwrap_or("synthetic"))?;
    // Black-box input canaries default to the saturated scale (canary_trainer's docs).
    let trainer = TrainerConfig::from_params_for(Params::parse(&args.params)?, dataset, threat)?;
    let guess_sizes = args.guesses.as_deref().map(parse_guesses).transpose()?;
    let score = ScoreKind::parse(args.score.as_deref().unwrap_or("loss"))?;
    Ok(TrainerAuditConfig {
        canaries: args.canaries,
        threat,
        trainer,
        seed: args.seed,
        failure_probability: args.failure_probability,
        guess_sizes,
        score,
    })
}

/// `audit one-run` with the built-in canary trainer (no `--exec`): what it prints, for an
/// in-process caller (the Python package's `one_run_trainer`, whose words stand for the command
/// line in the reproduce line through [`crate::report::reproduce::with_args`]).
pub fn one_run_trainer(args: &OneRunOptions) -> Result<Outcome> {
    if args.exec.is_some() {
        return Err(Error::InvalidConfig(
            "one_run_trainer: --exec given; allowed: the built-in trainer's flags (--param, --threat-model, --dataset, …); a training program of your own goes through one_run_given".into(),
        ));
    }
    one_run(args)
}

/// `audit one-run`: the built-in trainer, or the training program `exec` names.
pub fn one_run(args: &OneRunOptions) -> Result<Outcome> {
    if args.exec.is_some() {
        return one_run_exec(args);
    }
    let config = config_from_args(args)?;
    let started = std::time::Instant::now();
    let audit = audit_trainer(&config)?;
    let code = u8::from(audit.violation);
    let report = report_of(
        audit.target.to_string(),
        format!(
            "{}; score = {}",
            match audit.threat_model {
                ThreatModel::WhiteBox => {
                    "white-box: every iterate released; gradient canaries (Dirac, norm C)"
                }
                ThreatModel::BlackBox => "black-box: final model released; input canaries",
            },
            score_words(audit.threat_model, audit.score)
        ),
        (
            audit.claim.epsilon,
            audit.claim.delta,
            audit.claim.source.clone(),
        ),
        audit.claim.mu,
        audit.seed,
        audit.bound.clone(),
        audit.violation,
        config.trainer.accountant_range().ok(),
        None,
    );
    if args.output.json {
        let rec = crate::record::ResultRecord::from_one_run(&report, &audit);
        return finish(args, report, to_json(&rec)?, code);
    }
    let t = &audit.trainer;
    let b = &audit.bound;
    let mut out = String::new();
    let what = match audit.threat_model {
        ThreatModel::WhiteBox => "every iterate released; gradient canaries (Dirac, norm C)",
        ThreatModel::BlackBox => "final model released; input canaries",
    };
    let _ = writeln!(
        out,
        "one-run audit {} ({}: {what})",
        audit.target,
        audit.threat_model.name()
    );
    let _ = writeln!(
        out,
        "score        {}",
        score_words(audit.threat_model, audit.score)
    );
    if let Some(c) = &audit.calibration {
        let (mu, sd) = c.mean_sd(&[]);
        let _ = writeln!(
            out,
            "calibration  non-member model fitted on {} holdouts: mu = {mu:.6e}, sigma = \
             {sd:.6e} (no public feature tells the Dirac canaries apart: the calibrated score \
             ranks as the raw one, the guesses are the same)",
            c.holdouts
        );
    }
    let _ = writeln!(
        out,
        "trainer      {} on {} data: records={} features={} steps={} sampling_rate={} \
         noise_multiplier={} clip={} learning_rate={} canary_norm={} noise_scale={} \
         sampling_rate_ratio={} batch_clip={} clip_after_noise={}",
        if t.hidden == 0 {
            "logistic regression".to_string()
        } else {
            format!("network with {} hidden tanh units", t.hidden)
        },
        t.dataset.name(),
        t.records,
        t.features,
        t.steps,
        readable(t.sampling_rate),
        readable(t.noise_multiplier),
        readable(t.clip),
        readable(t.learning_rate),
        readable(t.canary_norm),
        readable(t.noise_scale),
        readable(t.sampling_rate_ratio),
        u8::from(t.batch_clip),
        u8::from(t.clip_after_noise)
    );
    let _ = writeln!(
        out,
        "claim        (epsilon = {}, delta = {:e}) for adding/removing one record, from the {}",
        readable(audit.claim.epsilon),
        audit.claim.delta,
        audit.claim.source
    );
    if !t.is_correct() {
        let _ = writeln!(
            out,
            "true         epsilon = {} at delta = {:e} ({}; for reading only)",
            readable(audit.true_guarantee.epsilon),
            audit.true_guarantee.delta,
            audit.true_guarantee.source
        );
    }
    let _ = writeln!(
        out,
        "canaries     m = {}, {} included (each independently with probability 1/2)",
        b.canaries, b.included
    );
    write_guesses(&mut out, b);
    let _ = writeln!(
        out,
        "verdict      {}",
        verdict_text(b, audit.claim.epsilon, audit.claim.mu, audit.violation)
    );
    if let Some(t) = report.accountant.as_ref().and_then(|a| {
        crate::record::tightness_line(b.epsilon_estimate(audit.claim.mu), None, Some(a))
    }) {
        let _ = writeln!(out, "tightness    {t}");
    }
    let _ = writeln!(out, "seed         {}", audit.seed);
    let _ = writeln!(out, "time         {:.2} s", started.elapsed().as_secs_f64());
    finish(args, report, out, code)
}

/// The score's name and what it is, for the text and the report.
fn score_words(threat: ThreatModel, score: ScoreKind) -> String {
    let raw = match threat {
        ThreatModel::WhiteBox => "sum of the updates' alignment with the canary",
        ThreatModel::BlackBox => "-loss of the canary under the final model",
    };
    match score {
        ScoreKind::Loss => format!("loss ({raw})"),
        ScoreKind::Calibrated => format!(
            "calibrated: Phi((s - mu(x))/sigma(x)), s = {raw}, mu and sigma fitted by \
             least squares on as many never-included holdouts as canaries (a function of the \
             release and public points only: the bounds keep their guarantee)"
        ),
    }
}

/// The guesses (one line per guess size), the bound and its inequality, as text.
fn write_guesses(out: &mut String, b: &crate::audit::one_run::OneRunBound) {
    for (i, c) in b.candidates.iter().enumerate() {
        let g = &c.guesses;
        let _ = writeln!(
            out,
            "guesses      k+ = {:<6} k- = {:<6} r = {:<6} v = {:<6} precision {:.3}  \
             epsilon >= {:.4}  mu >= {:.4}  order: epsilon >= {:.4} mu >= {:.4} (beta {:e}){}{}",
            g.k_plus,
            g.k_minus,
            g.guesses,
            g.correct,
            g.precision(),
            c.epsilon_lower,
            c.mu_lower,
            c.order_epsilon_lower,
            c.order_mu_lower,
            c.failure_probability,
            if i == b.best { "  <- best epsilon" } else { "" },
            if i == b.mu_best { "  <- best mu" } else { "" }
        );
    }
    let _ = writeln!(
        out,
        "bound        epsilon >= {:.4} at delta = {:e} with confidence 1 - beta = {} ({})",
        b.epsilon_lower,
        b.delta,
        readable(1.0 - b.failure_probability),
        b.beta_split
    );
    let _ = writeln!(out, "inequality   {}", b.inequality);
    let _ = writeln!(
        out,
        "attack       {}",
        crate::record::result::attack_sentence(b.epsilon_lower, b.delta, None)
    );
    let _ = writeln!(
        out,
        "gdp bound    mu >= {:.4} with confidence 1 - beta (same split); the mu-GDP profile at \
         that mu has epsilon {:.4} at delta = {:e} (a bound on a Gaussian-DP claim only)",
        b.mu_lower, b.gdp_epsilon_lower, b.delta
    );
    let _ = writeln!(out, "inequality   {}", b.gdp_inequality);
    if let Some(o) = &b.order {
        let _ = writeln!(
            out,
            "order bound  epsilon >= {:.4} at delta = {:e} ((epsilon, delta) null); mu >= {:.4} \
             (Gaussian-DP null, epsilon {:.4} at delta = {:e}); same split of beta",
            o.epsilon_lower, b.delta, o.mu_lower, o.gdp_epsilon_lower, b.delta
        );
        let _ = writeln!(out, "canaries     {}", o.canary_model);
        let _ = writeln!(out, "inequality   {}", o.inequality);
    }
}

/// The verdict line: against μ for a Gaussian-DP claim, else against ε.
fn verdict_text(
    b: &crate::audit::one_run::OneRunBound,
    epsilon: f64,
    mu: Option<f64>,
    violation: bool,
) -> String {
    let (what, lower, claimed) = b.deciding(epsilon, mu);
    if violation {
        format!(
            "VIOLATION: the lower bound on {what} {lower:.4} exceeds the claimed {}; a target \
             keeping its claim is reported so with probability at most beta = {}",
            readable(claimed),
            readable(b.failure_probability)
        )
    } else {
        format!(
            "no violation found: the lower bound on {what} {lower:.4} does not exceed the \
             claimed {}. This does not show the claim holds: one run with {} canaries sees only \
             so far",
            readable(claimed),
            b.canaries
        )
    }
}

/// `audit one-run --exec COMMAND --claim CLAIM`: a training program in any language.
fn one_run_exec(args: &OneRunOptions) -> Result<Outcome> {
    one_run_exec_with(args, None)
}

/// Training done in this process, for [`one_run_given`]: `train` answers the protocol's request
/// (the JSON text `--exec`'s program reads) with what the program would print; `reproduce` is
/// the record's reproduce line.
pub struct GivenTraining<'a> {
    /// From the request (JSON text) to what the program would print (the scores).
    pub train: &'a mut dyn FnMut(String) -> Result<String>,
    /// The record's reproduce line.
    pub reproduce: String,
}

/// `audit one-run --exec NAME --claim CLAIM …` with the program's work done by `given.train` in
/// this process (the Python package's `one_run`): the same checks, canaries, bits, bound and
/// record as the CLI gives when `sh -c NAME` prints the same scores. `args.exec` must be set:
/// it names the target.
pub fn one_run_given(args: &OneRunOptions, given: GivenTraining<'_>) -> Result<Outcome> {
    if args.exec.is_none() {
        return Err(Error::InvalidConfig(
            "one_run_given: no name for the training (exec); allowed: a non-empty name".into(),
        ));
    }
    one_run_exec_with(args, Some(given))
}

/// The claim of a training program: ε at δ, or μ (its ε read at δ = 1e-5), and the
/// accountant's range when it was read off a ledger.
struct ExecClaim {
    epsilon: f64,
    delta: f64,
    mu: Option<f64>,
    accountant: Option<crate::mechanisms::AccountantRange>,
}

/// `--claim` of a training program, parsed and checked.
fn exec_claim(claim_text: &str) -> Result<ExecClaim> {
    use crate::mechanisms::PrivacyClaim;
    // A ledger claim is accounted under add/remove (the one-run game adds or removes canaries).
    let parsed =
        super::claim::parse_claim_arg(claim_text, crate::mechanisms::Neighboring::AddRemove)?;
    let (epsilon, delta, mu) = match parsed.claim {
        PrivacyClaim::Pure { epsilon } => (epsilon, 0.0, None),
        PrivacyClaim::Approximate { epsilon, delta } => (epsilon, delta, None),
        PrivacyClaim::GaussianDp { mu } => {
            if !(mu.is_finite() && mu > 0.0 && mu <= GDP_MAX_MU) {
                return Err(Error::InvalidConfig(format!(
                    "--claim gdp:{mu}; allowed: 0 < mu <= {GDP_MAX_MU}"
                )));
            }
            // One Gaussian step with z = 1/μ is exactly μ-GDP.
            let eps =
                crate::mechanisms::accountant::gaussian_exact_epsilon(1.0 / mu, 1, GDP_READ_DELTA)?;
            (eps, GDP_READ_DELTA, Some(mu))
        }
        other => {
            return Err(Error::InvalidConfig(format!(
                "--claim {other}; allowed: pure:EPS, approx:EPS:DELTA or gdp:MU (the one-run bound is on ε at δ, or on μ)"
            )));
        }
    };
    Ok(ExecClaim {
        epsilon,
        delta,
        mu,
        accountant: parsed.accountant,
    })
}

/// The flags of a training program's audit, checked: the claim, the canaries' domain, the
/// time limit, the data set and the guess sizes.
fn exec_config(
    args: &OneRunOptions,
    claim: &ExecClaim,
) -> Result<crate::audit::one_run_exec::ExecOneRunConfig> {
    let (lo, hi) = match &args.record_range {
        Some(r) => super::checks::parse_range(r)?,
        None => (0.0, 1.0),
    };
    let dim = args.record_dim.unwrap_or(1);
    super::checks::check_count("--record-dim", dim, 1, 1000)?;
    let timeout = super::checks::check_seconds(
        "--exec-timeout",
        args.exec_timeout.unwrap_or(600.0),
        7.0 * 86_400.0,
    )?;
    let dataset = match &args.data {
        // The same reader as the Bayesian audit's `--data` (lines named in errors).
        Some(p) => crate::audit::bayesian::read_data(
            p,
            &crate::mechanisms::RecordDomain::real(lo, hi, dim),
        )?
        .to_rows(),
        None => Vec::new(),
    };
    let guess_sizes = args.guesses.as_deref().map(parse_guesses).transpose()?;
    if let Some(&(kp, km)) = guess_sizes
        .iter()
        .flatten()
        .find(|(kp, km)| kp.saturating_add(*km) > args.canaries)
    {
        return Err(Error::InvalidConfig(format!(
            "--guesses {kp}:{km} for {} canaries; allowed: k+ + k- <= m",
            args.canaries
        )));
    }
    Ok(crate::audit::one_run_exec::ExecOneRunConfig {
        command: args.exec.clone().unwrap_or_default(),
        canaries: args.canaries,
        record_range: (lo, hi),
        record_dim: dim,
        dataset,
        epsilon: claim.epsilon,
        delta: claim.delta,
        mu: claim.mu,
        seed: args.seed,
        failure_probability: args.failure_probability,
        guess_sizes,
        independent_canaries: args.independent_canaries,
        timeout,
    })
}

/// A training program's audit (run as `exec`, or the caller's `given` training).
fn one_run_exec_with(args: &OneRunOptions, given: Option<GivenTraining<'_>>) -> Result<Outcome> {
    if args.score.as_deref().is_some_and(|s| s.trim() != "loss") {
        return Err(Error::InvalidConfig(format!(
            "--score {:?} with --exec; allowed: loss (the program prints its own scores; \
             holdout queries for a calibrated score are not part of dp-audit-one-run/1)",
            args.score.as_deref().unwrap_or_default()
        )));
    }
    if !args.params.is_empty() || args.threat_model.is_some() || args.dataset.is_some() {
        return Err(Error::InvalidConfig(
            "--param, --threat-model and --dataset configure the built-in trainer; allowed with --exec: \
             --claim, --data, --record-range, --record-dim, --exec-timeout"
                .into(),
        ));
    }
    super::checks::check_beta(args.failure_probability)?;
    super::checks::check_count("--canaries", args.canaries, 2, 10_000_000)?;
    if args.inclusion_probability != 0.5 {
        return Err(Error::InvalidConfig(format!(
            "--inclusion-probability {}; allowed: 0.5 (Steinke et al. Theorem 3.1 assumes each \
             canary is included with probability 1/2)",
            readable(args.inclusion_probability)
        )));
    }
    let claim_text = args.claim.as_deref().ok_or_else(|| {
        Error::InvalidConfig(
            "--exec needs --claim pure:EPS, approx:EPS:DELTA, gdp:MU or ledger:FILE[:DELTA]".into(),
        )
    })?;
    let claim = exec_claim(claim_text)?;
    let config = exec_config(args, &claim)?;
    let started = std::time::Instant::now();
    let (audit, reproduce) = match given {
        Some(g) => (
            crate::audit::one_run_exec::audit_with(&config, g.train)?,
            Some(g.reproduce),
        ),
        None => (crate::audit::one_run_exec::audit_exec(&config)?, None),
    };
    let code = u8::from(audit.violation);
    let report = report_of(
        audit.command.clone(),
        "a training program (exec): its own scores of the canaries from what it released".into(),
        (
            claim.epsilon,
            claim.delta,
            format!("given with --claim {claim_text}"),
        ),
        claim.mu,
        audit.seed,
        audit.bound.clone(),
        audit.violation,
        claim.accountant.clone(),
        reproduce,
    );
    if args.output.json {
        let rec = crate::record::ResultRecord::from_one_run(&report, &audit);
        return finish(args, report, to_json(&rec)?, code);
    }
    let b = &audit.bound;
    let (lo, hi) = config.record_range;
    let dim = config.record_dim;
    let mut out = String::new();
    let _ = writeln!(out, "one-run audit of {:?} (exec)", audit.command);
    let _ = writeln!(out, "claim        {claim_text} (given with --claim)");
    let _ = writeln!(
        out,
        "canaries     m = {}, {} included (each independently with probability 1/2), records in [{lo}, {hi}]^{dim}; data set {} records",
        b.canaries,
        b.included,
        config.dataset.len()
    );
    write_guesses(&mut out, b);
    let verdict = verdict_text(b, claim.epsilon, claim.mu, audit.violation);
    let _ = writeln!(out, "verdict      {verdict}");
    if let Some(t) = report
        .accountant
        .as_ref()
        .and_then(|a| crate::record::tightness_line(b.epsilon_estimate(claim.mu), None, Some(a)))
    {
        let _ = writeln!(out, "tightness    {t}");
    }
    let _ = writeln!(out, "seed         {}", audit.seed);
    let _ = writeln!(out, "time         {:.2} s", started.elapsed().as_secs_f64());
    finish(args, report, out, code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_guess_sizes() -> Result<()> {
        assert_eq!(parse_guesses("10:10, 5:0")?, vec![(10, 10), (5, 0)]);
        assert!(parse_guesses("10").is_err());
        assert!(parse_guesses("0:0").is_err());
        assert!(parse_guesses("a:1").is_err());
        Ok(())
    }
}
