//! Output transforms: a fixed post-processing of every release before the testers see it, in the
//! spirit of DP-Auditorium's output post-processing.
//!
//! # Why a transformed bound is still a bound on the original divergence
//! For any fixed measurable map g applied to every release, the data-processing inequality gives
//! D(g(P) ‖ g(Q)) ≤ D(P ‖ Q) for every f-divergence — in particular the hockey-stick divergences
//! H_{e^ε} and (through their monotone transforms) the Rényi divergences. If the releases are
//! i.i.d. within each side and independent across sides, so are their images. A tester's lower
//! confidence bound L on D(g(P) ‖ g(Q)), valid with probability ≥ 1 − β, is therefore also a lower
//! confidence bound on D(P ‖ Q) with the same β, and a violation found on transformed samples is
//! a violation of the original claim.
//!
//! **Condition:** g must be a fixed function chosen without looking at the confirming samples —
//! chosen before the audit (on the command line, or by the catalogue entry), or on data
//! independent of the samples the bound is computed from. Every [`Transform`] here is a
//! deterministic function of one release with constants fixed by its spelling, so the condition
//! holds whenever the spelling is not picked after inspecting the confirming samples. Trying
//! several transforms on the same samples and reporting the best one is *not* covered: that is a
//! selection among several bounds and needs the β split over them (a union bound).
//!
//! # The transforms
//! - `none`: the identity.
//! - `tanh` / `tanh:S`: x ↦ tanh(S·x) coordinate by coordinate (S = 1 by default), which squashes
//!   heavy tails into (−1, 1).
//! - `chebyshev:K`: keeps each coordinate and appends, for each coordinate x, the Chebyshev
//!   polynomials T_1(y), …, T_K(y) of y = tanh(x): bounded, smooth features for kernel and
//!   moment-based testers (output dimension d·(1 + K)).
//! - `float-bits`: keeps each coordinate and appends, for each coordinate x, discrete features of
//!   its IEEE-754 representation (see [`FLOAT_BITS_FEATURES`]), so that floating-point leaks in
//!   the style of Mironov (2012) — outputs whose low-order bits depend on the data — become
//!   visible to testers that treat few-valued coordinates as discrete (the hockey-stick tester's
//!   atoms, `max_discrete_values`).
//! - `auto`: the transform for programs dp-audit has never seen. Keeps each coordinate and
//!   appends, for each coordinate, the `float-bits` block followed by two more float features
//!   (see [`AUTO_FEATURES`]): the lowest 6 bits of the **f32** mantissa when the value is exactly
//!   an f32 — float32 samplers (a float32 Box–Muller Gaussian, Jin et al. 2022) leak there, while
//!   their f64 low bits are all 0 — and the binade (the f64 exponent, a magnitude band), so that a
//!   leak confined to one binade is a discrete event. For outputs of dimension d ≥ 2 it then
//!   appends the L2, L1 and L∞ norms of the original coordinates, extra scalar scores the
//!   testers threshold like coordinates. Output dimension d·(1 + 17) (+ 3 when d ≥ 2). Every
//!   feature is a fixed function of one release, so the data-processing argument above holds.
//!   What it finds is real but may surprise: a release computed as x + noise in f64 with
//!   x ≠ 0 cancels near 0, so its small-binade values end in zero mantissa bits while those of
//!   0 + noise do not (for 1 + σZ, σ = 3.73, |y| < 2^-4: 63 % against 1.7 % have the low 6
//!   bits 0). Through `auto` the binade × low-bits atoms flag such mechanisms, correct only in
//!   the real-number model (Mironov 2012), e.g. the catalogue's Gaussian entries at their
//!   correct noise and `examples/exec/stdlib_laplace_count.py`; snapped, rounded or integer
//!   outputs are not flagged.

use std::fmt;
use std::str::FromStr;

use ndarray::{Array2, ArrayView2};
use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mechanisms::{
    Dataset, Mechanism, MechanismError, Neighboring, PrivacyClaim, RecordDomain, Samples,
};

/// Largest Chebyshev degree accepted (the output dimension grows as d·(1 + K)).
pub const MAX_CHEBYSHEV_DEGREE: usize = 32;

/// Number of low mantissa bits kept as one feature by `float-bits`: 6 bits take 64 values, the
/// hockey-stick tester's default `max_discrete_values`, so the feature is treated as discrete
/// (an atom) rather than as a continuous coordinate cut by a threshold.
pub const LOW_MANTISSA_BITS: u32 = 6;

/// The k of the dyadic-grid indicators "x·2^k is an integer" of `float-bits`: grids from 1 down
/// to 2^-12 ≈ 2.4e-4 (noise rounded to a fixed-point grid, to a few binary digits, or to
/// integers). Multiplying by 2^k is exact in binary floating point, so the indicator is exact.
pub const DYADIC_EXPONENTS: std::ops::RangeInclusive<i32> = 0..=12;

/// Features `float-bits` appends per output coordinate, in order.
pub const FLOAT_BITS_FEATURES: &str = "the lowest 6 bits of the f64 mantissa as an integer 0–63; \
     1 if the value is exactly an f32 (else 0); 1 if x·2^k is an integer (else 0) for k = 0, …, 12";

/// Features per output coordinate added by `float-bits`.
const FLOAT_BITS_PER_COORD: usize = 2 + 13;

/// The binade feature of `auto` is the unbiased f64 exponent clamped to this range (64 values,
/// the hockey-stick tester's default `max_discrete_values`, so it is treated as discrete): every
/// |x| < 2^-32 (including 0 and subnormals) is one band, every |x| ≥ 2^31 another.
pub const BINADE_RANGE: std::ops::RangeInclusive<i32> = -32..=31;

/// Features `auto` appends per output coordinate, in order (then, when d ≥ 2, the three norms).
pub const AUTO_FEATURES: &str = "the float-bits block (the lowest 6 bits of the f64 mantissa as an \
     integer 0–63; 1 if the value is exactly an f32; 1 if x·2^k is an integer for k = 0, …, 12); \
     the lowest 6 bits of the f32 mantissa as an integer 0–63 when the value is exactly an f32 \
     (else 0); the binade: the f64 exponent ⌊log2 |x|⌋ clamped to −32…31 (−32 for 0)";

/// Features per output coordinate added by `auto`.
const AUTO_PER_COORD: usize = FLOAT_BITS_PER_COORD + 2;

/// Norms `auto` appends for outputs of dimension ≥ 2 (L2, L1, L∞).
const AUTO_NORMS: usize = 3;

/// A fixed post-processing applied to every release before testing. See the module docs for why
/// bounds on transformed samples stay valid lower bounds on the original divergences.
///
/// Spelled on the command line and in reports as `none`, `tanh`, `tanh:S`, `chebyshev:K` or
/// `float-bits` ([`FromStr`] and [`fmt::Display`] are inverse).
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Transform {
    /// The identity.
    #[default]
    None,
    /// x ↦ tanh(scale · x), coordinate by coordinate.
    Tanh {
        /// Fixed scale applied before tanh; finite and > 0.
        scale: f64,
    },
    /// Each coordinate x kept, then T_1(tanh x), …, T_degree(tanh x) appended for each coordinate.
    Chebyshev {
        /// K ≥ 1, at most [`MAX_CHEBYSHEV_DEGREE`].
        degree: usize,
    },
    /// Each coordinate kept, then the features of [`FLOAT_BITS_FEATURES`] appended for each.
    FloatBits,
    /// Each coordinate kept, then the features of [`AUTO_FEATURES`] appended for each, then (for
    /// d ≥ 2) the L2, L1 and L∞ norms of the coordinates.
    Auto,
    /// The mechanism layer's view: each coordinate kept, then (for d ≥ 2) the L2, L1 and L∞
    /// norms. Every feature is a function of the real values, so a violation found through it
    /// is a violation of the real-valued mechanism (see [`crate::record::layers`]).
    Values,
    /// The floating-point layer's view: per coordinate, the representation features of
    /// [`FLOAT_REPR_FEATURES`] only (no value). See [`crate::record::layers`].
    FloatRepr,
    /// The release read as K checkpoints of a model with `block` coordinates, θ_1, …, θ_K (an
    /// iterative algorithm that releases its iterates), replaced per model coordinate c by the
    /// final value θ_K,c and the largest and smallest increment max_k (θ_k,c − θ_{k−1},c),
    /// min_k (…) with θ_0 = 0. A record that joins a few of many steps moves a few increments,
    /// which the extremes show and the sum (the final model) drowns in the noise of every step;
    /// these are the statistics of the tight-auditing literature for released iterates (Nasr et
    /// al. 2021, 2023: the largest per-step signal of the canary).
    Checkpoints {
        /// Model coordinates per checkpoint (≥ 1; the release's dimension is a multiple of it).
        block: usize,
    },
}

/// What `--transform` accepts, for error messages.
pub const TRANSFORM_SPELLINGS: &str = "none, values, float-repr, tanh, tanh:S (S > 0), chebyshev:K (K = 1 to 32), float-bits, auto or checkpoints:D (D ≥ 1 model coordinates per checkpoint)";

/// Features `float-repr` keeps per output coordinate, in order (no value: representation only).
/// The 13 dyadic-grid flags of `float-bits` are nested (x·2^k an integer implies x·2^(k+1) is),
/// so the grid level below carries exactly their information in one feature.
pub const FLOAT_REPR_FEATURES: &str = "the lowest 6 bits of the f64 mantissa (0–63); 1 if the value is exactly an f32; the finest dyadic grid the value lies on (the smallest k in 0…12 with x·2^k an integer, 13 when none); the lowest 6 bits of the f32 mantissa when the value is exactly an f32 (else 0); the binade ⌊log2 |x|⌋ clamped to −32…31 (−32 for 0)";

/// Features per output coordinate kept by `float-repr`.
pub const FLOAT_REPR_PER_COORD: usize = 5;

impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Transform::None => write!(f, "none"),
            Transform::Tanh { scale } if *scale == 1.0 => write!(f, "tanh"),
            Transform::Tanh { scale } => write!(f, "tanh:{scale}"),
            Transform::Chebyshev { degree } => write!(f, "chebyshev:{degree}"),
            Transform::FloatBits => write!(f, "float-bits"),
            Transform::Auto => write!(f, "auto"),
            Transform::Values => write!(f, "values"),
            Transform::FloatRepr => write!(f, "float-repr"),
            Transform::Checkpoints { block } => write!(f, "checkpoints:{block}"),
        }
    }
}

impl FromStr for Transform {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: String| {
            Error::InvalidConfig(format!(
                "transform {s:?}: {why}; allowed: {TRANSFORM_SPELLINGS}"
            ))
        };
        let t = s.trim();
        let (name, arg) = match t.split_once(':') {
            Some((n, a)) => (n.trim(), Some(a.trim())),
            None => (t, None),
        };
        let transform = match (name, arg) {
            ("none", None) => Transform::None,
            ("float-bits", None) => Transform::FloatBits,
            ("auto", None) => Transform::Auto,
            ("values", None) => Transform::Values,
            ("float-repr", None) => Transform::FloatRepr,
            ("tanh", None) => Transform::Tanh { scale: 1.0 },
            ("tanh", Some(a)) => {
                let scale: f64 = a
                    .parse()
                    .map_err(|_| bad(format!("scale {a:?} is not a number")))?;
                Transform::Tanh { scale }
            }
            ("chebyshev", Some(a)) => {
                let degree: usize = a
                    .parse()
                    .map_err(|_| bad(format!("degree {a:?} is not a whole number")))?;
                Transform::Chebyshev { degree }
            }
            ("chebyshev", None) => return Err(bad("the degree is missing".into())),
            ("checkpoints", Some(a)) => {
                let block: usize = a
                    .parse()
                    .map_err(|_| bad(format!("block {a:?} is not a whole number")))?;
                Transform::Checkpoints { block }
            }
            ("checkpoints", None) => {
                return Err(bad(
                    "the number of model coordinates per checkpoint is missing".into(),
                ));
            }
            ("none" | "float-bits" | "auto" | "values" | "float-repr", Some(_)) => {
                return Err(bad(format!("{name} takes no argument")));
            }
            _ => return Err(bad(format!("unknown transform {name:?}"))),
        };
        transform.validate()?;
        Ok(transform)
    }
}

impl From<Transform> for String {
    fn from(t: Transform) -> String {
        t.to_string()
    }
}

impl TryFrom<String> for Transform {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl Transform {
    /// Checks the parameters: a tanh scale finite and > 0, a Chebyshev degree from 1 to
    /// [`MAX_CHEBYSHEV_DEGREE`].
    pub fn validate(&self) -> Result<()> {
        match *self {
            Transform::Tanh { scale } if !(scale.is_finite() && scale > 0.0) => {
                Err(Error::InvalidConfig(format!(
                    "transform tanh:{scale}: bad scale; allowed: tanh:S with a finite S > 0"
                )))
            }
            Transform::Chebyshev { degree } if !(1..=MAX_CHEBYSHEV_DEGREE).contains(&degree) => {
                Err(Error::InvalidConfig(format!(
                    "transform chebyshev:{degree}: bad degree; allowed: chebyshev:K with K = 1 to {MAX_CHEBYSHEV_DEGREE}"
                )))
            }
            Transform::Checkpoints { block } if !(1..=1_000_000).contains(&block) => {
                Err(Error::InvalidConfig(format!(
                    "transform checkpoints:{block}: bad block; allowed: checkpoints:D with D = 1 to 1000000 model coordinates per checkpoint"
                )))
            }
            _ => Ok(()),
        }
    }

    /// Checks that releases of dimension `dim` can go through the transform (`checkpoints:D`
    /// needs a multiple of D).
    pub fn validate_for(&self, dim: usize) -> Result<()> {
        self.validate()?;
        match *self {
            Transform::Checkpoints { block } if !dim.is_multiple_of(block) => {
                Err(Error::InvalidConfig(format!(
                    "transform checkpoints:{block} on releases of dimension {dim}: {dim} is not a multiple of {block}; allowed: checkpoints:D with D dividing the output dimension"
                )))
            }
            _ => Ok(()),
        }
    }

    /// True for the identity.
    pub fn is_identity(&self) -> bool {
        matches!(self, Transform::None)
    }

    /// Output dimension after the transform, for releases of dimension `dim`.
    pub fn output_dim(&self, dim: usize) -> usize {
        match *self {
            Transform::None | Transform::Tanh { .. } => dim,
            Transform::Chebyshev { degree } => dim.saturating_mul(1 + degree),
            Transform::FloatBits => dim.saturating_mul(1 + FLOAT_BITS_PER_COORD),
            Transform::Auto => dim
                .saturating_mul(1 + AUTO_PER_COORD)
                .saturating_add(if dim >= 2 { AUTO_NORMS } else { 0 }),
            Transform::Values => dim.saturating_add(if dim >= 2 { AUTO_NORMS } else { 0 }),
            Transform::FloatRepr => dim.saturating_mul(FLOAT_REPR_PER_COORD),
            Transform::Checkpoints { block } => block.saturating_mul(3),
        }
    }

    /// The name of every feature the testers see for releases of dimension `dim`, as a user
    /// reads them ("output 2", "binade of output 0", "L2 norm of the outputs"), in the order of
    /// [`Transform::apply`]'s columns. Used to put an event into words.
    pub fn feature_names(&self, dim: usize) -> Vec<String> {
        let out = |j: usize| {
            if dim == 1 {
                "the output".to_string()
            } else {
                format!("output {j}")
            }
        };
        let norms = || {
            [
                "the L2 norm of the outputs".to_string(),
                "the L1 norm of the outputs".to_string(),
                "the largest |output|".to_string(),
            ]
        };
        let float_bits = |j: usize| -> Vec<String> {
            let mut v = vec![
                format!("the lowest 6 mantissa bits of {}", out(j)),
                format!("whether {} is exactly an f32", out(j)),
            ];
            for k in DYADIC_EXPONENTS {
                v.push(format!("whether {}·2^{k} is an integer", out(j)));
            }
            v
        };
        let mut names = Vec::new();
        match *self {
            Transform::None | Transform::Tanh { .. } => names.extend((0..dim).map(out)),
            Transform::Chebyshev { degree } => {
                names.extend((0..dim).map(out));
                for j in 0..dim {
                    for k in 1..=degree {
                        names.push(format!("T_{k}(tanh({}))", out(j)));
                    }
                }
            }
            Transform::FloatBits => {
                names.extend((0..dim).map(out));
                for j in 0..dim {
                    names.extend(float_bits(j));
                }
            }
            Transform::Auto => {
                names.extend((0..dim).map(out));
                for j in 0..dim {
                    names.extend(float_bits(j));
                    names.push(format!("the lowest 6 f32 mantissa bits of {}", out(j)));
                    names.push(format!("the binade of {}", out(j)));
                }
                if dim >= 2 {
                    names.extend(norms());
                }
            }
            Transform::Values => {
                names.extend((0..dim).map(out));
                if dim >= 2 {
                    names.extend(norms());
                }
            }
            Transform::FloatRepr => {
                for j in 0..dim {
                    names.push(format!("the lowest 6 mantissa bits of {}", out(j)));
                    names.push(format!("whether {} is exactly an f32", out(j)));
                    names.push(format!("the dyadic grid level of {}", out(j)));
                    names.push(format!("the lowest 6 f32 mantissa bits of {}", out(j)));
                    names.push(format!("the binade of {}", out(j)));
                }
            }
            Transform::Checkpoints { block } => {
                for c in 0..block {
                    names.push(format!("the final value of model coordinate {c}"));
                }
                for c in 0..block {
                    names.push(format!("the largest step of model coordinate {c}"));
                    names.push(format!("the smallest step of model coordinate {c}"));
                }
            }
        }
        names
    }

    /// One line for reports: what the testers saw.
    pub fn describe(&self) -> String {
        match *self {
            Transform::None => "none (the releases as the mechanism returned them)".into(),
            Transform::Tanh { scale } => format!("tanh({scale}·x) of every coordinate"),
            Transform::Chebyshev { degree } => format!(
                "every coordinate x kept, then Chebyshev features T_1..T_{degree} of tanh(x) appended per coordinate"
            ),
            Transform::FloatBits => {
                format!("every coordinate kept, then per coordinate: {FLOAT_BITS_FEATURES}")
            }
            Transform::Auto => format!(
                "every coordinate kept, then per coordinate: {AUTO_FEATURES}; then, for outputs of dimension ≥ 2, the L2, L1 and L∞ norms of the coordinates"
            ),
            Transform::Values => "every coordinate kept (the values), then, for outputs of dimension ≥ 2, the L2, L1 and L∞ norms: functions of the real values only".into(),
            Transform::FloatRepr => format!(
                "per coordinate, its floating-point representation only (no value): {FLOAT_REPR_FEATURES}"
            ),
            Transform::Checkpoints { block } => format!(
                "the release read as checkpoints θ_1, …, θ_K of {block} model coordinate(s) each; per model coordinate c: the final value θ_K,c, then the largest and the smallest increment θ_k,c − θ_(k−1),c over k (θ_0 = 0)"
            ),
        }
    }

    /// Whether the transform gives releases of dimension `dim` back value for value (once they
    /// are checked finite): `none`, and `values` on one coordinate (it adds norms only from
    /// two coordinates on), so no copy of them is needed ([`Self::apply_owned`]).
    pub fn keeps_values(&self, dim: usize) -> bool {
        self.is_identity() || (matches!(self, Transform::Values) && dim < 2)
    }

    /// The error [`Self::apply`] gives for the non-finite value `v` at release `i`, coordinate
    /// `j`.
    pub fn non_finite_error(&self, i: usize, j: usize, v: f64) -> Error {
        Error::InvalidSamples(format!(
            "release {i}, coordinate {j} is {v}; transform {self} needs finite values"
        ))
    }

    /// [`Self::apply`] taking the releases by value: the same releases or the same error, but
    /// those a transform keeps value for value ([`Self::keeps_values`]) are handed back without
    /// a copy.
    ///
    /// # Errors
    /// As [`Self::apply`].
    pub fn apply_owned(&self, samples: Samples) -> Result<Samples> {
        if !self.keeps_values(samples.dim()) {
            return self.apply(&samples);
        }
        self.validate_for(samples.dim())?;
        if !self.is_identity()
            && let Some((i, j, v)) = samples.first_non_finite()
        {
            return Err(self.non_finite_error(i, j, v));
        }
        Ok(samples)
    }

    /// Applies the transform to every release.
    ///
    /// Layout of the result for releases (x_1, …, x_d): `tanh` gives (tanh(S·x_1), …);
    /// `chebyshev:K` gives (x_1, …, x_d, T_1(y_1), …, T_K(y_1), …, T_1(y_d), …, T_K(y_d)) with
    /// y_j = tanh(x_j); `float-bits` gives (x_1, …, x_d, f(x_1), …, f(x_d)) where f(x) is the
    /// block of [`FLOAT_BITS_FEATURES`]; `auto` gives (x_1, …, x_d, a(x_1), …, a(x_d)) with a(x)
    /// the block of [`AUTO_FEATURES`], then (d ≥ 2) ‖x‖₂, ‖x‖₁, ‖x‖_∞.
    ///
    /// # Errors
    /// Invalid parameters, or a non-finite release value (named by release and coordinate).
    pub fn apply(&self, samples: &Samples) -> Result<Samples> {
        self.validate_for(samples.dim())?;
        if self.is_identity() {
            return Ok(samples.clone());
        }
        if let Some((i, j, v)) = samples.first_non_finite() {
            return Err(self.non_finite_error(i, j, v));
        }
        self.features(&samples.values().view())
    }

    /// [`Self::apply`] of the releases `x` (rows of a larger array, say), without copying them
    /// first: the same releases or the same error.
    ///
    /// # Errors
    /// As [`Self::apply`].
    pub fn apply_view(&self, x: &ArrayView2<f64>) -> Result<Samples> {
        self.validate_for(x.ncols())?;
        if self.is_identity() {
            return Ok(Samples::new(x.to_owned())?);
        }
        // The first non-finite value in row order, as `Samples::first_non_finite` finds it.
        let bad = match x.as_slice() {
            Some(flat) => flat.iter().position(|v| !v.is_finite()).map(|k| {
                let d = x.ncols().max(1);
                (k / d, k % d, flat[k])
            }),
            None => x
                .indexed_iter()
                .find(|(_, v)| !v.is_finite())
                .map(|((i, j), v)| (i, j, *v)),
        };
        if let Some((i, j, v)) = bad {
            return Err(self.non_finite_error(i, j, v));
        }
        self.features(x)
    }

    /// [`Transform::apply_view`] written into `dst` (row-major, [`Transform::output_dim`] values a
    /// release) where that can be done without an array of its own: the float-representation
    /// view of releases in one contiguous block (`None` for any other transform or layout; the
    /// caller then copies the view). The same numbers and the same error (the first
    /// non-finite value in row order); `dst` must hold exactly the view's values.
    pub fn write_view(&self, x: &ArrayView2<f64>, dst: &mut [f64]) -> Option<Result<()>> {
        let flat = x
            .as_slice()
            .filter(|_| matches!(self, Transform::FloatRepr))?;
        let w = FLOAT_REPR_PER_COORD;
        if dst.len() != flat.len() * w {
            return Some(Err(Error::InvalidSamples(format!(
                "transform {self}: {} values to write for {} releases of dimension {}",
                dst.len(),
                x.nrows(),
                x.ncols()
            ))));
        }
        if let Some(k) = flat.iter().position(|v| !v.is_finite()) {
            let d = x.ncols().max(1);
            return Some(Err(self.non_finite_error(k / d, k % d, flat[k])));
        }
        // The block of value k (row k / d, coordinate k % d) is dst[k·w .. k·w + w], as in
        // `float_repr_features`.
        for (block, &v) in dst.chunks_exact_mut(w).zip(flat) {
            block.copy_from_slice(&float_repr(v));
        }
        Some(Ok(()))
    }

    /// The transform of finite releases `x` (not the identity).
    fn features(&self, x: &ArrayView2<f64>) -> Result<Samples> {
        let out = match *self {
            Transform::None => x.to_owned(),
            Transform::Tanh { scale } => x.mapv(|v| (scale * v).tanh()),
            Transform::Chebyshev { degree } => chebyshev_features(x, degree),
            Transform::FloatBits => float_bits_features(x),
            Transform::Auto => auto_features_of(x),
            Transform::Values => values_with_norms(x),
            Transform::FloatRepr => float_repr_features(x),
            Transform::Checkpoints { block } => checkpoint_features(x, block),
        };
        let out = Samples::new(out)?;
        // Increments of finite values can overflow too (norms, checkpoint increments); the
        // float-representation block is small integers, always finite.
        if !matches!(self, Transform::FloatRepr)
            && let Some((i, j, v)) = out.first_non_finite()
        {
            return Err(Error::InvalidSamples(format!(
                "transform {self}: release {i}, feature {j} is {v} (a norm of finite values overflowed)"
            )));
        }
        Ok(out)
    }
}

/// `chebyshev:K`: each coordinate, then T_1..T_K of tanh of each coordinate.
fn chebyshev_features(x: &ArrayView2<f64>, degree: usize) -> Array2<f64> {
    let (n, d) = x.dim();
    let mut out = Array2::zeros((n, d * (1 + degree)));
    for (i, row) in x.outer_iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            out[[i, j]] = v;
            let base = d + j * degree;
            for (k, t) in chebyshev(v.tanh(), degree).into_iter().enumerate() {
                out[[i, base + k]] = t;
            }
        }
    }
    out
}

/// `float-bits`: each coordinate, then the [`FLOAT_BITS_FEATURES`] block of each.
fn float_bits_features(x: &ArrayView2<f64>) -> Array2<f64> {
    let (n, d) = x.dim();
    let w = FLOAT_BITS_PER_COORD;
    let mut out = Array2::zeros((n, d * (1 + w)));
    for (i, row) in x.outer_iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            out[[i, j]] = v;
            for (k, f) in float_bits(v).into_iter().enumerate() {
                out[[i, d + j * w + k]] = f;
            }
        }
    }
    out
}

/// `auto`: each coordinate, then the [`AUTO_FEATURES`] block of each, then (d ≥ 2) the
/// L2, L1 and L∞ norms.
fn auto_features_of(x: &ArrayView2<f64>) -> Array2<f64> {
    let (n, d) = x.dim();
    let w = AUTO_PER_COORD;
    let norms = if d >= 2 { AUTO_NORMS } else { 0 };
    let mut out = Array2::zeros((n, d * (1 + w) + norms));
    for (i, row) in x.outer_iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            out[[i, j]] = v;
            for (k, f) in auto_features(v).into_iter().enumerate() {
                out[[i, d + j * w + k]] = f;
            }
        }
        if norms > 0 {
            let base = d * (1 + w);
            // Finite inputs; the L2 norm by hypot so it overflows only when the
            // norm itself exceeds f64::MAX (then +∞, which Samples rejects below).
            out[[i, base]] = row.iter().fold(0.0, |a: f64, &v| a.hypot(v));
            out[[i, base + 1]] = row.iter().map(|v| v.abs()).sum::<f64>();
            out[[i, base + 2]] = row.iter().fold(0.0, |a: f64, &v| a.max(v.abs()));
        }
    }
    out
}

/// `values`: each coordinate, then (d ≥ 2) the L2, L1 and L∞ norms.
fn values_with_norms(x: &ArrayView2<f64>) -> Array2<f64> {
    let (n, d) = x.dim();
    let norms = if d >= 2 { AUTO_NORMS } else { 0 };
    let mut out = Array2::zeros((n, d + norms));
    for (i, row) in x.outer_iter().enumerate() {
        for (j, &v) in row.iter().enumerate() {
            out[[i, j]] = v;
        }
        if norms > 0 {
            // As for `auto`: hypot overflows only when the norm exceeds f64::MAX.
            out[[i, d]] = row.iter().fold(0.0, |a: f64, &v| a.hypot(v));
            out[[i, d + 1]] = row.iter().map(|v| v.abs()).sum::<f64>();
            out[[i, d + 2]] = row.iter().fold(0.0, |a: f64, &v| a.max(v.abs()));
        }
    }
    out
}

/// `float-repr`: the float-representation block of each coordinate.
fn float_repr_features(x: &ArrayView2<f64>) -> Array2<f64> {
    let (n, d) = x.dim();
    let w = FLOAT_REPR_PER_COORD;
    let mut out = Array2::zeros((n, d * w));
    // A new array is row-major: the block of value k (row k / d, coordinate k % d, in `x.iter()`
    // order) is out[k·w .. k·w + w].
    if let Some(flat) = out.as_slice_mut() {
        for (block, &v) in flat.chunks_exact_mut(w).zip(x.iter()) {
            block.copy_from_slice(&float_repr(v));
        }
    }
    out
}

/// `checkpoints:B`: per coordinate of a block, the last iterate and the largest and smallest
/// increment between consecutive iterates.
fn checkpoint_features(x: &ArrayView2<f64>, block: usize) -> Array2<f64> {
    let (n, d) = x.dim();
    let k = d / block;
    let mut out = Array2::zeros((n, 3 * block));
    for (i, row) in x.outer_iter().enumerate() {
        for c in 0..block {
            let (mut hi, mut lo, mut prev) = (f64::NEG_INFINITY, f64::INFINITY, 0.0);
            for t in 0..k {
                let v = row[t * block + c];
                let inc = v - prev;
                hi = hi.max(inc);
                lo = lo.min(inc);
                prev = v;
            }
            out[[i, c]] = prev;
            out[[i, block + 2 * c]] = hi;
            out[[i, block + 2 * c + 1]] = lo;
        }
    }
    out
}

/// T_1(y), …, T_k(y) by the three-term recurrence T_{m+1} = 2y·T_m − T_{m−1} (T_0 = 1,
/// T_1 = y), which is stable for |y| ≤ 1 (every T_m stays in [−1, 1]). Hand-written: three lines,
/// no crate offers it for plain f64 without pulling in a polynomial library.
fn chebyshev(y: f64, k: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(k);
    let (mut prev, mut cur) = (1.0, y);
    for _ in 0..k {
        out.push(cur);
        let next = 2.0 * y * cur - prev;
        prev = cur;
        cur = next;
    }
    out
}

/// The `float-bits` block of one finite value, see [`FLOAT_BITS_FEATURES`].
fn float_bits(v: f64) -> [f64; FLOAT_BITS_PER_COORD] {
    let mut f = [0.0; FLOAT_BITS_PER_COORD];
    f[0] = (v.to_bits() & ((1u64 << LOW_MANTISSA_BITS) - 1)) as f64;
    // `as f32` rounds to nearest; the round trip is the identity exactly when v is an f32 value.
    f[1] = f64::from((v as f32) as f64 == v);
    for (slot, k) in f[2..].iter_mut().zip(DYADIC_EXPONENTS) {
        // v·2^k is exact (a change of exponent) unless it overflows, which cannot make a finite
        // non-integer look like an integer: ±∞ has fract() = NaN ≠ 0.
        *slot = f64::from((v * 2f64.powi(k)).fract() == 0.0);
    }
    f
}

/// The `auto` block of one finite value, see [`AUTO_FEATURES`].
fn auto_features(v: f64) -> [f64; AUTO_PER_COORD] {
    let mut f = [0.0; AUTO_PER_COORD];
    f[..FLOAT_BITS_PER_COORD].copy_from_slice(&float_bits(v));
    let as_f32 = v as f32;
    if f64::from(as_f32) == v {
        f[FLOAT_BITS_PER_COORD] = (as_f32.to_bits() & ((1u32 << LOW_MANTISSA_BITS) - 1)) as f64;
    }
    // Unbiased exponent of the f64 representation (subnormals and 0 fall below the range).
    let biased = ((v.to_bits() >> 52) & 0x7ff) as i32;
    let exponent = if biased == 0 {
        *BINADE_RANGE.start()
    } else {
        biased - 1023
    };
    f[FLOAT_BITS_PER_COORD + 1] =
        f64::from(exponent.clamp(*BINADE_RANGE.start(), *BINADE_RANGE.end()));
    f
}

/// The `float-repr` block of one finite value, see [`FLOAT_REPR_FEATURES`], read from the bits
/// of v: the same five numbers as [`float_repr_reference`] (the `auto` block's, whose dyadic
/// flags cost 13 multiplications and `fract`s a value; the unit test
/// `float_repr_from_bits_is_the_reference` holds them equal), at a few integer operations.
///
/// The grid level is the least k in 0..=12 with v·2^k an integer (13: none). A finite v ≠ 0 with
/// biased exponent E ≥ 1 is m·2^(E−1075), m = 2^52 + its fraction bits, so v·2^k is an integer
/// exactly when E − 1075 + tz(m) + k ≥ 0 (tz: trailing zero bits): k = 1075 − E − tz(m), at
/// least 0. A subnormal (E = 0) needs k ≥ 1074 − 51 > 12; zero is an integer (level 0).
pub(crate) fn float_repr(v: f64) -> [f64; FLOAT_REPR_PER_COORD] {
    float_repr_ints(v).map(|k| k as f64)
}

/// [`float_repr`] as the integers its five features are (each converts to its f64 exactly):
/// what a reader of the view's rows that looks their values up as integers
/// (`PreparedEvents::count_block_viewed`) computes instead of the f64s.
pub(crate) fn float_repr_ints(v: f64) -> [i64; FLOAT_REPR_PER_COORD] {
    let (is_f32, f32_low) = f32_features(v);
    [low_mantissa(v), is_f32, grid_level(v), f32_low, binade(v)]
}

/// Feature `f` (0 to 4) of [`float_repr_ints`] of every value of `xs`, written into `out` (as
/// long as `xs`): the loop specialised to the one feature (no choice per value), the same
/// integers as [`float_repr_ints`].
pub(crate) fn float_repr_feature_column(f: usize, xs: &[f64], out: &mut [i64]) {
    fn each(xs: &[f64], out: &mut [i64], feature: impl Fn(f64) -> i64) {
        for (o, &v) in out.iter_mut().zip(xs) {
            *o = feature(v);
        }
    }
    match f {
        0 => each(xs, out, low_mantissa),
        1 => each(xs, out, |v| f32_features(v).0),
        2 => each(xs, out, grid_level),
        3 => each(xs, out, |v| f32_features(v).1),
        _ => each(xs, out, binade),
    }
}

/// The lowest [`LOW_MANTISSA_BITS`] bits of v's f64 mantissa.
fn low_mantissa(v: f64) -> i64 {
    (v.to_bits() & ((1u64 << LOW_MANTISSA_BITS) - 1)) as i64
}

/// (1 if v is exactly an f32, else 0; the lowest [`LOW_MANTISSA_BITS`] bits of its f32 mantissa
/// when it is, else 0).
fn f32_features(v: f64) -> (i64, i64) {
    let as_f32 = v as f32;
    if f64::from(as_f32) == v {
        let low = (1u32 << LOW_MANTISSA_BITS) - 1;
        (1, i64::from(as_f32.to_bits() & low))
    } else {
        (0, 0)
    }
}

/// The grid level of v (see [`float_repr`]).
fn grid_level(v: f64) -> i64 {
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let fraction = bits & ((1u64 << 52) - 1);
    let no_grid = (FLOAT_BITS_PER_COORD - 2) as i64;
    if biased == 0 {
        if fraction == 0 { 0 } else { no_grid }
    } else {
        let m = fraction | (1u64 << 52);
        let need = 1075 - biased - i64::from(m.trailing_zeros());
        if need <= 0 {
            0
        } else if need <= *DYADIC_EXPONENTS.end() as i64 {
            need
        } else {
            no_grid
        }
    }
}

/// The binade ⌊log2 |v|⌋ from v's exponent bits, clamped to [`BINADE_RANGE`] (its start for 0
/// and subnormals).
fn binade(v: f64) -> i64 {
    let biased = ((v.to_bits() >> 52) & 0x7ff) as i32;
    let exponent = if biased == 0 {
        *BINADE_RANGE.start()
    } else {
        biased - 1023
    };
    i64::from(exponent.clamp(*BINADE_RANGE.start(), *BINADE_RANGE.end()))
}

/// The `float-repr` block as first defined, from the `auto` block: what [`float_repr`] is held
/// equal to.
#[cfg(test)]
fn float_repr_reference(v: f64) -> [f64; FLOAT_REPR_PER_COORD] {
    let a = auto_features(v);
    // The dyadic flags sit at a[2..15] for k = 0..=12; they are nested, so the first set one
    // is the grid level (13: on none of them).
    let level = a[2..FLOAT_BITS_PER_COORD]
        .iter()
        .position(|&f| f == 1.0)
        .unwrap_or(FLOAT_BITS_PER_COORD - 2);
    [
        a[0],
        a[1],
        level as f64,
        a[FLOAT_BITS_PER_COORD],
        a[FLOAT_BITS_PER_COORD + 1],
    ]
}

/// A mechanism whose releases are post-processed by a fixed [`Transform`].
///
/// It keeps the inner mechanism's id, claim, neighboring relation and domain: by the
/// data-processing inequality the transformed mechanism satisfies every claim the inner one does,
/// so a violation found on it refutes the inner mechanism's claim (see the module docs).
#[derive(Debug)]
pub struct TransformedMechanism {
    inner: Box<dyn Mechanism>,
    transform: Transform,
}

impl TransformedMechanism {
    /// Wraps `inner`; errors if the transform's parameters are invalid.
    pub fn new(inner: Box<dyn Mechanism>, transform: Transform) -> Result<Self> {
        transform.validate_for(inner.output_dim())?;
        Ok(Self { inner, transform })
    }

    /// The transform.
    pub fn transform(&self) -> Transform {
        self.transform
    }

    /// The mechanism before the transform.
    pub fn inner(&self) -> &dyn Mechanism {
        &*self.inner
    }
}

impl Mechanism for TransformedMechanism {
    fn id(&self) -> &str {
        self.inner.id()
    }
    fn claim(&self) -> PrivacyClaim {
        self.inner.claim()
    }
    fn claim_source(&self) -> String {
        self.inner.claim_source()
    }
    fn neighboring(&self) -> Neighboring {
        self.inner.neighboring()
    }
    fn setting(&self) -> crate::mechanisms::DpSetting {
        self.inner.setting()
    }
    fn privacy_unit(&self) -> String {
        self.inner.privacy_unit()
    }
    fn dp_fy_scope(&self) -> crate::mechanisms::accounting::dpfy::DpFyScope {
        self.inner.dp_fy_scope()
    }
    fn domain(&self) -> RecordDomain {
        self.inner.domain()
    }
    fn output_dim(&self) -> usize {
        self.transform.output_dim(self.inner.output_dim())
    }
    fn batch_size(&self) -> Option<usize> {
        // Same calls of the inner mechanism, so the same seed gives the same raw releases.
        self.inner.batch_size()
    }
    fn set_batch_size(&self, batch: usize) -> bool {
        self.inner.set_batch_size(batch)
    }
    fn set_call_limit(&self, limit: Option<std::time::Duration>) {
        self.inner.set_call_limit(limit)
    }
    fn set_deadline(&self, deadline: Option<std::time::Instant>) {
        self.inner.set_deadline(deadline)
    }
    fn accountant_range(&self) -> Option<crate::mechanisms::AccountantRange> {
        self.inner.accountant_range()
    }
    fn sample(
        &self,
        dataset: &Dataset,
        n: usize,
        rng: &mut dyn Rng,
    ) -> crate::mechanisms::Result<Samples> {
        let raw = self.inner.sample(dataset, n, rng)?;
        self.transform
            .apply(&raw)
            .map_err(|e| MechanismError::Sampling {
                mechanism: self.inner.id().to_string(),
                message: format!("output transform {}: {e}", self.transform),
            })
    }
    fn datasets_per_call(&self) -> Option<usize> {
        self.inner.datasets_per_call()
    }
    fn sample_each(
        &self,
        datasets: &[Dataset],
        rng: &mut dyn Rng,
    ) -> crate::mechanisms::Result<Samples> {
        let raw = self.inner.sample_each(datasets, rng)?;
        self.transform
            .apply(&raw)
            .map_err(|e| MechanismError::Sampling {
                mechanism: self.inner.id().to_string(),
                message: format!("output transform {}: {e}", self.transform),
            })
    }
}

/// Wraps a catalogue mechanism in the output transform its entry recommends
/// ([`crate::mechanisms::catalogue::recommended_transform`]), if any: how `audit run --mechanism`
/// audits it by default. Returns the mechanism and the transform applied (`None`: unchanged).
pub fn with_recommended_transform(
    m: Box<dyn Mechanism>,
) -> Result<(Box<dyn Mechanism>, Option<Transform>)> {
    match crate::mechanisms::catalogue::recommended_transform_for(m.id(), &*m) {
        None => Ok((m, None)),
        Some(spelling) => {
            let t: Transform = spelling.parse()?;
            if t.is_identity() {
                Ok((m, None))
            } else {
                Ok((Box::new(TransformedMechanism::new(m, t)?), Some(t)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for s in [
            "none",
            "tanh",
            "tanh:0.5",
            "chebyshev:3",
            "float-bits",
            "auto",
            "values",
            "float-repr",
        ] {
            let t: Transform = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(json, format!("\"{s}\""));
            assert_eq!(serde_json::from_str::<Transform>(&json).unwrap(), t);
        }
    }

    #[test]
    fn feature_names_match_the_columns() {
        let x = Samples::new(ndarray::array![[0.5, -3.25, 1e-3], [2.0, 0.0, 7.0]]).unwrap();
        for t in [
            Transform::None,
            Transform::Values,
            Transform::FloatRepr,
            Transform::Auto,
            Transform::FloatBits,
            Transform::Chebyshev { degree: 2 },
            Transform::Checkpoints { block: 3 },
        ] {
            let y = t.apply(&x).unwrap();
            assert_eq!(t.feature_names(3).len(), y.dim(), "{t}");
            assert_eq!(t.output_dim(3), y.dim(), "{t}");
        }
    }

    /// `apply_owned` gives what `apply` gives, releases or error, for every transform that keeps
    /// the values (and the others), on finite and non-finite releases.
    #[test]
    fn apply_owned_is_apply() {
        let finite = Samples::from_column(vec![0.5, -0.0, 3.0, 1e300, -7.25]);
        let with_nan = Samples::from_column(vec![0.5, 2.0, f64::NAN, 1.0]);
        let two = Samples::from_flat(2, vec![1.0, 2.0, 3.0, f64::INFINITY]).unwrap();
        let bits = |s: &Samples| s.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for t in [
            Transform::None,
            Transform::Values,
            Transform::FloatRepr,
            Transform::Auto,
        ] {
            for s in [&finite, &with_nan, &two] {
                let (a, b) = (t.apply(s), t.apply_owned(s.clone()));
                match (a, b) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!((a.n(), a.dim()), (b.n(), b.dim()));
                        assert_eq!(bits(&a), bits(&b), "{t}");
                    }
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => panic!("{t}: {a:?} against {b:?}"),
                }
            }
        }
        assert!(Transform::Values.keeps_values(1) && !Transform::Values.keeps_values(2));
        // `apply_view` on rows of a larger array gives what `apply` gives on a copy of them.
        let wide =
            Samples::from_flat(2, vec![1.0, 2.5, -3.0, 4.0, f64::NAN, 6.0, 7.0, 8.0]).unwrap();
        for t in [
            Transform::None,
            Transform::Values,
            Transform::FloatRepr,
            Transform::Auto,
        ] {
            for rows in [0..2, 1..4, 3..4] {
                let view = wide.values().slice(ndarray::s![rows.clone(), ..]);
                let copy = Samples::new(view.to_owned()).unwrap();
                match (t.apply(&copy), t.apply_view(&view)) {
                    (Ok(a), Ok(b)) => assert_eq!(bits(&a), bits(&b), "{t} {rows:?}"),
                    (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
                    (a, b) => panic!("{t} {rows:?}: {a:?} against {b:?}"),
                }
            }
        }
    }

    #[test]
    fn float_repr_from_bits_is_the_reference() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(54);
        let mut values = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            3.0,
            0.1,
            f64::MIN_POSITIVE,
            -f64::MIN_POSITIVE / 8.0,
            5e-324,
            f64::MAX,
            -f64::MAX,
            2f64.powi(52),
            2f64.powi(53) + 2.0,
            2f64.powi(-12),
            -2f64.powi(-13),
            3.0 * 2f64.powi(-12),
            1e300,
            1e-300,
            f64::from(0.1f32),
        ];
        for _ in 0..100_000 {
            let k: i32 = rng.random_range(-40..40);
            let m: f64 = rng.random_range(-1.0..1.0);
            values.push(m * 2f64.powi(k));
            values.push((m * 4096.0).round() / 2f64.powi(rng.random_range(0..16)));
            values.push(f64::from((m * 2f64.powi(k)) as f32));
            let fraction = rng.random::<u64>() & !(0xfffu64 << 52);
            let any = f64::from_bits(fraction | (rng.random_range(0..0xfffu64) << 52));
            if any.is_finite() {
                values.push(any);
            }
        }
        for v in values {
            let (fast, slow) = (float_repr(v), float_repr_reference(v));
            assert_eq!(
                fast.map(f64::to_bits),
                slow.map(f64::to_bits),
                "{v:e}: {fast:?} against {slow:?}"
            );
            // Each feature computed alone is the same integer, and its f64 the view's.
            let ints = float_repr_ints(v);
            for (f, (&k, &x)) in ints.iter().zip(&slow).enumerate() {
                let mut alone = [0i64];
                float_repr_feature_column(f, &[v], &mut alone);
                assert_eq!(alone[0], k, "{v:e}: feature {f}");
                assert_eq!((k as f64).to_bits(), x.to_bits(), "{v:e}: feature {f}");
            }
        }
    }

    #[test]
    fn written_view_is_the_applied_view() {
        let x = ndarray::Array2::from_shape_fn((37, 3), |(i, j)| {
            (i as f64 - 18.0) * 0.37 + j as f64 * 1e-3 + f64::from(i as u8 % 3)
        });
        let t = Transform::FloatRepr;
        let mut dst = vec![0.0; 37 * 3 * FLOAT_REPR_PER_COORD];
        assert!(matches!(t.write_view(&x.view(), &mut dst), Some(Ok(()))));
        let applied = t.apply_view(&x.view()).unwrap();
        let bits = |v: &mut dyn Iterator<Item = f64>| v.map(f64::to_bits).collect::<Vec<_>>();
        assert_eq!(
            bits(&mut dst.iter().copied()),
            bits(&mut applied.values().iter().copied())
        );
        // The same error as `apply_view`: the first non-finite value in row order.
        let mut y = x.clone();
        y[[20, 2]] = f64::NAN;
        y[[30, 0]] = f64::INFINITY;
        let written = t
            .write_view(&y.view(), &mut dst)
            .map(|r| r.unwrap_err().to_string());
        assert_eq!(
            written,
            Some(t.apply_view(&y.view()).unwrap_err().to_string())
        );
        // Other transforms, and a wrong-sized destination, are not written here.
        assert!(Transform::None.write_view(&x.view(), &mut dst).is_none());
        assert!(matches!(
            t.write_view(&x.view(), &mut dst[1..]),
            Some(Err(_))
        ));
    }

    #[test]
    fn float_repr_grid_level_is_the_finest_dyadic_grid() {
        assert_eq!(float_repr(3.0)[2], 0.0);
        assert_eq!(float_repr(0.75)[2], 2.0);
        assert_eq!(float_repr(0.1)[2], 13.0);
        assert_eq!(float_repr(-2.0f64.powi(-12))[2], 12.0);
        // The binade and the low bits are those of `auto`.
        assert_eq!(float_repr(0.3)[4], -2.0);
        assert_eq!(float_repr(0.3)[0], auto_features(0.3)[0]);
    }

    #[test]
    fn chebyshev_matches_cosine_form() {
        // T_k(cos θ) = cos(kθ).
        for &y in &[-1.0, -0.3, 0.0, 0.7, 1.0] {
            let theta = f64::acos(y);
            for (k, t) in chebyshev(y, 8).into_iter().enumerate() {
                assert!(
                    (t - ((k + 1) as f64 * theta).cos()).abs() < 1e-12,
                    "T_{}({y})",
                    k + 1
                );
            }
        }
    }
}
