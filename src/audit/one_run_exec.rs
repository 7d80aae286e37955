//! The one-run audit of a training program in any language (`audit one-run --exec`).
//!
//! # Protocol
//! dp-audit starts `sh -c COMMAND` once and writes one JSON object to its stdin, then closes it:
//!
//! ```json
//! {"protocol": "dp-audit-one-run/1", "seed": 7, "dataset": [[0.2], [0.9]],
//!  "canaries": [[0.41], [0.05], …], "included": [true, false, …]}
//! ```
//!
//! `dataset` is the user's data (`--data FILE`, possibly empty); `canaries` are m records drawn
//! by dp-audit uniformly from the record domain (`--record-range`, `--record-dim`) with their
//! inclusion bits, each true independently with probability 1/2 (its own seeded stream). The
//! program trains once on `dataset` plus the canaries whose bit is true, seeding its own
//! randomness from `seed`, and prints **m scores**, one per canary in order (whitespace or
//! newline separated, or one JSON array): larger means "more likely trained on". Scores must be
//! computed from what the training releases (its final model, or its iterates) and the public
//! canaries, never from the bits: a program that reads the bits into its scores is reported as
//! leaking them, which is what it does.
//!
//! The scores are audited by [`crate::audit::one_run::audit_scores_with`] (Steinke, Nasr &
//! Jagielski 2023, Theorem 3.1, and the Gaussian-DP bound of Mahloujifar et al.) against the claim
//! given with `--claim`. With `--independent-canaries` the program's author declares that the
//! canaries are independent channels, and the tighter order-statistics bound
//! ([`crate::audit::one_run::order`]) decides instead.
//!
//! # Robustness
//! The program runs in its own process group, which is killed when the time-out passes (it
//! covers writing the request and reading every score) or anything fails, so nothing is left
//! running. Wrong counts and non-numbers are errors naming the position.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rand::RngExt;
use serde::Serialize;
use serde_json::json;

use crate::audit::one_run::{CanaryModel, OneRunBound, audit_scores_with, default_guess_sizes};
use crate::error::{Error, Result};
use crate::rng::{Seed, Stream};

/// Stream tags of an exec one-run audit.
pub mod streams {
    /// The canary records.
    pub const CANARIES: u64 = 0x0E_0101;
    /// The inclusion bits.
    pub const INCLUSION: u64 = 0x0E_0102;
}

/// Most bytes of scores read (10^7 canaries at ~25 bytes each).
const MAX_OUTPUT: u64 = 256 << 20;

/// What to run and how.
#[derive(Clone, Debug)]
pub struct ExecOneRunConfig {
    /// The shell command.
    pub command: String,
    /// m: canaries.
    pub canaries: usize,
    /// Record domain of the canaries: each coordinate uniform in [lo, hi].
    pub record_range: (f64, f64),
    /// Record dimension.
    pub record_dim: usize,
    /// The user's data set (records of `record_dim` values).
    pub dataset: Vec<Vec<f64>>,
    /// The claim: (ε, δ).
    pub epsilon: f64,
    /// δ of the claim.
    pub delta: f64,
    /// μ of a Gaussian-DP claim (its verdict is then the Gaussian-DP bound on μ).
    pub mu: Option<f64>,
    /// Seed.
    pub seed: u64,
    /// β.
    pub failure_probability: f64,
    /// Guess sizes (`None`: the default ones).
    pub guess_sizes: Option<Vec<(usize, usize)>>,
    /// The author declares the release a product of per-canary channels: the
    /// order-statistics bound then decides the verdict (see [`crate::audit::one_run::order`]).
    pub independent_canaries: bool,
    /// Time-out of the whole training run.
    pub timeout: Duration,
}

/// What an exec one-run audit found.
#[derive(Clone, Debug, Serialize)]
pub struct ExecOneRunAudit {
    /// The command.
    pub command: String,
    /// The claimed ε.
    pub claimed_epsilon: f64,
    /// The claimed δ.
    pub claimed_delta: f64,
    /// The claimed μ (a Gaussian-DP claim).
    pub claimed_mu: Option<f64>,
    /// The seed.
    pub seed: u64,
    /// The bound.
    pub bound: OneRunBound,
    /// True iff the lower bound exceeds the claim (μ for a Gaussian-DP claim, else ε).
    pub violation: bool,
}

/// Draws the canaries and their bits, runs the program once, and audits its scores.
///
/// # Errors
/// Bad settings; the program fails, times out, or prints the wrong number of scores or a
/// non-number (the position named).
pub fn audit_exec(config: &ExecOneRunConfig) -> Result<ExecOneRunAudit> {
    audit_with(config, &mut |request| {
        run(&config.command, request.into_bytes(), config.timeout)
    })
}

/// As [`audit_exec`], with the training done by `train` in this process instead of by
/// `sh -c COMMAND` (the Python package's `one_run`): it gets the protocol's request (the JSON
/// text the program would read on stdin) and answers what the program would print. The same
/// canaries, bits, score checks and bound; `config.command` only names the target.
///
/// # Errors
/// As [`audit_exec`]; and whatever `train` returns.
pub fn audit_with(
    config: &ExecOneRunConfig,
    train: &mut dyn FnMut(String) -> Result<String>,
) -> Result<ExecOneRunAudit> {
    let m = config.canaries;
    let (lo, hi) = config.record_range;
    let seed = Seed(config.seed);
    let mut rng = seed.rng(Stream::Other {
        tag: streams::CANARIES,
        index: 0,
    });
    let canaries: Vec<Vec<f64>> = (0..m)
        .map(|_| {
            (0..config.record_dim)
                .map(|_| lo + (hi - lo) * rng.random::<f64>())
                .collect()
        })
        .collect();
    let mut bits = seed.rng(Stream::Other {
        tag: streams::INCLUSION,
        index: 0,
    });
    let included: Vec<bool> = (0..m).map(|_| bits.random::<bool>()).collect();
    let request = json!({
        "protocol": "dp-audit-one-run/1",
        "seed": config.seed,
        "dataset": config.dataset,
        "canaries": canaries,
        "included": included,
    })
    .to_string();
    let output = train(request)?;
    let scores = parse_scores(&output, m)?;
    let sizes = config
        .guess_sizes
        .clone()
        .unwrap_or_else(|| default_guess_sizes(m));
    let model = if config.independent_canaries {
        CanaryModel::Independent(
            "declared by the program's author (--independent-canaries): given the inclusion \
             bits, each canary's score depends on its own bit and independent noise only"
                .into(),
        )
    } else {
        CanaryModel::Unknown(
            "not declared; pass --independent-canaries if your release is a product of \
             per-canary channels"
                .into(),
        )
    };
    let bound = audit_scores_with(
        &scores,
        &included,
        config.delta,
        config.failure_probability,
        &sizes,
        &model,
    )?;
    Ok(ExecOneRunAudit {
        command: config.command.clone(),
        claimed_epsilon: config.epsilon,
        claimed_delta: config.delta,
        claimed_mu: config.mu,
        seed: config.seed,
        violation: bound.violates(config.epsilon, config.mu),
        bound,
    })
}

/// The m scores of the program's output: whitespace-separated numbers or one JSON array.
fn parse_scores(text: &str, m: usize) -> Result<Vec<f64>> {
    let t = crate::sources::text::strip_bom(text).trim();
    let bad = |msg: String| Error::InvalidSamples(format!("the training program's scores: {msg}"));
    let scores: Vec<f64> = if t.starts_with('[') {
        let v: Vec<serde_json::Value> = serde_json::from_str(t)
            .map_err(|e| bad(format!("not a JSON array of numbers: {e}")))?;
        v.iter()
            .enumerate()
            .map(|(i, x)| {
                x.as_f64()
                    .ok_or_else(|| bad(format!("score {} is {x}, not a number", i + 1)))
            })
            .collect::<Result<_>>()?
    } else {
        t.split_whitespace()
            .enumerate()
            .map(|(i, w)| {
                w.parse::<f64>().map_err(|_| {
                    bad(format!(
                        "score {} is {:?}, not a number",
                        i + 1,
                        w.chars().take(40).collect::<String>()
                    ))
                })
            })
            .collect::<Result<_>>()?
    };
    if scores.len() != m {
        return Err(bad(format!(
            "{} scores for {m} canaries; allowed: exactly one score per canary, in order",
            scores.len()
        )));
    }
    if let Some(i) = scores.iter().position(|x| !x.is_finite()) {
        return Err(bad(format!(
            "score {} is {}; allowed: finite numbers",
            i + 1,
            scores[i]
        )));
    }
    Ok(scores)
}

/// Runs `sh -c command` with `input` on stdin; returns its stdout. The time-out covers writing
/// and reading; the process group is killed on every way out.
fn run(command: &str, input: Vec<u8>, timeout: Duration) -> Result<String> {
    let err = |msg: String| Error::InvalidConfig(format!("--exec {command:?}: {msg}"));
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| err(format!("cannot start it: {e}")))?;
    let pid = libc::pid_t::try_from(child.id())
        .map_err(|_| err("its process id does not fit a pid_t".into()))?;
    // Killed on every way out, as the exec mechanism's programs are.
    let group = crate::sources::exec::Group::new(pid);
    let start = Instant::now();
    let (tx, rx) = mpsc::channel::<std::result::Result<Vec<u8>, String>>();
    if let Some(mut stdin) = child.stdin.take() {
        std::thread::spawn(move || {
            // A program that exits without reading all of it is its own business: the
            // scores decide.
            let _ = stdin.write_all(&input);
        });
    }
    let stdout = child.stdout.take();
    let tx_out = tx.clone();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = match stdout {
            Some(s) => s
                .take(MAX_OUTPUT)
                .read_to_end(&mut buf)
                .map(|_| buf)
                .map_err(|e| e.to_string()),
            None => Err("no stdout".into()),
        };
        let _ = tx_out.send(r);
    });
    let stderr = child.stderr.take();
    let (etx, erx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr {
            let _ = s.take(64 * 1024).read_to_end(&mut buf);
        }
        let text = String::from_utf8_lossy(&buf).into_owned();
        let tail: String = text
            .chars()
            .rev()
            .take(600)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let _ = etx.send(tail);
    });
    let out = match rx.recv_timeout(timeout) {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(e)) => return Err(err(format!("reading its output failed: {e}"))),
        Err(_) => {
            drop(group);
            let _ = child.wait();
            return Err(err(format!(
                "no complete output within {} s (--exec-timeout); it was stopped",
                timeout.as_secs_f64()
            )));
        }
    };
    let left = timeout.saturating_sub(start.elapsed());
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(5).min(left))
            }
            Ok(None) => {
                drop(group);
                let _ = child.wait();
                return Err(err(
                    "it closed its output but did not exit within --exec-timeout; it was stopped"
                        .into(),
                ));
            }
            Err(e) => return Err(err(format!("waiting for it failed: {e}"))),
        }
    };
    drop(group);
    if !status.success() {
        let tail = erx.recv_timeout(Duration::from_secs(1)).unwrap_or_default();
        return Err(err(format!("it exited with {status}; stderr ends: {tail}")));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_parse_in_both_forms_and_name_bad_positions() {
        assert_eq!(parse_scores("1 2\n3\n", 3).unwrap(), vec![1.0, 2.0, 3.0]);
        assert_eq!(
            parse_scores("[1, 2.5, -3]", 3).unwrap(),
            vec![1.0, 2.5, -3.0]
        );
        let e = parse_scores("1 x 3", 3).unwrap_err().to_string();
        assert!(e.contains("score 2"), "{e}");
        let e = parse_scores("1 2", 3).unwrap_err().to_string();
        assert!(e.contains("2 scores for 3 canaries"), "{e}");
        let e = parse_scores("[1, \"a\", 3]", 3).unwrap_err().to_string();
        assert!(e.contains("score 2"), "{e}");
        assert!(parse_scores("1 NaN 3", 3).is_err());
    }
}
