//! Large datasets through the exec protocol (issue 13): datasets of 4096 and 10^6 records are
//! accepted by the exec domain, travel to the program bit-exactly (also at extreme magnitudes,
//! -0.0 and subnormals), and a program that rejects its dataset is shown with its stderr.

use std::path::PathBuf;
use std::time::Duration;

use dp_audit::sources::exec::{ExecMechanism, MAX_DATASET_VALUES};
use dp_audit::{Dataset, Mechanism, Neighboring, RecordDomain};
use rand::SeedableRng;

fn script(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dp-audit-exec-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn exec(command: &str, domain: RecordDomain, probe: &Dataset) -> Result<ExecMechanism, String> {
    ExecMechanism::new(
        command,
        "pure:1".parse().unwrap(),
        Neighboring::AddRemove,
        domain,
        Duration::from_secs(120),
        probe,
    )
    .map_err(|e| e.to_string())
}

/// Echoes the first `samples` records of its dataset, one per line, in Python's shortest
/// round-trip `repr`.
const ECHO_PY: &str = "import json, sys\nr = json.load(sys.stdin)\n\
                       print('\\n'.join(map(repr, r['dataset'][:r['samples']])))\n";

#[test]
fn exec_domain_takes_large_datasets() {
    let d = ExecMechanism::domain(0.0, 1.0, 1);
    assert!(d.max_size >= 1_000_000, "{d:?}");
    assert_eq!(d.max_size, MAX_DATASET_VALUES);
    assert_eq!(ExecMechanism::domain(0.0, 1.0, 10).max_size, 1_000_000);
    d.validate().unwrap();
    // `--dataset-size 4096`: the probe the CLI builds (midpoint records) is accepted and sent.
    let p = script("echo.py", ECHO_PY);
    let probe = Dataset::scalars(vec![0.5; 4096]).unwrap();
    let m = exec(&format!("python3 {}", p.display()), d, &probe).unwrap();
    assert_eq!(m.output_dim(), 1);
    // Above the cap: refused, naming the size and what is allowed.
    let too_big = Dataset::scalars(vec![0.5; MAX_DATASET_VALUES + 1]).unwrap();
    let e = d.check(&too_big).unwrap_err().to_string();
    assert!(
        e.contains(&format!("{}", MAX_DATASET_VALUES + 1)) && e.contains("0 to 10000000"),
        "{e}"
    );
}

/// 10^6 records, the first ones hard cases for printing and parsing, the rest random bit
/// patterns over the whole f64 range: the program echoes them back, and every release has the
/// bits of its record.
#[test]
fn a_million_records_travel_bit_exactly() {
    let mut values = vec![
        4503599627370496.0 + 0.3, // 2^52 + 0.3 rounds to 2^52
        4503599627370495.5,       // 2^52 − 0.5: the last half-integer
        9007199254740993.0,       // 2^53 + 1 rounds to 2^53
        1e300,
        -1e300,
        -0.0,
        0.0,
        5e-324,
        -5e-324,
        2.225_073_858_507_201e-308, // largest subnormal
        f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        0.1,
        1.0 / 3.0,
        123456789012345680000.0,
    ];
    let mut bits = 0x2545_F491_4F6C_DD1Du64;
    while values.len() < 1_000_000 {
        bits = bits
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let v = f64::from_bits(bits);
        if v.is_finite() {
            values.push(v);
        }
    }
    let domain = ExecMechanism::domain(f64::MIN, f64::MAX, 1);
    let dataset = Dataset::scalars(values.clone()).unwrap();
    let p = script("echo.py", ECHO_PY);
    let m = exec(&format!("python3 {}", p.display()), domain, &dataset).unwrap();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let s = m.sample(&dataset, values.len(), &mut rng).unwrap();
    assert_eq!(s.n(), values.len());
    for (i, v) in values.iter().enumerate() {
        let got = s.values()[[i, 0]];
        assert_eq!(
            got.to_bits(),
            v.to_bits(),
            "record {i}: sent {v:e}, got {got:e}"
        );
    }
}

/// Vector records travel exactly too (the request's arrays of arrays).
#[test]
fn vector_records_travel_bit_exactly() {
    let rows: Vec<Vec<f64>> = (0..5000)
        .map(|i| vec![i as f64 * 1e-310, -(i as f64) * 1e290, 0.1 * i as f64])
        .collect();
    let dataset = Dataset::vectors(3, &rows).unwrap();
    let p = script("echo3.py", ECHO_PY);
    let m = exec(
        &format!("python3 {}", p.display()),
        ExecMechanism::domain(f64::MIN, f64::MAX, 3),
        &dataset,
    )
    .unwrap();
    assert_eq!(m.output_dim(), 3);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
    let s = m.sample(&dataset, rows.len(), &mut rng).unwrap();
    for (i, r) in rows.iter().enumerate() {
        for (j, v) in r.iter().enumerate() {
            assert_eq!(s.values()[[i, j]].to_bits(), v.to_bits(), "record {i}[{j}]");
        }
    }
}

/// A program that refuses large datasets: its exit status and its stderr are in the error.
#[test]
fn rejected_dataset_shows_the_programs_stderr() {
    let p = script(
        "picky.py",
        "import json, sys\nr = json.load(sys.stdin)\nif len(r['dataset']) > 1000:\n    \
         sys.stderr.write('dataset too large: %d records, at most 1000\\n' % len(r['dataset']))\n    \
         sys.exit(3)\nprint('\\n'.join(['1.0'] * r['samples']))\n",
    );
    let e = exec(
        &format!("python3 {}", p.display()),
        ExecMechanism::domain(0.0, 1.0, 1),
        &Dataset::scalars(vec![0.5; 4096]).unwrap(),
    )
    .unwrap_err();
    assert!(e.contains("exited with exit status: 3"), "{e}");
    assert!(
        e.contains("dataset too large: 4096 records, at most 1000"),
        "{e}"
    );
    assert!(
        e.contains("(4096 records)"),
        "the request is summarized: {e}"
    );
}
