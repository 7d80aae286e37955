//! The privacy loss distribution of a mechanism ([`Pld`]: one discretised PLD per direction),
//! built from the mechanism's pairs, composed, and read as δ(ε) and ε(δ)
//! (`dp_accounting`'s `pld/privacy_loss_distribution.py`).

use super::common::*;
use super::pld_pmf::*;
use super::privacy_loss_mechanism::*;
use crate::Neighboring;
use crate::error::Result;

/// A discrete privacy loss distribution of a composition, for one neighboring relation: one
/// PLD per direction ("remove" and "add") under add/remove, or a single one when the pair is
/// symmetric (q = 1, or replace-one).
#[derive(Clone, Debug, PartialEq)]
pub struct Pld {
    pub(super) discretization: f64,
    pub(super) estimate: Estimate,
    pub(super) remove: Pmf,
    /// `None`: the same as `remove`.
    pub(super) add: Option<Pmf>,
}

impl Pld {
    /// The PLD of no mechanism (all mass at loss 0).
    ///
    /// # Errors
    /// Discretization outside (0, 1].
    pub fn identity(discretization: f64, estimate: Estimate) -> Result<Self> {
        check_discretization(discretization)?;
        Ok(Self {
            discretization,
            estimate,
            remove: Pmf::identity(),
            add: None,
        })
    }

    /// The discrete PLD of **one** step of the Poisson-subsampled Gaussian mechanism (rate `q`,
    /// noise multiplier `z`, contributions of norm ≤ 1) under `neighbors`.
    ///
    /// # Errors
    /// q outside (0, 1]; z ≤ 0 or non-finite; discretization outside (0, 1]; a grid of more
    /// than [`MAX_GRID_POINTS`] points.
    pub fn poisson_gaussian(
        q: f64,
        z: f64,
        neighbors: Neighboring,
        estimate: Estimate,
        discretization: f64,
    ) -> Result<Self> {
        check_sampling_rate(q)?;
        check_noise_multiplier(z)?;
        check_discretization(discretization)?;
        let build = |direction: Direction| -> Result<Pmf> {
            let pair = Pair::new(q, z, direction);
            match estimate {
                Estimate::Pessimistic => pessimistic_pmf(&pair, discretization),
                Estimate::Optimistic => optimistic_pmf(&pair, discretization),
            }
        };
        let (remove, add) = match neighbors {
            Neighboring::ReplaceOne => (build(Direction::Replace)?, None),
            // Zero-out: the null record contributes 0 whether sampled or not, so D′'s law is the
            // law of D without the record: the add/remove pair (Ponomareva et al. 2023, §5.2).
            Neighboring::AddRemove | Neighboring::ZeroOut if q == 1.0 => {
                (build(Direction::Remove)?, None)
            }
            Neighboring::AddRemove | Neighboring::ZeroOut => {
                let (remove, add) = std::thread::scope(|s| {
                    let add = s.spawn(|| build(Direction::Add));
                    let remove = build(Direction::Remove);
                    (remove, add.join())
                });
                let add = add.map_err(|_| {
                    invalid("the thread building the \"add\" PLD panicked".to_string())
                })??;
                (remove?, Some(add))
            }
        };
        Ok(Self {
            discretization,
            estimate,
            remove,
            add,
        })
    }

    /// The discrete PLD of **one** step of the Gaussian mechanism on a batch of **fixed size**
    /// B drawn uniformly without replacement from n records (rate `q` = B/n, noise multiplier
    /// `z`, contributions of norm ≤ 1), under **replace-one** neighbors (seed 000's "equally
    /// sized and independent" batches; the only relation under which a fixed B/n is defined).
    ///
    /// - **Upper bound (pessimistic).** Replacing one record changes the batch's sum by at most
    ///   2, so the un-subsampled step is G_{2/z} (Gaussian DP with μ = 2/z). Sampling B of n
    ///   without replacement under substitution makes it C_q(G_{2/z})-DP with C_q(f) =
    ///   min{f_q, f_q⁻¹}** and f_q = q·f + (1 − q)·Id (Dong, Roth & Su 2022, "Gaussian
    ///   differential privacy", Theorem 4.2; the pair form of Zhu, Dong & Wang 2022 and Lebeda,
    ///   Regehr, Kamath & Steinke 2024, §5). f_q is the trade-off function of the "remove" pair
    ///   ((1−q)·φ + q·φ(· + 2), φ) at noise z (φ = N(0, z²)) and f_q⁻¹ that of its mirror, the
    ///   "add" pair; the privacy profile of C_q(f) is therefore the larger of the two pairs'
    ///   profiles at every ε (the convex conjugate of the convex hull of a minimum is the maximum
    ///   of the conjugates). That profile is symmetric, so the connect-the-dots pair built from it
    ///   dominates the step in both orders of every neighbouring pair (at every ε, negative ones
    ///   included), which is what composition needs (Zhu, Dong & Wang 2022, Theorem 10; f-DP
    ///   composition, Dong, Roth & Su 2022, Theorem 3.2). Composing the two directions each on
    ///   its own, as [`Pld::poisson_gaussian`] does for Poisson add/remove, would need every
    ///   neighbouring pair's step to be dominated by one of the two pairs at every ε, which is
    ///   not shown (Lebeda et al. 2024 show that a single step's worst case need not survive
    ///   composition); that is the lower bound below, not the upper one.
    /// - **Lower bound (optimistic).** The two add/remove pairs at noise z/2 (contribution 1),
    ///   each composed on its own, δ the larger. Each is realized: on D = {−1, …, −1, +1} against
    ///   D′ = {−1, …, −1} a batch's sum is −B + 2 on D when it holds the replaced record
    ///   (probability q, independently across steps) and −B otherwise, against −B always on D′:
    ///   exactly the "remove" pair, step by step; swapping D and D′ gives the "add" pair
    ///   (`dpsgd-fixed-batches` in the catalogue derives it).
    ///
    /// For q = 1 (B = n) both are the Gaussian mechanism with sensitivity 2, the same as
    /// [`Pld::poisson_gaussian`] under replace-one.
    ///
    /// # Errors
    /// q outside (0, 1]; z ≤ 0 or non-finite; discretization outside (0, 1]; a grid of more
    /// than [`MAX_GRID_POINTS`] points.
    pub fn fixed_size_gaussian(
        q: f64,
        z: f64,
        estimate: Estimate,
        discretization: f64,
    ) -> Result<Self> {
        check_sampling_rate(q)?;
        check_noise_multiplier(z)?;
        check_discretization(discretization)?;
        match estimate {
            Estimate::Pessimistic => Ok(Self {
                discretization,
                estimate,
                remove: pessimistic_pmf_fixed_size(q, z, discretization)?,
                add: None,
            }),
            // z/2 is exact in binary floating point (unless it underflows, which
            // `check_noise_multiplier` then refuses).
            Estimate::Optimistic => {
                Self::poisson_gaussian(q, 0.5 * z, Neighboring::AddRemove, estimate, discretization)
            }
        }
    }

    /// The grid step Δ of the privacy loss.
    pub fn discretization(&self) -> f64 {
        self.discretization
    }

    /// Which side this PLD errs on.
    pub fn estimate(&self) -> Estimate {
        self.estimate
    }

    /// The number of grid points held (both directions).
    pub fn size(&self) -> usize {
        self.remove.probs.len() + self.add.as_ref().map_or(0, |a| a.probs.len())
    }

    /// The composition of `self` and `other` (each direction convolved with the same direction).
    ///
    /// # Errors
    /// Different discretizations or estimates.
    pub fn compose(&self, other: &Pld) -> Result<Pld> {
        if self.discretization != other.discretization || self.estimate != other.estimate {
            return Err(invalid(format!(
                "composing a {:?} PLD with discretization {} and a {:?} PLD with \
                 discretization {}; allowed: the same discretization and estimate",
                self.estimate, self.discretization, other.estimate, other.discretization
            )));
        }
        self.check_composable()?;
        other.check_composable()?;
        let estimate = self.estimate;
        let d = self.discretization;
        let remove = compose_pmfs(&self.remove, &other.remove, estimate, d);
        let add = match (&self.add, &other.add) {
            (None, None) => None,
            (a, b) => {
                let a = a.as_ref().unwrap_or(&self.remove);
                let b = b.as_ref().unwrap_or(&other.remove);
                Some(compose_pmfs(a, b, estimate, d))
            }
        };
        Ok(Pld {
            discretization: self.discretization,
            estimate,
            remove,
            add,
        })
    }

    /// `times`-fold composition of `self` with itself (one FFT per direction, raised to the
    /// power `times`; the two directions on two threads).
    ///
    /// # Errors
    /// `times` = 0.
    pub fn self_compose(&self, times: u64) -> Result<Pld> {
        self.self_compose_tilted(times, [0.0, 0.0])
    }

    /// [`Pld::self_compose`] of this PLD tilted by λ (one per direction: "remove", "add"; see
    /// [`Pmf`]), for a δ(ε) resolved to a relative precision around the ε where
    /// e^{T·K(λ) − λε} is smallest. The result's δ holds (as an upper bound, pessimistic) only
    /// above its floor, and it cannot be composed further.
    pub(super) fn self_compose_tilted(&self, times: u64, tilts: [f64; 2]) -> Result<Pld> {
        check_steps(times)?;
        self.check_composable()?;
        let estimate = self.estimate;
        let d = self.discretization;
        let run = |pmf: &Pmf, lambda: f64| -> Result<Pmf> {
            if lambda > 0.0 && pmf.tilt == 0.0 && pmf.error == 0.0 {
                self_compose_pmf(&tilt_pmf(pmf, lambda, d), times, estimate, d)
            } else {
                self_compose_pmf(pmf, times, estimate, d)
            }
        };
        let (remove, add) = match &self.add {
            None => (run(&self.remove, tilts[0])?, None),
            Some(add) => {
                let (remove, add) = std::thread::scope(|s| {
                    let add = s.spawn(|| run(add, tilts[1]));
                    let remove = run(&self.remove, tilts[0]);
                    (remove, add.join())
                });
                let add = add.map_err(|_| {
                    invalid("the thread composing the \"add\" PLD panicked".to_string())
                })??;
                (remove?, Some(add))
            }
        };
        Ok(Pld {
            discretization: self.discretization,
            estimate,
            remove,
            add,
        })
    }

    /// A PLD read for one δ ([`PldAccountant::pld_at`]: tilted, its low tail dropped) is not
    /// composed further: its dropped tail would be needed.
    pub(super) fn check_composable(&self) -> Result<()> {
        let tilted = std::iter::once(&self.remove)
            .chain(self.add.as_ref())
            .any(|p| p.tilt != 0.0 || p.floor > f64::NEG_INFINITY);
        if tilted {
            Err(invalid(
                "composing a PLD composed for reading ε at one δ (PldAccountant::pld_at: tilted, its low tail dropped); allowed: PLDs from Pld::poisson_gaussian, Pld::self_compose or PldAccountant::pld".to_string(),
            ))
        } else {
            Ok(())
        }
    }

    /// The hockey-stick divergence δ(ε) of the discrete PLD, the larger of the two directions,
    /// with the bound on its floating-point error added (pessimistic) or subtracted
    /// (optimistic): an upper bound on the true δ(ε) for a pessimistic PLD, a lower bound for
    /// an optimistic one. Any real ε is allowed (ε = +∞ gives the mass at +∞); NaN gives NaN.
    pub fn delta(&self, epsilon: f64) -> f64 {
        if epsilon.is_nan() {
            return f64::NAN;
        }
        let d = self.discretization;
        let one = |pmf: &Pmf| match self.estimate {
            Estimate::Pessimistic => pmf.delta_upper(d, epsilon),
            Estimate::Optimistic => pmf.delta_lower(d, epsilon),
        };
        let remove = one(&self.remove);
        self.add.as_ref().map_or(remove, |a| remove.max(one(a)))
    }

    /// The bound on the floating-point error of δ(ε) (the larger of the two directions), the
    /// amount [`Pld::delta`] adds or subtracts.
    pub fn delta_error(&self, epsilon: f64) -> f64 {
        let remove = self.remove.error_at(epsilon);
        self.add
            .as_ref()
            .map_or(remove, |a| remove.max(a.error_at(epsilon)))
    }

    /// The smallest ε ≥ 0 found with δ(ε) ≤ `delta` (the larger of the two directions; δ(ε)
    /// with its error bound, see [`Pld::delta`]); +∞ if the mass at +∞ exceeds δ. For a
    /// pessimistic PLD it is computed at δ·(1 − [`DELTA_ROUNDING_MARGIN`]) and moved up one ulp
    /// (rounded toward the safe side).
    ///
    /// # Errors
    /// δ outside (0, 1); a pessimistic PLD whose floating-point error bound is too large to
    /// certify any ε at this δ (the error names δ and the bound).
    pub fn epsilon(&self, delta: f64) -> Result<f64> {
        check_delta(delta)?;
        let d = self.discretization;
        let eps = match self.estimate {
            Estimate::Pessimistic => {
                let target = delta * (1.0 - DELTA_ROUNDING_MARGIN);
                let mut eps = 0.0_f64;
                for pmf in std::iter::once(&self.remove).chain(self.add.as_ref()) {
                    let e = pmf.epsilon_upper(d, target).ok_or_else(|| {
                        let near = pmf.epsilon(d, target);
                        let bound = pmf.error_at(near);
                        if bound.is_nan() || bound >= 1.0 {
                            // δ is a probability: a bound of 1 or more (∞ when it overflows)
                            // certifies nothing, however large δ.
                            return invalid(format!(
                                "at δ = {} the composition's floating-point error bound on δ is {} (near ε = {}): no δ < 1 can be certified at any ε; allowed: fewer compositions (fewer steps or ledger events: the bound adds up the rounding error of each)",
                                crate::math::readable(delta),
                                crate::math::readable(bound),
                                crate::math::readable(near)
                            ));
                        }
                        invalid(format!(
                            "at δ = {delta} the composition's floating-point error bound ({bound:.1e} in δ near ε = {near:.4}) is too large to certify any ε; allowed: δ well above {bound:.1e} (a ledger of one (q, z) event is composed tilted and resolves far smaller δ)"
                        ))
                    })?;
                    eps = eps.max(e);
                }
                eps
            }
            Estimate::Optimistic => {
                let remove = self.remove.epsilon_lower(d, delta);
                self.add
                    .as_ref()
                    .map_or(remove, |a| remove.max(a.epsilon_lower(d, delta)))
            }
        };
        Ok(match self.estimate {
            Estimate::Pessimistic if eps > 0.0 && eps.is_finite() => eps.next_up(),
            _ => eps,
        })
    }
}

/// The discrete PLD of `steps` steps of the Poisson-subsampled Gaussian mechanism (rate `q`,
/// noise multiplier `z`, contributions of norm ≤ 1) under `neighbors`.
///
/// # Errors
/// q outside (0, 1]; z ≤ 0 or non-finite; steps = 0; discretization outside (0, 1]; a grid of
/// more than [`MAX_GRID_POINTS`] points.
///
/// # Examples
/// ```
/// use dp_audit_accounting::Neighboring;
/// use dp_audit_accounting::pld::{poisson_gaussian_pld, Estimate, DEFAULT_DISCRETIZATION};
/// let pld = poisson_gaussian_pld(
///     0.01, 4.0, 1000, Neighboring::AddRemove, Estimate::Pessimistic, DEFAULT_DISCRETIZATION,
/// )?;
/// let eps = pld.epsilon(1e-5)?;
/// // dp_accounting 0.6.0 (PLDAccountant): 0.2721729.
/// assert!(eps >= 0.2721729 && eps < 0.2721729 * 1.001);
/// # Ok::<(), dp_audit_accounting::AccountingError>(())
/// ```
pub fn poisson_gaussian_pld(
    q: f64,
    z: f64,
    steps: u64,
    neighbors: Neighboring,
    estimate: Estimate,
    discretization: f64,
) -> Result<Pld> {
    check_steps(steps)?;
    Pld::poisson_gaussian(q, z, neighbors, estimate, discretization)?.self_compose(steps)
}
