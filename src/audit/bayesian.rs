//! The Bayesian DP audit: tests an (ε_μ, δ_μ)-Bayesian DP claim (`bdp:EPS:DELTA`) black-box,
//! with the data distribution μ given as a file of records.
//!
//! # The claim (Triastcyn & Faltings 2020, Definition 1: strong Bayesian DP)
//! A mechanism M is (ε_μ, δ_μ)-Bayesian differentially private for a data distribution μ if, for
//! the fixed rest of the dataset D and a differing record x' ~ μ (D' = D ∪ {x'} for add-remove
//! neighbors; D with its last record replaced by x' for replace-one),
//! Pr_{x'~μ, w}[L(w, D, D') ≥ ε_μ] ≤ δ_μ, where L is the privacy loss ln p_D(w)/p_{D'}(w) and the
//! probability is over x' **and** the output w; as the paper's privacy cost (its c_t(λ) takes the
//! larger of the two orders) we read it for both orders of the pair: w ~ M(D') with
//! L = ln p_{D'}(w)/p_D(w), and w ~ M(D) with L = ln p_D(w)/p_{D'}(w). It is a *typical-case*
//! promise and weaker than DP: it says nothing about a fixed pair, and a record that μ rarely
//! draws may be exposed. No worst-case tester tests it ([`crate::testers::refuse_bayesian`]).
//!
//! This tail bound on the privacy loss is the paper's Definition 1 (*strong* BDP). Its
//! Definition 2 ((weak) BDP) is an (ε, δ) inequality for every set S of outcomes (events on the
//! output only), and is implied by Definition 1 (the paper's Proposition 1). The joint test below lets its events depend on x' as
//! well as on the output, so it is sound for Definition 1 claims and may be too strict for a
//! Definition 2 claim: it tests Definition 1. `--bdp-definition 2` runs the test of
//! Definition 2 (below, *Definition 2*) on the same draws.
//!
//! # What is identifiable from samples
//! The privacy loss L is a density ratio and is not observed in black-box samples. What is
//! identifiable is a hockey-stick divergence between two sampleable distributions. Write
//! P_{x'} = M(D ∪ {x'}) and Q = M(D) (add-remove; for replace-one Q = M(D) likewise) and define
//! the *joint* distributions on pairs (x', w):
//! - P̃: x' ~ μ, then w ~ P_{x'};
//! - Q̃: x' ~ μ, then w ~ Q, independently of x'.
//!
//! **Inequality used** (proved here). For every ε ≥ 0,
//! H_{e^ε}(P̃ ‖ Q̃) ≤ Pr_{x'~μ, w~P_{x'}}[ln dP_{x'}/dQ (w) ≥ ε] and
//! H_{e^ε}(Q̃ ‖ P̃) ≤ Pr_{x'~μ, w~Q}[ln dQ/dP_{x'} (w) ≥ ε],
//! so an (ε_μ, δ_μ)-BDP mechanism has max(H_{e^{ε_μ}}(P̃ ‖ Q̃), H_{e^{ε_μ}}(Q̃ ‖ P̃)) ≤ δ_μ.
//!
//! *Proof.* Fix x' and let ν dominate P_{x'} and Q with densities p, q; L = ln p/q (= +∞ where
//! q = 0 < p). For any event A, P_{x'}(A) − e^ε Q(A) = ∫_A (p − e^ε q) dν ≤ ∫_{A ∩ {p > e^ε q}}
//! (p − e^ε q) dν ≤ ∫_{{p > e^ε q}} p dν = Pr_{w~P_{x'}}[L > ε] ≤ Pr[L ≥ ε]; taking the supremum
//! over A, H_{e^ε}(P_{x'} ‖ Q) ≤ Pr_{P_{x'}}[L ≥ ε]. A joint event S has sections
//! S_{x'} = {w : (x', w) ∈ S}, and P̃(S) − e^ε Q̃(S) = E_{x'~μ}[P_{x'}(S_{x'}) − e^ε Q(S_{x'})]
//! ≤ E_{x'}[H_{e^ε}(P_{x'} ‖ Q)] ≤ E_{x'} Pr_{P_{x'}}[L ≥ ε] = Pr_{x', w}[L ≥ ε]. The other order
//! is the same argument with the roles of P_{x'} and Q exchanged. ∎
//!
//! (The converse does not hold: H can be far below the tail probability, so the audit can miss a
//! BDP violation, but it never reports one that is not there; the test is one-sided, as every
//! test in this project.)
//!
//! # The test
//! 1. Draw n indices i.i.d. uniformly from the data file's records (μ is the empirical
//!    distribution of the file: each line one record, repeats count), from the seed's own
//!    stream; for each draw x'_j one release w_j ~ M(D ∪ {x'_j}). Releases for the same record
//!    are drawn together (i.i.d., so grouping does not change the joint law) and put back in draw
//!    order. These n pairs (x'_j, w_j) are i.i.d. from P̃.
//! 2. Draw n more indices independently, and n releases of M(D): n i.i.d. pairs from Q̃.
//! 3. Map every pair to the feature row [w, x', w_a·x'_b] (the products let a linear score follow
//!    a likelihood ratio that depends on x', e.g. w·x' − x'²/2 for a Gaussian sum; a fixed map,
//!    so events on features are events on (x', w)).
//! 4. Bound max(H(P̃ ‖ Q̃), H(Q̃ ‖ P̃)) from below with the hockey-stick tester's
//!    [`crate::testers::HockeyStickTester::select_and_bound`] at the full β (one bound: the
//!    event and direction are chosen on its training split, the bound is the exact Poissonized
//!    conditional test on held-out rows; see its `# Guarantee`).
//! 5. Report a violation iff the lower bound exceeds δ_μ.
//!
//! # Definition 2 (weak BDP, events on the output only)
//! The claim: for every measurable set S of outputs,
//! Pr_{x'~μ, w~P_{x'}}[w ∈ S] ≤ e^{ε_μ} Pr_{w~Q}[w ∈ S] + δ_μ, and the other order. Write
//! P̄ = E_{x'~μ} P_{x'} (the output's law when x' is drawn: a mixture); the claim says exactly
//! max(H_{e^{ε_μ}}(P̄ ‖ Q), H_{e^{ε_μ}}(Q ‖ P̄)) ≤ δ_μ (the hockey-stick divergence is the
//! supremum of P̄(S) − e^ε Q(S) over S).
//!
//! **Test.** The same draws as steps 1–2, with the feature map of step 3 replaced by w alone
//! (x' is dropped). The w of the P̃ side are i.i.d. from P̄ (x'_j ~ μ, then w_j ~ P_{x'_j}), and
//! those of the Q̃ side are i.i.d. from Q. Step 4 bounds max(H(P̄ ‖ Q), H(Q ‖ P̄)) from below.
//!
//! *Soundness.* The hockey-stick tester's bound is a level-β lower confidence bound on the
//! divergence between the laws of its two input rows (its `# Guarantee`), here P̄ and Q, which
//! a Definition 2 claim bounds by δ_μ: a violation is reported against a mechanism keeping a
//! Definition 2 claim with probability ≤ β. ∎ (This test is also sound for a Definition 1
//! claim, which implies Definition 2, but is weaker there: H(P̄ ‖ Q) ≤ H(P̃ ‖ Q̃), by data
//! processing, the map (x', w) ↦ w being fixed.)
//!
//! # Drawing the whole dataset (`--draw-dataset`)
//! With this option the rest of the dataset is drawn from μ too: for release j, D_j is
//! |D| records i.i.d. from μ (from the seed's own stream, fresh for every release and side), and
//! P̃ draws (D_j, x'_j, w_j ~ M(D_j with x'_j)), Q̃ draws (D_j, x'_j, w_j ~ M(D_j)), D_j and
//! x'_j independent. The claim tested is then Definition 1 or 2 with the probability over D
//! as well: Pr_{D~μ^|D|, x'~μ, w}[L_D(w) ≥ ε_μ] ≤ δ_μ (Definition 1; L_D the privacy loss of the
//! pair (D, D with x')), or Pr_{D, x', w}[M(D') ∈ S] ≤ e^{ε_μ} Pr_{D, w}[M(D) ∈ S] + δ_μ
//! (Definition 2). This is the paper's setting when the whole dataset is a sample of the
//! population (its §3 takes D fixed; the averaged claim is weaker than one for every D).
//!
//! *Soundness.* The inequality's proof holds with (D, x') in place of x': fix (D, x') and the
//! per-pair bound H_{e^ε}(M(D with x') ‖ M(D)) ≤ Pr[L_D ≥ ε] holds; a joint event on
//! (D, x', w) has sections in w, and averaging over the common law of (D, x') on both sides
//! gives H(P̃_full ‖ Q̃_full) ≤ Pr_{D, x', w}[L_D ≥ ε] (Definition 1). The features are a fixed
//! function of (D, x', w) (they ignore D), so by data processing the laws of the feature rows
//! are at most as far apart, and the tester's level-β bound stays ≤ δ_μ. For Definition 2 the
//! rows are w alone, i.i.d. from E_{D,x'} M(D with x') and E_D M(D), whose hockey-stick
//! divergence the averaged Definition 2 claim bounds directly. ∎
//!
//! # Groups of K records (`--group K`)
//! The user states a per-record claim (ε, δ) (`bdp:EPS:DELTA`); the audit draws K records
//! x' = (x'_1..x'_K) i.i.d. from μ per release and tests the K-record claim it implies by the
//! paper's Proposition 4 (group privacy), (ε_K, δ_K) = (Kε, K·e^{(K−1)ε}·δ), rounded up
//! ([`crate::mechanisms::bayesian_accountant::group_privacy`]). A violation of the group claim
//! therefore refutes the per-record claim; K = 1 is the audit above, draw for draw.
//!
//! *The joint laws.* P̃_K: x' ~ μ^K, then w ~ M(D_K) with D_K = D ∪ {x'_1..x'_K} (add-remove)
//! or D with its last K records replaced by x'_1..x'_K (replace-one); Q̃_K: x' ~ μ^K, then
//! w ~ M(D) independently. Steps 1–2 draw n K-tuples per side (the nK indices from the side's
//! own stream, so K = 1 draws what the single-record audit draws); releases for the same K-tuple
//! are drawn together on a stream of their own, as for one record.
//!
//! **Inequality used (the chain D_0..D_K).** If M is (ε, δ)-BDP per record (Definition 1, for
//! every fixed rest of the dataset, as the paper's definition states), then for every ε ≥ 0
//! H_{e^{Kε}}(P̃_K ‖ Q̃_K) ≤ δ·(1 + e^ε + … + e^{(K−1)ε}) ≤ K·e^{(K−1)ε}·δ, and the same for
//! H_{e^{Kε}}(Q̃_K ‖ P̃_K).
//!
//! *Proof.* Let D_i be D with x'_1..x'_i (added, or the i-th of the last K records replaced) and
//! R_i the law of (x', w ~ M(D_i)), x' ~ μ^K; R_K = P̃_K and R_0 = Q̃_K. Fix a joint event S and
//! i. Given the other records x'_{−i}, the dataset D_{i−1} is fixed and x'_i ~ μ is independent
//! of it; the section S' = {(x'_i, w) : (x', w) ∈ S} is an event on (x'_i, w), so by the
//! inequality above (with the fixed rest D_{i−1} and the pair (D_{i−1}, D_i), which differ in
//! x'_i alone) Pr[S | x'_{−i}] under R_i ≤ e^ε·Pr[S | x'_{−i}] under R_{i−1} + δ, and the same
//! with R_i and R_{i−1} exchanged (the claim's other order). Averaging over x'_{−i}:
//! R_i(S) ≤ e^ε R_{i−1}(S) + δ. Chaining from i = K down to 1,
//! R_K(S) ≤ e^{Kε} R_0(S) + δ Σ_{i<K} e^{iε}, and each of the K terms is ≤ e^{(K−1)ε}. The other
//! order chains the exchanged inequalities from i = 1 up to K. ∎ (The proposition's factor
//! K·e^{(K−1)ε} is what the paper states and what is tested; the chain's geometric sum is
//! smaller, so the tested claim is the weaker one, the safe side.) Under Definition 2 the same
//! chain with events on the output only (sections in w, averaged over x'_{<i}) bounds
//! H_{e^{Kε}}(P̄_K ‖ Q) for the mixture P̄_K = E_{x'~μ^K} M(D_K), which is what the
//! Definition 2 test bounds. With `--draw-dataset` the chain needs the per-record claim on
//! average over the dataset at every size it passes (add-remove: |D| to |D| + K − 1 records, all
//! i.i.d. from μ; replace-one: |D|), which a claim stated for datasets of any size gives.
//!
//! *Features.* A row is [w, s, w_a·s_b] with s = x'_1 + … + x'_K (one record's dimension): a
//! fixed map of (x', w), so events on features are events on (x', w) and the data-processing
//! step is unchanged. The sum is what a release of a sum or a mean depends on (for the Gaussian
//! sum the privacy loss of the K records is linear in w·s and s²), and keeps the row's width
//! independent of K. Under Definition 2 the row is w alone, as for one record.
//!
//! *Guarantee.* With probability ≥ 1 − β the bound is at most max(H_{e^{ε_K}}(P̃_K ‖ Q̃_K),
//! H_{e^{ε_K}}(Q̃_K ‖ P̃_K)) ≤ δ_K for a mechanism keeping the per-record claim: a violation is
//! reported against it with probability ≤ β.
//!
//! # Guarantee
//! With probability at least 1 − β over the draws of x' and of the releases, the reported lower
//! bound is at most max(H_{e^{ε_μ}}(P̃ ‖ Q̃), H_{e^{ε_μ}}(Q̃ ‖ P̃)), hence, by the inequality above,
//! at most δ_μ for a mechanism that is (ε_μ, δ_μ)-BDP for the file's empirical distribution on
//! this D: a violation is reported against such a mechanism with probability ≤ β. β is spent
//! once (a single bound), so no split is needed.
//!
//! # Assumptions
//! μ is the uniform distribution over the file's lines (a population μ is represented by the
//! file; the verdict is about the file, as the paper's accountant is about the data it was fed).
//! Releases are i.i.d. given the dataset and independent across calls (ChaCha streams derived
//! from the seed; an exec program must honour the request's seed, see docs/exec-protocol.md).
//! D is fixed (the catalogue witness's smaller dataset; for an exec program `--dataset-size`
//! records at the middle of `--record-range`), unless `--draw-dataset`.
//!
//! # Citations
//! A. Triastcyn and B. Faltings, "Bayesian Differential Privacy for Machine Learning",
//! ICML 2020 (arXiv:1901.09697), Definition 1 and §4. The hockey-stick bound and its exact
//! conditional test: [`crate::testers::hockey_stick`].

use std::path::Path;
use std::time::Instant;

use rand::RngExt;

use crate::error::{Error, Result};
use crate::mechanisms::math::readable;
use crate::mechanisms::{Dataset, Mechanism, Neighboring, PrivacyClaim, RecordDomain, Samples};
use crate::record::{
    AuditReport, BayesianInfo, BetaSplit, BoundRecord, Direction, DrawnRecord, EmpiricalEpsilon,
    GroupInfo, MechanismInfo, SCHEMA_VERSION, Verdict,
};
use crate::rng::{Seed, Side, Stream, chunk_len, sample_parallel};
use crate::testers::{Divergence, HockeyStickTester, PropertyTester, violates};

/// Stream tag of the x' draws (index 0: the P̃ side, 1: the Q̃ side).
const DRAW_TAG: u64 = 0xBD9_0001;
/// Stream tag of the datasets drawn from μ with `--draw-dataset` (index 2j + side).
const DATASET_TAG: u64 = 0xBD9_0002;
/// Confirm-stream trial indices of the Bayesian audit's releases start here (far above the
/// trials of ordinary confirmations).
const TRIAL_BASE: u64 = 1 << 48;
/// With `--draw-dataset`, release j is drawn on the confirm stream of trial this + j (above
/// the per-record trials TRIAL_BASE + i of a fixed D).
const DRAWN_DATASET_TRIAL_BASE: u64 = 1 << 49;
/// With `--group K` (K > 1) and a fixed D, the releases of P̃ for one K-tuple are drawn on the
/// confirm stream of trial this + the index of the tuple's first draw (above the trials
/// TRIAL_BASE + i of single records and DRAWN_DATASET_TRIAL_BASE + j of drawn datasets); for a
/// program that reads many datasets per request, chunk c of the releases on trial this + c.
const GROUP_TRIAL_BASE: u64 = 1 << 50;
/// Most product features w_a·x'_b added to a joint row.
const MAX_PRODUCTS: usize = 64;

/// Name of the test in reports.
pub const TESTER_NAME: &str = "bayesian-hockey-stick";

/// Reads μ from `path`: one record per line, a JSON number (`0.3`) or array (`[0.3, 1]`); empty
/// and `#` lines are skipped. Each record is checked against `domain` (dimension, range,
/// integrality); errors name the file, the line and the value.
pub fn read_data(path: &Path, domain: &RecordDomain) -> Result<Dataset> {
    let text = crate::sources::text::read_text(path)
        .map_err(|e| Error::InvalidConfig(format!("--data {}: {e}", path.display())))?;
    parse_data(&text, &path.display().to_string(), domain)
}

/// [`read_data`] on text already read; `source` names it in errors.
pub fn parse_data(text: &str, source: &str, domain: &RecordDomain) -> Result<Dataset> {
    let mut rows: Vec<Vec<f64>> = Vec::new();
    for (i, line) in crate::sources::text::strip_bom(text).lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let at =
            |what: String| Error::InvalidConfig(format!("--data {source} line {}: {what}", i + 1));
        // serde_json rejects NaN and infinities, so a bad number is named here.
        let v: serde_json::Value = serde_json::from_str(l).map_err(|_| {
            at(format!(
                "{l:?} is not a record; allowed: a finite JSON number or an array of {} finite numbers",
                domain.dim
            ))
        })?;
        let rec: Vec<f64> = match &v {
            serde_json::Value::Number(n) => vec![
                n.as_f64()
                    .ok_or_else(|| at(format!("{n} is not a finite number")))?,
            ],
            serde_json::Value::Array(a) => a
                .iter()
                .map(|x| {
                    x.as_f64()
                        .ok_or_else(|| at(format!("{x} in {l} is not a number")))
                })
                .collect::<Result<Vec<f64>>>()?,
            other => {
                return Err(at(format!(
                    "{other} is not a record; allowed: a JSON number or an array of numbers"
                )));
            }
        };
        if rec.is_empty() {
            return Err(at(format!(
                "empty record; allowed: {} number(s)",
                domain.dim
            )));
        }
        if rec.len() != domain.dim {
            return Err(at(format!(
                "record of dimension {}; the mechanism takes records of dimension {}",
                rec.len(),
                domain.dim
            )));
        }
        for (j, &x) in rec.iter().enumerate() {
            if !x.is_finite() {
                return Err(at(format!(
                    "coordinate {j} is {x}; allowed: finite numbers"
                )));
            }
            if x < domain.lower || x > domain.upper {
                return Err(at(format!(
                    "coordinate {j} = {x} is outside the mechanism's record range [{}, {}]",
                    domain.lower, domain.upper
                )));
            }
            if domain.integer && x.fract() != 0.0 {
                return Err(at(format!(
                    "coordinate {j} = {x} is not an integer; the mechanism takes integer records"
                )));
            }
        }
        rows.push(rec);
    }
    if rows.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "--data {source}: no records; allowed: one record per line (a number or an array)"
        )));
    }
    Ok(Dataset::vectors(domain.dim, &rows)?)
}

/// Which of Triastcyn & Faltings' definitions a `bdp:` claim is tested as (`--bdp-definition`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Definition {
    /// Definition 1 (strong BDP): Pr_{x',w}[L ≥ ε_μ] ≤ δ_μ; the joint test, events on (x', w).
    #[default]
    Strong,
    /// Definition 2 (weak BDP): Pr[M(D') ∈ S] ≤ e^{ε_μ} Pr[M(D) ∈ S] + δ_μ for every set S of
    /// outputs, the probability over x' ~ μ and the output; events on the output only.
    Weak,
}

impl Definition {
    /// The label reports print.
    pub fn label(self) -> &'static str {
        match self {
            Definition::Strong => {
                "Definition 1 (strong BDP): Pr_{x',w}[L ≥ ε_μ] ≤ δ_μ, events on (x', w)"
            }
            Definition::Weak => {
                "Definition 2 (weak BDP, events on the output only): Pr_{x',w}[M(D') ∈ S] ≤ e^ε_μ Pr[M(D) ∈ S] + δ_μ and the other order"
            }
        }
    }

    /// Parses `--bdp-definition`: `1` or `strong`, `2` or `weak`.
    pub fn parse_flag(s: &str) -> Result<Self> {
        match s.trim() {
            "1" | "strong" => Ok(Definition::Strong),
            "2" | "weak" => Ok(Definition::Weak),
            other => Err(Error::InvalidConfig(format!(
                "--bdp-definition {other}; allowed: 1 (strong BDP, Pr[L ≥ ε] ≤ δ over x' and the output) or 2 (weak BDP, an (ε, δ) inequality for events on the output only)"
            ))),
        }
    }
}

/// Settings of a Bayesian audit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BayesianConfig {
    /// The run's seed.
    pub seed: u64,
    /// x' draws, hence releases, per side (n).
    pub draws_per_side: usize,
    /// β.
    pub failure_probability: f64,
    /// The definition the claim is tested as.
    pub definition: Definition,
    /// Draw the rest of the dataset from μ too, fresh for every release (`--draw-dataset`),
    /// with as many records as the fixed rest `base`.
    pub draw_dataset: bool,
    /// K, the records x'_1..x'_K drawn i.i.d. from μ that differ (`--group K`, default 1): the
    /// per-record claim (ε, δ) is tested through the K-record claim (Kε, K·e^{(K−1)ε}·δ) it
    /// implies (Proposition 4; module docs, *Groups of K records*).
    pub group: usize,
}

impl BayesianConfig {
    /// Definition 1 on the fixed rest of the dataset.
    pub fn new(seed: u64, draws_per_side: usize, failure_probability: f64) -> Self {
        Self {
            seed,
            draws_per_side,
            failure_probability,
            definition: Definition::Strong,
            draw_dataset: false,
            group: 1,
        }
    }
}

/// The dataset differing from `base` in x' = `record`.
fn neighbor(base: &Dataset, record: &[f64], relation: Neighboring) -> Result<Dataset> {
    Ok(match relation {
        Neighboring::AddRemove => base.with_record(record)?,
        Neighboring::ReplaceOne => base.with_replaced(base.len() - 1, record)?,
        Neighboring::ZeroOut => {
            return Err(Error::InvalidConfig(
                "a Bayesian DP audit draws x' next to a fixed rest of the dataset under add-remove or replace-one; zero-out (x' against the null record) is not supported".into(),
            ));
        }
    })
}

/// The dataset differing from `base` in the K = `records.len()` records x'_1..x'_K: all added
/// (add-remove) or the last K records replaced, the i-th of them by x'_i (replace-one). K = 1 is
/// [`neighbor`].
fn neighbor_group(base: &Dataset, records: &[Vec<f64>], relation: Neighboring) -> Result<Dataset> {
    if let [one] = records {
        return neighbor(base, one, relation);
    }
    let k = records.len();
    match relation {
        Neighboring::AddRemove => {
            let mut d = base.clone();
            for r in records {
                d = d.with_record(r)?;
            }
            Ok(d)
        }
        Neighboring::ReplaceOne => {
            if base.len() < k {
                return Err(Error::InvalidConfig(format!(
                    "--group {k} under replace-one replaces the last {k} records of D, which has {}; allowed: a group of at most {} records",
                    base.len(),
                    base.len()
                )));
            }
            let mut d = base.clone();
            for (i, r) in records.iter().enumerate() {
                d = d.with_replaced(base.len() - k + i, r)?;
            }
            Ok(d)
        }
        Neighboring::ZeroOut => neighbor(base, &records[0], relation),
    }
}

/// Which joint law a side of the Bayesian test draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JointSide {
    /// Q̃: x' ~ μ, w ~ M(D) independently of x' (the first side; shard side a).
    Q,
    /// P̃: x' ~ μ, then w ~ M(D with x') (the second side; shard side b).
    P,
}

impl JointSide {
    fn draw_index(self) -> u64 {
        match self {
            JointSide::P => 0,
            JointSide::Q => 1,
        }
    }
}

/// n i.i.d. pairs (x', w) of one side.
#[derive(Clone, Debug)]
pub struct Draws {
    /// The drawn records x', one row each; with a group of K records the row is
    /// x'_1..x'_K side by side (dimension K times the records').
    pub x: Samples,
    /// The releases, row j drawn with x' = row j of `x`.
    pub w: Samples,
    /// Index into the data of each drawn record (K per draw, draw j's at jK..(j+1)K).
    pub idx: Vec<usize>,
    /// Mechanism calls (exec requests) made.
    pub calls: u64,
}

/// Checks `data` and `base` against `mechanism`: every neighbor D with x' inside its domain.
pub fn check_inputs(mechanism: &dyn Mechanism, base: &Dataset, data: &Dataset) -> Result<()> {
    let relation = mechanism.neighboring();
    if relation == Neighboring::ReplaceOne && base.is_empty() {
        return Err(Error::InvalidConfig(
            "replace-one neighbors need a non-empty rest of the dataset".into(),
        ));
    }
    let domain = mechanism.domain();
    domain.check(base)?;
    if data.dim() != domain.dim {
        return Err(Error::InvalidConfig(format!(
            "the data's records have dimension {}; {} takes dimension {}",
            data.dim(),
            mechanism.id(),
            domain.dim
        )));
    }
    for i in 0..data.len() {
        let r = data.record(i).to_vec();
        domain
            .check(&neighbor(base, &r, relation)?)
            .map_err(|e| Error::InvalidConfig(format!("data record {} ({r:?}): {e}", i + 1)))?;
    }
    Ok(())
}

/// [`check_inputs`] for a group of K records: also the dataset with K of them (under
/// replace-one, D must have K records to replace).
pub fn check_inputs_group(
    mechanism: &dyn Mechanism,
    base: &Dataset,
    data: &Dataset,
    group: usize,
) -> Result<()> {
    check_inputs(mechanism, base, data)?;
    if group > 1 {
        let r = data.record(0).to_vec();
        let d = neighbor_group(base, &vec![r.clone(); group], mechanism.neighboring())?;
        mechanism.domain().check(&d).map_err(|e| {
            Error::InvalidConfig(format!(
                "--group {group}: D with {group} records of the data ({r:?} each): {e}"
            ))
        })?;
    }
    Ok(())
}

/// Draws n pairs (x', w) of `side` (see the module docs, steps 1–2): x' uniform over the rows
/// of `data` from the seed's `Other { DRAW_TAG, side }` stream; w from M(D) or M(D with x'),
/// D = `base`, or (`draw_dataset`) D drawn from μ with `base.len()` records, fresh for every
/// release. The caller has checked the inputs ([`check_inputs`]).
pub fn draw_side(
    mechanism: &dyn Mechanism,
    base: &Dataset,
    data: &Dataset,
    n: usize,
    seed: Seed,
    side: JointSide,
    draw_dataset: bool,
) -> Result<Draws> {
    draw_side_group(mechanism, base, data, n, seed, side, draw_dataset, 1)
}

/// [`draw_side`] with K = `group` records x'_1..x'_K per draw (module docs, *Groups of K
/// records*): the nK indices come from the same stream (K = 1 draws exactly what
/// [`draw_side`] draws), and under P̃ draw j's release is of D with its K records. The caller
/// has checked the inputs ([`check_inputs_group`]).
#[allow(clippy::too_many_arguments)]
pub fn draw_side_group(
    mechanism: &dyn Mechanism,
    base: &Dataset,
    data: &Dataset,
    n: usize,
    seed: Seed,
    side: JointSide,
    draw_dataset: bool,
    group: usize,
) -> Result<Draws> {
    let k = group.max(1);
    let idx = draw_indices(data.len(), n * k, seed, side);
    let draw = SideDraw {
        mechanism,
        base,
        data,
        n,
        seed,
        side,
        k,
        idx: &idx,
    };
    let per_call = mechanism.datasets_per_call().filter(|&c| c > 1);
    // A group of K > 1 records next to a fixed D, for a program that reads many datasets per
    // request: every release has its own dataset (D with its K-tuple), batched as drawn datasets
    // are.
    let batched_group = !draw_dataset && k > 1 && side == JointSide::P && per_call.is_some();
    let (w, calls) = if draw_dataset || batched_group {
        // One release per dataset: D_j (base.len() records i.i.d. from μ; with a batched group
        // the fixed D) from its own stream, the release from its own stream, so the pairs are
        // i.i.d. and independent of the order the threads run in.
        let trial_base = if draw_dataset {
            DRAWN_DATASET_TRIAL_BASE
        } else {
            GROUP_TRIAL_BASE
        };
        match per_call {
            Some(per) => draw.each_batched(draw_dataset, trial_base, per)?,
            None => draw.each_alone(draw_dataset, trial_base)?,
        }
    } else {
        match side {
            JointSide::Q => draw.of_base()?,
            JointSide::P => draw.by_record()?,
        }
    };
    let x_flat: Vec<f64> = idx.iter().flat_map(|&i| data.record(i).to_vec()).collect();
    Ok(Draws {
        x: Samples::from_flat(data.dim() * k, x_flat)?,
        w,
        idx,
        calls,
    })
}

/// The indices into the data (of `m` rows) of `count` records drawn uniformly for `side`, from
/// the seed's `Other { DRAW_TAG, side }` stream.
fn draw_indices(m: usize, count: usize, seed: Seed, side: JointSide) -> Vec<usize> {
    let mut rng = seed.rng(Stream::Other {
        tag: DRAW_TAG,
        index: side.draw_index(),
    });
    (0..count).map(|_| rng.random_range(0..m)).collect()
}

/// What drawing one side's releases needs: the target, the data, the side and its drawn
/// records (K = `k` per draw, `n` draws).
struct SideDraw<'a> {
    mechanism: &'a dyn Mechanism,
    base: &'a Dataset,
    data: &'a Dataset,
    n: usize,
    seed: Seed,
    side: JointSide,
    k: usize,
    idx: &'a [usize],
}

impl SideDraw<'_> {
    /// The records of draw j.
    fn records_of(&self, j: usize) -> Vec<Vec<f64>> {
        let k = self.k;
        self.idx[j * k..(j + 1) * k]
            .iter()
            .map(|&i| self.data.record(i).to_vec())
            .collect()
    }

    /// The generator side of this joint side's releases.
    fn rng_side(&self) -> Side {
        match self.side {
            JointSide::P => Side::First,
            JointSide::Q => Side::Second,
        }
    }

    /// Draw j's dataset: D (`draw_dataset`: `base.len()` records drawn from μ on their own
    /// stream, else `base`), with draw j's records under P̃.
    fn dataset_of(&self, j: usize, draw_dataset: bool) -> Result<Dataset> {
        let data = self.data;
        let d = if !draw_dataset {
            self.base.clone()
        } else {
            let mut r = self.seed.rng(Stream::Other {
                tag: DATASET_TAG,
                index: 2 * j as u64 + self.side.draw_index(),
            });
            let recs: Vec<Vec<f64>> = (0..self.base.len())
                .map(|_| data.record(r.random_range(0..data.len())).to_vec())
                .collect();
            if recs.is_empty() {
                Dataset::empty(data.dim())?
            } else {
                Dataset::vectors(data.dim(), &recs)?
            }
        };
        Ok(match self.side {
            JointSide::P => neighbor_group(&d, &self.records_of(j), self.mechanism.neighboring())?,
            JointSide::Q => d,
        })
    }

    /// One release per dataset, for a program that reads many datasets per request: the
    /// releases j in chunk c (of `per` datasets, a fixed split) come from one call on the
    /// confirm stream of trial `trial_base` + c, the datasets each from their own stream.
    fn each_batched(
        &self,
        draw_dataset: bool,
        trial_base: u64,
        per: usize,
    ) -> Result<(Samples, u64)> {
        use rayon::prelude::*;
        let (mechanism, n) = (self.mechanism, self.n);
        let d_out = mechanism.output_dim();
        let chunks: Vec<Vec<f64>> = (0..n.div_ceil(per))
            .into_par_iter()
            .map(|c| -> Result<Vec<f64>> {
                let ds: Vec<Dataset> = (c * per..((c + 1) * per).min(n))
                    .map(|j| self.dataset_of(j, draw_dataset))
                    .collect::<Result<_>>()?;
                let mut rng = self.seed.rng(Stream::Confirm {
                    trial: trial_base + c as u64,
                    side: self.rng_side(),
                    chunk: 0,
                });
                let s = mechanism.sample_each(&ds, &mut rng)?;
                if s.n() != ds.len() || s.dim() != d_out {
                    return Err(crate::error::Error::InvalidConfig(format!(
                        "{}: {} releases of dimension {} for {} datasets; allowed: one release of dimension {d_out} per dataset",
                        mechanism.id(),
                        s.n(),
                        s.dim(),
                        ds.len()
                    )));
                }
                Ok(s.values().iter().copied().collect())
            })
            .collect::<Result<Vec<_>>>()?;
        let flat: Vec<f64> = chunks.into_iter().flatten().collect();
        Ok((Samples::from_flat(d_out, flat)?, n.div_ceil(per) as u64))
    }

    /// One release per dataset, one call each: release j on the confirm stream of trial
    /// `trial_base` + j.
    fn each_alone(&self, draw_dataset: bool, trial_base: u64) -> Result<(Samples, u64)> {
        use rayon::prelude::*;
        let n = self.n;
        let rows: Vec<Vec<f64>> = (0..n)
            .into_par_iter()
            .map(|j| -> Result<Vec<f64>> {
                let ds = self.dataset_of(j, draw_dataset)?;
                let s = sample_parallel(
                    self.mechanism,
                    &ds,
                    1,
                    self.seed,
                    Stream::Confirm {
                        trial: trial_base + j as u64,
                        side: self.rng_side(),
                        chunk: 0,
                    },
                )?;
                Ok(s.row(0).to_vec())
            })
            .collect::<Result<Vec<_>>>()?;
        let flat: Vec<f64> = rows.into_iter().flatten().collect();
        Ok((
            Samples::from_flat(self.mechanism.output_dim(), flat)?,
            n as u64,
        ))
    }

    /// The releases of Q̃: all of the fixed D, on one stream.
    fn of_base(&self) -> Result<(Samples, u64)> {
        let n = self.n;
        let w = sample_parallel(
            self.mechanism,
            self.base,
            n,
            self.seed,
            Stream::Confirm {
                trial: TRIAL_BASE - 1,
                side: Side::Second,
                chunk: 0,
            },
        )?;
        Ok((w, n.div_ceil(chunk_len(self.mechanism)) as u64))
    }

    /// The draws grouped by record (by K-tuple of records for a group), each group with the
    /// first draw's record (or index) that names its stream, and the draws it holds.
    fn groups(&self) -> Vec<(usize, Vec<usize>)> {
        let (k, idx) = (self.k, self.idx);
        if k == 1 {
            let mut by_record: Vec<Vec<usize>> = vec![Vec::new(); self.data.len()];
            for (j, &i) in idx.iter().enumerate() {
                by_record[i].push(j);
            }
            by_record
                .into_iter()
                .enumerate()
                .filter(|(_, s)| !s.is_empty())
                .collect()
        } else {
            let mut at: std::collections::HashMap<&[usize], usize> =
                std::collections::HashMap::new();
            let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
            for j in 0..self.n {
                let g = *at.entry(&idx[j * k..(j + 1) * k]).or_insert_with(|| {
                    groups.push((j, Vec::new()));
                    groups.len() - 1
                });
                groups[g].1.push(j);
            }
            groups
        }
    }

    /// The releases of P̃ next to the fixed D: the draws grouped by record (by K-tuple of
    /// records for a group), each group sampled on its own stream (groups in parallel: an exec
    /// program's requests run side by side), scattered back. A record i has the trial
    /// TRIAL_BASE + i; a K-tuple (K > 1) the trial GROUP_TRIAL_BASE + j of its first draw j,
    /// distinct for distinct tuples.
    fn by_record(&self) -> Result<(Samples, u64)> {
        use rayon::prelude::*;
        let (mechanism, base, k, n) = (self.mechanism, self.base, self.k, self.n);
        let relation = mechanism.neighboring();
        let d_out = mechanism.output_dim();
        let groups = self.groups();
        let drawn = groups
            .par_iter()
            .map(|(i, slots)| -> Result<Samples> {
                let (ds, trial) = if k == 1 {
                    (
                        neighbor(base, &self.data.record(*i).to_vec(), relation)?,
                        TRIAL_BASE + *i as u64,
                    )
                } else {
                    (
                        neighbor_group(base, &self.records_of(*i), relation)?,
                        GROUP_TRIAL_BASE + *i as u64,
                    )
                };
                sample_parallel(
                    mechanism,
                    &ds,
                    slots.len(),
                    self.seed,
                    Stream::Confirm {
                        trial,
                        side: Side::First,
                        chunk: 0,
                    },
                )
            })
            .collect::<Result<Vec<_>>>()?;
        let mut w = vec![0.0; n * d_out];
        let mut calls = 0u64;
        for ((_, slots), s) in groups.iter().zip(&drawn) {
            calls += slots.len().div_ceil(chunk_len(mechanism)) as u64;
            for (k, &j) in slots.iter().enumerate() {
                for (c, v) in s.row(k).iter().enumerate() {
                    w[j * d_out + c] = *v;
                }
            }
        }
        Ok((Samples::from_flat(d_out, w)?, calls))
    }
}

/// True when the joint rows carry the products w_a·x'_b.
fn with_products(d_out: usize, d_in: usize) -> bool {
    d_out * d_in <= MAX_PRODUCTS
}

/// The feature rows of pairs (x', w): [w, x', w_a·x'_b] for Definition 1 (step 3), w alone for
/// Definition 2 (events on the output only).
pub fn features(x: &Samples, w: &Samples, definition: Definition) -> Result<Samples> {
    features_group(x, w, definition, 1)
}

/// [`features`] for draws of K = `group` records (rows of `x` are x'_1..x'_K side by side):
/// under Definition 1 the row is [w, s, w_a·s_b] with s = x'_1 + … + x'_K (a fixed map of the
/// pair, module docs *Groups of K records*); K = 1 is [`features`].
pub fn features_group(
    x: &Samples,
    w: &Samples,
    definition: Definition,
    group: usize,
) -> Result<Samples> {
    if group > 1 && definition == Definition::Strong {
        if !x.dim().is_multiple_of(group) {
            return Err(Error::InvalidSamples(format!(
                "joint rows of dimension {} for a group of {group} records; allowed: a multiple of {group}",
                x.dim()
            )));
        }
        let d_in = x.dim() / group;
        let sums: Vec<f64> = (0..x.n())
            .flat_map(|j| {
                let r = x.row(j);
                (0..d_in)
                    .map(|b| (0..group).map(|i| r[i * d_in + b]).sum::<f64>())
                    .collect::<Vec<f64>>()
            })
            .collect();
        let s = Samples::from_flat(d_in, sums)?;
        return features_group(&s, w, definition, 1);
    }
    if x.n() != w.n() {
        return Err(Error::InvalidSamples(format!(
            "{} records x' for {} releases; every release needs its x'",
            x.n(),
            w.n()
        )));
    }
    if definition == Definition::Weak {
        return Ok(w.clone());
    }
    let (d_out, d_in) = (w.dim(), x.dim());
    let products = with_products(d_out, d_in);
    let width = d_out + d_in + if products { d_out * d_in } else { 0 };
    let mut flat = Vec::with_capacity(w.n() * width);
    for j in 0..w.n() {
        let wr = w.row(j);
        let xr = x.row(j);
        flat.extend(wr.iter().copied());
        flat.extend(xr.iter().copied());
        if products {
            for a in wr.iter() {
                for b in xr.iter() {
                    flat.push(a * b);
                }
            }
        }
    }
    Ok(Samples::from_flat(width, flat)?)
}

/// The features in words (for the report).
pub fn features_words(d_out: usize, d_in: usize, definition: Definition) -> String {
    features_words_group(d_out, d_in, definition, 1)
}

/// [`features_words`] for draws of K = `group` records (d_in: one record's dimension).
pub fn features_words_group(
    d_out: usize,
    d_in: usize,
    definition: Definition,
    group: usize,
) -> String {
    if group > 1 && definition == Definition::Strong {
        return format!(
            "[w (dimension {d_out}), s = x'_1 + … + x'_{group} (dimension {d_in}){}]",
            if with_products(d_out, d_in) {
                ", w_a·s_b products"
            } else {
                ""
            }
        );
    }
    match definition {
        Definition::Weak => {
            format!("[w (dimension {d_out})] only: Definition 2's events are on the output")
        }
        Definition::Strong => format!(
            "[w (dimension {d_out}), x' (dimension {d_in}){}]",
            if with_products(d_out, d_in) {
                ", w_a·x'_b products"
            } else {
                ""
            }
        ),
    }
}

/// Steps 3–5 on drawn pairs: the one hockey-stick bound at the full β, first side Q̃ (pairs
/// `q` = (x', w)), second P̃ (`p`), the tester's randomness from `seed`.
pub fn bound_pairs(
    q: (&Samples, &Samples),
    p: (&Samples, &Samples),
    epsilon: f64,
    delta: f64,
    beta: f64,
    definition: Definition,
    seed: Seed,
) -> Result<BoundRecord> {
    bound_pairs_group(q, p, epsilon, delta, beta, definition, seed, 1)
}

/// [`bound_pairs`] for draws of K = `group` records; `epsilon` and `delta` are the claim
/// tested (for K > 1 the group claim (Kε, K·e^{(K−1)ε}·δ), Proposition 4).
#[allow(clippy::too_many_arguments)]
pub fn bound_pairs_group(
    q: (&Samples, &Samples),
    p: (&Samples, &Samples),
    epsilon: f64,
    delta: f64,
    beta: f64,
    definition: Definition,
    seed: Seed,
    group: usize,
) -> Result<BoundRecord> {
    let fq = features_group(q.0, q.1, definition, group)?;
    let fp = features_group(p.0, p.1, definition, group)?;
    let tester = HockeyStickTester::default();
    let divergence = Divergence::HockeyStick { epsilon };
    let mut rng = seed.rng(Stream::Tester { bound: TRIAL_BASE });
    let sel = tester
        // First side M(D) (Q̃), second M(D ∪ {x'}) (P̃), so that the report's directions read
        // M(D) ‖ M(D') as for an ordinary pair.
        .select_and_bound(&fq, &fp, &[(divergence, delta)], beta, &mut rng)?
        .ok_or_else(|| {
            Error::InvalidConfig("internal: the hockey-stick tester made no selection".into())
        })?;
    let meas = sel.measurement;
    let inequality = match definition {
        _ if group > 1 => format!(
            "H_{{e^ε}} of {}: the K-record claim (Kε, K·e^{{(K−1)ε}}·δ) that the per-record claim implies by the chain D_0..D_K (Triastcyn & Faltings 2020, Proposition 4; dp_audit::audit::bayesian, Groups of K records) bounds it; bounded by: {}",
            match definition {
                Definition::Strong => format!(
                    "the joint laws of (x'_1..x'_{group}, w), each x'_i ~ μ (Definition 1: events on the records and the output)"
                ),
                Definition::Weak => format!(
                    "the output laws, E over x'_1..x'_{group} ~ μ of M(D with them) against M(D) (Definition 2: events on the output only)"
                ),
            },
            meas.inequality
        ),
        Definition::Strong => format!(
            "H_{{e^ε}} of the joint laws of (x', w), x' ~ μ: H(P̃‖Q̃) ≤ Pr_{{x',w}}[L ≥ ε_μ] ≤ δ_μ under a Definition 1 (strong BDP) claim (dp_audit::audit::bayesian); bounded by: {}",
            meas.inequality
        ),
        Definition::Weak => format!(
            "H_{{e^ε}} of the output laws, E_{{x'~μ}} M(D') against M(D): ≤ δ_μ under a Definition 2 (weak BDP) claim, events on the output only (dp_audit::audit::bayesian); bounded by: {}",
            meas.inequality
        ),
    };
    Ok(BoundRecord {
        tester: TESTER_NAME.into(),
        divergence,
        direction: if sel.both {
            Direction::Larger
        } else if sel.reversed {
            Direction::SecondVsFirst
        } else {
            Direction::FirstVsSecond
        },
        value: meas.value,
        allowed: delta,
        violation: violates(meas.value, delta),
        failure_probability: beta,
        point_estimate: meas.point_estimate,
        inequality,
        event: meas.event,
    })
}

/// The distinct records of `q` and `p` (the x' rows of the two sides) with how often each side
/// drew them, in first-seen order (Q̃ first).
pub fn drawn_records(q: &Samples, p: &Samples) -> Vec<DrawnRecord> {
    let mut out: Vec<DrawnRecord> = Vec::new();
    let mut at: std::collections::HashMap<Vec<u64>, usize> = std::collections::HashMap::new();
    for (side, s) in [(0, q), (1, p)] {
        for j in 0..s.n() {
            let r = s.row(j).to_vec();
            let key: Vec<u64> = r.iter().map(|v| v.to_bits()).collect();
            let k = *at.entry(key).or_insert_with(|| {
                out.push(DrawnRecord {
                    record: r.clone(),
                    first: 0,
                    second: 0,
                });
                out.len() - 1
            });
            if side == 0 {
                out[k].first += 1;
            } else {
                out[k].second += 1;
            }
        }
    }
    out
}

/// The number of distinct rows of `data`.
pub fn distinct_rows(data: &Dataset) -> usize {
    let mut rows = data.to_rows();
    rows.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    rows.dedup();
    rows.len()
}

/// Everything of a Bayesian audit's report but the mechanism: its bound, seed, β and draws.
pub struct Outcome {
    /// The one bound.
    pub bound: BoundRecord,
    /// The data distribution and the draws.
    pub info: BayesianInfo,
    /// The seed.
    pub seed: u64,
    /// β.
    pub beta: f64,
    /// Mechanism calls.
    pub calls: u64,
}

/// The report of a Bayesian audit.
pub fn report(mechanism: MechanismInfo, o: Outcome, start: Instant) -> AuditReport {
    let empirical_epsilon = empirical_epsilon_mu(&o.bound, o.beta);
    let verdict = if o.bound.violation
        || empirical_epsilon
            .as_ref()
            .is_some_and(EmpiricalEpsilon::exceeds_claim)
    {
        Verdict::Violation
    } else {
        Verdict::NoViolation
    };
    AuditReport {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        mechanism,
        pair: None,
        sample_files: None,
        testers: vec![TESTER_NAME.into()],
        skipped_testers: Vec::new(),
        seed: o.seed,
        samples_per_side: o.info.draws_per_side,
        mechanism_calls: o.calls,
        beta: BetaSplit {
            total: o.beta,
            bounds: 1,
            per_bound: o.beta,
            rule: format!(
                "one bound at the full β = {} (event and direction chosen on the training split)",
                readable(o.beta)
            ),
        },
        bounds: vec![o.bound],
        verdict,
        empirical_epsilon,
        output_transform: None,
        wall_time_seconds: Some(start.elapsed().as_secs_f64()),
        reproduce: None,
        search: None,
        bayesian: Some(o.info),
        release_dim: None,
        layers: None,
        effort: None,
    }
}

/// The empirical ε_μ of a Bayesian audit: the largest ε' at which the verdict's own test
/// (its event, chosen on the training split, and its held-out counts) refutes (ε', δ_μ)-BDP
/// at the claim's δ_μ, in the units a reader compares with the claim's ε_μ.
///
/// Why it is valid. Both definitions imply, for the joint laws the test compares (Definition 1)
/// or for the output laws (Definition 2), P(S) ≤ e^{ε'} Q(S) + δ_μ for every event S, in both
/// orders (proof in the module docs). The hockey-stick test's contrast inverts its own exact
/// test in ε' at δ_μ (`EventBound::epsilon_lower`), on the same counts and at the same β as the
/// verdict's bound: with probability ≥ 1 − β the bound and this ε' hold together, so it needs
/// no share of β of its own. Rounded down. `None` when the test refutes no ε' ≥ 0.
fn empirical_epsilon_mu(bound: &BoundRecord, beta: f64) -> Option<EmpiricalEpsilon> {
    let Divergence::HockeyStick { epsilon } = bound.divergence else {
        return None;
    };
    let lower_bound = bound.event.as_ref()?.epsilon_lower(bound.allowed)?;
    Some(EmpiricalEpsilon {
        delta: bound.allowed,
        lower_bound,
        confidence: 1.0 - beta,
        source: Some(
            "the verdict's own event and held-out counts (the same test, inverted in ε at the claim's δ_μ; no share of β of its own)"
                .into(),
        ),
        event: None,
        evidence: None,
        estimate_beta: None,
        claimed_epsilon: Some(epsilon),
        accountant: None,
        mu_lower: None,
    })
}

/// The (ε_μ, δ_μ) of a `bdp:` claim, or the error naming what was given.
pub fn bayesian_claim(claim: &PrivacyClaim) -> Result<(PrivacyClaim, f64, f64)> {
    let claim = claim.validated()?;
    match claim {
        PrivacyClaim::Bayesian { epsilon, delta } => Ok((claim, epsilon, delta)),
        _ => Err(Error::InvalidConfig(format!(
            "the Bayesian audit tests bdp:EPS:DELTA claims; got {claim}"
        ))),
    }
}

/// Audits the Bayesian claim `claim` of `mechanism`, μ = the rows of `data` (uniform), the rest
/// of the dataset `base` (or, with `config.draw_dataset`, drawn from μ with as many records).
/// See the module docs for the test and its guarantee.
pub fn audit_bayesian(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    base: &Dataset,
    data: &Dataset,
    data_source: &str,
    config: &BayesianConfig,
) -> Result<AuditReport> {
    let start = Instant::now();
    let (claim, per_epsilon, per_delta) = bayesian_claim(claim)?;
    let k = config.group;
    let (epsilon, delta) = group_claim(&claim, per_epsilon, per_delta, k)?;
    let n = config.draws_per_side;
    let b = config.failure_probability;
    check_config(config)?;
    check_inputs_group(mechanism, base, data, k)?;
    let seed = Seed(config.seed);
    let dq = draw_side_group(
        mechanism,
        base,
        data,
        n,
        seed,
        JointSide::Q,
        config.draw_dataset,
        k,
    )?;
    let dp = draw_side_group(
        mechanism,
        base,
        data,
        n,
        seed,
        JointSide::P,
        config.draw_dataset,
        k,
    )?;
    let bound = bound_pairs_group(
        (&dq.x, &dq.w),
        (&dp.x, &dp.w),
        epsilon,
        delta,
        b,
        config.definition,
        seed,
        k,
    )?;
    let info = bayesian_info(
        mechanism,
        base,
        data,
        data_source,
        config,
        (&dq, &dp),
        (per_epsilon, per_delta, epsilon, delta),
    )?;
    let mechanism_info = MechanismInfo {
        id: mechanism.id().to_string(),
        claim,
        claim_source: mechanism.claim_source(),
        neighboring: mechanism.neighboring(),
        catalogue_status: None,
        setting: mechanism.setting(),
        privacy_unit: mechanism.privacy_unit(),
        scope: mechanism.dp_fy_scope(),
    };
    Ok(report(
        mechanism_info,
        Outcome {
            bound,
            info,
            seed: config.seed,
            beta: b,
            calls: dq.calls + dp.calls,
        },
        start,
    ))
}

/// The claim tested with a group of `k` records: the per-record (`per_epsilon`, `per_delta`),
/// or for K > 1 the group claim it implies (Proposition 4), rounded up (a larger claim is
/// weaker, so testing it stays sound); an error when the group ε is too large.
fn group_claim(
    claim: &PrivacyClaim,
    per_epsilon: f64,
    per_delta: f64,
    k: usize,
) -> Result<(f64, f64)> {
    if k == 1 {
        return Ok((per_epsilon, per_delta));
    }
    let (e, d) =
        crate::mechanisms::bayesian_accountant::group_privacy(per_epsilon, per_delta, k as u64)
            .map_err(|e| {
                let e = match e {
                    crate::mechanisms::accounting::AccountingError::InvalidParameter {
                        message,
                        ..
                    } => message,
                    other => other.to_string(),
                };
                Error::InvalidConfig(format!("--group {k} with the claim {claim}: {e}"))
            })?;
    if e > crate::mechanisms::claim::MAX_EPSILON {
        return Err(Error::InvalidConfig(format!(
            "--group {k} with the claim {claim}: the group ε = K·ε = {} is above {}; allowed: K·ε ≤ {}",
            readable(e),
            crate::mechanisms::claim::MAX_EPSILON,
            crate::mechanisms::claim::MAX_EPSILON
        )));
    }
    Ok((e, d))
}

/// Checks the audit's sizes: the draws per side, β and the group size.
fn check_config(config: &BayesianConfig) -> Result<()> {
    let n = config.draws_per_side;
    if !(100..=crate::audit::MAX_SAMPLES_PER_SIDE).contains(&n) {
        return Err(Error::InvalidConfig(format!(
            "--samples {n}; allowed: 100 to {}",
            crate::audit::MAX_SAMPLES_PER_SIDE
        )));
    }
    let b = config.failure_probability;
    if !(b > 0.0 && b < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "failure probability β = {b}; allowed: 0 < β < 1"
        )));
    }
    if config.group == 0 {
        return Err(Error::InvalidConfig(
            "--group 0; allowed: a whole number ≥ 1 (the records that differ)".into(),
        ));
    }
    Ok(())
}

/// What the report says about the audit's data and draws: μ, D, the records drawn on each
/// side (`dq`, `dp`), the features, and (for a group) the per-record and group claims
/// `(per_epsilon, per_delta, epsilon, delta)`.
fn bayesian_info(
    mechanism: &dyn Mechanism,
    base: &Dataset,
    data: &Dataset,
    data_source: &str,
    config: &BayesianConfig,
    (dq, dp): (&Draws, &Draws),
    (per_epsilon, per_delta, epsilon, delta): (f64, f64, f64, f64),
) -> Result<BayesianInfo> {
    let n = config.draws_per_side;
    let k = config.group;
    // One record per row for the report's list of drawn records.
    let single = |x: &Samples| Samples::from_flat(data.dim(), x.values().iter().copied().collect());
    let distinct_drawn = {
        let mut i = dp.idx.clone();
        i.sort_unstable();
        i.dedup();
        i.len()
    };
    Ok(BayesianInfo {
        data_source: data_source.to_string(),
        records: data.len(),
        distinct_records: distinct_rows(data),
        base: base.clone(),
        draws_per_side: n,
        distinct_drawn,
        features: features_words_group(mechanism.output_dim(), data.dim(), config.definition, k),
        definition: config.definition.label().to_string(),
        dataset_drawn: config.draw_dataset,
        drawn: drawn_records(&single(&dq.x)?, &single(&dp.x)?),
        group: (k > 1).then_some(GroupInfo {
            records: k,
            per_record_epsilon: per_epsilon,
            per_record_delta: per_delta,
            epsilon,
            delta,
        }),
    })
}
