//! # dp-audit: black-box auditing of differential-privacy claims
//!
//! dp-audit runs a mechanism many times on two neighboring datasets and looks for statistical
//! evidence that the two output distributions differ by more than the mechanism's privacy claim
//! allows.
//!
//! - [`mechanisms`] (the `dp-audit-mechanisms` crate) holds the contract — [`Mechanism`],
//!   [`Dataset`], [`DatasetPair`], [`PrivacyClaim`] — and the catalogue of correct and buggy
//!   mechanisms; [`accounting`] (the `dp-audit-accounting` crate, below it) the accountants
//!   behind one [`accounting::PrivacyAccountant`] trait, which [`modes::accountant`] runs
//!   for `audit accountant` from plain options.
//! - [`rng`] derives every generator from one seed; large samples are drawn in parallel and are
//!   bit-identical for any thread count.
//! - [`testers`] turn samples into one-sided lower confidence bounds on divergences
//!   ([`bounds`] holds the exact binomial bounds they use).
//! - [`audit`] holds the kinds of audit: the fixed-pair runner (plans the bounds, splits β,
//!   draws fresh samples and decides), [`audit::sequential`], [`audit::bayesian`],
//!   [`audit::one_run`]; [`modes::run`] runs them (with the search and the reports) for `audit run` from plain options, one layer above them. They fill the result record of [`record`], whose [`AuditReport`] is the
//!   source of truth for every rendering.
//! - [`sources`] are where releases come from besides the catalogue: [`sources::exec`] audits
//!   any program through the exec protocol; [`sources::shards`] reads releases drawn elsewhere.
//! - [`gate`] fails a downstream `cargo test` when a mechanism breaks its claim
//!   ([`gate::assert_claim_holds`], [`assert_dp!`], [`gate::Gate`]).
//! - [`modes`] is the library layer under every command: `audit run` ([`modes::run`]), `audit
//!   test`, `audit one-run` and `audit accountant` as plain options (defaults written once) and
//!   a function each, which the CLI ([`commands`], flags only) and the Python package both call.
//! - [`finders`] search for the neighboring pair where a bound is largest (search on exploratory
//!   samples, confirm on fresh ones); [`report`] renders JSON, HTML and PNG; [`bench`] measures
//!   power, speed and soundness.
//!
//! # Example
//! ```
//! use dp_audit::{audit::{audit_pair, AuditConfig, Verdict}, mechanisms, testers::HockeyStickTester};
//! use dp_audit::testers::PropertyTester;
//!
//! // A buggy catalogue entry: a Laplace sum whose noise ignores the record range.
//! let entry = mechanisms::catalogue::build("laplace-sum-ignores-range", &Default::default())?;
//! let testers: Vec<Box<dyn PropertyTester>> = vec![Box::new(HockeyStickTester::default())];
//! let config = AuditConfig { seed: 1, samples_per_side: 50_000, failure_probability: 0.05 };
//! let report = audit_pair(&*entry.mechanism, &entry.mechanism.claim(), &entry.witness, &testers, &config)?;
//! assert_eq!(report.verdict, Verdict::Violation);
//! # Ok::<(), dp_audit::Error>(())
//! ```

#![warn(missing_docs)]

pub mod audit;
pub mod bench;
pub mod bounds;
pub mod commands;
pub mod error;
pub mod finders;
pub mod gate;
pub mod modes;
pub mod record;
pub mod report;
pub mod rng;
pub mod sources;
pub mod stages;
pub mod testers;

pub use dp_audit_accounting as accounting;
pub use dp_audit_mechanisms as mechanisms;

pub use audit::{AuditConfig, AuditReport, Verdict};
pub use error::{Error, Result};
pub use mechanisms::{
    Dataset, DatasetPair, Mechanism, Neighboring, PrivacyClaim, RecordDomain, Samples,
};
