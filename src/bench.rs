//! Benchmarks behind `audit bench`: statistical power, tester speed, and the soundness seed sweep.
//!
//! - [`power`]: the scaled-noise Gaussian of STATISTICS.md §3 (catalogue entry
//!   `dpsgd-scaled-noise`, noise std s·σ_c with σ_c calibrated for (1, 1e-5)): detections out of
//!   `repeats` audits per noise scale s, samples per side, tester, against the point claim
//!   (1, 1e-5) and against the whole Gaussian-DP profile μ = 1/σ_c.
//! - [`speed`]: wall time of one tester call with both directions on 1-D outputs, median of
//!   `repeats`, beside the time to draw the same samples (a baseline measured in the same run).
//!   Only figures measured in the run are in the table: DP-Auditorium is not run here, so no
//!   speed-up against it is computed; [`render_speed`] ends with the one side-by-side
//!   measurement there is, labelled as quoted ([`DP_AUDITORIUM_SIDE_BY_SIDE`]).
//! - [`seeds`]: every tester on every correct catalogue entry over many seeds, the observed
//!   rejection rate beside β, and the Binomial(seeds, β) tail probability of that many rejections.
//!
//! Seeds: audit `r` of a cell gets the child seed `Seed(seed).child(tag, cell << 32 | r)`, so
//! every number printed is reproducible from `--seed` on any thread count.

use std::fmt::Write as _;
use std::time::Instant;

use serde::Serialize;
use statrs::distribution::{Binomial, DiscreteCDF};

use crate::audit::{AuditConfig, Verdict, audit_pair};
// The table's cells and their summaries belong to its report; named here as before.
use crate::error::{Error, Result};
use crate::mechanisms::math::{analytic_gaussian_sigma, readable};
use crate::mechanisms::{Params, PrivacyClaim, catalogue};
pub use crate::report::table::{TableCell, table_rows, table_summary};
use crate::rng::{Seed, Side, Stream, sample_parallel};
use crate::testers::{self, Divergence, PropertyTester};

const POWER_TAG: u64 = 0x0042_504F_5752;
const SPEED_TAG: u64 = 0x0042_5350_4544;
const SEEDS_TAG: u64 = 0x0042_5345_4544;

/// Noise scales of the power benchmark (STATISTICS.md §3 plus the 0.63 target).
pub const POWER_SCALES: [f64; 8] = [0.5, 0.6, 0.63, 0.7, 0.8, 0.9, 0.95, 1.0];

/// One cell of the power table.
#[derive(Clone, Debug, Serialize)]
pub struct PowerRow {
    /// `point` (the (1, 1e-5) claim) or `profile` (Gaussian DP μ = 1/σ_c).
    pub claim: String,
    /// Samples per side.
    pub samples: usize,
    /// Tester name.
    pub tester: String,
    /// Noise scale s.
    pub scale: f64,
    /// Audits that found a violation; `None` when the tester cannot test this claim.
    pub detections: Option<u64>,
    /// Audits run.
    pub repeats: u64,
    /// Median over the audits of the largest (bound − allowed); `None` when the cell is empty.
    pub median_margin: Option<f64>,
    /// Why the cell is empty, when it is.
    pub note: Option<String>,
}

/// The Gaussian-DP parameter of the intended DP-GD step: μ = 1/σ_c, rounded up (a larger μ allows
/// more, so rounding up can only hide a violation, never invent one).
pub fn profile_mu() -> Result<f64> {
    let sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0)
        .ok_or_else(|| Error::InvalidConfig("analytic Gaussian calibration failed".into()))?;
    Ok((1.0 / sigma).next_up())
}

/// Runs the power benchmark. `tick` is called after each audit (progress).
pub fn power(
    samples: &[usize],
    tester_names: &[String],
    repeats: u64,
    beta: f64,
    seed: u64,
    tick: &dyn Fn(),
) -> Result<Vec<PowerRow>> {
    let profile = PrivacyClaim::gaussian_dp(profile_mu()?)?;
    let root = Seed(seed);
    let mut rows = Vec::new();
    let mut cell = 0u64;
    for (claim_name, override_claim) in [("point", None), ("profile", Some(profile))] {
        for &n in samples {
            for tname in tester_names {
                let testers = vec![testers::by_name(tname)?];
                for &s in &POWER_SCALES {
                    cell += 1;
                    let entry = catalogue::build(
                        "dpsgd-scaled-noise",
                        &Params::default().set("noise_scale", s),
                    )?;
                    let m = &*entry.mechanism;
                    let claim = override_claim.unwrap_or_else(|| m.claim());
                    let mut detections = 0;
                    let mut margins = Vec::new();
                    let mut note = None;
                    for r in 0..repeats {
                        let config = AuditConfig {
                            seed: root.child(POWER_TAG, cell << 32 | r).0,
                            samples_per_side: n,
                            failure_probability: beta,
                        };
                        match audit_pair(m, &claim, &entry.witness, &testers, &config) {
                            Ok(rep) => {
                                if rep.verdict == Verdict::Violation {
                                    detections += 1;
                                }
                                margins.push(
                                    rep.bounds
                                        .iter()
                                        .map(|b| b.value - b.allowed)
                                        .fold(f64::NEG_INFINITY, f64::max),
                                );
                            }
                            Err(Error::ClaimNotTestable { reason, .. }) => {
                                note = Some(reason);
                                break;
                            }
                            Err(e) => return Err(e),
                        }
                        tick();
                    }
                    rows.push(PowerRow {
                        claim: claim_name.into(),
                        samples: n,
                        tester: tname.clone(),
                        scale: s,
                        detections: note.is_none().then_some(detections),
                        repeats,
                        median_margin: (note.is_none() && !margins.is_empty())
                            .then(|| median(&mut margins)),
                        note,
                    });
                }
            }
        }
    }
    Ok(rows)
}

/// The power benchmark as sweep reports over `noise_scale`: one per (claim, samples) block, one
/// line per tester that could test the claim (the others are named in the report's notes).
/// Blocks where no tester could test the claim get no report.
pub fn power_reports(
    rows: &[PowerRow],
    beta: f64,
    seed: u64,
    wall_time_seconds: Option<f64>,
) -> Result<Vec<crate::report::SweepReport>> {
    use crate::report::SweepReport;
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in rows {
        if !keys.contains(&(r.claim.clone(), r.samples)) {
            keys.push((r.claim.clone(), r.samples));
        }
    }
    let profile = PrivacyClaim::gaussian_dp(profile_mu()?)?;
    let mut out = Vec::new();
    for (claim_name, n) in keys {
        let block: Vec<&PowerRow> = rows
            .iter()
            .filter(|r| r.claim == claim_name && r.samples == n)
            .collect();
        let mut scales: Vec<f64> = block.iter().map(|r| r.scale).collect();
        scales.sort_by(f64::total_cmp);
        scales.dedup();
        let (claims, statuses) = power_claims(&claim_name, &scales, profile)?;
        let mut testers: Vec<String> = Vec::new();
        let mut notes = vec![format!(
            "audit bench power: the scaled-noise Gaussian of STATISTICS.md §3 (noise std s·σ_c, σ_c calibrated for (1, 1e-5)), {} claim, n = {n} per side; each point is {} audits with seeds derived from --seed {seed}",
            if claim_name == "point" {
                "point (1, 1e-5)"
            } else {
                "Gaussian-DP profile"
            },
            block.first().map_or(0, |r| r.repeats)
        )];
        let mut points = power_points(&block, &statuses, &mut testers, &mut notes);
        if points.is_empty() {
            continue;
        }
        // Value-major order, as `audit sweep` writes them (the sweep page groups by value).
        let rank = |t: &str| testers.iter().position(|x| x == t).unwrap_or(usize::MAX);
        points.sort_by(|a, b| {
            a.value
                .total_cmp(&b.value)
                .then(rank(&a.tester).cmp(&rank(&b.tester)))
        });
        out.push(SweepReport {
            schema_version: crate::audit::SCHEMA_VERSION,
            kind: "sweep".into(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            mechanism: "dpsgd-scaled-noise".into(),
            fixed_params: Vec::new(),
            parameter: "noise_scale".into(),
            claims,
            testers,
            repeats: block.first().map_or(0, |r| r.repeats),
            samples_per_side: n,
            failure_probability_per_audit: beta,
            seed,
            points,
            notes,
            wall_time_seconds,
            reproduce: None,
        });
    }
    Ok(out)
}

/// The claim at each noise scale of one block of `bench power` (the entry's own point claim,
/// or the Gaussian-DP `profile`) and the catalogue's status there.
#[allow(clippy::type_complexity)]
fn power_claims(
    claim_name: &str,
    scales: &[f64],
    profile: PrivacyClaim,
) -> Result<(Vec<crate::report::SweepClaim>, Vec<(f64, String)>)> {
    let mut claims = Vec::new();
    let mut statuses = Vec::new();
    for &s in scales {
        let entry = catalogue::build(
            "dpsgd-scaled-noise",
            &Params::default().set("noise_scale", s),
        )?;
        let claim = if claim_name == "point" {
            entry.mechanism.claim()
        } else {
            profile
        };
        claims.push(crate::report::SweepClaim {
            value: s,
            claim: claim.to_string(),
        });
        statuses.push((s, entry.status.word().to_string()));
    }
    Ok((claims, statuses))
}

/// The sweep points of one block of `bench power`, in row order; a tester that could not test
/// the claim gets a note instead (each note once), and `testers` collects those shown.
fn power_points(
    block: &[&PowerRow],
    statuses: &[(f64, String)],
    testers: &mut Vec<String>,
    notes: &mut Vec<String>,
) -> Vec<crate::report::SweepPoint> {
    let mut points = Vec::new();
    for r in block {
        match (r.detections, r.median_margin) {
            (Some(d), Some(m)) => {
                if !testers.contains(&r.tester) {
                    testers.push(r.tester.clone());
                }
                points.push(crate::report::SweepPoint {
                    value: r.scale,
                    status: statuses
                        .iter()
                        .find(|(s, _)| *s == r.scale)
                        .map(|(_, w)| w.clone())
                        .unwrap_or_default(),
                    tester: r.tester.clone(),
                    detections: d,
                    repeats: r.repeats,
                    median_margin: m,
                    median_epsilon: None,
                    epsilon_delta: None,
                });
            }
            _ => {
                let note = format!(
                    "tester {} not shown: {}",
                    r.tester,
                    r.note.as_deref().unwrap_or("it could not test this claim")
                );
                if !notes.contains(&note) {
                    notes.push(note);
                }
            }
        }
    }
    points
}

/// The power table as text: one block per (claim, samples), one row per tester.
pub fn render_power(rows: &[PowerRow], beta: f64) -> String {
    use std::fmt::Write as _;
    let mut s = format!(
        "power on the scaled-noise Gaussian (dpsgd-scaled-noise, STATISTICS.md §3): detections / audits, β = {beta} per audit\n\
         targets at n = 1e5, β = 0.05: all detected at s = 0.63 (point) and s = 0.9 (profile); none at s = 1.0\n"
    );
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in rows {
        if !keys.contains(&(r.claim.clone(), r.samples)) {
            keys.push((r.claim.clone(), r.samples));
        }
    }
    for (claim, n) in keys {
        let what = if claim == "point" {
            "point claim (1, 1e-5)".to_string()
        } else {
            format!(
                "Gaussian-DP profile claim μ = {:.6}",
                profile_mu().unwrap_or(f64::NAN)
            )
        };
        let _ = writeln!(s, "\n{what}, n = {n} per side");
        // Column width: room for "repeats/repeats" plus one space.
        let w = (2 * rows.first().map_or(2, |r| r.repeats.to_string().len()) + 2).max(7);
        let _ = write!(s, "{:14}", "tester \\ s");
        for sc in POWER_SCALES {
            let _ = write!(s, "{sc:>w$}");
        }
        let _ = writeln!(s);
        let mut testers_seen: Vec<&str> = Vec::new();
        for r in rows.iter().filter(|r| r.claim == claim && r.samples == n) {
            if !testers_seen.contains(&r.tester.as_str()) {
                testers_seen.push(&r.tester);
            }
        }
        for t in testers_seen {
            let _ = write!(s, "{t:14}");
            let mut note = None;
            for r in rows
                .iter()
                .filter(|r| r.claim == claim && r.samples == n && r.tester == t)
            {
                match r.detections {
                    Some(d) => {
                        let _ = write!(s, "{:>w$}", format!("{d}/{}", r.repeats));
                    }
                    None => {
                        let _ = write!(s, "{:>w$}", "n/a");
                        note = r.note.clone();
                    }
                }
            }
            let _ = writeln!(s);
            if let Some(n) = note {
                let _ = writeln!(s, "{:14}(n/a: {n})", "");
            }
        }
    }
    s
}

/// One row of the speed table.
#[derive(Clone, Debug, Serialize)]
pub struct SpeedRow {
    /// Tester name, or `sampling` for the baseline.
    pub what: String,
    /// Samples per side.
    pub samples: usize,
    /// The divergence bounded (both directions).
    pub divergence: String,
    /// Median wall time of one call with both directions, seconds.
    pub median_seconds: f64,
    /// All measured times, seconds.
    pub times: Vec<f64>,
    /// Median time of drawing the 2n samples in the same run, seconds.
    pub sampling_seconds: f64,
}

/// The median of `v` (the mean of the two middle values for an even count); sorts `v`.
pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

/// The one side-by-side comparison with DP-Auditorium there is, quoted (not measured by this
/// command, which does not run DP-Auditorium): its source, the machine and what was timed.
/// Per-call constants quoted from elsewhere (other machines, other settings) used to sit in a
/// column beside the measured medians, with "speed-ups" computed from them; they compared
/// unlike things and were dropped.
pub const DP_AUDITORIUM_SIDE_BY_SIDE: &str = "DP-Auditorium is not run by this command, so the table has no column or speed-up for it. \
Quoted, not measured here (issue 27, a 2-core machine of this type): `audit test` as a whole \
process on release files was 38× faster than DP-Auditorium's hockey-stick tester called \
in-process at 10^5 releases per side, and 31× at 10^6.";

/// Runs the speed benchmark on the 1-D scaled-noise Gaussian at s = 0.5.
pub fn speed(
    samples: &[usize],
    tester_names: &[String],
    repeats: u64,
    seed: u64,
) -> Result<Vec<SpeedRow>> {
    if repeats == 0 {
        return Err(Error::InvalidConfig(
            "--repeats 0; allowed: at least 1".into(),
        ));
    }
    let entry = catalogue::build(
        "dpsgd-scaled-noise",
        &Params::default().set("noise_scale", 0.5),
    )?;
    let m = &*entry.mechanism;
    let point = m.claim();
    let profile = PrivacyClaim::gaussian_dp(profile_mu()?)?;
    let root = Seed(seed);
    let mut rows = Vec::new();
    for &n in samples {
        let mut sampling = Vec::new();
        let mut drawn = None;
        for r in 0..repeats {
            let s = root.child(SPEED_TAG, (n as u64) << 20 | r);
            let t = Instant::now();
            let p = sample_parallel(
                m,
                entry.witness.first(),
                n,
                s,
                Stream::Confirm {
                    trial: 0,
                    side: Side::First,
                    chunk: 0,
                },
            )?;
            let q = sample_parallel(
                m,
                entry.witness.second(),
                n,
                s,
                Stream::Confirm {
                    trial: 0,
                    side: Side::Second,
                    chunk: 0,
                },
            )?;
            sampling.push(t.elapsed().as_secs_f64());
            drawn.get_or_insert((p, q));
        }
        let sampling_median = median(&mut sampling);
        rows.push(SpeedRow {
            what: "sampling".into(),
            samples: n,
            divergence: "(draw 2n releases)".into(),
            median_seconds: sampling_median,
            times: sampling.clone(),
            sampling_seconds: sampling_median,
        });
        let (p, q) =
            drawn.ok_or_else(|| Error::InvalidConfig("--repeats 0; allowed: at least 1".into()))?;
        for tname in tester_names {
            let tester: Box<dyn PropertyTester> = testers::by_name(tname)?;
            // Hockey-stick at ε = 1 for the point claim; the Rényi tester needs a Rényi-type
            // claim, so it gets the profile's α.
            let divergence: Divergence = match tester.plan(&point, n) {
                Ok(d) if !d.is_empty() => d[0],
                _ => *tester.plan(&profile, n)?.first().ok_or_else(|| {
                    Error::InvalidConfig(format!("tester {tname} plans no bound"))
                })?,
            };
            let mut times = Vec::new();
            for r in 0..repeats {
                let mut rng = Seed(seed).rng(Stream::Tester { bound: r });
                let t = Instant::now();
                tester.lower_bound(&p, &q, divergence, 0.025, &mut rng)?;
                tester.lower_bound(&q, &p, divergence, 0.025, &mut rng)?;
                times.push(t.elapsed().as_secs_f64());
            }
            rows.push(SpeedRow {
                what: tname.clone(),
                samples: n,
                divergence: divergence.to_string(),
                median_seconds: median(&mut times.clone()),
                times,
                sampling_seconds: sampling_median,
            });
        }
    }
    Ok(rows)
}

/// The speed table as text.
pub fn render_speed(rows: &[SpeedRow], repeats: u64) -> String {
    use std::fmt::Write as _;
    let mut s = format!(
        "tester speed on 1-D outputs (dpsgd-scaled-noise, s = 0.5): one call, both directions; median of {repeats}; {} rayon thread(s)\n\
         every figure measured in this run; baseline: drawing the 2n releases\n",
        rayon::current_num_threads()
    );
    let _ = writeln!(
        s,
        "{:14} {:>8}  {:28} {:>11} {:>12}",
        "tester", "n", "divergence", "median s", "÷ sampling"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:14} {:>8}  {:28} {:>11.4} {:>12.2}",
            r.what,
            r.samples,
            r.divergence,
            r.median_seconds,
            r.median_seconds / r.sampling_seconds,
        );
    }
    let _ = writeln!(s, "{DP_AUDITORIUM_SIDE_BY_SIDE}");
    s
}

/// One row of the seed sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SeedRow {
    /// Catalogue id (a correct entry).
    pub mechanism: String,
    /// The entry's claim.
    pub claim: String,
    /// Tester name.
    pub tester: String,
    /// Seeds with a reported violation; `None` when the tester cannot test the claim.
    pub rejections: Option<u64>,
    /// Seeds run.
    pub seeds: u64,
    /// P(Binomial(seeds, β) ≥ rejections): small values would mean the rejection rate exceeds β.
    pub tail_probability: Option<f64>,
    /// Why the row is empty, when it is.
    pub note: Option<String>,
}

/// Runs every tester on every correct catalogue entry's witness for `seeds` seeds.
pub fn seeds(
    seeds: u64,
    samples: usize,
    beta: f64,
    tester_names: &[String],
    only: Option<&[String]>,
    seed: u64,
    tick: &dyn Fn(),
) -> Result<Vec<SeedRow>> {
    if seeds == 0 {
        return Err(Error::InvalidConfig(
            "--seeds 0; allowed: at least 1".into(),
        ));
    }
    let root = Seed(seed);
    let mut rows = Vec::new();
    let mut cell = 0u64;
    for id in catalogue::ids() {
        let entry = catalogue::build(id, &Params::default())?;
        if entry.status.word() != "correct" {
            continue;
        }
        let m = &*entry.mechanism;
        let claim = m.claim();
        for tname in tester_names {
            cell += 1;
            // Cells are numbered over the whole catalogue, so `only` keeps each entry's seeds.
            if only.is_some_and(|o| !o.iter().any(|x| x == id)) {
                continue;
            }
            let testers = vec![testers::by_name(tname)?];
            let mut rejections = 0;
            let mut note = None;
            for r in 0..seeds {
                let config = AuditConfig {
                    seed: root.child(SEEDS_TAG, cell << 32 | r).0,
                    samples_per_side: samples,
                    failure_probability: beta,
                };
                match audit_pair(m, &claim, &entry.witness, &testers, &config) {
                    Ok(rep) => {
                        if rep.verdict == Verdict::Violation {
                            rejections += 1;
                        }
                    }
                    Err(Error::ClaimNotTestable { reason, .. }) => {
                        note = Some(reason);
                        break;
                    }
                    Err(e) => return Err(e),
                }
                tick();
            }
            let tail = note.is_none().then(|| {
                if rejections == 0 {
                    1.0
                } else {
                    Binomial::new(beta, seeds)
                        .map(|b| b.sf(rejections - 1))
                        .unwrap_or(f64::NAN)
                }
            });
            rows.push(SeedRow {
                mechanism: id.to_string(),
                claim: claim.to_string(),
                tester: tname.clone(),
                rejections: note.is_none().then_some(rejections),
                seeds,
                tail_probability: tail,
                note,
            });
        }
    }
    Ok(rows)
}

/// The seed sweep as text.
pub fn render_seeds(rows: &[SeedRow], samples: usize, beta: f64) -> String {
    use std::fmt::Write as _;
    let mut s = format!(
        "soundness seed sweep: correct catalogue entries on their witness pairs, {samples} samples per side, β = {beta} per audit\n\
         a sound tester rejects in at most a β fraction of seeds; tail = P(Binomial(seeds, β) ≥ rejections)\n"
    );
    let _ = writeln!(
        s,
        "{:38} {:14} {:>12} {:>9} {:>10}",
        "mechanism", "tester", "rejections", "rate", "tail"
    );
    for r in rows {
        match (r.rejections, r.tail_probability) {
            (Some(k), Some(t)) => {
                let _ = writeln!(
                    s,
                    "{:38} {:14} {:>12} {:>9.4} {:>10.3e}",
                    r.mechanism,
                    r.tester,
                    format!("{k}/{}", r.seeds),
                    k as f64 / r.seeds as f64,
                    t
                );
            }
            _ => {
                let _ = writeln!(s, "{:38} {:14} {:>12}", r.mechanism, r.tester, "claim n/a");
            }
        }
    }
    let total: u64 = rows.iter().filter_map(|r| r.rejections).sum();
    let runs: u64 = rows
        .iter()
        .filter(|r| r.rejections.is_some())
        .map(|r| r.seeds)
        .sum();
    let _ = writeln!(
        s,
        "overall: {total} rejections in {runs} audits (rate {:.4}; β = {beta})",
        total as f64 / runs.max(1) as f64
    );
    s
}

const TABLE_TAG: u64 = 0x0042_5441_424C;

/// The settings of entry `id` the table audits: `Some(ε)` for each ε in `epsilons` inside the
/// entry's declared `epsilon` range that the entry accepts, or `[None]` (its defaults) when it has no `epsilon`
/// parameter. An entry with an ε parameter but none of `epsilons` in range gets `[None]` too.
pub fn table_settings(id: &str, epsilons: &[f64]) -> Result<Vec<Option<f64>>> {
    let d = catalogue::describe(id)?;
    let Some(p) = d.params.iter().find(|p| p.name == "epsilon") else {
        return Ok(vec![None]);
    };
    // In the declared range, and accepted by the entry (some refuse part of it, e.g. the
    // classical Gaussian calibration at ε ≥ 1).
    let inside: Vec<Option<f64>> = epsilons
        .iter()
        .filter(|&&e| p.range.is_none_or(|(lo, hi)| (lo..=hi).contains(&e)))
        .filter(|&&e| catalogue::build(id, &Params::new().set("epsilon", e)).is_ok())
        .map(|&e| Some(e))
        .collect();
    Ok(if inside.is_empty() {
        vec![None]
    } else {
        inside
    })
}

/// The DP-Auditorium post's experiment over the whole catalogue: every entry of `ids` at every
/// setting of [`table_settings`], audited on its witness pair (through the transform
/// `audit run --mechanism` uses) by each tester alone, `repeats` times, β = `beta` per audit.
/// A cell counts the audits that reported a violation.
///
/// Seeds: audit `r` of a cell gets `Seed(seed).child(TABLE_TAG ^ h, r)` where `h` hashes the
/// cell's (id, ε, tester), so a cell's numbers do not move when the catalogue grows or `--only`
/// picks a few entries.
#[allow(clippy::too_many_arguments)]
pub fn table(
    ids: &[String],
    epsilons: &[f64],
    tester_names: &[String],
    repeats: u64,
    samples: usize,
    beta: f64,
    seed: u64,
    tick: &dyn Fn(),
) -> Result<Vec<TableCell>> {
    let root = Seed(seed);
    let mut cells = Vec::new();
    for id in ids {
        for eps in table_settings(id, epsilons)? {
            let params = match eps {
                Some(e) => Params::new().set("epsilon", e),
                None => Params::new(),
            };
            let entry = catalogue::build(id, &params)?;
            let (m, _) = crate::testers::transforms::with_recommended_transform(entry.mechanism)?;
            let claim = m.claim();
            for tname in tester_names {
                let testers = vec![testers::by_name(tname)?];
                let key = format!("{id}|{}|{tname}", eps.map_or("-".into(), |e| e.to_string()));
                let h = crate::report::fnv1a64(key.as_bytes());
                let mut detections = 0;
                let mut note = None;
                for r in 0..repeats {
                    let config = AuditConfig {
                        seed: root.child(TABLE_TAG ^ h, r).0,
                        samples_per_side: samples,
                        failure_probability: beta,
                    };
                    match audit_pair(&*m, &claim, &entry.witness, &testers, &config) {
                        Ok(rep) => detections += u64::from(rep.verdict == Verdict::Violation),
                        Err(Error::ClaimNotTestable { reason, .. }) => {
                            note = Some(reason);
                            for _ in r..repeats {
                                tick();
                            }
                            break;
                        }
                        Err(e) => return Err(e),
                    }
                    tick();
                }
                cells.push(TableCell {
                    mechanism: id.clone(),
                    status: entry.status.word().to_string(),
                    epsilon: eps,
                    claim: claim.to_string(),
                    tester: tname.clone(),
                    detections: note.is_none().then_some(detections),
                    repeats,
                    note,
                });
            }
        }
    }
    Ok(cells)
}

/// The detection table as text: one row per (entry, ε), one column per tester, `k/repeats`.
pub fn render_table(cells: &[TableCell], samples: usize, beta: f64) -> String {
    use std::fmt::Write as _;
    let mut testers: Vec<&str> = Vec::new();
    for c in cells {
        if !testers.contains(&c.tester.as_str()) {
            testers.push(&c.tester);
        }
    }
    let mut s = format!(
        "detection table: each entry on its witness pair, each tester alone, {samples} samples per side, β = {beta} per audit\n\
         a cell counts the audits that reported a violation (n/a: the tester cannot test the claim)\n"
    );
    let _ = write!(
        s,
        "{:40} {:8} {:>6} {:24}",
        "mechanism", "status", "ε", "claim"
    );
    for t in &testers {
        let _ = write!(s, " {t:>13}");
    }
    s.push('\n');
    for row in table_rows(cells) {
        let eps = row.1.map_or("own".to_string(), crate::report::readable);
        let _ = write!(s, "{:40} {:8} {:>6} {:24}", row.0, row.2, eps, row.3);
        for t in &testers {
            let cell = cells
                .iter()
                .find(|c| c.mechanism == row.0 && c.epsilon == row.1 && c.tester == *t);
            let text = match cell.and_then(|c| c.detections.map(|k| (k, c.repeats))) {
                Some((k, r)) => format!("{k}/{r}"),
                None => "n/a".into(),
            };
            let _ = write!(s, " {text:>13}");
        }
        s.push('\n');
    }
    let _ = writeln!(s, "{}", table_summary(cells, beta));
    s
}

/// One row of `audit bench epsilon`: the ε-estimate stage on an entry's witness pair at one δ
/// and sample size, beside the true ε.
#[derive(Clone, Debug, Serialize)]
pub struct EpsilonRow {
    /// Catalogue id.
    pub id: String,
    /// The δ of the estimate.
    pub delta: f64,
    /// Releases per side.
    pub samples_per_side: usize,
    /// The true ε at δ on the witness pair (derived in [`EPSILON_CASES`]).
    pub true_epsilon: f64,
    /// The estimates, one per repeat (lower confidence bounds; 0 when none is positive).
    pub estimates: Vec<f64>,
    /// Their median.
    pub median: f64,
    /// Their smallest.
    pub min: f64,
    /// β of the estimate: the audit's β times [`crate::audit::ESTIMATE_SHARE`].
    pub estimate_beta: f64,
    /// Median wall time of one estimate (selection and held-out bounds, not the sampling), s.
    pub median_seconds: f64,
}

/// The cases of `audit bench epsilon`: (id, δ, how the true ε is derived). Each witness pair is
/// a shift by the sensitivity: Laplace(b = 1/ε) shifted by 1 and randomized response have
/// privacy loss ±ε exactly (true ε = 1 at δ = 0); the analytic Gaussian with σ = 3.7306 and
/// sensitivity 1 is exactly μ-GDP with μ = 1/σ, whose ε(δ) is the inverse of the Gaussian profile
/// (STATISTICS.md §1), 1 at δ = 10⁻⁵.
pub const EPSILON_CASES: &[(&str, f64)] = &[
    ("laplace-sum", 0.0),
    ("randomized-response", 0.0),
    ("gaussian-sum-analytic", 1e-2),
    ("gaussian-sum-analytic", 1e-3),
    ("gaussian-sum-analytic", 1e-5),
];

fn true_epsilon(id: &str, delta: f64) -> Result<f64> {
    match id {
        "laplace-sum" | "randomized-response" => Ok(1.0),
        "gaussian-sum-analytic" => {
            let sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0).ok_or_else(|| {
                Error::InvalidConfig("the analytic Gaussian σ for (1, 1e-5) is undefined".into())
            })?;
            crate::audit::claimed_epsilon_at(&PrivacyClaim::GaussianDp { mu: 1.0 / sigma }, delta)
                .ok_or_else(|| Error::InvalidConfig(format!("no ε at δ = {delta}")))
        }
        _ => Err(Error::InvalidConfig(format!("no true ε known for {id}"))),
    }
}

/// (median, smallest) of a non-empty list: the upper median `sorted[len / 2]`, as every bench
/// table quotes it. (0, 0) for an empty list.
fn median_min(xs: &[f64]) -> (f64, f64) {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.first() {
        Some(&min) => (sorted[sorted.len() / 2], min),
        None => (0.0, 0.0),
    }
}

/// `audit bench epsilon`: the ε-estimate stage against the true ε, `repeats` times per case and
/// size, at the audit's β (`beta`, of which the estimate spends its share).
pub fn epsilon_estimates(
    sizes: &[usize],
    repeats: u64,
    beta: f64,
    seed: u64,
) -> Result<Vec<EpsilonRow>> {
    let estimate_beta = beta * crate::audit::ESTIMATE_SHARE;
    let mut rows = Vec::new();
    for &(id, delta) in EPSILON_CASES {
        let e = catalogue::build(id, &Params::default())?;
        let m = &*e.mechanism;
        let truth = true_epsilon(id, delta)?;
        for &n in sizes {
            let mut estimates = Vec::new();
            let mut seconds = Vec::new();
            for r in 0..repeats {
                let stream = |side| Stream::Confirm {
                    trial: r,
                    side,
                    chunk: 0,
                };
                let p = sample_parallel(m, e.witness.first(), n, Seed(seed), stream(Side::First))?;
                let q =
                    sample_parallel(m, e.witness.second(), n, Seed(seed), stream(Side::Second))?;
                let start = Instant::now();
                let mut rng = Seed(seed).rng(Stream::Other {
                    tag: crate::audit::ESTIMATE_TAG,
                    index: r,
                });
                let found = testers::HockeyStickTester::default().estimate_epsilon_in_memory(
                    &p,
                    &q,
                    delta,
                    estimate_beta,
                    &mut rng,
                )?;
                seconds.push(start.elapsed().as_secs_f64());
                estimates.push(found.and_then(|f| f.lower_bound).unwrap_or(0.0));
            }
            let (median, min) = median_min(&estimates);
            rows.push(EpsilonRow {
                id: id.to_string(),
                delta,
                samples_per_side: n,
                true_epsilon: truth,
                median,
                min,
                estimates,
                estimate_beta,
                median_seconds: median_min(&seconds).0,
            });
        }
    }
    Ok(rows)
}

/// The text of `audit bench epsilon`.
pub fn render_epsilon(rows: &[EpsilonRow], beta: f64) -> String {
    let mut s = format!(
        "ε-estimate stage on witness pairs: lower confidence bounds at the estimate's share of β = {} (β·{} = {}), beside the true ε\n",
        readable(beta),
        crate::audit::ESTIMATE_SHARE,
        readable(beta * crate::audit::ESTIMATE_SHARE)
    );
    let _ = writeln!(
        s,
        "{:24} {:>7} {:>10} {:>8} {:>8} {:>8} {:>7} {:>9}",
        "entry", "δ", "n/side", "true ε", "median", "min", "ratio", "seconds"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:24} {:>7} {:>10} {:>8.4} {:>8.4} {:>8.4} {:>7.3} {:>9.3}",
            r.id,
            readable(r.delta),
            r.samples_per_side,
            r.true_epsilon,
            r.median,
            r.min,
            r.median / r.true_epsilon,
            r.median_seconds
        );
    }
    s.push_str("(ratio = median / true ε; a bound above the true ε happens with probability at most the estimate's β)\n");
    s
}

/// One row of `audit bench gdp`: the μ lower bound of one Gaussian pair at one size.
#[derive(Clone, Debug, Serialize)]
pub struct MuRow {
    /// The pair's μ: N(0, 1) against N(μ, 1), exactly μ-GDP.
    pub mu: f64,
    /// Releases per side.
    pub samples_per_side: usize,
    /// Every estimate (0 where no positive bound), one per repeat.
    pub estimates: Vec<f64>,
    /// Their median and smallest, and both as a share of μ.
    pub median: f64,
    /// The smallest estimate.
    pub min: f64,
    /// median / μ.
    pub median_share: f64,
    /// min / μ.
    pub min_share: f64,
    /// β of each estimate.
    pub beta: f64,
    /// Median seconds of one estimate (event search and held-out bounds).
    pub median_seconds: f64,
}

/// `audit bench gdp`: certified Gaussian-DP curves. For each μ and size, `repeats` pairs of
/// N(0, 1) and N(μ, 1) releases (seeded streams), each bounded by
/// [`testers::HockeyStickTester::estimate_mu_in_memory`] at `beta` (its own event search on
/// the training split, Clopper–Pearson bounds on the held-out rows).
///
/// # Errors
/// A size below 8, μ not positive and finite, β outside (0, 1).
pub fn mu_estimates(
    mus: &[f64],
    sizes: &[usize],
    repeats: u64,
    beta: f64,
    seed: u64,
) -> Result<Vec<MuRow>> {
    use rand::RngExt;
    use rand_distr::StandardNormal;
    if let Some(mu) = mus.iter().find(|m| !(m.is_finite() && **m > 0.0)) {
        return Err(Error::InvalidConfig(format!(
            "--mu {mu}; allowed: positive finite numbers"
        )));
    }
    if let Some(n) = sizes.iter().find(|&&n| n < 8) {
        return Err(Error::InvalidConfig(format!(
            "--samples {n}; allowed: at least 8 per side"
        )));
    }
    let mut rows = Vec::new();
    for (i, &mu) in mus.iter().enumerate() {
        for &n in sizes {
            let mut estimates = Vec::new();
            let mut seconds = Vec::new();
            for r in 0..repeats {
                let draw = |side: u64, shift: f64| {
                    let mut rng = Seed(seed).rng(Stream::Other {
                        tag: 0x37_0004,
                        index: (i as u64) << 40 | r << 1 | side,
                    });
                    let flat: Vec<f64> = (0..n)
                        .map(|_| shift + rng.sample::<f64, _>(StandardNormal))
                        .collect();
                    crate::mechanisms::Samples::from_flat(1, flat)
                };
                let (p, q) = (draw(0, mu)?, draw(1, 0.0)?);
                let start = Instant::now();
                let found =
                    testers::HockeyStickTester::default().estimate_mu_in_memory(&p, &q, beta)?;
                seconds.push(start.elapsed().as_secs_f64());
                estimates.push(found.and_then(|f| f.lower_bound).unwrap_or(0.0));
            }
            let (median, min) = median_min(&estimates);
            rows.push(MuRow {
                mu,
                samples_per_side: n,
                estimates,
                median,
                min,
                median_share: median / mu,
                min_share: min / mu,
                beta,
                median_seconds: median_min(&seconds).0,
            });
        }
    }
    Ok(rows)
}

/// The text of `audit bench gdp`.
pub fn render_mu(rows: &[MuRow]) -> String {
    let mut s = String::from(
        "Certified Gaussian-DP curves: lower confidence bounds on μ (event search on the first 20 % of each side, \
         Clopper–Pearson on the rest) for N(0, 1) against N(μ, 1), which is exactly μ-GDP\n",
    );
    let _ = writeln!(
        s,
        "{:>6} {:>12} {:>8} {:>10} {:>10} {:>12} {:>10} {:>10}",
        "mu", "per side", "beta", "median", "min", "median / mu", "min / mu", "seconds"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:>6} {:>12} {:>8} {:>10.4} {:>10.4} {:>12.4} {:>10.4} {:>10.3}",
            readable(r.mu),
            r.samples_per_side,
            readable(r.beta),
            r.median,
            r.min,
            r.median_share,
            r.min_share,
            r.median_seconds
        );
    }
    s
}

/// One row of the layer census: a correct catalogue entry's two layers on its witness.
#[derive(Clone, Debug, Serialize)]
pub struct CensusRow {
    /// Catalogue id (a correct entry at its default parameters).
    pub mechanism: String,
    /// The entry's claim.
    pub claim: String,
    /// The mechanism layer's answer: `pass`, or `VIOLATION (ε ≥ …)`.
    pub mechanism_layer: String,
    /// The floating-point layer's answer: `pass`, `VIOLATION (ε ≥ …)` or `skipped (integer outputs)`.
    pub floating_point_layer: String,
    /// What the catalogue says about the entry's floating-point code
    /// ([`catalogue::float_model`]): `None` when it claims to be correct as shipped.
    pub declared_real_valued_only: Option<String>,
}

/// The layer census: every correct catalogue entry (or `only`) audited on its witness by the
/// [`crate::gate::Gate`]'s two-layer audit (hockey-stick tester, `samples` fresh releases per
/// side, β split evenly over the two layers), the answer of `audit sample` then `audit test`
/// with the default layers, in process.
pub fn layer_census(
    samples: usize,
    beta: f64,
    only: Option<&[String]>,
    seed: u64,
    tick: &dyn Fn(),
) -> Result<Vec<CensusRow>> {
    let mut rows = Vec::new();
    for id in catalogue::ids() {
        if only.is_some_and(|o| !o.iter().any(|x| x == id)) {
            continue;
        }
        let entry = catalogue::build(id, &Params::default())?;
        if entry.status.is_buggy() {
            continue;
        }
        let m = &*entry.mechanism;
        let o = crate::gate::Gate::default()
            .seed(seed)
            .samples_per_side(samples)
            .failure_probability(beta)
            .check(m, std::slice::from_ref(&entry.witness))?;
        let word = |r: Option<&crate::audit::AuditReport>| match r {
            Some(r) if r.verdict == Verdict::Violation => format!(
                "VIOLATION{}",
                r.empirical_epsilon
                    .as_ref()
                    .filter(|e| e.lower_bound > 0.0)
                    .map(|e| format!(" (ε ≥ {})", readable(e.lower_bound)))
                    .unwrap_or_default()
            ),
            Some(_) => "pass".into(),
            None => "skipped (integer outputs)".into(),
        };
        let pair = &o.pairs[0];
        rows.push(CensusRow {
            mechanism: id.to_string(),
            claim: m.claim().to_string(),
            mechanism_layer: word(pair.mechanism.as_ref()),
            floating_point_layer: word(pair.floating_point.as_ref()),
            declared_real_valued_only: catalogue::float_model(id).map(str::to_string),
        });
        tick();
    }
    Ok(rows)
}

/// The census as the markdown table of docs/catalogue.md.
pub fn render_census(rows: &[CensusRow], samples: usize, beta: f64, seed: u64) -> String {
    let mut s = format!(
        "layer census: correct catalogue entries on their witness pairs, {samples} releases per side, hockey-stick tester, β = {beta} split over the two layers, seed {seed}\n\n\
         | entry | claim | mechanism layer | floating-point layer | as shipped |\n|---|---|---|---|---|\n"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} |",
            r.mechanism,
            r.claim,
            r.mechanism_layer,
            r.floating_point_layer,
            r.declared_real_valued_only
                .as_deref()
                .map(|w| format!("real-valued model only: {w}"))
                .unwrap_or_else(|| "correct in both layers".into())
        );
    }
    let disagree: Vec<&str> = rows
        .iter()
        .filter(|r| {
            let float_fails = r.floating_point_layer.starts_with("VIOLATION");
            r.mechanism_layer.starts_with("VIOLATION")
                || (float_fails && r.declared_real_valued_only.is_none())
        })
        .map(|r| r.mechanism.as_str())
        .collect();
    let _ = writeln!(
        s,
        "\n{} entries; {} floating-point violations, all on entries declared real-valued only: {}; violations the catalogue does not declare: {}",
        rows.len(),
        rows.iter()
            .filter(|r| r.floating_point_layer.starts_with("VIOLATION"))
            .count(),
        if disagree.is_empty() { "yes" } else { "no" },
        if disagree.is_empty() {
            "none".to_string()
        } else {
            disagree.join(", ")
        }
    );
    s
}
