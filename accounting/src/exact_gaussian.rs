//! The exact Gaussian accountant: full-batch Gaussian steps compose to exactly μ-GDP
//! (Dong, Roth & Su 2022), whose (ε, δ) curve is exact ([`crate::rdp::gaussian_exact_epsilon`]).

use crate::accountant::{ADD_REMOVE, DeltaRange, EpsilonRange, PrivacyAccountant, Scope};
use crate::error::Result;
use crate::ledger::{FullBatchBlocks, LedgerEvent, SamplingPolicy};
use crate::math::gaussian_dp_delta_upper;
use crate::rdp::gaussian_exact_epsilon;

const NAME: &str = "exact-gaussian";

/// Full-batch Gaussian sums (sampling probability 1) under add/remove: T steps of noise
/// multiplier z are μ-GDP with μ = √T/z, and blocks compose as μ² = Σ Tᵢ·Σⱼ zᵢⱼ⁻² (Dong, Roth &
/// Su 2022, Corollary 3.3). Its ε is exact (rounded up), its parameter `mu`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ExactGaussianAccountant {
    ledger: FullBatchBlocks,
}

impl ExactGaussianAccountant {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// μ of the ledger, and (z, T) when it is one block of one sum (whose ε is then computed
    /// from z and T as [`gaussian_exact_epsilon`] does).
    fn mu(&self) -> (f64, Option<(f64, u64)>) {
        if let Some((z, steps)) = self.ledger.single() {
            return ((steps as f64).sqrt() / z, Some((z, steps)));
        }
        let mu2: f64 = self
            .ledger
            .blocks
            .iter()
            .map(|(steps, sums)| *steps as f64 * sums.iter().map(|z| z.powi(-2)).sum::<f64>())
            .sum();
        (mu2.sqrt(), None)
    }
}

impl PrivacyAccountant for ExactGaussianAccountant {
    fn name(&self) -> &'static str {
        NAME
    }

    fn scope(&self) -> Scope {
        Scope {
            relations: ADD_REMOVE,
            full_batch_only: true,
        }
    }

    fn compose(&mut self, event: &LedgerEvent, _policy: SamplingPolicy) -> Result<()> {
        // At probability 1 every policy draws the whole dataset.
        self.ledger.compose(NAME, event)
    }

    fn epsilon(&self, delta: f64) -> Result<EpsilonRange> {
        let (mu, single) = self.mu();
        let upper = match single {
            Some((z, steps)) => gaussian_exact_epsilon(z, steps, delta)?,
            None if mu == 0.0 => 0.0,
            None => gaussian_exact_epsilon(1.0 / mu, 1, delta)?,
        };
        Ok(EpsilonRange {
            lower: None,
            upper,
            parameter: Some(("mu", mu)),
        })
    }

    fn delta(&self, epsilon: f64) -> Result<DeltaRange> {
        let (mu, _) = self.mu();
        Ok(DeltaRange {
            lower: None,
            upper: if mu == 0.0 {
                0.0
            } else {
                gaussian_dp_delta_upper(epsilon, mu)
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_block_is_the_exact_curve_and_blocks_compose_as_mu_squared() {
        let mut a = ExactGaussianAccountant::new();
        a.compose(
            &LedgerEvent::Sampling {
                probability: 1.0,
                repetitions: 4,
            },
            SamplingPolicy::Poisson,
        )
        .unwrap();
        a.compose(
            &LedgerEvent::GaussianSum {
                noise_multiplier: 8.0,
            },
            SamplingPolicy::Poisson,
        )
        .unwrap();
        let e = a.epsilon(1e-5).unwrap();
        assert_eq!(e.upper, gaussian_exact_epsilon(8.0, 4, 1e-5).unwrap());
        assert_eq!(e.parameter, Some(("mu", 0.25)));
        assert!(a.delta(e.upper).unwrap().upper <= 1e-5 * (1.0 + 1e-6));
        // Two blocks of one step at z = 8√2 each: μ² = 2/128 = 1/64, the same μ as one at z = 8.
        let mut b = ExactGaussianAccountant::new();
        for _ in 0..2 {
            b.compose(
                &LedgerEvent::Sampling {
                    probability: 1.0,
                    repetitions: 1,
                },
                SamplingPolicy::Poisson,
            )
            .unwrap();
            b.compose(
                &LedgerEvent::GaussianSum {
                    noise_multiplier: 8.0 * 2f64.sqrt(),
                },
                SamplingPolicy::Poisson,
            )
            .unwrap();
        }
        let (mu, _) = b.mu();
        assert!((mu - 0.125).abs() < 1e-12, "{mu}");
        let e = b.compose(
            &LedgerEvent::Sampling {
                probability: 0.5,
                repetitions: 1,
            },
            SamplingPolicy::Poisson,
        );
        let m = e.unwrap_err().to_string();
        assert!(m.contains("q = 0.5; allowed: q = 1"), "{m}");
    }
}
