//! The exec protocol against misbehaving programs, through the library: programs that leave a
//! child holding stdout, never read their request, close stdin early or print without end must
//! give clear errors within the time-out, never a hang, and leave no process behind.
//!
//! Every request runs under a watchdog (the time-out plus [`SLACK`]): a hang fails the test
//! instead of blocking it forever. The limits are generous bounds that prove a hang is gone,
//! not timing measurements.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dp_audit::sources::exec::ExecMechanism;
use dp_audit::{Dataset, Neighboring, RecordDomain};

/// How long past its time-out a request may take before the watchdog calls it a hang.
const SLACK: Duration = Duration::from_secs(15);

fn script(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dp-audit-exec-robust-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    p
}

/// Datasets of up to 2 million scalar records in [0, 1].
fn domain() -> RecordDomain {
    RecordDomain::real(0.0, 1.0, 1).with_sizes(0, 2_000_000)
}

/// `ExecMechanism::new` (one probe request of 2 releases on `probe`) under a watchdog.
fn probe(command: &str, timeout: Duration, probe: Dataset) -> Result<ExecMechanism, String> {
    let (tx, rx) = mpsc::channel();
    let command = command.to_string();
    std::thread::spawn(move || {
        let r = ExecMechanism::new(
            &command,
            "pure:1".parse().unwrap(),
            Neighboring::AddRemove,
            domain(),
            timeout,
            &probe,
        )
        .map_err(|e| e.to_string());
        let _ = tx.send(r);
    });
    match rx.recv_timeout(timeout + SLACK) {
        Ok(r) => r,
        Err(_) => panic!("the request hung past its time-out of {timeout:?} + {SLACK:?}"),
    }
}

fn big_dataset() -> Dataset {
    // 10^6 records: about 10 MB of request, far more than a pipe holds (64 KiB).
    Dataset::scalars(
        (0..1_000_000)
            .map(|i| (i % 1000) as f64 / 1000.0)
            .collect::<Vec<_>>(),
    )
    .unwrap()
}

/// Processes in process group `pgid` that are alive (not zombies), from /proc.
fn live_members(pgid: i32) -> Vec<String> {
    let mut live = vec![];
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp …; comm may hold spaces, so split after the last ')'.
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z" && f[0] != "X" {
            live.push(stat.trim().to_string());
        }
    }
    live
}

/// The case: the program reads its request and exits 0 at once, but leaves `sleep
/// 1000` in the background holding its stdout. The request must end as a time-out soon after
/// the 2 s deadline, and the sleep must die with the program's process group.
#[test]
fn child_holding_stdout_is_a_time_out_and_dies() {
    let pidfile = std::env::temp_dir().join(format!("dp-audit-exec-pg-{}", std::process::id()));
    let _ = std::fs::remove_file(&pidfile);
    let command = format!(
        "sh -c 'echo $$ > {}; cat >/dev/null; (sleep 1000) & exit 0'",
        pidfile.display()
    );
    let t = Instant::now();
    let e = probe(
        &command,
        Duration::from_secs(2),
        Dataset::scalars(vec![0.5]).unwrap(),
    )
    .unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(2) + SLACK);
    // Normally "exited …, but its stdout was still open"; on a machine so loaded that `sh`
    // had not exited by the deadline, the plain time-out. Either way a time-out.
    assert!(
        e.contains("stdout was still open") || e.contains("timed out after 2 s"),
        "{e}"
    );
    assert!(e.contains("--exec-timeout"), "{e}");
    assert!(e.contains("sh -c"), "names the command: {e}");
    let pgid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SIGKILL is delivered at once, but give the kernel a moment to tear the processes down.
    let until = Instant::now() + Duration::from_secs(10);
    let mut live = live_members(pgid);
    while !live.is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
        live = live_members(pgid);
    }
    if !live.is_empty() {
        // Clean up before failing, so a failed run leaves nothing behind either.
        let _ = std::process::Command::new("kill")
            .args(["-KILL", "--", &format!("-{pgid}")])
            .status();
    }
    assert!(live.is_empty(), "process group {pgid} survived: {live:?}");
}

/// A program that never reads its request and never exits, sent a request larger than a pipe
/// holds: writing the request blocks, and the time-out must still fire.
#[test]
fn program_that_never_reads_a_large_request_times_out() {
    let p = script("sleeper.py", "import time\ntime.sleep(1000)\n");
    let t = Instant::now();
    let e = probe(
        &format!("python3 {}", p.display()),
        Duration::from_secs(2),
        big_dataset(),
    )
    .unwrap_err();
    assert!(t.elapsed() < Duration::from_secs(2) + SLACK);
    assert!(e.contains("timed out after 2 s"), "{e}");
    assert!(
        e.contains("1000000 records"),
        "the request is summarized: {e}"
    );
}

/// A program that prints valid releases and exits 0 without reading its (large) request never
/// saw its seed: an error, not an accepted batch.
#[test]
fn program_that_never_reads_stdin_is_an_error() {
    let p = script("noread.py", "print(1.0)\nprint(2.0)\n");
    let e = probe(
        &format!("python3 {}", p.display()),
        Duration::from_secs(30),
        big_dataset(),
    )
    .unwrap_err();
    assert!(
        e.contains("closed its stdin before reading the whole request"),
        "{e}"
    );
    assert!(e.contains("\"seed\""), "{e}");
}

/// A program that reads 100 bytes, closes stdin and then fails: the exit status comes first,
/// and the error says it stopped reading.
#[test]
fn program_that_closes_stdin_early_is_an_error() {
    let p = script(
        "closer.py",
        "import sys\nsys.stdin.buffer.read(100)\nsys.stdin.close()\n\
         sys.stderr.write('dataset too large for me\\n')\nsys.exit(4)\n",
    );
    let e = probe(
        &format!("python3 {}", p.display()),
        Duration::from_secs(30),
        big_dataset(),
    )
    .unwrap_err();
    assert!(e.contains("exited with exit status: 4"), "{e}");
    assert!(e.contains("stopped reading the request"), "{e}");
    assert!(e.contains("dataset too large for me"), "stderr tail: {e}");
}

/// A program that prints without end is stopped at the first line too many, long before its
/// time-out.
#[test]
fn endless_output_is_stopped_at_the_first_extra_line() {
    let p = script(
        "endless.py",
        "import sys, json\njson.load(sys.stdin)\nwhile True:\n    print(1.0)\n",
    );
    let e = probe(
        &format!("python3 {}", p.display()),
        Duration::from_secs(60),
        Dataset::scalars(vec![0.5]).unwrap(),
    )
    .unwrap_err();
    assert!(e.contains("more than the 2 lines requested"), "{e}");
    assert!(!e.contains("timed out"), "{e}");
}

/// A program that exits 0 without output, and one that is killed by a signal.
#[test]
fn empty_output_and_signals_are_errors() {
    let e = probe(
        "sh -c 'cat >/dev/null'",
        Duration::from_secs(30),
        Dataset::scalars(vec![0.5]).unwrap(),
    )
    .unwrap_err();
    assert!(e.contains("0 lines printed, 2 requested"), "{e}");
    let e = probe(
        "sh -c 'cat >/dev/null; kill -9 $$'",
        Duration::from_secs(30),
        Dataset::scalars(vec![0.5]).unwrap(),
    )
    .unwrap_err();
    assert!(e.contains("signal: 9"), "{e}");
}

/// Time-outs of 0 or beyond 10^9 s are refused, naming the value (no overflow of the deadline).
#[test]
fn absurd_time_outs_are_refused() {
    for t in [Duration::ZERO, Duration::from_secs(u64::MAX)] {
        let e = ExecMechanism::new(
            "python3 -c pass",
            "pure:1".parse().unwrap(),
            Neighboring::AddRemove,
            domain(),
            t,
            &Dataset::empty(1).unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(&format!("the time-out is {} s", t.as_secs_f64()))
                && e.contains("at most 1000000000 s"),
            "{e}"
        );
    }
}
