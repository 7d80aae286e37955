//! Black-box mechanisms in any language: the exec protocol, and the sample-file line format.
//!
//! # The protocol
//! For every batch of releases, dp-audit runs the program (COMMAND split into words like a POSIX
//! shell would, then executed directly, no shell), writes **one JSON object** on its stdin and
//! closes stdin:
//!
//! ```json
//! {"dataset": [0.5, 0.5, 1.0], "samples": 50000, "seed": 12345678901234567}
//! ```
//!
//! A draw of n releases is split into requests of at most [`DEFAULT_BATCH`] releases
//! (`--exec-batch`), so the program's start-up cost is paid once per batch, and up to `--jobs`
//! programs run at once.
//!
//! A record is a JSON number or an array of numbers. The program prints **exactly `samples`
//! lines** on stdout, each a JSON number or a JSON array of numbers (the same length on every
//! line), and exits with status 0. It should draw all its randomness from `seed` (so audits are
//! reproducible); dp-audit derives a fresh seed for every batch from its own seeded streams.
//! Booleans read as 1 and 0, and plain numbers separated by spaces or commas, bracketed or
//! not, as an array (see `plain_numbers`).
//!
//! Numbers are parsed exactly: serde_json's `float_roundtrip` parser reads back the same f64 bits
//! the program printed (tested on hard cases below), because float-representation features and
//! exact atoms depend on the last bits.
//!
//! # Failures
//! Each of these is an error naming the command, the request (its first records when long) and
//! the tail of stderr; no verdict is ever computed from partial data:
//! - a non-zero exit or a death by signal (reported first: the program's own words are in
//!   stderr), a time-out, or a NaN or ∞ among the releases: the program refused this dataset
//!   ([`MechanismError::Refused`]); a dataset search skips such a pair and records it (a mean
//!   of the empty dataset is the common case), every other error below ends the run;
//! - too few lines, a line too many (stdout is parsed as it arrives, so a program printing
//!   without end is stopped at the first extra line), a non-numeric value (booleans, JSON's
//!   `true`/`false` or Python's `True`/`False`, read as 1 and 0),
//!   inconsistent lengths, a line longer than 64 MiB;
//! - a program that closes its stdin or exits before reading the whole request (a broken pipe
//!   on our side): it cannot have read its `seed`, which comes last;
//! - releases that repeat those of an earlier request with another seed: a program that ignores
//!   its seed (a constant seed, a common mistake) returns the same releases in every batch, and
//!   the i.i.d. assumption behind every bound would fail silently. Each batch (not the probe)
//!   leaves two 128-bit fingerprints, shared by all threads: the bits of its first releases,
//!   once they hold an estimated 96 bits of randomness, and the order of its first 25 values
//!   (which a shift of the releases, as between neighboring datasets, keeps). Independent
//!   batches share one with probability about 2^-83 or less; constant outputs and small
//!   discrete batches (e.g. randomized response, 2 releases) never count (see `fingerprints`
//!   in the source). The same seed twice may repeat: programs should be deterministic given
//!   their seed;
//! - a time-out. `--exec-timeout` covers the whole request: writing the request, the run, and
//!   reading stdout and stderr to their end, so a program that exits but leaves a process
//!   holding its stdout (e.g. `(sleep 1000) &`) times out too.
//!
//! The program runs as the leader of its own process group; on a time-out or any error the
//! whole group is killed (SIGKILL), so nothing it started survives. Stderr is drained while the
//! program runs (a chatty program never blocks on a full pipe) and only its last few KiB are
//! kept.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hasher};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use ndarray::ArrayView1;

use rand::Rng;

use crate::mechanisms::{
    Dataset, Mechanism, MechanismError, Neighboring, PrivacyClaim, RecordDomain, Samples,
};

/// How long a batch may run by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest time-out accepted: 10^9 s, so a deadline (now + time-out) is always
/// representable.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(1_000_000_000);

/// Releases per request (one process) by default. Starting an interpreter costs 20–200 ms, about
/// what a trivial Python mechanism needs for 10^4–10^5 releases, so batches of 50 000 keep the
/// start-up a modest share of the work: `tests/exec_bench.rs` measured the runner's default
/// chunk of 4 096 at about 11× the time Python alone needs for the samples, and batches of
/// 50 000–65 536 under 2×. 50 000 splits the usual sample counts (multiples of 10^5) into equal
/// batches, so parallel processes finish together. A draw of n releases per side runs ⌈n/50 000⌉
/// processes, up to `--jobs` at once. Slow programs (whose batch would exceed `--exec-timeout`)
/// or wide machines can lower it (`--exec-batch`).
pub const DEFAULT_BATCH: usize = 50_000;

/// Most record values (records × record dimension) in one dataset sent to a program: 10^7, so
/// 10^7 scalar records or 10^6 records of dimension 10. At the cap a dataset takes 80 MB here
/// (a finder holds a few), its request about 200 MB of JSON (streamed, never held whole), and
/// Python's `json.load` needs about 4 s to read it; larger datasets would cost seconds and
/// gigabytes per batch.
pub const MAX_DATASET_VALUES: usize = 10_000_000;

/// A mechanism run as an external program through the exec protocol.
#[derive(Clone, Debug)]
pub struct ExecMechanism {
    command: String,
    words: Arc<Vec<String>>,
    claim: PrivacyClaim,
    neighboring: Neighboring,
    domain: RecordDomain,
    output_dim: usize,
    timeout: Duration,
    /// Releases per request (shared by clones; a planned run may lower it, see
    /// [`Mechanism::set_batch_size`]).
    batch: Arc<std::sync::atomic::AtomicUsize>,
    /// The caller's limit on one request, nanoseconds (0: none; shared by clones; see
    /// [`Mechanism::set_call_limit`]).
    call_limit: Arc<std::sync::atomic::AtomicU64>,
    /// The run's deadline (shared by clones; see [`Mechanism::set_deadline`]).
    deadline: Arc<Mutex<Option<Instant>>>,
    /// Seconds the constructor's request took (a start-up the probe need not pay again).
    first_call: f64,
    /// Fingerprints of the releases of earlier requests (shared by clones): a program that
    /// ignores its seed repeats them.
    seen: Arc<Mutex<HashMap<u128, Seen>>>,
    /// The accountant's range when the claim was read off a privacy ledger (`ledger:FILE`).
    accountant: Option<crate::mechanisms::AccountantRange>,
    /// Most datasets per request when the program reads many (`--exec-datasets`).
    datasets_per_request: Option<usize>,
    /// Where the program runs (`--setting`; central by default).
    setting: crate::mechanisms::DpSetting,
    /// The privacy unit in the user's words (`--privacy-unit`); `None`: the relation's words.
    privacy_unit: Option<String>,
    /// What the guarantee covers (DP-fy ML: `--data-accesses`, `--outputs-covered`, or a
    /// ledger claim's `dp-fy-ml` line). For the report only.
    scope: crate::mechanisms::accounting::dpfy::DpFyScope,
    /// Keys sent in every request besides the dataset, the count and the seed (e.g. a
    /// final-model audit's `"initial_model"` and `"queries"`), serialized once as
    /// `,"key":value…`; empty for a plain program.
    extra: Arc<str>,
}

fn exec_error(command: &str, message: String) -> MechanismError {
    MechanismError::Sampling {
        mechanism: format!("exec `{command}`"),
        message,
    }
}

/// [`exec_error`] for a program that refused the dataset of its request (see
/// [`MechanismError::Refused`]).
fn exec_refused(command: &str, message: String) -> MechanismError {
    MechanismError::Refused {
        mechanism: format!("exec `{command}`"),
        message,
    }
}

/// How to run a program as a mechanism (the plain form of `audit run --exec`'s options).
#[derive(Clone, Debug)]
pub struct ExecOptions {
    /// The command, split like a shell would.
    pub command: String,
    /// The claim to audit.
    pub claim: PrivacyClaim,
    /// The neighboring relation of the claim.
    pub neighboring: Neighboring,
    /// Smallest record value.
    pub lower: f64,
    /// Largest record value.
    pub upper: f64,
    /// Record dimension.
    pub dim: usize,
    /// Time a batch may run.
    pub timeout: Duration,
    /// Releases per request.
    pub batch: usize,
    /// Records in the probe dataset (all at the middle of the range).
    pub probe_size: usize,
    /// The accountant's range of the claim, when it was read off a privacy ledger.
    pub accountant: Option<crate::mechanisms::AccountantRange>,
    /// The program reads requests of many datasets (`"datasets"`, one release each), at most
    /// this many per request (`--exec-datasets N`); `None`: one dataset per request.
    pub datasets_per_request: Option<usize>,
}

impl ExecMechanism {
    /// The same program, declared to run in `setting`, its privacy unit described as `unit`
    /// (`None`: the words of its relation and setting). For the report only.
    pub fn with_unit(self, setting: crate::mechanisms::DpSetting, unit: Option<String>) -> Self {
        Self {
            setting,
            privacy_unit: unit,
            ..self
        }
    }

    /// The same program, its guarantee declared to cover `scope` (DP-fy ML). For the report only.
    pub fn with_dp_fy_scope(self, scope: crate::mechanisms::accounting::dpfy::DpFyScope) -> Self {
        Self { scope, ..self }
    }

    /// The same program, its claim read off a privacy ledger by the accountant whose range this
    /// is (shown beside the empirical ε; never used to decide).
    pub fn with_accountant(self, accountant: Option<crate::mechanisms::AccountantRange>) -> Self {
        Self { accountant, ..self }
    }

    /// The same program with `timeout` as the limit of each later request (`--exec-timeout`;
    /// the first request may have been given less, to keep a run's deadline).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        if !timeout.is_zero() && timeout <= MAX_TIMEOUT {
            self.timeout = timeout;
        }
        self
    }

    /// Seconds the constructor's first request (2 releases) took: a measured start-up.
    pub fn first_call_seconds(&self) -> f64 {
        self.first_call
    }

    /// Prepares `command` (split like a shell would). The output dimension is learned by one
    /// probe request of 2 releases on `probe` (a dataset inside `domain`), which also checks that
    /// the program exists, runs and speaks the protocol.
    pub fn new(
        command: &str,
        claim: PrivacyClaim,
        neighboring: Neighboring,
        domain: RecordDomain,
        timeout: Duration,
        probe: &Dataset,
    ) -> Result<Self, MechanismError> {
        let keys = serde_json::Map::new();
        Self::with_request_keys(command, claim, neighboring, domain, timeout, probe, &keys)
    }

    /// [`ExecMechanism::new`] for a program whose every request (the probe's included) also
    /// carries `keys`, e.g. `{"initial_model": [...], "queries": [[...], ...]}` for a
    /// final-model audit (docs/exec-protocol.md). Keys are written in sorted order after the
    /// dataset; `dataset`, `datasets`, `samples` and `seed` are the protocol's own and are
    /// refused.
    pub fn with_request_keys(
        command: &str,
        claim: PrivacyClaim,
        neighboring: Neighboring,
        domain: RecordDomain,
        timeout: Duration,
        probe: &Dataset,
        keys: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self, MechanismError> {
        let extra = request_extra(keys).map_err(|e| exec_error(command, e))?;
        let words = shlex::split(command).ok_or_else(|| {
            exec_error(
                command,
                "cannot split the command into words (unbalanced quotes?)".into(),
            )
        })?;
        if words.is_empty() {
            return Err(exec_error(command, "the command is empty".into()));
        }
        if timeout.is_zero() || timeout > MAX_TIMEOUT {
            return Err(exec_error(
                command,
                format!(
                    "the time-out is {} s; allowed: > 0 and at most {} s (about 31 years)",
                    timeout.as_secs_f64(),
                    MAX_TIMEOUT.as_secs()
                ),
            ));
        }
        let mut m = Self {
            command: command.to_string(),
            words: Arc::new(words),
            claim: claim.validated()?,
            neighboring,
            domain,
            output_dim: 0,
            timeout,
            batch: Arc::new(std::sync::atomic::AtomicUsize::new(DEFAULT_BATCH)),
            call_limit: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            deadline: Arc::default(),
            first_call: 0.0,
            seen: Arc::default(),
            accountant: None,
            datasets_per_request: None,
            setting: crate::mechanisms::DpSetting::Central,
            privacy_unit: None,
            scope: Default::default(),
            extra: Arc::from(extra),
        };
        domain.validate()?;
        domain.check(probe)?;
        let t0 = Instant::now();
        let s = m.request(Request::One(probe, 2), 0, None, false)?;
        m.first_call = t0.elapsed().as_secs_f64();
        m.output_dim = s.dim();
        Ok(m)
    }

    /// The program `options` names, probed on a dataset of `probe_size` records at the middle
    /// of the record range, with its batch size and accountant.
    pub fn from_options(options: &ExecOptions) -> Result<Self, MechanismError> {
        let o = options;
        // One allocation for the probe, however large the dataset.
        let probe = Dataset::from_array(ndarray::Array2::from_elem(
            (o.probe_size, o.dim),
            0.5 * (o.lower + o.upper),
        ))?;
        let domain = Self::domain(o.lower, o.upper, o.dim);
        Self::new(
            &o.command,
            o.claim,
            o.neighboring,
            domain,
            o.timeout,
            &probe,
        )?
        .with_batch_size(o.batch)?
        .with_accountant(o.accountant.clone())
        .with_datasets_per_request(o.datasets_per_request)
    }

    /// Lets the program be sent up to `k` datasets per request (`{"datasets": [...],
    /// "samples": k, "seed": s}`, one release per dataset, in order); `None`: one dataset per
    /// request. Checked with a request of two different datasets, whose answer must be two
    /// lines of the program's output dimension.
    pub fn with_datasets_per_request(mut self, k: Option<usize>) -> Result<Self, MechanismError> {
        let Some(k) = k else {
            self.datasets_per_request = None;
            return Ok(self);
        };
        if k == 0 {
            return Err(exec_error(
                &self.command,
                "--exec-datasets 0; allowed: at least 1 dataset per request".into(),
            ));
        }
        let lo = Dataset::from_array(ndarray::Array2::from_elem(
            (self.domain.min_size.max(1), self.domain.dim),
            self.domain.lower,
        ))?;
        let hi = Dataset::from_array(ndarray::Array2::from_elem(
            (self.domain.min_size.max(1), self.domain.dim),
            self.domain.upper,
        ))?;
        let pair = [lo, hi];
        let s = self
            .request(Request::Many(&pair), 0, Some(self.output_dim), false)
            .map_err(|e| {
                let inner = e.to_string();
                let prefix = exec_error(&self.command, String::new()).to_string();
                let inner = inner.strip_prefix(&prefix).unwrap_or(&inner);
                exec_error(
                    &self.command,
                    format!(
                        "--exec-datasets {k}: the program did not answer a request of two datasets (\"datasets\": [[…], […]], one release each, in order; docs/exec-protocol.md); make it read such requests, or leave --exec-datasets out (one process per release): {inner}"
                    ),
                )
            })?;
        debug_assert_eq!(s.n(), 2);
        self.datasets_per_request = Some(k);
        Ok(self)
    }

    /// The record domain for a program: records of dimension `dim` in `[lower, upper]`,
    /// datasets of 0 to [`MAX_DATASET_VALUES`]` / dim` records (10^7 scalars). The catalogue's
    /// cap of 1000 records ([`RecordDomain::real`]) is for mechanisms computed in-process; a
    /// program is sent its dataset streamed.
    pub fn domain(lower: f64, upper: f64, dim: usize) -> RecordDomain {
        RecordDomain::real(lower, upper, dim).with_sizes(0, MAX_DATASET_VALUES / dim.max(1))
    }

    /// The command as given.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Sets the releases per request (per process); at least 1. Part of the reproducibility
    /// contract: the same seed gives the same samples only with the same batch size.
    pub fn with_batch_size(mut self, batch: usize) -> Result<Self, MechanismError> {
        if batch == 0 {
            return Err(exec_error(
                &self.command,
                "the batch size is 0; allowed: at least 1 release per request".into(),
            ));
        }
        self.batch = Arc::new(std::sync::atomic::AtomicUsize::new(batch));
        Ok(self)
    }

    /// Runs one request and parses its answer. `expected_dim`, when known, is enforced. With
    /// `check_seed`, the releases are compared with those of earlier requests (see
    /// [`fingerprints`]).
    ///
    /// Four threads serve the program: a waiter (its exit status), a writer (the request, in
    /// chunks of [`WRITE_CHUNK`] bytes that this thread serializes, two in flight, so memory
    /// stays bounded whatever the dataset's size), a stdout reader (parses lines as they come
    /// and stops at the first bad one or at one line too many) and a stderr reader (keeps the
    /// tail). This thread waits for their reports until the deadline, which covers writing the
    /// request, the run and reading all output. On a time-out or an error the program's whole
    /// process group is killed.
    fn request(
        &self,
        what: Request<'_>,
        seed: u64,
        expected_dim: Option<usize>,
        check_seed: bool,
    ) -> Result<Samples, MechanismError> {
        let n = what.releases();
        let ctx = CallContext {
            command: &self.command,
            preview: if self.extra.is_empty() {
                what.preview(seed)
            } else {
                format!(
                    "{} with the keys {}",
                    what.preview(seed),
                    extra_key_names(&self.extra)
                )
            },
            tail: Arc::new(Mutex::new(Vec::new())),
            closed_early: std::cell::Cell::new(false),
        };
        let time = self.call_time(n)?;
        let (mut group, rx, chunk_tx) = self.start_program(&ctx, n, expected_dim)?;
        let mut ex = Exchange::new(rx, chunk_tx, what, seed, &self.extra);
        if ex.collect(time.deadline) {
            ex.kill_and_drain(&mut group);
            return Err(self.timed_out_error(&ctx, &ex, n, &time));
        }
        let out = ex.out.take();
        if let Some(Err(m)) = out {
            return Err(ex.bad_output_error(&ctx, &mut group, m));
        }
        ex.check_exit(&ctx)?;
        let samples = match out {
            Some(Ok(parser)) => parser.finish().map_err(|e| ctx.fail(e))?,
            _ => return Err(ctx.fail("lost its output (stdout reader ended early)".into())),
        };
        group.disarm();
        if check_seed {
            self.check_independent(&samples, seed)
                .map_err(|e| ctx.fail(e))?;
        }
        Ok(samples)
    }

    /// When a call of `n` releases must end: at its own limit (the search's call limit when
    /// shorter than `--exec-timeout`, else the time-out), or at the run's deadline when that
    /// comes first. The run's deadline bounds every call: none is started after it
    /// ([`MechanismError::OutOfTime`]), and one that would run past it is stopped there.
    fn call_time(&self, n: usize) -> Result<CallTime, MechanismError> {
        let limit = match self.call_limit.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos)).filter(|l| *l < self.timeout),
        };
        let now = Instant::now();
        let run_end = *lock(&self.deadline);
        if run_end.is_some_and(|end| end <= now) {
            return Err(MechanismError::OutOfTime {
                mechanism: format!("exec `{}`", self.command),
                releases: n,
            });
        }
        let own = now + limit.unwrap_or(self.timeout);
        let by_run = run_end.is_some_and(|end| end < own);
        let deadline = match run_end {
            Some(end) if by_run => end,
            _ => own,
        };
        Ok(CallTime {
            deadline,
            by_run,
            limit,
        })
    }

    /// Starts the program in a process group of its own (so that a time-out kills whatever it
    /// started too) and the four threads that serve it: a waiter, a stdout reader (`n` releases
    /// of `expected_dim`), a stderr reader (into `ctx`'s tail) and a writer, fed chunks through
    /// the returned sender. All report on the returned receiver.
    fn start_program(
        &self,
        ctx: &CallContext<'_>,
        n: usize,
        expected_dim: Option<usize>,
    ) -> Result<Started, MechanismError> {
        let mut child = Command::new(&self.words[0])
            .args(&self.words[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, so a time-out kills whatever it started too.
            .process_group(0)
            .spawn()
            .map_err(|e| ctx.fail(format!("cannot start `{}`: {e}", self.words[0])))?;
        let group = match libc::pid_t::try_from(child.id()) {
            Ok(pgid) => Group::new(pgid),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ctx.fail(format!("process id {} is out of range", child.id())));
            }
        };
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ctx.fail("the program's stdin, stdout or stderr is not a pipe".into()));
        };
        let (tx, rx) = mpsc::channel();
        let (chunk_tx, chunk_rx) = mpsc::channel::<Vec<u8>>();
        let started = (|| {
            let t = tx.clone();
            spawn("wait for", move || {
                let _ = t.send(Event::Exited(child.wait()));
            })?;
            let t = tx.clone();
            spawn("read stdout of", move || {
                let _ = t.send(Event::Stdout(read_releases(stdout, n, expected_dim)));
            })?;
            let t = tx.clone();
            let keep = Arc::clone(&ctx.tail);
            spawn("read stderr of", move || {
                drain_tail(stderr, &keep);
                let _ = t.send(Event::StderrClosed);
            })?;
            let t = tx.clone();
            spawn("write to", move || write_request(stdin, chunk_rx, t))
        })();
        drop(tx);
        started.map_err(|e| ctx.fail(e))?;
        Ok((group, rx, chunk_tx))
    }

    /// The error of a call that ran past its deadline: [`MechanismError::OutOfTime`] at the
    /// run's deadline, [`MechanismError::Slow`] past the search's call limit, else a refusal
    /// that says whether the program hung or left a process holding its stdout.
    fn timed_out_error(
        &self,
        ctx: &CallContext<'_>,
        ex: &Exchange<'_>,
        n: usize,
        time: &CallTime,
    ) -> MechanismError {
        if time.by_run {
            return MechanismError::OutOfTime {
                mechanism: format!("exec `{}`", self.command),
                releases: n,
            };
        }
        if let Some(l) = time.limit {
            return MechanismError::Slow {
                mechanism: format!("exec `{}`", self.command),
                releases: n,
                seconds: l.as_secs_f64(),
            };
        }
        let secs = self.timeout.as_secs_f64();
        ctx.refused(match (&ex.exited, &ex.out) {
            (Some(Ok(status)), None) => format!(
                "exited ({status}), but its stdout was still open after {secs} s \
                 (--exec-timeout): a process it started (e.g. in the background) holds it; \
                 the program's process group was killed"
            ),
            _ => format!(
                "timed out after {secs} s (--exec-timeout) and was killed, with every \
                 process in its group ({n} releases requested: a program that is only slow \
                 needs a lower --exec-batch or a higher --exec-timeout)"
            ),
        })
    }

    /// Refuses releases whose fingerprint (see [`fingerprints`]) an earlier request with a
    /// different seed had, and records them.
    fn check_independent(&self, samples: &Samples, seed: u64) -> Result<(), String> {
        let prints = fingerprints(samples);
        let mut seen = lock(&self.seen);
        for (key, what) in &prints {
            if let Some(earlier) = seen.get(key)
                && earlier.seed != seed
            {
                return Err(format!(
                    "its releases repeat those of an earlier request with another seed: {what} \
                     (this request: seed {seed}, {} releases; the earlier one: seed {}, {} \
                     releases). Releases must be independent draws, and every bound assumes \
                     they are: the program must draw its randomness from the request's \"seed\" \
                     field (e.g. random.Random(seed) in Python), not from a constant seed or one \
                     of its own, and must not print its releases in a fixed order (e.g. sorted)",
                    samples.n(),
                    earlier.seed,
                    earlier.n
                ));
            }
        }
        for (key, _) in prints {
            seen.entry(key).or_insert(Seen {
                seed,
                n: samples.n(),
            });
        }
        Ok(())
    }
}

/// An earlier request's fingerprint: its seed and size.
#[derive(Clone, Copy, Debug)]
struct Seen {
    seed: u64,
    n: usize,
}

/// Fewest releases whose repetition counts as evidence.
const REPEAT_MIN_RELEASES: usize = 16;

/// Estimated bits of randomness a block of releases must hold before its repetition counts as
/// evidence: two independent blocks coincide with probability about 2^-96.
const REPEAT_MIN_BITS: f64 = 96.0;

/// Releases whose order is compared: 25! ≈ 2^83.7 equally likely orders.
const ORDER_RELEASES: usize = 25;

/// Fingerprints of a batch that independent batches share only with negligible probability,
/// each with a description for the error message. A program with a constant seed repeats them
/// in every request, whatever the sample count (the fingerprints are of the first releases) and
/// often whatever the dataset.
///
/// - **Repeated releases**: a hash of the bits of the shortest prefix of at least
///   [`REPEAT_MIN_RELEASES`] releases whose estimated collision entropy, k·log2(k²/Σ c_v²) over
///   the counts c_v of its distinct releases, reaches [`REPEAT_MIN_BITS`]; the plug-in estimate
///   of Σ p_v² is biased upwards, so the entropy is underestimated. Continuous outputs need 22
///   releases; a fair bit 96 or more; constant outputs (deterministic mechanisms) and small
///   discrete batches (randomized response, 2 releases) never qualify, since they may repeat
///   legitimately. Which prefix is used depends only on its content, so equal releases give
///   equal prefixes.
/// - **Repeated order**: for the first coordinate whose first [`ORDER_RELEASES`] values are
///   distinct, the order of those values (their ranks). I.i.d. releases are exchangeable, so
///   given distinct values every order has probability 1/25!, whatever the distribution. The
///   order survives a shift or scaling of the releases: a constant-seeded `f(D) + noise` repeats
///   it on neighboring datasets too.
fn fingerprints(samples: &Samples) -> Vec<(u128, String)> {
    let mut prints = Vec::new();
    let v = samples.values();
    let (n, dim) = (samples.n(), samples.dim());
    let row_hash = |i: usize| -> u64 {
        let mut h = DefaultHasher::new();
        for x in v.row(i) {
            h.write_u64(x.to_bits());
        }
        h.finish()
    };
    let mut counts: HashMap<u64, u64> = HashMap::new();
    let mut sum_sq = 0f64;
    for k in 1..=n {
        let c = counts.entry(row_hash(k - 1)).or_insert(0);
        sum_sq += (2 * *c + 1) as f64;
        *c += 1;
        let kf = k as f64;
        if k >= REPEAT_MIN_RELEASES && kf * (kf * kf / sum_sq).log2() >= REPEAT_MIN_BITS {
            let mut h = Hash128::new(1);
            h.write(dim as u64);
            h.write(k as u64);
            for x in v.slice(ndarray::s![..k, ..]) {
                h.write(x.to_bits());
            }
            prints.push((
                h.finish(),
                format!("its first {k} releases are identical, bit for bit"),
            ));
            break;
        }
    }
    if n >= ORDER_RELEASES {
        for j in 0..dim {
            let mut idx: Vec<usize> = (0..ORDER_RELEASES).collect();
            let col = |i: usize| v[[i, j]];
            idx.sort_by(|&a, &b| col(a).total_cmp(&col(b)));
            // Distinct as numbers (so -0.0 and 0.0 tie): then the order is strict.
            if idx.windows(2).all(|w| col(w[0]) < col(w[1])) {
                let mut h = Hash128::new(2);
                h.write(j as u64);
                for i in idx {
                    h.write(i as u64);
                }
                prints.push((
                    h.finish(),
                    format!(
                        "its first {ORDER_RELEASES} releases are in the same order (coordinate \
                         {j})"
                    ),
                ));
                break;
            }
        }
    }
    prints
}

/// Two independent SipHash streams (std's DefaultHasher, fixed keys), for 128-bit fingerprints:
/// a false match among even 2^32 batches has probability below 2^-64.
struct Hash128(DefaultHasher, DefaultHasher);

impl Hash128 {
    fn new(tag: u64) -> Self {
        let mut a = DefaultHasher::new();
        let mut b = DefaultHasher::new();
        a.write_u64(tag);
        b.write_u64(tag ^ 0x5DEE_CE66_D1CE_4E5B);
        b.write_u64(0x9E37_79B9_7F4A_7C15);
        Self(a, b)
    }

    fn write(&mut self, x: u64) {
        self.0.write_u64(x);
        self.1.write_u64(x);
    }

    fn finish(&self) -> u128 {
        (u128::from(self.0.finish()) << 64) | u128::from(self.1.finish())
    }
}

/// Bytes of the request serialized at a time and handed to the writer thread (two such
/// buffers are in flight).
const WRITE_CHUNK: usize = 64 * 1024;

/// Longest stdout line accepted (a release of some 2 million coordinates).
const MAX_LINE: usize = 64 << 20;

/// Bytes of stderr kept: its tail, for error messages.
const STDERR_KEEP: usize = 8 * 1024;

/// After killing a program, how long to wait for its stderr to close.
const KILL_GRACE: Duration = Duration::from_secs(1);

/// What the threads serving one request report.
enum Event {
    /// The writer wrote a chunk and returns its buffer.
    Buffer(Vec<u8>),
    /// The writer is done: the whole request was written and stdin closed, or writing failed
    /// at the given byte offset.
    Written(Result<(), (u64, std::io::Error)>),
    /// Stdout reached its end (the lines so far), or a line was bad (the reason).
    Stdout(Result<LineParser, String>),
    /// Stderr reached its end.
    StderrClosed,
    /// The program exited.
    Exited(std::io::Result<ExitStatus>),
}

/// A started program: its process group, the receiver of its threads' reports and the sender
/// of the request's chunks to its writer.
type Started = (Group, mpsc::Receiver<Event>, mpsc::Sender<Vec<u8>>);

/// When one call must end: its deadline, whether that is the run's deadline (else the call's
/// own), and the search's call limit when it set one shorter than `--exec-timeout`.
struct CallTime {
    deadline: Instant,
    by_run: bool,
    limit: Option<Duration>,
}

/// What a request's errors say besides their cause: the program, the request (a preview) and
/// the tail of the program's stderr.
struct CallContext<'a> {
    command: &'a str,
    preview: String,
    /// The stderr reader's tail of the program's stderr.
    tail: Arc<Mutex<Vec<u8>>>,
    /// Set once the stdout reader stopped at a bad line and closed the pipe: a broken-pipe
    /// error the program then reports is our doing, not its, and is left out of the tail.
    closed_early: std::cell::Cell<bool>,
}

impl CallContext<'_> {
    /// `what` went wrong, with the request and the tail of the program's stderr.
    fn message(&self, what: String) -> String {
        let t = stderr_tail(&self.tail);
        let (t, note) = match self.closed_early.get().then(|| without_broken_pipe(&t)) {
            Some(Some(kept)) => (
                kept,
                " [then a broken-pipe error, left out: dp-audit closed the program's \
                 stdout at the bad line]",
            ),
            _ => (t, ""),
        };
        format!(
            "{what}\n  request: {}\n  stderr (tail): {}{note}",
            self.preview,
            if t.is_empty() { "(empty)" } else { &t }
        )
    }

    /// The program broke the protocol (or could not be run): an error of the run.
    fn fail(&self, what: String) -> MechanismError {
        exec_error(self.command, self.message(what))
    }

    /// The program ran and refused this dataset (a failure status or no answer in time): a
    /// search skips such a pair (see `MechanismError::Refused`).
    fn refused(&self, what: String) -> MechanismError {
        exec_refused(self.command, self.message(what))
    }
}

/// One request's exchange with its program: the request fed to the writer chunk by chunk,
/// and what the threads serving the program reported.
struct Exchange<'a> {
    rx: mpsc::Receiver<Event>,
    /// The writer's chunks; dropping the sender ends the writer's loop, which closes stdin.
    chunk_tx: Option<mpsc::Sender<Vec<u8>>>,
    chunks: RequestChunks<'a>,
    /// Buffers the writer has returned, ready to fill (two in flight at most).
    free: Vec<Vec<u8>>,
    exited: Option<std::io::Result<ExitStatus>>,
    out: Option<Result<LineParser, String>>,
    written: Option<Result<(), (u64, std::io::Error)>>,
    err_closed: bool,
}

impl<'a> Exchange<'a> {
    /// The exchange of request `what` at `seed`, before anything is written.
    fn new(
        rx: mpsc::Receiver<Event>,
        chunk_tx: mpsc::Sender<Vec<u8>>,
        what: Request<'a>,
        seed: u64,
        extra: &'a str,
    ) -> Self {
        Exchange {
            rx,
            chunk_tx: Some(chunk_tx),
            chunks: RequestChunks {
                what,
                seed,
                extra,
                dataset: 0,
                next: 0,
                started: false,
            },
            free: vec![
                Vec::with_capacity(WRITE_CHUNK + 1024),
                Vec::with_capacity(WRITE_CHUNK + 1024),
            ],
            exited: None,
            out: None,
            written: None,
            err_closed: false,
        }
    }

    /// Feeds the writer and collects the threads' reports until all four are in, stdout holds
    /// a bad line, or `deadline` passes; true when the deadline came first.
    fn collect(&mut self, deadline: Instant) -> bool {
        loop {
            while let Some(to_writer) = &self.chunk_tx
                && let Some(mut buf) = self.free.pop()
            {
                let more = self.chunks.fill(&mut buf);
                if to_writer.send(buf).is_err() || !more {
                    // Dropping the sender ends the writer's loop: it closes stdin.
                    self.chunk_tx = None;
                }
            }
            if self.exited.is_some()
                && self.out.is_some()
                && self.written.is_some()
                && self.err_closed
            {
                return false;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return true;
            };
            match self.rx.recv_timeout(left) {
                Ok(Event::Buffer(b)) => self.free.push(b),
                Ok(Event::Written(r)) => self.written = Some(r),
                Ok(Event::Stdout(r)) => {
                    let bad = r.is_err();
                    self.out = Some(r);
                    if bad {
                        return false;
                    }
                }
                Ok(Event::StderrClosed) => self.err_closed = true,
                Ok(Event::Exited(s)) => self.exited = Some(s),
                Err(mpsc::RecvTimeoutError::Timeout) => return true,
                Err(mpsc::RecvTimeoutError::Disconnected) => return false,
            }
        }
    }

    /// Kills the program's group, then lets the stderr reader take in the last words of the
    /// program (the kill closes the pipe), but never waits long: a process that left the
    /// group may still hold it.
    fn kill_and_drain(&mut self, group: &mut Group) {
        group.kill();
        let grace = Instant::now() + KILL_GRACE;
        let mut closed = self.err_closed;
        while !closed && let Some(left) = grace.checked_duration_since(Instant::now()) {
            match self.rx.recv_timeout(left) {
                Ok(Event::StderrClosed) => closed = true,
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }

    /// The error of an answer with a bad line `m`: a refusal when the line is not a finite
    /// number or the program exited with a failure status of its own, else the bad line.
    fn bad_output_error(
        &mut self,
        ctx: &CallContext<'_>,
        group: &mut Group,
        m: String,
    ) -> MechanismError {
        ctx.closed_early.set(true);
        // A program that fails stops writing and exits with a failure status just after its
        // stdout closes: wait a moment for that status, so that a refusal of this dataset is
        // told apart from a malformed answer.
        let grace = Instant::now() + KILL_GRACE;
        while self.exited.is_none()
            && let Some(left) = grace.checked_duration_since(Instant::now())
        {
            match self.rx.recv_timeout(left) {
                Ok(Event::Exited(s)) => self.exited = Some(s),
                Ok(Event::StderrClosed) => self.err_closed = true,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        self.kill_and_drain(group);
        // A non-finite value first: a failure status may only be the broken pipe of the
        // output it was still writing when the reader stopped.
        if let Some(m) = m.strip_prefix(NON_FINITE) {
            return ctx.refused(format!(
                "printed a value that is not a finite number ({m}); a program whose output \
                 on some datasets is not a number, but is on their neighbours, reveals which \
                 it was given: dp-audit cannot test such outputs, check this dataset yourself"
            ));
        }
        // A failure status caused by the broken pipe of our early close (SIGPIPE, or an
        // EPIPE error such as Python's BrokenPipeError) is not the program refusing the
        // dataset: the malformed line is the error, and it leads.
        if let Some(Ok(status)) = &self.exited
            && !status.success()
            && !broken_pipe(status, &stderr_tail(&ctx.tail))
        {
            return ctx.refused(format!("exited with {status} ({m})"));
        }
        ctx.fail(m)
    }

    /// How the program ended, for a complete answer: a failure status is a refusal of the
    /// dataset; a lost status, or a program that stopped reading the request, is an error.
    fn check_exit(&self, ctx: &CallContext<'_>) -> Result<(), MechanismError> {
        let unread = match &self.written {
            Some(Err((from, e))) => Some(format!(
                "it stopped reading the request: writing its bytes from {from} on failed ({e})"
            )),
            _ => None,
        };
        match &self.exited {
            Some(Ok(status)) if status.success() => {}
            Some(Ok(status)) => {
                return Err(ctx.refused(match unread {
                    Some(u) => format!("exited with {status}; {u}"),
                    None => format!("exited with {status}"),
                }));
            }
            Some(Err(e)) => return Err(ctx.fail(format!("cannot wait for the program: {e}"))),
            None => return Err(ctx.fail("lost track of the program (no exit status)".into())),
        }
        if let Some(u) = unread {
            return Err(ctx.fail(format!(
                "closed its stdin before reading the whole request ({u}); a program must read \
                 the whole request, whose \"seed\" comes last"
            )));
        }
        Ok(())
    }
}

/// The process group a request's program leads. It is killed (SIGKILL to every member) when
/// dropped unless disarmed, so every way out of a failed request takes the program's children
/// with it.
pub(crate) struct Group {
    pgid: libc::pid_t,
    armed: bool,
}

impl Group {
    /// Arms the group led by `pgid` (a child spawned with `process_group(0)`).
    pub(crate) fn new(pgid: libc::pid_t) -> Self {
        Self { pgid, armed: true }
    }

    fn kill(&mut self) {
        if self.armed {
            self.armed = false;
            // SAFETY: kill(2) takes plain integers and touches no memory of ours; a negative pid
            // signals every process in the group. Failure (the group is gone) is fine.
            unsafe {
                libc::kill(-self.pgid, libc::SIGKILL);
            }
        }
    }

    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(what: &str, f: impl FnOnce() + Send + 'static) -> Result<(), String> {
    std::thread::Builder::new()
        .name(format!("exec: {what} the program"))
        .spawn(f)
        .map(|_| ())
        .map_err(|e| format!("cannot start a thread to {what} the program: {e}"))
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What one request asks for: `n` releases on one dataset, or one release on each of many.
#[derive(Clone, Copy)]
enum Request<'a> {
    One(&'a Dataset, usize),
    Many(&'a [Dataset]),
}

impl Request<'_> {
    /// Releases the answer holds.
    fn releases(&self) -> usize {
        match self {
            Request::One(_, n) => *n,
            Request::Many(ds) => ds.len(),
        }
    }

    /// The request as error messages show it.
    fn preview(&self, seed: u64) -> String {
        match self {
            Request::One(d, n) => request_preview(d, *n, seed),
            Request::Many(ds) => format!(
                "{{\"datasets\":[… {} datasets of {} records …],\"samples\":{},\"seed\":{seed}}}",
                ds.len(),
                ds.iter()
                    .map(|d| d.len())
                    .min()
                    .map_or("0".to_string(), |lo| {
                        let hi = ds.iter().map(|d| d.len()).max().unwrap_or(lo);
                        if lo == hi {
                            lo.to_string()
                        } else {
                            format!("{lo} to {hi}")
                        }
                    }),
                ds.len()
            ),
        }
    }
}

/// The request, serialized piece by piece: `{"dataset":[…],"samples":n,"seed":s}` (or
/// `{"datasets":[[…],[…]],"samples":k,"seed":s}`), the same bytes `serde_json` prints for the
/// whole object (the writer adds a newline).
struct RequestChunks<'a> {
    what: Request<'a>,
    seed: u64,
    /// The program's extra keys, `,"key":value…` (see [`ExecMechanism::with_request_keys`]).
    extra: &'a str,
    /// The dataset being written (of a many-dataset request).
    dataset: usize,
    /// The next record of it.
    next: usize,
    started: bool,
}

impl RequestChunks<'_> {
    /// Appends the next part of the request to `buf` (at least [`WRITE_CHUNK`] bytes unless it
    /// is the end); false once the request is complete.
    fn fill(&mut self, buf: &mut Vec<u8>) -> bool {
        let (datasets, many): (&[Dataset], bool) = match self.what {
            Request::One(d, _) => (std::slice::from_ref(d), false),
            Request::Many(ds) => (ds, true),
        };
        if !self.started {
            buf.extend_from_slice(if many {
                b"{\"datasets\":["
            } else {
                b"{\"dataset\":["
            });
            self.started = true;
            if many && !datasets.is_empty() {
                buf.push(b'[');
            }
        }
        while self.dataset < datasets.len() {
            let d = &datasets[self.dataset];
            let rows = d.len();
            while self.next < rows && buf.len() < WRITE_CHUNK {
                if self.next > 0 {
                    buf.push(b',');
                }
                write_record(buf, d.record(self.next));
                self.next += 1;
            }
            if self.next < rows {
                return true;
            }
            self.dataset += 1;
            self.next = 0;
            if many {
                buf.push(b']');
                if self.dataset < datasets.len() {
                    buf.extend_from_slice(b",[");
                }
            }
        }
        // The closing newline is written by the writer on its own (see `write_request`).
        let _ = write!(
            buf,
            "]{},\"samples\":{},\"seed\":{}}}",
            self.extra,
            self.what.releases(),
            self.seed
        );
        false
    }
}

/// `keys` as the request carries them after the dataset: `,"key":value…`, in sorted order; an
/// error names a key that is the protocol's own.
fn request_extra(keys: &serde_json::Map<String, serde_json::Value>) -> Result<String, String> {
    let mut extra = String::new();
    let mut sorted: Vec<(&String, &serde_json::Value)> = keys.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    for (key, value) in sorted {
        if ["dataset", "datasets", "samples", "seed"].contains(&key.as_str()) {
            return Err(format!(
                "the request key \"{key}\" is the protocol's own; allowed: other keys (e.g. \"initial_model\", \"queries\")"
            ));
        }
        extra.push(',');
        extra.push_str(&serde_json::Value::String(key.clone()).to_string());
        extra.push(':');
        extra.push_str(&value.to_string());
    }
    Ok(extra)
}

/// The names of the extra keys in `extra` (`,"key":value…`), for error messages.
fn extra_key_names(extra: &str) -> String {
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&format!(
        "{{{}}}",
        extra.strip_prefix(',').unwrap_or(extra)
    ))
    .map(|m| {
        m.keys()
            .map(|k| format!("\"{k}\""))
            .collect::<Vec<_>>()
            .join(", ")
    })
    .unwrap_or_default()
}

/// A record as the protocol sends it: a number when the records are scalars, else an array.
fn write_record(buf: &mut Vec<u8>, record: ArrayView1<'_, f64>) {
    // serde_json prints a finite f64 in its shortest round-trip form (ryu: `1e300`, `5e-324`,
    // `-0.0`, `4503599627370495.5`), which every correct decimal parser reads back to the same
    // bits; records are finite (Dataset checks). Writing to a Vec cannot fail.
    if record.len() == 1 {
        let _ = serde_json::to_writer(&mut *buf, &record[0]);
    } else {
        buf.push(b'[');
        for (j, v) in record.iter().enumerate() {
            if j > 0 {
                buf.push(b',');
            }
            let _ = serde_json::to_writer(&mut *buf, v);
        }
        buf.push(b']');
    }
}

/// The request as error messages show it: whole when short, else its first records and the
/// count.
fn request_preview(dataset: &Dataset, n: usize, seed: u64) -> String {
    let mut buf = b"{\"dataset\":[".to_vec();
    let rows = dataset.len();
    let mut i = 0;
    while i < rows && buf.len() < 160 {
        if i > 0 {
            buf.push(b',');
        }
        write_record(&mut buf, dataset.record(i));
        i += 1;
    }
    if i < rows {
        let _ = write!(buf, ",… ({rows} records)");
    }
    let _ = write!(buf, "],\"samples\":{n},\"seed\":{seed}}}");
    String::from_utf8_lossy(&buf).into_owned()
}

/// The writer thread: writes the chunks it is sent, returns each buffer, and closes stdin at
/// the end (when the sender is dropped).
fn write_request(
    mut stdin: std::process::ChildStdin,
    chunks: mpsc::Receiver<Vec<u8>>,
    events: mpsc::Sender<Event>,
) {
    let mut sent = 0u64;
    for mut buf in chunks {
        if let Err(e) = stdin.write_all(&buf) {
            let _ = events.send(Event::Written(Err((sent, e))));
            return;
        }
        sent += buf.len() as u64;
        buf.clear();
        if events.send(Event::Buffer(buf)).is_err() {
            return;
        }
    }
    // The request ends with a newline, for programs that read a line. A program that stops
    // reading at the closing brace and exits may leave it unwritten: not an error.
    let _ = stdin.write_all(b"\n");
    drop(stdin);
    let _ = events.send(Event::Written(Ok(())));
}

/// The stdout thread: parses lines as they arrive, and stops at the first bad one (including
/// one line more than requested, or a line longer than [`MAX_LINE`]).
fn read_releases(
    stdout: impl Read,
    n: usize,
    expected_dim: Option<usize>,
) -> Result<LineParser, String> {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut parser = LineParser::new(Some(n), expected_dim);
    let mut line = Vec::new();
    loop {
        line.clear();
        let got = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("cannot read stdout: {e}"))?;
        if got == 0 {
            return Ok(parser);
        }
        let line_no = parser.lines() + 1;
        if line.len() > MAX_LINE {
            return Err(format!(
                "line {line_no} is longer than {} MiB",
                MAX_LINE >> 20
            ));
        }
        let text =
            std::str::from_utf8(&line).map_err(|_| format!("line {line_no} is not UTF-8"))?;
        parser.push(text)?;
    }
}

/// The stderr thread: reads to the end, keeping only the last [`STDERR_KEEP`] bytes or so.
fn drain_tail(mut stderr: impl Read, tail: &Mutex<Vec<u8>>) {
    let mut chunk = vec![0u8; 8 * 1024];
    loop {
        match stderr.read(&mut chunk) {
            Ok(0) => return,
            Ok(k) => {
                let mut t = lock(tail);
                t.extend_from_slice(&chunk[..k]);
                if t.len() > 2 * STDERR_KEEP {
                    let cut = t.len() - STDERR_KEEP;
                    t.drain(..cut);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Whether a failure status is that of a program killed by SIGPIPE or reporting a broken pipe
/// (EPIPE) on stderr: what a program that is still writing does when its stdout is closed.
fn broken_pipe(status: &ExitStatus, stderr_tail: &str) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal() == Some(libc::SIGPIPE) || without_broken_pipe(stderr_tail).is_some()
}

/// The stderr tail cut before the report of a broken pipe (Python's traceback ending in
/// `BrokenPipeError` or its "Exception ignored in: …stdout…" note; any other line naming a
/// broken pipe or EPIPE), or `None` when it reports none.
fn without_broken_pipe(tail: &str) -> Option<String> {
    let at = ["BrokenPipeError", "Broken pipe", "broken pipe", "EPIPE"]
        .iter()
        .filter_map(|m| tail.find(m))
        .min()?;
    let before = &tail[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let cut = ["Traceback (most recent call last):", "Exception ignored in"]
        .iter()
        .filter_map(|h| before.rfind(h))
        .max()
        .unwrap_or(line_start)
        .min(line_start);
    Some(tail[..cut].trim_end().to_string())
}

/// The last 800 characters of stderr so far.
fn stderr_tail(tail: &Mutex<Vec<u8>>) -> String {
    let bytes = lock(tail).clone();
    let text = String::from_utf8_lossy(&bytes);
    let t = text.trim_end();
    let start = t.len().saturating_sub(800);
    t[t.floor_char_boundary(start)..].to_string()
}

impl Mechanism for ExecMechanism {
    fn id(&self) -> &str {
        &self.command
    }
    fn claim(&self) -> PrivacyClaim {
        self.claim
    }
    fn claim_source(&self) -> String {
        "given on the command line".into()
    }
    fn neighboring(&self) -> Neighboring {
        self.neighboring
    }
    fn setting(&self) -> crate::mechanisms::DpSetting {
        self.setting
    }
    fn dp_fy_scope(&self) -> crate::mechanisms::accounting::dpfy::DpFyScope {
        self.scope
    }
    fn privacy_unit(&self) -> String {
        match &self.privacy_unit {
            Some(unit) => unit.clone(),
            None => {
                crate::mechanisms::mechanism::privacy_unit_words(self.neighboring, self.setting)
            }
        }
    }
    fn domain(&self) -> RecordDomain {
        self.domain
    }
    fn output_dim(&self) -> usize {
        self.output_dim
    }
    fn batch_size(&self) -> Option<usize> {
        Some(self.batch.load(std::sync::atomic::Ordering::Relaxed))
    }
    fn set_batch_size(&self, batch: usize) -> bool {
        self.batch
            .store(batch.max(1), std::sync::atomic::Ordering::Relaxed);
        true
    }
    fn set_call_limit(&self, limit: Option<Duration>) {
        let nanos = limit.map_or(0, |l| {
            u64::try_from(l.as_nanos()).unwrap_or(u64::MAX).max(1)
        });
        self.call_limit
            .store(nanos, std::sync::atomic::Ordering::Relaxed);
    }
    fn set_deadline(&self, deadline: Option<Instant>) {
        *lock(&self.deadline) = deadline;
    }
    fn accountant_range(&self) -> Option<crate::mechanisms::AccountantRange> {
        self.accountant.clone()
    }
    fn sample(
        &self,
        dataset: &Dataset,
        n: usize,
        rng: &mut dyn Rng,
    ) -> Result<Samples, MechanismError> {
        // One request per call: the runner splits large draws into calls of `batch_size()`
        // releases (one process each, run in parallel by rayon), which amortizes start-up cost.
        let seed = rng.next_u64();
        self.request(Request::One(dataset, n), seed, Some(self.output_dim), true)
    }
    fn datasets_per_call(&self) -> Option<usize> {
        self.datasets_per_request
    }
    fn sample_each(
        &self,
        datasets: &[Dataset],
        rng: &mut dyn Rng,
    ) -> Result<Samples, MechanismError> {
        if self.datasets_per_request.is_none() {
            // One request per dataset, as the protocol's plain form asks.
            let mut flat = Vec::new();
            for d in datasets {
                flat.extend(self.sample(d, 1, rng)?.values().iter().copied());
            }
            return Samples::from_flat(self.output_dim, flat);
        }
        // Each dataset differs, so the same releases in two requests are no sign of a constant
        // seed: the seed check applies to one-dataset requests only.
        let seed = rng.next_u64();
        self.request(Request::Many(datasets), seed, Some(self.output_dim), false)
    }
}

/// Parses the line format: one release per line, a JSON number or array of numbers (or plain
/// numbers separated by spaces or commas), the same
/// length on every line, finite values only. `expected_n` and `expected_dim` are enforced when
/// given. Errors name the first bad line (1-based) and what is wrong.
pub fn parse_lines(
    text: &str,
    expected_n: Option<usize>,
    expected_dim: Option<usize>,
) -> Result<Samples, String> {
    let mut parser = LineParser::new(expected_n, expected_dim);
    parser
        .push_text(text)
        .map_err(|e| e.replace(NON_FINITE, ""))?;
    parser.finish()
}

/// [`parse_lines`] on a chunk of a longer file whose first line is line `first_line + 1` of the
/// file: errors name the file's line numbers. The chunk must hold at least one line.
pub(crate) fn parse_chunk(
    text: &str,
    first_line: usize,
    expected_dim: Option<usize>,
) -> Result<Samples, String> {
    let mut parser = LineParser::new(None, expected_dim);
    parser.first_line = first_line;
    parser
        .push_text(text)
        .map_err(|e| e.replace(NON_FINITE, ""))?;
    parser.finish()
}

/// The line format, one line at a time (see [`parse_lines`]).
struct LineParser {
    expected_n: Option<usize>,
    dim: Option<usize>,
    flat: Vec<f64>,
    count: usize,
    /// Lines before the first one pushed (for the line numbers of errors).
    first_line: usize,
}

impl LineParser {
    fn new(expected_n: Option<usize>, expected_dim: Option<usize>) -> Self {
        // Known sizes: one allocation (capped, in case a caller asks for absurd counts).
        let size = match (expected_n, expected_dim) {
            (Some(n), Some(d)) => n.saturating_mul(d).min(1 << 24),
            _ => 0,
        };
        Self {
            expected_n,
            dim: expected_dim,
            flat: Vec::with_capacity(size),
            count: 0,
            first_line: 0,
        }
    }

    /// Lines accepted so far.
    fn lines(&self) -> usize {
        self.count
    }

    /// Parses every line of `text`, as [`str::lines`] splits it (`\n` or `\r\n` ends a line; a
    /// last line may have no end), each as [`LineParser::push`] would.
    ///
    /// Fast path, most lines of a shard or an answer: a lone number in plain notation that ends
    /// its line, read where it stands by `fast_float2::parse_partial` (no line split, trim or
    /// byte scan before the parse; about twice the speed of `str::lines` and `str::parse` on a
    /// shard of 17-digit numbers). It is taken only where `push` would take its own fast path
    /// with the same value: every byte a plain-number byte, the line wholly consumed, a finite
    /// result, and a line that is neither the first of the input (a byte-order mark is dropped
    /// there) nor one past an expected count. Both parsers round correctly, so a string both
    /// accept gives the same `f64`; a string only `fast_float2` accepts would never reach it
    /// (the unit test `fast_lines_are_push_lines` compares them on every plain string up to
    /// four bytes and on random ones). Any other line goes to `push`.
    fn push_text(&mut self, text: &str) -> Result<(), String> {
        let bytes = text.as_bytes();
        let mut pos = 0usize;
        while pos < bytes.len() {
            if let Some(next) = self.fast_line(bytes, pos) {
                pos = next;
                continue;
            }
            let end = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |k| pos + k + 1);
            // `lines()` on the one line gives exactly the line `text.lines()` would (its `\n` or
            // `\r\n` dropped); `pos` and `end` are at line starts, so at char boundaries.
            let line = text[pos..end].lines().next().unwrap_or("");
            self.push(line)?;
            pos = end;
        }
        Ok(())
    }

    /// The fast path of [`LineParser::push_text`] at byte `pos` (a line start): where the line
    /// is a lone plain number, it is pushed and the start of the next line returned.
    fn fast_line(&mut self, bytes: &[u8], pos: usize) -> Option<usize> {
        let line_no = self.first_line + self.count + 1;
        if line_no == 1
            || self.dim.is_some_and(|d| d != 1)
            || self.expected_n.is_some_and(|n| self.count >= n)
        {
            return None;
        }
        let (v, k) = fast_float2::parse_partial::<f64, _>(&bytes[pos..]).ok()?;
        let end = pos + k;
        let next = match (bytes.get(end), bytes.get(end + 1)) {
            (None, _) => end,
            (Some(b'\n'), _) => end + 1,
            (Some(b'\r'), Some(b'\n')) => end + 2,
            _ => return None,
        };
        // The line is the number fast_float read, whole: its grammar ([+-] digits [. digits]
        // [e|E [+-] digits], or an infinity or NaN, which are not finite) has only plain-number
        // bytes, so a finite number read to the line's end is a plain-number line, the kind
        // `push` reads the same way (unit test `fast_lines_are_push_lines`, letters included).
        if k == 0 || !v.is_finite() {
            return None;
        }
        self.dim = Some(1);
        self.flat.push(v);
        self.count += 1;
        Some(next)
    }

    /// Parses the next line (its line break may be included).
    fn push(&mut self, line: &str) -> Result<(), String> {
        let line_no = self.first_line + self.count + 1;
        // A byte-order mark starting the output (or file) is skipped (see crate::sources::text).
        let line = if line_no == 1 {
            crate::sources::text::strip_bom(line)
        } else {
            line
        };
        let l = line.trim();
        // Blank lines after the last release (`print(text + "\n")`) are not releases.
        if l.is_empty()
            && let Some(n) = self.expected_n
            && self.count == n
        {
            return Ok(());
        }
        if let Some(n) = self.expected_n
            && self.count == n
        {
            return Err(format!(
                "more than the {n} lines requested (line {line_no}: {})",
                clip(l)
            ));
        }
        if l.is_empty() {
            return Err(format!("line {line_no} is empty"));
        }
        // Fast path, most lines of a shard or an answer: a lone number in plain notation. Rust's
        // correctly rounded parser gives the same f64 as JSON for every such line (and reads
        // the ones JSON refuses, `1.` or `+2`, as `plain_numbers` below would); a non-finite
        // result, or any other line, takes the general path.
        if self.dim.is_none_or(|d| d == 1)
            && l.bytes().all(plain_number_byte)
            && let Ok(v) = l.parse::<f64>()
            && v.is_finite()
        {
            self.dim = Some(1);
            self.flat.push(v);
            self.count += 1;
            return Ok(());
        }
        // Arrays of plain numbers (`[0.5, 1e-3]`) likewise, without building a JSON value.
        let row = if l
            .bytes()
            .all(|b| plain_number_byte(b) || b"[], \t".contains(&b))
        {
            plain_numbers(l)
        } else {
            None
        };
        let row = match row {
            Some(row) => row,
            None => self.general(l, line_no)?,
        };
        if row.is_empty() {
            return Err(format!("line {line_no} is an empty array"));
        }
        match self.dim {
            None => self.dim = Some(row.len()),
            Some(d) if d != row.len() => {
                return Err(format!(
                    "line {line_no} has {} values; earlier lines (or the mechanism) have {d}",
                    row.len()
                ));
            }
            _ => {}
        }
        self.flat.extend(row);
        self.count += 1;
        Ok(())
    }

    /// The values of a line that is not plain numbers: JSON (with Python's booleans), or plain
    /// numbers after all, or an error naming what is wrong.
    fn general(&self, l: &str, line_no: usize) -> Result<Vec<f64>, String> {
        // Python's booleans (`True`, `False`) read as JSON's (`true`, `false`): 1 and 0, a
        // fixed one-to-one recoding (randomized response printed with `print(bit)`).
        let recoded;
        let l = if l.contains("True") || l.contains("False") {
            recoded = l.replace("True", "true").replace("False", "false");
            recoded.as_str()
        } else {
            l
        };
        let row: Vec<f64> = match serde_json::from_str::<serde_json::Value>(l) {
            Ok(serde_json::Value::Number(x)) => vec![number(&x, line_no, l)?],
            Ok(serde_json::Value::Bool(b)) => vec![f64::from(u8::from(b))],
            Ok(serde_json::Value::Array(xs)) => xs
                .iter()
                .map(|x| match x {
                    serde_json::Value::Number(x) => number(x, line_no, l),
                    serde_json::Value::Bool(b) => Ok(f64::from(u8::from(*b))),
                    other => Err(format!(
                        "line {line_no}: {other} is not a number: {}",
                        clip(l)
                    )),
                })
                .collect::<Result<_, _>>()?,
            Ok(other) => {
                return Err(format!(
                    "line {line_no}: {} is not a number or an array of numbers",
                    clip(&other.to_string())
                ));
            }
            Err(_) if has_non_finite_token(l) => {
                return Err(format!(
                    "{NON_FINITE}line {line_no} holds a non-finite value (NaN or ∞): {}",
                    clip(l)
                ));
            }
            // Not JSON, but numbers as programs print them without a JSON library:
            // `1 2 3` (C's printf), `[1. 2. 3.]` (NumPy's print), `1,2,3` (CSV).
            Err(e) => plain_numbers(l).ok_or_else(|| {
                format!(
                    "line {line_no} is not a JSON number or array, nor numbers separated by spaces or commas ({e}){}: {}",
                    crate::sources::text::bom_note(l),
                    clip(l)
                )
            })?,
        };
        Ok(row)
    }

    /// The releases, once every line is in.
    fn finish(self) -> Result<Samples, String> {
        if let Some(n) = self.expected_n
            && self.count != n
        {
            return Err(format!("{} lines printed, {n} requested", self.count));
        }
        let dim = self
            .dim
            .ok_or_else(|| "no releases (empty output)".to_string())?;
        Samples::from_flat(dim, self.flat).map_err(|e| e.to_string())
    }
}

fn number(x: &serde_json::Number, line_no: usize, line: &str) -> Result<f64, String> {
    let v = x
        .as_f64()
        .ok_or_else(|| format!("line {line_no}: {x} is not representable as f64"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!(
            "{NON_FINITE}line {line_no}: {x} is not finite: {}",
            clip(line)
        ))
    }
}

/// Bytes of a number in plain notation (digits, signs, decimal point, exponent).
fn plain_number_byte(b: u8) -> bool {
    b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')
}

/// Marks a parse error for a non-finite value (NaN or ∞, which the testers cannot take): the
/// program answered, but not with a release dp-audit can test, so a search skips that dataset
/// as refused (see [`MechanismError::Refused`]). Stripped from the message shown.
const NON_FINITE: &str = "\u{0}non-finite\u{0}";

/// The numbers of a line that is not JSON but plain numbers: at most one pair of enclosing
/// brackets (`[…]` or `(…)`), values separated by commas and/or white space, each read by Rust's
/// correctly rounded `f64` parser (so `1.` and `+2e-3` read bit-exactly as printed). `None`
/// unless every token is a finite number. A fixed one-to-one reading of the printed text, like
/// JSON's.
fn plain_numbers(line: &str) -> Option<Vec<f64>> {
    let inner = line
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .or_else(|| line.strip_prefix('(').and_then(|r| r.strip_suffix(')')))
        .unwrap_or(line);
    let mut row = Vec::new();
    for token in inner
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
    {
        let v: f64 = token.parse().ok()?;
        if !v.is_finite() {
            return None;
        }
        row.push(v);
    }
    (!row.is_empty()).then_some(row)
}

/// Whether a line that is not JSON holds a token of a non-finite float as programs print them
/// (`nan`, `NaN`, `inf`, `-inf`, `Infinity`, …), alone or as an array element.
fn has_non_finite_token(line: &str) -> bool {
    line.split(|c: char| c == ',' || c == '[' || c == ']' || c.is_whitespace())
        .map(|t| t.trim_start_matches(['+', '-']).to_ascii_lowercase())
        .any(|t| t == "nan" || t == "inf" || t == "infinity")
}

fn clip(s: &str) -> String {
    if s.len() > 120 {
        format!("{}…", &s[..s.floor_char_boundary(120)])
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parse before `push_text`'s fast path: every line through `push`.
    fn line_by_line(
        text: &str,
        first_line: usize,
        n: Option<usize>,
        d: Option<usize>,
    ) -> Result<Samples, String> {
        let mut parser = LineParser::new(n, d);
        parser.first_line = first_line;
        for line in text.lines() {
            parser.push(line).map_err(|e| e.replace(NON_FINITE, ""))?;
        }
        parser.finish()
    }

    /// Both parses of `text` from the file's line `first + 1`, as values' bits or the error.
    fn both(text: &str, first: usize, n: Option<usize>, d: Option<usize>) -> [String; 2] {
        let show = |r: Result<Samples, String>| match r {
            Ok(s) => format!(
                "{}x{} {:?}",
                s.n(),
                s.dim(),
                s.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>()
            ),
            Err(e) => format!("error: {e}"),
        };
        let mut parser = LineParser::new(n, d);
        parser.first_line = first;
        let fast = parser
            .push_text(text)
            .map_err(|e| e.replace(NON_FINITE, ""))
            .and_then(|()| parser.finish());
        [show(fast), show(line_by_line(text, first, n, d))]
    }

    #[test]
    fn fast_lines_are_push_lines() {
        // Every string of up to four plain-number bytes, alone and between two numbers, first
        // line of the file or not: the same values (bit for bit) or the same error.
        let alphabet = b"0123456789+-.eE";
        let mut strings: Vec<String> = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..4 {
            last = last
                .iter()
                .flat_map(|p| alphabet.iter().map(move |&c| format!("{p}{}", c as char)))
                .collect();
            strings.extend(last.iter().cloned());
        }
        // Strings of up to three bytes with letters too (the words of infinities and NaNs, hex
        // and other marks): a finite number is read to the end of a line only from plain-number
        // bytes, so none of them takes the fast path.
        let letters = b"0123456789+-.eEinfatyINFATYxX_ ";
        let mut short = vec![String::new()];
        for _ in 0..3 {
            short = short
                .iter()
                .flat_map(|p| letters.iter().map(move |&c| format!("{p}{}", c as char)))
                .collect();
            strings.extend(short.iter().cloned());
        }
        strings.extend(
            [
                "inf",
                "-inf",
                "infinity",
                "+Infinity",
                "nan",
                "NaN",
                "-nan",
                "1e5x",
                "0x1p3",
            ]
            .map(String::from),
        );
        // Longer ones: long digit strings, exponents at the range's ends, spaces and marks.
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(54);
        for _ in 0..20_000 {
            let len = rng.random_range(5..30);
            let pick = b"0123456789+-.eE \t,[]\r";
            strings.push(
                (0..len)
                    .map(|_| pick[rng.random_range(0..pick.len())] as char)
                    .collect(),
            );
        }
        strings.extend(
            [
                "1e308",
                "1e309",
                "-1e400",
                "4.9e-324",
                "2e-324",
                "1e-400",
                "+.5",
                "-.5e-3",
                "5.",
                ".",
                "e5",
                "1e",
                "1e+",
                "00.0100",
                "\u{feff}1.5",
                "1.5 ",
                " 1.5",
                "[1.5]",
                "12345678901234567890123456789e-10",
                "0.30000000000000004",
                "True",
            ]
            .map(String::from),
        );
        for x in &strings {
            for text in [
                x.to_string(),
                format!("{x}\n"),
                format!("1.25\n{x}\r\n-3\n"),
                format!("2\r\n{x}\n\n"),
            ] {
                for first in [0, 7] {
                    for (n, d) in [(None, None), (None, Some(1)), (Some(2), None)] {
                        let [fast, slow] = both(&text, first, n, d);
                        assert_eq!(fast, slow, "{text:?} from line {}", first + 1);
                    }
                }
            }
        }
    }

    /// Hard cases for decimal → f64 parsing: the shortest round-trip representations of
    /// subnormals, extremes, halfway cases and values where a naive parser is off by one ulp.
    #[test]
    fn the_fast_path_reads_what_json_reads() {
        // Every line JSON reads as a number or an array of numbers gives the same bits through
        // the fast path (plain numbers, no JSON value built) as through serde_json.
        let mut lines: Vec<String> = [
            "0.1",
            "-0",
            "-0.0",
            "0",
            "5e-324",
            "2.4703282292062328e-324",
            "1.7976931348623157e308",
            "9007199254740993",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "1E5",
            "1e+5",
            "3.0000000000000004440892098500626161694526672363281250001",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut bits = 0x2545_F491_4F6C_DD1Du64;
        for _ in 0..5_000 {
            bits = bits
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = f64::from_bits(bits);
            if v.is_finite() {
                lines.push(format!("{v:e}"));
                lines.push(format!("{v}"));
            }
        }
        for l in &lines {
            let json: f64 = serde_json::from_str(l).unwrap();
            let fast = parse_lines(l, Some(1), None).unwrap();
            assert_eq!(fast.values()[[0, 0]].to_bits(), json.to_bits(), "{l}");
            let arr = format!("[{l}, {l}]");
            let json: Vec<f64> = serde_json::from_str(&arr).unwrap();
            let fast = parse_lines(&arr, Some(1), None).unwrap();
            assert_eq!(fast.values()[[0, 1]].to_bits(), json[1].to_bits(), "{arr}");
        }
        // Not plain numbers, or not finite: the general path and its errors, as before.
        assert!(parse_lines("1e400", None, None).is_err());
        assert!(
            parse_lines("[]", None, None)
                .unwrap_err()
                .contains("empty array")
        );
        assert_eq!(
            parse_lines("True", None, None).unwrap().values()[[0, 0]],
            1.0
        );
    }

    #[test]
    fn numbers_round_trip_bit_exactly() {
        // Decimal strings whose correctly rounded value a naive parser misses by an ulp, plus
        // subnormals, extremes and halfway cases; Rust's `str::parse` is correctly rounded.
        let hard = [
            "0.1",
            "2.2250738585072011e-308",
            "2.2250738585072014e-308",
            "5e-324",
            "2.4703282292062328e-324",
            "1.7976931348623157e308",
            "9007199254740993",
            "0.30000000000000004",
            "8.41e21",
            "1.448997445238699",
            "7.2057594037927933e16",
            "-4.4e-323",
            "123456789012345680000",
            "3.0000000000000004440892098500626161694526672363281250001",
        ];
        let text: String = hard.iter().map(|h| format!("{h}\n")).collect();
        let s = parse_lines(&text, Some(hard.len()), None).unwrap();
        for (i, h) in hard.iter().enumerate() {
            let want: f64 = h.parse().unwrap();
            assert_eq!(s.values()[[i, 0]].to_bits(), want.to_bits(), "{h}");
        }
        // Also a sweep of "random" bit patterns: every printed value must read back to its bits.
        let mut bits = 0x9E37_79B9_7F4A_7C15u64;
        let mut values: Vec<f64> = Vec::new();
        for _ in 0..20_000 {
            bits = bits
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = f64::from_bits(bits);
            if v.is_finite() {
                values.push(v);
            }
        }
        let text: String = values.iter().map(|v| format!("{v:e}\n")).collect();
        let s = parse_lines(&text, Some(values.len()), None).unwrap();
        for (i, v) in values.iter().enumerate() {
            assert_eq!(s.values()[[i, 0]].to_bits(), v.to_bits(), "{v:e}");
        }
        let text: String = values.iter().map(|v| format!("[{v}, {v:?}]\n")).collect();
        let s = parse_lines(&text, None, Some(2)).unwrap();
        for (i, v) in values.iter().enumerate() {
            assert_eq!(s.values()[[i, 1]].to_bits(), v.to_bits());
        }
    }

    /// Booleans read as 1 and 0, in JSON's and Python's spelling, alone or in arrays; NaN and ∞
    /// are errors whose message carries no marker.
    #[test]
    fn booleans_read_as_numbers_and_non_finite_values_are_named() {
        let s = parse_lines("True\nfalse\n1\n", Some(3), None).unwrap();
        assert_eq!(s.values().column(0).to_vec(), vec![1.0, 0.0, 1.0]);
        let s = parse_lines("[True, False, 2.5]\n[false, true, 0]\n", None, Some(3)).unwrap();
        assert_eq!(s.values().row(1).to_vec(), vec![0.0, 1.0, 0.0]);
        for bad in ["nan", "[1, -inf]", "Infinity", "[NaN]"] {
            let err = parse_lines(bad, None, None).unwrap_err();
            assert!(err.contains("non-finite"), "{bad}: {err}");
            assert!(!err.contains('\u{0}'), "{bad}: {err:?}");
        }
        assert!(!has_non_finite_token("[1, 2, infinite]"));
    }

    /// Plain numbers as programs print them without JSON: printf's spaces, NumPy's bracketed
    /// arrays, CSV; read bit-exactly. Anything else still names the line.
    #[test]
    fn plain_number_lines_read_like_json() {
        let s = parse_lines("1 2.5 -3\n[1. 2. 3.]\n4,5,6e-1\n(7, 8, 9)\n", None, None).unwrap();
        assert_eq!(s.dim(), 3);
        assert_eq!(s.values().row(1).to_vec(), vec![1.0, 2.0, 3.0]);
        assert_eq!(s.values().row(2).to_vec(), vec![4.0, 5.0, 0.6]);
        let s = parse_lines("0.1\n1.\n", None, None).unwrap();
        assert_eq!(s.values()[[0, 0]].to_bits(), 0.1f64.to_bits());
        assert_eq!(s.values()[[1, 0]], 1.0);
        for bad in ["1 two 3", "[1 2", "{}", "1;2"] {
            let err = parse_lines(bad, None, None).unwrap_err();
            assert!(err.contains("line 1"), "{bad}: {err}");
        }
        assert!(
            parse_lines("[1 2]\n[1 2 3]\n", None, None)
                .unwrap_err()
                .contains("line 2")
        );
        // Blank lines after the last release are ignored; before it they are errors.
        assert_eq!(parse_lines("1\n2\n\n\n", Some(2), None).unwrap().n(), 2);
        let err = parse_lines("1\n\n2\n", Some(2), None).unwrap_err();
        assert!(err.contains("line 2 is empty"), "{err}");
    }

    /// Extra keys (a final-model audit's initial model and queries) sit between the dataset
    /// and the count, in sorted order: the request is what serde_json prints for the object.
    #[test]
    fn extra_request_keys_are_written_in_order() {
        let d = Dataset::vectors(2, &[vec![0.5, -1.0], vec![1e-3, 2.0]]).unwrap();
        let keys = serde_json::json!({"queries": [[1.0, -1.0]], "initial_model": [0.25, -0.0]});
        let extra = match &keys {
            serde_json::Value::Object(m) => request_extra(m).unwrap(),
            _ => unreachable!(),
        };
        let mut own = serde_json::Map::new();
        own.insert("seed".into(), 1.into());
        assert!(
            request_extra(&own)
                .unwrap_err()
                .contains("\"seed\" is the protocol's own")
        );
        let mut chunks = RequestChunks {
            what: Request::One(&d, 3),
            seed: 9,
            extra: &extra,
            dataset: 0,
            next: 0,
            started: false,
        };
        let mut buf = Vec::new();
        while chunks.fill(&mut buf) {}
        let want = serde_json::json!({
            "dataset": d.to_json_records(),
            "initial_model": [0.25, -0.0],
            "queries": [[1.0, -1.0]],
            "samples": 3,
            "seed": 9,
        })
        .to_string();
        assert_eq!(String::from_utf8(buf).unwrap(), want);
        assert_eq!(extra_key_names(&extra), "\"initial_model\", \"queries\"");
    }

    /// The streamed request is, byte for byte, what serde_json prints for the whole object
    /// (as before streaming), across chunk boundaries, for scalar and vector records.
    #[test]
    fn streamed_request_matches_serde_json() {
        let scalars: Vec<f64> = (0..20_000).map(|i| (i as f64).sqrt() * 1e-3).collect();
        let rows: Vec<Vec<f64>> = (0..9_000)
            .map(|i| vec![-(i as f64), 1e300 / (1.0 + i as f64), 5e-324])
            .collect();
        let all_of = |mut chunks: RequestChunks<'_>| {
            let mut all = Vec::new();
            loop {
                let mut buf = Vec::new();
                let more = chunks.fill(&mut buf);
                all.extend_from_slice(&buf);
                if !more {
                    return String::from_utf8(all).unwrap();
                }
                assert!(buf.len() >= WRITE_CHUNK);
            }
        };
        let datasets = [
            Dataset::scalars(scalars).unwrap(),
            Dataset::vectors(3, &rows).unwrap(),
            Dataset::scalars(vec![-0.0]).unwrap(),
            Dataset::empty(1).unwrap(),
        ];
        // Many datasets in one request (`--exec-datasets`): the empty one included.
        for many in [&datasets[..], &datasets[2..], &datasets[3..], &[]] {
            let got = all_of(RequestChunks {
                what: Request::Many(many),
                seed: 7,
                extra: "",
                dataset: 0,
                next: 0,
                started: false,
            });
            let want = serde_json::json!({
                "datasets": many.iter().map(|d| d.to_json_records()).collect::<Vec<_>>(),
                "samples": many.len(),
                "seed": 7,
            })
            .to_string();
            assert_eq!(got, want);
        }
        for d in datasets {
            let mut chunks = RequestChunks {
                what: Request::One(&d, 50_000),
                seed: u64::MAX,
                extra: "",
                dataset: 0,
                next: 0,
                started: false,
            };
            let mut all = Vec::new();
            let mut parts = 0;
            loop {
                let mut buf = Vec::new();
                let more = chunks.fill(&mut buf);
                all.extend_from_slice(&buf);
                parts += 1;
                if !more {
                    break;
                }
                assert!(buf.len() >= WRITE_CHUNK);
            }
            let want = serde_json::json!({
                "dataset": d.to_json_records(),
                "samples": 50_000,
                "seed": u64::MAX,
            })
            .to_string();
            assert_eq!(String::from_utf8(all).unwrap(), want);
            assert!(d.len() < 1000 || parts > 1, "several chunks");
        }
    }

    /// What counts as evidence: enough releases, enough estimated randomness, and the order
    /// fingerprint survives a shift and scaling.
    #[test]
    fn fingerprints_need_enough_randomness() {
        let x: Vec<f64> = (0..1000).map(|i| (i as f64 * 0.7).sin()).collect();
        let p = fingerprints(&Samples::from_column(x.clone()));
        assert_eq!(p.len(), 2, "{p:?}");
        // 22 distinct releases: 22·log2(22) = 98.1 bits ≥ 96 (21 give 92.2).
        assert!(p[0].1.contains("first 22 releases"), "{}", p[0].1);
        assert!(p[1].1.contains("same order"), "{}", p[1].1);
        // A shifted, scaled copy: other bits, the same order.
        let y: Vec<f64> = x.iter().map(|v| 3.0 + 2.0 * v).collect();
        let q = fingerprints(&Samples::from_column(y));
        assert_ne!(p[0].0, q[0].0);
        assert_eq!(p[1].0, q[1].0);
        // A prefix of the batch has the same fingerprints.
        let r = fingerprints(&Samples::from_column(x[..30].to_vec()));
        assert_eq!((p[0].0, p[1].0), (r[0].0, r[1].0));
        // Too short, constant, or too little randomness: nothing.
        assert!(fingerprints(&Samples::from_column(x[..15].to_vec())).is_empty());
        assert!(fingerprints(&Samples::from_column(vec![0.5; 50_000])).is_empty());
        let mut state = 7u64;
        let mut bits = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (state >> 63) as f64
                })
                .collect()
        };
        // 64 fair bits hold at most 64 bits: never evidence.
        assert!(fingerprints(&Samples::from_column(bits(64))).is_empty());
        // 1000 of them do (about 96–110 needed); their order is never used (ties).
        let p = fingerprints(&Samples::from_column(bits(1000)));
        assert_eq!(p.len(), 1, "{p:?}");
        // One odd release among 50 000 is about 3 bits: not evidence.
        let mut rare = vec![1.0; 50_000];
        rare[7] = 0.0;
        assert!(fingerprints(&Samples::from_column(rare)).is_empty());
        // Ties in the first coordinate: the order of the second is used.
        let rows: Vec<f64> = (0..30).flat_map(|i| [0.0, (i as f64).cos()]).collect();
        let p = fingerprints(&Samples::from_flat(2, rows).unwrap());
        assert!(p.iter().any(|(_, w)| w.contains("coordinate 1")), "{p:?}");
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse_lines("1\n2\nfoo\n", Some(3), None).unwrap_err();
        assert!(e.contains("line 3"), "{e}");
        let e = parse_lines("1\n[1,2]\n", Some(2), None).unwrap_err();
        assert!(e.contains("line 2") && e.contains("2 values"), "{e}");
        let e = parse_lines("1\n2\n", Some(3), None).unwrap_err();
        assert!(e.contains("2 lines printed, 3 requested"), "{e}");
        let e = parse_lines("1\n2\n3\n", Some(2), None).unwrap_err();
        assert!(e.contains("more than the 2 lines"), "{e}");
        let e = parse_lines("[1, \"a\"]\n", None, None).unwrap_err();
        assert!(e.contains("not a number"), "{e}");
        let e = parse_lines("1e999\n", None, None).unwrap_err();
        assert!(e.contains("line 1"), "{e}");
        let e = parse_lines("[]\n", None, None).unwrap_err();
        assert!(e.contains("empty array"), "{e}");
        assert!(parse_lines("", None, None).is_err());
    }
}
