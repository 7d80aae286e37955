//! Reports on disk: `DIR/<run-id>/audit.json` (the source of truth), `index.html` rendered from
//! it, PNG figures, and `DIR/index.html` listing every run in `DIR`.
//!
//! # Layout of a run directory
//! - `audit.json`: the [`AuditReport`] (or a [`SweepReport`], marked `"kind": "sweep"`, or a
//!   [`SequentialReport`](crate::audit::sequential::SequentialReport), marked `"mode": "sequential"`),
//!   pretty-printed.
//! - `index.html`: offline page (inline CSS, no script, no network), every string escaped.
//! - `distribution-<j>.png` (runs): releases of M(D) and M(D') on coordinate j, from a separate
//!   stream of [`PLOT_SAMPLES_PER_SIDE`] releases per side ([`PlotData`]); the verdict's samples
//!   are never touched. At most [`MAX_PLOTTED_COORDINATES`] coordinates, chosen by
//!   [`plotted_coordinates`]: those the event of the decisive bound uses first (svt3's evidence
//!   is in coordinate 19), then the lowest others.
//! - `bounds.png` (runs): every bound against what the claim allows; `profile.png` (profile
//!   claims): the claimed δ(ε) curve with the confirmed lower bounds; `sweep.png` (sweeps and
//!   `audit bench power`, one sweep report per (claim, n)); `wealth.png` (sequential runs).
//!
//! # Nothing half-written
//! A run is written into `DIR/.tmp-<pid>-<run-id>` and renamed to `DIR/<run-id>` at the end, so
//! a failure leaves no partial report; single files (re-rendering, `DIR/index.html`) are written
//! to a temporary name `.tmp-<pid>-<name>` in the same directory and renamed. A process killed
//! mid-write (e.g. by a timeout) cannot clean up after itself: [`prepare_report_dir`] and every
//! report write remove `.tmp-*`/`.old-*` entries whose process is gone (no `/proc/<pid>`) or
//! that are older than [`STALE_AFTER`] ([`remove_stale_temporaries`]). [`prepare_report_dir`]
//! also checks that `DIR` is writable before an audit spends any time.
//!
//! # Run ids
//! `<mechanism>-seed<seed>-<hash>` (`sweep-<mechanism>-<parameter>-seed<seed>-<hash>` for sweeps),
//! where `<hash>` is 8 hex digits of the 64-bit FNV-1a hash of the report's deterministic JSON
//! (the `--json` output: no wall time). The same audit always gets the same id, and re-running it
//! replaces its directory.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::audit::{AuditReport, READABLE_SCHEMA_VERSIONS, Verdict};
use crate::error::{Error, Result};
use crate::mechanisms::{DatasetPair, Mechanism, Samples};
use crate::rng::{Seed, Stream, chunk_len};

pub mod bayesian;
pub mod html;
pub mod one_run;
pub mod output;
mod payload;
pub mod plot;
pub mod progress;
mod record;
pub mod reproduce;
pub mod sequential;
pub mod table;
pub mod text;

pub use html::escape_html;

/// Numbers as people read them (one implementation for the whole tool, see
/// [`crate::mechanisms::math::readable`]).
pub use crate::mechanisms::math::readable;

/// `x` in scientific notation with `significant` digits (at least 1), trailing zeros of the
/// mantissa dropped: `scientific(1.5e-5, 3)` is `1.5e-5`, `scientific(1e-5, 3)` is `1e-5`.
pub(crate) fn scientific(x: f64, significant: usize) -> String {
    let s = format!("{:.*e}", significant.max(1) - 1, x);
    match s.split_once('e') {
        Some((m, exp)) if m.contains('.') => {
            format!("{}e{exp}", m.trim_end_matches('0').trim_end_matches('.'))
        }
        _ => s,
    }
}

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
    /// Median over repeats of the empirical ε (the ε-estimate stage, or the verdict's events;
    /// 0 for an audit with none), at `epsilon_delta`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_epsilon: Option<f64>,
    /// The δ of `median_epsilon`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epsilon_delta: Option<f64>,
}

/// Confidence of the per-point detection-rate intervals of sweep reports.
pub const DETECTION_CONFIDENCE: f64 = 0.95;

impl SweepPoint {
    /// Two-sided [`DETECTION_CONFIDENCE`] Clopper–Pearson interval on the probability that one
    /// audit at this point finds a violation, from `detections` of `repeats` (exact binomial;
    /// (0, 1) when there are no repeats).
    pub fn detection_interval(&self) -> (f64, f64) {
        let (k, r) = (self.detections, self.repeats);
        if r == 0 || k > r {
            return (0.0, 1.0);
        }
        let a = (1.0 - DETECTION_CONFIDENCE) / 2.0;
        (
            crate::bounds::clopper_pearson_lower(k, r, a),
            crate::bounds::clopper_pearson_upper(k, r, a),
        )
    }

    /// True when the whole interval lies above `beta`: the detections are more than a mechanism
    /// keeping its claim (which each audit flags with probability at most β) plausibly gives.
    /// False means "consistent with β" — which does not show the claim holds.
    pub fn above_beta(&self, beta: f64) -> bool {
        self.detection_interval().0 > beta
    }
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
    /// The command that re-runs exactly this sweep, when it came from the CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
}

impl SweepReport {
    /// The points whose detection interval lies above β per audit ([`SweepPoint::above_beta`]).
    pub fn points_above_beta(&self) -> impl Iterator<Item = &SweepPoint> {
        self.points
            .iter()
            .filter(|p| p.above_beta(self.failure_probability_per_audit))
    }

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
    /// True for a violation (in a sweep: a detection rate above β at some point).
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

/// Age after which a `.tmp-*` or `.old-*` entry of a report directory is removed even if the
/// process that made it still seems alive (process ids are reused); no report takes this long to
/// write.
pub const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// The process id recorded in a temporary name `.tmp-<pid>-…` or `.old-<pid>-…`.
fn temporary_pid(name: &str) -> Option<u32> {
    let rest = name
        .strip_prefix(".tmp-")
        .or_else(|| name.strip_prefix(".old-"))
        .or_else(|| name.strip_prefix(".write-probe-"))?;
    // `.tmp-<pid>-…`; reports written before dp-audit 0.x put the pid last (`.tmp-<id>-<pid>`).
    let first = rest.split('-').next()?;
    first
        .parse()
        .ok()
        .or_else(|| rest.rsplit('-').next()?.parse().ok())
}

/// True when process `pid` is known to be gone: on systems with `/proc`, no `/proc/<pid>`.
/// Where `/proc` is missing nothing is known, and only age decides.
fn process_gone(pid: u32) -> bool {
    pid != std::process::id()
        && Path::new("/proc/self").exists()
        && !Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes the leftovers of interrupted report writes in `dir`: entries named `.tmp-*`,
/// `.old-*` or `.write-probe-*` whose recorded process is gone or that were last modified more
/// than [`STALE_AFTER`] ago (entries of live writers are younger and kept). Returns how many
/// were removed; entries that cannot be removed are skipped (the next run tries again).
pub fn remove_stale_temporaries(dir: &Path) -> usize {
    let Ok(listing) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in listing.filter_map(|d| d.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with(".tmp-")
            || name.starts_with(".old-")
            || name.starts_with(".write-probe-"))
        {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        let dead = temporary_pid(&name).is_some_and(process_gone);
        if !(old || dead) {
            continue;
        }
        let path = entry.path();
        let ok = if entry.file_type().is_ok_and(|t| t.is_dir()) {
            fs::remove_dir_all(&path).is_ok()
        } else {
            fs::remove_file(&path).is_ok()
        };
        removed += usize::from(ok);
    }
    removed
}

/// Creates `dir` if needed and checks that files can be created in it. Call it before an audit
/// so an unwritable report directory fails fast, naming the path. Also removes the leftovers of
/// interrupted earlier writes ([`remove_stale_temporaries`]).
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
    remove_stale_temporaries(dir);
    Ok(())
}

/// 64-bit FNV-1a: a small, stable hash for run ids (std's hasher may change between releases).
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
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

/// Builds `dir/<id>` in `dir/.tmp-<pid>-<id>` with `fill`, then renames it into place (replacing
/// an earlier directory of the same id). On any error nothing is left behind.
fn write_dir_atomically(
    dir: &Path,
    id: &str,
    fill: impl FnOnce(&Path) -> Result<()>,
) -> Result<PathBuf> {
    remove_stale_temporaries(dir);
    let pid = std::process::id();
    let tmp = TempDir {
        path: dir.join(format!(".tmp-{pid}-{id}")),
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
        path: dir.join(format!(".old-{pid}-{id}")),
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

/// The bound whose event the distribution figures follow: the one with the largest margin
/// (bound − allowed) among bounds with an event, i.e. the violating bound when there is one.
fn decisive_bound(report: &AuditReport) -> Option<&crate::audit::BoundRecord> {
    report
        .bounds
        .iter()
        .filter(|b| b.event.is_some())
        .max_by(|a, b| (a.value - a.allowed).total_cmp(&(b.value - b.allowed)))
}

/// The coordinates that get a distribution figure, in page order, each with the event
/// boundaries to mark on it: first the coordinates the decisive bound's event thresholds
/// (e.g. `coordinate 19 ≤ t`), then the other coordinates it names (e.g. the pattern of
/// `coordinates [0, …, 9] = …`), then the lowest remaining ones, at most
/// [`MAX_PLOTTED_COORDINATES`] in all and all below `dim` (when known).
pub fn plotted_coordinates(report: &AuditReport, dim: Option<usize>) -> Vec<(usize, Vec<f64>)> {
    let named = decisive_bound(report)
        .and_then(|b| b.event.as_ref())
        .map(|ev| plot::event_coordinates(&ev.description))
        .unwrap_or_default();
    let fits = |j: usize| dim.is_none_or(|d| j < d);
    let mut out: Vec<(usize, Vec<f64>)> = Vec::new();
    let thresholded = named.iter().filter(|(_, t)| t.is_some());
    let others = named.iter().filter(|(_, t)| t.is_none());
    for &(j, t) in thresholded.chain(others) {
        if out.len() == MAX_PLOTTED_COORDINATES || !fits(j) {
            continue;
        }
        match out.iter_mut().find(|(c, _)| *c == j) {
            Some((_, ts)) => ts.extend(t),
            None => out.push((j, t.into_iter().collect())),
        }
    }
    let mut j = 0;
    while out.len() < MAX_PLOTTED_COORDINATES && fits(j) && dim.is_some() {
        if !out.iter().any(|(c, _)| *c == j) {
            out.push((j, Vec::new()));
        }
        j += 1;
    }
    out
}

fn distribution_file(j: usize) -> String {
    format!("distribution-{j}.png")
}

/// The coordinate of a `distribution-<j>.png` file name.
fn distribution_coordinate(name: &str) -> Option<usize> {
    name.strip_prefix("distribution-")?
        .strip_suffix(".png")?
        .parse()
        .ok()
}

/// The coordinates with a distribution figure in `dir`, in page order: those of
/// [`plotted_coordinates`] first, then any others by coordinate.
fn distribution_figures_in(dir: &Path, report: &AuditReport) -> Vec<usize> {
    let mut present: Vec<usize> = fs::read_dir(dir)
        .map(|l| {
            l.filter_map(|d| d.ok())
                .filter_map(|d| distribution_coordinate(&d.file_name().to_string_lossy()))
                .collect()
        })
        .unwrap_or_default();
    present.sort_unstable();
    let mut order: Vec<usize> = plotted_coordinates(report, None)
        .into_iter()
        .map(|(j, _)| j)
        .filter(|j| present.contains(j))
        .collect();
    for j in present {
        if !order.contains(&j) {
            order.push(j);
        }
    }
    order
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
    let dim = p.dim().min(q.dim());
    for (j, thresholds) in plotted_coordinates(report, Some(dim)) {
        let pj: Vec<f64> = p.column(j).to_vec();
        let qj: Vec<f64> = q.column(j).to_vec();
        let events: Vec<(f64, String)> = thresholds
            .into_iter()
            .map(|t| {
                (
                    t,
                    "boundary of event S (bound with the largest margin)".to_string(),
                )
            })
            .collect();
        let feature = plot::feature_name(report.output_transform, Some(dim), j);
        plot::distribution(
            &dir.join(distribution_file(j)),
            j,
            &feature,
            &pj,
            &qj,
            &events,
        )?;
    }
    Ok(())
}

/// The figures present in `dir`, in page order, with captions.
/// `dim` is the dimension of the plotted releases when known (it names transformed features).
fn run_figures(dir: &Path, report: &AuditReport, dim: Option<usize>) -> Vec<html::Figure> {
    let mut figs = Vec::new();
    let event = decisive_bound(report)
        .and_then(|b| b.event.as_ref())
        .map(|ev| ev.description.clone());
    for j in distribution_figures_in(dir, report) {
        let named = event
            .as_ref()
            .is_some_and(|d| plot::event_coordinates(d).iter().any(|(c, _)| *c == j));
        let why = if named {
            "The event S behind the bound with the largest margin uses this coordinate"
        } else {
            "This coordinate is plotted for context (the event behind the bound with the largest margin does not name it)"
        };
        let feature = match (report.output_transform, dim) {
            (Some(t), None)
                if !matches!(
                    t,
                    crate::testers::Transform::None | crate::testers::Transform::Tanh { .. }
                ) =>
            {
                format!("a feature of the {t} transform, named in the figure's title")
            }
            (t, d) => plot::feature_name(t, d, j),
        };
        figs.push(html::Figure {
            file: distribution_file(j),
            alt: format!("output distribution of coordinate {j}, {feature}, on D and D'"),
            caption: format!(
                "Coordinate {j}, {feature}: releases of M(D) (blue) and M(D') (orange). {why}; \
                 a dashed line marks the event's boundary when the event is a threshold on this coordinate. \
                 These releases were drawn from a separate random stream for display only; the verdict uses its own fresh samples. \
                 At most {MAX_PLOTTED_COORDINATES} coordinates are plotted: those the event names first."
            ),
        });
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
    let plot_dim = plots.sides.as_ref().map(|(p, q)| p.dim().min(q.dim()));
    let json = to_pretty(&crate::record::ResultRecord::from_audit(report))?;
    let target = write_dir_atomically(dir, &id, |tmp| {
        write_atomic(&tmp.join(REPORT_FILE), json.as_bytes())?;
        if plots.sides.is_some() {
            draw_distribution_figures(tmp, report, plots)?;
        } else {
            for j in distribution_figures_in(&existing, report) {
                let f = existing.join(distribution_file(j));
                fs::copy(&f, tmp.join(distribution_file(j)))
                    .map_err(io_err(format!("copying {}", f.display())))?;
            }
        }
        draw_bound_figures(tmp, report)?;
        let page = html::render_run(report, &id, &run_figures(tmp, report, plot_dim));
        write_atomic(&tmp.join("index.html"), page.as_bytes())
    })?;
    write_index(dir)?;
    Ok(target.join("index.html"))
}

/// Writes a sweep's report to `dir/<sweep-id>/` (audit.json, sweep.png, index.html) and
/// regenerates `dir/index.html`. Returns the path of the sweep's `index.html`.
pub fn write_sweep_report(dir: &Path, sweep: &SweepReport) -> Result<PathBuf> {
    let id = sweep_id(sweep)?;
    let json = to_pretty(&crate::record::ResultRecord::from_sweep(sweep))?;
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
        caption: "Top: the fraction of audits that found a violation at each value, per tester, with its exact 95% Clopper–Pearson interval (vertical bar); \
                  the dashed line is β per audit, the most a value where the claim holds can reach on average: a point whose whole interval lies above it is evidence against the claim there. \
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
    Sequential(Box<crate::audit::sequential::SequentialReport>),
    /// A one-run audit (`audit one-run`).
    OneRun(Box<one_run::OneRunReport>),
    /// A detection table (`audit bench table`).
    Table(Box<table::TableReport>),
}

/// One field of a report file checked against what it may hold: `Err("NAME = VALUE; allowed:
/// WHAT")` when `ok(value)` is false.
fn check(name: &str, value: f64, allowed: &str, ok: bool) -> std::result::Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("{name} = {}; allowed: {allowed}", readable(value)))
    }
}

fn check_probability(name: &str, p: f64) -> std::result::Result<(), String> {
    check(name, p, "a number in (0, 1)", p > 0.0 && p < 1.0)
}

fn check_finite(name: &str, x: f64) -> std::result::Result<(), String> {
    check(
        name,
        x,
        "a finite number",
        x.is_finite() && x.abs() <= f64::MAX / 4.0,
    )
}

fn check_divergence(name: &str, d: &crate::testers::Divergence) -> std::result::Result<(), String> {
    use crate::testers::Divergence;
    match *d {
        Divergence::HockeyStick { epsilon } => check(
            &format!("{name}.epsilon"),
            epsilon,
            "a finite number ≥ 0",
            epsilon.is_finite() && epsilon >= 0.0,
        ),
        Divergence::Renyi { alpha } => check(
            &format!("{name}.alpha"),
            alpha,
            "a finite number > 1",
            alpha.is_finite() && alpha > 1.0,
        ),
        #[allow(unreachable_patterns)]
        _ => Ok(()),
    }
}

/// Checks the numbers of a run's bounds: a lower bound finite (at most 1 for a hockey-stick
/// divergence, which never exceeds 1), what the claim allows finite and ≥ 0 (at most 1 for
/// hockey-stick), each bound's β in (0, 1), the event's counts within its sample sizes and its
/// probability bounds in [0, 1].
fn validate_bounds(bounds: &[crate::audit::BoundRecord]) -> std::result::Result<(), String> {
    use crate::testers::Divergence;
    for (i, b) in bounds.iter().enumerate() {
        let name = |f: &str| format!("bounds[{i}].{f}");
        let hockey = matches!(b.divergence, Divergence::HockeyStick { .. });
        check_divergence(&name("divergence"), &b.divergence)?;
        if hockey {
            check(
                &name("value"),
                b.value,
                "a number ≤ 1 (a hockey-stick divergence is at most 1)",
                b.value.is_finite() && b.value <= 1.0,
            )?;
            check(
                &name("allowed"),
                b.allowed,
                "a number in [0, 1]",
                (0.0..=1.0).contains(&b.allowed),
            )?;
        } else {
            check_finite(&name("value"), b.value)?;
            check(
                &name("allowed"),
                b.allowed,
                "a finite number ≥ 0",
                b.allowed >= 0.0 && b.allowed.is_finite() && b.allowed <= f64::MAX / 4.0,
            )?;
        }
        check_finite(&name("point_estimate"), b.point_estimate)?;
        check_probability(&name("failure_probability"), b.failure_probability)?;
        if let Some(ev) = &b.event {
            // The conditional test's U and W count releases of both sides (an event of each
            // direction), so each is at most the two sides' releases together.
            let too_many = match &ev.contrast {
                Some(_) => {
                    let both = ev.n_p.saturating_add(ev.n_q);
                    ev.count_p > both || ev.count_q > both
                }
                None => ev.count_p > ev.n_p || ev.count_q > ev.n_q,
            };
            if too_many {
                return Err(format!(
                    "{} = {} of {} and {} of {}; allowed: counts at most their sample sizes (U and W of the conditional test: at most both sides' releases together)",
                    name("event counts"),
                    ev.count_p,
                    ev.n_p,
                    ev.count_q,
                    ev.n_q
                ));
            }
            for (f, v) in [("event.p_lower", ev.p_lower), ("event.q_upper", ev.q_upper)] {
                if let Some(v) = v {
                    check(&name(f), v, "a number in [0, 1]", (0.0..=1.0).contains(&v))?;
                }
            }
            if let Some(c) = &ev.contrast {
                check(
                    &name("event.contrast.lambda"),
                    c.lambda,
                    "a finite number > 0",
                    c.lambda.is_finite() && c.lambda > 0.0,
                )?;
                check_finite(&name("event.contrast.mu_w_lower"), c.mu_w_lower)?;
            }
        }
    }
    Ok(())
}

fn check_wall_time(t: Option<f64>) -> std::result::Result<(), String> {
    match t {
        Some(t) => check(
            "wall_time_seconds",
            t,
            "a finite number ≥ 0",
            t.is_finite() && t >= 0.0,
        ),
        None => Ok(()),
    }
}

/// Checks every number of a run report a page or figure shows (see [`read_report`]).
pub fn validate_run(r: &AuditReport) -> std::result::Result<(), String> {
    check_probability("beta.total", r.beta.total)?;
    check(
        "beta.per_bound",
        r.beta.per_bound,
        "a number in (0, beta.total]",
        r.beta.per_bound > 0.0 && r.beta.per_bound <= r.beta.total,
    )?;
    validate_bounds(&r.bounds)?;
    // The verdict is the bounds' to decide: a file whose verdict or violation flags disagree
    // with its own numbers (edited by hand, or corrupt) is refused rather than rendered.
    for (i, b) in r.bounds.iter().enumerate() {
        if b.violation != crate::testers::violates(b.value, b.allowed) {
            return Err(format!(
                "bounds[{i}].violation = {} but its value {} {} its allowance {}; allowed: a report whose flags follow from its numbers (re-run the audit)",
                b.violation,
                b.value,
                if b.value > b.allowed {
                    "exceeds"
                } else {
                    "does not exceed"
                },
                b.allowed
            ));
        }
    }
    // Each bound's value from the counts stored with it (a bound edited without its counts).
    for (i, b) in r.bounds.iter().enumerate() {
        if let Some(e) = &b.event {
            e.check_counts(b.divergence, b.failure_probability, b.value)
                .map_err(|w| format!("bounds[{i}].{w}"))?;
        }
    }
    let any = r.bounds.iter().any(|b| b.violation);
    if any != (r.verdict == crate::audit::Verdict::Violation) {
        return Err(format!(
            "verdict = {:?} but {} of its bounds exceeds what the claim allows; allowed: a report whose verdict follows from its bounds (re-run the audit)",
            r.verdict.words(),
            if any { "one" } else { "none" }
        ));
    }
    if let Some(emp) = &r.empirical_epsilon {
        check(
            "empirical_epsilon.lower_bound",
            emp.lower_bound,
            "a finite number ≥ 0",
            emp.lower_bound.is_finite() && emp.lower_bound >= 0.0 && emp.lower_bound <= 1e300,
        )?;
        check(
            "empirical_epsilon.delta",
            emp.delta,
            "a number in [0, 1)",
            (0.0..1.0).contains(&emp.delta),
        )?;
        check_probability("empirical_epsilon.confidence", emp.confidence)?;
        if let Some(mu) = emp.mu_lower {
            check(
                "empirical_epsilon.mu_lower",
                mu,
                "a finite number > 0",
                mu.is_finite() && mu > 0.0,
            )?;
        }
    }
    check_wall_time(r.wall_time_seconds)
}

/// Checks every number of a sweep report: β per audit in (0, 1), at least one repeat, each
/// point's value and median margin finite and its detections at most its repeats.
pub fn validate_sweep(s: &SweepReport) -> std::result::Result<(), String> {
    check_probability(
        "failure_probability_per_audit",
        s.failure_probability_per_audit,
    )?;
    if s.repeats == 0 {
        return Err("repeats = 0; allowed: a whole number ≥ 1".into());
    }
    for (i, p) in s.points.iter().enumerate() {
        check_finite(&format!("points[{i}].value"), p.value)?;
        check_finite(&format!("points[{i}].median_margin"), p.median_margin)?;
        if p.repeats == 0 || p.detections > p.repeats {
            return Err(format!(
                "points[{i}]: detections = {}, repeats = {}; allowed: repeats ≥ 1 and detections ≤ repeats",
                p.detections, p.repeats
            ));
        }
    }
    for (i, c) in s.claims.iter().enumerate() {
        check_finite(&format!("claims[{i}].value"), c.value)?;
    }
    check_wall_time(s.wall_time_seconds)
}

/// Checks every number of a sequential report: β in (0, 1), log-wealths and the threshold
/// finite, the threshold > 0.
pub fn validate_sequential(
    r: &crate::audit::sequential::SequentialReport,
) -> std::result::Result<(), String> {
    check_probability("failure_probability", r.failure_probability)?;
    check_finite("log_wealth", r.log_wealth)?;
    check(
        "log_threshold",
        r.log_threshold,
        "a finite number > 0",
        r.log_threshold.is_finite() && r.log_threshold > 0.0 && r.log_threshold <= 1e300,
    )?;
    for (i, b) in r.batches.iter().enumerate() {
        check_finite(&format!("batches[{i}].log_wealth"), b.log_wealth)?;
    }
    // The threshold is ln(1/β), the verdict and the stopping time follow from the wealth: a
    // file edited by hand (or corrupt) is refused rather than rendered.
    let threshold = -r.failure_probability.ln();
    if (r.log_threshold - threshold).abs() > 1e-9 * threshold.max(1.0) {
        return Err(format!(
            "log_threshold = {} but failure_probability = {} gives ln(1/β) = {threshold}; allowed: a report whose threshold is its β's (re-run the audit)",
            r.log_threshold, r.failure_probability
        ));
    }
    // The stored wealth is rounded down after the comparison: a slack of 1e-9 relative.
    let slack = 1e-9 * r.log_threshold.abs().max(1.0);
    let violation = r.verdict == Verdict::Violation;
    let reached = r.log_wealth >= r.log_threshold;
    let contradicts = (violation && r.log_wealth < r.log_threshold - slack)
        || (!violation && r.log_wealth > r.log_threshold + slack)
        || violation != r.stopping_time.is_some();
    if contradicts {
        return Err(format!(
            "verdict = {:?} (stopping time {}) but log_wealth = {} {} log_threshold = {}; allowed: a report whose verdict follows from its wealth (re-run the audit)",
            r.verdict.words(),
            r.stopping_time
                .map_or("none".to_string(), |t| t.to_string()),
            r.log_wealth,
            if reached { "reaches" } else { "is below" },
            r.log_threshold
        ));
    }
    check_wall_time(r.wall_time_seconds)
}

/// Reads and checks a report file (a run's, a sweep's or a sequential run's audit.json, or
/// `audit run [--sequential] --json` output).
///
/// Besides the layout, every number a page or figure shows is checked ([`validate_run`],
/// [`validate_sweep`], [`validate_sequential`]: probabilities in (0, 1), what a claim allows
/// ≥ 0, values finite); an error names the file, the field, its value and what is allowed.
pub fn read_report(path: &Path) -> Result<ReportFile> {
    let text = crate::sources::text::read_text(path)
        .map_err(io_err(format!("reading {}", path.display())))?;
    let bad = |what: String| Error::InvalidConfig(format!("{}: {what}", path.display()));
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let value = record_payload(value).map_err(bad)?;
    let version = value.get("schema_version").and_then(|v| v.as_u64());
    if !version.is_some_and(|v| READABLE_SCHEMA_VERSIONS.iter().any(|&r| u64::from(r) == v)) {
        return Err(bad(format!(
            "schema_version = {}; allowed: {} (this is dp-audit {}, writing records of version {})",
            version.map_or("missing".to_string(), |v| v.to_string()),
            readable_versions(),
            env!("CARGO_PKG_VERSION"),
            crate::record::RECORD_SCHEMA_VERSION
        )));
    }
    if value.get("kind").and_then(|k| k.as_str()) == Some("layered-search") {
        return Err(bad(
            "this is the bare report of a layered search, not a result record; allowed: the --json output of `audit run` (a result record) or the audit.json of its run directory".into(),
        ));
    }
    if value.get("kind").and_then(|k| k.as_str()) == Some("sweep") {
        let s: SweepReport =
            serde_json::from_value(value).map_err(|e| bad(format!("not a sweep report: {e}")))?;
        validate_sweep(&s).map_err(bad)?;
        Ok(ReportFile::Sweep(Box::new(s)))
    } else if value.get("mode").and_then(|k| k.as_str()) == Some("one-run") {
        let r: one_run::OneRunReport =
            serde_json::from_value(value).map_err(|e| bad(format!("not a one-run report: {e}")))?;
        one_run::validate(&r).map_err(bad)?;
        Ok(ReportFile::OneRun(Box::new(r)))
    } else if value.get("mode").and_then(|k| k.as_str()) == Some("table") {
        let r: table::TableReport =
            serde_json::from_value(value).map_err(|e| bad(format!("not a table report: {e}")))?;
        table::validate(&r).map_err(bad)?;
        Ok(ReportFile::Table(Box::new(r)))
    } else if value.get("mode").and_then(|k| k.as_str()) == Some("sequential") {
        let r: crate::audit::sequential::SequentialReport = serde_json::from_value(value)
            .map_err(|e| bad(format!("not a sequential report: {e}")))?;
        r.mechanism
            .claim
            .validated()
            .map_err(|e| bad(format!("invalid claim: {e}")))?;
        validate_sequential(&r).map_err(bad)?;
        Ok(ReportFile::Sequential(Box::new(r)))
    } else {
        let r: AuditReport =
            serde_json::from_value(value).map_err(|e| bad(format!("not an audit report: {e}")))?;
        r.mechanism
            .claim
            .validated()
            .map_err(|e| bad(format!("invalid claim: {e}")))?;
        validate_run(&r).map_err(bad)?;
        Ok(ReportFile::Run(Box::new(r)))
    }
}

/// The layouts `audit report` reads, in words: the result record's version, and the run
/// reports' versions from before it.
pub fn readable_versions() -> String {
    format!(
        "{} (a result record: `--json` output or a run directory's audit.json), or {} (the reports written before it)",
        crate::record::RECORD_SCHEMA_VERSION,
        READABLE_SCHEMA_VERSIONS
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(" or ")
    )
}

/// The payload a report page is drawn from: a result record's page (version
/// [`crate::record::RECORD_SCHEMA_VERSION`]), checked against its own section
/// ([`payload::page_of`]), or `value` itself when it is a report of version 1 or 2 (written
/// before the one record).
fn record_payload(value: serde_json::Value) -> std::result::Result<serde_json::Value, String> {
    use crate::record::{RECORD_SCHEMA_VERSION, ResultRecord};
    let version = value.get("schema_version").and_then(|v| v.as_u64());
    if version != Some(u64::from(RECORD_SCHEMA_VERSION)) || value.get("section").is_none() {
        return Ok(value);
    }
    let rec: ResultRecord = serde_json::from_value(value).map_err(|e| {
        format!("not a result record (schema version {RECORD_SCHEMA_VERSION}): {e}")
    })?;
    payload::page_of(&rec)
}

/// `audit report FILE`: re-renders a report without re-running anything.
///
/// If `file` is a run directory's `audit.json`, its `index.html` and bound figures are redrawn in
/// place (distribution figures need samples and are kept) and the parent's index is refreshed.
/// Any other file (e.g. saved `audit run --json` output) becomes a new run directory in
/// `report_dir`. Returns the path of the rendered `index.html`.
pub fn rerender(file: &Path, report_dir: &Path) -> Result<PathBuf> {
    rerender_with_text(file, report_dir).map(|(index, _)| index)
}

/// What the terminal shows of a report read back: a run's or a sequential audit's text as the
/// audit printed it, and the verdict in words for the others.
pub fn report_text(parsed: &ReportFile) -> String {
    match parsed {
        ReportFile::Run(r) => text::render_text(r),
        ReportFile::Sequential(r) => crate::audit::sequential::render_text(r),
        ReportFile::Sweep(s) => format!(
            "sweep        {}
",
            crate::record::ResultRecord::from_sweep(s).verdict_words
        ),
        ReportFile::OneRun(r) => format!(
            "verdict      {}
",
            crate::record::ResultRecord::from_one_run_page(r).verdict_words
        ),
        ReportFile::Table(r) => format!(
            "table        {}
",
            crate::record::ResultRecord::from_table(r).verdict_words
        ),
    }
}

/// [`rerender`], also returning the report's text ([`report_text`]).
pub fn rerender_with_text(file: &Path, report_dir: &Path) -> Result<(PathBuf, String)> {
    let parsed = read_report(file)?;
    let words = report_text(&parsed);
    let index = rerender_parsed(file, report_dir, parsed)?;
    Ok((index, words))
}

fn rerender_parsed(file: &Path, report_dir: &Path, parsed: ReportFile) -> Result<PathBuf> {
    let in_place = file.file_name().and_then(|n| n.to_str()) == Some(REPORT_FILE);
    if !in_place {
        prepare_report_dir(report_dir)?;
        return match parsed {
            ReportFile::Run(r) => write_run_report(report_dir, &r, &PlotData::none()),
            ReportFile::Sweep(s) => write_sweep_report(report_dir, &s),
            ReportFile::Sequential(r) => sequential::write_sequential_report(report_dir, &r),
            ReportFile::OneRun(r) => one_run::write_one_run_report(report_dir, &r),
            ReportFile::Table(r) => table::write_table_report(report_dir, &r),
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
            let page = html::render_run(&r, &id, &run_figures(dir, &r, None));
            write_atomic(&dir.join("index.html"), page.as_bytes())?;
        }
        ReportFile::Sweep(s) => render_sweep_into(dir, &s, &id)?,
        ReportFile::Sequential(r) => sequential::render_sequential_into(dir, &r, &id)?,
        ReportFile::OneRun(r) => one_run::render_one_run_into(dir, &r, &id)?,
        ReportFile::Table(r) => table::render_table_into(dir, &r, &id)?,
    }
    if let Some(parent) = dir.parent() {
        let parent = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        remove_stale_temporaries(parent);
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
            let above = s.points_above_beta().count();
            IndexEntry {
                run_id: run_id.to_string(),
                kind: format!("sweep over {}", s.parameter),
                mechanism: s.mechanism.clone(),
                claim: s.claim_summary(),
                result: format!(
                    "detection rate above β at {above} of {} points ({detected} of {total} audits found a violation)",
                    s.points.len()
                ),
                violation: above > 0,
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
        ReportFile::OneRun(r) => {
            let (kind, claim, result, violation) = one_run::index_fields(&r);
            IndexEntry {
                run_id: run_id.to_string(),
                kind,
                mechanism: r.target.clone(),
                claim,
                result,
                violation,
                seed: r.seed,
                samples_per_side: 1,
            }
        }
        ReportFile::Table(r) => {
            let (kind, claim, result, violation) = table::index_fields(&r);
            IndexEntry {
                run_id: run_id.to_string(),
                kind,
                mechanism: "the catalogue".into(),
                claim,
                result,
                violation,
                seed: r.seed,
                samples_per_side: r.samples_per_side,
            }
        }
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
