//! Held-out events prepared once for counting many blocks of rows ([`PreparedEvents`]): each
//! distinct score is evaluated once per block, and the atom tables that read the same
//! coordinates share one packed index per row.
//!
//! The counts are those of each event counted alone ([`HeldOutEvents::count_rows`]) bit for bit:
//! a row's score is the same number whichever way it is read. An atom table's score is the table's ratio of the row's
//! pattern, 0 when the table does not hold it ([`Score::eval`]); here the pattern's packed index
//! in a [`Packer`] of the values of every table of the group is looked up in a dense array of the
//! table's ratios (0 where the table holds no pattern), built once. A pattern with a value no
//! table of the group holds has no index and scores 0, as in the table; one whose values all
//! appear but not together in this table finds 0 in the dense array, as in the table. The
//! verdict's pair of directions reads an atom table and its mirror (the same keys), so the two
//! share one index per row instead of two, and the dense arrays are built once per count
//! instead of once per block of 8 192 rows.
//!
//! Under the float-representation view, when every score is such a table, the view's rows are
//! not written out at all ([`PreparedEvents::count_block_viewed`]): each release's view row is
//! built on the stack by the view's own function ([`float_repr`], so the same numbers) and read
//! there.

use super::score::{HeldOutEvents, Packer, Score};
use crate::mechanisms::Samples;
use crate::testers::transforms::{
    FLOAT_REPR_PER_COORD, Transform, float_repr, float_repr_feature_column,
};

/// Most view coordinates a row built on the stack holds ([`PreparedEvents::count_block_viewed`]).
const VIEW_STACK: usize = 80;

/// How a distinct score is evaluated on a block.
enum Eval {
    /// Through the packed index of group `group` and this table's ratios by index.
    Packed { group: usize, dense: Vec<f64> },
    /// [`Score::eval_rows`].
    Plain,
}

/// Events prepared for counting: their distinct scores, how each is evaluated, and the shared
/// packers (one per set of atom coordinates).
pub struct PreparedEvents<'e> {
    events: Vec<&'e HeldOutEvents>,
    /// Distinct scores, in first-use order.
    scores: Vec<&'e Score>,
    eval: Vec<Eval>,
    /// (first score, second score) of each event, as indices into `scores`.
    reads: Vec<(usize, Option<usize>)>,
    packers: Vec<Packer<'e>>,
}

impl<'e> PreparedEvents<'e> {
    /// Prepares `events` (any number; repeats and shared scores allowed).
    pub fn new(events: &[&'e HeldOutEvents]) -> Self {
        let mut scores: Vec<&'e Score> = Vec::new();
        let mut index_of = |score: &'e Score| -> usize {
            match scores
                .iter()
                .position(|t| std::ptr::eq(*t, score) || *t == score)
            {
                Some(i) => i,
                None => {
                    scores.push(score);
                    scores.len() - 1
                }
            }
        };
        let reads: Vec<(usize, Option<usize>)> = events
            .iter()
            .map(|e| {
                let first = index_of(&e.first.0);
                (first, e.second.as_ref().map(|(s, _)| index_of(s)))
            })
            .collect();
        let (eval, packers) = packed_groups(&scores);
        Self {
            events: events.to_vec(),
            scores,
            eval,
            reads,
            packers,
        }
    }

    /// The events' counts among their rows `ranges[k]` ∩ `block` of `s` (the same as
    /// [`HeldOutEvents::count_rows`] of each event alone).
    pub fn count_block(
        &self,
        s: &Samples,
        block: std::ops::Range<usize>,
        ranges: &[std::ops::Range<usize>],
    ) -> Vec<(u64, u64)> {
        self.count_with(block, ranges, |block, needed| self.scored(s, block, needed))
    }

    /// Whether these events can be counted on releases of dimension `dim` through `transform`
    /// without the view written out ([`Self::count_block_viewed`]): the float-representation
    /// view of releases of a few coordinates, every score an atom table read through a packer.
    pub fn counts_through(&self, transform: &Transform, dim: usize) -> bool {
        matches!(transform, Transform::FloatRepr)
            && dim * FLOAT_REPR_PER_COORD <= VIEW_STACK
            && self.eval.iter().all(|e| matches!(e, Eval::Packed { .. }))
    }

    /// [`Self::count_block`] of the float-representation view of the releases `raw` (finite;
    /// see [`Self::counts_through`]): the view never written out. When every packer's values
    /// are small integers (the view's features always are), each view coordinate a table reads
    /// is computed alone as the integer it is ([`float_repr_feature_column`]) and looked up as
    /// one ([`Packer::integer_indices`]): the same packed indices, so the same scores and
    /// counts. Otherwise each view row is built on the stack and read there.
    pub fn count_block_viewed(
        &self,
        raw: &Samples,
        block: std::ops::Range<usize>,
        ranges: &[std::ops::Range<usize>],
    ) -> Vec<(u64, u64)> {
        if !self.packers.iter().all(Packer::reads_integers) {
            return self.count_with(block, ranges, |block, needed| {
                self.scored_viewed(raw, block, needed)
            });
        }
        let (needed, windows) = self.windows(&block, ranges);
        let indices = self.viewed_indices(raw, block, &needed);
        // A table's score of a row from its packed index: 0 where it has none (as `read_dense`).
        let reader = |k: usize| match &self.eval[k] {
            Eval::Packed { group, dense } => Some((indices[*group].as_slice(), dense.as_slice())),
            Eval::Plain => None,
        };
        let score = |dense: &[f64], i: u32| {
            if i == u32::MAX {
                0.0
            } else {
                dense[i as usize]
            }
        };
        self.events
            .iter()
            .zip(&self.reads)
            .zip(windows)
            .map(|((e, &(first, second)), w)| {
                let (Some(r), Some((i1, d1))) = (w, reader(first)) else {
                    return (0, 0);
                };
                let v1 = i1[r.clone()].iter().map(|&i| score(d1, i));
                match (second.and_then(reader), &e.second) {
                    (Some((i2, d2)), Some((_, t2))) => {
                        count_pair(v1.zip(i2[r].iter().map(|&i| score(d2, i))), e.first.1, *t2)
                    }
                    _ => (count_single(v1, e.first.1), 0),
                }
            })
            .collect()
    }

    /// The packer groups the needed scores read, in order.
    fn wanted_groups(&self, needed: &[bool]) -> Vec<usize> {
        let mut groups = vec![false; self.packers.len()];
        for (k, e) in self.eval.iter().enumerate() {
            if let (true, Eval::Packed { group, .. }) = (needed[k], e) {
                groups[*group] = true;
            }
        }
        (0..groups.len()).filter(|&g| groups[g]).collect()
    }

    /// Each needed group's packed index of every row of `block` of the float-representation
    /// view of `raw` (`u32::MAX`: a value no table holds), from the view's coordinates as
    /// integers (every packer reads integers); empty for the groups not needed.
    fn viewed_indices(
        &self,
        raw: &Samples,
        block: std::ops::Range<usize>,
        needed: &[bool],
    ) -> Vec<Vec<u32>> {
        let wanted = self.wanted_groups(needed);
        let mut indices: Vec<Vec<u32>> = vec![Vec::new(); self.packers.len()];
        let values = raw.values();
        let mut copied: Vec<f64> = Vec::new();
        for &g in &wanted {
            // Only the features a table reads are computed, from the release's coordinate, one
            // coordinate of the block at a time (a column of a one-coordinate release is a
            // slice of the parsed values; others are copied out once per coordinate read).
            let column = |c: usize, out: &mut [i64]| {
                let col = values.slice(ndarray::s![block.clone(), c / FLOAT_REPR_PER_COORD]);
                let xs: &[f64] = match col.as_slice() {
                    Some(xs) => xs,
                    None => {
                        copied.clear();
                        copied.extend(col.iter());
                        &copied
                    }
                };
                float_repr_feature_column(c % FLOAT_REPR_PER_COORD, xs, out);
            };
            if let Some(index) = self.packers[g].integer_indices(block.len(), column) {
                indices[g] = index;
            }
        }
        indices
    }

    /// The counts, with the needed scores of a block given by `scored`.
    fn count_with(
        &self,
        block: std::ops::Range<usize>,
        ranges: &[std::ops::Range<usize>],
        scored: impl FnOnce(std::ops::Range<usize>, &[bool]) -> Vec<Vec<f64>>,
    ) -> Vec<(u64, u64)> {
        let (needed, windows) = self.windows(&block, ranges);
        let values = scored(block, &needed);
        self.events
            .iter()
            .zip(&self.reads)
            .zip(windows)
            .map(|((e, &(first, second)), w)| {
                let Some(r) = w else { return (0, 0) };
                let v1 = values[first][r.clone()].iter().copied();
                match (second, &e.second) {
                    (Some(k), Some((_, t2))) => {
                        count_pair(v1.zip(values[k][r].iter().copied()), e.first.1, *t2)
                    }
                    _ => (count_single(v1, e.first.1), 0),
                }
            })
            .collect()
    }

    /// Which scores a block needs (a query whose rows miss it reads nothing), and each query's
    /// rows in the block, counted from the block's first row.
    fn windows(
        &self,
        block: &std::ops::Range<usize>,
        ranges: &[std::ops::Range<usize>],
    ) -> (Vec<bool>, Vec<Option<std::ops::Range<usize>>>) {
        let mut needed = vec![false; self.scores.len()];
        let windows = ranges
            .iter()
            .zip(&self.reads)
            .map(|(r, &(first, second))| {
                let (lo, hi) = (r.start.max(block.start), r.end.min(block.end));
                if lo >= hi {
                    return None;
                }
                needed[first] = true;
                if let Some(k) = second {
                    needed[k] = true;
                }
                Some(lo - block.start..hi - block.start)
            })
            .collect();
        (needed, windows)
    }

    /// The values on `block` of each needed score (empty for the others).
    fn scored(&self, s: &Samples, block: std::ops::Range<usize>, needed: &[bool]) -> Vec<Vec<f64>> {
        let flat = s.values().as_slice();
        let d = s.dim();
        // Each needed group's packed index of every row (u32::MAX: a value no table holds).
        let mut indices: Vec<Option<Vec<u32>>> = vec![None; self.packers.len()];
        for (k, e) in self.eval.iter().enumerate() {
            if let (true, Eval::Packed { group, .. }, Some(flat)) = (needed[k], e, flat)
                && indices[*group].is_none()
            {
                let packer = &self.packers[*group];
                indices[*group] = Some(
                    block
                        .clone()
                        .map(|i| {
                            packer
                                .index(&flat[i * d..(i + 1) * d])
                                .map_or(u32::MAX, |x| x as u32)
                        })
                        .collect(),
                );
            }
        }
        self.scores
            .iter()
            .zip(&self.eval)
            .enumerate()
            .map(|(k, (score, e))| {
                if !needed[k] {
                    return Vec::new();
                }
                match (e, indices.get(group_of(e)).and_then(|x| x.as_ref())) {
                    (Eval::Packed { dense, .. }, Some(idx)) => read_dense(idx, dense),
                    _ => score.eval_rows(s, block.clone()),
                }
            })
            .collect()
    }
}

impl PreparedEvents<'_> {
    /// [`Self::scored`] of the float-representation view of `raw` (every score packed).
    fn scored_viewed(
        &self,
        raw: &Samples,
        block: std::ops::Range<usize>,
        needed: &[bool],
    ) -> Vec<Vec<f64>> {
        let d = raw.dim();
        let w = d * FLOAT_REPR_PER_COORD;
        let wanted = self.wanted_groups(needed);
        let mut indices: Vec<Vec<u32>> = vec![Vec::with_capacity(block.len()); self.packers.len()];
        let mut row = [0.0f64; VIEW_STACK];
        for i in block {
            for (j, cell) in row[..w].chunks_exact_mut(FLOAT_REPR_PER_COORD).enumerate() {
                cell.copy_from_slice(&float_repr(raw.values()[[i, j]]));
            }
            for &g in &wanted {
                let index = self.packers[g].index(&row[..w]);
                indices[g].push(index.map_or(u32::MAX, |x| x as u32));
            }
        }
        self.eval
            .iter()
            .enumerate()
            .map(|(k, e)| match (needed[k], e) {
                (true, Eval::Packed { group, dense }) => read_dense(&indices[*group], dense),
                _ => Vec::new(),
            })
            .collect()
    }
}

/// A table's scores of rows from their packed indices: its ratio at each index, 0 where the row
/// has none (a value no table of the group holds: a pattern no table saw).
fn read_dense(indices: &[u32], dense: &[f64]) -> Vec<f64> {
    indices
        .iter()
        .map(|&i| {
            if i == u32::MAX {
                0.0
            } else {
                dense[i as usize]
            }
        })
        .collect()
}

fn group_of(e: &Eval) -> usize {
    match e {
        Eval::Packed { group, .. } => *group,
        Eval::Plain => usize::MAX,
    }
}

/// The atom tables of `scores` grouped by their coordinates, each group read through one packer
/// of every value its tables hold (a table alone when the group's patterns would span too many
/// packed indices; the hashed table when its own do); every other score plainly.
fn packed_groups<'e>(scores: &[&'e Score]) -> (Vec<Eval>, Vec<Packer<'e>>) {
    let mut eval: Vec<Eval> = scores.iter().map(|_| Eval::Plain).collect();
    let mut packers: Vec<Packer<'e>> = Vec::new();
    let mut done = vec![false; scores.len()];
    for k in 0..scores.len() {
        let Score::Atoms { coords, .. } = scores[k] else {
            continue;
        };
        if done[k] {
            continue;
        }
        let members: Vec<usize> = (k..scores.len())
            .filter(|&m| matches!(scores[m], Score::Atoms { coords: c, .. } if c == coords))
            .collect();
        members.iter().for_each(|&m| done[m] = true);
        let tables: Vec<&super::score::AtomTable> = members
            .iter()
            .filter_map(|&m| match scores[m] {
                Score::Atoms { table, .. } => Some(table),
                _ => None,
            })
            .collect();
        let mut try_group = |ms: &[usize], ts: &[&super::score::AtomTable]| -> bool {
            let Some(packer) = packer_of(coords, ts) else {
                return false;
            };
            let mut denses = Vec::with_capacity(ts.len());
            for t in ts {
                let mut dense = vec![0.0; packer.size];
                for (key, &ratio) in t.iter() {
                    match packer.index_of_pattern(key) {
                        Some(i) => dense[i] = ratio,
                        None => return false,
                    }
                }
                denses.push(dense);
            }
            let group = packers.len();
            for (&m, dense) in ms.iter().zip(denses) {
                eval[m] = Eval::Packed { group, dense };
            }
            packers.push(packer);
            true
        };
        if !try_group(&members, &tables) {
            for (&m, t) in members.iter().zip(&tables) {
                try_group(&[m], &[t]);
            }
        }
    }
    (eval, packers)
}

/// A packer of every value the tables hold, coordinate by coordinate; `None` when a key has the
/// wrong length or the patterns span too many packed indices.
fn packer_of<'e>(coords: &'e [usize], tables: &[&super::score::AtomTable]) -> Option<Packer<'e>> {
    let mut values: Vec<Vec<u64>> = vec![Vec::new(); coords.len()];
    for t in tables {
        for key in t.keys() {
            if key.len() != coords.len() {
                return None;
            }
            for (v, &bits) in values.iter_mut().zip(key) {
                v.push(bits);
            }
        }
    }
    Packer::new(coords, values)
}

/// Rows whose score is at least `t`, among the scores `v`.
fn count_single(v: impl Iterator<Item = f64>, t: f64) -> u64 {
    v.filter(|&x| x >= t).count() as u64
}

/// (rows in S₁ = {first score ≥ `t1`}, rows in S₂ \ S₁ with S₂ = {second score ≥ `t2`}) among
/// the rows' pairs of scores `v`.
fn count_pair(v: impl Iterator<Item = (f64, f64)>, t1: f64, t2: f64) -> (u64, u64) {
    v.fold((0, 0), |(a, b), (x1, x2)| {
        let in1 = x1 >= t1;
        (a + u64::from(in1), b + u64::from(!in1 && x2 >= t2))
    })
}
