//! Correct mechanisms: textbook constructions that keep their claims.

use rand::Rng;

use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::Result;
use crate::mechanism::{Mechanism, Params};
use crate::noise::LaplaceNoise;
use crate::samples::Samples;

pub(crate) fn specs() -> Vec<Spec> {
    vec![Spec {
        id: "laplace-sum",
        build: laplace_sum,
    }]
}

/// Reads the common ε parameter (default 1).
pub(crate) fn epsilon_param(params: &mut Params, id: &str) -> Result<f64> {
    params.take_in(id, "epsilon", 1.0, 1e-6, 100.0)
}

/// Sum of records in `[0, R]` plus Laplace noise of scale R/ε.
///
/// # Claim
/// ε-DP under add/remove: the sum has ℓ1-sensitivity R (Dwork, McSherry, Nissim & Smith 2006,
/// Theorem 1; Dwork & Roth 2014, Theorem 3.6).
///
/// # Output
/// One real: the noisy sum.
#[derive(Debug, Clone)]
pub struct LaplaceSum {
    /// Privacy parameter ε.
    pub epsilon: f64,
    /// Upper end R of the record range [0, R].
    pub range: f64,
}

impl Mechanism for LaplaceSum {
    fn id(&self) -> &str {
        "laplace-sum"
    }
    fn claim(&self) -> PrivacyClaim {
        PrivacyClaim::Pure {
            epsilon: self.epsilon,
        }
    }
    fn neighboring(&self) -> Neighboring {
        Neighboring::AddRemove
    }
    fn domain(&self) -> RecordDomain {
        RecordDomain::real(0.0, self.range, 1)
    }
    fn output_dim(&self) -> usize {
        1
    }
    fn sample(&self, data: &Dataset, n: usize, rng: &mut dyn Rng) -> Result<Samples> {
        let noise = LaplaceNoise::new(self.range / self.epsilon)?;
        let sum: f64 = data.column(0).iter().sum();
        Ok(Samples::from_column(
            (0..n).map(|_| sum + noise.sample(rng)).collect(),
        ))
    }
}

fn laplace_sum(params: &mut Params) -> Result<Entry> {
    let id = "laplace-sum";
    let epsilon = epsilon_param(params, id)?;
    let range = params.take_in(id, "range", 1.0, 1e-6, 1e6)?;
    let m = LaplaceSum { epsilon, range };
    // Tightest pair: adding a record at the top of the range.
    let d = Dataset::scalars(vec![0.5 * range; 5])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[range])?, Neighboring::AddRemove)?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The noisy sum's mean is the true sum: z-test on 1e5 draws, |z| < 5.3
    /// (false-failure rate ≈ 1.2e-7, CLT).
    #[test]
    fn laplace_sum_is_centered_on_the_sum() {
        let e = laplace_sum(&mut Params::new()).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let n = 100_000;
        let s = e.mechanism.sample(e.witness.second(), n, &mut rng).unwrap();
        let mean = s.column(0).sum() / n as f64;
        let sd = (2.0f64).sqrt(); // Laplace(1): var = 2
        let z = (mean - 3.5) / (sd / (n as f64).sqrt());
        assert!(z.abs() < 5.3, "z = {z}");
    }
}
