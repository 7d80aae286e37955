//! Checks of the RSC applications against their exact output pmfs. The pmf of a release is a
//! sum over the hidden slice sizes: a recursion over the steps, each size m + G (P(G = g) =
//! (1 − e^{−ε₀})e^{−ε₀g}) taking min(size, remaining) records, then the step's exact output
//! distribution. The bound checks are deterministic (no tolerance beyond 1e-12 rounding); the
//! sampler check is a z-test with its error rate stated. Seeds are fixed: a failure is a bug to
//! investigate, not a seed to change.

use std::collections::BTreeMap;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::*;
use crate::rsc_bound::{delta_at, epsilon_at};

type Pmf = BTreeMap<Vec<i64>, f64>;

fn settings(app: App, compute: Compute, slice: usize, epsilon0: f64) -> Settings {
    Settings {
        app,
        compute,
        bins: 8,
        slice,
        epsilon0,
    }
}

/// The exact pmf of the output tuple on `data`.
fn exact_pmf(s: &Settings, data: &Dataset) -> Pmf {
    let p = prepare(s, data);
    let mut out = Pmf::new();
    let mut removed = vec![false; p.records.len()];
    recurse(s, &p, 0, &mut removed, 1.0, &mut Vec::new(), &mut out);
    out
}

fn recurse(
    s: &Settings,
    p: &Prepared,
    t: usize,
    removed: &mut Vec<bool>,
    prob: f64,
    prefix: &mut Vec<i64>,
    out: &mut Pmf,
) {
    if t == s.steps() {
        *out.entry(prefix.clone()).or_insert(0.0) += prob;
        return;
    }
    let remaining: Vec<usize> = p.orders[t]
        .iter()
        .copied()
        .filter(|&i| !removed[i])
        .collect();
    let r = remaining.len();
    let (e0, m) = (s.epsilon0, s.slice);
    let a = -(-e0).exp_m1();
    // (records taken, probability): sizes m ≤ z < r take z; sizes ≥ r take all r.
    let cases: Vec<(usize, f64)> = if r <= m {
        vec![(r, 1.0)]
    } else {
        let mut c: Vec<(usize, f64)> = (m..r)
            .map(|z| (z, a * (-e0 * (z - m) as f64).exp()))
            .collect();
        c.push((r, (-e0 * (r - m) as f64).exp()));
        c
    };
    for (take, q) in cases {
        let slice = &remaining[..take];
        for &i in slice {
            removed[i] = true;
        }
        let pmf = step_pmf(s, &slice_values(s, p, t, slice));
        let total: f64 = pmf.iter().map(|(_, w)| w).sum();
        for (v, w) in pmf {
            prefix.push(v);
            recurse(s, p, t + 1, removed, prob * q * w / total, prefix, out);
            prefix.pop();
        }
        for &i in slice {
            removed[i] = false;
        }
    }
}

/// H_{e^ε}(P ‖ Q) = Σ_y (P(y) − e^ε Q(y))₊.
fn hockey(p: &Pmf, q: &Pmf, epsilon: f64) -> f64 {
    p.iter()
        .map(|(y, &py)| (py - epsilon.exp() * q.get(y).copied().unwrap_or(0.0)).max(0.0))
        .sum()
}

fn random_data(rng: &mut ChaCha20Rng, s: &Settings, max_n: usize) -> (Dataset, Vec<f64>) {
    let dim = s.record_dim();
    let draw = |rng: &mut ChaCha20Rng| -> Vec<f64> {
        (0..dim)
            .map(|_| f64::from(rng.random_range(0..s.bins as u32)))
            .collect()
    };
    let n = rng.random_range(0..=max_n);
    let rows: Vec<Vec<f64>> = (0..n).map(|_| draw(rng)).collect();
    (Dataset::vectors(dim, &rows).unwrap(), draw(rng))
}

/// The RSC bound of `rsc_bound.rs` against exact pmfs: for random small neighboring pairs of
/// every application (slice m ∈ {1, 2}, ε₀ ∈ {0.25, 1}), D → D′ within e^{2ε₀} pointwise, and
/// H_{e^{ε_n}} ≤ (1 − e^{−ε₀})^n in both orders for n = 1, …, 4.
#[test]
fn the_rsc_bound_holds_on_exact_pmfs() {
    let mut rng = ChaCha20Rng::seed_from_u64(52);
    let mut worst_ratio = 0.0f64;
    for (app, pairs, max_n) in [
        (App::Interval, 60, 6),
        (App::Rectangle(1), 40, 5),
        (App::Rectangle(2), 12, 4),
    ] {
        for slice in [1, 2] {
            for e0 in [0.25, 1.0] {
                let s = settings(app, Compute::Grid, slice, e0);
                for _ in 0..pairs {
                    let (d, x) = random_data(&mut rng, &s, max_n);
                    let d2 = d.with_record(&x).unwrap();
                    let (p, q) = (exact_pmf(&s, &d), exact_pmf(&s, &d2));
                    let total: f64 = q.values().sum();
                    assert!((total - 1.0).abs() < 1e-9, "{total}");
                    for (y, &py) in &p {
                        let qy = q.get(y).copied().unwrap_or(0.0);
                        worst_ratio = worst_ratio.max((py / qy).ln() / e0);
                        assert!(py <= (2.0 * e0).exp() * qy * (1.0 + 1e-9), "{app:?} {y:?}");
                    }
                    for n in 1..=4u64 {
                        let (eps, delta) = (epsilon_at(e0, n), delta_at(e0, n));
                        let (h1, h2) = (hockey(&p, &q, eps), hockey(&q, &p, eps));
                        assert!(
                            h1 <= delta + 1e-12 && h2 <= delta + 1e-12,
                            "{app:?} m {slice} ε₀ {e0} n {n}: {h1} {h2} > {delta}"
                        );
                    }
                }
            }
        }
    }
    // The D → D′ ratio is reached above e^{ε₀} on some pair (the slice-size factor is real).
    assert!(worst_ratio > 1.0, "{worst_ratio}");
}

/// The entries' own settings on their witnesses: the correct ones within their claim, the twins
/// far outside it (an output with probability 0 on D).
#[test]
fn witnesses_exactly() {
    for (id, app, compute) in [
        ("rsc-interval-point", App::Interval, Compute::Grid),
        ("rsc-interval-point-snap-to-data", App::Interval, Compute::SnapToData),
        ("rsc-rectangle-1d", App::Rectangle(1), Compute::Grid),
        ("rsc-rectangle-1d-rank-pick", App::Rectangle(1), Compute::RankPick),
        ("rsc-rectangle-2d", App::Rectangle(2), Compute::Grid),
        ("rsc-rectangle-2d-rank-pick", App::Rectangle(2), Compute::RankPick),
    ] {
        let e = super::super::build(id, &Params::new()).unwrap();
        let s = settings(app, compute, 3, 0.25);
        let (p, q) = (
            exact_pmf(&s, e.witness.first()),
            exact_pmf(&s, e.witness.second()),
        );
        let claim = e.mechanism.claim();
        let (eps, delta) = (claim.natural_epsilon().unwrap(), claim.delta_at(10.0).unwrap());
        assert!((eps - 3.609_437_912_434_100_5).abs() < 1e-6 && delta == 1e-3, "{claim}");
        let (h1, h2) = (hockey(&p, &q, eps), hockey(&q, &p, eps));
        // P_{D′}(first coordinate = 0) and P_D of the same.
        let zero = |m: &Pmf| -> f64 { m.iter().filter(|(y, _)| y[0] == 0).map(|(_, v)| v).sum() };
        if compute == Compute::Grid {
            assert!(!e.status.is_buggy());
            assert!(h1 <= delta && h2 <= delta, "{id}: {h1} {h2}");
        } else {
            assert!(e.status.is_buggy());
            assert_eq!(zero(&p), 0.0, "{id}");
            assert!(zero(&q) > 0.1 && h2 >= zero(&q), "{id}: {} {h2}", zero(&q));
        }
        eprintln!("{id}: H(D‖D′) {h1:.4}, H(D′‖D) {h2:.4}, P_D′(y₀ = 0) {:.4}", zero(&q));
    }
    // The interval twin's P_{D′}(0) (module docs: 0.36).
    let s = settings(App::Interval, Compute::SnapToData, 3, 0.25);
    let e = super::super::build("rsc-interval-point-snap-to-data", &Params::new()).unwrap();
    let q = exact_pmf(&s, e.witness.second());
    let p0 = q.get(&vec![0]).copied().unwrap_or(0.0);
    assert!((p0 - 0.36).abs() < 0.01, "{p0}");
}

/// The sampler draws the analysed algorithm: 2·10^5 releases of `rsc-rectangle-1d` on D′ of its
/// witness, each output cell's frequency against the exact pmf (z-test, |z| < 5.3 per cell:
/// false-failure rate ≈ 1.2e-7 per cell, 64 cells: below 1e-5 by the union bound).
#[test]
fn the_sampler_matches_the_exact_pmf() {
    let e = super::super::build("rsc-rectangle-1d", &Params::new()).unwrap();
    let s = settings(App::Rectangle(1), Compute::Grid, 3, 0.25);
    let exact = exact_pmf(&s, e.witness.second());
    let n = 200_000;
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let samples = e.mechanism.sample(e.witness.second(), n, &mut rng).unwrap();
    let (a, b) = (samples.column(0), samples.column(1));
    let mut counts: BTreeMap<Vec<i64>, f64> = BTreeMap::new();
    for i in 0..n {
        *counts
            .entry(vec![a[i] as i64, b[i] as i64])
            .or_insert(0.0) += 1.0;
    }
    for (y, &pr) in &exact {
        let f = counts.get(y).copied().unwrap_or(0.0) / n as f64;
        let z = (f - pr) / (pr * (1.0 - pr) / n as f64).sqrt();
        assert!(z.abs() < 5.3, "{y:?}: {f} vs {pr}, z {z}");
    }
    assert!(counts.keys().all(|y| exact.contains_key(y)));
}

#[test]
fn bad_parameters_name_the_parameter() {
    for (name, value) in [
        ("epsilon", 0.0),
        ("bins", 4.0),
        ("slice", 0.0),
        ("delta", 0.0),
        ("delta", 0.9),
    ] {
        let err = super::super::build("rsc-rectangle-2d", &Params::new().set(name, value))
            .unwrap_err()
            .to_string();
        assert!(err.contains(name) && err.contains("allowed"), "{err}");
    }
}
