//! A real DP-SGD library audited through the exec protocol: JAX Privacy's DP-SGD (its Poisson
//! batch sampler, `clipped_grad`, `gaussian_privatizer` chained with `optax.sgd`) on a
//! one-parameter linear model whose per-example gradient is the record, adapter
//! `examples/dpsgd/jax_privacy_adapter.py`. The claim is read off the library's own accountant
//! (`DpsgdTrainingAccountant` with its PLD config) by the adapter's `--print-claim`, and from the
//! privacy ledger the adapter writes (`--claim ledger:FILE`, dp-audit's PLD accountant).
//!
//! Ignored (needs JAX Privacy, hence network to install it). Run with
//!
//! ```sh
//! examples/dpsgd/setup.sh                        # venv in /tmp/dp-audit-dpsgd-venv
//! DP_AUDIT_PYTHON=/tmp/dp-audit-dpsgd-venv/bin/python \
//!     cargo test --release --test exec_dpsgd_lib -- --ignored --nocapture
//! ```
//!
//! `DP_AUDIT_PYTHON` names the interpreter that has the library (default `python3`); when
//! `jax_privacy` does not import, each test prints why it skipped and passes.
//!
//! # What is checked, and why it can fail
//!
//! Settings: noise multiplier z = 2, clipping norm C = 4 (records in [−4, 4]), one expected
//! example per batch, add/remove neighbors D = [0, 0], D′ = [0, 0, 4] (the zeros add nothing to
//! any gradient, so the released iterates are exactly the dominating pair of the Poisson-
//! subsampled Gaussian). Several steps: T = 10 at sampling rate q = 1/10, every iterate released
//! and read through the `checkpoints:1` transform (final θ, largest and smallest increment: a
//! fixed post-processing); one step: T = 1 at q = 1/4. The library's accountant claims
//! (0.79846751, 1e-5) and (0.83009945, 1e-5) there.
//!
//! The misconfiguration: the privatizer is given `stddev = z` (the noise multiplier, as in the
//! library's docstring example `gaussian_privatizer(stddev=1.0, …)`) instead of
//! `z · grad_fn.sensitivity()` = z·C, so the noise is z/C = 1/4 of what the accountant was told:
//! the record's shift is 2 noise standard deviations per step it is sampled in, not 0.5.
//! Derivation of the power (derived, not tuned: `examples/dpsgd/power.py` prints these numbers,
//! scipy's Φ and Clopper–Pearson with the library's ε): the event "the smallest increment is below −m" alone (one of the
//! tester's candidates, the negated third checkpoint feature) has probabilities
//! P = 1 − ((1−q)Φ(m) + qΦ(m−2))^T and Q = 1 − Φ(m)^T (in units of the noise std). At T = 10,
//! q = 1/10 and the best m, P = 0.278 and Q = 0.047; even an exact Clopper–Pearson bound at
//! β = 1e-6 on 10^4 held-out releases per side leaves P − e^ε·Q ≥ 0.127 against the 1e-5 the
//! claim allows (T = 1, q = 1/4: P = 0.134, Q = 0.020, margin 0.055). The audits below hold out
//! 16 000 releases per side (20 000 drawn), so the misconfiguration is caught by a wide margin
//! (measured: H ≥ 0.14 at T = 10). The correct configuration is the claim's own worst case, so
//! it is not flagged only because the audit is sound.
//!
//! # False-failure rates
//!
//! Every audit runs at β = 1e-6. The library's PLD accountant is pessimistic (dp_accounting's
//! `pessimistic_estimate`), so its ε bounds the mechanism's, and a correct configuration is
//! flagged with probability ≤ β = 1e-6 per audit; the three "not flagged" audits together
//! ≤ 3e-6. JAX Privacy is seeded from the request (numpy Generator for the batches, a JAX PRNG
//! key for the noise), so each audit here is deterministic given its --seed (0); the rate is
//! over the choice of seed.

mod util;

use std::path::PathBuf;
use std::process::Command;

fn python() -> String {
    std::env::var("DP_AUDIT_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

fn adapter() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/dpsgd/jax_privacy_adapter.py")
}

/// `None` when JAX Privacy imports; otherwise the reason it does not.
fn missing() -> Option<String> {
    match Command::new(python())
        .args(["-c", "import jax_privacy"])
        .output()
    {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "{} cannot import jax_privacy: {} (install: examples/dpsgd/setup.sh, then set DP_AUDIT_PYTHON)",
            python(),
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Err(e) => Some(format!("cannot run {}: {e}", python())),
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dp-audit-exec-dpsgd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// The adapter's command line for `options` (the library's DP-SGD configuration).
fn command(options: &str) -> String {
    format!("{} {} {options}", python(), adapter().display())
}

/// Runs the adapter with `options` and `extra` (e.g. `--print-claim`) and returns its stdout.
fn adapter_says(options: &str, extra: &[&str]) -> String {
    let o = Command::new(python())
        .arg(adapter())
        .args(options.split_whitespace())
        .args(extra)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "adapter {options} {extra:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// Runs `audit run --exec` on the pair [0, 0] vs [0, 0, 4] and returns (exit code, stdout).
fn audit_exec(command: &str, claim: &str, view: &[&str]) -> (i32, String) {
    let pairs = scratch("pairs.jsonl");
    std::fs::write(
        &pairs,
        "{\"first\": [0.0, 0.0], \"second\": [0.0, 0.0, 4.0]}\n",
    )
    .unwrap();
    let pairs = pairs.to_str().unwrap().to_string();
    let mut args = vec![
        "run",
        "--exec",
        command,
        "--claim",
        claim,
        "--finder",
        "fixed",
        "--pairs",
        &pairs,
        "--record-range",
        "-4:4",
        "--trials",
        "1",
        "--confirm",
        "1",
        "--search-samples",
        "2000",
        "--samples",
        "20000",
        "--exec-timeout",
        "600",
        "--failure-probability",
        "1e-6",
        "--seed",
        "0",
        "--no-report",
        "--quiet",
    ];
    args.extend_from_slice(view);
    util::audit_reported(
        &args,
        &format!("`{command}` --claim {claim} {}", view.join(" ")),
        |out| {
            out.lines()
                .find(|l| l.trim_start().starts_with("H_e^"))
                .unwrap_or("")
                .trim()
                .to_string()
        },
    )
}

#[test]
#[ignore = "needs JAX Privacy (pip); see the module docs for the command"]
fn jax_privacy_dpsgd_ten_steps() {
    if let Some(why) = missing() {
        println!("SKIPPED jax_privacy_dpsgd_ten_steps: {why}");
        return;
    }
    let config =
        "--noise-multiplier 2 --steps 10 --expected-batch-size 1 --num-examples 10 --clip-norm 4";
    let claim = adapter_says(config, &["--print-claim"]);
    println!("  JAX Privacy's PLD accountant, q = 1/10, z = 2, T = 10: {claim}");
    // The accountant's figure (dp_accounting 0.6.0 PLD, as STATISTICS.md §4 quotes it): ε ≈ 0.798.
    let epsilon: f64 = claim.split(':').nth(1).unwrap().parse().unwrap();
    assert!((0.79..0.81).contains(&epsilon), "{claim}");
    let view = ["--transform", "checkpoints:1"];

    let ok = command(&format!("{config} --noise-stddev sensitivity"));
    let (code, out) = audit_exec(&ok, &claim, &view);
    assert_eq!(code, 0, "correct JAX Privacy DP-SGD flagged:\n{out}");

    // The same run's privacy ledger, accounted by dp-audit's own PLD accountant.
    let ledger = scratch("ledger.jsonl");
    adapter_says(config, &["--write-ledger", ledger.to_str().unwrap()]);
    let ledger_claim = format!("ledger:{}", ledger.display());
    let (code, out) = audit_exec(&ok, &ledger_claim, &view);
    assert_eq!(
        code, 0,
        "correct JAX Privacy DP-SGD flagged under its ledger:\n{out}"
    );

    let bug = command(&format!("{config} --noise-stddev multiplier"));
    let (code, out) = audit_exec(&bug, &claim, &view);
    assert_eq!(
        code, 1,
        "noise stddev = z (not z·C) not flagged against the accountant's claim:\n{out}"
    );
}

#[test]
#[ignore = "needs JAX Privacy (pip); see the module docs for the command"]
fn jax_privacy_dpsgd_one_step() {
    if let Some(why) = missing() {
        println!("SKIPPED jax_privacy_dpsgd_one_step: {why}");
        return;
    }
    let config =
        "--noise-multiplier 2 --steps 1 --expected-batch-size 1 --num-examples 4 --clip-norm 4";
    let claim = adapter_says(config, &["--print-claim"]);
    println!("  JAX Privacy's PLD accountant, q = 1/4, z = 2, T = 1: {claim}");
    let view = ["--check", "mechanism"];
    let ok = command(&format!("{config} --noise-stddev sensitivity"));
    let (code, out) = audit_exec(&ok, &claim, &view);
    assert_eq!(
        code, 0,
        "correct one-step JAX Privacy DP-SGD flagged:\n{out}"
    );
    let bug = command(&format!("{config} --noise-stddev multiplier"));
    let (code, out) = audit_exec(&bug, &claim, &view);
    assert_eq!(
        code, 1,
        "one step with noise stddev = z (not z·C) not flagged:\n{out}"
    );
}

/// Bad settings are refused before the library is imported, naming the value and what is
/// allowed (runs with any python3; no JAX Privacy needed).
#[test]
fn the_adapter_refuses_bad_settings_naming_them() {
    for (args, expect) in [
        (
            "--noise-multiplier 0",
            "--noise-multiplier = 0.0; allowed: a finite number > 0",
        ),
        (
            "--noise-multiplier 1 --steps 0",
            "--steps = 0; allowed: a whole number ≥ 1",
        ),
        (
            "--noise-multiplier 1 --expected-batch-size 5 --num-examples 4",
            "--expected-batch-size = 5; allowed: at most --num-examples = 4",
        ),
        (
            "--noise-multiplier 1 --delta 1",
            "--delta = 1.0; allowed: 0 < δ < 1",
        ),
    ] {
        let o = match Command::new("python3")
            .arg(adapter())
            .args(args.split_whitespace())
            .output()
        {
            Ok(o) => o,
            Err(e) => {
                println!("SKIPPED the_adapter_refuses_bad_settings_naming_them: no python3 ({e})");
                return;
            }
        };
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args}: accepted");
        assert!(err.contains(expect), "{args}: {err}");
    }
}
