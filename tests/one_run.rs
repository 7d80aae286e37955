//! One-run auditing of the canary DP-SGD trainer (Steinke, Nasr & Jagielski 2023): soundness
//! over seeds, power against buggy twins, and the `audit one-run` command line.
//!
//! # What is detectable at m = 1000 (derivation)
//! With full-batch DP-GD (q = 1) and white-box Dirac gradient canaries, each canary's score is
//! exactly a Gaussian shift test with μ = √T/(s·z) (the claim's μ = √T/z; s = noise_scale), the
//! best any one-run guesser can do per canary. Expected counts for the top-k/bottom-k guesser
//! (k per side the best of 1–30 % of m) put into Theorem 3.1 at β = 0.05, δ = 1e-5 give
//! (computed from exact binomial tails and the exact Gaussian profile):
//!
//! | claim μ | claimed ε | ε̂ expected, correct (s = 1) | s = 0.5 | s = 0.4 |
//! |---|---|---|---|---|
//! | m = 1000: 0.25 | 0.926 | 0.20 | 0.66 | 0.91 |
//! | m = 1000: 0.5 | 1.993 | 0.66 | 1.63 | 2.17 |
//! | m = 1000: 1.0 | 4.377 | 1.63 | 3.43 | 4.17 |
//! | m = 10⁴: 0.5 | 1.993 | 1.04 | 2.35 | 2.88 |
//! | m = 10⁵: 0.5 | 1.993 | 1.30 | 2.65 | 3.28 |
//!
//! So the halved-noise twin (s = 0.5) is **not** detectable in one run at m = 1000 by Theorem
//! 3.1 for any μ: the bound reaches about 0.75–0.8 of the claimed ε (a Gaussian's ε at δ = 1e-5
//! lives in tails that 1000 canaries cannot sample; and 2mδ must stay ≪ 1, which caps m near
//! 10⁵ at δ = 1e-5). At m = 1000 the detectable twins are s ≤ 0.4 and the wrong sampling rate
//! (claimed ε = 0.166 for a trainer whose canaries are μ = 0.5-GDP, expected ε̂ ≈ 0.66). The
//! halved-noise twin is caught at m = 30 000 (expected ε̂ ≈ 2.3 > 1.993).
//!
//! The Gaussian-DP bound (Mahloujifar, Melis & Chaudhuri 2024; `src/audit/one_run.rs`) judges a
//! full-batch claim by μ and is tighter on the same guesses: its ε at δ = 1e-5 averages
//! 0.85 against the (ε, δ) bound's 0.62 on the correct trainer and 2.19 against 1.56 on the
//! halved-noise twin, which it catches in 139 of 200 seeds at m = 1000 (16/200 before).
//!
//! White-box canaries of this trainer are independent channels, so the order-statistics bound
//! (Xiang et al. 2025; `src/audit/one_run/order.rs`) decides their verdicts: 200 of 200 on the
//! halved-noise twin at m = 1000, mean ε̂ 3.94 at m = 10⁴ (see the tests below).

mod util;

use dp_audit::audit::one_run::calibrated::ScoreKind;
use dp_audit::audit::one_run::{TrainerAuditConfig, audit_trainer};
use dp_audit::mechanisms::Params;
use dp_audit::mechanisms::canary_trainer::{DataSet, ThreatModel, TrainerConfig};

fn config_on(
    m: usize,
    threat: ThreatModel,
    params: &[(&str, f64)],
    dataset: DataSet,
    seed: u64,
    beta: f64,
) -> TrainerAuditConfig {
    let mut p = Params::new();
    for &(k, v) in params {
        p = p.set(k, v);
    }
    TrainerAuditConfig {
        canaries: m,
        threat,
        trainer: TrainerConfig::from_params_for(p, dataset, threat).expect("valid params"),
        seed,
        failure_probability: beta,
        guess_sizes: None,
        score: ScoreKind::Loss,
    }
}

/// What a sweep over seeds found.
struct Sweep {
    /// Seeds whose verdict was a violation (the Gaussian-DP bound for a full-batch claim).
    hits: usize,
    /// Seeds whose (ε, δ) bound exceeded the claimed ε.
    eps_hits: usize,
    /// Mean (ε, δ) lower bound.
    mean_eps: f64,
    /// Mean ε at δ of the Gaussian-DP bound μ̂.
    mean_gdp_eps: f64,
    /// Mean ε estimate of the deciding bound (the order-statistics bound's where the canaries
    /// are independent, white-box).
    mean_estimate: f64,
    /// Seeds whose Gaussian-DP bound (Mahloujifar et al.) exceeded a full-batch claim's μ.
    gdp_hits: usize,
    /// The claimed ε.
    claim: f64,
}

fn sweep_on(
    m: usize,
    threat: ThreatModel,
    params: &[(&str, f64)],
    dataset: DataSet,
    seeds: std::ops::Range<u64>,
    beta: f64,
) -> Sweep {
    sweep_scored(m, threat, params, dataset, seeds, beta, ScoreKind::Loss)
}

/// As [`sweep_on`], the guesses ranking by `score`.
fn sweep_scored(
    m: usize,
    threat: ThreatModel,
    params: &[(&str, f64)],
    dataset: DataSet,
    seeds: std::ops::Range<u64>,
    beta: f64,
    score: ScoreKind,
) -> Sweep {
    let n = (seeds.end - seeds.start) as f64;
    let mut out = Sweep {
        hits: 0,
        eps_hits: 0,
        mean_eps: 0.0,
        mean_gdp_eps: 0.0,
        mean_estimate: 0.0,
        gdp_hits: 0,
        claim: 0.0,
    };
    for seed in seeds {
        let mut config = config_on(m, threat, params, dataset, seed, beta);
        config.score = score;
        let a = audit_trainer(&config).expect("audit runs");
        out.hits += usize::from(a.violation);
        out.eps_hits += usize::from(a.bound.epsilon_lower > a.claim.epsilon);
        out.mean_eps += a.bound.epsilon_lower / n;
        out.mean_gdp_eps += a.bound.gdp_epsilon_lower / n;
        out.mean_estimate += a.bound.epsilon_estimate(a.claim.mu) / n;
        out.gdp_hits += usize::from(a.claim.mu.is_some_and(|mu| a.bound.mu_lower > mu));
        out.claim = a.claim.epsilon;
    }
    out
}

/// (violations, mean (ε, δ) bound, claimed ε) over `seeds` seeds, synthetic data.
fn sweep(
    m: usize,
    threat: ThreatModel,
    params: &[(&str, f64)],
    seeds: std::ops::Range<u64>,
    beta: f64,
) -> (usize, f64, f64) {
    let s = sweep_on(m, threat, params, DataSet::Synthetic, seeds, beta);
    (s.hits, s.mean_eps, s.claim)
}

/// Measurements for the report: `cargo test --release --test one_run -- --ignored --nocapture
/// measure`. Columns: verdict violations (the Gaussian-DP bound when the claim is full-batch
/// GDP, else the (ε, δ) bound), violations of the (ε, δ) bound alone on the same guesses, and
/// both mean bounds as ε at the claim's δ.
#[test]
#[ignore = "measurement for the table of docs/one-run.md (200 seeds per cell, minutes); run with --ignored"]
fn measure_rates() {
    use DataSet::{Synthetic as Syn, Winequality as Wine};
    use ThreatModel::{BlackBox as Bb, WhiteBox as Wb};
    let mlp = ("hidden", 16.0);
    /// (name, m, threat model, data, trainer parameters).
    type Cell<'a> = (&'a str, usize, ThreatModel, DataSet, Vec<(&'a str, f64)>);
    let cells: Vec<Cell> = vec![
        ("logistic correct", 1000, Wb, Syn, vec![]),
        ("logistic correct", 1000, Bb, Syn, vec![]),
        ("mlp correct", 1000, Wb, Syn, vec![mlp]),
        ("mlp correct", 1000, Bb, Syn, vec![mlp]),
        ("logistic correct wine", 1000, Wb, Wine, vec![]),
        ("logistic correct wine", 1000, Bb, Wine, vec![]),
        ("mlp correct wine", 1000, Wb, Wine, vec![mlp]),
        ("mlp correct wine", 1000, Bb, Wine, vec![mlp]),
        ("halved noise", 1000, Wb, Syn, vec![("noise_scale", 0.5)]),
        ("halved noise", 1000, Bb, Syn, vec![("noise_scale", 0.5)]),
        (
            "mlp halved noise wine",
            1000,
            Wb,
            Wine,
            vec![mlp, ("noise_scale", 0.5)],
        ),
        ("s=0.3", 1000, Wb, Syn, vec![("noise_scale", 0.3)]),
        (
            "wrong rate",
            1000,
            Wb,
            Syn,
            vec![("sampling_rate_ratio", 10.0)],
        ),
        (
            "wrong rate",
            1000,
            Bb,
            Syn,
            vec![("sampling_rate_ratio", 10.0)],
        ),
        ("batch clip", 1000, Wb, Syn, vec![("batch_clip", 1.0)]),
        (
            "batch clip a=4",
            1000,
            Wb,
            Syn,
            vec![("batch_clip", 1.0), ("canary_norm", 4.0)],
        ),
        ("batch clip", 1000, Bb, Syn, vec![("batch_clip", 1.0)]),
        (
            "clip after noise",
            1000,
            Wb,
            Syn,
            vec![("clip_after_noise", 1.0)],
        ),
        (
            "clip after noise a=4",
            1000,
            Wb,
            Syn,
            vec![("clip_after_noise", 1.0), ("canary_norm", 4.0)],
        ),
        (
            "clip after noise a=4",
            1000,
            Bb,
            Syn,
            vec![("clip_after_noise", 1.0), ("canary_norm", 4.0)],
        ),
        ("correct a=4", 1000, Wb, Syn, vec![("canary_norm", 4.0)]),
        (
            "halved noise m=30000",
            30000,
            Wb,
            Syn,
            vec![("noise_scale", 0.5)],
        ),
    ];
    let seeds_env: u64 = std::env::var("ONE_RUN_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    for (name, m, threat, data, params) in cells {
        let seeds = if m > 1000 {
            0..seeds_env.min(50)
        } else {
            0..seeds_env
        };
        let n = seeds.end - seeds.start;
        let t = std::time::Instant::now();
        let s = sweep_on(m, threat, &params, data, seeds, 0.05);
        println!(
            "{name:24} {:9} m={m:<6} verdict {}/{n}  (eps,delta) {}/{n}  gdp {}/{n}  mean eps_lb {:.3}  gdp eps {:.3}  estimate {:.3}  claim {:.4}  {:.3} s/audit",
            threat.name(),
            s.hits,
            s.eps_hits,
            s.gdp_hits,
            s.mean_eps,
            s.mean_gdp_eps,
            s.mean_estimate,
            s.claim,
            t.elapsed().as_secs_f64() / n as f64
        );
    }
}

/// The correct trainer (white-box: every iterate, the strongest auditor here) over 200 seeds at
/// β = 0.05: a valid bound rejects on at most Bin(200, 0.05) seeds; the test fails above 22,
/// which a valid bound does with probability ≤ P[Bin(200, 0.05) ≥ 23] = 1.9e-4 (the stated
/// false-failure rate). The verdict is the order-statistics bound against μ = 0.5 (white-box
/// canaries are independent). Measured: 1/200 (mean ε̂ 0.62 by the (ε, δ) bound, 0.85 as the
/// Gaussian-DP bound's ε at δ = 1e-5, 1.32 by the order-statistics bound, against the claimed
/// 1.993; the other two bounds alone: 0/200).
#[test]
fn soundness_correct_trainer_white_box_200_seeds() {
    let (hits, _, _) = sweep(1000, ThreatModel::WhiteBox, &[], 0..200, 0.05);
    assert!(hits <= 22, "{hits}/200 seeds rejected the correct trainer");
}

/// As above, black-box (final model, input canaries), with the black-box defaults: saturated
/// canaries (canary_norm 4) and, the logistic regression's canaries being a product of
/// per-canary channels, the order-statistics bound deciding against μ = 0.5. Before both
/// (a = 1, Gaussian-DP bound deciding): 0/200, mean ε̂ 0.19 (0.26 by the Gaussian-DP bound).
/// Measured now: see docs/one-run.md (the run prints it).
#[test]
fn soundness_correct_trainer_black_box_200_seeds() {
    let s = sweep_on(
        1000,
        ThreatModel::BlackBox,
        &[],
        DataSet::Synthetic,
        200..400,
        0.05,
    );
    eprintln!(
        "logistic black-box, loss score: verdict {}/200, (eps, delta) {}/200, mean estimate {:.3}",
        s.hits, s.eps_hits, s.mean_estimate
    );
    assert_sound(&s);
}

/// The calibrated score (`--score calibrated`, holdouts: 1000 never-included canary slots), the
/// correct logistic trainer black-box and the correct network (4 units, 500 records)
/// black-box, 200 seeds each at β = 0.05. Fails above 22 of 200 for either bound, as above.
#[test]
#[ignore = "400 audits, a minute or more; run with --ignored"]
fn soundness_calibrated_score_black_box_200_seeds() {
    for (name, params, seeds) in [
        ("logistic", vec![], 8000..8200),
        (
            "network",
            vec![("hidden", 4.0), ("records", 500.0)],
            8200..8400,
        ),
    ] {
        let s = sweep_scored(
            1000,
            ThreatModel::BlackBox,
            &params,
            DataSet::Synthetic,
            seeds,
            0.05,
            ScoreKind::Calibrated,
        );
        eprintln!(
            "{name} black-box, calibrated score: verdict {}/200, (eps, delta) {}/200, mean \
             estimate {:.3}, mean gdp eps {:.3}",
            s.hits, s.eps_hits, s.mean_estimate, s.mean_gdp_eps
        );
        assert_sound(&s);
    }
}

/// The halved-noise twin (true μ = 1, ε 4.38) from the final model only, black-box defaults
/// (saturated canaries, order-statistics bound), m = 1000, β = 0.05. Before the saturated
/// canaries and the independence argument it was caught 0 of 200 times. Measured 20/20 on
/// seeds 9000–9019 (200/200 in docs/one-run.md's table). Fails below 18 of 20 (false-failure
/// rate ≤ 3.2e-3 at a per-seed power ≥ 0.985, as above).
#[test]
fn power_halved_noise_black_box_m1000() {
    let s = sweep_on(
        1000,
        ThreatModel::BlackBox,
        &[("noise_scale", 0.5)],
        DataSet::Synthetic,
        9000..9020,
        0.05,
    );
    assert!(
        s.hits >= 18,
        "{}/20 detections; mean estimate {}",
        s.hits,
        s.mean_estimate
    );
}

/// Where the calibrated score helps, and that it stays sound there: a heteroscedastic score
/// model, each canary's score exactly a μ-GDP Gaussian shift in its own units,
/// s = 4u + e^{2u}(N + μ·b) with a public feature u uniform on [−1, 1] (hard and easy
/// examples), canaries independent. 200 seeds at β = 0.05 against the true μ = 1 (type-I: the
/// order-statistics bound above μ = 1 on at most β of the seeds) and the mean μ̂ of the raw
/// and the calibrated score (1000 holdouts). Fails above 22 of 200 flagged, or when the
/// calibrated score does not gain on the raw one.
#[test]
#[ignore = "400 audits of synthetic scores, a minute or more; run with --ignored"]
fn calibrated_score_on_heteroscedastic_scores_200_seeds() {
    use dp_audit::audit::one_run::calibrated::calibrate;
    use dp_audit::audit::one_run::{CanaryModel, audit_scores_with, default_guess_sizes};
    use rand::{RngExt, SeedableRng};
    use rand_distr::StandardNormal;
    let m = 1000;
    let sizes = default_guess_sizes(m);
    let model = CanaryModel::Independent("independent by construction".into());
    let (mut flagged, mut raw_mu, mut cal_mu, mut raw_flagged) = (0, 0.0, 0.0, 0);
    for seed in 0..200u64 {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(10_000 + seed);
        let bits: Vec<bool> = (0..m).map(|_| rng.random_bool(0.5)).collect();
        let mut point = |b: bool| {
            let u: f64 = rng.random_range(-1.0..1.0);
            let n: f64 = rng.sample(StandardNormal);
            (
                4.0 * u + (2.0 * u).exp() * (n + f64::from(u8::from(b))),
                vec![u],
            )
        };
        let (raw, feats): (Vec<f64>, Vec<Vec<f64>>) = bits.iter().map(|&b| point(b)).unzip();
        let (hs, hf): (Vec<f64>, Vec<Vec<f64>>) = (0..m).map(|_| point(false)).unzip();
        let (z, _) = calibrate(&raw, &feats, &hs, &hf).expect("fit");
        let a = audit_scores_with(&raw, &bits, 1e-5, 0.05, &sizes, &model).expect("audit");
        let c = audit_scores_with(&z, &bits, 1e-5, 0.05, &sizes, &model).expect("audit");
        raw_flagged += usize::from(a.violates(4.38, Some(1.0)));
        flagged += usize::from(c.violates(4.38, Some(1.0)));
        raw_mu += a.deciding(4.38, Some(1.0)).1 / 200.0;
        cal_mu += c.deciding(4.38, Some(1.0)).1 / 200.0;
    }
    eprintln!(
        "heteroscedastic mu = 1 scores, 200 seeds: raw mean mu {raw_mu:.3} (flagged \
         {raw_flagged}/200), calibrated mean mu {cal_mu:.3} (flagged {flagged}/200)"
    );
    assert!(
        flagged <= 22 && raw_flagged <= 22,
        "{flagged}, {raw_flagged}"
    );
    assert!(cal_mu > raw_mu + 0.2, "raw {raw_mu}, calibrated {cal_mu}");
}

/// The wrong-sampling-rate twin at m = 1000: the ledger says q = 0.1 (claimed ε = 0.166) while
/// every step uses the whole data set, so each white-box canary is a μ = 0.5 Gaussian shift
/// (expected ε̂ ≈ 0.66 by the derivation in the module docs). Measured 200/200 detections
/// (seeds 0–199); with a per-seed power ≥ 0.985 (Clopper–Pearson 95 % lower bound from
/// 200/200) the test fails (fewer than 18 of 20) with probability P[Bin(20, 0.985) < 18]
/// = 3.2e-3: the stated false-failure rate.
#[test]
fn power_wrong_sampling_rate_m1000() {
    let (hits, mean, claim) = sweep(
        1000,
        ThreatModel::WhiteBox,
        &[("sampling_rate_ratio", 10.0)],
        1000..1020,
        0.05,
    );
    assert!(
        hits >= 18,
        "{hits}/20 detections; mean bound {mean} vs claim {claim}"
    );
}

/// Noise scaled by 0.3 at m = 1000 (true μ = 1.67, ε = 8.0; expected ε̂ ≈ 2.6 > 1.993).
/// Measured 200/200; fails below 18 of 20 (false-failure rate ≤ 3.2e-3 as above).
#[test]
fn power_noise_scale_0_3_m1000() {
    let (hits, mean, claim) = sweep(
        1000,
        ThreatModel::WhiteBox,
        &[("noise_scale", 0.3)],
        2000..2020,
        0.05,
    );
    assert!(
        hits >= 18,
        "{hits}/20 detections; mean bound {mean} vs claim {claim}"
    );
}

/// The halved-noise twin at m = 1000 (claim μ = 0.5; true μ = 1), white-box: the verdict is
/// the order-statistics bound, measured 200/200 detections (the Gaussian-DP bound alone
/// 139/200, the (ε, δ) bound 16/200). Fails below 7 of 20 — the threshold set for the
/// Gaussian-DP bound's power ≥ 0.637 (Clopper–Pearson 95 % lower bound from 139/200),
/// false-failure rate P[Bin(20, 0.637) < 7] = 2.3e-3 — for each of the two (the verdict's
/// power is higher still).
#[test]
fn power_halved_noise_gdp_m1000() {
    let s = sweep_on(
        1000,
        ThreatModel::WhiteBox,
        &[("noise_scale", 0.5)],
        DataSet::Synthetic,
        7000..7020,
        0.05,
    );
    assert!(
        s.gdp_hits >= 7 && s.hits >= 7,
        "{}/20 detections ({} by the Gaussian-DP bound); mean gdp eps {}",
        s.hits,
        s.gdp_hits,
        s.mean_gdp_eps
    );
}

/// The halved-noise twin (s = 0.5: true μ = 1, ε = 4.38 against the claimed 1.993) in one run
/// with m = 30 000 white-box canaries: expected ε̂ ≈ 2.3 (module docs). Measured 50/50
/// detections (mean ε̂ 2.18), 0.15 s per audit. Fails below 4 of 5 (false-failure rate
/// P[Bin(5, 0.942) < 4] = 3.0e-2 with the 95 % lower bound 0.94 on the per-seed power).
#[test]
fn power_halved_noise_m30000() {
    let (hits, mean, claim) = sweep(
        30_000,
        ThreatModel::WhiteBox,
        &[("noise_scale", 0.5)],
        3000..3005,
        0.05,
    );
    assert!(
        hits >= 4,
        "{hits}/5 detections; mean bound {mean} vs claim {claim}"
    );
}

/// The order-statistics bound (Xiang et al.; `src/audit/one_run/order.rs`) decides the
/// white-box verdicts: the trainer's canaries are independent channels by construction. At
/// m = 10⁴ white-box canaries and the default β = 0.001 (split over the five default guess
/// sizes), the halved-noise twin (true μ = 1, ε = 4.38 at δ = 1e-5; claimed μ = 0.5,
/// ε = 1.993) gets ε̂ = 3.97 on seed 0 from the order-statistics μ̂ read through the μ-GDP
/// profile (Mahloujifar et al.: 2.02, Steinke et al.: 0.36 on the same guesses), and the
/// correct trainer (μ = 0.5) is never above its claim.
///
/// Measured (seeds 0–49 halved, 100–299 correct): mean ε̂ 3.943 (min 3.687, every seed
/// caught), 0 of 200 correct trainers above the claimed μ; 47 s on 2 cores. Fails when a
/// halved-noise seed is not caught or the mean ε̂ is below 3.5 (below the smallest of the 50
/// measured values: a regression, not chance), or when more than 2 of 200 correct trainers
/// are flagged (each at most β = 0.001: false-failure rate P[Bin(200, 0.001) ≥ 3] = 1.1e-3).
#[test]
fn order_statistics_bound_m10000_halved_noise_and_correct() {
    use rayon::prelude::*;
    let audit = |seed: u64, params: &[(&str, f64)]| {
        audit_trainer(&config_on(
            10_000,
            ThreatModel::WhiteBox,
            params,
            DataSet::Synthetic,
            seed,
            0.001,
        ))
        .expect("audit runs")
    };
    let halved: Vec<f64> = (0..50u64)
        .into_par_iter()
        .map(|seed| {
            let a = audit(seed, &[("noise_scale", 0.5)]);
            assert!(a.violation, "seed {seed}: halved noise not caught");
            a.bound.epsilon_estimate(a.claim.mu)
        })
        .collect();
    let mean = halved.iter().sum::<f64>() / 50.0;
    let min = halved.iter().copied().fold(f64::INFINITY, f64::min);
    let flagged: Vec<u64> = (100..300u64)
        .into_par_iter()
        .filter(|&seed| audit(seed, &[]).violation)
        .collect();
    eprintln!(
        "order statistics, m = 10^4, beta = 0.001: halved noise mean eps {mean:.3} (min \
         {min:.3}) over 50 seeds; correct trainers flagged {}/200 {flagged:?}",
        flagged.len()
    );
    assert!(mean >= 3.5, "mean epsilon estimate {mean} over 50 seeds");
    assert!(
        flagged.len() <= 2,
        "{flagged:?} of 200 correct trainers flagged"
    );
}

/// Neither bound rejects on more than 22 of 200 seeds (see the tests using it).
fn assert_sound(s: &Sweep) {
    assert!(
        s.hits <= 22 && s.eps_hits <= 22,
        "{}/200, {}/200",
        s.hits,
        s.eps_hits
    );
}

/// The network trainer (one hidden layer of 4 tanh units, 500 records: the cheap
/// configuration), black-box (final model, input canaries through the network) over 200 seeds
/// at β = 0.05; the verdict is the Gaussian-DP bound against μ = 0.5. Fails above 22 of 200
/// (false-failure rate ≤ P[Bin(200, 0.05) ≥ 23] = 1.9e-4, as above).
#[test]
fn soundness_network_black_box_200_seeds() {
    let s = sweep_on(
        1000,
        ThreatModel::BlackBox,
        &[("hidden", 4.0), ("records", 500.0)],
        DataSet::Synthetic,
        4000..4200,
        0.05,
    );
    assert_sound(&s);
}

/// The network trainer on the wine data (1599 records), white-box, 200 seeds at β = 0.05; both
/// bounds. Fails above 22 of 200 (false-failure rate ≤ 1.9e-4 each).
#[test]
fn soundness_network_white_box_wine_200_seeds() {
    let s = sweep_on(
        1000,
        ThreatModel::WhiteBox,
        &[("hidden", 4.0)],
        DataSet::Winequality,
        4200..4400,
        0.05,
    );
    assert_sound(&s);
}

/// Clipping after the noise (no finite ε; module docs of the trainer) with canaries of norm
/// 4C, white-box: each canary is a √T·4/z = 2-GDP shift, and the common clipping factor
/// rescales signal and noise alike. Measured 200/200 at m = 1000 (mean Gaussian-DP ε̂ 4.9);
/// fails below 18 of 20 (false-failure rate ≤ 3.2e-3 with per-seed power ≥ 0.985, as above).
/// With canaries of norm C (a = 1) the twin looks exactly like the correct trainer (0/200):
/// the auditor must choose large canaries, which a correct trainer clips.
#[test]
fn power_clip_after_noise_m1000() {
    let s = sweep_on(
        1000,
        ThreatModel::WhiteBox,
        &[("clip_after_noise", 1.0), ("canary_norm", 4.0)],
        DataSet::Synthetic,
        5000..5020,
        0.05,
    );
    assert!(
        s.hits >= 18,
        "{}/20 detections; mean gdp eps {}",
        s.hits,
        s.mean_gdp_eps
    );
}

/// What one run cannot see: batch clipping (true guarantee μ = 1, twice the claim: one example
/// moves the clipped sum by 2C) is invisible to a many-canary audit, because all m canaries
/// together move the clipped batch sum by at most 2C: jointly 2μ-GDP, so each canary's share
/// shrinks like 1/√m. Measured mean ε̂ 0.001 (white-box, 20 seeds, both bounds). The test pins
/// the derivation: it fails if the bound ever reaches 0.1 on average (an auditor that sees this
/// twin would be a finding to report, not a regression) or if the true guarantee is not 2μ.
#[test]
fn batch_clip_twin_is_out_of_reach_of_many_canaries() {
    let t = TrainerConfig::from_params(Params::new().set("batch_clip", 1.0)).expect("params");
    let (claim, truth) = (
        t.claim().expect("claim"),
        t.true_guarantee().expect("truth"),
    );
    assert_eq!((claim.mu, truth.mu), (Some(0.5), Some(1.0)));
    let s = sweep_on(
        1000,
        ThreatModel::WhiteBox,
        &[("batch_clip", 1.0), ("canary_norm", 4.0)],
        DataSet::Synthetic,
        6000..6020,
        0.05,
    );
    assert!(
        s.mean_gdp_eps < 0.1 && s.mean_eps < 0.1,
        "{} {}",
        s.mean_gdp_eps,
        s.mean_eps
    );
}

/// `audit one-run ARGS`, writing no report unless the arguments name a report directory.
/// True (with a note on stderr) when python3 cannot be started: the exec tests are skipped.
fn python3_missing() -> bool {
    let missing = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err();
    if missing {
        eprintln!("skipped: python3 is not installed");
    }
    missing
}

fn cli(args: &[&str]) -> std::process::Output {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_audit"));
    c.arg("one-run").args(args);
    if !args.contains(&"--report-dir") {
        c.arg("--no-report");
    }
    c.output().expect("audit runs")
}

/// The report: audit.json (mode "one-run"), guesses.png and index.html with the guesses table
/// and the Reproduce line; `audit report` re-renders it; the index lists it.
#[test]
fn one_run_report_is_written_and_rerendered() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("one-run-report-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap();
    let o = cli(&["--canaries", "200", "--report-dir", d, "--quiet"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("audit.json").is_file())
        .expect("a run directory");
    for f in ["audit.json", "guesses.png", "index.html"] {
        assert!(run.join(f).is_file(), "{f}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("audit.json")).unwrap()).unwrap();
    assert_eq!(json["mode"], "one-run");
    assert!(
        json["reproduce"]
            .as_str()
            .unwrap()
            .starts_with("audit one-run")
    );
    let page = std::fs::read_to_string(run.join("index.html")).unwrap();
    assert!(page.contains("id=\"guesses\"") && page.contains("id=\"reproduce\""));
    let index = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(index.contains("one-run audit"), "{index}");
    std::fs::remove_file(run.join("guesses.png")).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_audit"))
        .arg("report")
        .arg(run.join("audit.json"))
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(run.join("guesses.png").is_file());
}

#[test]
fn cli_exit_codes_and_json() {
    let ok = cli(&["--canaries", "1000", "--seed", "3"]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let text = String::from_utf8_lossy(&ok.stdout);
    for needle in [
        "claim",
        "guesses",
        "precision",
        "bound",
        "Theorem 3.1",
        "Mahloujifar",
        "gdp bound",
        "verdict      no violation",
        "split equally",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    let bad = cli(&[
        "--param",
        "noise_scale=0.3",
        "--failure-probability",
        "0.05",
        "--json",
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&bad.stdout).expect("JSON");
    let v = util::payload(v);
    assert_eq!(v["violation"], true);
    assert!(
        v["bound"]["epsilon_lower"].as_f64().unwrap() > v["claim"]["epsilon"].as_f64().unwrap()
    );
    assert_eq!(v["bound"]["candidates"].as_array().unwrap().len(), 5);
    for (args, flag) in [
        (vec!["--canaries", "1"], "--canaries"),
        (
            vec!["--inclusion-probability", "1.5"],
            "--inclusion-probability",
        ),
        (
            vec!["--inclusion-probability", "0.3"],
            "--inclusion-probability",
        ),
        (vec!["--threat-model", "grey-box"], "--threat-model"),
        (vec!["--failure-probability", "0"], "--failure-probability"),
        (vec!["--param", "noise_scale=0"], "noise_scale"),
        (vec!["--param", "bogus=1"], "bogus"),
        (vec!["--guesses", "600:600"], "--guesses"),
        (vec!["--dataset", "mnist"], "--dataset"),
        (vec!["--param", "hidden=2.5"], "hidden"),
        (vec!["--param", "batch_clip=2"], "batch_clip"),
        (
            vec!["--dataset", "winequality", "--param", "records=10"],
            "records",
        ),
    ] {
        let o = cli(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(flag) && err.contains("allowed"),
            "{args:?}: {err}"
        );
    }
}

/// `audit one-run --exec`: the Dirac-canary program of examples/exec/one_run_dirac.py (Python
/// standard library). With σ = 2 the release is 0.5-GDP, (1.993, 1e-5)-DP, exactly the claim:
/// 10 seeds at β = 0.05 each flag it at most β·10 = 0.5 times on average; the test fails at 4 or
/// more (Binomial(10, 0.05) tail 1.0e-3). With σ = 0.3 (μ = 3.3, true ε ≈ 17) the bound at
/// m = 1000 is ≈ 4 on expected counts, far above 1.993: the test fails if fewer than 4 of 5
/// seeds catch it (each is caught with probability well above 0.99 by the margin; a binomial
/// miss of 2 in 5 at p = 0.99 has probability 1e-3).
#[test]
fn exec_training_program_correct_and_buggy() {
    if python3_missing() {
        return;
    }
    let run = |sigma: &str, seed: u64, claim: &str| {
        let o = cli(&[
            "--exec",
            &format!("python3 examples/exec/one_run_dirac.py {sigma}"),
            "--claim",
            claim,
            "--failure-probability",
            "0.05",
            "--seed",
            &seed.to_string(),
            "--json",
        ]);
        assert!(
            matches!(o.status.code(), Some(0 | 1)),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.status.code() == Some(1)
    };
    let flagged = (0..10)
        .filter(|&s| run("2", s, "approx:1.993:1e-5"))
        .count();
    assert!(flagged < 4, "correct program flagged {flagged}/10");
    let caught = (0..5)
        .filter(|&s| run("0.3", s, "approx:1.993:1e-5"))
        .count();
    assert!(caught >= 4, "buggy program caught {caught}/5");
    // The same programs against the Gaussian-DP claim μ = 0.5 (σ = 2 keeps it exactly;
    // σ = 0.3 is μ = 3.3): same thresholds and false-failure rates.
    let flagged = (0..10).filter(|&s| run("2", s, "gdp:0.5")).count();
    assert!(flagged < 4, "correct program flagged {flagged}/10 (gdp)");
    let caught = (0..5).filter(|&s| run("0.3", s, "gdp:0.5")).count();
    assert!(caught >= 4, "buggy program caught {caught}/5 (gdp)");
}

/// `--independent-canaries`: the author of `one_run_dirac.py` (one coordinate per canary,
/// independent noise: a product of per-canary channels) declares it, and the order-statistics
/// bound decides. At m = 10⁴ and the default β = 0.001, σ = 1 (μ = 1, ε = 4.38 at δ = 1e-5)
/// against the claim gdp:0.5 is caught with the order-statistics ε read at δ = 1e-5 above 3.5
/// (measured 3.92 on seed 0; Mahloujifar et al.'s bound alone gives 2.45); σ = 2, which keeps
/// the claim exactly, passes (each run flags it with probability at most β = 0.001: the
/// false-failure rate). Without the flag the text says the bound is for reading only.
#[test]
fn exec_independent_canaries_declared() {
    if python3_missing() {
        return;
    }
    let run = |sigma: &str, extra: &[&str]| {
        let program = format!("python3 examples/exec/one_run_dirac.py {sigma}");
        let mut args = vec![
            "--exec",
            &program,
            "--claim",
            "gdp:0.5",
            "--canaries",
            "10000",
        ];
        args.extend_from_slice(extra);
        cli(&args)
    };
    let o = run("1", &["--independent-canaries", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let rec: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON record");
    let est = rec["empirical_epsilon"]["lower_bound"]
        .as_f64()
        .expect("an epsilon estimate");
    assert!(est > 3.5, "estimate {est}: {rec}");
    let inequality = rec["layers"][0]["bounds"][0]["inequality"]
        .as_str()
        .unwrap_or("");
    assert!(inequality.contains("Xiang"), "{inequality}");
    let o = run("2", &["--independent-canaries"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("order-statistics bound, independent canaries"),
        "{text}"
    );
    let o = run("1", &[]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("for reading only") && text.contains("--independent-canaries"),
        "{text}"
    );
}

/// Bad programs and flags: wrong counts, non-numbers, a program that never answers (its
/// process group is killed at the time-out), trainer flags with --exec: exit 2 with the reason.
#[test]
fn exec_training_program_bad_output_and_flags() {
    for (command, extra, needle) in [
        ("echo 1 2 3", vec![], "3 scores for 10 canaries"),
        ("echo 1 x 3 4 5 6 7 8 9 10", vec![], "score 2"),
        (
            "cat >/dev/null; (sleep 1000) & sleep 1000",
            vec!["--exec-timeout", "1"],
            "--exec-timeout",
        ),
        ("echo 1", vec!["--param", "steps=3"], "--param"),
        ("exit 3", vec![], "exited"),
    ] {
        let mut args = vec![
            "--exec",
            command,
            "--claim",
            "approx:1:1e-5",
            "--canaries",
            "10",
        ];
        args.extend(extra);
        let start = std::time::Instant::now();
        let o = cli(&args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{command}: {err}");
        assert!(err.contains(needle), "{command}: {err}");
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "{command}"
        );
    }
    let o = cli(&["--exec", "echo 1", "--claim", "zcdp:1"]);
    assert_eq!(o.status.code(), Some(2));
    for bad_mu in ["gdp:0", "gdp:-1", "gdp:nan", "gdp:100"] {
        let o = cli(&["--exec", "echo 1", "--claim", bad_mu]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{bad_mu}: {err}");
        assert!(
            err.contains("allowed") && err.contains("--claim"),
            "{bad_mu}: {err}"
        );
    }
}
