//! `dp_audit._native`: the dp-audit engine for the `dp_audit` Python package.
//!
//! The Python layer (`python/dp_audit/__init__.py`) checks and shapes the arguments (numpy
//! float64 arrays, C-contiguous, 2-D) and builds the `Record` objects; this module calls the same
//! Rust functions as the `audit` CLI, with the GIL released while the engine works. Every error
//! comes back as a Python exception (`ValueError` for a bad input, `OSError` for a file,
//! `TimeoutError` for a callable past its time limit or a run past its budget, `RuntimeError`
//! otherwise), never as a panic. The engine runs on a thread of its own while the calling thread
//! handles signals, so Ctrl-C raises `KeyboardInterrupt`; where it calls a Python callable each
//! call runs on a worker ([`calls`]), so that a call can be given up on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dp_audit::gate::Gate;
use dp_audit::mechanisms::rand::Rng;
use dp_audit::modes::test::{GivenSides, TestOptions, test_given};
use dp_audit::record::layers::Check;
use dp_audit::{Dataset, DatasetPair, Mechanism, Neighboring, PrivacyClaim, RecordDomain, Samples};
use numpy::{PyArray2, PyReadonlyArray2};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyTimeoutError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

mod calls;
use calls::lock;
mod noise;

/// A dp-audit error as a Python exception: bad inputs are `ValueError`s.
fn to_py(e: dp_audit::Error) -> PyErr {
    use dp_audit::Error as E;
    match e {
        E::InvalidConfig(_)
        | E::InvalidSamples(_)
        | E::ClaimNotTestable { .. }
        | E::Mechanism(_) => PyValueError::new_err(e.to_string()),
        // A file that cannot be read or written: what Python raises for one (OSError).
        E::Io { .. } => PyOSError::new_err(e.to_string()),
        other => PyRuntimeError::new_err(other.to_string()),
    }
}

/// `audit test` on two arrays (releases × dimension): (JSON record, text, exit code).
#[pyfunction]
#[pyo3(signature = (a, b, claim, seed, failure_probability, testers, check, name_a, name_b, sequential=false, max_samples=None, first_batch=None))]
#[allow(clippy::too_many_arguments)]
fn test_samples(
    py: Python<'_>,
    a: PyReadonlyArray2<'_, f64>,
    b: PyReadonlyArray2<'_, f64>,
    claim: String,
    seed: u64,
    failure_probability: f64,
    testers: String,
    check: String,
    name_a: String,
    name_b: String,
    sequential: bool,
    max_samples: Option<usize>,
    first_batch: Option<usize>,
) -> PyResult<(String, String, u8)> {
    if !sequential && (max_samples.is_some() || first_batch.is_some()) {
        return Err(PyValueError::new_err(
            "max_samples or first_batch without sequential=True; allowed: those settings with sequential=True only",
        ));
    }
    for (name, v) in [("max_samples", max_samples), ("first_batch", first_batch)] {
        if v == Some(0) {
            return Err(PyValueError::new_err(format!(
                "{name}=0; allowed: a whole number ≥ 1 (releases per side)"
            )));
        }
    }
    let (va, vb) = (a.as_array(), b.as_array());
    // `audit test`'s defaults, these settings, and the command that gives the same record.
    let opts = TestOptions {
        samples_a: vec![name_a.clone().into()],
        samples_b: vec![name_b.clone().into()],
        claim: Some(claim),
        seed,
        failure_probability,
        tester: testers,
        check: Some(check),
        sequential,
        max_samples,
        first_batch,
        output: dp_audit::report::output::OutputOptions {
            no_report: true,
            quiet: true,
            json: true,
            ..TestOptions::default().output
        },
        ..TestOptions::default()
    };
    let reproduce = opts.reproduce_line();
    // One copy per side into the engine's own matrix (the GIL released meanwhile).
    let (va, vb) = py.detach(|| (va.to_owned(), vb.to_owned()));
    calls::interruptible(py, move || -> dp_audit::Result<(String, String, u8)> {
        let sa = Arc::new(Samples::new(va)?);
        let sb = Arc::new(Samples::new(vb)?);
        let sides = dp_audit::sources::shards::memory_sides((&name_a, sa), (&name_b, sb))?;
        let out = test_given(&opts, &GivenSides { sides, reproduce })?;
        Ok((out.json, out.text, out.code))
    })?
    .map_err(to_py)
}

/// The time limits of a Python callable's calls in one run, shared by the views of its
/// mechanism: the caller's ceiling on one call (`timeout=`, `--exec-timeout`), the search's
/// limit ([`Mechanism::set_call_limit`]), the run's deadline ([`Mechanism::set_deadline`], or
/// `--budget` until the engine sets one) and the stop flag Ctrl-C sets. A call is given
/// min(limit, ceiling, deadline − now), as an exec program's request is.
struct Limits {
    /// The caller's ceiling on one call; `None`: no limit.
    ceiling: Option<Duration>,
    /// How to raise the ceiling, in the words of the entry point (for the time-out's message).
    raise: String,
    /// The search's limit on one call, nanoseconds (0: none).
    call_limit: AtomicU64,
    /// The deadline the engine set, once it set one (`Some(None)`: none).
    engine_deadline: Mutex<Option<Option<Instant>>>,
    /// The backstop deadline of `--budget` ([`budget_grace`] after the budget) and the
    /// budget's seconds, used until the engine sets a deadline of its own.
    budget: Option<(Instant, f64)>,
    /// Set by Ctrl-C: no call is started and a running one is abandoned.
    stop: Arc<AtomicBool>,
    /// Why the run ran out of time, when a call ran past the ceiling or the run's deadline: the
    /// entry point raises it as `TimeoutError`.
    timed_out: Mutex<Option<String>>,
    /// Why a call's value was not real numbers (complex, objects, text): the entry point
    /// raises it as `TypeError`.
    bad_type: Mutex<Option<String>>,
}

impl Limits {
    fn new(ceiling: Option<f64>, raise: String, budget: Option<f64>) -> Arc<Self> {
        let start = Instant::now();
        Arc::new(Self {
            ceiling: ceiling.and_then(|s| Duration::try_from_secs_f64(s).ok()),
            raise,
            call_limit: AtomicU64::new(0),
            engine_deadline: Mutex::new(None),
            budget: budget.and_then(|b| {
                Duration::try_from_secs_f64(b + budget_grace(b))
                    .ok()
                    .and_then(|d| start.checked_add(d))
                    .map(|end| (end, b))
            }),
            stop: Arc::new(AtomicBool::new(false)),
            timed_out: Mutex::new(None),
            bad_type: Mutex::new(None),
        })
    }

    /// The run's deadline: the engine's once it set one, else `--budget`'s (true: it is the
    /// budget's).
    fn run_end(&self) -> Option<(Instant, bool)> {
        match *lock(&self.engine_deadline) {
            Some(engine) => engine.map(|d| (d, false)),
            None => self.budget.map(|(d, _)| (d, true)),
        }
    }

    /// Keeps the first reason the run ran out of time.
    fn note(&self, why: String) {
        lock(&self.timed_out).get_or_insert(why);
    }
}

/// Seconds past a `--budget` of `b` seconds at which the backstop deadline falls: a tenth of
/// it, at least 2 s. The engine at this commit plans to its budget but does not stop at it (runs
/// of the pacing table in docs/python.md ended 0.2 to 0.7 s past 60 s), and a deadline exactly
/// at the budget would abandon the last calls of a run that was about to answer; the grace lets
/// such a run finish while a run that goes far past its budget (a callable that became slow)
/// is stopped. When the engine sets a deadline itself ([`Mechanism::set_deadline`]) that one
/// is used, exactly.
fn budget_grace(b: f64) -> f64 {
    (0.1 * b).max(2.0)
}

/// A Python callable `mechanism(dataset, n, seed) -> array` as a [`Mechanism`]: each chunk of
/// releases is one call, with a seed drawn from the engine's generator for that chunk (so an
/// audit is as deterministic as the callable is in its seed). Each call runs on a worker thread
/// (see [`calls`]) within the time its [`Limits`] give it.
struct PyMechanism {
    id: String,
    function: Py<PyAny>,
    claim: PrivacyClaim,
    neighboring: Neighboring,
    domain: RecordDomain,
    output_dim: usize,
    /// Releases per call (`None`: the engine's chunk, 4096); `audit_run` sets the exec
    /// program's batch, so that the callable is called with the sizes and seeds the program
    /// would be.
    batch: Option<usize>,
    /// Where the claim comes from (`None`: the trait's default); `audit_run` says what an exec
    /// program's record says.
    claim_source: Option<String>,
    /// Where the mechanism runs (`audit_run`'s `--setting`; central elsewhere). For the report.
    setting: dp_audit::mechanisms::DpSetting,
    /// What one neighbouring change is, in the user's words (`audit_run`'s `--privacy-unit`);
    /// `None`: the words of the relation and setting. For the report.
    privacy_unit: Option<String>,
    /// The first exception the callable raised (re-raised to the caller).
    raised: Arc<Mutex<Option<PyErr>>>,
    /// The time limits of its calls.
    limits: Arc<Limits>,
}

impl std::fmt::Debug for PyMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PyMechanism({})", self.id)
    }
}

/// Which bound a call's deadline is.
enum Binding {
    /// The search's limit on one call, seconds.
    Limit(f64),
    /// The caller's ceiling, seconds.
    Ceiling(f64),
    /// The run's deadline (true: `--budget`'s, set here).
    Run(bool),
}

impl Mechanism for PyMechanism {
    fn id(&self) -> &str {
        &self.id
    }
    fn claim(&self) -> PrivacyClaim {
        self.claim
    }
    fn claim_source(&self) -> String {
        self.claim_source
            .clone()
            .unwrap_or_else(|| "stated by the mechanism".into())
    }
    fn batch_size(&self) -> Option<usize> {
        self.batch
    }
    fn neighboring(&self) -> Neighboring {
        self.neighboring
    }
    fn setting(&self) -> dp_audit::mechanisms::DpSetting {
        self.setting
    }
    fn privacy_unit(&self) -> String {
        self.privacy_unit.clone().unwrap_or_else(|| {
            dp_audit::mechanisms::mechanism::privacy_unit_words(self.neighboring, self.setting)
        })
    }
    fn domain(&self) -> RecordDomain {
        self.domain
    }
    fn output_dim(&self) -> usize {
        self.output_dim
    }
    fn set_call_limit(&self, limit: Option<Duration>) {
        let nanos = limit.map_or(0, |l| {
            u64::try_from(l.as_nanos()).unwrap_or(u64::MAX).max(1)
        });
        self.limits.call_limit.store(nanos, Ordering::Relaxed);
    }
    fn set_deadline(&self, deadline: Option<Instant>) {
        *lock(&self.limits.engine_deadline) = Some(deadline);
    }
    fn sample(
        &self,
        dataset: &Dataset,
        n: usize,
        rng: &mut dyn Rng,
    ) -> dp_audit::mechanisms::Result<Samples> {
        use dp_audit::mechanisms::MechanismError;
        let seed = rng.next_u64();
        let limits = &*self.limits;
        let out_of_time = || MechanismError::OutOfTime {
            mechanism: self.id.clone(),
            releases: n,
        };
        if limits.stop.load(Ordering::Relaxed) {
            return Err(out_of_time());
        }
        // The call's deadline: min(the search's limit, the ceiling, the run's deadline), as an
        // exec program's request.
        let now = Instant::now();
        let limit = match limits.call_limit.load(Ordering::Relaxed) {
            0 => None,
            nanos => Some(Duration::from_nanos(nanos)),
        };
        let own = match (limit, limits.ceiling) {
            (Some(l), Some(c)) if l < c => Some((l, Binding::Limit(l.as_secs_f64()))),
            (Some(l), None) => Some((l, Binding::Limit(l.as_secs_f64()))),
            (_, Some(c)) => Some((c, Binding::Ceiling(c.as_secs_f64()))),
            (None, None) => None,
        }
        .and_then(|(d, b)| now.checked_add(d).map(|end| (end, b)));
        let run_end = limits.run_end();
        let budget_words = |why: &str| {
            let secs = limits.budget.map_or(0.0, |(_, b)| b);
            format!(
                "audit_run on {}: the time budget (--budget {} s, and a grace of {} s) was spent before the audit finished: {why} (a call of n = {n} releases on a dataset of {} records). Raise --budget, or lower --samples or --exec-batch",
                self.id,
                dp_audit::mechanisms::math::readable(secs),
                dp_audit::mechanisms::math::readable(budget_grace(secs)),
                dataset.len()
            )
        };
        if let Some((end, by_budget)) = run_end
            && end <= now
        {
            if by_budget {
                limits.note(budget_words("no call is started after it"));
            }
            return Err(out_of_time());
        }
        let deadline = match (own, run_end) {
            (Some((o, b)), Some((r, _))) if o <= r => Some((o, b)),
            (_, Some((r, by_budget))) => Some((r, Binding::Run(by_budget))),
            (own, None) => own,
        };
        let data = dataset.records().to_owned();
        let (len, dim) = (dataset.len(), dataset.dim());
        let answer = calls::call(
            &self.function,
            move |py| {
                let data = PyArray2::from_owned_array(py, data);
                // Scalar records go in as a 1-D array (what numpy code expects), vectors as
                // n × dim.
                let data: Bound<'_, PyAny> = if dim == 1 {
                    data.call_method1("reshape", (len,))?
                } else {
                    data.into_any()
                };
                Ok(PyTuple::new(
                    py,
                    [
                        data,
                        n.into_pyobject(py)?.into_any(),
                        seed.into_pyobject(py)?.into_any(),
                    ],
                )?
                .unbind())
            },
            calls::Expect::Releases {
                n,
                dim: self.output_dim,
                id: self.id.clone(),
            },
            deadline.as_ref().map(|(d, _)| *d),
            &limits.stop,
        );
        let values = match answer {
            Ok(calls::Got::Releases(v)) => v,
            Ok(calls::Got::Text(_)) => {
                return Err(MechanismError::InvalidDataset(format!(
                    "the mechanism {} answered text, not releases",
                    self.id
                )));
            }
            Err(calls::CallError::Raised(e)) => {
                let msg = format!(
                    "the mechanism {} raised {} when called with (dataset of {} records, n = {n}, seed = {seed})",
                    self.id, e, len
                );
                lock(&self.raised).get_or_insert(e);
                return Err(MechanismError::InvalidDataset(msg));
            }
            Err(calls::CallError::Bad(why)) | Err(calls::CallError::Failed(why)) => {
                return Err(MechanismError::InvalidDataset(why));
            }
            Err(calls::CallError::BadType(why)) => {
                lock(&limits.bad_type).get_or_insert(why.clone());
                return Err(MechanismError::InvalidDataset(why));
            }
            Err(calls::CallError::Stopped) => return Err(out_of_time()),
            Err(calls::CallError::TimedOut) => {
                return Err(match deadline.map(|(_, b)| b) {
                    Some(Binding::Limit(seconds)) => MechanismError::Slow {
                        mechanism: self.id.clone(),
                        releases: n,
                        seconds,
                    },
                    Some(Binding::Ceiling(seconds)) => {
                        let msg = format!(
                            "the mechanism {} did not return within its time limit of {} s per call (called with a dataset of {len} records, n = {n}, seed = {seed}); the call was abandoned. {}",
                            self.id,
                            dp_audit::mechanisms::math::readable(seconds),
                            limits.raise
                        );
                        limits.note(msg.clone());
                        MechanismError::Sampling {
                            mechanism: self.id.clone(),
                            message: msg,
                        }
                    }
                    Some(Binding::Run(by_budget)) => {
                        if by_budget {
                            limits.note(budget_words(
                                "a call still running at the deadline was abandoned",
                            ));
                        }
                        out_of_time()
                    }
                    None => out_of_time(),
                });
            }
        };
        let samples = Samples::new(values)?;
        if let Some((i, j, v)) = samples.first_non_finite() {
            return Err(MechanismError::InvalidDataset(format!(
                "the mechanism {} returned {v} at release {i}, coordinate {j} (seed {seed}); releases must be finite",
                self.id
            )));
        }
        Ok(samples)
    }
}

/// A dataset from a 2-D array (records × dimension).
fn dataset(a: &PyReadonlyArray2<'_, f64>, which: &str) -> PyResult<Dataset> {
    Dataset::from_array(a.as_array().to_owned())
        .map_err(|e| PyValueError::new_err(format!("{which}: {e}")))
}

/// Per pair and layer (pair, layer, JSON record); the gate's account; mechanism-layer and
/// float-layer violations.
type GateAnswer = (Vec<(usize, String, String)>, String, bool, bool);

/// The gate on a Python callable: per pair and layer, (layer, JSON record, verdict word); the
/// gate's readable account; whether the mechanism layer and the float layer found a violation.
#[pyfunction]
#[pyo3(signature = (mechanism, name, claim, neighboring, pairs, output_dim, samples, seed, failure_probability, check, timeout))]
#[allow(clippy::too_many_arguments)]
fn gate(
    py: Python<'_>,
    mechanism: Py<PyAny>,
    name: String,
    claim: String,
    neighboring: String,
    pairs: Vec<(PyReadonlyArray2<'_, f64>, PyReadonlyArray2<'_, f64>)>,
    output_dim: usize,
    samples: usize,
    seed: u64,
    failure_probability: f64,
    check: String,
    timeout: Option<f64>,
) -> PyResult<GateAnswer> {
    let timeout = check_timeout(timeout, "timeout", MAX_TIMEOUT_SECONDS)?;
    let relation: Neighboring = neighboring.parse().map_err(|e| {
        PyValueError::new_err(format!(
            "neighboring {neighboring:?}: {e}; allowed: add-remove, replace-one, zero-out"
        ))
    })?;
    // The CLI's claim parser: every claim form, and `ledger:FILE[:DELTA]` (the PLD accountant's
    // ε of the ledger at δ under `neighboring`).
    let parsed = dp_audit::modes::claim::parse_claim_arg(&claim, relation).map_err(|e| {
        let words = e.to_string();
        let prefix = format!("--claim {claim}: ");
        let why = words
            .strip_prefix("invalid setting: ")
            .unwrap_or(&words)
            .replace(&prefix, "");
        let allowed = if why.contains("allowed") {
            String::new()
        } else {
            format!("; allowed: {}", dp_audit::modes::claim::claim_forms())
        };
        let msg = format!("claim='{}': {why}{allowed}", claim.replace('\'', "\\'"));
        match e {
            dp_audit::Error::Io { .. } => PyOSError::new_err(msg),
            _ => PyValueError::new_err(msg),
        }
    })?;
    let claim_v: PrivacyClaim = parsed.claim;
    let check_v: Check = check.parse().map_err(to_py)?;
    if !(dp_audit::modes::checks::MIN_SAMPLES_PER_SIDE..=dp_audit::audit::MAX_SAMPLES_PER_SIDE)
        .contains(&samples)
    {
        return Err(PyValueError::new_err(format!(
            "samples={samples}; allowed: {} to {} releases per side",
            dp_audit::modes::checks::MIN_SAMPLES_PER_SIDE,
            dp_audit::audit::MAX_SAMPLES_PER_SIDE
        )));
    }
    let mut built = Vec::with_capacity(pairs.len());
    let (mut lo, mut hi, mut dim, mut most) = (f64::INFINITY, f64::NEG_INFINITY, 0usize, 0usize);
    for (i, (d, d2)) in pairs.iter().enumerate() {
        let (d, d2) = (
            dataset(d, &format!("pair {i}, d"))?,
            dataset(d2, &format!("pair {i}, d_prime"))?,
        );
        for x in [&d, &d2] {
            for v in x.records() {
                lo = lo.min(*v);
                hi = hi.max(*v);
            }
            dim = x.dim();
            most = most.max(x.len());
        }
        built.push(
            DatasetPair::new(d, d2, relation)
                .map_err(|e| PyValueError::new_err(format!("pair {i}: {e}")))?,
        );
    }
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    let mut domain = RecordDomain::real(lo, hi.max(lo), dim.max(1));
    domain.max_size = domain.max_size.max(most);
    let m = PyMechanism {
        id: name.clone(),
        function: mechanism,
        claim: claim_v,
        neighboring: relation,
        domain,
        output_dim,
        batch: None,
        claim_source: parsed.source,
        setting: dp_audit::mechanisms::DpSetting::Central,
        privacy_unit: None,
        raised: Arc::new(Mutex::new(None)),
        limits: Limits::new(
            timeout,
            "Give it more time per call with timeout=SECONDS (timeout=None: no limit)".into(),
            None,
        ),
    };
    let g = Gate::default()
        .audience(dp_audit::gate::Audience::Python)
        .seed(seed)
        .samples_per_side(samples)
        .failure_probability(failure_probability)
        .check_layers(check_v);
    let (raised, limits) = (m.raised.clone(), m.limits.clone());
    let result = calls::run_engine(py, limits.stop.clone(), move || -> dp_audit::Result<_> {
        let outcome = g.check(&m, &built)?;
        let mut records = Vec::new();
        for (i, kind, r) in outcome.reports() {
            let mut r = r.clone();
            r.wall_time_seconds = None;
            let rec = dp_audit::record::ResultRecord::from_audit(&r);
            let json = serde_json::to_string_pretty(&rec)
                .map_err(|e| dp_audit::Error::InvalidConfig(e.to_string()))?;
            let layer = match kind {
                dp_audit::record::layers::LayerKind::Mechanism => "mechanism",
                dp_audit::record::layers::LayerKind::FloatingPoint => "floating-point",
            };
            records.push((i, layer.to_string(), json));
        }
        Ok((
            records,
            outcome.explain(),
            outcome.mechanism_violation(),
            outcome.float_violation(),
        ))
    })?;
    result.map_err(|e| callable_error(py, &name, e, &raised, &limits))
}

/// Longest time limit of one call: a week (`timeout=`; `--exec-timeout` allows a day).
const MAX_TIMEOUT_SECONDS: f64 = 604_800.0;

/// A time limit in seconds (`None`: no limit): finite, above 0, at most `max`.
fn check_timeout(t: Option<f64>, name: &str, max: f64) -> PyResult<Option<f64>> {
    match t {
        Some(v) if !(v.is_finite() && v > 0.0 && v <= max) => Err(PyValueError::new_err(format!(
            "{name}={v}; allowed: seconds above 0, at most {max} (a week), or None for no limit"
        ))),
        t => Ok(t),
    }
}

/// The error of a run that called a Python callable: a call past its time limit or a run past
/// its deadline (`TimeoutError`), the callable's own exception (the cause of a `RuntimeError`),
/// or the engine's error.
fn callable_error(
    py: Python<'_>,
    name: &str,
    e: dp_audit::Error,
    raised: &Mutex<Option<PyErr>>,
    limits: &Limits,
) -> PyErr {
    use dp_audit::mechanisms::MechanismError as M;
    if let Some(why) = lock(&limits.timed_out).take() {
        return PyTimeoutError::new_err(why);
    }
    if let Some(why) = lock(&limits.bad_type).take() {
        return PyTypeError::new_err(why);
    }
    if let dp_audit::Error::Mechanism(M::Slow { .. } | M::OutOfTime { .. }) = &e {
        return PyTimeoutError::new_err(format!("dp-audit could not audit {name}: {e}"));
    }
    match lock(raised).take() {
        Some(original) => {
            let err = PyRuntimeError::new_err(format!("dp-audit could not audit {name}: {e}"));
            err.set_cause(py, Some(original));
            err
        }
        None => to_py(e),
    }
}

/// Writes a 2-D array as an `audit test` shard (`.bin`, JSON lines, `.gz`, `.zst` by name).
#[pyfunction]
fn write_samples(py: Python<'_>, a: PyReadonlyArray2<'_, f64>, path: String) -> PyResult<()> {
    let v = a.as_array();
    py.detach(|| -> dp_audit::Result<()> {
        let s = Samples::new(v.to_owned())?;
        dp_audit::sources::shards::write(std::path::Path::new(&path), &s, None)
    })
    .map_err(to_py)
}

/// The CLI's flag names in an error message, as the Python arguments are named.
fn python_names(msg: &str) -> String {
    [
        (
            "--sampling-rate/--noise-multiplier/--steps",
            "sampling_rate/noise_multiplier/steps",
        ),
        ("--sampling-rate", "sampling_rate"),
        ("--noise-multiplier", "noise_multiplier"),
        ("--steps", "steps"),
        ("--policy", "policy"),
        ("--delta", "delta"),
        ("--target-epsilon", "target_epsilon"),
        ("--neighbors", "neighbors"),
        ("--ledger", "ledger"),
        ("--canaries", "canaries"),
        ("--record-range", "record_range"),
        ("--record-dim", "record_dim"),
        ("--guesses", "guesses"),
        ("--failure-probability", "failure_probability"),
        ("--claim", "claim"),
        ("--bayesian --data", "data"),
        ("--data", "data"),
        ("--gamma", "gamma"),
        ("--distance-quantiles", "distance_quantiles"),
        ("--markov-percentiles", "markov_percentiles"),
        ("--estimator", "estimator"),
        ("--max-distance", "max_distance"),
        ("--group", "group"),
    ]
    .iter()
    .fold(msg.to_string(), |m, (flag, name)| m.replace(flag, name))
}

/// `audit accountant … [--json]` (docs/accountant.md): the PLD and RDP accountants on a ledger
/// (a file at `ledger_path`, or the JSON-lines `ledger_text` named `ledger_path`) or on one
/// block of T steps at (q, z), or the z that reaches `target_epsilon`. Returns what the CLI
/// prints.
#[pyfunction]
#[pyo3(signature = (delta, neighbors, ledger_path, ledger_text, sampling_rate, noise_multiplier, steps, target_epsilon, policy, json))]
#[allow(clippy::too_many_arguments)]
fn account(
    py: Python<'_>,
    delta: f64,
    neighbors: String,
    ledger_path: Option<String>,
    ledger_text: Option<String>,
    sampling_rate: Option<f64>,
    noise_multiplier: Option<f64>,
    steps: Option<u64>,
    target_epsilon: Option<f64>,
    policy: Option<String>,
    json: bool,
) -> PyResult<String> {
    use dp_audit::modes::accountant::{AccountantOptions, account};
    let mut options = AccountantOptions {
        sampling_rate,
        noise_multiplier,
        steps,
        policy,
        delta,
        target_epsilon,
        ledger: ledger_path.clone().map(Into::into),
        neighbors,
        json,
        ..AccountantOptions::default()
    };
    calls::interruptible(py, move || -> dp_audit::Result<String> {
        // Events given as JSON lines, parsed by the parser `--ledger FILE` uses; otherwise a
        // file (read as `--ledger FILE` reads it), or one block of steps.
        if let (Some(p), Some(t)) = (&ledger_path, &ledger_text) {
            let events =
                dp_audit::accounting::ledger::parse_ledger_with_policies(t).map_err(|e| {
                    dp_audit::Error::InvalidConfig(format!(
                        "--ledger {p} (event i of the list is line i + 1): {e}"
                    ))
                })?;
            options.ledger_events = Some(events.into_iter().map(|(_, e, p)| (e, p)).collect());
            // Its `dp-fy-ml` line (DP-fy ML: what the guarantee covers), as the file's.
            options.ledger_scope = Some(
                dp_audit::accounting::dpfy::ledger_scope(t)
                    .map_err(|e| dp_audit::Error::InvalidConfig(format!("--ledger {p}: {e}")))?,
            );
        }
        let out = account(&options)?;
        Ok(out.stdout)
    })?
    .map_err(|e| match to_py(e) {
        err if err.is_instance_of::<PyValueError>(py) => {
            PyValueError::new_err(python_names(&err.value(py).to_string()))
        }
        err => err,
    })
}

/// `audit accountant --bayesian --data NAME … [--json]` (docs/bayesian.md): the Bayesian
/// accountant beside the moments and RDP accountants, on the distance file `data_path`, or on
/// `data_text` (the file's lines, named `data_path`). `estimator`, `max_distance` and `group`: as
/// `--estimator`, `--max-distance` and `--group` (None: the CLI's defaults). Returns what the
/// CLI prints.
#[pyfunction]
#[pyo3(signature = (delta, data_path, data_text, sampling_rate, noise_multiplier, steps, gamma, distance_quantiles, markov_percentiles, estimator, max_distance, group, target_epsilon, json))]
#[allow(clippy::too_many_arguments)]
fn account_bayesian(
    py: Python<'_>,
    delta: f64,
    data_path: String,
    data_text: Option<String>,
    sampling_rate: f64,
    noise_multiplier: Option<f64>,
    steps: u64,
    gamma: Option<f64>,
    distance_quantiles: String,
    markov_percentiles: String,
    estimator: Option<String>,
    max_distance: Option<f64>,
    group: Option<u64>,
    target_epsilon: Option<f64>,
    json: bool,
) -> PyResult<String> {
    use dp_audit::modes::accountant::{AccountantOptions, account};
    // Distances given as lines are read by the parser `--data FILE` uses.
    let options = AccountantOptions {
        sampling_rate: Some(sampling_rate),
        noise_multiplier,
        target_epsilon,
        steps: Some(steps),
        delta,
        bayesian: true,
        data: Some(data_path.into()),
        data_text,
        gamma,
        distance_quantiles,
        markov_percentiles,
        estimator,
        max_distance,
        group,
        json,
        ..AccountantOptions::default()
    };
    calls::interruptible(py, move || -> dp_audit::Result<String> {
        let out = account(&options)?;
        Ok(out.stdout)
    })?
    .map_err(|e| match to_py(e) {
        err if err.is_instance_of::<PyValueError>(py) => {
            PyValueError::new_err(python_names(&err.value(py).to_string()))
        }
        err => err,
    })
}

/// `audit one-run` with the built-in canary trainer (`words`: the command line after `audit`,
/// read by the CLI's own parser): (what the CLI prints, exit code).
#[pyfunction]
fn one_run_trainer(py: Python<'_>, words: Vec<String>) -> PyResult<(String, u8)> {
    use clap::Parser;
    use dp_audit::commands::{Cli, Command};
    let cli = Cli::try_parse_from(std::iter::once("audit".to_string()).chain(words.clone()))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let Command::OneRun(args) = cli.command else {
        return Err(PyValueError::new_err(format!(
            "{:?}; allowed: the flags of `audit one-run`",
            words.first()
        )));
    };
    calls::interruptible(py, move || {
        dp_audit::report::reproduce::with_args(words.clone(), || {
            dp_audit::commands::one_run::one_run_trainer(&(&args).into())
        })
    })?
    .map(|out| (out.stdout, out.code))
    .map_err(to_py)
}

/// `audit final-model` with the built-in trainer (`words`: the command line after `audit`, read
/// by the CLI's own parser): (what the CLI prints, exit code).
#[pyfunction]
fn final_model(py: Python<'_>, words: Vec<String>) -> PyResult<(String, u8)> {
    use clap::Parser;
    use dp_audit::commands::{Cli, Command};
    let cli = Cli::try_parse_from(std::iter::once("audit".to_string()).chain(words.clone()))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let Command::FinalModel(args) = cli.command else {
        return Err(PyValueError::new_err(format!(
            "{:?}; allowed: the flags of `audit final-model`",
            words.first()
        )));
    };
    calls::interruptible(py, move || {
        dp_audit::commands::final_model::run_final_model(&(&args).into())
    })?
    .map(|out| (out.stdout, out.code))
    .map_err(to_py)
}

/// `audit one-run --exec NAME --claim CLAIM … [--json]` with the training done by `train`, a
/// Python callable from the protocol's request (JSON text) to the program's output (scores as
/// text): (what the CLI prints, exit code).
#[pyfunction]
#[pyo3(signature = (train, name, claim, canaries, data, record_range, record_dim, guesses, independent_canaries, seed, failure_probability, json, timeout))]
#[allow(clippy::too_many_arguments)]
fn one_run(
    py: Python<'_>,
    train: Py<PyAny>,
    name: String,
    claim: String,
    canaries: usize,
    data: Option<String>,
    record_range: Option<String>,
    record_dim: Option<usize>,
    guesses: Option<String>,
    independent_canaries: bool,
    seed: u64,
    failure_probability: f64,
    json: bool,
    timeout: Option<f64>,
) -> PyResult<(String, u8, String)> {
    use dp_audit::modes::one_run::{GivenTraining, OneRunOptions, one_run_given};
    let timeout = check_timeout(timeout, "timeout", MAX_TIMEOUT_SECONDS)?;
    // `audit one-run`'s defaults, these settings, and the CLI command with them.
    let args = OneRunOptions {
        canaries,
        exec: Some(name.clone()),
        claim: Some(claim),
        data: data.map(Into::into),
        record_range,
        record_dim,
        independent_canaries,
        guesses,
        seed,
        failure_probability,
        output: dp_audit::report::output::OutputOptions {
            no_report: true,
            quiet: true,
            json,
            ..OneRunOptions::default().output
        },
        ..OneRunOptions::default()
    };
    let reproduce = args.reproduce_line();
    let raised: Arc<Mutex<Option<PyErr>>> = Arc::new(Mutex::new(None));
    let limits = Limits::new(
        timeout,
        "Give it more time with timeout=SECONDS (timeout=None: no limit)".into(),
        None,
    );
    let (raised2, limits2, name2) = (raised.clone(), limits.clone(), name.clone());
    let result = calls::run_engine(py, limits.stop.clone(), move || {
        let (raised, limits, name) = (raised2, limits2, name2);
        let mut call = |request: String| -> dp_audit::Result<String> {
            let deadline = limits.ceiling.and_then(|c| Instant::now().checked_add(c));
            let answer = calls::call(
                &train,
                |py| Ok(PyTuple::new(py, [request])?.unbind()),
                calls::Expect::Text,
                deadline,
                &limits.stop,
            );
            match answer {
                Ok(calls::Got::Text(t)) => Ok(t),
                Ok(calls::Got::Releases(_)) => Err(dp_audit::Error::InvalidConfig(format!(
                    "the training function {name} answered releases, not scores"
                ))),
                Err(calls::CallError::Raised(e)) => {
                    let msg = format!("the training function {name} raised {e}");
                    lock(&raised).get_or_insert(e);
                    Err(dp_audit::Error::InvalidConfig(msg))
                }
                Err(
                    calls::CallError::Bad(why)
                    | calls::CallError::BadType(why)
                    | calls::CallError::Failed(why),
                ) => Err(dp_audit::Error::InvalidConfig(format!(
                    "the training function {name}: {why}"
                ))),
                Err(calls::CallError::TimedOut) => {
                    let secs = limits.ceiling.map_or(0.0, |c| c.as_secs_f64());
                    let msg = format!(
                        "the training function {name} did not return within its time limit of {} s (one training run on {canaries} canaries); the call was abandoned. {}",
                        dp_audit::mechanisms::math::readable(secs),
                        limits.raise
                    );
                    limits.note(msg.clone());
                    Err(dp_audit::Error::InvalidConfig(msg))
                }
                Err(calls::CallError::Stopped) => Err(dp_audit::Error::InvalidConfig(format!(
                    "the training function {name} was stopped (Ctrl-C)"
                ))),
            }
        };
        one_run_given(
            &args,
            GivenTraining {
                train: &mut call,
                reproduce: reproduce.clone(),
            },
        )
        .map(|out| (out.stdout, out.code, reproduce))
    })?;
    let from_callable = lock(&raised).is_some() || lock(&limits.timed_out).is_some();
    match result {
        Ok(r) => Ok(r),
        Err(e) if from_callable => Err(callable_error(py, &name, e, &raised, &limits)),
        Err(e) => Err(match to_py(e) {
            err if err.is_instance_of::<PyValueError>(py) => {
                PyValueError::new_err(python_names(&err.value(py).to_string()))
            }
            err => err,
        }),
    }
}

/// `audit run --exec NAME …` (`words`: the command line after `audit`, read by the CLI's own
/// parser) with the mechanism a Python callable `mechanism(dataset, n, seed)` of release
/// dimension `output_dim`: the default search and plan of an exec program, one call per chunk
/// of releases instead of one process. Each call is limited as an exec program's request:
/// `--exec-timeout` (default 60 s; none with `no_ceiling`), the search's limit, and the run's
/// deadline, `--budget` (or the deadline the engine sets). Returns (what the CLI prints, exit
/// code).
#[pyfunction]
#[pyo3(signature = (mechanism, words, output_dim, no_ceiling=false))]
fn run(
    py: Python<'_>,
    mechanism: Py<PyAny>,
    words: Vec<String>,
    output_dim: usize,
    no_ceiling: bool,
) -> PyResult<(String, u8)> {
    use clap::Parser;
    use dp_audit::commands::run::{GivenSpec, run_given};
    use dp_audit::commands::{Cli, Command};
    let cli = Cli::try_parse_from(std::iter::once("audit".to_string()).chain(words.clone()))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let Command::Run(args) = cli.command else {
        return Err(PyValueError::new_err(format!(
            "{:?}; allowed: the flags of `audit run`",
            words.first()
        )));
    };
    if let Some(k) = args.limits.exec_datasets {
        return Err(PyValueError::new_err(format!(
            "--exec-datasets {k}: a callable is called once per dataset, so this flag of exec programs does not apply to audit_run; leave it out"
        )));
    }
    // `--exec-timeout` as the CLI checks it (seconds from 0.001 to a day); `--budget` as the CLI
    // reads it (the engine checks both again and names them).
    let ceiling = match (no_ceiling, args.limits.exec_timeout) {
        (true, _) => None,
        (false, Some(t)) => Some(check_timeout(Some(t), "--exec-timeout", 86_400.0)?.unwrap_or(t)),
        (false, None) => Some(dp_audit::sources::exec::DEFAULT_TIMEOUT.as_secs_f64()),
    };
    let budget = args.search.budget.as_deref().and_then(parse_budget);
    let name = args.exec.clone().unwrap_or_default();
    let raised: Arc<Mutex<Option<PyErr>>> = Arc::new(Mutex::new(None));
    let limits = Limits::new(
        ceiling,
        "Give it more time per call with timeout=SECONDS or flags=[\"--exec-timeout\", \"SECONDS\"] (timeout=None: no limit), or ask for fewer releases per call with --exec-batch".into(),
        budget,
    );
    let (raised2, limits2, name2) = (raised.clone(), limits.clone(), name.clone());
    let result = calls::run_engine(py, limits.stop.clone(), move || {
        let build = |spec: &GivenSpec| -> dp_audit::Result<Box<dyn Mechanism>> {
            let function = Python::attach(|py| mechanism.clone_ref(py));
            Ok(Box::new(PyMechanism {
                id: name2.clone(),
                function,
                claim: spec.claim,
                neighboring: spec.neighboring,
                domain: spec.domain,
                output_dim,
                // As the exec program: its batch, and the claim given on its command line.
                batch: Some(spec.batch),
                claim_source: Some("given on the command line".into()),
                // As the exec program's `with_unit`: the setting and unit of the flags.
                setting: spec.setting,
                privacy_unit: spec.privacy_unit.clone(),
                raised: raised2.clone(),
                limits: limits2.clone(),
            }))
        };
        dp_audit::report::reproduce::with_args(words.clone(), || run_given(&args, &build))
    })?;
    match result {
        Ok(out) => Ok((out.stdout, out.code)),
        Err(e) => Err(callable_error(py, &name, e, &raised, &limits)),
    }
}

/// `--budget` in seconds as the CLI reads it (`60`, `60s`, `2m`, `1.5h`); `None` when it does
/// not read (the engine then refuses it by name).
fn parse_budget(s: &str) -> Option<f64> {
    let t = s.trim();
    let (num, unit) = match t.char_indices().last() {
        Some((i, 's')) => (&t[..i], 1.0),
        Some((i, 'm')) => (&t[..i], 60.0),
        Some((i, 'h')) => (&t[..i], 3600.0),
        _ => (t, 1.0),
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * unit)
        .filter(|v| v.is_finite() && *v > 0.0)
}

/// The engine's defaults, written once in its options types, for the Python signatures:
/// `{"accountant": {...}, "gate": {...}, "run": {...}, "test": {...}, "one_run": {...}}`
/// (relation and percentiles, samples, seed, β, testers, layers, canaries).
#[pyfunction]
fn defaults(py: Python<'_>) -> PyResult<Py<pyo3::types::PyDict>> {
    let t = TestOptions::default();
    let test = pyo3::types::PyDict::new(py);
    test.set_item("seed", t.seed)?;
    test.set_item("failure_probability", t.failure_probability)?;
    test.set_item("testers", t.tester)?;
    test.set_item("check", t.check.unwrap_or_else(|| "both".into()))?;
    let o = dp_audit::modes::one_run::OneRunOptions::default();
    let one_run = pyo3::types::PyDict::new(py);
    one_run.set_item("canaries", o.canaries)?;
    one_run.set_item("seed", o.seed)?;
    one_run.set_item("failure_probability", o.failure_probability)?;
    let gate = pyo3::types::PyDict::new(py);
    gate.set_item("samples", Gate::DEFAULT_SAMPLES)?;
    let run = pyo3::types::PyDict::new(py);
    run.set_item("seed", 0)?;
    // Releases per side, as `audit run --samples` checks them (one range for every entry point).
    run.set_item("samples_min", dp_audit::modes::checks::MIN_SAMPLES_PER_SIDE)?;
    run.set_item("samples_max", dp_audit::audit::MAX_SAMPLES_PER_SIDE)?;
    run.set_item(
        "failure_probability",
        dp_audit::AuditConfig::default().failure_probability,
    )?;
    let a = dp_audit::modes::accountant::AccountantOptions::default();
    let accountant = pyo3::types::PyDict::new(py);
    accountant.set_item("neighbors", a.neighbors)?;
    accountant.set_item("distance_quantiles", a.distance_quantiles)?;
    accountant.set_item("markov_percentiles", a.markov_percentiles)?;
    let all = pyo3::types::PyDict::new(py);
    all.set_item("accountant", accountant)?;
    all.set_item("gate", gate)?;
    all.set_item("run", run)?;
    all.set_item("test", test)?;
    all.set_item("one_run", one_run)?;
    Ok(all.unbind())
}

/// `audit report FILE --report-dir DIR`: the HTML page of a saved record (e.g. one audit of
/// the gate, `GateRecord.write_report`) written to `report_dir/<run-id>/` and the folder's
/// `index.html` regenerated; the path of the page's `index.html`.
#[pyfunction]
fn render_report(py: Python<'_>, file: String, report_dir: String) -> PyResult<String> {
    py.detach(|| {
        dp_audit::report::rerender(
            std::path::Path::new(&file),
            std::path::Path::new(&report_dir),
        )
    })
    .map(|p| p.to_string_lossy().into_owned())
    .map_err(to_py)
}

/// Whether the sequential test can stand for every tester `testers` names (each tester says
/// so).
#[pyfunction]
fn runs_sequentially(testers: &str) -> bool {
    dp_audit::modes::checks::runs_sequentially(testers)
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(test_samples, m)?)?;
    m.add_function(wrap_pyfunction!(defaults, m)?)?;
    m.add_function(wrap_pyfunction!(runs_sequentially, m)?)?;
    m.add_function(wrap_pyfunction!(gate, m)?)?;
    m.add_function(wrap_pyfunction!(write_samples, m)?)?;
    m.add_function(wrap_pyfunction!(account, m)?)?;
    m.add_function(wrap_pyfunction!(account_bayesian, m)?)?;
    m.add_function(wrap_pyfunction!(one_run_trainer, m)?)?;
    m.add_function(wrap_pyfunction!(final_model, m)?)?;
    m.add_function(wrap_pyfunction!(one_run, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(render_report, m)?)?;
    m.add_function(wrap_pyfunction!(calls::abandon_worker, m)?)?;
    m.add_submodule(&noise::module(m.py())?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
