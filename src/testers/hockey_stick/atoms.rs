//! The float-representation view of the training rows: coordinates' values by their bit
//! patterns (how many distinct, the atom tables of estimated log-likelihood ratios of joint
//! patterns) and near-atoms, clusters of values equal to 9 significant digits.

use rayon::prelude::*;

use super::score::{AtomTable, Packer, PatternMap, with_key};
use crate::testers::rows::Rows;

/// Smoothed log-likelihood-ratio table of the patterns of `coords` on the training rows.
pub(super) fn atom_table(
    p: Rows<'_>,
    np: usize,
    q: Rows<'_>,
    nq: usize,
    coords: &[usize],
) -> AtomTable {
    let counts = match packed_counts(p, np, q, nq, coords) {
        Some(counts) => counts,
        None => hashed_counts(p, np, q, nq, coords),
    };
    let a = counts.len() as f64;
    counts
        .into_iter()
        .map(|(k, (cp, cq))| {
            // A pattern seen once in all the training rows says nothing about its ratio (it is
            // typically a continuous value that happened to land in a mostly discrete
            // coordinate, never to be seen again): it scores 0, like unseen patterns, instead of
            // the ±ln 3 its smoothed counts would give.
            if cp + cq < 2.0 {
                return (k, 0.0);
            }
            let lr = ((cp + 0.5) / (np as f64 + 0.5 * a)).ln()
                - ((cq + 0.5) / (nq as f64 + 0.5 * a)).ln();
            (k, lr)
        })
        .collect()
}

/// Most distinct values per coordinate [`packed_counts`] packs.
const PACKED_VALUES: usize = 4096;

/// The training rows' count of each pattern of `coords` on each side, counted through a
/// [`Packer`] of the values each coordinate takes (found first, in a pass per coordinate): the
/// same counts as [`hashed_counts`], without hashing a key per row. `None` when a coordinate
/// has more than [`PACKED_VALUES`] values or the patterns span more packed indices than
/// max(2^16, the rows), where a dense array of counts would not pay.
pub(super) fn packed_counts(
    p: Rows<'_>,
    np: usize,
    q: Rows<'_>,
    nq: usize,
    coords: &[usize],
) -> Option<PatternMap<(f64, f64)>> {
    let contiguous = |s: Rows<'_>| s.samples().is_none_or(|v| v.values().as_slice().is_some());
    if !contiguous(p) || !contiguous(q) {
        return None;
    }
    let d = p.dim();
    let values: Vec<Vec<u64>> = coords
        .par_iter()
        .map(|&j| {
            // Packed rows' values read from their bytes (a byte has 256 values: never more
            // than PACKED_VALUES); the packer sorts them, so their order does not matter.
            if let (Some(a), Some(b)) = (p.packed_distinct(j, 0..np), q.packed_distinct(j, 0..nq)) {
                return Some(a.into_iter().chain(b).collect());
            }
            let mut seen = rustc_hash::FxHashSet::default();
            let mut cache = [u64::MAX; 256];
            for (s, n) in [(p, np), (q, nq)] {
                let fits = s.try_blocks(0..n, |_, flat| {
                    for row in flat.chunks_exact(d) {
                        let bits = row[j].to_bits();
                        let slot = crate::testers::common::cache_slot(bits);
                        if cache[slot] != bits || bits == u64::MAX {
                            cache[slot] = bits;
                            seen.insert(bits);
                            if seen.len() > PACKED_VALUES {
                                return false;
                            }
                        }
                    }
                    true
                });
                if !fits {
                    return None;
                }
            }
            Some(seen.into_iter().collect())
        })
        .collect::<Option<Vec<Vec<u64>>>>()?;
    let packer = Packer::new(coords, values)?;
    if packer.size > (1 << 16).max(np + nq) {
        return None;
    }
    let side = |s: Rows<'_>, n: usize| -> Option<Vec<u32>> {
        let mut counts = vec![0u32; packer.size];
        let counted = s.try_blocks(0..n, |_, flat| {
            for row in flat.chunks_exact(d) {
                let Some(c) = packer.index(row).map(|k| &mut counts[k]) else {
                    return false;
                };
                let Some(more) = c.checked_add(1) else {
                    return false;
                };
                *c = more;
            }
            true
        });
        counted.then_some(counts)
    };
    let (cp, cq) = rayon::join(|| side(p, np), || side(q, nq));
    let (cp, cq) = (cp?, cq?);
    Some(
        cp.iter()
            .zip(&cq)
            .enumerate()
            .filter(|(_, (a, b))| **a > 0 || **b > 0)
            .map(|(i, (&a, &b))| (packer.pattern(i), (f64::from(a), f64::from(b))))
            .collect(),
    )
}

/// The training rows' count of each pattern of `coords` on each side, by hashing each row's
/// key.
pub(super) fn hashed_counts(
    p: Rows<'_>,
    np: usize,
    q: Rows<'_>,
    nq: usize,
    coords: &[usize],
) -> PatternMap<(f64, f64)> {
    // The two sides counted at once, then merged: each count is a whole number of rows of one
    // side, so the table is the same as counted in one pass.
    let side = |s: Rows<'_>, n: usize| {
        let mut m: PatternMap<f64> = PatternMap::default();
        s.for_rows(0..n, |_, row| {
            with_key(&row, coords, |k| match m.get_mut(k) {
                Some(c) => *c += 1.0,
                None => {
                    m.insert(k.to_vec(), 1.0);
                }
            });
        });
        m
    };
    let (cp, cq) = rayon::join(|| side(p, np), || side(q, nq));
    let mut counts: PatternMap<(f64, f64)> = cp.into_iter().map(|(k, c)| (k, (c, 0.0))).collect();
    for (k, c) in cq {
        counts.entry(k).or_default().1 += c;
    }
    counts
}

/// Most discrete coordinates with more than two values whose pairs are offered as atom tables
/// when the joint table is too sparse (at most 120 pairs).
pub(super) const MAX_PAIRED_DISCRETE: usize = 16;

/// Significant digits of the rounding that groups training values into near-atoms.
const NEAR_DIGITS: i32 = 9;
/// Most near-atom centres per continuous coordinate.
pub(super) const NEAR_PER_COORD: usize = 4;

/// Centres of near-atoms of coordinate j from the training rows `0..np` of `p` and `0..nq` of
/// `q` (pooled, so the centres do not depend on which side is favoured). The values are grouped
/// by their rounding to [`NEAR_DIGITS`] significant digits — relative to max(|x|, s), where s is
/// the 90 % quantile of |x| over the pooled rows, so that values within ~s·1e-8 of 0 form one
/// group too — and the at most [`NEAR_PER_COORD`] largest groups holding at least
/// max(10, 1/1000 of the pooled rows) rows give a centre each, the median of the group's raw
/// values (one per cluster: a centre within the rounding resolution of a larger group's is
/// skipped, since a cluster straddling a rounding boundary splits in two). Training rows only,
/// so the events built on them are independent of the held-out rows like every other
/// candidate.
pub(super) fn near_centres(p: Rows<'_>, np: usize, q: Rows<'_>, nq: usize, j: usize) -> Vec<f64> {
    // The pooled finite training values, read in place (their order matters nowhere below:
    // counts, and groups sorted before their medians are taken).
    let (cp, cq) = (p.column(j, 0..np), q.column(j, 0..nq));
    let pooled = || {
        cp.iter()
            .chain(cq.iter())
            .copied()
            .filter(|x| x.is_finite())
    };
    let mut abs: Vec<f64> = Vec::with_capacity(np + nq);
    abs.extend(pooled().map(f64::abs));
    if abs.is_empty() {
        return Vec::new();
    }
    let k = abs.len() * 9 / 10;
    let scale = *abs.select_nth_unstable_by(k, f64::total_cmp).1;
    drop(abs);
    let group = |x: f64| near_group(x, scale);
    // Big groups found in linear time and small memory (sorting every (key, value) pair was
    // n log n and 24 bytes a value; a map of every group ~50). First each value is counted in
    // one of `buckets` counters by the hash of a cell holding its group: a cell's count is at
    // least the size of the part of every group in it. Near 0 (|x| < s, or x = 0) the cell is
    // the group itself. Elsewhere it is the value's binary cell (its bits but the lowest 32:
    // sign, exponent and 20 mantissa bits, a relative width of at least 2^-21 ≈ 4.8e-7),
    // found without the logarithm a group needs: a group there is the values rounding to one
    // 9-digit decimal (a relative width of at most about 1e-7, the rounding of x/10^(e−8)
    // being monotone in x), so it lies within two adjacent binary cells, and a group of
    // `min_count` values or more has every value in a cell whose count, with its neighbours',
    // reaches `min_count`. Then only those values' groups are computed and counted exactly,
    // and the big groups' values gathered and sorted. Most continuous values are alone in
    // their group, so typically no value qualifies and the second pass counts nothing.
    // About four buckets a value, at most 2^16: a table of 2^16 counters (256 KiB) for a
    // thousand values cost more in fresh pages than the count itself. The number of buckets
    // changes only which values pass to the exact count, never the groups found.
    let buckets = (4 * (np + nq)).next_power_of_two().clamp(1 << 10, 1 << 16);
    let bits = buckets.trailing_zeros();
    let min_count = 10.max((np + nq) / 1000);
    // A multiplicative hash's top bits (Fibonacci hashing): a collision only adds to a
    // bucket's count, so only makes more values pass.
    let hash = |key: u64| (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize;
    // (the bucket of the value's cell, and for a binary cell its neighbours' buckets).
    let cells = |x: f64| -> (usize, Option<(usize, usize)>) {
        if x.abs() < scale || x == 0.0 {
            // The group near 0, (i32::MIN, k): k's bits hashed.
            return (hash(group(x).1 as u64), None);
        }
        let cell = x.to_bits() >> 32;
        // Cells hashed apart from the groups near 0 (a different odd multiplier's bits).
        let at = |c: u64| hash(c.wrapping_mul(0xd6e8_feb8_6659_fd93) ^ 1);
        (
            at(cell),
            Some((at(cell.wrapping_sub(1)), at(cell.wrapping_add(1)))),
        )
    };
    let mut counts = vec![0u32; buckets];
    for x in pooled() {
        let b = cells(x).0;
        counts[b] = counts[b].saturating_add(1);
    }
    // A value passes when its cell's count with a neighbour's reaches `min_count`, at most
    // twice the largest count: continuous values (a few a bucket) stop here.
    let most = counts.iter().copied().max().unwrap_or(0) as usize;
    if 2 * most < min_count {
        return Vec::new();
    }
    let hot = |x: f64| {
        let (b, around) = cells(x);
        let here = counts[b] as usize;
        match around {
            None => here >= min_count,
            Some((below, above)) => {
                here + (counts[below] as usize).max(counts[above] as usize) >= min_count
            }
        }
    };
    let mut sizes: rustc_hash::FxHashMap<(i32, i64), usize> = rustc_hash::FxHashMap::default();
    for x in pooled() {
        if hot(x) {
            *sizes.entry(group(x)).or_default() += 1;
        }
    }
    // (key, size) of every group holding at least `min_count` values, largest first (ties by
    // key).
    let mut big: Vec<((i32, i64), usize)> = sizes
        .into_iter()
        .filter(|&(_, len)| len >= min_count)
        .collect();
    big.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let index: rustc_hash::FxHashMap<(i32, i64), usize> =
        big.iter().enumerate().map(|(i, &(k, _))| (k, i)).collect();
    let mut members: Vec<Vec<f64>> = big
        .iter()
        .map(|&(_, len)| Vec::with_capacity(len))
        .collect();
    if !index.is_empty() {
        for x in pooled() {
            if hot(x)
                && let Some(&i) = index.get(&group(x))
            {
                members[i].push(x);
            }
        }
    }
    centres_of(members, scale)
}

/// The near-atom group of `x` ([`near_centres`]): its rounding to [`NEAR_DIGITS`] significant
/// digits, (decimal exponent, mantissa), or (i32::MIN, k) on the absolute grid of
/// `scale`·10^-8 near 0 (|x| < `scale`, the 90 % quantile of |x|).
pub(super) fn near_group(x: f64, scale: f64) -> (i32, i64) {
    let resolution = 10f64.powi(1 - NEAR_DIGITS);
    if x.abs() < scale {
        // Absolute grid of s·10^-8 near 0 (|x| < s).
        return (i32::MIN, (x / (scale * resolution)).round() as i64);
    }
    if x == 0.0 {
        return (i32::MIN, 0);
    }
    let e = x.abs().log10().floor() as i32;
    let m = (x / 10f64.powi(e - (NEAR_DIGITS - 1))).round();
    (e, m as i64)
}

/// The centres of the big groups `groups` (largest first, ties by key), as [`near_centres`]
/// takes them: each group's median, skipping one within the rounding resolution of a centre
/// already taken, at most [`NEAR_PER_COORD`]; `scale` is the 90 % quantile of |x|.
pub(super) fn centres_of(mut groups: Vec<Vec<f64>>, scale: f64) -> Vec<f64> {
    let resolution = 10f64.powi(1 - NEAR_DIGITS);
    let mut centres: Vec<f64> = Vec::new();
    for group in &mut groups {
        // The group's values sorted by total_cmp: its median is the middle one.
        group.sort_unstable_by(f64::total_cmp);
        let c = group[group.len() / 2];
        let apart = |k: f64| (k - c).abs() > resolution * k.abs().max(c.abs()).max(scale);
        if centres.iter().all(|&k| apart(k)) {
            centres.push(c);
            if centres.len() == NEAR_PER_COORD {
                break;
            }
        }
    }
    centres
}
