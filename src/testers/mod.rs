//! Property testers: from samples of P = M(D) and Q = M(D') to a one-sided lower confidence bound
//! on a divergence D(P ‖ Q).
//!
//! What a claim allows for a divergence ([`allowed`]) and the accept/reject rule ([`violates`])
//! live here and nowhere else: a claim is rejected only when a lower bound, valid with probability
//! at least 1 − β_i, exceeds what the claim allows.

use std::fmt;

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mechanisms::{PrivacyClaim, Samples};

mod common;
pub mod histogram;
pub mod hockey_stick;
pub mod mmd;
pub(crate) mod pooled;
pub mod renyi;
pub(crate) mod renyi_grid;
pub mod rows;
pub mod transforms;

pub(crate) use common::PLANNING_NOISE_REDUCTION;
pub use common::{empirical_bernstein_lower, empirical_bernstein_upper};
pub use histogram::HistogramTester;
pub use hockey_stick::{HeldOutEvents, HockeyStickTester, PreparedEvents};
pub use mmd::MmdTester;
pub use renyi::RenyiTester;
pub use transforms::{Transform, TransformedMechanism};

/// A divergence a tester can lower-bound.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Divergence {
    /// Hockey-stick divergence H_{e^ε}(P ‖ Q) = sup_S P(S) − e^ε Q(S).
    HockeyStick {
        /// ε ≥ 0.
        epsilon: f64,
    },
    /// Rényi divergence D_α(P ‖ Q).
    Renyi {
        /// α > 1.
        alpha: f64,
    },
}

impl fmt::Display for Divergence {
    /// For people (4 significant digits, `H_e^0.1037`); JSON keeps the full value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = crate::mechanisms::math::readable;
        match self {
            Divergence::HockeyStick { epsilon } => write!(f, "H_e^{}", r(*epsilon)),
            Divergence::Renyi { alpha } => write!(f, "D_{}", r(*alpha)),
        }
    }
}

/// The most `claim` allows for `divergence` (rounded up), or `None` if it implies no bound.
pub fn allowed(claim: &PrivacyClaim, divergence: &Divergence) -> Option<f64> {
    match *divergence {
        Divergence::HockeyStick { epsilon } => claim.delta_at(epsilon),
        Divergence::Renyi { alpha } => claim.renyi_at(alpha),
    }
}

/// Refuses a Bayesian DP claim for a worst-case tester: (ε_μ, δ_μ)-BDP is a promise about the
/// typical differing record x' ~ μ, averaged over μ, and allows nothing about any one fixed pair
/// of datasets ([`PrivacyClaim::delta_at`] and [`PrivacyClaim::renyi_at`] are `None` for it).
/// Only the Bayesian audit ([`crate::audit::bayesian`]), which draws x' from the data, tests it. Every
/// tester's [`PropertyTester::plan`] calls this first.
pub fn refuse_bayesian(tester: &str, claim: &PrivacyClaim) -> Result<()> {
    if claim.is_bayesian() {
        return Err(Error::ClaimNotTestable {
            tester: tester.into(),
            claim: claim.to_string(),
            reason: "a Bayesian DP claim (typical case over the differing record x' ~ μ, weaker than DP) allows nothing about a fixed pair of datasets; audit it with the Bayesian audit: audit run --claim bdp:EPS:DELTA --data FILE".into(),
        });
    }
    Ok(())
}

/// The rejection rule: a lower bound `bound` refutes a claim that allows `allowed` iff it is
/// strictly larger.
pub fn violates(bound: f64, allowed: f64) -> bool {
    bound > allowed
}

/// A measured lower bound, before the runner attaches the claim, direction and pair.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The lower confidence bound, rounded toward −∞; never negative for divergences that are ≥ 0.
    pub value: f64,
    /// A point estimate on the same held-out data, for plots and reading only; never used to decide.
    pub point_estimate: f64,
    /// The inequality that gives the confidence, and the assumptions.
    pub inequality: String,
    /// For hockey-stick bounds: the event S and its probability bounds, which also give an
    /// empirical lower bound on ε (see [`EventBound::epsilon_lower`]).
    pub event: Option<EventBound>,
}

/// Simultaneous bounds on P(S) and Q(S) for one event S chosen on a training split.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventBound {
    /// What the event is, in words.
    pub description: String,
    /// Held-out count of releases of P in S, and held-out sample size.
    pub count_p: u64,
    /// Held-out size for P.
    pub n_p: u64,
    /// Held-out count for Q.
    pub count_q: u64,
    /// Held-out size for Q.
    pub n_q: u64,
    /// Clopper–Pearson lower bound on P(S) (testers that bound P(S) and Q(S) separately).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_lower: Option<f64>,
    /// Clopper–Pearson upper bound on Q(S).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub q_upper: Option<f64>,
    /// The hockey-stick tester's exact conditional test on Poissonized counts, when it made the
    /// bound (then `count_p`/`count_q` are U and W, `n_p`/`n_q` the Poisson numbers of
    /// releases used per side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contrast: Option<ContrastCounts>,
    /// The hockey-stick tester's exact unconditional test on the binomial counts, when it made
    /// the bound (then `count_p`/`count_q` are the releases in the event on the side it favours
    /// and on the other, `n_p`/`n_q` all the held-out releases of each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binomial: Option<BinomialTest>,
    /// The failure probability each of `p_lower` and `q_upper` was computed at (absent in
    /// records written before it was kept): with it, both are recomputed from the counts when a
    /// record is read back ([`EventBound::check_counts`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count_beta: Option<f64>,
}

/// What the hockey-stick tester's conditional test saw (see [`crate::bounds::poisson_contrast_lower`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ContrastCounts {
    /// 1: one event in one direction; 2: one event per direction, summed.
    pub events: u32,
    /// Poisson mean of the number of held-out releases used per side.
    pub lambda: f64,
    /// Releases in the event(s) on the side each event favours.
    pub u: u64,
    /// Releases in the event(s) on the other side.
    pub w: u64,
    /// Garwood lower confidence bound on the mean of W (the nuisance parameter).
    pub mu_w_lower: f64,
    /// β spent on that bound.
    pub nuisance_beta: f64,
    /// The δ at which `epsilon_lower` is computed (what the claim allows at the tested ε).
    pub delta: f64,
    /// The largest ε' at which the same test refutes (ε', delta), if any.
    pub epsilon_lower: Option<f64>,
}

/// What the hockey-stick tester's exact unconditional test saw (see
/// [`crate::bounds::binomial_contrast_lower`]): the counts are the event's own.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BinomialTest {
    /// The δ at which `epsilon_lower` is computed (what the claim allows at the tested ε).
    pub delta: f64,
    /// The largest ε' at which the same test refutes (ε', delta), if any.
    pub epsilon_lower: Option<f64>,
}

/// Whether a recomputed number matches the stored one. The same functions on the same numbers
/// give the same bits; the slack absorbs a record written by another build (a different libm),
/// never a changed verdict.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 + 1e-6 * a.abs().max(b.abs())
}

impl EventBound {
    /// Checks a bound read back from a record against the counts stored with it: `value` (the
    /// bound on `divergence` at failure probability `beta`) must be what the counts give. The
    /// conditional test's bound is recomputed from U, W, λ, the number of events and γ
    /// ([`crate::bounds::poisson_contrast_lower`]); separate bounds are recomputed from the
    /// counts at `count_beta` (Clopper–Pearson), or, in records without it, must not exceed what
    /// the counts give at the whole `beta`. `Err` names the field that contradicts the counts.
    ///
    /// This catches a record edited by hand (a verdict, a flag or a bound changed without its
    /// counts); it cannot catch one rewritten consistently, counts included.
    pub fn check_counts(
        &self,
        divergence: Divergence,
        beta: f64,
        value: f64,
    ) -> std::result::Result<(), String> {
        if let Some(c) = &self.contrast {
            return self.check_contrast_counts(c, divergence, beta, value);
        }
        if self.binomial.is_some() {
            return self.check_binomial_counts(divergence, beta, value);
        }
        self.check_separate_counts(divergence, beta, value)
    }

    /// [`Self::check_counts`] for the conditional test on Poissonized counts `c`.
    fn check_contrast_counts(
        &self,
        c: &ContrastCounts,
        divergence: Divergence,
        beta: f64,
        value: f64,
    ) -> std::result::Result<(), String> {
        use crate::bounds::poisson_contrast_lower;
        let beta_ok = beta > 0.0 && beta < 1.0;
        if (c.u, c.w) != (self.count_p, self.count_q) {
            return Err(format!(
                "event.contrast.u, w = {}, {} but event.count_p, count_q = {}, {}; allowed: the same counts (U and W are stored twice)",
                c.u, c.w, self.count_p, self.count_q
            ));
        }
        let Divergence::HockeyStick { epsilon } = divergence else {
            return Err(format!(
                "a conditional-test event on a bound of {divergence}; allowed: hockey-stick bounds only"
            ));
        };
        let scale = f64::from(c.events) * c.lambda;
        let sane = beta_ok
            && c.nuisance_beta > 0.0
            && c.nuisance_beta < beta
            && scale > 0.0
            && scale.is_finite()
            && (1..=2).contains(&c.events)
            && epsilon.is_finite();
        if !sane {
            return Err(format!(
                "event.contrast: events = {}, λ = {}, γ = {} with β = {beta}; allowed: 1 or 2 events, λ > 0 and 0 < γ < β < 1",
                c.events, c.lambda, c.nuisance_beta
            ));
        }
        let expect = poisson_contrast_lower(c.u, c.w, epsilon.exp(), scale, beta, c.nuisance_beta);
        if !close(value, expect) {
            return Err(format!(
                "value = {value} but its counts (U = {}, W = {}, λ = {}, {} event(s)) give the lower bound {expect} at β = {beta}; allowed: the bound its counts give",
                c.u, c.w, c.lambda, c.events
            ));
        }
        Ok(())
    }

    /// [`Self::check_counts`] for the exact binomial test on all the held-out releases.
    fn check_binomial_counts(
        &self,
        divergence: Divergence,
        beta: f64,
        value: f64,
    ) -> std::result::Result<(), String> {
        let beta_ok = beta > 0.0 && beta < 1.0;
        let Divergence::HockeyStick { epsilon } = divergence else {
            return Err(format!(
                "an exact-binomial-test event on a bound of {divergence}; allowed: hockey-stick bounds only"
            ));
        };
        if self.count_p > self.n_p || self.count_q > self.n_q || self.n_p == 0 || self.n_q == 0 {
            return Err(format!(
                "event counts {} of {} and {} of {}; allowed: counts at most their sample sizes",
                self.count_p, self.n_p, self.count_q, self.n_q
            ));
        }
        if !beta_ok || !epsilon.is_finite() {
            return Err(format!(
                "an exact-binomial-test event with β = {beta} at ε = {epsilon}; allowed: 0 < β < 1 and a finite ε"
            ));
        }
        let expect = crate::bounds::binomial_contrast_lower(
            self.count_p,
            self.n_p,
            self.count_q,
            self.n_q,
            epsilon.exp(),
            beta,
        );
        if !close(value, expect) {
            return Err(format!(
                "value = {value} but its counts ({} of {} and {} of {}) give the lower bound {expect} at β = {beta}; allowed: the bound its counts give",
                self.count_p, self.n_p, self.count_q, self.n_q
            ));
        }
        Ok(())
    }

    /// [`Self::check_counts`] for separate Clopper–Pearson bounds on the two sides (nothing to
    /// check without them).
    fn check_separate_counts(
        &self,
        divergence: Divergence,
        beta: f64,
        value: f64,
    ) -> std::result::Result<(), String> {
        use crate::bounds::{clopper_pearson_lower, clopper_pearson_upper};
        let beta_ok = beta > 0.0 && beta < 1.0;
        let (Some(p), Some(q)) = (self.p_lower, self.q_upper) else {
            return Ok(());
        };
        if self.count_p > self.n_p || self.count_q > self.n_q || self.n_p == 0 || self.n_q == 0 {
            return Err(format!(
                "event counts {} of {} and {} of {}; allowed: counts at most their sample sizes",
                self.count_p, self.n_p, self.count_q, self.n_q
            ));
        }
        let (p_expect, q_expect, exact) = match self.count_beta {
            Some(a) if a > 0.0 && a < 1.0 && a <= beta => (
                clopper_pearson_lower(self.count_p, self.n_p, a),
                clopper_pearson_upper(self.count_q, self.n_q, a),
                true,
            ),
            Some(a) => {
                return Err(format!(
                    "event.count_beta = {a}; allowed: a number in (0, β = {beta}]"
                ));
            }
            // The least the counts can back: both bounds at the whole β.
            None if beta_ok => (
                clopper_pearson_lower(self.count_p, self.n_p, beta),
                clopper_pearson_upper(self.count_q, self.n_q, beta),
                false,
            ),
            None => return Ok(()),
        };
        let p_bad = if exact {
            !close(p, p_expect)
        } else {
            p > p_expect && !close(p, p_expect)
        };
        if p_bad {
            return Err(format!(
                "event.p_lower = {p} but {} of {} releases in the event give {p_expect}; allowed: the Clopper–Pearson bound of its counts",
                self.count_p, self.n_p
            ));
        }
        let q_bad = if exact {
            !close(q, q_expect)
        } else {
            q < q_expect && !close(q, q_expect)
        };
        if q_bad {
            return Err(format!(
                "event.q_upper = {q} but {} of {} releases in the event give {q_expect}; allowed: the Clopper–Pearson bound of its counts",
                self.count_q, self.n_q
            ));
        }
        if let Divergence::HockeyStick { epsilon } = divergence {
            let expect = common::hockey_stick_value(p, q, epsilon.exp());
            if !close(value, expect) {
                return Err(format!(
                    "value = {value} but its event's bounds (P(S) ≥ {p}, Q(S) ≤ {q}) give {expect}; allowed: the bound its counts give"
                ));
            }
        }
        Ok(())
    }

    /// The largest ε' such that the bounds refute (ε', δ)-DP. For separate bounds on both sides:
    /// on the event where both bounds hold, P(S) − e^{ε'} Q(S) ≥ p_lower − e^{ε'} q_upper > δ for
    /// every ε' below ln((p_lower − δ)/q_upper). For the conditional test and the exact binomial
    /// test: its own inversion in
    /// ε' at the δ it was given (`None` at any other δ). Rounded down. `None` when nothing is
    /// refuted.
    pub fn epsilon_lower(&self, delta: f64) -> Option<f64> {
        if let Some(b) = &self.binomial {
            return if b.delta == delta {
                b.epsilon_lower
            } else {
                None
            };
        }
        if let Some(c) = &self.contrast {
            return if c.delta == delta {
                c.epsilon_lower
            } else {
                None
            };
        }
        let (p_lower, q_upper) = (self.p_lower?, self.q_upper?);
        if p_lower <= delta || q_upper <= 0.0 {
            return None;
        }
        let e = ((p_lower - delta) / q_upper).ln();
        (e > 0.0).then(|| (e * (1.0 - 1e-12)).next_down())
    }
}

/// Turns samples of P and Q into a one-sided lower confidence bound on a divergence.
///
/// # Guarantee
/// For i.i.d. samples `p` of P and `q` of Q (independent of each other),
/// `lower_bound(p, q, d, β, rng).value ≤ d(P ‖ Q)` with probability at least 1 − β over the
/// samples (and `rng`). Implementations document the inequality in `# Guarantee`.
pub trait PropertyTester: Send + Sync + fmt::Debug {
    /// Short name used on the command line and in reports, e.g. `hockey-stick`.
    fn name(&self) -> &'static str;

    /// One line on the method and its inequality.
    fn describe(&self) -> String;

    /// The divergences this tester bounds to test `claim` with `samples_per_side` releases per
    /// side. `Err(Error::ClaimNotTestable)` when the claim implies nothing it can test.
    fn plan(&self, claim: &PrivacyClaim, samples_per_side: usize) -> Result<Vec<Divergence>>;

    /// For a tester that selects on its training split and a claim it tests on a grid (a
    /// profile): one divergence fixed from the claim alone, bounded as a bound of its own beside
    /// the selection over the grid (its own β slot), so that one bound has no selection of ε at
    /// all. `None` (the default) when there is none.
    fn planned(&self, _claim: &PrivacyClaim, _samples_per_side: usize) -> Option<Divergence> {
        None
    }

    /// A lower bound on `divergence`(P ‖ Q) from samples `p` of P and `q` of Q, valid with
    /// probability ≥ 1 − `failure_probability`.
    fn lower_bound(
        &self,
        p: &Samples,
        q: &Samples,
        divergence: Divergence,
        failure_probability: f64,
        rng: &mut dyn Rng,
    ) -> Result<Measurement>;

    /// True when the tester can choose, on its own training split, which one of several
    /// planned bounds (divergence × direction) to report: it then gets a single β slot instead
    /// of one per divergence and direction (see [`PropertyTester::select_and_bound`]).
    fn selects_on_training_split(&self) -> bool {
        false
    }

    /// Chooses one of `candidates` (divergence, what the claim allows) and a direction using
    /// only its training split, then bounds that one divergence on held-out data at the full
    /// `failure_probability`. The choice is a function of the training rows only, so it is
    /// independent of the held-out rows and the bound keeps its level. Testers that do not
    /// select return `Ok(None)`.
    fn select_and_bound(
        &self,
        _p: &Samples,
        _q: &Samples,
        _candidates: &[(Divergence, f64)],
        _failure_probability: f64,
        _rng: &mut dyn Rng,
    ) -> Result<Option<Selected>> {
        Ok(None)
    }

    /// Whether the anytime-valid sequential audit (`--sequential`, [`crate::audit::sequential`])
    /// can stand for this tester: its betting test bets on held-out events of the kind this
    /// tester chooses on a training batch, and answers the same question. `false` (the default)
    /// for a tester whose question it does not answer; `--sequential` refuses such a tester.
    fn sequential(&self) -> bool {
        false
    }

    /// Training rows per side this tester reads from a side of `n` rows when its held-out rows
    /// can be streamed ([`PropertyTester::select_and_bound_split`]); `None` when it reads its
    /// samples in memory only (the default).
    fn split_train_rows(&self, _n: usize) -> Option<usize> {
        None
    }

    /// [`PropertyTester::select_and_bound`] on data that is not all in memory: `train_p` and
    /// `train_q` are the training rows of each side (the first rows), `held` the rows after them,
    /// read in one pass. Testers that can only read samples in memory refuse (the default).
    fn select_and_bound_split(
        &self,
        _train_p: rows::Rows<'_>,
        _train_q: rows::Rows<'_>,
        _held: &dyn HeldOut,
        _candidates: &[(Divergence, f64)],
        _failure_probability: f64,
        _rng: &mut dyn Rng,
    ) -> Result<Option<Selected>> {
        Err(Error::InvalidConfig(format!(
            "the {} tester reads its samples in memory and cannot stream shards; allowed with streaming: --tester hockey-stick (or read the shards in memory with --in-memory)",
            self.name()
        )))
    }
}

/// The held-out releases of the two sides of a split (P first, Q second), in their order: the
/// rows after the training rows. A tester reads them only through [`HeldOut::count`], so they
/// may be in memory ([`Tail`]) or in shards on disk (`crate::sources::shards`).
pub trait HeldOut: Sync {
    /// Held-out rows of the first side (`second == false`) or of the second.
    fn rows(&self, second: bool) -> usize;

    /// Among the first `limit` held-out rows of a side (`limit ≤ rows`), how many rows are in
    /// the first event of `events` and how many in the second ([`HeldOutEvents::flags`]).
    /// Counts are integers, so they may be summed in any order (over threads, shards or
    /// machines) and give the same result.
    ///
    /// # Errors
    /// The rows cannot be read (a shard missing, truncated or corrupt).
    fn count(&self, second: bool, limit: usize, events: &HeldOutEvents) -> Result<(u64, u64)>;

    /// [`HeldOut::count`] of each (limit, events) of `queries` on one side: the same counts.
    /// Sources that read their rows for a count (shards) override it to count every query in
    /// one pass; the default counts them one by one.
    ///
    /// # Errors
    /// As [`HeldOut::count`].
    fn count_many(
        &self,
        second: bool,
        queries: &[(usize, &HeldOutEvents)],
    ) -> Result<Vec<(u64, u64)>> {
        queries
            .iter()
            .map(|&(limit, events)| self.count(second, limit, events))
            .collect()
    }
}

/// In-memory held-out rows: the rows `np..` of `p` and `nq..` of `q`.
pub struct Tail<'a> {
    /// First side and its training rows.
    pub p: (&'a Samples, usize),
    /// Second side and its training rows.
    pub q: (&'a Samples, usize),
}

impl HeldOut for Tail<'_> {
    fn rows(&self, second: bool) -> usize {
        let (s, start) = if second { self.q } else { self.p };
        s.n() - start
    }

    fn count(&self, second: bool, limit: usize, events: &HeldOutEvents) -> Result<(u64, u64)> {
        let (s, start) = if second { self.q } else { self.p };
        // Blocks of rows counted in parallel; integer sums, so any thread count gives the same.
        Ok(count_chunk(s, start..start + limit, events))
    }
}

/// The two event counts of `events` among the rows `rows` of `chunk`, in parallel blocks.
pub(crate) fn count_chunk(
    chunk: &Samples,
    rows: std::ops::Range<usize>,
    events: &HeldOutEvents,
) -> (u64, u64) {
    let prepared = PreparedEvents::new(&[events]);
    count_chunk_many(chunk, &[rows], &prepared)
        .first()
        .copied()
        .unwrap_or((0, 0))
}

/// The counts of each of the `prepared` events among its rows `ranges[k]` of `chunk`, in one
/// pass of parallel blocks that evaluates each distinct score once
/// ([`PreparedEvents::count_block`]); integer sums, so any thread count gives the same.
pub(crate) fn count_chunk_many(
    chunk: &Samples,
    ranges: &[std::ops::Range<usize>],
    prepared: &PreparedEvents<'_>,
) -> Vec<(u64, u64)> {
    count_chunk_many_as(chunk, ranges, prepared, false)
}

/// [`count_chunk_many`] of the float-representation view of the releases `raw`, the view never
/// written out ([`PreparedEvents::count_block_viewed`]; only where
/// [`PreparedEvents::counts_through`] allows it).
pub(crate) fn count_chunk_many_viewed(
    raw: &Samples,
    ranges: &[std::ops::Range<usize>],
    prepared: &PreparedEvents<'_>,
) -> Vec<(u64, u64)> {
    count_chunk_many_as(raw, ranges, prepared, true)
}

fn count_chunk_many_as(
    chunk: &Samples,
    ranges: &[std::ops::Range<usize>],
    prepared: &PreparedEvents<'_>,
    viewed: bool,
) -> Vec<(u64, u64)> {
    const BLOCK: usize = 1 << 13;
    let zero = vec![(0u64, 0u64); ranges.len()];
    let lo = ranges.iter().map(|r| r.start).min().unwrap_or(0);
    let hi = ranges.iter().map(|r| r.end).max().unwrap_or(0);
    if lo >= hi {
        return zero;
    }
    let blocks: Vec<std::ops::Range<usize>> = (lo..hi)
        .step_by(BLOCK)
        .map(|r| r..(r + BLOCK).min(hi))
        .collect();
    use rayon::prelude::*;
    blocks
        .into_par_iter()
        .map(|b| {
            if viewed {
                prepared.count_block_viewed(chunk, b, ranges)
            } else {
                prepared.count_block(chunk, b, ranges)
            }
        })
        .reduce(|| zero.clone(), add_counts)
}

/// The sums, query by query, of two lists of (first event, second event) counts.
pub(crate) fn add_counts(mut a: Vec<(u64, u64)>, b: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    for (x, y) in a.iter_mut().zip(b) {
        x.0 += y.0;
        x.1 += y.1;
    }
    a
}

/// Checks what every tester needs of its inputs: β in (0, 1), equal dimensions, finite values,
/// at least `min_n` samples per side.
pub fn check_inputs(
    p: &Samples,
    q: &Samples,
    failure_probability: f64,
    min_n: usize,
) -> Result<()> {
    check_rows(p.into(), q.into(), failure_probability, min_n)
}

/// [`check_inputs`] of training rows however they are held (packed rows are a view of finite
/// releases, finite themselves: only their dimension and size are checked).
pub fn check_rows(
    p: rows::Rows<'_>,
    q: rows::Rows<'_>,
    failure_probability: f64,
    min_n: usize,
) -> Result<()> {
    if !(failure_probability > 0.0 && failure_probability < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "failure probability β = {failure_probability}; allowed: 0 < β < 1"
        )));
    }
    if p.dim() != q.dim() {
        return Err(Error::InvalidSamples(format!(
            "the two sides have different output dimensions ({} and {})",
            p.dim(),
            q.dim()
        )));
    }
    for (side, s) in [("first", p), ("second", q)] {
        if let Some(s) = s.samples()
            && let Some((i, j, v)) = s.first_non_finite()
        {
            return Err(Error::InvalidSamples(format!(
                "{side} side: release {i}, coordinate {j} is {v}; samples must be finite"
            )));
        }
        if s.n() < min_n {
            return Err(Error::InvalidSamples(format!(
                "{side} side has {} samples; this tester needs at least {min_n}",
                s.n()
            )));
        }
    }
    Ok(())
}

/// What [`PropertyTester::select_and_bound`] chose and measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Selected {
    /// Index into the candidates.
    pub index: usize,
    /// False: a lower bound on D(P‖Q); true: on D(Q‖P).
    pub reversed: bool,
    /// True: a lower bound on the larger of D(P‖Q) and D(Q‖P) (both directions summed).
    pub both: bool,
    /// The bound.
    pub measurement: Measurement,
}

/// Builds a tester by name: `hockey-stick`, `renyi`, `mmd` or `histogram` (see [`TESTER_NAMES`]).
pub fn by_name(name: &str) -> Result<Box<dyn PropertyTester>> {
    match name {
        "hockey-stick" => Ok(Box::new(HockeyStickTester::default())),
        "renyi" => Ok(Box::new(RenyiTester::default())),
        "mmd" => Ok(Box::new(MmdTester::default())),
        "histogram" => Ok(Box::new(HistogramTester::default())),
        // DP-Auditorium's variational form of the hockey-stick tester (a class-weighted
        // discriminator's decision as the event); not part of `all`, which runs the four testers.
        "hockey-stick-variational" => Ok(Box::new(HockeyStickTester::variational())),
        other => Err(Error::InvalidConfig(format!(
            "unknown tester {other:?}; allowed: {}, hockey-stick-variational",
            TESTER_NAMES.join(", ")
        ))),
    }
}

/// Names of all testers.
pub const TESTER_NAMES: &[&str] = &["hockey-stick", "renyi", "mmd", "histogram"];

/// Parses a `--tester` list: a name, comma-separated names, or `all` (the four testers of
/// [`TESTER_NAMES`]). A name given twice is an error: each tester's bounds take a share of β, so
/// a repeated name would halve every share without adding evidence.
pub fn parse_list(spec: &str) -> Result<Vec<Box<dyn PropertyTester>>> {
    let names: Vec<&str> = if spec.trim() == "all" {
        TESTER_NAMES.to_vec()
    } else {
        spec.split(',').map(str::trim).collect()
    };
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(Error::InvalidConfig(format!(
                "--tester {spec}: {n:?} is named twice; allowed: each tester at most once (β is split over the testers named)"
            )));
        }
    }
    names.into_iter().map(by_name).collect()
}

/// The testers of `testers` that can test `claim` with `samples_per_side` releases, and for the
/// others `name: why` (what `--tester all` leaves out, e.g. the Rényi tester on an (ε, δ) claim).
/// Errors other than "claim not testable" are returned as they are.
#[allow(clippy::type_complexity)]
pub fn applicable(
    testers: Vec<Box<dyn PropertyTester>>,
    claim: &PrivacyClaim,
    samples_per_side: usize,
) -> Result<(Vec<Box<dyn PropertyTester>>, Vec<String>)> {
    let mut keep = Vec::new();
    let mut skipped = Vec::new();
    for t in testers {
        match t.plan(claim, samples_per_side) {
            Ok(_) => keep.push(t),
            Err(Error::ClaimNotTestable { reason, .. }) => {
                skipped.push(format!("{}: {reason}", t.name()))
            }
            Err(e) => return Err(e),
        }
    }
    Ok((keep, skipped))
}
