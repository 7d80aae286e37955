//! The report of one audit on one pair or one pair of sample files ([`AuditReport`], the
//! layout of versions 1 and 2 of `audit.json`), with what it names: the mechanism, the search
//! that chose the pair, the files read, a Bayesian audit's draws.

use serde::{Deserialize, Serialize};

use super::bound::{BetaSplit, BoundRecord, EmpiricalEpsilon, Verdict};
use super::layers::{LayerKind, LayerVerdict, in_words, separation_sentence};
use crate::mechanisms::{Dataset, DatasetPair, Neighboring, PrivacyClaim};
use crate::testers::Transform;

/// Version of the JSON report layout. 2: bounds may be on the larger of both directions
/// (`"direction": "larger"`), and an event's `p_lower`/`q_upper` are absent when the
/// hockey-stick tester's conditional test made the bound (its counts are in `contrast`).
pub const SCHEMA_VERSION: u32 = 2;

/// Layout versions [`crate::report::read_report`] reads: version 1 files are version 2 files
/// without the new fields.
pub const READABLE_SCHEMA_VERSIONS: &[u32] = &[1, 2];

/// What was audited.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MechanismInfo {
    /// Mechanism id.
    pub id: String,
    /// The claim tested.
    pub claim: PrivacyClaim,
    /// Where the claim comes from.
    pub claim_source: String,
    /// The neighboring relation.
    pub neighboring: Neighboring,
    /// Catalogue status (`correct`/`buggy`) when the mechanism is a catalogue entry; ground truth
    /// for the reader, never used to decide.
    pub catalogue_status: Option<String>,
    /// Where the mechanism runs (central, local, shuffle); central in reports written before
    /// the field was added.
    #[serde(default)]
    pub setting: crate::mechanisms::DpSetting,
    /// What one neighbouring change is, in words (e.g. "one record of the dataset, added or
    /// removed (add/remove one)"); empty when dp-audit never saw the datasets (releases read
    /// from files) or in reports written before the field was added.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub privacy_unit: String,
    /// What the guarantee covers, in the DP-fy ML guide's terms, as the mechanism, the flags or
    /// a ledger claim state it (absent: not stated, and in reports written before the field).
    #[serde(
        default,
        skip_serializing_if = "crate::mechanisms::accounting::dpfy::DpFyScope::is_empty"
    )]
    pub scope: crate::mechanisms::accounting::dpfy::DpFyScope,
}

/// The result of an audit: the source of truth for every rendering (text, JSON, HTML).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditReport {
    /// Layout version.
    pub schema_version: u32,
    /// dp-audit version.
    pub tool_version: String,
    /// What was audited.
    pub mechanism: MechanismInfo,
    /// The pair the verdict is about; absent when the releases were read from files
    /// (`audit test`), whose datasets dp-audit never saw (see `sample_files`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<DatasetPair>,
    /// Where the releases came from when they were read from files (`audit test`) rather than
    /// drawn from a mechanism.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_files: Option<SampleFiles>,
    /// Testers used.
    pub testers: Vec<String>,
    /// Testers `--tester all` left out because they cannot test this claim, each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_testers: Vec<String>,
    /// The seed.
    pub seed: u64,
    /// Releases per side.
    pub samples_per_side: usize,
    /// Calls of `Mechanism::sample` (chunks of at most 4096 releases).
    pub mechanism_calls: u64,
    /// β and its split.
    pub beta: BetaSplit,
    /// Every bound with what the claim allows.
    pub bounds: Vec<BoundRecord>,
    /// The verdict.
    pub verdict: Verdict,
    /// Lower bound on the true ε at the claim's δ (pure and approximate claims).
    pub empirical_epsilon: Option<EmpiricalEpsilon>,
    /// The fixed post-processing applied to every release before the testers, when the caller
    /// audited through one (see [`crate::testers::transforms`]: bounds on transformed releases
    /// are lower bounds on the original divergences). Absent in JSON when none, so older reports
    /// load unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_transform: Option<Transform>,
    /// Wall-clock seconds; left out of the deterministic JSON printed by `--json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_seconds: Option<f64>,
    /// The command that re-runs exactly this run (the `audit` command line as given, with a time
    /// budget replaced by the trial count it allowed), when the report came from the CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
    /// The dataset search this audit confirmed a pair of, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<SearchSummary>,
    /// The data distribution and draws of a Bayesian DP audit ([`crate::audit::bayesian`]), when the
    /// claim was `bdp:` (then `pair` is absent: every draw of x' makes its own pair).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bayesian: Option<BayesianInfo>,
    /// Dimension of the releases before `output_transform` (recorded by layered runs, to name
    /// the features the testers saw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_dim: Option<usize>,
    /// Both layers' answers (mechanism and floating-point, see [`crate::record::layers`]) when the run
    /// was layered; this report is then the confirmation that decided one of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layers: Option<Vec<crate::record::layers::LayerVerdict>>,
    /// How hard the search that chose this pair looked (a program's search under a time
    /// budget), as the run's record states it: the page shows it ("how hard it looked").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<crate::record::effort::SearchEffort>,
}

/// What a report records of the search behind it: the finder, every trial's score, and every
/// confirmed pair with its verdict (the page shows the last confirmation in full).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchSummary {
    /// Finder name.
    pub finder: String,
    /// Exploratory trials scored (search phase; no statistical claim).
    pub trials: Vec<TrialSummary>,
    /// Proposed pairs the program failed on (a failure status, a time-out or a non-finite
    /// output): skipped, not scored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedSummary>,
    /// Every confirming audit, in order: the pair, the verdict and the largest margin.
    pub confirmations: Vec<ConfirmationSummary>,
    /// The β rule of the search (how β was split over the confirm slots).
    pub beta_rule: String,
    /// β of the whole run (absent in reports written before the result record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_probability: Option<f64>,
    /// The run's verdict (a violation if any confirmation found one).
    pub verdict: Verdict,
    /// Releases drawn in both phases.
    pub samples_drawn: u64,
}

/// One exploratory trial, as the report records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrialSummary {
    /// Trial index.
    pub index: usize,
    /// Records in D and D'.
    pub sizes: [usize; 2],
    /// Point estimate of (divergence − allowed).
    pub score: f64,
}

/// A proposed pair the program failed on, as the report records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkippedSummary {
    /// Trial index.
    pub index: usize,
    /// D and D', shortened.
    pub pair: [String; 2],
    /// The failure (exit status, time-out or non-finite output), the request and the
    /// program's stderr.
    pub error: String,
}

/// One confirming audit, as the report records it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfirmationSummary {
    /// The pair confirmed.
    pub pair: DatasetPair,
    /// Its verdict.
    pub verdict: Verdict,
    /// Largest (lower bound − allowed) over its bounds.
    pub margin: f64,
}

/// Where the releases of an [`AuditReport`] came from when they were read from files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleFiles {
    /// The first side's file(s), as given (shards joined by " + ").
    pub a: String,
    /// Releases read on the first side.
    pub samples_a: usize,
    /// The second side's file(s).
    pub b: String,
    /// Releases read on the second side.
    pub samples_b: usize,
}

impl SampleTestReport {
    /// The same result in the layout of a run's report (for `audit.json` and its page): no
    /// mechanism and no pair, the files instead; `samples_per_side` is the smaller side.
    pub fn to_audit_report(&self) -> AuditReport {
        AuditReport {
            schema_version: self.schema_version,
            tool_version: self.tool_version.clone(),
            mechanism: MechanismInfo {
                id: format!("releases from {} and {}", self.source_a, self.source_b),
                claim: self.claim,
                claim_source: "given on the command line (--claim)".into(),
                neighboring: Neighboring::AddRemove,
                catalogue_status: None,
                setting: Default::default(),
                privacy_unit: String::new(),
                scope: Default::default(),
            },
            pair: None,
            sample_files: Some(SampleFiles {
                a: self.source_a.clone(),
                samples_a: self.samples_a,
                b: self.source_b.clone(),
                samples_b: self.samples_b,
            }),
            testers: self.testers.clone(),
            skipped_testers: self.skipped_testers.clone(),
            seed: self.seed,
            samples_per_side: self.samples_a.min(self.samples_b),
            mechanism_calls: 0,
            beta: self.beta.clone(),
            bounds: self.bounds.clone(),
            verdict: self.verdict,
            empirical_epsilon: self.empirical_epsilon.clone(),
            output_transform: self.output_transform,
            wall_time_seconds: None,
            reproduce: None,
            search: None,
            bayesian: None,
            release_dim: None,
            layers: None,
            effort: None,
        }
    }
}

/// The result of [`crate::audit::audit_samples`]: a claim tested on samples drawn elsewhere.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleTestReport {
    /// Version of this JSON layout.
    pub schema_version: u32,
    /// dp-audit version.
    pub tool_version: String,
    /// The claim tested.
    pub claim: PrivacyClaim,
    /// Where the first side's samples came from (e.g. a file name).
    pub source_a: String,
    /// Where the second side's samples came from.
    pub source_b: String,
    /// Testers used.
    pub testers: Vec<String>,
    /// Testers `--tester all` left out because they cannot test this claim, each with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_testers: Vec<String>,
    /// Seed of the testers' randomness.
    pub seed: u64,
    /// Releases on the first side.
    pub samples_a: usize,
    /// Releases on the second side.
    pub samples_b: usize,
    /// β and its split.
    pub beta: BetaSplit,
    /// Every bound.
    pub bounds: Vec<BoundRecord>,
    /// The verdict.
    pub verdict: Verdict,
    /// Lower confidence bound on the true ε at the claim's δ.
    pub empirical_epsilon: Option<EmpiricalEpsilon>,
    /// The fixed post-processing applied to both sides' releases before the testers, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_transform: Option<Transform>,
}

/// What a report records of a Bayesian audit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BayesianInfo {
    /// Where μ came from (the data file as given).
    pub data_source: String,
    /// Records in the file (μ is uniform over them).
    pub records: usize,
    /// Distinct records among them.
    pub distinct_records: usize,
    /// The fixed rest of the dataset, D.
    pub base: Dataset,
    /// x' draws (= releases) per side.
    pub draws_per_side: usize,
    /// Distinct records the P̃ side drew.
    pub distinct_drawn: usize,
    /// The features each joint row carries.
    pub features: String,
    /// The definition the claim was tested as (Triastcyn & Faltings' Definition 1, strong BDP,
    /// or Definition 2, weak BDP); empty in reports from before the choice existed (then
    /// Definition 1).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub definition: String,
    /// True when the rest of the dataset was drawn from μ too, fresh for every release
    /// (`--draw-dataset`; then `base` only gives its size).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dataset_drawn: bool,
    /// Every distinct x' drawn, with its draws on each side (the records the mechanism, or the
    /// exec program, was sent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drawn: Vec<DrawnRecord>,
    /// With `--group K` (K > 1): the per-record claim and the K-record claim it implies, which
    /// was tested (Triastcyn & Faltings 2020, Proposition 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<GroupInfo>,
}

/// The group of a Bayesian audit with `--group K`: the user's per-record claim (ε, δ) and the
/// K-record claim (Kε, K·e^{(K−1)ε}·δ) it implies by Proposition 4, the claim the bound tests
/// (a violation of it refutes the per-record claim).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupInfo {
    /// K, the records x'_1..x'_K drawn i.i.d. from μ that differ.
    pub records: usize,
    /// The per-record ε_μ stated.
    pub per_record_epsilon: f64,
    /// The per-record δ_μ stated.
    pub per_record_delta: f64,
    /// K·ε_μ (rounded up): the ε of the claim tested.
    pub epsilon: f64,
    /// K·e^{(K−1)ε_μ}·δ_μ (rounded up): the δ of the claim tested.
    pub delta: f64,
}

/// A record x' a Bayesian audit drew, and how often.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DrawnRecord {
    /// The record.
    pub record: Vec<f64>,
    /// Draws on the first side (Q̃: paired with a release of M(D)).
    pub first: usize,
    /// Draws on the second side (P̃: the release drawn on D with x').
    pub second: usize,
}

impl AuditReport {
    /// The release dimension before the output transform (recorded by the layered runs in
    /// `release_dim`; 1 when absent), to name the features the testers saw.
    pub fn output_dim_before_transform(&self) -> usize {
        self.release_dim.unwrap_or(1)
    }

    /// What a Bayesian audit of a group of K records (`--group K`) tested and what its verdict
    /// means for the per-record claim, in one sentence (`None` without a group).
    pub fn group_sentence(&self) -> Option<String> {
        let g = self.bayesian.as_ref()?.group.as_ref()?;
        let k = g.records;
        let per = format!(
            "(ε = {}, δ = {})",
            crate::mechanisms::math::readable(g.per_record_epsilon),
            crate::mechanisms::math::readable(g.per_record_delta)
        );
        let implied = format!(
            "(Kε = {}, K·e^((K−1)ε)·δ = {})",
            crate::mechanisms::math::readable(g.epsilon),
            crate::mechanisms::math::readable(g.delta)
        );
        Some(match self.verdict {
            Verdict::Violation => format!(
                "group of K = {k} records: the per-record claim {per} implies the {k}-record claim {implied} (Triastcyn & Faltings 2020, Proposition 4), which was tested and is violated; so the per-record claim is refuted"
            ),
            Verdict::NoViolation => format!(
                "group of K = {k} records: the per-record claim {per} implies the {k}-record claim {implied} (Triastcyn & Faltings 2020, Proposition 4), which was tested; nothing was found against it, which says nothing more about the per-record claim"
            ),
        })
    }
}

impl LayerVerdict {
    /// The answer of a layer that ran, from its confirming audits (`names`: the features its
    /// testers saw, [`Transform::feature_names`]); `other_violates`: the mechanism layer also
    /// found a violation (changes what a floating-point violation means).
    pub fn from_confirmations(
        layer: LayerKind,
        beta: f64,
        confirmations: &[AuditReport],
        other_violates: bool,
    ) -> Self {
        let verdict = if confirmations
            .iter()
            .any(|c| c.verdict == Verdict::Violation)
        {
            Verdict::Violation
        } else {
            Verdict::NoViolation
        };
        let empirical_epsilon = confirmations
            .iter()
            .filter_map(|c| c.empirical_epsilon.clone())
            .max_by(|a, b| a.lower_bound.total_cmp(&b.lower_bound));
        // The bound that decided: the violating one with the largest margin, else the bound
        // closest to its allowance.
        let strongest = confirmations
            .iter()
            .flat_map(|c| c.bounds.iter().map(move |b| (c, b)))
            .max_by(|(_, a), (_, b)| {
                (a.violation, a.value - a.allowed)
                    .partial_cmp(&(b.violation, b.value - b.allowed))
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
        let (evidence, separation) = match strongest {
            Some((c, b)) => (
                b.event.as_ref().map(|e| {
                    let names = c
                        .output_transform
                        .unwrap_or(layer.transform())
                        .feature_names(c.output_dim_before_transform());
                    in_words(&e.description, &names)
                }),
                separation_sentence(b),
            ),
            None => (None, None),
        };
        Self::from_verdict(
            layer,
            beta,
            verdict,
            empirical_epsilon,
            evidence,
            separation,
            other_violates,
            confirmations.len(),
        )
    }
}
