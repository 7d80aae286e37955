//! The records of the modes whose page is drawn here: a one-run audit, a sweep and a
//! detection table. Each builds its own [`ResultRecord`] (the record types are a leaf of the
//! crate, [`crate::record`]).

use serde::Serialize;

use crate::mechanisms::math::readable;
use crate::record::result::{
    BetaRecord, BoundWords, ClaimRecord, EpsilonRecord, LayerRecord, Mode, RECORD_SCHEMA_VERSION,
    ResultRecord, TargetRecord, Timings, section, tool_version, verdict_of, verdict_sentence,
};

impl ResultRecord {
    /// The record of a one-run audit: `page` is what its report page shows, `data` the audit
    /// itself (the trainer's or the program's). The section is the audit with the page beside
    /// its fields (`"page"`), so that `audit report` re-renders the `--json` output.
    pub fn from_one_run(
        page: &crate::report::one_run::OneRunReport,
        data: &impl Serialize,
    ) -> Self {
        let mut rec = Self::one_run_record(page);
        rec.section = section("one-run", data);
        if let (serde_json::Value::Object(fields), Ok(p)) =
            (&mut rec.section.data, serde_json::to_value(page))
        {
            fields.insert("page".into(), p);
        }
        rec
    }

    /// The record of a one-run report page (its section is the page's report).
    pub fn from_one_run_page(page: &crate::report::one_run::OneRunReport) -> Self {
        let mut rec = Self::one_run_record(page);
        rec.section = section("one-run-page", page);
        rec
    }

    fn one_run_record(r: &crate::report::one_run::OneRunReport) -> Self {
        let b = &r.bound;
        let verdict = verdict_of(r.violation);
        let (_, value, allowed) = b.deciding(r.claim_epsilon, r.claim_mu);
        let inequality = b.deciding_inequality(r.claim_mu);
        let divergence = match r.claim_mu {
            Some(_) => "μ (Gaussian DP)",
            None => "ε",
        };
        let claim = match r.claim_mu {
            Some(mu) => format!("gdp:{mu}"),
            None if r.claim_delta > 0.0 => {
                format!("approx:{}:{}", r.claim_epsilon, r.claim_delta)
            }
            None => format!("pure:{}", r.claim_epsilon),
        };
        let eps = EpsilonRecord::new(
            b.delta,
            b.epsilon_estimate(r.claim_mu),
            1.0 - b.failure_probability,
            Some(r.claim_epsilon),
        );
        let meaning = verdict_sentence(verdict, b.failure_probability, "this training run");
        Self {
            schema_version: RECORD_SCHEMA_VERSION,
            tool_version: tool_version(),
            mode: Mode::OneRun,
            target: TargetRecord {
                id: r.target.clone(),
                kind: "trainer".into(),
                catalogue_status: None,
            },
            claim: Some(ClaimRecord {
                stated: claim,
                source: r.claim_source.clone(),
            }),
            neighbors: Some("add-remove of one canary".into()),
            privacy_unit: None,
            setting: None,
            dp_fy_ml: None,
            seed: r.seed,
            pairs: Vec::new(),
            layers: vec![LayerRecord {
                layer: "releases".into(),
                title: r.threat_model.clone(),
                skipped: None,
                beta: b.failure_probability,
                verdict: Some(verdict),
                meaning: meaning.clone(),
                bounds: vec![BoundWords {
                    tester: "one-run guessing game".into(),
                    divergence: divergence.into(),
                    direction: format!("{} canaries, {} included", b.canaries, b.included),
                    value,
                    allowed,
                    violation: r.violation,
                    failure_probability: b.failure_probability,
                    inequality,
                    event: None,
                    separation: None,
                }],
                empirical_epsilon: Some(eps.clone()),
            }],
            verdict: Some(verdict),
            verdict_words: meaning,
            beta: BetaRecord {
                total: b.failure_probability,
                rule: b.beta_split.clone(),
            },
            empirical_epsilon: Some(eps),
            timings: Timings::default(),
            reproduce: r.reproduce.clone(),
            effort: None,
            section: section("one-run-page", r),
        }
    }

    /// The record of a sweep: many audits, no single verdict.
    pub fn from_sweep(r: &crate::report::SweepReport) -> Self {
        let above = r.points_above_beta().count();
        Self {
            schema_version: RECORD_SCHEMA_VERSION,
            tool_version: tool_version(),
            mode: Mode::Sweep,
            target: TargetRecord {
                id: r.mechanism.clone(),
                kind: "catalogue".into(),
                catalogue_status: None,
            },
            claim: None,
            neighbors: None,
            privacy_unit: None,
            setting: None,
            dp_fy_ml: None,
            seed: r.seed,
            pairs: Vec::new(),
            layers: Vec::new(),
            verdict: None,
            verdict_words: format!(
                "no single verdict: {} point(s) of {}, {above} with a detection rate above β = {} per audit (95 % Clopper–Pearson interval)",
                r.points.len(),
                r.parameter,
                readable(r.failure_probability_per_audit)
            ),
            beta: BetaRecord {
                total: r.failure_probability_per_audit,
                rule: "β per audit; every audit of the sweep is a separate test at this β".into(),
            },
            empirical_epsilon: None,
            timings: Timings {
                wall_time_seconds: r.wall_time_seconds,
                mechanism_calls: None,
                releases: Some(2 * r.samples_per_side as u64 * r.repeats * r.points.len() as u64),
            },
            reproduce: r.reproduce.clone(),
            effort: None,
            section: section("sweep", r),
        }
    }

    /// The record of a detection table: many audits, no single verdict.
    pub fn from_table(r: &crate::report::table::TableReport) -> Self {
        Self {
            schema_version: RECORD_SCHEMA_VERSION,
            tool_version: tool_version(),
            mode: Mode::Table,
            target: TargetRecord {
                id: "the catalogue".into(),
                kind: "catalogue-entries".into(),
                catalogue_status: None,
            },
            claim: None,
            neighbors: None,
            privacy_unit: None,
            setting: None,
            dp_fy_ml: None,
            seed: r.seed,
            pairs: Vec::new(),
            layers: Vec::new(),
            verdict: None,
            verdict_words: crate::report::table::table_summary(
                &r.cells,
                r.failure_probability_per_audit,
            ),
            beta: BetaRecord {
                total: r.failure_probability_per_audit,
                rule: "β per audit; every audit of the table is a separate test at this β".into(),
            },
            empirical_epsilon: None,
            timings: Timings {
                wall_time_seconds: r.wall_time_seconds,
                mechanism_calls: None,
                releases: Some(2 * r.samples_per_side as u64 * r.repeats * r.cells.len() as u64),
            },
            reproduce: r.reproduce.clone(),
            effort: None,
            section: section("table", r),
        }
    }
}
