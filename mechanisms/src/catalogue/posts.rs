//! Algorithms seed 002's posts name (Google Research's 2022 review, "Privacy and federated
//! learning"), each at a scale the testers resolve, with a buggy twin of a mistake an implementer
//! could make: one-bit local estimation of the Gini entropy, distinct counts over a sliding window
//! of a stream, sparse histograms in the two-server model, audited through what one server
//! sees, and the cross-publisher reach and frequency histogram. Page:
//! docs/seeds/posts-algorithms.md.
//!
//! | id | release | claim (defaults) | true guarantee |
//! |---|---|---|---|
//! | `entropy-one-bit-local` | public hash, one randomized-response bit per user | ε = 1 (local, replace-one) | ε, tight on the witness |
//! | `entropy-one-bit-flip-as-resample` | the same, the bit resampled with the flip probability | ε = 1 | exactly ln(2e^ε + 1) = 1.862; δ(ε) = 1/4 |
//! | `sliding-window-distinct-tree` | T = 8 window distinct counts, W = 4, tree on the differences | ε = 1 (event level) | within ε (2L/(2(L + 1))·ε = 0.75ε) |
//! | `sliding-window-distinct-per-window` | each window count + Lap_ℤ(1/ε) | ε = 1 | exactly min(W, T)·ε = 4ε |
//! | `two-server-histogram` | server 1's view: K = 4 key counts with both servers' dummies | (1, 1e-5) (add/remove) | (1, 7.72e-6), exact |
//! | `two-server-histogram-one-server-noise` | the same, only server 1 adds dummies | (1, 1e-5) | no finite ε: δ = 1 at every ε |
//! | `two-server-histogram-clamped-dummies` | the same, dummies max(0, Lap_ℤ(1/ε)), no shift | (1, 1e-5) | δ(ε) = e^ε/(e^ε + 1) = 0.731 |
//! | `reach-frequency-histogram` | users reached 1, 2, 3+ times across publishers, Lap_ℤ(2/ε) each | ε = 1 (one impression) | ε, tight on the witness |
//! | `reach-frequency-sensitivity-one` | the same, Lap_ℤ(1/ε) each | ε = 1 | exactly 2ε |
//!
//! # One-bit entropy estimation (local DP)
//! Bravo-Hermsdorff, Busa-Fekete, Ghavamzadeh, Muñoz Medina & Syed, "Private and
//! Communication-Efficient Algorithms for Entropy Estimation" (NeurIPS 2022): every user sends a
//! constant number of bits, one in the Gini-entropy algorithm. The server draws a public random
//! hash h: {0, …, k − 1} → {0, 1} (uniform, independent of the data); user i, holding value v_i,
//! sends binary randomized response of h(v_i). With s_i = 2b_i − 1 and λ = (e^ε − 1)/(e^ε + 1),
//! E[s_i·s_j] = λ²·P(X_i = X_j) for i ≠ j over the hash and the randomizer (a random sign
//! σ = 2h − 1 has E[σ(x)σ(y)] = [x = y]), so Σ_{i≠j} s_i s_j/(n(n − 1)λ²) is unbiased for the
//! collision probability Σ_x p_x², and one minus it for the Gini entropy (the server's
//! post-processing; `gini_estimate` in the tests).
//!
//! The records: a real x ∈ [0, 1], the value v = min(⌊x·k⌋, k − 1), exactly n users, neighbours
//! replace one user's record (the local setting; `shuffle.rs`'s [`Rr`], whose helpers these
//! entries reuse). The release is the server's whole view: the hash (k bits, symbol j at bit j)
//! and the n reports (user i at bit i), two integers.
//!
//! *Privacy.* The randomizer keeps the bit with probability a = (e^ε − 1)/(e^ε + 1), else sends
//! a fair coin: it tells the truth with probability a + (1 − a)/2 = e^ε/(e^ε + 1) and lies with
//! 1/(e^ε + 1), ratio e^ε. The law of the view is P(h)·Π_i P(b_i | h(v_i)); replacing user i
//! changes one factor, by a ratio in [e^−ε, e^ε] for every h (1 where h(v_i) = h(v′_i)): ε-DP,
//! tight on the event {h(v) ≠ h(v′), b_i = h(v)}.
//!
//! *The twin* resamples the bit with probability 1/(e^ε + 1) — randomized response's flip
//! probability, taken for the probability of replacing the bit by a fair coin (the two
//! parameterizations of randomized response mixed up). It then tells the truth with
//! 1 − 1/(2(e^ε + 1)) and lies with 1/(2(e^ε + 1)): ratio 2e^ε + 1, so it is exactly
//! ln(2e^ε + 1)-DP (1.862 at ε = 1; the same factor computation, tight on the same event), and
//! δ at the claimed ε is P(h(v) ≠ h(v′))·(P(truth) − e^ε·P(lie)) = ½·(e^ε + 1)/(2(e^ε + 1)) = 1/4
//! for every ε.
//!
//! # Distinct counts over a sliding window (continual release)
//! Ghazi, Kumar, Nelson & Manurangsi, "Private Counting of Distinct and k-Occurring Items in
//! Time Windows" (ITCS 2023), answer Bolot et al.'s (ICDT 2013) question of counting the distinct
//! items among the last W updates at every step. A record (r₀, r₁) ∈ [0, 1]² is one event: item
//! u = min(⌊r₁·U⌋, U − 1) at step s = min(⌊r₀·T⌋, T − 1), T = 2^L. The release is the T counts
//! d_t = |{u : an event (s, u) with t − W < s ≤ t}|. Neighbours add or remove one event
//! (event-level privacy over the whole stream).
//!
//! *Sensitivity.* Adding (s, u) raises d_t by 1 exactly for the t in [s, s + W − 1] whose window
//! holds no other event of u; the other events of u at s_j < s cut a prefix of that range
//! ([s, s_j + W − 1]) and those at s_j ≥ s a suffix, so the changed steps are one interval
//! [a, b]: the count vector moves by ≤ min(W, T) in L1, and the difference stream
//! Δ_t = d_t − d_{t−1} (d_{−1} = 0) by +1 at a and −1 at b + 1 (if b + 1 < T): L1 ≤ 2.
//!
//! *The tree* (`sliding-window-distinct-tree`): the binary tree mechanism of `continual.rs` on
//! the difference stream (its `tree_nodes`, `tree_prefixes`): each of the ≤ 2 changed differences
//! lies in one node per level, so the node vector moves by ≤ 2(L + 1) in L1 (at most 2L in fact:
//! a and b + 1 share the root, where the +1 and −1 cancel). Lap_ℤ(2(L + 1)/ε) per node makes the
//! nodes ε-DP (the discrete Laplace mechanism), the counts d̃_t = the dyadic prefix sums of the
//! noisy nodes are post-processing. Integer noise on integer counts: float-safe.
//!
//! *The twin* (`sliding-window-distinct-per-window`) adds Lap_ℤ(1/ε) to every window count:
//! "one event changes a distinct count by at most 1", true for one count, but an event is in up
//! to W windows. Its ratio of output laws is e^{ε·Σ_t(|o_t − d′_t| − |o_t − d_t|)} ≤ e^{ε·‖d − d′‖₁}
//! with equality when every o_t lies beyond both counts, and the witness (a new item at step 0,
//! alone in its windows) moves W counts: exactly min(W, T)·ε-DP, 4ε at the defaults. At W = 1 it
//! is correct.
//!
//! # Sparse histograms in the two-server model (each server's view)
//! Bell, Gascón, Ghazi, Kumar, Manurangsi, Raykova, Schoppmann, "Distributed, Private, Sparse
//! Histograms in the Two-Server Model" (CCS 2022): clients secret-share their keys between two
//! non-colluding servers, which aggregate the histogram in MPC; each server adds dummy
//! contributions, so that what the *other* server learns of the counts is differentially
//! private. Dummies are records, so their number cannot be negative: each count gets a shifted,
//! truncated discrete Laplace number of dummies, Z with P(Z = z) ∝ e^{−ε|z − τ|} on {0, …, 2τ}.
//! Modelled at K keys (a record x ∈ [0, 1] is key min(⌊x·K⌋, K − 1)), all keys materialized;
//! neighbours add or remove one record. What the audit sees is server 1's view: the counts with
//! both servers' dummies c_j + Z¹_j + Z²_j, and its own dummies Z¹_j (it drew them), 2K integers.
//! Server 2's view is the same with the roles swapped.
//!
//! *Privacy of server 1's view.* (c + Z¹ + Z², Z¹) is a bijection of (c + Z², Z¹), and Z¹ does not
//! depend on the data: the view is as private as c + Z². One record moves one count by 1. For
//! c against c + 1 the laws of c + Z are supported on [c, c + 2τ] and [c + 1, c + 1 + 2τ]; on
//! the overlap the ratio is e^{±ε} (neighbouring z), so H_{e^ε} is exactly the uncovered mass,
//! P(Z = 0) = e^{−ετ}/N(τ) with N(τ) = Σ_{z=0}^{2τ} e^{−ε|z − τ|} (either direction, by symmetry):
//! (ε, e^{−ετ}/N)-DP. τ is the smallest integer with e^{−ετ}/N(τ) ≤ δ = 1e-5: τ = 11 at ε = 1,
//! exact δ = 7.72e-6. Z is drawn exactly: τ + Lap_ℤ(1/ε) by `exact`'s sampler, redrawn until it
//! lies in [0, 2τ] (rejection gives the truncated law exactly).
//!
//! *Twin 1* (`two-server-histogram-one-server-noise`): only server 1 adds dummies ("one noise is
//! enough for the released histogram"). Its view is then (c + Z¹, Z¹): the exact counts. No
//! finite ε: δ = 1 at every ε (the event "view − own dummies = c").
//!
//! *Twin 2* (`two-server-histogram-clamped-dummies`): dummies max(0, Lap_ℤ(1/ε)) — negative noise
//! rounded up to zero dummies, and no shift. c + Z then puts mass P(L ≤ 0) = e^ε/(e^ε + 1) on c,
//! which c + 1 never outputs; elsewhere the ratio is at most e^ε. δ at the claimed ε is exactly
//! e^ε/(e^ε + 1) = 0.731 at ε = 1, against 1e-5.
//!
//! # Cross-publisher reach and frequency
//! Ghazi, Kreuter, Kumar, Manurangsi, Peng, Skvortsov, Wang & Wright, "Multiparty Reach and
//! Frequency Histogram: Private, Secure and Practical" (PETS 2022), and Kreuter, Wright,
//! Skvortsov, Mirisola & Wang, "Privacy-Preserving Secure Cardinality and Frequency Estimation"
//! (Google 2020): publishers' sketches of the users their ads reached are combined in MPC, and
//! what is released is a noisy *frequency histogram* across publishers — how many distinct users
//! saw the campaign 1, 2, …, F − 1 and ≥ F times (reach is its sum). The sketches' job is to
//! deduplicate users across publishers at scale; at the auditable scale the deduplication is
//! exact. A record x ∈ [0, 1] is one impression, of user min(⌊x·U⌋, U − 1) (at whichever
//! publisher: a user's frequency sums over publishers); neighbours add or remove one impression.
//! The release is h_j = |{u : f(u) = j}| (j < F), h_F = |{u : f(u) ≥ F}|, each + Lap_ℤ(2/ε).
//!
//! *Sensitivity.* One more impression of u moves u from bucket f(u) to f(u) + 1 (from no bucket
//! into bucket 1 when f(u) = 0; nowhere when f(u) ≥ F): ‖h − h′‖₁ ≤ 2. Lap_ℤ(2/ε) per bucket
//! is ε-DP (the discrete Laplace mechanism), tight when a user moves between two buckets (the
//! witness: f = 1 → 2). *The twin* (`reach-frequency-sensitivity-one`) adds Lap_ℤ(1/ε) — "a
//! histogram has sensitivity 1", true when a record is one bucket's member, not when it is one
//! of a member's impressions: its ratio reaches e^{ε·‖h − h′‖₁} = e^{2ε} (both outputs beyond
//! their counts), exactly 2ε-DP.

use rand::{Rng, RngExt};

use super::continual::{noise, noisy_prefixes};
use super::declare::{pure_status, vector};
use super::ftrl::tree_nodes;
use super::shuffle::Rr;
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::exact::ExactDiscreteLaplace;
use crate::math::readable;
use crate::mechanism::{DpSetting, Params};

/// δ of the two-server claims.
const DELTA: f64 = 1e-5;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "entropy-one-bit-local",
            summary: "one-bit local Gini-entropy estimation (Bravo-Hermsdorff et al. 2022): a public hash, each user's hashed value by binary randomized response",
            build: entropy_correct,
        },
        Spec {
            id: "entropy-one-bit-flip-as-resample",
            summary: "one-bit entropy estimation whose randomizer resamples the bit with randomized response's flip probability 1/(e^ε + 1)",
            build: entropy_twin,
        },
        Spec {
            id: "sliding-window-distinct-tree",
            summary: "distinct items among the last W steps, at every step: the binary tree on the difference stream (sensitivity 2), exact discrete Laplace",
            build: window_tree,
        },
        Spec {
            id: "sliding-window-distinct-per-window",
            summary: "distinct items among the last W steps, each window count noised at ε as if an event were in one window only",
            build: window_per_count,
        },
        Spec {
            id: "reach-frequency-histogram",
            summary: "cross-publisher reach and frequency histogram (users reached 1…F+ times), discrete Laplace for an impression's L1 sensitivity 2",
            build: reach_correct,
        },
        Spec {
            id: "reach-frequency-sensitivity-one",
            summary: "cross-publisher frequency histogram noised for sensitivity 1, though one impression moves a user between two buckets",
            build: reach_twin,
        },
        Spec {
            id: "two-server-histogram",
            summary: "a histogram aggregated by two servers, each adding shifted truncated discrete-Laplace dummies: server 1's view (Bell et al. 2022)",
            build: two_server_correct,
        },
        Spec {
            id: "two-server-histogram-one-server-noise",
            summary: "the two-server histogram with dummies from server 1 only: server 1's view holds the exact counts",
            build: two_server_one_noise,
        },
        Spec {
            id: "two-server-histogram-clamped-dummies",
            summary: "the two-server histogram with dummies max(0, discrete Laplace): negative noise rounded up to zero dummies, no shift",
            build: two_server_clamped,
        },
    ]
}

// ---------------------------------------------------------------- one-bit entropy estimation

/// Users, symbols and ε of the one-bit entries: `symbols` maps records to values, `bit` is the
/// binary randomizer (k = 2).
fn one_bit(params: &mut Params, id: &str) -> Result<(Rr, Rr)> {
    let users = params.take_integer_in(id, "users", 4.0, 2.0, 8.0)?;
    let k = params.take_integer_in(id, "k", 4.0, 2.0, 8.0)?;
    let eps0 = params.take_in(id, "epsilon", 1.0, 0.05, 5.0)?;
    Ok((Rr { users, k, eps0 }, Rr { users, k: 2, eps0 }))
}

/// The server's view with the bit kept with probability `keep`: [hash, reports] (module docs).
fn one_bit_entry(id: &'static str, symbols: Rr, bit: Rr, keep: f64) -> Result<Entry> {
    let m = vector(
        id,
        PrivacyClaim::pure(symbols.eps0)?,
        Neighboring::ReplaceOne,
        symbols.domain(),
        2,
        move |d: &Dataset| -> Vec<usize> {
            d.column(0).iter().map(|&x| symbols.value(x)).collect()
        },
        move |values, rng: &mut dyn Rng, out| {
            let hash: Vec<usize> = (0..symbols.k).map(|_| rng.random_range(0..2)).collect();
            let packed_hash: usize = hash.iter().enumerate().map(|(j, h)| h << j).sum();
            let reports: usize = values
                .iter()
                .enumerate()
                .map(|(i, &v)| bit.report(hash[v], keep, &mut *rng) << i)
                .sum();
            out.push(packed_hash as f64);
            out.push(reports as f64);
        },
    )
    .with_claim_source(format!(
        "local: each user's one bit is binary randomized response with P(truth)/P(lie) = e^ε, ε = {}",
        readable(symbols.eps0)
    ))
    .with_setting(DpSetting::Local);
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: symbols.witness()?,
    })
}

/// The twin's true ε, ln(2e^ε + 1) (module docs).
pub(crate) fn flip_as_resample_epsilon(epsilon: f64) -> f64 {
    (2.0 * epsilon.exp() + 1.0).ln()
}

fn entropy_correct(params: &mut Params) -> Result<Entry> {
    let id = "entropy-one-bit-local";
    let (symbols, bit) = one_bit(params, id)?;
    one_bit_entry(id, symbols, bit, bit.keep())
}

fn entropy_twin(params: &mut Params) -> Result<Entry> {
    let id = "entropy-one-bit-flip-as-resample";
    let (symbols, bit) = one_bit(params, id)?;
    // Resampled with probability 1/(e^ε + 1) = p̄ of the binary randomizer: kept with 1 − p̄ = p.
    let mut entry = one_bit_entry(id, symbols, bit, bit.p())?;
    let eps = symbols.eps0;
    entry.status = pure_status(
        flip_as_resample_epsilon(eps),
        eps,
        || "the bit is replaced by a fair coin with probability 1/(e^ε + 1), randomized response's flip probability: it tells the truth with 1 − 1/(2(e^ε + 1)), ratio 2e^ε + 1".to_string(),
        "; δ = 1/4 at the claimed ε",
    );
    Ok(entry)
}

// ---------------------------------------------------------- sliding-window distinct counts

/// Depth, window, item count and ε of the sliding-window entries.
#[derive(Clone, Copy, Debug)]
struct Window {
    depth: u32,
    window: usize,
    items: usize,
    epsilon: f64,
}

impl Window {
    fn read(params: &mut Params, id: &str) -> Result<Self> {
        let depth = params.take_integer_in(id, "depth", 3.0, 1.0, 5.0)? as u32;
        let window = params.take_integer_in(id, "window", 4.0, 1.0, 32.0)?;
        let items = params.take_integer_in(id, "items", 4.0, 1.0, 16.0)?;
        let epsilon = params.take_in(id, "epsilon", 1.0, 1e-3, 10.0)?;
        let w = Self {
            depth,
            window,
            items,
            epsilon,
        };
        if window > w.steps() {
            return Err(MechanismError::InvalidParameter {
                mechanism: id.into(),
                message: format!(
                    "window = {window} with depth = {depth}: the window must fit the stream of T = 2^depth = {} steps; allowed: window ≤ T",
                    w.steps()
                ),
            });
        }
        Ok(w)
    }

    fn steps(&self) -> usize {
        1 << self.depth
    }

    /// d_t for t = 0…T − 1: distinct items among the events at steps t − W < s ≤ t.
    fn counts(&self, data: &Dataset) -> Vec<i64> {
        let steps = self.steps();
        let cell = |x: f64, n: usize| ((x * n as f64).floor().max(0.0) as usize).min(n - 1);
        let events: Vec<(usize, usize)> = data
            .iter()
            .map(|r| (cell(r[0], steps), cell(r[1], self.items)))
            .collect();
        (0..steps)
            .map(|t| {
                let mut seen = vec![false; self.items];
                for &(s, u) in &events {
                    if s <= t && t - s < self.window {
                        seen[u] = true;
                    }
                }
                seen.iter().filter(|&&b| b).count() as i64
            })
            .collect()
    }

    fn domain(&self) -> RecordDomain {
        RecordDomain::real(0.0, 1.0, 2)
    }
}

/// Three events at steps 2, 4, 6 (items 0, 1, 2) against the same with a new item at step 0,
/// alone in its W windows: it moves W counts (the twin's worst case) and two differences.
fn window_witness() -> Result<DatasetPair> {
    let d = Dataset::vectors(2, &[vec![0.3, 0.1], vec![0.6, 0.35], vec![0.8, 0.6]])?;
    DatasetPair::new(d.clone(), d.with_record(&[0.0, 0.9])?, Neighboring::AddRemove)
}

fn window_tree(params: &mut Params) -> Result<Entry> {
    let id = "sliding-window-distinct-tree";
    let w = Window::read(params, id)?;
    let depth = w.depth;
    let sensitivity = 2.0 * (depth as f64 + 1.0);
    let node_noise = noise(id, sensitivity / w.epsilon)?;
    let m = vector(
        id,
        PrivacyClaim::pure(w.epsilon)?,
        Neighboring::AddRemove,
        w.domain(),
        w.steps(),
        move |d| {
            let c = w.counts(d);
            let diff: Vec<i64> = (0..c.len())
                .map(|t| c[t] - if t == 0 { 0 } else { c[t - 1] })
                .collect();
            tree_nodes(&diff, depth)
        },
        move |nodes, rng: &mut dyn Rng, out| noisy_prefixes(nodes, &node_noise, depth, rng, out),
    )
    .with_claim_source(format!(
        "tree on the difference stream: discrete Laplace of scale 2(depth + 1)/ε = {} per node (an event moves two differences)",
        readable(sensitivity / w.epsilon)
    ));
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: window_witness()?,
    })
}

fn window_per_count(params: &mut Params) -> Result<Entry> {
    let id = "sliding-window-distinct-per-window";
    let w = Window::read(params, id)?;
    let count_noise = noise(id, 1.0 / w.epsilon)?;
    let m = vector(
        id,
        PrivacyClaim::pure(w.epsilon)?,
        Neighboring::AddRemove,
        w.domain(),
        w.steps(),
        move |d| w.counts(d),
        move |c, rng: &mut dyn Rng, out| {
            out.extend(c.iter().map(|v| (v + count_noise.sample(&mut *rng)) as f64));
        },
    );
    let covered = w.window.min(w.steps()) as f64;
    Ok(Entry {
        mechanism: Box::new(m),
        status: pure_status(
            covered * w.epsilon,
            w.epsilon,
            || "each window's distinct count gets discrete Laplace noise for sensitivity 1, but one event lies in up to W windows: the budgets add up".to_string(),
            " (min(W, T)·ε)",
        ),
        witness: window_witness()?,
    })
}

// ------------------------------------------------------------- two-server sparse histograms

/// How the two servers draw their dummies.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Dummies {
    /// Both servers, shifted truncated discrete Laplace on [0, 2τ].
    Both,
    /// Server 1 only (server 2 adds none).
    ServerOneOnly,
    /// Both servers, max(0, Lap_ℤ(1/ε)).
    Clamped,
}

/// N(τ) = Σ_{z=0}^{2τ} e^{−ε|z − τ|} and the exact δ = e^{−ετ}/N(τ) (module docs).
pub(crate) fn truncated_delta(epsilon: f64, tau: u64) -> f64 {
    let ratio = (-epsilon).exp();
    let norm = 1.0 + 2.0 * (1..=tau).map(|i| ratio.powi(i as i32)).sum::<f64>();
    (-epsilon * tau as f64).exp() / norm
}

/// The smallest shift τ with δ(τ) ≤ `delta`, or an error naming ε.
pub(crate) fn shift_for(epsilon: f64, delta: f64) -> Result<u64> {
    (1..=100_000u64)
        .find(|&tau| truncated_delta(epsilon, tau) <= delta)
        .ok_or_else(|| MechanismError::InvalidParameter {
            mechanism: "two-server-histogram".into(),
            message: format!(
                "epsilon = {epsilon}: no shift τ ≤ 100000 gives δ ≤ {delta:e}; allowed: a larger epsilon"
            ),
        })
}

/// One count's dummies.
fn dummy(kind: Dummies, lap: &ExactDiscreteLaplace, tau: u64, rng: &mut dyn Rng) -> i64 {
    match kind {
        Dummies::Clamped => lap.sample(&mut *rng).max(0),
        _ => loop {
            // τ + L conditioned on [0, 2τ]: rejection keeps the truncated law exact.
            let z = tau as i64 + lap.sample(&mut *rng);
            if (0..=2 * tau as i64).contains(&z) {
                break z;
            }
        },
    }
}

fn two_server(params: &mut Params, id: &'static str, kind: Dummies) -> Result<Entry> {
    let keys = params.take_integer_in(id, "keys", 4.0, 2.0, 16.0)?;
    let epsilon = params.take_in(id, "epsilon", 1.0, 0.1, 5.0)?;
    let tau = shift_for(epsilon, DELTA)?;
    let lap = noise(id, 1.0 / epsilon)?;
    let m = vector(
        id,
        PrivacyClaim::approximate(epsilon, DELTA)?,
        Neighboring::AddRemove,
        RecordDomain::real(0.0, 1.0, 1),
        2 * keys,
        move |d: &Dataset| {
            let mut c = vec![0i64; keys];
            for x in d.column(0) {
                c[((x * keys as f64).floor().max(0.0) as usize).min(keys - 1)] += 1;
            }
            c
        },
        move |c, rng: &mut dyn Rng, out| {
            let own: Vec<i64> = c.iter().map(|_| dummy(kind, &lap, tau, rng)).collect();
            for (cj, z1) in c.iter().zip(&own) {
                let z2 = match kind {
                    Dummies::ServerOneOnly => 0,
                    _ => dummy(kind, &lap, tau, rng),
                };
                out.push((cj + z1 + z2) as f64);
            }
            out.extend(own.iter().map(|&z| z as f64));
        },
    )
    .with_claim_source(format!(
        "server 1's view; each server adds τ + Lap_ℤ(1/ε) dummies per key truncated to [0, 2τ], τ = {tau}: δ = e^(−ετ)/N(τ) = {} at ε = {}",
        readable(truncated_delta(epsilon, tau)),
        readable(epsilon)
    ));
    let status = match kind {
        Dummies::Both => Status::Correct,
        Dummies::ServerOneOnly => Status::buggy_if(
            true,
            "only server 1 adds dummies: its view minus its own dummies is the exact histogram",
            "no finite ε: δ = 1 at every ε (server 1's view)".into(),
        ),
        Dummies::Clamped => {
            let delta = epsilon.exp() / (epsilon.exp() + 1.0);
            Status::buggy_if(
                delta > DELTA,
                "dummies max(0, Lap_ℤ(1/ε)): negative noise rounded up to zero dummies and no shift, so a count c shows as itself with probability e^ε/(e^ε + 1)",
                format!(
                    "δ = e^ε/(e^ε + 1) = {} at the claimed ε = {}",
                    readable(delta),
                    readable(epsilon)
                ),
            )
        }
    };
    let d = Dataset::scalars(vec![0.1, 0.4, 0.6])?;
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        // A key absent from D appears in D′ (the sparse case: 0 against 1).
        witness: DatasetPair::new(d.clone(), d.with_record(&[0.9])?, Neighboring::AddRemove)?,
    })
}

fn two_server_correct(params: &mut Params) -> Result<Entry> {
    two_server(params, "two-server-histogram", Dummies::Both)
}

fn two_server_one_noise(params: &mut Params) -> Result<Entry> {
    two_server(
        params,
        "two-server-histogram-one-server-noise",
        Dummies::ServerOneOnly,
    )
}

fn two_server_clamped(params: &mut Params) -> Result<Entry> {
    two_server(
        params,
        "two-server-histogram-clamped-dummies",
        Dummies::Clamped,
    )
}

// ------------------------------------------------------- cross-publisher reach and frequency

/// The frequency histogram of the impressions in `data` over `users` users, capped at `cap`
/// (module docs): h_1…h_{F−1}, h_{F+}.
fn frequency_histogram(data: &Dataset, users: usize, cap: usize) -> Vec<i64> {
    let mut f = vec![0usize; users];
    for x in data.column(0) {
        f[((x * users as f64).floor().max(0.0) as usize).min(users - 1)] += 1;
    }
    let mut h = vec![0i64; cap];
    for &fu in f.iter().filter(|&&fu| fu > 0) {
        h[fu.min(cap) - 1] += 1;
    }
    h
}

fn reach_frequency(params: &mut Params, id: &'static str, sensitivity: f64) -> Result<Entry> {
    let users = params.take_integer_in(id, "users", 4.0, 1.0, 64.0)?;
    let cap = params.take_integer_in(id, "max-frequency", 3.0, 2.0, 8.0)?;
    let epsilon = params.take_in(id, "epsilon", 1.0, 1e-3, 10.0)?;
    let bucket_noise = noise(id, sensitivity / epsilon)?;
    let m = vector(
        id,
        PrivacyClaim::pure(epsilon)?,
        Neighboring::AddRemove,
        RecordDomain::real(0.0, 1.0, 1),
        cap,
        move |d| frequency_histogram(d, users, cap),
        move |h, rng: &mut dyn Rng, out| {
            out.extend(h.iter().map(|v| (v + bucket_noise.sample(&mut *rng)) as f64));
        },
    )
    .with_claim_source(format!(
        "one impression; discrete Laplace of scale {}/ε = {} per frequency bucket",
        sensitivity,
        readable(sensitivity / epsilon)
    ));
    // User 0 reached twice and user 1 once, against user 1 reached twice: buckets 1 and 2 move.
    let d = Dataset::scalars(vec![0.1, 0.1, 0.3])?;
    Ok(Entry {
        mechanism: Box::new(m),
        status: pure_status(
            2.0 / sensitivity * epsilon,
            epsilon,
            || "the frequency histogram gets discrete Laplace noise for sensitivity 1, but one impression moves its user from one bucket to the next: L1 sensitivity 2".to_string(),
            " (2ε)",
        ),
        witness: DatasetPair::new(d.clone(), d.with_record(&[0.3])?, Neighboring::AddRemove)?,
    })
}

fn reach_correct(params: &mut Params) -> Result<Entry> {
    reach_frequency(params, "reach-frequency-histogram", 2.0)
}

fn reach_twin(params: &mut Params) -> Result<Entry> {
    reach_frequency(params, "reach-frequency-sensitivity-one", 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// The server's estimate of the Gini entropy 1 − Σ_x p_x² from its view (module docs): a
    /// post-processing of the view (module docs), written here to test the unbiasedness algebra.
    fn gini_estimate(reports: usize, users: usize, epsilon: f64) -> f64 {
        let lambda = (epsilon.exp() - 1.0) / (epsilon.exp() + 1.0);
        let s: Vec<f64> = (0..users)
            .map(|i| if reports >> i & 1 == 1 { 1.0 } else { -1.0 })
            .collect();
        let sum: f64 = s.iter().sum();
        let squares = users as f64;
        let n = users as f64;
        1.0 - (sum * sum - squares) / (n * (n - 1.0) * lambda * lambda)
    }

    fn build(id: &str) -> Entry {
        super::super::build(id, &Params::new()).unwrap()
    }

    #[test]
    fn statuses() {
        for (id, word) in [
            ("entropy-one-bit-local", "correct"),
            ("entropy-one-bit-flip-as-resample", "buggy"),
            ("sliding-window-distinct-tree", "correct"),
            ("sliding-window-distinct-per-window", "buggy"),
            ("two-server-histogram", "correct"),
            ("two-server-histogram-one-server-noise", "buggy"),
            ("two-server-histogram-clamped-dummies", "buggy"),
            ("reach-frequency-histogram", "correct"),
            ("reach-frequency-sensitivity-one", "buggy"),
        ] {
            assert_eq!(build(id).status.word(), word, "{id}");
        }
        // One window: the per-window twin is correct.
        let one = super::super::build(
            "sliding-window-distinct-per-window",
            &Params::new().set("window", 1.0),
        )
        .unwrap();
        assert!(!one.status.is_buggy());
        let e = super::super::build(
            "sliding-window-distinct-tree",
            &Params::new().set("depth", 2.0).set("window", 8.0),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("window = 8") && e.contains("allowed"), "{e}");
    }

    #[test]
    fn exact_values() {
        // ln(2e + 1) = 1.861995…
        assert!((flip_as_resample_epsilon(1.0) - 1.861_995).abs() < 1e-6);
        // τ = 11 at ε = 1: e^−11/N(11) = 7.72e-6 ≤ 1e-5 < e^−10/N(10) = 2.10e-5.
        assert_eq!(shift_for(1.0, 1e-5).unwrap(), 11);
        let d11 = truncated_delta(1.0, 11);
        assert!((d11 - 7.72e-6).abs() < 5e-8, "{d11}");
        assert!(truncated_delta(1.0, 10) > 1e-5);
        // N(1) = 1 + 2/e; δ(1) = e^−1/N(1).
        let e = 1f64.exp();
        assert!((truncated_delta(1.0, 1) - (1.0 / e) / (1.0 + 2.0 / e)).abs() < 1e-15);
    }

    #[test]
    fn window_counts_and_sensitivity() {
        let w = Window {
            depth: 3,
            window: 4,
            items: 4,
            epsilon: 1.0,
        };
        let pair = window_witness().unwrap();
        // Events at steps 2, 4, 6 (items 0, 1, 2), windows of 4 steps.
        assert_eq!(w.counts(pair.first()), [0, 0, 1, 1, 2, 2, 2, 2]);
        // The new item at step 0 counts in the windows ending at steps 0…3.
        assert_eq!(w.counts(pair.second()), [1, 1, 2, 2, 2, 2, 2, 2]);
        // An item repeated at steps 3 and 4: adding it at step 3 changes d only at t = 3.
        let d = Dataset::vectors(2, &[vec![0.5, 0.9]]).unwrap();
        let d2 = d.with_record(&[0.4, 0.9]).unwrap();
        let (a, b) = (w.counts(&d), w.counts(&d2));
        let changed: Vec<usize> = (0..8).filter(|&t| a[t] != b[t]).collect();
        assert_eq!(changed, [3]);
    }

    #[test]
    fn frequency_histograms() {
        let pair = build("reach-frequency-histogram").witness;
        // Users 0 (twice) and 1 (once), then user 1 twice: one user moves from bucket 1 to 2.
        assert_eq!(frequency_histogram(pair.first(), 4, 3), [1, 1, 0]);
        assert_eq!(frequency_histogram(pair.second(), 4, 3), [0, 2, 0]);
        // A fifth impression of a user at the cap stays in the F+ bucket.
        let d = Dataset::scalars(vec![0.9; 4]).unwrap();
        assert_eq!(frequency_histogram(&d, 4, 3), [0, 0, 1]);
        let d = d.with_record(&[0.9]).unwrap();
        assert_eq!(frequency_histogram(&d, 4, 3), [0, 0, 1]);
        let twin = build("reach-frequency-sensitivity-one");
        assert!(format!("{:?}", twin.status).contains("2-DP"), "{:?}", twin.status);
    }

    #[test]
    fn views_reveal_what_they_should() {
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(5);
        // Server 1's view minus its own dummies: the exact counts when server 2 adds none.
        let e = build("two-server-histogram-one-server-noise");
        let s = e.mechanism.sample(e.witness.first(), 50, &mut rng).unwrap();
        for r in 0..50 {
            let row: Vec<f64> = (0..8).map(|j| s.column(j)[r]).collect();
            let counts: Vec<f64> = (0..4).map(|j| row[j] - row[j + 4]).collect();
            assert_eq!(counts, [1.0, 1.0, 1.0, 0.0]);
        }
        // With both servers' dummies, view − own dummies = c + Z² ∈ [c, c + 22].
        let e = build("two-server-histogram");
        let s = e.mechanism.sample(e.witness.first(), 200, &mut rng).unwrap();
        for r in 0..200 {
            let z2 = s.column(3)[r] - s.column(7)[r];
            assert!((0.0..=22.0).contains(&z2), "{z2}");
        }
    }

    #[test]
    fn one_bit_reports_and_the_estimate() {
        let (symbols, bit) = (
            Rr {
                users: 4,
                k: 4,
                eps0: 1.0,
            },
            Rr {
                users: 4,
                k: 2,
                eps0: 1.0,
            },
        );
        // Truth-telling probabilities: e/(e + 1) = 0.7311 (correct) and 1 − 1/(2(e + 1)) = 0.8655.
        let e = 1f64.exp();
        assert!((bit.keep() + (1.0 - bit.keep()) / 2.0 - e / (e + 1.0)).abs() < 1e-15);
        assert!((bit.p() + (1.0 - bit.p()) / 2.0 - (1.0 - 0.5 / (e + 1.0))).abs() < 1e-15);
        assert_eq!(symbols.value(1.0), 3);
        // All four reports equal: Σ_{i≠j} s_i s_j = 12 = n(n − 1), estimate 1 − 1/λ².
        let lambda = (e - 1.0) / (e + 1.0);
        assert!((gini_estimate(0b1111, 4, 1.0) - (1.0 - 1.0 / (lambda * lambda))).abs() < 1e-12);
        // Two and two: Σ s = 0, Σ_{i≠j} = −4, estimate 1 + 4/(12λ²).
        assert!(
            (gini_estimate(0b0011, 4, 1.0) - (1.0 + 4.0 / (12.0 * lambda * lambda))).abs() < 1e-12
        );
        // The empirical truth rate of the twin's first report over 2·10^4 releases, where the
        // hash separates the witness values, is within 5 sd (0.0034·√2) of 0.8655.
        let twin = build("entropy-one-bit-flip-as-resample");
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(9);
        let s = twin
            .mechanism
            .sample(twin.witness.first(), 20_000, &mut rng)
            .unwrap();
        let (h, b) = (s.column(0), s.column(1));
        let (mut n, mut truth) = (0.0, 0.0);
        for r in 0..20_000 {
            let (h0, h3) = (h[r] as usize & 1, h[r] as usize >> 3 & 1);
            if h0 != h3 {
                n += 1.0;
                truth += f64::from(u8::from(b[r] as usize & 1 == h0));
            }
        }
        assert!((truth / n - 0.8655).abs() < 0.0034 * 5.0 * 2f64.sqrt(), "{}", truth / n);
    }
}
