//! The layered search: one search over neighboring pairs that answers both questions of
//! [`crate::record::layers`] from the same releases.
//!
//! Every trial draws its releases once (the search streams of [`search_and_confirm`]) and scores
//! the pair separately for each layer, through that layer's view of a release (values for the
//! mechanism layer, representation features for the floating-point layer). Each layer keeps its
//! own ranking of pairs and its own confirmations, exactly as [`search_and_confirm`] does for
//! one view: a pair whose exploratory bound exceeds the allowance is confirmed at once, the best
//! pair after [`CHECKPOINT_TRIALS`] trials, the remaining slots at the end. A layer that found a
//! violation, or has used its slots, is closed; the search goes on while any layer is open, so a
//! floating-point violation found at the first trial never ends the search for the algorithm's
//! bugs. The finder is steered by the mechanism layer's scores (by the floating-point layer's
//! when it runs alone).
//!
//! # β
//! β of the run is split evenly over the layers that run (union bound), and each layer's share
//! evenly over its confirm slots. Whether the floating-point layer runs is decided on the first
//! scored trial's releases (search streams, never seen by a confirmation): when every value is an
//! integer the representation is exact and the layer is skipped, and the mechanism layer gets
//! all of β. Confirmations draw fresh releases from the confirm streams, one set per distinct
//! pair (a pair confirmed by both layers is measured on the same releases, each layer at its own
//! share; the union bound needs no independence); each layer's testers use their own streams.
//! So the probability that any confirmation of any layer reports a violation against a program
//! that keeps its claim is at most β.
//!
//! # Wide outputs
//! The floating-point view keeps 5 features per output coordinate. For outputs of more than
//! [`FLOAT_COORDS`] coordinates it keeps the [`FLOAT_COORDS`] coordinates whose representation
//! differs most between the two sides on the trial's own (exploratory) releases (largest total
//! variation distance of any one feature); a confirmation of that pair uses the same coordinates,
//! chosen without its releases. The mechanism view keeps every coordinate and three norms.

pub use crate::record::effort::{ConfirmEffort, Fidelity, SearchEffort, StopReason};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{
    CHECKPOINT_TRIALS, DatasetFinder, MAX_LEADING_REFUSALS, SEARCH_BETA, SearchConfig,
    SearchProgress, SearchReport, SkippedTrial, Trial,
};
use crate::audit::{AuditConfig, AuditReport, Phase, Verdict, audit_drawn};
use crate::error::{Error, Result};
use crate::mechanisms::math::readable;
use crate::mechanisms::{DatasetPair, Mechanism, PrivacyClaim, Samples};
use crate::record::layers::{LayerKind, LayerVerdict, in_words, integer_valued};
use crate::rng::{Seed, chunk_len, sample_pair_parallel};
use crate::testers::{PropertyTester, Transform};

/// Most output coordinates the floating-point view keeps (5 features each).
pub const FLOAT_COORDS: usize = 16;

/// One layer's part of a layered run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerSearch {
    /// The layer's answer.
    pub verdict: LayerVerdict,
    /// Its trials (its own scores), confirmations and β rule; absent when it was skipped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchReport>,
}

/// A layered search run: both layers' answers and the run's plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayeredReport {
    /// What this object is: `layered-search`.
    pub kind: String,
    /// Version of this layout (1: the first layered layout; its confirmations are
    /// [`AuditReport`]s of [`crate::audit::SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// Finder used.
    pub finder: String,
    /// The plan the run was made to (absent when no time budget was set); left out of the
    /// deterministic `--json` output, since it holds measured speeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<RunPlan>,
    /// The layers, mechanism first.
    pub layers: Vec<LayerSearch>,
    /// How β was split over the layers and their confirm slots.
    pub beta_rule: String,
    /// Violation if any layer that ran found one.
    pub verdict: Verdict,
    /// Pairs scored.
    pub trials_scored: usize,
    /// Proposed pairs the program refused (failure status, time-out, non-finite output).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedTrial>,
    /// Mechanism calls in both phases.
    pub mechanism_calls: u64,
    /// Releases drawn in both phases, both sides.
    pub samples_drawn: u64,
    /// How hard the search looked and why it stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<SearchEffort>,
    /// The cost model at the end of the run (measured speeds: left out of the deterministic
    /// `--json` output, like the plan).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<super::cost::CostModel>,
}

impl LayeredReport {
    /// The layers' answers.
    pub fn verdicts(&self) -> Vec<LayerVerdict> {
        self.layers.iter().map(|l| l.verdict.clone()).collect()
    }

    /// The confirmation a page shows: the mechanism layer's violating one, else the
    /// floating-point layer's violating one, else the mechanism layer's last, else any last.
    pub fn deciding(&self) -> Option<&AuditReport> {
        let all: Vec<&AuditReport> = self
            .layers
            .iter()
            .flat_map(|l| l.search.iter().flat_map(|s| s.confirmations.iter()))
            .collect();
        all.iter()
            .find(|c| c.verdict == Verdict::Violation)
            .copied()
            .or_else(|| {
                self.layers
                    .iter()
                    .find_map(|l| l.search.as_ref()?.confirmations.last())
            })
    }
}

/// How long each part of a run is expected to take at the prices of the cost model
/// ([`super::cost`]) measured on the probe, and the sizes chosen to fit the budget. The search
/// is paced by the same model ([`search_and_confirm_paced`]), so it runs about the trials
/// planned unless the program turns out slower than the probe measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    /// Seconds per program call (start-up), measured.
    pub seconds_per_call: f64,
    /// Seconds per release beyond the start-up, measured.
    pub seconds_per_release: f64,
    /// Programs run at once (`--jobs`, by default the cores).
    #[serde(default)]
    pub jobs: usize,
    /// Most releases per program call.
    #[serde(default)]
    pub batch: usize,
    /// Seconds the speed probe took (part of the budget).
    #[serde(default)]
    pub probe_seconds: f64,
    /// Releases per side of each exploratory trial.
    pub search_samples: usize,
    /// Trials the search is expected to score (it stops by the clock).
    pub trials: usize,
    /// Trials scored at once when the finder allows it.
    #[serde(default)]
    pub trials_at_once: usize,
    /// Confirm slots per layer.
    pub confirm_per_layer: usize,
    /// Releases per side of each confirmation.
    pub samples_per_side: usize,
    /// Layers planned for.
    pub layers: usize,
    /// Estimated seconds of the search.
    pub search_seconds: f64,
    /// Estimated seconds of the confirmations (every slot used, each on a pair of its own).
    pub confirm_seconds: f64,
    /// The time budget.
    pub budget_seconds: f64,
    /// Why the run will exceed the budget, when it will.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_budget: Option<String>,
    /// The factor the plan's prices carry over the median calls (the slow calls' price).
    #[serde(default = "one_f64")]
    pub price_factor: f64,
    /// The machine's load average and cores when the prices were measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<(f64, usize)>,
}

fn one_f64() -> f64 {
    1.0
}

/// Smallest confirmation the planner makes, releases per side: below it an audit can show only
/// a violation of a claim exceeded many times over, so a slower program gets this and a plan
/// that says it exceeds the budget (the run then confirms what fits the time left).
pub const MIN_PLANNED_SAMPLES: usize = 1_000;
/// Smallest exploratory trial the planner makes, releases per side: a screening score, enough
/// to rank a pair whose two sides differ grossly (the bugs structured datasets expose).
pub const MIN_PLANNED_SEARCH_SAMPLES: usize = 100;
/// Share of the budget the planner gives the confirmations at most (the rest is the search).
const CONFIRM_SHARE: f64 = 0.6;
/// Trials the planner keeps room for in the search before it shrinks the exploratory sample.
const MIN_PLANNED_TRIALS: usize = 30;
/// Pairs the search scores at least when the program allows it (at the smallest trial size):
/// the confirmations give up time for them, down to 20 % of the time left.
const MIN_SEARCH_PAIRS: usize = 10;
/// Share of the budget kept for writing the answer and the report's figures.
const RECORD_SHARE: f64 = 0.03;
/// The exploratory sizes the planner chooses among (releases per side), largest first.
const SEARCH_LADDER: [usize; 6] = [5_000, 2_500, 1_000, 500, 250, 100];

impl RunPlan {
    /// Sizes that fit `budget` seconds (the whole budget; `probe_seconds` of it already spent)
    /// for `layers` layers at the prices of `cost`. `samples`, `search_samples`, `confirm`: the
    /// user's values when given (kept as they are), else the planner's choice under the
    /// defaults `defaults` (releases per side of a confirmation, of a trial, confirm slots).
    #[allow(clippy::too_many_arguments)]
    pub fn fit(
        cost: &super::cost::CostModel,
        budget: f64,
        probe_seconds: f64,
        layers: usize,
        samples: Option<usize>,
        search_samples: Option<usize>,
        confirm: Option<usize>,
        defaults: (usize, usize, usize),
    ) -> RunPlan {
        let mut plan = RunPlan {
            seconds_per_call: cost.seconds_per_call,
            seconds_per_release: cost.seconds_per_release,
            jobs: cost.jobs,
            batch: cost.batch,
            probe_seconds,
            search_samples: search_samples.unwrap_or(defaults.1),
            trials: 0,
            trials_at_once: 1,
            confirm_per_layer: confirm.unwrap_or(defaults.2),
            samples_per_side: samples.unwrap_or(defaults.0),
            layers: layers.max(1),
            search_seconds: 0.0,
            confirm_seconds: 0.0,
            budget_seconds: budget,
            over_budget: None,
            price_factor: cost.price_factor,
            load: cost.load,
        };
        let left = (budget - probe_seconds - RECORD_SHARE * budget).max(0.0);
        let l = plan.layers as f64;
        let confirm_cost = |n: usize, k: usize| l * k as f64 * cost.confirm_seconds(n);
        let per_trial = |s: usize| {
            let w = cost.wave_width(s);
            cost.wave_seconds(s, w) / w as f64
        };
        // The search keeps room for MIN_SEARCH_PAIRS pairs at its smallest size (at most 80 %
        // of the time left): a slow program's confirmations shrink for them.
        let smallest = search_samples.unwrap_or(MIN_PLANNED_SEARCH_SAMPLES.min(defaults.1));
        let floor = (MIN_SEARCH_PAIRS as f64 * per_trial(smallest)).min(0.8 * left);
        let room = (CONFIRM_SHARE * left).min(left - floor).max(0.0);
        // The largest n ≤ cap whose k slots fit the room (bisection on a monotone cost).
        let largest_n = |k: usize, cap: usize| -> usize {
            let (mut lo, mut hi) = (0usize, cap);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if confirm_cost(mid, k) <= room {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            lo
        };
        let mut shared = false;
        match (samples, confirm) {
            (Some(_), Some(_)) => {}
            (Some(n), None) => {
                // Fewer slots when the user's sample size does not fit three.
                plan.confirm_per_layer = (1..=defaults.2)
                    .rev()
                    .find(|&k| confirm_cost(n, k) <= room)
                    .unwrap_or(1);
            }
            (None, Some(k)) => {
                plan.samples_per_side = largest_n(k, defaults.0).max(MIN_PLANNED_SAMPLES);
            }
            (None, None) => {
                let full = defaults.0;
                if confirm_cost(full, defaults.2) <= room {
                    plan.samples_per_side = full;
                } else if largest_n(2, full) >= 50_000 {
                    plan.confirm_per_layer = 2;
                    plan.samples_per_side = largest_n(2, full);
                } else {
                    plan.confirm_per_layer = 1;
                    plan.samples_per_side = largest_n(1, full);
                    if plan.samples_per_side < MIN_PLANNED_SAMPLES {
                        shared = true;
                        // Too slow for a confirmation per layer: one pair confirmed for every
                        // layer from one draw (what a violation found by both layers costs),
                        // at what fits, never below the smallest timed confirmation.
                        plan.samples_per_side = cost
                            .confirm_fitting(room, full)
                            .clamp(MIN_TIMED_CONFIRM_SAMPLES, MIN_PLANNED_SAMPLES);
                    }
                }
            }
        }
        plan.confirm_seconds = if shared {
            cost.confirm_seconds(plan.samples_per_side)
        } else {
            confirm_cost(plan.samples_per_side, plan.confirm_per_layer)
        };
        let search_room = (left - plan.confirm_seconds).max(0.0);
        if search_samples.is_none() {
            // The largest trial size that still scores MIN_PLANNED_TRIALS pairs, or as many
            // as the smallest size would (a program whose start-up dominates scores about as
            // many pairs at any size, and keeps the larger, more powerful trials).
            let trials = |s: usize| (search_room / per_trial(s).max(1e-9)).floor() as usize;
            let ladder: Vec<usize> = std::iter::once(defaults.1)
                .chain(SEARCH_LADDER.into_iter().filter(|&s| s < defaults.1))
                .collect();
            let smallest = *ladder.last().unwrap_or(&defaults.1);
            let target = MIN_PLANNED_TRIALS.min(trials(smallest)).max(1);
            plan.search_samples = ladder
                .iter()
                .copied()
                .find(|&s| trials(s) >= target)
                .unwrap_or(smallest);
        }
        let trial = per_trial(plan.search_samples);
        plan.trials_at_once = cost.wave_width(plan.search_samples);
        plan.trials = ((search_room / trial.max(1e-9)).floor() as usize).clamp(1, 100_000);
        plan.search_seconds = plan.trials as f64 * trial;
        let total = plan.total_seconds();
        if total > 1.2 * budget {
            plan.over_budget = Some(format!(
                "one confirmation of {} releases per side takes about {} s at the measured speed ({} per release, {} per program start, {} programs at once), so {} confirmation(s) per layer need about {} s; a run with less would have little power. Raise --budget, or lower --samples to trade power for time",
                plan.samples_per_side,
                readable(cost.confirm_seconds(plan.samples_per_side).ceil()),
                duration(plan.seconds_per_release),
                duration(plan.seconds_per_call),
                plan.jobs,
                plan.confirm_per_layer,
                readable(plan.confirm_seconds.ceil())
            ));
        }
        plan
    }

    /// Estimated seconds of the whole run, the probe included.
    pub fn total_seconds(&self) -> f64 {
        self.probe_seconds
            + self.search_seconds
            + self.confirm_seconds
            + RECORD_SHARE * self.budget_seconds
    }

    /// The plan in one line.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "plan: measured {} per release and {} per program start ({} s probe, the start-up priced with {} program(s) running at once); search about {} trials of {} releases per side, up to {} at once (~{} s; more when the layers confirm the same pairs), then up to {} confirmation(s) per layer × {} layer(s) of {} releases per side (~{} s, each slot priced on a pair of its own); estimated total ~{} s of the {} s budget",
            duration(self.seconds_per_release),
            duration(self.seconds_per_call),
            readable((self.probe_seconds * 10.0).ceil() / 10.0),
            self.jobs,
            self.trials,
            self.search_samples,
            self.trials_at_once,
            readable(self.search_seconds.ceil()),
            self.confirm_per_layer,
            self.layers,
            self.samples_per_side,
            readable(self.confirm_seconds.ceil()),
            readable(self.total_seconds().ceil()),
            readable(self.budget_seconds)
        );
        if let Some((load, cores)) = self.load
            && load > cores as f64
        {
            s += &format!(
                "; the machine is busy (load {} on {cores} cores): the prices are what the program costs now, and the run re-prices from every call",
                readable((load * 10.0).round() / 10.0)
            );
        }
        if self.price_factor > 1.05 {
            s += &format!(
                "; the calls' times varied, so the plan prices every call at {}× its median (the slow calls' price)",
                readable((self.price_factor * 100.0).round() / 100.0)
            );
        }
        if let Some(why) = &self.over_budget {
            s += &format!(
                "; OVER BUDGET: this run will take about {} s: {why}",
                readable(self.total_seconds().ceil())
            );
        }
        s
    }
}

/// A duration in readable units.
fn duration(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{} s", readable((seconds * 100.0).round() / 100.0))
    } else if seconds >= 1e-3 {
        format!("{} ms", readable((seconds * 1e5).round() / 100.0))
    } else if seconds >= 1e-6 {
        format!("{} µs", readable((seconds * 1e8).round() / 100.0))
    } else {
        format!("{} ns", readable((seconds * 1e11).round() / 100.0))
    }
}

/// Per-layer state of a run.
struct State {
    kind: LayerKind,
    skipped: Option<String>,
    beta: f64,
    trials: Vec<Trial>,
    /// The floating-point view's coordinates per trial index (wide outputs only).
    coords: Vec<Option<Vec<usize>>>,
    confirmations: Vec<AuditReport>,
    confirmed: Vec<DatasetPair>,
    found: bool,
}

impl State {
    fn open(&self, slots: usize) -> bool {
        self.skipped.is_none() && !self.found && self.confirmations.len() < slots
    }
}

/// The view of raw releases a layer's testers see, with the names of its features.
pub(crate) fn view(
    kind: LayerKind,
    raw: &Samples,
    coords: Option<&[usize]>,
) -> Result<(Samples, Vec<String>, Transform)> {
    let t = kind.transform();
    let d = raw.dim();
    match coords {
        Some(c) if kind == LayerKind::FloatingPoint => {
            let sub = Samples::new(raw.values().select(ndarray::Axis(1), c))?;
            let all = t.feature_names(d);
            let w = crate::testers::transforms::FLOAT_REPR_PER_COORD;
            let names = c
                .iter()
                .flat_map(|&j| all[j * w..(j + 1) * w].to_vec())
                .collect();
            Ok((t.apply(&sub)?, names, t))
        }
        _ => Ok((t.apply(raw)?, t.feature_names(d), t)),
    }
}

/// For wide outputs: the [`FLOAT_COORDS`] coordinates whose float features differ most between
/// `p` and `q` (largest total variation distance of any one feature; ties to the lower index).
pub(crate) fn float_coords(p: &Samples, q: &Samples) -> Option<Vec<usize>> {
    let d = p.dim();
    if d <= FLOAT_COORDS {
        return None;
    }
    let fp = Transform::FloatRepr.apply(p).ok()?;
    let fq = Transform::FloatRepr.apply(q).ok()?;
    let w = crate::testers::transforms::FLOAT_REPR_PER_COORD;
    let tv = |col: usize| {
        use std::collections::HashMap;
        let mut counts: HashMap<u64, (f64, f64)> = HashMap::new();
        for v in fp.values().column(col) {
            counts.entry(v.to_bits()).or_default().0 += 1.0 / fp.n() as f64;
        }
        for v in fq.values().column(col) {
            counts.entry(v.to_bits()).or_default().1 += 1.0 / fq.n() as f64;
        }
        0.5 * counts.values().map(|(a, b)| (a - b).abs()).sum::<f64>()
    };
    let mut score: Vec<(usize, f64)> = (0..d)
        .map(|j| (j, (0..w).map(|f| tv(j * w + f)).fold(0.0, f64::max)))
        .collect();
    score.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut keep: Vec<usize> = score.into_iter().take(FLOAT_COORDS).map(|s| s.0).collect();
    keep.sort_unstable();
    Some(keep)
}

/// Rewrites every bound's event description, and the ε estimate's, in words (the features'
/// names).
pub(crate) fn name_events(r: &mut AuditReport, names: &[String]) {
    for b in &mut r.bounds {
        if let Some(e) = &mut b.event {
            e.description = in_words(&e.description, names);
        }
    }
    if let Some(ev) = r.empirical_epsilon.as_mut().and_then(|e| e.event.as_mut()) {
        *ev = in_words(ev, names);
    }
}

/// What the confirmations of a layered run share: the target, the distinct pairs confirmed so
/// far (pair k draws from the confirm streams of k), the last pair's releases, and the counts.
struct Confirmer<'a> {
    mechanism: &'a dyn Mechanism,
    claim: &'a PrivacyClaim,
    testers: &'a [Box<dyn PropertyTester>],
    audit: &'a AuditConfig,
    slots: usize,
    pairs: Vec<DatasetPair>,
    cache: Option<(usize, Samples, Samples)>,
    calls: u64,
    drawn: u64,
    /// Per-call times, for the cost model.
    log: &'a super::cost::CallLog,
    /// Every confirmation's layer and size, in the order run.
    effort: Vec<ConfirmEffort>,
    /// Pairs the program was slow on in the search, with its seconds per release there.
    slow_pairs: Vec<(DatasetPair, f64)>,
    /// Seconds a confirmation is priced at (a slow pair is confirmed on what fits them).
    allowance: f64,
    /// Seconds per program start.
    startup: f64,
    /// The cost model's current prices (refreshed by the search before each confirmation).
    cost: super::cost::CostModel,
    /// When the budget ends (soft: confirmations are sized to end by then when they can) and
    /// the deadline no call runs past.
    ends: Option<(Instant, Instant)>,
    /// Confirmations not run, or stopped, because the time budget was spent.
    out_of_time: usize,
}

/// Fewest releases per side a confirmation shrunk to fit the time left draws; below it the
/// confirmation is not run (it could show only a violation of a claim already far exceeded).
pub const MIN_TIMED_CONFIRM_SAMPLES: usize = 200;

/// Whether an error is a call stopped at (or not started after) the run's deadline.
fn out_of_time(e: &Error) -> bool {
    matches!(
        e,
        Error::Mechanism(crate::mechanisms::MechanismError::OutOfTime { .. })
    )
}

impl Confirmer<'_> {
    /// Confirms `pair` for layer `li` on fresh releases from the confirm streams of the pair
    /// (drawn once per distinct pair; a pair confirmed by both layers reuses them).
    /// Returns false, recording nothing, when the time budget left no room for it (too little
    /// time left, or its draw was stopped at the deadline).
    fn confirm(
        &mut self,
        states: &mut [State],
        li: usize,
        pair: &DatasetPair,
        coords: Option<&[usize]>,
        owed: usize,
    ) -> Result<bool> {
        let t0 = Instant::now();
        let k = match self.pairs.iter().position(|p| p == pair) {
            Some(k) => k,
            None => {
                self.pairs.push(pair.clone());
                self.pairs.len() - 1
            }
        };
        let seed = Seed(self.audit.seed);
        // A pair the program was slow on gets the releases that fit a confirmation's price.
        let mut n = match self.slow_pairs.iter().find(|(p, _)| p == pair) {
            Some((_, rate)) => {
                let fits = ((self.allowance - self.startup).max(0.0) / rate).floor() as usize;
                fits.clamp(MIN_SLOW_CONFIRM_SAMPLES, self.audit.samples_per_side.max(1))
            }
            None => self.audit.samples_per_side,
        };
        let drawn_before = self.cache.as_ref().is_some_and(|c| c.0 == k);
        // With a deadline, a confirmation gets what fits the time left: shared with the
        // confirmations still owed until the budget's end, else (when even the smallest does
        // not fit) what fits before the deadline. Chosen from prices and the clock, never from
        // releases, so the size is independent of the confirmation's data.
        if let Some((soft, hard)) = self.ends
            && !drawn_before
        {
            let now = Instant::now();
            let left = |end: Instant| end.saturating_duration_since(now).as_secs_f64();
            let share = left(soft) / owed.max(1) as f64;
            let mut fit = self.cost.confirm_fitting(share, n);
            if fit < MIN_TIMED_CONFIRM_SAMPLES.min(n) {
                fit = self.cost.confirm_fitting(0.8 * left(hard), n);
            }
            if fit < MIN_TIMED_CONFIRM_SAMPLES.min(n) {
                self.out_of_time += 1;
                return Ok(false);
            }
            n = fit;
        }
        if let Some(c) = &self.cache
            && c.0 == k
        {
            n = c.1.n();
        }
        let m = self.mechanism;
        if self.cache.as_ref().is_none_or(|c| c.0 != k) {
            let stream = |side| Phase::Confirm(k as u64).stream_of(side);
            // A pair the program is slow on is not priced with the rest.
            let log = (n == self.audit.samples_per_side).then_some(self.log);
            let (p, q) = match sample_pair_parallel(m, pair, n, seed, stream, log) {
                Ok(d) => d,
                Err(e) if out_of_time(&e) => {
                    self.out_of_time += 1;
                    return Ok(false);
                }
                Err(e) => return Err(e),
            };
            self.calls += 2 * n.div_ceil(chunk_len(m)) as u64;
            self.drawn += 2 * n as u64;
            self.cache = Some((k, p, q));
        }
        let Some((_, p, q)) = self.cache.as_ref() else {
            return Err(Error::InvalidConfig("internal: no confirm releases".into()));
        };
        let st = &mut states[li];
        let (vp, names, t) = view(st.kind, p, coords)?;
        let (vq, _, _) = view(st.kind, q, coords)?;
        let config = AuditConfig {
            failure_probability: st.beta / self.slots as f64,
            samples_per_side: n,
            ..self.audit.clone()
        };
        let mut r = audit_drawn(
            m,
            self.claim,
            pair,
            (&vp, &vq),
            self.testers,
            &config,
            Phase::Confirm(k as u64).tester_base() + (st.kind.index() << 19),
        )?;
        name_events(&mut r, &names);
        r.output_transform = Some(t);
        r.release_dim = Some(p.dim());
        r.mechanism_calls = 2 * n.div_ceil(chunk_len(m)) as u64;
        r.wall_time_seconds = Some(t0.elapsed().as_secs_f64());
        self.effort.push(ConfirmEffort {
            layer: st.kind,
            releases_per_side: n,
        });
        st.found |= r.verdict == Verdict::Violation;
        st.confirmations.push(r);
        st.confirmed.push(pair.clone());
        Ok(true)
    }
}

/// What paces a search: the cost model (refined as the run goes), the trials its plan
/// announced, and the seconds spent before the search (the probe), which count in the budget.
#[derive(Clone, Debug)]
pub struct Pacing {
    /// The cost model of [`super::cost`].
    pub cost: super::cost::CostModel,
    /// Trials the plan announced.
    pub planned_trials: Option<usize>,
    /// Seconds of the budget spent before the search started.
    pub spent_before: f64,
    /// Seconds one program call may take (`--exec-timeout`), when the mechanism is a program.
    pub call_timeout: Option<f64>,
    /// The instant no call may run past (the budget plus its slack; set on the mechanism by
    /// the caller): confirmations are sized to end before it, and one that cannot is not run.
    pub deadline: Option<Instant>,
}

/// [`super::search_and_confirm_observed`] for several layers at once (see the module docs),
/// paced by a cost model of `jobs` = the pool's threads and the mechanism's batch size, with no
/// plan.
#[allow(clippy::too_many_arguments)]
pub fn search_and_confirm_layered(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    finder: &mut dyn DatasetFinder,
    testers: &[Box<dyn PropertyTester>],
    search: &SearchConfig,
    audit: &AuditConfig,
    layers: &[LayerKind],
    observe: &dyn Fn(&SearchProgress),
) -> Result<LayeredReport> {
    let pacing = Pacing {
        cost: super::cost::CostModel::new(
            0.0,
            1e-6,
            rayon::current_num_threads(),
            chunk_len(mechanism),
        ),
        planned_trials: None,
        spent_before: 0.0,
        call_timeout: None,
        deadline: None,
    };
    search_and_confirm_paced(
        mechanism, claim, finder, testers, search, audit, layers, pacing, observe,
    )
}

/// One exploratory trial's outcome, computed in parallel with the others of its wave.
struct Scored {
    pair: DatasetPair,
    /// The releases of both sides, or the program's refusal (with the seconds per release it
    /// took at least, when it was too slow on the pair).
    outcome: std::result::Result<ScoredLayers, (crate::mechanisms::MechanismError, Option<f64>)>,
}

/// A trial's draw: the releases, or the program's refusal or slowness.
enum Draw {
    /// Both sides, the releases per side drawn and the seconds the draw took.
    Drawn(Samples, Samples, usize, f64),
    /// Too slow on the pair for even [`MIN_SLOW_SEARCH_SAMPLES`] releases per side: the
    /// skip's message and the seconds per release it took at least.
    TooSlow(crate::mechanisms::MechanismError, f64),
}

/// One layer's score of a trial: the score, the exploratory margin, and the floating-point
/// view's coordinates (wide outputs).
type LayerScore = (f64, f64, Option<Vec<usize>>);

/// A trial's scores per layer (None for a layer that cannot run on it).
struct ScoredLayers {
    integer: bool,
    per_layer: Vec<Option<LayerScore>>,
    /// When the program was too slow on the pair for the full size: the releases per side it
    /// was scored on, and the seconds per release measured on them.
    slow: Option<(usize, f64)>,
    /// Releases per side scored and the seconds the testers took on them (all layers).
    scoring: (usize, f64),
}

/// How a trial skipped because the program was too slow on its pair begins its message.
const TOO_SLOW: &str = "too slow on this pair";

/// Fewest releases per side a trial is shrunk to on a pair the program is slow on; below it
/// the pair is skipped as too slow.
pub const MIN_SLOW_SEARCH_SAMPLES: usize = 50;
/// Fewest releases per side a confirmation of such a pair draws, whatever it costs.
pub const MIN_SLOW_CONFIRM_SAMPLES: usize = 100;

/// Draws `s` releases per side of `pair` for trial `index`; when a call runs past the limit
/// the search set ([`Mechanism::set_call_limit`]), draws again at a size that fits it at the
/// slowness observed (at most 3 times, each at most a quarter of the last size). Returns the
/// releases, the size drawn and the seconds the draw took.
#[allow(clippy::too_many_arguments)]
fn draw_trial(
    mechanism: &dyn Mechanism,
    pair: &DatasetPair,
    s: usize,
    seed: Seed,
    index: usize,
    startup: f64,
    hint: f64,
    log: &super::cost::CallLog,
) -> Result<Draw> {
    use crate::mechanisms::MechanismError;
    let mut size = s;
    let mut last_rate = hint;
    for _ in 0..4 {
        let t0 = Instant::now();
        let drawn = if one_call_fits(mechanism, pair, size) {
            draw_in_one_call(mechanism, pair, size, seed, index, log)
        } else {
            sample_pair_parallel(
                mechanism,
                pair,
                size,
                seed,
                |side| Phase::Search(index as u64).stream_of(side),
                Some(log),
            )
        };
        match drawn {
            Ok((p, q)) => return Ok(Draw::Drawn(p, q, size, t0.elapsed().as_secs_f64())),
            Err(Error::Mechanism(MechanismError::Slow {
                mechanism: id,
                releases,
                seconds,
            })) => {
                // At least this much per release: the call ran past `seconds`; and at least as
                // slow as the slowest pair seen so far (`hint`), so that the next size is one
                // that can fit.
                let rate =
                    ((seconds - startup).max(0.5 * seconds) / releases.max(1) as f64).max(hint);
                let fits = ((0.5 * seconds - startup).max(0.25 * seconds) / rate).floor();
                let next = (fits.max(0.0) as usize).min(size / 4);
                if next < MIN_SLOW_SEARCH_SAMPLES {
                    return Ok(Draw::TooSlow(
                        MechanismError::Refused {
                            mechanism: id,
                            message: format!(
                                "{TOO_SLOW}{}",
                                format_args!(
                                    ": a call of {releases} releases ran past the {} s a trial's call is given (at least {} per release here); {MIN_SLOW_SEARCH_SAMPLES} releases per side would not fit, so the pair was skipped",
                                    readable((seconds * 100.0).round() / 100.0),
                                    duration(rate)
                                )
                            ),
                        },
                        rate,
                    ));
                }
                last_rate = rate;
                size = next;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Draw::TooSlow(
        MechanismError::Refused {
            mechanism: mechanism.id().to_string(),
            message: format!(
                "{TOO_SLOW}: still past the time a trial's call is given at {size} releases per side; the pair was skipped"
            ),
        },
        last_rate,
    ))
}

/// Most record values the datasets of a one-call trial may hold together (the bound of one
/// request's dataset, [`crate::sources::exec::MAX_DATASET_VALUES`]).
const ONE_CALL_VALUES: usize = crate::sources::exec::MAX_DATASET_VALUES;

/// Whether a trial of `size` releases per side of `pair` is drawn in one call: the mechanism
/// reads at least `2 · size` datasets per call (`--exec-datasets`) and they fit one request.
fn one_call_fits(mechanism: &dyn Mechanism, pair: &DatasetPair, size: usize) -> bool {
    let values = size * (pair.first().len() + pair.second().len()) * pair.first().dim();
    mechanism
        .datasets_per_call()
        .is_some_and(|k| 2 * size <= k && values <= ONE_CALL_VALUES)
}

/// A trial's releases from one call of `2 · size` datasets (`size` copies of each side, one
/// release each, independent given the datasets): one start-up instead of two, which is what a
/// slow-start program that reads many datasets per request makes possible. Its randomness is
/// the trial's own search stream (the first side's), so the releases do not depend on any
/// other trial.
fn draw_in_one_call(
    mechanism: &dyn Mechanism,
    pair: &DatasetPair,
    size: usize,
    seed: Seed,
    index: usize,
    log: &super::cost::CallLog,
) -> Result<(Samples, Samples)> {
    let mut datasets = Vec::with_capacity(2 * size);
    datasets.extend(std::iter::repeat_n(pair.first().clone(), size));
    datasets.extend(std::iter::repeat_n(pair.second().clone(), size));
    let mut rng = seed.rng(Phase::Search(index as u64).stream_of(crate::rng::Side::First));
    let t0 = Instant::now();
    let all = mechanism.sample_each(&datasets, &mut rng)?;
    log.push(2 * size, t0.elapsed().as_secs_f64());
    let dim = mechanism.output_dim();
    if all.n() != 2 * size || all.dim() != dim {
        return Err(Error::InvalidSamples(format!(
            "mechanism {} returned {} × {} releases for a request of {} datasets, expected {} × {dim}",
            mechanism.id(),
            all.n(),
            all.dim(),
            2 * size,
            2 * size
        )));
    }
    if let Some((i, j, v)) = all.first_non_finite() {
        return Err(Error::InvalidSamples(format!(
            "mechanism {} released a non-finite value {v} (release {i}, coordinate {j})",
            mechanism.id()
        )));
    }
    let v = all.values();
    let p = Samples::new(v.slice(ndarray::s![..size, ..]).to_owned())?;
    let q = Samples::new(v.slice(ndarray::s![size.., ..]).to_owned())?;
    Ok((p, q))
}

/// [`search_and_confirm_layered`] paced by `pacing` (see the module docs and [`super::cost`]).
///
/// The trials run in waves: each wave asks the finder for up to the cost model's
/// [`super::cost::CostModel::wave_width`] pairs whose proposals do not depend on scores not yet
/// told ([`DatasetFinder::next_is_independent`]), draws and scores them at once, then takes
/// them in trial order exactly as a one-at-a-time search would (tells, confirmations, the
/// checkpoint, the stop when every slot is used): the record is the same for any number of
/// threads. Trials of a wave after the search has ended are dropped unrecorded.
///
/// With a time budget, a wave is started only when the time spent, the wave and the
/// confirmations still owed fit the budget at the cost model's prices; the confirmations owed
/// are the distinct pairs the layers would confirm if the search stopped now, plus one per
/// trial of the wave (a new pair can enter the rankings), at most one per open slot: a pair
/// that both layers would confirm is priced once.
#[allow(clippy::too_many_arguments)]
pub fn search_and_confirm_paced(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    finder: &mut dyn DatasetFinder,
    testers: &[Box<dyn PropertyTester>],
    search: &SearchConfig,
    audit: &AuditConfig,
    layers: &[LayerKind],
    mut pacing: Pacing,
    observe: &dyn Fn(&SearchProgress),
) -> Result<LayeredReport> {
    use rayon::prelude::*;
    if layers.is_empty() {
        return Err(Error::InvalidConfig("no layer to check".into()));
    }
    search.validate()?;
    let d = mechanism.output_dim();
    for &k in layers {
        let cols = match k {
            LayerKind::FloatingPoint => {
                d.min(FLOAT_COORDS) * crate::testers::transforms::FLOAT_REPR_PER_COORD
            }
            LayerKind::Mechanism => k.transform().output_dim(d),
        };
        audit.validate(cols)?;
        AuditConfig {
            samples_per_side: search.search_samples,
            ..audit.clone()
        }
        .validate(cols)?;
    }
    let start = Instant::now();
    let elapsed = || pacing_elapsed(pacing.spent_before, start);
    let seed = Seed(audit.seed);
    let slots = search.confirm_top;
    let mut states: Vec<State> = layers
        .iter()
        .map(|&kind| State {
            kind,
            skipped: None,
            beta: audit.failure_probability / layers.len() as f64,
            trials: Vec::new(),
            coords: Vec::new(),
            confirmations: Vec::new(),
            confirmed: Vec::new(),
            found: false,
        })
        .collect();
    let steer = if layers.contains(&LayerKind::Mechanism) {
        LayerKind::Mechanism
    } else {
        LayerKind::FloatingPoint
    };
    let log = super::cost::CallLog::default();
    let mut skipped: Vec<SkippedTrial> = Vec::new();
    let n = audit.samples_per_side;
    let s = search.search_samples;
    let mut conf = Confirmer {
        mechanism,
        claim,
        testers,
        audit,
        slots,
        pairs: Vec::new(),
        cache: None,
        calls: 0,
        drawn: 0,
        log: &log,
        effort: Vec::new(),
        slow_pairs: Vec::new(),
        // At most half the time-out, so that one call holds the whole confirmation of a side.
        allowance: pacing
            .cost
            .confirm_seconds(audit.samples_per_side)
            .max(1.0)
            .min(0.5 * pacing.call_timeout.unwrap_or(f64::INFINITY)),
        startup: pacing.cost.seconds_per_call,
        cost: pacing.cost.clone(),
        ends: pacing.deadline.and_then(|hard| {
            let budget = search.budget_seconds?;
            let soft =
                start + std::time::Duration::from_secs_f64((budget - pacing.spent_before).max(0.0));
            Some((soft.min(hard), hard))
        }),
        out_of_time: 0,
    };
    // A failure after the search has an answer (a confirmation, or a violation): reported
    // beside it instead of ending the run without one.
    let mut failure: Option<String> = None;
    // Releases per side of every scored trial, in order (the fidelities of the record).
    let mut trial_sizes: Vec<usize> = Vec::new();
    let mut best_score = f64::NEG_INFINITY;
    let mut scored = 0usize;
    let call_len = chunk_len(mechanism);
    let mut proposed = 0usize;
    // The largest seconds per release seen on a pair the program was slow on.
    let mut slow_hint = 0.0_f64;
    // Proposals skipped because the program was too slow on them (not refusals of the data).
    let mut too_slow = 0usize;
    let stopped: StopReason;
    let progress =
        |states: &[State], drawn: u64, scored: usize, best: f64, confirming: bool| SearchProgress {
            trials_done: scored,
            trials_max: search.trials,
            trials_planned: pacing.planned_trials,
            confirming,
            confirmations_done: states.iter().map(|st| st.confirmations.len()).sum(),
            confirm_top: slots * states.iter().filter(|st| st.skipped.is_none()).count(),
            samples_drawn: drawn,
            elapsed_seconds: start.elapsed().as_secs_f64(),
            budget_seconds: search.budget_seconds,
            best_score: best,
        };

    'search: loop {
        if proposed >= search.trials {
            stopped = StopReason::TrialLimit;
            break;
        }
        let open_slots: usize = states
            .iter()
            .filter(|st| st.open(slots))
            .map(|st| slots - st.confirmations.len())
            .sum();
        if proposed > 0 && open_slots == 0 {
            stopped = StopReason::SlotsUsed;
            break;
        }
        if proposed > 0
            && let Some(limit) = search.wall_clock_seconds
            && (limit.is_nan() || start.elapsed().as_secs_f64() > limit)
        {
            stopped = StopReason::SearchTime;
            break;
        }
        // The wave's width: what keeps the pool busy, at most the trials left, and (with a
        // budget) at most what fits beside the confirmations owed.
        let mut width = pacing
            .cost
            .wave_width(s)
            .min(search.trials - proposed)
            .max(1);
        if let Some(budget) = search.budget_seconds {
            let owed = end_phase_pairs(&states, slots).len();
            // The confirmations owed at their central price: they are sized to the time left
            // when they run (and the deadline bounds them), so the slow calls' factor, which
            // prices the next wave, would only stop the search early.
            let mut central = pacing.cost.clone();
            central.price_factor = 1.0;
            let fits = |w: usize| {
                let pairs = (owed + w).min(open_slots);
                elapsed()
                    + pacing.cost.wave_seconds(s, w)
                    + pairs as f64 * central.confirm_seconds(n)
                    <= budget
            };
            while width > 1 && !fits(width) {
                width -= 1;
            }
            // The first trials of the plan (up to CHECKPOINT_TRIALS) run unless the budget is
            // spent outright: a machine that turned slower than the probe measured costs some
            // overrun, not the search. A run scores at least one pair.
            let floor = pacing
                .planned_trials
                .unwrap_or(1)
                .clamp(1, CHECKPOINT_TRIALS);
            let spent = elapsed() + pacing.cost.wave_seconds(s, width) > budget;
            if proposed > 0 && !fits(width) && (proposed >= floor || spent) {
                stopped = StopReason::Budget;
                break;
            }
        }
        if let Some(m) = search.max_samples {
            let owed = 2 * n as u64 * open_slots as u64;
            while width > 0 && conf.drawn + 2 * (s * width) as u64 + owed > m {
                width -= 1;
            }
            if width == 0 {
                stopped = StopReason::SampleLimit;
                break;
            }
        }
        let mut wave: Vec<DatasetPair> = Vec::new();
        while wave.len() < width {
            if !wave.is_empty() && !finder.next_is_independent() {
                break;
            }
            match finder.ask()? {
                Some(p) => wave.push(p),
                None => break,
            }
        }
        if wave.is_empty() {
            stopped = StopReason::FinderExhausted;
            break;
        }
        let first_index = proposed;
        let decided_skip = states
            .iter()
            .any(|st| st.kind == LayerKind::FloatingPoint && st.skipped.is_some());
        // With a budget, a trial's call gets a limit: four times its price, and at least 2 %
        // of the budget and 1 s; a program slower than that on a pair is asked for fewer
        // releases there (see draw_trial).
        if let Some(budget) = search.budget_seconds {
            let price = pacing.cost.call_seconds(s.min(pacing.cost.batch));
            mechanism.set_call_limit(Some(std::time::Duration::from_secs_f64(
                (4.0 * price).max(0.02 * budget).max(1.0),
            )));
        }
        let hint = slow_hint;
        let startup = pacing.cost.seconds_per_call;
        let outcomes: Vec<Result<Scored>> = wave
            .into_par_iter()
            .enumerate()
            .map(|(w, pair)| -> Result<Scored> {
                let index = first_index + w;
                let own = super::cost::CallLog::default();
                let drawn = draw_trial(mechanism, &pair, s, seed, index, startup, hint, &own);
                let (p, q, size, secs) = match drawn {
                    Ok(Draw::Drawn(p, q, size, secs)) => (p, q, size, secs),
                    Ok(Draw::TooSlow(e, rate)) => {
                        return Ok(Scored {
                            pair,
                            outcome: Err((e, Some(rate))),
                        });
                    }
                    Err(Error::Mechanism(
                        e @ (crate::mechanisms::MechanismError::Refused { .. }
                        | crate::mechanisms::MechanismError::OutOfTime { .. }),
                    )) => {
                        return Ok(Scored {
                            pair,
                            outcome: Err((e, None)),
                        });
                    }
                    Err(e) => return Err(e),
                };
                let scoring_started = Instant::now();
                let integer = integer_valued(&[&p, &q]);
                let mut per_layer = Vec::new();
                for &kind in layers {
                    if kind == LayerKind::FloatingPoint && (decided_skip || integer) {
                        per_layer.push(None);
                        continue;
                    }
                    let coords = if kind == LayerKind::FloatingPoint {
                        float_coords(&p, &q)
                    } else {
                        None
                    };
                    let (vp, _, _) = view(kind, &p, coords.as_deref())?;
                    let (vq, _, _) = view(kind, &q, coords.as_deref())?;
                    let config = AuditConfig {
                        seed: audit.seed,
                        samples_per_side: size,
                        failure_probability: SEARCH_BETA,
                    };
                    let r = audit_drawn(
                        mechanism,
                        claim,
                        &pair,
                        (&vp, &vq),
                        testers,
                        &config,
                        Phase::Search(index as u64).tester_base() + (kind.index() << 19),
                    )?;
                    let (score, margin) = super::score_and_margin(&r);
                    per_layer.push(Some((score, margin, coords)));
                }
                // Every call that finished prices the run, those of a shrunk trial too: a
                // model that shrank every trial was wrong, and learns here.
                for c in own.take() {
                    log.push(c.releases, c.seconds);
                }
                let slow = (size < s).then(|| {
                    (
                        size,
                        ((secs - startup).max(0.5 * secs) / size as f64)
                            .max(super::cost::MIN_SECONDS_PER_RELEASE),
                    )
                });
                Ok(Scored {
                    pair,
                    outcome: Ok(ScoredLayers {
                        integer,
                        per_layer,
                        slow,
                        scoring: (size, scoring_started.elapsed().as_secs_f64()),
                    }),
                })
            })
            .collect();
        mechanism.set_call_limit(None);
        pacing.cost.observe(&log);
        for o in outcomes.iter().flatten() {
            if let Ok(sl) = &o.outcome {
                pacing.cost.observe_scoring(sl.scoring.0, sl.scoring.1);
            }
        }
        // Take the wave in trial order, as a one-at-a-time search would.
        for (w, outcome) in outcomes.into_iter().enumerate() {
            let index = first_index + w;
            if w > 0 {
                let open = states.iter().any(|st| st.open(slots));
                if !open {
                    stopped = StopReason::SlotsUsed;
                    break 'search;
                }
            }
            let Scored { pair, outcome } = match outcome {
                Ok(o) => o,
                Err(e) => {
                    if states.iter().any(|st| st.found) {
                        failure = Some(e.to_string());
                        stopped = StopReason::Failure;
                        break 'search;
                    }
                    return Err(e);
                }
            };
            if let Err((crate::mechanisms::MechanismError::OutOfTime { .. }, _)) = &outcome {
                // The deadline stopped the trial: the search is over, its partial draw unused.
                stopped = StopReason::Deadline;
                break 'search;
            }
            proposed += 1;
            let sl = match outcome {
                Ok(sl) => sl,
                Err((e, slow_rate)) => {
                    let worst = states
                        .iter()
                        .find(|st| st.kind == steer)
                        .map(|st| st.trials.iter().map(|t| t.score).fold(-1.0_f64, f64::min))
                        .unwrap_or(-1.0);
                    finder.tell(worst);
                    if let Some(rate) = slow_rate {
                        too_slow += 1;
                        // The slowness measured, for the next slow pair.
                        slow_hint = slow_hint.max(rate);
                    }
                    skipped.push(SkippedTrial {
                        index,
                        pair,
                        error: e.to_string(),
                    });
                    // A program that refuses every one of the first proposals (NaN on every
                    // dataset, a crash on start-up) ends the search now instead of spending the
                    // budget; pairs skipped as too slow do not count (the budget bounds them).
                    if scored == 0 && skipped.len() - too_slow >= MAX_LEADING_REFUSALS {
                        stopped = StopReason::Refusals;
                        break 'search;
                    }
                    continue;
                }
            };
            let size = sl.slow.map_or(s, |(size, _)| size);
            trial_sizes.push(size);
            conf.calls += if one_call_fits(mechanism, &pair, size) {
                1
            } else {
                2 * size.div_ceil(call_len) as u64
            };
            conf.drawn += 2 * size as u64;
            if let Some((_, rate)) = sl.slow
                && !conf.slow_pairs.iter().any(|(p, _)| *p == pair)
            {
                conf.slow_pairs.push((pair.clone(), rate));
                slow_hint = slow_hint.max(rate);
            }
            // The first scored trial decides whether the floating-point layer runs (see the
            // module docs): before any confirmation, on search releases only.
            if scored == 0 && sl.integer {
                let running = states.iter().filter(|st| st.skipped.is_none()).count();
                if let Some(st) = states
                    .iter_mut()
                    .find(|st| st.kind == LayerKind::FloatingPoint)
                {
                    st.skipped = Some(
                        "every output is an integer, whose floating-point representation is exact: there are no low-order bits to leak".into(),
                    );
                    st.beta = 0.0;
                    if running > 1 {
                        for other in states.iter_mut().filter(|o| o.skipped.is_none()) {
                            other.beta = audit.failure_probability / (running - 1) as f64;
                        }
                    }
                }
            }
            scored += 1;
            let mut steer_score = None;
            let mut margins: Vec<(usize, f64, Option<Vec<usize>>)> = Vec::new();
            for (li, st) in states.iter_mut().enumerate() {
                if st.skipped.is_some() {
                    continue;
                }
                let Some((score, margin, coords)) = sl.per_layer[li].clone() else {
                    // Scored before the skip was decided on an earlier trial of this wave.
                    continue;
                };
                st.trials.push(Trial {
                    index,
                    pair: pair.clone(),
                    score,
                    exploratory_margin: margin,
                    releases_per_side: sl.slow.map(|(size, _)| size),
                });
                st.coords.push(coords.clone());
                if st.kind == steer {
                    steer_score = Some(score);
                }
                margins.push((li, margin, coords));
            }
            let told = steer_score.unwrap_or_else(|| {
                states
                    .iter()
                    .filter_map(|st| st.trials.last().map(|t| t.score))
                    .fold(f64::NEG_INFINITY, f64::max)
            });
            finder.tell(told);
            best_score = best_score.max(told);
            observe(&progress(&states, conf.drawn, scored, best_score, false));
            // A promising pair is confirmed at once by each layer it is promising for.
            for (li, margin, coords) in &margins {
                if *margin > 0.0 && states[*li].open(slots) {
                    observe(&progress(&states, conf.drawn, scored, best_score, true));
                    conf.cost = pacing.cost.clone();
                    let owed = 1 + end_phase_pairs(&states, slots).len();
                    match conf.confirm(&mut states, *li, &pair, coords.as_deref(), owed) {
                        Ok(true) => {}
                        Ok(false) => {
                            stopped = StopReason::Deadline;
                            break 'search;
                        }
                        Err(e) if states.iter().any(|st| st.found) => {
                            failure = Some(e.to_string());
                            stopped = StopReason::Failure;
                            break 'search;
                        }
                        Err(e) => return Err(e),
                    }
                    pacing.cost.observe(&log);
                    observe(&progress(&states, conf.drawn, scored, best_score, false));
                }
            }
            // The checkpoint, per layer (see search_and_confirm).
            if index + 1 == CHECKPOINT_TRIALS && slots >= 2 && search.trials > CHECKPOINT_TRIALS {
                for li in 0..states.len() {
                    if !(states[li].open(slots) && states[li].confirmations.is_empty()) {
                        continue;
                    }
                    let best = states[li]
                        .trials
                        .iter()
                        .enumerate()
                        .min_by(|(_, a), (_, b)| rank_order(a, b))
                        .map(|(k, t)| (t.pair.clone(), states[li].coords[k].clone()));
                    if let Some((pair, coords)) = best {
                        observe(&progress(&states, conf.drawn, scored, best_score, true));
                        conf.cost = pacing.cost.clone();
                        let owed = end_phase_pairs(&states, slots).len().max(1);
                        match conf.confirm(&mut states, li, &pair, coords.as_deref(), owed) {
                            Ok(true) => {}
                            Ok(false) => {
                                stopped = StopReason::Deadline;
                                break 'search;
                            }
                            Err(e) if states.iter().any(|st| st.found) => {
                                failure = Some(e.to_string());
                                stopped = StopReason::Failure;
                                break 'search;
                            }
                            Err(e) => return Err(e),
                        }
                        pacing.cost.observe(&log);
                        observe(&progress(&states, conf.drawn, scored, best_score, false));
                    }
                }
            }
        }
    }
    if scored == 0 {
        return Err(super::no_pair_scored(&skipped));
    }
    // Remaining slots: each layer's best-ranked pairs it has not confirmed, taken pair by pair
    // (a pair wanted by both layers is drawn once and confirmed for both).
    observe(&progress(&states, conf.drawn, scored, best_score, true));
    let end_pairs = if failure.is_some() {
        Vec::new()
    } else {
        end_phase_pairs(&states, slots)
    };
    let total = end_pairs.len();
    'end: for (done, (pair, wanted)) in end_pairs.into_iter().enumerate() {
        for (li, k) in wanted {
            if !states[li].open(slots) {
                continue;
            }
            let coords = states[li].coords[k].clone();
            conf.cost = pacing.cost.clone();
            match conf.confirm(&mut states, li, &pair, coords.as_deref(), total - done) {
                Ok(true) => {}
                // Out of time: the confirmations left are not run either.
                Ok(false) => break 'end,
                Err(e) if states.iter().any(|st| st.found) => {
                    failure = Some(e.to_string());
                    break 'end;
                }
                Err(e) => return Err(e),
            }
            pacing.cost.observe(&log);
            observe(&progress(&states, conf.drawn, scored, best_score, true));
        }
    }
    pacing.cost.observe(&log);
    let mechanism_violates = states
        .iter()
        .any(|st| st.kind == LayerKind::Mechanism && st.found);
    let running = states.iter().filter(|st| st.skipped.is_none()).count();
    let mut out = Vec::new();
    for st in states {
        if let Some(why) = &st.skipped {
            out.push(LayerSearch {
                verdict: LayerVerdict::skipped(st.kind, why),
                search: None,
            });
            continue;
        }
        let verdict = LayerVerdict::from_confirmations(
            st.kind,
            st.beta,
            &st.confirmations,
            st.kind == LayerKind::FloatingPoint && mechanism_violates,
        );
        let mut scores: Vec<f64> = st.trials.iter().map(|t| t.score).collect();
        scores.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            let i = ((p / 100.0) * (scores.len().max(1) - 1) as f64).round() as usize;
            (p, scores.get(i).copied().unwrap_or(f64::NAN))
        };
        out.push(LayerSearch {
            search: Some(SearchReport {
                finder: finder.name().to_string(),
                config: search.clone(),
                score_percentiles: [0.0, 10.0, 50.0, 90.0, 100.0].map(pct).to_vec(),
                trials: st.trials,
                skipped: skipped.clone(),
                beta_rule: format!(
                    "layer {}: β share {} split evenly over its {slots} confirm slots: {} per confirming audit (union bound), whether or not every slot is used",
                    st.kind.title(),
                    readable(st.beta),
                    readable(st.beta / slots as f64)
                ),
                verdict: verdict.verdict.unwrap_or(Verdict::NoViolation),
                confirmations: st.confirmations,
                // The releases are shared by the layers: the run's totals.
                mechanism_calls: conf.calls,
                samples_drawn: conf.drawn,
            }),
            verdict,
        });
    }
    let verdict = if out
        .iter()
        .any(|l| l.verdict.verdict == Some(Verdict::Violation))
    {
        Verdict::Violation
    } else {
        Verdict::NoViolation
    };
    let stopped_words = stop_words(stopped, search, proposed, pacing.planned_trials, &pacing);
    let cut_short = stopped.can_cut_short()
        && (stopped == StopReason::Refusals
            || pacing
                .planned_trials
                .is_none_or(|p| (proposed as f64) < 0.8 * p as f64));
    let effort = SearchEffort {
        trials_planned: pacing.planned_trials,
        trials_run: proposed,
        pairs_scored: scored,
        pairs_refused: skipped.len(),
        pairs_too_slow: too_slow,
        pairs_shrunk: conf.slow_pairs.len(),
        search_releases_per_side: s,
        confirmations: conf.effort,
        stopped,
        stopped_words,
        cut_short,
        fidelities: fidelities(&trial_sizes, s),
        confirmations_out_of_time: conf.out_of_time,
        failure,
    };
    Ok(LayeredReport {
        kind: "layered-search".into(),
        schema_version: 1,
        finder: finder.name().to_string(),
        plan: None,
        beta_rule: format!(
            "β = {} of the run split evenly over the {running} layer(s) that ran (union bound; a layer skipped on the first trial's releases, before any confirmation, leaves its share to the others), each share split over the layer's {slots} confirm slots; search bounds are exploratory (β = {SEARCH_BETA}, used only to rank pairs, on releases no confirmation sees)",
            readable(audit.failure_probability)
        ),
        layers: out,
        verdict,
        trials_scored: scored,
        skipped,
        mechanism_calls: conf.calls,
        samples_drawn: conf.drawn,
        effort: Some(effort),
        cost: Some(pacing.cost),
    })
}

/// The order in which a layer confirms its trials, best first: trials scored on the search's
/// full size before trials shrunk because the program was slow on their pair (their point
/// estimates, on a few dozen releases, are mostly noise), unless a shrunk trial's exploratory
/// lower bound already exceeds the allowance; then by score, then by index.
fn rank_order(a: &Trial, b: &Trial) -> std::cmp::Ordering {
    let trusted = |t: &Trial| t.releases_per_side.is_none() || t.exploratory_margin > 0.0;
    trusted(b)
        .cmp(&trusted(a))
        .then(b.score.total_cmp(&a.score))
        .then(a.index.cmp(&b.index))
}

/// Seconds of the budget spent: before the search, and since it started.
fn pacing_elapsed(before: f64, start: Instant) -> f64 {
    before + start.elapsed().as_secs_f64()
}

/// Why the search stopped, in words for the program's author.
fn stop_words(
    stopped: StopReason,
    search: &SearchConfig,
    run: usize,
    planned: Option<usize>,
    pacing: &Pacing,
) -> String {
    match stopped {
        StopReason::TrialLimit => format!("the {} trial(s) asked for were all run", search.trials),
        StopReason::FinderExhausted => "the finder had no more pairs to propose".into(),
        StopReason::SlotsUsed => {
            "every layer found a violation or used its confirmation slots".into()
        }
        StopReason::Budget => {
            let budget = search.budget_seconds.unwrap_or(0.0);
            let short = match planned {
                Some(p) if (run as f64) < 0.8 * p as f64 => format!(
                    " — well short of the {p} planned: the program ran slower than the probe measured ({} per start, {} per release now)",
                    duration(pacing.cost.seconds_per_call),
                    duration(pacing.cost.seconds_per_release)
                ),
                _ => String::new(),
            };
            format!(
                "the time budget of {} s held only the confirmations still owed after {run} trials{short}; a longer --budget runs more trials",
                readable(budget)
            )
        }
        StopReason::SearchTime => format!(
            "the search's time limit (--max-search-seconds {}) was reached after {run} trials",
            readable(search.wall_clock_seconds.unwrap_or(0.0))
        ),
        StopReason::SampleLimit => {
            format!("the limit on releases drawn was reached after {run} trials")
        }
        StopReason::Refusals => format!(
            "the program refused each of the first {MAX_LEADING_REFUSALS} pairs proposed (see the refusals)"
        ),
        StopReason::Deadline => format!(
            "the time budget of {} s ran out after {run} trials (a call was stopped at the run's deadline, or no confirmation fit the time left); a longer --budget runs more",
            readable(search.budget_seconds.unwrap_or(0.0))
        ),
        StopReason::Failure => format!(
            "a call failed after {run} trials, once a violation was already confirmed (the failure is reported beside the verdict)"
        ),
    }
}

/// The fidelities of a search: how many pairs were scored at each size (releases per side),
/// the planned size first.
fn fidelities(sizes: &[usize], planned: usize) -> Vec<Fidelity> {
    let mut out: Vec<Fidelity> = Vec::new();
    for &n in sizes {
        match out.iter_mut().find(|f| f.releases_per_side == n) {
            Some(f) => f.pairs += 1,
            None => out.push(Fidelity {
                releases_per_side: n,
                pairs: 1,
            }),
        }
    }
    out.sort_by_key(|f| {
        (
            f.releases_per_side != planned,
            std::cmp::Reverse(f.releases_per_side),
        )
    });
    out
}

/// The pairs the layers would confirm if the search stopped now: each open layer's
/// best-ranked pairs it has not confirmed, one per open slot; distinct pairs in order of first
/// appearance (layers in order, each by rank), each with the (layer, trial position) that want
/// it.
fn end_phase_pairs(states: &[State], slots: usize) -> Vec<(DatasetPair, Vec<(usize, usize)>)> {
    let mut out: Vec<(DatasetPair, Vec<(usize, usize)>)> = Vec::new();
    for (li, st) in states.iter().enumerate() {
        if !st.open(slots) {
            continue;
        }
        let mut ranked: Vec<(usize, &Trial)> = st.trials.iter().enumerate().collect();
        ranked.sort_by(|(_, a), (_, b)| rank_order(a, b));
        let mut want = slots - st.confirmations.len();
        let mut seen: Vec<&DatasetPair> = Vec::new();
        for (k, t) in ranked {
            if want == 0 {
                break;
            }
            if st.confirmed.contains(&t.pair) || seen.contains(&&t.pair) {
                continue;
            }
            seen.push(&t.pair);
            want -= 1;
            match out.iter_mut().find(|(p, _)| *p == t.pair) {
                Some((_, w)) => w.push((li, k)),
                None => out.push((t.pair.clone(), vec![(li, k)])),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::finders::cost::CostModel;

    #[test]
    fn the_plan_fits_the_budget_or_says_why() {
        let defaults = (200_000, 5_000, 3);
        let fit =
            |call: f64, release: f64, sizes: (Option<usize>, Option<usize>, Option<usize>)| {
                let cost = CostModel::new(call, release, 2, 50_000);
                RunPlan::fit(&cost, 60.0, 1.0, 2, sizes.0, sizes.1, sizes.2, defaults)
            };
        // A fast program: full sizes, three slots.
        let p = fit(0.04, 1e-6, (None, None, None));
        assert_eq!((p.samples_per_side, p.confirm_per_layer), (200_000, 3));
        assert!(
            p.total_seconds() <= 60.0 && p.over_budget.is_none(),
            "{p:?}"
        );
        // A start-up of 0.4 s: the confirmations are cheap, the search gets the rest, and many
        // more than three trials.
        let p = fit(0.4, 2e-6, (None, None, None));
        assert_eq!((p.samples_per_side, p.confirm_per_layer), (200_000, 3));
        assert!(p.trials >= 50, "{p:?}");
        assert!(p.total_seconds() <= 60.0, "{p:?}");
        // 150 µs per release: smaller confirmations, still within the budget.
        let p = fit(0.05, 150e-6, (None, None, None));
        assert!(p.samples_per_side >= MIN_PLANNED_SAMPLES, "{p:?}");
        assert!(
            p.total_seconds() <= 1.2 * 60.0 && p.over_budget.is_none(),
            "{p:?}"
        );
        assert!(p.trials >= 10, "{p:?}");
        // 10 ms per release: small confirmations, and at least MIN_SEARCH_PAIRS screening
        // trials of the smallest size, within the budget.
        let p = fit(0.05, 10e-3, (None, None, None));
        assert!(p.samples_per_side >= MIN_TIMED_CONFIRM_SAMPLES, "{p:?}");
        assert_eq!(p.search_samples, MIN_PLANNED_SEARCH_SAMPLES, "{p:?}");
        assert!(p.trials >= MIN_SEARCH_PAIRS, "{p:?}");
        assert!(p.total_seconds() <= 60.0, "{p:?}");
        // A start-up of 3 s and 5 ms per release (a DP library's pipeline): 10 pairs.
        let p = fit(3.0, 5e-3, (None, None, None));
        assert!(p.trials >= MIN_SEARCH_PAIRS, "{p:?}");
        assert!(p.total_seconds() <= 60.0, "{p:?}");
        // 0.5 s per release: not even the smallest confirmation fits, and the plan says so.
        let p = fit(0.05, 0.5, (None, None, None));
        assert_eq!(p.samples_per_side, MIN_TIMED_CONFIRM_SAMPLES);
        assert!(p.over_budget.is_some(), "{p:?}");
        assert!(p.describe().contains("OVER BUDGET"));
        // The user's sizes are kept.
        let p = fit(0.05, 150e-6, (Some(100_000), Some(1000), Some(3)));
        assert_eq!(
            (p.samples_per_side, p.search_samples, p.confirm_per_layer),
            (100_000, 1000, 3)
        );
    }
}
