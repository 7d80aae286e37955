//! The neighboring relation: which datasets a claim, a ledger's accounting and a mechanism's
//! pairs are stated for.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{AccountingError, Result};

/// The neighboring relation a claim is stated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Neighboring {
    /// D' is D with one record added or removed (unbounded DP).
    AddRemove,
    /// D' is D with one record replaced by another (bounded DP).
    ReplaceOne,
    /// D' is D with one record replaced by the null record, every coordinate 0
    /// ([`Neighboring::null_record`]; Kairouz et al. 2021, Ponomareva et al. 2023 "zero-out").
    ZeroOut,
}

impl Neighboring {
    /// The command-line name: `add-remove`, `replace-one` or `zero-out`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::AddRemove => "add-remove",
            Self::ReplaceOne => "replace-one",
            Self::ZeroOut => "zero-out",
        }
    }

    /// The null record of dimension `dim` that zero-out puts in place of a record: all zeros (a
    /// mechanism claiming zero-out takes records whose range contains 0).
    pub fn null_record(dim: usize) -> Vec<f64> {
        vec![0.0; dim]
    }
}

impl fmt::Display for Neighboring {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Neighboring {
    type Err = AccountingError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "add-remove" => Ok(Self::AddRemove),
            "replace-one" => Ok(Self::ReplaceOne),
            "zero-out" => Ok(Self::ZeroOut),
            other => Err(AccountingError::InvalidParameter {
                accountant: "neighbors".into(),
                message: format!(
                    "unknown relation {other:?}; allowed: add-remove, replace-one, zero-out"
                ),
            }),
        }
    }
}
