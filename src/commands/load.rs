//! `--load K` of `audit bench pacing|probe|slow`: K busy processes spinning on the CPU while the
//! benchmark runs, the way other people's jobs load a shared machine (issue 49 measured load
//! averages of 4 to 9 on 2 cores).
//!
//! Each busy process is `python3 -c` running a pure-Python loop that never sleeps, started in a
//! process group of its own (so a terminal's Ctrl-C, sent to the benchmark's group, reaches it
//! only through us). [`BusyLoad`] kills every group (SIGKILL) and reaps the processes when it is
//! dropped: when the benchmark ends, returns an error, or panics. Should the benchmark itself be
//! killed (SIGKILL, or a Ctrl-C that skips destructors), each loop checks its parent's process id
//! as it spins and exits as soon as it has been re-parented, so none outlives the benchmark.

use std::process::{Child, Command, Stdio};

use crate::error::{Error, Result};

/// The most busy processes `--load` starts.
pub const MAX_LOAD: usize = 64;

/// The busy loop: spins until its parent is gone (re-parented: `getppid` changes).
const SPIN: &str = "import os\np = os.getppid()\nwhile os.getppid() == p:\n    pass\n";

/// Reads `--load K`: a whole number of busy processes from 0 to [`MAX_LOAD`].
pub fn parse_load(text: &str) -> Result<usize> {
    let t = text.trim();
    match t.parse::<usize>() {
        Ok(k) if k <= MAX_LOAD => Ok(k),
        _ => Err(Error::InvalidConfig(format!(
            "--load {text}; allowed: a whole number of busy processes from 0 to {MAX_LOAD}"
        ))),
    }
}

/// K busy processes, each the leader of its own process group; all are killed when this is
/// dropped.
#[derive(Debug, Default)]
pub struct BusyLoad {
    children: Vec<Child>,
}

impl BusyLoad {
    /// Starts `k` busy processes (none for `k = 0`). If one cannot be started, those already
    /// running are killed (by the drop of the partial set) and the error names the command.
    pub fn start(k: usize) -> Result<Self> {
        use std::os::unix::process::CommandExt;
        let mut load = BusyLoad::default();
        for _ in 0..k {
            let child = Command::new("python3")
                .args(["-c", SPIN])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .map_err(|e| {
                    Error::InvalidConfig(format!(
                        "--load {k}: cannot start the busy process `python3 -c <busy loop>`: {e}"
                    ))
                })?;
            load.children.push(child);
        }
        Ok(load)
    }

    /// The busy processes' ids (each also its process group's id).
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().map(Child::id).collect()
    }

    /// How many busy processes run.
    pub fn len(&self) -> usize {
        self.children.len()
    }

    /// No busy process runs.
    pub fn is_empty(&self) -> bool {
        self.children.is_empty()
    }
}

impl Drop for BusyLoad {
    fn drop(&mut self) {
        for child in &mut self.children {
            if let Ok(pgid) = libc::pid_t::try_from(child.id()) {
                // SAFETY: kill(2) with a negative pid signals the process group `pgid`, which
                // this child leads (spawned with `process_group(0)`) and which has not been
                // reaped yet (reaped just below), so the id cannot have been reused.
                unsafe {
                    libc::kill(-pgid, libc::SIGKILL);
                }
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_flag_names_the_value_and_the_range() {
        assert_eq!(parse_load("0").unwrap(), 0);
        assert_eq!(parse_load(" 2 ").unwrap(), 2);
        assert_eq!(parse_load("64").unwrap(), MAX_LOAD);
        for bad in ["-1", "65", "two", "", "1.5"] {
            let e = parse_load(bad).unwrap_err().to_string();
            assert!(
                e.contains(&format!("--load {bad}")) && e.contains("from 0 to 64"),
                "{bad}: {e}"
            );
        }
    }

    /// The busy processes run while the load is held and are gone (reaped) once it is
    /// dropped, each in a process group of its own.
    #[test]
    fn busy_processes_die_with_the_load() {
        let load = BusyLoad::start(2).expect("python3 runs");
        assert_eq!(load.len(), 2);
        let pids = load.pids();
        for pid in &pids {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("running");
            // Field 5 of /proc/PID/stat (after the parenthesised name) is the process group.
            let after = &stat[stat.rfind(')').expect("stat has a name") + 2..];
            let pgrp: u32 = after.split(' ').nth(2).unwrap().parse().unwrap();
            assert_eq!(pgrp, *pid, "a process group of its own");
        }
        drop(load);
        for pid in &pids {
            assert!(
                !std::path::Path::new(&format!("/proc/{pid}")).exists(),
                "busy process {pid} still exists after the drop"
            );
        }
        assert!(BusyLoad::start(0).unwrap().is_empty());
    }
}
