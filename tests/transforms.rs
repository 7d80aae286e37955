//! Output transforms: values, dimensions and errors; data-processing soundness (a mechanism that
//! keeps its claim is not flagged through a transform); the floating-point leak entry flagged
//! through `float-bits` and recorded in the report; the `--transform` flag of `audit run` and
//! `audit test`.

mod util;

use dp_audit::audit::{AuditConfig, AuditReport, Verdict, audit_pair};
use dp_audit::mechanisms::{Mechanism, Samples, catalogue};
use dp_audit::testers::transforms::{
    AUTO_FEATURES, FLOAT_BITS_FEATURES, MAX_CHEBYSHEV_DEGREE, with_recommended_transform,
};
use dp_audit::testers::{HockeyStickTester, PropertyTester, Transform, TransformedMechanism};
use ndarray::array;
use util::{audit, stderr, stdout};

fn hockey() -> Vec<Box<dyn PropertyTester>> {
    vec![Box::new(HockeyStickTester::default())]
}

fn t(s: &str) -> Transform {
    s.parse().unwrap()
}

#[test]
fn tanh_values_and_shape() {
    let s = Samples::new(array![[0.0, 1.0], [-2.0, 50.0]]).unwrap();
    let out = t("tanh").apply(&s).unwrap();
    assert_eq!((out.n(), out.dim()), (2, 2));
    assert_eq!(out.values()[[0, 0]], 0.0);
    assert_eq!(out.values()[[0, 1]], 1f64.tanh());
    assert_eq!(out.values()[[1, 0]], (-2f64).tanh());
    assert_eq!(out.values()[[1, 1]], 1.0);
    let out = t("tanh:0.5").apply(&s).unwrap();
    assert_eq!(out.values()[[1, 0]], (-1f64).tanh());
}

#[test]
fn chebyshev_appends_k_features_per_coordinate() {
    let s = Samples::new(array![[0.3, -1.2]]).unwrap();
    let out = t("chebyshev:3").apply(&s).unwrap();
    assert_eq!(out.dim(), 2 * (1 + 3));
    assert_eq!(t("chebyshev:3").output_dim(2), 8);
    let v = out.values();
    // The coordinates are kept first.
    assert_eq!((v[[0, 0]], v[[0, 1]]), (0.3, -1.2));
    for (j, x) in [0.3f64, -1.2].into_iter().enumerate() {
        let y = x.tanh();
        // T_1 = y, T_2 = 2y² − 1, T_3 = 4y³ − 3y.
        let want = [y, 2.0 * y * y - 1.0, 4.0 * y.powi(3) - 3.0 * y];
        for (k, w) in want.into_iter().enumerate() {
            let got = v[[0, 2 + 3 * j + k]];
            assert!(
                (got - w).abs() < 1e-14,
                "T_{}(tanh {x}) = {got}, want {w}",
                k + 1
            );
        }
    }
}

#[test]
fn float_bits_features_of_known_values() {
    // 2.0 is an f32 and an integer: low bits 0, all 13 dyadic indicators 1.
    // 0.75 = 3·2^-2: integer only from k = 2 on. 0.1 is not an f32 and on no dyadic grid;
    // its f64 bits end in …1001_1010, so the low 6 bits are 0b011010 = 26.
    let s = Samples::from_column(vec![2.0, 0.75, 0.1]);
    let out = t("float-bits").apply(&s).unwrap();
    assert_eq!(out.dim(), 16);
    assert_eq!(t("float-bits").output_dim(3), 48);
    let row = |i: usize| out.row(i).to_vec();
    let mut want2 = vec![2.0, 0.0, 1.0];
    want2.extend([1.0; 13]);
    assert_eq!(row(0), want2);
    let mut want075 = vec![0.75, 0.0, 1.0, 0.0, 0.0];
    want075.extend([1.0; 11]);
    assert_eq!(row(1), want075);
    assert_eq!(0.1f64.to_bits() & 63, 26);
    let mut want01 = vec![0.1, 26.0, 0.0];
    want01.extend([0.0; 13]);
    assert_eq!(row(2), want01);
    assert!(FLOAT_BITS_FEATURES.contains("k = 0, …, 12"));
}

#[test]
fn float_bits_layout_for_several_coordinates() {
    let s = Samples::new(array![[0.5, 3.0]]).unwrap();
    let out = t("float-bits").apply(&s).unwrap();
    assert_eq!(out.dim(), 2 * 16);
    let v = out.row(0).to_vec();
    assert_eq!(&v[..2], &[0.5, 3.0]);
    // Block of coordinate 0 (0.5): integer from k = 1; block of coordinate 1 (3.0): from k = 0.
    assert_eq!(&v[2..6], &[0.0, 1.0, 0.0, 1.0]);
    assert_eq!(&v[17..21], &[0.0, 1.0, 1.0, 1.0]);
}

/// `auto`: the float-bits block, then the f32 low mantissa bits and the binade, per coordinate.
#[test]
fn auto_features_of_known_values() {
    // 1.5 is an f32 whose f32 mantissa ends in 0 bits; binade 0 ([1, 2)).
    // 1 + 2^-23 is an f32 with f32 mantissa 1 (low 6 bits = 1), f64 low bits 0; binade 0.
    // 0.1 is not an f32: f32 feature 0; binade −4 (0.1 ∈ [2^-4, 2^-3)).
    // 0 and 1e-300 fall in the lowest band (−32); 1e300 in the highest (31).
    let x = [
        1.5,
        1.0 + 2f64.powi(-23),
        0.1,
        0.0,
        1e-300,
        -1e300,
        3.0 * 2f64.powi(-21),
    ];
    let s = Samples::from_column(x.to_vec());
    let out = t("auto").apply(&s).unwrap();
    assert_eq!(out.dim(), 1 + 17);
    assert_eq!(t("auto").output_dim(1), 18);
    let fb = t("float-bits").apply(&s).unwrap();
    for i in 0..x.len() {
        let row = out.row(i).to_vec();
        // The coordinate and the float-bits block come first, unchanged.
        assert_eq!(&row[..16], &fb.row(i).to_vec()[..], "row {i}");
    }
    let tail = |i: usize| (out.values()[[i, 16]], out.values()[[i, 17]]);
    assert_eq!(tail(0), (0.0, 0.0));
    assert_eq!(tail(1), (1.0, 0.0));
    assert_eq!(tail(2), (0.0, -4.0));
    assert_eq!(tail(3), (0.0, -32.0));
    assert_eq!(tail(4), (0.0, -32.0));
    assert_eq!(tail(5), (0.0, 31.0));
    // 3·2^-21 = 1.5·2^-20: f32 mantissa 0x400000 (low bits 0), binade −20.
    assert_eq!(tail(6), (0.0, -20.0));
    // f32 values on the 2^-22 grid in [1, 2) (mantissa bit 0 clear) against the 2^-23 grid: the
    // f32 feature separates them while the f64 low bits are 0 for both.
    let odd = 1.0 + 2f64.powi(-23) * 5.0;
    let even = 1.0 + 2f64.powi(-22) * 5.0;
    let o = t("auto")
        .apply(&Samples::from_column(vec![odd, even]))
        .unwrap();
    assert_eq!((o.values()[[0, 1]], o.values()[[1, 1]]), (0.0, 0.0));
    assert_eq!((o.values()[[0, 16]], o.values()[[1, 16]]), (5.0, 10.0));
    assert!(AUTO_FEATURES.contains("f32 mantissa") && AUTO_FEATURES.contains("binade"));
}

/// For d ≥ 2, `auto` appends the L2, L1 and L∞ norms after the per-coordinate blocks.
#[test]
fn auto_appends_norms_for_vectors() {
    let s = Samples::new(array![[3.0, -4.0], [0.0, 0.5]]).unwrap();
    let out = t("auto").apply(&s).unwrap();
    assert_eq!(out.dim(), 2 * 18 + 3);
    assert_eq!(t("auto").output_dim(2), 39);
    assert_eq!(t("auto").output_dim(5), 5 * 18 + 3);
    let v = out.row(0).to_vec();
    assert_eq!(&v[..2], &[3.0, -4.0]);
    assert_eq!(&v[36..], &[5.0, 7.0, 4.0]);
    assert_eq!(&out.row(1).to_vec()[36..], &[0.5, 0.5, 0.5]);
    // A norm that overflows is an error naming the transform, not an infinite feature.
    let big = Samples::new(array![[f64::MAX, f64::MAX]]).unwrap();
    let err = t("auto").apply(&big).unwrap_err().to_string();
    assert!(err.contains("auto") && err.contains("inf"), "{err}");
    assert!(t("auto").describe().contains("L2, L1 and L∞"));
}

#[test]
fn none_is_the_identity() {
    let s = Samples::from_column(vec![1.5, -3.0]);
    assert_eq!(Transform::None.apply(&s).unwrap(), s);
    assert_eq!(t("none"), Transform::None);
}

#[test]
fn bad_spellings_and_values_are_errors_naming_what_is_allowed() {
    for bad in [
        "chebyshev:0",
        "chebyshev:33",
        "chebyshev:two",
        "chebyshev",
        "tanh:0",
        "tanh:-1",
        "tanh:inf",
        "tanh:NaN",
        "float-bits:3",
        "auto:2",
        "none:1",
        "bits",
        "",
    ] {
        let err = bad.parse::<Transform>().unwrap_err().to_string();
        assert!(
            err.contains("allowed")
                && (bad.is_empty() || err.contains(bad.split(':').next().unwrap())),
            "{bad:?}: {err}"
        );
    }
    assert!(
        Transform::Chebyshev { degree: 0 }
            .apply(&Samples::from_column(vec![1.0]))
            .is_err()
    );
    assert!(
        Transform::Chebyshev {
            degree: MAX_CHEBYSHEV_DEGREE
        }
        .validate()
        .is_ok()
    );
    let nan = Samples::from_column(vec![1.0, f64::NAN]);
    let err = t("float-bits").apply(&nan).unwrap_err().to_string();
    assert!(err.contains("release 1"), "{err}");
}

#[test]
fn wrapped_mechanism_keeps_the_claim_and_reports_the_new_dimension() {
    let e = catalogue::build("laplace-sum", &Default::default()).unwrap();
    let claim = e.mechanism.claim();
    let m = TransformedMechanism::new(e.mechanism, t("chebyshev:2")).unwrap();
    assert_eq!(
        (m.id(), m.claim(), m.output_dim()),
        ("laplace-sum", claim, 3)
    );
    let mut rng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::seed_from_u64(1);
    let s = m.sample(e.witness.first(), 5, &mut rng).unwrap();
    assert_eq!((s.n(), s.dim()), (5, 3));
}

/// Data-processing soundness: through a fixed transform, mechanisms that keep their claim are
/// not flagged. `float-bits` is checked on mechanisms whose outputs are discrete (integers or
/// category codes), whose float representation is a function of the released value; on
/// continuous floating-point samplers `float-bits` may legitimately find a Mironov (2012) leak
/// (the catalogue's correct entries are correct in the real-number model only), so those are
/// checked through the smooth transforms `tanh` and `chebyshev`.
///
/// False-failure rate: 18 audits at β = 1e-3 each, so the number of false violations is
/// stochastically below Binomial(18, 1e-3); the test fails only at ≥ 3 violations, which has
/// probability ≤ C(18, 3)·1e-9 ≈ 8.2e-7 for sound transforms and testers. An unsound transform
/// (one that depended on the samples) would be flagged on most seeds.
#[test]
fn transforms_do_not_flag_mechanisms_keeping_their_claims() {
    let cases = [
        ("geometric-count", "float-bits"),
        ("randomized-response", "float-bits"),
        ("kary-randomized-response", "float-bits"),
        ("laplace-sum", "tanh"),
        ("laplace-sum", "chebyshev:4"),
        ("gaussian-sum-analytic", "chebyshev:4"),
    ];
    let mut violations = Vec::new();
    let mut table = String::new();
    for (id, spelling) in cases {
        for seed in 0..3u64 {
            let e = catalogue::build(id, &Default::default()).unwrap();
            assert!(!e.status.is_buggy());
            let m = TransformedMechanism::new(e.mechanism, t(spelling)).unwrap();
            let config = AuditConfig {
                seed: 1000 + seed,
                samples_per_side: 50_000,
                failure_probability: 1e-3,
            };
            let r = audit_pair(&m, &m.claim(), &e.witness, &hockey(), &config).unwrap();
            let margin = r
                .bounds
                .iter()
                .map(|b| b.value - b.allowed)
                .fold(f64::NEG_INFINITY, f64::max);
            table += &format!("{id:26} {spelling:12} seed {seed}: margin {margin:+.3e}\n");
            if r.verdict == Verdict::Violation {
                violations.push(format!("{id} {spelling} seed {seed}"));
            }
        }
    }
    eprintln!("{table}");
    assert!(violations.len() < 3, "{violations:?}\n{table}");
}

/// The floating-point leak entry: flagged through its recommended transform (fewer releases than
/// the defaults; the supports are disjoint, so the bound is near 1 with any sample size).
/// Exact: a violation needs a lower bound above 0; it cannot be reached by chance on a mechanism
/// keeping its claim except with probability ≤ β.
#[test]
fn float_leak_entry_is_flagged_through_float_bits() {
    let e = catalogue::build("laplace-sum-coarse-noise", &Default::default()).unwrap();
    assert!(e.status.is_buggy());
    let (m, transform) = with_recommended_transform(e.mechanism).unwrap();
    assert_eq!(transform, Some(Transform::FloatBits));
    let config = AuditConfig {
        samples_per_side: 20_000,
        ..AuditConfig::default()
    };
    let r = audit_pair(&*m, &m.claim(), &e.witness, &hockey(), &config).unwrap();
    assert_eq!(r.verdict, Verdict::Violation);
    let best = r.bounds.iter().map(|b| b.value).fold(0.0, f64::max);
    assert!(best > 0.9, "H_e ≥ {best}: the supports are disjoint");
}

#[test]
fn audit_run_uses_and_records_the_recommended_transform() {
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum-coarse-noise",
        "--samples",
        "20000",
        "--json",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let r: AuditReport =
        serde_json::from_value(util::payload(serde_json::from_str(&stdout(&o)).unwrap())).unwrap();
    assert_eq!(r.output_transform, Some(Transform::FloatBits));
    assert!(stdout(&o).contains("\"output_transform\": \"float-bits\""));
    // Explicitly without the transform: nothing recorded (the field is absent from the JSON).
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum-coarse-noise",
        "--samples",
        "20000",
        "--transform",
        "none",
        "--json",
        "--no-report",
    ]);
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1));
    assert!(!stdout(&o).contains("output_transform"));
    let r: AuditReport =
        serde_json::from_value(util::payload(serde_json::from_str(&stdout(&o)).unwrap())).unwrap();
    assert_eq!(r.output_transform, None);
    // Text output names the transform.
    let o = audit(&[
        "run",
        "--mechanism",
        "randomized-response",
        "--samples",
        "2000",
        "--transform",
        "chebyshev:2",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("transform    chebyshev:2"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn bad_transform_flags_exit_2_naming_the_value() {
    for (args, needle) in [
        (
            vec![
                "run",
                "--mechanism",
                "laplace-sum",
                "--transform",
                "chebyshev:0",
            ],
            "chebyshev:0",
        ),
        (
            vec![
                "run",
                "--mechanism",
                "laplace-sum",
                "--transform",
                "wavelet",
            ],
            "wavelet",
        ),
        (
            vec![
                "test",
                "--samples-a",
                "x",
                "--samples-b",
                "y",
                "--claim",
                "pure:1",
                "--transform",
                "tanh:-2",
            ],
            "tanh:-2",
        ),
    ] {
        let mut a = args.clone();
        a.push("--no-report");
        let o = audit(&a);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = stderr(&o);
        assert!(err.contains(needle) && err.contains("allowed"), "{err}");
    }
}

#[test]
fn audit_test_applies_the_transform_to_both_sides() {
    let dir = std::env::temp_dir().join(format!("dp-audit-transforms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A: multiples of 1/4; B: the same shifted by 0.1 (never a multiple of 1/4). Values alone
    // overlap heavily; the float-bits grid indicators separate the sides completely.
    let a: String = (0..3000)
        .map(|i| format!("{}\n", (i % 40) as f64 / 4.0))
        .collect();
    let b: String = (0..3000)
        .map(|i| format!("{}\n", (i % 40) as f64 / 4.0 + 0.1))
        .collect();
    let (pa, pb) = (dir.join("a.jsonl"), dir.join("b.jsonl"));
    std::fs::write(&pa, a).unwrap();
    std::fs::write(&pb, b).unwrap();
    let run = |transform: &str| {
        audit(&[
            "test",
            "--samples-a",
            pa.to_str().unwrap(),
            "--samples-b",
            pb.to_str().unwrap(),
            "--claim",
            "pure:1",
            "--transform",
            transform,
            "--json",
            "--no-report",
        ])
    };
    let o = run("float-bits");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v = util::payload(serde_json::from_str(&stdout(&o)).unwrap());
    assert_eq!(v["output_transform"], "float-bits");
    let o = run("none");
    let v = util::payload(serde_json::from_str(&stdout(&o)).unwrap());
    assert!(v.get("output_transform").is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn reports_without_the_field_still_load_and_the_page_names_the_transform() {
    let e = catalogue::build("randomized-response", &Default::default()).unwrap();
    let config = AuditConfig {
        samples_per_side: 1000,
        ..AuditConfig::default()
    };
    let m = &*e.mechanism;
    let mut r = audit_pair(m, &m.claim(), &e.witness, &hockey(), &config).unwrap();
    let old = serde_json::to_string(&r).unwrap();
    assert!(!old.contains("output_transform"));
    let back: AuditReport = serde_json::from_str(&old).unwrap();
    assert_eq!(back.output_transform, None);
    r.output_transform = Some(t("chebyshev:3"));
    let json = serde_json::to_string(&r).unwrap();
    let back: AuditReport = serde_json::from_str(&json).unwrap();
    assert_eq!(
        back.output_transform,
        Some(Transform::Chebyshev { degree: 3 })
    );
    let page = dp_audit::report::html::render_run(&r, "x", &[]);
    assert!(page.contains("Outputs transformed by"), "no transform line");
    assert!(
        page.contains("--transform chebyshev:3"),
        "reproduce command"
    );
}

/// Releases of a float32 Gaussian sum (Jin et al., IEEE S&P 2022, float32 form; the exec twin is
/// `tests/suite/gaussian_float32_box_muller.py`): Z from Box–Muller on two 24-bit uniforms,
/// rounded to f32, and the release fl32(sum + fl32(σ·Z)), σ = 3.7306 (the analytic σ for
/// (1, 1e-5)). Sums 5 and 6: outputs in [1, 2) are multiples of 2^-22 from sum 5 (the noise is
/// in [−4, −3)) and of 2^-21 from sum 6, so "binade 0 and f32 mantissa odd at bit 1" has
/// probability ≈ 0.035 against 0: δ ≥ 0.03 at every ε.
fn float32_box_muller(sum: f32, n: usize, seed: u64) -> Samples {
    use rand::RngExt;
    let mut rng = dp_audit::rng::Seed(seed).rng(dp_audit::rng::Stream::Other { tag: 40, index: 0 });
    let sigma = 3.730_631_6_f32;
    Samples::from_column(
        (0..n)
            .map(|_| {
                let u1 = f64::from(rng.random::<u32>() >> 8) / 16_777_216.0;
                let u1 = u1 + 1.0 / 16_777_216.0;
                let u2 = f64::from(rng.random::<u32>() >> 8) / 16_777_216.0;
                let z = ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32;
                f64::from(sum + sigma * z)
            })
            .collect(),
    )
}

/// Through `auto` the float32 leak is a violation of (1, 1e-5) with 2·10^4 releases per side
/// (β = 1e-3: the bound exceeds the truth with probability ≤ 1e-3, and the truth here is ≥ 0.03,
/// so the check that it exceeds 1e-5 fails only on a loss of power). Its f64 low bits are all
/// zero, which is why `float-bits` alone does not see it (printed, not asserted).
#[test]
fn auto_transform_finds_a_float32_box_muller_leak() {
    let candidates = [(
        dp_audit::testers::Divergence::HockeyStick { epsilon: 1.0 },
        1e-5,
    )];
    let (p, q) = (
        float32_box_muller(5.0, 20_000, 1),
        float32_box_muller(6.0, 20_000, 2),
    );
    let mut bounds = Vec::new();
    for spelling in ["float-bits", "auto"] {
        let tr = t(spelling);
        let mut rng = dp_audit::rng::Seed(0).rng(dp_audit::rng::Stream::Tester { bound: 0 });
        let sel = HockeyStickTester::default()
            .select_and_bound(
                &tr.apply(&p).unwrap(),
                &tr.apply(&q).unwrap(),
                &candidates,
                1e-3,
                &mut rng,
            )
            .unwrap()
            .unwrap();
        eprintln!(
            "float32 Box–Muller through {spelling}: bound {:.4e} on {}",
            sel.measurement.value,
            sel.measurement.event.as_ref().unwrap().description
        );
        bounds.push(sel.measurement.value);
    }
    assert!(bounds[1] > 1e-5 && bounds[1] < 0.05, "{bounds:?}");
}

/// What `auto` does on a continuous output: `audit bench power`'s scaled-noise Gaussian
/// (dpsgd-scaled-noise, n = 10^5 per side, β = 0.05, 10 audits per cell) audited through `none`
/// and through `auto` on the same seeds, against the (1, 1e-5) point claim and the Gaussian-DP
/// profile. Asserts that `auto` detects at least as often as `none` at s < 1 (its extra
/// candidates cost no power here). At s = 1 `auto` flags the entry too, and rightly: the
/// release 1 + σZ computed in f64 cancels near 0, so a release in a small binade ends in zero
/// mantissa bits (|y| < 2^-4: 63 % of releases have the low 6 bits 0 against 1.7 % for 0 + σZ),
/// a floating-point leak of the kind Mironov (2012) describes; the entry is correct only in the
/// real-number model. Run: `cargo test --release --test transforms -- --ignored --nocapture
/// auto_power`.
#[test]
#[ignore = "power comparison: about a minute; run with --ignored"]
fn auto_power_on_the_scaled_noise_gaussian() {
    use dp_audit::mechanisms::{Params, PrivacyClaim};
    let profile = PrivacyClaim::gaussian_dp(dp_audit::bench::profile_mu().unwrap()).unwrap();
    let mut worse = Vec::new();
    for (name, claim, scales) in [
        ("point (1, 1e-5)", None, &[0.6, 0.63, 0.7, 1.0][..]),
        ("profile", Some(profile), &[0.8, 0.9, 0.95, 1.0][..]),
    ] {
        for &s in scales {
            let mut line = format!("{name:16} s = {s:4}:");
            let mut counts = Vec::new();
            for spelling in ["none", "auto"] {
                let mut detections = 0;
                for r in 0..10u64 {
                    let e = catalogue::build(
                        "dpsgd-scaled-noise",
                        &Params::default().set("noise_scale", s),
                    )
                    .unwrap();
                    let claim = claim.unwrap_or_else(|| e.mechanism.claim());
                    let m = TransformedMechanism::new(e.mechanism, t(spelling)).unwrap();
                    let config = AuditConfig {
                        seed: 7000 + r,
                        samples_per_side: 100_000,
                        failure_probability: 0.05,
                    };
                    let rep = audit_pair(&m, &claim, &e.witness, &hockey(), &config).unwrap();
                    detections += usize::from(rep.verdict == Verdict::Violation);
                }
                line += &format!("  {spelling} {detections}/10");
                counts.push(detections);
            }
            eprintln!("{line}");
            if s < 1.0 && counts[1] < counts[0] {
                worse.push(line);
            }
        }
    }
    assert!(worse.is_empty(), "{worse:?}");
}

/// The float32 leak in a 2-D output (two float32 Box–Muller sums, (5, 5) against (6, 6)):
/// the joint pattern of all auto features is too fine to repeat, so the tester offers each
/// pair of discrete features (f32 mantissa bits × binade of one coordinate is a pair); through
/// `auto` it is a violation of (2, 2e-5) with 10^5 releases per side (the truth is δ ≥ 0.03 at
/// every ε; β = 1e-3, so this fails only on a loss of power).
#[test]
fn auto_transform_finds_a_float32_leak_in_a_vector() {
    let join = |a: Samples, b: Samples| {
        let flat = a
            .values()
            .iter()
            .zip(b.values().iter())
            .flat_map(|(&x, &y)| [x, y])
            .collect();
        Samples::from_flat(2, flat).unwrap()
    };
    let p = join(
        float32_box_muller(5.0, 100_000, 3),
        float32_box_muller(5.0, 100_000, 4),
    );
    let q = join(
        float32_box_muller(6.0, 100_000, 5),
        float32_box_muller(6.0, 100_000, 6),
    );
    let candidates = [(
        dp_audit::testers::Divergence::HockeyStick { epsilon: 2.0 },
        2e-5,
    )];
    let tr = t("auto");
    let mut rng = dp_audit::rng::Seed(0).rng(dp_audit::rng::Stream::Tester { bound: 0 });
    let sel = HockeyStickTester::default()
        .select_and_bound(
            &tr.apply(&p).unwrap(),
            &tr.apply(&q).unwrap(),
            &candidates,
            1e-3,
            &mut rng,
        )
        .unwrap()
        .unwrap();
    let event = &sel.measurement.event.as_ref().unwrap().description;
    eprintln!(
        "2-D float32 Box–Muller through auto: bound {:.4e} on {event}",
        sel.measurement.value
    );
    assert!(sel.measurement.value > 2e-5, "{event}");
}
