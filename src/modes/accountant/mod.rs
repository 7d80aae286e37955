//! `audit accountant` from plain options ([`AccountantOptions`], its defaults written once in
//! `impl Default`): the (ε, δ) accountants of [`dp_audit_accounting`] over a privacy ledger (a
//! file, events given, or one block of T steps at (q, z)), each reached through the one
//! [`dp_audit_accounting::PrivacyAccountant`] interface and reported in turn; the noise
//! multiplier that reaches a target ε; and the Bayesian accountant (`bayesian.rs`). The CLI
//! (`commands::accountant`) and the Python package build the options and call [`account`]; both
//! print what it returns.
//!
//! A new accountant of [`dp_audit_accounting::accountants`] is composed, queried and reported
//! here without an edit: its answer is printed as `ε ≤ upper` under its name and recorded under
//! its name in the JSON (its lower bound and parameter beside), until a line of its own is
//! written in `answer_line` and `answer_json`.

mod bayesian;
mod dpfy;
pub use dpfy::scope_from_flags;

use std::fmt::Write as _;
use std::path::PathBuf;

use dp_audit_accounting::dpfy::DpFyScope;
use dp_audit_accounting::ledger::ledger_line;
use dp_audit_accounting::math::readable;
use dp_audit_accounting::pld::{PldAccountant, noise_multiplier_for_policy};
use dp_audit_accounting::{
    AccountingError, EpsilonRange, LedgerEvent, Neighboring, SamplingPolicy,
};
use serde_json::json;

use crate::error::{Error, Result};
use crate::report::output::{Outcome, to_json};

/// The neighboring relation when none is given.
pub const DEFAULT_NEIGHBORS: &str = "add-remove";
/// The quantiles (in %) of the distance samples at which `--bayesian` prints the individual ε.
pub const DEFAULT_DISTANCE_QUANTILES: &str = "50,90,99,100";
/// The percentiles of the Bayesian percentile curve.
pub const DEFAULT_MARKOV_PERCENTILES: &str = "50,90,99";
/// δ when none is given (the default δ of a `ledger:FILE` claim too).
pub const DEFAULT_DELTA: f64 = 1e-5;

/// What `audit accountant` accounts, as plain values (`audit accountant --help` says what each
/// flag means; the field of flag `--x-y` is `x_y`). `None`: the flag was not given (its default
/// applies: [`Default`] holds the others).
#[derive(Clone, Debug, PartialEq)]
pub struct AccountantOptions {
    /// q in (0, 1].
    pub sampling_rate: Option<f64>,
    /// z > 0.
    pub noise_multiplier: Option<f64>,
    /// T, 1 to 2^53.
    pub steps: Option<u64>,
    /// How the batches of the q, z, T form are drawn: `poisson` (when `None`) or `fixed-size`.
    pub policy: Option<String>,
    /// δ in (0, 1).
    pub delta: f64,
    /// Instead of ε: the smallest z whose PLD ε upper bound is at most this.
    pub target_epsilon: Option<f64>,
    /// A privacy ledger file instead of q, z, T (its name, when `ledger_events` holds its events).
    pub ledger: Option<PathBuf>,
    /// The ledger's events when the caller has them already (the file `ledger` is then not
    /// read; it names them in the output).
    pub ledger_events: Option<Vec<(LedgerEvent, SamplingPolicy)>>,
    /// With `ledger_events`: the scope its `dp-fy-ml` line states, when the caller read it.
    pub ledger_scope: Option<DpFyScope>,
    /// `add-remove`, `replace-one` or `zero-out`.
    pub neighbors: String,
    /// Bayesian DP (Triastcyn & Faltings 2020) instead of DP.
    pub bayesian: bool,
    /// With `bayesian`: the file of distance samples (its name, when `data_text` holds its text).
    pub data: Option<PathBuf>,
    /// With `bayesian`: the text of the distance file when the caller has it already (the file
    /// `data` is then not read).
    pub data_text: Option<String>,
    /// With `bayesian`, instead of `data`: the shape of Weibull-drawn distances.
    pub weibull_shape: Option<f64>,
    /// The Weibull scale (`None`: 0.2).
    pub weibull_scale: Option<f64>,
    /// How many distances to draw (`None`: 1000).
    pub weibull_samples: Option<u64>,
    /// The seed of the draws (`None`: 0).
    pub seed: Option<u64>,
    /// With `bayesian`: where to write the paper's curves.
    pub curves: Option<PathBuf>,
    /// With `bayesian`: γ (`None`: δ/1000).
    pub gamma: Option<f64>,
    /// With `bayesian`: quantiles (in %) of the distances, comma-separated.
    pub distance_quantiles: String,
    /// With `bayesian`: the percentile curve's percentiles, comma-separated.
    pub markov_percentiles: String,
    /// With `bayesian`: `distribution-free` or `student-t` (`None`: chosen from the data).
    pub estimator: Option<String>,
    /// With `bayesian`: the largest possible distance (`None`: 1).
    pub max_distance: Option<f64>,
    /// With `bayesian`: gradients are not clipped.
    pub unclipped: bool,
    /// With `bayesian`: the group size K (`None`: 1).
    pub group: Option<u64>,
    /// With `bayesian`: held-out distances to compare with.
    pub test_distances: Option<PathBuf>,
    /// DP-fy ML: the data accesses the guarantee covers (`single-training-run` or
    /// `training-and-tuning`; `None`: the ledger's `dp-fy-ml` line, or not stated).
    pub data_accesses: Option<String>,
    /// DP-fy ML: the outputs the guarantee covers (`final-model`, `checkpoints` or
    /// `every-iterate`; `None`: the ledger's, or not stated).
    pub outputs_covered: Option<String>,
    /// JSON instead of text.
    pub json: bool,
}

impl Default for AccountantOptions {
    fn default() -> Self {
        Self {
            sampling_rate: None,
            noise_multiplier: None,
            steps: None,
            policy: None,
            delta: DEFAULT_DELTA,
            target_epsilon: None,
            ledger: None,
            ledger_events: None,
            ledger_scope: None,
            neighbors: DEFAULT_NEIGHBORS.to_string(),
            bayesian: false,
            data: None,
            data_text: None,
            weibull_shape: None,
            weibull_scale: None,
            weibull_samples: None,
            seed: None,
            curves: None,
            gamma: None,
            distance_quantiles: DEFAULT_DISTANCE_QUANTILES.to_string(),
            markov_percentiles: DEFAULT_MARKOV_PERCENTILES.to_string(),
            estimator: None,
            max_distance: None,
            unclipped: false,
            group: None,
            test_distances: None,
            data_accesses: None,
            outputs_covered: None,
            json: false,
        }
    }
}

/// `audit accountant`: what it prints (text or JSON) for these options.
///
/// # Errors
/// A value out of range or a combination refused, naming the flag and what is allowed; an
/// accountant's error, named by the flags its values came from.
pub fn account(o: &AccountantOptions) -> Result<Outcome> {
    if o.ledger_events.is_some() {
        check_given_events(o)?;
    }
    if o.data_text.is_some() {
        check_given_distances(o)?;
    }
    if !(o.delta > 0.0 && o.delta < 1.0) {
        return Err(bad("--delta", o.delta, "0 < δ < 1"));
    }
    if o.bayesian {
        return bayesian::account(o);
    }
    if o.ledger.is_some() && o.policy.is_some() {
        return Err(Error::InvalidConfig(
            "--policy with --ledger; allowed: --policy with --sampling-rate/--steps only (a ledger's sampling events say their own policy: \"policy\": \"fixed-size\")".into(),
        ));
    }
    let neighbors: Neighboring = o.neighbors.parse().map_err(|_| {
        bad(
            "--neighbors",
            &o.neighbors,
            "add-remove, replace-one or zero-out",
        )
    })?;
    match plan(o, neighbors)? {
        Plan::Ledger(ledger) => account_ledger(o, neighbors, &ledger),
        Plan::Inverse {
            q,
            steps,
            target,
            policy,
        } => inverse(o, q, steps, target, neighbors, policy),
    }
}

/// Events given with the options (the Python package's list): what a ledger file refuses
/// beside it is refused here too.
fn check_given_events(o: &AccountantOptions) -> Result<()> {
    if o.ledger.is_none() {
        return Err(Error::InvalidConfig(
            "ledger events given without a ledger name; allowed: a name in `ledger`".into(),
        ));
    }
    // What clap refuses beside --ledger (conflicts_with_all) is refused here too.
    if o.bayesian
        || o.target_epsilon.is_some()
        || o.sampling_rate.is_some()
        || o.noise_multiplier.is_some()
        || o.steps.is_some()
        || o.policy.is_some()
    {
        return Err(Error::InvalidConfig(
            "a ledger with sampling_rate, noise_multiplier, steps, target_epsilon, policy or bayesian; allowed: a ledger alone (its sampling events say their policy), or those settings without one".into(),
        ));
    }
    Ok(())
}

/// Distances given as text with the options (the Python package's array): what `--data FILE`
/// refuses beside it is refused here too.
fn check_given_distances(o: &AccountantOptions) -> Result<()> {
    if !o.bayesian || o.data.is_none() {
        return Err(Error::InvalidConfig(
            "distances given as text without bayesian and a data name; allowed: bayesian set and a name in `data`".into(),
        ));
    }
    // What clap refuses beside --bayesian (conflicts_with_all) is refused here too.
    if o.ledger.is_some() {
        return Err(Error::InvalidConfig(
            "bayesian with a ledger; allowed: sampling_rate, steps, and noise_multiplier or target_epsilon".into(),
        ));
    }
    Ok(())
}

/// What to compute: the accountants on a ledger, or the noise multiplier of a target ε.
enum Plan {
    Ledger(Ledger),
    Inverse {
        q: f64,
        steps: u64,
        target: f64,
        policy: SamplingPolicy,
    },
}

/// The ledger accounted: from the file (or the events given), or one block of T steps at (q, z)
/// (`single`, with its `policy`).
struct Ledger {
    events: Vec<(LedgerEvent, SamplingPolicy)>,
    /// What the guarantee covers (DP-fy ML): the ledger's `dp-fy-ml` line, the flags over it.
    scope: DpFyScope,
    single: Option<(f64, f64, u64)>,
    policy: SamplingPolicy,
}

/// The ledger of the options, or the inverse search they ask for, their values checked.
fn plan(o: &AccountantOptions, neighbors: Neighboring) -> Result<Plan> {
    if let Some(path) = &o.ledger {
        let context = format!("--ledger {}", path.display());
        let (events, from_ledger) = match &o.ledger_events {
            Some(events) => (events.clone(), o.ledger_scope.unwrap_or_default()),
            None => (
                crate::sources::text::read_ledger(path, &context)?,
                crate::sources::text::read_ledger_scope(path, &context)?,
            ),
        };
        return Ok(Plan::Ledger(Ledger {
            events,
            scope: dpfy::scope(o, from_ledger)?,
            single: None,
            policy: SamplingPolicy::Poisson,
        }));
    }
    let policy = policy_of(o, neighbors)?;
    let q = o.sampling_rate.unwrap_or(f64::NAN);
    if !(q > 0.0 && q <= 1.0) {
        return Err(bad("--sampling-rate", q, "0 < q ≤ 1"));
    }
    let steps = o.steps.unwrap_or(0);
    if steps == 0 {
        return Err(bad("--steps", steps, "a whole number ≥ 1"));
    }
    if let Some(target) = o.target_epsilon {
        return Ok(Plan::Inverse {
            q,
            steps,
            target,
            policy,
        });
    }
    let z = o.noise_multiplier.unwrap_or(f64::NAN);
    if !(z.is_finite() && z > 0.0) {
        return Err(bad("--noise-multiplier", z, "a finite number > 0"));
    }
    let events = vec![
        (
            LedgerEvent::Sampling {
                probability: q,
                repetitions: steps,
            },
            policy,
        ),
        (
            LedgerEvent::GaussianSum {
                noise_multiplier: z,
            },
            policy,
        ),
    ];
    Ok(Plan::Ledger(Ledger {
        events,
        scope: dpfy::scope(o, DpFyScope::default())?,
        single: Some((q, z, steps)),
        policy,
    }))
}

/// One accountant's answer: `None` when it does not account under the relation asked for.
struct Answer {
    name: &'static str,
    range: Option<EpsilonRange>,
    /// Why an accountant that applies under the relation did not account this ledger (a query
    /// kind or combination it does not take, e.g. a subsampled Laplace sum for the RDP
    /// accountant); `None` for a relation it does not account.
    refused: Option<String>,
}

/// Every accountant of [`dp_audit_accounting::accountants`] on the ledger, in turn, through
/// the one interface. One that accounts full batches only is asked for the q, z, T form at
/// q = 1 only, and left out silently where its relation does not hold; any other is reported
/// as not computed under a relation it does not account.
fn run_accountants(
    ledger: &Ledger,
    neighbors: Neighboring,
    delta: f64,
    named: &dyn Fn(AccountingError) -> Error,
) -> Result<Vec<Answer>> {
    let full_batch = ledger.single.is_some_and(|(q, _, _)| q == 1.0);
    let mut answers = Vec::new();
    for mut accountant in dp_audit_accounting::accountants(neighbors) {
        let scope = accountant.scope();
        let name = accountant.name();
        let applies = scope.relations.contains(&neighbors);
        if scope.full_batch_only && !(full_batch && applies) {
            continue;
        }
        if !applies {
            answers.push(Answer {
                name,
                range: None,
                refused: None,
            });
            continue;
        }
        let composed = accountant.compose_ledger(&ledger.events);
        if let (Err(e), true) = (&composed, name != "pld" && has_other_queries(ledger)) {
            // A ledger with Laplace, randomized-response or attribution-summary events: the
            // PLD accountant answers; another that does not take one of them says why.
            answers.push(Answer {
                name,
                range: None,
                refused: Some(e.to_string()),
            });
            continue;
        }
        composed.map_err(named)?;
        let spinner = crate::report::progress::Spinner::start(false, &spinner_words(name));
        let range = accountant.epsilon(delta).map_err(named)?;
        drop(spinner);
        answers.push(Answer {
            name,
            range: Some(range),
            refused: None,
        });
    }
    Ok(answers)
}

/// True when the ledger holds a query other than a Gaussian sum.
fn has_other_queries(ledger: &Ledger) -> bool {
    ledger
        .events
        .iter()
        .any(|(e, _)| e.is_query() && !matches!(e, LedgerEvent::GaussianSum { .. }))
}

/// What the spinner says while an accountant composes (after a second, on a terminal).
fn spinner_words(name: &str) -> String {
    match name {
        "pld" => "composing the privacy loss distribution".to_string(),
        other => format!("composing the ledger ({other} accountant)"),
    }
}

/// The accountants on a ledger (or one block): what `audit accountant` prints.
fn account_ledger(
    o: &AccountantOptions,
    neighbors: Neighboring,
    ledger: &Ledger,
) -> Result<Outcome> {
    // Errors of the accountants name the flags the values came from.
    let flags = match &o.ledger {
        Some(p) => format!("--ledger {}", p.display()),
        None => "--sampling-rate/--noise-multiplier/--steps".to_string(),
    };
    let named = |e: AccountingError| {
        let e = e.to_string();
        match grid_too_small(&e) {
            // The coarsest grid was tried already: say what the user can change.
            Some(e) => Error::InvalidConfig(format!(
                "{flags}: too many steps for the PLD accountant even on its coarsest loss grid ({e}); allowed: fewer steps (10^9 steps of q = 0.01 take about 4 s)"
            )),
            None => Error::InvalidConfig(format!("{flags}: {e}")),
        }
    };
    let answers = run_accountants(ledger, neighbors, o.delta, &named)?;
    let stdout = if o.json {
        ledger_json(o, neighbors, ledger, &answers)?
    } else {
        ledger_text(o, neighbors, ledger, &answers)
    };
    Ok(Outcome::new(stdout, 0))
}

/// The PLD accountant's upper bound (what the attack bound and the JSON's summary read).
fn pld_upper(answers: &[Answer]) -> f64 {
    answers
        .iter()
        .find(|a| a.name == "pld")
        .and_then(|a| a.range)
        .map_or(f64::INFINITY, |r| r.upper)
}

/// True when a sampling event of the ledger draws fixed-size batches.
fn has_fixed_size(ledger: &Ledger) -> bool {
    ledger
        .events
        .iter()
        .any(|(_, p)| *p == SamplingPolicy::FixedSize)
}

/// `--json` of the accountants on a ledger: the input, then each accountant's answer under its
/// name (`null` where it was not computed or does not apply), the attack bound after the PLD's.
fn ledger_json(
    o: &AccountantOptions,
    neighbors: Neighboring,
    ledger: &Ledger,
    answers: &[Answer],
) -> Result<String> {
    let (q, z, steps) = match ledger.single {
        Some((q, z, t)) => (Some(q), Some(z), Some(t)),
        None => (None, None, None),
    };
    let mut record = json!({
        "sampling_rate": q,
        "noise_multiplier": z,
        "steps": steps,
        // The q, z, T form's --policy; a ledger's events say theirs.
        "policy": ledger.single.map(|_| ledger.policy.name()),
        "ledger": o.ledger.as_ref().map(|p| p.display().to_string()),
        // Each line as the ledger writes it: a Poisson sample without its (default) policy.
        "ledger_events": ledger.events
            .iter()
            .map(|(e, p)| serde_json::from_str(&ledger_line(e, *p)))
            .collect::<std::result::Result<Vec<serde_json::Value>, _>>()
            .map_err(|e| Error::InvalidConfig(format!("ledger events as JSON: {e}")))?,
        "delta": o.delta,
        "neighbors": neighbors.to_string(),
    });
    let fixed_size = has_fixed_size(ledger);
    let (_, dp_fy) = dpfy::report(
        o,
        neighbors,
        &ledger.events,
        ledger.scope,
        pld_upper(answers),
    );
    if let Some(map) = record.as_object_mut() {
        for name in dp_audit_accounting::accountants(neighbors)
            .iter()
            .map(|a| a.name())
        {
            let range = answers
                .iter()
                .find(|a| a.name == name)
                .and_then(|a| a.range);
            let mut value = range.map_or(serde_json::Value::Null, |r| {
                answer_json(name, &r, fixed_size)
            });
            if let (Some(v), true) = (
                value.as_object_mut(),
                name == "pld" && has_other_queries(ledger),
            ) {
                v.insert("method".into(), json!(PLD_METHOD_EVENTS));
            }
            map.insert(name.replace('-', "_"), value);
            if name == "pld" {
                map.insert(
                    "attack_success_bound".into(),
                    json!(crate::record::result::attack_success_bound(
                        pld_upper(answers),
                        o.delta
                    )),
                );
            }
        }
        map.insert("dp_fy_ml".into(), dp_fy);
    }
    to_json(&record)
}

/// One accountant's answer in the JSON record.
fn answer_json(name: &str, r: &EpsilonRange, fixed_size: bool) -> serde_json::Value {
    let parameter = r.parameter.map_or(f64::NAN, |(_, v)| v);
    match name {
        "pld" => {
            json!({"epsilon_upper": r.upper, "epsilon_lower": r.lower, "discretization": parameter, "method": if fixed_size { PLD_METHOD_FIXED_SIZE } else { PLD_METHOD }})
        }
        "rdp" => json!({"epsilon": r.upper, "order": parameter, "method": RDP_METHOD}),
        "exact-gaussian" => {
            json!({"epsilon": r.upper, "method": "exact Gaussian privacy profile, mu = sqrt(T)/z (Balle & Wang 2018; Dong, Roth & Su 2019)"})
        }
        "zcdp" => {
            json!({"rho": parameter, "epsilon": r.upper, "method": "rho = T/(2 z^2) (Bun & Steinke 2016), converted through RDP at the best order"})
        }
        _ => {
            let mut v = json!({"epsilon": r.upper, "epsilon_lower": r.lower});
            if let (Some(map), Some((key, value))) = (v.as_object_mut(), r.parameter) {
                map.insert(key.to_string(), json!(value));
            }
            v
        }
    }
}

/// The text of the accountants on a ledger: what was accounted, one line per accountant, and
/// what the PLD bound means for an attacker.
fn ledger_text(
    o: &AccountantOptions,
    neighbors: Neighboring,
    ledger: &Ledger,
    answers: &[Answer],
) -> String {
    let mut s = match (ledger.single, &o.ledger) {
        (Some((q, z, steps)), _) => format!(
            "{}: q = {q:?}, z = {z:?}, T = {steps}, δ = {}, {neighbors} neighbors\n",
            policy_words(ledger.policy),
            readable(o.delta)
        ),
        (None, Some(path)) => format!(
            "privacy ledger {} ({} events, {} sampled block(s) with queries), δ = {}, {neighbors} neighbors\n",
            path.display(),
            ledger.events.len(),
            ledger
                .events
                .iter()
                .filter(|(e, _)| matches!(e, LedgerEvent::Sampling { .. }))
                .count(),
            readable(o.delta)
        ),
        (None, None) => String::new(),
    };
    for a in answers {
        s.push_str(&answer_line(a, ledger, neighbors));
    }
    let upper = pld_upper(answers);
    if upper.is_finite() {
        // What the claim means for an attacker, beside the ε it states (docs/json.md).
        let _ = writeln!(
            s,
            "attack           a membership attacker (prior 1/2, telling D from D') succeeds at most {} of the time under the PLD bound's (ε, δ): (e^ε + δ)/(1 + e^ε), 1/(1 + e^−ε) at δ = 0",
            crate::record::result::percent(
                crate::record::result::attack_success_bound(upper, o.delta),
                true
            )
        );
    }
    s + &dpfy::report(o, neighbors, &ledger.events, ledger.scope, upper).0
}

/// One accountant's line(s) of the text.
fn answer_line(a: &Answer, ledger: &Ledger, neighbors: Neighboring) -> String {
    let Some(r) = a.range else {
        let label = match a.name {
            "rdp" => "RDP accountant  ",
            other => other,
        };
        if let Some(why) = &a.refused {
            return format!("{label} not computed for this ledger: {why}\n");
        }
        return format!("{label} (add-remove only; not computed for {neighbors})\n");
    };
    let parameter = r.parameter.map_or(f64::NAN, |(_, v)| v);
    match a.name {
        "pld" => pld_line(&r, ledger),
        "rdp" => format!(
            "RDP accountant   ε ≤ {:.7}  (optimal order {parameter}; Mironov, Talwar & Zhang 2019; conversion of Balle et al. 2020)\n",
            r.upper
        ),
        "exact-gaussian" => format!(
            "exact Gaussian   ε = {:.7}  (μ = √T/z = {parameter:.6}; analytic Gaussian, Balle & Wang 2018)\n",
            r.upper
        ),
        "zcdp" => format!(
            "zCDP             ε = {:.7}  (ρ = {parameter:.6e}; Bun & Steinke 2016)\n",
            r.upper
        ),
        other => format!("{other:<16} ε ≤ {:.7}\n", r.upper),
    }
}

/// The PLD accountant's line: the upper bound rounded up and the lower one down, to seven
/// decimals; the coarser grid when one was needed; the fixed-size rule when it applied.
fn pld_line(r: &EpsilonRange, ledger: &Ledger) -> String {
    let grid = r
        .parameter
        .map_or(dp_audit_accounting::pld::DEFAULT_DISCRETIZATION, |(_, v)| v);
    // Seven decimals, each rounded to its safe side: the upper bound up, the lower down.
    let up = (r.upper * 1e7).ceil() / 1e7;
    let down = (r.lower.unwrap_or(0.0) * 1e7).floor() / 1e7;
    let coarse = if grid != dp_audit_accounting::pld::DEFAULT_DISCRETIZATION {
        format!(
            "; on a loss grid of step {grid} instead of {}, so that {} compositions fit in memory: looser, still valid",
            dp_audit_accounting::pld::DEFAULT_DISCRETIZATION,
            ledger
                .single
                .map_or_else(|| "the ledger's".to_string(), |(_, _, t)| t.to_string())
        )
    } else {
        String::new()
    };
    let up = if up.is_finite() {
        format!("{up:.7}")
    } else {
        format!(
            "∞ (the pessimistic PLD keeps mass {} at infinite loss, above δ)",
            readable(dp_audit_accounting::pld::TAIL_MASS_TRUNCATION)
        )
    };
    let mut s = format!(
        "PLD accountant   ε ≤ {up}  (upper bound; optimistic estimate {down:.7}; Connect-the-Dots, Doroshenko et al. 2022{coarse})\n"
    );
    if has_fixed_size(ledger) {
        let _ = writeln!(s, "                 {FIXED_SIZE_NOTE}");
    }
    s
}

/// `--target-epsilon`: the noise multiplier that reaches it.
fn inverse(
    o: &AccountantOptions,
    q: f64,
    steps: u64,
    target: f64,
    neighbors: Neighboring,
    policy: SamplingPolicy,
) -> Result<Outcome> {
    if !(target.is_finite() && target > 0.0) {
        return Err(bad("--target-epsilon", target, "a finite number > 0"));
    }
    let z = noise_multiplier_for_policy(q, steps, target, o.delta, neighbors, policy).map_err(|e| {
        let e = e.to_string();
        match grid_too_small(&e) {
            // The search lowers z while the target is met; a small z spreads the privacy loss
            // over more grid points than the accountant holds.
            Some(e) => Error::InvalidConfig(format!(
                "--target-epsilon {}: the noise multipliers that meet so large a target are too small for the accountant's loss grid at q = {q:?}, T = {steps} ({e}); allowed: a smaller --target-epsilon or fewer --steps, or --noise-multiplier Z for the ε of one small z (composed on a coarser grid when needed; the search stops at z = {})",
                readable(target),
                readable(dp_audit_accounting::pld::MIN_NOISE_MULTIPLIER)
            )),
            None => Error::InvalidConfig(format!("--target-epsilon {}: {e}", readable(target))),
        }
    })?;
    let mut acct = PldAccountant::new(neighbors);
    let named = |e: AccountingError| {
        Error::InvalidConfig(format!("--target-epsilon {}: {e}", readable(target)))
    };
    let fixed_size = policy == SamplingPolicy::FixedSize;
    if fixed_size {
        acct.compose_fixed_size_gaussian(q, z, steps)
    } else {
        acct.compose_poisson_gaussian(q, z, steps)
    }
    .map_err(named)?;
    let (upper, lower) = acct.epsilon_bounds(o.delta).map_err(named)?;
    let method = if fixed_size {
        PLD_METHOD_FIXED_SIZE
    } else {
        PLD_METHOD
    };
    // What the z found means for an attacker, as beside every ε (docs/json.md).
    let attack_bound = crate::record::result::attack_success_bound(upper, o.delta);
    let stdout = if o.json {
        to_json(&json!({
            "sampling_rate": q,
            "steps": steps,
            "policy": policy.name(),
            "delta": o.delta,
            "neighbors": neighbors.to_string(),
            "target_epsilon": target,
            "noise_multiplier": z,
            "pld": {"epsilon_upper": upper, "epsilon_lower": lower, "method": method},
            "attack_success_bound": attack_bound,
        }))?
    } else {
        let note = if fixed_size {
            format!("                 {FIXED_SIZE_NOTE}\n")
        } else {
            String::new()
        };
        format!(
            "{}: q = {q:?}, T = {steps}, δ = {}, {neighbors} neighbors, target ε = {}\n\
             noise multiplier z = {}  (smallest z found by binary search whose PLD ε upper bound is ≤ the target: {upper:.7}; optimistic {lower:.7})\n\
             {note}attack           a membership attacker (prior 1/2, telling D from D') succeeds at most {} of the time at this z, under the PLD bound's (ε, δ): (e^ε + δ)/(1 + e^ε)\n",
            policy_words(policy),
            readable(o.delta),
            readable(target),
            z_text(z),
            crate::record::result::percent(attack_bound, true)
        )
    };
    Ok(Outcome::new(stdout, 0))
}

/// The accountant's error `e` without its hint to the library caller ("use a larger
/// discretization", which no flag of this command sets), when it is the error of a composition
/// too large for the loss grid; `None` for any other error.
fn grid_too_small(e: &str) -> Option<String> {
    use dp_audit_accounting::pld::WINDOW_TOO_LARGE;
    e.contains(WINDOW_TOO_LARGE).then(|| {
        e.replace(&format!(" {WINDOW_TOO_LARGE}"), "")
            .replace(WINDOW_TOO_LARGE, "")
            .replace("; allowed: at most", ", more than the limit of")
    })
}

/// A noise multiplier as printed: six decimals, or six significant digits when small (a
/// z of 10⁻⁹ is not "0.000000").
fn z_text(z: f64) -> String {
    if z >= 0.01 {
        format!("{z:.6}")
    } else {
        format!("{z:.5e}")
    }
}

fn bad(flag: &str, v: impl std::fmt::Display, allowed: &str) -> Error {
    Error::InvalidConfig(format!("{flag} {v}; allowed: {allowed}"))
}

/// The `--policy` of the q, z, T form (and of `--target-epsilon`): Poisson when not given;
/// fixed-size under replace-one only, refused otherwise with the ledger path's check and words
/// ([`PldAccountant::check_fixed_size`]); shuffled refused with the ledger path's reason.
fn policy_of(o: &AccountantOptions, neighbors: Neighboring) -> Result<SamplingPolicy> {
    let Some(p) = &o.policy else {
        return Ok(SamplingPolicy::Poisson);
    };
    match p.trim() {
        "poisson" => Ok(SamplingPolicy::Poisson),
        "fixed-size" => {
            PldAccountant::new(neighbors)
                .check_fixed_size(|| "fixed-size batches".into())
                .map_err(|e| Error::InvalidConfig(format!("--policy fixed-size: {e}")))?;
            Ok(SamplingPolicy::FixedSize)
        }
        "shuffled" | "shuffle" => Err(Error::InvalidConfig(format!(
            "--policy {p} (each epoch a permutation cut into batches): no accountant here amplifies shuffled batches (the Poisson accountant at q = B/n can under-count them: Chua et al. 2024); allowed: poisson, or fixed-size (under --neighbors replace-one), or a shuffled run accounted without amplification as --sampling-rate 1 under --neighbors replace-one"
        ))),
        _ => Err(bad(
            "--policy",
            format!("{p:?}"),
            "poisson or fixed-size (fixed-size under --neighbors replace-one)",
        )),
    }
}

/// The first words of the q, z, T form's text: the mechanism, named by how its batches are
/// drawn.
fn policy_words(policy: SamplingPolicy) -> &'static str {
    match policy {
        SamplingPolicy::FixedSize => {
            "Gaussian on fixed-size batches (B = q·n of the n records without replacement each step)"
        }
        _ => "Poisson-subsampled Gaussian",
    }
}

const PLD_METHOD: &str = "privacy loss distribution of the Poisson-subsampled Gaussian (both add and remove directions), Connect-the-Dots discretization at interval 1e-4 (Doroshenko et al. 2022), composed by FFT (Koskela et al. 2020); the pessimistic PLD gives an upper bound on ε (rounded up), the optimistic one a lower bound";
const PLD_METHOD_EVENTS: &str = "privacy loss distribution of every block: Gaussian sums as the (Poisson-subsampled) Gaussian, Laplace sums as the (Poisson-subsampled) Laplace pair, randomized response exactly (its three-atom pair), attribution summaries bracketed by binary randomized response at eps0 = L/t (upper) and the one-key discrete Laplace pair (lower); Connect-the-Dots discretization at interval 1e-4 (Doroshenko et al. 2022), composed by FFT (Koskela et al. 2020); the pessimistic PLD gives an upper bound on ε (rounded up), the optimistic one a lower bound (docs/seeds/pld-events.md)";
const PLD_METHOD_FIXED_SIZE: &str = "privacy loss distribution; Poisson samples: the subsampled Gaussian (both add and remove directions); fixed-size samples (B of n without replacement, replace-one): per step the larger of the add and remove profiles at sensitivity 2 (Dong, Roth & Su 2022, Theorem 4.2, C_q(G_{2/z})), each direction composed on its own for the optimistic PLD (a realized pair); Connect-the-Dots discretization at interval 1e-4 (Doroshenko et al. 2022), composed by FFT (Koskela et al. 2020); the pessimistic PLD gives an upper bound on ε (rounded up), the optimistic one a lower bound";
/// The text's line under the PLD bounds of fixed-size batches: which rule gave them.
const FIXED_SIZE_NOTE: &str = "fixed-size batches (B of n drawn without replacement each step): each such step is bounded by the larger of the two add/remove profiles at sensitivity 2 (Dong, Roth & Su 2022, Theorem 4.2), which is the upper bound; the optimistic estimate is each direction composed on its own, a pair the mechanism realizes (n − 1 records at −C, the replaced one +C against −C)";
const RDP_METHOD: &str = "RDP of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019), composed over steps, converted with Balle et al. 2020 / Canonne, Kamath & Steinke 2020";
