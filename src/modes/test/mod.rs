//! `audit test` as a library: a claim tested on release samples drawn elsewhere (shards, or sides
//! in memory), from plain [`TestOptions`]. The command line ([`crate::commands::test`]) and the
//! Python package both call [`test`] or [`test_given`]; the defaults are written once, in
//! [`TestOptions::default`].

use std::path::PathBuf;

use super::claim::ClaimArg;
use crate::audit::{AuditConfig, Verdict};
use crate::error::{Error, Result};
use crate::report::output::{Outcome, OutputOptions, announce_report, split_late, to_json};
use crate::testers::{self, Transform};

mod plan;

/// What `audit test` does, as plain options (the form of its flags; see `audit test --help` for
/// each one's meaning).
#[derive(Clone, Debug)]
pub struct TestOptions {
    /// Shards of releases on D, concatenated in order.
    pub samples_a: Vec<PathBuf>,
    /// Shards of releases on D'.
    pub samples_b: Vec<PathBuf>,
    /// Stream the held-out releases shard by shard.
    pub stream: bool,
    /// Read every release into memory.
    pub in_memory: bool,
    /// Streaming: most training rows per side.
    pub max_train_rows: usize,
    /// The claim, as `--claim` writes it (None only with a plan, which holds it).
    pub claim: Option<String>,
    /// Seed of the testers' own randomness.
    pub seed: u64,
    /// β.
    pub failure_probability: f64,
    /// Testers, comma-separated, or "all".
    pub tester: String,
    /// One view of the releases instead of the two layers.
    pub transform: Option<String>,
    /// Which layers run: mechanism, float or both (None: both).
    pub check: Option<String>,
    /// The anytime-valid sequential test.
    pub sequential: bool,
    /// Most releases per side a sequential test reads.
    pub max_samples: Option<usize>,
    /// Releases per side of a sequential test's first batch.
    pub first_batch: Option<usize>,
    /// The Bayesian DP definition tested (1 or 2).
    pub bdp_definition: Option<String>,
    /// Step 1 of a test counted shard by shard: write the plan here.
    pub plan_out: Option<PathBuf>,
    /// Steps 2 and 3: the plan.
    pub plan: Option<PathBuf>,
    /// Step 2: the shard counted.
    pub count_shard: Option<PathBuf>,
    /// Step 3: the counts summed.
    pub reduce: Vec<PathBuf>,
    /// Reports, and text or JSON.
    pub output: OutputOptions,
}

impl Default for TestOptions {
    /// `audit test`'s defaults: seed 0, the default β, the hockey-stick tester, both layers,
    /// [`DEFAULT_MAX_TRAIN_ROWS`], reports in `reports/`, text.
    fn default() -> Self {
        TestOptions {
            samples_a: Vec::new(),
            samples_b: Vec::new(),
            stream: false,
            in_memory: false,
            max_train_rows: DEFAULT_MAX_TRAIN_ROWS,
            claim: None,
            seed: 0,
            failure_probability: AuditConfig::default().failure_probability,
            tester: "hockey-stick".into(),
            transform: None,
            check: None,
            sequential: false,
            max_samples: None,
            first_batch: None,
            bdp_definition: None,
            plan_out: None,
            plan: None,
            count_shard: None,
            reduce: Vec::new(),
            output: OutputOptions {
                report_dir: "reports".into(),
                no_report: false,
                quiet: false,
                json: false,
            },
        }
    }
}

impl TestOptions {
    /// The `audit test` command for these options, as a user would type it: the flags at their
    /// defaults left out (the report flags too: they do not change the record).
    pub fn reproduce_line(&self) -> String {
        let d = TestOptions::default();
        let mut words: Vec<String> = vec!["audit".into(), "test".into()];
        let mut flag = |f: &str, v: String| {
            words.push(f.into());
            words.push(v);
        };
        for a in &self.samples_a {
            flag("--samples-a", a.display().to_string());
        }
        for b in &self.samples_b {
            flag("--samples-b", b.display().to_string());
        }
        if let Some(c) = &self.claim {
            flag("--claim", c.clone());
        }
        if self.seed != d.seed {
            flag("--seed", self.seed.to_string());
        }
        if self.failure_probability != d.failure_probability {
            flag(
                "--failure-probability",
                format!("{}", self.failure_probability),
            );
        }
        if self.tester != d.tester {
            flag("--tester", self.tester.clone());
        }
        if let Some(t) = &self.transform {
            flag("--transform", t.clone());
        }
        if let Some(c) = self.check.as_ref().filter(|c| c.as_str() != "both") {
            flag("--check", c.clone());
        }
        if self.max_train_rows != d.max_train_rows {
            flag("--max-train-rows", self.max_train_rows.to_string());
        }
        if let Some(b) = &self.bdp_definition {
            flag("--bdp-definition", b.clone());
        }
        let mut switch = |on: bool, f: &str| {
            if on {
                words.push(f.into());
            }
        };
        switch(self.stream, "--stream");
        switch(self.in_memory, "--in-memory");
        switch(self.sequential, "--sequential");
        let mut flag = |f: &str, v: Option<usize>| {
            if let Some(n) = v {
                words.push(f.into());
                words.push(n.to_string());
            }
        };
        flag("--max-samples", self.max_samples);
        flag("--first-batch", self.first_batch);
        shlex::try_join(words.iter().map(String::as_str)).unwrap_or_else(|_| words.join(" "))
    }
}

/// Default of `--max-train-rows`: 2·10^6 rows per side (16 MB per side per coordinate; the
/// event search on them stays well under 1 GB for low-dimensional releases).
pub const DEFAULT_MAX_TRAIN_ROWS: usize = 2_000_000;

/// `audit test` with these options: a plain test, or one step of a test counted shard by shard.
pub fn test(a: &TestOptions) -> Result<Outcome> {
    test_steps(a)
}

/// A plain test, or one of the three steps of a test counted shard by shard ([`plan`]).
fn test_steps(a: &TestOptions) -> Result<Outcome> {
    if let Some(plan_file) = &a.plan {
        if let Some(shard) = &a.count_shard {
            return plan::count_shard(plan_file, shard);
        }
        if !a.reduce.is_empty() {
            return plan::reduce(a, plan_file);
        }
        return Err(Error::InvalidConfig(format!(
            "--plan {} alone; allowed: --plan FILE --count-shard SHARD (count one shard) or --plan FILE --reduce COUNTS… (the result from every shard's counts)",
            plan_file.display()
        )));
    }
    if let Some(out) = &a.plan_out {
        return plan::write_plan(a, out);
    }
    run_test(a, Held::Read)
}

/// How a streamed test reads its held-out releases.
#[derive(Clone, Copy)]
pub(crate) enum Held<'a> {
    /// From the shards: a plain `audit test`.
    Read,
    /// Not read: every count a tester asks for is recorded for a plan (and answered 0).
    Record(&'a plan::Recording),
    /// Not read: every count is the sum of the shards' counts, in the plan's order.
    Replay(&'a plan::Reduced),
    /// From sides opened by the caller (releases in memory: [`test_given`]).
    Given(&'a GivenSides),
}

/// Both sides of a test opened by the caller (e.g. arrays in memory, see
/// [`crate::sources::shards::memory_sides`]) and the record's reproduce line.
pub struct GivenSides {
    /// The shards of side a and side b.
    pub sides: (
        crate::sources::shards::ShardSet,
        crate::sources::shards::ShardSet,
    ),
    /// The `audit test` command that gives the same record on the same releases in files.
    pub reproduce: String,
}

/// Both renderings of one layered test ([`test_given`]).
#[derive(Clone, Debug)]
pub struct TestOutputs {
    /// What `audit test` prints without `--json`.
    pub text: String,
    /// What `audit test --json` prints: the result record.
    pub json: String,
    /// The exit code `audit test` would give: 0 no violation found, 1 violation found.
    pub code: u8,
}

/// `audit test` on sides opened by the caller: the claim, testers, seed, β and `--check` of
/// `a` (its files, `--transform`, the plan steps and the report are not used; `--sequential`
/// with `--max-samples` and `--first-batch` runs the betting test), both renderings. The record is the one `audit test … --json` prints on the same releases in
/// `.bin` files named as the sides' shards, with `given.reproduce` as its reproduce line.
pub fn test_given(a: &TestOptions, given: &GivenSides) -> Result<TestOutputs> {
    let claim_text = a
        .claim
        .as_deref()
        .ok_or_else(|| Error::InvalidConfig("a test needs a claim".into()))?;
    let claim =
        super::claim::parse_claim_arg(claim_text, crate::mechanisms::Neighboring::AddRemove)?;
    testers::parse_list(&a.tester)?;
    super::checks::check_beta(a.failure_probability)?;
    if claim.claim.is_bayesian() {
        return Err(Error::InvalidConfig(format!(
            "claim {}: a Bayesian DP claim is tested on (x', w) pairs, not on two sides of releases; allowed here: pure, approx, renyi, zcdp, gdp, dpsgd or ledger claims (use audit test on pair shards)",
            claim.claim
        )));
    }
    if a.max_train_rows < 4 {
        return Err(Error::InvalidConfig(format!(
            "max_train_rows {}; allowed: at least 4",
            a.max_train_rows
        )));
    }
    if a.sequential {
        // The betting test on the releases in their order (`audit test --sequential`).
        let mut text = String::new();
        let out = test_sequential_on(a, &claim, Some((given, &mut text)))?;
        let (json, text) = if a.output.json {
            (out.stdout, text)
        } else {
            (text, out.stdout)
        };
        return Ok(TestOutputs {
            text,
            json,
            code: out.code,
        });
    }
    let check: crate::record::layers::Check = a.check.as_deref().unwrap_or("both").parse()?;
    let out = layered_outputs(a, &claim, check, Held::Given(given), true)?;
    if let Some(e) = out.late {
        return Err(e);
    }
    Ok(TestOutputs {
        text: out.text,
        json: out.json.unwrap_or_default(),
        code: out.code,
    })
}

impl Held<'_> {
    fn is_read(&self) -> bool {
        matches!(self, Held::Read | Held::Given(_))
    }

    /// The shards of both sides: opened and checked, or as the plan recorded them.
    fn sides(
        &self,
        a: &TestOptions,
    ) -> Result<(
        crate::sources::shards::ShardSet,
        crate::sources::shards::ShardSet,
    )> {
        match self {
            Held::Replay(r) => r.sides(),
            Held::Record(r) => Ok(r.sides.clone()),
            Held::Given(g) => Ok(g.sides.clone()),
            Held::Read => crate::sources::shards::open_sides(&a.samples_a, &a.samples_b),
        }
    }

    /// The record's `reproduce` line: the plain `audit test` command that gives the same
    /// record (without --jobs, which changes nothing, or --plan-out; a reduced test gives the
    /// plain command its plan was made from).
    fn reproduce(&self) -> String {
        match self {
            Held::Replay(r) => r.reproduce.clone(),
            Held::Given(g) => g.reproduce.clone(),
            _ => plain_reproduce_line(),
        }
    }
}

/// [`crate::report::reproduce::reproduce_line`] without `--jobs N` and `--plan-out FILE`.
pub(crate) fn plain_reproduce_line() -> String {
    let line = crate::report::reproduce::reproduce_line(None);
    let words = shlex::split(&line).unwrap_or_default();
    let mut kept: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        if w == "--jobs" || w == "--plan-out" {
            i += 2;
            continue;
        }
        if w.starts_with("--jobs=") || w.starts_with("--plan-out=") {
            i += 1;
            continue;
        }
        kept.push(w);
        i += 1;
    }
    shlex::try_join(kept.iter().copied()).unwrap_or_else(|_| kept.join(" "))
}

/// `audit test` itself, its held-out releases read as `held` says.
fn run_test(a: &TestOptions, held: Held<'_>) -> Result<Outcome> {
    let claim_text = a.claim.as_deref().ok_or_else(|| {
        Error::InvalidConfig("audit test needs --claim (or --plan FILE, which holds it)".into())
    })?;
    // No --neighbors here: a ledger claim is accounted under add/remove, the accountant's default.
    let claim =
        super::claim::parse_claim_arg(claim_text, crate::mechanisms::Neighboring::AddRemove)?;
    testers::parse_list(&a.tester)?;
    super::checks::check_beta(a.failure_probability)?;
    if claim.claim.is_bayesian() {
        if !held.is_read() {
            return Err(Error::InvalidConfig(format!(
                "--plan-out with a Bayesian DP claim ({}): its rows are (x', w) pairs read in memory, not counted shard by shard; drop --plan-out and run audit test on the shards",
                claim.claim
            )));
        }
        return test_bayesian(a, &claim);
    }
    if a.bdp_definition.is_some() {
        return Err(Error::InvalidConfig(format!(
            "--bdp-definition applies to a Bayesian DP claim (bdp:EPS:DELTA); the claim is {}, leave it out",
            claim.claim
        )));
    }
    if a.sequential {
        return test_sequential(a, &claim);
    }
    if a.max_train_rows < 4 {
        return Err(Error::InvalidConfig(format!(
            "--max-train-rows {}; allowed: at least 4",
            a.max_train_rows
        )));
    }
    if let Some(t) = &a.transform {
        let transform: Transform = t.parse()?;
        // Every shard is opened and sized first (headers, line counts): a missing, truncated or
        // mismatched shard stops here, before any release is used.
        let sides = held.sides(a)?;
        if !a.output.no_report && held.is_read_or_replay() {
            crate::report::prepare_report_dir(&a.output.report_dir)?;
        }
        let (_, (stdout, _), code, late_error, _) = test_view_report(
            a,
            &claim,
            transform,
            a.failure_probability,
            true,
            held,
            &sides,
        )?;
        return Ok(Outcome {
            stdout,
            code,
            late_error,
        });
    }
    let check: crate::record::layers::Check = a.check.as_deref().unwrap_or("both").parse()?;
    test_layered(a, &claim, check, held)
}

impl Held<'_> {
    /// Whether the test writes its page (not when it only records a plan).
    fn is_read_or_replay(&self) -> bool {
        !matches!(self, Held::Record(_))
    }
}

/// What one view's test gives: the report, (text, release dimension), exit code, late error,
/// the figures' releases.
type ViewRun = (
    crate::audit::SampleTestReport,
    (String, usize),
    u8,
    Option<Error>,
    crate::report::PlotData,
);

/// Both layers (see [`crate::record::layers`]) on the same files: each layer is the one-view test of
/// its transform at its share of β (β split evenly over the layers asked for; the
/// floating-point layer is skipped, its share unspent, when the first rows of both sides are
/// all integers). The layers run at once (rayon), each on its own copy of the shard list;
/// their results are combined in layer order, so the output does not depend on the threads.
fn test_layered(
    a: &TestOptions,
    claim: &ClaimArg,
    check: crate::record::layers::Check,
    held: Held<'_>,
) -> Result<Outcome> {
    let out = layered_outputs(a, claim, check, held, a.output.json)?;
    let mut stdout = out.json.unwrap_or(out.text);
    if let Some(index) = &out.index {
        announce_report(index, a.output.json, a.output.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code: out.code,
        late_error: out.late,
    })
}

/// What a layered test gives: its text, its JSON record (when asked for), the exit code, a
/// late error and the page written.
struct LayeredOutputs {
    text: String,
    json: Option<String>,
    code: u8,
    late: Option<Error>,
    index: Option<PathBuf>,
}

/// [`test_layered`]'s work: both renderings (the record only when `json`).
fn layered_outputs(
    a: &TestOptions,
    claim: &ClaimArg,
    check: crate::record::layers::Check,
    held: Held<'_>,
    json: bool,
) -> Result<LayeredOutputs> {
    use crate::record::layers::{LayerKind, LayerVerdict};
    use rayon::prelude::*;
    let layers = check.layers();
    let share = a.failure_probability / layers.len() as f64;
    // Every shard is opened and sized first (headers, line counts): a missing, truncated or
    // mismatched shard stops here, before any release is used.
    let sides = held.sides(a)?;
    if !a.output.no_report && held.is_read_or_replay() {
        crate::report::prepare_report_dir(&a.output.report_dir)?;
    }
    // Each layer's test (None: the floating-point layer skipped), computed in parallel and
    // collected in layer order; the first error in layer order is the one reported.
    let runs: Vec<Result<Option<ViewRun>>> = layers
        .par_iter()
        .map(|&kind| -> Result<Option<ViewRun>> {
            if kind == LayerKind::FloatingPoint {
                let head = |set: &crate::sources::shards::ShardSet| {
                    set.head(set.rows.min(10_000), &Transform::None)
                };
                if crate::record::layers::integer_valued(&[&head(&sides.0)?, &head(&sides.1)?]) {
                    return Ok(None);
                }
            }
            test_view_report(a, claim, kind.transform(), share, false, held, &sides).map(Some)
        })
        .collect();
    let mut results: Vec<(LayerVerdict, Option<crate::audit::SampleTestReport>)> = Vec::new();
    let mut stdout = String::new();
    let mut code = 0u8;
    let mut late = None;
    let mut mechanism_violates = false;
    let mut pages: Vec<(crate::audit::AuditReport, crate::report::PlotData, u8)> = Vec::new();
    for (kind, run) in layers.into_iter().zip(runs) {
        let Some((r, text, c, l, plots)) = run? else {
            results.push((
                LayerVerdict::skipped(
                    kind,
                    "every output is an integer (first 10 000 releases of each side), whose floating-point representation is exact; its share of β is unspent",
                ),
                None,
            ));
            continue;
        };
        let names = kind.transform().feature_names(text.1);
        let mut r = r;
        for b in &mut r.bounds {
            if let Some(e) = &mut b.event {
                e.description = crate::record::layers::in_words(&e.description, &names);
            }
        }
        if let Some(ev) = r.empirical_epsilon.as_mut().and_then(|e| e.event.as_mut()) {
            *ev = crate::record::layers::in_words(ev, &names);
        }
        let page = r.to_audit_report();
        let v = LayerVerdict::from_confirmations(
            kind,
            share,
            std::slice::from_ref(&page),
            mechanism_violates,
        );
        pages.push((page, plots, c));
        mechanism_violates |= kind == LayerKind::Mechanism && c == 1;
        code = code.max(c);
        if late.is_none() {
            late = l;
        }
        stdout += &format!("\n===== layer: {} =====\n{}", kind.title(), text.0);
        results.push((v, Some(r)));
    }
    let verdicts: Vec<LayerVerdict> = results.iter().map(|(v, _)| v.clone()).collect();
    // One page for both layers: the violating layer's test (the mechanism's first), else the
    // mechanism layer's, with both answers at its head.
    let index = if a.output.no_report || !held.is_read_or_replay() {
        None
    } else {
        let k = pages.iter().position(|p| p.2 == 1).unwrap_or(0);
        match pages.into_iter().nth(k) {
            Some((mut page, plots, _)) => {
                page.layers = Some(verdicts.clone());
                page.reproduce = Some(held.reproduce());
                match crate::report::write_run_report(&a.output.report_dir, &page, &plots) {
                    Ok(i) => Some(i),
                    Err(e) => {
                        late.get_or_insert(e);
                        None
                    }
                }
            }
            None => None,
        }
    };
    let mut record = None;
    if json {
        #[derive(serde::Serialize)]
        struct Layer<'a> {
            verdict: &'a LayerVerdict,
            #[serde(skip_serializing_if = "Option::is_none")]
            test: Option<&'a crate::audit::SampleTestReport>,
        }
        #[derive(serde::Serialize)]
        struct Layered<'a> {
            layers: Vec<Layer<'a>>,
            verdict: crate::audit::Verdict,
        }
        let out = Layered {
            layers: results
                .iter()
                .map(|(v, r)| Layer {
                    verdict: v,
                    test: r.as_ref(),
                })
                .collect(),
            verdict: if code == 1 {
                Verdict::Violation
            } else {
                Verdict::NoViolation
            },
        };
        let mut rec = crate::record::ResultRecord::from_layered_sample_test(&results, &out);
        rec.reproduce = Some(held.reproduce());
        record = Some(to_json(&rec)?);
    }
    stdout += "\n===== answers =====\n";
    stdout += &crate::record::layers::render_text(&verdicts);
    stdout += &format!(
        "β            {} split evenly over the {} layer(s) asked for (union bound)\nverdict      {}\n",
        crate::mechanisms::math::readable(a.failure_probability),
        verdicts.len(),
        if code == 1 {
            "violation found"
        } else {
            "no violation found"
        }
    );
    Ok(LayeredOutputs {
        text: stdout,
        json: record,
        code,
        late,
        index,
    })
}

/// One view (`transform`) at failure probability `beta`, on the shards `sides` (opened by the
/// caller), also returning the report (text, release dimension, code, late error, the
/// figures' releases). `announce`: a test of one view (prints JSON, writes its page).
fn test_view_report(
    a: &TestOptions,
    claim_arg: &ClaimArg,
    transform: Transform,
    beta: f64,
    announce: bool,
    held: Held<'_>,
    sides: &(
        crate::sources::shards::ShardSet,
        crate::sources::shards::ShardSet,
    ),
) -> Result<ViewRun> {
    let claim = claim_arg.claim;
    let (set_a, set_b) = (sides.0.clone(), sides.1.clone());
    let set_dim = set_a.shards.first().map_or(1, |s| s.dim);
    let (na, nb) = (set_a.names(), set_b.names());
    let config = AuditConfig {
        seed: a.seed,
        samples_per_side: set_a.rows.min(set_b.rows),
        failure_probability: beta,
    };
    let (testers, skipped) =
        super::checks::testers_for(&a.tester, &claim, config.samples_per_side)?;
    // Training rows per side if every tester can stream, with the same split.
    let split = |n: usize| -> Option<usize> {
        let rows: Vec<Option<usize>> = testers.iter().map(|t| t.split_train_rows(n)).collect();
        let first = rows.first().copied().flatten()?;
        rows.iter()
            .all(|r| *r == Some(first))
            .then_some(first.min(a.max_train_rows))
    };
    let streamed = match (split(set_a.rows), split(set_b.rows)) {
        (Some(ta), Some(tb)) if !a.in_memory => Some((ta, tb)),
        _ if a.stream || !held.is_read() => {
            return Err(Error::InvalidConfig(format!(
                "{}: the tester(s) {} read their samples in memory; allowed: --tester hockey-stick or hockey-stick-variational (drop {} to read the shards in memory)",
                if a.stream { "--stream" } else { "--plan-out" },
                testers
                    .iter()
                    .filter(|t| t.split_train_rows(set_a.rows).is_none())
                    .map(|t| t.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                if a.stream { "--stream" } else { "--plan-out" },
            )));
        }
        _ => None,
    };
    let (mut r, sa, sb) = if let Some(train) = streamed {
        let (ta, tb) = (
            set_a.head(train.0, &transform)?,
            set_b.head(train.1, &transform)?,
        );
        let held_out = (set_a.rows - train.0, set_b.rows - train.1);
        let r = match held {
            Held::Read | Held::Given(_) => {
                let held = crate::sources::shards::Streamed {
                    a: set_a,
                    b: set_b,
                    train,
                    transform,
                };
                crate::audit::audit_split((&ta, &tb), &held, (&na, &nb), &claim, &testers, &config)?
            }
            Held::Record(recording) => {
                let recorder = plan::Recorder::new(held_out);
                let r = crate::audit::audit_split(
                    (&ta, &tb),
                    &recorder,
                    (&na, &nb),
                    &claim,
                    &testers,
                    &config,
                )?;
                recording
                    .views
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(recorder.view(transform, train));
                r
            }
            Held::Replay(reduced) => {
                let replayer = reduced.replayer(transform, train, held_out)?;
                let r = crate::audit::audit_split(
                    (&ta, &tb),
                    &replayer,
                    (&na, &nb),
                    &claim,
                    &testers,
                    &config,
                )?;
                replayer.finish()?;
                r
            }
        };
        (r, ta, tb)
    } else {
        let sa = set_a.head(set_a.rows, &transform)?;
        let sb = set_b.head(set_b.rows, &transform)?;
        let r = crate::audit::audit_samples(&sa, &sb, (&na, &nb), &claim, &testers, &config)?;
        (r, sa, sb)
    };
    r.skipped_testers = skipped;
    r.output_transform = (!transform.is_identity()).then_some(transform);
    if let Some(e) = r.empirical_epsilon.as_mut() {
        e.accountant = claim_arg.accountant.clone().filter(|x| x.delta == e.delta);
    }
    let code = crate::report::output::exit_code(r.verdict);
    // The figures show the first releases of each side (the samples are the data here;
    // nothing is drawn; a streamed test holds its training rows, the first ones).
    let head = |s: &crate::mechanisms::Samples| -> Result<crate::mechanisms::Samples> {
        let n = s.n().min(crate::report::PLOT_SAMPLES_PER_SIDE);
        Ok(crate::mechanisms::Samples::new(
            s.values().slice(ndarray::s![..n, ..]).to_owned(),
        )?)
    };
    let plots = crate::report::PlotData {
        sides: Some((head(&sa)?, head(&sb)?)),
    };
    // As for `audit run`: the verdict is printed even when the report cannot be written. A
    // layered test (`announce` false) writes one page for both layers, in test_layered.
    let written = if a.output.no_report || !announce || !held.is_read_or_replay() {
        Ok(None)
    } else {
        let mut page = r.to_audit_report();
        page.reproduce = Some(held.reproduce());
        crate::report::write_run_report(&a.output.report_dir, &page, &plots).map(Some)
    };
    let (index, late_error) = split_late(written);
    let dim = set_dim;
    let mut stdout = if a.output.json && announce {
        let mut rec = crate::record::ResultRecord::from_sample_test(&r);
        rec.reproduce = Some(held.reproduce());
        to_json(&rec)?
    } else {
        crate::report::text::render_samples_text(&r, sa.dim())
    };
    if let Some(index) = &index {
        announce_report(
            index,
            a.output.json && announce,
            a.output.quiet,
            &mut stdout,
        );
    }
    Ok((r, (stdout, dim), code, late_error, plots))
}

/// `audit test --sequential`: the betting test ([`crate::audit::sequential`]) on the files'
/// releases in their order, once per layer (β split evenly) or through the one view
/// `--transform` names. Every side is read in memory (up to --max-samples releases).
fn test_sequential(a: &TestOptions, claim: &ClaimArg) -> Result<Outcome> {
    test_sequential_on(a, claim, None)
}

/// [`test_sequential`] on the files' sides, or on `given` (sides in memory and their reproduce
/// line: [`test_given`]): what it prints with `a.output.json` (`stdout`) and the other rendering too.
fn test_sequential_on(
    a: &TestOptions,
    claim: &ClaimArg,
    given: Option<(&GivenSides, &mut String)>,
) -> Result<Outcome> {
    use crate::audit::LayeredSequential;
    use crate::audit::sequential::{SequentialConfig, audit_sequential_samples};
    use crate::record::layers::{Check, LayerKind, LayerVerdict};
    if a.tester != "hockey-stick" {
        return Err(Error::InvalidConfig(format!(
            "--tester {} with --sequential; the sequential test uses its own betting test, leave --tester out",
            a.tester
        )));
    }
    let (set_a, set_b) = match &given {
        Some((g, _)) => g.sides.clone(),
        None => crate::sources::shards::open_sides(&a.samples_a, &a.samples_b)?,
    };
    let reproduce = match &given {
        Some((g, _)) => g.reproduce.clone(),
        None => plain_reproduce_line(),
    };
    let defaults = SequentialConfig::default();
    let available = set_a.rows.min(set_b.rows);
    let n = a.max_samples.unwrap_or(available).min(available);
    let views: Vec<(Option<LayerKind>, Transform)> = match &a.transform {
        Some(t) => vec![(None, t.parse()?)],
        None => a
            .check
            .as_deref()
            .unwrap_or("both")
            .parse::<Check>()?
            .layers()
            .into_iter()
            .map(|k| (Some(k), k.transform()))
            .collect(),
    };
    let share = a.failure_probability / views.len() as f64;
    let config = SequentialConfig {
        seed: a.seed,
        max_samples_per_side: n,
        first_batch: a.first_batch.unwrap_or(defaults.first_batch),
        failure_probability: share,
    };
    if !a.output.no_report && given.is_none() {
        crate::report::prepare_report_dir(&a.output.report_dir)?;
    }
    let files = crate::record::SampleFiles {
        a: set_a.names(),
        samples_a: set_a.rows,
        b: set_b.names(),
        samples_b: set_b.rows,
    };
    let info = crate::record::MechanismInfo {
        id: format!("releases from {} and {}", files.a, files.b),
        claim: claim.claim,
        claim_source: "given on the command line (--claim)".into(),
        neighboring: crate::mechanisms::Neighboring::AddRemove,
        catalogue_status: None,
        setting: Default::default(),
        privacy_unit: String::new(),
    };
    let mut runs: Vec<(LayerVerdict, crate::audit::sequential::SequentialReport)> = Vec::new();
    let mut reports = Vec::new();
    let mut mechanism_violates = false;
    // Each side is read once; every view is a function of the releases.
    let identity = Transform::default();
    let (raw_a, raw_b) = (set_a.head(n, &identity)?, set_b.head(n, &identity)?);
    for (kind, transform) in views {
        use std::borrow::Cow;
        let (sa, sb) = if transform.is_identity() {
            (Cow::Borrowed(&raw_a), Cow::Borrowed(&raw_b))
        } else {
            (
                Cow::Owned(transform.apply(&raw_a)?),
                Cow::Owned(transform.apply(&raw_b)?),
            )
        };
        config.validate(sa.dim())?;
        let mut r = audit_sequential_samples(&sa, &sb, info.clone(), files.clone(), &config)?;
        r.reproduce = Some(reproduce.clone());
        r.output_transform = (!transform.is_identity()).then_some(transform);
        if let Some(kind) = kind {
            let v = LayeredSequential::layer_verdict(kind, share, r.verdict, mechanism_violates);
            mechanism_violates |= kind == LayerKind::Mechanism && r.verdict == Verdict::Violation;
            runs.push((v, r.clone()));
        }
        reports.push(r);
    }
    let violation = reports.iter().any(|r| r.verdict == Verdict::Violation);
    let code = u8::from(violation);
    let json = || -> Result<String> {
        let rec = if runs.is_empty() {
            let mut r = reports[0].clone();
            r.wall_time_seconds = None;
            crate::record::ResultRecord::from_sequential(&r)
        } else {
            LayeredSequential::new(&runs).record()
        };
        to_json(&rec.without_wall_time())
    };
    let text = || {
        if runs.is_empty() {
            crate::audit::sequential::render_text(&reports[0])
        } else {
            LayeredSequential::render_text(&runs, a.failure_probability)
        }
    };
    let mut stdout = if a.output.json { json()? } else { text() };
    if let Some((_, other)) = given {
        // The caller in memory writes no report; it gets both renderings.
        *other = if a.output.json { text() } else { json()? };
        return Ok(Outcome::new(stdout, code));
    }
    let mut late_error = None;
    if !a.output.no_report {
        for r in &reports {
            match crate::report::sequential::write_sequential_report(&a.output.report_dir, r) {
                Ok(index) => announce_report(&index, a.output.json, a.output.quiet, &mut stdout),
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

/// `audit test --claim bdp:EPS:DELTA`: the Bayesian DP test ([`crate::audit::bayesian`]) on
/// shards of (x', w) pairs, side a from Q̃ and side b from P̃ (see
/// [`crate::sources::bayesian_shards`]); one bound at the full β.
fn test_bayesian(a: &TestOptions, claim: &ClaimArg) -> Result<Outcome> {
    use crate::audit::bayesian::{Definition, bayesian_claim};
    use crate::sources::bayesian_shards::{check_sides, read_side};
    use crate::sources::shards::ShardSide;
    let start = std::time::Instant::now();
    for (flag, on) in [
        ("--transform", a.transform.is_some()),
        ("--check", a.check.is_some()),
        ("--stream", a.stream),
    ] {
        if on {
            return Err(Error::InvalidConfig(format!(
                "{flag} does not apply to a Bayesian DP test (claim {}): its rows are (x', w) pairs read in memory; leave {flag} out",
                claim.claim
            )));
        }
    }
    if a.tester != "hockey-stick" && a.tester != crate::audit::bayesian::TESTER_NAME {
        return Err(Error::InvalidConfig(format!(
            "--tester {} with a Bayesian DP claim; only {} tests it; leave --tester out",
            a.tester,
            crate::audit::bayesian::TESTER_NAME
        )));
    }
    let definition = match &a.bdp_definition {
        Some(d) => Definition::parse_flag(d)?,
        None => Definition::Strong,
    };
    let (claim_v, epsilon, delta) = bayesian_claim(&claim.claim)?;
    let sa = read_side(&a.samples_a, ShardSide::A, "--samples-a")?;
    let sb = read_side(&a.samples_b, ShardSide::B, "--samples-b")?;
    check_sides(&a.samples_a, &a.samples_b, &sa, &sb)?;
    if !a.output.no_report {
        crate::report::prepare_report_dir(&a.output.report_dir)?;
    }
    let bound = crate::audit::bayesian::bound_pairs(
        (&sa.x, &sa.w),
        (&sb.x, &sb.w),
        epsilon,
        delta,
        a.failure_probability,
        definition,
        crate::rng::Seed(a.seed),
    )?;
    let meta = sa.sidecars.first().or(sb.sidecars.first());
    // Every distinct x' with its draws per side, counted once.
    let drawn = crate::audit::bayesian::drawn_records(&sa.x, &sb.x);
    let info = crate::record::BayesianInfo {
        data_source: meta.map_or_else(
            || "not recorded (shards without a sidecar): the x' in the shard lines".to_string(),
            |m| format!("{} (as recorded by audit sample)", m.data_source),
        ),
        records: meta.map_or(0, |m| m.records),
        distinct_records: meta.map_or(0, |m| m.distinct_records),
        base: meta.map_or(crate::mechanisms::Dataset::empty(sa.x.dim())?, |m| {
            m.base.clone()
        }),
        draws_per_side: sa.x.n().min(sb.x.n()),
        distinct_drawn: drawn.iter().filter(|d| d.second > 0).count(),
        features: crate::audit::bayesian::features_words(sa.w.dim(), sa.x.dim(), definition),
        definition: definition.label().to_string(),
        dataset_drawn: meta.is_some_and(|m| m.dataset_drawn),
        drawn,
        group: None,
    };
    let mechanism = crate::record::MechanismInfo {
        id: format!("releases from {} and {}", sa.names, sb.names),
        claim: claim_v,
        claim_source: "given on the command line (--claim)".into(),
        neighboring: crate::mechanisms::Neighboring::AddRemove,
        catalogue_status: None,
        setting: Default::default(),
        privacy_unit: String::new(),
    };
    let mut report = crate::audit::bayesian::report(
        mechanism,
        crate::audit::bayesian::Outcome {
            bound,
            info,
            seed: a.seed,
            beta: a.failure_probability,
            calls: 0,
        },
        start,
    );
    report.sample_files = Some(crate::record::SampleFiles {
        a: sa.names.clone(),
        samples_a: sa.x.n(),
        b: sb.names.clone(),
        samples_b: sb.x.n(),
    });
    let code = crate::report::output::exit_code(report.verdict);
    let written = if a.output.no_report {
        Ok(None)
    } else {
        let mut page = report.clone();
        page.reproduce = Some(plain_reproduce_line());
        crate::report::write_run_report(
            &a.output.report_dir,
            &page,
            &crate::report::PlotData::none(),
        )
        .map(Some)
    };
    let (index, late_error) = split_late(written);
    let mut stdout = if a.output.json {
        report.wall_time_seconds = None;
        let mut rec = crate::record::ResultRecord::from_audit(&report);
        rec.reproduce = Some(plain_reproduce_line());
        to_json(&rec)?
    } else {
        crate::report::text::render_text(&report)
    };
    if let Some(index) = &index {
        announce_report(index, a.output.json, a.output.quiet, &mut stdout);
    }
    Ok(Outcome {
        stdout,
        code,
        late_error,
    })
}
