//! `audit bench floor`: `audit test` beside its floor, reading and parsing both sides' files
//! alone, at each size, format and thread count; and the per-stage profile of `audit test`
//! (docs/benchmarks.md, "The testers at the machine's floor").
//!
//! The floor is timed in this process (open both sides, every release read into memory, on a
//! pool of T threads): it is what any test on these files must do at least. `audit test` is
//! timed as a whole process (this executable, `--jobs T`), as a user runs it, so its figure
//! also holds the process start (about 2 ms here) and a fresh process's first touch of every
//! page it allocates, which the floor's repeats in one process mostly reuse. So the floor is
//! also timed the same way as the test: a fresh process of this executable that reads and
//! parses both sides once and exits (the hidden `--read-once A,B`). Medians of `--repeats`
//! runs each, the figures' runs interleaved.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::error::{Error, Result};
use crate::sources::shards::open_sides;
use crate::testers::Transform;

/// What `audit bench floor` measures.
pub(super) struct FloorArgs<'a> {
    pub(super) dir: &'a Path,
    pub(super) sizes: Vec<usize>,
    pub(super) formats: Vec<String>,
    pub(super) threads: Vec<usize>,
    pub(super) repeats: u64,
    pub(super) profile: Vec<usize>,
    pub(super) json: bool,
    /// The `audit` executable timed as `audit test` (another build, for a before-and-after
    /// table); this one by default.
    pub(super) audit: Option<&'a Path>,
}

/// One row of the table: (releases per side, format, threads, floor, both layers, mechanism
/// layer, float layer), seconds.
#[derive(serde::Serialize)]
struct Row {
    samples_per_side: usize,
    format: String,
    threads: usize,
    floor_s: f64,
    /// The floor as a fresh process (as `audit test` is timed).
    floor_process_s: f64,
    both_s: f64,
    mechanism_s: f64,
    float_s: f64,
}

/// The per-stage profile of one `audit test` run at 1 thread.
#[derive(serde::Serialize)]
struct Profile {
    samples_per_side: usize,
    format: String,
    wall_s: f64,
    /// (stage, seconds, calls), longest first.
    stages: Vec<(String, f64, u64)>,
}

/// The two shards of size `n` in `format` under `dir`, written with `audit sample
/// --mechanism laplace-sum` when missing.
fn shards(dir: &Path, n: usize, format: &str) -> Result<(PathBuf, PathBuf)> {
    let path = |side: &str| dir.join(format!("{n}.{side}.{format}"));
    for side in ["a", "b"] {
        let out = path(side);
        if out.exists() {
            continue;
        }
        let status = std::process::Command::new(exe()?)
            .args(["sample", "--mechanism", "laplace-sum", "--side", side])
            .args(["--samples", &n.to_string(), "--shard-index", "0", "--out"])
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|e| io_err(format!("audit sample for {}: {e}", out.display())))?;
        if !status.success() {
            return Err(io_err(format!(
                "audit sample could not write {} ({status})",
                out.display()
            )));
        }
    }
    Ok((path("a"), path("b")))
}

/// An error of the benchmark's own files or processes, in words.
fn io_err(what: String) -> Error {
    Error::Io {
        context: "audit bench floor".into(),
        source: std::io::Error::other(what),
    }
}

fn exe() -> Result<PathBuf> {
    std::env::current_exe().map_err(|e| io_err(format!("this executable's path: {e}")))
}

/// The floor once: both sides opened and every release read into memory, on `threads`.
fn floor_once(a: &Path, b: &Path, threads: usize) -> Result<f64> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| Error::InvalidConfig(format!("{threads} threads: {e}")))?;
    pool.install(|| {
        let start = Instant::now();
        let (sa, sb) = open_sides(&[a.to_path_buf()], &[b.to_path_buf()])?;
        let (ra, rb) = rayon::join(
            || sa.head(sa.rows, &Transform::None),
            || sb.head(sb.rows, &Transform::None),
        );
        let rows = ra?.n() + rb?.n();
        let took = start.elapsed().as_secs_f64();
        if rows != sa.rows + sb.rows {
            return Err(Error::InvalidSamples(format!(
                "read {rows} releases of {}",
                sa.rows + sb.rows
            )));
        }
        Ok(took)
    })
}

/// The floor once in this process, for the benchmark's own fresh process (`--read-once A,B`):
/// its seconds, printed.
pub(super) fn read_once(pair: &str, threads: usize) -> Result<String> {
    let Some((a, b)) = pair.split_once(',') else {
        return Err(Error::InvalidConfig(format!(
            "--read-once {pair:?}; allowed: two shard paths A,B"
        )));
    };
    let took = floor_once(Path::new(a), Path::new(b), threads)?;
    Ok(format!("{took}\n"))
}

/// The floor once as a whole process of `exe`: its wall time.
fn floor_process_once(exe: &Path, dir: &Path, a: &Path, b: &Path, threads: usize) -> Result<f64> {
    let pair = format!("{},{}", a.display(), b.display());
    let mut cmd = std::process::Command::new(exe);
    cmd.args(["bench", "floor", "--dir"])
        .arg(dir)
        .args(["--read-once", &pair, "--threads", &threads.to_string()])
        .stdout(std::process::Stdio::null());
    let start = Instant::now();
    let status = cmd
        .status()
        .map_err(|e| io_err(format!("the floor's process: {e}")))?;
    let took = start.elapsed().as_secs_f64();
    if !status.success() {
        return Err(io_err(format!(
            "the floor's process on {} and {} failed ({status})",
            a.display(),
            b.display()
        )));
    }
    Ok(took)
}

/// `audit test` once as a whole process: its wall time (the exit code 0 or 1 is a verdict).
fn test_once(
    audit: &Path,
    a: &Path,
    b: &Path,
    threads: usize,
    check: &str,
    stages: Option<&Path>,
) -> Result<f64> {
    let mut cmd = std::process::Command::new(audit);
    cmd.arg("test")
        .arg("--samples-a")
        .arg(a)
        .arg("--samples-b")
        .arg(b)
        .args(["--claim", "pure:1", "--json", "--no-report", "-q"])
        .args(["--jobs", &threads.to_string(), "--check", check])
        .stdout(std::process::Stdio::null());
    if let Some(file) = stages {
        cmd.env(crate::stages::VAR, file);
    }
    let start = Instant::now();
    let status = cmd
        .status()
        .map_err(|e| io_err(format!("audit test: {e}")))?;
    let took = start.elapsed().as_secs_f64();
    if !matches!(status.code(), Some(0 | 1)) {
        return Err(io_err(format!(
            "audit test on {} and {} failed ({status})",
            a.display(),
            b.display()
        )));
    }
    Ok(took)
}

/// Runs the benchmark; its table (or JSON).
pub(super) fn bench_floor(f: &FloorArgs<'_>) -> Result<String> {
    std::fs::create_dir_all(f.dir)
        .map_err(|e| io_err(format!("--dir {}: {e}", f.dir.display())))?;
    let audit = match f.audit {
        Some(p) => p.to_path_buf(),
        None => exe()?,
    };
    let this = exe()?;
    let mut rows = Vec::new();
    for &n in &f.sizes {
        for format in &f.formats {
            let (a, b) = shards(f.dir, n, format)?;
            for &t in &f.threads {
                // The five figures' runs interleaved (one of each per round), so that a
                // machine whose speed drifts during the benchmark moves them all alike.
                let mut runs: [Vec<f64>; 5] = Default::default();
                for _ in 0..f.repeats {
                    let round = [
                        floor_once(&a, &b, t)?,
                        floor_process_once(&this, f.dir, &a, &b, t)?,
                        test_once(&audit, &a, &b, t, "both", None)?,
                        test_once(&audit, &a, &b, t, "mechanism", None)?,
                        test_once(&audit, &a, &b, t, "float", None)?,
                    ];
                    for (r, x) in runs.iter_mut().zip(round) {
                        r.push(x);
                    }
                }
                let [floor, process, both, mechanism, float] =
                    runs.map(|mut r| crate::bench::median(&mut r));
                rows.push(Row {
                    samples_per_side: n,
                    format: format.clone(),
                    threads: t,
                    floor_s: floor,
                    floor_process_s: process,
                    both_s: both,
                    mechanism_s: mechanism,
                    float_s: float,
                });
            }
        }
    }
    let mut profiles = Vec::new();
    for &n in &f.profile {
        for format in &f.formats {
            let (a, b) = shards(f.dir, n, format)?;
            let file =
                std::env::temp_dir().join(format!("dp-audit-stages-{}.json", std::process::id()));
            let wall = test_once(&audit, &a, &b, 1, "both", Some(&file))?;
            // An `audit` that writes no profile (an earlier build) leaves no file: no stages.
            let text = if file.exists() {
                std::fs::read_to_string(&file)
                    .map_err(|e| io_err(format!("the stage profile {}: {e}", file.display())))?
            } else {
                "{}".to_string()
            };
            let _ = std::fs::remove_file(&file);
            let map: std::collections::BTreeMap<String, (f64, u64)> =
                serde_json::from_str(&text)
                    .map_err(|e| io_err(format!("the stage profile: {e}")))?;
            let mut stages: Vec<(String, f64, u64)> =
                map.into_iter().map(|(k, (s, c))| (k, s, c)).collect();
            stages.sort_by(|x, y| y.1.total_cmp(&x.1));
            profiles.push(Profile {
                samples_per_side: n,
                format: format.clone(),
                wall_s: wall,
                stages,
            });
        }
    }
    if f.json {
        return Ok(serde_json::to_string_pretty(&serde_json::json!({
            "rows": rows,
            "profiles": profiles,
        }))
        .map_err(|e| io_err(e.to_string()))?
            + "\n");
    }
    Ok(render(&rows, &profiles, f.repeats))
}

fn ms(s: f64) -> String {
    if s < 1.0 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{s:.2} s")
    }
}

fn render(rows: &[Row], profiles: &[Profile], repeats: u64) -> String {
    let mut out = format!(
        "audit test beside its floor (reading and parsing both sides' files alone: in this process, and as a fresh process as `audit test` is timed); medians of {repeats} runs\n\n\
         | releases per side | format | threads | floor | floor, fresh process | both layers | mechanism | float | both / floor | both / fresh floor |\n\
         |---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for r in rows {
        out += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1}× | {:.1}× |\n",
            r.samples_per_side,
            r.format,
            r.threads,
            ms(r.floor_s),
            ms(r.floor_process_s),
            ms(r.both_s),
            ms(r.mechanism_s),
            ms(r.float_s),
            r.both_s / r.floor_s,
            r.both_s / r.floor_process_s
        );
    }
    for p in profiles {
        out += &format!(
            "\nPer-stage profile: {} releases per side, {}, both layers, 1 thread (`--jobs 1`), wall {} (stages nest: the held-out count holds the view of its rows)\n\n| stage | time | calls |\n|---|---:|---:|\n",
            p.samples_per_side,
            p.format,
            ms(p.wall_s)
        );
        for (stage, s, c) in &p.stages {
            out += &format!("| {stage} | {} | {c} |\n", ms(*s));
        }
    }
    out
}
