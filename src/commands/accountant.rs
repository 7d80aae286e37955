//! `audit accountant`: DP-SGD's ε from the PLD accountant (an upper bound and the optimistic
//! estimate beside it) and the RDP accountant, for one Poisson-subsampled Gaussian mechanism or a
//! logged privacy ledger; and the inverse, the noise multiplier that reaches a target ε. This
//! module holds the flags; [`crate::modes::accountant`] accounts, from plain options.

use std::path::PathBuf;

use clap::Args;

use super::Outcome;
use crate::error::Result;
use crate::modes::accountant::{
    AccountantOptions, DEFAULT_DISTANCE_QUANTILES, DEFAULT_MARKOV_PERCENTILES, DEFAULT_NEIGHBORS,
};

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
    /// at rate q is at most this ε (binary search). With --bayesian: the smallest z whose
    /// Bayesian ε_μ at δ_μ = --delta on the distances is at most this ε, with DP's z beside it
    /// (how much less noise Bayesian DP needs for the same ε), then the account at that z.
    #[arg(allow_hyphen_values = true, long, value_name = "EPS")]
    pub target_epsilon: Option<f64>,
    /// A privacy ledger to re-account instead of q, z, T: one JSON event per line,
    /// `{"event": "sampling", "probability": Q, "repetitions": T}` followed by one
    /// `{"event": "gaussian-sum", "noise_multiplier": Z}` per noise group of that sample; blank
    /// and `#` lines are skipped, a UTF-8 byte-order mark and CRLF line ends are accepted. A
    /// sampling event may say how its sample is drawn: `"policy": "poisson"` (the default when
    /// absent), `"fixed-size"` (B of n without replacement each step; accounted under
    /// --neighbors replace-one only) or `"shuffled"` (refused, named: account it as
    /// "probability": 1 under --neighbors replace-one). A sample may also hold
    /// `{"event": "laplace-sum", "scale": B}`, `{"event": "randomized-response", "epsilon": E,
    /// "values": K}` and `{"event": "attribution-summary", "l1_budget": L, "scale": T}` (the
    /// PLD accountant; docs/seeds/pld-events.md says which samples each may be in). Example:
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
    #[arg(long, default_value = DEFAULT_NEIGHBORS)]
    pub neighbors: String,
    /// Bayesian DP (Triastcyn & Faltings 2020) instead of DP: ε_μ at δ_μ = --delta from the
    /// gradient-distance samples of --data (typical case over the data, weaker than DP), beside
    /// the moments and RDP accountants' DP ε for the same run.
    #[arg(long, conflicts_with = "ledger")]
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
    #[arg(long, requires = "bayesian", default_value = DEFAULT_DISTANCE_QUANTILES)]
    pub distance_quantiles: String,
    /// With --bayesian: the paper's percentile curve (§4.4.1, Markov's inequality over the
    /// conditional tail δ(x')): for each p, the ε_p such that at least p % of the records x' ~ μ
    /// have Pr[L ≥ ε_p | x'] ≤ δ, comma-separated, each in (0, 100) with (1 − p/100)·δ > γ.
    #[arg(long, requires = "bayesian", default_value = DEFAULT_MARKOV_PERCENTILES)]
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
    /// DP-fy ML report: the data accesses the guarantee covers, `single-training-run` or
    /// `training-and-tuning` (it also covers hyperparameter tuning); over the ledger's
    /// `{"event": "dp-fy-ml", "data_accesses": …}` line. Not stated when absent, and the report
    /// says so.
    #[arg(long, value_name = "WHICH", conflicts_with = "bayesian")]
    pub data_accesses: Option<String>,
    /// DP-fy ML report: the outputs the guarantee covers, `final-model`, `checkpoints` or
    /// `every-iterate` (the full sequence of privatized gradients); over the ledger's
    /// `"outputs"` field.
    #[arg(long, value_name = "WHICH", conflicts_with = "bayesian")]
    pub outputs_covered: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

impl AccountantArgs {
    /// The plain options these flags say (clap has checked their combinations).
    pub fn options(&self) -> AccountantOptions {
        AccountantOptions {
            sampling_rate: self.sampling_rate,
            noise_multiplier: self.noise_multiplier,
            steps: self.steps,
            policy: self.policy.clone(),
            delta: self.delta,
            target_epsilon: self.target_epsilon,
            ledger: self.ledger.clone(),
            ledger_events: None,
            neighbors: self.neighbors.clone(),
            bayesian: self.bayesian,
            data: self.data.clone(),
            data_text: None,
            weibull_shape: self.weibull_shape,
            weibull_scale: self.weibull_scale,
            weibull_samples: self.weibull_samples,
            seed: self.seed,
            curves: self.curves.clone(),
            gamma: self.gamma,
            distance_quantiles: self.distance_quantiles.clone(),
            markov_percentiles: self.markov_percentiles.clone(),
            estimator: self.estimator.clone(),
            max_distance: self.max_distance,
            unclipped: self.unclipped,
            group: self.group,
            test_distances: self.test_distances.clone(),
            data_accesses: self.data_accesses.clone(),
            outputs_covered: self.outputs_covered.clone(),
            ledger_scope: None,
            json: self.json,
        }
    }
}

/// `audit accountant`: what it prints (text or `--json`) for these options.
pub fn accountant(a: &AccountantArgs) -> Result<Outcome> {
    crate::modes::accountant::account(&a.options())
}
