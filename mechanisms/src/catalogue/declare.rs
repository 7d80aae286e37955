//! Declarative catalogue entries: an entry states its id, claim, neighboring relation, record
//! domain and how one call draws releases, and [`Declared`] is its [`Mechanism`]. The
//! `impl Mechanism` block every entry used to repeat (id, claim, neighboring, domain, output
//! dimension: five one-line methods) is written once here.
//!
//! The common shape of a textbook entry — a statistic of the dataset plus i.i.d. noise per
//! release — is [`noisy_statistic`]:
//!
//! ```ignore
//! let noise = LaplaceNoise::new(1.0 / epsilon)?;
//! let m = noisy_statistic(
//!     "laplace-count",
//!     PrivacyClaim::pure(epsilon)?,
//!     RecordDomain::real(0.0, 1.0, 1),
//!     |d| d.len() as f64,
//!     move |rng| noise.sample(rng),
//! );
//! ```
//!
//! Entries with state of their own (DP-SGD, the sparse vector family) keep their types.

use std::fmt;

use rand::Rng;

use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, Neighboring, RecordDomain};
use crate::error::Result;
use crate::mechanism::{Mechanism, Params};
use crate::samples::Samples;

/// How a declared mechanism draws `n` releases on a dataset, from the generator it is given.
pub(crate) type SampleFn =
    Box<dyn Fn(&Dataset, usize, &mut dyn Rng) -> Result<Samples> + Send + Sync>;

/// A mechanism given by its declaration (see the module docs).
pub(crate) struct Declared {
    /// Stable id.
    pub id: &'static str,
    /// What it claims.
    pub claim: PrivacyClaim,
    /// Where the claim comes from, when not "stated by the mechanism".
    pub claim_source: Option<String>,
    /// The neighboring relation of the claim.
    pub neighboring: Neighboring,
    /// Where records live.
    pub domain: RecordDomain,
    /// Release dimension.
    pub output_dim: usize,
    /// Where it runs (central unless the entry says local or shuffle).
    pub setting: crate::mechanism::DpSetting,
    /// Draws releases.
    pub sample: SampleFn,
    /// The output transform the entry recommends (`Mechanism::recommended_transform`), e.g.
    /// `checkpoints:1` for a run that releases its iterates; `None` for the releases as they are.
    pub recommended_transform: Option<&'static str>,
}

impl fmt::Debug for Declared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Declared")
            .field("id", &self.id)
            .field("claim", &self.claim)
            .field("neighboring", &self.neighboring)
            .field("domain", &self.domain)
            .field("output_dim", &self.output_dim)
            .finish_non_exhaustive()
    }
}

impl Declared {
    /// Sets where the mechanism runs (central otherwise).
    pub fn with_setting(mut self, setting: crate::mechanism::DpSetting) -> Self {
        self.setting = setting;
        self
    }

    /// Replaces the claim's source line ("stated by the mechanism" otherwise).
    pub fn with_claim_source(mut self, source: String) -> Self {
        self.claim_source = Some(source);
        self
    }
}

impl Mechanism for Declared {
    fn id(&self) -> &str {
        self.id
    }
    fn claim(&self) -> PrivacyClaim {
        self.claim
    }
    fn claim_source(&self) -> String {
        self.claim_source
            .clone()
            .unwrap_or_else(|| "stated by the mechanism".to_string())
    }
    fn neighboring(&self) -> Neighboring {
        self.neighboring
    }
    fn setting(&self) -> crate::mechanism::DpSetting {
        self.setting
    }
    fn domain(&self) -> RecordDomain {
        self.domain
    }
    fn output_dim(&self) -> usize {
        self.output_dim
    }
    fn recommended_transform(&self) -> Option<String> {
        self.recommended_transform.map(str::to_string)
    }
    fn sample(&self, dataset: &Dataset, n: usize, rng: &mut dyn Rng) -> Result<Samples> {
        (self.sample)(dataset, n, rng)
    }
}

/// One real per release, under add/remove neighbors: `prepare(D)` runs once per call (a sum, a
/// count, a mean…), then `release(&prepared, rng)` draws each release.
pub(crate) fn scalar<S: 'static>(
    id: &'static str,
    claim: PrivacyClaim,
    domain: RecordDomain,
    prepare: impl Fn(&Dataset) -> S + Send + Sync + 'static,
    release: impl Fn(&S, &mut dyn Rng) -> f64 + Send + Sync + 'static,
) -> Declared {
    vector(
        id,
        claim,
        Neighboring::AddRemove,
        domain,
        1,
        prepare,
        move |s, rng, out| out.push(release(s, rng)),
    )
}

/// One real per release: `statistic(D)` (computed once per call) plus a fresh draw of `noise`,
/// under add/remove neighbors.
pub(crate) fn noisy_statistic(
    id: &'static str,
    claim: PrivacyClaim,
    domain: RecordDomain,
    statistic: impl Fn(&Dataset) -> f64 + Send + Sync + 'static,
    noise: impl Fn(&mut dyn Rng) -> f64 + Send + Sync + 'static,
) -> Declared {
    scalar(id, claim, domain, statistic, move |s, rng| s + noise(rng))
}

/// `output_dim` reals per release, under `neighboring`: `prepare(D)` runs once per call (prefix
/// sums, counts…), then `release(&prepared, rng, out)` appends one release's `output_dim`
/// coordinates to `out` (randomness inside the mechanism, e.g. randomized rounding, is redrawn
/// for every release). [`scalar`] is its one-coordinate, add/remove case.
pub(crate) fn vector<S: 'static>(
    id: &'static str,
    claim: PrivacyClaim,
    neighboring: Neighboring,
    domain: RecordDomain,
    output_dim: usize,
    prepare: impl Fn(&Dataset) -> S + Send + Sync + 'static,
    release: impl Fn(&S, &mut dyn Rng, &mut Vec<f64>) + Send + Sync + 'static,
) -> Declared {
    Declared {
        id,
        claim,
        claim_source: None,
        neighboring,
        domain,
        output_dim,
        recommended_transform: None,
        setting: crate::mechanism::DpSetting::Central,
        sample: Box::new(move |data, n, rng| {
            let s = prepare(data);
            let mut flat = Vec::with_capacity(n * output_dim);
            for _ in 0..n {
                release(&s, &mut *rng, &mut flat);
            }
            Samples::from_flat(output_dim, flat)
        }),
    }
}

/// Reads an integer parameter in `[lo, hi]` ([`Params::take_integer_in`]); the error names the
/// parameter, its value and the allowed range.
pub(crate) fn integer_param(
    params: &mut Params,
    id: &str,
    name: &str,
    default: usize,
    lo: usize,
    hi: usize,
) -> Result<usize> {
    params.take_integer_in(id, name, default as f64, lo as f64, hi as f64)
}

/// The status of a pure-ε entry whose true guarantee is `true_epsilon`-DP (derived in its docs):
/// correct when that is within the claimed ε (up to float rounding of the product that computes
/// it), else buggy with `bug()` and the true guarantee.
pub(crate) fn pure_status(
    true_epsilon: f64,
    claimed: f64,
    bug: impl FnOnce() -> String,
    note: &str,
) -> crate::catalogue::Status {
    let buggy = true_epsilon > claimed * (1.0 + 1e-12);
    let bug = if buggy { bug() } else { String::new() };
    crate::catalogue::Status::buggy_if(buggy, &bug, format!("{true_epsilon}-DP{note}"))
}
