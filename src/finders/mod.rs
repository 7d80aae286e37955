//! Dataset finders: black-box search over neighboring datasets, and the search/confirm runner.
//!
//! A bug often shows only on a few datasets (an added record at the edge of the range, a query
//! stream that crosses a threshold). A [`DatasetFinder`] proposes neighboring pairs (`ask`) and
//! learns from their exploratory scores (`tell`); [`search_and_confirm`] drives it:
//!
//! 1. **Search** (exploratory, no statistical claim): each proposed pair is audited on a small
//!    sample from the search streams; its score is the largest point estimate of
//!    (divergence − allowed) over the planned bounds.
//! 2. **Confirm**: the best `k` distinct pairs are re-audited with fresh samples from the
//!    confirm streams (independent of everything the search saw), at β/k each. A violation is
//!    reported only from a confirming audit; by the union bound the chance that any confirming
//!    audit reports a violation against a mechanism keeping its claim is at most β.
//!
//! Candidate pairs are points u ∈ [0, 1]^m of a [`PairSpace`] (the mechanism's record domain,
//! a dataset size and the neighboring relation), so every finder, from grid search to Bayesian
//! optimization, works on the same box.

use serde::{Deserialize, Serialize};

use crate::audit::{AuditConfig, AuditReport, Verdict};
use crate::error::{Error, Result};
use crate::mechanisms::{Dataset, DatasetPair, Mechanism, Neighboring, PrivacyClaim, RecordDomain};
use crate::rng::{AuditRng, Seed, Stream};
use crate::testers::PropertyTester;

mod bayes;
pub mod cost;
pub mod layered;
mod optim;
mod portfolio;
mod priced;
mod record;
mod simple;

pub use bayes::BayesFinder;
pub use optim::{ArgminFinder, ArgminSolver};
pub use portfolio::PortfolioFinder;
pub use simple::{
    CornersFinder, FixedFinder, GridFinder, HaltonFinder, RandomFinder, TypicalFinder,
};

/// Zero-out neighbors replace a record by the null record (all zeros): the record range must
/// contain 0 (and another value). Every finder checks this first, so a range without 0 is named
/// as the cause rather than the dataset size no pair then fits.
pub fn check_zero_out(domain: &RecordDomain) -> Result<()> {
    if domain.lower <= 0.0 && 0.0 <= domain.upper && domain.lower < domain.upper {
        return Ok(());
    }
    // The nearest range that holds 0: stretch the given one to reach it.
    let example = if domain.upper > 0.0 {
        format!("0:{}", domain.upper)
    } else if domain.lower < 0.0 {
        format!("{}:0", domain.lower)
    } else {
        "-1:1".to_string()
    };
    Err(Error::InvalidConfig(format!(
        "--neighbors zero-out replaces a record by the null record (all zeros), which is outside the record range [{}, {}]; allowed: a --record-range containing 0 and another value, e.g. {example}",
        domain.lower, domain.upper
    )))
}

/// The box of candidate pairs: records of a domain, a base dataset size, a relation.
///
/// A point u ∈ [0, 1]^m, m = (size + 1)·dim, is decoded row by row into records
/// (lo + u·(hi − lo), rounded for integer domains):
/// - add-remove: D = the first `size` records, D′ = D plus the last record;
/// - replace-one: D = the first `size` records, D′ = D with its last record replaced by the
///   last decoded record (so `size` ≥ 1);
/// - zero-out: D = the first `size` records plus the last decoded record, D′ = the first `size`
///   records plus the null record (all zeros; the record range must contain 0).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairSpace {
    /// Record range, dimension and integrality.
    pub domain: RecordDomain,
    /// Number of records in D.
    pub size: usize,
    /// Neighboring relation.
    pub relation: Neighboring,
}

impl PairSpace {
    /// Validates the space: a well-formed domain, sizes the relation can use and the mechanism
    /// accepts.
    pub fn new(domain: RecordDomain, size: usize, relation: Neighboring) -> Result<Self> {
        domain.validate()?;
        if relation == Neighboring::ReplaceOne && size == 0 {
            return Err(Error::InvalidConfig(
                "--dataset-size 0 with replace-one neighbors: there is no record to replace; allowed: size ≥ 1".into(),
            ));
        }
        if relation == Neighboring::ZeroOut {
            check_zero_out(&domain)?;
        }
        let sizes = match relation {
            Neighboring::AddRemove => [size, size + 1],
            Neighboring::ReplaceOne => [size, size],
            Neighboring::ZeroOut => [size + 1, size + 1],
        };
        for s in sizes {
            if s < domain.min_size || s > domain.max_size {
                return Err(Error::InvalidConfig(format!(
                    "--dataset-size {size} gives datasets of {s} records; the mechanism takes {} to {}",
                    domain.min_size, domain.max_size
                )));
            }
        }
        if size > 64 {
            return Err(Error::InvalidConfig(format!(
                "--dataset-size {size}; allowed for search: 0 to 64 (the search space has (size + 1) × dim coordinates)"
            )));
        }
        Ok(Self {
            domain,
            size,
            relation,
        })
    }

    /// Number of coordinates m.
    pub fn dim(&self) -> usize {
        (self.size + 1) * self.domain.dim
    }

    fn decode_value(&self, u: f64) -> f64 {
        let u = if u.is_finite() {
            u.clamp(0.0, 1.0)
        } else {
            0.5
        };
        let (lo, hi) = (self.domain.lower, self.domain.upper);
        let v = lo + u * (hi - lo);
        let v = if self.domain.integer { v.round() } else { v };
        v.clamp(lo, hi)
    }

    /// Decodes u (coordinates outside [0, 1] are clamped) into a neighboring pair.
    pub fn decode(&self, u: &[f64]) -> Result<DatasetPair> {
        let d = self.domain.dim;
        if u.len() != self.dim() {
            return Err(Error::InvalidConfig(format!(
                "a point of {} coordinates; the pair space has {}",
                u.len(),
                self.dim()
            )));
        }
        let rows: Vec<Vec<f64>> = u
            .chunks(d)
            .map(|c| c.iter().map(|&x| self.decode_value(x)).collect())
            .collect();
        let base = Dataset::vectors(d, &rows[..self.size])?;
        let mut extra = rows[self.size].clone();
        let same = match self.relation {
            Neighboring::AddRemove => false,
            Neighboring::ReplaceOne => extra == rows[self.size - 1],
            Neighboring::ZeroOut => extra == Neighboring::null_record(d),
        };
        if same {
            // Replacing a record by itself is no change: move the first coordinate of the
            // replacement to the far end of the range so the pair stays a true neighbor.
            let (lo, hi) = (self.domain.lower, self.domain.upper);
            extra[0] = if extra[0] - lo < hi - extra[0] {
                hi
            } else {
                lo
            };
            if lo == hi {
                return Err(Error::InvalidConfig(format!(
                    "the record range [{lo}, {hi}] has one value: no two records differ"
                )));
            }
        }
        let extra = &extra;
        let (first, second) = match self.relation {
            Neighboring::AddRemove => (base.clone(), base.with_record(extra)?),
            Neighboring::ReplaceOne => (base.clone(), base.with_replaced(self.size - 1, extra)?),
            Neighboring::ZeroOut => (
                base.with_record(extra)?,
                base.with_record(&Neighboring::null_record(d))?,
            ),
        };
        Ok(DatasetPair::new(first, second, self.relation)?)
    }
}

/// A black-box optimizer over neighboring pairs, in ask/tell form.
///
/// `ask` proposes the next pair (or `None` when the finder has nothing more to propose);
/// `tell` reports its exploratory score (larger = closer to a violation). Finders draw all their
/// randomness from the generator they were built with.
pub trait DatasetFinder: Send {
    /// Short name, e.g. `random`.
    fn name(&self) -> &'static str;
    /// The next pair to score.
    fn ask(&mut self) -> Result<Option<DatasetPair>>;
    /// The score of the earliest pair asked whose score was not told yet (scores are told in
    /// the order the pairs were asked).
    fn tell(&mut self, score: f64);
    /// True when the next proposal does not depend on the scores not yet told (a non-adaptive
    /// finder, or a portfolio member that does not learn): the runner may then ask it before
    /// those scores are told and score several pairs at once, and the pairs proposed are the
    /// same as when every score is told before the next ask. False by default.
    fn next_is_independent(&self) -> bool {
        false
    }
}

/// Every finder name accepted by [`finder_by_name`].
pub const FINDER_NAMES: &[&str] = &[
    "fixed",
    "grid",
    "random",
    "corners",
    "halton",
    "nelder-mead",
    "pso",
    "annealing",
    "bayes",
    "portfolio",
];

/// Builds a finder over `space` with randomness from `rng`. `fixed_pairs` are replayed by
/// `fixed` (the catalogue witness, or pairs read from a file).
pub fn finder_by_name(
    name: &str,
    space: PairSpace,
    fixed_pairs: Vec<DatasetPair>,
    trials: usize,
    rng: AuditRng,
) -> Result<Box<dyn DatasetFinder>> {
    Ok(match name {
        "fixed" => Box::new(FixedFinder::new(fixed_pairs)?),
        "grid" => Box::new(GridFinder::new(space, trials)),
        "random" => Box::new(RandomFinder::new(space, rng)),
        "corners" => Box::new(CornersFinder::new(space, rng)),
        "halton" => Box::new(HaltonFinder::new(space)),
        "nelder-mead" => Box::new(ArgminFinder::new(space, ArgminSolver::NelderMead, rng)?),
        "pso" => Box::new(ArgminFinder::new(space, ArgminSolver::ParticleSwarm, rng)?),
        "annealing" => Box::new(ArgminFinder::new(
            space,
            ArgminSolver::SimulatedAnnealing,
            rng,
        )?),
        "bayes" => Box::new(BayesFinder::new(space, rng)),
        "portfolio" => Box::new(PortfolioFinder::new(
            space.domain,
            space.size,
            space.relation,
            rng,
        )?),
        other => {
            return Err(Error::InvalidConfig(format!(
                "unknown finder {other:?}; allowed: {}",
                FINDER_NAMES.join(", ")
            )));
        }
    })
}

/// Budgets and sizes of a search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchConfig {
    /// Pairs scored in the search phase (at most); `trials.len()` of the report is the number
    /// of evaluations used.
    pub trials: usize,
    /// Releases per side for each exploratory score.
    pub search_samples: usize,
    /// Distinct best pairs re-audited in the confirm phase; β is split over them.
    pub confirm_top: usize,
    /// Stop the search after this much wall-clock time (the confirm phase always runs).
    pub wall_clock_seconds: Option<f64>,
    /// Largest total number of releases (both sides, both phases) the run may draw.
    pub max_samples: Option<u64>,
    /// Wall-clock seconds for the whole run, search and confirmation: the search stops when the
    /// time left would not hold the remaining confirming audits (estimated from the time per
    /// release measured so far). `None`: no time budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_seconds: Option<f64>,
}

/// Where a search stands, for a progress display.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchProgress {
    /// Exploratory trials scored.
    pub trials_done: usize,
    /// Most trials the run may score.
    pub trials_max: usize,
    /// Trials the run's plan announced, if it was planned.
    pub trials_planned: Option<usize>,
    /// True while a confirming audit runs.
    pub confirming: bool,
    /// Confirming audits done.
    pub confirmations_done: usize,
    /// Confirm slots.
    pub confirm_top: usize,
    /// Releases drawn so far (both sides, both phases).
    pub samples_drawn: u64,
    /// Seconds since the search started.
    pub elapsed_seconds: f64,
    /// The run's time budget, if any.
    pub budget_seconds: Option<f64>,
    /// Largest exploratory score so far.
    pub best_score: f64,
}

impl SearchConfig {
    /// Checks the settings: a positive budget, 1 to 100 000 trials, at least one confirm slot.
    pub fn validate(&self) -> Result<()> {
        if let Some(b) = self.budget_seconds
            && !(b.is_finite() && b > 0.0)
        {
            return Err(Error::InvalidConfig(format!(
                "--budget {b}; allowed: a positive number of seconds"
            )));
        }
        if self.trials == 0 || self.trials > 100_000 {
            return Err(Error::InvalidConfig(format!(
                "--trials {}; allowed: 1 to 100000",
                self.trials
            )));
        }
        if self.confirm_top == 0 {
            return Err(Error::InvalidConfig("confirm_top = 0; allowed: ≥ 1".into()));
        }
        Ok(())
    }
}

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            trials: 20,
            search_samples: 5_000,
            confirm_top: 3,
            wall_clock_seconds: None,
            max_samples: None,
            budget_seconds: None,
        }
    }
}

/// One exploratory trial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// Trial index.
    pub index: usize,
    /// The pair scored.
    pub pair: DatasetPair,
    /// Exploratory score: largest point estimate of (divergence − allowed). Not a bound.
    pub score: f64,
    /// Largest exploratory lower bound minus allowed (at the search β; not a claim).
    pub exploratory_margin: f64,
    /// Releases per side it was scored on, when fewer than the search's: the program was too
    /// slow on this pair for the full size (see [`layered::search_and_confirm_paced`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub releases_per_side: Option<usize>,
}

/// A proposed pair the program refused (see [`crate::mechanisms::MechanismError::Refused`]):
/// skipped, not scored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkippedTrial {
    /// Trial index (proposals are numbered together with the scored trials).
    pub index: usize,
    /// The pair proposed.
    pub pair: DatasetPair,
    /// The program's failure (exit status, time-out or non-finite output), the request and
    /// its stderr.
    pub error: String,
}

/// The search/confirm run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchReport {
    /// Finder used.
    pub finder: String,
    /// Budgets.
    pub config: SearchConfig,
    /// Every exploratory trial, in order (labelled exploratory: no statistical claim).
    pub trials: Vec<Trial>,
    /// Proposed pairs the program refused (exited with a failure status, timed out or printed a
    /// non-finite value), in order: skipped, not scored. Empty for a catalogue mechanism.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedTrial>,
    /// Percentiles (0, 10, 50, 90, 100) of the exploratory scores across trials.
    pub score_percentiles: Vec<(f64, f64)>,
    /// Confirming audits, best-ranked first; β of the run split evenly over `config.confirm_top`.
    pub confirmations: Vec<AuditReport>,
    /// β of the whole run and how it was split.
    pub beta_rule: String,
    /// Violation if any confirming audit found one.
    pub verdict: Verdict,
    /// Mechanism calls (chunks) in both phases.
    pub mechanism_calls: u64,
    /// Releases drawn in both phases, both sides.
    pub samples_drawn: u64,
}

/// An exploratory audit's score (the largest point estimate of divergence − allowed) and its
/// margin (the largest exploratory lower bound − allowed).
pub(crate) fn score_and_margin(r: &AuditReport) -> (f64, f64) {
    let most = |f: &dyn Fn(&crate::record::BoundRecord) -> f64| {
        r.bounds.iter().map(f).fold(f64::NEG_INFINITY, f64::max)
    };
    (
        most(&|b| b.point_estimate - b.allowed),
        most(&|b| b.value - b.allowed),
    )
}

/// The search β: exploratory bounds are computed at this level, only to decide which pair to
/// confirm at once (pairs are ranked by point estimates). A pair is confirmed at once when its
/// exploratory bound exceeds the allowance; at 0.5 that happened to about half of the pairs on
/// which a correct mechanism meets its claim with equality (the portfolio proposes many such
/// pairs, e.g. constant datasets), and those spent the confirm slots before the search reached a
/// violating pair. At 1e-3 a tight pair triggers an early confirmation once in a thousand
/// trials, while a clear violation (a margin of many standard errors) still does at once.
/// Not part of the run's β: confirmations use fresh samples at their own share.
pub(crate) const SEARCH_BETA: f64 = 1e-3;

/// Proposals the program may refuse before any pair is scored: then the search ends with the
/// error naming the first refusal (a program that fails on every dataset would otherwise spend
/// the whole budget on refusals).
pub const MAX_LEADING_REFUSALS: usize = 20;

/// Trials after which the best pair so far may be confirmed early (see [`search_and_confirm`]).
pub const CHECKPOINT_TRIALS: usize = 10;

/// Searches with `finder` and confirms at most `confirm_top` distinct pairs with fresh samples at
/// β/confirm_top each (`audit.failure_probability` = β of the whole run): a pair whose
/// exploratory bound already exceeds the allowance is confirmed at once; after
/// [`CHECKPOINT_TRIALS`] trials with nothing confirmed, the best pair so far is confirmed (when
/// at least two slots exist); the remaining
/// slots go to the best-scored pairs after the search. Every choice of a pair reads exploratory
/// samples only, which the confirm phase never sees. Stops at the first confirmed violation.
///
/// A proposed pair on which the program fails in the search phase (it exits with a failure
/// status, times out or prints NaN or ∞: [`crate::mechanisms::MechanismError::Refused`], e.g. a mean dividing
/// by the size of the empty dataset) is skipped and recorded in [`SearchReport::skipped`]; the
/// finder is told the lowest score seen so far (at most −1). Skipping only changes which pairs
/// are scored, never a bound. Every other error stops the run, and so does a failure in the
/// confirm phase (the pair was sampled in the search: the program is not repeatable); a search
/// in which every proposal was refused is an error naming the first refusal.
pub fn search_and_confirm(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    finder: &mut dyn DatasetFinder,
    testers: &[Box<dyn PropertyTester>],
    search: &SearchConfig,
    audit: &AuditConfig,
) -> Result<SearchReport> {
    search_and_confirm_observed(mechanism, claim, finder, testers, search, audit, &|_| {})
}

/// [`search_and_confirm`], calling `observe` after every trial and confirming audit (for a
/// progress display; it cannot change the run).
pub fn search_and_confirm_observed(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    finder: &mut dyn DatasetFinder,
    testers: &[Box<dyn PropertyTester>],
    search: &SearchConfig,
    audit: &AuditConfig,
    observe: &dyn Fn(&SearchProgress),
) -> Result<SearchReport> {
    search_and_confirm_priced(
        mechanism, claim, finder, testers, search, audit, None, observe,
    )
}

/// [`search_and_confirm_observed`] with a time budget priced by `cost` (see [`cost`]): the
/// confirmations still owed cost `cost.confirm_seconds(n)` each, instead of the median trial's
/// time per release (which counts a program's start-up as if every release paid it).
#[allow(clippy::too_many_arguments)]
pub fn search_and_confirm_priced(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    finder: &mut dyn DatasetFinder,
    testers: &[Box<dyn PropertyTester>],
    search: &SearchConfig,
    audit: &AuditConfig,
    cost_model: Option<&cost::CostModel>,
    observe: &dyn Fn(&SearchProgress),
) -> Result<SearchReport> {
    search.validate()?;
    AuditConfig {
        seed: audit.seed,
        samples_per_side: search.search_samples,
        failure_probability: SEARCH_BETA,
    }
    .validate(mechanism.output_dim())?;
    audit.validate(mechanism.output_dim())?;
    let mut run = priced::PricedSearch::new(
        mechanism, claim, finder, testers, search, audit, cost_model, observe,
    );
    run.search()?;
    if run.trials.is_empty() {
        return Err(no_pair_scored(&run.skipped));
    }
    run.confirm_remaining()?;
    Ok(run.into_report())
}

/// The error of a search that scored no pair: every proposal refused (naming the first refusal),
/// or none proposed.
fn no_pair_scored(skipped: &[SkippedTrial]) -> Error {
    match skipped.first() {
        Some(first) => {
            let [d, d2] = first.pair.short_sides();
            Error::InvalidConfig(format!(
                "the search scored no pair: the program failed on all {} proposed pairs; the first, trial {} (D = {d}, D' = {d2}): {}",
                skipped.len(),
                first.index,
                first.error
            ))
        }
        None => Error::InvalidConfig(
            "the search scored no pair: the finder proposed none, or the sample budget (--samples × --confirm plus --search-samples) left no room for one trial".into(),
        ),
    }
}

/// The finder's generator for a run seeded with `seed`.
pub fn finder_rng(seed: u64) -> AuditRng {
    Seed(seed).rng(Stream::Finder)
}

/// Whether an error is a call stopped at (or not started after) the run's deadline.
fn out_of_time(e: &Error) -> bool {
    matches!(
        e,
        Error::Mechanism(crate::mechanisms::MechanismError::OutOfTime { .. })
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_space_decodes_neighbors_in_the_domain() {
        let dom = RecordDomain::real(0.0, 10.0, 2);
        let s = PairSpace::new(dom, 2, Neighboring::AddRemove).unwrap();
        assert_eq!(s.dim(), 6);
        let p = s.decode(&[0.0, 1.0, 0.5, 0.5, 2.0, -1.0]).unwrap();
        assert_eq!(p.first().len(), 2);
        assert_eq!(p.second().len(), 3);
        assert_eq!(p.second().record(2).to_vec(), vec![10.0, 0.0]);
        let s = PairSpace::new(RecordDomain::integer(0, 3, 1), 2, Neighboring::ReplaceOne).unwrap();
        let p = s.decode(&[0.0, 0.4, 1.0]).unwrap();
        assert_eq!(p.first().column(0), vec![0.0, 1.0]);
        assert_eq!(p.second().column(0), vec![0.0, 3.0]);
        assert!(PairSpace::new(dom, 0, Neighboring::ReplaceOne).is_err());
        let inverted = RecordDomain::real(1.0, 0.0, 1);
        assert!(PairSpace::new(inverted, 2, Neighboring::AddRemove).is_err());
        // Zero-out: D = base + the last record, D' = base + the null record; a last record
        // equal to the null record is moved to the far end.
        let s = PairSpace::new(RecordDomain::real(0.0, 4.0, 1), 1, Neighboring::ZeroOut).unwrap();
        let p = s.decode(&[0.5, 0.25]).unwrap();
        assert_eq!(p.first().column(0), vec![2.0, 1.0]);
        assert_eq!(p.second().column(0), vec![2.0, 0.0]);
        let p = s.decode(&[0.5, 0.0]).unwrap();
        assert_eq!(p.first().column(0), vec![2.0, 4.0]);
        let away = RecordDomain::real(1.0, 2.0, 1);
        let err = PairSpace::new(away, 1, Neighboring::ZeroOut).unwrap_err();
        assert!(err.to_string().contains("null record"), "{err}");
    }

    /// Every box finder, on a zero-out space, proposes only zero-out pairs: D′ is D with one
    /// record replaced by the null record (checked by `DatasetPair::new`, and here directly).
    #[test]
    fn finders_propose_only_zero_out_pairs_under_zero_out() {
        let null = Neighboring::null_record(2);
        // Every finder but `fixed`, which replays the pairs it is given.
        for &name in FINDER_NAMES.iter().filter(|n| **n != "fixed") {
            let space =
                PairSpace::new(RecordDomain::real(0.0, 1.0, 2), 3, Neighboring::ZeroOut).unwrap();
            let mut f = finder_by_name(name, space, Vec::new(), 40, finder_rng(2)).unwrap();
            for i in 0..40 {
                let Some(p) = f.ask().unwrap() else { break };
                f.tell(i as f64 * 0.1);
                assert_eq!(p.relation(), Neighboring::ZeroOut, "{name}");
                assert_eq!(p.first().len(), p.second().len(), "{name}");
                let nulls = |d: &Dataset| d.to_rows().iter().filter(|r| **r == null).count();
                assert_eq!(nulls(p.second()), nulls(p.first()) + 1, "{name}: {p:?}");
            }
        }
    }
}
