//! A test counted shard by shard (`audit test --plan-out`, `--count-shard`, `--reduce`; see
//! docs/test.md, "Counting shards as tasks") prints the same bytes as the plain `audit test` on
//! the same shards, at any thread count; bad steps are refused (exit 2, naming the value and
//! what is allowed); and the Dask example counts the shards as tasks on a LocalCluster with the
//! same result.
//!
//! Nothing here is a statistical test with a false-failure rate: the comparisons are exact
//! (the same record bytes from the same rows and seed), and the shards are drawn from fixed
//! seeds.

mod util;

use std::path::{Path, PathBuf};
use std::process::Output;

use util::{audit, stderr, stdout};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!(
        "dp-audit-shard-counts-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `audit sample --mechanism ID [--param P] --side SIDE --samples N --seed 5 --shard-index I
/// --out OUT`, which must succeed.
fn sample(mechanism: &str, params: &[&str], side: &str, n: usize, index: usize, out: &Path) {
    let (n, index) = (n.to_string(), index.to_string());
    let mut args = vec!["sample", "--mechanism", mechanism];
    for p in params {
        args.extend(["--param", p]);
    }
    args.extend(["--side", side, "--samples", &n, "--seed", "5"]);
    args.extend(["--shard-index", &index, "--out", out.to_str().unwrap()]);
    let o = audit(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Shards of `mechanism` with the given sizes per side, named `stem.SIDE.K.EXT`: (a, b).
fn shards(
    d: &Path,
    stem: &str,
    mechanism: &str,
    params: &[&str],
    sizes: &[usize],
    ext: &str,
) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut sides = (Vec::new(), Vec::new());
    for side in ["a", "b"] {
        for (k, &n) in sizes.iter().enumerate() {
            let out = d.join(format!("{stem}.{side}.{k}.{ext}"));
            sample(mechanism, params, side, n, k, &out);
            if side == "a" {
                sides.0.push(out);
            } else {
                sides.1.push(out);
            }
        }
    }
    sides
}

/// `--samples-a A… --samples-b B… EXTRA…`.
fn test_args(a: &[PathBuf], b: &[PathBuf], extra: &[&str]) -> Vec<String> {
    let mut args = Vec::new();
    for p in a {
        args.extend(["--samples-a".to_string(), p.display().to_string()]);
    }
    for p in b {
        args.extend(["--samples-b".to_string(), p.display().to_string()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run(args: &[String]) -> Output {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    audit(&refs)
}

/// `audit test ARGS OUTPUT`.
fn plain(args: &[String], output: &[&str]) -> Output {
    let mut all = vec!["test".to_string()];
    all.extend(args.iter().cloned());
    all.extend(output.iter().map(|s| s.to_string()));
    run(&all)
}

/// The plan of `audit test ARGS` written to `plan`; every step must succeed.
fn make_plan(args: &[String], plan: &Path) {
    let mut all = vec!["test".to_string()];
    all.extend(args.iter().cloned());
    all.extend(["--plan-out".to_string(), plan.display().to_string()]);
    let o = run(&all);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// `audit test --plan PLAN --count-shard SHARD` written to `out`.
fn count(plan: &Path, shard: &Path, out: &Path, jobs: &str) -> Output {
    let o = audit(&[
        "test",
        "--plan",
        plan.to_str().unwrap(),
        "--count-shard",
        shard.to_str().unwrap(),
        "--jobs",
        jobs,
    ]);
    if o.status.code() == Some(0) {
        std::fs::write(out, &o.stdout).unwrap();
    }
    o
}

/// `audit test --plan PLAN OUTPUT --reduce COUNTS…`.
fn reduce(plan: &Path, output: &[&str], counts: &[PathBuf]) -> Output {
    let mut all = vec![
        "test".to_string(),
        "--plan".to_string(),
        plan.display().to_string(),
    ];
    all.extend(output.iter().map(|s| s.to_string()));
    all.push("--reduce".to_string());
    all.extend(counts.iter().map(|p| p.display().to_string()));
    run(&all)
}

/// The three steps on the shards of `args` (every distinct shard counted once, alternating
/// 1 and 2 threads): the reduce step's output.
fn counted(d: &Path, name: &str, args: &[String], shards: &[PathBuf], output: &[&str]) -> Output {
    let plan = d.join(format!("{name}.plan.json"));
    make_plan(args, &plan);
    let mut distinct: Vec<&PathBuf> = Vec::new();
    for s in shards {
        if !distinct.contains(&s) {
            distinct.push(s);
        }
    }
    let mut files = Vec::new();
    for (k, s) in distinct.iter().enumerate() {
        let out = d.join(format!("{name}.counts.{k}.json"));
        let o = count(&plan, s, &out, if k % 2 == 0 { "1" } else { "2" });
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        files.push(out);
    }
    reduce(&plan, output, &files)
}

/// A text shard without provenance (so it may be given on both sides): `n` pseudo-random
/// values from a fixed linear congruential sequence.
fn plain_text_shard(path: &Path, n: usize) {
    let mut x: u64 = 12345;
    let mut text = String::new();
    for _ in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        text += &format!("{}\n", (x >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0);
    }
    std::fs::write(path, text).unwrap();
}

/// Plan, count and reduce give the plain test's bytes: both layers and one; a violation and a
/// pass; point, approximate (with the ε-estimate stage) and profile claims; binary and
/// compressed text shards; shard boundaries before, at and after the training/held-out
/// boundary (a shard wholly in the training rows too); 1-dimensional and 4-dimensional
/// releases (the learned score); the variational tester; the same file on both sides (a null
/// test, one count file for two places); and the text output as well as the JSON record. The
/// plain test gives the same bytes at 1 and 2 threads.
#[test]
fn plan_count_reduce_equals_plain_test() {
    let d = dir("equal");
    // 3 × 30 000 per side: the 18 000 training rows end inside the first shard.
    let (la, lb) = shards(
        &d,
        "l",
        "laplace-sum-ignores-range",
        &[],
        &[30_000, 30_000, 30_000],
        "bin",
    );
    // 5 000 + 40 000 + 20 000 per side: the first shard is wholly training rows (13 000).
    let (ga, gb) = shards(
        &d,
        "g",
        "gaussian-sum-analytic",
        &[],
        &[5_000, 40_000, 20_000],
        "jsonl.gz",
    );
    let (ha, hb) = shards(&d, "h", "noisy-histogram", &[], &[20_000, 20_000], "bin");
    let null = d.join("null.jsonl");
    plain_text_shard(&null, 20_000);
    let cases: Vec<(&str, Vec<String>, Vec<PathBuf>, i32)> = vec![
        (
            "layers-violation",
            test_args(&la, &lb, &["--claim", "pure:1"]),
            [la.clone(), lb.clone()].concat(),
            1,
        ),
        (
            "float-repr-small-train",
            test_args(
                &la,
                &lb,
                &[
                    "--claim",
                    "pure:1",
                    "--transform",
                    "float-repr",
                    "--max-train-rows",
                    "5000",
                    "--seed",
                    "9",
                ],
            ),
            [la.clone(), lb.clone()].concat(),
            -1,
        ),
        (
            "approx-estimate",
            test_args(&ga, &gb, &["--claim", "approx:1:1e-5", "--seed", "2"]),
            [ga.clone(), gb.clone()].concat(),
            -1,
        ),
        (
            "gdp-profile-4d",
            test_args(&ha, &hb, &["--claim", "gdp:1", "--check", "mechanism"]),
            [ha.clone(), hb.clone()].concat(),
            -1,
        ),
        (
            "variational",
            test_args(
                &ha,
                &hb,
                &[
                    "--claim",
                    "pure:1",
                    "--tester",
                    "hockey-stick-variational",
                    "--check",
                    "mechanism",
                ],
            ),
            [ha.clone(), hb.clone()].concat(),
            -1,
        ),
        (
            "null-same-file",
            test_args(
                std::slice::from_ref(&null),
                std::slice::from_ref(&null),
                &["--claim", "pure:0.5", "--check", "mechanism"],
            ),
            vec![null.clone(), null.clone()],
            0,
        ),
    ];
    for (name, args, files, expect) in &cases {
        let json = ["--json", "--no-report"];
        let p1 = plain(args, &[&json[..], &["--jobs", "1"]].concat());
        let p2 = plain(args, &[&json[..], &["--jobs", "2"]].concat());
        let code = p1.status.code().unwrap();
        assert!(code == 0 || code == 1, "{name}: {}", stderr(&p1));
        if *expect >= 0 {
            assert_eq!(code, *expect, "{name}: {}", stdout(&p1));
        }
        assert_eq!(stdout(&p1), stdout(&p2), "{name}: 1 and 2 threads differ");
        assert_eq!(p2.status.code(), Some(code), "{name}");
        let c = counted(&d, name, args, files, &json);
        assert_eq!(c.status.code(), Some(code), "{name}: {}", stderr(&c));
        assert_eq!(
            stdout(&c),
            stdout(&p1),
            "{name}: the counted test printed other bytes"
        );
        // No --jobs in the record's reproduce line: it is the plain command.
        assert!(!stdout(&c).contains("--jobs"), "{name}");
    }
    // The text output too.
    let (name, args, files, _) = &cases[0];
    let text = ["--no-report"];
    let p = plain(args, &text);
    let c = counted(&d, &format!("{name}-text"), args, files, &text);
    assert_eq!(stdout(&c), stdout(&p));
    assert!(
        stdout(&p).contains("===== layer: floating-point"),
        "{}",
        stdout(&p)
    );
    let _ = std::fs::remove_dir_all(&d);
}

/// `stderr` names `what` and the exit code is 2, with nothing on stdout.
fn refused(o: &Output, what: &[&str]) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    for w in what {
        assert!(e.contains(w), "{w:?} not in: {e}");
    }
    assert!(stdout(o).is_empty(), "{}", stdout(o));
}

/// Bad steps, each refused with exit 2 and a message naming the value and what is allowed:
/// a shard's counts missing or given twice, counts of another plan, a shard not in the plan,
/// a shard changed since the plan, a file that is not a plan, --plan without a step, test flags
/// given again with --plan, an in-memory tester or a Bayesian claim with --plan-out, --jobs 0.
#[test]
fn bad_steps_are_refused() {
    let d = dir("refused");
    let (a, b) = shards(
        &d,
        "s",
        "laplace-sum-ignores-range",
        &[],
        &[10_000, 10_000],
        "bin",
    );
    let args = test_args(&a, &b, &["--claim", "pure:1"]);
    let plan = d.join("plan.json");
    make_plan(&args, &plan);
    let counts: Vec<PathBuf> = [&a[..], &b[..]]
        .concat()
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let out = d.join(format!("c{k}.json"));
            let o = count(&plan, s, &out, "1");
            assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
            out
        })
        .collect();
    let full = reduce(&plan, &["--json", "--no-report"], &counts);
    assert_eq!(full.status.code(), Some(1), "{}", stderr(&full));
    // A shard missing, and one counted twice.
    refused(
        &reduce(&plan, &["--no-report"], &counts[..3]),
        &[
            "no counts for shard",
            b[1].to_str().unwrap(),
            "--count-shard",
        ],
    );
    refused(
        &reduce(
            &plan,
            &["--no-report"],
            &[&counts[..], &counts[..1]].concat(),
        ),
        &[
            "counted twice",
            a[0].to_str().unwrap(),
            "allowed: each shard once",
        ],
    );
    // Counts of another plan (another seed).
    let other = d.join("other.json");
    make_plan(
        &test_args(&a, &b, &["--claim", "pure:1", "--seed", "1"]),
        &other,
    );
    let foreign = d.join("foreign.json");
    assert_eq!(count(&other, &a[0], &foreign, "1").status.code(), Some(0));
    refused(
        &reduce(
            &plan,
            &["--no-report"],
            &[&counts[1..], &[foreign]].concat(),
        ),
        &[
            "counted against another plan",
            "allowed: counts made with --plan",
        ],
    );
    // A shard that is not in the plan.
    let stranger = d.join("stranger.bin");
    sample("laplace-sum", &[], "a", 1000, 7, &stranger);
    refused(
        &count(&plan, &stranger, &d.join("x.json"), "1"),
        &["stranger.bin", "not a shard of the plan", "allowed: one of"],
    );
    // A shard rewritten (fewer releases) after the plan.
    let changed = d.join("changed.plan.json");
    let copy = d.join("copy.a.0.bin");
    std::fs::copy(&a[0], &copy).unwrap();
    make_plan(
        &test_args(
            std::slice::from_ref(&copy),
            std::slice::from_ref(&b[0]),
            &["--claim", "pure:1"],
        ),
        &changed,
    );
    std::fs::remove_file(&copy).unwrap();
    sample("laplace-sum-ignores-range", &[], "a", 9_000, 0, &copy);
    refused(
        &count(&changed, &copy, &d.join("y.json"), "1"),
        &["copy.a.0.bin", "changed since the plan was made"],
    );
    // Not a plan; --plan alone; test flags again with --plan.
    let junk = d.join("junk.json");
    std::fs::write(&junk, "{\"hello\": 1}\n").unwrap();
    refused(
        &count(&junk, &a[0], &d.join("z.json"), "1"),
        &["junk.json", "not a plan written by audit test --plan-out"],
    );
    refused(
        &audit(&["test", "--plan", plan.to_str().unwrap()]),
        &["alone", "allowed: --plan FILE --count-shard SHARD"],
    );
    refused(
        &audit(&[
            "test",
            "--plan",
            plan.to_str().unwrap(),
            "--claim",
            "pure:2",
            "--reduce",
            counts[0].to_str().unwrap(),
        ]),
        &["--claim"],
    );
    // --plan-out: an in-memory tester, a Bayesian claim, --in-memory; --jobs 0.
    let out = d.join("never.json");
    let mut mmd = vec!["test".to_string()];
    mmd.extend(test_args(&a, &b, &["--claim", "pure:1", "--tester", "mmd"]));
    mmd.extend(["--plan-out".into(), out.display().to_string()]);
    refused(
        &run(&mmd),
        &["--plan-out", "mmd", "read their samples in memory"],
    );
    let mut bdp = vec!["test".to_string()];
    bdp.extend(test_args(&a, &b, &["--claim", "bdp:1:1e-5"]));
    bdp.extend(["--plan-out".into(), out.display().to_string()]);
    refused(&run(&bdp), &["--plan-out", "Bayesian"]);
    let mut mem = vec!["test".to_string()];
    mem.extend(test_args(&a, &b, &["--claim", "pure:1", "--in-memory"]));
    mem.extend(["--plan-out".into(), out.display().to_string()]);
    refused(&run(&mem), &["--plan-out", "--in-memory"]);
    assert!(!out.exists());
    let mut zero = vec!["test".to_string()];
    zero.extend(test_args(&a, &b, &["--claim", "pure:1", "--jobs", "0"]));
    refused(&run(&zero), &["--jobs 0", "allowed"]);
    let _ = std::fs::remove_dir_all(&d);
}

/// The Dask example counts every shard as a task on a LocalCluster of 2 worker processes and
/// reduces the counts to the bytes of the plain `audit test` (examples/dask/test_shards.py
/// --compare, which exits 3 when they differ); run_audit.py --count-on-cluster samples and
/// tests a buggy entry that way (exit 1). Dask is installed by tests/util/install-dask.sh when
/// missing (pip, about 40 MB); when that fails, the test is skipped and says why. About 10 s.
#[test]
fn dask_counts_shards_as_tasks() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let install = std::process::Command::new("bash")
        .arg(root.join("tests/util/install-dask.sh"))
        .output()
        .expect("bash runs");
    if !install.status.success() {
        eprintln!(
            "SKIPPED dask_counts_shards_as_tasks: dask.distributed is not importable and tests/util/install-dask.sh could not install it:\n{}",
            String::from_utf8_lossy(&install.stderr)
        );
        return;
    }
    eprintln!("{}", String::from_utf8_lossy(&install.stdout).trim());
    let d = dir("dask");
    let (a, b) = shards(
        &d,
        "k",
        "laplace-sum-ignores-range",
        &[],
        &[20_000, 20_000, 20_000, 20_000],
        "bin",
    );
    let args = test_args(&a, &b, &["--claim", "pure:1", "--json", "--no-report"]);
    let bin = env!("CARGO_BIN_EXE_audit");
    let o = std::process::Command::new("python3")
        .arg(root.join("examples/dask/test_shards.py"))
        .args(["--audit", bin, "--workers", "2", "--compare", "--"])
        .args(&args)
        .output()
        .unwrap();
    eprintln!("{}", stderr(&o));
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("the same bytes"), "{}", stderr(&o));
    assert_eq!(stdout(&o), stdout(&plain(&args, &[])));
    let o = std::process::Command::new("python3")
        .arg(root.join("examples/dask/run_audit.py"))
        .args(["--audit", bin, "--mechanism", "laplace-sum-ignores-range"])
        .args(["--samples", "10000", "--shards", "4", "--workers", "2"])
        .arg("--count-on-cluster")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}\n{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["test"], "counted on the cluster");
    assert_eq!(v["verdict"], "violation");
    let _ = std::fs::remove_dir_all(&d);
}
