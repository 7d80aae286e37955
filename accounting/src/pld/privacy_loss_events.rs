//! The privacy losses of the ledger's queries other than the Gaussian sum: the Laplace sum
//! (alone or Poisson-subsampled), k-ary randomized response, and the Attribution Reporting
//! summary report; each as a privacy profile δ(ε) (for the pessimistic connect-the-dots PLD)
//! and its loss law under P (for the optimistic one) (`dp_accounting`'s `LaplacePrivacyLoss`,
//! `RandomizedResponsePrivacyLoss` and their `sampling_prob` forms in
//! `pld/privacy_loss_mechanism.py`).
//!
//! # The pairs
//! - **Laplace sum**, noise Lap(b), one record moving the sum by at most s (s = 1 under
//!   add/remove and zero-out, 2 under replace-one), a = s/b. The pair (P₁, Q₀) = (Lap(0, b),
//!   Lap(s, b)) dominates every neighbouring pair (δ of the pair of shift v ≤ s is
//!   1 − e^{(ε − v/b)/2} for |ε| < v/b, increasing in v), and its loss ℓ(x) = (|x − s| − |x|)/b
//!   has atoms at +a (P₁-mass ½, Q₀-mass e^{−a}/2) and −a (P₁-mass e^{−a}/2, Q₀-mass ½) and is
//!   continuous between: P₁(ℓ ≥ m) = 1 − e^{−(a − m)/2}/2 and Q₀(ℓ ≥ m) = e^{−(a + m)/2}/2 for
//!   |m| < a, so δ(ε) = 1 − e^{(ε − a)/2} for |ε| < a (0 above, 1 − e^ε below).
//! - **Poisson-subsampled Laplace sum** (rate q, add/remove or zero-out): the dominating pairs
//!   of Zhu, Dong & Wang (2022, "Optimal accounting of differential privacy via characteristic
//!   function", Theorem 11), as for the Gaussian: "remove" P = (1 − q)Q₀ + qP₁ against Q₀, loss
//!   L = ln(1 − q + q·e^ℓ), so {L ≥ l} = {ℓ ≥ m(l)} with m(l) = ln((e^l − 1 + q)/q); "add" Q₀
//!   against (1 − q)Q₀ + qP₁, loss −ln(1 − q + q·e^ℓ), {L ≥ l} = {ℓ ≤ m(−l)}. Both directions
//!   are composed on their own and δ is the larger (as for the Gaussian). Under replace-one the
//!   subsampled pair mixes both shifts and is refused (q = 1 only).
//! - **k-ary randomized response** with ε: on two different values the reports have laws
//!   P = (p, r, r, …) and Q = (r, p, r, …), p = e^ε/(e^ε + k − 1), r = 1/(e^ε + k − 1); the loss
//!   is +ε with P-mass p, 0 with (k − 2)r and −ε with r: a discrete PLD, exact. No
//!   subsampling (refused by the accountant).
//! - **Attribution Reporting summary report**, L1 budget L, discrete Laplace of scale t per key
//!   (the catalogue's `ara-summary-report`). A user moves the key sums by a non-negative
//!   integer vector v with ‖v‖₁ ≤ L (2L under replace-one); the product of discrete Laplace laws
//!   then has loss ≤ ‖v‖₁/t, so the report is ε₀-DP with ε₀ = L/t (2L/t): the catalogue's
//!   module documentation derives it. **Upper bound (pessimistic):** every ε₀-DP pair is
//!   dominated by binary randomized response with ε₀ (Kairouz, Oh & Viswanath 2015, "The
//!   composition theorem for differential privacy", Theorem 4), so that pair, connect-the-dots.
//!   **Lower bound (optimistic):** the user putting its whole budget L on one key realizes the
//!   pair (DLap(0, t), DLap(L, t)) on that key (the other keys' laws are the same on both
//!   sides); its loss (|k − L| − |k|)/t takes the L + 1 values (L − 2j)/t, with P-masses
//!   1/(1 + r) (j = 0, k ≤ 0), c·r^j (0 < j < L), r^L/(1 + r) (j = L, k ≥ L), r = e^{−1/t},
//!   c = (1 − r)/(1 + r). Under replace-one the realized pair is that one-key pair composed
//!   twice (one key loses L, another gains L). The upper bound does not use the one-key pair:
//!   that concentrating the budget on one key is the worst case for the whole profile (not
//!   only for ε₀) is checked numerically in the tests (exact sums, splits of L = 2…6 over two
//!   keys, 1 and 3 compositions: never above) but not proven here.
//!
//! # Discretisation
//! Pessimistic: connect-the-dots on the grid kΔ through the exact δ(ε) (Doroshenko et al. 2022,
//! Algorithm 1; [`connect_dots`]): an upper bound after any composition. Optimistic: the
//! outcomes with loss in [g + kΔ, g + (k + 1)Δ) are merged (post-processing: the merged pair is
//! dominated) and their merged loss, ≥ g + kΔ, rounded down to it (δ only falls); the grid's
//! shift g ∈ (−Δ, 0] is chosen among "an atom a hair (10⁻⁹Δ) above a grid point" so that the
//! heaviest atoms are not rounded down (the mass-weighted rounding of the atoms is least); the
//! continuous part of a Laplace loss is rounded down by up to Δ per step, so the optimistic ε
//! after T steps can be low by up to ≈ T·Δ·(mass of the continuous part) (the bracket says it).

use super::common::*;
use super::pld_pmf::*;
use super::privacy_loss_distribution::Pld;
use super::privacy_loss_mechanism::connect_dots;
use crate::Neighboring;
use crate::error::Result;
use crate::ledger::LedgerEvent;

/// One query of a ledger other than the Gaussian sum ([`LedgerEvent::LaplaceSum`],
/// [`LedgerEvent::RandomizedResponse`], [`LedgerEvent::AttributionSummary`]) with the rate of
/// its sample and the number of steps: an entry of a [`super::PldAccountant`] ledger.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NoiseEvent {
    /// The query (never a sampling or Gaussian-sum event).
    pub query: LedgerEvent,
    /// The rate of its Poisson sample, q ∈ (0, 1] (q < 1 for a Laplace sum only).
    pub q: f64,
    /// Number of steps T ≥ 1.
    pub steps: u64,
}

/// A privacy profile with its loss law: what the two discretisations need.
pub(super) trait Profile {
    /// δ(ε) = P(L ≥ ε) − e^ε·Q(L ≥ ε), for any real ε.
    fn delta(&self, eps: f64) -> f64;
    /// P(L ≥ l).
    fn p_at_least(&self, l: f64) -> f64;
    /// The smallest and largest loss (finite: every pair here has bounded loss).
    fn range(&self) -> (f64, f64);
    /// The atoms of the loss law under P, (loss, mass).
    fn atoms(&self) -> Vec<(f64, f64)>;
    /// The P-mass of the losses in [g + kΔ, g + (k + 1)Δ), k = k_bot …, the last bucket open
    /// above.
    fn bucket_masses(&self, g: f64, d: f64, k_bot: i64, n: usize) -> Vec<f64> {
        let level = |k: i64| g + k as f64 * d;
        let tails: Vec<f64> = (0..=n)
            .map(|i| {
                if i == n {
                    0.0
                } else {
                    self.p_at_least(level(k_bot + i as i64))
                }
            })
            .collect();
        (0..n).map(|i| (tails[i] - tails[i + 1]).max(0.0)).collect()
    }
}

/// A discrete pair: atoms (loss, P-mass), the Q-mass of each being P-mass·e^{−loss}.
#[derive(Clone, Debug)]
pub(super) struct Discrete {
    atoms: Vec<(f64, f64)>,
}

impl Discrete {
    /// k-ary randomized response with ε (see the module documentation).
    pub(super) fn randomized_response(epsilon: f64, values: u64) -> Self {
        // p = e^ε/(e^ε + k − 1) = 1/(1 + (k − 1)e^{−ε}); r = p·e^{−ε}.
        let others = (values - 1) as f64;
        let p = 1.0 / (1.0 + others * (-epsilon).exp());
        let r = p * (-epsilon).exp();
        let mut atoms = vec![(-epsilon, r), (epsilon, p)];
        if values > 2 {
            atoms.insert(1, (0.0, (values - 2) as f64 * r));
        }
        Self { atoms }
    }

    /// The one-key discrete Laplace pair (DLap(0, t), DLap(shift, t)).
    pub(super) fn discrete_laplace(shift: u64, t: f64) -> Self {
        let r = (-1.0 / t).exp();
        let c = -(-1.0 / t).exp_m1() / (1.0 + r);
        let s = shift as f64;
        let atoms = (0..=shift)
            .rev()
            .map(|j| {
                let loss = (s - 2.0 * j as f64) / t;
                let mass = if j == 0 {
                    1.0 / (1.0 + r)
                } else if j == shift {
                    (-s / t).exp() / (1.0 + r)
                } else {
                    c * (-(j as f64) / t).exp()
                };
                (loss, mass)
            })
            .collect();
        Self { atoms }
    }
}

impl Profile for Discrete {
    fn delta(&self, eps: f64) -> f64 {
        let d: f64 = self
            .atoms
            .iter()
            .filter(|(l, _)| *l > eps)
            .map(|(l, p)| -p * (eps - l).exp_m1())
            .sum();
        d.clamp(0.0, 1.0)
    }

    fn p_at_least(&self, l: f64) -> f64 {
        self.atoms
            .iter()
            .filter(|(x, _)| *x >= l)
            .map(|(_, p)| p)
            .sum()
    }

    fn range(&self) -> (f64, f64) {
        let lo = self.atoms.iter().map(|a| a.0).fold(f64::INFINITY, f64::min);
        let hi = self
            .atoms
            .iter()
            .map(|a| a.0)
            .fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    }

    fn atoms(&self) -> Vec<(f64, f64)> {
        self.atoms.clone()
    }

    /// Each atom binned directly (L + 1 atoms: no tail sums over the grid).
    fn bucket_masses(&self, g: f64, d: f64, k_bot: i64, n: usize) -> Vec<f64> {
        let mut probs = vec![0.0; n];
        for &(l, p) in &self.atoms {
            let mut k = ((l - g) / d).floor() as i64;
            // Grid points are exact only up to rounding: never put an atom above its loss.
            while g + k as f64 * d > l {
                k -= 1;
            }
            let i = (k - k_bot).clamp(0, n as i64 - 1) as usize;
            probs[i] += p;
        }
        probs
    }
}

/// The Laplace pair of a = s/b, alone (q = 1) or Poisson-subsampled in one direction.
#[derive(Clone, Copy, Debug)]
pub(super) struct LaplacePair {
    pub(super) a: f64,
    pub(super) q: f64,
    /// The "add" direction (Q₀ against the mixture); false: "remove".
    pub(super) add: bool,
}

impl LaplacePair {
    fn p1_ge(&self, m: f64) -> f64 {
        let a = self.a;
        if m > a {
            0.0
        } else if m <= -a {
            1.0
        } else {
            1.0 - 0.5 * (-(a - m) / 2.0).exp()
        }
    }
    fn q0_ge(&self, m: f64) -> f64 {
        let a = self.a;
        if m > a {
            0.0
        } else if m <= -a {
            1.0
        } else {
            0.5 * (-(a + m) / 2.0).exp()
        }
    }
    fn p1_le(&self, m: f64) -> f64 {
        let a = self.a;
        if m >= a {
            1.0
        } else if m < -a {
            0.0
        } else {
            0.5 * (-(a - m) / 2.0).exp()
        }
    }
    fn q0_le(&self, m: f64) -> f64 {
        let a = self.a;
        if m >= a {
            1.0
        } else if m < -a {
            0.0
        } else {
            1.0 - 0.5 * (-(a + m) / 2.0).exp()
        }
    }

    /// ln(1 − q + q·e^ℓ), the "remove" loss of base loss ℓ.
    fn mix(&self, ell: f64) -> f64 {
        (self.q * ell.exp_m1()).ln_1p()
    }

    /// m(l) = ln((e^l − 1 + q)/q), −∞ when e^l ≤ 1 − q.
    fn unmix(&self, l: f64) -> f64 {
        if self.q == 1.0 {
            return l;
        }
        let x = l.exp_m1() + self.q;
        if x <= 0.0 {
            f64::NEG_INFINITY
        } else {
            x.ln() - self.q.ln()
        }
    }

    /// (P(L ≥ l), Q(L ≥ l)).
    fn tails(&self, l: f64) -> (f64, f64) {
        let q = self.q;
        if self.add {
            let m = self.unmix(-l);
            if m == f64::NEG_INFINITY {
                return (0.0, 0.0);
            }
            let q0 = self.q0_le(m);
            (q0, (1.0 - q) * q0 + q * self.p1_le(m))
        } else {
            let m = self.unmix(l);
            let q0 = self.q0_ge(m);
            ((1.0 - q) * q0 + q * self.p1_ge(m), q0)
        }
    }
}

impl Profile for LaplacePair {
    fn delta(&self, eps: f64) -> f64 {
        let (p, q) = self.tails(eps);
        if q == 0.0 {
            return p.clamp(0.0, 1.0);
        }
        (p - (eps + q.ln()).exp()).clamp(0.0, 1.0)
    }

    fn p_at_least(&self, l: f64) -> f64 {
        self.tails(l).0
    }

    fn range(&self) -> (f64, f64) {
        let (lo, hi) = (self.mix(-self.a), self.mix(self.a));
        if self.add { (-hi, -lo) } else { (lo, hi) }
    }

    fn atoms(&self) -> Vec<(f64, f64)> {
        let (a, q) = (self.a, self.q);
        let (lo, hi) = (self.mix(-a), self.mix(a));
        let small = 0.5 * (-a).exp();
        if self.add {
            // Under P = Q₀: ℓ = a (mass e^{−a}/2) gives loss −hi, ℓ = −a (mass ½) gives −lo.
            vec![(-hi, small), (-lo, 0.5)]
        } else {
            vec![
                (lo, (1.0 - q) * 0.5 + q * small),
                (hi, (1.0 - q) * small + q * 0.5),
            ]
        }
    }
}

/// The grid points a one-step PLD of losses in [lo, hi] needs, checked against
/// [`MAX_GRID_POINTS`] with a message naming `what`.
fn check_points(lo: f64, hi: f64, d: f64, what: &str) -> Result<()> {
    let points = (hi / d).ceil() - (lo / d).floor() + 2.0;
    if points.is_finite() && points <= MAX_GRID_POINTS as f64 {
        Ok(())
    } else {
        Err(invalid(format!(
            "{what}: one step's PLD would need {points} grid points (losses from {lo} to {hi}, discretization {d}); allowed: at most {MAX_GRID_POINTS} (a larger noise scale or discretization)"
        )))
    }
}

/// The pessimistic (connect-the-dots) PLD of a profile.
pub(super) fn pessimistic_profile_pmf(profile: &dyn Profile, d: f64, what: &str) -> Result<Pmf> {
    let (lo, hi) = profile.range();
    check_points(lo, hi, d, what)?;
    connect_dots(lo, hi, |e| profile.delta(e), d, (0.0, 0.0))
}

/// The optimistic (merged, rounded-down) PLD of a profile on the shifted grid g + kΔ whose
/// shift leaves the least atom mass rounded down (see the module documentation).
pub(super) fn optimistic_profile_pmf(profile: &dyn Profile, d: f64, what: &str) -> Result<Pmf> {
    let (lo, hi) = profile.range();
    check_points(lo, hi, d, what)?;
    let mut atoms = profile.atoms();
    atoms.sort_by(|x, y| y.1.total_cmp(&x.1));
    let heavy = &atoms[..atoms.len().min(8)];
    let rounded = |g: f64, l: f64| {
        let k = ((l - g) / d).floor();
        (l - (g + k * d)).max(0.0)
    };
    let bias = |g: f64| -> f64 { heavy.iter().map(|&(l, p)| p * rounded(g, l)).sum() };
    let mut best = (0.0, bias(0.0));
    for &(l, _) in heavy {
        let target = l - 1e-9 * d;
        let g = target - (target / d).ceil() * d;
        let b = bias(g);
        if b < best.1 {
            best = (g, b);
        }
    }
    let g = best.0;
    let k_bot = ((lo - g) / d).floor() as i64 - 1;
    let k_top = ((hi - g) / d).floor() as i64;
    let n = (k_top - k_bot + 1) as usize;
    let probs = profile.bucket_masses(g, d, k_bot, n);
    Ok(Pmf::on_grid(k_bot, probs, 0.0, g))
}

impl NoiseEvent {
    /// What the event is, in words, for error messages.
    pub(super) fn describe(&self) -> String {
        match self.query {
            LedgerEvent::LaplaceSum { scale } => {
                format!("a laplace-sum event (scale {scale}, q = {})", self.q)
            }
            LedgerEvent::RandomizedResponse { epsilon, values } => {
                format!("a randomized-response event (ε = {epsilon}, {values} values)")
            }
            LedgerEvent::AttributionSummary { l1_budget, scale } => {
                format!("an attribution-summary event (L1 budget {l1_budget}, scale {scale})")
            }
            other => format!("a {} event", other.kind()),
        }
    }

    /// One step's discrete PLD under `neighbors`.
    ///
    /// # Errors
    /// A combination the accountant does not account (q < 1 for randomized response or an
    /// attribution summary; q < 1 for a Laplace sum under replace-one), a bad parameter, a grid
    /// too large.
    pub(super) fn step(&self, neighbors: Neighboring, estimate: Estimate, d: f64) -> Result<Pld> {
        check_sampling_rate(self.q)?;
        check_discretization(d)?;
        self.query
            .check_other_query()
            .map_err(|m| invalid(format!("{}: {m}", self.describe())))?;
        let what = self.describe();
        let replace = neighbors == Neighboring::ReplaceOne;
        let build = |p: &dyn Profile| match estimate {
            Estimate::Pessimistic => pessimistic_profile_pmf(p, d, &what),
            Estimate::Optimistic => optimistic_profile_pmf(p, d, &what),
        };
        let one = |remove: Pmf| Pld {
            discretization: d,
            estimate,
            remove,
            add: None,
        };
        match self.query {
            LedgerEvent::LaplaceSum { scale } if self.q == 1.0 || !replace => {
                let a = if replace { 2.0 } else { 1.0 } / scale;
                let remove = build(&LaplacePair {
                    a,
                    q: self.q,
                    add: false,
                })?;
                if self.q == 1.0 {
                    // The pair is its own mirror image (Laplace is symmetric).
                    return Ok(one(remove));
                }
                let add = build(&LaplacePair {
                    a,
                    q: self.q,
                    add: true,
                })?;
                Ok(Pld {
                    discretization: d,
                    estimate,
                    remove,
                    add: Some(add),
                })
            }
            LedgerEvent::RandomizedResponse { epsilon, values } if self.q == 1.0 => {
                Ok(one(build(&Discrete::randomized_response(epsilon, values))?))
            }
            LedgerEvent::AttributionSummary { l1_budget, scale } if self.q == 1.0 => {
                let keys_moved = if replace { 2.0 } else { 1.0 };
                match estimate {
                    Estimate::Pessimistic => {
                        let eps0 = keys_moved * l1_budget as f64 / scale;
                        Ok(one(build(&Discrete::randomized_response(eps0, 2))?))
                    }
                    Estimate::Optimistic => {
                        let key = one(build(&Discrete::discrete_laplace(l1_budget, scale))?);
                        if replace { key.compose(&key) } else { Ok(key) }
                    }
                }
            }
            _ => Err(invalid(format!(
                "{what} under {neighbors} neighbors: not accounted; allowed: a laplace-sum in a Poisson sample of any rate under add/remove or zero-out, or of probability 1 under replace-one; randomized-response and attribution-summary in samples of probability 1 only (their amplification by sampling depends on how the reports are collected)"
            ))),
        }
    }
}
