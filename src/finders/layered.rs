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
use crate::rng::{Seed, Side, Stream, chunk_len, sample_parallel};
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

/// How long each part of a run is expected to take at the speed measured on the probe, and
/// the sizes chosen to fit the budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunPlan {
    /// Seconds per program call (start-up), measured.
    pub seconds_per_call: f64,
    /// Seconds per release beyond the start-up, measured.
    pub seconds_per_release: f64,
    /// Releases per side of each exploratory trial.
    pub search_samples: usize,
    /// Trials the search is expected to score (it stops by the clock).
    pub trials: usize,
    /// Confirm slots per layer.
    pub confirm_per_layer: usize,
    /// Releases per side of each confirmation.
    pub samples_per_side: usize,
    /// Layers planned for.
    pub layers: usize,
    /// Estimated seconds of the search.
    pub search_seconds: f64,
    /// Estimated seconds of the confirmations (every slot used).
    pub confirm_seconds: f64,
    /// The time budget.
    pub budget_seconds: f64,
    /// Why the run will exceed the budget, when it will.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_budget: Option<String>,
}

/// Smallest confirmation the planner makes, releases per side: below it an audit has little
/// power for any claim, so a slower program gets this and a plan that says it exceeds the budget.
pub const MIN_PLANNED_SAMPLES: usize = 10_000;
/// Smallest exploratory trial the planner makes, releases per side.
pub const MIN_PLANNED_SEARCH_SAMPLES: usize = 500;
/// Share of the budget the planner gives the confirmations (the rest is the search).
const CONFIRM_SHARE: f64 = 0.6;

impl RunPlan {
    /// Seconds to draw `n` releases on one side: calls of at most `batch` releases, run `jobs`
    /// at a time.
    fn side_seconds(&self, n: usize, batch: usize, jobs: usize) -> f64 {
        let calls = n.div_ceil(batch.max(1)).max(1);
        let waves = calls.div_ceil(jobs.max(1));
        waves as f64 * (self.seconds_per_call + n.min(batch) as f64 * self.seconds_per_release)
    }

    /// Sizes that fit `budget` seconds for `layers` layers at the measured speed.
    /// `samples`, `search_samples`, `confirm`: the user's values when given (kept as they
    /// are), else the planner's choice under the defaults `defaults`.
    #[allow(clippy::too_many_arguments)]
    pub fn fit(
        seconds_per_call: f64,
        seconds_per_release: f64,
        budget: f64,
        layers: usize,
        batch: usize,
        jobs: usize,
        samples: Option<usize>,
        search_samples: Option<usize>,
        confirm: Option<usize>,
        defaults: (usize, usize, usize),
    ) -> RunPlan {
        let mut plan = RunPlan {
            seconds_per_call: seconds_per_call.max(0.0),
            seconds_per_release: seconds_per_release.max(0.0),
            search_samples: search_samples.unwrap_or(defaults.1),
            trials: 0,
            confirm_per_layer: confirm.unwrap_or(defaults.2),
            samples_per_side: samples.unwrap_or(defaults.0),
            layers: layers.max(1),
            search_seconds: 0.0,
            confirm_seconds: 0.0,
            budget_seconds: budget,
            over_budget: None,
        };
        let l = plan.layers as f64;
        let confirm_cost =
            |p: &RunPlan, n: usize, k: usize| l * k as f64 * 2.0 * p.side_seconds(n, batch, jobs);
        let room = CONFIRM_SHARE * budget;
        // The largest n ≤ cap whose k slots fit the room (bisection on a monotone cost).
        let largest_n = |p: &RunPlan, k: usize, cap: usize| -> usize {
            let (mut lo, mut hi) = (0usize, cap);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if confirm_cost(p, mid, k) <= room {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            lo
        };
        match (samples, confirm) {
            (Some(_), Some(_)) => {}
            (Some(n), None) => {
                // Fewer slots when the user's sample size does not fit three.
                plan.confirm_per_layer = (1..=defaults.2)
                    .rev()
                    .find(|&k| confirm_cost(&plan, n, k) <= room)
                    .unwrap_or(1);
            }
            (None, Some(k)) => {
                plan.samples_per_side = largest_n(&plan, k, defaults.0).max(MIN_PLANNED_SAMPLES);
            }
            (None, None) => {
                let full = defaults.0;
                if confirm_cost(&plan, full, defaults.2) <= room {
                    plan.samples_per_side = full;
                } else if largest_n(&plan, 2, full) >= 50_000 {
                    plan.confirm_per_layer = 2;
                    plan.samples_per_side = largest_n(&plan, 2, full);
                } else {
                    plan.confirm_per_layer = 1;
                    plan.samples_per_side = largest_n(&plan, 1, full).max(MIN_PLANNED_SAMPLES);
                }
            }
        }
        plan.confirm_seconds = confirm_cost(&plan, plan.samples_per_side, plan.confirm_per_layer);
        let search_room = (budget - plan.confirm_seconds).max(0.0);
        if search_samples.is_none() {
            // At least 10 trials in the search's share when the program allows it.
            let mut s = defaults.1;
            while s > MIN_PLANNED_SEARCH_SAMPLES
                && 10.0 * 2.0 * plan.side_seconds(s, batch, jobs) > search_room
            {
                s = (s / 2).max(MIN_PLANNED_SEARCH_SAMPLES);
            }
            plan.search_samples = s;
        }
        let trial = 2.0 * plan.side_seconds(plan.search_samples, batch, jobs);
        plan.trials = ((search_room / trial.max(1e-9)).floor() as usize).clamp(1, 100_000);
        plan.search_seconds = plan.trials as f64 * trial;
        let total = plan.total_seconds();
        if total > 1.2 * budget {
            plan.over_budget = Some(format!(
                "one confirmation of {} releases per side takes about {} s at the measured speed ({} per release, {} per program start), so {} confirmation(s) per layer need about {} s; a run with less would have little power. Raise --budget, or lower --samples to trade power for time",
                plan.samples_per_side,
                readable((2.0 * plan.side_seconds(plan.samples_per_side, batch, jobs)).ceil()),
                duration(plan.seconds_per_release),
                duration(plan.seconds_per_call),
                plan.confirm_per_layer,
                readable(plan.confirm_seconds.ceil())
            ));
        }
        plan
    }

    /// Estimated seconds of the whole run.
    pub fn total_seconds(&self) -> f64 {
        self.search_seconds + self.confirm_seconds
    }

    /// The plan in one line.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "plan: measured {} per release and {} per program start; search about {} trials of {} releases per side (~{} s), then up to {} confirmation(s) per layer × {} layer(s) of {} releases per side (~{} s); estimated total ~{} s of the {} s budget",
            duration(self.seconds_per_release),
            duration(self.seconds_per_call),
            self.trials,
            self.search_samples,
            readable(self.search_seconds.ceil()),
            self.confirm_per_layer,
            self.layers,
            self.samples_per_side,
            readable(self.confirm_seconds.ceil()),
            readable(self.total_seconds().ceil()),
            readable(self.budget_seconds)
        );
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
    } else {
        format!("{} µs", readable((seconds * 1e8).round() / 100.0))
    }
}

/// Measures the program's speed on `dataset` from streams no audit reads: one call of 1 release
/// (the start-up), then calls of 200, 2 000 and 20 000 releases until one takes 0.2 s more than
/// the start-up (so that the start-up's jitter does not swamp the per-release time). Returns
/// (seconds per call, seconds per release).
pub fn measure_speed(
    mechanism: &dyn Mechanism,
    dataset: &crate::mechanisms::Dataset,
    seed: u64,
) -> Result<(f64, f64)> {
    let seed = Seed(seed);
    // Tag 0x5EED: the speed probe's streams (no audit reads them).
    let timed = |index: u64, m: usize| -> Result<f64> {
        let mut rng = seed.rng(Stream::Other { tag: 0x5EED, index });
        let t = Instant::now();
        mechanism.sample(dataset, m, &mut rng)?;
        Ok(t.elapsed().as_secs_f64())
    };
    let one = timed(0, 1)?;
    let mut per_release = 0.0;
    for (index, m) in [(1u64, 200usize), (2, 2_000), (3, 20_000)] {
        let extra = (timed(index, m)? - one).max(0.0);
        per_release = extra / (m - 1) as f64;
        if extra >= 0.2 {
            break;
        }
    }
    Ok((one, per_release))
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
fn view(
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
fn float_coords(p: &Samples, q: &Samples) -> Option<Vec<usize>> {
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
fn name_events(r: &mut AuditReport, names: &[String]) {
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
    secs: f64,
    confirm_drawn: u64,
}

impl Confirmer<'_> {
    /// Confirms `pair` for layer `li` on fresh releases from the confirm streams of the pair
    /// (drawn once per distinct pair; a pair confirmed by both layers reuses them).
    fn confirm(
        &mut self,
        states: &mut [State],
        li: usize,
        pair: &DatasetPair,
        coords: Option<&[usize]>,
    ) -> Result<()> {
        let t0 = Instant::now();
        let k = match self.pairs.iter().position(|p| p == pair) {
            Some(k) => k,
            None => {
                self.pairs.push(pair.clone());
                self.pairs.len() - 1
            }
        };
        let (seed, n) = (Seed(self.audit.seed), self.audit.samples_per_side);
        let m = self.mechanism;
        if self.cache.as_ref().is_none_or(|c| c.0 != k) {
            let stream = |side| Phase::Confirm(k as u64).stream_of(side);
            let p = sample_parallel(m, pair.first(), n, seed, stream(Side::First))?;
            let q = sample_parallel(m, pair.second(), n, seed, stream(Side::Second))?;
            self.calls += 2 * n.div_ceil(chunk_len(m)) as u64;
            self.drawn += 2 * n as u64;
            self.confirm_drawn += 2 * n as u64;
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
        self.secs += t0.elapsed().as_secs_f64();
        st.found |= r.verdict == Verdict::Violation;
        st.confirmations.push(r);
        st.confirmed.push(pair.clone());
        Ok(())
    }
}

/// [`super::search_and_confirm_observed`] for several layers at once (see the module docs).
/// `mechanism` returns raw releases (no transform).
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
        secs: 0.0,
        confirm_drawn: 0,
    };
    let mut trial_secs: Vec<f64> = Vec::new();
    let mut best_score = f64::NEG_INFINITY;
    let mut scored = 0usize;
    let call_len = chunk_len(mechanism);

    for index in 0..search.trials {
        let open_slots: usize = states
            .iter()
            .filter(|st| st.open(slots))
            .map(|st| slots - st.confirmations.len())
            .sum();
        if index > 0 && open_slots == 0 {
            break;
        }
        if index > 0
            && let Some(budget) = search.budget_seconds
        {
            // As in search_and_confirm: stop when the time left would not hold the next trial
            // and every open slot's confirmation (each a distinct pair at worst).
            let elapsed = start.elapsed().as_secs_f64();
            let mut sorted = trial_secs.clone();
            sorted.sort_by(f64::total_cmp);
            let median_trial = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
            let rate = if conf.confirm_drawn > 0 {
                conf.secs / conf.confirm_drawn as f64
            } else {
                median_trial / (2 * s) as f64
            };
            let needed = median_trial + rate * 2.0 * n as f64 * open_slots as f64;
            if elapsed >= budget || (index >= 3 && elapsed + needed > budget) {
                break;
            }
        }
        if index > 0
            && let Some(limit) = search.wall_clock_seconds
            && (limit.is_nan() || start.elapsed().as_secs_f64() > limit)
        {
            break;
        }
        if search
            .max_samples
            .is_some_and(|m| conf.drawn + 2 * s as u64 + 2 * n as u64 * open_slots as u64 > m)
        {
            break;
        }
        let Some(pair) = finder.ask()? else { break };
        let t0 = Instant::now();
        let drawn_pair = (|| -> Result<(Samples, Samples)> {
            let p = sample_parallel(
                mechanism,
                pair.first(),
                s,
                seed,
                Phase::Search(index as u64).stream_of(Side::First),
            )?;
            let q = sample_parallel(
                mechanism,
                pair.second(),
                s,
                seed,
                Phase::Search(index as u64).stream_of(Side::Second),
            )?;
            Ok((p, q))
        })();
        let (p, q) = match drawn_pair {
            Ok(x) => x,
            Err(Error::Mechanism(e @ crate::mechanisms::MechanismError::Refused { .. })) => {
                let worst = states
                    .iter()
                    .find(|st| st.kind == steer)
                    .map(|st| st.trials.iter().map(|t| t.score).fold(-1.0_f64, f64::min))
                    .unwrap_or(-1.0);
                finder.tell(worst);
                skipped.push(SkippedTrial {
                    index,
                    pair,
                    error: e.to_string(),
                });
                // A program that refuses every one of the first proposals (NaN on every dataset, a
                // crash on start-up) ends the search now instead of spending the budget.
                if scored == 0 && skipped.len() >= MAX_LEADING_REFUSALS {
                    break;
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        conf.calls += 2 * s.div_ceil(call_len) as u64;
        conf.drawn += 2 * s as u64;
        // The first scored trial decides whether the floating-point layer runs (see the
        // module docs): before any confirmation, on search releases only.
        if scored == 0 && integer_valued(&[&p, &q]) {
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
            let coords = if st.kind == LayerKind::FloatingPoint {
                float_coords(&p, &q)
            } else {
                None
            };
            let (vp, _, _) = view(st.kind, &p, coords.as_deref())?;
            let (vq, _, _) = view(st.kind, &q, coords.as_deref())?;
            let config = AuditConfig {
                seed: audit.seed,
                samples_per_side: s,
                failure_probability: SEARCH_BETA,
            };
            let r = audit_drawn(
                mechanism,
                claim,
                &pair,
                (&vp, &vq),
                testers,
                &config,
                Phase::Search(index as u64).tester_base() + (st.kind.index() << 19),
            )?;
            let score = r
                .bounds
                .iter()
                .map(|b| b.point_estimate - b.allowed)
                .fold(f64::NEG_INFINITY, f64::max);
            let margin = r
                .bounds
                .iter()
                .map(|b| b.value - b.allowed)
                .fold(f64::NEG_INFINITY, f64::max);
            st.trials.push(Trial {
                index,
                pair: pair.clone(),
                score,
                exploratory_margin: margin,
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
        trial_secs.push(t0.elapsed().as_secs_f64());
        let progress = |states: &[State], drawn: u64| SearchProgress {
            trials_done: scored,
            trials_max: search.trials,
            confirmations_done: states.iter().map(|st| st.confirmations.len()).sum(),
            confirm_top: slots * states.iter().filter(|st| st.skipped.is_none()).count(),
            samples_drawn: drawn,
            elapsed_seconds: start.elapsed().as_secs_f64(),
            budget_seconds: search.budget_seconds,
            best_score,
        };
        observe(&progress(&states, conf.drawn));
        // A promising pair is confirmed at once by each layer it is promising for.
        for (li, margin, coords) in &margins {
            if *margin > 0.0 && states[*li].open(slots) {
                conf.confirm(&mut states, *li, &pair, coords.as_deref())?;
                observe(&progress(&states, conf.drawn));
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
                    .max_by(|(_, a), (_, b)| {
                        a.score.total_cmp(&b.score).then(b.index.cmp(&a.index))
                    })
                    .map(|(k, t)| (t.pair.clone(), states[li].coords[k].clone()));
                if let Some((pair, coords)) = best {
                    conf.confirm(&mut states, li, &pair, coords.as_deref())?;
                    observe(&progress(&states, conf.drawn));
                }
            }
        }
    }
    if scored == 0 {
        return Err(super::no_pair_scored(&skipped));
    }
    // Remaining slots: each layer's best-ranked pairs it has not confirmed.
    for li in 0..states.len() {
        let mut ranked: Vec<(usize, Trial)> =
            states[li].trials.iter().cloned().enumerate().collect();
        ranked.sort_by(|(_, a), (_, b)| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        for (k, t) in ranked {
            if !states[li].open(slots) {
                break;
            }
            if states[li].confirmed.contains(&t.pair) {
                continue;
            }
            let coords = states[li].coords[k].clone();
            conf.confirm(&mut states, li, &t.pair, coords.as_deref())?;
        }
    }
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_fits_the_budget_or_says_why() {
        let defaults = (200_000, 5_000, 3);
        // A fast program: full sizes, three slots.
        let p = RunPlan::fit(0.04, 1e-6, 60.0, 2, 50_000, 2, None, None, None, defaults);
        assert_eq!((p.samples_per_side, p.confirm_per_layer), (200_000, 3));
        assert!(
            p.total_seconds() <= 60.0 && p.over_budget.is_none(),
            "{p:?}"
        );
        // 150 µs per release: smaller confirmations, still within the budget.
        let p = RunPlan::fit(0.05, 150e-6, 60.0, 2, 50_000, 2, None, None, None, defaults);
        assert!(p.samples_per_side >= MIN_PLANNED_SAMPLES, "{p:?}");
        assert!(
            p.total_seconds() <= 1.2 * 60.0 && p.over_budget.is_none(),
            "{p:?}"
        );
        assert!(p.trials >= 3, "{p:?}");
        // 10 ms per release: the smallest confirmation does not fit, and the plan says so.
        let p = RunPlan::fit(0.05, 10e-3, 60.0, 2, 50_000, 2, None, None, None, defaults);
        assert_eq!(p.samples_per_side, MIN_PLANNED_SAMPLES);
        assert!(p.over_budget.is_some(), "{p:?}");
        assert!(p.describe().contains("OVER BUDGET"));
        // The user's sizes are kept.
        let p = RunPlan::fit(
            0.05,
            150e-6,
            60.0,
            2,
            50_000,
            2,
            Some(100_000),
            Some(1000),
            Some(3),
            defaults,
        );
        assert_eq!(
            (p.samples_per_side, p.search_samples, p.confirm_per_layer),
            (100_000, 1000, 3)
        );
    }
}
