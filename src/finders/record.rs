//! The records of a dataset search and of a program's two-layer run: each mode builds its own
//! [`ResultRecord`] (the record types are a leaf of the crate, [`crate::record`]).

use crate::mechanisms::math::readable;
use crate::record::result::{
    BetaRecord, LayerRecord, Mode, PairRecord, RECORD_SCHEMA_VERSION, ResultRecord, Timings,
    audit_layer, claim_of, confirmed_pair, deciding, section, short_pair, strongest_epsilon,
    sum_wall, target_of, tool_version, unit_of, unknown_target, verdict_layer, verdict_sentence,
};
use crate::record::{AuditReport, Verdict};

impl ResultRecord {
    /// The record of a dataset search and its confirmations.
    /// `seed` and `beta_total`: the run's seed and β (split over the confirm slots).
    pub fn from_search(r: &crate::finders::SearchReport, seed: u64, beta_total: f64) -> Self {
        let decided = deciding(&r.confirmations);
        let mut pairs: Vec<PairRecord> = r
            .trials
            .iter()
            .map(|t| {
                let (d, d_prime) = short_pair(&t.pair);
                PairRecord {
                    role: "trial".into(),
                    layer: None,
                    d,
                    d_prime,
                    score: Some(t.score),
                    verdict: None,
                    margin: None,
                }
            })
            .collect();
        pairs.extend(r.skipped.iter().map(|s| {
            let (d, d_prime) = short_pair(&s.pair);
            PairRecord {
                role: "skipped".into(),
                layer: None,
                d,
                d_prime,
                score: None,
                verdict: None,
                margin: None,
            }
        }));
        pairs.extend(r.confirmations.iter().filter_map(confirmed_pair(None)));
        let meaning = verdict_sentence(r.verdict, beta_total, "the pairs confirmed");
        let layers: Vec<LayerRecord> = decided
            .map(|c| {
                vec![LayerRecord {
                    beta: beta_total,
                    verdict: Some(r.verdict),
                    ..audit_layer(c, "releases", "the releases as they are", meaning.clone())
                }]
            })
            .unwrap_or_default();
        Self {
            schema_version: RECORD_SCHEMA_VERSION,
            tool_version: tool_version(),
            mode: Mode::Search,
            target: decided.map(target_of).unwrap_or_else(unknown_target),
            claim: decided.map(claim_of),
            neighbors: decided.map(|c| c.mechanism.neighboring.to_string()),
            privacy_unit: decided.and_then(|c| unit_of(&c.mechanism, true).0),
            setting: decided.and_then(|c| unit_of(&c.mechanism, true).1),
            dp_fy_ml: decided.and_then(|c| crate::record::result::dp_fy_of(&c.mechanism)),
            seed,
            pairs,
            empirical_epsilon: strongest_epsilon(&layers),
            layers,
            verdict: Some(r.verdict),
            verdict_words: meaning,
            beta: BetaRecord {
                total: beta_total,
                rule: r.beta_rule.clone(),
            },
            timings: Timings {
                wall_time_seconds: sum_wall(&r.confirmations),
                mechanism_calls: Some(r.mechanism_calls),
                releases: Some(r.samples_drawn),
            },
            reproduce: decided.and_then(|c| c.reproduce.clone()),
            effort: None,
            section: section("search", r),
        }
    }

    /// The record of a two-layer run (`reproduce`: its Reproduce line).
    pub fn from_layered(
        r: &crate::finders::layered::LayeredReport,
        reproduce: &str,
        seed: u64,
    ) -> Self {
        let mut pairs = Vec::new();
        let mut layers = Vec::new();
        let mut first: Option<&AuditReport> = None;
        let mut beta_total = 0.0;
        for l in &r.layers {
            beta_total += l.verdict.beta;
            let decided = l.search.as_ref().and_then(|s| deciding(&s.confirmations));
            if let Some(s) = &l.search {
                first = first.or(s.confirmations.first());
                pairs.extend(
                    s.confirmations
                        .iter()
                        .filter_map(confirmed_pair(Some(l.verdict.layer))),
                );
            }
            layers.push(verdict_layer(&l.verdict, decided));
        }
        let meaning = match r.verdict {
            Verdict::Violation => format!(
                "violation found in {}: see each layer's answer; a program keeping its claim is flagged with probability at most β = {}",
                layers
                    .iter()
                    .filter(|l| l.verdict == Some(Verdict::Violation))
                    .map(|l| l.title.as_str())
                    .collect::<Vec<_>>()
                    .join(" and "),
                readable(beta_total)
            ),
            Verdict::NoViolation => {
                let mut w = verdict_sentence(
                    Verdict::NoViolation,
                    beta_total,
                    "the pairs confirmed in each layer",
                );
                if let Some(e) = r.effort.as_ref().filter(|e| e.cut_short) {
                    w += &format!(
                        ". The search was cut short, so it looked less hard than planned: {}",
                        e.describe()
                    );
                }
                w
            }
        };
        Self {
            schema_version: RECORD_SCHEMA_VERSION,
            tool_version: tool_version(),
            mode: Mode::Layered,
            target: first.map(target_of).unwrap_or_else(unknown_target),
            claim: first.map(claim_of),
            neighbors: first.map(|c| c.mechanism.neighboring.to_string()),
            privacy_unit: first.and_then(|c| unit_of(&c.mechanism, true).0),
            setting: first.and_then(|c| unit_of(&c.mechanism, true).1),
            dp_fy_ml: first.and_then(|c| crate::record::result::dp_fy_of(&c.mechanism)),
            seed,
            pairs,
            empirical_epsilon: strongest_epsilon(&layers),
            layers,
            verdict: Some(r.verdict),
            verdict_words: meaning,
            beta: BetaRecord {
                total: beta_total,
                rule: r.beta_rule.clone(),
            },
            timings: Timings {
                wall_time_seconds: None,
                mechanism_calls: Some(r.mechanism_calls),
                releases: Some(r.samples_drawn),
            },
            reproduce: Some(reproduce.to_string()),
            effort: r.effort.clone(),
            section: section("layered", r),
        }
    }
}

impl crate::finders::SearchReport {
    /// What a confirmation's page shows of the search that chose its pair (`failure_probability`:
    /// the run's β).
    pub fn summary(&self, failure_probability: Option<f64>) -> crate::audit::SearchSummary {
        crate::audit::SearchSummary {
            finder: self.finder.clone(),
            trials: self
                .trials
                .iter()
                .map(|t| crate::audit::TrialSummary {
                    index: t.index,
                    sizes: [t.pair.first().len(), t.pair.second().len()],
                    score: t.score,
                })
                .collect(),
            skipped: self
                .skipped
                .iter()
                .map(|t| crate::audit::SkippedSummary {
                    index: t.index,
                    pair: t.pair.short_sides(),
                    error: t.error.clone(),
                })
                .collect(),
            confirmations: self
                .confirmations
                .iter()
                // A confirmation is an audit of a pair, so it always has one.
                .filter_map(|c| {
                    Some(crate::audit::ConfirmationSummary {
                        pair: c.pair.clone()?,
                        verdict: c.verdict,
                        margin: c
                            .bounds
                            .iter()
                            .map(|b| b.value - b.allowed)
                            .fold(f64::NEG_INFINITY, f64::max),
                    })
                })
                .collect(),
            beta_rule: self.beta_rule.clone(),
            failure_probability,
            verdict: self.verdict,
            samples_drawn: self.samples_drawn,
        }
    }
}
