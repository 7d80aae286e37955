//! Continual counting (seed 002's streaming posts): a stream of T = 2^L steps, a count released
//! after every step, the claim over the whole stream. The binary tree mechanism (Dwork, Naor,
//! Pitassi & Rothblum 2010; Chan, Shi & Song 2011) with exact discrete Laplace noise per node,
//! and the classic mistake of noising each released prefix with one step's budget.
//!
//! # The stream and the neighboring relation
//! A record s ∈ [0, 1] is one event, counted at step t = min(⌊s·T⌋, T − 1). The stream element
//! x_t is the number of events at step t, and the release is the T running counts
//! c_t = x_1 + … + x_t (t = 1…T). Neighbors: one event added or removed (add/remove), which
//! changes one stream element by 1 and every count from its step on by 1 (event-level privacy
//! over the whole stream).
//!
//! # The tree (`continual-count-tree`)
//! Level ℓ = 0…L holds T/2^ℓ nodes, node j counting the events in the steps
//! [j·2^ℓ, (j + 1)·2^ℓ); one event lies in exactly one node per level, so the node vector has L1
//! sensitivity L + 1. Each node gets independent discrete Laplace noise Lap_ℤ((L + 1)/ε)
//! ([`crate::exact::ExactDiscreteLaplace`]), so the noisy node vector is ε-DP (the discrete
//! Laplace mechanism: the ratio of the two output laws is at most e^{ε·‖Δ‖₁/(L + 1)} ≤ e^ε). Each
//! count c_t is the sum of the noisy nodes of the dyadic decomposition of [1, t] (one per set bit
//! of t), a post-processing: the T counts are ε-DP together. Counts and noise are integers,
//! exactly represented: nothing leaks through the floating-point representation.
//!
//! # The mistake (`continual-count-noise-per-prefix`)
//! c_t + Lap_ℤ(1/ε) independently for every t, with "ε per release" taken as the claim for the
//! stream. An event at the first step moves all T counts by 1: the L1 sensitivity of the count
//! vector is T, and the ratio of the output laws is e^{ε·Σ_t(|o_t − c′_t| − |o_t − c_t|)}, which
//! reaches e^{Tε} (every o_t on the far side of both counts). The true guarantee is exactly
//! (T·ε)-DP: 8ε at the default depth 3. At T = 1 (depth 0, not allowed) the two coincide.

use rand::Rng;

use super::declare::vector;
use super::ftrl::{tree_nodes, tree_prefixes};
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::exact::ExactDiscreteLaplace;
use crate::math::readable;
use crate::mechanism::Params;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "continual-count-tree",
            summary: "continual counting over a stream of T steps by the binary tree mechanism, exact discrete Laplace noise per node (ε over the whole stream)",
            build: tree,
        },
        Spec {
            id: "continual-count-noise-per-prefix",
            summary: "continual counting with each running count noised independently at one step's budget ε, claimed for the whole stream",
            build: per_prefix,
        },
    ]
}

/// The stream x_1…x_T: events per step (module docs).
fn stream(data: &Dataset, steps: usize) -> Vec<i64> {
    let mut x = vec![0i64; steps];
    for r in data.iter() {
        let t = ((r[0] * steps as f64).floor().max(0.0) as usize).min(steps - 1);
        x[t] += 1;
    }
    x
}

fn parameters(params: &mut Params, id: &str) -> Result<(u32, f64)> {
    let depth = params.take_integer_in(id, "depth", 3.0, 1.0, 6.0)? as u32;
    let epsilon = params.take_in(id, "epsilon", 1.0, 1e-3, 10.0)?;
    Ok((depth, epsilon))
}

/// One release of the tree mechanism: every node of `nodes` plus its own draw of `node_noise`,
/// then the noisy prefix counts the tree answers, as floats into `out` (shared by the
/// continual-counting entries and posts.rs's sliding-window tree).
pub(crate) fn noisy_prefixes(
    nodes: &[Vec<i64>],
    node_noise: &ExactDiscreteLaplace,
    depth: u32,
    rng: &mut dyn Rng,
    out: &mut Vec<f64>,
) {
    let noisy: Vec<Vec<i64>> = nodes
        .iter()
        .map(|level| {
            level
                .iter()
                .map(|v| v + node_noise.sample(&mut *rng))
                .collect()
        })
        .collect();
    out.extend(tree_prefixes(&noisy, depth).map(|c| c as f64));
}

pub(crate) fn noise(id: &str, scale: f64) -> Result<ExactDiscreteLaplace> {
    ExactDiscreteLaplace::new(scale).map_err(|e| MechanismError::InvalidParameter {
        mechanism: id.into(),
        message: e.to_string(),
    })
}

/// An event added at the first step: it moves every count (the worst case of the twin, and a
/// pair at the claim's edge for the tree: it changes one node per level).
fn witness() -> Result<DatasetPair> {
    let d = Dataset::scalars(vec![0.3, 0.55, 0.8])?;
    DatasetPair::new(d.clone(), d.with_record(&[0.0])?, Neighboring::AddRemove)
}

fn tree(params: &mut Params) -> Result<Entry> {
    let id = "continual-count-tree";
    let (depth, epsilon) = parameters(params, id)?;
    let steps = 1usize << depth;
    let levels = depth as f64 + 1.0;
    let node_noise = noise(id, levels / epsilon)?;
    let m = vector(
        id,
        PrivacyClaim::pure(epsilon)?,
        Neighboring::AddRemove,
        RecordDomain::real(0.0, 1.0, 1),
        steps,
        move |d| tree_nodes(&stream(d, steps), depth),
        move |nodes, rng: &mut dyn Rng, out| noisy_prefixes(nodes, &node_noise, depth, rng, out),
    )
    .with_claim_source(format!(
        "tree mechanism: discrete Laplace of scale (depth + 1)/ε = {} per node, L1 sensitivity depth + 1 = {levels}",
        readable(levels / epsilon)
    ));
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: witness()?,
    })
}

fn per_prefix(params: &mut Params) -> Result<Entry> {
    let id = "continual-count-noise-per-prefix";
    let (depth, epsilon) = parameters(params, id)?;
    let steps = 1usize << depth;
    let release_noise = noise(id, 1.0 / epsilon)?;
    let m = vector(
        id,
        PrivacyClaim::pure(epsilon)?,
        Neighboring::AddRemove,
        RecordDomain::real(0.0, 1.0, 1),
        steps,
        move |d| stream(d, steps),
        move |x, rng: &mut dyn Rng, out| {
            let mut count = 0i64;
            for v in x {
                count += v;
                out.push((count + release_noise.sample(&mut *rng)) as f64);
            }
        },
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::buggy_if(
            steps > 1,
            "each running count gets discrete Laplace noise for one step's budget ε, but an event moves every later count: the budgets add up over the stream",
            format!(
                "{}-DP ((T·ε with T = {steps}), not the claimed {epsilon}-DP",
                readable(steps as f64 * epsilon)
            ),
        ),
        witness: witness()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn counts_are_integers_and_the_tree_sums_its_nodes() {
        let e = super::super::build("continual-count-tree", &Params::new()).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
        let s = e
            .mechanism
            .sample(e.witness.second(), 200, &mut rng)
            .unwrap();
        assert_eq!(s.dim(), 8);
        assert!(s.values().iter().all(|v| v.fract() == 0.0));
        // c_8 is one node (the root): its noise alone; mean over draws near the true count 4.
        let mean = s.column(7).sum() / 200.0;
        assert!((mean - 4.0).abs() < 2.0, "{mean}");
    }

    #[test]
    fn statuses_follow_the_stream_length() {
        let word = |id: &str| {
            super::super::build(id, &Params::new())
                .unwrap()
                .status
                .word()
        };
        assert_eq!(word("continual-count-tree"), "correct");
        assert_eq!(word("continual-count-noise-per-prefix"), "buggy");
    }
}
