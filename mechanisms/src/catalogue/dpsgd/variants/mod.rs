//! DP-SGD as it is really run: variants of the training loop of `dpsgd/mod.rs`, each correct
//! with a buggy twin that makes a mistake seen in practice.
//!
//! | id | status (defaults) | claim (defaults) | true guarantee (defaults) |
//! |---|---|---|---|
//! | `dpsgd-per-group-clipping` | correct | (2.1547, 1e-5) | tight on the witness (μ = 0.536) |
//! | `dpsgd-groups-composed-independently` | buggy | (1.0000, 1e-5) | μ = 0.536: δ = 1.04e-2 at the claimed ε |
//! | `dpsgd-user-level` | correct | (1.0000, 1e-5) | tight on the witness (μ = 0.268) |
//! | `dpsgd-user-level-example-clipping` | buggy | (1.0000, 1e-5) | μ = 0.536: δ = 1.04e-2 at the claimed ε |
//! | `dpsgd-batch-size-released` | correct | (0.6781, 1e-5) | valid (noisy size accounted) |
//! | `dpsgd-batch-size-leak` | buggy | (0.5862, 1e-5) | δ ≥ 8.79e-2 at the claimed ε (sizes alone) |
//! | `dpsgd-private-clip-norm-accounted` | correct | (2.1547, 1e-5) | valid (DP quantile accounted) |
//! | `dpsgd-private-clip-norm` | buggy | (1.0000, 1e-5) | δ ≥ 0.79 at the claimed ε (witness) |
//!
//! (The claims are the values printed by the tests; see `dpsgd/variants/tests.rs`.)
//!
//! # The common loop
//! The gradient form of `dpsgd/mod.rs`: the loss is linear, so a record (or each example of a user)
//! *is* its gradient, in [−1, 1]. From θ₀ = 0, for t = 1, …, T: Poisson sampling at rate q (q = 1
//! is full-batch DP-GD), the clipped contributions are summed, Gaussian noise is added, and
//! θ_t = θ_{t−1} − (noisy sum). **Every iterate θ₁, …, θ_T is released** (T·d numbers, plus the
//! batch size for the batch-size entries), so the released transcript is exactly what the privacy
//! ledger accounts for and the true guarantee of a sensitivity mistake is the PLD of the
//! Poisson-subsampled Gaussian at the true noise multiplier.
//!
//! # Claims
//! Every claim is read off a privacy ledger ([`PldAccountant`], add/remove neighbors): T steps of
//! the Poisson-subsampled Gaussian at rate q with the noise multiplier the implementation
//! *believes* it has; the claim is the pessimistic (upper, rounded up) ε at the claimed δ. Several
//! Gaussian queries answered on the same sample (per-group sums, a noisy count) compose to one
//! query of multiplier (Σ_j z_j⁻²)^{−1/2} (Mironov, Talwar & Zhang 2019, §3; Dong, Roth & Su 2022,
//! Corollary 3.3): the record's whitened contribution to the joint query has that norm.
//!
//! # True guarantees and status
//! A buggy entry is labelled buggy only when a *lower bound* on its true δ at the claimed ε
//! exceeds the claimed δ: for the sensitivity mistakes (groups, user level) the exact Gaussian
//! profile (q = 1) or the optimistic PLD (q < 1) at the true per-step μ; for the size leak the
//! exact hockey-stick divergence of the released sizes alone on the witness; for the private clip
//! norm the exact hockey-stick divergence of the first released iterate (two Gaussians of
//! different scale) on the witness. A configuration where the mistake is harmless (one group,
//! one example per user, a clip floor ≥ 1) gets the status correct from the same computation.
//!
//! # Sources
//! - Abadi et al. 2016, "Deep Learning with Differential Privacy" (DP-SGD, clipping, ledger).
//! - McMahan, Ramage, Talwar & Zhang 2018, "Learning Differentially Private Recurrent Language
//!   Models" (user-level DP-SGD: clip each user's update); McMahan, Andrew, Erlingsson, Chien,
//!   Mironov, Papernot & Kairouz 2018, "A General Approach to Adding Differential Privacy to
//!   Iterative Training Procedures" (per-group clipping with its own (C_j, σ_j), accounting of
//!   several queries on one sample).
//! - Andrew, Thakkar, McMahan & Ramaswamy 2021, "Differentially Private Learning with Adaptive
//!   Clipping" (the clip norm from a noisy, accounted quantile estimate).
//! - Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy of the Sampled Gaussian
//!   Mechanism"; Koskela, Jälkö & Honkela 2020 and Doroshenko et al. 2022 (the PLD accountant,
//!   `pld.rs`); Balle & Wang 2018 (the exact Gaussian profile).
//!
//! # Shuffled batches accounted as Poisson
//! In `dpsgd/shuffled.rs` (its own loop: a permutation per epoch instead of Poisson sampling).
//! At the few steps an audit affords, the Poisson claim at δ = 1e-5 is ε ≥ 3 and the shuffled
//! run's excess there is out of reach, so the twin claims the accountant's whole profile, which
//! the final model alone refutes at small ε (δ ≈ 0.46 against 0.37 at the defaults).

use rand::{Rng, RngExt};

use crate::catalogue::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::math::{analytic_gaussian_sigma, gaussian_dp_delta, std_normal_cdf};
use crate::mechanism::{Mechanism, Params};
use crate::noise::GaussianNoise;
use crate::pld::{DEFAULT_DISCRETIZATION, Estimate, PldAccountant, poisson_gaussian_pld};
use crate::samples::Samples;

pub(crate) fn specs() -> Vec<Spec> {
    let mut all = vec![
        Spec {
            id: "dpsgd-per-group-clipping",
            summary: "DP-SGD with per-group clipping norms and noise (C_j, σ_j), groups accounted jointly",
            build: per_group_clipping,
        },
        Spec {
            id: "dpsgd-groups-composed-independently",
            summary: "per-group DP-SGD accounted as if each group were a separate mechanism (max over groups)",
            build: groups_composed_independently,
        },
        Spec {
            id: "dpsgd-user-level",
            summary: "user-level DP-SGD: a record is a user's examples, the user's summed gradient is clipped",
            build: user_level,
        },
        Spec {
            id: "dpsgd-user-level-example-clipping",
            summary: "user-level DP-SGD that clips each example but accounts a user as one clipped example",
            build: user_level_example_clipping,
        },
        Spec {
            id: "dpsgd-batch-size-released",
            summary: "DP-SGD releasing each Poisson batch size with Gaussian noise, accounted in the ledger",
            build: batch_size_released,
        },
        Spec {
            id: "dpsgd-batch-size-leak",
            summary: "DP-SGD releasing each Poisson batch size exactly alongside the model",
            build: batch_size_leak,
        },
        Spec {
            id: "dpsgd-private-clip-norm-accounted",
            summary: "DP-GD with the clip norm from an accounted DP quantile (Andrew et al. 2021)",
            build: private_clip_norm_accounted,
        },
        Spec {
            id: "dpsgd-private-clip-norm",
            summary: "DP-GD whose clip norm is the batch's median gradient norm, not accounted",
            build: private_clip_norm,
        },
    ];
    // The ledger's noise allocation (seed 000 §4) after per-group clipping's other entries.
    all.extend(allocation::specs());
    all
}

/// Relative margin within which a lower bound on the true δ is not taken as exceeding the claimed
/// δ (the numerical profiles are accurate to about that; no audit can resolve it).
const STATUS_TOLERANCE: f64 = 1e-6;

/// Largest number of step-size sequences enumerated for the exact profile of the released batch
/// sizes ((n₀ + 2)^T for the witness's n₀ records).
const MAX_SIZE_SEQUENCES: usize = 1 << 20;

/// What a variant does (and, for a buggy twin, its mistake).
#[derive(Clone, Debug, PartialEq)]
pub enum Variant {
    /// k groups of one coordinate each; group j is clipped to C_j and gets noise N(0, σ_j²).
    /// `independent`: the ledger records the group with the largest C_j/σ_j only (each group
    /// accounted as a separate mechanism on its own data, the max taken), instead of the joint
    /// query of multiplier (Σ_j (C_j/σ_j)²)^{−1/2}.
    PerGroup {
        /// C_j > 0.
        clips: Vec<f64>,
        /// σ_j > 0.
        sigmas: Vec<f64>,
        /// The bug: groups accounted as independent mechanisms.
        independent: bool,
        /// The noise multiplier the ledger records instead of the one the groups compose to
        /// (the allocator's twin: it records the target z its allocation misses); `None`: the
        /// groups' own (joint, or the largest group's when `independent`).
        ledger_z: Option<f64>,
    },
    /// A record is a user with m examples (record dimension m; a user with fewer examples has
    /// zero gradients in the unused slots). Correct: the sum of the user's gradients is clipped
    /// to C. `per_example`: each example is clipped to C and the clipped examples summed, while
    /// the ledger still assumes a user moves the sum by C.
    UserLevel {
        /// m ≥ 1.
        examples: usize,
        /// The bug: per-example clipping accounted as one clipped example per user.
        per_example: bool,
    },
    /// Each step also releases the batch size |B_t|: plus N(0, σ_B²) noise with σ_B = `size_noise`
    /// (the count is a Gaussian query of sensitivity 1 recorded in the ledger), or exactly
    /// (`None`: the bug, not in the ledger).
    BatchSize {
        /// σ_B > 0, or `None` for the exact size.
        size_noise: Option<f64>,
    },
    /// Full batch. The clip norm of step t is the (upper) median of the batch's gradient norms,
    /// floored at the public `floor`, and the noise is z·C_t; the ledger records a Gaussian sum
    /// of multiplier z as if C_t were a public constant.
    MedianClip {
        /// Public floor of the clip norm, in (0, 1].
        floor: f64,
    },
    /// Full batch. Adaptive clipping (Andrew et al. 2021, Algorithm 1): C₁ is public, and
    /// C_{t+1} = C_t·exp(−η_C·(b̃_t − γ)) with b̃_t = (#{i : |g_i| ≤ C_t} + N(0, σ_b²))/m̄; the
    /// noisy count is a Gaussian query of sensitivity 1 recorded in the ledger on the same
    /// sample as the gradient sum.
    AdaptiveClip {
        /// C₁ > 0.
        initial: f64,
        /// Target quantile γ ∈ (0, 1).
        quantile: f64,
        /// η_C > 0.
        rate: f64,
        /// σ_b > 0 (the count's noise multiplier).
        count_noise: f64,
        /// m̄ > 0, the public expected batch size.
        expected_batch: f64,
    },
}

/// A DP-SGD variant (see [`Variant`] and the module documentation).
#[derive(Clone, Debug)]
pub struct DpSgdVariant {
    id: &'static str,
    variant: Variant,
    /// Poisson sampling rate q ∈ (0, 1].
    q: f64,
    /// Steps T ≥ 1.
    steps: u64,
    /// Noise multiplier z of the gradient sum (noise z·C); unused by [`Variant::PerGroup`].
    z: f64,
    /// Clip norm C; unused by [`Variant::PerGroup`] and the clip-norm variants.
    clip: f64,
    /// δ of the claim.
    delta: f64,
    /// ε of the claim (from the ledger).
    epsilon: f64,
    /// The ledger's noise multiplier (several queries on one sample composed).
    accounted_z: f64,
    /// The ledger's accountant range, once computed (see [`Mechanism::accountant_range`]).
    accountant: std::sync::OnceLock<Option<crate::mechanism::AccountantRange>>,
}

fn invalid(id: &str, message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: id.to_string(),
        message,
    }
}

/// `x` rounded up to `digits` significant digits (never below `x`).
fn round_up_significant(x: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits - 1 - x.log10().floor() as i32);
    let r = (x * scale).ceil() / scale;
    if r < x { r.next_up() } else { r }
}

/// The ledger of `steps` steps of the Poisson-subsampled Gaussian at rate `q` and multiplier `z`
/// (add/remove).
pub fn ledger(q: f64, z: f64, steps: u64) -> Result<PldAccountant> {
    let mut acct = PldAccountant::new(Neighboring::AddRemove);
    acct.compose_poisson_gaussian(q, z, steps)?;
    Ok(acct)
}

/// The claimed ε of a ledger: its pessimistic ε at `delta` (an upper bound, rounded up by the
/// accountant), rounded up further to 9 significant digits.
pub fn ledger_epsilon(acct: &PldAccountant, delta: f64) -> Result<f64> {
    let eps = acct.pld(Estimate::Pessimistic)?.epsilon(delta)?;
    if !eps.is_finite() {
        return Err(invalid(
            "privacy-ledger",
            format!(
                "the PLD accountant gives epsilon = {eps} at delta = {delta:e}; allowed: finite"
            ),
        ));
    }
    Ok(round_up_significant(eps.max(1e-6), 9))
}

/// Hockey-stick divergence H_{e^ε}(P ‖ Q) of P = N(m₁, s₁²) and Q = N(m₂, s₂²), exactly: the
/// optimal event {ln p − ln q > ε} is where a quadratic a·x² + b·x + c is positive (an interval,
/// the complement of one, or a half-line), and its masses are normal CDFs.
pub fn gaussian_pair_hockey_stick(m1: f64, s1: f64, m2: f64, s2: f64, epsilon: f64) -> f64 {
    let a = 0.5 / (s2 * s2) - 0.5 / (s1 * s1);
    let b = m1 / (s1 * s1) - m2 / (s2 * s2);
    let c = (s2 / s1).ln() - 0.5 * m1 * m1 / (s1 * s1) + 0.5 * m2 * m2 / (s2 * s2) - epsilon;
    // Mass of (lo, hi) under N(m, s), with tails taken on the accurate side.
    let mass = |lo: f64, hi: f64, m: f64, s: f64| -> f64 {
        let (u, v) = ((lo - m) / s, (hi - m) / s);
        if u > 0.0 {
            std_normal_cdf(-u) - std_normal_cdf(-v)
        } else {
            std_normal_cdf(v) - std_normal_cdf(u)
        }
    };
    // The event as a union of disjoint intervals.
    let intervals: Vec<(f64, f64)> = if a.abs() < 1e-300 {
        if b > 0.0 {
            vec![(-c / b, f64::INFINITY)]
        } else if b < 0.0 {
            vec![(f64::NEG_INFINITY, -c / b)]
        } else if c > 0.0 {
            vec![(f64::NEG_INFINITY, f64::INFINITY)]
        } else {
            vec![]
        }
    } else {
        let disc = b * b - 4.0 * a * c;
        if disc <= 0.0 {
            if a > 0.0 {
                vec![(f64::NEG_INFINITY, f64::INFINITY)]
            } else {
                vec![]
            }
        } else {
            // Numerically stable roots.
            let sq = disc.sqrt();
            let qq = -0.5 * (b + b.signum() * sq);
            let (r1, r2) = if qq == 0.0 {
                (-sq / (2.0 * a), sq / (2.0 * a))
            } else {
                (qq / a, c / qq)
            };
            let (lo, hi) = (r1.min(r2), r1.max(r2));
            if a > 0.0 {
                vec![(f64::NEG_INFINITY, lo), (hi, f64::INFINITY)]
            } else {
                vec![(lo, hi)]
            }
        }
    };
    let p: f64 = intervals.iter().map(|&(l, h)| mass(l, h, m1, s1)).sum();
    let q: f64 = intervals.iter().map(|&(l, h)| mass(l, h, m2, s2)).sum();
    let scaled = if q > 0.0 {
        (epsilon + q.ln()).exp()
    } else {
        0.0
    };
    (p - scaled).clamp(0.0, 1.0)
}

/// The Bin(n, q) probabilities (not their logarithms), k = 0..=n.
fn binomial_pmf(n: usize, q: f64) -> Vec<f64> {
    let mut pmf = vec![0.0; n + 1];
    pmf[0] = 1.0;
    for i in 0..n {
        for k in (0..=i + 1).rev() {
            let stay = pmf[k] * (1.0 - q);
            let from = if k > 0 { pmf[k - 1] * q } else { 0.0 };
            pmf[k] = stay + from;
        }
    }
    pmf
}

/// Exact hockey-stick divergences (H(P′ ‖ P), H(P ‖ P′)) at ε of the `steps` released batch sizes
/// of Poisson sampling at rate `q` from a dataset of `n0` records (P) and of `n0 + 1` records
/// (P′): per step Bin(n₀, q) against Bin(n₀, q) ∗ Bernoulli(q), independent across steps. Every
/// sequence of sizes is enumerated.
///
/// # Errors
/// More than [`MAX_SIZE_SEQUENCES`] sequences.
pub fn batch_size_deltas(n0: usize, q: f64, steps: u64, epsilon: f64) -> Result<(f64, f64)> {
    let p = binomial_pmf(n0, q);
    let p_prime: Vec<f64> = (0..=n0 + 1)
        .map(|k| {
            let stay = if k <= n0 { p[k] * (1.0 - q) } else { 0.0 };
            let from = if k > 0 { p[k - 1] * q } else { 0.0 };
            stay + from
        })
        .collect();
    let base = n0 + 2;
    let count = u32::try_from(steps)
        .ok()
        .and_then(|t| base.checked_pow(t))
        .filter(|&c| c <= MAX_SIZE_SEQUENCES)
        .ok_or_else(|| {
            invalid(
                "dpsgd-batch-size-leak",
                format!(
                    "steps = {steps} with {n0} witness records gives more than \
                     {MAX_SIZE_SEQUENCES} size sequences to enumerate; allowed: (n0 + 2)^steps ≤ \
                     {MAX_SIZE_SEQUENCES}"
                ),
            )
        })?;
    let e = epsilon.exp();
    let (mut add, mut remove) = (0.0, 0.0);
    for mut code in 0..count {
        let (mut a, mut b) = (1.0, 1.0);
        for _ in 0..steps {
            let k = code % base;
            code /= base;
            a *= p_prime[k];
            b *= p.get(k).copied().unwrap_or(0.0);
        }
        add += (a - e * b).max(0.0);
        remove += (b - e * a).max(0.0);
    }
    Ok((add.min(1.0), remove.min(1.0)))
}

impl DpSgdVariant {
    /// Validates the settings and computes the claim from the ledger.
    ///
    /// # Errors
    /// q ∉ (0, 1], T = 0 or T > 10 000, z, C, σ_j, C_j, σ_B, σ_b, η_C or m̄ not finite and > 0,
    /// δ ∉ (0, 1), γ ∉ (0, 1), a clip floor ∉ (0, 1], m = 0, group lists empty or of different
    /// lengths, full-batch variants with q ≠ 1; accountant errors.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: &'static str,
        variant: Variant,
        q: f64,
        steps: u64,
        z: f64,
        clip: f64,
        delta: f64,
    ) -> Result<Self> {
        let pos = |v: f64| v.is_finite() && v > 0.0;
        if !(pos(q) && q <= 1.0) {
            return Err(invalid(
                id,
                format!("sampling_rate = {q}; allowed: 0 < sampling_rate ≤ 1"),
            ));
        }
        if steps == 0 || steps > 10_000 {
            return Err(invalid(id, format!("steps = {steps}; allowed: 1 to 10000")));
        }
        if !(delta > 0.0 && delta < 1.0) {
            return Err(invalid(
                id,
                format!("delta = {delta}; allowed: 0 < delta < 1"),
            ));
        }
        for (name, v) in [("noise_multiplier", z), ("clip", clip)] {
            if !pos(v) {
                return Err(invalid(
                    id,
                    format!("{name} = {v}; allowed: a finite number > 0"),
                ));
            }
        }
        let full_batch = matches!(
            variant,
            Variant::MedianClip { .. } | Variant::AdaptiveClip { .. }
        );
        if full_batch && q != 1.0 {
            return Err(invalid(
                id,
                format!("sampling_rate = {q}; allowed: 1 (this variant is full-batch DP-GD)"),
            ));
        }
        let accounted_z = match &variant {
            Variant::PerGroup {
                clips,
                sigmas,
                independent,
                ledger_z,
            } => per_group_z(id, clips, sigmas, *independent, *ledger_z)?,
            Variant::UserLevel { examples, .. } => {
                if *examples == 0 {
                    return Err(invalid(
                        id,
                        "examples = 0; allowed: examples ≥ 1".to_string(),
                    ));
                }
                z
            }
            Variant::BatchSize { size_noise } => match size_noise {
                None => z,
                Some(sb) if pos(*sb) => 1.0 / (z.powi(-2) + sb.powi(-2)).sqrt(),
                Some(sb) => {
                    return Err(invalid(
                        id,
                        format!("size_noise_multiplier = {sb}; allowed: a finite number > 0"),
                    ));
                }
            },
            Variant::MedianClip { floor } => {
                if !(pos(*floor) && *floor <= 1.0) {
                    return Err(invalid(
                        id,
                        format!("clip_floor = {floor}; allowed: 0 < clip_floor ≤ 1"),
                    ));
                }
                z
            }
            Variant::AdaptiveClip {
                initial,
                quantile,
                rate,
                count_noise,
                expected_batch,
            } => {
                for (name, v) in [
                    ("initial_clip", *initial),
                    ("clip_learning_rate", *rate),
                    ("count_noise_multiplier", *count_noise),
                    ("expected_batch", *expected_batch),
                ] {
                    if !pos(v) {
                        return Err(invalid(
                            id,
                            format!("{name} = {v}; allowed: a finite number > 0"),
                        ));
                    }
                }
                if !(*quantile > 0.0 && *quantile < 1.0) {
                    return Err(invalid(
                        id,
                        format!("target_quantile = {quantile}; allowed: 0 < target_quantile < 1"),
                    ));
                }
                1.0 / (z.powi(-2) + count_noise.powi(-2)).sqrt()
            }
        };
        let epsilon = ledger_epsilon(&ledger(q, accounted_z, steps)?, delta)?;
        Ok(Self {
            id,
            variant,
            q,
            steps,
            z,
            clip,
            delta,
            epsilon,
            accounted_z,
            accountant: std::sync::OnceLock::new(),
        })
    }

    /// Length of a record.
    fn record_dim(&self) -> usize {
        match &self.variant {
            Variant::UserLevel { examples, .. } => *examples,
            Variant::PerGroup { clips, .. } => clips.len(),
            _ => 1,
        }
    }

    /// Model dimension d.
    fn model_dim(&self) -> usize {
        match &self.variant {
            Variant::PerGroup { clips, .. } => clips.len(),
            _ => 1,
        }
    }

    /// Numbers released per step: the iterate, plus the (noisy) batch size.
    fn per_step(&self) -> usize {
        self.model_dim() + usize::from(matches!(self.variant, Variant::BatchSize { .. }))
    }

    /// For the sensitivity variants (groups, user level): the true per-step μ of the worst
    /// record, in units of the noise actually added (the whitened ℓ2 norm of its contribution).
    /// `None` for the other variants.
    pub fn true_step_mu(&self) -> Option<f64> {
        match &self.variant {
            Variant::PerGroup { clips, sigmas, .. } => Some(
                clips
                    .iter()
                    .zip(sigmas)
                    .map(|(c, s)| (c.min(1.0) / s).powi(2))
                    .sum::<f64>()
                    .sqrt(),
            ),
            Variant::UserLevel {
                examples,
                per_example,
            } => {
                let m = *examples as f64;
                let contribution = if *per_example {
                    m * self.clip.min(1.0)
                } else {
                    self.clip.min(m)
                };
                Some(contribution / (self.z * self.clip))
            }
            _ => None,
        }
    }

    /// A lower bound on the true δ at `epsilon` of the released transcript (exact on the
    /// witness, a worst pair, for the sensitivity variants with q = 1; the optimistic PLD for
    /// q < 1). `None` for the variants whose truth needs a witness.
    fn sensitivity_delta_lower(&self, epsilon: f64) -> Result<Option<f64>> {
        let Some(mu) = self.true_step_mu() else {
            return Ok(None);
        };
        if self.q >= 1.0 {
            return Ok(Some(gaussian_dp_delta(
                epsilon,
                (self.steps as f64).sqrt() * mu,
            )));
        }
        let pld = poisson_gaussian_pld(
            self.q,
            1.0 / mu,
            self.steps,
            Neighboring::AddRemove,
            Estimate::Optimistic,
            DEFAULT_DISCRETIZATION,
        )?;
        Ok(Some(pld.delta(epsilon)))
    }

    /// The clip norm of the median rule for a batch of gradients.
    fn median_clip(grads: &mut [f64], floor: f64) -> f64 {
        if grads.is_empty() {
            return floor;
        }
        grads.iter_mut().for_each(|g| *g = g.abs());
        grads.sort_by(f64::total_cmp);
        grads[grads.len() / 2].max(floor)
    }

    /// The first released iterate on `data` for the median-clip variant: (mean, sd) of the
    /// Gaussian θ₁ = −(Σ clip(g_i, C₁) + N(0, (z·C₁)²)).
    fn median_first_iterate(&self, data: &Dataset, floor: f64) -> (f64, f64) {
        let mut g: Vec<f64> = data.records().iter().copied().collect();
        let c = Self::median_clip(&mut g.clone(), floor);
        g.iter_mut().for_each(|v| *v = v.clamp(-c, c));
        (-g.iter().sum::<f64>(), self.z * c)
    }

    /// Ground truth for a buggy twin on `witness` (see the module documentation).
    fn status(&self, witness: &DatasetPair, bug: String) -> Result<Status> {
        let eps = self.epsilon;
        let (lower, how) = match &self.variant {
            Variant::PerGroup { .. } | Variant::UserLevel { .. } => {
                let mu = self.true_step_mu().unwrap_or(0.0);
                if mu <= 1.0 / self.accounted_z {
                    // The ledger's multiplier is at most the true one: the claim holds.
                    return Ok(Status::Correct);
                }
                let lower = self.sensitivity_delta_lower(eps)?.unwrap_or(0.0);
                let how = if self.q >= 1.0 {
                    format!(
                        "exactly {:.6}-GDP (√T·μ with T = {}, true per-step μ = {mu:.6} on the \
                         worst pair), delta from the exact Gaussian profile",
                        (self.steps as f64).sqrt() * mu,
                        self.steps
                    )
                } else {
                    format!(
                        "Poisson-subsampled Gaussian with q = {}, T = {}, true noise multiplier \
                         1/μ = {:.6}; delta from its optimistic PLD (a lower bound)",
                        self.q,
                        self.steps,
                        1.0 / mu
                    )
                };
                (lower, how)
            }
            Variant::BatchSize { size_noise: None } => {
                let n0 = witness.first().len();
                let (add, remove) = batch_size_deltas(n0, self.q, self.steps, eps)?;
                (
                    add.max(remove),
                    format!(
                        "a lower bound: the exact hockey-stick divergence of the released sizes \
                         alone on the witness (Bin({n0}, q) against Bin({n0}, q) + Bernoulli(q) \
                         per step, q = {}, T = {}, every sequence enumerated); adding the record \
                         gives δ ≥ q^(n0+1) = {:.4e} at every epsilon",
                        self.q,
                        self.steps,
                        self.q.powi(n0 as i32 + 1)
                    ),
                )
            }
            Variant::MedianClip { floor } => {
                if *floor >= 1.0 {
                    // Gradients lie in [−1, 1]: the clip norm is always 1, a public constant.
                    return Ok(Status::Correct);
                }
                let (m1, s1) = self.median_first_iterate(witness.first(), *floor);
                let (m2, s2) = self.median_first_iterate(witness.second(), *floor);
                let lower = gaussian_pair_hockey_stick(m1, s1, m2, s2, eps)
                    .max(gaussian_pair_hockey_stick(m2, s2, m1, s1, eps));
                (
                    lower,
                    format!(
                        "a lower bound: the exact hockey-stick divergence of the first released \
                         iterate on the witness, N({m1:.4}, {s1:.4}²) against N({m2:.4}, \
                         {s2:.4}²) (the median clip norm is {:.4} on one side and {:.4} on the \
                         other)",
                        s1 / self.z,
                        s2 / self.z
                    ),
                )
            }
            _ => return Ok(Status::Correct),
        };
        if lower <= self.delta * (1.0 + STATUS_TOLERANCE) {
            return Err(invalid(
                self.id,
                format!(
                    "with these parameters the lower bound {lower:.4e} on the true delta at the \
                     claimed epsilon = {eps:.6} does not exceed the claimed delta = {:e}, so the \
                     entry's status cannot be decided; allowed: settings where the mistake shows \
                     (or is harmless)",
                    self.delta
                ),
            ));
        }
        Ok(Status::Buggy {
            bug,
            true_guarantee: format!(
                "{how}; at the claimed epsilon = {eps:.6} its delta is at least {lower:.4e} \
                 (the claim allows {:e})",
                self.delta
            ),
        })
    }
}

impl Mechanism for DpSgdVariant {
    fn id(&self) -> &str {
        self.id
    }
    fn claim(&self) -> PrivacyClaim {
        PrivacyClaim::Approximate {
            epsilon: self.epsilon,
            delta: self.delta,
        }
    }
    fn claim_source(&self) -> String {
        format!(
            "PLD accountant (pessimistic; Koskela et al. 2020, Doroshenko et al. 2022) over the \
             privacy ledger [{} × (Poisson sampling q = {}; Gaussian sum z = {:.6})], add/remove: \
             epsilon = {:.6} at delta = {:e}",
            self.steps, self.q, self.accounted_z, self.epsilon, self.delta
        )
    }
    /// The ledger's PLD accountant at the claim's δ: its optimistic ε beside the claim (the
    /// pessimistic ε, rounded up), as for plain `dpsgd`; computed once.
    fn accountant_range(&self) -> Option<crate::mechanism::AccountantRange> {
        self.accountant
            .get_or_init(|| {
                let ledger = [
                    crate::accountant::LedgerEvent::Sampling {
                        probability: self.q,
                        repetitions: self.steps,
                    },
                    crate::accountant::LedgerEvent::GaussianSum {
                        noise_multiplier: self.accounted_z,
                    },
                ];
                crate::mechanism::AccountantRange::pld_of_ledger(
                    &ledger,
                    Neighboring::AddRemove,
                    self.delta,
                )
                .ok()
                .map(|r| crate::mechanism::AccountantRange {
                    // The claim is this accountant's pessimistic ε rounded up: the upper end.
                    optimistic: r.optimistic.min(self.epsilon),
                    pessimistic: self.epsilon,
                    ..r
                })
            })
            .clone()
    }
    fn neighboring(&self) -> Neighboring {
        Neighboring::AddRemove
    }
    fn domain(&self) -> RecordDomain {
        RecordDomain::real(-1.0, 1.0, self.record_dim())
    }
    fn output_dim(&self) -> usize {
        self.per_step() * self.steps as usize
    }
    fn sample(&self, data: &Dataset, n: usize, rng: &mut dyn Rng) -> Result<Samples> {
        let (rd, d) = (self.record_dim(), self.model_dim());
        if data.dim() != rd {
            return Err(MechanismError::InvalidDataset(format!(
                "records have dimension {}, {} takes dimension {rd}",
                data.dim(),
                self.id
            )));
        }
        let records: Vec<f64> = data.records().iter().copied().collect();
        let n_records = data.len();
        let std = GaussianNoise::new(1.0)?;
        let out_dim = self.output_dim();
        let mut flat = Vec::with_capacity(n * out_dim);
        let mut theta = vec![0.0; d];
        let mut sum = vec![0.0; d];
        let mut batch: Vec<usize> = Vec::with_capacity(n_records);
        let mut norms: Vec<f64> = Vec::with_capacity(n_records);
        for _ in 0..n {
            theta.fill(0.0);
            let mut clip_t = match &self.variant {
                Variant::AdaptiveClip { initial, .. } => *initial,
                _ => self.clip,
            };
            for _ in 0..self.steps {
                batch.clear();
                for i in 0..n_records {
                    if self.q >= 1.0 || rng.random::<f64>() < self.q {
                        batch.push(i);
                    }
                }
                sum.fill(0.0);
                let mut extra: Option<f64> = None;
                match &self.variant {
                    Variant::PerGroup { clips, sigmas, .. } => {
                        for &i in &batch {
                            for j in 0..d {
                                sum[j] += records[i * rd + j].clamp(-clips[j], clips[j]);
                            }
                        }
                        for j in 0..d {
                            sum[j] += sigmas[j] * std.sample(rng);
                        }
                    }
                    Variant::UserLevel {
                        examples,
                        per_example,
                    } => {
                        let c = self.clip;
                        for &i in &batch {
                            let user = &records[i * rd..i * rd + examples];
                            sum[0] += if *per_example {
                                user.iter().map(|g| g.clamp(-c, c)).sum::<f64>()
                            } else {
                                user.iter().sum::<f64>().clamp(-c, c)
                            };
                        }
                        sum[0] += self.z * c * std.sample(rng);
                    }
                    Variant::BatchSize { size_noise } => {
                        let c = self.clip;
                        for &i in &batch {
                            sum[0] += records[i].clamp(-c, c);
                        }
                        sum[0] += self.z * c * std.sample(rng);
                        let size = batch.len() as f64;
                        extra = Some(match size_noise {
                            Some(sb) => size + sb * std.sample(rng),
                            None => size,
                        });
                    }
                    Variant::MedianClip { floor } => {
                        norms.clear();
                        norms.extend(batch.iter().map(|&i| records[i]));
                        let c = Self::median_clip(&mut norms, *floor);
                        for &i in &batch {
                            sum[0] += records[i].clamp(-c, c);
                        }
                        sum[0] += self.z * c * std.sample(rng);
                    }
                    Variant::AdaptiveClip {
                        quantile,
                        rate,
                        count_noise,
                        expected_batch,
                        ..
                    } => {
                        let c = clip_t;
                        let mut below = 0.0;
                        for &i in &batch {
                            let g = records[i];
                            sum[0] += g.clamp(-c, c);
                            if g.abs() <= c {
                                below += 1.0;
                            }
                        }
                        sum[0] += self.z * c * std.sample(rng);
                        let b = (below + count_noise * std.sample(rng)) / expected_batch;
                        clip_t = c * (-rate * (b - quantile)).exp();
                    }
                }
                theta.iter_mut().zip(&sum).for_each(|(t, s)| *t -= s);
                flat.extend_from_slice(&theta);
                if let Some(e) = extra {
                    flat.push(e);
                }
            }
        }
        Samples::from_flat(out_dim, flat)
    }
}

// ---------------------------------------------------------------------------------------------
// Parameters and entries
// ---------------------------------------------------------------------------------------------

/// The analytic Gaussian σ for (ε = 1, δ = 1e-5, Δ = 1) (Balle & Wang 2018): ≈ 3.7306316.
fn default_noise_multiplier(id: &str) -> Result<f64> {
    analytic_gaussian_sigma(1.0, 1e-5, 1.0).ok_or_else(|| {
        invalid(
            id,
            "no analytic Gaussian calibration for (1, 1e-5)".to_string(),
        )
    })
}

/// An integer parameter in `[lo, hi]`.
fn integer(
    params: &mut Params,
    id: &str,
    name: &str,
    default: u64,
    lo: u64,
    hi: u64,
) -> Result<u64> {
    let v = params.take_in(id, name, default as f64, lo as f64, hi as f64)?;
    if v.fract() == 0.0 {
        Ok(v as u64)
    } else {
        Err(invalid(
            id,
            format!("--param {name} = {v}; allowed: an integer from {lo} to {hi}"),
        ))
    }
}

/// The common parameters: (sampling_rate, steps, noise_multiplier, clip, delta).
struct Common {
    q: f64,
    steps: u64,
    z: f64,
    clip: f64,
    delta: f64,
}

/// Reads `sampling_rate` (unless `full_batch`), `steps`, `noise_multiplier`, `clip` (if
/// `with_clip`) and `delta`.
fn common(
    params: &mut Params,
    id: &str,
    q_default: f64,
    steps_default: u64,
    full_batch: bool,
    with_clip: bool,
) -> Result<Common> {
    let q = if full_batch {
        1.0
    } else {
        params.take_in(id, "sampling_rate", q_default, 1e-6, 1.0)?
    };
    let steps = integer(params, id, "steps", steps_default, 1, 16)?;
    let z = params.take_in(
        id,
        "noise_multiplier",
        default_noise_multiplier(id)?,
        0.1,
        1e3,
    )?;
    let clip = if with_clip {
        params.take_in(id, "clip", 1.0, 1e-3, 1e3)?
    } else {
        1.0
    };
    let delta = params.take_in(id, "delta", 1e-5, 1e-12, 0.5)?;
    Ok(Common {
        q,
        steps,
        z,
        clip,
        delta,
    })
}

/// The witness of a sensitivity mistake: three records contributing nothing, and the same plus
/// the all-ones record (every group, every example at the clipping boundary for C ≤ 1).
fn ones_witness(record_dim: usize) -> Result<DatasetPair> {
    let zero = vec![0.0; record_dim];
    let base = Dataset::vectors(record_dim, &[zero.clone(), zero.clone(), zero])?;
    DatasetPair::new(
        base.clone(),
        base.with_record(&vec![1.0; record_dim])?,
        Neighboring::AddRemove,
    )
}

fn built(m: DpSgdVariant, witness: DatasetPair, bug: Option<String>) -> Result<Entry> {
    let status = match bug {
        Some(bug) => m.status(&witness, bug)?,
        None => Status::Correct,
    };
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness,
    })
}

/// The noise multiplier the ledger of a per-group variant records: the groups' joint one
/// ((Σ_j (C_j/σ_j)²)^(−1/2)), the largest group's when `independent`, or `ledger_z` when given
/// (the allocator twin's target); an error for mismatched or non-positive values.
fn per_group_z(
    id: &str,
    clips: &[f64],
    sigmas: &[f64],
    independent: bool,
    ledger_z: Option<f64>,
) -> Result<f64> {
    let pos = |v: f64| v.is_finite() && v > 0.0;
        if clips.is_empty() || clips.len() != sigmas.len() {
            return Err(invalid(
                id,
                format!(
                    "{} clip norms and {} noise scales; allowed: the same number ≥ 1",
                    clips.len(),
                    sigmas.len()
                ),
            ));
        }
        if let Some(v) = clips.iter().chain(sigmas).find(|v| !pos(**v)) {
            return Err(invalid(
                id,
                format!("a group clip norm or noise scale is {v}; allowed: finite and > 0"),
            ));
        }
        let ratios = clips.iter().zip(sigmas).map(|(c, s)| c / s);
        let mu = if independent {
            ratios.fold(0.0, f64::max)
        } else {
            ratios.map(|r| r * r).sum::<f64>().sqrt()
        };
        match ledger_z {
            Some(z) if pos(z) => Ok(z),
            Some(z) => Err(invalid(
                id,
                format!("ledger noise multiplier {z}; allowed: finite and > 0"),
            )),
            None => Ok(1.0 / mu),
        }
}

/// Per-group parameters: `groups` k (1 to 8, default 4), `clip_j` (default 1) and `noise_j`
/// (default the analytic σ for (1, 1e-5)) for j = 1..k, `sampling_rate` (1), `steps` (1),
/// `delta` (1e-5).
fn per_group(params: &mut Params, id: &'static str, independent: bool) -> Result<Entry> {
    let q = params.take_in(id, "sampling_rate", 1.0, 1e-6, 1.0)?;
    let steps = integer(params, id, "steps", 1, 1, 16)?;
    let delta = params.take_in(id, "delta", 1e-5, 1e-12, 0.5)?;
    let k = integer(params, id, "groups", 4, 1, 8)? as usize;
    let sigma = default_noise_multiplier(id)?;
    let mut clips = Vec::with_capacity(k);
    let mut sigmas = Vec::with_capacity(k);
    for j in 1..=k {
        clips.push(params.take_in(id, &format!("clip_{j}"), 1.0, 1e-3, 1e3)?);
        sigmas.push(params.take_in(id, &format!("noise_{j}"), sigma, 1e-2, 1e4)?);
    }
    let variant = Variant::PerGroup {
        clips,
        sigmas,
        independent,
        ledger_z: None,
    };
    let m = DpSgdVariant::new(id, variant, q, steps, 1.0, 1.0, delta)?;
    let witness = ones_witness(k)?;
    let bug = independent.then(|| {
        format!(
            "each of the {k} groups is accounted as a separate mechanism on its own data and the \
             largest per-group C_j/σ_j is claimed (noise multiplier {:.6}), but one example \
             contributes to every group of the same step",
            m.accounted_z
        )
    });
    built(m, witness, bug)
}

/// `dpsgd-per-group-clipping`: see [`per_group`] for the parameters.
fn per_group_clipping(params: &mut Params) -> Result<Entry> {
    per_group(params, "dpsgd-per-group-clipping", false)
}

/// `dpsgd-groups-composed-independently`: see [`per_group`] for the parameters.
fn groups_composed_independently(params: &mut Params) -> Result<Entry> {
    per_group(params, "dpsgd-groups-composed-independently", true)
}

/// User-level parameters: `examples` m (1 to 16; default 2), the common ones (`sampling_rate` 1,
/// `steps` 1, `noise_multiplier` analytic σ for (1, 1e-5), `clip` 1, `delta` 1e-5).
fn user(params: &mut Params, id: &'static str, per_example: bool) -> Result<Entry> {
    let c = common(params, id, 1.0, 1, false, true)?;
    let m = integer(params, id, "examples", 2, 1, 16)? as usize;
    let variant = Variant::UserLevel {
        examples: m,
        per_example,
    };
    let mech = DpSgdVariant::new(id, variant, c.q, c.steps, c.z, c.clip, c.delta)?;
    let witness = ones_witness(m)?;
    let bug = per_example.then(|| {
        format!(
            "each of a user's up to {m} examples is clipped to C = {} and the clipped examples \
             summed, but the ledger assumes a user moves the sum by C (the user's sum moves it by \
             up to m·min(C, 1))",
            c.clip
        )
    });
    built(mech, witness, bug)
}

/// `dpsgd-user-level`: see [`user`].
fn user_level(params: &mut Params) -> Result<Entry> {
    user(params, "dpsgd-user-level", false)
}

/// `dpsgd-user-level-example-clipping`: see [`user`].
fn user_level_example_clipping(params: &mut Params) -> Result<Entry> {
    user(params, "dpsgd-user-level-example-clipping", true)
}

/// The witness of the batch-size and clip-norm entries with zero records: `base` against `base`
/// plus `added`.
fn scalar_witness(base: &[f64], added: f64) -> Result<DatasetPair> {
    let d = Dataset::scalars(base.to_vec())?;
    DatasetPair::new(d.clone(), d.with_record(&[added])?, Neighboring::AddRemove)
}

/// `dpsgd-batch-size-released`: the common parameters (`sampling_rate` 0.5, `steps` 1) and
/// `size_noise_multiplier` σ_B (default 2·z).
fn batch_size_released(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-batch-size-released";
    let c = common(params, id, 0.5, 1, false, true)?;
    let sb = params.take_in(id, "size_noise_multiplier", 2.0 * c.z, 1e-2, 1e4)?;
    let variant = Variant::BatchSize {
        size_noise: Some(sb),
    };
    let m = DpSgdVariant::new(id, variant, c.q, c.steps, c.z, c.clip, c.delta)?;
    built(m, scalar_witness(&[0.0; 3], 1.0)?, None)
}

/// `dpsgd-batch-size-leak`: the common parameters (`sampling_rate` 0.5, `steps` 1).
fn batch_size_leak(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-batch-size-leak";
    let c = common(params, id, 0.5, 1, false, true)?;
    let variant = Variant::BatchSize { size_noise: None };
    let m = DpSgdVariant::new(id, variant, c.q, c.steps, c.z, c.clip, c.delta)?;
    let bug = "the size |B_t| of every Poisson batch is released exactly alongside the model, and \
               the ledger accounts for the noisy gradient sum only"
        .to_string();
    built(m, scalar_witness(&[0.0; 3], 1.0)?, Some(bug))
}

/// The witness of the clip-norm entries: {0, 0, 1, 1} against {0, 0, 0, 1, 1}; the batch's
/// (upper) median gradient norm drops from 1 to 0 (so to the floor).
fn clip_witness() -> Result<DatasetPair> {
    scalar_witness(&[0.0, 0.0, 1.0, 1.0], 0.0)
}

/// `dpsgd-private-clip-norm-accounted`: full batch; `steps` (2), `noise_multiplier`, `delta`,
/// `initial_clip` (1), `target_quantile` (0.5), `clip_learning_rate` (0.2),
/// `count_noise_multiplier` σ_b (default z), `expected_batch` (4).
fn private_clip_norm_accounted(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-private-clip-norm-accounted";
    let c = common(params, id, 1.0, 2, true, false)?;
    let initial = params.take_in(id, "initial_clip", 1.0, 1e-3, 1e3)?;
    let quantile = params.take_in(id, "target_quantile", 0.5, 0.01, 0.99)?;
    let rate = params.take_in(id, "clip_learning_rate", 0.2, 1e-3, 10.0)?;
    let count_noise = params.take_in(id, "count_noise_multiplier", c.z, 1e-2, 1e4)?;
    let expected_batch = params.take_in(id, "expected_batch", 4.0, 1.0, 1e6)?;
    let variant = Variant::AdaptiveClip {
        initial,
        quantile,
        rate,
        count_noise,
        expected_batch,
    };
    let m = DpSgdVariant::new(id, variant, 1.0, c.steps, c.z, initial, c.delta)?;
    built(m, clip_witness()?, None)
}

/// `dpsgd-private-clip-norm`: full batch; `steps` (1), `noise_multiplier`, `delta`, `clip_floor`
/// (0.1; 1 makes the clip norm constant and the entry correct).
fn private_clip_norm(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-private-clip-norm";
    let c = common(params, id, 1.0, 1, true, false)?;
    let floor = params.take_in(id, "clip_floor", 0.1, 1e-3, 1.0)?;
    let m = DpSgdVariant::new(
        id,
        Variant::MedianClip { floor },
        1.0,
        c.steps,
        c.z,
        1.0,
        c.delta,
    )?;
    let bug = format!(
        "the clip norm of every step is the batch's median gradient norm (floored at {floor}), \
         computed from the private data and not accounted; the ledger treats it as a public \
         constant"
    );
    built(m, clip_witness()?, Some(bug))
}

mod allocation;
#[cfg(test)]
mod tests;
