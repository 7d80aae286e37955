//! The DP-fy ML report of an account (seed 002's "How to DP-fy ML" guide, Ponomareva et al.
//! 2023, §5.3 "Reporting privacy guarantees"): every item of the guide's checklist, in its
//! words, from what the account knows (setting, unit, adjacency, accounting and its
//! assumptions, the formal statement and its tier) and from what only the trainer can state
//! (data accesses and outputs covered: the ledger's `dp-fy-ml` line, or the flags, which win).

use std::fmt::Write as _;

use dp_audit_accounting::dpfy::{DataAccesses, DpFyScope, OutputsCovered, Tier};
use dp_audit_accounting::math::readable;
use dp_audit_accounting::{LedgerEvent, Neighboring, SamplingPolicy};
use serde_json::json;

use super::{AccountantOptions, bad};
use crate::error::Result;

/// The guide's checklist, as its report names it.
pub const GUIDE: &str =
    "Ponomareva et al. 2023, \"How to DP-fy ML\", §5.3 Reporting privacy guarantees (seed 002)";

/// The scope the options state (`--data-accesses`, `--outputs-covered`) over the ledger's.
pub(super) fn scope(o: &AccountantOptions, from_ledger: DpFyScope) -> Result<DpFyScope> {
    Ok(from_ledger.overridden_by(scope_from_flags(
        o.data_accesses.as_deref(),
        o.outputs_covered.as_deref(),
    )?))
}

/// The scope `--data-accesses` and `--outputs-covered` state (a field not given stays empty),
/// or the error naming the flag, its value and what is allowed (`audit accountant` and
/// `audit run --exec` read the same flags).
pub fn scope_from_flags(
    data_accesses: Option<&str>,
    outputs_covered: Option<&str>,
) -> Result<DpFyScope> {
    let data_accesses = match data_accesses {
        Some(s) => Some(s.parse::<DataAccesses>().map_err(|_| {
            bad(
                "--data-accesses",
                s,
                "single-training-run (the guarantee covers one training run) or training-and-tuning (it also covers hyperparameter tuning)",
            )
        })?),
        None => None,
    };
    let outputs = match outputs_covered {
        Some(s) => Some(s.parse::<OutputsCovered>().map_err(|_| {
            bad(
                "--outputs-covered",
                s,
                "final-model, checkpoints or every-iterate (the full sequence of privatized gradients)",
            )
        })?),
        None => None,
    };
    Ok(DpFyScope {
        data_accesses,
        outputs,
    })
}

/// The adjacency in the guide's words.
fn adjacency(neighbors: Neighboring) -> &'static str {
    match neighbors {
        Neighboring::AddRemove => "add-or-remove one example",
        Neighboring::ReplaceOne => "replace-one example",
        Neighboring::ZeroOut => "zero-out-one example (accounted as add-or-remove: the same PLD)",
    }
}

/// The accounting's sampling assumption, and whether the ledger says it holds.
fn assumption(events: &[(LedgerEvent, SamplingPolicy)]) -> String {
    let sampled: Vec<(f64, SamplingPolicy)> = events
        .iter()
        .filter_map(|(e, p)| match e {
            LedgerEvent::Sampling { probability, .. } => Some((*probability, *p)),
            _ => None,
        })
        .collect();
    if sampled.iter().all(|(q, _)| *q == 1.0) {
        return "full batches (q = 1): no amplification by sampling is assumed".into();
    }
    if sampled.iter().any(|(_, p)| *p == SamplingPolicy::FixedSize) {
        return "fixed-size batches drawn without replacement, amplified under replace-one (the ledger or --policy says so); it holds only if training drew its batches that way".into();
    }
    "Poisson sampling was assumed for privacy amplification (the ledger or --policy says so): it holds only if training drew every batch by Poisson sampling, not by shuffling the data (Chua et al. 2024)".into()
}

/// The DP-fy ML report: its text block and its JSON, for an account whose formal statement is
/// ε ≤ `epsilon` at δ = `o.delta` (PLD upper bound).
pub(super) fn report(
    o: &AccountantOptions,
    neighbors: Neighboring,
    events: &[(LedgerEvent, SamplingPolicy)],
    scope: DpFyScope,
    epsilon: f64,
) -> (String, serde_json::Value) {
    let tier = Tier::of(epsilon);
    let not_stated = |flag: &str| {
        format!("not stated (the trainer states it: the ledger's dp-fy-ml line, or {flag})")
    };
    let accesses = scope
        .data_accesses
        .map_or_else(|| not_stated("--data-accesses"), |a| a.words().to_string());
    let outputs = scope.outputs.map_or_else(
        || not_stated("--outputs-covered"),
        |a| a.words().to_string(),
    );
    let formal = if epsilon.is_finite() {
        format!(
            "(ε, δ)-DP with ε = {} at δ = {} (PLD upper bound)",
            readable(epsilon),
            readable(o.delta)
        )
    } else {
        "no finite ε at this δ (PLD upper bound)".to_string()
    };
    let tier_words = tier.map_or("no tier: no finite ε", |t| t.words());
    let assumes = assumption(events);
    let mut s = format!("DP-fy ML report  ({GUIDE})\n");
    for (k, v) in [
        (
            "DP setting",
            "central DP with a trusted service provider (the trainer answers the ledger's queries on the data)",
        ),
        ("data accesses", accesses.as_str()),
        ("outputs covered", outputs.as_str()),
        ("unit of privacy", "example-level (one training example)"),
        ("adjacency", adjacency(neighbors)),
        (
            "accounting",
            "PLD accounting (Connect-the-Dots, Doroshenko et al. 2022), RDP beside it",
        ),
        ("assumptions", assumes.as_str()),
        ("formal statement", formal.as_str()),
        ("privacy tier", tier_words),
    ] {
        let _ = writeln!(s, "  {k:<18}{v}");
    }
    let value = json!({
        "guide": GUIDE,
        "setting": "central",
        "data_accesses": scope.data_accesses.map(DataAccesses::name),
        "outputs_covered": scope.outputs.map(OutputsCovered::name),
        "privacy_unit": "example-level",
        "adjacency": adjacency(neighbors),
        "accounting": "PLD (Connect-the-Dots), RDP beside it",
        "assumptions": assumes,
        "formal_statement": {"epsilon": epsilon, "delta": o.delta, "source": "PLD upper bound"},
        "tier": tier.map(Tier::number),
        "tier_words": tier.map(Tier::words),
    });
    (s, value)
}
