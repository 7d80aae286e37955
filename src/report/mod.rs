//! Reports on disk: `DIR/<run-id>/audit.json` (the source of truth), `index.html` rendered from
//! it, PNG figures, and `DIR/index.html` listing every run in `DIR`.
//!
//! # Layout of a run directory
//! - `audit.json`: the [`AuditReport`] (or a [`SweepReport`], marked `"kind": "sweep"`, or a
//!   [`SequentialReport`](crate::sequential::SequentialReport), marked `"mode": "sequential"`),
//!   pretty-printed.
//! - `index.html`: offline page (inline CSS, no script, no network), every string escaped.
//! - `distribution-<j>.png` (runs, j < 4): releases of M(D) and M(D') on coordinate j, from a
//!   separate stream of [`PLOT_SAMPLES_PER_SIDE`] releases per side ([`PlotData`]); the verdict's
//!   samples are never touched.
//! - `bounds.png` (runs): every bound against what the claim allows; `profile.png` (profile
//!   claims): the claimed δ(ε) curve with the confirmed lower bounds; `sweep.png` (sweeps and
//!   `audit bench power`, one sweep report per (claim, n)); `wealth.png` (sequential runs).
//!
//! # Nothing half-written
//! A run is written into `DIR/.tmp-<run-id>-<pid>` and renamed to `DIR/<run-id>` at the end, so a
//! failure leaves no partial report; single files (re-rendering, `DIR/index.html`) are written to
//! a temporary name in the same directory and renamed. [`prepare_report_dir`] checks that `DIR`
//! is writable before an audit spends any time.
//!
//! # Run ids
//! `<mechanism>-seed<seed>-<hash>` (`sweep-<mechanism>-<parameter>-seed<seed>-<hash>` for sweeps),
//! where `<hash>` is 8 hex digits of the 64-bit FNV-1a hash of the report's deterministic JSON
//! (the `--json` output: no wall time). The same audit always gets the same id, and re-running it
//! replaces its directory.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::audit::{AuditReport, READABLE_SCHEMA_VERSIONS, SCHEMA_VERSION, Verdict};
use crate::error::{Error, Result};
use crate::mechanisms::{DatasetPair, Mechanism, Samples};
use crate::rng::{Seed, Stream, chunk_len};

pub mod html;
pub mod plot;
pub mod progress;
pub mod sequential;
pub mod text;

pub use html::escape_html;

/// Seed tag of the plot-only sample streams (ASCII "PLOT"); side `i` uses
/// `Stream::Other { tag: PLOT_TAG, index: i }`.
pub const PLOT_TAG: u64 = 0x504C_4F54;

/// Releases per side drawn for the distribution figures.
pub const PLOT_SAMPLES_PER_SIDE: usize = 20_000;

/// Coordinates of a vector output that get a distribution figure.
pub const MAX_PLOTTED_COORDINATES: usize = 4;

/// The report file in every run directory.
pub const REPORT_FILE: &str = "audit.json";

/// Samples for the distribution figures only: a modest number of releases per side from streams
/// of their own, never the samples behind the verdict.
#[derive(Debug, Default)]
pub struct PlotData {
    /// Releases on D and on D', when drawn.
    pub sides: Option<(Samples, Samples)>,
}

impl PlotData {
    /// No samples: the run gets no distribution figures (existing ones are kept on re-render).
    pub fn none() -> Self {
        Self::default()
    }

    /// Draws `n` releases per side of `mechanism` on `pair` from the plot streams of `seed`
    /// (side i from `Seed(seed).rng(Stream::Other { tag: PLOT_TAG, index: i })`, in chunks of
    /// [`chunk_len`] from that one generator). Checks dimensions and finiteness like the runner.
    pub fn draw(
        mechanism: &dyn Mechanism,
        pair: &DatasetPair,
        seed: u64,
        n: usize,
    ) -> Result<Self> {
        let side = |index: u64, dataset| -> Result<Samples> {
            let mut rng = Seed(seed).rng(Stream::Other {
                tag: PLOT_TAG,
                index,
            });
            let chunk = chunk_len(mechanism);
            let mut parts = Vec::with_capacity(n.div_ceil(chunk));
            let mut left = n;
            while left > 0 {
                let len = left.min(chunk);
                let s = mechanism.sample(dataset, len, &mut rng)?;
                if s.n() != len || s.dim() != mechanism.output_dim() {
                    return Err(Error::InvalidSamples(format!(
                        "mechanism {} returned {} × {} releases, expected {len} × {}",
                        mechanism.id(),
                        s.n(),
                        s.dim(),
                        mechanism.output_dim()
                    )));
                }
                if let Some((i, j, v)) = s.first_non_finite() {
                    return Err(Error::InvalidSamples(format!(
                        "mechanism {} released a non-finite value {v} (plot release {i}, coordinate {j})",
                        mechanism.id()
                    )));
                }
                parts.push(s);
                left -= len;
            }
            Ok(Samples::concat(&parts)?)
        };
        Ok(Self {
            sides: Some((side(0, pair.first())?, side(1, pair.second())?)),
        })
    }
}

/// One value and tester of a sweep: detections out of repeats.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The swept parameter's value.
    pub value: f64,
    /// The entry's catalogue status at this value.
    pub status: String,
    /// Tester name.
    pub tester: String,
    /// Audits that found a violation.
    pub detections: u64,
    /// Audits run.
    pub repeats: u64,
    /// Median over repeats of the largest (bound − allowed).
    pub median_margin: f64,
}

/// The claim audited at one value of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepClaim {
    /// The swept parameter's value.
    pub value: f64,
    /// The claim, in command-line form.
    pub claim: String,
}

/// The result of `audit sweep`: the source of truth for its HTML and figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// Layout version.
    pub schema_version: u32,
    /// Always `"sweep"` (tells a sweep's audit.json from a run's).
    pub kind: String,
    /// dp-audit version.
    pub tool_version: String,
    /// Mechanism id.
    pub mechanism: String,
    /// Parameters held fixed (`NAME=VALUE`).
    pub fixed_params: Vec<String>,
    /// The swept parameter.
    pub parameter: String,
    /// The claim audited at each value.
    pub claims: Vec<SweepClaim>,
    /// Testers, each a separate audit.
    pub testers: Vec<String>,
    /// Audits per value and tester.
    pub repeats: u64,
    /// Releases per side per audit.
    pub samples_per_side: usize,
    /// β of each audit.
    pub failure_probability_per_audit: f64,
    /// Seed of the whole sweep.
    pub seed: u64,
    /// One point per value and tester.
    pub points: Vec<SweepPoint>,
    /// Context for the reader (e.g. testers left out because they cannot test the claim).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Wall-clock seconds; not part of the run id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_seconds: Option<f64>,
}

impl SweepReport {
    /// The claim if it is the same at every value, else a note that it varies.
    pub fn claim_summary(&self) -> String {
        match self.claims.first() {
            Some(first) if self.claims.iter().all(|c| c.claim == first.claim) => {
                first.claim.clone()
            }
            Some(_) => "varies with the swept parameter (see the table)".into(),
            None => "(not recorded)".into(),
        }
    }
}

/// A row of `DIR/index.html`.
#[derive(Debug, Clone)]
pub struct IndexEntry {
    /// Directory name.
    pub run_id: String,
    /// `run`, `sweep over …` or `sequential run`.
    pub kind: String,
    /// Mechanism id.
    pub mechanism: String,
    /// Claim.
    pub claim: String,
    /// The verdict in words, or the sweep's detections.
    pub result: String,
    /// True for a violation (or any detection in a sweep).
    pub violation: bool,
    /// Seed.
    pub seed: u64,
    /// Releases per side.
    pub samples_per_side: usize,
}

fn io_err(context: String) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { context, source }
}

fn to_pretty<T: Serialize>(v: &T) -> Result<String> {
    Ok(serde_json::to_string_pretty(v).map_err(|e| Error::InvalidConfig(e.to_string()))? + "\n")
}

/// Creates `dir` if needed and checks that files can be created in it. Call it before an audit
/// so an unwritable report directory fails fast, naming the path.
pub fn prepare_report_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(io_err(format!(
        "cannot create the report directory {} (choose another with --report-dir DIR, or --no-report)",
        dir.display()
    )))?;
    let probe = dir.join(format!(".write-probe-{}", std::process::id()));
    fs::write(&probe, b"probe").map_err(io_err(format!(
        "the report directory {} is not writable (choose another with --report-dir DIR, or --no-report)",
        dir.display()
    )))?;
    fs::remove_file(&probe).map_err(io_err(format!("removing {}", probe.display())))?;
    Ok(())
}

/// 64-bit FNV-1a: a small, stable hash for run ids (std's hasher may change between releases).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Keeps `[A-Za-z0-9_-]`, turns everything else into `-`, at most 64 characters.
fn slug(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    let out = out.trim_matches('-').to_string();
    if out.is_empty() { "run".into() } else { out }
}

/// The report as `--json` prints it: no wall time, so the same seed gives the same bytes.
pub fn deterministic_json(report: &AuditReport) -> Result<String> {
    let mut r = report.clone();
    r.wall_time_seconds = None;
    to_pretty(&r)
}

/// The directory name of a run: `<mechanism>-seed<seed>-<hash of the deterministic JSON>`.
pub fn run_id(report: &AuditReport) -> Result<String> {
    let h = fnv1a64(deterministic_json(report)?.as_bytes());
    Ok(format!(
        "{}-seed{}-{:08x}",
        slug(&report.mechanism.id),
        report.seed,
        h >> 32
    ))
}

/// The directory name of a sweep.
pub fn sweep_id(sweep: &SweepReport) -> Result<String> {
    let mut s = sweep.clone();
    s.wall_time_seconds = None;
    let h = fnv1a64(to_pretty(&s)?.as_bytes());
    Ok(format!(
        "sweep-{}-{}-seed{}-{:08x}",
        slug(&sweep.mechanism),
        slug(&sweep.parameter),
        sweep.seed,
        h >> 32
    ))
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".tmp-{}-{name}", std::process::id()));
    let result = fs::write(&tmp, bytes)
        .map_err(io_err(format!("writing {}", tmp.display())))
        .and_then(|()| {
            fs::rename(&tmp, path).map_err(io_err(format!(
                "renaming {} to {}",
                tmp.display(),
                path.display()
            )))
        });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Removes a temporary run directory unless the run was committed.
struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Builds `dir/<id>` in `dir/.tmp-<id>-<pid>` with `fill`, then renames it into place (replacing
/// an earlier directory of the same id). On any error nothing is left behind.
fn write_dir_atomically(
    dir: &Path,
    id: &str,
    fill: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    let pid = std::process::id();
    let tmp = TempDir {
        path: dir.join(format!(".tmp-{id}-{pid}")),
        keep: false,
    };
    if tmp.path.exists() {
        fs::remove_dir_all(&tmp.path)
            .map_err(io_err(format!("removing stale {}", tmp.path.display())))?;
    }
    fs::create_dir(&tmp.path).map_err(io_err(format!("creating {}", tmp.path.display())))?;
    fill(&tmp.path)?;
    let target = dir.join(id);
    let old = TempDir {
        path: dir.join(format!(".old-{id}-{pid}")),
        keep: false,
    };
    // Retry a few times: another process may be replacing the same id at the same moment.
    let mut last_err = None;
    for _ in 0..5 {
        if target.exists()
            && let Err(e) = fs::rename(&target, &old.path)
        {
            last_err = Some(e);
            continue;
        }
        match fs::rename(&tmp.path, &target) {
            Ok(()) => {
                let mut tmp = tmp;
                tmp.keep = true;
                drop(old);
                return Ok(target);
            }
            Err(e) => last_err = Some(e),
        }
    }
    Err(Error::Io {
        context: format!("renaming {} to {}", tmp.path.display(), target.display()),
        source: last_err.unwrap_or_else(|| std::io::Error::other("rename failed")),
    })
}

/// The decisive bound's event boundary, if its description names one: (coordinate, threshold).
fn decisive_event(report: &AuditReport) -> Option<(usize, f64)> {
    report
        .bounds
        .iter()
        .filter(|b| b.event.is_some())
        .max_by(|a, b| (a.value - a.allowed).total_cmp(&(b.value - b.allowed)))
        .and_then(|b| plot::parse_event_threshold(&b.event.as_ref()?.description))
}

fn distribution_file(j: usize) -> String {
    format!("distribution-{j}.png")
}

/// Draws the bound figures (and the profile figure for profile claims) into `dir`.
fn draw_bound_figures(dir: &Path, report: &AuditReport) -> Result<()> {
    if !report.bounds.is_empty() {
        plot::bounds(&dir.join("bounds.png"), report)?;
    }
    let has_hockey = report
        .bounds
        .iter()
        .any(|b| matches!(b.divergence, crate::testers::Divergence::HockeyStick { .. }));
    if report.mechanism.claim.is_profile() && has_hockey {
        plot::profile(&dir.join("profile.png"), report)?;
    }
    Ok(())
}

fn draw_distribution_figures(dir: &Path, report: &AuditReport, plots: &PlotData) -> Result<()> {
    let Some((p, q)) = &plots.sides else {
        return Ok(());
    };
    let event = decisive_event(report);
    for j in 0..p.dim().min(q.dim()).min(MAX_PLOTTED_COORDINATES) {
        let pj: Vec<f64> = p.column(j).to_vec();
        let qj: Vec<f64> = q.column(j).to_vec();
        let ev = event.filter(|(c, _)| *c == j).map(|(_, t)| {
            (
                t,
                "boundary of event S (bound with the largest margin)".to_string(),
            )
        });
        plot::distribution(&dir.join(distribution_file(j)), j, &pj, &qj, ev)?;
    }
    Ok(())
}

/// The figures present in `dir`, in page order, with captions.
fn run_figures(dir: &Path, report: &AuditReport) -> Vec<html::Figure> {
    let mut figs = Vec::new();
    for j in 0..MAX_PLOTTED_COORDINATES {
        let file = distribution_file(j);
        if dir.join(&file).is_file() {
            figs.push(html::Figure {
                alt: format!("output distribution of coordinate {j} on D and D'"),
                caption: format!(
                    "Output coordinate {j}: releases of M(D) (blue) and M(D') (orange). These releases were drawn from a separate random stream for display only; \
                     the verdict uses its own fresh samples. A dashed line marks the boundary of the event S behind the bound with the largest margin, when that event is a threshold on this coordinate. \
                     At most the first {MAX_PLOTTED_COORDINATES} coordinates of an output are plotted."
                ),
                file,
            });
        }
    }
    if dir.join("profile.png").is_file() {
        figs.push(html::Figure {
            file: "profile.png".into(),
            alt: "claimed privacy profile and confirmed lower bounds".into(),
            caption: format!(
                "The claim {} allows at most the black curve δ(ε) at every ε. Each dot is a confirmed lower bound on the hockey-stick divergence at one ε \
                 (filled: M(D) vs M(D'); ring: the reverse); a dot above the curve is a violation (red).",
                report.mechanism.claim
            ),
        });
    }
    if dir.join("bounds.png").is_file() {
        figs.push(html::Figure {
            file: "bounds.png".into(),
            alt: "lower bounds against allowed values".into(),
            caption: "Every lower confidence bound (bar; red when it exceeds the claim) and what the claim allows for it (black line), in the order of the table.".into(),
        });
    }
    figs
}

/// Writes a run's report to `dir/<run-id>/` (audit.json, index.html, PNGs) and regenerates
/// `dir/index.html`. Returns the path of the run's `index.html`.
///
/// Without plot samples, distribution figures of an earlier report with the same id are kept.
pub fn write_run_report(dir: &Path, report: &AuditReport, plots: &PlotData) -> Result<PathBuf> {
    let id = run_id(report)?;
    let existing = dir.join(&id);
    let json = to_pretty(report)?;
    let target = write_dir_atomically(dir, &id, |tmp| {
        write_atomic(&tmp.join(REPORT_FILE), json.as_bytes())?;
        if plots.sides.is_some() {
            draw_distribution_figures(tmp, report, plots)?;
        } else {
            for j in 0..MAX_PLOTTED_COORDINATES {
                let f = existing.join(distribution_file(j));
                if f.is_file() {
                    fs::copy(&f, tmp.join(distribution_file(j)))
                        .map_err(io_err(format!("copying {}", f.display())))?;
                }
            }
        }
        draw_bound_figures(tmp, report)?;
        let page = html::render_run(report, &id, &run_figures(tmp, report));
        write_atomic(&tmp.join("index.html"), page.as_bytes())
    })?;
    write_index(dir)?;
    Ok(target.join("index.html"))
}

/// Writes a sweep's report to `dir/<sweep-id>/` (audit.json, sweep.png, index.html) and
/// regenerates `dir/index.html`. Returns the path of the sweep's `index.html`.
pub fn write_sweep_report(dir: &Path, sweep: &SweepReport) -> Result<PathBuf> {
    let id = sweep_id(sweep)?;
    let json = to_pretty(sweep)?;
    let target = write_dir_atomically(dir, &id, |tmp| {
        write_atomic(&tmp.join(REPORT_FILE), json.as_bytes())?;
        render_sweep_into(tmp, sweep, &id)
    })?;
    write_index(dir)?;
    Ok(target.join("index.html"))
}

fn sweep_figures() -> Vec<html::Figure> {
    vec![html::Figure {
        file: "sweep.png".into(),
        alt: "detections and margins against the swept parameter".into(),
        caption: "Top: the fraction of audits that found a violation at each value, per tester; the dashed line is β, the most a value where the claim holds can reach on average. \
                  Bottom: the median margin (largest bound minus what the claim allows); the black line at 0 is the claim's threshold. \
                  Filled markers: the catalogue says the mechanism is buggy at that value; hollow: correct.".into(),
    }]
}

fn render_sweep_into(dir: &Path, sweep: &SweepReport, id: &str) -> Result<()> {
    plot::sweep(&dir.join("sweep.png"), sweep)?;
    let page = html::render_sweep(sweep, id, &sweep_figures());
    write_atomic(&dir.join("index.html"), page.as_bytes())
}

/// A parsed report file.
#[derive(Debug, Clone)]
pub enum ReportFile {
    /// An audit run.
    Run(Box<AuditReport>),
    /// A sweep.
    Sweep(Box<SweepReport>),
    /// A sequential audit (`audit run --sequential`).
    Sequential(Box<crate::sequential::SequentialReport>),
}

/// Reads and checks a report file (a run's, a sweep's or a sequential run's audit.json, or
/// `audit run [--sequential] --json` output).
pub fn read_report(path: &Path) -> Result<ReportFile> {
    let text = fs::read_to_string(path).map_err(io_err(format!("reading {}", path.display())))?;
    let bad = |what: String| Error::InvalidConfig(format!("{}: {what}", path.display()));
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let version = value.get("schema_version").and_then(|v| v.as_u64());
    if !version.is_some_and(|v| READABLE_SCHEMA_VERSIONS.iter().any(|&r| u64::from(r) == v)) {
        return Err(bad(format!(
            "schema_version = {}; allowed: {} (this is dp-audit {}, writing version {SCHEMA_VERSION})",
            version.map_or("missing".to_string(), |v| v.to_string()),
            READABLE_SCHEMA_VERSIONS
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(" or "),
            env!("CARGO_PKG_VERSION")
        )));
    }
    if value.get("kind").and_then(|k| k.as_str()) == Some("sweep") {
        let s: SweepReport =
            serde_json::from_value(value).map_err(|e| bad(format!("not a sweep report: {e}")))?;
        Ok(ReportFile::Sweep(Box::new(s)))
    } else if value.get("mode").and_then(|k| k.as_str()) == Some("sequential") {
        let r: crate::sequential::SequentialReport = serde_json::from_value(value)
            .map_err(|e| bad(format!("not a sequential report: {e}")))?;
        r.mechanism
            .claim
            .validated()
            .map_err(|e| bad(format!("invalid claim: {e}")))?;
        Ok(ReportFile::Sequential(Box::new(r)))
    } else {
        let r: AuditReport =
            serde_json::from_value(value).map_err(|e| bad(format!("not an audit report: {e}")))?;
        r.mechanism
            .claim
            .validated()
            .map_err(|e| bad(format!("invalid claim: {e}")))?;
        Ok(ReportFile::Run(Box::new(r)))
    }
}

/// `audit report FILE`: re-renders a report without re-running anything.
///
/// If `file` is a run directory's `audit.json`, its `index.html` and bound figures are redrawn in
/// place (distribution figures need samples and are kept) and the parent's index is refreshed.
/// Any other file (e.g. saved `audit run --json` output) becomes a new run directory in
/// `report_dir`. Returns the path of the rendered `index.html`.
pub fn rerender(file: &Path, report_dir: &Path) -> Result<PathBuf> {
    let parsed = read_report(file)?;
    let in_place = file.file_name().and_then(|n| n.to_str()) == Some(REPORT_FILE);
    if !in_place {
        prepare_report_dir(report_dir)?;
        return match parsed {
            ReportFile::Run(r) => write_run_report(report_dir, &r, &PlotData::none()),
            ReportFile::Sweep(s) => write_sweep_report(report_dir, &s),
            ReportFile::Sequential(r) => sequential::write_sequential_report(report_dir, &r),
        };
    }
    let dir = file.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".into());
    match parsed {
        ReportFile::Run(r) => {
            draw_bound_figures(dir, &r)?;
            let page = html::render_run(&r, &id, &run_figures(dir, &r));
            write_atomic(&dir.join("index.html"), page.as_bytes())?;
        }
        ReportFile::Sweep(s) => render_sweep_into(dir, &s, &id)?,
        ReportFile::Sequential(r) => sequential::render_sequential_into(dir, &r, &id)?,
    }
    if let Some(parent) = dir.parent() {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        write_index(parent)?;
    }
    Ok(dir.join("index.html"))
}

fn index_entry(run_id: &str, parsed: ReportFile) -> IndexEntry {
    match parsed {
        ReportFile::Run(r) => IndexEntry {
            run_id: run_id.to_string(),
            kind: "run".into(),
            mechanism: r.mechanism.id.clone(),
            claim: r.mechanism.claim.to_string(),
            result: r.verdict.words().to_string(),
            violation: r.verdict == Verdict::Violation,
            seed: r.seed,
            samples_per_side: r.samples_per_side,
        },
        ReportFile::Sweep(s) => {
            let total: u64 = s.points.iter().map(|p| p.repeats).sum();
            let detected: u64 = s.points.iter().map(|p| p.detections).sum();
            IndexEntry {
                run_id: run_id.to_string(),
                kind: format!("sweep over {}", s.parameter),
                mechanism: s.mechanism.clone(),
                claim: s.claim_summary(),
                result: format!("{detected} of {total} audits found a violation"),
                violation: detected > 0,
                seed: s.seed,
                samples_per_side: s.samples_per_side,
            }
        }
        ReportFile::Sequential(r) => IndexEntry {
            run_id: run_id.to_string(),
            kind: "sequential run".into(),
            mechanism: r.mechanism.id.clone(),
            claim: r.mechanism.claim.to_string(),
            result: match r.stopping_time {
                Some(t) => format!("{} (stopped at {t})", r.verdict.words()),
                None => r.verdict.words().to_string(),
            },
            violation: r.verdict == Verdict::Violation,
            seed: r.seed,
            samples_per_side: r.samples_per_side,
        },
    }
}

/// Regenerates `dir/index.html` from every `dir/*/audit.json`. Returns its path.
pub fn write_index(dir: &Path) -> Result<PathBuf> {
    let mut entries = Vec::new();
    let mut unreadable = Vec::new();
    let listing = fs::read_dir(dir).map_err(io_err(format!("listing {}", dir.display())))?;
    let mut names: Vec<String> = listing
        .filter_map(|d| d.ok())
        .filter(|d| d.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|d| d.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    for name in names {
        let file = dir.join(&name).join(REPORT_FILE);
        if !file.is_file() {
            continue;
        }
        match read_report(&file) {
            Ok(parsed) => entries.push(index_entry(&name, parsed)),
            Err(_) => unreadable.push(name),
        }
    }
    let path = dir.join("index.html");
    write_atomic(&path, html::render_index(&entries, &unreadable).as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests;
