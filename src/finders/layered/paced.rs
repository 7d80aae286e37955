//! The paced layered search as named steps, like argmin's `Executor` whose run loop only calls
//! its solver's hooks: [`search_and_confirm_paced`] checks the settings, runs waves until a
//! stop rule ends the search ([`PacedSearch::search`]: width, ask, score, refit, take), confirms
//! the slots left, and writes the record. The state every step reads is one [`PacedSearch`].

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::confirm::Confirmer;
use super::plan::duration;
use super::trial::{Scored, ScoredLayers, TrialScorer, one_call_fits};
use super::{FLOAT_COORDS, LayerSearch, LayeredReport, Pacing, State};
use crate::audit::{AuditConfig, Verdict};
use crate::error::{Error, Result};
use crate::finders::cost::CallLog;
use crate::finders::{
    CHECKPOINT_TRIALS, DatasetFinder, MAX_LEADING_REFUSALS, SEARCH_BETA, SearchConfig,
    SearchProgress, SearchReport, SkippedTrial, Trial,
};
use crate::mechanisms::math::readable;
use crate::mechanisms::{DatasetPair, Mechanism, MechanismError, PrivacyClaim};
use crate::record::effort::{Fidelity, SearchEffort, StopReason};
use crate::record::layers::{LayerKind, LayerVerdict};
use crate::rng::chunk_len;
use crate::testers::PropertyTester;

/// [`search_and_confirm_layered`](super::search_and_confirm_layered) paced by `pacing` (see the
/// [layered module docs](super) and [`crate::finders::cost`]).
///
/// The trials run in waves: each wave asks the finder for up to the cost model's
/// [`crate::finders::cost::CostModel::wave_width`] pairs whose proposals do not depend on scores
/// not yet told ([`DatasetFinder::next_is_independent`]), draws and scores them at once, then takes
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
    pacing: Pacing,
    observe: &dyn Fn(&SearchProgress),
) -> Result<LayeredReport> {
    validate_layers(mechanism, search, audit, layers)?;
    let log = CallLog::default();
    let mut run = PacedSearch::new(
        mechanism, claim, finder, testers, search, audit, layers, pacing, observe, &log,
    );
    let stopped = run.search()?;
    if run.scored == 0 {
        return Err(crate::finders::no_pair_scored(&run.skipped));
    }
    run.confirm_remaining()?;
    Ok(run.into_report(stopped))
}

/// Checks a layered run's settings: at least one layer, and sizes at which every layer's view
/// can be audited, in a confirmation and in a trial.
fn validate_layers(
    mechanism: &dyn Mechanism,
    search: &SearchConfig,
    audit: &AuditConfig,
    layers: &[LayerKind],
) -> Result<()> {
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
    Ok(())
}

/// The state of a paced layered search, which every step reads and updates: the target, the
/// layers' rankings and confirmations, the counts, the cost model, and the finder it steers.
struct PacedSearch<'a> {
    mechanism: &'a dyn Mechanism,
    claim: &'a PrivacyClaim,
    finder: &'a mut dyn DatasetFinder,
    testers: &'a [Box<dyn PropertyTester>],
    search: &'a SearchConfig,
    audit: &'a AuditConfig,
    layers: &'a [LayerKind],
    /// The cost model (refit after every wave and confirmation) and the plan.
    pacing: Pacing,
    observe: &'a dyn Fn(&SearchProgress),
    /// Every call's time, for the cost model.
    log: &'a CallLog,
    /// When the search started.
    start: Instant,
    /// Confirm slots per layer.
    slots: usize,
    /// Releases per program call when the search started (what a trial's calls are counted in).
    call_len: usize,
    /// Per-layer state, in the order of `layers`.
    states: Vec<State>,
    /// The layer whose scores the finder is told.
    steer: LayerKind,
    /// The confirmations' shared state, and the run's counts of calls and releases.
    conf: Confirmer<'a>,
    /// Proposals the program refused or was too slow on.
    skipped: Vec<SkippedTrial>,
    /// A failure after the search has an answer (a confirmation, or a violation): reported
    /// beside it instead of ending the run without one.
    failure: Option<String>,
    /// Releases per side of every scored trial, in order (the fidelities of the record).
    trial_sizes: Vec<usize>,
    /// The best score told the finder so far.
    best_score: f64,
    /// Pairs scored.
    scored: usize,
    /// Trials taken (scored or skipped).
    proposed: usize,
    /// The largest seconds per release seen on a pair the program was slow on.
    slow_hint: f64,
    /// Proposals skipped because the program was too slow on them (not refusals of the data).
    too_slow: usize,
}

impl<'a> PacedSearch<'a> {
    /// The state before the first wave: every layer open at an even share of β, no trial yet,
    /// confirmations priced by `pacing`'s cost model and timed against its deadline.
    #[allow(clippy::too_many_arguments)]
    fn new(
        mechanism: &'a dyn Mechanism,
        claim: &'a PrivacyClaim,
        finder: &'a mut dyn DatasetFinder,
        testers: &'a [Box<dyn PropertyTester>],
        search: &'a SearchConfig,
        audit: &'a AuditConfig,
        layers: &'a [LayerKind],
        pacing: Pacing,
        observe: &'a dyn Fn(&SearchProgress),
        log: &'a CallLog,
    ) -> Self {
        let start = Instant::now();
        let slots = search.confirm_top;
        let states: Vec<State> = layers
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
        let conf = Confirmer {
            mechanism,
            claim,
            testers,
            audit,
            slots,
            pairs: Vec::new(),
            cache: None,
            calls: 0,
            drawn: 0,
            log,
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
                let soft = start + Duration::from_secs_f64((budget - pacing.spent_before).max(0.0));
                Some((soft.min(hard), hard))
            }),
            out_of_time: 0,
        };
        PacedSearch {
            mechanism,
            claim,
            finder,
            testers,
            search,
            audit,
            layers,
            pacing,
            observe,
            log,
            start,
            slots,
            call_len: chunk_len(mechanism),
            states,
            steer,
            conf,
            skipped: Vec::new(),
            failure: None,
            trial_sizes: Vec::new(),
            best_score: f64::NEG_INFINITY,
            scored: 0,
            proposed: 0,
            slow_hint: 0.0,
            too_slow: 0,
        }
    }

    /// Runs waves of trials until a stop rule ends the search, and says which.
    fn search(&mut self) -> Result<StopReason> {
        loop {
            let width = match self.next_wave_width() {
                ControlFlow::Continue(width) => width,
                ControlFlow::Break(stopped) => return Ok(stopped),
            };
            let wave = self.ask_wave(width)?;
            if wave.is_empty() {
                return Ok(StopReason::FinderExhausted);
            }
            let first_index = self.proposed;
            let outcomes = self.score_wave(wave, first_index);
            self.refit(&outcomes);
            if let Some(stopped) = self.take_wave(outcomes, first_index)? {
                return Ok(stopped);
            }
        }
    }

    /// Seconds of the budget spent: before the search, and since it started.
    fn elapsed(&self) -> f64 {
        pacing_elapsed(self.pacing.spent_before, self.start)
    }

    /// Confirm slots still open, over the layers.
    fn open_slots(&self) -> usize {
        self.states
            .iter()
            .filter(|st| st.open(self.slots))
            .map(|st| self.slots - st.confirmations.len())
            .sum()
    }

    /// The next wave's width, or the stop rule that ends the search before it: the trial limit,
    /// every slot used, the search's time limit, the time budget, the limit on releases.
    fn next_wave_width(&self) -> ControlFlow<StopReason, usize> {
        let search = self.search;
        let s = search.search_samples;
        if self.proposed >= search.trials {
            return ControlFlow::Break(StopReason::TrialLimit);
        }
        let open_slots = self.open_slots();
        if self.proposed > 0 && open_slots == 0 {
            return ControlFlow::Break(StopReason::SlotsUsed);
        }
        if self.proposed > 0
            && let Some(limit) = search.wall_clock_seconds
            && (limit.is_nan() || self.start.elapsed().as_secs_f64() > limit)
        {
            return ControlFlow::Break(StopReason::SearchTime);
        }
        // The wave's width: what keeps the pool busy, at most the trials left, and (with a
        // budget) at most what fits beside the confirmations owed.
        let mut width = self
            .pacing
            .cost
            .wave_width(s)
            .min(search.trials - self.proposed)
            .max(1);
        if let Some(budget) = search.budget_seconds {
            width = self.fit_wave_to_budget(width, budget, open_slots)?;
        }
        if let Some(m) = search.max_samples {
            let owed = 2 * self.audit.samples_per_side as u64 * open_slots as u64;
            while width > 0 && self.conf.drawn + 2 * (s * width) as u64 + owed > m {
                width -= 1;
            }
            if width == 0 {
                return ControlFlow::Break(StopReason::SampleLimit);
            }
        }
        ControlFlow::Continue(width)
    }

    /// The widest wave, at most `width`, that fits `budget` beside the confirmations owed (the
    /// distinct pairs the layers would confirm now, plus one per trial of the wave, at most
    /// `open_slots`); the budget's stop when none fits once the plan's first trials have run.
    fn fit_wave_to_budget(
        &self,
        mut width: usize,
        budget: f64,
        open_slots: usize,
    ) -> ControlFlow<StopReason, usize> {
        let s = self.search.search_samples;
        let n = self.audit.samples_per_side;
        let owed = end_phase_pairs(&self.states, self.slots).len();
        // The confirmations owed at their central price: they are sized to the time left
        // when they run (and the deadline bounds them), so the slow calls' factor, which
        // prices the next wave, would only stop the search early.
        let mut central = self.pacing.cost.clone();
        central.price_factor = 1.0;
        let fits = |w: usize| {
            let pairs = (owed + w).min(open_slots);
            self.elapsed()
                + self.pacing.cost.wave_seconds(s, w)
                + pairs as f64 * central.confirm_seconds(n)
                <= budget
        };
        while width > 1 && !fits(width) {
            width -= 1;
        }
        // The first trials of the plan (up to CHECKPOINT_TRIALS) run unless the budget is
        // spent outright: a machine that turned slower than the probe measured costs some
        // overrun, not the search. A run scores at least one pair.
        let floor = self
            .pacing
            .planned_trials
            .unwrap_or(1)
            .clamp(1, CHECKPOINT_TRIALS);
        let spent = self.elapsed() + self.pacing.cost.wave_seconds(s, width) > budget;
        if self.proposed > 0 && !fits(width) && (self.proposed >= floor || spent) {
            return ControlFlow::Break(StopReason::Budget);
        }
        ControlFlow::Continue(width)
    }

    /// Asks the finder for up to `width` pairs, stopping before one whose proposal would depend
    /// on scores not yet told; empty when the finder has no more.
    fn ask_wave(&mut self, width: usize) -> Result<Vec<DatasetPair>> {
        let mut wave: Vec<DatasetPair> = Vec::new();
        while wave.len() < width {
            if !wave.is_empty() && !self.finder.next_is_independent() {
                break;
            }
            match self.finder.ask()? {
                Some(p) => wave.push(p),
                None => break,
            }
        }
        Ok(wave)
    }

    /// Draws and scores the wave's trials (numbered from `first_index`) at once, in parallel.
    fn score_wave(&self, wave: Vec<DatasetPair>, first_index: usize) -> Vec<Result<Scored>> {
        let s = self.search.search_samples;
        let float_skipped = self
            .states
            .iter()
            .any(|st| st.kind == LayerKind::FloatingPoint && st.skipped.is_some());
        // With a budget, a trial's call gets a limit: four times its price, and at least 2 %
        // of the budget and 1 s; a program slower than that on a pair is asked for fewer
        // releases there (see draw_trial). A price the probe could not measure (its calls were
        // stopped at their limit) is only a lower bound: the limit is then at least a quarter
        // of the budget, so that one pair the program is slow on cannot spend the whole budget
        // and a program slow everywhere meets --exec-timeout (when shorter) by its name.
        if let Some(budget) = self.search.budget_seconds {
            let price = self.pacing.cost.call_seconds(s.min(self.pacing.cost.batch));
            let mut limit = (4.0 * price).max(0.02 * budget).max(1.0);
            if self.pacing.cost.censored {
                limit = limit.max(0.25 * budget);
            }
            self.mechanism
                .set_call_limit(Some(Duration::from_secs_f64(limit)));
        }
        let scorer = TrialScorer {
            mechanism: self.mechanism,
            claim: self.claim,
            testers: self.testers,
            audit: self.audit,
            layers: self.layers,
            log: self.log,
            search_samples: s,
            startup: self.pacing.cost.seconds_per_call,
            hint: self.slow_hint,
            float_skipped,
        };
        let outcomes: Vec<Result<Scored>> = wave
            .into_par_iter()
            .enumerate()
            .map(|(w, pair)| scorer.score(first_index + w, pair))
            .collect();
        self.mechanism.set_call_limit(None);
        outcomes
    }

    /// Refits the cost model on the calls of the wave and on the testers' time.
    fn refit(&mut self, outcomes: &[Result<Scored>]) {
        self.pacing.cost.observe(self.log);
        for o in outcomes.iter().flatten() {
            if let Ok(sl) = &o.outcome {
                self.pacing.cost.observe_scoring(sl.scoring.0, sl.scoring.1);
            }
        }
    }

    /// Takes the wave's trials in trial order, as a one-at-a-time search would; the stop rule
    /// that ends the search on one of them, if any (the wave's later trials go unrecorded).
    fn take_wave(
        &mut self,
        outcomes: Vec<Result<Scored>>,
        first_index: usize,
    ) -> Result<Option<StopReason>> {
        for (w, outcome) in outcomes.into_iter().enumerate() {
            let index = first_index + w;
            if w > 0 && !self.states.iter().any(|st| st.open(self.slots)) {
                return Ok(Some(StopReason::SlotsUsed));
            }
            let Scored { pair, outcome } = match outcome {
                Ok(o) => o,
                Err(e) => return self.fail(e).map(Some),
            };
            if let Err((MechanismError::OutOfTime { .. }, _)) = &outcome {
                // The deadline stopped the trial: the search is over, its partial draw unused.
                return Ok(Some(StopReason::Deadline));
            }
            self.proposed += 1;
            let stopped = match outcome {
                Ok(sl) => self.take_scored(index, pair, sl)?,
                Err((e, slow_rate)) => self.skip(index, pair, &e, slow_rate),
            };
            if stopped.is_some() {
                return Ok(stopped);
            }
        }
        Ok(None)
    }

    /// A call's failure: once a violation is confirmed, kept beside the answer and the search
    /// stops ([`StopReason::Failure`]); before that, the run's error.
    fn fail(&mut self, e: Error) -> Result<StopReason> {
        if self.states.iter().any(|st| st.found) {
            self.failure = Some(e.to_string());
            Ok(StopReason::Failure)
        } else {
            Err(e)
        }
    }

    /// Records a trial the program refused (or was too slow on), telling the finder the worst
    /// score seen; the stop when the program refused each of the first proposals.
    fn skip(
        &mut self,
        index: usize,
        pair: DatasetPair,
        e: &MechanismError,
        slow_rate: Option<f64>,
    ) -> Option<StopReason> {
        let worst = self
            .states
            .iter()
            .find(|st| st.kind == self.steer)
            .map(|st| st.trials.iter().map(|t| t.score).fold(-1.0_f64, f64::min))
            .unwrap_or(-1.0);
        self.finder.tell(worst);
        if let Some(rate) = slow_rate {
            self.too_slow += 1;
            // The slowness measured, for the next slow pair.
            self.slow_hint = self.slow_hint.max(rate);
        }
        self.skipped.push(SkippedTrial {
            index,
            pair,
            error: e.to_string(),
        });
        // A program that refuses every one of the first proposals (NaN on every dataset, a
        // crash on start-up) ends the search now instead of spending the budget; pairs skipped
        // as too slow do not count (the budget bounds them).
        if self.scored == 0 && self.skipped.len() - self.too_slow >= MAX_LEADING_REFUSALS {
            return Some(StopReason::Refusals);
        }
        None
    }

    /// Takes a scored trial: counts it, decides the floating-point layer on the first, ranks it
    /// in each layer and tells the finder, confirms it where it is promising, and runs the
    /// checkpoint; the stop rule a confirmation ended the search with, if any.
    fn take_scored(
        &mut self,
        index: usize,
        pair: DatasetPair,
        sl: ScoredLayers,
    ) -> Result<Option<StopReason>> {
        self.count_trial(&pair, &sl);
        // The first scored trial decides whether the floating-point layer runs (see the
        // module docs): before any confirmation, on search releases only.
        if self.scored == 0 && sl.integer {
            self.skip_float_layer();
        }
        self.scored += 1;
        let margins = self.rank_trial(index, &pair, &sl);
        if let Some(stopped) = self.confirm_promising(&pair, &margins)? {
            return Ok(Some(stopped));
        }
        self.checkpoint(index)
    }

    /// Counts a scored trial's calls and releases, and notes a pair the program was slow on.
    fn count_trial(&mut self, pair: &DatasetPair, sl: &ScoredLayers) {
        let size = sl.slow.map_or(self.search.search_samples, |(size, _)| size);
        self.trial_sizes.push(size);
        self.conf.calls += if one_call_fits(self.mechanism, pair, size) {
            1
        } else {
            2 * size.div_ceil(self.call_len) as u64
        };
        self.conf.drawn += 2 * size as u64;
        if let Some((_, rate)) = sl.slow
            && !self.conf.slow_pairs.iter().any(|(p, _)| p == pair)
        {
            self.conf.slow_pairs.push((pair.clone(), rate));
            self.slow_hint = self.slow_hint.max(rate);
        }
    }

    /// Skips the floating-point layer (every output of the first scored trial is an integer,
    /// whose representation is exact); its share of β goes to the layers still running.
    fn skip_float_layer(&mut self) {
        let states = &mut self.states;
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
                    other.beta = self.audit.failure_probability / (running - 1) as f64;
                }
            }
        }
    }

    /// Adds a scored trial to the ranking of each running layer that scored it and tells the
    /// finder its score (the steering layer's, else the best); returns each of those layers'
    /// exploratory margin and floating-point coordinates.
    fn rank_trial(
        &mut self,
        index: usize,
        pair: &DatasetPair,
        sl: &ScoredLayers,
    ) -> Vec<(usize, f64, Option<Vec<usize>>)> {
        let steer = self.steer;
        let mut steer_score = None;
        let mut margins: Vec<(usize, f64, Option<Vec<usize>>)> = Vec::new();
        for (li, st) in self.states.iter_mut().enumerate() {
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
            self.states
                .iter()
                .filter_map(|st| st.trials.last().map(|t| t.score))
                .fold(f64::NEG_INFINITY, f64::max)
        });
        self.finder.tell(told);
        self.best_score = self.best_score.max(told);
        self.show(false);
        margins
    }

    /// Confirms the pair just scored at once in each layer it is promising for (exploratory
    /// margin above zero) that has a slot open.
    fn confirm_promising(
        &mut self,
        pair: &DatasetPair,
        margins: &[(usize, f64, Option<Vec<usize>>)],
    ) -> Result<Option<StopReason>> {
        for (li, margin, coords) in margins {
            if *margin > 0.0 && self.states[*li].open(self.slots) {
                let owed = 1 + end_phase_pairs(&self.states, self.slots).len();
                if let Some(stopped) =
                    self.confirm_during_search(*li, pair, coords.as_deref(), owed)?
                {
                    return Ok(Some(stopped));
                }
            }
        }
        Ok(None)
    }

    /// The checkpoint (see [`crate::finders::search_and_confirm`]): after trial
    /// [`CHECKPOINT_TRIALS`], each open layer with no confirmation yet confirms its best pair.
    fn checkpoint(&mut self, index: usize) -> Result<Option<StopReason>> {
        let slots = self.slots;
        if !(index + 1 == CHECKPOINT_TRIALS && slots >= 2 && self.search.trials > CHECKPOINT_TRIALS)
        {
            return Ok(None);
        }
        for li in 0..self.states.len() {
            let st = &self.states[li];
            if !(st.open(slots) && st.confirmations.is_empty()) {
                continue;
            }
            let best = st
                .trials
                .iter()
                .enumerate()
                .min_by(|(_, a), (_, b)| rank_order(a, b))
                .map(|(k, t)| (t.pair.clone(), st.coords[k].clone()));
            if let Some((pair, coords)) = best {
                let owed = end_phase_pairs(&self.states, slots).len().max(1);
                if let Some(stopped) =
                    self.confirm_during_search(li, &pair, coords.as_deref(), owed)?
                {
                    return Ok(Some(stopped));
                }
            }
        }
        Ok(None)
    }

    /// A confirmation during the search, shown on the progress line; the stop rule when it
    /// ends the search (no time left for it, or a failure after a violation).
    fn confirm_during_search(
        &mut self,
        li: usize,
        pair: &DatasetPair,
        coords: Option<&[usize]>,
        owed: usize,
    ) -> Result<Option<StopReason>> {
        self.show(true);
        match self.confirm(li, pair, coords, owed) {
            Ok(true) => {}
            Ok(false) => return Ok(Some(StopReason::Deadline)),
            Err(e) => return self.fail(e).map(Some),
        }
        self.show(false);
        Ok(None)
    }

    /// Confirms `pair` for layer `li` at the cost model's current prices (`owed`: the
    /// confirmations still owed, which share the time left), then refits the model on its
    /// calls; false when the time left had no room for it.
    fn confirm(
        &mut self,
        li: usize,
        pair: &DatasetPair,
        coords: Option<&[usize]>,
        owed: usize,
    ) -> Result<bool> {
        self.conf.cost = self.pacing.cost.clone();
        let ran = self
            .conf
            .confirm(&mut self.states, li, pair, coords, owed)?;
        if ran {
            self.pacing.cost.observe(self.log);
        }
        Ok(ran)
    }

    /// The end phase: each layer's best-ranked pairs it has not confirmed fill its remaining
    /// slots, pair by pair (a pair wanted by both layers is drawn once and confirmed for both),
    /// until one finds no time left or a call fails after a violation was confirmed.
    fn confirm_remaining(&mut self) -> Result<()> {
        self.show(true);
        let end_pairs = if self.failure.is_some() {
            Vec::new()
        } else {
            end_phase_pairs(&self.states, self.slots)
        };
        let total = end_pairs.len();
        'end: for (done, (pair, wanted)) in end_pairs.into_iter().enumerate() {
            for (li, k) in wanted {
                if !self.states[li].open(self.slots) {
                    continue;
                }
                let coords = self.states[li].coords[k].clone();
                match self.confirm(li, &pair, coords.as_deref(), total - done) {
                    Ok(true) => {}
                    // Out of time: the confirmations left are not run either.
                    Ok(false) => break 'end,
                    Err(e) if self.states.iter().any(|st| st.found) => {
                        self.failure = Some(e.to_string());
                        break 'end;
                    }
                    Err(e) => return Err(e),
                }
                self.show(true);
            }
        }
        self.pacing.cost.observe(self.log);
        Ok(())
    }

    /// The progress line's figures now (`confirming`: whether a confirmation is running).
    fn progress(&self, confirming: bool) -> SearchProgress {
        SearchProgress {
            trials_done: self.scored,
            trials_max: self.search.trials,
            trials_planned: self.pacing.planned_trials,
            confirming,
            confirmations_done: self.states.iter().map(|st| st.confirmations.len()).sum(),
            confirm_top: self.slots * self.states.iter().filter(|st| st.skipped.is_none()).count(),
            samples_drawn: self.conf.drawn,
            elapsed_seconds: self.start.elapsed().as_secs_f64(),
            budget_seconds: self.search.budget_seconds,
            best_score: self.best_score,
        }
    }

    /// Shows the progress now to the observer.
    fn show(&self, confirming: bool) {
        (self.observe)(&self.progress(confirming));
    }

    /// The run's record: each layer's answer and search, the run's verdict, β rule and effort.
    fn into_report(mut self, stopped: StopReason) -> LayeredReport {
        let running = self.states.iter().filter(|st| st.skipped.is_none()).count();
        let states = std::mem::take(&mut self.states);
        let mechanism_violates = states
            .iter()
            .any(|st| st.kind == LayerKind::Mechanism && st.found);
        let layers: Vec<LayerSearch> = states
            .into_iter()
            .map(|st| self.layer_search(st, mechanism_violates))
            .collect();
        let verdict = if layers
            .iter()
            .any(|l| l.verdict.verdict == Some(Verdict::Violation))
        {
            Verdict::Violation
        } else {
            Verdict::NoViolation
        };
        let effort = self.effort(stopped);
        let slots = self.slots;
        LayeredReport {
            kind: "layered-search".into(),
            schema_version: 1,
            finder: self.finder.name().to_string(),
            plan: None,
            beta_rule: format!(
                "β = {} of the run split evenly over the {running} layer(s) that ran (union bound; a layer skipped on the first trial's releases, before any confirmation, leaves its share to the others), each share split over the layer's {slots} confirm slots; search bounds are exploratory (β = {SEARCH_BETA}, used only to rank pairs, on releases no confirmation sees)",
                readable(self.audit.failure_probability)
            ),
            layers,
            verdict,
            trials_scored: self.scored,
            skipped: self.skipped,
            mechanism_calls: self.conf.calls,
            samples_drawn: self.conf.drawn,
            effort: Some(effort),
            cost: Some(self.pacing.cost),
        }
    }

    /// One layer's part of the record: skipped with its reason, else its answer (the
    /// floating-point layer's read beside a violation of the mechanism layer), trials, score
    /// percentiles, β rule and confirmations.
    fn layer_search(&self, st: State, mechanism_violates: bool) -> LayerSearch {
        let slots = self.slots;
        if let Some(why) = &st.skipped {
            return LayerSearch {
                verdict: LayerVerdict::skipped(st.kind, why),
                search: None,
            };
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
        LayerSearch {
            search: Some(SearchReport {
                finder: self.finder.name().to_string(),
                config: self.search.clone(),
                score_percentiles: [0.0, 10.0, 50.0, 90.0, 100.0].map(pct).to_vec(),
                trials: st.trials,
                skipped: self.skipped.clone(),
                beta_rule: format!(
                    "layer {}: β share {} split evenly over its {slots} confirm slots: {} per confirming audit (union bound), whether or not every slot is used",
                    st.kind.title(),
                    readable(st.beta),
                    readable(st.beta / slots as f64)
                ),
                verdict: verdict.verdict.unwrap_or(Verdict::NoViolation),
                confirmations: st.confirmations,
                // The releases are shared by the layers: the run's totals.
                mechanism_calls: self.conf.calls,
                samples_drawn: self.conf.drawn,
            }),
            verdict,
        }
    }

    /// How hard the search looked and why it stopped (takes the confirmations' efforts and
    /// the failure, which the record holds only here).
    fn effort(&mut self, stopped: StopReason) -> SearchEffort {
        let search = self.search;
        let proposed = self.proposed;
        let pacing = &self.pacing;
        let stopped_words = stop_words(stopped, search, proposed, pacing.planned_trials, pacing);
        let cut_short = stopped.can_cut_short()
            && (stopped == StopReason::Refusals
                || pacing
                    .planned_trials
                    .is_none_or(|p| (proposed as f64) < 0.8 * p as f64));
        SearchEffort {
            trials_planned: pacing.planned_trials,
            trials_run: proposed,
            pairs_scored: self.scored,
            pairs_refused: self.skipped.len(),
            pairs_too_slow: self.too_slow,
            pairs_shrunk: self.conf.slow_pairs.len(),
            search_releases_per_side: search.search_samples,
            confirmations: std::mem::take(&mut self.conf.effort),
            stopped,
            stopped_words,
            cut_short,
            fidelities: fidelities(&self.trial_sizes, search.search_samples),
            confirmations_out_of_time: self.conf.out_of_time,
            failure: self.failure.take(),
        }
    }
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
