//! DP heatmaps (the Google post on differentially private heatmaps): a noisy quadtree with top-w
//! truncation and top-down reconstruction, against the Laplace-per-cell baseline, and two buggy
//! twins.
//!
//! # The model
//! A record is one user's short trajectory of P points (`--param points`, default 2: a trip's
//! origin and destination) in [0, 1]²; record dimension 2P, coordinates (x₁, y₁, …, x_P, y_P).
//! The heatmap is the 2^d × 2^d grid of cell counts (d = `--param depth`, default 2: a 4 × 4
//! grid), released row-major (y outer), 4^d reals.
//!
//! * `heatmap-laplace-cells` (baseline): every cell count plus Laplace(P/ε). A record moves the
//!   cell counts by a vector of L1 norm P (its points), so the Laplace mechanism is ε-DP under
//!   add/remove of a record (Dwork & Roth 2014, Theorem 3.6); tight when the P points share a
//!   cell.
//! * `heatmap-quadtree`: the quadtree levels ℓ = 1…d (level ℓ is the 2^ℓ × 2^ℓ grid; the root is
//!   not released) each get Laplace(d·P/ε) per node: a record moves each level's counts by L1
//!   norm P, so the d levels together by d·P and the noisy tree is ε-DP (same theorem). Then,
//!   as post-processing of the noisy tree only (Dwork & Roth 2014, Proposition 2.1): **top-w
//!   truncation** — at each level ℓ < d, among the children of the nodes kept at level ℓ − 1 (all
//!   four nodes at level 1), keep the w with the largest noisy counts (`--param top_w`, default
//!   2; ties to the lower index); and **reconstruction** top-down — a kept node with estimate e
//!   and noisy children c₁…c₄ gives them cᵢ + (e − Σc)/4 (mean consistency), a node not kept
//!   spreads its estimate evenly over its children. The release is the level-d estimates. ε-DP.
//!   The noisy tree's bound is attained on the witness (the added trajectory's points in one
//!   cell move every level by P); the heatmap, a lossy post-processing of it (it drops the sum
//!   of each refined node's children), may lose part of that: the default audit's lower bound on
//!   the witness is ε ≥ 0.38.
//! * `heatmap-quadtree-raw-topw`: the truncation picks the top w nodes by their **raw** counts.
//!   Which regions are refined is then a deterministic function of the data: on the witness
//!   (adding one trajectory swaps quadrant 1 for quadrant 2 in the top 2) the cells of a refined
//!   quadrant carry leaf noise while a truncated quadrant's four cells are equal copies of a
//!   quarter of one noisy count. The event "the four cells of quadrant 1 are equal" has
//!   probability 1 on one side and 0 on the other, so the mechanism is not (ε′, δ)-DP for any ε′
//!   and δ < 1. Correct when no truncation happens (d = 1).
//! * `heatmap-quadtree-per-point-sensitivity`: the noise is Laplace(d/ε), calibrated as if a
//!   record were one point, ignoring that a trajectory touches up to P nodes per level: the noisy
//!   tree moves by L1 norm d·P at scale d/ε, true guarantee P·ε-DP (tight for the noisy tree;
//!   the released heatmap is a post-processing, so at most P·ε). Correct when P = 1.
//!
//! The witness of the correct entries and of the sensitivity twin: four trajectories with every
//! point at (0.1, 0.1) (quadrant 0 is then refined with overwhelming probability), against the same
//! plus a trajectory whose P points are all at (0.01, 0.01) (cell (0, 0) at every depth ≤ 4).

use rand::Rng;

use super::correct::epsilon_param;
use super::declare::{integer_param, pure_status, vector};
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::Result;
use crate::mechanism::Params;
use crate::noise::LaplaceNoise;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "heatmap-laplace-cells",
            summary: "heatmap of trajectories' points: every grid cell plus Laplace(P/ε)",
            build: |p| build(p, Variant::Cells),
        },
        Spec {
            id: "heatmap-quadtree",
            summary: "heatmap from a noisy quadtree (Laplace d·P/ε per node), top-w truncation and top-down reconstruction",
            build: |p| build(p, Variant::Quadtree),
        },
        Spec {
            id: "heatmap-quadtree-raw-topw",
            summary: "quadtree heatmap whose top-w truncation is chosen on the raw counts",
            build: |p| build(p, Variant::RawTopW),
        },
        Spec {
            id: "heatmap-quadtree-per-point-sensitivity",
            summary: "quadtree heatmap with noise d/ε per node, ignoring that a trajectory touches P nodes per level",
            build: |p| build(p, Variant::PerPoint),
        },
    ]
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Variant {
    Cells,
    Quadtree,
    RawTopW,
    PerPoint,
}

impl Variant {
    fn id(self) -> &'static str {
        match self {
            Self::Cells => "heatmap-laplace-cells",
            Self::Quadtree => "heatmap-quadtree",
            Self::RawTopW => "heatmap-quadtree-raw-topw",
            Self::PerPoint => "heatmap-quadtree-per-point-sensitivity",
        }
    }
}

/// The raw counts of every level ℓ = 1…depth (level ℓ row-major, 4^ℓ nodes).
fn level_counts(data: &Dataset, depth: usize) -> Vec<Vec<f64>> {
    (1..=depth)
        .map(|level| {
            let side = 1usize << level;
            let mut counts = vec![0.0; side * side];
            for r in data.iter() {
                for p in r.as_slice().unwrap_or(&[]).chunks_exact(2) {
                    let cell = |v: f64| ((v * side as f64) as usize).min(side - 1);
                    counts[cell(p[1]) * side + cell(p[0])] += 1.0;
                }
            }
            counts
        })
        .collect()
}

/// The four children (row-major indices at level ℓ + 1) of node `i` at level ℓ (side 2^ℓ).
fn children(i: usize, side: usize) -> [usize; 4] {
    let (x, y) = (i % side, i / side);
    let s = 2 * side;
    [
        2 * y * s + 2 * x,
        2 * y * s + 2 * x + 1,
        (2 * y + 1) * s + 2 * x,
        (2 * y + 1) * s + 2 * x + 1,
    ]
}

/// Top-w truncation and top-down reconstruction of a noisy tree (levels 1…d), ranking
/// candidates by `scores` (the noisy tree itself when correct). Returns the level-d estimates.
fn reconstruct(noisy: &[Vec<f64>], scores: &[Vec<f64>], top_w: usize) -> Vec<f64> {
    let depth = noisy.len();
    let mut estimate = noisy[0].clone();
    let mut candidates: Vec<usize> = (0..4).collect();
    for level in 1..depth {
        let side = 1usize << level;
        // Stable sort, descending: ties go to the lower index.
        candidates.sort_by(|&a, &b| scores[level - 1][b].total_cmp(&scores[level - 1][a]));
        candidates.truncate(top_w);
        let mut kept = vec![false; side * side];
        for &c in &candidates {
            kept[c] = true;
        }
        let mut next = vec![0.0; 4 * side * side];
        let mut next_candidates = Vec::new();
        for (i, &e) in estimate.iter().enumerate() {
            let ch = children(i, side);
            if kept[i] {
                let c = &noisy[level];
                let gap = (e - ch.iter().map(|&j| c[j]).sum::<f64>()) / 4.0;
                for &j in &ch {
                    next[j] = c[j] + gap;
                }
                next_candidates.extend(ch);
            } else {
                for &j in &ch {
                    next[j] = e / 4.0;
                }
            }
        }
        estimate = next;
        candidates = next_candidates;
    }
    estimate
}

/// A point inside quadrant `q` (row-major, y outer: q = 2·qy + qx), strictly inside a cell at
/// every depth ≤ 4 (0.1 and 0.6 are not multiples of 1/16).
fn point_in_quadrant(q: usize) -> [f64; 2] {
    [0.1 + 0.5 * (q % 2) as f64, 0.1 + 0.5 * (q / 2) as f64]
}

/// A trajectory with all its points at [`point_in_quadrant`] `q`.
fn trajectory(points: usize, q: usize) -> Vec<f64> {
    (0..points).flat_map(|_| point_in_quadrant(q)).collect()
}

fn build(params: &mut Params, variant: Variant) -> Result<Entry> {
    let id = variant.id();
    let epsilon = epsilon_param(params, id)?;
    let depth = integer_param(params, id, "depth", 2, 1, 4)?;
    let points = integer_param(params, id, "points", 2, 1, 8)?;
    let top_w = if variant == Variant::Cells {
        4
    } else {
        integer_param(params, id, "top_w", 2, 1, 3)?
    };
    let dim = 2 * points;
    let cells = 1usize << (2 * depth);
    // Per-node noise: the cells' L1 sensitivity P (baseline), d·P over the d levels (quadtree),
    // d (the per-point twin's mistake).
    let (scale, sensitivity) = match variant {
        Variant::Cells => (points as f64 / epsilon, points as f64),
        Variant::PerPoint => (depth as f64 / epsilon, (depth * points) as f64),
        Variant::Quadtree | Variant::RawTopW => {
            ((depth * points) as f64 / epsilon, (depth * points) as f64)
        }
    };
    let noise = LaplaceNoise::new(scale)?;
    let m = vector(
        id,
        PrivacyClaim::pure(epsilon)?,
        Neighboring::AddRemove,
        RecordDomain::real(0.0, 1.0, dim),
        cells,
        move |d: &Dataset| level_counts(d, depth),
        move |raw, rng: &mut dyn Rng, out| {
            if variant == Variant::Cells {
                out.extend(raw[depth - 1].iter().map(|c| c + noise.sample(rng)));
                return;
            }
            let noisy: Vec<Vec<f64>> = raw
                .iter()
                .map(|level| level.iter().map(|c| c + noise.sample(rng)).collect())
                .collect();
            let scores = if variant == Variant::RawTopW {
                raw
            } else {
                &noisy
            };
            out.extend(reconstruct(&noisy, scores, top_w));
        },
    );
    // The Laplace bound on the released noisy tree (or cells): ε·sensitivity/(ε·scale).
    let true_epsilon = sensitivity / scale;
    // Raw-count truncation leaks whenever some level is truncated: levels 1…d−1 with d ≥ 2
    // (top_w ≤ 3 < 4 candidates at level 1).
    let raw_selection = variant == Variant::RawTopW && depth >= 2;
    let witness = if raw_selection {
        // Quadrants 0…w−2 hold two trajectories each (2P points), quadrants w−1 and w one each
        // (P points: a tie, the lower index w−1 is kept); the added trajectory puts P more
        // points in quadrant w, which displaces w − 1 (and ties 2P with the quadrants before
        // it, which keep their place by the lower index).
        let mut rows = Vec::new();
        for q in 0..top_w - 1 {
            rows.push(trajectory(points, q));
            rows.push(trajectory(points, q));
        }
        rows.push(trajectory(points, top_w - 1));
        rows.push(trajectory(points, top_w));
        let d = Dataset::vectors(dim, &rows)?;
        DatasetPair::new(
            d.clone(),
            d.with_record(&trajectory(points, top_w))?,
            Neighboring::AddRemove,
        )?
    } else {
        let base = (0..4)
            .map(|_| (0..points).flat_map(|_| [0.1, 0.1]).collect::<Vec<_>>())
            .collect::<Vec<_>>();
        let d = Dataset::vectors(dim, &base)?;
        let corner = (0..points).flat_map(|_| [0.01, 0.01]).collect::<Vec<_>>();
        DatasetPair::new(d.clone(), d.with_record(&corner)?, Neighboring::AddRemove)?
    };
    let status = if raw_selection {
        Status::Buggy {
            bug: format!(
                "the top-{top_w} truncation is chosen on the raw counts: which quadrants are \
                 refined (leaf noise) or flat (equal cells) is a deterministic function of the data"
            ),
            true_guarantee: "not (ε′, δ)-DP for any ε′ and δ < 1".into(),
        }
    } else {
        pure_status(
            true_epsilon,
            epsilon,
            || {
                format!(
                    "Laplace({depth}/ε) per node, calibrated for one point per record; a \
                     trajectory of {points} points moves each of the {depth} levels by {points}"
                )
            },
            " (P·ε)",
        )
    };
    Ok(Entry {
        mechanism: Box::new(m),
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
        assert!(!buggy("heatmap-laplace-cells", Params::new()));
        assert!(!buggy("heatmap-quadtree", Params::new()));
        assert!(!buggy("heatmap-quadtree", Params::new().set("points", 5.0)));
        assert!(buggy("heatmap-quadtree-raw-topw", Params::new()));
        assert!(!buggy(
            "heatmap-quadtree-raw-topw",
            Params::new().set("depth", 1.0)
        ));
        assert!(buggy(
            "heatmap-quadtree-per-point-sensitivity",
            Params::new()
        ));
        assert!(!buggy(
            "heatmap-quadtree-per-point-sensitivity",
            Params::new().set("points", 1.0)
        ));
    }

    #[test]
    fn bad_parameters_name_the_parameter() {
        for (name, v) in [
            ("epsilon", 0.0),
            ("epsilon", -2.0),
            ("depth", 0.0),
            ("depth", 1.5),
            ("points", 0.0),
            ("top_w", 0.0),
            ("top_w", 4.0),
        ] {
            let err = build_entry("heatmap-quadtree", &Params::new().set(name, v))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name) && err.contains("allowed"), "{err}");
        }
    }

    /// Every top_w and depth gives a valid witness whose top-w set changes (raw twin).
    #[test]
    fn raw_witness_changes_the_kept_quadrants() {
        for w in 1..=3 {
            for depth in 2..=3 {
                for points in 1..=3 {
                    let p = Params::new()
                        .set("top_w", w as f64)
                        .set("depth", depth as f64)
                        .set("points", points as f64);
                    let e = build_entry("heatmap-quadtree-raw-topw", &p).unwrap();
                    let top = |d: &Dataset| {
                        let c = &level_counts(d, depth)[0];
                        let mut idx: Vec<usize> = (0..4).collect();
                        idx.sort_by(|&a, &b| c[b].total_cmp(&c[a]));
                        idx.truncate(w);
                        idx.sort();
                        idx
                    };
                    assert_ne!(
                        top(e.witness.first()),
                        top(e.witness.second()),
                        "w = {w}, depth = {depth}, points = {points}"
                    );
                }
            }
        }
    }

    /// Without noise, reconstruction of a fully kept tree returns the true cells; a truncated
    /// quadrant is spread evenly.
    #[test]
    fn reconstruction_is_exact_without_noise() {
        let d = Dataset::vectors(2, &[vec![0.1, 0.1], vec![0.3, 0.1], vec![0.9, 0.9]]).unwrap();
        let raw = level_counts(&d, 2);
        let full = reconstruct(&raw, &raw, 4);
        assert_eq!(full, raw[1]);
        let cut = reconstruct(&raw, &raw, 1);
        // Quadrant 0 (two points) is kept; quadrant 3's single point is spread over its cells.
        assert_eq!(cut[0] + cut[1], 2.0);
        for j in [10, 11, 14, 15] {
            assert_eq!(cut[j], 0.25);
        }
    }
}
