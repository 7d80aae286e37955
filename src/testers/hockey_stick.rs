//! Hockey-stick tester: one event chosen on a training split, bounded on held-out data with exact
//! binomial (Clopper–Pearson) bounds.
//!
//! # Guarantee
//! For any fixed event S, H_{e^ε}(P ‖ Q) = sup_S' P(S') − e^ε Q(S') ≥ P(S) − e^ε Q(S). The tester
//! 1. splits each side's i.i.d. samples into a training part (the first `train_fraction`) and a
//!    held-out part;
//! 2. on the training part only, chooses a *score* s(x) among candidates (each output coordinate
//!    and its negation; for discrete outputs, the estimated log-likelihood ratio of each output
//!    value; for mixed outputs, a coordinate restricted to one pattern of the discrete
//!    coordinates) and a threshold t, maximizing the bound predicted for the held-out sizes;
//! 3. on the held-out part counts k_P = #{x ~ P : s(x) ≥ t} and k_Q likewise, and returns
//!    L = CP_lower(k_P; m_P, β/2) − e^ε · CP_upper(k_Q; m_Q, β/2), floored at 0 and rounded down.
//!
//! Since S = {s ≥ t} is a function of the training part only, it is independent of the held-out
//! part, k_P ~ Bin(m_P, P(S)) and k_Q ~ Bin(m_Q, Q(S)), and by the union bound both
//! Clopper–Pearson bounds hold simultaneously with probability ≥ 1 − β. On that event
//! L ≤ P(S) − e^ε Q(S) ≤ H_{e^ε}(P ‖ Q).
//!
//! # Assumptions
//! Releases are i.i.d. within each side and the sides are independent (the runner draws them from
//! independent ChaCha streams). Nothing is assumed about the output distribution: the bound is
//! exact-binomial, hence valid for rare events (δ ~ 1e-5 and below).

use std::collections::HashMap;

use rand::Rng;

use super::{Divergence, EventBound, Measurement, PropertyTester, Selected, check_inputs};
use crate::bounds::{
    clopper_pearson_lower, clopper_pearson_upper, normal_upper_quantile, wilson_lower, wilson_upper,
};
use crate::error::{Error, Result};
use crate::mechanisms::{PrivacyClaim, Samples};

/// The hockey-stick tester. See the module docs for the guarantee.
#[derive(Clone, Debug)]
pub struct HockeyStickTester {
    /// Fraction of each side used to choose the event (the rest bounds it). In (0, 1).
    pub train_fraction: f64,
    /// A coordinate with at most this many distinct training values is treated as discrete.
    pub max_discrete_values: usize,
    /// Number of ε values tested for profile claims (Gaussian DP, zCDP, Rényi).
    pub profile_grid: usize,
}

impl Default for HockeyStickTester {
    fn default() -> Self {
        Self {
            train_fraction: 0.2,
            max_discrete_values: 64,
            profile_grid: 20,
        }
    }
}

/// A candidate score s(x); the event is {s(x) ≥ t}.
#[derive(Clone, Debug)]
enum Score {
    /// sign · x_j.
    Coordinate { j: usize, sign: f64 },
    /// Estimated log-likelihood ratio of the values of the coordinates `coords` (a table keyed by
    /// their bit patterns); unseen values score 0.
    Atoms {
        coords: Vec<usize>,
        table: HashMap<Vec<u64>, f64>,
    },
    /// sign · x_j when the coordinates `coords` take the values `pattern`, −∞ otherwise.
    Conditional {
        coords: Vec<usize>,
        pattern: Vec<u64>,
        j: usize,
        sign: f64,
    },
}

fn key(row: &ndarray::ArrayView1<'_, f64>, coords: &[usize]) -> Vec<u64> {
    coords.iter().map(|&c| row[c].to_bits()).collect()
}

impl Score {
    fn eval(&self, row: &ndarray::ArrayView1<'_, f64>) -> f64 {
        match self {
            Score::Coordinate { j, sign } => sign * row[*j],
            Score::Atoms { coords, table } => *table.get(&key(row, coords)).unwrap_or(&0.0),
            Score::Conditional {
                coords,
                pattern,
                j,
                sign,
            } => {
                if key(row, coords) == *pattern {
                    sign * row[*j]
                } else {
                    f64::NEG_INFINITY
                }
            }
        }
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
            Score::Atoms { coords, table } => {
                let n = table.values().filter(|&&v| v >= t).count();
                format!(
                    "output values of coordinates {coords:?} among the {n} values whose estimated log-likelihood ratio is ≥ {t:.4}"
                )
            }
            Score::Conditional {
                coords,
                pattern,
                j,
                sign,
            } => {
                let vals: Vec<f64> = pattern.iter().map(|b| f64::from_bits(*b)).collect();
                format!("coordinates {coords:?} = {vals:?} and {}", coord(*j, *sign))
            }
        }
    }
}

fn scores_of(score: &Score, s: &Samples, rows: std::ops::Range<usize>) -> Vec<f64> {
    rows.map(|i| score.eval(&s.row(i))).collect()
}

/// Distinct values (as bits) of coordinate j among rows, up to `cap + 1`.
fn distinct_values(s: &Samples, rows: std::ops::Range<usize>, j: usize, cap: usize) -> usize {
    let mut seen = std::collections::HashSet::new();
    for i in rows {
        seen.insert(s.values()[[i, j]].to_bits());
        if seen.len() > cap {
            break;
        }
    }
    seen.len()
}

/// Smoothed log-likelihood-ratio table of the patterns of `coords` on the training rows.
fn atom_table(
    p: &Samples,
    np: usize,
    q: &Samples,
    nq: usize,
    coords: &[usize],
) -> HashMap<Vec<u64>, f64> {
    let mut counts: HashMap<Vec<u64>, (f64, f64)> = HashMap::new();
    for i in 0..np {
        counts.entry(key(&p.row(i), coords)).or_default().0 += 1.0;
    }
    for i in 0..nq {
        counts.entry(key(&q.row(i), coords)).or_default().1 += 1.0;
    }
    let a = counts.len() as f64;
    counts
        .into_iter()
        .map(|(k, (cp, cq))| {
            let lr = ((cp + 0.5) / (np as f64 + 0.5 * a)).ln()
                - ((cq + 0.5) / (nq as f64 + 0.5 * a)).ln();
            (k, lr)
        })
        .collect()
}

impl HockeyStickTester {
    /// Validated constructor.
    pub fn new(train_fraction: f64, profile_grid: usize) -> Result<Self> {
        if !(train_fraction > 0.0 && train_fraction < 1.0) {
            return Err(Error::InvalidConfig(format!(
                "train fraction {train_fraction}; allowed: strictly between 0 and 1"
            )));
        }
        if profile_grid == 0 {
            return Err(Error::InvalidConfig(
                "profile grid must have at least 1 point".into(),
            ));
        }
        Ok(Self {
            train_fraction,
            profile_grid,
            ..Self::default()
        })
    }

    fn candidates(&self, p: &Samples, np: usize, q: &Samples, nq: usize) -> Vec<Score> {
        let d = p.dim();
        let cap = self.max_discrete_values;
        let mut discrete = Vec::new();
        let mut continuous = Vec::new();
        for j in 0..d {
            let dp = distinct_values(p, 0..np, j, cap);
            let dq = distinct_values(q, 0..nq, j, cap);
            let few = dp.max(dq) <= cap && dp.max(dq) * 10 <= np.min(nq);
            if dp.max(dq) <= 1 {
                // Constant on both sides: no information, unless the constants differ.
                if p.values()[[0, j]].to_bits() != q.values()[[0, j]].to_bits() {
                    discrete.push(j);
                }
                continue;
            }
            if few {
                discrete.push(j);
            } else {
                continuous.push(j);
            }
        }
        let mut out = Vec::new();
        for &j in &continuous {
            for sign in [1.0, -1.0] {
                out.push(Score::Coordinate { j, sign });
            }
        }
        if !discrete.is_empty() {
            out.push(Score::Atoms {
                coords: discrete.clone(),
                table: atom_table(p, np, q, nq, &discrete),
            });
            // Whole-output atoms when the discrete coordinates are not everything but full rows
            // still repeat a lot (e.g. integer-valued outputs with many values).
            if !continuous.is_empty() {
                // Most frequent discrete patterns (pooled), each combined with each continuous
                // coordinate and sign.
                let mut freq: HashMap<Vec<u64>, usize> = HashMap::new();
                for i in 0..np {
                    *freq.entry(key(&p.row(i), &discrete)).or_default() += 1;
                }
                for i in 0..nq {
                    *freq.entry(key(&q.row(i), &discrete)).or_default() += 1;
                }
                let mut patterns: Vec<(usize, Vec<u64>)> =
                    freq.into_iter().map(|(k, c)| (c, k)).collect();
                patterns.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
                for (_, pattern) in patterns.into_iter().take(16) {
                    for &j in &continuous {
                        for sign in [1.0, -1.0] {
                            out.push(Score::Conditional {
                                coords: discrete.clone(),
                                pattern: pattern.clone(),
                                j,
                                sign,
                            });
                        }
                    }
                }
            }
        } else if continuous.is_empty() {
            // Every coordinate constant and equal on both sides: one trivial candidate.
            out.push(Score::Coordinate { j: 0, sign: 1.0 });
        }
        out
    }
}

/// Best threshold for one score on the training split, by the bound predicted for held-out sizes
/// (m_p, m_q) with Wilson approximations at quantile z (selection only; no claim is made here).
fn best_threshold(
    mut sp: Vec<f64>,
    mut sq: Vec<f64>,
    m_p: f64,
    m_q: f64,
    e_eps: f64,
    z: f64,
) -> Option<(f64, f64)> {
    sp.sort_by(|a, b| b.total_cmp(a));
    sq.sort_by(|a, b| b.total_cmp(a));
    let (np, nq) = (sp.len() as f64, sq.len() as f64);
    // Count of sq ≥ t (sq sorted descending).
    let count_ge = |v: &[f64], t: f64| v.partition_point(|&x| x >= t) as f64;
    let mut best: Option<(f64, f64)> = None;
    let mut rank = 1.0_f64;
    let mut last_t = f64::NAN;
    while (rank as usize) <= sp.len() {
        let t = sp[rank as usize - 1];
        rank = (rank * 1.06).max(rank + 1.0);
        if t == last_t || t == f64::NEG_INFINITY {
            continue;
        }
        last_t = t;
        let kp = count_ge(&sp, t);
        let kq = count_ge(&sq, t);
        let pred =
            wilson_lower(kp / np * m_p, m_p, z) - e_eps * wilson_upper(kq / nq * m_q, m_q, z);
        if best.is_none_or(|(_, b)| pred > b) {
            best = Some((t, pred));
        }
    }
    best
}

impl PropertyTester for HockeyStickTester {
    fn name(&self) -> &'static str {
        "hockey-stick"
    }

    fn describe(&self) -> String {
        format!(
            "hockey-stick: event chosen on a {:.0}% training split, bounded on held-out data by one-sided Clopper–Pearson bounds (union bound over P and Q)",
            self.train_fraction * 100.0
        )
    }

    fn plan(&self, claim: &PrivacyClaim, samples_per_side: usize) -> Result<Vec<Divergence>> {
        if let Some(epsilon) = claim.natural_epsilon() {
            return Ok(vec![Divergence::HockeyStick { epsilon }]);
        }
        // Profile-like claims: an evenly spaced grid of ε on (0, ε_max], where ε_max is the
        // largest ε (≤ 20) at which the claim still allows δ ≥ 1/(10·n): beyond it no event seen
        // in n samples can show a violation. The grid depends only on the claim and n.
        let floor = 0.1 / samples_per_side.max(1) as f64;
        let allows = |e: f64| claim.delta_at(e).unwrap_or(0.0);
        let mut eps_max = 20.0;
        if allows(eps_max) < floor {
            let (mut lo, mut hi) = (0.0, 20.0);
            for _ in 0..60 {
                let mid = 0.5 * (lo + hi);
                if allows(mid) >= floor {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            eps_max = lo;
        }
        if eps_max <= 0.0 {
            return Err(Error::ClaimNotTestable {
                tester: self.name().into(),
                claim: claim.to_string(),
                reason: "the claim allows δ ≥ 1/(10n) only at ε = 0".into(),
            });
        }
        let k = self.profile_grid;
        Ok((1..=k)
            .map(|i| Divergence::HockeyStick {
                epsilon: eps_max * i as f64 / k as f64,
            })
            .collect())
    }

    fn lower_bound(
        &self,
        p: &Samples,
        q: &Samples,
        divergence: Divergence,
        failure_probability: f64,
        _rng: &mut dyn Rng,
    ) -> Result<Measurement> {
        let Divergence::HockeyStick { epsilon } = divergence else {
            return Err(Error::InvalidConfig(format!(
                "the hockey-stick tester bounds hockey-stick divergences, not {divergence}"
            )));
        };
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return Err(Error::InvalidConfig(format!(
                "ε = {epsilon}; allowed: finite and ≥ 0"
            )));
        }
        let min_n = 20;
        check_inputs(p, q, failure_probability, min_n)?;
        let np = ((p.n() as f64 * self.train_fraction) as usize).clamp(1, p.n() - 1);
        let nq = ((q.n() as f64 * self.train_fraction) as usize).clamp(1, q.n() - 1);
        let e_eps = epsilon.exp();
        let half = failure_probability / 2.0;
        let z = normal_upper_quantile(half);

        // 1–2. Choose (score, threshold) on the training rows only.
        let Some((score, t, _)) = self.choose(p, np, q, nq, e_eps, z) else {
            return Err(Error::InvalidSamples(
                "no candidate event could be formed".into(),
            ));
        };
        // 3. Bound the chosen event on the held-out rows.
        Ok(bound_event(p, np, q, nq, &score, t, e_eps, half))
    }

    fn selects_on_training_split(&self) -> bool {
        true
    }

    fn select_and_bound(
        &self,
        p: &Samples,
        q: &Samples,
        candidates: &[(Divergence, f64)],
        failure_probability: f64,
        _rng: &mut dyn Rng,
    ) -> Result<Option<Selected>> {
        check_inputs(p, q, failure_probability, 20)?;
        let np = ((p.n() as f64 * self.train_fraction) as usize).clamp(1, p.n() - 1);
        let nq = ((q.n() as f64 * self.train_fraction) as usize).clamp(1, q.n() - 1);
        let half = failure_probability / 2.0;
        let z = normal_upper_quantile(half);
        // Score candidates once per direction; thresholds per ε. Everything below up to the
        // final bound reads the training rows only.
        let mut best: Option<(usize, bool, Score, f64, f64)> = None;
        for reversed in [false, true] {
            let (a, na, b, nb) = if reversed {
                (q, nq, p, np)
            } else {
                (p, np, q, nq)
            };
            let (m_a, m_b) = ((a.n() - na) as f64, (b.n() - nb) as f64);
            for score in self.candidates(a, na, b, nb) {
                let sa = scores_of(&score, a, 0..na);
                let sb = scores_of(&score, b, 0..nb);
                for (index, (divergence, allowed)) in candidates.iter().enumerate() {
                    let Divergence::HockeyStick { epsilon } = *divergence else {
                        return Err(Error::InvalidConfig(format!(
                            "the hockey-stick tester bounds hockey-stick divergences, not {divergence}"
                        )));
                    };
                    if !(epsilon.is_finite() && epsilon >= 0.0) {
                        return Err(Error::InvalidConfig(format!(
                            "ε = {epsilon}; allowed: finite and ≥ 0"
                        )));
                    }
                    if let Some((t, pred)) =
                        best_threshold(sa.clone(), sb.clone(), m_a, m_b, epsilon.exp(), z)
                    {
                        let margin = pred - allowed;
                        if best.as_ref().is_none_or(|c| margin > c.4) {
                            best = Some((index, reversed, score.clone(), t, margin));
                        }
                    }
                }
            }
        }
        let Some((index, reversed, score, t, _)) = best else {
            return Err(Error::InvalidSamples(
                "no candidate event could be formed".into(),
            ));
        };
        let Divergence::HockeyStick { epsilon } = candidates[index].0 else {
            unreachable!("checked above")
        };
        let (a, na, b, nb) = if reversed {
            (q, nq, p, np)
        } else {
            (p, np, q, nq)
        };
        let mut measurement = bound_event(a, na, b, nb, &score, t, epsilon.exp(), half);
        measurement.inequality = format!(
            "{}; the direction{} and the event were chosen on the training split among {} candidate(s), so one bound carries the whole β",
            measurement.inequality,
            if candidates.len() > 1 { ", ε" } else { "" },
            2 * candidates.len()
        );
        Ok(Some(Selected {
            index,
            reversed,
            measurement,
        }))
    }
}

impl HockeyStickTester {
    /// The best (score, threshold, predicted bound) on the training rows `0..na` of `a` against
    /// `0..nb` of `b`, predicted for the held-out sizes.
    fn choose(
        &self,
        a: &Samples,
        na: usize,
        b: &Samples,
        nb: usize,
        e_eps: f64,
        z: f64,
    ) -> Option<(Score, f64, f64)> {
        let (m_a, m_b) = ((a.n() - na) as f64, (b.n() - nb) as f64);
        let mut chosen: Option<(Score, f64, f64)> = None;
        for score in self.candidates(a, na, b, nb) {
            let sa = scores_of(&score, a, 0..na);
            let sb = scores_of(&score, b, 0..nb);
            if let Some((t, pred)) = best_threshold(sa, sb, m_a, m_b, e_eps, z)
                && chosen.as_ref().is_none_or(|c| pred > c.2)
            {
                chosen = Some((score, t, pred));
            }
        }
        chosen
    }
}

/// Clopper–Pearson bound of P(S) − e^ε·Q(S) for S = {score ≥ t} on the held-out rows
/// (`na..`, `nb..`), at `half` for each of the two binomial bounds.
#[allow(clippy::too_many_arguments)]
fn bound_event(
    p: &Samples,
    np: usize,
    q: &Samples,
    nq: usize,
    score: &Score,
    t: f64,
    e_eps: f64,
    half: f64,
) -> Measurement {
    let (m_p, m_q) = (p.n() - np, q.n() - nq);
    let k_p = (np..p.n()).filter(|&i| score.eval(&p.row(i)) >= t).count() as u64;
    let k_q = (nq..q.n()).filter(|&i| score.eval(&q.row(i)) >= t).count() as u64;
    let p_lower = clopper_pearson_lower(k_p, m_p as u64, half);
    let q_upper = clopper_pearson_upper(k_q, m_q as u64, half);
    // e^ε·q_upper rounded up before subtracting, then the difference rounded down.
    let raw = p_lower - (e_eps * q_upper) * (1.0 + 1e-12);
    let value = if raw > 0.0 { raw.next_down() } else { 0.0 };
    let point_estimate = k_p as f64 / m_p as f64 - e_eps * k_q as f64 / m_q as f64;
    Measurement {
        value,
        point_estimate,
        inequality: format!(
            "P(S) − e^ε·Q(S) ≤ H_e^ε(P‖Q) for the event S chosen on the training split; one-sided Clopper–Pearson bounds on P(S) and Q(S) at β/2 = {half:.3e} each (exact binomial; i.i.d. samples, event independent of the {m_p} + {m_q} held-out samples)"
        ),
        event: Some(EventBound {
            description: score.describe(t),
            count_p: k_p,
            n_p: m_p as u64,
            count_q: k_q,
            n_q: m_q as u64,
            p_lower,
            q_upper,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Seed, Stream};
    use rand::RngExt;
    use rand_distr::{Distribution, Normal};

    fn gaussian(n: usize, mean: f64, sd: f64, seed: u64) -> Samples {
        let mut rng = Seed(seed).rng(Stream::Other { tag: 9, index: 0 });
        let d = Normal::new(mean, sd).unwrap();
        Samples::from_column((0..n).map(|_| d.sample(&mut rng)).collect())
    }

    /// N(1, 1) vs N(0, 1) at ε = 0: H = TV = 2Φ(1/2) − 1 = 0.3829. The bound must be below it and,
    /// with 1e5 samples, within 0.02 of it (the held-out standard error is ≈ 0.003).
    #[test]
    fn gaussian_shift_bound_is_valid_and_tight() {
        let p = gaussian(100_000, 1.0, 1.0, 1);
        let q = gaussian(100_000, 0.0, 1.0, 2);
        let t = HockeyStickTester::default();
        let mut rng = Seed(0).rng(Stream::Tester { bound: 0 });
        let m = t
            .lower_bound(
                &p,
                &q,
                Divergence::HockeyStick { epsilon: 0.0 },
                0.05,
                &mut rng,
            )
            .unwrap();
        let truth = 0.382_924_922_548_026;
        assert!(m.value <= truth && m.value > truth - 0.02, "{m:?}");
    }

    #[test]
    fn identical_distributions_give_zero() {
        let p = gaussian(20_000, 0.0, 1.0, 3);
        let q = gaussian(20_000, 0.0, 1.0, 4);
        let mut rng = Seed(0).rng(Stream::Tester { bound: 0 });
        let m = HockeyStickTester::default()
            .lower_bound(
                &p,
                &q,
                Divergence::HockeyStick { epsilon: 0.0 },
                0.05,
                &mut rng,
            )
            .unwrap();
        assert_eq!(m.value, 0.0, "{m:?}");
    }

    #[test]
    fn discrete_outputs_use_atoms() {
        // Randomized response with p = 0.9 vs 0.1 at ε = 0: H = 0.8.
        let mut rng = Seed(5).rng(Stream::Other { tag: 1, index: 1 });
        let p = Samples::from_column(
            (0..20_000)
                .map(|_| f64::from(rng.random::<f64>() < 0.9))
                .collect(),
        );
        let q = Samples::from_column(
            (0..20_000)
                .map(|_| f64::from(rng.random::<f64>() < 0.1))
                .collect(),
        );
        let m = HockeyStickTester::default()
            .lower_bound(
                &p,
                &q,
                Divergence::HockeyStick { epsilon: 0.0 },
                0.05,
                &mut rng,
            )
            .unwrap();
        assert!(m.value <= 0.8 && m.value > 0.77, "{m:?}");
    }

    #[test]
    fn bad_inputs_are_errors() {
        let p = gaussian(100, 0.0, 1.0, 1);
        let q = Samples::from_flat(2, vec![0.0; 200]).unwrap();
        let t = HockeyStickTester::default();
        let mut rng = Seed(0).rng(Stream::Tester { bound: 0 });
        let d = Divergence::HockeyStick { epsilon: 1.0 };
        assert!(t.lower_bound(&p, &q, d, 0.05, &mut rng).is_err());
        assert!(t.lower_bound(&p, &p, d, 0.0, &mut rng).is_err());
        assert!(t.lower_bound(&p, &p, d, 1.5, &mut rng).is_err());
        let nan = Samples::from_column(vec![f64::NAN; 100]);
        assert!(
            t.lower_bound(&nan, &p, d, 0.05, &mut rng)
                .unwrap_err()
                .to_string()
                .contains("NaN")
        );
        let tiny = gaussian(5, 0.0, 1.0, 1);
        assert!(t.lower_bound(&tiny, &tiny, d, 0.05, &mut rng).is_err());
    }
}
