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
    /// Releases on D: a shard file, JSON lines (one JSON number or array per line, the exec
    /// protocol's line format), `.gz` or `.zst` compressed JSON lines, or `.bin` (little-endian
    /// f64 after a 48-byte header, see `audit sample`). Repeat for several shards.
    #[arg(long, value_name = "FILE")]
    pub samples_a: Vec<PathBuf>,
    /// Releases on D' (same formats); several files (shards) are concatenated in order.
    #[arg(long, value_name = "FILE")]
    pub samples_b: Vec<PathBuf>,
    /// Stream the shards: the training rows in memory, the rest counted shard by shard in
    /// parallel (the default when every tester can, i.e. the hockey-stick testers); an error
    /// for testers that read their samples in memory.
    #[arg(long, conflicts_with = "in_memory")]
    pub stream: bool,
    /// Read every release into memory (as every tester can), even for the hockey-stick tester.
    #[arg(long)]
    pub in_memory: bool,
    /// Streaming: most training rows per side (the first rows, in shard order). The bound is the
    /// in-memory one whenever the tester's own training split (20 % of a side) is smaller.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_TRAIN_ROWS)]
    pub max_train_rows: usize,
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

/// Default of `--max-train-rows`: 2·10^6 rows per side (16 MB per side per coordinate; the
/// event search on them stays well under 1 GB for low-dimensional releases).
pub const DEFAULT_MAX_TRAIN_ROWS: usize = 2_000_000;

pub(super) fn test_samples(a: &TestArgs) -> Result<Outcome> {
    let claim: PrivacyClaim = a.claim.parse()?;
    testers::parse_list(&a.tester)?;
    super::run::check_beta(a.failure_probability)?;
    let transform: Transform = a.transform.parse()?;
    if a.max_train_rows < 4 {
        return Err(Error::InvalidConfig(format!(
            "--max-train-rows {}; allowed: at least 4",
            a.max_train_rows
        )));
    }
    // Every shard is opened and sized first (headers, line counts): a missing, truncated or
    // mismatched shard stops here, before any release is used.
    let (set_a, set_b) = crate::shards::open_sides(&a.samples_a, &a.samples_b)?;
    let (na, nb) = (set_a.names(), set_b.names());
    let config = AuditConfig {
        seed: a.seed,
        samples_per_side: set_a.rows.min(set_b.rows),
        failure_probability: a.failure_probability,
    };
    let (testers, skipped) = super::testers_for(&a.tester, &claim, config.samples_per_side)?;
    // Training rows per side if every tester can stream, with the same split.
    let split = |n: usize| -> Option<usize> {
        let rows: Vec<Option<usize>> = testers.iter().map(|t| t.split_train_rows(n)).collect();
        let first = rows.first().copied().flatten()?;
        rows.iter()
            .all(|r| *r == Some(first))
            .then_some(first.min(a.max_train_rows))
    };
    let streamed = match (split(set_a.rows), split(set_b.rows)) {
        (Some(ta), Some(tb)) if !a.in_memory => Some((ta, tb)),
        _ if a.stream => {
            return Err(Error::InvalidConfig(format!(
                "--stream: the tester(s) {} read their samples in memory; allowed with --stream: --tester hockey-stick or hockey-stick-variational (drop --stream to read the shards in memory)",
                testers
                    .iter()
                    .filter(|t| t.split_train_rows(set_a.rows).is_none())
                    .map(|t| t.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        _ => None,
    };
    if !a.report.no_report {
        crate::report::prepare_report_dir(&a.report.report_dir)?;
    }
    let (mut r, sa, sb) = if let Some(train) = streamed {
        let (ta, tb) = (
            set_a.head(train.0, &transform)?,
            set_b.head(train.1, &transform)?,
        );
        let held = crate::shards::Streamed {
            a: set_a,
            b: set_b,
            train,
            transform,
        };
        let r =
            crate::audit::audit_split((&ta, &tb), &held, (&na, &nb), &claim, &testers, &config)?;
        (r, ta, tb)
    } else {
        let sa = set_a.head(set_a.rows, &transform)?;
        let sb = set_b.head(set_b.rows, &transform)?;
        let r = crate::audit::audit_samples(&sa, &sb, (&na, &nb), &claim, &testers, &config)?;
        (r, sa, sb)
    };
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
        // The figures show the first releases of each side (the samples are the data here;
        // nothing is drawn; a streamed test holds its training rows, the first ones).
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
