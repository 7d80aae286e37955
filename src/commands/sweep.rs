//! `audit sweep`: a catalogue entry audited repeatedly over a range of one parameter.

use clap::Args;

use super::{Outcome, ReportArgs, announce_report, to_json};
use crate::audit::{AuditConfig, Verdict, audit_pair};
use crate::error::{Error, Result};
use crate::mechanisms::{Params, PrivacyClaim, catalogue};
use crate::testers;

/// Options of `audit sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Catalogue id of the mechanism.
    #[arg(long)]
    pub mechanism: String,
    /// Parameters NAME=VALUE; exactly one may be a range NAME=LO:HI:STEP (inclusive).
    #[arg(long = "param", value_name = "NAME=VALUE|NAME=LO:HI:STEP")]
    pub params: Vec<String>,
    /// Audits per parameter value, each with its own seed derived from --seed.
    #[arg(allow_hyphen_values = true, long, default_value_t = 10)]
    pub repeats: u64,
    /// Releases per side per audit.
    #[arg(allow_hyphen_values = true, long, default_value_t = 100_000)]
    pub samples: usize,
    /// Seed of the whole sweep.
    #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
    pub seed: u64,
    /// β of each audit.
    #[arg(allow_hyphen_values = true, long, default_value_t = 0.05)]
    pub failure_probability: f64,
    /// Testers, comma-separated, or "all"; each tester is a separate audit.
    #[arg(long, default_value = "hockey-stick")]
    pub tester: String,
    /// Layers (see `audit run --check`): mechanism, float or both. Each layer is a row group of
    /// its own: every audit of a layer is made through that layer's view of a release, at
    /// --failure-probability (the rows are separate detection counts, not one verdict). Without
    /// it the entry is audited through its own transform, as `audit run` does.
    #[arg(long, value_name = "LAYERS")]
    pub check: Option<String>,
    /// Override the claim.
    #[arg(long)]
    pub claim: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Reports.
    #[command(flatten)]
    pub report: ReportArgs,
}

/// Seed tag of `audit sweep` repeats (ASCII "SWEEP").
const SWEEP_TAG: u64 = 0x0053_5745_4550;

/// The swept parameter: name and values (LO, LO+STEP, …, ≤ HI + STEP/1e6).
fn parse_sweep_params(params: &[String]) -> Result<(Vec<String>, String, Vec<f64>)> {
    let mut fixed = Vec::new();
    let mut swept: Option<(String, Vec<f64>)> = None;
    for p in params {
        let Some((name, value)) = p.split_once('=') else {
            fixed.push(p.clone());
            continue;
        };
        if !value.contains(':') {
            fixed.push(p.clone());
            continue;
        }
        let parts: Vec<&str> = value.split(':').collect();
        let nums: Vec<f64> = parts.iter().filter_map(|x| x.trim().parse().ok()).collect();
        if parts.len() != 3 || nums.len() != 3 {
            return Err(Error::InvalidConfig(format!(
                "--param {p}: a range must be NAME=LO:HI:STEP with three numbers"
            )));
        }
        let (lo, hi, step) = (nums[0], nums[1], nums[2]);
        if !(lo.is_finite() && hi.is_finite() && step.is_finite() && step > 0.0 && lo <= hi) {
            return Err(Error::InvalidConfig(format!(
                "--param {p}: need finite LO <= HI and STEP > 0"
            )));
        }
        let count = ((hi - lo) / step + 1e-9).floor() as usize + 1;
        if count > 1000 {
            return Err(Error::InvalidConfig(format!(
                "--param {p}: {count} values; allowed: at most 1000"
            )));
        }
        if swept.is_some() {
            return Err(Error::InvalidConfig(
                "only one --param may be a range".into(),
            ));
        }
        // Values computed as LO + i·STEP (not by accumulation) and rounded to 12 digits so
        // 0.5:1.0:0.05 gives exactly the decimals a reader expects.
        let values = (0..count)
            .map(|i| ((lo + i as f64 * step) * 1e12).round() / 1e12)
            .collect();
        swept = Some((name.trim().to_string(), values));
    }
    let (name, values) = swept.ok_or_else(|| {
        Error::InvalidConfig("audit sweep needs one --param NAME=LO:HI:STEP".into())
    })?;
    Ok((fixed, name, values))
}

use crate::record::layers::LayerKind;
use crate::report::SweepPoint;

/// One point of the sweep before it is audited: the entry built at one value, seen through one
/// layer (or its own transform).
type PointEntry = (catalogue::Entry, f64, Option<LayerKind>);

pub(super) fn sweep(a: &SweepArgs) -> Result<Outcome> {
    let (fixed, name, values) = parse_sweep_params(&a.params)?;
    let tester_names = check_sweep_args(a)?;
    // Build every point first so bad values fail before any sampling.
    let layers = sweep_layers(a)?;
    let entries = build_entries(a, &fixed, &name, &values, &layers)?;
    let claim_override: Option<PrivacyClaim> = match &a.claim {
        Some(c) => Some(c.parse()?),
        None => None,
    };
    if !a.report.no_report {
        crate::report::prepare_report_dir(&a.report.report_dir)?;
    }
    let start = std::time::Instant::now();
    let progress = crate::report::progress::bar(
        (entries.len() * tester_names.len()) as u64 * a.repeats,
        a.report.quiet,
        &format!("sweep {} over {name}", a.mechanism),
    );
    let root = crate::rng::Seed(a.seed);
    let mut points = Vec::new();
    let mut claims = Vec::new();
    for (k, point) in entries.iter().enumerate() {
        // The seed index of the value (the same releases for every layer of one value).
        let i = k / layers.len();
        let claim = claim_override.unwrap_or_else(|| point.0.mechanism.claim());
        if k % layers.len() == 0 {
            claims.push(crate::report::SweepClaim {
                value: point.1,
                claim: claim.to_string(),
            });
        }
        for tname in &tester_names {
            points.push(audit_point(a, point, i, &claim, tname, root, &progress)?);
        }
    }
    progress.finish_and_clear();
    let sweep_report = crate::report::SweepReport {
        schema_version: crate::audit::SCHEMA_VERSION,
        kind: "sweep".into(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        mechanism: a.mechanism.clone(),
        fixed_params: fixed.clone(),
        parameter: name.clone(),
        claims,
        testers: row_groups(&layers, &tester_names),
        repeats: a.repeats,
        samples_per_side: a.samples,
        failure_probability_per_audit: a.failure_probability,
        seed: a.seed,
        points: points.clone(),
        notes: Vec::new(),
        wall_time_seconds: Some(start.elapsed().as_secs_f64()),
        reproduce: Some(super::run::reproduce_line(None)),
    };
    let (report_index, late_error) = super::split_late(if a.report.no_report {
        Ok(None)
    } else {
        crate::report::write_sweep_report(&a.report.report_dir, &sweep_report).map(Some)
    });
    // --json prints the sweep in the schema of its audit.json (without the wall time, so the same
    // seed gives the same bytes); `audit report FILE` renders either.
    let mut stdout = if a.json {
        let mut r = sweep_report.clone();
        r.wall_time_seconds = None;
        to_json(&crate::record::ResultRecord::from_sweep(&r))?
    } else {
        crate::report::text::render_sweep_text(
            &a.mechanism,
            &name,
            a.repeats,
            a.samples,
            a.failure_probability,
            a.seed,
            &points,
        )
    };
    if let Some(index) = &report_index {
        announce_report(index, a.json, a.report.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code: 0,
        late_error,
    })
}

/// Checks --tester, --failure-probability, --samples and --repeats; the testers' names.
fn check_sweep_args(a: &SweepArgs) -> Result<Vec<String>> {
    let tester_names: Vec<String> = testers::parse_list(&a.tester)?
        .iter()
        .map(|t| t.name().to_string())
        .collect();
    super::run::check_beta(a.failure_probability)?;
    super::run::check_count(
        "--samples",
        a.samples,
        crate::modes::checks::MIN_SAMPLES_PER_SIDE,
        crate::audit::MAX_SAMPLES_PER_SIDE,
    )?;
    if a.repeats == 0 || a.repeats > 10_000 {
        return Err(Error::InvalidConfig(format!(
            "--repeats {}; allowed: 1 to 10000",
            a.repeats
        )));
    }
    Ok(tester_names)
}

/// The layers of --check, each a row group of its own; `[None]` without it (the entry's own
/// transform).
fn sweep_layers(a: &SweepArgs) -> Result<Vec<Option<LayerKind>>> {
    Ok(match &a.check {
        Some(c) => c
            .parse::<crate::record::layers::Check>()?
            .layers()
            .into_iter()
            .map(Some)
            .collect(),
        None => vec![None],
    })
}

/// Every point of the sweep built: each value (with the fixed parameters) through each layer,
/// value by value.
fn build_entries(
    a: &SweepArgs,
    fixed: &[String],
    name: &str,
    values: &[f64],
    layers: &[Option<LayerKind>],
) -> Result<Vec<PointEntry>> {
    let mut entries = Vec::new();
    for &v in values {
        for layer in layers {
            let params = Params::parse(fixed)?.set(name, v);
            let mut entry = catalogue::build(&a.mechanism, &params)?;
            entry.mechanism = match layer {
                // Through the layer's view.
                Some(kind) => Box::new(crate::testers::TransformedMechanism::new(
                    entry.mechanism,
                    kind.transform(),
                )?),
                // Through the transform the entry is audited through by `audit run` (e.g.
                // `checkpoints:d` for DP-SGD releasing its iterates), as the run command would.
                None => crate::testers::transforms::with_recommended_transform(entry.mechanism)?.0,
            };
            entries.push((entry, v, *layer));
        }
    }
    Ok(entries)
}

/// The --repeats audits of one point with one tester (the i-th value's seeds): detections,
/// median margin and, where the claim has a δ to estimate ε at, the median ε lower bound.
fn audit_point(
    a: &SweepArgs,
    (entry, v, layer): &PointEntry,
    i: usize,
    claim: &PrivacyClaim,
    tname: &str,
    root: crate::rng::Seed,
    progress: &indicatif::ProgressBar,
) -> Result<SweepPoint> {
    let m = &*entry.mechanism;
    let testers = vec![testers::by_name(tname)?];
    let mut margins = Vec::new();
    let mut epsilons = Vec::new();
    let mut epsilon_delta = None;
    let mut detections = 0;
    for r in 0..a.repeats {
        let config = AuditConfig {
            seed: root.child(SWEEP_TAG, (i as u64) << 32 | r).0,
            samples_per_side: a.samples,
            failure_probability: a.failure_probability,
        };
        config.validate(m.output_dim())?;
        let rep = audit_pair(m, claim, &entry.witness, &testers, &config)?;
        progress.inc(1);
        if rep.verdict == Verdict::Violation {
            detections += 1;
        }
        if let Some(delta) = crate::audit::estimate_delta(claim) {
            epsilon_delta = Some(delta);
            epsilons.push(
                rep.empirical_epsilon
                    .as_ref()
                    .map_or(0.0, |e| e.lower_bound),
            );
        }
        margins.push(
            rep.bounds
                .iter()
                .map(|b| b.value - b.allowed)
                .fold(f64::NEG_INFINITY, f64::max),
        );
    }
    let median_margin = median(&mut margins);
    let median_epsilon = (!epsilons.is_empty()).then(|| median(&mut epsilons));
    Ok(SweepPoint {
        value: *v,
        status: entry.status.word().to_string(),
        tester: match layer {
            Some(kind) => format!("{tname} [{}]", kind.title()),
            None => tname.to_string(),
        },
        detections,
        repeats: a.repeats,
        median_margin,
        median_epsilon,
        epsilon_delta,
    })
}

/// The median of `v` (sorted in place); NaN when empty.
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.is_empty() {
        f64::NAN
    } else if v.len() % 2 == 1 {
        v[mid]
    } else {
        0.5 * (v[mid - 1] + v[mid])
    }
}

/// The report's row groups: with layers, one per tester and layer, labelled as the points are.
fn row_groups(layers: &[Option<LayerKind>], tester_names: &[String]) -> Vec<String> {
    layers
        .iter()
        .flat_map(|layer| {
            tester_names.iter().map(move |t| match layer {
                Some(kind) => format!("{t} [{}]", kind.title()),
                None => t.clone(),
            })
        })
        .collect()
}
