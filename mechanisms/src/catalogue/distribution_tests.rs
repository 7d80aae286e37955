//! Each entry samples the distribution it means to: moments and frequencies against their exact
//! values.
//!
//! Every check is a two-sided z-test with |z| < 5.3 on 2e5 releases, justified by the CLT
//! (false-failure rate ≈ 1.2e-7 per check). The file makes fewer than 60 checks, so a correct
//! implementation fails it with probability below 1e-5 (union bound). Seeds are fixed: a failure
//! is a bug to investigate, not a seed to change.

use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::{Entry, build};
use crate::dataset::Dataset;
use crate::mechanism::Params;
use crate::samples::Samples;

const N: usize = 200_000;
const Z: f64 = 5.3;

fn entry(id: &str) -> Entry {
    build(id, &Params::new()).unwrap()
}

fn draw(e: &Entry, data: &Dataset, seed: u64) -> Samples {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    e.mechanism.sample(data, N, &mut rng).unwrap()
}

/// z-test of the mean of column `j` against `mean`, with the exact variance `var`.
fn check_mean(name: &str, s: &Samples, j: usize, mean: f64, var: f64) {
    let m = s.column(j).sum() / s.n() as f64;
    let z = (m - mean) / (var / s.n() as f64).sqrt();
    assert!(
        z.abs() < Z,
        "{name} col {j}: mean {m}, expected {mean}, z = {z}"
    );
}

/// z-test of the variance of column `j` (known mean) against `var`, with the exact fourth
/// central moment `m4`.
fn check_var(name: &str, s: &Samples, j: usize, mean: f64, var: f64, m4: f64) {
    let n = s.n() as f64;
    let v = s.column(j).iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let z = (v - var) / ((m4 - var * var) / n).sqrt();
    assert!(
        z.abs() < Z,
        "{name} col {j}: var {v}, expected {var}, z = {z}"
    );
}

/// z-test of the frequency of `pred` against `p`.
fn check_freq(name: &str, hits: usize, n: usize, p: f64) {
    let f = hits as f64 / n as f64;
    let z = (f - p) / (p * (1.0 - p) / n as f64).sqrt();
    assert!(z.abs() < Z, "{name}: frequency {f}, expected {p}, z = {z}");
}

#[test]
fn laplace_count_and_sum() {
    // Laplace(b): var 2b², fourth central moment 24b⁴.
    let e = entry("laplace-count");
    let s = draw(&e, e.witness.second(), 1);
    check_mean("laplace-count", &s, 0, 4.0, 2.0);
    check_var("laplace-count", &s, 0, 4.0, 2.0, 24.0);
    let e = entry("laplace-sum-ignores-range");
    let s = draw(&e, e.witness.second(), 2);
    // Sum 5·5 + 10 = 35, scale 1/ε = 1 (the bug: not R/ε = 10).
    check_mean("laplace-sum-ignores-range", &s, 0, 35.0, 2.0);
    check_var("laplace-sum-ignores-range", &s, 0, 35.0, 2.0, 24.0);
}

#[test]
fn laplace_mean_is_the_clamped_ratio() {
    // On a large dataset the noisy ratio concentrates at the true mean; all outputs in [0, 1].
    let e = entry("laplace-mean");
    let data =
        Dataset::scalars((0..1000).map(|i| (i % 5) as f64 / 4.0).collect::<Vec<_>>()).unwrap();
    let s = draw(&e, &data, 3);
    assert!(s.column(0).iter().all(|x| (0.0..=1.0).contains(x)));
    // S̃/ñ ≈ 0.5 + Lap(2)/1000 − 0.5·Lap(2)/1000: variance ≈ (8 + 0.25·8)/1e6 = 1e-5 to first
    // order; the second-order bias is below 1e-5, far inside 5.3 standard errors (≈ 3.8e-5).
    check_mean("laplace-mean", &s, 0, 0.5, 1e-5);
}

#[test]
fn gaussian_sums_use_their_calibrations() {
    for (id, sigma) in [
        ("gaussian-sum-analytic", 3.7306316348159374),
        // √(2 ln(1.25e5))/0.5
        (
            "gaussian-sum-classical",
            2.0 * (2.0 * (1.25e5f64).ln()).sqrt(),
        ),
    ] {
        let e = entry(id);
        let s = draw(&e, e.witness.second(), 4);
        let v = sigma * sigma;
        check_mean(id, &s, 0, 3.5, v);
        check_var(id, &s, 0, 3.5, v, 3.0 * v * v);
    }
}

#[test]
fn geometric_count_is_two_sided_geometric() {
    let e = entry("geometric-count");
    let s = draw(&e, e.witness.first(), 5);
    // P(X = k) = (1 − r)/(1 + r) · r^|k|, r = e^{−ε}.
    let r = (-1.0f64).exp();
    let p0 = (1.0 - r) / (1.0 + r);
    for k in -2i32..=2 {
        let hits = s.column(0).iter().filter(|&&x| x == 3.0 + k as f64).count();
        check_freq("geometric-count", hits, N, p0 * r.powi(k.abs()));
    }
    assert!(s.column(0).iter().all(|x| x.fract() == 0.0));
}

#[test]
fn randomized_response_frequencies() {
    let e = entry("randomized-response");
    let keep = 1f64.exp() / (1.0 + 1f64.exp());
    let s = draw(&e, e.witness.second(), 6); // the record is 1
    let ones = s.column(0).iter().filter(|&&x| x == 1.0).count();
    check_freq("randomized-response", ones, N, keep);
    let e = entry("kary-randomized-response"); // k = 4, records {1, 2}
    let s = draw(&e, e.witness.second(), 7);
    let keep = 1f64.exp() / (1f64.exp() + 3.0);
    let other = 1.0 / (1f64.exp() + 3.0);
    // Expected count in bin j: P(report j | 1) + P(report j | 2).
    let expected = [2.0 * other, keep + other, keep + other, 2.0 * other];
    for (j, &mean) in expected.iter().enumerate() {
        // Sum of two independent Bernoullis.
        let (a, b) = match j {
            1 => (keep, other),
            2 => (other, keep),
            _ => (other, other),
        };
        let var = a * (1.0 - a) + b * (1.0 - b);
        check_mean("kary-randomized-response", &s, j, mean, var);
    }
    assert!(s.values().rows().into_iter().all(|r| r.sum() == 2.0));
}

#[test]
fn report_noisy_max_is_the_exponential_mechanism() {
    // Gumbel-max: P(i) = e^{ε c_i} / Σ e^{ε c_j}. Witness second: counts (2, 1, 0, 0).
    let e = entry("report-noisy-max-gumbel");
    let s = draw(&e, e.witness.second(), 8);
    let w: Vec<f64> = [2.0f64, 1.0, 0.0, 0.0].iter().map(|c| c.exp()).collect();
    let total: f64 = w.iter().sum();
    for (i, wi) in w.iter().enumerate() {
        let hits = s.column(0).iter().filter(|&&x| x == i as f64).count();
        check_freq("report-noisy-max-gumbel", hits, N, wi / total);
    }
    // The buggy twin releases the maximum: max of Gumbels(c_i, 1) is Gumbel(log Σ e^{c_i}, 1),
    // mean log Σ e^{c_i} + γ, variance π²/6. Witness second: counts (5, 0).
    let e = entry("report-noisy-max-with-value");
    let s = draw(&e, e.witness.second(), 9);
    let loc = (5f64.exp() + 1.0).ln();
    let gamma = 0.577_215_664_901_532_9;
    check_mean(
        "report-noisy-max-with-value",
        &s,
        1,
        loc + gamma,
        std::f64::consts::PI.powi(2) / 6.0,
    );
    let p0 = 5f64.exp() / (5f64.exp() + 1.0);
    let hits = s.column(0).iter().filter(|&&x| x == 0.0).count();
    check_freq("report-noisy-max-with-value", hits, N, p0);
}

#[test]
fn exponential_median_frequencies() {
    // Witness first: {0, 0, 7, 7}, k = 8, ε = 1: rank counts #{x ≤ r} = 2 for r < 7, 4 at 7;
    // u = −|rank − 2| = 0 for r < 7 and −2 at r = 7; weights 1 (×7) and e^{−1}.
    let e = entry("exponential-mechanism");
    let s = draw(&e, e.witness.first(), 10);
    let total = 7.0 + (-1f64).exp();
    for r in [0usize, 3, 7] {
        let p = if r < 7 { 1.0 } else { (-1f64).exp() } / total;
        let hits = s.column(0).iter().filter(|&&x| x == r as f64).count();
        check_freq("exponential-mechanism", hits, N, p);
    }
}

#[test]
fn histograms_use_their_scales() {
    // Witness second: records {0, 1, 2, 0} → counts (2, 1, 1, 0).
    for (id, b) in [("noisy-histogram", 1.0), ("histogram-scale-epsilon", 0.5)] {
        let e = entry(id);
        let s = draw(&e, e.witness.second(), 11);
        for (j, c) in [2.0, 1.0, 1.0, 0.0].into_iter().enumerate() {
            check_mean(id, &s, j, c, 2.0 * b * b);
        }
        check_var(id, &s, 3, 0.0, 2.0 * b * b, 24.0 * b.powi(4));
    }
}

#[test]
fn buggy_means_have_their_noise() {
    // mean-fixed-n: witness second = ten 0s and a 1, mean 1/11, Laplace scale 1/(100·ε).
    let e = entry("mean-fixed-n");
    let s = draw(&e, e.witness.second(), 12);
    let b = 0.01;
    check_mean("mean-fixed-n", &s, 0, 1.0 / 11.0, 2.0 * b * b);
    check_var(
        "mean-fixed-n",
        &s,
        0,
        1.0 / 11.0,
        2.0 * b * b,
        24.0 * b.powi(4),
    );
    // mean-noisy-count-scale: symmetric noise around the true mean 0.5 (witness second {0, 1}),
    // so the median of the releases is 0.5: the fraction below 0.5 is 1/2.
    let e = entry("mean-noisy-count-scale");
    let s = draw(&e, e.witness.second(), 13);
    let below = s.column(0).iter().filter(|&&x| x < 0.5).count();
    check_freq("mean-noisy-count-scale", below, N, 0.5);
    // Conditional on |noise| the scale is 1/ñ ≤ 1 (ñ ≥ 1): P(|X − 0.5| > t) ≤ e^{−t}; at t = 8
    // that is 3.4e-4, so fewer than 3.4e-4·N + 5.3·sd releases lie beyond.
    let far = s
        .column(0)
        .iter()
        .filter(|&&x| (x - 0.5).abs() > 8.0)
        .count() as f64;
    let p = (-8f64).exp();
    assert!(
        far < p * N as f64 + Z * (p * N as f64).sqrt(),
        "far = {far}"
    );
}
