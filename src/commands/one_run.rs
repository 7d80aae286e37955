//! `audit one-run`'s command line: its flags and the call of the library layer
//! ([`crate::modes::one_run`]), which does the work for the CLI and the Python package alike.

use clap::Args;

use super::Outcome;
use crate::error::Result;
pub use crate::modes::one_run::{GivenTraining, OneRunOptions, one_run_given, one_run_trainer};

/// Options of `audit one-run`.
#[derive(Debug, Args)]
pub struct OneRunArgs {
    /// m: canaries, each included in training independently with probability 1/2.
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, default_value_t = OneRunOptions::default().canaries)]
    pub canaries: usize,
    /// white-box (every iterate released; gradient canaries) or black-box (final model only;
    /// input canaries) [default: white-box]. The built-in trainer only.
    #[arg(long)]
    pub threat_model: Option<String>,
    /// Audit your own training program instead of the built-in trainer: `sh -c COMMAND` gets
    /// the data set, the canaries and their inclusion bits as JSON on stdin and prints one score
    /// per canary (see `src/audit/one_run_exec.rs` for the protocol).
    #[arg(long, value_name = "COMMAND")]
    pub exec: Option<String>,
    /// With --exec: the claim the program makes, pure:EPS, approx:EPS:DELTA, gdp:MU (audited
    /// with the Gaussian-DP bound on μ; its ε is read at δ = 1e-5), or ledger:FILE[:DELTA] (the
    /// PLD accountant's ε on the privacy ledger the program wrote, at δ, default 1e-5).
    #[arg(long, requires = "exec")]
    pub claim: Option<String>,
    /// With --exec: the data set the program trains on besides the canaries (one record per
    /// line, a JSON number or array); none by default.
    #[arg(long, value_name = "FILE", requires = "exec")]
    pub data: Option<std::path::PathBuf>,
    /// With --exec: the range LO:HI of every canary coordinate (uniform) [default: 0:1].
    #[arg(
        long,
        value_name = "LO:HI",
        allow_hyphen_values = true,
        requires = "exec"
    )]
    pub record_range: Option<String>,
    /// With --exec: coordinates per record [default: 1].
    #[arg(long, value_name = "D", requires = "exec")]
    pub record_dim: Option<usize>,
    /// With --exec: declare that your release is a product of per-canary channels (given the
    /// inclusion bits, each canary's score depends only on its own bit and on noise independent
    /// of the other canaries', e.g. one private coordinate per canary). The tighter
    /// order-statistics bound then decides the verdict; it is not valid for programs that
    /// couple their canaries (shared parameters, a clipped batch).
    #[arg(long, requires = "exec")]
    pub independent_canaries: bool,
    /// With --exec: seconds the training run may take [default: 600].
    #[arg(
        long,
        value_name = "SECONDS",
        allow_hyphen_values = true,
        requires = "exec"
    )]
    pub exec_timeout: Option<f64>,
    /// Trainer parameter NAME=VALUE (repeatable): records, features, steps, sampling_rate,
    /// noise_multiplier, clip, learning_rate, delta, hidden (0: logistic regression; h: one
    /// hidden layer of h tanh units), canary_norm (canary scale, multiple of C), and the twins
    /// noise_scale (bug when < 1), sampling_rate_ratio (bug when > 1), batch_clip (1: clip the
    /// batch sum), clip_after_noise (1: clip after adding the noise).
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// The built-in trainer's data: synthetic (drawn from the seed) or winequality (the red
    /// wine quality data shipped by linfa-datasets, 1599 records of 11 features)
    /// [default: synthetic].
    #[arg(long, value_name = "NAME")]
    pub dataset: Option<String>,
    /// Probability that a canary is included; the bound (Steinke et al. Theorem 3.1) needs 1/2.
    #[arg(allow_hyphen_values = true, long, default_value_t = OneRunOptions::default().inclusion_probability)]
    pub inclusion_probability: f64,
    /// Guess sizes K+:K- (comma-separated; β is split over them): the K+ highest scores are
    /// guessed "in", the K- lowest "out". Default: k:k for k = 1, 2, 5, 10, 20 % of m.
    #[arg(long, value_name = "K+:K-,...")]
    pub guesses: Option<String>,
    /// The membership score the guesses rank by: loss (the raw score: -loss of the canary
    /// black-box, the updates' alignment white-box) or calibrated (Phi((s - mu(x))/sigma(x)),
    /// mu and sigma fitted on as many never-included holdout canaries as canaries; the built-in
    /// trainer only) [default: loss].
    #[arg(long, value_name = "loss|calibrated")]
    pub score: Option<String>,
    /// Seed of every random choice; the same seed gives the same result.
    #[arg(allow_hyphen_values = true, long, default_value_t = OneRunOptions::default().seed)]
    pub seed: u64,
    /// β: probability of reporting a violation against a trainer that keeps its claim.
    #[arg(allow_hyphen_values = true, long, default_value_t = OneRunOptions::default().failure_probability)]
    pub failure_probability: f64,
    /// Print one JSON object (deterministic: no timings) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Where the report goes (as for `audit run`).
    #[command(flatten)]
    pub report: super::ReportArgs,
}

impl From<&OneRunArgs> for OneRunOptions {
    fn from(a: &OneRunArgs) -> Self {
        OneRunOptions {
            canaries: a.canaries,
            threat_model: a.threat_model.clone(),
            exec: a.exec.clone(),
            claim: a.claim.clone(),
            data: a.data.clone(),
            record_range: a.record_range.clone(),
            record_dim: a.record_dim,
            independent_canaries: a.independent_canaries,
            exec_timeout: a.exec_timeout,
            params: a.params.clone(),
            dataset: a.dataset.clone(),
            inclusion_probability: a.inclusion_probability,
            guesses: a.guesses.clone(),
            score: a.score.clone(),
            seed: a.seed,
            failure_probability: a.failure_probability,
            output: a.report.output(a.json),
        }
    }
}

/// `audit one-run`.
pub(super) fn one_run(args: &OneRunArgs) -> Result<Outcome> {
    crate::modes::one_run::one_run(&OneRunOptions::from(args))
}
