//! Unit tests of the Laplace, randomized-response and attribution-summary events
//! (`privacy_loss_events`, their ledger lines, their composition by [`PldAccountant`] and their
//! RDP): exact values, and reference values of Google's `dp_accounting` 0.6.0.
//!
//! Provenance of the constants: `docs/design/pld-events/reference.py` run with
//! `dp-accounting==0.6.0` (its output: `docs/design/pld-events/reference-output.txt`),
//! `PLDAccountant` defaults (Δ = 1e-4, pessimistic connect-the-dots), δ = 1e-5, add/remove
//! unless said; `_EXACT` values are exact sums (randomized response composed T times).

use super::pld_pmf::Estimate;
use super::pld_privacy_accountant::*;
use super::privacy_loss_events::*;
use crate::Neighboring;
use crate::ledger::{LedgerEvent, SamplingPolicy, ledger_line, parse_ledger_with_policies};
use crate::rdp::{RdpAccountant, other_query_rdp};

const AR: Neighboring = Neighboring::AddRemove;
const RO: Neighboring = Neighboring::ReplaceOne;
const DELTA: f64 = 1e-5;

const LAPLACE_B1_T1: f64 = 0.9999800002999969;
const LAPLACE_B2_T10: f64 = 4.98996231698569;
const POISSON_LAPLACE_Q01_B1_T1000: f64 = 1.1237829009190632;
/// `PLD.from_randomized_response(p, 4).self_compose(50)`, replace-one (p = 4/(e^0.5 + 3)).
const RR_E05_K4_T50: f64 = 13.694790496853523;
const RR_E05_K4_T50_EXACT: f64 = 13.694790496545624;
/// The one-key pair of an attribution summary L = 4, t = 40: `DiscreteLaplaceDpEvent(1/40, 4)`
/// self-composed 100 times.
const ARA_ONE_KEY_L4_T40_T100: f64 = 4.225859198525865;
/// Binary randomized response with ε₀ = 0.1 composed 100 times, exact.
const ARA_RR2_E01_T100_EXACT: f64 = 4.306791372516508;
/// 1000 steps of Poisson Gaussian (q = 0.01, z = 1) and 10 Laplace sums (b = 10).
const MIXED_GAUSS_Q01_Z1_T1000_LAPLACE_B10_T10: f64 = 2.1901824572418263;

fn block(q: f64, steps: u64, queries: &[LedgerEvent]) -> Vec<(LedgerEvent, SamplingPolicy)> {
    let mut v = vec![(
        LedgerEvent::Sampling {
            probability: q,
            repetitions: steps,
        },
        SamplingPolicy::Poisson,
    )];
    v.extend(queries.iter().map(|e| (*e, SamplingPolicy::Poisson)));
    v
}

fn bounds(neighbors: Neighboring, ledger: &[(LedgerEvent, SamplingPolicy)]) -> (f64, f64) {
    let mut a = PldAccountant::new(neighbors);
    a.compose_ledger_with_policies(ledger).unwrap();
    a.epsilon_bounds(DELTA).unwrap()
}

const fn laplace(scale: f64) -> LedgerEvent {
    LedgerEvent::LaplaceSum { scale }
}

/// δ(ε) of k-ary randomized response with ε₀ composed T times, exact (trinomial sums; the
/// losses are i·ε₀ − j·ε₀ with i atoms at +ε₀, j at −ε₀).
fn rr_exact_delta(eps0: f64, k: u64, t: u64, eps: f64) -> f64 {
    let e = eps0.exp();
    let (p, r) = (e / (e + (k - 1) as f64), 1.0 / (e + (k - 1) as f64));
    let mid = (k - 2) as f64 * r;
    let ln_choose =
        |n: u64, m: u64| -> f64 { (1..=m).map(|i| ((n - m + i) as f64 / i as f64).ln()).sum() };
    let mut total = 0.0;
    for i in 0..=t {
        for j in 0..=(t - i) {
            let loss = (i as f64 - j as f64) * eps0;
            if loss <= eps || (mid == 0.0 && i + j < t) {
                continue;
            }
            let rest = t - i - j;
            let ln_mass = ln_choose(t, i)
                + ln_choose(t - i, j)
                + i as f64 * p.ln()
                + j as f64 * r.ln()
                + if rest > 0 {
                    rest as f64 * mid.ln()
                } else {
                    0.0
                };
            total += ln_mass.exp() * -(eps - loss).exp_m1();
        }
    }
    total
}

#[test]
fn one_laplace_sum_brackets_its_exact_epsilon() {
    // δ(ε) = 1 − e^{(ε − 1)/2} for |ε| < 1 (b = 1): ε(δ) = 1 + 2·ln(1 − δ), exactly.
    let exact = 1.0 + 2.0 * (-DELTA).ln_1p();
    let (upper, lower) = bounds(AR, &block(1.0, 1, &[laplace(1.0)]));
    eprintln!(
        "Laplace b=1: upper {upper} lower {lower} exact {exact} dp_accounting {LAPLACE_B1_T1}"
    );
    assert!(lower <= exact && exact <= upper, "{lower} {exact} {upper}");
    assert!(upper - exact < 1e-6, "{upper} vs {exact}");
    assert!((upper - LAPLACE_B1_T1).abs() < 1e-6, "{upper}");
    // Under replace-one the record moves the sum by 2: ε(δ) = 2 + 2·ln(1 − δ).
    let (upper, lower) = bounds(RO, &block(1.0, 1, &[laplace(1.0)]));
    let exact = 2.0 + 2.0 * (-DELTA).ln_1p();
    assert!(
        lower <= exact && exact <= upper && upper - exact < 1e-6,
        "{lower} {upper}"
    );
}

#[test]
fn the_laplace_profile_is_its_closed_form() {
    let pair = LaplacePair {
        a: 0.7,
        q: 1.0,
        add: false,
    };
    for eps in [-1.0, -0.7, -0.3, 0.0, 0.2, 0.69, 0.7, 1.5] {
        let expect = if eps >= 0.7 {
            0.0
        } else if eps <= -0.7 {
            -f64::exp_m1(eps)
        } else {
            -((eps - 0.7) / 2.0).exp_m1()
        };
        let got = pair.delta(eps);
        assert!((got - expect).abs() < 1e-14, "ε = {eps}: {got} vs {expect}");
    }
    // The subsampled "remove" pair at q: δ(ε) ≤ q·δ₁(ε') with e^{ε'} = 1 + (e^ε − 1)/q
    // (amplification by subsampling, Balle, Barthe & Gaboardi 2018), with equality here
    // (Laplace's pair is the tight one).
    let q = 0.1;
    let sub = LaplacePair {
        a: 0.7,
        q,
        add: false,
    };
    for eps in [0.001_f64, 0.01, 0.05] {
        let eps1 = (eps.exp_m1() / q).ln_1p();
        let bound = q * pair.delta(eps1);
        let got = sub.delta(eps);
        assert!(
            got <= bound * (1.0 + 1e-12) && got >= bound * (1.0 - 1e-9),
            "{got} {bound}"
        );
    }
}

#[test]
fn laplace_sums_match_dp_accounting() {
    let (upper, lower) = bounds(AR, &block(1.0, 10, &[laplace(2.0)]));
    eprintln!("10 × Laplace b=2: upper {upper} lower {lower} ref {LAPLACE_B2_T10}");
    assert!((upper / LAPLACE_B2_T10 - 1.0).abs() < 1e-4, "{upper}");
    assert!(lower <= upper && upper - lower < 5e-3, "{lower}");
    let (upper, lower) = bounds(AR, &block(0.01, 1000, &[laplace(1.0)]));
    eprintln!(
        "1000 × Poisson Laplace q=0.01 b=1: upper {upper} lower {lower} ref {POISSON_LAPLACE_Q01_B1_T1000}"
    );
    assert!(
        (upper / POISSON_LAPLACE_Q01_B1_T1000 - 1.0).abs() < 1e-3,
        "{upper}"
    );
    assert!(lower <= upper && lower > 0.9 * upper, "{lower}");
}

#[test]
fn randomized_response_composed_is_exact_by_trinomial_sums() {
    let rr = LedgerEvent::RandomizedResponse {
        epsilon: 0.5,
        values: 4,
    };
    let (upper, lower) = bounds(RO, &block(1.0, 50, &[rr]));
    eprintln!(
        "50 × RR(0.5, 4): upper {upper} lower {lower} exact {RR_E05_K4_T50_EXACT} dp_accounting {RR_E05_K4_T50}"
    );
    // The exact sums here agree with the Python ones (two codes, one value).
    let at = |e: f64| rr_exact_delta(0.5, 4, 50, e);
    assert!(at(RR_E05_K4_T50_EXACT * (1.0 - 1e-9)) > DELTA);
    assert!(at(RR_E05_K4_T50_EXACT * (1.0 + 1e-9)) <= DELTA);
    assert!(lower <= RR_E05_K4_T50_EXACT && RR_E05_K4_T50_EXACT <= upper);
    assert!(upper - RR_E05_K4_T50_EXACT < 5e-3 && RR_E05_K4_T50_EXACT - lower < 5e-3);
    assert!((upper / RR_E05_K4_T50 - 1.0).abs() < 1e-3, "{upper}");
    // The same relation under add/remove (zero-out style: the pair is the record's value
    // changing).
    assert_eq!(bounds(AR, &block(1.0, 50, &[rr])), (upper, lower));
}

#[test]
fn pure_composition_reaches_t_times_epsilon_at_delta_zero() {
    // 10 × RR(0.5, 2): the loss is at most 5, with mass p^10 there; δ(5 − x) = p^10(1 − e^{−x}).
    let rr = LedgerEvent::RandomizedResponse {
        epsilon: 0.5,
        values: 2,
    };
    let mut a = PldAccountant::new(RO);
    a.compose_ledger_with_policies(&block(1.0, 10, &[rr]))
        .unwrap();
    let (upper, _) = a.delta_bounds(5.0 + 10.0 * 1e-4).unwrap();
    // 0 up to the composition's floating-point error bound (≈ 10⁻¹⁰ here, added to δ).
    assert!(upper < 1e-9, "δ above T·ε must vanish: {upper}");
    let p10 = (0.5f64.exp() / (0.5f64.exp() + 1.0)).powi(10);
    let (upper, lower) = a.delta_bounds(4.9).unwrap();
    let exact = p10 * -(-0.1f64).exp_m1();
    assert!(
        lower <= exact * (1.0 + 1e-9) && exact <= upper * (1.0 + 1e-9),
        "{lower} {exact} {upper}"
    );
    assert!((exact - rr_exact_delta(0.5, 2, 10, 4.9)).abs() < 1e-15);
    // Laplace: 5 sums at b = 1 have loss ≤ 5: δ(5 + slack) = 0.
    let mut l = PldAccountant::new(AR);
    l.compose_ledger_with_policies(&block(1.0, 5, &[laplace(1.0)]))
        .unwrap();
    assert!(l.delta_bounds(5.0 + 5e-4).unwrap().0 < 1e-9);
    assert!(l.delta_bounds(4.9).unwrap().1 > 0.0);
}

#[test]
fn attribution_summary_is_bracketed_by_its_two_pairs() {
    let ara = LedgerEvent::AttributionSummary {
        l1_budget: 4,
        scale: 40.0,
    };
    let (upper, lower) = bounds(AR, &block(1.0, 100, &[ara]));
    eprintln!(
        "100 × ARA(L=4, t=40): upper {upper} (binary RR ε₀ = 0.1 exact {ARA_RR2_E01_T100_EXACT}), lower {lower} (one key, dp_accounting {ARA_ONE_KEY_L4_T40_T100})"
    );
    assert!(upper >= ARA_RR2_E01_T100_EXACT && upper - ARA_RR2_E01_T100_EXACT < 2e-3);
    assert!(lower <= ARA_ONE_KEY_L4_T40_T100 && ARA_ONE_KEY_L4_T40_T100 - lower < 2e-3);
    // Replace-one: the upper pair is RR with 2ε₀, the lower one the one-key pair twice.
    let (u2, l2) = bounds(RO, &block(1.0, 50, &[ara]));
    let rr2 = bounds(
        RO,
        &block(
            1.0,
            50,
            &[LedgerEvent::RandomizedResponse {
                epsilon: 0.2,
                values: 2,
            }],
        ),
    );
    assert_eq!(u2, rr2.0);
    assert!(
        l2 <= ARA_ONE_KEY_L4_T40_T100 && ARA_ONE_KEY_L4_T40_T100 - l2 < 2e-3,
        "{l2}"
    );
}

/// The lower bound's pair is a realized one; the upper bound does not rely on the one-key pair
/// being the worst. This checks, exactly, that splitting the budget over two keys never gives
/// a larger δ(ε) than one key, the fact an upper bound from the one-key pair would need.
#[test]
fn splitting_the_budget_over_keys_is_never_worse_than_one_key() {
    fn convolve(a: &[(f64, f64)], b: &[(f64, f64)]) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        for &(la, pa) in a {
            for &(lb, pb) in b {
                out.push((la + lb, pa * pb));
            }
        }
        out
    }
    let delta = |atoms: &[(f64, f64)], eps: f64| -> f64 {
        atoms
            .iter()
            .filter(|(l, _)| *l > eps)
            .map(|(l, p)| -p * (eps - l).exp_m1())
            .sum()
    };
    for t in [0.5, 1.0, 2.0, 4.0] {
        for budget in 2..=6u64 {
            let one = Discrete::discrete_laplace(budget, t).atoms();
            for s in 1..budget {
                let split = convolve(
                    &Discrete::discrete_laplace(s, t).atoms(),
                    &Discrete::discrete_laplace(budget - s, t).atoms(),
                );
                for (a, b) in [
                    (one.clone(), split.clone()),
                    (convolve(&one, &one), convolve(&split, &split)),
                ] {
                    for i in 0..200 {
                        let eps = i as f64 * 0.05;
                        assert!(
                            delta(&b, eps) <= delta(&a, eps) + 1e-15,
                            "L = {budget} split {s}/{} at t = {t}, ε = {eps}",
                            budget - s
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn a_mixed_ledger_matches_dp_accounting() {
    let mut ledger = block(
        0.01,
        1000,
        &[LedgerEvent::GaussianSum {
            noise_multiplier: 1.0,
        }],
    );
    ledger.extend(block(1.0, 10, &[laplace(10.0)]));
    let (upper, lower) = bounds(AR, &ledger);
    eprintln!("mixed: upper {upper} lower {lower} ref {MIXED_GAUSS_Q01_Z1_T1000_LAPLACE_B10_T10}");
    assert!((upper / MIXED_GAUSS_Q01_Z1_T1000_LAPLACE_B10_T10 - 1.0).abs() < 1e-3);
    assert!(lower <= upper);
    // A full batch may hold any mix: a Gaussian, a Laplace and an RR query on one sample.
    let full = block(
        1.0,
        3,
        &[
            LedgerEvent::GaussianSum {
                noise_multiplier: 2.0,
            },
            laplace(5.0),
            LedgerEvent::RandomizedResponse {
                epsilon: 0.1,
                values: 3,
            },
        ],
    );
    let (u, l) = bounds(AR, &full);
    assert!(l <= u && u.is_finite());
}

#[test]
fn unsupported_combinations_are_refused_naming_the_event() {
    let rr = LedgerEvent::RandomizedResponse {
        epsilon: 1.0,
        values: 2,
    };
    let refuse = |n: Neighboring, ledger: Vec<(LedgerEvent, SamplingPolicy)>| {
        let mut a = PldAccountant::new(n);
        let e = a
            .compose_ledger_with_policies(&ledger)
            .unwrap_err()
            .to_string();
        assert!(a.noise_events().is_empty() && a.events().is_empty());
        e
    };
    let e = refuse(AR, block(0.5, 3, &[rr]));
    assert!(
        e.contains("ledger event 2") && e.contains("randomized-response") && e.contains("allowed:"),
        "{e}"
    );
    let e = refuse(RO, block(0.5, 3, &[laplace(1.0)]));
    assert!(
        e.contains("laplace-sum") && e.contains("replace-one") && e.contains("allowed:"),
        "{e}"
    );
    let e = refuse(AR, block(0.5, 3, &[laplace(1.0), laplace(2.0)]));
    assert!(
        e.contains("shares sampling event 1") && e.contains("allowed: one query"),
        "{e}"
    );
    let e = refuse(
        AR,
        block(
            0.5,
            3,
            &[
                LedgerEvent::GaussianSum {
                    noise_multiplier: 1.0,
                },
                laplace(2.0),
            ],
        ),
    );
    assert!(e.contains("shares sampling event 1"), "{e}");
    let e = refuse(AR, block(1.0, 3, &[laplace(-1.0)]));
    assert!(
        e.contains("\"scale\" = -1") && e.contains("allowed: a finite number > 0"),
        "{e}"
    );
}

#[test]
fn new_ledger_lines_read_and_write_back_byte_identically() {
    let text = "{\"event\":\"sampling\",\"probability\":0.01,\"repetitions\":100}\n\
                {\"event\":\"laplace-sum\",\"scale\":2.5}\n\
                {\"event\":\"sampling\",\"probability\":1.0,\"repetitions\":3}\n\
                {\"event\":\"randomized-response\",\"epsilon\":0.5,\"values\":4}\n\
                {\"event\":\"attribution-summary\",\"l1_budget\":65536,\"scale\":65536.0}\n\
                {\"event\":\"gaussian-sum\",\"noise_multiplier\":1.1}";
    let parsed = parse_ledger_with_policies(text).unwrap();
    let written: Vec<String> = parsed.iter().map(|(_, e, p)| ledger_line(e, *p)).collect();
    assert_eq!(written.join("\n"), text);
    let bad = parse_ledger_with_policies(
        "{\"event\":\"randomized-response\",\"epsilon\":0.5,\"values\":1}",
    )
    .unwrap_err()
    .to_string();
    assert!(
        bad.contains("\"values\" = 1") && bad.contains("≥ 2"),
        "{bad}"
    );
    let early = parse_ledger_with_policies("{\"event\":\"laplace-sum\",\"scale\":1}")
        .unwrap_err()
        .to_string();
    assert!(
        early.contains("a laplace-sum event before any sampling event"),
        "{early}"
    );
}

#[test]
fn rdp_of_the_new_queries_is_their_closed_form_and_sampled_ones_are_refused() {
    // Laplace b = 1 at α = 2: ln(2/3·e + 1/3·e^{−2}).
    let r = other_query_rdp(&laplace(1.0), 2.0);
    let expect = (2.0 / 3.0 * 1f64.exp() + 1.0 / 3.0 * (-2f64).exp()).ln();
    assert!((r - expect).abs() < 1e-14, "{r} {expect}");
    // RR(ε, k) at α = 2: ln Σ P²/Q directly.
    let (eps, k) = (0.8f64, 5u64);
    let (p, q) = (eps.exp() / (eps.exp() + 4.0), 1.0 / (eps.exp() + 4.0));
    let direct = (p * p / q + q * q / p + 3.0 * q).ln();
    let r = other_query_rdp(
        &LedgerEvent::RandomizedResponse {
            epsilon: eps,
            values: k,
        },
        2.0,
    );
    assert!((r - direct).abs() < 1e-14, "{r} {direct}");
    // Pure ε-DP ⇒ ε-RDP at every order (the bound never exceeds ε).
    for alpha in [1.5, 4.0, 64.0] {
        assert!(other_query_rdp(&laplace(0.5), alpha) <= 2.0 + 1e-12);
    }
    let mut acct = RdpAccountant::new();
    acct.record_sampling(1.0, 10).unwrap();
    acct.record_other_query(laplace(1.0)).unwrap();
    let (e, _) = acct.epsilon(DELTA).unwrap();
    let (pld_upper, _) = bounds(AR, &block(1.0, 10, &[laplace(1.0)]));
    assert!(e >= pld_upper * 0.99, "RDP {e} vs PLD {pld_upper}");
    acct.record_sampling(0.1, 10).unwrap();
    let m = acct
        .record_other_query(laplace(1.0))
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("laplace-sum") && m.contains("q = 0.1") && m.contains("allowed: probability 1"),
        "{m}"
    );
}

#[test]
fn the_estimates_sit_on_either_side_for_one_step_profiles() {
    // One step: the pessimistic PLD's δ is ≥ the exact δ, the optimistic one's ≤.
    let d = 1e-4;
    let cases: Vec<Box<dyn Profile>> = vec![
        Box::new(LaplacePair {
            a: 0.3,
            q: 0.05,
            add: false,
        }),
        Box::new(LaplacePair {
            a: 0.3,
            q: 0.05,
            add: true,
        }),
        Box::new(Discrete::randomized_response(0.37, 6)),
        Box::new(Discrete::discrete_laplace(7, 3.3)),
    ];
    for p in &cases {
        let up = pessimistic_profile_pmf(p.as_ref(), d, "test").unwrap();
        let low = optimistic_profile_pmf(p.as_ref(), d, "test").unwrap();
        for i in 0..60 {
            let eps = -0.3 + i as f64 * 0.0123;
            let exact = p.delta(eps);
            assert!(up.delta(d, eps) >= exact - 1e-14, "ε = {eps}");
            assert!(low.delta(d, eps) <= exact + 1e-14, "ε = {eps}");
            assert!(up.delta(d, eps) - low.delta(d, eps) < 1e-3, "ε = {eps}");
        }
    }
    let _ = Estimate::Pessimistic;
}
