//! `audit sample`: one shard of releases, for fanning sampling out over any engine.
//!
//! # Seeds
//! Shard `I` of side `s` (a = 0, b = 1) of a run with seed `S` draws from the shard seed
//! `S_I,s = Seed(S).child(SAMPLE_TAG, 2·I + s)`: the first word of the ChaCha20 stream
//! `Other { tag: SAMPLE_TAG, index: 2·I + s }` of `S` (see [`crate::rng::Seed::child`]), so every
//! (run seed, shard index, side) has its own seed and the shards of a run never share
//! randomness. Within the shard, block `k` of [`BLOCK`] releases is drawn by
//! [`crate::rng::sample_parallel`] from `Seed(S_I,s)` on the streams
//! `Confirm { trial: k, side, chunk: c }` (an exec program gets a seed derived from them for each
//! request). The shard seed is recorded in the shard (binary header, or the `.meta.json`
//! sidecar of a text shard), and `audit test` refuses two shards with the same one.

use std::path::PathBuf;

use clap::Args;

use super::Outcome;
use crate::error::{Error, Result};
use crate::mechanisms::{Dataset, Mechanism, Neighboring, Params, PrivacyClaim, catalogue};
use crate::rng::{Seed, Side, Stream, sample_parallel};
use crate::sources::shards::{Provenance, ShardSide, ShardWriter};

/// `Other` stream tag of shard seeds ("SAMPLE" in ASCII).
pub const SAMPLE_TAG: u64 = 0x53_41_4D_50_4C_45;
/// Releases drawn (and held in memory) at a time.
pub const BLOCK: usize = 1 << 20;

/// Options of `audit sample`.
#[derive(Debug, Args)]
pub struct SampleArgs {
    /// Catalogue id of the mechanism (see `audit list`).
    #[arg(long, required_unless_present = "exec", conflicts_with = "exec")]
    pub mechanism: Option<String>,
    /// Mechanism parameter NAME=VALUE (repeatable), e.g. --param epsilon=0.5.
    #[arg(long = "param", value_name = "NAME=VALUE")]
    pub params: Vec<String>,
    /// An external program speaking the exec protocol (needs --data).
    #[arg(long, value_name = "COMMAND")]
    pub exec: Option<String>,
    /// Time-out and batch size of the exec program.
    #[command(flatten)]
    pub limits: super::run::ExecLimits,
    /// Which side the shard is: a (releases on D, for --samples-a) or b (on D'). With a
    /// catalogue entry and no --data, the dataset is that side of the entry's witness pair.
    #[arg(long, value_name = "a|b")]
    pub side: String,
    /// The dataset (one record per line, a JSON number or array; `#` lines skipped) instead of
    /// the witness side; required with --exec.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
    /// A Bayesian DP shard: the data distribution μ (one record per line). Every line of the
    /// shard is then a pair {"x": [...], "w": [...]}: x' drawn from μ and a release w of M(D)
    /// (side a) or of M(D with x') (side b), D the catalogue witness's smaller dataset or the
    /// --data file (required with --exec). Tested by `audit test --claim bdp:EPS:DELTA`.
    #[arg(long, value_name = "FILE")]
    pub bdp_data: Option<PathBuf>,
    /// With --bdp-data: draw D from μ too, fresh for every release, with as many records as
    /// the fixed D (one mechanism call per release).
    #[arg(long, requires = "bdp_data")]
    pub draw_dataset: bool,
    /// Releases in the shard.
    #[arg(allow_hyphen_values = true, value_parser = super::parse_count, long)]
    pub samples: usize,
    /// The run's seed, the same for every shard of a run.
    #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
    pub seed: u64,
    /// This shard's index (0, 1, …; e.g. $SLURM_ARRAY_TASK_ID): the shard seed is derived from
    /// the run's seed, the index and the side.
    #[arg(allow_hyphen_values = true, long)]
    pub shard_index: u64,
    /// The shard file: .bin (binary), .gz, .zst or JSON lines (any other name). An existing
    /// file is not overwritten (a re-run job array would clobber its shards) unless --force.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Overwrite --out if it exists (never the --data file).
    #[arg(long)]
    pub force: bool,
    /// Worker threads (and exec processes at once); default: all cores.
    #[arg(allow_hyphen_values = true, long)]
    pub jobs: Option<usize>,
}

/// The seed of shard `index` of `side` in a run seeded `seed` (see the module docs).
pub fn shard_seed(seed: u64, index: u64, side: ShardSide) -> Result<u64> {
    let slot = index
        .checked_mul(2)
        .and_then(|i| i.checked_add(side.index()))
        .ok_or_else(|| {
            Error::InvalidConfig(format!(
                "--shard-index {index}; allowed: 0 to {}",
                u64::MAX / 2 - 1
            ))
        })?;
    Ok(Seed(seed).child(SAMPLE_TAG, slot).0)
}

pub(super) fn sample(a: &SampleArgs) -> Result<Outcome> {
    match a.jobs {
        None => sample_inner(a),
        Some(j) if j == 0 || j > 4 * super::run::max_jobs() => Err(Error::InvalidConfig(format!(
            "--jobs {j}; allowed: 1 to {}",
            4 * super::run::max_jobs()
        ))),
        Some(j) => rayon::ThreadPoolBuilder::new()
            .num_threads(j)
            .build()
            .map_err(|e| Error::InvalidConfig(format!("--jobs {j}: {e}")))?
            .install(|| sample_inner(a)),
    }
}

fn sample_inner(a: &SampleArgs) -> Result<Outcome> {
    let side = match a.side.as_str() {
        "a" => ShardSide::A,
        "b" => ShardSide::B,
        other => {
            return Err(Error::InvalidConfig(format!(
                "--side {other:?}; allowed: a or b"
            )));
        }
    };
    if a.samples == 0 || a.samples > 1 << 40 {
        return Err(Error::InvalidConfig(format!(
            "--samples {}; allowed: 1 to 2^40",
            a.samples
        )));
    }
    a.limits.check(a.exec.is_some())?;
    // The output must not be the input data, and an existing shard is kept unless --force.
    let same_file = |p: &std::path::Path| {
        let canon = |q: &std::path::Path| std::fs::canonicalize(q).ok();
        canon(p).is_some() && canon(p) == canon(&a.out)
    };
    if let Some(data) = a.data.as_deref()
        && same_file(data)
    {
        return Err(Error::InvalidConfig(format!(
            "--out {} is the --data file: writing the shard would destroy the dataset; allowed: another --out path",
            a.out.display()
        )));
    }
    if a.out.exists() && !a.force {
        return Err(Error::InvalidConfig(format!(
            "--out {} exists: not overwritten (a re-run would replace a shard drawn before); allowed: a new path, or --force to replace it",
            a.out.display()
        )));
    }
    if let Some(mu) = &a.bdp_data {
        if same_file(mu) {
            return Err(Error::InvalidConfig(format!(
                "--out {} is the --bdp-data file: writing the shard would destroy the data; allowed: another --out path",
                a.out.display()
            )));
        }
        return sample_bayesian(a, side, mu);
    }
    let (mechanism, dataset) = target(a, side)?;
    let seed = shard_seed(a.seed, a.shard_index, side)?;
    let provenance = Provenance {
        side,
        seed,
        shard_index: a.shard_index,
    };
    let dim = mechanism.output_dim();
    let rng_side = match side {
        ShardSide::A => Side::First,
        ShardSide::B => Side::Second,
    };
    let mut writer = ShardWriter::create(&a.out, dim, a.samples, Some(provenance))?;
    let mut done = 0usize;
    let mut block = 0u64;
    while done < a.samples {
        let n = (a.samples - done).min(BLOCK);
        let s = sample_parallel(
            &*mechanism,
            &dataset,
            n,
            Seed(seed),
            Stream::Confirm {
                trial: block,
                side: rng_side,
                chunk: 0,
            },
        )?;
        writer.append(&s)?;
        done += n;
        block += 1;
    }
    writer.finish()?;
    Ok(Outcome::new(
        format!(
            "{}: {} releases of dimension {dim} of {} on side {} (shard {} of run seed {}, shard seed {seed})\n",
            a.out.display(),
            a.samples,
            mechanism.id(),
            a.side,
            a.shard_index,
            a.seed
        ),
        0,
    ))
}

/// The dimension of the first record of a data file's text (1 for a number or an unreadable
/// line: the file's own parse names what is wrong with it).
fn first_record_dim(text: &str) -> usize {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|v| v.as_array().map_or(1, Vec::len))
        .unwrap_or(1)
        .max(1)
}

/// The mechanism and the dataset of the shard.
fn target(a: &SampleArgs, side: ShardSide) -> Result<(Box<dyn Mechanism>, Dataset)> {
    if let Some(command) = &a.exec {
        let path = a.data.as_ref().ok_or_else(|| {
            Error::InvalidConfig("--exec needs --data FILE (the dataset of this side)".into())
        })?;
        // The record dimension is the data file's: its first record is read for it, then the
        // whole file is checked against that domain (any finite values).
        let text = crate::sources::text::read_text(path)
            .map_err(|e| Error::InvalidConfig(format!("--data {}: {e}", path.display())))?;
        let dim = first_record_dim(&text);
        let domain = crate::sources::exec::ExecMechanism::domain(-f64::MAX, f64::MAX, dim);
        let dataset =
            crate::audit::bayesian::parse_data(&text, &path.display().to_string(), &domain)?;
        let timeout = a.limits.timeout()?;
        // Sampling reads no claim; the exec mechanism needs one to exist.
        let claim = PrivacyClaim::Pure { epsilon: 1.0 };
        let m = crate::sources::exec::ExecMechanism::new(
            command,
            claim,
            Neighboring::AddRemove,
            domain,
            timeout,
            &dataset,
        )?
        .with_batch_size(a.limits.batch())?;
        return Ok((Box::new(m), dataset));
    }
    let id = a.mechanism.as_deref().unwrap_or_default();
    let entry = catalogue::build(id, &Params::parse(&a.params)?)?;
    let dataset = match &a.data {
        Some(path) => crate::audit::bayesian::read_data(path, &entry.mechanism.domain())?,
        None => match side {
            ShardSide::A => entry.witness.first().clone(),
            ShardSide::B => entry.witness.second().clone(),
        },
    };
    Ok((entry.mechanism, dataset))
}

/// A Bayesian DP shard (`--bdp-data`): n pairs (x', w) of side a (Q̃) or b (P̃), drawn as
/// `audit run` draws them ([`crate::audit::bayesian::draw_side`]) from the shard seed.
fn sample_bayesian(a: &SampleArgs, side: ShardSide, mu_path: &std::path::Path) -> Result<Outcome> {
    use crate::audit::bayesian::{JointSide, check_inputs, draw_side, read_data};
    if a.samples > crate::audit::MAX_SAMPLES_PER_SIDE {
        return Err(Error::InvalidConfig(format!(
            "--samples {} with --bdp-data; allowed: 1 to {} (a Bayesian shard is drawn in memory; write more shards)",
            a.samples,
            crate::audit::MAX_SAMPLES_PER_SIDE
        )));
    }
    let (mechanism, base, mu): (Box<dyn Mechanism>, Dataset, Dataset) = if let Some(command) =
        &a.exec
    {
        let path = a.data.as_ref().ok_or_else(|| {
                Error::InvalidConfig(
                    "--exec --bdp-data needs --data FILE: the fixed rest of the dataset D (one record per line; an empty file for D = ∅)".into(),
                )
            })?;
        // The record dimension is μ's (its first record); any finite values.
        let text = crate::sources::text::read_text(mu_path)
            .map_err(|e| Error::InvalidConfig(format!("--bdp-data {}: {e}", mu_path.display())))?;
        let dim = first_record_dim(&text);
        let domain = crate::sources::exec::ExecMechanism::domain(-f64::MAX, f64::MAX, dim);
        let mu =
            crate::audit::bayesian::parse_data(&text, &mu_path.display().to_string(), &domain)?;
        let base_text = crate::sources::text::read_text(path)
            .map_err(|e| Error::InvalidConfig(format!("--data {}: {e}", path.display())))?;
        let empty = base_text
            .lines()
            .all(|l| l.trim().is_empty() || l.trim().starts_with('#'));
        let base = if empty {
            Dataset::empty(dim)?
        } else {
            crate::audit::bayesian::parse_data(&base_text, &path.display().to_string(), &domain)?
        };
        let claim = PrivacyClaim::Pure { epsilon: 1.0 };
        let probe = base.with_record(&mu.record(0).to_vec())?;
        let m = crate::sources::exec::ExecMechanism::new(
            command,
            claim,
            Neighboring::AddRemove,
            domain,
            a.limits.timeout()?,
            &probe,
        )?
        .with_batch_size(a.limits.batch())?;
        (Box::new(m), base, mu)
    } else {
        let id = a.mechanism.as_deref().unwrap_or_default();
        let entry = catalogue::build(id, &Params::parse(&a.params)?)?;
        let domain = entry.mechanism.domain();
        let base = match &a.data {
            Some(path) => read_data(path, &domain)?,
            None => {
                let (f, s) = (entry.witness.first(), entry.witness.second());
                if f.len() <= s.len() {
                    f.clone()
                } else {
                    s.clone()
                }
            }
        };
        let mu = read_data(mu_path, &domain)?;
        (entry.mechanism, base, mu)
    };
    check_inputs(&*mechanism, &base, &mu)?;
    let seed = shard_seed(a.seed, a.shard_index, side)?;
    let joint = match side {
        ShardSide::A => JointSide::Q,
        ShardSide::B => JointSide::P,
    };
    let d = draw_side(
        &*mechanism,
        &base,
        &mu,
        a.samples,
        Seed(seed),
        joint,
        a.draw_dataset,
    )?;
    let meta = crate::sources::bayesian_shards::BayesianSidecar {
        version: crate::sources::bayesian_shards::VERSION,
        kind: "bayesian".into(),
        dim: d.w.dim(),
        record_dim: d.x.dim(),
        count: a.samples,
        provenance: Provenance {
            side,
            seed,
            shard_index: a.shard_index,
        },
        data_source: mu_path.display().to_string(),
        records: mu.len(),
        distinct_records: crate::audit::bayesian::distinct_rows(&mu),
        base,
        dataset_drawn: a.draw_dataset,
    };
    crate::sources::bayesian_shards::write(&a.out, &d.x, &d.w, &meta)?;
    Ok(Outcome::new(
        format!(
            "{}: {} pairs (x', w) of {} on side {} ({}; shard {} of run seed {}, shard seed {seed})\n",
            a.out.display(),
            a.samples,
            mechanism.id(),
            a.side,
            match side {
                ShardSide::A => "x' ~ μ with a release of M(D)",
                ShardSide::B => "x' ~ μ with a release of M(D with x')",
            },
            a.shard_index,
            a.seed
        ),
        0,
    ))
}
