//! The accountants never state a false bound: over random and extreme parameters, every call
//! either refuses (an error naming the value) or returns an upper bound that is at least the
//! lower bound, and, where the exact value is known (q = 1: the Gaussian mechanism composed T
//! times is √T/z-GDP), brackets it. Deterministic: the parameters come from a fixed seed; the
//! test has no false-failure rate (no randomness in the accountants).

mod util;

use dp_audit::mechanisms::Neighboring;
use dp_audit::mechanisms::accountant::{LedgerEvent, gaussian_exact_epsilon};
use dp_audit::mechanisms::pld::{MAX_STEPS, PldAccountant};
use dp_audit::mechanisms::rand::{RngExt, SeedableRng};

/// Checks one setting; returns whether it was computed (true) or refused (false).
fn check(q: f64, z: f64, steps: u64, delta: f64, neighbors: Neighboring) -> bool {
    let mut acct = PldAccountant::new(neighbors);
    if acct.compose_poisson_gaussian(q, z, steps).is_err() {
        return false;
    }
    match acct.epsilon_bounds_adaptive(delta) {
        Err(e) => {
            let e = e.to_string();
            assert!(
                e.contains("allowed") || e.contains("steps"),
                "a refusal names what is allowed: {e}"
            );
            false
        }
        Ok((upper, lower, grid)) => {
            let at =
                format!("q = {q}, z = {z}, T = {steps}, δ = {delta}, {neighbors}, grid {grid}");
            assert!(upper >= lower, "upper {upper} < lower {lower} at {at}");
            assert!(lower >= 0.0 && upper >= 0.0, "negative ε at {at}");
            if q == 1.0 && neighbors == Neighboring::AddRemove {
                let exact = gaussian_exact_epsilon(z, steps, delta).unwrap();
                // The exact value's own tolerance (root finding) is far below 1e-6 relative.
                let slack = 1e-6 * exact.max(1.0);
                assert!(
                    upper >= exact - slack,
                    "upper {upper} below the exact {exact} at {at}"
                );
                assert!(
                    lower <= exact + slack,
                    "lower {lower} above the exact {exact} at {at}"
                );
            }
            true
        }
    }
}

#[test]
fn no_false_bound_at_extreme_parameters() {
    let relations = [Neighboring::AddRemove, Neighboring::ReplaceOne];
    // Steps past what the accountant composes are refused, never wrapped.
    for steps in [u64::MAX, u64::MAX - 1, 1 << 63, MAX_STEPS + 1] {
        for r in relations {
            assert!(
                !check(0.01, 1.1, steps, 1e-5, r),
                "T = {steps} was computed"
            );
            assert!(
                !check(0.001, 2.0, steps, 1e-5, r),
                "T = {steps} was computed"
            );
        }
    }
    // Large but composable step counts: computed on a coarser grid, or refused.
    check(0.01, 1.1, 1_000_000_000, 1e-5, Neighboring::AddRemove);
    // q near 0 and 1, z from 0.5 to 100, δ down to 1e-300 (smaller z makes wide grids: the
    // ignored test below covers z = 0.1 and 0.3).
    for q in [1e-9, 1e-4, 0.5, 1.0] {
        for z in [0.5, 100.0] {
            for delta in [1e-300, 1e-10, 0.5] {
                for r in relations {
                    check(q, z, 100, delta, r);
                }
            }
        }
    }
}

/// The wide grids (z = 0.1, 0.3) and 2^40 steps: minutes. Run with
/// `cargo test --release --test accountant_bounds -- --ignored`.
#[test]
#[ignore]
fn no_false_bound_at_extreme_parameters_wide_grids() {
    check(0.01, 1.1, 1 << 40, 1e-5, Neighboring::AddRemove);
    for q in [1e-9, 1e-4, 0.5, 0.999_999, 1.0] {
        for z in [0.1, 0.3] {
            for delta in [1e-300, 1e-10, 0.5] {
                for r in [Neighboring::AddRemove, Neighboring::ReplaceOne] {
                    check(q, z, 10, delta, r);
                }
            }
        }
    }
}

#[test]
fn no_false_bound_at_random_parameters() {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2026);
    let mut computed = 0;
    for _ in 0..40 {
        let q = 10f64.powf(rng.random_range(-6.0..0.0)).min(1.0);
        let z = 10f64.powf(rng.random_range(-0.5..2.0));
        let steps = 10f64.powf(rng.random_range(0.0..6.0)).round() as u64;
        let delta = 10f64.powf(rng.random_range(-300.0..-0.5));
        let r = if rng.random_bool(0.5) {
            Neighboring::AddRemove
        } else {
            Neighboring::ReplaceOne
        };
        computed += usize::from(check(q, z, steps.max(1), delta, r));
    }
    assert!(computed >= 30, "only {computed} of 40 settings computed");
}

#[test]
fn a_ledger_that_would_under_count_is_refused() {
    let sampling = |repetitions| LedgerEvent::Sampling {
        probability: 0.01,
        repetitions,
    };
    let query = LedgerEvent::GaussianSum {
        noise_multiplier: 1.1,
    };
    // Cut off after a sampling event.
    let mut acct = PldAccountant::new(Neighboring::AddRemove);
    let e = acct
        .compose_ledger(&[sampling(100), query, sampling(100)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("cut off"), "{e}");
    // Repetitions whose sum does not fit: refused, not saturated.
    let mut acct = PldAccountant::new(Neighboring::AddRemove);
    acct.compose_ledger(&[sampling(1 << 62), query, sampling(1 << 62), query])
        .unwrap();
    assert!(acct.epsilon_bounds(1e-5).is_err());
    // The CLI says the same, exit 2.
    let dir = std::env::temp_dir().join(format!("dp-audit-ledger-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cut.jsonl");
    std::fs::write(
        &path,
        "{\"event\": \"sampling\", \"probability\": 0.01, \"repetitions\": 100}\n{\"event\": \"gaussian-sum\", \"noise_multiplier\": 1.1}\n{\"event\": \"sampling\", \"probability\": 0.01, \"repetitions\": 100}\n",
    )
    .unwrap();
    let o = util::audit(&[
        "accountant",
        "--ledger",
        path.to_str().unwrap(),
        "--delta",
        "1e-5",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(util::stderr(&o).contains("cut off"), "{}", util::stderr(&o));
    let o = util::audit(&[
        "accountant",
        "--sampling-rate",
        "0.01",
        "--noise-multiplier",
        "1.1",
        "--steps",
        "18446744073709551615",
        "--delta",
        "1e-5",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", util::stdout(&o));
    assert!(util::stderr(&o).contains("--steps"), "{}", util::stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}
