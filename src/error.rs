//! The root crate's error type.

use thiserror::Error;

use crate::mechanisms::MechanismError;

/// Everything the auditing library can report as an error (as opposed to a verdict: a violation
/// found is `Ok`, not `Err`). Messages name the bad value and what is allowed.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// From the mechanisms crate: bad claim, dataset, pair, parameter or a sampling failure.
    #[error(transparent)]
    Mechanism(#[from] MechanismError),
    /// An audit or tester setting is outside its allowed range.
    #[error("invalid setting: {0}")]
    InvalidConfig(String),
    /// Samples handed to a tester are unusable (NaN, mismatched dimensions, too few).
    #[error("invalid samples: {0}")]
    InvalidSamples(String),
    /// The tester cannot test this claim.
    #[error("tester {tester} cannot test claim {claim}: {reason}")]
    ClaimNotTestable {
        /// Tester name.
        tester: String,
        /// The claim.
        claim: String,
        /// Why.
        reason: String,
    },
    /// Reading or writing a file failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the path.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

/// An accountant's error, as the mechanisms crate words it ([`MechanismError`]'s `From`: an
/// input out of range reads as a parameter error, anything else in the accountant's words).
impl From<crate::mechanisms::accounting::AccountingError> for Error {
    fn from(e: crate::mechanisms::accounting::AccountingError) -> Self {
        Self::Mechanism(MechanismError::from(e))
    }
}

/// Result alias of the root crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    #[test]
    fn error_is_send_sync() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<super::Error>();
    }
}
