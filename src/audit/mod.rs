//! The runner: audits a mechanism's claim on a neighboring pair and produces an [`AuditReport`].
//!
//! # How β is spent
//! Each tester plans the divergences it bounds for the claim (one ε for pure/approximate claims,
//! a grid for profile claims); each is bounded in both directions, H(M(D) ‖ M(D')) and
//! H(M(D') ‖ M(D)). With k bounds in total, each is computed at failure probability β/k, so by
//! the union bound (Bonferroni) all k bounds hold simultaneously with probability ≥ 1 − β and the
//! probability of reporting a violation against a mechanism that keeps its claim is ≤ β. All bounds
//! of one audit share the same samples; the union bound needs no independence between them.
//!
//! A tester that selects on its own training split (the hockey-stick tester) takes one β slot
//! for its whole plan instead of one per divergence and direction. For a profile claim
//! (Gaussian DP, zCDP, Rényi, DP-SGD) it takes two: one bound whose ε is chosen on the training
//! split among the grid, and one at an ε fixed from the claim alone before any release is drawn
//! ([`PropertyTester::planned`]: where the claim's own mechanism with slightly less noise would
//! show most), which carries no selection noise in ε. Measured on the scaled-noise Gaussian
//! against its Gaussian-DP profile at 10⁵ releases per side, β = 0.05 (`audit bench power
//! --tester hockey-stick --repeats 200`): s = 0.9 caught in 195/200 audits with both (88/100
//! with the grid alone), s = 1 (the claim holds with equality) in 2/200.
//!
//! # The ε estimate
//! A confirming measurement (not an exploratory search trial) also runs the ε-estimate stage
//! ([`crate::testers::HockeyStickTester::estimate_epsilon`]): an event chosen on the training
//! split to make the lower bound on ε at δ large, bounded on the held-out releases. It takes
//! [`ESTIMATE_SHARE`] of β; the verdict's k bounds share the rest (β·(1 − share)/k each), so
//! the verdict and the estimate hold simultaneously with probability ≥ 1 − β. The reported
//! empirical ε is the larger of the estimate and the ε implied by the verdict's own events (both
//! hold on that same event of probability ≥ 1 − β).

pub mod bayesian;
pub mod final_model;
pub mod final_model_exec;
pub mod one_run;
pub mod one_run_exec;
pub mod sequential;
mod sequential_record;
pub use sequential_record::{LayeredSequential, LayeredSequentialLayer};

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mechanisms::math::readable;
use crate::mechanisms::{DatasetPair, Mechanism, PrivacyClaim, Samples};
use crate::rng::{Seed, Side, Stream, chunk_len, sample_parallel};
use crate::testers::pooled::{Pooled, Recorder};
use crate::testers::rows::Rows;
use crate::testers::{Divergence, HeldOut, HockeyStickTester, PropertyTester, allowed, violates};

// The result record's types, where the runners' callers have always found them.
pub use crate::record::{
    AuditReport, BetaSplit, BoundRecord, ConfirmationSummary, Direction, EmpiricalEpsilon,
    MechanismInfo, READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION, SampleFiles, SampleTestReport,
    SearchSummary, SkippedSummary, TrialSummary, Verdict, tightness_line,
};

/// Most releases per side an audit may request (memory: n × d × 8 bytes per side).
pub const MAX_SAMPLES_PER_SIDE: usize = 50_000_000;

/// Most values (releases × output dimension) per side.
pub const MAX_VALUES_PER_SIDE: usize = 200_000_000;

/// Settings of one audit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditConfig {
    /// The run's seed: every random choice derives from it.
    pub seed: u64,
    /// Releases drawn on each side of the pair for the confirming measurement.
    pub samples_per_side: usize,
    /// β: the probability, for a mechanism that keeps its claim, of reporting a violation.
    pub failure_probability: f64,
}

impl Default for AuditConfig {
    fn default() -> Self {
        Self {
            seed: 0,
            samples_per_side: 200_000,
            // 1e-3 rather than the customary 0.05: a violation reported against a correct
            // mechanism is the worst error this tool can make, and exact binomial bounds lose
            // little power between the two (the bound moves with log(1/β)).
            failure_probability: 1e-3,
        }
    }
}

impl AuditConfig {
    /// Checks the settings for a mechanism with output dimension `output_dim`.
    pub fn validate(&self, output_dim: usize) -> Result<()> {
        let n = self.samples_per_side;
        if n < 100 {
            return Err(Error::InvalidConfig(format!(
                "samples per side = {n}; allowed: 100 to {MAX_SAMPLES_PER_SIDE}"
            )));
        }
        if n > MAX_SAMPLES_PER_SIDE || n.saturating_mul(output_dim.max(1)) > MAX_VALUES_PER_SIDE {
            return Err(Error::InvalidConfig(format!(
                "samples per side = {n} with output dimension {output_dim} is too large; allowed: at most {MAX_SAMPLES_PER_SIDE} releases and {MAX_VALUES_PER_SIDE} values per side"
            )));
        }
        let b = self.failure_probability;
        if !(b > 0.0 && b < 1.0) {
            return Err(Error::InvalidConfig(format!(
                "failure probability β = {b}; allowed: 0 < β < 1"
            )));
        }
        Ok(())
    }
}

/// Share of β spent by the ε-estimate stage of a confirming measurement (see the module docs).
pub const ESTIMATE_SHARE: f64 = 0.1;

/// Seed tag of the ε-estimate stage's own stream (`Stream::Other { tag, index: 0 }` of the run's
/// seed): the Poisson numbers of held-out releases its conditional test uses (ASCII "EST").
pub const ESTIMATE_TAG: u64 = 0x45_5354;

/// δ of the ε estimate for claims that state no single δ (Rényi, zCDP, Gaussian DP, DP-SGD
/// profiles): the customary 10⁻⁵.
pub const PROFILE_ESTIMATE_DELTA: f64 = 1e-5;

/// The δ at which the ε estimate is made: the claim's (0 for pure DP), or
/// [`PROFILE_ESTIMATE_DELTA`] for profile-like claims; `None` for Bayesian DP (a promise over
/// x' ~ μ, not about one pair).
pub fn estimate_delta(claim: &PrivacyClaim) -> Option<f64> {
    match *claim {
        PrivacyClaim::Pure { .. } => Some(0.0),
        PrivacyClaim::Approximate { delta, .. } => Some(delta),
        PrivacyClaim::Bayesian { .. } => None,
        _ => Some(PROFILE_ESTIMATE_DELTA),
    }
}

/// The smallest ε the claim states at δ: its own ε for pure and approximate claims (at their δ),
/// else the smallest ε with [`PrivacyClaim::delta_at`] ≤ δ (bisection to 10⁻⁶, rounded up).
pub fn claimed_epsilon_at(claim: &PrivacyClaim, delta: f64) -> Option<f64> {
    match *claim {
        PrivacyClaim::Pure { epsilon } if delta >= 0.0 => return Some(epsilon),
        PrivacyClaim::Approximate { epsilon, delta: d } if delta >= d => return Some(epsilon),
        PrivacyClaim::Bayesian { .. } => return None,
        _ => {}
    }
    let ok = |e: f64| claim.delta_at(e).is_some_and(|d| d <= delta);
    let mut hi = 1.0;
    while !ok(hi) {
        hi *= 2.0;
        if hi > 1e4 {
            return None;
        }
    }
    let mut lo = 0.0;
    if ok(lo) {
        return Some(0.0);
    }
    while hi - lo > 1e-6 {
        let mid = 0.5 * (lo + hi);
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Audits `claim` for `mechanism` on `pair` with `testers`.
///
/// Draws `samples_per_side` fresh releases on each side from the confirm streams of the seed,
/// computes every planned bound in both directions at β/k each, and decides.
pub fn audit_pair(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    pair: &DatasetPair,
    testers: &[Box<dyn PropertyTester>],
    config: &AuditConfig,
) -> Result<AuditReport> {
    audit_pair_in(mechanism, claim, pair, testers, config, Phase::Confirm(0))
}

/// Which streams an audit draws from: the confirming measurement of ranked pair `k`, or the
/// exploratory search trial `t`. Different phases and indices never share samples or tester
/// randomness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Confirmation of the k-th candidate (0 for a single audit).
    Confirm(u64),
    /// Exploratory search trial t (no statistical claim is made from it).
    Search(u64),
}

impl Phase {
    /// The release stream of `side` in this phase.
    pub fn stream_of(self, side: Side) -> Stream {
        self.stream(side)
    }

    fn stream(self, side: Side) -> Stream {
        match self {
            Phase::Confirm(trial) => Stream::Confirm {
                trial,
                side,
                chunk: 0,
            },
            Phase::Search(trial) => Stream::Search {
                trial,
                side,
                chunk: 0,
            },
        }
    }

    /// Whether `tester_base` is an exploratory search trial's (see [`Phase::tester_base`]).
    pub fn is_search_base(tester_base: u64) -> bool {
        tester_base >> 63 == 1
    }

    /// Offset of this phase's tester streams (bound indices stay below 2^19 per audit; a
    /// layered run adds `layer << 19` so that its layers never share tester randomness).
    pub fn tester_base(self) -> u64 {
        match self {
            Phase::Confirm(t) => t << 20,
            Phase::Search(t) => (1 << 63) | (t << 20),
        }
    }
}

/// [`audit_pair`] drawing from the streams of `phase`.
pub fn audit_pair_in(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    pair: &DatasetPair,
    testers: &[Box<dyn PropertyTester>],
    config: &AuditConfig,
    phase: Phase,
) -> Result<AuditReport> {
    let start = Instant::now();
    config.validate(mechanism.output_dim())?;
    let claim = claim.validated()?;
    if pair.relation() != mechanism.neighboring() {
        return Err(Error::InvalidConfig(format!(
            "the pair is {} neighbors but {} states its claim for {} neighbors",
            pair.relation(),
            mechanism.id(),
            mechanism.neighboring()
        )));
    }
    let domain = mechanism.domain();
    domain.check(pair.first())?;
    domain.check(pair.second())?;
    if testers.is_empty() {
        return Err(Error::InvalidConfig("no tester selected".into()));
    }

    let n = config.samples_per_side;
    let seed = Seed(config.seed);
    // Plan before sampling so an untestable claim costs nothing.
    plan_bounds(&claim, testers, n)?;
    let p = sample_parallel(mechanism, pair.first(), n, seed, phase.stream(Side::First))?;
    let q = sample_parallel(
        mechanism,
        pair.second(),
        n,
        seed,
        phase.stream(Side::Second),
    )?;
    let mechanism_calls = 2 * n.div_ceil(chunk_len(mechanism)) as u64;
    let mut r = audit_drawn(
        mechanism,
        &claim,
        pair,
        (&p, &q),
        testers,
        config,
        phase.tester_base(),
    )?;
    r.mechanism_calls = mechanism_calls;
    r.wall_time_seconds = Some(start.elapsed().as_secs_f64());
    Ok(r)
}

/// The measurement of [`audit_pair_in`] on releases already drawn (`p` on the pair's first
/// dataset, `q` on its second; i.i.d. within each side, independent across sides, and
/// independent of how the pair was chosen), with the tester streams from `tester_base` on.
/// `mechanism` names what was audited; `mechanism_calls` is left 0 for the caller to fill.
pub fn audit_drawn(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    pair: &DatasetPair,
    (p, q): (&Samples, &Samples),
    testers: &[Box<dyn PropertyTester>],
    config: &AuditConfig,
    tester_base: u64,
) -> Result<AuditReport> {
    let start = Instant::now();
    let claim = claim.validated()?;
    let n = p.n().min(q.n());
    let plan = plan_bounds(&claim, testers, n)?;
    let Measured {
        beta,
        bounds,
        verdict,
        mut empirical_epsilon,
    } = measure(
        Data::Memory(p, q),
        &claim,
        testers,
        &plan,
        config,
        tester_base,
    )?;
    if let Some(e) = empirical_epsilon.as_mut() {
        // Only for the mechanism's own claim (not one given in its place).
        if mechanism.claim() == claim {
            e.accountant = mechanism.accountant_range().filter(|a| a.delta == e.delta);
        }
    }
    Ok(AuditReport {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        mechanism: MechanismInfo {
            id: mechanism.id().to_string(),
            claim,
            claim_source: mechanism.claim_source(),
            neighboring: mechanism.neighboring(),
            catalogue_status: None,
            setting: mechanism.setting(),
            privacy_unit: mechanism.privacy_unit(),
            scope: mechanism.dp_fy_scope(),
        },
        pair: Some(pair.clone()),
        sample_files: None,
        testers: testers.iter().map(|t| t.name().to_string()).collect(),
        skipped_testers: Vec::new(),
        seed: config.seed,
        samples_per_side: n,
        mechanism_calls: 0,
        beta,
        bounds,
        verdict,
        empirical_epsilon,
        output_transform: None,
        wall_time_seconds: Some(start.elapsed().as_secs_f64()),
        reproduce: None,
        search: None,
        bayesian: None,
        release_dim: None,
        layers: None,
        effort: None,
    })
}

/// A planned bound: tester index, divergence, what the claim allows, and whether it is the
/// tester's divergence fixed from the claim alone ([`PropertyTester::planned`]), bounded in a β
/// slot of its own beside the tester's selection over the others.
type Plan = Vec<(usize, Divergence, f64, bool)>;

/// Every (tester, divergence) the claim bounds, with its allowance. Errors when none.
fn plan_bounds(
    claim: &PrivacyClaim,
    testers: &[Box<dyn PropertyTester>],
    n: usize,
) -> Result<Plan> {
    if testers.is_empty() {
        return Err(Error::InvalidConfig("no tester selected".into()));
    }
    let mut plan = Vec::new();
    for (ti, t) in testers.iter().enumerate() {
        for d in t.plan(claim, n)? {
            if let Some(a) = allowed(claim, &d) {
                plan.push((ti, d, a, false));
            }
        }
        if let Some(d) = t
            .planned(claim, n)
            .filter(|_| t.selects_on_training_split())
            && let Some(a) = allowed(claim, &d)
        {
            plan.push((ti, d, a, true));
        }
    }
    if plan.is_empty() {
        return Err(Error::ClaimNotTestable {
            tester: testers
                .iter()
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(", "),
            claim: claim.to_string(),
            reason: "the claim bounds none of the divergences these testers measure".into(),
        });
    }
    Ok(plan)
}

/// The releases [`measure`] reads: both sides in memory, or a split whose held-out rows are
/// read only through [`HeldOut`] (streamed from shards).
#[derive(Clone, Copy)]
enum Data<'a> {
    Memory(&'a Samples, &'a Samples),
    Split {
        train: (Rows<'a>, Rows<'a>),
        held: &'a dyn HeldOut,
    },
}

/// What [`measure`] computes from two samples.
struct Measured {
    beta: BetaSplit,
    bounds: Vec<BoundRecord>,
    verdict: Verdict,
    empirical_epsilon: Option<EmpiricalEpsilon>,
}

/// Every planned bound in both directions at β/k each (union bound), the verdict and the
/// empirical ε. `p` = releases on the first dataset, `q` on the second.
fn measure(
    data: Data<'_>,
    claim: &PrivacyClaim,
    testers: &[Box<dyn PropertyTester>],
    plan: &Plan,
    config: &AuditConfig,
    tester_base: u64,
) -> Result<Measured> {
    let seed = Seed(config.seed);
    let groups = bound_groups(plan);
    // β slots: a tester that chooses its bound on its own training split (direction, and ε for
    // profile claims) takes one slot; any other tester takes one per divergence and direction.
    let slots_of = |ti: usize, n: usize| {
        if testers[ti].selects_on_training_split() {
            1
        } else {
            2 * n
        }
    };
    let k: usize = groups.iter().map(|(ti, _, c)| slots_of(*ti, c.len())).sum();
    // The ε-estimate stage of a confirming measurement takes its share of β first.
    let estimate_at = estimate_delta(claim).filter(|_| !Phase::is_search_base(tester_base));
    let estimate_beta = estimate_at.map(|_| config.failure_probability * ESTIMATE_SHARE);
    let verdict_beta = config.failure_probability - estimate_beta.unwrap_or(0.0);
    let per_bound = verdict_beta / k as f64;
    // The ε estimate's held-out counts are named ahead, by a run of its stage that counts
    // nothing (its events are chosen on the training split), when the verdict first counts, and
    // counted in the verdict's pass over the held-out rows (see `crate::testers::pooled`).
    let pooled;
    let data = match (data, estimate_at, estimate_beta) {
        (Data::Split { train, held }, Some(delta), Some(b)) => {
            pooled = Pooled::new(
                held,
                Box::new(move || {
                    let recorder = Recorder::new(held);
                    let named = Data::Split {
                        train,
                        held: &recorder,
                    };
                    // Its answer is discarded: only the queries are kept.
                    let _ = estimate_stage(named, claim, delta, b, config);
                    recorder.asked()
                }),
            );
            Data::Split {
                train,
                held: &pooled,
            }
        }
        (data, _, _) => data,
    };
    let mut bounds = Vec::with_capacity(k);
    let mut slot = 0u64;
    let mut next_rng = || {
        let rng = seed.rng(Stream::Tester {
            bound: tester_base + slot,
        });
        slot += 1;
        rng
    };
    let mut rule_parts = Vec::new();
    for (ti, fixed, cands) in &groups {
        let tester = &*testers[*ti];
        if tester.selects_on_training_split() {
            let b = selected_bound(tester, data, cands, per_bound, &mut next_rng())?;
            rule_parts.push(selected_rule(tester, *fixed, b.divergence, cands.len()));
            bounds.push(b);
            continue;
        }
        let Data::Memory(p, q) = data else {
            return Err(Error::InvalidConfig(format!(
                "the {} tester reads its samples in memory and cannot stream shards; allowed with streaming: --tester hockey-stick (or read the shards in memory with --in-memory)",
                tester.name()
            )));
        };
        for (divergence, allowed) in cands {
            for (direction, a, b) in [
                (Direction::FirstVsSecond, p, q),
                (Direction::SecondVsFirst, q, p),
            ] {
                let m = tester.lower_bound(a, b, *divergence, per_bound, &mut next_rng())?;
                bounds.push(bound_record(
                    tester,
                    *divergence,
                    direction,
                    m,
                    *allowed,
                    per_bound,
                ));
            }
        }
        rule_parts.push(format!(
            "{}: {} bounds ({} divergence(s) × 2 directions)",
            tester.name(),
            2 * cands.len(),
            cands.len()
        ));
    }
    let from_bounds = epsilon_from_bounds(claim, &bounds, config, estimate_beta);
    let estimated = match (estimate_at, estimate_beta) {
        (Some(delta), Some(b)) => crate::stages::time("the ε estimate", || {
            estimate_stage(data, claim, delta, b, config)
        })?,
        _ => None,
    };
    let empirical_epsilon = match (estimated, from_bounds) {
        (Some(e), Some(v)) if v.lower_bound > e.lower_bound && v.delta == e.delta => Some(v),
        (Some(e), _) => Some(e),
        (None, v) => v,
    };
    let verdict = verdict_of(&bounds, empirical_epsilon.as_ref());
    let rule = beta_rule(claim, config, k, per_bound, estimate_beta, &rule_parts);
    Ok(Measured {
        beta: BetaSplit {
            total: config.failure_probability,
            bounds: k,
            per_bound,
            rule,
        },
        bounds,
        verdict,
        empirical_epsilon,
    })
}

/// The verdict of one measurement: a violation when a bound exceeds what the claim allows or
/// when the empirical ε does. The empirical ε is a lower confidence bound too, simultaneous with
/// the bounds (its share of β is in the union bound): above the ε the claim states at its δ, it
/// rejects the claim as a bound above what the claim allows does, so that one answer never says
/// both "no violation found" and "the claim is violated".
fn verdict_of(bounds: &[BoundRecord], empirical_epsilon: Option<&EmpiricalEpsilon>) -> Verdict {
    if bounds.iter().any(|b| b.violation)
        || empirical_epsilon.is_some_and(EmpiricalEpsilon::exceeds_claim)
    {
        Verdict::Violation
    } else {
        Verdict::NoViolation
    }
}

/// One β group of planned bounds: (tester, planned from the claim alone, its (divergence,
/// allowed) candidates).
type BoundGroup = (usize, bool, Vec<(Divergence, f64)>);

/// The planned bounds grouped by tester; a divergence planned from the claim alone is a group
/// of its own.
fn bound_groups(plan: &Plan) -> Vec<BoundGroup> {
    let mut groups: Vec<BoundGroup> = Vec::new();
    for (ti, d, a, fixed) in plan {
        match groups.iter_mut().find(|g| g.0 == *ti && g.1 == *fixed) {
            Some(g) => g.2.push((*d, *a)),
            None => groups.push((*ti, *fixed, vec![(*d, *a)])),
        }
    }
    groups
}

/// The one bound of a tester that chooses it on its own training split (the direction or both
/// summed, and the candidate), at failure probability `per_bound`.
fn selected_bound(
    tester: &dyn PropertyTester,
    data: Data<'_>,
    cands: &[(Divergence, f64)],
    per_bound: f64,
    rng: &mut crate::rng::AuditRng,
) -> Result<BoundRecord> {
    let sel = match data {
        Data::Memory(p, q) => tester.select_and_bound(p, q, cands, per_bound, rng)?,
        Data::Split { train, held } => {
            tester.select_and_bound_split(train.0, train.1, held, cands, per_bound, rng)?
        }
    }
    .ok_or_else(|| {
        Error::InvalidConfig(format!(
            "tester {} announced a selection but made none",
            tester.name()
        ))
    })?;
    let (divergence, allowed) = cands[sel.index];
    let direction = if sel.both {
        Direction::Larger
    } else if sel.reversed {
        Direction::SecondVsFirst
    } else {
        Direction::FirstVsSecond
    };
    Ok(bound_record(
        tester,
        divergence,
        direction,
        sel.measurement,
        allowed,
        per_bound,
    ))
}

/// The record of one bound `m` of `tester` on `divergence` in `direction`, against `allowed`.
fn bound_record(
    tester: &dyn PropertyTester,
    divergence: Divergence,
    direction: Direction,
    m: crate::testers::Measurement,
    allowed: f64,
    per_bound: f64,
) -> BoundRecord {
    BoundRecord {
        tester: tester.name().to_string(),
        divergence,
        direction,
        value: m.value,
        allowed,
        violation: violates(m.value, allowed),
        failure_probability: per_bound,
        point_estimate: m.point_estimate,
        inequality: m.inequality,
        event: m.event,
    }
}

/// The β rule's part for a tester that chose its one bound on its training split among
/// `candidates` (`fixed`: its ε planned from the claim alone, on `divergence`).
fn selected_rule(
    tester: &dyn PropertyTester,
    fixed: bool,
    divergence: Divergence,
    candidates: usize,
) -> String {
    if fixed {
        format!(
            "{}: 1 bound on {} (its ε planned from the claim before any release was drawn: where the claim's own mechanism with its noise divided by {} would show most; the direction or both summed chosen on its training split)",
            tester.name(),
            divergence,
            crate::testers::PLANNING_NOISE_REDUCTION
        )
    } else {
        format!(
            "{}: 1 bound (one direction or both summed{}, chosen on its training split among {} ε value(s))",
            tester.name(),
            if candidates > 1 { ", and ε" } else { "" },
            candidates
        )
    }
}

/// The largest ε the verdict's own events imply at the claim's δ (pure and approximate claims).
/// Every bound and the ε estimate hold simultaneously with probability ≥ 1 − β, so it is a
/// lower confidence bound at level 1 − β, simultaneous with the verdict.
fn epsilon_from_bounds(
    claim: &PrivacyClaim,
    bounds: &[BoundRecord],
    config: &AuditConfig,
    estimate_beta: Option<f64>,
) -> Option<EmpiricalEpsilon> {
    let claim_delta = match *claim {
        PrivacyClaim::Pure { .. } => Some(0.0),
        PrivacyClaim::Approximate { delta, .. } => Some(delta),
        _ => None,
    };
    claim_delta.and_then(|delta| {
        bounds
            .iter()
            .filter_map(|b| b.event.as_ref()?.epsilon_lower(delta))
            .max_by(f64::total_cmp)
            .map(|lower_bound| EmpiricalEpsilon {
                delta,
                lower_bound,
                confidence: 1.0 - config.failure_probability,
                source: Some("the verdict's own event (chosen to test the claim)".into()),
                event: None,
                evidence: None,
                estimate_beta,
                claimed_epsilon: claimed_epsilon_at(claim, delta),
                accountant: None,
                mu_lower: None,
            })
    })
}

/// How β was split, in words: the ε estimate's share (when it runs), then the `k` bounds at
/// `per_bound` each, each tester's part in `rule_parts`.
fn beta_rule(
    claim: &PrivacyClaim,
    config: &AuditConfig,
    k: usize,
    per_bound: f64,
    estimate_beta: Option<f64>,
    rule_parts: &[String],
) -> String {
    let verdict_beta = config.failure_probability - estimate_beta.unwrap_or(0.0);
    match estimate_beta {
        Some(eb) => format!(
            "union bound: β = {} = {} for the ε estimate{} + {} split evenly over {k} bound(s) [{}], {} each",
            readable(config.failure_probability),
            readable(eb),
            if matches!(claim, PrivacyClaim::GaussianDp { .. }) {
                " (half of it for the μ estimate of the Gaussian-DP claim)"
            } else {
                ""
            },
            readable(verdict_beta),
            rule_parts.join("; "),
            readable(per_bound)
        ),
        None => format!(
            "union bound: β = {} split evenly over {k} bound(s) [{}], β/{k} = {} each",
            readable(config.failure_probability),
            rule_parts.join("; "),
            readable(per_bound)
        ),
    }
}

/// The ε-estimate stage on `data` at δ = `delta` with failure probability `beta` (see the
/// module docs). `None` when no event refutes any ε ≥ 0 or none could be formed.
fn estimate_stage(
    data: Data<'_>,
    claim: &PrivacyClaim,
    delta: f64,
    beta: f64,
    config: &AuditConfig,
) -> Result<Option<EmpiricalEpsilon>> {
    let tester = HockeyStickTester::default();
    // A Gaussian-DP claim on releases in memory also gets its μ certified: half of the
    // estimate's share of β each (union bound).
    let (beta, mu_lower) = match (claim, data) {
        (PrivacyClaim::GaussianDp { .. }, Data::Memory(p, q)) => (
            beta / 2.0,
            tester
                .estimate_mu_in_memory(p, q, beta / 2.0)?
                .and_then(|m| m.lower_bound),
        ),
        (PrivacyClaim::GaussianDp { .. }, Data::Split { train, held }) => (
            beta / 2.0,
            tester
                .estimate_mu(train.0, train.0.n(), train.1, train.1.n(), held, beta / 2.0)?
                .and_then(|m| m.lower_bound),
        ),
        _ => (beta, None),
    };
    let mut rng = Seed(config.seed).rng(Stream::Other {
        tag: ESTIMATE_TAG,
        index: 0,
    });
    let found = match data {
        Data::Memory(p, q) => tester.estimate_epsilon_in_memory(p, q, delta, beta, &mut rng)?,
        Data::Split { train, held } => tester.estimate_epsilon(
            train.0,
            train.0.n(),
            train.1,
            train.1.n(),
            held,
            delta,
            beta,
            &mut rng,
        )?,
    };
    let Some(found) = found else {
        return Ok(None);
    };
    let Some(lower_bound) = found.lower_bound else {
        return Ok(None);
    };
    let e = &found.event;
    let (a, b) = if found.reversed {
        ("D′", "D")
    } else {
        ("D", "D′")
    };
    let evidence = match &e.contrast {
        Some(c) if c.events == 2 => format!(
            "of {} + {} held-out releases (a Poisson number per side), {} fell in the event favouring the dataset they were drawn on and {} in the other",
            e.n_p, e.n_q, c.u, c.w
        ),
        // One pooled event: U and W count the favoured side A and the other B, while n_p and
        // n_q are the Poisson numbers of M(D) and M(D') releases.
        Some(_) if found.reversed => format!(
            "{} of {} held-out releases on {a} fell in the event and {} of {} on {b}",
            e.count_p, e.n_q, e.count_q, e.n_p
        ),
        _ => format!(
            "{} of {} held-out releases on {a} fell in the event and {} of {} on {b}",
            e.count_p, e.n_p, e.count_q, e.n_q
        ),
    };
    Ok(Some(EmpiricalEpsilon {
        delta,
        lower_bound,
        confidence: 1.0 - config.failure_probability,
        source: Some(format!(
            "the ε-estimate stage (β share {}): {}",
            readable(beta),
            found.inequality
        )),
        event: Some(e.description.clone()),
        evidence: Some(evidence),
        estimate_beta: Some(beta),
        claimed_epsilon: claimed_epsilon_at(claim, delta),
        accountant: None,
        mu_lower,
    }))
}

/// Tests `claim` on samples drawn elsewhere (e.g. sharded across a batch engine): `a` are
/// releases on one dataset, `b` on a neighboring one. The samples must be i.i.d. within each
/// side and independent across sides; nothing else is assumed. `config.samples_per_side` is
/// ignored (the sample sizes are what they are).
pub fn audit_samples(
    a: &Samples,
    b: &Samples,
    sources: (&str, &str),
    claim: &PrivacyClaim,
    testers: &[Box<dyn PropertyTester>],
    config: &AuditConfig,
) -> Result<SampleTestReport> {
    audit_data(Data::Memory(a, b), sources, claim, testers, config)
}

/// [`audit_samples`] on releases that are not all in memory: `train` are the first rows of
/// each side (the training split), `held` the rest, read in one pass by testers that can
/// ([`PropertyTester::select_and_bound_split`]; the others refuse). The plan, the β split, the
/// seeds and the bounds are those of [`audit_samples`] on the same rows when `train` holds
/// the rows its testers would train on.
pub fn audit_split(
    train: (Rows<'_>, Rows<'_>),
    held: &dyn HeldOut,
    sources: (&str, &str),
    claim: &PrivacyClaim,
    testers: &[Box<dyn PropertyTester>],
    config: &AuditConfig,
) -> Result<SampleTestReport> {
    audit_data(Data::Split { train, held }, sources, claim, testers, config)
}

/// The body of [`audit_samples`] and [`audit_split`].
fn audit_data(
    data: Data<'_>,
    sources: (&str, &str),
    claim: &PrivacyClaim,
    testers: &[Box<dyn PropertyTester>],
    config: &AuditConfig,
) -> Result<SampleTestReport> {
    let claim = claim.validated()?;
    if !(config.failure_probability > 0.0 && config.failure_probability < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "failure probability β = {}; allowed: 0 < β < 1",
            config.failure_probability
        )));
    }
    let ((a, b), n) = match data {
        Data::Memory(a, b) => ((Rows::from(a), Rows::from(b)), (a.n(), b.n())),
        Data::Split { train, held } => (
            train,
            (
                train.0.n() + held.rows(false),
                train.1.n() + held.rows(true),
            ),
        ),
    };
    if a.dim() != b.dim() {
        return Err(Error::InvalidSamples(format!(
            "{} has releases of dimension {} but {} has dimension {}",
            sources.0,
            a.dim(),
            sources.1,
            b.dim()
        )));
    }
    let plan = plan_bounds(&claim, testers, n.0.min(n.1))?;
    let m = measure(data, &claim, testers, &plan, config, 0)?;
    Ok(SampleTestReport {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        claim,
        source_a: sources.0.to_string(),
        source_b: sources.1.to_string(),
        testers: testers.iter().map(|t| t.name().to_string()).collect(),
        skipped_testers: Vec::new(),
        seed: config.seed,
        samples_a: n.0,
        samples_b: n.1,
        beta: m.beta,
        bounds: m.bounds,
        verdict: m.verdict,
        empirical_epsilon: m.empirical_epsilon,
        output_transform: None,
    })
}

#[cfg(test)]
mod verdict_tests {
    use super::*;

    fn epsilon(lower_bound: f64, claimed: Option<f64>) -> EmpiricalEpsilon {
        EmpiricalEpsilon {
            delta: 0.0,
            lower_bound,
            confidence: 0.999,
            source: None,
            event: None,
            evidence: None,
            estimate_beta: None,
            claimed_epsilon: claimed,
            accountant: None,
            mu_lower: None,
        }
    }

    /// Issue 50: a block said "no violation found" and then "empirical ε ≥ 2.85 … the claim is
    /// violated". An empirical ε above the claimed ε is a violation; at or below it, or with no
    /// ε stated at its δ, the bounds decide.
    #[test]
    fn an_empirical_epsilon_above_the_claim_is_a_violation() {
        let e = |l, c| Some(epsilon(l, c));
        assert_eq!(
            verdict_of(&[], e(2.85, Some(1.0)).as_ref()),
            Verdict::Violation
        );
        assert_eq!(
            verdict_of(&[], e(1.0, Some(1.0)).as_ref()),
            Verdict::NoViolation
        );
        assert_eq!(
            verdict_of(&[], e(0.9, Some(1.0)).as_ref()),
            Verdict::NoViolation
        );
        assert_eq!(verdict_of(&[], e(5.0, None).as_ref()), Verdict::NoViolation);
        assert_eq!(
            verdict_of(&[], e(5.0, Some(f64::INFINITY)).as_ref()),
            Verdict::NoViolation
        );
        assert_eq!(verdict_of(&[], None), Verdict::NoViolation);
    }
}
