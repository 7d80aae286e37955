//! HTML renderings of reports: a run, a sweep, and the list of runs in a report directory.
//!
//! Every page is self-contained and works offline: inline CSS, no script, no external URL;
//! images are referenced by relative path. Every string that comes from a mechanism, a report
//! file or the user goes through [`escape_html`].

use std::fmt::Write as _;

use crate::audit::{AuditReport, BoundRecord, Direction, Verdict};
use crate::mechanisms::{Dataset, Neighboring, PrivacyClaim};
use crate::testers::Divergence;

use super::{IndexEntry, SweepReport};

/// Escapes text for use in HTML element content and in double- or single-quoted attribute values.
///
/// # Examples
/// ```
/// use dp_audit::report::escape_html;
/// assert_eq!(escape_html("<script>alert('x')</script>"), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;");
/// ```
pub fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Short alias used throughout the renderers.
pub(crate) fn e(s: &str) -> String {
    escape_html(s)
}

/// Short alias of [`super::readable`], the one number formatter of the reports.
pub(crate) fn num(x: f64) -> String {
    super::readable(x)
}

/// `text` with every decimal number of more than 6 significant digits (as the testers print
/// thresholds, e.g. `coordinate 0 ≤ 27.516965057253376`) rewritten by [`super::readable`]
/// (`27.52`). Integers, short numbers and digits inside words are left alone.
pub fn readable_numbers_in(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let starts_number = chars[i].is_ascii_digit()
            && (i == 0
                || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == '.'));
        if !starts_number {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
        if j + 1 < chars.len() && chars[j] == '.' && chars[j + 1].is_ascii_digit() {
            j += 1;
            while j < chars.len() && chars[j].is_ascii_digit() {
                j += 1;
            }
        }
        if j < chars.len() && (chars[j] == 'e' || chars[j] == 'E') {
            let mut k = j + 1;
            if k < chars.len() && (chars[k] == '-' || chars[k] == '+') {
                k += 1;
            }
            if k < chars.len() && chars[k].is_ascii_digit() {
                while k < chars.len() && chars[k].is_ascii_digit() {
                    k += 1;
                }
                j = k;
            }
        }
        let literal: String = chars[i..j].iter().collect();
        let mantissa = literal.split(['e', 'E']).next().unwrap_or("");
        let significant = mantissa
            .chars()
            .filter(|c| c.is_ascii_digit())
            .collect::<String>()
            .trim_start_matches('0')
            .len();
        match literal.parse::<f64>() {
            Ok(v) if mantissa.contains('.') && significant > 6 => out.push_str(&num(v)),
            _ => out.push_str(&literal),
        }
        i = j;
    }
    out
}

/// A probability as a percentage without trailing zeros (0.999 → "99.9%").
pub(crate) fn percent(p: f64) -> String {
    let s = format!("{:.6}", p * 100.0);
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

const STYLE: &str = r#"
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif;
       max-width: 1100px; margin: 1.5em auto; padding: 0 1em; color: #1d1d1f; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.sub { color: #555; margin-top: 0; }
.verdict { border-radius: 6px; padding: 0.9em 1.2em; margin: 1em 0; border: 2px solid; }
.verdict h2 { margin: 0 0 0.3em 0; border: none; font-size: 1.4em; }
.violation { background: #fdecea; border-color: #c62828; }
.violation h2 { color: #b71c1c; }
.noviolation { background: #eef3fb; border-color: #3d6fb6; }
.noviolation h2 { color: #1f4f91; }
.caveat { font-weight: 600; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.93em; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.55em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.bad td { background: #fdecea; }
.flag { color: #b71c1c; font-weight: 700; }
.ok { color: #444; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 0.92em; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; white-space: pre-wrap; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.25em 1.2em; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #444; font-size: 0.92em; }
.small { font-size: 0.88em; color: #555; }
.scroll { overflow-x: auto; max-width: 100%; }
/* The bounds table fits the page (1100 px of text on a 1280-px screen): long cells wrap inside
   their own column, and anything still too wide scrolls inside .scroll, never the page. */
table#bounds { width: 100%; font-size: 0.85em; }
table#bounds th, table#bounds td { padding: 0.3em 0.4em; }
table#bounds td.event { overflow-wrap: anywhere; min-width: 10em; max-width: 20em; }
table#points td.mono { white-space: nowrap; }
table#bounds td.counts { text-align: right; font-variant-numeric: tabular-nums; min-width: 6.5em; }
footer { margin-top: 3em; color: #777; font-size: 0.85em; }
"#;

pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}\
         <footer>Generated by dp-audit {} from audit.json (the source of truth). \
         This page works offline and loads nothing from the network.</footer>\n</body>\n</html>\n",
        e(title),
        e(env!("CARGO_PKG_VERSION")),
    )
}

/// The result record at a glance, the same block at the end of every page (run, search,
/// layered, sequential, Bayesian, one-run, sweep, table): what ran, on what, against which claim,
/// the verdict and each layer's answer, how β was spent, the ε estimate with what it means for
/// an attacker, the cost and the Reproduce line. Rendered from the record alone
/// ([`crate::record::ResultRecord`]), so every mode says these things in the same words.
pub(crate) fn record_html(rec: &crate::record::ResultRecord) -> String {
    let mut rows = String::new();
    let mut row = |k: &str, v: String| {
        let _ = write!(rows, "<dt>{}</dt><dd>{v}</dd>", e(k));
    };
    row("what ran", e(rec.mode.words()));
    row(
        "target",
        format!(
            "<span class=\"mono\">{}</span> <span class=\"small\">({})</span>",
            e(&rec.target.id),
            e(&target_kind_words(&rec.target))
        ),
    );
    if let Some(c) = &rec.claim {
        row(
            "claim",
            format!(
                "<span class=\"mono\">{}</span> <span class=\"small\">({})</span>",
                e(&c.stated),
                e(&c.source)
            ),
        );
    }
    if let Some(n) = &rec.neighbors {
        row("neighbours", e(n));
    }
    if let Some(u) = &rec.privacy_unit {
        row("privacy unit", e(u));
    }
    if let Some(d) = &rec.dp_fy_ml {
        let mut items = Vec::new();
        if let (Some(t), Some(w)) = (d.tier, &d.tier_words) {
            items.push(format!("privacy tier {t} ({w})"));
        }
        if let Some(a) = &d.data_accesses {
            items.push(format!("data accesses covered: {a}"));
        }
        if let Some(o) = &d.outputs_covered {
            items.push(format!("outputs covered: {o}"));
        }
        row("DP-fy ML", e(&items.join("; ")));
    }
    if let Some(setting) = rec
        .setting
        .as_deref()
        .and_then(|t| t.parse::<crate::mechanisms::DpSetting>().ok())
    {
        row("setting", e(setting.describe()));
    }
    // One layer of the releases as they are says what the verdict says: shown once.
    let single = rec.layers.len() == 1 && rec.layers[0].layer == "releases";
    row(
        "verdict",
        format!(
            "{}{}",
            e(&readable_numbers_in(&rec.verdict_words)),
            if single {
                bound_counts(&rec.layers[0].bounds)
            } else {
                String::new()
            }
        ),
    );
    for l in rec.layers.iter().filter(|_| !single) {
        let bounds = bound_counts(&l.bounds);
        row(
            &format!("layer: {}", l.title),
            format!("{}{bounds}", e(&readable_numbers_in(&l.meaning))),
        );
    }
    row(
        "β",
        format!(
            "{} <span class=\"small\">({})</span>",
            e(&num(rec.beta.total)),
            e(&readable_numbers_in(&rec.beta.rule))
        ),
    );
    if let Some(eps) = &rec.empirical_epsilon {
        row("ε and an attacker", e(&readable_numbers_in(&eps.words)));
    }
    if let Some(effort) = &rec.effort {
        let short = if effort.cut_short {
            "<strong>The search was cut short:</strong> "
        } else {
            ""
        };
        row(
            "how hard it looked",
            format!("{short}{}", e(&readable_numbers_in(&effort.describe()))),
        );
    }
    let cost = cost_words(&rec.timings);
    if !cost.is_empty() {
        row("cost", e(&cost.join(", ")));
    }
    row("seed", rec.seed.to_string());
    if let Some(r) = &rec.reproduce {
        row("reproduce", format!("<code>{}</code>", e(r)));
    }
    format!(
        "<section id=\"record\"><h2>The result record</h2><dl>{rows}</dl><p class=\"small\">From the result record (audit.json, layout version {}; see docs/json.md).</p></section>\n",
        crate::record::RECORD_SCHEMA_VERSION
    )
}

/// The kind of a record's target in words (with its catalogue status).
fn target_kind_words(t: &crate::record::result::TargetRecord) -> String {
    match (&t.kind[..], &t.catalogue_status) {
        ("catalogue", Some(s)) => format!("a catalogue entry, status {s}"),
        ("catalogue", None) => "a catalogue entry".into(),
        ("program", _) => "a program".into(),
        ("files", _) => "releases read from files".into(),
        ("trainer", _) => "a training run".into(),
        (k, _) => k.to_string(),
    }
}

/// How many bounds a verdict or layer rests on and how many exceed the claim (empty for none).
fn bound_counts(bounds: &[crate::record::result::BoundWords]) -> String {
    if bounds.is_empty() {
        String::new()
    } else {
        format!(
            " <span class=\"small\">({} bound(s), {} above what the claim allows)</span>",
            bounds.len(),
            bounds.iter().filter(|b| b.violation).count()
        )
    }
}

/// A run's cost as the record states it: releases, mechanism calls, wall time (those present).
fn cost_words(t: &crate::record::result::Timings) -> Vec<String> {
    let mut cost = Vec::new();
    if let Some(n) = t.releases {
        cost.push(format!("{} releases", num(n as f64)));
    }
    if let Some(n) = t.mechanism_calls {
        cost.push(format!("{} mechanism calls", num(n as f64)));
    }
    if let Some(t) = t.wall_time_seconds {
        cost.push(format!("{} s", num((t * 100.0).round() / 100.0)));
    }
    cost
}

/// The claim in words.
pub(crate) fn claim_words(c: &PrivacyClaim) -> String {
    match *c {
        PrivacyClaim::Pure { epsilon } => format!(
            "ε-differential privacy with ε = {}: for every pair of neighboring datasets and every set S of outputs, P(M(D) ∈ S) ≤ e^ε · P(M(D') ∈ S).",
            num(epsilon)
        ),
        PrivacyClaim::Approximate { epsilon, delta } => format!(
            "(ε, δ)-differential privacy with ε = {}, δ = {}: P(M(D) ∈ S) ≤ e^ε · P(M(D') ∈ S) + δ for every set S and every pair of neighbors.",
            num(epsilon),
            num(delta)
        ),
        PrivacyClaim::Renyi { alpha, epsilon } => format!(
            "Rényi differential privacy of order α = {} with ε = {}; it implies a δ(ε) privacy profile, tested at a grid of ε.",
            num(alpha),
            num(epsilon)
        ),
        PrivacyClaim::ZeroConcentrated { rho } => format!(
            "ρ-zero-concentrated differential privacy with ρ = {}; it implies a δ(ε) privacy profile, tested at a grid of ε.",
            num(rho)
        ),
        PrivacyClaim::GaussianDp { mu } => format!(
            "μ-Gaussian differential privacy with μ = {}: the mechanism is no easier to tell apart than N(0, 1) from N(μ, 1); it implies the δ(ε) profile plotted below, tested at a grid of ε.",
            num(mu)
        ),
        PrivacyClaim::SubsampledGaussian {
            sampling_rate,
            noise_multiplier,
            steps,
            neighbors,
            policy,
        } => format!(
            "the privacy profile of DP-SGD's transcript: {steps} step(s) of the {} Gaussian mechanism with sampling rate q = {} and noise multiplier z = {} ({neighbors} neighbors), as the PLD accountant bounds δ(ε) from above; tested at a grid of ε.",
            if policy.is_poisson() {
                "Poisson-subsampled"
            } else {
                "fixed-size-batch (B of n drawn without replacement each step)"
            },
            num(sampling_rate),
            num(noise_multiplier)
        ),
        PrivacyClaim::Bayesian { epsilon, delta } => format!(
            "(ε_μ, δ_μ)-Bayesian differential privacy (Triastcyn & Faltings 2020) with ε_μ = {}, δ_μ = {}: for the differing record x' drawn from the data distribution μ (the data file), the privacy loss exceeds ε_μ with probability at most δ_μ over x' and the output. This is a typical-case promise, weaker than differential privacy: it says nothing about any one fixed pair of neighbors, and a record μ rarely draws may be exposed.",
            num(epsilon),
            num(delta)
        ),
        _ => format!("{c}"),
    }
}

pub(crate) fn neighboring_words(n: Neighboring) -> &'static str {
    match n {
        Neighboring::AddRemove => "add-remove: D' is D with one record added or removed",
        Neighboring::ReplaceOne => "replace-one: D' is D with one record replaced by another",
        Neighboring::ZeroOut => {
            "zero-out: D' is D with one record replaced by the null record (all zeros)"
        }
    }
}

pub(crate) fn divergence_words(d: &Divergence) -> String {
    match d {
        Divergence::HockeyStick { epsilon } => format!("hockey-stick H at ε = {}", num(*epsilon)),
        Divergence::Renyi { alpha } => format!("Rényi D at α = {}", num(*alpha)),
        #[allow(unreachable_patterns)]
        other => format!("{other}"),
    }
}

pub(crate) fn direction_words(d: Direction) -> &'static str {
    match d {
        Direction::FirstVsSecond => "M(D) ‖ M(D')",
        Direction::SecondVsFirst => "M(D') ‖ M(D)",
        Direction::Larger => "the larger of M(D) ‖ M(D') and M(D') ‖ M(D)",
    }
}

/// D and D′ of a pair for the page: exact values ([`crate::mechanisms::math::exact`]) and the
/// records that differ always shown, however long the datasets
/// ([`crate::mechanisms::DatasetPair::short_sides`]).
pub(crate) fn pair_html(pair: &crate::mechanisms::DatasetPair) -> [String; 2] {
    let dim = pair.first().dim();
    pair.short_sides().map(|s| {
        format!(
            "<span class=\"mono\">{}</span> <span class=\"small\">(records of dimension {dim})</span>",
            e(&s)
        )
    })
}

pub(crate) fn dataset_html(d: &Dataset) -> String {
    const SHOWN: usize = 20;
    let rows = d.to_rows();
    let exact = crate::mechanisms::math::exact;
    let fmt_row = |r: &Vec<f64>| {
        if r.len() == 1 {
            exact(r[0])
        } else {
            format!(
                "({})",
                r.iter().map(|v| exact(*v)).collect::<Vec<_>>().join(", ")
            )
        }
    };
    let mut shown: Vec<String> = rows.iter().take(SHOWN).map(fmt_row).collect();
    if rows.len() > SHOWN {
        shown.push(format!("… {} more", rows.len() - SHOWN));
    }
    format!(
        "<span class=\"mono\">[{}]</span> <span class=\"small\">({} records of dimension {})</span>",
        e(&shown.join(", ")),
        rows.len(),
        d.dim()
    )
}

/// One figure the page shows: file name (relative) and caption.
#[derive(Clone, Debug)]
pub struct Figure {
    /// File name inside the run directory.
    pub file: String,
    /// Alternative text.
    pub alt: String,
    /// Caption.
    pub caption: String,
}

pub(crate) fn figures_html(figs: &[Figure]) -> String {
    let mut s = String::new();
    for f in figs {
        let _ = writeln!(
            s,
            "<figure><img src=\"{}\" alt=\"{}\"><figcaption>{}</figcaption></figure>",
            e(&f.file),
            e(&f.alt),
            e(&f.caption)
        );
    }
    s
}

/// The search behind a confirmed pair: finder, trials, and every confirmation with its verdict.
fn search_html(sr: &crate::audit::SearchSummary) -> String {
    let mut b = String::new();
    let best = sr
        .trials
        .iter()
        .map(|t| t.score)
        .fold(f64::NEG_INFINITY, f64::max);
    let _ = write!(
        b,
        "<h2>The search</h2><p id=\"search\">Finder <b>{}</b> scored {} exploratory pairs (no statistical claim: their samples only chose which pairs to confirm; best exploratory score {}), drew {} releases in all, and confirmed {} pair(s) on fresh samples. {}</p>",
        e(&sr.finder),
        sr.trials.len(),
        num(best),
        num(sr.samples_drawn as f64),
        sr.confirmations.len(),
        e(&sr.beta_rule)
    );
    if !sr.skipped.is_empty() {
        let _ = write!(
            b,
            "<p id=\"skipped\">The program failed (a failure status, a time-out or a non-finite output) on {} proposed pair(s), which were skipped: not scored, and no bound rests on them.</p><div class=\"scroll\"><table id=\"skipped-pairs\"><thead><tr><th>trial</th><th>D</th><th>D'</th><th>failure</th></tr></thead><tbody>",
            sr.skipped.len()
        );
        for t in &sr.skipped {
            let _ = write!(
                b,
                "<tr><td>{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td></tr>",
                t.index,
                e(&t.pair[0]),
                e(&t.pair[1]),
                e(&t.error)
            );
        }
        b.push_str("</tbody></table></div>\n");
    }
    let _ = write!(
        b,
        "<div class=\"scroll\"><table id=\"confirmations\"><thead><tr><th>#</th><th>D</th><th>D'</th><th>verdict</th><th>largest bound − allowed</th></tr></thead><tbody>"
    );
    for (i, c) in sr.confirmations.iter().enumerate() {
        let [d, d2] = c.pair.short_sides();
        let _ = write!(
            b,
            "<tr><td>{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            e(&d),
            e(&d2),
            e(c.verdict.words()),
            num(c.margin)
        );
    }
    b.push_str("</tbody></table></div>\n");
    b
}

/// The command line that reproduces the run, as far as the report records it.
fn reproduce_command(r: &AuditReport) -> String {
    if let Some(line) = &r.reproduce {
        return line.clone();
    }
    let mut cmd = format!(
        "audit run --mechanism {} --samples {} --seed {} --failure-probability {} --tester {}",
        r.mechanism.id,
        r.samples_per_side,
        r.seed,
        r.beta.total,
        r.testers.join(",")
    );
    if r.mechanism
        .claim_source
        .starts_with("given on the command line")
    {
        let _ = write!(cmd, " --claim {}", r.mechanism.claim);
    }
    if let Some(t) = &r.output_transform {
        let _ = write!(cmd, " --transform {t}");
    }
    cmd
}

fn verdict_html(r: &AuditReport) -> String {
    let conf = percent(1.0 - r.beta.total);
    match r.verdict {
        Verdict::Violation => {
            let n_bad = r.bounds.iter().filter(|b| b.violation).count();
            format!(
                "<div class=\"verdict violation\" id=\"verdict\"><h2>Violation found</h2>\
                 <p>{n_bad} of {} lower confidence bounds exceed what the claim <b>{}</b> allows. \
                 The bounds hold simultaneously with probability at least {conf} (1 − β, β = {}), so a mechanism that keeps its claim \
                 produces a report like this with probability at most β = {}. \
                 This is evidence that the claim is false for this pair of datasets, not a statement about how the bug arises.</p></div>\n",
                r.bounds.len(),
                e(&r.mechanism.claim.to_string()),
                num(r.beta.total),
                num(r.beta.total),
            )
        }
        Verdict::NoViolation => format!(
            "<div class=\"verdict noviolation\" id=\"verdict\"><h2>No violation found</h2>\
             <p>None of the {} lower confidence bounds exceeds what the claim <b>{}</b> allows.</p>\
             <p class=\"caveat\">This does not show that the mechanism keeps its claim, nor that it is private. \
             Only this one pair of datasets, the tester(s) {} and {} releases per side were tried; \
             a bug that shows only on other datasets, on other output events, or that needs more samples to detect \
             would not be seen here.</p></div>\n",
            r.bounds.len(),
            e(&r.mechanism.claim.to_string()),
            e(&r.testers.join(", ")),
            r.samples_per_side,
        ),
    }
}

/// The direction of a bound in words; a Bayesian DP run compares the joint laws of (x', release)
/// with x' drawn from the data (first side M(D), second M(D ∪ {x'}); see `crate::audit::bayesian`).
fn direction_for(d: Direction, bayesian: bool) -> &'static str {
    match (d, bayesian) {
        (Direction::FirstVsSecond, true) => "(x', M(D)) ‖ (x', M(D ∪ {x'})), x' ~ μ",
        (Direction::SecondVsFirst, true) => "(x', M(D ∪ {x'})) ‖ (x', M(D)), x' ~ μ",
        (Direction::Larger, true) => {
            "the larger of the two orders of (x', M(D ∪ {x'})) and (x', M(D)), x' ~ μ"
        }
        (d, false) => direction_words(d),
    }
}

fn bound_row(b: &BoundRecord, bayesian: bool) -> String {
    let (event, p, q) = match &b.event {
        Some(ev) => match (&ev.contrast, ev.p_lower, ev.q_upper) {
            (Some(c), _, _) => (
                e(&readable_numbers_in(&ev.description)),
                format!(
                    "U = {} (in the event{} on the side favoured)<br>N ~ Poisson({})",
                    c.u,
                    if c.events > 1 { "s" } else { "" },
                    e(&num(c.lambda))
                ),
                format!(
                    "W = {} (the other side)<br>E[W] ≥ {}",
                    c.w,
                    e(&num(c.mu_w_lower))
                ),
            ),
            (None, Some(pl), Some(qu)) => (
                e(&readable_numbers_in(&ev.description)),
                format!("{} of {}<br>P(S) ≥ {}", ev.count_p, ev.n_p, e(&num(pl))),
                format!("{} of {}<br>Q(S) ≤ {}", ev.count_q, ev.n_q, e(&num(qu))),
            ),
            (None, _, _) if ev.binomial.is_some() => (
                e(&readable_numbers_in(&ev.description)),
                format!(
                    "{} of {} (the side S favours)<br>exact binomial test",
                    ev.count_p, ev.n_p
                ),
                format!("{} of {} (the other side)", ev.count_q, ev.n_q),
            ),
            _ => (
                e(&readable_numbers_in(&ev.description)),
                "—".into(),
                "—".into(),
            ),
        },
        None => ("—".into(), "—".into(), "—".into()),
    };
    let (class, result) = if b.violation {
        (" class=\"bad\"", "<span class=\"flag\">VIOLATION</span>")
    } else {
        ("", "<span class=\"ok\">within claim</span>")
    };
    format!(
        "<tr{class}><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">≥ {}</td><td class=\"num\">{}</td><td>{result}</td>\
         <td class=\"num\">{}</td><td class=\"mono event\">{event}</td><td class=\"counts\">{p}</td><td class=\"counts\">{q}</td><td class=\"num\">{}</td></tr>\n",
        e(&b.tester),
        e(&divergence_words(&b.divergence)),
        e(direction_for(b.direction, bayesian)),
        e(&num(b.value)),
        e(&num(b.allowed)),
        e(&num(b.point_estimate)),
        e(&num(b.failure_probability)),
    )
}

/// Both layers' answers (see [`crate::record::layers`]), first on the page of a layered run: the rest
/// of the page is the confirmation that decided.
fn layers_html(layers: &[crate::record::layers::LayerVerdict]) -> String {
    let mut b = String::from(
        "<h2>Two answers</h2><p class=\"sub\">The mechanism layer tests the output values (the algorithm in real numbers); the floating-point layer tests only their representation (low mantissa bits, f32 exactness, dyadic grid, binade). Each has its own share of β; the exit code is 1 when either finds a violation.</p>\n<table id=\"layers\"><tr><th>layer</th><th>answer</th><th>evidence</th><th>β share</th></tr>\n",
    );
    for l in layers {
        let violated = l.verdict == Some(crate::audit::Verdict::Violation);
        let evidence = match (&l.evidence, &l.separation) {
            (Some(ev), Some(sep)) => {
                format!("{}<br><span class=\"small\">{}</span>", e(ev), e(sep))
            }
            (Some(ev), None) => e(ev),
            _ => String::new(),
        };
        let _ = writeln!(
            b,
            "<tr{}><td>{}</td><td>{}</td><td class=\"event\">{evidence}</td><td class=\"num\">{}</td></tr>",
            if violated { " class=\"violation\"" } else { "" },
            e(&l.title),
            e(&l.meaning),
            e(&num(l.beta)),
        );
    }
    b.push_str("</table>\n<h2>The confirmation shown below</h2>\n");
    b
}

/// The page of one audit run. `figures` are the PNGs present in the run directory.
pub fn render_run(r: &AuditReport, run_id: &str, figures: &[Figure]) -> String {
    let m = &r.mechanism;
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h1>Audit of <span class=\"mono\">{}</span></h1>\n<p class=\"sub\">run <span class=\"mono\">{}</span> · <a href=\"../index.html\">all runs</a></p>",
        e(&m.id),
        e(run_id)
    );
    if let Some(layers) = &r.layers {
        b.push_str(&layers_html(layers));
    }
    b.push_str(&verdict_html(r));
    b.push_str(&empirical_epsilon_html(r));
    b.push_str(&tested_html(r));
    b.push_str(&how_tested_html(r));
    if let Some(sr) = &r.search {
        b.push_str(&search_html(sr));
    }
    b.push_str(&beta_html(r));
    b.push_str(&bounds_html(r));
    if !figures.is_empty() {
        let _ = writeln!(b, "<h2>Figures</h2>");
        b.push_str(&figures_html(figures));
    }
    let _ = writeln!(
        b,
        "<h2>Files</h2><p><a href=\"audit.json\">audit.json</a>: everything above, machine-readable. \
         <code>audit report {}/audit.json</code> re-renders this page.</p>",
        e(run_id)
    );
    b.push_str(&record_html(&crate::record::ResultRecord::from_audit(r)));
    page(&format!("dp-audit: {} — {}", m.id, r.verdict.words()), &b)
}

/// The "Empirical ε" section: the ε lower bound and its reading, or why there is none.
fn empirical_epsilon_html(r: &AuditReport) -> String {
    let m = &r.mechanism;
    let mut b = String::new();
    if let (Some(emp), Some(_)) = (&r.empirical_epsilon, &r.bayesian) {
        let claimed = emp
            .claimed_epsilon
            .map(|c| format!(" The claim states ε_μ = {}.", num(c)))
            .unwrap_or_default();
        let _ = writeln!(
            b,
            "<h2>Empirical ε_μ</h2><p id=\"empirical-epsilon\">With confidence {} (simultaneous with the verdict), the mechanism is <b>not</b> (ε_μ', δ_μ)-Bayesian DP \
             for any ε_μ' below <b>{}</b> at δ_μ = {}, for records x' drawn from this data.{} This is Bayesian DP (averaged over x' ~ μ), not a worst-case ε, and a lower bound: the true value may be larger.</p>",
            percent(emp.confidence),
            e(&num(emp.lower_bound)),
            e(&num(emp.delta)),
            e(&claimed),
        );
        if let Some(src) = &emp.source {
            let _ = writeln!(
                b,
                "<dl id=\"empirical-epsilon-detail\"><dt>from</dt><dd>{}</dd></dl>",
                e(src)
            );
        }
    } else if let Some(emp) = &r.empirical_epsilon {
        let claimed = m
            .claim
            .natural_epsilon()
            .map(|c| format!(" The claim states ε = {}.", num(c)))
            .unwrap_or_default();
        let _ = writeln!(
            b,
            "<h2>Empirical ε</h2><p id=\"empirical-epsilon\">With confidence {} (simultaneous with the verdict), the mechanism is <b>not</b> (ε', δ)-DP \
             for any ε' below <b>{}</b> at δ = {}, on this pair of datasets.{} This is a lower bound on the true ε: the true value may be larger.</p>",
            percent(emp.confidence),
            e(&num(emp.lower_bound)),
            e(&num(emp.delta)),
            e(&claimed),
        );
        let mut rows = String::new();
        for (k, v) in [
            ("how tight the claim is", emp.tightness()),
            (
                "what it means for an attacker",
                Some(crate::record::result::attack_sentence(
                    emp.lower_bound,
                    emp.delta,
                    emp.claimed_epsilon,
                )),
            ),
            (
                "Gaussian DP, certified",
                emp.mu_lower.map(|mu| {
                    format!(
                        "μ ≥ {} with the same confidence (one event: μ-GDP implies Φ⁻¹(P(S)) − Φ⁻¹(Q(S)) ≤ μ)",
                        num(mu)
                    )
                }),
            ),
            ("from", emp.source.clone()),
            ("event", emp.event.clone()),
            ("held-out counts", emp.evidence.clone()),
        ] {
            if let Some(v) = v {
                let _ = write!(rows, "<dt>{}</dt><dd>{}</dd>", e(k), e(&v));
            }
        }
        if !rows.is_empty() {
            let _ = writeln!(b, "<dl id=\"empirical-epsilon-detail\">{rows}</dl>");
        }
    } else if matches!(
        m.claim,
        PrivacyClaim::Pure { .. } | PrivacyClaim::Approximate { .. }
    ) {
        let _ = writeln!(
            b,
            "<h2>Empirical ε</h2><p id=\"empirical-epsilon\">No confirmed event gave a positive lower bound on ε at the claim's δ: the samples show no measurable difference of this kind.</p>"
        );
    }
    b
}

/// The "What was tested" facts: mechanism, claim, datasets or files, testers, samples, seed, tool.
fn tested_html(r: &AuditReport) -> String {
    let m = &r.mechanism;
    let mut b = String::new();
    let status = m
        .catalogue_status
        .as_ref()
        .map(|s| {
            format!(
                "<dt>catalogue status</dt><dd>{} <span class=\"small\">(ground truth recorded for the reader; the verdict never uses it)</span></dd>",
                e(s)
            )
        })
        .unwrap_or_default();
    let transform = r
        .output_transform
        .map(|t| {
            format!(
                "<dt>output transform</dt><dd id=\"output-transform\">Outputs transformed by <span class=\"mono\">{}</span> before testing: {} <span class=\"small\">(a fixed post-processing, so by the data-processing inequality every bound is also a bound on the untransformed mechanism)</span></dd>",
                e(&t.to_string()),
                e(&t.describe())
            )
        })
        .unwrap_or_default();
    let pair_rows = pair_rows_html(r) + &bayesian_rows(r);
    let samples_row = if r.sample_files.is_some() {
        format!(
            "{} releases per side used (the smaller file set's count)",
            r.samples_per_side
        )
    } else {
        format!(
            "{} releases per side, fresh for the verdict ({} calls of the mechanism)",
            r.samples_per_side, r.mechanism_calls
        )
    };
    let _ = writeln!(
        b,
        "<h2>What was tested</h2><dl class=\"facts\">\
         <dt>mechanism</dt><dd class=\"mono\">{}</dd>{status}{transform}\
         <dt>claim</dt><dd><span class=\"mono\">{}</span> — {}</dd>\
         <dt>where the claim comes from</dt><dd>{}</dd>\
         {}\
         <dt>tester(s)</dt><dd>{}</dd>\
         <dt>samples</dt><dd>{}</dd>\
         <dt>seed</dt><dd>{} <span class=\"small\">(the same seed gives the same verdict and bounds)</span></dd>\
         <dt>tool</dt><dd>dp-audit {} · audit.json layout {} (its section: layout {})</dd>{}\
         </dl>",
        e(&m.id),
        e(&m.claim.to_string()),
        e(&claim_words(&m.claim)),
        e(&readable_numbers_in(&m.claim_source)),
        pair_rows,
        e(&r.testers.join(", ")),
        samples_row,
        r.seed,
        e(&r.tool_version),
        crate::record::RECORD_SCHEMA_VERSION,
        r.schema_version,
        r.wall_time_seconds
            .map(|t| format!("<dt>wall time</dt><dd>{t:.2} s</dd>"))
            .unwrap_or_default(),
    );
    b
}

/// The rows of "What was tested" that say where the releases came from: the pair of datasets,
/// the sample files, or the Bayesian data distribution.
fn pair_rows_html(r: &AuditReport) -> String {
    let m = &r.mechanism;
    match (&r.pair, &r.sample_files) {
        (Some(pair), _) => {
            let [d, d2] = pair_html(pair);
            format!(
                "<dt>neighboring relation</dt><dd>{}</dd><dt>D</dt><dd>{d}</dd><dt>D'</dt><dd>{d2}</dd>",
                e(neighboring_words(m.neighboring)),
            )
        }
        (None, Some(f)) => format!(
            "<dt>releases</dt><dd id=\"sample-files\">read from files, not drawn by dp-audit: A = <span class=\"mono\">{}</span> ({} releases), B = <span class=\"mono\">{}</span> ({} releases). \
             The datasets and their neighboring relation are whatever produced the files; the bounds assume the releases are i.i.d. within each side and independent across sides.</dd>",
            e(&f.a),
            f.samples_a,
            e(&f.b),
            f.samples_b
        ),
        (None, None) => match &r.bayesian {
            Some(b) => format!(
                "<dt>neighboring relation</dt><dd>{}</dd><dt>D</dt><dd>{}</dd><dt>data distribution μ</dt><dd id=\"bayesian-data\">the {} record(s) of <span class=\"mono\">{}</span> ({} distinct), drawn uniformly: {} draws of the differing record x' per side ({} distinct drawn), one release each. \
                 A Bayesian DP claim is about the typical x' ~ μ and is weaker than differential privacy: a record μ rarely draws may be exposed, and this audit says nothing about any fixed pair.</dd>",
                e(neighboring_words(m.neighboring)),
                if b.dataset_drawn {
                    format!(
                        "drawn from μ, {} records, fresh for every release",
                        b.base.len()
                    )
                } else {
                    dataset_html(&b.base)
                },
                b.records,
                e(&b.data_source),
                b.distinct_records,
                b.draws_per_side,
                b.distinct_drawn
            ),
            None => String::new(),
        },
    }
}

/// How the releases were drawn and tested, and the Reproduce line.
fn how_tested_html(r: &AuditReport) -> String {
    let mut b = String::new();
    let drawn = if r.sample_files.is_some() {
        format!(
            "the {} releases per side were read from the files above",
            r.samples_per_side
        )
    } else {
        format!(
            "the mechanism was run {} times on D and {} times on D'",
            r.samples_per_side, r.samples_per_side
        )
    };
    let _ = writeln!(
        b,
        "<p>How it was tested: {drawn}. For each divergence the claim bounds, \
         each tester chose an event on a training split and bounded the divergence from below on the held-out split, \
         in both directions (M(D) against M(D') and the reverse). A violation is reported only when such a lower bound exceeds \
         what the claim allows.</p>"
    );
    let _ = writeln!(
        b,
        "<p class=\"small\">Reproduce: <code id=\"reproduce\">{}</code>{}</p>",
        e(&reproduce_command(r)),
        if r.reproduce.is_some() {
            " (the command line of this run; a time budget is replaced by the trials it allowed)"
        } else {
            " (add any <code>--param NAME=VALUE</code> the original run used; this audit.json does not record them)"
        }
    );
    b
}

/// The "How sure" section: β and its union-bound split.
fn beta_html(r: &AuditReport) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h2>How sure: β and its split</h2><p>β = {} is the probability that a mechanism keeping its claim is reported as violating it. \
         It is split over {} bounds by a union bound, {} each, so all bounds hold together with probability at least {}.</p>\
         <p class=\"small\">{}</p>",
        e(&num(r.beta.total)),
        r.beta.bounds,
        e(&num(r.beta.per_bound)),
        percent(1.0 - r.beta.total),
        e(&r.beta.rule),
    );
    b
}

/// The bounds table against what the claim allows, and the inequality behind the bounds.
fn bounds_html(r: &AuditReport) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h2>Bounds against what the claim allows</h2><div class=\"scroll\">\
         <table id=\"bounds\"><thead><tr><th>tester</th><th>divergence</th><th>direction</th><th>lower bound</th><th>allowed</th><th>result</th>\
         <th>point estimate</th><th>event S</th><th>first side in S</th><th>second side in S</th><th>β of this bound</th></tr></thead><tbody>"
    );
    for bound in &r.bounds {
        b.push_str(&bound_row(bound, super::bayesian::joint_rows(r)));
    }
    b.push_str("</tbody></table></div>\n");
    let _ = writeln!(
        b,
        "<p class=\"small\">For direction M(D) ‖ M(D'), P is the output distribution on D and Q on D' (and the reverse for M(D') ‖ M(D)). \
         Counts are on the held-out split. The point estimate is for reading only and never decides.</p>"
    );
    let mut inequalities: Vec<(&str, &str)> = r
        .bounds
        .iter()
        .map(|b| (b.tester.as_str(), b.inequality.as_str()))
        .collect();
    inequalities.sort();
    inequalities.dedup();
    if let Some((_, first)) = inequalities.first() {
        let _ = writeln!(
            b,
            "<details><summary>The inequality behind the bounds</summary><pre>{}</pre>{}</details>",
            e(first),
            if inequalities.len() > 1 {
                format!(
                    "<p class=\"small\">({} variants in total; each row's own is in audit.json)</p>",
                    inequalities.len()
                )
            } else {
                String::new()
            }
        );
    }
    b
}

/// The page of a sweep.
pub fn render_sweep(s: &SweepReport, run_id: &str, figures: &[Figure]) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h1>Sweep of <span class=\"mono\">{}</span> over <span class=\"mono\">{}</span></h1>\n\
         <p class=\"sub\">run <span class=\"mono\">{}</span> · <a href=\"../index.html\">all runs</a></p>",
        e(&s.mechanism),
        e(&s.parameter),
        e(run_id)
    );
    b.push_str(&sweep_verdict_html(s));
    b.push_str(&sweep_tested_html(s));
    b.push_str(&sweep_points_html(s));
    if !figures.is_empty() {
        let _ = writeln!(b, "<h2>Figures</h2>");
        b.push_str(&figures_html(figures));
    }
    let _ = writeln!(
        b,
        "<h2>Files</h2><p><a href=\"audit.json\">audit.json</a>: everything above, machine-readable. \
         <code>audit report {}/audit.json</code> re-renders this page.</p>",
        e(run_id)
    );
    b.push_str(&record_html(&crate::record::ResultRecord::from_sweep(s)));
    page(
        &format!("dp-audit sweep: {} over {}", s.mechanism, s.parameter),
        &b,
    )
}

/// The sweep's verdict box: how many points have a detection rate above β.
fn sweep_verdict_html(s: &SweepReport) -> String {
    let mut b = String::new();
    let total: u64 = s.points.iter().map(|p| p.repeats).sum();
    let detected: u64 = s.points.iter().map(|p| p.detections).sum();
    let beta = s.failure_probability_per_audit;
    let conf = percent(super::DETECTION_CONFIDENCE);
    let above: Vec<&super::SweepPoint> = s.points_above_beta().collect();
    let point_name = |p: &super::SweepPoint| {
        if s.testers.len() > 1 {
            format!("{} = {} ({})", s.parameter, num(p.value), p.tester)
        } else {
            format!("{} = {}", s.parameter, num(p.value))
        }
    };
    let (class, headline, detail) = if above.is_empty() {
        (
            "noviolation",
            format!(
                "Detections consistent with β at all {} points",
                s.points.len()
            ),
            format!(
                "At every point the {conf} Clopper–Pearson interval on the detection rate reaches down to β = {} or below: \
                 the detections are no more than a mechanism keeping its claim can produce.",
                num(beta)
            ),
        )
    } else {
        (
            "violation",
            format!(
                "Detection rate above β at {} of {} points",
                above.len(),
                s.points.len()
            ),
            format!(
                "Above β (the whole {conf} interval exceeds β = {}): {}. At the other points the detections are consistent with β.",
                num(beta),
                above
                    .iter()
                    .map(|p| format!("{} ({} of {})", point_name(p), p.detections, p.repeats))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    };
    let _ = writeln!(
        b,
        "<div class=\"verdict {class}\" id=\"verdict\"><h2>{}</h2><p><b>{}</b></p>\
         <p>{detected} of {total} audits found a violation. Each value of <span class=\"mono\">{}</span> was audited {} times per tester with independent seeds, {} releases per side, \
         β = {} per audit. Against a value where the mechanism keeps its claim, each audit reports a violation with probability at most β, \
         so the detection count k of R repeats is compared with β through its exact {conf} interval: above β when the whole interval is above β, \
         consistent with β otherwise (one detection in 10 audits is consistent with β = 0.05, not with β = 0.001). \
         Intervals are per point, not adjusted for the number of points. \
         A value consistent with β is not shown to keep its claim: only its witness pair, these testers and these samples were tried.</p></div>",
        e(&headline),
        e(&detail),
        e(&s.parameter),
        s.repeats,
        s.samples_per_side,
        e(&num(beta)),
    );
    b
}

/// The sweep's "What was tested" facts and its Reproduce line.
fn sweep_tested_html(s: &SweepReport) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h2>What was tested</h2><dl class=\"facts\"><dt>mechanism</dt><dd class=\"mono\">{}</dd>\
         <dt>fixed parameters</dt><dd class=\"mono\">{}</dd>\
         <dt>claim</dt><dd>{}</dd>\
         <dt>swept parameter</dt><dd class=\"mono\">{}</dd>\
         <dt>tester(s)</dt><dd>{}</dd><dt>seed</dt><dd>{}</dd><dt>tool</dt><dd>dp-audit {} · audit.json layout {} (its section: layout {})</dd>{}</dl>",
        e(&s.mechanism),
        e(&if s.fixed_params.is_empty() {
            "(none)".to_string()
        } else {
            s.fixed_params.join(" ")
        }),
        e(&s.claim_summary()),
        e(&s.parameter),
        e(&s.testers.join(", ")),
        s.seed,
        e(&s.tool_version),
        crate::record::RECORD_SCHEMA_VERSION,
        s.schema_version,
        s.wall_time_seconds
            .map(|t| format!("<dt>wall time</dt><dd>{t:.2} s</dd>"))
            .unwrap_or_default(),
    );
    if let Some(line) = &s.reproduce {
        let _ = writeln!(
            b,
            "<p class=\"small\">Reproduce: <code id=\"reproduce\">{}</code> (the same seed gives the same detections)</p>",
            e(line)
        );
    }
    b
}

/// The detections per swept value against β, the notes and how to read the margin.
fn sweep_points_html(s: &SweepReport) -> String {
    let mut b = String::new();
    let beta = s.failure_probability_per_audit;
    let _ = writeln!(
        b,
        "<h2>Detections per value</h2><div class=\"scroll\"><table id=\"points\"><thead><tr><th>{}</th><th>claim</th><th>catalogue status</th><th>tester</th>\
         <th>detected k / R</th><th>{} interval on the rate (Clopper–Pearson)</th><th>against β = {}</th><th>median margin (bound − allowed)</th></tr></thead><tbody>",
        e(&s.parameter),
        percent(super::DETECTION_CONFIDENCE),
        e(&num(beta)),
    );
    for p in &s.points {
        let claim = s
            .claims
            .iter()
            .find(|c| c.value == p.value)
            .map(|c| c.claim.as_str())
            .unwrap_or("");
        let (l, u) = p.detection_interval();
        let (class, against) = if p.above_beta(beta) {
            (" class=\"bad\"", "<span class=\"flag\">above β</span>")
        } else {
            ("", "<span class=\"ok\">consistent with β</span>")
        };
        let _ = writeln!(
            b,
            "<tr{class}><td class=\"num\">{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{} / {}</td><td class=\"num\">[{}, {}]</td><td>{against}</td><td class=\"num\">{}</td></tr>",
            e(&num(p.value)),
            e(claim),
            e(&p.status),
            e(&p.tester),
            p.detections,
            p.repeats,
            e(&num(l)),
            e(&num(u)),
            e(&num(p.median_margin)),
        );
    }
    b.push_str("</tbody></table></div>\n");
    for note in &s.notes {
        let _ = writeln!(b, "<p class=\"note\">{}</p>", e(note));
    }
    b.push_str("<p class=\"small\">Margin = the largest lower bound minus what the claim allows for it, in one audit; \
                above 0 means that audit found a violation. Catalogue status is ground truth recorded for the reader; it never decides.</p>\n");
    b
}

/// The list of runs in a report directory.
pub fn render_index(entries: &[IndexEntry], unreadable: &[String]) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h1>dp-audit reports</h1><p class=\"sub\">{} report(s) in this directory. Each links to its page; audit.json in each folder is the source of truth.</p>",
        entries.len()
    );
    b.push_str(
        "<table id=\"runs\"><thead><tr><th>run</th><th>kind</th><th>mechanism</th><th>claim</th><th>result</th><th>seed</th><th>samples per side</th></tr></thead><tbody>\n",
    );
    for en in entries {
        let class = if en.violation { " class=\"bad\"" } else { "" };
        let _ = writeln!(
            b,
            "<tr{class}><td><a class=\"mono\" href=\"{}/index.html\">{}</a></td><td>{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            e(&en.run_id),
            e(&en.run_id),
            e(&en.kind),
            e(&en.mechanism),
            e(&en.claim),
            e(&en.result),
            en.seed,
            en.samples_per_side,
        );
    }
    b.push_str("</tbody></table>\n");
    if !unreadable.is_empty() {
        let _ = writeln!(
            b,
            "<p class=\"small\">Not listed (audit.json missing or unreadable): {}</p>",
            e(&unreadable.join(", "))
        );
    }
    page("dp-audit reports", &b)
}

/// The definition and drawn-dataset rows of the HTML report (empty for other audits).
fn bayesian_rows(r: &AuditReport) -> String {
    let Some(b) = &r.bayesian else {
        return String::new();
    };
    let mut s = format!(
        "<dt>Bayesian DP definition tested</dt><dd id=\"bayesian-definition\">{}</dd>",
        escape_html(super::bayesian::definition(&b.definition))
    );
    if let Some(a) = super::bayesian::attack_line(r) {
        s += &format!(
            "<dt>attack</dt><dd id=\"bayesian-attack\">{}</dd>",
            escape_html(&a)
        );
    }
    if let Some(g) = r.group_sentence() {
        s += &format!(
            "<dt>group of records</dt><dd id=\"bayesian-group\">{}</dd>",
            escape_html(&g)
        );
    }
    if b.dataset_drawn {
        s += &format!(
            "<dt>rest of the dataset</dt><dd id=\"bayesian-drawn-dataset\">drawn from μ too, fresh for every release ({} records): the claim tested holds on average over the dataset, not for one fixed D</dd>",
            b.base.len()
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape_html("<script>alert(\"x\")</script>"),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
        );
        assert_eq!(escape_html("a & b"), "a &amp; b");
        assert_eq!(escape_html("' onerror='x"), "&#39; onerror=&#39;x");
        assert_eq!(escape_html("ε ≤ 1 ‖ D'"), "ε ≤ 1 ‖ D&#39;");
        assert_eq!(escape_html(""), "");
        // Already-escaped text is escaped again (no double-decoding shortcuts).
        assert_eq!(escape_html("&lt;"), "&amp;lt;");
    }

    #[test]
    fn long_numbers_in_descriptions_are_shortened() {
        assert_eq!(
            readable_numbers_in(
                "coordinate 19 ≤ 3.2154895907871257 and coordinate 0 ≥ -1.9007555218414707"
            ),
            "coordinate 19 ≤ 3.215 and coordinate 0 ≥ -1.901"
        );
        assert_eq!(
            readable_numbers_in("coordinates [0, 1] = [0.0, 1.0]; T_1 x_2 0.5 1.000001e-7"),
            "coordinates [0, 1] = [0.0, 1.0]; T_1 x_2 0.5 1e-7"
        );
        assert_eq!(
            readable_numbers_in("ratio ≥ 0.0151 (RBF)"),
            "ratio ≥ 0.0151 (RBF)"
        );
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(num(0.0), "0");
        assert_eq!(num(1.0), "1");
        assert_eq!(num(0.98562), "0.9856");
        assert_eq!(num(5.810512), "5.811");
        assert_eq!(num(1e-5), "1e-5");
        assert_eq!(num(200000.0), "200000");
        assert_eq!(percent(0.999), "99.9%");
    }
}
