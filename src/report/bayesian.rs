//! The Bayesian DP parts of a report ([`crate::audit::bayesian`]) that the general renderers
//! call with one line each: the definition tested, whether the rest of the dataset was drawn,
//! and the records drawn (the page's rows are drawn in [`super::html`], from [`definition`]).

use crate::record::AuditReport;

/// Most drawn records listed by name on the text page (all are in the JSON).
const LISTED: usize = 8;

/// The definition and draw lines of the text report (empty for other audits).
pub fn text_lines(r: &AuditReport) -> String {
    let Some(b) = &r.bayesian else {
        return String::new();
    };
    let mut s = String::new();
    s += &format!("definition   {}\n", definition(&b.definition));
    if let Some(a) = attack_line(r) {
        s += &format!("attack       {a}\n");
    }
    if b.dataset_drawn {
        s += &format!(
            "             the rest of the dataset drawn from μ too, fresh for every release ({} records, as D): the claim tested holds on average over D\n",
            b.base.len()
        );
    }
    if !b.drawn.is_empty() && b.drawn.len() <= LISTED {
        let list: Vec<String> = b
            .drawn
            .iter()
            .map(|d| format!("{:?} ×{}/{}", d.record, d.first, d.second))
            .collect();
        s += &format!(
            "             x' drawn (first side/second side): {}\n",
            list.join(", ")
        );
    }
    s
}

/// True when the report's bounds compare joint laws of (x', release): a Bayesian DP audit under
/// Definition 1. Under Definition 2 the rows are the releases alone, whose directions read as for
/// a pair, M(D) against M(D') (with x' drawn).
pub fn joint_rows(r: &AuditReport) -> bool {
    r.bayesian
        .as_ref()
        .is_some_and(|b| !b.definition.starts_with("Definition 2"))
}

/// What the Bayesian claim of `r` promises a membership attacker, in one sentence (`None` for
/// other claims): success at most (e^ε_μ + δ_μ)/(1 + e^ε_μ), averaged over the differing record
/// x' ~ μ (Triastcyn & Faltings 2020, eq. 1: the bound is linear in δ, so the conditional δ(x')
/// of each record averages to δ_μ). A Bayesian audit bounds no ε, so this is its attack line.
pub fn attack_line(r: &AuditReport) -> Option<String> {
    let crate::mechanisms::PrivacyClaim::Bayesian { epsilon, delta } = r.mechanism.claim else {
        return None;
    };
    Some(format!(
        "the claim (ε_μ = {}, δ_μ = {}) promises that a membership attacker guessing whether a typical record x' ~ μ was in the data (prior 1/2) succeeds at most {} of the time, averaged over x'; a record μ rarely draws may be exposed more",
        crate::mechanisms::math::readable(epsilon),
        crate::mechanisms::math::readable(delta),
        crate::record::result::percent(crate::record::attack_success_bound(epsilon, delta), true)
    ))
}

/// The recorded label, or Definition 1's for reports from before the choice existed.
pub fn definition(label: &str) -> &str {
    if label.is_empty() {
        crate::audit::bayesian::Definition::Strong.label()
    } else {
        label
    }
}
