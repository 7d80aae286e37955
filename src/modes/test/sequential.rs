//! `audit test --sequential`: the anytime-valid betting test on the files' releases in their
//! order.

use super::TestOptions;
use super::{GivenSides, plain_reproduce_line};
use crate::audit::LayeredSequential;
use crate::audit::Verdict;
use crate::audit::sequential::{SequentialConfig, SequentialReport, audit_sequential_samples};
use crate::error::{Error, Result};
use crate::modes::claim::ClaimArg;
use crate::record::layers::{Check, LayerKind, LayerVerdict};
use crate::report::output::{Outcome, announce_report, to_json};
use crate::testers::Transform;

/// `audit test --sequential`: the betting test ([`crate::audit::sequential`]) on the files'
/// releases in their order, once per layer (β split evenly) or through the one view
/// `--transform` names. Every side is read in memory (up to --max-samples releases).
pub(super) fn test_sequential(a: &TestOptions, claim: &ClaimArg) -> Result<Outcome> {
    test_sequential_on(a, claim, None)
}

/// The views a sequential test bets on: the one `--transform` names (no layer), else each layer
/// `--check` asks for.
fn views(a: &TestOptions) -> Result<Vec<(Option<LayerKind>, Transform)>> {
    Ok(match &a.transform {
        Some(t) => vec![(None, t.parse()?)],
        None => a
            .check
            .as_deref()
            .unwrap_or("both")
            .parse::<Check>()?
            .layers()
            .into_iter()
            .map(|k| (Some(k), k.transform()))
            .collect(),
    })
}

/// The betting test of each view on the first `n` releases of each side (read once): each
/// view's report, and each layer's answer beside it (none for a `--transform` view).
#[allow(clippy::type_complexity)]
fn bet_on_views(
    sides: (
        &crate::sources::shards::ShardSet,
        &crate::sources::shards::ShardSet,
    ),
    n: usize,
    views: Vec<(Option<LayerKind>, Transform)>,
    (info, files): (&crate::record::MechanismInfo, &crate::record::SampleFiles),
    config: &SequentialConfig,
    reproduce: &str,
) -> Result<(Vec<(LayerVerdict, SequentialReport)>, Vec<SequentialReport>)> {
    let mut runs: Vec<(LayerVerdict, SequentialReport)> = Vec::new();
    let mut reports = Vec::new();
    let mut mechanism_violates = false;
    // Each side is read once; every view is a function of the releases.
    let identity = Transform::default();
    let (raw_a, raw_b) = (sides.0.head(n, &identity)?, sides.1.head(n, &identity)?);
    for (kind, transform) in views {
        use std::borrow::Cow;
        let (sa, sb) = if transform.is_identity() {
            (Cow::Borrowed(&raw_a), Cow::Borrowed(&raw_b))
        } else {
            (
                Cow::Owned(transform.apply(&raw_a)?),
                Cow::Owned(transform.apply(&raw_b)?),
            )
        };
        config.validate(sa.dim())?;
        let mut r = audit_sequential_samples(&sa, &sb, info.clone(), files.clone(), config)?;
        r.reproduce = Some(reproduce.to_string());
        r.output_transform = (!transform.is_identity()).then_some(transform);
        if let Some(kind) = kind {
            let share = config.failure_probability;
            let v = LayeredSequential::layer_verdict(kind, share, r.verdict, mechanism_violates);
            mechanism_violates |= kind == LayerKind::Mechanism && r.verdict == Verdict::Violation;
            runs.push((v, r.clone()));
        }
        reports.push(r);
    }
    Ok((runs, reports))
}

/// [`test_sequential`] on the files' sides, or on `given` (sides in memory and their reproduce
/// line: [`super::test_given`]): what it prints with `a.output.json` (`stdout`) and the other
/// rendering too.
pub(super) fn test_sequential_on(
    a: &TestOptions,
    claim: &ClaimArg,
    given: Option<(&GivenSides, &mut String)>,
) -> Result<Outcome> {
    if !crate::modes::checks::runs_sequentially(&a.tester) {
        return Err(Error::InvalidConfig(format!(
            "--tester {} with --sequential; the sequential test uses its own betting test, leave --tester out",
            a.tester
        )));
    }
    let (set_a, set_b) = match &given {
        Some((g, _)) => g.sides.clone(),
        None => crate::sources::shards::open_sides(&a.samples_a, &a.samples_b)?,
    };
    let reproduce = match &given {
        Some((g, _)) => g.reproduce.clone(),
        None => plain_reproduce_line(),
    };
    let defaults = SequentialConfig::default();
    let available = set_a.rows.min(set_b.rows);
    let n = a.max_samples.unwrap_or(available).min(available);
    let views = views(a)?;
    let share = a.failure_probability / views.len() as f64;
    let config = SequentialConfig {
        seed: a.seed,
        max_samples_per_side: n,
        first_batch: a.first_batch.unwrap_or(defaults.first_batch),
        failure_probability: share,
    };
    if !a.output.no_report && given.is_none() {
        crate::report::prepare_report_dir(&a.output.report_dir)?;
    }
    let files = crate::record::SampleFiles {
        a: set_a.names(),
        samples_a: set_a.rows,
        b: set_b.names(),
        samples_b: set_b.rows,
    };
    let info = crate::record::MechanismInfo {
        id: format!("releases from {} and {}", files.a, files.b),
        claim: claim.claim,
        claim_source: "given on the command line (--claim)".into(),
        neighboring: crate::mechanisms::Neighboring::AddRemove,
        catalogue_status: None,
        setting: Default::default(),
        privacy_unit: String::new(),
        scope: Default::default(),
    };
    let (runs, reports) = bet_on_views(
        (&set_a, &set_b),
        n,
        views,
        (&info, &files),
        &config,
        &reproduce,
    )?;
    sequential_outcome(a, &runs, &reports, given.map(|(_, other)| other))
}

/// What a sequential test prints (JSON or text) and, for a caller in memory (`other`), the
/// other rendering; else the pages, one per view.
fn sequential_outcome(
    a: &TestOptions,
    runs: &[(LayerVerdict, SequentialReport)],
    reports: &[SequentialReport],
    other: Option<&mut String>,
) -> Result<Outcome> {
    let violation = reports.iter().any(|r| r.verdict == Verdict::Violation);
    let code = u8::from(violation);
    let json = || -> Result<String> {
        let rec = if runs.is_empty() {
            let mut r = reports[0].clone();
            r.wall_time_seconds = None;
            crate::record::ResultRecord::from_sequential(&r)
        } else {
            LayeredSequential::new(runs).record()
        };
        to_json(&rec.without_wall_time())
    };
    let text = || {
        if runs.is_empty() {
            crate::audit::sequential::render_text(&reports[0])
        } else {
            LayeredSequential::render_text(runs, a.failure_probability)
        }
    };
    let mut stdout = if a.output.json { json()? } else { text() };
    if let Some(other) = other {
        // The caller in memory writes no report; it gets both renderings.
        *other = if a.output.json { text() } else { json()? };
        return Ok(Outcome::new(stdout, code));
    }
    let mut late_error = None;
    if !a.output.no_report {
        for r in reports {
            match crate::report::sequential::write_sequential_report(&a.output.report_dir, r) {
                Ok(index) => announce_report(&index, a.output.json, a.output.quiet, &mut stdout),
                Err(e) => {
                    late_error.get_or_insert(e);
                }
            }
        }
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}
