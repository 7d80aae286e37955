//! Calls of a Python callable that can be given up on, and the engine run off the calling
//! thread so that Ctrl-C still works.
//!
//! A thread cannot be killed, so a call past its time limit is *abandoned*: each call runs on a
//! worker, a Python daemon thread (`dp_audit._calls.Worker`) that takes jobs from its queue and
//! calls the function from Python code; the engine's thread waits for the answer on a channel,
//! without the GIL, until the call's deadline. On a time-out the worker is abandoned: it gets a
//! `TimeoutError` injected (`PyThreadState_SetAsyncExc`, raised when it next runs bytecode, which
//! stops a pure-Python loop; a `time.sleep` or a C call ends first) and a stop after its job, and
//! its answer, when it comes, is sent to a channel nobody reads any more and dropped. The
//! workers are Python threads and the user's function is called from Python frames, so a worker
//! the interpreter stops at exit (a daemon thread waking during finalization) unwinds no Rust
//! frame; the process exits without waiting for them.
//!
//! The engine itself runs on a thread of its own ([`run_engine`]); the calling thread waits in
//! short slices without the GIL and calls `check_signals` between them, so Ctrl-C raises
//! `KeyboardInterrupt` at once and sets the run's stop flag: no further call is started and the
//! one running is abandoned.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use numpy::PyReadonlyArray2;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// How often a waiting engine thread looks at the stop flag.
const STOP_SLICE: Duration = Duration::from_millis(50);
/// How often the calling thread looks for signals (Ctrl-C) while the engine works.
const SIGNAL_SLICE: Duration = Duration::from_millis(100);
/// How long, after Ctrl-C, the calling thread waits for an engine that calls a Python function
/// to end before it returns (it ends at its next call of the function, which is refused, or
/// later, on its own, after its statistics).
const STOP_GRACE: Duration = Duration::from_millis(500);
/// The engine thread's stack (the main thread's usual size; searches recurse little, but the
/// engine ran on the calling thread before).
const ENGINE_STACK: usize = 8 << 20;

/// A lock that survives a poisoned mutex (a panic elsewhere never makes this one fail).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What a call answered, read on the worker while it holds the GIL.
pub(crate) enum Got {
    /// n releases of dimension `dim`, as an n × dim matrix.
    Releases(ndarray::Array2<f64>),
    /// A string (the training function of `one_run`).
    Text(String),
}

/// What the answer must be.
#[derive(Clone, Debug)]
pub(crate) enum Expect {
    /// `n` releases of dimension `dim`, shape (n,) (dim 1 only) or (n, dim), from the
    /// mechanism `id`.
    Releases { n: usize, dim: usize, id: String },
    /// A string.
    Text,
}

/// Why a call gave no answer.
pub(crate) enum CallError {
    /// The callable raised this exception.
    Raised(PyErr),
    /// Its value is not what was expected: why.
    Bad(String),
    /// Its value is not real numbers (complex, objects, text): why, raised as `TypeError`.
    BadType(String),
    /// No answer by the deadline: the call was abandoned.
    TimedOut,
    /// The run was stopped (Ctrl-C) before or during the call; a running call was abandoned.
    Stopped,
    /// The call could not be made (no worker could be started): why.
    Failed(String),
}

type Answer = Result<Got, CallError>;

/// The worker's reply to one job: reads the value as [`Expect`] says and sends it to the
/// waiting engine thread (dropped when that thread gave up).
#[pyclass(frozen)]
struct Reply {
    tx: Mutex<Option<mpsc::SyncSender<Answer>>>,
    expect: Expect,
}

#[pymethods]
impl Reply {
    #[pyo3(signature = (value, error))]
    fn __call__(&self, value: Bound<'_, PyAny>, error: Option<Bound<'_, PyAny>>) {
        let answer = match error {
            Some(e) => Err(CallError::Raised(PyErr::from_value(e))),
            None => read(&value, &self.expect),
        };
        if let Some(tx) = lock(&self.tx).take() {
            // Nobody reads when the call was abandoned: the answer is dropped.
            let _ = tx.try_send(answer);
        }
    }
}

/// The callable's value as `expect` says.
fn read(value: &Bound<'_, PyAny>, expect: &Expect) -> Result<Got, CallError> {
    let py = value.py();
    let (n, dim, id) = match expect {
        Expect::Text => {
            return value
                .extract::<String>()
                .map(Got::Text)
                .map_err(|e| CallError::Bad(e.to_string()));
        }
        Expect::Releases { n, dim, id } => (*n, *dim, id),
    };
    let bad = |e: PyErr| CallError::Bad(e.to_string());
    let np = py.import("numpy").map_err(bad)?;
    // Real numbers only: numpy's float64 conversion would drop a complex value's imaginary
    // part (and what it carries would go unaudited) and turn None into NaN.
    let kind: String = np
        .call_method1("asarray", (value,))
        .and_then(|a| a.getattr("dtype")?.getattr("kind")?.extract())
        .unwrap_or_default();
    let what = match kind.as_str() {
        "c" => Some(
            "complex numbers (converting them would drop the imaginary part, and what it carries would go unaudited: return the real and imaginary parts as two columns)",
        ),
        "O" => Some("Python objects (e.g. None or mixed types)"),
        "U" => Some("strings"),
        "S" => Some("bytes"),
        "M" | "m" | "V" => Some("values that are not numbers"),
        _ => None,
    };
    if let Some(what) = what {
        return Err(CallError::BadType(format!(
            "the mechanism {id} returned {what} for n = {n}; allowed: real numbers (int, float or bool), one row per release"
        )));
    }
    let arr = read_releases(np, value, n, dim, id).map_err(CallError::Bad)?;
    Ok(Got::Releases(arr))
}

/// The releases of `value` as an `n × dim` float64 array, or why not.
fn read_releases(
    np: Bound<'_, pyo3::types::PyModule>,
    value: &Bound<'_, PyAny>,
    n: usize,
    dim: usize,
    id: &str,
) -> Result<ndarray::Array2<f64>, String> {
    let arr = np.call_method1("asarray", (value, "float64")).map_err(|e| {
        format!(
            "the mechanism {id} returned a value numpy cannot read as float64 ({e}); allowed: an array of n = {n} releases, shape ({n},) or ({n}, {dim})"
        )
    })?;
    let shape: Vec<usize> = arr
        .getattr("shape")
        .and_then(|s| s.extract())
        .map_err(|e| e.to_string())?;
    let ok = match shape.as_slice() {
        [m] => *m == n && dim == 1,
        [m, d] => *m == n && *d == dim,
        _ => false,
    };
    if !ok {
        return Err(format!(
            "the mechanism {id} returned an array of shape {shape:?} for n = {n}; allowed: ({n},){} or ({n}, {dim})",
            if dim == 1 {
                ""
            } else {
                " [only for 1-D releases]"
            }
        ));
    }
    let arr = arr
        .call_method1("reshape", (n, dim))
        .map_err(|e| e.to_string())?;
    let view: PyReadonlyArray2<'_, f64> = arr.extract().map_err(|e: PyErr| e.to_string())?;
    Ok(view.as_array().to_owned())
}

/// Workers whose last job answered, ready for the next, with the id of the process that
/// started them (a child made by `fork` has none of its parent's threads: it starts its own).
static IDLE: Mutex<Vec<(u32, Py<PyAny>)>> = Mutex::new(Vec::new());

/// A worker of this process from the pool, if one is idle.
fn idle_worker() -> Option<Py<PyAny>> {
    let me = std::process::id();
    let mut idle = lock(&IDLE);
    while let Some((pid, w)) = idle.pop() {
        if pid == me {
            return Some(w);
        }
    }
    None
}

/// `function(*args)` on a worker, waiting without the GIL until `deadline` (`None`: no limit)
/// or until `stop` is set. `args` builds the arguments (with the GIL, on the calling thread).
pub(crate) fn call(
    function: &Py<PyAny>,
    args: impl FnOnce(Python<'_>) -> PyResult<Py<PyTuple>>,
    expect: Expect,
    deadline: Option<Instant>,
    stop: &AtomicBool,
) -> Answer {
    if stop.load(Ordering::Relaxed) {
        return Err(CallError::Stopped);
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let worker = Python::attach(|py| -> PyResult<Py<PyAny>> {
        let args = args(py)?;
        // Taken in a statement of its own: the lock must not be held while a new worker
        // starts (that releases the GIL, and another thread may wait for the lock with it).
        let idle = idle_worker();
        let worker = match idle {
            Some(w) => w,
            None => py
                .import("dp_audit._calls")?
                .getattr("Worker")?
                .call0()?
                .unbind(),
        };
        let reply = Py::new(
            py,
            Reply {
                tx: Mutex::new(Some(tx)),
                expect,
            },
        )?;
        worker
            .bind(py)
            .call_method1("submit", (function.clone_ref(py), args, reply))?;
        Ok(worker)
    })
    .map_err(|e| CallError::Failed(e.to_string()))?;
    loop {
        if stop.load(Ordering::Relaxed) {
            abandon(worker);
            return Err(CallError::Stopped);
        }
        let slice = match deadline {
            None => STOP_SLICE,
            Some(d) => match d.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left.min(STOP_SLICE),
                _ => {
                    abandon(worker);
                    return Err(CallError::TimedOut);
                }
            },
        };
        match rx.recv_timeout(slice) {
            Ok(answer) => {
                lock(&IDLE).push((std::process::id(), worker));
                return answer;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                abandon(worker);
                return Err(CallError::Failed(
                    "the worker thread ended without an answer".into(),
                ));
            }
        }
    }
}

/// Gives up on `worker`: a `TimeoutError` is injected into its thread and it stops after its
/// job. Done on a thread of its own, so that the engine never waits for the GIL here (a
/// callable stuck in C code may hold it).
fn abandon(worker: Py<PyAny>) {
    let _ = std::thread::Builder::new()
        .name("dp-audit abandon".into())
        .spawn(move || {
            Python::attach(|py| {
                let _ = abandon_worker(worker.bind(py));
            });
        });
}

/// `dp_audit._calls.Worker` `w` given up on: a `TimeoutError` raised in its thread when it next
/// runs bytecode, and a stop queued after its job.
#[pyfunction]
pub(crate) fn abandon_worker(w: &Bound<'_, PyAny>) -> PyResult<()> {
    let ident: std::os::raw::c_ulong = w.getattr("ident")?.extract()?;
    // SAFETY: called with the GIL held (`w` is bound); the exception is a type object that
    // lives as long as the interpreter; an unknown thread id changes nothing (returns 0).
    unsafe {
        pyo3::ffi::PyThreadState_SetAsyncExc(
            ident as std::os::raw::c_long,
            pyo3::ffi::PyExc_TimeoutError,
        );
    }
    w.call_method0("stop")?;
    Ok(())
}

/// The message of a panic.
fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// Runs `work` (the engine) on a thread of its own while this thread waits without the GIL in
/// slices of [`SIGNAL_SLICE`], handling signals between them: Ctrl-C sets `stop` (no further
/// call of the callable is started, the running one is abandoned), waits up to
/// [`STOP_GRACE`] for the engine to end, and raises `KeyboardInterrupt`.
pub(crate) fn run_engine<T: Send + 'static>(
    py: Python<'_>,
    stop: Arc<AtomicBool>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    engine_thread(py, Some(stop), work)
}

/// [`run_engine`] for work that calls no Python function: Ctrl-C raises `KeyboardInterrupt` at
/// once; the work, which nothing can stop, ends on its own thread and its result is dropped.
pub(crate) fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    engine_thread(py, None, work)
}

/// `work` on a thread of its own, this thread handling signals meanwhile; on Ctrl-C, `stop`
/// (when there is one) is set and the work is given [`STOP_GRACE`] to end.
fn engine_thread<T: Send + 'static>(
    py: Python<'_>,
    stop: Option<Arc<AtomicBool>>,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("dp-audit engine".into())
        .stack_size(ENGINE_STACK)
        .spawn(move || {
            let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            let _ = tx.send(out);
        })
        .map_err(|e| {
            PyRuntimeError::new_err(format!("could not start the engine's thread: {e}"))
        })?;
    let mut rx = rx;
    loop {
        let (got, back) = py.detach(move || (rx.recv_timeout(SIGNAL_SLICE), rx));
        rx = back;
        match got {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(p)) => {
                return Err(PyRuntimeError::new_err(format!(
                    "dp-audit stopped on an internal error (please report it): {}",
                    panic_message(p.as_ref())
                )));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    if let Some(stop) = stop {
                        stop.store(true, Ordering::Relaxed);
                        // The engine sees the stop at its next call; what it returns is dropped.
                        let _ = py.detach(move || rx.recv_timeout(STOP_GRACE).is_ok());
                    }
                    return Err(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "dp-audit's engine thread ended without an answer (please report it)",
                ));
            }
        }
    }
}
