//! The DP-fy ML reporting checklist (seed 002, "How to DP-fy ML": Ponomareva et al. 2023,
//! "How to DP-fy ML: A Practical Guide to Machine Learning with Differential Privacy", §5).
//!
//! The guide asks every DP model to report, beside ε and δ: the **privacy tier** its ε falls
//! in, the **data accesses covered** (whether the guarantee applies only to a single training
//! run or also covers hyperparameter tuning), and the **final mechanism's output** covered
//! (model checkpoints, the full sequence of privatized gradients, or the final model only), with
//! the DP setting, the privacy unit, the adjacency, and the accounting's type and assumptions.
//! This module is its vocabulary: [`Tier`] (computed from ε, never stated), [`DataAccesses`]
//! and [`OutputsCovered`] (stated by whoever trained the model: a ledger line or a flag), and
//! [`DpFyScope`] (the two stated fields together).
//!
//! A ledger states them in one line of its own, which the accountants skip:
//!
//! ```text
//! {"event": "dp-fy-ml", "data_accesses": "single-training-run", "outputs": "final-model"}
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{AccountingError, Result};

/// The guide's three tiers of privacy guarantees, by the ε of the formal statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Tier {
    /// ε ≤ 1.
    Strong,
    /// 1 < ε ≤ 10.
    Reasonable,
    /// 10 < ε < ∞.
    Weak,
}

impl Tier {
    /// The tier of a guarantee at `epsilon` (its formal ε at the reported δ); `None` for an
    /// infinite or undefined ε (no formal guarantee: no tier).
    pub fn of(epsilon: f64) -> Option<Self> {
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            None
        } else if epsilon <= 1.0 {
            Some(Self::Strong)
        } else if epsilon <= 10.0 {
            Some(Self::Reasonable)
        } else {
            Some(Self::Weak)
        }
    }

    /// The tier's number, 1 to 3.
    pub fn number(self) -> u8 {
        match self {
            Self::Strong => 1,
            Self::Reasonable => 2,
            Self::Weak => 3,
        }
    }

    /// The guide's words for the tier.
    pub fn words(self) -> &'static str {
        match self {
            Self::Strong => {
                "Tier 1 — Strong privacy guarantees: ε ≤ 1 provides a strong privacy guarantee"
            }
            Self::Reasonable => {
                "Tier 2 — Reasonable privacy guarantees: ε ≤ 10, the currently undocumented, but still widely used, goal for DP-ML models"
            }
            Self::Weak => {
                "Tier 3 — Weak privacy guarantees: for ε > 10, the DP guarantee alone cannot be taken as sufficient evidence of data anonymization, and additional measures (e.g., empirical privacy auditing) may be necessary"
            }
        }
    }
}

/// Data accesses covered: whether the DP guarantee applies (only) to a single training run or
/// also covers hyperparameter tuning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataAccesses {
    /// The guarantee covers one training run; tuning runs on the same data are not accounted.
    SingleTrainingRun,
    /// The guarantee also covers the hyperparameter tuning that chose the released run.
    TrainingAndTuning,
}

impl DataAccesses {
    /// The spelling of the ledger field and the flag.
    pub fn name(self) -> &'static str {
        match self {
            Self::SingleTrainingRun => "single-training-run",
            Self::TrainingAndTuning => "training-and-tuning",
        }
    }

    /// In words, for a report.
    pub fn words(self) -> &'static str {
        match self {
            Self::SingleTrainingRun => {
                "a single training run only: hyperparameter tuning on the same data is not covered"
            }
            Self::TrainingAndTuning => {
                "the training run and the hyperparameter tuning that chose it"
            }
        }
    }
}

impl std::str::FromStr for DataAccesses {
    type Err = AccountingError;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "single-training-run" => Ok(Self::SingleTrainingRun),
            "training-and-tuning" => Ok(Self::TrainingAndTuning),
            other => Err(AccountingError::invalid(
                "dp-fy-ml",
                format!(
                    "data accesses {other:?}; allowed: single-training-run (the guarantee covers one training run) or training-and-tuning (it also covers hyperparameter tuning)"
                ),
            )),
        }
    }
}

/// The final mechanism's output covered: what the guarantee covers and can be released
/// publicly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OutputsCovered {
    /// The final model only.
    FinalModel,
    /// Model checkpoints saved during training (and the final model).
    Checkpoints,
    /// Every iterate: the full sequence of privatized gradients.
    EveryIterate,
}

impl OutputsCovered {
    /// The spelling of the ledger field and the flag.
    pub fn name(self) -> &'static str {
        match self {
            Self::FinalModel => "final-model",
            Self::Checkpoints => "checkpoints",
            Self::EveryIterate => "every-iterate",
        }
    }

    /// In words, for a report.
    pub fn words(self) -> &'static str {
        match self {
            Self::FinalModel => "the final model only",
            Self::Checkpoints => "model checkpoints and the final model",
            Self::EveryIterate => {
                "every iterate: the full sequence of privatized gradients (and so every checkpoint and the final model)"
            }
        }
    }
}

impl std::str::FromStr for OutputsCovered {
    type Err = AccountingError;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "final-model" => Ok(Self::FinalModel),
            "checkpoints" => Ok(Self::Checkpoints),
            "every-iterate" => Ok(Self::EveryIterate),
            other => Err(AccountingError::invalid(
                "dp-fy-ml",
                format!(
                    "outputs {other:?}; allowed: final-model, checkpoints or every-iterate (the full sequence of privatized gradients)"
                ),
            )),
        }
    }
}

/// The two fields of the checklist that only whoever trained the model can state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DpFyScope {
    /// Data accesses covered (absent: not stated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_accesses: Option<DataAccesses>,
    /// Outputs covered (absent: not stated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<OutputsCovered>,
}

impl DpFyScope {
    /// True when neither field is stated.
    pub fn is_empty(&self) -> bool {
        self.data_accesses.is_none() && self.outputs.is_none()
    }

    /// `self`, with every field `over` states put over it (flags over a ledger's line).
    pub fn overridden_by(self, over: DpFyScope) -> DpFyScope {
        DpFyScope {
            data_accesses: over.data_accesses.or(self.data_accesses),
            outputs: over.outputs.or(self.outputs),
        }
    }
}

/// A ledger's `dp-fy-ml` line as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeLine {
    #[allow(dead_code)] // The tag, checked by `is_scope_line`.
    event: String,
    #[serde(default)]
    data_accesses: Option<String>,
    #[serde(default)]
    outputs: Option<String>,
}

/// Whether a (trimmed, non-comment) ledger line is a `dp-fy-ml` line, which the event readers
/// skip: a JSON object whose `"event"` is `"dp-fy-ml"`.
pub fn is_scope_line(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .is_some_and(|v| v.get("event").and_then(|e| e.as_str()) == Some("dp-fy-ml"))
}

/// The [`DpFyScope`] a ledger states in its `dp-fy-ml` line (empty when it has none).
///
/// # Errors
/// An unknown field or value, or two such lines (the message names the line and what is
/// allowed).
pub fn ledger_scope(text: &str) -> Result<DpFyScope> {
    let mut found: Option<(usize, DpFyScope)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim().trim_start_matches('\u{feff}');
        if t.is_empty() || t.starts_with('#') || !is_scope_line(t) {
            continue;
        }
        let bad = |m: String| AccountingError::invalid("ledger", format!("line {}: {m}", i + 1));
        let parsed: ScopeLine = serde_json::from_str(t).map_err(|e| {
            bad(format!(
                "{e}; allowed: {{\"event\": \"dp-fy-ml\", \"data_accesses\": \"single-training-run\" or \"training-and-tuning\", \"outputs\": \"final-model\", \"checkpoints\" or \"every-iterate\"}} (each field optional)"
            ))
        })?;
        let scope = DpFyScope {
            data_accesses: parsed
                .data_accesses
                .map(|s| s.parse())
                .transpose()
                .map_err(|e: AccountingError| bad(e.to_string()))?,
            outputs: parsed
                .outputs
                .map(|s| s.parse())
                .transpose()
                .map_err(|e: AccountingError| bad(e.to_string()))?,
        };
        if let Some((first, _)) = found {
            return Err(bad(format!(
                "a second dp-fy-ml line (the first is line {first}); allowed: one per ledger"
            )));
        }
        found = Some((i + 1, scope));
    }
    Ok(found.map(|(_, s)| s).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_follow_the_guides_thresholds() {
        assert_eq!(Tier::of(0.0), Some(Tier::Strong));
        assert_eq!(Tier::of(1.0), Some(Tier::Strong));
        assert_eq!(Tier::of(1.0f64.next_up()), Some(Tier::Reasonable));
        assert_eq!(Tier::of(10.0), Some(Tier::Reasonable));
        assert_eq!(Tier::of(10.0f64.next_up()), Some(Tier::Weak));
        assert_eq!(Tier::of(f64::INFINITY), None);
        assert_eq!(Tier::of(f64::NAN), None);
        assert!(Tier::Weak.words().contains("empirical privacy auditing"));
    }

    #[test]
    fn a_ledger_states_its_scope_in_one_line() {
        let text = "{\"event\": \"sampling\", \"probability\": 0.5, \"repetitions\": 3}\n\
                    {\"event\": \"dp-fy-ml\", \"data_accesses\": \"training-and-tuning\", \"outputs\": \"final-model\"}\n";
        let s = ledger_scope(text).unwrap();
        assert_eq!(s.data_accesses, Some(DataAccesses::TrainingAndTuning));
        assert_eq!(s.outputs, Some(OutputsCovered::FinalModel));
        assert!(
            ledger_scope("{\"event\": \"sampling\"}\n")
                .unwrap()
                .is_empty()
        );
        let e = ledger_scope("{\"event\": \"dp-fy-ml\", \"outputs\": \"weights\"}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 1") && e.contains("every-iterate"), "{e}");
        let e = ledger_scope("{\"event\": \"dp-fy-ml\", \"tier\": 1}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field"), "{e}");
        let two = "{\"event\": \"dp-fy-ml\"}\n{\"event\": \"dp-fy-ml\"}\n";
        assert!(
            ledger_scope(two)
                .unwrap_err()
                .to_string()
                .contains("line 2")
        );
        let over = DpFyScope {
            outputs: Some(OutputsCovered::EveryIterate),
            ..DpFyScope::default()
        };
        assert_eq!(
            s.overridden_by(over),
            DpFyScope {
                data_accesses: Some(DataAccesses::TrainingAndTuning),
                outputs: Some(OutputsCovered::EveryIterate),
            }
        );
    }
}
