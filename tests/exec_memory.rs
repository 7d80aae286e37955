//! Memory of exec requests: a large dataset is sent streamed (not built as one JSON text), and
//! a program that writes a huge amount to stderr is drained while it runs (no deadlock on a
//! full pipe) with only its tail kept. One test in its own binary, because it measures this
//! process's peak memory (VmHWM), which tests running in parallel would disturb.

use std::time::Duration;

use dp_audit::sources::exec::ExecMechanism;
use dp_audit::{Dataset, Neighboring, RecordDomain};

/// Peak resident memory of this process, in KiB.
fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn requests_are_streamed_and_stderr_keeps_its_tail() {
    large_request_is_streamed();
    huge_stderr_is_drained_and_only_its_tail_kept();
}

/// 2·10^6 records (16 MB here, about 40 MB of JSON) sent to a program that reads them and
/// prints 2 releases: the request is never held whole, so peak memory grows by far less than
/// its size.
fn large_request_is_streamed() {
    let dir = std::env::temp_dir().join(format!("dp-audit-exec-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("count.py");
    std::fs::write(
        &p,
        "import json, sys\nr = json.load(sys.stdin)\n\
         print('\\n'.join([str(len(r['dataset']))] * r['samples']))\n",
    )
    .unwrap();
    // Values with 17 significant digits: about 20 bytes of JSON each.
    let dataset = Dataset::scalars(
        (0..2_000_000u64)
            .map(|i| 0.123_456_789_012_345_67 + i as f64 * 1e-7)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let before = peak_kib();
    let m = ExecMechanism::new(
        &format!("python3 {}", p.display()),
        "pure:1".parse().unwrap(),
        Neighboring::AddRemove,
        ExecMechanism::domain(0.0, 1.0, 1),
        Duration::from_secs(120),
        &dataset,
    );
    assert!(m.is_ok(), "{:?}", m.err());
    let grown_mib = (peak_kib().saturating_sub(before)) / 1024;
    assert!(
        grown_mib < 16,
        "peak memory grew by {grown_mib} MiB to send a 40 MB request"
    );
}

fn huge_stderr_is_drained_and_only_its_tail_kept() {
    // 256 MiB of stderr, written before the request is read and after the releases are printed.
    let dir = std::env::temp_dir().join(format!("dp-audit-exec-stderr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("chatty.py");
    std::fs::write(
        &p,
        "import json, sys\n\
         junk = b'x' * (1 << 20) + b'\\n'\n\
         for _ in range(128):\n    sys.stderr.buffer.write(junk)\n\
         r = json.load(sys.stdin)\n\
         print('\\n'.join(['0.5'] * r['samples']))\n\
         sys.stdout.flush()\n\
         for _ in range(128):\n    sys.stderr.buffer.write(junk)\n\
         sys.stderr.write('the last words\\n')\n\
         sys.exit(int(r['dataset'][0]))\n",
    )
    .unwrap();
    let before = peak_kib();
    let command = format!("python3 {}", p.display());
    let ok = ExecMechanism::new(
        &command,
        "pure:1".parse().unwrap(),
        Neighboring::AddRemove,
        RecordDomain::real(0.0, 1.0, 1).with_sizes(0, 100_000),
        Duration::from_secs(120),
        &Dataset::scalars(vec![0.0; 100_000]).unwrap(),
    );
    assert!(ok.is_ok(), "{:?}", ok.err());
    let e = ExecMechanism::new(
        &command,
        "pure:1".parse().unwrap(),
        Neighboring::AddRemove,
        RecordDomain::real(0.0, 1.0, 1).with_sizes(0, 100_000),
        Duration::from_secs(120),
        &Dataset::scalars(vec![1.0]).unwrap(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("exited with exit status: 1"), "{e}");
    assert!(e.contains("the last words"), "the tail is shown: {e}");
    assert!(e.len() < 4000, "only the tail is shown ({} bytes)", e.len());
    let grown_mib = (peak_kib().saturating_sub(before)) / 1024;
    assert!(
        grown_mib < 64,
        "peak memory grew by {grown_mib} MiB for 256 MiB of stderr"
    );
}
