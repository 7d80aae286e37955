//! A `--claim` value as the user gives it: a claim in its own syntax (`pure:EPS`,
//! `approx:EPS:DELTA`, …), `ledger:FILE[:DELTA]`, the claim a privacy ledger states, or
//! `rsc:K:EPS0:DELTA`, the k-free bound of k reorder-slice-compute steps
//! ([`crate::mechanisms::rsc_bound`]).

use std::path::Path;

use crate::error::{Error, Result};
use crate::mechanisms::claim::{CLAIM_FORMS, is_claim_kind};
use crate::mechanisms::math::readable;
use crate::mechanisms::rsc_bound::{RSC_FORM, RscBound};
use crate::mechanisms::{AccountantRange, Neighboring, PrivacyClaim};

/// δ of a `ledger:FILE` claim when none is given: the customary 10⁻⁵.
pub const DEFAULT_LEDGER_DELTA: f64 = 1e-5;

/// The `--claim` forms, as its errors list them: the claim kinds of
/// [`crate::mechanisms::claim::CLAIM_FORMS`], then `ledger:FILE[:DELTA]` and `rsc:K:EPS0:DELTA`.
pub fn claim_forms() -> String {
    let mut forms = CLAIM_FORMS.to_vec();
    forms.push(LEDGER_FORM);
    forms.push(RSC_FORM);
    forms.join(", ")
}

/// The form of a ledger claim.
const LEDGER_FORM: &str = "ledger:FILE[:DELTA]";

/// A parsed `--claim`.
#[derive(Clone, Debug)]
pub struct ClaimArg {
    /// The claim tested.
    pub claim: PrivacyClaim,
    /// Where it came from, for reports, when it was read off a ledger.
    pub source: Option<String>,
    /// The accountant's optimistic and pessimistic ε at the claim's δ (a ledger claim).
    pub accountant: Option<AccountantRange>,
    /// What the guarantee covers (DP-fy ML), as the ledger's `dp-fy-ml` line states it.
    pub scope: crate::mechanisms::accounting::dpfy::DpFyScope,
}

/// Parses `--claim TEXT` for an audit under `neighbors`.
///
/// `ledger:FILE[:DELTA]`: FILE is a privacy ledger (seed 000: one JSON event per line, sampling
/// events and the Gaussian sums answered on each sample; see `audit accountant --help`); the
/// claim is (ε, δ)-DP with ε the PLD accountant's pessimistic (Connect-the-Dots) bound on the
/// ledger at δ (default 10⁻⁵), rounded up; the optimistic ε is kept for the tightness line.
///
/// `rsc:K:EPS0:DELTA`: k reorder-slice-compute steps of pure ε₀-DP compute with slice sizes
/// m + Geom(1 − e^{−ε₀}); the claim is (ε, DELTA)-DP with ε the k-free bound of
/// [`crate::mechanisms::rsc_bound`], and the source names the theorem.
///
/// # Errors
/// An unreadable or malformed ledger, δ out of range, a ledger the accountant cannot account
/// (each naming the file and the value), or a malformed claim.
pub fn parse_claim_arg(text: &str, neighbors: Neighboring) -> Result<ClaimArg> {
    if text.trim().starts_with("rsc:") {
        let bound = RscBound::parse(text)
            .map_err(|e| Error::InvalidConfig(format!("--claim {text}: {e}")))?;
        let claim = bound
            .claim()
            .map_err(|e| Error::InvalidConfig(format!("--claim {text}: {e}")))?;
        return Ok(ClaimArg {
            claim,
            source: Some(bound.source()),
            accountant: None,
            scope: Default::default(),
        });
    }
    let Some(rest) = text.strip_prefix("ledger:") else {
        let kind = text.split(':').next().unwrap_or_default();
        if !is_claim_kind(kind) {
            return Err(Error::InvalidConfig(format!(
                "--claim {text}: unknown claim kind {kind:?}; allowed: {}",
                claim_forms()
            )));
        }
        let claim: PrivacyClaim = text
            .parse()
            .map_err(|e| Error::InvalidConfig(format!("--claim {text}: {e}")))?;
        return Ok(ClaimArg {
            claim,
            source: None,
            accountant: None,
            scope: Default::default(),
        });
    };
    // FILE:DELTA when the text after the last ':' is a number and FILE exists; FILE otherwise
    // (a file name may hold ':').
    let (path, delta) = match rest.rsplit_once(':') {
        Some((p, d)) if Path::new(p).is_file() && d.trim().parse::<f64>().is_ok() => {
            (p, d.trim().parse::<f64>().unwrap_or(f64::NAN))
        }
        _ => (rest, DEFAULT_LEDGER_DELTA),
    };
    if path.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "--claim {text}: no ledger file named; allowed: ledger:FILE or ledger:FILE:DELTA"
        )));
    }
    if !(delta > 0.0 && delta < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "--claim {text}: δ = {delta}; allowed: 0 < δ < 1"
        )));
    }
    let events = crate::sources::text::read_ledger(
        Path::new(path),
        &format!("--claim {text}: the ledger {path}"),
    )?;
    let scope = crate::sources::text::read_ledger_scope(
        Path::new(path),
        &format!("--claim {text}: the ledger {path}"),
    )?;
    let range = AccountantRange::pld_of_ledger_with_policies(&events, neighbors, delta)
        .map_err(|e| Error::InvalidConfig(format!("--claim {text}: the ledger {path}: {e}")))?;
    if !(range.pessimistic.is_finite() && range.pessimistic >= 0.0) {
        return Err(Error::InvalidConfig(format!(
            "--claim {text}: the accountant bounds ε at δ = {} only by {}; allowed: a ledger whose ε is finite at that δ",
            readable(delta),
            readable(range.pessimistic)
        )));
    }
    let claim = PrivacyClaim::approximate(range.pessimistic, delta)
        .map_err(|e| Error::InvalidConfig(format!("--claim {text}: {e}")))?;
    Ok(ClaimArg {
        source: Some(format!(
            "privacy ledger {path} ({} event(s)): {} ε ≤ {} at δ = {} (optimistic {})",
            events.len(),
            range.accountant,
            readable(range.pessimistic),
            readable(delta),
            readable(range.optimistic)
        )),
        claim,
        accountant: Some(range),
        scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger_file(name: &str, text: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("dp-audit-claim-arg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn a_ledger_claim_is_the_pld_accountants_bound_at_its_delta() {
        let p = ledger_file(
            "ok.jsonl",
            "\u{feff}{\"event\": \"sampling\", \"probability\": 0.01, \"repetitions\": 1000}\n{\"event\": \"gaussian-sum\", \"noise_multiplier\": 4.0}\n",
        );
        let text = format!("ledger:{}", p.display());
        let c = parse_claim_arg(&text, Neighboring::AddRemove).unwrap();
        let a = c.accountant.clone().unwrap();
        // STATISTICS.md §4: dp_accounting's PLD ε = 0.2721729 at (0.01, 4, 1000, 1e-5).
        assert!(a.optimistic <= a.pessimistic);
        assert!((a.pessimistic - 0.2721729).abs() < 2e-3, "{a:?}");
        match c.claim {
            PrivacyClaim::Approximate { epsilon, delta } => {
                assert_eq!(epsilon, a.pessimistic);
                assert_eq!(delta, DEFAULT_LEDGER_DELTA);
            }
            other => panic!("{other}"),
        }
        // An explicit δ: a larger ε at a smaller δ.
        let c6 = parse_claim_arg(&format!("{text}:1e-6"), Neighboring::AddRemove).unwrap();
        let e6 = c6.claim.natural_epsilon().unwrap();
        assert!(e6 > a.pessimistic, "{e6}");
        assert_eq!(
            c6.claim.to_string().rsplit(':').next(),
            Some("1e-6"),
            "{}",
            c6.claim
        );
    }

    #[test]
    fn the_listed_claim_forms_are_the_forms_read() {
        let e = parse_claim_arg("foo:1", Neighboring::AddRemove)
            .unwrap_err()
            .to_string();
        let listed: Vec<&str> = e
            .rsplit_once("allowed: ")
            .map(|(_, l)| l.split(", ").collect())
            .unwrap_or_default();
        let mut expected = CLAIM_FORMS.to_vec();
        expected.push(LEDGER_FORM);
        expected.push(RSC_FORM);
        assert_eq!(listed, expected, "{e}");
        // Every listed form is read (the catalogue's forms are checked in claim.rs).
        let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/ledger/dpsgd.jsonl");
        for text in [
            format!("ledger:{example}"),
            format!("ledger:{example}:1e-6"),
            "pure:1".into(),
            "dpsgd:0.01:1.1:100:replace-one".into(),
            "rsc:8:0.25:1e-3".into(),
        ] {
            assert!(
                listed
                    .iter()
                    .any(|f| f.split(':').next() == text.split(':').next()),
                "{text}"
            );
            parse_claim_arg(&text, Neighboring::AddRemove)
                .unwrap_or_else(|e| panic!("{text}: {e}"));
        }
    }

    /// `rsc:8:0.25:1e-3`: n = 5, ε = ln 5 + 8·0.25 = 3.6094379 at δ = 10⁻³ (hand-computed in
    /// rsc_bound.rs); the source names the theorem; a bad field is refused naming it.
    #[test]
    fn an_rsc_claim_is_the_k_free_bound_naming_the_theorem() {
        let c = parse_claim_arg("rsc:8:0.25:1e-3", Neighboring::AddRemove).unwrap();
        match c.claim {
            PrivacyClaim::Approximate { epsilon, delta } => {
                assert!(
                    (epsilon - 3.609_437_912_434_100_5).abs() < 1e-12,
                    "{epsilon}"
                );
                assert_eq!(delta, 1e-3);
            }
            other => panic!("{other}"),
        }
        let source = c.source.unwrap();
        assert!(
            source.contains("RSC theorem") && source.contains("Stemmer"),
            "{source}"
        );
        let e = parse_claim_arg("rsc:8:0:1e-3", Neighboring::AddRemove)
            .unwrap_err()
            .to_string();
        assert!(e.contains("EPS0 = 0") && e.contains("allowed"), "{e}");
    }

    #[test]
    fn bad_ledger_claims_are_refused_naming_the_value() {
        let missing = parse_claim_arg("ledger:/no/such/ledger.jsonl", Neighboring::AddRemove)
            .unwrap_err()
            .to_string();
        assert!(missing.contains("/no/such/ledger.jsonl"), "{missing}");
        let p = ledger_file(
            "cut.jsonl",
            "{\"event\": \"gaussian-sum\", \"noise_multiplier\": 1.0}\n",
        );
        let cut = parse_claim_arg(&format!("ledger:{}", p.display()), Neighboring::AddRemove)
            .unwrap_err()
            .to_string();
        assert!(cut.contains("before any sampling event"), "{cut}");
        let p = ledger_file(
            "ok2.jsonl",
            "{\"event\": \"sampling\", \"probability\": 1, \"repetitions\": 1}\n{\"event\": \"gaussian-sum\", \"noise_multiplier\": 1.0}\n",
        );
        let bad_delta =
            parse_claim_arg(&format!("ledger:{}:2", p.display()), Neighboring::AddRemove)
                .unwrap_err()
                .to_string();
        assert!(bad_delta.contains("δ = 2"), "{bad_delta}");
        assert!(parse_claim_arg("ledger:", Neighboring::AddRemove).is_err());
        assert!(parse_claim_arg("pure:1", Neighboring::AddRemove).is_ok());
    }
}
