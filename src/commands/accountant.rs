//! `audit accountant`: DP-SGD's ε from the PLD accountant (an upper bound and the optimistic
//! estimate beside it) and the RDP accountant, for one Poisson-subsampled Gaussian mechanism or a
//! logged privacy ledger; and the inverse, the noise multiplier that reaches a target ε.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::{Outcome, to_json};
use crate::error::{Error, Result};
use crate::mechanisms::Neighboring;
use crate::mechanisms::accountant::{
    LedgerEvent, RdpAccountant, SamplingPolicy, gaussian_exact_epsilon, gaussian_zcdp_rho,
    ledger_line, zcdp_to_epsilon,
};
use crate::mechanisms::accounting::AccountingError;
use crate::mechanisms::math::readable;
use crate::mechanisms::pld::{PldAccountant, noise_multiplier_for_policy};

/// Options of `audit accountant`.
#[derive(Debug, Args)]
pub struct AccountantArgs {
    /// Sampling rate q in (0, 1] (1 = full batch).
    #[arg(allow_hyphen_values = true, long, required_unless_present = "ledger")]
    pub sampling_rate: Option<f64>,
    /// Noise multiplier z > 0 (noise std = z · clipping norm).
    #[arg(
        allow_hyphen_values = true,
        long,
        required_unless_present_any = ["ledger", "target_epsilon"],
        conflicts_with = "target_epsilon"
    )]
    pub noise_multiplier: Option<f64>,
    /// Number of steps T, 1 to 2^53 (very many steps are composed on a coarser loss grid, and
    /// the output says so).
    #[arg(allow_hyphen_values = true, long, required_unless_present = "ledger")]
    pub steps: Option<u64>,
    /// How the batches of the q, z, T form (and of --target-epsilon) are drawn: poisson (each
    /// record independently with probability q) or fixed-size (B = q·n of the n records without
    /// replacement each step; accounted under --neighbors replace-one only). shuffled is refused,
    /// with why. A --ledger says its own, per sampling event [default: poisson].
    #[arg(long, value_name = "POLICY", conflicts_with_all = ["ledger", "bayesian"])]
    pub policy: Option<String>,
    /// δ in (0, 1).
    #[arg(allow_hyphen_values = true, long)]
    pub delta: f64,
    /// Instead of ε: the smallest noise multiplier whose PLD ε (upper bound) at δ after T steps
    /// at rate q is at most this ε (binary search).
    #[arg(allow_hyphen_values = true, long, value_name = "EPS")]
    pub target_epsilon: Option<f64>,
    /// A privacy ledger to re-account instead of q, z, T: one JSON event per line,
    /// `{"event": "sampling", "probability": Q, "repetitions": T}` followed by one
    /// `{"event": "gaussian-sum", "noise_multiplier": Z}` per noise group of that sample; blank
    /// and `#` lines are skipped, a UTF-8 byte-order mark and CRLF line ends are accepted. A
    /// sampling event may say how its sample is drawn: `"policy": "poisson"` (the default when
    /// absent), `"fixed-size"` (B of n without replacement each step; accounted under
    /// --neighbors replace-one only) or `"shuffled"` (refused, named: account it as
    /// "probability": 1 under --neighbors replace-one). Example:
    /// examples/ledger/dpsgd.jsonl; format: docs/accountant.md. `--claim ledger:FILE` reads the
    /// same files.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = ["sampling_rate", "noise_multiplier", "steps", "target_epsilon"]
    )]
    pub ledger: Option<PathBuf>,
    /// Neighboring relation of the PLD accountant: add-remove (default), replace-one or zero-out
    /// (accounted as add-remove: the same PLD). The RDP accountant is for add-remove only.
    #[arg(long, default_value = "add-remove")]
    pub neighbors: String,
    /// Bayesian DP (Triastcyn & Faltings 2020) instead of DP: ε_μ at δ_μ = --delta from the
    /// gradient-distance samples of --data (typical case over the data, weaker than DP), beside
    /// the moments and RDP accountants' DP ε for the same run.
    #[arg(long, conflicts_with_all = ["ledger", "target_epsilon"])]
    pub bayesian: bool,
    /// With --bayesian: samples of the distance ‖g − g'‖/C between a record's clipped gradient
    /// and its neighbor's, one number in [0, 2] per line.
    #[arg(
        long,
        value_name = "FILE",
        requires = "bayesian",
        conflicts_with = "weibull_shape"
    )]
    pub data: Option<PathBuf>,
    /// With --bayesian, instead of --data: draw the distances from a Weibull law of this shape
    /// k > 0 (the paper's synthetic heavy-tailed gradients, §5.1; k < 2 is heavier than
    /// Gaussian), seeded by --seed. Without --unclipped each draw is capped at --max-distance
    /// (clipping is a projection, which moves no two gradients farther apart).
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "K",
        requires = "bayesian"
    )]
    pub weibull_shape: Option<f64>,
    /// With --weibull-shape: the Weibull scale (> 0, a fraction of C) [default: 0.2].
    #[arg(allow_hyphen_values = true, long, requires = "weibull_shape")]
    pub weibull_scale: Option<f64>,
    /// With --weibull-shape: how many distances to draw (3 to 10^6) [default: 1000].
    #[arg(allow_hyphen_values = true, long, requires = "weibull_shape")]
    pub weibull_samples: Option<u64>,
    /// With --weibull-shape: the seed of the draws [default: 0].
    #[arg(allow_hyphen_values = true, long, requires = "weibull_shape")]
    pub seed: Option<u64>,
    /// With --bayesian: write the paper's curves (Fig. 1: ε against the number of steps; App.
    /// B.3: ε against the order λ at --steps) as DIR/bdp-curves.png and DIR/bdp-curves.json, the
    /// Bayesian ε beside the moments accountant's.
    #[arg(long, value_name = "DIR", requires = "bayesian")]
    pub curves: Option<PathBuf>,
    /// With --bayesian: γ, the probability that the estimate under-states the cost, folded into
    /// δ (0 < γ < δ) [default: δ/1000].
    #[arg(allow_hyphen_values = true, long, requires = "bayesian")]
    pub gamma: Option<f64>,
    /// With --bayesian: quantiles (in %) of the distance samples at which to print the
    /// individual (worst-case, per-record) DP ε of a record at that distance, comma-separated,
    /// each in (0, 100]. Not the paper's percentile curve (see --markov-percentiles).
    #[arg(long, requires = "bayesian", default_value = "50,90,99,100")]
    pub distance_quantiles: String,
    /// With --bayesian: the paper's percentile curve (§4.4.1, Markov's inequality over the
    /// conditional tail δ(x')): for each p, the ε_p such that at least p % of the records x' ~ μ
    /// have Pr[L ≥ ε_p | x'] ≤ δ, comma-separated, each in (0, 100) with (1 − p/100)·δ > γ.
    #[arg(long, requires = "bayesian", default_value = "50,90,99")]
    pub markov_percentiles: String,
    /// With --bayesian: the estimator of the expectation over μ. `distribution-free` (the
    /// default for clipped gradients): a DKW band on the distances in [0, --max-distance], no
    /// normality assumed, Pr[under-estimate] ≤ γ for every μ on that range; binary data (every
    /// distance 0 or 1) left to the default gets the exact Clopper–Pearson bound instead.
    /// `student-t`: the paper's §4.3.2 estimator, which assumes the sample mean of the e^{T·c}
    /// terms near normal and, measured on a known μ, under-states the cost more often than γ at
    /// high orders (docs/bayesian.md, Theorem 4 check); the distribution-free ε is printed
    /// beside it. With --unclipped only `student-t` applies (and is the default there).
    #[arg(long, requires = "bayesian")]
    pub estimator: Option<String>,
    /// With --bayesian: the largest possible distance B in (0, 2] (a fraction of the clipping
    /// norm) that the distribution-free estimator assumes of μ [default: 1, a record's clipped
    /// gradient moves the sum by at most C].
    #[arg(allow_hyphen_values = true, long, requires = "bayesian")]
    pub max_distance: Option<f64>,
    /// With --bayesian: gradients are not clipped (the paper's unbounded-sensitivity regime, §5.1
    /// and App. B.2): distances may be any finite number ≥ 0, in units of C where the noise std
    /// is z·C. Accounted with the Student-t estimator, whose assumptions (a finite mean and
    /// variance of e^{T·c}, false for tails not lighter than Gaussian) the output states; no DP
    /// guarantee exists.
    #[arg(long, requires = "bayesian")]
    pub unclipped: bool,
    /// With --bayesian: also the guarantee for datasets differing in K records, each drawn
    /// i.i.d. from μ (Triastcyn & Faltings 2020, Proposition 4, group privacy):
    /// (K·ε_μ, K·e^{(K−1)ε_μ}·δ_μ), beside the per-record (ε_μ, δ_μ) [default: 1].
    #[arg(
        allow_hyphen_values = true,
        long,
        value_name = "K",
        requires = "bayesian"
    )]
    pub group: Option<u64>,
    /// With --bayesian: the same distances measured on held-out records (not used in training),
    /// one per line as in --data: the paper's §4.4.3 check that the estimator leaks little,
    /// Welch's t-test for equal means and Levene's test for equal variances of the two sets.
    #[arg(long, value_name = "FILE", requires = "bayesian")]
    pub test_distances: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// `audit accountant --bayesian --data FILE`: the Bayesian accountant
/// ([`crate::mechanisms::bayesian_accountant`]) beside the DP accountants. `given`: the text of
/// the distance file when the caller has it already ([`accountant_bayesian_given`]); the file
/// `a.data` is read otherwise.
fn bayesian(a: &AccountantArgs, given: Option<&str>) -> Result<Outcome> {
    use crate::mechanisms::bayesian_accountant::{
        Estimator, default_orders, dkw_band, markov_percentile_epsilon, moments_accountant_epsilon,
        record_epsilon_distance_quantiles,
    };
    // The Bayesian accountant (Triastcyn & Faltings) is stated for the Poisson-subsampled
    // Gaussian under add/remove: any other relation is refused, not silently ignored.
    if a.neighbors.trim() != "add-remove" {
        return Err(bad(
            "--neighbors",
            &a.neighbors,
            "add-remove with --bayesian (the Bayesian accountant's relation; leave --neighbors out)",
        ));
    }
    let q = a.sampling_rate.unwrap_or(f64::NAN);
    if !(q > 0.0 && q <= 1.0) {
        return Err(bad("--sampling-rate", q, "0 < q ≤ 1"));
    }
    let steps = a.steps.unwrap_or(0);
    if steps == 0 {
        return Err(bad("--steps", steps, "a whole number ≥ 1"));
    }
    let z = a.noise_multiplier.unwrap_or(f64::NAN);
    if !(z.is_finite() && z > 0.0) {
        return Err(bad("--noise-multiplier", z, "a finite number > 0"));
    }
    let gamma = a.gamma.unwrap_or(a.delta / 1000.0);
    if !(gamma > 0.0 && gamma < a.delta) {
        return Err(bad("--gamma", gamma, "0 < γ < δ (γ is folded into δ)"));
    }
    let max_distance = a.max_distance.unwrap_or(1.0);
    if !(max_distance > 0.0 && max_distance <= 2.0) {
        return Err(bad(
            "--max-distance",
            max_distance,
            "0 < B ≤ 2 (a fraction of the clipping norm)",
        ));
    }
    // The default: the distribution-free estimator wherever the distances are bounded (soundness
    // before power: the paper's Student-t estimator was measured missing more often than γ at
    // high orders, docs/bayesian.md, Theorem 4 check); unclipped distances have no bound, so
    // the Student-t estimator is their only choice.
    let chosen = a.estimator.as_deref().map(str::trim);
    let distribution_free = match chosen {
        None => !a.unclipped,
        Some("student-t") => false,
        Some("distribution-free") => true,
        Some(other) => {
            return Err(bad(
                "--estimator",
                format!("{other:?}"),
                "distribution-free (the default) or student-t (the paper's estimator)",
            ));
        }
    };
    if distribution_free && a.unclipped {
        return Err(bad(
            "--estimator",
            "distribution-free with --unclipped",
            "student-t with --unclipped (the distribution-free bound needs a largest distance, which unclipped gradients do not have)",
        ));
    }
    let (d, path) = match (&a.data, a.weibull_shape) {
        (Some(p), _) => (
            read_distances(p, "--data", a.unclipped, given)?,
            p.display().to_string(),
        ),
        (None, Some(k)) => weibull_distances(a, k, max_distance)?,
        (None, None) => {
            return Err(Error::InvalidConfig(
                "--bayesian without distances; allowed: --data FILE or --weibull-shape K".into(),
            ));
        }
    };
    let named = |e: AccountingError| Error::InvalidConfig(format!("--bayesian --data {path}: {e}"));
    let orders = default_orders();
    // Binary data (every distance 0 or 1) gets the §4.3.1 estimator with its exact
    // (Clopper–Pearson) bound: the Student-t one would read a file without ones as a zero cost
    // with no uncertainty.
    let binary = !d.is_empty() && d.iter().all(|&x| x == 0.0 || x == 1.0);
    let dkw = Estimator::DistributionFree { max_distance };
    // Binary files keep the exact Clopper–Pearson bound unless the DKW band is asked for by
    // name (the Student-t estimator would read a file without ones as a zero cost).
    let (kind, estimator, estimator_id) = if a.unclipped {
        (
            Estimator::Unclipped,
            "the §4.3 Student-t estimator on unclipped distances (§5.1, App. B.2)",
            "student-t-unclipped",
        )
    } else if binary && chosen != Some("distribution-free") {
        (
            Estimator::Binary,
            "the §4.3.1 binary estimator with the Clopper–Pearson bound (the 1 − γ quantile of Beta(1 + #ones, #zeros); the paper's flat-prior Beta(1 + #ones, 1 + #zeros) misses more often than γ)",
            "clopper-pearson",
        )
    } else if distribution_free {
        (
            dkw,
            "the distribution-free DKW estimator (Massart's one-sided DKW band on the distances in [0, --max-distance]; no normality assumed)",
            "distribution-free",
        )
    } else {
        (
            Estimator::StudentT,
            "the paper's §4.3.2 Student-t estimator (asked for by --estimator student-t; it assumes normality, see assumes)",
            "student-t",
        )
    };
    if kind == dkw
        && let Some((i, x)) = d.iter().enumerate().find(|(_, x)| **x > max_distance)
    {
        return Err(Error::InvalidConfig(format!(
            "--bayesian --data {path}: distance sample {} = {x} is above the largest possible distance {} that the distribution-free estimator assumes (--max-distance, default 1: a record's clipped gradient moves the sum by at most C); allowed: --max-distance B with {x} ≤ B ≤ 2 when distances up to B are possible, or --estimator student-t (the paper's estimator, which assumes normality)",
            i + 1,
            readable(max_distance)
        )));
    }
    let b = kind
        .account(&d, q, z, steps, a.delta, gamma, &orders)
        .map_err(named)?;
    // Beside the Student-t account, the distribution-free one (when μ's samples fit its range).
    let beside = if kind == Estimator::StudentT && d.iter().all(|&x| x <= max_distance) {
        Some(
            dkw.account(&d, q, z, steps, a.delta, gamma, &orders)
                .map_err(named)?,
        )
    } else {
        None
    };
    // Proposition 4 (group privacy) on the per-record account. The estimate holds except with
    // probability γ, which is folded into δ_μ: on its good event the true per-record claim is
    // (ε_μ, δ_μ − γ) and the group δ is K·e^{(K−1)ε_μ}·(δ_μ − γ) + γ ≤ K·e^{(K−1)ε_μ}·δ_μ.
    let k = a.group.unwrap_or(1);
    let (group_eps, group_delta) = crate::mechanisms::bayesian_accountant::group_privacy(
        b.epsilon, a.delta, k,
    )
    .map_err(|e| {
        let e = match e {
            AccountingError::InvalidParameter { message, .. } => message,
            other => other.to_string(),
        };
        Error::InvalidConfig(format!("--group {k}: {e}"))
    })?;
    let band = dkw_band(d.len(), gamma);
    // §4.4.3: training against held-out distances.
    let comparison = match &a.test_distances {
        Some(p) => {
            let held_out = read_distances(p, "--test-distances", a.unclipped, None)?;
            Some(
                crate::mechanisms::bayesian_accountant::compare_distances(&d, &held_out).map_err(
                    |e| {
                        Error::InvalidConfig(format!(
                            "--data {path} with --test-distances {}: {e}",
                            p.display()
                        ))
                    },
                )?,
            )
        }
        None => None,
    };
    let (ma, ma_order) =
        moments_accountant_epsilon(q, z, steps, a.delta, &orders).map_err(named)?;
    let mut acc = RdpAccountant::new();
    acc.compose_poisson_gaussian(q, z, steps).map_err(named)?;
    let (rdp, rdp_order) = acc.epsilon(a.delta).map_err(named)?;
    let list = |flag: &str, text: &str, hi_open: bool| -> Result<Vec<f64>> {
        text.split(',')
            .map(|t| {
                t.trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|p| *p > 0.0 && (*p < 100.0 || (!hi_open && *p == 100.0)))
                    .ok_or_else(|| {
                        bad(
                            flag,
                            t.trim(),
                            if hi_open {
                                "comma-separated numbers in (0, 100), e.g. 50,90,99"
                            } else {
                                "comma-separated numbers in (0, 100], e.g. 50,90,99,100"
                            },
                        )
                    })
            })
            .collect()
    };
    let quantiles = list("--distance-quantiles", &a.distance_quantiles, false)?;
    let markov = list("--markov-percentiles", &a.markov_percentiles, true)?;
    let rows =
        record_epsilon_distance_quantiles(&d, q, z, steps, a.delta, &quantiles).map_err(named)?;
    let curve = markov_percentile_epsilon(&d, q, z, steps, a.delta, gamma, &orders, &markov, kind)
        .map_err(|e| Error::InvalidConfig(format!("--markov-percentiles: {e}")))?;
    // The paper's curves (Fig. 1, App. B.3), written when asked.
    let curves_written = match &a.curves {
        Some(dir) => Some(write_curves(
            dir,
            &d,
            &path,
            (kind, estimator_id),
            q,
            z,
            steps,
            a.delta,
            gamma,
            &orders,
        )?),
        None => None,
    };
    // What the ε_μ above rests on, in words (also in the JSON).
    let assumptions = if a.unclipped {
        "unclipped gradients (unbounded sensitivity): no DP guarantee exists, and the moments and RDP rows are for the same noise with gradients clipped at C, not for this run; the Student-t estimate assumes E_μ[e^{T·c(λ, d)}] and its variance finite (Theorem 4), which fails for every distance law with a tail not lighter than Gaussian (Weibull of shape < 2, exponential, Pareto: then the true cost is infinite at every order and this ε_μ bounds nothing); the samples cannot tell which holds".to_string()
    } else if kind == dkw {
        format!(
            "i.i.d. distance samples from μ, every distance of μ in [0, {}] (--max-distance); with probability ≥ 1 − γ the DKW band (width {}) holds and the estimate is not below the truth",
            readable(max_distance),
            readable(band)
        )
    } else if binary {
        "i.i.d. binary distance samples from μ; the Clopper–Pearson bound is below Pr_μ[d = 1] with probability ≤ γ".to_string()
    } else {
        "i.i.d. distance samples from μ in [0, 2]; Theorem 4 assumes the sample mean of the e^{T·c(λ, d)} terms near normal, which long runs break (the terms are very skewed): measured on a known μ (tests/bayesian_estimator.rs), the estimate falls below the true cost more often than γ at high orders (at γ = 0.05: 61, 81, 105 and 364 misses in 1000 seeds at λ = 8, 32, 64 and 128, against 50 allowed; docs/bayesian.md, Theorem 4 check), so this ε_μ is the paper's estimate, not a bound at failure probability γ; the distribution-free ε_μ beside (the default estimator) assumes only the range".to_string()
    };
    let stdout = if a.json {
        to_json(&json!({
            "sampling_rate": q, "noise_multiplier": z, "steps": steps, "delta": a.delta,
            "bayesian": b, "data": path,
            "moments_accountant_epsilon": ma, "moments_accountant_order": ma_order,
            "rdp_epsilon": rdp, "rdp_order": rdp_order,
            "estimator": estimator,
            "estimator_id": estimator_id,
            "estimator_default": chosen.is_none(),
            "unclipped": a.unclipped,
            "assumptions": assumptions,
            "train_vs_test": comparison,
            "curves": curves_written,
            "distribution_free": beside.as_ref().map(|x| json!({"account": x, "max_distance": max_distance, "band": band})),
            "attack_success_bound": crate::record::attack_success_bound(b.epsilon, a.delta),
            "group": {
                "records": k,
                "epsilon": group_eps,
                "delta": group_delta,
                "per_record": {"epsilon": b.epsilon, "delta": a.delta},
                "method": GROUP_METHOD,
            },
            "distance_quantiles": rows,
            "markov_percentiles": curve,
        }))?
    } else {
        let mut per = String::from(
            "percentile curve (Triastcyn & Faltings §4.4.1: Markov's inequality over the conditional tail δ(x') = Pr[L ≥ ε | x'], whose mean over μ is the BDP δ_μ; ε_p accounted at δ_μ = (1 − p)·δ):\n",
        );
        for r in &curve {
            per.push_str(&format!(
                "  at least {:>5} % of the records x' ~ μ have Pr[L ≥ {} | x'] ≤ δ = {}\n",
                readable(r.percentile),
                readable(r.epsilon),
                readable(a.delta)
            ));
        }
        per.push_str(
            "individual DP at quantiles of the distance samples (worst case per record, not the paper's curve: a record whose distance stays ≤ d at every step; PLD upper bound, Feldman & Zrnic 2021):\n",
        );
        for r in &rows {
            per.push_str(&format!(
                "  {:>5} % of the {} distance samples are ≤ {}; such a record enjoys ε ≤ {} at δ = {}\n",
                readable(r.quantile),
                d.len(),
                readable(r.distance),
                readable(r.epsilon),
                readable(a.delta)
            ));
        }
        let beside_line = match &beside {
            Some(x) => format!(
                "distribution-free ε_μ = {} (order λ = {}; DKW band {} on the distances, any μ on [0, {}]: Pr[under-estimate] ≤ γ without the normality Theorem 4 assumes)\n",
                readable(x.epsilon),
                x.order,
                readable(band),
                readable(max_distance)
            ),
            None => String::new(),
        };
        let clip_note = if a.unclipped {
            "; for gradients clipped at C: this run is unclipped and has no DP guarantee"
        } else {
            ""
        };
        if let Some(c) = &comparison {
            let verdict = |p: f64| {
                if p < 0.05 {
                    "below 0.05: the two sets differ, so the distances (and the estimate) carry information on who was in the training data"
                } else {
                    "no difference shown at level 0.05 (not a bound on the leakage)"
                }
            };
            per.push_str(&format!(
                "training vs held-out distances (Triastcyn & Faltings §4.4.3, §5.2): {} training, {} held-out, means {} and {}\n  Welch t-test for equal means: t = {}, df = {}, p = {} ({})\n  Levene test for equal variances (median-centred): W = {}, p = {} ({})\n",
                c.train_samples,
                c.test_samples,
                readable(c.train_mean),
                readable(c.test_mean),
                readable(c.t_statistic),
                readable(c.t_degrees_of_freedom),
                readable(c.t_p_value),
                verdict(c.t_p_value),
                readable(c.levene_statistic),
                readable(c.levene_p_value),
                verdict(c.levene_p_value)
            ));
        }
        let group_line = if a.group.is_some() {
            format!(
                "group         {k} records, each drawn i.i.d. from μ: ε = {} at δ = {} (from the per-record ε_μ = {}, δ_μ = {}: K·ε_μ and K·e^{{(K−1)ε_μ}}·δ_μ, Triastcyn & Faltings 2020, Proposition 4; for every event on the output, averaged over the {k} records)\n",
                readable(group_eps),
                readable(group_delta),
                readable(b.epsilon),
                readable(a.delta)
            )
        } else {
            String::new()
        };
        if let Some(files) = &curves_written {
            per.push_str(&format!(
                "curves (ε against steps, Fig. 1; ε against the order λ, App. B.3): {}\n",
                files.join(", ")
            ));
        }
        format!(
            "Bayesian DP   ε_μ = {} at δ_μ = {} (γ = {} folded in), order λ = {}, from {} distance samples of {} (typical case over the data; weaker than DP: Triastcyn & Faltings 2020, Theorem 3 with {estimator})\n{group_line}{beside_line}assumes       {assumptions}\nmoments acc.  ε = {} (order λ = {}; the Bayesian accountant at distances = the clipping bound{clip_note})\nRDP acc.      ε = {} (order {}; DP, worst case{clip_note})\nattack        a membership attacker guessing whether a typical record x' ~ μ was in the training data (prior 1/2) succeeds at most {} of the time, averaged over x' ((e^ε_μ + δ_μ)/(1 + e^ε_μ), Triastcyn & Faltings 2020, eq. 1); the worst-case RDP ε promises at most {}\n",
            readable(b.epsilon),
            readable(a.delta),
            readable(gamma),
            b.order,
            b.samples,
            path,
            readable(ma),
            ma_order,
            readable(rdp),
            readable(rdp_order),
            crate::record::result::percent(
                crate::record::attack_success_bound(b.epsilon, a.delta),
                true
            ),
            crate::record::result::percent(crate::record::attack_success_bound(rdp, a.delta), true)
        ) + &per
    };
    Ok(Outcome {
        stdout,
        code: 0,
        late_error: None,
    })
}

/// `--weibull-shape K`: distances drawn i.i.d. from Weibull(scale, K) with the seed's own
/// stream, capped at `max_distance` unless --unclipped (clipping gradients to norm C is a
/// projection onto a ball, which is non-expansive, so the capped draw is at least the clipped
/// gradients' distance: the cost grows with d, the safe side). Returns the draws and their name.
fn weibull_distances(
    a: &AccountantArgs,
    shape: f64,
    max_distance: f64,
) -> Result<(Vec<f64>, String)> {
    use rand::distr::Distribution as _;
    if !(shape.is_finite() && shape > 0.0) {
        return Err(bad("--weibull-shape", shape, "a finite number > 0"));
    }
    let scale = a.weibull_scale.unwrap_or(0.2);
    if !(scale.is_finite() && scale > 0.0) {
        return Err(bad("--weibull-scale", scale, "a finite number > 0"));
    }
    let m = a.weibull_samples.unwrap_or(1000);
    if !(3..=1_000_000).contains(&m) {
        return Err(bad("--weibull-samples", m, "a whole number from 3 to 10^6"));
    }
    let seed = a.seed.unwrap_or(0);
    let law = rand_distr::Weibull::new(scale, shape).map_err(|e| {
        bad(
            "--weibull-shape",
            shape,
            &format!("a valid Weibull law ({e})"),
        )
    })?;
    let mut rng = crate::rng::Seed(seed).rng(crate::rng::Stream::Other {
        tag: 0x7765_6962, // "weib"
        index: 0,
    });
    let d = (0..m)
        .map(|_| {
            let x: f64 = law.sample(&mut rng);
            if a.unclipped { x } else { x.min(max_distance) }
        })
        .collect();
    let cap = if a.unclipped {
        "unclipped".to_string()
    } else {
        format!("capped at {}", readable(max_distance))
    };
    Ok((
        d,
        format!(
            "Weibull(scale {}, shape {}) draws, {cap}, seed {seed}",
            readable(scale),
            readable(shape)
        ),
    ))
}

/// `--curves DIR`: ε against the number of steps (16 log-spaced counts from 1 to `steps`) and ε
/// against the order λ at `steps`, the Bayesian estimator's beside the moments accountant's;
/// writes DIR/bdp-curves.json and DIR/bdp-curves.png and returns their paths.
#[allow(clippy::too_many_arguments)]
fn write_curves(
    dir: &std::path::Path,
    d: &[f64],
    source: &str,
    (kind, kind_id): (crate::mechanisms::bayesian_accountant::Estimator, &str),
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    gamma: f64,
    orders: &[u32],
) -> Result<Vec<String>> {
    use crate::mechanisms::bayesian_accountant::moments_accountant_epsilon;
    use crate::report::bayesian::{BayesianCurves, OrderPoint, StepPoint};
    let named = |e: AccountingError| Error::InvalidConfig(format!("--curves: {e}"));
    let mut counts: Vec<u64> = (0..16)
        .map(|i| ((steps as f64).powf(i as f64 / 15.0)).round().max(1.0) as u64)
        .collect();
    counts.dedup();
    let mut by_steps = Vec::new();
    for &t in &counts {
        let b = kind
            .account(d, q, z, t, delta, gamma, orders)
            .map_err(named)?;
        let (ma, _) = moments_accountant_epsilon(q, z, t, delta, orders).map_err(named)?;
        by_steps.push(StepPoint {
            steps: t,
            bayesian: b.epsilon,
            moments: ma,
        });
    }
    let curve = kind
        .epsilon_by_order(d, q, z, steps, delta, gamma, orders)
        .map_err(named)?;
    let mut by_order = Vec::new();
    for (l, e) in curve {
        let rdp = crate::mechanisms::accountant::subsampled_gaussian_rdp(q, z, f64::from(l) + 1.0)
            .map_err(named)?;
        let ma = (steps as f64 * f64::from(l) * rdp - delta.ln()) / f64::from(l);
        by_order.push(OrderPoint {
            order: l,
            bayesian: e,
            moments: ma,
        });
    }
    let curves = BayesianCurves {
        source: source.to_string(),
        sampling_rate: q,
        noise_multiplier: z,
        steps,
        delta,
        gamma,
        estimator: kind_id.to_string(),
        by_steps,
        by_order,
    };
    std::fs::create_dir_all(dir)
        .map_err(|e| Error::InvalidConfig(format!("--curves {}: {e}", dir.display())))?;
    let json = dir.join("bdp-curves.json");
    let png = dir.join("bdp-curves.png");
    crate::report::write_atomic(&json, to_json(&curves)?.as_bytes())?;
    crate::report::bayesian::curves_png(&png, &curves)?;
    Ok(vec![json.display().to_string(), png.display().to_string()])
}

/// One distance per line (blank and `#` lines skipped): in [0, 2], or any finite number ≥ 0 when
/// `unclipped`; errors name `flag`, the file and the line. `given`: the file's text when the
/// caller has it already (the file is then not read).
fn read_distances(
    path: &std::path::Path,
    flag: &str,
    unclipped: bool,
    given: Option<&str>,
) -> Result<Vec<f64>> {
    let text = match given {
        Some(t) => t.to_string(),
        None => crate::sources::text::read_text(path)
            .map_err(|e| Error::InvalidConfig(format!("{flag} {}: {e}", path.display())))?,
    };
    let mut d = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let v: f64 = l.parse().map_err(|_| {
            Error::InvalidConfig(format!(
                "{flag} {} line {}: {l:?} is not a number; allowed: one distance in [0, 2] per line",
                path.display(),
                i + 1
            ))
        })?;
        if unclipped && !(v.is_finite() && v >= 0.0) {
            return Err(Error::InvalidConfig(format!(
                "{flag} {} line {}: distance {v}; allowed: a finite number ≥ 0 (--unclipped)",
                path.display(),
                i + 1
            )));
        }
        if !unclipped && !(0.0..=2.0).contains(&v) {
            return Err(Error::InvalidConfig(format!(
                "{flag} {} line {}: distance {v}; allowed: 0 to 2 (a fraction of the clipping norm; gradients not clipped: --unclipped)",
                path.display(),
                i + 1
            )));
        }
        d.push(v);
    }
    Ok(d)
}

/// The accountant's error `e` without its hint to the library caller ("use a larger
/// discretization", which no flag of this command sets), when it is the error of a composition
/// too large for the loss grid; `None` for any other error.
fn grid_too_small(e: &str) -> Option<String> {
    use crate::mechanisms::pld::WINDOW_TOO_LARGE;
    e.contains(WINDOW_TOO_LARGE).then(|| {
        e.replace(&format!(" {WINDOW_TOO_LARGE}"), "")
            .replace(WINDOW_TOO_LARGE, "")
            .replace("; allowed: at most", ", more than the limit of")
    })
}

/// A noise multiplier as printed: six decimals, or six significant digits when small (a
/// z of 10⁻⁹ is not "0.000000").
fn z_text(z: f64) -> String {
    if z >= 0.01 {
        format!("{z:.6}")
    } else {
        format!("{z:.5e}")
    }
}

fn bad(flag: &str, v: impl std::fmt::Display, allowed: &str) -> Error {
    Error::InvalidConfig(format!("{flag} {v}; allowed: {allowed}"))
}

/// The `--policy` of the q, z, T form (and of `--target-epsilon`): Poisson when not given;
/// fixed-size under replace-one only, refused otherwise with the ledger path's check and words
/// ([`PldAccountant::check_fixed_size`]); shuffled refused with the ledger path's reason.
fn policy_of(a: &AccountantArgs, neighbors: Neighboring) -> Result<SamplingPolicy> {
    let Some(p) = &a.policy else {
        return Ok(SamplingPolicy::Poisson);
    };
    match p.trim() {
        "poisson" => Ok(SamplingPolicy::Poisson),
        "fixed-size" => {
            PldAccountant::new(neighbors)
                .check_fixed_size(|| "fixed-size batches".into())
                .map_err(|e| Error::InvalidConfig(format!("--policy fixed-size: {e}")))?;
            Ok(SamplingPolicy::FixedSize)
        }
        "shuffled" | "shuffle" => Err(Error::InvalidConfig(format!(
            "--policy {p} (each epoch a permutation cut into batches): no accountant here amplifies shuffled batches (the Poisson accountant at q = B/n can under-count them: Chua et al. 2024); allowed: poisson, or fixed-size (under --neighbors replace-one), or a shuffled run accounted without amplification as --sampling-rate 1 under --neighbors replace-one"
        ))),
        _ => Err(bad(
            "--policy",
            format!("{p:?}"),
            "poisson or fixed-size (fixed-size under --neighbors replace-one)",
        )),
    }
}

/// The first words of the q, z, T form's text: the mechanism, named by how its batches are
/// drawn.
fn policy_words(policy: SamplingPolicy) -> &'static str {
    match policy {
        SamplingPolicy::FixedSize => {
            "Gaussian on fixed-size batches (B = q·n of the n records without replacement each step)"
        }
        _ => "Poisson-subsampled Gaussian",
    }
}

const PLD_METHOD: &str = "privacy loss distribution of the Poisson-subsampled Gaussian (both add and remove directions), Connect-the-Dots discretization at interval 1e-4 (Doroshenko et al. 2022), composed by FFT (Koskela et al. 2020); the pessimistic PLD gives an upper bound on ε (rounded up), the optimistic one a lower bound";
const PLD_METHOD_FIXED_SIZE: &str = "privacy loss distribution; Poisson samples: the subsampled Gaussian (both add and remove directions); fixed-size samples (B of n without replacement, replace-one): per step the larger of the add and remove profiles at sensitivity 2 (Dong, Roth & Su 2022, Theorem 4.2, C_q(G_{2/z})), each direction composed on its own for the optimistic PLD (a realized pair); Connect-the-Dots discretization at interval 1e-4 (Doroshenko et al. 2022), composed by FFT (Koskela et al. 2020); the pessimistic PLD gives an upper bound on ε (rounded up), the optimistic one a lower bound";
/// The text's line under the PLD bounds of fixed-size batches: which rule gave them.
const FIXED_SIZE_NOTE: &str = "fixed-size batches (B of n drawn without replacement each step): each such step is bounded by the larger of the two add/remove profiles at sensitivity 2 (Dong, Roth & Su 2022, Theorem 4.2), which is the upper bound; the optimistic estimate is each direction composed on its own, a pair the mechanism realizes (n − 1 records at −C, the replaced one +C against −C)";
const GROUP_METHOD: &str = "Triastcyn & Faltings 2020, Proposition 4 (group privacy): (K eps, K e^{(K-1) eps} delta) for datasets differing in K records drawn i.i.d. from mu, by the chain D_0..D_K (each step the per-record claim, events on the output); rounded up";
const RDP_METHOD: &str = "RDP of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019), composed over steps, converted with Balle et al. 2020 / Canonne, Kamath & Steinke 2020";

/// `audit accountant`: what it prints (text or `--json`) for these options.
pub fn accountant(a: &AccountantArgs) -> Result<Outcome> {
    account(a, None)
}

/// `audit accountant --ledger NAME` on ledger events the caller read already (the Python
/// package's `account` on a list of events): the same accountants, checks and output as when the
/// file `a.ledger` holds these events, which names them in the output (it must be set; the file
/// is not read).
pub fn accountant_given(
    a: &AccountantArgs,
    events: Vec<(LedgerEvent, SamplingPolicy)>,
) -> Result<Outcome> {
    if a.ledger.is_none() {
        return Err(Error::InvalidConfig(
            "accountant_given: events given without a ledger name; allowed: a name in `ledger`"
                .into(),
        ));
    }
    // What clap refuses beside --ledger (conflicts_with_all) is refused here too.
    if a.bayesian
        || a.target_epsilon.is_some()
        || a.sampling_rate.is_some()
        || a.noise_multiplier.is_some()
        || a.steps.is_some()
        || a.policy.is_some()
    {
        return Err(Error::InvalidConfig(
            "a ledger with sampling_rate, noise_multiplier, steps, target_epsilon, policy or bayesian; allowed: a ledger alone (its sampling events say their policy), or those settings without one".into(),
        ));
    }
    account(a, Some(events))
}

/// `audit accountant --bayesian --data NAME …` on the distance samples' text the caller has
/// already (the Python package's `account_bayesian` on an array): the same parser, checks,
/// accountants and output as when the file `a.data` holds `text`, which names it in the output
/// (it must be set, with `a.bayesian`; the file is not read).
pub fn accountant_bayesian_given(a: &AccountantArgs, text: &str) -> Result<Outcome> {
    if !a.bayesian || a.data.is_none() {
        return Err(Error::InvalidConfig(
            "accountant_bayesian_given: distances given without bayesian and a data name; allowed: bayesian set and a name in `data`".into(),
        ));
    }
    // What clap refuses beside --bayesian (conflicts_with_all) is refused here too.
    if a.ledger.is_some() || a.target_epsilon.is_some() {
        return Err(Error::InvalidConfig(
            "bayesian with a ledger or target_epsilon; allowed: sampling_rate, noise_multiplier and steps".into(),
        ));
    }
    if !(a.delta > 0.0 && a.delta < 1.0) {
        return Err(bad("--delta", a.delta, "0 < δ < 1"));
    }
    bayesian(a, Some(text))
}

fn account(
    a: &AccountantArgs,
    given: Option<Vec<(LedgerEvent, SamplingPolicy)>>,
) -> Result<Outcome> {
    if !(a.delta > 0.0 && a.delta < 1.0) {
        return Err(bad("--delta", a.delta, "0 < δ < 1"));
    }
    if a.bayesian {
        return bayesian(a, None);
    }
    if a.ledger.is_some() && a.policy.is_some() {
        return Err(Error::InvalidConfig(
            "--policy with --ledger; allowed: --policy with --sampling-rate/--steps only (a ledger's sampling events say their own policy: \"policy\": \"fixed-size\")".into(),
        ));
    }
    let neighbors: Neighboring = a.neighbors.parse().map_err(|_| {
        bad(
            "--neighbors",
            &a.neighbors,
            "add-remove, replace-one or zero-out",
        )
    })?;
    // The ledger: from the file, or one block of T steps at (q, z).
    let mut policy = SamplingPolicy::Poisson;
    let (events, single) = match &a.ledger {
        Some(path) => {
            let events = match given {
                Some(events) => events,
                None => crate::sources::text::read_ledger(
                    path,
                    &format!("--ledger {}", path.display()),
                )?,
            };
            (events, None)
        }
        None => {
            policy = policy_of(a, neighbors)?;
            let q = a.sampling_rate.unwrap_or(f64::NAN);
            if !(q > 0.0 && q <= 1.0) {
                return Err(bad("--sampling-rate", q, "0 < q ≤ 1"));
            }
            let steps = a.steps.unwrap_or(0);
            if steps == 0 {
                return Err(bad("--steps", steps, "a whole number ≥ 1"));
            }
            if let Some(target) = a.target_epsilon {
                return inverse(a, q, steps, target, neighbors, policy);
            }
            let z = a.noise_multiplier.unwrap_or(f64::NAN);
            if !(z.is_finite() && z > 0.0) {
                return Err(bad("--noise-multiplier", z, "a finite number > 0"));
            }
            (
                vec![
                    (
                        LedgerEvent::Sampling {
                            probability: q,
                            repetitions: steps,
                        },
                        policy,
                    ),
                    (
                        LedgerEvent::GaussianSum {
                            noise_multiplier: z,
                        },
                        policy,
                    ),
                ],
                Some((q, z, steps)),
            )
        }
    };
    // Errors of the accountants name the flags the values came from.
    let flags = match &a.ledger {
        Some(p) => format!("--ledger {}", p.display()),
        None => "--sampling-rate/--noise-multiplier/--steps".to_string(),
    };
    let named = |e: AccountingError| {
        let e = e.to_string();
        match grid_too_small(&e) {
            // The coarsest grid was tried already: say what the user can change.
            Some(e) => Error::InvalidConfig(format!(
                "{flags}: too many steps for the PLD accountant even on its coarsest loss grid ({e}); allowed: fewer steps (10^9 steps of q = 0.01 take about 4 s)"
            )),
            None => Error::InvalidConfig(format!("{flags}: {e}")),
        }
    };
    let mut pld = PldAccountant::new(neighbors);
    pld.compose_ledger_with_policies(&events).map_err(named)?;
    let fixed_size = events.iter().any(|(_, p)| *p == SamplingPolicy::FixedSize);
    let spinner =
        crate::report::progress::Spinner::start(false, "composing the privacy loss distribution");
    let (pld_upper, pld_lower, grid) = pld.epsilon_bounds_adaptive(a.delta).map_err(named)?;
    drop(spinner);
    // Zero-out accounts as add/remove (the same PLD: `Pld::poisson_gaussian`).
    let add_remove = neighbors != Neighboring::ReplaceOne;
    let rdp = if add_remove {
        let mut acc = RdpAccountant::new();
        for (e, _) in &events {
            match *e {
                LedgerEvent::Sampling {
                    probability,
                    repetitions,
                } => acc
                    .record_sampling(probability, repetitions)
                    .map_err(named)?,
                LedgerEvent::GaussianSum { noise_multiplier } => {
                    acc.record_gaussian_sum(noise_multiplier).map_err(named)?
                }
            }
        }
        Some(acc.epsilon(a.delta).map_err(named)?)
    } else {
        None
    };
    // q = 1: T Gaussian steps are exactly (√T/z)-GDP (Dong, Roth & Su 2019), and
    // ρ = T/(2z²)-zCDP (Bun & Steinke 2016).
    let full = single.filter(|&(q, _, _)| q == 1.0 && add_remove);
    let exact = match full {
        Some((_, z, steps)) => Some(gaussian_exact_epsilon(z, steps, a.delta).map_err(named)?),
        None => None,
    };
    let zcdp = match full {
        Some((_, z, steps)) => {
            let rho = gaussian_zcdp_rho(z) * steps as f64;
            Some((rho, zcdp_to_epsilon(rho, a.delta).map_err(named)?))
        }
        None => None,
    };
    let stdout = if a.json {
        let (q, z, steps) = match single {
            Some((q, z, t)) => (Some(q), Some(z), Some(t)),
            None => (None, None, None),
        };
        to_json(&json!({
            "sampling_rate": q,
            "noise_multiplier": z,
            "steps": steps,
            // The q, z, T form's --policy; a ledger's events say theirs.
            "policy": single.map(|_| policy.name()),
            "ledger": a.ledger.as_ref().map(|p| p.display().to_string()),
            // Each line as the ledger writes it: a Poisson sample without its (default) policy.
            "ledger_events": events
                .iter()
                .map(|(e, p)| serde_json::from_str(&ledger_line(e, *p)))
                .collect::<std::result::Result<Vec<serde_json::Value>, _>>()
                .map_err(|e| Error::InvalidConfig(format!("ledger events as JSON: {e}")))?,
            "delta": a.delta,
            "neighbors": neighbors.to_string(),
            "pld": {"epsilon_upper": pld_upper, "epsilon_lower": pld_lower, "discretization": grid, "method": if fixed_size { PLD_METHOD_FIXED_SIZE } else { PLD_METHOD }},
            "attack_success_bound": crate::record::result::attack_success_bound(pld_upper, a.delta),
            "rdp": rdp.map(|(eps, order)| json!({"epsilon": eps, "order": order, "method": RDP_METHOD})),
            "exact_gaussian": exact.map(|e| json!({"epsilon": e, "method": "exact Gaussian privacy profile, mu = sqrt(T)/z (Balle & Wang 2018; Dong, Roth & Su 2019)"})),
            "zcdp": zcdp.map(|(rho, e)| json!({"rho": rho, "epsilon": e, "method": "rho = T/(2 z^2) (Bun & Steinke 2016), converted through RDP at the best order"})),
        }))?
    } else {
        let mut s = match (single, &a.ledger) {
            (Some((q, z, steps)), _) => format!(
                "{}: q = {q:?}, z = {z:?}, T = {steps}, δ = {}, {neighbors} neighbors\n",
                policy_words(policy),
                readable(a.delta)
            ),
            (None, Some(path)) => format!(
                "privacy ledger {} ({} events, {} sampled block(s) with queries), δ = {}, {neighbors} neighbors\n",
                path.display(),
                events.len(),
                pld.events().len(),
                readable(a.delta)
            ),
            (None, None) => String::new(),
        };
        // Seven decimals, each rounded to its safe side: the upper bound up, the lower down.
        let up = (pld_upper * 1e7).ceil() / 1e7;
        let down = (pld_lower * 1e7).floor() / 1e7;
        let coarse = if grid != crate::mechanisms::pld::DEFAULT_DISCRETIZATION {
            format!(
                "; on a loss grid of step {grid} instead of {}, so that {} compositions fit in memory: looser, still valid",
                crate::mechanisms::pld::DEFAULT_DISCRETIZATION,
                single.map_or_else(|| "the ledger's".to_string(), |(_, _, t)| t.to_string())
            )
        } else {
            String::new()
        };
        let up = if up.is_finite() {
            format!("{up:.7}")
        } else {
            format!(
                "∞ (the pessimistic PLD keeps mass {} at infinite loss, above δ)",
                readable(crate::mechanisms::pld::TAIL_MASS_TRUNCATION)
            )
        };
        let _ = writeln!(
            s,
            "PLD accountant   ε ≤ {up}  (upper bound; optimistic estimate {down:.7}; Connect-the-Dots, Doroshenko et al. 2022{coarse})"
        );
        if fixed_size {
            let _ = writeln!(s, "                 {FIXED_SIZE_NOTE}");
        }
        match rdp {
            Some((eps, order)) => {
                let _ = writeln!(
                    s,
                    "RDP accountant   ε ≤ {eps:.7}  (optimal order {order}; Mironov, Talwar & Zhang 2019; conversion of Balle et al. 2020)"
                );
            }
            None => {
                let _ = writeln!(
                    s,
                    "RDP accountant   (add-remove only; not computed for {neighbors})"
                );
            }
        }
        if let Some(e) = exact {
            let (_, z, steps) = single.unwrap_or((1.0, 1.0, 1));
            let _ = writeln!(
                s,
                "exact Gaussian   ε = {e:.7}  (μ = √T/z = {:.6}; analytic Gaussian, Balle & Wang 2018)",
                (steps as f64).sqrt() / z
            );
        }
        if let Some((rho, e)) = zcdp {
            let _ = writeln!(
                s,
                "zCDP             ε = {e:.7}  (ρ = {rho:.6e}; Bun & Steinke 2016)"
            );
        }
        if pld_upper.is_finite() {
            // What the claim means for an attacker, beside the ε it states (docs/json.md).
            let _ = writeln!(
                s,
                "attack           a membership attacker (prior 1/2, telling D from D') succeeds at most {} of the time under the PLD bound's (ε, δ): (e^ε + δ)/(1 + e^ε), 1/(1 + e^−ε) at δ = 0",
                crate::record::result::percent(
                    crate::record::result::attack_success_bound(pld_upper, a.delta),
                    true
                )
            );
        }
        s
    };
    Ok(Outcome::new(stdout, 0))
}

/// `--target-epsilon`: the noise multiplier that reaches it.
fn inverse(
    a: &AccountantArgs,
    q: f64,
    steps: u64,
    target: f64,
    neighbors: Neighboring,
    policy: SamplingPolicy,
) -> Result<Outcome> {
    if !(target.is_finite() && target > 0.0) {
        return Err(bad("--target-epsilon", target, "a finite number > 0"));
    }
    let z = noise_multiplier_for_policy(q, steps, target, a.delta, neighbors, policy).map_err(|e| {
        let e = e.to_string();
        match grid_too_small(&e) {
            // The search lowers z while the target is met; a small z spreads the privacy loss
            // over more grid points than the accountant holds.
            Some(e) => Error::InvalidConfig(format!(
                "--target-epsilon {}: the noise multipliers that meet so large a target are too small for the accountant's loss grid at q = {q:?}, T = {steps} ({e}); allowed: a smaller --target-epsilon or fewer --steps, or --noise-multiplier Z for the ε of one small z (composed on a coarser grid when needed; the search stops at z = {})",
                readable(target),
                readable(crate::mechanisms::pld::MIN_NOISE_MULTIPLIER)
            )),
            None => Error::InvalidConfig(format!("--target-epsilon {}: {e}", readable(target))),
        }
    })?;
    let mut acct = PldAccountant::new(neighbors);
    let named = |e: AccountingError| {
        Error::InvalidConfig(format!("--target-epsilon {}: {e}", readable(target)))
    };
    let fixed_size = policy == SamplingPolicy::FixedSize;
    if fixed_size {
        acct.compose_fixed_size_gaussian(q, z, steps)
    } else {
        acct.compose_poisson_gaussian(q, z, steps)
    }
    .map_err(named)?;
    let (upper, lower) = acct.epsilon_bounds(a.delta).map_err(named)?;
    let method = if fixed_size {
        PLD_METHOD_FIXED_SIZE
    } else {
        PLD_METHOD
    };
    // What the z found means for an attacker, as beside every ε (docs/json.md).
    let attack_bound = crate::record::result::attack_success_bound(upper, a.delta);
    let stdout = if a.json {
        to_json(&json!({
            "sampling_rate": q,
            "steps": steps,
            "policy": policy.name(),
            "delta": a.delta,
            "neighbors": neighbors.to_string(),
            "target_epsilon": target,
            "noise_multiplier": z,
            "pld": {"epsilon_upper": upper, "epsilon_lower": lower, "method": method},
            "attack_success_bound": attack_bound,
        }))?
    } else {
        let note = if fixed_size {
            format!("                 {FIXED_SIZE_NOTE}\n")
        } else {
            String::new()
        };
        format!(
            "{}: q = {q:?}, T = {steps}, δ = {}, {neighbors} neighbors, target ε = {}\n\
             noise multiplier z = {}  (smallest z found by binary search whose PLD ε upper bound is ≤ the target: {upper:.7}; optimistic {lower:.7})\n\
             {note}attack           a membership attacker (prior 1/2, telling D from D') succeeds at most {} of the time at this z, under the PLD bound's (ε, δ): (e^ε + δ)/(1 + e^ε)\n",
            policy_words(policy),
            readable(a.delta),
            readable(target),
            z_text(z),
            crate::record::result::percent(attack_bound, true)
        )
    };
    Ok(Outcome::new(stdout, 0))
}
