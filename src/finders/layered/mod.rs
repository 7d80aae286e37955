//! The layered search: one search over neighboring pairs that answers both questions of
//! [`crate::record::layers`] from the same releases.
//!
//! Every trial draws its releases once (the search streams of [`search_and_confirm`]) and scores
//! the pair separately for each layer, through that layer's view of a release (values for the
//! mechanism layer, representation features for the floating-point layer). Each layer keeps its
//! own ranking of pairs and its own confirmations, exactly as [`search_and_confirm`] does for
//! one view: a pair whose exploratory bound exceeds the allowance is confirmed at once, the best
//! pair after [`CHECKPOINT_TRIALS`](super::CHECKPOINT_TRIALS) trials, the remaining slots at the
//! end. A layer that found a violation, or has used its slots, is closed; the search goes on
//! while any layer is open, so a floating-point violation found at the first trial never ends
//! the search for the algorithm's bugs. The finder is steered by the mechanism layer's scores
//! (by the floating-point layer's when it runs alone).
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
//! # Files
//! `paced.rs` runs the search as named steps (plan a wave, score it, take its trials in order,
//! confirm, record); `trial.rs` draws and scores one trial; `confirm.rs` runs a confirmation;
//! `plan.rs` fits a run to a time budget.
//!
//! # Wide outputs
//! The floating-point view keeps 5 features per output coordinate. For outputs of more than
//! [`FLOAT_COORDS`] coordinates it keeps the [`FLOAT_COORDS`] coordinates whose representation
//! differs most between the two sides on the trial's own (exploratory) releases (largest total
//! variation distance of any one feature); a confirmation of that pair uses the same coordinates,
//! chosen without its releases. The mechanism view keeps every coordinate and three norms.

mod confirm;
mod paced;
mod plan;
mod trial;

pub use crate::record::effort::{ConfirmEffort, Fidelity, SearchEffort, StopReason};
pub use confirm::MIN_TIMED_CONFIRM_SAMPLES;
pub use paced::search_and_confirm_paced;
pub use plan::{MIN_PLANNED_SAMPLES, MIN_PLANNED_SEARCH_SAMPLES, RunPlan};
pub use trial::{MIN_SLOW_CONFIRM_SAMPLES, MIN_SLOW_SEARCH_SAMPLES};

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{DatasetFinder, SearchConfig, SearchProgress, SearchReport, SkippedTrial, Trial};
use crate::audit::{AuditConfig, AuditReport, Verdict};
use crate::error::Result;
use crate::mechanisms::{DatasetPair, Mechanism, PrivacyClaim, Samples};
use crate::record::layers::{LayerKind, LayerVerdict, in_words};
use crate::rng::chunk_len;
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

#[cfg(test)]
mod tests;
