//! The one result record: what every kind of audit hands back, in one layout.
//!
//! Every mode (a fixed pair, a dataset search, the two-layer run of a program, the sequential
//! test, a Bayesian DP audit, a test of release files, the one-run audit of a training run, a
//! sweep, a detection table) fills the same [`ResultRecord`]: the target, the claim, the
//! neighbouring relation, the seed, the pairs tried, per layer its verdict and its bounds with
//! their events in words, the run's verdict, the β split, the ε estimate with the attack-success
//! bound it implies, timings and the Reproduce line. What only one mode has (a search's trials, a
//! wealth trajectory, a sweep's points) is its [`Section`]: the mode's full result as data, in
//! the layout its Rust type documents, tagged with its kind.
//!
//! `--json` prints this record and every run directory's `audit.json` stores it (with the wall
//! time, which `--json` leaves out so that a seed gives the same bytes). The layout is
//! versioned by [`RECORD_SCHEMA_VERSION`] and described by the JSON Schema
//! `docs/schema/result-record.schema.json` (see `docs/json.md`); `tests/json_schema.rs` checks
//! every mode's JSON against it. The section's payload keeps its own `schema_version` field
//! where its type has one (the layout of the payload alone, unchanged from version 2).
//!
//! [`crate::report`] renders records: each mode's text ([`crate::report::text`]), the run
//! directory's page ([`crate::report::write_run_report`] and the modes' writers), and
//! `audit report`, which re-renders any mode's saved record ([`crate::report::rerender`]) after
//! checking it against itself (its summary against its section, flags against values, values
//! against their stored counts).

use serde::{Deserialize, Serialize};

use super::audit_report::AuditReport;
pub(crate) use super::bound::percent;
use super::bound::{BoundRecord, Direction, EmpiricalEpsilon, Verdict};
pub use super::bound::{attack_sentence, attack_success_bound};
use super::layers::{LayerKind, LayerVerdict, in_words};
use crate::mechanisms::DatasetPair;
use crate::mechanisms::math::readable;

/// Version of the record's layout. 3: the first version of the one record (versions 1 and 2
/// were the run report alone, [`AuditReport`], which [`crate::report::read_report`] still reads).
pub const RECORD_SCHEMA_VERSION: u32 = 3;

/// What kind of audit made the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// One pair of datasets, a fixed sample size (`audit run --mechanism ID`, the library's
    /// `audit_pair`).
    FixedPair,
    /// A dataset search and the confirmation of its best pairs (`--finder`).
    Search,
    /// The two layers of a program, mechanism and floating-point, each with its own search and
    /// confirmations (`--exec`, `--check`).
    Layered,
    /// The sequential test on one pair (`--sequential`).
    Sequential,
    /// The sequential test once per layer (`--sequential --check`).
    LayeredSequential,
    /// A Bayesian DP claim, x' drawn from the data distribution (`--claim bdp:…`).
    Bayesian,
    /// Releases read from files (`audit test`).
    SampleTest,
    /// Releases read from files, once per layer (`audit test --check`).
    LayeredSampleTest,
    /// One training run with canaries (`audit one-run`).
    OneRun,
    /// A parameter sweep, many audits (`audit sweep`).
    Sweep,
    /// A detection table over the catalogue, many audits (`audit bench table`).
    Table,
}

impl Mode {
    /// The mode in words, for the summary at the top of a report.
    pub fn words(self) -> &'static str {
        match self {
            Mode::FixedPair => "one pair of datasets",
            Mode::Search => "a search over pairs of datasets, its best pairs confirmed",
            Mode::Layered => {
                "two layers (the algorithm and its floating-point code), each searched and confirmed"
            }
            Mode::Sequential => "a sequential test on one pair (stops when the evidence suffices)",
            Mode::LayeredSequential => "a sequential test per layer",
            Mode::Bayesian => "a Bayesian DP audit (x' drawn from the data distribution)",
            Mode::SampleTest => "releases read from files",
            Mode::LayeredSampleTest => "releases read from files, per layer",
            Mode::OneRun => "one training run with canaries",
            Mode::Sweep => "a sweep of one parameter, many audits",
            Mode::Table => "a detection table over the catalogue, many audits",
        }
    }
}

/// What was audited.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TargetRecord {
    /// The mechanism's id, the program's command line, or the release files.
    pub id: String,
    /// `catalogue`, `program`, `files`, `trainer` or `catalogue-entries` (tables).
    pub kind: String,
    /// Catalogue status (`correct`/`buggy`) of a catalogue entry: ground truth for the reader,
    /// never used to decide.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalogue_status: Option<String>,
}

/// The claim tested.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimRecord {
    /// The claim in command-line form (`pure:1`, `approx:1:1e-5`, `gdp:0.5`, …).
    pub stated: String,
    /// Where it comes from.
    pub source: String,
}

/// One pair of datasets the run tried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairRecord {
    /// `fixed` (the one pair audited), `trial` (scored by a search: exploratory, no statistical
    /// claim), `skipped` (the program failed on it) or `confirmed` (audited with fresh samples).
    pub role: String,
    /// The layer it belongs to, in a layered run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer: Option<LayerKind>,
    /// D, shortened.
    pub d: String,
    /// D', shortened.
    pub d_prime: String,
    /// A trial's exploratory score (point estimate of divergence − allowed; not a bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// A confirmed pair's verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// A confirmed pair's largest (lower bound − allowed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<f64>,
}

/// One confirmed lower bound, with its event in words.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoundWords {
    /// Tester name.
    pub tester: String,
    /// What is bounded, in words (`H_e^1 (hockey-stick)`, `Rényi α = 2`, `ln wealth`, `ε`).
    pub divergence: String,
    /// Which order of the pair, in words.
    pub direction: String,
    /// The lower confidence bound (rounded down).
    pub value: f64,
    /// What the claim allows (rounded up).
    pub allowed: f64,
    /// True iff `value > allowed`.
    pub violation: bool,
    /// Its share of β.
    pub failure_probability: f64,
    /// The inequality and assumptions behind it.
    pub inequality: String,
    /// The event behind it, in words (the features named), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// How the event separates the two sides, in one sentence, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub separation: Option<String>,
}

/// One layer's answer: which view of a release its testers saw, its verdict and its bounds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerRecord {
    /// `releases` (the releases as they are: runs without layers), `mechanism` or
    /// `floating-point`.
    pub layer: String,
    /// Its name in reports.
    pub title: String,
    /// Why it did not run, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// Its share of the run's β.
    pub beta: f64,
    /// Its verdict (`None` when skipped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// What the verdict means, and what to do.
    pub meaning: String,
    /// Its bounds (of the confirmation that decided, in a search).
    pub bounds: Vec<BoundWords>,
    /// The layer's lower bound on ε at the claim's δ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empirical_epsilon: Option<EpsilonRecord>,
}

/// A lower bound on the true ε, and what it means for an attacker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EpsilonRecord {
    /// The δ at which ε is bounded.
    pub delta: f64,
    /// With confidence `confidence`, no (ε', δ) guarantee with ε' below this holds.
    pub lower_bound: f64,
    /// 1 − β.
    pub confidence: f64,
    /// The ε the claim states at `delta`, when it states one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_epsilon: Option<f64>,
    /// [`attack_success_bound`] at the claimed ε: the most a membership attacker (prior 1/2)
    /// can succeed if the claim holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_attack_success: Option<f64>,
    /// [`attack_success_bound`] at `lower_bound`: no (ε, δ) guarantee this mechanism has can
    /// bound the attacker's success below this.
    pub attack_success_floor: f64,
    /// All of it in one sentence.
    pub words: String,
}

/// How β was spent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BetaRecord {
    /// Total β: the chance that the run reports a violation against a target keeping its claim
    /// is at most this.
    pub total: f64,
    /// How it was split, in words.
    pub rule: String,
}

/// What the run cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// Wall-clock seconds (absent from `--json`, so that a seed gives the same bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_seconds: Option<f64>,
    /// Calls of the mechanism (chunks of releases, or program runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism_calls: Option<u64>,
    /// Releases drawn or read, both sides together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub releases: Option<u64>,
}

/// What only one mode has: its full result as data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// What `data` is: `audit` ([`AuditReport`]), `search`
    /// ([`crate::finders::SearchReport`]), `layered` ([`crate::finders::layered::LayeredReport`]),
    /// `sequential` ([`crate::audit::sequential::SequentialReport`]), `layered-sequential`,
    /// `sample-test` ([`crate::record::SampleTestReport`]), `layered-sample-test`, `one-run`
    /// (the trainer's or program's one-run audit), `one-run-page`
    /// ([`crate::report::one_run::OneRunReport`]), `sweep` ([`crate::report::SweepReport`]) or
    /// `table` ([`crate::report::table::TableReport`]).
    pub kind: String,
    /// The payload.
    pub data: serde_json::Value,
}

/// The result of any audit (see the module documentation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    /// Layout version: [`RECORD_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// dp-audit version.
    pub tool_version: String,
    /// What kind of audit.
    pub mode: Mode,
    /// What was audited.
    pub target: TargetRecord,
    /// The claim tested (absent for sweeps and tables, which test one claim per point).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<ClaimRecord>,
    /// The neighbouring relation, in words (absent when the datasets were never seen).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbors: Option<String>,
    /// The privacy unit: what one neighbouring change is, in words (absent when the datasets
    /// were never seen, and in records written before the field was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub privacy_unit: Option<String>,
    /// Where the mechanism runs: `central`, `local` or `shuffle` (absent as `privacy_unit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<String>,
    /// The DP-fy ML guide's report items (seed 002): the claim's privacy tier, and what the
    /// guarantee covers when it was stated (absent when the claim states no ε and nothing was
    /// stated, and in records written before the field was added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dp_fy_ml: Option<DpFyRecord>,
    /// The seed every random choice flowed from.
    pub seed: u64,
    /// The pairs of datasets tried.
    pub pairs: Vec<PairRecord>,
    /// Per layer: its verdict and bounds (one layer, `releases`, for runs without layers;
    /// none for sweeps and tables).
    pub layers: Vec<LayerRecord>,
    /// The run's verdict (absent for sweeps and tables, which make many).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The verdict in words, as the report says it.
    pub verdict_words: String,
    /// How β was spent.
    pub beta: BetaRecord,
    /// The strongest lower bound on the true ε, with the attack-success bound it implies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empirical_epsilon: Option<EpsilonRecord>,
    /// What the run cost.
    pub timings: Timings,
    /// The command that re-runs exactly this run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
    /// How hard a search looked: trials planned and run, pairs scored, every confirmation's
    /// size, and why it stopped (searches of programs; absent in records written before it
    /// was added and for modes without a search).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<super::effort::SearchEffort>,
    /// What only this mode has.
    pub section: Section,
}

impl EpsilonRecord {
    /// The attacker sentence of this bound ([`attack_sentence`]).
    pub fn attack(&self) -> String {
        attack_sentence(self.lower_bound, self.delta, self.claimed_epsilon)
    }

    /// The record of an ε estimate, with the attack-success bounds it implies.
    pub fn from_estimate(e: &EmpiricalEpsilon) -> Self {
        Self::new(e.delta, e.lower_bound, e.confidence, e.claimed_epsilon)
    }

    /// The record of a lower bound `lower_bound` on ε at `delta`, at `confidence`, beside the
    /// claimed ε when the claim states one.
    pub fn new(delta: f64, lower_bound: f64, confidence: f64, claimed: Option<f64>) -> Self {
        let claimed = claimed.filter(|c| c.is_finite() && *c >= 0.0);
        let floor = attack_success_bound(lower_bound.max(0.0), delta);
        let claimed_attack_success = claimed.map(|c| attack_success_bound(c, delta));
        let words = format!(
            "ε ≥ {} at δ = {} ({} % confidence): {}",
            readable(lower_bound),
            readable(delta),
            readable(((confidence * 1e6).floor() / 1e4).max(0.0)),
            attack_sentence(lower_bound, delta, claimed)
        );
        Self {
            delta,
            lower_bound,
            confidence,
            claimed_epsilon: claimed,
            claimed_attack_success,
            attack_success_floor: floor,
            words,
        }
    }
}

fn direction_words(d: Direction, bayesian: bool) -> &'static str {
    match (d, bayesian) {
        (Direction::FirstVsSecond, false) => "M(D) ‖ M(D')",
        (Direction::SecondVsFirst, false) => "M(D') ‖ M(D)",
        (Direction::FirstVsSecond, true) => "(x', M(D)) ‖ (x', M(D ∪ {x'}))",
        (Direction::SecondVsFirst, true) => "(x', M(D ∪ {x'})) ‖ (x', M(D))",
        (Direction::Larger, _) => "the larger of both orders",
    }
}

/// A bound of `r`, its event in words.
fn bound_words(r: &AuditReport, b: &BoundRecord) -> BoundWords {
    let event = b.event.as_ref().map(|e| match r.output_transform {
        Some(t) => in_words(
            &e.description,
            &t.feature_names(r.output_dim_before_transform()),
        ),
        None => e.description.clone(),
    });
    BoundWords {
        tester: b.tester.clone(),
        divergence: b.divergence.to_string(),
        direction: direction_words(b.direction, r.bayesian.is_some()).into(),
        value: b.value,
        allowed: b.allowed,
        violation: b.violation,
        failure_probability: b.failure_probability,
        inequality: b.inequality.clone(),
        event,
        separation: crate::record::layers::separation_sentence(b),
    }
}

pub(crate) fn short_pair(p: &DatasetPair) -> (String, String) {
    let [a, b] = p.short_sides();
    (a, b)
}

pub(crate) fn tool_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

pub(crate) fn target_of(r: &AuditReport) -> TargetRecord {
    let kind = if r.sample_files.is_some() {
        "files"
    } else if r.mechanism.catalogue_status.is_some() {
        "catalogue"
    } else {
        "program"
    };
    TargetRecord {
        id: r.mechanism.id.clone(),
        kind: kind.into(),
        catalogue_status: r.mechanism.catalogue_status.clone(),
    }
}

/// The record's privacy unit and setting for a mechanism whose datasets dp-audit saw (`seen`):
/// `(None, None)` otherwise, or for a unit left empty.
pub(crate) fn unit_of(
    m: &crate::record::MechanismInfo,
    seen: bool,
) -> (Option<String>, Option<String>) {
    if !seen {
        return (None, None);
    }
    (
        (!m.privacy_unit.is_empty()).then(|| m.privacy_unit.clone()),
        Some(m.setting.name().to_string()),
    )
}

/// The DP-fy ML guide's report items of a record (Ponomareva et al. 2023, §5.3, seed 002).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DpFyRecord {
    /// The tier (1 strong, 2 reasonable, 3 weak) of the ε the claim states, by the guide's
    /// thresholds (ε ≤ 1, ε ≤ 10, finite); absent when the claim states no ε at its δ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<u8>,
    /// The tier in the guide's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier_words: Option<String>,
    /// Data accesses covered: `single-training-run` or `training-and-tuning` (absent: not
    /// stated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_accesses: Option<String>,
    /// Outputs covered: `final-model`, `checkpoints` or `every-iterate` (absent: not stated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs_covered: Option<String>,
}

/// The DP-fy ML items of a mechanism's record: the tier of the ε its claim states, and the
/// scope it or the user stated; `None` when there is neither.
pub(crate) fn dp_fy_of(m: &crate::record::MechanismInfo) -> Option<DpFyRecord> {
    use crate::mechanisms::accounting::dpfy::Tier;
    let tier = m.claim.natural_epsilon().and_then(Tier::of);
    if tier.is_none() && m.scope.is_empty() {
        return None;
    }
    Some(DpFyRecord {
        tier: tier.map(Tier::number),
        tier_words: tier.map(|t| t.words().to_string()),
        data_accesses: m.scope.data_accesses.map(|a| a.name().to_string()),
        outputs_covered: m.scope.outputs.map(|o| o.name().to_string()),
    })
}

pub(crate) fn claim_of(r: &AuditReport) -> ClaimRecord {
    ClaimRecord {
        stated: r.mechanism.claim.to_string(),
        source: r.mechanism.claim_source.clone(),
    }
}

pub(crate) fn section<T: Serialize>(kind: &str, data: &T) -> Section {
    Section {
        kind: kind.into(),
        // Every payload is plain data (numbers, strings, vectors): serializing it cannot fail;
        // a failure would show as a null payload, which the schema test rejects.
        data: serde_json::to_value(data).unwrap_or(serde_json::Value::Null),
    }
}

pub(crate) fn verdict_of(violation: bool) -> Verdict {
    if violation {
        Verdict::Violation
    } else {
        Verdict::NoViolation
    }
}

/// The verdict in words, with what it does and does not show.
pub(crate) fn verdict_sentence(v: Verdict, beta: f64, what: &str) -> String {
    match v {
        Verdict::Violation if what.contains("releases drawn") => format!(
            "violation found: the sequential test's wealth reached 1/β, which a target keeping its claim does with probability at most β = {} (Ville's inequality)",
            readable(beta)
        ),
        Verdict::Violation => format!(
            "violation found: a lower confidence bound exceeds what the claim allows; a target keeping its claim is flagged with probability at most β = {}",
            readable(beta)
        ),
        Verdict::NoViolation => format!(
            "no violation found: no bound exceeded what the claim allows; this does not show the claim holds, only that {what} showed nothing"
        ),
    }
}

/// The one layer of a run without layers (or the layer a confirmation was made in).
pub(crate) fn audit_layer(
    r: &AuditReport,
    name: &str,
    title: &str,
    meaning: String,
) -> LayerRecord {
    LayerRecord {
        layer: name.into(),
        title: title.into(),
        skipped: None,
        beta: r.beta.total,
        verdict: Some(r.verdict),
        meaning,
        bounds: r.bounds.iter().map(|b| bound_words(r, b)).collect(),
        empirical_epsilon: r
            .empirical_epsilon
            .as_ref()
            .map(EpsilonRecord::from_estimate),
    }
}

/// A layer of a layered run: its verdict from `v`, its bounds from the confirmation that decided
/// it (`decided`).
pub(crate) fn verdict_layer(v: &LayerVerdict, decided: Option<&AuditReport>) -> LayerRecord {
    LayerRecord {
        layer: match v.layer {
            LayerKind::Mechanism => "mechanism",
            LayerKind::FloatingPoint => "floating-point",
        }
        .into(),
        title: v.title.clone(),
        skipped: v.skipped.clone(),
        beta: v.beta,
        verdict: v.verdict,
        meaning: v.meaning.clone(),
        bounds: decided
            .map(|r| r.bounds.iter().map(|b| bound_words(r, b)).collect())
            .unwrap_or_default(),
        empirical_epsilon: v
            .empirical_epsilon
            .as_ref()
            .map(EpsilonRecord::from_estimate),
    }
}

/// The strongest ε estimate among layers.
pub(crate) fn strongest_epsilon(layers: &[LayerRecord]) -> Option<EpsilonRecord> {
    layers
        .iter()
        .filter_map(|l| l.empirical_epsilon.clone())
        .max_by(|a, b| a.lower_bound.total_cmp(&b.lower_bound))
}

/// The confirmation that decided a search: the violating one, else the last.
pub(crate) fn deciding(confirmations: &[AuditReport]) -> Option<&AuditReport> {
    confirmations
        .iter()
        .find(|c| c.verdict == Verdict::Violation)
        .or(confirmations.last())
}

impl ResultRecord {
    /// The record of one audited pair, with `r` as its section: [`Mode::FixedPair`],
    /// [`Mode::Bayesian`] or [`Mode::SampleTest`] from the report's own fields, or the page of
    /// a search's deciding confirmation ([`Mode::Search`], [`Mode::Layered`]: the run's full
    /// result is in the `--json` record, this is what its run directory keeps).
    pub fn from_audit(r: &AuditReport) -> Self {
        let mode = if r.bayesian.is_some() {
            Mode::Bayesian
        } else if r.layers.is_some() {
            Mode::Layered
        } else if r.search.is_some() {
            Mode::Search
        } else if r.sample_files.is_some() {
            Mode::SampleTest
        } else {
            Mode::FixedPair
        };
        let what = match &r.bayesian {
            Some(b) if b.dataset_drawn => "these draws of D and x' from the data",
            Some(_) => "this D and these draws of x'",
            None => "this pair",
        };
        let mut meaning = verdict_sentence(r.verdict, r.beta.total, what);
        if let Some(g) = r.group_sentence() {
            meaning = format!("{meaning}; {g}");
        }
        let layer = audit_layer(r, "releases", "the releases as they are", meaning.clone());
        let pairs = r
            .pair
            .as_ref()
            .map(|p| {
                let (d, d_prime) = short_pair(p);
                vec![PairRecord {
                    role: "fixed".into(),
                    layer: None,
                    d,
                    d_prime,
                    score: None,
                    verdict: Some(r.verdict),
                    margin: r
                        .bounds
                        .iter()
                        .map(|b| b.value - b.allowed)
                        .reduce(f64::max),
                }]
            })
            .unwrap_or_default();
        let releases = match &r.sample_files {
            Some(f) => (f.samples_a + f.samples_b) as u64,
            None => 2 * r.samples_per_side as u64,
        };
        // The page of a layered run: both layers' answers, this confirmation's bounds under the
        // layer whose view it was made in.
        let (layers, verdict, verdict_words, beta) = match &r.layers {
            Some(ls) => {
                let layers: Vec<LayerRecord> = ls
                    .iter()
                    .map(|v| {
                        verdict_layer(v, (Some(v.transform) == r.output_transform).then_some(r))
                    })
                    .collect();
                let violation = ls.iter().any(|v| v.verdict == Some(Verdict::Violation));
                let beta: f64 = ls.iter().map(|v| v.beta).sum();
                (
                    layers,
                    verdict_of(violation),
                    verdict_sentence(verdict_of(violation), beta, "the pairs confirmed"),
                    BetaRecord {
                        total: beta,
                        rule: format!(
                            "β = {} split over the {} layer(s) (union bound); this confirmation: {}",
                            readable(beta),
                            ls.len(),
                            r.beta.rule
                        ),
                    },
                )
            }
            // A search's page: the run's β and rule, this confirmation's bounds.
            None => match &r.search {
                Some(s) => (
                    vec![layer],
                    r.verdict,
                    meaning,
                    BetaRecord {
                        total: s.failure_probability.unwrap_or(r.beta.total),
                        rule: format!("{}; this confirmation: {}", s.beta_rule, r.beta.rule),
                    },
                ),
                None => (
                    vec![layer],
                    r.verdict,
                    meaning,
                    BetaRecord {
                        total: r.beta.total,
                        rule: r.beta.rule.clone(),
                    },
                ),
            },
        };
        Self {
            schema_version: RECORD_SCHEMA_VERSION,
            tool_version: tool_version(),
            mode,
            target: target_of(r),
            claim: Some(claim_of(r)),
            neighbors: (r.sample_files.is_none()).then(|| r.mechanism.neighboring.to_string()),
            privacy_unit: unit_of(&r.mechanism, r.sample_files.is_none()).0,
            setting: unit_of(&r.mechanism, r.sample_files.is_none()).1,
            dp_fy_ml: dp_fy_of(&r.mechanism),
            seed: r.seed,
            pairs,
            empirical_epsilon: strongest_epsilon(&layers),
            layers,
            verdict: Some(verdict),
            verdict_words,
            beta,
            timings: Timings {
                wall_time_seconds: r.wall_time_seconds,
                mechanism_calls: (r.sample_files.is_none()).then_some(r.mechanism_calls),
                releases: Some(releases),
            },
            reproduce: r.reproduce.clone(),
            effort: r.effort.clone(),
            section: section("audit", r),
        }
    }

    /// The record of releases read from files, tested without layers.
    pub fn from_sample_test(r: &crate::record::SampleTestReport) -> Self {
        let mut rec = Self::from_audit(&r.to_audit_report());
        rec.mode = Mode::SampleTest;
        rec.section = section("sample-test", r);
        rec
    }

    /// The record of releases read from files, tested once per layer (`tests`: each layer's
    /// verdict and its test, absent when the layer was skipped).
    pub fn from_layered_sample_test(
        tests: &[(LayerVerdict, Option<crate::record::SampleTestReport>)],
        section_data: &impl Serialize,
    ) -> Self {
        let pages: Vec<Option<AuditReport>> = tests
            .iter()
            .map(|(_, t)| t.as_ref().map(|t| t.to_audit_report()))
            .collect();
        let layers: Vec<LayerRecord> = tests
            .iter()
            .zip(&pages)
            .map(|((v, _), p)| verdict_layer(v, p.as_ref()))
            .collect();
        let beta: f64 = tests.iter().map(|(v, _)| v.beta).sum();
        let violation = tests
            .iter()
            .any(|(v, _)| v.verdict == Some(Verdict::Violation));
        let first = pages.iter().flatten().next();
        let Some(first) = first else {
            return Self::empty(
                Mode::LayeredSampleTest,
                section("layered-sample-test", section_data),
            );
        };
        let mut rec = Self::from_audit(first);
        rec.mode = Mode::LayeredSampleTest;
        rec.verdict = Some(verdict_of(violation));
        rec.verdict_words = verdict_sentence(verdict_of(violation), beta, "these releases");
        rec.beta = BetaRecord {
            total: beta,
            rule: format!(
                "β = {} split evenly over the {} layer(s) asked for (union bound)",
                readable(beta),
                tests.len()
            ),
        };
        rec.empirical_epsilon = strongest_epsilon(&layers);
        rec.layers = layers;
        rec.section = section("layered-sample-test", section_data);
        rec
    }

    pub(crate) fn empty(mode: Mode, section: Section) -> Self {
        Self {
            schema_version: RECORD_SCHEMA_VERSION,
            tool_version: tool_version(),
            mode,
            target: unknown_target(),
            claim: None,
            neighbors: None,
            privacy_unit: None,
            setting: None,
            dp_fy_ml: None,
            seed: 0,
            pairs: Vec::new(),
            layers: Vec::new(),
            verdict: None,
            verdict_words: "nothing was tested".into(),
            beta: BetaRecord {
                total: 0.0,
                rule: "nothing was tested".into(),
            },
            empirical_epsilon: None,
            timings: Timings::default(),
            reproduce: None,
            effort: None,
            section,
        }
    }

    /// The record without its wall time (the `--json` form: a seed gives the same bytes).
    pub fn without_wall_time(mut self) -> Self {
        self.timings.wall_time_seconds = None;
        self
    }
}

pub(crate) fn unknown_target() -> TargetRecord {
    TargetRecord {
        id: "(no pair was confirmed)".into(),
        kind: "program".into(),
        catalogue_status: None,
    }
}

pub(crate) fn sum_wall(rs: &[AuditReport]) -> Option<f64> {
    rs.iter().map(|r| r.wall_time_seconds).sum()
}

pub(crate) fn confirmed_pair(
    layer: Option<LayerKind>,
) -> impl Fn(&AuditReport) -> Option<PairRecord> {
    move |c| {
        let (d, d_prime) = short_pair(c.pair.as_ref()?);
        Some(PairRecord {
            role: "confirmed".into(),
            layer,
            d,
            d_prime,
            score: None,
            verdict: Some(c.verdict),
            margin: c
                .bounds
                .iter()
                .map(|b| b.value - b.allowed)
                .reduce(f64::max),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attack_success_matches_the_paper_at_delta_zero() {
        // Triastcyn & Faltings eq. 1: 1/(1 + e^−ε).
        for eps in [0.0f64, 0.5, 1.0, 2.0, 8.0] {
            let want = 1.0 / (1.0 + (-eps).exp());
            assert!(
                (attack_success_bound(eps, 0.0) - want).abs() < 1e-12,
                "{eps}"
            );
        }
        assert_eq!(attack_success_bound(0.0, 0.0), 0.5);
        assert!(
            (attack_success_bound(1.0, 1e-5) - (1f64.exp() + 1e-5) / (1.0 + 1f64.exp())).abs()
                < 1e-12
        );
        assert_eq!(attack_success_bound(f64::INFINITY, 0.0), 1.0);
        assert!(attack_success_bound(1e6, 0.0) <= 1.0);
    }

    #[test]
    fn epsilon_words_round_to_the_safe_side() {
        let e = EpsilonRecord::new(0.0, 1.0, 0.95, Some(1.0));
        // 1/(1 + e^−1) = 0.731058…: the floor is said rounded down, the promise rounded up.
        assert!(e.words.contains("73.1 %"), "{}", e.words);
        let e = EpsilonRecord::new(0.0, 0.9, 0.95, Some(2.0));
        assert!(
            e.words.contains("71.0 %") && e.words.contains("88.1 %"),
            "{}",
            e.words
        );
    }
}
