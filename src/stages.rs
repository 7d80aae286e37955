//! Wall time per stage of `audit test`, for the per-stage profile of `audit bench floor`
//! (docs/benchmarks.md, "The testers at the machine's floor").
//!
//! Off unless the environment variable `DP_AUDIT_STAGES` names a file: then every [`time`]
//! adds its wall time to its stage's total, and [`write`] (called once when `audit test`
//! ends) writes the totals there as one JSON object `{"stage": [seconds, calls], …}`. Stages
//! nest (the held-out count of a layer contains the parsing of its rows), and on several
//! threads they overlap (the two layers run at once), so the totals are meaningful as a
//! profile at one thread (`--jobs 1`), where they add up to the wall time of the stages
//! timed. Off, a stage costs one relaxed atomic load. Nothing here changes what is computed.
//!
//! Written by hand: a profiler (perf, tracing) attributes time to functions, not to the
//! stages of the argument in the testers' module docs, and the project has no tracing
//! dependency to carry for one benchmark.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

/// 0: not yet read from the environment, 1: off, 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);
static TOTALS: Mutex<BTreeMap<&'static str, (f64, u64)>> = Mutex::new(BTreeMap::new());

/// The variable naming the file the totals are written to.
pub const VAR: &str = "DP_AUDIT_STAGES";

fn on() -> bool {
    match STATE.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let on = std::env::var_os(VAR).is_some_and(|v| !v.is_empty());
            STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
    }
}

/// Runs `f`, adding its wall time to stage `name` when the profile is on.
pub fn time<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    if !on() {
        return f();
    }
    let start = Instant::now();
    let out = f();
    let took = start.elapsed().as_secs_f64();
    let mut totals = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
    let e = totals.entry(name).or_insert((0.0, 0));
    e.0 += took;
    e.1 += 1;
    out
}

/// Writes the totals to the file named by [`VAR`] (nothing when the profile is off). A file
/// that cannot be written is reported on stderr: the profile is a benchmark's, never the
/// audit's answer.
pub fn write() {
    if !on() {
        return;
    }
    let Some(path) = std::env::var_os(VAR) else {
        return;
    };
    let totals = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
    let map: BTreeMap<&str, (f64, u64)> = totals.iter().map(|(k, v)| (*k, *v)).collect();
    let text = serde_json::to_string(&map).unwrap_or_default();
    if let Err(e) = std::fs::write(&path, text) {
        eprintln!(
            "{VAR}: the stage profile could not be written to {} ({e})",
            std::path::Path::new(&path).display()
        );
    }
}
