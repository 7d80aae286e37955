//! Text inputs: a UTF-8 byte-order mark (U+FEFF, bytes `EF BB BF`) at the start of a file or of
//! a program's output is accepted and ignored.
//!
//! Windows editors and PowerShell (`Out-File`, `Set-Content -Encoding utf8` before 7.0) start
//! UTF-8 files with one; it is invisible in most editors, so refusing it as if the visible
//! number were bad would mislead. It carries no content, so skipping it changes no value. A
//! mark anywhere else (e.g. files joined with `cat`) is not skipped: the line it starts is
//! refused, and the error names the mark ([`bom_note`]).

use std::path::Path;

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
}
