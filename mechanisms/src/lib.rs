//! # dp-audit-mechanisms: the contract and the catalogue
//!
//! This crate is what dp-audit audits, and knows nothing about testing:
//!
//! - the **contract**: [`Mechanism`] (a black box that samples releases from a generator passed
//!   in), [`Dataset`] and [`DatasetPair`] (neighbors by construction, under a [`Neighboring`]
//!   relation), [`RecordDomain`], [`Samples`] (an `n × d` matrix) and [`PrivacyClaim`] (pure,
//!   approximate, Rényi, zCDP, Gaussian DP), with what each claim allows for each divergence;
//! - the **catalogue** ([`catalogue`]): correct mechanisms and deliberately buggy ones, each with
//!   its ground truth and a witness pair.
//!
//! The accountants that the DP-SGD entries take their claims from, the ledger vocabulary and the
//! [`Neighboring`] relation live one crate below, in [`dp_audit_accounting`] (re-exported as
//! [`accounting`]); [`accountant`], [`pld`] and [`bayesian_accountant`] keep their old paths.
//!
//! # Floating point
//! The samplers are textbook floating-point samplers. Mironov (2012) showed that such samplers
//! can leak through the low bits of their outputs; testers that look at float representations may
//! legitimately find that. Correct entries are "correct" in the idealized real-number model.
//! [`exact`] holds samplers that are exact instead: discrete Laplace and discrete Gaussian noise
//! drawn with integer arithmetic only (Canonne, Kamath & Steinke 2020).

#![warn(missing_docs)]

pub mod canary_trainer;
pub mod catalogue;
pub mod claim;
pub mod dataset;
pub mod error;
pub mod exact;
pub mod final_model;
pub mod math;
pub mod mechanism;
pub mod noise;
pub mod rsc_bound;
pub mod samples;
pub mod snapping;

/// The accounting crate this one stands on: the accountants and the ledger vocabulary.
pub use dp_audit_accounting as accounting;
/// The Bayesian accountant, at its old path ([`dp_audit_accounting::bayesian`]).
pub use dp_audit_accounting::bayesian as bayesian_accountant;
/// The PLD accountant, at its old path ([`dp_audit_accounting::pld`]).
pub use dp_audit_accounting::pld;

/// The RDP, zCDP and exact-Gaussian accountant and the ledger vocabulary, at their old path
/// ([`dp_audit_accounting::rdp`], [`dp_audit_accounting::ledger`]).
pub mod accountant {
    pub use dp_audit_accounting::ledger::*;
    pub use dp_audit_accounting::rdp::*;
}

pub use catalogue::{Entry, Spec, Status};
pub use claim::PrivacyClaim;
pub use dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
pub use error::{MechanismError, Result};
pub use mechanism::{AccountantRange, DpSetting, Mechanism, Params};
pub use samples::Samples;

/// The `rand` this crate's API is written against, so users implement [`Mechanism`] with it.
pub use rand;
