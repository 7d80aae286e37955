//! Samplers that prove themselves: every internal noise sampler against its specification.
//!
//! # What is tested
//! Each sampler configuration draws [`N`] = 10^6 values from a fixed seed
//! (`ChaCha20Rng::seed_from_u64`; a failure is a bug to investigate, never a seed to change) and
//! must pass two tests on the same bins, each at [`ALPHA`] = 1e-6:
//! - Pearson's χ² goodness of fit, X² = Σ (O − E)²/E;
//! - the likelihood-ratio test against the specification (G-test), G = 2 Σ O ln(O/E).
//!
//! Both are referred to χ²(bins − 1) (nothing is fitted), p-values from
//! `statrs::distribution::ChiSquared::sf`. Bins: a continuous sampler gets 100 bins between the
//! exact quantiles F⁻¹(i/100) (10^4 expected each), with bin probabilities taken from the exact
//! CDF at the edges actually used, so quantile rounding cannot bias the test; an integer sampler
//! gets one bin per integer, merged from the left until each bin expects at least
//! [`MIN_EXPECTED`] = 50 draws (so the tails are pooled). With ≥ 50 expected per bin the χ²
//! approximation of both statistics' null distributions is accurate at this level.
//!
//! # False-failure rate
//! 15 configurations × 2 tests × α = 3e-5 for the whole file (union bound). The rejection
//! tests below fail only if a biased sampler escapes (probability below 1e-12 each, see Power);
//! [`oracles_are_right`] is deterministic.
//!
//! # Power
//! The same tests must reject deliberately biased samplers (test code only, at the end): a
//! discrete Laplace whose Bernoulli(γ/k) truncates a rational by integer division, a Laplace whose
//! scale is 2 % too large, and a rounded Gaussian passed off as a discrete Gaussian. Non-centrality
//! of X² under each (n·Σ(p′−p)²/p, computed from the exact biased distributions): 781 on 153 bins,
//! 390 on 100 bins and 3478 on 9 bins, against critical values 249.7, 180.8 and 42.7 at α: the
//! power of each (noncentral χ²) is 1 to 12 digits. At 1 % scale error the non-centrality would
//! be 98 and the power only 0.74, so that case is not asserted.
//!
//! # Oracles
//! The exact CDFs, quantiles and pmfs are written out below in closed form (they are one line
//! each and, for the discrete distributions, not in statrs), and [`oracles_are_right`] checks each
//! against an independent source: statrs' Laplace, Normal and Gumbel CDFs;
//! `dp_audit_mechanisms::math::std_normal_cdf` (the crate's own Φ) against statrs; the discrete
//! Laplace pmf against its closed-form tail and the variance and fourth-moment formulas that
//! `noise.rs` and `catalogue/distribution_tests.rs` rely on; the discrete Gaussian's normalising
//! constant against the Poisson-summation (Jacobi theta) identity; and CKS20 Theorem 7's δ
//! (quoted in `exact.rs`) against the hockey-stick divergence summed directly.
//!
//! # Adding a sampler
//! Write a `#[test]` that builds the sampler, draws with [`draws`], builds its bins with
//! [`quantile_bins`] (continuous: exact CDF and quantile) or [`integer_bins`] (integer-valued:
//! exact pmf and a support that holds all but 1e-13 of the mass), and calls [`assert_fits`]:
//! ```ignore
//! #[test]
//! fn my_sampler_fits() {
//!     let s = MySampler::new(2.0).unwrap();
//!     let x = draws(12, |rng| s.sample(rng)); // a new fixed seed
//!     assert_fits("my-sampler scale 2", &x, &quantile_bins(laplace_cdf(2.0), laplace_quantile(2.0)));
//! }
//! ```
//! and add its two tests to the count above.

use std::ops::RangeInclusive;

use dp_audit_mechanisms::exact::{ExactDiscreteGaussian, ExactDiscreteLaplace};
use dp_audit_mechanisms::math::{NORMAL_CDF_REL_ERROR, std_normal_cdf};
use dp_audit_mechanisms::noise::{
    DiscreteLaplaceNoise, GaussianNoise, GeometricSkips, GumbelNoise, LaplaceNoise,
};
use dp_audit_mechanisms::snapping::SnappingLaplace;
use rand::SeedableRng;
use rand::distr::{Distribution, Uniform};
use rand_chacha::ChaCha20Rng;
use statrs::distribution::{ChiSquared, ContinuousCDF, Gumbel, Laplace, Normal};

/// Draws per configuration.
const N: usize = 1_000_000;
/// Significance level of every test.
const ALPHA: f64 = 1e-6;
/// Least expected count of an integer bin.
const MIN_EXPECTED: f64 = 50.0;
/// Bins of a continuous sampler.
const QUANTILE_BINS: usize = 100;

// ---------------------------------------------------------------------------------------------
// Harness

/// A partition of the real line into `edges.len() + 1` bins, bin i = (edges[i−1], edges[i]], and
/// the exact probability of each bin under the specification.
#[derive(Clone, Debug)]
struct Bins {
    edges: Vec<f64>,
    probs: Vec<f64>,
}

/// Result of both tests.
#[derive(Clone, Copy, Debug)]
struct Fit {
    chi2: f64,
    chi2_p: f64,
    g: f64,
    g_p: f64,
    df: usize,
}

/// `N` draws from a fresh `ChaCha20Rng::seed_from_u64(seed)`.
fn draws(seed: u64, mut sample: impl FnMut(&mut ChaCha20Rng) -> f64) -> Vec<f64> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..N).map(|_| sample(&mut rng)).collect()
}

/// [`QUANTILE_BINS`] bins between the quantiles of `i/QUANTILE_BINS`; probabilities from `cdf`
/// at those edges. Checks that the two oracles agree there.
fn quantile_bins(cdf: impl Fn(f64) -> f64, quantile: impl Fn(f64) -> f64) -> Bins {
    let edges: Vec<f64> = (1..QUANTILE_BINS)
        .map(|i| quantile(i as f64 / QUANTILE_BINS as f64))
        .collect();
    let mut at: Vec<f64> = vec![0.0];
    at.extend(edges.iter().map(|&e| cdf(e)));
    at.push(1.0);
    for (i, c) in at.iter().enumerate() {
        let p = i as f64 / QUANTILE_BINS as f64;
        // Loose: statrs' normal quantile is good to ~5e-11 relative, and only the CDF's
        // values at the edges enter the test.
        assert!((c - p).abs() < 1e-9, "cdf(quantile({p})) = {c}");
    }
    let probs = at.windows(2).map(|w| w[1] - w[0]).collect();
    Bins { edges, probs }
}

/// Integer bins on `support` (which must hold all but 1e-13 of the pmf's mass: checked), merged
/// from the left until each expects at least [`MIN_EXPECTED`] of `N` draws; a short last bin joins
/// its neighbour. Draws outside `support` fall into the outer bins.
fn integer_bins(pmf: impl Fn(i64) -> f64, support: RangeInclusive<i64>) -> Bins {
    let (mut edges, mut probs) = (Vec::new(), Vec::new());
    let (mut mass, mut total) = (0.0, 0.0);
    let last = *support.end();
    for k in support {
        let p = pmf(k);
        assert!(p.is_finite() && p >= 0.0, "pmf({k}) = {p}");
        mass += p;
        total += p;
        if mass * N as f64 >= MIN_EXPECTED && k < last {
            edges.push(k as f64 + 0.5);
            probs.push(mass);
            mass = 0.0;
        }
    }
    if mass * N as f64 >= MIN_EXPECTED || probs.is_empty() {
        probs.push(mass);
    } else {
        edges.pop();
        *probs.last_mut().unwrap() += mass;
    }
    assert!(
        (total - 1.0).abs() < 1e-13,
        "pmf sums to {total} on the support"
    );
    Bins { edges, probs }
}

/// X² and G of `draws` against `bins`.
fn fit(draws: &[f64], bins: &Bins) -> Fit {
    assert!(draws.iter().all(|x| x.is_finite()), "a draw is not finite");
    let mut counts = vec![0u64; bins.probs.len()];
    for &x in draws {
        counts[bins.edges.partition_point(|&e| e < x)] += 1;
    }
    let n = draws.len() as f64;
    let (mut chi2, mut g) = (0.0, 0.0);
    for (&o, &p) in counts.iter().zip(&bins.probs) {
        let (o, e) = (o as f64, n * p);
        chi2 += (o - e).powi(2) / e;
        if o > 0.0 {
            g += 2.0 * o * (o / e).ln();
        }
    }
    let df = bins.probs.len() - 1;
    let null = ChiSquared::new(df as f64).unwrap();
    Fit {
        chi2,
        chi2_p: null.sf(chi2),
        g,
        g_p: null.sf(g.max(0.0)),
        df,
    }
}

fn report(name: &str, f: &Fit) {
    println!(
        "{name}: X² = {:.1} (p = {:.3e}), G = {:.1} (p = {:.3e}), df = {}",
        f.chi2, f.chi2_p, f.g, f.g_p, f.df
    );
}

/// Both tests accept `draws` at [`ALPHA`].
fn assert_fits(name: &str, draws: &[f64], bins: &Bins) {
    let f = fit(draws, bins);
    report(name, &f);
    assert!(
        f.chi2_p >= ALPHA && f.g_p >= ALPHA,
        "{name} does not fit its specification: {f:?}"
    );
}

/// Both tests reject `draws` at [`ALPHA`].
fn assert_rejected(name: &str, draws: &[f64], bins: &Bins) {
    let f = fit(draws, bins);
    report(name, &f);
    assert!(
        f.chi2_p < ALPHA && f.g_p < ALPHA,
        "the biased {name} was not caught: {f:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Oracles: exact CDFs, quantiles and pmfs in closed form.

/// Laplace(0, b): F(x) = ½e^{x/b} for x < 0, 1 − ½e^{−x/b} otherwise.
fn laplace_cdf(b: f64) -> impl Fn(f64) -> f64 {
    move |x| {
        if x < 0.0 {
            0.5 * (x / b).exp()
        } else {
            1.0 - 0.5 * (-x / b).exp()
        }
    }
}

fn laplace_quantile(b: f64) -> impl Fn(f64) -> f64 {
    move |p| {
        if p < 0.5 {
            b * (2.0 * p).ln()
        } else {
            -b * (2.0 * (1.0 - p)).ln()
        }
    }
}

/// N(0, σ²): Φ(x/σ) by the crate's own `std_normal_cdf` (checked against statrs below).
fn normal_cdf(sigma: f64) -> impl Fn(f64) -> f64 {
    move |x| std_normal_cdf(x / sigma)
}

fn normal_quantile(sigma: f64) -> impl Fn(f64) -> f64 {
    let n = Normal::new(0.0, sigma).unwrap();
    move |p| n.inverse_cdf(p)
}

/// Gumbel(0, β): F(x) = exp(−e^{−x/β}).
fn gumbel_cdf(beta: f64) -> impl Fn(f64) -> f64 {
    move |x| (-(-x / beta).exp()).exp()
}

fn gumbel_quantile(beta: f64) -> impl Fn(f64) -> f64 {
    move |p| -beta * (-p.ln()).ln()
}

/// Discrete Laplace Lap_ℤ(t): P(k) = tanh(1/(2t))·e^{−|k|/t} (= (1−a)/(1+a)·a^{|k|}, a = e^{−1/t}).
fn discrete_laplace_pmf(t: f64) -> impl Fn(i64) -> f64 {
    let c = (0.5 / t).tanh();
    move |k| c * (-(k.unsigned_abs() as f64) / t).exp()
}

/// Support of Lap_ℤ(t) holding all but 2a^{r}/(1+a) < 2e^{−40} ≈ 8.5e-18 of the mass (a = e^{−1/t}).
fn discrete_laplace_support(t: f64) -> RangeInclusive<i64> {
    let r = (40.0 * t).ceil() as i64 + 1;
    -r..=r
}

/// Normalising constant Σ_{k∈ℤ} e^{−k²/(2σ²)} by direct summation (terms below e^{−800} dropped).
fn discrete_gaussian_normaliser(sigma2: f64) -> f64 {
    let r = (40.0 * sigma2.sqrt()).ceil() as i64 + 1;
    // Smallest terms first.
    (1..=r)
        .rev()
        .map(|k| 2.0 * (-((k * k) as f64) / (2.0 * sigma2)).exp())
        .sum::<f64>()
        + 1.0
}

/// Discrete Gaussian N_ℤ(0, σ²): P(k) = e^{−k²/(2σ²)}/Z.
fn discrete_gaussian_pmf(sigma2: f64) -> impl Fn(i64) -> f64 {
    let z = discrete_gaussian_normaliser(sigma2);
    move |k| (-((k as f64).powi(2)) / (2.0 * sigma2)).exp() / z
}

fn discrete_gaussian_support(sigma2: f64) -> RangeInclusive<i64> {
    let r = (10.0 * sigma2.sqrt()).ceil() as i64 + 10;
    -r..=r
}

fn laplace_bins(b: f64) -> Bins {
    quantile_bins(laplace_cdf(b), laplace_quantile(b))
}

fn discrete_laplace_bins(t: f64) -> Bins {
    integer_bins(discrete_laplace_pmf(t), discrete_laplace_support(t))
}

fn discrete_gaussian_bins(sigma2: f64) -> Bins {
    integer_bins(
        discrete_gaussian_pmf(sigma2),
        discrete_gaussian_support(sigma2),
    )
}

// ---------------------------------------------------------------------------------------------
// The samplers of noise.rs

#[test]
fn laplace_noise_fits() {
    let s = LaplaceNoise::new(2.0).unwrap();
    let x = draws(1, |rng| s.sample(rng));
    assert_fits("LaplaceNoise scale 2", &x, &laplace_bins(2.0));
}

#[test]
fn gaussian_noise_fits() {
    let s = GaussianNoise::new(3.0).unwrap();
    let x = draws(2, |rng| s.sample(rng));
    let bins = quantile_bins(normal_cdf(3.0), normal_quantile(3.0));
    assert_fits("GaussianNoise sigma 3", &x, &bins);
}

#[test]
fn gumbel_noise_fits() {
    let s = GumbelNoise::new(1.5).unwrap();
    let x = draws(3, |rng| s.sample(rng));
    let bins = quantile_bins(gumbel_cdf(1.5), gumbel_quantile(1.5));
    assert_fits("GumbelNoise scale 1.5", &x, &bins);
}

#[test]
fn discrete_laplace_noise_fits() {
    let t = 1.0 / 0.3;
    let s = DiscreteLaplaceNoise::new(t).unwrap();
    let x = draws(4, |rng| s.sample(rng));
    assert_fits(
        "DiscreteLaplaceNoise scale 1/0.3",
        &x,
        &discrete_laplace_bins(t),
    );
}

// ---------------------------------------------------------------------------------------------
// The exact samplers of exact.rs

#[test]
fn exact_discrete_laplace_fits() {
    for (seed, t, name) in [(5, 1.0 / 0.3, "scale 1/0.3"), (6, 0.5, "scale 0.5")] {
        let s = ExactDiscreteLaplace::new(t).unwrap();
        let x = draws(seed, |rng| s.sample_f64(rng));
        assert_fits(
            &format!("ExactDiscreteLaplace {name}"),
            &x,
            &discrete_laplace_bins(t),
        );
    }
    let s = ExactDiscreteLaplace::from_ratio(10, 3).unwrap();
    let x = draws(7, |rng| s.sample_f64(rng));
    assert_fits(
        "ExactDiscreteLaplace scale 10/3",
        &x,
        &discrete_laplace_bins(10.0 / 3.0),
    );
}

#[test]
fn exact_discrete_gaussian_fits() {
    for (seed, sigma) in [(8, 0.5), (9, 3.7306316348159374), (10, 25.0)] {
        let s = ExactDiscreteGaussian::new(sigma).unwrap();
        let x = draws(seed, |rng| s.sample_f64(rng));
        assert_fits(
            &format!("ExactDiscreteGaussian sigma {sigma}"),
            &x,
            &discrete_gaussian_bins(sigma * sigma),
        );
    }
    let s = ExactDiscreteGaussian::from_variance(10, 3).unwrap();
    let x = draws(11, |rng| s.sample_f64(rng));
    assert_fits(
        "ExactDiscreteGaussian variance 10/3",
        &x,
        &discrete_gaussian_bins(10.0 / 3.0),
    );
}

// ---------------------------------------------------------------------------------------------
// The oracles themselves

/// The snapping mechanism (`snapping.rs`) in units of its grid Λ: output/Λ = j with probability
/// P[x + Lap(λ) ∈ [(j − ½)Λ, (j + ½)Λ)] (the specification in exact arithmetic; the clamp at ±B
/// is beyond the support here, and the binary64 deviations Mironov bounds are of relative size
/// 2^−49, far below what 10^6 draws can see). Two settings: a grid of 1/2 at ε = 3 around 0.3, and a
/// grid of 1 at ε = 1 around 2.
#[test]
fn snapping_fits() {
    for (seed, epsilon, x) in [(13u64, 3.0, 0.3), (14, 1.0, 2.0)] {
        let s = SnappingLaplace::new(epsilon, 64.0).unwrap();
        let grid = s.grid();
        let f = laplace_cdf(1.0 / epsilon);
        let pmf = |j: i64| f((j as f64 + 0.5) * grid - x) - f((j as f64 - 0.5) * grid - x);
        let draws = draws(seed, |rng| s.release(x, rng) / grid);
        assert!(draws.iter().all(|j| j.fract() == 0.0), "off the grid");
        assert_fits(
            &format!("SnappingLaplace ε {epsilon} around {x} (grid {grid})"),
            &draws,
            &integer_bins(pmf, -60..=60),
        );
    }
}

/// DP-SGD's Poisson subsampling (`catalogue/dpsgd/`) skips Geometric(q) records between
/// batch members: P(K = k) = (1 − q)^k·q. Two rates: q = 0.01 (DP-SGD's usual range) and q = 0.3.
#[test]
fn geometric_skips_fit() {
    for (seed, q, support) in [(15u64, 0.01, 0..=4_000i64), (16, 0.3, 0..=120)] {
        let s = GeometricSkips::new(q).unwrap();
        let x = draws(seed, |rng| s.sample(rng, usize::MAX) as f64);
        let pmf = |k: i64| (1.0 - q).powi(k as i32) * q;
        assert_fits(
            &format!("GeometricSkips q {q}"),
            &x,
            &integer_bins(pmf, support),
        );
    }
}

#[test]
fn oracles_are_right() {
    // Continuous CDFs against statrs, and the crate's Φ against statrs' (relative, both tails).
    for b in [0.5, 2.0, 7.0] {
        let (ours, theirs) = (laplace_cdf(b), Laplace::new(0.0, b).unwrap());
        for i in -400..=400 {
            let x = i as f64 * b / 20.0;
            let (a, c) = (ours(x), theirs.cdf(x));
            assert!(
                (a - c).abs() <= 1e-15 + 1e-13 * c,
                "Laplace({b}) cdf({x}): {a} vs {c}"
            );
        }
    }
    let phi = Normal::standard();
    for i in -1000..=1000 {
        let x = i as f64 / 100.0;
        let (a, c) = (std_normal_cdf(x), phi.cdf(x));
        let tolerance = NORMAL_CDF_REL_ERROR * c.min(1.0 - c) + 1e-16;
        assert!((a - c).abs() <= tolerance, "Φ({x}): {a} vs {c}");
    }
    for beta in [0.5, 1.5] {
        let (ours, theirs) = (gumbel_cdf(beta), Gumbel::new(0.0, beta).unwrap());
        for i in -200..=800 {
            let x = i as f64 * beta / 40.0;
            let (a, c) = (ours(x), theirs.cdf(x));
            assert!(
                (a - c).abs() <= 1e-15 + 1e-12 * c,
                "Gumbel({beta}) cdf({x}): {a} vs {c}"
            );
        }
    }
    // Quantiles invert the CDFs (quantile_bins also checks this at every edge it uses); statrs'
    // normal quantile is the least accurate, ~5e-11 relative.
    for p in [1e-9, 0.01, 0.3, 0.5, 0.77, 0.99] {
        assert!((laplace_cdf(2.0)(laplace_quantile(2.0)(p)) - p).abs() < 1e-9 * p.max(1e-3));
        assert!((normal_cdf(3.0)(normal_quantile(3.0)(p)) - p).abs() < 1e-9 * p.max(1e-3));
        assert!((gumbel_cdf(1.5)(gumbel_quantile(1.5)(p)) - p).abs() < 1e-9 * p.max(1e-3));
    }

    // Discrete Laplace: sums to 1; tail P(K ≥ m) = a^m/(1+a); variance 2a/(1−a)² and fourth
    // moment 2a(1+10a+a²)/(1−a)⁴ (the closed forms noise.rs's moment test uses).
    for t in [0.5, 1.0, 1.0 / 0.3, 10.0] {
        let pmf = discrete_laplace_pmf(t);
        let a = (-1.0 / t).exp();
        let support = discrete_laplace_support(t);
        let total: f64 = support.clone().map(&pmf).sum();
        assert!((total - 1.0).abs() < 1e-13, "Lap_Z({t}) sums to {total}");
        for m in [1, 3, 10] {
            let tail: f64 = (m..=*support.end()).map(&pmf).sum();
            // Σ_{k=m}^{r} = (a^m − a^{r+1})/(1 + a) on the truncated support.
            let r = *support.end() as i32;
            let want = (a.powi(m as i32) - a.powi(r + 1)) / (1.0 + a);
            assert!(
                (tail / want - 1.0).abs() < 1e-12,
                "Lap_Z({t}) tail {m}: {tail} vs {want}"
            );
        }
        let moment = |p: i32| {
            support
                .clone()
                .map(|k| (k as f64).powi(p) * pmf(k))
                .sum::<f64>()
        };
        let var = 2.0 * a / (1.0 - a).powi(2);
        let m4 = 2.0 * a * (1.0 + 10.0 * a + a * a) / (1.0 - a).powi(4);
        assert!((moment(2) / var - 1.0).abs() < 1e-12, "Lap_Z({t}) variance");
        assert!(
            (moment(4) / m4 - 1.0).abs() < 1e-12,
            "Lap_Z({t}) fourth moment"
        );
    }

    // Discrete Gaussian, by Poisson summation (an independent route, through the dual sum):
    // Z = Σ_k e^{−k²/(2σ²)} = √(2π)σ·Σ_m e^{−2π²σ²m²} and
    // Σ_k k² e^{−k²/(2σ²)} = √(2π)σ³·Σ_m (1 − 4π²σ²m²) e^{−2π²σ²m²}; the pmf sums to 1.
    let pi2 = std::f64::consts::PI.powi(2);
    for sigma in [0.5, 1.0, 1.5, 3.7306316348159374, 25.0] {
        let s2: f64 = sigma * sigma;
        let dual = |f: &dyn Fn(f64) -> f64| {
            (-20..=20)
                .map(|m| f((m * m) as f64) * (-2.0 * pi2 * s2 * (m * m) as f64).exp())
                .sum::<f64>()
        };
        let z = (2.0 * std::f64::consts::PI).sqrt() * sigma * dual(&|_| 1.0);
        let direct = discrete_gaussian_normaliser(s2);
        assert!(
            (direct / z - 1.0).abs() < 1e-13,
            "σ {sigma}: Z {direct} vs {z}"
        );
        let pmf = discrete_gaussian_pmf(s2);
        let support = discrete_gaussian_support(s2);
        let total: f64 = support.clone().map(&pmf).sum();
        assert!((total - 1.0).abs() < 1e-13, "N_Z(0, {s2}) sums to {total}");
        let var: f64 = support.map(|k| (k * k) as f64 * pmf(k)).sum();
        let want = s2 * dual(&|m2| 1.0 - 4.0 * pi2 * s2 * m2) / dual(&|_| 1.0);
        assert!(
            (var / want - 1.0).abs() < 1e-12,
            "N_Z(0, {s2}) variance {var} vs {want}"
        );
    }

    // CKS20 Theorem 7 as exact.rs states it: for Y ~ N_Z(0, σ²) and a shift Δ, the hockey-stick
    // divergence Σ_y max(0, P(y) − e^ε P(y − Δ)) equals P[Y > εσ²/Δ − Δ/2] − e^ε P[Y > εσ²/Δ + Δ/2].
    for (s2, delta_q, eps) in [(4.0, 1i64, 0.5f64), (4.0, 2, 0.5), (10.0 / 3.0, 3, 1.2)] {
        let pmf = discrete_gaussian_pmf(s2);
        let support = discrete_gaussian_support(s2);
        let direct: f64 = support
            .clone()
            .map(|y| (pmf(y) - eps.exp() * pmf(y - delta_q)).max(0.0))
            .sum();
        let above = |x: f64| {
            support
                .clone()
                .filter(|&y| y as f64 > x)
                .map(&pmf)
                .sum::<f64>()
        };
        let d = delta_q as f64;
        let theorem = above(eps * s2 / d - d / 2.0) - eps.exp() * above(eps * s2 / d + d / 2.0);
        assert!(
            (direct - theorem).abs() < 1e-14,
            "Theorem 7: {direct} vs {theorem}"
        );
    }

    // The binning: probabilities sum to 1 and every bin expects at least MIN_EXPECTED.
    for bins in [
        laplace_bins(2.0),
        discrete_laplace_bins(0.5),
        discrete_laplace_bins(10.0),
        discrete_gaussian_bins(0.25),
        discrete_gaussian_bins(625.0),
    ] {
        assert_eq!(bins.edges.len() + 1, bins.probs.len());
        assert!(bins.edges.windows(2).all(|w| w[0] < w[1]));
        assert!((bins.probs.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        assert!(bins.probs.iter().all(|p| p * N as f64 >= MIN_EXPECTED));
    }
}

// ---------------------------------------------------------------------------------------------
// Deliberately biased samplers: the tests must reject them.

/// CKS20 Algorithm 2 for the integer scale `a`, with one bug: the acceptance Bernoulli(e^{−u/a})
/// draws Bernoulli(γ/k), γ = u/a, as Bernoulli(⌊u/k⌋/a), i.e. the rational u/(a·k) truncated by
/// an integer division (the kind of bug that left OpenDP's samplers biased). The acceptance
/// probabilities are off by up to 5 % (scale 10: −0.5 %, +0.2 %, −1.9 %, …, −5.0 % for u = 1…7).
/// Everything else is exact.
struct TruncatingDiscreteLaplace {
    a: u64,
}

impl TruncatingDiscreteLaplace {
    fn uniform(rng: &mut ChaCha20Rng, n: u64) -> u64 {
        Uniform::new(0, n).unwrap().sample(rng)
    }

    /// Bernoulli(e^{−num/den}) for num ≤ den by Algorithm 1; `truncate` selects the bug.
    fn bernoulli_exp(rng: &mut ChaCha20Rng, num: u64, den: u64, truncate: bool) -> bool {
        let mut k = 1;
        loop {
            let a = if truncate {
                Self::uniform(rng, den) < num / k
            } else {
                Self::uniform(rng, den * k) < num
            };
            if !a {
                return k % 2 == 1;
            }
            k += 1;
        }
    }

    fn sample(&self, rng: &mut ChaCha20Rng) -> f64 {
        loop {
            let u = Self::uniform(rng, self.a);
            if !Self::bernoulli_exp(rng, u, self.a, true) {
                continue;
            }
            let mut v = 0;
            while Self::bernoulli_exp(rng, 1, 1, false) {
                v += 1;
            }
            let y = (u + self.a * v) as f64;
            let negative = Self::uniform(rng, 2) == 1;
            if negative && y == 0.0 {
                continue;
            }
            return if negative { -y } else { y };
        }
    }
}

#[test]
fn discrete_laplace_with_a_truncating_division_is_rejected() {
    let s = TruncatingDiscreteLaplace { a: 10 };
    let x = draws(21, |rng| s.sample(rng));
    assert_rejected(
        "discrete Laplace with truncated Bernoulli(γ/k), scale 10",
        &x,
        &discrete_laplace_bins(10.0),
    );
}

#[test]
fn laplace_with_scale_two_percent_off_is_rejected() {
    let s = LaplaceNoise::new(2.04).unwrap();
    let x = draws(22, |rng| s.sample(rng));
    assert_rejected(
        "Laplace scale 2.04 tested as scale 2",
        &x,
        &laplace_bins(2.0),
    );
}

#[test]
fn rounded_gaussian_is_not_the_discrete_gaussian() {
    let s = GaussianNoise::new(1.0).unwrap();
    let x = draws(23, |rng| s.sample(rng).round());
    assert_rejected(
        "round(N(0, 1)) tested as N_Z(0, 1)",
        &x,
        &discrete_gaussian_bins(1.0),
    );
}
