//! `audit test`'s command line: its flags, their checks, and the call of the library layer
//! ([`crate::modes::test`]), which does the work for the CLI and the Python package alike.

use std::path::PathBuf;

use clap::Args;

use super::{Outcome, ReportArgs};
use crate::error::{Error, Result};
pub use crate::modes::test::{
    DEFAULT_MAX_TRAIN_ROWS, GivenSides, TestOptions, TestOutputs, test_given,
};

/// Options of `audit test`: a claim tested on samples drawn elsewhere.
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Releases on D: a shard file, JSON lines (one JSON number or array per line, the exec
    /// protocol's line format), `.gz` or `.zst` compressed JSON lines, or `.bin` (little-endian
    /// f64 after a 48-byte header, see `audit sample`). Repeat for several shards.
    #[arg(long, value_name = "FILE")]
    pub samples_a: Vec<PathBuf>,
    /// Releases on D' (same formats); several files (shards) are concatenated in order.
    #[arg(long, value_name = "FILE")]
    pub samples_b: Vec<PathBuf>,
    /// Stream the shards: the training rows in memory, the rest counted shard by shard in
    /// parallel (the default when every tester can, i.e. the hockey-stick testers); an error
    /// for testers that read their samples in memory.
    #[arg(long, conflicts_with = "in_memory")]
    pub stream: bool,
    /// Read every release into memory (as every tester can), even for the hockey-stick tester.
    #[arg(long)]
    pub in_memory: bool,
    /// Streaming: most training rows per side (the first rows, in shard order). The bound is the
    /// in-memory one whenever the tester's own training split (20 % of a side) is smaller.
    #[arg(long, value_name = "N", default_value_t = TestOptions::default().max_train_rows)]
    pub max_train_rows: usize,
    /// The claim: pure:EPS, approx:EPS:DELTA, renyi:ALPHA:EPS, zcdp:RHO, gdp:MU, dpsgd:Q:Z:T,
    /// ledger:FILE[:DELTA] (the PLD accountant's ε on a privacy ledger at δ, default 1e-5), or
    /// rsc:K:EPS0:DELTA (the k-free reorder-slice-compute bound).
    /// Required, except with --plan (the plan holds it).
    #[arg(long, required_unless_present = "plan")]
    pub claim: Option<String>,
    /// Seed of the testers' own randomness: the Poisson number of held-out releases each bound
    /// counts, and randomized testers. It does not choose the training/held-out split, which is
    /// positional (the first rows of each side, in shard order, train; the rest are held out):
    /// the releases are assumed i.i.d. in file order, so a split by position is as good as a
    /// random one and lets the held-out rows be streamed.
    #[arg(allow_hyphen_values = true, long, default_value_t = TestOptions::default().seed)]
    pub seed: u64,
    /// β of the test.
    #[arg(allow_hyphen_values = true, long, default_value_t = TestOptions::default().failure_probability)]
    pub failure_probability: f64,
    /// Testers, comma-separated, or "all".
    #[arg(long, default_value_t = TestOptions::default().tester)]
    pub tester: String,
    /// Post-process both sides' releases before the testers through one view: none, values,
    /// float-repr, tanh, tanh:S, chebyshev:K, float-bits or auto. Without it (the default, as
    /// for `audit run --exec`) both layers run: the mechanism layer on the values and the
    /// floating-point layer on their representation (see --check).
    #[arg(long, value_name = "NAME", conflicts_with = "check")]
    pub transform: Option<String>,
    /// Which layers run and decide the exit code: mechanism, float or both [default: both].
    #[arg(long, value_name = "LAYERS")]
    pub check: Option<String>,
    /// Anytime-valid sequential test (as `audit run --sequential`): the releases are read in the
    /// files' order, in batches that double from --first-batch, and the test stops at the first
    /// batch whose betting wealth reaches 1/β; at most the smaller side's releases (or
    /// --max-samples). Uses its own betting test (not --tester), in memory.
    #[arg(long, conflicts_with_all = ["stream", "plan_out", "plan", "count_shard", "reduce"])]
    pub sequential: bool,
    /// Most releases per side a sequential test reads [default: all of the smaller side].
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, requires = "sequential", value_name = "N")]
    pub max_samples: Option<usize>,
    /// Releases per side of a sequential test's first (training-only) batch [default: 20].
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long, requires = "sequential", value_name = "N")]
    pub first_batch: Option<usize>,
    /// With a bdp: claim: the definition tested, 1 (strong BDP; events on (x', output)) or 2
    /// (weak BDP; events on the output only) [default: 1]. The shards are then pairs
    /// {"x": [...], "w": [...]} (see `audit sample --bdp-data`).
    #[arg(long, value_name = "1|2")]
    pub bdp_definition: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Worker threads, 1 to 4 × the cores; default: all cores. The result is the same, byte for
    /// byte, on any number of threads.
    #[arg(allow_hyphen_values = true, long)]
    pub jobs: Option<usize>,
    /// Counting shards as tasks, step 1 of 3: choose the events on the training split and write
    /// them, with the test's settings and every shard's size, to FILE (a plan) instead of
    /// testing. Step 2 is --plan FILE --count-shard SHARD, step 3 --plan FILE --reduce COUNTS…
    /// (docs/test.md, "Counting shards as tasks").
    #[arg(long, value_name = "FILE", conflicts_with_all = ["plan", "in_memory"])]
    pub plan_out: Option<PathBuf>,
    /// Steps 2 and 3: the plan written by --plan-out, which holds the shards, the claim and every
    /// setting (so none of them is given again).
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "samples_a", "samples_b", "claim", "stream", "in_memory", "max_train_rows", "seed",
        "failure_probability", "tester", "transform", "check", "bdp_definition",
    ])]
    pub plan: Option<PathBuf>,
    /// Step 2 (with --plan): count one shard's held-out releases against the plan's events and
    /// print the counts as one JSON object (save it to a file for --reduce).
    #[arg(
        long,
        value_name = "SHARD",
        requires = "plan",
        conflicts_with = "reduce"
    )]
    pub count_shard: Option<PathBuf>,
    /// Step 3 (with --plan): sum the count files of step 2 (every shard with held-out releases
    /// exactly once) and print the test's result: the same bytes as `audit test` on one machine.
    #[arg(long, value_name = "COUNTS", num_args = 1.., requires = "plan")]
    pub reduce: Vec<PathBuf>,
    /// Where the report goes (as for `audit run`).
    #[command(flatten)]
    pub report: ReportArgs,
}

impl From<&TestArgs> for TestOptions {
    fn from(a: &TestArgs) -> Self {
        TestOptions {
            samples_a: a.samples_a.clone(),
            samples_b: a.samples_b.clone(),
            stream: a.stream,
            in_memory: a.in_memory,
            max_train_rows: a.max_train_rows,
            claim: a.claim.clone(),
            seed: a.seed,
            failure_probability: a.failure_probability,
            tester: a.tester.clone(),
            transform: a.transform.clone(),
            check: a.check.clone(),
            sequential: a.sequential,
            max_samples: a.max_samples,
            first_batch: a.first_batch,
            bdp_definition: a.bdp_definition.clone(),
            plan_out: a.plan_out.clone(),
            plan: a.plan.clone(),
            count_shard: a.count_shard.clone(),
            reduce: a.reduce.clone(),
            output: a.report.output(a.json),
        }
    }
}

/// `audit test`: the test on `--jobs` threads (all cores by default).
pub(super) fn test_samples(a: &TestArgs) -> Result<Outcome> {
    let opts = TestOptions::from(a);
    // The test runs inside a pool of its own, with or without `--jobs` (rayon's default size
    // without: RAYON_NUM_THREADS, else every core): each parallel step then starts on a worker.
    // Run from this thread, every step is handed over to the global pool and waited for, which
    // measured 20 % slower at 10^6 releases per side (124 against 102 ms, 2 cores).
    let mut pool = rayon::ThreadPoolBuilder::new();
    if let Some(j) = a.jobs {
        super::run::check_count("--jobs", j, 1, super::run::max_jobs())?;
        pool = pool.num_threads(j);
    }
    let out = pool
        .build()
        .map_err(|e| match a.jobs {
            Some(j) => Error::InvalidConfig(format!("--jobs {j}: {e}")),
            None => Error::InvalidConfig(format!("cannot start the test's threads: {e}")),
        })?
        .install(|| crate::modes::test::test(&opts));
    crate::stages::write();
    out
}
