//! Release shards: files of releases drawn anywhere (`audit sample`, an exec program, a batch
//! engine) and read by `audit test`, in memory or streamed.
//!
//! # Formats (chosen by the file name's ending)
//! - anything else (e.g. `.jsonl`): JSON lines, one JSON number or array per line (the exec
//!   protocol's line format, [`crate::sources::exec::parse_lines`]);
//! - `.gz`: the same lines, gzip-compressed (flate2; concatenated gzip members are read);
//! - `.zst`: the same lines, zstd-compressed (zstd);
//! - `.bin`: binary, a [`HEADER_LEN`]-byte header then the releases as little-endian IEEE-754
//!   f64, row-major (release 0 coordinate 0, release 0 coordinate 1, …). Header, all integers
//!   little-endian:
//!
//!   | bytes | field |
//!   | --- | --- |
//!   | 0..8 | magic `DPAUDREL` |
//!   | 8..12 | format version, u32 = 1 |
//!   | 12..16 | dimension d of a release, u32 ≥ 1 |
//!   | 16..24 | number of releases n, u64 |
//!   | 24..28 | flags, u32: bit 0 = the seed and shard index below are known |
//!   | 28..32 | side, u32: 0 unknown, 1 = a (releases on D), 2 = b (on D') |
//!   | 32..40 | seed the releases were drawn from, u64 |
//!   | 40..48 | shard index, u64 |
//!
//!   The file is exactly 48 + 8·n·d bytes; anything else is an error (a truncated shard).
//!
//! A text shard written by `audit sample` has a sidecar `FILE.meta.json` holding the same
//! fields (`{"version":1,"dim":…,"count":…,"side":"a","seed":…,"shard_index":…}`); when it
//! exists, its count and dimension must match the file.
//!
//! # Checks (every one an error naming the shard; no verdict from partial data)
//! A missing or unreadable file; a binary header that is short, has the wrong magic or version,
//! or announces more or fewer bytes than the file holds (the byte offset where the last
//! complete release ends is named); a line that is not a release, or a non-finite value (line
//! number, or byte offset in a binary shard); a corrupt compressed stream (the line it broke
//! in); shards of different dimensions; two shards with the same recorded seed (their
//! releases would not be independent); the same file given twice. Every byte of every shard is
//! read (and checked) before a verdict, even rows a test does not use.
//!
//! # Pipes, FIFOs and process substitution
//! A shard that is not a regular file (`<(zcat a.gz)`, a named FIFO, `/dev/stdin`) is read once,
//! streaming, into a temporary file (in `TMPDIR`), whose format is taken from its first bytes
//! (the binary magic, gzip's or zstd's, else JSON lines); every pass reads that copy, which
//! [`remove_stored_streams`] deletes. A named FIFO that no program opens for writing within
//! 10 s is refused (opening it would otherwise wait forever).
//!
//! # Streaming
//! [`Streamed`] holds, per side, the first `train` rows in memory (the training split of the
//! hockey-stick tester) and reads the rows after them in parallel (rayon): a binary shard in
//! segments of [`SEGMENT_ROWS`] read from their own byte offsets, a text shard whole (its blocks
//! parsed in parallel), in chunks of [`CHUNK_ROWS`] releases whose rows are counted in parallel
//! blocks: memory is O(train rows + threads × chunk), independent of the number of releases.
//! The counts are integers, so their sum does not depend on the threads. `count_shard_views`
//! counts one shard for every query of a plan (`audit test --count-shard`). Rows keep their order (shards in the order given,
//! rows in file order), so "the first N held-out rows" means the same rows as in memory.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::mechanisms::Samples;
use crate::testers::rows::{PackedRows, TrainRows};
use crate::testers::{HeldOut, HeldOutEvents, Transform};

/// Magic bytes of a binary shard.
pub const MAGIC: [u8; 8] = *b"DPAUDREL";
/// Version of the binary format (and of the sidecar).
pub const VERSION: u32 = 1;
/// Bytes of a binary shard's header.
pub const HEADER_LEN: usize = 48;
/// Releases read at a time from one shard.
pub const CHUNK_ROWS: usize = 1 << 15;

/// A shard's format, from its file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON lines.
    Lines,
    /// Gzip-compressed JSON lines.
    Gzip,
    /// Zstd-compressed JSON lines.
    Zstd,
    /// The binary format of the module docs.
    Binary,
}

impl Format {
    /// The format of `path`: by its ending (`.bin`, `.gz`, `.zst`, else JSON lines).
    pub fn of(path: &Path) -> Format {
        let name = path.to_string_lossy();
        if name.ends_with(".bin") {
            Format::Binary
        } else if name.ends_with(".gz") {
            Format::Gzip
        } else if name.ends_with(".zst") {
            Format::Zstd
        } else {
            Format::Lines
        }
    }
}

/// Which dataset a shard's releases were drawn on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShardSide {
    /// The first dataset D (`--samples-a`).
    A,
    /// The second dataset D' (`--samples-b`).
    B,
}

impl ShardSide {
    /// 0 for a, 1 for b.
    pub fn index(self) -> u64 {
        match self {
            ShardSide::A => 0,
            ShardSide::B => 1,
        }
    }
}

/// Where a shard's randomness came from (recorded by `audit sample`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The side it was drawn on.
    pub side: ShardSide,
    /// The seed its releases were drawn from.
    pub seed: u64,
    /// Its shard index.
    pub shard_index: u64,
}

/// The sidecar of a text shard (`FILE.meta.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sidecar {
    /// Format version, [`VERSION`].
    pub version: u32,
    /// Dimension of a release.
    pub dim: usize,
    /// Number of releases.
    pub count: usize,
    /// Side, seed and shard index.
    #[serde(flatten)]
    pub provenance: Provenance,
}

/// The sidecar path of a text shard.
pub fn sidecar_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".meta.json");
    PathBuf::from(s)
}

/// An opened shard: its size, checked, and where its releases came from if recorded.
#[derive(Clone, Debug)]
pub struct Shard {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// Dimension of a release (before any transform).
    pub dim: usize,
    /// Number of releases.
    pub rows: usize,
    /// Seed and index, when recorded (binary header or sidecar).
    pub provenance: Option<Provenance>,
    /// Where its bytes are read: the file itself, or the copy of a stream ([`Stored`]).
    source: PathBuf,
    /// Releases held in memory ([`Shard::in_memory`], or a text shard parsed when opened, see
    /// [`Cached`]): read from here, not from `source`.
    memory: Option<std::sync::Arc<Samples>>,
    /// The bytes of memory the parsed releases of a text shard hold against
    /// [`TEXT_CACHE_BYTES`] (given back when the last copy of the shard is dropped).
    cached: Option<std::sync::Arc<Cached>>,
}

/// Most bytes of parsed releases that text shards keep in memory at once, over every shard a
/// process has open: 512 MiB, about 3·10^7 one-dimensional releases per side of a test.
///
/// A text shard is parsed once, when it is opened, and kept in memory when its releases fit
/// in what is left of this budget: every later pass (the training rows and the held-out
/// counts of each layer, the ε estimate) then reads memory instead of parsing the text again,
/// which is what text costs. A shard that does not fit is only sized when opened and streamed,
/// parsed in every pass, in memory bounded by the training rows (`audit test`'s streaming, the
/// module docs).
pub const TEXT_CACHE_BYTES: usize = 512 << 20;

/// Bytes of [`TEXT_CACHE_BYTES`] in use.
static TEXT_CACHE_USED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A share of [`TEXT_CACHE_BYTES`], given back when dropped.
#[derive(Debug)]
struct Cached(usize);

impl Cached {
    /// Takes `bytes` more of the budget, or nothing when they do not fit.
    fn take(bytes: usize) -> Option<Cached> {
        use std::sync::atomic::Ordering;
        TEXT_CACHE_USED
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(bytes).filter(|&u| u <= TEXT_CACHE_BYTES)
            })
            .ok()
            .map(|_| Cached(bytes))
    }

    /// Takes `more` bytes on top of this share; false (nothing taken) when they do not fit.
    fn grow(&mut self, more: usize) -> bool {
        match Cached::take(more) {
            Some(extra) => {
                self.0 += extra.0;
                std::mem::forget(extra);
                true
            }
            None => false,
        }
    }
}

impl Drop for Cached {
    fn drop(&mut self) {
        TEXT_CACHE_USED.fetch_sub(self.0, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A pipe, FIFO or `<(…)` process substitution given as a shard, read once (streaming, in
/// constant memory) into a temporary file that every later pass and every later
/// [`Shard::open`] of the same name in this process reads (a stream cannot be read twice);
/// removed by [`remove_stored_streams`].
#[derive(Debug)]
struct Stored(PathBuf);

/// The streams stored so far, by the name they were given as.
static STORED: std::sync::Mutex<Vec<(PathBuf, Stored)>> = std::sync::Mutex::new(Vec::new());

/// Removes the temporary copies of the streams given as shards (the `audit` binary calls it
/// before it exits).
pub fn remove_stored_streams() {
    let mut stored = STORED.lock().unwrap_or_else(|p| p.into_inner());
    stored.clear();
}

/// The copy of the stream `path`, made on first use.
fn stored_stream(path: &Path) -> Result<PathBuf> {
    let mut stored = STORED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, s)) = stored.iter().find(|(p, _)| p == path) {
        return Ok(s.0.clone());
    }
    let s = store_stream(path)?;
    let copy = s.0.clone();
    stored.push((path.to_path_buf(), s));
    Ok(copy)
}

impl Drop for Stored {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// How long a FIFO given as a shard may wait for a program to open it for writing.
const FIFO_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Copies a stream (pipe, FIFO, `<(…)`) once into a temporary file whose name ends as its
/// content asks (`.bin` for the binary magic, `.gz`, `.zst` for their magic numbers, else JSON
/// lines), so that `<(cat a.bin)` and `<(cat a.gz)` are read as such.
fn store_stream(path: &Path) -> Result<Stored> {
    // Opening a FIFO waits for a writer; a named FIFO nobody writes to would wait forever, so
    // the open runs on its own thread and is given up after FIFO_WAIT.
    let (tx, rx) = std::sync::mpsc::channel();
    let p = path.to_path_buf();
    std::thread::Builder::new()
        .name("open a stream shard".into())
        .spawn(move || {
            let _ = tx.send(File::open(&p));
        })
        .map_err(|e| bad(path, format!("cannot start a thread to open it ({e})")))?;
    let file = match rx.recv_timeout(FIFO_WAIT) {
        Ok(f) => f.map_err(|e| bad(path, format!("cannot be opened ({e})")))?,
        Err(_) => {
            return Err(bad(
                path,
                format!(
                    "is a FIFO that no program opened for writing within {} s; allowed: a FIFO with a writer (start the program writing to it first), a pipe or `<(…)`, or a regular file",
                    FIFO_WAIT.as_secs()
                ),
            ));
        }
    };
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let head = reader
        .fill_buf()
        .map_err(|e| bad(path, format!("cannot be read ({e})")))?;
    let ext = if head.starts_with(&MAGIC) {
        "bin"
    } else if head.starts_with(&[0x1f, 0x8b]) {
        "gz"
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        "zst"
    } else {
        "jsonl"
    };
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let copy =
        std::env::temp_dir().join(format!("dp-audit-stream-{}-{k}.{ext}", std::process::id()));
    let stored = Stored(copy.clone());
    let fail = |e: std::io::Error| {
        bad(
            path,
            format!(
                "cannot be copied to the temporary file {} ({e}); allowed: a stream that fits the temporary directory (TMPDIR), or a regular file",
                copy.display()
            ),
        )
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, File::create(&copy).map_err(fail)?);
    std::io::copy(&mut reader, &mut out).map_err(fail)?;
    out.flush().map_err(fail)?;
    Ok(stored)
}

fn bad(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::InvalidSamples(format!("shard {}: {what}", path.display()))
}

fn open_file(path: &Path) -> Result<File> {
    File::open(path).map_err(|e| bad(path, format!("cannot be opened ({e})")))
}

/// The decompressed text of a text shard (`path` names it in errors, its bytes are read from
/// `source`), as a buffered reader.
pub(crate) fn text_reader(
    path: &Path,
    source: &Path,
    format: Format,
) -> Result<Box<dyn BufRead + Send>> {
    text_reader_with(path, source, format, 1 << 20)
}

/// [`text_reader`] whose plain text is buffered `capacity` bytes at a time (decompressed text
/// 1 MiB at a time).
fn text_reader_with(
    path: &Path,
    source: &Path,
    format: Format,
    capacity: usize,
) -> Result<Box<dyn BufRead + Send>> {
    let capacity = match format {
        Format::Gzip | Format::Zstd => 1 << 20,
        _ => capacity,
    };
    Ok(Box::new(BufReader::with_capacity(
        capacity,
        text_bytes(path, source, format)?,
    )))
}

/// A text shard's bytes, decompressed (the compressed file read 1 MiB at a time), with no
/// buffer after the decompression: [`text_chunks`] reads its blocks straight from here (a
/// buffer in between would copy every byte once more).
fn text_bytes(path: &Path, source: &Path, format: Format) -> Result<Box<dyn Read + Send>> {
    let file = open_file(source)?;
    Ok(match format {
        Format::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(
            BufReader::with_capacity(1 << 20, file),
        )),
        Format::Zstd => Box::new(
            zstd::stream::read::Decoder::with_buffer(BufReader::with_capacity(1 << 20, file))
                .map_err(|e| bad(path, format!("is not a zstd stream ({e})")))?,
        ),
        _ => Box::new(file),
    })
}

/// Parses a binary header; `len` is the file's length in bytes.
fn parse_header(path: &Path, h: &[u8], len: u64) -> Result<(usize, usize, Option<Provenance>)> {
    if h.len() < HEADER_LEN {
        return Err(bad(
            path,
            format!(
                "truncated: {} bytes, shorter than the {HEADER_LEN}-byte header of a binary shard",
                h.len()
            ),
        ));
    }
    let u32_at = |o: usize| u32::from_le_bytes([h[o], h[o + 1], h[o + 2], h[o + 3]]);
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&h[o..o + 8]);
        u64::from_le_bytes(b)
    };
    if h[..8] != MAGIC {
        return Err(bad(
            path,
            "is not a binary release shard (bytes 0..8 are not the magic DPAUDREL); a .bin shard starts with the 48-byte header of docs/test.md, section \"Shard formats\" (or name the file .jsonl, .gz or .zst for JSON lines)",
        ));
    }
    let version = u32_at(8);
    if version != VERSION {
        return Err(bad(
            path,
            format!("binary format version {version}; allowed: {VERSION}"),
        ));
    }
    let dim = u32_at(12) as usize;
    if dim == 0 {
        return Err(bad(
            path,
            "header byte offset 12: dimension 0; allowed: ≥ 1",
        ));
    }
    let count = u64_at(16);
    let row_bytes = 8 * dim as u64;
    let expected = count
        .checked_mul(row_bytes)
        .and_then(|b| b.checked_add(HEADER_LEN as u64))
        .ok_or_else(|| bad(path, format!("header announces {count} releases of dimension {dim}, more than a file can hold")))?;
    if len != expected {
        let complete = (len.saturating_sub(HEADER_LEN as u64)) / row_bytes;
        return Err(bad(
            path,
            format!(
                "{} {len} bytes where its header announces {count} releases of dimension {dim} ({expected} bytes); the last complete release ends at byte offset {}",
                if len < expected {
                    "truncated:"
                } else {
                    "too long:"
                },
                HEADER_LEN as u64 + complete * row_bytes
            ),
        ));
    }
    let flags = u32_at(24);
    let side = match u32_at(28) {
        0 => None,
        1 => Some(ShardSide::A),
        2 => Some(ShardSide::B),
        other => {
            return Err(bad(
                path,
                format!("header byte offset 28: side {other}; allowed: 0, 1 (a) or 2 (b)"),
            ));
        }
    };
    let provenance = (flags & 1 == 1).then(|| Provenance {
        side: side.unwrap_or(ShardSide::A),
        seed: u64_at(32),
        shard_index: u64_at(40),
    });
    let rows = usize::try_from(count).map_err(|_| bad(path, "too many releases"))?;
    Ok((dim, rows, provenance))
}

/// The header of a binary shard of `rows` releases of dimension `dim`.
pub fn header(dim: usize, rows: usize, provenance: Option<Provenance>) -> Result<[u8; HEADER_LEN]> {
    let dim32 = u32::try_from(dim).map_err(|_| {
        Error::InvalidConfig(format!("dimension {dim} does not fit a shard header"))
    })?;
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&dim32.to_le_bytes());
    h[16..24].copy_from_slice(&(rows as u64).to_le_bytes());
    if let Some(p) = provenance {
        h[24..28].copy_from_slice(&1u32.to_le_bytes());
        h[28..32].copy_from_slice(&(p.side.index() as u32 + 1).to_le_bytes());
        h[32..40].copy_from_slice(&p.seed.to_le_bytes());
        h[40..48].copy_from_slice(&p.shard_index.to_le_bytes());
    }
    Ok(h)
}

impl Shard {
    /// Opens and sizes a shard: a binary header is read and checked against the file length;
    /// a text shard is parsed whole and kept in memory when it fits in what is left of
    /// [`TEXT_CACHE_BYTES`], else read once to count its lines (and its first line parsed for
    /// the dimension).
    pub fn open(path: &Path) -> Result<Shard> {
        // A shard is read more than once (sized, then streamed): a pipe, FIFO or process
        // substitution is read once, here, into a temporary file (its format from its first
        // bytes), which the later passes read.
        let meta =
            std::fs::metadata(path).map_err(|e| bad(path, format!("cannot be opened ({e})")))?;
        if meta.is_dir() {
            return Err(bad(path, "is a directory; allowed: a file of releases"));
        }
        if !meta.is_file() {
            let source = stored_stream(path)?;
            return Self::open_at(path, &source, Format::of(&source));
        }
        Self::open_at(path, path, Format::of(path))
    }

    /// A shard as a plan recorded it when it was opened (`audit test --plan-out`): not opened
    /// again; its releases are read from `path` when needed.
    pub(crate) fn recorded(
        path: &Path,
        dim: usize,
        rows: usize,
        provenance: Option<Provenance>,
    ) -> Shard {
        Shard {
            path: path.to_path_buf(),
            format: Format::of(path),
            dim,
            rows,
            provenance,
            source: path.to_path_buf(),
            memory: None,
            cached: None,
        }
    }

    /// Releases already in memory (the Python package's arrays) as a shard named `name`: read
    /// exactly as a `.bin` shard of the same releases would be (the same chunks, in the same
    /// order), so a test on them gives the record `audit test` gives on that file. Every value
    /// must be finite; an error names the first that is not.
    pub fn in_memory(name: &str, samples: std::sync::Arc<Samples>) -> Result<Shard> {
        let path = Path::new(name);
        if samples.n() == 0 {
            return Err(bad(path, "holds no releases"));
        }
        if let Some((row, col, v)) = samples.first_non_finite() {
            return Err(bad(
                path,
                format!("release {row}, coordinate {col} is {v}; releases must be finite"),
            ));
        }
        Ok(Shard {
            path: path.to_path_buf(),
            format: Format::Binary,
            dim: samples.dim(),
            rows: samples.n(),
            provenance: None,
            source: path.to_path_buf(),
            memory: Some(samples),
            cached: None,
        })
    }

    /// Whether the releases are read from the file named (not from the stored copy of a pipe
    /// or FIFO, which exists only while this process runs).
    pub fn is_regular_file(&self) -> bool {
        (self.memory.is_none() || self.cached.is_some()) && self.source == self.path
    }

    /// Whether any row can be read without the ones before it: a binary shard (from its byte
    /// offset) or releases in memory.
    fn seekable(&self) -> bool {
        self.format == Format::Binary || self.memory.is_some()
    }

    /// [`Shard::open`] of a regular file `source` in `format`, named `path` in errors.
    fn open_at(path: &Path, source: &Path, format: Format) -> Result<Shard> {
        let mut memory = (None, None);
        let (dim, rows, provenance) = if format == Format::Binary {
            let mut f = open_file(source)?;
            let len = f
                .metadata()
                .map_err(|e| bad(path, format!("cannot be read ({e})")))?
                .len();
            let mut h = Vec::with_capacity(HEADER_LEN);
            Read::by_ref(&mut f)
                .take(HEADER_LEN as u64)
                .read_to_end(&mut h)
                .map_err(|e| bad(path, format!("cannot be read ({e})")))?;
            parse_header(path, &h, len)?
        } else {
            let (dim, rows) = match crate::stages::time("open: read the text", || {
                parse_text(path, source, format)
            })? {
                Ok((parsed, share)) => {
                    let sized = (parsed.dim(), parsed.n());
                    memory = (
                        Some(std::sync::Arc::new(parsed)),
                        Some(std::sync::Arc::new(share)),
                    );
                    sized
                }
                Err(()) => {
                    crate::stages::time("count the lines", || count_lines(path, source, format))?
                }
            };
            let sidecar = sidecar_path(path);
            let provenance = if sidecar.exists() {
                let text = crate::sources::text::read_text(&sidecar)
                    .map_err(|e| bad(&sidecar, format!("cannot be read ({e})")))?;
                let meta: Sidecar = serde_json::from_str(&text)
                    .map_err(|e| bad(&sidecar, format!("is not a shard sidecar ({e})")))?;
                if meta.version != VERSION || meta.dim != dim || meta.count != rows {
                    return Err(bad(
                        path,
                        format!(
                            "holds {rows} releases of dimension {dim} but its sidecar {} records {} of dimension {} (version {}): the shard is truncated or not the one the sidecar describes",
                            sidecar.display(),
                            meta.count,
                            meta.dim,
                            meta.version
                        ),
                    ));
                }
                Some(meta.provenance)
            } else {
                None
            };
            (dim, rows, provenance)
        };
        if rows == 0 {
            return Err(bad(path, "holds no releases"));
        }
        Ok(Shard {
            path: path.to_path_buf(),
            format,
            dim,
            rows,
            provenance,
            source: source.to_path_buf(),
            memory: memory.0,
            cached: memory.1,
        })
    }

    /// The error a view's finite check gives for the first non-finite value of `head` (the
    /// first rows of this shard's releases in memory), counted in its block of [`CHUNK_ROWS`]
    /// as the check of a copy by blocks gives it.
    fn check_finite(&self, head: &Samples, transform: &Transform) -> Result<()> {
        let Some((row, col, v)) = head.first_non_finite() else {
            return Ok(());
        };
        let start = row / CHUNK_ROWS * CHUNK_ROWS;
        let e = transform.non_finite_error(row - start, col, v);
        Err(bad(
            &self.path,
            format!("releases {start}.. (counted from 0): {e}"),
        ))
    }

    /// [`ShardSet::head`] of a shard whose releases are in memory (`memory`, its own): its
    /// first `take` releases in the view `transform`.
    fn memory_head(&self, memory: &Samples, take: usize, transform: &Transform) -> Result<Samples> {
        if transform.keeps_values(self.dim) {
            // Releases in memory that the view keeps as they are: lent, not copied, after
            // the finite check `apply` makes (none for `none`), with the error the check
            // of a copy by blocks of CHUNK_ROWS gives (the row counted in its block).
            let head = memory.head(take);
            if !transform.is_identity() {
                self.check_finite(&head, transform)?;
            }
            return Ok(head);
        }
        // Releases in memory: blocks viewed in place and transformed in parallel, each
        // written into its rows of one array (no list of blocks joined afterwards, so the
        // view is held once, not twice, while it is built).
        let out_dim = transform.output_dim(self.dim);
        let mut flat = vec![0.0f64; take * out_dim];
        let written: Vec<Result<()>> = flat
            .par_chunks_mut((CHUNK_ROWS * out_dim).max(1))
            .enumerate()
            .map(|(k, dst)| {
                let start = k * CHUNK_ROWS;
                let rows = start..start + dst.len() / out_dim.max(1);
                let src = memory.values().slice(ndarray::s![rows.clone(), ..]);
                // The float-representation view is written in place (a view of its
                // own per block would be written, then copied).
                if let Some(done) =
                    crate::stages::time("the view (transform)", || transform.write_view(&src, dst))
                {
                    return done.map_err(|e| {
                        bad(
                            &self.path,
                            format!("releases {}.. (counted from 0): {e}", rows.start),
                        )
                    });
                }
                let view =
                    crate::stages::time("the view (transform)", || transform.apply_view(&src))
                        .map_err(|e| {
                            bad(
                                &self.path,
                                format!("releases {}.. (counted from 0): {e}", rows.start),
                            )
                        })?;
                if view.dim() != out_dim || view.n() != rows.len() {
                    return Err(bad(
                        &self.path,
                        format!(
                            "releases {}..: the view has {}×{} values, {}×{out_dim} expected",
                            rows.start,
                            view.n(),
                            view.dim(),
                            rows.len()
                        ),
                    ));
                }
                dst.iter_mut()
                    .zip(view.values().iter())
                    .for_each(|(d, &v)| *d = v);
                Ok(())
            })
            .collect();
        // The first error in row order, as a sequential read would give.
        written.into_iter().collect::<Result<()>>()?;
        Ok(Samples::from_flat(out_dim, flat)?)
    }

    /// [`ShardSet::head`] of a binary shard read from its file: its first `take` releases in
    /// the view `transform`.
    fn binary_head(&self, take: usize, transform: &Transform) -> Result<Samples> {
        // Segments read from their own byte offsets in parallel, each chunk copied into
        // its rows of one array as it is read (kept as chunks and joined afterwards,
        // the rows were held twice at the end: 16 MB more for the float layer's view
        // at 10^6 releases per side).
        let out_dim = transform.output_dim(self.dim).max(1);
        let mut flat = vec![0.0f64; take * out_dim];
        let read: Vec<Result<()>> = flat
            .par_chunks_mut(SEGMENT_ROWS * out_dim)
            .enumerate()
            .map(|(k, dst)| {
                let start = k * SEGMENT_ROWS;
                let rows = start..start + dst.len() / out_dim;
                let mut at = 0;
                self.binary_chunks(rows.clone(), transform, |first, chunk| {
                    let len = chunk.n() * chunk.dim();
                    if chunk.dim() != out_dim || at + len > dst.len() {
                        return Err(bad(
                            &self.path,
                            format!(
                                "releases {first}..: the view has {}×{} values, rows of {out_dim} expected",
                                chunk.n(),
                                chunk.dim()
                            ),
                        ));
                    }
                    dst[at..at + len]
                        .iter_mut()
                        .zip(chunk.values().iter())
                        .for_each(|(d, &v)| *d = v);
                    at += len;
                    Ok(true)
                })?;
                if at != dst.len() {
                    return Err(bad(
                        &self.path,
                        format!(
                            "releases {}..{}: {} values read, {} expected",
                            rows.start,
                            rows.end,
                            at,
                            dst.len()
                        ),
                    ));
                }
                Ok(())
            })
            .collect();
        // The first error in row order, as a sequential read would give.
        read.into_iter().collect::<Result<()>>()?;
        Ok(Samples::from_flat(out_dim, flat)?)
    }

    /// Reads every release in order, in chunks of at most [`CHUNK_ROWS`] (transformed by
    /// `transform`), calling `visit(first row of the chunk, chunk)`; stops early when `visit`
    /// returns `false`. Errors name the shard and the line (text) or byte offset (binary).
    pub fn for_each_chunk(
        &self,
        transform: &Transform,
        mut visit: impl FnMut(usize, &Samples) -> Result<bool>,
    ) -> Result<()> {
        if self.seekable() {
            return self.binary_chunks(0..self.rows, transform, visit);
        }
        let path = &self.path;
        let mut row = 0usize;
        let mut emit = |chunk: Samples, row: &mut usize| -> Result<bool> {
            let first = *row;
            *row += chunk.n();
            visit(first, &view_of(path, transform, first, chunk)?)
        };
        let mut stopped = false;
        text_chunks(path, &self.source, self.format, self.dim, |chunk, _| {
            let go = emit(chunk, &mut row)?;
            stopped = !go;
            Ok(go)
        })?;
        if !stopped && row != self.rows {
            return Err(bad(
                path,
                format!(
                    "held {} releases when opened, {row} now (changed while read)",
                    self.rows
                ),
            ));
        }
        Ok(())
    }

    /// The releases `rows` of a binary shard, read from their byte offset (so several threads
    /// can read one shard in parallel), in chunks of at most [`CHUNK_ROWS`], as
    /// [`Shard::for_each_chunk`] (`visit` gets the chunk's first row counted from the shard's
    /// start).
    fn binary_chunks(
        &self,
        rows: std::ops::Range<usize>,
        transform: &Transform,
        mut visit: impl FnMut(usize, &Samples) -> Result<bool>,
    ) -> Result<()> {
        let path = &self.path;
        let end = rows.end.min(self.rows);
        let mut row = rows.start.min(end);
        if let Some(memory) = &self.memory {
            while row < end {
                let n = (end - row).min(CHUNK_ROWS);
                let rows = memory.values().slice(ndarray::s![row..row + n, ..]);
                let first = row;
                row += n;
                // Transformed straight from the releases in memory (no copy of them first),
                // unless the transform keeps them as they are.
                let view = if transform.keeps_values(self.dim) {
                    view_of(path, transform, first, Samples::new(rows.to_owned())?)?
                } else {
                    crate::stages::time("the view (transform)", || transform.apply_view(&rows))
                        .map_err(|e| {
                            bad(path, format!("releases {first}.. (counted from 0): {e}"))
                        })?
                };
                if !visit(first, &view)? {
                    return Ok(());
                }
            }
            return Ok(());
        }
        let mut emit = |chunk: Samples, row: &mut usize| -> Result<bool> {
            let first = *row;
            *row += chunk.n();
            visit(first, &view_of(path, transform, first, chunk)?)
        };
        let mut f = BufReader::with_capacity(1 << 20, open_file(&self.source)?);
        let start = (HEADER_LEN + row * 8 * self.dim) as u64;
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(start)).map_err(|e| {
            bad(
                path,
                format!("cannot be read from byte offset {start} ({e})"),
            )
        })?;
        let mut bytes = vec![0u8; CHUNK_ROWS.min(end - row) * 8 * self.dim];
        while row < end {
            let n = (end - row).min(CHUNK_ROWS);
            let buf = &mut bytes[..n * 8 * self.dim];
            let offset = HEADER_LEN + row * 8 * self.dim;
            f.read_exact(buf).map_err(|e| {
                bad(
                    path,
                    format!("truncated or unreadable at byte offset ≥ {offset} ({e})"),
                )
            })?;
            let flat: Vec<f64> = buf
                .chunks_exact(8)
                .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .collect();
            if let Some(k) = flat.iter().position(|v| !v.is_finite()) {
                return Err(bad(
                    path,
                    format!(
                        "byte offset {}: release {}, coordinate {} is {}; releases must be finite",
                        offset + 8 * k,
                        row + k / self.dim,
                        k % self.dim,
                        flat[k]
                    ),
                ));
            }
            let chunk = Samples::from_flat(self.dim, flat)?;
            if !emit(chunk, &mut row)? {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// Every release of a text shard (`source`, in `format`; named `path` in errors) of dimension
/// `dim`, in order, in the chunks its blocks parse to, each handed to `visit` with the bytes of
/// text it was parsed from; stops early when `visit` returns `false`.
///
/// Text is read in blocks of about [`TEXT_BLOCK`] bytes ending at a line break, up to one block
/// per worker thread at a time; the blocks are checked (UTF-8) and parsed in parallel (rayon)
/// and handed on in order: parsing, not reading, is what text costs.
fn text_chunks(
    path: &Path,
    source: &Path,
    format: Format,
    dim: usize,
    mut visit: impl FnMut(Samples, usize) -> Result<bool>,
) -> Result<()> {
    let mut reader = text_bytes(path, source, format)?;
    let batch = rayon::current_num_threads().clamp(1, 8);
    let mut carry = Vec::new();
    let mut lines = 0usize;
    // The blocks' buffers are used again for the next batch: fresh ones would be fresh pages,
    // each faulted in by the kernel (see `TEXT_BLOCK`).
    let mut spare: Vec<Vec<u8>> = Vec::with_capacity(batch);
    loop {
        let mut blocks: Vec<(Vec<u8>, usize)> = Vec::with_capacity(batch);
        while blocks.len() < batch {
            let buffer = spare.pop().unwrap_or_default();
            let block = next_block(&mut *reader, &mut carry, buffer).map_err(|(e, k)| {
                bad(
                    path,
                    format!("unreadable or corrupt in line {} ({e})", lines + k + 1),
                )
            })?;
            let Some(block) = block else { break };
            let breaks = memchr::memchr_iter(b'\n', &block).count();
            let first = lines;
            lines += breaks + usize::from(block.last() != Some(&b'\n'));
            blocks.push((block, first));
        }
        if blocks.is_empty() {
            return Ok(());
        }
        let parsed: Vec<(std::result::Result<Samples, String>, usize)> = blocks
            .par_iter()
            .map(|(block, first)| {
                let text = std::str::from_utf8(block).map_err(|e| {
                    let line = first
                        + block[..e.valid_up_to()]
                            .iter()
                            .filter(|&&b| b == b'\n')
                            .count()
                        + 1;
                    format!("line {line} is not UTF-8 text")
                });
                let chunk = text.and_then(|text| {
                    crate::stages::time("parse text", || {
                        crate::sources::exec::parse_chunk(text, *first, Some(dim))
                    })
                });
                (chunk, block.len())
            })
            .collect();
        spare.extend(blocks.into_iter().map(|(block, _)| block));
        for (chunk, bytes) in parsed {
            if !visit(chunk.map_err(|e| bad(path, e))?, bytes)? {
                return Ok(());
            }
        }
    }
}

/// A text shard parsed whole into memory, with its share of [`TEXT_CACHE_BYTES`]: `Ok(Err(()))`
/// when its releases do not fit in what is left of the budget (the shard is then streamed).
/// The dimension is that of the first line, as [`count_lines`] reads it; every line is checked
/// against it.
#[allow(clippy::type_complexity)]
fn parse_text(
    path: &Path,
    source: &Path,
    format: Format,
) -> Result<std::result::Result<(Samples, Cached), ()>> {
    let dim = first_line_dim(path, source, format)?;
    let Some(mut share) = Cached::take(0) else {
        return Ok(Err(()));
    };
    // The releases go into one flat array, reserved from the first block's bytes per release
    // and the file's length (plain text), so that it is allocated about once: no second copy
    // of the shard is held while it is read.
    let file_len = match format {
        Format::Lines => std::fs::metadata(source).map(|m| m.len()).unwrap_or(0),
        _ => 0,
    };
    let mut flat: Vec<f64> = Vec::new();
    let mut fits = true;
    text_chunks(path, source, format, dim, |chunk, bytes| {
        fits = share.grow(chunk.n() * chunk.dim() * 8);
        if !fits {
            return Ok(false);
        }
        if flat.is_empty() && file_len > 0 {
            let per_release = (bytes as f64 / chunk.n().max(1) as f64).max(1.0);
            let rows = (file_len as f64 / per_release * 1.02) as usize + chunk.n();
            let values = rows.saturating_mul(dim);
            // A shard clearly too large for what is left of the budget (by this estimate, 10 %
            // to spare) is streamed at once, without parsing the part that would fit.
            match Cached::take(values.saturating_mul(8) / 10 * 9) {
                Some(probe) => drop(probe),
                None => {
                    fits = false;
                    return Ok(false);
                }
            }
            flat.reserve(values.min(TEXT_CACHE_BYTES / 8));
        }
        match chunk.values().as_slice() {
            Some(v) => flat.extend_from_slice(v),
            None => flat.extend(chunk.values().iter()),
        }
        Ok(true)
    })?;
    if !fits {
        return Ok(Err(()));
    }
    // A reservation a few per cent too large is kept (shrinking it would copy the array).
    if flat.capacity() > flat.len() + flat.len() / 8 {
        flat.shrink_to_fit();
    }
    Ok(Ok((Samples::from_flat(dim, flat)?, share)))
}

/// The dimension of a text shard's first release (the errors of an empty or unreadable file
/// name it).
fn first_line_dim(path: &Path, source: &Path, format: Format) -> Result<usize> {
    // A small buffer: only the first line is read (a longer one is read in more steps).
    Ok(first_line(path, source, format, 1 << 13)?.2)
}

/// A text shard's reader (plain text buffered `capacity` bytes at a time) after its first line,
/// that line, and the dimension of its release (the errors of an empty or unreadable file name
/// it).
fn first_line(
    path: &Path,
    source: &Path,
    format: Format,
    capacity: usize,
) -> Result<(Box<dyn BufRead + Send>, String, usize)> {
    let mut reader = text_reader_with(path, source, format, capacity)?;
    let mut first = String::new();
    reader
        .read_line(&mut first)
        .map_err(|e| bad(path, format!("unreadable or corrupt in line 1 ({e})")))?;
    if first.is_empty() {
        return Err(bad(path, "holds no releases (empty file)"));
    }
    let dim = crate::sources::exec::parse_chunk(&first, 0, None)
        .map_err(|e| bad(path, e))?
        .dim();
    Ok((reader, first, dim))
}

/// Bytes of text parsed at a time by one thread (a block ends at a line break, so a longer
/// line makes a longer block). Small blocks, used again batch after batch, are memory the
/// kernel has already handed out; 1 MiB blocks were fresh pages, faulted in one by one
/// (hockey-stick, both layers, interleaved medians: 10^5 per side 14.55 → 13.7 ms, 10^6
/// 97.4 → 91.8 ms; 256 KiB was between the two).
const TEXT_BLOCK: usize = 1 << 16;

/// The next block of text, in `block` (its earlier contents dropped): at least [`TEXT_BLOCK`]
/// bytes ending at a line break (what follows it is kept in `carry` for the next block), or the
/// rest of the input at its end; `None` when nothing is left. The bytes are read straight into
/// the block. An error comes with the line breaks read before it in this block.
fn next_block(
    reader: &mut dyn Read,
    carry: &mut Vec<u8>,
    mut block: Vec<u8>,
) -> std::result::Result<Option<Vec<u8>>, (std::io::Error, usize)> {
    block.clear();
    block.append(carry);
    loop {
        let old = block.len();
        let want = TEXT_BLOCK.saturating_sub(old).max(1 << 16);
        block.reserve(want);
        // `read_to_end` reads into the spare capacity (nothing zeroed first) and retries
        // interrupted reads; through `take` it stops after `want` bytes.
        let took = reader
            .take(want as u64)
            .read_to_end(&mut block)
            .map_err(|e| (e, block.iter().filter(|&&b| b == b'\n').count()))?;
        if took == 0 {
            return Ok((!block.is_empty()).then_some(block));
        }
        if block.len() >= TEXT_BLOCK
            && let Some(k) = memchr::memrchr(b'\n', &block[old..])
        {
            carry.extend_from_slice(&block[old + k + 1..]);
            block.truncate(old + k + 1);
            return Ok(Some(block));
        }
    }
}

/// (dimension, lines) of a text shard: every line counted (line breaks, plus a last line
/// without one), the first parsed for the dimension.
fn count_lines(path: &Path, source: &Path, format: Format) -> Result<(usize, usize)> {
    let (mut reader, first, dim) = first_line(path, source, format, 1 << 20)?;
    let mut breaks = usize::from(first.ends_with('\n'));
    let mut bytes = first.len() as u64;
    let mut last = *first.as_bytes().last().unwrap_or(&b'\n');
    loop {
        let buf = reader.fill_buf().map_err(|e| {
            bad(
                path,
                format!(
                    "unreadable or corrupt after {bytes} bytes of text (in line {}): {e}",
                    breaks + 1
                ),
            )
        })?;
        let Some(&end) = buf.last() else { break };
        breaks += memchr::memchr_iter(b'\n', buf).count();
        bytes += buf.len() as u64;
        last = end;
        let n = buf.len();
        reader.consume(n);
    }
    Ok((dim, breaks + usize::from(last != b'\n')))
}

/// The shards of one side, in order, with each shard's first row.
#[derive(Clone, Debug)]
pub struct ShardSet {
    /// The shards.
    pub shards: Vec<Shard>,
    /// Row of each shard's first release in the side's order.
    pub offsets: Vec<usize>,
    /// Releases in all.
    pub rows: usize,
}

impl ShardSet {
    /// The shards of one side in the order given.
    pub(crate) fn new(shards: Vec<Shard>) -> Self {
        let mut offsets = Vec::with_capacity(shards.len());
        let mut rows = 0;
        for s in &shards {
            offsets.push(rows);
            rows += s.rows;
        }
        Self {
            shards,
            offsets,
            rows,
        }
    }

    /// The shard names joined by " + ".
    pub fn names(&self) -> String {
        self.shards
            .iter()
            .map(|s| s.path.display().to_string())
            .collect::<Vec<_>>()
            .join(" + ")
    }

    /// [`ShardSet::head`] as training rows: the float-representation view of releases held in
    /// memory is packed ([`PackedRows`]: the same values, an eighth of the memory), any other
    /// view is [`ShardSet::head`]'s. The same rows and the same errors.
    pub fn head_rows(&self, n: usize, transform: &Transform) -> Result<TrainRows> {
        if matches!(transform, Transform::FloatRepr)
            && let Some(packed) = self.packed_head(n, transform)?
        {
            return Ok(TrainRows::Packed(packed));
        }
        Ok(TrainRows::Values(self.head(n, transform)?))
    }

    /// The shards the first `n` rows come from, in order, each with how many of its rows are
    /// taken (all of them but in the last) and how many rows the shards before it gave.
    fn takes(&self, n: usize) -> impl Iterator<Item = (&Shard, usize, usize)> {
        let mut got = 0usize;
        self.shards.iter().map_while(move |s| {
            let before = got;
            let take = (n - got).min(s.rows);
            got += take;
            (before < n).then_some((s, take, before))
        })
    }

    /// The first `n` rows' float-representation view, packed, when every shard they come from
    /// is held in memory (`None` otherwise: [`ShardSet::head`] reads them).
    fn packed_head(&self, n: usize, transform: &Transform) -> Result<Option<PackedRows>> {
        let mut parts = Vec::new();
        for (s, take, _) in self.takes(n) {
            let Some(memory) = &s.memory else {
                return Ok(None);
            };
            let head = memory.head(take);
            s.check_finite(&head, transform)?;
            let packed =
                crate::stages::time("the view (transform)", || PackedRows::float_repr(&head));
            let Some(packed) = packed else {
                return Ok(None);
            };
            parts.push(packed);
        }
        if parts.len() == 1 {
            return Ok(parts.pop());
        }
        Ok(PackedRows::concat(parts))
    }

    /// The first `n` releases (all if `n ≥ rows`), in memory.
    pub fn head(&self, n: usize, transform: &Transform) -> Result<Samples> {
        let mut parts = Vec::new();
        for (s, take, got) in self.takes(n) {
            if let Some(memory) = &s.memory {
                parts.push(s.memory_head(memory, take, transform)?);
                continue;
            }
            if s.seekable() {
                parts.push(s.binary_head(take, transform)?);
                continue;
            }
            // The rows are copied into one array as they are read (not kept as chunks and
            // joined afterwards, which held the training rows twice at the end).
            let out_dim = transform.output_dim(s.dim);
            let mut flat: Vec<f64> = Vec::with_capacity(take * out_dim);
            let mut taken = 0usize;
            s.for_each_chunk(transform, |_, chunk| {
                let part = chunk.n().min(take - taken);
                let rows = chunk.values().slice(ndarray::s![..part, ..]);
                flat.extend(rows.iter().copied());
                taken += part;
                // A shard wholly in the first n rows is read (and checked) to its end here; one
                // that goes on past them is read again, whole, by the held-out pass.
                Ok(got + taken < n)
            })?;
            if let Some(dim) = flat.len().checked_div(taken) {
                parts.push(Samples::from_flat(dim, flat)?);
            }
        }
        if parts.len() == 1 {
            // One part (one shard, or the first n rows of the first): it is the result, so it
            // is not copied.
            return Ok(parts.swap_remove(0));
        }
        Ok(Samples::concat(&parts)?)
    }
}

/// Opens the shards of both sides (in parallel) and checks them together: one dimension, no
/// file twice, no recorded seed twice.
pub fn open_sides(a: &[PathBuf], b: &[PathBuf]) -> Result<(ShardSet, ShardSet)> {
    if a.is_empty() || b.is_empty() {
        return Err(Error::InvalidConfig(
            "audit test needs --samples-a FILE and --samples-b FILE".into(),
        ));
    }
    let open = |paths: &[PathBuf]| -> Result<Vec<Shard>> {
        paths.par_iter().map(|p| Shard::open(p)).collect()
    };
    let (sa, sb) = rayon::join(|| open(a), || open(b));
    let (sa, sb) = (sa?, sb?);
    let all: Vec<&Shard> = sa.iter().chain(&sb).collect();
    let first = all[0];
    if let Some(other) = all.iter().find(|s| s.dim != first.dim) {
        return Err(Error::InvalidSamples(format!(
            "shards of different dimensions: {} has releases of dimension {}, {} of dimension {}",
            first.path.display(),
            first.dim,
            other.path.display(),
            other.dim
        )));
    }
    let mut seen: std::collections::HashMap<(bool, PathBuf), &Path> =
        std::collections::HashMap::new();
    let mut seeds: std::collections::HashMap<u64, &Path> = std::collections::HashMap::new();
    for (k, s) in all.iter().enumerate() {
        // The same file twice on one side (a slip of a shell glob) would count its releases
        // twice; on both sides it is the caller's choice (e.g. a null test of a file).
        let key = std::fs::canonicalize(&s.path).unwrap_or_else(|_| s.path.clone());
        if let Some(prev) = seen.insert((k < sa.len(), key), &s.path) {
            return Err(Error::InvalidSamples(format!(
                "shard {} is given twice on one side (as {} and {}): its releases would count twice",
                s.path.display(),
                prev.display(),
                s.path.display()
            )));
        }
        // A shard drawn on the other dataset (a wrong glob: `a.*` for both sides) would make a
        // null test of one distribution against itself pass: refused, naming both sides.
        let given = if k < sa.len() {
            ShardSide::A
        } else {
            ShardSide::B
        };
        if let Some(p) = s.provenance
            && p.side != given
        {
            let flag = |side: ShardSide| match side {
                ShardSide::A => "--samples-a (the first dataset D, `audit sample --side a`)",
                ShardSide::B => "--samples-b (the second dataset D', `audit sample --side b`)",
            };
            return Err(Error::InvalidSamples(format!(
                "shard {} records that it was drawn on side {} but is given as {}; allowed: each shard on the side it was drawn on, i.e. as {}",
                s.path.display(),
                if p.side == ShardSide::A { "a" } else { "b" },
                flag(given),
                flag(p.side)
            )));
        }
        if let Some(p) = s.provenance
            && let Some(prev) = seeds.insert(p.seed, &s.path)
        {
            return Err(Error::InvalidSamples(format!(
                "shards {} and {} were drawn from the same seed {}: their releases are not independent (every bound assumes they are); draw one again with another --shard-index",
                prev.display(),
                s.path.display(),
                p.seed
            )));
        }
    }
    Ok((ShardSet::new(sa), ShardSet::new(sb)))
}

/// Both sides of a test from releases in memory, each one shard named as given (see
/// [`Shard::in_memory`]): the same dimension on both sides.
pub fn memory_sides(
    a: (&str, std::sync::Arc<Samples>),
    b: (&str, std::sync::Arc<Samples>),
) -> Result<(ShardSet, ShardSet)> {
    let (sa, sb) = (Shard::in_memory(a.0, a.1)?, Shard::in_memory(b.0, b.1)?);
    if sa.dim != sb.dim {
        return Err(Error::InvalidSamples(format!(
            "sides of different dimensions: {} has releases of dimension {}, {} of dimension {}; allowed: the same dimension on both sides",
            sa.path.display(),
            sa.dim,
            sb.path.display(),
            sb.dim
        )));
    }
    Ok((ShardSet::new(vec![sa]), ShardSet::new(vec![sb])))
}

/// Both sides split for a streamed test: the first `train` rows of each side in memory, the
/// rest read from the shards when counted ([`HeldOut`]).
pub struct Streamed {
    /// First side's shards.
    pub a: ShardSet,
    /// Second side's shards.
    pub b: ShardSet,
    /// Training rows of each side (read into memory, not counted).
    pub train: (usize, usize),
    /// Post-processing applied to every chunk.
    pub transform: Transform,
}

impl HeldOut for Streamed {
    fn rows(&self, second: bool) -> usize {
        if second {
            self.b.rows - self.train.1
        } else {
            self.a.rows - self.train.0
        }
    }

    fn count(&self, second: bool, limit: usize, events: &HeldOutEvents) -> Result<(u64, u64)> {
        let (set, start) = if second {
            (&self.b, self.train.1)
        } else {
            (&self.a, self.train.0)
        };
        count_rows(set, start, start + limit, &self.transform, events)
    }

    fn count_many(
        &self,
        second: bool,
        queries: &[(usize, &HeldOutEvents)],
    ) -> Result<Vec<(u64, u64)>> {
        let (set, start) = if second {
            (&self.b, self.train.1)
        } else {
            (&self.a, self.train.0)
        };
        let ends: Vec<(usize, &HeldOutEvents)> = queries
            .iter()
            .map(|&(limit, events)| (start + limit, events))
            .collect();
        count_rows_many(set, start, &ends, &self.transform)
    }
}

/// The view `transform` gives of the releases `chunk` of the shard `path` (their first row
/// `first`): the releases themselves for `none`, else the transform's, its error naming the
/// shard and the rows.
fn view_of(path: &Path, transform: &Transform, first: usize, chunk: Samples) -> Result<Samples> {
    if transform.is_identity() {
        return Ok(chunk);
    }
    crate::stages::time("the view (transform)", || transform.apply_owned(chunk))
        .map_err(|e| bad(path, format!("releases {first}.. (counted from 0): {e}")))
}

/// Rows of a binary shard read by one parallel task when held-out rows are counted.
pub const SEGMENT_ROWS: usize = 1 << 18;

/// Among the rows `start..end` of a side (in its order: shards in the order given, rows in file
/// order), how many are in the first event of `events` and how many in the second, after
/// `transform`. Every shard holding a row at or after `start` is read to its end (and so
/// checked); the others were read for the training split. The work is split into tasks run in
/// parallel (rayon): a binary shard into segments of [`SEGMENT_ROWS`] rows read from their own
/// byte offset, a text shard whole (its blocks are parsed in parallel, its rows counted in
/// parallel). The counts are integers, summed exactly, so the result does not depend on the
/// number of threads.
pub(crate) fn count_rows(
    set: &ShardSet,
    start: usize,
    end: usize,
    transform: &Transform,
    events: &HeldOutEvents,
) -> Result<(u64, u64)> {
    let counts = count_rows_many(set, start, &[(end, events)], transform)?;
    Ok(counts.first().copied().unwrap_or((0, 0)))
}

/// [`count_rows`] of each (end, events) of `queries` (rows `start..end` each), in one pass over
/// the rows: each chunk is read and transformed once and counted for every query.
pub(crate) fn count_rows_many(
    set: &ShardSet,
    start: usize,
    queries: &[(usize, &HeldOutEvents)],
    transform: &Transform,
) -> Result<Vec<(u64, u64)>> {
    // (first row of the shard in the side's order, the shard, rows of the shard to read).
    let mut work: Vec<(usize, &Shard, std::ops::Range<usize>)> = Vec::new();
    for (&off, shard) in set.offsets.iter().zip(&set.shards) {
        if off + shard.rows <= start {
            continue;
        }
        let from = start.saturating_sub(off);
        if shard.seekable() {
            let mut r = from;
            while r < shard.rows {
                let to = (r + SEGMENT_ROWS).min(shard.rows);
                work.push((off, shard, r..to));
                r = to;
            }
        } else {
            work.push((off, shard, 0..shard.rows));
        }
    }
    let zero = vec![(0u64, 0u64); queries.len()];
    // The events prepared once for every chunk of every shard (distinct scores, atom tables
    // through shared packed indices).
    let events: Vec<&HeldOutEvents> = queries.iter().map(|q| q.1).collect();
    let prepared = crate::testers::PreparedEvents::new(&events);
    work.par_iter()
        .map(|(off, shard, rows)| -> Result<Vec<(u64, u64)>> {
            let mut counts = zero.clone();
            // The float-representation view counted without writing it out, where the events
            // allow it (`PreparedEvents::counts_through`): the chunk is read as it is, checked
            // finite as the view would check it, and each row's view built where it is read.
            let viewed = prepared.counts_through(transform, shard.dim);
            let mut visit = |first: usize, chunk: &Samples| -> Result<bool> {
                let lo = start.saturating_sub(off + first).min(chunk.n());
                let ranges: Vec<std::ops::Range<usize>> = queries
                    .iter()
                    .map(|&(end, _)| lo..end.saturating_sub(off + first).min(chunk.n()).max(lo))
                    .collect();
                let got = if viewed {
                    if let Some((i, j, v)) = chunk.first_non_finite() {
                        let e = transform.non_finite_error(i, j, v);
                        return Err(bad(
                            &shard.path,
                            format!("releases {first}.. (counted from 0): {e}"),
                        ));
                    }
                    crate::testers::count_chunk_many_viewed(chunk, &ranges, &prepared)
                } else {
                    crate::testers::count_chunk_many(chunk, &ranges, &prepared)
                };
                for (c, (x, y)) in counts.iter_mut().zip(got) {
                    c.0 += x;
                    c.1 += y;
                }
                Ok(true)
            };
            let read_as = if viewed { &Transform::None } else { transform };
            if shard.seekable() {
                shard.binary_chunks(rows.clone(), read_as, &mut visit)?;
            } else {
                shard.for_each_chunk(read_as, &mut visit)?;
            }
            Ok(counts)
        })
        .try_reduce(|| zero.clone(), |a, b| Ok(crate::testers::add_counts(a, b)))
}

/// One view of a plan counted on one shard: the view's transform, the first held-out row of the
/// shard's side (its training rows), and per query the end of its rows (training rows + the
/// query's limit) and its events; the shard's rows in the side's order start at `offset`.
pub(crate) struct ViewQueries<'a> {
    /// The view's post-processing.
    pub transform: Transform,
    /// First held-out row of the side.
    pub start: usize,
    /// (end row, events) of each query on this side.
    pub queries: Vec<(usize, &'a HeldOutEvents)>,
}

/// Every query of every view counted on one shard (`audit test --count-shard`), in one pass
/// over its releases (all of them read and checked): for each view and query, the two event
/// counts among the shard's rows in `start..end` (side order; the shard's first row is
/// `offset`). Binary shards are read in segments of [`SEGMENT_ROWS`] in parallel, text shards
/// in parallel blocks; integer counts, so the result does not depend on the threads.
pub(crate) fn count_shard_views(
    shard: &Shard,
    offset: usize,
    views: &[ViewQueries<'_>],
) -> Result<Vec<Vec<(u64, u64)>>> {
    let zero: Vec<Vec<(u64, u64)>> = views
        .iter()
        .map(|v| vec![(0, 0); v.queries.len()])
        .collect();
    let visit_into =
        |counts: &mut Vec<Vec<(u64, u64)>>, first: usize, chunk: &Samples| -> Result<bool> {
            for (v, out) in views.iter().zip(counts.iter_mut()) {
                let lo = v.start.saturating_sub(offset + first).min(chunk.n());
                if v.queries
                    .iter()
                    .all(|(end, _)| end.saturating_sub(offset + first) <= lo)
                {
                    continue;
                }
                let seen = if v.transform.is_identity() {
                    chunk.clone()
                } else {
                    v.transform.apply(chunk).map_err(|e| {
                        bad(
                            &shard.path,
                            format!("releases {first}.. (counted from 0): {e}"),
                        )
                    })?
                };
                for ((end, events), c) in v.queries.iter().zip(out.iter_mut()) {
                    let hi = end.saturating_sub(offset + first).min(chunk.n());
                    let (x, y) = crate::testers::count_chunk(&seen, lo..hi.max(lo), events);
                    c.0 += x;
                    c.1 += y;
                }
            }
            Ok(true)
        };
    let add = |a: Vec<Vec<(u64, u64)>>, b: Vec<Vec<(u64, u64)>>| -> Vec<Vec<(u64, u64)>> {
        a.into_iter()
            .zip(b)
            .map(|(x, y)| crate::testers::add_counts(x, y))
            .collect()
    };
    if !shard.seekable() {
        let mut counts = zero;
        shard.for_each_chunk(&Transform::None, |first, chunk| {
            visit_into(&mut counts, first, chunk)
        })?;
        return Ok(counts);
    }
    let segments: Vec<std::ops::Range<usize>> = (0..shard.rows)
        .step_by(SEGMENT_ROWS)
        .map(|r| r..(r + SEGMENT_ROWS).min(shard.rows))
        .collect();
    segments
        .par_iter()
        .map(|rows| -> Result<Vec<Vec<(u64, u64)>>> {
            let mut counts = zero.clone();
            shard.binary_chunks(rows.clone(), &Transform::None, |first, chunk| {
                visit_into(&mut counts, first, chunk)
            })?;
            Ok(counts)
        })
        .try_reduce(|| zero.clone(), |a, b| Ok(add(a, b)))
}

/// Writes `samples` as a shard at `path` in the format its name asks for (a sidecar beside a
/// text shard when `provenance` is given); see [`ShardWriter`].
pub fn write(path: &Path, samples: &Samples, provenance: Option<Provenance>) -> Result<()> {
    let mut w = ShardWriter::create(path, samples.dim(), samples.n(), provenance)?;
    w.append(samples)?;
    w.finish()
}

/// Where a [`ShardWriter`]'s bytes go.
enum Sink {
    Plain(std::io::BufWriter<File>),
    Gzip(flate2::write::GzEncoder<std::io::BufWriter<File>>),
    Zstd(zstd::stream::write::Encoder<'static, std::io::BufWriter<File>>),
}

impl Sink {
    fn out(&mut self) -> &mut dyn Write {
        match self {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w,
            Sink::Zstd(w) => w,
        }
    }
}

/// A shard written in pieces: `rows` releases of dimension `dim` announced up front (the binary
/// header holds the count), appended in order, then [`ShardWriter::finish`]. The bytes go to
/// `PATH.partial`, renamed to `PATH` only once all the announced releases are written and
/// flushed, so a writer that fails or is killed leaves no shard.
pub struct ShardWriter {
    path: PathBuf,
    partial: PathBuf,
    format: Format,
    sink: Sink,
    dim: usize,
    rows: usize,
    written: usize,
    provenance: Option<Provenance>,
    buf: Vec<u8>,
}

impl ShardWriter {
    /// Starts the shard `path` (format from its name).
    pub fn create(
        path: &Path,
        dim: usize,
        rows: usize,
        provenance: Option<Provenance>,
    ) -> Result<Self> {
        let format = Format::of(path);
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        // A file that cannot be created is an I/O error (Python's `OSError`), naming the path.
        let io = |source: std::io::Error| Error::Io {
            context: format!(
                "{}: cannot be written; allowed: a path in a writable directory",
                path.display()
            ),
            source,
        };
        let file = std::io::BufWriter::with_capacity(1 << 20, File::create(&partial).map_err(io)?);
        let mut sink = match format {
            Format::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(
                file,
                flate2::Compression::default(),
            )),
            Format::Zstd => Sink::Zstd(zstd::stream::write::Encoder::new(file, 3).map_err(io)?),
            _ => Sink::Plain(file),
        };
        if format == Format::Binary {
            sink.out()
                .write_all(&header(dim, rows, provenance)?)
                .map_err(io)?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            partial,
            format,
            sink,
            dim,
            rows,
            written: 0,
            provenance,
            buf: Vec::with_capacity(1 << 20),
        })
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::InvalidConfig(format!("{}: cannot be written ({e})", self.path.display()))
    }

    /// Appends releases (of the announced dimension, at most the announced count in all).
    pub fn append(&mut self, samples: &Samples) -> Result<()> {
        if samples.dim() != self.dim || self.written + samples.n() > self.rows {
            return Err(Error::InvalidSamples(format!(
                "{}: {} releases of dimension {} appended after {} to a shard of {} releases of dimension {}",
                self.path.display(),
                samples.n(),
                samples.dim(),
                self.written,
                self.rows,
                self.dim
            )));
        }
        self.buf.clear();
        write_body(&mut self.buf, self.format, samples)
            .map_err(|e| Error::InvalidConfig(e.to_string()))?;
        let r = self.sink.out().write_all(&self.buf);
        r.map_err(|e| self.io(e))?;
        self.written += samples.n();
        Ok(())
    }

    /// Flushes, writes the sidecar of a text shard with provenance, and renames the shard into
    /// place. An error if fewer releases were appended than announced.
    pub fn finish(self) -> Result<()> {
        if self.written != self.rows {
            return Err(Error::InvalidSamples(format!(
                "{}: {} releases written of the {} announced; no shard left",
                self.path.display(),
                self.written,
                self.rows
            )));
        }
        let io = |e: std::io::Error| {
            Error::InvalidConfig(format!("{}: cannot be written ({e})", self.path.display()))
        };
        let file = match self.sink {
            Sink::Plain(w) => w,
            Sink::Gzip(w) => w.finish().map_err(io)?,
            Sink::Zstd(w) => w.finish().map_err(io)?,
        };
        file.into_inner()
            .map_err(|e| io(e.into_error()))?
            .sync_all()
            .map_err(io)?;
        if self.format != Format::Binary
            && let Some(p) = self.provenance
        {
            let meta = Sidecar {
                version: VERSION,
                dim: self.dim,
                count: self.rows,
                provenance: p,
            };
            let text =
                serde_json::to_string(&meta).map_err(|e| Error::InvalidConfig(e.to_string()))?;
            std::fs::write(sidecar_path(&self.path), text + "\n").map_err(io)?;
        }
        std::fs::rename(&self.partial, &self.path).map_err(io)?;
        Ok(())
    }
}

/// The releases in `format` (the header of a binary shard is written separately).
fn write_body(out: &mut Vec<u8>, format: Format, samples: &Samples) -> std::io::Result<()> {
    for row in samples.values().outer_iter() {
        if format == Format::Binary {
            for v in row {
                out.extend_from_slice(&v.to_le_bytes());
            }
        } else {
            // Shortest round-trip decimal (serde_json's float printing): read back bit-exactly.
            let text = if row.len() == 1 {
                serde_json::to_string(&row[0])
            } else {
                serde_json::to_string(&row.to_vec())
            }
            .map_err(std::io::Error::other)?;
            out.extend_from_slice(text.as_bytes());
            out.push(b'\n');
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first rows of a binary shard, read by segments in parallel into one array, are
    /// the view of the releases written, in every view, for heads inside the first segment,
    /// at its edge, across segments and past the end.
    #[test]
    fn binary_head_is_the_view_of_the_releases() {
        let dir = std::env::temp_dir().join(format!("dp-audit-bin-head-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch folder");
        let rows = SEGMENT_ROWS + CHUNK_ROWS + 11;
        let values: Vec<f64> = (0..rows).map(|i| (i as f64 * 0.37).sin() * 1e3).collect();
        let samples = Samples::from_column(values);
        let path = dir.join("s.bin");
        write(&path, &samples, None).expect("shard written");
        let set = ShardSet::new(vec![Shard::open(&path).expect("shard opened")]);
        assert!(set.shards[0].memory.is_none(), "read from the file");
        for transform in [Transform::None, Transform::Values, Transform::FloatRepr] {
            for n in [1, CHUNK_ROWS + 3, SEGMENT_ROWS, SEGMENT_ROWS + 5, rows + 9] {
                let got = set.head(n, &transform).expect("binary head");
                let rows = samples.values().slice(ndarray::s![..n.min(rows), ..]);
                let want = transform.apply_view(&rows).expect("view");
                assert_eq!(got.values(), want.values(), "n = {n}, {transform:?}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The training rows read from text shards that are streamed (too large for the parse
    /// budget: here shards opened without their parsed copy) are those read from the parsed
    /// copy, for a head inside the first shard, across shards and past the end, in either view.
    #[test]
    fn streamed_head_equals_the_parsed_head() {
        let dir = std::env::temp_dir().join(format!("dp-audit-head-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch folder");
        let paths: Vec<PathBuf> = (0..2)
            .map(|k| {
                let p = dir.join(format!("s{k}.jsonl"));
                let text: String = (0..CHUNK_ROWS + 37)
                    .map(|i| format!("{}\n", (i as f64 * 0.37 + k as f64).sin() * 1e3))
                    .collect();
                std::fs::write(&p, text).expect("shard written");
                p
            })
            .collect();
        let opened: Vec<Shard> = paths
            .iter()
            .map(|p| Shard::open(p).expect("shard opened"))
            .collect();
        assert!(
            opened.iter().all(|s| s.memory.is_some()),
            "the shards fit the budget"
        );
        let streamed: Vec<Shard> = opened
            .iter()
            .map(|s| Shard::recorded(&s.path, s.dim, s.rows, None))
            .collect();
        let (parsed, streamed) = (ShardSet::new(opened), ShardSet::new(streamed));
        for transform in [Transform::None, Transform::Values, Transform::FloatRepr] {
            for n in [
                1,
                100,
                CHUNK_ROWS,
                CHUNK_ROWS + 37,
                CHUNK_ROWS + 40,
                3 * CHUNK_ROWS,
            ] {
                let a = parsed.head(n, &transform).expect("parsed head");
                let b = streamed.head(n, &transform).expect("streamed head");
                assert_eq!(a.values(), b.values(), "n = {n}, {transform:?}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
