//! Anytime-valid sequential auditing: draw releases in growing batches and stop as soon as a
//! betting e-process establishes a violation (after "Sequentially auditing differential
//! privacy", NeurIPS 2025, and the testing-by-betting framework of Waudby-Smith & Ramdas 2023).
//!
//! A gross bug is caught after a few hundred releases per side; a mechanism that keeps its claim
//! costs at most `max_samples_per_side`, which defaults to the fixed-n default of
//! [`AuditConfig`](crate::audit::AuditConfig).
//!
//! # The test
//! Pair the i-th releases X_i ~ P = M(D) and Y_i ~ Q = M(D'). For one direction (P ‖ Q), one ε
//! and what the claim allows there, δ = δ(ε) (rounded up), let S_i be an event chosen from the
//! releases 1..i−1 only (*predictable*), and
//!
//! ```text
//! Z_i = 1{X_i ∈ S_i} − e^ε·1{Y_i ∈ S_i} ∈ [−e^ε, 1],   E[Z_i | F_{i−1}] = P(S_i) − e^ε Q(S_i).
//! ```
//!
//! Under the null "the claim holds on this pair", P(S) − e^ε Q(S) ≤ H_{e^ε}(P ‖ Q) ≤ δ for every
//! S, so E[Z_i − δ | F_{i−1}] ≤ 0. With a predictable bet λ_i ∈ [0, 1/(e^ε + δ)) the wealth
//!
//! ```text
//! K_t = Π_{i ≤ t} (1 + λ_i (Z_i − δ))
//! ```
//!
//! has factors ≥ 1 − λ_i(e^ε + δ) > 0 and conditional mean ≤ 1: it is a nonnegative
//! supermartingale with K_0 = 1. One such process runs for each direction (P ‖ Q and Q ‖ P) and
//! each ε of the plan (the claim's own ε for pure and approximate claims; for profile claims —
//! Rényi, zCDP, Gaussian DP — the fixed grid of [`HockeyStickTester::plan`] at
//! `max_samples_per_side`). The C processes are averaged with equal weights, M_t = (1/C) Σ_c K_t^c,
//! which is again a nonnegative supermartingale with M_0 = 1 (all components are adapted to the
//! same filtration). Averaging dominates splitting β: any component at C/β puts M_t at ≥ 1/β.
//!
//! **Ville's inequality**: P(sup_t M_t ≥ 1/β) ≤ β. The audit reports a violation the first time
//! M_t ≥ 1/β, checked after every pair of releases, so the probability of reporting a violation
//! against a mechanism that keeps its claim is at most β — at whatever time it stops, and even
//! though the batch schedule, the events and the bets all adapt to the data seen so far.
//!
//! # Events and bets (power only; any predictable choice keeps the guarantee)
//! Releases come in batches: the first batch (`first_batch` per side) only trains, then each
//! batch doubles the total until `max_samples_per_side`. At each batch boundary, on the releases
//! drawn so far (the first [`MAX_SELECTION_ROWS`] of them per side), each process chooses an
//! event S = {s(x) ≥ t}: the score s is an output coordinate or its negation; for discrete
//! coordinates, the estimated log-likelihood ratio of their values; for mixed outputs, a
//! continuous coordinate (or its negation) restricted to one of the most frequent patterns of the
//! discrete ones. The threshold t and bet λ maximize the plug-in expected log-growth
//! E log(1 + λ(Z − δ)) with P(S) estimated by k_P/(n+1) (shrunk down) and Q(S) by
//! (k_Q+1)/(n+1) (shrunk up). The bet used is half of that plug-in Kelly bet (robust to the
//! optimism of choosing the event on the same data), capped below 1/(e^ε + δ). Event and bet stay
//! fixed for the whole next batch, whose releases were not seen when choosing: both are
//! F_{i−1}-measurable.
//!
//! # Assumptions
//! Releases are i.i.d. within each side and the sides are independent (each batch of each side
//! comes from its own ChaCha stream of the seed). Nothing is assumed about the output
//! distribution or about how the stopping time is chosen.
//!
//! # Arithmetic
//! Log-wealth is accumulated as Σ ln(1 + λ(Z − δ)). e^ε is rounded up and δ is the claim's
//! allowance rounded up (both make Z − δ smaller, the safe side). Each factor is ≥ 1/2 (λ is at
//! most half of a bet below 1/(e^ε + δ)), so each ln_1p term is accurate to a few ulps, and
//! recursive summation of n terms errs by at most (n − 1)·2^-53·Σ|terms| (≤ 5.6·10^-9·Σ|terms| at
//! the largest allowed n = 5·10^7). Each component's log-wealth is therefore lowered by
//! 10^-8·Σ|terms| + 10^-12 before use; the log of the average is lowered by 10^-12·(1 + |value|)
//! (C ≤ 2·profile grid terms), and it is compared with ln(1/β) rounded up.
//!
//! # Randomness
//! Batch b of side s is `sample_parallel` on the stream `Confirm { trial: 2^40 + b, side, .. }`,
//! separate from every fixed-n and search stream; everything else is deterministic and serial.
//! The same seed gives the same stopping time on any number of threads.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::audit::{
    AuditConfig, Direction, MAX_SAMPLES_PER_SIDE, MAX_VALUES_PER_SIDE, MechanismInfo,
    SCHEMA_VERSION, Verdict,
};
use crate::error::{Error, Result};
use crate::mechanisms::{DatasetPair, Mechanism, PrivacyClaim, Samples};
use crate::rng::{Seed, Side, Stream, chunk_len, sample_parallel};
use crate::testers::{Divergence, HockeyStickTester, PropertyTester, allowed};

/// Default size of the first (training-only) batch per side.
pub const DEFAULT_FIRST_BATCH: usize = 20;

/// Smallest allowed first batch.
pub const MIN_FIRST_BATCH: usize = 10;

/// Offset of the sequential batches' `Confirm` trial indices: far from the fixed-n audit
/// (trial 0) and the finders' confirmations (small indices).
pub const TRIAL_BASE: u64 = 1 << 40;

/// A coordinate with at most this many distinct values on each side is treated as discrete.
const MAX_DISCRETE_VALUES: usize = 64;

/// Most frequent discrete patterns combined with continuous coordinates in mixed outputs.
const MAX_PATTERNS: usize = 16;

/// Events are chosen on at most this many of the releases drawn so far (the first ones) per
/// side, which bounds the cost of a batch boundary; any subset of past releases keeps the events
/// predictable.
pub const MAX_SELECTION_ROWS: usize = 1 << 16;

/// Fraction of the plug-in Kelly bet that is used (half Kelly).
const KELLY_FRACTION: f64 = 0.5;

/// Settings of a sequential audit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SequentialConfig {
    /// The run's seed.
    pub seed: u64,
    /// Most releases per side; the audit stops here when no violation is established.
    pub max_samples_per_side: usize,
    /// Releases per side of the first batch (training only); batches then double the total.
    pub first_batch: usize,
    /// β: probability, for a mechanism that keeps its claim, of ever reporting a violation.
    pub failure_probability: f64,
}

impl Default for SequentialConfig {
    fn default() -> Self {
        let fixed = AuditConfig::default();
        Self {
            seed: fixed.seed,
            max_samples_per_side: fixed.samples_per_side,
            first_batch: DEFAULT_FIRST_BATCH,
            failure_probability: fixed.failure_probability,
        }
    }
}

impl SequentialConfig {
    /// Checks the settings for a mechanism with output dimension `output_dim`.
    pub fn validate(&self, output_dim: usize) -> Result<()> {
        let (n, f) = (self.max_samples_per_side, self.first_batch);
        if f < MIN_FIRST_BATCH {
            return Err(Error::InvalidConfig(format!(
                "--first-batch {f}; allowed: at least {MIN_FIRST_BATCH}"
            )));
        }
        if n < 2 * f {
            return Err(Error::InvalidConfig(format!(
                "--max-samples {n} with a first batch (--first-batch) of {f}; allowed: at least twice the first batch ({}), since the first batch only trains",
                2 * f
            )));
        }
        if n > MAX_SAMPLES_PER_SIDE || n.saturating_mul(output_dim.max(1)) > MAX_VALUES_PER_SIDE {
            return Err(Error::InvalidConfig(format!(
                "--max-samples {n} with output dimension {output_dim} is too large; allowed: at most {MAX_SAMPLES_PER_SIDE} releases and {MAX_VALUES_PER_SIDE} values per side"
            )));
        }
        let b = self.failure_probability;
        if !(b > 0.0 && b < 1.0) {
            return Err(Error::InvalidConfig(format!(
                "failure probability β = {b}; allowed: 0 < β < 1"
            )));
        }
        Ok(())
    }

    /// Cumulative releases per side at the end of each batch: first_batch, then doubling, capped
    /// at the maximum (the last entry is always `max_samples_per_side`).
    pub fn schedule(&self) -> Vec<usize> {
        let mut out = vec![self.first_batch.min(self.max_samples_per_side)];
        while let Some(&last) = out.last()
            && last < self.max_samples_per_side
        {
            out.push((2 * last).min(self.max_samples_per_side));
        }
        out
    }
}

/// One wealth process at the end of the audit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComponentRecord {
    /// The hockey-stick divergence bet against.
    pub divergence: Divergence,
    /// Which order of the pair.
    pub direction: Direction,
    /// What the claim allows there (rounded up): the δ of Z − δ.
    pub allowed: f64,
    /// ln K_t of this process (rounded down).
    pub log_wealth: f64,
    /// The event of the last batch, in words (`None` if it never bet).
    pub last_event: Option<String>,
    /// The bet λ of the last batch.
    pub last_bet: f64,
}

/// The state after one batch.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    /// Releases per side drawn so far.
    pub samples_per_side: usize,
    /// ln M of the mixture at the end of the batch (or at the stopping time), rounded down.
    pub log_wealth: f64,
}

/// The result of a sequential audit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SequentialReport {
    /// Layout version.
    pub schema_version: u32,
    /// dp-audit version.
    pub tool_version: String,
    /// Always `"sequential"`.
    pub mode: String,
    /// What was audited.
    pub mechanism: MechanismInfo,
    /// The pair (absent when the releases were read from files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pair: Option<DatasetPair>,
    /// Where the releases came from when they were read from files (`audit test --sequential`),
    /// in the order they were read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_files: Option<crate::record::SampleFiles>,
    /// The seed.
    pub seed: u64,
    /// β.
    pub failure_probability: f64,
    /// Most releases per side allowed.
    pub max_samples_per_side: usize,
    /// Size of the first (training-only) batch.
    pub first_batch: usize,
    /// Releases drawn per side (the end of the last batch drawn).
    pub samples_per_side: usize,
    /// Calls of `Mechanism::sample`.
    pub mechanism_calls: u64,
    /// The index i (1-based, per side) of the pair of releases at which the mixture wealth first
    /// reached 1/β; `None` when it never did.
    pub stopping_time: Option<usize>,
    /// ln M at the stopping time, or at the end (rounded down).
    pub log_wealth: f64,
    /// ln(1/β) (rounded up): a violation is reported iff `log_wealth` ≥ this.
    pub log_threshold: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// Every wealth process.
    pub components: Vec<ComponentRecord>,
    /// The mixture wealth after each batch.
    pub batches: Vec<BatchRecord>,
    /// The guarantee, in words.
    pub inequality: String,
    /// The fixed post-processing applied to every release, when the caller audited through one
    /// (events on transformed releases are events on the original ones: the guarantee is
    /// unchanged). Absent in JSON when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_transform: Option<crate::testers::Transform>,
    /// Wall-clock seconds; left out of the deterministic JSON printed by `--json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time_seconds: Option<f64>,
    /// The `audit` command line that re-runs exactly this run, when it came from the CLI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reproduce: Option<String>,
}

/// A score s(x); events are {s(x) ≥ t}.
#[derive(Clone, Debug)]
enum Score {
    /// sign · x_j.
    Coordinate { j: usize, sign: f64 },
    /// Estimated log-likelihood ratio of the joint values of the discrete coordinates `coords`;
    /// values never seen score −∞ (they are in no event).
    Atoms {
        coords: Vec<usize>,
        table: HashMap<Vec<u64>, f64>,
    },
    /// sign · x_j when the discrete coordinates `coords` take the values `pattern`, −∞
    /// otherwise (mixed outputs such as sparse-vector answers with noisy values).
    Conditional {
        coords: Vec<usize>,
        pattern: Vec<u64>,
        /// Rank of `pattern` among the frequent patterns (see [`Candidates`]).
        rank: u32,
        j: usize,
        sign: f64,
    },
}

/// Candidate scores for one direction, with the rank of each training row's discrete pattern
/// among the frequent ones (`u32::MAX` if not among them), so that conditional scores are
/// computed on the training rows without rebuilding keys.
struct Candidates {
    scores: Vec<Score>,
    ranks_a: Vec<u32>,
    ranks_b: Vec<u32>,
}

fn key(row: &ndarray::ArrayView1<'_, f64>, coords: &[usize]) -> Vec<u64> {
    coords.iter().map(|&c| row[c].to_bits()).collect()
}

impl Score {
    fn eval(&self, row: &ndarray::ArrayView1<'_, f64>) -> f64 {
        match self {
            Score::Coordinate { j, sign } => sign * row[*j],
            Score::Atoms { coords, table } => {
                *table.get(&key(row, coords)).unwrap_or(&f64::NEG_INFINITY)
            }
            Score::Conditional {
                coords,
                pattern,
                j,
                sign,
                ..
            } => {
                if key(row, coords) == *pattern {
                    sign * row[*j]
                } else {
                    f64::NEG_INFINITY
                }
            }
        }
    }

    fn eval_all(&self, s: &Samples) -> Vec<f64> {
        (0..s.n()).map(|i| self.eval(&s.row(i))).collect()
    }

    fn describe(&self, t: f64) -> String {
        let coord = |j: usize, sign: f64| {
            if sign > 0.0 {
                format!("coordinate {j} ≥ {t}")
            } else {
                format!("coordinate {j} ≤ {}", -t)
            }
        };
        match self {
            Score::Coordinate { j, sign } => coord(*j, *sign),
            Score::Conditional {
                coords,
                pattern,
                j,
                sign,
                ..
            } => {
                let vals: Vec<f64> = pattern.iter().map(|b| f64::from_bits(*b)).collect();
                format!("coordinates {coords:?} = {vals:?} and {}", coord(*j, *sign))
            }
            Score::Atoms { coords, table } => {
                let n = table.values().filter(|&&v| v >= t).count();
                format!(
                    "output values of coordinates {coords:?} among the {n} values whose estimated log-likelihood ratio is ≥ {t:.4}"
                )
            }
        }
    }
}

/// Candidate scores for betting that `a` puts more mass than `b` on an event.
fn candidates(a: &Samples, b: &Samples) -> Candidates {
    let d = a.dim();
    let n_min = a.n().min(b.n());
    let mut out = Vec::new();
    let mut ranks_a = Vec::new();
    let mut ranks_b = Vec::new();
    let mut discrete = Vec::new();
    let mut continuous = Vec::new();
    for j in 0..d {
        let mut seen = std::collections::HashSet::new();
        for s in [a, b] {
            for v in s.column(j) {
                seen.insert(v.to_bits());
                if seen.len() > MAX_DISCRETE_VALUES {
                    break;
                }
            }
        }
        if seen.len() <= 1 {
            continue; // constant and equal on both sides: no information
        }
        if seen.len() <= MAX_DISCRETE_VALUES && seen.len() * 10 <= n_min {
            discrete.push(j);
        } else {
            continuous.push(j);
        }
        for sign in [1.0, -1.0] {
            out.push(Score::Coordinate { j, sign });
        }
    }
    if !discrete.is_empty() {
        let mut counts: HashMap<Vec<u64>, (f64, f64)> = HashMap::new();
        for i in 0..a.n() {
            counts.entry(key(&a.row(i), &discrete)).or_default().0 += 1.0;
        }
        for i in 0..b.n() {
            counts.entry(key(&b.row(i), &discrete)).or_default().1 += 1.0;
        }
        let k = counts.len() as f64;
        let (na, nb) = (a.n() as f64, b.n() as f64);
        let table = counts
            .into_iter()
            .map(|(key, (ca, cb))| {
                let lr = ((ca + 0.5) / (na + 0.5 * k)).ln() - ((cb + 0.5) / (nb + 0.5 * k)).ln();
                (key, lr)
            })
            .collect();
        out.push(Score::Atoms {
            coords: discrete.clone(),
            table,
        });
        // Mixed outputs: each continuous coordinate within each of the most frequent patterns
        // of the discrete ones (pooled counts; ties broken by the pattern's bits).
        if !continuous.is_empty() {
            let mut freq: HashMap<Vec<u64>, usize> = HashMap::new();
            for s in [a, b] {
                for i in 0..s.n() {
                    *freq.entry(key(&s.row(i), &discrete)).or_default() += 1;
                }
            }
            let mut patterns: Vec<(usize, Vec<u64>)> =
                freq.into_iter().map(|(k, c)| (c, k)).collect();
            patterns.sort_by(|x, y| y.0.cmp(&x.0).then_with(|| x.1.cmp(&y.1)));
            patterns.truncate(MAX_PATTERNS);
            let rank_of: HashMap<&Vec<u64>, u32> = patterns
                .iter()
                .enumerate()
                .map(|(r, (_, k))| (k, r as u32))
                .collect();
            let ranks = |s: &Samples| -> Vec<u32> {
                (0..s.n())
                    .map(|i| *rank_of.get(&key(&s.row(i), &discrete)).unwrap_or(&u32::MAX))
                    .collect()
            };
            ranks_a = ranks(a);
            ranks_b = ranks(b);
            for (rank, (_, pattern)) in patterns.iter().enumerate() {
                for &j in &continuous {
                    for sign in [1.0, -1.0] {
                        out.push(Score::Conditional {
                            coords: discrete.clone(),
                            pattern: pattern.clone(),
                            rank: rank as u32,
                            j,
                            sign,
                        });
                    }
                }
            }
        }
    }
    Candidates {
        scores: out,
        ranks_a,
        ranks_b,
    }
}

/// The finite scores of the training rows of `s` (rows outside the event family score −∞ and
/// are left out), sorted in descending order.
fn training_scores(score: &Score, s: &Samples, ranks: &[u32]) -> Vec<f64> {
    let mut v: Vec<f64> = match score {
        Score::Conditional { rank, j, sign, .. } => ranks
            .iter()
            .enumerate()
            .filter(|&(_, r)| r == rank)
            .map(|(i, _)| sign * s.values()[[i, *j]])
            .collect(),
        _ => score
            .eval_all(s)
            .into_iter()
            .filter(|x| *x > f64::NEG_INFINITY)
            .collect(),
    };
    v.sort_by(|x, y| y.total_cmp(x));
    v
}

/// The plug-in Kelly bet for Z = 1{X ∈ S} − e·1{Y ∈ S} with X ∈ S w.p. `p`, Y ∈ S w.p. `q`
/// (independent), against the null mean `delta`: (λ*, E log(1 + λ*(Z − δ))), λ* maximizing the
/// concave expected log-growth on [0, 1/(e + δ)). (0, 0) when the plug-in mean is ≤ δ.
/// Hand-written bisection: the derivative is monotone and one-dimensional.
fn kelly(p: f64, q: f64, e: f64, delta: f64) -> (f64, f64) {
    if p - e * q - delta <= 0.0 {
        return (0.0, 0.0);
    }
    let atoms = [
        (p * q, 1.0 - e - delta),
        (p * (1.0 - q), 1.0 - delta),
        ((1.0 - p) * q, -e - delta),
        ((1.0 - p) * (1.0 - q), -delta),
    ];
    let slope = |l: f64| {
        atoms
            .iter()
            .map(|(w, v)| w * v / (1.0 + l * v))
            .sum::<f64>()
    };
    let growth = |l: f64| atoms.iter().map(|(w, v)| w * (l * v).ln_1p()).sum::<f64>();
    let (mut lo, mut hi) = (0.0, (1.0 - 1e-9) / (e + delta));
    if slope(hi) >= 0.0 {
        return (hi, growth(hi));
    }
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if slope(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo, growth(lo))
}

/// Best threshold for one score: sorted (descending) training scores `sa` of the betting side
/// and `sb` of the other side. Returns (t, λ*, growth).
fn best_threshold(
    sa: &[f64],
    na: usize,
    sb: &[f64],
    nb: usize,
    e: f64,
    delta: f64,
) -> Option<(f64, f64, f64)> {
    let (na, nb) = (na as f64, nb as f64);
    let count_ge = |v: &[f64], t: f64| v.partition_point(|&x| x >= t) as f64;
    let mut best: Option<(f64, f64, f64)> = None;
    let mut rank = 1.0_f64;
    let mut last_t = f64::NAN;
    while (rank as usize) <= sa.len() {
        let t = sa[rank as usize - 1];
        rank = (rank * 1.02).max(rank + 1.0);
        if t == last_t || t == f64::NEG_INFINITY {
            continue;
        }
        last_t = t;
        let p = count_ge(sa, t) / (na + 1.0);
        let q = (count_ge(sb, t) + 1.0) / (nb + 1.0);
        let (lambda, g) = kelly(p, q, e, delta);
        if g > 0.0 && best.is_none_or(|(_, _, bg)| g > bg) {
            best = Some((t, lambda, g));
        }
    }
    best
}

/// One wealth process.
struct Component {
    epsilon: f64,
    /// e^ε rounded up.
    e_eps: f64,
    delta: f64,
    reversed: bool,
    log_wealth: f64,
    abs_sum: f64,
    /// Index into the direction's candidate scores, threshold, bet.
    bet: Option<(usize, f64, f64)>,
    last_event: Option<String>,
}

impl Component {
    /// ln K rounded down (see the module docs, Arithmetic).
    fn safe_log_wealth(&self) -> f64 {
        self.log_wealth - (1e-8 * self.abs_sum + 1e-12)
    }
}

/// The first `k` releases of `s` (all of them if there are fewer).
fn first_rows(s: Samples, k: usize) -> Result<Samples> {
    if s.n() <= k {
        return Ok(s);
    }
    Ok(Samples::new(
        s.values().slice(ndarray::s![..k, ..]).to_owned(),
    )?)
}

/// ln((1/C) Σ_c e^{x_c}), rounded down by a margin covering the rounding of the sum.
fn log_mean_exp(xs: &[f64]) -> f64 {
    let m = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let s: f64 = xs.iter().map(|x| (x - m).exp()).sum();
    let v = m + (s / xs.len() as f64).ln();
    v - 1e-12 * (1.0 + v.abs())
}

/// Audits `claim` for `mechanism` on `pair` sequentially; see the module docs for the guarantee.
pub fn audit_sequential(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    pair: &DatasetPair,
    config: &SequentialConfig,
) -> Result<SequentialReport> {
    let start = Instant::now();
    config.validate(mechanism.output_dim())?;
    let claim = claim.validated()?;
    if pair.relation() != mechanism.neighboring() {
        return Err(Error::InvalidConfig(format!(
            "the pair is {} neighbors but {} states its claim for {} neighbors",
            pair.relation(),
            mechanism.id(),
            mechanism.neighboring()
        )));
    }
    let domain = mechanism.domain();
    domain.check(pair.first())?;
    domain.check(pair.second())?;
    let seed = Seed(config.seed);
    let chunk = chunk_len(mechanism);
    let draw = |batch: usize, len: usize, side: Side| -> Result<(Samples, u64)> {
        let d = match side {
            Side::First => pair.first(),
            Side::Second => pair.second(),
        };
        let s = sample_parallel(
            mechanism,
            d,
            len,
            seed,
            Stream::Confirm {
                trial: TRIAL_BASE + batch as u64,
                side,
                chunk: 0,
            },
        )?;
        Ok((s, len.div_ceil(chunk) as u64))
    };
    let info = MechanismInfo {
        id: mechanism.id().to_string(),
        claim,
        claim_source: mechanism.claim_source(),
        neighboring: mechanism.neighboring(),
        catalogue_status: None,
        setting: mechanism.setting(),
        privacy_unit: mechanism.privacy_unit(),
        scope: mechanism.dp_fy_scope(),
    };
    let mut r = betting_test(&draw, info, config, start)?;
    r.pair = Some(pair.clone());
    Ok(r)
}

/// The sequential test on releases read elsewhere (`audit test --sequential`): side a's and
/// side b's releases are taken in their order, batch after batch, so the test stops after the
/// fewest releases that establish a violation; at most the smaller side's count per side. The
/// releases of each side must be i.i.d. and the sides independent (as for every bound on
/// release files); the guarantee is the same as [`audit_sequential`]'s.
pub fn audit_sequential_samples(
    a: &Samples,
    b: &Samples,
    info: MechanismInfo,
    files: crate::record::SampleFiles,
    config: &SequentialConfig,
) -> Result<SequentialReport> {
    let start = Instant::now();
    if a.dim() != b.dim() {
        return Err(Error::InvalidConfig(format!(
            "the sides' releases have dimensions {} and {}; allowed: the same dimension",
            a.dim(),
            b.dim()
        )));
    }
    let available = a.n().min(b.n());
    let config = SequentialConfig {
        max_samples_per_side: config.max_samples_per_side.min(available),
        ..config.clone()
    };
    if config.first_batch >= config.max_samples_per_side {
        return Err(Error::InvalidConfig(format!(
            "{available} releases on the smaller side, not more than the first (training-only) batch of {}; allowed: more releases per side than --first-batch",
            config.first_batch
        )));
    }
    // Batch b holds the releases schedule[b − 1]..schedule[b] of each side (batch 0 from 0).
    let schedule = config.schedule();
    let draw = |batch: usize, len: usize, side: Side| -> Result<(Samples, u64)> {
        let from = if batch == 0 { 0 } else { schedule[batch - 1] };
        let s = match side {
            Side::First => a,
            Side::Second => b,
        };
        let rows = s
            .values()
            .slice(ndarray::s![from..from + len, ..])
            .to_owned();
        Ok((Samples::new(rows)?, 0))
    };
    let mut r = betting_test(&draw, info, &config, start)?;
    r.sample_files = Some(files);
    Ok(r)
}

/// The betting test itself (see the module docs) on batches from `draw(batch, len, side)`:
/// batch 0 holds the first `schedule[0]` releases of a side, batch b + 1 the releases
/// `schedule[b]..schedule[b + 1]`; `draw` also returns the mechanism calls it made.
fn betting_test(
    draw: &dyn Fn(usize, usize, Side) -> Result<(Samples, u64)>,
    info: MechanismInfo,
    config: &SequentialConfig,
    start: Instant,
) -> Result<SequentialReport> {
    let mut comps = components(&info.claim, config.max_samples_per_side)?;
    let c = comps.len();
    let beta = config.failure_probability;
    // ln(1/β), rounded up; the mixture is compared with it.
    let log_threshold = (-beta.ln() * (1.0 + 1e-12)).next_up();

    let schedule = config.schedule();
    let (mut p, calls_p) = draw(0, schedule[0], Side::First)?;
    let (mut q, calls_q) = draw(0, schedule[0], Side::Second)?;
    let mut mechanism_calls = calls_p + calls_q;
    let mut batches = vec![BatchRecord {
        samples_per_side: schedule[0],
        log_wealth: 0.0,
    }];
    let mut stopping_time = None;
    let mut mixture = 0.0;
    let mut logs = vec![0.0; c];
    let mut drawn = schedule[0];

    for (b, window) in schedule.windows(2).enumerate() {
        let (done, end) = (window[0], window[1]);
        // 1. Choose events and bets on releases 1..done only.
        let cands = choose_bets(&mut comps, &p, &q);
        // 2. Draw the next batch (never seen by step 1) and bet on it, pair by pair.
        let len = end - done;
        let (xb, calls_x) = draw(b + 1, len, Side::First)?;
        let (yb, calls_y) = draw(b + 1, len, Side::Second)?;
        mechanism_calls += calls_x + calls_y;
        let stop = bet_on_batch(
            &mut comps,
            &cands,
            (&xb, &yb, len),
            &mut logs,
            &mut mixture,
            log_threshold,
        );
        stopping_time = stop.map(|i| done + i + 1);
        drawn = end;
        batches.push(BatchRecord {
            samples_per_side: end,
            log_wealth: mixture,
        });
        if stopping_time.is_some() {
            break;
        }
        if p.n() < MAX_SELECTION_ROWS {
            p = first_rows(Samples::concat(&[p, xb])?, MAX_SELECTION_ROWS)?;
            q = first_rows(Samples::concat(&[q, yb])?, MAX_SELECTION_ROWS)?;
        }
    }

    let verdict = if stopping_time.is_some() {
        Verdict::Violation
    } else {
        Verdict::NoViolation
    };
    Ok(SequentialReport {
        schema_version: SCHEMA_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        mode: "sequential".into(),
        mechanism: info,
        pair: None,
        sample_files: None,
        seed: config.seed,
        failure_probability: beta,
        max_samples_per_side: config.max_samples_per_side,
        first_batch: config.first_batch,
        samples_per_side: drawn,
        mechanism_calls,
        stopping_time,
        log_wealth: mixture,
        log_threshold,
        verdict,
        components: component_records(&comps),
        batches,
        inequality: format!(
            "Ville's inequality for the nonnegative supermartingale M_t = (1/{c}) Σ_c Π_i (1 + λ_i (Z_i − δ_c)), Z_i = 1{{X_i ∈ S_i}} − e^ε·1{{Y_i ∈ S_i}}, over {c} process(es) ({} ε × 2 directions), events S_i and bets λ_i < 1/(e^ε + δ) chosen from earlier releases only: P(sup_t M_t ≥ 1/β) ≤ β = {beta} for a mechanism that keeps its claim on this pair (i.i.d. releases, independent sides)",
            c / 2
        ),
        output_transform: None,
        wall_time_seconds: Some(start.elapsed().as_secs_f64()),
        reproduce: None,
    })
}

/// The betting processes of `claim`: one per hockey-stick ε it bounds (planned for
/// `max_samples` releases per side) and direction, each starting with wealth 1.
fn components(claim: &PrivacyClaim, max_samples: usize) -> Result<Vec<Component>> {
    let plan = HockeyStickTester::default().plan(claim, max_samples)?;
    let mut comps = Vec::new();
    for d in &plan {
        let Divergence::HockeyStick { epsilon } = *d else {
            continue;
        };
        let Some(delta) = allowed(claim, d) else {
            continue;
        };
        for reversed in [false, true] {
            comps.push(Component {
                epsilon,
                e_eps: (epsilon.exp() * (1.0 + 1e-15)).next_up(),
                delta,
                reversed,
                log_wealth: 0.0,
                abs_sum: 0.0,
                bet: None,
                last_event: None,
            });
        }
    }
    if comps.is_empty() {
        return Err(Error::ClaimNotTestable {
            tester: "sequential".into(),
            claim: claim.to_string(),
            reason: "the claim bounds no hockey-stick divergence".into(),
        });
    }
    Ok(comps)
}

/// Step 1: each process's event and bet for the next batch, chosen on the releases so far
/// (`p`, `q`) only; returns each direction's candidate scores, which the bets index.
fn choose_bets(comps: &mut [Component], p: &Samples, q: &Samples) -> [Vec<Score>; 2] {
    let c = comps.len();
    let mut cands: [Vec<Score>; 2] = [Vec::new(), Vec::new()];
    for (di, reversed) in [false, true].into_iter().enumerate() {
        let (a, o) = if reversed { (q, p) } else { (p, q) };
        let cand = candidates(a, o);
        let list = cand.scores;
        let mut best: Vec<Option<(usize, f64, f64, f64)>> = vec![None; c];
        for (si, score) in list.iter().enumerate() {
            let sa = training_scores(score, a, &cand.ranks_a);
            let so = training_scores(score, o, &cand.ranks_b);
            for (ci, comp) in comps.iter().enumerate() {
                if comp.reversed != reversed {
                    continue;
                }
                if let Some((t, lambda, g)) =
                    best_threshold(&sa, a.n(), &so, o.n(), comp.e_eps, comp.delta)
                    && best[ci].is_none_or(|bb| g > bb.3)
                {
                    best[ci] = Some((si, t, lambda, g));
                }
            }
        }
        for (ci, comp) in comps.iter_mut().enumerate() {
            if comp.reversed != reversed {
                continue;
            }
            comp.bet = best[ci].map(|(si, t, lambda, _)| {
                let cap = (1.0 - 1e-9) / (comp.e_eps + comp.delta);
                (si, t, (KELLY_FRACTION * lambda).min(cap))
            });
            if let Some((si, t, _)) = comp.bet {
                comp.last_event = Some(list[si].describe(t));
            }
        }
        cands[di] = list;
    }
    cands
}

/// Step 2: bets on the new batch `(xb, yb)` of `len` releases per side, pair by pair, updating each process's wealth and
/// the mixture; the position in the batch at which the mixture reached `log_threshold`.
fn bet_on_batch(
    comps: &mut [Component],
    cands: &[Vec<Score>; 2],
    (xb, yb, len): (&Samples, &Samples, usize),
    logs: &mut [f64],
    mixture: &mut f64,
    log_threshold: f64,
) -> Option<usize> {
    // Score vectors of the new batch, per (direction, score) in use.
    let mut cache: HashMap<(usize, usize), (Vec<f64>, Vec<f64>)> = HashMap::new();
    for comp in comps.iter() {
        if let Some((si, _, _)) = comp.bet {
            let di = usize::from(comp.reversed);
            cache.entry((di, si)).or_insert_with(|| {
                let (a, o) = if comp.reversed { (yb, xb) } else { (xb, yb) };
                (cands[di][si].eval_all(a), cands[di][si].eval_all(o))
            });
        }
    }
    for i in 0..len {
        for (ci, comp) in comps.iter_mut().enumerate() {
            if let Some((si, t, lambda)) = comp.bet {
                let (sa, so) = &cache[&(usize::from(comp.reversed), si)];
                let z =
                    f64::from(u8::from(sa[i] >= t)) - comp.e_eps * f64::from(u8::from(so[i] >= t));
                let term = (lambda * (z - comp.delta)).ln_1p();
                comp.log_wealth += term;
                comp.abs_sum += term.abs();
            }
            logs[ci] = comp.safe_log_wealth();
        }
        *mixture = log_mean_exp(logs);
        if *mixture >= log_threshold {
            return Some(i);
        }
    }
    None
}

/// Each process's record: its divergence and direction, final wealth, last event and bet.
fn component_records(comps: &[Component]) -> Vec<ComponentRecord> {
    comps
        .iter()
        .map(|comp| ComponentRecord {
            divergence: Divergence::HockeyStick {
                epsilon: comp.epsilon,
            },
            direction: if comp.reversed {
                Direction::SecondVsFirst
            } else {
                Direction::FirstVsSecond
            },
            allowed: comp.delta,
            log_wealth: comp.safe_log_wealth(),
            last_event: comp.last_event.clone(),
            last_bet: comp.bet.map_or(0.0, |b| b.2),
        })
        .collect()
}

/// Renders a sequential report as the text `audit run --sequential` prints.
pub fn render_text(r: &SequentialReport) -> String {
    let mut s = String::new();
    let status = r
        .mechanism
        .catalogue_status
        .as_deref()
        .map(|w| format!(" ({w})"))
        .unwrap_or_default();
    let _ = writeln!(s, "mechanism    {}{status}", r.mechanism.id);
    let _ = writeln!(
        s,
        "claim        {} ({})",
        r.mechanism.claim, r.mechanism.claim_source
    );
    if let Some(pair) = &r.pair {
        let [d, d2] = pair.short_sides();
        let _ = writeln!(s, "pair         D  = {d}");
        let _ = writeln!(s, "             D' = {d2}");
    }
    if let Some(f) = &r.sample_files {
        let _ = writeln!(
            s,
            "releases     read from files, in their order: A = {} ({} releases), B = {} ({} releases)",
            f.a, f.samples_a, f.b, f.samples_b
        );
    }
    if let Some(t) = &r.output_transform {
        let _ = writeln!(
            s,
            "transform    {t}: {} (a fixed post-processing: a violation on it is a violation of the mechanism)",
            t.describe()
        );
    }
    let _ = writeln!(
        s,
        "mode         sequential (anytime-valid betting e-process): first batch {}, doubling, at most {} per side, seed {}",
        r.first_batch, r.max_samples_per_side, r.seed
    );
    let _ = writeln!(
        s,
        "samples      {} per side drawn ({} mechanism calls)",
        r.samples_per_side, r.mechanism_calls
    );
    let _ = writeln!(
        s,
        "wealth       ln M = {:.4} vs ln(1/β) = {:.4} (β = {}); {} process(es) averaged",
        r.log_wealth,
        r.log_threshold,
        r.failure_probability,
        r.components.len()
    );
    let best = r
        .components
        .iter()
        .max_by(|a, b| a.log_wealth.total_cmp(&b.log_wealth));
    if let Some(b) = best {
        let dir = match b.direction {
            Direction::FirstVsSecond => "M(D) ‖ M(D')",
            Direction::SecondVsFirst => "M(D') ‖ M(D)",
            Direction::Larger => "the larger direction",
        };
        let _ = writeln!(
            s,
            "best         {} ({dir}), allowed {:.3e}: ln K = {:.4}; last event: {}",
            b.divergence,
            b.allowed,
            b.log_wealth,
            b.last_event.as_deref().unwrap_or("none (never bet)")
        );
    }
    let _ = writeln!(s, "guarantee    {}", r.inequality);
    match r.stopping_time {
        Some(t) => {
            let _ = writeln!(
                s,
                "verdict      violation found: the wealth reached 1/β after {t} releases per side (stopping time {t})"
            );
        }
        None => {
            let _ = writeln!(
                s,
                "verdict      no violation found: the wealth never reached 1/β in {} releases per side. This does not show the claim holds: only this pair and these samples were tried",
                r.samples_per_side
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_doubles_and_ends_at_the_maximum() {
        let c = SequentialConfig {
            max_samples_per_side: 1000,
            first_batch: 100,
            ..Default::default()
        };
        assert_eq!(c.schedule(), vec![100, 200, 400, 800, 1000]);
        let c = SequentialConfig {
            max_samples_per_side: 800,
            first_batch: 100,
            ..Default::default()
        };
        assert_eq!(c.schedule(), vec![100, 200, 400, 800]);
    }

    #[test]
    fn bad_settings_are_errors() {
        let ok = SequentialConfig::default();
        assert!(ok.validate(1).is_ok());
        for bad in [
            SequentialConfig {
                first_batch: 5,
                ..ok.clone()
            },
            SequentialConfig {
                max_samples_per_side: 2 * DEFAULT_FIRST_BATCH - 1,
                ..ok.clone()
            },
            SequentialConfig {
                failure_probability: 1.0,
                ..ok.clone()
            },
            SequentialConfig {
                max_samples_per_side: MAX_SAMPLES_PER_SIDE + 1,
                ..ok.clone()
            },
        ] {
            assert!(bad.validate(1).is_err(), "{bad:?}");
        }
    }

    /// The fast path for conditional scores on training rows equals evaluating the score.
    #[test]
    fn conditional_training_scores_match_eval() {
        // Column 0 discrete (3 values), column 1 continuous.
        let rows = |shift: f64| {
            let flat: Vec<f64> = (0..600)
                .flat_map(|i| [f64::from(i % 3), (i as f64 * 0.37 + shift).sin()])
                .collect();
            Samples::from_flat(2, flat).unwrap()
        };
        let (a, b) = (rows(0.0), rows(1.0));
        let cand = candidates(&a, &b);
        let mut conditional = 0;
        for score in &cand.scores {
            let fast = training_scores(score, &a, &cand.ranks_a);
            let mut slow: Vec<f64> = score
                .eval_all(&a)
                .into_iter()
                .filter(|x| *x > f64::NEG_INFINITY)
                .collect();
            slow.sort_by(|x, y| y.total_cmp(x));
            assert_eq!(fast, slow, "{score:?}");
            conditional += usize::from(matches!(score, Score::Conditional { .. }));
        }
        assert_eq!(conditional, 3 * 2);
    }

    /// The Kelly bet keeps every factor positive and is 0 when the plug-in mean is ≤ δ.
    #[test]
    fn kelly_bet_is_admissible() {
        assert_eq!(kelly(0.3, 0.2, 1.0f64.exp(), 0.0), (0.0, 0.0));
        for (p, q, e, d) in [
            (0.9, 0.01, 1.0f64.exp(), 0.0),
            (0.999, 1e-4, 1.0, 1e-5),
            (0.5, 0.1, 2.0, 0.01),
        ] {
            let (l, g) = kelly(p, q, e, d);
            assert!(
                l > 0.0 && l < 1.0 / (e + d) && g > 0.0,
                "{p} {q} {e} {d}: {l} {g}"
            );
        }
    }
}
