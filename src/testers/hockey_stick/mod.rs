//! Hockey-stick tester: events chosen on a training split, bounded on held-out data by an exact
//! conditional test on Poissonized counts. Two forms share that guarantee and differ in how the
//! event is chosen.
//!
//! (Why one file of ~1,200 lines: the proof in these docs and the code it covers — event
//! candidates, the train/held-out split, the selection and the bound — are one argument, and
//! splitting them would separate each step of the proof from the code it is about. Tests are in
//! `hockey_stick_tests.rs`.)
//!
//! Both rest on the variational (dual) form of the divergence,
//! H_{e^ε}(P ‖ Q) = sup_S P(S) − e^ε Q(S) = sup_{f: X → [0, 1]} E_P f − e^ε E_Q f,
//! whose supremum is reached at S* = {x : p(x) > e^ε q(x)}: any single event S gives the lower
//! bound H_{e^ε}(P ‖ Q) ≥ P(S) − e^ε Q(S), and the closer S is to S*, the tighter it is.
//!
//! # The event-search form (default, [`HockeyStickTester::default`])
//! On the training split the tester scores a set of candidate events and keeps the best one.
//! Candidates are thresholded scores {s(x) ≥ t}:
//! - each continuous output coordinate and its negation, and each discrete coordinate with
//!   more than two values and its negation (discrete outputs are numbers: counts, ranks, the
//!   `auto` transform's norms; a threshold pools tail values the table below sees one by one);
//! - for discrete outputs, the estimated log-likelihood ratio of each output value (of the
//!   joint pattern of all discrete coordinates; when most training rows have a pattern seen
//!   only once, or the patterns average fewer than 100 training rows each, that table and one
//!   per pair of discrete coordinates with more than two values (at most 16 such coordinates)
//!   are estimated on the first half of the training rows and judged on the second, so that
//!   their in-sample overfit does not win the selection); for mixed
//!   outputs, a continuous coordinate restricted to one pattern of the discrete coordinates;
//! - *near-atoms* of each continuous coordinate j: the score −|x_j − v| (events
//!   {|x_j − v| ≤ w}, the width w searched like any threshold) for the most frequent values v
//!   of x_j in the training rows after rounding to 9 significant digits (see [`near_centres`]).
//!   A noise scale clamped to a tiny value (e.g. 1e-12, local-sensitivity mechanisms) puts mass
//!   within 1e-10 of the true answer without ever repeating a value exactly, so neither the
//!   atoms of discrete outputs nor a one-sided threshold isolates it; for continuous outputs
//!   (where no 9-digit value repeats often) there is no such candidate;
//! - for outputs with at least two continuous coordinates, a *learned score*: the logit of a
//!   logistic-regression discriminator (linfa-logistic) fitted on the training rows of P
//!   (label 1) against those of Q (label 0), with features the standardized continuous
//!   coordinates and their squares (so it can follow a shift along any direction and a change of
//!   variance). It finds events no single coordinate can express, e.g. a mean shift along a
//!   diagonal. When the joint table of the discrete coordinates is judged out of sample (above)
//!   and at least two coordinates vary, the discriminator is fitted on every varying coordinate,
//!   discrete ones included (a vector of counts whose coordinates each leak a little: the
//!   log-likelihood ratio of independent coordinates is a sum over them).
//!
//! The threshold of every candidate, the direction, and whether to use one event or one per
//! direction summed (below), are the ones maximizing the z-statistic predicted for the held-out
//! test (a normal approximation of the conditional test below, used for selection only).
//!
//! # DP-Auditorium's variational form ([`HockeyStickTester::variational`])
//! DP-Auditorium's hockey-stick tester (Kong et al. 2024, `HockeyStickPropertyTester`) trains a
//! discriminator between the two output distributions with class weights 1 : e^ε (its training
//! mixture draws the two sides in those proportions) and turns the discriminator's accuracy on
//! held-out data into a lower bound on δ. The Bayes decision of that class-weighted problem is
//! exactly S* above, so the weighted accuracy a satisfies a·(1 + e^ε) − e^ε = P(S) − e^ε Q(S) for
//! the decided event S. Here the discriminator is the same logistic regression as the learned
//! score (on all non-constant coordinates, for any output dimension), fitted with balanced
//! classes, so that its logit estimates ln(p(x)/q(x)); the class weights 1 : e^ε then enter as
//! the decision threshold: S = {logit(x) ≥ ε}, the Bayes decision of the weighted problem (equal
//! to the decision of weighted training when the logistic model is well specified). No
//! threshold is searched. Where DP-Auditorium bounds the accuracy with Hoeffding's inequality,
//! this tester uses the exact test below, valid and much tighter for the rare events of small δ.
//!
//! # Guarantee
//! Both forms:
//! 1. split each side's i.i.d. samples into a training part (the first `train_fraction`) and a
//!    held-out part of m_P and m_Q rows;
//! 2. on the training part only, choose the score(s) and threshold(s), the direction (P ‖ Q,
//!    Q ‖ P, or both summed) and, for profile claims, the ε (see
//!    [`PropertyTester::select_and_bound`]); the discriminator is fitted on training rows only;
//! 3. draw N_P, N_Q ~ Poisson(λ), λ = m − 5√m with m = min(m_P, m_Q), from the tester's seeded
//!    stream and use the first N_P, N_Q held-out rows (if a draw exceeds the rows available,
//!    probability ≈ 3e-7, the bound is 0, which is always valid). The held-out rows are read
//!    only through [`HeldOut`]: in memory, or streamed from shards by `audit test`
//!    ([`PropertyTester::select_and_bound_split`], training rows = the first rows of each side);
//!    either way the same rows in the same order, so the same counts;
//! 4. count U = the releases in the event(s) on the side each event favours and W = those on
//!    the other side: for one event S in direction P ‖ Q, U = #{P-releases in S},
//!    W = #{Q-releases in S}; for both directions summed, events S₁ (for P ‖ Q) and
//!    S₂' = S₂ \ S₁ (for Q ‖ P), U = #P in S₁ + #Q in S₂', W = #Q in S₁ + #P in S₂';
//! 5. return L = [`crate::bounds::poisson_contrast_lower`](U, W, e^ε, k·λ, β, γ = β/20), k the
//!    number of events.
//!
//! Why it holds. The events are functions of the training part only, hence independent of the
//! held-out rows. By Poisson splitting, the counts of N ~ Poisson(λ) i.i.d. releases in disjoint
//! cells are independent Poisson variables; S₁ and S₂' are disjoint, so U ~ Poisson(μ_U) and
//! W ~ Poisson(μ_W) are independent, with μ_U − e^ε μ_W = λ·[P(S₁) − e^ε Q(S₁)]
//! (+ λ·[Q(S₂') − e^ε P(S₂')] for a pair) ≤ k·λ·max(H_{e^ε}(P‖Q), H_{e^ε}(Q‖P)) (one event:
//! ≤ λ·H_{e^ε} of its direction). `poisson_contrast_lower` is a level-β lower confidence bound
//! on (μ_U − e^ε μ_W)/(kλ): the exact conditional binomial test of U given U + W (no normal
//! approximation, valid for the rare events of small δ), with the nuisance μ_W restricted to
//! its exact (Garwood) confidence set at γ (Berger & Boos 1994), inverted in θ. So with
//! probability ≥ 1 − β, L ≤ H_{e^ε} of the reported direction (of the larger direction, for a
//! pair). Summing both directions doubles the signal of a symmetric violation while the noise
//! grows by √2; a one-direction violation is left to the single-event choice. How well the
//! events are chosen affects only the power, never this guarantee. The empirical ε is the same
//! test inverted in ε at the claim's δ ([`crate::bounds::poisson_contrast_epsilon`]).
//!
//! Poissonizing costs power for likely events (variance p instead of p(1 − p)), which matters
//! only for large-δ profile points; it is what makes the test exact with one nuisance parameter.
//! Measured (`audit bench power --tester hockey-stick --samples 100000 --repeats 40`): at
//! s = 0.63 on the point claim 38/40 detections against 13/40 with the previous separate
//! Clopper–Pearson bounds on P(S) and Q(S); on the profile claim at s = 0.9, 32/40 against 35/40
//! (since then a second bound at an ε planned from the claim alone, in its own β slot, lifted the
//! profile claim at s = 0.9 to 195/200: `planned_profile_epsilon` in `testers/common.rs`).
//!
//! # Assumptions
//! Releases are i.i.d. within each side and the sides are independent (the runner draws them from
//! independent ChaCha streams). Nothing is assumed about the output distribution: the test is
//! exact (Poisson and binomial tails), hence valid for rare events (δ ~ 1e-5 and below). The
//! discriminator's fit is deterministic (L-BFGS from a zero start on a deterministic subsample of
//! the training rows), and the Poisson draws come from the tester's seeded stream, so
//! results depend only on the samples and the seed.

use std::collections::HashMap;

use rand::Rng;

use rand_distr::Distribution;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::common::HeldOutEvent;
use super::common::{check_fraction, hockey_stick_epsilon, train_rows};
use super::{
    BinomialTest, ContrastCounts, Divergence, EventBound, HeldOut, Measurement, PropertyTester,
    Selected, Tail, check_inputs,
};
use crate::bounds::{
    binomial_contrast_epsilon, binomial_contrast_lower, contrast_null_share, normal_upper_quantile,
    poisson_contrast_epsilon, poisson_contrast_lower, poisson_mean_lower, wilson_lower,
    wilson_upper,
};
use crate::error::{Error, Result};
use crate::mechanisms::{PrivacyClaim, Samples};

/// How the hockey-stick tester chooses its event (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HockeyStickForm {
    /// Search candidate scores (coordinates, atoms, the learned score) and thresholds on the
    /// training split.
    #[default]
    EventSearch,
    /// DP-Auditorium's variational form: a class-weighted discriminator's decision is the event.
    Variational,
}

/// The hockey-stick tester. See the module docs for the two forms and the guarantee.
#[derive(Clone, Debug)]
pub struct HockeyStickTester {
    /// Fraction of each side used to choose the event (the rest bounds it). In (0, 1).
    pub train_fraction: f64,
    /// A coordinate with at most this many distinct training values is treated as discrete.
    pub max_discrete_values: usize,
    /// Number of ε values tested for profile claims (Gaussian DP, zCDP, Rényi).
    pub profile_grid: usize,
    /// How the event is chosen.
    pub form: HockeyStickForm,
    /// Event-search form only: add the learned (logistic-regression) score to the candidates when
    /// the output has at least two continuous coordinates, or at least two varying coordinates
    /// and a discrete table too fine to estimate in sample (see the module docs).
    pub learned_score: bool,
    /// Event-search form only: add near-atom events {|x_j − v| ≤ w} around frequent training
    /// values of each continuous coordinate (see the module docs).
    pub near_atoms: bool,
}

impl Default for HockeyStickTester {
    fn default() -> Self {
        Self {
            train_fraction: 0.2,
            max_discrete_values: 64,
            profile_grid: 20,
            form: HockeyStickForm::EventSearch,
            learned_score: true,
            near_atoms: true,
        }
    }
}

/// A candidate score s(x); the event is {s(x) ≥ t}. Serializable (exactly: floats in
/// shortest round-trip form, the atom table as a sorted list) so that a chosen event can be
/// counted on other machines ([`HeldOutEvents`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Score {
    /// sign · x_j.
    Coordinate { j: usize, sign: f64 },
    /// Estimated log-likelihood ratio of the values of the coordinates `coords` (a table keyed by
    /// their bit patterns); unseen values score 0.
    Atoms {
        coords: Vec<usize>,
        #[serde(with = "sorted_table")]
        table: HashMap<Vec<u64>, f64>,
        /// Training rows per side the table was estimated on (0: all of them, and the
        /// threshold is chosen on the same rows; else the threshold and the selection read only
        /// the training rows after them, see [`Score::selection_start`]).
        fitted_rows: usize,
    },
    /// sign · x_j when the coordinates `coords` take the values `pattern`, −∞ otherwise.
    Conditional {
        coords: Vec<usize>,
        pattern: Vec<u64>,
        j: usize,
        sign: f64,
    },
    /// −|x_j − centre|: the event {|x_j − centre| ≤ −t} around a frequent training value.
    Near { j: usize, centre: f64 },
    /// The logit of a logistic-regression discriminator fitted on the training rows.
    Learned(Box<LearnedScore>),
}

/// An atom table as a list of (key, value) sorted by key: JSON object keys must be strings, and
/// a sorted list is the same bytes however the map was filled.
mod sorted_table {
    use std::collections::HashMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(
        table: &HashMap<Vec<u64>, f64>,
        s: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let mut v: Vec<(&Vec<u64>, &f64)> = table.iter().collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> std::result::Result<HashMap<Vec<u64>, f64>, D::Error> {
        let v: Vec<(Vec<u64>, f64)> = Vec::deserialize(d)?;
        Ok(v.into_iter().collect())
    }
}

/// The event(s) one held-out count asks about: S₁ = {s₁(x) ≥ t₁} and, for a pair of
/// directions, S₂ = {s₂(x) ≥ t₂}; a release's flags are (in S₁, in S₂ \ S₁). Chosen on the
/// training split only. Serializable, so that `audit test --plan-out` can write it and shards
/// can be counted against it anywhere (see docs/test.md, "Counting shards as tasks").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeldOutEvents {
    first: (Score, f64),
    #[serde(default, skip_serializing_if = "Option::is_none")]
    second: Option<(Score, f64)>,
}

impl HeldOutEvents {
    /// (in S₁, in S₂ \ S₁) for one release.
    pub fn flags(&self, row: &ndarray::ArrayView1<'_, f64>) -> (bool, bool) {
        let in1 = self.first.0.eval(row) >= self.first.1;
        let in2 = !in1 && self.second.as_ref().is_some_and(|(s, t)| s.eval(row) >= *t);
        (in1, in2)
    }

    /// The largest coordinate index any score reads (so a count can refuse releases of too
    /// small a dimension instead of indexing out of range).
    pub fn max_coordinate(&self) -> usize {
        let of = |s: &Score| match s {
            Score::Coordinate { j, .. } | Score::Near { j, .. } => *j,
            Score::Atoms { coords, .. } => coords.iter().copied().max().unwrap_or(0),
            Score::Conditional { coords, j, .. } => {
                coords.iter().copied().max().unwrap_or(0).max(*j)
            }
            Score::Learned(m) => m.coords.iter().copied().max().unwrap_or(0),
        };
        let first = of(&self.first.0);
        self.second
            .as_ref()
            .map_or(first, |(s, _)| first.max(of(s)))
    }
}

fn key(row: &ndarray::ArrayView1<'_, f64>, coords: &[usize]) -> Vec<u64> {
    coords.iter().map(|&c| row[c].to_bits()).collect()
}

impl Score {
    fn eval(&self, row: &ndarray::ArrayView1<'_, f64>) -> f64 {
        match self {
            Score::Coordinate { j, sign } => sign * row[*j],
            Score::Atoms { coords, table, .. } => *table.get(&key(row, coords)).unwrap_or(&0.0),
            Score::Conditional {
                coords,
                pattern,
                j,
                sign,
            } => {
                if key(row, coords) == *pattern {
                    sign * row[*j]
                } else {
                    f64::NEG_INFINITY
                }
            }
            Score::Near { j, centre } => -(row[*j] - centre).abs(),
            Score::Learned(m) => m.logit(row),
        }
    }

    fn describe(&self, t: f64) -> String {
        let coord = |j: usize, sign: f64| {
            if sign > 0.0 {
                format!("coordinate {j} ≥ {t}")
            } else {
                format!("coordinate {j} ≤ {}", -t)
            }
        };
        match self {
            Score::Coordinate { j, sign } => coord(*j, *sign),
            Score::Atoms { coords, table, .. } => {
                let mut chosen: Vec<(&Vec<u64>, f64)> = table
                    .iter()
                    .filter(|(_, v)| **v >= t)
                    .map(|(k, v)| (k, *v))
                    .collect();
                let n = chosen.len();
                // The most favoured values, for the reader (ties in a fixed order).
                chosen.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
                let shown: Vec<String> = chosen
                    .iter()
                    .take(3)
                    .map(|(k, _)| {
                        let vals: Vec<String> =
                            k.iter().map(|b| f64::from_bits(*b).to_string()).collect();
                        format!("({})", vals.join(", "))
                    })
                    .collect();
                format!(
                    "the joint value of coordinates {coords:?} is one of the {n} values whose estimated log-likelihood ratio is ≥ {t:.4} (the most favoured: {}{})",
                    shown.join("; "),
                    if n > 3 { "; …" } else { "" }
                )
            }
            Score::Conditional {
                coords,
                pattern,
                j,
                sign,
            } => {
                let vals: Vec<f64> = pattern.iter().map(|b| f64::from_bits(*b)).collect();
                format!("coordinates {coords:?} = {vals:?} and {}", coord(*j, *sign))
            }
            Score::Near { j, centre } => {
                format!(
                    "|coordinate {j} − {centre}| ≤ {:e} (near a frequent value)",
                    -t
                )
            }
            Score::Learned(m) => m.describe(t),
        }
    }
}

/// Most training rows per side the discriminator is fitted on.
const FIT_ROWS_PER_SIDE: usize = 10_000;
/// Budget on rows × features of the fit (both sides together): the rows per side are cut to
/// max(1000, FIT_CELLS / (2 × features)) for wide outputs.
const FIT_CELLS: usize = 1_000_000;
/// L-BFGS iteration cap of the fit.
const FIT_MAX_ITERATIONS: u64 = 100;

/// A logistic-regression discriminator's logit on standardized coordinates and their squares:
/// s(x) = b + Σ_k w_k z_k + v_k (z_k² − a_k)/c_k with z_k = (x_{j_k} − μ_k)/σ_k; every constant
/// is estimated on training rows only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct LearnedScore {
    coords: Vec<usize>,
    mean: Vec<f64>,
    sd: Vec<f64>,
    sq_mean: Vec<f64>,
    sq_sd: Vec<f64>,
    w_lin: Vec<f64>,
    w_sq: Vec<f64>,
    intercept: f64,
    /// Training rows per side the fit used.
    rows_per_side: usize,
    /// True in the variational form: the event is the class-weighted decision {logit ≥ ε}.
    decision: bool,
}

impl LearnedScore {
    fn logit(&self, row: &ndarray::ArrayView1<'_, f64>) -> f64 {
        let mut s = self.intercept;
        for (k, &j) in self.coords.iter().enumerate() {
            let z = (row[j] - self.mean[k]) / self.sd[k];
            s += self.w_lin[k] * z + self.w_sq[k] * (z * z - self.sq_mean[k]) / self.sq_sd[k];
        }
        s
    }

    /// The same discriminator with the labels swapped: every parameter negated.
    fn negated(&self) -> Self {
        let neg = |v: &[f64]| v.iter().map(|w| -w).collect();
        Self {
            w_lin: neg(&self.w_lin),
            w_sq: neg(&self.w_sq),
            intercept: -self.intercept,
            ..self.clone()
        }
    }

    fn describe(&self, t: f64) -> String {
        let what = format!(
            "logistic-regression discriminator fitted on {0} + {0} training rows (features: coordinates {1:?} standardized, and their squares)",
            self.rows_per_side, self.coords
        );
        if self.decision {
            format!(
                "the class-weighted decision of a {what}: logit ≥ ε = {t:.6} (variational form)"
            )
        } else {
            format!("logit of a {what} ≥ {t:.6}")
        }
    }
}

/// Fits the discriminator of `a` (label 1) against `b` (label 0) on the first half (at most) of
/// their training rows `0..na` and `0..nb`, with features the coordinates `coords`
/// (standardized) and their squares; the other training rows choose its threshold (see
/// [`Score::selection_start`]).
///
/// Cost bound: at most [`FIT_ROWS_PER_SIDE`] rows per side and about [`FIT_CELLS`] feature cells
/// in all, [`FIT_MAX_ITERATIONS`] L-BFGS iterations. The rows are the first m training rows of
/// each side: the rows are i.i.d., so this deterministic prefix is a uniform subsample, and
/// equal counts make the classes balanced (the logit then estimates ln(p/q)). `None` when no
/// coordinate varies or the fit fails; the candidate is then skipped.
fn fit_learned(
    a: &Samples,
    na: usize,
    b: &Samples,
    nb: usize,
    coords: &[usize],
    decision: bool,
) -> Option<LearnedScore> {
    if coords.is_empty() {
        return None;
    }
    let features = 2 * coords.len();
    let m = (na / 2)
        .min(nb / 2)
        .min(FIT_ROWS_PER_SIDE)
        .min((FIT_CELLS / (2 * features)).max(1000));
    if m < 2 {
        return None;
    }
    let rows = 2 * m;
    let value = |i: usize, j: usize| {
        if i < m {
            a.values()[[i, j]]
        } else {
            b.values()[[i - m, j]]
        }
    };
    // Pooled standardization of each coordinate and of its square (training rows only).
    let moments = |f: &dyn Fn(usize) -> f64| {
        let mean = (0..rows).map(f).sum::<f64>() / rows as f64;
        let var = (0..rows).map(|i| (f(i) - mean).powi(2)).sum::<f64>() / rows as f64;
        (mean, var.sqrt())
    };
    let mut kept = Vec::new();
    let (mut mean, mut sd, mut sq_mean, mut sq_sd) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &j in coords {
        let (mu, sigma) = moments(&|i| value(i, j));
        if !(sigma > 0.0 && sigma.is_finite() && mu.is_finite()) {
            continue;
        }
        let z = |i: usize| (value(i, j) - mu) / sigma;
        let (a2, c2) = moments(&|i| z(i) * z(i));
        if !(c2 > 0.0 && c2.is_finite()) {
            // z² constant (a coordinate with two values): keep only the linear term.
            kept.push(j);
            mean.push(mu);
            sd.push(sigma);
            sq_mean.push(0.0);
            sq_sd.push(f64::INFINITY);
            continue;
        }
        kept.push(j);
        mean.push(mu);
        sd.push(sigma);
        sq_mean.push(a2);
        sq_sd.push(c2);
    }
    if kept.is_empty() {
        return None;
    }
    let k = kept.len();
    let x = ndarray::Array2::from_shape_fn((rows, 2 * k), |(i, f)| {
        let c = f % k;
        let z = (value(i, kept[c]) - mean[c]) / sd[c];
        if f < k {
            z
        } else if sq_sd[c].is_finite() {
            (z * z - sq_mean[c]) / sq_sd[c]
        } else {
            0.0
        }
    });
    let y = ndarray::Array1::from_shape_fn(rows, |i| usize::from(i < m));
    let dataset = linfa::Dataset::new(x, y);
    // The loss is a sum over rows, so the L2 penalty α = 1 is negligible at these sizes; it only
    // keeps the problem strongly convex (separable data). Gradient tolerance relative to the rows.
    let model = linfa::traits::Fit::fit(
        &linfa_logistic::LogisticRegression::default()
            .alpha(1.0)
            .max_iterations(FIT_MAX_ITERATIONS)
            .gradient_tolerance(1e-6 * rows as f64),
        &dataset,
    )
    .ok()?;
    let w = model.params();
    let intercept = model.intercept();
    if !intercept.is_finite() || w.iter().any(|v| !v.is_finite()) {
        return None;
    }
    Some(LearnedScore {
        coords: kept,
        mean,
        sd,
        sq_mean,
        sq_sd,
        w_lin: w.iter().take(k).copied().collect(),
        w_sq: w.iter().skip(k).copied().collect(),
        intercept,
        rows_per_side: m,
        decision,
    })
}

impl Score {
    /// First training row (per side) the threshold and the selection may read: the learned score
    /// is fitted on rows `0..m` and judged on the training rows after them, so that its
    /// in-sample fit does not make it look better than the other candidates. Still training rows
    /// only.
    fn selection_start(&self) -> usize {
        match self {
            Score::Learned(m) => m.rows_per_side,
            Score::Atoms { fitted_rows, .. } => *fitted_rows,
            _ => 0,
        }
    }
}

/// The scores of `rows`, in row order (computed in parallel blocks).
fn scores_of(score: &Score, s: &Samples, rows: std::ops::Range<usize>) -> Vec<f64> {
    rows.into_par_iter()
        .with_min_len(PAR_ROWS)
        .map(|i| score.eval(&s.row(i)))
        .collect()
}

/// Rows per parallel task on the training split.
const PAR_ROWS: usize = 1 << 14;

/// Distinct values (as bits) of coordinate j among rows, up to `cap + 1`.
fn distinct_values(s: &Samples, rows: std::ops::Range<usize>, j: usize, cap: usize) -> usize {
    let mut seen = std::collections::HashSet::new();
    for i in rows {
        seen.insert(s.values()[[i, j]].to_bits());
        if seen.len() > cap {
            break;
        }
    }
    seen.len()
}

/// Smoothed log-likelihood-ratio table of the patterns of `coords` on the training rows.
fn atom_table(
    p: &Samples,
    np: usize,
    q: &Samples,
    nq: usize,
    coords: &[usize],
) -> HashMap<Vec<u64>, f64> {
    // The two sides counted at once, then merged: each count is a whole number of rows of one
    // side, so the table is the same as counted in one pass.
    let side = |s: &Samples, n: usize| {
        let mut m: HashMap<Vec<u64>, f64> = HashMap::new();
        for i in 0..n {
            *m.entry(key(&s.row(i), coords)).or_default() += 1.0;
        }
        m
    };
    let (cp, cq) = rayon::join(|| side(p, np), || side(q, nq));
    let mut counts: HashMap<Vec<u64>, (f64, f64)> =
        cp.into_iter().map(|(k, c)| (k, (c, 0.0))).collect();
    for (k, c) in cq {
        counts.entry(k).or_default().1 += c;
    }
    let a = counts.len() as f64;
    counts
        .into_iter()
        .map(|(k, (cp, cq))| {
            // A pattern seen once in all the training rows says nothing about its ratio (it is
            // typically a continuous value that happened to land in a mostly discrete
            // coordinate, never to be seen again): it scores 0, like unseen patterns, instead of
            // the ±ln 3 its smoothed counts would give.
            if cp + cq < 2.0 {
                return (k, 0.0);
            }
            let lr = ((cp + 0.5) / (np as f64 + 0.5 * a)).ln()
                - ((cq + 0.5) / (nq as f64 + 0.5 * a)).ln();
            (k, lr)
        })
        .collect()
}

/// Most discrete coordinates with more than two values whose pairs are offered as atom tables
/// when the joint table is too sparse (at most 120 pairs).
const MAX_PAIRED_DISCRETE: usize = 16;

/// Significant digits of the rounding that groups training values into near-atoms.
const NEAR_DIGITS: i32 = 9;
/// Most near-atom centres per continuous coordinate.
const NEAR_PER_COORD: usize = 4;

/// Centres of near-atoms of coordinate j from the training rows `0..np` of `p` and `0..nq` of
/// `q` (pooled, so the centres do not depend on which side is favoured). The values are grouped
/// by their rounding to [`NEAR_DIGITS`] significant digits — relative to max(|x|, s), where s is
/// the 90 % quantile of |x| over the pooled rows, so that values within ~s·1e-8 of 0 form one
/// group too — and the at most [`NEAR_PER_COORD`] largest groups holding at least
/// max(10, 1/1000 of the pooled rows) rows give a centre each, the median of the group's raw
/// values (one per cluster: a centre within the rounding resolution of a larger group's is
/// skipped, since a cluster straddling a rounding boundary splits in two). Training rows only,
/// so the events built on them are independent of the held-out rows like every other
/// candidate.
fn near_centres(p: &Samples, np: usize, q: &Samples, nq: usize, j: usize) -> Vec<f64> {
    let values: Vec<f64> = (0..np)
        .into_par_iter()
        .map(|i| p.values()[[i, j]])
        .chain((0..nq).into_par_iter().map(|i| q.values()[[i, j]]))
        .filter(|x| x.is_finite())
        .collect();
    if values.is_empty() {
        return Vec::new();
    }
    let mut abs: Vec<f64> = values.par_iter().map(|x| x.abs()).collect();
    let k = abs.len() * 9 / 10;
    let scale = *abs.select_nth_unstable_by(k, f64::total_cmp).1;
    drop(abs);
    let resolution = 10f64.powi(1 - NEAR_DIGITS);
    let group = |x: f64| -> (i32, i64) {
        if x.abs() < scale {
            // Absolute grid of s·10^-8 near 0 (|x| < s).
            return (i32::MIN, (x / (scale * resolution)).round() as i64);
        }
        if x == 0.0 {
            return (i32::MIN, 0);
        }
        let e = x.abs().log10().floor() as i32;
        let m = (x / 10f64.powi(e - (NEAR_DIGITS - 1))).round();
        (e, m as i64)
    };
    // Groups as runs of (key, value) pairs sorted by key then value: 24 bytes per value, where a
    // map of vectors took ~80 (most continuous values are alone in their group).
    let mut keyed: Vec<((i32, i64), f64)> = values.par_iter().map(|&x| (group(x), x)).collect();
    drop(values);
    // Elements equal under this order are identical (key, then value by total_cmp), so the
    // parallel unstable sort gives the sequential sort's sequence.
    keyed.par_sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.total_cmp(&b.1)));
    let min_count = 10.max((np + nq) / 1000);
    // (key, first index, length) of every group holding at least `min_count` values.
    let mut big: Vec<((i32, i64), usize, usize)> = Vec::new();
    let mut start = 0;
    while start < keyed.len() {
        let k = keyed[start].0;
        let len = keyed[start..].partition_point(|e| e.0 == k);
        if len >= min_count {
            big.push((k, start, len));
        }
        start += len;
    }
    big.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    let mut centres: Vec<f64> = Vec::new();
    for (_, first, len) in big {
        // The group's values are sorted (by total_cmp): its median is the middle one.
        let c = keyed[first + len / 2].1;
        let apart = |k: f64| (k - c).abs() > resolution * k.abs().max(c.abs()).max(scale);
        if centres.iter().all(|&k| apart(k)) {
            centres.push(c);
            if centres.len() == NEAR_PER_COORD {
                break;
            }
        }
    }
    centres
}

impl HockeyStickTester {
    /// Validated constructor.
    pub fn new(train_fraction: f64, profile_grid: usize) -> Result<Self> {
        if !(train_fraction > 0.0 && train_fraction < 1.0) {
            return Err(Error::InvalidConfig(format!(
                "train fraction {train_fraction}; allowed: strictly between 0 and 1"
            )));
        }
        if profile_grid == 0 {
            return Err(Error::InvalidConfig(
                "profile grid must have at least 1 point".into(),
            ));
        }
        Ok(Self {
            train_fraction,
            profile_grid,
            ..Self::default()
        })
    }

    /// DP-Auditorium's variational form (see the module docs): the event is the decision of a
    /// class-weighted logistic-regression discriminator fitted on the training split, bounded on
    /// held-out data by the exact conditional test. Other settings as in [`Default`].
    pub fn variational() -> Self {
        Self {
            form: HockeyStickForm::Variational,
            ..Self::default()
        }
    }

    /// The same tester with event form `form`.
    pub fn with_form(self, form: HockeyStickForm) -> Self {
        Self { form, ..self }
    }

    /// The candidate scores of `p` against `q` from their training rows. `mirror`: the learned
    /// score already fitted for the opposite direction (same training rows, labels swapped),
    /// whose negation is this direction's fit (the L2-penalized logistic loss is symmetric under
    /// swapping the labels and negating the parameters), so it is not fitted twice.
    fn candidates(
        &self,
        p: &Samples,
        np: usize,
        q: &Samples,
        nq: usize,
        mirror: Option<&LearnedScore>,
    ) -> Vec<Score> {
        let fit = |coords: &[usize], decision: bool| {
            mirror
                .map(LearnedScore::negated)
                .or_else(|| fit_learned(p, np, q, nq, coords, decision))
                .map(|m| Score::Learned(Box::new(m)))
        };
        let d = p.dim();
        let cap = self.max_discrete_values;
        let mut discrete = Vec::new();
        // Discrete coordinates with more than two values (not flags), for the pair tables.
        let mut multi_valued = Vec::new();
        let mut continuous = Vec::new();
        // Every coordinate that varies (not constant on both sides), in order, for the learned
        // score on a fine discrete table.
        let mut varying = Vec::new();
        // Distinct values of every coordinate on both sides, coordinates in parallel.
        let distinct: Vec<(usize, usize)> = (0..d)
            .into_par_iter()
            .map(|j| {
                rayon::join(
                    || distinct_values(p, 0..np, j, cap),
                    || distinct_values(q, 0..nq, j, cap),
                )
            })
            .collect();
        for (j, &(dp, dq)) in distinct.iter().enumerate() {
            let few = dp.max(dq) <= cap && dp.max(dq) * 10 <= np.min(nq);
            if dp.max(dq) <= 1 {
                // Constant on both sides: no information, unless the constants differ.
                if p.values()[[0, j]].to_bits() != q.values()[[0, j]].to_bits() {
                    discrete.push(j);
                }
                continue;
            }
            varying.push(j);
            if few {
                discrete.push(j);
                if dp.max(dq) > 2 {
                    multi_valued.push(j);
                }
            } else {
                continuous.push(j);
            }
        }
        let mut out = Vec::new();
        if self.form == HockeyStickForm::Variational {
            // One candidate: the discriminator on every coordinate that carries information.
            let mut coords: Vec<usize> = discrete.iter().chain(&continuous).copied().collect();
            coords.sort_unstable();
            out.extend(fit(&coords, true));
            return out;
        }
        // Threshold events of every continuous coordinate and, since discrete outputs here are
        // numbers (counts, ranks, encoded features), of every discrete coordinate with more than
        // two values too: {x_j ≥ t} pools the tail values whose ratios the atom table can only
        // estimate one by one (a pure-DP violation often shows only in a tail, e.g. the L1 norm
        // of a vector of counts when each count leaks a little).
        for &j in continuous.iter().chain(&multi_valued) {
            for sign in [1.0, -1.0] {
                out.push(Score::Coordinate { j, sign });
            }
        }
        if self.near_atoms {
            for &j in &continuous {
                for centre in near_centres(p, np, q, nq, j) {
                    out.push(Score::Near { j, centre });
                }
            }
        }
        // The learned score is fitted only when there are two or more coordinates it can
        // combine, where it can find directions no single coordinate has: two or more continuous
        // coordinates, or, when the joint table of the discrete coordinates is too fine to
        // estimate in sample (below), every varying coordinate (e.g. a vector of counts, where the
        // log-likelihood ratio of independent coordinates is a sum over them). In one dimension
        // its upper sets (of a quadratic in x) add only two-sided events, not worth a fit per
        // audit.
        let table = (!discrete.is_empty()).then(|| atom_table(p, np, q, nq, &discrete));
        // Patterns seen once score 0 (see `atom_table`); when they hold most training rows,
        // the joint table of all discrete coordinates is too fine to see anything. When there
        // are fewer than 100 training rows a pattern on average, its in-sample estimates
        // still overfit: the patterns whose ratio the training rows overestimate are the ones a
        // threshold on it picks, and it wins the selection on noise (measured on a vector of
        // four counts: a held-out excess of 0.002 chosen over a sum whose excess is 0.02). Both
        // make the table `fine`: it is then judged on rows it was not estimated on.
        let sparse = table
            .as_ref()
            .is_some_and(|t| 2 * t.values().filter(|&&v| v == 0.0).count() >= np + nq);
        let fine = sparse || table.as_ref().is_some_and(|t| 100 * t.len() > np + nq);
        if self.learned_score && continuous.len() >= 2 {
            out.extend(fit(&continuous, false));
        } else if self.learned_score && fine && varying.len() >= 2 {
            out.extend(fit(&varying, false));
        }
        if let Some(table) = table {
            // When the joint table is fine (e.g. the float features of a vector output), its
            // in-sample scores are mostly noise, so it is re-estimated on the first half of the
            // training rows and judged on the other half (as the learned score is), and each
            // pair of discrete coordinates with more than two values is offered too, estimated
            // the same way (a leak in the low mantissa bits within one binade of one coordinate
            // is a pair).
            let half = np.min(nq) / 2;
            let split = fine && half > 0;
            if split {
                // The joint table and each pair's, all re-estimated on the first half of the
                // training rows: computed in parallel, kept in this order.
                let mut sets = vec![discrete.clone()];
                if discrete.len() >= 3 && (2..=MAX_PAIRED_DISCRETE).contains(&multi_valued.len()) {
                    for (a, &ja) in multi_valued.iter().enumerate() {
                        for &jb in &multi_valued[a + 1..] {
                            sets.push(vec![ja, jb]);
                        }
                    }
                }
                let tables: Vec<Score> = sets
                    .into_par_iter()
                    .map(|coords| Score::Atoms {
                        table: atom_table(p, half, q, half, &coords),
                        coords,
                        fitted_rows: half,
                    })
                    .collect();
                out.extend(tables);
            } else {
                out.push(Score::Atoms {
                    coords: discrete.clone(),
                    table,
                    fitted_rows: 0,
                });
            }
            // Whole-output atoms when the discrete coordinates are not everything but full rows
            // still repeat a lot (e.g. integer-valued outputs with many values).
            if !continuous.is_empty() {
                // Most frequent discrete patterns (pooled), each combined with each continuous
                // coordinate and sign.
                let mut freq: HashMap<Vec<u64>, usize> = HashMap::new();
                for i in 0..np {
                    *freq.entry(key(&p.row(i), &discrete)).or_default() += 1;
                }
                for i in 0..nq {
                    *freq.entry(key(&q.row(i), &discrete)).or_default() += 1;
                }
                let mut patterns: Vec<(usize, Vec<u64>)> =
                    freq.into_iter().map(|(k, c)| (c, k)).collect();
                patterns.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                for (_, pattern) in patterns.into_iter().take(16) {
                    for &j in &continuous {
                        for sign in [1.0, -1.0] {
                            out.push(Score::Conditional {
                                coords: discrete.clone(),
                                pattern: pattern.clone(),
                                j,
                                sign,
                            });
                        }
                    }
                }
            }
        } else if continuous.is_empty() {
            // Every coordinate constant and equal on both sides: one trivial candidate.
            out.push(Score::Coordinate { j: 0, sign: 1.0 });
        }
        out
    }
}

/// Share of a bound's β spent on the Berger–Boos confidence bound of the nuisance mean μ_W (see
/// [`crate::bounds::poisson_contrast_lower`]); the conditional test runs at the rest.
const NUISANCE_SHARE: f64 = 0.05;

/// The Poisson mean λ of the number of held-out releases used per side when the smaller side
/// has `m` held-out rows: m − 5√m (P(Poisson(λ) > m) ≈ 3e-7), at least m/4. It only affects
/// power: when a draw exceeds m the bound is 0 (see [`HockeyStickTester::measure`]).
fn poisson_mean(m: usize) -> f64 {
    let m = m as f64;
    (m - 5.0 * m.sqrt()).max(m / 4.0)
}

/// One score's candidate thresholds in one direction ("a against b") on the training rows, with
/// the counts of training rows of a and b at or above each.
struct Curve {
    score: Score,
    /// Training rows of a and b the curve was built on.
    len_a: usize,
    len_b: usize,
    /// The training scores of a and b, sorted descending, kept only for a decision score (whose
    /// threshold is ε itself, so counts are read at each ε). Other curves drop them once their
    /// thresholds are counted: with many candidate scores they would hold a copy of the training
    /// split each (4 GB for 2·10^6 releases of dimension 20).
    decision_scores: Option<(Vec<f64>, Vec<f64>)>,
    /// Candidate thresholds (descending), with the counts of `sa` and `sb` at or above each.
    ts: Vec<f64>,
    ka: Vec<f64>,
    kb: Vec<f64>,
    /// Subtracted from this score's predicted z (the learned score's, see [`curve_of`]).
    discount: f64,
}

impl Curve {
    /// (threshold, count of a, count of b) candidates at ε (the variational discriminator's
    /// decision threshold is ε itself; other scores search thresholds).
    fn points(&self, epsilon: f64) -> Vec<(f64, f64, f64)> {
        match &self.score {
            Score::Learned(m) if m.decision => {
                let count = |v: &[f64]| v.partition_point(|&x| x >= epsilon) as f64;
                match &self.decision_scores {
                    Some((sa, sb)) => vec![(epsilon, count(sa), count(sb))],
                    None => Vec::new(),
                }
            }
            _ => (0..self.ts.len())
                .map(|i| (self.ts[i], self.ka[i], self.kb[i]))
                .collect(),
        }
    }
}

/// The candidate thresholds of `score` from the training rows `start..na` of `a` and
/// `start..nb` of `b`: the a-scores at ranks 1, 2, … growing by 6 % (about 170 thresholds for
/// 2·10^4 rows).
fn curve_of(score: Score, a: &Samples, na: usize, b: &Samples, nb: usize, lambda: f64) -> Curve {
    curve_with_growth(score, a, na, b, nb, lambda, 1.06)
}

/// [`curve_of`] with candidate thresholds at a-ranks growing by the factor `growth`.
fn curve_with_growth(
    score: Score,
    a: &Samples,
    na: usize,
    b: &Samples,
    nb: usize,
    lambda: f64,
    growth: f64,
) -> Curve {
    let start = score.selection_start();
    let (mut sa, mut sb) = rayon::join(
        || scores_of(&score, a, start.min(na)..na),
        || scores_of(&score, b, start.min(nb)..nb),
    );
    // Both sides sorted at once (descending by total_cmp).
    rayon::join(
        || sa.sort_by(|x, y| y.total_cmp(x)),
        || sb.sort_by(|x, y| y.total_cmp(x)),
    );
    let count_ge = |v: &[f64], t: f64| v.partition_point(|&x| x >= t) as f64;
    let (mut ts, mut ka, mut kb) = (Vec::new(), Vec::new(), Vec::new());
    let mut rank = 1.0_f64;
    let mut last_t = f64::NAN;
    while (rank as usize) <= sa.len() {
        let t = sa[rank as usize - 1];
        rank = (rank * growth).max(rank + 1.0);
        if t == last_t || t == f64::NEG_INFINITY {
            continue;
        }
        last_t = t;
        ts.push(t);
        ka.push(count_ge(&sa, t));
        kb.push(count_ge(&sb, t));
    }
    // The learned score competes with simpler candidates that are often as good (a difference
    // along one coordinate); choosing it on a noisy tie costs power (its threshold is set on
    // fewer rows), so its predicted z is discounted by one standard error of the training
    // estimate, ≈ √(λ / training rows) in z units: it wins only when clearly better. Selection
    // only; no claim rests on it.
    let discount = match &score {
        Score::Learned(m) if !m.decision => (lambda / sa.len().max(1) as f64).sqrt(),
        _ => 0.0,
    };
    let (len_a, len_b) = (sa.len(), sb.len());
    let decision_scores = matches!(&score, Score::Learned(m) if m.decision).then_some((sa, sb));
    Curve {
        score,
        len_a,
        len_b,
        decision_scores,
        ts,
        ka,
        kb,
        discount,
    }
}

/// The z-statistic the conditional test of [`crate::bounds::poisson_contrast_lower`] is
/// predicted to reach at held-out means (μ_U, μ_W), against the null μ_U − e^ε μ_W ≤ c, with
/// the nuisance bound at `z_gamma` standard deviations below μ_W. A normal approximation for
/// choosing among candidates on the training split only; it sees the cost of small counts (the
/// nuisance bound and the δ term weigh more there), which the raw estimate of P(S) − e^ε Q(S)
/// does not.
fn predicted_z(mu_u: f64, mu_w: f64, e_eps: f64, c: f64, z_gamma: f64) -> f64 {
    let m = mu_u + mu_w;
    if m <= 0.0 {
        return f64::NEG_INFINITY;
    }
    let mu_lo = (mu_w - z_gamma * mu_w.sqrt()).max(0.0);
    let pi0 = contrast_null_share(mu_lo, e_eps, c);
    if pi0 >= 1.0 {
        return f64::NEG_INFINITY;
    }
    (mu_u - m * pi0) / (m * pi0 * (1.0 - pi0)).sqrt()
}

/// What the training split chose: one event in one direction, or one event per direction
/// summed (curves are indexed per direction: 0 = P against Q, 1 = Q against P).
#[derive(Clone, Copy, Debug)]
enum Choice {
    /// One event, separate Clopper–Pearson bounds on its two probabilities at β/2 each (offered
    /// for likely events, whose binomial variance p(1 − p) is well below the Poisson variance p
    /// of the conditional test).
    Separate {
        reversed: bool,
        curve: usize,
        t: f64,
    },
    /// One event in one direction, the exact unconditional test on its binomial counts over
    /// all the held-out releases (offered for likely events when the held-out sides are small
    /// enough for it, [`BINOMIAL_MAX_HELD`]; it pools the two margins of `Separate` into one and
    /// keeps the binomial variance).
    Binomial {
        reversed: bool,
        curve: usize,
        t: f64,
    },
    /// One event in one direction, the conditional test.
    Single {
        reversed: bool,
        curve: usize,
        t: f64,
    },
    /// An event for each direction (S₁ from curve `up` of P against Q, S₂ from curve `low` of Q
    /// against P, used as S₂ \ S₁), summed; the conditional test.
    Pair {
        up: usize,
        t_up: f64,
        low: usize,
        t_low: f64,
    },
}

/// Which choices a selection may make.
#[derive(Clone, Copy)]
struct Allowed {
    reverse: bool,
    pair: bool,
}

impl HockeyStickTester {
    /// Chooses, on the training rows only, among `cands` (ε, what the claim allows), the
    /// directions and (if allowed) the summed pair, the event(s) with the largest predicted z
    /// of the held-out conditional test. Returns (candidate index, choice, curves).
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn select(
        &self,
        p: &Samples,
        np: usize,
        q: &Samples,
        nq: usize,
        held: (usize, usize),
        cands: &[(f64, f64)],
        beta: f64,
        allowed: Allowed,
    ) -> Option<(usize, Choice, [Vec<Curve>; 2])> {
        let (m_p, m_q) = (held.0 as f64, held.1 as f64);
        let lambda = poisson_mean(held.0.min(held.1));
        let z_gamma = normal_upper_quantile(beta * NUISANCE_SHARE);
        // Each method's predicted z is compared with the z its own test needs: the conditional
        // test runs at β − γ, the separate bounds at β/2 each.
        let z_contrast = normal_upper_quantile(beta * (1.0 - NUISANCE_SHARE));
        let z_half = normal_upper_quantile(beta / 2.0);
        let z_level = normal_upper_quantile(beta);
        // Likely events get the exact binomial test when it is affordable, else separate bounds
        // (whose prediction it always beats: one margin at β where they pay two at β/2).
        let binomial = held.0.max(held.1) <= BINOMIAL_MAX_HELD;
        let forward = self.candidates(p, np, q, nq, None);
        let learned = forward.iter().find_map(|s| match s {
            Score::Learned(m) => Some((**m).clone()),
            _ => None,
        });
        // Each candidate's curve is scored on its own (in parallel, collected in candidate
        // order): the same curves on any number of threads.
        // (The reverse candidates are formed while the forward curves are scored.)
        let (fwd, rev): (Vec<Curve>, Vec<Curve>) = rayon::join(
            || {
                forward
                    .into_par_iter()
                    .map(|s| curve_of(s, p, np, q, nq, lambda))
                    .collect()
            },
            || {
                if allowed.reverse {
                    self.candidates(q, nq, p, np, learned.as_ref())
                        .into_par_iter()
                        .map(|s| curve_of(s, q, nq, p, np, lambda))
                        .collect()
                } else {
                    Vec::new()
                }
            },
        );
        let curves = [fwd, rev];
        let mut best: Option<(usize, Choice, f64)> = None;
        let mut offer = |index: usize, choice: Choice, z: f64| {
            if z.is_finite() && best.as_ref().is_none_or(|b| z > b.2) {
                best = Some((index, choice, z));
            }
        };
        for (index, &(epsilon, allow)) in cands.iter().enumerate() {
            let e_eps = epsilon.exp();
            // Best single event per direction.
            let mut per_dir: [Option<(usize, f64, f64, f64, f64)>; 2] = [None, None];
            for (dir, cs) in curves.iter().enumerate() {
                let (m_a, m_b) = if dir == 0 { (m_p, m_q) } else { (m_q, m_p) };
                for (ci, c) in cs.iter().enumerate() {
                    let (na, nb) = (c.len_a.max(1) as f64, c.len_b.max(1) as f64);
                    for (t, ka, kb) in c.points(epsilon) {
                        // One pseudo-count on the disfavoured side: an event seen once on one
                        // side and never on the other is not predicted to be free of W (a rare
                        // event's training counts say little; selection only).
                        let (mu_u, mu_w) = (lambda * ka / na, lambda * (kb + 1.0) / nb);
                        let z = predicted_z(mu_u, mu_w, e_eps, lambda * allow, z_gamma)
                            - z_contrast
                            - c.discount;
                        if per_dir[dir].is_none_or(|b| z > b.2) {
                            per_dir[dir] = Some((ci, t, z, mu_u, mu_w));
                        }
                        // Likely events (≥ 10 % of the favoured side's training rows) are also
                        // offered with separate Clopper–Pearson bounds (Wilson approximations of
                        // their held-out values). Rare events are not: there the conditional test
                        // is better and a second noisy score per threshold only adds selection
                        // noise (measured: 33/40 instead of 38/40 detections at s = 0.63).
                        // The disfavoured side gets the same pseudo-count as above: with kb = 0
                        // its predicted variance would be 0 and, at a large e^ε of a profile
                        // claim, an event never seen on Q in training would be predicted a huge z
                        // that a dozen held-out Q releases then erase (measured on
                        // `dpsgd-shuffled-accounted-as-poisson` at z = 0.6: ε = 6.1 chosen in 7/30
                        // audits, all missed, against margins of 0.12 at ε = 0.88).
                        let (fa, fb) = (ka / na, (kb + 1.0) / nb);
                        if fa >= 0.1 && binomial {
                            // The exact test's margin is one normal quantile at β on the
                            // contrast's binomial standard deviation (normal approximation).
                            let sd = (fa * (1.0 - fa) / m_a
                                + e_eps * e_eps * fb * (1.0 - fb).max(0.0) / m_b)
                                .sqrt()
                                .max(1e-12);
                            offer(
                                index,
                                Choice::Binomial {
                                    reversed: dir == 1,
                                    curve: ci,
                                    t,
                                },
                                (fa - e_eps * fb - allow) / sd - z_level - c.discount,
                            );
                        } else if fa >= 0.1 {
                            let pred = wilson_lower(fa * m_a, m_a, z_half)
                                - e_eps * wilson_upper(fb * m_b, m_b, z_half);
                            let sd = (fa * (1.0 - fa) / m_a
                                + e_eps * e_eps * fb * (1.0 - fb) / m_b)
                                .sqrt()
                                .max(1e-12);
                            offer(
                                index,
                                Choice::Separate {
                                    reversed: dir == 1,
                                    curve: ci,
                                    t,
                                },
                                (pred - allow) / sd - c.discount,
                            );
                        }
                    }
                }
                if let Some((ci, t, z, _, _)) = per_dir[dir] {
                    offer(
                        index,
                        Choice::Single {
                            reversed: dir == 1,
                            curve: ci,
                            t,
                        },
                        z,
                    );
                }
            }
            // Both directions summed: the best score of each, thresholds searched jointly.
            if let (true, Some(u), Some(l)) = (allowed.pair, per_dir[0], per_dir[1]) {
                let (cu, cl) = (&curves[0][u.0], &curves[1][l.0]);
                let (nua, nub) = (cu.len_a.max(1) as f64, cu.len_b.max(1) as f64);
                let (nla, nlb) = (cl.len_a.max(1) as f64, cl.len_b.max(1) as f64);
                let discount = cu.discount.max(cl.discount);
                let low_points = cl.points(epsilon);
                for (tu, kau, kbu) in cu.points(epsilon) {
                    for &(tl, kal, kbl) in &low_points {
                        let mu_u = lambda * (kau / nua + kal / nla);
                        let mu_w = lambda * ((kbu + 1.0) / nub + (kbl + 1.0) / nlb);
                        let z = predicted_z(mu_u, mu_w, e_eps, 2.0 * lambda * allow, z_gamma)
                            - z_contrast
                            - discount;
                        offer(
                            index,
                            Choice::Pair {
                                up: u.0,
                                t_up: tu,
                                low: l.0,
                                t_low: tl,
                            },
                            z,
                        );
                    }
                }
            }
        }
        best.map(|(i, c, _)| (i, c, curves))
    }

    /// Bounds the chosen event(s) on held-out rows: Poissonized counts and the exact conditional
    /// test (see the module docs, "Guarantee"). `allow` is what the claim allows at this ε (the
    /// δ of the empirical ε).
    ///
    /// The held-out rows are read only through `held` (in memory or from shards); only the
    /// counts below depend on them.
    #[allow(clippy::too_many_arguments)]
    fn measure(
        &self,
        held: &dyn HeldOut,
        choice: Choice,
        curves: &[Vec<Curve>; 2],
        epsilon: f64,
        allow: f64,
        beta: f64,
        rng: &mut dyn Rng,
    ) -> Result<Measurement> {
        if let Choice::Separate { reversed, curve, t } = choice {
            let score = &curves[usize::from(reversed)][curve].score;
            return bound_event(held, reversed, score, t, epsilon.exp(), beta / 2.0);
        }
        if let Choice::Binomial { reversed, curve, t } = choice {
            let score = &curves[usize::from(reversed)][curve].score;
            return binomial_event(held, reversed, score, t, epsilon.exp(), allow, beta);
        }
        let (m_p, m_q) = (held.rows(false), held.rows(true));
        let lambda = poisson_mean(m_p.min(m_q));
        let gamma = beta * NUISANCE_SHARE;
        // N_P, N_Q ~ Poisson(λ), drawn from the tester's own seeded stream. λ > 0 always.
        let draw = |rng: &mut dyn Rng| {
            rand_distr::Poisson::new(lambda)
                .map(|d| d.sample(rng) as u64)
                .unwrap_or(u64::MAX)
        };
        let (n_p, n_q) = (draw(rng), draw(rng));
        let e_eps = epsilon.exp();
        // The events: S_1 (counts toward U on the side it favours) and, for a pair, S_2 minus S_1.
        // (reversed, score, threshold) of S₁; (score, threshold) of S₂ for a pair.
        type Events<'a> = ((bool, &'a Score, f64), Option<(&'a Score, f64)>);
        let (first, second): Events<'_> = match choice {
            Choice::Single { reversed, curve, t }
            | Choice::Separate { reversed, curve, t }
            | Choice::Binomial { reversed, curve, t } => (
                (reversed, &curves[usize::from(reversed)][curve].score, t),
                None,
            ),
            Choice::Pair {
                up,
                t_up,
                low,
                t_low,
            } => (
                (false, &curves[0][up].score, t_up),
                Some((&curves[1][low].score, t_low)),
            ),
        };
        let events = if second.is_some() { 2 } else { 1 };
        let description = match (first, second) {
            ((_, s, t), None) => s.describe(t),
            ((_, su, tu), Some((sl, tl))) => format!(
                "S₁ = {{{}}} for M(D) ‖ M(D') and S₂ = {{{}}} minus S₁ for M(D') ‖ M(D)",
                su.describe(tu),
                sl.describe(tl)
            ),
        };
        let scale = events as f64 * lambda;
        if n_p > m_p as u64 || n_q > m_q as u64 {
            // Cannot happen in practice (probability ≈ 3e-7); the bound 0 is always valid.
            return Ok(Measurement {
                value: 0.0,
                point_estimate: 0.0,
                inequality: format!(
                    "no bound: the Poisson number of held-out releases ({n_p}, {n_q}) exceeded the {m_p}, {m_q} available (probability ≈ 3e-7); 0 is reported"
                ),
                event: None,
            });
        }
        // (in S_1, in S_2 \ S_1) for one row.
        let classify = HeldOutEvents {
            first: (first.1.clone(), first.2),
            second: second.map(|(s, t)| (s.clone(), t)),
        };
        let reversed = first.0;
        // The first N_P held-out releases of P and the first N_Q of Q, in their order.
        let (p1, p2) = held.count(false, n_p as usize, &classify)?;
        let (q1, q2) = held.count(true, n_q as usize, &classify)?;
        // A release of P counts toward U in S_1 (unless S_1 favours Q) and toward W in S_2;
        // a release of Q the other way round.
        let (u, w) = if reversed {
            (q1 + q2, p1 + p2)
        } else {
            (p1 + q2, q1 + p2)
        };
        let value = poisson_contrast_lower(u, w, e_eps, scale, beta, gamma);
        let epsilon_lower = poisson_contrast_epsilon(u, w, allow, scale, beta, gamma);
        let mu_w_lower = poisson_mean_lower(w, gamma);
        let point_estimate = (u as f64 - e_eps * w as f64) / scale;
        let what = if events == 2 {
            "[P(S₁) − e^ε·Q(S₁)] + [Q(S₂) − e^ε·P(S₂)] ≤ H_e^ε(P‖Q) + H_e^ε(Q‖P) ≤ 2·max of the two directions, so the bound is on the larger direction"
        } else {
            "A(S) − e^ε·B(S) ≤ H_e^ε(A‖B) for the event S"
        };
        Ok(Measurement {
            value,
            point_estimate,
            inequality: format!(
                "{what}; event(s) chosen on the training split, then Poissonized held-out counts (N ~ Poisson(λ = {lambda:.1}) releases per side; N = {n_p}, {n_q}), so U = {u} (releases in the event(s) on the side they favour) and W = {w} are independent Poisson counts; exact conditional binomial test of μ_U − e^ε·μ_W ≤ {events}·λ·θ given U + W at level β − γ, with μ_W ≥ {mu_w_lower:.3} (Garwood, γ = {gamma:.2e}; Berger–Boos), inverted in θ; β = {beta:.3e} in all"
            ),
            event: Some(EventBound {
                description,
                count_p: u,
                n_p,
                count_q: w,
                n_q,
                p_lower: None,
                q_upper: None,
                binomial: None,
                contrast: Some(ContrastCounts {
                    events,
                    lambda,
                    u,
                    w,
                    mu_w_lower,
                    nuisance_beta: gamma,
                    delta: allow,
                    epsilon_lower,
                }),
                count_beta: None,
            }),
        })
    }
}

impl PropertyTester for HockeyStickTester {
    fn name(&self) -> &'static str {
        match self.form {
            HockeyStickForm::EventSearch => "hockey-stick",
            HockeyStickForm::Variational => "hockey-stick-variational",
        }
    }

    fn describe(&self) -> String {
        match self.form {
            HockeyStickForm::EventSearch => format!(
                "hockey-stick: event(s) chosen on a {:.0}% training split (coordinates, atoms{}{}; one direction or both summed), bounded on Poissonized held-out counts by an exact conditional binomial test (Berger–Boos for the nuisance mean)",
                self.train_fraction * 100.0,
                if self.near_atoms {
                    ", near-atoms around frequent values"
                } else {
                    ""
                },
                if self.learned_score {
                    ", a logistic-regression score for vector outputs"
                } else {
                    ""
                }
            ),
            HockeyStickForm::Variational => format!(
                "hockey-stick, DP-Auditorium's variational form: the decision {{logit ≥ ε}} of a class-weighted logistic-regression discriminator fitted on a {:.0}% training split, bounded on Poissonized held-out counts by an exact conditional binomial test",
                self.train_fraction * 100.0
            ),
        }
    }

    fn plan(&self, claim: &PrivacyClaim, samples_per_side: usize) -> Result<Vec<Divergence>> {
        // Bayesian claims refused; the claim's own ε, or for profile-like claims the ε grid
        // shared with the other hockey-stick testers (evenly spaced up to where the claim allows
        // δ ≥ 1/(10n)).
        super::common::hockey_stick_plan(self.name(), claim, samples_per_side, self.profile_grid)
    }

    fn planned(&self, claim: &PrivacyClaim, samples_per_side: usize) -> Option<Divergence> {
        // A profile claim also gets one bound at the ε where the claim's own mechanism with
        // slightly less noise would show most (see `planned_profile_epsilon`).
        super::common::planned_profile_epsilon(claim, samples_per_side)
            .map(|epsilon| Divergence::HockeyStick { epsilon })
    }

    fn lower_bound(
        &self,
        p: &Samples,
        q: &Samples,
        divergence: Divergence,
        failure_probability: f64,
        rng: &mut dyn Rng,
    ) -> Result<Measurement> {
        let epsilon = hockey_stick_epsilon(self.name(), divergence)?;
        check_inputs(p, q, failure_probability, 20)?;
        check_fraction("train fraction", self.train_fraction)?;
        let np = train_rows(p.n(), self.train_fraction);
        let nq = train_rows(q.n(), self.train_fraction);
        // One direction (P against Q) and one event; nothing is allowed (δ = 0) for the
        // selection and the empirical ε.
        let allowed = Allowed {
            reverse: false,
            pair: false,
        };
        let held = Tail {
            p: (p, np),
            q: (q, nq),
        };
        let Some((_, choice, curves)) = self.select(
            p,
            np,
            q,
            nq,
            (held.rows(false), held.rows(true)),
            &[(epsilon, 0.0)],
            failure_probability,
            allowed,
        ) else {
            return Err(Error::InvalidSamples(
                "no candidate event could be formed".into(),
            ));
        };
        self.measure(
            &held,
            choice,
            &curves,
            epsilon,
            0.0,
            failure_probability,
            rng,
        )
    }

    fn selects_on_training_split(&self) -> bool {
        true
    }

    fn select_and_bound(
        &self,
        p: &Samples,
        q: &Samples,
        candidates: &[(Divergence, f64)],
        failure_probability: f64,
        rng: &mut dyn Rng,
    ) -> Result<Option<Selected>> {
        check_inputs(p, q, failure_probability, 20)?;
        check_fraction("train fraction", self.train_fraction)?;
        let np = train_rows(p.n(), self.train_fraction);
        let nq = train_rows(q.n(), self.train_fraction);
        let held = Tail {
            p: (p, np),
            q: (q, nq),
        };
        self.select_and_bound_on(p, np, q, nq, &held, candidates, failure_probability, rng)
    }

    fn split_train_rows(&self, n: usize) -> Option<usize> {
        Some(train_rows(n, self.train_fraction))
    }

    fn select_and_bound_split(
        &self,
        train_p: &Samples,
        train_q: &Samples,
        held: &dyn HeldOut,
        candidates: &[(Divergence, f64)],
        failure_probability: f64,
        rng: &mut dyn Rng,
    ) -> Result<Option<Selected>> {
        check_inputs(train_p, train_q, failure_probability, 4)?;
        if held.rows(false) < 16 || held.rows(true) < 16 {
            return Err(Error::InvalidSamples(format!(
                "{} and {} held-out releases; the hockey-stick tester needs at least 16 per side",
                held.rows(false),
                held.rows(true)
            )));
        }
        let (np, nq) = (train_p.n(), train_q.n());
        self.select_and_bound_on(
            train_p,
            np,
            train_q,
            nq,
            held,
            candidates,
            failure_probability,
            rng,
        )
    }
}

impl HockeyStickTester {
    /// [`PropertyTester::select_and_bound`] on the training rows `0..np` of `p` and `0..nq` of
    /// `q` (only those rows are read) and the held-out rows `held`: the one body of the
    /// in-memory and the streamed test, so both give the same bound on the same rows.
    #[allow(clippy::too_many_arguments)]
    fn select_and_bound_on(
        &self,
        p: &Samples,
        np: usize,
        q: &Samples,
        nq: usize,
        held: &dyn HeldOut,
        candidates: &[(Divergence, f64)],
        failure_probability: f64,
        rng: &mut dyn Rng,
    ) -> Result<Option<Selected>> {
        let epsilons = candidates
            .iter()
            .map(|(d, _)| hockey_stick_epsilon(self.name(), *d))
            .collect::<Result<Vec<f64>>>()?;
        let cands: Vec<(f64, f64)> = epsilons
            .iter()
            .zip(candidates)
            .map(|(&e, &(_, allow))| (e, allow))
            .collect();
        // Everything up to the held-out measurement reads the training rows only.
        let allowed = Allowed {
            reverse: true,
            pair: true,
        };
        let Some((index, choice, curves)) = self.select(
            p,
            np,
            q,
            nq,
            (held.rows(false), held.rows(true)),
            &cands,
            failure_probability,
            allowed,
        ) else {
            return Err(Error::InvalidSamples(
                "no candidate event could be formed".into(),
            ));
        };
        let (epsilon, allow) = cands[index];
        let mut measurement = self.measure(
            held,
            choice,
            &curves,
            epsilon,
            allow,
            failure_probability,
            rng,
        )?;
        measurement.inequality = format!(
            "{}; the direction (or both summed){} and the event(s) were chosen on the training split among {} ε value(s), so one bound carries the whole β",
            measurement.inequality,
            if candidates.len() > 1 { ", ε" } else { "" },
            candidates.len()
        );
        let (reversed, both) = match choice {
            Choice::Single { reversed, .. }
            | Choice::Separate { reversed, .. }
            | Choice::Binomial { reversed, .. } => (reversed, false),
            Choice::Pair { .. } => (false, true),
        };
        Ok(Some(Selected {
            index,
            reversed,
            both,
            measurement,
        }))
    }
}

/// What the μ estimate found (see [`HockeyStickTester::estimate_mu_in_memory`]).
#[derive(Clone, Debug)]
pub struct MuEvent {
    /// The event S, its held-out counts and the Clopper–Pearson bounds on A(S) and B(S).
    pub event: EventBound,
    /// `true` when S favours the second side.
    pub reversed: bool,
    /// The lower confidence bound on μ, when positive.
    pub lower_bound: Option<f64>,
    /// The inequality, in words.
    pub inequality: String,
}

/// What the ε-estimate stage found (see [`HockeyStickTester::estimate_epsilon`]).
#[derive(Clone, Debug)]
pub struct EpsilonEvent {
    /// The event S, its held-out counts and the Clopper–Pearson bounds on A(S) and B(S)
    /// (`p_lower` is the bound on the favoured side A, `q_upper` on the other side B).
    pub event: EventBound,
    /// `true` when S favours the second side (A = M(D'), B = M(D)).
    pub reversed: bool,
    /// The lower confidence bound on ε at the δ asked for, if S refutes some ε' ≥ 0.
    pub lower_bound: Option<f64>,
    /// The inequality, in words.
    pub inequality: String,
}

impl HockeyStickTester {
    /// The ε-estimate stage: a lower confidence bound on the smallest ε for which the mechanism
    /// can be (ε, δ)-DP on this pair, with its event chosen to make that bound large (where the
    /// verdict's event is chosen to test the claim).
    ///
    /// # Method
    /// In the style of DP-Sniper (Bichsel, Steffen, Bogunovic & Vechev 2021, "DP-Sniper: black-box
    /// discovery of differential privacy violations using classifiers", IEEE S&P): on the
    /// training rows only (`0..np` of `p`, `0..nq` of `q`), every candidate score of the
    /// event-search form (coordinates and their negations, atom tables of estimated likelihood
    /// ratios, near-atoms, the logistic-regression logit for vector outputs: estimates of the
    /// log-likelihood ratio, see the module docs) is thresholded at a-ranks growing by 1 %, in
    /// both directions. Three ways of bounding are offered, each ranked by the held-out bound it
    /// is *predicted* to give (at training frequencies shrunk by two standard errors toward the
    /// unfavourable side, so that an event seen a few times does not win on noise), and the one
    /// with the largest prediction is used:
    /// 1. one event S, separate bounds A̲ ≤ A(S), B̄ ≥ B(S), predicting ln((A̲ − δ)/B̄);
    /// 2. one event S, the pooled conditional test of the tester's verdict on Poissonized counts
    ///    (see the module docs), inverted in ε' at δ ([`crate::bounds::poisson_contrast_epsilon`]);
    /// 3. an event per direction summed (S₁ favouring M(D), S₂ \ S₁ favouring M(D')), the same
    ///    test with twice the δ: a symmetric mechanism shows the same excess in both directions,
    ///    so the sum doubles the signal while the noise grows by √2.
    ///
    /// The pooled test spends one margin on A − e^ε'·B where the separate bounds spend two, and
    /// the pair doubles the releases that carry the signal: on the analytic Gaussian at
    /// δ = 10⁻⁵ (true ε = 1), with the best threshold known in advance and 8·10⁶ held-out
    /// releases per side at β = 0.005, the three give 0.849, 0.884 and 0.911. DP-Sniper
    /// thresholds one learned classifier; here the threshold, the score and the bound are chosen,
    /// on the training split, for the quantity reported.
    ///
    /// # Guarantee
    /// The choice depends on the training rows only. Separate bounds: on the held-out rows,
    /// one-sided Clopper–Pearson bounds A̲ ≤ A(S) and B̄ ≥ B(S) at β/2 each hold together with
    /// probability ≥ 1 − β (i.i.d. releases, sides independent); if the mechanism is
    /// (ε', δ)-DP then A(S) ≤ e^ε' B(S) + δ, so ε' ≥ ln((A(S) − δ)/B(S)) ≥ ln((A̲ − δ)/B̄).
    /// Pooled test: (ε', δ)-DP gives A(S) − e^ε'·B(S) ≤ δ for every event in each direction
    /// (the neighbour relation is symmetric), so μ_U − e^ε'·μ_W ≤ k·λ·δ for the Poissonized
    /// counts (k events); [`crate::bounds::poisson_contrast_epsilon`] rejects every ε' for which
    /// that fails, with probability ≤ β of rejecting a true one. Either way every ε' below the
    /// reported value is refuted with probability ≥ 1 − β; rounded down. How well S is chosen
    /// affects only how large the bound is, never its validity. `rng` draws the Poisson numbers
    /// of held-out releases (independent of the releases).
    ///
    /// Returns `None` when no candidate event could be formed.
    ///
    /// # Errors
    /// The held-out rows cannot be read (shards).
    /// [`HockeyStickTester::estimate_epsilon`] on releases in memory, split as the tester
    /// splits them (the first `train_fraction` of each side chooses the event).
    ///
    /// # Errors
    /// As [`HockeyStickTester::estimate_epsilon`].
    pub fn estimate_epsilon_in_memory(
        &self,
        p: &Samples,
        q: &Samples,
        delta: f64,
        beta: f64,
        rng: &mut dyn Rng,
    ) -> Result<Option<EpsilonEvent>> {
        let Some(held) = self.estimate_split(p, q) else {
            return Ok(None);
        };
        self.estimate_epsilon(p, held.p.1, q, held.q.1, &held, delta, beta, rng)
    }

    /// See [`HockeyStickTester::estimate_epsilon_in_memory`]; here the training rows are
    /// `0..np` of `p` and `0..nq` of `q`, and `held` the held-out rows.
    #[allow(clippy::too_many_arguments)]
    pub fn estimate_epsilon(
        &self,
        p: &Samples,
        np: usize,
        q: &Samples,
        nq: usize,
        held: &dyn HeldOut,
        delta: f64,
        beta: f64,
        rng: &mut dyn Rng,
    ) -> Result<Option<EpsilonEvent>> {
        let (m_p, m_q) = (held.rows(false), held.rows(true));
        if np < 2 || nq < 2 || m_p == 0 || m_q == 0 || !(beta > 0.0 && beta < 1.0) {
            return Ok(None);
        }
        let objective =
            |pl: f64, qh: f64| (pl > delta && qh > 0.0).then(|| ((pl - delta) / qh).ln());
        let Some((choice, curves)) =
            self.search_estimate_event(p, np, q, nq, (m_p, m_q), beta, objective, Some(delta))
        else {
            return Ok(None);
        };
        if let Choice::Separate { reversed, curve, t } = choice {
            let score = &curves[usize::from(reversed)][curve].score;
            let m = bound_event(held, reversed, score, t, 1.0, beta / 2.0)?;
            let Some(event) = m.event else {
                return Ok(None);
            };
            let lower_bound = event.epsilon_lower(delta);
            let (a, b) = favoured_sides(reversed);
            return Ok(Some(EpsilonEvent {
                inequality: format!(
                    "(ε', δ)-DP implies A(S) ≤ e^ε'·B(S) + δ (A = {a}, B = {b}), so ε' ≥ ln((A(S) − δ)/B(S)); S chosen on the training split to maximize the predicted bound (DP-Sniper style), then one-sided Clopper–Pearson bounds on A(S) and B(S) on the {m_p} + {m_q} held-out releases at β/2 = {:.3e} each (exact binomial; i.i.d. releases)",
                    beta / 2.0
                ),
                event,
                reversed,
                lower_bound,
            }));
        }
        // The conditional test on Poissonized held-out counts, inverted in ε' at δ: `measure`
        // at ε = 0 (its bound on the hockey-stick divergence is not used) with δ as what the
        // claim allows.
        let m = self.measure(held, choice, &curves, 0.0, delta, beta, rng)?;
        let Some(event) = m.event else {
            return Ok(None);
        };
        let Some(c) = event.contrast.clone() else {
            return Ok(None);
        };
        let lower_bound = event.epsilon_lower(delta);
        let (reversed, what) = match choice {
            Choice::Single { reversed, .. } => {
                let (a, b) = favoured_sides(reversed);
                (
                    reversed,
                    format!(
                        "(ε', δ)-DP implies A(S) − e^ε'·B(S) ≤ δ (A = {a}, B = {b}), so for U = the N_A releases of A in S and W = the N_B releases of B in S, N ~ Poisson(λ), μ_U − e^ε'·μ_W ≤ λ·δ"
                    ),
                )
            }
            _ => (
                false,
                "(ε', δ)-DP in both directions implies M(D)(S₁) − e^ε'·M(D')(S₁) ≤ δ and M(D')(S₂) − e^ε'·M(D)(S₂) ≤ δ (S₂ taken minus S₁), so for U = the releases of M(D) in S₁ and of M(D') in S₂ and W = the others in the two events, N ~ Poisson(λ) per side, μ_U − e^ε'·μ_W ≤ 2·λ·δ".to_string(),
            ),
        };
        Ok(Some(EpsilonEvent {
            inequality: format!(
                "{what}; the event(s) chosen on the training split to maximize the predicted bound (DP-Sniper style), then Poissonized held-out counts (λ = {:.1}; N = {}, {}; U = {}, W = {}: independent Poisson counts) and the exact conditional binomial test of U given U + W at level β − γ with μ_W ≥ {:.3} (Garwood, γ = {:.3e}; Berger–Boos), inverted in ε'; β = {:.3e} in all (i.i.d. releases)",
                c.lambda, event.n_p, event.n_q, c.u, c.w, c.mu_w_lower, c.nuisance_beta, beta
            ),
            event,
            reversed,
            lower_bound,
        }))
    }

    /// A lower confidence bound on μ of any μ-Gaussian-DP guarantee the mechanism has on this
    /// pair ("certifying the Gaussian curve"), with its event chosen to make the bound large.
    ///
    /// # Guarantee
    /// If the mechanism is μ*-GDP, every event S has A(S) ≤ Φ(Φ⁻¹(B(S)) + μ*), i.e.
    /// Φ⁻¹(A(S)) − Φ⁻¹(B(S)) ≤ μ* (the trade-off function G_μ* bounds the power of the test
    /// "reject on S"; Dong, Roth & Su 2022, Def. 2.1 and Eq. (2); in both directions, as G_μ is
    /// symmetric). S is chosen on the training split (the search of
    /// [`Self::estimate_epsilon`], ranking thresholds by the predicted Φ⁻¹(A̲) − Φ⁻¹(B̄)); on the
    /// held-out rows one-sided Clopper–Pearson bounds A̲ ≤ A(S) and B̄ ≥ B(S) at β/2 each hold
    /// together with probability ≥ 1 − β, and then μ* ≥ Φ⁻¹(A̲) − Φ⁻¹(B̄). Rounded down by
    /// 1e-9 absolute (Φ⁻¹ is accurate to about 1e-15 relative at these arguments, statrs).
    /// `lower_bound` is `None` when the bound is not positive.
    ///
    /// # Errors
    /// As [`Self::estimate_epsilon`].
    pub fn estimate_mu_in_memory(
        &self,
        p: &Samples,
        q: &Samples,
        beta: f64,
    ) -> Result<Option<MuEvent>> {
        let Some(held) = self.estimate_split(p, q) else {
            return Ok(None);
        };
        self.estimate_mu(p, held.p.1, q, held.q.1, &held, beta)
    }

    /// See [`HockeyStickTester::estimate_mu_in_memory`]; here the training rows are `0..np` of
    /// `p` and `0..nq` of `q`, and `held` the held-out rows (shards streamed, or the rest in
    /// memory).
    ///
    /// # Errors
    /// The held-out rows cannot be read (shards).
    pub fn estimate_mu(
        &self,
        p: &Samples,
        np: usize,
        q: &Samples,
        nq: usize,
        held: &dyn HeldOut,
        beta: f64,
    ) -> Result<Option<MuEvent>> {
        use statrs::distribution::{ContinuousCDF, Normal};
        let (m_p, m_q) = (held.rows(false), held.rows(true));
        if np < 2 || nq < 2 || m_p == 0 || m_q == 0 || !(beta > 0.0 && beta < 1.0) {
            return Ok(None);
        }
        let inv = |x: f64| Normal::standard().inverse_cdf(x);
        let gap =
            |a: f64, b: f64| (a > 0.0 && a < 1.0 && b > 0.0 && b < 1.0).then(|| inv(a) - inv(b));
        let Some((Choice::Separate { reversed, curve, t }, curves)) =
            self.search_estimate_event(p, np, q, nq, (m_p, m_q), beta, gap, None)
        else {
            return Ok(None);
        };
        let score = &curves[usize::from(reversed)][curve].score;
        let m = bound_event(held, reversed, score, t, 1.0, beta / 2.0)?;
        let Some(event) = m.event else {
            return Ok(None);
        };
        let lower_bound = match (event.p_lower, event.q_upper) {
            (Some(a), Some(b)) => gap(a, b).map(|g| g - 1e-9).filter(|g| *g > 0.0),
            _ => None,
        };
        let (a, b) = favoured_sides(reversed);
        Ok(Some(MuEvent {
            inequality: format!(
                "μ-GDP implies Φ⁻¹(A(S)) − Φ⁻¹(B(S)) ≤ μ for every event S (A = {a}, B = {b}; Dong, Roth & Su 2022); S chosen on the training split to maximize the predicted bound, then one-sided Clopper–Pearson bounds on A(S) and B(S) on the {m_p} + {m_q} held-out releases at β/2 = {:.3e} each (exact binomial; i.i.d. releases)",
                beta / 2.0
            ),
            event,
            reversed,
            lower_bound,
        }))
    }

    /// The estimate stages' split of releases in memory: the first `train_fraction` of each side
    /// trains, the rest is held out; `None` with fewer than 4 releases on a side or dimensions
    /// that differ.
    fn estimate_split<'a>(&self, p: &'a Samples, q: &'a Samples) -> Option<Tail<'a>> {
        if p.n() < 4 || q.n() < 4 || p.dim() != q.dim() {
            return None;
        }
        Some(Tail {
            p: (p, train_rows(p.n(), self.train_fraction)),
            q: (q, train_rows(q.n(), self.train_fraction)),
        })
    }

    /// The event search of the estimate stages (see [`Self::estimate_epsilon`]): on the
    /// training rows, every candidate score thresholded at a-ranks growing by 1 %, in both
    /// directions; each threshold's held-out Clopper–Pearson bounds (A̲, B̄) on `held` =
    /// (m_p, m_q) rows are predicted from shrunk training frequencies, and the event with the
    /// largest `objective(A̲, B̄)` is the [`Choice::Separate`] candidate. With `contrast` =
    /// Some(δ) (the ε estimate), the conditional test on Poissonized counts is offered too, for
    /// the best event of each direction ([`Choice::Single`]) and for both directions summed
    /// ([`Choice::Pair`], thresholds improved jointly), each ranked by its predicted ε at δ (the
    /// normal approximation of the test, [`predicted_contrast_epsilon`]); `objective` must then
    /// be the predicted ε of the separate bounds, so that the three are compared in one unit.
    /// Returns the choice with the largest prediction and the curves its indices refer to.
    #[allow(clippy::too_many_arguments)]
    fn search_estimate_event(
        &self,
        p: &Samples,
        np: usize,
        q: &Samples,
        nq: usize,
        held: (usize, usize),
        beta: f64,
        objective: impl Fn(f64, f64) -> Option<f64>,
        contrast: Option<f64>,
    ) -> Option<(Choice, [Vec<Curve>; 2])> {
        let (m_p, m_q) = held;
        let search = Self {
            form: HockeyStickForm::EventSearch,
            ..self.clone()
        };
        let forward = search.candidates(p, np, q, nq, None);
        let learned = forward.iter().find_map(|s| match s {
            Score::Learned(m) => Some((**m).clone()),
            _ => None,
        });
        // Every candidate's curve (threshold ranks growing by 1 %), in parallel: the forward
        // curves while the reverse candidates are formed, collected in candidate order.
        let (fwd, rev): (Vec<Curve>, Vec<Curve>) = rayon::join(
            || {
                forward
                    .into_par_iter()
                    .map(|score| curve_with_growth(score, p, np, q, nq, 0.0, 1.01))
                    .collect()
            },
            || {
                search
                    .candidates(q, nq, p, np, learned.as_ref())
                    .into_par_iter()
                    .map(|score| curve_with_growth(score, q, nq, p, np, 0.0, 1.01))
                    .collect()
            },
        );
        let curves = [fwd, rev];
        let z = normal_upper_quantile(beta / 2.0);
        // The conditional test's prediction (see `select`): λ as `measure` draws it, the
        // nuisance bound at γ, the test at β − γ.
        let lambda = poisson_mean(m_p.min(m_q));
        let z_gamma = normal_upper_quantile(beta * NUISANCE_SHARE);
        let z_contrast = normal_upper_quantile(beta * (1.0 - NUISANCE_SHARE));
        let pooled = |mu_u: f64, mu_w: f64, events: f64, delta: f64| {
            predicted_contrast_epsilon(mu_u, mu_w, events * lambda * delta, z_gamma, z_contrast)
        };
        // (prediction, choice); judged one by one in candidate order (the first of equal
        // predictions wins, the separate bounds before the conditional test).
        let mut best: Option<(f64, Choice)> = None;
        let mut offer = |predicted: f64, choice: Choice| {
            if predicted.is_finite() && best.as_ref().is_none_or(|b| predicted > b.0) {
                best = Some((predicted, choice));
            }
        };
        // Per direction, the shrunk training frequencies of every threshold, and the best
        // threshold for the conditional test: (curve, index, predicted ε).
        let mut single: [Option<(usize, usize, f64)>; 2] = [None, None];
        for (dir, cs) in curves.iter().enumerate() {
            let reversed = dir == 1;
            let (m_a, m_b) = if reversed {
                (m_q as f64, m_p as f64)
            } else {
                (m_p as f64, m_q as f64)
            };
            for (ci, c) in cs.iter().enumerate() {
                let (len_a, len_b) = (c.len_a as f64, c.len_b as f64);
                if len_a < 1.0 || len_b < 1.0 {
                    continue;
                }
                let mut top: Option<(f64, f64)> = None;
                for i in 0..c.ts.len() {
                    // Training frequencies shrunk toward the unfavourable side.
                    let (fa, fb) = shrunk_frequencies(c, i, ESTIMATE_TRAINING_Z);
                    let pl = wilson_lower(fa * m_a, m_a, z);
                    let qh = wilson_upper(fb * m_b, m_b, z);
                    if let Some(predicted) = objective(pl, qh)
                        && predicted.is_finite()
                        && top.is_none_or(|t| predicted > t.0)
                    {
                        top = Some((predicted, c.ts[i]));
                    }
                    if let Some(delta) = contrast
                        && c.ka[i].min(c.kb[i]) >= POOLED_MIN_TRAINING
                        && let (fa, fb) = shrunk_frequencies(c, i, POOLED_TRAINING_Z)
                        && let Some(predicted) = pooled(lambda * fa, lambda * fb, 1.0, delta)
                        && single[dir].is_none_or(|b| predicted > b.2)
                    {
                        single[dir] = Some((ci, i, predicted));
                    }
                }
                if let Some((predicted, t)) = top {
                    offer(
                        predicted,
                        Choice::Separate {
                            reversed,
                            curve: ci,
                            t,
                        },
                    );
                }
            }
        }
        let Some(delta) = contrast else {
            return best.map(|(_, choice)| (choice, curves));
        };
        for (dir, s) in single.iter().enumerate() {
            if let Some((ci, i, predicted)) = *s {
                offer(
                    predicted,
                    Choice::Single {
                        reversed: dir == 1,
                        curve: ci,
                        t: curves[dir][ci].ts[i],
                    },
                );
            }
        }
        // Both directions summed: the best single score of each direction, thresholded at the
        // same training rank (the curves' thresholds sit at the same a-ranks when the sides have
        // as many training rows): one parameter to choose rather than two, so less selection
        // noise, and the symmetric excess the pair is for is at matched ranks.
        if let (Some((cu, _, _)), Some((cl, _, _))) = (single[0], single[1]) {
            let (up, low) = (&curves[0][cu], &curves[1][cl]);
            // The pair's training counts pooled (U and W of the two events together, over the
            // training rows of one side) and shrunk once, as one count.
            let n_train = 0.5 * (up.len_a + low.len_a) as f64;
            let z = POOLED_TRAINING_Z;
            let mut top: Option<(f64, usize)> = None;
            for i in 0..up.ts.len().min(low.ts.len()) {
                if up.ka[i].min(up.kb[i]).min(low.ka[i]).min(low.kb[i]) < POOLED_MIN_TRAINING {
                    continue;
                }
                let (k_u, k_w) = (up.ka[i] + low.ka[i], up.kb[i] + low.kb[i]);
                let fu = (k_u - z * k_u.sqrt()).max(0.0) / n_train;
                let fw = (k_w + z * k_w.sqrt() + z * z) / n_train;
                if let Some(v) = pooled(lambda * fu, lambda * fw, 2.0, delta)
                    && top.is_none_or(|t| v > t.0)
                {
                    top = Some((v, i));
                }
            }
            if let Some((value, i)) = top {
                offer(
                    value,
                    Choice::Pair {
                        up: cu,
                        t_up: up.ts[i],
                        low: cl,
                        t_low: low.ts[i],
                    },
                );
            }
        }
        best.map(|(_, choice)| (choice, curves))
    }
}

/// How many standard errors the conditional test's candidates (which need
/// [`POOLED_MIN_TRAINING`] releases on each side) have their training counts shrunk by: one,
/// where the separate bounds' candidates (rare events included) take [`ESTIMATE_TRAINING_Z`].
/// At two, the ranking's penalty on rarer events (≈ 2/√k relative) outweighs the held-out gain
/// of the analytic Gaussian's best events at 10⁷ releases per side, and the pair drifted to
/// events three times likelier (estimates 0.84–0.87 where the best threshold gives 0.91);
/// measured on seeds 0–7 there: median 0.915 at one, 0.90 at one and a half.
const POOLED_TRAINING_Z: f64 = 1.0;

/// The fewest training releases, on each side, in an event the ε estimate may bound with the
/// conditional test. Rarer events stay with the separate bounds: the pooled test's smaller margin
/// makes a far-tail event's noisy prediction win more often (measured on Laplace ε = 1 at 10⁶
/// per side: an event of 184 against 79 held-out releases chosen in 1 of 20 seeds, estimate
/// 0.49, where the others gave 0.98–0.998). Selection only; no bound rests on it.
const POOLED_MIN_TRAINING: f64 = 100.0;

/// The training frequencies of a curve's threshold `i` on its favoured side a and the other
/// side b, shrunk by [`ESTIMATE_TRAINING_Z`] standard errors toward the unfavourable side (a
/// down, b up; Wilson), so that an event seen a few times does not win on noise.
fn shrunk_frequencies(c: &Curve, i: usize, z: f64) -> (f64, f64) {
    (
        wilson_lower(c.ka[i], c.len_a as f64, z),
        wilson_upper(c.kb[i], c.len_b as f64, z),
    )
}

/// The largest ε at which the conditional test of [`crate::bounds::poisson_contrast_epsilon`]
/// is predicted to reject μ_U − e^ε·μ_W ≤ `c` at held-out means (μ_U, μ_W) ([`predicted_z`] at
/// least `z_level`, the nuisance bound `z_gamma` standard deviations below μ_W); `None` when it
/// is not predicted to reject at ε = 0. The predicted z falls as ε grows, so bisection finds it.
/// For choosing on the training split only.
fn predicted_contrast_epsilon(
    mu_u: f64,
    mu_w: f64,
    c: f64,
    z_gamma: f64,
    z_level: f64,
) -> Option<f64> {
    let rejects = |eps: f64| predicted_z(mu_u, mu_w, eps.exp(), c, z_gamma) >= z_level;
    if !rejects(0.0) {
        return None;
    }
    let (mut lo, mut hi) = (0.0_f64, 60.0_f64);
    if rejects(hi) {
        return Some(hi);
    }
    for _ in 0..40 {
        let mid = 0.5 * (lo + hi);
        if rejects(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(lo)
}

/// (A, B) of an estimate's event in words: A is the side it favours.
fn favoured_sides(reversed: bool) -> (&'static str, &'static str) {
    if reversed {
        ("M(D')", "M(D)")
    } else {
        ("M(D)", "M(D')")
    }
}

/// How many standard errors the ε-estimate stage shrinks each candidate event's training
/// frequencies toward the unfavourable side before predicting its held-out bound. The stage
/// ranks hundreds of thresholds per score, and the rare ones (a few dozen training releases)
/// win on noise: at one standard error, Laplace ε = 1 on its witness at 10⁶ releases per side
/// got estimates of 0.32, 0.34 and 0.54 in 3 of 20 seeds (far-tail events, 187 against 79
/// held-out releases) where the others got 0.93–0.99; at two, the smallest of the 20 was 0.983,
/// and the analytic Gaussian at δ = 10⁻⁵ rose from 0.47 to 0.62 (smallest of 20) with the
/// medians within 0.01 (`audit bench epsilon --samples 100000,1000000 --repeats 20`). Only
/// which event is chosen depends on it; the bound's validity does not.
const ESTIMATE_TRAINING_Z: f64 = 2.0;

/// The largest number of held-out releases per side at which likely events are offered the exact
/// binomial test ([`Choice::Binomial`]). Its sup over the nuisance is found by splitting
/// intervals, whose cost grows quickly with m near the decision's edge (measured per bound, θ and
/// ε inverted: 0.1 s at 180 per side, 0.4–1.1 s at 1 000, 0.8–1.9 s at 4 000). Small samples are
/// where it matters: there the Poissonized test keeps m − 5√m releases (113 of 180) and the
/// separate bounds pay two margins. Above this, separate bounds serve the likely events, as before.
const BINOMIAL_MAX_HELD: usize = 500;

/// The exact unconditional test of A(S) − e^ε·B(S) for S = {score ≥ t} on all the held-out rows
/// ([`crate::bounds::binomial_contrast_lower`] at `beta`, and its inversion in ε' at `allow`);
/// A is the second side of `held` when `reversed`.
fn binomial_event(
    held: &dyn HeldOut,
    reversed: bool,
    score: &Score,
    t: f64,
    e_eps: f64,
    allow: f64,
    beta: f64,
) -> Result<Measurement> {
    let (u, m_a, w, m_b) = count_event(held, reversed, score, t)?;
    let (m_a, m_b) = (m_a as u64, m_b as u64);
    let value = binomial_contrast_lower(u, m_a, w, m_b, e_eps, beta);
    let epsilon_lower = binomial_contrast_epsilon(u, m_a, w, m_b, e_eps, allow, beta);
    let point_estimate = u as f64 / m_a as f64 - e_eps * w as f64 / m_b as f64;
    Ok(Measurement {
        value,
        point_estimate,
        inequality: format!(
            "A(S) − e^ε·B(S) ≤ H_e^ε(A‖B) for the event S chosen on the training split; exact unconditional test (Barnard style: the largest tail over every (A(S), B(S)) the null allows) of A(S) − e^ε·B(S) ≤ θ on the binomial counts {u} of {m_a} and {w} of {m_b} held-out releases, inverted in θ at β = {beta:.3e} (i.i.d. releases, event independent of the held-out releases)"
        ),
        event: Some(EventBound {
            description: score.describe(t),
            count_p: u,
            n_p: m_a,
            count_q: w,
            n_q: m_b,
            p_lower: None,
            q_upper: None,
            contrast: None,
            binomial: Some(BinomialTest {
                delta: allow,
                epsilon_lower,
            }),
            count_beta: None,
        }),
    })
}

/// (releases of A in S = {score ≥ t}, held-out rows of A, the same for B) on all the held-out
/// rows; A is the second side of `held` when `reversed`.
fn count_event(
    held: &dyn HeldOut,
    reversed: bool,
    score: &Score,
    t: f64,
) -> Result<(u64, usize, u64, usize)> {
    let (m_a, m_b) = (held.rows(reversed), held.rows(!reversed));
    let in_event = HeldOutEvents {
        first: (score.clone(), t),
        second: None,
    };
    let u = held.count(reversed, m_a, &in_event)?.0;
    let w = held.count(!reversed, m_b, &in_event)?.0;
    Ok((u, m_a, w, m_b))
}

/// Clopper–Pearson bound of A(S) − e^ε·B(S) for S = {score ≥ t} on all the held-out rows, at
/// `half` for each of the two binomial bounds; A is the second side of `held` when `reversed`.
fn bound_event(
    held: &dyn HeldOut,
    reversed: bool,
    score: &Score,
    t: f64,
    e_eps: f64,
    half: f64,
) -> Result<Measurement> {
    let (k_p, m_p, k_q, m_q) = count_event(held, reversed, score, t)?;
    let held_out = HeldOutEvent::bound(k_p, m_p, k_q, m_q, half);
    // e^ε·q_upper rounded up before subtracting, then the difference rounded down.
    let value = held_out.hockey_stick(e_eps);
    let point_estimate = held_out.hockey_stick_point(e_eps);
    Ok(Measurement {
        value,
        point_estimate,
        inequality: format!(
            "P(S) − e^ε·Q(S) ≤ H_e^ε(P‖Q) for the event S chosen on the training split; one-sided Clopper–Pearson bounds on P(S) and Q(S) at β/2 = {half:.3e} each (exact binomial; i.i.d. samples, event independent of the {m_p} + {m_q} held-out samples)"
        ),
        event: Some(held_out.event(score.describe(t))),
    })
}

#[cfg(test)]
#[path = "hockey_stick_tests.rs"]
mod tests;
