//! The Python package (`python/`, docs/python.md) built from this checkout as a wheel and its
//! pytest suite run against the installed wheel, by the README's test command
//! (`cargo test --workspace --release`), so a fresh machine builds the package and runs the
//! Python tests with the Rust ones.
//!
//! What it does, in the target directory's scratch folder (`CARGO_TARGET_TMPDIR`):
//! `pip wheel ./python --no-deps -w python-wheels` (maturin builds the extension in its own target
//! folder, `python-build`, so it never waits on the lock `cargo test` holds, and later runs
//! rebuild incrementally), then a fresh virtual environment (`pyvenv`, recreated every run) where,
//! with a PATH that has no `cargo` or `rustc` (what a user without Rust has), the wheel is
//! installed (its time printed: `--nocapture` shows it), then `pip install numpy pytest`, the DP
//! libraries the library tests audit (OpenDP, diffprivlib, JAX, JAX Privacy; best effort: those
//! tests skip without them), and `python -m pytest python/tests` with `DP_AUDIT_BIN` set to the
//! `audit` binary of this build (the byte-identity test runs it). One build of the extension per
//! run: the first compiles dp-audit for it (about 6.5 minutes on 2 cores); later runs rebuild
//! incrementally (about 20 s).
//! The pytest suite's own false-failure rates are stated in its files (each gate ≤ 1e-6).
//! Needs `python3` with `venv` and access to PyPI (maturin for the build, numpy, pytest); without
//! python3 it says so and passes (every other test that runs Python programs does the same).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

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
    // A fresh virtual environment every run: nothing in it but pip when the wheel goes in.
    let venv = scratch.join("pyvenv");
    run(
        "python3 -m venv --clear",
        Command::new("python3")
            .args(["-m", "venv", "--clear"])
            .arg(&venv),
    );
    let python = venv.join("bin").join("python");
    // The wheel: what `pip wheel ./python` (docs/python.md) builds, into a folder emptied first so
    // that exactly one wheel is there.
    let wheels = scratch.join("python-wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    let built = Instant::now();
    run(
        "pip wheel ./python",
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "wheel",
                "-q",
                "--disable-pip-version-check",
                "--no-deps",
                "-w",
            ])
            .arg(&wheels)
            .arg(root.join("python"))
            .env("CARGO_TARGET_DIR", scratch.join("python-build")),
    );
    let wheel = the_wheel(&wheels);
    eprintln!(
        "built {} in {:.1} s",
        wheel.display(),
        built.elapsed().as_secs_f64()
    );
    // From here on a PATH without cargo or rustc: the wheel installs and runs as it would for a
    // user without a Rust toolchain.
    let path = path_without_rust();
    run(
        "no cargo or rustc on the test PATH",
        without_rust(Command::new(&python), &path).args([
            "-c",
            "import shutil, sys; found = [t for t in ('cargo', 'rustc') if shutil.which(t)]; \
                 sys.exit(f'on PATH: {found}' if found else 0)",
        ]),
    );
    let installed = Instant::now();
    run(
        "pip install the wheel",
        without_rust(Command::new(&python), &path)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .arg(&wheel),
    );
    eprintln!(
        "installed the wheel (with numpy) into a fresh venv in {:.1} s",
        installed.elapsed().as_secs_f64()
    );
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
    // what the audits find (diffprivlib 0.6.6 needs a scikit-learn below 1.8, whose tree
    // module it imports). Best effort: where they cannot be installed (no index, no wheel cache), those
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
        "pytest python/tests",
        without_rust(Command::new(&python), &path)
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

/// The one wheel `pip wheel` wrote into `dir`.
fn the_wheel(dir: &Path) -> PathBuf {
    let wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a wheel folder entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    assert_eq!(
        wheels.len(),
        1,
        "expected one wheel in {}: {wheels:?}",
        dir.display()
    );
    wheels.into_iter().next().unwrap()
}

/// PATH without the folders that hold `cargo` or `rustc` (~/.cargo/bin, a toolchain's bin).
fn path_without_rust() -> OsString {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let kept = std::env::split_paths(&path).filter(|dir| {
        !(dir.join("cargo").exists()
            || dir.join("rustc").exists()
            || dir.components().any(|c| {
                let c = c.as_os_str();
                c == ".cargo" || c == ".rustup"
            }))
    });
    std::env::join_paths(kept).expect("PATH entries rejoin")
}

/// `cmd` with `path` as its PATH and without the variables through which cargo (running this
/// test) would name a Rust toolchain.
fn without_rust(mut cmd: Command, path: &OsString) -> Command {
    for var in [
        "CARGO",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTDOC",
        "RUSTUP_TOOLCHAIN",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("PATH", path);
    cmd
}
