//! `audit test --claim bdp:EPS:DELTA`: the Bayesian DP test on shards of (x', w) pairs.

use super::TestOptions;
use super::plain_reproduce_line;
use crate::error::{Error, Result};
use crate::modes::claim::ClaimArg;
use crate::report::output::{Outcome, announce_report, split_late, to_json};

/// `audit test --claim bdp:EPS:DELTA`: the Bayesian DP test ([`crate::audit::bayesian`]) on
/// shards of (x', w) pairs, side a from Q̃ and side b from P̃ (see
/// [`crate::sources::bayesian_shards`]); one bound at the full β.
pub(super) fn test_bayesian(a: &TestOptions, claim: &ClaimArg) -> Result<Outcome> {
    use crate::audit::bayesian::{Definition, bayesian_claim};
    use crate::sources::bayesian_shards::{check_sides, read_side};
    use crate::sources::shards::ShardSide;
    let start = std::time::Instant::now();
    check_flags(a, claim)?;
    let definition = match &a.bdp_definition {
        Some(d) => Definition::parse_flag(d)?,
        None => Definition::Strong,
    };
    let (claim_v, epsilon, delta) = bayesian_claim(&claim.claim)?;
    let sa = read_side(&a.samples_a, ShardSide::A, "--samples-a")?;
    let sb = read_side(&a.samples_b, ShardSide::B, "--samples-b")?;
    check_sides(&a.samples_a, &a.samples_b, &sa, &sb)?;
    if !a.output.no_report {
        crate::report::prepare_report_dir(&a.output.report_dir)?;
    }
    let bound = crate::audit::bayesian::bound_pairs(
        (&sa.x, &sa.w),
        (&sb.x, &sb.w),
        epsilon,
        delta,
        a.failure_probability,
        definition,
        crate::rng::Seed(a.seed),
    )?;
    let info = bayesian_info(&sa, &sb, definition)?;
    let mechanism = crate::record::MechanismInfo {
        id: format!("releases from {} and {}", sa.names, sb.names),
        claim: claim_v,
        claim_source: "given on the command line (--claim)".into(),
        neighboring: crate::mechanisms::Neighboring::AddRemove,
        catalogue_status: None,
        setting: Default::default(),
        privacy_unit: String::new(),
        scope: Default::default(),
    };
    let mut report = crate::audit::bayesian::report(
        mechanism,
        crate::audit::bayesian::Outcome {
            bound,
            info,
            seed: a.seed,
            beta: a.failure_probability,
            calls: 0,
        },
        start,
    );
    report.sample_files = Some(crate::record::SampleFiles {
        a: sa.names.clone(),
        samples_a: sa.x.n(),
        b: sb.names.clone(),
        samples_b: sb.x.n(),
    });
    bayesian_outcome(a, report)
}

/// The flags a Bayesian DP test refuses: views and streaming (its rows are pairs read in
/// memory), and worst-case testers.
fn check_flags(a: &TestOptions, claim: &ClaimArg) -> Result<()> {
    for (flag, on) in [
        ("--transform", a.transform.is_some()),
        ("--check", a.check.is_some()),
        ("--stream", a.stream),
    ] {
        if on {
            return Err(Error::InvalidConfig(format!(
                "{flag} does not apply to a Bayesian DP test (claim {}): its rows are (x', w) pairs read in memory; leave {flag} out",
                claim.claim
            )));
        }
    }
    if a.tester != "hockey-stick" && a.tester != crate::audit::bayesian::TESTER_NAME {
        return Err(Error::InvalidConfig(format!(
            "--tester {} with a Bayesian DP claim; only {} tests it; leave --tester out",
            a.tester,
            crate::audit::bayesian::TESTER_NAME
        )));
    }
    Ok(())
}

/// What the record says of the data: the distribution the shards were drawn from (their
/// sidecar, when `audit sample` wrote one), and every distinct x' with its draws per side.
fn bayesian_info(
    sa: &crate::sources::bayesian_shards::SidePairs,
    sb: &crate::sources::bayesian_shards::SidePairs,
    definition: crate::audit::bayesian::Definition,
) -> Result<crate::record::BayesianInfo> {
    let meta = sa.sidecars.first().or(sb.sidecars.first());
    // Every distinct x' with its draws per side, counted once.
    let drawn = crate::audit::bayesian::drawn_records(&sa.x, &sb.x);
    Ok(crate::record::BayesianInfo {
        data_source: meta.map_or_else(
            || "not recorded (shards without a sidecar): the x' in the shard lines".to_string(),
            |m| format!("{} (as recorded by audit sample)", m.data_source),
        ),
        records: meta.map_or(0, |m| m.records),
        distinct_records: meta.map_or(0, |m| m.distinct_records),
        base: meta.map_or(crate::mechanisms::Dataset::empty(sa.x.dim())?, |m| {
            m.base.clone()
        }),
        draws_per_side: sa.x.n().min(sb.x.n()),
        distinct_drawn: drawn.iter().filter(|d| d.second > 0).count(),
        features: crate::audit::bayesian::features_words(sa.w.dim(), sa.x.dim(), definition),
        definition: definition.label().to_string(),
        dataset_drawn: meta.is_some_and(|m| m.dataset_drawn),
        drawn,
        group: None,
    })
}

/// The Bayesian test's page, and its text or record.
fn bayesian_outcome(a: &TestOptions, mut report: crate::audit::AuditReport) -> Result<Outcome> {
    let code = crate::report::output::exit_code(report.verdict);
    let written = if a.output.no_report {
        Ok(None)
    } else {
        let mut page = report.clone();
        page.reproduce = Some(plain_reproduce_line());
        crate::report::write_run_report(
            &a.output.report_dir,
            &page,
            &crate::report::PlotData::none(),
        )
        .map(Some)
    };
    let (index, late_error) = split_late(written);
    let mut stdout = if a.output.json {
        report.wall_time_seconds = None;
        let mut rec = crate::record::ResultRecord::from_audit(&report);
        rec.reproduce = Some(plain_reproduce_line());
        to_json(&rec)?
    } else {
        crate::report::text::render_text(&report)
    };
    if let Some(index) = &index {
        announce_report(index, a.output.json, a.output.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}
