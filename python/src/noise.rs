//! `dp_audit._native.noise`: the crate's float-safe noise samplers, vectorised over numpy arrays.
//!
//! - [`snapping_laplace`]: Mironov's snapping mechanism ([`SnappingLaplace`]), ε·(1 + 2^−49·B)
//!   -DP for a query of sensitivity Δ (a power of two), outputs on a grid and clamped to [−B, B];
//! - [`discrete_laplace`] and [`discrete_gaussian`]: the exact samplers of
//!   [`dp_audit::mechanisms::exact`] (Canonne, Kamath & Steinke 2020) added to an integer query.
//!
//! # Randomness
//! Element i of the flattened (C-order) input gets its noise from chunk ⌊i / [`CHUNK`]⌋, and
//! chunk c draws from ChaCha20 with the call's 256-bit key and stream (nonce) c. The key is
//! `Seed(seed).rng(Stream::Other { tag: NOISE_TAG, index: sampler })`'s (the engine's own
//! derivation, [`dp_audit::rng`]) for an integer seed, or 32 bytes of operating-system entropy
//! the Python layer passes for `seed=None`. Chunks are drawn in parallel with the GIL released;
//! the result depends only on the key, the parameters and the values, never on the number of
//! threads, so a seed gives the same array on every machine.
//!
//! Every bad input is a `ValueError` naming the argument and what is allowed; nothing here
//! panics (the samplers' own constructors check their parameters, and a sum that would overflow
//! `int64` is refused, naming the first such element).

use dp_audit::mechanisms::exact::{ExactDiscreteGaussian, ExactDiscreteLaplace};
use dp_audit::mechanisms::rand::SeedableRng;
use dp_audit::mechanisms::snapping::SnappingLaplace;
use dp_audit::rng::{AuditRng, Seed, Stream};
use numpy::{IntoPyArray, PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;

/// Elements per chunk (one ChaCha20 stream each). Part of the reproducibility contract: changing
/// it changes every array drawn for a given seed.
pub const CHUNK: usize = 4096;

/// The `Stream::Other` tag of the noise keys ("noise" in ASCII).
const NOISE_TAG: u64 = 0x6e_6f69_7365;

/// The sampler index in the key derivation: the same seed gives independent noise per sampler.
const SNAPPING: u64 = 1;
const DISCRETE_LAPLACE: u64 = 2;
const DISCRETE_GAUSSIAN: u64 = 3;

fn value_error(message: String) -> PyErr {
    PyValueError::new_err(message)
}

/// The call's 256-bit ChaCha20 key: derived from `seed`, or the 32 bytes of `entropy`.
fn base_key(seed: Option<u64>, entropy: Option<Vec<u8>>, sampler: u64) -> PyResult<[u8; 32]> {
    match (seed, entropy) {
        (Some(seed), None) => Ok(Seed(seed)
            .rng(Stream::Other {
                tag: NOISE_TAG,
                index: sampler,
            })
            .get_seed()),
        (None, Some(bytes)) => <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| {
            value_error(format!(
                "entropy has {} bytes; allowed: exactly 32",
                bytes.len()
            ))
        }),
        _ => Err(value_error(
            "give exactly one of seed (an integer in [0, 2^64)) and entropy (32 bytes)".into(),
        )),
    }
}

/// `f(index, value, rng)` for every element, chunk c from stream c of `key`, in parallel; the
/// first error in index order, if any.
fn draw<T, U, F>(values: &[T], key: [u8; 32], f: F) -> Result<Vec<U>, String>
where
    T: Copy + Sync,
    U: Send,
    F: Fn(usize, T, &mut AuditRng) -> Result<U, String> + Sync,
{
    let chunks: Vec<Result<Vec<U>, String>> = values
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let mut rng = AuditRng::from_seed(key);
            rng.set_stream(c as u64);
            chunk
                .iter()
                .enumerate()
                .map(|(j, v)| f(c * CHUNK + j, *v, &mut rng))
                .collect()
        })
        .collect();
    let mut out = Vec::with_capacity(values.len());
    for chunk in chunks {
        out.extend(chunk?);
    }
    Ok(out)
}

fn contiguous<'a, T: numpy::Element>(values: &'a PyReadonlyArray1<'_, T>) -> PyResult<&'a [T]> {
    values.as_slice().map_err(|_| {
        value_error("values: not a contiguous 1-D array (the Python layer flattens it)".into())
    })
}

/// The snapping mechanism's guarantee and grid for (ε, B, Δ): (ε′ rounded up, output grid Δ·Λ).
#[pyfunction]
#[pyo3(signature = (epsilon, bound, sensitivity))]
fn snapping_guarantee(epsilon: f64, bound: f64, sensitivity: f64) -> PyResult<(f64, f64)> {
    let m = SnappingLaplace::with_sensitivity(epsilon, sensitivity, bound)
        .map_err(|e| value_error(e.to_string()))?;
    Ok((m.epsilon(), m.grid()))
}

/// Δ · M(value / Δ) for each value: the snapping mechanism of scale Δ/ε, clamped to [−B, B].
#[pyfunction]
#[pyo3(signature = (values, epsilon, bound, sensitivity, seed=None, entropy=None))]
fn snapping_laplace<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, f64>,
    epsilon: f64,
    bound: f64,
    sensitivity: f64,
    seed: Option<u64>,
    entropy: Option<Vec<u8>>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let m = SnappingLaplace::with_sensitivity(epsilon, sensitivity, bound)
        .map_err(|e| value_error(e.to_string()))?;
    let key = base_key(seed, entropy, SNAPPING)?;
    let values = contiguous(&values)?;
    let out = py.detach(|| {
        draw(values, key, |i, v: f64, rng| {
            if v.is_finite() {
                // + 0.0 turns a −0.0 (a noisy value in (−Λ/2, 0) rounded to zero) into +0.0:
                // the sign of a zero is representation, not value, so none is released.
                Ok(m.release(v, rng) + 0.0)
            } else {
                Err(format!(
                    "values[{i}] = {v} (flattened index); allowed: finite numbers"
                ))
            }
        })
    });
    Ok(out.map_err(value_error)?.into_pyarray(py))
}

/// `value + k`, refusing an overflow of `int64`.
fn add(i: usize, v: i64, k: i64) -> Result<i64, String> {
    v.checked_add(k).ok_or_else(|| {
        format!(
            "values[{i}] = {v} (flattened index): adding the noise {k} overflows int64; allowed: values whose sum with the noise fits int64 (|value| ≤ 2^62 leaves room for noise up to 2^62, which a scale or sigma ≤ 2^40 exceeds with probability below e^-(2^22))"
        )
    })
}

/// `value + Lap_ℤ(scale)` for each integer value, the scale taken exactly as the `f64` given.
#[pyfunction]
#[pyo3(signature = (values, scale, seed=None, entropy=None))]
fn discrete_laplace<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, i64>,
    scale: f64,
    seed: Option<u64>,
    entropy: Option<Vec<u8>>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let s = ExactDiscreteLaplace::new(scale).map_err(|e| value_error(e.to_string()))?;
    let key = base_key(seed, entropy, DISCRETE_LAPLACE)?;
    let values = contiguous(&values)?;
    let out = py.detach(|| draw(values, key, |i, v: i64, rng| add(i, v, s.sample(rng))));
    Ok(out.map_err(value_error)?.into_pyarray(py))
}

/// `value + N_ℤ(0, sigma²)` for each integer value, σ taken exactly as the `f64` given.
#[pyfunction]
#[pyo3(signature = (values, sigma, seed=None, entropy=None))]
fn discrete_gaussian<'py>(
    py: Python<'py>,
    values: PyReadonlyArray1<'py, i64>,
    sigma: f64,
    seed: Option<u64>,
    entropy: Option<Vec<u8>>,
) -> PyResult<Bound<'py, PyArray1<i64>>> {
    let s = ExactDiscreteGaussian::new(sigma).map_err(|e| value_error(e.to_string()))?;
    let key = base_key(seed, entropy, DISCRETE_GAUSSIAN)?;
    let values = contiguous(&values)?;
    let out = py.detach(|| draw(values, key, |i, v: i64, rng| add(i, v, s.sample(rng))));
    Ok(out.map_err(value_error)?.into_pyarray(py))
}

/// The `noise` submodule of `_native`.
pub fn module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "noise")?;
    m.add_function(wrap_pyfunction!(snapping_guarantee, &m)?)?;
    m.add_function(wrap_pyfunction!(snapping_laplace, &m)?)?;
    m.add_function(wrap_pyfunction!(discrete_laplace, &m)?)?;
    m.add_function(wrap_pyfunction!(discrete_gaussian, &m)?)?;
    m.add("CHUNK", CHUNK)?;
    Ok(m)
}
