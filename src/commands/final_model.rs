//! `audit final-model`'s command line: its flags and the call of the library layer
//! ([`crate::modes::final_model`]).

use clap::Args;

use super::Outcome;
use crate::error::Result;
pub use crate::modes::final_model::{FinalModelOptions, final_model as run_final_model};

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
        }
    }
}

/// `audit final-model`.
pub(super) fn final_model(args: &FinalModelArgs) -> Result<Outcome> {
    run_final_model(&FinalModelOptions::from(args))
}
