//! The one error type of the mechanisms crate.

use dp_audit_accounting::AccountingError;
use thiserror::Error;

/// Everything that can go wrong when building a claim, a dataset, a pair or a mechanism,
/// or when a mechanism samples.
///
/// Messages name the bad value and what is allowed.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum MechanismError {
    /// A privacy parameter is outside its allowed range.
    #[error("invalid privacy parameter: {name} = {}; allowed: {allowed}", crate::math::exact(*.value))]
    InvalidClaim {
        /// Parameter name (`epsilon`, `delta`, `alpha`, `rho`, `mu`).
        name: &'static str,
        /// The value given.
        value: f64,
        /// The allowed range, in words.
        allowed: &'static str,
    },
    /// A mechanism parameter is outside its allowed range or unknown.
    #[error("{mechanism}: invalid parameter: {message}")]
    InvalidParameter {
        /// Mechanism id.
        mechanism: String,
        /// What is wrong, naming the value and what is allowed.
        message: String,
    },
    /// A dataset does not fit the mechanism's record domain, or is malformed.
    #[error("invalid dataset: {0}")]
    InvalidDataset(String),
    /// Two datasets are not neighbors under the stated relation.
    #[error("not a neighboring pair under {relation}: {reason}")]
    NotNeighbors {
        /// The relation that was asked for.
        relation: String,
        /// Why the pair fails it.
        reason: String,
    },
    /// No catalogue entry has this id.
    #[error("unknown mechanism {id:?}; {}", suggest(closest))]
    UnknownMechanism {
        /// The id asked for.
        id: String,
        /// The closest known ids, best first.
        closest: Vec<String>,
    },
    /// An external program refused one dataset: it exited with a failure status, did not
    /// finish in time or printed NaN or ∞ (e.g. a mean that divides by the size of an empty
    /// dataset). Its message reads as [`MechanismError::Sampling`]'s; a dataset search skips
    /// the pair (it is no release of the mechanism) and records it, where every other sampling
    /// error stops the run.
    #[error("mechanism {mechanism} failed to sample: {message}")]
    Refused {
        /// Mechanism id.
        mechanism: String,
        /// What went wrong, with the request and the program's stderr.
        message: String,
    },
    /// A call ran past the time limit its caller set ([`crate::Mechanism::set_call_limit`]):
    /// the mechanism is too slow on this dataset for the size asked, not broken.
    #[error(
        "mechanism {mechanism}: a call of {releases} releases ran past the {} s it was given and was stopped",
        crate::math::readable(*.seconds)
    )]
    Slow {
        /// Mechanism id.
        mechanism: String,
        /// Releases the call asked for.
        releases: usize,
        /// The limit the call ran past, seconds.
        seconds: f64,
    },
    /// A call would run past the run's deadline ([`crate::Mechanism::set_deadline`]): it was
    /// not started, or it was stopped there. Not a fault of the mechanism: the run's time
    /// budget is spent, and the run answers with what it has.
    #[error(
        "mechanism {mechanism}: a call of {releases} releases was stopped at the run's deadline (the time budget, --budget, is spent)"
    )]
    OutOfTime {
        /// Mechanism id.
        mechanism: String,
        /// Releases the call asked for.
        releases: usize,
    },
    /// A mechanism failed while sampling.
    #[error("mechanism {mechanism} failed to sample: {message}")]
    Sampling {
        /// Mechanism id.
        mechanism: String,
        /// What went wrong.
        message: String,
    },
    /// An accountant could not answer for a reason other than an input out of range (a series
    /// that does not converge, a lost precision), in its own words.
    #[error(transparent)]
    Accounting(AccountingError),
}

/// An accountant's input error becomes [`MechanismError::InvalidParameter`], with the same text
/// (the accountant's name in the `mechanism` field); any other accounting error is kept as it is.
impl From<AccountingError> for MechanismError {
    fn from(e: AccountingError) -> Self {
        match e {
            AccountingError::InvalidParameter {
                accountant,
                message,
            } => Self::InvalidParameter {
                mechanism: accountant,
                message,
            },
            other => Self::Accounting(other),
        }
    }
}

/// Result alias of the mechanisms crate.
pub type Result<T, E = MechanismError> = std::result::Result<T, E>;

/// "did you mean …", or where to find the ids when none is close.
fn suggest(closest: &[String]) -> String {
    if closest.is_empty() {
        "no catalogue id is close to it; `audit list` shows them all".to_string()
    } else {
        format!(
            "did you mean {}? (`audit list` shows them all)",
            closest.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn error_is_send_sync() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<super::MechanismError>();
    }
}
