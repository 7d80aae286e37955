//! The house's size rule: no non-test function over 150 lines (a reader follows an executor
//! through named steps, as argmin's `Executor::run` only calls hooks). Counted by
//! `tests/util/sizes.py`, which also prints the function-length and file-length tables
//! (`python3 tests/util/sizes.py --all`).

use std::process::Command;

#[test]
fn no_function_is_longer_than_150_lines() {
    let root = env!("CARGO_MANIFEST_DIR");
    let Ok(out) = Command::new("python3")
        .arg(format!("{root}/tests/util/sizes.py"))
        .arg(root)
        .args(["--max-function", "150"])
        .output()
    else {
        eprintln!("skipped: python3 is not installed");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
