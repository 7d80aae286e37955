//! The report of `audit run --sequential`: `DIR/<run-id>/audit.json` (the
//! [`SequentialReport`], recognised by its `"mode": "sequential"`), `index.html` and `wealth.png`
//! (the mixture's log-wealth after each batch against the ln(1/β) threshold).
//!
//! The sequential audit already records the mixture log-wealth at every batch boundary
//! ([`SequentialReport::batches`]), and at the stopping time in the last record, so the figure
//! needs nothing beyond audit.json and re-rendering (`audit report`) redraws it exactly.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::audit::Verdict;
use crate::audit::sequential::SequentialReport;
use crate::error::Result;

use super::html::{
    Figure, claim_words, direction_words, divergence_words, e, figures_html, neighboring_words,
    num, page, pair_html, percent, readable_numbers_in,
};
use super::plot::{
    BLUE, GREY, RED, axis_range, clip, draw_err, font, free_corner, tick_label, with_canvas,
};
use super::{REPORT_FILE, fnv1a64, slug, to_pretty, write_atomic, write_dir_atomically};

/// The figure of a sequential report.
pub const WEALTH_FILE: &str = "wealth.png";

/// The report as `--json` prints it (no wall time).
pub fn deterministic_json(r: &SequentialReport) -> Result<String> {
    let mut r = r.clone();
    r.wall_time_seconds = None;
    to_pretty(&r)
}

/// The directory name: `sequential-<mechanism>-seed<seed>-<hash of the deterministic JSON>`.
pub fn sequential_id(r: &SequentialReport) -> Result<String> {
    let h = fnv1a64(deterministic_json(r)?.as_bytes());
    Ok(format!(
        "sequential-{}-seed{}-{:08x}",
        slug(&r.mechanism.id),
        r.seed,
        h >> 32
    ))
}

/// Writes a sequential audit's report to `dir/<run-id>/` (audit.json, wealth.png, index.html)
/// atomically and regenerates `dir/index.html`. Returns the path of the run's `index.html`.
pub fn write_sequential_report(dir: &Path, r: &SequentialReport) -> Result<PathBuf> {
    let id = sequential_id(r)?;
    let json = to_pretty(&crate::record::ResultRecord::from_sequential(r))?;
    let target = write_dir_atomically(dir, &id, |tmp| {
        write_atomic(&tmp.join(REPORT_FILE), json.as_bytes())?;
        render_sequential_into(tmp, r, &id)
    })?;
    super::write_index(dir)?;
    Ok(target.join("index.html"))
}

/// Draws the figure and writes the page into `dir` (a run directory).
pub(super) fn render_sequential_into(dir: &Path, r: &SequentialReport, id: &str) -> Result<()> {
    wealth_plot(&dir.join(WEALTH_FILE), r)?;
    let page = render_sequential(r, id, &figures(r));
    write_atomic(&dir.join("index.html"), page.as_bytes())
}

/// The wealth trajectory as (releases per side, ln M): one point per batch boundary, the last
/// one at the stopping time when the audit stopped.
pub fn trajectory(r: &SequentialReport) -> Vec<(f64, f64)> {
    let k = r.batches.len();
    r.batches
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let x = match r.stopping_time {
                Some(t) if i + 1 == k => t,
                _ => b.samples_per_side,
            };
            (x as f64, b.log_wealth)
        })
        .collect()
}

fn figures(r: &SequentialReport) -> Vec<Figure> {
    vec![Figure {
        file: WEALTH_FILE.into(),
        alt: "log-wealth of the betting e-process against releases per side".into(),
        caption: format!(
            "The log-wealth ln M of the averaged betting process (blue) after each batch, against releases per side (log scale); \
             the last point is at the stopping time when the audit stopped. The red dashed line is ln(1/β) = {}: a violation is reported \
             the first time ln M reaches it (checked after every pair of releases, plotted only at batch boundaries). \
             The first batch only trains, so the wealth is 0 there.",
            num(r.log_threshold)
        ),
    }]
}

/// Log-wealth against releases per side (log x axis), with the ln(1/β) threshold line and, when
/// the audit stopped, a vertical line at the stopping time.
pub fn wealth_plot(path: &Path, r: &SequentialReport) -> Result<()> {
    let pts = trajectory(r);
    let ((x0, x1), (y0, y1)) = wealth_axes(r, &pts);
    // Points beyond a clamped axis are drawn at its edge.
    let pts: Vec<(f64, f64)> = pts
        .iter()
        .map(|&(x, y)| (clip(x, (x0, x1)), clip(y, (y0, y1))))
        .collect();
    let threshold = clip(r.log_threshold, (y0, y1));
    with_canvas(path, (1000, 560), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!(
                    "{}: sequential audit, log-wealth vs releases per side",
                    r.mechanism.id
                ),
                font(20),
            )
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
            .map_err(|err| draw_err(path, err))?;
        chart
            .configure_mesh()
            .light_line_style(RGBColor(238, 238, 238))
            .x_desc("releases per side drawn (log scale)")
            .x_label_formatter(&|x| format!("{}", x.round()))
            .y_desc("ln M (log-wealth)")
            .y_label_formatter(&|v| tick_label(*v, y0, y1))
            .label_style(font(15))
            .axis_desc_style(font(16))
            .draw()
            .map_err(|err| draw_err(path, err))?;
        chart
            .draw_series(DashedLineSeries::new(
                [(x0, threshold), (x1, threshold)],
                8,
                5,
                RED.stroke_width(2),
            ))
            .map_err(|err| draw_err(path, err))?
            .label(format!(
                "ln(1/β) = {} (β = {}): violation threshold",
                num(r.log_threshold),
                num(r.failure_probability)
            ))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], RED.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(
                [(x0, 0.0), (x1, 0.0)],
                GREY.stroke_width(1),
            ))
            .map_err(|err| draw_err(path, err))?
            .label("ln M = 0 (starting wealth)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], GREY.stroke_width(1)));
        if let Some(t) = r.stopping_time {
            chart
                .draw_series(DashedLineSeries::new(
                    [
                        (clip(t as f64, (x0, x1)), y0),
                        (clip(t as f64, (x0, x1)), y1),
                    ],
                    6,
                    4,
                    BLACK.stroke_width(2),
                ))
                .map_err(|err| draw_err(path, err))?
                .label(format!("stopping time: {t} releases per side"))
                .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLACK.stroke_width(2)));
        }
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), BLUE.stroke_width(3)))
            .map_err(|err| draw_err(path, err))?
            .label(format!(
                "ln M: average of {} betting process(es)",
                r.components.len()
            ))
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLUE.stroke_width(3)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 5, BLUE.filled())))
            .map_err(|err| draw_err(path, err))?;
        // Legend placement works on ln x (the axis is logarithmic); the threshold line counts.
        let corners: Vec<(f64, f64)> = pts
            .iter()
            .map(|&(x, y)| (x.ln(), y))
            .chain((0..=10).map(|i| {
                (
                    x0.ln() + (x1.ln() - x0.ln()) * f64::from(i) / 10.0,
                    threshold,
                )
            }))
            .collect();
        chart
            .configure_series_labels()
            .position(free_corner(
                &corners,
                (x0.ln(), x1.ln()),
                (y0, y1),
                (0.45, 0.3),
            ))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(font(15))
            .draw()
            .map_err(|err| draw_err(path, err))
    })
}

/// The wealth figure's axes: releases per side on a log scale (from below the first batch to
/// past the last, within the plotting limit) and ln M down to 0 and up to ln(1/β) at least.
fn wealth_axes(r: &SequentialReport, pts: &[(f64, f64)]) -> ((f64, f64), (f64, f64)) {
    let xmin = pts.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
    // Up to the maximum when the audit ran to it; a stopped audit is shown up to where it stopped.
    let xmax = pts.iter().map(|p| p.0).fold(1.0, f64::max);
    let (x0, x1) = if xmin.is_finite() && xmin > 0.0 {
        (xmin / 1.3, xmax * 1.3)
    } else {
        (1.0, xmax.max(2.0) * 1.3)
    };
    // A logarithmic axis: positive, finite and within the plotting limit, with x0 < x1.
    let x1 = x1.clamp(2.0, super::plot::AXIS_LIMIT);
    let x0 = x0.clamp(0.5, x1 / 2.0);
    let ymin = pts.iter().map(|p| p.1).fold(0.0f64, f64::min);
    let ymax = pts.iter().map(|p| p.1).fold(r.log_threshold, f64::max);
    let (y0, y1) = axis_range(ymin, ymax, 0.08);
    ((x0, x1), (y0, y1))
}

/// The command line that reproduces the run, as far as the report records it.
fn reproduce_command(r: &SequentialReport) -> String {
    if let Some(line) = &r.reproduce {
        return line.clone();
    }
    let mut cmd = format!(
        "audit run --mechanism {} --sequential --max-samples {} --first-batch {} --seed {} --failure-probability {}",
        r.mechanism.id, r.max_samples_per_side, r.first_batch, r.seed, r.failure_probability
    );
    if r.mechanism
        .claim_source
        .starts_with("given on the command line")
    {
        let _ = write!(cmd, " --claim {}", r.mechanism.claim);
    }
    if let Some(t) = &r.output_transform {
        let _ = write!(cmd, " --transform {t}");
    }
    cmd
}

fn verdict_html(r: &SequentialReport) -> String {
    let beta = num(r.failure_probability);
    let claim = e(&r.mechanism.claim.to_string());
    match (r.verdict, r.stopping_time) {
        (Verdict::Violation, t) => format!(
            "<div class=\"verdict violation\" id=\"verdict\"><h2>Violation found</h2>\
             <p>The betting wealth reached 1/β after <b>{}</b> releases per side: ln M = {} ≥ ln(1/β) = {}. \
             Against a mechanism that keeps the claim <b>{claim}</b> on this pair of datasets, the wealth ever reaches 1/β \
             with probability at most β = {beta} (Ville's inequality), at whatever time the audit stops. \
             This is evidence that the claim is false for this pair, not a statement about how the bug arises.</p></div>\n",
            t.map_or_else(|| "?".to_string(), |t| t.to_string()),
            e(&num(r.log_wealth)),
            e(&num(r.log_threshold)),
        ),
        (Verdict::NoViolation, _) => format!(
            "<div class=\"verdict noviolation\" id=\"verdict\"><h2>No violation found</h2>\
             <p>The betting wealth never reached 1/β in {} releases per side: ln M = {} &lt; ln(1/β) = {} for the claim <b>{claim}</b>.</p>\
             <p class=\"caveat\">This does not show that the mechanism keeps its claim, nor that it is private. \
             Only this one pair of datasets, the events the betting strategy chose from the data and at most {} releases per side were tried; \
             a bug that shows only on other datasets, on other output events, or that needs more samples to detect would not be seen here. \
             Low wealth is absence of evidence, not evidence of privacy.</p></div>\n",
            r.samples_per_side,
            e(&num(r.log_wealth)),
            e(&num(r.log_threshold)),
            r.samples_per_side,
        ),
    }
}

/// The page of one sequential audit.
pub fn render_sequential(r: &SequentialReport, run_id: &str, figures: &[Figure]) -> String {
    let m = &r.mechanism;
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h1>Sequential audit of <span class=\"mono\">{}</span></h1>\n<p class=\"sub\">run <span class=\"mono\">{}</span> · <a href=\"../index.html\">all runs</a></p>",
        e(&m.id),
        e(run_id)
    );
    b.push_str(&verdict_html(r));
    b.push_str(&sequential_tested_html(r));
    let _ = writeln!(
        b,
        "<h2>The guarantee</h2><p id=\"guarantee\">For each ε the claim bounds and each direction, a betting process multiplies its wealth by \
         1 + λ(Z − δ) per pair of releases, where Z = 1{{X ∈ S}} − e^ε·1{{Y ∈ S}} and the event S and bet λ were chosen from earlier releases only. \
         Against a mechanism that keeps its claim on this pair, the average M of these processes is a nonnegative supermartingale starting at 1, so by \
         <b>Ville's inequality</b> it ever reaches 1/β with probability at most <b>β = {}</b>, however long the audit runs and whenever it stops \
         (releases i.i.d. within each side, sides independent).</p><pre>{}</pre>",
        e(&num(r.failure_probability)),
        e(&r.inequality),
    );
    let _ = writeln!(
        b,
        "<p class=\"small\">Reproduce: <code>{}</code> (from the run's command line when audit.json records it; otherwise add any <code>--param NAME=VALUE</code> the original run used).</p>",
        e(&reproduce_command(r))
    );
    b.push_str(&betting_tables_html(r));
    if !figures.is_empty() {
        let _ = writeln!(b, "<h2>Figures</h2>");
        b.push_str(&figures_html(figures));
    }
    let _ = writeln!(
        b,
        "<h2>Files</h2><p><a href=\"audit.json\">audit.json</a>: everything above, machine-readable (the <code>audit run --sequential --json</code> output plus the wall time). \
         <code>audit report {}/audit.json</code> re-renders this page.</p>",
        e(run_id)
    );
    b.push_str(&super::html::record_html(
        &crate::record::ResultRecord::from_sequential(r),
    ));
    page(
        &format!("dp-audit: {} — sequential, {}", m.id, r.verdict.words()),
        &b,
    )
}

/// The "What was tested" facts of a sequential audit: mechanism, claim, pair or files, the
/// batches, the samples used, the stopping time and the final wealth.
fn sequential_tested_html(r: &SequentialReport) -> String {
    let m = &r.mechanism;
    let mut b = String::new();
    let status = m
        .catalogue_status
        .as_ref()
        .map(|s| {
            format!(
                "<dt>catalogue status</dt><dd>{} <span class=\"small\">(ground truth recorded for the reader; the verdict never uses it)</span></dd>",
                e(s)
            )
        })
        .unwrap_or_default();
    let transform = r
        .output_transform
        .map(|t| {
            format!(
                "<dt>output transform</dt><dd id=\"output-transform\">Outputs transformed by <span class=\"mono\">{}</span> before betting: {} <span class=\"small\">(a fixed post-processing: events on transformed releases are events on the original ones)</span></dd>",
                e(&t.to_string()),
                e(&t.describe())
            )
        })
        .unwrap_or_default();
    let stopping = match r.stopping_time {
        Some(t) => format!("{t} releases per side (the wealth first reached 1/β there)"),
        None => "none: the wealth never reached 1/β".to_string(),
    };
    let _ = writeln!(
        b,
        "<h2>What was tested</h2><dl class=\"facts\">\
         <dt>mechanism</dt><dd class=\"mono\">{}</dd>{status}{transform}\
         <dt>claim</dt><dd><span class=\"mono\">{}</span> — {}</dd>\
         <dt>where the claim comes from</dt><dd>{}</dd>\
         <dt>neighboring relation</dt><dd>{}</dd>\
         {}\
         <dt>mode</dt><dd>sequential (anytime-valid betting e-process): a first batch of {} releases per side that only trains, then batches doubling the total, at most {} per side</dd>\
         <dt>samples used</dt><dd id=\"samples-used\">{} releases per side drawn ({} calls of the mechanism)</dd>\
         <dt>stopping time</dt><dd id=\"stopping-time\">{}</dd>\
         <dt>final log-wealth</dt><dd id=\"log-wealth\">ln M = {} against ln(1/β) = {} (β = {}, confidence {})</dd>\
         <dt>seed</dt><dd>{} <span class=\"small\">(the same seed gives the same stopping time on any number of threads)</span></dd>\
         <dt>tool</dt><dd>dp-audit {} · audit.json layout {} (its section: layout {})</dd>{}\
         </dl>",
        e(&m.id),
        e(&m.claim.to_string()),
        e(&claim_words(&m.claim)),
        e(&readable_numbers_in(&m.claim_source)),
        e(neighboring_words(m.neighboring)),
        match (&r.pair, &r.sample_files) {
            (Some(p), _) => {
                let [d, d2] = pair_html(p);
                format!("<dt>D</dt><dd>{d}</dd><dt>D'</dt><dd>{d2}</dd>")
            }
            (None, Some(f)) => format!(
                "<dt>releases</dt><dd id=\"sample-files\">read from files in their order, not drawn by dp-audit: A = <span class=\"mono\">{}</span> ({} releases), B = <span class=\"mono\">{}</span> ({} releases); the guarantee assumes the releases are i.i.d. within each side and independent across sides</dd>",
                e(&f.a),
                f.samples_a,
                e(&f.b),
                f.samples_b
            ),
            (None, None) => String::new(),
        },
        r.first_batch,
        r.max_samples_per_side,
        r.samples_per_side,
        r.mechanism_calls,
        e(&stopping),
        e(&num(r.log_wealth)),
        e(&num(r.log_threshold)),
        e(&num(r.failure_probability)),
        percent(1.0 - r.failure_probability),
        r.seed,
        e(&r.tool_version),
        crate::record::RECORD_SCHEMA_VERSION,
        r.schema_version,
        r.wall_time_seconds
            .map(|t| format!("<dt>wall time</dt><dd>{t:.2} s</dd>"))
            .unwrap_or_default(),
    );
    b
}

/// The betting processes at the end (one per divergence and direction) and the wealth after
/// each batch.
fn betting_tables_html(r: &SequentialReport) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h2>Betting processes at the end</h2><div class=\"scroll\"><table id=\"components\"><thead><tr><th>divergence</th><th>direction</th>\
         <th>allowed δ</th><th>ln K (rounded down)</th><th>last event S</th><th>last bet λ</th></tr></thead><tbody>"
    );
    for c in &r.components {
        let _ = writeln!(
            b,
            "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"mono\">{}</td><td class=\"num\">{}</td></tr>",
            e(&divergence_words(&c.divergence)),
            e(direction_words(c.direction)),
            e(&num(c.allowed)),
            e(&num(c.log_wealth)),
            e(&readable_numbers_in(
                c.last_event.as_deref().unwrap_or("none (never bet)")
            )),
            e(&num(c.last_bet)),
        );
    }
    b.push_str("</tbody></table></div>\n");
    let _ = writeln!(
        b,
        "<h2>Wealth after each batch</h2><table id=\"batches\"><thead><tr><th>releases per side</th><th>ln M</th></tr></thead><tbody>"
    );
    for (x, y) in trajectory(r) {
        let _ = writeln!(
            b,
            "<tr><td class=\"num\">{x}</td><td class=\"num\">{}</td></tr>",
            e(&num(y))
        );
    }
    b.push_str("</tbody></table>\n");
    b
}
