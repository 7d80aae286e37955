//! `audit list` and `audit describe ID`: the catalogue, and one entry in full.

use std::fmt::Write as _;

use super::{Outcome, to_json};
use crate::error::Result;
use crate::mechanisms::catalogue::{self, Description};
use crate::mechanisms::math::readable;

/// `audit list`: one line per entry, `ID  STATUS  CLAIM  SUMMARY`, then its parameters
/// (`NAME=DEFAULT [LO, HI]`) indented below; `--json`: every entry's full description.
pub(super) fn list(as_json: bool) -> Result<Outcome> {
    // The Bayesian DP targets come last: they are audited against a data file (`--data`), not
    // on a worst-case pair.
    let all: Vec<Description> = catalogue::ids()
        .into_iter()
        .chain(catalogue::bayesian_ids())
        .map(catalogue::describe)
        .collect::<std::result::Result<_, _>>()?;
    let stdout = if as_json {
        to_json(&all)?
    } else {
        let w = all.iter().map(|d| d.id.len()).max().unwrap_or(0);
        let wc = all.iter().map(|d| d.claim.len()).max().unwrap_or(0);
        let mut s = String::new();
        for d in &all {
            let _ = writeln!(
                s,
                "{:w$}  {:7}  {:wc$}  {}",
                d.id, d.status, d.claim, d.summary
            );
            if let Some(why) = d.real_valued_only {
                let _ = writeln!(
                    s,
                    "{:w$}  correct in the real-valued model only (its floating-point outputs can leak): {why}",
                    ""
                );
            }
            if !d.params.is_empty() {
                let p: Vec<String> = d.params.iter().map(ToString::to_string).collect();
                let _ = writeln!(s, "{:w$}  params: {}", "", p.join(", "));
            }
        }
        let _ = writeln!(
            s,
            "\n(`audit describe ID` shows an entry's bug, witness pair and neighboring relation; \
             the bdp-* entries claim Bayesian DP for the data they ship with, examples/bdp-data.txt; --data FILE audits another distribution)"
        );
        s
    };
    Ok(Outcome::new(stdout, 0))
}

/// `audit describe ID`: everything `audit list` knows of one entry.
pub(super) fn describe(id: &str, as_json: bool) -> Result<Outcome> {
    let d = catalogue::describe(id)?;
    let stdout = if as_json {
        to_json(&d)?
    } else {
        let mut s = String::new();
        let _ = writeln!(s, "id           {}", d.id);
        let _ = writeln!(s, "what         {}", d.summary);
        let _ = writeln!(
            s,
            "status       {} (holds for the {})",
            d.status, d.status_holds_for
        );
        if let Some(why) = d.real_valued_only {
            let _ = writeln!(
                s,
                "float        correct in the real-valued model only: its floating-point outputs can reveal the data (the floating-point layer of `audit sample` + `audit test` fails it). {why}"
            );
        }
        if let Some(bug) = &d.bug {
            let _ = writeln!(s, "bug          {bug}");
        }
        let _ = writeln!(s, "claim        {} (default parameters)", d.claim);
        let _ = writeln!(s, "neighbors    {}", d.neighboring);
        let _ = writeln!(s, "unit         {} ({} setting)", d.privacy_unit, d.setting);
        let _ = writeln!(s, "witness      D  = {}", d.witness[0]);
        let _ = writeln!(s, "             D' = {}", d.witness[1]);
        if d.params.is_empty() {
            let _ = writeln!(s, "params       none");
        }
        for (i, p) in d.params.iter().enumerate() {
            let head = if i == 0 { "params" } else { "" };
            let range = p
                .range
                .map(|(lo, hi)| format!("  (allowed {} to {})", readable(lo), readable(hi)))
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "{head:12} --param {}={}{range}",
                p.name,
                readable(p.default)
            );
        }
        if let Some(t) = d.transform {
            let _ = writeln!(s, "transform    audited through --transform {t} by default");
        }
        s
    };
    Ok(Outcome::new(stdout, 0))
}
