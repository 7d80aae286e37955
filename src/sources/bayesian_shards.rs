//! Shards of a Bayesian DP test (`audit sample --bdp-data`, read by `audit test --claim bdp:`).
//!
//! # Line format
//! JSON lines, one pair (x', w) per line: `{"x": [x'_1, …], "w": [w_1, …]}`, where x' is the
//! record drawn from μ and w the release drawn with it: on side b (P̃) w ~ M(D with x'), on
//! side a (Q̃) w ~ M(D), x' drawn independently of w (see [`crate::audit::bayesian`]). Every line
//! of a side has the same dimensions; a JSON number is accepted for a one-dimensional x' or w.
//! Lines must be i.i.d. within a side and the sides independent (as `audit sample` draws them,
//! each shard from its own seed); any engine writing these lines must keep that.
//!
//! # Sidecar
//! `audit sample` writes `FILE.meta.json` beside the shard ([`BayesianSidecar`]): the side,
//! shard seed and index (as for any text shard), and what a report needs to name the test: μ's
//! source, the fixed rest of the dataset D and whether D was drawn too. `audit test` refuses two
//! shards with the same seed, a shard on the wrong side, and shards of different D; shards
//! without a sidecar are accepted (then D is not recorded).

use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mechanisms::{Dataset, Samples};
use crate::sources::shards::{Format, Provenance, ShardSide, sidecar_path};

/// Version of the sidecar layout.
pub const VERSION: u32 = 1;

/// The sidecar of a Bayesian shard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BayesianSidecar {
    /// Layout version, [`VERSION`].
    pub version: u32,
    /// Always `"bayesian"`: lines are (x', w) pairs.
    pub kind: String,
    /// Dimension of a release w.
    pub dim: usize,
    /// Dimension of a record x'.
    pub record_dim: usize,
    /// Lines in the shard.
    pub count: usize,
    /// Side, seed and shard index.
    #[serde(flatten)]
    pub provenance: Provenance,
    /// Where μ came from (the file as given).
    pub data_source: String,
    /// Records in μ's file.
    pub records: usize,
    /// Distinct records among them.
    #[serde(default)]
    pub distinct_records: usize,
    /// The fixed rest of the dataset D (with `dataset_drawn`, only its size counts).
    pub base: Dataset,
    /// True when D was drawn from μ for every release.
    #[serde(default)]
    pub dataset_drawn: bool,
}

/// Writes the pairs (`x`, `w`) as JSON lines to `path`, gzip- or zstd-compressed when its name
/// ends in `.gz` or `.zst` (refusing `.bin`: the binary layout has no room for x'), then the
/// sidecar.
pub fn write(path: &Path, x: &Samples, w: &Samples, meta: &BayesianSidecar) -> Result<()> {
    let format = Format::of(path);
    if format == Format::Binary {
        return Err(Error::InvalidConfig(format!(
            "--out {}: a Bayesian shard is JSON lines of {{\"x\": [...], \"w\": [...]}}; allowed: a name ending in .jsonl (or anything but .bin), .gz or .zst",
            path.display()
        )));
    }
    let io = |e: std::io::Error| Error::InvalidConfig(format!("--out {}: {e}", path.display()));
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let file = std::fs::File::create(&partial).map_err(io)?;
    let lines = |out: &mut dyn Write| -> std::io::Result<()> {
        for j in 0..w.n() {
            let line = serde_json::json!({ "x": x.row(j).to_vec(), "w": w.row(j).to_vec() });
            writeln!(out, "{line}")?;
        }
        Ok(())
    };
    // Each compressed stream is finished explicitly (its errors reported), then the buffer
    // flushed and the file synced before it is renamed into place.
    let buffered = match format {
        Format::Gzip => {
            let mut e =
                flate2::write::GzEncoder::new(BufWriter::new(file), flate2::Compression::default());
            lines(&mut e).map_err(io)?;
            e.finish().map_err(io)?
        }
        Format::Zstd => {
            let mut e = zstd::stream::write::Encoder::new(BufWriter::new(file), 3).map_err(io)?;
            lines(&mut e).map_err(io)?;
            e.finish().map_err(io)?
        }
        _ => {
            let mut b = BufWriter::new(file);
            lines(&mut b).map_err(io)?;
            b
        }
    };
    buffered
        .into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)?;
    let text = serde_json::to_string(meta).map_err(|e| Error::InvalidConfig(e.to_string()))?;
    std::fs::write(sidecar_path(path), text + "\n").map_err(io)?;
    std::fs::rename(&partial, path).map_err(io)?;
    Ok(())
}

/// The pairs of one side read from its shards, in order.
#[derive(Clone, Debug)]
pub struct SidePairs {
    /// x' rows.
    pub x: Samples,
    /// w rows.
    pub w: Samples,
    /// The files, joined by " + ".
    pub names: String,
    /// The sidecars found (one per shard that has one).
    pub sidecars: Vec<BayesianSidecar>,
}

/// A JSON number or array of numbers as a vector, or `None`.
fn numbers(v: &serde_json::Value) -> Option<Vec<f64>> {
    match v {
        serde_json::Value::Number(n) => n.as_f64().map(|x| vec![x]),
        serde_json::Value::Array(a) => a.iter().map(serde_json::Value::as_f64).collect(),
        _ => None,
    }
}

/// Reads the shards `paths` of `side` (`flag` names it in errors).
pub fn read_side(paths: &[PathBuf], side: ShardSide, flag: &str) -> Result<SidePairs> {
    if paths.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "{flag}: no shard given; allowed: one or more JSON-lines files of {{\"x\": [...], \"w\": [...]}}"
        )));
    }
    let (mut xs, mut ws) = (Vec::new(), Vec::new());
    let (mut dx, mut dw) = (None::<usize>, None::<usize>);
    let mut sidecars = Vec::new();
    for p in paths {
        let name = p.display();
        let bad = |what: String| Error::InvalidConfig(format!("{flag} {name}: {what}"));
        let format = Format::of(p);
        if format == Format::Binary {
            return Err(bad(
                "a Bayesian DP test reads JSON lines of {\"x\": [...], \"w\": [...]} (as audit sample --bdp-data writes); allowed: a JSON-lines file, plain, .gz or .zst".into(),
            ));
        }
        if let Some(m) = read_sidecar(p, side, flag, &bad)? {
            sidecars.push(m);
        }
        let reader = crate::sources::shards::text_reader(p, p, format)?;
        for (i, line) in reader.lines().enumerate() {
            let line = line.map_err(|e| bad(e.to_string()))?;
            // A byte-order mark may open the file (crate::sources::text), nowhere else.
            let l = if i == 0 {
                crate::sources::text::strip_bom(&line).trim()
            } else {
                line.trim()
            };
            if l.is_empty() {
                continue;
            }
            let at = |what: String| bad(format!("line {}: {what}", i + 1));
            let (x, w) = pair_of_line(l, (&mut dx, &mut dw), &at)?;
            xs.extend(x);
            ws.extend(w);
        }
    }
    let (Some(dx), Some(dw)) = (dx, dw) else {
        return Err(Error::InvalidConfig(format!(
            "{flag}: no (x', w) lines in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(" + ")
        )));
    };
    Ok(SidePairs {
        x: Samples::from_flat(dx, xs)?,
        w: Samples::from_flat(dw, ws)?,
        names: paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" + "),
        sidecars,
    })
}

/// The sidecar of shard `p` (None when it has none), checked to be of `side` (`flag` names
/// it); `bad` words an error about the shard.
fn read_sidecar(
    p: &std::path::Path,
    side: ShardSide,
    flag: &str,
    bad: &dyn Fn(String) -> Error,
) -> Result<Option<BayesianSidecar>> {
    let meta = sidecar_path(p);
    if !meta.exists() {
        return Ok(None);
    }
    use crate::sources::text::{JsonReadError, read_json};
    let m: BayesianSidecar = read_json(&meta).map_err(|e| match e {
        JsonReadError::Io(e) => bad(format!("its sidecar {}: {e}", meta.display())),
        JsonReadError::Parse(_) => bad(format!(
            "its sidecar {} is not a Bayesian shard's (no x' recorded); allowed: shards written by audit sample --bdp-data",
            meta.display()
        )),
    })?;
    if m.provenance.side != side {
        return Err(bad(format!(
            "written as side {}, given as {flag}; allowed: side a shards for --samples-a (x' with releases of M(D)), side b for --samples-b (releases of M(D with x'))",
            match m.provenance.side {
                ShardSide::A => "a",
                ShardSide::B => "b",
            }
        )));
    }
    Ok(Some(m))
}

/// The pair (x', w) of one line `l` of a shard, its dimensions checked against those of the
/// earlier lines (`dims`, set by the first); `at` words an error about the line.
fn pair_of_line(
    l: &str,
    (dx, dw): (&mut Option<usize>, &mut Option<usize>),
    at: &dyn Fn(String) -> Error,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let v: serde_json::Value = serde_json::from_str(l).map_err(|_| {
        at(format!(
            "{l:.80} is not JSON; allowed: {{\"x\": [numbers], \"w\": [numbers]}}"
        ))
    })?;
    let (Some(x), Some(w)) = (numbers(&v["x"]), numbers(&v["w"])) else {
        return Err(at(format!(
            "{l:.80} is not a pair; allowed: {{\"x\": [numbers], \"w\": [numbers]}} (x' the drawn record, w the release drawn with it)"
        )));
    };
    if x.is_empty() || w.is_empty() {
        return Err(at("empty x or w; allowed: at least one number each".into()));
    }
    if let Some(v) = x.iter().chain(&w).find(|v| !v.is_finite()) {
        return Err(at(format!("{v} is not finite")));
    }
    if *dx.get_or_insert(x.len()) != x.len() || *dw.get_or_insert(w.len()) != w.len() {
        return Err(at(format!(
            "x of dimension {} and w of dimension {}; earlier lines have {} and {}",
            x.len(),
            w.len(),
            dx.unwrap_or(0),
            dw.unwrap_or(0)
        )));
    }
    Ok((x, w))
}

/// Checks two sides' shards belong to one test: no file given twice, no two shards with the
/// same seed, the same dimensions and the same recorded D.
pub fn check_sides(a: &[PathBuf], b: &[PathBuf], sa: &SidePairs, sb: &SidePairs) -> Result<()> {
    let mut seen: Vec<PathBuf> = Vec::new();
    for p in a.iter().chain(b) {
        let c = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        if seen.contains(&c) {
            return Err(Error::InvalidConfig(format!(
                "{} is given twice: its lines would count twice and not be independent; allowed: each shard once",
                p.display()
            )));
        }
        seen.push(c);
    }
    let metas: Vec<&BayesianSidecar> = sa.sidecars.iter().chain(&sb.sidecars).collect();
    for (i, m) in metas.iter().enumerate() {
        for n in &metas[..i] {
            if m.provenance.seed == n.provenance.seed {
                return Err(Error::InvalidConfig(format!(
                    "two shards have the same seed {} (shard index {}): they hold the same draws; allowed: shards of distinct --shard-index or side",
                    m.provenance.seed, m.provenance.shard_index
                )));
            }
            if m.base != n.base || m.dataset_drawn != n.dataset_drawn {
                return Err(Error::InvalidConfig(
                    "the shards were drawn with different rests of the dataset D (their sidecars differ): they do not belong to one test".into(),
                ));
            }
        }
    }
    if sa.x.dim() != sb.x.dim() || sa.w.dim() != sb.w.dim() {
        return Err(Error::InvalidConfig(format!(
            "--samples-a has x' of dimension {} and w of dimension {}, --samples-b {} and {}; allowed: the same on both sides",
            sa.x.dim(),
            sa.w.dim(),
            sb.x.dim(),
            sb.w.dim()
        )));
    }
    Ok(())
}
