//! The report of `audit one-run`: `DIR/<run-id>/audit.json` (the [`OneRunReport`], recognised by
//! its `"mode": "one-run"`), `index.html` and `guesses.png` (the guessing game: correct guesses
//! per guess size against the count the claim allows at that size).
//!
//! Everything on the page and in the figure comes from audit.json, so `audit report` redraws it
//! exactly.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::audit::one_run::OneRunBound;
use crate::error::Result;

use super::html::{Figure, e, figures_html, num, page};
use super::plot::{BLUE, GREY, RED, axis_range, draw_err, font, tick_label, with_canvas};
use super::{REPORT_FILE, fnv1a64, slug, to_pretty, write_atomic, write_dir_atomically};

/// The figure of a one-run report.
pub const GUESSES_FILE: &str = "guesses.png";

/// What a one-run audit's report records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OneRunReport {
    /// Layout version.
    pub schema_version: u32,
    /// Always `"one-run"` (tells this report from the others).
    pub mode: String,
    /// dp-audit version.
    pub tool_version: String,
    /// The trainer audited (a built-in id, or the exec command).
    pub target: String,
    /// What was released and how canaries were scored.
    pub threat_model: String,
    /// Claimed ε.
    pub claim_epsilon: f64,
    /// Claimed δ.
    pub claim_delta: f64,
    /// Where the claim comes from.
    pub claim_source: String,
    /// The seed.
    pub seed: u64,
    /// The guessing game and the bound.
    pub bound: OneRunBound,
    /// Claimed μ of a Gaussian-DP claim (its verdict is the Gaussian-DP bound on μ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_mu: Option<f64>,
    /// True iff the bound exceeds the claim (μ for a Gaussian-DP claim, else ε).
    pub violation: bool,
    /// When the claim comes from an accountant (a ledger): its optimistic and pessimistic ε at
    /// the claim's δ, for the tightness line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accountant: Option<crate::mechanisms::AccountantRange>,
    /// The command that re-runs exactly this audit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
}

/// The directory name: `one-run-<target>-seed<seed>-<hash of the JSON>`.
pub fn one_run_id(r: &OneRunReport) -> Result<String> {
    let h = fnv1a64(to_pretty(r)?.as_bytes());
    Ok(format!(
        "one-run-{}-seed{}-{:08x}",
        slug(&r.target),
        r.seed,
        h >> 32
    ))
}

/// Checks every number the page and figure show.
pub(super) fn validate(r: &OneRunReport) -> std::result::Result<(), String> {
    let b = &r.bound;
    let ok = r.claim_epsilon.is_finite()
        && r.claim_epsilon >= 0.0
        && (0.0..1.0).contains(&r.claim_delta)
        && b.failure_probability > 0.0
        && b.failure_probability < 1.0
        && b.epsilon_lower.is_finite()
        && b.epsilon_lower >= 0.0
        && b.mu_lower.is_finite()
        && b.mu_lower >= 0.0
        && b.gdp_epsilon_lower.is_finite()
        && r.claim_mu.is_none_or(|mu| mu.is_finite() && mu > 0.0)
        && b.canaries >= 2
        && b.best < b.candidates.len().max(1)
        && b.mu_best < b.candidates.len().max(1)
        && b.candidates.iter().all(|c| {
            c.guesses.correct <= c.guesses.guesses
                && c.guesses.guesses <= b.canaries
                && c.epsilon_lower.is_finite()
                && c.mu_lower.is_finite()
                && c.failure_probability > 0.0
                && c.failure_probability < 1.0
        });
    if ok {
        Ok(())
    } else {
        Err("a one-run report with numbers out of range (ε ≥ 0 finite, 0 ≤ δ < 1, 0 < β < 1, correct ≤ guesses ≤ canaries); allowed: what `audit one-run` writes".into())
    }
}

/// Writes the report to `dir/<run-id>/` atomically and regenerates `dir/index.html`.
pub fn write_one_run_report(dir: &Path, r: &OneRunReport) -> Result<PathBuf> {
    let id = one_run_id(r)?;
    let json = to_pretty(&crate::record::ResultRecord::from_one_run_page(r))?;
    let target = write_dir_atomically(dir, &id, |tmp| {
        write_atomic(&tmp.join(REPORT_FILE), json.as_bytes())?;
        render_one_run_into(tmp, r, &id)
    })?;
    super::write_index(dir)?;
    Ok(target.join("index.html"))
}

/// Draws the figure and writes the page into `dir`.
pub(super) fn render_one_run_into(dir: &Path, r: &OneRunReport, id: &str) -> Result<()> {
    guesses_plot(&dir.join(GUESSES_FILE), r)?;
    write_atomic(&dir.join("index.html"), render(r, id).as_bytes())
}

/// For each guess size tried: (guesses r, correct v, the fewest correct guesses at r that would
/// have been a violation of the claim at that size's share of β, if any ≤ r). The threshold is
/// found by bisection on v with the bound that judges the claim
/// ([`OneRunBound::exceeds_claim`]), which grows with v; it is drawn, never used by the verdict.
pub fn thresholds(r: &OneRunReport) -> Vec<(usize, usize, Option<usize>)> {
    let b = &r.bound;
    b.candidates
        .iter()
        .map(|c| {
            let g = &c.guesses;
            let exceeds = |v: usize| {
                b.exceeds_claim(
                    g.guesses,
                    v,
                    c.failure_probability,
                    r.claim_epsilon,
                    r.claim_mu,
                )
            };
            let threshold = if exceeds(g.guesses) {
                let (mut lo, mut hi) = (0usize, g.guesses);
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2;
                    if exceeds(mid) {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                Some(hi)
            } else {
                None
            };
            (g.guesses, g.correct, threshold)
        })
        .collect()
}

/// Precision v/r per guess size (blue) against the precision the claim allows there (red).
fn guesses_plot(path: &Path, r: &OneRunReport) -> Result<()> {
    let rows = thresholds(r);
    let xs: Vec<f64> = rows.iter().map(|t| t.0 as f64).collect();
    let xmax = xs.iter().copied().fold(1.0, f64::max);
    let xmin = xs.iter().copied().fold(xmax, f64::min).max(1.0);
    let (y0, y1) = axis_range(0.4, 1.0, 0.04);
    with_canvas(path, (1000, 560), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("{}: the guessing game (one run)", r.target),
                font(20),
            )
            .margin(14)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d((xmin / 1.5..xmax * 1.5).log_scale(), y0..y1)
            .map_err(|err| draw_err(path, err))?;
        chart
            .configure_mesh()
            .light_line_style(RGBColor(238, 238, 238))
            .x_desc("guesses r = k+ + k- (log scale; the other canaries abstained)")
            .x_label_formatter(&|x| format!("{}", x.round()))
            .y_desc("precision: correct guesses v / r")
            .y_label_formatter(&|v| tick_label(*v, y0, y1))
            .label_style(font(15))
            .axis_desc_style(font(16))
            .draw()
            .map_err(|err| draw_err(path, err))?;
        chart
            .draw_series(LineSeries::new(
                [(xmin / 1.5, 0.5), (xmax * 1.5, 0.5)],
                GREY.stroke_width(1),
            ))
            .map_err(|err| draw_err(path, err))?
            .label("1/2: guessing at random")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], GREY.stroke_width(1)));
        let allowed: Vec<(f64, f64)> = rows
            .iter()
            .filter_map(|&(g, _, t)| t.map(|t| (g as f64, t as f64 / g.max(1) as f64)))
            .collect();
        chart
            .draw_series(DashedLineSeries::new(
                allowed.iter().copied(),
                8,
                5,
                RED.stroke_width(2),
            ))
            .map_err(|err| draw_err(path, err))?
            .label(match r.claim_mu {
                Some(mu) => format!(
                    "precision at which the Gaussian-DP bound would exceed the claimed μ = {}",
                    num(mu)
                ),
                None => format!(
                    "precision at which the bound would exceed the claimed ε = {}",
                    num(r.claim_epsilon)
                ),
            })
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], RED.stroke_width(2)));
        chart
            .draw_series(allowed.iter().map(|&p| Circle::new(p, 4, RED.filled())))
            .map_err(|err| draw_err(path, err))?;
        let seen: Vec<(f64, f64)> = rows
            .iter()
            .map(|&(g, v, _)| (g as f64, v as f64 / g.max(1) as f64))
            .collect();
        chart
            .draw_series(LineSeries::new(seen.iter().copied(), BLUE.stroke_width(3)))
            .map_err(|err| draw_err(path, err))?
            .label("observed precision of the guesses")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLUE.stroke_width(3)));
        chart
            .draw_series(seen.iter().map(|&p| Circle::new(p, 6, BLUE.filled())))
            .map_err(|err| draw_err(path, err))?;
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .label_font(font(14))
            .background_style(WHITE.mix(0.85))
            .border_style(GREY)
            .draw()
            .map_err(|err| draw_err(path, err))?;
        Ok(())
    })
}

/// Every bound of the audit in one sentence, naming which one decides.
pub fn all_bounds(b: &OneRunBound) -> String {
    let mut out = format!(
        "Bounds on the same guesses: (ε, δ) bound of Steinke et al. (any mechanism) ε ≥ {} at δ = {}; Gaussian-DP bound \
         of Mahloujifar et al. (any mechanism) μ ≥ {} (ε = {} on the μ-GDP profile)",
        num(b.epsilon_lower),
        num(b.delta),
        num(b.mu_lower),
        num(b.gdp_epsilon_lower)
    );
    if let Some(o) = &b.order {
        out.push_str(&format!(
            "; order-statistics bound ε ≥ {} ((ε, δ) null), μ ≥ {} (ε = {} on the μ-GDP profile), {}.",
            num(o.epsilon_lower),
            num(o.mu_lower),
            num(o.gdp_epsilon_lower),
            o.canary_model
        ));
    } else {
        out.push('.');
    }
    out
}

fn render(r: &OneRunReport, run_id: &str) -> String {
    let b = &r.bound;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<h1>One-run audit of <span class=\"mono\">{}</span></h1>\n<p class=\"sub\">run <span class=\"mono\">{}</span> · <a href=\"../index.html\">all runs</a></p>",
        e(&r.target),
        e(run_id)
    );
    s.push_str(&one_run_verdict_html(r));
    if let Some(t) = r
        .accountant
        .as_ref()
        .and_then(|a| crate::record::tightness_line(b.epsilon_estimate(r.claim_mu), None, Some(a)))
    {
        let _ = writeln!(
            s,
            "<h2>How tight the claim is</h2><p id=\"tightness\">{}</p>",
            e(&t)
        );
    }
    let _ = writeln!(
        s,
        "<h2>What was tested</h2><dl class=\"facts\"><dt>target</dt><dd class=\"mono\">{}</dd>\
         <dt>threat model</dt><dd>{}</dd><dt>claim</dt><dd>(ε = {}, δ = {}) — {}</dd>\
         <dt>canaries</dt><dd>m = {}, {} included, each independently with probability 1/2</dd>\
         <dt>β</dt><dd>{}</dd><dt>inequality</dt><dd>{}</dd><dt>seed</dt><dd>{}</dd>\
         <dt>tool</dt><dd>dp-audit {} · audit.json layout {} (its section: layout {})</dd></dl>",
        e(&r.target),
        e(&r.threat_model),
        e(&num(r.claim_epsilon)),
        e(&num(r.claim_delta)),
        e(&r.claim_source),
        b.canaries,
        b.included,
        e(&b.beta_split),
        e(&b.deciding_inequality(r.claim_mu)),
        r.seed,
        e(&r.tool_version),
        crate::record::RECORD_SCHEMA_VERSION,
        r.schema_version
    );
    s.push_str(&guesses_html(r));
    s.push_str(&figures_html(&[Figure {
        file: GUESSES_FILE.into(),
        alt: "precision of the guesses per guess size against what the claim allows".into(),
        caption: "Blue: the fraction of correct guesses at each guess size tried. Red: the precision from which the bound at that size's share of β would exceed the claim (its ε, or its μ for a Gaussian-DP claim; absent where no precision up to 1 would). A blue point on or above the red one is a violation.".into(),
    }]));
    if let Some(line) = &r.reproduce {
        let _ = writeln!(
            s,
            "<p class=\"small\">Reproduce: <code id=\"reproduce\">{}</code></p>",
            e(line)
        );
    }
    s.push_str(&super::html::record_html(
        &crate::record::ResultRecord::from_one_run_page(r),
    ));
    page(&format!("one-run audit of {}", r.target), &s)
}

/// The one-run audit's verdict box: the deciding bound against the claim, with every bound.
fn one_run_verdict_html(r: &OneRunReport) -> String {
    let b = &r.bound;
    let mut s = String::new();
    let (what, lower, claimed) = b.deciding(r.claim_epsilon, r.claim_mu);
    let _ = writeln!(
        s,
        "<div class=\"verdict {}\" id=\"verdict\"><h2>{}</h2><p>From one training run with {} canaries, the lower \
         bound on {} is <b>{}</b> with confidence 1 − β = {}, {} the claimed <b>{}</b>. A target that keeps its claim is \
         reported so with probability at most β = {}.</p>{}<p class=\"small\">{}</p></div>",
        if r.violation {
            "violation"
        } else {
            "noviolation"
        },
        if r.violation {
            "Violation found"
        } else {
            "No violation found"
        },
        b.canaries,
        e(what),
        e(&num(lower)),
        e(&num(1.0 - b.failure_probability)),
        if r.violation { "above" } else { "not above" },
        e(&num(claimed)),
        e(&num(b.failure_probability)),
        if r.violation {
            String::new()
        } else {
            "<p class=\"caveat\">This does not show the claim holds. One run sees at most about ln(p/(1 − p)) with \
             p = β^(1/m), and a Gaussian mechanism's ε at small δ lives in tails that a few thousand canaries rarely \
             sample (see docs/one-run.md).</p>"
                .to_string()
        },
        e(&all_bounds(b))
    );
    s
}

/// The table of the guesses at each guess size tried, and the Gaussian-DP bound.
fn guesses_html(r: &OneRunReport) -> String {
    let b = &r.bound;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<h2>The guesses</h2><div class=\"scroll\"><table id=\"guesses\"><thead><tr><th>k+ (guessed in)</th><th>k- (guessed out)</th>\
         <th>guesses r</th><th>correct v</th><th>precision</th><th>needed for ε above the claim</th><th>ε lower bound</th><th>μ lower bound (GDP)</th><th>order-statistics ε</th><th>order-statistics μ</th><th>β share</th></tr></thead><tbody>"
    );
    for (i, (c, (_, _, t))) in b.candidates.iter().zip(thresholds(r)).enumerate() {
        let g = &c.guesses;
        let _ = writeln!(
            s,
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if i == b.best { " class=\"best\"" } else { "" },
            g.k_plus,
            g.k_minus,
            g.guesses,
            g.correct,
            g.precision(),
            t.map_or_else(|| "more than r".to_string(), |t| format!("v ≥ {t}")),
            e(&num(c.epsilon_lower)),
            e(&num(c.mu_lower)),
            e(&num(c.order_epsilon_lower)),
            e(&num(c.order_mu_lower)),
            e(&num(c.failure_probability))
        );
    }
    s.push_str("</tbody></table></div>\n");
    let _ = writeln!(
        s,
        "<p class=\"small\">Gaussian-DP bound: μ ≥ {} (ε = {} at δ = {} on the μ-GDP profile; a bound on a Gaussian-DP claim \
         only). {}</p>",
        e(&num(b.mu_lower)),
        e(&num(b.gdp_epsilon_lower)),
        e(&num(b.delta)),
        e(&b.gdp_inequality)
    );
    s
}

/// A one-line index entry: (kind, claim, result, violation).
pub(super) fn index_fields(r: &OneRunReport) -> (String, String, String, bool) {
    (
        "one-run audit".into(),
        match r.claim_mu {
            Some(mu) => format!("μ = {} (GDP)", num(mu)),
            None => format!("({}, {})", num(r.claim_epsilon), num(r.claim_delta)),
        },
        format!(
            "{}: {} from {} canaries",
            if r.violation {
                "violation found"
            } else {
                "no violation found"
            },
            match r.claim_mu {
                Some(_) => format!("μ ≥ {}", num(r.bound.mu_lower)),
                None => format!("ε ≥ {}", num(r.bound.epsilon_lower)),
            },
            r.bound.canaries
        ),
        r.violation,
    )
}
