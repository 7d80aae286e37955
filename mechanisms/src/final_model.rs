//! The built-in DP-SGD trainer ([`crate::canary_trainer`]) seen from its final model only: one
//! release = one training run's score of a target record, for auditing over many runs.
//!
//! # What is released
//! Each release trains the trainer once with [`crate::canary_trainer::train_final`] from a
//! fixed initial model θ₀ on the fixed rest of the data `data`, plus the dataset passed to
//! [`Mechanism::sample`] (empty, or the one target record), and releases the **signed margin**
//! of the target record (x_T, y_T) under the final model θ_T:
//!
//! s = (2·y_T − 1) · logit_{θ_T}(x_T)
//!
//! (for y_T = 1 this is the logit, for y_T = 0 its negation; higher = "the model fits the
//! target", as a loss-based membership score, Yeom et al. 2018; the margin is a strictly
//! decreasing function of the logistic loss ℓ = ln(1 + e^{−s}), so both define the same
//! threshold events, and the margin has no floor where ln σ underflows).
//!
//! # The claim and why it holds for this release
//! The pair is (D, D ∪ {target}) on top of `data`: add/remove neighbours. The trainer's ledger
//! claim ([`crate::canary_trainer::TrainerConfig::claim`]) is stated for add/remove of one
//! record whatever its value and for the whole sequence of iterates θ_1, …, θ_T whatever θ₀
//! (each step's noisy clipped sum is the Gaussian mechanism with sensitivity C given the past;
//! adaptive composition, Dong, Roth & Su 2022, Cor. 3.3 for q = 1, the PLD accountant for
//! q < 1). θ_T is a function of the iterates and s a function of θ_T and of the public target,
//! so by post-processing s satisfies the same claim, for every θ₀ and every target the auditor
//! fixes **before** the releases are drawn (Annamalai & De Cristofaro 2024). At q = 1 the claim
//! is exactly μ-GDP with μ = √T/z; it is stated as [`PrivacyClaim::GaussianDp`]. At q < 1 it is
//! the PLD accountant's (ε, δ) at the trainer's δ ([`PrivacyClaim::Approximate`]).
//!
//! When is it tight? With a Dirac target x_T = a·e_k on an input k that no real record touches
//! and a logistic regression, θ_T[k] moves only by the target's own clipped gradient and the
//! noise: s = a·θ_T[k] = a·(θ₀[k] + Σ_t η/(qn)·(g_t + z·C·N_t)) with g_t = min(C, a·(1 −
//! σ(a·θ_{t−1}[k]))) when the target is in (0 when out). When a·(1 − σ(a·θ_t[k])) ≥ C at every
//! step (saturation: a ≥ 2C at θ₀[k] = 0 up to the drift, or θ₀[k] pushed negative), the two
//! sides are N(m, v) and N(m + a·T·η·C/(qn), v) with √v = a·√T·η·z·C/(qn): exactly the
//! √T/z shift the claim allows (q = 1). With a = 1 at θ₀ = 0 the gradient is only C/2 and the
//! shift is μ/2 (the one-run black-box canaries' situation).

use std::sync::Arc;

use rand::Rng;

use crate::canary_trainer::{
    InputRecord, LedgerClaim, TrainerConfig, TrainingData, logit, train_final,
};
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::mechanism::Mechanism;
use crate::{PrivacyClaim, Samples};

/// Id used in reports and error messages.
pub const ID: &str = "dpsgd-final-model-score";

/// Releases per call of [`Mechanism::sample`] the runner is asked to use: small, so that a few
/// thousand training runs still spread over the threads (each run is a whole training).
pub const RUNS_PER_CALL: usize = 64;

/// The target record: sparse x over the model's d = features + `extra_inputs` inputs, label y.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Target {
    /// x as (input index, value) pairs.
    pub x: Vec<(usize, f64)>,
    /// y ∈ {0, 1}.
    pub y: f64,
    /// Inputs beyond the real features (a Dirac target's own input).
    pub extra_inputs: usize,
}

impl Target {
    /// The record as one dense row of the dataset: x over the d inputs, then y.
    pub fn row(&self, features: usize) -> Vec<f64> {
        let mut row = vec![0.0; features + self.extra_inputs + 1];
        for &(k, v) in &self.x {
            row[k] = v;
        }
        row[features + self.extra_inputs] = self.y;
        row
    }
}

/// One training run per release, released as the target's signed margin under θ_T (see the
/// module documentation).
#[derive(Clone, Debug)]
pub struct FinalModelScore {
    config: TrainerConfig,
    data: Arc<TrainingData>,
    theta0: Vec<f64>,
    target: Target,
    claim: LedgerClaim,
}

impl FinalModelScore {
    /// The mechanism for `config` on `data` from `theta0` with `target`.
    ///
    /// # Errors
    /// `theta0` is not of [`TrainerConfig::parameters`]`(target.extra_inputs)` finite values,
    /// the target's label is not 0 or 1 or an index is out of range; the accountant.
    pub fn new(
        config: TrainerConfig,
        data: Arc<TrainingData>,
        theta0: Vec<f64>,
        target: Target,
    ) -> Result<Self> {
        logit(&config, target.extra_inputs, &theta0, &target.x)?;
        if target.y != 0.0 && target.y != 1.0 {
            return Err(invalid(format!(
                "target label {}; allowed: 0 or 1",
                target.y
            )));
        }
        let claim = config.claim()?;
        Ok(Self {
            config,
            data,
            theta0,
            target,
            claim,
        })
    }

    /// The neighbouring pair (D, D ∪ {target}): the empty dataset and the target alone (the
    /// rest of the data is fixed inside the mechanism).
    ///
    /// # Errors
    /// None in practice (the row has the domain's length).
    pub fn pair(&self) -> Result<DatasetPair> {
        let row = self.target.row(self.config.features);
        let empty = Dataset::empty(row.len())?;
        let with = empty.with_record(&row)?;
        DatasetPair::new(empty, with, Neighboring::AddRemove)
    }

    /// The ledger's claim in full (ε at δ, μ at q = 1, source).
    pub fn ledger_claim(&self) -> &LedgerClaim {
        &self.claim
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The signed margin of the target under `theta`.
    ///
    /// # Errors
    /// `theta` has the wrong length.
    pub fn score(&self, theta: &[f64]) -> Result<f64> {
        let z = logit(
            &self.config,
            self.target.extra_inputs,
            theta,
            &self.target.x,
        )?;
        Ok((2.0 * self.target.y - 1.0) * z)
    }

    /// The extra records a dataset of the pair stands for (none, or the record it holds).
    fn extra_of(&self, dataset: &Dataset) -> Result<Vec<InputRecord>> {
        let d = self.config.features + self.target.extra_inputs;
        let mut out = Vec::with_capacity(dataset.len());
        for row in dataset.iter() {
            if row.len() != d + 1 {
                return Err(invalid(format!(
                    "a record of length {}; allowed: {} (the {d} inputs, then the label)",
                    row.len(),
                    d + 1
                )));
            }
            let x: Vec<(usize, f64)> = row
                .iter()
                .take(d)
                .copied()
                .enumerate()
                .filter(|(_, v)| *v != 0.0)
                .collect();
            out.push((x, row[d]));
        }
        Ok(out)
    }
}

/// The last-iterate heuristic for the trainer's ledger (q, z, T) at its δ: the ε of the final
/// model of DP-SGD **if the losses were linear** (Steinke et al. 2025, "The Last Iterate
/// Advantage", arXiv:2410.06186): P = Σ_k Bin(T, q)(k)·N(k, z²T) against Q = N(0, z²T)
/// ([`crate::catalogue::final_model_epsilon`] at μ_step = 1/z). A reference for how far a
/// final-model audit could go, **not a bound** (the paper has counterexamples with non-linear
/// losses); never used to decide. At q = 1 it equals the ledger's claim.
pub fn last_iterate_heuristic(config: &TrainerConfig) -> f64 {
    let q = config.sampling_rate / config.sampling_rate_ratio;
    crate::catalogue::final_model_epsilon(
        q,
        1.0 / config.noise_multiplier,
        config.steps,
        config.delta,
    )
}

fn invalid(message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: ID.into(),
        message,
    }
}

impl Mechanism for FinalModelScore {
    fn id(&self) -> &str {
        ID
    }

    fn claim(&self) -> PrivacyClaim {
        match self.claim.mu {
            Some(mu) => PrivacyClaim::GaussianDp { mu },
            None => PrivacyClaim::Approximate {
                epsilon: self.claim.epsilon,
                delta: self.claim.delta,
            },
        }
    }

    fn claim_source(&self) -> String {
        self.claim.source.clone()
    }

    fn neighboring(&self) -> Neighboring {
        Neighboring::AddRemove
    }

    /// Records of the d inputs and the label; the bounds cover the target (DP-SGD's claim
    /// holds for any record: clipping bounds every example's gradient).
    fn domain(&self) -> RecordDomain {
        let big = self
            .target
            .x
            .iter()
            .map(|(_, v)| v.abs())
            .fold(1.0_f64, f64::max);
        RecordDomain::real(
            -big,
            big,
            self.config.features + self.target.extra_inputs + 1,
        )
        .with_sizes(0, 1)
    }

    fn output_dim(&self) -> usize {
        1
    }

    fn sample(&self, dataset: &Dataset, n: usize, rng: &mut dyn Rng) -> Result<Samples> {
        let extra = self.extra_of(dataset)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let theta = train_final(
                &self.config,
                &self.data,
                self.target.extra_inputs,
                &extra,
                &self.theta0,
                rng,
            )?;
            out.push(self.score(&theta)?);
        }
        Ok(Samples::from_column(out))
    }

    fn batch_size(&self) -> Option<usize> {
        Some(RUNS_PER_CALL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanism::Params;
    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    /// A saturated Dirac target on a logistic regression: the score is exactly Gaussian, the
    /// two sides N(0, v) and N(a·T·η·C/n, v) with √v = a·√T·η·z·C/n (module documentation);
    /// checked on 400 runs per side (means to 4 standard errors).
    #[test]
    fn dirac_target_shift_is_the_claim() -> Result<()> {
        let config = TrainerConfig::from_params(
            Params::new()
                .set("records", 100.0)
                .set("noise_multiplier", 2.5),
        )?;
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let data = Arc::new(TrainingData::synthetic(100, 8, &mut rng));
        let a = 4.0;
        let target = Target {
            x: vec![(8, a)],
            y: 1.0,
            extra_inputs: 1,
        };
        let m = FinalModelScore::new(config, data, vec![0.0; 9], target)?;
        assert_eq!(m.claim(), PrivacyClaim::GaussianDp { mu: 2.0 });
        let pair = m.pair()?;
        assert_eq!((pair.first().len(), pair.second().len()), (0, 1));
        m.domain().check(pair.second())?;
        let n = 400;
        let out = m.sample(pair.first(), n, &mut rng)?;
        let inn = m.sample(pair.second(), n, &mut rng)?;
        let mean = |s: &Samples| s.column(0).sum() / n as f64;
        let (eta_n, sd) = (0.5 / 100.0, 4.0 * 5.0 * 0.5 * 2.5 / 100.0);
        let shift = a * 25.0 * eta_n;
        let se = sd / (n as f64).sqrt();
        assert!(mean(&out).abs() < 4.0 * se, "{} vs 0", mean(&out));
        assert!(
            (mean(&inn) - shift).abs() < 4.0 * se,
            "{} vs {shift}",
            mean(&inn)
        );
        // shift / sd = √T/z = 2: the claim's μ.
        assert!((shift / sd - 2.0).abs() < 1e-12);
        Ok(())
    }

    /// At q = 1 the heuristic equals the claim (both the Gaussian profile at μ = √T/z); at
    /// q < 1 it is below the PLD claim.
    #[test]
    fn last_iterate_heuristic_at_and_below_the_claim() -> Result<()> {
        let c = TrainerConfig::from_params(Params::new())?;
        let h = last_iterate_heuristic(&c);
        assert!(
            (h - c.claim()?.epsilon).abs() < 1e-3,
            "{h} vs {}",
            c.claim()?.epsilon
        );
        let s = TrainerConfig::from_params(
            Params::new()
                .set("sampling_rate", 0.1)
                .set("noise_multiplier", 1.0)
                .set("steps", 100.0),
        )?;
        assert!(last_iterate_heuristic(&s) < s.claim()?.epsilon);
        Ok(())
    }

    #[test]
    fn bad_targets_are_refused() -> Result<()> {
        let config = TrainerConfig::from_params(Params::new().set("records", 20.0))?;
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let data = Arc::new(TrainingData::synthetic(20, 8, &mut rng));
        let t = |y: f64, k: usize| Target {
            x: vec![(k, 1.0)],
            y,
            extra_inputs: 1,
        };
        assert!(
            FinalModelScore::new(config.clone(), data.clone(), vec![0.0; 9], t(0.5, 8)).is_err()
        );
        assert!(
            FinalModelScore::new(config.clone(), data.clone(), vec![0.0; 9], t(1.0, 9)).is_err()
        );
        assert!(
            FinalModelScore::new(config.clone(), data.clone(), vec![0.0; 8], t(1.0, 8)).is_err()
        );
        let q = TrainerConfig::from_params(
            Params::new().set("records", 20.0).set("sampling_rate", 0.5),
        )?;
        let m = FinalModelScore::new(q, data, vec![0.0; 9], t(1.0, 8))?;
        assert!(matches!(m.claim(), PrivacyClaim::Approximate { .. }));
        Ok(())
    }
}
