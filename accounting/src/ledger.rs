//! The ledger vocabulary: what a training run spends privacy on, one event at a time
//! ([`LedgerEvent`]), how each sample was drawn ([`SamplingPolicy`]), and the ledger file's
//! reader and writer. Every accountant composes these events (cf. `dp_accounting`'s
//! `dp_event.py`).

use serde::{Deserialize, Serialize};

use crate::error::{AccountingError, Result};

/// One event of the [`crate::rdp::RdpAccountant`] ledger.
///
/// As in the privacy ledger of McMahan, Ramage, Talwar & Zhang (2018) (TensorFlow Privacy's
/// `PrivacyLedger`): a [`LedgerEvent::Sampling`] opens a sample (Poisson sampling of the
/// dataset), and the [`LedgerEvent::GaussianSum`] events that follow it, up to the next sampling
/// event, are the Gaussian sum queries answered on that sample. `repetitions` repeats the whole
/// block (sampling + its queries), e.g. once per training step, without storing it T times.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LedgerEvent {
    /// Poisson sampling: every record is included independently with probability `probability`.
    /// A ledger line may name another [`SamplingPolicy`] (`"policy"`), which [`parse_ledger`]
    /// refuses and [`parse_ledger_with_policies`] keeps beside the event.
    Sampling {
        /// q ∈ (0, 1].
        probability: f64,
        /// How many times the block (this sampling and the sum queries that follow) is run; ≥ 1.
        repetitions: u64,
    },
    /// A sum query with ℓ2-sensitivity 1 (after clipping) answered with Gaussian noise of standard
    /// deviation `noise_multiplier` × sensitivity, on the current sample.
    GaussianSum {
        /// z > 0.
        noise_multiplier: f64,
    },
    /// A scalar sum query whose records each move it by at most 1 (ℓ1-sensitivity 1 under
    /// add/remove; 2 under replace-one), answered with Laplace noise of scale `scale` (density
    /// ∝ e^{−|x|/b}), on the current sample. The PLD accountant amplifies it by a Poisson sample
    /// of rate q < 1 under add/remove and zero-out (one such query per sample); under
    /// replace-one it takes it at q = 1 only. `dp_accounting`'s `LaplaceDpEvent`.
    LaplaceSum {
        /// b > 0 (finite).
        scale: f64,
    },
    /// k-ary randomized response of one record's value (`values` = k ≥ 2 values): the true
    /// value with probability e^ε/(e^ε + k − 1), each other value with 1/(e^ε + k − 1); the
    /// neighboring pair is the record's value changing (for add/remove and zero-out: the absent
    /// record reported as a default value). Only in samples of probability 1 (its amplification
    /// depends on how the reports are collected). `dp_accounting`'s `RandomizedResponseDpEvent`
    /// with noise parameter p = k/(e^ε + k − 1).
    RandomizedResponse {
        /// ε > 0 (finite).
        epsilon: f64,
        /// k ≥ 2.
        values: u64,
    },
    /// An Attribution Reporting summary report: each user's contributions, non-negative
    /// integers of L1 total at most `l1_budget` = L across the aggregation keys, summed per key,
    /// discrete Laplace noise P(k) ∝ e^{−|k|/t} of scale `scale` = t added to every key (ARA's
    /// t = L/ε; the catalogue's `ara-summary-report`). Only in samples of probability 1; under
    /// replace-one a replaced user moves the sums by up to 2L.
    AttributionSummary {
        /// L ≥ 1.
        l1_budget: u64,
        /// t > 0 (finite).
        scale: f64,
    },
}

impl LedgerEvent {
    /// Whether this event is a query (anything but a sampling event).
    pub fn is_query(&self) -> bool {
        !matches!(self, Self::Sampling { .. })
    }

    /// The ledger spelling of the event's kind (`"gaussian-sum"`, `"laplace-sum"`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Sampling { .. } => "sampling",
            Self::GaussianSum { .. } => "gaussian-sum",
            Self::LaplaceSum { .. } => "laplace-sum",
            Self::RandomizedResponse { .. } => "randomized-response",
            Self::AttributionSummary { .. } => "attribution-summary",
        }
    }

    /// The parameter checks of a query event other than the Gaussian sum: Ok or the message
    /// naming the field and what is allowed.
    pub fn check_other_query(&self) -> std::result::Result<(), String> {
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!(
                    "field \"{name}\" = {v}; allowed: a finite number > 0"
                ))
            }
        };
        match *self {
            Self::LaplaceSum { scale } => positive("scale", scale),
            Self::RandomizedResponse { epsilon, values } => {
                positive("epsilon", epsilon)?;
                if values < 2 {
                    return Err(format!(
                        "field \"values\" = {values}; allowed: a whole number ≥ 2"
                    ));
                }
                Ok(())
            }
            Self::AttributionSummary { l1_budget, scale } => {
                positive("scale", scale)?;
                if l1_budget == 0 || l1_budget > 1 << 20 {
                    return Err(format!(
                        "field \"l1_budget\" = {l1_budget}; allowed: a whole number from 1 to 1048576 (ARA's budget is 65536)"
                    ));
                }
                Ok(())
            }
            Self::Sampling { .. } | Self::GaussianSum { .. } => Ok(()),
        }
    }
}

/// How the sample of a [`LedgerEvent::Sampling`] event is drawn: the `"policy"` field of a
/// ledger line (seed 000's ledger). A line without it reads as [`SamplingPolicy::Poisson`], so
/// ledgers written before the field existed mean what they meant.
///
/// Poisson sampling is what [`crate::rdp::RdpAccountant`] amplifies, and [`parse_ledger`] (its reader)
/// refuses the other policies, naming them. [`crate::pld::PldAccountant`] also accounts
/// fixed-size batches under replace-one ([`crate::pld::Pld::fixed_size_gaussian`], read with
/// [`parse_ledger_with_policies`]); shuffled batches are amplified by no accountant here. Fixed-size batches under replace-one can lose more privacy than the Poisson accountant
/// at q = B/n says (Lebeda, Regehr, Kamath & Steinke 2024, "Avoiding Pitfalls for Privacy
/// Accounting of Subsampled Mechanisms under Composition"; the catalogue's
/// `dpsgd-fixed-batches-accounted-as-poisson` shows it), and so can shuffled batches (Chua et
/// al. 2024; `dpsgd-shuffled-accounted-as-poisson`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SamplingPolicy {
    /// Every record is included independently with probability `probability` (the default).
    #[default]
    Poisson,
    /// Every step draws a batch of exactly B records uniformly **without replacement** from the
    /// n records, independently across steps (`probability` = B/n).
    FixedSize,
    /// Every epoch permutes the records and cuts the permutation into batches
    /// (`probability` = B/n).
    Shuffled,
}

impl SamplingPolicy {
    /// The spelling of the ledger's `"policy"` field.
    pub fn name(self) -> &'static str {
        match self {
            Self::Poisson => "poisson",
            Self::FixedSize => "fixed-size",
            Self::Shuffled => "shuffled",
        }
    }

    /// True for the default policy, which a written ledger line leaves out.
    pub fn is_poisson(&self) -> bool {
        *self == Self::Poisson
    }
}

impl std::fmt::Display for SamplingPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One ledger line as written: a [`LedgerEvent`] whose sampling event may carry its
/// [`SamplingPolicy`] (absent: Poisson).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case", deny_unknown_fields)]
enum LedgerLine {
    Sampling {
        probability: f64,
        repetitions: u64,
        #[serde(default, skip_serializing_if = "SamplingPolicy::is_poisson")]
        policy: SamplingPolicy,
    },
    GaussianSum {
        noise_multiplier: f64,
    },
    LaplaceSum {
        scale: f64,
    },
    RandomizedResponse {
        epsilon: f64,
        values: u64,
    },
    AttributionSummary {
        l1_budget: u64,
        scale: f64,
    },
}

/// One ledger line of `event` (JSON, as [`parse_ledger`] reads it), with `policy` on a sampling
/// event (left out when Poisson, so a Poisson ledger is written as before; ignored on a
/// Gaussian sum, whose policy is its sample's).
pub fn ledger_line(event: &LedgerEvent, policy: SamplingPolicy) -> String {
    let line = match *event {
        LedgerEvent::Sampling {
            probability,
            repetitions,
        } => LedgerLine::Sampling {
            probability,
            repetitions,
            policy,
        },
        LedgerEvent::GaussianSum { noise_multiplier } => {
            LedgerLine::GaussianSum { noise_multiplier }
        }
        LedgerEvent::LaplaceSum { scale } => LedgerLine::LaplaceSum { scale },
        LedgerEvent::RandomizedResponse { epsilon, values } => {
            LedgerLine::RandomizedResponse { epsilon, values }
        }
        LedgerEvent::AttributionSummary { l1_budget, scale } => {
            LedgerLine::AttributionSummary { l1_budget, scale }
        }
    };
    // Serializing two numbers and a unit variant cannot fail; `null` would be refused on read.
    serde_json::to_string(&line).unwrap_or_else(|_| "null".into())
}

/// Reads a privacy ledger file for the **Poisson** accountants: one [`LedgerEvent`] per line as
/// JSON (`{"event": "sampling", "probability": 0.01, "repetitions": 6000}`, then
/// `{"event": "gaussian-sum", "noise_multiplier": 1.1}` for each noise group of that sample);
/// blank lines and lines starting with `#` are skipped. A sampling event may say how its sample
/// is drawn (`"policy": "poisson"`, `"fixed-size"` or `"shuffled"`; absent: Poisson).
///
/// # Errors
/// As [`parse_ledger_with_policies`]; and a sampling event whose policy is not Poisson, which
/// the Poisson-subsampling accountants would amplify as if it were (the message names the line,
/// the policy and what to do instead).
pub fn parse_ledger(text: &str) -> Result<Vec<LedgerEvent>> {
    let lines = parse_ledger_with_policies(text)?;
    for (line, event, policy) in &lines {
        if matches!(event, LedgerEvent::Sampling { .. }) && !policy.is_poisson() {
            let (how, instead) = match policy {
                SamplingPolicy::FixedSize => (
                    "batches of exactly B records drawn without replacement",
                    "the PLD accountant accounts fixed-size batches under replace-one neighbors (`audit accountant --ledger FILE --neighbors replace-one`, `--claim ledger:FILE` with `--neighbors replace-one`)",
                ),
                _ => (
                    "each epoch a permutation cut into batches",
                    "a shuffled run can be accounted without amplification as \"probability\": 1 under --neighbors replace-one",
                ),
            };
            return Err(AccountingError::InvalidParameter {
                accountant: "ledger".into(),
                message: format!(
                    "line {line}: a sampling event with \"policy\": \"{policy}\" ({how}); the Poisson-subsampling accountant does not account it (its amplification at q = B/n can under-count {policy} batches: Lebeda et al. 2024, Chua et al. 2024); allowed: \"policy\": \"poisson\" or no policy (read as Poisson); {instead}"
                ),
            });
        }
    }
    Ok(lines.into_iter().map(|(_, event, _)| event).collect())
}

/// Reads a privacy ledger file as [`parse_ledger`] does, keeping each event's line number and
/// the [`SamplingPolicy`] of the sample it belongs to (a Gaussian sum gets the policy of the
/// sampling event before it), whatever the policy.
///
/// # Errors
/// A malformed line, an unknown field, event or policy, a value out of range, a query before
/// any sampling event, or no event at all: the message names the line and the field.
pub fn parse_ledger_with_policies(text: &str) -> Result<Vec<(usize, LedgerEvent, SamplingPolicy)>> {
    let mut events = Vec::new();
    let mut sampled = None;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let t = line.trim();
        // A `dp-fy-ml` line states what the guarantee covers, not an event: read by
        // `crate::dpfy::ledger_scope`.
        if t.is_empty() || t.starts_with('#') || crate::dpfy::is_scope_line(t) {
            continue;
        }
        let bad = |message: String| AccountingError::InvalidParameter {
            accountant: "ledger".into(),
            message: format!("line {line_no}: {message}"),
        };
        let parsed: LedgerLine = serde_json::from_str(t).map_err(|e| {
            // serde_json's own "at line 1 column C" counts within this one line: keep the
            // column, so that the message names one line (the file's).
            let what = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let what = match what.strip_suffix(&suffix) {
                Some(w) => format!(
                    "{w} (column {})",
                    e.column() + line.len() - line.trim_start().len()
                ),
                None => what,
            };
            bad(format!(
                "{what}; allowed: {{\"event\": \"sampling\", \"probability\": Q, \"repetitions\": T}} (optionally \"policy\": \"poisson\", \"fixed-size\" or \"shuffled\"; absent: poisson) or {{\"event\": \"gaussian-sum\", \"noise_multiplier\": Z}}, {{\"event\": \"laplace-sum\", \"scale\": B}}, {{\"event\": \"randomized-response\", \"epsilon\": E, \"values\": K}}, {{\"event\": \"attribution-summary\", \"l1_budget\": L, \"scale\": T}}"
            ))
        })?;
        let (event, policy) = match parsed {
            LedgerLine::Sampling {
                probability,
                repetitions,
                policy,
            } => (
                LedgerEvent::Sampling {
                    probability,
                    repetitions,
                },
                policy,
            ),
            LedgerLine::GaussianSum { noise_multiplier } => (
                LedgerEvent::GaussianSum { noise_multiplier },
                sampled.unwrap_or_default(),
            ),
            LedgerLine::LaplaceSum { scale } => (
                LedgerEvent::LaplaceSum { scale },
                sampled.unwrap_or_default(),
            ),
            LedgerLine::RandomizedResponse { epsilon, values } => (
                LedgerEvent::RandomizedResponse { epsilon, values },
                sampled.unwrap_or_default(),
            ),
            LedgerLine::AttributionSummary { l1_budget, scale } => (
                LedgerEvent::AttributionSummary { l1_budget, scale },
                sampled.unwrap_or_default(),
            ),
        };
        match event {
            LedgerEvent::Sampling {
                probability,
                repetitions,
            } => {
                if !(probability > 0.0 && probability <= 1.0) {
                    return Err(bad(format!(
                        "field \"probability\" = {probability}; allowed: 0 < probability ≤ 1"
                    )));
                }
                if repetitions == 0 {
                    return Err(bad(
                        "field \"repetitions\" = 0; allowed: a whole number ≥ 1".into(),
                    ));
                }
                sampled = Some(policy);
            }
            LedgerEvent::GaussianSum { noise_multiplier } => {
                if !(noise_multiplier.is_finite() && noise_multiplier > 0.0) {
                    return Err(bad(format!(
                        "field \"noise_multiplier\" = {noise_multiplier}; allowed: a finite number > 0"
                    )));
                }
                if sampled.is_none() {
                    return Err(bad(
                        "a gaussian-sum event before any sampling event; allowed: a sampling event first (probability 1 for a full batch)".into(),
                    ));
                }
            }
            other => {
                other.check_other_query().map_err(bad)?;
                if sampled.is_none() {
                    return Err(bad(format!(
                        "a {} event before any sampling event; allowed: a sampling event first (probability 1 for a full batch)",
                        other.kind()
                    )));
                }
            }
        }
        events.push((line_no, event, policy));
    }
    if events.is_empty() {
        return Err(AccountingError::InvalidParameter {
            accountant: "ledger".into(),
            message: "no event in the file; allowed: one JSON event per line".into(),
        });
    }
    Ok(events)
}

/// The blocks of a ledger of full-batch steps, as the accountants without amplification by
/// sampling compose them ([`crate::exact_gaussian`], [`crate::zcdp`]): each sampling event of
/// probability 1 with its repetitions and the noise multipliers of the sums after it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FullBatchBlocks {
    /// (repetitions, the noise multipliers of the block's sums), in ledger order.
    pub(crate) blocks: Vec<(u64, Vec<f64>)>,
}

impl FullBatchBlocks {
    /// Composes one event for `accountant` (named in errors): a sampling event of probability 1
    /// opens a block, a Gaussian sum joins the last one.
    pub(crate) fn compose(&mut self, accountant: &str, event: &LedgerEvent) -> Result<()> {
        match *event {
            LedgerEvent::Sampling {
                probability,
                repetitions,
            } => {
                if probability != 1.0 {
                    return Err(AccountingError::invalid(
                        accountant,
                        format!(
                            "sampling probability q = {probability}; allowed: q = 1 (full batches: this accountant does not amplify by sampling; subsampled steps: the PLD or RDP accountant)"
                        ),
                    ));
                }
                if repetitions == 0 {
                    return Err(AccountingError::invalid(
                        accountant,
                        "steps T = 0; allowed: T ≥ 1".to_string(),
                    ));
                }
                self.blocks.push((repetitions, Vec::new()));
            }
            LedgerEvent::GaussianSum { noise_multiplier } => {
                if !(noise_multiplier.is_finite() && noise_multiplier > 0.0) {
                    return Err(AccountingError::invalid(
                        accountant,
                        format!(
                            "noise multiplier z = {noise_multiplier}; allowed: 0 < z < ∞ (finite)"
                        ),
                    ));
                }
                let Some((_, sums)) = self.blocks.last_mut() else {
                    return Err(AccountingError::invalid(
                        accountant,
                        format!(
                            "Gaussian sum query (z = {noise_multiplier}) before any sampling event; allowed: after a sampling event (probability 1 for a full batch)"
                        ),
                    ));
                };
                sums.push(noise_multiplier);
            }
            other => {
                return Err(AccountingError::invalid(
                    accountant,
                    format!(
                        "a {} event: this accountant composes Gaussian sum queries only; allowed: sampling and gaussian-sum events (the PLD accountant also accounts laplace-sum, randomized-response and attribution-summary events)",
                        other.kind()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The one block of one sum, (z, T), when the ledger is exactly that.
    pub(crate) fn single(&self) -> Option<(f64, u64)> {
        match self.blocks.as_slice() {
            [(steps, sums)] if sums.len() == 1 => Some((sums[0], *steps)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_ledger_line_is_named_by_one_line_number() {
        let text = "{\"event\": \"sampling\", \"probability\": 0.5, \"repetitions\": 3}\n\n  {\"event\": \"gaussian-sum\", \"noise_multiplier\": }\n";
        let e = parse_ledger(text).unwrap_err().to_string();
        assert!(e.contains("line 3:"), "{e}");
        // One line number: the file's, not serde_json's count inside the line as well.
        assert_eq!(e.matches("line ").count(), 1, "{e}");
        // The column counts the line's indentation: `}` is the 49th character.
        assert!(e.contains("(column 49)"), "{e}");
    }
}
