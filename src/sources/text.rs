//! Text inputs: a UTF-8 byte-order mark (U+FEFF, bytes `EF BB BF`) at the start of a file or of
//! a program's output is accepted and ignored.
//!
//! Windows editors and PowerShell (`Out-File`, `Set-Content -Encoding utf8` before 7.0) start
//! UTF-8 files with one; it is invisible in most editors, so refusing it as if the visible
//! number were bad would mislead. It carries no content, so skipping it changes no value. A
//! mark anywhere else (e.g. files joined with `cat`) is not skipped: the line it starts is
//! refused, and the error names the mark ([`bom_note`]).
//!
//! One reader per format, used by every command that reads it: whole text files
//! ([`read_text`]), JSON documents written by the tool or the user ([`read_json`]) and privacy
//! ledgers ([`read_ledger`]). Each accepts the mark and CRLF line ends (lines are split by
//! [`str::lines`], which drops the `\r`, and JSON treats `\r` as white space).

use std::path::Path;

use crate::error::{Error, Result};
use crate::mechanisms::accountant::{LedgerEvent, SamplingPolicy, parse_ledger_with_policies};
use crate::mechanisms::accounting::dpfy::{DpFyScope, ledger_scope};

/// The byte-order mark as a char.
pub const BOM: char = '\u{feff}';

/// `text` without a leading byte-order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix(BOM).unwrap_or(text)
}

/// Reads a whole text file, dropping a leading byte-order mark.
pub fn read_text(path: &Path) -> std::io::Result<String> {
    let mut text = std::fs::read_to_string(path)?;
    if text.starts_with(BOM) {
        text.drain(..BOM.len_utf8());
    }
    Ok(text)
}

/// Why a JSON document could not be read: the file, or its content.
#[derive(Debug)]
pub enum JsonReadError {
    /// The file could not be read (missing, unreadable, not UTF-8).
    Io(std::io::Error),
    /// The text is not the JSON expected.
    Parse(serde_json::Error),
}

impl std::fmt::Display for JsonReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::Parse(e) => write!(f, "{e}"),
        }
    }
}

/// Reads a JSON document (a plan, shard counts, a sidecar, a manifest) as [`read_text`] reads
/// text, so a leading byte-order mark and CRLF line ends are accepted; each caller names the
/// flag and says what the file should have been.
pub fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> std::result::Result<T, JsonReadError> {
    read_json_and_bytes(path).map(|(v, _)| v)
}

/// [`read_json`], also returning the file's bytes as they are on disk (for a digest of the file).
pub fn read_json_and_bytes<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> std::result::Result<(T, Vec<u8>), JsonReadError> {
    let bytes = std::fs::read(path).map_err(JsonReadError::Io)?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| JsonReadError::Io(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    let value = serde_json::from_str(strip_bom(text)).map_err(JsonReadError::Parse)?;
    Ok((value, bytes))
}

/// Reads the privacy ledger at `path`, each event with the [`SamplingPolicy`] of its sample:
/// the one reader of `--claim ledger:FILE` and `audit accountant --ledger FILE`, so both accept
/// the same files (a leading byte-order mark, CRLF line ends; the format is
/// [`crate::mechanisms::accountant::parse_ledger_with_policies`]'s, shown in
/// docs/accountant.md). Which policies can be accounted is the accountant's to say
/// ([`crate::mechanisms::pld::PldAccountant::compose_ledger_with_policies`]). `context` opens
/// every error (e.g. `--ledger FILE`).
///
/// # Errors
/// An unreadable file (not UTF-8 included) or a malformed ledger, each after `context`.
pub fn read_ledger(path: &Path, context: &str) -> Result<Vec<(LedgerEvent, SamplingPolicy)>> {
    let text = read_text(path).map_err(|e| Error::Io {
        context: context.to_string(),
        source: e,
    })?;
    parse_ledger_with_policies(&text)
        .map(|lines| lines.into_iter().map(|(_, e, p)| (e, p)).collect())
        .map_err(|e| Error::InvalidConfig(format!("{context}: {e}")))
}

/// The DP-fy ML scope a ledger file states in its `dp-fy-ml` line (empty when none), named by
/// `context` in errors.
pub fn read_ledger_scope(path: &Path, context: &str) -> Result<DpFyScope> {
    let text = read_text(path).map_err(|e| Error::Io {
        context: context.to_string(),
        source: e,
    })?;
    ledger_scope(&text).map_err(|e| Error::InvalidConfig(format!("{context}: {e}")))
}

/// An explanation to add to an error about `line` when it starts with a byte-order mark (one
/// not at the start of the input, which is never refused), else "".
pub fn bom_note(line: &str) -> &'static str {
    if line.trim_start_matches([' ', '\t']).starts_with(BOM) {
        " (the line begins with a UTF-8 byte-order mark, U+FEFF, which is allowed only at the start of the input: were files joined with `cat`?)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_mark_is_dropped_once() {
        assert_eq!(strip_bom("\u{feff}1.5\n"), "1.5\n");
        assert_eq!(strip_bom("1.5"), "1.5");
        assert_eq!(strip_bom("\u{feff}\u{feff}1"), "\u{feff}1");
        assert!(bom_note("\u{feff}2").contains("byte-order mark"));
        assert_eq!(bom_note("2"), "");
    }

    #[test]
    fn a_ledger_and_a_json_document_read_with_a_mark_and_crlf() {
        let dir = std::env::temp_dir().join(format!("dp-audit-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = "{\"event\": \"sampling\", \"probability\": 0.5, \"repetitions\": 3}\n{\"event\": \"gaussian-sum\", \"noise_multiplier\": 2}\n";
        let windows = format!("\u{feff}{}", plain.replace('\n', "\r\n"));
        let (a, b) = (dir.join("plain.jsonl"), dir.join("windows.jsonl"));
        std::fs::write(&a, plain).unwrap();
        std::fs::write(&b, &windows).unwrap();
        let read_a = read_ledger(&a, "--ledger a").unwrap();
        assert_eq!(read_a.len(), 2);
        assert_eq!(read_a, read_ledger(&b, "--ledger b").unwrap());
        let doc = dir.join("doc.json");
        std::fs::write(&doc, "\u{feff}{\r\n  \"k\": [1, 2]\r\n}\r\n").unwrap();
        let v: serde_json::Value = read_json(&doc).unwrap();
        assert_eq!(v["k"][1], 2);
        // A mark that is not at the start is still refused.
        std::fs::write(&doc, "{\"k\": 1}\n\u{feff}").unwrap();
        assert!(matches!(
            read_json::<serde_json::Value>(&doc),
            Err(JsonReadError::Parse(_))
        ));
        let e = read_ledger(&dir.join("missing.jsonl"), "--ledger missing")
            .unwrap_err()
            .to_string();
        assert!(e.contains("--ledger missing"), "{e}");
    }
}
