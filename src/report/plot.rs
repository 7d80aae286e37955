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
use crate::testers::transforms::{DYADIC_EXPONENTS, LOW_MANTISSA_BITS, Transform};

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

/// Registers the embedded font (tests that draw text without a canvas).
#[cfg(test)]
pub(super) fn ensure_font_for_tests() {
    ensure_font().unwrap();
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

/// Largest magnitude an axis end may have. Ranges computed from data are clamped to
/// [−AXIS_LIMIT, AXIS_LIMIT]; plotters' tick search does not terminate on spans near f64::MAX.
pub(super) const AXIS_LIMIT: f64 = 1e15;

/// The one helper every axis range computed from data goes through: `lo..hi` padded by `pad`
/// of its width on each side, always finite, within ±[`AXIS_LIMIT`] and with `lo < hi`.
///
/// NaN ends are replaced (by the other end, or 0 and 1), infinite and huge ends are clamped,
/// reversed ends are swapped, and an empty or tiny span (relative to the magnitude, or below
/// 1e-300) is widened to 10% of the magnitude on each side (±1 around 0).
pub(super) fn axis_range(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    let (lo, hi) = match (lo.is_nan(), hi.is_nan()) {
        (true, true) => (0.0, 1.0),
        (true, false) => (hi, hi),
        (false, true) => (lo, lo),
        (false, false) => (lo, hi),
    };
    let clamp = |v: f64| v.clamp(-AXIS_LIMIT, AXIS_LIMIT);
    let (lo, hi) = (clamp(lo.min(hi)), clamp(lo.max(hi)));
    let magnitude = lo.abs().max(hi.abs());
    let (lo, hi) = if hi - lo <= 1e-9 * magnitude || hi - lo < 1e-300 {
        let w = if magnitude < 1e-300 {
            1.0
        } else {
            0.1 * magnitude
        };
        (lo - w, hi + w)
    } else {
        let w = (hi - lo)
            * if pad.is_finite() {
                pad.clamp(0.0, 1.0)
            } else {
                0.0
            };
        (lo - w, hi + w)
    };
    (lo.max(-2.0 * AXIS_LIMIT), hi.min(2.0 * AXIS_LIMIT))
}

/// `v` moved into `range` (for drawing values beyond a clamped axis); NaN goes to the low end.
pub(super) fn clip(v: f64, (lo, hi): (f64, f64)) -> f64 {
    if v.is_nan() { lo } else { v.clamp(lo, hi) }
}

/// A tick label for `v` on an axis spanning `lo..hi`: enough significant digits to tell
/// neighbouring ticks apart (a twentieth of the span), scientific notation when the axis's
/// magnitude is below 1e-3 or from 1e6 on (`1e-5`, `1.5e-5`), fixed otherwise (`0.25`), and
/// `0` for values within rounding of zero.
pub(super) fn tick_label(v: f64, lo: f64, hi: f64) -> String {
    // Plotters puts at most about 10 ticks on an axis; a twentieth of the span leaves a digit
    // for ticks at quarter steps (0.25, 0.5, …).
    let step = ((hi - lo).abs() / 20.0).max(f64::MIN_POSITIVE);
    if !v.is_finite() {
        return super::readable(v);
    }
    if v.abs() < step * 1e-6 {
        return "0".into();
    }
    let magnitude = lo.abs().max(hi.abs());
    let step_exp = step.log10().floor() as i32;
    if !(1e-3..1e6).contains(&magnitude) {
        let sig = (v.abs().log10().floor() as i32 - step_exp + 1).clamp(1, 6) as usize;
        super::scientific(v, sig)
    } else {
        let decimals = (-step_exp).clamp(0, 8) as usize;
        let s = format!("{v:.decimals$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

/// A tick label on a fraction axis spanning `0..top`: as [`tick_label`], but blank above 1 (the
/// axis may extend above 1 only to make room for a legend; no fraction lives there).
pub(super) fn fraction_tick(v: f64, top: f64) -> String {
    if v > 1.0 + 1e-9 {
        String::new()
    } else {
        tick_label(v, 0.0, top)
    }
}

/// The font of figure text at `size` pixels, rounded up to an even size: plotters' glyph
/// placement truncates half a font size plus each glyph's top toward zero, which at odd sizes
/// drops tall letters one pixel below short ones (a broken baseline).
pub(super) fn font(size: u32) -> (&'static str, u32) {
    (FONT, size + size % 2)
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i]
}

/// The output coordinates an event's description names, in order of appearance, each once:
/// `coordinate J ≤ T` / `coordinate J ≥ T` give (J, Some(T)) (a boundary to mark), a bare
/// `coordinate J` and each J of `coordinates [J1, J2, …]` give (J, None). Descriptions are
/// written by the testers (e.g. `coordinates [0, 1] = [0.0, 1.0] and coordinate 19 ≤ 3.2`).
pub(crate) fn event_coordinates(description: &str) -> Vec<(usize, Option<f64>)> {
    let mut out: Vec<(usize, Option<f64>)> = Vec::new();
    let mut push = |j: usize, t: Option<f64>| match out.iter_mut().find(|(c, _)| *c == j) {
        Some(entry) if entry.1.is_none() => entry.1 = t,
        Some(_) => {}
        None => out.push((j, t)),
    };
    let mut rest = description;
    while let Some(i) = rest.find("coordinate") {
        rest = &rest[i + "coordinate".len()..];
        if let Some(list) = rest.strip_prefix("s [") {
            let end = list.find(']').unwrap_or(list.len());
            for j in list[..end].split(',').filter_map(|x| x.trim().parse().ok()) {
                push(j, None);
            }
            rest = &list[end..];
        } else if let Some(after) = rest.strip_prefix(' ') {
            let digits = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            let Ok(j) = after[..digits].parse::<usize>() else {
                continue;
            };
            let tail = &after[digits..];
            let t = tail
                .strip_prefix(" ≤ ")
                .or_else(|| tail.strip_prefix(" ≥ "))
                .and_then(|t| {
                    let end = t
                        .find(|c: char| c.is_whitespace() || matches!(c, '}' | ',' | ')' | ';'))
                        .unwrap_or(t.len());
                    t[..end].parse::<f64>().ok()
                })
                .filter(|t| t.is_finite());
            push(j, t);
            rest = tail;
        }
    }
    out
}

/// The output distribution of coordinate `coord` on both sides: bars for outputs with few
/// distinct values, a histogram otherwise. `feature` names what the coordinate holds (see
/// [`feature_name`]); `events` are event boundaries on this coordinate to mark (x, label).
pub fn distribution(
    path: &Path,
    coord: usize,
    feature: &str,
    p: &[f64],
    q: &[f64],
    events: &[(f64, String)],
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
        "Coordinate {coord}: {feature}, {} releases per side",
        super::readable(p.len().max(q.len()) as f64)
    );
    with_canvas(path, (1000, 460), |root| {
        if distinct.len() <= 40 || (integers && distinct[distinct.len() - 1] - distinct[0] <= 60.0)
        {
            // A threshold would cut through the bars of a discrete output; the table names it.
            discrete_bars(root, path, &caption, feature, p, q, &distinct, integers)
        } else {
            histogram(root, path, &caption, feature, p, q, &pooled, events)
        }
    })
}

/// What coordinate `j` of a (possibly transformed) release holds, for figure titles and axis
/// labels: `output coordinate j`, or the transformed feature by name (`tanh(2·x_0)`,
/// `T_3(tanh x_1)`, `lowest 6 mantissa bits of x_0`, `x_0·2^4 is an integer`, …) where x_c is
/// output coordinate c of the mechanism. `dim` is the dimension the testers saw (after the
/// transform); `None` when unknown, in which case appended features are named by index only.
pub fn feature_name(transform: Option<Transform>, dim: Option<usize>, j: usize) -> String {
    let per = |t: Transform| t.output_dim(1).saturating_sub(1);
    match transform {
        None | Some(Transform::None) => format!("output coordinate {j}"),
        Some(Transform::Tanh { scale: 1.0 }) => format!("tanh(x_{j})"),
        Some(Transform::Tanh { scale }) => format!("tanh({}·x_{j})", super::readable(scale)),
        Some(t @ (Transform::Chebyshev { .. } | Transform::FloatBits)) => {
            let per = per(t);
            let Some(d) = dim.map(|d| d / (1 + per)).filter(|d| *d > 0) else {
                return format!("feature {j} of the {t} transform");
            };
            if j < d {
                return format!("x_{j} (output coordinate {j}, unchanged)");
            }
            let (c, f) = ((j - d) / per, (j - d) % per);
            match t {
                Transform::Chebyshev { .. } => format!("T_{}(tanh x_{c})", f + 1),
                _ => match f {
                    0 => format!("lowest {LOW_MANTISSA_BITS} mantissa bits of x_{c} (0 to 63)"),
                    1 => format!("x_{c} is exactly an f32 (1 = yes)"),
                    f => {
                        let k = *DYADIC_EXPONENTS.start() + (f - 2) as i32;
                        format!("x_{c}·2^{k} is an integer (1 = yes)")
                    }
                },
            }
        }
        Some(t @ (Transform::Values | Transform::FloatRepr)) => {
            // The original dimension from the one the testers saw (Values adds 3 norms when
            // d ≥ 2; FloatRepr keeps 5 features per coordinate).
            let d = match (t, dim) {
                (Transform::Values, Some(n)) if n <= 1 => Some(n),
                (Transform::Values, Some(n)) => n.checked_sub(3),
                (_, Some(n)) => Some(n / crate::testers::transforms::FLOAT_REPR_PER_COORD),
                _ => None,
            };
            d.and_then(|d| t.feature_names(d).into_iter().nth(j))
                .unwrap_or_else(|| format!("feature {j} of the {t} transform"))
        }
        Some(Transform::Checkpoints { block }) => {
            if j < block {
                format!("final value of model coordinate {j}")
            } else {
                let (c, f) = ((j - block) / 2, (j - block) % 2);
                format!(
                    "{} increment of model coordinate {c} over the checkpoints",
                    if f == 0 { "largest" } else { "smallest" }
                )
            }
        }
        Some(Transform::Auto) => {
            // d coordinates, then 17 features per coordinate, then 3 norms when d ≥ 2.
            let per = 17;
            let Some(d) = dim
                .and_then(|n| {
                    if n == 1 + per {
                        Some(1)
                    } else {
                        n.checked_sub(3).map(|m| m / (1 + per))
                    }
                })
                .filter(|d| *d > 0)
            else {
                return format!("feature {j} of the auto transform");
            };
            if j < d {
                return format!("x_{j} (output coordinate {j}, unchanged)");
            }
            if j >= d * (1 + per) {
                return match j - d * (1 + per) {
                    0 => "L2 norm of the output".into(),
                    1 => "L1 norm of the output".into(),
                    _ => "L∞ norm of the output".into(),
                };
            }
            let (c, f) = ((j - d) / per, (j - d) % per);
            match f {
                0 => format!("lowest {LOW_MANTISSA_BITS} mantissa bits of x_{c} (0 to 63)"),
                1 => format!("x_{c} is exactly an f32 (1 = yes)"),
                15 => format!("lowest 6 bits of the f32 mantissa of x_{c} (when an f32)"),
                16 => format!("binade (f64 exponent) of x_{c}"),
                f => {
                    let k = *DYADIC_EXPONENTS.start() + (f - 2) as i32;
                    format!("x_{c}·2^{k} is an integer (1 = yes)")
                }
            }
        }
    }
}

/// The x tick labels of a bar chart of discrete outputs. On a value axis (small integers) every
/// integer tick is labelled with its value. On a rank axis (bar pair r for the r-th distinct
/// value) tick r is labelled with that value, thinned to every stride-th rank so labels never
/// overlap (about 8 px per character on a ~900-px axis). Tick positions come out of plotters'
/// arithmetic (1 may arrive as 0.9999999999999998), hence the tolerance.
pub(crate) fn discrete_axis_labels(
    distinct: &[f64],
    on_value_axis: bool,
) -> impl Fn(&f64) -> String {
    let texts: Vec<String> = distinct.iter().map(|v| super::readable(*v)).collect();
    let widest = texts.iter().map(|t| t.chars().count()).max().unwrap_or(1);
    let fit = (900 / (widest * 8 + 14)).max(2);
    let stride = distinct.len().div_ceil(fit).max(1);
    move |x: &f64| -> String {
        let r = x.round();
        if (r - x).abs() > 1e-6 {
            return String::new();
        }
        if on_value_axis {
            return super::readable(r);
        }
        if r < 0.0 || r as usize >= texts.len() || !(r as usize).is_multiple_of(stride) {
            return String::new();
        }
        texts[r as usize].clone()
    }
}

#[allow(clippy::too_many_arguments)]
fn discrete_bars(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    path: &Path,
    caption: &str,
    feature: &str,
    p: &[f64],
    q: &[f64],
    distinct: &[f64],
    integers: bool,
) -> Result<()> {
    // x position of each distinct value: the value itself for integer outputs, its rank otherwise.
    let on_value_axis = integers
        && distinct[distinct.len() - 1] - distinct[0] <= 60.0
        && distinct[0].abs().max(distinct[distinct.len() - 1].abs()) < 1e12;
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
    let (x0, x1) = axis_range(
        pos(distinct[0]) - 0.7,
        pos(distinct[distinct.len() - 1]) + 0.7,
        0.0,
    );
    let (_, top) = axis_range(
        0.0,
        mp.iter().chain(&mq).fold(0.0f64, |a, b| a.max(*b)) * 1.3,
        0.0,
    );
    let mut chart = ChartBuilder::on(root)
        .caption(caption, font(20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, 0.0..top)
        .map_err(|e| draw_err(path, e))?;
    let label_of = discrete_axis_labels(distinct, on_value_axis);
    chart
        .configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .disable_x_mesh()
        .x_labels(if on_value_axis {
            14
        } else {
            (distinct.len() + 2).min(60)
        })
        .x_label_formatter(&label_of)
        .x_desc(if on_value_axis {
            feature.to_string()
        } else {
            format!("{feature} (one bar pair per distinct value)")
        })
        .y_desc("fraction of releases")
        .y_label_formatter(&|v| fraction_tick(*v, top))
        .label_style(font(15))
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

/// The value holding a fifth or more of the `pooled` (sorted) releases, if any, with its share
/// of `p` and of `q`: a histogram leaves it out (it would flatten everything else into the axis,
/// as svt3's "no answer" 0 beside its continuous answers) and names it in the axis title.
pub(crate) fn dominant_value(pooled: &[f64], p: &[f64], q: &[f64]) -> Option<(f64, f64, f64)> {
    let mut i = 0;
    while i < pooled.len() {
        let j = pooled.partition_point(|v| *v <= pooled[i]);
        if (j - i) as f64 >= 0.2 * pooled.len() as f64 {
            let v = pooled[i];
            let share =
                |xs: &[f64]| xs.iter().filter(|x| **x == v).count() as f64 / xs.len().max(1) as f64;
            return Some((v, share(p), share(q)));
        }
        i = j.max(i + 1);
    }
    None
}

#[allow(clippy::too_many_arguments)]
fn histogram(
    root: &DrawingArea<BitMapBackend<'_>, Shift>,
    path: &Path,
    caption: &str,
    feature: &str,
    p: &[f64],
    q: &[f64],
    pooled: &[f64],
    events: &[(f64, String)],
) -> Result<()> {
    let atom = dominant_value(pooled, p, q);
    let rest: Vec<f64> = match atom {
        Some((v, _, _)) => pooled.iter().copied().filter(|x| *x != v).collect(),
        None => pooled.to_vec(),
    };
    let rest = if rest.is_empty() {
        pooled.to_vec()
    } else {
        rest
    };
    let (lo, hi) = axis_range(quantile(&rest, 0.001), quantile(&rest, 0.999), 0.02);
    let width = (hi - lo) / BINS as f64;
    let counts = |xs: &[f64]| bin_frequencies(xs, atom.map(|a| a.0), (lo, hi), width);
    let ((fp, op), (fq, oq)) = (counts(p), counts(q));
    let (_, top) = axis_range(
        0.0,
        fp.iter().chain(&fq).fold(0.0f64, |a, b| a.max(*b)) * 1.3,
        0.0,
    );
    let x_desc = histogram_axis_title(feature, atom, op + oq, p.len() + q.len());
    let mut chart = ChartBuilder::on(root)
        .caption(caption, font(20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(lo..hi, 0.0..top)
        .map_err(|e| draw_err(path, e))?;
    chart
        .configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .x_label_formatter(&|v| tick_label(*v, lo, hi))
        .y_label_formatter(&|v| fraction_tick(*v, top))
        .x_desc(x_desc)
        .y_desc(format!("fraction of releases per bin ({BINS} bins)"))
        .label_style(font(15))
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
    for (i, (x, label)) in events
        .iter()
        .filter(|(x, _)| *x >= lo && *x <= hi)
        .enumerate()
    {
        // One legend entry for all boundaries.
        let label = (i == 0).then_some(label.clone());
        draw_event(&mut chart, path, *x, label, top)?;
    }
    legend(&mut chart, path)
}

/// Bins of the histogram figure.
const BINS: usize = 60;

/// The share of `xs` in each of the [`BINS`] bins of width `width` from `lo` to `hi`, leaving out
/// the value `atom` (drawn nowhere), and how many fall outside the range.
fn bin_frequencies(
    xs: &[f64],
    atom: Option<f64>,
    (lo, hi): (f64, f64),
    width: f64,
) -> (Vec<f64>, usize) {
    let mut c = vec![0u64; BINS];
    let mut outside = 0;
    for x in xs {
        if atom.is_some_and(|v| *x == v) {
            continue;
        }
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
}

/// The histogram's x-axis title: the feature, with notes on the value left out (`atom`, with its
/// share of each side) and on the releases outside the shown range.
fn histogram_axis_title(
    feature: &str,
    atom: Option<(f64, f64, f64)>,
    outside: usize,
    total: usize,
) -> String {
    let mut notes = Vec::new();
    if let Some((v, sp, sq)) = atom {
        notes.push(format!(
            "value {} not drawn: {}% of M(D), {}% of M(D')",
            super::readable(v),
            super::readable(100.0 * sp),
            super::readable(100.0 * sq)
        ));
    }
    if outside > 0 {
        notes.push(format!(
            "{outside} of {total} releases outside the shown range"
        ));
    }
    if notes.is_empty() {
        feature.to_string()
    } else {
        format!("{feature} ({})", notes.join("; "))
    }
}

type Chart2d<'a> = ChartContext<
    'a,
    BitMapBackend<'a>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

fn draw_event(
    chart: &mut Chart2d<'_>,
    path: &Path,
    x: f64,
    label: Option<String>,
    top: f64,
) -> Result<()> {
    let series = chart
        .draw_series(DashedLineSeries::new(
            [(x, 0.0), (x, top)],
            8,
            5,
            BLACK.stroke_width(2),
        ))
        .map_err(|e| draw_err(path, e))?;
    if let Some(label) = label {
        series
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
        .label_font(font(15))
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
        Divergence::HockeyStick { epsilon } => format!("H ε={}", super::readable(*epsilon)),
        Divergence::Renyi { alpha } => format!("Rényi α={}", super::readable(*alpha)),
        #[allow(unreachable_patterns)]
        other => format!("{other}"),
    }
}

/// The unit a divergence is measured in: bounds of different units never share an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Hockey-stick divergences: differences of probabilities (what δ is compared with).
    Probability,
    /// Rényi divergences, in nats.
    Nats,
}

fn unit_of(d: &Divergence) -> Unit {
    match d {
        Divergence::HockeyStick { .. } => Unit::Probability,
        #[allow(unreachable_patterns)]
        _ => Unit::Nats,
    }
}

fn unit_title(u: Unit) -> &'static str {
    match u {
        Unit::Probability => "Hockey-stick divergence H (a difference of probabilities, as δ)",
        Unit::Nats => "Rényi divergence D (in nats)",
    }
}

/// The bounds grouped by unit, in order of first appearance: one panel of the bounds figure
/// per unit, so hockey-stick bounds (probabilities) and Rényi bounds (nats) never share an axis.
pub(crate) fn bound_panels(
    bounds: &[crate::audit::BoundRecord],
) -> Vec<(Unit, Vec<&crate::audit::BoundRecord>)> {
    let mut panels: Vec<(Unit, Vec<&crate::audit::BoundRecord>)> = Vec::new();
    for b in bounds {
        let u = unit_of(&b.divergence);
        match panels.iter_mut().find(|(pu, _)| *pu == u) {
            Some((_, rows)) => rows.push(b),
            None => panels.push((u, vec![b])),
        }
    }
    panels
}

/// Bar rows of one bounds panel: height in pixels of each row for `k` rows.
fn bounds_row_height(k: usize) -> u32 {
    if k <= 4 { 64 } else { 26 }
}

/// Height of one bounds panel with `k` rows (its title, rows and x axis).
fn bounds_panel_height(k: usize) -> u32 {
    (40 + 70 + bounds_row_height(k) * k as u32).max(190)
}

/// The x range of one bounds panel: 0, every bound and every allowance, padded, with room on
/// the right for the annotations; through [`axis_range`], so finite and non-degenerate.
fn bounds_x_range(rows: &[&crate::audit::BoundRecord]) -> (f64, f64) {
    let lo = rows
        .iter()
        .map(|b| b.value.min(b.allowed))
        .fold(0.0f64, f64::min);
    let hi = rows
        .iter()
        .map(|b| b.value.max(b.allowed))
        .fold(0.0f64, f64::max);
    let hi = if hi > 0.0 || lo < 0.0 { hi } else { 1e-6 };
    let (a, b) = axis_range(lo, hi, 0.04);
    let a = if lo >= 0.0 { 0.0 } else { a };
    axis_range(a, b + 0.7 * (b - a), 0.0)
}

/// True when a bounds annotation anchored at `at` would run off the right of `range`: the
/// axis leaves 70% of its width after the largest value for annotations, so only values
/// clamped to the axis limit land this far right.
pub(crate) fn annotation_inside(at: f64, (lo, hi): (f64, f64)) -> bool {
    at > lo + 0.75 * (hi - lo)
}

/// Every bound (horizontal bar; red when it exceeds) against what the claim allows (black
/// tick), one row per bound in the order of the report's table, each row annotated with both
/// numbers so values near 0 stay readable. Bounds in different units (hockey-stick: a
/// difference of probabilities; Rényi: nats) get separate panels, each with its own axis.
pub fn bounds(path: &Path, r: &AuditReport) -> Result<()> {
    if r.bounds.is_empty() {
        return Err(Error::InvalidConfig(
            "the report has no bounds to plot".into(),
        ));
    }
    let panels = bound_panels(&r.bounds);
    // Name the tester when more than one contributed bounds.
    let several_testers = r.bounds.iter().any(|b| b.tester != r.bounds[0].tester);
    let label = |b: &crate::audit::BoundRecord| {
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
    };
    let label_px = r
        .bounds
        .iter()
        .map(|b| label(b).chars().count())
        .max()
        .unwrap_or(10) as u32
        * 8
        + 24;
    const TITLE: u32 = 44;
    let heights: Vec<u32> = panels
        .iter()
        .map(|(_, rows)| bounds_panel_height(rows.len()))
        .collect();
    let height = (TITLE + heights.iter().sum::<u32>()).clamp(320, 6000);
    with_canvas(path, (1000, height), |root| {
        let (title, mut rest) = root.split_vertically(TITLE);
        title
            .draw(&Text::new(
                "Lower confidence bounds (bars) vs what the claim allows (black ticks)",
                (500, TITLE as i32 / 2),
                TextStyle::from(font(20).into_font()).pos(Pos::new(HPos::Center, VPos::Center)),
            ))
            .map_err(|e| draw_err(path, e))?;
        for (pi, (unit, rows)) in panels.iter().enumerate() {
            let (area, below) = if pi + 1 < panels.len() {
                rest.split_vertically(heights[pi])
            } else {
                let h = rest.dim_in_pixel().1;
                rest.split_vertically(h)
            };
            rest = below;
            bounds_panel(&area, path, *unit, rows, &label, label_px)?;
        }
        Ok(())
    })
}

fn bounds_panel(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    path: &Path,
    unit: Unit,
    rows: &[&crate::audit::BoundRecord],
    label: &dyn Fn(&crate::audit::BoundRecord) -> String,
    label_px: u32,
) -> Result<()> {
    let k = rows.len();
    let (lo, hi) = bounds_x_range(rows);
    let labels: Vec<String> = rows.iter().map(|b| label(b)).collect();
    // Row i (0 = first bound) sits at the top: segment k - 1 - i.
    let seg = |i: usize| (k - 1 - i) as i32;
    let y_range = if k == 1 { -1..1 } else { 0..k as i32 - 1 };
    let mut chart = ChartBuilder::on(area)
        .caption(unit_title(unit), font(16))
        .margin(14)
        .x_label_area_size(56)
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
    let x_desc = match unit {
        Unit::Probability => {
            "lower confidence bound on H (the claim allows at most the black tick)"
        }
        Unit::Nats => "lower confidence bound on D, nats (the claim allows at most the black tick)",
    };
    chart
        .configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .disable_y_mesh()
        .y_labels(if k == 1 { 3 } else { k })
        .y_label_formatter(&fmt)
        .x_labels(8)
        .x_label_formatter(&|v| tick_label(*v, lo, hi))
        .label_style(font(14))
        .x_desc(x_desc)
        .axis_desc_style(font(14))
        .draw()
        .map_err(|e| draw_err(path, e))?;
    let bar_margin = if k <= 4 { 14 } else { 5 };
    let x = |v: f64| clip(v, (lo, hi));
    chart
        .draw_series(rows.iter().enumerate().map(|(i, b)| {
            let color = if b.violation { RED } else { BLUE };
            let mut bar = Rectangle::new(
                [
                    (x(0.0), SegmentValue::Exact(seg(i))),
                    (x(b.value), SegmentValue::Exact(seg(i) + 1)),
                ],
                color.mix(0.75).filled(),
            );
            bar.set_margin(bar_margin, bar_margin, 0, 0);
            bar
        }))
        .map_err(|e| draw_err(path, e))?;
    chart
        .draw_series(rows.iter().enumerate().map(|(i, b)| {
            PathElement::new(
                [
                    (x(b.allowed), SegmentValue::Exact(seg(i))),
                    (x(b.allowed), SegmentValue::Exact(seg(i) + 1)),
                ],
                BLACK.stroke_width(3),
            )
        }))
        .map_err(|e| draw_err(path, e))?;
    // Annotations: anchored at their left end and vertical centre, 8 px right of the longer of
    // bar and tick, so every row's text sits on the same baseline relative to its bar. A bar or
    // tick clamped at the right edge (values beyond the axis limit) gets its text inside, right-
    // aligned 8 px before the edge (white on the bar).
    let left = TextStyle::from(font(14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let right = TextStyle::from(font(14).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    for (i, b) in rows.iter().enumerate() {
        let at = x(b.value.max(b.allowed));
        let text = format!(
            "≥ {}   allowed {}",
            super::readable(b.value),
            super::readable(b.allowed)
        );
        let (offset, style) = if annotation_inside(at, (lo, hi)) {
            let color: &'static RGBColor = if b.value >= b.allowed { &WHITE } else { &BLACK };
            ((-8, 0), right.clone().color(color))
        } else {
            ((8, 0), left.clone())
        };
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((at, SegmentValue::CenterOf(seg(i))))
                    + Text::new(text, offset, style),
            ))
            .map_err(|e| draw_err(path, e))?;
    }
    Ok(())
}

/// For profile claims: the claimed δ(ε) curve and the confirmed hockey-stick lower bounds.
pub fn profile(path: &Path, r: &AuditReport) -> Result<()> {
    let ProfileLayout {
        claim,
        points,
        curve,
        e_max,
        top,
        legend_at,
    } = profile_layout(r)?;
    with_canvas(path, (1000, 560), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("Privacy profile: claimed δ(ε) of {claim} vs confirmed lower bounds"),
                font(20),
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
            .x_label_formatter(&|v| tick_label(*v, 0.0, e_max))
            .y_desc("δ(ε) = hockey-stick divergence at e^ε")
            .y_label_formatter(&|v| tick_label(*v, 0.0, top))
            .label_style(font(15))
            .axis_desc_style(font(16))
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
            .label_font(font(15))
            .draw()
            .map_err(|e| draw_err(path, e))
    })
}

/// What the profile figure draws, in its axes: the claim, each hockey-stick bound as (ε, bound,
/// direction, violation) clipped to the axes, the claimed δ(ε) curve, the axis limits and the
/// legend's corner.
struct ProfileLayout {
    claim: crate::mechanisms::PrivacyClaim,
    points: Vec<(f64, f64, Direction, bool)>,
    curve: Vec<(f64, f64)>,
    e_max: f64,
    top: f64,
    legend_at: SeriesLabelPosition,
}

/// The axes of the profile figure: ε up to past the largest bound's, δ up to past the highest
/// of the curve and the bounds; an error when the report has no hockey-stick bound.
fn profile_layout(r: &AuditReport) -> Result<ProfileLayout> {
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
    let (_, e_max) = axis_range(
        0.0,
        points.iter().map(|p| p.0).fold(0.0f64, f64::max).max(0.1) * 1.15,
        0.0,
    );
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
    let (_, top) = axis_range(0.0, top, 0.0);
    // Bounds beyond a clamped axis are drawn at its edge.
    let points: Vec<(f64, f64, Direction, bool)> = points
        .into_iter()
        .map(|(x, y, d, v)| (clip(x, (0.0, e_max)), clip(y, (0.0, top)), d, v))
        .collect();
    // The legend goes where neither the curve nor a bound is (a violation sits above the curve,
    // where an upper-right legend would hide it).
    let occupied: Vec<(f64, f64)> = curve
        .iter()
        .copied()
        .chain(points.iter().map(|p| (p.0, p.1)))
        .collect();
    let legend_at = free_corner(&occupied, (0.0, e_max), (0.0, top), (0.45, 0.15));
    Ok(ProfileLayout {
        claim,
        points,
        curve,
        e_max,
        top,
        legend_at,
    })
}

/// A legend corner that covers none of `points` (legend box ≈ `w` × `h` as fractions of the
/// plot's width and height); upper right when every corner is taken.
pub(super) fn free_corner(
    points: &[(f64, f64)],
    x: (f64, f64),
    y: (f64, f64),
    size: (f64, f64),
) -> SeriesLabelPosition {
    find_free_corner(points, x, y, size).unwrap_or(SeriesLabelPosition::UpperRight)
}

/// A legend corner that covers none of `points`, if there is one (see [`free_corner`]).
pub(super) fn find_free_corner(
    points: &[(f64, f64)],
    (x0, x1): (f64, f64),
    (y0, y1): (f64, f64),
    (w, h): (f64, f64),
) -> Option<SeriesLabelPosition> {
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
}

/// The top of the sweep's detection axis and its legend corner: a free corner of 0..1.05 when
/// one is free of `occupied` points; else the axis grows above 1 so the legend (β and one line
/// per tester) gets a band of its own and hides no data.
pub(crate) fn sweep_legend_layout(
    occupied: &[(f64, f64)],
    x: (f64, f64),
    testers: usize,
) -> (f64, SeriesLabelPosition) {
    let legend_h = (24.0 + 22.0 * (1 + testers) as f64) / 300.0;
    match find_free_corner(occupied, x, (0.0, 1.05), (0.5, legend_h)) {
        Some(pos) => (1.05, pos),
        None => (
            1.05 / (1.0 - legend_h).max(0.3),
            SeriesLabelPosition::UpperRight,
        ),
    }
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
    let (x0, x1) = axis_range(vmin, vmax, 0.05);
    let (mmin, mmax) = s.points.iter().fold((0.0f64, 0.0f64), |(a, b), p| {
        (a.min(p.median_margin), b.max(p.median_margin))
    });
    let (m0, m1) = axis_range(mmin, mmax.max(mmin + 1e-9), 0.1);
    with_canvas(path, (1000, 820), |root| {
        let (upper, lower) = root.split_vertically(410);
        sweep_rates_panel(&upper, path, s, (x0, x1))?;
        sweep_margins_panel(&lower, path, s, (x0, x1), (m0, m1))
    })
}

/// The sweep's upper chart: the detection rate per value and tester, with its 95%
/// Clopper–Pearson interval, against β.
fn sweep_rates_panel(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    path: &Path,
    s: &SweepReport,
    (x0, x1): (f64, f64),
) -> Result<()> {
    let param = &s.parameter;
    let beta = s.failure_probability_per_audit;
    // Where the legend of the top chart may not go: markers, intervals and the β line.
    let rates: Vec<(f64, f64)> = s
        .points
        .iter()
        .flat_map(|p| {
            let (l, u) = p.detection_interval();
            [
                (p.value, p.detections as f64 / p.repeats.max(1) as f64),
                (p.value, l),
                (p.value, u),
                (p.value, (l + u) / 2.0),
            ]
        })
        .chain((0..=10).map(|i| (x0 + (x1 - x0) * f64::from(i) / 10.0, beta)))
        .collect();
    let (top_y, top_legend) = sweep_legend_layout(&rates, (x0, x1), s.testers.len());
    let mut top = ChartBuilder::on(area)
        .caption(
            format!(
                "{}: fraction of audits finding a violation vs {param} (95% intervals)",
                s.mechanism
            ),
            font(20),
        )
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, 0.0..top_y)
        .map_err(|e| draw_err(path, e))?;
    top.configure_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .x_desc(param.as_str())
        .x_label_formatter(&|v| tick_label(*v, x0, x1))
        .y_label_formatter(&|v| fraction_tick(*v, 1.05))
        .y_desc(format!("fraction of {} audits", s.repeats))
        .label_style(font(15))
        .axis_desc_style(font(16))
        .draw()
        .map_err(|e| draw_err(path, e))?;
    top.draw_series(DashedLineSeries::new(
        [(x0, beta), (x1, beta)],
        8,
        5,
        GREY.stroke_width(2),
    ))
    .map_err(|e| draw_err(path, e))?
    .label(format!(
        "β = {} per audit: the most a value where the claim holds gives on average",
        super::readable(beta)
    ))
    .legend(|(x, y)| PathElement::new([(x, y), (x + 14, y)], GREY.stroke_width(2)));
    for (ti, t) in s.testers.iter().enumerate() {
        draw_tester_rates(&mut top, path, s, ti, t, (x0, x1))?;
    }
    top.configure_series_labels()
        .position(top_legend)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(font(15))
        .draw()
        .map_err(|e| draw_err(path, e))?;
    Ok(())
}

/// One tester's detection rates on the sweep's upper chart: the line, each point's 95%
/// Clopper–Pearson interval (a bar with caps), and the markers (filled where the catalogue says
/// buggy); testers side by side around each value.
fn draw_tester_rates(
    top: &mut Chart2d<'_>,
    path: &Path,
    s: &SweepReport,
    ti: usize,
    t: &str,
    (x0, x1): (f64, f64),
) -> Result<()> {
    let nt = s.testers.len().max(1) as f64;
    let color = PALETTE[ti % PALETTE.len()];
    let pts: Vec<_> = s.points.iter().filter(|p| p.tester == t).collect();
    // Testers side by side around each value, so their intervals do not overlap.
    let dx = (ti as f64 - (nt - 1.0) / 2.0) * 0.006 * (x1 - x0);
    let x = |v: f64| clip(v + dx, (x0, x1));
    top.draw_series(LineSeries::new(
        pts.iter()
            .map(|p| (x(p.value), p.detections as f64 / p.repeats.max(1) as f64)),
        color.stroke_width(2),
    ))
    .map_err(|e| draw_err(path, e))?
    .label(t)
    .legend(move |(x, y)| PathElement::new([(x, y), (x + 14, y)], color.stroke_width(2)));
    // 95% Clopper–Pearson interval of each point: a vertical bar with caps.
    let cap = 0.004 * (x1 - x0);
    for p in &pts {
        let (l, u) = p.detection_interval();
        let xp = x(p.value);
        for seg in [
            [(xp, l), (xp, u)],
            [(xp - cap, l), (xp + cap, l)],
            [(xp - cap, u), (xp + cap, u)],
        ] {
            top.draw_series(std::iter::once(PathElement::new(
                seg,
                color.mix(0.7).stroke_width(2),
            )))
            .map_err(|e| draw_err(path, e))?;
        }
    }
    top.draw_series(pts.iter().map(|p| {
        let y = p.detections as f64 / p.repeats.max(1) as f64;
        let style = if p.status == "buggy" {
            color.filled()
        } else {
            color.stroke_width(2)
        };
        Circle::new((x(p.value), y), 5, style)
    }))
    .map_err(|e| draw_err(path, e))?;
    Ok(())
}

/// The sweep's lower chart: the median margin (largest bound − allowed) per value and tester.
fn sweep_margins_panel(
    area: &DrawingArea<BitMapBackend<'_>, Shift>,
    path: &Path,
    s: &SweepReport,
    (x0, x1): (f64, f64),
    (m0, m1): (f64, f64),
) -> Result<()> {
    let param = &s.parameter;
    let mut bottom = ChartBuilder::on(area)
        .caption(
            "median over repeats of (largest bound - allowed); above 0 = violation",
            font(18),
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
        .x_label_formatter(&|v| tick_label(*v, x0, x1))
        .y_label_formatter(&|v| tick_label(*v, m0, m1))
        .label_style(font(15))
        .axis_desc_style(font(16))
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
                pts.iter()
                    .map(|p| (clip(p.value, (x0, x1)), clip(p.median_margin, (m0, m1)))),
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
                Circle::new(
                    (clip(p.value, (x0, x1)), clip(p.median_margin, (m0, m1))),
                    5,
                    style,
                )
            }))
            .map_err(|e| draw_err(path, e))?;
    }
    let margins: Vec<(f64, f64)> = s
        .points
        .iter()
        .map(|p| (p.value, p.median_margin))
        .chain((0..=10).map(|i| (x0 + (x1 - x0) * f64::from(i) / 10.0, 0.0)))
        .collect();
    bottom
        .configure_series_labels()
        .position(free_corner(&margins, (x0, x1), (m0, m1), (0.42, 0.14)))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(font(15))
        .draw()
        .map_err(|e| draw_err(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_coordinates_parse() {
        assert_eq!(
            event_coordinates("coordinate 0 ≤ 29.88752988145575"),
            vec![(0, Some(29.88752988145575))]
        );
        assert_eq!(
            event_coordinates("coordinate 3 ≥ -2.5"),
            vec![(3, Some(-2.5))]
        );
        assert_eq!(event_coordinates("score ≥ 1"), vec![]);
        assert_eq!(event_coordinates("coordinate x ≤ 1"), vec![]);
        assert_eq!(event_coordinates("coordinate 0 ≤ NaN"), vec![(0, None)]);
        // svt3's event: the evidence is in coordinates 19 and 10, given the pattern of 0..9.
        let svt3 = "S₁ = {coordinates [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0] and coordinate 19 ≤ 3.2154895907871257} for M(D) ‖ M(D') and S₂ = {coordinate 10 ≥ 13.373130281160083} minus S₁ for M(D') ‖ M(D)";
        let c = event_coordinates(svt3);
        assert_eq!(&c[..2], &[(0, None), (1, None)]);
        assert!(c.contains(&(19, Some(3.2154895907871257))));
        assert!(c.contains(&(10, Some(13.373130281160083))));
        assert_eq!(c.len(), 12);
        assert_eq!(
            event_coordinates(
                "output values of coordinates [3] among the 12 values whose estimated log-likelihood ratio is ≥ 0.5"
            ),
            vec![(3, None)]
        );
    }
}
