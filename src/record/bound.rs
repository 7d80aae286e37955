//! One bound and what the run makes of it: the direction of a bound, the bound with what the
//! claim allows, the β split, the verdict, the empirical ε, and what an ε means for a
//! membership attacker. A leaf of [`crate::record`]: every other record type is built from these.

use serde::{Deserialize, Serialize};

use crate::mechanisms::math::readable;
use crate::testers::{Divergence, EventBound};
/// Which order of the pair a bound is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// D(M(D) ‖ M(D')).
    FirstVsSecond,
    /// D(M(D') ‖ M(D)).
    SecondVsFirst,
    /// The larger of the two: max(D(M(D) ‖ M(D')), D(M(D') ‖ M(D))), bounded by summing an
    /// event from each direction (the hockey-stick tester).
    Larger,
}

/// One confirmed lower bound with what the claim allows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoundRecord {
    /// Tester name.
    pub tester: String,
    /// What is bounded.
    pub divergence: Divergence,
    /// Which order of the pair.
    pub direction: Direction,
    /// The lower confidence bound (rounded down).
    pub value: f64,
    /// What the claim allows (rounded up).
    pub allowed: f64,
    /// True iff `value > allowed`.
    pub violation: bool,
    /// Failure probability of this bound (its share of β).
    pub failure_probability: f64,
    /// Point estimate on the held-out data; for reading only.
    pub point_estimate: f64,
    /// The inequality and assumptions behind the bound.
    pub inequality: String,
    /// For hockey-stick bounds, the event and its probability bounds.
    pub event: Option<EventBound>,
}

/// How β was split.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BetaSplit {
    /// Total β.
    pub total: f64,
    /// Number of bounds it was split over.
    pub bounds: usize,
    /// β of each bound.
    pub per_bound: f64,
    /// The rule, in words.
    pub rule: String,
}

/// The outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// At least one bound exceeds what the claim allows.
    Violation,
    /// No bound exceeds what the claim allows. This proves nothing about the mechanism.
    NoViolation,
}

impl Verdict {
    /// "violation found" or "no violation found".
    pub fn words(&self) -> &'static str {
        match self {
            Verdict::Violation => "violation found",
            Verdict::NoViolation => "no violation found",
        }
    }
}

/// A lower confidence bound on the mechanism's true ε at the claim's δ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmpiricalEpsilon {
    /// The δ at which ε is bounded.
    pub delta: f64,
    /// With confidence `confidence`, the mechanism is not (ε', δ)-DP for any ε' < this value.
    pub lower_bound: f64,
    /// 1 − β (simultaneous with the verdict's bounds).
    pub confidence: f64,
    /// What gave the bound: the ε-estimate stage or the verdict's own events (absent in reports
    /// written before the stage existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The event behind the bound, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The held-out counts behind the bound, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// The share of β the ε-estimate stage spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_beta: Option<f64>,
    /// The ε the claim states (or implies, for a privacy profile) at `delta`, for comparison.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_epsilon: Option<f64>,
    /// When the claim comes from an accountant: its optimistic and pessimistic ε at `delta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accountant: Option<crate::mechanisms::AccountantRange>,
    /// For a Gaussian-DP claim on releases in memory: the certified lower bound on μ (the μ
    /// estimate, `HockeyStickTester::estimate_mu_in_memory`, at half the estimate's share of β).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mu_lower: Option<f64>,
}

impl EmpiricalEpsilon {
    /// Whether the lower bound exceeds the ε the claim states at this δ: a lower confidence
    /// bound above what the claim allows, so the claim is rejected (see the audit's verdict).
    pub fn exceeds_claim(&self) -> bool {
        self.claimed_epsilon
            .is_some_and(|c| c.is_finite() && self.lower_bound > c)
    }

    /// "the claim is at most X % loose on this pair", when the claim states an ε at this δ and
    /// the bound is below it; the gap between the claim and the lower bound bounds how much the
    /// claim overstates the true ε (whenever the bound holds).
    pub fn tightness(&self) -> Option<String> {
        tightness_line(
            self.lower_bound,
            self.claimed_epsilon,
            self.accountant.as_ref(),
        )
    }
}

/// How tight a claim is, on one line: the lower bound `lower` on the true ε beside the claimed ε
/// (or, when the claim comes from an accountant, its optimistic and pessimistic ε), and how
/// loose the claim can be at most if it holds: (claimed − lower)/claimed, rounded up. `None`
/// without a positive finite claimed ε.
pub fn tightness_line(
    lower: f64,
    claimed: Option<f64>,
    accountant: Option<&crate::mechanisms::AccountantRange>,
) -> Option<String> {
    let c = accountant.map_or(claimed?, |a| a.pessimistic);
    if !(c.is_finite() && c > 0.0) {
        return None;
    }
    let verdict = if lower > c {
        "the claim is violated at this δ".to_string()
    } else {
        format!(
            "if the claim holds, it is at most {:.0} % loose",
            ((c - lower) / c * 100.0).ceil()
        )
    };
    Some(match accountant {
        Some(a) => {
            let range = if a.optimistic == a.pessimistic {
                format!("ε = {}", readable(a.pessimistic))
            } else {
                format!(
                    "{} ≤ ε ≤ {}",
                    readable(a.optimistic),
                    readable(a.pessimistic)
                )
            };
            format!(
                "{} ≤ ε_true; accountant: {range} ({verdict}; {})",
                readable(lower),
                a.accountant
            )
        }
        None if lower > c => format!(
            "above the claimed ε = {}: the claim is violated at this δ",
            readable(c)
        ),
        None => format!(
            "{} ≤ ε_true; claimed ε = {} ({verdict})",
            readable(lower),
            readable(c)
        ),
    })
}

/// The most a membership attacker can succeed under an (ε, δ) guarantee: telling M(D) from
/// M(D') with prior 1/2, the Bayes-optimal success is at most (e^ε + δ)/(1 + e^ε), which is
/// Triastcyn & Faltings' 1/(1 + e^−ε) (2020, eq. 1) at δ = 0.
///
/// *Derivation.* An (ε, δ) guarantee makes every test's errors satisfy
/// α + e^ε β ≥ 1 − δ and β + e^ε α ≥ 1 − δ (Kairouz, Oh & Viswanath 2015); their sum gives
/// α + β ≥ 2(1 − δ)/(1 + e^ε), and success = 1 − (α + β)/2 ≤ (e^ε + δ)/(1 + e^ε). Capped at 1.
pub fn attack_success_bound(epsilon: f64, delta: f64) -> f64 {
    if !epsilon.is_finite() {
        return 1.0;
    }
    // 1 − (1 − δ)/(1 + e^ε), computed without overflow for large ε.
    (1.0 - (1.0 - delta.clamp(0.0, 1.0)) / (1.0 + epsilon.exp())).min(1.0)
}

/// A probability as a percentage with one decimal, rounded toward `up` (the safe side of the
/// statement it is in).
pub(crate) fn percent(p: f64, up: bool) -> String {
    let x = p * 1000.0;
    let r = if up { x.ceil() } else { x.floor() } / 10.0;
    format!("{r:.1} %")
}

/// What a lower bound `lower` on ε at `delta` (beside the `claimed` ε, if any) means for a
/// membership attacker, in one sentence (see [`attack_success_bound`]).
pub fn attack_sentence(lower: f64, delta: f64, claimed: Option<f64>) -> String {
    let mut s = format!(
        "a membership attacker (prior 1/2, telling D from D'): no (ε, δ = {}) guarantee this mechanism has can promise that it succeeds less than {} of the time",
        readable(delta),
        percent(attack_success_bound(lower.max(0.0), delta), false)
    );
    if let Some(c) = claimed.filter(|c| c.is_finite() && *c >= 0.0) {
        s += &format!(
            "; the claimed ε = {} promises at most {} (1/(1 + e^−ε) at δ = 0)",
            readable(c),
            percent(attack_success_bound(c, delta), true)
        );
    }
    s
}
