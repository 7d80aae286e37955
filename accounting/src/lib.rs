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

#![warn(missing_docs)]

pub mod accountant;
pub mod bayesian;
pub mod error;
pub mod exact_gaussian;
pub mod ledger;
pub mod math;
pub mod neighboring;
pub mod pld;
pub mod rdp;
pub mod zcdp;

pub use accountant::{DeltaRange, EpsilonRange, PrivacyAccountant, Scope, accountants};
pub use error::{AccountingError, Result};
pub use ledger::{LedgerEvent, SamplingPolicy};
pub use neighboring::Neighboring;
