//! `audit final-model --exec` as a library: a program audited from its final model over many
//! training runs ([`crate::audit::final_model_exec`]), from plain options: the flags checked,
//! the data and candidates read, the report printed.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use super::final_model::{ExecFinalModelOptions, FinalModelOptions};
use crate::audit::final_model_exec::{
    ExecFinalModelAudit, ExecFinalModelConfig, audit_exec_final_model,
};
use crate::error::{Error, Result};
use crate::mechanisms::Neighboring;
use crate::mechanisms::math::readable;
use crate::report::output::{Outcome, to_json};
use crate::sources::exec::ExecMechanism;

/// The records of a file (one JSON number or array per line, `#` and blank lines skipped),
/// each with its name `FILE:LINE`.
fn read_records(path: &Path, flag: &str) -> Result<Vec<(String, Vec<f64>)>> {
    let text = crate::sources::text::read_text(path)
        .map_err(|e| Error::InvalidConfig(format!("{flag} {}: {e}", path.display())))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let bad = || {
            Error::InvalidConfig(format!(
                "{flag} {} line {}: {l:?} is not a record; allowed: a JSON array of finite numbers (or one number)",
                path.display(),
                i + 1
            ))
        };
        let v: serde_json::Value = serde_json::from_str(l).map_err(|_| bad())?;
        let rec: Vec<f64> = match v {
            serde_json::Value::Number(n) => vec![n.as_f64().ok_or_else(bad)?],
            serde_json::Value::Array(a) => a
                .iter()
                .map(|x| x.as_f64().ok_or_else(bad))
                .collect::<Result<_>>()?,
            _ => return Err(bad()),
        };
        out.push((format!("{}:{}", path.display(), i + 1), rec));
    }
    if out.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "{flag} {}: no records in the file",
            path.display()
        )));
    }
    Ok(out)
}

/// The candidate initial models of `--initial-model` for a program: `auto` or `own` (the
/// program's own, no key sent), or files of one JSON array each, comma-separated (`own` may be
/// among them).
fn initial_models(spec: &str) -> Result<Vec<(String, Option<Vec<f64>>)>> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim) {
        match part {
            "auto" | "own" => out.push(("own (no initial_model sent)".to_string(), None)),
            "" | "zero" | "pretrained" | "saturated" => {
                return Err(Error::InvalidConfig(format!(
                    "--initial-model {spec:?} with --exec; allowed: own (the program's own \
                     initial model), or FILE (a JSON array: the parameters the program starts \
                     from), comma-separated for several candidates"
                )));
            }
            file => {
                let recs = read_records(Path::new(file), "--initial-model")?;
                if recs.len() != 1 {
                    return Err(Error::InvalidConfig(format!(
                        "--initial-model {file}: {} lines; allowed: one JSON array (the initial \
                         model's parameters)",
                        recs.len()
                    )));
                }
                out.extend(recs.into_iter().map(|(_, v)| (file.to_string(), Some(v))));
            }
        }
    }
    Ok(out)
}

/// The candidate targets of `--target` for a program: `auto`, or files of records (each line a
/// candidate), comma-separated.
///
/// `auto` is the domain's two corners (every coordinate at the upper end; every one at the lower
/// end) and, for records of two or more coordinates, each corner with its last coordinate at the
/// other end: where records end with their label, these are the corners with the other label,
/// one of which the trained model typically gets wrong. A target the final model fits well has a
/// small gradient (its clipped gradient is not C) and shows little; one it misclassifies keeps
/// a gradient of norm C at every step (Annamalai & De Cristofaro 2024; Yoon et al. 2024 choose
/// the target by its loss). Which one leaks most is measured on the exploration runs.
fn targets(spec: &str, lo: f64, hi: f64, dim: usize) -> Result<Vec<(String, Vec<f64>)>> {
    if spec.trim() == "auto" {
        let mut out = vec![
            ("upper corner".to_string(), vec![hi; dim]),
            ("lower corner".to_string(), vec![lo; dim]),
        ];
        if dim >= 2 {
            let flip = |base: f64, last: f64| {
                let mut v = vec![base; dim];
                v[dim - 1] = last;
                v
            };
            out.push(("upper corner, last at lower".to_string(), flip(hi, lo)));
            out.push(("lower corner, last at upper".to_string(), flip(lo, hi)));
        }
        return Ok(out);
    }
    let mut out = Vec::new();
    for file in spec.split(',').map(str::trim) {
        if file.is_empty() || file.starts_with("dirac") || file == "corner" {
            return Err(Error::InvalidConfig(format!(
                "--target {spec:?} with --exec; allowed: auto (the record domain's two corners) \
                 or FILE (records, one per line, each a candidate), comma-separated"
            )));
        }
        out.extend(read_records(Path::new(file), "--target")?);
    }
    Ok(out)
}

/// The configuration of `audit final-model --exec` from its options.
///
/// # Errors
/// A bad flag, naming the value and what is allowed.
pub fn exec_config(
    o: &FinalModelOptions,
    e: &ExecFinalModelOptions,
) -> Result<ExecFinalModelConfig> {
    super::checks::check_beta(o.failure_probability)?;
    super::checks::check_count("--runs", o.runs, 100, 1_000_000)?;
    super::checks::check_count("--exploration-runs", o.exploration_runs, 20, 100_000)?;
    if !o.params.is_empty() {
        return Err(Error::InvalidConfig(
            "--param applies to the built-in trainer, not to --exec (the program takes its own \
             settings on its command line)"
                .into(),
        ));
    }
    let need = |v: &Option<String>, flag: &str, what: &str| {
        v.clone()
            .ok_or_else(|| Error::InvalidConfig(format!("{flag} is required with --exec: {what}")))
    };
    let claim_text = need(
        &e.claim,
        "--claim",
        "the program's claim, e.g. gdp:0.5 or approx:2:1e-5",
    )?;
    let claim = super::claim::parse_claim_arg(&claim_text, Neighboring::AddRemove)?.claim;
    let range = need(
        &e.record_range,
        "--record-range",
        "the records' range L:U (every coordinate of D and of the target in it)",
    )?;
    let (lo, hi) = super::checks::parse_range(&range)?;
    let data_path = e.data.clone().ok_or_else(|| {
        Error::InvalidConfig(
            "--data FILE is required with --exec: the training data D, one record per line \
             (a JSON array)"
                .into(),
        )
    })?;
    let rows = read_records(&data_path, "--data")?;
    let dim = rows[0].1.len();
    let domain = ExecMechanism::domain(lo, hi, dim);
    let data = crate::audit::bayesian::read_data(&data_path, &domain)?;
    if !(e.delta > 0.0 && e.delta < 1.0) {
        return Err(Error::InvalidConfig(format!(
            "--delta {}; allowed: 0 < delta < 1",
            e.delta
        )));
    }
    if !(e.timeout > 0.0 && e.timeout.is_finite()) || e.batch == 0 {
        return Err(Error::InvalidConfig(format!(
            "--exec-timeout {} / --exec-batch {}; allowed: a timeout > 0 seconds and at least 1 \
             run per request",
            e.timeout, e.batch
        )));
    }
    Ok(ExecFinalModelConfig {
        command: e.command.clone(),
        claim,
        delta: e.delta,
        data,
        domain,
        initial_models: initial_models(&o.initial_model)?,
        targets: targets(&o.target, lo, hi, dim)?,
        runs: o.runs,
        exploration_runs: o.exploration_runs,
        seed: o.seed,
        failure_probability: o.failure_probability,
        timeout: Duration::from_secs_f64(e.timeout),
        batch: e.batch,
    })
}

/// `audit final-model --exec`: what it prints and its exit code (1 = violation found).
///
/// # Errors
/// A bad flag; the program; the tester.
pub fn final_model_exec(o: &FinalModelOptions, e: &ExecFinalModelOptions) -> Result<Outcome> {
    let config = exec_config(o, e)?;
    let audit = audit_exec_final_model(&config)?;
    let code = u8::from(audit.violation);
    let stdout = if o.json {
        to_json(&serde_json::json!({
            "mode": "final-model-exec",
            "tool_version": env!("CARGO_PKG_VERSION"),
            "audit": audit,
        }))?
    } else {
        text(&audit)
    };
    Ok(Outcome::new(stdout, code))
}

/// The text report.
pub fn text(a: &ExecFinalModelAudit) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "final-model audit of `{}` ({})",
        a.program, a.threat_model
    );
    let _ = writeln!(out, "claim        {}", a.claim);
    let _ = writeln!(
        out,
        "choices      initial model {}, target {} = {:?} (score: {}); made on exploration \
         runs only ({} per side and candidate, search streams disjoint from the confirming \
         runs; no beta spent)",
        a.initial_model, a.target.0, a.target.1, a.score, a.exploration_runs
    );
    for r in &a.exploration {
        let _ = writeln!(
            out,
            "  initial model {:<30} target {:<28} mu (point) {}{}",
            r.initial_model,
            r.target,
            r.mu_point.map_or("-".to_string(), |m| format!("{m:.3}")),
            if r.initial_model == a.initial_model && r.target == a.target.0 {
                "  <- confirmed"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        out,
        "confirmed    {} fresh runs per side, beta = {}, route: {}",
        a.runs,
        readable(a.beta),
        a.route
    );
    if let Some(m) = a.mu_lower {
        let _ = writeln!(out, "mu_lower     {m:.4}");
    }
    let _ = writeln!(
        out,
        "epsilon      >= {:.4} at delta = {}",
        a.epsilon_lower,
        readable(a.delta)
    );
    let _ = writeln!(out, "inequality   {}", a.inequality);
    let _ = writeln!(
        out,
        "verdict      {}",
        if a.violation {
            "VIOLATION: the program's final models separate D from D + {target} more than its claim allows (exit 1)"
        } else {
            "no violation found at these runs (exit 0); a pass is not a proof of privacy"
        }
    );
    out
}
