//! Bayesian DP over shards: `audit sample --bdp-data` writes (x', w) pairs, `audit test --claim
//! bdp:EPS:DELTA` tests them (both definitions); the correct claim is not flagged, the twin's is,
//! and shards that do not belong together are refused.
//!
//! False-failure rate: each test of a correct claim runs at β = 1e-3, so each such assertion
//! fails with probability ≤ 1e-3 for a sound test (3 here: ≤ 3e-3 in all). Power (measured, run
//! seed 3, 2 × 50 000 pairs per side): the excludes-outliers claim (δ = 1.7e-8) gets a
//! Definition 1 bound of 1.8e-3, 10^5 times what it allows; the σ = 0.2 Gaussian sum against
//! the σ = 1 claim (δ_μ = 1.41e-2) gets a Definition 2 bound far above it (its exact
//! H_e(P̄ ‖ Q) is 0.061, numerical integration in scipy: the outliers alone, 5 % of μ, move the
//! output by ≈ 4.75 noise standard deviations).

mod util;

use std::path::PathBuf;

use util::{audit, stderr, stdout};

fn dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("dp-audit-bdp-shards-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn data() -> String {
    format!("{}/examples/bdp-data.txt", env!("CARGO_MANIFEST_DIR"))
}

/// Two shards per side of `id` (params `params`), 50 000 pairs each, run seed 3.
fn shards(tag: &str, id: &str, params: &[&str]) -> (Vec<String>, Vec<String>) {
    let d = dir();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for side in ["a", "b"] {
        for i in ["0", "1"] {
            let out = d.join(format!("{tag}-{side}{i}.jsonl"));
            let mut args = vec![
                "sample",
                "--mechanism",
                id,
                "--side",
                side,
                "--shard-index",
                i,
                "--samples",
                "50000",
                "--seed",
                "3",
                "--bdp-data",
            ];
            let data = data();
            let out_s = out.to_str().unwrap().to_string();
            args.push(&data);
            args.extend(["--out", &out_s, "--force"]);
            args.extend(params);
            let o = audit(&args);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            if side == "a" {
                a.push(out_s)
            } else {
                b.push(out_s)
            }
        }
    }
    (a, b)
}

fn test(a: &[String], b: &[String], claim: &str, def: &str) -> (Option<i32>, String, String) {
    let mut args = vec![
        "test",
        "--claim",
        claim,
        "--bdp-definition",
        def,
        "--no-report",
    ];
    for f in a {
        args.extend(["--samples-a", f.as_str()]);
    }
    for f in b {
        args.extend(["--samples-b", f.as_str()]);
    }
    args.extend(["--failure-probability", "1e-3"]);
    let o = audit(&args);
    (o.status.code(), stdout(&o), stderr(&o))
}

#[test]
fn correct_claims_pass_and_buggy_ones_are_caught() {
    let (a, b) = shards("sum", "bdp-gaussian-sum", &[]);
    // The exact δ_μ of the σ = 1 Gaussian sum on examples/bdp-data.txt at ε = 1 (the entry's
    // own claim, `audit run --mechanism bdp-gaussian-sum --json`), rounded up.
    let correct = "bdp:1:0.014081955266319803";
    for def in ["1", "2"] {
        let (code, out, err) = test(&a, &b, correct, def);
        assert_eq!(code, Some(0), "definition {def}: {out}{err}");
        assert!(out.contains(&format!("Definition {def}")), "{out}");
    }
    // The twin's claim: δ computed without the outliers.
    let (code, out, err) = test(&a, &b, "bdp:1:1.6686996283225174e-08", "1");
    assert_eq!(code, Some(1), "{out}{err}");
    // σ = 0.2 against the σ = 1 claim: caught under Definition 2 (events on the output only).
    let (a2, b2) = shards("narrow", "bdp-gaussian-sum", &["--param", "sigma=0.2"]);
    let (code, out, err) = test(&a2, &b2, correct, "2");
    assert_eq!(code, Some(1), "{out}{err}");
}

/// Shards on the wrong side, a shard given twice, an ordinary claim on pair lines, a bdp claim
/// on ordinary release lines: exit 2 naming the problem.
#[test]
fn mismatched_shards_are_refused() {
    let (a, b) = shards("refuse", "bdp-gaussian-sum", &[]);
    let (code, _, err) = test(&b[..1], &b[1..], "bdp:1:0.01", "1");
    assert_eq!(code, Some(2));
    assert!(err.contains("written as side b"), "{err}");
    let (code, _, err) = test(&a[..1], &[b[0].clone(), b[0].clone()], "bdp:1:0.01", "1");
    assert_eq!(code, Some(2));
    assert!(err.contains("given twice"), "{err}");
    let o = audit(&[
        "test",
        "--claim",
        "pure:1",
        "--samples-a",
        &a[0],
        "--samples-b",
        &b[0],
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let plain = dir().join("plain.jsonl");
    std::fs::write(&plain, "0.5\n0.25\n").unwrap();
    let (code, _, err) = test(
        &[plain.to_str().unwrap().to_string()],
        &b[..1],
        "bdp:1:0.01",
        "1",
    );
    assert_eq!(code, Some(2));
    assert!(err.contains("is not a pair"), "{err}");
    let (code, _, err) = test(&a[..1], &b[..1], "bdp:1:0.01", "3");
    assert_eq!(code, Some(2));
    assert!(err.contains("--bdp-definition 3"), "{err}");
}

/// Soundness sweep over the shard path (`audit sample --bdp-data` then `audit test`): the
/// correct σ = 1 Gaussian sum at the boundary of Definition 1's tested null, δ = E_{x'} H_e(N(x', 1)
/// ‖ N(0, 1)) = 5.4907e-3 for examples/bdp-data.txt (exact, scipy; rounded up to 5.491e-3),
/// one shard of 10^4 pairs per side, run seeds 0..AUDIT_SEED_SWEEP (default 200), β = 0.05,
/// under both definitions (Definition 2's null is smaller, so δ is above its boundary there).
/// An exact level-β test rejects with probability ≤ 0.05 per seed; k ≤ 27 per 200 seeds fails
/// with probability < 1e-6 when that holds (P[Bin(200, 0.05) ≥ 28] < 1e-6).
#[test]
#[ignore = "soundness sweep: AUDIT_SEED_SWEEP=200, minutes"]
fn soundness_sweep_over_shards() {
    let seeds: u64 = std::env::var("AUDIT_SEED_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let d = dir();
    let data = data();
    let mut k = [0usize; 2];
    for seed in 0..seeds {
        let seed_s = seed.to_string();
        let mut files = Vec::new();
        for side in ["a", "b"] {
            let out = d.join(format!("sweep-{side}.jsonl"));
            let out_s = out.to_str().unwrap().to_string();
            let o = audit(&[
                "sample",
                "--mechanism",
                "bdp-gaussian-sum",
                "--side",
                side,
                "--shard-index",
                "0",
                "--samples",
                "10000",
                "--seed",
                &seed_s,
                "--bdp-data",
                &data,
                "--out",
                &out_s,
                "--force",
            ]);
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            files.push(out_s);
        }
        for (i, def) in ["1", "2"].iter().enumerate() {
            let o = audit(&[
                "test",
                "--claim",
                "bdp:1:5.491e-3",
                "--bdp-definition",
                def,
                "--samples-a",
                &files[0],
                "--samples-b",
                &files[1],
                "--failure-probability",
                "0.05",
                "--seed",
                &seed_s,
                "--no-report",
            ]);
            match o.status.code() {
                Some(0) => {}
                Some(1) => k[i] += 1,
                other => panic!("seed {seed}: exit {other:?}: {}", stderr(&o)),
            }
        }
    }
    eprintln!(
        "shards: rejections at the boundary {}/{seeds} (Definition 1), {}/{seeds} (Definition 2) at β = 0.05",
        k[0], k[1]
    );
    for ki in k {
        assert!(ki as f64 <= 27.0 * seeds as f64 / 200.0, "{k:?}/{seeds}");
    }
}

/// `.gz` and `.zst` Bayesian shards hold the same pairs as plain ones: the same seed gives the
/// same bounds and verdict whatever the compression (a deterministic comparison, no statistics).
#[test]
fn compressed_shards_test_the_same_as_plain_ones() {
    let d = dir();
    let data = data();
    let mut results = Vec::new();
    for ext in ["jsonl", "jsonl.gz", "jsonl.zst"] {
        let mut files = Vec::new();
        for side in ["a", "b"] {
            let out = d.join(format!("compressed-{side}.{ext}"));
            let out_s = out.to_str().unwrap().to_string();
            let o = audit(&[
                "sample",
                "--mechanism",
                "bdp-gaussian-sum-excludes-outliers",
                "--side",
                side,
                "--shard-index",
                "0",
                "--samples",
                "5000",
                "--bdp-data",
                &data,
                "--out",
                &out_s,
                "--force",
            ]);
            assert_eq!(o.status.code(), Some(0), "{ext}: {}", stderr(&o));
            files.push(out_s);
        }
        let o = audit(&[
            "test",
            "--claim",
            "bdp:1:1.7e-8",
            "--samples-a",
            &files[0],
            "--samples-b",
            &files[1],
            "--json",
            "--no-report",
        ]);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{ext}: {}",
            stderr(&o)
        );
        let v = util::payload(serde_json::from_str(&stdout(&o)).unwrap());
        results.push((v["bounds"].clone(), v["verdict"].clone()));
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]), "{results:?}");
    // A binary name is refused: its layout has no room for x'.
    let o = audit(&[
        "sample",
        "--mechanism",
        "bdp-gaussian-sum",
        "--side",
        "a",
        "--shard-index",
        "0",
        "--samples",
        "100",
        "--bdp-data",
        &data,
        "--out",
        d.join("x.bin").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(".bin"), "{}", stderr(&o));
}
