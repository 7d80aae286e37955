//! # dp-audit-accounting: what a training run spends, in (ε, δ)
//!
//! The accountants of dp-audit, below the mechanisms (which take their claims from them) and
//! knowing nothing about mechanisms or testing:
//!
//! - the **vocabulary**: [`LedgerEvent`] and [`SamplingPolicy`] (one event of a privacy ledger,
//!   and how its sample was drawn; [`ledger`] reads and writes ledger files), and the
//!   [`Neighboring`] relation an accounting is stated for;
//! - the **accountants**: [`rdp`] (Rényi DP of the Poisson-subsampled Gaussian, zCDP and the
//!   exact Gaussian curve), [`pld`] (the privacy loss distribution, in layers: `pld_pmf` the
//!   discretised distribution and its composition by FFT, `privacy_loss_mechanism` the
//!   mechanisms' losses, `privacy_loss_distribution` the PLD of a mechanism, `pld_privacy_accountant`
//!   the ledger composed and queried), [`bayesian`] (Bayesian DP from samples of gradient
//!   distances);
//! - the numeric helpers they share ([`math`]) and the crate's error, [`AccountingError`].
//!
//! # One interface
//! Every (ε, δ) accountant implements [`PrivacyAccountant`] (as `dp_accounting`'s
//! `PrivacyAccountant`): [`PrivacyAccountant::compose`] one [`LedgerEvent`] at a time, under its
//! [`SamplingPolicy`] (or a whole ledger with [`PrivacyAccountant::compose_ledger`]), then
//! [`PrivacyAccountant::epsilon`] at a δ, an [`EpsilonRange`] (an upper bound, a lower bound on
//! the mechanism's own ε when it has one, the parameter the answer was taken at), or
//! [`PrivacyAccountant::delta`] at an ε. [`PrivacyAccountant::scope`] says where it applies
//! (the relations, full batches only or not). [`accountants`] lists them: [`pld::PldAccountant`],
//! [`rdp::RdpAccountant`], [`exact_gaussian::ExactGaussianAccountant`], [`zcdp::ZcdpAccountant`].
//! The Bayesian accountant answers a different question (ε_μ of a typical record) and stands
//! beside them.
//!
//! # Adding an accountant
//! 1. One file, `src/<name>.rs` (a folder `src/<name>/` with `mod.rs` and `tests.rs` when it
//!    grows), declared `pub mod <name>;` here: a struct holding its ledger, and one
//!    `impl PrivacyAccountant` whose `name` is its kebab-case id (the key of its answer in
//!    records), `scope` where it applies, `compose` the events it accounts (refusing the others
//!    with an [`AccountingError::InvalidParameter`] that names the value and what is allowed),
//!    `epsilon` and `delta` its answers. Its unit tests go in an inline `#[cfg(test)] mod tests`
//!    at the end of the file.
//! 2. One line in [`accountants`], where it takes its place in the order of the report.
//!
//! Nothing else: `audit accountant` (dp-audit's `modes::accountant`, and the command line above
//! it, `commands::accountant`, which only parses flags) composes the ledger in every accountant
//! of [`accountants`] through the trait, skips those whose scope excludes the relation (saying
//! so) or the ledger (full-batch accountants on a subsampled one), and prints each answer: as
//! `ε ≤ upper` under the accountant's name in the text, and under its name in the JSON (the
//! lower bound and the parameter beside), until a line of its own is written there.

#![warn(missing_docs)]

pub mod accountant;
pub mod allocation;
pub mod bayesian;
pub mod dpfy;
pub mod error;
pub mod exact_gaussian;
pub mod ledger;
pub mod math;
pub mod neighboring;
pub mod pld;
pub mod rdp;
pub mod zcdp;

pub use accountant::{DeltaRange, EpsilonRange, PrivacyAccountant, Scope};
pub use error::{AccountingError, Result};
pub use ledger::{LedgerEvent, SamplingPolicy};
pub use neighboring::Neighboring;

/// The (ε, δ) accountants, empty, in the order they are reported (`audit accountant` asks each
/// in turn): the PLD, the RDP, the exact Gaussian and the zCDP accountant. A new accountant is
/// one file with one [`PrivacyAccountant`] implementation, and one line here (the crate root registers them, so that no accountant and the trait import each other).
pub fn accountants(neighbors: Neighboring) -> Vec<Box<dyn PrivacyAccountant>> {
    vec![
        Box::new(pld::PldAccountant::new(neighbors)),
        Box::new(rdp::RdpAccountant::new()),
        Box::new(exact_gaussian::ExactGaussianAccountant::new()),
        Box::new(zcdp::ZcdpAccountant::new()),
    ]
}
