//! Running one kind of audit for `audit run`, from plain options: the target (a catalogue
//! entry or an exec program, through one view or in layers), then the fixed-pair audit, the
//! dataset search, the layered search, the Bayesian audit or the sequential audit, each with its
//! report written and its text or JSON rendered. The command line (`crate::commands::run`)
//! parses and checks the flags and picks one of these.

use std::path::{Path, PathBuf};

use crate::audit::{AuditConfig, Verdict, audit_pair};
use crate::error::{Error, Result};
use crate::mechanisms::catalogue::{self, Entry};
use crate::mechanisms::math::readable;
use crate::mechanisms::{
    Dataset, DatasetPair, Mechanism, Neighboring, Params, PrivacyClaim, RecordDomain,
};
use crate::record::MechanismInfo;
use crate::report::output::{Outcome, OutputOptions, announce_report, exit_code, to_json};
use crate::report::reproduce::{reproduce_line, reproduce_line_planned};
use crate::report::text::{render_search_text, render_text};
use crate::testers::{PropertyTester, Transform, TransformedMechanism};

/// Default time budget of an exec audit (search and confirmation together).
pub const DEFAULT_EXEC_BUDGET_SECONDS: f64 = 60.0;

/// How a dataset search runs (the plain form of `audit run`'s search flags; `None`: the
/// default).
#[derive(Clone, Debug, Default)]
pub struct SearchOptions {
    /// Dataset finder by name.
    pub finder: Option<String>,
    /// Pairs scored in the exploratory search.
    pub trials: Option<usize>,
    /// Releases per side for each exploratory score.
    pub search_samples: Option<usize>,
    /// Pairs re-audited with fresh samples.
    pub confirm: Option<usize>,
    /// Record range (lo, hi) a catalogue search keeps to, inside the mechanism's.
    pub record_range: Option<(f64, f64)>,
    /// Records in D.
    pub dataset_size: Option<usize>,
    /// Pairs for the fixed finder (one JSON object per line).
    pub pairs: Option<PathBuf>,
    /// Data sample for the from-data finder.
    pub typical_data: Option<PathBuf>,
    /// Seconds after which the search stops.
    pub max_search_seconds: Option<f64>,
    /// Seconds for the whole run, search and confirmation.
    pub budget_seconds: Option<f64>,
}

impl SearchOptions {
    /// The finder's name: the portfolio by default; `typical` is the old name of `from-data`.
    pub fn finder_name(&self) -> String {
        // Unknown programs get the portfolio; a catalogue search names its finder. `typical` is
        // the old name of `from-data` (it never tested Bayesian DP; see dp_audit::audit::bayesian).
        match self.finder.clone().unwrap_or_else(|| "portfolio".into()) {
            f if f == "typical" => "from-data".to_string(),
            f => f,
        }
    }
}

/// The settings of one `audit run` (the plain form of its flags, checked by the caller).
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// Catalogue id of the mechanism (`None` for an exec program).
    pub mechanism: Option<String>,
    /// Mechanism parameters `NAME=VALUE`.
    pub params: Vec<String>,
    /// The target is an exec program.
    pub exec: bool,
    /// The data distribution of a Bayesian DP claim.
    pub data: Option<PathBuf>,
    /// The definition a Bayesian DP claim is tested as.
    pub bdp_definition: crate::audit::bayesian::Definition,
    /// Draw the rest of the dataset from μ too (Bayesian DP).
    pub draw_dataset: bool,
    /// K, the records that differ in a Bayesian DP audit (`--group K`, 1 by default).
    pub group: usize,
    /// Seed of every random choice.
    pub seed: u64,
    /// Releases drawn on each side of the pair.
    pub samples: usize,
    /// β.
    pub failure_probability: f64,
    /// Most releases per side of a sequential audit.
    pub max_samples: Option<usize>,
    /// Releases per side of a sequential audit's first batch.
    pub first_batch: Option<usize>,
    /// The dataset search.
    pub search: SearchOptions,
    /// Reports and how the result is shown.
    pub output: OutputOptions,
    /// The sizes the user chose, which a planner fitting the run to a budget keeps.
    pub sizes_given: SizesGiven,
    /// Seconds one program call may take (`--exec-timeout`).
    pub exec_timeout_seconds: f64,
    /// When the run began (the clock its time budget is counted on: building and probing the
    /// target count).
    pub started: std::time::Instant,
}

/// The slack a time budget allows past itself: the run ends within the budget plus
/// max(5 s, 10 %) whatever the load.
pub fn budget_slack(budget: f64) -> f64 {
    (0.1 * budget).max(5.0)
}

/// The instant no mechanism call may run past in a run of `budget` seconds begun at
/// `started`: the budget plus its slack, less what writing the answer and the report takes.
pub fn call_deadline(started: std::time::Instant, budget: f64) -> std::time::Instant {
    let slack = budget_slack(budget);
    started + std::time::Duration::from_secs_f64((budget + slack - (0.5 * slack).min(3.0)).max(0.0))
}

/// Which of the sizes a planner would otherwise choose were given by the user.
#[derive(Clone, Copy, Debug, Default)]
pub struct SizesGiven {
    /// Releases per side of a confirmation (`--samples`).
    pub samples: bool,
    /// Releases per side of an exploratory score (`--search-samples`).
    pub search_samples: bool,
    /// Pairs confirmed (`--confirm`).
    pub confirm: bool,
    /// Releases per program call (`--exec-batch`).
    pub exec_batch: bool,
}

impl RunOptions {
    /// True when the run searches for a pair (`--finder`, and always for an exec program).
    pub fn searching(&self) -> bool {
        self.search.finder.is_some() || self.exec
    }
}

/// What `audit run` audits: a catalogue entry or an exec program.
pub struct Target {
    /// The mechanism, wrapped in `transform` when there is one.
    pub mechanism: Box<dyn Mechanism>,
    /// The catalogue witness, if any.
    pub witness: Option<DatasetPair>,
    /// Catalogue status word, if any.
    pub status: Option<String>,
    /// The claim to test.
    pub claim: PrivacyClaim,
    /// Where the claim came from, when it is not the mechanism's own statement.
    pub claim_source: Option<String>,
    /// The output transform `mechanism` applies (already wrapped in), `None` for the identity.
    pub transform: Option<Transform>,
    /// The layers to check (then `mechanism` returns raw releases), `None` for a single view.
    pub layers: Option<crate::record::layers::Check>,
    /// The program, when the target is one (each layer of a sequential audit wraps a copy).
    pub program: Option<crate::sources::exec::ExecMechanism>,
    /// A mechanism given in this process ([`Target::given_shared`]; each layer of a sequential
    /// audit wraps a view of it, as each wraps a copy of a program).
    pub shared: Option<std::sync::Arc<dyn Mechanism>>,
}

/// A mechanism given in this process, shared by the views that wrap it: each layer of a
/// sequential audit wraps its own [`TransformedMechanism`] around it. Every method is the
/// shared mechanism's.
#[derive(Debug, Clone)]
pub struct SharedMechanism(pub std::sync::Arc<dyn Mechanism>);

impl Mechanism for SharedMechanism {
    fn id(&self) -> &str {
        self.0.id()
    }
    fn claim(&self) -> PrivacyClaim {
        self.0.claim()
    }
    fn claim_source(&self) -> String {
        self.0.claim_source()
    }
    fn neighboring(&self) -> Neighboring {
        self.0.neighboring()
    }
    fn setting(&self) -> crate::mechanisms::DpSetting {
        self.0.setting()
    }
    fn privacy_unit(&self) -> String {
        self.0.privacy_unit()
    }
    fn dp_fy_scope(&self) -> crate::mechanisms::accounting::dpfy::DpFyScope {
        self.0.dp_fy_scope()
    }
    fn domain(&self) -> RecordDomain {
        self.0.domain()
    }
    fn output_dim(&self) -> usize {
        self.0.output_dim()
    }
    fn sample(
        &self,
        dataset: &crate::mechanisms::Dataset,
        n: usize,
        rng: &mut dyn crate::mechanisms::rand::Rng,
    ) -> std::result::Result<crate::mechanisms::Samples, crate::mechanisms::MechanismError> {
        self.0.sample(dataset, n, rng)
    }
    fn batch_size(&self) -> Option<usize> {
        self.0.batch_size()
    }
    fn set_batch_size(&self, batch: usize) -> bool {
        self.0.set_batch_size(batch)
    }
    fn datasets_per_call(&self) -> Option<usize> {
        self.0.datasets_per_call()
    }
    fn sample_each(
        &self,
        datasets: &[crate::mechanisms::Dataset],
        rng: &mut dyn crate::mechanisms::rand::Rng,
    ) -> std::result::Result<crate::mechanisms::Samples, crate::mechanisms::MechanismError> {
        self.0.sample_each(datasets, rng)
    }
    fn set_call_limit(&self, limit: Option<std::time::Duration>) {
        self.0.set_call_limit(limit)
    }
    fn set_deadline(&self, deadline: Option<std::time::Instant>) {
        self.0.set_deadline(deadline)
    }
    fn recommended_transform(&self) -> Option<String> {
        self.0.recommended_transform()
    }
    fn accountant_range(&self) -> Option<crate::mechanisms::AccountantRange> {
        self.0.accountant_range()
    }
}

impl Target {
    /// An exec program `m` (already probed) with its parsed `claim` and the claim's `source`:
    /// in layers by default (`check`), or through the one view `transform` names.
    pub fn exec(
        m: crate::sources::exec::ExecMechanism,
        claim: PrivacyClaim,
        claim_source: Option<String>,
        check: Option<&str>,
        transform: Option<&str>,
    ) -> Result<Self> {
        let program = m.clone();
        let mut t = Self::given(Box::new(m), claim, claim_source, check, transform)?;
        t.program = Some(program);
        Ok(t)
    }

    /// A mechanism given in this process (the Python package's callables), audited as an exec
    /// program is: in layers by default (`check`), or through the one view `transform` names.
    pub fn given(
        m: Box<dyn Mechanism>,
        claim: PrivacyClaim,
        claim_source: Option<String>,
        check: Option<&str>,
        transform: Option<&str>,
    ) -> Result<Self> {
        // Layers by default; an explicit --transform audits through that one view.
        let layers = match (check, transform) {
            (_, Some(_)) => None,
            (Some(c), None) => Some(c.parse()?),
            (None, None) => Some(crate::record::layers::Check::Both),
        };
        // Without layers an explicit --transform names the one view.
        let (mechanism, transform) = match (&layers, transform) {
            (None, Some(t)) => with_transform(m, t)?,
            _ => (m, None),
        };
        Ok(Self {
            mechanism,
            witness: None,
            status: None,
            claim,
            claim_source,
            transform,
            layers,
            program: None,
            shared: None,
        })
    }

    /// A mechanism given in this process, as [`Target::given`], kept shared so that each layer
    /// of a sequential audit can wrap a view of it ([`SharedMechanism`]).
    pub fn given_shared(
        m: std::sync::Arc<dyn Mechanism>,
        claim: PrivacyClaim,
        claim_source: Option<String>,
        check: Option<&str>,
        transform: Option<&str>,
    ) -> Result<Self> {
        let mut t = Self::given(
            Box::new(SharedMechanism(m.clone())),
            claim,
            claim_source,
            check,
            transform,
        )?;
        t.shared = Some(m);
        Ok(t)
    }

    /// The catalogue entry `id` (built as `entry`), its claim replaced by `claim` (with where
    /// that came from) when given, through `transform` (default: the entry's recommended view)
    /// or in the layers `check` names.
    pub fn catalogue(
        id: &str,
        entry: Entry,
        claim: Option<(PrivacyClaim, Option<String>)>,
        transform: Option<&str>,
        check: Option<&str>,
    ) -> Result<Self> {
        let claim_source = claim.as_ref().map(|(_, source)| {
            format!(
                "{} (the mechanism states {})",
                source.as_deref().unwrap_or("given on the command line"),
                entry.mechanism.claim()
            )
        });
        let claim = claim.map_or_else(|| entry.mechanism.claim(), |c| c.0);
        // An entry whose bug lives in the float representation names the transform it is audited
        // through; an explicit --transform (including `none`) overrides it.
        let recommended = catalogue::recommended_transform_for(id, &*entry.mechanism);
        let spelling = transform.or(recommended.as_deref()).unwrap_or("none");
        let layers: Option<crate::record::layers::Check> = match check {
            Some(c) => Some(c.parse()?),
            None => None,
        };
        let (mechanism, transform) = if layers.is_some() {
            (entry.mechanism, None)
        } else {
            with_transform(entry.mechanism, spelling)?
        };
        Ok(Self {
            mechanism,
            witness: Some(entry.witness),
            status: Some(entry.status.word().to_string()),
            claim,
            claim_source,
            transform,
            layers,
            program: None,
            shared: None,
        })
    }

    /// Writes the target's catalogue status and, when the claim is not the mechanism's own,
    /// where it came from into a report's mechanism section.
    fn stamp(&self, info: &mut MechanismInfo) {
        info.catalogue_status = self.status.clone();
        if let Some(src) = &self.claim_source {
            info.claim_source = src.clone();
        }
    }

    /// The catalogue witness pair, or the error that asks for one.
    fn witness_pair(&self) -> Result<DatasetPair> {
        self.witness.clone().ok_or_else(|| {
            Error::InvalidConfig(
                "this target has no witness pair; allowed: a catalogue --mechanism, or --finder to search for a pair".into(),
            )
        })
    }
}

/// The fixed-pair audit: `target` on its catalogue witness pair, with `testers` (and the
/// testers `skipped` by `--tester all`, as `name: why`).
pub fn run_pair(
    opts: &RunOptions,
    target: &Target,
    testers: &[Box<dyn PropertyTester>],
    skipped: Vec<String>,
    config: &AuditConfig,
) -> Result<Outcome> {
    let entry_mechanism = &target.mechanism;
    let witness = target.witness_pair()?;
    let mechanism_name = opts.mechanism.clone().unwrap_or_default();
    opts.output.prepare()?;
    let spinner = crate::report::progress::Spinner::start_counting(
        opts.output.quiet,
        &format!("auditing {mechanism_name}"),
        Some(2 * opts.samples as u64),
    );
    let mut report = audit_pair(&**entry_mechanism, &target.claim, &witness, testers, config)?;
    report.skipped_testers = skipped;
    report.reproduce = Some(reproduce_line(None));
    report.output_transform = target.transform;
    target.stamp(&mut report.mechanism);
    let code = exit_code(report.verdict);
    // A report that cannot be written (disk full) never costs the verdict: it is printed first
    // and the error after it.
    let written = opts.output.write(|dir| {
        // Plot samples come from streams of their own: the verdict's samples are untouched.
        let plots = crate::report::PlotData::draw(
            &**entry_mechanism,
            &witness,
            opts.seed,
            crate::report::PLOT_SAMPLES_PER_SIDE,
        )?;
        crate::report::write_run_report(dir, &report, &plots)
    });
    drop(spinner);
    let stdout = if opts.output.json {
        let mut r = report.clone();
        r.wall_time_seconds = None;
        to_json(&crate::record::ResultRecord::from_audit(&r))?
    } else {
        render_text(&report)
    };
    Ok(opts.output.finish(stdout, code, written))
}

/// The Bayesian DP audit ([`crate::audit::bayesian`]) of `target`'s claim, the differing record
/// drawn from `opts.data` (default: the data the catalogue's bdp entries ship with). The fixed
/// rest of the dataset D is the catalogue witness's smaller dataset, or for an exec program the
/// dataset it was probed on: `--dataset-size` records (default 3) at the middle of
/// `--record-range` (with `--draw-dataset` only its size is used: D is drawn from μ).
pub fn run_bayesian(opts: &RunOptions, target: &Target) -> Result<Outcome> {
    let claim = target.claim;
    let m = &*target.mechanism;
    let base = match &target.witness {
        Some(witness) => {
            if witness.first().len() <= witness.second().len() {
                witness.first().clone()
            } else {
                witness.second().clone()
            }
        }
        None if opts.exec => {
            let d = m.domain();
            let size = opts.search.dataset_size.unwrap_or(3);
            let mid = 0.5 * d.lower + 0.5 * d.upper;
            if size == 0 {
                crate::mechanisms::Dataset::empty(d.dim)?
            } else {
                crate::mechanisms::Dataset::vectors(d.dim, &vec![vec![mid; d.dim]; size])?
            }
        }
        None => {
            return Err(Error::InvalidConfig(
                "a Bayesian DP audit needs a catalogue --mechanism or an --exec program".into(),
            ));
        }
    };
    let base = &base;
    let (data, source) = match &opts.data {
        Some(path) => (
            crate::audit::bayesian::read_data(path, &m.domain())?,
            path.display().to_string(),
        ),
        None => {
            let records = catalogue::bayesian::data();
            let text: String = records.iter().map(|r| format!("{r:?}\n")).collect();
            (
                crate::audit::bayesian::parse_data(&text, "examples/bdp-data.txt", &m.domain())?,
                "the entry's own data: the 1000 records of examples/bdp-data.txt (shipped with the catalogue; --data FILE audits another distribution)".to_string(),
            )
        }
    };
    check_memory("--samples", opts.samples, m.output_dim() + 2)?;
    opts.output.prepare()?;
    let config = crate::audit::bayesian::BayesianConfig {
        seed: opts.seed,
        draws_per_side: opts.samples,
        failure_probability: opts.failure_probability,
        definition: opts.bdp_definition,
        draw_dataset: opts.draw_dataset,
        group: opts.group,
    };
    let spinner = crate::report::progress::Spinner::start(
        opts.output.quiet,
        &format!("auditing {} (Bayesian DP)", m.id()),
    );
    let mut report =
        crate::audit::bayesian::audit_bayesian(m, &claim, base, &data, &source, &config)?;
    drop(spinner);
    report.reproduce = Some(reproduce_line(None));
    target.stamp(&mut report.mechanism);
    let code = exit_code(report.verdict);
    let written = opts.output.write(|dir| {
        crate::report::write_run_report(dir, &report, &crate::report::PlotData::none())
    });
    let stdout = if opts.output.json {
        report.wall_time_seconds = None;
        to_json(&crate::record::ResultRecord::from_audit(&report))?
    } else {
        render_text(&report)
    };
    Ok(opts.output.finish(stdout, code, written))
}

/// The sequential audit's settings at failure probability `beta`.
fn sequential_config(opts: &RunOptions, beta: f64) -> crate::audit::sequential::SequentialConfig {
    let defaults = crate::audit::sequential::SequentialConfig::default();
    crate::audit::sequential::SequentialConfig {
        seed: opts.seed,
        max_samples_per_side: opts.max_samples.unwrap_or(defaults.max_samples_per_side),
        first_batch: opts.first_batch.unwrap_or(defaults.first_batch),
        failure_probability: beta,
    }
}

/// The anytime-valid betting audit ([`crate::audit::sequential`]) on one pair (`--pairs`, else
/// the catalogue witness),
/// once per layer when `target` has layers.
pub fn run_sequential(opts: &RunOptions, target: &Target) -> Result<Outcome> {
    use crate::audit::sequential::audit_sequential;
    let witness = sequential_pair(opts, target)?;
    let witness = &witness;
    if let Some(check) = target.layers {
        return run_sequential_layered(opts, target, check, witness);
    }
    let config = sequential_config(opts, opts.failure_probability);
    config.validate(target.mechanism.output_dim())?;
    check_memory(
        "--max-samples",
        config.max_samples_per_side,
        target.mechanism.output_dim(),
    )?;
    opts.output.prepare()?;
    let spinner = crate::report::progress::Spinner::start(
        opts.output.quiet,
        &format!("auditing {} sequentially", target.mechanism.id()),
    );
    let mut report = audit_sequential(&*target.mechanism, &target.claim, witness, &config)?;
    drop(spinner);
    report.reproduce = Some(reproduce_line(None));
    report.output_transform = target.transform;
    target.stamp(&mut report.mechanism);
    let code = exit_code(report.verdict);
    let written = opts
        .output
        .write(|dir| crate::report::sequential::write_sequential_report(dir, &report));
    let stdout = if opts.output.json {
        report.wall_time_seconds = None;
        to_json(&crate::record::ResultRecord::from_sequential(&report).without_wall_time())?
    } else {
        crate::audit::sequential::render_text(&report)
    };
    Ok(opts.output.finish(stdout, code, written))
}

/// The pair a sequential audit tests: the one pair of `--pairs FILE`, else the catalogue
/// witness. A sequential test has no search: a program's pair must be given.
fn sequential_pair(opts: &RunOptions, target: &Target) -> Result<DatasetPair> {
    let m = &target.mechanism;
    match (&opts.search.pairs, &target.witness) {
        (Some(path), _) => {
            let mut pairs = read_pairs(path, &m.domain(), m.neighboring())?;
            if pairs.len() != 1 {
                return Err(Error::InvalidConfig(format!(
                    "--pairs {} holds {} pairs; allowed with --sequential: one pair (the sequential test spends all of β on it; test several pairs with --finder fixed, which splits β over them)",
                    path.display(),
                    pairs.len()
                )));
            }
            Ok(pairs.remove(0))
        }
        (None, Some(w)) => Ok(w.clone()),
        (None, None) => Err(Error::InvalidConfig(
            "--sequential tests one pair, and a program has no witness pair; allowed: --pairs FILE with one line {\"first\": [...], \"second\": [...]} (e.g. the pair a search reported), or a catalogue --mechanism".into(),
        )),
    }
}

/// Peak memory of a run per byte of releases (both sides as f64), measured (max RSS, release
/// build): hockey-stick 1.06× on `svt3 --samples 2000000` (675 MB for 640 MB of releases) and
/// 1.93× on `laplace-sum --samples 20000000`; MMD 1.9×, histogram 1.7× on
/// `gaussian-sum-analytic --samples 10000000`; Rényi 3.25× on `gradient-perturbation --samples
/// 5000000` (its sorted copies per side). The largest, rounded up.
const PEAK_PER_RELEASE_BYTE: f64 = 3.5;

/// Memory this process may still use: `MemAvailable` of /proc/meminfo (Linux), or less when the
/// environment variable `DP_AUDIT_MEMORY_LIMIT` (bytes, e.g. `8e9`) says so; `None` when neither
/// is known.
fn available_memory_bytes() -> Option<f64> {
    let limit: Option<f64> = std::env::var("DP_AUDIT_MEMORY_LIMIT")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|v: &f64| v.is_finite() && *v > 0.0);
    let meminfo = (|| {
        let text = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024.0)
    })();
    match (limit, meminfo) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Refuses, before any sampling, a run whose releases (n per side of dimension `dim`) would not
/// fit in memory, with the estimate and the limit.
pub(crate) fn check_memory(flag: &str, n: usize, dim: usize) -> Result<()> {
    let releases = 2.0 * n as f64 * dim.max(1) as f64 * 8.0;
    let need = releases * PEAK_PER_RELEASE_BYTE;
    if let Some(avail) = available_memory_bytes()
        && need > avail
    {
        return Err(Error::InvalidConfig(format!(
            "{flag} {n} with output dimension {dim}: the run needs about {} GB of memory ({} MB of releases × {PEAK_PER_RELEASE_BYTE} for the testers' copies) and {} GB are available; allowed: fewer releases",
            readable(need / 1e9),
            readable(releases / 1e6),
            readable(avail / 1e9)
        )));
    }
    Ok(())
}

/// Wraps `m` in the output transform spelled `spelling` (`none`: unchanged).
fn with_transform(
    m: Box<dyn Mechanism>,
    spelling: &str,
) -> Result<(Box<dyn Mechanism>, Option<Transform>)> {
    let t: Transform = spelling.parse()?;
    if t.is_identity() {
        Ok((m, None))
    } else {
        Ok((Box::new(TransformedMechanism::new(m, t)?), Some(t)))
    }
}

/// Reads `--pairs FILE`: one JSON object per line, `{"first": [...], "second": [...]}`, records
/// as numbers or arrays. Errors name the line and what is wrong.
fn read_pairs(
    path: &Path,
    domain: &RecordDomain,
    relation: Neighboring,
) -> Result<Vec<DatasetPair>> {
    let text = crate::sources::text::read_text(path)
        .map_err(|e| Error::InvalidConfig(format!("--pairs {}: {e}", path.display())))?;
    let mut pairs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        let at = |what: String| {
            Error::InvalidConfig(format!("--pairs {} line {}: {what}", path.display(), i + 1))
        };
        let v: serde_json::Value =
            serde_json::from_str(l).map_err(|e| at(format!("not JSON ({e})")))?;
        let side = |key: &str| -> Result<Dataset> {
            let recs = v.get(key).ok_or_else(|| {
                at(format!(
                    "missing \"{key}\"; expected {{\"first\": [...], \"second\": [...]}}"
                ))
            })?;
            let d = Dataset::from_json_records(recs, Some(domain.dim))
                .map_err(|e| at(format!("\"{key}\": {e}")))?;
            domain
                .check(&d)
                .map_err(|e| at(format!("\"{key}\": {e}")))?;
            Ok(d)
        };
        let pair = DatasetPair::new(side("first")?, side("second")?, relation)
            .map_err(|e| at(e.to_string()))?;
        pairs.push(pair);
    }
    if pairs.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "--pairs {}: no pairs in the file",
            path.display()
        )));
    }
    Ok(pairs)
}

/// The finder and search settings of a dataset search (`--finder`, `--exec`), checked.
fn search_setup(
    opts: &RunOptions,
    target: &Target,
) -> Result<(
    Box<dyn crate::finders::DatasetFinder>,
    String,
    crate::finders::SearchConfig,
)> {
    use crate::finders::{
        DatasetFinder, PairSpace, SearchConfig, TypicalFinder, finder_by_name, finder_rng,
    };
    let m = &*target.mechanism;
    let s = &opts.search;
    let mut domain = m.domain();
    if let Some((lo, hi)) = s.record_range
        && !opts.exec
    {
        domain.lower = lo;
        domain.upper = hi;
    }
    let relation = m.neighboring();
    let size = s.dataset_size.unwrap_or_else(|| {
        target
            .witness
            .as_ref()
            .map_or(3, |w| w.first().len().min(w.second().len()).clamp(1, 16))
    });
    let finder_name = s.finder_name();
    let defaults = SearchConfig::default();
    let budget = match (s.budget_seconds, s.trials) {
        (Some(b), _) => Some(b),
        (None, None) if opts.exec => Some(DEFAULT_EXEC_BUDGET_SECONDS),
        _ => None,
    };
    // With a time budget the trial count is the budget's to decide (at most the largest
    // --trials); without one it is --trials or 20.
    let trials = s.trials.unwrap_or(if budget.is_some() {
        100_000
    } else {
        defaults.trials
    });
    let rng = finder_rng(opts.seed);
    let finder: Box<dyn DatasetFinder> = if finder_name == "from-data" {
        let path = s.typical_data.as_ref().ok_or_else(|| {
            Error::InvalidConfig("--finder from-data needs --typical-data FILE".into())
        })?;
        let text = crate::sources::text::read_text(path)
            .map_err(|e| Error::InvalidConfig(format!("--typical-data {}: {e}", path.display())))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            Error::InvalidConfig(format!("--typical-data {}: not JSON ({e})", path.display()))
        })?;
        let data = Dataset::from_json_records(&v, Some(domain.dim))?;
        domain
            .check(&Dataset::from_array(data.records().clone())?)
            .or_else(|e| {
                // The sample may be larger than the mechanism's dataset sizes; check records only.
                let one = Dataset::vectors(domain.dim, &data.to_rows()[..1])?;
                domain.check(&one).map_err(|_| e)
            })?;
        Box::new(TypicalFinder::new(data, size, relation, rng)?)
    } else if finder_name == "portfolio" {
        // The portfolio builds its pairs directly, so it takes datasets of any size the domain
        // accepts (the box finders it contains search at smaller sizes).
        Box::new(crate::finders::PortfolioFinder::new(
            domain, size, relation, rng,
        )?)
    } else {
        let space = PairSpace::new(domain, size, relation)?;
        let fixed = match &s.pairs {
            Some(p) => read_pairs(p, &domain, relation)?,
            None => target.witness.iter().cloned().collect(),
        };
        finder_by_name(&finder_name, space, fixed, trials, rng)?
    };
    let search = SearchConfig {
        trials,
        search_samples: s.search_samples.unwrap_or(defaults.search_samples),
        confirm_top: s.confirm.unwrap_or(defaults.confirm_top),
        wall_clock_seconds: s.max_search_seconds,
        max_samples: None,
        budget_seconds: budget,
    };
    Ok((finder, finder_name, search))
}

/// A dataset search (`--finder`, and always for an exec program): exploratory scores, then
/// confirming audits of the best pairs with fresh samples.
pub fn run_search(
    opts: &RunOptions,
    target: &Target,
    testers: &[Box<dyn PropertyTester>],
    skipped: &[String],
    config: &AuditConfig,
) -> Result<Outcome> {
    let m = &*target.mechanism;
    let (mut finder, finder_name, search) = search_setup(opts, target)?;
    opts.output.prepare()?;
    let ticker = crate::report::progress::Ticker::start(
        opts.output.quiet,
        &format!("{} with {finder_name}", m.id()),
        None,
    );
    // A program searched through one view (`--transform`) with a time budget is priced by the
    // cost model too: its confirmations owed are not start-ups counted per release.
    let cost = match search.budget_seconds {
        Some(budget) if opts.exec => {
            m.set_deadline(Some(call_deadline(opts.started, budget)));
            Some(probe_cost(
                opts,
                m,
                budget,
                rayon::current_num_threads(),
                crate::rng::chunk_len(m),
                Some(&ticker),
                target.program.as_ref().map(|p| p.first_call_seconds()),
            )?)
        }
        _ => None,
    };
    let observe = |p: &crate::finders::SearchProgress| ticker.update(p);
    let rep = crate::finders::search_and_confirm_priced(
        m,
        &target.claim,
        &mut *finder,
        testers,
        &search,
        config,
        cost.as_ref(),
        &observe,
    );
    drop(ticker);
    let mut rep = rep?;
    for c in &mut rep.confirmations {
        c.skipped_testers = skipped.to_vec();
        c.output_transform = target.transform;
        target.stamp(&mut c.mechanism);
    }
    let code = exit_code(rep.verdict);
    let summary = rep.summary(Some(opts.failure_probability));
    // Refused proposals count as trials: `--trials` bounds the proposals.
    // Calls sized by the probe change which releases a seed gives: the batch is recorded.
    let batch_now = crate::rng::chunk_len(m);
    let reproduce = if cost.as_ref().is_some_and(|c| c.batch != batch_now)
        || (cost.is_some()
            && !opts.sizes_given.exec_batch
            && batch_now != crate::sources::exec::DEFAULT_BATCH)
    {
        reproduce_line_planned(
            Some(rep.trials.len() + rep.skipped.len()),
            &[("--exec-batch", batch_now.to_string())],
        )
    } else {
        reproduce_line(Some(rep.trials.len() + rep.skipped.len()))
    };
    // The page shows the confirmation that decided: the violating one, else the last.
    let deciding = rep
        .confirmations
        .iter()
        .find(|c| c.verdict == Verdict::Violation)
        .or(rep.confirmations.last())
        .cloned()
        .map(|mut c| {
            c.reproduce = Some(reproduce.clone());
            c.search = Some(summary.clone());
            c
        });
    let timed = cost
        .as_ref()
        .and_then(|c| Some((search.budget_seconds?, c)));
    let written = write_deciding_page(opts, m, deciding.as_ref(), false, timed);
    let stdout = if opts.output.json {
        let mut r = rep.clone();
        for c in &mut r.confirmations {
            c.wall_time_seconds = None;
        }
        to_json(&crate::record::ResultRecord::from_search(
            &r,
            opts.seed,
            opts.failure_probability,
        ))?
    } else {
        render_search_text(&rep)
    };
    Ok(opts.output.finish(stdout, code, written))
}

/// Writes the page of a search's deciding confirmation `r` (none: no page, nor with
/// --no-report), its figures drawn from `m` on the confirmed pair from plot streams of their
/// own. `through_view`: `m` returns raw releases and the figures show them through the view the
/// confirmation's testers saw (a wide output's floating-point view, cut to a few coordinates,
/// falls back to the values).
fn write_deciding_page(
    opts: &RunOptions,
    m: &dyn Mechanism,
    r: Option<&crate::audit::AuditReport>,
    through_view: bool,
    timed: Option<(f64, &crate::finders::cost::CostModel)>,
) -> Result<Option<PathBuf>> {
    let Some(r) = r.filter(|_| !opts.output.no_report) else {
        return Ok(None);
    };
    let pair = r
        .pair
        .as_ref()
        .ok_or_else(|| Error::InvalidConfig("internal: a confirmation without its pair".into()))?;
    // With a time budget the figures get the releases that fit the time left (their two
    // sides are drawn one call after the other); too few, or a draw stopped at the deadline,
    // and the page has no distribution figure.
    let n = match timed {
        Some((budget, cost)) => {
            let left = budget - opts.started.elapsed().as_secs_f64();
            let fits = |n: usize| 2.0 * cost.call_seconds(n.min(cost.batch)) <= left;
            let mut n = crate::report::PLOT_SAMPLES_PER_SIDE;
            while n >= 500 && !fits(n) {
                n /= 2;
            }
            if n >= 500 { n } else { 0 }
        }
        None => crate::report::PLOT_SAMPLES_PER_SIDE,
    };
    let drawn = if n == 0 {
        Ok(crate::report::PlotData::none())
    } else {
        crate::report::PlotData::draw(m, pair, opts.seed, n)
    };
    let mut plots = match drawn {
        Ok(p) => p,
        Err(Error::Mechanism(crate::mechanisms::MechanismError::OutOfTime { .. })) => {
            crate::report::PlotData::none()
        }
        Err(e) => return Err(e),
    };
    if through_view && let (Some(t), Some((a, b))) = (r.output_transform, plots.sides.take()) {
        let whole = t != Transform::FloatRepr || a.dim() <= crate::finders::layered::FLOAT_COORDS;
        plots.sides = Some(if whole {
            (t.apply(&a)?, t.apply(&b)?)
        } else {
            (a, b)
        });
    }
    Ok(Some(crate::report::write_run_report(
        &opts.output.report_dir,
        r,
        &plots,
    )?))
}

/// A cost model with no measurement (a fast mechanism's defaults).
fn cost_fallback(jobs: usize, batch: usize) -> crate::finders::cost::CostModel {
    crate::finders::cost::CostModel::new(0.0, 1e-6, jobs, batch)
}

/// Seconds per release per side the testers take to score a trial through `layers`,
/// measured once on synthetic releases (standard normal, of the mechanism's output dimension,
/// from a stream no audit reads): the plan prices a trial's scoring as it prices its calls. An
/// in-process mechanism that costs microseconds per call is paced by its scoring. 0 when it
/// cannot be measured (the run then learns it from its first trials).
fn scoring_price(
    m: &dyn Mechanism,
    claim: &PrivacyClaim,
    testers: &[Box<dyn PropertyTester>],
    layers: &[crate::record::layers::LayerKind],
    config: &AuditConfig,
) -> f64 {
    use crate::rng::{Seed, Stream};
    use rand_distr::Distribution;
    const N: usize = 2_000;
    let dim = m.output_dim().max(1);
    let mut rng = Seed(config.seed).rng(Stream::Other {
        tag: 0x5C0E,
        index: 0,
    });
    let normal = rand_distr::StandardNormal;
    let mut draw = |shift: f64| {
        let v: Vec<f64> = (0..N * dim)
            .map(|_| {
                let x: f64 = normal.sample(&mut rng);
                x + shift
            })
            .collect();
        crate::mechanisms::Samples::from_flat(dim, v)
    };
    let (Ok(p), Ok(q)) = (draw(0.0), draw(0.1)) else {
        return 0.0;
    };
    let pair = Dataset::scalars(vec![0.0])
        .and_then(|a| Ok((a, Dataset::scalars(vec![0.0, 1.0])?)))
        .and_then(|(a, b)| DatasetPair::new(a, b, Neighboring::AddRemove));
    let Ok(pair) = pair else {
        return 0.0;
    };
    let cfg = AuditConfig {
        samples_per_side: N,
        failure_probability: crate::finders::SEARCH_BETA,
        ..config.clone()
    };
    let t0 = std::time::Instant::now();
    for &kind in layers {
        let coords = if kind == crate::record::layers::LayerKind::FloatingPoint {
            crate::finders::layered::float_coords(&p, &q)
        } else {
            None
        };
        let views =
            crate::finders::layered::view(kind, &p, coords.as_deref()).and_then(|(vp, _, _)| {
                Ok((
                    vp,
                    crate::finders::layered::view(kind, &q, coords.as_deref())?.0,
                ))
            });
        let Ok((vp, vq)) = views else {
            return 0.0;
        };
        if crate::audit::audit_drawn(m, claim, &pair, (&vp, &vq), testers, &cfg, 1 << 40).is_err() {
            return 0.0;
        }
    }
    t0.elapsed().as_secs_f64() / N as f64
}

/// Measures a program's cost model on two datasets (see [`crate::finders::cost`]) within 5 % of
/// `budget`, and sizes its calls: at most a quarter of `--exec-timeout` at the measured speed
/// (`--exec-batch` chosen, unless the user gave one). Prints what it found unless quiet.
fn probe_cost(
    opts: &RunOptions,
    m: &dyn Mechanism,
    budget: f64,
    jobs: usize,
    batch: usize,
    ticker: Option<&crate::report::progress::Ticker>,
    prior_start: Option<f64>,
) -> Result<crate::finders::cost::CostModel> {
    use crate::finders::cost::CostModel;
    let mut cost;
    let (probe, small) = probe_datasets(opts, m)?;
    if !opts.output.quiet {
        eprintln!(
            "audit: measuring the program's speed on two datasets ({} and {} records; calls of 1 to 200 000 releases started together, about {} s beyond its start-ups)",
            probe.len(),
            small.len(),
            readable((0.05 * budget).ceil())
        );
    }
    if let Some(t) = ticker {
        t.before_search("measuring the program's speed (the probe)");
    }
    // The program's first request (made when it was set up) measured one start-up: the probe
    // counts it, and never gives a call less than three times it.
    let prior: Vec<crate::finders::cost::CallTime> = prior_start
        .map(|seconds| crate::finders::cost::CallTime {
            releases: 2,
            seconds,
        })
        .into_iter()
        .collect();
    let first = prior_start.unwrap_or(0.0);
    // The probe may take up to 5 % of the budget, and each of its calls as much (at least
    // 1 s and three start-ups, at most a quarter of the time-out); the run's deadline bounds
    // them all.
    m.set_call_limit(Some(std::time::Duration::from_secs_f64(
        (0.05 * budget)
            .max(1.0)
            .max(3.0 * first)
            .min(0.25 * opts.exec_timeout_seconds)
            .max(0.001),
    )));
    let probed = CostModel::probe_with(m, &probe, opts.seed, jobs, batch, 0.05 * budget, &prior);
    // The small dataset's probe costs at least two more start-ups: only when they are cheap.
    let cheap_starts = probed
        .as_ref()
        .is_ok_and(|c| c.seconds_per_call <= 0.01 * budget);
    let probed_small = if small.len() != probe.len() && cheap_starts {
        CostModel::probe(m, &small, opts.seed, jobs, batch, 0.02 * budget).ok()
    } else {
        None
    };
    m.set_call_limit(None);
    if let Some(t) = ticker {
        t.before_search("searching: first trial");
    }
    cost = probed?;
    if let Some(c) = probed_small {
        let ratio = cost.slower_than(&c);
        if ratio > 4.0 {
            if !opts.output.quiet {
                eprintln!(
                    "audit: the program is about {}× slower on {} records than on {}: the run is planned at the faster speed, and a trial on a pair the program is slow on is shrunk to what fits",
                    readable(ratio.round()),
                    probe.len(),
                    small.len()
                );
            }
            cost = c;
        }
    }
    if !opts.sizes_given.exec_batch {
        size_calls(opts, m, &mut cost, batch);
    }
    Ok(cost)
}

/// The probe's two datasets: `--dataset-size` records (default 3, within the domain's sizes)
/// at the middle of the record range, and the smallest dataset the domain allows. A program
/// whose cost depends on the data (a model fit that is slow on large datasets) is planned at
/// its cheaper speed, and the search shrinks its trials on the pairs it is slow on.
fn probe_datasets(
    opts: &RunOptions,
    m: &dyn Mechanism,
) -> Result<(crate::mechanisms::Dataset, crate::mechanisms::Dataset)> {
    let domain = m.domain();
    let size = opts
        .search
        .dataset_size
        .unwrap_or(3)
        .max(domain.min_size)
        .max(1);
    let mid = 0.5 * (domain.lower + domain.upper);
    let mid = if domain.integer { mid.round() } else { mid };
    let constant = |k: usize| {
        crate::mechanisms::Dataset::from_array(ndarray::Array2::from_elem(
            (k.min(domain.max_size), domain.dim),
            mid,
        ))
    };
    Ok((constant(size)?, constant(domain.min_size.max(1))?))
}

/// Calls sized from the cost model: none longer than a quarter of --exec-timeout at the
/// probe's prices (the program's batch set below `batch`, and `cost` with it; said unless
/// quiet).
fn size_calls(
    opts: &RunOptions,
    m: &dyn Mechanism,
    cost: &mut crate::finders::cost::CostModel,
    batch: usize,
) {
    let fits = ((0.25 * opts.exec_timeout_seconds - cost.seconds_per_call)
        / cost.seconds_per_release)
        .floor();
    let b = if fits.is_finite() {
        (fits.max(1.0) as usize).min(batch)
    } else {
        batch
    };
    if b < batch && m.set_batch_size(b) {
        cost.batch = b;
        if !opts.output.quiet {
            eprintln!(
                "audit: at the measured speed a call of {batch} releases would take about {} s, more than a quarter of the {} s time-out (--exec-timeout): calls of {b} releases instead (recorded as --exec-batch {b})",
                readable(cost.call_seconds(batch).ceil()),
                readable(opts.exec_timeout_seconds)
            );
        }
    }
}

/// Two layers (see [`crate::record::layers`]): a dataset search that scores and confirms each layer
/// separately from the same releases. Without `--finder` on a catalogue entry the search is
/// its witness pair alone.
pub fn run_layered(
    opts: &RunOptions,
    target: &Target,
    check: crate::record::layers::Check,
    testers: &[Box<dyn PropertyTester>],
    skipped: &[String],
    config: &AuditConfig,
) -> Result<Outcome> {
    use crate::finders::cost::CostModel;
    use crate::finders::layered::{Pacing, search_and_confirm_paced};
    let started = opts.started;
    let m = &*target.mechanism;
    let searching = opts.searching();
    let (mut finder, finder_name, mut search) = layered_finder(opts, target, searching)?;
    let mut config = config.clone();
    let layers = check.layers();
    let jobs = rayon::current_num_threads();
    let batch = crate::rng::chunk_len(m);
    let what = format!(
        "{} with {finder_name}, layers: {}",
        m.id(),
        layers
            .iter()
            .map(|l| l.title())
            .collect::<Vec<_>>()
            .join(" + ")
    );
    let ticker = crate::report::progress::Ticker::start(opts.output.quiet, &what, None);
    // Plan the run to the budget at the prices of the cost model measured on the probe dataset.
    let mut plan: Option<crate::finders::layered::RunPlan> = None;
    let mut cost = CostModel::new(0.0, 1e-6, jobs, batch);
    let deadline = search
        .budget_seconds
        .map(|budget| call_deadline(started, budget));
    m.set_deadline(deadline);
    if let Some(budget) = search.budget_seconds {
        let sizes = LayeredSizes {
            config: &mut config,
            search: &mut search,
        };
        let pool = (jobs, batch);
        let (c, p) = plan_layered(opts, target, testers, &layers, sizes, budget, pool, &ticker)?;
        cost = c;
        plan = Some(p);
    }
    opts.output.prepare()?;
    let observe = |p: &crate::finders::SearchProgress| ticker.update(p);
    let pacing = Pacing {
        cost,
        planned_trials: plan.as_ref().map(|p| p.trials),
        spent_before: started.elapsed().as_secs_f64(),
        call_timeout: Some(opts.exec_timeout_seconds),
        deadline,
    };
    let rep = search_and_confirm_paced(
        m,
        &target.claim,
        &mut *finder,
        testers,
        &search,
        &config,
        &layers,
        pacing,
        &observe,
    );
    drop(ticker);
    let mut rep = rep?;
    rep.plan = plan;
    let ran = LayeredRun {
        searching,
        jobs,
        batch,
        budget_seconds: search.budget_seconds,
    };
    finish_layered(opts, target, rep, skipped, ran)
}

/// The finder of a layered run, its name and the search's settings: `--finder`'s search when
/// `searching`, else the catalogue witness pair alone (one trial, one confirmation per layer).
fn layered_finder(
    opts: &RunOptions,
    target: &Target,
    searching: bool,
) -> Result<(
    Box<dyn crate::finders::DatasetFinder>,
    String,
    crate::finders::SearchConfig,
)> {
    if searching {
        return search_setup(opts, target);
    }
    let witness = target.witness_pair()?;
    let finder: Box<dyn crate::finders::DatasetFinder> =
        Box::new(crate::finders::FixedFinder::new(vec![witness])?);
    let search = crate::finders::SearchConfig {
        trials: 1,
        search_samples: 5_000,
        confirm_top: 1,
        ..Default::default()
    };
    Ok((finder, "fixed (the witness pair)".to_string(), search))
}

/// The sizes a plan sets: the releases per side of a confirmation (`config`), of a trial and
/// the confirm slots (`search`).
struct LayeredSizes<'a> {
    config: &'a mut AuditConfig,
    search: &'a mut crate::finders::SearchConfig,
}

/// Plans a layered run to `budget` seconds: measures the program's prices on the probe
/// dataset, prices the testers' scoring, and fits the sizes the user left open (written into
/// `sizes`), `pool` = (programs at once, releases per call); prints the plan unless quiet.
/// Returns the cost model and the plan.
#[allow(clippy::too_many_arguments)]
fn plan_layered(
    opts: &RunOptions,
    target: &Target,
    testers: &[Box<dyn PropertyTester>],
    layers: &[crate::record::layers::LayerKind],
    sizes: LayeredSizes<'_>,
    budget: f64,
    (jobs, batch): (usize, usize),
    ticker: &crate::report::progress::Ticker,
) -> Result<(
    crate::finders::cost::CostModel,
    crate::finders::layered::RunPlan,
)> {
    let m = &*target.mechanism;
    let LayeredSizes { config, search } = sizes;
    let mut cost = probe_cost(
        opts,
        m,
        budget,
        jobs,
        batch,
        Some(ticker),
        target.program.as_ref().map(|p| p.first_call_seconds()),
    )?;
    cost.score_seconds_per_release = scoring_price(m, &target.claim, testers, layers, config);
    cost.datasets_per_call = m.datasets_per_call();
    let defaults = (
        config.samples_per_side,
        search.search_samples,
        search.confirm_top,
    );
    let p = crate::finders::layered::RunPlan::fit(
        &cost,
        budget,
        opts.started.elapsed().as_secs_f64(),
        layers.len(),
        opts.sizes_given.samples.then_some(config.samples_per_side),
        opts.sizes_given
            .search_samples
            .then_some(search.search_samples),
        opts.sizes_given.confirm.then_some(search.confirm_top),
        defaults,
    );
    config.samples_per_side = p.samples_per_side;
    search.search_samples = p.search_samples;
    search.confirm_top = p.confirm_per_layer;
    if !opts.output.quiet {
        eprintln!("audit: {}", p.describe());
    }
    Ok((cost, p))
}

/// What the output of a layered run needs to know about how it ran: whether it searched, the
/// worker threads, the batch size it began with, and its time budget.
struct LayeredRun {
    searching: bool,
    jobs: usize,
    batch: usize,
    budget_seconds: Option<f64>,
}

/// A layered run's output: its confirmations stamped with the target and the testers skipped,
/// the reproduce line (with the sizes a plan chose), the deciding confirmation's page, and the
/// JSON record (measured speeds left out) or the text.
fn finish_layered(
    opts: &RunOptions,
    target: &Target,
    mut rep: crate::finders::layered::LayeredReport,
    skipped: &[String],
    ran: LayeredRun,
) -> Result<Outcome> {
    let m = &*target.mechanism;
    let final_cost = rep
        .cost
        .clone()
        .unwrap_or_else(|| cost_fallback(ran.jobs, ran.batch));
    let verdicts = rep.verdicts();
    for l in &mut rep.layers {
        if let Some(s) = &mut l.search {
            for c in &mut s.confirmations {
                c.skipped_testers = skipped.to_vec();
                target.stamp(&mut c.mechanism);
            }
        }
    }
    let code = exit_code(rep.verdict);
    let mut planned: Vec<(&str, String)> = match &rep.plan {
        Some(p) => vec![
            ("--samples", p.samples_per_side.to_string()),
            ("--search-samples", p.search_samples.to_string()),
            ("--confirm", p.confirm_per_layer.to_string()),
        ],
        None => Vec::new(),
    };
    let final_batch = crate::rng::chunk_len(m);
    if final_batch != ran.batch && !opts.sizes_given.exec_batch {
        planned.push(("--exec-batch", final_batch.to_string()));
    }
    let reproduce = reproduce_line_planned(
        ran.searching
            .then_some(rep.trials_scored + rep.skipped.len()),
        &planned,
    );
    let deciding = rep.deciding().cloned().map(|mut c| {
        c.reproduce = Some(reproduce.clone());
        c.layers = Some(verdicts.clone());
        c.effort = rep.effort.clone();
        c
    });
    let timed = ran.budget_seconds.map(|b| (b, &final_cost));
    let written = write_deciding_page(opts, m, deciding.as_ref(), true, timed);
    let stdout = if opts.output.json {
        let mut r = rep.clone();
        r.plan = None;
        r.cost = None;
        for l in &mut r.layers {
            if let Some(s) = &mut l.search {
                for c in &mut s.confirmations {
                    c.wall_time_seconds = None;
                }
            }
        }
        to_json(&crate::record::ResultRecord::from_layered(
            &r, &reproduce, opts.seed,
        ))?
    } else {
        crate::report::text::render_layered_text(&rep, &reproduce)
    };
    Ok(opts.output.finish(stdout, code, written))
}

/// `--sequential --check …`: the sequential audit once per layer, each through the layer's
/// view of a release at its share of β (union bound over the layers); the releases are drawn
/// again for each layer (catalogue entries are fast, and the same seed gives the same releases).
fn run_sequential_layered(
    opts: &RunOptions,
    target: &Target,
    check: crate::record::layers::Check,
    witness: &DatasetPair,
) -> Result<Outcome> {
    use crate::audit::LayeredSequential;
    use crate::audit::sequential::audit_sequential;
    use crate::record::layers::LayerKind;
    let id = opts.mechanism.as_deref().unwrap_or_default();
    let params = Params::parse(&opts.params)?;
    let layers = check.layers();
    let share = opts.failure_probability / layers.len() as f64;
    let config = sequential_config(opts, share);
    let mut runs = Vec::new();
    let mut mechanism_violates = false;
    for kind in layers {
        let inner: Box<dyn Mechanism> = match (&target.program, &target.shared) {
            (Some(p), _) => Box::new(p.clone()),
            (None, Some(m)) => Box::new(SharedMechanism(m.clone())),
            (None, None) => catalogue::build(id, &params)?.mechanism,
        };
        let m = TransformedMechanism::new(inner, kind.transform())?;
        config.validate(m.output_dim())?;
        check_memory("--max-samples", config.max_samples_per_side, m.output_dim())?;
        let spinner = crate::report::progress::Spinner::start(
            opts.output.quiet,
            &format!(
                "auditing {} sequentially, layer {}",
                target.mechanism.id(),
                kind.title()
            ),
        );
        let mut report = audit_sequential(&m, &target.claim, witness, &config)?;
        drop(spinner);
        report.reproduce = Some(reproduce_line(None));
        report.output_transform = Some(kind.transform());
        target.stamp(&mut report.mechanism);
        let v = LayeredSequential::layer_verdict(kind, share, report.verdict, mechanism_violates);
        mechanism_violates |= kind == LayerKind::Mechanism && report.verdict == Verdict::Violation;
        runs.push((v, report));
    }
    let violation = runs.iter().any(|(_, r)| r.verdict == Verdict::Violation);
    let code = u8::from(violation);
    let stdout = if opts.output.json {
        to_json(&LayeredSequential::new(&runs).record())?
    } else {
        LayeredSequential::render_text(&runs, opts.failure_probability)
    };
    // One page per layer (each is a complete sequential report).
    let mut stdout = stdout;
    let mut late_error = None;
    if !opts.output.no_report {
        crate::report::prepare_report_dir(&opts.output.report_dir)?;
        for (_, r) in &runs {
            match crate::report::sequential::write_sequential_report(&opts.output.report_dir, r) {
                Ok(index) => {
                    announce_report(&index, opts.output.json, opts.output.quiet, &mut stdout)
                }
                Err(e) => {
                    late_error.get_or_insert(e);
                }
            }
        }
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}
