//! The Reproduce line of a report: the `audit` command line that re-runs this process's run,
//! read off the process's own arguments.

thread_local! {
    /// The command line (after `audit`) that stands for this process's in reproduce lines
    /// made on this thread, while [`with_args`] runs.
    static GIVEN_ARGS: std::cell::RefCell<Option<Vec<String>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `args` (the words after `audit`) standing for the process's arguments in the
/// reproduce lines it makes on this thread: for in-process callers (the Python package), whose
/// own arguments are not an `audit` command line.
pub fn with_args<T>(args: Vec<String>, f: impl FnOnce() -> T) -> T {
    let before = GIVEN_ARGS.with(|a| a.replace(Some(args)));
    let out = f();
    GIVEN_ARGS.with(|a| a.replace(before));
    out
}

/// The words after `audit` that stand for this run's command line: those [`with_args`] gives on
/// this thread, else the process's own arguments.
pub(crate) fn command_line() -> Vec<String> {
    GIVEN_ARGS
        .with(|a| a.borrow().clone())
        .unwrap_or_else(|| std::env::args().skip(1).collect())
}

/// The `audit` command line that re-runs this process's run exactly: the arguments as given,
/// less how the result is shown (`--report-dir`, `--no-report`, `--json`, `--quiet`) and the
/// threads (`--jobs`), and except
/// that a time budget (`--budget`, `--max-search-seconds`) and `--trials` are replaced by
/// `--trials K`, the trials this run scored (a time budget stops at a machine-dependent trial; the
/// same trials from the same seed give the same pairs and samples).
pub(crate) fn reproduce_line(trials_scored: Option<usize>) -> String {
    let args = command_line();
    let mut kept: Vec<String> = vec!["audit".into()];
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let timed = ["--budget", "--max-search-seconds", "--trials"];
        // Where the report goes, how quiet the run is and how many threads it uses do not
        // change the result (every run is repeatable on any thread count).
        if a == "--report-dir" || a == "--jobs" {
            i += 2;
            continue;
        }
        if a.starts_with("--report-dir=")
            || a.starts_with("--jobs=")
            || ["--quiet", "-q", "--json", "--no-report"].contains(&a.as_str())
        {
            i += 1;
            continue;
        }
        if trials_scored.is_some() && timed.contains(&a.as_str()) {
            i += 2;
            continue;
        }
        if trials_scored.is_some() && timed.iter().any(|t| a.starts_with(&format!("{t}="))) {
            i += 1;
            continue;
        }
        kept.push(a.clone());
        i += 1;
    }
    if let Some(k) = trials_scored {
        kept.push("--trials".into());
        kept.push(k.to_string());
    }
    shlex::try_join(kept.iter().map(String::as_str)).unwrap_or_else(|_| kept.join(" "))
}

/// [`reproduce_line`] with the sizes a planner chose (`--samples`, …) written out, replacing any
/// the user gave.
pub(crate) fn reproduce_line_planned(
    trials_scored: Option<usize>,
    planned: &[(&str, String)],
) -> String {
    let line = reproduce_line(trials_scored);
    if planned.is_empty() {
        return line;
    }
    let words = shlex::split(&line).unwrap_or_default();
    let mut kept: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        if planned.iter().any(|(f, _)| w == f) {
            i += 2;
            continue;
        }
        if planned.iter().any(|(f, _)| w.starts_with(&format!("{f}="))) {
            i += 1;
            continue;
        }
        kept.push(w.clone());
        i += 1;
    }
    // `--trials K` stays last, as reproduce_line writes it, so that the line is a fixed point of
    // re-running it.
    let trials = kept.iter().position(|w| w == "--trials").map(|i| {
        let t: Vec<String> = kept.drain(i..(i + 2).min(kept.len())).collect();
        t
    });
    for (f, v) in planned {
        kept.push((*f).to_string());
        kept.push(v.clone());
    }
    kept.extend(trials.unwrap_or_default());
    shlex::try_join(kept.iter().map(String::as_str)).unwrap_or_else(|_| kept.join(" "))
}
