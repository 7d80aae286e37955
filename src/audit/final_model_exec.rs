//! Final-model audits of a program (`audit final-model --exec`): a trainer in any language,
//! seen only through its final model, over many training runs, with the initial model and the
//! target record chosen by the auditor (the many-run black-box threat model of
//! [`crate::audit::final_model`], for programs).
//!
//! # The exchange
//! Every request of the exec protocol (docs/exec-protocol.md) carries two more keys:
//! `"initial_model"` (θ₀, a JSON array) and `"queries"` (one record, the target x_T). The program
//! trains `samples` times from θ₀ on the request's dataset and prints, per run, its final
//! model's score of the query (e.g. the signed margin or minus the loss; any fixed function of
//! the final model and the query). The pair is (D, D ∪ {x_T}) under add/remove.
//!
//! # Why the auditor's choices cost no soundness
//! As for the built-in trainer: a DP training claim holds for **every** initial model and every
//! neighbouring pair, and the printed score is a fixed function of the final model and the
//! public query, so the releases on each side are i.i.d. draws of a mechanism that keeps the
//! claim, whichever θ₀ and x_T were chosen, provided the choice is fixed before the confirming
//! runs are drawn. Here every candidate (θ₀, x_T) is run on its own exploration streams
//! ([`exploration_phase`]), disjoint from the confirming ones ([`CONFIRM_PHASE`]); the one with
//! the largest point estimate of μ is confirmed on fresh runs, and no β is spent on exploration.
//!
//! # The decision
//! - A `gdp:MU` claim: the hockey-stick tester's μ̂ = Φ⁻¹(A̲) − Φ⁻¹(B̄) at β (Clopper–Pearson at
//!   β/2 on each side of a threshold event chosen on its 20 % training split), a lower confidence
//!   bound on the μ of any μ-GDP mechanism (Dong, Roth & Su 2022); violation iff μ̂ > μ, so a
//!   program that keeps its claim is flagged with probability ≤ β. ε(μ̂) at `--delta` is shown.
//! - Any other claim: the hockey-stick tester on the claim ([`audit_drawn`]), its own β split.
//!
//! # What is checked of the program
//! Each candidate's program is probed once (two runs) with its keys; a score must be one number.
//! For each initial model the auditor gives, the program is asked for two runs at one seed with
//! that model and with none (its own): the same numbers mean it ignores `"initial_model"`, and
//! the audit stops and says so (the report would otherwise name an initial model it never
//! used). `--initial-model own` sends no `"initial_model"` key.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use crate::audit::final_model::{CONFIRM_PHASE, decide_gdp, exploration_phase, standardised_gap};
use crate::audit::{AuditConfig, Phase, Verdict, audit_drawn};
use crate::error::{Error, Result};
use crate::mechanisms::{
    Dataset, DatasetPair, Mechanism, Neighboring, PrivacyClaim, RecordDomain, Samples,
};
use crate::rng::{Seed, sample_pair_parallel};
use crate::sources::exec::ExecMechanism;
use crate::testers::{HockeyStickTester, PropertyTester};

/// A program audited from its final model, and the auditor's candidates.
#[derive(Clone, Debug)]
pub struct ExecFinalModelConfig {
    /// The program, as a shell would split it.
    pub command: String,
    /// The claim audited.
    pub claim: PrivacyClaim,
    /// δ at which ε(μ̂) is shown for a `gdp` claim.
    pub delta: f64,
    /// D: the training data, records of the domain.
    pub data: Dataset,
    /// The record domain (range and dimension).
    pub domain: RecordDomain,
    /// Candidate initial models: (name, θ₀); `None`: the program's own (no `"initial_model"`
    /// key is sent).
    pub initial_models: Vec<(String, Option<Vec<f64>>)>,
    /// Candidate targets: (name, record).
    pub targets: Vec<(String, Vec<f64>)>,
    /// Confirming runs per side.
    pub runs: usize,
    /// Exploration runs per side and candidate.
    pub exploration_runs: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// β.
    pub failure_probability: f64,
    /// Time one request may run.
    pub timeout: Duration,
    /// Runs per request.
    pub batch: usize,
}

/// One row of the exploration table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExecExplorationRow {
    /// The initial model's name.
    pub initial_model: String,
    /// The target's name.
    pub target: String,
    /// (mean_in − mean_out)/sd on the exploration runs (a point estimate that only chooses);
    /// `None` when there was one candidate.
    pub mu_point: Option<f64>,
}

/// What a final-model audit of a program found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExecFinalModelAudit {
    /// The threat model, in words.
    pub threat_model: String,
    /// The program.
    pub program: String,
    /// The claim, as given.
    pub claim: String,
    /// The chosen initial model's name.
    pub initial_model: String,
    /// The chosen target's name and record.
    pub target: (String, Vec<f64>),
    /// The released score, in words.
    pub score: String,
    /// Exploration runs per side and candidate (0: one candidate, nothing explored).
    pub exploration_runs: usize,
    /// The exploration table.
    pub exploration: Vec<ExecExplorationRow>,
    /// Confirming runs per side.
    pub runs: usize,
    /// β.
    pub beta: f64,
    /// `gaussian-dp` or `claim`.
    pub route: String,
    /// The lower confidence bound on μ (GDP route).
    pub mu_lower: Option<f64>,
    /// The lower confidence bound on ε at `delta`.
    pub epsilon_lower: f64,
    /// δ of `epsilon_lower`.
    pub delta: f64,
    /// The inequality that decided.
    pub inequality: String,
    /// The seed.
    pub seed: u64,
    /// True iff the bound exceeds the claim.
    pub violation: bool,
}

/// The program with `theta0` and `target` in every request (probed once).
fn program(
    c: &ExecFinalModelConfig,
    theta0: Option<&[f64]>,
    target: &[f64],
) -> Result<Arc<ExecMechanism>> {
    let mut keys = serde_json::Map::new();
    if let Some(theta0) = theta0 {
        keys.insert("initial_model".into(), serde_json::json!(theta0));
    }
    keys.insert("queries".into(), serde_json::json!([target]));
    let m = ExecMechanism::with_request_keys(
        &c.command,
        c.claim,
        Neighboring::AddRemove,
        c.domain,
        c.timeout,
        &c.data,
        &keys,
    )?
    .with_batch_size(c.batch)?;
    if m.output_dim() != 1 {
        return Err(Error::InvalidConfig(format!(
            "--exec {}: the program printed {} numbers per run for one query; allowed: one score \
             of the query per run (e.g. its final model's margin on the target)",
            c.command,
            m.output_dim()
        )));
    }
    Ok(Arc::new(m))
}

/// Stops the audit when the program's runs do not depend on the initial model it is sent.
fn check_uses_initial_model(
    c: &ExecFinalModelConfig,
    theta0: &[f64],
    target: &[f64],
) -> Result<()> {
    let runs = |t: Option<&[f64]>| -> Result<Samples> {
        let m = program(c, t, target)?;
        let mut rng = Seed(c.seed).rng(crate::rng::Stream::Other {
            tag: PROBE_TAG,
            index: 0,
        });
        Ok(m.sample(&c.data, 2, &mut rng)?)
    };
    if runs(Some(theta0))?.values() == runs(None)?.values() {
        return Err(Error::InvalidConfig(format!(
            "--exec {}: the program ignores \"initial_model\": two runs at one seed, one sent \
             this initial model and one sent none, printed the same scores (or this is the \
             program's own initial model). The audit chooses the initial model (the claim holds \
             for every one); make the program start training from the request's \
             \"initial_model\" (docs/exec-protocol.md), or audit with --initial-model own",
            c.command
        )));
    }
    Ok(())
}

/// Stream tag of the initial-model probe's requests.
const PROBE_TAG: u64 = 0x0E_0301;

/// Runs per side of `m` on D and D ∪ {target}, from `phase`'s streams.
fn draw(
    c: &ExecFinalModelConfig,
    m: &ExecMechanism,
    pair: &DatasetPair,
    n: usize,
    phase: Phase,
) -> Result<(Samples, Samples)> {
    sample_pair_parallel(m, pair, n, Seed(c.seed), |side| phase.stream_of(side), None)
}

/// The exploration table and the chosen (initial model, target) indices.
fn explore(c: &ExecFinalModelConfig) -> Result<(Vec<ExecExplorationRow>, (usize, usize))> {
    let single = c.initial_models.len() * c.targets.len() == 1;
    let mut rows = Vec::new();
    let mut best = ((0, 0), f64::NEG_INFINITY);
    for (i, (init_name, theta0)) in c.initial_models.iter().enumerate() {
        for (j, (target_name, target)) in c.targets.iter().enumerate() {
            let mu_point = if single {
                None
            } else {
                let m = program(c, theta0.as_deref(), target)?;
                let pair = DatasetPair::new(
                    c.data.clone(),
                    c.data.with_record(target)?,
                    Neighboring::AddRemove,
                )?;
                let t = (i * c.targets.len() + j) as u64;
                let (out, inn) = draw(c, &m, &pair, c.exploration_runs, exploration_phase(t))?;
                // Either direction: a program's score may fall or rise with membership.
                let mu = standardised_gap(&out, &inn).abs();
                if mu > best.1 {
                    best = ((i, j), mu);
                }
                Some(mu)
            };
            rows.push(ExecExplorationRow {
                initial_model: init_name.clone(),
                target: target_name.clone(),
                mu_point,
            });
        }
    }
    Ok((rows, best.0))
}

/// Audits the program from its final model over many runs (module documentation).
///
/// # Errors
/// A bad setting; the program (it fails, times out, prints more than one score, ignores the
/// initial model); the tester.
pub fn audit_exec_final_model(c: &ExecFinalModelConfig) -> Result<ExecFinalModelAudit> {
    if c.initial_models.is_empty() || c.targets.is_empty() {
        return Err(Error::InvalidConfig(
            "final-model --exec: no initial model or no target; allowed: at least one of each"
                .into(),
        ));
    }
    c.domain.check(&c.data)?;
    for (name, t) in &c.targets {
        c.domain
            .check(&Dataset::vectors(c.domain.dim, std::slice::from_ref(t))?)
            .map_err(|e| Error::InvalidConfig(format!("--target {name}: {e}")))?;
    }
    for (name, theta0) in &c.initial_models {
        if let Some(theta0) = theta0 {
            check_uses_initial_model(c, theta0, &c.targets[0].1)
                .map_err(|e| Error::InvalidConfig(format!("--initial-model {name}: {e}")))?;
        }
    }
    let (exploration, (i, j)) = explore(c)?;
    let (init_name, theta0) = &c.initial_models[i];
    let target = c.targets[j].clone();
    let m = program(c, theta0.as_deref(), &target.1)?;
    let pair = DatasetPair::new(
        c.data.clone(),
        c.data.with_record(&target.1)?,
        Neighboring::AddRemove,
    )?;
    let (p, q) = draw(c, &m, &pair, c.runs, CONFIRM_PHASE)?;
    let beta = c.failure_probability;
    let (route, mu_lower, epsilon_lower, delta, inequality, violation) = match c.claim {
        PrivacyClaim::GaussianDp { mu } => {
            let d = decide_gdp(&p, &q, mu, c.delta, beta)?;
            (
                "gaussian-dp".to_string(),
                Some(d.mu_lower),
                d.epsilon_lower,
                c.delta,
                d.inequality,
                d.violation,
            )
        }
        claim => {
            let testers: Vec<Box<dyn PropertyTester>> =
                vec![Box::new(HockeyStickTester::default())];
            let config = AuditConfig {
                seed: c.seed,
                samples_per_side: c.runs,
                failure_probability: beta,
            };
            let r = audit_drawn(
                m.as_ref(),
                &claim,
                &pair,
                (&p, &q),
                &testers,
                &config,
                CONFIRM_PHASE.tester_base(),
            )?;
            let e = r.empirical_epsilon.as_ref();
            (
                "claim".to_string(),
                None,
                e.map_or(0.0, |e| e.lower_bound),
                e.map_or(0.0, |e| e.delta),
                format!(
                    "the hockey-stick tester on the claim {claim}, its bounds at beta/k each \
                     (Bonferroni); {}",
                    e.and_then(|e| e.event.clone()).unwrap_or_default()
                ),
                r.verdict == Verdict::Violation,
            )
        }
    };
    Ok(ExecFinalModelAudit {
        threat_model: "black-box, final model only, many runs: each run trains the program from \
                       the auditor's initial model on D or D + {target} and the auditor sees one \
                       score of the target per run"
            .into(),
        program: c.command.clone(),
        claim: c.claim.to_string(),
        initial_model: init_name.clone(),
        target,
        score: "the program's score of the target (its final model's number for the query)".into(),
        exploration_runs: if exploration.len() > 1 {
            c.exploration_runs
        } else {
            0
        },
        exploration,
        runs: c.runs,
        beta,
        route,
        mu_lower,
        epsilon_lower,
        delta,
        inequality,
        seed: c.seed,
        violation,
    })
}
