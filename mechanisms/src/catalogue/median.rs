//! A private median in the reorder-slice-compute shape (RSC; Cohen, Lyu, Nelson, Sarlós &
//! Stemmer 2023, "Optimal differentially private learning of thresholds and quasi-concave
//! optimization", described in Google Research's post on private medians), simplified to a
//! version whose guarantee is proved below, with two twins.
//!
//! # What is simplified
//! RSC reorders the data, selects a *slice* of about log(1/δ)/ε consecutive records at a noisy
//! position, and runs on the slice a compute step that only has to be private for slices of
//! neighbors; the paper's compute steps and (ε, δ) analysis are what give its O(log* |X|)
//! sample complexity. Here: reorder = sort; slice = τ consecutive sorted records whose position
//! comes from a noisy count (Laplace); compute = the exponential-mechanism median of the slice
//! over the grid. The guarantee is pure ε-DP by a two-step composition, with no δ; the
//! recursion and the (ε, δ) compute steps of the paper are left out.
//!
//! # Records and neighbors
//! Records are integers in {0, …, B − 1} (`bins` = B); add/remove neighbors.
//!
//! # The stability lemma
//! Pad the sorted records x_(0) ≤ … ≤ x_(n−1) to a bi-infinite sorted sequence y_i = 0 for
//! i < 0, x_(i) for 0 ≤ i < n, B − 1 for i ≥ n. Adding a record x that lands at position p gives
//! y'_i = y_i (i < p), y'_p = x, y'_i = y_{i−1} (i > p) (also in the top padding). For any
//! window W_a = [a, a + τ), the multisets y'[W_a] and y[W_a] differ by at most one element
//! swapped (p < a: y_{a−1} in, y_{a+τ−1} out; p ∈ W_a: x in, y_{a+τ−1} out; p ≥ a + τ:
//! equal), and so do y'[W_{a+1}] and y[W_a] (p ≤ a: equal; p ∈ (a, a + τ]: x in, y_a out;
//! p > a + τ: y_{a+τ} in, y_a out). Removing a record is the same with the roles swapped.
//!
//! # The compute step
//! The exponential mechanism on a slice S of τ values: P(y) ∝ exp(ε_c·u_S(y)/2) over the
//! candidates y ∈ {0, …, B − 1}, u_S(y) = −|#{s ∈ S : s ≤ y} − τ/2|. Swapping one element of S
//! moves #{s ≤ y} by at most 1, so u has sensitivity 1 and the step is ε_c-DP for slices that
//! differ by one swap (McSherry & Talwar 2007; Dwork & Roth 2014, Theorem 3.10).

use rand::Rng;
use rand::distr::{Distribution, weighted::WeightedIndex};

use super::correct::epsilon_param;
use super::declare::scalar;
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::Result;
use crate::mechanism::Params;
use crate::noise::LaplaceNoise;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "rsc-median",
            summary: "median by reorder-slice-compute: slice at a noisy-count position, exponential mechanism on it",
            build: rsc_median,
        },
        Spec {
            id: "rsc-median-exact-slice",
            summary: "reorder-slice-compute median with the slice chosen without noise (keeps its claim)",
            build: rsc_median_exact_slice,
        },
        Spec {
            id: "rsc-median-slice-range",
            summary: "reorder-slice-compute median whose compute step searches only the slice's range",
            build: rsc_median_slice_range,
        },
    ]
}

/// How the slice is chosen and what the compute step searches.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    /// Slice position from a noisy count (ε/2), exponential mechanism over the grid (ε/2).
    NoisySlice,
    /// Slice position from the true count, exponential mechanism over the grid with all of ε.
    ExactSlice,
    /// Slice position from the true count, exponential mechanism over [min S, max S] only.
    SliceRange,
}

/// The slice y[a, a + τ) of the padded sorted sequence (module docs).
fn slice(sorted: &[f64], top: f64, a: i64, tau: usize) -> Vec<f64> {
    (a..a + tau as i64)
        .map(|i| {
            if i < 0 {
                0.0
            } else {
                sorted.get(i as usize).copied().unwrap_or(top)
            }
        })
        .collect()
}

/// Slice position for a (true or noisy) count: the window centred on the middle, rounded.
fn position(count: f64, tau: usize) -> i64 {
    ((count - tau as f64) / 2.0).round() as i64
}

/// Exponential-mechanism weights exp(ε_c·u_S(y)/2) over candidates 0…B − 1 (zero outside
/// [lo, hi]), shifted by the largest exponent so that none overflows.
fn weights(s: &[f64], bins: usize, eps_c: f64, lo: f64, hi: f64) -> Vec<f64> {
    let half = s.len() as f64 / 2.0;
    let exponents: Vec<f64> = (0..bins)
        .map(|y| {
            let y = y as f64;
            if y < lo || y > hi {
                return f64::NEG_INFINITY;
            }
            let at_most = s.iter().filter(|&&v| v <= y).count() as f64;
            -eps_c * (at_most - half).abs() / 2.0
        })
        .collect();
    let top = exponents.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    exponents.iter().map(|e| (e - top).exp()).collect()
}

fn draw(w: &[f64], rng: &mut dyn Rng) -> f64 {
    // The weights are finite, non-negative and at least one is 1 (the maximum), so the
    // distribution always exists; index 0 is never reached through the fallback.
    WeightedIndex::new(w).map_or(0.0, |d| d.sample(rng) as f64)
}

fn build(params: &mut Params, id: &'static str, variant: Variant) -> Result<Entry> {
    let epsilon = epsilon_param(params, id)?;
    let bins = params.take_integer_in(id, "bins", 16.0, 2.0, 64.0)?;
    let tau = params.take_integer_in(id, "slice", 5.0, 1.0, 101.0)?;
    let top = (bins - 1) as f64;
    let count_noise = LaplaceNoise::new(2.0 / epsilon)?;
    let m = scalar(
        id,
        PrivacyClaim::pure(epsilon)?,
        RecordDomain::integer(0, bins as i64 - 1, 1),
        move |d| {
            let mut sorted = d.column(0);
            sorted.sort_by(f64::total_cmp);
            let n = sorted.len() as f64;
            // The exact-slice variants compute their one distribution once per call.
            let fixed = match variant {
                Variant::NoisySlice => Vec::new(),
                Variant::ExactSlice => weights(
                    &slice(&sorted, top, position(n, tau), tau),
                    bins,
                    epsilon,
                    0.0,
                    top,
                ),
                Variant::SliceRange => {
                    let s = slice(&sorted, top, position(n, tau), tau);
                    let lo = s.iter().copied().fold(f64::INFINITY, f64::min);
                    let hi = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    weights(&s, bins, epsilon, lo, hi)
                }
            };
            (sorted, n, fixed)
        },
        move |(sorted, n, fixed), rng| match variant {
            Variant::NoisySlice => {
                let a = position(n + count_noise.sample(rng), tau);
                draw(
                    &weights(&slice(sorted, top, a, tau), bins, epsilon / 2.0, 0.0, top),
                    rng,
                )
            }
            Variant::ExactSlice | Variant::SliceRange => draw(fixed, rng),
        },
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status: status(variant, bins),
        witness: witness(tau)?,
    })
}

/// The true guarantees.
///
/// - Noisy slice: the count n has sensitivity 1, so ñ = n + Lap(2/ε) is (ε/2)-DP; the position
///   a(ñ) is its post-processing. Given a, the slices of neighbors differ by one swap (the
///   stability lemma, same window), so the compute step is (ε/2)-DP; adaptive composition
///   (Dwork & Roth 2014, Theorem 3.16) gives ε-DP for (ñ, y), and releasing y alone is
///   post-processing.
/// - Exact slice: a(n + 1) − a(n) ∈ {0, 1} (the centre moves by ½ before rounding), and the
///   stability lemma covers both the same window and the window one step up: the slices of
///   neighbors still differ by one swap, and the compute step at ε is ε-DP. The slice noise is
///   *not* what makes a rank slice private: a sorted window is already stable, and the twin
///   keeps its claim (and is more accurate, spending all of ε on the compute step). Noise in
///   the slice matters in RSC when the reorder or the slice boundary is data-dependent beyond
///   ranks; for the median it is a budget cost only.
/// - Slice range: candidates outside [min S, max S] get probability 0. When the exact slice of
///   D is constant (all records equal) and a neighbor's slice is not, the neighbor's output
///   takes values that D's never takes: not ε′-DP for any finite ε′ (needs B ≥ 2, always true).
fn status(variant: Variant, bins: usize) -> Status {
    match variant {
        Variant::NoisySlice | Variant::ExactSlice => Status::Correct,
        Variant::SliceRange if bins >= 2 => Status::Buggy {
            bug: "the compute step searches only the range [min S, max S] of the exact slice, \
                  so the support of the output follows the data"
                .into(),
            true_guarantee: "not ε′-DP for any finite ε′ (an output has probability 0 on one \
                             neighbor and > 0 on the other)"
                .into(),
        },
        Variant::SliceRange => Status::Correct,
    }
}

/// τ equal records against one more record at the top of the grid's lower part: the exact slice
/// of D is constant (value 2), the neighbor's slice contains the new value 5.
fn witness(tau: usize) -> Result<DatasetPair> {
    let d = Dataset::scalars(vec![2.0; tau])?;
    DatasetPair::new(d.clone(), d.with_record(&[5.0])?, Neighboring::AddRemove)
}

fn rsc_median(params: &mut Params) -> Result<Entry> {
    build(params, "rsc-median", Variant::NoisySlice)
}

fn rsc_median_exact_slice(params: &mut Params) -> Result<Entry> {
    build(params, "rsc-median-exact-slice", Variant::ExactSlice)
}

fn rsc_median_slice_range(params: &mut Params) -> Result<Entry> {
    build(params, "rsc-median-slice-range", Variant::SliceRange)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stability lemma, checked exhaustively on small sorted sequences: for every dataset of
    /// up to 5 records in {0, 1, 2, 3}, every added record and every window (same position and
    /// one step up), the slices differ by at most one swapped element.
    #[test]
    fn neighbor_slices_differ_by_one_swap() {
        let swap_distance = |a: &[f64], b: &[f64]| {
            let mut only_a = 0;
            let mut rest = b.to_vec();
            for v in a {
                match rest.iter().position(|w| w == v) {
                    Some(i) => {
                        rest.remove(i);
                    }
                    None => only_a += 1,
                }
            }
            only_a
        };
        for n in 0..=5u32 {
            for code in 0..4u32.pow(n) {
                let mut data: Vec<f64> =
                    (0..n).map(|i| ((code / 4u32.pow(i)) % 4) as f64).collect();
                data.sort_by(f64::total_cmp);
                for x in 0..4 {
                    let mut more = data.clone();
                    more.push(x as f64);
                    more.sort_by(f64::total_cmp);
                    for tau in 1..=4 {
                        for a in -3..=6i64 {
                            let s = slice(&data, 3.0, a, tau);
                            for shift in [0, 1] {
                                let t = slice(&more, 3.0, a + shift, tau);
                                assert!(
                                    swap_distance(&s, &t) <= 1,
                                    "{data:?} + {x}, a {a}, τ {tau}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn statuses_and_the_slice_range_support() {
        let e = super::super::build("rsc-median-slice-range", &Params::new()).unwrap();
        assert!(e.status.is_buggy());
        let mut rng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::seed_from_u64(2);
        let s = e.mechanism.sample(e.witness.first(), 50, &mut rng).unwrap();
        assert!(s.column(0).iter().all(|&v| v == 2.0));
        for id in ["rsc-median", "rsc-median-exact-slice"] {
            assert!(
                !super::super::build(id, &Params::new())
                    .unwrap()
                    .status
                    .is_buggy()
            );
        }
    }

    #[test]
    fn bad_parameters_name_the_parameter() {
        for (name, value) in [
            ("slice", 0.0),
            ("bins", 1.0),
            ("bins", 3.5),
            ("epsilon", 0.0),
        ] {
            let err = super::super::build("rsc-median", &Params::new().set(name, value))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name) && err.contains("allowed"), "{err}");
        }
    }
}
