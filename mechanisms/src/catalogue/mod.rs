//! The catalogue: correct mechanisms and deliberately buggy ones whose true guarantee is known.
//!
//! Every entry has a stable kebab-case id, a claim, a status (`correct`, or `buggy` with the
//! mistake and the true guarantee), a record domain, and a *witness*: a neighboring pair on which
//! the bug shows (for correct entries, a pair on which the claim is tightest). Finders must find
//! bad pairs without the witness; testers can be checked against it.
//!
//! Entries are grouped by file: `correct.rs` (textbook mechanisms), `buggy.rs` (their realistic
//! mistakes), `svt.rs` (the sparse vector family of Lyu, Su & Li 2017), `dpsgd/` (the DP-SGD
//! family, one folder: `mod.rs` DP-SGD / DP-GD with a privacy ledger, McMahan et al. 2018, and
//! its bugs; `variants/` DP-SGD as it is really run: per-group clipping, user level, batch
//! sizes, private clip norms, each correct with a buggy twin, and the ledger's noise allocation
//! over groups (`variants/allocation.rs`, seed 000 §4); `microbatch.rs` position-based
//! microbatches; `shuffled.rs` and `fixed_batches/` shuffled and independent fixed-size batches,
//! each with a twin accounted as Poisson sampling; `batch_coupling/` components that couple the
//! examples of a batch: batch normalization, a contrastive loss, gradient accumulation, each
//! correct with a twin accounted per example; `normalisation.rs` the noisy sum divided by a
//! public batch size, and by one read off the dataset: Opacus #571; `averaged.rs` the
//! expected-averaged and batch-averaged mechanisms of arXiv:2605.15648 (q·n public under
//! replace-one, q·|D| private under add/remove, the realised |B|); `adam.rs` DP-Adam, and a
//! second moment read before noise), `learning.rs` (output perturbation, model
//! aggregation and gradient perturbation, each with a buggy twin, and an intermediate iterate
//! with the seed's √(t/T)·ε claim), `logistic.rs` (output perturbation of regularized logistic
//! regression, minimized by Newton's method, and a twin minimizing the summed loss),
//! `float_leak.rs` (a floating-point leak in the style of Mironov 2012, audited through the
//! `float-bits` output transform: [`recommended_transform`]), and the deployed systems of catalogue
//! v2: `attribution.rs` (Attribution Reporting summary reports), `heatmap.rs` (DP heatmaps),
//! `units.rs` (user-level records, zero-out neighbors), `ftrl.rs` (DP-FTRL tree aggregation), `mf_ftrl/`
//! (matrix-factorization DP-FTRL over several epochs),
//! `gaps.rs` (the gaps the DP-Auditorium post names: Gaussian mean, vector sensitivity, top-k),
//! `median.rs` (reorder-slice-compute median), `rsc_steps.rs` (k adaptive reorder-slice-compute
//! steps), `rsc_noisy_rank/` (k steps cut at a noisy rank), `rsc_apps/` (RSC applications: a
//! private interval point and axis-aligned rectangles, declared with the k-free RSC claim) and `tuning.rs` (best-of-k hyperparameter tuning, Papernot & Steinke 2022), `shuffle.rs` (local and
//! shuffled randomized response, Feldman, McMillan & Talwar 2021), `continual.rs` (continual
//! counting: the binary tree mechanism over a stream), `posts.rs` (algorithms seed 002's posts
//! name: one-bit local entropy estimation, sliding-window distinct counts, two-server
//! histograms audited through one server's view, cross-publisher reach and frequency) and `float_safe.rs` (float-safe twins of the
//! textbook entries: snapping and exact discrete noise). New entries are declarations
//! (`declare.rs`).
//!
//! A group is registered once, in the `groups!` list below: that declares its module and puts
//! its entries in [`specs`], in listing order; a unit test holds these docs to name every group.
//! A family kept in one folder is one group: `dpsgd/mod.rs` declares its submodules and its
//! `specs()` puts their entries after its own, in the order the docs above name them.

use serde::Serialize;

use crate::dataset::DatasetPair;
use crate::error::{MechanismError, Result};
use crate::math::edit_distance;
use crate::mechanism::{Mechanism, ParamInfo, Params};

/// Targets of the Bayesian DP audit (`bdp:` claims), outside [`specs`]: see the module docs.
pub mod bayesian;
mod declare;

/// The groups of the catalogue, each named once: its module is declared and its entries put in
/// [`specs`], groups in the order given (the order `audit list` shows).
macro_rules! groups {
    ($($group:ident),* $(,)?) => {
        $(mod $group;)*

        /// Every entry's spec, in listing order.
        pub fn specs() -> Vec<Spec> {
            let mut all = Vec::new();
            $(all.extend($group::specs());)*
            all
        }

        /// The groups' module names, in listing order.
        #[cfg(test)]
        const GROUPS: &[&str] = &[$(stringify!($group)),*];
    };
}

groups!(
    correct,
    svt,
    buggy,
    float_leak,
    float_safe,
    dpsgd,
    learning,
    logistic,
    attribution,
    heatmap,
    units,
    ftrl,
    mf_ftrl,
    continual,
    gaps,
    median,
    rsc_steps,
    rsc_noisy_rank,
    rsc_apps,
    tuning,
    shuffle,
    posts,
);

/// The exact final-model privacy profile of DP-SGD's gradient (linear) form: the last-iterate
/// heuristic of Steinke et al. 2025, for [`crate::final_model`]'s labelled reference.
pub use dpsgd::final_model_epsilon;

#[cfg(test)]
mod distribution_tests;

/// Whether an entry keeps its claim.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Status {
    /// The mechanism satisfies its claim.
    Correct,
    /// The mechanism does not satisfy its claim.
    Buggy {
        /// The mistake, in one sentence.
        bug: String,
        /// What the mechanism actually guarantees, where known.
        true_guarantee: String,
    },
}

impl Status {
    /// `correct` or `buggy`.
    pub fn word(&self) -> &'static str {
        match self {
            Self::Correct => "correct",
            Self::Buggy { .. } => "buggy",
        }
    }

    /// `Buggy` with `bug` and `true_guarantee` when `buggy` (a condition the entry computes from
    /// its parameters), else `Correct`.
    pub fn buggy_if(buggy: bool, bug: &str, true_guarantee: String) -> Self {
        if buggy {
            Self::Buggy {
                bug: bug.into(),
                true_guarantee,
            }
        } else {
            Self::Correct
        }
    }

    /// True for buggy entries.
    pub fn is_buggy(&self) -> bool {
        matches!(self, Self::Buggy { .. })
    }
}

/// Correct entries kept in the real-valued model on purpose, with the reason: their noise is
/// drawn in floating point and added to the exact answer (Mironov 2012), so the representation
/// of their outputs can reveal the data although the algorithm keeps its claim. `audit list`,
/// `audit describe` and the layer census (`audit bench layers`, docs/catalogue.md) say so;
/// every other correct entry is meant to be correct as shipped, in both layers.
pub fn float_model(id: &str) -> Option<&'static str> {
    REAL_VALUED_ONLY
        .iter()
        .find(|(i, _)| *i == id)
        .map(|(_, why)| *why)
}

/// See [`float_model`]. Which entries: the layer census (`audit bench layers`, 10^6 releases per
/// side, docs/catalogue.md) found their floating-point layer violated; every other correct entry
/// passed it, or has integer outputs. Kept textbook on purpose: each is the form the papers
/// and most libraries ship, and the lesson is the pair (textbook, float-safe twin).
const REAL_VALUED_ONLY: &[(&str, &str)] = &[
    (
        "laplace-sum",
        "statrs' Laplace added to the exact sum in f64; float-safe twin: laplace-sum-snapping (the snapping mechanism)",
    ),
    (
        "laplace-count",
        "statrs' Laplace added to the exact count in f64; float-safe twin: geometric-count (integer noise on the integer count)",
    ),
    (
        "gaussian-sum-analytic",
        "rand_distr's Normal added to the exact sum in f64; float-safe twin: gaussian-sum-discrete (discrete Gaussian noise on a power-of-two grid)",
    ),
    (
        "gaussian-sum-classical",
        "rand_distr's Normal added to the exact sum in f64; float-safe twin: gaussian-sum-discrete",
    ),
    (
        "noisy-histogram",
        "statrs' Laplace added to each exact count in f64; float-safe twin: noisy-histogram-geometric (integer noise on the integer counts)",
    ),
    (
        "user-level-sum",
        "statrs' Laplace added to the exact sum in f64; the snapping mechanism (laplace-sum-snapping) is the fix",
    ),
    (
        "dpsgd",
        "the Gaussian noise of DP-SGD drawn in f64 and added to the exact clipped gradient sum, as Opacus, TF Privacy and JAX Privacy do; kept so for the accounting it illustrates (a float-safe DP-SGD adds discrete Gaussian noise on a grid, e.g. Kairouz et al. 2021's distributed discrete Gaussian)",
    ),
    (
        "dpsgd-per-group-clipping",
        "f64 Gaussian noise on the exact clipped sums, as dpsgd",
    ),
    (
        "dpsgd-noise-allocator",
        "f64 Gaussian noise on the exact clipped sums, as dpsgd",
    ),
    (
        "dpsgd-user-level",
        "f64 Gaussian noise on the exact clipped sums, as dpsgd",
    ),
    (
        "dpsgd-batch-size-released",
        "f64 Gaussian noise on the exact clipped sum and on the batch size, as dpsgd",
    ),
    (
        "dpsgd-contrastive",
        "f64 Gaussian noise on the exact clipped sums, as dpsgd",
    ),
    (
        "dpsgd-normalise-public-batch",
        "f64 Gaussian noise on the exact clipped sums, as dpsgd",
    ),
    (
        "dpsgd-adam",
        "f64 Gaussian noise on the exact clipped sums, as dpsgd; Adam's moments are f64 post-processing of the noisy gradients",
    ),
    (
        "ftrl-tree",
        "f64 Gaussian noise on the exact tree-node sums; the node noise would be discrete Gaussian on a grid to be float-safe (gaussian-sum-discrete shows how)",
    ),
    (
        "mf-ftrl-banded",
        "f64 Gaussian noise, correlated by C⁻¹ in f64, added to the exact gradient stream, as ftrl-tree",
    ),
];

/// A built catalogue entry.
#[derive(Debug)]
pub struct Entry {
    /// The mechanism.
    pub mechanism: Box<dyn Mechanism>,
    /// Ground truth: correct, or buggy and how.
    pub status: Status,
    /// A neighboring pair where the bug shows (or where a correct claim is tightest).
    pub witness: DatasetPair,
}

/// How to build an entry: its id and a constructor taking named parameters.
#[derive(Clone, Copy)]
pub struct Spec {
    /// Stable kebab-case id.
    pub id: &'static str,
    /// What the entry is, in one line (`audit list`, `audit describe`).
    pub summary: &'static str,
    /// Builds the entry; takes the parameters it understands from `params`.
    pub build: fn(&mut Params) -> Result<Entry>,
}

impl std::fmt::Debug for Spec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spec").field("id", &self.id).finish()
    }
}

/// The output transform (as `audit run --transform` spells it) under which entry `id` is audited
/// by default, for the few entries whose bug lives in the float representation of the output
/// rather than in its value (see `float_leak.rs`). `None` for every other entry. The transform is
/// a fixed post-processing chosen before any sample is drawn, so by the data-processing
/// inequality a violation found through it is a violation of the entry's claim.
pub fn recommended_transform(id: &str) -> Option<&'static str> {
    (id == float_leak::ID).then_some(float_leak::RECOMMENDED_TRANSFORM)
}

/// The transform entry `id`, built as `mechanism`, is audited through by default: the
/// mechanism's own [`Mechanism::recommended_transform`] (which depends on its parameters, e.g.
/// DP-SGD releasing its iterates), else [`recommended_transform`] of the id.
pub fn recommended_transform_for(id: &str, mechanism: &dyn Mechanism) -> Option<String> {
    mechanism
        .recommended_transform()
        .or_else(|| recommended_transform(id).map(str::to_string))
}

/// Ids of the Bayesian DP targets ([`bayesian`]), which [`build`] builds but [`specs`] leaves
/// out.
pub fn bayesian_ids() -> Vec<&'static str> {
    bayesian::specs().iter().map(|s| s.id).collect()
}

/// All ids, in listing order.
pub fn ids() -> Vec<&'static str> {
    specs().iter().map(|s| s.id).collect()
}

/// Builds entry `id` with `params` (unknown parameters are an error).
///
/// An unknown id is an error listing the closest ids.
pub fn build(id: &str, params: &Params) -> Result<Entry> {
    let spec = specs()
        .into_iter()
        .chain(bayesian::specs())
        .find(|s| s.id == id)
        .ok_or_else(|| MechanismError::UnknownMechanism {
            id: id.to_string(),
            closest: closest_ids(id, 3),
        })?;
    let mut p = params.clone();
    let entry = (spec.build)(&mut p)?;
    p.finish(id)?;
    Ok(entry)
}

/// What `audit list` and `audit describe` show of an entry: built with default parameters.
#[derive(Clone, Debug, Serialize)]
pub struct Description {
    /// Stable id.
    pub id: &'static str,
    /// `correct` or `buggy`.
    pub status: &'static str,
    /// The claim with default parameters.
    pub claim: String,
    /// One line on what the entry is.
    pub summary: &'static str,
    /// For buggy entries: the mistake and the true guarantee.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bug: Option<String>,
    /// The parameters `--param` accepts, with defaults and allowed ranges.
    pub params: Vec<ParamInfo>,
    /// The neighboring relation the claim is stated for.
    pub neighboring: String,
    /// Where the entry runs: `central`, `local` or `shuffle`.
    pub setting: String,
    /// What one neighbouring change is, in words.
    pub privacy_unit: String,
    /// The witness pair, one line per side (shortened for reading).
    pub witness: [String; 2],
    /// The witness pair's records in full, D then D′ (one array of numbers per record), for
    /// scripts.
    pub witness_records: [Vec<Vec<f64>>; 2],
    /// The output transform the entry is audited through by default, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transform: Option<&'static str>,
    /// Which semantics the status holds for: `real-valued mechanism` (the algorithm in exact
    /// arithmetic; the mechanism layer of an audit) or `floating-point implementation` (the
    /// entry's bug lives in the representation of its outputs; the floating-point layer).
    pub status_holds_for: &'static str,
    /// For a correct entry kept in the real-valued model on purpose ([`float_model`]): why its
    /// floating-point code is not float-safe, and where its float-safe twin is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub real_valued_only: Option<&'static str>,
}

/// Describes entry `id` (see [`Description`]).
pub fn describe(id: &str) -> Result<Description> {
    let spec = specs()
        .into_iter()
        .chain(bayesian::specs())
        .find(|s| s.id == id)
        .ok_or_else(|| MechanismError::UnknownMechanism {
            id: id.to_string(),
            closest: closest_ids(id, 3),
        })?;
    let mut p = Params::new();
    let entry = (spec.build)(&mut p)?;
    let bug = match &entry.status {
        Status::Buggy {
            bug,
            true_guarantee,
        } => Some(format!("{bug}; true guarantee: {true_guarantee}")),
        Status::Correct => None,
    };
    Ok(Description {
        id: spec.id,
        status: entry.status.word(),
        claim: entry.mechanism.claim().to_string(),
        summary: spec.summary,
        bug,
        params: p.declared().to_vec(),
        neighboring: entry.mechanism.neighboring().to_string(),
        setting: entry.mechanism.setting().name().to_string(),
        privacy_unit: entry.mechanism.privacy_unit(),
        witness: entry.witness.short_sides(),
        witness_records: [
            entry.witness.first().to_rows(),
            entry.witness.second().to_rows(),
        ],
        transform: recommended_transform(id),
        status_holds_for: if id == float_leak::ID {
            "floating-point implementation"
        } else if entry.status.is_buggy() || float_model(id).is_some() {
            "real-valued mechanism"
        } else {
            "real-valued mechanism and its floating-point implementation"
        },
        real_valued_only: float_model(id).filter(|_| !entry.status.is_buggy()),
    })
}

/// Every entry with default parameters.
pub fn catalogue() -> Result<Vec<Entry>> {
    specs()
        .iter()
        .map(|s| {
            let mut p = Params::new();
            (s.build)(&mut p)
        })
        .collect()
}

/// At most `k` known ids close to `id`, best first: ids containing `id` (or contained in it),
/// then ids within an edit distance of a third of the longer spelling (typos), then ids sharing a
/// dash-separated word of three or more letters. An id close to none (`nope`) gets no suggestion:
/// short ids such as `svt1` are within a small edit distance of any short word.
pub fn closest_ids(id: &str, k: usize) -> Vec<String> {
    let words = |s: &str| -> Vec<String> {
        s.split('-')
            .filter(|w| w.len() >= 3)
            .map(str::to_string)
            .collect()
    };
    let asked = words(id);
    let mut scored: Vec<(usize, usize, &str)> = ids()
        .into_iter()
        .filter_map(|c| {
            if !id.is_empty() && (c.contains(id) || id.contains(c)) {
                return Some((0, c.len().abs_diff(id.len()), c));
            }
            let d = edit_distance(id, c);
            if 3 * d <= id.len().max(c.len()) {
                return Some((1, d, c));
            }
            let shared = words(c).iter().filter(|w| asked.contains(w)).count();
            (shared > 0).then_some((2, usize::MAX - shared, c))
        })
        .collect();
    scored.sort();
    // Shared words only when nothing is closer: `laplace-sun` suggests `laplace-sum` alone.
    // Typos: only those about as close as the closest one.
    let best_tier = scored.first().map_or(0, |t| t.0.max(1));
    let best_typo = scored.iter().find(|t| t.0 == 1).map_or(usize::MAX, |t| t.1);
    scored
        .into_iter()
        .filter(|t| t.0 <= best_tier && (t.0 != 1 || t.1 <= best_typo.saturating_add(1)))
        .take(k)
        .map(|(_, _, c)| c.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Dataset;

    /// The module docs name every group registered (a group is added in one place, the
    /// `groups!` list; this keeps the tour in step with it).
    #[test]
    fn the_docs_name_every_group() {
        let docs: String = include_str!("mod.rs")
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .collect::<Vec<_>>()
            .join(" ");
        for g in GROUPS {
            assert!(
                docs.contains(&format!("`{g}.rs`")) || docs.contains(&format!("`{g}/`")),
                "catalogue/mod.rs's docs do not name the group `{g}.rs` (or the folder `{g}/`)"
            );
        }
    }

    #[test]
    fn ids_are_unique_kebab_case() {
        let ids = ids();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len(), "duplicate ids");
        for id in ids {
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{id} is not kebab-case"
            );
        }
    }

    #[test]
    fn entries_are_consistent() {
        for e in catalogue().unwrap() {
            let m = &e.mechanism;
            let d = m.domain();
            d.validate().unwrap();
            assert_eq!(e.witness.relation(), m.neighboring(), "{}", m.id());
            d.check(e.witness.first())
                .unwrap_or_else(|err| panic!("{}: {err}", m.id()));
            d.check(e.witness.second())
                .unwrap_or_else(|err| panic!("{}: {err}", m.id()));
            m.claim().validated().unwrap();
            // Samples have the announced shape.
            let mut rng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::seed_from_u64(1);
            let s = m.sample(e.witness.first(), 7, &mut rng).unwrap();
            assert_eq!((s.n(), s.dim()), (7, m.output_dim()), "{}", m.id());
            assert!(s.first_non_finite().is_none(), "{}", m.id());
        }
    }

    #[test]
    fn sampling_is_deterministic_given_the_rng() {
        for e in catalogue().unwrap() {
            let draw = |seed| {
                let mut rng = <rand_chacha::ChaCha20Rng as rand::SeedableRng>::seed_from_u64(seed);
                e.mechanism.sample(e.witness.second(), 5, &mut rng).unwrap()
            };
            assert_eq!(draw(3), draw(3), "{}", e.mechanism.id());
        }
    }

    #[test]
    fn unknown_id_suggests_closest() {
        let err = build("laplace-sun", &Params::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("did you mean laplace-sum"), "{err}");
        let err = build("nope", &Params::new()).unwrap_err().to_string();
        assert!(err.contains("no catalogue id is close"), "{err}");
        assert!(!err.contains("svt"), "{err}");
        assert_eq!(closest_ids("svt", 3), ["svt1", "svt2", "svt3"]);
        assert_eq!(closest_ids("dpsgd-scaled", 1), ["dpsgd-scaled-noise"]);
        assert_eq!(closest_ids("histogram", 1), ["noisy-histogram"]);
        assert_eq!(closest_ids("laplace-mean-bug", 1), ["laplace-mean"]);
        let _ = Dataset::empty(1);
    }
}
