//! Unit tests of the RDP, zCDP and exact-Gaussian accountant (`rdp/mod.rs`).

use super::*;

/// |ours − ref| ≤ max(1e-6·ref, 5e-8): 1e-6 relative, allowing for the 8 significant digits
/// the reference is given to.
fn close_to_reference(ours: f64, reference: f64) -> bool {
    (ours - reference).abs() <= (1e-6 * reference.abs()).max(5e-8)
}

fn message(e: AccountingError) -> String {
    e.to_string()
}

#[test]
fn default_orders_grid() {
    let o = default_orders();
    assert_eq!(o.len(), 99 + 53 + 4);
    assert_eq!(o[0], 1.1);
    assert_eq!(o[98], 10.9);
    assert_eq!(o[99], 11.0);
    assert_eq!(o[151], 63.0);
    assert_eq!(&o[152..], &[128.0, 256.0, 512.0, 1024.0]);
    assert!(o.windows(2).all(|w| w[0] < w[1]));
    // Integer orders of the fractional part are exact integers.
    assert_eq!(o[9], 2.0);
    assert_eq!(o[89], 10.0);
}

#[test]
fn dpsgd_reference_q001_z11_t6000() {
    // dp_accounting 0.6.0: ε = 4.2465987 at order 5.6.
    let mut acct = RdpAccountant::new();
    acct.compose_poisson_gaussian(0.01, 1.1, 6000).unwrap();
    let (eps, order) = acct.epsilon(1e-5).unwrap();
    eprintln!("q=0.01 z=1.1 T=6000: eps = {eps:.10} order = {order}");
    assert!(close_to_reference(eps, 4.2465987), "{eps}");
    assert_eq!(order, 5.6);
}

#[test]
fn dpsgd_reference_q001_z4_t1000() {
    // dp_accounting 0.6.0: ε = 0.3011612 at order 48.
    let mut acct = RdpAccountant::new();
    acct.compose_poisson_gaussian(0.01, 4.0, 1000).unwrap();
    let (eps, order) = acct.epsilon(1e-5).unwrap();
    eprintln!("q=0.01 z=4 T=1000: eps = {eps:.10} order = {order}");
    assert!(close_to_reference(eps, 0.3011612), "{eps}");
    assert_eq!(order, 48.0);
}

#[test]
fn full_batch_reference_q1_z1_t1() {
    // dp_accounting 0.6.0: ε = 4.7285071 at order 5.4.
    let mut acct = RdpAccountant::new();
    acct.compose_poisson_gaussian(1.0, 1.0, 1).unwrap();
    let (eps, order) = acct.epsilon(1e-5).unwrap();
    eprintln!("q=1 z=1 T=1: eps = {eps:.10} order = {order}");
    assert!(close_to_reference(eps, 4.7285071), "{eps}");
    assert_eq!(order, 5.4);
    // RDP of the plain Gaussian is α/(2z²).
    assert_eq!(acct.rdp(&[5.4]), vec![2.7]);
}

/// Independent check: ln A_α by trapezoidal quadrature of the defining integral
/// A_α = ∫ N(x; 0, σ²) (1 − q + q·e^{(2x−1)/(2σ²)})^α dx, written as
/// ln(1 + ∫ N(x; 0, σ²)·expm1(α·ln1p(q·expm1((2x−1)/(2σ²)))) dx) to avoid cancellation.
fn log_a_quadrature(q: f64, sigma: f64, alpha: f64) -> f64 {
    let (lo, hi) = (-20.0 * sigma, alpha + 20.0 * sigma);
    let n = 200_000;
    let h = (hi - lo) / n as f64;
    let norm = 1.0 / (sigma * (2.0 * PI).sqrt());
    let mut sum = 0.0;
    for k in 0..=n {
        let x = lo + h * k as f64;
        let density = norm * (-x * x / (2.0 * sigma * sigma)).exp();
        let log_ratio = (q * ((2.0 * x - 1.0) / (2.0 * sigma * sigma)).exp_m1()).ln_1p();
        let w = if k == 0 || k == n { 0.5 } else { 1.0 };
        sum += w * density * (alpha * log_ratio).exp_m1();
    }
    (sum * h).ln_1p()
}

#[test]
fn one_step_rdp_reference_values() {
    // dp_accounting 0.6.0 at q = 0.01, z = 1.1 (given to 5–6 significant digits).
    let cases = [(2.0, 1.28510e-4), (4.0, 2.66718e-4), (8.0, 5.84070e-4)];
    for (alpha, reference) in cases {
        let r = subsampled_gaussian_rdp(0.01, 1.1, alpha).unwrap();
        eprintln!("rdp(q=0.01, z=1.1, alpha={alpha}) = {r:.8e} (ref {reference:e})");
        assert!((r / reference - 1.0).abs() < 1e-4, "alpha {alpha}: {r}");
    }
    // α = 1.5: the value given with the brief, 9.8588e-5, is 3% above the defining integral
    // (quadrature: 9.5545286e-5, also from an independent Python quadrature), which this
    // implementation matches; so the check here is against the quadrature.
    let r = subsampled_gaussian_rdp(0.01, 1.1, 1.5).unwrap();
    eprintln!("rdp(q=0.01, z=1.1, alpha=1.5) = {r:.8e} (quadrature 9.5545286e-5)");
    assert!((r / 9.5545286e-5 - 1.0).abs() < 1e-7, "{r}");
}

#[test]
fn rdp_matches_quadrature_of_the_definition() {
    let cases = [
        (0.01, 1.1, 1.5),
        (0.01, 1.1, 5.6),
        (0.01, 1.1, 8.0),
        (0.01, 4.0, 48.0),
        (0.01, 4.0, 10.3),
        (0.2, 0.9, 1.1),
        (0.2, 0.9, 3.7),
        (0.6, 2.0, 2.5),
        (0.05, 0.6, 7.2),
    ];
    for (q, z, alpha) in cases {
        let ours = subsampled_gaussian_rdp(q, z, alpha).unwrap();
        let quad = log_a_quadrature(q, z, alpha) / (alpha - 1.0);
        eprintln!("q {q} z {z} alpha {alpha}: series {ours:.12e} quadrature {quad:.12e}");
        assert!(
            (ours / quad - 1.0).abs() < 1e-8,
            "q {q} z {z} α {alpha}: {ours} vs {quad}"
        );
    }
}

#[test]
fn fractional_series_agrees_with_integer_sum() {
    // Orders just around integers go through the erfc series; RDP is continuous in α.
    for &(q, z) in &[
        (0.01, 1.1),
        (0.1, 0.8),
        (0.5, 2.0),
        (0.9, 1.0),
        (0.001, 5.0),
    ] {
        for &a in &[2.0, 3.0, 7.0, 20.0] {
            let exact = subsampled_gaussian_rdp(q, z, a).unwrap();
            let below = subsampled_gaussian_rdp(q, z, a - 1e-7).unwrap();
            let above = subsampled_gaussian_rdp(q, z, a + 1e-7).unwrap();
            assert!(below <= above, "q {q} z {z} α {a}");
            assert!(
                (below / exact - 1.0).abs() < 1e-5 && (above / exact - 1.0).abs() < 1e-5,
                "q {q} z {z} α {a}: {below} {exact} {above}"
            );
        }
    }
}

#[test]
fn rdp_is_monotone_in_order_and_bounded_by_full_batch() {
    for &(q, z) in &[(0.01, 1.1), (0.01, 4.0), (0.2, 0.7), (0.6, 3.0)] {
        let orders = default_orders();
        let r: Vec<f64> = orders
            .iter()
            .map(|&a| subsampled_gaussian_rdp(q, z, a).unwrap())
            .collect();
        for (i, w) in r.windows(2).enumerate() {
            assert!(
                w[0] <= w[1] * (1.0 + 1e-9),
                "q {q} z {z}: {} at α {} > {} at α {}",
                w[0],
                orders[i],
                w[1],
                orders[i + 1]
            );
        }
        for (&a, &v) in orders.iter().zip(&r) {
            assert!(
                v >= 0.0 && v <= a / (2.0 * z * z) * (1.0 + 1e-9),
                "{a}: {v}"
            );
        }
    }
}

#[test]
fn early_tiny_terms_do_not_stop_the_series() {
    // α = 100.5, q = ½, σ = 100: the first terms are ≈ e^{−69}, but A_α ≥ 1. Stopping at
    // i = 0 (as a bare "terms below e^{−30}" rule would) gives a negative RDP.
    let (q, z) = (0.5, 100.0);
    let r = subsampled_gaussian_rdp(q, z, 100.5).unwrap();
    let r100 = subsampled_gaussian_rdp(q, z, 100.0).unwrap();
    let r101 = subsampled_gaussian_rdp(q, z, 101.0).unwrap();
    assert!(r100 > 0.0 && r100 <= r && r <= r101, "{r100} {r} {r101}");
}

#[test]
fn trivial_sampling_rates() {
    assert_eq!(subsampled_gaussian_rdp(0.0, 1.0, 2.5).unwrap(), 0.0);
    assert_eq!(subsampled_gaussian_rdp(1.0, 2.0, 3.0).unwrap(), 3.0 / 8.0);
    // q just below 1 approaches the full-batch value.
    let r = subsampled_gaussian_rdp(1.0 - 1e-9, 2.0, 3.5).unwrap();
    assert!((r / (3.5 / 8.0) - 1.0).abs() < 1e-6, "{r}");
}

#[test]
fn log_helpers() {
    // Continuity of log_erfc at the switch to the asymptotic series.
    let x = LOG_ERFC_ASYMPTOTIC_FROM;
    let direct = erfc(x).ln();
    let asym = log_erfc(x + 1e-12);
    assert!(
        (direct - asym).abs() < 1e-9 * direct.abs(),
        "{direct} {asym}"
    );
    assert!(log_erfc(40.0).is_finite() && log_erfc(40.0) < -1600.0);
    assert_eq!(log_erfc(f64::INFINITY), f64::NEG_INFINITY);
    assert!((log_erfc(-3.0) - erfc(-3.0).ln()).abs() < 1e-15);
    // log_add / log_sub.
    assert!((log_add(2f64.ln(), 3f64.ln()) - 5f64.ln()).abs() < 1e-15);
    assert_eq!(log_add(f64::NEG_INFINITY, 1.0), 1.0);
    assert!((log_sub(5f64.ln(), 3f64.ln()).unwrap() - 2f64.ln()).abs() < 1e-15);
    assert_eq!(log_sub(1.0, 1.0).unwrap(), f64::NEG_INFINITY);
    assert!(log_sub(1.0, 2.0).is_err());
    assert!((log_comb(10.0, 3.0) - 120f64.ln()).abs() < 1e-12);
}

#[test]
fn rdp_to_epsilon_is_consistent_with_rdp_to_delta() {
    let mut acct = RdpAccountant::new();
    acct.compose_poisson_gaussian(0.01, 1.1, 6000).unwrap();
    let orders = default_orders();
    let rdp = acct.rdp(&orders);
    let (eps, order) = rdp_to_epsilon(&orders, &rdp, 1e-5).unwrap();
    let i = orders.iter().position(|&a| a == order).unwrap();
    let d = rdp_to_delta(order, rdp[i], eps);
    assert!((d / 1e-5 - 1.0).abs() < 1e-9, "{d}");
    // Special cases: tiny RDP → 0 through the KL bound; orders ≤ 1.01 → ∞.
    assert_eq!(rdp_to_epsilon(&[2.0], &[1e-12], 1e-5).unwrap(), (0.0, 2.0));
    assert_eq!(
        rdp_to_epsilon(&[1.005], &[1.0], 1e-5).unwrap(),
        (f64::INFINITY, 1.005)
    );
    assert_eq!(
        rdp_to_epsilon(&[2.0, 3.0], &[f64::INFINITY, 1.0], 1e-5)
            .unwrap()
            .1,
        3.0
    );
}

#[test]
fn ledger_composition() {
    // Two queries with z = 2 on one sample = one query with z = √2.
    let mut a = RdpAccountant::new();
    a.record_sampling(0.05, 100).unwrap();
    a.record_gaussian_sum(2.0).unwrap();
    a.record_gaussian_sum(2.0).unwrap();
    let mut b = RdpAccountant::new();
    b.compose_poisson_gaussian(0.05, 2f64.sqrt(), 100).unwrap();
    let orders = [1.5, 2.0, 8.0, 32.0];
    for (x, y) in a.rdp(&orders).iter().zip(b.rdp(&orders)) {
        assert!((x / y - 1.0).abs() < 1e-12, "{x} {y}");
    }
    // Repeated identical blocks are merged and equal one block with the summed count.
    let mut c = RdpAccountant::new();
    c.compose_poisson_gaussian(0.05, 2f64.sqrt(), 40).unwrap();
    c.compose_poisson_gaussian(0.05, 2f64.sqrt(), 60).unwrap();
    assert_eq!(c.rdp(&orders), b.rdp(&orders));
    assert_eq!(c.ledger().len(), 4);
    // RDP is T times the one-step value.
    let one = subsampled_gaussian_rdp(0.05, 2f64.sqrt(), 8.0).unwrap();
    assert_eq!(b.rdp(&[8.0])[0], 100.0 * one);
    // A sample without query costs nothing; an empty ledger gives ε = 0.
    let mut d = RdpAccountant::new();
    d.record_sampling(0.5, 10).unwrap();
    assert_eq!(d.rdp(&orders), vec![0.0; 4]);
    assert_eq!(RdpAccountant::new().epsilon(1e-5).unwrap().0, 0.0);
    // try_rdp reports a bad order; rdp gives +∞ for it.
    assert!(b.try_rdp(&[0.5]).is_err());
    assert_eq!(b.rdp(&[0.5])[0], f64::INFINITY);
}

#[test]
fn zcdp_conversion_between_exact_and_opendp() {
    let rho = gaussian_zcdp_rho(4.0);
    assert_eq!(rho, 1.0 / 32.0);
    let eps = zcdp_to_epsilon(rho, 1e-3).unwrap();
    eprintln!("zCDP rho = 1/32, delta = 1e-3: eps = {eps:.10}");
    // OpenDP's conversion: 0.6880024554878085, which is the exact minimum over α of the same
    // bound (golden section in f64 gives the same digits), so ours can only tie it, up to its
    // deliberate round-up (≤ 1e-14 of the terms plus one ulp); the exact Gaussian: 0.5920067.
    assert!(eps >= 0.6880024554878085, "{eps}");
    assert!(eps <= 0.6880024554878085 * (1.0 + 1e-13), "{eps}");
    assert!(eps >= 0.5920067, "{eps}");
    // Consistent with claim::zcdp_to_delta: δ at our ε is ≤ 1e-3 (up to rounding).
    let d = zcdp_to_delta(rho, eps);
    assert!(d <= 1e-3 * (1.0 + 1e-9), "{d}");
    assert_eq!(zcdp_to_epsilon(0.0, 1e-5).unwrap(), 0.0);
    assert_eq!(gaussian_zcdp_rho(0.0), f64::INFINITY);
}

#[test]
fn exact_gaussian_reference() {
    let eps = gaussian_exact_epsilon(4.0, 1, 1e-3).unwrap();
    eprintln!("exact Gaussian sigma = 4, delta = 1e-3: eps = {eps:.10}");
    assert!(close_to_reference(eps, 0.5920067), "{eps}");
    // Safe side: the returned ε meets δ.
    assert!(crate::math::gaussian_dp_delta(eps, 0.25) <= 1e-3);
    // T steps with multiplier z = one step with z/√T.
    let a = gaussian_exact_epsilon(4.0, 16, 1e-5).unwrap();
    let b = gaussian_exact_epsilon(1.0, 1, 1e-5).unwrap();
    assert!((a / b - 1.0).abs() < 1e-9, "{a} {b}");
    // The exact value is below the RDP bound for the same mechanism.
    let mut acct = RdpAccountant::new();
    acct.compose_poisson_gaussian(1.0, 1.0, 1).unwrap();
    assert!(b < acct.epsilon(1e-5).unwrap().0);
    // Huge δ-tolerant case: ε = 0.
    assert_eq!(gaussian_exact_epsilon(1000.0, 1, 0.5).unwrap(), 0.0);
}

#[test]
fn bad_inputs_name_the_value() {
    let m = message(subsampled_gaussian_rdp(1.5, 1.0, 2.0).unwrap_err());
    assert!(m.contains("q = 1.5") && m.contains("0 ≤ q ≤ 1"), "{m}");
    let m = message(subsampled_gaussian_rdp(0.1, 0.0, 2.0).unwrap_err());
    assert!(m.contains("z = 0") && m.contains("0 < z"), "{m}");
    let m = message(subsampled_gaussian_rdp(0.1, -1.0, 2.0).unwrap_err());
    assert!(m.contains("z = -1"), "{m}");
    let m = message(subsampled_gaussian_rdp(0.1, 1.0, 1.0).unwrap_err());
    assert!(m.contains("alpha = 1") && m.contains("1 < α"), "{m}");
    let m = message(subsampled_gaussian_rdp(0.1, 1.0, f64::NAN).unwrap_err());
    assert!(m.contains("alpha = NaN"), "{m}");
    let m = message(subsampled_gaussian_rdp(0.1, f64::INFINITY, 2.0).unwrap_err());
    assert!(m.contains("z = inf"), "{m}");

    let mut acct = RdpAccountant::new();
    let m = message(acct.compose_poisson_gaussian(0.0, 1.0, 10).unwrap_err());
    assert!(m.contains("q = 0") && m.contains("0 < q ≤ 1"), "{m}");
    let m = message(acct.compose_poisson_gaussian(0.1, 1.0, 0).unwrap_err());
    assert!(m.contains("T = 0") && m.contains("T ≥ 1"), "{m}");
    let m = message(acct.record_gaussian_sum(1.0).unwrap_err());
    assert!(m.contains("before any sampling"), "{m}");
    assert!(acct.ledger().is_empty(), "nothing recorded on error");
    let m = message(acct.epsilon(0.0).unwrap_err());
    assert!(m.contains("delta = 0") && m.contains("0 < δ < 1"), "{m}");
    let m = message(acct.epsilon(1.0).unwrap_err());
    assert!(m.contains("delta = 1"), "{m}");

    let m = message(rdp_to_epsilon(&[0.5], &[1.0], 1e-5).unwrap_err());
    assert!(m.contains("alpha = 0.5") && m.contains("α ≥ 1"), "{m}");
    let m = message(rdp_to_epsilon(&[2.0], &[-1.0], 1e-5).unwrap_err());
    assert!(m.contains("-1"), "{m}");
    assert!(rdp_to_epsilon(&[2.0, 3.0], &[1.0], 1e-5).is_err());
    assert!(rdp_to_epsilon(&[], &[], 1e-5).is_err());
    let m = message(rdp_to_epsilon(&[2.0], &[1.0], 2.0).unwrap_err());
    assert!(m.contains("delta = 2"), "{m}");

    let m = message(zcdp_to_epsilon(-1.0, 1e-5).unwrap_err());
    assert!(m.contains("rho = -1"), "{m}");
    let m = message(gaussian_exact_epsilon(4.0, 0, 1e-3).unwrap_err());
    assert!(m.contains("T = 0"), "{m}");
    let m = message(gaussian_exact_epsilon(0.0, 1, 1e-3).unwrap_err());
    assert!(m.contains("z = 0"), "{m}");
    let m = message(gaussian_exact_epsilon(1.0, 1, 0.0).unwrap_err());
    assert!(m.contains("delta = 0"), "{m}");
}

#[test]
fn a_series_that_does_not_converge_says_so_in_accounting_words() {
    // An integer order above MAX_SERIES_TERMS: the binomial sum would need more terms.
    let e = subsampled_gaussian_rdp(0.5, 1.0, 200_000.0).unwrap_err();
    assert!(matches!(e, AccountingError::NotConverged { .. }), "{e:?}");
    let m = message(e);
    assert!(
        m.starts_with("rdp-accountant: the binomial sum for the subsampled Gaussian RDP did not converge within 100000 terms at q = 0.5, z = 1, alpha = 200000; allowed: "),
        "{m}"
    );
    assert!(!m.contains("failed to sample"), "{m}");
}
