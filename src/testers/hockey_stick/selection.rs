//! The choice on the training split: each candidate score's thresholds and training counts (its
//! curve), the z the held-out test is predicted to reach, and the event(s), direction and ε with
//! the largest prediction.

use rayon::prelude::*;

use super::HockeyStickTester;
use super::counting::BINOMIAL_MAX_HELD;
use super::score::Score;
use super::sorted::{Sorted, sorted_side};
use crate::bounds::{contrast_null_share, normal_upper_quantile, wilson_lower, wilson_upper};
use crate::testers::rows::Rows;

/// Share of a bound's β spent on the Berger–Boos confidence bound of the nuisance mean μ_W (see
/// [`crate::bounds::poisson_contrast_lower`]); the conditional test runs at the rest.
pub(super) const NUISANCE_SHARE: f64 = 0.05;

/// The Poisson mean λ of the number of held-out releases used per side when the smaller side
/// has `m` held-out rows: m − 5√m (P(Poisson(λ) > m) ≈ 3e-7), at least m/4. It only affects
/// power: when a draw exceeds m the bound is 0 (see [`HockeyStickTester::measure`]).
pub(super) fn poisson_mean(m: usize) -> f64 {
    let m = m as f64;
    (m - 5.0 * m.sqrt()).max(m / 4.0)
}

/// One score's candidate thresholds in one direction ("a against b") on the training rows, with
/// the counts of training rows of a and b at or above each.
#[derive(Clone)]
pub(super) struct Curve {
    pub(super) score: Score,
    /// Training rows of a and b the curve was built on.
    pub(super) len_a: usize,
    pub(super) len_b: usize,
    /// The training scores of a and b, sorted descending, kept only for a decision score (whose
    /// threshold is ε itself, so counts are read at each ε). Other curves drop them once their
    /// thresholds are counted: with many candidate scores they would hold a copy of the training
    /// split each (4 GB for 2·10^6 releases of dimension 20).
    pub(super) decision_scores: Option<(Sorted, Sorted)>,
    /// Candidate thresholds (descending), with the counts of `sa` and `sb` at or above each.
    pub(super) ts: Vec<f64>,
    pub(super) ka: Vec<f64>,
    pub(super) kb: Vec<f64>,
    /// Subtracted from this score's predicted z (the learned score's, see [`discount_of`]).
    pub(super) discount: f64,
}

impl Curve {
    /// (threshold, count of a, count of b) candidates at ε (the variational discriminator's
    /// decision threshold is ε itself; other scores search thresholds).
    pub(super) fn points(&self, epsilon: f64) -> Vec<(f64, f64, f64)> {
        match &self.score {
            Score::Learned(m) if m.decision => {
                let count = |v: &Sorted| v.count_ge(epsilon) as f64;
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

/// The growth of the selection's threshold ranks (about 170 thresholds for 2·10^4 rows).
pub(super) const SELECTION_GROWTH: f64 = 1.06;
/// The growth of the ε estimate's threshold ranks.
pub(super) const ESTIMATE_GROWTH: f64 = 1.01;

/// The curves of one score at several (λ, growth), each the a-scores at ranks 1, 2, … growing
/// by the factor `growth` (by [`SELECTION_GROWTH`], about 170 thresholds for 2·10^4 rows) with
/// the counts of a and b at or above each, from one computation and sort of the training scores (the verdict's selection and the ε estimate read
/// the same sorted scores at different threshold spacings).
pub(super) fn curves_with_growths(
    score: Score,
    a: Rows<'_>,
    na: usize,
    b: Rows<'_>,
    nb: usize,
    spacings: &[(f64, f64)],
) -> Vec<Curve> {
    let (sa, sb) = sorted_scores(&score, a, na, b, nb);
    curves_from_sorted(score, sa, sb, spacings)
}

/// The training scores of `score` on the rows `start..na` of `a` and `start..nb` of `b`
/// (`start` its [`Score::selection_start`]), each sorted descending by total_cmp
/// ([`sorted_side`]: a discrete score's as runs), both sides at once.
pub(super) fn sorted_scores(
    score: &Score,
    a: Rows<'_>,
    na: usize,
    b: Rows<'_>,
    nb: usize,
) -> (Sorted, Sorted) {
    let start = score.selection_start();
    rayon::join(
        || sorted_side(score, a, start.min(na)..na),
        || sorted_side(score, b, start.min(nb)..nb),
    )
}

/// The curves of `score` at each of `spacings` from its sorted training scores `sa`, `sb` (as
/// [`sorted_scores`] gives them).
pub(super) fn curves_from_sorted(
    score: Score,
    sa: Sorted,
    sb: Sorted,
    spacings: &[(f64, f64)],
) -> Vec<Curve> {
    let decision = matches!(&score, Score::Learned(m) if m.decision);
    let (len_a, len_b) = (sa.len(), sb.len());
    let mut sorted = Some((sa, sb));
    let mut out = Vec::with_capacity(spacings.len());
    for (k, &(lambda, growth)) in spacings.iter().enumerate() {
        let Some((sa, sb)) = sorted.as_ref() else {
            break;
        };
        let (ts, ka, kb) = thresholds(sa, sb, growth);
        let discount = discount_of(&score, lambda, len_a);
        let last = k + 1 == spacings.len();
        let decision_scores = match (decision, last) {
            (false, _) => None,
            (true, true) => sorted.take(),
            (true, false) => sorted.clone(),
        };
        out.push(Curve {
            score: score.clone(),
            len_a,
            len_b,
            decision_scores,
            ts,
            ka,
            kb,
            discount,
        });
    }
    out
}

/// [`curves_from_sorted`] of a score that keeps no sorted scores (not a decision score), read
/// from borrowed sorted scores.
fn curves_from_sorted_ref(
    score: &Score,
    sa: &Sorted,
    sb: &Sorted,
    spacings: &[(f64, f64)],
) -> Vec<Curve> {
    spacings
        .iter()
        .map(|&(lambda, growth)| {
            let (ts, ka, kb) = thresholds(sa, sb, growth);
            Curve {
                score: score.clone(),
                len_a: sa.len(),
                len_b: sb.len(),
                decision_scores: None,
                ts,
                ka,
                kb,
                discount: discount_of(score, lambda, sa.len()),
            }
        })
        .collect()
}

/// The candidate thresholds of sorted (descending) training scores `sa`: the a-scores at ranks
/// 1, 2, … growing by the factor `growth`, with the counts of `sa` and `sb` at or above each.
#[allow(clippy::type_complexity)]
fn thresholds(sa: &Sorted, sb: &Sorted, growth: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut ts, mut ka, mut kb) = (Vec::new(), Vec::new(), Vec::new());
    let mut last_t = f64::NAN;
    for r in crate::testers::common::threshold_ranks(sa.len(), growth) {
        let t = sa.at(r - 1);
        if t == last_t || t == f64::NEG_INFINITY {
            continue;
        }
        last_t = t;
        ts.push(t);
        ka.push(sa.count_ge(t) as f64);
        kb.push(sb.count_ge(t) as f64);
    }
    (ts, ka, kb)
}

/// The discount subtracted from a score's predicted z: the learned score's, else 0.
fn discount_of(score: &Score, lambda: f64, len_a: usize) -> f64 {
    // The learned score competes with simpler candidates that are often as good (a difference
    // along one coordinate); choosing it on a noisy tie costs power (its threshold is set on
    // fewer rows), so its predicted z is discounted by one standard error of the training
    // estimate, ≈ √(λ / training rows) in z units: it wins only when clearly better. Selection
    // only; no claim rests on it.
    match score {
        Score::Learned(m) if !m.decision => (lambda / len_a.max(1) as f64).sqrt(),
        _ => 0.0,
    }
}

/// The z-statistic the conditional test of [`crate::bounds::poisson_contrast_lower`] is
/// predicted to reach at held-out means (μ_U, μ_W), against the null μ_U − e^ε μ_W ≤ c, with
/// the nuisance bound at `z_gamma` standard deviations below μ_W. A normal approximation for
/// choosing among candidates on the training split only; it sees the cost of small counts (the
/// nuisance bound and the δ term weigh more there), which the raw estimate of P(S) − e^ε Q(S)
/// does not.
pub(super) fn predicted_z(mu_u: f64, mu_w: f64, e_eps: f64, c: f64, z_gamma: f64) -> f64 {
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
pub(super) enum Choice {
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
pub(super) struct Allowed {
    pub(super) reverse: bool,
    pub(super) pair: bool,
}

impl HockeyStickTester {
    /// Chooses, on the training rows only, among `cands` (ε, what the claim allows), the
    /// directions and (if allowed) the summed pair, the event(s) with the largest predicted z
    /// of the held-out conditional test. Returns (candidate index, choice, curves).
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    pub(super) fn select(
        &self,
        p: Rows<'_>,
        np: usize,
        q: Rows<'_>,
        nq: usize,
        held: (usize, usize),
        cands: &[(f64, f64)],
        beta: f64,
        allowed: Allowed,
    ) -> Option<(usize, Choice, [Vec<Curve>; 2])> {
        let predictor = Predictor::new(held, beta);
        let curves = self.selection_curves(p, np, q, nq, predictor.lambda, allowed.reverse);
        let mut best = Best(None);
        for (index, &(epsilon, allow)) in cands.iter().enumerate() {
            let at = Candidate {
                index,
                epsilon,
                allow,
            };
            // Best single event per direction.
            let mut per_dir: [Option<(usize, f64, f64)>; 2] = [None, None];
            for (dir, cs) in curves.iter().enumerate() {
                per_dir[dir] = predictor.offer_direction(&mut best, at, cs, dir == 1);
            }
            // Both directions summed: the best score of each, thresholds searched jointly.
            if let (true, Some(u), Some(l)) = (allowed.pair, per_dir[0], per_dir[1]) {
                predictor.offer_pair(&mut best, at, &curves, u.0, l.0);
            }
        }
        best.0.map(|(i, c, _)| (i, c, curves))
    }

    /// Every candidate score's curve in each direction (P against Q, and Q against P when
    /// `reverse`), on the training rows; the reverse learned score is the forward one negated.
    fn selection_curves(
        &self,
        p: Rows<'_>,
        np: usize,
        q: Rows<'_>,
        nq: usize,
        lambda: f64,
        reverse: bool,
    ) -> [Vec<Curve>; 2] {
        let (key, forward) =
            crate::stages::time("candidate events", || self.candidates_once(p, np, q, nq));
        // With both directions (a verdict's selection), the ε estimate's curves (λ = 0, ranks
        // growing by 1 %) are read from the same sorted scores and kept for it.
        let spacings: &[(f64, f64)] = if reverse {
            &[(lambda, SELECTION_GROWTH), (0.0, ESTIMATE_GROWTH)]
        } else {
            &[(lambda, SELECTION_GROWTH)]
        };
        // Candidates are scored in jobs (in parallel, collected in candidate order: the same
        // curves on any number of threads). A job scores and sorts one candidate's training rows
        // once and reads from them every curve they determine (see [`Shared`]): its reverse
        // direction, and a coordinate's other sign.
        let jobs = shared_jobs(&forward);
        let done: Vec<Vec<JobCurves>> = jobs
            .into_par_iter()
            .map(|(i, paired)| {
                crate::stages::time("score the candidates", || {
                    job_curves(&forward, i, paired, (p, np), (q, nq), reverse, spacings)
                })
            })
            .collect();
        let (mut fwd, mut rev): (Vec<Vec<Curve>>, Vec<Vec<Curve>>) = (Vec::new(), Vec::new());
        for (_, f, r) in done.into_iter().flatten() {
            fwd.push(f);
            if reverse {
                rev.push(r);
            }
        }
        let split = |all: Vec<Vec<Curve>>| -> (Vec<Curve>, Vec<Curve>) {
            let mut first = Vec::with_capacity(all.len());
            let mut second = Vec::new();
            for mut c in all {
                if c.len() == 2 {
                    second.extend(c.pop());
                }
                first.extend(c.pop());
            }
            (first, second)
        };
        let ((fwd, fwd_estimate), (rev, rev_estimate)) = (split(fwd), split(rev));
        if reverse {
            super::candidates::keep_estimate_curves(key, [fwd_estimate, rev_estimate]);
        }
        [fwd, rev]
    }
}

/// One candidate's curves from a scoring job: (its index, its forward curves, its mirror's).
pub(super) type JobCurves = (usize, Vec<Curve>, Vec<Curve>);

/// How a candidate's reverse curve (Q against P, scored by [`Score::mirrored`]) reads the
/// forward curve's sorted training scores (P's as `sp`, Q's as `sq`).
enum Shared {
    /// The mirrored score is the same function (coordinates, near-atoms, conditional scores):
    /// the reverse curve reads `sq` against `sp`.
    Same,
    /// The mirrored atom table is the forward one negated, zeros kept +0: the reverse scores
    /// are the forward ones negated (order reversed) with −0 written +0.
    Negated,
    /// Scored on its own (the learned score: negating its parameters negates its logit, but
    /// the sign of a zero logit depends on how its terms cancel).
    Own,
}

impl Shared {
    fn of(score: &Score) -> Shared {
        match score {
            Score::Coordinate { .. } | Score::Near { .. } | Score::Conditional { .. } => {
                Shared::Same
            }
            Score::Atoms { .. } => Shared::Negated,
            Score::Learned(_) => Shared::Own,
        }
    }
}

/// The scoring jobs of the candidates `forward`, in order: (index, paired), where `paired` says
/// that the candidate at `index + 1` is the same coordinate with the other sign, read from the
/// same sorted scores negated ([`Sorted::negated`]: sign · x is exactly −(−sign · x)).
pub(super) fn shared_jobs(forward: &[Score]) -> Vec<(usize, bool)> {
    let mut jobs = Vec::with_capacity(forward.len());
    let mut i = 0;
    while i < forward.len() {
        let paired = match (&forward[i], forward.get(i + 1)) {
            (Score::Coordinate { j, sign }, Some(Score::Coordinate { j: k, sign: t })) => {
                j == k && *t == -*sign
            }
            _ => false,
        };
        jobs.push((i, paired));
        i += if paired { 2 } else { 1 };
    }
    jobs
}

/// The curves of the job (`i`, `paired`) of [`shared_jobs`]: for each of its candidates, its
/// forward curves and (when `reverse`) those of its mirror, at `spacings`. The same curves, bit
/// for bit, as scoring and sorting each candidate and mirror on its own
/// ([`curves_with_growths`]).
pub(super) fn job_curves(
    forward: &[Score],
    i: usize,
    paired: bool,
    (p, np): (Rows<'_>, usize),
    (q, nq): (Rows<'_>, usize),
    reverse: bool,
    spacings: &[(f64, f64)],
) -> Vec<JobCurves> {
    let score = &forward[i];
    let shared = Shared::of(score);
    if matches!(shared, Shared::Own) {
        let f = curves_with_growths(score.clone(), p, np, q, nq, spacings);
        let r = if reverse {
            curves_with_growths(score.mirrored(), q, nq, p, np, spacings)
        } else {
            Vec::new()
        };
        return vec![(i, f, r)];
    }
    let (sp, sq) = sorted_scores(score, p, np, q, nq);
    let curves = |s: &Score, a: &Sorted, b: &Sorted| curves_from_sorted_ref(s, a, b, spacings);
    let mut out = Vec::with_capacity(2);
    let f = curves(score, &sp, &sq);
    let r = match (reverse, shared) {
        (false, _) => Vec::new(),
        (true, Shared::Negated) => {
            let (rq, rp) = (sq.clone().negated(true), sp.clone().negated(true));
            curves(&score.mirrored(), &rq, &rp)
        }
        (true, _) => curves(&score.mirrored(), &sq, &sp),
    };
    out.push((i, f, r));
    if paired {
        let other = &forward[i + 1];
        // The lists are not read again: negated where they are.
        let (np_, nq_) = (sp.negated(false), sq.negated(false));
        let f = curves(other, &np_, &nq_);
        let r = if reverse {
            curves(&other.mirrored(), &nq_, &np_)
        } else {
            Vec::new()
        };
        out.push((i + 1, f, r));
    }
    out
}

/// One candidate of a selection: its index, its ε and what the claim allows there.
#[derive(Clone, Copy)]
struct Candidate {
    index: usize,
    epsilon: f64,
    allow: f64,
}

/// The best choice offered so far, (candidate index, choice, predicted z): a later offer
/// replaces it only when its finite prediction is strictly larger.
struct Best(Option<(usize, Choice, f64)>);

impl Best {
    fn offer(&mut self, index: usize, choice: Choice, z: f64) {
        if z.is_finite() && self.0.as_ref().is_none_or(|b| z > b.2) {
            self.0 = Some((index, choice, z));
        }
    }
}

/// What the held-out tests' predictions are computed from: the held-out rows per side, λ, and
/// the normal quantiles each test needs at β.
struct Predictor {
    m_p: f64,
    m_q: f64,
    lambda: f64,
    z_gamma: f64,
    /// Each method's predicted z is compared with the z its own test needs: the conditional
    /// test runs at β − γ, the separate bounds at β/2 each, the binomial test at β.
    z_contrast: f64,
    z_half: f64,
    z_level: f64,
    /// Likely events get the exact binomial test when it is affordable, else separate bounds
    /// (whose prediction it always beats: one margin at β where they pay two at β/2).
    binomial: bool,
}

impl Predictor {
    fn new(held: (usize, usize), beta: f64) -> Self {
        Self {
            m_p: held.0 as f64,
            m_q: held.1 as f64,
            lambda: poisson_mean(held.0.min(held.1)),
            z_gamma: normal_upper_quantile(beta * NUISANCE_SHARE),
            z_contrast: normal_upper_quantile(beta * (1.0 - NUISANCE_SHARE)),
            z_half: normal_upper_quantile(beta / 2.0),
            z_level: normal_upper_quantile(beta),
            binomial: held.0.max(held.1) <= BINOMIAL_MAX_HELD,
        }
    }

    /// Offers every threshold of the curves `cs` of one direction (`reversed`: Q against P):
    /// likely events with the binomial test or separate bounds as they come, then the direction's
    /// best event for the conditional test. Returns that event, (curve, threshold, predicted z).
    fn offer_direction(
        &self,
        best: &mut Best,
        at: Candidate,
        cs: &[Curve],
        reversed: bool,
    ) -> Option<(usize, f64, f64)> {
        let Candidate {
            index,
            epsilon,
            allow,
        } = at;
        let e_eps = epsilon.exp();
        let lambda = self.lambda;
        let (m_a, m_b) = if reversed {
            (self.m_q, self.m_p)
        } else {
            (self.m_p, self.m_q)
        };
        let mut top: Option<(usize, f64, f64)> = None;
        for (ci, c) in cs.iter().enumerate() {
            let (na, nb) = (c.len_a.max(1) as f64, c.len_b.max(1) as f64);
            for (t, ka, kb) in c.points(epsilon) {
                // One pseudo-count on the disfavoured side: an event seen once on one
                // side and never on the other is not predicted to be free of W (a rare
                // event's training counts say little; selection only).
                let (mu_u, mu_w) = (lambda * ka / na, lambda * (kb + 1.0) / nb);
                let z = predicted_z(mu_u, mu_w, e_eps, lambda * allow, self.z_gamma)
                    - self.z_contrast
                    - c.discount;
                if top.is_none_or(|b| z > b.2) {
                    top = Some((ci, t, z));
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
                if fa >= 0.1 && self.binomial {
                    // The exact test's margin is one normal quantile at β on the
                    // contrast's binomial standard deviation (normal approximation).
                    let sd = (fa * (1.0 - fa) / m_a
                        + e_eps * e_eps * fb * (1.0 - fb).max(0.0) / m_b)
                        .sqrt()
                        .max(1e-12);
                    best.offer(
                        index,
                        Choice::Binomial {
                            reversed,
                            curve: ci,
                            t,
                        },
                        (fa - e_eps * fb - allow) / sd - self.z_level - c.discount,
                    );
                } else if fa >= 0.1 {
                    let pred = wilson_lower(fa * m_a, m_a, self.z_half)
                        - e_eps * wilson_upper(fb * m_b, m_b, self.z_half);
                    let sd = (fa * (1.0 - fa) / m_a + e_eps * e_eps * fb * (1.0 - fb) / m_b)
                        .sqrt()
                        .max(1e-12);
                    best.offer(
                        index,
                        Choice::Separate {
                            reversed,
                            curve: ci,
                            t,
                        },
                        (pred - allow) / sd - c.discount,
                    );
                }
            }
        }
        if let Some((ci, t, z)) = top {
            best.offer(
                index,
                Choice::Single {
                    reversed,
                    curve: ci,
                    t,
                },
                z,
            );
        }
        top
    }

    /// Offers both directions summed: curve `up` of P against Q and curve `low` of Q against P,
    /// every pair of their thresholds, for the conditional test with twice the allowance.
    fn offer_pair(
        &self,
        best: &mut Best,
        at: Candidate,
        curves: &[Vec<Curve>; 2],
        up: usize,
        low: usize,
    ) {
        let Candidate {
            index,
            epsilon,
            allow,
        } = at;
        let (e_eps, lambda) = (epsilon.exp(), self.lambda);
        let (cu, cl) = (&curves[0][up], &curves[1][low]);
        let (nua, nub) = (cu.len_a.max(1) as f64, cu.len_b.max(1) as f64);
        let (nla, nlb) = (cl.len_a.max(1) as f64, cl.len_b.max(1) as f64);
        let discount = cu.discount.max(cl.discount);
        let low_points = cl.points(epsilon);
        for (tu, kau, kbu) in cu.points(epsilon) {
            for &(tl, kal, kbl) in &low_points {
                let mu_u = lambda * (kau / nua + kal / nla);
                let mu_w = lambda * ((kbu + 1.0) / nub + (kbl + 1.0) / nlb);
                let z = predicted_z(mu_u, mu_w, e_eps, 2.0 * lambda * allow, self.z_gamma)
                    - self.z_contrast
                    - discount;
                best.offer(
                    index,
                    Choice::Pair {
                        up,
                        t_up: tu,
                        low,
                        t_low: tl,
                    },
                    z,
                );
            }
        }
    }
}
