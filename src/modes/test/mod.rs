//! `audit test` as a library: a claim tested on release samples drawn elsewhere (shards, or sides
//! in memory), from plain [`TestOptions`]. The command line ([`crate::commands::test`]) and the
//! Python package both call [`test`] or [`test_given`]; the defaults are written once, in
//! [`TestOptions::default`].

use std::path::PathBuf;

use crate::audit::AuditConfig;
use crate::error::{Error, Result};
use crate::report::output::{Outcome, OutputOptions};
use crate::testers::{self, Transform};

mod bayesian;
mod layered;
mod plan;
mod sequential;
mod view;

use bayesian::test_bayesian;
use layered::{layered_outputs, test_layered};
use sequential::{test_sequential, test_sequential_on};
use view::test_view_report;

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
