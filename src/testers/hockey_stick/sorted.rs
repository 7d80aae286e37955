//! A candidate's training scores sorted descending by total_cmp ([`Sorted`]), as a list or, for
//! a score with few distinct values, as runs of equal values: the selection reads them only by
//! their length, their value at a rank and how many are at or above a threshold, and a discrete
//! score's runs answer those without a list of one score per training row.

use rayon::prelude::*;

use super::score::{PackedAtoms, Score, row_blocks, scores_of};
use crate::testers::common::{COUNTED_VALUES, distinct_counts, total_order_key, total_order_value};
use crate::testers::rows::Rows;

/// Rows of a side scored at once when its scores are counted ([`sorted_side`]).
const COUNT_ROWS: usize = 1 << 14;

/// One side's training scores sorted descending by total_cmp. Either the list itself, or each
/// distinct value once, in the list's order, with where its run ends: `ends[k]` is the length
/// of the list up to and including run k. Both are the same sequence to every reader below;
/// values equal under total_cmp have the same bits, so any sort gives this sequence.
#[derive(Clone, Debug)]
pub(super) enum Sorted {
    List(Vec<f64>),
    Runs { values: Vec<f64>, ends: Vec<usize> },
}

impl Sorted {
    /// The list's length.
    pub(super) fn len(&self) -> usize {
        match self {
            Sorted::List(v) => v.len(),
            Sorted::Runs { ends, .. } => ends.last().copied().unwrap_or(0),
        }
    }

    /// The list's value at position `i` (from 0; `i < len`).
    pub(super) fn at(&self, i: usize) -> f64 {
        match self {
            Sorted::List(v) => v[i],
            Sorted::Runs { values, ends } => values[ends.partition_point(|&e| e <= i)],
        }
    }

    /// How many of the list's values are ≥ t: its `partition_point(|x| x >= t)`. Values of a
    /// run are equal, so the predicate holds for a run whole or not at all, and the runs where
    /// it holds are a prefix, as the values are in the list.
    pub(super) fn count_ge(&self, t: f64) -> usize {
        match self {
            Sorted::List(v) => v.partition_point(|&x| x >= t),
            Sorted::Runs { values, ends } => match values.partition_point(|&x| x >= t) {
                0 => 0,
                k => ends[k - 1],
            },
        }
    }

    /// The sorted scores of the negated score: the list reversed and negated (negation reverses
    /// IEEE total order, ±0 and infinities included), with −0 written +0 when `positive_zero`
    /// (a mirrored atom table's zeros are +0). Runs that become equal (+0 and −0 written +0)
    /// are joined.
    pub(super) fn negated(self, positive_zero: bool) -> Sorted {
        let flip = |x: f64| {
            let y = -x;
            if positive_zero && y == 0.0 { 0.0 } else { y }
        };
        match self {
            Sorted::List(mut v) => {
                v.reverse();
                for x in v.iter_mut() {
                    *x = flip(*x);
                }
                Sorted::List(v)
            }
            Sorted::Runs { values, ends } => {
                let mut out_values: Vec<f64> = Vec::with_capacity(values.len());
                let mut out_ends: Vec<usize> = Vec::with_capacity(ends.len());
                for k in (0..values.len()).rev() {
                    let count = ends[k] - if k == 0 { 0 } else { ends[k - 1] };
                    let x = flip(values[k]);
                    let end = out_ends.last().copied().unwrap_or(0) + count;
                    match (out_values.last(), out_ends.last_mut()) {
                        (Some(y), Some(e)) if y.to_bits() == x.to_bits() => *e = end,
                        _ => {
                            out_values.push(x);
                            out_ends.push(end);
                        }
                    }
                }
                Sorted::Runs {
                    values: out_values,
                    ends: out_ends,
                }
            }
        }
    }

    /// The list written out (tests compare it with a plain sort).
    #[cfg(test)]
    pub(super) fn to_list(&self) -> Vec<f64> {
        match self {
            Sorted::List(v) => v.clone(),
            Sorted::Runs { values, ends } => {
                let mut out = Vec::with_capacity(self.len());
                let mut at = 0;
                for (&x, &e) in values.iter().zip(ends) {
                    out.extend(std::iter::repeat_n(x, e - at));
                    at = e;
                }
                out
            }
        }
    }
}

/// The training scores of `score` on the rows `rows` of `s`, sorted. The first block of
/// [`COUNT_ROWS`] rows probes: when its scores take at most [`COUNTED_VALUES`] values (an atom
/// table's ratios, a coordinate of the float-representation view), every block is scored and
/// its distinct values counted, blocks in parallel, and the counts summed (order-free), so no
/// list of one score per row is written; otherwise, or when the blocks together take more
/// values, the scores are written into one list and sorted ([`sort_keys_desc`]).
pub(super) fn sorted_side(score: &Score, s: Rows<'_>, rows: std::ops::Range<usize>) -> Sorted {
    if let Some(runs) = counted_atoms(score, s, rows.clone()) {
        return runs;
    }
    let blocks = row_blocks(&rows, COUNT_ROWS);
    let counted = |b: &std::ops::Range<usize>| distinct_counts(&score.eval_rows_of(s, b.clone()));
    if let Some(first) = blocks.first().and_then(counted) {
        let rest: Option<Vec<Vec<(u64, usize)>>> = blocks[1..].par_iter().map(counted).collect();
        if let Some(runs) = rest.and_then(|rest| runs_of(std::iter::once(first).chain(rest))) {
            return runs;
        }
    }
    let mut v = scores_of(score, s, rows);
    sort_keys_desc(&mut v);
    Sorted::List(v)
}

/// Most packed indices [`counted_atoms`] counts in an array per block of rows.
const COUNTED_INDICES: usize = 1 << 14;

/// [`sorted_side`] of an atom table read through packed indices ([`PackedAtoms`]): each row's
/// packed index counted (blocks of [`COUNT_ROWS`] in parallel, their counts summed: order-free),
/// then each index's count given to its score ([`PackedAtoms::score_of`], the score
/// [`Score::eval_rows`] gives the row): the counts of the scores, without a score per row or a
/// hash per score. `None` when the score is not such a table, the releases are not one
/// contiguous block, the table spans more than [`COUNTED_INDICES`] packed indices, or its
/// scores take more than [`COUNTED_VALUES`] values (then [`sorted_side`] scores the rows).
fn counted_atoms(score: &Score, s: Rows<'_>, rows: std::ops::Range<usize>) -> Option<Sorted> {
    let Score::Atoms { coords, table, .. } = score else {
        return None;
    };
    let packed = PackedAtoms::new(coords, table)?;
    let size = packed.size();
    if size > COUNTED_INDICES {
        return None;
    }
    let d = s.dim();
    if s.samples().is_some_and(|v| v.values().as_slice().is_none()) {
        return None;
    }
    let blocks = row_blocks(&rows, COUNT_ROWS);
    // Index `size` counts the rows without an index.
    let counts = blocks
        .par_iter()
        .map(|b| {
            let mut counts = vec![0usize; size + 1];
            s.for_blocks(b.clone(), |_, flat| {
                for row in flat.chunks_exact(d) {
                    counts[packed.index(row).unwrap_or(size)] += 1;
                }
            });
            counts
        })
        .reduce(
            || vec![0usize; size + 1],
            |mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            },
        );
    let scores = counts
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(|(i, &n)| (packed.score_of((i < size).then_some(i)).to_bits(), n))
        .collect();
    runs_of(std::iter::once(scores))
}

/// `v` sorted descending by total_cmp: as runs when it takes at most [`COUNTED_VALUES`] values,
/// else as a list ([`sort_keys_desc`]).
#[cfg(test)]
pub(super) fn sort_desc(mut v: Vec<f64>) -> Sorted {
    if let Some(runs) = distinct_counts(&v).and_then(|c| runs_of(std::iter::once(c))) {
        return runs;
    }
    sort_keys_desc(&mut v);
    Sorted::List(v)
}

/// The runs of the values counted by `counts` (each a list of (bit pattern, how many)):
/// the counts of each bit pattern summed, the patterns sorted descending by total_cmp; `None`
/// when there are more than [`COUNTED_VALUES`] patterns. Hand-written: no sort crate offers
/// total_cmp's order by counting.
fn runs_of(counts: impl IntoIterator<Item = Vec<(u64, usize)>>) -> Option<Sorted> {
    let mut total: rustc_hash::FxHashMap<u64, usize> = rustc_hash::FxHashMap::default();
    for block in counts {
        for (bits, n) in block {
            *total.entry(bits).or_insert(0) += n;
        }
        if total.len() > COUNTED_VALUES {
            return None;
        }
    }
    let mut runs: Vec<(u64, usize)> = total.into_iter().collect();
    runs.sort_unstable_by(|a, b| f64::from_bits(b.0).total_cmp(&f64::from_bits(a.0)));
    let mut end = 0;
    let (values, ends) = runs
        .into_iter()
        .map(|(bits, n)| {
            end += n;
            (f64::from_bits(bits), end)
        })
        .unzip();
    Some(Sorted::Runs { values, ends })
}

/// Sorts `v` descending by total_cmp through integer keys: each value is replaced in place by
/// the bits of its [`total_order_key`] (unsigned order = total_cmp's order, the key the radix
/// sort of [`crate::testers::common`] uses too), the keys sorted as integers (pdqsort, faster
/// than comparing by total_cmp; a radix sort, radsort and the project's own, was measured
/// slower here: 8 passes over 64-bit keys for 2·10^5 values) and turned back into the values
/// they came from ([`total_order_value`]). Values equal under total_cmp have the same bits, so
/// the sequence is any sort's.
fn sort_keys_desc(v: &mut [f64]) {
    for x in v.iter_mut() {
        *x = f64::from_bits(total_order_key(*x));
    }
    v.sort_unstable_by_key(|x| std::cmp::Reverse(x.to_bits()));
    for x in v.iter_mut() {
        *x = total_order_value(x.to_bits());
    }
}
