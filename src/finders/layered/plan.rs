//! The planner of a run against a time budget: the sizes that fit it at the cost model's prices.

use serde::{Deserialize, Serialize};

use super::MIN_TIMED_CONFIRM_SAMPLES;
use crate::finders::cost::CostModel;
use crate::mechanisms::math::readable;

/// How long each part of a run is expected to take at the prices of the cost model
/// ([`crate::finders::cost`]) measured on the probe, and the sizes chosen to fit the budget. The search
/// is paced by the same model ([`super::search_and_confirm_paced`]), so it runs about the trials
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
pub(super) const MIN_SEARCH_PAIRS: usize = 10;
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
        cost: &CostModel,
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
        // The search keeps room for MIN_SEARCH_PAIRS pairs at its smallest size (at most 80 %
        // of the time left): a slow program's confirmations shrink for them.
        let smallest = search_samples.unwrap_or(MIN_PLANNED_SEARCH_SAMPLES.min(defaults.1));
        let floor = (MIN_SEARCH_PAIRS as f64 * per_trial(cost, smallest)).min(0.8 * left);
        let room = (CONFIRM_SHARE * left).min(left - floor).max(0.0);
        plan.fit_confirmations(cost, room, samples, confirm, defaults);
        let search_room = (left - plan.confirm_seconds).max(0.0);
        if search_samples.is_none() {
            plan.search_samples = search_size(cost, search_room, defaults.1);
        }
        let trial = per_trial(cost, plan.search_samples);
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

    /// Sets the confirmations' sizes (releases per side and slots per layer) that fit `room`
    /// seconds, the user's `samples` and `confirm` kept, and their estimated seconds (those of
    /// one confirmation the layers share, for a program too slow for one per layer).
    fn fit_confirmations(
        &mut self,
        cost: &CostModel,
        room: f64,
        samples: Option<usize>,
        confirm: Option<usize>,
        defaults: (usize, usize, usize),
    ) {
        let l = self.layers as f64;
        let confirm_cost = |n: usize, k: usize| l * k as f64 * cost.confirm_seconds(n);
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
                self.confirm_per_layer = (1..=defaults.2)
                    .rev()
                    .find(|&k| confirm_cost(n, k) <= room)
                    .unwrap_or(1);
            }
            (None, Some(k)) => {
                self.samples_per_side = largest_n(k, defaults.0).max(MIN_PLANNED_SAMPLES);
            }
            (None, None) => {
                let full = defaults.0;
                if confirm_cost(full, defaults.2) <= room {
                    self.samples_per_side = full;
                } else if largest_n(2, full) >= 50_000 {
                    self.confirm_per_layer = 2;
                    self.samples_per_side = largest_n(2, full);
                } else {
                    self.confirm_per_layer = 1;
                    self.samples_per_side = largest_n(1, full);
                    if self.samples_per_side < MIN_PLANNED_SAMPLES {
                        shared = true;
                        // Too slow for a confirmation per layer: one pair confirmed for every
                        // layer from one draw (what a violation found by both layers costs),
                        // at what fits, never below the smallest timed confirmation.
                        self.samples_per_side = cost
                            .confirm_fitting(room, full)
                            .clamp(MIN_TIMED_CONFIRM_SAMPLES, MIN_PLANNED_SAMPLES);
                    }
                }
            }
        }
        self.confirm_seconds = if shared {
            cost.confirm_seconds(self.samples_per_side)
        } else {
            confirm_cost(self.samples_per_side, self.confirm_per_layer)
        };
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

/// Seconds per trial of `s` releases per side, in waves as wide as the pool allows.
fn per_trial(cost: &CostModel, s: usize) -> f64 {
    let w = cost.wave_width(s);
    cost.wave_seconds(s, w) / w as f64
}

/// The largest trial size (at most `default`) that still scores [`MIN_PLANNED_TRIALS`] pairs
/// in `search_room` seconds, or as many as the smallest size would (a program whose start-up
/// dominates scores about as many pairs at any size, and keeps the larger, more powerful
/// trials).
fn search_size(cost: &CostModel, search_room: f64, default: usize) -> usize {
    let trials = |s: usize| (search_room / per_trial(cost, s).max(1e-9)).floor() as usize;
    let ladder: Vec<usize> = std::iter::once(default)
        .chain(SEARCH_LADDER.into_iter().filter(|&s| s < default))
        .collect();
    let smallest = *ladder.last().unwrap_or(&default);
    let target = MIN_PLANNED_TRIALS.min(trials(smallest)).max(1);
    ladder
        .iter()
        .copied()
        .find(|&s| trials(s) >= target)
        .unwrap_or(smallest)
}

/// A duration in readable units.
pub(super) fn duration(seconds: f64) -> String {
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
