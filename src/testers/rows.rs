//! The training rows a tester's selection reads: a matrix of f64 values ([`Samples`]), or the
//! float-representation view of parsed releases held as the small integers it is made of
//! ([`PackedRows`]: one byte a feature instead of eight, read back as f64 by blocks).
//!
//! At 10^6 releases per side the view's training rows were 16 MB of f64 beside the 16 MB of
//! parsed releases (issue 54, docs/design/tester-floor/float-patterns.md); packed they are
//! 2 MB. A reader sees the same f64 values in the same order either way (each feature is an
//! integer in −32..=63, which i8 → f64 gives exactly), so every score, count and record is the
//! same bit for bit.

use std::ops::Range;

use ndarray::{Array1, ArrayView1, CowArray, Ix1};
use rayon::prelude::*;

use crate::error::Result;
use crate::mechanisms::Samples;
use crate::testers::transforms::{FLOAT_REPR_PER_COORD, float_repr_ints};

/// Rows per block a [`PackedRows`] is decoded by ([`Rows::for_blocks`]): 1 024 rows of the
/// one-dimensional view are 40 KB of f64, in the cache.
const BLOCK_ROWS: usize = 1 << 10;

/// Rows per parallel task when a view is packed.
const PACK_ROWS: usize = 1 << 14;

/// Ids of [`PackedRows`] (top bit set, so never a [`Samples::id`]).
static NEXT_PACKED_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The float-representation view of releases ([`crate::testers::Transform::FloatRepr`]) as its
/// integer features, one byte each, row-major: the view's rows without its f64s.
#[derive(Debug)]
pub struct PackedRows {
    cells: Vec<i8>,
    n: usize,
    dim: usize,
    id: u64,
}

impl PackedRows {
    /// The float-representation view of the finite releases `raw` (the caller checks them),
    /// packed; `None` when `raw` is not one contiguous block or a feature does not fit a byte
    /// (neither happens for parsed releases: every feature is in −32..=63).
    pub fn float_repr(raw: &Samples) -> Option<PackedRows> {
        let flat = raw.values().as_slice()?;
        let w = FLOAT_REPR_PER_COORD;
        let mut cells = vec![0i8; flat.len() * w];
        let step = PACK_ROWS * raw.dim().max(1);
        let fits = cells
            .par_chunks_mut(step * w)
            .zip(flat.par_chunks(step))
            .all(|(dst, src)| {
                dst.chunks_exact_mut(w).zip(src).all(|(cell, &v)| {
                    cell.iter_mut()
                        .zip(float_repr_ints(v))
                        .all(|(c, k)| i8::try_from(k).map(|k| *c = k).is_ok())
                })
            });
        fits.then(|| PackedRows {
            cells,
            n: raw.n(),
            dim: raw.dim() * w,
            id: next_packed_id(),
        })
    }

    /// Packed rows joined in order (the parts of a view read from several shards).
    pub fn concat(parts: Vec<PackedRows>) -> Option<PackedRows> {
        let dim = parts.first()?.dim;
        if parts.iter().any(|p| p.dim != dim) {
            return None;
        }
        let n = parts.iter().map(|p| p.n).sum();
        let mut cells = Vec::with_capacity(n * dim);
        parts.iter().for_each(|p| cells.extend_from_slice(&p.cells));
        Some(PackedRows {
            cells,
            n,
            dim,
            id: next_packed_id(),
        })
    }

    /// The first `n` rows (at most all) as f64 values: what a report's figures show.
    pub fn head_samples(&self, n: usize) -> Result<Samples> {
        let n = n.min(self.n);
        let flat = self.cells[..n * self.dim]
            .iter()
            .map(|&c| f64::from(c))
            .collect();
        Ok(Samples::from_flat(self.dim, flat)?)
    }
}

fn next_packed_id() -> u64 {
    (1 << 63) | NEXT_PACKED_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Training rows held: values, or the float-representation view packed.
#[derive(Debug)]
pub enum TrainRows {
    /// Values as they are.
    Values(Samples),
    /// The float-representation view, packed.
    Packed(PackedRows),
}

impl TrainRows {
    /// The rows to read.
    pub fn rows(&self) -> Rows<'_> {
        match self {
            TrainRows::Values(s) => Rows::Values(s),
            TrainRows::Packed(p) => Rows::Packed(p),
        }
    }
}

/// Training rows as the testers read them (see the module docs).
#[derive(Clone, Copy, Debug)]
pub enum Rows<'a> {
    /// Values as they are.
    Values(&'a Samples),
    /// The float-representation view, packed.
    Packed(&'a PackedRows),
}

impl<'a> From<&'a Samples> for Rows<'a> {
    fn from(s: &'a Samples) -> Self {
        Rows::Values(s)
    }
}

impl<'a> From<&'a PackedRows> for Rows<'a> {
    fn from(s: &'a PackedRows) -> Self {
        Rows::Packed(s)
    }
}

impl<'a> Rows<'a> {
    /// How many rows.
    pub fn n(self) -> usize {
        match self {
            Rows::Values(s) => s.n(),
            Rows::Packed(p) => p.n,
        }
    }

    /// Values a row.
    pub fn dim(self) -> usize {
        match self {
            Rows::Values(s) => s.dim(),
            Rows::Packed(p) => p.dim,
        }
    }

    /// An id: the same id means the same values ([`Samples::id`]; packed rows have their own).
    pub fn id(self) -> u64 {
        match self {
            Rows::Values(s) => s.id(),
            Rows::Packed(p) => p.id,
        }
    }

    /// The values, when they are held as f64.
    pub fn samples(self) -> Option<&'a Samples> {
        match self {
            Rows::Values(s) => Some(s),
            Rows::Packed(_) => None,
        }
    }

    /// The value of row i, coordinate j.
    pub fn get(self, i: usize, j: usize) -> f64 {
        match self {
            Rows::Values(s) => s.values()[[i, j]],
            Rows::Packed(p) => f64::from(p.cells[i * p.dim + j]),
        }
    }

    /// Where the values are held (an address, for keys that must tell two arrays apart).
    pub fn address(self) -> usize {
        match self {
            Rows::Values(s) => s.values().as_ptr() as usize,
            Rows::Packed(p) => p.cells.as_ptr() as usize,
        }
    }

    /// The rows `rows` handed to `f` in consecutive blocks, in order, each as (its first row,
    /// its values row-major); `f` returns whether to go on. Values held in one contiguous
    /// block are handed over at once, without a copy. Returns false when `f` stopped.
    pub fn try_blocks(self, rows: Range<usize>, mut f: impl FnMut(usize, &[f64]) -> bool) -> bool {
        let d = self.dim();
        match self {
            Rows::Values(s) => {
                let v = s.values();
                if let Some(flat) = v.as_slice() {
                    return rows.is_empty() || f(rows.start, &flat[rows.start * d..rows.end * d]);
                }
                let mut buf = Vec::with_capacity(BLOCK_ROWS * d);
                for start in rows.clone().step_by(BLOCK_ROWS) {
                    let end = (start + BLOCK_ROWS).min(rows.end);
                    buf.clear();
                    (start..end).for_each(|i| buf.extend(v.row(i).iter().copied()));
                    if !f(start, &buf) {
                        return false;
                    }
                }
                true
            }
            Rows::Packed(p) => {
                let mut buf = vec![0.0; BLOCK_ROWS * d];
                for start in rows.clone().step_by(BLOCK_ROWS) {
                    let end = (start + BLOCK_ROWS).min(rows.end);
                    let out = &mut buf[..(end - start) * d];
                    out.iter_mut()
                        .zip(&p.cells[start * d..end * d])
                        .for_each(|(o, &c)| *o = f64::from(c));
                    if !f(start, out) {
                        return false;
                    }
                }
                true
            }
        }
    }

    /// [`Rows::try_blocks`] to the end.
    pub fn for_blocks(self, rows: Range<usize>, mut f: impl FnMut(usize, &[f64])) {
        self.try_blocks(rows, |start, flat| {
            f(start, flat);
            true
        });
    }

    /// The distinct values (bit patterns, ascending by integer value) of coordinate j among
    /// the rows `rows` of packed rows, found from their bytes without decoding a row; `None`
    /// for values held as f64 (the caller reads them as such).
    pub fn packed_distinct(self, j: usize, rows: Range<usize>) -> Option<Vec<u64>> {
        let Rows::Packed(p) = self else {
            return None;
        };
        let mut seen = [false; 256];
        for i in rows {
            seen[usize::from(p.cells[i * p.dim + j] as u8)] = true;
        }
        Some(
            (i8::MIN..=i8::MAX)
                .filter(|&c| seen[usize::from(c as u8)])
                .map(|c| f64::from(c).to_bits())
                .collect(),
        )
    }

    /// Each row of `rows` handed to `f` with its index, in order.
    pub fn for_rows(self, rows: Range<usize>, mut f: impl FnMut(usize, ArrayView1<'_, f64>)) {
        let d = self.dim().max(1);
        self.for_blocks(rows, |start, flat| {
            for (k, row) in flat.chunks_exact(d).enumerate() {
                f(start + k, ArrayView1::from(row));
            }
        });
    }

    /// Coordinate j of the rows `rows`: read in place from values, decoded from packed rows.
    pub fn column(self, j: usize, rows: Range<usize>) -> CowArray<'a, f64, Ix1> {
        match self {
            Rows::Values(s) => CowArray::from(s.values().slice(ndarray::s![rows, j])),
            Rows::Packed(p) => CowArray::from(Array1::from_iter(
                rows.map(|i| f64::from(p.cells[i * p.dim + j])),
            )),
        }
    }

    /// The first `n` rows (at most all) as values of their own (a copy).
    pub fn head_samples(self, n: usize) -> Result<Samples> {
        match self {
            Rows::Values(s) => {
                let n = n.min(s.n());
                Ok(Samples::new(
                    s.values().slice(ndarray::s![..n, ..]).to_owned(),
                )?)
            }
            Rows::Packed(p) => p.head_samples(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of every kind the view tells apart: ±0, subnormals, f32-exact values, dyadic
    /// grids, the binade clamp's ends, large and small magnitudes.
    fn awkward() -> Samples {
        let mut v = vec![
            0.0,
            -0.0,
            f64::MIN_POSITIVE,
            5e-324,
            -5e-324,
            1.5,
            0.1,
            f64::from(0.1f32),
            1e300,
            -1e-300,
            3.0 * 2f64.powi(-12),
            2f64.powi(31),
            2f64.powi(32),
            -2f64.powi(-32),
            2f64.powi(-33),
            f64::MAX,
        ];
        let mut x = 0.123_456_789_f64;
        for _ in 0..3000 {
            x = (x * 3.7 + 0.31).fract() * 2.0 - 1.0;
            v.push(x * 1e3);
            v.push(f64::from((x * 17.0) as f32));
        }
        let n = v.len() / 2;
        v.truncate(2 * n);
        Samples::from_flat(2, v).expect("finite")
    }

    #[test]
    fn packed_rows_read_as_the_views_values() {
        let raw = awkward();
        let view = crate::testers::Transform::FloatRepr
            .apply(&raw)
            .expect("finite releases");
        let packed = PackedRows::float_repr(&raw).expect("the features fit a byte");
        let rows = Rows::Packed(&packed);
        assert_eq!((rows.n(), rows.dim()), (view.n(), view.dim()));
        let want: Vec<u64> = view.values().iter().map(|x| x.to_bits()).collect();
        // By blocks, over a range that is not block-aligned.
        let mut got = Vec::new();
        rows.for_blocks(7..view.n(), |start, flat| {
            assert_eq!(got.len(), (start - 7) * view.dim());
            got.extend(flat.iter().map(|x| x.to_bits()));
        });
        assert_eq!(got, want[7 * view.dim()..]);
        for (i, j) in [(0, 0), (3, 9), (view.n() - 1, 4)] {
            assert_eq!(rows.get(i, j).to_bits(), view.values()[[i, j]].to_bits());
        }
        let col: Vec<u64> = rows.column(2, 5..900).iter().map(|x| x.to_bits()).collect();
        let want_col: Vec<u64> = (5..900).map(|i| view.values()[[i, 2]].to_bits()).collect();
        assert_eq!(col, want_col);
        assert_eq!(
            packed.head_samples(50).expect("rows").values(),
            &view.values().slice(ndarray::s![..50, ..])
        );
        for (j, range) in [
            (0, 100..3000),
            (3, 0..1),
            (4, 5..9),
            (7, 0..3000),
            (9, 2..3),
        ] {
            let mut want: Vec<u64> = range
                .clone()
                .map(|i| view.values()[[i, j]].to_bits())
                .collect();
            want.sort_unstable_by(|a, b| f64::from_bits(*a).total_cmp(&f64::from_bits(*b)));
            want.dedup();
            assert_eq!(rows.packed_distinct(j, range), Some(want));
        }
        let joined = PackedRows::concat(vec![
            PackedRows::float_repr(&raw.head(10)).expect("fits"),
            packed,
        ])
        .expect("one dimension");
        assert_eq!(joined.n, 10 + view.n());
        assert_eq!(Rows::Packed(&joined).get(10, 3), view.values()[[0, 3]]);
    }
}
