//! Unit tests of the hockey-stick tester.

use super::atoms::{NEAR_PER_COORD, centres_of, near_centres, near_group};
use super::*;
use crate::rng::{Seed, Stream};
use crate::testers::common::fixtures;
use rand::RngExt;
use rand_distr::{Distribution, Normal};

fn gaussian(n: usize, mean: f64, sd: f64, seed: u64) -> Samples {
    fixtures::gaussian(n, mean, sd, seed, 9)
}

/// N(1, 1) vs N(0, 1) at ε = 0: H = TV = 2Φ(1/2) − 1 = 0.3829. The bound must be below it and,
/// with 1e5 samples, within 0.02 of it (the held-out standard error is ≈ 0.003).
#[test]
fn gaussian_shift_bound_is_valid_and_tight() {
    let p = gaussian(100_000, 1.0, 1.0, 1);
    let q = gaussian(100_000, 0.0, 1.0, 2);
    let t = HockeyStickTester::default();
    let mut rng = Seed(0).rng(Stream::Tester { bound: 0 });
    let m = fixtures::h_at_zero(&t, &p, &q, &mut rng);
    let truth = 0.382_924_922_548_026;
    assert!(m.value <= truth && m.value > truth - 0.02, "{m:?}");
}

#[test]
fn identical_distributions_give_zero() {
    let p = gaussian(20_000, 0.0, 1.0, 3);
    let q = gaussian(20_000, 0.0, 1.0, 4);
    let mut rng = Seed(0).rng(Stream::Tester { bound: 0 });
    let m = fixtures::h_at_zero(&HockeyStickTester::default(), &p, &q, &mut rng);
    assert_eq!(m.value, 0.0, "{m:?}");
}

#[test]
fn discrete_outputs_use_atoms() {
    // Randomized response with p = 0.9 vs 0.1 at ε = 0: H = 0.8.
    let (p, q, mut rng) = fixtures::randomized_response();
    let m = fixtures::h_at_zero(&HockeyStickTester::default(), &p, &q, &mut rng);
    assert!(m.value <= 0.8 && m.value > 0.77, "{m:?}");
}

/// n releases of N(shift, I_d), `shift` of length d, from the seeded stream (tag 10, index).
fn gaussian_vectors(n: usize, shift: &[f64], seed: u64, index: u64) -> Samples {
    let mut rng = Seed(seed).rng(Stream::Other { tag: 10, index });
    let d = shift.len();
    let normal = Normal::new(0.0, 1.0).unwrap();
    let flat = (0..n * d)
        .map(|i| shift[i % d] + normal.sample(&mut rng))
        .collect();
    Samples::from_flat(d, flat).unwrap()
}

/// H_{e^ε}(N(Δ, 1) ‖ N(0, 1)) = Φ(Δ/2 − ε/Δ) − e^ε Φ(−Δ/2 − ε/Δ) (Balle & Wang 2018); a
/// Gaussian shift of norm Δ in any dimension has the same value.
fn gaussian_hockey_stick(shift_norm: f64, epsilon: f64) -> f64 {
    use statrs::distribution::{ContinuousCDF, Normal as StdNormal};
    let phi = |x: f64| StdNormal::standard().cdf(x);
    let d = shift_norm;
    phi(d / 2.0 - epsilon / d) - epsilon.exp() * phi(-d / 2.0 - epsilon / d)
}

/// 1 − 1e-6 quantile of Binomial(n, p), by summing the pmf (statrs' cdf).
fn binomial_quantile(n: u64, p: f64) -> u64 {
    use statrs::distribution::{Binomial, DiscreteCDF};
    let b = Binomial::new(p, n).unwrap();
    (0..=n).find(|&k| b.cdf(k) >= 1.0 - 1e-6).unwrap()
}

fn bound(t: &HockeyStickTester, p: &Samples, q: &Samples, epsilon: f64, beta: f64) -> Measurement {
    let mut rng = Seed(0).rng(Stream::Tester { bound: 0 });
    t.lower_bound(p, q, Divergence::HockeyStick { epsilon }, beta, &mut rng)
        .unwrap()
}

/// Power of the learned score: P = N((μ/√d)(1, …, 1), I_d), Q = N(0, I_d), d = 5, μ = 1.5,
/// 10^5 releases per side, at ε = 0 and ε = 0.5. Any single-coordinate event sees a shift of
/// only μ/√d, so no per-coordinate candidate can exceed H(μ/√d); the full divergence is H(μ).
/// The learned bound must exceed the single-coordinate *truth* by 0.1 at ε = 0 and by 0.03
/// at ε = 0.5 (held-out standard errors ≈ 0.003, so this fails only if the fit is poor) and
/// stay below the full truth (each bound is at β = 1e-6: false-failure rate ≤ 6e-6 over the six
/// upper checks; the power checks fail only on a poor fit).
#[test]
fn learned_score_finds_a_diagonal_shift() {
    let (d, mu) = (5usize, 1.5);
    let shift = vec![mu / (d as f64).sqrt(); d];
    let p = gaussian_vectors(100_000, &shift, 21, 0);
    let q = gaussian_vectors(100_000, &vec![0.0; d], 21, 1);
    let beta = 1e-6;
    let with = HockeyStickTester::default();
    let without = HockeyStickTester {
        learned_score: false,
        ..HockeyStickTester::default()
    };
    let variational = HockeyStickTester::variational();
    for (epsilon, gain) in [(0.0, 0.1), (0.5, 0.03)] {
        let truth = gaussian_hockey_stick(mu, epsilon);
        let coordinate_truth = gaussian_hockey_stick(mu / (d as f64).sqrt(), epsilon);
        let l = bound(&with, &p, &q, epsilon, beta);
        let c = bound(&without, &p, &q, epsilon, beta);
        let v = bound(&variational, &p, &q, epsilon, beta);
        println!(
            "d = {d}, ε = {epsilon}: truth {truth:.4}, best single coordinate (truth) {coordinate_truth:.4}; bounds: coordinates only {:.4}, with the learned score {:.4} [{}], variational {:.4} [{}]",
            c.value,
            l.value,
            l.event.as_ref().unwrap().description,
            v.value,
            v.event.as_ref().unwrap().description
        );
        assert!(c.value <= coordinate_truth, "{c:?}");
        for m in [&l, &v] {
            assert!(m.value <= truth, "{m:?}");
            assert!(m.value > coordinate_truth + gain, "{m:?}");
            assert!(m.event.as_ref().unwrap().description.contains("logistic"));
        }
    }
}

/// Soundness with the learned score and the variational form, d = 3, 5 000 releases per side,
/// β = 0.05, 120 seeds each: (a) identical N(0, I_3) on both sides, ε = 0; (b) a diagonal
/// shift of norm 1 at ε = 0.5, where the bound must stay below the truth. Each bound exceeds
/// the truth with probability ≤ β, independently across seeds, so the count of exceedances is
/// stochastically below Binomial(120, 0.05); the test fails only above that distribution's
/// 1 − 1e-6 quantile (false-failure rate ≤ 4e-6 over the four counts).
#[test]
fn learned_and_variational_bounds_are_sound_in_three_dimensions() {
    let (seeds, beta, n) = (120u64, 0.05, 5_000);
    let limit = binomial_quantile(seeds, beta);
    let shift = vec![1.0 / 3f64.sqrt(); 3];
    let truth = gaussian_hockey_stick(1.0, 0.5);
    for tester in [
        HockeyStickTester::default(),
        HockeyStickTester::variational(),
    ] {
        let (mut positive, mut above) = (0, 0);
        for seed in 0..seeds {
            let p = gaussian_vectors(n, &[0.0; 3], 1000 + seed, 0);
            let q = gaussian_vectors(n, &[0.0; 3], 1000 + seed, 1);
            positive += u64::from(bound(&tester, &p, &q, 0.0, beta).value > 0.0);
            let p = gaussian_vectors(n, &shift, 5000 + seed, 0);
            above += u64::from(bound(&tester, &p, &q, 0.5, beta).value > truth);
        }
        println!(
            "{}: identical sides, positive bound in {positive}/{seeds} seeds; shift, bound above the truth {truth:.4} in {above}/{seeds} (limit {limit})",
            tester.name()
        );
        assert!(positive <= limit && above <= limit);
    }
}

#[test]
fn variational_form_names_itself_and_works_in_one_dimension() {
    let p = gaussian(20_000, 1.0, 1.0, 1);
    let q = gaussian(20_000, 0.0, 1.0, 2);
    let t = HockeyStickTester::variational();
    assert_eq!(t.name(), "hockey-stick-variational");
    assert!(t.describe().contains("variational"));
    // ε = 0: the decision {logit ≥ 0} is {x ≥ 1/2}, the optimal event: H = 0.3829. Bound at
    // β = 1e-6 (false-failure rate 1e-6 for the upper check; 4 000 held-out samples per
    // side give a standard error ≈ 0.01, so the lower check has margin ≥ 5 standard errors).
    let m = bound(&t, &p, &q, 0.0, 1e-6);
    assert!(m.value <= 0.382_924_922_548_026 && m.value > 0.3, "{m:?}");
    assert!(m.event.unwrap().description.contains("variational"));
}

#[test]
fn bad_inputs_are_errors() {
    let p = gaussian(100, 0.0, 1.0, 1);
    let q = Samples::from_flat(2, vec![0.0; 200]).unwrap();
    let t = HockeyStickTester::default();
    let mut rng = Seed(0).rng(Stream::Tester { bound: 0 });
    let d = Divergence::HockeyStick { epsilon: 1.0 };
    assert!(t.lower_bound(&p, &q, d, 0.05, &mut rng).is_err());
    assert!(t.lower_bound(&p, &p, d, 0.0, &mut rng).is_err());
    assert!(t.lower_bound(&p, &p, d, 1.5, &mut rng).is_err());
    let nan = Samples::from_column(vec![f64::NAN; 100]);
    assert!(
        t.lower_bound(&nan, &p, d, 0.05, &mut rng)
            .unwrap_err()
            .to_string()
            .contains("NaN")
    );
    let tiny = gaussian(5, 0.0, 1.0, 1);
    assert!(t.lower_bound(&tiny, &tiny, d, 0.05, &mut rng).is_err());
}

/// n releases of an "almost-atom" mechanism: with probability `atom`, 100 + 1e-12·N(0, 1) (a
/// noise scale clamped to 1e-12), else 100 + N(0, 25).
fn almost_atom(n: usize, atom: f64, seed: u64) -> Samples {
    let mut rng = Seed(seed).rng(Stream::Other { tag: 11, index: 0 });
    let z = Normal::new(0.0, 1.0).unwrap();
    Samples::from_column(
        (0..n)
            .map(|_| {
                let scale = if rng.random::<f64>() < atom {
                    1e-12
                } else {
                    5.0
                };
                100.0 + scale * z.sample(&mut rng)
            })
            .collect(),
    )
}

/// Near-atoms: P puts half its mass within ~1e-11 of 100 (never twice the same value), Q is
/// N(100, 25). At ε = 1, H_e(P‖Q) = 0.5 exactly (the continuous half of P has density
/// 0.5·q < e·q; the near-atom has P-mass 0.5 and Q-mass ≈ 1e-12). No threshold event sees it
/// ({x ≥ t} gains P-mass 0.5 only with Q-mass ≥ 0.5), so without near-atoms the bound is 0;
/// with them it must be within 0.05 of 0.5 (4·10^4 held-out rows: standard error ≈ 0.0025;
/// the width search may leave out a few of the near-atom's releases) and at most 0.5
/// (β = 1e-6: false-failure rate ≤ 1e-6).
#[test]
fn near_atoms_find_a_clamped_noise_scale() {
    let p = almost_atom(50_000, 0.5, 1);
    let q = almost_atom(50_000, 0.0, 2);
    let with = HockeyStickTester::default();
    let without = HockeyStickTester {
        near_atoms: false,
        ..HockeyStickTester::default()
    };
    let m = bound(&with, &p, &q, 1.0, 1e-6);
    let c = bound(&without, &p, &q, 1.0, 1e-6);
    println!("near-atom: with {m:?}\nwithout {c:?}");
    assert!(m.value <= 0.5 && m.value > 0.45, "{m:?}");
    assert!(
        m.event
            .unwrap()
            .description
            .contains("near a frequent value")
    );
    assert!(c.value < 0.1, "{c:?}");
    assert!(with.describe().contains("near-atoms"));
}

/// Continuous outputs have no 9-digit value repeated 10 times: no near-atom candidate, so the
/// tester's events (and its power on continuous outputs) are unchanged. Integer-valued outputs
/// with many values get their modes as centres.
#[test]
fn near_centres_only_for_repeated_values() {
    let p = gaussian(20_000, 1.0, 3.7, 1);
    let q = gaussian(20_000, 0.0, 3.7, 2);
    assert!(near_centres((&p).into(), 4_000, (&q).into(), 4_000, 0).is_empty());
    let a = almost_atom(20_000, 0.5, 3);
    let centres = near_centres((&a).into(), 4_000, (&a).into(), 4_000, 0);
    assert_eq!(centres.len(), 1, "{centres:?}");
    assert!((centres[0] - 100.0).abs() < 1e-10);
    let ints = Samples::from_column((0..20_000).map(|i| f64::from(i % 200)).collect());
    assert_eq!(
        near_centres((&ints).into(), 4_000, (&ints).into(), 4_000, 0).len(),
        NEAR_PER_COORD
    );
}

/// [`near_centres`] finds its big groups through cells that hold them (binary cells, read
/// without a logarithm): the centres are those of counting every value's group, on clusters
/// placed across binary cell and binade edges (1 and 2^k, each side of them, negative), at 0,
/// and at the scale's edge, among continuous values.
#[test]
fn near_centres_are_those_of_exact_groups() {
    // The reference: every value's group counted exactly (no cells, no neighbours).
    fn reference(x: &[f64]) -> Vec<f64> {
        let mut abs: Vec<f64> = x.iter().map(|v| v.abs()).collect();
        abs.sort_by(f64::total_cmp);
        let scale = abs[abs.len() * 9 / 10];
        let group = |x: f64| near_group(x, scale);
        let mut groups: std::collections::HashMap<(i32, i64), Vec<f64>> = Default::default();
        for &v in x {
            groups.entry(group(v)).or_default().push(v);
        }
        let min_count = 10.max(x.len() / 1000);
        let mut big: Vec<((i32, i64), Vec<f64>)> = groups
            .into_iter()
            .filter(|g| g.1.len() >= min_count)
            .collect();
        big.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then_with(|| a.0.cmp(&b.0)));
        // The centres taken from the groups as the tester takes them (the grouping is what
        // is compared).
        centres_of(big.into_iter().map(|(_, g)| g).collect(), scale)
    }
    let mut rng = Seed(54).rng(Stream::Other {
        tag: 5403,
        index: 0,
    });
    let z = Normal::new(0.0, 1.0).unwrap();
    for (case, centre) in [
        1.0,
        1.0 - 2e-9,
        2f64.powi(30),
        -2f64.powi(-7),
        -(1.0 + 2f64.powi(-20)),
        1.0 + 3.0 * 2f64.powi(-20),
        0.0,
        123.456_789,
    ]
    .into_iter()
    .enumerate()
    {
        // A cluster of 2·3 000/share values: every one of the 3 000 training rows (twice, one
        // per side) at shares 3 and 40; at 400, 15 in all but about 7 on each side of the
        // binary cell edge at ±(1 + 2^-20) and 1 + 3·2^-20 (the neighbours' counts are what
        // finds them there).
        for share in [3usize, 40, 400] {
            let mut member = 0i32;
            let x: Vec<f64> = (0..6_000)
                .map(|i| {
                    let v: f64 = z.sample(&mut rng);
                    if i % share == 0 {
                        // Values within 6e-10 of the centre (relative; absolute at 0), one
                        // in two below it.
                        member += 1;
                        let k = f64::from(member % 6 + 1);
                        let offset = 1e-10 * if member % 2 == 0 { k } else { -k };
                        if centre == 0.0 {
                            1e-3 * offset
                        } else {
                            centre * (1.0 + offset)
                        }
                    } else if i % 7 == 0 && share == 3 {
                        // Competing groups (the modes of rounded values) where the cluster is
                        // the largest.
                        v.round()
                    } else {
                        v * 10.0
                    }
                })
                .collect();
            let s = Samples::from_column(x.clone());
            assert_eq!(
                near_centres((&s).into(), 3_000, (&s.clone()).into(), 3_000, 0)
                    .iter()
                    .map(|c| c.to_bits())
                    .collect::<Vec<_>>(),
                reference(&[&x[..3_000], &x[..3_000]].concat())
                    .iter()
                    .map(|c| c.to_bits())
                    .collect::<Vec<_>>(),
                "case {case}, one value in {share}"
            );
        }
    }
}

/// A near-atom at 0 (|x| ≤ ~1e-12, where relative rounding would scatter it) is one group.
#[test]
fn near_centres_cluster_around_zero() {
    let mut rng = Seed(7).rng(Stream::Other { tag: 12, index: 0 });
    let z = Normal::new(0.0, 1.0).unwrap();
    let x: Vec<f64> = (0..20_000)
        .map(|i| {
            let v = z.sample(&mut rng);
            if i % 3 == 0 { 1e-12 * v } else { v }
        })
        .collect();
    let s = Samples::from_column(x);
    let centres = near_centres((&s).into(), 10_000, (&s).into(), 10_000, 0);
    assert_eq!(centres.len(), 1, "{centres:?}");
    assert!(centres[0].abs() < 1e-11, "{centres:?}");
}

/// The selection's shared scoring ([`selection::job_curves`]: one sort per candidate, read for
/// its mirror and a coordinate's other sign) gives every curve bit for bit as scoring and
/// sorting each candidate and mirror on its own, on releases with every kind of candidate: a
/// continuous coordinate with a near-atom, a multi-valued discrete one, a flag, and zeros (the
/// atom tables' +0 and a coordinate's ±0).
#[test]
fn shared_scoring_is_each_candidate_scored_alone() {
    use super::score::Score;
    use super::selection::{Curve, curves_with_growths, job_curves, shared_jobs};
    let side = |shift: f64, seed: u64| {
        let mut rng = Seed(seed).rng(Stream::Other { tag: 12, index: 0 });
        let z = Normal::new(0.0, 1.0).unwrap();
        let flat: Vec<f64> = (0..6000)
            .flat_map(|i| {
                let x = if i % 5 == 0 {
                    0.0
                } else if i % 7 == 0 {
                    3.0 + 1e-12 * z.sample(&mut rng)
                } else {
                    shift + z.sample(&mut rng)
                };
                // Values seen once (each side its own): their patterns score +0 in the atom
                // tables.
                let k = if i % 97 == 0 {
                    (1000 + 2 * i) as f64 + shift.signum()
                } else {
                    (rng.random::<f64>() * 6.0 + shift).floor()
                };
                let flag = f64::from(u8::from(rng.random::<f64>() < 0.3 + 0.1 * shift));
                [x, k, flag]
            })
            .collect();
        Samples::from_flat(3, flat).unwrap()
    };
    let (p, q) = (side(0.5, 1), side(0.0, 2));
    let (np, nq) = (3000, 3000);
    let t = HockeyStickTester::default();
    let forward = t.candidates((&p).into(), np, (&q).into(), nq);
    let kinds = |f: fn(&Score) -> bool| forward.iter().filter(|s| f(s)).count();
    assert!(
        kinds(|s| matches!(s, Score::Near { .. })) > 0,
        "{forward:?}"
    );
    assert!(kinds(|s| matches!(s, Score::Atoms { .. })) > 0);
    assert!(kinds(|s| matches!(s, Score::Conditional { .. })) > 0);
    let spacings = [(100.0, 1.06), (0.0, 1.01)];
    let same = |x: &[Curve], y: &[Curve]| {
        assert_eq!(x.len(), y.len());
        for (a, b) in x.iter().zip(y) {
            assert_eq!(a.score, b.score);
            assert_eq!(
                (a.len_a, a.len_b, a.discount),
                (b.len_a, b.len_b, b.discount)
            );
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&a.ts), bits(&b.ts), "{:?}", a.score);
            assert_eq!((&a.ka, &a.kb), (&b.ka, &b.kb));
        }
    };
    // The atom tables' counts through packed indices are the hashed counts, for the joint
    // table, each pair and a coordinate alone.
    for coords in [vec![1, 2], vec![1], vec![2, 1]] {
        let packed =
            super::atoms::packed_counts((&p).into(), np, (&q).into(), nq, &coords).unwrap();
        assert_eq!(
            packed,
            super::atoms::hashed_counts((&p).into(), np, (&q).into(), nq, &coords)
        );
    }
    // The atom scores read through packed indices (`eval_rows`) score every row as the table
    // does (`eval`), rows with values the table never saw included; and their sorted scores,
    // counted by packed index (`sorted_side`), are the rows' scores sorted, mirrors included.
    // A third side with values no table holds (rows without a packed index, scoring 0).
    let mut novel = p.values().to_owned();
    for i in (0..novel.nrows()).step_by(3) {
        novel[[i, 1]] = 77.5;
    }
    let novel = Samples::new(novel).unwrap();
    for s in forward.iter().filter(|s| matches!(s, Score::Atoms { .. })) {
        for side in [&p, &q, &novel] {
            let bulk = s.eval_rows(side, 0..side.n());
            for (i, v) in bulk.iter().enumerate() {
                assert_eq!(v.to_bits(), s.eval(&side.row(i)).to_bits(), "row {i}");
            }
            for score in [s.clone(), s.mirrored()] {
                for rows in [0..side.n(), 1000..side.n() - 7] {
                    let mut want: Vec<u64> = rows
                        .clone()
                        .map(|i| score.eval(&side.row(i)).to_bits())
                        .collect();
                    want.sort_unstable_by(|x, y| f64::from_bits(*y).total_cmp(&f64::from_bits(*x)));
                    let got = super::sorted::sorted_side(&score, side.into(), rows).to_list();
                    let got: Vec<u64> = got.iter().map(|x| x.to_bits()).collect();
                    assert_eq!(got, want, "{score:?}");
                }
            }
        }
    }
    let mut seen = 0;
    for (i, paired) in shared_jobs(&forward) {
        for (k, f, r) in job_curves(
            &forward,
            i,
            paired,
            ((&p).into(), np),
            ((&q).into(), nq),
            true,
            &spacings,
        ) {
            let s = &forward[k];
            same(
                &f,
                &curves_with_growths(s.clone(), (&p).into(), np, (&q).into(), nq, &spacings),
            );
            same(
                &r,
                &curves_with_growths(s.mirrored(), (&q).into(), nq, (&p).into(), np, &spacings),
            );
            assert_eq!(k, seen);
            seen += 1;
        }
    }
    assert_eq!(seen, forward.len());
}

/// Held-out counts through [`super::PreparedEvents`] (each distinct score evaluated once per
/// block, atom tables over the same coordinates read through one shared packed index) are the
/// counts of each event counted alone row by row ([`HeldOutEvents::count_rows`]): atom tables
/// paired with their mirrors, tables over the same coordinates fitted on other rows (other
/// keys, so a shared packer holds values a table lacks), every other kind of score, and
/// held-out rows with values no table saw.
#[test]
fn prepared_counts_are_each_events_own_counts() {
    use super::score::Score;
    let side = |shift: f64, seed: u64| {
        let mut rng = Seed(seed).rng(Stream::Other { tag: 13, index: 0 });
        let z = Normal::new(0.0, 1.0).unwrap();
        let flat: Vec<f64> = (0..20_000)
            .flat_map(|i| {
                let x = shift + z.sample(&mut rng);
                let k = if i % 89 == 0 {
                    (5000 + i) as f64
                } else {
                    (rng.random::<f64>() * 6.0 + shift).floor()
                };
                let flag = f64::from(u8::from(rng.random::<f64>() < 0.3 + 0.1 * shift));
                [x, k, flag]
            })
            .collect();
        Samples::from_flat(3, flat).unwrap()
    };
    let (p, q) = (side(0.5, 3), side(0.0, 4));
    let t = HockeyStickTester::default();
    let mut scores = t.candidates((&p).into(), 3000, (&q).into(), 3000);
    scores.extend(t.candidates((&p).into(), 500, (&q).into(), 700));
    let atoms: Vec<&Score> = scores
        .iter()
        .filter(|s| matches!(s, Score::Atoms { .. }))
        .collect();
    assert!(atoms.len() >= 2, "{scores:?}");
    let mut events: Vec<HeldOutEvents> = Vec::new();
    for (i, s) in scores.iter().enumerate() {
        events.push(HeldOutEvents {
            first: (s.clone(), 0.1 * i as f64 - 0.5),
            second: Some((s.mirrored(), 0.2)),
        });
        events.push(HeldOutEvents {
            first: (s.clone(), 0.0),
            second: None,
        });
    }
    for pair in atoms.windows(2) {
        events.push(HeldOutEvents {
            first: (pair[0].clone(), 0.3),
            second: Some((pair[1].clone(), -0.1)),
        });
    }
    let refs: Vec<&HeldOutEvents> = events.iter().collect();
    let prepared = super::PreparedEvents::new(&refs);
    for s in [&p, &q] {
        let ranges: Vec<std::ops::Range<usize>> = (0..events.len())
            .map(|k| (3000 + 7 * k)..(20_000 - 11 * k))
            .collect();
        let got = crate::testers::count_chunk_many(s, &ranges, &prepared);
        for ((e, r), g) in events.iter().zip(&ranges).zip(&got) {
            assert_eq!(*g, e.count_rows(s, r.clone()), "{:?}", e.first.0);
        }
    }
}

/// The distinct values of every coordinate counted in one pass ([`crate::testers::common::distinct_values_all`])
/// are each coordinate's own count ([`crate::testers::common::distinct_values`]), capped the same way.
#[test]
fn distinct_values_in_one_pass_are_each_coordinates() {
    use crate::testers::common::{distinct_values, distinct_values_all};
    let mut rng = Seed(5).rng(Stream::Other { tag: 14, index: 0 });
    let flat: Vec<f64> = (0..30_000)
        .flat_map(|i| {
            let u: f64 = rng.random();
            [
                u,
                (u * 7.0).floor(),
                if i % 2 == 0 { -0.0 } else { 0.0 },
                (u * 300.0).floor() - 150.0,
                1.0,
                // The direct-mapped cache's sentinel, u64::MAX (a NaN), among other values.
                if i % 3 == 0 {
                    f64::from_bits(u64::MAX)
                } else {
                    (i % 40) as f64 * 0.25
                },
            ]
        })
        .collect();
    let s = Samples::from_flat(6, flat).unwrap();
    for cap in [1, 5, 8, 64, 200, 400] {
        for rows in [0..30_000, 100..2_000, 7..8] {
            let all = distinct_values_all((&s).into(), rows.clone(), cap);
            let each: Vec<usize> = (0..6)
                .map(|j| distinct_values((&s).into(), rows.clone(), j, cap))
                .collect();
            assert_eq!(all, each, "cap {cap}, rows {rows:?}");
        }
    }
}

/// Counting the float-representation view without writing it out
/// ([`super::PreparedEvents::count_block_viewed`]) gives the counts of the written view, for
/// releases of one and two coordinates whose low bits and binades differ between the sides.
#[test]
fn viewed_counts_are_the_written_views_counts() {
    use super::score::Score;
    use crate::testers::Transform;
    for dim in [1usize, 2] {
        let side = |shift: f64, seed: u64| {
            let mut rng = Seed(seed).rng(Stream::Other {
                tag: 15,
                index: dim as u64,
            });
            let flat: Vec<f64> = (0..12_000 * dim)
                .map(|i| {
                    let u: f64 = rng.random::<f64>() * 4.0 - 2.0 + shift;
                    // Some values on a coarse grid (the view's grid level and f32 features
                    // vary), the rest with full mantissas.
                    if i % 3 == 0 {
                        (u * 64.0).round() / 64.0
                    } else {
                        u
                    }
                })
                .collect();
            Samples::from_flat(dim, flat).unwrap()
        };
        let (p, q) = (side(0.3, 6), side(0.0, 7));
        let t = Transform::FloatRepr;
        let (vp, vq) = (t.apply(&p).unwrap(), t.apply(&q).unwrap());
        let scores: Vec<Score> = HockeyStickTester::default()
            .candidates((&vp).into(), 4000, (&vq).into(), 4000)
            .into_iter()
            .filter(|s| matches!(s, Score::Atoms { .. }))
            .collect();
        assert!(!scores.is_empty());
        let events: Vec<HeldOutEvents> = scores
            .iter()
            .map(|s| HeldOutEvents {
                first: (s.clone(), 0.05),
                second: Some((s.mirrored(), 0.0)),
            })
            .collect();
        // The events whose tables a packer can hold (the view's joint table of many coordinates
        // may span too many packed indices: it is then counted from the written view).
        let events: Vec<HeldOutEvents> = events
            .into_iter()
            .filter(|e| super::PreparedEvents::new(&[e]).counts_through(&t, dim))
            .collect();
        assert!(!events.is_empty(), "dimension {dim}");
        let refs: Vec<&HeldOutEvents> = events.iter().collect();
        let prepared = super::PreparedEvents::new(&refs);
        assert!(prepared.counts_through(&t, dim));
        for (raw, view) in [(&p, &vp), (&q, &vq)] {
            let ranges: Vec<std::ops::Range<usize>> = (0..events.len())
                .map(|k| (4000 + k)..(12_000 - 3 * k))
                .collect();
            let viewed = crate::testers::count_chunk_many_viewed(raw, &ranges, &prepared);
            assert_eq!(
                viewed,
                crate::testers::count_chunk_many(view, &ranges, &prepared)
            );
            for ((e, r), got) in events.iter().zip(&ranges).zip(&viewed) {
                assert_eq!(*got, e.count_rows(view, r.clone()));
            }
        }
    }
}

/// The counting sort of discrete scores gives pdqsort's sequence bit for bit: few values
/// (signed zeros, infinities, NaNs of two payloads and signs), exactly as many distinct values
/// as it counts and one more (where it hands over to pdqsort), and continuous values; its runs
/// read (length, rank, count at or above a threshold, negated) as the sorted list does, and so
/// do a side's scores counted block by block ([`super::sorted::sorted_side`]), also when the
/// first block has few values and all the blocks together too many.
#[test]
fn counted_sort_is_the_sort() {
    use super::sorted::{sort_desc, sorted_side};
    let mut rng = Seed(54).rng(Stream::Other {
        tag: 5402,
        index: 0,
    });
    // The shared specials, and two more NaN payloads (the count keeps every bit pattern apart).
    let mut specials = fixtures::SORT_SPECIALS.to_vec();
    specials.extend([
        f64::from_bits(f64::NAN.to_bits() | 1),
        f64::from_bits(u64::MAX),
    ]);
    let few: Vec<f64> = (0..50_000)
        .map(|_| specials[rng.random_range(0..specials.len())])
        .collect();
    let distinct = |k: usize, rng: &mut crate::rng::AuditRng| -> Vec<f64> {
        (0..30_000)
            .map(|i| {
                if i < k {
                    i as f64
                } else {
                    rng.random_range(0..k) as f64
                }
            })
            .collect()
    };
    let continuous: Vec<f64> = (0..30_000).map(|_| rng.random::<f64>() - 0.5).collect();
    // Too many distinct values to count, with every special among them (sorted by their
    // integer keys: negative NaNs first from the bottom, −0 below +0).
    let mut mixed = continuous.clone();
    for (i, &x) in specials.iter().enumerate() {
        mixed[(i * 977) % 30_000] = x;
        mixed.push(x);
    }
    // Few values in the first block of rows counted (2^14), more in all: counted block by
    // block, then sorted as a list.
    let late: Vec<f64> = (0..40_000)
        .map(|i| {
            let k = if i < 20_000 { i % 500 } else { 500 + i % 600 };
            k as f64 * 0.25 - 60.0
        })
        .collect();
    let zeros: Vec<f64> = (0..40_000)
        .map(|i| [0.0, -0.0, 1.5, -2.0, 0.0][i % 5] * f64::from(u8::from(i % 3 != 0)))
        .collect();
    let lists = [
        few,
        mixed,
        distinct(1024, &mut rng),
        distinct(1025, &mut rng),
        continuous,
        late,
        zeros,
        vec![],
        vec![3.0],
    ];
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    for list in lists {
        let mut want = list.clone();
        want.sort_unstable_by(|x, y| y.total_cmp(x));
        let got = sort_desc(list.clone());
        assert_eq!(bits(&got.to_list()), bits(&want), "{} values", list.len());
        same_reads(&got, &want);
        // Negated, with and without −0 written +0, as the list negated.
        for positive_zero in [false, true] {
            let mut neg: Vec<f64> = want.iter().rev().map(|x| -x).collect();
            if positive_zero {
                neg.iter_mut().filter(|x| **x == 0.0).for_each(|x| *x = 0.0);
            }
            let got = got.clone().negated(positive_zero);
            assert_eq!(bits(&got.to_list()), bits(&neg), "negated, {positive_zero}");
            same_reads(&got, &neg);
        }
        // Scored from releases by blocks (every block's values counted, or the list sorted).
        if list.iter().all(|x| x.is_finite()) && !list.is_empty() {
            let s = Samples::from_flat(1, list.clone()).unwrap();
            let score = super::score::Score::Coordinate { j: 0, sign: 1.0 };
            let n = list.len();
            for rows in [0..n, (7.min(n))..n - n / 3] {
                let mut want: Vec<f64> = list[rows.clone()].to_vec();
                want.sort_unstable_by(|x, y| y.total_cmp(x));
                let got = sorted_side(&score, (&s).into(), rows);
                assert_eq!(bits(&got.to_list()), bits(&want));
                same_reads(&got, &want);
            }
        }
    }
}

/// `sorted` reads as the sorted list `list`: its length, its value at every rank, and its count
/// at or above each of its values and of some other thresholds.
fn same_reads(sorted: &super::sorted::Sorted, list: &[f64]) {
    assert_eq!(sorted.len(), list.len());
    for (i, x) in list.iter().enumerate() {
        assert_eq!(sorted.at(i).to_bits(), x.to_bits(), "rank {i}");
    }
    // Counts only where x ≥ t is monotone along the list, as a partition point needs (no NaN
    // among the values: scores are finite or infinite, never NaN).
    if list.iter().any(|x| x.is_nan()) {
        return;
    }
    let others = [
        0.0,
        -0.0,
        1.0,
        -1e300,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    for &t in list.iter().step_by(37).chain(&others) {
        let want = list.partition_point(|&x| x >= t);
        assert_eq!(sorted.count_ge(t), want, "at or above {t}");
    }
}

/// The float-representation view's training rows read packed ([`Rows::Packed`], as a streamed
/// test of JSON lines holds them) give what the written view gives ([`Rows::Values`]), bit for
/// bit: the candidate events (atom tables, near-atoms, the learned fit), every candidate's
/// sorted training scores, the verdict's selection and bound, and the ε and μ estimates, on
/// releases of one and three coordinates with values on coarse grids, f32-exact values,
/// signed zeros and subnormals among full-mantissa ones.
#[test]
fn packed_view_rows_select_as_the_written_view() {
    use super::sorted::sorted_side;
    use crate::testers::Transform;
    use crate::testers::rows::{PackedRows, Rows};
    for dim in [1usize, 3] {
        let side = |shift: f64, seed: u64| {
            let mut rng = Seed(seed).rng(Stream::Other {
                tag: 16,
                index: dim as u64,
            });
            let flat: Vec<f64> = (0..9_000 * dim)
                .map(|i| {
                    let u: f64 = rng.random::<f64>() * 4.0 - 2.0 + shift;
                    match i % 7 {
                        0 | 3 => (u * 64.0).round() / 64.0,
                        1 => f64::from(u as f32),
                        2 if i % 5 == 0 => [0.0, -0.0, 5e-324, -1e-310][i % 4],
                        _ => u,
                    }
                })
                .collect();
            Samples::from_flat(dim, flat).unwrap()
        };
        let (p, q) = (side(0.4, 8), side(0.0, 9));
        let t = Transform::FloatRepr;
        let (vp, vq) = (t.apply(&p).unwrap(), t.apply(&q).unwrap());
        // (At 400 training rows a side, a view coordinate of more than 40 values is continuous:
        // its threshold events, near-atoms and conditional events are offered too.)
        for (np, nq) in [(5_000, 4_500), (400, 380)] {
            let (pp, pq) = (
                PackedRows::float_repr(&p.head(np)).unwrap(),
                PackedRows::float_repr(&q.head(nq)).unwrap(),
            );
            let (wp, wq) = (vp.head(np), vq.head(nq));
            let packed = (Rows::Packed(&pp), Rows::Packed(&pq));
            let written = (Rows::Values(&wp), Rows::Values(&wq));
            for tester in [
                HockeyStickTester::default(),
                HockeyStickTester {
                    form: HockeyStickForm::Variational,
                    ..HockeyStickTester::default()
                },
                // Few values make a coordinate discrete: the view's features with more are
                // counted up to the cap.
                HockeyStickTester {
                    max_discrete_values: 6,
                    ..HockeyStickTester::default()
                },
            ] {
                let cands = tester.candidates(packed.0, np, packed.1, nq);
                assert_eq!(cands, tester.candidates(written.0, np, written.1, nq));
                assert!(!cands.is_empty());
                // The small training split offers every kind of candidate the view can give.
                let offers = |kind: &str| cands.iter().any(|s| format!("{s:?}").starts_with(kind));
                if np < 1000 && tester.form != HockeyStickForm::Variational {
                    assert!(
                        ["Coordinate", "Near", "Atoms", "Conditional", "Learned"]
                            .iter()
                            .all(|k| offers(k))
                    );
                }
                for s in &cands {
                    for (a, b, n) in [(packed.0, written.0, np), (packed.1, written.1, nq)] {
                        let bits =
                            |s: Vec<f64>| s.into_iter().map(f64::to_bits).collect::<Vec<_>>();
                        let (x, y) = (sorted_side(s, a, 7..n), sorted_side(s, b, 7..n));
                        assert_eq!(bits(x.to_list()), bits(y.to_list()), "{s:?}");
                    }
                }
                // The held-out rows: the rest of the written view, the same for both.
                let held = Tail {
                    p: (&vp, np),
                    q: (&vq, nq),
                };
                let claims = [
                    (Divergence::HockeyStick { epsilon: 0.2 }, 0.0),
                    (Divergence::HockeyStick { epsilon: 0.6 }, 0.001),
                ];
                let run = |(a, b): (Rows<'_>, Rows<'_>)| {
                    let mut rng = Seed(3).rng(Stream::Other { tag: 17, index: 0 });
                    let selected = tester
                        .select_and_bound_split(a, b, &held, &claims, 0.05, &mut rng)
                        .unwrap();
                    let eps = tester
                        .estimate_epsilon(a, np, b, nq, &held, 1e-5, 0.05, &mut rng)
                        .unwrap();
                    let mu = tester.estimate_mu(a, np, b, nq, &held, 0.05).unwrap();
                    format!("{selected:?} {eps:?} {mu:?}")
                };
                assert_eq!(run(packed), run(written), "dimension {dim}");
            }
        }
    }
}
