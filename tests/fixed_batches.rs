//! Fixed-size batches drawn without replacement (`mechanisms/src/catalogue/dpsgd_fixed_batches.rs`):
//! the twin accounted as Poisson sampling is caught by `audit run --mechanism ID` as listed, the
//! correct entry is not, and a ledger whose sampling event says `"policy": "fixed-size"` is
//! accounted under replace-one (by the fixed-size rule) and refused under add-remove.
//!
//! Error rates. The correct entry's claim (the fixed-size accountant's pessimistic profile) is a
//! proved upper bound, so the run reports a violation with probability at most its β = 0.001
//! (the hockey-stick tester's guarantee): the false-failure rate of `correct_entry_passes`. The twin's check is a power
//! check at the CLI's fixed seed: at the default 2·10^5 releases per side (1.6·10^5 held out
//! for the bound) the event the tester selects has P(S) ≈ 0.24 and Q(S) ≈ 0.017 at ε ≈ 1.3,
//! a true H_{e^ε} ≈ 0.18 against 0.06 allowed; the Clopper–Pearson bounds at β = 0.001 move the
//! estimate by about 3.3 × (0.0011 + e^1.3 · 0.0003) ≈ 0.008, so given an event like it a miss
//! needs a deviation of more than 70 standard deviations (probability < 1e-100). The event is
//! chosen on a training split, which that argument does not cover; measured: caught at seeds
//! 100–119 in 20/20 runs at 5,000 releases per side (1/40 of the default), 16/20 at 2,000.

mod util;

#[test]
fn twin_accounted_as_poisson_is_caught_as_listed() {
    let o = util::audit(&[
        "run",
        "--mechanism",
        "dpsgd-fixed-batches-accounted-as-poisson",
        "--no-report",
    ]);
    let out = util::stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{out}{}", util::stderr(&o));
    assert!(out.contains("VIOLATION"), "{out}");
}

#[test]
fn correct_entry_passes() {
    let o = util::audit(&["run", "--mechanism", "dpsgd-fixed-batches", "--no-report"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        util::stdout(&o),
        util::stderr(&o)
    );
}

#[test]
fn a_fixed_size_ledger_is_accounted_under_replace_one_only() {
    let dir = std::env::temp_dir().join(format!("dp-audit-fixed-ledger-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, policy: &str| {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!(
                "{{\"event\": \"sampling\", \"probability\": 0.25, \"repetitions\": 4{policy}}}\n\
                 {{\"event\": \"gaussian-sum\", \"noise_multiplier\": 1.0}}\n"
            ),
        )
        .unwrap();
        path.display().to_string()
    };
    let fixed = write("fixed.jsonl", ", \"policy\": \"fixed-size\"");
    let o = util::audit(&["accountant", "--ledger", &fixed, "--delta", "1e-5"]);
    let err = util::stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("\"fixed-size\"")
            && err.contains("event 1")
            && err.contains("add-remove")
            && err.contains("allowed: replace-one"),
        "{err}"
    );
    // Under replace-one: the fixed-size rule's bounds (the catalogue entry's claim at δ = 1e-5:
    // 14.1925, with the witness's 14.1252 as the optimistic estimate).
    let o = util::audit(&[
        "accountant",
        "--ledger",
        &fixed,
        "--delta",
        "1e-5",
        "--neighbors",
        "replace-one",
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&util::stdout(&o)).unwrap();
    let (upper, lower) = (
        v["pld"]["epsilon_upper"].as_f64().unwrap(),
        v["pld"]["epsilon_lower"].as_f64().unwrap(),
    );
    assert!(
        (upper - 14.1925).abs() < 1e-3 && (lower - 14.1252).abs() < 1e-3,
        "{v}"
    );
    assert_eq!(v["ledger_events"][0]["policy"], "fixed-size");
    assert!(v["pld"]["method"].as_str().unwrap().contains("Theorem 4.2"));
    // A ledger written before the policy field existed reads as Poisson, as it did.
    let old = write("old.jsonl", "");
    let o = util::audit(&["accountant", "--ledger", &old, "--delta", "1e-5"]);
    assert_eq!(o.status.code(), Some(0), "{}", util::stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}
