//! `audit test` counted shard by shard, e.g. as tasks of a batch engine (docs/test.md, "Counting
//! shards as tasks"), in three steps that reuse the plain test's code:
//!
//! 1. `--plan-out PLAN`: the plain test runs on the training rows, and every held-out count a
//!    tester asks for (side, number of rows, the events chosen on the training split) is
//!    recorded instead of counted ([`Recorder`]); the plan holds them with the test's settings,
//!    every shard's size and the plain command's reproduce line.
//! 2. `--plan PLAN --count-shard SHARD`: one shard's releases counted against every recorded
//!    query (integers), printed as JSON.
//! 3. `--plan PLAN --reduce COUNTS…`: the counts summed over the shards (every shard holding
//!    held-out rows exactly once), then the plain test again, whose held-out counts are answered
//!    from the sums in the recorded order ([`Replayer`]); every query it asks must be the one
//!    recorded (same side, rows and events), else it is an error.
//!
//! Why the numbers are the plain test's: a held-out count of a side is a sum over its rows, and
//! so over its shards, of integers; the queries depend only on the training rows and the seed
//! (the Poisson draws come from the tester's seeded stream before any count is read), so step 3
//! asks exactly what step 1 recorded, and gets the counts the plain test would have read.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::{Held, TestOptions, run_test};
use crate::error::{Error, Result};
use crate::report::output::Outcome;
use crate::sources::shards::{Provenance, Shard, ShardSet, ShardSide};
use crate::testers::{HeldOut, HeldOutEvents, Transform};

/// What a plan file says it is.
const PLAN_KIND: &str = "dp-audit test plan";
/// What a count file says it is.
const COUNTS_KIND: &str = "dp-audit shard counts";
/// Version of the plan and count formats.
const FORMAT_VERSION: u32 = 1;

/// One held-out count a tester asked for: among the first `limit` held-out rows of `side`, how
/// many are in each event of `events`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Query {
    side: ShardSide,
    limit: usize,
    events: HeldOutEvents,
}

/// The queries of one view (a layer's transform, or the one `--transform`), in the order the
/// testers asked them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct View {
    transform: Transform,
    /// Training rows of side a and side b (the held-out rows follow them).
    train: [usize; 2],
    queries: Vec<Query>,
}

/// A shard as the plan recorded it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct PlanShard {
    path: PathBuf,
    dim: usize,
    rows: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    provenance: Option<Provenance>,
}

/// The settings of the plain test that change its result.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Settings {
    claim: String,
    seed: u64,
    failure_probability: f64,
    tester: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    transform: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    check: Option<String>,
    max_train_rows: usize,
    stream: bool,
}

/// A plan (`audit test --plan-out`).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Plan {
    kind: String,
    version: u32,
    tool_version: String,
    /// The plain `audit test` command whose result the reduced test reproduces.
    reproduce: String,
    settings: Settings,
    a: Vec<PlanShard>,
    b: Vec<PlanShard>,
    views: Vec<View>,
}

/// One shard's counts (`audit test --count-shard`): for each place the shard has in the plan
/// (once, or twice when the same file is on both sides), the counts of every query of every
/// view (0 for the queries of the other side).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Counts {
    kind: String,
    version: u32,
    /// The plan's digest (FNV-1a of its bytes): counts of another plan are refused.
    plan: String,
    shard: PathBuf,
    entries: Vec<Entry>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Entry {
    side: ShardSide,
    /// The shard's position on its side (0 = the first --samples-a or --samples-b).
    index: usize,
    /// Per view, per query: [in the first event, in the second].
    counts: Vec<Vec<[u64; 2]>>,
}

/// The held-out rows of a test that records its queries instead of counting (answers 0).
pub(crate) struct Recorder {
    rows: (usize, usize),
    queries: Mutex<Vec<Query>>,
}

impl Recorder {
    /// A recorder for `rows` held-out rows of side a and side b.
    pub(crate) fn new(rows: (usize, usize)) -> Self {
        Self {
            rows,
            queries: Mutex::new(Vec::new()),
        }
    }

    /// The view recorded: the queries in the order they were asked.
    pub(crate) fn view(self, transform: Transform, train: (usize, usize)) -> View {
        View {
            transform,
            train: [train.0, train.1],
            queries: self.queries.into_inner().unwrap_or_else(|p| p.into_inner()),
        }
    }
}

fn side_of(second: bool) -> ShardSide {
    if second { ShardSide::B } else { ShardSide::A }
}

impl HeldOut for Recorder {
    fn rows(&self, second: bool) -> usize {
        if second { self.rows.1 } else { self.rows.0 }
    }

    fn count(&self, second: bool, limit: usize, events: &HeldOutEvents) -> Result<(u64, u64)> {
        self.queries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Query {
                side: side_of(second),
                limit,
                events: events.clone(),
            });
        Ok((0, 0))
    }
}

/// What a test records for a plan: the views, and the shards it runs on (opened once).
pub(crate) struct Recording {
    pub(crate) views: Mutex<Vec<View>>,
    pub(crate) sides: (ShardSet, ShardSet),
}

/// A plan with its counts summed over the shards (`--reduce`).
pub(crate) struct Reduced {
    plan: Plan,
    /// Per view, per query, the summed counts.
    sums: Vec<Vec<(u64, u64)>>,
    /// The plain command's reproduce line.
    pub(crate) reproduce: String,
}

impl Reduced {
    /// The shards of both sides as the plan recorded them.
    pub(crate) fn sides(&self) -> Result<(ShardSet, ShardSet)> {
        let set = |shards: &[PlanShard]| {
            ShardSet::new(
                shards
                    .iter()
                    .map(|s| Shard::recorded(&s.path, s.dim, s.rows, s.provenance))
                    .collect(),
            )
        };
        Ok((set(&self.plan.a), set(&self.plan.b)))
    }

    /// The held-out rows of the view `transform`, answered from the sums.
    pub(crate) fn replayer(
        &self,
        transform: Transform,
        train: (usize, usize),
        rows: (usize, usize),
    ) -> Result<Replayer<'_>> {
        let k = self
            .plan
            .views
            .iter()
            .position(|v| v.transform == transform)
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "the plan has no view {transform}; it was made for other settings: make the plan again"
                ))
            })?;
        let view = &self.plan.views[k];
        if view.train != [train.0, train.1] {
            return Err(Error::InvalidConfig(format!(
                "view {transform}: the plan trained on {} and {} rows, this test on {} and {}: make the plan again",
                view.train[0], view.train[1], train.0, train.1
            )));
        }
        Ok(Replayer {
            view,
            sums: &self.sums[k],
            rows,
            next: Mutex::new(0),
        })
    }
}

/// The held-out rows of one view of a reduced test: each count is the next recorded query's
/// sum, once the query asked is checked to be the one recorded.
pub(crate) struct Replayer<'a> {
    view: &'a View,
    sums: &'a [(u64, u64)],
    rows: (usize, usize),
    next: Mutex<usize>,
}

impl Replayer<'_> {
    /// Every recorded query must have been asked.
    pub(crate) fn finish(&self) -> Result<()> {
        let asked = *self.next.lock().unwrap_or_else(|p| p.into_inner());
        if asked != self.view.queries.len() {
            return Err(Error::InvalidConfig(format!(
                "view {}: the plan recorded {} held-out counts but the test asked {asked}: the plan does not match these shards or this version of audit; make the plan again",
                self.view.transform,
                self.view.queries.len()
            )));
        }
        Ok(())
    }
}

impl HeldOut for Replayer<'_> {
    fn rows(&self, second: bool) -> usize {
        if second { self.rows.1 } else { self.rows.0 }
    }

    fn count(&self, second: bool, limit: usize, events: &HeldOutEvents) -> Result<(u64, u64)> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let k = *next;
        let asked = Query {
            side: side_of(second),
            limit,
            events: events.clone(),
        };
        match self.view.queries.get(k) {
            Some(q) if *q == asked => {
                *next += 1;
                Ok(self.sums[k])
            }
            _ => Err(Error::InvalidConfig(format!(
                "view {}: held-out count {} asked by the test is not the one the plan recorded (side, rows or events differ): the plan does not match these shards or this version of audit; make the plan again",
                self.view.transform,
                k + 1
            ))),
        }
    }
}

fn digest(bytes: &[u8]) -> String {
    format!("{:016x}", crate::report::fnv1a64(bytes))
}

/// Step 1: the plan of the test `a`, written to `out`.
pub(super) fn write_plan(a: &TestOptions, out: &Path) -> Result<Outcome> {
    let mut partial = out.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let written = |e: std::io::Error| {
        Error::InvalidConfig(format!(
            "--plan-out {}: cannot be written ({e}); allowed: a file in a writable directory",
            out.display()
        ))
    };
    // Refused before any work when it cannot be written; renamed into place when complete.
    std::fs::write(&partial, b"").map_err(written)?;
    let made = plan_text(a);
    let text = match made {
        Ok(t) => t,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    std::fs::write(&partial, text.0.as_bytes()).map_err(written)?;
    std::fs::rename(&partial, out).map_err(written)?;
    let (text, plan) = text;
    let queries: usize = plan.views.iter().map(|v| v.queries.len()).sum();
    let held: Vec<String> = plan
        .views
        .iter()
        .map(|v| format!("{} ({} queries)", v.transform, v.queries.len()))
        .collect();
    let stdout = if a.output.json {
        let summary = serde_json::json!({
            "plan": out,
            "digest": digest(text.as_bytes()),
            "views": plan.views.len(),
            "queries": queries,
            "shards_a": plan.a.iter().map(|s| &s.path).collect::<Vec<_>>(),
            "shards_b": plan.b.iter().map(|s| &s.path).collect::<Vec<_>>(),
        });
        crate::report::output::to_json(&summary)?
    } else {
        format!(
            "plan        {} ({} view(s): {}; {} shard(s) on side a, {} on side b)\nnext        count each shard: audit test --plan {} --count-shard SHARD > SHARD.counts.json\n            then: audit test --plan {} --reduce *.counts.json\n",
            out.display(),
            plan.views.len(),
            held.join(", "),
            plan.a.len(),
            plan.b.len(),
            out.display(),
            out.display()
        )
    };
    Ok(Outcome {
        stdout,
        code: 0,
        late_error: None,
    })
}

/// The plan of the test `a` (the test run with its counts recorded) as JSON text (with its
/// final line break), and the plan.
fn plan_text(a: &TestOptions) -> Result<(String, Plan)> {
    // The shards are opened and checked once, here, and the test runs on them.
    let (set_a, set_b) = crate::sources::shards::open_sides(&a.samples_a, &a.samples_b)?;
    let shards = |set: &ShardSet| -> Result<Vec<PlanShard>> {
        set.shards
            .iter()
            .map(|s| {
                if !s.is_regular_file() {
                    return Err(Error::InvalidConfig(format!(
                        "--plan-out: shard {} is a pipe or FIFO, which the tasks that count it cannot read again; allowed: regular files (write the stream to a file first)",
                        s.path.display()
                    )));
                }
                Ok(PlanShard {
                    path: s.path.clone(),
                    dim: s.dim,
                    rows: s.rows,
                    provenance: s.provenance,
                })
            })
            .collect()
    };
    let (shards_a, shards_b) = (shards(&set_a)?, shards(&set_b)?);
    let recording = Recording {
        views: Mutex::new(Vec::new()),
        sides: (set_a, set_b),
    };
    run_test(a, Held::Record(&recording))?;
    let mut views = recording
        .views
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    // The layers ran in parallel: their views in a fixed order.
    views.sort_by_key(|v: &View| v.transform.to_string());
    let plan = Plan {
        kind: PLAN_KIND.into(),
        version: FORMAT_VERSION,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        reproduce: super::plain_reproduce_line(),
        settings: Settings {
            claim: a.claim.clone().unwrap_or_default(),
            seed: a.seed,
            failure_probability: a.failure_probability,
            tester: a.tester.clone(),
            transform: a.transform.clone(),
            check: a.check.clone(),
            max_train_rows: a.max_train_rows,
            stream: a.stream,
        },
        a: shards_a,
        b: shards_b,
        views,
    };
    let text = serde_json::to_string(&plan).map_err(|e| {
        Error::InvalidConfig(format!(
            "--plan-out: the plan cannot be written as JSON ({e})"
        ))
    })?;
    // The plan must read back as written (every number finite and exact).
    let back: Plan = serde_json::from_str(&text).map_err(|e| {
        Error::InvalidConfig(format!("--plan-out: the plan does not read back ({e})"))
    })?;
    if serde_json::to_string(&back).ok().as_deref() != Some(text.as_str()) {
        return Err(Error::InvalidConfig(
            "--plan-out: the plan does not read back exactly as written".into(),
        ));
    }
    Ok((text + "\n", plan))
}

/// Reads and checks a plan: (plan, its digest).
fn read_plan(path: &Path) -> Result<(Plan, String)> {
    use crate::sources::text::{JsonReadError, read_json_and_bytes};
    let (plan, bytes): (Plan, _) = read_json_and_bytes(path).map_err(|e| match e {
        JsonReadError::Io(e) => Error::InvalidConfig(format!(
            "--plan {}: cannot be read ({e}); allowed: a plan written by audit test --plan-out",
            path.display()
        )),
        JsonReadError::Parse(e) => Error::InvalidConfig(format!(
            "--plan {}: not a plan written by audit test --plan-out ({e})",
            path.display()
        )),
    })?;
    if plan.kind != PLAN_KIND || plan.version != FORMAT_VERSION {
        return Err(Error::InvalidConfig(format!(
            "--plan {}: a {:?} of version {}; allowed: a {PLAN_KIND:?} of version {FORMAT_VERSION}",
            path.display(),
            plan.kind,
            plan.version
        )));
    }
    if plan.tool_version != env!("CARGO_PKG_VERSION") {
        return Err(Error::InvalidConfig(format!(
            "--plan {}: made by audit {}, this is audit {}; allowed: the same version for every step (make the plan again)",
            path.display(),
            plan.tool_version,
            env!("CARGO_PKG_VERSION")
        )));
    }
    Ok((plan, digest(&bytes)))
}

/// Step 2: one shard counted against the plan.
pub(super) fn count_shard(plan_path: &Path, shard_path: &Path) -> Result<Outcome> {
    let (plan, plan_digest) = read_plan(plan_path)?;
    let same = |p: &Path| {
        p == shard_path
            || matches!(
                (std::fs::canonicalize(p), std::fs::canonicalize(shard_path)),
                (Ok(x), Ok(y)) if x == y
            )
    };
    // Every place of the shard in the plan (both sides when the same file is on both).
    let places: Vec<(ShardSide, usize, &PlanShard, usize)> =
        [(ShardSide::A, &plan.a), (ShardSide::B, &plan.b)]
            .into_iter()
            .flat_map(|(side, shards)| {
                let mut offset = 0usize;
                shards
                    .iter()
                    .enumerate()
                    .map(move |(i, s)| {
                        let o = offset;
                        offset += s.rows;
                        (side, i, s, o)
                    })
                    .collect::<Vec<_>>()
            })
            .filter(|(_, _, s, _)| same(&s.path))
            .collect();
    if places.is_empty() {
        let names: Vec<String> = plan
            .a
            .iter()
            .chain(&plan.b)
            .map(|s| s.path.display().to_string())
            .collect();
        return Err(Error::InvalidConfig(format!(
            "--count-shard {}: not a shard of the plan {}; allowed: one of {}",
            shard_path.display(),
            plan_path.display(),
            names.join(", ")
        )));
    }
    // The shard as it is now must be the one the plan sized (every byte is read again below).
    let shard = Shard::open(shard_path)?;
    let recorded = places[0].2;
    if shard.dim != recorded.dim
        || shard.rows != recorded.rows
        || shard.provenance != recorded.provenance
    {
        return Err(Error::InvalidSamples(format!(
            "--count-shard {}: holds {} releases of dimension {} (provenance {:?}) where the plan recorded {} of dimension {} ({:?}): the shard changed since the plan was made",
            shard_path.display(),
            shard.rows,
            shard.dim,
            shard.provenance,
            recorded.rows,
            recorded.dim,
            recorded.provenance
        )));
    }
    let mut entries = Vec::new();
    for (side, index, _, offset) in places {
        let queries: Vec<crate::sources::shards::ViewQueries<'_>> = plan
            .views
            .iter()
            .map(|v| {
                let start = v.train[side.index() as usize];
                crate::sources::shards::ViewQueries {
                    transform: v.transform,
                    start,
                    queries: v
                        .queries
                        .iter()
                        .map(|q| {
                            // The other side's queries count no row of this shard.
                            let end = if q.side == side { start + q.limit } else { 0 };
                            (end, &q.events)
                        })
                        .collect(),
                }
            })
            .collect();
        for (v, view) in queries.iter().zip(&plan.views) {
            let needs = view
                .queries
                .iter()
                .map(|q| q.events.max_coordinate())
                .max()
                .unwrap_or(0);
            v.transform.validate_for(shard.dim)?;
            let dim = v.transform.output_dim(shard.dim);
            if needs >= dim {
                return Err(Error::InvalidSamples(format!(
                    "--count-shard {}: view {} reads coordinate {needs} of releases of dimension {dim}: the shard is not the one the plan was made from",
                    shard_path.display(),
                    v.transform
                )));
            }
        }
        let counts = crate::sources::shards::count_shard_views(&shard, offset, &queries)?;
        entries.push(Entry {
            side,
            index,
            counts: counts
                .into_iter()
                .map(|v| v.into_iter().map(|(x, y)| [x, y]).collect())
                .collect(),
        });
    }
    let counts = Counts {
        kind: COUNTS_KIND.into(),
        version: FORMAT_VERSION,
        plan: plan_digest,
        shard: shard_path.to_path_buf(),
        entries,
    };
    let text = serde_json::to_string(&counts)
        .map_err(|e| Error::InvalidConfig(format!("the counts cannot be written ({e})")))?;
    Ok(Outcome {
        stdout: text + "\n",
        code: 0,
        late_error: None,
    })
}

/// Step 3: the counts summed, then the plain test answered from them.
pub(super) fn reduce(a: &TestOptions, plan_path: &Path) -> Result<Outcome> {
    let (plan, plan_digest) = read_plan(plan_path)?;
    let mut sums: Vec<Vec<(u64, u64)>> = plan
        .views
        .iter()
        .map(|v| vec![(0, 0); v.queries.len()])
        .collect();
    // (side, index) → the count file that counted it.
    let mut seen: std::collections::HashMap<(u64, usize), &Path> = std::collections::HashMap::new();
    for file in &a.reduce {
        use crate::sources::text::{JsonReadError, read_json};
        let c: Counts = read_json(file).map_err(|e| match e {
            JsonReadError::Io(e) => Error::InvalidConfig(format!(
                "--reduce {}: cannot be read ({e}); allowed: files printed by audit test --count-shard",
                file.display()
            )),
            JsonReadError::Parse(e) => Error::InvalidConfig(format!(
                "--reduce {}: not the output of audit test --count-shard ({e})",
                file.display()
            )),
        })?;
        if c.kind != COUNTS_KIND || c.version != FORMAT_VERSION {
            return Err(Error::InvalidConfig(format!(
                "--reduce {}: a {:?} of version {}; allowed: a {COUNTS_KIND:?} of version {FORMAT_VERSION}",
                file.display(),
                c.kind,
                c.version
            )));
        }
        if c.plan != plan_digest {
            return Err(Error::InvalidConfig(format!(
                "--reduce {}: counted against another plan (digest {}; {} has digest {}); allowed: counts made with --plan {}",
                file.display(),
                c.plan,
                plan_path.display(),
                plan_digest,
                plan_path.display()
            )));
        }
        for e in &c.entries {
            let shards = match e.side {
                ShardSide::A => &plan.a,
                ShardSide::B => &plan.b,
            };
            let shape_ok = e.index < shards.len()
                && e.counts.len() == plan.views.len()
                && e.counts
                    .iter()
                    .zip(&plan.views)
                    .all(|(c, v)| c.len() == v.queries.len());
            if !shape_ok {
                return Err(Error::InvalidConfig(format!(
                    "--reduce {}: its counts do not fit the plan's shards and queries",
                    file.display()
                )));
            }
            if let Some(prev) = seen.insert((e.side.index(), e.index), file) {
                return Err(Error::InvalidConfig(format!(
                    "--reduce: shard {} (side {}, position {}) is counted twice, in {} and {}; allowed: each shard once",
                    shards[e.index].path.display(),
                    if e.side == ShardSide::A { "a" } else { "b" },
                    e.index,
                    prev.display(),
                    file.display()
                )));
            }
            for (s, c) in sums.iter_mut().zip(&e.counts) {
                for (x, y) in s.iter_mut().zip(c) {
                    x.0 = x.0.checked_add(y[0]).ok_or_else(|| {
                        Error::InvalidConfig(format!(
                            "--reduce {}: counts overflow",
                            file.display()
                        ))
                    })?;
                    x.1 = x.1.checked_add(y[1]).ok_or_else(|| {
                        Error::InvalidConfig(format!(
                            "--reduce {}: counts overflow",
                            file.display()
                        ))
                    })?;
                }
            }
        }
    }
    // Every shard holding a held-out row of some view must be counted.
    for (side, shards) in [(ShardSide::A, &plan.a), (ShardSide::B, &plan.b)] {
        let train = plan
            .views
            .iter()
            .map(|v| v.train[side.index() as usize])
            .min()
            .unwrap_or(0);
        let mut offset = 0usize;
        for (i, s) in shards.iter().enumerate() {
            let held = offset + s.rows > train;
            offset += s.rows;
            if held && !seen.contains_key(&(side.index(), i)) {
                return Err(Error::InvalidConfig(format!(
                    "--reduce: no counts for shard {} (side {}, position {}), which holds held-out releases; count it with audit test --plan {} --count-shard {} and add its output",
                    s.path.display(),
                    if side == ShardSide::A { "a" } else { "b" },
                    i,
                    plan_path.display(),
                    s.path.display()
                )));
            }
        }
    }
    let st = &plan.settings;
    let args = TestOptions {
        samples_a: plan.a.iter().map(|s| s.path.clone()).collect(),
        samples_b: plan.b.iter().map(|s| s.path.clone()).collect(),
        stream: st.stream,
        max_train_rows: st.max_train_rows,
        claim: Some(st.claim.clone()),
        seed: st.seed,
        failure_probability: st.failure_probability,
        tester: st.tester.clone(),
        transform: st.transform.clone(),
        check: st.check.clone(),
        output: a.output.clone(),
        ..TestOptions::default()
    };
    let reduced = Reduced {
        reproduce: plan.reproduce.clone(),
        plan,
        sums,
    };
    run_test(&args, Held::Replay(&reduced))
}
