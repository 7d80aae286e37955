//! The report of `audit bench table`: `DIR/<run-id>/audit.json` (the [`TableReport`], recognised
//! by its `"mode": "table"`), `index.html` (the detection table, coloured by detection rate) and
//! `table.png` (the same table as a heat map).
//!
//! Everything on the page and in the figure comes from audit.json, so `audit report` redraws it
//! exactly.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use statrs::distribution::{Binomial, DiscreteCDF};

use crate::error::Result;

use super::html::{Figure, e, figures_html, num, page};
use super::plot::{draw_err, font, with_canvas};
use super::{REPORT_FILE, fnv1a64, to_pretty, write_atomic, write_dir_atomically};

/// The figure of a table report.
pub const TABLE_FILE: &str = "table.png";

/// What a detection-table run records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableReport {
    /// Layout version.
    pub schema_version: u32,
    /// Always `"table"` (tells this report from the others).
    pub mode: String,
    /// dp-audit version.
    pub tool_version: String,
    /// Samples per side of each audit.
    pub samples_per_side: usize,
    /// Audits per cell.
    pub repeats: u64,
    /// β of each audit.
    pub failure_probability_per_audit: f64,
    /// The ε values entries with an `epsilon` parameter were built with.
    pub epsilons: Vec<f64>,
    /// The testers, one column each.
    pub testers: Vec<String>,
    /// The seed.
    pub seed: u64,
    /// The cells.
    pub cells: Vec<TableCell>,
    /// Wall time of the whole table, seconds (not part of `--json`, so a seed gives the same
    /// bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_seconds: Option<f64>,
    /// The command that re-runs exactly this table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
}

/// The directory name: `table-seed<seed>-<hash of the JSON>`.
pub fn table_id(r: &TableReport) -> Result<String> {
    let h = fnv1a64(to_pretty(r)?.as_bytes());
    Ok(format!("table-seed{}-{:08x}", r.seed, h >> 32))
}

/// Checks every number the page and figure show.
pub(super) fn validate(r: &TableReport) -> std::result::Result<(), String> {
    let ok = r.failure_probability_per_audit > 0.0
        && r.failure_probability_per_audit < 1.0
        && r.repeats >= 1
        && r.epsilons.iter().all(|e| e.is_finite() && *e >= 0.0)
        && r.cells.iter().all(|c| {
            c.repeats == r.repeats
                && c.detections.is_none_or(|k| k <= c.repeats)
                && c.epsilon.is_none_or(|e| e.is_finite() && e >= 0.0)
                && r.testers.contains(&c.tester)
        });
    if ok {
        Ok(())
    } else {
        Err("a table report with numbers out of range (0 < β < 1, detections ≤ repeats, every cell's tester among the testers, ε finite ≥ 0); allowed: what `audit bench table` writes".into())
    }
}

/// Writes the report to `dir/<run-id>/` atomically and regenerates `dir/index.html`.
pub fn write_table_report(dir: &Path, r: &TableReport) -> Result<PathBuf> {
    let id = table_id(r)?;
    let json = to_pretty(&crate::record::ResultRecord::from_table(r))?;
    let target = write_dir_atomically(dir, &id, |tmp| {
        write_atomic(&tmp.join(REPORT_FILE), json.as_bytes())?;
        render_table_into(tmp, r, &id)
    })?;
    super::write_index(dir)?;
    Ok(target.join("index.html"))
}

/// Draws the figure and writes the page into `dir`.
pub(super) fn render_table_into(dir: &Path, r: &TableReport, id: &str) -> Result<()> {
    heat_map(&dir.join(TABLE_FILE), r)?;
    write_atomic(&dir.join("index.html"), render(r, id).as_bytes())
}

/// The cell's detection rate, `None` when the tester cannot test the claim.
fn rate(r: &TableReport, id: &str, eps: Option<f64>, tester: &str) -> Option<f64> {
    r.cells
        .iter()
        .find(|c| c.mechanism == id && c.epsilon == eps && c.tester == tester)
        .and_then(|c| c.detections.map(|k| k as f64 / c.repeats.max(1) as f64))
}

/// White (0) to red (1) for buggy rows, white to blue for correct ones.
fn shade(rate: f64, buggy: bool) -> RGBColor {
    let t = rate.clamp(0.0, 1.0);
    let mix = |full: u8| (255.0 - t * (255.0 - f64::from(full))).round() as u8;
    if buggy {
        RGBColor(mix(200), mix(40), mix(40))
    } else {
        RGBColor(mix(40), mix(90), mix(200))
    }
}

fn row_label(id: &str, eps: Option<f64>) -> String {
    match eps {
        Some(e) => format!("{id}  ε = {}", num(e)),
        None => id.to_string(),
    }
}

/// The table as a heat map: one row per (entry, ε), one column per tester, the cell's count
/// written in it; red rows are buggy settings, blue rows correct ones, hatched-grey cells n/a.
fn heat_map(path: &Path, r: &TableReport) -> Result<()> {
    let rows = table_rows(&r.cells);
    let (label_w, cell_w, cell_h, top) = (430i32, 120i32, 20i32, 70i32);
    let width = (label_w + cell_w * r.testers.len() as i32 + 20).max(700) as u32;
    let height = (top + cell_h * rows.len() as i32 + 20) as u32;
    with_canvas(path, (width, height), |root| {
        let err = |x| draw_err(path, x);
        root.draw(&Text::new(
            format!(
                "Detections out of {} per tester ({} samples per side, β = {} per audit)",
                r.repeats,
                r.samples_per_side,
                num(r.failure_probability_per_audit)
            ),
            (10, 10),
            font(18),
        ))
        .map_err(err)?;
        for (j, t) in r.testers.iter().enumerate() {
            root.draw(&Text::new(
                t.clone(),
                (label_w + cell_w * j as i32 + 8, top - 24),
                font(15),
            ))
            .map_err(err)?;
        }
        for (i, row) in rows.iter().enumerate() {
            let y = top + cell_h * i as i32;
            let buggy = row.2 == "buggy";
            root.draw(&Text::new(
                row_label(row.0, row.1),
                (10, y + 3),
                TextStyle::from(font(13)).color(if buggy {
                    &RGBColor(150, 20, 20)
                } else {
                    &BLACK
                }),
            ))
            .map_err(err)?;
            for (j, t) in r.testers.iter().enumerate() {
                let x = label_w + cell_w * j as i32;
                let cell = rate(r, row.0, row.1, t);
                let fill = cell.map_or(RGBColor(225, 225, 225), |v| shade(v, buggy));
                root.draw(&Rectangle::new(
                    [(x, y), (x + cell_w - 2, y + cell_h - 2)],
                    fill.filled(),
                ))
                .map_err(err)?;
                root.draw(&Rectangle::new(
                    [(x, y), (x + cell_w - 2, y + cell_h - 2)],
                    RGBColor(215, 215, 215),
                ))
                .map_err(err)?;
                let text = cell.map_or("n/a".to_string(), |v| {
                    format!("{}", (v * r.repeats as f64).round())
                });
                root.draw(&Text::new(text, (x + cell_w / 2 - 8, y + 3), font(13)))
                    .map_err(err)?;
            }
        }
        Ok(())
    })
}

fn render(r: &TableReport, run_id: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<h1>Detection table of the catalogue</h1>\n<p class=\"sub\">run <span class=\"mono\">{}</span> · <a href=\"../index.html\">all runs</a></p>",
        e(run_id)
    );
    let _ = writeln!(
        s,
        "<div class=\"verdict\" id=\"verdict\"><p>{}</p><p class=\"caveat\">Each cell counts, out of {} audits, how often one tester alone \
         reported a violation of the entry's claim on its witness pair. A correct entry is reported in about a β fraction of audits at most; \
         a buggy entry that no tester catches here may still be caught with more samples or by a finder.</p></div>",
        e(&table_summary(&r.cells, r.failure_probability_per_audit)),
        r.repeats
    );
    let _ = writeln!(
        s,
        "<h2>What was run</h2><dl class=\"facts\"><dt>pairs</dt><dd>each entry's witness pair (<code>audit describe ID</code>), \
         through the output transform <code>audit run --mechanism ID</code> uses</dd>\
         <dt>settings</dt><dd>entries with an <code>epsilon</code> parameter at ε = {}; the others at their defaults (“own”)</dd>\
         <dt>audits</dt><dd>{} per cell, {} samples per side, β = {} per audit</dd><dt>seed</dt><dd>{}</dd>{}\
         <dt>tool</dt><dd>dp-audit {} · audit.json layout {} (its section: layout {})</dd></dl>",
        e(&r.epsilons
            .iter()
            .map(|&x| num(x))
            .collect::<Vec<_>>()
            .join(", ")),
        r.repeats,
        r.samples_per_side,
        e(&num(r.failure_probability_per_audit)),
        r.seed,
        r.wall_time_seconds
            .map(|w| format!("<dt>wall time</dt><dd>{} s</dd>", e(&num(w))))
            .unwrap_or_default(),
        e(&r.tool_version),
        crate::record::RECORD_SCHEMA_VERSION,
        r.schema_version
    );
    s.push_str("<h2>The table</h2><div class=\"scroll\"><table id=\"detections\"><thead><tr><th>mechanism</th><th>status</th><th>ε</th><th>claim</th>");
    for t in &r.testers {
        let _ = write!(s, "<th>{}</th>", e(t));
    }
    s.push_str("</tr></thead><tbody>\n");
    for row in table_rows(&r.cells) {
        let buggy = row.2 == "buggy";
        let _ = write!(
            s,
            "<tr><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td class=\"mono\">{}</td>",
            e(row.0),
            e(row.2),
            row.1.map_or("own".to_string(), |x| e(&num(x))),
            e(row.3)
        );
        for t in &r.testers {
            match rate(r, row.0, row.1, t) {
                Some(v) => {
                    let c = shade(v, buggy);
                    let _ = write!(
                        s,
                        "<td style=\"background: rgb({}, {}, {})\">{}/{}</td>",
                        c.0,
                        c.1,
                        c.2,
                        (v * r.repeats as f64).round(),
                        r.repeats
                    );
                }
                None => s.push_str("<td class=\"small\">n/a</td>"),
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</tbody></table></div>\n");
    s.push_str(&figures_html(&[Figure {
        file: TABLE_FILE.into(),
        alt: "the detection table as a heat map".into(),
        caption: "The same table: red rows are buggy settings (darker = caught more often), blue rows correct ones (any colour there is a detection a level-β test makes by chance at most a β fraction of the time), grey cells n/a.".into(),
    }]));
    if let Some(line) = &r.reproduce {
        let _ = writeln!(
            s,
            "<p class=\"small\">Reproduce: <code id=\"reproduce\">{}</code></p>",
            e(line)
        );
    }
    s.push_str(&super::html::record_html(
        &crate::record::ResultRecord::from_table(r),
    ));
    page("detection table of the catalogue", &s)
}

/// A one-line index entry: (kind, claim, result, violation).
pub(super) fn index_fields(r: &TableReport) -> (String, String, String, bool) {
    let rows = table_rows(&r.cells);
    let buggy = rows.iter().filter(|row| row.2 == "buggy").count();
    (
        "detection table".into(),
        format!("each entry's own claim; ε ∈ {{{}}}", {
            r.epsilons
                .iter()
                .map(|&x| num(x))
                .collect::<Vec<_>>()
                .join(", ")
        }),
        format!(
            "{} settings ({buggy} buggy), {} testers, {} audits each",
            rows.len(),
            r.testers.len(),
            r.repeats
        ),
        false,
    )
}

/// One cell of the detection table ([`crate::bench::table`]): an entry at one setting, one tester.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct TableCell {
    /// Catalogue id.
    pub mechanism: String,
    /// `correct` or `buggy` at this setting (computed by the entry from its parameters).
    pub status: String,
    /// The ε the entry was built with (`--param epsilon=…`), or `None` for its own default
    /// claim (entries without an `epsilon` parameter, e.g. DP-SGD's noise multiplier).
    pub epsilon: Option<f64>,
    /// The claim audited.
    pub claim: String,
    /// Tester name.
    pub tester: String,
    /// Audits that reported a violation; `None` when the tester cannot test the claim.
    pub detections: Option<u64>,
    /// Audits run.
    pub repeats: u64,
    /// Why the cell is empty, when it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The rows of a table in order: (id, ε, status, claim), each once.
pub fn table_rows(cells: &[TableCell]) -> Vec<(&str, Option<f64>, &str, &str)> {
    let mut rows: Vec<(&str, Option<f64>, &str, &str)> = Vec::new();
    for c in cells {
        let row = (
            c.mechanism.as_str(),
            c.epsilon,
            c.status.as_str(),
            c.claim.as_str(),
        );
        if !rows.iter().any(|r| r.0 == row.0 && r.1 == row.1) {
            rows.push(row);
        }
    }
    rows
}

/// What the table says in one line per status: buggy settings caught by at least one tester in
/// a majority of audits, and correct settings with a cell above what level-β audits explain
/// (P(Binomial(repeats, β) ≥ k) < 0.001).
pub fn table_summary(cells: &[TableCell], beta: f64) -> String {
    let rows = table_rows(cells);
    let of = |row: &(&str, Option<f64>, &str, &str)| -> Vec<&TableCell> {
        cells
            .iter()
            .filter(|c| c.mechanism == row.0 && c.epsilon == row.1)
            .collect()
    };
    let buggy: Vec<_> = rows.iter().filter(|r| r.2 == "buggy").collect();
    let caught = buggy
        .iter()
        .filter(|r| {
            of(r)
                .iter()
                .any(|c| c.detections.is_some_and(|k| 2 * k > c.repeats))
        })
        .count();
    let correct: Vec<_> = rows.iter().filter(|r| r.2 == "correct").collect();
    let unexplained = correct
        .iter()
        .filter(|r| {
            of(r).iter().any(|c| {
                c.detections.is_some_and(|k| {
                    k > 0
                        && Binomial::new(beta, c.repeats)
                            .map(|b| b.sf(k - 1) < 1e-3)
                            .unwrap_or(false)
                })
            })
        })
        .count();
    format!(
        "buggy settings caught by some tester in most audits: {caught}/{}; correct settings with more detections than β explains (binomial tail < 0.001): {unexplained}/{}",
        buggy.len(),
        correct.len()
    )
}
