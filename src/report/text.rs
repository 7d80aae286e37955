//! Text renderings of reports, as the `audit` subcommands print them: beside the JSON (the
//! reports' serde form) and the HTML pages (`html.rs`) of the same reports.

use std::fmt::Write as _;

use crate::audit::{AuditReport, Direction, SampleTestReport, Verdict};
use crate::mechanisms::Dataset;
use crate::mechanisms::math::readable;

fn short_dataset(d: &Dataset) -> String {
    d.short()
}

/// Renders a report as the text `audit run` prints.
pub fn render_text(r: &AuditReport) -> String {
    let mut s = String::new();
    s += &tested_text(r);
    s += &bounds_text(r);
    s += &verdict_text(r);
    let conf = format!("{:.6}", (1.0 - r.beta.total) * 100.0)
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string();
    match (&r.empirical_epsilon, &r.bayesian) {
        (Some(e), Some(_)) => s.push_str(&bayesian_epsilon_text(e, &conf)),
        (Some(e), None) => s.push_str(&empirical_epsilon_text(e, &conf)),
        _ => {}
    }
    if let Some(t) = r.wall_time_seconds {
        let _ = writeln!(s, "time         {t:.2} s");
    }
    s
}

/// The empirical ε_μ lines of a Bayesian audit: the bound in the claim's own units (ε_μ at
/// δ_μ, averaged over x' ~ μ, not a worst-case ε), and how it compares with the claim.
fn bayesian_epsilon_text(e: &crate::audit::EmpiricalEpsilon, conf: &str) -> String {
    let mut s = format!(
        "empirical ε_μ ≥ {:.4} at δ_μ = {} (Bayesian DP over x' ~ μ, not a worst-case ε; confidence 1 − β = {conf}%, simultaneous with the verdict)\n",
        e.lower_bound,
        readable(e.delta)
    );
    if let Some(c) = e.claimed_epsilon.filter(|c| c.is_finite() && *c > 0.0) {
        let reading = if e.lower_bound > c {
            format!(
                "the claim states ε_μ = {}: a typical record's privacy loss exceeds it (the claim is violated at this δ_μ)",
                readable(c)
            )
        } else {
            format!(
                "the claim states ε_μ = {}: if it holds, it is at most {:.0} % loose on this data",
                readable(c),
                ((c - e.lower_bound) / c * 100.0).ceil()
            )
        };
        let _ = writeln!(s, "             {reading}");
    }
    if let Some(src) = &e.source {
        let short = src.split('(').next().unwrap_or(src).trim_end();
        let _ = writeln!(s, "             from {short}");
    }
    s
}

/// The DP-fy ML guide's items of an audit, in one line: the tier of the claimed ε, and what
/// the guarantee covers when stated; `None` when there is neither.
pub fn dp_fy_line(m: &crate::record::MechanismInfo) -> Option<String> {
    use crate::mechanisms::accounting::dpfy::Tier;
    let tier = m.claim.natural_epsilon().and_then(Tier::of);
    let mut parts = Vec::new();
    if let (Some(t), Some(e)) = (tier, m.claim.natural_epsilon()) {
        parts.push(format!(
            "privacy tier {} of the claimed ε = {} (Ponomareva et al. 2023: {})",
            t.number(),
            readable(e),
            t.words()
        ));
    }
    if let Some(a) = m.scope.data_accesses {
        parts.push(format!("data accesses covered: {}", a.words()));
    }
    if let Some(o) = m.scope.outputs {
        parts.push(format!("outputs covered: {}", o.words()));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// The lines saying what was tested: mechanism, claim, neighbors, datasets or files, testers,
/// transform, samples and β.
fn tested_text(r: &AuditReport) -> String {
    let mut s = String::new();
    let m = &r.mechanism;
    let status = m
        .catalogue_status
        .as_ref()
        .map(|s| format!(" (catalogue: {s})"))
        .unwrap_or_default();
    let _ = writeln!(s, "mechanism    {}{status}", m.id);
    let _ = writeln!(s, "claim        {}  [{}]", m.claim, m.claim_source);
    let _ = writeln!(s, "neighbors    {}", m.neighboring);
    if !m.privacy_unit.is_empty() && r.sample_files.is_none() {
        let _ = writeln!(
            s,
            "unit         {}; {}",
            m.privacy_unit,
            m.setting.describe()
        );
    }
    if let Some(line) = dp_fy_line(&r.mechanism) {
        let _ = writeln!(s, "dp-fy ml     {line}");
    }
    if let Some(pair) = &r.pair {
        let [d, d2] = pair.short_sides();
        let _ = writeln!(s, "pair         D  = {d}");
        let _ = writeln!(s, "             D' = {d2}");
    }
    s += &bayesian_data_text(r);
    s += &super::bayesian::text_lines(r);
    if let Some(f) = &r.sample_files {
        let _ = writeln!(
            s,
            "samples      A = {} ({} releases), B = {} ({} releases)",
            f.a, f.samples_a, f.b, f.samples_b
        );
    }
    let _ = writeln!(s, "testers      {}", r.testers.join(", "));
    for why in &r.skipped_testers {
        let _ = writeln!(s, "             skipped {why}");
    }
    if let Some(t) = &r.output_transform {
        let _ = writeln!(
            s,
            "transform    {t}: {} (a fixed post-processing: bounds on it are bounds on the mechanism)",
            t.describe()
        );
    }
    let _ = writeln!(
        s,
        "samples      {} per side ({} mechanism calls), seed {}",
        r.samples_per_side, r.mechanism_calls, r.seed
    );
    let _ = writeln!(s, "β            {}", r.beta.rule);
    s
}

/// The Bayesian audit's data lines: where x' and D come from, and the draws per side.
fn bayesian_data_text(r: &AuditReport) -> String {
    let mut s = String::new();
    if let Some(b) = &r.bayesian {
        let _ = writeln!(
            s,
            "bayesian     typical case, weaker than DP: x' ~ μ = the {} record(s) of {} ({} distinct), {}",
            b.records,
            b.data_source,
            b.distinct_records,
            if b.dataset_drawn {
                format!(
                    "D drawn from μ, {} records, fresh for every release",
                    b.base.len()
                )
            } else {
                format!("D = {}", short_dataset(&b.base))
            }
        );
        let _ = writeln!(
            s,
            "             {} draws of x' per side ({} distinct drawn), one release each; joint rows {}",
            b.draws_per_side, b.distinct_drawn, b.features
        );
    }
    s
}

/// The lines of the bounds against what the claim allows, with the event of each violation.
fn bounds_text(r: &AuditReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "bounds       (lower confidence bound vs what the claim allows)"
    );
    // A Bayesian DP audit compares the joint laws of (x', release) with x' ~ μ: first side
    // (x', M(D)), second (x', M(D ∪ {x'})) (see `crate::audit::bayesian`).
    let bayesian = super::bayesian::joint_rows(r);
    for b in &r.bounds {
        let dir = match (b.direction, bayesian) {
            (Direction::FirstVsSecond, false) => "M(D)‖M(D')",
            (Direction::SecondVsFirst, false) => "M(D')‖M(D)",
            (Direction::FirstVsSecond, true) => "(x',M(D))‖(x',M(D∪x'))",
            (Direction::SecondVsFirst, true) => "(x',M(D∪x'))‖(x',M(D))",
            (Direction::Larger, _) => "larger of both",
        };
        let flag = if b.violation { "  VIOLATION" } else { "" };
        let _ = writeln!(
            s,
            "  {:<16} {:<12} ≥ {:<11.4e} allowed {:<11.4e}{flag}",
            b.divergence.to_string(),
            dir,
            b.value,
            b.allowed
        );
        if b.violation
            && let Some(e) = &b.event
        {
            s.push_str(&event_text(e));
        }
    }
    s
}

/// The line of a violating bound's event: its held-out counts, as the bound used them.
fn event_text(e: &crate::testers::EventBound) -> String {
    let mut s = String::new();
    let _ = match (&e.contrast, e.p_lower, e.q_upper) {
        (Some(c), _, _) => writeln!(
            s,
            "      event: {}; U = {}, W = {} (Poisson λ = {:.1} releases per side, E[W] ≥ {:.3})",
            e.description, c.u, c.w, c.lambda, c.mu_w_lower
        ),
        (None, Some(pl), Some(qu)) => writeln!(
            s,
            "      event S: {}; P(S) ≥ {:.4e} ({} of {}), Q(S) ≤ {:.4e} ({} of {})",
            e.description, pl, e.count_p, e.n_p, qu, e.count_q, e.n_q
        ),
        (None, _, _) if e.binomial.is_some() => writeln!(
            s,
            "      event S: {}; {} of {} held-out releases in S on the side it favours, {} of {} on the other (exact binomial test)",
            e.description, e.count_p, e.n_p, e.count_q, e.n_q
        ),
        _ => writeln!(s, "      event S: {}", e.description),
    };
    s
}

/// The verdict line, in the honest words, and the group-privacy sentence.
fn verdict_text(r: &AuditReport) -> String {
    let mut s = String::new();
    match r.verdict {
        Verdict::Violation => {
            let _ = writeln!(
                s,
                "verdict      violation found: a lower confidence bound exceeds what the claim allows; the chance that this happens to a mechanism keeping its claim is at most β = {}",
                readable(r.beta.total)
            );
        }
        Verdict::NoViolation => {
            let _ = writeln!(
                s,
                "verdict      no violation found: no bound exceeded what the claim allows. This does not show the claim holds: only {}, these testers and {} samples per side were tried",
                match &r.bayesian {
                    Some(b) if b.dataset_drawn => "these draws of D and x' from the data",
                    Some(_) => "this D, these draws of x' from the data",
                    None => "this pair",
                },
                r.samples_per_side
            );
        }
    }
    if let Some(e) = r
        .empirical_epsilon
        .as_ref()
        .filter(|e| r.verdict == Verdict::Violation && e.exceeds_claim())
        .filter(|_| !r.bounds.iter().any(|b| b.violation))
    {
        let _ = writeln!(
            s,
            "             (the empirical ε below is that bound: ε ≥ {} at δ = {} against the claimed ε = {}; the divergence bounds above did not reach what the claim allows)",
            readable(e.lower_bound),
            readable(e.delta),
            readable(e.claimed_epsilon.unwrap_or(f64::NAN))
        );
    }
    if let Some(g) = r.group_sentence() {
        let _ = writeln!(s, "             {g}");
    }
    s
}

/// Renders a dataset search (`audit run --finder …`, `--exec`) as text: the exploratory phase,
/// every confirmation, and the verdict.
pub fn render_search_text(r: &crate::finders::SearchReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "search       finder {}, {} exploratory trials of {} releases per side (no statistical claim; used only to choose pairs)",
        r.finder,
        r.trials.len(),
        r.config.search_samples
    );
    let pct: Vec<String> = r
        .score_percentiles
        .iter()
        .map(|(p, v)| format!("p{p:.0} {v:+.3e}"))
        .collect();
    let _ = writeln!(
        s,
        "scores       point estimates of (divergence − allowed) across trials: {}",
        pct.join(", ")
    );
    if !r.skipped.is_empty() {
        let _ = writeln!(
            s,
            "skipped      {} proposed pair(s) the program failed on (a failure status, a time-out or a non-finite output): not scored, no release drawn from them; trials {}",
            r.skipped.len(),
            r.skipped
                .iter()
                .map(|t| t.index.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(first) = r.skipped.first() {
            let [d, d2] = first.pair.short_sides();
            let _ = writeln!(
                s,
                "             first: D = {d}, D' = {d2}: {}",
                first.error.replace('\n', "\n             ")
            );
        }
    }
    let _ = writeln!(s, "β            {}", r.beta_rule);
    for (k, c) in r.confirmations.iter().enumerate() {
        let _ = writeln!(
            s,
            "\n--- confirmation {} of at most {} ---",
            k + 1,
            r.config.confirm_top
        );
        s += &render_text(c);
    }
    let _ = writeln!(
        s,
        "\nverdict      {} ({} mechanism calls, {} releases drawn in both phases)",
        r.verdict.words(),
        r.mechanism_calls,
        r.samples_drawn
    );
    s
}

/// Renders an `audit test` report (samples drawn elsewhere) as text; `dim` is the releases'
/// dimension.
pub fn render_samples_text(r: &SampleTestReport, dim: usize) -> String {
    let mut s = format!(
        "samples      A = {} ({} releases), B = {} ({} releases), dimension {}\nclaim        {}\ntesters      {}\n{}β            {}\nbounds       (lower confidence bound vs what the claim allows)\n",
        r.source_a,
        r.samples_a,
        r.source_b,
        r.samples_b,
        dim,
        r.claim,
        r.testers.join(", "),
        r.output_transform
            .map(|t| format!("transform    {t}: {}\n", t.describe()))
            .unwrap_or_default(),
        r.beta.rule
    );
    for b in &r.bounds {
        let dir = match b.direction {
            Direction::FirstVsSecond => "A‖B",
            Direction::SecondVsFirst => "B‖A",
            Direction::Larger => "max ",
        };
        let _ = writeln!(
            s,
            "  {:16} {dir}   ≥ {:.4e}   allowed {:.4e}   {}",
            b.divergence.to_string(),
            b.value,
            b.allowed,
            if b.violation { "VIOLATION" } else { "ok" }
        );
    }
    let _ = writeln!(
        s,
        "verdict      {} (β = {}; assumes the releases are i.i.d. within each file set and independent across them)",
        r.verdict.words(),
        readable(r.beta.total)
    );
    if let Some(e) = &r.empirical_epsilon {
        let conf = format!("{:.6}", (1.0 - r.beta.total) * 100.0)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string();
        s.push_str(&empirical_epsilon_text(e, &conf));
    }
    s
}

/// The empirical ε lines of a text report: the bound, how tight the claim is, and where the
/// bound comes from (event and held-out counts).
pub fn empirical_epsilon_text(e: &crate::audit::EmpiricalEpsilon, conf: &str) -> String {
    let mut s = format!(
        "empirical ε  ≥ {:.4} at δ = {} (confidence 1 − β = {conf}%, simultaneous with the verdict)\n",
        e.lower_bound,
        readable(e.delta)
    );
    if let Some(t) = e.tightness() {
        let _ = writeln!(s, "             {t}");
    }
    if let Some(mu) = e.mu_lower {
        let _ = writeln!(
            s,
            "gaussian dp  μ ≥ {mu:.4} (certified from one event: Φ⁻¹(P(S)) − Φ⁻¹(Q(S)) ≤ μ under μ-GDP; same confidence)"
        );
    }
    let _ = writeln!(
        s,
        "attack       {}",
        crate::record::result::attack_sentence(e.lower_bound, e.delta, e.claimed_epsilon)
    );
    if let Some(src) = &e.source {
        let short = src.split(':').next().unwrap_or(src);
        let _ = writeln!(s, "             from {short}");
    }
    if let Some(ev) = &e.event {
        let _ = writeln!(s, "             event: {ev}");
    }
    if let Some(ev) = &e.evidence {
        let _ = writeln!(s, "             {ev}");
    }
    s
}

/// Renders the table `audit sweep` prints: detections per parameter value and tester.
pub fn render_sweep_text(
    mechanism: &str,
    name: &str,
    repeats: u64,
    samples: usize,
    beta: f64,
    seed: u64,
    points: &[crate::report::SweepPoint],
) -> String {
    let mut s = format!(
        "sweep of {} over {name}: {} audits per value and tester, {} samples per side, β = {} per audit, seed {}\n",
        mechanism,
        repeats,
        samples,
        readable(beta),
        seed
    );
    let _ = writeln!(
        s,
        "{:>10}  {:8}  {:14}  {:>10}  {:>17}  {:>14}  {:>12}",
        name, "status", "tester", "detected", "95% interval", "median margin", "median ε ≥"
    );
    for p in points {
        let (lo, hi) = p.detection_interval();
        let mark = if p.above_beta(beta) {
            "  above β: violation"
        } else {
            "  consistent with β"
        };
        let eps = p
            .median_epsilon
            .map_or_else(|| "-".to_string(), |e| format!("{e:.4}"));
        let _ = writeln!(
            s,
            "{:>10}  {:8}  {:14}  {:>4} / {:<3}  [{:>6.3}, {:>6.3}]  {:>+14.3e}  {eps:>12}{mark}",
            p.value, p.status, p.tester, p.detections, p.repeats, lo, hi, p.median_margin
        );
    }
    let _ = writeln!(
        s,
        "(each audit reports a violation against a mechanism keeping its claim with probability ≤ β; a detection rate whose Clopper–Pearson 95% interval lies above β shows a violation, one whose interval holds β does not; margin = largest bound − allowed; median ε ≥: the median over audits of the empirical lower bound on ε at the claim's δ, or 10⁻⁵ for profile claims)"
    );
    s
}

/// Renders a layered run (see [`crate::record::layers`]): each layer's search and confirmations, then
/// both answers side by side, the overall verdict and the line that re-runs it.
pub fn render_layered_text(r: &crate::finders::layered::LayeredReport, reproduce: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "layers       {} (each with its own search ranking, confirmations and share of β; --check chooses)",
        r.layers
            .iter()
            .map(|l| match &l.verdict.skipped {
                Some(_) => format!("{} [skipped]", l.verdict.title),
                None => l.verdict.title.clone(),
            })
            .collect::<Vec<_>>()
            .join(" + ")
    );
    if let Some(p) = &r.plan {
        let _ = writeln!(s, "{}", p.describe());
    }
    for l in &r.layers {
        let _ = writeln!(s, "\n===== layer: {} =====", l.verdict.title);
        match &l.search {
            Some(search) => {
                let _ = writeln!(s, "view         {}", l.verdict.transform.describe());
                s += &render_search_text(search);
            }
            None => {
                let _ = writeln!(
                    s,
                    "skipped      {}",
                    l.verdict.skipped.as_deref().unwrap_or("")
                );
            }
        }
    }
    let _ = writeln!(s, "\n===== answers =====");
    s += &crate::record::layers::render_text(&r.verdicts());
    let _ = writeln!(s, "β            {}", r.beta_rule);
    if let Some(e) = &r.effort {
        let _ = writeln!(
            s,
            "search       {}{}",
            if e.cut_short {
                "CUT SHORT: the search looked less hard than planned: "
            } else {
                ""
            },
            e.describe()
        );
    }
    let deciding: Vec<&str> = r
        .layers
        .iter()
        .filter(|l| l.verdict.verdict == Some(Verdict::Violation))
        .map(|l| l.verdict.title.as_str())
        .collect();
    let _ = writeln!(
        s,
        "verdict      {}{} ({} scored, {} mechanism calls, {} releases drawn)",
        r.verdict.words(),
        if deciding.is_empty() {
            String::new()
        } else {
            format!(" in: {}", deciding.join(" and "))
        },
        crate::record::effort::pairs(r.trials_scored),
        r.mechanism_calls,
        r.samples_drawn
    );
    let _ = writeln!(s, "reproduce    {reproduce}");
    s
}
