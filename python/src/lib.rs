//! `dp_audit._native`: the dp-audit engine for the `dp_audit` Python package.
//!
//! The Python layer (`python/dp_audit/__init__.py`) checks and shapes the arguments (numpy
//! float64 arrays, C-contiguous, 2-D) and builds the `Record` objects; this module calls the same
//! Rust functions as the `audit` CLI, with the GIL released while the engine works. Every error
//! comes back as a Python exception (`ValueError` for a bad input, `OSError` for a file,
//! `RuntimeError` otherwise), never as a panic.

use std::sync::{Arc, Mutex};

use dp_audit::commands::test::{DEFAULT_MAX_TRAIN_ROWS, GivenSides, TestArgs, test_given};
use dp_audit::gate::Gate;
use dp_audit::mechanisms::rand::Rng;
use dp_audit::record::layers::Check;
use dp_audit::{Dataset, DatasetPair, Mechanism, Neighboring, PrivacyClaim, RecordDomain, Samples};
use numpy::{PyArray2, PyReadonlyArray2};
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

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

/// `audit test`'s reproduce line for these settings (flags at their defaults left out, as a
/// user would type it).
fn test_reproduce(
    names: (&str, &str),
    claim: &str,
    seed: u64,
    beta: f64,
    testers: &str,
    check: &str,
    sequential: (bool, Option<usize>, Option<usize>),
) -> String {
    let mut words: Vec<String> = vec![
        "audit".into(),
        "test".into(),
        "--samples-a".into(),
        names.0.into(),
        "--samples-b".into(),
        names.1.into(),
        "--claim".into(),
        claim.into(),
    ];
    if seed != 0 {
        words.extend(["--seed".into(), seed.to_string()]);
    }
    if beta != dp_audit::AuditConfig::default().failure_probability {
        words.extend(["--failure-probability".into(), format!("{beta}")]);
    }
    if testers != "hockey-stick" {
        words.extend(["--tester".into(), testers.into()]);
    }
    if check != "both" {
        words.extend(["--check".into(), check.into()]);
    }
    if sequential.0 {
        words.push("--sequential".into());
    }
    if let Some(n) = sequential.1 {
        words.extend(["--max-samples".into(), n.to_string()]);
    }
    if let Some(n) = sequential.2 {
        words.extend(["--first-batch".into(), n.to_string()]);
    }
    shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
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
    let reproduce = test_reproduce(
        (&name_a, &name_b),
        &claim,
        seed,
        failure_probability,
        &testers,
        &check,
        (sequential, max_samples, first_batch),
    );
    let args = TestArgs {
        samples_a: vec![name_a.clone().into()],
        samples_b: vec![name_b.clone().into()],
        stream: false,
        in_memory: false,
        max_train_rows: DEFAULT_MAX_TRAIN_ROWS,
        claim: Some(claim),
        seed,
        failure_probability,
        tester: testers,
        transform: None,
        check: Some(check),
        sequential,
        max_samples,
        first_batch,
        bdp_definition: None,
        json: true,
        jobs: None,
        plan_out: None,
        plan: None,
        count_shard: None,
        reduce: Vec::new(),
        report: dp_audit::commands::ReportArgs {
            report_dir: "reports".into(),
            no_report: true,
            quiet: true,
        },
    };
    py.detach(|| -> dp_audit::Result<(String, String, u8)> {
        // One copy per side into the engine's own matrix (the GIL released meanwhile).
        let sa = Arc::new(Samples::new(va.to_owned())?);
        let sb = Arc::new(Samples::new(vb.to_owned())?);
        let sides = dp_audit::sources::shards::memory_sides((&name_a, sa), (&name_b, sb))?;
        let out = test_given(&args, &GivenSides { sides, reproduce })?;
        Ok((out.json, out.text, out.code))
    })
    .map_err(to_py)
}

/// A Python callable `mechanism(dataset, n, seed) -> array` as a [`Mechanism`]: each chunk of
/// releases is one call, with a seed drawn from the engine's generator for that chunk (so an
/// audit is as deterministic as the callable is in its seed).
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
}

impl std::fmt::Debug for PyMechanism {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PyMechanism({})", self.id)
    }
}

impl PyMechanism {
    fn fail(&self, e: PyErr, what: String) -> dp_audit::mechanisms::MechanismError {
        let mut slot = self.raised.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(e);
        dp_audit::mechanisms::MechanismError::InvalidDataset(what)
    }
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
    fn sample(
        &self,
        dataset: &Dataset,
        n: usize,
        rng: &mut dyn Rng,
    ) -> dp_audit::mechanisms::Result<Samples> {
        let seed = rng.next_u64();
        let values = Python::attach(|py| -> Result<ndarray::Array2<f64>, String> {
            let data = PyArray2::from_array(py, dataset.records());
            // Scalar records go in as a 1-D array (what numpy code expects), vectors as n × dim.
            let data: Bound<'_, PyAny> = if dataset.dim() == 1 {
                data.call_method1("reshape", (dataset.len(),))
                    .map_err(|e| self.fail(e, "reshape failed".into()).to_string())?
            } else {
                data.into_any()
            };
            let out = self
                .function
                .call1(py, (data, n, seed))
                .map_err(|e| {
                    let msg = format!(
                        "the mechanism {} raised {} when called with (dataset of {} records, n = {n}, seed = {seed})",
                        self.id,
                        e,
                        dataset.len()
                    );
                    self.fail(e, msg.clone());
                    msg
                })?;
            let np = py.import("numpy").map_err(|e| e.to_string())?;
            let arr = np
                .call_method1("asarray", (out.bind(py), "float64"))
                .map_err(|e| {
                    format!(
                        "the mechanism {} returned a value numpy cannot read as float64 ({e}); allowed: an array of n = {n} releases, shape ({n},) or ({n}, {})",
                        self.id, self.output_dim
                    )
                })?;
            let shape: Vec<usize> = arr.getattr("shape").and_then(|s| s.extract()).map_err(|e| e.to_string())?;
            let dim = self.output_dim;
            let ok = match shape.as_slice() {
                [m] => *m == n && dim == 1,
                [m, d] => *m == n && *d == dim,
                _ => false,
            };
            if !ok {
                return Err(format!(
                    "the mechanism {} returned an array of shape {shape:?} for n = {n}; allowed: ({n},){} or ({n}, {dim})",
                    self.id,
                    if dim == 1 { "" } else { " [only for 1-D releases]" }
                ));
            }
            let arr = arr
                .call_method1("reshape", (n, dim))
                .map_err(|e| e.to_string())?;
            let view: PyReadonlyArray2<'_, f64> = arr.extract().map_err(|e: PyErr| e.to_string())?;
            Ok(view.as_array().to_owned())
        })
        .map_err(dp_audit::mechanisms::MechanismError::InvalidDataset)?;
        let samples = Samples::new(values)?;
        if let Some((i, j, v)) = samples.first_non_finite() {
            return Err(dp_audit::mechanisms::MechanismError::InvalidDataset(
                format!(
                    "the mechanism {} returned {v} at release {i}, coordinate {j} (seed {seed}); releases must be finite",
                    self.id
                ),
            ));
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
#[pyo3(signature = (mechanism, name, claim, neighboring, pairs, output_dim, samples, seed, failure_probability, check))]
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
) -> PyResult<GateAnswer> {
    let claim_v: PrivacyClaim = claim.parse().map_err(|e| {
        PyValueError::new_err(format!(
            "claim {claim:?}: {e}; allowed: pure:EPS, approx:EPS:DELTA, renyi:ALPHA:EPS, zcdp:RHO or gdp:MU"
        ))
    })?;
    let relation: Neighboring = neighboring.parse().map_err(|e| {
        PyValueError::new_err(format!(
            "neighboring {neighboring:?}: {e}; allowed: add-remove, replace-one, zero-out"
        ))
    })?;
    let check_v: Check = check.parse().map_err(to_py)?;
    if samples < 100 {
        return Err(PyValueError::new_err(format!(
            "samples = {samples}; allowed: at least 100 releases per side"
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
        id: name,
        function: mechanism,
        claim: claim_v,
        neighboring: relation,
        domain,
        output_dim,
        batch: None,
        claim_source: None,
        setting: dp_audit::mechanisms::DpSetting::Central,
        privacy_unit: None,
        raised: Arc::new(Mutex::new(None)),
    };
    let g = Gate::default()
        .seed(seed)
        .samples_per_side(samples)
        .failure_probability(failure_probability)
        .check_layers(check_v);
    let result = py.detach(|| -> dp_audit::Result<_> {
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
    });
    let raised = m.raised.lock().unwrap_or_else(|p| p.into_inner()).take();
    match (result, raised) {
        (Ok(r), _) => Ok(r),
        (Err(e), Some(original)) => {
            let err = PyRuntimeError::new_err(format!("dp-audit could not audit {}: {e}", m.id));
            err.set_cause(py, Some(original));
            Err(err)
        }
        (Err(e), None) => Err(to_py(e)),
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
    use dp_audit::commands::accountant::{AccountantArgs, accountant, accountant_given};
    let args = AccountantArgs {
        sampling_rate,
        noise_multiplier,
        steps,
        policy,
        delta,
        target_epsilon,
        ledger: ledger_path.clone().map(Into::into),
        neighbors,
        bayesian: false,
        data: None,
        gamma: None,
        distance_quantiles: "50,90,99,100".into(),
        markov_percentiles: "50,90,99".into(),
        estimator: None,
        max_distance: None,
        unclipped: false,
        group: None,
        test_distances: None,
        weibull_shape: None,
        weibull_scale: None,
        weibull_samples: None,
        seed: None,
        curves: None,
        json,
    };
    py.detach(|| -> dp_audit::Result<String> {
        let out = match (&ledger_path, &ledger_text) {
            // Events given as JSON lines, parsed by the parser `--ledger FILE` uses.
            (Some(p), Some(t)) => {
                let events = dp_audit::mechanisms::accountant::parse_ledger_with_policies(t)
                    .map_err(|e| {
                        dp_audit::Error::InvalidConfig(format!(
                            "--ledger {p} (event i of the list is line i + 1): {e}"
                        ))
                    })?;
                let events = events.into_iter().map(|(_, e, p)| (e, p)).collect();
                accountant_given(&args, events)?
            }
            // A file (read as `--ledger FILE` reads it), or one block of steps.
            _ => accountant(&args)?,
        };
        Ok(out.stdout)
    })
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
#[pyo3(signature = (delta, data_path, data_text, sampling_rate, noise_multiplier, steps, gamma, distance_quantiles, markov_percentiles, estimator, max_distance, group, json))]
#[allow(clippy::too_many_arguments)]
fn account_bayesian(
    py: Python<'_>,
    delta: f64,
    data_path: String,
    data_text: Option<String>,
    sampling_rate: f64,
    noise_multiplier: f64,
    steps: u64,
    gamma: Option<f64>,
    distance_quantiles: String,
    markov_percentiles: String,
    estimator: Option<String>,
    max_distance: Option<f64>,
    group: Option<u64>,
    json: bool,
) -> PyResult<String> {
    use dp_audit::commands::accountant::{AccountantArgs, accountant, accountant_bayesian_given};
    let args = AccountantArgs {
        sampling_rate: Some(sampling_rate),
        noise_multiplier: Some(noise_multiplier),
        steps: Some(steps),
        policy: None,
        delta,
        target_epsilon: None,
        ledger: None,
        neighbors: "add-remove".into(),
        bayesian: true,
        data: Some(data_path.into()),
        gamma,
        distance_quantiles,
        markov_percentiles,
        estimator,
        max_distance,
        unclipped: false,
        group,
        test_distances: None,
        weibull_shape: None,
        weibull_scale: None,
        weibull_samples: None,
        seed: None,
        curves: None,
        json,
    };
    py.detach(|| -> dp_audit::Result<String> {
        let out = match &data_text {
            // Distances given as lines, read by the parser `--data FILE` uses.
            Some(t) => accountant_bayesian_given(&args, t)?,
            None => accountant(&args)?,
        };
        Ok(out.stdout)
    })
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
    py.detach(|| {
        dp_audit::report::reproduce::with_args(words.clone(), || {
            dp_audit::commands::one_run::one_run_trainer(&args)
        })
    })
    .map(|out| (out.stdout, out.code))
    .map_err(to_py)
}

/// `audit one-run --exec NAME --claim CLAIM … [--json]` with the training done by `train`, a
/// Python callable from the protocol's request (JSON text) to the program's output (scores as
/// text): (what the CLI prints, exit code).
#[pyfunction]
#[pyo3(signature = (train, name, claim, canaries, data, record_range, record_dim, guesses, independent_canaries, seed, failure_probability, json))]
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
) -> PyResult<(String, u8, String)> {
    use dp_audit::commands::one_run::{GivenTraining, OneRunArgs, one_run_given};
    // The reproduce line: the CLI command with these settings (defaults left out).
    let mut words: Vec<String> = vec![
        "audit".into(),
        "one-run".into(),
        "--exec".into(),
        name.clone(),
        "--claim".into(),
        claim.clone(),
    ];
    let mut flag = |f: &str, v: String| {
        words.push(f.into());
        words.push(v);
    };
    if canaries != 1000 {
        flag("--canaries", canaries.to_string());
    }
    if let Some(d) = &data {
        flag("--data", d.clone());
    }
    if let Some(r) = &record_range {
        flag("--record-range", r.clone());
    }
    if let Some(d) = record_dim {
        flag("--record-dim", d.to_string());
    }
    if let Some(g) = &guesses {
        flag("--guesses", g.clone());
    }
    if seed != 0 {
        flag("--seed", seed.to_string());
    }
    if failure_probability != dp_audit::AuditConfig::default().failure_probability {
        flag("--failure-probability", format!("{failure_probability}"));
    }
    if independent_canaries {
        words.push("--independent-canaries".into());
    }
    let reproduce =
        shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "));
    let args = OneRunArgs {
        canaries,
        threat_model: None,
        exec: Some(name.clone()),
        claim: Some(claim),
        data: data.map(Into::into),
        record_range,
        record_dim,
        independent_canaries,
        exec_timeout: None,
        params: Vec::new(),
        dataset: None,
        inclusion_probability: 0.5,
        guesses,
        seed,
        failure_probability,
        json,
        report: dp_audit::commands::ReportArgs {
            report_dir: "reports".into(),
            no_report: true,
            quiet: true,
        },
    };
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let mut call = |request: String| -> dp_audit::Result<String> {
        Python::attach(|py| {
            train
                .call1(py, (request,))
                .and_then(|out| out.bind(py).extract::<String>())
                .map_err(|e| {
                    let msg = format!("the training function {name} raised {e}");
                    let mut slot = raised.lock().unwrap_or_else(|p| p.into_inner());
                    slot.get_or_insert(e);
                    dp_audit::Error::InvalidConfig(msg)
                })
        })
    };
    let result = py.detach(|| {
        one_run_given(
            &args,
            GivenTraining {
                train: &mut call,
                reproduce: reproduce.clone(),
            },
        )
    });
    let raised = raised.lock().unwrap_or_else(|p| p.into_inner()).take();
    match (result, raised) {
        (Ok(out), _) => Ok((out.stdout, out.code, reproduce)),
        (Err(e), Some(original)) => {
            let err = PyRuntimeError::new_err(format!("dp-audit could not audit {name}: {e}"));
            err.set_cause(py, Some(original));
            Err(err)
        }
        (Err(e), None) => Err(match to_py(e) {
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
/// of releases instead of one process. Returns (what the CLI prints, exit code).
#[pyfunction]
fn run(
    py: Python<'_>,
    mechanism: Py<PyAny>,
    words: Vec<String>,
    output_dim: usize,
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
    let name = args.exec.clone().unwrap_or_default();
    let raised: Arc<Mutex<Option<PyErr>>> = Arc::new(Mutex::new(None));
    let build = |spec: &GivenSpec| -> dp_audit::Result<Box<dyn Mechanism>> {
        let function = Python::attach(|py| mechanism.clone_ref(py));
        Ok(Box::new(PyMechanism {
            id: name.clone(),
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
            raised: raised.clone(),
        }))
    };
    let result = py.detach(|| {
        dp_audit::report::reproduce::with_args(words.clone(), || run_given(&args, &build))
    });
    let raised = raised.lock().unwrap_or_else(|p| p.into_inner()).take();
    match (result, raised) {
        (Ok(out), _) => Ok((out.stdout, out.code)),
        (Err(e), Some(original)) => {
            let err = PyRuntimeError::new_err(format!("dp-audit could not audit {name}: {e}"));
            err.set_cause(py, Some(original));
            Err(err)
        }
        (Err(e), None) => Err(to_py(e)),
    }
}

/// The module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(test_samples, m)?)?;
    m.add_function(wrap_pyfunction!(gate, m)?)?;
    m.add_function(wrap_pyfunction!(write_samples, m)?)?;
    m.add_function(wrap_pyfunction!(account, m)?)?;
    m.add_function(wrap_pyfunction!(account_bayesian, m)?)?;
    m.add_function(wrap_pyfunction!(one_run_trainer, m)?)?;
    m.add_function(wrap_pyfunction!(one_run, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
