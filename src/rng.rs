//! The one place random generators are built.
//!
//! A run has one `u64` seed. Every consumer of randomness gets its own ChaCha20 generator whose
//! 256-bit key is derived from the seed and a [`Stream`] label (purpose, trial, side, chunk) by
//! SplitMix64 mixing. ChaCha is used directly rather than `StdRng`, whose algorithm rand does not
//! promise to keep across versions.
//!
//! Large sample counts are drawn in fixed-size chunks, each from its own stream, in parallel with
//! rayon; chunks are concatenated in chunk order. The result therefore depends only on the seed,
//! never on the number of threads or on scheduling.

use std::sync::Mutex;

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mechanisms::{Dataset, Mechanism, Samples};

/// Releases per chunk when sampling in parallel. Part of the reproducibility contract: changing it
/// changes every sample drawn for a given seed.
pub const CHUNK: usize = 4096;

/// The generator type used everywhere.
pub type AuditRng = ChaCha20Rng;

/// Which side of a pair a sample comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// D.
    First,
    /// D'.
    Second,
}

/// A named purpose for randomness. Two different labels give independent generators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Mechanism releases: confirm-phase samples for `trial` on `side`, chunk `chunk`.
    Confirm {
        /// Index of the confirmed pair.
        trial: u64,
        /// Side of the pair.
        side: Side,
        /// Chunk index.
        chunk: u64,
    },
    /// Mechanism releases during the exploratory search phase.
    Search {
        /// Trial index.
        trial: u64,
        /// Side of the pair.
        side: Side,
        /// Chunk index.
        chunk: u64,
    },
    /// A tester's own randomness (splits, permutations, model fitting), per bound.
    Tester {
        /// Index of the bound in the run.
        bound: u64,
    },
    /// A dataset finder's proposals.
    Finder,
    /// Anything else, named by a caller-chosen tag and index.
    Other {
        /// Caller-chosen tag.
        tag: u64,
        /// Caller-chosen index.
        index: u64,
    },
}

impl Stream {
    fn words(&self) -> [u64; 4] {
        let side = |s: &Side| match s {
            Side::First => 0,
            Side::Second => 1,
        };
        match self {
            Stream::Confirm {
                trial,
                side: s,
                chunk,
            } => [1, *trial, side(s), *chunk],
            Stream::Search {
                trial,
                side: s,
                chunk,
            } => [2, *trial, side(s), *chunk],
            Stream::Tester { bound } => [3, *bound, 0, 0],
            Stream::Finder => [4, 0, 0, 0],
            Stream::Other { tag, index } => [5, *tag, *index, 0],
        }
    }

    /// The same label for chunk `chunk` (for sampling labels; others are returned unchanged).
    pub fn with_chunk(self, chunk: u64) -> Self {
        match self {
            Stream::Confirm { trial, side, .. } => Stream::Confirm { trial, side, chunk },
            Stream::Search { trial, side, .. } => Stream::Search { trial, side, chunk },
            other => other,
        }
    }
}

/// SplitMix64 finalizer (Steele, Lea & Flood 2014): a bijective 64-bit mixer. Hand-written
/// because it is four lines; it only derives keys, the generator itself is ChaCha20.
fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The run's seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Seed(pub u64);

impl Seed {
    /// The generator for `stream`: a ChaCha20 key derived from (seed, stream).
    pub fn rng(&self, stream: Stream) -> AuditRng {
        let words = stream.words();
        let mut key = [0u8; 32];
        let mut state = splitmix64(self.0);
        for (i, w) in words.iter().enumerate() {
            state = splitmix64(state ^ splitmix64(w.wrapping_add(i as u64 * 0x1000_0000_0001)));
            key[i * 8..(i + 1) * 8].copy_from_slice(&state.to_le_bytes());
        }
        ChaCha20Rng::from_seed(key)
    }

    /// A child seed for sub-run `index` of purpose `tag` (e.g. repeat r of a sweep), derived
    /// from this seed's `Other { tag, index }` stream: distinct sub-runs get independent seeds.
    pub fn child(&self, tag: u64, index: u64) -> Seed {
        use rand::Rng as _;
        Seed(self.rng(Stream::Other { tag, index }).next_u64())
    }
}

/// Releases per call of `mechanism.sample` when drawing: its [`Mechanism::batch_size`], else
/// [`CHUNK`] (at least 1).
pub fn chunk_len(mechanism: &dyn Mechanism) -> usize {
    mechanism.batch_size().unwrap_or(CHUNK).max(1)
}

/// Releases drawn by [`sample_parallel`] in this process so far (all callers together): read by
/// the progress display of a long run, never by anything that decides.
pub fn releases_drawn() -> u64 {
    RELEASES_DRAWN.load(std::sync::atomic::Ordering::Relaxed)
}

static RELEASES_DRAWN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Draws `n` releases of `mechanism` on `dataset`, in parallel chunks of [`chunk_len`] (the
/// mechanism's batch size, else [`CHUNK`]), chunk `c` from `seed.rng(stream.with_chunk(c))`.
/// Bit-identical for any number of rayon threads.
///
/// Checks that every chunk has the mechanism's announced dimension and only finite values.
pub fn sample_parallel(
    mechanism: &dyn Mechanism,
    dataset: &Dataset,
    n: usize,
    seed: Seed,
    stream: Stream,
) -> Result<Samples> {
    sample_parallel_timed(mechanism, dataset, n, seed, stream, None)
}

/// Draws both sides of `pair` at once ([`sample_parallel_timed`] on each side, in one parallel
/// pass, so that the calls of both sides share the pool): the same releases as two calls of
/// [`sample_parallel`] with `stream(Side::First)` and `stream(Side::Second)`.
pub fn sample_pair_parallel(
    mechanism: &dyn Mechanism,
    pair: &crate::mechanisms::DatasetPair,
    n: usize,
    seed: Seed,
    stream: impl Fn(Side) -> Stream + Sync,
    log: Option<&CallLog>,
) -> Result<(Samples, Samples)> {
    let (p, q) = rayon::join(
        || sample_parallel_timed(mechanism, pair.first(), n, seed, stream(Side::First), log),
        || sample_parallel_timed(mechanism, pair.second(), n, seed, stream(Side::Second), log),
    );
    Ok((p?, q?))
}

/// [`sample_parallel`], recording every call's releases and seconds in `log` when given (for
/// the cost model of [`crate::finders::cost`]).
pub fn sample_parallel_timed(
    mechanism: &dyn Mechanism,
    dataset: &Dataset,
    n: usize,
    seed: Seed,
    stream: Stream,
    log: Option<&CallLog>,
) -> Result<Samples> {
    if n == 0 {
        return Err(Error::InvalidConfig("cannot draw 0 samples".into()));
    }
    let chunk = chunk_len(mechanism);
    let dim = mechanism.output_dim();
    if dim == 0 {
        return Err(Error::InvalidConfig(format!(
            "mechanism {} declares output dimension 0; allowed: at least 1",
            mechanism.id()
        )));
    }
    let total = n.checked_mul(dim).ok_or_else(|| {
        Error::InvalidConfig(format!(
            "{n} releases of dimension {dim} do not fit in memory"
        ))
    })?;
    // Every chunk writes its rows straight into the one result buffer: the releases are held
    // once, not as chunks plus their concatenation (which doubled the peak).
    let mut flat = vec![0.0_f64; total];
    flat.par_chunks_mut(chunk * dim)
        .enumerate()
        .try_for_each(|(c, out)| -> Result<()> {
            let len = out.len() / dim;
            let mut rng = seed.rng(stream.with_chunk(c as u64));
            let t0 = std::time::Instant::now();
            let s = mechanism.sample(dataset, len, &mut rng)?;
            if let Some(log) = log {
                log.push(len, t0.elapsed().as_secs_f64());
            }
            if s.n() != len || s.dim() != dim {
                return Err(Error::InvalidSamples(format!(
                    "mechanism {} returned {} × {} releases, expected {} × {}",
                    mechanism.id(),
                    s.n(),
                    s.dim(),
                    len,
                    dim
                )));
            }
            if let Some((i, j, v)) = s.first_non_finite() {
                return Err(Error::InvalidSamples(format!(
                    "mechanism {} released a non-finite value {v} (release {}, coordinate {j})",
                    mechanism.id(),
                    c * chunk + i
                )));
            }
            for (dst, src) in out.iter_mut().zip(s.values().iter()) {
                *dst = *src;
            }
            RELEASES_DRAWN.fetch_add(len as u64, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        })?;
    Ok(Samples::from_flat(dim, flat)?)
}

/// Seconds of one program call, observed.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallTime {
    /// Releases requested.
    pub releases: usize,
    /// Seconds from the start of the call to its last release read.
    pub seconds: f64,
}

/// Per-call times of draws, collected from the threads that make them.
#[derive(Debug, Default)]
pub struct CallLog {
    calls: Mutex<Vec<CallTime>>,
}

impl CallLog {
    /// Records one call.
    pub fn push(&self, releases: usize, seconds: f64) {
        if let Ok(mut g) = self.calls.lock() {
            g.push(CallTime { releases, seconds });
        }
    }

    /// Takes the calls recorded so far.
    pub fn take(&self) -> Vec<CallTime> {
        self.calls
            .lock()
            .map(|mut g| std::mem::take(&mut *g))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;

    #[test]
    fn streams_are_distinct_and_repeatable() {
        let s = Seed(7);
        let a = s.rng(Stream::Finder).random::<u64>();
        let b = s.rng(Stream::Finder).random::<u64>();
        let c = s.rng(Stream::Tester { bound: 0 }).random::<u64>();
        let d = Seed(8).rng(Stream::Finder).random::<u64>();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
        let first = Stream::Confirm {
            trial: 0,
            side: Side::First,
            chunk: 0,
        };
        let second = Stream::Confirm {
            trial: 0,
            side: Side::Second,
            chunk: 0,
        };
        assert_ne!(s.rng(first).random::<u64>(), s.rng(second).random::<u64>());
    }
}
