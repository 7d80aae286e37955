//! Privacy units: user-level records with contribution bounding, and twins that bound examples
//! but claim user-level privacy.
//!
//! # The model
//! A record is a **user**, encoded as `dpsgd-user-level` encodes one (`dpsgd/variants/`): a
//! vector of m example slots (`--param examples`, default 4; record dimension m), each an
//! example's value in [0, 1], a user with fewer examples having zeros in the unused slots (a
//! zero slot adds nothing to a sum, so "unused" and "an example of value 0" release the same).
//! Neighbors are **zero-out** neighbors (`Neighboring::ZeroOut`): D′ is D with one user replaced
//! by the null user (all slots zero, i.e. no examples). The statistic is the sum of all examples'
//! values; the null user adds nothing to it, so under zero-out a user moves the statistic exactly
//! as removing them would, and every bound below is the same under add/remove.
//!
//! * `user-level-sum`: **contribution bounding** keeps a user's first k non-zero examples
//!   (`--param max_contributions`, default 2, k ≤ m), then the sum plus Laplace(k/ε). A user moves
//!   the bounded sum by at most k (k examples of value ≤ 1), so it is ε-DP at the user level
//!   (Dwork & Roth 2014, Theorem 3.6; Amin, Kulesza, Muñoz Medina & Vassilvitskii 2019 on
//!   bounding user contributions). Tight on the witness (a user with m examples of value 1).
//! * `user-level-sum-example-noise`: bounds users to k examples but calibrates the noise to one
//!   example, Laplace(1/ε): example-level ε-DP claimed as user-level. A user moves the sum by k:
//!   true guarantee k·ε-DP at the user level (tight on the witness). Correct when k = 1.
//! * `user-level-sum-unbounded`: clips every example's value to [0, 1] (bounds examples) and
//!   calibrates Laplace(k/ε) for k examples per user, but never enforces the k: a user with m
//!   examples moves the sum by m, true guarantee (m/k)·ε-DP (tight on the witness). Correct when
//!   k = m.
//!
//! The witness: two users with m examples of value 0.5 and a user with m examples of value 1,
//! against the same with that user zeroed out.

use super::correct::epsilon_param;
use super::declare::{integer_param, noisy_statistic, pure_status};
use super::{Entry, Spec};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::Result;
use crate::mechanism::Params;
use crate::noise::LaplaceNoise;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "user-level-sum",
            summary: "user-level sum: a user's first k examples kept, plus Laplace(k/ε)",
            build: |p| build(p, Variant::Correct),
        },
        Spec {
            id: "user-level-sum-example-noise",
            summary: "user-level sum bounded to k examples per user, noise Laplace(1/ε) for one example",
            build: |p| build(p, Variant::ExampleNoise),
        },
        Spec {
            id: "user-level-sum-unbounded",
            summary: "user-level sum with examples clipped and noise for k per user, the k never enforced",
            build: |p| build(p, Variant::Unbounded),
        },
    ]
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Correct,
    ExampleNoise,
    Unbounded,
}

impl Variant {
    fn id(self) -> &'static str {
        match self {
            Self::Correct => "user-level-sum",
            Self::ExampleNoise => "user-level-sum-example-noise",
            Self::Unbounded => "user-level-sum-unbounded",
        }
    }
}

/// The sum over users of their first `k` non-zero examples (clipped to [0, 1]), or of all their
/// examples when `k` is `None`.
fn bounded_sum(data: &Dataset, k: Option<usize>) -> f64 {
    data.iter()
        .map(|user| {
            user.iter()
                .filter(|&&x| x != 0.0)
                .take(k.unwrap_or(usize::MAX))
                .map(|x| x.clamp(0.0, 1.0))
                .sum::<f64>()
        })
        .sum()
}

fn build(params: &mut Params, variant: Variant) -> Result<Entry> {
    let id = variant.id();
    let epsilon = epsilon_param(params, id)?;
    let m = integer_param(params, id, "examples", 4, 1, 16)?;
    let k = integer_param(params, id, "max_contributions", 2.min(m), 1, m)?;
    // Largest move of the released sum by one user, and the sensitivity the noise assumes.
    let (moved, assumed) = match variant {
        Variant::Correct => (k, k),
        Variant::ExampleNoise => (k, 1),
        Variant::Unbounded => (m, k),
    };
    let noise = LaplaceNoise::new(assumed as f64 / epsilon)?;
    let enforce = (variant != Variant::Unbounded).then_some(k);
    let mut mech = noisy_statistic(
        id,
        PrivacyClaim::pure(epsilon)?,
        RecordDomain::real(0.0, 1.0, m),
        move |d| bounded_sum(d, enforce),
        move |rng| noise.sample(rng),
    );
    mech.neighboring = Neighboring::ZeroOut;
    let d = Dataset::vectors(m, &[vec![0.5; m], vec![0.5; m]])?;
    let witness = DatasetPair::new(
        d.with_record(&vec![1.0; m])?,
        d.with_record(&Neighboring::null_record(m))?,
        Neighboring::ZeroOut,
    )?;
    // Laplace: the loss is (largest move)/(scale) = moved·ε/assumed.
    let true_epsilon = epsilon * moved as f64 / assumed as f64;
    let status = pure_status(
        true_epsilon,
        epsilon,
        || match variant {
            Variant::ExampleNoise => format!(
                "noise Laplace(1/ε) calibrated to one example, but a user contributes up to \
                 k = {k} examples: example-level privacy claimed as user-level"
            ),
            _ => format!(
                "examples are clipped and the noise assumes k = {k} per user, but the k is not \
                 enforced: a user's {m} examples all count"
            ),
        },
        " at the user level",
    );
    Ok(Entry {
        mechanism: Box::new(mech),
        status,
        witness,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::build as build_entry;

    #[test]
    fn statuses_follow_the_parameters() {
        let buggy = |id: &str, p: Params| build_entry(id, &p).unwrap().status.is_buggy();
        assert!(!buggy("user-level-sum", Params::new()));
        assert!(buggy("user-level-sum-example-noise", Params::new()));
        assert!(!buggy(
            "user-level-sum-example-noise",
            Params::new().set("max_contributions", 1.0)
        ));
        assert!(buggy("user-level-sum-unbounded", Params::new()));
        assert!(!buggy(
            "user-level-sum-unbounded",
            Params::new().set("max_contributions", 4.0)
        ));
    }

    #[test]
    fn bad_parameters_name_the_parameter() {
        for (name, v) in [
            ("epsilon", 0.0),
            ("epsilon", -1.0),
            ("examples", 0.0),
            ("max_contributions", 0.0),
            ("max_contributions", 5.0),
            ("max_contributions", 1.5),
        ] {
            let err = build_entry("user-level-sum", &Params::new().set(name, v))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name) && err.contains("allowed"), "{err}");
        }
    }

    #[test]
    fn entries_claim_zero_out() {
        for id in [
            "user-level-sum",
            "user-level-sum-example-noise",
            "user-level-sum-unbounded",
        ] {
            let e = build_entry(id, &Params::new()).unwrap();
            assert_eq!(e.mechanism.neighboring(), Neighboring::ZeroOut, "{id}");
            assert_eq!(e.witness.relation(), Neighboring::ZeroOut, "{id}");
        }
    }

    #[test]
    fn bounding_keeps_the_first_k_examples() {
        let d = Dataset::vectors(4, &[vec![0.0, 0.5, 1.0, 1.0], vec![1.0; 4]]).unwrap();
        assert_eq!(bounded_sum(&d, Some(2)), 1.5 + 2.0);
        assert_eq!(bounded_sum(&d, None), 2.5 + 4.0);
    }
}
