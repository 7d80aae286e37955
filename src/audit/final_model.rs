//! Final-model audits over many runs: the built-in DP-SGD trainer seen only through its final
//! model θ_T, one score of one target record per training run, many runs on each side of the
//! pair (D, D ∪ {target}) (black-box, final model only, many runs; Annamalai & De Cristofaro
//! 2024, "Nearly Tight Black-Box Auditing of Differentially Private Machine Learning").
//!
//! # The auditor's choices, and why they cost no soundness
//! DP-SGD's claim holds for **every** initial model θ₀ and **every** pair of add/remove
//! neighbours, and the released score is a fixed function of θ_T and of the public target
//! ([`crate::mechanisms::final_model`]). So the auditor may choose θ₀, the target and the score
//! freely — even from D — provided the choice is fixed before the confirming runs are drawn:
//! then the confirming releases are i.i.d. draws of a mechanism that keeps the claim, and the
//! tester's guarantee applies unchanged. Here the choice is made on **exploration runs** drawn
//! from [`Phase::Search`]`(t)` streams (candidate t), which are disjoint from the confirming
//! [`Phase::Confirm`]`(0)` streams ([`exploration_phase`], [`CONFIRM_PHASE`]; a test asserts
//! it). No β is spent on exploration: nothing is claimed from it.
//!
//! Candidates (θ₀ × target): θ₀ ∈ {zero (the trainer's own initial model), pretrained
//! (non-private full-batch GD on D, as Annamalai & De Cristofaro pre-train on half the data),
//! pretrained with the target's input pushed to −κ (κ = 8/a, so that the target's gradient
//! a·(1 − σ(a·θ[k])) stays within 3e-4·a of a: saturated at a = C = 1)}; targets, chosen by their loss at
//! θ₀ inside the record domain (as Yoon, Jeung & No 2024 craft the target from the loss):
//! a Dirac record a·e_k on an input no real record touches (a ∈ {1, 2, 4}), and for logistic
//! regression the in-domain corner x* = −sign(θ₀) ∈ {−1, 1}^f with y = 1, the record of largest
//! loss at θ₀ in the box (its gradient (σ − 1)·x* is clipped to C in a constant direction).
//! Each candidate gets [`EXPLORATION_RUNS`] runs per side; the one with the largest
//! standardised mean gap (mean_in − mean_out)/sd (the μ of a Gaussian shift, a point estimate
//! only) is confirmed.
//!
//! # The decision
//! - q = 1: the claim is exactly μ-GDP, μ = √T/z. The hockey-stick tester's
//!   [`crate::testers::HockeyStickTester::estimate_mu_in_memory`] picks a threshold event S on
//!   its training split (20 %) and bounds A(S), B(S) on the held-out runs by one-sided
//!   Clopper–Pearson at β/2 each: with probability ≥ 1 − β, μ̂ = Φ⁻¹(A̲) − Φ⁻¹(B̄) ≤ μ* for the
//!   mechanism's true μ* (μ-GDP ⇒ Φ⁻¹(A(S)) − Φ⁻¹(B(S)) ≤ μ, Dong, Roth & Su 2022). Violation
//!   iff μ̂ > μ, so a trainer that keeps its claim is flagged with probability ≤ β. The ε
//!   reported is ε(μ̂) at the trainer's δ, the ε of the μ̂-GDP profile (a lower bound on the
//!   trainer's ε at δ on the same event of probability ≥ 1 − β).
//! - q < 1: the claim is the PLD accountant's (ε, δ); the runs are audited by
//!   [`crate::audit::audit_drawn`] with the hockey-stick tester on that claim (its own β split
//!   and ε estimate).

use std::sync::Arc;

use serde::Serialize;

use crate::audit::one_run::gdp_epsilon_lower;
use crate::audit::{AuditConfig, Phase, audit_drawn};
use crate::error::{Error, Result};
use crate::mechanisms::Mechanism;
use crate::mechanisms::Samples;
use crate::mechanisms::canary_trainer::{
    LedgerClaim, TrainerConfig, TrainingData, input_gradient, pretrain, random_initial_model,
};
use crate::mechanisms::final_model::{FinalModelScore, Target, last_iterate_heuristic};
use crate::rng::{Seed, Stream, sample_pair_parallel};
use crate::testers::{HockeyStickTester, PropertyTester};

/// Runs per side for each exploration candidate.
pub const EXPLORATION_RUNS: usize = 200;

/// Steps of non-private pre-training for the `pretrained` initial models.
pub const PRETRAIN_STEPS: usize = 200;

/// κ·a: a saturated Dirac target's input parameter starts at −κ = −SATURATION/a, so its
/// gradient a·(1 − σ(−SATURATION)) is within e^{−8} ≈ 3e-4 of a, i.e. of C at a = C = 1,
/// and stays there while θ drifts by much less than 1/a (the drift is O(T·η·C/n)).
pub const SATURATION: f64 = 8.0;

/// The confirming phase: the streams of the runs that decide.
pub const CONFIRM_PHASE: Phase = Phase::Confirm(0);

/// The exploration phase of candidate `t`: search streams, never the confirming ones.
pub fn exploration_phase(t: u64) -> Phase {
    Phase::Search(t)
}

/// Stream tags of a final-model audit's own randomness ([`Stream::Other`]).
pub mod streams {
    /// The synthetic data set (the fixed rest D).
    pub const DATA: u64 = 0x0E_0201;
    /// The network's random initial model (hidden > 0).
    pub const INIT: u64 = 0x0E_0202;
}

/// The initial model θ₀ the auditor gives the trainer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum InitKind {
    /// The trainer's own: 0 for logistic regression, N(0, 1/fan-in) weights for the network.
    Zero,
    /// Pre-trained non-privately on D ([`PRETRAIN_STEPS`] full-batch GD steps).
    Pretrained,
    /// Pre-trained, with the Dirac target's input parameter set to −8/a (saturation).
    Saturated,
}

impl InitKind {
    /// `zero`, `pretrained` or `saturated`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Zero => "zero",
            Self::Pretrained => "pretrained",
            Self::Saturated => "saturated",
        }
    }

    /// Parses a `--initial-model` value.
    ///
    /// # Errors
    /// Anything else, naming the value and what is allowed.
    pub fn parse(s: &str) -> Result<Self> {
        match s.trim() {
            "zero" => Ok(Self::Zero),
            "pretrained" => Ok(Self::Pretrained),
            "saturated" => Ok(Self::Saturated),
            other => Err(Error::InvalidConfig(format!(
                "--initial-model {other:?}; allowed: auto, zero, pretrained or saturated"
            ))),
        }
    }
}

/// The target record the auditor adds on one side.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum TargetKind {
    /// x = a·e_k on an extra input k no real record touches, y = 1.
    Dirac {
        /// a.
        a: f64,
    },
    /// x = −sign(θ₀) ∈ {−1, 1}^f (sign 0 read as +), y = 1: logistic regression only.
    Corner,
}

impl TargetKind {
    /// `dirac:A` or `corner`.
    pub fn name(self) -> String {
        match self {
            Self::Dirac { a } => format!("dirac:{a}"),
            Self::Corner => "corner".into(),
        }
    }

    /// Parses a `--target` value.
    ///
    /// # Errors
    /// Anything else, naming the value and what is allowed.
    pub fn parse(s: &str) -> Result<Self> {
        let s = s.trim();
        if s == "corner" {
            return Ok(Self::Corner);
        }
        if let Some(a) = s.strip_prefix("dirac:")
            && let Ok(a) = a.trim().parse::<f64>()
            && a.is_finite()
            && (0.01..=100.0).contains(&a)
        {
            return Ok(Self::Dirac { a });
        }
        Err(Error::InvalidConfig(format!(
            "--target {s:?}; allowed: auto, corner, or dirac:A with 0.01 <= A <= 100"
        )))
    }
}

/// One candidate (θ₀, target).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Candidate {
    /// θ₀.
    pub init: InitKind,
    /// The target.
    pub target: TargetKind,
}

/// The default candidates for `trainer` (module documentation).
pub fn default_candidates(trainer: &TrainerConfig) -> Vec<Candidate> {
    let c = |init, target| Candidate { init, target };
    let mut v = vec![
        c(InitKind::Zero, TargetKind::Dirac { a: 1.0 }),
        c(InitKind::Zero, TargetKind::Dirac { a: 2.0 }),
        c(InitKind::Zero, TargetKind::Dirac { a: 4.0 }),
        c(InitKind::Pretrained, TargetKind::Dirac { a: 1.0 }),
    ];
    if trainer.hidden == 0 {
        v.push(c(InitKind::Saturated, TargetKind::Dirac { a: 1.0 }));
        v.push(c(InitKind::Pretrained, TargetKind::Corner));
    }
    v
}

/// Settings of one final-model audit.
#[derive(Clone, Debug, PartialEq)]
pub struct FinalModelConfig {
    /// The trainer.
    pub trainer: TrainerConfig,
    /// Confirming runs per side.
    pub runs: usize,
    /// Exploration runs per side and candidate.
    pub exploration_runs: usize,
    /// The candidates (one: no exploration).
    pub candidates: Vec<Candidate>,
    /// The seed of every random choice.
    pub seed: u64,
    /// β.
    pub failure_probability: f64,
}

/// One row of the exploration table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ExplorationRow {
    /// The candidate.
    pub candidate: Candidate,
    /// The target's unclipped gradient norm at θ₀, in units of C (≥ 1: clipped to C).
    pub gradient_at_start: f64,
    /// The smallest such norm at the in-side runs' θ_T (saturation held at the end of training
    /// when ≥ 1); `None` when the candidate was not explored.
    pub gradient_at_end_min: Option<f64>,
    /// (mean_in − mean_out)/sd on the exploration runs: the μ of a Gaussian shift, a point
    /// estimate that decides only which candidate is confirmed.
    pub mu_point: Option<f64>,
}

/// What a final-model audit found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FinalModelAudit {
    /// The threat model, in words.
    pub threat_model: String,
    /// The trainer.
    pub trainer: TrainerConfig,
    /// The claim its ledger states.
    pub claim: LedgerClaim,
    /// What it actually provides (reading only; never used to decide).
    pub true_guarantee: LedgerClaim,
    /// Steinke et al. 2025's last-iterate heuristic at the claim's δ (a reference, not a bound).
    pub last_iterate_heuristic: f64,
    /// The chosen candidate.
    pub chosen: Candidate,
    /// The chosen target record (sparse x, y).
    pub target: Target,
    /// The released score, in words.
    pub score: String,
    /// Exploration runs per side and candidate (0: the choice was given).
    pub exploration_runs: usize,
    /// The exploration table.
    pub exploration: Vec<ExplorationRow>,
    /// Confirming runs per side.
    pub runs: usize,
    /// β.
    pub beta: f64,
    /// `gaussian-dp` (q = 1) or `approximate` (q < 1).
    pub route: String,
    /// The lower confidence bound on μ (GDP route).
    pub mu_lower: Option<f64>,
    /// The lower confidence bound on ε at the claim's δ.
    pub epsilon_lower: f64,
    /// The inequality that decided.
    pub inequality: String,
    /// The seed.
    pub seed: u64,
    /// True iff the bound exceeds the claim.
    pub violation: bool,
}

/// The data set D of the audit (the synthetic data from the seed's data stream).
pub fn audit_data(config: &FinalModelConfig) -> Arc<TrainingData> {
    let mut rng = Seed(config.seed).rng(Stream::Other {
        tag: streams::DATA,
        index: 0,
    });
    Arc::new(TrainingData::synthetic(
        config.trainer.records,
        config.trainer.features,
        &mut rng,
    ))
}

/// θ₀ and the target record of `candidate` (deterministic given the seed and D).
///
/// # Errors
/// A corner target for a network; the trainer's checks.
pub fn realise(
    config: &FinalModelConfig,
    data: &TrainingData,
    candidate: Candidate,
) -> Result<(Vec<f64>, Target)> {
    let t = &config.trainer;
    let f = t.features;
    let extra = usize::from(matches!(candidate.target, TargetKind::Dirac { .. }));
    let mut rng = Seed(config.seed).rng(Stream::Other {
        tag: streams::INIT,
        index: 0,
    });
    let start = random_initial_model(t, extra, &mut rng);
    let mut theta0 = match candidate.init {
        InitKind::Zero => start,
        InitKind::Pretrained | InitKind::Saturated => {
            pretrain(t, data, extra, &start, PRETRAIN_STEPS)?
        }
    };
    let target = match candidate.target {
        TargetKind::Dirac { a } => {
            if candidate.init == InitKind::Saturated {
                if t.hidden > 0 {
                    return Err(Error::InvalidConfig(
                        "--initial-model saturated with --param hidden > 0; allowed: \
                         logistic regression (hidden = 0)"
                            .into(),
                    ));
                }
                theta0[f] = -SATURATION / a;
            }
            Target {
                x: vec![(f, a)],
                y: 1.0,
                extra_inputs: 1,
            }
        }
        TargetKind::Corner => {
            if t.hidden > 0 {
                return Err(Error::InvalidConfig(
                    "--target corner with --param hidden > 0; allowed: logistic regression \
                     (hidden = 0), or a dirac:A target"
                        .into(),
                ));
            }
            let x = theta0
                .iter()
                .take(f)
                .enumerate()
                .map(|(k, v)| (k, if *v < 0.0 { 1.0 } else { -1.0 }))
                .collect();
            Target {
                x,
                y: 1.0,
                extra_inputs: 0,
            }
        }
    };
    Ok((theta0, target))
}

/// The target's unclipped gradient norm at θ, in units of C.
fn gradient_norm(trainer: &TrainerConfig, target: &Target, theta: &[f64]) -> Result<f64> {
    let g = input_gradient(trainer, target.extra_inputs, theta, &target.x, target.y)?;
    Ok(g.iter().map(|(_, v)| v * v).sum::<f64>().sqrt() / trainer.clip)
}

/// Draws `n` runs per side of `mechanism`'s pair from `phase`'s streams.
fn draw(
    mechanism: &FinalModelScore,
    n: usize,
    seed: u64,
    phase: Phase,
) -> Result<(Samples, Samples)> {
    let pair = mechanism.pair()?;
    sample_pair_parallel(
        mechanism,
        &pair,
        n,
        Seed(seed),
        |side| phase.stream_of(side),
        None,
    )
}

fn mean_sd(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, var.sqrt())
}

/// (mean_in − mean_out)/sd of the first coordinate of two sides' runs, sd the root of the mean
/// of the two variances: the μ of a Gaussian shift, a point estimate that only ranks
/// candidates (0 when both sides are constant).
pub(crate) fn standardised_gap(out: &Samples, inn: &Samples) -> f64 {
    let (mo, so) = mean_sd(&out.column(0).to_vec());
    let (mi, si) = mean_sd(&inn.column(0).to_vec());
    let sd = ((so * so + si * si) / 2.0).sqrt();
    if sd > 0.0 { (mi - mo) / sd } else { 0.0 }
}

/// The Gaussian-DP decision on confirming runs `p` (on D) and `q` (on D ∪ {target}) of a μ-GDP
/// claim: the hockey-stick tester's μ̂ = Φ⁻¹(A̲) − Φ⁻¹(B̄) at the full β, violation iff μ̂ > μ;
/// `epsilon_lower` is ε(μ̂) at `delta`.
pub(crate) struct GdpDecision {
    pub(crate) mu_lower: f64,
    pub(crate) epsilon_lower: f64,
    pub(crate) inequality: String,
    pub(crate) violation: bool,
}

/// See [`GdpDecision`].
pub(crate) fn decide_gdp(
    p: &Samples,
    q: &Samples,
    mu: f64,
    delta: f64,
    beta: f64,
) -> Result<GdpDecision> {
    let est = HockeyStickTester::default().estimate_mu_in_memory(p, q, beta)?;
    let mu_hat = est.as_ref().and_then(|e| e.lower_bound).unwrap_or(0.0);
    let inequality = est.map_or_else(
        || "no event found: mu_lower = 0".to_string(),
        |e| e.inequality,
    );
    Ok(GdpDecision {
        mu_lower: mu_hat,
        epsilon_lower: gdp_epsilon_lower(mu_hat, delta),
        inequality: format!("violation iff mu_lower > mu = {mu}; {inequality}"),
        violation: mu_hat > mu,
    })
}

/// Explores every candidate on its own search streams and returns the table and the index
/// of the one to confirm (the largest `mu_point`; the first on ties).
///
/// # Errors
/// From the trainer.
pub fn explore(
    config: &FinalModelConfig,
    data: &Arc<TrainingData>,
) -> Result<(Vec<ExplorationRow>, usize)> {
    let mut rows = Vec::with_capacity(config.candidates.len());
    let mut best = (0, f64::NEG_INFINITY);
    for (t, &candidate) in config.candidates.iter().enumerate() {
        let (theta0, target) = realise(config, data, candidate)?;
        let start = gradient_norm(&config.trainer, &target, &theta0)?;
        if config.candidates.len() == 1 {
            rows.push(ExplorationRow {
                candidate,
                gradient_at_start: start,
                gradient_at_end_min: None,
                mu_point: None,
            });
            break;
        }
        let m = FinalModelScore::new(config.trainer.clone(), data.clone(), theta0, target)?;
        let (out, inn) = draw(
            &m,
            config.exploration_runs,
            config.seed,
            exploration_phase(t as u64),
        )?;
        let mu = standardised_gap(&out, &inn);
        // Saturation at the end of training: for a Dirac target on a logistic regression the
        // margin is s = a·θ_T[k] and the gradient norm a·(1 − σ(s)) falls as s grows, so the
        // in-side run of largest margin has the smallest norm.
        let end = match (candidate.target, config.trainer.hidden) {
            (TargetKind::Dirac { a }, 0) => {
                let highest = inn
                    .column(0)
                    .iter()
                    .copied()
                    .fold(f64::NEG_INFINITY, f64::max);
                Some(a / (1.0 + highest.exp()) / config.trainer.clip)
            }
            _ => None,
        };
        if mu > best.1 {
            best = (t, mu);
        }
        rows.push(ExplorationRow {
            candidate,
            gradient_at_start: start,
            gradient_at_end_min: end,
            mu_point: Some(mu),
        });
    }
    Ok((rows, best.0))
}

/// Audits the trainer from its final model over many runs (module documentation): explores the
/// candidates on search streams, confirms the chosen one on fresh runs, decides.
///
/// # Errors
/// Fewer than 100 runs; β outside (0, 1); the trainer; the tester.
pub fn audit_final_model(config: &FinalModelConfig) -> Result<FinalModelAudit> {
    if config.runs < 100 || config.candidates.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "--runs {} with {} candidates; allowed: at least 100 runs per side and one candidate",
            config.runs,
            config.candidates.len()
        )));
    }
    let beta = config.failure_probability;
    let data = audit_data(config);
    let (exploration, chosen) = explore(config, &data)?;
    let candidate = config.candidates[chosen];
    let (theta0, target) = realise(config, &data, candidate)?;
    let m = FinalModelScore::new(config.trainer.clone(), data, theta0, target.clone())?;
    let (p, q) = draw(&m, config.runs, config.seed, CONFIRM_PHASE)?;
    let claim = m.ledger_claim().clone();
    let (route, mu_lower, epsilon_lower, inequality, violation) = match claim.mu {
        Some(mu) => {
            let d = decide_gdp(&p, &q, mu, claim.delta, beta)?;
            (
                "gaussian-dp".to_string(),
                Some(d.mu_lower),
                d.epsilon_lower,
                d.inequality,
                d.violation,
            )
        }
        None => {
            let testers: Vec<Box<dyn PropertyTester>> =
                vec![Box::new(HockeyStickTester::default())];
            let audit_config = AuditConfig {
                seed: config.seed,
                samples_per_side: config.runs,
                failure_probability: beta,
            };
            let r = audit_drawn(
                &m,
                &m.claim(),
                &m.pair()?,
                (&p, &q),
                &testers,
                &audit_config,
                CONFIRM_PHASE.tester_base(),
            )?;
            let eps = r.empirical_epsilon.as_ref().map_or(0.0, |e| e.lower_bound);
            let source = r
                .empirical_epsilon
                .as_ref()
                .and_then(|e| e.source.clone().or_else(|| e.event.clone()))
                .map_or(String::new(), |s| format!("; epsilon_lower from {s}"));
            (
                "approximate".to_string(),
                None,
                eps,
                format!(
                    "(eps, delta)-DP at the claim's ({:.4}, {}): the hockey-stick tester's {} bound(s), each at its share of beta (Bonferroni), decide; violation iff one exceeds what the claim allows{source}",
                    claim.epsilon,
                    claim.delta,
                    r.bounds.len()
                ),
                r.verdict == crate::audit::Verdict::Violation,
            )
        }
    };
    let explored = exploration.len() > 1;
    Ok(FinalModelAudit {
        threat_model: "black-box, final model only, many runs: each run trains from the auditor's initial model on D or D + {target} and releases only theta_T; the auditor sees one score of the target per run".into(),
        true_guarantee: config.trainer.true_guarantee()?,
        last_iterate_heuristic: last_iterate_heuristic(&config.trainer),
        trainer: config.trainer.clone(),
        claim,
        chosen: candidate,
        target,
        score: "signed margin (2y - 1) * logit_thetaT(x_target) (a decreasing function of the target's loss)".into(),
        exploration_runs: if explored { config.exploration_runs } else { 0 },
        exploration,
        runs: config.runs,
        beta,
        route,
        mu_lower,
        epsilon_lower,
        inequality,
        seed: config.seed,
        violation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::Params;
    use crate::rng::Side;

    fn small(params: Params, runs: usize, seed: u64) -> Result<FinalModelConfig> {
        let trainer = TrainerConfig::from_params(params.set("records", 200.0))?;
        Ok(FinalModelConfig {
            candidates: default_candidates(&trainer),
            trainer,
            runs,
            exploration_runs: 100,
            seed,
            failure_probability: 0.05,
        })
    }

    /// Exploration and confirmation never share a stream: every exploration candidate's
    /// streams (both sides, every chunk an audit can use) differ from the confirming ones, and
    /// so do the generators they seed.
    #[test]
    fn exploration_streams_are_disjoint_from_confirming_streams() {
        use rand::Rng as _;
        let seed = Seed(7);
        let mut confirm = Vec::new();
        let mut explore = Vec::new();
        for side in [Side::First, Side::Second] {
            for chunk in 0..64 {
                confirm.push(CONFIRM_PHASE.stream_of(side).with_chunk(chunk));
                for t in 0..16 {
                    explore.push(exploration_phase(t).stream_of(side).with_chunk(chunk));
                }
            }
        }
        for s in &explore {
            assert!(!confirm.contains(s), "{s:?} is a confirming stream");
        }
        let firsts: std::collections::HashSet<u64> =
            confirm.iter().map(|s| seed.rng(*s).next_u64()).collect();
        for s in &explore {
            assert!(!firsts.contains(&seed.rng(*s).next_u64()), "{s:?}");
        }
        assert!(!Phase::is_search_base(CONFIRM_PHASE.tester_base()));
    }

    /// The confirming runs do not depend on the exploration: the audit's confirming releases
    /// are those of a direct draw of the chosen mechanism on the confirming streams.
    #[test]
    fn confirming_runs_are_fresh() -> Result<()> {
        let config = small(Params::new().set("noise_multiplier", 2.5), 100, 3)?;
        let data = audit_data(&config);
        let (_, chosen) = explore(&config, &data)?;
        let (theta0, target) = realise(&config, &data, config.candidates[chosen])?;
        let m = FinalModelScore::new(config.trainer.clone(), data.clone(), theta0, target)?;
        let (p1, _) = draw(&m, 100, 3, CONFIRM_PHASE)?;
        let (e1, _) = draw(&m, 100, 3, exploration_phase(chosen as u64))?;
        assert_ne!(p1.values(), e1.values());
        let one = FinalModelConfig {
            candidates: vec![config.candidates[chosen]],
            ..config.clone()
        };
        let (t, _) = explore(&one, &data)?;
        assert!(t[0].mu_point.is_none());
        Ok(())
    }

    #[test]
    fn flags_parse_or_name_what_is_allowed() {
        assert_eq!(
            TargetKind::parse("dirac:2").ok(),
            Some(TargetKind::Dirac { a: 2.0 })
        );
        assert_eq!(TargetKind::parse("corner").ok(), Some(TargetKind::Corner));
        for bad in ["dirac:0", "dirac:x", "edge"] {
            let e = TargetKind::parse(bad)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains("allowed"), "{e}");
        }
        assert!(InitKind::parse("random").is_err());
        assert_eq!(InitKind::parse("saturated").ok(), Some(InitKind::Saturated));
    }

    /// The saturated and a = 4 Dirac targets reach the claim's full gradient C at θ₀; a = 1 at
    /// θ₀ = 0 only C/2 (the one-run black-box canaries' situation).
    #[test]
    fn saturation_at_the_start() -> Result<()> {
        let config = small(Params::new(), 100, 1)?;
        let data = audit_data(&config);
        let norm = |c: Candidate| -> Result<f64> {
            let (th, t) = realise(&config, &data, c)?;
            gradient_norm(&config.trainer, &t, &th)
        };
        let dirac = |init, a| Candidate {
            init,
            target: TargetKind::Dirac { a },
        };
        assert!((norm(dirac(InitKind::Zero, 1.0))? - 0.5).abs() < 1e-12);
        assert!(norm(dirac(InitKind::Zero, 4.0))? >= 1.0);
        assert!(norm(dirac(InitKind::Saturated, 1.0))? >= 0.999);
        assert!(
            norm(Candidate {
                init: InitKind::Pretrained,
                target: TargetKind::Corner
            })? >= 1.0
        );
        Ok(())
    }
}
