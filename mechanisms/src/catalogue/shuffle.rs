//! Local and shuffle DP (seed 002's posts name both settings; seed 000 points at amplification by
//! shuffling, Erlingsson et al. 2019): n users each hold a value in {0, …, k − 1} and send one
//! report through k-ary randomized response, the local randomizer. Released as they are, the
//! reports are ε₀-DP (the local claim); shuffled, only their multiset — the histogram of reports
//! — is released, and each user hides among the others: the central claim is amplified.
//!
//! | id | release | claim (defaults: n = 1000, k = 4, ε₀ = 1) | true guarantee |
//! |---|---|---|---|
//! | `local-randomized-response` | the n reports in user order | ε₀-DP (pure) | ε₀, tight on the witness |
//! | `local-frequency-estimate` | the k unbiased frequency estimates | ε₀-DP (pure) | within ε₀ (post-processing) |
//! | `shuffle-randomized-response` | the histogram of the n reports | (ε, 1e-5), ε = 0.5323 from FMT21 Thm 3.1 | as claimed (upper bound) |
//! | `shuffle-randomized-response-unshuffled` | the reports in user order | the same (ε, 1e-5) | exactly ε₀-DP: δ = 0.178 at the claimed ε |
//!
//! # The records and the neighboring relation
//! A record is a real x ∈ [0, 1], the user's value v = min(⌊x·k⌋, k − 1). Neighbors replace one
//! user's record (n is public: the shuffle model's setting, Feldman, McMillan & Talwar 2021,
//! "Hiding Among the Clones", FOCS 2021, FMT21 below). The domain holds exactly n records.
//!
//! # The local randomizer
//! k-ary randomized response (Warner 1965; Kairouz, Oh & Viswanath 2014): report v with
//! probability p = e^ε₀/(e^ε₀ + k − 1), each other value with p̄ = 1/(e^ε₀ + k − 1). It is drawn as
//! "keep v with probability (e^ε₀ − 1)/(e^ε₀ + k − 1), else a uniform value of the k" (the same
//! law: p̄ = (1 − a)/k and p = a + p̄). p/p̄ = e^ε₀, so one report is ε₀-DP; reports of different
//! users are independent, so the n reports in user order are ε₀-DP under replace-one (only one
//! coordinate's law changes). The probabilities are f64: the realised ratio is e^ε₀ up to a
//! relative 10⁻¹⁵, far below what any audit resolves.
//!
//! # Local frequency estimation
//! f̂_j = (c_j/n − p̄)/(p − p̄), with c_j the number of reports equal to j, is unbiased for the
//! share of users holding j (Wang, Blocki, Li & Jha 2017, "direct encoding"). A function of the
//! reports: ε₀-DP by post-processing. (The histogram's post-processing, it also keeps the
//! shuffled claim; it is declared with the local one, as a local-DP deployment states it.)
//!
//! # The shuffled claim
//! FMT21, Theorem 3.1: for ε₀-DP local randomizers, n users and δ ∈ (0, 1] with
//! ε₀ ≤ ln(n/(16·ln(2/δ))), the shuffled reports are (ε, δ)-DP with
//! ε = ln(1 + (e^ε₀ − 1)/(e^ε₀ + 1)·(8·√(e^ε₀·ln(4/δ))/√n + 8·e^ε₀/n)).
//! Computed conservatively: the entry requires the stricter ε₀ ≤ ln(n/(16·ln(4/δ))) (the
//! condition of the authors' code, `apple/ml-shuffling-amplification`, which covers both
//! versions of the paper), uses the theorem's factor (e^ε₀ − 1)/(e^ε₀ + 1) (the code's refined
//! factor is smaller), and rounds ε up to 9 significant digits. The histogram is exactly the
//! information in the shuffled multiset. The bound decreases in n, so the claim at n holds for
//! the domain's datasets (all of size n).
//!
//! # The twin: amplification claimed, reports released in user order
//! Without the shuffle the server sees who sent which report. On the witness — the first user's
//! value 0 against k − 1, the others fixed — the release's laws differ only in the first
//! report, k-ary randomized response on 0 against k − 1: its privacy loss is exactly ±ε₀ or 0,
//! the true guarantee is exactly ε₀-DP, and the exact δ at ε < ε₀ is
//! δ(ε) = p − e^ε·p̄ (the event "the first report is k − 1"). At the defaults p = 0.4753,
//! p̄ = 0.1749, and δ(0.5323) = 0.178 against the claimed 1e-5. A twin whose ε₀ is within the
//! amplified ε (no amplification) is correct, from the same computation.
//!
//! # How the reports in user order are released
//! n numbers per release would be 1000 coordinates. The reports are packed losslessly, m to a
//! coordinate, m the largest with k^m ≤ 2^52 (26 at k = 4): coordinate c holds
//! Σ_j r_{cm+j}·k^{m−1−j}, an integer below 2^52, exact in f64, the first user of each block in
//! the leading digit. The packing is a bijection of the report vector, so it neither adds nor
//! removes information; `audit` sees ⌈n/m⌉ coordinates (39 at the defaults).

use rand::{Rng, RngExt};
use rand_distr::{Binomial, Distribution};

use super::declare::{Declared, vector};
use super::{Entry, Spec, Status};
use crate::claim::PrivacyClaim;
use crate::dataset::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::error::{MechanismError, Result};
use crate::math::readable;
use crate::mechanism::{DpSetting, Params};
use crate::samples::Samples;

/// δ of the shuffled claims.
const DELTA: f64 = 1e-5;

pub(crate) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "local-randomized-response",
            summary: "k-ary randomized response by each of n users, the reports released in user order: the local ε₀-DP claim",
            build: local,
        },
        Spec {
            id: "local-frequency-estimate",
            summary: "unbiased frequency estimates from n users' k-ary randomized-response reports (local ε₀-DP, post-processing)",
            build: frequencies,
        },
        Spec {
            id: "shuffle-randomized-response",
            summary: "shuffled k-ary randomized response: the histogram of the n reports, with the amplified (ε, δ) of Feldman, McMillan & Talwar 2021, Thm 3.1",
            build: shuffled,
        },
        Spec {
            id: "shuffle-randomized-response-unshuffled",
            summary: "k-ary randomized response claiming the shuffled (amplified) ε but releasing the reports in user order",
            build: unshuffled,
        },
    ]
}

/// The settings shared by the family (also the local randomizer of `posts.rs`'s one-bit
/// entries: binary randomized response is `Rr` with k = 2).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rr {
    pub(crate) users: usize,
    pub(crate) k: usize,
    pub(crate) eps0: f64,
}

impl Rr {
    fn read(params: &mut Params, id: &str) -> Result<Self> {
        let users = params.take_integer_in(id, "users", 1000.0, 100.0, 10_000.0)?;
        let k = params.take_integer_in(id, "k", 4.0, 2.0, 16.0)?;
        let eps0 = params.take_in(id, "epsilon0", 1.0, 0.05, 5.0)?;
        Ok(Self { users, k, eps0 })
    }

    /// P(report = v | value v).
    pub(crate) fn p(&self) -> f64 {
        self.eps0.exp() / (self.eps0.exp() + self.k as f64 - 1.0)
    }

    /// P(report = j | value v ≠ j).
    pub(crate) fn p_bar(&self) -> f64 {
        1.0 / (self.eps0.exp() + self.k as f64 - 1.0)
    }

    pub(crate) fn value(&self, x: f64) -> usize {
        ((x * self.k as f64).floor().max(0.0) as usize).min(self.k - 1)
    }

    /// One report of a user holding `v` (module docs: keep, else uniform).
    pub(crate) fn report(&self, v: usize, keep: f64, rng: &mut dyn Rng) -> usize {
        if rng.random_bool(keep) {
            v
        } else {
            rng.random_range(0..self.k)
        }
    }

    /// The probability of the "keep" branch.
    pub(crate) fn keep(&self) -> f64 {
        (self.eps0.exp() - 1.0) / (self.eps0.exp() + self.k as f64 - 1.0)
    }

    /// Reports packed per coordinate: the largest m with k^m ≤ 2^52.
    fn per_coordinate(&self) -> usize {
        let mut m = 1;
        while (self.k as f64).powi(m as i32 + 1) <= 2f64.powi(52) {
            m += 1;
        }
        m
    }

    fn packed_dim(&self) -> usize {
        self.users.div_ceil(self.per_coordinate())
    }

    pub(crate) fn domain(&self) -> RecordDomain {
        RecordDomain::real(0.0, 1.0, 1).with_sizes(self.users, self.users)
    }

    /// First user at value 0 against k − 1, the others spread over the values.
    pub(crate) fn witness(&self) -> Result<DatasetPair> {
        let d: Vec<f64> = (0..self.users)
            .map(|i| (i % self.k) as f64 / self.k as f64)
            .collect();
        let first = Dataset::scalars(d)?;
        let second = first.with_replaced(0, &[1.0])?;
        DatasetPair::new(first, second, Neighboring::ReplaceOne)
    }
}

/// The amplified ε of FMT21 Theorem 3.1 (module docs), rounded up to 9 significant digits, or
/// an error naming the values when ε₀ is outside the theorem's range.
pub fn shuffled_epsilon(eps0: f64, n: usize, delta: f64) -> Result<f64> {
    let nf = n as f64;
    let limit = (nf / (16.0 * (4.0 / delta).ln())).ln();
    if eps0 > limit {
        return Err(MechanismError::InvalidParameter {
            mechanism: "shuffle-randomized-response".into(),
            message: format!(
                "epsilon0 = {eps0} with users = {n}: FMT21 Theorem 3.1 needs epsilon0 ≤ ln(n/(16·ln(4/δ))) = {} at δ = {delta:e}; allowed: a smaller epsilon0 or more users",
                readable(limit)
            ),
        });
    }
    let e0 = eps0.exp();
    let inner = (e0 - 1.0) / (e0 + 1.0)
        * (8.0 * (e0 * (4.0 / delta).ln()).sqrt() / nf.sqrt() + 8.0 * e0 / nf);
    let eps = inner.ln_1p();
    let scale = 10f64.powi(8 - eps.log10().floor() as i32);
    let up = (eps * scale).ceil() / scale;
    Ok(if up < eps { up.next_up() } else { up })
}

/// The reports in user order, packed (module docs).
fn packed_release(
    rr: Rr,
) -> impl Fn(&Vec<usize>, &mut dyn Rng, &mut Vec<f64>) + Send + Sync + 'static {
    let (m, keep, k) = (rr.per_coordinate(), rr.keep(), rr.k as f64);
    move |values, rng, out| {
        for block in values.chunks(m) {
            let mut c = 0.0;
            for &v in block {
                c = c * k + rr.report(v, keep, &mut *rng) as f64;
            }
            // A short last block is padded with zeros in the low digits.
            out.push(c * k.powi((m - block.len()) as i32));
        }
    }
}

fn values(rr: Rr) -> impl Fn(&Dataset) -> Vec<usize> + Send + Sync + 'static {
    move |d| d.column(0).iter().map(|&x| rr.value(x)).collect()
}

/// The histogram of the n reports, drawn class by class: of the n_v users holding v,
/// Bin(n_v, keep) keep v and the others report a uniform value, whose k counts are drawn as
/// sequential binomials (Bin(rest, 1/(k − j)) for value j). The same law as n separate reports
/// (module docs), with k(k + 1) draws instead of n: the histogram entries are audited over
/// hundreds of seeds. rand_distr's `Binomial` draws each count (it has no multinomial).
fn counts(rr: Rr, values: &[usize], rng: &mut dyn Rng) -> Result<Vec<f64>> {
    let binomial = |n: u64, p: f64, rng: &mut dyn Rng| -> Result<u64> {
        Ok(Binomial::new(n, p)
            .map_err(|e| MechanismError::Sampling {
                mechanism: "randomized-response".into(),
                message: format!("Binomial({n}, {p}): {e}"),
            })?
            .sample(rng))
    };
    let mut held = vec![0u64; rr.k];
    for &v in values {
        held[v] += 1;
    }
    let keep = rr.keep();
    let mut c = vec![0.0; rr.k];
    for (v, &n_v) in held.iter().enumerate() {
        let kept = binomial(n_v, keep, &mut *rng)?;
        c[v] += kept as f64;
        let mut rest = n_v - kept;
        for (j, cj) in c.iter_mut().enumerate() {
            let x = if j + 1 == rr.k {
                rest
            } else {
                binomial(rest, 1.0 / (rr.k - j) as f64, &mut *rng)?
            };
            *cj += x as f64;
            rest -= x;
        }
    }
    Ok(c)
}

/// A mechanism releasing `map` of each count of the reports' histogram.
fn histogram_mechanism(
    id: &'static str,
    claim: PrivacyClaim,
    rr: Rr,
    map: impl Fn(f64) -> f64 + Send + Sync + 'static,
) -> Declared {
    let vals = values(rr);
    Declared {
        id,
        claim,
        claim_source: None,
        neighboring: Neighboring::ReplaceOne,
        domain: rr.domain(),
        output_dim: rr.k,
        recommended_transform: None,
        setting: crate::mechanism::DpSetting::Central,
        sample: Box::new(move |data: &Dataset, n, rng: &mut dyn Rng| {
            let v = vals(data);
            let mut flat = Vec::with_capacity(n * rr.k);
            for _ in 0..n {
                flat.extend(counts(rr, &v, &mut *rng)?.into_iter().map(&map));
            }
            Samples::from_flat(rr.k, flat)
        }),
    }
}

fn local(params: &mut Params) -> Result<Entry> {
    let id = "local-randomized-response";
    let rr = Rr::read(params, id)?;
    let m = vector(
        id,
        PrivacyClaim::pure(rr.eps0)?,
        Neighboring::ReplaceOne,
        rr.domain(),
        rr.packed_dim(),
        values(rr),
        packed_release(rr),
    )
    .with_claim_source(format!(
        "local: each report is k-ary randomized response with p/p̄ = e^ε₀, ε₀ = {}",
        readable(rr.eps0)
    ))
    .with_setting(DpSetting::Local);
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: rr.witness()?,
    })
}

fn frequencies(params: &mut Params) -> Result<Entry> {
    let id = "local-frequency-estimate";
    let rr = Rr::read(params, id)?;
    let (p, p_bar, n) = (rr.p(), rr.p_bar(), rr.users as f64);
    let m = histogram_mechanism(id, PrivacyClaim::pure(rr.eps0)?, rr, move |c| {
        (c / n - p_bar) / (p - p_bar)
    })
    .with_claim_source(format!(
        "local: a post-processing of k-ary randomized-response reports, ε₀ = {}",
        readable(rr.eps0)
    ))
    .with_setting(DpSetting::Local);
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: rr.witness()?,
    })
}

fn shuffled_claim(rr: Rr) -> Result<(PrivacyClaim, f64, String)> {
    let eps = shuffled_epsilon(rr.eps0, rr.users, DELTA)?;
    Ok((
        PrivacyClaim::approximate(eps, DELTA)?,
        eps,
        format!(
            "amplification by shuffling (Feldman, McMillan & Talwar 2021, Thm 3.1) of {} ε₀-DP reports, ε₀ = {}: ε = {eps} at δ = {DELTA:e}",
            rr.users,
            readable(rr.eps0)
        ),
    ))
}

fn shuffled(params: &mut Params) -> Result<Entry> {
    let id = "shuffle-randomized-response";
    let rr = Rr::read(params, id)?;
    let (claim, _, source) = shuffled_claim(rr)?;
    let m = histogram_mechanism(id, claim, rr, |c| c)
        .with_claim_source(source)
        .with_setting(DpSetting::Shuffle);
    Ok(Entry {
        mechanism: Box::new(m),
        status: Status::Correct,
        witness: rr.witness()?,
    })
}

/// The exact δ at ε of k-ary randomized response on two different values (module docs).
pub fn rr_delta(p: f64, p_bar: f64, epsilon: f64) -> f64 {
    (p - epsilon.exp() * p_bar).max(0.0)
}

fn unshuffled(params: &mut Params) -> Result<Entry> {
    let id = "shuffle-randomized-response-unshuffled";
    let rr = Rr::read(params, id)?;
    let (claim, eps, source) = shuffled_claim(rr)?;
    let m = vector(
        id,
        claim,
        Neighboring::ReplaceOne,
        rr.domain(),
        rr.packed_dim(),
        values(rr),
        packed_release(rr),
    )
    .with_claim_source(source)
    .with_setting(DpSetting::Shuffle);
    let delta = rr_delta(rr.p(), rr.p_bar(), eps);
    let status = Status::buggy_if(
        delta > DELTA * (1.0 + 1e-6),
        "the amplified (shuffled) ε is claimed, but the reports are released in user order: the server sees each user's own randomized response",
        format!(
            "exactly {}-DP (ε₀, the local randomizer's): δ = {} at the claimed ε = {}",
            readable(rr.eps0),
            readable(delta),
            readable(eps)
        ),
    );
    Ok(Entry {
        mechanism: Box::new(m),
        status,
        witness: rr.witness()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn the_amplified_epsilon_at_the_defaults() {
        // ln(1 + (e − 1)/(e + 1)·(8·√(e·ln(4·10^5))/√1000 + 8e/1000)) = 0.53223…
        let eps = shuffled_epsilon(1.0, 1000, 1e-5).unwrap();
        assert!((eps - 0.5322).abs() < 1e-3, "{eps}");
        assert!(shuffled_epsilon(3.0, 1000, 1e-5).is_err());
        let e = super::super::build(
            "shuffle-randomized-response",
            &Params::new().set("epsilon0", 3.0),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("epsilon0 = 3") && e.contains("allowed"), "{e}");
    }

    #[test]
    fn packing_is_lossless_and_the_twin_is_buggy() {
        let rr = Rr {
            users: 30,
            k: 4,
            eps0: 50.0,
        };
        assert_eq!(rr.per_coordinate(), 26);
        assert_eq!(rr.packed_dim(), 2);
        // With ε₀ = 50 every report keeps its value: the packing reads back the values.
        let vals: Vec<usize> = (0..30).map(|i| i % 4).collect();
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(1);
        let mut out = Vec::new();
        packed_release(rr)(&vals, &mut rng, &mut out);
        let mut c = out[0];
        for j in (0..26).rev() {
            assert_eq!((c % 4.0) as usize, vals[j]);
            c = (c / 4.0).floor();
        }
        let bad =
            super::super::build("shuffle-randomized-response-unshuffled", &Params::new()).unwrap();
        assert!(bad.status.is_buggy());
        let ok = super::super::build("shuffle-randomized-response", &Params::new()).unwrap();
        assert!(!ok.status.is_buggy());
    }

    #[test]
    fn reports_follow_randomized_response() {
        // 10^5 reports of value 0 at k = 4, ε₀ = 1: P(0) = e/(e + 3) = 0.4753; the sample share
        // is within 5 sd (0.0079) of it except with probability < 1e-6.
        let rr = Rr {
            users: 1000,
            k: 4,
            eps0: 1.0,
        };
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(2);
        let c = counts(rr, &vec![0; 100_000], &mut rng).unwrap();
        assert!((c[0] / 1e5 - rr.p()).abs() < 0.0079, "{c:?}");
        assert!((c[3] / 1e5 - rr.p_bar()).abs() < 0.0079, "{c:?}");
    }
}
