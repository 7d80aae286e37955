//! The black-box contract every audited mechanism implements.

use std::collections::BTreeMap;
use std::fmt;

use rand::Rng;

use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::samples::Samples;

/// A randomized algorithm under audit, seen as a black box that can be run many times.
///
/// The trait is object-safe: the catalogue is a list of `Box<dyn Mechanism>`.
///
/// # Contract
/// - `sample(dataset, n, rng)` returns `n` **independent** releases on `dataset`, one per row,
///   each of dimension `output_dim()`.
/// - **All** randomness comes from `rng`. A mechanism never builds its own generator, reads the
///   clock or uses thread-local randomness; with the same generator state it returns the same
///   samples. This is what makes audits reproducible.
/// - `claim()` is stated for `neighboring()` and for datasets inside `domain()`.
///
/// # Examples
/// ```
/// use dp_audit_mechanisms::{Dataset, Mechanism, Neighboring, PrivacyClaim, RecordDomain, Samples, Result};
/// use dp_audit_mechanisms::noise::LaplaceNoise;
/// use rand::{Rng, SeedableRng};
///
/// /// Laplace count: |D| + Lap(1/ε).
/// #[derive(Debug)]
/// struct MyCount { epsilon: f64 }
///
/// impl Mechanism for MyCount {
///     fn id(&self) -> &str { "my-count" }
///     fn claim(&self) -> PrivacyClaim { PrivacyClaim::Pure { epsilon: self.epsilon } }
///     fn neighboring(&self) -> Neighboring { Neighboring::AddRemove }
///     fn domain(&self) -> RecordDomain { RecordDomain::real(0.0, 1.0, 1) }
///     fn output_dim(&self) -> usize { 1 }
///     fn sample(&self, data: &Dataset, n: usize, rng: &mut dyn Rng) -> Result<Samples> {
///         let noise = LaplaceNoise::new(1.0 / self.epsilon)?;
///         let count = data.len() as f64;
///         Ok(Samples::from_column((0..n).map(|_| count + noise.sample(rng)).collect()))
///     }
/// }
///
/// let m: Box<dyn Mechanism> = Box::new(MyCount { epsilon: 1.0 });
/// let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
/// let out = m.sample(&Dataset::scalars(vec![0.5, 0.2])?, 3, &mut rng)?;
/// assert_eq!((out.n(), out.dim()), (3, 1));
/// # Ok::<(), dp_audit_mechanisms::MechanismError>(())
/// ```
pub trait Mechanism: Send + Sync + fmt::Debug {
    /// Stable kebab-case id, e.g. `laplace-sum`.
    fn id(&self) -> &str;

    /// The privacy guarantee the mechanism claims.
    fn claim(&self) -> PrivacyClaim;

    /// Where the claim comes from, for reports (e.g. "RDP accountant over 100 steps").
    fn claim_source(&self) -> String {
        "stated by the mechanism".to_string()
    }

    /// The neighboring relation the claim is stated for.
    fn neighboring(&self) -> Neighboring;

    /// Where the mechanism runs (central by default): with the relation, what its guarantee
    /// protects ([`Mechanism::privacy_unit`]).
    fn setting(&self) -> DpSetting {
        DpSetting::Central
    }

    /// What one neighbouring change is, in words, for reports: by default
    /// [`privacy_unit_words`] of the relation and the setting.
    fn privacy_unit(&self) -> String {
        privacy_unit_words(self.neighboring(), self.setting())
    }

    /// What the guarantee covers, in the DP-fy ML guide's terms (data accesses: one training
    /// run or tuning too; outputs: the final model, checkpoints or every iterate), when the
    /// mechanism knows it: a trainer that releases every iterate says so. Empty by default
    /// (not stated); `audit run --data-accesses/--outputs-covered` state it for a program.
    fn dp_fy_scope(&self) -> dp_audit_accounting::dpfy::DpFyScope {
        dp_audit_accounting::dpfy::DpFyScope::default()
    }

    /// Records and dataset sizes the mechanism accepts.
    fn domain(&self) -> RecordDomain;

    /// Length of each release.
    fn output_dim(&self) -> usize;

    /// `n` independent releases on `dataset`; all randomness from `rng`.
    fn sample(&self, dataset: &Dataset, n: usize, rng: &mut dyn Rng) -> Result<Samples>;

    /// Releases the runner asks for per call of [`Mechanism::sample`] (the last call of a draw
    /// may ask for fewer), or `None` for the runner's default chunk. A mechanism with a large
    /// fixed cost per call, such as an external program started once per call, asks for bigger
    /// calls. Part of the reproducibility contract: changing it changes the samples a seed gives.
    fn batch_size(&self) -> Option<usize> {
        None
    }

    /// Sets the releases per call ([`Mechanism::batch_size`]) for a mechanism whose caller may
    /// choose it (an external program, whose calls must each finish within a time-out);
    /// returns false, changing nothing, for every other mechanism. Part of the reproducibility
    /// contract like [`Mechanism::batch_size`]: a run that sets it records the value.
    fn set_batch_size(&self, _batch: usize) -> bool {
        false
    }

    /// How many datasets one call of [`Mechanism::sample_each`] takes, for a mechanism that
    /// draws on several datasets at once (an external program that reads a request of many
    /// datasets); `None` (the default): the caller draws on one dataset per call. Used where
    /// every release has a dataset of its own (a Bayesian DP audit drawing the whole dataset).
    /// Part of the reproducibility contract like [`Mechanism::batch_size`].
    fn datasets_per_call(&self) -> Option<usize> {
        None
    }

    /// One release on each of `datasets`, in order, independent given the datasets. The
    /// default draws them one call of [`Mechanism::sample`] at a time from `rng`; a mechanism
    /// with a large cost per call answers [`Mechanism::datasets_per_call`] and draws them in one.
    fn sample_each(&self, datasets: &[Dataset], rng: &mut dyn Rng) -> Result<Samples> {
        let mut flat = Vec::new();
        for d in datasets {
            let s = self.sample(d, 1, rng)?;
            flat.extend(s.values().iter().copied());
        }
        Samples::from_flat(self.output_dim(), flat)
    }

    /// Limits the time of each later call of [`Mechanism::sample`] (`None`: the mechanism's own
    /// limit, if any). A call that runs past it is stopped and fails with
    /// [`crate::MechanismError::Slow`]: the mechanism is too slow on that dataset for the size
    /// asked, which a caller can answer with a smaller call. Only mechanisms that run external
    /// programs honour it; the default does nothing.
    fn set_call_limit(&self, _limit: Option<std::time::Duration>) {}

    /// Sets the instant no later call of [`Mechanism::sample`] may run past (`None`: none): a
    /// run's time budget made a deadline. A call is given at most the time left; one started
    /// after the deadline, or stopped by it, fails with [`crate::MechanismError::OutOfTime`],
    /// and the caller answers with what it has. Only mechanisms whose calls can be stopped
    /// (external programs, in-process callables run on a thread of their own) honour it; the
    /// default does nothing.
    fn set_deadline(&self, _deadline: Option<std::time::Instant>) {}

    /// The output transform (as `audit run --transform` spells it) this mechanism's releases
    /// are best audited through, when its configuration calls for one (e.g. `checkpoints:D` for
    /// a training run that releases its iterates); `None` for the releases as they are. A fixed
    /// post-processing chosen before sampling, so by data processing any violation found
    /// through it is a violation of the claim.
    fn recommended_transform(&self) -> Option<String> {
        None
    }

    /// When the claim comes from an accountant: the accountant's optimistic and pessimistic ε at
    /// the claim's δ (how tight the accounting itself is), for the tightness line of a report.
    /// `None` otherwise. Never used to decide.
    fn accountant_range(&self) -> Option<AccountantRange> {
        None
    }
}

/// Where a DP mechanism runs: what the guarantee is about and whom it trusts.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum DpSetting {
    /// A trusted curator runs the mechanism on the whole dataset; the release protects each
    /// record against everyone who sees the release.
    #[default]
    Central,
    /// Each user randomizes their own value before sending it; the report protects the value
    /// against everyone, the collector included.
    Local,
    /// Each user randomizes locally and a trusted shuffler permutes the reports; the claim is
    /// the amplified central guarantee of the shuffled multiset, which trusts the shuffler.
    Shuffle,
}

impl DpSetting {
    /// The command-line and JSON spelling: `central`, `local`, `shuffle`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Central => "central",
            Self::Local => "local",
            Self::Shuffle => "shuffle",
        }
    }

    /// One sentence for a report.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Central => {
                "central: a trusted curator runs the mechanism on the whole dataset, and the guarantee protects each unit against whoever sees the release"
            }
            Self::Local => {
                "local: each user randomizes their own value before it leaves them, and the guarantee protects it against everyone, the collector included"
            }
            Self::Shuffle => {
                "shuffle model: users randomize locally and a trusted shuffler permutes the reports; the claim is the amplified guarantee of the shuffled reports, which holds only if the shuffler hides who sent what"
            }
        }
    }
}

impl fmt::Display for DpSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DpSetting {
    type Err = crate::MechanismError;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "central" => Ok(Self::Central),
            "local" => Ok(Self::Local),
            "shuffle" | "shuffled" => Ok(Self::Shuffle),
            other => Err(crate::MechanismError::InvalidParameter {
                mechanism: "setting".into(),
                message: format!("{other:?}; allowed: central, local or shuffle"),
            }),
        }
    }
}

/// The privacy unit in words: what one neighbouring change is under `neighbors` in `setting`
/// (e.g. "one record, added or removed (add/remove one)").
pub fn privacy_unit_words(neighbors: Neighboring, setting: DpSetting) -> String {
    let who = match setting {
        DpSetting::Central => "one record of the dataset",
        DpSetting::Local | DpSetting::Shuffle => "one user's value",
    };
    let change = match neighbors {
        Neighboring::AddRemove => "added or removed (add/remove one)",
        Neighboring::ReplaceOne => "replaced by any other value (replace-one)",
        Neighboring::ZeroOut => "replaced by the null record (zero-out)",
    };
    format!("{who}, {change}")
}

/// An accountant's two-sided statement at one δ: the mechanism's worst-case ε (over all
/// neighboring pairs, as the accountant models it) lies in [`optimistic`, `pessimistic`]; the
/// claim is the pessimistic one.
///
/// [`optimistic`]: AccountantRange::optimistic
/// [`pessimistic`]: AccountantRange::pessimistic
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct AccountantRange {
    /// The δ both values are at.
    pub delta: f64,
    /// A lower estimate of the accountant's ε (e.g. the optimistic PLD), rounded down.
    pub optimistic: f64,
    /// The accountant's upper bound on ε (the claim), rounded up.
    pub pessimistic: f64,
    /// Which accountant, in words.
    pub accountant: String,
}

impl AccountantRange {
    /// The PLD accountant's range on a privacy ledger at δ (Connect-the-Dots pessimistic and
    /// optimistic PLDs; [`dp_audit_accounting::pld::PldAccountant::epsilon_bounds_adaptive`]).
    ///
    /// # Errors
    /// From the accountant (a ledger it cannot account, δ out of range).
    pub fn pld_of_ledger(
        ledger: &[dp_audit_accounting::LedgerEvent],
        neighbors: Neighboring,
        delta: f64,
    ) -> Result<Self> {
        let with: Vec<_> = ledger
            .iter()
            .map(|e| (*e, dp_audit_accounting::SamplingPolicy::Poisson))
            .collect();
        Self::pld_of_ledger_with_policies(&with, neighbors, delta)
    }

    /// [`AccountantRange::pld_of_ledger`] for a ledger whose samples say how they are drawn
    /// ([`dp_audit_accounting::pld::PldAccountant::compose_ledger_with_policies`]: Poisson, or fixed-size under
    /// replace-one).
    ///
    /// # Errors
    /// As [`AccountantRange::pld_of_ledger`].
    pub fn pld_of_ledger_with_policies(
        ledger: &[(
            dp_audit_accounting::LedgerEvent,
            dp_audit_accounting::SamplingPolicy,
        )],
        neighbors: Neighboring,
        delta: f64,
    ) -> Result<Self> {
        let mut pld = dp_audit_accounting::pld::PldAccountant::new(neighbors);
        pld.compose_ledger_with_policies(ledger)?;
        let (upper, lower, grid) = pld.epsilon_bounds_adaptive(delta)?;
        let fixed = if ledger
            .iter()
            .any(|(_, p)| *p == dp_audit_accounting::SamplingPolicy::FixedSize)
        {
            "; fixed-size batches drawn without replacement: Dong, Roth & Su 2022, Theorem 4.2"
        } else {
            ""
        };
        Ok(Self {
            delta,
            optimistic: lower,
            pessimistic: upper,
            accountant: format!(
                "PLD accountant (Connect-the-Dots, loss grid {grid}; {neighbors} neighbors{fixed})"
            ),
        })
    }
}

/// Named numeric parameters for building a catalogue entry (`--param noise_scale=0.7`).
///
/// Builders `take` what they understand; [`Params::finish`] then refuses leftovers, so a typo in
/// a parameter name is an error, not a silently ignored setting.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params {
    values: BTreeMap<String, f64>,
    /// Every parameter a builder asked for, in order: what `--param` accepts.
    declared: Vec<ParamInfo>,
}

/// A parameter a catalogue entry accepts: name, default and allowed range.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ParamInfo {
    /// Name, as `--param NAME=VALUE` spells it.
    pub name: String,
    /// Value when not given.
    pub default: f64,
    /// Allowed closed range, when the builder checks one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<(f64, f64)>,
}

impl std::fmt::Display for ParamInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::math::readable;
        write!(f, "{}={}", self.name, readable(self.default))?;
        if let Some((lo, hi)) = self.range {
            write!(f, " [{}, {}]", readable(lo), readable(hi))?;
        }
        Ok(())
    }
}

impl Params {
    /// No parameters.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `NAME=VALUE` assignments.
    pub fn parse<S: AsRef<str>>(assignments: &[S]) -> Result<Self> {
        let mut values = BTreeMap::new();
        for a in assignments {
            let a = a.as_ref();
            let (k, v) = a
                .split_once('=')
                .ok_or_else(|| MechanismError::InvalidParameter {
                    mechanism: "--param".into(),
                    message: format!("{a:?} is not of the form NAME=VALUE"),
                })?;
            let value: f64 = v
                .trim()
                .parse()
                .map_err(|_| MechanismError::InvalidParameter {
                    mechanism: "--param".into(),
                    message: format!("value {v:?} of parameter {k:?} is not a number"),
                })?;
            if values.insert(k.trim().to_string(), value).is_some() {
                return Err(MechanismError::InvalidParameter {
                    mechanism: "--param".into(),
                    message: format!(
                        "{:?} is given twice; allowed: each parameter once",
                        k.trim()
                    ),
                });
            }
        }
        Ok(Self {
            values,
            declared: Vec::new(),
        })
    }

    /// Sets one parameter.
    pub fn set(mut self, name: &str, value: f64) -> Self {
        self.values.insert(name.to_string(), value);
        self
    }

    /// Takes parameter `name`, or `default` when absent.
    pub fn take(&mut self, name: &str, default: f64) -> f64 {
        self.declare(name, default, None);
        self.values.remove(name).unwrap_or(default)
    }

    fn declare(&mut self, name: &str, default: f64, range: Option<(f64, f64)>) {
        match self.declared.iter_mut().find(|d| d.name == name) {
            Some(d) => d.range = d.range.or(range),
            None => self.declared.push(ParamInfo {
                name: name.to_string(),
                default,
                range,
            }),
        }
    }

    /// The parameters builders asked for so far (name, default, range), in order.
    pub fn declared(&self) -> &[ParamInfo] {
        &self.declared
    }

    /// Takes a parameter that must lie in `[lo, hi]`.
    pub fn take_in(
        &mut self,
        mechanism: &str,
        name: &str,
        default: f64,
        lo: f64,
        hi: f64,
    ) -> Result<f64> {
        let v = self.take(name, default);
        self.declare(name, default, Some((lo, hi)));
        if v.is_finite() && v >= lo && v <= hi {
            Ok(v)
        } else {
            Err(MechanismError::InvalidParameter {
                mechanism: mechanism.into(),
                message: format!(
                    "--param {name} = {}; allowed: {} to {}",
                    crate::math::readable(v),
                    crate::math::readable(lo),
                    crate::math::readable(hi)
                ),
            })
        }
    }

    /// Takes a parameter that must be an integer in `[lo, hi]` (a tree depth, a count of
    /// categories): the error names the value and the allowed integers.
    pub fn take_integer_in(
        &mut self,
        mechanism: &str,
        name: &str,
        default: f64,
        lo: f64,
        hi: f64,
    ) -> Result<usize> {
        let v = self.take_in(mechanism, name, default, lo, hi)?;
        if v.fract() != 0.0 {
            return Err(MechanismError::InvalidParameter {
                mechanism: mechanism.into(),
                message: format!(
                    "--param {name} = {}; allowed: an integer from {} to {}",
                    crate::math::readable(v),
                    crate::math::readable(lo),
                    crate::math::readable(hi)
                ),
            });
        }
        Ok(v as usize)
    }

    /// Errors if any parameter was not taken.
    pub fn finish(self, mechanism: &str) -> Result<()> {
        if self.values.is_empty() {
            Ok(())
        } else {
            let names: Vec<_> = self.values.keys().cloned().collect();
            let valid: Vec<String> = self.declared.iter().map(ToString::to_string).collect();
            Err(MechanismError::InvalidParameter {
                mechanism: mechanism.into(),
                message: format!(
                    "unknown parameter --param {}; allowed: {}",
                    names.join(", "),
                    if valid.is_empty() {
                        "none (this entry takes no --param)".to_string()
                    } else {
                        valid.join(", ")
                    }
                ),
            })
        }
    }

    /// True when no parameter is set.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The parameters as `(name, value)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&str, f64)> {
        self.values.iter().map(|(k, v)| (k.as_str(), *v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_refuse_leftovers_and_bad_values() {
        let mut p = Params::parse(&["noise_scale=0.7", "steps=3"]).unwrap();
        assert_eq!(p.take("noise_scale", 1.0), 0.7);
        assert!(
            p.clone()
                .finish("x")
                .unwrap_err()
                .to_string()
                .contains("steps")
        );
        assert_eq!(p.take("steps", 1.0), 3.0);
        assert!(p.finish("x").is_ok());
        assert!(Params::parse(&["a"]).is_err());
        assert!(Params::parse(&["a=b"]).is_err());
        let mut p = Params::new().set("q", 2.0);
        assert!(p.take_in("m", "q", 0.5, 0.0, 1.0).is_err());
    }
}
