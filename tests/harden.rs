//! Issue 27, second round of hardening: messages that name the real cause, inputs with a UTF-8
//! byte-order mark, numbers and pairs printed readably, and the paths around a verdict.
//!
//! Exec programs are small Python scripts (python3 is installed by `.ci/run` when missing).

mod util;

use std::path::{Path, PathBuf};

use util::{audit, stderr, stdout};

/// A private directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dp-audit-harden-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(path: &Path, body: &[u8]) -> String {
    std::fs::write(path, body).unwrap();
    path.to_str().unwrap().to_string()
}

/// Laplace sum over the request's records, noise scale `argv[1]`, one release per line.
const LAPLACE_PY: &str = r#"
import json, math, random, sys
req = json.load(sys.stdin)
rng = random.Random(req["seed"])
s = sum(req["dataset"])
scale = float(sys.argv[1])
out = []
for _ in range(req["samples"]):
    u = rng.random() - 0.5
    out.append(repr(s - scale * math.copysign(1, u) * math.log(1 - 2 * abs(u))))
sys.stdout.write(PREFIX + "\n".join(out) + "\n")
"#;

fn laplace(d: &Path, name: &str, prefix: &str) -> String {
    let p = d.join(name);
    let body = LAPLACE_PY.replace("PREFIX", prefix);
    format!("python3 {} 1.0", write(&p, body.as_bytes()))
}

fn exec_fixed(command: &str, pairs: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "run",
        "--exec",
        command,
        "--claim",
        "pure:1",
        "--no-report",
        "--finder",
        "fixed",
        "--pairs",
        pairs,
        "--samples",
        "4000",
        "--transform",
        "none",
        "-q",
    ];
    args.extend_from_slice(extra);
    audit(&args)
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

fn with_bom(text: &str) -> Vec<u8> {
    let mut v = BOM.to_vec();
    v.extend_from_slice(text.as_bytes());
    v
}

/// `--neighbors zero-out` needs a record range holding 0 (the null record): the error names the
/// range, not `--dataset-size`.
#[test]
fn zero_out_with_a_range_without_zero_names_the_range() {
    let d = dir("zero-out");
    let cmd = laplace(&d, "laplace.py", "\"\"");
    for finder in [None, Some("random")] {
        let mut args = vec![
            "run",
            "--exec",
            &cmd,
            "--claim",
            "pure:1",
            "--neighbors",
            "zero-out",
            "--record-range",
            "1:2",
            "--no-report",
            "-q",
        ];
        if let Some(f) = finder {
            args.extend_from_slice(&["--finder", f]);
        }
        let o = audit(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{finder:?}: {err}");
        assert!(
            err.contains("zero-out") && err.contains("[1, 2]") && err.contains("e.g. 0:2"),
            "{finder:?}: {err}"
        );
        assert!(!err.contains("--dataset-size"), "{finder:?}: {err}");
    }
}

/// A byte-order mark at the start of a shard is skipped: the same verdict and JSON as without.
/// One inside a file (shards joined with `cat`) is refused, and the error names the mark.
#[test]
fn a_byte_order_mark_starting_a_shard_is_accepted() {
    let d = dir("bom-shards");
    let a: String = (0..400)
        .map(|i| format!("{}\n", (i % 7) as f64 * 0.25))
        .collect();
    let b: String = (0..400)
        .map(|i| format!("{}\n", (i % 5) as f64 * 0.3))
        .collect();
    let pa = d.join("a.jsonl");
    let pb = d.join("b.jsonl");
    let run = || {
        audit(&[
            "test",
            "--samples-a",
            pa.to_str().unwrap(),
            "--samples-b",
            pb.to_str().unwrap(),
            "--claim",
            "pure:1",
            "--no-report",
            "--json",
        ])
    };
    write(&pa, a.as_bytes());
    write(&pb, b.as_bytes());
    let plain = run();
    assert!(
        matches!(plain.status.code(), Some(0 | 1)),
        "{}",
        stderr(&plain)
    );
    write(&pa, &with_bom(&a));
    write(&pb, &with_bom(&b));
    let marked = run();
    assert_eq!(
        marked.status.code(),
        plain.status.code(),
        "{}",
        stderr(&marked)
    );
    assert_eq!(stdout(&marked), stdout(&plain));
    // A mark inside the file.
    let mut joined = a.clone().into_bytes();
    joined.extend_from_slice(&with_bom(&a));
    write(&pa, &joined);
    let o = run();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("line 401") && err.contains("byte-order mark"),
        "{err}"
    );
}

/// A program whose output starts with a byte-order mark, and `--pairs` / `--typical-data` files
/// starting with one, are read as without it.
#[test]
fn a_byte_order_mark_in_program_output_pairs_and_typical_data_is_accepted() {
    let d = dir("bom-exec");
    let pairs = "{\"first\": [0.5, 0.5], \"second\": [0.5, 0.5, 1.0]}\n";
    let plain_pairs = write(&d.join("pairs.jsonl"), pairs.as_bytes());
    let marked_pairs = write(&d.join("pairs-bom.jsonl"), &with_bom(pairs));
    let plain = laplace(&d, "plain.py", "\"\"");
    let marked = laplace(&d, "bom.py", "\"\\ufeff\"");
    let base = exec_fixed(&plain, &plain_pairs, &["--json"]);
    assert!(
        matches!(base.status.code(), Some(0 | 1)),
        "{}",
        stderr(&base)
    );
    for (cmd, pairs) in [(&marked, &plain_pairs), (&plain, &marked_pairs)] {
        let o = exec_fixed(cmd, pairs, &["--json"]);
        assert_eq!(o.status.code(), base.status.code(), "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let w: serde_json::Value = serde_json::from_slice(&base.stdout).unwrap();
        assert_eq!(v["verdict"], w["verdict"]);
        // The same pair and bounds: the releases were read as without the mark.
        for k in 0..w["confirmations"].as_array().unwrap().len() {
            for field in ["pair", "bounds"] {
                assert_eq!(v["confirmations"][k][field], w["confirmations"][k][field]);
            }
        }
    }
    let typical = write(&d.join("typical.json"), &with_bom("[0.1, 0.5, 0.9, 0.3]"));
    let o = audit(&[
        "run",
        "--exec",
        &plain,
        "--claim",
        "pure:1",
        "--finder",
        "from-data",
        "--typical-data",
        &typical,
        "--trials",
        "2",
        "--search-samples",
        "500",
        "--samples",
        "2000",
        "--confirm",
        "1",
        "--transform",
        "none",
        "--no-report",
        "-q",
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
}

/// `audit report` reads a saved report that starts with a byte-order mark.
#[test]
fn a_byte_order_mark_starting_a_report_file_is_accepted() {
    let d = dir("bom-report");
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--samples",
        "5000",
        "--json",
        "--no-report",
    ]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let mut body = BOM.to_vec();
    body.extend_from_slice(&o.stdout);
    let f = write(&d.join("saved.json"), &body);
    let out = d.join("pages");
    let r = audit(&["report", &f, "--report-dir", out.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(0), "{}", stderr(&r));
}

/// A program that prints a malformed line and then gets a broken pipe (dp-audit closed its
/// stdout at that line) is reported by the malformed line, without an exit status or the
/// traceback of the broken pipe our own close caused.
#[test]
fn a_malformed_line_leads_and_our_broken_pipe_is_left_out() {
    let d = dir("broken-pipe");
    let p = write(
        &d.join("garbage.py"),
        b"import json, sys\nr = json.load(sys.stdin)\nsys.stderr.write('starting\\n')\nprint('hello', flush=True)\nfor i in range(2000000):\n    print(1.0, flush=(i % 1000 == 0))\n",
    );
    let pairs = write(
        &d.join("pairs.jsonl"),
        b"{\"first\": [0.5], \"second\": [0.5, 1.0]}\n",
    );
    let o = exec_fixed(&format!("python3 {p}"), &pairs, &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("line 1 is not a JSON number"), "{err}");
    assert!(!err.contains("exited with"), "{err}");
    assert!(
        !err.contains("Traceback") && !err.contains("BrokenPipeError"),
        "{err}"
    );
    // What the program wrote before is kept.
    assert!(err.contains("starting"), "{err}");
    assert!(err.contains("broken-pipe error, left out"), "{err}");
}

/// Extreme records and claim parameters print briefly (1e308, not 309 digits; 1e-300, not 300
/// zeros), and the pair display shows the record that differs even after 8 equal ones.
#[test]
fn extreme_numbers_and_long_pairs_print_readably() {
    let d = dir("readable");
    let cmd = laplace(&d, "laplace.py", "\"\"");
    let pairs = write(
        &d.join("pairs.jsonl"),
        b"{\"first\": [1e308, -1e308, 0.5], \"second\": [1e308, -1e308, 0.5, 1e-300]}\n",
    );
    let o = exec_fixed(&cmd, &pairs, &["--record-range=-1e308:1e308"]);
    let text = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(
        text.contains("D' = [1e308, -1e308, 0.5, 1e-300] (4 records)"),
        "{text}"
    );
    assert!(!text.contains("0000000000"), "{text}");

    let ten: Vec<String> = vec!["0.5".to_string(); 10];
    let line = format!(
        "{{\"first\": [{}], \"second\": [{}, 1]}}\n",
        ten.join(", "),
        ten.join(", ")
    );
    let pairs = write(&d.join("long.jsonl"), line.as_bytes());
    let o = exec_fixed(&cmd, &pairs, &[]);
    let text = stdout(&o);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    assert!(
        text.contains("D' = [0.5, 0.5, … 8 shared records …, 1] (11 records)"),
        "{text}"
    );

    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--claim",
        "approx:1:1e300",
        "--no-report",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("delta = 1e300"), "{err}");
    let o = audit(&[
        "run",
        "--mechanism",
        "laplace-sum",
        "--claim",
        "pure:1e-300",
        "--samples",
        "5000",
        "--no-report",
        "-q",
    ]);
    let text = stdout(&o);
    assert!(text.contains("claim        pure:1e-300"), "{text}");
    assert!(!text.contains("0000000000"), "{text}");
}
