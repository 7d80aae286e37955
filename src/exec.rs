//! Black-box mechanisms in any language: the exec protocol, and the sample-file line format.
//!
//! # The protocol
//! For every batch of releases, dp-audit runs the program (COMMAND split into words like a POSIX
//! shell would, then executed directly, no shell), writes **one JSON object** on its stdin and
//! closes stdin:
//!
//! ```json
//! {"dataset": [0.5, 0.5, 1.0], "samples": 50000, "seed": 12345678901234567}
//! ```
//!
//! A draw of n releases is split into requests of at most [`DEFAULT_BATCH`] releases
//! (`--exec-batch`), so the program's start-up cost is paid once per batch, and up to `--jobs`
//! programs run at once.
//!
//! A record is a JSON number or an array of numbers. The program prints **exactly `samples`
//! lines** on stdout, each a JSON number or a JSON array of numbers (the same length on every
//! line), and exits with status 0. It should draw all its randomness from `seed` (so audits are
//! reproducible); dp-audit derives a fresh seed for every batch from its own seeded streams.
//!
//! Numbers are parsed exactly: serde_json's `float_roundtrip` parser reads back the same f64 bits
//! the program printed (tested on hard cases below), because float-representation features and
//! exact atoms depend on the last bits.
//!
//! # Failures
//! A non-zero exit, too few or too many lines, a non-numeric value, NaN or ∞, inconsistent
//! lengths, or a time-out are errors naming the command, the request, the first bad line and the
//! tail of stderr. No verdict is ever computed from partial data, and a timed-out program is
//! killed.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;

use crate::mechanisms::{
    Dataset, Mechanism, MechanismError, Neighboring, PrivacyClaim, RecordDomain, Samples,
};

/// How long a batch may run by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Releases per request (one process) by default. Starting an interpreter costs 20–200 ms, about
/// what a trivial Python mechanism needs for 10^4–10^5 releases, so batches of 50 000 keep the
/// start-up a modest share of the work: `tests/exec_bench.rs` measured the runner's default
/// chunk of 4 096 at about 11× the time Python alone needs for the samples, and batches of
/// 50 000–65 536 under 2×. 50 000 splits the usual sample counts (multiples of 10^5) into equal
/// batches, so parallel processes finish together. A draw of n releases per side runs ⌈n/50 000⌉
/// processes, up to `--jobs` at once. Slow programs (whose batch would exceed `--exec-timeout`)
/// or wide machines can lower it (`--exec-batch`).
pub const DEFAULT_BATCH: usize = 50_000;

/// A mechanism run as an external program through the exec protocol.
#[derive(Clone, Debug)]
pub struct ExecMechanism {
    command: String,
    words: Arc<Vec<String>>,
    claim: PrivacyClaim,
    neighboring: Neighboring,
    domain: RecordDomain,
    output_dim: usize,
    timeout: Duration,
    batch: usize,
}

fn exec_error(command: &str, message: String) -> MechanismError {
    MechanismError::Sampling {
        mechanism: format!("exec `{command}`"),
        message,
    }
}

impl ExecMechanism {
    /// Prepares `command` (split like a shell would). The output dimension is learned by one
    /// probe request of 2 releases on `probe` (a dataset inside `domain`), which also checks that
    /// the program exists, runs and speaks the protocol.
    pub fn new(
        command: &str,
        claim: PrivacyClaim,
        neighboring: Neighboring,
        domain: RecordDomain,
        timeout: Duration,
        probe: &Dataset,
    ) -> Result<Self, MechanismError> {
        let words = shlex::split(command).ok_or_else(|| {
            exec_error(
                command,
                "cannot split the command into words (unbalanced quotes?)".into(),
            )
        })?;
        if words.is_empty() {
            return Err(exec_error(command, "the command is empty".into()));
        }
        if timeout.is_zero() {
            return Err(exec_error(
                command,
                "the time-out is 0; allowed: > 0 seconds".into(),
            ));
        }
        let mut m = Self {
            command: command.to_string(),
            words: Arc::new(words),
            claim: claim.validated()?,
            neighboring,
            domain,
            output_dim: 0,
            timeout,
            batch: DEFAULT_BATCH,
        };
        domain.validate()?;
        domain.check(probe)?;
        let s = m.request(probe, 2, 0, None)?;
        m.output_dim = s.dim();
        Ok(m)
    }

    /// The command as given.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Sets the releases per request (per process); at least 1. Part of the reproducibility
    /// contract: the same seed gives the same samples only with the same batch size.
    pub fn with_batch_size(mut self, batch: usize) -> Result<Self, MechanismError> {
        if batch == 0 {
            return Err(exec_error(
                &self.command,
                "the batch size is 0; allowed: at least 1 release per request".into(),
            ));
        }
        self.batch = batch;
        Ok(self)
    }

    /// Runs one request and parses its answer. `expected_dim`, when known, is enforced.
    fn request(
        &self,
        dataset: &Dataset,
        n: usize,
        seed: u64,
        expected_dim: Option<usize>,
    ) -> Result<Samples, MechanismError> {
        let request = serde_json::json!({
            "dataset": dataset.to_json_records(),
            "samples": n,
            "seed": seed,
        })
        .to_string();
        let short_request = if request.len() > 200 {
            format!(
                "{}… ({} bytes)",
                &request[..request.floor_char_boundary(200)],
                request.len()
            )
        } else {
            request.clone()
        };
        let fail = |what: String, stderr: &str| {
            let tail: String = {
                let t = stderr.trim_end();
                let start = t.len().saturating_sub(800);
                t[t.floor_char_boundary(start)..].to_string()
            };
            exec_error(
                &self.command,
                format!(
                    "{what}\n  request: {short_request}\n  stderr (tail): {}",
                    if tail.is_empty() { "(empty)" } else { &tail }
                ),
            )
        };
        let mut child = Command::new(&self.words[0])
            .args(&self.words[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| fail(format!("cannot start `{}`: {e}", self.words[0]), ""))?;
        // Reader threads so a chatty program never blocks on a full pipe.
        let mut out = child.stdout.take().expect("piped stdout");
        let mut err = child.stderr.take().expect("piped stderr");
        let out_t = std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = out.read_to_end(&mut s);
            s
        });
        let err_t = std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = err.read_to_end(&mut s);
            s
        });
        if let Some(mut stdin) = child.stdin.take() {
            // A program that exits without reading its input is judged by its exit status and
            // output below, so a broken pipe here is not an error by itself.
            let _ = stdin.write_all(request.as_bytes());
            let _ = stdin.write_all(b"\n");
        }
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if start.elapsed() > self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let stderr =
                        String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned();
                    return Err(fail(
                        format!(
                            "timed out after {:.0} s (--exec-timeout) and was killed",
                            self.timeout.as_secs_f64()
                        ),
                        &stderr,
                    ));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(fail(format!("cannot wait for the program: {e}"), "")),
            }
        };
        let stdout = out_t.join().unwrap_or_default();
        let stderr = String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned();
        if !status.success() {
            return Err(fail(format!("exited with {status}"), &stderr));
        }
        let text =
            String::from_utf8(stdout).map_err(|_| fail("stdout is not UTF-8".into(), &stderr))?;
        parse_lines(&text, Some(n), expected_dim).map_err(|m| fail(m, &stderr))
    }
}

impl Mechanism for ExecMechanism {
    fn id(&self) -> &str {
        &self.command
    }
    fn claim(&self) -> PrivacyClaim {
        self.claim
    }
    fn claim_source(&self) -> String {
        "given on the command line".into()
    }
    fn neighboring(&self) -> Neighboring {
        self.neighboring
    }
    fn domain(&self) -> RecordDomain {
        self.domain
    }
    fn output_dim(&self) -> usize {
        self.output_dim
    }
    fn batch_size(&self) -> Option<usize> {
        Some(self.batch)
    }
    fn sample(
        &self,
        dataset: &Dataset,
        n: usize,
        rng: &mut dyn Rng,
    ) -> Result<Samples, MechanismError> {
        // One request per call: the runner splits large draws into calls of `batch_size()`
        // releases (one process each, run in parallel by rayon), which amortizes start-up cost.
        let seed = rng.next_u64();
        self.request(dataset, n, seed, Some(self.output_dim))
    }
}

/// Parses the line format: one release per line, a JSON number or array of numbers, the same
/// length on every line, finite values only. `expected_n` and `expected_dim` are enforced when
/// given. Errors name the first bad line (1-based) and what is wrong.
pub fn parse_lines(
    text: &str,
    expected_n: Option<usize>,
    expected_dim: Option<usize>,
) -> Result<Samples, String> {
    let mut flat = Vec::new();
    let mut dim = expected_dim;
    let mut count = 0usize;
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        let l = line.trim();
        if l.is_empty() {
            return Err(format!("line {line_no} is empty"));
        }
        let v: serde_json::Value = serde_json::from_str(l).map_err(|e| {
            format!(
                "line {line_no} is not a JSON number or array ({e}): {}",
                clip(l)
            )
        })?;
        let row: Vec<f64> = match &v {
            serde_json::Value::Number(x) => vec![number(x, line_no, l)?],
            serde_json::Value::Array(xs) => xs
                .iter()
                .map(|x| match x {
                    serde_json::Value::Number(x) => number(x, line_no, l),
                    other => Err(format!(
                        "line {line_no}: {other} is not a number: {}",
                        clip(l)
                    )),
                })
                .collect::<Result<_, _>>()?,
            other => {
                return Err(format!(
                    "line {line_no}: {} is not a number or an array of numbers",
                    clip(&other.to_string())
                ));
            }
        };
        if row.is_empty() {
            return Err(format!("line {line_no} is an empty array"));
        }
        match dim {
            None => dim = Some(row.len()),
            Some(d) if d != row.len() => {
                return Err(format!(
                    "line {line_no} has {} values; earlier lines (or the mechanism) have {d}",
                    row.len()
                ));
            }
            _ => {}
        }
        flat.extend(row);
        count += 1;
        if let Some(n) = expected_n
            && count > n
        {
            return Err(format!(
                "more than the {n} lines requested (line {line_no}: {})",
                clip(l)
            ));
        }
    }
    if let Some(n) = expected_n
        && count != n
    {
        return Err(format!("{count} lines printed, {n} requested"));
    }
    let dim = dim.ok_or_else(|| "no releases (empty output)".to_string())?;
    Samples::from_flat(dim, flat).map_err(|e| e.to_string())
}

fn number(x: &serde_json::Number, line_no: usize, line: &str) -> Result<f64, String> {
    let v = x
        .as_f64()
        .ok_or_else(|| format!("line {line_no}: {x} is not representable as f64"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("line {line_no}: {x} is not finite: {}", clip(line)))
    }
}

fn clip(s: &str) -> String {
    if s.len() > 120 {
        format!("{}…", &s[..s.floor_char_boundary(120)])
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hard cases for decimal → f64 parsing: the shortest round-trip representations of
    /// subnormals, extremes, halfway cases and values where a naive parser is off by one ulp.
    #[test]
    fn numbers_round_trip_bit_exactly() {
        // Decimal strings whose correctly rounded value a naive parser misses by an ulp, plus
        // subnormals, extremes and halfway cases; Rust's `str::parse` is correctly rounded.
        let hard = [
            "0.1",
            "2.2250738585072011e-308",
            "2.2250738585072014e-308",
            "5e-324",
            "2.4703282292062328e-324",
            "1.7976931348623157e308",
            "9007199254740993",
            "0.30000000000000004",
            "8.41e21",
            "1.448997445238699",
            "7.2057594037927933e16",
            "-4.4e-323",
            "123456789012345680000",
            "3.0000000000000004440892098500626161694526672363281250001",
        ];
        let text: String = hard.iter().map(|h| format!("{h}\n")).collect();
        let s = parse_lines(&text, Some(hard.len()), None).unwrap();
        for (i, h) in hard.iter().enumerate() {
            let want: f64 = h.parse().unwrap();
            assert_eq!(s.values()[[i, 0]].to_bits(), want.to_bits(), "{h}");
        }
        // Also a sweep of "random" bit patterns: every printed value must read back to its bits.
        let mut bits = 0x9E37_79B9_7F4A_7C15u64;
        let mut values: Vec<f64> = Vec::new();
        for _ in 0..20_000 {
            bits = bits
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = f64::from_bits(bits);
            if v.is_finite() {
                values.push(v);
            }
        }
        let text: String = values.iter().map(|v| format!("{v:e}\n")).collect();
        let s = parse_lines(&text, Some(values.len()), None).unwrap();
        for (i, v) in values.iter().enumerate() {
            assert_eq!(s.values()[[i, 0]].to_bits(), v.to_bits(), "{v:e}");
        }
        let text: String = values.iter().map(|v| format!("[{v}, {v:?}]\n")).collect();
        let s = parse_lines(&text, None, Some(2)).unwrap();
        for (i, v) in values.iter().enumerate() {
            assert_eq!(s.values()[[i, 1]].to_bits(), v.to_bits());
        }
    }

    #[test]
    fn bad_lines_are_named() {
        let e = parse_lines("1\n2\nfoo\n", Some(3), None).unwrap_err();
        assert!(e.contains("line 3"), "{e}");
        let e = parse_lines("1\n[1,2]\n", Some(2), None).unwrap_err();
        assert!(e.contains("line 2") && e.contains("2 values"), "{e}");
        let e = parse_lines("1\n2\n", Some(3), None).unwrap_err();
        assert!(e.contains("2 lines printed, 3 requested"), "{e}");
        let e = parse_lines("1\n2\n3\n", Some(2), None).unwrap_err();
        assert!(e.contains("more than the 2 lines"), "{e}");
        let e = parse_lines("[1, \"a\"]\n", None, None).unwrap_err();
        assert!(e.contains("not a number"), "{e}");
        let e = parse_lines("1e999\n", None, None).unwrap_err();
        assert!(e.contains("line 1"), "{e}");
        let e = parse_lines("[]\n", None, None).unwrap_err();
        assert!(e.contains("empty array"), "{e}");
        assert!(parse_lines("", None, None).is_err());
    }
}
