//! Programs that ignore the request's seed (a constant seed, a common mistake) return the same
//! releases in every request, so the i.i.d. assumption behind every bound would fail silently:
//! the exec mechanism refuses them. Correct programs, deterministic ones and small discrete
//! outputs, which repeat legitimately, are not refused.

use std::path::PathBuf;
use std::time::Duration;

use dp_audit::sources::exec::ExecMechanism;
use dp_audit::{Dataset, Mechanism, Neighboring};
use rand::SeedableRng;

fn script(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dp-audit-exec-indep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

fn mechanism(name: &str, body: &str) -> ExecMechanism {
    let p = script(name, body);
    ExecMechanism::new(
        &format!("python3 {}", p.display()),
        "pure:1".parse().unwrap(),
        Neighboring::AddRemove,
        ExecMechanism::domain(0.0, 1.0, 1),
        Duration::from_secs(60),
        &Dataset::scalars(vec![0.5, 0.5]).unwrap(),
    )
    .unwrap()
}

fn d(values: &[f64]) -> Dataset {
    Dataset::scalars(values.to_vec()).unwrap()
}

/// Laplace sum with `random.seed(42)`: the issue's mistake. Samples count from the request.
const CONSTANT_SEED_PY: &str = r#"
import json, math, random, sys
req = json.load(sys.stdin)
random.seed(42)
s = sum(req["dataset"])
out = []
for _ in range(req["samples"]):
    u = random.random() - 0.5
    out.append(repr(s - math.copysign(1, u) * math.log(1 - 2 * abs(u))))
print("\n".join(out))
"#;

/// The same mechanism drawing from the request's seed.
const SEEDED_PY: &str = r#"
import json, math, random, sys
req = json.load(sys.stdin)
rng = random.Random(req["seed"])
s = sum(req["dataset"])
out = []
for _ in range(req["samples"]):
    u = rng.random() - 0.5
    out.append(repr(s - math.copysign(1, u) * math.log(1 - 2 * abs(u))))
print("\n".join(out))
"#;

/// Randomized response on one bit (the first record), from the request's seed.
const RR_PY: &str = r#"
import json, math, random, sys
req = json.load(sys.stdin)
rng = random.Random(req["seed"])
bit = 1 if req["dataset"] and req["dataset"][0] > 0.5 else 0
keep = math.e / (1 + math.e)
print("\n".join(str(bit if rng.random() < keep else 1 - bit) for _ in range(req["samples"])))
"#;

#[test]
fn constant_seed_is_refused_on_the_same_dataset() {
    let m = mechanism("const.py", CONSTANT_SEED_PY);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
    let data = d(&[0.5, 0.5, 1.0]);
    m.sample(&data, 1000, &mut rng).unwrap();
    let e = m.sample(&data, 1000, &mut rng).unwrap_err().to_string();
    assert!(e.contains("const.py"), "names the command: {e}");
    assert!(
        e.contains("must draw its randomness from the request's \"seed\" field"),
        "{e}"
    );
    assert!(e.contains("identical, bit for bit"), "{e}");
}

/// Different sample counts: the shorter batch is a prefix of the longer one.
#[test]
fn constant_seed_is_refused_across_sample_counts() {
    let m = mechanism("const2.py", CONSTANT_SEED_PY);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
    let data = d(&[0.5]);
    m.sample(&data, 5000, &mut rng).unwrap();
    let e = m.sample(&data, 37, &mut rng).unwrap_err().to_string();
    assert!(e.contains("\"seed\""), "{e}");
}

/// Neighboring datasets: the releases differ by the shift of the sum, but their order is the
/// same, so one batch per side is enough.
#[test]
fn constant_seed_is_refused_across_neighboring_datasets() {
    let m = mechanism("const3.py", CONSTANT_SEED_PY);
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(3);
    m.sample(&d(&[0.5, 0.5]), 1000, &mut rng).unwrap();
    let e = m
        .sample(&d(&[0.5, 0.5, 1.0]), 1000, &mut rng)
        .unwrap_err()
        .to_string();
    assert!(e.contains("in the same order"), "{e}");
    assert!(e.contains("\"seed\""), "{e}");
    // Clones share what was seen (the runner may hold clones).
    let c = m.clone();
    assert!(c.sample(&d(&[0.5]), 100, &mut rng).is_err());
}

/// A correct program over many batches of several sizes and datasets, drawn in parallel
/// threads as the runner does: never refused.
#[test]
fn seeded_program_is_not_refused() {
    let m = mechanism("seeded.py", SEEDED_PY);
    std::thread::scope(|scope| {
        for t in 0..2u64 {
            let m = &m;
            scope.spawn(move || {
                let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(10 + t);
                for i in 0..20usize {
                    let data = d(&vec![0.5; 1 + i % 3]);
                    let n = [2, 16, 25, 100, 1000][i % 5];
                    m.sample(&data, n, &mut rng).unwrap();
                }
            });
        }
    });
}

/// Outputs that repeat legitimately: a constant (deterministic) program, and randomized
/// response on one bit in batches of 2 and 64 releases (2^64 equally likely batches at best,
/// too few bits to count a repeat as evidence).
#[test]
fn constant_and_small_discrete_outputs_are_not_refused() {
    let c = mechanism(
        "constant.py",
        "import json, sys\nr = json.load(sys.stdin)\nprint('\\n'.join(['0.5'] * r['samples']))\n",
    );
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(4);
    for n in [2, 1000, 1000] {
        c.sample(&d(&[0.5]), n, &mut rng).unwrap();
    }
    let rr = mechanism("rr.py", RR_PY);
    for _ in 0..40 {
        rr.sample(&d(&[1.0]), 2, &mut rng).unwrap();
    }
    for _ in 0..15 {
        rr.sample(&d(&[0.0]), 64, &mut rng).unwrap();
    }
    // With large batches randomized response qualifies, and a correct one is still accepted.
    for _ in 0..3 {
        rr.sample(&d(&[1.0]), 5000, &mut rng).unwrap();
    }
}

/// The same seed twice (the program is deterministic given its seed, as it should be) is not
/// evidence.
#[test]
fn the_same_seed_may_repeat() {
    let m = mechanism("seeded2.py", SEEDED_PY);
    let data = d(&[0.5]);
    let a = m
        .sample(&data, 100, &mut rand_chacha::ChaCha20Rng::seed_from_u64(5))
        .unwrap();
    let b = m
        .sample(&data, 100, &mut rand_chacha::ChaCha20Rng::seed_from_u64(5))
        .unwrap();
    assert_eq!(a, b);
}
