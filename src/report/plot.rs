//! PNG figures with plotters' bitmap backend. Text is drawn with the embedded Noto Sans font
//! (registered once, see `../shared/CRATES.md` §3), so nothing depends on system fonts.
//!
//! Plot text avoids combining characters (ab_glyph does no shaping).

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::audit::{AuditReport, Direction};
use crate::error::{Error, Result};
use crate::testers::Divergence;

use super::SweepReport;

pub(super) const FONT: &str = "sans-serif";
pub(super) const BLUE: RGBColor = RGBColor(31, 119, 180);
const ORANGE: RGBColor = RGBColor(230, 120, 20);
pub(super) const RED: RGBColor = RGBColor(200, 30, 30);
pub(super) const GREY: RGBColor = RGBColor(110, 110, 110);
pub(super) const PALETTE: [RGBColor; 6] = [
    BLUE,
    ORANGE,
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
];

/// Registers the embedded font under "sans-serif" once per process.
fn ensure_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, ttf_noto_sans::REGULAR).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidConfig(
            "the embedded Noto Sans font was rejected by the plotting library".into(),
        ))
    }
}

pub(super) fn draw_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Io {
        context: format!("drawing {}", path.display()),
        source: std::io::Error::other(e.to_string()),
    }
}

/// Opens a white canvas, runs `draw` on it, and writes the PNG to `path` atomically (temporary
/// name in the same directory, then rename). The PNG is encoded here with the best compression
/// (the figures are committed in the gallery, so size matters).
pub(super) fn with_canvas(
    path: &Path,
    (w, h): (u32, u32),
    draw: impl FnOnce(&DrawingArea<BitMapBackend<'_>, Shift>) -> Result<()>,
) -> Result<()> {
    ensure_font()?;
    let mut rgb = vec![255u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| draw_err(path, e))?;
        draw(&root)?;
        root.present().map_err(|e| draw_err(path, e))?;
    }
    let bytes = encode_png(&rgb, w, h).map_err(|e| draw_err(path, e))?;
    super::write_atomic(path, &bytes)
}

/// Encodes an RGB image as an 8-bit indexed PNG with the best compression. Plots have a few
/// hundred colours, most of them rare anti-aliasing shades: the palette is the 256 most frequent
/// colours (ties broken by colour, so the output is deterministic) and every other colour maps to
/// its nearest palette entry. Several times smaller than RGB, indistinguishable to the eye.
fn encode_png(rgb: &[u8], w: u32, h: u32) -> std::result::Result<Vec<u8>, png::EncodingError> {
    use std::collections::HashMap;
    let mut counts: HashMap<[u8; 3], u64> = HashMap::new();
    for px in rgb.chunks_exact(3) {
        *counts.entry([px[0], px[1], px[2]]).or_insert(0) += 1;
    }
    let mut by_freq: Vec<([u8; 3], u64)> = counts.into_iter().collect();
    by_freq.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let palette: Vec<[u8; 3]> = by_freq.iter().take(256).map(|(c, _)| *c).collect();
    let dist = |a: &[u8; 3], b: &[u8; 3]| -> u32 {
        (0..3)
            .map(|i| (i32::from(a[i]) - i32::from(b[i])).pow(2) as u32)
            .sum()
    };
    let index: HashMap<[u8; 3], u8> = by_freq
        .iter()
        .map(|(c, _)| {
            let i = (0..palette.len())
                .min_by_key(|&i| (dist(c, &palette[i]), i))
                .unwrap_or(0);
            (*c, i as u8)
        })
        .collect();
    let pixels: Vec<u8> = rgb
        .chunks_exact(3)
        .map(|px| index[&[px[0], px[1], px[2]]])
        .collect();
    let mut bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut bytes, w, h);
        enc.set_color(png::ColorType::Indexed);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_palette(palette.concat());
        enc.set_compression(png::Compression::Best);
        enc.set_adaptive_filter(png::AdaptiveFilterType::NonAdaptive);
        enc.set_filter(png::FilterType::NoFilter);
        let mut writer = enc.write_header()?;
        writer.write_image_data(&pixels)?;
        writer.finish()?;
    }
    Ok(bytes)
}

/// Extends a degenerate or tight range so plotters can draw it.
pub(super) fn padded(lo: f64, hi: f64, frac: f64) -> (f64, f64) {
    if !(lo.is_finite() && hi.is_finite()) {
        return (0.0, 1.0);
    }
    if hi - lo <= f64::EPSILON * lo.abs().max(1.0) {
        let w = (lo.abs() * 0.1).max(0.5);
        return (lo - w, hi + w);
    }
    let w = (hi - lo) * frac;
    (lo - w, hi + w)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i]
}

/// The event boundary "coordinate J ≤ T" or "coordinate J ≥ T", when the description has that
/// form: (J, T).
pub(crate) fn parse_event_threshold(description: &str) -> Option<(usize, f64)> {
    let rest = description.strip_prefix("coordinate ")?;
    let (j, rest) = rest.split_once(' ')?;
    let j: usize = j.parse().ok()?;
    let t = rest
        .strip_prefix("≤ ")
        .or_else(|| rest.strip_prefix("≥ "))?
        .trim();
    let t: f64 = t.parse().ok()?;
    t.is_finite().then_some((j, t))
}

/// The output distribution of coordinate `coord` on both sides: bars for outputs with few
/// distinct values, a histogram otherwise. `event` is a boundary to mark (x, label).
pub fn distribution(
    path: &Path,
    coord: usize,
    p: &[f64],
    q: &[f64],
    event: Option<(f64, String)>,
) -> Result<()> {
    if p.is_empty() || q.is_empty() {
        return Err(Error::InvalidSamples("no releases to plot".into()));
    }
    let mut pooled: Vec<f64> = p.iter().chain(q).copied().collect();
    pooled.sort_by(f64::total_cmp);
    let mut distinct = pooled.clone();
    distinct.dedup();
    let integers = distinct.iter().all(|v| v.fract() == 0.0);
    let caption = format!(
        "Coordinate {coord}: releases of M(D) and M(D'), {} and {} per side",
        p.len(),
        q.len()
    );
    with_canvas(path, (1000, 460), |root| {
        if distinct.len() <= 40 || (integers && distinct[distinct.len() - 1] - distinct[0] <= 60.0)
        {
            // A threshold would cut through the bars of a discrete output; the table names it.
            let _ = event;
            discrete_bars(root, path, &caption, p, q, &distinct, integers)
        } else {
            histogram(root, path, &caption, p, q, &pooled, event)
        }
    })
}

fn discrete_bars(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    path: &Path,
    caption: &str,
    p: &[f64],
    q: &[f64],
    distinct: &[f64],
    integers: bool,
) -> Result<()> {
    // x position of each distinct value: the value itself for integer outputs, its rank otherwise.
    let on_value_axis = integers && distinct[distinct.len() - 1] - distinct[0] <= 60.0;
    let pos = |v: f64| -> f64 {
        if on_value_axis {
            v
        } else {
            distinct.partition_point(|d| *d < v) as f64
        }
    };
    let mass = |xs: &[f64]| -> Vec<f64> {
        let mut c = vec![0u64; distinct.len()];
        for x in xs {
            c[distinct.partition_point(|d| d < x)] += 1;
        }
        c.iter().map(|k| *k as f64 / xs.len() as f64).collect()
    };
    let (mp, mq) = (mass(p), mass(q));
    let (x0, x1) = (
        pos(distinct[0]) - 0.7,
        pos(distinct[distinct.len() - 1]) + 0.7,
    );
    let top = mp.iter().chain(&mq).fold(0.0f64, |a, b| a.max(*b)) * 1.3;
    let mut chart = ChartBuilder::on(root)
        .caption(caption, (FONT, 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, 0.0..top.max(1e-9))
        .map_err(|e| draw_err(path, e))?;
    let labels: Vec<(f64, String)> = distinct
        .iter()
        .map(|v| (pos(*v), super::html::num(*v)))
        .collect();
    let label_of = move |x: &f64| -> String {
        labels
            .iter()
            .find(|(px, _)| (px - x).abs() < 1e-6)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .disable_x_mesh()
        .x_labels((distinct.len() + 2).min(40))
        .x_label_formatter(&label_of)
        .x_desc(if on_value_axis {
            "output value"
        } else {
            "output value (one bar pair per distinct value)"
        })
        .y_desc("fraction of releases")
        .label_style((FONT, 15))
        .draw()
        .map_err(|e| draw_err(path, e))?;
    for (side, masses, color, label) in [(0, &mp, BLUE, "M(D)"), (1, &mq, ORANGE, "M(D')")] {
        let off = if side == 0 { -0.36 } else { 0.0 };
        chart
            .draw_series(distinct.iter().zip(masses.iter()).map(|(v, m)| {
                let x = pos(*v) + off;
                Rectangle::new([(x, 0.0), (x + 0.36, *m)], color.mix(0.8).filled())
            }))
            .map_err(|e| draw_err(path, e))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
    }
    legend(&mut chart, path)
}

fn histogram(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    path: &Path,
    caption: &str,
    p: &[f64],
    q: &[f64],
    pooled: &[f64],
    event: Option<(f64, String)>,
) -> Result<()> {
    const BINS: usize = 60;
    let (lo, hi) = padded(quantile(pooled, 0.001), quantile(pooled, 0.999), 0.02);
    let width = (hi - lo) / BINS as f64;
    let counts = |xs: &[f64]| -> (Vec<f64>, usize) {
        let mut c = vec![0u64; BINS];
        let mut outside = 0;
        for x in xs {
            if *x < lo || *x > hi {
                outside += 1;
                continue;
            }
            let i = (((x - lo) / width) as usize).min(BINS - 1);
            c[i] += 1;
        }
        (
            c.iter().map(|k| *k as f64 / xs.len() as f64).collect(),
            outside,
        )
    };
    let ((fp, op), (fq, oq)) = (counts(p), counts(q));
    let top = fp.iter().chain(&fq).fold(0.0f64, |a, b| a.max(*b)) * 1.3;
    let outside = op + oq;
    let x_desc = if outside > 0 {
        format!(
            "output value ({outside} of {} releases outside the shown range)",
            p.len() + q.len()
        )
    } else {
        "output value".to_string()
    };
    let mut chart = ChartBuilder::on(root)
        .caption(caption, (FONT, 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(lo..hi, 0.0..top.max(1e-9))
        .map_err(|e| draw_err(path, e))?;
    chart
        .configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .x_desc(x_desc)
        .y_desc(format!("fraction of releases per bin ({BINS} bins)"))
        .label_style((FONT, 15))
        .draw()
        .map_err(|e| draw_err(path, e))?;
    for (freqs, color, label) in [(&fp, BLUE, "M(D)"), (&fq, ORANGE, "M(D')")] {
        chart
            .draw_series(freqs.iter().enumerate().map(|(i, f)| {
                let x = lo + i as f64 * width;
                Rectangle::new([(x, 0.0), (x + width, *f)], color.mix(0.35).filled())
            }))
            .map_err(|e| draw_err(path, e))?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], color.filled()));
        // Outline as a step line so overlapping bars stay readable.
        let mut step = Vec::with_capacity(2 * BINS + 2);
        step.push((lo, 0.0));
        for (i, f) in freqs.iter().enumerate() {
            let x = lo + i as f64 * width;
            step.push((x, *f));
            step.push((x + width, *f));
        }
        step.push((hi, 0.0));
        chart
            .draw_series(LineSeries::new(step, color.stroke_width(2)))
            .map_err(|e| draw_err(path, e))?;
    }
    let event = event.filter(|(x, _)| *x >= lo && *x <= hi);
    draw_event(&mut chart, path, event, top)?;
    legend(&mut chart, path)
}

type Chart2d<'a> = ChartContext<
    'a,
    BitMapBackend<'a>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn draw_event(
    chart: &mut Chart2d<'_>,
    path: &Path,
    event: Option<(f64, String)>,
    top: f64,
) -> Result<()> {
    if let Some((x, label)) = event {
        chart
            .draw_series(DashedLineSeries::new(
                [(x, 0.0), (x, top.max(1e-9))],
                8,
                5,
                BLACK.stroke_width(2),
            ))
            .map_err(|e| draw_err(path, e))?
            .label(label)
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLACK.stroke_width(2)));
    }
    Ok(())
}

fn legend(chart: &mut Chart2d<'_>, path: &Path) -> Result<()> {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 15))
        .draw()
        .map_err(|e| draw_err(path, e))
}

fn direction_short(d: Direction) -> &'static str {
    match d {
        Direction::FirstVsSecond => "D vs D'",
        Direction::SecondVsFirst => "D' vs D",
        Direction::Larger => "larger",
    }
}

fn divergence_short(d: &Divergence) -> String {
    match d {
        Divergence::HockeyStick { epsilon } => format!("H ε={}", super::html::num(*epsilon)),
        Divergence::Renyi { alpha } => format!("Rényi α={}", super::html::num(*alpha)),
        #[allow(unreachable_patterns)]
        other => format!("{other}"),
    }
}

/// Every bound (horizontal bar; red when it exceeds) against what the claim allows (black
/// tick), one row per bound in the order of the report's table, each row annotated with both
/// numbers so values near 0 stay readable.
pub fn bounds(path: &Path, r: &AuditReport) -> Result<()> {
    let k = r.bounds.len();
    if k == 0 {
        return Err(Error::InvalidConfig(
            "the report has no bounds to plot".into(),
        ));
    }
    let lo = r
        .bounds
        .iter()
        .map(|b| b.value.min(b.allowed))
        .fold(0.0f64, f64::min);
    let hi = r
        .bounds
        .iter()
        .map(|b| b.value.max(b.allowed))
        .fold(0.0f64, f64::max);
    let hi = if hi > 0.0 { hi } else { 1e-6 };
    // Room on the right for the annotations.
    let (lo, hi) = (lo * 1.1, hi * 1.6);
    // Name the tester when more than one contributed bounds.
    let several_testers = r.bounds.iter().any(|b| b.tester != r.bounds[0].tester);
    let labels: Vec<String> = r
        .bounds
        .iter()
        .map(|b| {
            let what = format!(
                "{}, {}",
                divergence_short(&b.divergence),
                direction_short(b.direction)
            );
            if several_testers {
                format!("{}: {what}", b.tester)
            } else {
                what
            }
        })
        .collect();
    let label_px = labels.iter().map(|l| l.chars().count()).max().unwrap_or(10) as u32 * 8 + 20;
    let row = if k <= 4 { 70 } else { 24 };
    let height = (150 + row * k as u32).clamp(320, 2400);
    // Row i (0 = first bound) sits at the top: segment k - 1 - i.
    let seg = |i: usize| (k - 1 - i) as i32;
    let y_range = if k == 1 { -1..1 } else { 0..k as i32 - 1 };
    with_canvas(path, (1000, height), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                "Lower confidence bounds (bars) vs what the claim allows (black ticks)",
                (FONT, 20),
            )
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(label_px)
            // One bound: an empty row above and below keeps the bar clear of the caption
            // (plotters cannot segment the one-point range 0..0).
            .build_cartesian_2d(lo..hi, y_range.into_segmented())
            .map_err(|e| draw_err(path, e))?;
        let fmt = |v: &SegmentValue<i32>| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) if (0..k as i32).contains(i) => {
                labels[k - 1 - *i as usize].clone()
            }
            SegmentValue::CenterOf(_) | SegmentValue::Exact(_) => String::new(),
            SegmentValue::Last => String::new(),
        };
        chart
            .configure_mesh()
            .light_line_style(RGBColor(238, 238, 238))
            .disable_y_mesh()
            .y_labels(if k == 1 { 3 } else { k })
            .y_label_formatter(&fmt)
            .label_style((FONT, 14))
            .x_desc("divergence (lower confidence bound; the claim allows at most the black tick)")
            .axis_desc_style((FONT, 15))
            .draw()
            .map_err(|e| draw_err(path, e))?;
        let bar_margin = if k <= 4 { 14 } else { 5 };
        chart
            .draw_series(r.bounds.iter().enumerate().map(|(i, b)| {
                let color = if b.violation { RED } else { BLUE };
                let mut bar = Rectangle::new(
                    [
                        (0.0, SegmentValue::Exact(seg(i))),
                        (b.value, SegmentValue::Exact(seg(i) + 1)),
                    ],
                    color.mix(0.75).filled(),
                );
                bar.set_margin(bar_margin, bar_margin, 0, 0);
                bar
            }))
            .map_err(|e| draw_err(path, e))?;
        chart
            .draw_series(r.bounds.iter().enumerate().map(|(i, b)| {
                PathElement::new(
                    [
                        (b.allowed, SegmentValue::Exact(seg(i))),
                        (b.allowed, SegmentValue::Exact(seg(i) + 1)),
                    ],
                    BLACK.stroke_width(3),
                )
            }))
            .map_err(|e| draw_err(path, e))?;
        chart
            .draw_series(r.bounds.iter().enumerate().map(|(i, b)| {
                Text::new(
                    format!(
                        "  ≥ {}   allowed {}",
                        super::html::num(b.value),
                        super::html::num(b.allowed)
                    ),
                    (b.value.max(b.allowed), SegmentValue::CenterOf(seg(i))),
                    TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
                )
            }))
            .map_err(|e| draw_err(path, e))?;
        Ok(())
    })
}

/// For profile claims: the claimed δ(ε) curve and the confirmed hockey-stick lower bounds.
pub fn profile(path: &Path, r: &AuditReport) -> Result<()> {
    let claim = r.mechanism.claim;
    let points: Vec<(f64, f64, Direction, bool)> = r
        .bounds
        .iter()
        .filter_map(|b| match b.divergence {
            Divergence::HockeyStick { epsilon } => {
                Some((epsilon, b.value, b.direction, b.violation))
            }
            _ => None,
        })
        .collect();
    if points.is_empty() {
        return Err(Error::InvalidConfig(
            "the report has no hockey-stick bounds to plot against the profile".into(),
        ));
    }
    let e_max = points.iter().map(|p| p.0).fold(0.0f64, f64::max).max(0.1) * 1.15;
    let curve: Vec<(f64, f64)> = (0..=300)
        .filter_map(|i| {
            let eps = e_max * i as f64 / 300.0;
            claim.delta_at(eps).map(|d| (eps, d))
        })
        .collect();
    let top = curve
        .iter()
        .map(|c| c.1)
        .chain(points.iter().map(|p| p.1))
        .fold(0.0f64, f64::max)
        .max(1e-6)
        * 1.1;
    // The legend goes where neither the curve nor a bound is (a violation sits above the curve,
    // where an upper-right legend would hide it).
    let occupied: Vec<(f64, f64)> = curve
        .iter()
        .copied()
        .chain(points.iter().map(|p| (p.0, p.1)))
        .collect();
    let legend_at = free_corner(&occupied, (0.0, e_max), (0.0, top), (0.45, 0.15));
    with_canvas(path, (1000, 560), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("Privacy profile: claimed δ(ε) of {claim} vs confirmed lower bounds"),
                (FONT, 20),
            )
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..e_max, 0.0..top)
            .map_err(|e| draw_err(path, e))?;
        chart
            .configure_mesh()
            .light_line_style(RGBColor(238, 238, 238))
            .x_desc("ε")
            .y_desc("δ(ε) = hockey-stick divergence at e^ε")
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(|e| draw_err(path, e))?;
        chart
            .draw_series(LineSeries::new(curve.clone(), BLACK.stroke_width(2)))
            .map_err(|e| draw_err(path, e))?
            .label("claimed δ(ε) (the most the claim allows)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLACK.stroke_width(2)));
        for (dir, color, label) in [
            (
                Direction::FirstVsSecond,
                BLUE,
                "lower bound, M(D) vs M(D') (red: a violation)",
            ),
            (
                Direction::SecondVsFirst,
                ORANGE,
                "lower bound, M(D') vs M(D) (red: a violation)",
            ),
            (
                Direction::Larger,
                MAGENTA,
                "lower bound, the larger direction (red: a violation)",
            ),
        ] {
            let pts: Vec<_> = points.iter().filter(|p| p.2 == dir).collect();
            if pts.is_empty() {
                continue;
            }
            chart
                .draw_series(pts.iter().map(|(x, y, _, bad)| {
                    let c = if *bad { RED } else { color };
                    match dir {
                        Direction::FirstVsSecond => {
                            EmptyElement::at((*x, *y)) + Circle::new((0, 0), 5, c.filled())
                        }
                        Direction::SecondVsFirst | Direction::Larger => {
                            EmptyElement::at((*x, *y)) + Circle::new((0, 0), 7, c.stroke_width(2))
                        }
                    }
                }))
                .map_err(|e| draw_err(path, e))?
                .label(label)
                .legend(move |(x, y)| {
                    let style = match dir {
                        Direction::FirstVsSecond => color.filled(),
                        Direction::SecondVsFirst | Direction::Larger => color.stroke_width(2),
                    };
                    Circle::new((x + 7, y), 5, style)
                });
        }
        chart
            .configure_series_labels()
            .position(legend_at)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font((FONT, 15))
            .draw()
            .map_err(|e| draw_err(path, e))
    })
}

/// A legend corner that covers none of `points` (legend box ≈ `w` × `h` as fractions of the
/// plot's width and height); upper right when every corner is taken.
pub(super) fn free_corner(
    points: &[(f64, f64)],
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
    (w, h): (f64, f64),
) -> SeriesLabelPosition {
    let frac: Vec<(f64, f64)> = points
        .iter()
        .map(|(x, y)| ((x - x0) / (x1 - x0), (y - y0) / (y1 - y0)))
        .collect();
    let free = |(bx0, bx1): (f64, f64), (by0, by1): (f64, f64)| {
        !frac.iter().any(|(x, y)| {
            *x >= bx0 - 0.03 && *x <= bx1 + 0.03 && *y >= by0 - 0.05 && *y <= by1 + 0.05
        })
    };
    let mid = (0.5 - h / 2.0, 0.5 + h / 2.0);
    let candidates = [
        (
            SeriesLabelPosition::UpperRight,
            (1.0 - w, 1.0),
            (1.0 - h, 1.0),
        ),
        (SeriesLabelPosition::UpperLeft, (0.0, w), (1.0 - h, 1.0)),
        (SeriesLabelPosition::MiddleRight, (1.0 - w, 1.0), mid),
        (SeriesLabelPosition::MiddleLeft, (0.0, w), mid),
        (
            SeriesLabelPosition::UpperMiddle,
            (0.5 - w / 2.0, 0.5 + w / 2.0),
            (1.0 - h, 1.0),
        ),
        (SeriesLabelPosition::LowerRight, (1.0 - w, 1.0), (0.0, h)),
        (SeriesLabelPosition::LowerLeft, (0.0, w), (0.0, h)),
    ];
    candidates
        .into_iter()
        .find(|(_, bx, by)| free(*bx, *by))
        .map(|(pos, _, _)| pos)
        .unwrap_or(SeriesLabelPosition::UpperRight)
}

/// A sweep: detection rate (top) and median margin (bottom) against the swept parameter, one
/// line per tester, with the thresholds (β per audit; margin 0 = what the claim allows).
pub fn sweep(path: &Path, s: &SweepReport) -> Result<()> {
    if s.points.is_empty() {
        return Err(Error::InvalidConfig(
            "the sweep has no points to plot".into(),
        ));
    }
    let (vmin, vmax) = s
        .points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.value), b.max(p.value))
        });
    let (x0, x1) = padded(vmin, vmax, 0.05);
    let (mmin, mmax) = s.points.iter().fold((0.0f64, 0.0f64), |(a, b), p| {
        (a.min(p.median_margin), b.max(p.median_margin))
    });
    let (m0, m1) = padded(mmin, mmax.max(mmin + 1e-9), 0.1);
    let param = s.parameter.clone();
    with_canvas(path, (1000, 820), |root| {
        let (upper, lower) = root.split_vertically(410);
        let mut top = ChartBuilder::on(&upper)
            .caption(
                format!("{}: audits finding a violation vs {param}", s.mechanism),
                (FONT, 20),
            )
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, 0.0..1.05)
            .map_err(|e| draw_err(path, e))?;
        top.configure_mesh()
            .light_line_style(RGBColor(238, 238, 238))
            .x_desc(param.as_str())
            .y_desc(format!("fraction of {} audits", s.repeats))
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(|e| draw_err(path, e))?;
        let beta = s.failure_probability_per_audit;
        top.draw_series(DashedLineSeries::new(
            [(x0, beta), (x1, beta)],
            8,
            5,
            GREY.stroke_width(2),
        ))
        .map_err(|e| draw_err(path, e))?
        .label(format!(
            "β = {}: bound on the expected rate where the claim holds",
            super::html::num(beta)
        ))
        .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], GREY.stroke_width(2)));
        for (ti, t) in s.testers.iter().enumerate() {
            let color = PALETTE[ti % PALETTE.len()];
            let pts: Vec<_> = s.points.iter().filter(|p| &p.tester == t).collect();
            top.draw_series(LineSeries::new(
                pts.iter()
                    .map(|p| (p.value, p.detections as f64 / p.repeats.max(1) as f64)),
                color.stroke_width(2),
            ))
            .map_err(|e| draw_err(path, e))?
            .label(t.as_str())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], color.stroke_width(2)));
            top.draw_series(pts.iter().map(|p| {
                let y = p.detections as f64 / p.repeats.max(1) as f64;
                let style = if p.status == "buggy" {
                    color.filled()
                } else {
                    color.stroke_width(2)
                };
                Circle::new((p.value, y), 5, style)
            }))
            .map_err(|e| draw_err(path, e))?;
        }
        let rates: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|p| (p.value, p.detections as f64 / p.repeats.max(1) as f64))
            .chain([(x0, beta), (x1, beta)])
            .collect();
        top.configure_series_labels()
            .position(free_corner(&rates, (x0, x1), (0.0, 1.05), (0.5, 0.25)))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font((FONT, 15))
            .draw()
            .map_err(|e| draw_err(path, e))?;

        let mut bottom = ChartBuilder::on(&lower)
            .caption(
                "median over repeats of (largest bound - allowed); above 0 = violation",
                (FONT, 18),
            )
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x0..x1, m0..m1)
            .map_err(|e| draw_err(path, e))?;
        bottom
            .configure_mesh()
            .light_line_style(RGBColor(238, 238, 238))
            .x_desc(format!(
                "{param}   (filled markers: catalogue says buggy at this value; hollow: correct)"
            ))
            .y_desc("median margin")
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .draw()
            .map_err(|e| draw_err(path, e))?;
        bottom
            .draw_series(LineSeries::new(
                [(x0, 0.0), (x1, 0.0)],
                BLACK.stroke_width(2),
            ))
            .map_err(|e| draw_err(path, e))?
            .label("the claim's threshold (bound = allowed)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], BLACK.stroke_width(2)));
        for (ti, t) in s.testers.iter().enumerate() {
            let color = PALETTE[ti % PALETTE.len()];
            let pts: Vec<_> = s.points.iter().filter(|p| &p.tester == t).collect();
            bottom
                .draw_series(LineSeries::new(
                    pts.iter().map(|p| (p.value, p.median_margin)),
                    color.stroke_width(2),
                ))
                .map_err(|e| draw_err(path, e))?;
            bottom
                .draw_series(pts.iter().map(|p| {
                    let style = if p.status == "buggy" {
                        color.filled()
                    } else {
                        color.stroke_width(2)
                    };
                    Circle::new((p.value, p.median_margin), 5, style)
                }))
                .map_err(|e| draw_err(path, e))?;
        }
        let margins: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|p| (p.value, p.median_margin))
            .chain([(x0, 0.0), (x1, 0.0)])
            .collect();
        bottom
            .configure_series_labels()
            .position(free_corner(&margins, (x0, x1), (m0, m1), (0.42, 0.14)))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font((FONT, 15))
            .draw()
            .map_err(|e| draw_err(path, e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_thresholds_parse() {
        assert_eq!(
            parse_event_threshold("coordinate 0 ≤ 29.88752988145575"),
            Some((0, 29.88752988145575))
        );
        assert_eq!(
            parse_event_threshold("coordinate 3 ≥ -2.5"),
            Some((3, -2.5))
        );
        assert_eq!(parse_event_threshold("score ≥ 1"), None);
        assert_eq!(parse_event_threshold("coordinate x ≤ 1"), None);
        assert_eq!(parse_event_threshold("coordinate 0 ≤ NaN"), None);
    }
}
