//! Unit tests of the PLD accountant (`pld/`).

use super::common::*;
use super::pld_pmf::*;
use super::pld_privacy_accountant::*;
use super::privacy_loss_distribution::*;
use super::privacy_loss_mechanism::*;
use crate::AccountingError;
use crate::Neighboring;
use crate::math::{analytic_gaussian_sigma, gaussian_dp_delta};
use crate::rdp::{RdpAccountant, gaussian_exact_epsilon};

const AR: Neighboring = Neighboring::AddRemove;
const RO: Neighboring = Neighboring::ReplaceOne;

fn message(e: AccountingError) -> String {
    e.to_string()
}

/// Reference: Google dp_accounting 0.6.0, `PLDAccountant()` (add/remove, Δ = 1e-4,
/// connect-the-dots), `PoissonSampledDpEvent(q, GaussianDpEvent(z))` self-composed T times,
/// `get_epsilon(1e-5)`, given to 8 significant digits.
const REFERENCES: [(f64, f64, u64, f64); 3] = [
    (0.01, 1.1, 6000, 3.8997714),
    (0.01, 4.0, 1000, 0.2721729),
    (1.0, 1.0, 1, 4.3771781),
];

#[test]
fn dp_accounting_reference_values() {
    // Measured (upper, lower): (3.8997736, 3.8997312), (0.27217313, 0.27211762),
    // (4.3771781, 4.3771781); upper − reference ≤ 6e-7 relative.
    for (q, z, t, reference) in REFERENCES {
        let (upper, lower) = epsilon_bounds(q, z, t, 1e-5, AR).unwrap();
        eprintln!(
            "q={q} z={z} T={t}: upper {upper:.9} ({:+.2e}), lower {lower:.9} ({:+.2e})",
            upper / reference - 1.0,
            lower / reference - 1.0
        );
        assert!(upper >= reference, "{upper} < {reference}");
        assert!(upper <= reference * 1.001, "{upper} vs {reference}");
        assert!(lower <= upper);
        assert!(lower >= reference * 0.999, "{lower} vs {reference}");
    }
}

#[test]
fn pld_epsilon_below_rdp_epsilon() {
    for (q, z, t, _) in REFERENCES {
        let (upper, _) = epsilon_bounds(q, z, t, 1e-5, AR).unwrap();
        let mut rdp = RdpAccountant::new();
        rdp.compose_poisson_gaussian(q, z, t).unwrap();
        let (rdp_eps, _) = rdp.epsilon(1e-5).unwrap();
        assert!(
            upper <= rdp_eps,
            "q={q} z={z} T={t}: PLD {upper} > RDP {rdp_eps}"
        );
    }
}

/// Full-batch Gaussian steps are exactly μ-GDP, μ = √T/z (2√T/z under replace-one): the
/// pessimistic δ is above the exact curve, the optimistic one below, at several ε; ε within
/// 0.1 % of the exact one. (Parameters not used elsewhere: z = 3, T = 40 and z = 5, T = 20.)
#[test]
fn full_batch_matches_gaussian_dp() {
    for (neighbors, z, t, sensitivity) in [(AR, 3.0, 40_u64, 1.0), (RO, 5.0, 20, 2.0)] {
        let mu = sensitivity * (t as f64).sqrt() / z;
        let d = DEFAULT_DISCRETIZATION;
        let upper = poisson_gaussian_pld(1.0, z, t, neighbors, Estimate::Pessimistic, d).unwrap();
        let lower = poisson_gaussian_pld(1.0, z, t, neighbors, Estimate::Optimistic, d).unwrap();
        for eps in [0.0, 0.3, 1.0, 2.345_67, 4.0, 7.5] {
            let exact = gaussian_dp_delta(eps, mu);
            let (du, dl) = (upper.delta(eps), lower.delta(eps));
            assert!(
                du >= exact * (1.0 - 1e-9),
                "{neighbors} ε={eps}: {du} < {exact}"
            );
            assert!(
                dl <= exact * (1.0 + 1e-9),
                "{neighbors} ε={eps}: {dl} > {exact}"
            );
            assert!(
                (du - dl) <= 1e-3 * exact + 1e-15,
                "{neighbors} ε={eps}: {du} vs {dl}"
            );
        }
        for delta in [1e-3, 1e-5, 1e-7] {
            // gaussian_exact_epsilon takes z/sensitivity as the noise multiplier.
            let exact = gaussian_exact_epsilon(z / sensitivity, t, delta).unwrap();
            let (eu, el) = (upper.epsilon(delta).unwrap(), lower.epsilon(delta).unwrap());
            assert!(
                eu >= exact && eu <= exact * 1.001,
                "{neighbors} δ={delta}: {eu} vs {exact}"
            );
            assert!(
                el <= exact && el >= exact * 0.999,
                "{neighbors} δ={delta}: {el} vs {exact}"
            );
        }
    }
}

type Density<'a> = Box<dyn Fn(f64) -> f64 + 'a>;

/// Hockey-stick divergence ∫ (p − e^ε q)₊ of one step's pair by composite Simpson on a fine grid.
fn quadrature_delta(q: f64, z: f64, direction: Direction, eps: f64) -> f64 {
    let phi = |x: f64| (-0.5 * (x / z).powi(2)).exp() / (z * (2.0 * std::f64::consts::PI).sqrt());
    let mix = |x: f64, shift: f64| (1.0 - q) * phi(x) + q * phi(x - shift);
    let (p, qq): (Density, Density) = match direction {
        Direction::Remove => (Box::new(move |x| mix(x, -1.0)), Box::new(phi)),
        Direction::Add => (Box::new(phi), Box::new(move |x| mix(x, 1.0))),
        Direction::Replace => (
            Box::new(move |x| mix(x, -1.0)),
            Box::new(move |x| mix(x, 1.0)),
        ),
    };
    let e = eps.exp();
    let f = |x: f64| (p(x) - e * qq(x)).max(0.0);
    let (a, b) = (-1.0 - 40.0 * z, 1.0 + 40.0 * z);
    let n = 400_000;
    let h = (b - a) / n as f64;
    let mut sum = f(a) + f(b);
    for i in 1..n {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += w * f(a + h * i as f64);
    }
    sum * h / 3.0
}

#[test]
fn one_subsampled_step_matches_quadrature() {
    let d = DEFAULT_DISCRETIZATION;
    for (q, z) in [(0.05, 0.8), (0.3, 2.0)] {
        for (neighbors, directions) in [
            (AR, vec![Direction::Remove, Direction::Add]),
            (RO, vec![Direction::Replace]),
        ] {
            let upper = Pld::poisson_gaussian(q, z, neighbors, Estimate::Pessimistic, d).unwrap();
            let lower = Pld::poisson_gaussian(q, z, neighbors, Estimate::Optimistic, d).unwrap();
            for eps in [0.01, 0.1, 0.5, 1.234_56, 2.0] {
                let exact = directions
                    .iter()
                    .map(|&dir| quadrature_delta(q, z, dir, eps))
                    .fold(0.0, f64::max);
                // The closed-form δ of the pair agrees with the quadrature.
                let closed = directions
                    .iter()
                    .map(|&dir| Pair::new(q, z, dir).delta(eps))
                    .fold(0.0, f64::max);
                // (Simpson is O(h²) at the kink of (·)₊: agreement to 1e-7 relative.)
                assert!(
                    (closed - exact).abs() <= 1e-7 * exact + 1e-13,
                    "{closed} vs {exact}"
                );
                let (du, dl) = (upper.delta(eps), lower.delta(eps));
                // Against the closed form (which the quadrature just confirmed).
                let tol = 1e-9 * closed + 1e-15;
                assert!(
                    du >= closed - tol,
                    "q={q} z={z} {neighbors} ε={eps}: {du} < {closed}"
                );
                assert!(
                    dl <= closed + tol,
                    "q={q} z={z} {neighbors} ε={eps}: {dl} > {closed}"
                );
                assert!(
                    du - dl <= 1e-4 * exact + 1e-12,
                    "q={q} z={z} ε={eps}: {du} vs {dl}"
                );
            }
        }
    }
}

#[test]
fn delta_non_increasing_in_epsilon() {
    for neighbors in [AR, RO] {
        for estimate in [Estimate::Pessimistic, Estimate::Optimistic] {
            let pld = poisson_gaussian_pld(0.02, 1.5, 300, neighbors, estimate, 1e-3).unwrap();
            let mut previous = f64::INFINITY;
            for i in 0..=400 {
                let eps = -1.0 + 0.0137 * f64::from(i);
                let delta = pld.delta(eps);
                assert!(delta <= previous, "{neighbors} {estimate:?} ε={eps}");
                assert!((0.0..=1.0).contains(&delta));
                previous = delta;
            }
        }
    }
}

#[test]
fn epsilon_non_increasing_in_noise() {
    for neighbors in [AR, RO] {
        let mut previous = f64::INFINITY;
        for i in 0..12 {
            let z = 0.7 + 0.25 * f64::from(i);
            let (upper, lower) = epsilon_bounds(0.05, z, 200, 1e-6, neighbors).unwrap();
            assert!(upper <= previous, "{neighbors} z={z}: {upper} > {previous}");
            assert!(lower <= upper);
            previous = upper;
        }
    }
}

#[test]
fn replace_one_costs_more_than_add_remove() {
    let (ar, _) = epsilon_bounds(0.01, 1.1, 500, 1e-5, AR).unwrap();
    let (ro, _) = epsilon_bounds(0.01, 1.1, 500, 1e-5, RO).unwrap();
    assert!(ro > ar, "{ro} vs {ar}");
}

#[test]
fn single_fft_agrees_with_repeated_squaring() {
    let d = DEFAULT_DISCRETIZATION;
    for (q, z, t) in [(0.01, 1.1, 6000_u64), (0.01, 4.0, 1000)] {
        for direction in [Direction::Remove, Direction::Add] {
            let one = pessimistic_pmf(&Pair::new(q, z, direction), d).unwrap();
            let a = self_compose_pmf(&one, t, Estimate::Pessimistic, d).unwrap();
            let b = self_compose_pmf_by_squaring(&one, t, Estimate::Pessimistic, d);
            let (ea, eb) = (a.epsilon(d, 1e-5), b.epsilon(d, 1e-5));
            assert!((ea - eb).abs() <= 1e-6 * eb, "{direction:?}: {ea} vs {eb}");
            for eps in [0.1, 1.0, 3.0] {
                let (da, db) = (a.delta(d, eps), b.delta(d, eps));
                // Absolute agreement to 1e-12: round-off in tiny δ (≈ 5e-13 measured at ε = 1, z = 4).
                assert!(
                    (da - db).abs() <= 1e-5 * db + 1e-12,
                    "{direction:?} ε={eps}: {da} vs {db}"
                );
            }
        }
    }
}

/// T = 10⁴ steps at q = 0.01, z = 1.1 (add/remove), pessimistic: measured 0.11 s in release
/// mode on 2 cores (both directions; the optimistic PLD adds ≈ 0.17 s, mostly building the
/// merged buckets). Not a timed test.
#[test]
fn ten_thousand_steps() {
    let d = DEFAULT_DISCRETIZATION;
    let pld = poisson_gaussian_pld(0.01, 1.1, 10_000, AR, Estimate::Pessimistic, d).unwrap();
    let eps = pld.epsilon(1e-5).unwrap();
    let (at_6000, _) = epsilon_bounds(0.01, 1.1, 6000, 1e-5, AR).unwrap();
    let mut rdp = RdpAccountant::new();
    rdp.compose_poisson_gaussian(0.01, 1.1, 10_000).unwrap();
    assert!(eps > at_6000 && eps < rdp.epsilon(1e-5).unwrap().0, "{eps}");
}

#[test]
fn accountant_composes_heterogeneous_events() {
    let d = DEFAULT_DISCRETIZATION;
    let mut acct = PldAccountant::new(AR);
    assert_eq!(acct.epsilon_bounds(1e-5).unwrap(), (0.0, 0.0));
    acct.compose_poisson_gaussian(0.01, 2.0, 300).unwrap();
    acct.compose_poisson_gaussian(1.0, 20.0, 10).unwrap();
    acct.compose_poisson_gaussian(0.01, 2.0, 200).unwrap();
    assert_eq!(acct.events().len(), 3);
    let (upper, lower) = acct.epsilon_bounds(1e-5).unwrap();
    // By hand: the (0.01, 2.0) events merged to 500 steps, composed with the full-batch ones.
    let a = poisson_gaussian_pld(0.01, 2.0, 500, AR, Estimate::Pessimistic, d).unwrap();
    let b = poisson_gaussian_pld(1.0, 20.0, 10, AR, Estimate::Pessimistic, d).unwrap();
    let by_hand = a.compose(&b).unwrap().epsilon(1e-5).unwrap();
    assert!(
        (upper - by_hand).abs() <= 1e-9 * by_hand,
        "{upper} vs {by_hand}"
    );
    assert!(lower <= upper && lower >= 0.999 * upper);
    assert!(upper > a.epsilon(1e-5).unwrap() && upper > b.epsilon(1e-5).unwrap());
    let mut rdp = RdpAccountant::new();
    rdp.compose_poisson_gaussian(0.01, 2.0, 500).unwrap();
    rdp.compose_poisson_gaussian(1.0, 20.0, 10).unwrap();
    assert!(upper <= rdp.epsilon(1e-5).unwrap().0);
    let (du, dl) = acct.delta_bounds(upper).unwrap();
    assert!(du <= 1e-5 && dl <= du);
}

#[test]
fn noise_multiplier_search() {
    // q = 1, T = 1: the exact answer is the analytic Gaussian σ (Balle & Wang 2018).
    let sigma = analytic_gaussian_sigma(1.0, 1e-5, 1.0).unwrap();
    let z = noise_multiplier_for(1.0, 1, 1.0, 1e-5, AR).unwrap();
    assert!(
        z >= sigma * (1.0 - 1e-6) && z <= sigma * 1.001,
        "{z} vs {sigma}"
    );
    let (eps, _) = epsilon_bounds(1.0, z, 1, 1e-5, AR).unwrap();
    assert!(eps <= 1.0);
    // Subsampled: the found z meets the target, and 0.1 % less noise does not.
    let z = noise_multiplier_for(0.05, 50, 0.8, 1e-6, AR).unwrap();
    assert!(epsilon_bounds(0.05, z, 50, 1e-6, AR).unwrap().0 <= 0.8);
    assert!(epsilon_bounds(0.05, z * 0.999, 50, 1e-6, AR).unwrap().0 > 0.8);
    // Unreachable target: names it.
    let e = message(noise_multiplier_for(1.0, 10, 1e-6, 1e-5, AR).unwrap_err());
    assert!(
        e.contains("target epsilon = 1e-6") && e.contains("10000"),
        "{e}"
    );
    let e = message(noise_multiplier_for(1.0, 10, f64::NAN, 1e-5, AR).unwrap_err());
    assert!(
        e.contains("target epsilon = NaN") && e.contains("allowed"),
        "{e}"
    );
}

#[test]
fn validation_errors_name_value_and_range() {
    let cases: Vec<(AccountingError, &str)> = vec![
        (
            epsilon_bounds(0.0, 1.0, 10, 1e-5, AR).unwrap_err(),
            "q = 0;",
        ),
        (
            epsilon_bounds(1.5, 1.0, 10, 1e-5, AR).unwrap_err(),
            "q = 1.5;",
        ),
        (
            epsilon_bounds(f64::NAN, 1.0, 10, 1e-5, AR).unwrap_err(),
            "q = NaN;",
        ),
        (
            epsilon_bounds(0.1, 0.0, 10, 1e-5, AR).unwrap_err(),
            "z = 0;",
        ),
        (
            epsilon_bounds(0.1, -1.0, 10, 1e-5, AR).unwrap_err(),
            "z = -1;",
        ),
        (
            epsilon_bounds(0.1, f64::INFINITY, 10, 1e-5, AR).unwrap_err(),
            "z = inf;",
        ),
        (epsilon_bounds(0.1, 1.0, 0, 1e-5, AR).unwrap_err(), "T = 0;"),
        (
            epsilon_bounds(0.1, 1.0, 10, 0.0, AR).unwrap_err(),
            "delta = 0;",
        ),
        (
            epsilon_bounds(0.1, 1.0, 10, 1.0, AR).unwrap_err(),
            "delta = 1;",
        ),
        (
            noise_multiplier_for(0.1, 10, 1.0, -0.5, RO).unwrap_err(),
            "delta = -0.5;",
        ),
        (
            PldAccountant::with_discretization(AR, 0.0).unwrap_err(),
            "interval = 0;",
        ),
        (
            poisson_gaussian_pld(0.5, 0.001, 1, AR, Estimate::Pessimistic, 1e-4).unwrap_err(),
            "grid points",
        ),
    ];
    for (e, needle) in cases {
        let m = message(e);
        assert!(m.contains(needle) && m.contains("allowed"), "{m}");
    }
    let mut acct = PldAccountant::new(AR);
    assert!(acct.compose_poisson_gaussian(0.1, 1.0, 0).is_err());
    assert!(acct.events().is_empty());
    // Composing PLDs of different grids or estimates is refused.
    let a = Pld::identity(1e-4, Estimate::Pessimistic).unwrap();
    let b = Pld::identity(1e-3, Estimate::Pessimistic).unwrap();
    let c = Pld::identity(1e-4, Estimate::Optimistic).unwrap();
    assert!(message(a.compose(&b).unwrap_err()).contains("allowed"));
    assert!(a.compose(&c).is_err());
    assert!(a.self_compose(0).is_err());
    assert!(a.epsilon(2.0).is_err());
    assert_eq!(a.epsilon(1e-5).unwrap(), 0.0);
    assert!(a.delta(f64::NAN).is_nan());
}

#[test]
fn helpers() {
    assert_eq!(fast_len(1), 1);
    assert_eq!(fast_len(7), 8);
    assert_eq!(fast_len(11), 12);
    assert_eq!(fast_len(1001), 1024);
    for len in [1_000_001_usize, 123_457, 99_999] {
        let mut n = fast_len(len);
        assert!(n >= len && n <= len.next_power_of_two());
        for f in [2, 3, 5] {
            while n.is_multiple_of(f) {
                n /= f;
            }
        }
        assert_eq!(n, 1, "{len}");
    }
    // log Φ continues ln Φ smoothly into the asymptotic region.
    let (a, b) = (log_ndtr(-30.0), ndtr(-30.0).ln());
    assert!((a - b).abs() < 1e-10 * b.abs());
    assert!(log_ndtr(-1e3).is_finite());
    // Φ and ln Φ against reference values (mpmath 1.3 at 50 digits, ncdf(x) and log(ncdf(x)),
    // rounded to f64). Φ is good to crate::math::NORMAL_CDF_REL_ERROR relative (statrs' erfc),
    // so ln Φ to that much absolute where it is ln Φ (x ≥ −30); the asymptotic series below −30
    // is good to 1e-13 relative.
    let rel = crate::math::NORMAL_CDF_REL_ERROR;
    for (x, want) in [(-5.0, 2.866515718791939e-7), (1.5, 0.9331927987311419)] {
        let got = ndtr(x);
        assert!(
            (got / want - 1.0).abs() < rel,
            "Φ({x}) = {got}, want {want}"
        );
    }
    for (x, want) in [
        (-10.0, -53.23128515051247f64),
        (-30.0, -454.3212439563432),
        (-31.0, -484.85396362717927),
        (-40.0, -804.6084420137538),
        (-100.0, -5005.524208694205),
        (-1000.0, -500007.82669481216),
    ] {
        let got = log_ndtr(x);
        let tolerance = if x >= -30.0 { rel } else { 1e-13 * want.abs() };
        assert!(
            (got - want).abs() < tolerance,
            "ln Φ({x}) = {got}, want {want}"
        );
    }
    // Inverse loss round-trips.
    for direction in [Direction::Remove, Direction::Add, Direction::Replace] {
        for q in [0.01, 0.5, 1.0] {
            let pair = Pair::new(q, 1.3, direction);
            for x in [-3.0, -0.2, 0.0, 0.7, 2.5] {
                let l = pair.loss(x);
                let back = pair.x_of_loss(l);
                assert!((back - x).abs() < 1e-8, "{direction:?} q={q} x={x}: {back}");
            }
        }
    }
}

/// Small q (q ≪ Δ): the optimistic PLD is the bound, not 0. At the Connect-the-Dots post's
/// setting (q = 2·10⁻⁵, z = 0.5, δ = 10⁻⁸) the unshifted grid gave 0 at T = 10⁵ and 0.418 at
/// 3·10⁴ (pessimistic 2.2849 and 1.9102); on the shifted grid, tilted: (2.28438, 2.28394) and
/// (1.91015, 1.90994), and at δ = 10⁻⁹ (2.99850, 2.99810): within 2·10⁻⁴ relative.
#[test]
fn optimistic_bound_at_small_sampling_rate() {
    for (t, delta) in [(100_000_u64, 1e-8), (30_000, 1e-8), (100_000, 1e-9)] {
        let (upper, lower) = epsilon_bounds(2e-5, 0.5, t, delta, AR).unwrap();
        assert!(
            lower <= upper && lower >= 0.999 * upper,
            "T={t} δ={delta}: lower {lower} vs upper {upper}"
        );
    }
    // At δ = 1e-9 the untilted FFT's round-off once made the optimistic ε 3.00451, above
    // dp_accounting's pessimistic 2.99827 on a grid of 5e-5 (its 1e-4 grid: 3.00473).
    let (upper, lower) = epsilon_bounds(2e-5, 0.5, 100_000, 1e-9, AR).unwrap();
    assert!(lower <= 2.998_273_68 && upper >= lower, "{lower} {upper}");
    // One step on the shifted grid stays below the closed-form δ, at ε on and off its grid.
    let d = DEFAULT_DISCRETIZATION;
    for direction in [Direction::Remove, Direction::Add, Direction::Replace] {
        for q in [2e-5, 1e-9] {
            let pair = Pair::new(q, 0.5, direction);
            let pmf = optimistic_pmf(&pair, d).unwrap();
            for eps in [0.0, 1e-6, 3.3e-5, 0.01, 0.5, 2.0, 7.654_321] {
                let (lower, exact) = (pmf.delta(d, eps), pair.delta(eps));
                assert!(
                    lower <= exact * (1.0 + 1e-9) + 1e-15,
                    "{direction:?} q={q} ε={eps}: {lower} > {exact}"
                );
            }
        }
    }
}

/// The floating-point error bounds hold, measured against compositions whose error is only
/// relative (direct convolution: sums of non-negative products), on one step of the
/// subsampled Gaussian (q = 0.05, z = 0.8) on a coarse grid. Measured: the FFT convolution's
/// ℓ¹ error is 2–3·10⁻¹⁵, about 500 times below its bound; the 8-fold single FFT (tilted and
/// not) likewise.
#[test]
fn floating_point_error_bounds_hold() {
    let d = 0.01;
    let direct = |a: &[f64], b: &[f64]| -> Vec<f64> {
        let mut out = vec![0.0; a.len() + b.len() - 1];
        for (i, &x) in a.iter().enumerate() {
            for (j, &y) in b.iter().enumerate() {
                out[i + j] += x * y;
            }
        }
        out
    };
    let l1 = |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum() };
    let one = pessimistic_pmf(&Pair::new(0.05, 0.8, Direction::Remove), d).unwrap();
    assert!(one.probs.len() > 300, "{}", one.probs.len());
    // One convolution by FFT (the pmf with itself and with a shifted copy).
    let other: Vec<f64> = one.probs.iter().rev().copied().collect();
    for b in [&one.probs, &other] {
        let (fft, bound) = convolve(&one.probs, b);
        let exact = direct(&one.probs, b);
        let error = l1(&fft, &exact);
        eprintln!("convolution: error {error:.2e}, bound {bound:.2e}");
        assert!(error <= bound && bound < 1e-10, "{error} vs {bound}");
    }
    // T-fold self-composition by one FFT, untilted and tilted, against repeated direct
    // convolution (the Chernoff window cuts ≤ 1e-15 of mass: compared on the window).
    let times = 8_u64;
    let mut exact = vec![1.0];
    for _ in 0..times {
        exact = direct(&exact, &one.probs);
    }
    for lambda in [0.0, 1.5] {
        let input = tilt_pmf(&one, lambda, d);
        let composed = self_compose_pmf(&input, times, Estimate::Optimistic, d).unwrap();
        let start = (composed.offset - one.offset * times as i64) as usize;
        let error: f64 = (0..composed.probs.len())
            .map(|i| {
                // The exact tilted mass of entry i.
                let loss = composed.loss(d, i);
                let e = exact[start + i] * (lambda * loss - composed.log_scale).exp();
                (composed.probs[i] - e).abs()
            })
            .sum();
        eprintln!(
            "{times}-fold, tilt {lambda}: error {error:.2e}, bound {:.2e}",
            composed.error
        );
        assert!(error <= composed.error, "{error} vs {}", composed.error);
        assert!(composed.error < 1e-9, "{}", composed.error);
    }
}

/// ε at losses beyond 745 (e^{−L} underflows): the discrete PLD's ε solves δ(ε) = δ, not the
/// grid point where the mass above reaches δ (10⁸ steps once printed an optimistic ε 1 nat above
/// the true one that way).
#[test]
fn epsilon_at_very_large_losses() {
    let d = 0.5;
    let pmf = Pmf::on_grid(2000, vec![1.0 - 3e-5, 2e-5, 1e-5], 0.0, 0.0);
    for delta in [1e-5, 2.5e-5] {
        let eps = pmf.epsilon(d, delta);
        let back = pmf.delta(d, eps);
        assert!(
            eps > 999.0 && (back - delta).abs() <= 1e-9 * delta,
            "δ={delta}: ε {eps}, δ(ε) {back}"
        );
    }
}

/// A PLD composed for one δ (tilted, low tail dropped) is not composed further.
#[test]
fn tilted_pld_is_not_composed_further() {
    let mut acct = PldAccountant::new(AR);
    acct.compose_poisson_gaussian(0.05, 1.0, 50).unwrap();
    let tilted = acct.pld_at(Estimate::Pessimistic, 1e-8).unwrap();
    let plain = acct.pld(Estimate::Pessimistic).unwrap();
    assert!(message(tilted.compose(&plain).unwrap_err()).contains("allowed"));
    assert!(plain.compose(&tilted).is_err());
    assert!(tilted.self_compose(2).is_err());
    // Both are upper bounds at 1e-8; the untilted one's error bound is absolute, not small
    // against δ = 1e-8, so it is the looser: measured 4.233434 against 4.233250.
    let (a, b) = (tilted.epsilon(1e-8).unwrap(), plain.epsilon(1e-8).unwrap());
    assert!(a <= b && a >= b * (1.0 - 1e-3), "{a} vs {b}");
}

// ---------------------------------------------------------------------------------------------
// Fixed-size batches (sampling without replacement, replace-one)
// ---------------------------------------------------------------------------------------------

fn fixed_size_bounds(q: f64, z: f64, steps: u64, delta: f64) -> (f64, f64) {
    let mut acct = PldAccountant::new(Neighboring::ReplaceOne);
    acct.compose_fixed_size_gaussian(q, z, steps).unwrap();
    acct.epsilon_bounds(delta).unwrap()
}

/// Independent references, `dp_accounting` 0.6.0 (pip `dp-accounting`), δ = 1e-5:
/// - the optimistic bound is the witness's profile, the add/remove pair at noise z/2 composed
///   per direction: `PLDAccountant(ADD_OR_REMOVE_ONE)` on `PoissonSampledDpEvent(q,
///   GaussianDpEvent(z/2))` × T gives 14.125181 (q = 0.25, z = 1, T = 4), 7.953870 (T = 1),
///   9.997256 (q = 1, z = 2, T = 4), 13.360826 (q = 0.01, z = 1, T = 1000);
/// - the RDP accountant for sampling without replacement under replace-one (Wang, Balle &
///   Kasiviswanathan 2019; `RdpAccountant(REPLACE_ONE)` on `SampledWithoutReplacementDpEvent(n,
///   B, GaussianDpEvent(z/2))` × T, orders 1.1–256) is an upper bound: 18.355808 (n = 8, B = 2,
///   z = 1, T = 4), 9.070930 (T = 1), 10.725510 (n = B = 8, z = 2, T = 4). The PLD upper bound
///   must lie between the optimistic one and it.
///
/// (The script: docs/design/fixed-size-accountant/reference.py.)
#[test]
fn fixed_size_matches_independent_references() {
    for (q, z, t, witness, rdp) in [
        (0.25, 1.0, 4, 14.125181, 18.355808),
        (0.25, 1.0, 1, 7.953870, 9.070930),
        (1.0, 2.0, 4, 9.997256, 10.725510),
    ] {
        let (upper, lower) = fixed_size_bounds(q, z, t, 1e-5);
        println!("q {q} z {z} T {t}: [{lower}, {upper}] (witness {witness}, RDP {rdp})");
        assert!(
            (lower - witness).abs() < 1e-4 * witness,
            "{q} {z} {t}: optimistic {lower} against dp_accounting's {witness}"
        );
        assert!(
            lower <= upper && upper < rdp,
            "{q} {z} {t}: {upper} ≥ RDP {rdp}"
        );
    }
    // One step: the symmetrized profile is the larger direction's, so the two bounds agree up
    // to the discretization.
    let (upper, lower) = fixed_size_bounds(0.25, 1.0, 1, 1e-5);
    assert!(upper - lower < 1e-4, "{lower} {upper}");
}

/// q = 1 (B = n): the Gaussian mechanism with sensitivity 2 at every step, the same as Poisson
/// replace-one at q = 1 and as √T·2/z-GDP.
#[test]
fn fixed_size_full_batch_is_the_gaussian_mechanism() {
    let (upper, lower) = fixed_size_bounds(1.0, 2.0, 4, 1e-5);
    let exact = gaussian_exact_epsilon(1.0, 4, 1e-5).unwrap();
    assert!(
        lower <= exact + 1e-6 && exact <= upper + 1e-6,
        "{lower} {exact} {upper}"
    );
    let mut p = PldAccountant::new(Neighboring::ReplaceOne);
    p.compose_poisson_gaussian(1.0, 2.0, 4).unwrap();
    let (pu, pl) = p.epsilon_bounds(1e-5).unwrap();
    assert!((pu - upper).abs() < 1e-6 && (pl - lower).abs() < 1e-6);
}

/// The pessimistic PLD dominates both directions composed on their own at every ε (negative
/// included), and its δ curve is symmetric: δ(−ε) = 1 − e^{−ε} + e^{−ε}·δ(ε).
#[test]
fn fixed_size_pessimistic_dominates_both_directions() {
    let d = DEFAULT_DISCRETIZATION;
    let (q, z, t) = (0.25, 1.0, 3);
    let sym = Pld::fixed_size_gaussian(q, z, Estimate::Pessimistic, d)
        .unwrap()
        .self_compose(t)
        .unwrap();
    let per_direction = poisson_gaussian_pld(
        q,
        z / 2.0,
        t,
        Neighboring::AddRemove,
        Estimate::Pessimistic,
        d,
    )
    .unwrap();
    for i in -40..=80 {
        let eps = 0.1 * f64::from(i);
        let (s, p) = (sym.delta(eps), per_direction.delta(eps));
        assert!(
            s >= p - 1e-9,
            "eps {eps}: symmetrized {s} < per-direction {p}"
        );
        if i > 0 {
            let mirror = sym.delta(-eps);
            let want = -(-eps).exp_m1() + (-eps).exp() * s;
            // The discrete pair is symmetric up to the grid and the round-off of the chord.
            assert!(
                (mirror - want).abs() < 1e-3 * want.max(1e-6),
                "eps {eps}: {mirror} {want}"
            );
        }
    }
}

#[test]
fn fixed_size_needs_replace_one_and_refuses_shuffled() {
    use crate::ledger::{LedgerEvent, SamplingPolicy};
    let mut acct = PldAccountant::new(Neighboring::AddRemove);
    let e = message(acct.compose_fixed_size_gaussian(0.25, 1.0, 4).unwrap_err());
    assert!(
        e.contains("add-remove") && e.contains("allowed: replace-one"),
        "{e}"
    );
    let ledger = [
        (
            LedgerEvent::Sampling {
                probability: 0.25,
                repetitions: 4,
            },
            SamplingPolicy::FixedSize,
        ),
        (
            LedgerEvent::GaussianSum {
                noise_multiplier: 1.0,
            },
            SamplingPolicy::FixedSize,
        ),
    ];
    let e = message(acct.compose_ledger_with_policies(&ledger).unwrap_err());
    assert!(
        e.contains("ledger event 1") && e.contains("fixed-size"),
        "{e}"
    );
    assert!(acct.events().is_empty());
    let mut shuffled = ledger;
    shuffled[0].1 = SamplingPolicy::Shuffled;
    let mut replace = PldAccountant::new(Neighboring::ReplaceOne);
    let e = message(replace.compose_ledger_with_policies(&shuffled).unwrap_err());
    assert!(e.contains("\"shuffled\"") && e.contains("allowed"), "{e}");
    // The same ledger under replace-one is the fixed-size event.
    replace.compose_ledger_with_policies(&ledger).unwrap();
    assert_eq!(replace.events()[0].policy, SamplingPolicy::FixedSize);
    assert_eq!((replace.events()[0].q, replace.events()[0].z), (0.25, 1.0));
}
