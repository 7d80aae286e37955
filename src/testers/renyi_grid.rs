//! The Rényi tester's selection grid, several values of the scale c at once: for one clamp pair
//! and every k of a grid (k = (α−1)·c or α·c), the sums Σ w·e^{k·u} and Σ (w·e^{k·u})·e^{k·u}
//! over the compressed training points (u, w) ([`moment_sums_grid`]), with the same bits as the
//! scalar loop [`super::renyi::moment_sums`] computes for each k on its own.
//!
//! # Why hand-written
//! The records of `audit test --tester renyi` must stay the same bit for bit (issue 54): the test
//! function chosen on the training split, hence every number of the record, depends on these sums
//! down to the last bit (two candidates can be a rounding apart). A vectorised exp from a library
//! (e.g. a SIMD math crate or LLVM's vector libm) is accurate to an ulp or so but not the same
//! function as the platform's scalar `exp`, so it would change which candidate wins on some
//! inputs. This module therefore evaluates, four lanes (AVX2) or eight (AVX-512F) at a time, the
//! very algorithm of the platform's `exp`, and checks the two agree before it uses it.
//!
//! # Exactness argument
//! 1. *The sums.* Lane j of a vector holds k_j; for each point (u, w), in the order of the points,
//!    it forms x_j = e^{k_j·u}, m1_j ← m1_j + w·x_j and m2_j ← m2_j + (w·x_j)·x_j: the scalar
//!    loop's operations, in its order, on the same operands (explicit `mul`/`add` intrinsics, no
//!    fused multiply-add, which Rust never introduces on its own either). IEEE 754 rounds each
//!    operation the same whatever the lane, so each lane's sums are the scalar sums of its k.
//!    The scalar loop's branches (u = 0 gives 1, u = −1 gives e^{−k}) depend on u only, which is
//!    the same in every lane, and give the same bits as e^{k·u} (k·(±0) = ±0, k·(−1) = −k
//!    exactly); the vector loop takes the same branches. A point whose u equals the previous
//!    point's reuses that point's x: e^{k·u} is a function of u (±0 both give 1), so this is the
//!    same number, not computed again (a discrete feature's compressed values come in runs).
//!    [`moment_sums_streams`] also puts eight point sets side by side, lane j over set j, for
//!    one k: each lane still performs its own set's operations in its order.
//! 2. *The exponential.* On x86-64 glibc with FMA hardware (glibc 2.28+, e.g. Debian 12's 2.36),
//!    `exp` is `__exp_fma`: the algorithm of ARM's optimized-routines (math/exp.c and
//!    math/exp_data.c, Szabolcs Nagy, MIT OR Apache-2.0 WITH LLVM-exception; N = 2^7 table
//!    entries, a degree-5 polynomial) compiled with contraction into fused multiply-adds. With
//!    x = k·u, for 2^-54 ≤ |x| < 512 it computes, in this order,
//!    z = fma(x, N/ln2, 1.5·2^52); ki = bits(z); kd = z − 1.5·2^52;
//!    r = fma(kd, −ln2hi/N, x); r = fma(kd, −ln2lo/N, r);
//!    tail = T[2(ki mod N)]; sbits = T[2(ki mod N)+1] + (ki << 45);
//!    r2 = r·r; t = fma(r2, fma(r, C3, C2), tail + r); tmp = fma(r2·r2, fma(r, C5, C4), t);
//!    exp(x) = fma(s, tmp, s) with s = from_bits(sbits).
//!    [`avx::exp4`] (and [`avx512::exp8`]) perform exactly these IEEE operations (each
//!    correctly rounded, so the same inputs give the same bits). The constants are the
//!    published ones (checked against the bytes of the local libm by a unit test). The table is
//!    not copied: [`table`] computes it with exact integer arithmetic (see there): T[2i] = bits of tail_i, T[2i+1] = bits(H_i) −
//!    (i << 45), where H_i is 2^{i/N} rounded to nearest and tail_i = (2^{i/N} − H_i)/H_i
//!    rounded to nearest. Every other x (|x| < 2^-54, |x| ≥ 512, non-finite: glibc's own special
//!    path) is handed to the platform's scalar `f64::exp` lane by lane, so it is the same by
//!    definition, except two ranges the grid meets often (large α·c), done in vector form
//!    too: x ≤ −1024, where glibc returns its underflow value 2^-767·2^-767 = +0 (or +0 for
//!    −∞), and −1024 < x ≤ −512, where glibc computes tmp and sbits as above and then, in its
//!    `specialcase` for k < 0 (math/exp.c; the operations read from the local libm's code, no
//!    contraction there): scale = from_bits(sbits + (1022 << 52)); y = scale + scale·tmp; if
//!    y < 1 { hi = 1 + y; lo = (scale − y) + scale·tmp; y = ((((1 − hi) + y) + lo) + hi) − 1, and
//!    +0 if it is ±0 }; result y·2^-1022. The vector code does those operations in that order.
//! 3. *The guard.* Whether the platform's `exp` is this algorithm is not something the program
//!    can know (another libm, another glibc, a CPU without FMA, where glibc takes its non-FMA
//!    variant). So the vector path is used only when the CPU has AVX2 and FMA *and* a one-time
//!    self-check ([`self_check`]) finds [`avx::exp4`] equal to `f64::exp` bit for bit on a few
//!    thousand inputs that cover every table index and the range the grid uses; otherwise every
//!    k goes through the scalar loop, as before. The 8-lane code is used where the CPU also has
//!    AVX-512F and its own self-check passes. Either way the sums, and the records, are the scalar
//!    loop's. The unit tests compare the two on 10^6 random inputs and on random point sets.

// Off x86-64 only the scalar loop runs; the table and its checks are then unused.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

/// Raw moment sums (Σ w·x, Σ (w·x)·x) of one k over a set of points.
pub(crate) type Sums = (f64, f64);

/// For every k of `ks`, the sums `scalar(pts, k)` returns; by four or eight lanes of k at once
/// when the exact vector exp is available ([`port`]), else by calling `scalar` on each k.
/// `scalar` must be the reference loop ([`super::renyi::moment_sums`]).
pub(crate) fn moment_sums_grid(
    pts: &[(f64, f64)],
    ks: &[f64],
    scalar: impl Fn(&[(f64, f64)], f64) -> Sums,
) -> Vec<Sums> {
    #[cfg(target_arch = "x86_64")]
    if ks.iter().all(|k| k.is_finite())
        && let Some(port) = port()
    {
        let tab = &port.table;
        let mut out = Vec::with_capacity(ks.len());
        // Eight k a pass (one 8-lane vector, or two 4-lane ones side by side), a last chunk of
        // at most four in one 4-lane vector; a short chunk is padded with its own last k, and
        // the padding lanes are dropped.
        for chunk in ks.chunks(8) {
            let lane = |j: usize| chunk[j.min(chunk.len() - 1)];
            let sums: Vec<Sums> = if chunk.len() > 4 && port.eight {
                // SAFETY: `port.eight` is set only when the CPU has AVX-512F
                // (`is_x86_feature_detected!`), the feature `moment_sums8` is compiled for.
                let (m1, m2) = unsafe { avx512::moment_sums8(pts, std::array::from_fn(lane), tab) };
                (0..8).map(|j| (m1[j], m2[j])).collect()
            } else {
                let vec4 = |v: usize| std::array::from_fn(|j| lane(4 * v + j));
                // SAFETY: `port` returns `Some` only when the CPU has AVX2 and FMA
                // (`is_x86_feature_detected!`), the features `moment_sums_lanes` is compiled for.
                let v: Vec<([f64; 4], [f64; 4])> = if chunk.len() > 4 {
                    unsafe { avx::moment_sums_lanes(pts, [vec4(0), vec4(1)], tab) }.to_vec()
                } else {
                    unsafe { avx::moment_sums_lanes(pts, [vec4(0)], tab) }.to_vec()
                };
                v.iter()
                    .flat_map(|(a, b)| a.iter().copied().zip(b.iter().copied()))
                    .collect()
            };
            out.extend_from_slice(&sums[..chunk.len()]);
        }
        return out;
    }
    ks.iter().map(|&k| scalar(pts, k)).collect()
}

/// For every point set of `streams` and every k of `ks`, the sums `scalar(stream, k)` returns
/// (indexed [stream][k]), the same bits: [`moment_sums_grid`] on each stream for the k that fill
/// passes of eight, and, where the 8-lane code may be used and the streams have one length, the
/// k left over (25 = 3·8 + 1 in the Rényi grid) eight streams at a time, lane j holding stream j
/// (`avx512::moment_sums_across8`) instead of a pass of four lanes with one in use per stream.
/// Streams are evaluated in parallel (rayon) and the results placed by index, so the thread
/// count cannot change them.
pub(crate) fn moment_sums_streams(
    streams: &[Vec<(f64, f64)>],
    ks: &[f64],
    scalar: impl Fn(&[(f64, f64)], f64) -> Sums + Sync,
) -> Vec<Vec<Sums>> {
    use rayon::prelude::*;
    #[cfg(target_arch = "x86_64")]
    if ks.iter().all(|k| k.is_finite())
        && let Some(port) = port().filter(|p| p.eight)
        && let Some(first) = streams.first()
        && streams.iter().all(|s| s.len() == first.len())
        && !ks.len().is_multiple_of(8)
    {
        let full = ks.len() - ks.len() % 8;
        let mut out: Vec<Vec<Sums>> = streams
            .par_iter()
            .map(|s| moment_sums_grid(s, &ks[..full], &scalar))
            .collect();
        // Passes of eight streams for each k left over, the last pass padded with its own
        // last stream (the padding lanes are dropped).
        let passes: Vec<(usize, usize)> = (full..ks.len())
            .flat_map(|ki| (0..streams.len()).step_by(8).map(move |from| (ki, from)))
            .collect();
        let sums: Vec<[Sums; 8]> = passes
            .par_iter()
            .map(|&(ki, from)| {
                let lane = |j: usize| streams[(from + j).min(streams.len() - 1)].as_slice();
                // SAFETY: `port.eight` is set only when the CPU has AVX-512F
                // (`is_x86_feature_detected!`), the feature `moment_sums_across8` is compiled
                // for; every stream has the same length (checked above).
                let (m1, m2) = unsafe {
                    avx512::moment_sums_across8(std::array::from_fn(lane), ks[ki], &port.table)
                };
                std::array::from_fn(|j| (m1[j], m2[j]))
            })
            .collect();
        for (&(_, from), pass) in passes.iter().zip(&sums) {
            for (j, &s) in pass.iter().enumerate().take(streams.len() - from) {
                out[from + j].push(s);
            }
        }
        return out;
    }
    streams
        .par_iter()
        .map(|s| moment_sums_grid(s, ks, &scalar))
        .collect()
}

/// `f64::exp` of every value of `xs`, in place, the same bits: by the vector port four or eight
/// at a time where it may be used ([`port`]), else one by one. Also used by the MMD tester's
/// kernel values, which its records hold to the last bit as this grid's are.
pub(crate) fn exp_in_place(xs: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if let Some(port) = port() {
        if port.eight {
            // SAFETY: `port.eight` is set only when the CPU has AVX-512F.
            unsafe { avx512::exp8_slice(xs, &port.table) };
        } else {
            // SAFETY: `port` returns `Some` only when the CPU has AVX2 and FMA.
            unsafe { avx::exp4_slice(xs, &port.table) };
        }
        return;
    }
    for x in xs {
        *x = x.exp();
    }
}

/// The vector exp of this machine: its table, and whether the 8-lane code may be used too.
struct Port {
    table: Table,
    eight: bool,
}

/// The vector exp when it may be used (AVX2 and FMA, and the 4-lane code passed its self-check;
/// the 8-lane code too with AVX-512F when it passed its own); computed and checked once per
/// process.
#[cfg(target_arch = "x86_64")]
fn port() -> Option<&'static Port> {
    static PORT: std::sync::OnceLock<Option<Port>> = std::sync::OnceLock::new();
    PORT.get_or_init(|| {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
            return None;
        }
        let table = table()?;
        if !self_check(&table, false) {
            return None;
        }
        let eight = is_x86_feature_detected!("avx512f") && self_check(&table, true);
        Some(Port { table, eight })
    })
    .as_ref()
}

#[cfg(not(target_arch = "x86_64"))]
fn port() -> Option<&'static Port> {
    None
}

/// log2 of the number of table entries (glibc's EXP_TABLE_BITS).
const TABLE_BITS: u32 = 7;
/// Number of table entries N.
const N: usize = 1 << TABLE_BITS;

/// The table of `exp`: entry 2i the bits of tail_i, entry 2i+1 bits(H_i) − (i << 45).
pub(crate) type Table = [u64; 2 * N];

/// The constants of `__exp_data` (ARM optimized-routines math/exp_data.c), as bit patterns:
/// N/ln2, the rounding shift 1.5·2^52, −ln2/N split in a high part (with trailing zeros, so
/// kd·hi is exact) and a low part, and the polynomial coefficients C2..C5 of e^r − 1 − r.
mod k {
    /// N/ln 2 = 0x1.71547652b82fep0 · 128.
    pub const INV_LN2_N: u64 = 0x4067_1547_652b_82fe;
    /// 0x1.8p52.
    pub const SHIFT: u64 = 0x4338_0000_0000_0000;
    /// −0x1.62e42fefa0000p−8.
    pub const NEG_LN2_HI_N: u64 = 0xbf76_2e42_fefa_0000;
    /// −0x1.cf79abc9e3b3ap−47.
    pub const NEG_LN2_LO_N: u64 = 0xbd0c_f79a_bc9e_3b3a;
    /// 0x1.ffffffffffdbdp−2.
    pub const C2: u64 = 0x3fdf_ffff_ffff_fdbd;
    /// 0x1.555555555543cp−3.
    pub const C3: u64 = 0x3fc5_5555_5555_543c;
    /// 0x1.55555cf172b91p−5.
    pub const C4: u64 = 0x3fa5_5555_cf17_2b91;
    /// 0x1.1111167a4d017p−7.
    pub const C5: u64 = 0x3f81_1111_67a4_d017;
}

/// Fixed-point bits of the table computation.
const P: usize = 192;

/// The table, computed exactly: `None` if the precision used cannot decide a rounding (it can:
/// a unit test checks `Some`, and that the result equals the bytes of the local libm).
///
/// 2^{1/N} is bracketed in fixed point with P = 192 fractional bits by seven nested integer
/// square roots of 2 (floor for the lower bound, ceiling for the upper: floor √(a·2^P) ≤
/// √(v·2^{2P}) ≤ ceil √(b·2^P) when a ≤ v·2^P ≤ b), and 2^{i/N} by multiplying the brackets i
/// times (floor and ceiling again). For each i, H_i and tail_i are then rounded from both ends of
/// the bracket; rounding is monotone, so when both ends give the same double, that double is the
/// correctly rounded value of the exact number inside (which is irrational for 0 < i < N, so never
/// a tie; i = 0 is exact: H = 1, tail = 0). Hand-written with num-bigint because no crate computes
/// correctly rounded 2^{i/128} and its rounding error; copying glibc's table is what this avoids.
pub(crate) fn table() -> Option<Table> {
    use num_bigint::BigUint;
    let unit = BigUint::from(1u8) << P;
    let (mut lo, mut hi) = (BigUint::from(2u8) << P, BigUint::from(2u8) << P);
    for _ in 0..TABLE_BITS {
        lo = (&lo << P).sqrt();
        let wide = &hi << P;
        let s = wide.sqrt();
        hi = if &s * &s == wide { s } else { s + 1u8 };
    }
    let (root_lo, root_hi) = (lo, hi);
    let (mut lo, mut hi) = (unit.clone(), unit.clone());
    let mut tab = [0u64; 2 * N];
    for i in 0..N {
        if i > 0 {
            lo = (&lo * &root_lo) >> P;
            let prod = &hi * &root_hi;
            let up = (&prod >> P) + u8::from(prod.trailing_zeros().is_none_or(|z| z < P as u64));
            hi = up;
        }
        let (h_lo, t_lo) = round_entry(&lo)?;
        let (h_hi, t_hi) = round_entry(&hi)?;
        if h_lo != h_hi || t_lo.to_bits() != t_hi.to_bits() {
            return None;
        }
        tab[2 * i] = t_lo.to_bits();
        tab[2 * i + 1] = h_lo.wrapping_sub((i as u64) << (52 - TABLE_BITS));
    }
    Some(tab)
}

/// For a fixed-point value v·2^P with v in [1, 2): the bits of H = v rounded to the nearest double
/// and (v − H)/H rounded to the nearest double (`None` if out of range).
fn round_entry(v: &num_bigint::BigUint) -> Option<(u64, f64)> {
    use num_bigint::BigUint;
    let drop = P - 52;
    // Round half up: no value here is a tie (see `table`).
    let h = (v + (BigUint::from(1u8) << (drop - 1))) >> drop;
    let mant = u64::try_from(&h).ok()?;
    if !(1u64 << 52..1u64 << 53).contains(&mant) {
        return None;
    }
    let h_bits = (0x3ffu64 << 52) | (mant - (1u64 << 52));
    let h_fixed = &h << drop;
    let (neg, diff) = if *v >= h_fixed {
        (false, v - &h_fixed)
    } else {
        (true, &h_fixed - v)
    };
    if diff == BigUint::from(0u8) {
        return Some((h_bits, 0.0));
    }
    // |tail|·2^160 as an integer with a sticky bit (round to odd), then one rounding to nearest:
    // a value with at least 55 significant bits rounded to odd and then to 53 bits is rounded
    // correctly.
    const E: usize = 160;
    let num = diff << E;
    let q = &num / &h_fixed;
    let sticky = u8::from(&q * &h_fixed != num);
    let q2 = u128::try_from((q << 1usize) + sticky).ok()?;
    if q2 < 1u128 << 60 {
        return None;
    }
    let scale = f64::from_bits((1023 - (E as u64 + 1)) << 52);
    let t = q2 as f64 * scale;
    Some((h_bits, if neg { -t } else { t }))
}

/// Whether [`avx::exp4`] (or, with `eight`, [`avx512::exp8`]) equals `f64::exp` bit for bit on
/// a fixed set of inputs: every table index at several binades, the grid's range (k·u for u in
/// [−1, 0], k up to ~2200, and the positive side), small and special values. The caller must
/// have found AVX2 and FMA (and AVX-512F for `eight`).
#[cfg(target_arch = "x86_64")]
fn self_check(tab: &Table, eight: bool) -> bool {
    let xs = check_inputs();
    let ys = exp_lanes(&xs, tab, eight);
    xs.iter()
        .zip(ys)
        .all(|(&x, y)| std::hint::black_box(x).exp().to_bits() == y.to_bits())
}

/// The vector exp of every x, four (or eight) lanes at a time. The caller must have found AVX2
/// and FMA (and AVX-512F for `eight`).
#[cfg(target_arch = "x86_64")]
fn exp_lanes(xs: &[f64], tab: &Table, eight: bool) -> Vec<f64> {
    let width = if eight { 8 } else { 4 };
    xs.chunks(width)
        .flat_map(|c| {
            let lane = |j: usize| c[j.min(c.len() - 1)];
            // SAFETY: the caller found the features the functions are compiled for.
            let y: Vec<f64> = if eight {
                unsafe { avx512::exp8_array(std::array::from_fn(lane), tab) }.to_vec()
            } else {
                unsafe { avx::exp4_array(std::array::from_fn(lane), tab) }.to_vec()
            };
            y.into_iter().take(c.len())
        })
        .collect()
}

/// The self-check's inputs (a few thousand, deterministic).
pub(crate) fn check_inputs() -> Vec<f64> {
    let ln2 = std::f64::consts::LN_2;
    let mut xs = Vec::new();
    for i in 0..N {
        for j in [
            -700.0, -300.0, -20.0, -3.0, -1.0, 0.0, 1.0, 5.0, 60.0, 400.0,
        ] {
            let x = (j + i as f64 / N as f64) * ln2;
            xs.extend([x, x.next_up(), x.next_down(), x + ln2 / 512.0]);
        }
    }
    for i in 0..=2000 {
        xs.push(-2200.0 * f64::from(i) / 2000.0);
        xs.push(-1.3 * f64::from(i) / 2000.0);
    }
    for e in -80..12 {
        let x = 2f64.powi(e);
        xs.extend([x, -x, x.next_down(), -x.next_down()]);
    }
    xs.extend([
        0.0,
        -0.0,
        511.9,
        512.0,
        -512.0,
        -745.2,
        -746.0,
        f64::INFINITY,
    ]);
    xs
}

#[cfg(target_arch = "x86_64")]
mod avx {
    //! The AVX2 + FMA code; every function is compiled for those features and must be called
    //! only after `is_x86_feature_detected!` found them.
    use std::arch::x86_64::*;

    use super::{N, Table, k};

    /// e^x in four lanes by glibc's algorithm (module docs, step 2); lanes outside
    /// 2^-54 ≤ |x| < 512 (and NaN) are recomputed by the platform's scalar `exp`.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    pub(super) fn exp4(x: __m256d, tab: &Table) -> __m256d {
        let c = |bits: u64| _mm256_set1_pd(f64::from_bits(bits));
        let shift = c(k::SHIFT);
        let z = _mm256_fmadd_pd(x, c(k::INV_LN2_N), shift);
        let ki = _mm256_castpd_si256(z);
        let kd = _mm256_sub_pd(z, shift);
        let r = _mm256_fmadd_pd(kd, c(k::NEG_LN2_HI_N), x);
        let r = _mm256_fmadd_pd(kd, c(k::NEG_LN2_LO_N), r);
        let top = _mm256_slli_epi64::<45>(ki);
        // The entries 2i and 2i + 1 (tail_i, bits(H_i) − (i << 45)) of each lane's i = ki mod N,
        // by one 16-byte load per lane (on this code's CPUs that is faster than two gathers).
        let mut at = [0u64; 4];
        // SAFETY: an unaligned store of four i64 to an array of four u64.
        unsafe { _mm256_storeu_si256(at.as_mut_ptr().cast(), ki) };
        let pair = |j: usize| {
            let i = 2 * (at[j] as usize % N);
            let e = &tab[i..i + 2];
            // SAFETY: an unaligned 16-byte load of the two u64 of `e`.
            unsafe { _mm_loadu_si128(e.as_ptr().cast()) }
        };
        let (p0, p1, p2, p3) = (pair(0), pair(1), pair(2), pair(3));
        let lo = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(p0), p2);
        let hi = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(p1), p3);
        let tail = _mm256_castsi256_pd(_mm256_unpacklo_epi64(lo, hi));
        let sb = _mm256_unpackhi_epi64(lo, hi);
        let sbits = _mm256_add_epi64(sb, top);
        let r2 = _mm256_mul_pd(r, r);
        let p23 = _mm256_fmadd_pd(r, c(k::C3), c(k::C2));
        let t = _mm256_add_pd(tail, r);
        let p45 = _mm256_fmadd_pd(r, c(k::C5), c(k::C4));
        let t = _mm256_fmadd_pd(r2, p23, t);
        let r4 = _mm256_mul_pd(r2, r2);
        let tmp = _mm256_fmadd_pd(r4, p45, t);
        let scale = _mm256_castsi256_pd(sbits);
        let y = _mm256_fmadd_pd(scale, tmp, scale);
        // glibc's fast path: 2^-54 ≤ |x| < 512 (false for NaN).
        let ax = _mm256_andnot_pd(_mm256_set1_pd(-0.0), x);
        let ok = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GE_OQ>(ax, _mm256_set1_pd(f64::from_bits(0x3c90_0000_0000_0000))),
            _mm256_cmp_pd::<_CMP_LT_OQ>(ax, _mm256_set1_pd(512.0)),
        );
        if _mm256_movemask_pd(ok) == 0b1111 {
            return y;
        }
        underflow(x, y, ok, tmp, sbits)
    }

    /// [`exp4`]'s lanes off glibc's fast path: −1024 < x ≤ −512 by glibc's `specialcase` for
    /// k < 0 (module docs, step 2), x ≤ −1024 as +0, every other one (|x| < 2^-54, x ≥ 512, NaN)
    /// by the scalar `exp`. `y`, `tmp` and `sbits` are the fast path's values.
    #[target_feature(enable = "avx2,fma")]
    #[inline(never)]
    fn underflow(x: __m256d, y: __m256d, ok: __m256d, tmp: __m256d, sbits: __m256i) -> __m256d {
        let one = _mm256_set1_pd(1.0);
        let zero = _mm256_setzero_pd();
        // sbits += 1022 << 52; scale = asdouble(sbits); y = scale + scale·tmp (not fused).
        let scale = _mm256_castsi256_pd(_mm256_add_epi64(
            sbits,
            _mm256_set1_epi64x(0x3fe0_0000_0000_0000),
        ));
        let st = _mm256_mul_pd(scale, tmp);
        let ys = _mm256_add_pd(scale, st);
        // y < 1: lo = scale − y + scale·tmp; hi = 1 + y; lo = 1 − hi + y + lo; y = (hi + lo) − 1,
        // and +0 for ±0.
        let hi = _mm256_add_pd(ys, one);
        let lo = _mm256_add_pd(_mm256_sub_pd(scale, ys), st);
        let t = _mm256_add_pd(_mm256_sub_pd(one, hi), ys);
        let t = _mm256_add_pd(t, lo);
        let t = _mm256_sub_pd(_mm256_add_pd(t, hi), one);
        let t = _mm256_andnot_pd(_mm256_cmp_pd::<_CMP_EQ_OQ>(t, zero), t);
        let ys = _mm256_blendv_pd(ys, t, _mm256_cmp_pd::<_CMP_LT_OQ>(ys, one));
        // y·2^-1022.
        let ys = _mm256_mul_pd(ys, _mm256_set1_pd(f64::from_bits(0x0010_0000_0000_0000)));
        let neg = _mm256_and_pd(
            _mm256_cmp_pd::<_CMP_GT_OQ>(x, _mm256_set1_pd(-1024.0)),
            _mm256_cmp_pd::<_CMP_LE_OQ>(x, _mm256_set1_pd(-512.0)),
        );
        let gone = _mm256_cmp_pd::<_CMP_LE_OQ>(x, _mm256_set1_pd(-1024.0));
        let y = _mm256_andnot_pd(gone, _mm256_blendv_pd(y, ys, neg));
        let done = _mm256_movemask_pd(_mm256_or_pd(ok, _mm256_or_pd(neg, gone)));
        if done == 0b1111 {
            return y;
        }
        special(x, y, done)
    }

    /// Lanes not in `ok` recomputed by the scalar `exp` (never met on the grid, where
    /// −2200 ≲ x ≤ −2^-54 or x = ±0, handled before).
    #[target_feature(enable = "avx2,fma")]
    #[cold]
    fn special(x: __m256d, y: __m256d, ok: i32) -> __m256d {
        let (mut xa, mut ya) = ([0.0; 4], [0.0; 4]);
        // SAFETY: unaligned stores and loads of four f64 to and from arrays of four.
        unsafe {
            _mm256_storeu_pd(xa.as_mut_ptr(), x);
            _mm256_storeu_pd(ya.as_mut_ptr(), y);
        }
        for j in 0..4 {
            if ok & (1 << j) == 0 {
                ya[j] = xa[j].exp();
            }
        }
        // SAFETY: as above.
        unsafe { _mm256_loadu_pd(ya.as_ptr()) }
    }

    /// [`exp4`] on every value of `xs`, in place (a last part shorter than four by `f64::exp`).
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn exp4_slice(xs: &mut [f64], tab: &Table) {
        let mut chunks = xs.chunks_exact_mut(4);
        for c in &mut chunks {
            // SAFETY: unaligned load and store of four f64 from and to a chunk of four.
            unsafe {
                let y = exp4(_mm256_loadu_pd(c.as_ptr()), tab);
                _mm256_storeu_pd(c.as_mut_ptr(), y);
            }
        }
        for x in chunks.into_remainder() {
            *x = x.exp();
        }
    }

    /// [`exp4`] on an array (the self-check and the tests).
    #[target_feature(enable = "avx2,fma")]
    pub(crate) fn exp4_array(x: [f64; 4], tab: &Table) -> [f64; 4] {
        let mut out = [0.0; 4];
        // SAFETY: unaligned load and store of four f64 from and to arrays of four.
        unsafe {
            let y = exp4(_mm256_loadu_pd(x.as_ptr()), tab);
            _mm256_storeu_pd(out.as_mut_ptr(), y);
        }
        out
    }

    /// The moment sums of 4·V values of k at once, V vectors of four lanes side by side (module
    /// docs, step 1): per lane, the operations of [`crate::testers::renyi::moment_sums`] in its
    /// order. Every k must be finite. Returns (Σ w·x, Σ (w·x)·x) lane by lane.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn moment_sums_lanes<const V: usize>(
        pts: &[(f64, f64)],
        ks: [[f64; 4]; V],
        tab: &Table,
    ) -> [([f64; 4], [f64; 4]); V] {
        // SAFETY (all loads and stores below): unaligned, of four f64 from and to arrays of four.
        let kv = ks.map(|k4| unsafe { _mm256_loadu_pd(k4.as_ptr()) });
        let at_minus_one = ks.map(|k4| {
            let neg = k4.map(|k| (-k).exp());
            unsafe { _mm256_loadu_pd(neg.as_ptr()) }
        });
        let one = [_mm256_set1_pd(1.0); V];
        let mut m1 = [_mm256_setzero_pd(); V];
        let mut m2 = [_mm256_setzero_pd(); V];
        let (mut last_u, mut last_x) = (f64::NAN, one);
        for &(u, w) in pts {
            let x = if u == last_u {
                last_x
            } else if u == 0.0 {
                one
            } else if u == -1.0 {
                at_minus_one
            } else {
                let uv = _mm256_set1_pd(u);
                kv.map(|k| exp4(_mm256_mul_pd(k, uv), tab))
            };
            (last_u, last_x) = (u, x);
            let wv = _mm256_set1_pd(w);
            for v in 0..V {
                let wx = _mm256_mul_pd(wv, x[v]);
                m1[v] = _mm256_add_pd(m1[v], wx);
                m2[v] = _mm256_add_pd(m2[v], _mm256_mul_pd(wx, x[v]));
            }
        }
        std::array::from_fn(|v| {
            let (mut a, mut b) = ([0.0; 4], [0.0; 4]);
            unsafe {
                _mm256_storeu_pd(a.as_mut_ptr(), m1[v]);
                _mm256_storeu_pd(b.as_mut_ptr(), m2[v]);
            }
            (a, b)
        })
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    //! [`super::avx`]'s code eight lanes wide (AVX-512F); every function must be called only
    //! after `is_x86_feature_detected!("avx512f")`. The same operations in the same order, lane
    //! by lane, so the same bits.
    use std::arch::x86_64::*;

    use super::{Table, k};

    /// e^x in eight lanes by glibc's algorithm (module docs, step 2), as [`super::avx::exp4`].
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) fn exp8(x: __m512d, tab: &Table) -> __m512d {
        let c = |bits: u64| _mm512_set1_pd(f64::from_bits(bits));
        let shift = c(k::SHIFT);
        let z = _mm512_fmadd_pd(x, c(k::INV_LN2_N), shift);
        let ki = _mm512_castpd_si512(z);
        let kd = _mm512_sub_pd(z, shift);
        let r = _mm512_fmadd_pd(kd, c(k::NEG_LN2_HI_N), x);
        let r = _mm512_fmadd_pd(kd, c(k::NEG_LN2_LO_N), r);
        let idx = _mm512_slli_epi64::<1>(_mm512_and_si512(ki, _mm512_set1_epi64(127)));
        let top = _mm512_slli_epi64::<45>(ki);
        // SAFETY: idx is 2·(ki mod 128) ≤ 254, so entries idx and idx + 1 are inside the
        // 256-entry table; the gathers read 8-byte entries (scale 8).
        let (tail, sb) = unsafe {
            let base = tab.as_ptr();
            (
                _mm512_i64gather_pd::<8>(idx, base.cast()),
                _mm512_i64gather_epi64::<8>(idx, base.add(1).cast()),
            )
        };
        let sbits = _mm512_add_epi64(sb, top);
        let r2 = _mm512_mul_pd(r, r);
        let p23 = _mm512_fmadd_pd(r, c(k::C3), c(k::C2));
        let t = _mm512_add_pd(tail, r);
        let p45 = _mm512_fmadd_pd(r, c(k::C5), c(k::C4));
        let t = _mm512_fmadd_pd(r2, p23, t);
        let r4 = _mm512_mul_pd(r2, r2);
        let tmp = _mm512_fmadd_pd(r4, p45, t);
        let scale = _mm512_castsi512_pd(sbits);
        let y = _mm512_fmadd_pd(scale, tmp, scale);
        // glibc's fast path: 2^-54 ≤ |x| < 512 (false for NaN).
        let ax = _mm512_abs_pd(x);
        let ok = _mm512_cmp_pd_mask::<_CMP_GE_OQ>(ax, c(0x3c90_0000_0000_0000))
            & _mm512_cmp_pd_mask::<_CMP_LT_OQ>(ax, _mm512_set1_pd(512.0));
        if ok == 0xff {
            return y;
        }
        underflow(x, y, ok, tmp, sbits)
    }

    /// [`super::avx::underflow`] eight lanes wide.
    #[target_feature(enable = "avx512f")]
    #[inline(never)]
    fn underflow(x: __m512d, y: __m512d, ok: __mmask8, tmp: __m512d, sbits: __m512i) -> __m512d {
        let one = _mm512_set1_pd(1.0);
        let zero = _mm512_setzero_pd();
        let scale = _mm512_castsi512_pd(_mm512_add_epi64(
            sbits,
            _mm512_set1_epi64(0x3fe0_0000_0000_0000),
        ));
        let st = _mm512_mul_pd(scale, tmp);
        let ys = _mm512_add_pd(scale, st);
        let hi = _mm512_add_pd(ys, one);
        let lo = _mm512_add_pd(_mm512_sub_pd(scale, ys), st);
        let t = _mm512_add_pd(_mm512_sub_pd(one, hi), ys);
        let t = _mm512_add_pd(t, lo);
        let t = _mm512_sub_pd(_mm512_add_pd(t, hi), one);
        let t = _mm512_mask_blend_pd(_mm512_cmp_pd_mask::<_CMP_EQ_OQ>(t, zero), t, zero);
        let ys = _mm512_mask_blend_pd(_mm512_cmp_pd_mask::<_CMP_LT_OQ>(ys, one), ys, t);
        let ys = _mm512_mul_pd(ys, _mm512_set1_pd(f64::from_bits(0x0010_0000_0000_0000)));
        let neg = _mm512_cmp_pd_mask::<_CMP_GT_OQ>(x, _mm512_set1_pd(-1024.0))
            & _mm512_cmp_pd_mask::<_CMP_LE_OQ>(x, _mm512_set1_pd(-512.0));
        let gone = _mm512_cmp_pd_mask::<_CMP_LE_OQ>(x, _mm512_set1_pd(-1024.0));
        let y = _mm512_mask_blend_pd(neg, y, ys);
        let y = _mm512_mask_blend_pd(gone, y, zero);
        let done = ok | neg | gone;
        if done == 0xff {
            return y;
        }
        let (mut xa, mut ya) = ([0.0; 8], [0.0; 8]);
        // SAFETY: unaligned stores and loads of eight f64 to and from arrays of eight.
        unsafe {
            _mm512_storeu_pd(xa.as_mut_ptr(), x);
            _mm512_storeu_pd(ya.as_mut_ptr(), y);
        }
        for j in 0..8 {
            if done & (1 << j) == 0 {
                ya[j] = xa[j].exp();
            }
        }
        // SAFETY: as above.
        unsafe { _mm512_loadu_pd(ya.as_ptr()) }
    }

    /// [`exp8`] on every value of `xs`, in place (a last part shorter than eight by `f64::exp`).
    #[target_feature(enable = "avx512f")]
    pub(super) fn exp8_slice(xs: &mut [f64], tab: &Table) {
        let mut chunks = xs.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: unaligned load and store of eight f64 from and to a chunk of eight.
            unsafe {
                let y = exp8(_mm512_loadu_pd(c.as_ptr()), tab);
                _mm512_storeu_pd(c.as_mut_ptr(), y);
            }
        }
        for x in chunks.into_remainder() {
            *x = x.exp();
        }
    }

    /// [`exp8`] on an array (the self-check and the tests).
    #[target_feature(enable = "avx512f")]
    pub(crate) fn exp8_array(x: [f64; 8], tab: &Table) -> [f64; 8] {
        let mut out = [0.0; 8];
        // SAFETY: unaligned load and store of eight f64 from and to arrays of eight.
        unsafe {
            let y = exp8(_mm512_loadu_pd(x.as_ptr()), tab);
            _mm512_storeu_pd(out.as_mut_ptr(), y);
        }
        out
    }

    /// The moment sums of one k over eight point sets at once, lane j over `streams[j]` (all of
    /// one length): per lane, the operations of [`crate::testers::renyi::moment_sums`] on its
    /// stream in its order, so the same bits (module docs, step 1). The scalar loop's shortcuts
    /// are lane by lane: where u = ±0 the lane takes 1, where u = −1 it takes e^{−k} (each the
    /// bits of e^{k·u}, module docs), and those lanes are given −1 to the vector exp so that
    /// they do not send the whole vector to the scalar path; a point whose eight u equal the
    /// previous point's reuses its values (the same u, the same exp). k must be finite.
    #[target_feature(enable = "avx512f")]
    pub(super) fn moment_sums_across8(
        streams: [&[(f64, f64)]; 8],
        k: f64,
        tab: &Table,
    ) -> ([f64; 8], [f64; 8]) {
        let len = streams.iter().map(|s| s.len()).min().unwrap_or(0);
        let kv = _mm512_set1_pd(k);
        let at_minus_one = _mm512_set1_pd((-k).exp());
        let (zero, one, minus_one) = (
            _mm512_setzero_pd(),
            _mm512_set1_pd(1.0),
            _mm512_set1_pd(-1.0),
        );
        let (mut m1, mut m2) = (_mm512_setzero_pd(), _mm512_setzero_pd());
        let (mut last_u, mut last_x) = (_mm512_set1_pd(f64::NAN), one);
        // `i` indexes the eight streams at once (clippy sees one of them).
        #[allow(clippy::needless_range_loop)]
        for i in 0..len {
            let at = |j: usize| streams[j][i];
            let (p0, p1, p2, p3, p4, p5, p6, p7) =
                (at(0), at(1), at(2), at(3), at(4), at(5), at(6), at(7));
            let u = _mm512_set_pd(p7.0, p6.0, p5.0, p4.0, p3.0, p2.0, p1.0, p0.0);
            let w = _mm512_set_pd(p7.1, p6.1, p5.1, p4.1, p3.1, p2.1, p1.1, p0.1);
            let x = if _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(u, last_u) == 0xff {
                last_x
            } else {
                let is_zero = _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(u, zero);
                let is_minus_one = _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(u, minus_one);
                let x = if is_zero | is_minus_one == 0xff {
                    one
                } else {
                    let arg = _mm512_mask_blend_pd(
                        is_zero | is_minus_one,
                        _mm512_mul_pd(kv, u),
                        minus_one,
                    );
                    exp8(arg, tab)
                };
                let x = _mm512_mask_blend_pd(is_zero, x, one);
                _mm512_mask_blend_pd(is_minus_one, x, at_minus_one)
            };
            (last_u, last_x) = (u, x);
            let wx = _mm512_mul_pd(w, x);
            m1 = _mm512_add_pd(m1, wx);
            m2 = _mm512_add_pd(m2, _mm512_mul_pd(wx, x));
        }
        lanes(m1, m2)
    }

    /// The lanes of the two sums, as arrays.
    #[target_feature(enable = "avx512f")]
    fn lanes(m1: __m512d, m2: __m512d) -> ([f64; 8], [f64; 8]) {
        let (mut a, mut b) = ([0.0; 8], [0.0; 8]);
        // SAFETY: unaligned stores of eight f64 to arrays of eight.
        unsafe {
            _mm512_storeu_pd(a.as_mut_ptr(), m1);
            _mm512_storeu_pd(b.as_mut_ptr(), m2);
        }
        (a, b)
    }

    /// The moment sums of eight k at once, as [`super::avx::moment_sums_lanes`].
    #[target_feature(enable = "avx512f")]
    pub(super) fn moment_sums8(
        pts: &[(f64, f64)],
        k8: [f64; 8],
        tab: &Table,
    ) -> ([f64; 8], [f64; 8]) {
        let neg = k8.map(|k| (-k).exp());
        // SAFETY (all loads and stores below): unaligned, of eight f64 from and to arrays of eight.
        let (kv, at_minus_one) =
            unsafe { (_mm512_loadu_pd(k8.as_ptr()), _mm512_loadu_pd(neg.as_ptr())) };
        let one = _mm512_set1_pd(1.0);
        let (mut m1, mut m2) = (_mm512_setzero_pd(), _mm512_setzero_pd());
        let (mut last_u, mut last_x) = (f64::NAN, one);
        for &(u, w) in pts {
            let x = if u == last_u {
                last_x
            } else if u == 0.0 {
                one
            } else if u == -1.0 {
                at_minus_one
            } else {
                exp8(_mm512_mul_pd(kv, _mm512_set1_pd(u)), tab)
            };
            (last_u, last_x) = (u, x);
            let wx = _mm512_mul_pd(_mm512_set1_pd(w), x);
            m1 = _mm512_add_pd(m1, wx);
            m2 = _mm512_add_pd(m2, _mm512_mul_pd(wx, x));
        }
        lanes(m1, m2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{Seed, Stream};
    use crate::testers::renyi::moment_sums;
    use rand::RngExt as _;

    /// The seeded stream of these tests (a tag of their own).
    fn rng(index: u64) -> crate::rng::AuditRng {
        Seed(54).rng(Stream::Other { tag: 5401, index })
    }

    /// glibc's `__exp_data` read from the local libm file (glibc 2.36 layout: N/ln2, −ln2hi/N,
    /// −ln2lo/N, C2..C5, shift, exp2's shift and 5 coefficients, then the 256-entry table), found
    /// by its first three constants; `None` where there is no such libm.
    fn glibc_exp_data() -> Option<Vec<u64>> {
        let lib = std::fs::read("/lib/x86_64-linux-gnu/libm.so.6").ok()?;
        let head: Vec<u8> = [k::INV_LN2_N, k::NEG_LN2_HI_N, k::NEG_LN2_LO_N]
            .iter()
            .flat_map(|b| b.to_le_bytes())
            .collect();
        let at = lib.windows(head.len()).position(|w| w == &head[..])?;
        let words = lib.get(at..at + (14 + 2 * N) * 8)?;
        Some(
            words
                .chunks(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        )
    }

    /// The port, or `None` with the reason printed when it is not in use here. Where the CPU
    /// has AVX2 and FMA and the libm is glibc's (its `__exp_data` is in the file), `exp` is
    /// glibc's FMA variant, so the port must be in use, and the 8-lane code too with AVX-512F: a
    /// failed self-check fails.
    fn port_here() -> Option<&'static Port> {
        let p = port();
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && glibc_exp_data().is_some()
        {
            assert!(
                p.is_some(),
                "glibc's FMA exp on an AVX2+FMA CPU, yet the port failed its self-check"
            );
            assert!(
                p.is_some_and(|p| p.eight) || !is_x86_feature_detected!("avx512f"),
                "glibc's FMA exp on an AVX-512F CPU, yet the 8-lane port failed its self-check"
            );
        }
        if p.is_none() {
            eprintln!(
                "skipped: the vector exp is not in use on this machine (no AVX2+FMA, or the platform's exp is not glibc's FMA variant), so the grid takes the scalar path"
            );
        }
        p
    }

    /// `exp_in_place` is `f64::exp` bit for bit, on every length around the lane widths.
    #[test]
    fn exp_in_place_is_the_platform_exp() {
        let mut xs = check_inputs();
        xs.extend([
            -0.0,
            0.0,
            -1e-300,
            1e-300,
            -745.2,
            709.8,
            f64::NEG_INFINITY,
            f64::NAN,
        ]);
        for len in [0, 1, 3, 4, 5, 7, 8, 9, 17, xs.len()] {
            let mut got = xs[..len].to_vec();
            exp_in_place(&mut got);
            for (x, y) in xs[..len].iter().zip(&got) {
                assert_eq!(x.exp().to_bits(), y.to_bits(), "exp({x})");
            }
        }
    }

    #[test]
    fn the_table_is_decided_and_exact_at_known_entries() {
        let tab = table().expect("every rounding decided at P = 192 bits");
        assert_eq!(tab[0], 0);
        assert_eq!(tab[1], 1f64.to_bits());
        for i in 0..N {
            let h = f64::from_bits(tab[2 * i + 1].wrapping_add((i as u64) << 45));
            let want = (i as f64 / N as f64).exp2();
            assert!(
                (h - want).abs() <= f64::EPSILON * want,
                "H_{i} = {h}, 2^(i/N) = {want}"
            );
            let tail = f64::from_bits(tab[2 * i]);
            assert!(tail.abs() <= 2f64.powi(-53), "tail_{i} = {tail:e}");
        }
        // 2^(64/128) = √2: H = √2 rounded (0x3ff6a09e667f3bcd), the tail of opposite sign.
        assert_eq!(tab[129].wrapping_add(64 << 45), 0x3ff6_a09e_667f_3bcd);
        assert!(f64::from_bits(tab[128]) < 0.0);
    }

    /// The table and the constants equal the bytes of `__exp_data` in the local libm. Skipped,
    /// with the reason printed, where there is no such libm.
    #[test]
    fn the_table_and_constants_are_the_local_libms() {
        let Some(theirs) = glibc_exp_data() else {
            eprintln!("skipped: no glibc libm with __exp_data at /lib/x86_64-linux-gnu/libm.so.6");
            return;
        };
        let consts = [
            k::INV_LN2_N,
            k::NEG_LN2_HI_N,
            k::NEG_LN2_LO_N,
            k::C2,
            k::C3,
            k::C4,
            k::C5,
            k::SHIFT,
        ];
        assert_eq!(&theirs[..8], &consts[..]);
        assert_eq!(&theirs[14..], &table().unwrap()[..]);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_port_is_exp_bit_for_bit() {
        let Some(port) = port_here() else { return };
        let mut r = rng(0);
        let mut xs: Vec<f64> = (0..1_000_000).map(|_| -745.0 * r.random::<f64>()).collect();
        xs.extend((0..200_000).map(|_| -2200.0 * r.random::<f64>()));
        xs.extend((0..200_000).map(|_| 709.0 * (2.0 * r.random::<f64>() - 1.0)));
        xs.extend((0..100_000).map(|_| -(r.random::<f64>() * 60.0 - 58.0).exp2()));
        // Every table index, at the index's centre and its edges, in several binades.
        let ln2 = std::f64::consts::LN_2;
        for i in 0..N {
            for j in -1000..=100 {
                let x = (f64::from(j) + i as f64 / N as f64) * ln2;
                xs.extend([x, x + ln2 / 257.0, x - ln2 / 257.0]);
            }
        }
        xs.extend(check_inputs());
        for eight in [false, true] {
            if eight && !port.eight {
                eprintln!("8 lanes skipped: no AVX-512F here");
                continue;
            }
            let ys = exp_lanes(&xs, &port.table, eight);
            let bad: Vec<(f64, f64, f64)> = xs
                .iter()
                .zip(&ys)
                .filter(|&(&x, &y)| x.exp().to_bits() != y.to_bits())
                .map(|(&x, &y)| (x, y, x.exp()))
                .take(5)
                .collect();
            assert!(
                bad.is_empty(),
                "{} lanes, (x, port, exp): {bad:?}",
                if eight { 8 } else { 4 }
            );
        }
    }

    /// Random point sets with the clamping levels u = 0, −0, −1, tiny u, and k from small to
    /// large enough for glibc's special path (|k·u| ≥ 512, underflow): the grid's sums equal the
    /// reference loop's bit for bit.
    #[test]
    fn the_grid_sums_are_the_scalar_sums() {
        // Without the port the grid is the scalar loop itself; the comparison still runs.
        let _ = port_here();
        let alpha_c: Vec<f64> = (0..25).map(|j| 0.05 * 1.35_f64.powi(j)).collect();
        for set in 0..60u64 {
            let mut r = rng(1 + set);
            let n = [1, 3, 7, 50, 300, 1024][set as usize % 6];
            let pts = random_points(&mut r, n);
            let alpha = [2.0, 4.0, 8.0, 16.0, 32.0, 1.5, 300.0][set as usize % 7];
            for side in [alpha - 1.0, alpha] {
                let ks: Vec<f64> = alpha_c.iter().map(|&c| side * c).collect();
                let got = moment_sums_grid(&pts, &ks, moment_sums);
                for (j, &k) in ks.iter().enumerate() {
                    let want = moment_sums(&pts, k);
                    assert_eq!(
                        (got[j].0.to_bits(), got[j].1.to_bits()),
                        (want.0.to_bits(), want.1.to_bits()),
                        "set {set}, k {k}: {:?} vs {want:?}",
                        got[j]
                    );
                }
            }
        }
    }

    /// Points (u, w) with u ∈ [−1, 0] of every kind the grid meets: ±0, −1, tiny, subnormal,
    /// ordinary, and repeats of the previous point's u (runs of equal values, as a discrete
    /// feature's compressed values have), with weights summing to about 1.
    fn random_points(r: &mut crate::rng::AuditRng, n: usize) -> Vec<(f64, f64)> {
        let mut last = -0.5;
        (0..n)
            .map(|_| {
                let u = match r.random_range(0..10) {
                    0 => 0.0,
                    1 => -0.0,
                    2 => -1.0,
                    3 => -(r.random::<f64>() * 1e-17),
                    4 => -f64::MIN_POSITIVE * r.random::<f64>(),
                    5 | 6 => last,
                    _ => -r.random::<f64>(),
                };
                last = u;
                (u, r.random::<f64>() / n as f64)
            })
            .collect()
    }

    /// The grid over many streams ([`moment_sums_streams`]: the k left over from passes of
    /// eight taken eight streams at a time) gives every stream and every k the reference loop's
    /// sums bit for bit: stream counts that do and do not fill a pass, k counts with and
    /// without a remainder, streams that share a position's u (a run across all lanes) and
    /// streams of unequal length (the per-stream path).
    #[test]
    fn the_streams_grid_is_the_scalar_sums() {
        let _ = port_here();
        for set in 0..24u64 {
            let mut r = rng(100 + set);
            let n = [1, 7, 300, 1024][set as usize % 4];
            let count = [1, 7, 8, 9, 15, 17][set as usize % 6];
            let mut streams: Vec<Vec<(f64, f64)>> =
                (0..count).map(|_| random_points(&mut r, n)).collect();
            if set % 3 == 0 {
                // Every stream the first one clamped differently: equal u across lanes where
                // the first repeats, and whole runs of 0 or −1.
                let base = streams[0].clone();
                for (j, s) in streams.iter_mut().enumerate() {
                    *s = base
                        .iter()
                        .map(|&(u, w)| ((u * (1.0 + j as f64 / 4.0)).max(-1.0), w))
                        .collect();
                }
            }
            if set % 8 == 7 {
                streams[0].pop();
            }
            let alpha = [2.0, 32.0, 300.0][set as usize % 3];
            let ks: Vec<f64> = (0..[25, 8, 3, 17][set as usize % 4])
                .map(|j| alpha * 0.05 * 1.35_f64.powi(j))
                .collect();
            let got = moment_sums_streams(&streams, &ks, moment_sums);
            for (s, stream) in streams.iter().enumerate() {
                for (j, &k) in ks.iter().enumerate() {
                    let want = moment_sums(stream, k);
                    assert_eq!(
                        (got[s][j].0.to_bits(), got[s][j].1.to_bits()),
                        (want.0.to_bits(), want.1.to_bits()),
                        "set {set}, stream {s}, k {k}: {:?} vs {want:?}",
                        got[s][j]
                    );
                }
            }
        }
    }
}
