//! The k-free privacy bound of reorder-slice-compute (RSC), as a claim: `rsc:K:EPS0:DELTA`.
//!
//! # What the paper states
//! Cohen, Lyu, Nelson, Sarlós & Stemmer 2023 ("Õptimal differentially private learning of
//! thresholds and quasi-concave optimization", STOC; arXiv:2211.06387, the theorem on the privacy
//! of its Algorithm "partition") run τ = k steps. Step t receives, chosen from the earlier
//! outputs, a slice size m_t, a deterministic order E_t that is adjacency-preserving (the order
//! of D + x is the order of D with x inserted) and an (ε₀, δ₀)-DP algorithm A_t; it slices out
//! the first m_t + G_t remaining records in that order, G_t ~ Geom(1 − e^{−ε₀}) (P(G = g) =
//! (1 − e^{−ε₀})e^{−ε₀g}, g ≥ 0), keeps the size internal, runs A_t on the slice and releases its
//! output. The theorem: the run is (O(ε₀·log(1/δ̂)), δ̂ + 2kδ₀)-DP for every δ̂ > 0: no factor k
//! in ε (composition would give one). The constant inside O(·) is not reproduced here (the
//! stored copies of the paper reachable from this project state the theorem only in that
//! form), so this module derives an explicit bound of the same shape for pure steps (δ₀ = 0).
//!
//! # The bound derived here (pure ε₀-DP steps, add/remove neighbors)
//! With a = 1 − e^{−ε₀} and any whole n ≥ 1, the run's transcript is (ε_n, a^n)-DP with
//! ε_n = max(2ε₀, ln n + 2(n − 1)ε₀), whatever k. The claim `rsc:K:EPS0:DELTA` takes the least n
//! with a^n ≤ DELTA and states (ε_n, DELTA)-DP (K is written down, and checked ≥ 1, but does not
//! enter the bound: that is the point). Example: `rsc:8:0.25:1e-3`: a = 0.221199, a⁴ =
//! 2.394e-3 > 10⁻³ ≥ a⁵ = 5.296e-4, so n = 5 and ε = ln 5 + 8·0.25 = 3.609438.
//!
//! Let D′ = D + x. Write a run's *path* as its hidden sizes z = (z_1, …, z_k) with its outputs
//! y; its weight is Π_t g(z_t)·A_t(S_t)(y_t), g the pmf of m_t + G_t, S_t the slice. While x is
//! not sliced on the D′ side, the remaining sets are R and R′ = R + x′ for one extra record x′
//! (x at first) at position p_t in R′'s order (given the history: the order is a function of
//! the outputs). On the D′ side a size z′ is *plain* (z′ ≤ p − 2), a *near miss* (z′ = p − 1 ≥
//! m), a *cascade* (z′ = m ≥ p) or a *hit* (z′ ≥ p and z′ > m).
//!
//! *Coupling D′ → D.* Map a D′ path to the D path with the same sizes, except at its hit, where
//! the D size is z′ − 1. Plain and near-miss steps slice the same records (x′ lies after the
//! slice): equal factors. A cascade slices T + x′ on D′ and T + e on D (e the m-th record of R):
//! one swap, a factor ≤ e^{2ε₀} for A_t, and the extra record becomes e. At the hit, S′ = S + x′
//! and the remaining sets become equal: g(z′)/g(z′ − 1) = e^{−ε₀} and A_t(S′) ≤ e^{ε₀}A_t(S),
//! a factor ≤ 1; later steps are equal. A D path z has as preimages: the path hitting at its
//! j-th ambiguous step (a near miss or cascade, where the hit z + 1 is also valid), with j − 1
//! earlier near misses or cascades, and one more: the path that hits where z itself is a hit
//! (z ≥ p, z > m: only z + 1 maps there), or never hits if z has none. Those with fewer than n
//! near misses and cascades (N′ < n) are at most n, each with at most n − 1 cascades, so they
//! weigh at most n·e^{2(n−1)ε₀}·w(z). On the D′ side every step with z′ ≥ p − 1 continues (near
//! miss or cascade) with conditional probability exactly a (p − 1 ≥ m: P(z′ = p − 1 | z′ ≥
//! p − 1) = a; p ≤ m: P(z′ = m) = a) and hits otherwise, so P_{D′}(N′ ≥ n) ≤ a^n. Summing over
//! the paths of an output event E: P_{D′}(E) ≤ n·e^{2(n−1)ε₀}·P_D(E) + a^n.
//!
//! *Coupling D → D′.* Map a D path to the D′ path with the same sizes, except at the first step
//! with z ≥ p, where the D′ size is z + 1 (≥ p + 1, so the images of distinct paths differ: D′
//! sizes ≤ p − 1 come from plain steps, ≥ p + 1 from hits). Factor e^{ε₀} for g and e^{ε₀} for
//! A_t (S + x′ against S), once: P_D(E) ≤ e^{2ε₀}P_{D′}(E).
//!
//! Both orders together: (max(2ε₀, ln n + 2(n − 1)ε₀), a^n)-DP. The derivation assumes pure
//! steps, the one-sided geometric size noise at the steps' ε₀ and adjacency-preserving orders; a
//! step that is (ε₀, δ₀)-DP is not covered (the paper adds 2kδ₀). Unit tests in the catalogue's
//! RSC applications (`catalogue/rsc_apps`) check it against exact output pmfs on small pairs.

use crate::claim::PrivacyClaim;
use crate::error::{MechanismError, Result};
use crate::math::readable;

/// The command-line form of the claim.
pub const RSC_FORM: &str = "rsc:K:EPS0:DELTA";

/// The bound for one setting (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RscBound {
    /// k: steps (does not enter the bound).
    pub steps: u64,
    /// ε₀: each step's ε, and the slice-size noise's.
    pub epsilon0: f64,
    /// δ asked for.
    pub delta: f64,
    /// The least whole n ≥ 1 with (1 − e^{−ε₀})^n ≤ δ.
    pub n: u64,
    /// ε_n = max(2ε₀, ln n + 2(n − 1)ε₀).
    pub epsilon: f64,
}

/// ε_n of the module docs, for n ≥ 1.
pub fn epsilon_at(epsilon0: f64, n: u64) -> f64 {
    let n = n.max(1) as f64;
    (2.0 * epsilon0).max(n.ln() + 2.0 * (n - 1.0) * epsilon0)
}

/// δ at n: (1 − e^{−ε₀})^n.
pub fn delta_at(epsilon0: f64, n: u64) -> f64 {
    (-(-epsilon0).exp_m1()).powf(n as f64)
}

fn invalid(message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: "claim".into(),
        message,
    }
}

impl RscBound {
    /// The bound for k steps of pure ε₀-DP compute at total δ. Errors unless k ≥ 1, 0 < ε₀ ≤ 10
    /// and 0 < δ < 1.
    pub fn new(steps: u64, epsilon0: f64, delta: f64) -> Result<Self> {
        if steps == 0 {
            return Err(invalid(format!(
                "steps K = 0 in {RSC_FORM}; allowed: a whole number ≥ 1"
            )));
        }
        if !(epsilon0.is_finite() && epsilon0 > 0.0 && epsilon0 <= 10.0) {
            return Err(invalid(format!(
                "EPS0 = {epsilon0} in {RSC_FORM}; allowed: 0 < EPS0 <= 10 (each step's ε and its slice-size noise's)"
            )));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(invalid(format!(
                "DELTA = {delta} in {RSC_FORM}; allowed: 0 < DELTA < 1"
            )));
        }
        // a^n ≤ δ ⇔ n ≥ ln δ / ln a; the float estimate is corrected by the exact test both ways.
        let a = -(-epsilon0).exp_m1();
        let mut n = (delta.ln() / a.ln()).ceil().max(1.0) as u64;
        while n > 1 && delta_at(epsilon0, n - 1) <= delta {
            n -= 1;
        }
        while delta_at(epsilon0, n) > delta {
            n += 1;
        }
        Ok(Self {
            steps,
            epsilon0,
            delta,
            n,
            epsilon: epsilon_at(epsilon0, n),
        })
    }

    /// Parses `rsc:K:EPS0:DELTA`.
    pub fn parse(text: &str) -> Result<Self> {
        let parts: Vec<&str> = text.trim().split(':').collect();
        if parts.len() != 4 || parts[0] != "rsc" {
            return Err(invalid(format!(
                "claim {text:?} has {} field(s); the form is {RSC_FORM}",
                parts.len()
            )));
        }
        let num = |name: &str, s: &str| -> Result<f64> {
            s.trim()
                .parse::<f64>()
                .map_err(|_| invalid(format!("{name} = {s:?} in claim {text:?} is not a number")))
        };
        let k = num("K", parts[1])?;
        if !(k >= 1.0 && k.fract() == 0.0 && k <= 1e9) {
            return Err(invalid(format!(
                "K = {:?} in claim {text:?}; allowed: a whole number from 1 to 1e9",
                parts[1]
            )));
        }
        Self::new(k as u64, num("EPS0", parts[2])?, num("DELTA", parts[3])?)
    }

    /// The claim: (ε_n, δ)-DP.
    pub fn claim(&self) -> Result<PrivacyClaim> {
        PrivacyClaim::approximate(self.epsilon, self.delta)
    }

    /// Where the claim comes from, for records and reports.
    pub fn source(&self) -> String {
        format!(
            "RSC theorem (Cohen, Lyu, Nelson, Sarlós & Stemmer 2023: k reorder-slice-compute steps cost O(ε₀·log(1/δ)) with no factor k), explicit form derived in rsc_bound.rs for pure steps: k = {} steps of ε₀ = {} with slice sizes m + Geom(1 − e^(−ε₀)) are (max(2ε₀, ln n + 2(n − 1)ε₀), (1 − e^(−ε₀))^n)-DP; n = {} gives ε = {} at δ = {} (composing the k steps, each slice one swap apart, would give 2kε₀ = {})",
            self.steps,
            readable(self.epsilon0),
            self.n,
            readable(self.epsilon),
            readable(self.delta),
            readable(2.0 * self.steps as f64 * self.epsilon0)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values computed by hand (Python float64: a = 1 − e^{−ε₀}, n the least with
    /// a^n ≤ δ, ε = max(2ε₀, ln n + 2(n − 1)ε₀)).
    #[test]
    fn bound_matches_hand_computed_values() {
        for (k, e0, d, n, eps) in [
            (8, 0.25, 1e-3, 5, 3.609_437_912_434_100_5),
            (2, 0.5, 1e-3, 8, 9.079_441_541_679_836),
            (4, 1.0, 1e-3, 16, 32.772_588_722_239_78),
            (100, 0.1, 1e-6, 6, 2.791_759_469_228_055),
            (1, 0.25, 0.5, 1, 0.5),
            (3, 0.25, 1e-2, 4, 2.886_294_361_119_891),
        ] {
            let b = RscBound::new(k, e0, d).unwrap();
            assert_eq!(b.n, n, "ε₀ {e0} δ {d}");
            assert!((b.epsilon - eps).abs() < 1e-12, "{} vs {eps}", b.epsilon);
            assert!(delta_at(e0, n) <= d && (n == 1 || delta_at(e0, n - 1) > d));
        }
        // k does not enter.
        let (a, b) = (
            RscBound::new(1, 0.25, 1e-3).unwrap(),
            RscBound::new(1_000_000, 0.25, 1e-3).unwrap(),
        );
        assert_eq!(a.epsilon, b.epsilon);
        // a⁵ at ε₀ = 0.25 by hand: (1 − e^{−1/4})^5 = 0.221199217^5 = 5.29563e-4.
        assert!((delta_at(0.25, 5) - 5.295_633_561_843_31e-4).abs() < 1e-15);
    }

    #[test]
    fn parse_and_refuse() {
        let b = RscBound::parse("rsc:8:0.25:1e-3").unwrap();
        assert_eq!((b.steps, b.n), (8, 5));
        let c = b.claim().unwrap();
        assert_eq!(c.natural_epsilon(), Some(b.epsilon));
        assert!(b.source().contains("Cohen, Lyu, Nelson") && b.source().contains("n = 5"));
        for bad in [
            "rsc:0:1:1e-3",
            "rsc:1.5:1:1e-3",
            "rsc:2:0:1e-3",
            "rsc:2:11:1e-3",
            "rsc:2:1:0",
            "rsc:2:1:1",
            "rsc:2:1",
            "rsc:2:x:1e-3",
        ] {
            let e = RscBound::parse(bad).unwrap_err().to_string();
            assert!(
                e.contains("allowed") || e.contains("form") || e.contains("not a number"),
                "{bad}: {e}"
            );
        }
    }
}
