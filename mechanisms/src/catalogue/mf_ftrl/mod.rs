//! Matrix-factorization DP-FTRL over several epochs (seed 002: "we developed the matrix
//! factorization DP-FTRL approach", the successor of the tree-aggregation DP-FTRL of `ftrl.rs`
//! in Gboard's training): noisy prefix sums released through a factorization A = B·C of the
//! prefix-sum matrix, with the noise calibrated to C's sensitivity under multi-epoch
//! participation, and the two classic mistakes of that calibration.
//!
//! # The stream, the epochs and the neighboring relation
//! Training runs E epochs of b steps each, n = E·b steps in all, and visits the data in the same
//! order every epoch (fixed epoch order, the multi-epoch setting of Choquette-Choo, McMahan, Rush
//! & Thakurta 2023, "Multi-epoch matrix factorization mechanisms for private machine learning",
//! ICML; its (k, b)-participation with k = E). A record (s, g) ∈ [0, 1]² is one example: its
//! position in the epoch is t₀ = min(⌊s·b⌋, b − 1), so it participates at the E steps
//! t₀, t₀ + b, …, t₀ + (E − 1)·b and contributes its clipped gradient value g ∈ [0, 1] at each
//! of them (a scalar model: the gradient is the same at every participation; per-participation
//! values in [0, 1] would not raise the sensitivity below, whose worst case is g = 1 at every
//! participation). The stream element x_t is the sum of the g of the records participating at
//! step t. Neighbors: one record added or removed (add/remove), which changes x by g·u_{t₀},
//! u_{t₀} the 0/1 indicator of the record's E steps.
//!
//! # Release
//! The n prefix sums A·x (A the lower-triangular all-ones n × n matrix), computed as DP-FTRL
//! implementations do, in streaming form: the noisy gradients x̂ = x + C⁻¹·z, z ~ N(0, σ² I_n),
//! are summed by the optimizer, y = A·x̂ = A·x + B·z with B = A·C⁻¹, i.e. y = B·(C·x + z)
//! (Denisov, McMahan, Rush, Smith & Thakurta 2022, "Improved differential privacy for SGD via
//! optimal private linear operators on adaptive streams", NeurIPS; Choquette-Choo et al. 2023).
//!
//! # The factorization
//! C is the *banded square root* of A (Kalinin & Lampert 2024, "Banded square root matrix
//! factorization for differentially private model training", NeurIPS): the square root
//! A^{1/2} is the lower-triangular Toeplitz matrix of the coefficients c_i = binom(2i, i)/4^i of
//! (1 − x)^{−1/2} (Fichtenberger, Henzinger & Upadhyay 2023, "Constant matters: fine-grained
//! error bound on differentially private continual observation", ICML; (1 − x)^{−1/2} squared is
//! (1 − x)^{−1}, the generating function of A), and its banded version keeps c_0 … c_{p−1} (band
//! p) and sets the rest to 0. C is lower-triangular Toeplitz with c_0 = 1, hence invertible, and
//! B = A·C⁻¹ makes A = B·C exactly. Band p = n is the dense square root.
//!
//! # Sensitivity and the claim (`mf-ftrl-banded`)
//! B is square and invertible, so y and C·x + z are post-processings of each other and the
//! release is exactly the Gaussian mechanism C·x + z: neighbors shift its mean by g·C·u_{t₀},
//! and the release is exactly (Δ/σ)-GDP with Δ = max over positions t₀ of ‖C·u_{t₀}‖₂ (Dong,
//! Roth & Su 2022, "Gaussian differential privacy", Theorem 2.7 for the Gaussian mechanism,
//! Proposition 2.8 for post-processing; g ≤ 1 and the worst g is 1). This is the multi-
//! participation sensitivity of Choquette-Choo et al. 2023 (‖C·Σ_{i∈π} e_i‖ over participation
//! patterns π), here over the E-step patterns of fixed epoch order. The entry claims μ-GDP and
//! sets σ = Δ/μ (rounded up by a relative 1e-12, far above the rounding of Δ's n ≤ 16 terms).
//! Over a 0/1 sub-pattern (a record absent from some epochs, or g < 1 at some participations)
//! ‖C·u‖² = uᵀCᵀC·u only shrinks, because C and so CᵀC have no negative entry (c_i > 0): the
//! full pattern is the worst, as the tests check exhaustively. The true guarantee is the claim,
//! tight on the witness. (Real DP-FTRL feeds the noisy prefix sums back into the gradients, an
//! adaptive stream; Denisov et al. 2022 show that the Gaussian MF mechanism keeps the same
//! guarantee there. The stream here is not adaptive, so the guarantee is exact.)
//!
//! With band p ≤ b (the default p = b), the columns of C at steps b apart have disjoint supports
//! and are orthogonal, so Δ = √E · ‖C·e_{t₀}‖ (Choquette-Choo, Ganesh, McKenna, McMahan, Rush,
//! Thakurta & Xu 2023, "(Amplified) banded matrix factorization", NeurIPS, the b-banded case):
//! at the defaults (E = 4, b = 2, p = 2: c = (1, 1/2)) the largest column norm is √1.25 and
//! Δ = 2·√1.25 = √5.
//!
//! # The twins
//! - `mf-ftrl-single-participation`: σ from the sensitivity of *one* participation, the largest
//!   column norm Δ₁ = max_j ‖C·e_j‖ (single-epoch accounting reused for a multi-epoch run). The
//!   mechanism is the same, so it is exactly (Δ/σ)-GDP = (μ·Δ/Δ₁)-GDP: √E·μ when p ≤ b (2μ at
//!   the defaults); correct only when E = 1.
//! - `mf-ftrl-unbanded-noise`: the accountant computes σ = Δ/μ for the banded C_p, but the noise
//!   generator correlates the noise with the inverse of the *dense* square root C_n (the
//!   coefficients not truncated to the band): the C accounted is not the C used. The release is
//!   y = A·x + A·C_n⁻¹·z = (A·C_n⁻¹)·(C_n·x + z), exactly (Δ_n/σ)-GDP = (μ·Δ_n/Δ_p)-GDP with Δ_n
//!   the multi-epoch sensitivity of C_n, whose columns are longer and, b steps apart, no longer
//!   orthogonal: at the defaults Δ_n = 3.5719 (Δ_n² = 12.7587) against Δ_p = √5, so 1.5974μ (test
//!   `default_figures`); correct only when p = n.
//!
//! Why the tree is not in this family: `ftrl-tree` is matrix-factorization DP-FTRL with the tree
//! factorization (C the node-selection matrix) for one participation; its B is not square, so
//! its exact guarantee is a Mahalanobis norm, computed in `ftrl.rs`'s tests.

use rand::Rng;

use super::declare::vector;
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::Result;
use crate::math::readable;
use crate::mechanism::Params;
use crate::noise::GaussianNoise;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "mf-ftrl-banded",
            summary: "matrix-factorization DP-FTRL over E epochs: prefix sums through the banded square root of the prefix-sum matrix, σ from C's multi-epoch sensitivity",
            build: banded,
        },
        Spec {
            id: "mf-ftrl-single-participation",
            summary: "matrix-factorization DP-FTRL over E epochs with σ from C's single-participation sensitivity (its largest column norm)",
            build: single_participation,
        },
        Spec {
            id: "mf-ftrl-unbanded-noise",
            summary: "matrix-factorization DP-FTRL whose sensitivity is computed for the banded C but whose noise is correlated by the dense square root's inverse",
            build: unbanded_noise,
        },
    ]
}

/// Which mistake, if any (module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Variant {
    /// σ from the multi-epoch sensitivity of the C the noise uses (correct).
    Banded,
    /// σ from one participation's sensitivity.
    SingleParticipation,
    /// σ from the banded C, noise from the dense square root.
    UnbandedNoise,
}

/// The run's shape: E epochs of b steps, band p, claimed μ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Shape {
    /// E: participations of every record.
    pub epochs: usize,
    /// b: steps per epoch (the separation of a record's participations).
    pub per_epoch: usize,
    /// p: the band of C (p = n is the dense square root).
    pub band: usize,
}

impl Shape {
    /// n = E·b.
    pub fn steps(&self) -> usize {
        self.epochs * self.per_epoch
    }

    /// The steps t₀, t₀ + b, …, t₀ + (E − 1)·b of a record at position t₀ of the epoch.
    pub fn pattern(&self, position: usize) -> Vec<usize> {
        (0..self.epochs)
            .map(|e| position + e * self.per_epoch)
            .collect()
    }

    /// The epoch position of a record (s, g): t₀ = min(⌊s·b⌋, b − 1).
    fn position(&self, s: f64) -> usize {
        ((s * self.per_epoch as f64).floor().max(0.0) as usize).min(self.per_epoch - 1)
    }
}

fn shape(params: &mut Params, id: &str) -> Result<(Shape, f64)> {
    let epochs = params.take_integer_in(id, "epochs", 4.0, 1.0, 4.0)?;
    let per_epoch = params.take_integer_in(id, "steps_per_epoch", 2.0, 1.0, 4.0)?;
    let n = epochs * per_epoch;
    // Band b by default (columns of one record's steps orthogonal); 1 to n (n: dense).
    let band = params.take_integer_in(id, "band", per_epoch as f64, 1.0, n as f64)?;
    let mu = params.take_in(id, "mu", 1.0, 0.01, 10.0)?;
    Ok((
        Shape {
            epochs,
            per_epoch,
            band,
        },
        mu,
    ))
}

// Lower-triangular Toeplitz n × n matrices are kept as their first column (c_0 … c_{n−1}): they
// are the power series truncated at degree n, a product of two is the truncated convolution and
// an inverse the series reciprocal, O(n²) and exact in structure, where a dense ndarray product
// and a general inverse would add nothing but rounding.

/// The first column c_i = binom(2i, i)/4^i (i < n) of the square root of the prefix-sum matrix:
/// the coefficients of (1 − x)^{−1/2}, by c_i = c_{i−1}·(2i − 1)/(2i).
pub(crate) fn square_root(n: usize) -> Vec<f64> {
    let mut c = Vec::with_capacity(n);
    let mut v = 1.0;
    for i in 0..n {
        if i > 0 {
            v *= (2 * i - 1) as f64 / (2 * i) as f64;
        }
        c.push(v);
    }
    c
}

/// The banded square root: c_0 … c_{band−1} kept, the rest 0.
pub(crate) fn banded_square_root(n: usize, band: usize) -> Vec<f64> {
    let mut c = square_root(n);
    for v in c.iter_mut().skip(band) {
        *v = 0.0;
    }
    c
}

/// The first column of C⁻¹ for a lower-triangular Toeplitz C with c_0 = 1: d_0 = 1,
/// d_t = −Σ_{i=1…t} c_i·d_{t−i} (the series reciprocal).
pub(crate) fn inverse(c: &[f64]) -> Vec<f64> {
    let mut d = Vec::with_capacity(c.len());
    for t in 0..c.len() {
        let v = if t == 0 {
            1.0 / c[0]
        } else {
            -(1..=t).map(|i| c[i] * d[t - i]).sum::<f64>() / c[0]
        };
        d.push(v);
    }
    d
}

/// C·v for the lower-triangular Toeplitz C of first column `c`: (C·v)_t = Σ_{i ≤ t} c_{t−i} v_i.
pub(crate) fn apply(c: &[f64], v: &[f64]) -> Vec<f64> {
    (0..v.len())
        .map(|t| (0..=t).map(|i| c[t - i] * v[i]).sum())
        .collect()
}

/// ‖C·u‖₂ for u the 0/1 indicator of `steps`.
pub(crate) fn pattern_norm(c: &[f64], steps: &[usize]) -> f64 {
    let mut u = vec![0.0; c.len()];
    for &t in steps {
        u[t] = 1.0;
    }
    apply(c, &u).iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// The multi-epoch sensitivity Δ = max over positions t₀ of ‖C·u_{t₀}‖₂, and the maximizing
/// position (the first, on ties).
pub(crate) fn sensitivity(c: &[f64], shape: &Shape) -> (f64, usize) {
    (0..shape.per_epoch)
        .map(|p| (pattern_norm(c, &shape.pattern(p)), p))
        .fold((f64::NEG_INFINITY, 0), |best, cur| {
            if cur.0 > best.0 { cur } else { best }
        })
}

/// One participation's sensitivity: the largest column norm of C.
pub(crate) fn single_sensitivity(c: &[f64]) -> f64 {
    (0..c.len())
        .map(|j| pattern_norm(c, &[j]))
        .fold(f64::NEG_INFINITY, f64::max)
}

/// The stream x_1…x_n of a dataset of (s, g) records (module docs).
fn stream(data: &Dataset, shape: &Shape) -> Vec<f64> {
    let mut x = vec![0.0; shape.steps()];
    for r in data.iter() {
        for t in shape.pattern(shape.position(r[0])) {
            x[t] += r[1];
        }
    }
    x
}

/// The factorizations an entry accounts for and uses, σ, and its status (module docs).
struct Calibration {
    /// First column of the C whose inverse correlates the noise.
    noise_c: Vec<f64>,
    sigma: f64,
    /// Δ used for σ, and what it is.
    accounted: (f64, &'static str),
    /// The exact GDP parameter Δ(noise C)/σ.
    mu_true: f64,
    /// The position where the true sensitivity is reached (the witness's record).
    worst_position: usize,
}

fn calibrate(variant: Variant, shape: &Shape, mu: f64) -> Calibration {
    let n = shape.steps();
    let banded = banded_square_root(n, shape.band);
    let (delta_banded, pos_banded) = sensitivity(&banded, shape);
    let (accounted, noise_c) = match variant {
        Variant::Banded => ((delta_banded, "multi-epoch"), banded),
        Variant::SingleParticipation => (
            (single_sensitivity(&banded), "single-participation"),
            banded,
        ),
        Variant::UnbandedNoise => ((delta_banded, "multi-epoch, banded C"), square_root(n)),
    };
    let (delta_true, worst_position) = if variant == Variant::UnbandedNoise {
        sensitivity(&noise_c, shape)
    } else {
        (delta_banded, pos_banded)
    };
    // Rounded up (module docs): the claim stays on the safe side of Δ's rounding.
    let sigma = accounted.0 / mu * (1.0 + 1e-12);
    Calibration {
        noise_c,
        sigma,
        accounted,
        mu_true: delta_true / sigma,
        worst_position,
    }
}

fn build(params: &mut Params, id: &'static str, variant: Variant) -> Result<Entry> {
    let (shape, mu) = shape(params, id)?;
    let n = shape.steps();
    let cal = calibrate(variant, &shape, mu);
    let noise = GaussianNoise::new(cal.sigma)?;
    let correlate = inverse(&cal.noise_c);
    let m = vector(
        id,
        PrivacyClaim::gaussian_dp(mu)?,
        Neighboring::AddRemove,
        RecordDomain::real(0.0, 1.0, 2),
        n,
        move |d| stream(d, &shape),
        move |x, rng: &mut dyn Rng, out| {
            let z: Vec<f64> = (0..n).map(|_| noise.sample(rng)).collect();
            // x̂ = x + C⁻¹z, then the optimizer's running sum.
            let mut prefix = 0.0;
            for (xt, wt) in x.iter().zip(apply(&correlate, &z)) {
                prefix += xt + wt;
                out.push(prefix);
            }
        },
    )
    .with_claim_source(format!(
        "banded square-root factorization (band {}), {} epochs of {} steps: sigma = {:.6} for the {} sensitivity {:.6}",
        shape.band, shape.epochs, shape.per_epoch, cal.sigma, cal.accounted.1, cal.accounted.0
    ));
    Ok(Entry {
        mechanism: Box::new(m),
        status: status(variant, &shape, mu, cal.mu_true),
        witness: witness(&shape, cal.worst_position)?,
    })
}

/// Buggy when the exact μ (module docs) exceeds the claim beyond the rounding of σ.
fn status(variant: Variant, shape: &Shape, mu: f64, mu_true: f64) -> Status {
    let bug = match variant {
        Variant::Banded => "",
        Variant::SingleParticipation => {
            "sigma calibrated to one participation (the largest column norm of C), but every \
             record participates once per epoch and its E contributions add up in C·x"
        }
        Variant::UnbandedNoise => {
            "the sensitivity is computed for the banded C, but the noise is correlated by the \
             inverse of the dense square root: the C used is not the C accounted"
        }
    };
    Status::buggy_if(
        mu_true > mu * (1.0 + 1e-9),
        bug,
        format!(
            "{}-GDP (Delta/sigma for the C the noise uses, {} epochs of {} steps, band {}), not the claimed {mu}-GDP",
            readable(mu_true),
            shape.epochs,
            shape.per_epoch,
            shape.band
        ),
    )
}

/// A record added at the epoch position whose E participations have the largest ‖C·u‖ (the
/// first position at the defaults), with the largest gradient g = 1: the pair on which the
/// Gaussian mechanism C·x + z is exactly (Δ/σ)-GDP, tight for the correct entry and the twins'
/// true μ for them. The two records already there sit at the other positions.
fn witness(shape: &Shape, position: usize) -> Result<DatasetPair> {
    let d = Dataset::vectors(2, &[vec![0.3, 0.5], vec![0.7, 0.5]])?;
    let s = (position as f64 + 0.5) / shape.per_epoch as f64;
    DatasetPair::new(d.clone(), d.with_record(&[s, 1.0])?, Neighboring::AddRemove)
}

fn banded(params: &mut Params) -> Result<Entry> {
    build(params, "mf-ftrl-banded", Variant::Banded)
}

fn single_participation(params: &mut Params) -> Result<Entry> {
    build(
        params,
        "mf-ftrl-single-participation",
        Variant::SingleParticipation,
    )
}

fn unbanded_noise(params: &mut Params) -> Result<Entry> {
    build(params, "mf-ftrl-unbanded-noise", Variant::UnbandedNoise)
}

#[cfg(test)]
mod tests;
