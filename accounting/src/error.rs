//! The one error type of the accounting crate.

use thiserror::Error;

/// Everything that can go wrong when an accountant composes or answers, in accounting's words.
///
/// Messages name the accountant, the bad value and what is allowed. The mechanisms crate turns
/// an [`AccountingError::InvalidParameter`] into its own `InvalidParameter` with the same text.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum AccountingError {
    /// An input (a rate, a noise multiplier, a δ, a ledger line, …) is outside its allowed
    /// range, or a composition asks for more than the accountant holds.
    #[error("{accountant}: invalid parameter: {message}")]
    InvalidParameter {
        /// Who refused it: `rdp-accountant`, `pld-accountant`, `bayesian-accountant`, `ledger`,
        /// `neighbors`.
        accountant: String,
        /// What is wrong, naming the value and what is allowed.
        message: String,
    },
    /// A series of the subsampled Gaussian's Rényi divergence did not converge within
    /// [`crate::rdp::MAX_SERIES_TERMS`] terms: no value is returned rather than a wrong one.
    #[error(
        "{accountant}: {series} for the subsampled Gaussian RDP did not converge within {terms} terms at q = {q}, z = {noise_multiplier}, alpha = {alpha}; allowed: orders and rates whose series converge within {terms} terms (no value is returned rather than a wrong one)"
    )]
    NotConverged {
        /// The accountant (`rdp-accountant`).
        accountant: String,
        /// Which series: `the binomial sum`, `the fractional-order series`, ….
        series: String,
        /// The most terms summed.
        terms: usize,
        /// The sampling rate q.
        q: f64,
        /// The noise multiplier z.
        noise_multiplier: f64,
        /// The Rényi order α.
        alpha: f64,
    },
    /// A computation lost the precision it needs (e.g. a log-space subtraction whose result
    /// would be negative): no value is returned rather than a wrong one.
    #[error("{accountant}: {message}")]
    LostPrecision {
        /// The accountant.
        accountant: String,
        /// What lost precision, with the values.
        message: String,
    },
}

impl AccountingError {
    /// An [`AccountingError::InvalidParameter`] of `accountant`.
    pub fn invalid(accountant: &str, message: String) -> Self {
        Self::InvalidParameter {
            accountant: accountant.to_string(),
            message,
        }
    }
}

/// Result alias of the accounting crate.
pub type Result<T, E = AccountingError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    #[test]
    fn error_is_send_sync() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<super::AccountingError>();
    }
}
