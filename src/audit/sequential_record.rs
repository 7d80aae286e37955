//! The records of the sequential test, on one pair and once per layer: the mode builds its
//! own [`ResultRecord`] (the record types are a leaf of the crate, [`crate::record`]).

use serde::Serialize;

use crate::mechanisms::math::readable;
use crate::record::Verdict;
use crate::record::layers::{LayerKind, LayerVerdict};
use crate::record::result::{
    BetaRecord, BoundWords, ClaimRecord, LayerRecord, Mode, PairRecord, RECORD_SCHEMA_VERSION,
    ResultRecord, Section, TargetRecord, Timings, section, short_pair, tool_version, verdict_of,
    verdict_sentence,
};

impl ResultRecord {
    /// The record of a sequential audit.
    pub fn from_sequential(r: &crate::audit::sequential::SequentialReport) -> Self {
        let layer = sequential_layer(r, None);
        Self::sequential_record(
            Mode::Sequential,
            r,
            vec![layer],
            r.verdict,
            r.failure_probability,
            format!(
                "all of β = {} on one test martingale (Ville's inequality)",
                readable(r.failure_probability)
            ),
            section("sequential", r),
        )
    }

    /// The record of the sequential audit run once per layer.
    pub fn from_layered_sequential(
        runs: &[(LayerVerdict, crate::audit::sequential::SequentialReport)],
        section_data: &impl Serialize,
    ) -> Self {
        let beta: f64 = runs.iter().map(|(v, _)| v.beta).sum();
        let layers: Vec<LayerRecord> = runs
            .iter()
            .map(|(v, r)| sequential_layer(r, Some(v)))
            .collect();
        let violation = runs
            .iter()
            .any(|(v, _)| v.verdict == Some(Verdict::Violation));
        let Some((_, first)) = runs.first() else {
            return Self::empty(
                Mode::LayeredSequential,
                section("layered-sequential", section_data),
            );
        };
        let mut rec = Self::sequential_record(
            Mode::LayeredSequential,
            first,
            layers,
            verdict_of(violation),
            beta,
            format!(
                "β = {} split evenly over the {} layer(s) (union bound)",
                readable(beta),
                runs.len()
            ),
            section("layered-sequential", section_data),
        );
        rec.timings.mechanism_calls = Some(runs.iter().map(|(_, r)| r.mechanism_calls).sum());
        rec.timings.releases = Some(
            runs.iter()
                .map(|(_, r)| 2 * r.samples_per_side as u64)
                .sum(),
        );
        rec
    }

    fn sequential_record(
        mode: Mode,
        r: &crate::audit::sequential::SequentialReport,
        layers: Vec<LayerRecord>,
        verdict: Verdict,
        beta: f64,
        rule: String,
        section: Section,
    ) -> Self {
        let pairs = r
            .pair
            .as_ref()
            .map(|p| {
                let (d, d_prime) = short_pair(p);
                PairRecord {
                    role: "fixed".into(),
                    layer: None,
                    d,
                    d_prime,
                    score: None,
                    verdict: Some(verdict),
                    margin: None,
                }
            })
            .into_iter()
            .collect();
        let what = if r.pair.is_some() {
            "this pair, up to the releases drawn"
        } else {
            "these releases, up to the ones read"
        };
        Self {
            schema_version: RECORD_SCHEMA_VERSION,
            tool_version: tool_version(),
            mode,
            target: TargetRecord {
                id: r.mechanism.id.clone(),
                kind: if r.mechanism.catalogue_status.is_some() {
                    "catalogue"
                } else if r.sample_files.is_some() {
                    "files"
                } else {
                    "program"
                }
                .into(),
                catalogue_status: r.mechanism.catalogue_status.clone(),
            },
            claim: Some(ClaimRecord {
                stated: r.mechanism.claim.to_string(),
                source: r.mechanism.claim_source.clone(),
            }),
            neighbors: Some(r.mechanism.neighboring.to_string()),
            privacy_unit: crate::record::result::unit_of(&r.mechanism, r.sample_files.is_none()).0,
            setting: crate::record::result::unit_of(&r.mechanism, r.sample_files.is_none()).1,
            dp_fy_ml: crate::record::result::dp_fy_of(&r.mechanism),
            seed: r.seed,
            pairs,
            layers,
            verdict: Some(verdict),
            verdict_words: verdict_sentence(verdict, beta, what),
            beta: BetaRecord { total: beta, rule },
            empirical_epsilon: None,
            timings: Timings {
                wall_time_seconds: r.wall_time_seconds,
                mechanism_calls: Some(r.mechanism_calls),
                releases: Some(2 * r.samples_per_side as u64),
            },
            reproduce: r.reproduce.clone(),
            effort: None,
            section,
        }
    }
}

/// A sequential run's one bound: the mixture's log wealth against ln(1/β).
fn sequential_layer(
    r: &crate::audit::sequential::SequentialReport,
    v: Option<&LayerVerdict>,
) -> LayerRecord {
    let violation = r.verdict == Verdict::Violation;
    let stop = match r.stopping_time {
        Some(t) => format!("reached at release pair {t}"),
        None => format!("not reached in {} release pairs", r.samples_per_side),
    };
    LayerRecord {
        layer: match v.map(|v| v.layer) {
            Some(LayerKind::Mechanism) => "mechanism",
            Some(LayerKind::FloatingPoint) => "floating-point",
            None => "releases",
        }
        .into(),
        title: v
            .map(|v| v.title.clone())
            .unwrap_or_else(|| "the releases as they are".into()),
        skipped: v.and_then(|v| v.skipped.clone()),
        beta: r.failure_probability,
        verdict: Some(r.verdict),
        meaning: v.map(|v| v.meaning.clone()).unwrap_or_else(|| {
            verdict_sentence(
                r.verdict,
                r.failure_probability,
                "this pair, up to the releases drawn",
            )
        }),
        bounds: vec![BoundWords {
            tester: "sequential hockey-stick test".into(),
            divergence: "ln wealth of the mixture test martingale".into(),
            direction: "both orders (one process per divergence and order)".into(),
            value: r.log_wealth,
            allowed: r.log_threshold,
            violation,
            failure_probability: r.failure_probability,
            inequality: r.inequality.clone(),
            event: r
                .components
                .iter()
                .max_by(|a, b| a.log_wealth.total_cmp(&b.log_wealth))
                .and_then(|c| c.last_event.clone()),
            separation: Some(format!("the threshold ln(1/β) was {stop}")),
        }],
        empirical_epsilon: None,
    }
}

/// The section of a sequential test run once per layer (`--sequential --check …`, `audit test
/// --sequential`): each layer's answer and its sequential report.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LayeredSequential {
    /// The layers, in the order run.
    pub layers: Vec<LayeredSequentialLayer>,
    /// Violation if any layer found one.
    pub verdict: Verdict,
}

/// One layer of [`LayeredSequential`].
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LayeredSequentialLayer {
    /// The layer's answer.
    pub verdict: LayerVerdict,
    /// Its sequential test.
    pub sequential: crate::audit::sequential::SequentialReport,
}

impl LayeredSequential {
    /// The one record of these layers (their reports as the section holds them).
    pub fn record(&self) -> ResultRecord {
        let runs: Vec<(LayerVerdict, crate::audit::sequential::SequentialReport)> = self
            .layers
            .iter()
            .map(|l| (l.verdict.clone(), l.sequential.clone()))
            .collect();
        ResultRecord::from_layered_sequential(&runs, self)
    }

    /// The answer of layer `kind` from its sequential test's `verdict`, at its `share` of β
    /// (`mechanism_violates`: the mechanism layer, run first, found a violation, which changes
    /// what a floating-point violation means).
    pub fn layer_verdict(
        kind: LayerKind,
        share: f64,
        verdict: Verdict,
        mechanism_violates: bool,
    ) -> LayerVerdict {
        LayerVerdict::from_verdict(
            kind,
            share,
            verdict,
            None,
            None,
            None,
            kind == LayerKind::FloatingPoint && mechanism_violates,
            1,
        )
    }

    /// The text of `runs`: each layer's sequential report, then the answers side by side, the
    /// β split (`beta` in all) and the verdict.
    pub fn render_text(
        runs: &[(LayerVerdict, crate::audit::sequential::SequentialReport)],
        beta: f64,
    ) -> String {
        let mut s = String::new();
        for (v, r) in runs {
            s += &format!("\n===== layer: {} =====\n", v.title);
            s += &crate::audit::sequential::render_text(r);
        }
        let verdicts: Vec<LayerVerdict> = runs.iter().map(|(v, _)| v.clone()).collect();
        let violation = verdicts
            .iter()
            .any(|v| v.verdict == Some(Verdict::Violation));
        s += "\n===== answers =====\n";
        s += &crate::record::layers::render_text(&verdicts);
        s += &format!(
            "β            {} split evenly over the {} layer(s) (union bound)\nverdict      {}\n",
            readable(beta),
            verdicts.len(),
            verdict_of(violation).words()
        );
        s
    }

    /// The section of `runs` (wall times left out, so that a seed gives the same bytes).
    pub fn new(runs: &[(LayerVerdict, crate::audit::sequential::SequentialReport)]) -> Self {
        let layers: Vec<LayeredSequentialLayer> = runs
            .iter()
            .map(|(v, r)| {
                let mut sequential = r.clone();
                sequential.wall_time_seconds = None;
                LayeredSequentialLayer {
                    verdict: v.clone(),
                    sequential,
                }
            })
            .collect();
        let verdict = if layers
            .iter()
            .any(|l| l.verdict.verdict == Some(Verdict::Violation))
        {
            Verdict::Violation
        } else {
            Verdict::NoViolation
        };
        Self { layers, verdict }
    }
}
