//! How hard a search looked ([`SearchEffort`]): trials planned and run, pairs scored, refused
//! or shrunk, the size of every confirmation, and why the search stopped. The finders fill it
//! ([`crate::finders::layered`]); the record and every page show it.

use serde::{Deserialize, Serialize};

use super::layers::LayerKind;

/// Why a search stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// The trials asked for (`--trials`) were all run.
    TrialLimit,
    /// The finder had no more pairs to propose.
    FinderExhausted,
    /// Every layer found a violation or used its confirm slots.
    SlotsUsed,
    /// The time left in the budget held only the confirmations still owed.
    Budget,
    /// The search's own time limit (`--max-search-seconds`).
    SearchTime,
    /// The limit on releases drawn.
    SampleLimit,
    /// The program refused every one of the first proposals.
    Refusals,
    /// The run's deadline (the budget and its slack) stopped a call, or left no time for a
    /// confirmation.
    Deadline,
    /// A call failed after a violation was confirmed (the failure is reported beside it).
    Failure,
}

impl StopReason {
    /// Whether this reason can leave a search short of what it planned.
    pub fn can_cut_short(self) -> bool {
        matches!(
            self,
            StopReason::Budget
                | StopReason::SearchTime
                | StopReason::SampleLimit
                | StopReason::Refusals
                | StopReason::Deadline
        )
    }
}

/// Pairs scored at one size: a fidelity of the search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fidelity {
    /// Releases per side.
    pub releases_per_side: usize,
    /// Pairs scored on that many.
    pub pairs: usize,
}

/// One confirmation's size, for the record of how hard a run looked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfirmEffort {
    /// The layer it confirmed for.
    pub layer: LayerKind,
    /// Releases per side it drew.
    pub releases_per_side: usize,
}

/// How hard a search looked: trials planned and run, pairs scored, the size of every
/// confirmation, and why the search stopped. Part of the deterministic record (the trials
/// planned are those of the plan, present only when a time budget planned the run).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchEffort {
    /// Trials the plan announced (absent without a time budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials_planned: Option<usize>,
    /// Pairs proposed by the finder and run (scored or refused by the program).
    pub trials_run: usize,
    /// Pairs scored.
    pub pairs_scored: usize,
    /// Pairs the program refused (failure status, time-out, non-finite output), those skipped
    /// as too slow included.
    pub pairs_refused: usize,
    /// Of the refused pairs, those skipped because the program was too slow on them.
    #[serde(default)]
    pub pairs_too_slow: usize,
    /// Of the scored pairs, those scored on fewer releases because the program was slow on
    /// them.
    #[serde(default)]
    pub pairs_shrunk: usize,
    /// Releases per side of each exploratory trial.
    pub search_releases_per_side: usize,
    /// Every confirmation, in the order run.
    pub confirmations: Vec<ConfirmEffort>,
    /// Why the search stopped.
    pub stopped: StopReason,
    /// The reason in words.
    pub stopped_words: String,
    /// True when the search stopped well short of its plan (fewer than 80 % of the planned
    /// trials) or on refusals: an answer of "no violation found" is then weaker than planned.
    pub cut_short: bool,
    /// Pairs scored at each size (releases per side), the planned size first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fidelities: Vec<Fidelity>,
    /// Confirmations owed that were not run (or were stopped) because the time budget was
    /// spent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub confirmations_out_of_time: usize,
    /// A call that failed after a violation was confirmed: reported beside the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl SearchEffort {
    /// One sentence: how hard the search looked.
    pub fn describe(&self) -> String {
        let planned = match self.trials_planned {
            Some(p) => format!("{} of about {p} planned trials run", self.trials_run),
            None => format!("{} trials run", self.trials_run),
        };
        let mut parts = vec![format!(
            "{} scored on {} releases per side each",
            pairs(self.pairs_scored),
            self.search_releases_per_side
        )];
        if self.pairs_shrunk > 0 {
            parts.push(format!(
                "{} of them on fewer, because the program was slow on them",
                self.pairs_shrunk
            ));
        }
        let refused = self.pairs_refused - self.pairs_too_slow.min(self.pairs_refused);
        if refused > 0 {
            parts.push(format!("{refused} refused by the program"));
        }
        if self.pairs_too_slow > 0 {
            parts.push(format!(
                "{} skipped because the program was too slow on them",
                self.pairs_too_slow
            ));
        }
        let mut per_layer: Vec<(LayerKind, Vec<usize>)> = Vec::new();
        for c in &self.confirmations {
            match per_layer.iter_mut().find(|(l, _)| *l == c.layer) {
                Some((_, v)) => v.push(c.releases_per_side),
                None => per_layer.push((c.layer, vec![c.releases_per_side])),
            }
        }
        let confirms = if per_layer.is_empty() {
            "no confirmation".to_string()
        } else {
            let layers: Vec<String> = per_layer
                .iter()
                .map(|(l, v)| {
                    let all_same = v.iter().all(|n| *n == v[0]);
                    let sizes = if all_same {
                        format!("{} of {} releases per side", v.len(), v[0])
                    } else {
                        format!(
                            "{} of {} releases per side",
                            v.len(),
                            v.iter()
                                .map(|n| n.to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    format!("{} {sizes}", l.title())
                })
                .collect();
            format!("confirmations: {}", layers.join("; "))
        };
        let mut out = format!(
            "{planned}: {}; {confirms}; the search stopped because {}",
            parts.join(", "),
            self.stopped_words
        );
        if self.confirmations_out_of_time > 0 {
            out += &format!(
                "; {} confirmation(s) owed were not run for lack of time (a longer --budget runs them)",
                self.confirmations_out_of_time
            );
        }
        if let Some(f) = &self.failure {
            out += &format!("; after the violation was confirmed, a call failed: {f}");
        }
        out
    }
}

/// "1 pair", "2 pairs".
pub fn pairs(n: usize) -> String {
    if n == 1 {
        "1 pair".into()
    } else {
        format!("{n} pairs")
    }
}
