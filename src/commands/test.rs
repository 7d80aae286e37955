//! `audit test`: a claim tested on release samples drawn elsewhere.

use std::path::PathBuf;

use clap::Args;

use super::{Outcome, ReportArgs, announce_report, to_json};
use crate::audit::{AuditConfig, Verdict};
use crate::error::{Error, Result};
use crate::mechanisms::PrivacyClaim;
use crate::testers::{self, Transform};

/// Options of `audit test`: a claim tested on samples drawn elsewhere.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Releases on D: one JSON number or array per line (the exec protocol's line format).
    #[arg(long, value_name = "FILE")]
    pub samples_a: Vec<PathBuf>,
    /// Releases on D' (same format); several files (shards) are concatenated in order.
    #[arg(long, value_name = "FILE")]
    pub samples_b: Vec<PathBuf>,
    /// The claim: pure:EPS, approx:EPS:DELTA, renyi:ALPHA:EPS, zcdp:RHO, gdp:MU or dpsgd:Q:Z:T.
    #[arg(long)]
    pub claim: String,
    /// Seed of the testers' own randomness.
    #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
    pub seed: u64,
    /// β of the test.
    #[arg(allow_hyphen_values = true, long, default_value_t = AuditConfig::default().failure_probability)]
    pub failure_probability: f64,
    /// Testers, comma-separated, or "all".
    #[arg(long, default_value = "hockey-stick")]
    pub tester: String,
    /// Post-process both sides' releases before the testers: none, tanh, tanh:S, chebyshev:K
    /// or float-bits.
    #[arg(long, value_name = "NAME", default_value = "none")]
    pub transform: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Where the report goes (as for `audit run`).
    #[command(flatten)]
    pub report: ReportArgs,
}

pub(super) fn test_samples(a: &TestArgs) -> Result<Outcome> {
    let claim: PrivacyClaim = a.claim.parse()?;
    testers::parse_list(&a.tester)?;
    super::run::check_beta(a.failure_probability)?;
    let transform: Transform = a.transform.parse()?;
    if a.samples_a.is_empty() || a.samples_b.is_empty() {
        return Err(Error::InvalidConfig(
            "audit test needs --samples-a FILE and --samples-b FILE".into(),
        ));
    }
    let read = |paths: &[PathBuf]| -> Result<(crate::mechanisms::Samples, String)> {
        let mut parts = Vec::new();
        for p in paths {
            let text = std::fs::read_to_string(p)
                .map_err(|e| Error::InvalidConfig(format!("{}: {e}", p.display())))?;
            let s = crate::exec::parse_lines(
                &text,
                None,
                parts.first().map(|s: &crate::mechanisms::Samples| s.dim()),
            )
            .map_err(|e| Error::InvalidSamples(format!("{}: {e}", p.display())))?;
            parts.push(s);
        }
        let names = paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" + ");
        Ok((crate::mechanisms::Samples::concat(&parts)?, names))
    };
    let (sa, na) = read(&a.samples_a)?;
    let (sb, nb) = read(&a.samples_b)?;
    let (sa, sb) = (transform.apply(&sa)?, transform.apply(&sb)?);
    let config = AuditConfig {
        seed: a.seed,
        samples_per_side: sa.n().min(sb.n()),
        failure_probability: a.failure_probability,
    };
    let (testers, skipped) = super::testers_for(&a.tester, &claim, config.samples_per_side)?;
    if !a.report.no_report {
        crate::report::prepare_report_dir(&a.report.report_dir)?;
    }
    let mut r = crate::audit::audit_samples(&sa, &sb, (&na, &nb), &claim, &testers, &config)?;
    r.skipped_testers = skipped;
    r.output_transform = (!transform.is_identity()).then_some(transform);
    let code = match r.verdict {
        Verdict::Violation => 1,
        Verdict::NoViolation => 0,
    };
    // As for `audit run`: the verdict is printed even when the report cannot be written.
    let written = if a.report.no_report {
        Ok(None)
    } else {
        // The figures show the first releases of each file (the samples are the data here;
        // nothing is drawn).
        let head = |s: &crate::mechanisms::Samples| -> Result<crate::mechanisms::Samples> {
            let n = s.n().min(crate::report::PLOT_SAMPLES_PER_SIDE);
            Ok(crate::mechanisms::Samples::new(
                s.values().slice(ndarray::s![..n, ..]).to_owned(),
            )?)
        };
        let plots = crate::report::PlotData {
            sides: Some((head(&sa)?, head(&sb)?)),
        };
        let mut page = r.to_audit_report();
        page.reproduce = Some(super::run::reproduce_line(None));
        crate::report::write_run_report(&a.report.report_dir, &page, &plots).map(Some)
    };
    let (index, late_error) = super::split_late(written);
    let mut stdout = if a.json {
        to_json(&r)?
    } else {
        crate::report::text::render_samples_text(&r, sa.dim())
    };
    if let Some(index) = &index {
        announce_report(index, a.json, a.report.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}
