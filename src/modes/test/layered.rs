//! Both layers of `audit test` on the same files: each layer is the one-view test of its
//! transform ([`super::view`]) at its share of β, one page and one record for both.

use std::path::PathBuf;

use super::view::test_view_report;
use super::{Held, TestOptions};
use crate::audit::Verdict;
use crate::error::{Error, Result};
use crate::modes::claim::ClaimArg;
use crate::record::layers::{LayerKind, LayerVerdict};
use crate::report::output::{Outcome, announce_report, to_json};
use crate::testers::Transform;

/// What one view's test gives: the report, (text, release dimension), exit code, late error,
/// the figures' releases.
pub(super) type ViewRun = (
    crate::audit::SampleTestReport,
    (String, usize),
    u8,
    Option<Error>,
    crate::report::PlotData,
);

/// Both layers (see [`crate::record::layers`]) on the same files: each layer is the one-view test of
/// its transform at its share of β (β split evenly over the layers asked for; the
/// floating-point layer is skipped, its share unspent, when the first rows of both sides are
/// all integers). The layers run at once (rayon), each on its own copy of the shard list;
/// their results are combined in layer order, so the output does not depend on the threads.
pub(super) fn test_layered(
    a: &TestOptions,
    claim: &ClaimArg,
    check: crate::record::layers::Check,
    held: Held<'_>,
) -> Result<Outcome> {
    let out = layered_outputs(a, claim, check, held, a.output.json)?;
    let mut stdout = out.json.unwrap_or(out.text);
    if let Some(index) = &out.index {
        announce_report(index, a.output.json, a.output.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code: out.code,
        late_error: out.late,
    })
}

/// What a layered test gives: its text, its JSON record (when asked for), the exit code, a
/// late error and the page written.
pub(super) struct LayeredOutputs {
    pub(super) text: String,
    pub(super) json: Option<String>,
    pub(super) code: u8,
    pub(super) late: Option<Error>,
    pub(super) index: Option<PathBuf>,
}

/// One layer's answer and its test (none when the layer was skipped).
type LayerResult = (LayerVerdict, Option<crate::audit::SampleTestReport>);

/// The layers' tests combined in layer order: their answers, the text of each, the exit code,
/// the first late error, and each tested layer's page (with its figures and code).
struct Combined {
    results: Vec<LayerResult>,
    stdout: String,
    code: u8,
    late: Option<Error>,
    pages: Vec<(crate::audit::AuditReport, crate::report::PlotData, u8)>,
}

/// [`test_layered`]'s work: both renderings (the record only when `json`).
pub(super) fn layered_outputs(
    a: &TestOptions,
    claim: &ClaimArg,
    check: crate::record::layers::Check,
    held: Held<'_>,
    json: bool,
) -> Result<LayeredOutputs> {
    let layers = check.layers();
    let share = a.failure_probability / layers.len() as f64;
    // Every shard is opened and sized first (headers, line counts): a missing, truncated or
    // mismatched shard stops here, before any release is used.
    let sides = crate::stages::time("open the shards", || held.sides(a))?;
    if !a.output.no_report && held.is_read_or_replay() {
        crate::report::prepare_report_dir(&a.output.report_dir)?;
    }
    let runs = run_layers(a, claim, &layers, share, held, &sides);
    let Combined {
        results,
        mut stdout,
        code,
        mut late,
        pages,
    } = combine_layers(layers, runs, share)?;
    let verdicts: Vec<LayerVerdict> = results.iter().map(|(v, _)| v.clone()).collect();
    let index = if a.output.no_report || !held.is_read_or_replay() {
        None
    } else {
        write_layered_page(a, held, pages, &verdicts, &mut late)
    };
    let record = if json {
        Some(crate::stages::time("the record", || {
            layered_record(&results, code, held)
        })?)
    } else {
        None
    };
    stdout += &answers_text(a.failure_probability, &verdicts, code);
    Ok(LayeredOutputs {
        text: stdout,
        json: record,
        code,
        late,
        index,
    })
}

/// Each layer's test (None: the floating-point layer skipped, every output an integer),
/// computed in parallel and collected in layer order.
fn run_layers(
    a: &TestOptions,
    claim: &ClaimArg,
    layers: &[LayerKind],
    share: f64,
    held: Held<'_>,
    sides: &(
        crate::sources::shards::ShardSet,
        crate::sources::shards::ShardSet,
    ),
) -> Vec<Result<Option<ViewRun>>> {
    use rayon::prelude::*;
    // In reverse: the calling thread starts on the last layer (the floating-point one, the
    // longer of the two) at once, while the other waits for a second thread to take it.
    let mut runs: Vec<Result<Option<ViewRun>>> = layers
        .par_iter()
        .rev()
        .map(|&kind| -> Result<Option<ViewRun>> {
            if kind == LayerKind::FloatingPoint {
                let head = |set: &crate::sources::shards::ShardSet| {
                    set.head(set.rows.min(10_000), &Transform::None)
                };
                if crate::record::layers::integer_valued(&[&head(&sides.0)?, &head(&sides.1)?]) {
                    return Ok(None);
                }
            }
            test_view_report(a, claim, kind.transform(), share, false, held, sides).map(Some)
        })
        .collect();
    runs.reverse();
    runs
}

/// The layers' runs in layer order: each answer (a skipped layer's too), its text, the exit
/// code; the first error in layer order is the one returned.
fn combine_layers(
    layers: Vec<LayerKind>,
    runs: Vec<Result<Option<ViewRun>>>,
    share: f64,
) -> Result<Combined> {
    let mut c = Combined {
        results: Vec::new(),
        stdout: String::new(),
        code: 0,
        late: None,
        pages: Vec::new(),
    };
    let mut mechanism_violates = false;
    for (kind, run) in layers.into_iter().zip(runs) {
        let Some((r, text, code, l, plots)) = run? else {
            c.results.push((
                LayerVerdict::skipped(
                    kind,
                    "every output is an integer (first 10 000 releases of each side), whose floating-point representation is exact; its share of β is unspent",
                ),
                None,
            ));
            continue;
        };
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
        c.pages.push((page, plots, code));
        mechanism_violates |= kind == LayerKind::Mechanism && code == 1;
        c.code = c.code.max(code);
        if c.late.is_none() {
            c.late = l;
        }
        c.stdout += &format!("\n===== layer: {} =====\n{}", kind.title(), text.0);
        c.results.push((v, Some(r)));
    }
    Ok(c)
}

/// One page for both layers: the violating layer's test (the mechanism's first), else the
/// mechanism layer's, with both answers at its head. A page that cannot be written is a late
/// error (the verdict is printed all the same).
fn write_layered_page(
    a: &TestOptions,
    held: Held<'_>,
    pages: Vec<(crate::audit::AuditReport, crate::report::PlotData, u8)>,
    verdicts: &[LayerVerdict],
    late: &mut Option<Error>,
) -> Option<PathBuf> {
    let k = pages.iter().position(|p| p.2 == 1).unwrap_or(0);
    let (mut page, plots, _) = pages.into_iter().nth(k)?;
    page.layers = Some(verdicts.to_vec());
    page.reproduce = Some(held.reproduce());
    match crate::report::write_run_report(&a.output.report_dir, &page, &plots) {
        Ok(i) => Some(i),
        Err(e) => {
            late.get_or_insert(e);
            None
        }
    }
}

/// The layered test's result record, as JSON.
fn layered_record(results: &[LayerResult], code: u8, held: Held<'_>) -> Result<String> {
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
    let mut rec = crate::record::ResultRecord::from_layered_sample_test(results, &out);
    rec.reproduce = Some(held.reproduce());
    to_json(&rec)
}

/// The text's closing block: each layer's answer, the β split and the verdict.
fn answers_text(beta: f64, verdicts: &[LayerVerdict], code: u8) -> String {
    let mut out = "\n===== answers =====\n".to_string();
    out += &crate::record::layers::render_text(verdicts);
    out += &format!(
        "β            {} split evenly over the {} layer(s) asked for (union bound)\nverdict      {}\n",
        crate::mechanisms::math::readable(beta),
        verdicts.len(),
        if code == 1 {
            "violation found"
        } else {
            "no violation found"
        }
    );
    out
}
