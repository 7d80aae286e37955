//! Helpers shared by the Rényi, MMD and histogram testers: train/held-out splits, the split of
//! output coordinates into discrete and continuous ones, candidate features fitted on a training
//! split, the empirical Bernstein bound, threshold selection (approximate, training data only) and
//! the exact hockey-stick bound of one held-out event.
//!
//! Nothing here is specific to one divergence; every *reported* number goes through
//! [`empirical_bernstein_lower`]/[`empirical_bernstein_upper`] or the Clopper–Pearson bounds of
//! [`crate::bounds`], both rounded toward the safe side.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Mutex;

use ndarray::ArrayView1;
use rayon::prelude::*;

use super::{Divergence, EventBound};
use crate::bounds::{clopper_pearson_lower, clopper_pearson_upper, wilson_lower, wilson_upper};
use crate::error::{Error, Result};
use crate::mechanisms::{PrivacyClaim, Samples};
use crate::testers::rows::Rows;

/// A hasher for keys that are already well-mixed 64-bit values ([`pattern_key`], cell keys): it
/// passes them through (SipHash would only cost time).
#[derive(Default, Clone, Copy)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix(self.0, u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

/// A map keyed by mixed 64-bit keys.
pub(crate) type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<PassThrough>>;

/// Number of training rows of a side of `n` rows: ⌊n·fraction⌋, kept in [1, n − 1].
pub(crate) fn train_rows(n: usize, fraction: f64) -> usize {
    ((n as f64 * fraction) as usize).clamp(1, n.saturating_sub(1).max(1))
}

/// Checks a train fraction.
pub(crate) fn check_fraction(name: &str, fraction: f64) -> Result<()> {
    if fraction > 0.0 && fraction < 1.0 {
        Ok(())
    } else {
        Err(Error::InvalidConfig(format!(
            "{name} = {fraction}; allowed: strictly between 0 and 1"
        )))
    }
}

/// Maurer & Pontil (2009), "Empirical Bernstein bounds and sample variance penalization",
/// Theorem 4: for i.i.d. Z_1, …, Z_n with values in [0, 1] and n ≥ 2, with probability ≥ 1 − a,
///
/// E Z ≤ Z̄ + √(2·V_n·ln(2/a)/n) + 7·ln(2/a)/(3(n − 1)),
///
/// where V_n = Σ(Z_i − Z̄)²/(n − 1) is the unbiased sample variance. Applied to
/// Z = (X − lo)/(hi − lo) for values X in [lo, hi] (values are clamped into [lo, hi], which only
/// moves a rounding error back inside the range), and rounded **up**: an absolute slack of
/// 8·n·2⁻⁵² (in units of hi − lo) covers the floating-point error of the sums, then the result is
/// capped at hi.
///
/// Returns `hi` when fewer than 2 values are given (nothing can be said).
pub fn empirical_bernstein_upper(values: &[f64], lo: f64, hi: f64, a: f64) -> f64 {
    assert!(
        lo < hi && a > 0.0 && a < 1.0,
        "empirical_bernstein_upper(lo = {lo}, hi = {hi}, a = {a})"
    );
    let n = values.len();
    if n < 2 {
        return hi;
    }
    let w = hi - lo;
    let z = |x: f64| ((x - lo) / w).clamp(0.0, 1.0);
    let nf = n as f64;
    let mean = values.iter().map(|&x| z(x)).sum::<f64>() / nf;
    let var = values
        .iter()
        .map(|&x| {
            let d = z(x) - mean;
            d * d
        })
        .sum::<f64>()
        / (nf - 1.0);
    let l = (2.0 / a).ln();
    let slack = 8.0 * nf * f64::EPSILON;
    let bound_z = mean + (2.0 * var * l / nf).sqrt() + 7.0 * l / (3.0 * (nf - 1.0)) + slack;
    if bound_z >= 1.0 {
        return hi;
    }
    let up = lo + w * bound_z;
    (up + up.abs() * 1e-15).next_up().min(hi)
}

/// The lower counterpart of [`empirical_bernstein_upper`] (Maurer & Pontil 2009, Theorem 4
/// applied to 1 − Z): with probability ≥ 1 − a, E X ≥ the returned value. Rounded **down**;
/// floored at `lo`.
pub fn empirical_bernstein_lower(values: &[f64], lo: f64, hi: f64, a: f64) -> f64 {
    let mirrored: Vec<f64> = values.iter().map(|&x| -x).collect();
    let up = empirical_bernstein_upper(&mirrored, -hi, -lo, a);
    let low = -up;
    (low - low.abs() * 1e-15).next_down().max(lo)
}

/// The Maurer–Pontil deviation term for a variance `var` of values spread over `range`, at
/// sample size m (training data, predicted held-out size; selection only).
pub(crate) fn bernstein_deviation(var: f64, range: f64, m: f64, a: f64) -> f64 {
    let l = (2.0 / a).ln();
    (2.0 * var.max(0.0) * l / m).sqrt() + 7.0 * range * l / (3.0 * (m - 1.0).max(1.0))
}

/// Distinct values (as bits) of coordinate j among rows, up to `cap + 1`. (FxHash: only the
/// count is read, so the hasher cannot change an answer, and SipHash only cost time.)
pub(crate) fn distinct_values(
    s: Rows<'_>,
    rows: std::ops::Range<usize>,
    j: usize,
    cap: usize,
) -> usize {
    let mut seen = rustc_hash::FxHashSet::default();
    // A direct-mapped cache of values already in `seen`, by the top bits of a multiplicative
    // hash: a discrete coordinate's few values are found there without a hash-set insert (a
    // miss only costs the insert, which does not count a value twice).
    let mut cache = [u64::MAX; 256];
    let mut note = |bits: u64| {
        let slot = cache_slot(bits);
        // (u64::MAX, the sentinel, is a NaN and never cached.)
        if cache[slot] != bits || bits == u64::MAX {
            cache[slot] = bits;
            seen.insert(bits);
        }
        seen.len()
    };
    let d = s.dim();
    s.try_blocks(rows, |_, flat| {
        flat.chunks_exact(d)
            .all(|row| note(row[j].to_bits()) <= cap)
    });
    seen.len()
}

/// [`distinct_values`] of every coordinate of `s` at once, in one pass over the rows (a
/// coordinate stops counting when it passes `cap`): the same numbers, reading each row once
/// instead of once per coordinate. For releases of a few coordinates (the float view's five);
/// wider ones are counted a coordinate at a time, in parallel.
pub(crate) fn distinct_values_all(
    s: Rows<'_>,
    rows: std::ops::Range<usize>,
    cap: usize,
) -> Vec<usize> {
    let d = s.dim();
    if let Rows::Packed(_) = s {
        // Packed rows' coordinates read from their bytes: the count, at most cap + 1, that
        // the pass below stops at.
        return (0..d)
            .map(|j| {
                s.packed_distinct(j, rows.clone())
                    .map_or(0, |v| v.len().min(cap + 1))
            })
            .collect();
    }
    let contiguous = s.samples().is_none_or(|v| v.values().as_slice().is_some());
    if d > 16 || !contiguous {
        return (0..d)
            .into_par_iter()
            .map(|j| distinct_values(s, rows.clone(), j, cap))
            .collect();
    }
    let mut seen: Vec<rustc_hash::FxHashSet<u64>> = vec![Default::default(); d];
    // Per coordinate, the direct-mapped cache of `distinct_values`.
    let mut cache = vec![[u64::MAX; 256]; d];
    let mut open: Vec<usize> = (0..d).collect();
    s.try_blocks(rows, |_, flat| {
        for row in flat.chunks_exact(d) {
            let mut k = 0;
            while k < open.len() {
                let j = open[k];
                let bits = row[j].to_bits();
                let slot = cache_slot(bits);
                if cache[j][slot] != bits || bits == u64::MAX {
                    cache[j][slot] = bits;
                    seen[j].insert(bits);
                    if seen[j].len() > cap {
                        open.swap_remove(k);
                        continue;
                    }
                }
                k += 1;
            }
            if open.is_empty() {
                return false;
            }
        }
        true
    });
    seen.iter().map(|h| h.len()).collect()
}

/// Splits the output coordinates, on the training rows only, into discrete ones (at most `cap`
/// distinct values on each side, and at most a tenth of the training size) and continuous ones.
/// Coordinates constant on both sides are dropped unless the constants differ (then discrete).
///
/// The split is symmetric in its sides: swapping (p, np) and (q, nq) swaps the two counts of a
/// coordinate (their maximum is the same), the two row-0 values (their inequality is the same)
/// and np, nq (their minimum is the same). So the two directions of a test, and every ε, get
/// the same split: it is formed once and kept by the samples' ids ([`Samples::id`]: the same
/// id means the same values), sides in a fixed order.
pub(crate) fn coordinate_kinds(
    p: &Samples,
    np: usize,
    q: &Samples,
    nq: usize,
    cap: usize,
) -> (Vec<usize>, Vec<usize>) {
    type Kinds = (Vec<usize>, Vec<usize>);
    #[allow(clippy::type_complexity)]
    static KINDS: Mutex<Vec<((u64, usize, u64, usize, usize), Kinds)>> = Mutex::new(Vec::new());
    let (a, b) = ((p.id(), np), (q.id(), nq));
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    let key = (a.0, a.1, b.0, b.1, cap);
    let memo = || KINDS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, k)) = memo().iter().find(|(k, _)| *k == key) {
        return k.clone();
    }
    let kinds = form_coordinate_kinds(p, np, q, nq, cap);
    let mut m = memo();
    if m.len() >= 8 {
        m.remove(0);
    }
    m.push((key, kinds.clone()));
    kinds
}

/// [`coordinate_kinds`], formed.
fn form_coordinate_kinds(
    p: &Samples,
    np: usize,
    q: &Samples,
    nq: usize,
    cap: usize,
) -> (Vec<usize>, Vec<usize>) {
    let mut discrete = Vec::new();
    let mut continuous = Vec::new();
    let (dp, dq) = rayon::join(
        || distinct_values_all(p.into(), 0..np, cap),
        || distinct_values_all(q.into(), 0..nq, cap),
    );
    for (j, (dp, dq)) in dp.into_iter().zip(dq).enumerate() {
        let most = dp.max(dq);
        if most <= 1 {
            if p.values()[[0, j]].to_bits() != q.values()[[0, j]].to_bits() {
                discrete.push(j);
            }
            continue;
        }
        if most <= cap && most * 10 <= np.min(nq) {
            discrete.push(j);
        } else {
            continuous.push(j);
        }
    }
    (discrete, continuous)
}

/// SplitMix64-style mixing of a 64-bit word into a running hash.
pub(crate) fn mix(h: u64, w: u64) -> u64 {
    let mut z = h ^ w.wrapping_add(0x9E37_79B9_7F4A_7C15).wrapping_add(h << 6);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A 64-bit key of the values (bit patterns) of `coords` in `row`. A collision merges two output
/// patterns into one cell; any fixed function of the output defines a valid partition, so
/// collisions can cost power but never validity.
pub(crate) fn pattern_key(row: &ArrayView1<'_, f64>, coords: &[usize]) -> u64 {
    match row.as_slice() {
        Some(row) => pattern_key_of(row, coords),
        None => coords
            .iter()
            .fold(0x5151_5151_u64, |h, &c| mix(h, row[c].to_bits())),
    }
}

/// [`pattern_key`] of a row given as a slice (the same fold, the same key).
pub(crate) fn pattern_key_of(row: &[f64], coords: &[usize]) -> u64 {
    coords
        .iter()
        .fold(0x5151_5151_u64, |h, &c| mix(h, row[c].to_bits()))
}

/// Smoothed log-likelihood ratio ln((c_P + ½)/(n_P + ½A)) − ln((c_Q + ½)/(n_Q + ½A)) of the cells
/// given by `key` on the first `np`/`nq` rows (A = number of distinct cells seen).
pub(crate) fn log_ratio_table(
    p: &Samples,
    np: usize,
    q: &Samples,
    nq: usize,
    key: impl Fn(&ArrayView1<'_, f64>) -> u64,
) -> KeyMap<f64> {
    let mut counts: KeyMap<(f64, f64)> = KeyMap::default();
    for i in 0..np {
        counts.entry(key(&p.row(i))).or_default().0 += 1.0;
    }
    for i in 0..nq {
        counts.entry(key(&q.row(i))).or_default().1 += 1.0;
    }
    let a = counts.len() as f64;
    counts
        .into_iter()
        .map(|(k, (cp, cq))| {
            let lr = ((cp + 0.5) / (np as f64 + 0.5 * a)).ln()
                - ((cq + 0.5) / (nq as f64 + 0.5 * a)).ln();
            (k, lr)
        })
        .collect()
}

/// A real-valued feature of an output, fitted on training rows only.
#[derive(Clone, Debug)]
pub(crate) enum Feature {
    /// sign · x_j.
    Coordinate { j: usize, sign: f64 },
    /// w · x (a diagonal linear discriminant: w_j = (mean_P − mean_Q)/pooled variance, on the
    /// continuous coordinates).
    Linear { w: Vec<f64> },
    /// Smoothed estimated log-likelihood ratio of the pattern of the discrete coordinates
    /// `coords`; unseen patterns get 0.
    Atoms {
        coords: Vec<usize>,
        table: KeyMap<f64>,
    },
}

impl Feature {
    pub(crate) fn eval(&self, row: &ArrayView1<'_, f64>) -> f64 {
        if let Some(row) = row.as_slice() {
            return self.eval_slice(row);
        }
        match self {
            Feature::Coordinate { j, sign } => sign * row[*j],
            Feature::Linear { w } => w.iter().zip(row.iter()).map(|(a, b)| a * b).sum(),
            Feature::Atoms { coords, table } => {
                *table.get(&pattern_key(row, coords)).unwrap_or(&0.0)
            }
        }
    }

    /// [`Self::eval`] of a row given as a slice: the same operations in the same order.
    pub(crate) fn eval_slice(&self, row: &[f64]) -> f64 {
        match self {
            Feature::Coordinate { j, sign } => sign * row[*j],
            Feature::Linear { w } => w.iter().zip(row).map(|(a, b)| a * b).sum(),
            Feature::Atoms { coords, table } => {
                *table.get(&pattern_key_of(row, coords)).unwrap_or(&0.0)
            }
        }
    }

    pub(crate) fn describe(&self) -> String {
        match self {
            Feature::Coordinate { j, sign } => {
                if *sign > 0.0 {
                    format!("coordinate {j}")
                } else {
                    format!("−(coordinate {j})")
                }
            }
            Feature::Linear { w } => {
                let shown: Vec<String> = w.iter().take(8).map(|v| format!("{v:.3e}")).collect();
                format!(
                    "linear discriminant w·x, w = [{}{}]",
                    shown.join(", "),
                    if w.len() > 8 { ", …" } else { "" }
                )
            }
            Feature::Atoms { coords, table } => format!(
                "estimated log-likelihood ratio of the values of coordinates {coords:?} ({} patterns seen in training)",
                table.len()
            ),
        }
    }

    /// Values on rows `rows` of `s`. Row-major samples (all but views) are read as one slice,
    /// in parallel blocks of rows written to their own places: each value is computed alone,
    /// so the result is the same on any number of threads.
    pub(crate) fn values(&self, s: &Samples, rows: std::ops::Range<usize>) -> Vec<f64> {
        let d = s.dim();
        let Some(flat) = s.values().as_slice() else {
            return rows.map(|i| self.eval(&s.row(i))).collect();
        };
        let flat = &flat[rows.start * d..rows.end * d];
        let mut out = vec![0.0; rows.len()];
        const BLOCK: usize = 1 << 14;
        out.par_chunks_mut(BLOCK)
            .zip(flat.par_chunks(BLOCK * d))
            .for_each(|(o, x)| {
                for (v, row) in o.iter_mut().zip(x.chunks_exact(d)) {
                    *v = self.eval_slice(row);
                }
            });
        out
    }
}

/// The diagonal linear discriminant on `continuous` coordinates from the training rows, or `None`
/// if it is zero.
pub(crate) fn linear_discriminant(
    p: &Samples,
    np: usize,
    q: &Samples,
    nq: usize,
    continuous: &[usize],
) -> Option<Feature> {
    let mut w = vec![0.0; p.dim()];
    for &j in continuous {
        let (cp, cq) = (p.column(j), q.column(j));
        let mp = (0..np).map(|i| cp[i]).sum::<f64>() / np as f64;
        let mq = (0..nq).map(|i| cq[i]).sum::<f64>() / nq as f64;
        let ss = (0..np).map(|i| (cp[i] - mp).powi(2)).sum::<f64>()
            + (0..nq).map(|i| (cq[i] - mq).powi(2)).sum::<f64>();
        let var = ss / (np + nq).saturating_sub(2).max(1) as f64;
        if var > 0.0 && var.is_finite() {
            w[j] = (mp - mq) / var;
        }
    }
    (w.iter().any(|v| *v != 0.0 && v.is_finite())).then_some(Feature::Linear { w })
}

/// Candidate features from the training rows: for continuous coordinates, each coordinate (with
/// both signs if `both_signs`) and, when there are at least two, the linear discriminant; for
/// discrete coordinates, the smoothed log-likelihood-ratio table of their joint pattern.
pub(crate) fn candidate_features(
    p: &Samples,
    np: usize,
    q: &Samples,
    nq: usize,
    cap: usize,
    both_signs: bool,
) -> Vec<Feature> {
    candidate_features_with(p, np, q, nq, cap, both_signs, |coords| {
        let table = log_ratio_table(p, np, q, nq, |r| pattern_key(r, &coords));
        Feature::Atoms { coords, table }
    })
}

/// [`candidate_features`] with the pattern feature of the discrete coordinates formed by
/// `atoms` (which must return the [`Feature::Atoms`] of [`log_ratio_table`] on those
/// coordinates, or an equal one: the MMD tester forms it from counts it shares between
/// directions).
pub(crate) fn candidate_features_with(
    p: &Samples,
    np: usize,
    q: &Samples,
    nq: usize,
    cap: usize,
    both_signs: bool,
    atoms: impl FnOnce(Vec<usize>) -> Feature,
) -> Vec<Feature> {
    let (discrete, continuous) = coordinate_kinds(p, np, q, nq, cap);
    let mut out = Vec::new();
    for &j in &continuous {
        out.push(Feature::Coordinate { j, sign: 1.0 });
        if both_signs {
            out.push(Feature::Coordinate { j, sign: -1.0 });
        }
    }
    if continuous.len() >= 2
        && let Some(f) = linear_discriminant(p, np, q, nq, &continuous)
    {
        out.push(f);
    }
    if !discrete.is_empty() {
        out.push(atoms(discrete));
    }
    if out.is_empty() {
        // Every coordinate constant and equal on both sides: one trivial feature.
        out.push(Feature::Coordinate { j: 0, sign: 1.0 });
    }
    out
}

/// Sorts descending (total order). Any sort gives the same result: values equal under
/// `total_cmp` have identical bits, so no order among them can be seen. Long lists of at most
/// [`COUNTED_VALUES`] distinct values (a feature of the float-representation view, a witness
/// of discrete releases) by counting them ([`distinct_counts`]) and writing each value's run,
/// other long lists by [`radix_sort_desc`], short ones by `sort_unstable_by`. The count gives
/// up once it has seen one value too many (a continuous list within its first thousand or so).
pub(crate) fn sorted_desc(mut v: Vec<f64>) -> Vec<f64> {
    if v.len() >= 4096 {
        let Some(mut runs) = distinct_counts(&v) else {
            return radix_sort_desc(v);
        };
        runs.sort_unstable_by(|a, b| f64::from_bits(b.0).total_cmp(&f64::from_bits(a.0)));
        let mut at = 0;
        for (bits, n) in runs {
            v[at..at + n].fill(f64::from_bits(bits));
            at += n;
        }
        return v;
    }
    v.sort_unstable_by(|a, b| b.total_cmp(a));
    v
}

/// Most distinct values [`distinct_counts`] counts (and the hockey-stick tester keeps a
/// side's sorted scores as runs of).
pub(crate) const COUNTED_VALUES: usize = 1024;

/// The integers −SMALL..SMALL are counted by value ([`distinct_counts`]).
const SMALL: i64 = 256;

/// (bit pattern, how many) of each distinct value of `v`, in no particular order; `None` when
/// there are more than [`COUNTED_VALUES`].
pub(crate) fn distinct_counts(v: &[f64]) -> Option<Vec<(u64, usize)>> {
    let mut index: rustc_hash::FxHashMap<u64, usize> = rustc_hash::FxHashMap::default();
    let mut counts: Vec<(u64, usize)> = Vec::new();
    // Small integers (a coordinate of the float-representation view, a count, a flag) are
    // counted in an array by their value: x is the integer k exactly when k's f64 has x's bits
    // (−0 is not, and goes below).
    let mut small = [0usize; 2 * SMALL as usize];
    // Other values: a direct-mapped cache of (bits, index into `counts`) by the top bits of a
    // multiplicative hash: a discrete score's few values are counted there without a hash-map
    // lookup (a miss only costs the lookup).
    let mut cache = [(u64::MAX, usize::MAX); 256];
    for &x in v {
        let bits = x.to_bits();
        let k = x as i64;
        if (-SMALL..SMALL).contains(&k) && (k as f64).to_bits() == bits {
            small[(k + SMALL) as usize] += 1;
            continue;
        }
        let slot = cache_slot(bits);
        let (cached, k) = cache[slot];
        if cached == bits && k != usize::MAX {
            counts[k].1 += 1;
            continue;
        }
        let k = *index.entry(bits).or_insert_with(|| {
            counts.push((bits, 0));
            counts.len() - 1
        });
        if counts.len() > COUNTED_VALUES {
            return None;
        }
        counts[k].1 += 1;
        cache[slot] = (bits, k);
    }
    for (k, &n) in (-SMALL..SMALL).zip(&small) {
        if n > 0 {
            counts.push(((k as f64).to_bits(), n));
        }
    }
    (counts.len() <= COUNTED_VALUES).then_some(counts)
}

/// The key of a value whose unsigned order is `total_cmp`'s: negative values (sign bit set)
/// have all bits flipped (larger magnitudes, larger bits, come first), the others only the sign
/// bit (after every negative value). One-to-one; [`total_order_value`] undoes it.
pub(crate) fn total_order_key(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// The value of a [`total_order_key`].
pub(crate) fn total_order_value(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Sorts descending by `total_cmp`: a least-significant-digit radix sort (8 passes of 8 bits
/// over the complemented [`total_order_key`]s, skipping the passes whose digit is the same in
/// every key), linear in the length. Hand-written: the sort crates we checked offer no sort of
/// f64 in `total_cmp`'s order (−0 before +0, NaNs by sign) without a comparison per step.
/// The result is the one sorted order of the values (see [`sorted_desc`]).
///
/// The keys are formed in `v`'s own allocation and the values come back in one of the two
/// buffers (`collect` of a mapped `into_iter` of the same size reuses the allocation), so the
/// sort holds two arrays of `v`'s size, not three.
fn radix_sort_desc(v: Vec<f64>) -> Vec<f64> {
    let n = v.len();
    let mut keys: Vec<u64> = v.into_iter().map(|x| !total_order_key(x)).collect();
    let mut counts = vec![[0usize; 256]; 8];
    for &k in &keys {
        for (d, c) in counts.iter_mut().enumerate() {
            c[((k >> (8 * d)) & 0xFF) as usize] += 1;
        }
    }
    let mut other = vec![0u64; n];
    for (d, c) in counts.iter().enumerate() {
        if c.contains(&n) {
            continue;
        }
        let mut next = [0usize; 256];
        let mut sum = 0;
        for (o, &k) in next.iter_mut().zip(c) {
            *o = sum;
            sum += k;
        }
        for &k in &keys {
            let b = ((k >> (8 * d)) & 0xFF) as usize;
            other[next[b]] = k;
            next[b] += 1;
        }
        std::mem::swap(&mut keys, &mut other);
    }
    drop(other);
    keys.into_iter().map(|k| total_order_value(!k)).collect()
}

/// Best threshold t for the event {score ≥ t} on the training split, by the value `objective`
/// takes at the Wilson bounds (quantile `z`) predicted for held-out sizes (m_p, m_q). Selection
/// only: no claim is made here. `sp`, `sq` are training scores sorted descending. Returns
/// (t, predicted value).
pub(crate) fn best_threshold(
    sp: &[f64],
    sq: &[f64],
    m_p: f64,
    m_q: f64,
    z: f64,
    objective: impl Fn(f64, f64) -> f64,
) -> Option<(f64, f64)> {
    best_of_thresholds(&ThresholdCounts::of(sp, sq), m_p, m_q, z, objective)
}

/// The thresholds [`best_threshold`] visits, with the training counts at each: a function of
/// the sorted training scores only (not of the objective, the quantile or the held-out sizes),
/// so a tester that asks for several objectives of the same scores forms it once.
#[derive(Clone, Debug, Default)]
pub(crate) struct ThresholdCounts {
    /// Training sizes of the two sides (as reals).
    np: f64,
    nq: f64,
    /// (t, k_p, k_q): the threshold and how many training scores of each side are ≥ t.
    points: Vec<(f64, f64, f64)>,
}

impl ThresholdCounts {
    /// The thresholds of `sp` (training scores sorted descending) at the ranks
    /// [`threshold_ranks`] steps by [`THRESHOLD_GROWTH`], skipping repeats and −∞, with the
    /// counts of `sp` and `sq` ≥ each.
    pub(crate) fn of(sp: &[f64], sq: &[f64]) -> Self {
        let (np, nq) = (sp.len() as f64, sq.len() as f64);
        if sp.is_empty() || sq.is_empty() {
            return Self::default();
        }
        let count_ge = |v: &[f64], t: f64| v.partition_point(|&x| x >= t) as f64;
        let mut points = Vec::new();
        let mut last_t = f64::NAN;
        for r in threshold_ranks(sp.len(), THRESHOLD_GROWTH) {
            let t = sp[r - 1];
            if t == last_t || t == f64::NEG_INFINITY {
                continue;
            }
            last_t = t;
            points.push((t, count_ge(sp, t), count_ge(sq, t)));
        }
        Self { np, nq, points }
    }

    /// [`Self::of`] with `sq` in any order: the same thresholds and counts. When every value
    /// is finite, the counts of `sq` come from one pass over it (each value counts toward
    /// every threshold ≤ it: the thresholds strictly decrease, so those form a suffix, found
    /// by a search of the thresholds), instead of sorting it; otherwise `sq` is sorted.
    pub(crate) fn of_unsorted_q(sp: &[f64], sq: &[f64]) -> Self {
        if sp.is_empty() || sq.is_empty() {
            return Self::of(sp, sq);
        }
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        if !(finite(sp) && finite(sq)) {
            return Self::of(sp, &sorted_desc(sq.to_vec()));
        }
        let mut counts = Self::of(sp, &[0.0]);
        if counts.points.is_empty() {
            return Self::of(sp, sq);
        }
        counts.nq = sq.len() as f64;
        let ts: Vec<f64> = counts.points.iter().map(|&(t, _, _)| t).collect();
        let mut first = vec![0usize; ts.len() + 1];
        for &x in sq {
            first[ts.partition_point(|&t| t > x)] += 1;
        }
        let mut below = 0usize;
        for (point, n) in counts.points.iter_mut().zip(&first) {
            below += n;
            point.2 = below as f64;
        }
        counts
    }

    /// [`Self::of`] with both lists in any order: the same thresholds and counts as
    /// [`Self::of_unsorted_q`] of `sp` sorted, without sorting `sp` when it is long and every
    /// value is finite ([`Self::bucketed`]).
    pub(crate) fn of_unsorted(sp: Vec<f64>, sq: &[f64]) -> Self {
        let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
        if sp.len() < BUCKETED_FROM || sq.is_empty() || !(finite(&sp) && finite(sq)) {
            return Self::of_unsorted_q(&sorted_desc(sp), sq);
        }
        Self::bucketed(&sp, sq)
    }

    /// [`Self::of`] of long finite lists in any order. `of` reads the sorted `sp` only at its
    /// thresholds' ranks (1, 2, …, then ×1.06: about 150 of 10^4 values) and counts each list
    /// at or above each threshold, so a full sort is not needed: the values go into
    /// [`BUCKETS`] buckets by their place between `sp`'s least and greatest value (the bucket
    /// of x is ⌊(x − min)·scale⌋, which never decreases as x grows: each step rounds to
    /// nearest, and rounding is monotone, so a higher bucket holds only greater values), and
    /// only the buckets that hold a threshold's rank are sorted (by `total_cmp`, as
    /// [`sorted_desc`] orders ±0). A count at or above t is the count in the buckets above
    /// t's plus those in its bucket at or above t: x ≥ t exactly when x's [`total_order_key`]
    /// is at least t's (finite values), or −0's when t is ±0 (both zeros are ≥ either).
    ///
    /// Hand-written: a selection of many ranks with counts at each has no crate we know of.
    fn bucketed(sp: &[f64], sq: &[f64]) -> Self {
        let (min, max) = sp
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        let range = max - min;
        let scale = if range > 0.0 && range.is_finite() {
            (BUCKETS - 1) as f64 / range
        } else {
            0.0
        };
        // (x − min)·scale is in [0, BUCKETS − 1] up to rounding for x in [min, max]; the
        // conversion through i32 is the cheaper saturating one.
        let bucket = |x: f64| (((x - min) * scale) as i32 as usize).min(BUCKETS - 1);
        // Each list's count per bucket (values of Q outside [min, max] apart: those above are
        // at or above every threshold, those below under every one).
        let counted = |v: &[f64]| {
            let mut counts = vec![0usize; BUCKETS];
            let mut top = 0usize;
            for &x in v {
                if x > max {
                    top += 1;
                } else if x >= min {
                    counts[bucket(x)] += 1;
                }
            }
            (counts, top)
        };
        let (count_p, _) = counted(sp);
        let (count_q, top_q) = counted(sq);
        // How many of a list lie in the buckets above each.
        let above_of = |counts: &[usize], top: usize| {
            let mut above = vec![0usize; BUCKETS];
            let mut acc = top;
            for b in (0..BUCKETS).rev() {
                above[b] = acc;
                acc += counts[b];
            }
            above
        };
        let (above_p, above_q) = (above_of(&count_p, 0), above_of(&count_q, top_q));
        // The thresholds' ranks (as `of` steps them) and their buckets; the buckets that hold
        // one, in descending order.
        let mut ranks: Vec<(usize, usize)> = Vec::new();
        let mut wanted = vec![false; BUCKETS];
        let mut b = BUCKETS - 1;
        for r in threshold_ranks(sp.len(), THRESHOLD_GROWTH) {
            while above_p[b] + count_p[b] < r {
                b -= 1;
            }
            ranks.push((r, b));
            wanted[b] = true;
        }
        // Each list's keys in the wanted buckets, laid out bucket after bucket (exact sizes
        // from the counts), each bucket sorted descending.
        let gathered = |v: &[f64], counts: &[usize]| {
            let mut start = vec![usize::MAX; BUCKETS];
            let mut len = 0;
            for b in (0..BUCKETS).filter(|&b| wanted[b]) {
                start[b] = len;
                len += counts[b];
            }
            let mut keys = vec![0u64; len];
            let mut fill = start.clone();
            for &x in v {
                if x >= min && x <= max {
                    let b = bucket(x);
                    if wanted[b] {
                        keys[fill[b]] = total_order_key(x);
                        fill[b] += 1;
                    }
                }
            }
            for b in (0..BUCKETS).filter(|&b| wanted[b]) {
                let k = &mut keys[start[b]..start[b] + counts[b]];
                // A discrete score's bucket often holds one value many times: left as it is.
                if k.iter().any(|&x| x != k[0]) {
                    k.sort_unstable_by(|a, b| b.cmp(a));
                }
            }
            (keys, start)
        };
        let (keys_p, start_p) = gathered(sp, &count_p);
        let (keys_q, start_q) = gathered(sq, &count_q);
        let mut points = Vec::new();
        let mut last_t = f64::NAN;
        for (r, b) in ranks {
            let in_p = &keys_p[start_p[b]..start_p[b] + count_p[b]];
            let in_q = &keys_q[start_q[b]..start_q[b] + count_q[b]];
            let key = in_p[r - above_p[b] - 1];
            let t = total_order_value(key);
            if t == last_t {
                continue;
            }
            last_t = t;
            let at_least = if t == 0.0 { total_order_key(-0.0) } else { key };
            let ge = |keys: &[u64]| keys.partition_point(|&k| k >= at_least);
            points.push((
                t,
                (above_p[b] + ge(in_p)) as f64,
                (above_q[b] + ge(in_q)) as f64,
            ));
        }
        Self {
            np: sp.len() as f64,
            nq: sq.len() as f64,
            points,
        }
    }
}

/// Buckets of [`ThresholdCounts::bucketed`].
const BUCKETS: usize = 2048;

/// Shortest `sp` [`ThresholdCounts::of_unsorted`] counts by buckets (shorter ones are sorted).
const BUCKETED_FROM: usize = 4096;

/// The growth of [`ThresholdCounts`]' threshold ranks.
const THRESHOLD_GROWTH: f64 = 1.06;

/// The ranks (from 1) at which a sorted list of `len` values is read for thresholds: 1, then
/// each step the larger of ×`growth` and +1 (kept as a real, read truncated), while at most
/// `len`. Shared by every threshold walk ([`ThresholdCounts::of`], its bucketed form, the
/// hockey-stick tester's curves).
pub(crate) fn threshold_ranks(len: usize, growth: f64) -> impl Iterator<Item = usize> {
    std::iter::successors(Some(1.0_f64), move |&rank| {
        Some((rank * growth).max(rank + 1.0))
    })
    .map(|rank| rank as usize)
    .take_while(move |&r| r <= len)
}

/// The slot of `bits` in a direct-mapped cache of 256 entries (the top byte of a
/// multiplicative hash), as the distinct-value counts use one.
pub(crate) fn cache_slot(bits: u64) -> usize {
    (bits.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as usize
}

/// [`best_threshold`] over thresholds already counted: the first threshold with the largest
/// `objective` at the predicted Wilson bounds, `None` when there is none.
pub(crate) fn best_of_thresholds(
    counts: &ThresholdCounts,
    m_p: f64,
    m_q: f64,
    z: f64,
    objective: impl Fn(f64, f64) -> f64,
) -> Option<(f64, f64)> {
    let (np, nq) = (counts.np, counts.nq);
    let mut best: Option<(f64, f64)> = None;
    for &(t, kp, kq) in &counts.points {
        let pl = wilson_lower(kp / np * m_p, m_p, z);
        let qu = wilson_upper(kq / nq * m_q, m_q, z);
        let pred = objective(pl, qu);
        if best.is_none_or(|(_, b)| pred > b) {
            best = Some((t, pred));
        }
    }
    best
}

/// L = p_lower − e^ε·q_upper with e^ε·q_upper rounded up first, then the difference rounded down;
/// floored at 0. Identical to the hockey-stick tester's rounding.
pub(crate) fn hockey_stick_value(p_lower: f64, q_upper: f64, e_eps: f64) -> f64 {
    let raw = p_lower - (e_eps * q_upper) * (1.0 + 1e-12);
    if raw > 0.0 { raw.next_down() } else { 0.0 }
}

/// An event S chosen on a training split, counted on the held-out rows of each side: `k_p` of
/// `m_p` releases of P and `k_q` of `m_q` of Q fall in S, with one-sided Clopper–Pearson bounds
/// `p_lower` ≤ P(S) and `q_upper` ≥ Q(S). The last step every event-based tester shares.
pub(crate) struct HeldOutEvent {
    pub(crate) k_p: u64,
    pub(crate) m_p: usize,
    pub(crate) k_q: u64,
    pub(crate) m_q: usize,
    pub(crate) p_lower: f64,
    pub(crate) q_upper: f64,
    /// The failure probability of each bound.
    pub(crate) half: f64,
}

impl HeldOutEvent {
    /// The counts with their Clopper–Pearson bounds, each at failure probability `half`.
    pub(crate) fn bound(k_p: u64, m_p: usize, k_q: u64, m_q: usize, half: f64) -> Self {
        Self {
            k_p,
            m_p,
            k_q,
            m_q,
            p_lower: clopper_pearson_lower(k_p, m_p as u64, half),
            q_upper: clopper_pearson_upper(k_q, m_q as u64, half),
            half,
        }
    }

    /// The lower bound P(S) − e^ε·Q(S) ≥ [`hockey_stick_value`] of the two bounds.
    pub(crate) fn hockey_stick(&self, e_eps: f64) -> f64 {
        hockey_stick_value(self.p_lower, self.q_upper, e_eps)
    }

    /// The plug-in k_p/m_p − e^ε·k_q/m_q (for reading only).
    pub(crate) fn hockey_stick_point(&self, e_eps: f64) -> f64 {
        self.k_p as f64 / self.m_p as f64 - e_eps * self.k_q as f64 / self.m_q as f64
    }

    /// The record of the event, described as `description`.
    pub(crate) fn event(&self, description: String) -> EventBound {
        EventBound {
            description,
            count_p: self.k_p,
            n_p: self.m_p as u64,
            count_q: self.k_q,
            n_q: self.m_q as u64,
            p_lower: Some(self.p_lower),
            q_upper: Some(self.q_upper),
            contrast: None,
            binomial: None,
            count_beta: Some(self.half),
        }
    }
}

/// The hockey-stick ε of a divergence, validated; an error naming the tester otherwise.
pub(crate) fn hockey_stick_epsilon(tester: &str, divergence: Divergence) -> Result<f64> {
    let Divergence::HockeyStick { epsilon } = divergence else {
        return Err(Error::InvalidConfig(format!(
            "the {tester} tester bounds hockey-stick divergences, not {divergence}"
        )));
    };
    if !(epsilon.is_finite() && epsilon >= 0.0) {
        return Err(Error::InvalidConfig(format!(
            "ε = {epsilon}; allowed: finite and ≥ 0"
        )));
    }
    Ok(epsilon)
}

/// The hockey-stick plan shared by every tester that bounds H_{e^ε}: the claim's own ε for pure
/// and approximate claims; for profile claims an evenly spaced grid of `grid` values on
/// (0, ε_max], ε_max the largest ε ≤ 20 at which the claim still allows δ ≥ 1/(10n). Depends on
/// the claim and n only. A Bayesian claim is refused first (no hockey-stick tester tests one).
pub(crate) fn hockey_stick_plan(
    tester: &str,
    claim: &PrivacyClaim,
    samples_per_side: usize,
    grid: usize,
) -> Result<Vec<Divergence>> {
    super::refuse_bayesian(tester, claim)?;
    if let Some(epsilon) = claim.natural_epsilon() {
        return Ok(vec![Divergence::HockeyStick { epsilon }]);
    }
    let eps_max = profile_eps_max(claim, samples_per_side);
    if eps_max <= 0.0 {
        return Err(Error::ClaimNotTestable {
            tester: tester.into(),
            claim: claim.to_string(),
            reason: "the claim allows δ ≥ 1/(10n) only at ε = 0".into(),
        });
    }
    let k = grid.max(1);
    Ok((1..=k)
        .map(|i| Divergence::HockeyStick {
            epsilon: eps_max * i as f64 / k as f64,
        })
        .collect())
}

/// The largest ε of a profile claim's grid: where the claim allows δ ≥ 1/(10n) (at most 20);
/// 0 when it allows that little only at ε = 0.
fn profile_eps_max(claim: &PrivacyClaim, samples_per_side: usize) -> f64 {
    let floor = 0.1 / samples_per_side.max(1) as f64;
    let allows = |e: f64| claim.delta_at(e).unwrap_or(0.0);
    let mut eps_max = 20.0;
    if allows(eps_max) < floor {
        let (mut lo, mut hi) = (0.0, 20.0);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if allows(mid) >= floor {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        eps_max = lo;
    }
    eps_max
}

/// How much smaller the noise of the alternative [`planned_profile_epsilon`] plans for is:
/// the claim's own mechanism with its noise divided by 1.05.
pub(crate) const PLANNING_NOISE_REDUCTION: f64 = 1.05;

/// For a profile claim (Gaussian DP, zCDP, Rényi, DP-SGD): the ε at which the hockey-stick test
/// is most likely to catch the claim's own mechanism run with slightly less noise
/// ([`PLANNING_NOISE_REDUCTION`]), computed from the claim alone, before any release is drawn.
/// `None` for claims with their own ε (pure, approximate) or whose parameter is not a noise
/// scale, and when no ε of the grid shows the difference.
///
/// Why. A profile claim bounds δ(ε) at every ε; the tester may choose ε on its training split,
/// but over twenty ε values and hundreds of events the training split's noise (its estimate of
/// each candidate's held-out z has a standard deviation of about √(held-out/training) = 2)
/// often picks an ε where the violation is weak (measured on the scaled-noise Gaussian: the
/// audits that missed s = 0.9 had chosen ε ≥ 0.5, where the true z is below 3.4 against 5.3 at
/// ε = 0.16). An ε fixed in advance has no selection noise; this one is where the local
/// alternative is strongest.
///
/// How. For the claim's profile δ and the alternative's δ₁ (the claim with its noise scaled,
/// [`PrivacyClaim::with_noise_scaled`]), the best event at ε for δ₁'s dominating pair has
/// B(S) = −δ₁′(ε)e^{−ε} and A(S) = δ₁(ε) + e^ε B(S) (the profile's derivative identity,
/// δ′(ε) = −e^ε B(L > ε)), so the test of n Poissonized releases per side reaches
/// z(ε) = √n (δ₁(ε) − δ(ε)) / √(A(S) + e^{2ε} B(S)); the planned ε maximizes it on 80 points
/// of the grid's range (derivatives by central differences). For μ-GDP this is ε ≈ 0.61μ at small μ (0.164 at
/// μ = 0.268). Only where the test looks depends on this; what the claim allows is read off
/// the claim itself, so any choice is sound.
pub(crate) fn planned_profile_epsilon(
    claim: &PrivacyClaim,
    samples_per_side: usize,
) -> Option<f64> {
    if claim.natural_epsilon().is_some() {
        return None;
    }
    // Planned once per (claim, n): a search plans every trial's audit with the same claim, and
    // a DP-SGD profile's δ(ε) costs a pass over its PLD per point.
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    type Key = (String, usize);
    static PLANNED: OnceLock<Mutex<HashMap<Key, Option<f64>>>> = OnceLock::new();
    let key = (format!("{claim:?}"), samples_per_side);
    let cache = PLANNED.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&key).copied()) {
        return hit;
    }
    let planned = plan_profile_epsilon(claim, samples_per_side);
    if let Ok(mut c) = cache.lock() {
        c.insert(key, planned);
    }
    planned
}

/// [`planned_profile_epsilon`]'s computation, uncached.
fn plan_profile_epsilon(claim: &PrivacyClaim, samples_per_side: usize) -> Option<f64> {
    let alt = claim.with_noise_scaled(1.0 / PLANNING_NOISE_REDUCTION)?;
    let eps_max = profile_eps_max(claim, samples_per_side);
    if eps_max.is_nan() || eps_max <= 0.0 {
        return None;
    }
    const POINTS: usize = 80;
    let h = eps_max / POINTS as f64;
    let grid: Vec<f64> = (0..=POINTS + 1).map(|i| i as f64 * h).collect();
    let claimed: Vec<f64> = grid
        .iter()
        .map(|&e| claim.delta_at(e))
        .collect::<Option<_>>()?;
    let shifted: Vec<f64> = grid
        .iter()
        .map(|&e| alt.delta_at(e))
        .collect::<Option<_>>()?;
    let mut best: Option<(f64, f64)> = None;
    for i in 1..=POINTS {
        let e = grid[i];
        let b = (-(shifted[i + 1] - shifted[i - 1]) / (2.0 * h) * (-e).exp()).max(0.0);
        let a = shifted[i] + e.exp() * b;
        let var = a + (2.0 * e).exp() * b;
        let gap = shifted[i] - claimed[i];
        if !(var > 0.0 && gap > 0.0) {
            continue;
        }
        let z = gap / var.sqrt();
        if best.is_none_or(|(_, zb)| z > zb) {
            best = Some((e, z));
        }
    }
    best.map(|(e, _)| e)
}

/// Samples and calls that the testers' unit tests share.
#[cfg(test)]
pub(crate) mod fixtures {
    use rand::RngExt;
    use rand_distr::{Distribution, Normal};

    use crate::mechanisms::Samples;
    use crate::rng::{AuditRng, Seed, Stream};
    use crate::testers::{Divergence, Measurement, PropertyTester};

    /// Values a sort by total_cmp must place exactly: signed zeros, infinities, NaNs of both
    /// signs, subnormals of both signs, and two ordinary values.
    pub(crate) const SORT_SPECIALS: [f64; 10] = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::MIN_POSITIVE / 4.0,
        -f64::MIN_POSITIVE / 4.0,
        1.0,
        -1.0,
    ];

    /// n draws of N(`mean`, `sd`²) from the seeded stream (`tag`, 0); each tester's tests draw
    /// from a tag of their own.
    pub(crate) fn gaussian(n: usize, mean: f64, sd: f64, seed: u64, tag: u64) -> Samples {
        let mut rng = Seed(seed).rng(Stream::Other { tag, index: 0 });
        let d = Normal::new(mean, sd).unwrap();
        Samples::from_column((0..n).map(|_| d.sample(&mut rng)).collect())
    }

    /// Randomized response with p = 0.9 vs 0.1, 20 000 releases a side (H = 0.8 at ε = 0), and
    /// the stream that drew them, which the tester then continues.
    pub(crate) fn randomized_response() -> (Samples, Samples, AuditRng) {
        let mut rng = Seed(5).rng(Stream::Other { tag: 1, index: 1 });
        let p = Samples::from_column(
            (0..20_000)
                .map(|_| f64::from(rng.random::<f64>() < 0.9))
                .collect(),
        );
        let q = Samples::from_column(
            (0..20_000)
                .map(|_| f64::from(rng.random::<f64>() < 0.1))
                .collect(),
        );
        (p, q, rng)
    }

    /// `tester`'s lower bound on H_1(P‖Q) (ε = 0) at β = 0.05.
    pub(crate) fn h_at_zero(
        tester: &dyn PropertyTester,
        p: &Samples,
        q: &Samples,
        rng: &mut AuditRng,
    ) -> Measurement {
        tester
            .lower_bound(p, q, Divergence::HockeyStick { epsilon: 0.0 }, 0.05, rng)
            .unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The planned ε of μ-GDP claims sits where the Gaussian shift's local power peaks
    /// (computed independently with scipy: ε ≈ 0.164 at μ = 0.268, 0.62 at μ = 1), and claims
    /// with their own ε plan nothing.
    #[test]
    fn planned_epsilon_of_gaussian_dp() {
        let at = |mu: f64| {
            planned_profile_epsilon(&PrivacyClaim::gaussian_dp(mu).unwrap(), 100_000).unwrap()
        };
        let e = at(0.268);
        assert!((0.14..0.19).contains(&e), "{e}");
        let e = at(1.0);
        assert!((0.55..0.7).contains(&e), "{e}");
        assert!(planned_profile_epsilon(&PrivacyClaim::pure(1.0).unwrap(), 1000).is_none());
        assert!(
            planned_profile_epsilon(&PrivacyClaim::approximate(1.0, 1e-5).unwrap(), 1000).is_none()
        );
        let z = planned_profile_epsilon(&PrivacyClaim::zcdp(0.05).unwrap(), 100_000);
        assert!(z.is_some_and(|e| e > 0.0), "{z:?}");
    }

    /// The radix sort, and `sorted_desc` (which counts lists of few values), put values in
    /// `total_cmp`'s descending order, bit for bit: zeros of both signs, infinities, NaNs,
    /// subnormals and many ties.
    #[test]
    fn radix_sort_is_the_sort() {
        use crate::rng::{Seed, Stream};
        use rand::RngExt;
        let mut rng = Seed(3).rng(Stream::Other { tag: 78, index: 0 });
        let specials = super::fixtures::SORT_SPECIALS;
        // Continuous lists, and lists of few values (counted by `sorted_desc` from 4096 on).
        for (n, few) in [0, 1, 5, 4095, 4096, 10_000]
            .into_iter()
            .flat_map(|n| [(n, false), (n, true)])
        {
            let v: Vec<f64> = (0..n)
                .map(|i| match i % 4 {
                    0 => specials[rng.random_range(0..specials.len())],
                    1 => (rng.random::<f64>() * 8.0).round() - 4.0,
                    _ if few => f64::from(rng.random_range(0..300u32)) * 0.37 - 50.0,
                    _ => (rng.random::<f64>() - 0.5) * 1e6,
                })
                .collect();
            let mut want = v.clone();
            want.sort_by(|a, b| b.total_cmp(a));
            let got = radix_sort_desc(v.clone());
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "n = {n}");
            assert_eq!(bits(&sorted_desc(v)), bits(&want), "n = {n}");
        }
    }

    /// Both sides counted by buckets, unsorted, give the thresholds and counts of both sorted,
    /// bit for bit: continuous values, heavy ties, ±0 (as thresholds and as values of Q),
    /// a skewed list (most values in one bucket), one repeated value, Q beyond P's range,
    /// and lists whose range overflows.
    #[test]
    fn bucketed_counts_are_the_sorted_counts() {
        use crate::rng::{Seed, Stream};
        use rand::RngExt;
        let mut rng = Seed(5).rng(Stream::Other { tag: 79, index: 1 });
        let bits = |c: &ThresholdCounts| {
            let mut v = vec![c.np.to_bits(), c.nq.to_bits()];
            for &(t, x, y) in &c.points {
                v.extend([t.to_bits(), x.to_bits(), y.to_bits()]);
            }
            v
        };
        type Draw = Box<dyn Fn(&mut dyn rand::Rng) -> f64>;
        let lists: Vec<Draw> = vec![
            Box::new(|r| r.random::<f64>() * 8.0 - 4.0),
            Box::new(|r| (r.random::<f64>() * 12.0).round() / 4.0 - 1.5),
            Box::new(|r| {
                let u = r.random::<f64>();
                if u < 0.2 {
                    0.0
                } else if u < 0.4 {
                    -0.0
                } else {
                    u - 0.7
                }
            }),
            Box::new(|r| r.random::<f64>().powi(40) * 1e6),
            Box::new(|_| 2.5),
            Box::new(|r| if r.random::<bool>() { -1e308 } else { 1e308 }),
        ];
        for (which, draw) in lists.iter().enumerate() {
            for (n, m) in [(4096, 5000), (20_000, 300), (9000, 1)] {
                let sp: Vec<f64> = (0..n).map(|_| draw(&mut rng)).collect();
                let mut sq: Vec<f64> = (0..m).map(|_| draw(&mut rng) * 1.5).collect();
                if m > 2 {
                    sq[0] = -0.0;
                    sq[1] = 0.0;
                }
                let want = ThresholdCounts::of(&sorted_desc(sp.clone()), &sorted_desc(sq.clone()));
                assert!(sp.len() >= BUCKETED_FROM);
                let got = ThresholdCounts::bucketed(&sp, &sq);
                assert_eq!(bits(&got), bits(&want), "list {which}, {n} {m}");
                let got = ThresholdCounts::of_unsorted(sp, &sq);
                assert_eq!(bits(&got), bits(&want), "list {which}, {n} {m}");
            }
        }
    }

    /// Counting the second side unsorted gives the same thresholds and counts, bit for bit.
    #[test]
    fn unsorted_counts_are_the_sorted_counts() {
        use crate::rng::{Seed, Stream};
        use rand::RngExt;
        let mut rng = Seed(4).rng(Stream::Other { tag: 79, index: 0 });
        for (n, m) in [(1, 1), (10, 3), (500, 700), (3000, 20), (2, 0)] {
            let sp: Vec<f64> = (0..n)
                .map(|_| (rng.random::<f64>() * 40.0).round() / 4.0 - 5.0)
                .collect();
            let mut sq: Vec<f64> = (0..m)
                .map(|_| (rng.random::<f64>() * 40.0).round() / 4.0 - 5.0)
                .collect();
            if m > 2 {
                sq[0] = -0.0;
                sq[1] = 0.0;
            }
            let sp = sorted_desc(sp);
            let a = ThresholdCounts::of(&sp, &sorted_desc(sq.clone()));
            let b = ThresholdCounts::of_unsorted_q(&sp, &sq);
            let bits = |c: &ThresholdCounts| {
                let mut v = vec![c.np.to_bits(), c.nq.to_bits()];
                for &(t, x, y) in &c.points {
                    v.extend([t.to_bits(), x.to_bits(), y.to_bits()]);
                }
                v
            };
            assert_eq!(bits(&a), bits(&b), "{n} {m}");
        }
    }

    /// Coverage of the empirical Bernstein bound on Bernoulli(0.3) means, n = 200, a = 0.1: the
    /// upper bound falls below the mean in far fewer than 10% of 2000 repetitions.
    #[test]
    fn empirical_bernstein_covers() {
        use crate::rng::{Seed, Stream};
        use rand::RngExt;
        let mut rng = Seed(1).rng(Stream::Other { tag: 77, index: 0 });
        let (mut miss_up, mut miss_lo) = (0, 0);
        for _ in 0..2000 {
            let v: Vec<f64> = (0..200)
                .map(|_| f64::from(rng.random::<f64>() < 0.3))
                .collect();
            if empirical_bernstein_upper(&v, 0.0, 1.0, 0.1) < 0.3 {
                miss_up += 1;
            }
            if empirical_bernstein_lower(&v, 0.0, 1.0, 0.1) > 0.3 {
                miss_lo += 1;
            }
        }
        assert!(miss_up <= 200 && miss_lo <= 200, "{miss_up} {miss_lo}");
        // Constant data: the bound is the value plus the range term 7 ln(2/a)/(3(n − 1)).
        let c = vec![0.5; 100];
        let u = empirical_bernstein_upper(&c, 0.0, 1.0, 0.05);
        let expect = 0.5 + 7.0 * (40f64).ln() / (3.0 * 99.0);
        assert!(u >= expect && u < expect + 1e-9, "{u} vs {expect}");
        assert!(empirical_bernstein_lower(&c, 0.0, 1.0, 0.05) <= 0.5 - 7.0 * 40f64.ln() / 297.0);
        assert_eq!(empirical_bernstein_upper(&[0.2], 0.0, 1.0, 0.05), 1.0);
    }
}
