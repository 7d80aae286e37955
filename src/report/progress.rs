//! Progress on stderr: a bar for work with a known count (sweeps) and a spinner that appears only
//! when a single task runs longer than a second. Both are hidden when stderr is not a terminal or
//! when the user asked for quiet.

use std::io::IsTerminal;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

fn visible(quiet: bool) -> bool {
    !quiet && std::io::stderr().is_terminal()
}

/// A progress bar over `len` steps on stderr; hidden when `quiet` or stderr is not a terminal.
pub fn bar(len: u64, quiet: bool, message: &str) -> ProgressBar {
    if !visible(quiet) {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template(
        "[{bar:25}] {pos}/{len} audits, {elapsed} elapsed, ~{eta} left  {wide_msg}",
    ) {
        pb.set_style(style.progress_chars("=> "));
    }
    pb.set_message(message.to_string());
    pb
}

/// A spinner shown on stderr only if it is still alive one second after it was started.
/// Dropping it clears the line.
pub struct Spinner {
    done: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Starts the one-second timer; `quiet` or a non-terminal stderr makes it a no-op.
    pub fn start(quiet: bool, message: &str) -> Self {
        Self::start_counting(quiet, message, None)
    }

    /// Like [`Spinner::start`], and when `releases` (the total the run will draw, both sides) is
    /// given, it shows the releases drawn so far (from [`crate::rng::releases_drawn`]) with an
    /// estimate of the sampling time left, then "testing" once they are all drawn.
    pub fn start_counting(quiet: bool, message: &str, releases: Option<u64>) -> Self {
        if !visible(quiet) {
            return Self {
                done: None,
                handle: None,
            };
        }
        let (tx, rx) = mpsc::channel::<()>();
        let message = message.to_string();
        let start_count = crate::rng::releases_drawn();
        let handle = std::thread::spawn(move || {
            if rx.recv_timeout(Duration::from_secs(1)) != Err(mpsc::RecvTimeoutError::Timeout) {
                return;
            }
            let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                .with_elapsed(Duration::from_secs(1));
            if let Ok(style) = ProgressStyle::with_template("{spinner} {elapsed} {wide_msg}") {
                pb.set_style(style);
            }
            pb.set_message(message.clone());
            pb.enable_steady_tick(Duration::from_millis(120));
            match releases {
                None => {
                    let _ = rx.recv();
                }
                Some(total) => {
                    let base = start_count;
                    let started = std::time::Instant::now() - Duration::from_secs(1);
                    while rx.recv_timeout(Duration::from_millis(250))
                        == Err(mpsc::RecvTimeoutError::Timeout)
                    {
                        let drawn = crate::rng::releases_drawn().saturating_sub(base).min(total);
                        let status = if drawn >= total {
                            format!(
                                "{} releases drawn; testing",
                                crate::report::readable(total as f64)
                            )
                        } else if drawn == 0 {
                            "drawing releases".to_string()
                        } else {
                            let t = started.elapsed().as_secs_f64();
                            let left = t * (total - drawn) as f64 / drawn as f64;
                            format!(
                                "{} of {} releases drawn ({:.0} %), sampling ~{} s left",
                                crate::report::readable(drawn as f64),
                                crate::report::readable(total as f64),
                                100.0 * drawn as f64 / total as f64,
                                left.ceil()
                            )
                        };
                        pb.set_message(format!("{message}: {status}"));
                    }
                }
            }
            pb.finish_and_clear();
        });
        Self {
            done: Some(tx),
            handle: Some(handle),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Progress of a dataset search on stderr, kept current by [`Ticker::update`]: on a terminal a
/// line redrawn four times a second; when stderr is not a terminal (CI logs), one plain line
/// about every 10 seconds with the same fields (trial k of the planned K, releases drawn,
/// confirmations, budget used and left, time to go). Nothing when quiet. Dropping it stops it.
pub struct Ticker {
    state: std::sync::Arc<std::sync::Mutex<Option<crate::finders::SearchProgress>>>,
    /// What the run does before its first trial (e.g. measuring the program's speed).
    before: std::sync::Arc<std::sync::Mutex<String>>,
    done: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Starts the display for the search `what`; `planned`: the plan's trials and total seconds
    /// (for "trial k of ~K planned" and the time to go).
    pub fn start(quiet: bool, what: &str, planned: Option<(usize, f64)>) -> Self {
        let planned_trials = planned.map(|p| p.0);
        let planned_total = planned.map(|p| p.1);
        let state = std::sync::Arc::new(std::sync::Mutex::new(None));
        let before = std::sync::Arc::new(std::sync::Mutex::new("searching: first trial".into()));
        if quiet {
            return Self {
                state,
                before,
                done: None,
                handle: None,
            };
        }
        let before_shared = before.clone();
        let terminal = std::io::stderr().is_terminal();
        let (tx, rx) = mpsc::channel::<()>();
        let shared = state.clone();
        let what = what.to_string();
        let base = crate::rng::releases_drawn();
        let started = std::time::Instant::now();
        let handle = std::thread::spawn(move || {
            let line = || -> String {
                let p = shared.lock().ok().and_then(|g| *g);
                let elapsed = started.elapsed().as_secs_f64();
                let drawn = crate::rng::releases_drawn().saturating_sub(base);
                let planned = p.and_then(|p| p.trials_planned).or(planned_trials);
                let trials = match (p, planned) {
                    (Some(p), _) if p.confirming => {
                        format!("confirming (search: {} trial(s) scored)", p.trials_done)
                    }
                    (Some(p), Some(k)) if p.trials_done <= k => {
                        format!("searching: trial {} of ~{k} planned", p.trials_done)
                    }
                    (Some(p), Some(k)) => format!(
                        "searching: trial {} (more than the ~{k} planned: the program runs faster than the probe measured)",
                        p.trials_done
                    ),
                    (Some(p), None) => {
                        format!(
                            "searching: trial {} of at most {}",
                            p.trials_done, p.trials_max
                        )
                    }
                    (None, _) => before_shared.lock().map(|g| g.clone()).unwrap_or_default(),
                };
                let confirms = p.map_or(String::new(), |p| {
                    format!(
                        ", {} of at most {} confirmations",
                        p.confirmations_done, p.confirm_top
                    )
                });
                let budget = match p.and_then(|p| p.budget_seconds) {
                    Some(b) => format!(
                        ", budget {} s: {:.0} s used, {:.0} s left",
                        crate::report::readable(b),
                        elapsed,
                        (b - elapsed).max(0.0)
                    ),
                    None => format!(", {elapsed:.0} s elapsed"),
                };
                // The plan's estimate, when the run is over budget by plan, else the budget.
                let to_go = match (planned_total, p.and_then(|p| p.budget_seconds)) {
                    (Some(t), Some(b)) => {
                        format!(", ~{:.0} s to go", (t.max(b) - elapsed).max(0.0))
                    }
                    (None, Some(b)) => format!(", ~{:.0} s to go", (b - elapsed).max(0.0)),
                    _ => String::new(),
                };
                let budget = budget + &to_go;
                format!(
                    "{what}: {trials}{confirms}, {} releases drawn{budget}",
                    crate::report::readable(drawn as f64)
                )
            };
            if terminal {
                let pb = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
                if let Ok(style) = ProgressStyle::with_template("{spinner} {wide_msg}") {
                    pb.set_style(style);
                }
                pb.enable_steady_tick(Duration::from_millis(200));
                while rx.recv_timeout(Duration::from_millis(250))
                    == Err(mpsc::RecvTimeoutError::Timeout)
                {
                    pb.set_message(line());
                }
                pb.finish_and_clear();
            } else {
                while rx.recv_timeout(Duration::from_secs(10))
                    == Err(mpsc::RecvTimeoutError::Timeout)
                {
                    eprintln!("audit: {}", line());
                }
            }
        });
        Self {
            state,
            before,
            done: Some(tx),
            handle: Some(handle),
        }
    }

    /// What the line says before the first trial is scored.
    pub fn before_search(&self, what: &str) {
        if let Ok(mut g) = self.before.lock() {
            *g = what.to_string();
        }
    }

    /// Records where the search stands.
    pub fn update(&self, p: &crate::finders::SearchProgress) {
        if let Ok(mut g) = self.state.lock() {
            *g = Some(*p);
        }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
