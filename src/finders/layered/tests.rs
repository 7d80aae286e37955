//! The planner's unit tests.
use super::*;

use super::plan::MIN_SEARCH_PAIRS;
use crate::finders::cost::CostModel;

#[test]
fn the_plan_fits_the_budget_or_says_why() {
    let defaults = (200_000, 5_000, 3);
    let fit = |call: f64, release: f64, sizes: (Option<usize>, Option<usize>, Option<usize>)| {
        let cost = CostModel::new(call, release, 2, 50_000);
        RunPlan::fit(&cost, 60.0, 1.0, 2, sizes.0, sizes.1, sizes.2, defaults)
    };
    // A fast program: full sizes, three slots.
    let p = fit(0.04, 1e-6, (None, None, None));
    assert_eq!((p.samples_per_side, p.confirm_per_layer), (200_000, 3));
    assert!(
        p.total_seconds() <= 60.0 && p.over_budget.is_none(),
        "{p:?}"
    );
    // A start-up of 0.4 s: the confirmations are cheap, the search gets the rest, and many
    // more than three trials.
    let p = fit(0.4, 2e-6, (None, None, None));
    assert_eq!((p.samples_per_side, p.confirm_per_layer), (200_000, 3));
    assert!(p.trials >= 50, "{p:?}");
    assert!(p.total_seconds() <= 60.0, "{p:?}");
    // 150 µs per release: smaller confirmations, still within the budget.
    let p = fit(0.05, 150e-6, (None, None, None));
    assert!(p.samples_per_side >= MIN_PLANNED_SAMPLES, "{p:?}");
    assert!(
        p.total_seconds() <= 1.2 * 60.0 && p.over_budget.is_none(),
        "{p:?}"
    );
    assert!(p.trials >= 10, "{p:?}");
    // 10 ms per release: small confirmations, and at least MIN_SEARCH_PAIRS screening
    // trials of the smallest size, within the budget.
    let p = fit(0.05, 10e-3, (None, None, None));
    assert!(p.samples_per_side >= MIN_TIMED_CONFIRM_SAMPLES, "{p:?}");
    assert_eq!(p.search_samples, MIN_PLANNED_SEARCH_SAMPLES, "{p:?}");
    assert!(p.trials >= MIN_SEARCH_PAIRS, "{p:?}");
    assert!(p.total_seconds() <= 60.0, "{p:?}");
    // A start-up of 3 s and 5 ms per release (a DP library's pipeline): 10 pairs.
    let p = fit(3.0, 5e-3, (None, None, None));
    assert!(p.trials >= MIN_SEARCH_PAIRS, "{p:?}");
    assert!(p.total_seconds() <= 60.0, "{p:?}");
    // 0.5 s per release: not even the smallest confirmation fits, and the plan says so.
    let p = fit(0.05, 0.5, (None, None, None));
    assert_eq!(p.samples_per_side, MIN_TIMED_CONFIRM_SAMPLES);
    assert!(p.over_budget.is_some(), "{p:?}");
    assert!(p.describe().contains("OVER BUDGET"));
    // The user's sizes are kept.
    let p = fit(0.05, 150e-6, (Some(100_000), Some(1000), Some(3)));
    assert_eq!(
        (p.samples_per_side, p.search_samples, p.confirm_per_layer),
        (100_000, 1000, 3)
    );
}
