//! Byte identity of every mode: a fixed set of runs (each mode of `audit`, each tester, the output
//! views, the report re-render, the accountants, bad input) whose stdout, stderr, exit code,
//! records (`audit.json`, wall-time fields blanked) and pages (`index.html`, PNG figures: by size
//! and hash) must match the goldens in `tests/golden/`, byte for byte.
//!
//! A refactoring keeps this test green. A change that means to change an output blesses the
//! goldens on purpose and shows the diff in its commit:
//!
//! ```text
//! DP_AUDIT_BLESS=1 cargo test --release --test byte_identity
//! git diff tests/golden/
//! ```
//!
//! Every run has a fixed seed and fixed sample sizes and none is paced by a budget (a paced search
//! depends on the clock), so its output is a function of the code alone, on any thread count.
//! Paths in the outputs are relative to the repository root (cargo runs the test there).

mod util;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the runs write their reports and shards (relative, so the paths the outputs print are
/// the same on every machine).
const WORK: &str = "target/byte-identity";

/// One run: a name (its golden is `tests/golden/NAME.txt`) and the arguments; `{dir}` in an
/// argument becomes the run's own folder under [`WORK`].
struct Case {
    name: &'static str,
    args: &'static [&'static str],
}

const fn case(name: &'static str, args: &'static [&'static str]) -> Case {
    Case { name, args }
}

/// The runs, in order (a later run may read an earlier one's files: the shards, the saved record).
const CASES: &[Case] = &[
    case("list", &["list"]),
    case("describe", &["describe", "dpsgd-scaled-noise"]),
    // The fixed-pair runner, each tester, text and JSON, with pages.
    case(
        "run-correct",
        &[
            "run",
            "--mechanism",
            "laplace-sum",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    case(
        "run-buggy-json",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--samples",
            "20000",
            "--json",
            "--report-dir",
            "{dir}",
        ],
    ),
    case(
        "run-renyi",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--tester",
            "renyi",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    case(
        "run-mmd",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--tester",
            "mmd",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    case(
        "run-histogram",
        &[
            "run",
            "--mechanism",
            "histogram-scale-epsilon",
            "--tester",
            "histogram",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    // A privacy profile (the δ(ε) figure) and the ledger's claim.
    case(
        "run-profile",
        &[
            "run",
            "--mechanism",
            "gaussian-sum-analytic",
            "--claim",
            "gdp:0.1",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    case(
        "run-dpsgd",
        &[
            "run",
            "--mechanism",
            "dpsgd-scaled-noise",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    // The floating-point layer's view (float bits).
    case(
        "run-float",
        &[
            "run",
            "--mechanism",
            "laplace-sum-coarse-noise",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    // The searched run: a finder, then confirmations on separate samples.
    case(
        "run-search",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--finder",
            "random",
            "--trials",
            "4",
            "--search-samples",
            "2000",
            "--confirm",
            "1",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    case(
        "run-portfolio-json",
        &[
            "run",
            "--mechanism",
            "dpsgd-microbatches-add-remove",
            "--finder",
            "portfolio",
            "--trials",
            "6",
            "--search-samples",
            "2000",
            "--confirm",
            "2",
            "--samples",
            "20000",
            "--json",
            "--no-report",
        ],
    ),
    // A program through the exec protocol: the two-layer search with fixed trials.
    case(
        "run-exec",
        &[
            "run",
            "--exec",
            "python3 examples/exec/textbook_laplace_sum.py",
            "--claim",
            "pure:1",
            "--record-range",
            "-5:5",
            "--dataset-size",
            "10",
            "--trials",
            "4",
            "--search-samples",
            "2000",
            "--confirm",
            "1",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    // The sequential audit and the Bayesian audit.
    case(
        "run-sequential",
        &[
            "run",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--sequential",
            "--report-dir",
            "{dir}",
        ],
    ),
    case(
        "run-bayesian",
        &[
            "run",
            "--mechanism",
            "bdp-gaussian-sum-excludes-outliers",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    // One training run with canaries.
    case(
        "one-run",
        &[
            "one-run",
            "--canaries",
            "1000",
            "--param",
            "noise_scale=0.3",
            "--report-dir",
            "{dir}",
        ],
    ),
    case(
        "one-run-json",
        &[
            "one-run",
            "--canaries",
            "1000",
            "--threat-model",
            "black-box",
            "--json",
            "--no-report",
        ],
    ),
    // A sweep over one parameter.
    case(
        "sweep",
        &[
            "sweep",
            "--mechanism",
            "dpsgd",
            "--param",
            "noise_scale=0.5:1.0:0.25",
            "--repeats",
            "2",
            "--samples",
            "20000",
            "--report-dir",
            "{dir}",
        ],
    ),
    // The accountants: DP-SGD's ε, the noise for a target ε, a ledger, Bayesian DP.
    case(
        "accountant",
        &[
            "accountant",
            "--sampling-rate",
            "0.01",
            "--noise-multiplier",
            "1.1",
            "--steps",
            "100",
            "--delta",
            "1e-5",
        ],
    ),
    case(
        "accountant-json",
        &[
            "accountant",
            "--sampling-rate",
            "0.01",
            "--noise-multiplier",
            "1.1",
            "--steps",
            "100",
            "--delta",
            "1e-5",
            "--json",
        ],
    ),
    case(
        "accountant-full-batch",
        &[
            "accountant",
            "--sampling-rate",
            "1",
            "--noise-multiplier",
            "2",
            "--steps",
            "10",
            "--delta",
            "1e-5",
        ],
    ),
    case(
        "accountant-target",
        &[
            "accountant",
            "--sampling-rate",
            "0.01",
            "--steps",
            "100",
            "--delta",
            "1e-5",
            "--target-epsilon",
            "2",
        ],
    ),
    case(
        "accountant-fixed-size",
        &[
            "accountant",
            "--sampling-rate",
            "0.25",
            "--noise-multiplier",
            "1",
            "--steps",
            "4",
            "--delta",
            "1e-5",
            "--policy",
            "fixed-size",
            "--neighbors",
            "replace-one",
        ],
    ),
    case(
        "accountant-ledger",
        &[
            "accountant",
            "--ledger",
            "examples/ledger/dpsgd.jsonl",
            "--delta",
            "1e-5",
        ],
    ),
    case(
        "accountant-bayesian",
        &[
            "accountant",
            "--bayesian",
            "--data",
            "examples/bdp-data-small.txt",
            "--sampling-rate",
            "0.01",
            "--noise-multiplier",
            "1.1",
            "--steps",
            "100",
            "--delta",
            "1e-5",
        ],
    ),
    // Shards: written by `audit sample`, tested by `audit test` (plain, sequential, JSON).
    case(
        "sample-a",
        &[
            "sample",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--side",
            "a",
            "--shard-index",
            "0",
            "--samples",
            "20000",
            "--out",
            "target/byte-identity/shards/a.jsonl",
        ],
    ),
    case(
        "sample-b",
        &[
            "sample",
            "--mechanism",
            "laplace-sum-ignores-range",
            "--side",
            "b",
            "--shard-index",
            "0",
            "--samples",
            "20000",
            "--out",
            "target/byte-identity/shards/b.jsonl",
        ],
    ),
    case(
        "test",
        &[
            "test",
            "--samples-a",
            "target/byte-identity/shards/a.jsonl",
            "--samples-b",
            "target/byte-identity/shards/b.jsonl",
            "--claim",
            "pure:1",
            "--report-dir",
            "{dir}",
        ],
    ),
    case(
        "test-json",
        &[
            "test",
            "--samples-a",
            "target/byte-identity/shards/a.jsonl",
            "--samples-b",
            "target/byte-identity/shards/b.jsonl",
            "--claim",
            "approx:1:1e-5",
            "--json",
            "--no-report",
        ],
    ),
    case(
        "test-sequential",
        &[
            "test",
            "--samples-a",
            "target/byte-identity/shards/a.jsonl",
            "--samples-b",
            "target/byte-identity/shards/b.jsonl",
            "--claim",
            "pure:1",
            "--sequential",
            "--no-report",
        ],
    ),
    // A saved record re-rendered as a page.
    case(
        "report",
        &[
            "report",
            "target/byte-identity/run-buggy-json.stdout",
            "--report-dir",
            "{dir}",
        ],
    ),
    // Bad input: a clear error and exit code 2.
    case(
        "bad-samples",
        &["run", "--mechanism", "laplace-sum", "--samples", "-3"],
    ),
    case(
        "bad-mechanism",
        &["run", "--mechanism", "no-such-mechanism"],
    ),
    case(
        "bad-policy",
        &[
            "accountant",
            "--sampling-rate",
            "0.25",
            "--noise-multiplier",
            "1",
            "--steps",
            "4",
            "--delta",
            "1e-5",
            "--policy",
            "fixed-size",
        ],
    ),
    case(
        "bad-claim",
        &["run", "--mechanism", "laplace-sum", "--claim", "pure:-1"],
    ),
];

/// FNV-1a, 64 bits: a fingerprint of a page or figure, to compare bytes without storing them.
/// Written out (eight lines) rather than adding a hashing crate for a test: it is not a security
/// hash, only a change detector.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A record with its wall-clock fields blanked (the only part of a run that is not a function of
/// the code): every `"…_seconds": number` whose key names wall time.
fn blank_wall_time(text: &str) -> String {
    text.lines()
        .map(|line| {
            let t = line.trim_start();
            if t.starts_with("\"wall_time_seconds\":") {
                let indent = &line[..line.len() - t.len()];
                let comma = if t.ends_with(',') { "," } else { "" };
                format!("{indent}\"wall_time_seconds\": \"(blanked)\"{comma}")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` with every duration blanked: a number followed by ` s`, ` ms` or ` µs` (a wall time in
/// the text and on the pages, e.g. `time 0.03 s`) becomes `(t) s`. Hand-written rather than a
/// regex dependency for one pattern.
fn blank_durations(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let starts_number =
            chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_alphanumeric());
        if starts_number {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                j += 1;
            }
            let rest: String = chars[j..chars.len().min(j + 4)].iter().collect();
            let unit = [" s", " ms", " µs"].into_iter().find(|u| {
                rest.starts_with(u)
                    && chars
                        .get(j + u.chars().count())
                        .is_none_or(|c| !c.is_alphanumeric())
            });
            if unit.is_some() {
                out.push_str("(t)");
            } else {
                out.extend(&chars[i..j]);
            }
            i = j;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// Every file under `dir`, sorted, as paths relative to `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Runs one case and writes what it produced as the golden's text.
fn observe(case: &Case) -> String {
    let dir = format!("{WORK}/{}", case.name);
    let _ = std::fs::remove_dir_all(&dir);
    let args: Vec<String> = case.args.iter().map(|a| a.replace("{dir}", &dir)).collect();
    let bin = std::env::var_os("DP_AUDIT_BIN")
        .unwrap_or_else(|| std::ffi::OsString::from(env!("CARGO_BIN_EXE_audit")));
    let o = Command::new(bin)
        .args(&args)
        .env("RAYON_NUM_THREADS", "2")
        .output()
        .expect("the audit binary runs");
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    std::fs::write(format!("{WORK}/{}.stdout", case.name), &stdout).unwrap();
    let mut g = String::new();
    writeln!(
        g,
        "# audit {}",
        shlex::try_join(args.iter().map(String::as_str)).unwrap()
    )
    .unwrap();
    writeln!(g, "exit: {}", o.status.code().unwrap_or(-1)).unwrap();
    writeln!(g, "--- stdout").unwrap();
    writeln!(g, "{}", blank_durations(&blank_wall_time(&stdout))).unwrap();
    writeln!(g, "--- stderr").unwrap();
    writeln!(g, "{}", String::from_utf8_lossy(&o.stderr)).unwrap();
    let files = files_under(Path::new(&dir));
    if !files.is_empty() {
        writeln!(g, "--- files").unwrap();
    }
    for rel in &files {
        let bytes = std::fs::read(Path::new(&dir).join(rel)).unwrap();
        let name = rel.to_string_lossy();
        if name.ends_with("audit.json") {
            writeln!(g, "--- {name}").unwrap();
            writeln!(g, "{}", blank_wall_time(&String::from_utf8_lossy(&bytes))).unwrap();
        } else if name.ends_with(".html") {
            let page = blank_durations(&String::from_utf8_lossy(&bytes));
            let b = page.as_bytes();
            writeln!(
                g,
                "{name}  {} bytes (durations blanked)  fnv1a {:016x}",
                b.len(),
                fnv1a(b)
            )
            .unwrap();
        } else {
            writeln!(
                g,
                "{name}  {} bytes  fnv1a {:016x}",
                bytes.len(),
                fnv1a(&bytes)
            )
            .unwrap();
        }
    }
    g
}

#[test]
fn every_mode_is_byte_identical_to_its_golden() {
    let bless = std::env::var_os("DP_AUDIT_BLESS").is_some();
    let golden_dir = Path::new("tests/golden");
    let mut differ = Vec::new();
    let _ = std::fs::remove_dir_all(WORK);
    std::fs::create_dir_all(format!("{WORK}/shards")).unwrap();
    for case in CASES {
        let got = observe(case);
        let path = golden_dir.join(format!("{}.txt", case.name));
        if bless {
            std::fs::create_dir_all(golden_dir).unwrap();
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if got != want {
            let actual = format!("{WORK}/{}.actual.txt", case.name);
            std::fs::write(&actual, &got).unwrap();
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .map_or_else(
                    || "one is a prefix of the other".to_string(),
                    |i| {
                        format!(
                            "line {}: golden `{}`, now `{}`",
                            i + 1,
                            want.lines().nth(i).unwrap_or(""),
                            got.lines().nth(i).unwrap_or("")
                        )
                    },
                );
            differ.push(format!(
                "{}: differs from {} ({line}); now in {actual}",
                case.name,
                path.display()
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} runs changed their output (diff the golden against the file named; \
         DP_AUDIT_BLESS=1 rewrites the goldens when the change is meant):\n{}",
        differ.len(),
        CASES.len(),
        differ.join("\n")
    );
}
