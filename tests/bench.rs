//! `audit bench`: the power, speed and seed-sweep benchmarks run end to end at small sizes (the
//! figures themselves are quoted from full runs in the README; these tests check the machinery).

mod util;

use util::{audit, stderr, stdout};

/// Power table at a small n. s = 0.5 at n = 20000 has true δ(1) ≈ 1.04e-2 ≫ 1e-5, so the
/// hockey-stick tester detects it in nearly every audit; the assertion only needs one detection
/// out of 2 (it fails if both miss: far below 1e-6 at this size by the coverage of the event
/// bound — measured margins are ~5e-3 at n = 1e5).
#[test]
fn bench_power_prints_a_table_and_json() {
    let o = audit(&[
        "bench",
        "power",
        "--samples",
        "20000",
        "--tester",
        "hockey-stick,renyi",
        "--repeats",
        "2",
        "--json",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    // 2 claims × 1 size × 2 testers × 8 scales.
    assert_eq!(rows.len(), 32);
    let hs_point_05 = rows
        .iter()
        .find(|r| r["claim"] == "point" && r["tester"] == "hockey-stick" && r["scale"] == 0.5)
        .unwrap();
    assert!(hs_point_05["detections"].as_u64().unwrap() >= 1);
    // The Rényi tester cannot test an (ε, δ) claim with δ > 0: reported as n/a with the reason.
    let renyi_point = rows
        .iter()
        .find(|r| r["claim"] == "point" && r["tester"] == "renyi")
        .unwrap();
    assert!(renyi_point["detections"].is_null());
    assert!(renyi_point["note"].as_str().unwrap().contains("Rényi"));
}

#[test]
fn bench_speed_reports_medians_against_sampling() {
    let o = audit(&[
        "bench",
        "speed",
        "--samples",
        "5000",
        "--tester",
        "hockey-stick",
        "--repeats",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("sampling") && text.contains("hockey-stick"),
        "{text}"
    );
}

/// Seed sweep at a tiny size: every row is a correct entry; the rows exist for each tester.
/// (No assertion on the counts here: the soundness assertions live in tests/soundness.rs and
/// tests/testers.rs with their stated false-failure rates.)
#[test]
fn bench_seeds_covers_every_correct_entry() {
    let o = audit(&[
        "bench",
        "seeds",
        "--seeds",
        "2",
        "--samples",
        "2000",
        "--tester",
        "hockey-stick",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v.as_array().unwrap();
    // The Bayesian DP entries (bdp-*, listed last) are audited against a data file, not by the
    // worst-case seed sweep.
    let list = audit(&["list"]);
    let correct = stdout(&list)
        .lines()
        .filter(|l| l.contains(" correct ") && !l.starts_with("bdp-"))
        .count();
    assert_eq!(rows.len(), correct);
    for r in rows {
        assert_eq!(r["seeds"], 2);
    }
}

#[test]
fn bench_bad_input_exits_two() {
    for args in [
        &["bench", "power", "--samples", "ten"][..],
        &["bench", "power", "--failure-probability", "1.5"][..],
        &["bench", "speed", "--repeats", "0"][..],
        &["bench", "seeds", "--tester", "nope"][..],
    ] {
        let o = audit(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("allowed") || stderr(&o).contains("nope"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}
