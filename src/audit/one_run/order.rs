//! The order-statistics bound of a one-run audit: exact for independent canaries.
//!
//! Xiang, Wang, Xiao, Tian & Wang, "Tight Privacy Audit in One Run" (arXiv:2509.08704; the
//! formula is the one their code calls Theorem 2). Derived and implemented here from the game
//! below, without their code; the research note is docs/design/one-run-order-statistics.md.
//!
//! # The game and the tail
//! n canaries with uniform, independent secret bits; the auditor releases r guesses and counts
//! **u wrong** (u = r − v). Take the claim's own *null family*: a symmetric trade-off function f
//! whose canonical pair is one canary's channel, with blow-up ḡ = 1 − f. Sort that channel's
//! outputs by the confidence of the maximum-a-posteriori guess. If the cut releasing the top
//! share v of the mixture (P + Q)/2 is a test of level α, then v = α + ḡ(α) and the error mass
//! above the cut is α, so the mean error of a released guess is γ̄(v) = α(v)/v, increasing in v.
//! With n i.i.d. canaries the cut sits at the (n − r)-th smallest of n uniforms, so the released
//! share is V ~ Beta(r + 1, n − r), and given V the r released guesses are wrong independently
//! with probability γ̄(V):
//!
//! P[T ≤ u] = E_V[ P[Bin(r, γ̄(V)) ≤ u] ],   and for r = n: P[Bin(n, γ̄(1)) ≤ u].
//!
//! The null families (the parameter θ is what the bound is on):
//! - **μ-Gaussian DP** (θ = μ): α = Φ(z) where Φ(z) + Φ(z + μ) = v, z ≤ −μ/2.
//! - **(ε, δ)-DP** (θ = ε at the claim's δ; pure ε at δ = 0): the four-atom pair of f_{ε,δ}. The
//!   top δ of the mixture is never wrong, the rest is wrong with probability 1/(1 + e^ε):
//!   γ̄(v) = max(0, v − δ) / (v (1 + e^ε)). It also covers a Laplace claim (any ε-DP channel is
//!   a garbling of ε-randomized response) and a DP-SGD ledger read at its (ε, δ), which is
//!   sound and looser than the ledger's own curve.
//!
//! # Why it is a valid test, and for which mechanisms
//! **Assumption: the release is a product of per-canary channels** (given the bits, the
//! canaries' evidence is independent), each f-DP for the claim's f. Then each channel is a
//! garbling of the canonical pair (Blackwell; Dong, Roth & Su 2022, Prop. 2.2); conditioned on
//! the canonical outputs the bits are independent with MAP error γ(x_i), and any size-r rule
//! measurable in the release (the top-k₊/bottom-k₋ guesses included) makes T a sum of
//! independent Bernoullis stochastically at least the canonical top-r sum. So P[T ≤ u] under
//! the mechanism is at most the formula above: rejecting θ when the formula is ≤ β has level β,
//! and θ̂ (the largest θ rejected, as for the other bounds of [`super`]) has P[θ̂ > θ*] ≤ β.
//!
//! **Without that assumption it is not valid**: a mechanism that is exactly μ-GDP for every
//! canary but couples the canaries' confidence (a hidden "strong world" in which every canary
//! draws from the PLD's top slice) is rejected at μ = 0.8 with probability ≥ 8 % at n = 10³ and
//! ≥ 12 % at n = 10⁴ at nominal 5 % (the design note, §2b). So the bound **decides a verdict
//! only where independence is a property of the mechanism**: the built-in trainer released
//! white-box with per-example clipping (each canary owns one coordinate, the noise is
//! independent per coordinate, the batch is normalised by its expected size, so the iterates
//! are a bijection of independent per-canary channels), or an `--exec` program whose author
//! declares it (`--independent-canaries`). Elsewhere it is printed for reading only.
//!
//! # Computing it, rounded toward the safe side
//! h(v) = P[Bin(r, γ̄(v)) ≤ u] decreases in v, so over nodes v₀ < … < v_K covering V's
//! distribution (mean ± 14 sd) the upper Riemann sum
//!
//! F(v₀) + Σ_k (F(v_{k+1}) − F(v_k)) h(v_k) + (1 − F(v_K)) h(v_K),   F = the Beta(r+1, n−r) cdf,
//!
//! is ≥ P[T ≤ u] whatever K is (K = [`NODES`]). γ̄ is rounded down (for the Gaussian, the
//! bisection keeps the bracket end with Φ(z) + Φ(z + μ) ≤ v, and α is lowered by 1e-6 relative
//! to cover Φ's error); the binomial tail is statrs' regularized incomplete beta inflated by its
//! tolerated error; the sum is inflated by 1e-6 relative plus 1e-10 absolute. On the reference
//! outcome (n, r, u) = (10⁴, 1000, 97) at β = 0.05 this gives μ̂ = 0.927 (ε̂ = 4.01 at δ = 1e-5),
//! within 1e-3 of the exact quadrature (unit tests).

use statrs::distribution::{ContinuousCDF, Normal};

use super::{MAX_EPSILON, MAX_MU, check_game, largest_rejected};
use crate::bounds::binomial_upper_tail;
use crate::error::{Error, Result};
use crate::mechanisms::math::std_normal_cdf;

/// Nodes of the quadrature over the released share V (see the module documentation; more
/// nodes only tighten the sum, which is an upper bound at any count).
pub const NODES: usize = 384;

/// Half-width of the node range, in standard deviations of V.
const SPAN_SD: f64 = 14.0;

/// Bisection halvings of the Gaussian's z (the bracket is at most μ wide).
const Z_BISECTIONS: usize = 48;

/// Relative lowering of α covering the error of Φ (1e-9 relative) and of the bisection.
const ALPHA_MARGIN: f64 = 1e-6;

/// The name of the inequality, printed with every order-statistics bound.
pub const ORDER_INEQUALITY: &str = "Xiang, Wang, Xiao, Tian & Wang 2025 (arXiv:2509.08704), \
    order statistics of the released guesses: P[T <= u] = E[P[Bin(r, gbar(V)) <= u]], V ~ \
    Beta(r+1, n-r), gbar(v) = alpha(v)/v the mean MAP error of the top share v of the claim's \
    canonical channel; upper Riemann sum over 384 nodes, rounded up. Assumes the canaries are \
    independent per-canary channels (not valid for mechanisms that couple them)";

/// A null family of one canary's channel, indexed by one parameter θ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NullFamily {
    /// μ-Gaussian DP; θ = μ.
    Gaussian,
    /// (ε, δ)-DP at this δ (pure ε-DP at 0); θ = ε.
    Approximate {
        /// The claim's δ.
        delta: f64,
    },
}

impl NullFamily {
    /// A lower bound on γ̄(v), the mean MAP error of the top share v of the mixture, at θ.
    fn mean_error_lower(self, theta: f64, v: f64) -> f64 {
        if v <= 0.0 {
            return 0.0;
        }
        let v = v.min(1.0);
        let g = match self {
            Self::Gaussian => gaussian_alpha_lower(theta, v) / v,
            Self::Approximate { delta } => (v - delta).max(0.0) / (v * (1.0 + theta.exp())),
        };
        (g * (1.0 - ALPHA_MARGIN)).clamp(0.0, 0.5)
    }
}

/// α with Φ(z) + Φ(z + μ) = v, z ≤ −μ/2, from the bracket end where the sum is ≤ v (so α is
/// not overstated beyond Φ's error, covered by [`ALPHA_MARGIN`]).
fn gaussian_alpha_lower(mu: f64, v: f64) -> f64 {
    if mu <= 0.0 {
        return v / 2.0;
    }
    let sum = |z: f64| std_normal_cdf(z) + std_normal_cdf(z + mu);
    let inv = |p: f64| Normal::standard().inverse_cdf(p.clamp(f64::MIN_POSITIVE, 1.0));
    // Φ(z + μ) ≤ sum ≤ 2Φ(z + μ) and Φ(z) ≤ sum: the root lies in [Φ⁻¹(v/2) − μ, Φ⁻¹(v)].
    let mut lo = inv(v / 2.0) - mu - 1e-9;
    let mut hi = inv(v).min(-mu / 2.0);
    if sum(hi) <= v {
        return std_normal_cdf(hi);
    }
    if sum(lo) > v {
        return 0.0;
    }
    for _ in 0..Z_BISECTIONS {
        let mid = 0.5 * (lo + hi);
        if sum(mid) <= v {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    std_normal_cdf(lo)
}

/// The quadrature of one (n, r): nodes over V ~ Beta(r + 1, n − r) and their cdf values,
/// shared by every θ and u.
#[derive(Clone, Debug)]
pub struct OrderTail {
    n: usize,
    r: usize,
    nodes: Vec<f64>,
    cdf: Vec<f64>,
}

impl OrderTail {
    /// The quadrature for r guesses of n canaries (1 ≤ r ≤ n).
    ///
    /// # Errors
    /// r = 0 or r > n.
    pub fn new(n: usize, r: usize) -> Result<Self> {
        if r == 0 || r > n {
            return Err(Error::InvalidConfig(format!(
                "r = {r} guesses of n = {n} canaries; allowed: 1 <= r <= n"
            )));
        }
        if r == n {
            return Ok(Self {
                n,
                r,
                nodes: vec![1.0],
                cdf: vec![0.0],
            });
        }
        let (a, b) = ((r + 1) as f64, (n - r) as f64);
        let mean = a / (a + b);
        let sd = (a * b / ((a + b) * (a + b) * (a + b + 1.0))).sqrt();
        let lo = (mean - SPAN_SD * sd).max(0.0);
        let hi = (mean + SPAN_SD * sd).min(1.0);
        let nodes: Vec<f64> = (0..NODES)
            .map(|k| lo + (hi - lo) * k as f64 / (NODES - 1) as f64)
            .collect();
        let cdf = nodes
            .iter()
            .map(|&v| {
                let f = statrs::function::beta::beta_reg(a, b, v);
                if f.is_nan() { 0.0 } else { f.clamp(0.0, 1.0) }
            })
            .collect();
        Ok(Self { n, r, nodes, cdf })
    }

    /// An upper bound on P_θ[T ≤ u] (see the module documentation), in [0, 1].
    pub fn upper(&self, family: NullFamily, theta: f64, u: usize) -> f64 {
        if u >= self.r {
            return 1.0;
        }
        let h = |v: f64| {
            let g = family.mean_error_lower(theta, v);
            // P[Bin(r, g) ≤ u] = P[Bin(r, 1 − g) ≥ r − u]; 1 − g rounded up (the tail grows).
            binomial_upper_tail(
                (self.r - u) as u64,
                self.r as u64,
                (1.0 - g).next_up().min(1.0),
            )
        };
        let k_max = self.nodes.len() - 1;
        let mut sum = self.cdf[0];
        for k in 0..k_max {
            let w = (self.cdf[k + 1] - self.cdf[k]).max(0.0);
            if w > 0.0 {
                sum += w * h(self.nodes[k]);
            }
        }
        sum += (1.0 - self.cdf[k_max]).max(0.0) * h(self.nodes[k_max]);
        let bound = sum * (1.0 + 1e-6) + 1e-10;
        if bound.is_nan() { 1.0 } else { bound.min(1.0) }
    }

    /// n: canaries.
    pub fn canaries(&self) -> usize {
        self.n
    }
}

/// True when (r guesses, v correct) among n canaries rejects θ of `family` at level `beta`
/// (the order-statistics tail at θ is ≤ β); false for an invalid game.
pub fn order_rejects(
    family: NullFamily,
    n: usize,
    r: usize,
    v: usize,
    theta: f64,
    beta: f64,
) -> bool {
    if v == 0 || v > r {
        return false;
    }
    OrderTail::new(n, r).is_ok_and(|t| t.upper(family, theta, r - v) <= beta)
}

/// The largest θ of `family` that (r guesses, v correct) among n canaries rejects at level
/// `beta` (to the bisection's resolution, on the rejected side), or 0: a one-sided lower
/// confidence bound on θ for mechanisms whose canaries are independent channels (module
/// documentation). Rounded down.
///
/// # Errors
/// v > r, r > n; β outside (0, 1); δ of the family outside [0, 1).
pub fn order_lower_bound(
    family: NullFamily,
    n: usize,
    r: usize,
    v: usize,
    beta: f64,
) -> Result<f64> {
    check_game(n, r, v, "beta", beta)?;
    if !(beta > 0.0 && beta < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "failure probability beta = {beta}; allowed: 0 < beta < 1"
        )));
    }
    if let NullFamily::Approximate { delta } = family
        && !(delta.is_finite() && (0.0..1.0).contains(&delta))
    {
        return Err(Error::InvalidConfig(format!(
            "delta = {delta}; allowed: 0 <= delta < 1"
        )));
    }
    if r == 0 || v == 0 {
        return Ok(0.0);
    }
    let tail = OrderTail::new(n, r)?;
    let u = r - v;
    let max = match family {
        NullFamily::Gaussian => MAX_MU,
        NullFamily::Approximate { .. } => MAX_EPSILON,
    };
    largest_rejected(max, |theta| Ok(tail.upper(family, theta, u) <= beta))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact tail by a fine midpoint rule (no rounding), to compare the bound with.
    fn exact_tail(family: NullFamily, theta: f64, n: usize, r: usize, u: usize) -> f64 {
        let (a, b) = ((r + 1) as f64, (n - r) as f64);
        let mean = a / (a + b);
        let sd = (a * b / ((a + b) * (a + b) * (a + b + 1.0))).sqrt();
        let (lo, hi) = ((mean - 14.0 * sd).max(0.0), (mean + 14.0 * sd).min(1.0));
        let k = 20_000;
        let mut s = 0.0;
        let mut prev = statrs::function::beta::beta_reg(a, b, lo);
        for i in 0..k {
            let right = lo + (hi - lo) * (i + 1) as f64 / k as f64;
            let f = statrs::function::beta::beta_reg(a, b, right);
            let mid = lo + (hi - lo) * (i as f64 + 0.5) / k as f64;
            let g = family.mean_error_lower(theta, mid);
            s += (f - prev)
                * (1.0 - binomial_upper_tail((u + 1) as u64, r as u64, g).min(1.0)).max(0.0);
            prev = f;
        }
        s
    }

    #[test]
    fn reference_outcome_of_the_issue() -> Result<()> {
        // (n, r, u) = (10^4, 1000, 97), beta = 0.05: exact quadrature gives mu = 0.92775,
        // epsilon 4.0141 at delta = 1e-5 (docs/design/one-run-order-statistics.md, section 4).
        let mu = order_lower_bound(NullFamily::Gaussian, 10_000, 1000, 903, 0.05)?;
        assert!((0.9265..=0.92776).contains(&mu), "mu = {mu}");
        let eps = super::super::gdp_epsilon_lower(mu, 1e-5);
        assert!((3.9..=4.0142).contains(&eps), "epsilon = {eps}");
        Ok(())
    }

    #[test]
    fn upper_sum_is_above_and_close_to_the_exact_tail() -> Result<()> {
        // Values of the authors' validation output (Gaussian mu = 0.8, n = 2000, r = 500):
        // P[T <= 80] = 0.011912, P[T <= 90] = 0.133620, P[T <= 100] = 0.503419.
        let t = OrderTail::new(2000, 500)?;
        for (u, want) in [(80, 0.011912), (90, 0.133620), (100, 0.503419)] {
            let got = t.upper(NullFamily::Gaussian, 0.8, u);
            let exact = exact_tail(NullFamily::Gaussian, 0.8, 2000, 500, u);
            assert!(got >= exact, "u = {u}: {got} < exact {exact}");
            assert!(
                (exact - want).abs() < 2e-5,
                "u = {u}: exact {exact} vs {want}"
            );
            assert!(got <= want * 1.02 + 1e-4, "u = {u}: {got} vs {want}");
        }
        Ok(())
    }

    #[test]
    fn pure_dp_reduces_to_the_binomial_and_r_equal_n_to_its_closed_form() -> Result<()> {
        // delta = 0: gbar = 1/(1+e^eps) at every cut, so P[T <= u] = P[Bin(r, 1/(1+e^eps)) <= u].
        let t = OrderTail::new(1000, 200)?;
        let eps: f64 = 1.3;
        let p = 1.0 / (1.0 + eps.exp());
        let direct = 1.0 - binomial_upper_tail(41, 200, p);
        let got = t.upper(NullFamily::Approximate { delta: 0.0 }, eps, 40);
        assert!(
            got >= direct && got <= direct * 1.0001 + 2e-10,
            "{got} vs {direct}"
        );
        // r = n: the share is 1 and gbar(1) = Phi(-mu/2).
        let t = OrderTail::new(500, 500)?;
        let e = std_normal_cdf(-0.5);
        let direct = 1.0 - binomial_upper_tail(141, 500, e);
        let got = t.upper(NullFamily::Gaussian, 1.0, 140);
        assert!(
            got >= direct && got <= direct * 1.0001 + 2e-10,
            "{got} vs {direct}"
        );
        Ok(())
    }

    #[test]
    fn gaussian_alpha_solves_its_equation_from_below() {
        for &(mu, v) in &[(0.5, 0.01), (1.0, 0.1), (2.0, 0.5), (4.0, 1e-6), (1.0, 1.0)] {
            let a = gaussian_alpha_lower(mu, v);
            let z = Normal::standard().inverse_cdf(a);
            let s = std_normal_cdf(z) + std_normal_cdf(z + mu);
            assert!(s <= v * (1.0 + 1e-7), "mu {mu} v {v}: {s}");
            assert!(s >= v * (1.0 - 1e-6), "mu {mu} v {v}: {s}");
        }
    }

    #[test]
    fn monotone_in_theta_and_tighter_than_nothing() -> Result<()> {
        let t = OrderTail::new(10_000, 1000)?;
        let mut prev = 0.0;
        for mu in [0.2, 0.5, 0.8, 1.0, 1.5] {
            let p = t.upper(NullFamily::Gaussian, mu, 97);
            assert!(p >= prev, "mu {mu}: {p} < {prev}");
            prev = p;
        }
        // No correct guesses, or none made: nothing is rejected.
        assert_eq!(
            order_lower_bound(NullFamily::Gaussian, 100, 10, 0, 0.05)?,
            0.0
        );
        assert!(order_lower_bound(NullFamily::Gaussian, 100, 101, 0, 0.05).is_err());
        Ok(())
    }
}
