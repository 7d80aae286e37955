//! ε at δ = 1e-5 against the number of steps T (1 … 10^5) for the Poisson-subsampled Gaussian
//! (q = 0.01, z = 1, add/remove): the PLD accountant's upper (pessimistic) and lower
//! (optimistic) bounds beside the RDP accountant's ε, drawn to
//! `docs/accountant-epsilon-vs-steps.png` (plotters, as `src/report/plot.rs`), the table on
//! stdout.
//!
//! ```text
//! cargo run --release --example accountant_epsilon_vs_steps            # the figure
//! cargo run --release --example accountant_epsilon_vs_steps -- --fine  # the T = 10^5 check
//! ```
//!
//! `--fine` is the high-precision check of docs/accountant.md ("The T = 10^5 bracket"): the
//! Connect-the-Dots post's q = 2e-5, z = 0.5, T = 10^5, δ = 1e-9 and 1e-8, composed by this
//! PLD accountant on grids of step 1e-4, 5e-5 and 4e-5 (finer grids need more than the
//! 2^22-point window (`MAX_COMPOSED_POINTS`) at T = 10^5, and the accountant falls back to
//! 4e-5 itself), each bracket printed with its time; the tightest bracket is the largest
//! lower bound with the smallest upper one (each grid gives valid bounds).

use std::error::Error;
use std::time::Instant;

use dp_audit::accounting::Neighboring;
use dp_audit::accounting::pld::PldAccountant;
use dp_audit::accounting::rdp::RdpAccountant;
use plotters::prelude::*;

type Res<T> = std::result::Result<T, Box<dyn Error>>;

/// (T, PLD upper, PLD lower, RDP).
type Row = (u64, f64, f64, f64);

/// A curve of the figure: its legend, colour and value of a row.
type Series = (&'static str, RGBColor, fn(&Row) -> f64);

const Q: f64 = 0.01;
const Z: f64 = 1.0;
const DELTA: f64 = 1e-5;
const OUT: &str = "docs/accountant-epsilon-vs-steps.png";

/// (T, PLD upper, PLD lower, RDP) at T = 10^{k/4}, k = 0 … 20 (rounded, distinct).
fn curve() -> Res<Vec<(u64, f64, f64, f64)>> {
    let mut rows: Vec<(u64, f64, f64, f64)> = Vec::new();
    for k in 0..=20 {
        let t = 10f64.powf(f64::from(k) / 4.0).round() as u64;
        if rows.last().is_some_and(|r| r.0 == t) {
            continue;
        }
        let mut pld = PldAccountant::new(Neighboring::AddRemove);
        pld.compose_poisson_gaussian(Q, Z, t)?;
        let (upper, lower) = pld.epsilon_bounds(DELTA)?;
        let mut rdp = RdpAccountant::new();
        rdp.compose_poisson_gaussian(Q, Z, t)?;
        let (r, _) = rdp.epsilon(DELTA)?;
        println!("T = {t:>6}  PLD {lower:.6} ≤ ε ≤ {upper:.6}  RDP {r:.6}");
        rows.push((t, upper, lower, r));
    }
    Ok(rows)
}

fn draw(rows: &[(u64, f64, f64, f64)]) -> Res<()> {
    plotters::style::register_font("sans-serif", FontStyle::Normal, ttf_noto_sans::REGULAR)
        .map_err(|_| "registering the embedded font failed")?;
    let (w, h) = (900u32, 560u32);
    let mut rgb = vec![255u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        root.fill(&WHITE)?;
        let y_max = rows.iter().map(|r| r.3).fold(0.0, f64::max) * 1.1;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("epsilon at delta = 1e-5, Poisson-subsampled Gaussian q = {Q}, z = {Z}"),
                ("sans-serif", 22),
            )
            .margin(16)
            .x_label_area_size(44)
            .y_label_area_size(56)
            .build_cartesian_2d((1f64..1e5f64).log_scale(), 0f64..y_max)?;
        chart
            .configure_mesh()
            .x_desc("steps T (log scale)")
            .y_desc("epsilon")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .label_style(("sans-serif", 15))
            .draw()?;
        let series: [Series; 3] = [
            ("RDP accountant", RGBColor(230, 120, 20), |r| r.3),
            (
                "PLD upper bound (pessimistic)",
                RGBColor(31, 119, 180),
                |r| r.1,
            ),
            ("PLD lower bound (optimistic)", RGBColor(44, 160, 44), |r| {
                r.2
            }),
        ];
        for (name, color, f) in series {
            let points: Vec<(f64, f64)> = rows.iter().map(|r| (r.0 as f64, f(r))).collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.9))
            .border_style(BLACK)
            .label_font(("sans-serif", 16))
            .draw()?;
        root.present()?;
    }
    // plotters' bitmap backend has no image encoder in this build: RGB to PNG by `png`.
    let mut bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut bytes, w, h);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Best);
        enc.write_header()?.write_image_data(&rgb)?;
    }
    std::fs::write(OUT, bytes)?;
    println!("wrote {OUT}");
    Ok(())
}

/// The T = 10^5 bracket on finer grids (see the module documentation).
fn fine() -> Res<()> {
    for delta in [1e-9, 1e-8] {
        for d in [1e-4, 5e-5, 4e-5] {
            let mut a = PldAccountant::with_discretization(Neighboring::AddRemove, d)?;
            a.compose_poisson_gaussian(2e-5, 0.5, 100_000)?;
            let start = Instant::now();
            let (upper, lower, grid) = a.epsilon_bounds_adaptive(delta)?;
            println!(
                "q = 2e-5, z = 0.5, T = 10^5, δ = {delta:e}, grid {d:e} (used {grid:e}): {lower:.6} ≤ ε ≤ {upper:.6} (width {:.1e}; {:.1} s)",
                upper - lower,
                start.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}

fn main() -> Res<()> {
    if std::env::args().any(|a| a == "--fine") {
        return fine();
    }
    let rows = curve()?;
    draw(&rows)
}
