//! An exact unconditional test on two independent binomial counts for the contrast
//! a − e^ε·b, in the style of Barnard (1945): the p-value is the largest tail probability over
//! every (a, b) the null allows, so no nuisance parameter is estimated and no release is left
//! out (the conditional test of [`super::poisson_contrast_lower`] Poissonizes its counts, which
//! keeps about m − 5√m of m releases and has the Poisson variance a instead of a(1 − a)).
//!
//! # The test
//! U ~ Bin(m_a, a) and W ~ Bin(m_b, b) independent; the null is H0(c): a − e^ε·b ≤ c. The
//! statistic is T = U/m_a − s·W/m_b for a slope s fixed before the counts are seen (s = e^ε of
//! the tested ε), and the p-value of the observed (u, w) is
//! p = sup over (a, b) in H0(c) of P_{a,b}(T ≥ T(u, w)).
//! Rejecting when p ≤ α is a level-α test of H0(c) for every (a, b) in it, by definition of
//! the sup.
//!
//! # Computing the sup safely
//! P_{a,b}(T ≥ t) grows with a and falls with b (T increases in U and decreases in W;
//! binomials are stochastically ordered in their parameter). So on H0(c) only the boundary
//! a(b) = min(1, e^ε·b + c) matters, and on an interval of nuisance values b ∈ [b₀, b₁]
//! P_{a(b),b} ≤ P_{a(b₁),b₀}: one evaluation bounds the sup over the whole interval from above.
//! For b ≥ b* = (1 − c)/e^ε, a(b) = 1 and P_{1,b} ≤ P_{1,b*}. The decision splits [0, b*] into
//! intervals until every interval's bound is at most α (reject) or some point's exact tail
//! exceeds α (accept), and accepts when a budget of evaluations runs out (the safe side).
//!
//! Each tail P_{a,b}(T ≥ t) = Σ_w P(W = w)·P(U ≥ k(w)) with k(w) the smallest U with
//! T ≥ t at W = w, taken one below when floating point leaves it in doubt (more points counted:
//! a larger tail). The sums run over windows of ±(12 sd + 12) around each binomial's mean,
//! with the mass outside bounded by the Chernoff bound exp(−m·KL(k/m ‖ p)) and counted in full;
//! the probabilities inside are a recurrence from the mode (anchored by statrs' log-pmf), and
//! the total is raised by 1e-6 relative, far above their rounding. Hand-written because no
//! crate offers an unconditional test of a linear contrast with a safe-side sup.
//!
//! # Inversion
//! With the slope fixed, the null set grows with c (and with ε at a fixed δ), so the p-value
//! does too and the rejected values form an interval [0, L): bisection keeps its rejected end.

use statrs::distribution::{Binomial, Discrete};

/// Relative margin added to every computed tail (covers the recurrences' rounding).
const TAIL_MARGIN: f64 = 1e-6;

/// How close to the level a null point's tail may come before the decision accepts (relative):
/// the test then runs at a level between (1 − 10⁻³)·α and α.
const DECISION_SLACK: f64 = 1e-3;

/// Tail evaluations one decision may spend before it accepts (the safe answer).
const BUDGET: usize = 4000;

/// Chernoff bound on P(X ≥ k) for X ~ Bin(m, p) and k ≥ m·p (on P(X ≤ k) for k ≤ m·p):
/// exp(−m·KL(k/m ‖ p)). 1 when k is on the other side of the mean.
fn chernoff(k: f64, m: f64, p: f64, upper: bool) -> f64 {
    let x = k / m;
    if (upper && x <= p) || (!upper && x >= p) {
        return 1.0;
    }
    if (upper && p <= 0.0) || (!upper && p >= 1.0) {
        return 0.0;
    }
    let term = |x: f64, p: f64| if x <= 0.0 { 0.0 } else { x * (x / p).ln() };
    let kl = term(x, p) + term(1.0 - x, 1.0 - p);
    (-m * kl).exp().min(1.0)
}

/// Bin(m, p) restricted to a window around its mean: (first k, probabilities of k = first,
/// first + 1, …, last, the mass below first bounded above, the mass above last bounded above).
struct Window {
    first: u64,
    pmf: Vec<f64>,
    below: f64,
    above: f64,
}

fn window(m: u64, p: f64) -> Window {
    if p <= 0.0 {
        return Window {
            first: 0,
            pmf: vec![1.0],
            below: 0.0,
            above: 0.0,
        };
    }
    if p >= 1.0 {
        return Window {
            first: m,
            pmf: vec![1.0],
            below: 0.0,
            above: 0.0,
        };
    }
    let mf = m as f64;
    let mean = mf * p;
    let r = 12.0 * (mean * (1.0 - p)).sqrt() + 12.0;
    let first = (mean - r).floor().max(0.0) as u64;
    let last = ((mean + r).ceil() as u64).min(m);
    let mode = ((mf + 1.0) * p).floor().clamp(first as f64, last as f64) as u64;
    let Ok(dist) = Binomial::new(p, m) else {
        // p in (0, 1) by the branches above: unreachable; the vacuous window is safe.
        return Window {
            first: 0,
            pmf: vec![0.0],
            below: 1.0,
            above: 1.0,
        };
    };
    let mut pmf = vec![0.0; (last - first + 1) as usize];
    let odds = p / (1.0 - p);
    let at = |k: u64| (k - first) as usize;
    pmf[at(mode)] = dist.pmf(mode);
    // pmf(k + 1) = pmf(k)·(m − k)/(k + 1)·p/(1 − p), and back down.
    for k in mode..last {
        pmf[at(k + 1)] = pmf[at(k)] * ((m - k) as f64 / (k + 1) as f64) * odds;
    }
    for k in (first + 1..=mode).rev() {
        pmf[at(k - 1)] = pmf[at(k)] * (k as f64 / (m - k + 1) as f64) / odds;
    }
    // The recurrence gives the shape to about 1e-13; the anchor (a log-gamma difference) only to
    // about 1e-11 at m = 10⁴. Scaled so the window sums to 1, every probability is at least its
    // true value (the true mass inside is at most 1): the safe side for an upper tail.
    let inside: f64 = pmf.iter().sum();
    if inside > 0.0 && inside.is_finite() {
        for v in &mut pmf {
            *v /= inside;
        }
    }
    let below = if first > 0 {
        chernoff((first - 1) as f64, mf, p, false)
    } else {
        0.0
    };
    let above = if last < m {
        chernoff((last + 1) as f64, mf, p, true)
    } else {
        0.0
    };
    Window {
        first,
        pmf,
        below,
        above,
    }
}

/// The counts and the statistic's slope of one test.
#[derive(Clone, Copy, Debug)]
struct Observed {
    u: u64,
    m_a: u64,
    w: u64,
    m_b: u64,
    slope: f64,
}

impl Observed {
    /// The smallest U with T ≥ T(u, w) at W = `w`, one lower when rounding leaves it in doubt.
    fn k_of(&self, w: u64) -> i64 {
        let shift = self.slope * (w as f64 - self.w as f64) * self.m_a as f64 / self.m_b as f64;
        let x = self.u as f64 + shift;
        (x - 1e-9 * (1.0 + x.abs())).ceil() as i64
    }

    /// An upper bound on P_{a,b}(T ≥ T(u, w)).
    fn tail(&self, a: f64, b: f64) -> f64 {
        let (wu, ww) = (window(self.m_a, a), window(self.m_b, b));
        // suffix[i] = Σ_{k ≥ first_u + i} pmf_U(k) within the window.
        let mut suffix = vec![0.0; wu.pmf.len() + 1];
        for i in (0..wu.pmf.len()).rev() {
            suffix[i] = suffix[i + 1] + wu.pmf[i];
        }
        let last_u = wu.first + wu.pmf.len() as u64 - 1;
        let u_tail = |k: i64| -> f64 {
            if k <= wu.first as i64 {
                1.0
            } else if k as u64 > last_u {
                if k as u64 > self.m_a {
                    0.0
                } else {
                    chernoff(k as f64, self.m_a as f64, a, true).min(wu.above)
                }
            } else {
                (suffix[(k as u64 - wu.first) as usize] + wu.above).min(1.0)
            }
        };
        let mut total = ww.below + ww.above;
        for (i, pw) in ww.pmf.iter().enumerate() {
            total += pw * u_tail(self.k_of(ww.first + i as u64));
        }
        (total * (1.0 + TAIL_MARGIN)).min(1.0)
    }

    /// Whether the test rejects a − e_eps·b ≤ c at `level` (see the module docs). A point whose
    /// tail is within [`DECISION_SLACK`] of the level already accepts: rejecting needs every
    /// interval's bound at or below the level, and near the sup that would take splits without
    /// end; accepting is always the safe answer.
    fn rejects(&self, e_eps: f64, c: f64, level: f64) -> bool {
        if c >= 1.0 || self.u == 0 {
            return false;
        }
        // The null boundary a(b), rounded up.
        let a_of = |b: f64| ((e_eps * b + c.max(0.0)) * (1.0 + 1e-12)).min(1.0);
        let b_star = ((1.0 - c) / e_eps).clamp(0.0, 1.0);
        let spent = std::cell::Cell::new(0usize);
        let eval = |a: f64, b: f64| {
            spent.set(spent.get() + 1);
            self.tail(a, b)
        };
        // Beyond b*: a = 1, and the tail falls with b, so (1, b*) covers [b*, 1]; it is itself
        // a null point, so a tail above the level there accepts.
        let accept_above = level * (1.0 - DECISION_SLACK);
        if eval(1.0, b_star) > accept_above {
            return false;
        }
        // The points' exact tails first: any above the level accepts at once.
        let starts = 16usize;
        let points: Vec<f64> = (0..=starts)
            .map(|j| b_star * (j as f64 / starts as f64).powi(2))
            .collect();
        let mut stack: Vec<(f64, f64)> = Vec::new();
        for pair in points.windows(2) {
            stack.push((pair[0], pair[1]));
        }
        for &b in &points {
            if eval(a_of(b), b) > accept_above {
                return false;
            }
        }
        while let Some((lo, hi)) = stack.pop() {
            if spent.get() >= BUDGET {
                return false;
            }
            if eval(a_of(hi), lo) <= level {
                continue;
            }
            let mid = 0.5 * (lo + hi);
            if mid <= lo || mid >= hi {
                // The interval cannot be split further in f64: the bound stays above the level.
                return false;
            }
            if eval(a_of(mid), mid) > accept_above {
                return false;
            }
            stack.push((mid, hi));
            stack.push((lo, mid));
        }
        true
    }
}

fn check_counts(u: u64, m_a: u64, w: u64, m_b: u64) -> bool {
    m_a > 0 && m_b > 0 && u <= m_a && w <= m_b
}

/// Lower confidence bound on θ = a − e^ε·b from U = `u` of `m_a` releases of A in the event and
/// W = `w` of `m_b` releases of B: with probability ≥ 1 − `beta` over the counts,
/// θ ≥ the returned value. The exact unconditional test of the module docs with slope e^ε,
/// inverted in c by bisection (rounded down to the last rejected value). 0 when θ = 0 is not
/// rejected.
///
/// # Examples
/// ```
/// use dp_audit::bounds::binomial_contrast_lower;
/// // 150 of 180 against 20 of 180 at e^ε = e: the contrast is clearly positive.
/// let l = binomial_contrast_lower(150, 180, 20, 180, 1f64.exp(), 0.05);
/// assert!(l > 0.3 && l < 150.0 / 180.0 - 1f64.exp() * 20.0 / 180.0);
/// ```
pub fn binomial_contrast_lower(u: u64, m_a: u64, w: u64, m_b: u64, e_eps: f64, beta: f64) -> f64 {
    if !(check_counts(u, m_a, w, m_b) && beta > 0.0 && beta < 1.0 && e_eps >= 1.0) {
        return 0.0;
    }
    let obs = Observed {
        u,
        m_a,
        w,
        m_b,
        slope: e_eps,
    };
    if !obs.rejects(e_eps, 0.0, beta) {
        return 0.0;
    }
    // θ at or above the observed contrast is not rejected (in practice): the bracket's top. Were
    // it rejected, the answer would still be a rejected value, only not the largest.
    let observed = u as f64 / m_a as f64 - e_eps * w as f64 / m_b as f64;
    let (mut lo, mut hi) = (0.0_f64, observed.clamp(0.0, 1.0) + 1e-9);
    for _ in 0..18 {
        let mid = 0.5 * (lo + hi);
        if obs.rejects(e_eps, mid, beta) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo.next_down().max(0.0)
}

/// The largest ε' at which the same test (slope `e_eps`, the tested e^ε) rejects
/// a − e^ε'·b ≤ `delta`: a lower confidence bound on the ε of (ε', δ)-DP at level 1 − `beta`,
/// simultaneous with [`binomial_contrast_lower`] at the same counts. Rounded down; `None` when
/// ε' = 0 is not rejected.
pub fn binomial_contrast_epsilon(
    u: u64,
    m_a: u64,
    w: u64,
    m_b: u64,
    e_eps: f64,
    delta: f64,
    beta: f64,
) -> Option<f64> {
    if !(check_counts(u, m_a, w, m_b) && beta > 0.0 && beta < 1.0 && delta >= 0.0) {
        return None;
    }
    let obs = Observed {
        u,
        m_a,
        w,
        m_b,
        slope: e_eps.max(1.0),
    };
    if !obs.rejects(1.0, delta, beta) {
        return None;
    }
    // ε' at or above ln(U/m_a − δ)/(W/m_b) is not rejected (in practice): the bracket's top.
    let (fa, fb) = (u as f64 / m_a as f64, w as f64 / m_b as f64);
    let top = if fa > delta && fb > 0.0 {
        ((fa - delta) / fb).ln().clamp(1e-9, 30.0) + 1e-9
    } else {
        30.0
    };
    let (mut lo, mut hi) = (0.0_f64, top);
    if obs.rejects(hi.exp(), delta, beta) {
        return Some(hi);
    }
    for _ in 0..18 {
        let mid = 0.5 * (lo + hi);
        if obs.rejects(mid.exp(), delta, beta) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo > 0.0).then(|| lo.next_down())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Binomial as RBinomial, Distribution};

    /// The window's probabilities against statrs' pmf (itself accurate to about 1e-11 relative
    /// at m = 10⁴ and 1e-9 at 10⁶: a log-gamma difference), and its outside mass bounds.
    #[test]
    fn windows_match_the_pmf() {
        for (m, p) in [
            (180u64, 0.15),
            (180, 0.8),
            (10_000, 0.3),
            (5, 0.5),
            (1_000_000, 1e-5),
        ] {
            let w = window(m, p);
            let d = Binomial::new(p, m).unwrap();
            for (i, v) in w.pmf.iter().enumerate() {
                let exact = d.pmf(w.first + i as u64);
                assert!((v - exact).abs() <= 1e-7 * exact + 1e-300, "{m} {p} {i}");
            }
            let inside: f64 = w.pmf.iter().sum();
            assert!(
                (inside - 1.0).abs() <= 1e-12 && w.below + w.above < 1e-20,
                "{m} {p}: {inside} + {} + {}",
                w.below,
                w.above
            );
        }
    }

    /// The tail bound is never below the exact tail (a brute-force double sum).
    #[test]
    fn tails_are_upper_bounds() {
        let obs = Observed {
            u: 40,
            m_a: 60,
            w: 9,
            m_b: 50,
            slope: 1f64.exp(),
        };
        for (a, b) in [(0.5, 0.1), (0.7, 0.25), (0.3, 0.05), (1.0, 0.3), (0.6, 0.0)] {
            let (da, db) = (Binomial::new(a, 60).unwrap(), Binomial::new(b, 50).unwrap());
            let t_obs = 40.0 / 60.0 - obs.slope * 9.0 / 50.0;
            let mut exact = 0.0;
            for uu in 0..=60u64 {
                for ww in 0..=50u64 {
                    if uu as f64 / 60.0 - obs.slope * ww as f64 / 50.0 >= t_obs - 1e-12 {
                        exact += da.pmf(uu) * db.pmf(ww);
                    }
                }
            }
            let bound = obs.tail(a, b);
            assert!(
                bound >= exact && bound <= exact * 1.001 + 1e-12,
                "{a} {b}: {bound} vs {exact}"
            );
        }
    }

    /// Level: on the null boundary (a = e^ε·b + c), the bound exceeds θ = c in at most a β
    /// fraction of draws. 1 000 draws per case at β = 0.05: more than 85 exceedances has
    /// probability below 1e-6 for a valid test (binomial tail), the false-failure rate.
    #[test]
    fn keeps_its_level_on_the_null_boundary() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(7);
        let e = 1f64.exp();
        for (m, b, c) in [(180u64, 0.15, 0.0), (60, 0.05, 0.1), (500, 0.3, 0.0)] {
            let a = (e * b + c).min(1.0);
            let (da, db) = (RBinomial::new(m, a).unwrap(), RBinomial::new(m, b).unwrap());
            let over = (0..1000)
                .filter(|_| {
                    let (u, w) = (da.sample(&mut rng), db.sample(&mut rng));
                    binomial_contrast_lower(u, m, w, m, e, 0.05) > c
                })
                .count();
            eprintln!("m = {m}, b = {b}, c = {c}: {over}/1000 above θ");
            assert!(over <= 85, "m = {m}, b = {b}, c = {c}: {over}/1000 above θ");
        }
    }

    /// Power against the separate Clopper–Pearson bounds at β/2 each, on the counts the issue's
    /// small-sample case expects (Laplace true ε = 2 against a claim of 1: a ≈ 0.73, b ≈ 0.12
    /// at 180 held-out releases per side): the test rejects ε = 1 where they do not.
    #[test]
    fn pooled_margin_beats_two_separate_ones() {
        let e = 1f64.exp();
        let (u, w) = (126u64, 25u64); // a − e·b ≈ 0.32 in the estimate
        let pooled = binomial_contrast_lower(u, 180, w, 180, e, 0.05);
        let separate = crate::bounds::clopper_pearson_lower(u, 180, 0.025)
            - e * crate::bounds::clopper_pearson_upper(w, 180, 0.025);
        assert!(pooled > separate, "{pooled} vs {separate}");
        let eps = binomial_contrast_epsilon(u, 180, w, 180, e, 0.0, 0.05).unwrap();
        assert!(eps > 1.0 && eps < (126.0f64 / 25.0).ln(), "{eps}");
    }
}
