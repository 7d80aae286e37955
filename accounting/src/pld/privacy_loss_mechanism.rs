//! The mechanisms' privacy losses: the dominating pairs of one step of the Poisson-subsampled
//! Gaussian (remove, add and replace directions; [`Pair`]) and their discretisation onto the loss
//! grid, pessimistic (connect-the-dots) and optimistic (merged buckets), and the fixed-size
//! batch's pessimistic step (`dp_accounting`'s `pld/privacy_loss_mechanism.py`).

use std::f64::consts::SQRT_2;

use statrs::function::erf::erfc_inv;

use super::common::*;
use super::pld_pmf::*;
use crate::error::Result;

// ---------------------------------------------------------------------------------------------
// The dominating pairs of one step
// ---------------------------------------------------------------------------------------------

/// Which pair of one step (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Direction {
    Remove,
    Add,
    Replace,
}

/// One step's pair (P, Q) of the Poisson-subsampled Gaussian mechanism, noise σ = z,
/// contribution 1. The privacy loss L(x) = ln(p(x)/q(x)) is non-increasing in x for all three.
#[derive(Clone, Copy, Debug)]
pub(super) struct Pair {
    pub(super) q: f64,
    pub(super) sigma: f64,
    pub(super) direction: Direction,
    pub(super) ln_q: f64,
    ln_1mq: f64,
}

impl Pair {
    pub(super) fn new(q: f64, sigma: f64, direction: Direction) -> Self {
        Self {
            q,
            sigma,
            direction,
            ln_q: q.ln(),
            ln_1mq: (-q).ln_1p(),
        }
    }

    pub(super) fn s2(&self) -> f64 {
        self.sigma * self.sigma
    }

    /// Loss of the "remove" pair: ln((1−q) + q·e^{ℓ(x)}), ℓ(x) = (−½ − x)/σ².
    pub(super) fn loss_remove(&self, x: f64) -> f64 {
        let ell = (-0.5 - x) / self.s2();
        if self.q == 1.0 {
            ell
        } else {
            log_add(self.ln_1mq, self.ln_q + ell)
        }
    }

    /// The privacy loss at x.
    pub(super) fn loss(&self, x: f64) -> f64 {
        match self.direction {
            Direction::Remove => self.loss_remove(x),
            // By the symmetry of φ, the "add" loss at x is minus the "remove" loss at −x.
            Direction::Add => -self.loss_remove(-x),
            Direction::Replace => self.loss_remove(x) - self.loss_remove(-x),
        }
    }

    /// Largest x with L(x) ≥ l for the "remove" pair (±∞ outside the range of L).
    pub(super) fn x_of_loss_remove(&self, l: f64) -> f64 {
        if l == f64::INFINITY {
            return f64::NEG_INFINITY;
        }
        let ell = if self.q == 1.0 {
            l
        } else if l <= self.ln_1mq {
            return f64::INFINITY;
        } else {
            // ℓ = ln(1 + (eˡ − 1)/q) = ln(eˡ − (1 − q)) − ln q.
            log_sub(l, self.ln_1mq) - self.ln_q
        };
        -0.5 - self.s2() * ell
    }

    /// Largest x with L(x) ≥ l: {L ≥ l} = {X ≤ x}.
    pub(super) fn x_of_loss(&self, l: f64) -> f64 {
        match self.direction {
            Direction::Remove => self.x_of_loss_remove(l),
            Direction::Add => -self.x_of_loss_remove(-l),
            Direction::Replace => {
                if l == f64::INFINITY {
                    return f64::NEG_INFINITY;
                }
                if l == f64::NEG_INFINITY {
                    return f64::INFINITY;
                }
                if self.q == 1.0 {
                    return -0.5 * self.s2() * l;
                }
                if l == 0.0 {
                    return 0.0;
                }
                // With a = (1−q)/q · e^{1/(2σ²)} and u = x/σ²: e^L = (a + e^{−u})/(a + e^{u}),
                // so u = −L/2 − asinh(a·sinh(L/2)).
                let ln_a = self.ln_1mq - self.ln_q + 0.5 / self.s2();
                let asinh = l.signum() * asinh_exp(ln_a + log_sinh(0.5 * l.abs()));
                self.s2() * (-0.5 * l - asinh)
            }
        }
    }

    /// P(X ≤ x).
    pub(super) fn p_cdf(&self, x: f64) -> f64 {
        let s = self.sigma;
        match self.direction {
            Direction::Add => ndtr(x / s),
            Direction::Remove | Direction::Replace => {
                if self.q == 1.0 {
                    ndtr((x + 1.0) / s)
                } else {
                    (1.0 - self.q) * ndtr(x / s) + self.q * ndtr((x + 1.0) / s)
                }
            }
        }
    }

    /// ln Q(X ≤ x).
    pub(super) fn q_log_cdf(&self, x: f64) -> f64 {
        let s = self.sigma;
        match self.direction {
            Direction::Remove => log_ndtr(x / s),
            Direction::Add | Direction::Replace => {
                if self.q == 1.0 {
                    log_ndtr((x - 1.0) / s)
                } else {
                    log_add(
                        self.ln_1mq + log_ndtr(x / s),
                        self.ln_q + log_ndtr((x - 1.0) / s),
                    )
                }
            }
        }
    }

    /// The range of x resolved on the grid: outside it P has mass ≤ e^{−50} (each mixture
    /// component's tail is ≤ e^{−50}/2), as in `dp_accounting`'s `privacy_loss_tail`.
    pub(super) fn x_range(&self) -> (f64, f64) {
        // Φ⁻¹(p) = −√2 · erfc⁻¹(2p).
        let z0 = -SQRT_2 * erfc_inv(LOG_MASS_TRUNCATION.exp()) * self.sigma;
        match self.direction {
            Direction::Remove | Direction::Replace => (z0 - 1.0, -z0),
            Direction::Add => (z0, 1.0 - z0),
        }
    }

    /// P(X ≤ x) − e^ε Q(X ≤ x) = P(L ≥ l) − e^ε Q(L ≥ l) for x = x(l).
    pub(super) fn hockey_at(&self, epsilon: f64, x: f64) -> f64 {
        if x == f64::INFINITY {
            return -epsilon.exp_m1();
        }
        if x == f64::NEG_INFINITY {
            return 0.0;
        }
        let lq = self.q_log_cdf(x);
        let second = if lq == f64::NEG_INFINITY {
            0.0
        } else {
            (epsilon + lq).exp()
        };
        self.p_cdf(x) - second
    }

    /// The hockey-stick divergence δ(ε) = sup over events, attained at {L ≥ ε}.
    pub(super) fn delta(&self, epsilon: f64) -> f64 {
        self.hockey_at(epsilon, self.x_of_loss(epsilon))
            .clamp(0.0, 1.0)
    }
}

/// Pessimistic connect-the-dots PLD of one pair on the grid kΔ covering the losses of the
/// resolved x range (Doroshenko et al. 2022, Algorithm 1, fixed gap).
pub(super) fn pessimistic_pmf(pair: &Pair, d: f64) -> Result<Pmf> {
    let (x_lo, x_hi) = pair.x_range();
    let (l_hi, l_lo) = (pair.loss(x_lo), pair.loss(x_hi));
    connect_dots(l_lo, l_hi, |e| pair.delta(e), d, (pair.q, pair.sigma))
}

/// Pessimistic connect-the-dots PLD of one step of the Gaussian mechanism on a batch of fixed
/// size drawn without replacement, under replace-one (see [`Pld::fixed_size_gaussian`]): the
/// privacy profile δ(ε) = max(δ_remove(ε), δ_add(ε)) of the two add/remove pairs of rate `q` at
/// noise z/2 (contribution 1; i.e. contribution 2 against noise z), on the grid covering the
/// losses of both. The profile of a
/// pair is a convex, non-increasing function of e^ε; so is the larger of two, and the
/// construction needs nothing else (Doroshenko et al. 2022, Algorithm 1, reads the pair only
/// through δ on the grid).
pub(super) fn pessimistic_pmf_fixed_size(q: f64, z: f64, d: f64) -> Result<Pmf> {
    let sigma = 0.5 * z;
    let remove = Pair::new(q, sigma, Direction::Remove);
    let add = Pair::new(q, sigma, Direction::Add);
    let range = |pair: &Pair| {
        let (x_lo, x_hi) = pair.x_range();
        (pair.loss(x_hi), pair.loss(x_lo))
    };
    let ((r_lo, r_hi), (a_lo, a_hi)) = (range(&remove), range(&add));
    connect_dots(
        r_lo.min(a_lo),
        r_hi.max(a_hi),
        |e| remove.delta(e).max(add.delta(e)),
        d,
        (q, z),
    )
}

/// The connect-the-dots PLD of the privacy profile `delta` on the grid kΔ from ⌊l_lo/Δ⌋ to
/// ⌈l_hi/Δ⌉ (Doroshenko et al. 2022, Algorithm 1, fixed gap); `what` = (q, σ) names the step in
/// an error.
pub(super) fn connect_dots(
    l_lo: f64,
    l_hi: f64,
    delta: impl Fn(f64) -> f64,
    d: f64,
    what: (f64, f64),
) -> Result<Pmf> {
    let k_lo = (l_lo / d).floor();
    let k_hi = (l_hi / d).ceil();
    let n = check_grid(k_hi - k_lo + 1.0, what, d)?;
    let k_lo = k_lo as i64;
    let mut deltas: Vec<f64> = (0..n)
        .map(|i| delta((k_lo + i as i64) as f64 * d))
        .collect();
    // δ is non-increasing in ε; enforce it against rounding (as dp_accounting's
    // `np.minimum.accumulate`).
    for i in 1..n {
        deltas[i] = deltas[i].min(deltas[i - 1]);
    }
    let infinity = deltas[n - 1];
    if n == 1 {
        return Ok(Pmf::on_grid(k_lo, vec![1.0 - deltas[0]], infinity, 0.0));
    }
    let em1 = d.exp_m1();
    let e = d.exp();
    let mut probs = vec![0.0; n];
    // p₁ = 1 − δ₁ + (δ₂ − δ₁)/(e^Δ − 1); pᵢ = ((δᵢ₊₁ − δᵢ) − e^Δ(δᵢ − δᵢ₋₁))/(e^Δ − 1);
    // pₙ = (δₙ − δₙ₋₁)/(e^{−Δ} − 1); mass δₙ at +∞.
    probs[0] = 1.0 - deltas[0] + (deltas[1] - deltas[0]) / em1;
    for i in 1..n - 1 {
        probs[i] = ((deltas[i + 1] - deltas[i]) - e * (deltas[i] - deltas[i - 1])) / em1;
    }
    probs[n - 1] = (deltas[n - 1] - deltas[n - 2]) / (-d).exp_m1();
    for p in &mut probs {
        *p = p.max(0.0);
    }
    Ok(Pmf::on_grid(k_lo, probs, infinity, 0.0))
}

/// Optimistic PLD of one pair on the grid εₖ = g + kΔ (g ∈ (−Δ, 0], the grid's `shift`): buckets
/// of consecutive loss merged (post-processing), each bucket's boundaries chosen top-down so
/// that its merged loss ln(P(B)/Q(B)) is ≥ a grid point εₖ and as close to it as found; its
/// P-mass is put at εₖ. The loss tail above the resolved range is put at the top grid point
/// below it; the tail below is dropped. Also returns the rounding bias of the last bucket (the
/// rest of the losses, merged): its P-mass times (its merged loss − the grid point it is put
/// at), the one bucket whose loss is rounded down by up to Δ rather than matched.
pub(super) fn optimistic_pmf_on(pair: &Pair, d: f64, g: f64) -> Result<(Pmf, Leftover)> {
    let (x_lo, x_hi) = pair.x_range();
    let (t_top, l_bot) = (pair.loss(x_lo), pair.loss(x_hi));
    let k_top = ((t_top - g) / d).floor();
    let k_bot = ((l_bot - g) / d).floor();
    let n = check_grid(k_top - k_bot + 1.0, (pair.q, pair.sigma), d)?;
    let (k_top, k_bot) = (k_top as i64, k_bot as i64);
    let level = |k: i64| g + k as f64 * d;
    let mut probs = vec![0.0; n];
    let index = |k: i64| (k - k_bot) as usize;
    // The tail of losses above t_top, rounded down (grid points are exact only up to rounding:
    // step down while the level is above t_top).
    let mut k_tail = k_top;
    while k_tail > k_bot && level(k_tail) > t_top {
        k_tail -= 1;
    }
    probs[index(k_tail)] += pair.p_cdf(x_lo);

    let mut t = t_top;
    let mut x_t = x_lo;
    let mut k = ((t - g) / d).ceil() as i64 - 1;
    while k >= k_bot && level(k) >= t {
        k -= 1;
    }
    let f_bot = |eps: f64| pair.hockey_at(eps, x_hi);
    let mut leftover = Leftover::default();
    while k >= k_bot {
        let eps = level(k);
        let target = pair.hockey_at(eps, x_t);
        if f_bot(eps) >= target {
            // The rest, [l_bot, t), merged has loss ≥ εₖ.
            let mass_p = (pair.p_cdf(x_hi) - pair.p_cdf(x_t)).max(0.0);
            probs[index(k)] += mass_p;
            let mass_q = pair.q_log_cdf(x_hi).exp() - pair.q_log_cdf(x_t).exp();
            if mass_p > 0.0 && mass_q > 0.0 {
                let merged = (mass_p / mass_q).ln();
                leftover = Leftover {
                    merged,
                    bias: mass_p * (merged - eps).max(0.0),
                };
            }
            break;
        }
        let b = bucket_bottom(pair, eps, target, t, l_bot, d);
        let x_b = pair.x_of_loss(b);
        probs[index(k)] += (pair.p_cdf(x_b) - pair.p_cdf(x_t)).max(0.0);
        t = b;
        x_t = x_b;
        k -= 1;
        while k >= k_bot && level(k) >= t {
            k -= 1;
        }
    }
    Ok((Pmf::on_grid(k_bot, probs, 0.0, g), leftover))
}

/// The last bucket of [`optimistic_pmf_on`]: its merged loss, and its P-mass times the amount
/// its loss is rounded down.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Leftover {
    pub(super) merged: f64,
    pub(super) bias: f64,
}

/// A rounding bias per step (P-mass × loss, see [`optimistic_pmf_on`]) below which the grid is
/// not shifted: 10⁻⁹ per step is 10⁻⁴ nats after 10⁵ steps (at q = 0.01, z = 1.1 it is 10⁻¹⁰
/// and a shift does not lower it: the last bucket there is the far lower tail).
pub(super) const OPTIMISTIC_BIAS_TOLERANCE: f64 = 1e-9;

/// Optimistic PLD of one pair (see [`optimistic_pmf_on`]), on the grid kΔ or, when the last
/// bucket would be rounded down by a noticeable amount, on a shifted grid g + kΔ.
///
/// Why the shift: at small q (q ≪ Δ) most of the mass has |loss| ≲ q (the losses of the "remove"
/// pair are ≥ ln(1 − q)), and the merged buckets of the unshifted grid leave that bulk as the
/// last bucket, merged loss ≈ −q, rounded down to −Δ: about −Δ/2 of loss per step, which after
/// T = 10⁵ steps at q = 2·10⁻⁵, z = 0.5 pulled the optimistic ε at δ = 10⁻⁸ down to 0 (the
/// pessimistic one is 2.28). A grid through the last bucket's merged loss puts it there
/// exactly. The shift is chosen by a few fixed-point steps g ← (merged loss of the last bucket
/// on the grid through g); whatever g is chosen, the PLD is a valid optimistic one (merging is
/// post-processing and every loss is rounded down to a grid point), so the choice (the
/// candidate of least bias) needs no proof of convergence.
pub(super) fn optimistic_pmf(pair: &Pair, d: f64) -> Result<Pmf> {
    let (mut best, mut leftover) = optimistic_pmf_on(pair, d, 0.0)?;
    let mut best_bias = leftover.bias;
    // Plain fixed-point steps from below: measured at q = 2·10⁻⁵, z = 0.5, the bias falls by a
    // factor ≈ 20 per build (5·10⁻⁵, 5.6·10⁻⁶, 2.5·10⁻⁷, 1.1·10⁻⁸, 4.8·10⁻¹⁰). A secant step
    // was tried and is worse: past the fixed point the last bucket changes (its merged loss
    // jumps to ≈ ln(1 − q)), so the map is not smooth there.
    for _ in 0..4 {
        if best_bias <= OPTIMISTIC_BIAS_TOLERANCE || !leftover.merged.is_finite() {
            break;
        }
        // A hair below the merged loss, so that rounding in the next build's merged loss does
        // not push it under the grid point; g ∈ (−Δ, 0].
        let target = leftover.merged - 1e-9 * d;
        let g = target - (target / d).ceil() * d;
        let (pmf, next) = optimistic_pmf_on(pair, d, g)?;
        let helped = next.bias < 0.5 * best_bias;
        if next.bias < best_bias {
            best = pmf;
            best_bias = next.bias;
        }
        if !helped {
            break;
        }
        leftover = next;
    }
    Ok(best)
}

/// The smallest b (up to a tolerance, erring high) in [l_bot, ε] with
/// D(b) := P(L ≥ b) − e^ε Q(L ≥ b) ≥ `target`: the bucket [b, t) then has merged loss ≥ ε.
/// D is increasing on b ≤ ε, with D(ε) = δ(ε) ≥ target and D(l_bot) < target.
/// Solved by the Illinois variant of regula falsi.
pub(super) fn bucket_bottom(pair: &Pair, eps: f64, target: f64, t: f64, l_bot: f64, d: f64) -> f64 {
    let f = |b: f64| pair.hockey_at(eps, pair.x_of_loss(b)) - target;
    let (mut hi, mut f_hi) = (eps, f(eps));
    if f_hi < 0.0 {
        // Rounding: δ(ε) computed below D(t); the bucket is empty.
        return t.min(eps);
    }
    // The root is near 2ε − t (a symmetric bucket); try a narrow bracket first.
    let guess = (2.0 * eps - t - d).max(l_bot);
    let (mut lo, mut f_lo) = (guess, f(guess));
    if f_lo >= 0.0 {
        hi = guess;
        f_hi = f_lo;
        lo = l_bot;
        f_lo = f(l_bot);
        if f_lo >= 0.0 {
            return l_bot;
        }
    }
    let tolerance = 1e-7 * d;
    let mut side = 0_i8;
    for _ in 0..100 {
        if hi - lo <= tolerance {
            break;
        }
        let mut m = (lo * f_hi - hi * f_lo) / (f_hi - f_lo);
        if !(m > lo && m < hi) {
            m = 0.5 * (lo + hi);
        }
        let f_m = f(m);
        if f_m >= 0.0 {
            hi = m;
            f_hi = f_m;
            if side == 1 {
                f_lo *= 0.5;
            }
            side = 1;
        } else {
            lo = m;
            f_lo = f_m;
            if side == -1 {
                f_hi *= 0.5;
            }
            side = -1;
        }
    }
    hi
}

pub(super) fn check_grid(points: f64, (q, sigma): (f64, f64), d: f64) -> Result<usize> {
    if points.is_finite() && points >= 1.0 && points <= MAX_GRID_POINTS as f64 {
        Ok(points as usize)
    } else {
        Err(invalid(format!(
            "one step's PLD would need {points} grid points (q = {q}, z = {sigma}, discretization \
             {d}); allowed: at most {MAX_GRID_POINTS} (use a larger z or discretization)"
        )))
    }
}
