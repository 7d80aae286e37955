//! Privacy claims: what a mechanism promises, and what each promise allows for a divergence.
//!
//! Every conversion in [`PrivacyClaim::delta_at`] and [`PrivacyClaim::renyi_at`] cites its source
//! (the list is in `../shared/STATISTICS.md` §1). Values a claim *allows* are rounded **up** (toward
//! the mechanism's favour), so numerical error can never turn into a reported violation.

use std::fmt;
use std::str::FromStr;

use dp_audit_accounting::SamplingPolicy;
use serde::{Deserialize, Serialize};

use crate::error::{MechanismError, Result};
use crate::math::gaussian_dp_delta_upper;

/// Relative slack added to every *computed* allowed value (not to values stated verbatim by the
/// claim, such as the δ of an (ε, δ) claim). Covers floating-point error in `exp`, `ln`, `erfc`.
const ALLOWANCE_SLACK: f64 = 1e-9;

fn round_up(x: f64) -> f64 {
    if x <= 0.0 {
        x
    } else {
        (x * (1.0 + ALLOWANCE_SLACK)).next_up()
    }
}

/// A differential-privacy guarantee, for every pair of neighboring datasets D ~ D' and both
/// orders of the pair.
///
/// Build it with the validated constructors ([`PrivacyClaim::pure`], …) or parse it from the
/// command-line form (`pure:EPS`, `approx:EPS:DELTA`, `renyi:ALPHA:EPS`, `zcdp:RHO`, `gdp:MU`,
/// `dpsgd:Q:Z:T`).
///
/// # Examples
/// ```
/// use dp_audit_mechanisms::PrivacyClaim;
/// let claim: PrivacyClaim = "approx:1:1e-5".parse()?;
/// assert_eq!(claim.delta_at(1.0), Some(1e-5));
/// assert!("pure:-1".parse::<PrivacyClaim>().is_err());
/// # Ok::<(), dp_audit_mechanisms::MechanismError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
#[non_exhaustive]
pub enum PrivacyClaim {
    /// ε-DP: H_{e^ε}(M(D) ‖ M(D')) = 0.
    Pure {
        /// ε ≥ 0.
        epsilon: f64,
    },
    /// (ε, δ)-DP: H_{e^ε}(M(D) ‖ M(D')) ≤ δ.
    Approximate {
        /// ε ≥ 0.
        epsilon: f64,
        /// 0 ≤ δ < 1.
        delta: f64,
    },
    /// (α, ε)-Rényi DP: D_α(M(D) ‖ M(D')) ≤ ε at the single order α.
    Renyi {
        /// α > 1.
        alpha: f64,
        /// ε > 0.
        epsilon: f64,
    },
    /// ρ-zCDP: D_α ≤ ρα for every α > 1.
    ZeroConcentrated {
        /// ρ > 0.
        rho: f64,
    },
    /// μ-Gaussian DP: the whole privacy profile δ(ε) of the Gaussian shift N(μ,1) vs N(0,1).
    GaussianDp {
        /// μ > 0.
        mu: f64,
    },
    /// The whole privacy profile δ(ε) of `steps` steps of the subsampled Gaussian mechanism
    /// (DP-SGD's transcript: sampling rate q, noise multiplier z, sensitivity 1), as the PLD
    /// accountant bounds it from above ([`dp_audit_accounting::pld`]): Poisson sampling, or batches of fixed
    /// size drawn without replacement ([`dp_audit_accounting::pld::Pld::fixed_size_gaussian`], replace-one
    /// only). Command-line form `dpsgd:Q:Z:T` (add-remove), `dpsgd:Q:Z:T:replace-one` or
    /// `dpsgd:Q:Z:T:replace-one:fixed-size`.
    SubsampledGaussian {
        /// q ∈ (0, 1].
        sampling_rate: f64,
        /// z > 0.
        noise_multiplier: f64,
        /// T ≥ 1 (at most [`MAX_CLAIM_STEPS`]).
        steps: u64,
        /// The neighboring relation the profile is for.
        neighbors: crate::dataset::Neighboring,
        /// How each step's batch is drawn: Poisson (the default, left out of the JSON) or
        /// fixed-size (replace-one only).
        #[serde(default, skip_serializing_if = "SamplingPolicy::is_poisson")]
        policy: SamplingPolicy,
    },
    /// (ε_μ, δ_μ)-strong Bayesian DP (Triastcyn & Faltings 2020, Definition 1): for the fixed rest of
    /// the dataset and a differing record x' **drawn from a data distribution μ**,
    /// Pr_{x'~μ, w}[L(w, D, D') ≥ ε_μ] ≤ δ_μ, both orders of the pair. This is a *typical-case*
    /// promise, weaker than DP: it says nothing about any one fixed pair of neighbors (a record
    /// that μ rarely draws may be exposed), so it allows no worst-case divergence
    /// ([`PrivacyClaim::delta_at`] and [`PrivacyClaim::renyi_at`] return `None`) and only the
    /// Bayesian audit (`dp_audit::bayesian`), given μ as a data file, tests it. Command-line
    /// form `bdp:EPS:DELTA`.
    Bayesian {
        /// ε_μ ≥ 0.
        epsilon: f64,
        /// 0 ≤ δ_μ < 1.
        delta: f64,
    },
}

/// Most steps a `dpsgd:` claim may compose (its PLD is built on demand; 10^6 steps take about
/// a second).
pub const MAX_CLAIM_STEPS: u64 = 1_000_000;

/// The pessimistic PLD of a `dpsgd:` claim, built once per process and parameter set: a
/// profile claim is asked for δ(ε) at many ε (the ε grid and its bisection).
fn cached_pld(
    q: f64,
    z: f64,
    steps: u64,
    neighbors: crate::dataset::Neighboring,
    policy: SamplingPolicy,
) -> Option<std::sync::Arc<dp_audit_accounting::pld::Pld>> {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    type Key = (u64, u64, u64, bool, SamplingPolicy);
    static CACHE: OnceLock<Mutex<HashMap<Key, Arc<dp_audit_accounting::pld::Pld>>>> =
        OnceLock::new();
    let key = (
        q.to_bits(),
        z.to_bits(),
        steps,
        // Zero-out accounts as add/remove (`Pld::poisson_gaussian`): the same PLD.
        neighbors != crate::dataset::Neighboring::ReplaceOne,
        policy,
    );
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(p) = cache.lock().ok()?.get(&key) {
        return Some(Arc::clone(p));
    }
    let (estimate, d) = (
        dp_audit_accounting::pld::Estimate::Pessimistic,
        dp_audit_accounting::pld::DEFAULT_DISCRETIZATION,
    );
    let pld = Arc::new(match policy {
        SamplingPolicy::FixedSize => {
            dp_audit_accounting::pld::Pld::fixed_size_gaussian(q, z, estimate, d)
                .and_then(|step| step.self_compose(steps))
                .ok()?
        }
        _ => dp_audit_accounting::pld::poisson_gaussian_pld(q, z, steps, neighbors, estimate, d)
            .ok()?,
    });
    cache.lock().ok()?.insert(key, Arc::clone(&pld));
    Some(pld)
}

/// The largest ε a claim may state: e^ε must be a finite double (e^709.78 overflows), since
/// every hockey-stick allowance and event test computes it (a claim with so large an ε
/// constrains almost nothing anyway).
pub const MAX_EPSILON: f64 = 700.0;

/// ε of a pure, approximate or Bayesian claim: finite, ≥ 0 and at most [`MAX_EPSILON`].
fn check_epsilon(value: f64) -> Result<f64> {
    if value.is_finite() && (0.0..=MAX_EPSILON).contains(&value) {
        Ok(value)
    } else {
        Err(MechanismError::InvalidClaim {
            name: "epsilon",
            value,
            allowed: "a number in [0, 700] (e^epsilon must be a finite double)",
        })
    }
}

fn check_positive(name: &'static str, value: f64) -> Result<f64> {
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(MechanismError::InvalidClaim {
            name,
            value,
            allowed: "a finite number > 0",
        })
    }
}

impl PrivacyClaim {
    /// ε-DP. Errors unless 0 ≤ ε ≤ [`MAX_EPSILON`] (`pure:0`: the output does not depend on any
    /// one record at all, M(D) and M(D') have the same distribution).
    pub fn pure(epsilon: f64) -> Result<Self> {
        Ok(Self::Pure {
            epsilon: check_epsilon(epsilon)?,
        })
    }

    /// (ε, δ)-DP. Errors unless 0 ≤ ε ≤ [`MAX_EPSILON`] and 0 ≤ δ < 1 (ε = 0: total variation ≤ δ).
    pub fn approximate(epsilon: f64, delta: f64) -> Result<Self> {
        let epsilon = check_epsilon(epsilon)?;
        if !(0.0..1.0).contains(&delta) {
            return Err(MechanismError::InvalidClaim {
                name: "delta",
                value: delta,
                allowed: "0 <= delta < 1",
            });
        }
        Ok(Self::Approximate { epsilon, delta })
    }

    /// (α, ε)-RDP. Errors unless α > 1 and ε > 0, both finite.
    pub fn renyi(alpha: f64, epsilon: f64) -> Result<Self> {
        if !(alpha.is_finite() && alpha > 1.0) {
            return Err(MechanismError::InvalidClaim {
                name: "alpha",
                value: alpha,
                allowed: "a finite number > 1",
            });
        }
        Ok(Self::Renyi {
            alpha,
            epsilon: check_positive("epsilon", epsilon)?,
        })
    }

    /// ρ-zCDP. Errors unless ρ is finite and > 0.
    pub fn zcdp(rho: f64) -> Result<Self> {
        Ok(Self::ZeroConcentrated {
            rho: check_positive("rho", rho)?,
        })
    }

    /// μ-GDP. Errors unless μ is finite and > 0.
    pub fn gaussian_dp(mu: f64) -> Result<Self> {
        Ok(Self::GaussianDp {
            mu: check_positive("mu", mu)?,
        })
    }

    /// The DP-SGD profile: `steps` steps of the Poisson-subsampled Gaussian mechanism at rate q
    /// with noise multiplier z. Errors unless 0 < q ≤ 1, z finite and > 0, 1 ≤ steps ≤
    /// [`MAX_CLAIM_STEPS`].
    pub fn subsampled_gaussian(
        sampling_rate: f64,
        noise_multiplier: f64,
        steps: u64,
        neighbors: crate::dataset::Neighboring,
    ) -> Result<Self> {
        Self::subsampled_gaussian_with_policy(
            sampling_rate,
            noise_multiplier,
            steps,
            neighbors,
            SamplingPolicy::Poisson,
        )
    }

    /// The DP-SGD profile with batches drawn as `policy` says: Poisson, or fixed-size (B of n
    /// without replacement each step; replace-one only). Errors as
    /// [`PrivacyClaim::subsampled_gaussian`], and for a shuffled policy (no accountant here
    /// amplifies it) or fixed-size batches under another relation.
    pub fn subsampled_gaussian_with_policy(
        sampling_rate: f64,
        noise_multiplier: f64,
        steps: u64,
        neighbors: crate::dataset::Neighboring,
        policy: SamplingPolicy,
    ) -> Result<Self> {
        match policy {
            SamplingPolicy::Poisson => {}
            SamplingPolicy::FixedSize if neighbors == crate::dataset::Neighboring::ReplaceOne => {}
            SamplingPolicy::FixedSize => {
                return Err(MechanismError::InvalidParameter {
                    mechanism: "claim".into(),
                    message: format!(
                        "a DP-SGD claim with fixed-size batches under {neighbors} neighbors; allowed: replace-one (dpsgd:Q:Z:T:replace-one:fixed-size; a batch of exactly B of n records has rate B/n only for a fixed n)"
                    ),
                });
            }
            SamplingPolicy::Shuffled => {
                return Err(MechanismError::InvalidParameter {
                    mechanism: "claim".into(),
                    message: "a DP-SGD claim with shuffled batches; allowed: poisson or fixed-size (no accountant here amplifies shuffled batches)".into(),
                });
            }
        }
        if !(sampling_rate > 0.0 && sampling_rate <= 1.0) {
            return Err(MechanismError::InvalidClaim {
                name: "sampling_rate",
                value: sampling_rate,
                allowed: "0 < q <= 1",
            });
        }
        if !(1..=MAX_CLAIM_STEPS).contains(&steps) {
            return Err(MechanismError::InvalidClaim {
                name: "steps",
                value: steps as f64,
                allowed: "a whole number from 1 to 1000000",
            });
        }
        Ok(Self::SubsampledGaussian {
            sampling_rate,
            noise_multiplier: check_positive("noise_multiplier", noise_multiplier)?,
            steps,
            neighbors,
            policy,
        })
    }

    /// (ε_μ, δ_μ)-Bayesian DP. Errors unless 0 ≤ ε_μ ≤ [`MAX_EPSILON`] and 0 ≤ δ_μ < 1.
    pub fn bayesian(epsilon: f64, delta: f64) -> Result<Self> {
        let epsilon = check_epsilon(epsilon)?;
        if !(0.0..1.0).contains(&delta) {
            return Err(MechanismError::InvalidClaim {
                name: "delta",
                value: delta,
                allowed: "0 <= delta < 1",
            });
        }
        Ok(Self::Bayesian { epsilon, delta })
    }

    /// True for a Bayesian (typical-case) claim, which only the Bayesian audit can test.
    pub fn is_bayesian(&self) -> bool {
        matches!(self, Self::Bayesian { .. })
    }

    /// Re-validates a claim (e.g. one that came through deserialization).
    pub fn validated(self) -> Result<Self> {
        match self {
            Self::SubsampledGaussian {
                sampling_rate,
                noise_multiplier,
                steps,
                neighbors,
                policy,
            } => Self::subsampled_gaussian_with_policy(
                sampling_rate,
                noise_multiplier,
                steps,
                neighbors,
                policy,
            ),
            Self::Pure { epsilon } => Self::pure(epsilon),
            Self::Approximate { epsilon, delta } => Self::approximate(epsilon, delta),
            Self::Renyi { alpha, epsilon } => Self::renyi(alpha, epsilon),
            Self::ZeroConcentrated { rho } => Self::zcdp(rho),
            Self::GaussianDp { mu } => Self::gaussian_dp(mu),
            Self::Bayesian { epsilon, delta } => Self::bayesian(epsilon, delta),
        }
    }

    /// Short name of the claim's kind: `pure`, `approx`, `renyi`, `zcdp`, `gdp`, `dpsgd`, `bdp`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Pure { .. } => "pure",
            Self::Approximate { .. } => "approx",
            Self::Renyi { .. } => "renyi",
            Self::ZeroConcentrated { .. } => "zcdp",
            Self::GaussianDp { .. } => "gdp",
            Self::SubsampledGaussian { .. } => "dpsgd",
            Self::Bayesian { .. } => "bdp",
        }
    }

    /// True when the claim bounds the hockey-stick divergence at *every* ε (a privacy profile),
    /// rather than at one point.
    pub fn is_profile(&self) -> bool {
        matches!(
            self,
            Self::GaussianDp { .. }
                | Self::ZeroConcentrated { .. }
                | Self::Renyi { .. }
                | Self::SubsampledGaussian { .. }
        )
    }

    /// The same kind of claim for the same mechanism with its noise multiplied by `factor`
    /// (> 0): what the claim would say if the noise were `factor` times as large, for the claims
    /// whose parameter is a noise scale: μ-GDP → μ/factor (μ = Δ/σ), ρ-zCDP → ρ/factor² and
    /// Rényi (α, ε) → (α, ε/factor²) (ρ = Δ²/(2σ²) and ε_α = αΔ²/(2σ²) for the Gaussian
    /// mechanism), DP-SGD (q, z, T) → (q, z·factor, T). `None` for pure, approximate and
    /// Bayesian claims (their parameter is not a noise scale) or an invalid factor.
    ///
    /// Used only to *plan* where a test looks (the ε at which a slightly smaller noise would
    /// show most): never to decide what a claim allows.
    pub fn with_noise_scaled(&self, factor: f64) -> Option<Self> {
        if !(factor.is_finite() && factor > 0.0) {
            return None;
        }
        let scaled = match *self {
            Self::GaussianDp { mu } => Self::gaussian_dp(mu / factor),
            Self::ZeroConcentrated { rho } => Self::zcdp(rho / (factor * factor)),
            Self::Renyi { alpha, epsilon } => Self::renyi(alpha, epsilon / (factor * factor)),
            Self::SubsampledGaussian {
                sampling_rate,
                noise_multiplier,
                steps,
                neighbors,
                policy,
            } => Self::subsampled_gaussian_with_policy(
                sampling_rate,
                noise_multiplier * factor,
                steps,
                neighbors,
                policy,
            ),
            Self::Pure { .. } | Self::Approximate { .. } | Self::Bayesian { .. } => return None,
        };
        scaled.ok()
    }

    /// The ε at which the claim is naturally stated for hockey-stick testing: the claim's own ε for
    /// pure and approximate DP; `None` for profile-like claims (test on a grid instead).
    pub fn natural_epsilon(&self) -> Option<f64> {
        match self {
            Self::Pure { epsilon } | Self::Approximate { epsilon, .. } => Some(*epsilon),
            _ => None,
        }
    }

    /// The largest hockey-stick divergence H_{e^ε}(M(D) ‖ M(D')) the claim allows at `epsilon`
    /// (ε ≥ 0), rounded up. `None` if the claim implies nothing at that ε, or ε is invalid.
    ///
    /// Sources, by claim kind:
    /// - **pure ε₀**: 0 for ε ≥ ε₀; for ε < ε₀, (e^ε₀ − e^ε)/(1 + e^ε₀), the profile of binary
    ///   randomized response, which dominates every ε₀-DP pair (Kairouz, Oh & Viswanath 2017,
    ///   "The composition theorem for differential privacy", Theorem 2.1).
    /// - **approximate (ε₀, δ₀)**: δ₀ for ε ≥ ε₀; for ε < ε₀, δ₀ + (1 − δ₀)(e^ε₀ − e^ε)/(1 + e^ε₀),
    ///   the profile of the same theorem's four-point dominating pair.
    /// - **Rényi (α, ε_α)**: δ = exp((α−1)(ε_α + log1p(−1/α) − ε) − log α), the RDP → DP
    ///   conversion of Balle et al. 2020 (Theorem 21) / Canonne, Kamath & Steinke 2020
    ///   (Proposition 12), capped at 1.
    /// - **ρ-zCDP**: the same conversion with ε_α = ρα, minimized over α > 1 (Bun & Steinke 2016
    ///   define zCDP through all orders; CKS 2020 Prop. 12 per order). Any α gives a valid bound,
    ///   so a numerical minimizer can only make the bound looser, never invalid.
    /// - **μ-GDP**: the exact Gaussian profile Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
    ///   (Dong, Roth & Su 2022, Corollary 2.13).
    /// - **DP-SGD (q, z, T)**: the pessimistic (Connect-the-Dots) PLD of T composed steps of the
    ///   Poisson-subsampled Gaussian, the larger of its two directions ([`dp_audit_accounting::pld`];
    ///   Doroshenko et al. 2022), plus a relative 1e-5 and an absolute 1e-12 for the FFT's
    ///   floating-point error (measured at 3–5e-7 relative near δ = 1e-5); `None` if the PLD
    ///   cannot be built (a grid too large), which lets no bound be compared with it.
    pub fn delta_at(&self, epsilon: f64) -> Option<f64> {
        if !(epsilon.is_finite() && epsilon >= 0.0) {
            return None;
        }
        let value = match *self {
            Self::Pure { epsilon: e0 } => {
                if epsilon >= e0 {
                    return Some(0.0);
                }
                round_up((e0.exp() - epsilon.exp()) / (1.0 + e0.exp()))
            }
            Self::Approximate { epsilon: e0, delta } => {
                if epsilon >= e0 {
                    return Some(delta);
                }
                round_up(delta + (1.0 - delta) * (e0.exp() - epsilon.exp()) / (1.0 + e0.exp()))
            }
            Self::Renyi { alpha, epsilon: ea } => round_up(rdp_to_delta(alpha, ea, epsilon)),
            Self::ZeroConcentrated { rho } => round_up(zcdp_to_delta(rho, epsilon)),
            Self::GaussianDp { mu } => round_up(gaussian_dp_delta_upper(epsilon, mu)),
            // A typical-case promise over x' ~ μ allows nothing about a fixed pair.
            Self::Bayesian { .. } => return None,
            Self::SubsampledGaussian {
                sampling_rate,
                noise_multiplier,
                steps,
                neighbors,
                policy,
            } => {
                let pld = cached_pld(sampling_rate, noise_multiplier, steps, neighbors, policy)?;
                round_up(pld.delta(epsilon) * (1.0 + 1e-5) + 1e-12)
            }
        };
        Some(value.min(1.0))
    }

    /// The largest Rényi divergence D_α(M(D) ‖ M(D')) the claim allows at order `alpha` (> 1),
    /// rounded up. `None` if the claim implies no finite bound at that order.
    ///
    /// Sources, by claim kind:
    /// - **pure ε**: min(ε, αε²/2): D_α ≤ D_∞ ≤ ε, and ε-DP ⇒ ½ε²-zCDP
    ///   (Bun & Steinke 2016, Proposition 3.3).
    /// - **approximate**: none (δ > 0 allows an infinite Rényi divergence).
    /// - **Rényi (α₀, ε₀)**: ε₀ for α ≤ α₀ (D_α is non-decreasing in α: van Erven & Harremoës 2014,
    ///   Theorem 3); none above α₀.
    /// - **ρ-zCDP**: ρα (the definition; Bun & Steinke 2016, Definition 1.1).
    /// - **DP-SGD (q, z, T)**, add-remove: T times the RDP of one Poisson-subsampled Gaussian step
    ///   (Mironov, Talwar & Zhang 2019; [`dp_audit_accounting::rdp::subsampled_gaussian_rdp`]);
    ///   replace-one: none here.
    /// - **μ-GDP**: αμ²/2. A μ-GDP pair is a post-processing of (N(μ,1), N(0,1)) (Dong, Roth & Su
    ///   2022, via Blackwell's theorem), whose Rényi divergence is αμ²/2 (Mironov 2017, Prop. 7);
    ///   D_α obeys data processing.
    pub fn renyi_at(&self, alpha: f64) -> Option<f64> {
        if !(alpha.is_finite() && alpha > 1.0) {
            return None;
        }
        match *self {
            Self::Pure { epsilon } => Some(round_up(epsilon.min(alpha * epsilon * epsilon / 2.0))),
            Self::Approximate { .. } => None,
            Self::Renyi { alpha: a0, epsilon } => (alpha <= a0).then_some(epsilon),
            Self::ZeroConcentrated { rho } => Some(round_up(rho * alpha)),
            Self::GaussianDp { mu } => Some(round_up(alpha * mu * mu / 2.0)),
            Self::SubsampledGaussian {
                sampling_rate,
                noise_multiplier,
                steps,
                neighbors: crate::dataset::Neighboring::AddRemove,
                policy: SamplingPolicy::Poisson,
            } => dp_audit_accounting::rdp::subsampled_gaussian_rdp(
                sampling_rate,
                noise_multiplier,
                alpha,
            )
            .ok()
            .filter(|r| r.is_finite())
            .map(|r| round_up(r * steps as f64)),
            Self::SubsampledGaussian { .. } => None,
            // A typical-case promise over x' ~ μ allows nothing about a fixed pair.
            Self::Bayesian { .. } => None,
        }
    }
}

/// The RDP and zCDP → (ε, δ) conversions of the claims live with the accountants.
pub use dp_audit_accounting::rdp::{rdp_to_delta, zcdp_to_delta};

impl fmt::Display for PrivacyClaim {
    /// The command-line form, e.g. `approx:1:1e-5`; every number exact and brief
    /// ([`crate::math::exact`]: `pure:1e-300`, not 300 zeros), so it parses back to this claim.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let x = |v: &f64| crate::math::exact(*v);
        match self {
            Self::Pure { epsilon } => write!(f, "pure:{}", x(epsilon)),
            Self::Approximate { epsilon, delta } => write!(f, "approx:{}:{delta:e}", x(epsilon)),
            Self::Renyi { alpha, epsilon } => write!(f, "renyi:{}:{}", x(alpha), x(epsilon)),
            Self::ZeroConcentrated { rho } => write!(f, "zcdp:{}", x(rho)),
            Self::GaussianDp { mu } => write!(f, "gdp:{}", x(mu)),
            Self::SubsampledGaussian {
                sampling_rate,
                noise_multiplier,
                steps,
                neighbors,
                policy,
            } => {
                write!(
                    f,
                    "dpsgd:{}:{}:{steps}",
                    x(sampling_rate),
                    x(noise_multiplier)
                )?;
                if *neighbors != crate::dataset::Neighboring::AddRemove || !policy.is_poisson() {
                    write!(f, ":{neighbors}")?;
                }
                if !policy.is_poisson() {
                    write!(f, ":{policy}")?;
                }
                Ok(())
            }
            Self::Bayesian { epsilon, delta } => write!(f, "bdp:{}:{delta:e}", x(epsilon)),
        }
    }
}

/// The claim forms [`PrivacyClaim::from_str`] reads, as its errors list them (a front end that
/// reads more forms, like the CLI's `ledger:FILE`, adds its own).
pub const CLAIM_FORMS: &[&str] = &[
    "pure:EPS",
    "approx:EPS:DELTA",
    "renyi:ALPHA:EPS",
    "zcdp:RHO",
    "gdp:MU",
    "dpsgd:Q:Z:T[:NEIGHBORS[:POLICY]]",
    "bdp:EPS:DELTA",
];

/// Whether `kind` (a claim's text before its first `:`) is a kind [`PrivacyClaim::from_str`]
/// reads: those of [`CLAIM_FORMS`] and their longer spellings (`approximate`, `rdp`,
/// `bayesian`).
pub fn is_claim_kind(kind: &str) -> bool {
    matches!(
        kind.trim(),
        "pure"
            | "approx"
            | "approximate"
            | "renyi"
            | "rdp"
            | "zcdp"
            | "gdp"
            | "dpsgd"
            | "bdp"
            | "bayesian"
    )
}

impl FromStr for PrivacyClaim {
    type Err = MechanismError;

    /// Parses `pure:EPS`, `approx:EPS:DELTA`, `renyi:ALPHA:EPS`, `zcdp:RHO` or `gdp:MU`.
    fn from_str(s: &str) -> Result<Self> {
        let parts: Vec<&str> = s.trim().split(':').collect();
        let bad = |message: String| MechanismError::InvalidParameter {
            mechanism: "claim".into(),
            message,
        };
        let num = |name: &str, text: &str| -> Result<f64> {
            let v = text
                .trim()
                .parse::<f64>()
                .map_err(|_| bad(format!("{name} = {text:?} in claim {s:?} is not a number")))?;
            // A non-zero spelling that rounds to 0 (1e-400) would silently claim 0.
            let mantissa = text.trim().split(['e', 'E']).next().unwrap_or("");
            if v == 0.0 && mantissa.chars().any(|c| c.is_ascii_digit() && c != '0') {
                return Err(bad(format!(
                    "{name} = {text:?} in claim {s:?} is below the smallest positive double (about 4.9e-324) and would read as 0; allowed: 0 itself or a value ≥ 4.9e-324"
                )));
            }
            Ok(v)
        };
        let want = |n: usize, form: &str| -> Result<()> {
            if parts.len() == n {
                Ok(())
            } else {
                Err(bad(format!(
                    "claim {s:?} has {} field(s); the form is {form}",
                    parts.len()
                )))
            }
        };
        match parts[0] {
            "pure" => {
                want(2, "pure:EPS")?;
                Self::pure(num("epsilon", parts[1])?)
            }
            "approx" | "approximate" => {
                want(3, "approx:EPS:DELTA")?;
                Self::approximate(num("epsilon", parts[1])?, num("delta", parts[2])?)
            }
            "renyi" | "rdp" => {
                want(3, "renyi:ALPHA:EPS")?;
                Self::renyi(num("alpha", parts[1])?, num("epsilon", parts[2])?)
            }
            "zcdp" => {
                want(2, "zcdp:RHO")?;
                Self::zcdp(num("rho", parts[1])?)
            }
            "gdp" => {
                want(2, "gdp:MU")?;
                Self::gaussian_dp(num("mu", parts[1])?)
            }
            "bdp" | "bayesian" => {
                want(3, "bdp:EPS:DELTA")?;
                Self::bayesian(num("epsilon", parts[1])?, num("delta", parts[2])?)
            }
            "dpsgd" => {
                if !(4..=6).contains(&parts.len()) {
                    want(
                        4,
                        "dpsgd:Q:Z:T, dpsgd:Q:Z:T:replace-one or dpsgd:Q:Z:T:replace-one:fixed-size",
                    )?;
                }
                let steps = num("steps", parts[3])?;
                if !(steps >= 1.0 && steps.fract() == 0.0 && steps <= MAX_CLAIM_STEPS as f64) {
                    return Err(bad(format!(
                        "steps = {:?} in claim {s:?}; allowed: a whole number from 1 to {MAX_CLAIM_STEPS}",
                        parts[3]
                    )));
                }
                let neighbors = match parts.get(4) {
                    None => crate::dataset::Neighboring::AddRemove,
                    Some(n) => n.trim().parse()?,
                };
                let policy = match parts.get(5).map(|p| p.trim()) {
                    None | Some("poisson") => SamplingPolicy::Poisson,
                    Some("fixed-size") => SamplingPolicy::FixedSize,
                    Some(other) => {
                        return Err(bad(format!(
                            "batch policy {other:?} in claim {s:?}; allowed: poisson or fixed-size (B of n drawn without replacement each step, with replace-one)"
                        )));
                    }
                };
                Self::subsampled_gaussian_with_policy(
                    num("sampling rate", parts[1])?,
                    num("noise multiplier", parts[2])?,
                    steps as u64,
                    neighbors,
                    policy,
                )
            }
            other => Err(bad(format!(
                "unknown claim kind {other:?}; allowed: {}",
                CLAIM_FORMS.join(", ")
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listed_forms_are_the_kinds_parsed() {
        // Every listed form parses once its placeholders are filled, to a claim of its kind.
        for form in CLAIM_FORMS {
            let text = form
                .replace("[:NEIGHBORS[:POLICY]]", "")
                .replace("EPS", "0.5")
                .replace("DELTA", "1e-5")
                .replace("ALPHA", "2")
                .replace("RHO", "0.1")
                .replace("MU", "1")
                .replace(":Q:Z:T", ":0.01:1.1:100");
            let kind = form.split(':').next().unwrap();
            assert!(is_claim_kind(kind), "{form}");
            let c: PrivacyClaim = text.parse().unwrap_or_else(|e| panic!("{form}: {e}"));
            assert_eq!(c.to_string().split(':').next(), Some(kind), "{form}");
        }
        // A kind outside the list is refused, and the refusal lists exactly the forms.
        let e = "foo:1".parse::<PrivacyClaim>().unwrap_err().to_string();
        assert!(!is_claim_kind("foo"));
        assert!(
            e.ends_with(&format!("allowed: {}", CLAIM_FORMS.join(", "))),
            "{e}"
        );
    }

    #[test]
    fn constructors_validate() {
        // ε = 0 is a claim (the output ignores every record); a negative ε is not.
        assert!(PrivacyClaim::pure(0.0).is_ok());
        assert!(PrivacyClaim::approximate(0.0, 0.1).is_ok());
        assert!(PrivacyClaim::pure(-1.0).is_err());
        assert!(PrivacyClaim::pure(f64::NAN).is_err());
        assert!(PrivacyClaim::pure(f64::INFINITY).is_err());
        assert!(PrivacyClaim::approximate(1.0, 1.0).is_err());
        assert!(PrivacyClaim::approximate(1.0, -0.1).is_err());
        assert!(PrivacyClaim::approximate(1.0, 0.0).is_ok());
        assert!(PrivacyClaim::renyi(1.0, 1.0).is_err());
        assert!(PrivacyClaim::zcdp(-1.0).is_err());
        assert!(PrivacyClaim::gaussian_dp(0.0).is_err());
        let e = PrivacyClaim::approximate(1.0, 2.0).unwrap_err().to_string();
        assert!(
            e.contains("delta = 2") && e.contains("0 <= delta < 1"),
            "{e}"
        );
    }

    #[test]
    fn parse_and_display_round_trip() {
        for s in [
            "pure:1",
            "approx:1:1e-5",
            "renyi:2:0.5",
            "zcdp:0.25",
            "gdp:0.5",
            "dpsgd:0.01:1.1:100",
            "dpsgd:0.01:1.1:100:replace-one",
            "dpsgd:0.25:1:4:replace-one:fixed-size",
            "bdp:1:1e-5",
            "bdp:0.5:0.01",
        ] {
            let c: PrivacyClaim = s.parse().unwrap();
            let again: PrivacyClaim = c.to_string().parse().unwrap();
            assert_eq!(c, again);
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<PrivacyClaim>(&json).unwrap(), c);
        }
        for bad in [
            "dpsgd:0:1:1",
            "dpsgd:1.5:1:1",
            "dpsgd:0.1:0:1",
            "dpsgd:0.1:1:0",
            "dpsgd:0.1:1:1.5",
            "dpsgd:0.1:1:1e7",
            "dpsgd:0.1:1",
            "dpsgd:0.1:1:1:swap",
            "dpsgd:0.1:1:1:add-remove:fixed-size",
            "dpsgd:0.1:1:1:replace-one:shuffled",
            "dpsgd:0.1:1:1:replace-one:fixed-size:x",
        ] {
            assert!(bad.parse::<PrivacyClaim>().is_err(), "{bad}");
        }
        // The policy is written only when not Poisson; an explicit "poisson" reads as the
        // default, and a fixed-size claim's JSON names its policy.
        let poisson: PrivacyClaim = "dpsgd:0.25:1:4:replace-one:poisson".parse().unwrap();
        assert_eq!(poisson.to_string(), "dpsgd:0.25:1:4:replace-one");
        assert!(!serde_json::to_string(&poisson).unwrap().contains("policy"));
        let fixed: PrivacyClaim = "dpsgd:0.25:1:4:replace-one:fixed-size".parse().unwrap();
        assert!(
            serde_json::to_string(&fixed)
                .unwrap()
                .contains("\"policy\":\"fixed-size\"")
        );
        let e = "dpsgd:0.1:1:1:add-remove:fixed-size"
            .parse::<PrivacyClaim>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("allowed: replace-one"), "{e}");
        // Fixed-size batches cost more than Poisson sampling at the same rate (the displaced
        // record), and less than no amplification (μ = 2√T/z = 4).
        let unamplified = PrivacyClaim::gaussian_dp(4.0).unwrap();
        for eps in [1.0, 3.0, 8.0] {
            let (f, p, u) = (
                fixed.delta_at(eps).unwrap(),
                poisson.delta_at(eps).unwrap(),
                unamplified.delta_at(eps).unwrap(),
            );
            assert!(p < f && f < u, "eps {eps}: {p} {f} {u}");
        }
        assert_eq!(fixed.renyi_at(2.0), None);
        assert!("approx:1".parse::<PrivacyClaim>().is_err());
        assert!("laplace:1".parse::<PrivacyClaim>().is_err());
        assert!("pure:abc".parse::<PrivacyClaim>().is_err());
    }

    /// At q = 1, T steps of multiplier z are exactly (√T/z)-GDP: the dpsgd profile is an upper
    /// bound on that exact curve and within 0.1 % of it where δ is not tiny; its Rényi allowance
    /// is Tα/(2z²) (the subsampled RDP at q = 1).
    #[test]
    fn dpsgd_profile_matches_the_gaussian_at_full_batch() {
        let e = "pure:1e-400"
            .parse::<PrivacyClaim>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("1e-400") && e.contains("allowed"), "{e}");
        assert_eq!(
            "pure:0e5".parse::<PrivacyClaim>().unwrap().to_string(),
            "pure:0"
        );
        let c: PrivacyClaim = "dpsgd:1:2:4".parse().unwrap();
        let g = PrivacyClaim::gaussian_dp(1.0).unwrap();
        for eps in [0.0, 0.5, 1.0, 2.0, 3.0] {
            let (d, exact) = (c.delta_at(eps).unwrap(), g.delta_at(eps).unwrap());
            assert!(d >= exact, "ε = {eps}: {d} < {exact}");
            assert!(d <= exact * 1.001 + 1e-11, "ε = {eps}: {d} vs {exact}");
        }
        let r = c.renyi_at(2.0).unwrap();
        assert!((r - 4.0 * 2.0 / 8.0).abs() < 1e-6, "{r}");
        let replace: PrivacyClaim = "dpsgd:1:2:4:replace-one".parse().unwrap();
        assert!(replace.renyi_at(2.0).is_none());
        assert!(replace.delta_at(1.0).unwrap() > c.delta_at(1.0).unwrap());
        assert!(c.is_profile() && c.natural_epsilon().is_none());
    }

    /// A Bayesian claim is typical-case: it allows no worst-case divergence at all, so every
    /// worst-case tester finds nothing to compare with; it parses, validates and round-trips.
    #[test]
    fn bayesian_claim_allows_no_worst_case_divergence() {
        let c: PrivacyClaim = "bdp:1:1e-5".parse().unwrap();
        assert_eq!(c, PrivacyClaim::bayesian(1.0, 1e-5).unwrap());
        assert!(c.is_bayesian() && !c.is_profile() && c.natural_epsilon().is_none());
        assert_eq!(c.kind(), "bdp");
        for e in [0.0, 0.5, 1.0, 10.0] {
            assert_eq!(c.delta_at(e), None);
        }
        assert_eq!(c.renyi_at(2.0), None);
        let j = serde_json::to_string(&c).unwrap();
        assert!(j.starts_with(r#"{"kind":"bayesian","epsilon":1.0"#), "{j}");
        for bad in [
            "bdp:1",
            "bdp:-1:0.1",
            "bdp:1:1",
            "bdp:1:-0.5",
            "bdp:nan:0.1",
        ] {
            assert!(bad.parse::<PrivacyClaim>().is_err(), "{bad}");
        }
        let e = "bdp:1:2".parse::<PrivacyClaim>().unwrap_err().to_string();
        assert!(
            e.contains("delta = 2") && e.contains("0 <= delta < 1"),
            "{e}"
        );
    }

    #[test]
    fn json_round_trip() {
        let c = PrivacyClaim::approximate(1.0, 1e-5).unwrap();
        let j = serde_json::to_string(&c).unwrap();
        assert!(
            j.starts_with(r#"{"kind":"approximate","epsilon":1.0,"delta":"#),
            "{j}"
        );
        assert_eq!(serde_json::from_str::<PrivacyClaim>(&j).unwrap(), c);
    }

    #[test]
    fn pure_profile_matches_randomized_response() {
        // Binary randomized response with ε0 = ln 3 (p = 3/4): H_{e^0} = TV = 1/2.
        let c = PrivacyClaim::pure(3f64.ln()).unwrap();
        assert!((c.delta_at(0.0).unwrap() - 0.5).abs() < 1e-8);
        assert_eq!(c.delta_at(3f64.ln()), Some(0.0));
        assert_eq!(
            c.renyi_at(2.0),
            Some(round_up(3f64.ln().min(3f64.ln().powi(2))))
        );
    }

    #[test]
    fn delta_at_is_non_increasing() {
        let claims = [
            PrivacyClaim::pure(1.0).unwrap(),
            PrivacyClaim::approximate(1.0, 1e-5).unwrap(),
            PrivacyClaim::renyi(4.0, 0.5).unwrap(),
            PrivacyClaim::zcdp(0.1).unwrap(),
            PrivacyClaim::gaussian_dp(0.5).unwrap(),
        ];
        for c in claims {
            let mut prev = f64::INFINITY;
            for i in 0..200 {
                let e = i as f64 * 0.05;
                let d = c.delta_at(e).unwrap();
                assert!((0.0..=1.0).contains(&d));
                assert!(d <= prev * (1.0 + 1e-6), "{c} at {e}: {d} > {prev}");
                prev = d;
            }
        }
    }

    #[test]
    fn zcdp_conversion_reference_value() {
        // OpenDP: Gaussian scale 4, sensitivity 1 → ρ = 1/32; its zCDP → (ε, δ) conversion gives
        // ε(δ = 1e-3) = 0.6880024554878085 (STATISTICS.md §4). So δ(0.6880024554878085) ≈ 1e-3.
        let d = zcdp_to_delta(1.0 / 32.0, 0.6880024554878085);
        assert!((d / 1e-3 - 1.0).abs() < 1e-4, "{d}");
        // zCDP bound is looser than the exact Gaussian profile (μ = 1/4).
        let exact = PrivacyClaim::gaussian_dp(0.25).unwrap();
        let z = PrivacyClaim::zcdp(1.0 / 32.0).unwrap();
        assert!(z.delta_at(0.6).unwrap() >= exact.delta_at(0.6).unwrap());
    }

    #[test]
    fn renyi_at_sources() {
        let r = PrivacyClaim::renyi(4.0, 0.5).unwrap();
        assert_eq!(r.renyi_at(2.0), Some(0.5));
        assert_eq!(r.renyi_at(8.0), None);
        assert_eq!(
            PrivacyClaim::approximate(1.0, 1e-5).unwrap().renyi_at(2.0),
            None
        );
        let g = PrivacyClaim::gaussian_dp(0.5)
            .unwrap()
            .renyi_at(2.0)
            .unwrap();
        assert!((g - 0.25).abs() < 1e-9);
        assert_eq!(PrivacyClaim::zcdp(0.1).unwrap().renyi_at(0.5), None);
    }
}
