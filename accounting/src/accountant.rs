//! The one interface of the (ε, δ) accountants: compose ledger events, then ask for ε at a δ
//! (or δ at an ε). As `dp_accounting`'s `PrivacyAccountant` (`privacy_accountant.py`:
//! `supports`, `compose(event, count)`, `get_epsilon(δ)`, `get_delta(ε)`), with a ledger event's
//! own `repetitions` as the count.

use crate::error::Result;
use crate::ledger::{LedgerEvent, SamplingPolicy};
use crate::neighboring::Neighboring;

/// What an accountant answers for ε at a δ: an upper bound (what it guarantees), a lower bound
/// on the mechanism's own ε when it has one, and the parameter its answer was taken at.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpsilonRange {
    /// A lower bound on the ε of the mechanism itself (the PLD's optimistic estimate); `None`
    /// when the accountant bounds ε from above only.
    pub lower: Option<f64>,
    /// An upper bound on ε at the δ asked for (rounded up where the accountant can choose).
    pub upper: f64,
    /// The parameter of the answer, named as records name it: the RDP's optimal `order`, zCDP's
    /// `rho`, the PLD's grid step `discretization`; `None` when there is none.
    pub parameter: Option<(&'static str, f64)>,
}

/// What an accountant answers for δ at an ε: the same shape as [`EpsilonRange`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DeltaRange {
    /// A lower bound on the mechanism's δ(ε), when the accountant has one.
    pub lower: Option<f64>,
    /// An upper bound on δ(ε).
    pub upper: f64,
}

/// Where an accountant applies: the neighboring relations it accounts under, and whether it
/// accounts full batches only (no amplification by sampling).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scope {
    /// The relations it accounts under.
    pub relations: &'static [Neighboring],
    /// True when it accounts sampling probability 1 only.
    pub full_batch_only: bool,
}

/// Every relation: an accountant of [`Scope`] with these accounts under any of them.
pub const ALL_RELATIONS: &[Neighboring] = &[
    Neighboring::AddRemove,
    Neighboring::ReplaceOne,
    Neighboring::ZeroOut,
];

/// Add/remove and zero-out (which is accounted as add/remove: the same pairs).
pub const ADD_REMOVE: &[Neighboring] = &[Neighboring::AddRemove, Neighboring::ZeroOut];

/// An (ε, δ) accountant: a ledger of [`LedgerEvent`]s composed as they come, queried for ε at
/// a δ or δ at an ε.
///
/// # Examples
/// ```
/// use dp_audit_accounting::{LedgerEvent, Neighboring, PrivacyAccountant, SamplingPolicy};
/// use dp_audit_accounting::pld::PldAccountant;
/// use dp_audit_accounting::rdp::RdpAccountant;
/// let ledger = [
///     (LedgerEvent::Sampling { probability: 0.01, repetitions: 1000 }, SamplingPolicy::Poisson),
///     (LedgerEvent::GaussianSum { noise_multiplier: 4.0 }, SamplingPolicy::Poisson),
/// ];
/// let mut accountants: Vec<Box<dyn PrivacyAccountant>> = vec![
///     Box::new(PldAccountant::new(Neighboring::AddRemove)),
///     Box::new(RdpAccountant::new()),
/// ];
/// for a in &mut accountants {
///     a.compose_ledger(&ledger)?;
///     let e = a.epsilon(1e-5)?;
///     assert!(e.upper < 0.5 && e.lower.unwrap_or(0.0) <= e.upper, "{}", a.name());
/// }
/// # Ok::<(), dp_audit_accounting::AccountingError>(())
/// ```
pub trait PrivacyAccountant: Send {
    /// Stable kebab-case id, the key of its answer in records: `pld`, `rdp`,
    /// `exact-gaussian`, `zcdp`.
    fn name(&self) -> &'static str;

    /// Where it applies; a caller skips it (saying why) where it does not.
    fn scope(&self) -> Scope;

    /// Composes one event, its sample drawn as `policy` says. A sampling event opens a sample
    /// that the Gaussian sums after it are answered on; its `repetitions` repeat the block.
    ///
    /// # Errors
    /// A value out of range, an event out of order, a policy it does not account, each named.
    fn compose(&mut self, event: &LedgerEvent, policy: SamplingPolicy) -> Result<()>;

    /// Composes a whole ledger, in order. An accountant that checks a ledger as a whole (a
    /// ledger cut after a sampling event) does so here.
    ///
    /// # Errors
    /// As [`PrivacyAccountant::compose`], naming the event.
    fn compose_ledger(&mut self, ledger: &[(LedgerEvent, SamplingPolicy)]) -> Result<()> {
        ledger
            .iter()
            .try_for_each(|(event, policy)| self.compose(event, *policy))
    }

    /// ε at `delta` of everything composed so far.
    ///
    /// # Errors
    /// δ outside (0, 1); a composition the accountant cannot evaluate, named.
    fn epsilon(&self, delta: f64) -> Result<EpsilonRange>;

    /// δ at `epsilon` of everything composed so far.
    ///
    /// # Errors
    /// ε NaN; a composition the accountant cannot evaluate, named.
    fn delta(&self, epsilon: f64) -> Result<DeltaRange>;
}
