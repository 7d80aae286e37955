//! The Bayesian DP audit (`dp_audit::audit::bayesian`): soundness at the null's boundary, power on the
//! buggy twin, and the data-file errors.

mod util;

use dp_audit::audit::Verdict;
use dp_audit::audit::bayesian::{BayesianConfig, Definition, audit_bayesian, parse_data};
use dp_audit::mechanisms::catalogue::{self, bayesian::data};
use dp_audit::mechanisms::math::gaussian_dp_delta;
use dp_audit::mechanisms::{Dataset, Params, PrivacyClaim, RecordDomain};

fn mu() -> Dataset {
    Dataset::scalars(data()).unwrap()
}

/// E_{x'~μ} H_e^ε(N(x', 1) ‖ N(0, 1)): the largest value the tester's target,
/// max(H(P̃‖Q̃), H(Q̃‖P̃)), takes for the σ = 1 Gaussian sum (both orders are equal for a
/// Gaussian shift). Rounded up.
fn mixture_hockey_stick(epsilon: f64) -> f64 {
    let d = data();
    let s: f64 = d.iter().map(|&x| gaussian_dp_delta(epsilon, x)).sum();
    (s / d.len() as f64 * (1.0 + 1e-9)).next_up()
}

fn run(id: &str, claim: PrivacyClaim, n: usize, seed: u64, beta: f64) -> Verdict {
    let e = catalogue::build(id, &Params::default()).unwrap();
    let base = e.witness.first().clone();
    let config = BayesianConfig::new(seed, n, beta);
    audit_bayesian(&*e.mechanism, &claim, &base, &mu(), "data()", &config)
        .unwrap()
        .verdict
}

/// Soundness at the boundary of the tested null: the claim's δ is set to the *exact* value of
/// the quantity the tester lower-bounds (E_{x'} H_e(P_{x'} ‖ Q) ≈ 5.49e-3, below the BDP δ of
/// 1.41e-2: a claim the inequality makes as hard to keep as possible), β = 0.05, n = 10^4 draws
/// per side, 200 seeds. An exact level-β test rejects with probability ≤ β = 0.05 per seed; the
/// assertion k ≤ 27 fails with probability < 1e-6 when that holds
/// (P[Bin(200, 0.05) ≥ 28] < 1e-6, the exact binomial tail summed in Python). Measured: 0/200
/// (and 0/1000 with AUDIT_SEED_SWEEP=1000): the event found on the training split does not reach
/// the supremum, so the test is conservative at this boundary.
#[test]
fn soundness_at_the_mixture_hockey_stick_value() {
    let delta = mixture_hockey_stick(1.0);
    assert!((5e-3..8e-3).contains(&delta), "{delta}");
    let claim = PrivacyClaim::bayesian(1.0, delta).unwrap();
    let seeds: u64 = std::env::var("AUDIT_SEED_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let k = (0..seeds)
        .filter(|&s| run("bdp-gaussian-sum", claim, 10_000, s, 0.05) == Verdict::Violation)
        .count();
    eprintln!("rejections at the boundary: {k}/{seeds} at β = 0.05");
    assert!(k as f64 <= 27.0 * seeds as f64 / 200.0, "{k}/{seeds}");
}

/// The correct entry's own claim is never near rejection, and the buggy twin (claim computed
/// without the outliers, δ = 1.7e-8 against a true E_{x'} H ≈ 5.49e-3) is caught at n = 10^5
/// draws (= releases) per side in total over the x' draws, for each of 10 seeds at β = 1e-3.
/// Power: the held-out half has ≈ 4·10^4 releases per side, so the event {w·x' large} carries
/// ≈ 250 excess releases against a Poisson noise of ≈ 30; the bound is ≥ 1e-3 ≫ 1.7e-8.
#[test]
fn buggy_twin_is_caught_and_the_correct_entry_is_not() {
    for seed in 0..10 {
        let b = catalogue::build("bdp-gaussian-sum-excludes-outliers", &Params::default()).unwrap();
        assert_eq!(
            run(
                "bdp-gaussian-sum-excludes-outliers",
                b.mechanism.claim(),
                100_000,
                seed,
                1e-3
            ),
            Verdict::Violation,
            "seed {seed}"
        );
        let c = catalogue::build("bdp-gaussian-sum", &Params::default()).unwrap();
        assert_eq!(
            run("bdp-gaussian-sum", c.mechanism.claim(), 100_000, seed, 1e-3),
            Verdict::NoViolation,
            "seed {seed}"
        );
    }
}

/// DP-SGD (10 subsampled steps, every iterate released): the Bayesian accountant's claim on the
/// full data is an upper bound, so the exact lower bound on the BDP δ from the sum-of-iterates
/// event (`dpsgd_bdp_delta_lower`) must stay below the claimed δ at the claimed ε (a cross-check
/// of the two computations that fails if either is wrong); for the twin fed the data without its
/// outliers the lower bound at its claimed ε exceeds its δ (its status). The twin is caught at
/// n = 5·10^4 draws per side for each of 5 seeds at β = 1e-3 (measured at 2·10^5: bound 5.0e-3
/// against 1e-5 allowed, U = 3836 against W = 256 in the held-out event; a quarter of that,
/// ≈ 960 against 64, is still far beyond Poisson noise), and the correct entry is not flagged in any of the 5 (each audit errs
/// with probability ≤ 1e-3, so this half fails with probability ≤ 5e-3 for a sound tester).
#[test]
fn dpsgd_twin_is_caught_and_the_bounds_agree() {
    use dp_audit::mechanisms::catalogue::bayesian::dpsgd_bdp_delta_lower;
    let eps_of = |id: &str| match catalogue::build(id, &Params::default())
        .unwrap()
        .mechanism
        .claim()
    {
        PrivacyClaim::Bayesian { epsilon, delta } => (epsilon, delta),
        other => panic!("{other}"),
    };
    let (e_ok, d_ok) = eps_of("bdp-dpsgd");
    let (e_bug, d_bug) = eps_of("bdp-dpsgd-excludes-outliers");
    assert!(dpsgd_bdp_delta_lower(&data(), 0.5, 1.0, 10, e_ok) <= d_ok);
    assert!(dpsgd_bdp_delta_lower(&data(), 0.5, 1.0, 10, e_bug) > 100.0 * d_bug);
    for seed in 0..5 {
        let b = catalogue::build("bdp-dpsgd-excludes-outliers", &Params::default()).unwrap();
        let v = run(
            "bdp-dpsgd-excludes-outliers",
            b.mechanism.claim(),
            50_000,
            seed,
            1e-3,
        );
        assert_eq!(v, Verdict::Violation, "seed {seed}");
        let c = catalogue::build("bdp-dpsgd", &Params::default()).unwrap();
        let v = run("bdp-dpsgd", c.mechanism.claim(), 50_000, seed, 1e-3);
        assert_eq!(v, Verdict::NoViolation, "seed {seed}");
    }
}

#[test]
fn data_file_errors_name_the_line() {
    let dom = RecordDomain::real(0.0, 1.0, 1);
    let ok = parse_data("# comment\n0.5\n\n[0.25]\n", "f", &dom).unwrap();
    assert_eq!(ok.len(), 2);
    for (text, line, what) in [
        ("0.5\n1.5\n", 2, "outside"),
        ("0.5\n[0.1, 0.2]\n", 2, "dimension 2"),
        ("[]\n", 1, "empty"),
        ("0.1\nNaN\n", 2, "not a record"),
        ("0.1\n\"x\"\n", 2, "not a record"),
    ] {
        let e = parse_data(text, "f", &dom).unwrap_err().to_string();
        assert!(
            e.contains(&format!("line {line}")) && e.contains(what),
            "{text:?}: {e}"
        );
    }
    assert!(
        parse_data("# nothing\n", "f", &dom)
            .unwrap_err()
            .to_string()
            .contains("no records")
    );
}

/// Worst-case testers refuse a Bayesian claim (it allows nothing about a fixed pair).
#[test]
fn worst_case_testers_refuse_a_bayesian_claim() {
    let claim = PrivacyClaim::bayesian(1.0, 1e-3).unwrap();
    for name in dp_audit::testers::TESTER_NAMES {
        let t = dp_audit::testers::by_name(name).unwrap();
        let e = t.plan(&claim, 10_000).unwrap_err().to_string();
        assert!(e.contains("Bayesian"), "{name}: {e}");
    }
}

/// `audit accountant --bayesian --estimator student-t` (the paper's estimator): the typical-case
/// ε on the shipped in-distribution distances is far below the worst-case accountants' on the
/// same run (the paper's qualitative figure), the moments accountant beside it is the Bayesian
/// one at distance 1, and bad data files are named by line (exit 2). The default estimator (the
/// distribution-free one) lies between the Student-t ε and the moments accountant's.
#[test]
fn bayesian_accountant_command() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_audit"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    let base = [
        "accountant",
        "--bayesian",
        "--sampling-rate",
        "0.01",
        "--noise-multiplier",
        "1.1",
        "--steps",
        "6000",
        "--delta",
        "1e-5",
    ];
    let mut args = base.to_vec();
    args.extend([
        "--data",
        "examples/bdp-distances.txt",
        "--json",
        "--estimator",
        "student-t",
    ]);
    let o = run(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let v = util::payload(v);
    assert_eq!(v["estimator_id"], "student-t");
    assert_eq!(v["estimator_default"], false);
    // The output says plainly what the paper's estimator assumes and how it was measured.
    let assumes = v["assumptions"].as_str().unwrap();
    assert!(
        assumes.contains("near normal") && assumes.contains("364 misses"),
        "{assumes}"
    );
    let bdp = v["bayesian"]["epsilon"].as_f64().unwrap();
    let moments = v["moments_accountant_epsilon"].as_f64().unwrap();
    let rdp = v["rdp_epsilon"].as_f64().unwrap();
    assert!(bdp > 0.0 && bdp < 0.5 * rdp, "{bdp} vs {rdp}");
    assert!(moments >= rdp * 0.99, "{moments} vs {rdp}");
    // The paper's percentile curve (§4.4.1): ε_p grows with p and exceeds ε_μ (δ_μ = (1 − p)δ
    // is smaller than δ).
    let curve = v["markov_percentiles"].as_array().unwrap();
    let ce: Vec<f64> = curve
        .iter()
        .map(|r| r["epsilon"].as_f64().unwrap())
        .collect();
    assert_eq!(ce.len(), 3);
    assert!(ce.windows(2).all(|w| w[0] < w[1]) && ce[0] > bdp, "{ce:?}");
    assert!(v["estimator"].as_str().unwrap().contains("Student-t"));
    let free = v["distribution_free"]["account"]["epsilon"]
        .as_f64()
        .unwrap();
    // Left to the default: the distribution-free estimator, the same ε as beside.
    let mut args = base.to_vec();
    args.extend(["--data", "examples/bdp-distances.txt", "--json"]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0));
    let d = util::payload(serde_json::from_slice(&o.stdout).unwrap());
    assert_eq!(d["estimator_id"], "distribution-free");
    assert_eq!(d["estimator_default"], true);
    assert!(d["distribution_free"].is_null());
    let default_eps = d["bayesian"]["epsilon"].as_f64().unwrap();
    assert_eq!(default_eps, free);
    assert!(
        bdp < default_eps && default_eps <= moments,
        "{bdp} {default_eps} {moments}"
    );
    // Individual DP at distance quantiles (not the paper's curve) grows with the quantile and
    // the largest shipped distance (0.2999 < 1) stays below the worst case.
    let rows = v["distance_quantiles"].as_array().unwrap();
    let eps: Vec<f64> = rows
        .iter()
        .map(|r| r["epsilon"].as_f64().unwrap())
        .collect();
    assert_eq!(rows.len(), 4);
    assert!(eps.windows(2).all(|w| w[0] <= w[1]), "{eps:?}");
    assert!(eps[3] > 0.0 && eps[3] < rdp, "{eps:?} vs {rdp}");
    let mut args = base.to_vec();
    args.extend([
        "--data",
        "examples/bdp-distances.txt",
        "--distance-quantiles",
        "0,50",
    ]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--distance-quantiles 0"));
    // 99.95 % leaves δ_μ = 5e-9 below the default γ = δ/1000 = 1e-8: refused, naming both.
    let mut args = base.to_vec();
    args.extend([
        "--data",
        "examples/bdp-distances.txt",
        "--markov-percentiles",
        "99.95",
    ]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains("--markov-percentiles") && err.contains("γ"),
        "{err}"
    );
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bdp-acct-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Binary distances (no ones): the §4.3.1 estimator with the Clopper–Pearson bound, whose ε
    // stays above the zero cost the Student-t estimator would read off a file without ones.
    let f = dir.join("binary.txt");
    std::fs::write(&f, "0\n".repeat(100)).unwrap();
    let mut args = base.to_vec();
    args.extend(["--data", f.to_str().unwrap(), "--json"]);
    let o = run(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["estimator"].as_str().unwrap().contains("Clopper–Pearson"));
    let e0 = v["bayesian"]["epsilon"].as_f64().unwrap();
    assert!(
        e0 > 0.0 && e0 < v["moments_accountant_epsilon"].as_f64().unwrap(),
        "{e0}"
    );
    for (text, needle) in [("0.5\nnan\n", "line 2"), ("", "")] {
        let f = dir.join("d.txt");
        std::fs::write(&f, text).unwrap();
        let mut args = base.to_vec();
        args.extend(["--data", f.to_str().unwrap()]);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{text:?}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(needle));
    }
}

/// `audit accountant --bayesian`'s estimators beside the paper's: the distribution-free (DKW)
/// ε_μ printed beside the Student-t one lies between it and the moments accountant on the shipped
/// distances (it assumes only their range); `--unclipped` accounts distances above the clipping
/// bound (the paper's §5.1 / App. B.2 regime, here the quantiles of a Weibull law of shape 1/2)
/// and states that no DP guarantee exists and when the estimate bounds nothing; bad values of
/// the new flags exit 2 naming them.
#[test]
fn bayesian_accountant_estimators_and_unclipped() {
    let base = [
        "accountant",
        "--bayesian",
        "--sampling-rate",
        "0.01",
        "--noise-multiplier",
        "1.1",
        "--steps",
        "600",
        "--delta",
        "1e-5",
    ];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend(extra);
        std::process::Command::new(env!("CARGO_BIN_EXE_audit"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    let o = run(&[
        "--data",
        "examples/bdp-distances.txt",
        "--estimator",
        "student-t",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = util::payload(serde_json::from_slice(&o.stdout).unwrap());
    let t = v["bayesian"]["epsilon"].as_f64().unwrap();
    let free = v["distribution_free"]["account"]["epsilon"]
        .as_f64()
        .unwrap();
    let ma = v["moments_accountant_epsilon"].as_f64().unwrap();
    assert!(t < free && free < ma, "{t} {free} {ma}");
    assert!(v["assumptions"].as_str().unwrap().contains("near normal"));
    let o = run(&[
        "--data",
        "examples/bdp-distances.txt",
        "--estimator",
        "distribution-free",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = util::payload(serde_json::from_slice(&o.stdout).unwrap());
    assert_eq!(v["bayesian"]["epsilon"].as_f64().unwrap(), free);
    assert!(v["distribution_free"].is_null());
    // The default is the distribution-free estimator: the same account.
    let o = run(&["--data", "examples/bdp-distances.txt", "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v = util::payload(serde_json::from_slice(&o.stdout).unwrap());
    assert_eq!(v["bayesian"]["epsilon"].as_f64().unwrap(), free);
    assert_eq!(v["estimator_id"], "distribution-free");
    // Above the default largest distance 1: refused, naming the sample, --max-distance and the
    // other estimator.
    let f1 = dir_for_far().join("far.txt");
    std::fs::write(&f1, "0.2\n1.5\n0.3\n").unwrap();
    let o = run(&["--data", f1.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains("distance sample 2 = 1.5")
            && err.contains("--max-distance")
            && err.contains("--estimator student-t"),
        "{err}"
    );
    let o = run(&["--data", f1.to_str().unwrap(), "--max-distance", "2"]);
    assert_eq!(o.status.code(), Some(0));
    // Weibull(shape 1/2, scale 0.2) quantiles: a heavy tail, 0.2·ln(1/(1 − u))², up to 9.6.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bdp-unclipped-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("weibull.txt");
    let text: String = (0..1000)
        .map(|i| {
            let u = (i as f64 + 0.5) / 1000.0;
            format!("{}\n", 0.2 * (-(1.0 - u).ln()).powi(2))
        })
        .collect();
    std::fs::write(&f, text).unwrap();
    let f = f.to_str().unwrap();
    let o = run(&["--data", f]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains("line ") && err.contains("--unclipped"),
        "{err}"
    );
    let o = run(&["--data", f, "--unclipped", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = util::payload(serde_json::from_slice(&o.stdout).unwrap());
    assert_eq!(v["unclipped"], true);
    let a = v["assumptions"].as_str().unwrap();
    assert!(
        a.contains("no DP guarantee") && a.contains("Weibull") && a.contains("bounds nothing"),
        "{a}"
    );
    assert!(v["bayesian"]["epsilon"].as_f64().unwrap() > 0.0);
    for (extra, needle) in [
        (&["--estimator", "t"][..], "--estimator \"t\""),
        (&["--max-distance", "3"][..], "--max-distance 3"),
        (&["--max-distance", "0"][..], "--max-distance 0"),
        (
            &["--estimator", "distribution-free", "--unclipped"][..],
            "--estimator distribution-free with --unclipped",
        ),
    ] {
        let mut args = vec!["--data", "examples/bdp-distances.txt"];
        args.extend(extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
    // §4.4.3: held-out distances from the same law show no difference; shifted by 0.05 (records
    // in training sit farther from their neighbours' gradients) both tests see it.
    let o = run(&[
        "--data",
        "examples/bdp-distances.txt",
        "--test-distances",
        "examples/bdp-distances-heldout.txt",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v = util::payload(serde_json::from_slice(&o.stdout).unwrap());
    let c = &v["train_vs_test"];
    assert!(c["t_p_value"].as_f64().unwrap() > 0.5, "{c}");
    assert!(c["levene_p_value"].as_f64().unwrap() > 0.5, "{c}");
}

/// The paper's curves from Weibull draws and the accountant's last refusals: the second half of
/// `bayesian_accountant_estimators_and_unclipped`'s checks, on the same settings.
#[test]
fn bayesian_accountant_curves_and_refusals() {
    let base = [
        "accountant",
        "--bayesian",
        "--sampling-rate",
        "0.01",
        "--noise-multiplier",
        "1.1",
        "--steps",
        "600",
        "--delta",
        "1e-5",
    ];
    let run = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend(extra);
        std::process::Command::new(env!("CARGO_BIN_EXE_audit"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bdp-curves-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The paper's curves from Weibull draws (§5.1 / App. B.3): files written, ε grows with the
    // steps, the least ε over the orders is the account's; bad Weibull values exit 2.
    let curves = dir.join("curves");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_audit"))
        .args([
            "accountant",
            "--bayesian",
            "--sampling-rate",
            "0.01",
            "--noise-multiplier",
            "1.1",
            "--steps",
            "200",
            "--delta",
            "1e-5",
            "--weibull-shape",
            "0.5",
            "--weibull-samples",
            "300",
            "--curves",
            curves.to_str().unwrap(),
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = util::payload(serde_json::from_slice(&o.stdout).unwrap());
    assert!(v["data"].as_str().unwrap().contains("Weibull"));
    let eps = v["bayesian"]["epsilon"].as_f64().unwrap();
    assert!(
        std::fs::metadata(curves.join("bdp-curves.png"))
            .unwrap()
            .len()
            > 1000
    );
    let c: serde_json::Value =
        serde_json::from_slice(&std::fs::read(curves.join("bdp-curves.json")).unwrap()).unwrap();
    let c = util::payload(c);
    let steps: Vec<f64> = c["by_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["bayesian"].as_f64().unwrap())
        .collect();
    assert!(
        steps.windows(2).all(|w| w[0] <= w[1] * (1.0 + 1e-9)),
        "{steps:?}"
    );
    assert_eq!(*steps.last().unwrap(), eps);
    let least = c["by_order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["bayesian"].as_f64().unwrap())
        .fold(f64::INFINITY, f64::min);
    assert!(least <= eps && eps < least * (1.0 + 1e-9), "{least} {eps}");
    for (extra, needle) in [
        (&["--weibull-shape", "0"][..], "--weibull-shape 0"),
        (
            &["--weibull-shape", "1", "--weibull-scale", "-1"][..],
            "--weibull-scale -1",
        ),
        (
            &["--weibull-shape", "1", "--weibull-samples", "2"][..],
            "--weibull-samples 2",
        ),
        (&[][..], "--data FILE or --weibull-shape K"),
    ] {
        let o = run(extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(err.contains(needle), "{extra:?}: {err}");
    }
    let shifted = dir.join("shifted.txt");
    let text: String = (0..500)
        .map(|i| format!("{}\n", 0.1 + 0.3 * (i as f64 + 0.5) / 500.0))
        .collect();
    std::fs::write(&shifted, text).unwrap();
    let o = run(&[
        "--data",
        "examples/bdp-distances.txt",
        "--test-distances",
        shifted.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(out.matches("the two sets differ").count(), 2, "{out}");
    let bad = dir.join("bad.txt");
    std::fs::write(&bad, "0.1\nx\n").unwrap();
    let o = run(&[
        "--data",
        "examples/bdp-distances.txt",
        "--test-distances",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains("--test-distances") && err.contains("line 2"),
        "{err}"
    );
    let o = run(&[
        "--data",
        "examples/bdp-distances.txt",
        "--estimator",
        "distribution-free",
        "--max-distance",
        "0.2",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("above the largest possible distance"));
}

/// A scratch folder of this test process.
fn dir_for_far() -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bdp-far-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One audit of the catalogue entry `id` with `params` and `claim`, as `run` but with the
/// definition and `--draw-dataset` chosen (the settings spelled out, as in a table of cases).
#[allow(clippy::too_many_arguments)]
fn run_with(
    id: &str,
    params: &[&str],
    claim: PrivacyClaim,
    n: usize,
    seed: u64,
    beta: f64,
    definition: Definition,
    draw_dataset: bool,
) -> Verdict {
    let params: Vec<String> = params.iter().map(|s| s.to_string()).collect();
    let e = catalogue::build(id, &Params::parse(&params).unwrap()).unwrap();
    let base = e.witness.first().clone();
    let config = BayesianConfig {
        definition,
        draw_dataset,
        ..BayesianConfig::new(seed, n, beta)
    };
    audit_bayesian(&*e.mechanism, &claim, &base, &mu(), "data()", &config)
        .unwrap()
        .verdict
}

/// max(H_e^ε(P̄ ‖ Q), H_e^ε(Q ‖ P̄)) for P̄ = E_{x'~μ} N(x', 1), Q = N(0, 1): the quantity
/// Definition 2's test bounds for the σ = 1 Gaussian sum (shift-invariant, so D does not
/// matter), by the trapezoid rule on [−12, 14] with step 10^-3 (its error is far below the
/// 10^-3 relative margin added). Checked against scipy (1.9522e-5 for H(P̄ ‖ Q); the other
/// order is < 1e-30).
fn weak_hockey_stick(epsilon: f64) -> f64 {
    let d = data();
    let pdf = |z: f64| (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let (lo, h, steps) = (-12.0, 1e-3, 26_000);
    let (mut pq, mut qp) = (0.0, 0.0);
    for k in 0..=steps {
        let w = lo + h * k as f64;
        let p: f64 = d.iter().map(|&x| pdf(w - x)).sum::<f64>() / d.len() as f64;
        let q = pdf(w);
        let wt = if k == 0 || k == steps { 0.5 * h } else { h };
        pq += wt * (p - epsilon.exp() * q).max(0.0);
        qp += wt * (q - epsilon.exp() * p).max(0.0);
    }
    let v = pq.max(qp);
    assert!((v / 1.9521820139401933e-05 - 1.0).abs() < 1e-3, "{v}");
    v * (1.0 + 1e-3)
}

/// Definition 2 catches a mechanism whose noise is 5 times too small for its claim (the
/// σ = 0.2 Gaussian sum against the σ = 1 claim δ_μ = 1.41e-2; its exact H_e(P̄ ‖ Q) is
/// 6.1e-2, scipy); `--draw-dataset` (Definition 1) catches the excludes-outliers claim
/// (δ = 1.7e-8; the joint divergence is ≈ 5.5e-3, as for a fixed D: the sum of the drawn D
/// hardly spreads the σ = 1 output) at n = 10^5 (measured bounds 9.5e-4, 1.3e-3, 1.4e-3 at
/// seeds 0–2; at 2·10^4 two of three seeds miss); the correct entry's own claim passes, with D
/// fixed or drawn, under either definition, at n = 2·10^4 draws per side; β = 1e-3, seeds 0–2.
/// False failures: 9 audits of correct claims, each ≤ 1e-3.
/// Not asserted, since it is not a violation: σ = 0.2 with D drawn too, whose averaged claims
/// are much weaker (the sum of the 5 drawn records spreads M(D) about as much as an outlier
/// moves it: E_{x'} H_e(E_D M(D with x') ‖ E_D M(D)) ≈ 2.1e-2, barely above 1.41e-2, and the
/// Definition 2 divergence H_e(E_{D,x'} M(D') ‖ E_D M(D)) = 4.8e-4 below it; numpy
/// convolution).
#[test]
fn definition_2_and_drawn_datasets_catch_their_bugs() {
    let own = catalogue::build("bdp-gaussian-sum", &Params::default())
        .unwrap()
        .mechanism
        .claim();
    let twin = catalogue::build("bdp-gaussian-sum-excludes-outliers", &Params::default())
        .unwrap()
        .mechanism
        .claim();
    for seed in 0..3 {
        for (definition, drawn, params, claim, n) in [
            (Definition::Weak, false, ["sigma=0.2"], own, 20_000),
            (Definition::Strong, true, ["sigma=1"], twin, 100_000),
        ] {
            let v = run_with(
                "bdp-gaussian-sum",
                &params,
                claim,
                n,
                seed,
                1e-3,
                definition,
                drawn,
            );
            assert_eq!(v, Verdict::Violation, "{definition:?} {drawn} {seed}");
        }
        for (definition, drawn) in [
            (Definition::Weak, false),
            (Definition::Strong, true),
            (Definition::Weak, true),
        ] {
            let kept = run_with(
                "bdp-gaussian-sum",
                &[],
                own,
                20_000,
                seed,
                1e-3,
                definition,
                drawn,
            );
            assert_eq!(kept, Verdict::NoViolation, "{definition:?} {drawn} {seed}");
        }
    }
}

/// The number of seeds of a soundness sweep: AUDIT_SEED_SWEEP, default 200.
fn sweep_seeds() -> u64 {
    std::env::var("AUDIT_SEED_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// Rejections of `claim` on the correct σ = 1 Gaussian sum over the sweep's seeds, n = 10^4,
/// β = 0.05; asserts k ≤ 27 per 200 seeds (P[Bin(200, 0.05) ≥ 28] < 1e-6, as in
/// `soundness_at_the_mixture_hockey_stick_value`).
fn sweep(claim: PrivacyClaim, definition: Definition, drawn: bool) {
    let seeds = sweep_seeds();
    let k = (0..seeds)
        .filter(|&s| {
            run_with(
                "bdp-gaussian-sum",
                &[],
                claim,
                10_000,
                s,
                0.05,
                definition,
                drawn,
            ) == Verdict::Violation
        })
        .count();
    eprintln!(
        "{definition:?}, draw-dataset {drawn}: rejections at the boundary {k}/{seeds} at β = 0.05"
    );
    assert!(k as f64 <= 27.0 * seeds as f64 / 200.0, "{k}/{seeds}");
}

/// Definition 2 at the boundary of its null: δ set to the exact max(H(P̄ ‖ Q), H(Q ‖ P̄))
/// (≈ 1.95e-5, the hardest claim the mechanism keeps under Definition 2).
#[test]
#[ignore = "soundness sweep: AUDIT_SEED_SWEEP=200, minutes"]
fn soundness_sweep_definition_2() {
    let claim = PrivacyClaim::bayesian(1.0, weak_hockey_stick(1.0)).unwrap();
    sweep(claim, Definition::Weak, false);
}

/// `--draw-dataset`, Definition 1, at E_{x'} H_e(N(x', 1) ‖ N(0, 1)) ≈ 5.49e-3 (scipy): with D drawn
/// the joint divergence of (D, x', w) is the same (a Gaussian shift does not depend on D), and
/// the test's rows, a function of it, are at most as far apart.
#[test]
#[ignore = "soundness sweep: AUDIT_SEED_SWEEP=200, minutes"]
fn soundness_sweep_drawn_dataset() {
    let claim = PrivacyClaim::bayesian(1.0, mixture_hockey_stick(1.0)).unwrap();
    sweep(claim, Definition::Strong, true);
}

/// `--draw-dataset`, Definition 2, at the fixed-D Definition 2 value ≈ 1.95e-5: the tested
/// divergence H(E_D P̄_D ‖ E_D Q_D) is at most E_D H(P̄_D ‖ Q_D) (joint convexity), which is
/// that value for every D (shift invariance).
#[test]
#[ignore = "soundness sweep: AUDIT_SEED_SWEEP=200, minutes"]
fn soundness_sweep_drawn_dataset_definition_2() {
    let claim = PrivacyClaim::bayesian(1.0, weak_hockey_stick(1.0)).unwrap();
    sweep(claim, Definition::Weak, true);
}

/// The report names the definition (text, HTML, JSON) and whether D was drawn; a report from
/// before these fields existed still loads and reads as Definition 1.
#[test]
fn reports_name_the_definition_and_old_reports_load() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bdp-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_audit"))
        .args([
            "run",
            "--mechanism",
            "bdp-gaussian-sum",
            "--samples",
            "2000",
            "--bdp-definition",
            "2",
            "--draw-dataset",
            "--quiet",
            "--report-dir",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run_dir = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.path().join("index.html").exists())
        .unwrap()
        .path();
    let html = std::fs::read_to_string(run_dir.join("index.html")).unwrap();
    assert!(html.contains("id=\"bayesian-definition\">Definition 2 (weak BDP"));
    assert!(html.contains("id=\"bayesian-drawn-dataset\""));
    let json = std::fs::read_to_string(run_dir.join("audit.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut v = util::payload(v);
    let b = &v["bayesian"];
    assert!(
        b["definition"]
            .as_str()
            .unwrap()
            .starts_with("Definition 2")
    );
    assert_eq!(b["dataset_drawn"], serde_json::Value::Bool(true));
    let drawn: u64 = b["drawn"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["first"].as_u64().unwrap() + d["second"].as_u64().unwrap())
        .sum();
    assert_eq!(drawn, 4000);
    // An old report: none of the three fields.
    for k in ["definition", "dataset_drawn", "drawn"] {
        v["bayesian"].as_object_mut().unwrap().remove(k);
    }
    let old: dp_audit::record::AuditReport = serde_json::from_value(v).unwrap();
    let text = dp_audit::report::text::render_text(&old);
    assert!(text.contains("Definition 1 (strong BDP)"), "{text}");
}

/// A mechanism that keeps a Definition 2 claim but not the Definition 1 claim with the same
/// (ε, δ): the σ = 1 Gaussian sum at bdp:1:1e-4. Its Definition 2 divergence is 1.95e-5 (scipy;
/// `weak_hockey_stick`), so the claim holds as Definition 2; its Definition 1 tail is 1.41e-2 and
/// the quantity the joint test bounds is 5.49e-3, so it fails as Definition 1. At n = 10^5,
/// β = 1e-3, seeds 0–2: the Definition 1 test flags it (power: measured bounds 2.6e-3, 1.6e-3,
/// 2.0e-3, over ten times 1e-4) and the Definition 2 test does not (bounds 0; each of those 3
/// audits errs with probability ≤ 1e-3).
#[test]
fn definition_2_claim_that_is_not_a_definition_1_claim() {
    assert!(weak_hockey_stick(1.0) < 1e-4);
    assert!(mixture_hockey_stick(1.0) > 1e-3);
    let claim = PrivacyClaim::bayesian(1.0, 1e-4).unwrap();
    for seed in 0..3 {
        let strong = run_with(
            "bdp-gaussian-sum",
            &[],
            claim,
            100_000,
            seed,
            1e-3,
            Definition::Strong,
            false,
        );
        assert_eq!(strong, Verdict::Violation, "seed {seed}");
        let weak = run_with(
            "bdp-gaussian-sum",
            &[],
            claim,
            100_000,
            seed,
            1e-3,
            Definition::Weak,
            false,
        );
        assert_eq!(weak, Verdict::NoViolation, "seed {seed}");
    }
}

/// E_{x'~μ^2} H_e^ε(N(x'_1 + x'_2, 1) ‖ N(0, 1)): the joint divergence max(H(P̃_2 ‖ Q̃_2),
/// H(Q̃_2 ‖ P̃_2)) that a `--group 2` audit of the σ = 1 Gaussian sum bounds (x' is observed, so
/// the joint divergence is the mean of the conditional ones; both orders are equal for a
/// Gaussian shift). Exact over the 10^6 ordered pairs of records, rounded up.
fn pair_hockey_stick(epsilon: f64) -> f64 {
    let d = data();
    let s: f64 = d
        .iter()
        .map(|&a| {
            d.iter()
                .map(|&b| gaussian_dp_delta(epsilon, a + b))
                .sum::<f64>()
        })
        .sum();
    (s / (d.len() * d.len()) as f64 * (1.0 + 1e-9)).next_up()
}

/// One Bayesian audit of the catalogue entry `id` (default parameters) with `--group k`.
fn run_group(id: &str, claim: PrivacyClaim, n: usize, seed: u64, beta: f64, k: usize) -> Verdict {
    let e = catalogue::build(id, &Params::default()).unwrap();
    let base = e.witness.first().clone();
    let config = BayesianConfig {
        group: k,
        ..BayesianConfig::new(seed, n, beta)
    };
    audit_bayesian(&*e.mechanism, &claim, &base, &mu(), "data()", &config)
        .unwrap()
        .verdict
}

/// `--group K` (Proposition 4): the correct entry's per-record claim (1, 1.41e-2) implies
/// (2, 7.7e-2) for K = 2 and (3, 0.31) for K = 3, far above the true group divergences
/// (pair_hockey_stick(2) = 3.49e-3 for K = 2), so it is not flagged on any of 20 seeds per K at
/// β = 1e-4 (a sound test errs with probability ≤ 1e-4 per audit: this half fails with
/// probability ≤ 4e-3); the buggy twin's claim (1, 1.67e-8) implies (2, 9.1e-8) and
/// (3, 3.7e-7), which the outliers break (a tuple with an outlier shifts the sum by ≈ 1: the
/// true group divergences are 3.49e-3 at K = 2, ε = 2, exact, and 2.39e-3 at K = 3, ε = 3,
/// Monte Carlo over 10^7 triples; numpy/scipy), caught on each of 3 seeds per K at β = 1e-3,
/// n = 10^5 for K = 2 and 3·10^5 for K = 3 (at 10^5 the K = 3 test missed on seed 0: the event
/// is harder to find at e^3; the K = 1 audit catches the twin at 10^5, so the group test is
/// not the more powerful one on this target).
#[test]
fn group_correct_entry_not_flagged_and_twin_caught() {
    let own = catalogue::build("bdp-gaussian-sum", &Params::default())
        .unwrap()
        .mechanism
        .claim();
    let twin = catalogue::build("bdp-gaussian-sum-excludes-outliers", &Params::default())
        .unwrap()
        .mechanism
        .claim();
    let h2 = pair_hockey_stick(2.0);
    assert!(h2 < 1e-2, "{h2}");
    for k in [2, 3] {
        for seed in 0..20 {
            let v = run_group("bdp-gaussian-sum", own, 10_000, seed, 1e-4, k);
            assert_eq!(v, Verdict::NoViolation, "K = {k}, seed {seed}");
        }
        for seed in 0..3 {
            let v = run_group(
                "bdp-gaussian-sum-excludes-outliers",
                twin,
                if k == 2 { 100_000 } else { 300_000 },
                seed,
                1e-3,
                k,
            );
            assert_eq!(v, Verdict::Violation, "twin, K = {k}, seed {seed}");
        }
    }
}

/// Soundness of the group test at the boundary of its null: a per-record claim (0.5, δ_1) with
/// δ_1 chosen so that the K = 2 claim it implies, (1, 2e^{0.5}δ_1), has exactly the joint
/// divergence the test bounds (pair_hockey_stick(1)): the per-record claim may be false, but
/// the tested null holds at its boundary. β = 0.05, n = 10^4 per side; asserts k ≤ 27 per 200
/// seeds (P[Bin(200, 0.05) ≥ 28] < 1e-6, as the other sweeps).
#[test]
#[ignore = "soundness sweep: AUDIT_SEED_SWEEP=200, minutes"]
fn soundness_sweep_group_of_two() {
    let h = pair_hockey_stick(1.0);
    let d1 = h / (2.0 * 0.5f64.exp()) * (1.0 + 1e-9);
    let claim = PrivacyClaim::bayesian(0.5, d1).unwrap();
    let seeds = sweep_seeds();
    let k = (0..seeds)
        .filter(|&s| run_group("bdp-gaussian-sum", claim, 10_000, s, 0.05, 2) == Verdict::Violation)
        .count();
    eprintln!(
        "group of 2 at the boundary (H = {h:.4e}, per-record δ = {d1:.4e}): rejections {k}/{seeds} at β = 0.05"
    );
    assert!(k as f64 <= 27.0 * seeds as f64 / 200.0, "{k}/{seeds}");
}

/// The group features: [w, s, w·s] with s the sum of the K records of a row; K = 1 is the
/// single-record map; a row width that K does not divide is refused.
#[test]
fn group_features_sum_the_records() {
    use dp_audit::audit::bayesian::{features, features_group};
    use dp_audit::mechanisms::Samples;
    let x = Samples::from_flat(2, vec![0.25, 0.5, 1.0, 0.0]).unwrap();
    let w = Samples::from_flat(1, vec![2.0, -1.0]).unwrap();
    let f = features_group(&x, &w, Definition::Strong, 2).unwrap();
    assert_eq!(f.dim(), 3);
    assert_eq!(f.row(0).to_vec(), vec![2.0, 0.75, 1.5]);
    assert_eq!(f.row(1).to_vec(), vec![-1.0, 1.0, -1.0]);
    let one = features_group(&x, &w, Definition::Strong, 1).unwrap();
    assert_eq!(
        one.values(),
        features(&x, &w, Definition::Strong).unwrap().values()
    );
    let weak = features_group(&x, &w, Definition::Weak, 2).unwrap();
    assert_eq!(weak.values(), w.values());
    assert!(features_group(&x, &w, Definition::Strong, 3).is_err());
}

/// `audit run --group K` and `audit accountant --bayesian --group K` from the command line:
/// the record names the per-record and the tested K-record claim and says what a verdict means
/// for the per-record claim; bad K exits 2 naming --group.
#[test]
fn group_from_the_command_line() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_audit"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap()
    };
    let audit = [
        "run",
        "--mechanism",
        "bdp-gaussian-sum-excludes-outliers",
        "--samples",
        "100000",
        "--no-report",
        "--group",
        "2",
    ];
    let mut args = audit.to_vec();
    args.push("--json");
    let o = run(&args);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let g = &v["section"]["data"]["bayesian"]["group"];
    assert_eq!(g["records"], 2, "{v}");
    let (e1, d1) = (
        g["per_record_epsilon"].as_f64().unwrap(),
        g["per_record_delta"].as_f64().unwrap(),
    );
    let (ek, dk) = (g["epsilon"].as_f64().unwrap(), g["delta"].as_f64().unwrap());
    assert!((2.0 * e1..2.0 * e1 * (1.0 + 1e-9)).contains(&ek), "{ek}");
    let want = 2.0 * e1.exp() * d1;
    assert!((want..want * (1.0 + 1e-9)).contains(&dk), "{dk} vs {want}");
    let words = v["verdict_words"].as_str().unwrap();
    assert!(
        words.contains("Proposition 4") && words.contains("per-record claim is refuted"),
        "{words}"
    );
    let o = run(&audit);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        text.contains("group        2 records") && text.contains("per-record claim is refuted"),
        "{text}"
    );
    for (k, needle) in [
        ("0", "--group 0"),
        ("1.5", "--group"),
        ("-1", "--group"),
        ("20", "K ≤"),
    ] {
        let o = run(&[
            "run",
            "--mechanism",
            "bdp-gaussian-sum",
            "--samples",
            "1000",
            "--no-report",
            "--group",
            k,
        ]);
        assert_eq!(o.status.code(), Some(2), "--group {k}");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(err.contains(needle), "--group {k}: {err}");
    }
    // --group applies to Bayesian claims only.
    let o = run(&[
        "run",
        "--mechanism",
        "laplace-count",
        "--samples",
        "1000",
        "--no-report",
        "--group",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--group applies to a Bayesian DP claim"));
    // The accountant: the per-record (ε_μ, δ_μ) and the group's, in JSON and text.
    let acct = [
        "accountant",
        "--bayesian",
        "--sampling-rate",
        "0.01",
        "--noise-multiplier",
        "1.1",
        "--steps",
        "600",
        "--delta",
        "1e-5",
        "--data",
        "examples/bdp-distances.txt",
    ];
    let mut args = acct.to_vec();
    args.extend(["--group", "3", "--json"]);
    let o = run(&args);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = util::payload(serde_json::from_slice(&o.stdout).unwrap());
    let e = v["bayesian"]["epsilon"].as_f64().unwrap();
    let g = &v["group"];
    assert_eq!(g["records"], 3);
    assert_eq!(g["per_record"]["epsilon"].as_f64().unwrap(), e);
    let (ek, dk) = (g["epsilon"].as_f64().unwrap(), g["delta"].as_f64().unwrap());
    assert!((3.0 * e..3.0 * e * (1.0 + 1e-9)).contains(&ek), "{ek}");
    let want = 3.0 * (2.0 * e).exp() * 1e-5;
    assert!((want..want * (1.0 + 1e-9)).contains(&dk), "{dk} vs {want}");
    assert!(g["method"].as_str().unwrap().contains("Proposition 4"));
    let mut args = acct.to_vec();
    args.extend(["--group", "3"]);
    let text = String::from_utf8_lossy(&run(&args).stdout).to_string();
    assert!(text.contains("group         3 records"), "{text}");
    for (k, needle) in [
        ("0", "--group 0"),
        ("2.5", "--group"),
        ("-2", "--group"),
        ("100000", "not below 1"),
    ] {
        let mut args = acct.to_vec();
        args.extend(["--group", k]);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "--group {k}");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(err.contains(needle), "--group {k}: {err}");
    }
}

/// The empirical ε_μ of a Bayesian audit (the verdict's own test inverted in ε at the claim's
/// δ_μ). On the twin (claim ε_μ = 1 at δ_μ = 1.7e-8, computed without the data's outliers) it
/// exceeds the claim's ε_μ, so the answer is in the claim's own units; and it never exceeds the
/// true ε_μ at that δ_μ, the smallest ε whose E_{x'} H_{e^ε} is ≤ δ_μ (bisection on the exact
/// mixture value, rounded up): a lower bound above the truth would be a false statement, which
/// each audit makes with probability ≤ β = 1e-3 (5 seeds: ≤ 5e-3 in all). The correct entry's
/// empirical ε_μ, when there is one, stays below its claim.
#[test]
fn empirical_epsilon_mu_is_in_the_claims_units_and_below_the_truth() {
    let b = catalogue::build("bdp-gaussian-sum-excludes-outliers", &Params::default()).unwrap();
    let claim = b.mechanism.claim();
    let PrivacyClaim::Bayesian { epsilon, delta } = claim else {
        panic!("{claim}")
    };
    // The true ε_μ at δ_μ: mixture_hockey_stick falls as ε grows.
    let (mut lo, mut hi) = (0.0_f64, 20.0_f64);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if mixture_hockey_stick(mid) <= delta {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let truth = hi;
    assert!(truth > epsilon, "{truth}");
    for seed in 0..5 {
        let e = catalogue::build("bdp-gaussian-sum-excludes-outliers", &Params::default()).unwrap();
        let config = BayesianConfig::new(seed, 100_000, 1e-3);
        let r = audit_bayesian(
            &*e.mechanism,
            &claim,
            e.witness.first(),
            &mu(),
            "data()",
            &config,
        )
        .unwrap();
        let emp = r
            .empirical_epsilon
            .clone()
            .expect("a violation has an empirical ε_μ");
        assert_eq!(emp.delta, delta, "seed {seed}");
        assert_eq!(emp.claimed_epsilon, Some(epsilon), "seed {seed}");
        eprintln!(
            "seed {seed}: empirical ε_μ ≥ {} (claim {epsilon}, truth {truth})",
            emp.lower_bound
        );
        assert!(
            emp.lower_bound > epsilon,
            "seed {seed}: {}",
            emp.lower_bound
        );
        assert!(
            emp.lower_bound <= truth,
            "seed {seed}: {} > {truth}",
            emp.lower_bound
        );
        assert_eq!(r.verdict, Verdict::Violation);
        let text = dp_audit::report::text::render_text(&r);
        assert!(text.contains("empirical ε_μ ≥"), "{text}");
        let c = catalogue::build("bdp-gaussian-sum", &Params::default()).unwrap();
        let r = audit_bayesian(
            &*c.mechanism,
            &c.mechanism.claim(),
            c.witness.first(),
            &mu(),
            "data()",
            &config,
        )
        .unwrap();
        if let Some(emp) = r.empirical_epsilon {
            assert!(!emp.exceeds_claim(), "seed {seed}: {}", emp.lower_bound);
        }
    }
}

/// `--target-epsilon` with `--bayesian`: the z found meets the target (its own ε_μ, re-run
/// with `--noise-multiplier z`, is ≤ the target) and is minimal to the search's tolerance (a
/// z 0.2 % smaller misses it); on Weibull(0.2, 2) distances, far below the clipping bound,
/// Bayesian DP needs less noise than the moments accountant (the same machinery at the worst
/// case), which is the point of the paper (App. B.2).
#[test]
fn bayesian_target_epsilon_finds_the_smallest_noise() {
    let run = |extra: &[&str]| {
        let mut args = vec![
            "accountant",
            "--bayesian",
            "--weibull-shape",
            "2",
            "--weibull-samples",
            "200",
            "--sampling-rate",
            "0.01",
            "--steps",
            "100",
            "--delta",
            "1e-5",
            "--json",
        ];
        args.extend(extra);
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_audit"))
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let v = run(&["--target-epsilon", "1"]);
    let cal = &v["calibration"];
    let z = cal["noise_multiplier"].as_f64().unwrap();
    assert_eq!(v["noise_multiplier"].as_f64(), Some(z));
    assert!(cal["epsilon"].as_f64().unwrap() <= 1.0);
    assert!(cal["moments_noise_ratio"].as_f64().unwrap() < 1.0, "{cal}");
    let at = |z: f64| {
        run(&["--noise-multiplier", &format!("{z}")])["bayesian"]["epsilon"]
            .as_f64()
            .unwrap()
    };
    assert!(at(z) <= 1.0);
    assert!(at(z * 0.998) > 1.0, "z = {z} is not minimal");
}
