//! The Bayesian DP parts of a report ([`crate::audit::bayesian`]) that the general renderers
//! call with one line each: the definition tested, whether the rest of the dataset was drawn,
//! and the records drawn (the page's rows are drawn in [`super::html`], from [`definition`]).

use crate::record::AuditReport;

/// Most drawn records listed by name on the text page (all are in the JSON).
const LISTED: usize = 8;

/// The definition and draw lines of the text report (empty for other audits).
pub fn text_lines(r: &AuditReport) -> String {
    let Some(b) = &r.bayesian else {
        return String::new();
    };
    let mut s = String::new();
    s += &format!("definition   {}\n", definition(&b.definition));
    if let Some(a) = attack_line(r) {
        s += &format!("attack       {a}\n");
    }
    if let Some(g) = &b.group {
        s += &format!(
            "group        {} records x'_1..x'_{} drawn i.i.d. from μ differ ({}); claim tested: ε = {}, δ = {}, implied by the per-record claim through Proposition 4 (group privacy)\n",
            g.records,
            g.records,
            match r.mechanism.neighboring {
                crate::mechanisms::Neighboring::ReplaceOne => "the last K records of D replaced",
                _ => "all K added to D",
            },
            crate::mechanisms::math::readable(g.epsilon),
            crate::mechanisms::math::readable(g.delta)
        );
    }
    if b.dataset_drawn {
        s += &format!(
            "             the rest of the dataset drawn from μ too, fresh for every release ({} records, as D): the claim tested holds on average over D\n",
            b.base.len()
        );
    }
    if !b.drawn.is_empty() && b.drawn.len() <= LISTED {
        let list: Vec<String> = b
            .drawn
            .iter()
            .map(|d| format!("{:?} ×{}/{}", d.record, d.first, d.second))
            .collect();
        s += &format!(
            "             x' drawn (first side/second side): {}\n",
            list.join(", ")
        );
    }
    s
}

/// True when the report's bounds compare joint laws of (x', release): a Bayesian DP audit under
/// Definition 1. Under Definition 2 the rows are the releases alone, whose directions read as for
/// a pair, M(D) against M(D') (with x' drawn).
pub fn joint_rows(r: &AuditReport) -> bool {
    r.bayesian
        .as_ref()
        .is_some_and(|b| !b.definition.starts_with("Definition 2"))
}

/// What the Bayesian claim of `r` promises a membership attacker, in one sentence (`None` for
/// other claims): success at most (e^ε_μ + δ_μ)/(1 + e^ε_μ), averaged over the differing record
/// x' ~ μ (Triastcyn & Faltings 2020, eq. 1: the bound is linear in δ, so the conditional δ(x')
/// of each record averages to δ_μ). A Bayesian audit bounds no ε, so this is its attack line.
pub fn attack_line(r: &AuditReport) -> Option<String> {
    let crate::mechanisms::PrivacyClaim::Bayesian { epsilon, delta } = r.mechanism.claim else {
        return None;
    };
    Some(format!(
        "the claim (ε_μ = {}, δ_μ = {}) promises that a membership attacker guessing whether a typical record x' ~ μ was in the data (prior 1/2) succeeds at most {} of the time, averaged over x'; a record μ rarely draws may be exposed more",
        crate::mechanisms::math::readable(epsilon),
        crate::mechanisms::math::readable(delta),
        crate::record::result::percent(crate::record::attack_success_bound(epsilon, delta), true)
    ))
}

/// The recorded label, or Definition 1's for reports from before the choice existed.
pub fn definition(label: &str) -> &str {
    if label.is_empty() {
        crate::audit::bayesian::Definition::Strong.label()
    } else {
        label
    }
}

/// One point of the ε-against-steps curve ([`BayesianCurves`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct StepPoint {
    /// The number of steps T.
    pub steps: u64,
    /// The Bayesian accountant's ε_μ after T steps.
    pub bayesian: f64,
    /// The moments accountant's ε after T steps (DP, gradients clipped at C).
    pub moments: f64,
}

/// One point of the ε-against-order curve ([`BayesianCurves`]).
#[derive(Clone, Debug, serde::Serialize)]
pub struct OrderPoint {
    /// The order λ.
    pub order: u32,
    /// The Bayesian ε at this order alone.
    pub bayesian: f64,
    /// The moments accountant's ε at this order alone.
    pub moments: f64,
}

/// The paper's curves (Triastcyn & Faltings 2020, Fig. 1 and App. B.3) as written by
/// `audit accountant --bayesian --curves DIR`: the data of DIR/bdp-curves.json, drawn as
/// DIR/bdp-curves.png by [`curves_png`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct BayesianCurves {
    /// Where the distances came from (a file, or the Weibull draws).
    pub source: String,
    /// q.
    pub sampling_rate: f64,
    /// z.
    pub noise_multiplier: f64,
    /// The T of the ε-against-order curve (the largest T of the other).
    pub steps: u64,
    /// δ (δ_μ for the Bayesian accountant).
    pub delta: f64,
    /// γ folded into δ_μ.
    pub gamma: f64,
    /// The estimator used.
    pub estimator: String,
    /// ε against T.
    pub by_steps: Vec<StepPoint>,
    /// ε against λ at T = `steps`.
    pub by_order: Vec<OrderPoint>,
}

/// Draws [`BayesianCurves`] as a PNG: ε against the number of steps (log scale) on the left, ε
/// against the order λ on the right (its y axis stops at three times the larger of the two
/// curves' least values, so the minimum stays readable, and its x axis soon after the last order
/// shown), Bayesian in blue, moments in grey.
pub fn curves_png(path: &std::path::Path, c: &BayesianCurves) -> crate::error::Result<()> {
    use super::plot::with_canvas;
    if c.by_steps.is_empty() || c.by_order.is_empty() {
        return Err(crate::error::Error::InvalidConfig(
            "no curve points to draw".into(),
        ));
    }
    with_canvas(path, (1200, 520), |root| {
        let (left, right) = root.split_horizontally(600);
        steps_panel(&left, path, c)?;
        orders_panel(&right, path, c)
    })
}

/// The left panel of the curves figure: ε against the number of steps, Bayesian DP beside
/// the moments accountant.
fn steps_panel(
    area: &plotters::prelude::DrawingArea<
        plotters::prelude::BitMapBackend<'_>,
        plotters::coord::Shift,
    >,
    path: &std::path::Path,
    c: &BayesianCurves,
) -> crate::error::Result<()> {
    use super::plot::{BLUE, GREY, draw_err, font};
    use plotters::prelude::*;
    let finite = |v: f64| if v.is_finite() { v } else { f64::MAX };
    let t1 = c.by_steps.last().map_or(1, |p| p.steps).max(2) as f64;
    let y1 = c
        .by_steps
        .iter()
        .map(|p| finite(p.bayesian).max(finite(p.moments)))
        .fold(0.0, f64::max)
        .min(1e6)
        * 1.05;
    let mut ch = ChartBuilder::on(area)
        .caption("ε against the number of steps (Fig. 1)", font(18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d((1.0..t1).log_scale(), 0.0..y1.max(1e-9))
        .map_err(|e| draw_err(path, e))?;
    ch.configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .x_desc("steps T")
        .y_desc(format!("ε at δ = {}", super::readable(c.delta)))
        .label_style(font(14))
        .axis_desc_style(font(15))
        .draw()
        .map_err(|e| draw_err(path, e))?;
    let clip = |v: f64| v.min(y1);
    ch.draw_series(LineSeries::new(
        c.by_steps
            .iter()
            .map(|p| (p.steps as f64, clip(p.bayesian))),
        BLUE.stroke_width(2),
    ))
    .map_err(|e| draw_err(path, e))?
    .label("Bayesian DP ε_μ")
    .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLUE.stroke_width(2)));
    ch.draw_series(LineSeries::new(
        c.by_steps.iter().map(|p| (p.steps as f64, clip(p.moments))),
        GREY.stroke_width(2),
    ))
    .map_err(|e| draw_err(path, e))?
    .label("moments accountant ε (DP, clipped at C)")
    .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], GREY.stroke_width(2)));
    ch.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(font(14))
        .draw()
        .map_err(|e| draw_err(path, e))?;
    Ok(())
}

/// The right panel of the curves figure: ε against the Rényi order at the run's number of
/// steps, up to a little past the last order whose ε is on the axis.
fn orders_panel(
    area: &plotters::prelude::DrawingArea<
        plotters::prelude::BitMapBackend<'_>,
        plotters::coord::Shift,
    >,
    path: &std::path::Path,
    c: &BayesianCurves,
) -> crate::error::Result<()> {
    use super::plot::{BLUE, GREY, draw_err, font};
    use plotters::prelude::*;
    let finite = |v: f64| if v.is_finite() { v } else { f64::MAX };
    let least = |f: &dyn Fn(&OrderPoint) -> f64| {
        c.by_order
            .iter()
            .map(|p| finite(f(p)))
            .fold(f64::MAX, f64::min)
    };
    // Never NaN: `least` maps non-finite values to f64::MAX.
    let y2 = (3.0 * least(&|p| p.bayesian).max(least(&|p| p.moments))).clamp(1e-9, 1e6);
    // The x axis ends a little past the last order whose ε is on the y axis.
    let l1 = c
        .by_order
        .iter()
        .filter(|p| p.bayesian <= y2 || p.moments <= y2)
        .map(|p| f64::from(p.order))
        .fold(2.0, f64::max)
        * 1.25;
    let mut ch = ChartBuilder::on(area)
        .caption(
            format!("ε against the order λ at T = {} (App. B.3)", c.steps),
            font(18),
        )
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(1.0..l1, 0.0..y2)
        .map_err(|e| draw_err(path, e))?;
    ch.configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .x_desc(format!(
            "order λ   (q = {}, z = {}, {})",
            super::readable(c.sampling_rate),
            super::readable(c.noise_multiplier),
            c.estimator
        ))
        .y_desc("ε at this order alone")
        .label_style(font(14))
        .axis_desc_style(font(15))
        .draw()
        .map_err(|e| draw_err(path, e))?;
    for (f, color) in [
        (
            Box::new(|p: &OrderPoint| p.bayesian) as Box<dyn Fn(&OrderPoint) -> f64>,
            BLUE,
        ),
        (Box::new(|p: &OrderPoint| p.moments), GREY),
    ] {
        // Points above the axis are left out, not drawn at its top.
        let pts: Vec<(f64, f64)> = c
            .by_order
            .iter()
            .map(|p| (f64::from(p.order), f(p)))
            .filter(|(_, v)| v.is_finite() && *v <= y2)
            .collect();
        let pts: Vec<(f64, f64)> = pts.into_iter().filter(|(x, _)| *x <= l1).collect();
        ch.draw_series(LineSeries::new(pts, color.stroke_width(2)))
            .map_err(|e| draw_err(path, e))?;
    }
    Ok(())
}
