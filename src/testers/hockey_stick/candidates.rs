//! The candidate scores of one direction, from the training rows: which coordinates are
//! discrete, continuous or varying, and the scores the event search (or the variational form's
//! one discriminator) offers for them.

use rayon::prelude::*;

use super::atoms::{MAX_PAIRED_DISCRETE, atom_table, near_centres};
use super::learned::fit_learned;
use super::score::{AtomTable, PatternMap, Score, with_key};
use super::selection::Curve;
use super::{HockeyStickForm, HockeyStickTester};
use crate::testers::common::distinct_values_all;
use crate::testers::rows::Rows;

/// The coordinates of an output by what the training rows show of them.
struct Coordinates {
    /// Coordinates with few distinct training values (and constants that differ between the
    /// sides), keyed by their bit patterns in the atom tables.
    discrete: Vec<usize>,
    /// Discrete coordinates with more than two values (not flags), for the pair tables.
    multi_valued: Vec<usize>,
    continuous: Vec<usize>,
    /// Every coordinate that varies (not constant on both sides), in order, for the learned
    /// score on a fine discrete table.
    varying: Vec<usize>,
}

/// The candidate lists formed most recently, by [`MemoKey`]: the verdict's selection and the
/// ε estimate form the same candidates from the same training rows, and they are formed once.
static MEMO: std::sync::Mutex<Vec<(MemoKey, Vec<Score>)>> = std::sync::Mutex::new(Vec::new());

/// The ε estimate's curves computed with a verdict's selection (from the same sorted training
/// scores), by the [`MemoKey`] of their candidates: the estimate reads them instead of scoring
/// and sorting the training rows again. The same argument as [`MemoKey`]'s: curves are a
/// function of training rows only.
static ESTIMATE_CURVES: std::sync::Mutex<Vec<(MemoKey, [Vec<Curve>; 2])>> =
    std::sync::Mutex::new(Vec::new());

/// Keeps the ε estimate's curves of the candidates `key` (see [`ESTIMATE_CURVES`]).
pub(super) fn keep_estimate_curves(key: MemoKey, curves: [Vec<Curve>; 2]) {
    let mut m = ESTIMATE_CURVES.lock().unwrap_or_else(|e| e.into_inner());
    m.retain(|(k, _)| *k != key);
    if m.len() == MEMO_LISTS {
        m.remove(0);
    }
    m.push((key, curves));
}

/// The ε estimate's curves kept for the candidates `key`, if any.
pub(super) fn estimate_curves_kept(key: &MemoKey) -> Option<[Vec<Curve>; 2]> {
    let m = ESTIMATE_CURVES.lock().unwrap_or_else(|e| e.into_inner());
    m.iter().find(|(k, _)| k == key).map(|(_, c)| c.clone())
}

/// Lists [`MEMO`] keeps (one per layer running at once, and a spare).
const MEMO_LISTS: usize = 4;

/// What a candidate list is a function of: the tester's settings that shape it, the training
/// rows' count and dimension, where they are in memory, and a hash (FxHash) of every training
/// value's bits.
///
/// Soundness does not rest on the key: candidates are a function of training rows only, and a
/// list formed from any rows other than this test's held-out rows is independent of those rows,
/// which is all the bounds need (module docs, "Why it holds"). A collision (the same address,
/// counts and 64-bit hash for other values) could only cost power.
#[derive(Clone, PartialEq, Eq)]
pub(super) struct MemoKey {
    settings: (HockeyStickForm, usize, bool, bool),
    rows: (usize, usize, usize),
    addresses: (usize, usize),
    hash: u64,
}

impl MemoKey {
    fn of(t: &HockeyStickTester, p: Rows<'_>, np: usize, q: Rows<'_>, nq: usize) -> MemoKey {
        use std::hash::Hasher;
        // Blocks of values hashed in parallel, each in four interleaved lanes (one FxHash chain
        // a value is a chain of dependent multiplications), then the blocks' hashes in order:
        // the same key on any number of threads.
        const BLOCK: usize = 1 << 16;
        let block_hash = |xs: &[f64]| {
            let mut lanes: [rustc_hash::FxHasher; 4] = std::array::from_fn(|_| Default::default());
            let mut quads = xs.chunks_exact(4);
            for quad in &mut quads {
                for (h, x) in lanes.iter_mut().zip(quad) {
                    h.write_u64(x.to_bits());
                }
            }
            for x in quads.remainder() {
                lanes[0].write_u64(x.to_bits());
            }
            let mut h = rustc_hash::FxHasher::default();
            lanes.iter().for_each(|l| h.write_u64(l.finish()));
            h.finish()
        };
        let mut h = rustc_hash::FxHasher::default();
        for (s, n) in [(p, np), (q, nq)] {
            // Blocks of whole rows (about BLOCK values each), hashed in parallel.
            let d = s.dim().max(1);
            let per_block = BLOCK.div_ceil(d);
            let starts: Vec<usize> = (0..n).step_by(per_block.max(1)).collect();
            let blocks: Vec<u64> = starts
                .par_iter()
                .map(|&start| {
                    // (values held as f64 come in one piece, hashed in place)
                    let mut h = rustc_hash::FxHasher::default();
                    s.for_blocks(start..(start + per_block).min(n), |_, b| {
                        h.write_u64(block_hash(b));
                    });
                    h.finish()
                })
                .collect();
            blocks.iter().for_each(|b| h.write_u64(*b));
            h.write_usize(n);
        }
        MemoKey {
            settings: (t.form, t.max_discrete_values, t.near_atoms, t.learned_score),
            rows: (np, nq, p.dim()),
            addresses: (p.address(), q.address()),
            hash: h.finish(),
        }
    }
}

impl HockeyStickTester {
    /// [`Self::candidates`], formed once for the same training rows and settings (see
    /// [`MemoKey`]): the verdict's selection and the ε estimate ask for the same list.
    pub(super) fn candidates_once(
        &self,
        p: Rows<'_>,
        np: usize,
        q: Rows<'_>,
        nq: usize,
    ) -> (MemoKey, Vec<Score>) {
        let key = MemoKey::of(self, p, np, q, nq);
        let memo = || MEMO.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, list)) = memo().iter().find(|(k, _)| *k == key) {
            return (key, list.clone());
        }
        let list = self.candidates(p, np, q, nq);
        let mut m = memo();
        if m.len() == MEMO_LISTS {
            m.remove(0);
        }
        m.push((key.clone(), list.clone()));
        (key, list)
    }

    /// The candidate scores of `p` against `q` from their training rows. Those of `q` against
    /// `p` are these mirrored ([`Score::mirrored`]): every choice below reads both sides'
    /// training rows symmetrically.
    pub(super) fn candidates(&self, p: Rows<'_>, np: usize, q: Rows<'_>, nq: usize) -> Vec<Score> {
        let fit = |coords: &[usize], decision: bool| {
            fit_learned(p, np, q, nq, coords, decision).map(|m| Score::Learned(Box::new(m)))
        };
        let Coordinates {
            discrete,
            multi_valued,
            continuous,
            varying,
        } = self.classify_coordinates(p, np, q, nq);
        let mut out = Vec::new();
        if self.form == HockeyStickForm::Variational {
            // One candidate: the discriminator on every coordinate that carries information.
            let mut coords: Vec<usize> = discrete.iter().chain(&continuous).copied().collect();
            coords.sort_unstable();
            out.extend(fit(&coords, true));
            return out;
        }
        // Threshold events of every continuous coordinate and, since discrete outputs here are
        // numbers (counts, ranks, encoded features), of every discrete coordinate with more than
        // two values too: {x_j ≥ t} pools the tail values whose ratios the atom table can only
        // estimate one by one (a pure-DP violation often shows only in a tail, e.g. the L1 norm
        // of a vector of counts when each count leaks a little).
        for &j in continuous.iter().chain(&multi_valued) {
            for sign in [1.0, -1.0] {
                out.push(Score::Coordinate { j, sign });
            }
        }
        if self.near_atoms {
            for &j in &continuous {
                for centre in near_centres(p, np, q, nq, j) {
                    out.push(Score::Near { j, centre });
                }
            }
        }
        // The learned score is fitted only when there are two or more coordinates it can
        // combine, where it can find directions no single coordinate has: two or more continuous
        // coordinates, or, when the joint table of the discrete coordinates is too fine to
        // estimate in sample (below), every varying coordinate (e.g. a vector of counts, where the
        // log-likelihood ratio of independent coordinates is a sum over them). In one dimension
        // its upper sets (of a quadratic in x) add only two-sided events, not worth a fit per
        // audit.
        let table = (!discrete.is_empty()).then(|| atom_table(p, np, q, nq, &discrete));
        // Patterns seen once score 0 (see `atom_table`); when they hold most training rows,
        // the joint table of all discrete coordinates is too fine to see anything. When there
        // are fewer than 100 training rows a pattern on average, its in-sample estimates
        // still overfit: the patterns whose ratio the training rows overestimate are the ones a
        // threshold on it picks, and it wins the selection on noise (measured on a vector of
        // four counts: a held-out excess of 0.002 chosen over a sum whose excess is 0.02). Both
        // make the table `fine`: it is then judged on rows it was not estimated on.
        let sparse = table
            .as_ref()
            .is_some_and(|t| 2 * t.values().filter(|&&v| v == 0.0).count() >= np + nq);
        let fine = sparse || table.as_ref().is_some_and(|t| 100 * t.len() > np + nq);
        if self.learned_score && continuous.len() >= 2 {
            out.extend(fit(&continuous, false));
        } else if self.learned_score && fine && varying.len() >= 2 {
            out.extend(fit(&varying, false));
        }
        if let Some(table) = table {
            let coords = Coordinates {
                discrete,
                multi_valued,
                continuous,
                varying,
            };
            out.extend(atom_scores(p, np, q, nq, &coords, table, fine));
            // Whole-output atoms when the discrete coordinates are not everything but full rows
            // still repeat a lot (e.g. integer-valued outputs with many values).
            if !coords.continuous.is_empty() {
                out.extend(conditional_scores(p, np, q, nq, &coords));
            }
        } else if continuous.is_empty() {
            // Every coordinate constant and equal on both sides: one trivial candidate.
            out.push(Score::Coordinate { j: 0, sign: 1.0 });
        }
        out
    }

    /// Sorts the coordinates by their distinct values on the training rows of both sides
    /// (counted up to `max_discrete_values + 1`, coordinates in parallel): few values (at most
    /// `max_discrete_values`, and at least 10 training rows per value) make a coordinate
    /// discrete, more make it continuous, and a constant one is left out unless the sides'
    /// constants differ.
    fn classify_coordinates(&self, p: Rows<'_>, np: usize, q: Rows<'_>, nq: usize) -> Coordinates {
        let cap = self.max_discrete_values;
        let mut c = Coordinates {
            discrete: Vec::new(),
            multi_valued: Vec::new(),
            continuous: Vec::new(),
            varying: Vec::new(),
        };
        // Distinct values of every coordinate on both sides, coordinates in parallel.
        let (dp, dq) = rayon::join(
            || distinct_values_all(p, 0..np, cap),
            || distinct_values_all(q, 0..nq, cap),
        );
        let distinct: Vec<(usize, usize)> = dp.into_iter().zip(dq).collect();
        for (j, &(dp, dq)) in distinct.iter().enumerate() {
            let few = dp.max(dq) <= cap && dp.max(dq) * 10 <= np.min(nq);
            if dp.max(dq) <= 1 {
                // Constant on both sides: no information, unless the constants differ.
                if p.get(0, j).to_bits() != q.get(0, j).to_bits() {
                    c.discrete.push(j);
                }
                continue;
            }
            c.varying.push(j);
            if few {
                c.discrete.push(j);
                if dp.max(dq) > 2 {
                    c.multi_valued.push(j);
                }
            } else {
                c.continuous.push(j);
            }
        }
        c
    }
}

/// The atom-table scores of the discrete coordinates: the joint table `table` (estimated on all
/// the training rows) or, when it is `fine`, the joint table and each pair's re-estimated on the
/// first half of the training rows.
///
/// When the joint table is fine (e.g. the float features of a vector output), its in-sample
/// scores are mostly noise, so it is re-estimated on the first half of the training rows and
/// judged on the other half (as the learned score is), and each pair of discrete coordinates
/// with more than two values is offered too, estimated the same way (a leak in the low mantissa
/// bits within one binade of one coordinate is a pair).
fn atom_scores(
    p: Rows<'_>,
    np: usize,
    q: Rows<'_>,
    nq: usize,
    coords: &Coordinates,
    table: AtomTable,
    fine: bool,
) -> Vec<Score> {
    let Coordinates {
        discrete,
        multi_valued,
        ..
    } = coords;
    let half = np.min(nq) / 2;
    let split = fine && half > 0;
    if !split {
        return vec![Score::Atoms {
            coords: discrete.clone(),
            table,
            fitted_rows: 0,
        }];
    }
    // The joint table and each pair's, all re-estimated on the first half of the training
    // rows: computed in parallel, kept in this order.
    let mut sets = vec![discrete.clone()];
    if discrete.len() >= 3 && (2..=MAX_PAIRED_DISCRETE).contains(&multi_valued.len()) {
        for (a, &ja) in multi_valued.iter().enumerate() {
            for &jb in &multi_valued[a + 1..] {
                sets.push(vec![ja, jb]);
            }
        }
    }
    sets.into_par_iter()
        .map(|coords| Score::Atoms {
            table: atom_table(p, half, q, half, &coords),
            coords,
            fitted_rows: half,
        })
        .collect()
}

/// A continuous coordinate (each sign) restricted to one of the 16 most frequent patterns of
/// the discrete coordinates (pooled over both sides' training rows).
fn conditional_scores(
    p: Rows<'_>,
    np: usize,
    q: Rows<'_>,
    nq: usize,
    coords: &Coordinates,
) -> Vec<Score> {
    let Coordinates {
        discrete,
        continuous,
        ..
    } = coords;
    let mut freq: PatternMap<usize> = PatternMap::default();
    for (s, n) in [(p, np), (q, nq)] {
        s.for_rows(0..n, |_, row| {
            with_key(&row, discrete, |k| match freq.get_mut(k) {
                Some(c) => *c += 1,
                None => {
                    freq.insert(k.to_vec(), 1);
                }
            });
        });
    }
    let mut patterns: Vec<(usize, Vec<u64>)> = freq.into_iter().map(|(k, c)| (c, k)).collect();
    patterns.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut out = Vec::new();
    for (_, pattern) in patterns.into_iter().take(16) {
        for &j in continuous {
            for sign in [1.0, -1.0] {
                out.push(Score::Conditional {
                    coords: discrete.clone(),
                    pattern: pattern.clone(),
                    j,
                    sign,
                });
            }
        }
    }
    out
}
