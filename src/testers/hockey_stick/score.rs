//! A candidate score s(x) of the event search, whose upper sets {s(x) ≥ t} are the candidate
//! events, and [`HeldOutEvents`], the chosen event(s) as the held-out count reads them.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::learned::LearnedScore;
use crate::mechanisms::Samples;
use crate::testers::rows::Rows;

/// A candidate score s(x); the event is {s(x) ≥ t}. Serializable (exactly: floats in
/// shortest round-trip form, the atom table as a sorted list) so that a chosen event can be
/// counted on other machines ([`HeldOutEvents`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Score {
    /// sign · x_j.
    Coordinate { j: usize, sign: f64 },
    /// Estimated log-likelihood ratio of the values of the coordinates `coords` (a table keyed by
    /// their bit patterns); unseen values score 0.
    Atoms {
        coords: Vec<usize>,
        #[serde(with = "sorted_table")]
        table: AtomTable,
        /// Training rows per side the table was estimated on (0: all of them, and the
        /// threshold is chosen on the same rows; else the threshold and the selection read only
        /// the training rows after them, see [`Score::selection_start`]).
        fitted_rows: usize,
    },
    /// sign · x_j when the coordinates `coords` take the values `pattern`, −∞ otherwise.
    Conditional {
        coords: Vec<usize>,
        pattern: Vec<u64>,
        j: usize,
        sign: f64,
    },
    /// −|x_j − centre|: the event {|x_j − centre| ≤ −t} around a frequent training value.
    Near { j: usize, centre: f64 },
    /// The logit of a logistic-regression discriminator fitted on the training rows.
    Learned(Box<LearnedScore>),
}

/// An atom table: the estimated log-likelihood ratio of each joint value (bit patterns) of some
/// coordinates.
pub(super) type AtomTable = PatternMap<f64>;

/// A map keyed by the bit patterns of some coordinates of a release (FxHash: see Cargo.toml).
pub(super) type PatternMap<V> = std::collections::HashMap<Vec<u64>, V, rustc_hash::FxBuildHasher>;

/// An atom table as a list of (key, value) sorted by key: JSON object keys must be strings, and
/// a sorted list is the same bytes however the map was filled.
mod sorted_table {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub(super) fn serialize<S: Serializer>(
        table: &super::AtomTable,
        s: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        let mut v: Vec<(&Vec<u64>, &f64)> = table.iter().collect();
        v.sort_by(|a, b| a.0.cmp(b.0));
        v.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> std::result::Result<super::AtomTable, D::Error> {
        let v: Vec<(Vec<u64>, f64)> = Vec::deserialize(d)?;
        Ok(v.into_iter().collect())
    }
}

/// The event(s) one held-out count asks about: S₁ = {s₁(x) ≥ t₁} and, for a pair of
/// directions, S₂ = {s₂(x) ≥ t₂}; a release's flags are (in S₁, in S₂ \ S₁). Chosen on the
/// training split only. Serializable, so that `audit test --plan-out` can write it and shards
/// can be counted against it anywhere (see docs/test.md, "Counting shards as tasks").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeldOutEvents {
    pub(super) first: (Score, f64),
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) second: Option<(Score, f64)>,
}

impl HeldOutEvents {
    /// (in S₁, in S₂ \ S₁) for one release.
    pub fn flags(&self, row: &ndarray::ArrayView1<'_, f64>) -> (bool, bool) {
        let in1 = self.first.0.eval(row) >= self.first.1;
        let in2 = !in1 && self.second.as_ref().is_some_and(|(s, t)| s.eval(row) >= *t);
        (in1, in2)
    }

    /// (releases in S₁, releases in S₂ \ S₁) among the rows `rows` of `s`: [`Self::flags`] of
    /// each row, counted, with the scores computed a block at a time ([`Score::eval_rows`]).
    pub fn count_rows(&self, s: &Samples, rows: std::ops::Range<usize>) -> (u64, u64) {
        let first = self.first.0.eval_rows(s, rows.clone());
        let t1 = self.first.1;
        match &self.second {
            None => (first.iter().filter(|&&v| v >= t1).count() as u64, 0),
            Some((score, t2)) => {
                let second = score.eval_rows(s, rows);
                first
                    .iter()
                    .zip(&second)
                    .fold((0, 0), |(a, b), (&v1, &v2)| {
                        let in1 = v1 >= t1;
                        (a + u64::from(in1), b + u64::from(!in1 && v2 >= *t2))
                    })
            }
        }
    }

    /// The largest coordinate index any score reads (so a count can refuse releases of too
    /// small a dimension instead of indexing out of range).
    pub fn max_coordinate(&self) -> usize {
        let of = |s: &Score| match s {
            Score::Coordinate { j, .. } | Score::Near { j, .. } => *j,
            Score::Atoms { coords, .. } => coords.iter().copied().max().unwrap_or(0),
            Score::Conditional { coords, j, .. } => {
                coords.iter().copied().max().unwrap_or(0).max(*j)
            }
            Score::Learned(m) => m.coords.iter().copied().max().unwrap_or(0),
        };
        let first = of(&self.first.0);
        self.second
            .as_ref()
            .map_or(first, |(s, _)| first.max(of(s)))
    }
}

pub(super) fn key(row: &ndarray::ArrayView1<'_, f64>, coords: &[usize]) -> Vec<u64> {
    coords.iter().map(|&c| row[c].to_bits()).collect()
}

/// [`key`] handed to `f` without allocating (on the stack for up to 16 coordinates): the atom
/// scores look one up for every release they count.
pub(super) fn with_key<T>(
    row: &ndarray::ArrayView1<'_, f64>,
    coords: &[usize],
    f: impl FnOnce(&[u64]) -> T,
) -> T {
    const STACK: usize = 16;
    if coords.len() > STACK {
        return f(&key(row, coords));
    }
    let mut buf = [0u64; STACK];
    for (b, &c) in buf.iter_mut().zip(coords) {
        *b = row[c].to_bits();
    }
    f(&buf[..coords.len()])
}

/// Patterns of some coordinates as small indices: each coordinate's value is found among a
/// given list of values for it (sorted bit patterns, searched by bisection, or read directly
/// when they are all small integers), and the indices of a pattern's values, in mixed radix,
/// are its packed index. Atom tables are counted and read this way, without hashing and
/// comparing each release's key: they are evaluated for every training and held-out release.
pub(super) struct Packer<'a> {
    coords: &'a [usize],
    /// Per coordinate, the distinct bit patterns of its values, sorted.
    values: Vec<Vec<u64>>,
    /// Per coordinate, the mixed-radix weight of its index.
    strides: Vec<usize>,
    /// Per coordinate whose values are all small integers (counts, flags, the float view's
    /// features): for each integer k in −[`SMALL`]..[`SMALL`], the bits of k and its index
    /// (`u32::MAX`: not a value of the list), read directly instead of by bisection.
    small: Vec<Option<Vec<(u64, u32)>>>,
    /// Packed indices in all (the product of the lists' lengths).
    pub(super) size: usize,
    /// When every coordinate's values are small integers: per coordinate, its index and the
    /// lookup table of `small` with each index already multiplied by its stride (the same
    /// packed index, found in one pass without the general path's per-coordinate choices).
    all_small: Option<Vec<SmallAxis>>,
    /// `all_small`'s offsets alone (a quarter of its bytes), for rows given as integers
    /// ([`Self::integer_indices`]).
    integer_axes: Option<Vec<IntegerAxis>>,
}

/// A coordinate of small-integer values: its index and, for each integer k in
/// −[`SMALL`]..[`SMALL`], the bits of k and its packed offset (`u32::MAX`: not a value).
type SmallAxis = (usize, Vec<(u64, u32)>);

/// A coordinate of small-integer values read as integers: its index and, for each integer k in
/// −[`SMALL`]..[`SMALL`], its packed offset (`u32::MAX`: not a value), in an array of fixed
/// length (no bounds check for an index already compared with its length).
type IntegerAxis = (usize, Box<[u32; 2 * SMALL as usize]>);

/// Most packed indices a [`Packer`] may have (a dense array of them is at most 8 MiB of f64).
pub(super) const PACKED_MAX: usize = 1 << 20;

/// The small integers a [`Packer`] looks up directly: −SMALL..SMALL.
const SMALL: i64 = 256;

impl<'a> Packer<'a> {
    /// The packer of the values `values[k]` of coordinate `coords[k]` (any order, repeats
    /// allowed); `None` when the patterns span more than [`PACKED_MAX`] packed indices.
    pub(super) fn new(coords: &'a [usize], mut values: Vec<Vec<u64>>) -> Option<Self> {
        if values.len() != coords.len() {
            return None;
        }
        let mut strides = Vec::with_capacity(coords.len());
        let mut size = 1usize;
        for v in &mut values {
            v.sort_unstable();
            v.dedup();
            strides.push(size);
            size = size.checked_mul(v.len().max(1))?;
            if size > PACKED_MAX {
                return None;
            }
        }
        let small: Vec<Option<Vec<(u64, u32)>>> = values
            .iter()
            .map(|v| {
                // x is the integer k exactly when k as f64 has x's bits (−0 is not).
                let integer = |bits: u64| {
                    let k = f64::from_bits(bits) as i64;
                    ((-SMALL..SMALL).contains(&k) && (k as f64).to_bits() == bits).then_some(k)
                };
                let mut lut = vec![(0u64, u32::MAX); 2 * SMALL as usize];
                for (i, &b) in v.iter().enumerate() {
                    let k = integer(b)?;
                    lut[(k + SMALL) as usize] = (b, u32::try_from(i).ok()?);
                }
                Some(lut)
            })
            .collect();
        let all_small: Option<Vec<SmallAxis>> = small
            .iter()
            .zip(&strides)
            .zip(coords)
            .map(|((lut, &stride), &c)| {
                let lut = lut.as_ref()?;
                let scaled = lut
                    .iter()
                    .map(|&(bits, i)| {
                        let at = (i != u32::MAX)
                            .then(|| u32::try_from(i as usize * stride).ok())
                            .flatten();
                        (bits, at.unwrap_or(u32::MAX))
                    })
                    .collect();
                Some((c, scaled))
            })
            .collect();
        let integer_axes = all_small.as_ref().map(|axes: &Vec<SmallAxis>| {
            axes.iter()
                .map(|(c, lut)| {
                    let mut offsets = Box::new([u32::MAX; 2 * SMALL as usize]);
                    for (o, &(_, at)) in offsets.iter_mut().zip(lut) {
                        *o = at;
                    }
                    (*c, offsets)
                })
                .collect()
        });
        Some(Self {
            coords,
            values,
            strides,
            small,
            size,
            all_small,
            integer_axes,
        })
    }

    /// The packed index of a release's pattern (its coordinates as a slice); `None` when a
    /// coordinate's value is not in its list.
    pub(super) fn index(&self, row: &[f64]) -> Option<usize> {
        if let Some(axes) = &self.all_small {
            let mut index = 0usize;
            for (c, lut) in axes {
                // As below: x is one of the list's integers only if it is the integer it
                // truncates to (its bits are that integer's bits).
                let x = row[*c];
                let slot = (x as i64).wrapping_add(SMALL) as u64;
                let &(bits, at) = lut.get(usize::try_from(slot).ok()?)?;
                if bits != x.to_bits() || at == u32::MAX {
                    return None;
                }
                index += at as usize;
            }
            return Some(index);
        }
        let mut index = 0;
        for (((&c, v), &stride), small) in self
            .coords
            .iter()
            .zip(&self.values)
            .zip(&self.strides)
            .zip(&self.small)
        {
            let x = row[c];
            let i = match small {
                Some(lut) => {
                    // Every value in the list is a small integer: x is one of them only if it
                    // is the integer it truncates to.
                    let k = x as i64;
                    if !(-SMALL..SMALL).contains(&k) {
                        return None;
                    }
                    let (bits, i) = lut[(k + SMALL) as usize];
                    if bits != x.to_bits() || i == u32::MAX {
                        return None;
                    }
                    i as usize
                }
                None => v.binary_search(&x.to_bits()).ok()?,
            };
            index += i * stride;
        }
        Some(index)
    }

    /// Whether every coordinate's values are small integers ([`Self::integer_indices`]
    /// reads rows).
    pub(super) fn reads_integers(&self) -> bool {
        self.integer_axes.is_some()
    }

    /// [`Self::index`] of `rows` rows whose coordinate c is given as integers (each value the
    /// f64 its integer converts to exactly, as the float-representation view's features are),
    /// one coordinate at a time: `column(c, out)` writes coordinate c of every row into `out`
    /// (as long as `rows`), and is asked only for the coordinates the packer reads. A row's
    /// index is `u32::MAX` where [`Self::index`] gives `None` (a value not in its coordinate's
    /// list); `None` when some coordinate's values are not all small integers (then only
    /// [`Self::index`] reads rows). Coordinate by coordinate, so that each one's values are
    /// computed and looked up by one tight loop.
    pub(super) fn integer_indices(
        &self,
        rows: usize,
        mut column: impl FnMut(usize, &mut [i64]),
    ) -> Option<Vec<u32>> {
        let axes = self.integer_axes.as_ref()?;
        let mut index = vec![0u32; rows];
        let mut missing = vec![false; rows];
        let mut values = vec![0i64; rows];
        for (c, offsets) in axes {
            column(*c, &mut values);
            for ((i, m), &k) in index.iter_mut().zip(missing.iter_mut()).zip(&values) {
                // The slot of k holds k's offset when k is in the list (the f64 of k has k's
                // bits, so `index` finds the same), `u32::MAX` otherwise; whether a value is in
                // its list is as random as the releases, so it is noted without a branch.
                let slot = k.wrapping_add(SMALL) as u64;
                let at = if slot < 2 * SMALL as u64 {
                    offsets[slot as usize]
                } else {
                    u32::MAX
                };
                *m |= at == u32::MAX;
                // A row with every value in its list sums its offsets to its packed index
                // (below PACKED_MAX, so no wrap); a row with a missing value is marked below.
                *i = i.wrapping_add(at);
            }
        }
        for (i, m) in index.iter_mut().zip(missing) {
            if m {
                *i = u32::MAX;
            }
        }
        Some(index)
    }

    /// The packed index of a pattern given as bit patterns in coordinate order (the index
    /// [`Self::index`] gives a release with these values); `None` when a value is not in its
    /// coordinate's list.
    pub(super) fn index_of_pattern(&self, bits: &[u64]) -> Option<usize> {
        if bits.len() != self.values.len() {
            return None;
        }
        let mut index = 0;
        for ((v, &stride), b) in self.values.iter().zip(&self.strides).zip(bits) {
            index += v.binary_search(b).ok()? * stride;
        }
        Some(index)
    }

    /// The pattern (bit patterns, in coordinate order) of a packed index.
    pub(super) fn pattern(&self, mut index: usize) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.values.len());
        for v in &self.values {
            let len = v.len().max(1);
            out.push(v.get(index % len).copied().unwrap_or(0));
            index /= len;
        }
        out
    }
}

/// An atom table read through a [`Packer`] of the values its patterns hold: the same score as
/// [`Score::eval`] (a pattern with a value the table never holds for its coordinate is unseen
/// and scores 0).
pub(super) struct PackedAtoms<'a> {
    packer: Packer<'a>,
    /// The ratio of each packed index (0 where no pattern has it).
    dense: Vec<f64>,
}

impl<'a> PackedAtoms<'a> {
    /// `None` when the patterns' values span more than [`PACKED_MAX`] packed indices (then the
    /// table is read by hashing, [`Score::eval`]).
    pub(super) fn new(coords: &'a [usize], table: &AtomTable) -> Option<Self> {
        let mut values: Vec<Vec<u64>> = vec![Vec::new(); coords.len()];
        for key in table.keys() {
            if key.len() != coords.len() {
                return None;
            }
            for (v, &bits) in values.iter_mut().zip(key) {
                v.push(bits);
            }
        }
        let packer = Packer::new(coords, values)?;
        let mut dense = vec![0.0; packer.size];
        for (key, &ratio) in table {
            let mut row = vec![0.0; coords.iter().copied().max().map_or(0, |m| m + 1)];
            for (&c, &bits) in coords.iter().zip(key) {
                row[c] = f64::from_bits(bits);
            }
            dense[packer.index(&row)?] = ratio;
        }
        Some(Self { packer, dense })
    }

    /// The score of one release (its coordinates as a slice).
    pub(super) fn eval(&self, row: &[f64]) -> f64 {
        self.score_of(self.index(row))
    }

    /// The packed indices in all: [`Self::index`] is below it.
    pub(super) fn size(&self) -> usize {
        self.packer.size
    }

    /// The packed index of one release's pattern; `None` when a value is not in its
    /// coordinate's list.
    pub(super) fn index(&self, row: &[f64]) -> Option<usize> {
        self.packer.index(row)
    }

    /// The score of a release whose packed index is `index` ([`Self::eval`]): its ratio, or 0
    /// (+0) without one.
    pub(super) fn score_of(&self, index: Option<usize>) -> f64 {
        index.map_or(0.0, |i| self.dense[i])
    }
}

impl Score {
    pub(super) fn eval(&self, row: &ndarray::ArrayView1<'_, f64>) -> f64 {
        match self {
            Score::Coordinate { j, sign } => sign * row[*j],
            Score::Atoms { coords, table, .. } => {
                with_key(row, coords, |k| table.get(k).copied().unwrap_or(0.0))
            }
            Score::Conditional {
                coords,
                pattern,
                j,
                sign,
            } => {
                if with_key(row, coords, |k| k == pattern.as_slice()) {
                    sign * row[*j]
                } else {
                    f64::NEG_INFINITY
                }
            }
            Score::Near { j, centre } => -(row[*j] - centre).abs(),
            Score::Learned(m) => m.logit(row),
        }
    }

    /// [`Score::eval`] of the rows `rows` of `s`, in order; the one-coordinate scores read down
    /// their column (the same arithmetic, so the same values bit for bit), the others row by
    /// row.
    pub(super) fn eval_rows(&self, s: &Samples, rows: std::ops::Range<usize>) -> Vec<f64> {
        let column = |j: usize| s.values().slice(ndarray::s![rows.clone(), j]);
        match self {
            Score::Coordinate { j, sign } => column(*j).iter().map(|&x| sign * x).collect(),
            Score::Near { j, centre } => column(*j).iter().map(|&x| -(x - centre).abs()).collect(),
            Score::Atoms { coords, table, .. } => {
                match (PackedAtoms::new(coords, table), s.values().as_slice()) {
                    (Some(packed), Some(flat)) => {
                        let d = s.dim();
                        rows.map(|i| packed.eval(&flat[i * d..(i + 1) * d]))
                            .collect()
                    }
                    _ => rows.map(|i| self.eval(&s.row(i))).collect(),
                }
            }
            _ => rows.map(|i| self.eval(&s.row(i))).collect(),
        }
    }

    /// [`Score::eval_rows`] of training rows however they are held: packed rows are decoded a
    /// block at a time (the same values, so the same scores).
    pub(super) fn eval_rows_of(&self, s: Rows<'_>, rows: std::ops::Range<usize>) -> Vec<f64> {
        match s {
            Rows::Values(s) => self.eval_rows(s, rows),
            Rows::Packed(_) => {
                let d = s.dim();
                let mut out = Vec::with_capacity(rows.len());
                let packed = match self {
                    Score::Atoms { coords, table, .. } => PackedAtoms::new(coords, table),
                    _ => None,
                };
                s.for_blocks(rows, |_, flat| {
                    let each = flat.chunks_exact(d);
                    match (self, &packed) {
                        (Score::Coordinate { j, sign }, _) => {
                            out.extend(each.map(|r| sign * r[*j]));
                        }
                        (Score::Near { j, centre }, _) => {
                            out.extend(each.map(|r| -(r[*j] - centre).abs()));
                        }
                        (Score::Atoms { .. }, Some(packed)) => {
                            out.extend(each.map(|r| packed.eval(r)));
                        }
                        _ => out.extend(each.map(|r| self.eval(&ndarray::ArrayView1::from(r)))),
                    }
                });
                out
            }
        }
    }

    pub(super) fn describe(&self, t: f64) -> String {
        let coord = |j: usize, sign: f64| {
            if sign > 0.0 {
                format!("coordinate {j} ≥ {t}")
            } else {
                format!("coordinate {j} ≤ {}", -t)
            }
        };
        match self {
            Score::Coordinate { j, sign } => coord(*j, *sign),
            Score::Atoms { coords, table, .. } => {
                let mut chosen: Vec<(&Vec<u64>, f64)> = table
                    .iter()
                    .filter(|(_, v)| **v >= t)
                    .map(|(k, v)| (k, *v))
                    .collect();
                let n = chosen.len();
                // The most favoured values, for the reader (ties in a fixed order).
                chosen.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
                let shown: Vec<String> = chosen
                    .iter()
                    .take(3)
                    .map(|(k, _)| {
                        let vals: Vec<String> =
                            k.iter().map(|b| f64::from_bits(*b).to_string()).collect();
                        format!("({})", vals.join(", "))
                    })
                    .collect();
                format!(
                    "the joint value of coordinates {coords:?} is one of the {n} values whose estimated log-likelihood ratio is ≥ {t:.4} (the most favoured: {}{})",
                    shown.join("; "),
                    if n > 3 { "; …" } else { "" }
                )
            }
            Score::Conditional {
                coords,
                pattern,
                j,
                sign,
            } => {
                let vals: Vec<f64> = pattern.iter().map(|b| f64::from_bits(*b)).collect();
                format!("coordinates {coords:?} = {vals:?} and {}", coord(*j, *sign))
            }
            Score::Near { j, centre } => {
                format!(
                    "|coordinate {j} − {centre}| ≤ {:e} (near a frequent value)",
                    -t
                )
            }
            Score::Learned(m) => m.describe(t),
        }
    }
}

impl Score {
    /// This candidate for the opposite direction (the sides swapped), exactly as
    /// [`HockeyStickTester::candidates`](super::HockeyStickTester) would form it from the
    /// swapped training rows, without forming it again:
    /// - coordinates (both signs are offered), near-atoms (their centres pool both sides) and
    ///   conditional scores (patterns ranked by pooled counts) are the same;
    /// - an atom table's ratios are negated: with the sides swapped each entry is
    ///   ln(b) − ln(a) where it was ln(a) − ln(b) (the same logarithms, the same `a` and smoothing),
    ///   and IEEE subtraction rounds symmetrically, so fl(ln b − ln a) = −fl(ln a − ln b) bit
    ///   for bit, except that x − x is +0 either way (a zero stays +0 here);
    /// - the learned score is negated (the L2-penalized logistic loss is symmetric under
    ///   swapping the labels and negating the parameters).
    ///
    /// The reverse direction's candidates are formed this way, so the pooled work (sorting every
    /// training value for the near-atoms, counting the atom tables, fitting the discriminator)
    /// is done once per selection instead of twice.
    pub(super) fn mirrored(&self) -> Score {
        match self {
            Score::Atoms {
                coords,
                table,
                fitted_rows,
            } => Score::Atoms {
                coords: coords.clone(),
                table: table
                    .iter()
                    .map(|(k, &v)| (k.clone(), if v == 0.0 { 0.0 } else { -v }))
                    .collect(),
                fitted_rows: *fitted_rows,
            },
            Score::Learned(m) => Score::Learned(Box::new(m.negated())),
            other => other.clone(),
        }
    }

    /// First training row (per side) the threshold and the selection may read: the learned score
    /// is fitted on rows `0..m` and judged on the training rows after them, so that its
    /// in-sample fit does not make it look better than the other candidates. Still training rows
    /// only.
    pub(super) fn selection_start(&self) -> usize {
        match self {
            Score::Learned(m) => m.rows_per_side,
            Score::Atoms { fitted_rows, .. } => *fitted_rows,
            _ => 0,
        }
    }
}

/// The scores of `rows`, in row order (computed in parallel blocks).
pub(super) fn scores_of(score: &Score, s: Rows<'_>, rows: std::ops::Range<usize>) -> Vec<f64> {
    let blocks = row_blocks(&rows, PAR_ROWS);
    // Each block written into its place in one array (no list of parts joined afterwards: the
    // scores are held once, not twice).
    let mut out = vec![0.0; rows.len()];
    out.par_chunks_mut(PAR_ROWS)
        .zip(blocks)
        .for_each(|(dst, b)| dst.copy_from_slice(&score.eval_rows_of(s, b)));
    out
}

/// `rows` cut into consecutive blocks of `size` rows (the last one shorter).
pub(super) fn row_blocks(
    rows: &std::ops::Range<usize>,
    size: usize,
) -> Vec<std::ops::Range<usize>> {
    rows.clone()
        .step_by(size)
        .map(|r| r..(r + size).min(rows.end))
        .collect()
}

/// Rows per parallel task on the training split.
const PAR_ROWS: usize = 1 << 14;
