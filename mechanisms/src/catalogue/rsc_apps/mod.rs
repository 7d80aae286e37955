//! Applications of reorder-slice-compute (RSC) from Google Research's post "Differentially
//! private median and more" (seed 002) and the paper behind it (Cohen, Lyu, Nelson, Sarlós &
//! Stemmer 2023, STOC): a private interval point and private learning of an axis-aligned
//! rectangle (d = 1 and d = 2), each declared with the k-free RSC bound
//! ([`crate::rsc_bound`], claim `rsc:K:EPS0:DELTA`), each with a twin that returns a data point.
//!
//! | id | steps k | claim (defaults) | true guarantee |
//! |---|---|---|---|
//! | `rsc-interval-point` | 1 | `rsc:1:0.25:1e-3` = (3.609, 10⁻³)-DP | valid (RSC bound) |
//! | `rsc-interval-point-snap-to-data` | 1 | the same | not ε′-DP for any finite ε′ |
//! | `rsc-rectangle-1d` | 2 | `rsc:2:0.25:1e-3` | valid |
//! | `rsc-rectangle-1d-rank-pick` | 2 | the same | not ε′-DP for any finite ε′ |
//! | `rsc-rectangle-2d` | 4 | `rsc:4:0.25:1e-3` | valid |
//! | `rsc-rectangle-2d-rank-pick` | 4 | the same | not ε′-DP for any finite ε′ |
//!
//! # What the post describes, and what is kept
//! *Interval point*: return a point of the ordered domain X between the minimum and the maximum
//! of the data. The paper's RSC algorithm recurses over log* |X| steps, remapping the domain to
//! its logarithm at each; the entry keeps one RSC step over a small domain (B = `bins` = 8
//! values): the recursion's domain remapping is left out, its slice-and-compute step is kept.
//! *Axis-aligned rectangle* ("for each axis, two RSC steps": slice out the N smallest positive
//! points and compute a private interval point as a_i, then the N largest as b_i): kept as
//! the post says, with d = 1 (k = 2) and d = 2 (k = 4); each axis orders the records
//! differently, the "full flexibility of RSC".
//!
//! # Records, order and slices
//! Interval point: records are integers in {0, …, B − 1}. Rectangle: records (x_1, …, x_d, ℓ)
//! in {0, …, B − 1}^{d+1}, positive when 2ℓ ≥ B (the domain is one integer box; the label is
//! read as a threshold, as in `rsc_steps.rs`). Step t has a fixed order: positives first, then by
//! the step's coordinate (ascending for the interval point and for a_i, descending for b_i),
//! ties by the whole record. That is a total order on record values, so the order of D + x is
//! the order of D with x inserted (adjacency-preserving, as the RSC theorem asks). Step t slices
//! out the first m + G_t remaining records (`slice` = m, default 3; G_t ~ Geom(1 − e^{−ε₀}),
//! P(G = g) = (1 − e^{−ε₀})e^{−ε₀g}: the paper's slice noise), all of them when fewer remain;
//! the size stays internal. Sliced records are removed.
//!
//! # The compute step and its privacy
//! On the slice's positive values v_1 ≤ … ≤ v_j along the step's coordinate, the exponential
//! mechanism over y ∈ {0, …, B − 1} with depth u(y) = min(#{v ≤ y}, #{v ≥ y}) and P(y) ∝
//! e^{ε₀u(y)}. Adding a record to the slice raises each count by at most 1 and lowers none, so
//! u′ − u ∈ [0, 1] and Z′ ≥ Z: P′(y)/P(y) = e^{ε₀(u′ − u)}·Z/Z′ ∈ [e^{−ε₀}, e^{ε₀}] (the
//! monotone exponential mechanism, McSherry & Talwar 2007): each step is pure ε₀-DP (`epsilon`,
//! default 0.25) on slices that differ by one record. With no positive in the slice u ≡ 0 and
//! y is uniform. Utility (the post's): when the slice holds at least two positives with many
//! grid points of depth ≥ 1 between them, the answer lies between them with high probability;
//! the defaults favour audit resolution over accuracy.
//!
//! # Claim (the correct entries)
//! The run is an RSC algorithm with k pure ε₀-DP steps, so [`crate::rsc_bound`] gives
//! (max(2ε₀, ln n + 2(n − 1)ε₀), (1 − e^{−ε₀})^n)-DP for every n ≥ 1, whatever k; the entries
//! declare it at δ = `delta` (default 10⁻³): n = 5 and ε = ln 5 + 8·0.25 = 3.609 at the
//! defaults. Composition would give 2kε₀ (each slice one swap apart); the RSC bound is the
//! smaller one only for k > ε/(2ε₀) ≈ 7 here, so at these small k it is the looser: the entries
//! demonstrate that the k-free claim holds, not that it is tight.
//! Tests check the bound against the exact output pmf (a sum over the hidden sizes) on random
//! small neighboring pairs, for n = 1, …, 4.
//!
//! # Bugs (the twins) and their true guarantee
//! - `rsc-interval-point-snap-to-data`: the developer snaps the exponential mechanism's answer
//!   to the nearest record of the slice (ties to the lower), "so the answer is always between
//!   the data's min and max". The output is then a record's value whenever the slice is not
//!   empty. Witness: D = four records at 5, D′ = D + 0 (B = 8). On D every slice holds only 5s,
//!   so P_D(0) = 0; on D′ the 0 comes first in the order and is always sliced, and y ∈ {0, 1, 2}
//!   snaps to it: P_{D′}(0) > 0 (0.36 at the defaults, computed exactly in the tests). Not
//!   ε′-DP for any finite ε′; H_{e^ε}(P_{D′} ‖ P_D) ≥ P_{D′}(0) for every ε.
//! - `rsc-rectangle-*-rank-pick`: the compute step runs the exponential mechanism over the
//!   *ranks* 1…j of the slice's positives (utility min(r, j + 1 − r)) and returns the value at
//!   the chosen rank: "an exponential mechanism, so private". Its output is always a positive
//!   record's coordinate. Witness: D = positives at (3, …), (4, …), (5, …), (6, …) on every
//!   axis, D′ = D + a positive at 0 on every axis. The first step (a_1) slices at least m = 3
//!   records and D has four positives ahead of any negative, so on D a_1 ≥ 3 always; on D′ the
//!   new record is first and a_1 = 0 whenever rank 1 is picked: P_{D′}(a_1 = 0) > 0 = P_D(a_1 =
//!   0). Not ε′-DP for any finite ε′.

use rand::Rng;
use rand::distr::{Distribution, weighted::WeightedIndex};
use rand_distr::Geometric;

use super::declare::vector;
use super::{Entry, Spec, Status};
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::mechanism::Params;
use crate::rsc_bound::RscBound;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "rsc-interval-point",
            summary: "private interval point by one reorder-slice-compute step: slice the m + Geom smallest, exponential mechanism by depth (k-free RSC claim)",
            build: interval_point,
        },
        Spec {
            id: "rsc-interval-point-snap-to-data",
            summary: "RSC interval point whose answer is snapped to the nearest record of the slice (returns a data point)",
            build: interval_point_snap,
        },
        Spec {
            id: "rsc-rectangle-1d",
            summary: "private interval learning (d = 1): two RSC steps slicing the lowest and highest positives, an interval point each (k-free RSC claim)",
            build: rectangle_1d,
        },
        Spec {
            id: "rsc-rectangle-1d-rank-pick",
            summary: "RSC interval learning whose compute step picks a rank of the slice and returns that record's value",
            build: rectangle_1d_rank,
        },
        Spec {
            id: "rsc-rectangle-2d",
            summary: "private axis-aligned rectangle (d = 2): two RSC steps per axis, each a private interval point of a slice (k-free RSC claim)",
            build: rectangle_2d,
        },
        Spec {
            id: "rsc-rectangle-2d-rank-pick",
            summary: "RSC rectangle learning whose compute steps pick a rank of the slice and return that record's value",
            build: rectangle_2d_rank,
        },
    ]
}

/// Which application.
#[derive(Clone, Copy, Debug, PartialEq)]
enum App {
    /// One step over scalars.
    Interval,
    /// Two steps per axis over (x_1, …, x_d, ℓ).
    Rectangle(usize),
}

/// What a step computes on its slice.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Compute {
    /// The exponential mechanism over the grid by depth (correct).
    Grid,
    /// The same, snapped to the nearest slice value (twin).
    SnapToData,
    /// The exponential mechanism over the slice's ranks, returning the value (twin).
    RankPick,
}

#[derive(Clone, Copy, Debug)]
struct Settings {
    app: App,
    compute: Compute,
    /// B: grid {0, …, B − 1}.
    bins: usize,
    /// m: the slice's least size.
    slice: usize,
    /// ε₀ of each step (and of the slice-size noise).
    epsilon0: f64,
}

impl Settings {
    fn steps(&self) -> usize {
        match self.app {
            App::Interval => 1,
            App::Rectangle(d) => 2 * d,
        }
    }

    fn record_dim(&self) -> usize {
        match self.app {
            App::Interval => 1,
            App::Rectangle(d) => d + 1,
        }
    }

    fn is_positive(&self, r: &[i64]) -> bool {
        match self.app {
            App::Interval => true,
            App::Rectangle(d) => 2 * r[d] >= self.bins as i64,
        }
    }

    /// Step t's coordinate and direction (descending for the upper bounds b_i).
    fn step(&self, t: usize) -> (usize, bool) {
        match self.app {
            App::Interval => (0, false),
            App::Rectangle(_) => (t / 2, t % 2 == 1),
        }
    }
}

/// The records and each step's order (indices, first sliced first).
struct Prepared {
    records: Vec<Vec<i64>>,
    orders: Vec<Vec<usize>>,
}

fn prepare(s: &Settings, data: &Dataset) -> Prepared {
    // The domain check keeps every coordinate a whole number in {0, …, B − 1}.
    let records: Vec<Vec<i64>> = data
        .iter()
        .map(|r| r.iter().map(|v| v.round() as i64).collect())
        .collect();
    let orders = (0..s.steps())
        .map(|t| {
            let (axis, descending) = s.step(t);
            let key = |r: &Vec<i64>| {
                let v = if descending { -r[axis] } else { r[axis] };
                (!s.is_positive(r), v)
            };
            let mut idx: Vec<usize> = (0..records.len()).collect();
            idx.sort_by(|&a, &b| {
                key(&records[a])
                    .cmp(&key(&records[b]))
                    .then_with(|| records[a].cmp(&records[b]))
            });
            idx
        })
        .collect();
    Prepared { records, orders }
}

/// The slice's positive values along step t's coordinate, ascending.
fn slice_values(s: &Settings, p: &Prepared, t: usize, slice: &[usize]) -> Vec<i64> {
    let (axis, _) = s.step(t);
    let mut v: Vec<i64> = slice
        .iter()
        .map(|&i| &p.records[i])
        .filter(|r| s.is_positive(r))
        .map(|r| r[axis])
        .collect();
    v.sort_unstable();
    v
}

/// Exponential-mechanism weights e^{ε₀(u − max u)} for utilities `u`.
fn em(u: &[f64], epsilon0: f64) -> Vec<f64> {
    let top = u.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    u.iter().map(|x| (epsilon0 * (x - top)).exp()).collect()
}

/// The step's output distribution given its slice's positive values (ascending): (value,
/// weight) pairs, weights not normalized.
fn step_pmf(s: &Settings, values: &[i64]) -> Vec<(i64, f64)> {
    let grid = || {
        let depth: Vec<f64> = (0..s.bins as i64)
            .map(|y| {
                let below = values.iter().filter(|&&v| v <= y).count();
                let above = values.iter().filter(|&&v| v >= y).count();
                below.min(above) as f64
            })
            .collect();
        (0..s.bins as i64).zip(em(&depth, s.epsilon0)).collect::<Vec<_>>()
    };
    match s.compute {
        Compute::Grid => grid(),
        Compute::SnapToData if values.is_empty() => grid(),
        Compute::SnapToData => {
            let mut out: Vec<(i64, f64)> = Vec::new();
            for (y, w) in grid() {
                // Nearest value, ties to the lower (values ascending: the first at least distance).
                let near = values
                    .iter()
                    .copied()
                    .min_by_key(|v| ((v - y).abs(), *v))
                    .unwrap_or(y);
                match out.iter_mut().find(|(v, _)| *v == near) {
                    Some((_, acc)) => *acc += w,
                    None => out.push((near, w)),
                }
            }
            out
        }
        Compute::RankPick if values.is_empty() => grid(),
        Compute::RankPick => {
            let j = values.len();
            let depth: Vec<f64> = (1..=j).map(|r| r.min(j + 1 - r) as f64).collect();
            values.iter().copied().zip(em(&depth, s.epsilon0)).collect()
        }
    }
}

fn draw(pmf: &[(i64, f64)], rng: &mut dyn Rng) -> f64 {
    // The weights are finite, non-negative and the largest is 1, so the distribution exists;
    // the fallback value is never reached.
    let w: Vec<f64> = pmf.iter().map(|(_, w)| *w).collect();
    WeightedIndex::new(&w).map_or(0.0, |d| pmf[d.sample(rng)].0 as f64)
}

/// One release: k steps, each slicing the first m + G_t remaining records of its order.
fn release(s: &Settings, p: &Prepared, geo: &Geometric, rng: &mut dyn Rng, out: &mut Vec<f64>) {
    let mut removed = vec![false; p.records.len()];
    for (t, order) in p.orders.iter().enumerate() {
        let extra = usize::try_from(geo.sample(&mut *rng)).unwrap_or(usize::MAX);
        let size = s.slice.saturating_add(extra);
        let slice: Vec<usize> = order
            .iter()
            .copied()
            .filter(|&i| !removed[i])
            .take(size)
            .collect();
        for &i in &slice {
            removed[i] = true;
        }
        out.push(draw(&step_pmf(s, &slice_values(s, p, t, &slice)), rng));
    }
}

/// The witness (module docs): D = four positives at 3, 4, 5, 6 on every axis (four at 5 for the
/// interval point), D′ = D + a positive at 0 on every axis.
fn witness(s: &Settings) -> Result<DatasetPair> {
    let top = (s.bins - 1) as f64;
    let (d, extra) = match s.app {
        App::Interval => (Dataset::scalars(vec![5.0; 4])?, vec![0.0]),
        App::Rectangle(dim) => {
            let rows: Vec<Vec<f64>> = (3..=6)
                .map(|v| {
                    let mut r = vec![f64::from(v); dim];
                    r.push(top);
                    r
                })
                .collect();
            let mut extra = vec![0.0; dim];
            extra.push(top);
            (Dataset::vectors(dim + 1, &rows)?, extra)
        }
    };
    DatasetPair::new(d.clone(), d.with_record(&extra)?, Neighboring::AddRemove)
}

fn build(params: &mut Params, id: &'static str, app: App, compute: Compute) -> Result<Entry> {
    let epsilon0 = params.take_in(id, "epsilon", 0.25, 0.01, 10.0)?;
    let bins = params.take_integer_in(id, "bins", 8.0, 8.0, 32.0)?;
    let slice = params.take_integer_in(id, "slice", 3.0, 1.0, 16.0)?;
    let delta = params.take_in(id, "delta", 1e-3, 1e-12, 0.5)?;
    let s = Settings {
        app,
        compute,
        bins,
        slice,
        epsilon0,
    };
    let bound = RscBound::new(s.steps() as u64, epsilon0, delta)?;
    let geo = Geometric::new(-(-epsilon0).exp_m1()).map_err(|e| {
        MechanismError::InvalidParameter {
            mechanism: id.into(),
            message: format!(
                "epsilon = {epsilon0} gives the slice noise Geom(1 − e^(−ε)) an invalid p ({e}); allowed: 0.01 ≤ epsilon ≤ 10"
            ),
        }
    })?;
    let status = match compute {
        Compute::Grid => Status::Correct,
        Compute::SnapToData => Status::Buggy {
            bug: "the answer is snapped to the nearest record of the slice, so it is always a record's value".into(),
            true_guarantee: "not ε′-DP for any finite ε′: on the witness the added record's value has probability 0 without it and > 0 with it".into(),
        },
        Compute::RankPick => Status::Buggy {
            bug: "each compute step picks a rank of the slice's positives by the exponential mechanism and returns that record's value".into(),
            true_guarantee: "not ε′-DP for any finite ε′: on the witness a_1 = 0 has probability 0 without the added record and > 0 with it".into(),
        },
    };
    let m = vector(
        id,
        bound.claim()?,
        Neighboring::AddRemove,
        RecordDomain::integer(0, bins as i64 - 1, s.record_dim()),
        s.steps(),
        move |d: &Dataset| prepare(&s, d),
        move |p: &Prepared, rng: &mut dyn Rng, out: &mut Vec<f64>| release(&s, p, &geo, rng, out),
    )
    .with_claim_source(bound.source());
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness: witness(&s)?,
    })
}

fn interval_point(params: &mut Params) -> Result<Entry> {
    build(params, "rsc-interval-point", App::Interval, Compute::Grid)
}

fn interval_point_snap(params: &mut Params) -> Result<Entry> {
    build(
        params,
        "rsc-interval-point-snap-to-data",
        App::Interval,
        Compute::SnapToData,
    )
}

fn rectangle_1d(params: &mut Params) -> Result<Entry> {
    build(params, "rsc-rectangle-1d", App::Rectangle(1), Compute::Grid)
}

fn rectangle_1d_rank(params: &mut Params) -> Result<Entry> {
    build(
        params,
        "rsc-rectangle-1d-rank-pick",
        App::Rectangle(1),
        Compute::RankPick,
    )
}

fn rectangle_2d(params: &mut Params) -> Result<Entry> {
    build(params, "rsc-rectangle-2d", App::Rectangle(2), Compute::Grid)
}

fn rectangle_2d_rank(params: &mut Params) -> Result<Entry> {
    build(
        params,
        "rsc-rectangle-2d-rank-pick",
        App::Rectangle(2),
        Compute::RankPick,
    )
}

#[cfg(test)]
mod tests;
