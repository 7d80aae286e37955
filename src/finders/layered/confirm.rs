//! The confirmations of a layered run: fresh releases from the confirm streams, drawn once per
//! distinct pair, each layer audited through its own view at its own share of β.

use std::time::Instant;

use super::{MIN_SLOW_CONFIRM_SAMPLES, State, name_events, view};
use crate::audit::{AuditConfig, Phase, Verdict, audit_drawn};
use crate::error::{Error, Result};
use crate::finders::cost::{CallLog, CostModel};
use crate::mechanisms::{DatasetPair, Mechanism, PrivacyClaim, Samples};
use crate::record::effort::ConfirmEffort;
use crate::rng::{Seed, chunk_len, sample_pair_parallel};
use crate::testers::PropertyTester;

/// What the confirmations of a layered run share: the target, the distinct pairs confirmed so
/// far (pair k draws from the confirm streams of k), the last pair's releases, and the counts.
pub(super) struct Confirmer<'a> {
    pub(super) mechanism: &'a dyn Mechanism,
    pub(super) claim: &'a PrivacyClaim,
    pub(super) testers: &'a [Box<dyn PropertyTester>],
    pub(super) audit: &'a AuditConfig,
    pub(super) slots: usize,
    pub(super) pairs: Vec<DatasetPair>,
    pub(super) cache: Option<(usize, Samples, Samples)>,
    pub(super) calls: u64,
    pub(super) drawn: u64,
    /// Per-call times, for the cost model.
    pub(super) log: &'a CallLog,
    /// Every confirmation's layer and size, in the order run.
    pub(super) effort: Vec<ConfirmEffort>,
    /// Pairs the program was slow on in the search, with its seconds per release there.
    pub(super) slow_pairs: Vec<(DatasetPair, f64)>,
    /// Seconds a confirmation is priced at (a slow pair is confirmed on what fits them).
    pub(super) allowance: f64,
    /// Seconds per program start.
    pub(super) startup: f64,
    /// The cost model's current prices (refreshed by the search before each confirmation).
    pub(super) cost: CostModel,
    /// When the budget ends (soft: confirmations are sized to end by then when they can) and
    /// the deadline no call runs past.
    pub(super) ends: Option<(Instant, Instant)>,
    /// Confirmations not run, or stopped, because the time budget was spent.
    pub(super) out_of_time: usize,
}

/// Fewest releases per side a confirmation shrunk to fit the time left draws; below it the
/// confirmation is not run (it could show only a violation of a claim already far exceeded).
pub const MIN_TIMED_CONFIRM_SAMPLES: usize = 200;

/// Whether an error is a call stopped at (or not started after) the run's deadline.
fn out_of_time(e: &Error) -> bool {
    matches!(
        e,
        Error::Mechanism(crate::mechanisms::MechanismError::OutOfTime { .. })
    )
}

impl Confirmer<'_> {
    /// Confirms `pair` for layer `li` on fresh releases from the confirm streams of the pair
    /// (drawn once per distinct pair; a pair confirmed by both layers reuses them).
    /// Returns false, recording nothing, when the time budget left no room for it (too little
    /// time left, or its draw was stopped at the deadline).
    pub(super) fn confirm(
        &mut self,
        states: &mut [State],
        li: usize,
        pair: &DatasetPair,
        coords: Option<&[usize]>,
        owed: usize,
    ) -> Result<bool> {
        let t0 = Instant::now();
        let k = self.pair_index(pair);
        let Some(n) = self.confirm_size(pair, k, owed) else {
            self.out_of_time += 1;
            return Ok(false);
        };
        if !self.draw(pair, k, n)? {
            self.out_of_time += 1;
            return Ok(false);
        }
        let m = self.mechanism;
        let Some((_, p, q)) = self.cache.as_ref() else {
            return Err(Error::InvalidConfig("internal: no confirm releases".into()));
        };
        let st = &mut states[li];
        let (vp, names, t) = view(st.kind, p, coords)?;
        let (vq, _, _) = view(st.kind, q, coords)?;
        let config = AuditConfig {
            failure_probability: st.beta / self.slots as f64,
            samples_per_side: n,
            ..self.audit.clone()
        };
        let mut r = audit_drawn(
            m,
            self.claim,
            pair,
            (&vp, &vq),
            self.testers,
            &config,
            Phase::Confirm(k as u64).tester_base() + (st.kind.index() << 19),
        )?;
        name_events(&mut r, &names);
        r.output_transform = Some(t);
        r.release_dim = Some(p.dim());
        r.mechanism_calls = 2 * n.div_ceil(chunk_len(m)) as u64;
        r.wall_time_seconds = Some(t0.elapsed().as_secs_f64());
        self.effort.push(ConfirmEffort {
            layer: st.kind,
            releases_per_side: n,
        });
        st.found |= r.verdict == Verdict::Violation;
        st.confirmations.push(r);
        st.confirmed.push(pair.clone());
        Ok(true)
    }

    /// The index of `pair` among the distinct pairs confirmed (a new pair is appended): pair k
    /// draws from the confirm streams of k.
    fn pair_index(&mut self, pair: &DatasetPair) -> usize {
        match self.pairs.iter().position(|p| p == pair) {
            Some(k) => k,
            None => {
                self.pairs.push(pair.clone());
                self.pairs.len() - 1
            }
        }
    }

    /// Releases per side of the confirmation of `pair` (distinct pair `k`, with `owed`
    /// confirmations still owed): those already drawn for it, else the full size (what fits a
    /// confirmation's price on a pair the program was slow on), shrunk with a deadline to what
    /// fits the time left; None when not even the smallest fits.
    fn confirm_size(&self, pair: &DatasetPair, k: usize, owed: usize) -> Option<usize> {
        // A pair the program was slow on gets the releases that fit a confirmation's price.
        let mut n = match self.slow_pairs.iter().find(|(p, _)| p == pair) {
            Some((_, rate)) => {
                let fits = ((self.allowance - self.startup).max(0.0) / rate).floor() as usize;
                fits.clamp(MIN_SLOW_CONFIRM_SAMPLES, self.audit.samples_per_side.max(1))
            }
            None => self.audit.samples_per_side,
        };
        let drawn_before = self.cache.as_ref().is_some_and(|c| c.0 == k);
        // With a deadline, a confirmation gets what fits the time left: shared with the
        // confirmations still owed until the budget's end, else (when even the smallest does
        // not fit) what fits before the deadline. Chosen from prices and the clock, never from
        // releases, so the size is independent of the confirmation's data.
        if let Some((soft, hard)) = self.ends
            && !drawn_before
        {
            let now = Instant::now();
            let left = |end: Instant| end.saturating_duration_since(now).as_secs_f64();
            let share = left(soft) / owed.max(1) as f64;
            let mut fit = self.cost.confirm_fitting(share, n);
            if fit < MIN_TIMED_CONFIRM_SAMPLES.min(n) {
                fit = self.cost.confirm_fitting(0.8 * left(hard), n);
            }
            if fit < MIN_TIMED_CONFIRM_SAMPLES.min(n) {
                return None;
            }
            n = fit;
        }
        if let Some(c) = &self.cache
            && c.0 == k
        {
            n = c.1.n();
        }
        Some(n)
    }

    /// Draws `n` releases per side of `pair` (distinct pair `k`) from its confirm streams into
    /// the cache, unless they are there already; false when the deadline stopped the draw.
    fn draw(&mut self, pair: &DatasetPair, k: usize, n: usize) -> Result<bool> {
        if self.cache.as_ref().is_some_and(|c| c.0 == k) {
            return Ok(true);
        }
        let m = self.mechanism;
        let stream = |side| Phase::Confirm(k as u64).stream_of(side);
        // A pair the program is slow on is not priced with the rest.
        let log = (n == self.audit.samples_per_side).then_some(self.log);
        let seed = Seed(self.audit.seed);
        let (p, q) = match sample_pair_parallel(m, pair, n, seed, stream, log) {
            Ok(d) => d,
            Err(e) if out_of_time(&e) => return Ok(false),
            Err(e) => return Err(e),
        };
        self.calls += 2 * n.div_ceil(chunk_len(m)) as u64;
        self.drawn += 2 * n as u64;
        self.cache = Some((k, p, q));
        Ok(true)
    }
}
