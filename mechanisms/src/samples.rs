//! Mechanism outputs: an `n × d` matrix of reals, one release per row.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use ndarray::{ArcArray2, Array2, ArrayView1, Axis};

use crate::error::{MechanismError, Result};

/// `n` independent releases of a mechanism, one per row of an `n × d` matrix.
///
/// Discrete outputs are coded as reals (an index, a bit, a ⊤/⊥ code); each mechanism documents its
/// coding in an `# Output` section.
#[derive(Clone)]
pub struct Samples {
    /// Shared, never written after construction: [`Samples::head`] lends the first rows of a
    /// matrix without copying them.
    values: ArcArray2<f64>,
    /// [`Samples::first_non_finite`]'s answer, once asked: the values never change after
    /// construction (no method lends them mutably), and every tester's input check asks again
    /// (once per bound: ten times for a pure claim's Rényi bounds).
    first_non_finite: OnceLock<Option<(usize, usize, f64)>>,
    /// See [`Samples::id`].
    id: u64,
}

/// The next [`Samples::id`].
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Samples are equal when their values are (whether either was checked for non-finite values
/// does not matter).
impl PartialEq for Samples {
    fn eq(&self, other: &Self) -> bool {
        self.values == other.values
    }
}

/// As derived before the cached answer was added: the values only.
impl std::fmt::Debug for Samples {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Samples")
            .field("values", &self.values)
            .finish()
    }
}

impl Samples {
    /// Wraps an `n × d` matrix (d ≥ 1).
    pub fn new(values: Array2<f64>) -> Result<Self> {
        if values.ncols() == 0 {
            return Err(MechanismError::InvalidDataset(
                "samples must have at least one output coordinate".into(),
            ));
        }
        Ok(Self {
            values: values.into_shared(),
            first_non_finite: OnceLock::new(),
            id: next_id(),
        })
    }

    /// One-dimensional releases.
    pub fn from_column(values: Vec<f64>) -> Self {
        let n = values.len();
        Self {
            values: Array2::from_shape_vec((n, 1), values)
                .expect("n × 1 shape matches n values")
                .into_shared(),
            first_non_finite: OnceLock::new(),
            id: next_id(),
        }
    }

    /// Releases of dimension `dim`, given row after row in one flat vector.
    pub fn from_flat(dim: usize, flat: Vec<f64>) -> Result<Self> {
        if dim == 0 || !flat.len().is_multiple_of(dim) {
            return Err(MechanismError::InvalidDataset(format!(
                "{} values cannot be split into rows of length {dim}",
                flat.len()
            )));
        }
        let n = flat.len() / dim;
        Self::new(
            Array2::from_shape_vec((n, dim), flat)
                .map_err(|e| MechanismError::InvalidDataset(e.to_string()))?,
        )
    }

    /// Stacks chunks of samples of equal dimension, in order.
    pub fn concat(chunks: &[Samples]) -> Result<Self> {
        let views: Vec<_> = chunks.iter().map(|c| c.values.view()).collect();
        if views.is_empty() {
            return Err(MechanismError::InvalidDataset(
                "no samples to concatenate".into(),
            ));
        }
        let values = ndarray::concatenate(Axis(0), &views).map_err(|_| {
            MechanismError::InvalidDataset("sample chunks have different output dimensions".into())
        })?;
        Self::new(values)
    }

    /// An identifier of these values, unique in the process: samples built apart get different
    /// ids, a clone keeps its original's (its values are the same). The values never change
    /// after construction, so a result computed from samples with id k stays the result for
    /// any samples with id k (testers key their memos by it; an address can be reused once
    /// the samples are dropped, an id cannot).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Number of releases.
    pub fn n(&self) -> usize {
        self.values.nrows()
    }

    /// Output dimension.
    pub fn dim(&self) -> usize {
        self.values.ncols()
    }

    /// The matrix of releases.
    pub fn values(&self) -> &ArcArray2<f64> {
        &self.values
    }

    /// Consumes into the matrix (a copy only when its values are shared with other samples,
    /// see [`Samples::head`]).
    pub fn into_values(self) -> Array2<f64> {
        self.values.into_owned()
    }

    /// The first `n` releases (all of them if `n` ≥ [`Samples::n`]) as samples of their own
    /// that share these values instead of copying them (no value is ever written after
    /// construction). New samples: a new [`Samples::id`].
    pub fn head(&self, n: usize) -> Samples {
        let n = n.min(self.n());
        Self {
            values: self.values.clone().slice_move(ndarray::s![..n, ..]),
            first_non_finite: OnceLock::new(),
            id: next_id(),
        }
    }

    /// Release `i`.
    pub fn row(&self, i: usize) -> ArrayView1<'_, f64> {
        self.values.row(i)
    }

    /// Coordinate `j` of every release.
    pub fn column(&self, j: usize) -> ArrayView1<'_, f64> {
        self.values.column(j)
    }

    /// The first non-finite value, as (row, column, value), if any. Searched once; later calls
    /// return the same answer.
    pub fn first_non_finite(&self) -> Option<(usize, usize, f64)> {
        *self
            .first_non_finite
            .get_or_init(|| self.search_non_finite())
    }

    /// [`Self::first_non_finite`]'s search.
    fn search_non_finite(&self) -> Option<(usize, usize, f64)> {
        // Row-major arrays (all but views) are searched as one slice: the index of the first
        // non-finite value gives its row and coordinate, the same as the indexed search.
        if let Some(flat) = self.values.as_slice() {
            let d = self.values.ncols();
            // Blocks of values are first tested all at once (a branch-free fold over the
            // exponent field, which the compiler vectorizes; the field is all ones exactly for
            // ±∞ and NaN); only a block that holds a non-finite value is searched for the first.
            const EXPONENT: u64 = 0x7FF0_0000_0000_0000;
            const BLOCK: usize = 512;
            let base = flat.chunks(BLOCK).position(|b| {
                b.iter()
                    .fold(false, |any, v| any | (v.to_bits() & EXPONENT == EXPONENT))
            })? * BLOCK;
            return flat[base..]
                .iter()
                .position(|v| !v.is_finite())
                .map(|k| ((base + k) / d, (base + k) % d, flat[base + k]));
        }
        self.values
            .indexed_iter()
            .find(|(_, v)| !v.is_finite())
            .map(|((i, j), v)| (i, j, *v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head lends the first rows (the same values, no copy: the same memory), has an id of
    /// its own, finds its own first non-finite value (none past its end), and copies when it
    /// is consumed into a matrix.
    #[test]
    fn a_head_shares_the_first_rows() {
        let mut v: Vec<f64> = (0..30).map(|i| i as f64 * 0.5).collect();
        v[25] = f64::NAN;
        let s = Samples::from_flat(3, v).expect("10 × 3");
        let h = s.head(4);
        assert_eq!(h.n(), 4);
        assert_eq!(h.dim(), 3);
        assert_eq!(h.values(), &s.values().slice(ndarray::s![..4, ..]));
        assert_eq!(
            h.values().as_ptr(),
            s.values().as_ptr(),
            "shared, not copied"
        );
        assert_ne!(h.id(), s.id());
        assert_eq!(h.first_non_finite(), None);
        assert_eq!(s.first_non_finite().map(|(r, c, _)| (r, c)), Some((8, 1)));
        assert_eq!(
            s.head(9).first_non_finite().map(|(r, c, _)| (r, c)),
            Some((8, 1))
        );
        assert_eq!(s.head(50).n(), 10);
        assert_eq!(
            h.clone().into_values(),
            s.values().slice(ndarray::s![..4, ..])
        );
    }
}
