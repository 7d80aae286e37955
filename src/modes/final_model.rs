//! `audit final-model` as a library: the built-in DP-SGD trainer audited from its final model
//! over many training runs ([`crate::audit::final_model`]), from plain [`FinalModelOptions`].
//! The command line ([`crate::commands::final_model`]) calls it; the defaults are written once,
//! in [`FinalModelOptions::default`].

use std::fmt::Write as _;

use crate::audit::final_model::{
    Candidate, EXPLORATION_RUNS, FinalModelAudit, FinalModelConfig, InitKind, TargetKind,
    audit_final_model, default_candidates,
};
use crate::error::{Error, Result};
use crate::mechanisms::Params;
use crate::mechanisms::canary_trainer::TrainerConfig;
use crate::mechanisms::math::readable;
use crate::report::output::{Outcome, to_json};

/// What `audit final-model` does, as plain options (see `audit final-model --help`).
#[derive(Clone, Debug)]
pub struct FinalModelOptions {
    /// Trainer parameters NAME=VALUE.
    pub params: Vec<String>,
    /// Confirming training runs per side.
    pub runs: usize,
    /// Exploration runs per side and candidate.
    pub exploration_runs: usize,
    /// `auto` or one initial-model kind.
    pub initial_model: String,
    /// `auto` or one target.
    pub target: String,
    /// Seed of every random choice.
    pub seed: u64,
    /// β.
    pub failure_probability: f64,
    /// JSON instead of text.
    pub json: bool,
    /// A program to audit instead of the built-in trainer (`--exec`), with its settings.
    pub exec: Option<ExecFinalModelOptions>,
}

/// `audit final-model --exec`'s settings (see [`crate::modes::final_model_exec`]).
#[derive(Clone, Debug, Default)]
pub struct ExecFinalModelOptions {
    /// The program.
    pub command: String,
    /// `--data FILE`: the training data D.
    pub data: Option<std::path::PathBuf>,
    /// `--record-range L:U`.
    pub record_range: Option<String>,
    /// `--claim`.
    pub claim: Option<String>,
    /// `--delta`: δ of the ε shown for a `gdp` claim.
    pub delta: f64,
    /// `--exec-timeout` seconds.
    pub timeout: f64,
    /// `--exec-batch`: runs per request.
    pub batch: usize,
}

impl Default for FinalModelOptions {
    /// 1 000 runs per side, [`EXPLORATION_RUNS`] per candidate, the auditor's choice made by
    /// exploration, seed 0, the default β, text.
    fn default() -> Self {
        Self {
            params: Vec::new(),
            runs: 1000,
            exploration_runs: EXPLORATION_RUNS,
            initial_model: "auto".into(),
            target: "auto".into(),
            seed: 0,
            failure_probability: crate::audit::AuditConfig::default().failure_probability,
            json: false,
            exec: None,
        }
    }
}

/// Checks the flags and builds the audit's configuration.
///
/// # Errors
/// A bad flag, naming the value and what is allowed.
pub fn config_from_options(o: &FinalModelOptions) -> Result<FinalModelConfig> {
    super::checks::check_beta(o.failure_probability)?;
    super::checks::check_count("--runs", o.runs, 100, 1_000_000)?;
    super::checks::check_count("--exploration-runs", o.exploration_runs, 20, 100_000)?;
    let params = Params::parse(&o.params)?;
    if params.iter().any(|(n, _)| n == "canary_norm") {
        return Err(Error::InvalidConfig(
            "--param canary_norm: the final-model audit has no canaries; allowed: the target's \
             scale through --target dirac:A"
                .into(),
        ));
    }
    let trainer = TrainerConfig::from_params(params)?;
    let init = match o.initial_model.trim() {
        "auto" => None,
        s => Some(InitKind::parse(s)?),
    };
    let target = match o.target.trim() {
        "auto" => None,
        s => Some(TargetKind::parse(s)?),
    };
    let candidates: Vec<Candidate> = match (init, target) {
        (Some(init), Some(target)) => vec![Candidate { init, target }],
        _ => default_candidates(&trainer)
            .into_iter()
            .filter(|c| init.is_none_or(|i| c.init == i) && target.is_none_or(|t| c.target == t))
            .collect(),
    };
    if candidates.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "--initial-model {} with --target {}: no default candidate has both; allowed: both \
             given (one candidate), or auto for either",
            o.initial_model, o.target
        )));
    }
    Ok(FinalModelConfig {
        trainer,
        runs: o.runs,
        exploration_runs: o.exploration_runs,
        candidates,
        seed: o.seed,
        failure_probability: o.failure_probability,
    })
}

/// `audit final-model`: what it prints and its exit code (1 = violation found).
///
/// # Errors
/// A bad flag; the trainer; the tester.
pub fn final_model(o: &FinalModelOptions) -> Result<Outcome> {
    if o.exec.is_some() {
        return Err(Error::InvalidConfig(
            "final-model with --exec: a program is audited by \
             modes::final_model_exec::final_model_exec (the command line dispatches there)"
                .into(),
        ));
    }
    let config = config_from_options(o)?;
    let audit = audit_final_model(&config)?;
    let code = u8::from(audit.violation);
    let stdout = if o.json {
        to_json(&serde_json::json!({
            "mode": "final-model",
            "tool_version": env!("CARGO_PKG_VERSION"),
            "target_id": crate::mechanisms::final_model::ID,
            "audit": audit,
            "last_iterate_heuristic": {
                "epsilon": audit.last_iterate_heuristic,
                "delta": audit.claim.delta,
                "label": HEURISTIC_LABEL,
            },
        }))?
    } else {
        text(&audit)
    };
    Ok(Outcome::new(stdout, code))
}

/// The heuristic's label, wherever it is shown.
pub const HEURISTIC_LABEL: &str = "last-iterate heuristic (Steinke et al. 2025, 'The Last \
Iterate Advantage'; linear losses; not a bound)";

fn candidate_words(c: &Candidate) -> String {
    format!("theta0 = {}, target = {}", c.init.name(), c.target.name())
}

/// The text report.
pub fn text(a: &FinalModelAudit) -> String {
    let mut out = String::new();
    let t = &a.trainer;
    let _ = writeln!(
        out,
        "final-model audit {} ({})",
        crate::mechanisms::final_model::ID,
        a.threat_model
    );
    let _ = writeln!(
        out,
        "trainer      {}: records={} features={} steps={} sampling_rate={} noise_multiplier={} \
         clip={} learning_rate={} noise_scale={} sampling_rate_ratio={} batch_clip={} \
         clip_after_noise={}",
        if t.hidden == 0 {
            "logistic regression".to_string()
        } else {
            format!("network with {} hidden tanh units", t.hidden)
        },
        t.records,
        t.features,
        t.steps,
        readable(t.sampling_rate),
        readable(t.noise_multiplier),
        readable(t.clip),
        readable(t.learning_rate),
        readable(t.noise_scale),
        readable(t.sampling_rate_ratio),
        u8::from(t.batch_clip),
        u8::from(t.clip_after_noise)
    );
    let mu = a
        .claim
        .mu
        .map_or(String::new(), |m| format!(" (mu = {})", readable(m)));
    let _ = writeln!(
        out,
        "claim        epsilon = {} at delta = {}{mu}: {}",
        readable(a.claim.epsilon),
        readable(a.claim.delta),
        a.claim.source
    );
    let _ = writeln!(
        out,
        "reference    epsilon = {} at delta = {}: {HEURISTIC_LABEL}{}",
        readable(a.last_iterate_heuristic),
        readable(a.claim.delta),
        if a.claim.mu.is_some() {
            "; at q = 1 it equals the claim"
        } else {
            ""
        }
    );
    let _ = writeln!(
        out,
        "choices      {} (score: {}); made on exploration runs only ({} per side and candidate, \
         search streams disjoint from the confirming runs; no beta spent)",
        candidate_words(&a.chosen),
        a.score,
        a.exploration_runs
    );
    let _ = writeln!(
        out,
        "  candidate                                 |grad|/C at theta0  min |grad|/C at theta_T  mu (point)"
    );
    for r in &a.exploration {
        let opt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.3}"));
        let _ = writeln!(
            out,
            "  {:<42}{:>17.3}  {:>23}  {:>10}{}",
            candidate_words(&r.candidate),
            r.gradient_at_start,
            opt(r.gradient_at_end_min),
            opt(r.mu_point),
            if r.candidate == a.chosen {
                "  <- confirmed"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        out,
        "confirmed    {} fresh runs per side, beta = {}, route: {}",
        a.runs,
        readable(a.beta),
        a.route
    );
    if let Some(m) = a.mu_lower {
        let _ = writeln!(out, "mu_lower     {m:.4}");
    }
    let _ = writeln!(
        out,
        "epsilon      >= {:.4} at delta = {} ({:.2} of the claim){}",
        a.epsilon_lower,
        readable(a.claim.delta),
        a.epsilon_lower / a.claim.epsilon,
        if a.mu_lower.is_some() {
            " = the epsilon of the mu_lower-GDP profile"
        } else {
            ""
        }
    );
    let _ = writeln!(out, "inequality   {}", a.inequality);
    let _ = writeln!(
        out,
        "true         epsilon = {} (reading only, not used to decide)",
        readable(a.true_guarantee.epsilon)
    );
    let _ = writeln!(
        out,
        "verdict      {}",
        if a.violation {
            "VIOLATION: the final model leaks more than the claim allows"
        } else {
            "no violation found (this proves nothing about the trainer)"
        }
    );
    out
}
