//! The one-view search and confirm runner ([`super::search_and_confirm_priced`]) as named steps:
//! each trial checks the stop rules, asks the finder, scores the pair and tells the finder, then
//! confirms a promising pair or runs the checkpoint; the remaining slots are confirmed after the
//! search. The state every step reads is one [`PricedSearch`].

use std::ops::ControlFlow;
use std::time::Instant;

use super::cost::CostModel;
use super::{
    CHECKPOINT_TRIALS, DatasetFinder, MAX_LEADING_REFUSALS, SEARCH_BETA, SearchConfig,
    SearchProgress, SearchReport, SkippedTrial, Trial, out_of_time, score_and_margin,
};
use crate::audit::{AuditConfig, AuditReport, Phase, Verdict, audit_pair_in};
use crate::error::{Error, Result};
use crate::mechanisms::math::readable;
use crate::mechanisms::{DatasetPair, Mechanism, MechanismError, PrivacyClaim};
use crate::testers::PropertyTester;

/// The state of a one-view search, which every step reads and updates: the target, the
/// trials and confirmations so far, the counts, and the times that price the budget.
pub(super) struct PricedSearch<'a> {
    mechanism: &'a dyn Mechanism,
    claim: &'a PrivacyClaim,
    finder: &'a mut dyn DatasetFinder,
    testers: &'a [Box<dyn PropertyTester>],
    search: &'a SearchConfig,
    audit: &'a AuditConfig,
    /// The cost model that prices the confirmations owed, when the caller measured one.
    cost_model: Option<&'a CostModel>,
    observe: &'a dyn Fn(&SearchProgress),
    /// The settings of an exploratory trial (β = [`SEARCH_BETA`]).
    search_config: AuditConfig,
    /// The settings of a confirmation (its share of β).
    confirm_config: AuditConfig,
    /// When the search started.
    start: Instant,
    pub(super) trials: Vec<Trial>,
    pub(super) skipped: Vec<SkippedTrial>,
    confirmations: Vec<AuditReport>,
    confirmed_pairs: Vec<DatasetPair>,
    verdict: Verdict,
    /// Mechanism calls in both phases.
    calls: u64,
    /// Releases drawn in both phases, both sides.
    drawn: u64,
    /// Seconds of exploratory audits, and seconds and releases of confirming ones, for the
    /// budget's estimate of what the remaining confirmations will take.
    search_secs: f64,
    confirm_secs: f64,
    confirm_drawn: u64,
    /// Seconds of each scored trial.
    trial_secs: Vec<f64>,
    /// The best score told the finder so far.
    best_score: f64,
}

impl<'a> PricedSearch<'a> {
    /// The state before the first trial, each confirmation at β/`confirm_top`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        mechanism: &'a dyn Mechanism,
        claim: &'a PrivacyClaim,
        finder: &'a mut dyn DatasetFinder,
        testers: &'a [Box<dyn PropertyTester>],
        search: &'a SearchConfig,
        audit: &'a AuditConfig,
        cost_model: Option<&'a CostModel>,
        observe: &'a dyn Fn(&SearchProgress),
    ) -> Self {
        let search_config = AuditConfig {
            seed: audit.seed,
            samples_per_side: search.search_samples,
            failure_probability: SEARCH_BETA,
        };
        let start = Instant::now();
        let confirm_config = AuditConfig {
            failure_probability: audit.failure_probability / search.confirm_top as f64,
            ..audit.clone()
        };
        PricedSearch {
            mechanism,
            claim,
            finder,
            testers,
            search,
            audit,
            cost_model,
            observe,
            search_config,
            confirm_config,
            start,
            trials: Vec::new(),
            skipped: Vec::new(),
            confirmations: Vec::new(),
            confirmed_pairs: Vec::new(),
            verdict: Verdict::NoViolation,
            calls: 0,
            drawn: 0,
            search_secs: 0.0,
            confirm_secs: 0.0,
            confirm_drawn: 0,
            trial_secs: Vec::new(),
            best_score: f64::NEG_INFINITY,
        }
    }

    /// Runs the trials until a stop rule, the finder or a confirmed violation ends the search.
    pub(super) fn search(&mut self) -> Result<()> {
        for index in 0..self.search.trials {
            if self.trial(index)?.is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Trial `index`: the stop rules, the finder's next pair, its exploratory score, then its
    /// confirmation when it is promising, else the checkpoint; `Break` when the search ends.
    fn trial(&mut self, index: usize) -> Result<ControlFlow<()>> {
        if self.stops_before(index) {
            return Ok(ControlFlow::Break(()));
        }
        let Some(pair) = self.finder.ask()? else {
            return Ok(ControlFlow::Break(()));
        };
        let t0 = Instant::now();
        let r = match audit_pair_in(
            self.mechanism,
            self.claim,
            &pair,
            self.testers,
            &self.search_config,
            Phase::Search(index as u64),
        ) {
            Ok(r) => r,
            // The run's deadline stopped the trial: the search is over.
            Err(Error::Mechanism(MechanismError::OutOfTime { .. })) => {
                return Ok(ControlFlow::Break(()));
            }
            Err(Error::Mechanism(e @ MechanismError::Refused { .. })) => {
                return Ok(self.skip(index, pair, &e));
            }
            Err(e) => return Err(e),
        };
        let exploratory_margin = self.take_scored(index, &pair, &r, t0);
        self.check_budget_holds_a_confirmation()?;
        // A promising pair (its exploratory bound already exceeds the allowance) is confirmed
        // at once, using one of the confirm slots; the run stops at a confirmed violation.
        if exploratory_margin > 0.0 && self.confirmations.len() < self.search.confirm_top {
            return Ok(match self.confirm(pair)? {
                Some(false) => ControlFlow::Continue(()),
                Some(true) | None => ControlFlow::Break(()),
            });
        }
        self.checkpoint(index)
    }

    /// The stop rules before trial `index`: the time budget, the search's time limit, and the
    /// limit on releases (which keeps room for the confirm phase).
    fn stops_before(&self, index: usize) -> bool {
        if index > 0
            && let Some(budget) = self.search.budget_seconds
            && self.budget_spent(index, budget)
        {
            return true;
        }
        // The time limit stops the search after at least one scored pair (a limit too short for
        // one trial still audits something); compared in f64 seconds, so no limit can panic.
        if index > 0
            && let Some(limit) = self.search.wall_clock_seconds
            && (limit.is_nan() || self.start.elapsed().as_secs_f64() > limit)
        {
            return true;
        }
        let cost = 2 * self.search.search_samples as u64;
        // Keep room for the confirm phase.
        let confirm_cost = 2 * self.audit.samples_per_side as u64 * self.search.confirm_top as u64;
        let extra = cost + confirm_cost;
        self.search
            .max_samples
            .is_some_and(|m| self.drawn + extra > m)
    }

    /// Whether the time left would not hold the next trial and the remaining confirmations
    /// (measured rates; a run that found nothing spends every slot).
    ///
    /// Before any confirmation is measured, the rate is the median trial's time per release
    /// (the first trials pay warm-up costs a mean would carry): conservative, since a trial
    /// pays a program start per 2 × --search-samples releases and a confirmation per batch.
    /// The estimate is trusted from the third trial on; before that only the elapsed time
    /// itself stops the search.
    fn budget_spent(&self, index: usize, budget: f64) -> bool {
        let search = self.search;
        let elapsed = self.start.elapsed().as_secs_f64();
        let mut sorted = self.trial_secs.clone();
        sorted.sort_by(f64::total_cmp);
        // No trial scored yet (every proposal so far refused): the elapsed time decides.
        let median_trial = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
        let rate = if self.confirm_drawn > 0 {
            self.confirm_secs / self.confirm_drawn as f64
        } else {
            median_trial / (2 * search.search_samples) as f64
        };
        let slots = search.confirm_top - self.confirmations.len();
        let owed = match self.cost_model {
            Some(c) if self.confirm_drawn == 0 => {
                slots as f64 * c.confirm_seconds(self.audit.samples_per_side)
            }
            _ => rate * self.confirm_releases(slots),
        };
        let needed = median_trial + owed;
        elapsed >= budget || (index >= 3 && elapsed + needed > budget)
    }

    /// Releases (both sides) of `slots` confirmations.
    fn confirm_releases(&self, slots: usize) -> f64 {
        2.0 * self.audit.samples_per_side as f64 * slots as f64
    }

    /// Records a pair the program refused, telling the finder the lowest score seen so far;
    /// `Break` when the program refused each of the first proposals.
    fn skip(&mut self, index: usize, pair: DatasetPair, e: &MechanismError) -> ControlFlow<()> {
        let worst = self.trials.iter().map(|t| t.score).fold(-1.0_f64, f64::min);
        self.finder.tell(worst);
        self.skipped.push(SkippedTrial {
            index,
            pair,
            error: e.to_string(),
        });
        // A program that refuses every one of the first proposals (NaN on every dataset, a
        // crash on start-up) ends the search now instead of spending the budget.
        if self.trials.is_empty() && self.skipped.len() >= MAX_LEADING_REFUSALS {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    /// Takes trial `index`'s exploratory audit `r` (begun at `t0`): counts it, tells the
    /// finder its score, ranks it and shows the progress; returns its exploratory margin.
    fn take_scored(
        &mut self,
        index: usize,
        pair: &DatasetPair,
        r: &AuditReport,
        t0: Instant,
    ) -> f64 {
        let cost = 2 * self.search.search_samples as u64;
        self.search_secs += t0.elapsed().as_secs_f64();
        self.trial_secs.push(t0.elapsed().as_secs_f64());
        self.calls += r.mechanism_calls;
        self.drawn += cost;
        let (score, exploratory_margin) = score_and_margin(r);
        self.finder.tell(score);
        self.trials.push(Trial {
            index,
            pair: pair.clone(),
            score,
            exploratory_margin,
            releases_per_side: None,
        });
        self.best_score = self.best_score.max(score);
        (self.observe)(&SearchProgress {
            trials_done: self.trials.len(),
            trials_max: self.search.trials,
            trials_planned: None,
            confirming: false,
            confirmations_done: self.confirmations.len(),
            confirm_top: self.search.confirm_top,
            samples_drawn: self.drawn,
            elapsed_seconds: self.start.elapsed().as_secs_f64(),
            budget_seconds: self.search.budget_seconds,
            best_score: self.best_score,
        });
        exploratory_margin
    }

    /// After the first scored trial: a budget that cannot hold one confirming audit (at half
    /// the exploratory time per release, the most favourable reading) is an error, not a run
    /// that overruns it.
    fn check_budget_holds_a_confirmation(&self) -> Result<()> {
        if self.trials.len() == 1
            && let Some(budget) = self.search.budget_seconds
        {
            let cost = 2 * self.search.search_samples as u64;
            let optimistic = match self.cost_model {
                Some(c) => 0.5 * c.confirm_seconds(self.audit.samples_per_side),
                None => 0.5 * self.search_secs / cost.max(1) as f64 * self.confirm_releases(1),
            };
            if self.start.elapsed().as_secs_f64() + optimistic > budget {
                return Err(Error::InvalidConfig(format!(
                    "--budget {}s is too short: one confirming audit of {} releases per side needs about {:.1} s more at the speed measured on the first trial; allowed: a longer --budget or fewer --samples",
                    readable(budget),
                    self.audit.samples_per_side,
                    optimistic
                )));
            }
        }
        Ok(())
    }

    /// The checkpoint after trial `index`: after [`CHECKPOINT_TRIALS`] trials with nothing
    /// confirmed yet, the best pair so far is confirmed; `Break` when that ends the search.
    ///
    /// Exploratory samples are often too few to bound a violation, or even to estimate it: on
    /// high-dimensional discrete outputs the exploratory event is poor, while the confirm
    /// phase's samples are not. It uses one of the pre-allocated slots, which a run without a
    /// violation spends anyway, so the β split and the cost of a clean run are unchanged; at
    /// least one slot is kept for the end of the search.
    fn checkpoint(&mut self, index: usize) -> Result<ControlFlow<()>> {
        if index + 1 == CHECKPOINT_TRIALS
            && self.confirmations.is_empty()
            && self.search.confirm_top >= 2
            && self.search.trials > CHECKPOINT_TRIALS
        {
            let best = self
                .trials
                .iter()
                .max_by(|a, b| a.score.total_cmp(&b.score).then(b.index.cmp(&a.index)))
                .map(|t| t.pair.clone());
            if let Some(pair) = best
                && self.confirm(pair)? != Some(false)
            {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Confirms `pair` on fresh releases from the next confirm streams: Some(whether it found
    /// a violation), or None when the run's deadline stopped it (no confirmation is
    /// half-drawn into a verdict).
    fn confirm(&mut self, pair: DatasetPair) -> Result<Option<bool>> {
        let t0 = Instant::now();
        let r = match audit_pair_in(
            self.mechanism,
            self.claim,
            &pair,
            self.testers,
            &self.confirm_config,
            Phase::Confirm(self.confirmations.len() as u64),
        ) {
            Ok(r) => r,
            Err(e) if out_of_time(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        self.confirm_secs += t0.elapsed().as_secs_f64();
        self.confirm_drawn += 2 * self.audit.samples_per_side as u64;
        self.calls += r.mechanism_calls;
        self.drawn += 2 * self.audit.samples_per_side as u64;
        let found = r.verdict == Verdict::Violation;
        self.confirmations.push(r);
        self.confirmed_pairs.push(pair);
        if found {
            self.verdict = Verdict::Violation;
        }
        Ok(Some(found))
    }

    /// The remaining confirm slots go to the best distinct pairs not yet confirmed (ties:
    /// earlier trial first), unless a violation was already confirmed.
    pub(super) fn confirm_remaining(&mut self) -> Result<()> {
        if self.verdict != Verdict::NoViolation {
            return Ok(());
        }
        let mut ranked: Vec<&Trial> = self.trials.iter().collect();
        ranked.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.index.cmp(&b.index)));
        let ranked: Vec<DatasetPair> = ranked.into_iter().map(|t| t.pair.clone()).collect();
        for pair in ranked {
            if self.confirmations.len() == self.search.confirm_top {
                break;
            }
            if self.confirmed_pairs.contains(&pair) {
                continue;
            }
            if self.confirm(pair)? != Some(false) {
                break;
            }
        }
        Ok(())
    }

    /// The search's record: the trials, their score percentiles, the β rule and the
    /// confirmations.
    pub(super) fn into_report(self) -> SearchReport {
        let search = self.search;
        let mut scores: Vec<f64> = self.trials.iter().map(|t| t.score).collect();
        scores.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            let i = ((p / 100.0) * (scores.len() - 1) as f64).round() as usize;
            (p, scores[i])
        };
        SearchReport {
            finder: self.finder.name().to_string(),
            config: search.clone(),
            score_percentiles: [0.0, 10.0, 50.0, 90.0, 100.0].map(pct).to_vec(),
            trials: self.trials,
            skipped: self.skipped,
            beta_rule: format!(
                "search bounds are exploratory (β = {SEARCH_BETA}, used only to rank pairs, on samples the confirm phase never sees); β = {} of the run split evenly over the {} confirm slots: β/{} = {} per confirming audit (union bound), whether or not every slot is used; a pair whose exploratory bound exceeds the allowance is confirmed at once; after {CHECKPOINT_TRIALS} trials with nothing confirmed, the best pair so far is confirmed; the rest go to the best-scored pairs",
                readable(self.audit.failure_probability),
                search.confirm_top,
                search.confirm_top,
                readable(self.confirm_config.failure_probability)
            ),
            confirmations: self.confirmations,
            verdict: self.verdict,
            mechanism_calls: self.calls,
            samples_drawn: self.drawn,
        }
    }
}
