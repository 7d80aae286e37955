//! A floating-point leak in the style of Mironov (2012): correct in the real-number model of its
//! author's head, broken by how the numbers are represented.

use super::correct::epsilon_param;
use super::declare::noisy_statistic;
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::mechanism::Params;
use crate::noise::LaplaceNoise;

/// Id of the entry.
pub(crate) const ID: &str = "laplace-sum-coarse-noise";

/// The output transform under which this entry is audited by default (spelled as
/// `audit run --transform` spells it): the bug lives in the low-order bits of the output, which
/// no threshold on the value can see.
pub(crate) const RECOMMENDED_TRANSFORM: &str = "float-bits";

pub(crate) fn specs() -> Vec<Spec> {
    vec![Spec {
        id: ID,
        summary: "Laplace noise rounded to a coarse grid: the output's low bits leak the sum (Mironov-style)",
        build: laplace_sum_coarse_noise,
    }]
}

/// Sum of records in [0, 1] plus Laplace noise of scale 1/ε that was rounded to the grid
/// 2^-k·ℤ (k = `grid_bits`, default 10) before being added — as a fixed-point noise generator,
/// a noise table, or noise "rounded to three binary-decimal places for display" would do.
///
/// # Bug
/// Rounding the *noise* is not post-processing of the noisy sum. The output is
/// sum + (multiple of 2^-k), so its residue modulo 2^-k is the sum's residue: exactly the
/// low-order bits of the output reveal the sum's fractional part, whatever the noise. On the
/// witness ({0.5 × 4}, sum 2, against the same plus 0.3, sum 2.3) every release on D is a
/// multiple of 2^-10 and no release on D' is, so the two output distributions have disjoint
/// supports: H_{e^ε} = 1 for every ε and the mechanism is not ε′-DP for any finite ε′
/// (not even (ε′, δ)-DP for δ < 1). The rounded noise has the same spread as the real one, so
/// the output's *value* looks like a correct ε-DP Laplace sum; only a test that looks at the
/// float representation (the `float-bits` output transform) sees the leak.
///
/// # Output
/// One real: the noisy sum.
fn laplace_sum_coarse_noise(params: &mut Params) -> Result<Entry> {
    let epsilon = epsilon_param(params, ID)?;
    let k = params.take_in(ID, "grid_bits", 10.0, 1.0, 30.0)?;
    if k.fract() != 0.0 {
        return Err(MechanismError::InvalidParameter {
            mechanism: ID.into(),
            message: format!("grid_bits = {k}; allowed: an integer from 1 to 30"),
        });
    }
    // Sum 2 (on every grid) against sum 2.3 (on none of 2^-1 … 2^-30: 0.3 is not dyadic).
    let d = Dataset::scalars(vec![0.5; 4])?;
    let witness = DatasetPair::new(d.clone(), d.with_record(&[0.3])?, Neighboring::AddRemove)?;
    let noise = LaplaceNoise::new(1.0 / epsilon)?;
    let grid = 2f64.powi(k as i32);
    let m = noisy_statistic(
        ID,
        PrivacyClaim::pure(epsilon)?,
        RecordDomain::real(0.0, 1.0, 1),
        |d| d.column(0).iter().sum(),
        move |rng| (noise.sample(rng) * grid).round() / grid,
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Buggy {
            bug: "Laplace noise rounded to a grid of 2^-k before it is added to a sum with an \
                  arbitrary fractional part: the output's low-order bits reveal the sum's \
                  residue modulo 2^-k (a floating-point leak in the style of Mironov 2012)"
                .into(),
            true_guarantee: "not ε′-DP for any finite ε′: on the witness the two output \
                             distributions have disjoint supports"
                .into(),
        },
        witness,
    })
}

#[cfg(test)]
mod tests {
    //! Distribution checks: two-sided z-tests with |z| < 5.3 on 2e5 releases (CLT; false-failure
    //! rate ≈ 1.2e-7 each, 2 checks), and exact support checks that cannot fail by chance.

    use rand::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    use super::*;
    use crate::catalogue::build;

    #[test]
    fn noisy_sum_has_laplace_spread_and_the_sums_residue() {
        let e = build(ID, &Params::new()).unwrap();
        let n = 200_000;
        let mut rng = ChaCha20Rng::seed_from_u64(11);
        let s = e.mechanism.sample(e.witness.second(), n, &mut rng).unwrap();
        // Mean 2.3, variance 2b² + h²/12 (b = 1, h = 2^-10: Sheppard's correction, < 1e-7,
        // negligible against the test's resolution ≈ 0.01); fourth central moment ≈ 24b⁴.
        let nf = n as f64;
        let mean = s.column(0).sum() / nf;
        let z = (mean - 2.3) / (2.0 / nf).sqrt();
        assert!(z.abs() < 5.3, "mean {mean}, z = {z}");
        let var = s.column(0).iter().map(|x| (x - 2.3).powi(2)).sum::<f64>() / nf;
        let z = (var - 2.0) / ((24.0 - 4.0) / nf).sqrt();
        assert!(z.abs() < 5.3, "variance {var}, z = {z}");
        // Exact: no release on D' (sum 2.3) is a multiple of 2^-10, every release on D (sum 2) is.
        assert!(s.column(0).iter().all(|x| (x * 1024.0).fract() != 0.0));
        let s = e
            .mechanism
            .sample(e.witness.first(), 10_000, &mut rng)
            .unwrap();
        assert!(s.column(0).iter().all(|x| (x * 1024.0).fract() == 0.0));
    }

    #[test]
    fn grid_bits_must_be_an_integer_in_range() {
        for bad in [0.0, 31.0, 2.5] {
            let err = build(ID, &Params::new().set("grid_bits", bad))
                .unwrap_err()
                .to_string();
            assert!(err.contains("grid_bits"), "{err}");
        }
    }
}
