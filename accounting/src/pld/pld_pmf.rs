//! The discretised privacy loss distribution of one direction ([`Pmf`]: masses on a loss grid,
//! tilted, with a bound on their floating-point error), its δ(ε) and ε(δ) with their error
//! margins, and its composition: convolution by FFT, truncation, self-composition by squaring
//! the spectrum, exponential tilting (`dp_accounting`'s `pld/pld_pmf.py`).

use std::sync::Arc;

use rustfft::num_complex::Complex;
use rustfft::{Fft, FftPlanner};

use super::common::*;
use crate::error::Result;

/// Which side a discrete PLD errs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Estimate {
    /// Connect-the-dots: δ(ε) is an upper bound on the true δ(ε), after any composition.
    Pessimistic,
    /// Merged buckets, losses rounded down: δ(ε) is a lower bound on the true δ(ε).
    Optimistic,
}

// ---------------------------------------------------------------------------------------------
// Discrete PLDs of one direction
// ---------------------------------------------------------------------------------------------

/// A discrete PLD: mass at loss Lᵢ = (offset + i)·Δ + shift, plus `infinity` at +∞.
///
/// The masses are held **tilted**: `probs[i]` = pᵢ·e^{λLᵢ − log_scale} with λ = `tilt` ≥ 0, so
/// pᵢ = `probs[i]`·e^{log_scale − λLᵢ} (λ = 0, log_scale = 0: untilted). Exponential tilting
/// commutes with convolution (the tilted composition is the composition of the tilted PLDs,
/// scales multiplying), and an FFT's round-off is absolute in the tilted masses, so after the
/// tilt the small masses at large loss, the ones δ(ε) at small δ is made of, are resolved to
/// a relative precision instead of to 10⁻¹⁶ of the whole (see [`PldAccountant::pld_at`]).
///
/// `error` bounds Σᵢ |probs[i] − exact tilted mass i| (ℓ¹, in tilted units), the floating-point
/// error of the composition against the same composition in exact arithmetic, so that
/// |δ̂(ε) − δ(ε)| ≤ error·c(λ)·e^{log_scale − λε} (see [`Pmf::error_at`]). `floor`: a tilted
/// pessimistic PLD drops the mass below its window; its δ(ε) holds for ε ≥ `floor` only
/// (−∞ otherwise). The shift is 0 for pessimistic PLDs; an optimistic one may sit on a grid
/// shifted by a real number (see [`optimistic_pmf`]), and shifts add under composition.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Pmf {
    pub(super) offset: i64,
    pub(super) probs: Vec<f64>,
    pub(super) infinity: f64,
    pub(super) shift: f64,
    pub(super) tilt: f64,
    pub(super) log_scale: f64,
    pub(super) error: f64,
    pub(super) floor: f64,
}

impl Pmf {
    pub(super) fn identity() -> Self {
        Self::on_grid(0, vec![1.0], 0.0, 0.0)
    }

    /// An untilted PLD, exact by definition (error 0).
    pub(super) fn on_grid(offset: i64, probs: Vec<f64>, infinity: f64, shift: f64) -> Self {
        Self {
            offset,
            probs,
            infinity,
            shift,
            tilt: 0.0,
            log_scale: 0.0,
            error: 0.0,
            floor: f64::NEG_INFINITY,
        }
    }

    pub(super) fn is_identity(&self) -> bool {
        self.probs.len() == 1
            && self.probs[0] == 1.0
            && self.offset == 0
            && self.shift == 0.0
            && self.infinity == 0.0
            && self.error == 0.0
            && self.log_scale == 0.0
    }

    /// The loss of entry `i`.
    pub(super) fn loss(&self, d: f64, i: usize) -> f64 {
        (self.offset + i as i64) as f64 * d + self.shift
    }

    /// The (untilted) mass of entry `i`.
    pub(super) fn mass(&self, d: f64, i: usize) -> f64 {
        let p = self.probs[i];
        if self.tilt == 0.0 || p == 0.0 {
            p
        } else {
            p * (self.log_scale - self.tilt * self.loss(d, i)).exp()
        }
    }

    /// The bound on |δ̂(ε) − δ(ε)| from `error`: Σ_{Lᵢ>ε} |eᵢ|·e^{log_scale − λLᵢ}(1 − e^{ε−Lᵢ})
    /// ≤ error·e^{log_scale − λε}·max_{x>0} e^{−λx}(1 − e^{−x}), and that maximum is
    /// c(λ) = λ^λ/(1 + λ)^{1+λ} (1 for λ = 0).
    pub(super) fn error_at(&self, epsilon: f64) -> f64 {
        if self.error == 0.0 {
            return 0.0;
        }
        let l = self.tilt;
        if l == 0.0 {
            return self.error;
        }
        let log_c = l * l.ln() - (1.0 + l) * l.ln_1p();
        self.error * (self.log_scale - l * epsilon + log_c).exp()
    }

    /// δ̂(ε): the hockey-stick divergence of the computed masses (no error term).
    pub(super) fn delta(&self, d: f64, epsilon: f64) -> f64 {
        let mut delta = self.infinity;
        for i in 0..self.probs.len() {
            let loss = self.loss(d, i);
            if loss > epsilon && self.probs[i] > 0.0 {
                delta += -(epsilon - loss).exp_m1() * self.mass(d, i);
            }
        }
        delta.clamp(0.0, 1.0)
    }

    /// An upper bound on the exact composition's δ(ε): δ̂(ε) plus the error bound (1 below the
    /// floor).
    pub(super) fn delta_upper(&self, d: f64, epsilon: f64) -> f64 {
        if epsilon < self.floor {
            return 1.0;
        }
        (self.delta(d, epsilon) + self.error_at(epsilon)).min(1.0)
    }

    /// A lower bound on the exact composition's δ(ε): δ̂(ε) minus the error bound.
    pub(super) fn delta_lower(&self, d: f64, epsilon: f64) -> f64 {
        (self.delta(d, epsilon) - self.error_at(epsilon)).max(0.0)
    }

    /// Smallest ε ≥ 0 with δ̂(ε) ≤ `delta` (+∞ if the mass at +∞ exceeds it), exactly for the
    /// discrete PLD: on each gap between consecutive losses δ(ε) = M − e^ε·W with M, W the masses
    /// of P and Q above the gap (as `dp_accounting`'s `_get_epsilon_for_delta`). W is summed
    /// as ln W (log-sum-exp): e^{−L} underflows for L > 745 (10⁸ steps reach ε ≈ 6700, where
    /// W = 0 once made every ε a grid point and the optimistic ε 0).
    pub(super) fn epsilon(&self, d: f64, delta: f64) -> f64 {
        if self.infinity > delta {
            return f64::INFINITY;
        }
        let (mut mass_p, mut log_q) = (self.infinity, f64::NEG_INFINITY);
        for i in (0..self.probs.len()).rev() {
            let loss = self.loss(d, i);
            if mass_p > delta && log_q > f64::NEG_INFINITY && (mass_p - delta).ln() - log_q >= loss
            {
                break;
            }
            let p = self.mass(d, i);
            if p > 0.0 {
                mass_p += p;
                log_q = log_add(log_q, p.ln() - loss);
            }
        }
        if mass_p <= delta || log_q == f64::NEG_INFINITY {
            return 0.0;
        }
        ((mass_p - delta).ln() - log_q).max(0.0)
    }

    /// An ε ≥ 0 with [`Pmf::delta_upper`](ε) ≤ `delta`, as small as found: then the exact
    /// composition's δ(ε) ≤ δ, so its ε is at most this (δ(ε) is non-increasing). `None` when
    /// no ε up to 10⁶ passes although the mass at +∞ is below δ: the error bound is too large
    /// for this δ.
    pub(super) fn epsilon_upper(&self, d: f64, delta: f64) -> Option<f64> {
        if self.infinity > delta {
            return Some(f64::INFINITY);
        }
        let ok = |eps: f64| self.delta_upper(d, eps) <= delta;
        let mut best: Option<f64> = None;
        let mut x = self.epsilon(d, delta).max(self.floor).max(0.0);
        for _ in 0..6 {
            if ok(x) {
                best = Some(best.map_or(x, |b: f64| b.min(x)));
            }
            // A little below δ − E(x), so that the next point passes despite the rounding of
            // δ̂ at it (it solves δ̂ = target only up to rounding).
            let target = delta - 1.01 * self.error_at(x) - 1e-12 * delta;
            if target <= self.infinity {
                break;
            }
            let next = self.epsilon(d, target).max(self.floor).max(0.0);
            if next == x {
                break;
            }
            x = next;
        }
        if best.is_some() {
            return best;
        }
        // The error term is not small at these points: step up until one passes, then bisect.
        let mut fail = x;
        let mut step = 1e-3_f64.max(x * 1e-3);
        let mut pass = x + step;
        while !ok(pass) {
            if pass > 1e6 {
                return None;
            }
            fail = pass;
            step *= 2.0;
            pass += step;
        }
        for _ in 0..60 {
            let mid = 0.5 * (fail + pass);
            if mid <= fail || mid >= pass {
                break;
            }
            if ok(mid) {
                pass = mid;
            } else {
                fail = mid;
            }
        }
        Some(pass)
    }

    /// An ε ≥ 0 at which [`Pmf::delta_lower`](ε) > `delta`, as large as found (0 if none):
    /// then the exact composition's δ(ε) > δ, so its ε is above this.
    pub(super) fn epsilon_lower(&self, d: f64, delta: f64) -> f64 {
        let ok = |eps: f64| self.delta_lower(d, eps) > delta;
        let mut best = 0.0_f64;
        let mut x = self.epsilon(d, delta);
        if !x.is_finite() {
            // The mass at +∞ alone exceeds δ (it carries no round-off).
            return f64::INFINITY;
        }
        for _ in 0..6 {
            let below = x - 1e-12 * x.abs().max(1.0);
            if below > best && ok(below) {
                best = below;
            }
            // A little above δ + E, so that the next point passes despite rounding (the
            // error term grows as ε falls: ≥ 1 % above it here).
            let next = self.epsilon(d, delta + 1.01 * self.error_at(below) + 1e-12 * delta);
            if next >= x {
                break;
            }
            x = next;
        }
        best
    }
}

/// Unit round-off of f64.
pub(super) const U: f64 = f64::EPSILON / 2.0;

/// Error bound of one FFT of length n, per unit of input: each output's error is at most
/// `fft_error(n)`·‖x‖₁, and the whole output's 2-norm error at most `fft_error(n)`·‖y‖₂.
///
/// Why this constant (hand-written: no crate bounds rustfft's error). Higham (2002, *Accuracy
/// and Stability of Numerical Algorithms*, 2nd ed., Theorem 24.2): the radix-2 Cooley–Tukey FFT
/// computes ŷ with ‖ŷ − y‖₂ ≤ (log₂n·η/(1 − log₂n·η))·‖y‖₂, η = μ + γ₄(√2 + μ), μ the error of
/// the twiddle factors (≈ 7.7u with μ = 2u). The proof is the error analysis of a product of
/// log₂n sparse butterfly matrices (Higham §3.5); the same analysis taken componentwise gives
/// |ŷₖ − yₖ| ≤ ((1 + η)^{log₂n} − 1)·‖x‖₁, as in an FFT every input reaches every output by
/// exactly one path of twiddles of modulus 1. rustfft's plans for n = 2ᵃ3ᵇ5ᶜ ([`fast_len`])
/// are mixed-radix and Good–Thomas factorizations of the same kind, with butterflies of sizes
/// 2–32 whose per-stage error per factor of two in n is below radix-2's; the bound takes
/// η = 8u per ⌈log₂n⌉ and a safety factor of 4 on top. Measured (tests): the actual errors are
/// 100–1000 times below it.
pub(super) fn fft_error(n: usize) -> f64 {
    let stages = f64::from(usize::BITS - n.max(2).saturating_sub(1).leading_zeros());
    4.0 * ((stages * (8.0 * U).ln_1p()).exp_m1())
}

/// Relative error bound of zᵀ by [`complex_pow`]: at most 2⌈log₂T⌉ complex products, each
/// within √5·u relative (Brent, Percival & Zimmermann 2007), taken as 3u.
pub(super) fn pow_error(times: u64) -> f64 {
    let products = 2.0 * f64::from(u64::BITS - times.leading_zeros());
    (products * (3.0 * U).ln_1p()).exp_m1()
}

// ---------------------------------------------------------------------------------------------
// Convolution
// ---------------------------------------------------------------------------------------------

pub(super) fn fft_pair(
    planner: &mut FftPlanner<f64>,
    n: usize,
) -> (Arc<dyn Fft<f64>>, Arc<dyn Fft<f64>>) {
    (planner.plan_fft_forward(n), planner.plan_fft_inverse(n))
}

/// Linear convolution of two non-negative sequences (FFT for large inputs), with a bound on
/// the ℓ¹ norm of its floating-point error (see [`fft_error`]).
pub(super) fn convolve(a: &[f64], b: &[f64]) -> (Vec<f64>, f64) {
    let len = a.len() + b.len() - 1;
    let (mass_a, mass_b): (f64, f64) = (a.iter().sum(), b.iter().sum());
    if a.len().saturating_mul(b.len()) <= DIRECT_CONVOLUTION_MAX_WORK {
        let mut out = vec![0.0; len];
        for (i, &x) in a.iter().enumerate() {
            for (j, &y) in b.iter().enumerate() {
                out[i + j] += x * y;
            }
        }
        // Sums of at most min(|a|, |b|) non-negative products: relative error ≤ γ_{k+1}.
        let k = a.len().min(b.len()) as f64 + 1.0;
        let error = (k * U / (1.0 - k * U)) * mass_a * mass_b * (1.0 + 2.0 * U);
        return (out, error);
    }
    let n = len.next_power_of_two();
    let mut planner = FftPlanner::<f64>::new();
    let (forward, inverse) = fft_pair(&mut planner, n);
    let same = std::ptr::eq(a, b);
    // The spectra's componentwise error bound.
    let e = fft_error(n) * (mass_a + if same { 0.0 } else { mass_b });
    let mut spectral_error_sq = 0.0;
    let spectrum: Vec<Complex<f64>> = if same {
        let mut buf: Vec<Complex<f64>> = (0..n)
            .map(|i| Complex::new(a.get(i).copied().unwrap_or(0.0), 0.0))
            .collect();
        forward.process(&mut buf);
        buf.iter()
            .map(|c| {
                let m = c.norm();
                let bound = e * (2.0 * m + e) + 3.0 * U * m * m;
                spectral_error_sq += bound * bound;
                c * c
            })
            .collect()
    } else {
        // Both real inputs in one complex FFT: c = a + i·b, A_k = (C_k + conj C_{n−k})/2,
        // B_k = (C_k − conj C_{n−k})/(2i).
        let mut buf: Vec<Complex<f64>> = (0..n)
            .map(|i| {
                Complex::new(
                    a.get(i).copied().unwrap_or(0.0),
                    b.get(i).copied().unwrap_or(0.0),
                )
            })
            .collect();
        forward.process(&mut buf);
        (0..n)
            .map(|k| {
                let c = buf[k];
                let cr = buf[(n - k) % n].conj();
                let fa = (c + cr) * 0.5;
                let fb = (c - cr) * Complex::new(0.0, -0.5);
                // A_k and B_k are within e (+ one rounding) of the exact ones.
                let ek = e * (1.0 + 2.0 * U);
                let (ma, mb) = (fa.norm(), fb.norm());
                let bound = ek * (ma + mb + ek) + 3.0 * U * ma * mb;
                spectral_error_sq += bound * bound;
                fa * fb
            })
            .collect()
    };
    let mut out = spectrum;
    inverse.process(&mut out);
    let scale = 1.0 / n as f64;
    let result: Vec<f64> = out.iter().take(len).map(|c| c.re * scale).collect();
    (result, inverse_error(&out, scale, n, spectral_error_sq))
}

/// ℓ¹ bound on the error of an inverse FFT's output (all n entries, `scale` = 1/n applied),
/// given the 2-norm bound of its input's error: the exact inverse DFT maps a spectral error E
/// to an output error of 2-norm ‖E‖₂/√n, so ℓ¹ ≤ ‖E‖₂; its own round-off is at most
/// [`fft_error`]·‖output‖₂ in 2-norm (Higham, Theorem 24.2), so ℓ¹ ≤ √n times that.
pub(super) fn inverse_error(
    out: &[Complex<f64>],
    scale: f64,
    n: usize,
    spectral_error_sq: f64,
) -> f64 {
    let norm2: f64 = out
        .iter()
        .map(|c| (c * scale).norm_sqr())
        .sum::<f64>()
        .sqrt();
    let g = fft_error(n);
    spectral_error_sq.sqrt() + (n as f64).sqrt() * g * norm2 / (1.0 - g)
}

/// A shift (only optimistic PLDs have one) rounded toward −∞: a computed sum or product of
/// shifts is within one rounding of the exact one, and a lower loss keeps the optimistic PLD a
/// lower bound.
pub(super) fn round_shift_down(shift: f64) -> f64 {
    if shift == 0.0 { 0.0 } else { shift.next_down() }
}

/// The shift of a composition (see [`round_shift_down`]).
pub(super) fn add_shifts(a: f64, b: f64) -> f64 {
    round_shift_down(a + b)
}

/// Composition of two discrete PLDs of one direction, with tails truncated to the safe side,
/// and the error bound carried: ‖â∗b̂ − a∗b‖₁ ≤ e_a·‖b‖₁ + e_b·‖a‖₁ + e_a·e_b + the
/// convolution's own round-off. Only untilted PLDs are composed here (a tilted one is the
/// whole ledger's, composed by [`self_compose_pmf`] with the identity).
pub(super) fn compose_pmfs(a: &Pmf, b: &Pmf, estimate: Estimate, d: f64) -> Pmf {
    if a.is_identity() {
        return b.clone();
    }
    if b.is_identity() {
        return a.clone();
    }
    debug_assert!(a.tilt == 0.0 && b.tilt == 0.0);
    let (probs, round_off) = convolve(&a.probs, &b.probs);
    let (mass_a, mass_b): (f64, f64) = (a.probs.iter().sum(), b.probs.iter().sum());
    let error = (a.error * (mass_b + b.error) + b.error * mass_a + round_off) * (1.0 + 4.0 * U);
    let infinity = a.infinity + b.infinity - a.infinity * b.infinity;
    let mut out = Pmf::on_grid(
        a.offset + b.offset,
        probs,
        infinity,
        add_shifts(a.shift, b.shift),
    );
    out.error = error;
    truncate(&mut out, estimate, d);
    out
}

/// Clips FFT round-off below zero, then cuts at most [`TAIL_MASS_TRUNCATION`]/2 (tilted) from
/// each end: pessimistic — low end moved up to the first kept loss (tilted: dropped, and the
/// floor raised to the first kept loss), high end to +∞ (tilted: untilted, with its error
/// bound); optimistic — low end dropped, high end moved down to the last kept loss. Clipping
/// and moving mass do not increase the ℓ¹ error (moving a tilted mass down by j steps
/// multiplies it by e^{−λjΔ} ≤ 1); an untilted cut's error stays inside the error term.
pub(super) fn truncate(pmf: &mut Pmf, estimate: Estimate, d: f64) {
    for p in &mut pmf.probs {
        // NaN or negative → 0.
        if p.is_nan() || *p < 0.0 {
            *p = 0.0;
        }
    }
    let half = TAIL_MASS_TRUNCATION / 2.0;
    let n = pmf.probs.len();
    let prefix = |iter: &mut dyn Iterator<Item = f64>| {
        let mut s = 0.0;
        let mut count = 0;
        for v in iter {
            if s + v > half {
                break;
            }
            s += v;
            count += 1;
        }
        (count, s)
    };
    let (left, left_mass) = prefix(&mut pmf.probs.iter().copied());
    let (right, right_mass) = prefix(&mut pmf.probs.iter().rev().copied());
    if left + right >= n {
        // Everything is below the threshold (e.g. all mass at +∞): keep as is.
        return;
    }
    let tilted = pmf.tilt > 0.0;
    let mut kept: Vec<f64> = pmf.probs[left..n - right].to_vec();
    match estimate {
        Estimate::Pessimistic => {
            if !tilted {
                kept[0] += left_mass;
            } else if left > 0 {
                pmf.floor = pmf.floor.max(pmf.loss(d, left));
            }
            if right > 0 {
                let cut = if tilted {
                    // e^{log_scale − λL} is largest at the lowest cut loss.
                    let scale = (pmf.log_scale - pmf.tilt * pmf.loss(d, n - right)).exp();
                    (right_mass + pmf.error) * scale
                } else {
                    right_mass
                };
                pmf.infinity = (pmf.infinity + cut).min(1.0);
            }
        }
        Estimate::Optimistic => {
            let last = kept.len() - 1;
            if tilted {
                let factor = (-pmf.tilt * d).exp();
                let mut f = factor;
                for &v in &pmf.probs[n - right..] {
                    kept[last] += v * f;
                    f *= factor;
                }
            } else {
                kept[last] += right_mass;
            }
        }
    }
    pmf.offset += left as i64;
    pmf.probs = kept;
}

/// T-fold self-composition by repeated squaring (pairwise FFT convolutions, truncated after
/// each): a slower, independent route to the same PLD, kept to cross-check
/// [`self_compose_pmf`] in the tests.
#[cfg(test)]
pub(super) fn self_compose_pmf_by_squaring(
    pmf: &Pmf,
    times: u64,
    estimate: Estimate,
    d: f64,
) -> Pmf {
    let mut result: Option<Pmf> = None;
    let mut base = pmf.clone();
    let mut t = times;
    while t > 0 {
        if t & 1 == 1 {
            result = Some(match result {
                None => base.clone(),
                Some(r) => compose_pmfs(&r, &base, estimate, d),
            });
        }
        t >>= 1;
        if t > 0 {
            base = compose_pmfs(&base, &base, estimate, d);
        }
    }
    result.unwrap_or_else(Pmf::identity)
}

/// Smallest n ≥ `len` of the form 2ᵃ3ᵇ5ᶜ (sizes rustfft transforms fast).
pub(super) fn fast_len(len: usize) -> usize {
    let mut best = len.next_power_of_two();
    let mut p5 = 1_usize;
    while p5 < best {
        let mut p35 = p5;
        while p35 < best {
            let mut n = p35;
            while n < len {
                n *= 2;
            }
            best = best.min(n);
            p35 *= 3;
        }
        p5 *= 5;
    }
    best
}

/// Index window [lower, upper] (relative to T·offset) outside which the T-fold composition of
/// `probs` has mass ≤ `tail` (≤ tail/2 each side), by the Chernoff bound
/// P(S ≥ u) ≤ exp(T·K(λ) − λu), K the cumulant generating function of one index, minimized over
/// a geometric grid of λ (as `dp_accounting`'s `compute_self_convolve_bounds`, with a wider grid).
pub(super) fn chernoff_window(probs: &[f64], times: u64, tail: f64) -> (u64, u64) {
    let m = probs.len();
    let full = (m as u64 - 1).saturating_mul(times);
    let t = times as f64;
    let log_2_over = (2.0 / tail).ln();
    let log_p: Vec<f64> = probs.iter().map(|&p| p.ln()).collect();
    let cgf = |lambda: f64| -> f64 {
        let max = log_p
            .iter()
            .enumerate()
            .map(|(i, &lp)| lp + lambda * i as f64)
            .fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = log_p
            .iter()
            .enumerate()
            .map(|(i, &lp)| (lp + lambda * i as f64 - max).exp())
            .sum();
        max + sum.ln()
    };
    let (mut lower, mut upper) = (0_u64, full);
    let scale = 1.0 / (m.max(2) - 1) as f64;
    // λ·(m − 1) from 1e-4 to ≈ 700, factor √2.
    let mut x = 1e-4;
    while x < 700.0 {
        let lambda = x * scale;
        let up = (t * cgf(lambda) + log_2_over) / lambda;
        if up.is_finite() && up >= 0.0 {
            upper = upper.min(up.ceil() as u64);
        }
        let lo = (t * cgf(-lambda) + log_2_over) / -lambda;
        if lo.is_finite() && lo > 0.0 {
            lower = lower.max(lo.floor() as u64);
        }
        x *= std::f64::consts::SQRT_2;
    }
    if lower > upper {
        (0, full)
    } else {
        (lower, upper)
    }
}

/// z^T by repeated squaring.
pub(super) fn complex_pow(z: Complex<f64>, times: u64) -> Complex<f64> {
    let mut result = Complex::new(1.0, 0.0);
    let mut base = z;
    let mut t = times;
    while t > 0 {
        if t & 1 == 1 {
            result *= base;
        }
        t >>= 1;
        if t > 0 {
            base = base * base;
        }
    }
    result
}

/// `pmf` (untilted) tilted by λ ≥ 0: masses pᵢ·e^{λLᵢ − log M}, M = Σ pᵢe^{λLᵢ} (the mass at +∞
/// is kept untilted, apart). Each tilted mass is within 4u relative of the exact one: an ℓ¹
/// error of 4u·(mass), carried in `error`.
pub(super) fn tilt_pmf(pmf: &Pmf, lambda: f64, d: f64) -> Pmf {
    if lambda == 0.0 {
        return pmf.clone();
    }
    let logs: Vec<f64> = (0..pmf.probs.len())
        .map(|i| pmf.probs[i].ln() + lambda * pmf.loss(d, i))
        .collect();
    let log_m = log_sum_exp(&logs);
    let probs: Vec<f64> = logs.iter().map(|l| (l - log_m).exp()).collect();
    let mass: f64 = probs.iter().sum();
    Pmf {
        probs,
        tilt: lambda,
        log_scale: log_m,
        error: pmf.error * (-log_m).exp() + 4.0 * U * mass,
        ..pmf.clone()
    }
}

/// ln Σ e^{xᵢ} (−∞ for none).
pub(super) fn log_sum_exp(xs: &[f64]) -> f64 {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return max;
    }
    max + xs.iter().map(|x| (x - max).exp()).sum::<f64>().ln()
}

/// T-fold self-composition by a single FFT: the circular T-fold convolution over a length
/// covering the Chernoff window of mass ≥ 1 − [`TAIL_MASS_TRUNCATION`] (as `dp_accounting`'s
/// `self_convolve`), of the (possibly tilted, see [`Pmf`]) masses. The ≤
/// [`TAIL_MASS_TRUNCATION`] outside the window wraps around into it (carried in the error);
/// the pessimistic PLD adds that bound, untilted, to its mass at +∞ (a tilted one only the part
/// above the window, the part below being under its floor). The mass at +∞ composes as
/// 1 − (1 − m)^T.
///
/// The error bound (ℓ¹, tilted units) of the result: with F̂ₖ the computed spectrum, e = its
/// componentwise error bound ([`fft_error`]·‖p‖₁) and m = ‖p‖₁ ≥ |Fₖ|,
/// |F̂ₖᵀ − Fₖᵀ| ≤ T·e·Wₖ^{T−1} with Wₖ = min(|F̂ₖ| + e, m + e) (mean value theorem), plus
/// [`pow_error`]·|F̂ₖ|ᵀ; their 2-norm over k bounds the output's ℓ¹ error through the inverse
/// transform ([`inverse_error`]); plus the input's own error, ((m + e₀)ᵀ − mᵀ), and the
/// wrapped tail.
pub(super) fn self_compose_pmf(pmf: &Pmf, times: u64, estimate: Estimate, d: f64) -> Result<Pmf> {
    if times == 1 {
        return Ok(pmf.clone());
    }
    let infinity = -(times as f64 * (-pmf.infinity).ln_1p()).exp_m1();
    let times_i = i64::try_from(times)
        .ok()
        .filter(|_| times <= MAX_STEPS)
        .ok_or_else(|| {
            invalid(format!(
                "steps T = {times}; allowed: 1 to {MAX_STEPS} (2^53)"
            ))
        })?;
    let (lower, upper) = chernoff_window(&pmf.probs, times, TAIL_MASS_TRUNCATION);
    // Checked: a window of 2^64 points must be refused, never wrap to 0 (which once made an
    // empty PLD and a false ε ≤ 0).
    let points = upper.checked_sub(lower).and_then(|w| w.checked_add(1));
    let window = points
        .filter(|&w| w <= MAX_COMPOSED_POINTS)
        .and_then(|w| usize::try_from(w).ok())
        .ok_or_else(|| {
            invalid(format!(
                "the {times}-fold composition would need {} grid points in its window; allowed: at most {MAX_COMPOSED_POINTS} {WINDOW_TOO_LARGE}",
                points.map_or_else(|| "more than 2^64".to_string(), |p| p.to_string()),
            ))
        })?;
    let n = fast_len(window.max(pmf.probs.len()));
    let mut planner = FftPlanner::<f64>::new();
    let (forward, inverse) = fft_pair(&mut planner, n);
    let mut buf: Vec<Complex<f64>> = (0..n)
        .map(|i| Complex::new(pmf.probs.get(i).copied().unwrap_or(0.0), 0.0))
        .collect();
    forward.process(&mut buf);
    let mass: f64 = pmf.probs.iter().sum::<f64>() * (1.0 + pmf.probs.len() as f64 * U);
    let e = fft_error(n) * mass;
    let t = times as f64;
    let rho = pow_error(times);
    let mut spectral_error_sq = 0.0;
    for c in &mut buf {
        let m = c.norm();
        let w = (m + e).min(mass + e);
        let bound = t * e * w.powf(t - 1.0) + rho * m.powf(t);
        spectral_error_sq += bound * bound;
        *c = complex_pow(*c, times);
    }
    inverse.process(&mut buf);
    let scale = 1.0 / n as f64;
    let round_off = inverse_error(&buf, scale, n, spectral_error_sq);
    let input_error = if pmf.error > 0.0 {
        mass.powf(t) * (t * (pmf.error / mass).ln_1p()).exp_m1()
    } else {
        0.0
    };
    let start = (lower % n as u64) as usize;
    let probs: Vec<f64> = (0..window)
        .map(|j| buf[(start + j) % n].re * scale)
        .collect();
    let offset = pmf
        .offset
        .checked_mul(times_i)
        .and_then(|o| o.checked_add(i64::try_from(lower).ok()?))
        .ok_or_else(|| {
            invalid(format!(
                "composing {times} times needs loss indices beyond 2^63 on this grid {WINDOW_TOO_LARGE}"
            ))
        })?;
    let tilted = pmf.tilt > 0.0;
    let mut out = Pmf {
        offset,
        probs,
        infinity,
        shift: round_shift_down(t * pmf.shift),
        tilt: pmf.tilt,
        log_scale: t * pmf.log_scale,
        error: (round_off + input_error + TAIL_MASS_TRUNCATION) * (1.0 + 4.0 * U),
        floor: f64::NEG_INFINITY,
    };
    if estimate == Estimate::Pessimistic {
        out.infinity = if tilted {
            // Above the window: tilted mass ≤ tail/2, untilted ≤ that times e^{log_scale − λL}
            // at the window's top; below it, the floor.
            let top = out.loss(d, window - 1);
            out.floor = out.loss(d, 0);
            out.infinity + TAIL_MASS_TRUNCATION * (out.log_scale - out.tilt * top).exp()
        } else {
            out.infinity + TAIL_MASS_TRUNCATION
        }
        .min(1.0);
    }
    truncate(&mut out, estimate, d);
    Ok(out)
}
