//! `audit final-model`'s command line: its flags and the call of the library layer
//! ([`crate::modes::final_model`]).

use clap::Args;

use super::Outcome;
use crate::error::Result;
pub use crate::modes::final_model::{
    ExecFinalModelOptions, FinalModelOptions, final_model as run_final_model,
};

/// Options of `audit final-model`.
#[derive(Debug, Args)]
pub struct FinalModelArgs {
    /// Confirming training runs per side of the pair (D, D + {target}); each run trains the
    /// trainer once and releases only the final model's score of the target.
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, default_value_t = FinalModelOptions::default().runs)]
    pub runs: usize,
    /// Exploration runs per side for each candidate (initial model, target); drawn from search
    /// streams disjoint from the confirming runs, used only to choose.
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, default_value_t = FinalModelOptions::default().exploration_runs)]
    pub exploration_runs: usize,
    /// The initial model the auditor gives the trainer: auto (chosen by exploration), zero
    /// (the trainer's own), pretrained (non-private GD on D) or saturated (pretrained, the
    /// Dirac target's input pushed to -8/a).
    #[arg(long, default_value = "auto")]
    pub initial_model: String,
    /// The target record: auto (chosen by exploration), dirac:A (A on an input no real record
    /// touches, label 1) or corner (x = -sign(theta0) in {-1, 1}^features, label 1).
    #[arg(long, default_value = "auto")]
    pub target: String,
    /// Trainer parameter NAME=VALUE (repeatable), as for `audit one-run`: records, features,
    /// steps, sampling_rate, noise_multiplier, clip, learning_rate, delta, hidden, and the
    /// twins noise_scale, sampling_rate_ratio, batch_clip, clip_after_noise.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// Seed of every random choice; the same seed gives the same result.
    #[arg(allow_hyphen_values = true, long, default_value_t = FinalModelOptions::default().seed)]
    pub seed: u64,
    /// β: probability of reporting a violation against a trainer that keeps its claim.
    #[arg(allow_hyphen_values = true, long, default_value_t = FinalModelOptions::default().failure_probability)]
    pub failure_probability: f64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Audit a program instead of the built-in trainer: every request also carries
    /// "initial_model" (unless --initial-model own) and "queries" (the target record); the
    /// program trains `samples` times from the initial model on the request's dataset and prints
    /// one score of the query per run (docs/final-model.md). With --exec, --initial-model takes
    /// own or FILE (a JSON array), comma-separated; --target takes auto (the domain's corners)
    /// or FILE (records, one per line), comma-separated.
    #[arg(long, value_name = "COMMAND")]
    pub exec: Option<String>,
    /// With --exec: the training data D, one record per line (a JSON array).
    #[arg(long, value_name = "FILE")]
    pub data: Option<std::path::PathBuf>,
    /// With --exec: the records' range L:U (D's records and the target's).
    #[arg(long, allow_hyphen_values = true, value_name = "L:U")]
    pub record_range: Option<String>,
    /// With --exec: the program's claim (e.g. gdp:0.5 for T full-batch steps at noise z with
    /// mu = sqrt(T)/z; approx:EPS:DELTA; pure:EPS).
    #[arg(long)]
    pub claim: Option<String>,
    /// With --exec and a gdp claim: delta of the epsilon shown beside mu_lower.
    #[arg(long, allow_hyphen_values = true, default_value_t = 1e-5)]
    pub delta: f64,
    /// With --exec: seconds one request (a batch of runs) may take before the program's process
    /// group is killed.
    #[arg(long, allow_hyphen_values = true, default_value_t = 300.0)]
    pub exec_timeout: f64,
    /// With --exec: training runs per request.
    #[arg(long, allow_hyphen_values = true, value_parser = super::parse_count, default_value_t = 500)]
    pub exec_batch: usize,
}

impl From<&FinalModelArgs> for FinalModelOptions {
    fn from(a: &FinalModelArgs) -> Self {
        FinalModelOptions {
            params: a.params.clone(),
            runs: a.runs,
            exploration_runs: a.exploration_runs,
            initial_model: a.initial_model.clone(),
            target: a.target.clone(),
            seed: a.seed,
            failure_probability: a.failure_probability,
            json: a.json,
            exec: a.exec.as_ref().map(|command| ExecFinalModelOptions {
                command: command.clone(),
                data: a.data.clone(),
                record_range: a.record_range.clone(),
                claim: a.claim.clone(),
                delta: a.delta,
                timeout: a.exec_timeout,
                batch: a.exec_batch,
            }),
        }
    }
}

/// `audit final-model`.
pub(super) fn final_model(args: &FinalModelArgs) -> Result<Outcome> {
    if args.exec.is_none() {
        let given: Vec<&str> = [
            ("--data", args.data.is_some()),
            ("--record-range", args.record_range.is_some()),
            ("--claim", args.claim.is_some()),
        ]
        .iter()
        .filter(|(_, g)| *g)
        .map(|(f, _)| *f)
        .collect();
        if !given.is_empty() {
            return Err(crate::error::Error::InvalidConfig(format!(
                "{} apply to --exec only (the built-in trainer's data and claim come from its \
                 --param settings); allowed: add --exec COMMAND, or drop them",
                given.join(", ")
            )));
        }
    }
    let options = FinalModelOptions::from(args);
    match &options.exec {
        Some(exec) => crate::modes::final_model_exec::final_model_exec(&options, exec),
        None => run_final_model(&options),
    }
}
