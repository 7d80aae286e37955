//! Datasets, the neighboring relations, record domains, and pairs that are neighbors by
//! construction.

use std::cmp::Ordering;
use std::fmt;

use ndarray::{Array2, ArrayView1, Axis};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{MechanismError, Result};

/// A dataset: `len()` records, each a fixed-length vector of `dim()` reals (a number is a
/// vector of length 1). Records are stored as the rows of an `n × dim` matrix.
///
/// Every value is finite; the constructors check it.
#[derive(Clone, Debug, PartialEq)]
pub struct Dataset {
    records: Array2<f64>,
}

impl Dataset {
    /// A dataset of scalar records.
    pub fn scalars(values: impl Into<Vec<f64>>) -> Result<Self> {
        let values = values.into();
        let n = values.len();
        let records = Array2::from_shape_vec((n, 1), values)
            .map_err(|e| MechanismError::InvalidDataset(e.to_string()))?;
        Self::from_array(records)
    }

    /// A dataset of vector records, all of length `dim` (needed to type an empty dataset).
    pub fn vectors(dim: usize, records: &[Vec<f64>]) -> Result<Self> {
        if dim == 0 {
            return Err(MechanismError::InvalidDataset(
                "record dimension must be at least 1, got 0".into(),
            ));
        }
        let mut flat = Vec::with_capacity(records.len() * dim);
        for (i, r) in records.iter().enumerate() {
            if r.len() != dim {
                return Err(MechanismError::InvalidDataset(format!(
                    "record {i} has length {}, expected {dim}",
                    r.len()
                )));
            }
            flat.extend_from_slice(r);
        }
        let array = Array2::from_shape_vec((records.len(), dim), flat)
            .map_err(|e| MechanismError::InvalidDataset(e.to_string()))?;
        Self::from_array(array)
    }

    /// A dataset from an `n × dim` matrix (rows are records).
    pub fn from_array(records: Array2<f64>) -> Result<Self> {
        if records.ncols() == 0 {
            return Err(MechanismError::InvalidDataset(
                "record dimension must be at least 1, got 0".into(),
            ));
        }
        if let Some((idx, v)) = records.indexed_iter().find(|(_, v)| !v.is_finite()) {
            return Err(MechanismError::InvalidDataset(format!(
                "record {} coordinate {} is {v}; records must be finite",
                idx.0, idx.1
            )));
        }
        Ok(Self { records })
    }

    /// An empty dataset of records of dimension `dim`.
    pub fn empty(dim: usize) -> Result<Self> {
        Self::from_array(Array2::zeros((0, dim.max(1))))
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.nrows()
    }

    /// True when there are no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Length of each record.
    pub fn dim(&self) -> usize {
        self.records.ncols()
    }

    /// The records as rows of a matrix.
    pub fn records(&self) -> &Array2<f64> {
        &self.records
    }

    /// Record `i`.
    pub fn record(&self, i: usize) -> ArrayView1<'_, f64> {
        self.records.row(i)
    }

    /// Iterator over records.
    pub fn iter(&self) -> impl Iterator<Item = ArrayView1<'_, f64>> {
        self.records.axis_iter(Axis(0))
    }

    /// Scalar records as a vector (the first coordinate of each record).
    pub fn column(&self, j: usize) -> Vec<f64> {
        self.records.column(j).to_vec()
    }

    /// A copy with `record` appended.
    pub fn with_record(&self, record: &[f64]) -> Result<Self> {
        if record.len() != self.dim() {
            return Err(MechanismError::InvalidDataset(format!(
                "added record has length {}, dataset records have length {}",
                record.len(),
                self.dim()
            )));
        }
        let mut rows = self.to_rows();
        rows.push(record.to_vec());
        Self::vectors(self.dim(), &rows)
    }

    /// A copy with record `i` replaced by `record`.
    pub fn with_replaced(&self, i: usize, record: &[f64]) -> Result<Self> {
        if i >= self.len() || record.len() != self.dim() {
            return Err(MechanismError::InvalidDataset(format!(
                "cannot replace record {i} of {} by a record of length {} (dataset dimension {})",
                self.len(),
                record.len(),
                self.dim()
            )));
        }
        let mut rows = self.to_rows();
        rows[i] = record.to_vec();
        Self::vectors(self.dim(), &rows)
    }

    /// Records as nested vectors.
    pub fn to_rows(&self) -> Vec<Vec<f64>> {
        self.iter().map(|r| r.to_vec()).collect()
    }

    /// One line for people: the first 8 records, then how many more, and the size, e.g.
    /// `[0, 1, (0.5, 2), … 3 more] (11 records)`. Values are exact and brief
    /// ([`crate::math::exact`]: `1e308`, not 309 digits). A pair is better shown by
    /// [`DatasetPair::short_sides`], which never hides the records that differ.
    pub fn short(&self) -> String {
        let rows = self.to_rows();
        let shown: Vec<String> = rows.iter().take(SHORT_ROWS).map(|r| short_row(r)).collect();
        let more = if rows.len() > SHORT_ROWS {
            format!(", … {} more", rows.len() - SHORT_ROWS)
        } else {
            String::new()
        };
        format!("[{}{}] ({})", shown.join(", "), more, records(rows.len()))
    }

    /// The records as a JSON value: an array of numbers when `dim() == 1`, else an array of
    /// arrays. This is also the `dataset` field of the exec protocol.
    pub fn to_json_records(&self) -> serde_json::Value {
        if self.dim() == 1 {
            serde_json::Value::from(self.column(0))
        } else {
            serde_json::Value::from(self.to_rows())
        }
    }

    fn sorted_rows(&self) -> Vec<Vec<f64>> {
        let mut rows = self.to_rows();
        rows.sort_by(|a, b| cmp_rows(a, b));
        rows
    }
}

/// "1 record", "3 records".
fn records(n: usize) -> String {
    if n == 1 {
        "1 record".into()
    } else {
        format!("{n} records")
    }
}

/// Records [`Dataset::short`] shows.
const SHORT_ROWS: usize = 8;

/// A record for people: a number, or a tuple of numbers ([`crate::math::exact`]).
fn short_row(r: &[f64]) -> String {
    if r.len() == 1 {
        crate::math::exact(r[0])
    } else {
        let parts: Vec<String> = r.iter().map(|&v| crate::math::exact(v)).collect();
        format!("({})", parts.join(", "))
    }
}

/// `rows` for people when its first `shared_head` and last `shared_tail` records are those of
/// the other dataset of a pair: the shared runs shortened to a count, the records between them
/// (those that differ) shown, up to 6.
fn short_around(rows: &[Vec<f64>], shared_head: usize, shared_tail: usize) -> String {
    let n = rows.len();
    let shared = |k: usize| {
        if k == 1 {
            "… 1 shared record …".to_string()
        } else {
            format!("… {k} shared records …")
        }
    };
    let mut parts: Vec<String> = Vec::new();
    if shared_head <= 3 {
        parts.extend(rows[..shared_head].iter().map(|r| short_row(r)));
    } else {
        parts.extend(rows[..2].iter().map(|r| short_row(r)));
        parts.push(shared(shared_head - 2));
    }
    let differing = &rows[shared_head..n - shared_tail];
    if differing.len() <= 6 {
        parts.extend(differing.iter().map(|r| short_row(r)));
    } else {
        parts.extend(differing[..5].iter().map(|r| short_row(r)));
        parts.push(format!(
            "… {} more differing records …",
            differing.len() - 5
        ));
    }
    if shared_tail <= 2 {
        parts.extend(rows[n - shared_tail..].iter().map(|r| short_row(r)));
    } else {
        parts.push(shared(shared_tail - 1));
        parts.push(short_row(&rows[n - 1]));
    }
    format!("[{}] ({})", parts.join(", "), records(n))
}

fn cmp_rows(a: &[f64], b: &[f64]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match x.total_cmp(y) {
            Ordering::Equal => continue,
            o => return o,
        }
    }
    a.len().cmp(&b.len())
}

impl fmt::Display for Dataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_json_records())
    }
}

#[derive(Serialize, Deserialize)]
struct RawDataset {
    dim: usize,
    records: serde_json::Value,
}

impl Serialize for Dataset {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        RawDataset {
            dim: self.dim(),
            records: self.to_json_records(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Dataset {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let raw = RawDataset::deserialize(d)?;
        Dataset::from_json_records(&raw.records, Some(raw.dim)).map_err(serde::de::Error::custom)
    }
}

impl Dataset {
    /// Parses records given as a JSON array of numbers or of equal-length arrays of numbers.
    /// `dim` types an empty array (default 1) and is checked against non-empty ones.
    pub fn from_json_records(value: &serde_json::Value, dim: Option<usize>) -> Result<Self> {
        let arr = value.as_array().ok_or_else(|| {
            MechanismError::InvalidDataset(format!("records must be a JSON array, got {value}"))
        })?;
        if arr.is_empty() {
            return Self::empty(dim.unwrap_or(1));
        }
        let mut rows = Vec::with_capacity(arr.len());
        for (i, v) in arr.iter().enumerate() {
            let row = match v {
                serde_json::Value::Number(n) => vec![n.as_f64().ok_or_else(|| {
                    MechanismError::InvalidDataset(format!(
                        "record {i} = {n} is not a finite number"
                    ))
                })?],
                serde_json::Value::Array(xs) => xs
                    .iter()
                    .enumerate()
                    .map(|(j, x)| {
                        x.as_f64().ok_or_else(|| {
                            MechanismError::InvalidDataset(format!(
                                "record {i} coordinate {j} = {x} is not a number"
                            ))
                        })
                    })
                    .collect::<Result<Vec<f64>>>()?,
                other => {
                    return Err(MechanismError::InvalidDataset(format!(
                        "record {i} = {other} is neither a number nor an array of numbers"
                    )));
                }
            };
            rows.push(row);
        }
        let d = rows[0].len();
        if let Some(want) = dim
            && want != d
        {
            return Err(MechanismError::InvalidDataset(format!(
                "records have length {d}, but dim = {want}"
            )));
        }
        Self::vectors(d, &rows)
    }
}

pub use dp_audit_accounting::Neighboring;

/// Where records live and how big datasets may be: what a dataset finder may propose.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordDomain {
    /// Smallest value of each record coordinate.
    pub lower: f64,
    /// Largest value of each record coordinate.
    pub upper: f64,
    /// Length of each record.
    pub dim: usize,
    /// Smallest dataset size the mechanism accepts.
    pub min_size: usize,
    /// Largest dataset size the mechanism accepts.
    pub max_size: usize,
    /// Records take integer values only (e.g. bin indices, bits).
    pub integer: bool,
}

impl RecordDomain {
    /// Real-valued records of dimension `dim` in `[lower, upper]`, datasets of 0 to 1000 records.
    pub fn real(lower: f64, upper: f64, dim: usize) -> Self {
        Self {
            lower,
            upper,
            dim,
            min_size: 0,
            max_size: 1000,
            integer: false,
        }
    }

    /// Integer records in `{lower, …, upper}`, datasets of 0 to 1000 records.
    pub fn integer(lower: i64, upper: i64, dim: usize) -> Self {
        Self {
            integer: true,
            ..Self::real(lower as f64, upper as f64, dim)
        }
    }

    /// Same domain with dataset sizes restricted to `[min, max]`.
    pub fn with_sizes(self, min_size: usize, max_size: usize) -> Self {
        Self {
            min_size,
            max_size,
            ..self
        }
    }

    /// Checks that the domain itself is well-formed.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(MechanismError::InvalidDataset(m));
        if !(self.lower.is_finite() && self.upper.is_finite()) || self.lower > self.upper {
            return bad(format!(
                "record range [{}, {}] is empty or not finite; need finite LO <= HI",
                self.lower, self.upper
            ));
        }
        if self.dim == 0 {
            return bad("record dimension must be at least 1, got 0".into());
        }
        if self.min_size > self.max_size {
            return bad(format!(
                "dataset size range [{}, {}] is empty",
                self.min_size, self.max_size
            ));
        }
        Ok(())
    }

    /// Checks that `dataset` fits the domain: dimension, size, range and integrality.
    pub fn check(&self, dataset: &Dataset) -> Result<()> {
        if dataset.dim() != self.dim {
            return Err(MechanismError::InvalidDataset(format!(
                "records have dimension {}, the mechanism takes dimension {}",
                dataset.dim(),
                self.dim
            )));
        }
        if dataset.len() < self.min_size || dataset.len() > self.max_size {
            return Err(MechanismError::InvalidDataset(format!(
                "dataset has {} records; the mechanism takes {} to {}",
                dataset.len(),
                self.min_size,
                self.max_size
            )));
        }
        for (i, r) in dataset.iter().enumerate() {
            for (j, &v) in r.iter().enumerate() {
                if v < self.lower || v > self.upper {
                    return Err(MechanismError::InvalidDataset(format!(
                        "record {i} coordinate {j} = {v} is outside the record range [{}, {}]",
                        self.lower, self.upper
                    )));
                }
                if self.integer && v.fract() != 0.0 {
                    return Err(MechanismError::InvalidDataset(format!(
                        "record {i} coordinate {j} = {v} is not an integer; the mechanism takes integer records"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Two datasets that are neighbors under a relation. It can only be built for true neighbors.
///
/// Datasets are compared as multisets of records (every catalogue mechanism is symmetric in its
/// records). `first` and `second` are ordered: testers bound divergences in both directions.
///
/// # Examples
/// ```
/// use dp_audit_mechanisms::{Dataset, DatasetPair, Neighboring};
/// let d = Dataset::scalars(vec![1.0, 2.0])?;
/// let d2 = Dataset::scalars(vec![1.0, 2.0, 5.0])?;
/// assert!(DatasetPair::new(d.clone(), d2, Neighboring::AddRemove).is_ok());
/// let far = Dataset::scalars(vec![7.0, 8.0])?;
/// assert!(DatasetPair::new(d, far, Neighboring::ReplaceOne).is_err());
/// # Ok::<(), dp_audit_mechanisms::MechanismError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DatasetPair {
    first: Dataset,
    second: Dataset,
    relation: Neighboring,
}

impl DatasetPair {
    /// D and D′ on one line each for people, never hiding the records that differ: both in
    /// full when each has at most 8 records; otherwise the records the two share at the start
    /// and at the end (position by position, bit for bit) are shortened to a count, e.g.
    /// `[0.5, 0.5, … 8 shared records …] (10 records)` and
    /// `[0.5, 0.5, … 8 shared records …, 1] (11 records)`.
    pub fn short_sides(&self) -> [String; 2] {
        let (a, b) = (self.first.to_rows(), self.second.to_rows());
        if a.len() <= SHORT_ROWS && b.len() <= SHORT_ROWS {
            return [self.first.short(), self.second.short()];
        }
        let same = |x: &&Vec<f64>, y: &&Vec<f64>| cmp_rows(x, y) == Ordering::Equal;
        let head = a.iter().zip(&b).take_while(|(x, y)| same(x, y)).count();
        let room = a.len().min(b.len()) - head;
        let tail = a
            .iter()
            .rev()
            .zip(b.iter().rev())
            .take(room)
            .take_while(|(x, y)| same(x, y))
            .count();
        [short_around(&a, head, tail), short_around(&b, head, tail)]
    }

    /// Builds the pair, or explains why `first` and `second` are not neighbors under `relation`.
    pub fn new(first: Dataset, second: Dataset, relation: Neighboring) -> Result<Self> {
        let fail = |reason: String| {
            Err(MechanismError::NotNeighbors {
                relation: relation.to_string(),
                reason,
            })
        };
        if first.dim() != second.dim() {
            return fail(format!(
                "record dimensions differ ({} vs {})",
                first.dim(),
                second.dim()
            ));
        }
        let (a, b) = (first.sorted_rows(), second.sorted_rows());
        // Multiset difference of sorted rows: counts of records only in a / only in b.
        // The last record only in a (only in b) is kept for the zero-out check.
        let (mut i, mut j, mut only_a, mut only_b) = (0, 0, 0usize, 0usize);
        let (mut last_a, mut last_b) = (None, None);
        while i < a.len() && j < b.len() {
            match cmp_rows(&a[i], &b[j]) {
                Ordering::Equal => {
                    i += 1;
                    j += 1;
                }
                Ordering::Less => {
                    only_a += 1;
                    last_a = Some(&a[i]);
                    i += 1;
                }
                Ordering::Greater => {
                    only_b += 1;
                    last_b = Some(&b[j]);
                    j += 1;
                }
            }
        }
        only_a += a.len() - i;
        only_b += b.len() - j;
        last_a = a[i..].last().or(last_a);
        last_b = b[j..].last().or(last_b);
        match relation {
            Neighboring::AddRemove => {
                if only_a + only_b != 1 {
                    return fail(format!(
                        "the datasets ({} and {} records) differ by {} removed and {} added records; add-remove neighbors differ by exactly one added or removed record",
                        first.len(),
                        second.len(),
                        only_a,
                        only_b
                    ));
                }
            }
            Neighboring::ReplaceOne => {
                if first.len() != second.len() || only_a != 1 || only_b != 1 {
                    return fail(format!(
                        "the datasets ({} and {} records) share all but {} and {} records; replace-one neighbors have equal sizes and differ in exactly one record",
                        first.len(),
                        second.len(),
                        only_a,
                        only_b
                    ));
                }
            }
            Neighboring::ZeroOut => {
                let null = Neighboring::null_record(first.dim());
                let is_null = |r: Option<&Vec<f64>>| r.is_some_and(|r| *r == null);
                if first.len() != second.len()
                    || only_a != 1
                    || only_b != 1
                    || !(is_null(last_a) || is_null(last_b))
                {
                    return fail(format!(
                        "the datasets ({} and {} records) share all but {} and {} records; zero-out neighbors have equal sizes and differ in exactly one record, which one of them has replaced by the null record (all zeros)",
                        first.len(),
                        second.len(),
                        only_a,
                        only_b
                    ));
                }
            }
        }
        Ok(Self {
            first,
            second,
            relation,
        })
    }

    /// D.
    pub fn first(&self) -> &Dataset {
        &self.first
    }

    /// D'.
    pub fn second(&self) -> &Dataset {
        &self.second
    }

    /// The relation under which the two are neighbors.
    pub fn relation(&self) -> Neighboring {
        self.relation
    }

    /// The same pair in the other order.
    pub fn swapped(&self) -> Self {
        Self {
            first: self.second.clone(),
            second: self.first.clone(),
            relation: self.relation,
        }
    }
}

#[derive(Deserialize)]
struct RawPair {
    first: Dataset,
    second: Dataset,
    relation: Neighboring,
}

impl<'de> Deserialize<'de> for DatasetPair {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let raw = RawPair::deserialize(d)?;
        DatasetPair::new(raw.first, raw.second, raw.relation).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[f64]) -> Dataset {
        Dataset::scalars(v.to_vec()).unwrap()
    }

    /// The records that differ are shown however long the datasets (the first 8 records alone
    /// would hide a record added at the end), and extreme values print briefly.
    #[test]
    fn a_pair_shows_the_records_that_differ() {
        let base = vec![0.5; 10];
        let mut more = base.clone();
        more.push(1.0);
        let p = DatasetPair::new(s(&base), s(&more), Neighboring::AddRemove).unwrap();
        let [d, d2] = p.short_sides();
        assert_eq!(d, "[0.5, 0.5, … 8 shared records …] (10 records)");
        assert_eq!(d2, "[0.5, 0.5, … 8 shared records …, 1] (11 records)");
        // Replaced in the middle: shared runs on both sides.
        let mut mid = base.clone();
        mid[5] = -1e308;
        let p = DatasetPair::new(s(&base), s(&mid), Neighboring::ReplaceOne).unwrap();
        let [d, d2] = p.short_sides();
        assert_eq!(
            d,
            "[0.5, 0.5, … 3 shared records …, 0.5, … 3 shared records …, 0.5] (10 records)"
        );
        assert_eq!(
            d2,
            "[0.5, 0.5, … 3 shared records …, -1e308, … 3 shared records …, 0.5] (10 records)"
        );
        // Short datasets in full.
        let p = DatasetPair::new(s(&[1e308]), s(&[1e308, 1e-300]), Neighboring::AddRemove).unwrap();
        assert_eq!(
            p.short_sides(),
            [
                "[1e308] (1 record)".to_string(),
                "[1e308, 1e-300] (2 records)".to_string()
            ]
        );
    }

    #[test]
    fn zero_out_accepts_only_a_record_replaced_by_the_null_record() {
        let z = Neighboring::ZeroOut;
        assert!(DatasetPair::new(s(&[1.0, 3.0]), s(&[1.0, 0.0]), z).is_ok());
        assert!(DatasetPair::new(s(&[1.0, 0.0]), s(&[1.0, 3.0]), z).is_ok());
        // Several null records already present: still one zeroed out.
        assert!(DatasetPair::new(s(&[0.0, 0.0, 3.0]), s(&[0.0, 0.0, 0.0]), z).is_ok());
        let err = DatasetPair::new(s(&[1.0, 3.0]), s(&[1.0, 2.0]), z).unwrap_err();
        assert!(err.to_string().contains("null record"), "{err}");
        assert!(DatasetPair::new(s(&[1.0]), s(&[1.0, 0.0]), z).is_err());
        assert!(DatasetPair::new(s(&[1.0, 3.0]), s(&[0.0, 0.0]), z).is_err());
        let v = Dataset::vectors(2, &[vec![1.0, 2.0]]).unwrap();
        let half = Dataset::vectors(2, &[vec![0.0, 2.0]]).unwrap();
        assert!(
            DatasetPair::new(v, half, z).is_err(),
            "only the all-zero record is null"
        );
        assert_eq!("zero-out".parse::<Neighboring>().unwrap(), z);
        assert_eq!(z.to_string(), "zero-out");
        let err = "zero".parse::<Neighboring>().unwrap_err().to_string();
        assert!(err.contains("zero-out"), "{err}");
    }

    #[test]
    fn add_remove_accepts_only_one_record_difference() {
        assert!(
            DatasetPair::new(s(&[1.0, 2.0]), s(&[2.0, 1.0, 3.0]), Neighboring::AddRemove).is_ok()
        );
        assert!(DatasetPair::new(s(&[]), s(&[3.0]), Neighboring::AddRemove).is_ok());
        assert!(DatasetPair::new(s(&[1.0]), s(&[1.0]), Neighboring::AddRemove).is_err());
        assert!(DatasetPair::new(s(&[1.0]), s(&[2.0]), Neighboring::AddRemove).is_err());
        assert!(DatasetPair::new(s(&[1.0]), s(&[1.0, 2.0, 3.0]), Neighboring::AddRemove).is_err());
        // Duplicates count as a multiset.
        assert!(DatasetPair::new(s(&[1.0, 1.0]), s(&[1.0]), Neighboring::AddRemove).is_ok());
    }

    #[test]
    fn replace_one_accepts_only_one_swap() {
        assert!(DatasetPair::new(s(&[1.0, 2.0]), s(&[1.0, 5.0]), Neighboring::ReplaceOne).is_ok());
        assert!(DatasetPair::new(s(&[1.0, 2.0]), s(&[2.0, 1.0]), Neighboring::ReplaceOne).is_err());
        assert!(DatasetPair::new(s(&[1.0, 2.0]), s(&[3.0, 5.0]), Neighboring::ReplaceOne).is_err());
        assert!(DatasetPair::new(s(&[1.0]), s(&[1.0, 2.0]), Neighboring::ReplaceOne).is_err());
        let msg = DatasetPair::new(s(&[1.0, 2.0]), s(&[3.0, 5.0]), Neighboring::ReplaceOne)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("replace-one"), "{msg}");
    }

    #[test]
    fn vector_records_and_json() {
        let a = Dataset::vectors(2, &[vec![0.0, 1.0], vec![1.0, 1.0]]).unwrap();
        let b = a.with_record(&[0.5, 0.5]).unwrap();
        let p = DatasetPair::new(a, b, Neighboring::AddRemove).unwrap();
        let j = serde_json::to_string(&p).unwrap();
        let back: DatasetPair = serde_json::from_str(&j).unwrap();
        assert_eq!(back, p);
        // A non-neighboring pair is refused on deserialization too.
        let bad = r#"{"first":{"dim":1,"records":[1]},"second":{"dim":1,"records":[2,3,4]},"relation":"add-remove"}"#;
        assert!(serde_json::from_str::<DatasetPair>(bad).is_err());
        assert!(Dataset::vectors(2, &[vec![0.0]]).is_err());
        assert!(Dataset::scalars(vec![f64::NAN]).is_err());
    }

    #[test]
    fn domain_checks() {
        let d = RecordDomain::integer(0, 4, 1).with_sizes(1, 10);
        assert!(d.check(&s(&[0.0, 4.0])).is_ok());
        assert!(d.check(&s(&[5.0])).is_err());
        assert!(d.check(&s(&[0.5])).is_err());
        assert!(d.check(&s(&[])).is_err());
        assert!(RecordDomain::real(1.0, 0.0, 1).validate().is_err());
    }
}
