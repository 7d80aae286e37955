//! One view of `audit test` (a transform of the releases: the values, their float
//! representation, …): the testers on the shards, read in memory or streamed, recorded for a
//! plan or replayed from one.

use super::layered::ViewRun;
use super::plan;
use super::{Held, TestOptions};
use crate::audit::AuditConfig;
use crate::error::{Error, Result};
use crate::modes::claim::ClaimArg;
use crate::report::output::{announce_report, split_late, to_json};
use crate::testers::Transform;
use crate::testers::rows::{Rows, TrainRows};

type Sides = (
    crate::sources::shards::ShardSet,
    crate::sources::shards::ShardSet,
);

/// One view (`transform`) at failure probability `beta`, on the shards `sides` (opened by the
/// caller), also returning the report (text, release dimension, code, late error, the
/// figures' releases). `announce`: a test of one view (prints JSON, writes its page).
pub(super) fn test_view_report(
    a: &TestOptions,
    claim_arg: &ClaimArg,
    transform: Transform,
    beta: f64,
    announce: bool,
    held: Held<'_>,
    sides: &Sides,
) -> Result<ViewRun> {
    let claim = claim_arg.claim;
    let (set_a, set_b) = (sides.0.clone(), sides.1.clone());
    let set_dim = set_a.shards.first().map_or(1, |s| s.dim);
    let config = AuditConfig {
        seed: a.seed,
        samples_per_side: set_a.rows.min(set_b.rows),
        failure_probability: beta,
    };
    let (testers, skipped) =
        crate::modes::checks::testers_for(&a.tester, &claim, config.samples_per_side)?;
    let streamed = streamed_split(a, &testers, (set_a.rows, set_b.rows), held)?;
    let (mut r, sa, sb) = match streamed {
        Some(train) => audit_streamed(claim_arg, &testers, &config, transform, held, sides, train)?,
        None => {
            let sa = set_a.head(set_a.rows, &transform)?;
            let sb = set_b.head(set_b.rows, &transform)?;
            let names = (set_a.names(), set_b.names());
            let r = crate::audit::audit_samples(
                &sa,
                &sb,
                (&names.0, &names.1),
                &claim,
                &testers,
                &config,
            )?;
            (r, TrainRows::Values(sa), TrainRows::Values(sb))
        }
    };
    r.skipped_testers = skipped;
    r.output_transform = (!transform.is_identity()).then_some(transform);
    if let Some(e) = r.empirical_epsilon.as_mut() {
        e.accountant = claim_arg.accountant.clone().filter(|x| x.delta == e.delta);
    }
    finish_view(a, r, (sa.rows(), sb.rows()), set_dim, announce, held)
}

/// Training rows per side when every tester can stream, with the same split (None: the sides
/// are read in memory); an error when streaming was asked for (or a plan needs it) and a tester
/// cannot.
fn streamed_split(
    a: &TestOptions,
    testers: &[Box<dyn crate::testers::PropertyTester>],
    rows: (usize, usize),
    held: Held<'_>,
) -> Result<Option<(usize, usize)>> {
    let split = |n: usize| -> Option<usize> {
        let rows: Vec<Option<usize>> = testers.iter().map(|t| t.split_train_rows(n)).collect();
        let first = rows.first().copied().flatten()?;
        rows.iter()
            .all(|r| *r == Some(first))
            .then_some(first.min(a.max_train_rows))
    };
    match (split(rows.0), split(rows.1)) {
        (Some(ta), Some(tb)) if !a.in_memory => Ok(Some((ta, tb))),
        _ if a.stream || !held.is_read() => Err(Error::InvalidConfig(format!(
            "{}: the tester(s) {} read their samples in memory; allowed: --tester hockey-stick or hockey-stick-variational (drop {} to read the shards in memory)",
            if a.stream { "--stream" } else { "--plan-out" },
            testers
                .iter()
                .filter(|t| t.split_train_rows(rows.0).is_none())
                .map(|t| t.name())
                .collect::<Vec<_>>()
                .join(", "),
            if a.stream { "--stream" } else { "--plan-out" },
        ))),
        _ => Ok(None),
    }
}

/// The testers on the first `train` rows of each side, the held-out rows streamed from the
/// shards, recorded for a plan, or replayed from its counts (as `held` says): the report and
/// the training rows.
fn audit_streamed(
    claim_arg: &ClaimArg,
    testers: &[Box<dyn crate::testers::PropertyTester>],
    config: &AuditConfig,
    transform: Transform,
    held: Held<'_>,
    sides: &Sides,
    train: (usize, usize),
) -> Result<(crate::audit::SampleTestReport, TrainRows, TrainRows)> {
    let claim = claim_arg.claim;
    let (set_a, set_b) = (sides.0.clone(), sides.1.clone());
    let (na, nb) = (set_a.names(), set_b.names());
    let (ta, tb) = crate::stages::time("read the training rows", || {
        Ok::<_, Error>((
            set_a.head_rows(train.0, &transform)?,
            set_b.head_rows(train.1, &transform)?,
        ))
    })?;
    let held_out = (set_a.rows - train.0, set_b.rows - train.1);
    let train_rows = (ta.rows(), tb.rows());
    let r = match held {
        Held::Read | Held::Given(_) => {
            let held = crate::sources::shards::Streamed {
                a: set_a,
                b: set_b,
                train,
                transform,
            };
            crate::audit::audit_split(train_rows, &held, (&na, &nb), &claim, testers, config)?
        }
        Held::Record(recording) => {
            let recorder = plan::Recorder::new(held_out);
            let r = crate::audit::audit_split(
                train_rows,
                &recorder,
                (&na, &nb),
                &claim,
                testers,
                config,
            )?;
            recording
                .views
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(recorder.view(transform, train));
            r
        }
        Held::Replay(reduced) => {
            let replayer = reduced.replayer(transform, train, held_out)?;
            let r = crate::audit::audit_split(
                train_rows,
                &replayer,
                (&na, &nb),
                &claim,
                testers,
                config,
            )?;
            replayer.finish()?;
            r
        }
    };
    Ok((r, ta, tb))
}

/// A view's figures (the first releases of each side), its page (a test of one view only), and
/// its text or record.
fn finish_view(
    a: &TestOptions,
    r: crate::audit::SampleTestReport,
    (sa, sb): (Rows<'_>, Rows<'_>),
    dim: usize,
    announce: bool,
    held: Held<'_>,
) -> Result<ViewRun> {
    let code = crate::report::output::exit_code(r.verdict);
    // The figures show the first releases of each side (the samples are the data here;
    // nothing is drawn; a streamed test holds its training rows, the first ones).
    let head = |s: Rows<'_>| s.head_samples(crate::report::PLOT_SAMPLES_PER_SIDE);
    // Copied only for a page that will be written (the float layer's rows are five values
    // each: copying them cost a millisecond at 10^5 releases per side, for nothing).
    let writes_page = !a.output.no_report && held.is_read_or_replay();
    let plots = crate::report::PlotData {
        sides: if writes_page {
            Some((head(sa)?, head(sb)?))
        } else {
            None
        },
    };
    // As for `audit run`: the verdict is printed even when the report cannot be written. A
    // layered test (`announce` false) writes one page for both layers, in test_layered.
    let written = if !writes_page || !announce {
        Ok(None)
    } else {
        let mut page = r.to_audit_report();
        page.reproduce = Some(held.reproduce());
        crate::report::write_run_report(&a.output.report_dir, &page, &plots).map(Some)
    };
    let (index, late_error) = split_late(written);
    let mut stdout = if a.output.json && announce {
        let mut rec = crate::record::ResultRecord::from_sample_test(&r);
        rec.reproduce = Some(held.reproduce());
        to_json(&rec)?
    } else {
        crate::report::text::render_samples_text(&r, sa.dim())
    };
    if let Some(index) = &index {
        announce_report(
            index,
            a.output.json && announce,
            a.output.quiet,
            &mut stdout,
        );
    }
    Ok((r, (stdout, dim), code, late_error, plots))
}
