//! The PLD accountant ([`PldAccountant`]): a ledger of subsampled-Gaussian events under one
//! neighboring relation, composed (tilted toward the answer when it is one event) and queried
//! for (ε, δ) bounds; the noise multiplier that reaches a target ε (`dp_accounting`'s
//! `pld/pld_privacy_accountant.py`).

use super::common::*;
use super::pld_pmf::*;
use super::privacy_loss_distribution::*;
use super::privacy_loss_events::NoiseEvent;
use crate::Neighboring;
use crate::accountant::{ALL_RELATIONS, DeltaRange, EpsilonRange, PrivacyAccountant, Scope};
use crate::error::Result;
use crate::ledger::{LedgerEvent, SamplingPolicy};

/// (pessimistic ε, optimistic ε) at `delta` for `steps` steps of the Poisson-subsampled Gaussian
/// mechanism, with [`DEFAULT_DISCRETIZATION`]: the first is an upper bound on the true ε
/// (rounded up), the second a lower bound (see the module documentation for the caveat on
/// floating-point error). The two estimates are computed on two threads.
///
/// # Errors
/// As [`poisson_gaussian_pld`]; δ outside (0, 1).
pub fn epsilon_bounds(
    q: f64,
    z: f64,
    steps: u64,
    delta: f64,
    neighbors: Neighboring,
) -> Result<(f64, f64)> {
    let mut acct = PldAccountant::new(neighbors);
    acct.compose_poisson_gaussian(q, z, steps)?;
    acct.epsilon_bounds(delta)
}

/// The smallest noise multiplier z (to a relative precision of 10⁻⁴, erring large) whose
/// pessimistic ε at `delta` after `steps` steps at rate `q` is ≤ `target_epsilon`, by bisection
/// on z (ε is non-increasing in z), with [`DEFAULT_DISCRETIZATION`].
///
/// # Errors
/// q outside (0, 1]; steps = 0; δ outside (0, 1); target ε ≤ 0 or non-finite; a target not
/// reached by z = [`MAX_NOISE_MULTIPLIER`], or already reached by z = [`MIN_NOISE_MULTIPLIER`]
/// (the search range), each naming the target.
pub fn noise_multiplier_for(
    q: f64,
    steps: u64,
    target_epsilon: f64,
    delta: f64,
    neighbors: Neighboring,
) -> Result<f64> {
    noise_multiplier_for_policy(
        q,
        steps,
        target_epsilon,
        delta,
        neighbors,
        SamplingPolicy::Poisson,
    )
}

/// [`noise_multiplier_for`] with batches drawn as `policy` says: Poisson, or fixed-size
/// ([`Pld::fixed_size_gaussian`], replace-one only).
///
/// # Errors
/// As [`noise_multiplier_for`]; a shuffled policy; fixed-size under neighbors other than
/// replace-one.
pub fn noise_multiplier_for_policy(
    q: f64,
    steps: u64,
    target_epsilon: f64,
    delta: f64,
    neighbors: Neighboring,
    policy: SamplingPolicy,
) -> Result<f64> {
    if policy == SamplingPolicy::FixedSize {
        PldAccountant::new(neighbors)
            .check_fixed_size(|| format!("fixed-size batches (q = {q}, T = {steps})"))?;
    }
    if policy == SamplingPolicy::Shuffled {
        return Err(invalid(
            "shuffled batches; allowed: Poisson or fixed-size (no accountant here amplifies shuffled batches)".to_string(),
        ));
    }
    check_sampling_rate(q)?;
    check_steps(steps)?;
    check_delta(delta)?;
    if !(target_epsilon.is_finite() && target_epsilon > 0.0) {
        return Err(invalid(format!(
            "target epsilon = {target_epsilon}; allowed: 0 < ε < ∞"
        )));
    }
    let eps_at = |z: f64| -> Result<f64> {
        let event = PoissonGaussianEvent {
            q,
            z,
            steps,
            policy,
        };
        event
            .step(neighbors, Estimate::Pessimistic, DEFAULT_DISCRETIZATION)?
            .self_compose(steps)?
            .epsilon(delta)
    };
    let ok = |z: f64| -> Result<bool> { Ok(eps_at(z)? <= target_epsilon) };

    // Bracket: lo fails, hi meets the target.
    let (mut lo, mut hi);
    if ok(1.0)? {
        hi = 1.0;
        lo = 0.5;
        while ok(lo)? {
            hi = lo;
            if lo <= MIN_NOISE_MULTIPLIER {
                return Err(invalid(format!(
                    "target epsilon = {target_epsilon} (delta = {delta}, q = {q}, T = {steps}) \
                     is already met at z = {MIN_NOISE_MULTIPLIER}, the smallest noise multiplier \
                     searched; allowed: targets that need z > {MIN_NOISE_MULTIPLIER}"
                )));
            }
            lo = (lo * 0.5).max(MIN_NOISE_MULTIPLIER);
        }
    } else {
        lo = 1.0;
        hi = 2.0;
        while !ok(hi)? {
            if hi >= MAX_NOISE_MULTIPLIER {
                let eps = eps_at(MAX_NOISE_MULTIPLIER)?;
                let r = crate::math::readable;
                return Err(invalid(format!(
                    "target epsilon = {} (delta = {}, q = {q}, T = {steps}) is not reached by any \
                     noise multiplier z ≤ {MAX_NOISE_MULTIPLIER} (ε = {} there); allowed: \
                     targets ≥ {}",
                    r(target_epsilon),
                    r(delta),
                    r(eps),
                    r(eps.next_up())
                )));
            }
            lo = hi;
            hi = (hi * 2.0).min(MAX_NOISE_MULTIPLIER);
        }
    }
    while hi / lo - 1.0 > NOISE_SEARCH_RELATIVE_TOLERANCE {
        let mid = (lo * hi).sqrt();
        if ok(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// Where a tilted composition is to be accurate.
#[derive(Clone, Copy, Debug)]
pub(super) enum TiltTarget {
    /// At the ε of this δ, estimated by the Chernoff bound.
    Delta(f64),
    /// At this ε (the saddle point).
    Epsilon(f64),
}

/// The tilt λ for a T-fold composition of `pmf`, K(λ) = ln Σ pᵢe^{λLᵢ}: for a δ, the minimizer
/// over λ ∈ [2⁻¹⁰, 64] of the Chernoff estimate (T·K(λ) + ln(1/δ))/λ of ε; for an ε, the
/// minimizer of T·K(λ) − λε, whose tilted composition is centred on ε (on a geometric grid of
/// ratio √2, then golden-section search around the best point); 0 when the estimate of ε is
/// not positive. Any λ ≥ 0 gives valid bounds (the error bound accounts for it); this one
/// makes them tight near the answer.
pub(super) fn choose_tilt(pmf: &Pmf, d: f64, times: u64, target: TiltTarget) -> f64 {
    let t = times as f64;
    let logs: Vec<f64> = pmf
        .probs
        .iter()
        .filter(|&&p| p > 0.0)
        .map(|p| p.ln())
        .collect();
    let losses: Vec<f64> = (0..pmf.probs.len())
        .filter(|&i| pmf.probs[i] > 0.0)
        .map(|i| pmf.loss(d, i))
        .collect();
    let estimate = |lambda: f64| -> f64 {
        let terms: Vec<f64> = logs
            .iter()
            .zip(&losses)
            .map(|(lp, l)| lp + lambda * l)
            .collect();
        let k = t * log_sum_exp(&terms);
        match target {
            TiltTarget::Delta(delta) => (k - delta.ln()) / lambda,
            TiltTarget::Epsilon(eps) => k - lambda * eps,
        }
    };
    let (mut best, mut best_value) = (0.0, f64::INFINITY);
    let mut x = -10.0_f64;
    while x <= 6.0 {
        let lambda = x.exp2();
        let v = estimate(lambda);
        if v < best_value {
            best = x;
            best_value = v;
        }
        x += 0.5;
    }
    if !best_value.is_finite() {
        return 0.0;
    }
    // Golden section on log₂λ in [best − ½, best + ½] (λ to ≈ 1 %: the bounds are valid for
    // any λ, and their tightness is flat near the optimum).
    let (mut a, mut b) = (best - 0.5, best + 0.5);
    let r = 0.5 * (5.0_f64.sqrt() - 1.0);
    for _ in 0..8 {
        let (c, e) = (b - r * (b - a), a + r * (b - a));
        if estimate(c.exp2()) < estimate(e.exp2()) {
            b = e;
        } else {
            a = c;
        }
    }
    let lambda = (0.5 * (a + b)).exp2();
    match target {
        TiltTarget::Delta(_) if estimate(lambda) <= 0.0 => 0.0,
        TiltTarget::Epsilon(eps) if eps <= 0.0 => 0.0,
        _ => lambda,
    }
}

/// One entry of a [`PldAccountant`] ledger: `steps` steps of the subsampled Gaussian mechanism
/// with rate `q` and noise multiplier `z`, the batch drawn as `policy` says (Poisson, the
/// type's name, or fixed-size; [`Pld::poisson_gaussian`], [`Pld::fixed_size_gaussian`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoissonGaussianEvent {
    /// Sampling rate q ∈ (0, 1].
    pub q: f64,
    /// Noise multiplier z > 0.
    pub z: f64,
    /// Number of steps T ≥ 1.
    pub steps: u64,
    /// How each step's batch is drawn: [`SamplingPolicy::Poisson`] or
    /// [`SamplingPolicy::FixedSize`] (replace-one only).
    pub policy: SamplingPolicy,
}

impl PoissonGaussianEvent {
    /// One step's discrete PLD under `neighbors`.
    pub(super) fn step(&self, neighbors: Neighboring, estimate: Estimate, d: f64) -> Result<Pld> {
        match self.policy {
            SamplingPolicy::FixedSize => Pld::fixed_size_gaussian(self.q, self.z, estimate, d),
            _ => Pld::poisson_gaussian(self.q, self.z, neighbors, estimate, d),
        }
    }
}

/// A PLD accountant: a ledger of Poisson-subsampled Gaussian events (each with its own q, z and
/// number of steps) under one neighboring relation and grid step, composed by FFT.
///
/// # Examples
/// ```
/// use dp_audit_accounting::Neighboring;
/// use dp_audit_accounting::pld::PldAccountant;
/// let mut acct = PldAccountant::new(Neighboring::AddRemove);
/// acct.compose_poisson_gaussian(0.01, 4.0, 500)?;
/// acct.compose_poisson_gaussian(0.02, 8.0, 100)?;
/// let (upper, lower) = acct.epsilon_bounds(1e-5)?;
/// assert!(lower <= upper && upper < 1.0);
/// # Ok::<(), dp_audit_accounting::AccountingError>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct PldAccountant {
    pub(super) neighbors: Neighboring,
    pub(super) discretization: f64,
    pub(super) events: Vec<PoissonGaussianEvent>,
    /// The ledger's queries other than Gaussian sums (Laplace sums, randomized response,
    /// attribution summaries), each with its sample's rate and repetitions.
    pub(super) others: Vec<NoiseEvent>,
    /// Events composed one at a time through [`PrivacyAccountant::compose`] whose block may
    /// still grow (a sampling event waits for its sums): composed into `events` when the next
    /// sampling event comes or a [`PrivacyAccountant`] query is asked. The inherent methods
    /// compose whole blocks and read `events` only.
    pub(super) open: Vec<(LedgerEvent, SamplingPolicy)>,
}

impl PldAccountant {
    /// An empty ledger with [`DEFAULT_DISCRETIZATION`].
    pub fn new(neighbors: Neighboring) -> Self {
        Self {
            neighbors,
            discretization: DEFAULT_DISCRETIZATION,
            events: Vec::new(),
            others: Vec::new(),
            open: Vec::new(),
        }
    }

    /// An empty ledger with grid step `discretization`.
    ///
    /// # Errors
    /// Discretization outside (0, 1].
    pub fn with_discretization(neighbors: Neighboring, discretization: f64) -> Result<Self> {
        check_discretization(discretization)?;
        Ok(Self {
            neighbors,
            discretization,
            events: Vec::new(),
            others: Vec::new(),
            open: Vec::new(),
        })
    }

    /// The neighboring relation.
    pub fn neighbors(&self) -> Neighboring {
        self.neighbors
    }

    /// The ledger, in the order events were recorded.
    pub fn events(&self) -> &[PoissonGaussianEvent] {
        &self.events
    }

    /// The ledger's queries other than Gaussian sums, in the order recorded.
    pub fn noise_events(&self) -> &[NoiseEvent] {
        &self.others
    }

    /// Records `steps` steps of one query other than the Gaussian sum
    /// ([`LedgerEvent::LaplaceSum`], [`LedgerEvent::RandomizedResponse`],
    /// [`LedgerEvent::AttributionSummary`]) on a Poisson sample of rate `q` (the query alone
    /// on its sample).
    ///
    /// # Errors
    /// A sampling or Gaussian-sum event (use the other methods); q outside (0, 1]; steps = 0; a
    /// parameter out of range; a combination not accounted (q < 1 for randomized response and
    /// attribution summaries, and for a Laplace sum under replace-one): the message names the
    /// event and what is allowed. Nothing is recorded on error.
    pub fn compose_noise_event(&mut self, query: LedgerEvent, q: f64, steps: u64) -> Result<()> {
        check_sampling_rate(q)?;
        check_steps(steps)?;
        let event = NoiseEvent { query, q, steps };
        if !query.is_query() || matches!(query, LedgerEvent::GaussianSum { .. }) {
            return Err(invalid(format!(
                "{}: allowed here: laplace-sum, randomized-response or attribution-summary (Gaussian sums: compose_poisson_gaussian)",
                event.describe()
            )));
        }
        query
            .check_other_query()
            .map_err(|m| invalid(format!("{}: {m}", event.describe())))?;
        let sampled_ok = match query {
            LedgerEvent::LaplaceSum { .. } => self.neighbors != Neighboring::ReplaceOne,
            _ => false,
        };
        if q < 1.0 && !sampled_ok {
            return Err(invalid(format!(
                "{} on a Poisson sample of rate q = {q} under {} neighbors: not amplified here; allowed: a laplace-sum in a sample of any rate under add/remove or zero-out neighbors, and probability 1 for randomized-response, attribution-summary and (under replace-one) laplace-sum events (the amplification of randomized response and of summary reports depends on how the reports are collected; the subsampled Laplace pair under replace-one mixes two shifts)",
                event.describe(),
                self.neighbors
            )));
        }
        self.others.push(event);
        Ok(())
    }

    /// Records `steps` steps of the Poisson-subsampled Gaussian mechanism.
    ///
    /// # Errors
    /// q outside (0, 1], z ≤ 0 or non-finite, steps = 0. Nothing is recorded on error.
    pub fn compose_poisson_gaussian(&mut self, q: f64, z: f64, steps: u64) -> Result<()> {
        check_sampling_rate(q)?;
        check_noise_multiplier(z)?;
        check_steps(steps)?;
        self.events.push(PoissonGaussianEvent {
            q,
            z,
            steps,
            policy: SamplingPolicy::Poisson,
        });
        Ok(())
    }

    /// Records `steps` steps of the Gaussian mechanism on batches of fixed size B = q·n drawn
    /// without replacement, independently per step ([`Pld::fixed_size_gaussian`]).
    ///
    /// # Errors
    /// Neighbors other than replace-one (a fixed B/n needs a fixed n: under add/remove the two
    /// datasets would have different sampling rates); q outside (0, 1], z ≤ 0 or non-finite,
    /// steps = 0. Nothing is recorded on error.
    pub fn compose_fixed_size_gaussian(&mut self, q: f64, z: f64, steps: u64) -> Result<()> {
        self.check_fixed_size(|| format!("fixed-size batches (q = {q}, z = {z}, T = {steps})"))?;
        check_sampling_rate(q)?;
        check_noise_multiplier(z)?;
        check_steps(steps)?;
        self.events.push(PoissonGaussianEvent {
            q,
            z,
            steps,
            policy: SamplingPolicy::FixedSize,
        });
        Ok(())
    }

    /// Ok when this accountant's relation is replace-one, the only one under which fixed-size
    /// batches are accounted; otherwise the error that says why, naming `what` (the ledger
    /// event, or the flag, that asked for them). The one check and wording of every fixed-size
    /// path ([`PldAccountant::compose_fixed_size_gaussian`], ledgers,
    /// [`noise_multiplier_for_policy`], `audit accountant --policy fixed-size`).
    ///
    /// # Errors
    /// Neighbors other than replace-one.
    pub fn check_fixed_size(&self, what: impl FnOnce() -> String) -> Result<()> {
        if self.neighbors == Neighboring::ReplaceOne {
            Ok(())
        } else {
            Err(invalid(format!(
                "{} accounted under {} neighbors; allowed: replace-one neighbors (`--neighbors replace-one`; a batch of exactly B of the n records has rate B/n only for a fixed n, so its privacy unit is replacing one record: Balle, Barthe & Gaboardi 2018; Lebeda et al. 2024)",
                what(),
                self.neighbors
            )))
        }
    }

    /// Records a privacy ledger ([`crate::ledger::LedgerEvent`]s, as the RDP accountant and
    /// `audit accountant --ledger` read them): each sampling event with the Gaussian sum queries
    /// that follow it is `repetitions` steps of one Poisson-subsampled Gaussian mechanism whose
    /// noise multiplier is the effective one of its queries, (Σᵢ zᵢ⁻²)^{−1/2} (the queries see the
    /// same sample, so one record moves them jointly: Mironov, Talwar & Zhang 2019, §3; the
    /// same rule as [`crate::rdp::RdpAccountant`]). A sample with no query adds nothing.
    ///
    /// # Errors
    /// A query before any sampling event; an event with a value out of range. Nothing is
    /// recorded on error.
    pub fn compose_ledger(&mut self, ledger: &[crate::ledger::LedgerEvent]) -> Result<()> {
        let with: Vec<_> = ledger
            .iter()
            .map(|e| (*e, SamplingPolicy::Poisson))
            .collect();
        self.compose_ledger_with_policies(&with)
    }

    /// [`PldAccountant::compose_ledger`] for a ledger whose sampling events say how their batches
    /// are drawn ([`crate::ledger::parse_ledger_with_policies`]; a Gaussian sum has its
    /// sample's policy, which is what is read from a sampling event): Poisson blocks as there,
    /// fixed-size blocks as [`PldAccountant::compose_fixed_size_gaussian`].
    ///
    /// # Errors
    /// As [`PldAccountant::compose_ledger`]; a shuffled block (no accountant here amplifies
    /// shuffled batches: the message says how to account it); a fixed-size block under
    /// neighbors other than replace-one. Nothing is recorded on error.
    pub fn compose_ledger_with_policies(
        &mut self,
        ledger: &[(LedgerEvent, SamplingPolicy)],
    ) -> Result<()> {
        // (q, repetitions, Σ z⁻², policy, the other queries with their event numbers)
        let mut blocks: Vec<LedgerBlock> = Vec::new();
        for (i, (event, policy)) in ledger.iter().enumerate() {
            match *event {
                LedgerEvent::Sampling {
                    probability,
                    repetitions,
                } => {
                    check_sampling_rate(probability)?;
                    check_steps(repetitions)?;
                    match policy {
                        SamplingPolicy::Poisson => {}
                        SamplingPolicy::FixedSize => self.check_fixed_size(|| {
                            format!(
                                "ledger event {}: a sampling event with \"policy\": \"fixed-size\"",
                                i + 1
                            )
                        })?,
                        SamplingPolicy::Shuffled => {
                            return Err(invalid(format!(
                                "ledger event {}: a sampling event with \"policy\": \"shuffled\" (each epoch a permutation cut into batches); no accountant here amplifies shuffled batches (the Poisson accountant at q = B/n can under-count them: Chua et al. 2024); allowed: \"poisson\" or \"fixed-size\" (under replace-one), or a shuffled run accounted without amplification as \"probability\": 1 under replace-one",
                                i + 1
                            )));
                        }
                    }
                    blocks.push((probability, repetitions, 0.0, *policy, Vec::new()));
                }
                LedgerEvent::GaussianSum { noise_multiplier } => {
                    check_noise_multiplier(noise_multiplier)?;
                    let Some(b) = blocks.last_mut() else {
                        return Err(invalid(format!(
                            "ledger event {}: a Gaussian sum query before any sampling event; allowed: a sampling event first (probability 1 for a full batch)",
                            i + 1
                        )));
                    };
                    b.2 += noise_multiplier.powi(-2);
                }
                other => {
                    let Some(b) = blocks.last_mut() else {
                        return Err(invalid(format!(
                            "ledger event {}: a {} event before any sampling event; allowed: a sampling event first (probability 1 for a full batch)",
                            i + 1,
                            other.kind()
                        )));
                    };
                    b.4.push((i + 1, other));
                }
            }
        }
        let mut added = Vec::new();
        let mut trial = self.clone();
        for (k, (q, steps, inv, policy, others)) in blocks.into_iter().enumerate() {
            trial.check_block_of_others(k + 1, (q, policy), inv > 0.0, &others)?;
            for (i, query) in others.iter().copied() {
                trial.compose_noise_event(query, q, steps).map_err(|e| {
                    invalid(format!("ledger event {i}: {}", strip_pld(&e.to_string())))
                })?;
            }
            if inv <= 0.0 && !others.is_empty() {
                continue;
            }
            if inv <= 0.0 {
                // A sample with no query is a ledger cut off (or a step that released
                // nothing): charging it nothing silently could under-count, so it is refused.
                return Err(invalid(format!(
                    "ledger sampling event {} (probability {q}, {steps} repetitions) has no Gaussian sum query after it (is the ledger cut off?); allowed: every sampling event followed by the gaussian_sum queries its steps release",
                    k + 1
                )));
            }
            if !inv.is_finite() {
                return Err(invalid(format!(
                    "ledger sampling event {} (probability {q}, {steps} repetitions): its Gaussian sum queries together add so little noise that Σ z⁻² overflows a double (an effective noise multiplier below {}); allowed: noise multipliers whose Σ z⁻² per sample is finite",
                    k + 1,
                    crate::math::readable(SMALLEST_ACCOUNTED_Z)
                )));
            }
            let z = inv.powf(-0.5);
            check_noise_multiplier(z)?;
            added.push(PoissonGaussianEvent {
                q,
                z,
                steps,
                policy,
            });
        }
        self.events.extend(added);
        self.others = trial.others;
        Ok(())
    }

    /// The rules of a sample holding queries other than Gaussian sums: at q = 1 any mix (each
    /// query its own mechanism); at q < 1 that query alone, on a Poisson sample (the queries of
    /// one sample see the same records, so a subsampled pair would be needed for the whole
    /// block, which is derived here for one Gaussian or one Laplace query only).
    fn check_block_of_others(
        &self,
        block: usize,
        (q, policy): (f64, SamplingPolicy),
        has_gaussian: bool,
        others: &[(usize, LedgerEvent)],
    ) -> Result<()> {
        let Some((first, query)) = others.first() else {
            return Ok(());
        };
        if q == 1.0 {
            return Ok(());
        }
        if policy != SamplingPolicy::Poisson {
            return Err(invalid(format!(
                "ledger event {first}: a {} event in a sample with \"policy\": \"{policy}\" and probability {q}; allowed: Poisson samples (or probability 1) for queries other than gaussian-sum",
                query.kind()
            )));
        }
        if has_gaussian || others.len() > 1 {
            return Err(invalid(format!(
                "ledger event {first}: a {} event shares sampling event {block} (probability {q} < 1) with other queries; allowed: one query per sample of probability < 1 when it is not a gaussian-sum (the queries of one sample see the same records, and only one Gaussian (effective) or one Laplace query's subsampled pair is accounted), or probability 1",
                query.kind()
            )));
        }
        Ok(())
    }

    /// The discrete PLD of the whole ledger. Events with the same (q, z) are merged first.
    ///
    /// # Errors
    /// A grid of more than [`MAX_GRID_POINTS`] points for one step.
    pub fn pld(&self, estimate: Estimate) -> Result<Pld> {
        self.pld_tilted(estimate, None)
    }

    /// [`PldAccountant::pld`] for reading ε at `delta`: a ledger of one event is composed
    /// tilted (masses times e^{λL}, see the module documentation) by the λ that minimizes the
    /// Chernoff estimate (T·K(λ) + ln(1/δ))/λ of ε (K the cumulant generating function of one step's loss), so
    /// that δ(ε) near there is resolved to a relative precision and its floating-point error
    /// bound is far below δ even at δ = 10⁻¹⁰. Its δ(ε) is accurate near that ε only: it is for
    /// [`Pld::epsilon`] at `delta`. A ledger of several events is composed untilted.
    ///
    /// # Errors
    /// As [`PldAccountant::pld`].
    pub fn pld_at(&self, estimate: Estimate, delta: f64) -> Result<Pld> {
        self.pld_tilted(estimate, Some(TiltTarget::Delta(delta)))
    }

    /// Whether the ledger is one event (after merging repeats), composed tilted by
    /// [`PldAccountant::pld_at`].
    pub(super) fn is_one_event(&self) -> bool {
        self.others.is_empty()
            && self.events.iter().all(|e| {
                e.q == self.events[0].q
                    && e.z == self.events[0].z
                    && e.policy == self.events[0].policy
            })
            && !self.events.is_empty()
    }

    pub(super) fn pld_tilted(
        &self,
        estimate: Estimate,
        tilt_for: Option<TiltTarget>,
    ) -> Result<Pld> {
        let mut merged: Vec<PoissonGaussianEvent> = Vec::new();
        for e in &self.events {
            match merged
                .iter_mut()
                .find(|m| m.q == e.q && m.z == e.z && m.policy == e.policy)
            {
                // Checked: a saturated count would under-charge the ledger.
                Some(m) => {
                    m.steps = m
                        .steps
                        .checked_add(e.steps)
                        .filter(|&t| t <= MAX_STEPS)
                        .ok_or_else(|| {
                            invalid(format!(
                                "the ledger repeats (q = {}, z = {}) {} + {} times; allowed: at most {MAX_STEPS} (2^53) steps in all",
                                e.q, e.z, m.steps, e.steps
                            ))
                        })?
                }
                None => merged.push(*e),
            }
        }
        let mut pld = Pld::identity(self.discretization, estimate)?;
        if let (Some(target), [e], true) = (tilt_for, merged.as_slice(), self.others.is_empty()) {
            // One event: its composition tilted toward the ε of δ (see `Pmf`).
            let step = e.step(self.neighbors, estimate, self.discretization)?;
            let d = self.discretization;
            let tilts = [
                choose_tilt(&step.remove, d, e.steps, target),
                step.add
                    .as_ref()
                    .map_or(0.0, |a| choose_tilt(a, d, e.steps, target)),
            ];
            return step.self_compose_tilted(e.steps, tilts);
        }
        for e in merged {
            let step = e.step(self.neighbors, estimate, self.discretization)?;
            pld = pld.compose(&step.self_compose(e.steps)?)?;
        }
        for e in merge_noise_events(&self.others)? {
            let step = e.step(self.neighbors, estimate, self.discretization)?;
            pld = pld.compose(&step.self_compose(e.steps)?)?;
        }
        Ok(pld)
    }

    /// (pessimistic ε, optimistic ε) at `delta`: an upper bound (rounded up) and a lower bound
    /// on the ε of the ledger; both 0 for an empty ledger.
    ///
    /// # Errors
    /// δ outside (0, 1); see [`PldAccountant::pld`].
    pub fn epsilon_bounds(&self, delta: f64) -> Result<(f64, f64)> {
        self.epsilon_bounds_adaptive(delta).map(|(u, l, _)| (u, l))
    }

    /// [`PldAccountant::epsilon_bounds`], also returning the grid step used: the ledger's, or,
    /// when a composition does not fit its grid ([`MAX_COMPOSED_POINTS`] points, or loss
    /// indices below 2^63: very many steps), the first of 2Δ, 4Δ, … (up to 1) on which it does.
    /// A coarser pessimistic PLD is still an upper bound and a coarser optimistic one still a
    /// lower bound, only looser. The upper bound is never below the lower one: if rounding ever
    /// made it so, the call is refused rather than print a false bound.
    ///
    /// # Errors
    /// As [`PldAccountant::epsilon_bounds`]; no grid up to Δ = 1 fits.
    pub fn epsilon_bounds_adaptive(&self, delta: f64) -> Result<(f64, f64, f64)> {
        check_delta(delta)?;
        let mut acct = self.clone();
        loop {
            let (upper, lower) = std::thread::scope(|s| {
                let lower = s.spawn(|| acct.pld_at(Estimate::Optimistic, delta));
                let upper = acct.pld_at(Estimate::Pessimistic, delta);
                (upper, lower.join())
            });
            let lower = lower.map_err(|_| {
                invalid("the thread computing the optimistic PLD panicked".to_string())
            })?;
            match (upper, lower) {
                (Ok(u), Ok(l)) => {
                    let (mut eu, mut el) = (u.epsilon(delta)?, l.epsilon(delta)?);
                    if acct.is_one_event() && eu.is_finite() && eu - el > 1e-3 * eu {
                        // The Chernoff estimate of ε the tilt was chosen for can be far from
                        // the answer (e.g. 10⁸ steps: the error bound then swamps δ at the
                        // optimistic ε): once more, centred on the pessimistic ε found. Both
                        // pairs of bounds are valid; the tighter of each is kept.
                        let target = Some(TiltTarget::Epsilon(eu));
                        let (u2, l2) = std::thread::scope(|s| {
                            let lower = s.spawn(|| acct.pld_tilted(Estimate::Optimistic, target));
                            let upper = acct.pld_tilted(Estimate::Pessimistic, target);
                            (upper, lower.join())
                        });
                        if let Ok(Ok(e)) = u2.map(|p| p.epsilon(delta)) {
                            eu = eu.min(e);
                        }
                        if let Ok(Ok(Ok(e))) = l2.map(|r| r.map(|p| p.epsilon(delta))) {
                            el = el.max(e);
                        }
                    }
                    if eu.is_nan() || el.is_nan() || eu < el {
                        // Seen at very small δ (1e-10, replace-one, z = 0.3): the FFT's
                        // round-off in the composed probabilities is then comparable to δ, so
                        // the two bounds cross and neither is trusted.
                        return Err(invalid(format!(
                            "at δ = {delta} the composition's floating-point round-off is comparable to δ: the pessimistic ε {eu} came out below the optimistic {el} (grid step {}), so neither is trusted and no bound is printed; allowed: a larger δ (e.g. 1e-8), or the RDP bound",
                            acct.discretization
                        )));
                    }
                    return Ok((eu, el, acct.discretization));
                }
                (Err(e), _) | (_, Err(e))
                    if e.to_string().contains(WINDOW_TOO_LARGE) && acct.discretization < 1.0 =>
                {
                    acct.discretization = (acct.discretization * 2.0).min(1.0);
                }
                (Err(e), _) | (_, Err(e)) => return Err(e),
            }
        }
    }

    /// (pessimistic δ, optimistic δ) at `epsilon`: an upper and a lower bound on δ(ε).
    ///
    /// # Errors
    /// ε NaN; see [`PldAccountant::pld`].
    pub fn delta_bounds(&self, epsilon: f64) -> Result<(f64, f64)> {
        if epsilon.is_nan() {
            return Err(invalid("epsilon = NaN; allowed: a number".to_string()));
        }
        let upper = self.pld(Estimate::Pessimistic)?;
        let lower = self.pld(Estimate::Optimistic)?;
        Ok((upper.delta(epsilon), lower.delta(epsilon)))
    }
}

/// One sampling block of a ledger as composed: (q, repetitions, Σ z⁻² of its Gaussian sums,
/// policy, its other queries with their event numbers).
type LedgerBlock = (f64, u64, f64, SamplingPolicy, Vec<(usize, LedgerEvent)>);

/// The error text without the `pld-accountant: invalid parameter: ` prefix (re-wrapped).
fn strip_pld(message: &str) -> String {
    message
        .strip_prefix("pld-accountant: invalid parameter: ")
        .unwrap_or(message)
        .to_string()
}

/// The noise events with equal query and rate merged (their steps added, checked).
fn merge_noise_events(events: &[NoiseEvent]) -> Result<Vec<NoiseEvent>> {
    let mut merged: Vec<NoiseEvent> = Vec::new();
    for e in events {
        match merged
            .iter_mut()
            .find(|m| m.query == e.query && m.q == e.q)
        {
            Some(m) => {
                m.steps = m
                    .steps
                    .checked_add(e.steps)
                    .filter(|&t| t <= MAX_STEPS)
                    .ok_or_else(|| {
                        invalid(format!(
                            "the ledger repeats {} {} + {} times; allowed: at most {MAX_STEPS} (2^53) steps in all",
                            e.describe(),
                            m.steps,
                            e.steps
                        ))
                    })?
            }
            None => merged.push(*e),
        }
    }
    Ok(merged)
}

impl PldAccountant {
    /// Composes the events of [`PldAccountant::open`] (whole blocks by now).
    fn settle(&mut self) -> Result<()> {
        if self.open.is_empty() {
            return Ok(());
        }
        let open = std::mem::take(&mut self.open);
        self.compose_ledger_with_policies(&open)
    }

    /// A copy with the open events composed.
    fn settled(&self) -> Result<Self> {
        let mut a = self.clone();
        a.settle()?;
        Ok(a)
    }
}

/// The PLD accountant behind the one interface: any relation (fixed-size batches under
/// replace-one only, shuffled ones refused); its ε is the pessimistic PLD's (an upper bound)
/// with the optimistic one's as the lower bound, its parameter the `discretization` used
/// ([`PldAccountant::epsilon_bounds_adaptive`]).
impl PrivacyAccountant for PldAccountant {
    fn name(&self) -> &'static str {
        "pld"
    }

    fn scope(&self) -> Scope {
        Scope {
            relations: ALL_RELATIONS,
            full_batch_only: false,
        }
    }

    fn compose(&mut self, event: &LedgerEvent, policy: SamplingPolicy) -> Result<()> {
        if matches!(event, LedgerEvent::Sampling { .. }) {
            self.settle()?;
        }
        self.open.push((*event, policy));
        Ok(())
    }

    /// The whole ledger at once ([`PldAccountant::compose_ledger_with_policies`]): a ledger cut
    /// after a sampling event is refused here.
    fn compose_ledger(&mut self, ledger: &[(LedgerEvent, SamplingPolicy)]) -> Result<()> {
        self.settle()?;
        self.compose_ledger_with_policies(ledger)
    }

    fn epsilon(&self, delta: f64) -> Result<EpsilonRange> {
        let (upper, lower, grid) = self.settled()?.epsilon_bounds_adaptive(delta)?;
        Ok(EpsilonRange {
            lower: Some(lower),
            upper,
            parameter: Some(("discretization", grid)),
        })
    }

    fn delta(&self, epsilon: f64) -> Result<DeltaRange> {
        let (upper, lower) = self.settled()?.delta_bounds(epsilon)?;
        Ok(DeltaRange {
            lower: Some(lower),
            upper,
        })
    }
}
