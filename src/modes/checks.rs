//! The checks every mode makes of its numbers before any work, with the errors the user reads
//! ("`--flag v`; allowed: …"), and the testers a `--tester` list names. Shared by the library
//! layer of each mode and the command line.

use crate::error::{Error, Result};
use crate::mechanisms::math::readable;

/// Longest `--exec-timeout`: a day.
pub const MAX_EXEC_TIMEOUT_SECONDS: f64 = 86_400.0;
/// Longest `--max-search-seconds`: a week.
pub const MAX_SEARCH_SECONDS: f64 = 604_800.0;
/// Smallest β a run accepts: below it the bounds' tail computations lose their meaning (γ = β/20
/// must stay a normal f64 with room to spare), and no audit needs it.
pub const MIN_FAILURE_PROBABILITY: f64 = 1e-100;

/// Checks seconds given on the command line: finite, from 1 ms to `max`.
pub(crate) fn check_seconds(flag: &str, v: f64, max: f64) -> Result<std::time::Duration> {
    if !(v.is_finite() && (1e-3..=max).contains(&v)) {
        return Err(Error::InvalidConfig(format!(
            "{flag} {}; allowed: 0.001 to {} seconds",
            readable(v),
            readable(max)
        )));
    }
    Ok(std::time::Duration::from_secs_f64(v))
}

/// Whether the sequential audit can stand for every tester `--tester SPEC` names (each tester
/// says so, [`crate::testers::PropertyTester::sequential`]); an unknown name cannot.
pub fn runs_sequentially(spec: &str) -> bool {
    crate::testers::parse_list(spec).is_ok_and(|l| l.iter().all(|t| t.sequential()))
}

/// Checks `--failure-probability`: MIN_FAILURE_PROBABILITY ≤ β < 1.
pub(crate) fn check_beta(v: f64) -> Result<()> {
    if !(v.is_finite() && (MIN_FAILURE_PROBABILITY..1.0).contains(&v)) {
        return Err(Error::InvalidConfig(format!(
            "--failure-probability {}; allowed: {} ≤ β < 1",
            readable(v),
            readable(MIN_FAILURE_PROBABILITY)
        )));
    }
    Ok(())
}

/// The fewest releases per side an audit draws (`--samples`): below it no tester's bound is
/// worth its β.
pub const MIN_SAMPLES_PER_SIDE: usize = 100;

/// Checks a count flag against `[lo, hi]`.
pub(crate) fn check_count(flag: &str, v: usize, lo: usize, hi: usize) -> Result<()> {
    if !(lo..=hi).contains(&v) {
        return Err(Error::InvalidConfig(format!(
            "{flag} {v}; allowed: {} to {}",
            readable(lo as f64),
            readable(hi as f64)
        )));
    }
    Ok(())
}

/// The largest `--jobs`: 4 × the cores this process may use.
pub fn max_jobs() -> usize {
    4 * std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Parses a count flag: a whole number, also in scientific notation (`1e5`, `2.5e4`).
pub(crate) fn parse_count(s: &str) -> std::result::Result<usize, String> {
    if let Ok(n) = s.trim().parse::<usize>() {
        return Ok(n);
    }
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 => Ok(v as usize),
        _ => Err(format!(
            "{s:?} is not a whole number ≥ 0; allowed: e.g. 100000 or 1e5"
        )),
    }
}

/// The testers `--tester SPEC` names for `claim`: with `all`, those that can test the claim, and
/// the others as `name: why` (reported, never silently dropped); a named tester that cannot test
/// the claim stays and its error is shown.
#[allow(clippy::type_complexity)]
pub(crate) fn testers_for(
    spec: &str,
    claim: &crate::mechanisms::PrivacyClaim,
    samples_per_side: usize,
) -> Result<(Vec<Box<dyn crate::testers::PropertyTester>>, Vec<String>)> {
    let list = crate::testers::parse_list(spec)?;
    if spec.trim() != "all" {
        return Ok((list, Vec::new()));
    }
    let (keep, skipped) = crate::testers::applicable(list, claim, samples_per_side)?;
    if keep.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "--tester all: no tester can test claim {claim} ({})",
            skipped.join("; ")
        )));
    }
    Ok((keep, skipped))
}

/// Parses `--record-range LO:HI`: finite LO < HI.
pub(crate) fn parse_range(s: &str) -> Result<(f64, f64)> {
    let bad = || {
        Error::InvalidConfig(format!(
            "--record-range {s}; allowed: LO:HI with finite LO < HI, e.g. 0:1 or -5:5"
        ))
    };
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    let lo: f64 = a.trim().parse().map_err(|_| bad())?;
    let hi: f64 = b.trim().parse().map_err(|_| bad())?;
    if !(lo.is_finite() && hi.is_finite()) {
        return Err(bad());
    }
    if lo >= hi {
        return Err(Error::InvalidConfig(format!(
            "--record-range {s}: LO = {lo} is not below HI = {hi}; allowed: LO:HI with LO < HI, e.g. {}:{}",
            hi.min(lo),
            hi.max(lo)
        )));
    }
    Ok((lo, hi))
}
