//! Mechanism outputs: an `n × d` matrix of reals, one release per row.

use ndarray::{Array2, ArrayView1, Axis};

use crate::error::{MechanismError, Result};

/// `n` independent releases of a mechanism, one per row of an `n × d` matrix.
///
/// Discrete outputs are coded as reals (an index, a bit, a ⊤/⊥ code); each mechanism documents its
/// coding in an `# Output` section.
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    values: Array2<f64>,
}

impl Samples {
    /// Wraps an `n × d` matrix (d ≥ 1).
    pub fn new(values: Array2<f64>) -> Result<Self> {
        if values.ncols() == 0 {
            return Err(MechanismError::InvalidDataset(
                "samples must have at least one output coordinate".into(),
            ));
        }
        Ok(Self { values })
    }

    /// One-dimensional releases.
    pub fn from_column(values: Vec<f64>) -> Self {
        let n = values.len();
        Self {
            values: Array2::from_shape_vec((n, 1), values).expect("n × 1 shape matches n values"),
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

    /// Number of releases.
    pub fn n(&self) -> usize {
        self.values.nrows()
    }

    /// Output dimension.
    pub fn dim(&self) -> usize {
        self.values.ncols()
    }

    /// The matrix of releases.
    pub fn values(&self) -> &Array2<f64> {
        &self.values
    }

    /// Consumes into the matrix.
    pub fn into_values(self) -> Array2<f64> {
        self.values
    }

    /// Release `i`.
    pub fn row(&self, i: usize) -> ArrayView1<'_, f64> {
        self.values.row(i)
    }

    /// Coordinate `j` of every release.
    pub fn column(&self, j: usize) -> ArrayView1<'_, f64> {
        self.values.column(j)
    }

    /// The first non-finite value, as (row, column, value), if any.
    pub fn first_non_finite(&self) -> Option<(usize, usize, f64)> {
        // Row-major arrays (all but views) are searched as one slice: the index of the first
        // non-finite value gives its row and coordinate, the same as the indexed search.
        if let Some(flat) = self.values.as_slice() {
            let d = self.values.ncols();
            // Blocks of values are first tested all at once (a branch-free fold over the
            // exponent field, which the compiler vectorizes; the field is all ones exactly for
            // ±∞ and NaN); only a block that holds a non-finite value is searched for the first.
            const EXPONENT: u64 = 0x7FF0_0000_0000_0000;
            const BLOCK: usize = 512;
            let base = flat
                .chunks(BLOCK)
                .position(|b| b.iter().fold(false, |any, v| any | (v.to_bits() & EXPONENT == EXPONENT)))?
                * BLOCK;
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
