//! Histogram tester: Gilbert & McMillan (2018), "Property testing for differential privacy"
//! (Allerton; arXiv:1806.06427), Algorithm 2, made sound for a fixed failure probability, plus a
//! held-out event on the same histogram. Bounds the hockey-stick divergence H_{e^ε}(P ‖ Q).
//!
//! Outputs are put into cells: discrete coordinates by value, continuous coordinates by
//! quantile bins of the pooled training values (with extra edges toward both tails, where privacy
//! violations live). The cells are a fixed function T of the output, chosen on the training split.
//! By data processing (T is post-processing), for the binned distributions p_i = P(T = i),
//! q_i = Q(T = i),
//!
//! H_{e^ε}(P ‖ Q) ≥ H_bin := Σ_i (p_i − e^ε q_i)₊ = max over unions S of cells of p(S) − e^ε q(S).
//!
//! Two lower bounds on H_bin are computed on the held-out split, each with its share of β, and
//! the larger is reported.
//!
//! # Inequality
//! (a) **Gilbert–McMillan plug-in.** With held-out frequencies p̂, q̂ over k cells (the cells seen
//! in training plus one cell for everything else) and Ŝ = {i : p̂_i > e^ε q̂_i},
//! Ĥ = Σ_i (p̂_i − e^ε q̂_i)₊ = p̂(Ŝ) − e^ε q̂(Ŝ), and
//! H_bin ≥ p(Ŝ) − e^ε q(Ŝ) ≥ Ĥ − TV(p̂, p) − e^ε TV(q̂, q), TV = ½‖·‖₁ = sup over unions S.
//! The deviation of TV(p̂, p) (m samples): E TV ≤ ½ Σ_i √(p_i(1 − p_i)/m) ≤ ½√((k − 1)/m)
//! (Jensen, then Cauchy–Schwarz with Σ p_i(1 − p_i) ≤ 1 − 1/k), and TV changes by at most 1/m when
//! one sample changes, so McDiarmid's inequality gives TV ≤ ½√((k − 1)/m) + √(ln(1/a)/(2m)) with
//! probability ≥ 1 − a. DP-Auditorium's "improved error term" is the same shape with Σ√p̂_i in place
//! of √k; plugging in the estimate p̂ for the unknown p is not a bound, so the distribution-free
//! worst case √(k − 1) is used here. The term grows with √k: this bound only catches gross
//! violations; (b) is the powerful one.
//!
//! (b) **Held-out event.** Cells are ranked by their smoothed estimated log-likelihood ratio on
//! the first half of the training split, and the top cells form the event S = {score ≥ t}, t
//! chosen on the second half by the bound predicted for the held-out sizes (fitting and choosing
//! on separate halves keeps noisy cells out of the event). On held-out data, with exact one-sided Clopper–Pearson bounds,
//! L = CP_lower(k_P) − e^ε CP_upper(k_Q) ≤ P(S) − e^ε Q(S) ≤ H_{e^ε}(P ‖ Q).
//!
//! # Guarantee
//! Each side is split into a training part (the first `train_fraction`) and a held-out part of
//! sizes m_P, m_Q. The binnings of (a) and (b) (resolution 2 to 256 target cells, and for
//! 1 < d ≤ 16 whether to bin all coordinates jointly or one coordinate), the ranking and t are
//! functions of the training part only, hence independent of the held-out part. On it:
//! - (a) holds with probability ≥ 1 − β_a (β_a/2 for each side's TV deviation);
//! - (b) holds with probability ≥ 1 − β_b (β_b/2 for each Clopper–Pearson bound);
//!
//! with β_a = `gm_share`·β and β_b = β − β_a, so both hold, and their maximum is
//! ≤ H_{e^ε}(P ‖ Q), with probability ≥ 1 − β (union bound). Values are floored at 0 and rounded
//! down.
//!
//! # Assumptions
//! Releases are i.i.d. within each side and the sides are independent. Nothing is assumed about
//! the output distribution (the bounds are distribution-free; (b) is exact-binomial, valid for rare
//! events).
//!
//! # β
//! β_a = 0.1·β to the Gilbert–McMillan bound (0.05·β per side), β_b = 0.9·β to the event bound
//! (0.45·β per side). All choices are made on the training split and cost nothing.

use std::collections::HashMap;

use ndarray::ArrayView1;
use rand::Rng;

use rayon::prelude::*;

use super::common::{
    HeldOutEvent, KeyMap, best_threshold, check_fraction, coordinate_kinds, hockey_stick_epsilon,
    hockey_stick_plan, mix, sorted_desc, train_rows,
};
use super::{Divergence, Measurement, PropertyTester, check_inputs};
use crate::bounds::normal_upper_quantile;
use crate::error::{Error, Result};
use crate::mechanisms::{PrivacyClaim, Samples};

/// The histogram tester. See the module docs for the guarantee.
#[derive(Clone, Debug)]
pub struct HistogramTester {
    /// Fraction of each side used to choose the bins and the event (the rest bounds). In (0, 1).
    pub train_fraction: f64,
    /// Share of β spent on the Gilbert–McMillan plug-in bound (a); the rest goes to the event
    /// bound (b). In (0, 1).
    pub gm_share: f64,
    /// A coordinate with at most this many distinct training values is treated as discrete.
    pub max_discrete_values: usize,
    /// Number of ε values tested for profile claims (Gaussian DP, zCDP, Rényi).
    pub profile_grid: usize,
}

impl Default for HistogramTester {
    fn default() -> Self {
        Self {
            train_fraction: 0.25,
            gm_share: 0.1,
            max_discrete_values: 64,
            profile_grid: 20,
        }
    }
}

impl HistogramTester {
    /// Validated constructor.
    pub fn new(train_fraction: f64, gm_share: f64, profile_grid: usize) -> Result<Self> {
        check_fraction("train fraction", train_fraction)?;
        check_fraction("Gilbert–McMillan share of β", gm_share)?;
        if profile_grid == 0 {
            return Err(Error::InvalidConfig(
                "profile grid must have at least 1 point".into(),
            ));
        }
        Ok(Self {
            train_fraction,
            gm_share,
            profile_grid,
            ..Self::default()
        })
    }
}

/// A partition of the output space into cells, keyed by a 64-bit hash (a collision merges two
/// cells: still a partition fixed before the held-out data, so still valid).
#[derive(Clone, Debug)]
struct Binning {
    /// Coordinates binned by exact value.
    discrete: Vec<usize>,
    /// Coordinates binned by sorted edges: cell index = number of edges ≤ x.
    continuous: Vec<(usize, Vec<f64>)>,
}

impl Binning {
    fn key(&self, row: &ArrayView1<'_, f64>) -> u64 {
        let mut h = 0x4849_5354_u64;
        for &c in &self.discrete {
            h = mix(h, row[c].to_bits());
        }
        for (c, edges) in &self.continuous {
            let idx = edges.partition_point(|&e| e <= row[*c]) as u64;
            h = mix(h, ((*c as u64) << 32) ^ idx);
        }
        h
    }

    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.discrete.is_empty() {
            parts.push(format!("values of coordinates {:?}", self.discrete));
        }
        for (c, edges) in &self.continuous {
            parts.push(format!(
                "coordinate {c} in {} quantile bins",
                edges.len() + 1
            ));
        }
        parts.join(" × ")
    }
}

/// Edges at the pooled quantiles i/bins, plus 2^{−k} and 1 − 2^{−k} toward the tails down to
/// ~4/N; deduplicated.
fn quantile_edges(sorted: &[f64], bins: usize) -> Vec<f64> {
    let n = sorted.len();
    if n == 0 || bins < 2 {
        return Vec::new();
    }
    let mut levels: Vec<f64> = (1..bins).map(|i| i as f64 / bins as f64).collect();
    let mut t = 0.5 / bins as f64;
    while t * n as f64 >= 4.0 {
        levels.push(t);
        levels.push(1.0 - t);
        t /= 2.0;
    }
    levels.sort_by(f64::total_cmp);
    let mut edges: Vec<f64> = levels
        .into_iter()
        .map(|l| sorted[((n - 1) as f64 * l).round() as usize])
        .collect();
    edges.dedup();
    edges
}

/// Candidate binnings at resolution `cells` (target number of cells).
fn binnings(
    discrete: &[usize],
    continuous: &[usize],
    pooled: &HashMap<usize, Vec<f64>>,
    cells: usize,
    marginals: bool,
) -> Vec<Binning> {
    let mut out = Vec::new();
    let per = if continuous.is_empty() {
        0
    } else {
        ((cells as f64).powf(1.0 / continuous.len() as f64).floor() as usize).max(2)
    };
    out.push(Binning {
        discrete: discrete.to_vec(),
        continuous: continuous
            .iter()
            .map(|&c| (c, quantile_edges(&pooled[&c], per)))
            .collect(),
    });
    if marginals {
        for &c in continuous {
            out.push(Binning {
                discrete: Vec::new(),
                continuous: vec![(c, quantile_edges(&pooled[&c], cells))],
            });
        }
        if discrete.len() > 1 {
            for &c in discrete {
                out.push(Binning {
                    discrete: vec![c],
                    continuous: Vec::new(),
                });
            }
        }
    }
    out
}

/// Cell counts of rows `rows` of s.
fn counts(b: &Binning, s: &Samples, rows: std::ops::Range<usize>) -> KeyMap<u64> {
    let mut c: KeyMap<u64> = KeyMap::default();
    for i in rows {
        *c.entry(b.key(&s.row(i))).or_default() += 1;
    }
    c
}

/// Upper bound on TV(p̂, p) for m samples over k cells at failure probability a (rounded up).
fn tv_deviation(k: usize, m: usize, a: f64) -> f64 {
    let m = m as f64;
    let v = 0.5 * ((k.saturating_sub(1)) as f64 / m).sqrt() + ((1.0 / a).ln() / (2.0 * m)).sqrt();
    (v * (1.0 + 1e-12)).next_up()
}

/// Σ_i (p̂_i − e^ε q̂_i)₊ over the union of the keys of both count tables.
fn plug_in(cp: &KeyMap<u64>, np: usize, cq: &KeyMap<u64>, nq: usize, e_eps: f64) -> f64 {
    let mut total = 0.0;
    for (k, &a) in cp {
        let b = cq.get(k).copied().unwrap_or(0);
        let d = a as f64 / np as f64 - e_eps * b as f64 / nq as f64;
        if d > 0.0 {
            total += d;
        }
    }
    total
}

impl PropertyTester for HistogramTester {
    fn name(&self) -> &'static str {
        "histogram"
    }

    fn describe(&self) -> String {
        format!(
            "histogram: cells chosen on a {:.0}% training split; (a) Gilbert–McMillan plug-in Σ(p̂ − e^ε q̂)₊ minus a McDiarmid TV term at {:.0}% of β; (b) the top cells by estimated likelihood ratio as one event, Clopper–Pearson on held-out data; the larger is reported",
            self.train_fraction * 100.0,
            self.gm_share * 100.0
        )
    }

    fn plan(&self, claim: &PrivacyClaim, samples_per_side: usize) -> Result<Vec<Divergence>> {
        hockey_stick_plan(self.name(), claim, samples_per_side, self.profile_grid)
    }

    fn lower_bound(
        &self,
        p: &Samples,
        q: &Samples,
        divergence: Divergence,
        failure_probability: f64,
        _rng: &mut dyn Rng,
    ) -> Result<Measurement> {
        let epsilon = hockey_stick_epsilon(self.name(), divergence)?;
        check_fraction("train fraction", self.train_fraction)?;
        check_fraction("Gilbert–McMillan share of β", self.gm_share)?;
        check_inputs(p, q, failure_probability, 20)?;
        let e_eps = epsilon.exp();
        let beta_a = failure_probability * self.gm_share;
        let half_a = beta_a / 2.0;
        let half_b = (failure_probability - beta_a) / 2.0;
        let z = normal_upper_quantile(half_b);
        let np = train_rows(p.n(), self.train_fraction);
        let nq = train_rows(q.n(), self.train_fraction);
        let split = Split {
            np,
            nq,
            ap: (np / 2).max(1),
            aq: (nq / 2).max(1),
            m_p: p.n() - np,
            m_q: q.n() - nq,
        };
        let (m_p, m_q) = (split.m_p, split.m_q);
        let all = candidate_binnings(p, np, q, nq, self.max_discrete_values);

        // Choose (a)'s binning and (b)'s binning and event on the training rows only
        // (candidates evaluated in parallel, then reduced in order: deterministic).
        let evaluated: Vec<Evaluated> = all
            .par_iter()
            .map(|(_, b)| evaluate_binning(b, p, q, &split, e_eps, half_a, z))
            .collect();
        let Some(Chosen {
            a: ia,
            b: ib,
            table,
            t,
        }) = best_binnings(evaluated)
        else {
            return Err(Error::InvalidSamples(
                "no candidate histogram could be formed".into(),
            ));
        };

        // (a) On held-out rows: cells seen in training, plus one cell for the rest.
        let bin_a = &all[ia].1;
        let GilbertMcMillan {
            value: value_a,
            point: gm_point,
            cells: k_a,
            tv_p,
            tv_q,
        } = gilbert_mcmillan(bin_a, p, q, &split, e_eps, half_a);

        // (b) The event on held-out rows.
        let bin_b = &all[ib].1;
        let score = |row: &ArrayView1<'_, f64>| *table.get(&bin_b.key(row)).unwrap_or(&0.0);
        let (k_p, k_q) = rayon::join(
            || (np..p.n()).filter(|&i| score(&p.row(i)) >= t).count() as u64,
            || (nq..q.n()).filter(|&i| score(&q.row(i)) >= t).count() as u64,
        );
        let held_out = HeldOutEvent::bound(k_p, m_p, k_q, m_q, half_b);
        let value_b = held_out.hockey_stick(e_eps);
        let point_estimate = held_out.hockey_stick_point(e_eps);
        let n_cells = table.values().filter(|&&v| v >= t).count();

        Ok(Measurement {
            value: value_a.max(value_b),
            point_estimate,
            inequality: format!(
                "max of two bounds on H_e^ε(P‖Q) ≥ Σ_i (P(cell i) − e^ε Q(cell i))₊ (data processing; cells fixed on the training split), union bound over β = {failure_probability:.3e}: \
                 (b) P(S) − e^ε·Q(S) for the union S of the cells with the highest estimated likelihood ratio, one-sided Clopper–Pearson bounds at β_b/2 = {half_b:.3e} each on {m_p} + {m_q} held-out samples: {value_b:.6e}; \
                 (a) Gilbert–McMillan plug-in Σ(p̂ − e^ε q̂)₊ = {gm_point:.4e} over {k_a} cells ({}) minus TV(p̂,p) + e^ε·TV(q̂,q) ≤ {tv_p:.3e} + e^ε·{tv_q:.3e} (E TV ≤ ½√((k−1)/m), McDiarmid at β_a/2 = {half_a:.3e} each): {value_a:.6e}. Assumes i.i.d. samples, sides independent.",
                bin_a.describe()
            ),
            event: Some(held_out.event(format!(
                "{} cells of ({}) whose estimated log-likelihood ratio is ≥ {t:.4}",
                n_cells,
                bin_b.describe()
            ))),
        })
    }
}

/// Every candidate binning, (cells per continuous coordinate, binning), from the training rows
/// `0..np` of `p` and `0..nq` of `q` (at most `max_discrete_values` values make a coordinate
/// discrete): quantile edges of the pooled continuous coordinates at 2 to 256 cells (only 2
/// without continuous coordinates), or the single cell when every coordinate is constant and
/// equal on both sides.
fn candidate_binnings(
    p: &Samples,
    np: usize,
    q: &Samples,
    nq: usize,
    max_discrete_values: usize,
) -> Vec<(usize, Binning)> {
    let (discrete, continuous) = coordinate_kinds(p, np, q, nq, max_discrete_values);
    let mut pooled: HashMap<usize, Vec<f64>> = HashMap::new();
    for &c in &continuous {
        let mut v: Vec<f64> = (0..np)
            .map(|i| p.values()[[i, c]])
            .chain((0..nq).map(|i| q.values()[[i, c]]))
            .collect();
        v.sort_by(f64::total_cmp);
        pooled.insert(c, v);
    }
    let marginals = p.dim() > 1 && p.dim() <= 16;
    let mut all: Vec<(usize, Binning)> = Vec::new();
    for cells in [2usize, 4, 8, 16, 32, 64, 128, 256] {
        for b in binnings(&discrete, &continuous, &pooled, cells, marginals) {
            all.push((cells, b));
        }
    }
    if continuous.is_empty() {
        // Resolution is irrelevant without continuous coordinates.
        all.retain(|(c, _)| *c == 2);
    }
    if all
        .iter()
        .all(|(_, b)| b.discrete.is_empty() && b.continuous.is_empty())
    {
        // Every coordinate constant and equal on both sides: the single cell gives 0.
        all = vec![(
            1,
            Binning {
                discrete: vec![0],
                continuous: Vec::new(),
            },
        )];
    }
    all
}

/// The rows of one audit: training rows `0..np` and `0..nq` (their first halves `0..ap`, `0..aq`
/// fit (b)'s table), `m_p` and `m_q` held-out rows after them.
struct Split {
    np: usize,
    nq: usize,
    ap: usize,
    aq: usize,
    m_p: usize,
    m_q: usize,
}

/// One binning judged on the training rows: (a)'s predicted bound, and (b)'s table, threshold
/// and predicted bound when a threshold could be chosen.
type Evaluated = (f64, Option<(KeyMap<f64>, f64, f64)>);

/// Judges binning `b` on the training rows: (a) the plug-in on the whole training split minus
/// the penalty at held-out sizes; (b) smoothed log ratios on the first half of the training
/// rows, the threshold chosen on the second half.
fn evaluate_binning(
    b: &Binning,
    p: &Samples,
    q: &Samples,
    split: &Split,
    e_eps: f64,
    half_a: f64,
    z: f64,
) -> Evaluated {
    let Split {
        np,
        nq,
        ap,
        aq,
        m_p,
        m_q,
    } = *split;
    // (a): plug-in on the whole training split minus the penalty at held-out sizes.
    let cp = counts(b, p, 0..np);
    let cq = counts(b, q, 0..nq);
    let k = cp.keys().filter(|k| !cq.contains_key(k)).count() + cq.len() + 1;
    let pred_a = plug_in(&cp, np, &cq, nq, e_eps)
        - tv_deviation(k, m_p, half_a)
        - e_eps * tv_deviation(k, m_q, half_a);
    // (b): smoothed log ratios on the first half of the training rows, threshold on
    // the second half.
    let cp = counts(b, p, 0..ap);
    let cq = counts(b, q, 0..aq);
    let cells = cp.keys().filter(|k| !cq.contains_key(k)).count() + cq.len();
    let a = cells as f64;
    let lr = |x: u64, y: u64| {
        ((x as f64 + 0.5) / (ap as f64 + 0.5 * a)).ln()
            - ((y as f64 + 0.5) / (aq as f64 + 0.5 * a)).ln()
    };
    let mut table: KeyMap<f64> = KeyMap::default();
    for (key, &x) in &cp {
        table.insert(*key, lr(x, cq.get(key).copied().unwrap_or(0)));
    }
    for (key, &y) in &cq {
        table.entry(*key).or_insert_with(|| lr(0, y));
    }
    let score = |row: &ArrayView1<'_, f64>| *table.get(&b.key(row)).unwrap_or(&0.0);
    let sp = sorted_desc((ap..np).map(|i| score(&p.row(i))).collect());
    let sq = sorted_desc((aq..nq).map(|i| score(&q.row(i))).collect());
    let choice = best_threshold(&sp, &sq, m_p as f64, m_q as f64, z, |pl, qu| {
        pl - e_eps * qu
    });
    (pred_a, choice.map(|(t, pred)| (table, t, pred)))
}

/// The binnings chosen on the training rows: (a)'s index, and (b)'s index, table and threshold.
struct Chosen {
    a: usize,
    b: usize,
    table: KeyMap<f64>,
    t: f64,
}

/// The binnings with the largest predictions, in candidate order (the first of equal ones
/// wins); `None` when (b) has none.
fn best_binnings(evaluated: Vec<Evaluated>) -> Option<Chosen> {
    let mut best_a: Option<(usize, f64)> = None;
    let mut best_b: Option<(usize, KeyMap<f64>, f64, f64)> = None;
    for (idx, (pred_a, b)) in evaluated.into_iter().enumerate() {
        if best_a.is_none_or(|(_, v)| pred_a > v) {
            best_a = Some((idx, pred_a));
        }
        if let Some((table, t, pred)) = b
            && best_b.as_ref().is_none_or(|c| pred > c.3)
        {
            best_b = Some((idx, table, t, pred));
        }
    }
    match (best_a, best_b) {
        (Some((a, _)), Some((b, table, t, _))) => Some(Chosen { a, b, table, t }),
        _ => None,
    }
}

/// Part (a)'s bound on the held-out rows: the Gilbert–McMillan plug-in over the cells of
/// `bin_a` seen in training, plus one cell for the rest.
struct GilbertMcMillan {
    /// The plug-in minus both TV deviations, rounded down (0 when not positive).
    value: f64,
    /// The plug-in Σ(p̂ − e^ε q̂)₊.
    point: f64,
    /// Cells: those seen in training, plus one.
    cells: usize,
    /// The TV deviations of each side at β_a/2.
    tv_p: f64,
    tv_q: f64,
}

/// See [`GilbertMcMillan`].
fn gilbert_mcmillan(
    bin_a: &Binning,
    p: &Samples,
    q: &Samples,
    split: &Split,
    e_eps: f64,
    half_a: f64,
) -> GilbertMcMillan {
    let Split {
        np, nq, m_p, m_q, ..
    } = *split;
    let mut seen = counts(bin_a, p, 0..np);
    seen.extend(counts(bin_a, q, 0..nq));
    let other = u64::MAX;
    let lump = |key: u64| {
        if seen.contains_key(&key) { key } else { other }
    };
    let held = |s: &Samples, rows: std::ops::Range<usize>| {
        let mut c: KeyMap<u64> = KeyMap::default();
        for i in rows {
            *c.entry(lump(bin_a.key(&s.row(i)))).or_default() += 1;
        }
        c
    };
    let (hp, hq) = rayon::join(|| held(p, np..p.n()), || held(q, nq..q.n()));
    let k_a = seen.len() + 1;
    let gm_point = plug_in(&hp, m_p, &hq, m_q, e_eps);
    let tv_p = tv_deviation(k_a, m_p, half_a);
    let tv_q = tv_deviation(k_a, m_q, half_a);
    let raw_a = gm_point * (1.0 - 1e-12) - tv_p - e_eps * tv_q * (1.0 + 1e-12);
    GilbertMcMillan {
        value: if raw_a > 0.0 { raw_a.next_down() } else { 0.0 },
        point: gm_point,
        cells: k_a,
        tv_p,
        tv_q,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Seed, Stream};
    use crate::testers::common::fixtures;

    fn gaussian(n: usize, mean: f64, sd: f64, seed: u64) -> Samples {
        fixtures::gaussian(n, mean, sd, seed, 41)
    }

    #[test]
    fn edges_refine_the_tails() {
        let v: Vec<f64> = (0..10_000).map(f64::from).collect();
        let e = quantile_edges(&v, 4);
        assert!(e.contains(&5000.0) && e.len() > 3 + 10, "{e:?}");
        assert!(e.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn gaussian_shift_bound_is_valid_and_tight() {
        let p = gaussian(100_000, 1.0, 1.0, 1);
        let q = gaussian(100_000, 0.0, 1.0, 2);
        let mut rng = Seed(0).rng(Stream::Tester { bound: 0 });
        let m = fixtures::h_at_zero(&HistogramTester::default(), &p, &q, &mut rng);
        assert!(m.value <= 0.382_924_922_548_026 && m.value > 0.36, "{m:?}");
    }

    #[test]
    fn randomized_response_gross_violation_is_caught_by_both_parts() {
        // RR p = 0.9 vs 0.1 at ε = 0: H = 0.8; the Gilbert–McMillan part is positive too.
        let (p, q, mut rng) = fixtures::randomized_response();
        let m = fixtures::h_at_zero(&HistogramTester::default(), &p, &q, &mut rng);
        assert!(m.value <= 0.8 && m.value > 0.77, "{m:?}");
        assert!(
            m.inequality.contains("(a) Gilbert–McMillan"),
            "{}",
            m.inequality
        );
    }
}
