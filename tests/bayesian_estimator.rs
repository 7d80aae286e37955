//! Theorem 4 of Triastcyn & Faltings (2020) end to end: does the Bayesian accountant's estimator
//! over-estimate the privacy cost E_μ[e^{T·c(λ, d)}] with probability ≥ 1 − γ on finite samples
//! from a *known* μ? μ is the uniform law on the 1000 in-distribution distances of
//! `examples/bdp-distances.txt` (0.05 + 0.25·(i + 0.5)/1000), so the truth is their exact mean;
//! each seed draws m = 1000 samples from μ (with replacement) through the project's seeded
//! ChaCha streams, and a miss is an estimate below the truth. The run is the documented one:
//! q = 0.01, z = 1.1, T = 6000.
//!
//! Each assertion on a miss count K of N seeds uses the binomial tail: when the estimator's miss
//! rate is ≤ γ, K ~ Bin(N, ≤ γ) and Pr[K > k*] ≤ ALPHA = 1e-6 at k* = the smallest k with
//! Pr[Bin(N, γ) > k] ≤ ALPHA (computed with statrs' binomial CDF below): the test's false-failure
//! rate. `cargo test --release --test bayesian_estimator -- --ignored --nocapture` prints the
//! table of docs/bayesian.md.

use dp_audit::accounting::bayesian::{
    bayesian_epsilon, bayesian_epsilon_dkw, bayesian_epsilon_exact, dkw_band, log_cost_exact,
    log_cost_student_t,
};
use dp_audit::rng::{Seed, Stream};
use rand::RngExt;
use statrs::distribution::{Binomial, DiscreteCDF};

const ALPHA: f64 = 1e-6;
const Q: f64 = 0.01;
const Z: f64 = 1.1;
const T: u64 = 6000;
const M: usize = 1000;
/// The orders tried end to end: a subset of the accountant's 1..=256 (ε over any set of orders is
/// an account; fewer keep the test to seconds). The exact ε uses the same set.
const ORDERS: [u32; 13] = [2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256];

/// The known μ: the support of `examples/bdp-distances.txt`, uniform.
fn mu() -> Vec<f64> {
    (0..1000)
        .map(|i| 0.05 + 0.25 * (i as f64 + 0.5) / 1000.0)
        .collect()
}

/// m i.i.d. draws from μ for seed `seed` (the stream tag names this test).
fn draw(mu: &[f64], m: usize, seed: u64) -> Vec<f64> {
    let mut rng = Seed(seed).rng(Stream::Other {
        tag: 0x7468_6d34, // "thm4"
        index: 0,
    });
    (0..m).map(|_| mu[rng.random_range(0..mu.len())]).collect()
}

/// k*: the smallest k with Pr[Bin(n, rate) > k] ≤ ALPHA.
fn critical(n: u64, rate: f64) -> u64 {
    let b = Binomial::new(rate, n).unwrap();
    (0..=n).find(|&k| b.sf(k) <= ALPHA).unwrap()
}

/// Misses of the Student-t estimate at order λ, failure probability γ, over `n` seeds.
fn student_t_misses(lambda: u32, gamma: f64, m: usize, n: u64) -> u64 {
    let mu = mu();
    let truth = log_cost_exact(&mu, Q, Z, T, lambda);
    (0..n)
        .filter(|&s| log_cost_student_t(&draw(&mu, m, s), Q, Z, T, lambda, gamma).unwrap() < truth)
        .count() as u64
}

/// Low skew (λ = 8: the largest e^{T·c} of μ is 2.5 times the mean): Theorem 4 holds here up to
/// the normal approximation; measured 0.0525 in Python over 4000 seeds (scipy, the same
/// estimator; 61/1000 here), 1000 seeds here, at which rate 0.0525 Pr[K > k* = 86] is 4.3e-6 (scipy binom.sf) instead
/// of ≤ 1e-6. A dropped t-penalty (the sample mean alone) misses about half
/// the time and fails.
#[test]
fn student_t_covers_at_low_skew() {
    let (n, gamma) = (1000, 0.05);
    let k = student_t_misses(8, gamma, M, n);
    let crit = critical(n, gamma);
    eprintln!("Student-t, λ = 8: {k}/{n} misses at γ = {gamma} (k* = {crit})");
    assert!(k <= crit, "{k}/{n} > {crit}");
}

/// The distribution-free (DKW) estimator at the order where the Student-t one misses most
/// (λ = 128: one value of μ is 1000 times the mean), per order and end to end (ε over all
/// orders against the exact ε at δ − γ, which it must not undercut on the DKW event). Its miss
/// rate is ≤ γ for every μ on [0, 1] (Massart's DKW inequality), so k ≤ k* with false-failure
/// rate ≤ 1e-6 each. A band not added (or added at the wrong end) misses like the sample mean.
#[test]
fn distribution_free_estimator_covers() {
    let (n, gamma) = (400, 0.05);
    let mu = mu();
    let orders = ORDERS;
    let truth = bayesian_epsilon_exact(&mu, Q, Z, T, 0.5 - gamma, &orders)
        .unwrap()
        .0;
    let crit = critical(n, gamma);
    let k = (0..n)
        .filter(|&s| {
            let e = bayesian_epsilon_dkw(&draw(&mu, M, s), Q, Z, T, 0.5, gamma, &orders, 1.0)
                .unwrap()
                .epsilon;
            e < truth
        })
        .count() as u64;
    eprintln!("DKW end to end: {k}/{n} below the exact ε at γ = {gamma} (k* = {crit})");
    assert!(k <= crit, "{k}/{n} > {crit}");
    // The band is what keeps it above: without it (band → 0 as m → ∞ is the sample mean) the
    // estimate would sit near the truth. Here it moves ε_m = √(ln 20/2000) of mass to d = 1.
    assert!((dkw_band(M, gamma) - (20f64.ln() / 2000.0).sqrt()).abs() < 1e-9);
}

/// The table of docs/bayesian.md: the Student-t estimator's miss rate per order (γ = 0.05 and
/// the accountant's per-order γ/256 at γ = 0.05), and the whole accountant end to end at
/// δ = 1e-5, γ = 1e-8 (Student-t and DKW, the orders of ORDERS, at most 200 seeds) against the
/// exact ε at δ − γ. Minutes.
#[test]
#[ignore = "measurement: prints the Theorem 4 table, minutes"]
fn theorem_4_table() {
    let n: u64 = std::env::var("AUDIT_SEED_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let n_end = n.min(200);
    for lambda in [8u32, 32, 64, 128] {
        for gamma in [0.05, 0.05 / 256.0] {
            let k = student_t_misses(lambda, gamma, M, n);
            eprintln!(
                "Student-t λ = {lambda:>3} γ = {gamma:.2e}: misses {k}/{n} = {:.4}",
                k as f64 / n as f64
            );
        }
    }
    let mu = mu();
    let orders = ORDERS;
    let (delta, gamma) = (1e-5, 1e-8);
    let (truth, order) = bayesian_epsilon_exact(&mu, Q, Z, T, delta - gamma, &orders).unwrap();
    eprintln!("exact ε at δ − γ: {truth} (order {order})");
    let (mut kt, mut kd) = (0u64, 0u64);
    let (mut st, mut sd) = (0.0, 0.0);
    let n = n_end;
    for s in 0..n {
        let x = draw(&mu, M, s);
        let t = bayesian_epsilon(&x, Q, Z, T, delta, gamma, &orders).unwrap();
        let d = bayesian_epsilon_dkw(&x, Q, Z, T, delta, gamma, &orders, 1.0).unwrap();
        kt += u64::from(t.epsilon < truth);
        kd += u64::from(d.epsilon < truth);
        st += t.epsilon;
        sd += d.epsilon;
    }
    eprintln!(
        "end to end δ = {delta}, γ = {gamma}: Student-t below {kt}/{n} (mean ε {:.4}), DKW below {kd}/{n} (mean ε {:.4})",
        st / n as f64,
        sd / n as f64
    );
}
