//! Hockey-stick tester: events chosen on a training split, bounded on held-out data by an exact
//! conditional test on Poissonized counts. Two forms share that guarantee and differ in how the
//! event is chosen.
//!
//! One file per stage of the argument below: `score.rs` (a candidate score and the held-out
//! events it defines), `atoms.rs` (the float-representation view: values by their bit patterns,
//! atom tables and near-atoms), `learned.rs` (the logistic-regression score), `candidates.rs`
//! (the candidate scores of one direction), `selection.rs` (thresholds, the predicted z and the
//! choice on the training split), `counting.rs` (the held-out counts and their bounds) and
//! `estimate.rs` (the ε- and μ-estimate stages); this file holds the tester, its settings and
//! the [`PropertyTester`] implementation that calls the stages in order. Tests are in
//! `tests.rs`.
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
//!   of x_j in the training rows after rounding to 9 significant digits (see
//!   [`near_centres`](atoms::near_centres)).
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

mod atoms;
mod candidates;
mod counting;
mod estimate;
mod learned;
mod prepared;
mod score;
mod selection;
mod sorted;

use rand::Rng;

use self::selection::{Allowed, Choice};
use super::common::{check_fraction, hockey_stick_epsilon, train_rows};
use super::{
    Divergence, HeldOut, Measurement, PropertyTester, Selected, Tail, check_inputs, check_rows,
};
use crate::error::{Error, Result};
use crate::mechanisms::{PrivacyClaim, Samples};
use crate::testers::rows::Rows;

pub use self::estimate::{EpsilonEvent, MuEvent};
pub use self::prepared::PreparedEvents;
pub use self::score::HeldOutEvents;

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
}

impl PropertyTester for HockeyStickTester {
    fn name(&self) -> &'static str {
        match self.form {
            HockeyStickForm::EventSearch => "hockey-stick",
            HockeyStickForm::Variational => "hockey-stick-variational",
        }
    }

    /// The sequential audit's betting test bets on this tester's events (its event-search form
    /// only).
    fn sequential(&self) -> bool {
        matches!(self.form, HockeyStickForm::EventSearch)
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
            p.into(),
            np,
            q.into(),
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
        let (p, q) = (p.into(), q.into());
        self.select_and_bound_on(p, np, q, nq, &held, candidates, failure_probability, rng)
    }

    fn split_train_rows(&self, n: usize) -> Option<usize> {
        Some(train_rows(n, self.train_fraction))
    }

    fn select_and_bound_split(
        &self,
        train_p: Rows<'_>,
        train_q: Rows<'_>,
        held: &dyn HeldOut,
        candidates: &[(Divergence, f64)],
        failure_probability: f64,
        rng: &mut dyn Rng,
    ) -> Result<Option<Selected>> {
        check_rows(train_p, train_q, failure_probability, 4)?;
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
        p: Rows<'_>,
        np: usize,
        q: Rows<'_>,
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
        let Some((index, choice, curves)) = crate::stages::time("select the event", || {
            self.select(
                p,
                np,
                q,
                nq,
                (held.rows(false), held.rows(true)),
                &cands,
                failure_probability,
                allowed,
            )
        }) else {
            return Err(Error::InvalidSamples(
                "no candidate event could be formed".into(),
            ));
        };
        let (epsilon, allow) = cands[index];
        let mut measurement = crate::stages::time("count the held-out rows", || {
            self.measure(
                held,
                choice,
                &curves,
                epsilon,
                allow,
                failure_probability,
                rng,
            )
        })?;
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

#[cfg(test)]
mod tests;
