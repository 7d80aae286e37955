//! What a result record re-renders as (`audit report FILE`), and the record checked against
//! itself before it is.
//!
//! Every mode's record re-renders: a mode's `--json` output holds its full result (the
//! section), from which the page its run directory shows is taken again: a search's or a
//! two-layer run's deciding confirmation, the layer of a per-layer test that decided, a one-run
//! audit's page.
//!
//! A record is refused when it contradicts itself: its summary (the verdict, each layer's verdict
//! and bounds, the ε estimate) is rebuilt from its section by the code that wrote it and must be
//! the same; every confirmation in the section is checked as a page is ([`super::validate_run`]:
//! flags follow from values, verdicts from flags, and each bound's value from the counts stored
//! with it, [`crate::testers::EventBound::check_counts`]). This catches a record edited by hand;
//! anyone can rewrite a file consistently (counts included), and only a signature made with a
//! key the reader trusts protects against that (docs/report.md).

use serde::Deserialize;

use crate::audit::AuditReport;
use crate::record::layers::LayerVerdict;
use crate::record::{ResultRecord, SampleTestReport, Verdict};

/// The `--json` section of a per-layer test of release files (`audit test --check`).
#[derive(Deserialize)]
struct LayeredTests {
    layers: Vec<LayeredTest>,
}

#[derive(Deserialize)]
struct LayeredTest {
    verdict: LayerVerdict,
    #[serde(default)]
    test: Option<SampleTestReport>,
}

/// `data` read as a `T` (without copying it: a `&Value` is a deserializer).
fn typed<T: serde::de::DeserializeOwned>(
    data: &serde_json::Value,
    what: &str,
) -> Result<T, String> {
    T::deserialize(data).map_err(|e| format!("section.data is not {what}: {e}"))
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, String> {
    serde_json::to_value(v).map_err(|e| e.to_string())
}

/// Checks every confirmation of a section as a page is checked, naming where it is.
fn check_pages<'a>(
    pages: impl IntoIterator<Item = (String, &'a AuditReport)>,
) -> Result<(), String> {
    for (at, p) in pages {
        super::validate_run(p).map_err(|e| format!("{at}: {e}"))?;
    }
    Ok(())
}

/// The index of the layer whose page is shown: the first that found a violation, else the
/// first that ran.
fn deciding_layer<'a>(verdicts: impl Iterator<Item = (&'a LayerVerdict, bool)>) -> Option<usize> {
    let v: Vec<(&LayerVerdict, bool)> = verdicts.collect();
    v.iter()
        .position(|(l, has)| *has && l.verdict == Some(Verdict::Violation))
        .or_else(|| v.iter().position(|(_, has)| *has))
}

/// The page `rec` re-renders as (the value [`super::read_report`] reads on), after checking that
/// the record's summary is the one its section gives. `Err` says what contradicts what, or, for
/// a record without a page, what to use instead.
pub(super) fn page_of(rec: &ResultRecord) -> Result<serde_json::Value, String> {
    let data = &rec.section.data;
    let reproduce = rec.reproduce.clone();
    let (rebuilt, page) = match rec.section.kind.as_str() {
        "audit" => {
            let r: AuditReport = typed(data, "an audit report")?;
            check_pages([("section.data".to_string(), &r)])?;
            (ResultRecord::from_audit(&r), data.clone())
        }
        "search" => search_page(rec, data, reproduce)?,
        "layered" => layered_page(rec, data, reproduce)?,
        "sequential" => {
            let s: crate::audit::sequential::SequentialReport = typed(data, "a sequential report")?;
            super::validate_sequential(&s).map_err(|e| format!("section.data: {e}"))?;
            (ResultRecord::from_sequential(&s), data.clone())
        }
        "layered-sequential" => {
            let l: crate::audit::LayeredSequential = typed(data, "a per-layer sequential run")?;
            for (i, x) in l.layers.iter().enumerate() {
                super::validate_sequential(&x.sequential)
                    .map_err(|e| format!("section.data.layers[{i}].sequential: {e}"))?;
            }
            let k = deciding_layer(l.layers.iter().map(|x| (&x.verdict, true)))
                .ok_or("this per-layer sequential run has no layer, so it has no page")?;
            (l.record(), to_value(&l.layers[k].sequential)?)
        }
        "sample-test" => {
            let t: SampleTestReport = typed(data, "a test of release files")?;
            let page = t.to_audit_report();
            check_pages([("section.data".to_string(), &page)])?;
            (ResultRecord::from_sample_test(&t), to_value(&page)?)
        }
        "layered-sample-test" => layered_sample_test_page(data, reproduce)?,
        "one-run-page" => {
            let p: super::one_run::OneRunReport = typed(data, "a one-run report")?;
            (ResultRecord::from_one_run_page(&p), data.clone())
        }
        "one-run" => {
            let page = data.get("page").ok_or(
                "this --json output of a one-run audit was written before it carried its page; allowed: the audit.json of its run directory (reports/<run-id>/audit.json), or the --json output of this version",
            )?;
            let p: super::one_run::OneRunReport = typed(page, "a one-run report")?;
            (ResultRecord::from_one_run(&p, data), page.clone())
        }
        "sweep" => {
            let s: super::SweepReport = typed(data, "a sweep report")?;
            (ResultRecord::from_sweep(&s), data.clone())
        }
        "table" => {
            let t: super::table::TableReport = typed(data, "a detection table")?;
            (ResultRecord::from_table(&t), data.clone())
        }
        other => {
            return Err(format!(
                "section.kind = {other:?}; allowed: audit, search, layered, sequential, layered-sequential, sample-test, layered-sample-test, one-run, one-run-page, sweep or table"
            ));
        }
    };
    same_summary(rec, &rebuilt)?;
    Ok(page)
}

/// [`page_of`] for a search: the deciding confirmation's page (the first violation, else the
/// last), with the search's summary.
fn search_page(
    rec: &ResultRecord,
    data: &serde_json::Value,
    reproduce: Option<String>,
) -> Result<(ResultRecord, serde_json::Value), String> {
    let s: crate::finders::SearchReport = typed(data, "a search's report")?;
    check_pages(
        s.confirmations
            .iter()
            .enumerate()
            .map(|(j, c)| (format!("section.data.confirmations[{j}]"), c)),
    )?;
    let deciding = s
            .confirmations
            .iter()
            .find(|c| c.verdict == Verdict::Violation)
            .or(s.confirmations.last())
            .cloned()
            .map(|mut c| {
                c.reproduce = reproduce.clone();
                c.search = Some(s.summary(Some(rec.beta.total)));
                c
            })
            .ok_or("this search confirmed no pair, so it has no page; allowed: a search that confirmed at least one pair")?;
    Ok((
        ResultRecord::from_search(&s, rec.seed, rec.beta.total),
        to_value(&deciding)?,
    ))
}

/// [`page_of`] for a two-layer run: the deciding layer's confirmation, with both layers'
/// verdicts.
fn layered_page(
    rec: &ResultRecord,
    data: &serde_json::Value,
    reproduce: Option<String>,
) -> Result<(ResultRecord, serde_json::Value), String> {
    let l: crate::finders::layered::LayeredReport = typed(data, "a two-layer run")?;
    check_pages(l.layers.iter().enumerate().flat_map(|(i, layer)| {
        layer.search.iter().flat_map(move |s| {
            s.confirmations.iter().enumerate().map(move |(j, c)| {
                (
                    format!("section.data.layers[{i}].search.confirmations[{j}]"),
                    c,
                )
            })
        })
    }))?;
    let verdicts = l.verdicts();
    let deciding = l.deciding().cloned().map(|mut c| {
            c.reproduce = reproduce.clone();
            c.layers = Some(verdicts.clone());
            c.effort = l.effort.clone();
            c
        }).ok_or("this two-layer run confirmed no pair in either layer, so it has no page; allowed: a run that confirmed at least one pair")?;
    let rebuilt =
        ResultRecord::from_layered(&l, reproduce.as_deref().unwrap_or_default(), rec.seed);
    Ok((rebuilt, to_value(&deciding)?))
}

/// [`page_of`] for a per-layer test of release files: the deciding layer's test, with every
/// layer's verdict.
fn layered_sample_test_page(
    data: &serde_json::Value,
    reproduce: Option<String>,
) -> Result<(ResultRecord, serde_json::Value), String> {
    let l: LayeredTests = typed(data, "a per-layer test of release files")?;
    let tests: Vec<(LayerVerdict, Option<SampleTestReport>)> = l
        .layers
        .iter()
        .map(|x| (x.verdict.clone(), x.test.clone()))
        .collect();
    let pages: Vec<Option<AuditReport>> = tests
        .iter()
        .map(|(_, t)| t.as_ref().map(|t| t.to_audit_report()))
        .collect();
    check_pages(pages.iter().enumerate().filter_map(|(i, p)| {
        p.as_ref()
            .map(|p| (format!("section.data.layers[{i}].test"), p))
    }))?;
    let k = deciding_layer(tests.iter().map(|(v, t)| (v, t.is_some())))
        .ok_or("this per-layer test ran no layer, so it has no page")?;
    let mut page = pages[k]
        .clone()
        .ok_or("internal: the deciding layer has no test")?;
    page.layers = Some(tests.iter().map(|(v, _)| v.clone()).collect());
    page.reproduce = reproduce.clone();
    Ok((
        ResultRecord::from_layered_sample_test(&tests, data),
        to_value(&page)?,
    ))
}

/// `Err` names the first field of `stored`'s summary that differs from `rebuilt` (the summary
/// its own section gives).
fn same_summary(stored: &ResultRecord, rebuilt: &ResultRecord) -> Result<(), String> {
    if stored.mode != rebuilt.mode {
        return differ(
            "mode".into(),
            stored.mode.words().into(),
            rebuilt.mode.words().into(),
        );
    }
    if stored.verdict != rebuilt.verdict {
        return differ(
            "verdict".into(),
            words(stored.verdict).into(),
            words(rebuilt.verdict).into(),
        );
    }
    if stored.layers.len() != rebuilt.layers.len() {
        return differ(
            "layers".into(),
            format!("{} layer(s)", stored.layers.len()),
            format!("{}", rebuilt.layers.len()),
        );
    }
    for (i, (s, r)) in stored.layers.iter().zip(&rebuilt.layers).enumerate() {
        same_layer(i, s, r)?;
    }
    let top = |r: &ResultRecord| {
        r.empirical_epsilon
            .as_ref()
            .map(|e| e.lower_bound.to_bits())
    };
    if top(stored) != top(rebuilt) {
        return differ(
            "empirical_epsilon.lower_bound".into(),
            format!(
                "{:?}",
                stored.empirical_epsilon.as_ref().map(|e| e.lower_bound)
            ),
            format!(
                "{:?}",
                rebuilt.empirical_epsilon.as_ref().map(|e| e.lower_bound)
            ),
        );
    }
    for (i, (a, b)) in stored.pairs.iter().zip(&rebuilt.pairs).enumerate() {
        if a.verdict != b.verdict {
            return differ(
                format!("pairs[{i}].verdict"),
                words(a.verdict).into(),
                words(b.verdict).into(),
            );
        }
    }
    Ok(())
}

/// A verdict in words, "none" for a record without one.
fn words(v: Option<Verdict>) -> &'static str {
    v.map_or("none", |v| v.words())
}

/// The error of a summary field that differs from its section.
fn differ(field: String, stored: String, section: String) -> Result<(), String> {
    Err(format!(
        "{field} = {stored} but the section it summarizes gives {section}; allowed: a record whose summary is its section's (re-run the audit)"
    ))
}

/// [`same_summary`] for the `i`-th layer: its verdict, every bound (value, allowance,
/// violation, bit for bit) and its empirical ε.
fn same_layer(
    i: usize,
    s: &crate::record::result::LayerRecord,
    r: &crate::record::result::LayerRecord,
) -> Result<(), String> {
    if s.verdict != r.verdict {
        return differ(
            format!("layers[{i}].verdict"),
            words(s.verdict).into(),
            words(r.verdict).into(),
        );
    }
    if s.bounds.len() != r.bounds.len() {
        return differ(
            format!("layers[{i}].bounds"),
            format!("{} bound(s)", s.bounds.len()),
            format!("{}", r.bounds.len()),
        );
    }
    for (j, (a, b)) in s.bounds.iter().zip(&r.bounds).enumerate() {
        let at = format!("layers[{i}].bounds[{j}]");
        if a.value.to_bits() != b.value.to_bits() {
            return differ(
                format!("{at}.value"),
                a.value.to_string(),
                b.value.to_string(),
            );
        }
        if a.allowed.to_bits() != b.allowed.to_bits() {
            return differ(
                format!("{at}.allowed"),
                a.allowed.to_string(),
                b.allowed.to_string(),
            );
        }
        if a.violation != b.violation {
            return differ(
                format!("{at}.violation"),
                a.violation.to_string(),
                b.violation.to_string(),
            );
        }
    }
    let eps = |e: &Option<crate::record::result::EpsilonRecord>| {
        e.as_ref().map(|e| e.lower_bound.to_bits())
    };
    if eps(&s.empirical_epsilon) != eps(&r.empirical_epsilon) {
        return differ(
            format!("layers[{i}].empirical_epsilon"),
            format!("{:?}", s.empirical_epsilon.as_ref().map(|e| e.lower_bound)),
            format!("{:?}", r.empirical_epsilon.as_ref().map(|e| e.lower_bound)),
        );
    }
    Ok(())
}
