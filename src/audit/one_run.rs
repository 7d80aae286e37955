//! Auditing in one training run: canaries, the guessing game and a lower confidence bound on ε.
//!
//! Steinke, Nasr & Jagielski, "Privacy Auditing with One (1) Training Run", NeurIPS 2023
//! (arXiv:2305.08846). m canaries are each included in the training data independently with
//! probability 1/2 (S_i ∈ {−1, +1} uniform); the model is trained once; an auditor that sees only
//! the release (all iterates: white-box; the final model: black-box) scores every canary and
//! guesses "in" for the k₊ highest scores and "out" for the k₋ lowest, abstaining on the rest:
//! r = k₊ + k₋ guesses, W of them correct.
//!
//! # Guarantee
//! **Theorem 3.1 of Steinke et al.** Let M be (ε, δ)-DP with respect to adding or removing one
//! canary (all other inputs fixed), S uniform on {−1, +1}^m, and T = A(M(S)) ∈ {−1, 0, +1}^m any
//! post-processing with at most r non-zero entries. Then for every v,
//!
//! P[W ≥ v] ≤ f(v) + 2mδ · max_{i ∈ {1, …, v}} (f(v − i) − f(v)) / i,
//! f(v) := P[Binomial(r, e^ε/(1 + e^ε)) ≥ v].
//!
//! (The maximum over i ∈ {1, …, m} in the paper reduces to i ≤ v because f(v − i) = 1 beyond
//! it; the authors' code in their appendix computes exactly this.) Call the right-hand side
//! B(ε, v); [`tail_bound`] evaluates it with **exact binomial tails** (statrs' regularized
//! incomplete beta function and log-pmf), rounded up — never a normal approximation.
//!
//! The reported ε lower bound is a point ε̂ with B(ε̂, V) ≤ β found by bisection (the largest
//! such point up to the bisection resolution, kept on the rejected side, so rounded down), or 0.
//! It is valid even where B is not monotone in ε: if the mechanism is (ε*, δ)-DP it is also
//! (ε', δ)-DP for every ε' ≥ ε*, so B̃(v) := min_{ε' ≥ ε*} B(ε', v) ≥ P[W ≥ v] for every v;
//! the event {ε̂ > ε*} implies B̃(V) ≤ β, and with v* the smallest v with B̃(v) ≤ β,
//! P[B̃(V) ≤ β] ≤ P[V ≥ v*] ≤ B̃(v*) ≤ β. So **P[ε̂ > ε*] ≤ β**: ε̂ is a one-sided lower
//! confidence bound at level 1 − β on the ε of any (ε, δ) claim the mechanism keeps at that δ.
//!
//! # Assumptions
//! - Canaries are included independently with probability exactly 1/2, drawn from randomness
//!   the auditor does not use; the claimed (ε, δ) holds for adding/removing one canary.
//! - The guess sizes (k₊, k₋) are fixed before the scores are seen. When several are tried
//!   on the same scores, β is split equally over them (union bound) and the split is reported.
//! - Guesses are a function of the release and the public canary definitions only.
//!
//! # What one run can and cannot see
//! The bound tops out near ln(p/(1 − p)) with p = β^{1/m} (every canary guessed correctly):
//! about 5.8 at m = 1000, β = 0.05. For a Gaussian mechanism the bound is further from the
//! claim: a μ-GDP canary audited at m = 1000 gives about 0.75·ε(μ, 10⁻⁵) even with μ doubled
//! (see the `one_run` integration tests for the derivation); the Gaussian-DP bound below is
//! tighter.
//!
//! # The f-DP / Gaussian-DP bound
//! **Mahloujifar, Melis & Chaudhuri 2024** ("Auditing f-Differential Privacy in One Run",
//! arXiv:2410.22235, ICML 2025; the recursion is their `audit_rh_with_cap`, as in the authors'
//! `privacy_guard` and in Google's `jax_privacy` auditor). Let M be f-DP with respect to adding or
//! removing one canary, for a symmetric trade-off function f, and let
//! ḡ(x) = 1 − f(x) be its blow-up (the largest power of a test at level x) with inverse ḡ⁻¹. For
//! μ-GDP, f = G_μ(x) = Φ(Φ⁻¹(1 − x) − μ) and ḡ⁻¹(y) = Φ(Φ⁻¹(y) − μ). With m canaries, r guesses
//! and v correct, start from ρ_v = τ·v/m, h_v = τ·(r − v)/m and for i = v − 1, …, 0
//!
//! h_i = max(h_{i+1}, ḡ⁻¹(ρ_{i+1})),   ρ_i = min(1, ρ_{i+1} + i/(r − i)·(h_i − h_{i+1})).
//!
//! Their theorem: if P[W ≥ v] ≥ τ then ρ_0 + h_0 ≤ r/m. So when ρ_0 + h_0 > r/m, P[W ≥ v] < τ,
//! and the test "reject μ-GDP when the observed count V has ρ_0 + h_0 > r/m at τ = β" has level
//! β: with C the set of counts it rejects at and v* = min C, P[V ∈ C] ≤ P[W ≥ v*] < β. The
//! reported μ̂ is the largest μ the test rejects (bisection, kept on the rejected side); by the
//! argument for ε above (a μ*-GDP mechanism is μ-GDP for every μ ≥ μ*), **P[μ̂ > μ*] ≤ β**.
//! The guesses may be "in" and "out" (the paper's game, T ∈ {−1, 0, +1}^m): for a symmetric f
//! with concave ḡ, a canary's correct-guess mass is at most ḡ of its wrong-guess mass whichever
//! way it is guessed. The ε at δ reported beside μ̂ is the ε of the μ̂-GDP profile (rounded
//! down): a lower bound on the ε of the claim **read as a Gaussian-DP claim**, not on the
//! (ε, δ) of an arbitrary mechanism; the verdict of a GDP claim compares μ̂ with its μ.
//! Floating point: ρ_0 + h_0 must exceed r/m by a relative 1e-9 to reject (Φ and Φ⁻¹ are
//! accurate to about 1e-11 relative; a unit test checks that perturbing ḡ⁻¹ by a relative 1e-8
//! moves ρ₀ + h₀ by less than 1e-6 relative).

pub mod calibrated;
pub mod order;

use serde::{Deserialize, Serialize};
use statrs::function::factorial::ln_binomial;

use crate::bounds::binomial_upper_tail;
use crate::error::{Error, Result};
use crate::mechanisms::canary_trainer::{
    Canaries, DataSet, LedgerClaim, ThreatModel, TrainerConfig, TrainingData, scores, train,
};
use crate::rng::{Seed, Stream};

/// Relative error tolerated in a log-pmf sum (statrs' ln-gamma is accurate to about 1e-14;
/// 1e-6 leaves a wide margin). Tails are inflated by it, never deflated.
const PMF_REL_ERROR: f64 = 1e-6;

/// Largest ε the bisection looks at: B(ε, v) → 1 as ε → ∞ whenever v ≤ r, so no bound gets
/// near it (at ε = 50 already P[Bin(r, p) = r] ≥ 1 − r·e^{−50}).
const MAX_EPSILON: f64 = 200.0;

/// Bisection halvings of the ε bracket.
const BISECTIONS: usize = 60;

/// Most numbers a white-box release may hold (all iterates; 1.6 GB of f64).
pub const MAX_RELEASED_VALUES: f64 = 2e8;

/// Smallest number of canaries the audit accepts.
pub const MIN_CANARIES: usize = 2;

/// The name of the inequality, printed with every bound.
pub const INEQUALITY: &str = "Steinke, Nasr & Jagielski 2023, Theorem 3.1: P[W >= v] <= \
    P[Bin(r, e^eps/(1+e^eps)) >= v] + 2 m delta max_i (P[Bin >= v-i] - P[Bin >= v])/i, \
    exact binomial tails (statrs), rounded up";

/// What the guesser did: r guesses, v of them correct.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guesses {
    /// k₊: canaries guessed "in" (the highest scores).
    pub k_plus: usize,
    /// k₋: canaries guessed "out" (the lowest scores).
    pub k_minus: usize,
    /// r = k₊ + k₋: guesses made (the rest abstain).
    pub guesses: usize,
    /// v: correct guesses.
    pub correct: usize,
}

impl Guesses {
    /// v / r, or 0 with no guesses.
    pub fn precision(&self) -> f64 {
        if self.guesses == 0 {
            0.0
        } else {
            self.correct as f64 / self.guesses as f64
        }
    }
}

/// Inclusion bits from S_i ∈ {−1, +1} or {0, 1} (1 = included).
///
/// # Errors
/// Any other value, naming its index.
pub fn inclusion_from_signs(signs: &[i64]) -> Result<Vec<bool>> {
    signs
        .iter()
        .enumerate()
        .map(|(i, &s)| match s {
            1 => Ok(true),
            -1 | 0 => Ok(false),
            other => Err(Error::InvalidConfig(format!(
                "inclusion bit {i} = {other}; allowed: -1 or +1 (or 0 or 1)"
            ))),
        })
        .collect()
}

fn check_scores(scores: &[f64], included: &[bool]) -> Result<()> {
    if scores.len() != included.len() {
        return Err(Error::InvalidSamples(format!(
            "{} scores for {} inclusion bits; allowed: one score per canary",
            scores.len(),
            included.len()
        )));
    }
    if scores.len() < MIN_CANARIES {
        return Err(Error::InvalidConfig(format!(
            "{} canaries; allowed: at least {MIN_CANARIES}",
            scores.len()
        )));
    }
    if let Some((i, s)) = scores.iter().enumerate().find(|(_, s)| !s.is_finite()) {
        return Err(Error::InvalidSamples(format!(
            "score of canary {i} is {s}; allowed: finite numbers"
        )));
    }
    Ok(())
}

/// Guesses "in" for the `k_plus` highest scores and "out" for the `k_minus` lowest (ties broken
/// by canary index, a fixed rule), and counts the correct ones against `included`.
///
/// # Errors
/// Lengths differ, fewer than [`MIN_CANARIES`] canaries, a non-finite score, or
/// k₊ + k₋ > m.
pub fn count_guesses(
    scores: &[f64],
    included: &[bool],
    k_plus: usize,
    k_minus: usize,
) -> Result<Guesses> {
    check_scores(scores, included)?;
    let m = scores.len();
    if k_plus.saturating_add(k_minus) > m {
        return Err(Error::InvalidConfig(format!(
            "k+ = {k_plus} plus k- = {k_minus} guesses for {m} canaries; allowed: k+ + k- <= m"
        )));
    }
    let mut order: Vec<usize> = (0..m).collect();
    // Descending score; ties by index. total_cmp is a total order on the finite scores.
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let correct_in = order[..k_plus].iter().filter(|&&i| included[i]).count();
    let correct_out = order[m - k_minus..]
        .iter()
        .filter(|&&i| !included[i])
        .count();
    Ok(Guesses {
        k_plus,
        k_minus,
        guesses: k_plus + k_minus,
        correct: correct_in + correct_out,
    })
}

fn check_delta(delta: f64) -> Result<()> {
    if !(delta.is_finite() && (0.0..1.0).contains(&delta)) {
        return Err(Error::InvalidConfig(format!(
            "delta = {delta}; allowed: 0 <= delta < 1"
        )));
    }
    Ok(())
}

/// Checks v ≤ r ≤ m and that the privacy parameter `name` = `x` is finite and ≥ 0.
fn check_game(m: usize, r: usize, v: usize, name: &str, x: f64) -> Result<()> {
    if v > r || r > m {
        return Err(Error::InvalidConfig(format!(
            "v = {v} correct of r = {r} guesses for m = {m} canaries; allowed: v <= r <= m"
        )));
    }
    if !(x.is_finite() && x >= 0.0) {
        return Err(Error::InvalidConfig(format!(
            "{name} = {x}; allowed: finite and >= 0"
        )));
    }
    Ok(())
}

/// The largest x in [0, `max`] (to [`BISECTIONS`] halvings, kept on the rejected side) with
/// `rejects(x)`, searching upward from 0 by doubling from 1; 0 when `rejects(0)` is false.
/// Valid as a lower confidence bound without monotonicity of `rejects` (module documentation).
fn largest_rejected(max: f64, rejects: impl Fn(f64) -> Result<bool>) -> Result<f64> {
    if !rejects(0.0)? {
        return Ok(0.0);
    }
    // lo is rejected; find hi not rejected.
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while rejects(hi)? {
        lo = hi;
        hi *= 2.0;
        if hi > max {
            return Ok(lo);
        }
    }
    for _ in 0..BISECTIONS {
        let mid = 0.5 * (lo + hi);
        if rejects(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// B(ε, v) of Theorem 3.1 (see the module documentation): an upper bound on P[W ≥ v] for
/// m canaries, r guesses, against an (ε, δ)-DP mechanism; capped at 1, rounded up.
///
/// f(v) is the exact binomial tail (regularized incomplete beta, inflated by its tolerated
/// error); the δ-term's differences f(v − i) − f(v) = P[v − i ≤ Bin < v] are sums of exact
/// pmfs (never differences of tails, which would cancel), inflated by 1e-6 relative. The
/// success probability e^ε/(1 + e^ε) is rounded up (f grows with it).
///
/// # Errors
/// v > r, r > m, ε negative or not finite, δ outside [0, 1).
pub fn tail_bound(m: usize, r: usize, v: usize, epsilon: f64, delta: f64) -> Result<f64> {
    check_game(m, r, v, "epsilon", epsilon)?;
    check_delta(delta)?;
    if v == 0 {
        return Ok(1.0);
    }
    let p = (1.0 / (1.0 + (-epsilon).exp())).next_up().min(1.0);
    let f_v = binomial_upper_tail(v as u64, r as u64, p);
    if delta == 0.0 || f_v >= 1.0 {
        return Ok(f_v.min(1.0));
    }
    // α = max_{1 ≤ i ≤ v} P[v − i ≤ Bin(r, p) < v] / i.
    let (ln_p, ln_q) = (p.ln(), (-p).ln_1p());
    let ln_pmf = |j: usize| -> f64 {
        if p >= 1.0 {
            return if j == r { 0.0 } else { f64::NEG_INFINITY };
        }
        ln_binomial(r as u64, j as u64) + j as f64 * ln_p + (r - j) as f64 * ln_q
    };
    let mut sum = 0.0_f64;
    let mut alpha = 0.0_f64;
    for i in 1..=v {
        sum += ln_pmf(v - i).exp();
        alpha = alpha.max(sum / i as f64);
    }
    let alpha = (alpha * (1.0 + PMF_REL_ERROR)).min(1.0);
    let bound = f_v + 2.0 * m as f64 * delta * alpha;
    Ok(if bound.is_nan() { 1.0 } else { bound.min(1.0) })
}

/// The one-sided lower confidence bound on ε at `delta`, failure probability `beta`, from
/// (r guesses, v correct) among m canaries: the largest ε (to the bisection's resolution, on the
/// rejected side) with [`tail_bound`] ≤ β, or 0 when not even ε = 0 is rejected. Rounded down.
/// See the module documentation for why it is valid.
///
/// # Errors
/// As [`tail_bound`]; β outside (0, 1).
pub fn epsilon_lower_bound(m: usize, r: usize, v: usize, delta: f64, beta: f64) -> Result<f64> {
    if !(beta.is_finite() && beta > 0.0 && beta < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "failure probability beta = {beta}; allowed: 0 < beta < 1"
        )));
    }
    largest_rejected(MAX_EPSILON, |eps| {
        Ok(tail_bound(m, r, v, eps, delta)? <= beta)
    })
}

/// The name of the f-DP inequality, printed with every Gaussian-DP bound.
pub const GDP_INEQUALITY: &str = "Mahloujifar, Melis & Chaudhuri 2024 (arXiv:2410.22235), f-DP \
    one-run audit with the mu-GDP trade-off function: reject mu-GDP when rho_0 + h_0 > r/m, \
    h_i = max(h_{i+1}, Phi(Phi^-1(rho_{i+1}) - mu)), rho_i = rho_{i+1} + i/(r-i) (h_i - h_{i+1}), \
    rho_v = beta v/m, h_v = beta (r-v)/m";

/// Relative margin by which ρ₀ + h₀ must exceed r/m for the Gaussian-DP test to reject (covers
/// the floating-point error of Φ, Φ⁻¹ and the recursion; see the module documentation).
const GDP_MARGIN: f64 = 1e-9;

/// Largest μ the Gaussian-DP bisection looks at (a μ = 40 canary is guessed right with
/// probability Φ(20) ≈ 1 − 3e-89: no finite count tells larger μ apart).
const MAX_MU: f64 = 40.0;

/// ḡ⁻¹(y) = Φ(Φ⁻¹(y) − μ), the inverse blow-up of μ-GDP (0 at y ≤ 0, capped at 1).
fn gdp_inverse_blow_up(y: f64, mu: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal};
    if y <= 0.0 {
        return 0.0;
    }
    if y >= 1.0 {
        return 1.0;
    }
    let z = Normal::standard().inverse_cdf(y);
    crate::mechanisms::math::std_normal_cdf(z - mu).clamp(0.0, 1.0)
}

/// The Mahloujifar–Melis–Chaudhuri recursion (see the module documentation) for r guesses,
/// v correct, m canaries, against `inverse_blow_up` at level τ: returns ρ₀ + h₀.
fn fdp_recursion(
    m: usize,
    r: usize,
    v: usize,
    tau: f64,
    inverse_blow_up: impl Fn(f64) -> f64,
) -> f64 {
    let mut rho = tau * v as f64 / m as f64;
    let mut h = tau * (r - v) as f64 / m as f64;
    for i in (0..v).rev() {
        let h_new = h.max(inverse_blow_up(rho));
        if h_new == h {
            // Neither h nor ρ can change afterwards.
            break;
        }
        rho = (rho + (i as f64 / (r - i) as f64) * (h_new - h)).min(1.0);
        h = h_new;
    }
    rho + h
}

/// True when (r guesses, v correct) among m canaries rejects μ-GDP at level `tau`
/// (P[W ≥ v] < τ under every μ-GDP mechanism; see the module documentation).
///
/// # Errors
/// v > r, r > m, μ negative or not finite, τ outside (0, 1).
pub fn gdp_rejects(m: usize, r: usize, v: usize, mu: f64, tau: f64) -> Result<bool> {
    check_game(m, r, v, "mu", mu)?;
    if !(tau.is_finite() && tau > 0.0 && tau < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "failure probability beta = {tau}; allowed: 0 < beta < 1"
        )));
    }
    if v == 0 {
        return Ok(false);
    }
    let total = fdp_recursion(m, r, v, tau, |y| gdp_inverse_blow_up(y, mu));
    Ok(total > (r as f64 / m as f64) * (1.0 + GDP_MARGIN))
}

/// The one-sided lower confidence bound on μ of any μ-GDP claim, failure probability `beta`,
/// from (r guesses, v correct) among m canaries: the largest μ (to the bisection's resolution,
/// on the rejected side) that [`gdp_rejects`], or 0 when μ = 0 is not rejected. Rounded down.
///
/// # Errors
/// As [`gdp_rejects`].
pub fn mu_lower_bound(m: usize, r: usize, v: usize, beta: f64) -> Result<f64> {
    largest_rejected(MAX_MU, |mu| gdp_rejects(m, r, v, mu, beta))
}

/// ε at `delta` of the μ-GDP profile, **rounded down**: the largest ε (bisection) whose δ(ε),
/// lowered by the error margin of Φ, still exceeds `delta`; 0 when even ε = 0 does not.
/// (The accountant's [`crate::mechanisms::accountant::gaussian_exact_epsilon`] rounds up, the
/// right side for a claim; a lower bound needs the other.)
pub fn gdp_epsilon_lower(mu: f64, delta: f64) -> f64 {
    use crate::mechanisms::math::{NORMAL_CDF_REL_ERROR, gaussian_dp_delta, std_normal_cdf};
    if !(mu > 0.0 && mu.is_finite() && delta > 0.0 && delta < 1.0) {
        return 0.0;
    }
    let above = |eps: f64| {
        let margin = 2.0 * NORMAL_CDF_REL_ERROR * std_normal_cdf(-eps / mu + mu / 2.0);
        Ok(gaussian_dp_delta(eps, mu) - margin > delta)
    };
    largest_rejected(1e6, above).unwrap_or(0.0)
}

/// Guess sizes tried by default for m canaries: k₊ = k₋ = k for k ∈ {1 %, 2 %, 5 %, 10 %,
/// 20 %} of m (rounded down, at least 1, duplicates dropped). Fixed before any score is seen.
pub fn default_guess_sizes(m: usize) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for pct in [1usize, 2, 5, 10, 20] {
        let k = (m * pct / 100).max(1);
        if 2 * k <= m && !out.contains(&(k, k)) {
            out.push((k, k));
        }
    }
    if out.is_empty() {
        out.push((1, 0));
    }
    out
}

/// One guess size tried, with its bound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The guesses and how many were right.
    pub guesses: Guesses,
    /// Lower confidence bound on ε at this candidate's share of β (rounded down).
    pub epsilon_lower: f64,
    /// This candidate's failure probability (β / number of candidates).
    pub failure_probability: f64,
    /// Lower confidence bound on μ of a μ-GDP claim from the same guesses, at the same share of
    /// β (Mahloujifar et al.; rounded down).
    #[serde(default)]
    pub mu_lower: f64,
    /// The order-statistics bound on ε at δ (the (ε, δ) null family; valid for independent
    /// canaries only, see [`order`]) from the same guesses at the same share of β; rounded down.
    #[serde(default)]
    pub order_epsilon_lower: f64,
    /// The order-statistics bound on μ (the μ-GDP null family; independent canaries only).
    #[serde(default)]
    pub order_mu_lower: f64,
}

/// The order-statistics bounds of a one-run audit (see [`order`]): the best over the guess
/// sizes, and whether they decide the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrderBound {
    /// max over candidates of the bound on ε at δ (the (ε, δ) null family). Rounded down.
    pub epsilon_lower: f64,
    /// Index of the candidate that gave it.
    pub best: usize,
    /// max over candidates of the bound on μ (the μ-GDP null family). Rounded down.
    pub mu_lower: f64,
    /// Index of the candidate that gave it.
    pub mu_best: usize,
    /// ε at δ of the μ-GDP profile at `mu_lower` (rounded down; a Gaussian-DP claim's ε).
    pub gdp_epsilon_lower: f64,
    /// True when these bounds decide the verdict: the canaries are independent channels by
    /// the mechanism's construction or by its author's declaration (`canary_model` says which).
    pub decides: bool,
    /// Why the canaries are, or are not known to be, independent.
    pub canary_model: String,
    /// The inequality and its assumption.
    pub inequality: String,
}

/// What the auditor knows of the canaries' dependence, fixed before any score is seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CanaryModel {
    /// The release is a product of per-canary channels (the reason is reported): the
    /// order-statistics bound decides the verdict.
    Independent(String),
    /// Nothing is known: the bounds of Steinke et al. and Mahloujifar et al. (valid for any
    /// mechanism) decide; the order-statistics bound is printed for reading only.
    Unknown(String),
}

/// The result of a one-run audit of scores: every candidate, and the best bound.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OneRunBound {
    /// m: canaries.
    pub canaries: usize,
    /// Canaries included (S_i = +1).
    pub included: usize,
    /// δ at which ε is bounded.
    pub delta: f64,
    /// β in total.
    pub failure_probability: f64,
    /// How β was split.
    pub beta_split: String,
    /// Every guess size tried.
    pub candidates: Vec<Candidate>,
    /// Index of the candidate with the largest bound (the first of equals).
    pub best: usize,
    /// max over candidates: with probability ≥ 1 − β no candidate overstates ε (union bound),
    /// so this is a lower confidence bound at level 1 − β. Rounded down.
    pub epsilon_lower: f64,
    /// The inequality and its assumptions.
    pub inequality: String,
    /// max over candidates of the Gaussian-DP bound: with probability ≥ 1 − β no μ-GDP
    /// mechanism has μ below it (union bound over the sizes). Rounded down.
    #[serde(default)]
    pub mu_lower: f64,
    /// Index of the candidate with the largest μ bound.
    #[serde(default)]
    pub mu_best: usize,
    /// ε at δ of the μ_lower-GDP profile (rounded down): a lower bound on the ε of a Gaussian-DP
    /// claim, not of an arbitrary (ε, δ) claim.
    #[serde(default)]
    pub gdp_epsilon_lower: f64,
    /// The f-DP inequality.
    #[serde(default)]
    pub gdp_inequality: String,
    /// The order-statistics bounds (absent in reports written before them).
    #[serde(default)]
    pub order: Option<OrderBound>,
}

impl OneRunBound {
    /// The verdict against a claim: μ̂ > μ for a Gaussian-DP claim (`mu` given), else
    /// ε̂ > ε. Which bound decides is fixed by the claim's kind, before any score is seen, so
    /// each verdict is a level-β test on its own.
    pub fn violates(&self, epsilon: f64, mu: Option<f64>) -> bool {
        let (_, lower, claimed) = self.deciding(epsilon, mu);
        lower > claimed
    }

    /// The bound that decides the verdict against a claim, fixed by the claim's kind and the
    /// canary model before any score is seen: (its name, its value, the claimed value).
    pub fn deciding(&self, epsilon: f64, mu: Option<f64>) -> (&'static str, f64, f64) {
        match (self.order.as_ref().filter(|o| o.decides), mu) {
            (Some(o), Some(mu)) => (
                "mu (order-statistics bound, independent canaries)",
                o.mu_lower,
                mu,
            ),
            (Some(o), None) => (
                "epsilon (order-statistics bound, independent canaries)",
                o.epsilon_lower,
                epsilon,
            ),
            (None, Some(mu)) => ("mu (Gaussian-DP bound)", self.mu_lower, mu),
            (None, None) => ("epsilon", self.epsilon_lower, epsilon),
        }
    }

    /// Whether v correct of r guesses would make the deciding bound ([`Self::deciding`]) exceed
    /// the claim at the failure probability `share` (for drawing what the claim allows; false
    /// for an invalid game).
    pub fn exceeds_claim(
        &self,
        r: usize,
        v: usize,
        share: f64,
        epsilon: f64,
        mu: Option<f64>,
    ) -> bool {
        let m = self.canaries;
        match (self.order.as_ref().filter(|o| o.decides), mu) {
            (Some(_), Some(mu)) => {
                order::order_rejects(order::NullFamily::Gaussian, m, r, v, mu, share)
            }
            (Some(_), None) => order::order_rejects(
                order::NullFamily::Approximate { delta: self.delta },
                m,
                r,
                v,
                epsilon,
                share,
            ),
            (None, Some(mu)) => gdp_rejects(m, r, v, mu, share).unwrap_or(false),
            (None, None) => {
                epsilon_lower_bound(m, r, v, self.delta, share).is_ok_and(|e| e > epsilon)
            }
        }
    }

    /// The ε at δ reported as the audit's estimate: the order-statistics bound's where it
    /// decides (read through the μ-GDP profile for a Gaussian-DP claim), else the (ε, δ) bound
    /// of Steinke et al., which holds for every mechanism.
    pub fn epsilon_estimate(&self, mu: Option<f64>) -> f64 {
        match (self.order.as_ref().filter(|o| o.decides), mu) {
            (Some(o), Some(_)) => o.gdp_epsilon_lower,
            (Some(o), None) => o.epsilon_lower,
            (None, _) => self.epsilon_lower,
        }
    }

    /// The inequality of the deciding bound (see [`Self::deciding`]).
    pub fn deciding_inequality(&self, mu: Option<f64>) -> String {
        match (self.order.as_ref().filter(|o| o.decides), mu) {
            (Some(o), _) => o.inequality.clone(),
            (None, Some(_)) => self.gdp_inequality.clone(),
            (None, None) => self.inequality.clone(),
        }
    }
}

/// Audits per-canary scores: for each (k₊, k₋) in `sizes` (fixed in advance), counts the
/// correct guesses and bounds ε at `delta` with failure probability β/|sizes|; the largest
/// bound holds with probability ≥ 1 − β (union bound over the sizes).
///
/// # Errors
/// As [`count_guesses`] and [`epsilon_lower_bound`]; no sizes.
///
/// # Examples
/// ```
/// use dp_audit::audit::one_run::{audit_scores, default_guess_sizes};
/// // A perfectly leaky "mechanism": the score is the inclusion bit.
/// let included: Vec<bool> = (0..1000).map(|i| i % 2 == 0).collect();
/// let scores: Vec<f64> = included.iter().map(|&b| if b { 1.0 } else { 0.0 }).collect();
/// let bound = audit_scores(&scores, &included, 1e-5, 0.05, &default_guess_sizes(1000))?;
/// assert!(bound.epsilon_lower > 3.0);
/// # Ok::<(), dp_audit::Error>(())
/// ```
pub fn audit_scores(
    scores: &[f64],
    included: &[bool],
    delta: f64,
    beta: f64,
    sizes: &[(usize, usize)],
) -> Result<OneRunBound> {
    audit_scores_with(
        scores,
        included,
        delta,
        beta,
        sizes,
        &CanaryModel::Unknown("the canaries' independence was not declared".into()),
    )
}

/// [`audit_scores`] under a canary model: the order-statistics bounds ([`order`]) are computed
/// for every guess size beside the others, and decide the verdict when the model is
/// [`CanaryModel::Independent`].
///
/// # Errors
/// As [`audit_scores`].
pub fn audit_scores_with(
    scores: &[f64],
    included: &[bool],
    delta: f64,
    beta: f64,
    sizes: &[(usize, usize)],
    model: &CanaryModel,
) -> Result<OneRunBound> {
    use rayon::prelude::*;
    check_scores(scores, included)?;
    check_delta(delta)?;
    if sizes.is_empty() {
        return Err(Error::InvalidConfig(
            "no guess sizes; allowed: at least one (k+, k-)".into(),
        ));
    }
    let m = scores.len();
    let share = beta / sizes.len() as f64;
    let guesses = sizes
        .iter()
        .map(|&(kp, km)| count_guesses(scores, included, kp, km))
        .collect::<Result<Vec<_>>>()?;
    // Each candidate's bounds are pure functions of its counts: computed in parallel, in order.
    let candidates = guesses
        .into_par_iter()
        .map(|g| candidate(g, m, delta, share))
        .collect::<Result<Vec<_>>>()?;
    let best = argmax(&candidates, |c| c.epsilon_lower);
    let mu_best = argmax(&candidates, |c| c.mu_lower);
    let mu_lower = candidates[mu_best].mu_lower;
    let order = order_bound(&candidates, delta, model);
    Ok(OneRunBound {
        canaries: m,
        included: included.iter().filter(|&&b| b).count(),
        delta,
        failure_probability: beta,
        beta_split: format!(
            "beta = {beta} split equally over {} guess sizes (union bound): {share:e} each",
            sizes.len()
        ),
        epsilon_lower: candidates[best].epsilon_lower,
        best,
        candidates,
        inequality: format!(
            "{INEQUALITY}; assumes each canary included independently with probability 1/2 \
             and guess sizes fixed in advance"
        ),
        mu_lower,
        mu_best,
        gdp_epsilon_lower: gdp_epsilon_lower(mu_lower, delta),
        gdp_inequality: GDP_INEQUALITY.to_string(),
        order: Some(order),
    })
}

/// One guess size's bounds from its counts `g` (of `m` canaries), each at `share` of β: ε at
/// `delta` and μ by the bounds of Steinke et al. and Mahloujifar et al., and both again by the
/// order statistics.
fn candidate(g: Guesses, m: usize, delta: f64, share: f64) -> Result<Candidate> {
    let (r, v) = (g.guesses, g.correct);
    Ok(Candidate {
        guesses: g,
        epsilon_lower: epsilon_lower_bound(m, r, v, delta, share)?,
        failure_probability: share,
        mu_lower: mu_lower_bound(m, r, v, share)?,
        order_epsilon_lower: order::order_lower_bound(
            order::NullFamily::Approximate { delta },
            m,
            r,
            v,
            share,
        )?,
        order_mu_lower: order::order_lower_bound(order::NullFamily::Gaussian, m, r, v, share)?,
    })
}

/// The index of the candidate with the largest `key` (the first of equals).
fn argmax(candidates: &[Candidate], key: fn(&Candidate) -> f64) -> usize {
    (0..candidates.len()).fold(0, |b, i| {
        if key(&candidates[i]) > key(&candidates[b]) {
            i
        } else {
            b
        }
    })
}

/// The order-statistics bounds of the best candidates, which decide the verdict when the
/// canary `model` is independent.
fn order_bound(candidates: &[Candidate], delta: f64, model: &CanaryModel) -> OrderBound {
    let order_best = argmax(candidates, |c| c.order_epsilon_lower);
    let order_mu_best = argmax(candidates, |c| c.order_mu_lower);
    let order_mu_lower = candidates[order_mu_best].order_mu_lower;
    let (decides, canary_model) = match model {
        CanaryModel::Independent(why) => (true, format!("independent canaries: {why}")),
        CanaryModel::Unknown(why) => (
            false,
            format!("independence not known ({why}): for reading only, not the verdict"),
        ),
    };
    OrderBound {
        epsilon_lower: candidates[order_best].order_epsilon_lower,
        best: order_best,
        mu_lower: order_mu_lower,
        mu_best: order_mu_best,
        gdp_epsilon_lower: gdp_epsilon_lower(order_mu_lower, delta),
        decides,
        canary_model,
        inequality: order::ORDER_INEQUALITY.to_string(),
    }
}

/// Stream tags of a trainer audit's randomness (see [`crate::rng::Stream::Other`]).
pub mod streams {
    /// The synthetic data set.
    pub const DATA: u64 = 0x0E_0001;
    /// Which coordinate each canary owns.
    pub const CANARY_SLOTS: u64 = 0x0E_0002;
    /// The inclusion bits S_i (never seen by the scorer).
    pub const INCLUSION: u64 = 0x0E_0003;
    /// Poisson sampling and noise inside training.
    pub const TRAINING: u64 = 0x0E_0004;
}

/// Settings of one audit of the canary trainer.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainerAuditConfig {
    /// m: canaries.
    pub canaries: usize,
    /// What is released.
    pub threat: ThreatModel,
    /// The trainer's configuration.
    pub trainer: TrainerConfig,
    /// The seed of every random choice.
    pub seed: u64,
    /// β.
    pub failure_probability: f64,
    /// (k₊, k₋) guess sizes tried (β is split over them); `None`: [`default_guess_sizes`].
    pub guess_sizes: Option<Vec<(usize, usize)>>,
    /// The membership score the guesses rank by ([`calibrated`]).
    pub score: calibrated::ScoreKind,
}

/// What one audit of the canary trainer found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainerAudit {
    /// Trainer id.
    pub target: &'static str,
    /// What was released.
    pub threat_model: ThreatModel,
    /// The trainer's configuration.
    pub trainer: TrainerConfig,
    /// The claim its ledger states.
    pub claim: LedgerClaim,
    /// What it actually provides (the same accountant at the noise added and the rate used);
    /// for reading only, never used by the verdict.
    pub true_guarantee: LedgerClaim,
    /// The seed.
    pub seed: u64,
    /// The bound.
    pub bound: OneRunBound,
    /// True iff the lower bound exceeds the claimed ε.
    pub violation: bool,
    /// The membership score the guesses ranked by.
    pub score: calibrated::ScoreKind,
    /// The non-member model fitted on the holdouts (calibrated score only).
    pub calibration: Option<calibrated::Calibration>,
}

/// What is known of the built-in trainer's canaries (fixed by its configuration, before any
/// score is seen). White-box with per-example clipping, the release is a product of per-canary
/// channels: each gradient canary owns one coordinate that no record's gradient touches, the
/// noise is independent per coordinate, Poisson sampling is independent per canary and the
/// batch is divided by its expected size, so the iterates are a bijection (given the data) of
/// the per-coordinate noisy sums.
///
/// Black-box logistic regression (`hidden` = 0) with per-example clipping is a product too. The
/// model has no bias, so input canary i (x = a·e_slot(i), y = 1) has logit a·θ[slot(i)] and its
/// gradient (σ(a·θ[slot(i)]) − 1)·a·e_slot(i) lives on its own coordinate and depends on θ only
/// through θ[slot(i)]; real records are 0 on every canary coordinate; each example is clipped on
/// its own; the noise is independent per coordinate; each example is sampled independently; the
/// step size η/(q·n) is fixed. So θ_t[slot(i)] = θ_{t−1}[slot(i)] − η/(q·n)·(S_i·B_{i,t}·
/// clip(g(θ_{t−1}[slot(i)])) + σ·N_{t,slot(i)}) is a Markov chain driven by canary i's own bit
/// S_i, sampling B_{i,t} and noise only: given the bits, the final model's canary coordinates are
/// independent, and independent of the real-feature coordinates. Each coordinate is a marginal
/// (post-processing) of the release, so it keeps the claim for adding or removing canary i.
///
/// The network (`hidden` > 0: b₁, w₂ and b₂ are shared by every input), a clipped batch or
/// clipped noise couple the canaries: nothing is known.
pub fn canary_model(trainer: &TrainerConfig, threat: ThreatModel) -> CanaryModel {
    if trainer.batch_clip || trainer.clip_after_noise {
        CanaryModel::Unknown(
            "the batch or the noisy gradient is clipped as a whole, which couples the canaries"
                .into(),
        )
    } else if threat == ThreatModel::WhiteBox {
        CanaryModel::Independent(
            "white-box gradient canaries, each on its own coordinate, with independent noise \
             and sampling per coordinate"
                .into(),
        )
    } else if trainer.hidden == 0 {
        CanaryModel::Independent(
            "black-box input canaries of a logistic regression without bias: each canary's \
             gradient lives on its own coordinate and depends only on it, with per-example \
             clipping and independent noise and sampling per coordinate"
                .into(),
        )
    } else {
        CanaryModel::Unknown(
            "black-box input canaries of the network share its hidden layer and output".into(),
        )
    }
}

/// Canaries and holdouts of one audit: m canaries first, then the holdouts (never included).
fn canaries_and_holdouts(config: &TrainerAuditConfig) -> usize {
    match config.score {
        calibrated::ScoreKind::Loss => config.canaries,
        calibrated::ScoreKind::Calibrated => 2 * config.canaries,
    }
}

/// The scores the guesses rank by, from the release's raw scores of the m canaries followed by
/// the holdouts: the raw ones, or calibrated on the holdouts. The built-in trainer's Dirac
/// canaries have no distinguishing public feature, so the fit has an intercept only (the
/// calibrated score is then an increasing affine map of the raw one: see [`calibrated`]).
fn ranked_scores(
    raw: Vec<f64>,
    m: usize,
    score: calibrated::ScoreKind,
) -> Result<(Vec<f64>, Option<calibrated::Calibration>)> {
    match score {
        calibrated::ScoreKind::Loss => Ok((raw, None)),
        calibrated::ScoreKind::Calibrated => {
            let (canary, holdout) = raw.split_at(m.min(raw.len()));
            let (z, cal) = calibrated::calibrate(
                canary,
                &vec![Vec::new(); canary.len()],
                holdout,
                &vec![Vec::new(); holdout.len()],
            )?;
            Ok((z, Some(cal)))
        }
    }
}

/// Trains the canary trainer once with m canaries each included with probability 1/2, scores
/// the canaries from the release, and bounds ε at the claim's δ (see the module
/// documentation). Randomness: data, canary slots, inclusion bits and training each from their
/// own stream of `seed` ([`streams`]).
///
/// # Errors
/// m < [`MIN_CANARIES`]; β outside (0, 1); a guess size with k₊ + k₋ > m; the accountant.
pub fn audit_trainer(config: &TrainerAuditConfig) -> Result<TrainerAudit> {
    use rand::RngExt;
    let m = config.canaries;
    if m < MIN_CANARIES {
        return Err(Error::InvalidConfig(format!(
            "--canaries {m}; allowed: at least {MIN_CANARIES}"
        )));
    }
    let beta = config.failure_probability;
    if !(beta.is_finite() && beta > 0.0 && beta < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "--failure-probability {beta}; allowed: 0 < beta < 1"
        )));
    }
    let sizes = config
        .guess_sizes
        .clone()
        .unwrap_or_else(|| default_guess_sizes(m));
    if let Some(&(kp, km)) = sizes.iter().find(|(kp, km)| kp.saturating_add(*km) > m) {
        return Err(Error::InvalidConfig(format!(
            "--guesses {kp}:{km} for {m} canaries; allowed: k+ + k- <= m"
        )));
    }
    let t = &config.trainer;
    if config.threat == ThreatModel::WhiteBox {
        let values = (t.steps as f64 + 1.0) * t.parameters(canaries_and_holdouts(config)) as f64;
        if values > MAX_RELEASED_VALUES {
            return Err(Error::InvalidConfig(format!(
                "--canaries {m} with --param steps={} hidden={} releases {values:e} numbers \
                 white-box ((steps + 1) x parameters); allowed: at most {MAX_RELEASED_VALUES:e}",
                t.steps, t.hidden
            )));
        }
    }
    let claim = config.trainer.claim()?;
    let true_guarantee = config.trainer.true_guarantee()?;
    let seed = Seed(config.seed);
    let stream = |tag: u64| seed.rng(Stream::Other { tag, index: 0 });
    let data = match t.dataset {
        DataSet::Synthetic => {
            TrainingData::synthetic(t.records, t.features, &mut stream(streams::DATA))
        }
        DataSet::Winequality => TrainingData::winequality()?,
    };
    // The holdouts of a calibrated score are extra canary slots, never included.
    let all = canaries_and_holdouts(config);
    let canaries = Canaries::random(all, t.features, &mut stream(streams::CANARY_SLOTS));
    let mut inclusion = stream(streams::INCLUSION);
    let included: Vec<bool> = (0..m).map(|_| inclusion.random_bool(0.5)).collect();
    let mut trained = included.clone();
    trained.resize(all, false);
    let release = train(
        t,
        &data,
        &canaries,
        &trained,
        config.threat,
        &mut stream(streams::TRAINING),
    )?;
    // The scorer sees the release and the canary and holdout definitions, never `included`.
    let (s, calibration) = ranked_scores(
        scores(&release, &canaries, t, config.threat)?,
        m,
        config.score,
    )?;
    let bound = audit_scores_with(
        &s,
        &included,
        claim.delta,
        beta,
        &sizes,
        &canary_model(t, config.threat),
    )?;
    let violation = bound.violates(claim.epsilon, claim.mu);
    Ok(TrainerAudit {
        target: crate::mechanisms::canary_trainer::ID,
        threat_model: config.threat,
        trainer: t.clone(),
        claim,
        true_guarantee,
        seed: config.seed,
        bound,
        violation,
        score: config.score,
        calibration,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn counts_guesses() -> Result<()> {
        let scores = [5.0, 4.0, 3.0, 2.0, 1.0, 0.0];
        let inc = [true, false, true, false, false, true];
        let g = count_guesses(&scores, &inc, 2, 2)?;
        // in: canaries 0 (right), 1 (wrong); out: 4 (right), 5 (wrong).
        assert_eq!((g.guesses, g.correct), (4, 2));
        let g = count_guesses(&scores, &inc, 0, 0)?;
        assert_eq!((g.guesses, g.correct), (0, 0));
        assert!(count_guesses(&scores, &inc, 4, 3).is_err());
        assert!(count_guesses(&[1.0], &[true], 1, 0).is_err());
        assert!(count_guesses(&[1.0, f64::NAN], &[true, false], 1, 0).is_err());
        assert_eq!(inclusion_from_signs(&[1, -1, 0])?, vec![true, false, false]);
        assert!(inclusion_from_signs(&[2]).is_err());
        Ok(())
    }

    /// Reference values: P[Bin(10, 1/2) >= 8] = 56/1024 = 0.0546875 (exact), and with δ the
    /// α term for v = 8: max_i P[8 − i ≤ Bin < 8]/i; i = 1 gives pmf(7) = 120/1024.
    #[test]
    fn tail_bound_reference_values() -> Result<()> {
        let b = tail_bound(10, 10, 8, 0.0, 0.0)?;
        assert!((0.0546875..0.0546875 * (1.0 + 1e-5)).contains(&b), "{b}");
        // α: i=1: 120/1024; i=2: (120+210)/2048 = 0.161; i=3: (120+210+252)/3072 = 0.189;
        // i=4: (582+210)/4096 = 0.193; i=5: (792+120)/5120 = 0.178. α = 792/4096.
        let with_delta = tail_bound(10, 10, 8, 0.0, 1e-3)?;
        let expected = 0.0546875 + 2.0 * 10.0 * 1e-3 * 792.0 / 4096.0;
        assert!(
            (expected..expected * (1.0 + 1e-5)).contains(&with_delta),
            "{with_delta} vs {expected}"
        );
        assert_eq!(tail_bound(10, 10, 0, 3.0, 1e-3)?, 1.0);
        assert!(tail_bound(10, 11, 0, 1.0, 0.0).is_err());
        assert!(tail_bound(10, 5, 6, 1.0, 0.0).is_err());
        Ok(())
    }

    #[test]
    fn edge_cases() -> Result<()> {
        // No guesses (abstain on all) or none right: nothing is rejected.
        assert_eq!(epsilon_lower_bound(1000, 0, 0, 1e-5, 0.05)?, 0.0);
        assert_eq!(epsilon_lower_bound(1000, 100, 0, 1e-5, 0.05)?, 0.0);
        // Half right is what ε = 0 predicts.
        assert_eq!(epsilon_lower_bound(1000, 100, 50, 0.0, 0.05)?, 0.0);
        // All r right, δ = 0: B = p^r ≤ β ⇔ ε ≤ ln(p/(1−p)) with p = β^{1/r}.
        let r = 100;
        let p = 0.05f64.powf(1.0 / r as f64);
        let exact = (p / (1.0 - p)).ln();
        let lb = epsilon_lower_bound(1000, r, r, 0.0, 0.05)?;
        assert!(lb <= exact && lb > exact - 1e-4, "{lb} vs {exact}");
        assert!(epsilon_lower_bound(10, 5, 5, 0.0, 0.0).is_err());
        assert!(epsilon_lower_bound(10, 5, 5, 1.5, 0.05).is_err());
        Ok(())
    }

    #[test]
    fn monotone_in_correct_guesses_beta_and_delta() -> Result<()> {
        let m = 1000;
        let r = 200;
        let mut prev = 0.0;
        for v in (100..=200).step_by(5) {
            let lb = epsilon_lower_bound(m, r, v, 1e-5, 0.05)?;
            assert!(lb >= prev, "v = {v}: {lb} < {prev}");
            prev = lb;
        }
        let v = 170;
        let a = epsilon_lower_bound(m, r, v, 1e-5, 0.01)?;
        let b = epsilon_lower_bound(m, r, v, 1e-5, 0.05)?;
        let c = epsilon_lower_bound(m, r, v, 1e-4, 0.05)?;
        let d = epsilon_lower_bound(m, r, v, 0.0, 0.05)?;
        assert!(a <= b && c <= b && b <= d, "{a} {b} {c} {d}");
        assert!(b > 0.5);
        Ok(())
    }

    #[test]
    fn beta_is_split_over_sizes() -> Result<()> {
        let included: Vec<bool> = (0..1000).map(|i| i % 3 == 0).collect();
        let scores: Vec<f64> = (0..1000).map(|i| (i * 7919 % 1000) as f64).collect();
        let sizes = default_guess_sizes(1000);
        assert_eq!(
            sizes,
            vec![(10, 10), (20, 20), (50, 50), (100, 100), (200, 200)]
        );
        let b = audit_scores(&scores, &included, 1e-5, 0.05, &sizes)?;
        assert_eq!(b.candidates.len(), 5);
        for c in &b.candidates {
            assert!((c.failure_probability - 0.01).abs() < 1e-15);
        }
        assert_eq!(default_guess_sizes(3), vec![(1, 1)]);
        assert_eq!(default_guess_sizes(2), vec![(1, 1)]);
        Ok(())
    }

    /// Level check by simulation. Randomized response on the inclusion bit is exactly ε-DP and
    /// is the worst case of Theorem 3.1 at δ = 0: each canary's score is its bit flipped with
    /// probability 1/(1 + e^ε), plus a tie-breaking uniform jitter that is independent of the
    /// bits; every guess is then right with probability e^ε/(1 + e^ε), independently. Over 2000
    /// games with β = 0.05 the number of games whose bound exceeds ε is ≤ Bin(2000, 0.05) if the
    /// bound is valid; the test fails when it exceeds 130, which a valid bound does with
    /// probability at most P[Bin(2000, 0.05) > 130] = 1.3e-3 (exact binomial tail, summed from
    /// log-pmfs): the stated false-failure rate. One guess size per game (no split), the
    /// paper's setting. Here W ~ Bin(100, e^ε/(1+e^ε)) exactly, so the bound's rejection rate
    /// is close to β (the tail is discrete, so below it).
    #[test]
    fn level_by_simulation_randomized_response() -> Result<()> {
        let (m, eps, beta, games) = (200usize, 1.0_f64, 0.05, 2000u64);
        let p_right = eps.exp() / (1.0 + eps.exp());
        let mut exceed = 0;
        for g in 0..games {
            let mut rng = Seed(20_231_208).rng(Stream::Other { tag: 77, index: g });
            let mut included = Vec::with_capacity(m);
            let mut scores = Vec::with_capacity(m);
            for _ in 0..m {
                let b: bool = rng.random_bool(0.5);
                let report = if rng.random_bool(p_right) { b } else { !b };
                included.push(b);
                scores.push(f64::from(u8::from(report)) + 0.5 * rng.random::<f64>());
            }
            let gs = count_guesses(&scores, &included, 50, 50)?;
            let lb = epsilon_lower_bound(m, gs.guesses, gs.correct, 0.0, beta)?;
            if lb > eps {
                exceed += 1;
            }
        }
        assert!(exceed <= 130, "{exceed} of {games} games exceeded ε");
        Ok(())
    }
    /// Level of the Gaussian-DP bound by simulation at the null. Each canary's score is
    /// N(μ·S_i, 1) with S_i ∈ {0, 1} its inclusion bit, independently: the release is exactly
    /// μ-GDP with respect to each canary (the Gaussian mechanism with sensitivity μ and unit
    /// noise), and ranking by the score is the optimal guesser. Over 2000 games with β = 0.05 the
    /// number of games with μ̂ > μ is stochastically ≤ Bin(2000, 0.05) if the bound is valid; the
    /// test fails above 130, which a valid bound does with probability at most 1.3e-3 (the
    /// false-failure rate, as in the test above). The same guesses also give the (ε, δ) bound:
    /// the Gaussian-DP bound's ε (at δ = 1e-5) must be larger on average (tighter), and μ̂ must
    /// exceed μ/2 in a quarter of the games (the bound is not vacuous).
    #[test]
    fn gdp_level_by_simulation_gaussian_scores() -> Result<()> {
        use rand_distr::StandardNormal;
        let (m, mu, beta, games) = (200usize, 1.0_f64, 0.05, 2000u64);
        let (mut exceed, mut above_half) = (0, 0);
        let (mut sum_gdp_eps, mut sum_eps) = (0.0, 0.0);
        for g in 0..games {
            let mut rng = Seed(20_241_029).rng(Stream::Other { tag: 78, index: g });
            let mut included = Vec::with_capacity(m);
            let mut scores = Vec::with_capacity(m);
            for _ in 0..m {
                let b: bool = rng.random_bool(0.5);
                let z: f64 = rng.sample(StandardNormal);
                included.push(b);
                scores.push(if b { mu } else { 0.0 } + z);
            }
            let gs = count_guesses(&scores, &included, 20, 20)?;
            let mu_hat = mu_lower_bound(m, gs.guesses, gs.correct, beta)?;
            if mu_hat > mu {
                exceed += 1;
            }
            if mu_hat > mu / 2.0 {
                above_half += 1;
            }
            sum_gdp_eps += gdp_epsilon_lower(mu_hat, 1e-5);
            sum_eps += epsilon_lower_bound(m, gs.guesses, gs.correct, 1e-5, beta)?;
        }
        eprintln!(
            "gdp level: {exceed}/{games} games mu_hat > mu; {above_half} mu_hat > mu/2; mean \
             eps {:.4} (gdp) vs {:.4} (eps, delta)",
            sum_gdp_eps / games as f64,
            sum_eps / games as f64
        );
        assert!(exceed <= 130, "{exceed} of {games} games had mu_hat > mu");
        // Measured 764 of 2000; a vacuous bound would give 0.
        assert!(above_half > games / 4, "{above_half}");
        assert!(sum_gdp_eps > 1.2 * sum_eps, "{sum_gdp_eps} vs {sum_eps}");
        Ok(())
    }

    /// The Gaussian-DP recursion against reference behaviour: nothing is rejected with no
    /// correct guesses or at chance; all-correct guesses reject small μ; μ̂ grows with v; and
    /// perturbing ḡ⁻¹ by a relative 1e-8 (far above the error of Φ and Φ⁻¹) moves ρ₀ + h₀ by
    /// less than 1e-6 relative (the decision is stable to numerical error far larger than
    /// Φ's).
    #[test]
    fn gdp_bound_reference_behaviour() -> Result<()> {
        assert!(!gdp_rejects(1000, 100, 0, 0.0, 0.05)?);
        assert_eq!(mu_lower_bound(1000, 100, 50, 0.05)?, 0.0);
        assert_eq!(mu_lower_bound(1000, 0, 0, 0.05)?, 0.0);
        assert!(gdp_rejects(1000, 100, 100, 1.0, 0.05)?);
        let mut prev = 0.0;
        for v in (60..=100).step_by(5) {
            let mu = mu_lower_bound(1000, 100, v, 0.05)?;
            assert!(mu >= prev, "v = {v}: {mu} < {prev}");
            prev = mu;
        }
        for &(m, r, v, mu) in &[
            (1000usize, 100usize, 90usize, 1.5f64),
            (1000, 400, 270, 0.3),
            (200, 40, 35, 1.0),
        ] {
            let base = fdp_recursion(m, r, v, 0.05, |y| gdp_inverse_blow_up(y, mu));
            for f in [1.0 - 1e-8, 1.0 + 1e-8] {
                let moved =
                    fdp_recursion(m, r, v, 0.05, |y| (f * gdp_inverse_blow_up(y, mu)).min(1.0));
                assert!(
                    ((moved - base) / base).abs() < 1e-6,
                    "{m} {r} {v} {mu}: {moved} vs {base}"
                );
            }
        }
        assert!(gdp_rejects(10, 11, 0, 1.0, 0.05).is_err());
        assert!(gdp_rejects(10, 5, 5, -1.0, 0.05).is_err());
        assert!(gdp_rejects(10, 5, 5, 1.0, 1.0).is_err());
        // ε of the μ-GDP profile, rounded down: μ = 0.5 at δ = 1e-5 is ε ≈ 1.993 (the
        // trainer's default claim, rounded up there).
        let lo = gdp_epsilon_lower(0.5, 1e-5);
        let hi = crate::mechanisms::accountant::gaussian_exact_epsilon(2.0, 1, 1e-5)?;
        assert!(lo <= hi && hi - lo < 1e-6 && lo > 1.99, "{lo} {hi}");
        Ok(())
    }
}
