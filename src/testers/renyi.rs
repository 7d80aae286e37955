//! Rényi tester: a variational lower bound on D_α(P ‖ Q) with a bounded test function chosen on a
//! training split and bounded on held-out data (after DP-Auditorium's Rényi tester and the
//! Rényi–Donsker–Varadhan representation of Birrell, Dupuis, Katsoulakis, Rey-Bellet & Wang 2021,
//! "Variational representations and neural network estimation of Rényi divergences", SIAM J.
//! Math. Data Sci.).
//!
//! # Inequality
//! D_α(P ‖ Q) = 1/(α−1) · ln E_Q[(dP/dQ)^α] for α > 1 (STATISTICS.md §1). Birrell et al. (their
//! Theorem 2.1 with their normalisation R_α = D_α/α) state, for every bounded measurable g,
//!
//! D_α(P ‖ Q) ≥ α/(α−1) · ln E_P[e^{(α−1)g}] − ln E_Q[e^{αg}],            (RDV)
//!
//! with equality at g = ln dP/dQ. Derivation: if P is not absolutely continuous w.r.t. Q then
//! D_α = ∞ (α > 1) and there is nothing to prove. Otherwise let r = dP/dQ; Hölder's inequality with
//! exponents α and α/(α−1) gives
//! E_P[e^{(α−1)g}] = E_Q[r·e^{(α−1)g}] ≤ (E_Q[r^α])^{1/α} · (E_Q[e^{αg}])^{(α−1)/α};
//! take logarithms and multiply by α/(α−1) > 0:
//! α/(α−1)·ln E_P[e^{(α−1)g}] ≤ 1/(α−1)·ln E_Q[r^α] + ln E_Q[e^{αg}] = D_α + ln E_Q[e^{αg}].
//! The right-hand side of (RDV) is unchanged when a constant is added to g.
//!
//! # Guarantee
//! 1. Each side's i.i.d. samples are split into a training part (the first `train_fraction`) and a
//!    held-out part of sizes m_P, m_Q.
//! 2. On the training part only, the tester picks one test function among
//!    - **clamped features**: g = c·(clamp(f(x), a, b) − b)/(b − a), which takes values in [−c, 0];
//!      the feature f is an output coordinate (either sign), a diagonal linear discriminant (d > 1),
//!      or the estimated log-likelihood ratio of the discrete coordinates; a, b are quantiles of
//!      the pooled training values of f and c > 0 is on a log grid;
//!    - **events**: g = c·1{f(x) ≥ t} (for all c ≥ 0 at once, see below);
//!
//!    maximizing the bound predicted for the held-out sizes. (A clamped candidate whose prediction
//!    is certainly below an event's or an earlier candidate's is not evaluated: the same choice,
//!    less work; see `clamped_ceilings`.)
//! 3. On the held-out part:
//!    - clamped g: X = e^{(α−1)g} ∈ [e^{−(α−1)c}, 1] under P and Y = e^{αg} ∈ [e^{−αc}, 1] under Q
//!      are bounded i.i.d. variables; the empirical Bernstein bound of Maurer & Pontil (2009,
//!      Theorem 4) gives L_X ≤ E_P X and U_Y ≥ E_Q Y, each with probability ≥ 1 − β/2, and the
//!      tester returns α/(α−1)·ln L_X − ln U_Y. On the event where both hold, by monotonicity of
//!      ln and (RDV), this is ≤ D_α(P ‖ Q).
//!    - event S = {f ≥ t}: k_P ~ Bin(m_P, P(S)) and k_Q ~ Bin(m_Q, Q(S)) give one-sided exact
//!      Clopper–Pearson bounds p_lo ≤ P(S), q_hi ≥ Q(S) (each at β/2), and the tester returns the
//!      binary Rényi divergence D_α(Bern(p_lo) ‖ Bern(q_hi)) =
//!      1/(α−1)·ln(p_lo^α q_hi^{1−α} + (1−p_lo)^α (1−q_hi)^{1−α}) when p_lo > q_hi (else 0).
//!      Validity: D_α(P ‖ Q) ≥ D_α(Bern(P(S)) ‖ Bern(Q(S))) by data processing (van Erven &
//!      Harremoës 2014, Theorem 9), and for p ≥ q the binary divergence is non-decreasing in p and
//!      non-increasing in q (∂/∂p of the sum inside the log is α[(p/q)^{α−1} − ((1−p)/(1−q))^{α−1}]
//!      ≥ 0, ∂/∂q is (1−α)[(p/q)^α − ((1−p)/(1−q))^α] ≤ 0), so on the event where both CP bounds
//!      hold, P(S) ≥ p_lo > q_hi ≥ Q(S) implies D_α(Bern(P(S)) ‖ Bern(Q(S))) ≥
//!      D_α(Bern(p_lo) ‖ Bern(q_hi)). (This is the supremum of (RDV) over two-valued g.)
//!
//! The test function is a function of the training part only, hence independent of the held-out
//! part; by the union bound the two held-out bounds hold together with probability ≥ 1 − β. The
//! bound is floored at 0 (D_α ≥ 0) and rounded down (relative slack 1e-12 on every logarithm).
//!
//! # Assumptions
//! Releases are i.i.d. within each side and the two sides are independent. Nothing is assumed
//! about the output distribution: the test function is bounded by construction, which is all the
//! empirical Bernstein bound needs, and the event bound is exact-binomial.
//!
//! # β
//! β/2 for the lower bound on the P-side expectation (or P(S)), β/2 for the upper bound on the
//! Q-side expectation (or Q(S)). The choice of the function (feature, clamp, scale, threshold,
//! family) is made on the training split and costs nothing. Across orders α and directions the
//! runner splits β (see [`crate::audit`]).
//!
//! # Claims
//! (α₀, ε)-RDP: tested at α₀ (the largest order the claim bounds; D_α is non-decreasing in α).
//! ρ-zCDP and μ-GDP: at α ∈ {2, 4, 8}. Pure ε-DP: at α ∈ {2, 4, 8, 16, 32}, where the claim allows
//! min(ε, αε²/2) ([`crate::mechanisms::PrivacyClaim::renyi_at`]). Approximate (ε, δ)-DP: not
//! testable: δ > 0 allows D_α = ∞ (a δ-probability event Q never produces), so it implies no
//! Rényi bound.

use rand::Rng;
use rayon::prelude::*;

use std::sync::{Arc, OnceLock};

use super::common::{
    Feature, HeldOutEvent, KeyMap, ThresholdCounts, bernstein_deviation, best_of_thresholds,
    candidate_features, check_fraction, empirical_bernstein_lower, empirical_bernstein_upper,
    pattern_key, pattern_key_of, sorted_desc, train_rows,
};
use super::renyi_grid::Sums;
use super::{Divergence, Measurement, PropertyTester, check_inputs};
use crate::bounds::normal_upper_quantile;
use crate::error::{Error, Result};
use crate::mechanisms::{PrivacyClaim, Samples};

/// Orders tested for ρ-zCDP and μ-GDP claims.
pub const PROFILE_ORDERS: [f64; 3] = [2.0, 4.0, 8.0];
/// Orders tested for pure ε-DP claims.
pub const PURE_ORDERS: [f64; 5] = [2.0, 4.0, 8.0, 16.0, 32.0];

/// The Rényi tester. See the module docs for the guarantee.
#[derive(Clone, Debug)]
pub struct RenyiTester {
    /// Fraction of each side used to choose the test function (the rest bounds it). In (0, 1).
    pub train_fraction: f64,
    /// A coordinate with at most this many distinct training values is treated as discrete.
    pub max_discrete_values: usize,
}

impl Default for RenyiTester {
    fn default() -> Self {
        Self {
            train_fraction: 0.25,
            max_discrete_values: 64,
        }
    }
}

impl RenyiTester {
    /// Validated constructor.
    pub fn new(train_fraction: f64) -> Result<Self> {
        check_fraction("train fraction", train_fraction)?;
        Ok(Self {
            train_fraction,
            ..Self::default()
        })
    }
}

/// The binary Rényi divergence D_α(Bern(p) ‖ Bern(q)) for p > q (0 otherwise), rounded down.
pub fn binary_renyi_lower(alpha: f64, p: f64, q: f64) -> f64 {
    if p.is_nan() || q.is_nan() || p <= q {
        return 0.0;
    }
    if q <= 0.0 {
        return f64::INFINITY;
    }
    let t1 = alpha * p.ln() + (1.0 - alpha) * q.ln();
    let t2 = if p >= 1.0 {
        f64::NEG_INFINITY
    } else {
        alpha * (-p).ln_1p() + (1.0 - alpha) * (-q).ln_1p()
    };
    let (hi, lo) = if t1 >= t2 { (t1, t2) } else { (t2, t1) };
    let lse = hi + (lo - hi).exp().ln_1p();
    let mag = t1.abs() + if t2.is_finite() { t2.abs() } else { 0.0 } + 1.0;
    let raw = (lse - 1e-12 * mag) / (alpha - 1.0);
    if raw > 0.0 { raw.next_down() } else { 0.0 }
}

/// Sorted values compressed to at most `max_points` weighted points (weights sum to 1): the 128
/// extreme values at each end kept exactly, the middle in groups of consecutive values represented
/// by their mean. For selection on the training split only.
fn compress(sorted: &[f64], max_points: usize) -> Vec<(f64, f64)> {
    let n = sorted.len();
    let w = 1.0 / n as f64;
    if n <= max_points {
        return sorted.iter().map(|&x| (x, w)).collect();
    }
    let tail = 128.min(n / 4);
    let mut out = Vec::with_capacity(max_points + 1);
    out.extend(sorted[..tail].iter().map(|&x| (x, w)));
    let mid = &sorted[tail..n - tail];
    let size = mid
        .len()
        .div_ceil(max_points.saturating_sub(2 * tail).max(1));
    for chunk in mid.chunks(size) {
        let mean = chunk.iter().sum::<f64>() / chunk.len() as f64;
        out.push((mean, chunk.len() as f64 * w));
    }
    out.extend(sorted[n - tail..].iter().map(|&x| (x, w)));
    out
}

/// The test function chosen on the training split.
#[derive(Clone, Debug)]
enum TestFunction {
    /// g = c·(clamp(f, a, b) − b)/(b − a) ∈ [−c, 0].
    Clamped { a: f64, b: f64, c: f64 },
    /// g = c·1{f ≥ t}, every c ≥ 0.
    Event { t: f64 },
}

fn clamp_unit(v: f64, a: f64, b: f64) -> f64 {
    (v.clamp(a, b) - b) / (b - a)
}

struct Choice {
    feature: usize,
    function: TestFunction,
    predicted: f64,
}

/// exp(k·u) for the values u of a clamped unit feature, u ∈ [−1, 0]: the two clamping levels,
/// u = 0 and u = −1, are often a large share of the values and take their exp from a constant.
/// The same bits as `(k * u).exp()` for every u: k·(±0) is ±0 (k finite), whose exp is exactly
/// 1, and k·(−1) is −k exactly (a sign flip), whose exp is computed once.
struct ClampedExp {
    k: f64,
    at_minus_one: f64,
}

impl ClampedExp {
    fn new(k: f64) -> Self {
        Self {
            k,
            at_minus_one: (-k).exp(),
        }
    }

    fn at(&self, u: f64) -> f64 {
        if u == 0.0 && self.k.is_finite() {
            1.0
        } else if u == -1.0 {
            self.at_minus_one
        } else {
            (self.k * u).exp()
        }
    }
}

/// The sums (Σ w·x, Σ (w·x)·x) with x = e^{k·u} over the points (u, w), in their order: the
/// reference loop of the selection grid. [`super::renyi_grid::moment_sums_grid`] computes the
/// same bits for several k at once.
pub(crate) fn moment_sums(pts: &[(f64, f64)], k: f64) -> (f64, f64) {
    let (mut m1, mut m2) = (0.0, 0.0);
    let exp = ClampedExp::new(k);
    for &(u, w) in pts {
        let x = exp.at(u);
        m1 += w * x;
        m2 += w * x * x;
    }
    (m1, m2)
}

/// Predicted (training) bound of the clamped family at (a, b, c), from the moment sums
/// ([`moment_sums`]) of the P-side points at k = (α−1)·c (`sx`) and of the Q-side points at
/// k = α·c (`sy`).
fn predict_clamped(
    alpha: f64,
    (sx, sy): ((f64, f64), (f64, f64)),
    c: f64,
    (m_p, m_q): (f64, f64),
    half: f64,
) -> f64 {
    let moments = |(m1, m2): (f64, f64)| (m1, (m2 - m1 * m1).max(0.0));
    let (mx, vx) = moments(sx);
    let (my, vy) = moments(sy);
    let lo_x = (-(alpha - 1.0) * c).exp();
    let lo_y = (-alpha * c).exp();
    let lx = (mx - bernstein_deviation(vx, 1.0 - lo_x, m_p, half)).max(lo_x);
    let uy = (my + bernstein_deviation(vy, 1.0 - lo_y, m_q, half)).min(1.0);
    if lx <= 0.0 || uy <= 0.0 {
        return f64::NEG_INFINITY;
    }
    alpha / (alpha - 1.0) * lx.ln() - uy.ln()
}

impl PropertyTester for RenyiTester {
    fn name(&self) -> &'static str {
        "renyi"
    }

    fn describe(&self) -> String {
        format!(
            "renyi: variational (Rényi–Donsker–Varadhan) lower bound on D_α with a bounded test function chosen on a {:.0}% training split; empirical Bernstein (Maurer–Pontil) or exact binomial bounds on held-out data",
            self.train_fraction * 100.0
        )
    }

    fn plan(&self, claim: &PrivacyClaim, _samples_per_side: usize) -> Result<Vec<Divergence>> {
        super::refuse_bayesian(self.name(), claim)?;
        let orders: Vec<f64> = match *claim {
            PrivacyClaim::Renyi { alpha, .. } => vec![alpha],
            PrivacyClaim::ZeroConcentrated { .. } | PrivacyClaim::GaussianDp { .. } => {
                PROFILE_ORDERS.to_vec()
            }
            PrivacyClaim::SubsampledGaussian {
                neighbors: crate::mechanisms::Neighboring::AddRemove,
                ..
            } => PROFILE_ORDERS.to_vec(),
            PrivacyClaim::Pure { .. } => PURE_ORDERS.to_vec(),
            PrivacyClaim::Approximate { delta, .. } => {
                return Err(Error::ClaimNotTestable {
                    tester: self.name().into(),
                    claim: claim.to_string(),
                    reason: if delta > 0.0 {
                        "(ε, δ)-DP with δ > 0 implies no bound on any Rényi divergence (an event of probability δ that the other side never produces makes D_α infinite); use a hockey-stick tester".into()
                    } else {
                        "state a δ = 0 claim as pure:EPS to test it with the Rényi tester".into()
                    },
                });
            }
            _ => {
                return Err(Error::ClaimNotTestable {
                    tester: self.name().into(),
                    claim: claim.to_string(),
                    reason: "unsupported claim kind".into(),
                });
            }
        };
        let out: Vec<Divergence> = orders
            .into_iter()
            .filter(|&alpha| claim.renyi_at(alpha).is_some())
            .map(|alpha| Divergence::Renyi { alpha })
            .collect();
        if out.is_empty() {
            return Err(Error::ClaimNotTestable {
                tester: self.name().into(),
                claim: claim.to_string(),
                reason: "the claim bounds no Rényi divergence".into(),
            });
        }
        Ok(out)
    }

    fn lower_bound(
        &self,
        p: &Samples,
        q: &Samples,
        divergence: Divergence,
        failure_probability: f64,
        _rng: &mut dyn Rng,
    ) -> Result<Measurement> {
        let Divergence::Renyi { alpha } = divergence else {
            return Err(Error::InvalidConfig(format!(
                "the renyi tester bounds Rényi divergences, not {divergence}"
            )));
        };
        if !(alpha.is_finite() && alpha > 1.0) {
            return Err(Error::InvalidConfig(format!(
                "Rényi order α = {alpha}; allowed: finite and > 1"
            )));
        }
        check_fraction("train fraction", self.train_fraction)?;
        check_inputs(p, q, failure_probability, 20)?;
        let np = train_rows(p.n(), self.train_fraction);
        let nq = train_rows(q.n(), self.train_fraction);
        let (m_p, m_q) = (p.n() - np, q.n() - nq);
        let half = failure_probability / 2.0;

        // 1–2. Choose the feature and test function on the training rows only.
        let training = self.training_once(p, np, q, nq);
        let Some(choice) = choose_test_function(&training, (m_p, m_q), alpha, half, true) else {
            return Err(Error::InvalidSamples(
                "no candidate test function could be formed".into(),
            ));
        };
        let feature: &Feature = &training.features[choice.feature];

        // 3. Bound on the held-out rows.
        let (fp, fq) = training.held_out_values(choice.feature, p, np, q, nq);
        let held = (&fp[..], &fq[..]);
        Ok(match choice.function {
            TestFunction::Clamped { a, b, c } => {
                clamped_bound(feature, held, (a, b, c), alpha, half, (m_p, m_q))
            }
            TestFunction::Event { t } => event_bound(feature, held, t, alpha, half, (m_p, m_q)),
        })
    }
}

/// What steps 1–2 need of the training rows, for every order α: the candidate features and,
/// per feature, the thresholds of its events with their training counts, the pairs of
/// clamping levels and the compressed training values. A function of the training rows and the
/// tester's settings only.
struct Training {
    features: Vec<Feature>,
    per_feature: Vec<FeatureTraining>,
}

/// [`Training`] of one feature.
struct FeatureTraining {
    /// The events' thresholds with the training counts of each side (see [`ThresholdCounts`]).
    thresholds: ThresholdCounts,
    /// Pairs (a, b) of clamping levels: quantiles of the pooled training values, b > a.
    pairs: Vec<(f64, f64)>,
    /// The training values of each side, compressed ([`compress`]).
    cp: Vec<(f64, f64)>,
    cq: Vec<(f64, f64)>,
    /// The held-out values, when kept (see [`Training::held_out_values`]).
    held: OnceLock<CodedValues>,
}

/// The [`Training`]s formed most recently, by [`TrainingKey`]: the runner asks for a bound at
/// every order α of the plan, in both directions, from the same training rows.
static TRAININGS: std::sync::Mutex<Vec<(TrainingKey, Arc<Training>)>> =
    std::sync::Mutex::new(Vec::new());

/// [`TRAININGS`] kept at once: two directions for each of the layers that may run at once.
const TRAININGS_KEPT: usize = 6;

/// What a [`Training`] is a function of: the tester's settings, the row counts (training and
/// all) and dimension, and the two samples' ids ([`Samples::id`]: samples with the same id have
/// the same values, so the same id means the same training and held-out rows). The held-out
/// values kept in a [`Training`] ([`FeatureTraining::held`]) are therefore those of this test's
/// held-out rows, and the test function, chosen on training rows only, stays independent of
/// them (module docs).
#[derive(Clone, PartialEq, Eq)]
struct TrainingKey {
    settings: (u64, usize),
    rows: (usize, usize, usize, usize, usize),
    ids: (u64, u64),
}

impl RenyiTester {
    /// [`training`] of the training rows `0..np` of `p` and `0..nq` of `q`, formed once for the
    /// same samples and settings (see [`TrainingKey`]).
    fn training_once(&self, p: &Samples, np: usize, q: &Samples, nq: usize) -> Arc<Training> {
        let key = TrainingKey {
            settings: (self.train_fraction.to_bits(), self.max_discrete_values),
            rows: (np, nq, p.n(), q.n(), p.dim()),
            ids: (p.id(), q.id()),
        };
        let memo = || TRAININGS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, t)) = memo().iter().find(|(k, _)| *k == key) {
            return t.clone();
        }
        let t = Arc::new(training(p, np, q, nq, self.max_discrete_values));
        let mut m = memo();
        if m.len() >= TRAININGS_KEPT {
            m.remove(0);
        }
        m.push((key, t.clone()));
        t
    }
}

/// The held-out values of an estimated log-likelihood-ratio feature, kept as codes: each value
/// is one of the table's (or 0 for a pattern unseen in training), so a row's value is
/// `levels[code]`, the same bits as the feature's value. A quarter of the memory of the values.
struct CodedValues {
    levels: Vec<f64>,
    p: Vec<u16>,
    q: Vec<u16>,
}

impl Training {
    /// The values of feature `fi` on the held-out rows `np..` of `p` and `nq..` of `q` (the
    /// samples this training was formed for). An estimated log-likelihood-ratio feature's are
    /// computed once and kept coded (every order α and direction may ask for them; its
    /// values cost a hash of the pattern each); other features' are computed again.
    fn held_out_values(
        &self,
        fi: usize,
        p: &Samples,
        np: usize,
        q: &Samples,
        nq: usize,
    ) -> (Vec<f64>, Vec<f64>) {
        let feature = &self.features[fi];
        let Feature::Atoms { coords, table } = feature else {
            return rayon::join(
                || feature.values(p, np..p.n()),
                || feature.values(q, nq..q.n()),
            );
        };
        if table.len() >= usize::from(u16::MAX) {
            return rayon::join(
                || feature.values(p, np..p.n()),
                || feature.values(q, nq..q.n()),
            );
        }
        let coded = self.per_feature[fi].held.get_or_init(|| {
            let mut levels = vec![0.0];
            let mut index: KeyMap<u16> = KeyMap::default();
            for (&k, &v) in table {
                index.insert(k, levels.len() as u16);
                levels.push(v);
            }
            let (cp, cq) = rayon::join(
                || pattern_codes(coords, &index, p, np..p.n()),
                || pattern_codes(coords, &index, q, nq..q.n()),
            );
            CodedValues {
                levels,
                p: cp,
                q: cq,
            }
        });
        let decode = |codes: &[u16]| {
            codes
                .iter()
                .map(|&c| coded.levels[usize::from(c)])
                .collect()
        };
        rayon::join(|| decode(&coded.p), || decode(&coded.q))
    }
}

/// The code in `index` (0 if absent) of the pattern of `coords` in each of the rows `rows` of
/// `s`, in order; row-major samples in parallel blocks (each code computed alone: the same
/// result on any number of threads).
fn pattern_codes(
    coords: &[usize],
    index: &KeyMap<u16>,
    s: &Samples,
    rows: std::ops::Range<usize>,
) -> Vec<u16> {
    let code = |k: u64| index.get(&k).copied().unwrap_or(0);
    let d = s.dim();
    match s.values().as_slice() {
        Some(flat) => flat[rows.start * d..rows.end * d]
            .par_chunks((1 << 14) * d)
            .flat_map_iter(|x| x.chunks_exact(d).map(|r| code(pattern_key_of(r, coords))))
            .collect(),
        None => rows.map(|i| code(pattern_key(&s.row(i), coords))).collect(),
    }
}

/// The [`Training`] of the training rows `0..np` of `p` and `0..nq` of `q`: the candidate
/// features (discrete coordinates: at most `cap` values), each one's training values sorted,
/// its events' thresholds, the quantiles of its pooled values (the clamping levels) and its
/// compressed values.
fn training(p: &Samples, np: usize, q: &Samples, nq: usize, cap: usize) -> Training {
    let features = candidate_features(p, np, q, nq, cap, true);
    let levels = [(0.0, 1.0), (0.01, 0.99), (0.1, 0.9), (0.5, 0.5)];
    let per_feature = features
        .iter()
        .map(|feature| {
            let (sp, sq) = rayon::join(
                || sorted_desc(feature.values(p, 0..np)),
                || sorted_desc(feature.values(q, 0..nq)),
            );
            let thresholds = ThresholdCounts::of(&sp, &sq);
            let quant = |l: f64| {
                pooled_ascending_at(
                    &sp,
                    &sq,
                    ((sp.len() + sq.len() - 1) as f64 * l).round() as usize,
                )
            };
            let pairs: Vec<(f64, f64)> = levels
                .iter()
                .flat_map(|&(la, _)| levels.iter().map(move |&(_, lb)| (quant(la), quant(lb))))
                .filter(|&(a, b)| b > a && (b - a).is_finite())
                .collect();
            FeatureTraining {
                thresholds,
                pairs,
                cp: compress(&sp, 1024),
                cq: compress(&sq, 1024),
                held: OnceLock::new(),
            }
        })
        .collect();
    Training {
        features,
        per_feature,
    }
}

/// Element `k` of the values of `sp` and `sq` (each sorted descending by `total_cmp`) pooled and
/// sorted ascending by `total_cmp`: what sorting the pooled values would put there (values
/// equal under `total_cmp` have identical bits), found by a binary search over how many of the
/// k + 1 smallest come from `sp`, without forming the pooled list.
fn pooled_ascending_at(sp: &[f64], sq: &[f64], k: usize) -> f64 {
    // Ascending views: the i-th smallest of sp is sp[len − 1 − i].
    let a = |i: usize| sp[sp.len() - 1 - i];
    let b = |i: usize| sq[sq.len() - 1 - i];
    let total = k + 1; // how many of the smallest are taken
    // i from sp, total − i from sq; the right i is the largest with a(i − 1) ≤ b(total − i) …
    let (mut lo, mut hi) = (total.saturating_sub(sq.len()), total.min(sp.len()));
    while lo < hi {
        let i = (lo + hi).div_ceil(2);
        // Taking i from sp is too many if sp's i-th smallest exceeds sq's (total − i + 1)-th.
        if total - i < sq.len() && a(i - 1).total_cmp(&b(total - i)).is_gt() {
            hi = i - 1;
        } else {
            lo = i;
        }
    }
    let i = lo;
    let last_a = (i > 0).then(|| a(i - 1));
    let last_b = (total > i).then(|| b(total - i - 1));
    match (last_a, last_b) {
        (Some(x), Some(y)) => {
            if x.total_cmp(&y).is_ge() {
                x
            } else {
                y
            }
        }
        (Some(x), None) => x,
        (None, Some(y)) => y,
        (None, None) => f64::NAN,
    }
}

/// Steps 1–2 with the training rows' [`Training`] (rows `0..np` of `p`, `0..nq` of `q`): for
/// every feature, the event with the best predicted binary Rényi bound and, per pair of
/// clamping levels, the best clamped test function over the grid of c; candidates evaluated in
/// parallel and reduced in order (deterministic). The one with the largest finite prediction.
///
/// With `prune`, a (pair, c) whose prediction is certainly below an earlier candidate's or an
/// event's ([`clamped_ceilings`]) is not evaluated: the same choice (a test holds it), less work.
fn choose_test_function(
    training: &Training,
    (m_p, m_q): (usize, usize),
    alpha: f64,
    half: f64,
    prune: bool,
) -> Option<Choice> {
    let z = normal_upper_quantile(half);
    let c_grid: Vec<f64> = (0..25).map(|k| 0.05 * 1.35_f64.powi(k)).collect();
    // Candidates are evaluated in parallel and reduced in order (deterministic).
    // The events of every feature first: the best of their predictions is a floor that a
    // clamped candidate must reach to be chosen, and a (pair, c) whose prediction is certainly
    // below it ([`clamped_ceilings`]) is not evaluated. The candidates keep their order (each
    // feature's event, then its pairs), so the choice is the same.
    let mut events: Vec<Option<Choice>> = training
        .per_feature
        .iter()
        .enumerate()
        .map(|(fi, ft)| {
            best_of_thresholds(&ft.thresholds, m_p as f64, m_q as f64, z, |a, b| {
                binary_renyi_lower(alpha, a, b)
            })
            .map(|(t, pred)| Choice {
                feature: fi,
                function: TestFunction::Event { t },
                predicted: pred,
            })
        })
        .collect();
    let mut floor = events
        .iter()
        .flatten()
        .map(|c| c.predicted)
        .filter(|p| p.is_finite() && prune)
        .fold(f64::NEG_INFINITY, f64::max);
    let mut candidates: Vec<Choice> = Vec::new();
    for (fi, ft) in training.per_feature.iter().enumerate() {
        candidates.extend(events[fi].take());
        // Clamped features: the moment sums of every pair of clamping levels and every c at
        // once (the same bits as one pair and one c at a time).
        let clamped = |points: &[(f64, f64)]| -> Vec<Vec<(f64, f64)>> {
            ft.pairs
                .iter()
                .map(|&(a, b)| {
                    points
                        .iter()
                        .map(|&(v, w)| (clamp_unit(v, a, b), w))
                        .collect()
                })
                .collect()
        };
        let kx: Vec<f64> = c_grid.iter().map(|&c| (alpha - 1.0) * c).collect();
        let ky: Vec<f64> = c_grid.iter().map(|&c| alpha * c).collect();
        let (up, uq) = rayon::join(|| clamped(&ft.cp), || clamped(&ft.cq));
        // Per pair, the indices of the c that may reach the floor.
        let keep: Vec<Vec<usize>> = up
            .iter()
            .zip(&uq)
            .map(|(p, q)| {
                clamped_ceilings(alpha, (p, q), &c_grid, (m_p as f64, m_q as f64), half)
                    .iter()
                    .enumerate()
                    .filter(|&(_, &ceiling)| ceiling.is_nan() || ceiling >= floor)
                    .map(|(i, _)| i)
                    .collect()
            })
            .collect();
        let whole = keep.iter().all(|k| k.len() == c_grid.len());
        #[cfg(test)]
        tests::PRUNED.with(|x| x.set(x.get() || !whole));
        let (sx, sy): (Vec<Vec<Sums>>, Vec<Vec<Sums>>) = if whole {
            rayon::join(
                || super::renyi_grid::moment_sums_streams(&up, &kx, moment_sums),
                || super::renyi_grid::moment_sums_streams(&uq, &ky, moment_sums),
            )
        } else {
            // Only the kept c of each pair (each k's sums are the same bits whichever
            // others are computed beside it).
            let kept_sums = |points: &[Vec<(f64, f64)>], ks: &[f64]| -> Vec<Vec<Sums>> {
                points
                    .par_iter()
                    .zip(&keep)
                    .map(|(pts, kept)| {
                        let ks: Vec<f64> = kept.iter().map(|&i| ks[i]).collect();
                        super::renyi_grid::moment_sums_grid(pts, &ks, moment_sums)
                    })
                    .collect()
            };
            rayon::join(|| kept_sums(&up, &kx), || kept_sums(&uq, &ky))
        };
        for (((&(a, b), keep), sx), sy) in ft.pairs.iter().zip(&keep).zip(sx).zip(sy) {
            let best = keep
                .iter()
                .map(|&i| c_grid[i])
                .zip(sx.into_iter().zip(sy))
                .map(|(c, s)| Choice {
                    feature: fi,
                    function: TestFunction::Clamped { a, b, c },
                    predicted: predict_clamped(alpha, s, c, (m_p as f64, m_q as f64), half),
                })
                .filter(|c| c.predicted.is_finite())
                .reduce(|x, y| if y.predicted > x.predicted { y } else { x });
            if let Some(b) = best.as_ref().filter(|_| prune) {
                // A candidate of the list: the later features' pairs must reach it too.
                floor = floor.max(b.predicted);
            }
            candidates.extend(best);
        }
    }
    let mut best: Option<Choice> = None;
    for c in candidates {
        if c.predicted.is_finite() && best.as_ref().is_none_or(|b| c.predicted > b.predicted) {
            best = Some(c);
        }
    }
    best
}

/// Weighted points (u, w) of a clamped feature.
type Points = [(f64, f64)];

/// Points of a clamped feature per block of [`clamped_ceilings`].
const CEILING_BLOCK: usize = 32;

/// For each c of `c_grid`, a number that [`predict_clamped`] at (α, c) cannot exceed for the
/// clamped points `p` (P side) and `q` (Q side) of one pair, or +∞ where none is sure; from 32
/// points a block instead of every point.
///
/// Why it bounds: with x = e^{k·u} increasing in u (k > 0), the P-side mean Σ w·x is at most
/// Σ_blocks W·e^{k·max u} and the Q-side mean at least Σ_blocks W·e^{k·min u} (W a block's
/// weight). In [`predict_clamped`], L_X = max(mean − dev, e^{−(α−1)c}) and
/// U_Y = min(mean + dev, 1), where each dev is [`bernstein_deviation`], at least its value at
/// variance 0 (its square-root term is ≥ 0); so L_X ≤ max(upper − dev₀, e^{−(α−1)c}) and
/// U_Y ≥ min(lower + dev₀, 1), and the prediction α/(α−1)·ln L_X − ln U_Y grows with L_X and
/// falls with U_Y. Rounding: the sums' relative error is below 1024·2^−53; upper − dev₀ is
/// used only where it keeps a thousandth of upper (else upper alone, a looser bound), so the
/// P-side logarithm moves by less than 1e−9, the Q side's (a sum of positive terms) by less
/// than 1e−12, and every logarithm is at most (α−1)c or αc in size; the ceiling adds
/// 1e−6·(1 + 2αc + |ceiling|), far above both. Means below 1e−250 (exponents near underflow,
/// where exp's rounding is not relative) give +∞.
fn clamped_ceilings(
    alpha: f64,
    (p, q): (&Points, &Points),
    c_grid: &[f64],
    (m_p, m_q): (f64, f64),
    half: f64,
) -> Vec<f64> {
    let blocks = |pts: &[(f64, f64)], top: bool| -> Vec<(f64, f64)> {
        pts.chunks(CEILING_BLOCK)
            .map(|b| {
                let w: f64 = b.iter().map(|&(_, w)| w).sum();
                let u = b.iter().map(|&(u, _)| u);
                let edge = if top {
                    u.fold(f64::NEG_INFINITY, f64::max)
                } else {
                    u.fold(f64::INFINITY, f64::min)
                };
                (edge, w)
            })
            .collect()
    };
    let (bp, bq) = (blocks(p, true), blocks(q, false));
    // e^{k·u} of every block edge and every c at once (the vector exp where it may be used).
    let means = |b: &[(f64, f64)], scale: f64| -> Vec<f64> {
        let mut x: Vec<f64> = c_grid
            .iter()
            .flat_map(|&c| b.iter().map(move |&(u, _)| scale * c * u))
            .collect();
        super::renyi_grid::exp_in_place(&mut x);
        x.chunks(b.len().max(1))
            .map(|e| e.iter().zip(b).map(|(&e, &(_, w))| w * e).sum())
            .collect()
    };
    let (mp, mq) = (means(&bp, alpha - 1.0), means(&bq, alpha));
    c_grid
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let (upper_p, lower_q) = (
                mp.get(i).copied().unwrap_or(0.0),
                mq.get(i).copied().unwrap_or(0.0),
            );
            if !(upper_p >= 1e-250 && lower_q >= 1e-250 && upper_p.is_finite()) {
                return f64::INFINITY;
            }
            let lo_x = (-(alpha - 1.0) * c).exp();
            let lo_y = (-alpha * c).exp();
            // The deviations' variance-free parts: the least they can be.
            let dev_x = bernstein_deviation(0.0, 1.0 - lo_x, m_p, half);
            let dev_y = bernstein_deviation(0.0, 1.0 - lo_y, m_q, half);
            let lx = if upper_p - dev_x >= 1e-3 * upper_p {
                upper_p - dev_x
            } else {
                upper_p
            };
            let uy = (lower_q + dev_y).min(1.0);
            let ceiling = alpha / (alpha - 1.0) * lx.max(lo_x).ln() - uy.ln();
            ceiling + 1e-6 * (1.0 + 2.0 * alpha * c + ceiling.abs())
        })
        .collect()
}

/// Step 3 for a clamped test function g = c·(clamp(f, a, b) − b)/(b − a): empirical Bernstein
/// bounds on E_P[e^((α−1)g)] and E_Q[e^(αg)] from the held-out feature values `fp` and `fq`.
fn clamped_bound(
    feature: &Feature,
    (fp, fq): (&[f64], &[f64]),
    (a, b, c): (f64, f64, f64),
    alpha: f64,
    half: f64,
    (m_p, m_q): (usize, usize),
) -> Measurement {
    let kx = (alpha - 1.0) * c;
    let ky = alpha * c;
    let lo_x = (-kx).exp() * (1.0 - 1e-12);
    let lo_y = (-ky).exp() * (1.0 - 1e-12);
    let (ex, ey) = (ClampedExp::new(kx), ClampedExp::new(ky));
    // In parallel: each value is computed alone and collected in order (the same on any
    // number of threads).
    let xs: Vec<f64> = fp
        .par_iter()
        .map(|&v| ex.at(clamp_unit(v, a, b)).clamp(lo_x, 1.0))
        .collect();
    let ys: Vec<f64> = fq
        .par_iter()
        .map(|&v| ey.at(clamp_unit(v, a, b)).clamp(lo_y, 1.0))
        .collect();
    let lx = empirical_bernstein_lower(&xs, lo_x, 1.0, half);
    let uy = empirical_bernstein_upper(&ys, lo_y, 1.0, half);
    let value = if lx > 0.0 && uy > 0.0 {
        let t1 = alpha / (alpha - 1.0) * lx.ln();
        let t2 = uy.ln();
        let raw = t1 - t2 - 1e-12 * (t1.abs() + t2.abs() + 1.0);
        if raw > 0.0 { raw.next_down() } else { 0.0 }
    } else {
        0.0
    };
    let mx = xs.iter().sum::<f64>() / xs.len() as f64;
    let my = ys.iter().sum::<f64>() / ys.len() as f64;
    let point_estimate = alpha / (alpha - 1.0) * mx.ln() - my.ln();
    Measurement {
        value,
        point_estimate,
        inequality: format!(
            "D_α(P‖Q) ≥ α/(α−1)·ln E_P[e^((α−1)g)] − ln E_Q[e^(αg)] (Rényi–Donsker–Varadhan; Hölder) at α = {alpha} with g = {c:.4}·(clamp(f, {a:.6e}, {b:.6e}) − {b:.6e})/({b:.6e} − {a:.6e}) ∈ [−{c:.4}, 0], f = {}, chosen on the training split; empirical Bernstein bounds (Maurer & Pontil 2009, Thm 4) E_P[e^((α−1)g)] ≥ {lx:.6e} and E_Q[e^(αg)] ≤ {uy:.6e} at β/2 = {half:.3e} each on {m_p} + {m_q} held-out samples (i.i.d.; g independent of them)",
            feature.describe()
        ),
        event: None,
    }
}

/// Step 3 for an event S = {f ≥ t}: Clopper–Pearson bounds on P(S) and Q(S) from the held-out
/// feature values, and the binary Rényi divergence between them.
fn event_bound(
    feature: &Feature,
    (fp, fq): (&[f64], &[f64]),
    t: f64,
    alpha: f64,
    half: f64,
    (m_p, m_q): (usize, usize),
) -> Measurement {
    let k_p = fp.iter().filter(|&&v| v >= t).count() as u64;
    let k_q = fq.iter().filter(|&&v| v >= t).count() as u64;
    let held_out = HeldOutEvent::bound(k_p, m_p, k_q, m_q, half);
    let value = binary_renyi_lower(alpha, held_out.p_lower, held_out.q_upper);
    // Plug-in with half a count kept away from 0 and 1, so that it stays finite (it is
    // for reading only; reports serialize it).
    let point_estimate = binary_renyi_lower(
        alpha,
        (k_p as f64).min(m_p as f64 - 0.5) / m_p as f64,
        (k_q as f64).max(0.5) / m_q as f64,
    );
    Measurement {
        value,
        point_estimate,
        inequality: format!(
            "D_α(P‖Q) ≥ D_α(Bern(P(S))‖Bern(Q(S))) ≥ D_α(Bern(p_lo)‖Bern(q_hi)) (data processing; monotonicity for p_lo > q_hi) at α = {alpha} for the event S chosen on the training split; one-sided Clopper–Pearson bounds p_lo ≤ P(S), q_hi ≥ Q(S) at β/2 = {half:.3e} each (exact binomial; i.i.d. samples, event independent of the {m_p} + {m_q} held-out samples)"
        ),
        event: Some(held_out.event(format!("{} ≥ {t}", feature.describe()))),
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamped_exp_is_exp() {
        let us = [
            0.0,
            -0.0,
            -1.0,
            -0.5,
            -1e-300,
            -0.999_999_999,
            -2.0,
            1.0,
            f64::MIN_POSITIVE,
        ];
        for k in [0.0, -0.0, 0.05, 1.35, 7.5, 40.0, 800.0, -3.0, f64::INFINITY] {
            let e = ClampedExp::new(k);
            for u in us {
                assert_eq!(e.at(u).to_bits(), (k * u).exp().to_bits(), "k {k}, u {u}");
            }
        }
    }
    use crate::rng::{Seed, Stream};
    use crate::testers::common::fixtures;

    thread_local! {
        /// Whether a [`choose_test_function`] call on this thread left a (pair, c) out.
        pub(super) static PRUNED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// The order statistic of two sorted lists is the pooled sort's element, bit for bit, at
    /// every index: ties across and within the lists, zeros of both signs, unequal lengths.
    #[test]
    fn pooled_order_statistic_is_the_pooled_sort() {
        let lists: Vec<Vec<f64>> = vec![
            vec![1.0],
            vec![0.0, -0.0, 0.0],
            vec![3.0, 1.0, 1.0, -2.0, -0.0],
            (0..37).map(|i| ((i * 7) % 11) as f64 - 5.0).collect(),
            (0..5).map(|i| i as f64 * 0.5).collect(),
        ];
        for a in &lists {
            for b in &lists {
                let (sp, sq) = (sorted_desc(a.clone()), sorted_desc(b.clone()));
                let mut pooled: Vec<f64> = a.iter().chain(b).copied().collect();
                pooled.sort_by(f64::total_cmp);
                for (k, want) in pooled.iter().enumerate() {
                    let got = pooled_ascending_at(&sp, &sq, k);
                    assert_eq!(got.to_bits(), want.to_bits(), "{a:?} {b:?} {k}");
                }
            }
        }
    }

    fn gaussian(n: usize, mean: f64, sd: f64, seed: u64) -> Samples {
        fixtures::gaussian(n, mean, sd, seed, 21)
    }

    /// Releases of a few kinds, side P shifted by `shift`: continuous (Laplace), continuous
    /// with atoms (clipped at ±2), discrete (rounded to halves), and Gaussian (sd 0.5, where a
    /// clamped function is often the best choice), from stream (80, index).
    fn mixed(n: usize, shift: f64, kind: usize, index: u64) -> Samples {
        use rand::RngExt;
        use rand_distr::{Distribution, Exp1, StandardNormal};
        let mut rng = Seed(11).rng(Stream::Other { tag: 80, index });
        let v = (0..n)
            .map(|_| {
                let e: f64 = Exp1.sample(&mut rng);
                let x = shift + if rng.random::<bool>() { e } else { -e };
                match kind {
                    0 => x,
                    1 => x.clamp(-2.0, 2.0),
                    2 => (x * 2.0).round() / 2.0,
                    _ => {
                        let g: f64 = StandardNormal.sample(&mut rng);
                        shift + g * 0.5
                    }
                }
            })
            .collect();
        Samples::from_column(v)
    }

    /// The bound the pruned grid relies on: at every c of the grid, every pair and order, and
    /// both sides' training points of many shapes (small and compressed, with atoms, discrete,
    /// shifted either way), `predict_clamped` never exceeds `clamped_ceilings`.
    #[test]
    fn clamped_ceilings_bound_every_prediction() {
        let c_grid: Vec<f64> = (0..25).map(|k| 0.05 * 1.35_f64.powi(k)).collect();
        let mut checked = 0usize;
        for case in 0..32u64 {
            let n = [60, 900, 3000, 20_000][(case % 4) as usize];
            let kind = (case / 4 % 4) as usize;
            let shift = [0.0, 0.3, -1.0, 2.5][(case % 4) as usize];
            let p = mixed(n, shift, kind, 2 * case);
            let q = mixed(n, 0.0, kind, 2 * case + 1);
            let t = training(&p, n / 2, &q, n / 2, 6);
            for ft in &t.per_feature {
                for &(a, b) in &ft.pairs {
                    let clamp = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
                        pts.iter().map(|&(v, w)| (clamp_unit(v, a, b), w)).collect()
                    };
                    let (up, uq) = (clamp(&ft.cp), clamp(&ft.cq));
                    for alpha in PURE_ORDERS {
                        for half in [0.0005, 0.025] {
                            let m = ((n - n / 2) as f64, (n - n / 2) as f64);
                            let ceilings = clamped_ceilings(alpha, (&up, &uq), &c_grid, m, half);
                            for (&c, &ceiling) in c_grid.iter().zip(&ceilings) {
                                let s = (
                                    moment_sums(&up, (alpha - 1.0) * c),
                                    moment_sums(&uq, alpha * c),
                                );
                                let predicted = predict_clamped(alpha, s, c, m, half);
                                assert!(
                                    predicted.is_nan() || predicted <= ceiling,
                                    "case {case} α {alpha} c {c} ({a}, {b}): {predicted} > {ceiling}"
                                );
                                checked += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(checked > 10_000, "{checked}");
    }

    /// The pruned grid chooses what the whole grid chooses (feature, function and prediction,
    /// bit for bit), on the same shapes and small shifts, at every order, in both directions;
    /// it prunes something, and a clamped choice's prediction is its own (pair, c)'s.
    #[test]
    fn the_pruned_choice_is_the_whole_grids() {
        let (mut pruned_some, mut clamped_won) = (false, false);
        for case in 0..40u64 {
            let n = [60, 900, 3000, 20_000, 20_000][(case % 5) as usize];
            let kind = (case / 5 % 4) as usize;
            let shift =
                [0.0, 0.3, -1.0, 2.5, 0.5][(case % 5) as usize] * [1.0, 0.2][(case / 20) as usize];
            let p = mixed(n, shift, kind, 2 * case);
            let q = mixed(n, 0.0, kind, 2 * case + 1);
            for (p, q) in [(&p, &q), (&q, &p)] {
                let t = training(p, n / 2, q, n / 2, 6);
                for alpha in PURE_ORDERS {
                    let held = (n - n / 2, n - n / 2);
                    let key = |c: Option<Choice>| {
                        c.map(|c| {
                            (
                                c.feature,
                                format!("{:?}", c.function),
                                c.predicted.to_bits(),
                            )
                        })
                    };
                    let chosen = choose_test_function(&t, held, alpha, 0.0005, false);
                    // A clamped choice's prediction is that of its own (pair, c), recomputed
                    // by the scalar loop.
                    if let Some(Choice {
                        feature,
                        function: TestFunction::Clamped { a, b, c },
                        predicted,
                    }) = &chosen
                    {
                        let ft = &t.per_feature[*feature];
                        let clamp = |pts: &[(f64, f64)]| -> Vec<(f64, f64)> {
                            pts.iter()
                                .map(|&(v, w)| (clamp_unit(v, *a, *b), w))
                                .collect()
                        };
                        let s = (
                            moment_sums(&clamp(&ft.cp), (alpha - 1.0) * c),
                            moment_sums(&clamp(&ft.cq), alpha * c),
                        );
                        let m = (held.0 as f64, held.1 as f64);
                        let want = predict_clamped(alpha, s, *c, m, 0.0005);
                        assert_eq!(predicted.to_bits(), want.to_bits(), "case {case} α {alpha}");
                        clamped_won = true;
                    }
                    let whole = key(chosen);
                    let pruned = key(choose_test_function(&t, held, alpha, 0.0005, true));
                    assert_eq!(pruned, whole, "case {case} α {alpha}");
                    pruned_some |= PRUNED.with(|x| x.replace(false));
                }
            }
        }
        assert!(pruned_some && clamped_won);
    }

    #[test]
    fn binary_renyi_matches_closed_form() {
        let (a, p, q): (f64, f64, f64) = (2.0, 0.9, 0.1);
        let exact: f64 = p * p / q + (1.0 - p) * (1.0 - p) / (1.0 - q);
        let exact = exact.ln();
        let got = binary_renyi_lower(a, p, q);
        assert!(got <= exact && got > exact - 1e-9, "{got} vs {exact}");
        assert_eq!(binary_renyi_lower(a, 0.1, 0.9), 0.0);
        // Monotone: larger p, smaller q → larger.
        assert!(binary_renyi_lower(4.0, 0.3, 0.1) < binary_renyi_lower(4.0, 0.35, 0.1));
        assert!(binary_renyi_lower(4.0, 0.3, 0.1) < binary_renyi_lower(4.0, 0.3, 0.05));
    }

    /// N(1, 1) vs N(0, 1): D_2 = 1. The bound is below it and, at n = 1e5, not far below.
    #[test]
    fn gaussian_shift_bound_is_valid_and_useful() {
        let p = gaussian(100_000, 1.0, 1.0, 1);
        let q = gaussian(100_000, 0.0, 1.0, 2);
        let mut rng = Seed(0).rng(Stream::Tester { bound: 0 });
        let m = RenyiTester::default()
            .lower_bound(&p, &q, Divergence::Renyi { alpha: 2.0 }, 0.05, &mut rng)
            .unwrap();
        assert!(m.value <= 1.0 && m.value > 0.7, "{m:?}");
    }

    #[test]
    fn identical_distributions_give_small_bound() {
        let p = gaussian(20_000, 0.0, 1.0, 3);
        let q = gaussian(20_000, 0.0, 1.0, 4);
        let mut rng = Seed(0).rng(Stream::Tester { bound: 0 });
        let m = RenyiTester::default()
            .lower_bound(&p, &q, Divergence::Renyi { alpha: 4.0 }, 0.05, &mut rng)
            .unwrap();
        assert!(m.value < 1e-3, "{m:?}");
    }

    #[test]
    fn plan_follows_the_claim() {
        let t = RenyiTester::default();
        let r = PrivacyClaim::renyi(3.0, 0.5).unwrap();
        assert_eq!(
            t.plan(&r, 1000).unwrap(),
            vec![Divergence::Renyi { alpha: 3.0 }]
        );
        assert_eq!(
            t.plan(&PrivacyClaim::zcdp(0.1).unwrap(), 1000)
                .unwrap()
                .len(),
            3
        );
        assert_eq!(
            t.plan(&PrivacyClaim::pure(1.0).unwrap(), 1000)
                .unwrap()
                .len(),
            5
        );
        let e = t
            .plan(&PrivacyClaim::approximate(1.0, 1e-5).unwrap(), 1000)
            .unwrap_err();
        assert!(matches!(e, Error::ClaimNotTestable { .. }), "{e}");
    }
}
