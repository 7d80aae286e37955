//! DP-FTRL's noisy prefix sums: the binary tree mechanism (Dwork, Naor, Pitassi & Rothblum 2010;
//! Chan, Shi & Song 2011) with Gaussian noise per node, as DP-FTRL uses it (Kairouz, McMahan,
//! Song, Thakkar, Thakurta & Xu 2021, "Practical and private (deep) learning without sampling or
//! shuffling"), and two realistic mistakes in where the noise goes.
//!
//! # The stream and the neighboring relation
//! A record (s, g) ∈ [0, 1]² is one example: it is processed at step t = min(⌊s·T⌋, T − 1) of a
//! stream of T = 2^L steps (L the tree depth) and contributes its clipped gradient value g ∈
//! [0, 1] to the stream element x_t = Σ of the g of the records at step t. Neighbors: one record
//! added or removed (add/remove), which changes exactly one stream element, by at most 1. (The
//! dataset is a multiset, so the step is part of the record: a relation on ordered streams could
//! not be expressed by the catalogue's multiset neighbors without reorderings counting as
//! changes.)
//!
//! # Release
//! The T prefix sums s_t = x_1 + … + x_t (t = 1…T), each with noise (which noise: per entry).
//!
//! # The tree and its sensitivity
//! The tree has levels ℓ = 0…L; level ℓ holds T/2^ℓ nodes, node j summing x over the steps
//! [j·2^ℓ, (j + 1)·2^ℓ). Each step lies in exactly one node per level, so one record changes
//! L + 1 = ⌈log2 T⌉ + 1 node sums, each by at most 1: the node vector has ℓ2-sensitivity
//! √(L + 1). With N(0, σ²) on every node, σ = √(L + 1)/μ, the noisy node vector is exactly the
//! Gaussian mechanism with sensitivity √(L + 1), i.e. μ-GDP (Dong, Roth & Su 2022,
//! Theorem 2.7); each prefix sum s_t is the sum of the noisy nodes of the dyadic decomposition
//! of [1, t] (one node per set bit of t), a post-processing of the node vector, so the release
//! is μ-GDP (Dong, Roth & Su 2022, Proposition 2.8). That is the claim of all three entries.

use rand::Rng;

use super::declare::vector;
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::Result;
use crate::math::readable;
use crate::mechanism::Params;
use crate::noise::GaussianNoise;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "ftrl-tree",
            summary: "DP-FTRL prefix sums by the binary tree mechanism, Gaussian noise per node",
            build: ftrl_tree,
        },
        Spec {
            id: "ftrl-noise-per-release",
            summary: "DP-FTRL prefix sums with fresh noise per release, claim computed for the tree",
            build: ftrl_noise_per_release,
        },
        Spec {
            id: "ftrl-noise-per-level",
            summary: "DP-FTRL tree whose nodes of one level reuse one noise draw",
            build: ftrl_noise_per_level,
        },
    ]
}

/// Where the noise of the prefix sums comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    /// One independent draw per tree node (correct).
    Tree,
    /// One independent draw per released prefix sum, no tree.
    PerRelease,
    /// One draw per tree level, shared by every node of the level.
    PerLevel,
}

/// Reads the tree depth L (T = 2^L steps; 1 to 4).
fn depth_param(params: &mut Params, id: &str) -> Result<u32> {
    Ok(params.take_integer_in(id, "depth", 3.0, 1.0, 4.0)? as u32)
}

/// The stream x_1…x_T of a dataset of (s, g) records (module docs).
fn stream(data: &Dataset, steps: usize) -> Vec<f64> {
    let mut x = vec![0.0; steps];
    for r in data.iter() {
        let t = ((r[0] * steps as f64).floor().max(0.0) as usize).min(steps - 1);
        x[t] += r[1];
    }
    x
}

/// The nodes (level, index) of the dyadic decomposition of the first `t` steps, one per set bit
/// of t, high to low.
pub(crate) fn decomposition(t: usize, depth: u32) -> Vec<(u32, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for level in (0..=depth).rev() {
        let width = 1usize << level;
        if t & width != 0 {
            out.push((level, start / width));
            start += width;
        }
    }
    out
}

/// The node sums of the dyadic tree over the stream `x` (T = 2^depth steps): level ℓ = 0…depth,
/// node j = Σ x over [j·2^ℓ, (j + 1)·2^ℓ). Shared with continual counting (`continual.rs`).
pub(crate) fn tree_nodes<T: Copy + std::iter::Sum<T>>(x: &[T], depth: u32) -> Vec<Vec<T>> {
    (0..=depth)
        .map(|level| {
            x.chunks(1 << level)
                .map(|c| c.iter().copied().sum())
                .collect()
        })
        .collect()
}

/// The T prefix sums read off noisy tree nodes: s_t is the sum of the nodes of the dyadic
/// decomposition of [1, t] (a post-processing of the node vector).
pub(crate) fn tree_prefixes<T: Copy + std::iter::Sum<T>>(
    nodes: &[Vec<T>],
    depth: u32,
) -> impl Iterator<Item = T> + '_ {
    (1..=1usize << depth).map(move |t| {
        decomposition(t, depth)
            .iter()
            .map(|&(l, j)| nodes[l as usize][j])
            .sum()
    })
}

/// One entry of the family: its layout decides the noise and, from the parameters, the status.
fn build(params: &mut Params, id: &'static str, layout: Layout) -> Result<Entry> {
    let depth = depth_param(params, id)?;
    let mu = params.take_in(id, "mu", 1.0, 0.01, 10.0)?;
    let steps = 1usize << depth;
    let levels = depth as f64 + 1.0;
    // σ from the tree's sensitivity √(L + 1) (module docs).
    let sigma = levels.sqrt() / mu;
    let noise = GaussianNoise::new(sigma)?;
    let m = vector(
        id,
        PrivacyClaim::gaussian_dp(mu)?,
        Neighboring::AddRemove,
        RecordDomain::real(0.0, 1.0, 2),
        steps,
        move |d| tree_nodes(&stream(d, steps), depth),
        move |nodes, rng: &mut dyn Rng, out| match layout {
            Layout::Tree | Layout::PerLevel => {
                let noisy: Vec<Vec<f64>> = if layout == Layout::Tree {
                    nodes
                        .iter()
                        .map(|level| level.iter().map(|v| v + noise.sample(rng)).collect())
                        .collect()
                } else {
                    nodes
                        .iter()
                        .map(|level| {
                            let z = noise.sample(rng);
                            level.iter().map(|v| v + z).collect()
                        })
                        .collect()
                };
                out.extend(tree_prefixes(&noisy, depth));
            }
            Layout::PerRelease => {
                let mut prefix = 0.0;
                for x in &nodes[0] {
                    prefix += x;
                    out.push(prefix + noise.sample(rng));
                }
            }
        },
    )
    .with_claim_source(format!(
        "tree mechanism: sigma = {sigma:.6} per node for l2-sensitivity sqrt(depth + 1) = {:.6}",
        levels.sqrt()
    ));
    Ok(Entry {
        mechanism: Box::new(m),
        status: status(layout, depth, mu, sigma),
        witness: witness()?,
    })
}

/// The true guarantee of each layout, from the parameters.
///
/// - Tree: μ-GDP (module docs).
/// - Per release: s_t = x_1 + … + x_t + N(0, σ²) independently for each t. A record at the first
///   step moves every s_t by g ≤ 1; the noise is N(0, σ² I_T), so the release is the Gaussian
///   mechanism with ℓ2-sensitivity √T (the worst step is the first), exactly (√T/σ)-GDP
///   = μ·√(T/(L + 1))-GDP: buggy whenever T > L + 1, i.e. depth ≥ 2 (T = 8: μ·√2).
/// - Per level: s_t sums the nodes of the decomposition of t plus one shared draw z_ℓ per set
///   bit ℓ of t. Then s_3 − s_2 − s_1 = (x_1 + x_2 + z_1 + x_3 + z_0) − (x_1 + x_2 + z_1) −
///   (x_1 + z_0) = x_3 − x_1 carries no noise at all: a record at step 1 moves it by g
///   deterministically, the two output laws are mutually singular, H_{e^ε} = 1 for every ε, and
///   the mechanism is not (ε, δ)-DP for any δ < 1. This needs T ≥ 3 (depth ≥ 2); at depth 1 the
///   two releases use the two distinct draws z_0 and z_1 and the entry keeps its claim.
///
/// Why leaf-only noise is *not* a twin here: noise N(0, σ²) on each leaf and exact sums of noisy
/// leaves is the Gaussian mechanism on the leaves (sensitivity 1, each record changes one leaf),
/// 1/σ-GDP = μ/√(L + 1)-GDP, *more* private than the tree's claim; its cost is accuracy (the
/// noise of s_t grows like t). The realistic failing variant is noise per released prefix sum.
fn status(layout: Layout, depth: u32, mu: f64, sigma: f64) -> Status {
    let steps = (1usize << depth) as f64;
    let levels = depth as f64 + 1.0;
    match layout {
        // Post-processing of the node vector: μ_true ≤ √(L + 1)/σ = μ.
        Layout::Tree => Status::Correct,
        Layout::PerRelease => {
            let mu_true = steps.sqrt() / sigma;
            Status::buggy_if(
                mu_true > mu,
                "fresh noise on every released prefix sum, but the claim is computed for \
                 the tree, where a record touches only depth + 1 noisy nodes; a record \
                 at the first step moves all T releases",
                format!(
                    "{}-GDP (sqrt(T)/sigma with T = {steps}), not the claimed {mu}-GDP",
                    readable(mu_true)
                ),
            )
        }
        Layout::PerLevel => Status::buggy_if(
            steps > levels,
            "one noise draw per tree level, shared by all its nodes: s3 - s2 - s1 = \
             x3 - x1 is released without noise",
            String::from(
                "not (ε, δ)-DP for any δ < 1 (the output laws of \
                 neighbors are mutually singular)",
            ),
        ),
    }
}

/// A record added at the first step with the largest gradient: it moves every prefix sum, the
/// worst case for both twins, and the tightest pair for the tree. The release of the tree is the
/// Gaussian law N(A·x, σ² B Bᵀ) (A the prefix-sum matrix, B selecting the nodes of each
/// decomposition), so a record at step t with g = 1 is exactly √(a_tᵀ (B Bᵀ)⁻¹ a_t)/σ-GDP, a_t
/// the t-th column of A; with T = 8, σ = 2 (μ = 1) that is (test
/// `tree_privacy_per_step`) 1.0, 0.87, 0.87, 0.71, 0.87, 0.71, 0.71, 0.5 for t = 1…8: the first
/// step meets the claim with equality (the eight prefix sums determine the four nodes it
/// touches), the later steps are strictly inside it.
fn witness() -> Result<DatasetPair> {
    let d = Dataset::vectors(2, &[vec![0.3, 0.5], vec![0.7, 0.5]])?;
    DatasetPair::new(
        d.clone(),
        d.with_record(&[0.0, 1.0])?,
        Neighboring::AddRemove,
    )
}

fn ftrl_tree(params: &mut Params) -> Result<Entry> {
    build(params, "ftrl-tree", Layout::Tree)
}

fn ftrl_noise_per_release(params: &mut Params) -> Result<Entry> {
    build(params, "ftrl-noise-per-release", Layout::PerRelease)
}

fn ftrl_noise_per_level(params: &mut Params) -> Result<Entry> {
    build(params, "ftrl-noise-per-level", Layout::PerLevel)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn decomposition_covers_the_prefix_once() {
        for depth in 1..=4u32 {
            for t in 1..=(1usize << depth) {
                let mut covered = 0;
                for (level, j) in decomposition(t, depth) {
                    assert_eq!(j << level, covered, "depth {depth}, t {t}");
                    covered += 1 << level;
                }
                assert_eq!(covered, t);
            }
        }
    }

    #[test]
    fn statuses_follow_the_depth() {
        let word = |id: &str, depth: f64| {
            super::super::build(id, &Params::new().set("depth", depth))
                .unwrap()
                .status
                .word()
        };
        assert_eq!(word("ftrl-tree", 3.0), "correct");
        assert_eq!(word("ftrl-noise-per-release", 3.0), "buggy");
        assert_eq!(word("ftrl-noise-per-level", 3.0), "buggy");
        // T = 2 = L + 1: both twins keep the claim.
        assert_eq!(word("ftrl-noise-per-release", 1.0), "correct");
        assert_eq!(word("ftrl-noise-per-level", 1.0), "correct");
    }

    #[test]
    fn per_level_noise_cancels_and_tree_noise_does_not() {
        let e = super::super::build("ftrl-noise-per-level", &Params::new()).unwrap();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        let d = e.witness.second();
        let s = e.mechanism.sample(d, 20, &mut rng).unwrap();
        let x = stream(d, 8);
        for i in 0..20 {
            let r = s.row(i);
            assert!((r[2] - r[1] - r[0] - (x[2] - x[0])).abs() < 1e-9);
        }
        let e = super::super::build("ftrl-tree", &Params::new()).unwrap();
        let s = e.mechanism.sample(d, 20, &mut rng).unwrap();
        let spread = (0..20)
            .map(|i| (s.row(i)[2] - s.row(i)[1] - s.row(i)[0]).abs())
            .fold(0.0, f64::max);
        assert!(spread > 1e-3);
    }

    /// √(a_tᵀ (B Bᵀ)⁻¹ a_t) per step t for T = 8 (witness docs), by Gaussian elimination.
    #[test]
    fn tree_privacy_per_step() {
        let (depth, steps) = (3u32, 8usize);
        let rows: Vec<Vec<(u32, usize)>> = (1..=steps).map(|t| decomposition(t, depth)).collect();
        let expected = [1.0, 0.75f64.sqrt(), 0.75f64.sqrt(), 0.5f64.sqrt()];
        for t in 0..steps {
            // Gram matrix B Bᵀ (shared nodes of two decompositions), right-hand side a_t.
            let mut m: Vec<Vec<f64>> = (0..steps)
                .map(|i| {
                    let mut row: Vec<f64> = (0..steps)
                        .map(|j| rows[i].iter().filter(|n| rows[j].contains(n)).count() as f64)
                        .collect();
                    row.push(if i >= t { 1.0 } else { 0.0 });
                    row
                })
                .collect();
            for c in 0..steps {
                let p = (c..steps)
                    .max_by(|&a, &b| m[a][c].abs().total_cmp(&m[b][c].abs()))
                    .unwrap();
                m.swap(c, p);
                for r in 0..steps {
                    if r != c {
                        let f = m[r][c] / m[c][c];
                        let pivot = m[c].clone();
                        for (x, y) in m[r].iter_mut().zip(&pivot) {
                            *x -= f * y;
                        }
                    }
                }
            }
            let q: f64 = (0..steps)
                .filter(|&i| i >= t)
                .map(|i| m[i][steps] / m[i][i])
                .sum();
            // σ = 2 for μ = 1 at depth 3.
            let mu = q.sqrt() / 2.0;
            assert!(mu <= 1.0 + 1e-9, "step {t}: {mu}");
            if t < expected.len() {
                assert!((mu - expected[t]).abs() < 1e-9, "step {t}: {mu}");
            }
        }
    }

    #[test]
    fn bad_parameters_name_the_parameter() {
        for (name, value) in [("depth", 0.0), ("depth", 2.5), ("mu", 0.0), ("mu", -1.0)] {
            let err = super::super::build("ftrl-tree", &Params::new().set(name, value))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name) && err.contains("allowed"), "{err}");
        }
    }
}
