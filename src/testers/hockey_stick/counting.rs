//! The held-out stage: the chosen event(s) counted on the held-out rows and bounded, by the
//! exact conditional test on Poissonized counts, the exact binomial test, or separate
//! Clopper–Pearson bounds.

use rand::Rng;
use rand_distr::Distribution;

use super::HockeyStickTester;
use super::score::{HeldOutEvents, Score};
use super::selection::{Choice, Curve, NUISANCE_SHARE, poisson_mean};
use crate::bounds::{
    binomial_contrast_epsilon, binomial_contrast_lower, poisson_contrast_epsilon,
    poisson_contrast_lower, poisson_mean_lower,
};
use crate::error::Result;
use crate::testers::common::HeldOutEvent;
use crate::testers::{BinomialTest, ContrastCounts, EventBound, HeldOut, Measurement};

impl HockeyStickTester {
    /// Bounds the chosen event(s) on held-out rows: Poissonized counts and the exact conditional
    /// test (see the module docs, "Guarantee"). `allow` is what the claim allows at this ε (the
    /// δ of the empirical ε).
    ///
    /// The held-out rows are read only through `held` (in memory or from shards); only the
    /// counts below depend on them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn measure(
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
        let (first, second) = chosen_events(choice, curves);
        let events = if second.is_some() { 2 } else { 1 };
        let description = describe_events((first, second));
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

/// The events of a choice: S₁ as (reversed, score, threshold), counting toward U on the side it
/// favours, and for a pair S₂ as (score, threshold), used as S₂ minus S₁.
type Events<'a> = ((bool, &'a Score, f64), Option<(&'a Score, f64)>);

/// The event(s) `choice` picked among `curves`.
fn chosen_events(choice: Choice, curves: &[Vec<Curve>; 2]) -> Events<'_> {
    match choice {
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
    }
}

/// The event(s) in words, as the report shows them.
fn describe_events((first, second): Events<'_>) -> String {
    match (first, second) {
        ((_, s, t), None) => s.describe(t),
        ((_, su, tu), Some((sl, tl))) => format!(
            "S₁ = {{{}}} for M(D) ‖ M(D') and S₂ = {{{}}} minus S₁ for M(D') ‖ M(D)",
            su.describe(tu),
            sl.describe(tl)
        ),
    }
}

/// The largest number of held-out releases per side at which likely events are offered the exact
/// binomial test ([`Choice::Binomial`]). Its sup over the nuisance is found by splitting
/// intervals, whose cost grows quickly with m near the decision's edge (measured per bound, θ and
/// ε inverted: 0.1 s at 180 per side, 0.4–1.1 s at 1 000, 0.8–1.9 s at 4 000). Small samples are
/// where it matters: there the Poissonized test keeps m − 5√m releases (113 of 180) and the
/// separate bounds pay two margins. Above this, separate bounds serve the likely events, as before.
pub(super) const BINOMIAL_MAX_HELD: usize = 500;

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
pub(super) fn bound_event(
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
