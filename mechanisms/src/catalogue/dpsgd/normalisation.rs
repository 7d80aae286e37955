//! How DP-SGD turns its noisy sum into a mean, and Opacus issue #571 (`meta-pytorch/opacus#571`,
//! "Privacy Leakage at low sample size", 2023; the follow-up #819 names the same floor-based
//! normalisation): Opacus divides the noisy clipped-gradient sum by an *expected batch size*
//! that it computes as `int(len(dataset) * sample_rate)` — from the size of the private dataset.
//! Under add/remove neighbors that size is what differs, so on small datasets the divisor, hence
//! the scale of the released update, tells the two datasets apart.
//!
//! | id | divisor | claim (defaults) | true guarantee (defaults) |
//! |---|---|---|---|
//! | `dpsgd-normalise-public-batch` | a public constant B (a hyperparameter) | the DP-SGD ledger: (ε, 1e-5) | as claimed (post-processing of the ledger's noisy sums) |
//! | `dpsgd-normalise-by-dataset-size` | max(1, ⌊q·\|D\|⌋), as Opacus | the same ledger | δ ≥ 0.066 at the claimed ε = 3.534 on 3 against 4 records |
//!
//! # The loop
//! The gradient form of `dpsgd/variants/`: the loss is linear, so a record *is* its gradient,
//! a real in [−1, 1] clipped to C = 1 (a no-op on the domain, kept for the form). From θ₀ = 0,
//! for t = 1, …, T: Poisson sampling at rate q, S_t = Σ_{i ∈ batch} clip(g_i), the noisy sum
//! S_t + N(0, z²C²), and θ_t = θ_{t−1} − (S_t + N(0, z²C²))/B_t. Every iterate θ₁, …, θ_T is
//! released.
//!
//! # Claim (both entries)
//! The ledger of `dpsgd/variants/` ([`super::variants::ledger`]): T steps of the
//! Poisson-subsampled Gaussian at rate q and multiplier z, add/remove, the pessimistic PLD ε at
//! δ = 1e-5 rounded up. It accounts the noisy sums S_t + N(0, z²C²).
//!
//! # `dpsgd-normalise-public-batch` (correct)
//! B_t = B, a public constant fixed before the data is seen (the expected batch size the user
//! asks for, q·N for a *public* N). The iterates are a fixed function of the noisy sums, so by
//! post-processing they keep the ledger's claim. Its witness — 3 records at gradient 0 against
//! the same with a record at the clip norm added — is the ledger's worst case (Mironov, Talwar
//! & Zhang 2019: a record at the clip norm in a batch of zero gradients).
//!
//! # `dpsgd-normalise-by-dataset-size` (Opacus #571)
//! B_t = max(1, ⌊q·|D|⌋) is read off the private dataset (the `max` stands for the division by
//! zero Opacus would hit at ⌊q·|D|⌋ = 0). On the witness D = three records at gradient 0 and D′
//! = four (q = 1/2: B = 1 against B′ = 2), every clipped sum is 0 on both sides, so θ₁ is exactly
//! N(0, (z/B)²) on D and N(0, (z/B′)²) on D′: two centred Gaussians of different scale, whose
//! privacy loss is unbounded. The exact hockey-stick divergence of that pair at the claimed ε
//! (`gaussian_pair_hockey_stick`, both directions) is a lower bound on the mechanism's δ there:
//! θ₁ is one coordinate of the release (post-processing can only lower δ). At the defaults
//! (q = 1/2, z = 1, T = 1, claimed ε = 3.534) that is δ ≥ 0.066 against the claimed 1e-5. The witness is the
//! smallest n₀ ≥ 2 with ⌊q·n₀⌋ ≥ 1 and ⌊q·(n₀ + 1)⌋ ≠ ⌊q·n₀⌋ (2 and 3 records at q = 0.7, as in
//! the 2–3 samples); a q for which none exists up to 64 records is refused. Removing the
//! leak needs the divisor to be public (the correct entry), or the size itself to be accounted
//! (`dpsgd-batch-size-released` accounts a noisy batch size).

use rand::{Rng, RngExt};

use super::variants::{gaussian_pair_hockey_stick, ledger, ledger_epsilon};
use crate::catalogue::declare::Declared;
use crate::catalogue::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::math::readable;
use crate::mechanism::Params;
use crate::noise::GaussianNoise;
use crate::samples::Samples;

/// Clip norm (records lie in [−C, C]).
const CLIP: f64 = 1.0;
/// δ of the claims.
const DELTA: f64 = 1e-5;
/// Largest dataset the entries take (and the witness search's end).
const MAX_RECORDS: usize = 64;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "dpsgd-normalise-public-batch",
            summary: "DP-SGD dividing the noisy clipped sum by a public expected batch size B (a hyperparameter), every iterate released",
            build: public_batch,
        },
        Spec {
            id: "dpsgd-normalise-by-dataset-size",
            summary: "DP-SGD dividing the noisy sum by int(q·|D|), the expected batch size read off the private dataset (Opacus #571)",
            build: by_dataset_size,
        },
    ]
}

/// How the noisy sum is turned into a step.
#[derive(Clone, Copy, Debug)]
enum Divisor {
    /// A public constant.
    Public(f64),
    /// max(1, ⌊q·|D|⌋) (Opacus).
    DatasetSize,
}

/// The divisor max(1, ⌊q·n⌋) Opacus computes as `int(len(dataset) * sample_rate)`.
fn opacus_divisor(q: f64, n: usize) -> f64 {
    (q * n as f64).floor().max(1.0)
}

/// The smallest n₀ ≥ 2 with ⌊q·n₀⌋ ≥ 1 whose divisor changes when a record is added.
fn leaking_size(q: f64) -> Option<usize> {
    (2..MAX_RECORDS).find(|&n| {
        (q * n as f64).floor() >= 1.0 && opacus_divisor(q, n + 1) != opacus_divisor(q, n)
    })
}

struct Settings {
    q: f64,
    z: f64,
    steps: u64,
    epsilon: f64,
}

fn settings(params: &mut Params, id: &str) -> Result<Settings> {
    let q = params.take_in(id, "q", 0.5, 0.05, 0.95)?;
    let z = params.take_in(id, "noise_multiplier", 1.0, 0.5, 10.0)?;
    let steps = params.take_integer_in(id, "steps", 1.0, 1.0, 4.0)? as u64;
    let epsilon = ledger_epsilon(&ledger(q, z, steps)?, DELTA)?;
    Ok(Settings {
        q,
        z,
        steps,
        epsilon,
    })
}

fn mechanism(id: &'static str, s: &Settings, divisor: Divisor) -> Result<Declared> {
    let (q, steps) = (s.q, s.steps as usize);
    let noise = GaussianNoise::new(s.z * CLIP)?;
    let how = match divisor {
        Divisor::Public(b) => format!("divided by the public B = {}", readable(b)),
        Divisor::DatasetSize => "divided by int(q·|D|)".to_string(),
    };
    Ok(Declared {
        id,
        claim: PrivacyClaim::approximate(s.epsilon, DELTA)?,
        claim_source: Some(format!(
            "PLD accountant (pessimistic) over the privacy ledger [{} × (Poisson sampling q = {}; Gaussian sum z = {})], add/remove: epsilon = {} at delta = {DELTA:e}; the noisy sums are {how}",
            s.steps,
            readable(q),
            readable(s.z),
            s.epsilon
        )),
        neighboring: Neighboring::AddRemove,
        domain: RecordDomain::real(-CLIP, CLIP, 1).with_sizes(1, MAX_RECORDS),
        output_dim: steps,
        recommended_transform: None,
        setting: crate::mechanism::DpSetting::Central,
        sample: Box::new(move |data: &Dataset, n, rng: &mut dyn Rng| {
            let g: Vec<f64> = data
                .column(0)
                .iter()
                .map(|v| v.clamp(-CLIP, CLIP))
                .collect();
            let b = match divisor {
                Divisor::Public(b) => b,
                Divisor::DatasetSize => opacus_divisor(q, g.len()),
            };
            let mut flat = Vec::with_capacity(n * steps);
            for _ in 0..n {
                let mut theta = 0.0;
                for _ in 0..steps {
                    let sum: f64 = g.iter().filter(|_| rng.random::<f64>() < q).sum();
                    theta -= (sum + noise.sample(&mut *rng)) / b;
                    flat.push(theta);
                }
            }
            Samples::from_flat(steps, flat)
        }),
    })
}

fn invalid(id: &str, message: String) -> MechanismError {
    MechanismError::InvalidParameter {
        mechanism: id.into(),
        message,
    }
}

fn witness_size(id: &str, q: f64) -> Result<usize> {
    leaking_size(q).ok_or_else(|| {
        invalid(
            id,
            format!(
                "q = {q}: no dataset of 2 to {MAX_RECORDS} records has int(q·n) ≥ 1 changing when a record is added; allowed: q with such a size (e.g. 0.05 ≤ q ≤ 0.95)"
            ),
        )
    })
}

fn zeros(n: usize) -> Result<Dataset> {
    Dataset::scalars(vec![0.0; n])
}

fn public_batch(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-normalise-public-batch";
    let s = settings(params, id)?;
    let b = params.take_in(id, "batch", 2.0, 0.1, 64.0)?;
    let n0 = witness_size(id, s.q)?;
    let m = mechanism(id, &s, Divisor::Public(b))?;
    let d = zeros(n0)?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: DatasetPair::new(d.clone(), d.with_record(&[CLIP])?, Neighboring::AddRemove)?,
    })
}

/// The exact δ at ε of the first iterate on the twin's witness (module docs), the larger of the
/// two directions.
pub fn dataset_size_delta(q: f64, z: f64, n0: usize, epsilon: f64) -> f64 {
    let (s, s_prime) = (
        z * CLIP / opacus_divisor(q, n0),
        z * CLIP / opacus_divisor(q, n0 + 1),
    );
    gaussian_pair_hockey_stick(0.0, s, 0.0, s_prime, epsilon)
        .max(gaussian_pair_hockey_stick(0.0, s_prime, 0.0, s, epsilon))
}

fn by_dataset_size(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-normalise-by-dataset-size";
    let s = settings(params, id)?;
    let n0 = witness_size(id, s.q)?;
    let m = mechanism(id, &s, Divisor::DatasetSize)?;
    let delta = dataset_size_delta(s.q, s.z, n0, s.epsilon);
    let status = Status::buggy_if(
        delta > DELTA * (1.0 + 1e-6),
        "the noisy sum is divided by int(q·|D|), an expected batch size computed from the private dataset size, so the scale of every step reveals |D|",
        format!(
            "δ ≥ {} at the claimed ε = {} on {n0} against {} records (the first iterate: N(0, ({}z)²) against N(0, ({}z)²)); the privacy loss is unbounded",
            readable(delta),
            readable(s.epsilon),
            n0 + 1,
            readable(1.0 / opacus_divisor(s.q, n0)),
            readable(1.0 / opacus_divisor(s.q, n0 + 1)),
        ),
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness: DatasetPair::new(zeros(n0)?, zeros(n0 + 1)?, Neighboring::AddRemove)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn witness_sizes_follow_the_floor() {
        assert_eq!(leaking_size(0.5), Some(3));
        assert_eq!(leaking_size(0.7), Some(2));
        assert_eq!((opacus_divisor(0.5, 3), opacus_divisor(0.5, 4)), (1.0, 2.0));
        assert_eq!(opacus_divisor(0.05, 3), 1.0);
    }

    #[test]
    fn statuses_and_the_leak() {
        let ok = crate::catalogue::build("dpsgd-normalise-public-batch", &Params::new()).unwrap();
        assert!(!ok.status.is_buggy());
        let bad = crate::catalogue::build("dpsgd-normalise-by-dataset-size", &Params::new()).unwrap();
        assert!(bad.status.is_buggy());
        let PrivacyClaim::Approximate { epsilon: eps, .. } = bad.mechanism.claim() else {
            panic!("an (ε, δ) claim")
        };
        let delta = dataset_size_delta(0.5, 1.0, 3, eps);
        assert!(delta > 0.05 && delta < 0.5, "{delta} at ε = {eps}");
        let e = crate::catalogue::build(
            "dpsgd-normalise-by-dataset-size",
            &Params::new().set("q", 2.0),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("q") && e.contains("0.95"), "{e}");
    }
}
