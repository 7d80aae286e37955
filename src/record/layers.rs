//! Two questions about a program whose outputs are floating-point numbers, answered separately.
//!
//! A DP program is an algorithm on real numbers (clamp, sum, add Laplace noise) run in binary64.
//! Both can break a claim, and the fixes differ:
//!
//! - the **mechanism layer** (real-valued semantics) asks whether the algorithm is wrong: its
//!   testers see the values and functions of the values only ([`Transform::Values`]: the
//!   coordinates, and for vectors their L2, L1 and L∞ norms). Every event it can find is an
//!   event about the real numbers, so its violation is the algorithm's (a noise scale, a
//!   sensitivity, a budget), and a correct algorithm run in floats passes it.
//! - the **floating-point layer** asks whether the program's floating-point code leaks: its
//!   testers see the representation of each output only ([`Transform::FloatRepr`]: the lowest
//!   mantissa bits, whether it is exactly an f32, the finest dyadic grid it lies on, the f32 low
//!   bits and the binade), never the value. Textbook samplers (x + noise computed in doubles)
//!   leak here (Mironov 2012): which doubles can occur depends on x. Integer outputs have an
//!   exact representation, and the layer is skipped for them (said so in every rendering).
//!
//! Both views are fixed post-processings of one release, so by the data-processing inequality a
//! bound on either is a bound on the program's divergence (see [`crate::testers::transforms`]);
//! each layer has its own share of β (union bound), its own ranking of pairs and its own
//! confirmations ([`crate::finders::layered`]). A floating-point violation on a program whose
//! mechanism layer passes is a representation leak: every function of the real values kept the
//! claim on the samples seen. When both layers find a violation, the floating-point one may be
//! the algorithm's violation seen through the binade (a function of the value); fix the
//! algorithm first.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::bound::{BoundRecord, Direction, EmpiricalEpsilon, Verdict, attack_sentence};
use crate::error::{Error, Result};
use crate::mechanisms::Samples;
use crate::mechanisms::math::readable;
use crate::testers::Transform;

/// One of the two layers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LayerKind {
    /// The algorithm, in real-number semantics: values and functions of values.
    Mechanism,
    /// The floating-point implementation: representation features only.
    FloatingPoint,
}

impl LayerKind {
    /// The fixed view of a release this layer's testers see.
    pub fn transform(self) -> Transform {
        match self {
            LayerKind::Mechanism => Transform::Values,
            LayerKind::FloatingPoint => Transform::FloatRepr,
        }
    }

    /// How reports name the layer.
    pub fn title(self) -> &'static str {
        match self {
            LayerKind::Mechanism => "mechanism (real-valued)",
            LayerKind::FloatingPoint => "floating-point implementation",
        }
    }

    /// Index of the layer (its tester streams are offset by it, see
    /// [`crate::audit::Phase::tester_base`]).
    pub fn index(self) -> u64 {
        match self {
            LayerKind::Mechanism => 0,
            LayerKind::FloatingPoint => 1,
        }
    }
}

/// Which layers run (and so decide the exit code): `--check mechanism|float|both`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Check {
    /// Only the mechanism layer, with all of β.
    Mechanism,
    /// Only the floating-point layer, with all of β.
    Float,
    /// Both, β split evenly (the default).
    #[default]
    Both,
}

/// What `--check` accepts.
pub const CHECK_SPELLINGS: &str =
    "mechanism (the algorithm in real numbers), float (the floating-point representation) or both";

impl FromStr for Check {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "mechanism" => Ok(Check::Mechanism),
            "float" | "floating-point" => Ok(Check::Float),
            "both" => Ok(Check::Both),
            other => Err(Error::InvalidConfig(format!(
                "--check {other:?}; allowed: {CHECK_SPELLINGS}"
            ))),
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Check::Mechanism => "mechanism",
            Check::Float => "float",
            Check::Both => "both",
        })
    }
}

impl Check {
    /// The layers that run, mechanism first.
    pub fn layers(self) -> Vec<LayerKind> {
        match self {
            Check::Mechanism => vec![LayerKind::Mechanism],
            Check::Float => vec![LayerKind::FloatingPoint],
            Check::Both => vec![LayerKind::Mechanism, LayerKind::FloatingPoint],
        }
    }
}

/// True when every value of both samples is an integer below 2^53 in magnitude: exactly
/// representable, so the floating-point layer has nothing to test.
pub fn integer_valued(samples: &[&Samples]) -> bool {
    samples.iter().all(|s| {
        s.values()
            .iter()
            .all(|v| v.is_finite() && v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15)
    })
}

/// One layer's answer, as every rendering shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerVerdict {
    /// Which layer.
    pub layer: LayerKind,
    /// Its name in reports.
    pub title: String,
    /// The view its testers saw.
    pub transform: Transform,
    /// Why the layer did not run (integer outputs, or not asked for by `--check`); `None` when
    /// it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Its share of the run's β (0 when skipped).
    pub beta: f64,
    /// Its verdict (`None` when skipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The strongest lower bound on the true ε at the claim's δ this layer's confirmations
    /// gave (pure and approximate claims), at the layer's confidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empirical_epsilon: Option<EmpiricalEpsilon>,
    /// The event behind the layer's strongest bound, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// How that event separates the two sides, in one sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separation: Option<String>,
    /// What the verdict means for the program, and what to do.
    pub meaning: String,
    /// Confirming audits this layer ran.
    pub confirmations: usize,
}

impl LayerVerdict {
    /// A layer that did not run, and why.
    pub fn skipped(layer: LayerKind, why: &str) -> Self {
        Self {
            layer,
            title: layer.title().into(),
            transform: layer.transform(),
            skipped: Some(why.into()),
            beta: 0.0,
            verdict: None,
            empirical_epsilon: None,
            evidence: None,
            separation: None,
            meaning: format!("not tested: {why}"),
            confirmations: 0,
        }
    }

    /// The answer of a layer that ran, from its verdict and what backs it (see
    /// [`LayerVerdict::from_confirmations`]).
    #[allow(clippy::too_many_arguments)]
    pub fn from_verdict(
        layer: LayerKind,
        beta: f64,
        verdict: Verdict,
        empirical_epsilon: Option<EmpiricalEpsilon>,
        evidence: Option<String>,
        separation: Option<String>,
        other_violates: bool,
        confirmations: usize,
    ) -> Self {
        let eps = empirical_epsilon
            .as_ref()
            .filter(|e| e.lower_bound > 0.0)
            .map(|e| format!(", empirical ε ≥ {}", readable(e.lower_bound)))
            .unwrap_or_default();
        let meaning = match (layer, verdict) {
            (LayerKind::Mechanism, Verdict::Violation) => format!(
                "VIOLATION{eps}: the outputs' values differ between D and D′ more than the claim allows, so the algorithm itself (its noise scale, sensitivity, budget or accounting) breaks the claim; this is not a floating-point effect"
            ),
            (LayerKind::Mechanism, Verdict::NoViolation) => format!(
                "no violation found{eps}: no function of the output values tested showed more difference between D and D′ than the claim allows (this does not prove the algorithm private)"
            ),
            (LayerKind::FloatingPoint, Verdict::Violation) if other_violates => format!(
                "VIOLATION{eps}: the representation of the outputs differs between D and D′ more than the claim allows; the mechanism layer found a violation too, and part of this may be that violation seen through the binade (a function of the value): fix the algorithm first, then re-run the floating-point check"
            ),
            (LayerKind::FloatingPoint, Verdict::Violation) => format!(
                "VIOLATION{eps}: the low-order bits or binade of the outputs reveal which dataset was used, although no function of the values tested did: the noise is computed in floating point on top of the exact answer (Mironov 2012). Fix: add the noise on a grid independent of the data (snapping, discrete Laplace or Gaussian) or use a library that does so"
            ),
            (LayerKind::FloatingPoint, Verdict::NoViolation) => format!(
                "no violation found{eps}: the outputs' representation (low mantissa bits, f32 exactness, dyadic grid, binade) showed no more difference between D and D′ than the claim allows"
            ),
        };
        Self {
            layer,
            title: layer.title().into(),
            transform: layer.transform(),
            skipped: None,
            beta,
            verdict: Some(verdict),
            empirical_epsilon,
            evidence,
            separation,
            meaning,
            confirmations,
        }
    }
}

/// One sentence on how the bound's event separates D from D′, from its held-out counts.
pub fn separation_sentence(b: &BoundRecord) -> Option<String> {
    let e = b.event.as_ref()?;
    let (fav, other) = match b.direction {
        Direction::FirstVsSecond => ("D", "D′"),
        Direction::SecondVsFirst => ("D′", "D"),
        Direction::Larger => ("the side each event favours", "the other side"),
    };
    let (u, w, n) = match &e.contrast {
        Some(c) => (
            c.u,
            c.w,
            format!(
                "about {} held-out releases per side",
                readable(c.lambda.round())
            ),
        ),
        None => (
            e.count_p,
            e.count_q,
            format!("{} and {} held-out releases", e.n_p, e.n_q),
        ),
    };
    let ratio = if w == 0 {
        "never on the other".to_string()
    } else {
        format!(
            "{} times as often",
            readable((u as f64 / w as f64 * 100.0).round() / 100.0)
        )
    };
    Some(format!(
        "of {n}, {u} fell in the event on {fav} and {w} on {other} ({ratio}); the claim allows a ratio of at most e^ε = {} plus δ",
        readable((b.divergence_epsilon().exp() * 1000.0).round() / 1000.0)
    ))
}

impl BoundRecord {
    /// The ε of a hockey-stick bound (0 for Rényi bounds).
    pub fn divergence_epsilon(&self) -> f64 {
        match self.divergence {
            crate::testers::Divergence::HockeyStick { epsilon } => epsilon,
            crate::testers::Divergence::Renyi { .. } => 0.0,
        }
    }
}

/// Replaces the testers' column indices in an event description ("coordinate 3",
/// "coordinates [1, 17]") by the names of those features (`names[j]`). Hand-written: a
/// two-pattern scanner, where a regex crate would add a dependency for two literal prefixes.
pub fn in_words(description: &str, names: &[String]) -> String {
    let name = |j: usize| {
        names
            .get(j)
            .cloned()
            .unwrap_or_else(|| format!("feature {j}"))
    };
    let mut out = String::with_capacity(description.len() + 64);
    let mut rest = description;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("coordinates [")
            && let Some(end) = after.find(']')
        {
            let list: Option<Vec<usize>> = after[..end]
                .split(',')
                .map(|t| t.trim().parse::<usize>().ok())
                .collect();
            if let Some(list) = list {
                let words: Vec<String> = list.into_iter().map(name).collect();
                out.push('(');
                out.push_str(&words.join(", "));
                out.push(')');
                rest = &after[end + 1..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("coordinate ") {
            let digits = after.chars().take_while(|c| c.is_ascii_digit()).count();
            if digits > 0
                && let Ok(j) = after[..digits].parse::<usize>()
            {
                out.push_str(&name(j));
                rest = &after[digits..];
                continue;
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The two answers as the head of a text report.
pub fn render_text(layers: &[LayerVerdict]) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    for l in layers {
        let _ = writeln!(s, "{:<31}{}", format!("{}:", l.title), l.meaning);
        if let Some(e) = &l.evidence {
            let _ = writeln!(s, "{:<31}evidence: {e}", "");
        }
        if let Some(sep) = &l.separation {
            let _ = writeln!(s, "{:<31}{sep}", "");
        }
        if let Some(e) = l.empirical_epsilon.as_ref().filter(|e| e.lower_bound > 0.0) {
            let _ = writeln!(
                s,
                "{:<31}{}",
                "",
                attack_sentence(e.lower_bound, e.delta, e.claimed_epsilon)
            );
        }
        if l.skipped.is_none() {
            let _ = writeln!(
                s,
                "{:<31}β share {}, {} confirming audit(s), view: {}",
                "",
                readable(l.beta),
                l.confirmations,
                l.transform
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_become_names() {
        let names: Vec<String> = Transform::FloatRepr.feature_names(1);
        assert_eq!(
            in_words("output values of coordinates [0, 4] among 3", &names),
            "output values of (the lowest 6 mantissa bits of the output, the binade of the output) among 3"
        );
        assert_eq!(
            in_words("coordinate 4 ≥ -2 and coordinate 12 ≤ 3", &names),
            "the binade of the output ≥ -2 and feature 12 ≤ 3"
        );
        assert_eq!(in_words("coordinates [a] x", &names), "coordinates [a] x");
    }

    #[test]
    fn check_spellings() {
        for (s, c) in [
            ("mechanism", Check::Mechanism),
            ("float", Check::Float),
            ("both", Check::Both),
        ] {
            assert_eq!(s.parse::<Check>().unwrap(), c);
            assert_eq!(c.to_string(), s);
        }
        let e = "all".parse::<Check>().unwrap_err().to_string();
        assert!(e.contains("\"all\"") && e.contains("allowed"), "{e}");
    }

    #[test]
    fn integer_outputs_are_recognized() {
        let a = Samples::from_column(vec![1.0, -3.0, 0.0]);
        let b = Samples::from_column(vec![2.0, 0.5]);
        assert!(integer_valued(&[&a]));
        assert!(!integer_valued(&[&a, &b]));
    }
}
