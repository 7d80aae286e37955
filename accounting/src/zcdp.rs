//! The zCDP accountant: a full-batch Gaussian sum of noise multiplier z is ρ = 1/(2z²)-zCDP,
//! ρ adds up under composition, and ρ-zCDP is converted to (ε, δ) through RDP at the best order
//! (Bun & Steinke 2016; [`crate::rdp::zcdp_to_epsilon`]).

use crate::accountant::{ADD_REMOVE, DeltaRange, EpsilonRange, PrivacyAccountant, Scope};
use crate::error::Result;
use crate::ledger::{FullBatchBlocks, LedgerEvent, SamplingPolicy};
use crate::rdp::{gaussian_zcdp_rho, zcdp_to_delta, zcdp_to_epsilon};

const NAME: &str = "zcdp";

/// Full-batch Gaussian sums (sampling probability 1) under add/remove, composed in zCDP:
/// ρ = Σᵢ Tᵢ·Σⱼ 1/(2zᵢⱼ²). Its ε is an upper bound (rounded up), its parameter `rho`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZcdpAccountant {
    ledger: FullBatchBlocks,
}

impl ZcdpAccountant {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// ρ of the ledger: each block's ρ (its sums' ρ added up) times its steps, added up.
    pub fn rho(&self) -> f64 {
        self.ledger
            .blocks
            .iter()
            .map(|(steps, sums)| {
                sums.iter().map(|z| gaussian_zcdp_rho(*z)).sum::<f64>() * *steps as f64
            })
            .sum()
    }
}

impl PrivacyAccountant for ZcdpAccountant {
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
        let rho = self.rho();
        Ok(EpsilonRange {
            lower: None,
            upper: zcdp_to_epsilon(rho, delta)?,
            parameter: Some(("rho", rho)),
        })
    }

    fn delta(&self, epsilon: f64) -> Result<DeltaRange> {
        Ok(DeltaRange {
            lower: None,
            upper: zcdp_to_delta(self.rho(), epsilon),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rho_of_one_block_is_steps_over_two_z_squared() {
        let mut a = ZcdpAccountant::new();
        a.compose_ledger(&[
            (
                LedgerEvent::Sampling {
                    probability: 1.0,
                    repetitions: 10,
                },
                SamplingPolicy::Poisson,
            ),
            (
                LedgerEvent::GaussianSum {
                    noise_multiplier: 4.0,
                },
                SamplingPolicy::Poisson,
            ),
        ])
        .unwrap();
        assert_eq!(a.rho(), gaussian_zcdp_rho(4.0) * 10.0);
        let e = a.epsilon(1e-5).unwrap();
        assert_eq!(e.upper, zcdp_to_epsilon(a.rho(), 1e-5).unwrap());
        assert!(a.delta(e.upper).unwrap().upper <= 1e-5 * 1.01);
    }
}
