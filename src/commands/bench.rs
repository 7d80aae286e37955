//! `audit bench power|speed|seeds`: the options and their validation; the benchmarks themselves
//! are library code in [`crate::bench`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Outcome, ReportArgs, announce_report, to_json};
use crate::bench::{
    POWER_SCALES, power, power_reports, render_power, render_seeds, render_speed, seeds, speed,
};
use crate::error::{Error, Result};
use crate::mechanisms::{Params, catalogue};
use crate::testers;

/// Options of `audit bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub which: BenchKind,
}

/// Options of `audit bench floor`.
#[derive(Debug, clap::Args)]
pub struct FloorFlags {
    /// Folder of the shards N.a.jsonl, N.b.jsonl, N.a.bin, N.b.bin (written with `audit
    /// sample --mechanism laplace-sum` when missing).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Releases per side, comma-separated.
    #[arg(long, default_value = "1000,10000,100000,1000000,10000000")]
    pub samples: String,
    /// Shard formats, comma-separated: jsonl, bin.
    #[arg(long, default_value = "jsonl,bin")]
    pub formats: String,
    /// Thread counts, comma-separated.
    #[arg(long, default_value = "1,2")]
    pub threads: String,
    /// Timed runs of each figure (the median is reported).
    #[arg(allow_hyphen_values = true, long, default_value_t = 5)]
    pub repeats: u64,
    /// Sizes whose per-stage profile is printed (1 thread, both layers), comma-separated;
    /// "none" for none.
    #[arg(long, default_value = "1000000")]
    pub profile: String,
    /// The `audit` executable timed as `audit test` (e.g. an earlier build, for a
    /// before-and-after table; its profile is empty unless it writes one); default: this one.
    #[arg(long, value_name = "PATH")]
    pub audit: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Internal: read and parse these two shards (A,B) once on the first of --threads and
    /// exit; the benchmark times it as a whole process (the floor as a fresh process).
    #[arg(long, hide = true, value_name = "A,B")]
    pub read_once: Option<String>,
}

/// The benchmarks.
#[derive(Debug, clap::Subcommand)]
pub enum BenchKind {
    /// Detections on the scaled-noise Gaussian (STATISTICS.md §3) per noise scale, n and tester.
    Power {
        /// Samples per side, comma-separated.
        #[arg(long, default_value = "10000,100000")]
        samples: String,
        /// Testers, comma-separated, or "all".
        #[arg(long, default_value = "all")]
        tester: String,
        /// Audits per cell.
        #[arg(allow_hyphen_values = true, long, default_value_t = 10)]
        repeats: u64,
        /// β of each audit.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0.05)]
        failure_probability: f64,
        /// Seed.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Reports: one sweep report over noise_scale per (claim, samples), detections against
        /// the noise scale, one line per tester.
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Wall time per tester call (both directions, 1-D outputs) against drawing the samples.
    /// Prints text or JSON only; writes no report.
    Speed {
        /// Samples per side, comma-separated.
        #[arg(long, default_value = "10000,100000")]
        samples: String,
        /// Testers, comma-separated, or "all".
        #[arg(long, default_value = "all")]
        tester: String,
        /// Timed repetitions (the median is reported).
        #[arg(allow_hyphen_values = true, long, default_value_t = 5)]
        repeats: u64,
        /// Seed.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// `audit test` beside its floor (reading and parsing both sides' files alone) at each size,
    /// format and thread count, both layers and each layer; and the per-stage profile of
    /// `audit test` at 1 thread. Prints text or JSON only; writes no report.
    Floor(FloorFlags),
    /// The real-world suite: every case of tests/suite/cases.json (programs re-implementing
    /// published DP bugs, and correct ones) through `audit run --exec` with the data description
    /// and the claim only; prints a table and `suite: caught B/NB buggy, flagged F/NC correct`.
    Suite {
        /// The manifest.
        #[arg(long, default_value = "tests/suite/cases.json", value_name = "FILE")]
        cases: PathBuf,
        /// Releases per side of each audit.
        #[arg(allow_hyphen_values = true, long, default_value_t = 100_000)]
        samples: usize,
        /// Seed of each audit.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Only these case ids (comma-separated).
        #[arg(long)]
        only: Option<String>,
        /// Flags appended to every `audit run` (to measure a change), e.g. "--budget 30s".
        #[arg(long, allow_hyphen_values = true)]
        extra: Option<String>,
        /// Print JSON rows instead.
        #[arg(long)]
        json: bool,
    },
    /// Does the default program audit keep to its budget and its plan? Runs `audit run --exec`
    /// with default flags and `--budget` on a clamped mean at start-ups of 0 to 3 s and 20 µs
    /// to 5 ms per release (CPU time, as imports and library calls spend it; correct programs,
    /// and the buggy one at the slowest setting), optionally with `--load K` busy processes,
    /// and prints per run the trials planned and run, pairs scored, the seconds against the
    /// budget, why the search stopped, the exit code and PASS/FAIL (seconds ≤ 1.1 × budget + 5,
    /// trials run ≥ 0.8 × planned or a violation found, exit as expected).
    Pacing {
        /// The time budget of each run, seconds.
        #[arg(allow_hyphen_values = true, long, default_value_t = 60.0)]
        budget: f64,
        /// Seed of each run.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Only these case ids (comma-separated): s0-20us, s0-1ms, s0.5-20us, s0.5-5ms, s1-1ms,
        /// s3-20us, s3-5ms, s3-5ms-bug.
        #[arg(long)]
        only: Option<String>,
        /// Busy processes (CPU spinning loops, each in its own process group) running for the
        /// whole benchmark: 0 to 64.
        #[arg(
            long,
            default_value = "0",
            allow_hyphen_values = true,
            value_name = "K"
        )]
        load: String,
        /// Flags appended to every `audit run`, e.g. "--jobs 1".
        #[arg(long, allow_hyphen_values = true)]
        extra: Option<String>,
        /// Print JSON rows instead.
        #[arg(long)]
        json: bool,
    },
    /// Is the engine's speed probe right on a busy machine? Probes a program told to spend a
    /// known time per release (`--cost-us`, 1 ms by default, asleep by default) `--repeats`
    /// times with `--load K` busy processes (2 by default) and prints each measured price per
    /// release beside the told one and the one the program measured itself, and how many are
    /// within 2× of the told one (the criterion: all of them).
    Probe {
        /// Probes.
        #[arg(allow_hyphen_values = true, long, default_value_t = 20)]
        repeats: u64,
        /// The program's cost per release, µs.
        #[arg(allow_hyphen_values = true, long, default_value_t = 1000.0)]
        cost_us: f64,
        /// How the program spends it: sleep (takes that long whatever the load), wall
        /// (busy-waits that much wall time: overruns when descheduled), cpu (that much CPU time).
        #[arg(long, default_value = "sleep")]
        clock: String,
        /// Busy processes running during the probes: 0 to 64.
        #[arg(
            long,
            default_value = "2",
            allow_hyphen_values = true,
            value_name = "K"
        )]
        load: String,
        /// The time limit given to each probe, seconds (5 % of the default 60 s budget, as
        /// `audit run` gives it).
        #[arg(allow_hyphen_values = true, long, default_value_t = 3.0)]
        max_seconds: f64,
        /// Records of the probed dataset.
        #[arg(allow_hyphen_values = true, long, default_value_t = 10)]
        dataset_size: usize,
        /// Seed of the first probe (the k-th uses seed + k).
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Print JSON rows instead.
        #[arg(long)]
        json: bool,
    },
    /// The slow-program suite (examples/exec/slow/cases.json): stand-ins for DP-library
    /// pipelines (0.5–3 s start-up, 1–6 ms per release, bugs only structured datasets show,
    /// each with a correct twin) through `audit run --exec` with default flags and `--budget`,
    /// optionally under `--load K`; prints caught/passed against the expected answer and the
    /// time against the budget. Run from the repository root.
    Slow {
        /// The manifest (the format of tests/suite/cases.json).
        #[arg(
            long,
            default_value = "examples/exec/slow/cases.json",
            value_name = "FILE"
        )]
        cases: PathBuf,
        /// The time budget of each run, seconds.
        #[arg(allow_hyphen_values = true, long, default_value_t = 60.0)]
        budget: f64,
        /// Seed of each run.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Only these case ids (comma-separated).
        #[arg(long)]
        only: Option<String>,
        /// Busy processes running for the whole benchmark: 0 to 64.
        #[arg(
            long,
            default_value = "0",
            allow_hyphen_values = true,
            value_name = "K"
        )]
        load: String,
        /// Flags appended to every `audit run`, e.g. "--jobs 1".
        #[arg(long, allow_hyphen_values = true)]
        extra: Option<String>,
        /// Print JSON rows instead.
        #[arg(long)]
        json: bool,
    },
    /// The DP-Auditorium post's experiment over the whole catalogue: every entry × tester × ε
    /// on the entry's witness pair, `--repeats` audits per cell; prints the detection table and
    /// writes it as a report (a page and a heat map).
    Table {
        /// ε values for entries with an `epsilon` parameter, comma-separated (values outside an
        /// entry's range are skipped; entries without one run at their defaults).
        #[arg(long, default_value = "0.1,1,10")]
        epsilons: String,
        /// Testers, comma-separated, or "all".
        #[arg(long, default_value = "all")]
        tester: String,
        /// Audits per cell.
        #[arg(allow_hyphen_values = true, long, default_value_t = 10)]
        repeats: u64,
        /// Samples per side per audit.
        #[arg(allow_hyphen_values = true, long, default_value_t = 20_000, value_parser = super::parse_count)]
        samples: usize,
        /// β of each audit.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0.05)]
        failure_probability: f64,
        /// Only these catalogue ids (comma-separated); every entry otherwise.
        #[arg(long)]
        only: Option<String>,
        /// Seed.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Print the table as JSON (the report's schema, without the wall time).
        #[arg(long)]
        json: bool,
        /// Where the report goes.
        #[command(flatten)]
        report: ReportArgs,
    },
    /// The ε-estimate stage on witness pairs whose true ε is known (Laplace, randomized
    /// response, the analytic Gaussian at three δ), beside the true ε. Prints text or JSON only;
    /// writes no report.
    Epsilon {
        /// Releases per side, comma-separated (e.g. 1e6,1e7).
        #[arg(long, default_value = "100000,1000000")]
        samples: String,
        /// Estimates per case and size (different seeds).
        #[arg(allow_hyphen_values = true, long, default_value_t = 5)]
        repeats: u64,
        /// The audit's β; the estimate spends its share (0.1 of it).
        #[arg(allow_hyphen_values = true, long, default_value_t = 0.05)]
        failure_probability: f64,
        /// Root seed.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Print the rows as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Certified Gaussian-DP curves: a lower confidence bound on μ (its own event search on 20 %
    /// of each side, Clopper–Pearson bounds on the rest, at β) for N(0, 1) against N(μ, 1),
    /// beside μ. Prints text or JSON only; writes no report.
    Gdp {
        /// The pairs' μ, comma-separated.
        #[arg(
            long,
            default_value = "0.5,1,2",
            value_name = "MU,...",
            allow_hyphen_values = true
        )]
        mu: String,
        /// Releases per side, comma-separated.
        #[arg(long, default_value = "100000")]
        samples: String,
        /// Estimates per μ and size (different seeds).
        #[arg(allow_hyphen_values = true, long, default_value_t = 20)]
        repeats: u64,
        /// β of each estimate.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0.05)]
        failure_probability: f64,
        /// Root seed.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Print the rows as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The layer census: every correct catalogue entry on its witness, the mechanism and the
    /// floating-point layer (the gate's two-layer audit, hockey-stick tester), beside what the
    /// catalogue declares about its floating-point code. Prints the markdown table of
    /// docs/catalogue.md, or JSON; writes no report.
    Layers {
        /// Releases per side per entry.
        #[arg(allow_hyphen_values = true, long, default_value_t = 1_000_000)]
        samples: usize,
        /// β of each entry's audit, split over its two layers.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0.001)]
        failure_probability: f64,
        /// Only these correct catalogue ids (comma-separated); every correct entry otherwise.
        #[arg(long)]
        only: Option<String>,
        /// Seed.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Every tester on every correct catalogue entry over many seeds: rejection rate beside β.
    /// Prints text or JSON only; writes no report.
    Seeds {
        /// Seeds per (entry, tester).
        #[arg(allow_hyphen_values = true, long, default_value_t = 200)]
        seeds: u64,
        /// Samples per side per audit.
        #[arg(allow_hyphen_values = true, long, default_value_t = 20_000)]
        samples: usize,
        /// β of each audit.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0.05)]
        failure_probability: f64,
        /// Testers, comma-separated, or "all".
        #[arg(long, default_value = "all")]
        tester: String,
        /// Only these correct catalogue ids (comma-separated); every correct entry otherwise.
        /// Each entry keeps the seeds it has in the full sweep.
        #[arg(long)]
        only: Option<String>,
        /// Seed.
        #[arg(allow_hyphen_values = true, long, default_value_t = 0)]
        seed: u64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
}

fn parse_sizes(spec: &str) -> Result<Vec<usize>> {
    parse_sizes_of("--samples", spec)
}

/// [`parse_sizes`] of the flag `flag` (named in its errors).
fn parse_sizes_of(flag: &str, spec: &str) -> Result<Vec<usize>> {
    spec.split(',')
        .map(|t| {
            let t = t.trim();
            let v: f64 = t.parse().map_err(|_| {
                Error::InvalidConfig(format!(
                    "{flag} {t:?}; allowed: comma-separated sample counts, e.g. 10000,1e5"
                ))
            })?;
            if !((20.0..=1e8).contains(&v) && v.fract() == 0.0) {
                return Err(Error::InvalidConfig(format!(
                    "{flag} {t}; allowed: whole numbers from 20 to 1e8"
                )));
            }
            Ok(v as usize)
        })
        .collect()
}

/// `--repeats` / `--seeds`: 1 to 100000 (the same check as every count flag).
fn check_repeats(flag: &str, r: u64) -> Result<()> {
    super::run::check_count(flag, usize::try_from(r).unwrap_or(usize::MAX), 1, 100_000)
}

/// `--only a,b`: catalogue ids, each checked (an unknown id is an error naming the closest).
fn only_ids(only: &Option<String>) -> Result<Option<Vec<String>>> {
    let Some(list) = only else { return Ok(None) };
    let ids: Vec<String> = list
        .split(',')
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    if ids.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "--only {list:?}; allowed: comma-separated catalogue ids (`audit list`)"
        )));
    }
    for id in &ids {
        catalogue::describe(id)?;
    }
    Ok(Some(ids))
}

/// `--epsilons 0.1,1,10`: each a finite number > 0.
fn parse_epsilons(spec: &str) -> Result<Vec<f64>> {
    spec.split(',')
        .map(|t| {
            let t = t.trim();
            match t.parse::<f64>() {
                Ok(v) if v.is_finite() && v > 0.0 && v <= 1e3 => Ok(v),
                _ => Err(Error::InvalidConfig(format!(
                    "--epsilons {t:?}; allowed: comma-separated numbers in (0, 1000], e.g. 0.1,1,10"
                ))),
            }
        })
        .collect()
}

fn tester_names(spec: &str) -> Result<Vec<String>> {
    Ok(testers::parse_list(spec)?
        .iter()
        .map(|t| t.name().to_string())
        .collect())
}

/// `--extra "FLAGS"`: split like a shell would.
fn split_extra(extra: &Option<String>) -> Result<Vec<String>> {
    match extra {
        Some(e) => shlex::split(e)
            .ok_or_else(|| Error::InvalidConfig(format!("--extra {e}: unbalanced quotes"))),
        None => Ok(Vec::new()),
    }
}

/// `audit bench …`: one function per benchmark, each checking its own flags.
pub fn run_cli(a: &BenchArgs) -> Result<Outcome> {
    let stdout = match &a.which {
        BenchKind::Power {
            samples,
            tester,
            repeats,
            failure_probability,
            seed,
            json,
            report,
        } => bench_power(
            samples,
            tester,
            *repeats,
            *failure_probability,
            *seed,
            *json,
            report,
        )?,
        BenchKind::Epsilon {
            samples,
            repeats,
            failure_probability,
            seed,
            json,
        } => bench_epsilon(samples, *repeats, *failure_probability, *seed, *json)?,
        BenchKind::Gdp {
            mu,
            samples,
            repeats,
            failure_probability,
            seed,
            json,
        } => bench_gdp(mu, samples, *repeats, *failure_probability, *seed, *json)?,
        BenchKind::Speed {
            samples,
            tester,
            repeats,
            seed,
            json,
        } => bench_speed(samples, tester, *repeats, *seed, *json)?,
        BenchKind::Suite {
            cases,
            samples,
            seed,
            only,
            extra,
            json,
        } => bench_suite(cases, *samples, *seed, only, extra, *json)?,
        BenchKind::Floor(f) => bench_floor(f)?,
        BenchKind::Pacing {
            budget,
            seed,
            only,
            load,
            extra,
            json,
        } => bench_pacing(*budget, *seed, only, load, extra, *json)?,
        BenchKind::Probe {
            repeats,
            cost_us,
            clock,
            load,
            max_seconds,
            dataset_size,
            seed,
            json,
        } => bench_probe(
            *repeats,
            *cost_us,
            clock,
            load,
            *max_seconds,
            *dataset_size,
            *seed,
            *json,
        )?,
        BenchKind::Slow {
            cases,
            budget,
            seed,
            only,
            load,
            extra,
            json,
        } => bench_slow(cases, *budget, *seed, only, load, extra, *json)?,
        BenchKind::Table {
            epsilons,
            tester,
            repeats,
            samples,
            failure_probability,
            only,
            seed,
            json,
            report,
        } => {
            return bench_table(
                epsilons,
                tester,
                *repeats,
                *samples,
                *failure_probability,
                only,
                *seed,
                *json,
                report,
            );
        }
        BenchKind::Layers {
            samples,
            failure_probability,
            only,
            seed,
            json,
            quiet,
        } => bench_layers(*samples, *failure_probability, only, *seed, *json, *quiet)?,
        BenchKind::Seeds {
            seeds: n_seeds,
            samples,
            failure_probability,
            tester,
            only,
            seed,
            json,
            quiet,
        } => bench_seeds(
            *n_seeds,
            *samples,
            *failure_probability,
            tester,
            only,
            *seed,
            *json,
            *quiet,
        )?,
    };
    Ok(Outcome::new(stdout, 0))
}

/// `audit bench floor`: the flags checked, then [`super::floor::bench_floor`].
fn bench_floor(f: &FloorFlags) -> Result<String> {
    let FloorFlags {
        dir,
        samples,
        formats,
        threads,
        repeats,
        profile,
        audit,
        json,
        read_once,
    } = f;
    let (repeats, audit, json) = (*repeats, audit.as_deref(), *json);
    check_repeats("--repeats", repeats)?;
    let formats: Vec<String> = formats.split(',').map(|f| f.trim().to_string()).collect();
    if let Some(bad) = formats
        .iter()
        .find(|f| !matches!(f.as_str(), "jsonl" | "bin"))
    {
        return Err(Error::InvalidConfig(format!(
            "--formats {bad:?}; allowed: jsonl, bin (comma-separated)"
        )));
    }
    let threads = threads
        .split(',')
        .map(|t| {
            let t = t.trim();
            let j: usize = t.parse().map_err(|_| {
                Error::InvalidConfig(format!(
                    "--threads {t:?}; allowed: comma-separated thread counts, e.g. 1,2"
                ))
            })?;
            super::run::check_count("--threads", j, 1, super::run::max_jobs())?;
            Ok(j)
        })
        .collect::<Result<Vec<usize>>>()?;
    if let Some(pair) = read_once {
        return super::floor::read_once(pair, threads[0]);
    }
    let profile = if profile.trim() == "none" {
        Vec::new()
    } else {
        parse_sizes_of("--profile", profile)?
    };
    super::floor::bench_floor(&super::floor::FloorArgs {
        dir,
        sizes: parse_sizes(samples)?,
        formats,
        threads,
        repeats,
        profile,
        json,
        audit,
    })
}

/// `audit bench power`: detections per noise scale, n and tester, and one sweep report per
/// (claim, samples).
fn bench_power(
    samples: &str,
    tester: &str,
    repeats: u64,
    failure_probability: f64,
    seed: u64,
    json: bool,
    report: &ReportArgs,
) -> Result<String> {
    let sizes = parse_sizes(samples)?;
    let names = tester_names(tester)?;
    super::run::check_beta(failure_probability)?;
    check_repeats("--repeats", repeats)?;
    if !report.no_report {
        crate::report::prepare_report_dir(&report.report_dir)?;
    }
    let start = Instant::now();
    let total = 2 * sizes.len() * names.len() * POWER_SCALES.len();
    let bar =
        crate::report::progress::bar(total as u64 * repeats, report.quiet || json, "bench power");
    let rows = power(&sizes, &names, repeats, failure_probability, seed, &|| {
        bar.inc(1)
    })?;
    bar.finish_and_clear();
    let mut written = Vec::new();
    if !report.no_report {
        let wall = Some(start.elapsed().as_secs_f64());
        for sweep in power_reports(&rows, failure_probability, seed, wall)? {
            written.push(crate::report::write_sweep_report(
                &report.report_dir,
                &sweep,
            )?);
        }
    }
    let mut out = if json {
        to_json(&rows)?
    } else {
        render_power(&rows, failure_probability)
    };
    for index in &written {
        announce_report(index, json, report.quiet, &mut out);
    }
    Ok(out)
}

/// `audit bench epsilon`: the ε-estimate stage beside the true ε.
fn bench_epsilon(
    samples: &str,
    repeats: u64,
    failure_probability: f64,
    seed: u64,
    json: bool,
) -> Result<String> {
    let sizes = parse_sizes(samples)?;
    super::run::check_beta(failure_probability)?;
    check_repeats("--repeats", repeats)?;
    let rows = crate::bench::epsilon_estimates(&sizes, repeats, failure_probability, seed)?;
    if json {
        to_json(&rows)
    } else {
        Ok(crate::bench::render_epsilon(&rows, failure_probability))
    }
}

/// `--mu 0.5,1,2`: comma-separated numbers.
fn parse_mus(mu: &str) -> Result<Vec<f64>> {
    mu.split(',')
        .map(|m| {
            m.trim().parse::<f64>().map_err(|_| {
                Error::InvalidConfig(format!(
                    "--mu {mu:?}: {m:?} is not a number; allowed: comma-separated positive numbers, e.g. 0.5,1,2"
                ))
            })
        })
        .collect()
}

/// `audit bench gdp`: certified lower bounds on μ beside μ.
fn bench_gdp(
    mu: &str,
    samples: &str,
    repeats: u64,
    failure_probability: f64,
    seed: u64,
    json: bool,
) -> Result<String> {
    let mus = parse_mus(mu)?;
    let sizes = parse_sizes(samples)?;
    super::run::check_beta(failure_probability)?;
    check_repeats("--repeats", repeats)?;
    let rows = crate::bench::mu_estimates(&mus, &sizes, repeats, failure_probability, seed)?;
    if json {
        to_json(&rows)
    } else {
        Ok(crate::bench::render_mu(&rows))
    }
}

/// `audit bench speed`: wall time per tester call.
fn bench_speed(samples: &str, tester: &str, repeats: u64, seed: u64, json: bool) -> Result<String> {
    let sizes = parse_sizes(samples)?;
    let names = tester_names(tester)?;
    check_repeats("--repeats", repeats)?;
    let rows = speed(&sizes, &names, repeats, seed)?;
    if json {
        to_json(&rows)
    } else {
        Ok(render_speed(&rows, repeats))
    }
}

/// `audit bench suite`: the real-world suite's cases through `audit run --exec`, one printed row
/// each as it ends.
fn bench_suite(
    cases: &Path,
    samples: usize,
    seed: u64,
    only: &Option<String>,
    extra: &Option<String>,
    json: bool,
) -> Result<String> {
    let mut all = super::suite::read_cases(cases)?;
    if let Some(only) = only {
        let keep: Vec<&str> = only.split(',').map(str::trim).collect();
        all.retain(|c| keep.contains(&c.id.as_str()));
        if all.is_empty() {
            return Err(Error::InvalidConfig(format!(
                "--only {only}: no case of {} has these ids",
                cases.display()
            )));
        }
    }
    let extra = split_extra(extra)?;
    // The manifest's commands are relative to the repository root: the folder that holds
    // tests/suite/ (the manifest's grandparent).
    let root = cases
        .canonicalize()
        .ok()
        .and_then(|p| p.parent()?.parent()?.parent().map(|p| p.to_path_buf()))
        .unwrap_or_else(|| PathBuf::from("."));
    let print_rows = !json;
    if print_rows {
        println!(
            "{:42} {:8} {:30} {:>4} {:>7}  verdict",
            "id", "status", "kind", "exit", "seconds"
        );
    }
    let rows = super::suite::run_suite(&all, &root, samples, seed, &extra, &|r| {
        if print_rows {
            println!("{}", super::suite::render_row(r));
        }
    })?;
    if json {
        to_json(&rows)
    } else {
        Ok(format!("{}\n", super::suite::summary(&rows)))
    }
}

/// `audit bench pacing`: default program audits against their budget, optionally beside busy
/// processes.
fn bench_pacing(
    budget: f64,
    seed: u64,
    only: &Option<String>,
    load: &str,
    extra: &Option<String>,
    json: bool,
) -> Result<String> {
    super::pacing::check_budget(budget)?;
    let cases: Vec<super::pacing::CaseSpec> = super::pacing::select(only.as_deref())?
        .into_iter()
        .map(Into::into)
        .collect();
    let k = super::load::parse_load(load)?;
    let extra = split_extra(extra)?;
    let print_rows = !json;
    // Dropped (every busy process killed) when this function returns, on an error too.
    let busy = super::load::BusyLoad::start(k)?;
    if print_rows {
        println!("{}", super::pacing::header());
    }
    let rows = super::pacing::run_cases(
        &cases,
        Path::new("."),
        budget,
        seed,
        &extra,
        busy.len(),
        &|r| {
            if print_rows {
                println!("{}", super::pacing::render_row(r));
            }
        },
    )?;
    drop(busy);
    if json {
        to_json(&rows)
    } else {
        Ok(super::pacing::summary(&rows, k))
    }
}

/// `audit bench probe`: the speed probe on a program of known cost, beside busy processes.
#[allow(clippy::too_many_arguments)]
fn bench_probe(
    repeats: u64,
    cost_us: f64,
    clock: &str,
    load: &str,
    max_seconds: f64,
    dataset_size: usize,
    seed: u64,
    json: bool,
) -> Result<String> {
    check_repeats("--repeats", repeats)?;
    super::probe::check_cost_us(cost_us)?;
    super::probe::check_max_seconds(max_seconds)?;
    super::run::check_count("--dataset-size", dataset_size, 1, 100_000)?;
    super::probe::check_clock(clock)?;
    let k = super::load::parse_load(load)?;
    let time_log =
        std::env::temp_dir().join(format!("audit-bench-probe-{}.log", std::process::id()));
    let setup = super::probe::ProbeSetup {
        command: super::probe::command_for(cost_us, clock, &time_log),
        time_log: time_log.clone(),
        true_seconds_per_release: cost_us * 1e-6,
        repeats: repeats as usize,
        dataset_size,
        max_seconds,
        seed,
        load: k,
    };
    let print_rows = !json;
    let busy = super::load::BusyLoad::start(k)?;
    if print_rows {
        println!("{}", super::probe::header());
    }
    let rows = super::probe::run_probes(&setup, &|r| {
        if print_rows {
            println!("{}", super::probe::render_row(r));
        }
    });
    drop(busy);
    let _ = std::fs::remove_file(&time_log);
    let rows = rows?;
    if json {
        to_json(&rows)
    } else {
        Ok(super::probe::summary(&setup, &rows))
    }
}

/// `audit bench slow`: the slow-program suite against its budget, optionally beside busy
/// processes.
fn bench_slow(
    cases: &Path,
    budget: f64,
    seed: u64,
    only: &Option<String>,
    load: &str,
    extra: &Option<String>,
    json: bool,
) -> Result<String> {
    super::pacing::check_budget(budget)?;
    let all = super::suite::read_cases(cases)?;
    let specs = super::slow::specs(&all, only.as_deref())?;
    let k = super::load::parse_load(load)?;
    let extra = split_extra(extra)?;
    let print_rows = !json;
    let busy = super::load::BusyLoad::start(k)?;
    if print_rows {
        println!("{}", super::slow::header());
    }
    let rows = super::pacing::run_cases(
        &specs,
        Path::new("."),
        budget,
        seed,
        &extra,
        busy.len(),
        &|r| {
            if print_rows {
                println!("{}", super::slow::render_row(r));
            }
        },
    )?;
    drop(busy);
    if json {
        to_json(&rows)
    } else {
        Ok(super::slow::summary(&rows, k))
    }
}

/// `audit bench table`: the detection table over the catalogue, and its report (a failure to
/// write the report after the table is printed is a late error).
#[allow(clippy::too_many_arguments)]
fn bench_table(
    epsilons: &str,
    tester: &str,
    repeats: u64,
    samples: usize,
    failure_probability: f64,
    only: &Option<String>,
    seed: u64,
    json: bool,
    report: &ReportArgs,
) -> Result<Outcome> {
    let epsilons = parse_epsilons(epsilons)?;
    let names = tester_names(tester)?;
    super::run::check_beta(failure_probability)?;
    check_repeats("--repeats", repeats)?;
    super::run::check_count(
        "--samples",
        samples,
        100,
        crate::audit::MAX_SAMPLES_PER_SIDE,
    )?;
    let ids: Vec<String> = match only_ids(only)? {
        Some(ids) => ids,
        None => catalogue::ids().into_iter().map(str::to_string).collect(),
    };
    if !report.no_report {
        crate::report::prepare_report_dir(&report.report_dir)?;
    }
    let mut settings = 0;
    for id in &ids {
        settings += crate::bench::table_settings(id, &epsilons)?.len();
    }
    let bar = crate::report::progress::bar(
        (settings * names.len()) as u64 * repeats,
        report.quiet || json,
        "bench table",
    );
    let start = Instant::now();
    let cells = crate::bench::table(
        &ids,
        &epsilons,
        &names,
        repeats,
        samples,
        failure_probability,
        seed,
        &|| bar.inc(1),
    )?;
    bar.finish_and_clear();
    let mut r = crate::report::table::TableReport {
        schema_version: crate::audit::SCHEMA_VERSION,
        mode: "table".into(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        samples_per_side: samples,
        repeats,
        failure_probability_per_audit: failure_probability,
        epsilons,
        testers: names,
        seed,
        cells,
        wall_time_seconds: None,
        reproduce: Some(super::run::reproduce_line(None)),
    };
    let mut out = if json {
        to_json(&crate::record::ResultRecord::from_table(&r))?
    } else {
        crate::bench::render_table(&r.cells, samples, failure_probability)
    };
    if !report.no_report {
        r.wall_time_seconds = Some(start.elapsed().as_secs_f64());
        let (index, late) = super::split_late(
            crate::report::table::write_table_report(&report.report_dir, &r).map(Some),
        );
        if let Some(index) = index {
            announce_report(&index, json, report.quiet, &mut out);
        }
        if let Some(e) = late {
            return Ok(Outcome {
                stdout: out,
                code: 0,
                late_error: Some(e),
            });
        }
    }
    Ok(Outcome::new(out, 0))
}

/// `--samples` of `bench layers` and `bench seeds`: 20 to 1e8.
fn check_census_samples(samples: usize) -> Result<()> {
    if !(20..=100_000_000).contains(&samples) {
        return Err(Error::InvalidConfig(format!(
            "--samples {samples}; allowed: 20 to 1e8"
        )));
    }
    Ok(())
}

/// How many catalogue entries (those of `only`, or all) at default parameters `keep` accepts: the
/// length of a census's progress bar.
fn count_entries(only: Option<&[String]>, keep: impl Fn(&catalogue::Entry) -> bool) -> usize {
    catalogue::ids()
        .into_iter()
        .filter(|id| only.is_none_or(|o| o.iter().any(|x| x == id)))
        .filter(|id| {
            catalogue::build(id, &Params::default())
                .map(|e| keep(&e))
                .unwrap_or(false)
        })
        .count()
}

/// `audit bench layers`: the two-layer census of the correct catalogue entries.
fn bench_layers(
    samples: usize,
    failure_probability: f64,
    only: &Option<String>,
    seed: u64,
    json: bool,
    quiet: bool,
) -> Result<String> {
    super::run::check_beta(failure_probability)?;
    let only = only_ids(only)?;
    check_census_samples(samples)?;
    let count = count_entries(only.as_deref(), |e| !e.status.is_buggy());
    let bar = crate::report::progress::bar(count as u64, quiet || json, "bench layers");
    let rows =
        crate::bench::layer_census(samples, failure_probability, only.as_deref(), seed, &|| {
            bar.inc(1)
        })?;
    bar.finish_and_clear();
    if json {
        to_json(&rows)
    } else {
        Ok(crate::bench::render_census(
            &rows,
            samples,
            failure_probability,
            seed,
        ))
    }
}

/// `audit bench seeds`: every tester on every correct entry over many seeds.
#[allow(clippy::too_many_arguments)]
fn bench_seeds(
    n_seeds: u64,
    samples: usize,
    failure_probability: f64,
    tester: &str,
    only: &Option<String>,
    seed: u64,
    json: bool,
    quiet: bool,
) -> Result<String> {
    let names = tester_names(tester)?;
    super::run::check_beta(failure_probability)?;
    check_repeats("--seeds", n_seeds)?;
    let only = only_ids(only)?;
    check_census_samples(samples)?;
    let correct = count_entries(only.as_deref(), |e| e.status.word() == "correct");
    let bar = crate::report::progress::bar(
        (correct * names.len()) as u64 * n_seeds,
        quiet || json,
        "bench seeds",
    );
    let rows = seeds(
        n_seeds,
        samples,
        failure_probability,
        &names,
        only.as_deref(),
        seed,
        &|| bar.inc(1),
    )?;
    bar.finish_and_clear();
    if json {
        to_json(&rows)
    } else {
        Ok(render_seeds(&rows, samples, failure_probability))
    }
}
