//! `audit test`: a claim tested on release samples drawn elsewhere.

use std::path::PathBuf;

use clap::Args;

use super::claim_arg::ClaimArg;
use super::{Outcome, ReportArgs, announce_report, to_json};
use crate::audit::{AuditConfig, Verdict};
use crate::error::{Error, Result};
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
    /// The claim: pure:EPS, approx:EPS:DELTA, renyi:ALPHA:EPS, zcdp:RHO, gdp:MU, dpsgd:Q:Z:T,
    /// or ledger:FILE[:DELTA] (the PLD accountant's ε on a privacy ledger at δ, default 1e-5).
    #[arg(long)]
    pub claim: String,
    /// Seed of the testers' own randomness: the Poisson number of held-out releases each bound
    /// counts, and randomized testers. It does not choose the training/held-out split, which is
    /// positional (the first rows of each side, in shard order, train; the rest are held out):
    /// the releases are assumed i.i.d. in file order, so a split by position is as good as a
    /// random one and lets the held-out rows be streamed.
    #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
    pub seed: u64,
    /// β of the test.
    #[arg(allow_hyphen_values = true, long, default_value_t = AuditConfig::default().failure_probability)]
    pub failure_probability: f64,
    /// Testers, comma-separated, or "all".
    #[arg(long, default_value = "hockey-stick")]
    pub tester: String,
    /// Post-process both sides' releases before the testers through one view: none, values,
    /// float-repr, tanh, tanh:S, chebyshev:K, float-bits or auto. Without it (the default, as
    /// for `audit run --exec`) both layers run: the mechanism layer on the values and the
    /// floating-point layer on their representation (see --check).
    #[arg(long, value_name = "NAME", conflicts_with = "check")]
    pub transform: Option<String>,
    /// Which layers run and decide the exit code: mechanism, float or both [default: both].
    #[arg(long, value_name = "LAYERS")]
    pub check: Option<String>,
    /// With a bdp: claim: the definition tested, 1 (strong BDP; events on (x', output)) or 2
    /// (weak BDP; events on the output only) [default: 1]. The shards are then pairs
    /// {"x": [...], "w": [...]} (see `audit sample --bdp-data`).
    #[arg(long, value_name = "1|2")]
    pub bdp_definition: Option<String>,
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
    // No --neighbors here: a ledger claim is accounted under add/remove, the accountant's default.
    let claim =
        super::claim_arg::parse_claim_arg(&a.claim, crate::mechanisms::Neighboring::AddRemove)?;
    testers::parse_list(&a.tester)?;
    super::run::check_beta(a.failure_probability)?;
    if claim.claim.is_bayesian() {
        return test_bayesian(a, &claim);
    }
    if a.bdp_definition.is_some() {
        return Err(Error::InvalidConfig(format!(
            "--bdp-definition applies to a Bayesian DP claim (bdp:EPS:DELTA); the claim is {}, leave it out",
            claim.claim
        )));
    }
    if let Some(t) = &a.transform {
        let transform: Transform = t.parse()?;
        return test_view(a, &claim, transform, a.failure_probability, true);
    }
    let check: crate::record::layers::Check = a.check.as_deref().unwrap_or("both").parse()?;
    test_layered(a, &claim, check)
}

/// Both layers (see [`crate::record::layers`]) on the same files: each layer is the one-view test of
/// its transform at its share of β (β split evenly over the layers asked for; the
/// floating-point layer is skipped, its share unspent, when the first rows of both sides are
/// all integers).
fn test_layered(
    a: &TestArgs,
    claim: &ClaimArg,
    check: crate::record::layers::Check,
) -> Result<Outcome> {
    use crate::record::layers::{LayerKind, LayerVerdict};
    let layers = check.layers();
    let share = a.failure_probability / layers.len() as f64;
    let mut results: Vec<(LayerVerdict, Option<crate::audit::SampleTestReport>)> = Vec::new();
    let mut stdout = String::new();
    let mut code = 0u8;
    let mut late = None;
    let mut mechanism_violates = false;
    let mut pages: Vec<(crate::audit::AuditReport, crate::report::PlotData, u8)> = Vec::new();
    for kind in layers {
        if kind == LayerKind::FloatingPoint {
            let (set_a, set_b) = crate::sources::shards::open_sides(&a.samples_a, &a.samples_b)?;
            let head = |set: &crate::sources::shards::ShardSet| {
                set.head(set.rows.min(10_000), &Transform::None)
            };
            if crate::record::layers::integer_valued(&[&head(&set_a)?, &head(&set_b)?]) {
                results.push((
                    LayerVerdict::skipped(
                        kind,
                        "every output is an integer (first 10 000 releases of each side), whose floating-point representation is exact; its share of β is unspent",
                    ),
                    None,
                ));
                continue;
            }
        }
        let (r, text, c, l, plots) = test_view_report(a, claim, kind.transform(), share, false)?;
        let names = kind.transform().feature_names(text.1);
        let mut r = r;
        for b in &mut r.bounds {
            if let Some(e) = &mut b.event {
                e.description = crate::record::layers::in_words(&e.description, &names);
            }
        }
        if let Some(ev) = r.empirical_epsilon.as_mut().and_then(|e| e.event.as_mut()) {
            *ev = crate::record::layers::in_words(ev, &names);
        }
        let page = r.to_audit_report();
        let v = LayerVerdict::from_confirmations(
            kind,
            share,
            std::slice::from_ref(&page),
            mechanism_violates,
        );
        pages.push((page, plots, c));
        mechanism_violates |= kind == LayerKind::Mechanism && c == 1;
        code = code.max(c);
        if late.is_none() {
            late = l;
        }
        stdout += &format!("\n===== layer: {} =====\n{}", kind.title(), text.0);
        results.push((v, Some(r)));
    }
    let verdicts: Vec<LayerVerdict> = results.iter().map(|(v, _)| v.clone()).collect();
    // One page for both layers: the violating layer's test (the mechanism's first), else the
    // mechanism layer's, with both answers at its head.
    let index = if a.report.no_report {
        None
    } else {
        let k = pages.iter().position(|p| p.2 == 1).unwrap_or(0);
        match pages.into_iter().nth(k) {
            Some((mut page, plots, _)) => {
                page.layers = Some(verdicts.clone());
                page.reproduce = Some(super::run::reproduce_line(None));
                match crate::report::write_run_report(&a.report.report_dir, &page, &plots) {
                    Ok(i) => Some(i),
                    Err(e) => {
                        late.get_or_insert(e);
                        None
                    }
                }
            }
            None => None,
        }
    };
    if a.json {
        #[derive(serde::Serialize)]
        struct Layer<'a> {
            verdict: &'a LayerVerdict,
            #[serde(skip_serializing_if = "Option::is_none")]
            test: Option<&'a crate::audit::SampleTestReport>,
        }
        #[derive(serde::Serialize)]
        struct Layered<'a> {
            layers: Vec<Layer<'a>>,
            verdict: crate::audit::Verdict,
        }
        let out = Layered {
            layers: results
                .iter()
                .map(|(v, r)| Layer {
                    verdict: v,
                    test: r.as_ref(),
                })
                .collect(),
            verdict: if code == 1 {
                Verdict::Violation
            } else {
                Verdict::NoViolation
            },
        };
        let mut rec = crate::record::ResultRecord::from_layered_sample_test(&results, &out);
        rec.reproduce = Some(super::run::reproduce_line(None));
        stdout = to_json(&rec)?;
    } else {
        stdout += "\n===== answers =====\n";
        stdout += &crate::record::layers::render_text(&verdicts);
        stdout += &format!(
            "β            {} split evenly over the {} layer(s) asked for (union bound)\nverdict      {}\n",
            crate::mechanisms::math::readable(a.failure_probability),
            verdicts.len(),
            if code == 1 {
                "violation found"
            } else {
                "no violation found"
            }
        );
    }
    if let Some(index) = &index {
        announce_report(index, a.json, a.report.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code,
        late_error: late,
    })
}

/// One view (an explicit `--transform`) at failure probability `beta`.
fn test_view(
    a: &TestArgs,
    claim: &ClaimArg,
    transform: Transform,
    beta: f64,
    announce: bool,
) -> Result<Outcome> {
    let (_, (stdout, _), code, late_error, _) =
        test_view_report(a, claim, transform, beta, announce)?;
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}

#[allow(clippy::type_complexity)]
/// [`test_view`], also returning the report (text, release dimension, code, late error, the
/// figures' releases). `announce`: a test of one view (prints JSON, writes its page).
fn test_view_report(
    a: &TestArgs,
    claim_arg: &ClaimArg,
    transform: Transform,
    beta: f64,
    announce: bool,
) -> Result<(
    crate::audit::SampleTestReport,
    (String, usize),
    u8,
    Option<Error>,
    crate::report::PlotData,
)> {
    let claim = claim_arg.claim;
    if a.max_train_rows < 4 {
        return Err(Error::InvalidConfig(format!(
            "--max-train-rows {}; allowed: at least 4",
            a.max_train_rows
        )));
    }
    // Every shard is opened and sized first (headers, line counts): a missing, truncated or
    // mismatched shard stops here, before any release is used.
    let (set_a, set_b) = crate::sources::shards::open_sides(&a.samples_a, &a.samples_b)?;
    let set_dim = set_a.shards.first().map_or(1, |s| s.dim);
    let (na, nb) = (set_a.names(), set_b.names());
    let config = AuditConfig {
        seed: a.seed,
        samples_per_side: set_a.rows.min(set_b.rows),
        failure_probability: beta,
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
        let held = crate::sources::shards::Streamed {
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
    if let Some(e) = r.empirical_epsilon.as_mut() {
        e.accountant = claim_arg.accountant.clone().filter(|x| x.delta == e.delta);
    }
    let code = crate::report::output::exit_code(r.verdict);
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
    // As for `audit run`: the verdict is printed even when the report cannot be written. A
    // layered test (`announce` false) writes one page for both layers, in test_layered.
    let written = if a.report.no_report || !announce {
        Ok(None)
    } else {
        let mut page = r.to_audit_report();
        page.reproduce = Some(super::run::reproduce_line(None));
        crate::report::write_run_report(&a.report.report_dir, &page, &plots).map(Some)
    };
    let (index, late_error) = super::split_late(written);
    let dim = set_dim;
    let mut stdout = if a.json && announce {
        let mut rec = crate::record::ResultRecord::from_sample_test(&r);
        rec.reproduce = Some(super::run::reproduce_line(None));
        to_json(&rec)?
    } else {
        crate::report::text::render_samples_text(&r, sa.dim())
    };
    if let Some(index) = &index {
        announce_report(index, a.json && announce, a.report.quiet, &mut stdout);
    }
    Ok((r, (stdout, dim), code, late_error, plots))
}

/// `audit test --claim bdp:EPS:DELTA`: the Bayesian DP test ([`crate::audit::bayesian`]) on
/// shards of (x', w) pairs, side a from Q̃ and side b from P̃ (see
/// [`crate::sources::bayesian_shards`]); one bound at the full β.
fn test_bayesian(a: &TestArgs, claim: &ClaimArg) -> Result<Outcome> {
    use crate::audit::bayesian::{Definition, bayesian_claim};
    use crate::sources::bayesian_shards::{check_sides, read_side};
    use crate::sources::shards::ShardSide;
    let start = std::time::Instant::now();
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
    let definition = match &a.bdp_definition {
        Some(d) => Definition::parse_flag(d)?,
        None => Definition::Strong,
    };
    let (claim_v, epsilon, delta) = bayesian_claim(&claim.claim)?;
    let sa = read_side(&a.samples_a, ShardSide::A, "--samples-a")?;
    let sb = read_side(&a.samples_b, ShardSide::B, "--samples-b")?;
    check_sides(&a.samples_a, &a.samples_b, &sa, &sb)?;
    if !a.report.no_report {
        crate::report::prepare_report_dir(&a.report.report_dir)?;
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
    let meta = sa.sidecars.first().or(sb.sidecars.first());
    // Every distinct x' with its draws per side, counted once.
    let drawn = crate::audit::bayesian::drawn_records(&sa.x, &sb.x);
    let info = crate::record::BayesianInfo {
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
    };
    let mechanism = crate::record::MechanismInfo {
        id: format!("releases from {} and {}", sa.names, sb.names),
        claim: claim_v,
        claim_source: "given on the command line (--claim)".into(),
        neighboring: crate::mechanisms::Neighboring::AddRemove,
        catalogue_status: None,
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
    let code = crate::report::output::exit_code(report.verdict);
    let written = if a.report.no_report {
        Ok(None)
    } else {
        let mut page = report.clone();
        page.reproduce = Some(super::run::reproduce_line(None));
        crate::report::write_run_report(
            &a.report.report_dir,
            &page,
            &crate::report::PlotData::none(),
        )
        .map(Some)
    };
    let (index, late_error) = super::split_late(written);
    let mut stdout = if a.json {
        report.wall_time_seconds = None;
        let mut rec = crate::record::ResultRecord::from_audit(&report);
        rec.reproduce = Some(super::run::reproduce_line(None));
        to_json(&rec)?
    } else {
        crate::report::text::render_text(&report)
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
