//! `audit list`: the catalogue, one line per entry.

use std::fmt::Write as _;

use serde_json::json;

use super::Outcome;
use crate::error::{Error, Result};
use crate::mechanisms::catalogue;

pub(super) fn list(as_json: bool) -> Result<Outcome> {
    let entries = catalogue::catalogue()?;
    let stdout = if as_json {
        let arr: Vec<_> = entries
            .iter()
            .map(|e| {
                json!({
                    "id": e.mechanism.id(),
                    "status": e.status.word(),
                    "claim": e.mechanism.claim().to_string(),
                })
            })
            .collect();
        serde_json::to_string_pretty(&arr).map_err(|e| Error::InvalidConfig(e.to_string()))? + "\n"
    } else {
        let w = entries
            .iter()
            .map(|e| e.mechanism.id().len())
            .max()
            .unwrap_or(0);
        let mut s = String::new();
        for e in &entries {
            let _ = writeln!(
                s,
                "{:w$}  {:7}  {}",
                e.mechanism.id(),
                e.status.word(),
                e.mechanism.claim()
            );
        }
        s
    };
    Ok(Outcome { stdout, code: 0 })
}
