//! The Python package (`python/`, docs/python.md) built from this checkout and its pytest suite,
//! run by the README's test command (`cargo test --workspace --release`), so a fresh machine
//! builds the package and runs the Python tests with the Rust ones.
//!
//! What it does: a virtual environment under the target directory's scratch folder
//! (`CARGO_TARGET_TMPDIR`), `pip install numpy pytest`, the DP libraries the library tests
//! audit (OpenDP, diffprivlib, JAX, JAX Privacy; best effort: those tests skip without them) and
//! `pip install ./python` (maturin builds the extension in its own target folder, so it never
//! waits on the lock `cargo test` holds),
//! then `python -m pytest python/tests` with `DP_AUDIT_BIN` set to the `audit` binary of this
//! build (the byte-identity test runs it). The first build compiles dp-audit for the extension
//! (about 6.5 minutes on 2 cores); later runs rebuild incrementally (about 20 s).
//! The pytest suite's own false-failure rates are stated in its files (each gate ≤ 1e-6).
//! Needs `python3` with `venv` and access to PyPI; without python3 it says so and passes
//! (every other test that runs Python programs does the same).

use std::path::{Path, PathBuf};
use std::process::Command;

fn run(what: &str, cmd: &mut Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: could not start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_python_package_builds_and_its_tests_pass() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let venv = scratch.join("pyvenv");
    let python = venv.join("bin").join("python");
    if !python.exists() {
        run(
            "python3 -m venv",
            Command::new("python3").arg("-m").arg("venv").arg(&venv),
        );
    }
    run(
        "pip install numpy pytest",
        Command::new(&python).args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "numpy",
            "pytest",
            "pytest-xdist", // test_plugin.py runs the pytest plugin under -n 2
        ]),
    );
    // The libraries python/tests/test_libraries.py audits, pinned: a new release may change
    // what the audits find (diffprivlib 0.6.6 needs scikit-learn < 1.8, whose tree module it
    // imports). Best effort: where they cannot be installed (no index, no wheel cache), those
    // tests are skipped and pytest says why.
    best_effort_install(
        &python,
        &[
            "opendp==0.16.0",
            "diffprivlib==0.6.6",
            "scikit-learn>=1.4,<1.8",
        ],
        "python/tests/test_libraries.py's library tests",
    );
    // JAX (CPU) for python/examples/jax_dpsgd.py, on its own: a machine without a jaxlib wheel
    // for its Python skips those two tests and keeps the others.
    best_effort_install(&python, &["jax==0.10.2"], "the JAX tests");
    // JAX Privacy for python/examples/jax_privacy_mf.py, after JAX so that its own install
    // (Python >= 3.11, more dependencies) failing skips only those tests; pinned as the others:
    // its sensitivity functions and privatizer are what the example audits.
    best_effort_install(
        &python,
        &["jax==0.10.2", "jax-privacy==2.0.0"],
        "the JAX Privacy tests",
    );
    run(
        "pip install ./python",
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "-q",
                "--disable-pip-version-check",
                "--force-reinstall",
                "--no-deps",
            ])
            .arg(root.join("python"))
            .env("CARGO_TARGET_DIR", scratch.join("python-build")),
    );
    run(
        "pytest python/tests",
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
            .arg(root.join("python").join("tests"))
            .current_dir(root)
            .env("DP_AUDIT_BIN", env!("CARGO_BIN_EXE_audit")),
    );
}

/// `pip install` of optional packages: a failure (no index, no wheel for this Python) is said
/// and skips only the tests that need them (`skipped`), which report why.
fn best_effort_install(python: &std::path::Path, packages: &[&str], skipped: &str) {
    match Command::new(python)
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .args(packages)
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => eprintln!(
            "note: pip install {} failed ({}); {skipped} will skip:\n{}",
            packages.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => eprintln!("note: pip could not start ({e}); {skipped} will skip"),
    }
}
