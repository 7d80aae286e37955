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
//! Definition 2 claim: it tests Definition 1.
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
//! from the seed). D is fixed (the catalogue witness's smaller dataset).
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
    AuditReport, BayesianInfo, BetaSplit, BoundRecord, Direction, MechanismInfo, SCHEMA_VERSION,
    Verdict,
};
use crate::rng::{Seed, Side, Stream, chunk_len, sample_parallel};
use crate::testers::{Divergence, HockeyStickTester, PropertyTester, violates};

/// Stream tag of the x' draws (index 0: the P̃ side, 1: the Q̃ side).
const DRAW_TAG: u64 = 0xBD9_0001;
/// Confirm-stream trial indices of the Bayesian audit's releases start here (far above the
/// trials of ordinary confirmations).
const TRIAL_BASE: u64 = 1 << 48;
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

/// Settings of a Bayesian audit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BayesianConfig {
    /// The run's seed.
    pub seed: u64,
    /// x' draws, hence releases, per side (n).
    pub draws_per_side: usize,
    /// β.
    pub failure_probability: f64,
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

/// Joint rows [w, x', w_a·x'_b] for releases `w` paired with the records `idx` of `data`.
fn joint(w: &Samples, data: &Dataset, idx: &[usize]) -> Result<Samples> {
    let (d_out, d_in) = (w.dim(), data.dim());
    let products = d_out * d_in <= MAX_PRODUCTS;
    let width = d_out + d_in + if products { d_out * d_in } else { 0 };
    let mut flat = Vec::with_capacity(idx.len() * width);
    for (j, &i) in idx.iter().enumerate() {
        let wr = w.row(j);
        let xr = data.record(i);
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

/// Audits the Bayesian claim `claim` of `mechanism`, μ = the rows of `data` (uniform), the rest
/// of the dataset `base`. See the module docs for the test and its guarantee.
pub fn audit_bayesian(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    base: &Dataset,
    data: &Dataset,
    data_source: &str,
    config: &BayesianConfig,
) -> Result<AuditReport> {
    let start = Instant::now();
    let claim = claim.validated()?;
    let PrivacyClaim::Bayesian { epsilon, delta } = claim else {
        return Err(Error::InvalidConfig(format!(
            "the Bayesian audit tests bdp:EPS:DELTA claims; got {claim}"
        )));
    };
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
    let seed = Seed(config.seed);
    let m = data.len();
    let draw = |index: u64| -> Vec<usize> {
        let mut rng = seed.rng(Stream::Other {
            tag: DRAW_TAG,
            index,
        });
        (0..n).map(|_| rng.random_range(0..m)).collect()
    };
    let idx_p = draw(0);
    let idx_q = draw(1);

    // P̃: group the draws by record, sample each group on its own stream, scatter back.
    let mut by_record: Vec<Vec<usize>> = vec![Vec::new(); m];
    for (j, &i) in idx_p.iter().enumerate() {
        by_record[i].push(j);
    }
    let d_out = mechanism.output_dim();
    let mut w_p = vec![0.0; n * d_out];
    let mut calls = 0u64;
    let mut distinct_drawn = 0;
    for (i, slots) in by_record.iter().enumerate() {
        if slots.is_empty() {
            continue;
        }
        distinct_drawn += 1;
        let ds = neighbor(base, &data.record(i).to_vec(), relation)?;
        let s = sample_parallel(
            mechanism,
            &ds,
            slots.len(),
            seed,
            Stream::Confirm {
                trial: TRIAL_BASE + i as u64,
                side: Side::First,
                chunk: 0,
            },
        )?;
        calls += slots.len().div_ceil(chunk_len(mechanism)) as u64;
        for (k, &j) in slots.iter().enumerate() {
            for (c, v) in s.row(k).iter().enumerate() {
                w_p[j * d_out + c] = *v;
            }
        }
    }
    let w_p = Samples::from_flat(d_out, w_p)?;
    let w_q = sample_parallel(
        mechanism,
        base,
        n,
        seed,
        Stream::Confirm {
            trial: TRIAL_BASE - 1,
            side: Side::Second,
            chunk: 0,
        },
    )?;
    calls += n.div_ceil(chunk_len(mechanism)) as u64;
    let p = joint(&w_p, data, &idx_p)?;
    let q = joint(&w_q, data, &idx_q)?;

    let tester = HockeyStickTester::default();
    let divergence = Divergence::HockeyStick { epsilon };
    let mut rng = seed.rng(Stream::Tester { bound: TRIAL_BASE });
    let sel = tester
        // First side M(D) (Q̃), second M(D ∪ {x'}) (P̃), so that the report's directions read
        // M(D) ‖ M(D') as for an ordinary pair.
        .select_and_bound(&q, &p, &[(divergence, delta)], b, &mut rng)?
        .ok_or_else(|| {
            Error::InvalidConfig("internal: the hockey-stick tester made no selection".into())
        })?;
    let meas = sel.measurement;
    let bound = BoundRecord {
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
        failure_probability: b,
        point_estimate: meas.point_estimate,
        inequality: format!(
            "H_{{e^ε}} of the joint laws of (x', w), x' ~ μ: H(P̃‖Q̃) ≤ Pr_{{x',w}}[L ≥ ε_μ] ≤ δ_μ under the BDP claim (dp_audit::audit::bayesian); bounded by: {}",
            meas.inequality
        ),
        event: meas.event,
    };
    let verdict = if bound.violation {
        Verdict::Violation
    } else {
        Verdict::NoViolation
    };
    let features = format!(
        "[w (dimension {d_out}), x' (dimension {}){}]",
        data.dim(),
        if d_out * data.dim() <= MAX_PRODUCTS {
            ", w_a·x'_b products"
        } else {
            ""
        }
    );
    let distinct_records = {
        let mut rows = data.to_rows();
        rows.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        rows.dedup();
        rows.len()
    };
    Ok(AuditReport {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        mechanism: MechanismInfo {
            id: mechanism.id().to_string(),
            claim,
            claim_source: mechanism.claim_source(),
            neighboring: relation,
            catalogue_status: None,
        },
        pair: None,
        sample_files: None,
        testers: vec![TESTER_NAME.into()],
        skipped_testers: Vec::new(),
        seed: config.seed,
        samples_per_side: n,
        mechanism_calls: calls,
        beta: BetaSplit {
            total: b,
            bounds: 1,
            per_bound: b,
            rule: format!(
                "one bound at the full β = {} (event and direction chosen on the training split)",
                readable(b)
            ),
        },
        bounds: vec![bound],
        verdict,
        empirical_epsilon: None,
        output_transform: None,
        wall_time_seconds: Some(start.elapsed().as_secs_f64()),
        reproduce: None,
        search: None,
        bayesian: Some(BayesianInfo {
            data_source: data_source.to_string(),
            records: m,
            distinct_records,
            base: base.clone(),
            draws_per_side: n,
            distinct_drawn,
            features,
        }),
        release_dim: None,
        layers: None,
    })
}
