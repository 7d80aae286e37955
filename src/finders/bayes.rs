//! Bayesian optimization: a Gaussian-process surrogate of the exploratory score with an
//! expected-improvement acquisition (Jones, Schonlau & Welch 1998).
//!
//! Hand-written on purpose: linfa has no Gaussian process, argmin has no Bayesian optimizer,
//! and the GP crates that exist (friedrich, egobox-gp) either pin old ndarray/rand versions or
//! pull a LAPACK build; what is needed here is a Cholesky factorization of a matrix of at most a
//! few hundred rows, which is short and easy to test.
//!
//! Model: zero-mean GP on standardized scores, squared-exponential kernel with length scale
//! ℓ = 0.25·√m on [0, 1]^m, noise variance 0.05 (scores are noisy estimates).
//!
//! Design: the first min(max(4, m + 1), 6) points cycle through four kinds: a uniform point (so
//! the search starts as random search does); a random vertex of the box (every coordinate at an
//! end of its range, where a record that is too large or too small shows a missing clamp or a
//! wrong sensitivity); a random *diagonal* vertex (each record has all its coordinates at the
//! same end, so the differing record moves every coordinate the same way, the worst case for
//! workloads of counting or sum queries such as the sparse vector technique); and a random point
//! of the lattice {0, ¼, ½, ¾, 1}^m (mixes of ends and midpoints, e.g. one record that cancels
//! another). Under replace-one, the two vertex kinds replace a record by its mirror image (every
//! coordinate at the other end), the largest change one record can make.
//!
//! Then each proposal maximizes EI over 512 uniform candidates, 256 random lattice points and 256
//! perturbations of the best point so far. (Vertices and diagonal points are in the design but
//! not among these candidates: the posterior variance is largest at the box's vertices, so EI
//! kept choosing them over the interior; measured on the hard benchmark entries, dropping them
//! took dpsgd-joint-clip-rescale from 22.5 to 13.5 evaluations and changed nothing else.)
//!
//! A short, mixed warm-up matters for the 10-evaluation budget of the finder benchmark: a uniform
//! warm-up of m + 1 points would be all of it for m ≥ 10 coordinates. Starting with the uniform
//! point (rather than the vertex) made bayes as good as random on the entries random finds at
//! once (the coarse-noise leak, model aggregation: 1 evaluation instead of 3–4).

use rand::RngExt;

use super::{DatasetFinder, PairSpace};
use crate::error::Result;
use crate::mechanisms::math::std_normal_cdf;
use crate::mechanisms::{DatasetPair, Neighboring};
use crate::rng::AuditRng;

/// GP-EI finder. See the module docs.
#[derive(Debug)]
pub struct BayesFinder {
    space: PairSpace,
    rng: AuditRng,
    xs: Vec<Vec<f64>>,
    ys: Vec<f64>,
    pending: Option<Vec<f64>>,
}

const NOISE: f64 = 0.05;
const CANDIDATES: usize = 512;
const LOCAL: usize = 256;
/// Random lattice points among the EI candidates.
const LATTICE: usize = 256;
/// Most warm-up points.
const MAX_WARMUP: usize = 6;
/// The surrogate is refitted on at most this many most recent points (O(n³) per proposal).
const MAX_POINTS: usize = 200;

impl BayesFinder {
    /// A GP-EI search over `space`, seeded from `rng`.
    pub fn new(space: PairSpace, rng: AuditRng) -> Self {
        Self {
            space,
            rng,
            xs: Vec::new(),
            ys: Vec::new(),
            pending: None,
        }
    }

    fn length_scale(&self) -> f64 {
        0.25 * (self.space.dim() as f64).sqrt()
    }

    fn kernel(&self, a: &[f64], b: &[f64]) -> f64 {
        let l = self.length_scale();
        let d2: f64 = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum();
        (-0.5 * d2 / (l * l)).exp()
    }

    fn propose(&mut self) -> Vec<f64> {
        let m = self.space.dim();
        let warmup = (m + 1).clamp(4, MAX_WARMUP);
        if self.xs.len() < warmup {
            let d = self.space.domain.dim;
            let kind = self.xs.len() % 4;
            let mut u = match kind {
                0 => (0..m).map(|_| self.rng.random()).collect(),
                1 => vertex(&mut self.rng, m),
                2 => diagonal(&mut self.rng, m, d),
                _ => lattice(&mut self.rng, m),
            };
            // Under replace-one, the warm-up's vertices replace a record by its mirror image
            // (every coordinate moved to the other end): the largest change one record can make.
            let n = self.space.size;
            if (kind == 1 || kind == 2) && self.space.relation == Neighboring::ReplaceOne && n >= 1
            {
                for j in 0..d {
                    u[n * d + j] = 1.0 - u[(n - 1) * d + j];
                }
            }
            return u;
        }
        let start = self.xs.len().saturating_sub(MAX_POINTS);
        let xs = &self.xs[start..];
        let ys = &self.ys[start..];
        let n = xs.len();
        let mean = ys.iter().sum::<f64>() / n as f64;
        let sd = (ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / n as f64)
            .sqrt()
            .max(1e-12);
        let z: Vec<f64> = ys.iter().map(|y| (y - mean) / sd).collect();
        let mut k = vec![vec![0.0; n]; n];
        for i in 0..n {
            for j in 0..=i {
                let v = self.kernel(&xs[i], &xs[j]) + if i == j { NOISE } else { 0.0 };
                k[i][j] = v;
                k[j][i] = v;
            }
        }
        let Some(l) = cholesky(&k) else {
            // Numerically singular: fall back to a uniform point.
            return (0..m).map(|_| self.rng.random()).collect();
        };
        let alpha = cholesky_solve(&l, &z);
        let best_i = (0..n).max_by(|&a, &b| z[a].total_cmp(&z[b])).unwrap_or(0);
        let best = z[best_i];
        let mut candidates: Vec<Vec<f64>> = (0..CANDIDATES)
            .map(|_| (0..m).map(|_| self.rng.random()).collect())
            .collect();
        for _ in 0..LATTICE {
            candidates.push(lattice(&mut self.rng, m));
        }
        for _ in 0..LOCAL {
            let c = xs[best_i]
                .iter()
                .map(|&v| (v + 0.1 * (self.rng.random::<f64>() - 0.5)).clamp(0.0, 1.0))
                .collect();
            candidates.push(c);
        }
        let mut best_c = candidates[0].clone();
        let mut best_ei = f64::NEG_INFINITY;
        for c in candidates {
            let kx: Vec<f64> = xs.iter().map(|x| self.kernel(x, &c)).collect();
            let mu: f64 = kx.iter().zip(&alpha).map(|(a, b)| a * b).sum();
            let v = forward_solve(&l, &kx);
            let var = (1.0 + NOISE - v.iter().map(|x| x * x).sum::<f64>()).max(1e-12);
            let s = var.sqrt();
            let g = (mu - best) / s;
            let pdf = (-0.5 * g * g).exp() / (2.0 * std::f64::consts::PI).sqrt();
            let ei = (mu - best) * std_normal_cdf(g) + s * pdf;
            if ei > best_ei {
                best_ei = ei;
                best_c = c;
            }
        }
        best_c
    }
}

/// A random vertex of [0, 1]^m.
fn vertex(rng: &mut AuditRng, m: usize) -> Vec<f64> {
    (0..m)
        .map(|_| if rng.random::<bool>() { 1.0 } else { 0.0 })
        .collect()
}

/// A random diagonal vertex: each record (`d` consecutive coordinates of the m) has all its
/// coordinates at the same random end, 0 or 1.
fn diagonal(rng: &mut AuditRng, m: usize, d: usize) -> Vec<f64> {
    let d = d.max(1);
    let mut u = Vec::with_capacity(m);
    while u.len() < m {
        let level = f64::from(rng.random_range(0..=1u8));
        u.extend(std::iter::repeat_n(level, d.min(m - u.len())));
    }
    u
}

/// A random point of the lattice {0, ¼, ½, ¾, 1}^m.
fn lattice(rng: &mut AuditRng, m: usize) -> Vec<f64> {
    (0..m)
        .map(|_| f64::from(rng.random_range(0..5u8)) / 4.0)
        .collect()
}

/// Lower-triangular L with L·Lᵀ = A, or None if A is not (numerically) positive definite.
fn cholesky(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    let mut l = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..=i {
            let s: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            if i == j {
                let d = a[i][i] - s;
                if d <= 0.0 || !d.is_finite() {
                    return None;
                }
                l[i][i] = d.sqrt();
            } else {
                l[i][j] = (a[i][j] - s) / l[j][j];
            }
        }
    }
    Some(l)
}

/// Solves L·v = b.
fn forward_solve(l: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let n = b.len();
    let mut v = vec![0.0; n];
    for i in 0..n {
        let s: f64 = (0..i).map(|k| l[i][k] * v[k]).sum();
        v[i] = (b[i] - s) / l[i][i];
    }
    v
}

/// Solves L·Lᵀ·x = b.
fn cholesky_solve(l: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let v = forward_solve(l, b);
    let n = v.len();
    let mut x = vec![0.0; n];
    for i in (0..n).rev() {
        let s: f64 = (i + 1..n).map(|k| l[k][i] * x[k]).sum();
        x[i] = (v[i] - s) / l[i][i];
    }
    x
}

impl DatasetFinder for BayesFinder {
    fn name(&self) -> &'static str {
        "bayes"
    }
    fn ask(&mut self) -> Result<Option<DatasetPair>> {
        let u = self.propose();
        let pair = self.space.decode(&u)?;
        self.pending = Some(u);
        Ok(Some(pair))
    }
    fn tell(&mut self, score: f64) {
        if let Some(u) = self.pending.take() {
            self.xs.push(u);
            // Non-finite scores carry no information; record them as the worst seen.
            let worst = self.ys.iter().cloned().fold(0.0, f64::min);
            self.ys.push(if score.is_finite() { score } else { worst });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::{Neighboring, RecordDomain};
    use rand::SeedableRng;

    #[test]
    fn cholesky_solves_a_small_system() {
        let a = vec![
            vec![4.0, 2.0, 0.4],
            vec![2.0, 3.0, 0.5],
            vec![0.4, 0.5, 2.0],
        ];
        let l = cholesky(&a).unwrap();
        let b = [1.0, 2.0, 3.0];
        let x = cholesky_solve(&l, &b);
        for i in 0..3 {
            let r: f64 = (0..3).map(|j| a[i][j] * x[j]).sum();
            assert!((r - b[i]).abs() < 1e-12);
        }
        assert!(cholesky(&[vec![1.0, 2.0], vec![2.0, 1.0]]).is_none());
    }

    /// Diagonal vertices: every record's coordinates share one end; vertices and lattice points
    /// stay on their grids.
    #[test]
    fn structured_points_are_on_their_grids() {
        let mut rng = AuditRng::seed_from_u64(3);
        for _ in 0..50 {
            let u = diagonal(&mut rng, 12, 4);
            assert_eq!(u.len(), 12);
            for rec in u.chunks(4) {
                assert!(rec.iter().all(|&x| x == rec[0]));
                assert!(rec[0] == 0.0 || rec[0] == 1.0);
            }
            assert!(vertex(&mut rng, 5).iter().all(|&x| x == 0.0 || x == 1.0));
            assert!(
                lattice(&mut rng, 5)
                    .iter()
                    .all(|&x| (4.0 * x).fract() == 0.0)
            );
        }
    }

    /// On a smooth score peaked at the top corner, EI finds a point near it within 25 asks.
    #[test]
    fn bayes_finds_the_corner() {
        let space =
            PairSpace::new(RecordDomain::real(0.0, 1.0, 1), 1, Neighboring::AddRemove).unwrap();
        let mut f = BayesFinder::new(space, AuditRng::seed_from_u64(9));
        let mut best = f64::NEG_INFINITY;
        for _ in 0..25 {
            let p = f.ask().unwrap().unwrap();
            let x = p.second().column(0)[1];
            let y = p.first().column(0)[0];
            let score = -(1.0 - x).powi(2) - (y - 0.5).powi(2);
            best = best.max(score);
            f.tell(score);
        }
        assert!(best > -0.01, "best {best}");
    }
}
