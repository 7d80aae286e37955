//! The one cost model of a program audit: what a draw of releases costs, used by the plan and by
//! every decision the run makes against its time budget.
//!
//! A program is run once per call (a request of at most `batch` releases); a call of `m`
//! releases takes `startup + m · per_release` seconds, and up to `jobs` calls run at once. A
//! set of calls started together (the two sides of a trial, the trials of a wave, the calls of a
//! confirmation) takes the time of a greedy schedule of those calls on `jobs` slots, in order:
//! each call goes to the slot that frees first, which is how rayon's pool takes them.
//!
//! The two constants are first measured by [`CostModel::probe`] on calls of growing size (so
//! that the start-up's jitter does not swamp the per-release time), then refitted from every
//! call the run makes, search and confirmation alike ([`CostModel::observe`]), by medians of
//! small and large calls (robust to a call slowed by something else on the machine; a least
//! squares fit let two noisy short calls set the per-release price). The most recent calls
//! count (the probe's large call is always kept), so calls run concurrently are priced with the
//! contention the rest of the run will have.
//!
//! Hand-written: a median-based two-point fit is a dozen lines; linfa's regressions are least
//! squares, which one slow call can move arbitrarily.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::mechanisms::{Dataset, Mechanism};
pub use crate::rng::{CallLog, CallTime};
use crate::rng::{Seed, Stream};

/// The smallest per-release cost the model assumes (seconds): dp-audit's own parsing and
/// bookkeeping of a release costs about this, so a program cannot be cheaper per release.
pub const MIN_SECONDS_PER_RELEASE: f64 = 5e-8;

/// Largest number of calls kept (the most recent ones).
const MAX_OBSERVED: usize = 4_096;
/// Calls the refit reads: the most recent ones.
const RECENT: usize = 64;

/// The cost of drawing releases from a program (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Seconds per program call beyond its releases (start-up, reading the request).
    pub seconds_per_call: f64,
    /// Seconds per release.
    pub seconds_per_release: f64,
    /// Programs run at once.
    pub jobs: usize,
    /// Most releases per call.
    pub batch: usize,
    /// Calls the constants were fitted on (the probe's and the run's).
    pub calls_observed: usize,
    /// Median seconds of a one-release call while `jobs` calls ran at once (the probe's
    /// contention wave); `None` with one job or without a probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contended_call: Option<f64>,
    #[serde(skip)]
    observed: Vec<CallTime>,
}

impl CostModel {
    /// A model with the given constants (e.g. from an earlier run), `jobs` calls at once and at
    /// most `batch` releases per call.
    pub fn new(seconds_per_call: f64, seconds_per_release: f64, jobs: usize, batch: usize) -> Self {
        Self {
            seconds_per_call: seconds_per_call.max(0.0),
            seconds_per_release: seconds_per_release.max(MIN_SECONDS_PER_RELEASE),
            jobs: jobs.max(1),
            batch: batch.max(1),
            calls_observed: 0,
            contended_call: None,
            observed: Vec::new(),
        }
    }

    /// Measures the program's cost on `dataset` from streams no audit reads: two calls of 1
    /// release (the start-up, and its jitter), one wave of `jobs` calls of 1 release started
    /// together (the start-up as the run will pay it, see below), then calls of 200, 2 000, 20 000 and 200 000
    /// releases (at most `batch`) until one takes 0.25 s more than the start-up, or the probe
    /// has spent `max_seconds`. The constants are the fit of [`CostModel::observe`] on those
    /// calls, so the per-release cost rests on the longest call, never on a difference lost in
    /// the start-up's noise.
    pub fn probe(
        mechanism: &dyn Mechanism,
        dataset: &Dataset,
        seed: u64,
        jobs: usize,
        batch: usize,
        max_seconds: f64,
    ) -> Result<Self> {
        let seed = Seed(seed);
        let started = Instant::now();
        let mut calls = Vec::new();
        // Tag 0x5EED: the speed probe's streams (no audit reads them).
        // A call stopped by the caller's limit (the mechanism is slow on this dataset) counts
        // as taking the limit, a lower bound on its time, and ends the probe.
        let slow = std::cell::Cell::new(false);
        let mut timed = |index: u64, m: usize| -> Result<f64> {
            let mut rng = seed.rng(Stream::Other { tag: 0x5EED, index });
            let t = Instant::now();
            let s = match mechanism.sample(dataset, m, &mut rng) {
                Ok(_) => t.elapsed().as_secs_f64(),
                Err(crate::mechanisms::MechanismError::Slow { seconds, .. }) => {
                    slow.set(true);
                    seconds
                }
                Err(e) => return Err(e.into()),
            };
            calls.push(CallTime {
                releases: m,
                seconds: s,
            });
            Ok(s)
        };
        let first = timed(0, 1)?;
        let one = if slow.get() {
            first
        } else {
            first.min(timed(1, 1)?)
        };
        // Contention: the search runs `jobs` programs at once, and a start-up measured alone
        // is not what it costs then (CPU turbo, memory, a sandbox that serializes process
        // starts: on a 16-core machine a 0.4 s start-up planned at its solo price ran 145 of
        // 388 planned trials). One wave of `jobs` one-release calls started together prices a
        // call as the run will see it; the plan uses the median of that wave when it is
        // slower than the solo calls.
        let mut contended: Vec<CallTime> = Vec::new();
        if jobs > 1 && !slow.get() {
            use rayon::prelude::*;
            let wave: Vec<Result<CallTime>> = (0..jobs as u64)
                .into_par_iter()
                .map(|k| {
                    let mut rng = seed.rng(Stream::Other {
                        tag: 0x5EED,
                        index: 1_000 + k,
                    });
                    let t = Instant::now();
                    let seconds = match mechanism.sample(dataset, 1, &mut rng) {
                        Ok(_) => t.elapsed().as_secs_f64(),
                        Err(crate::mechanisms::MechanismError::Slow { seconds, .. }) => seconds,
                        Err(e) => return Err(e.into()),
                    };
                    Ok(CallTime {
                        releases: 1,
                        seconds,
                    })
                })
                .collect();
            for c in wave {
                contended.push(c?);
            }
        }
        for (index, m) in [(2u64, 200usize), (3, 2_000), (4, 20_000), (5, 200_000)] {
            if slow.get() {
                break;
            }
            let m = m.min(batch.max(1));
            let s = timed(index, m)?;
            let spent = started.elapsed().as_secs_f64();
            // The next call is about 10× this one's releases.
            let next = one + 10.0 * (s - one).max(0.0);
            if s - one >= 0.25 || m >= batch || spent + next > max_seconds {
                break;
            }
        }
        let mut model = Self::new(one, 0.0, jobs, batch);
        model.fit_calls(&calls);
        if !contended.is_empty() {
            let mut t: Vec<f64> = contended.iter().map(|c| c.seconds).collect();
            t.sort_by(f64::total_cmp);
            let median = t[t.len() / 2];
            let start = median - model.seconds_per_release;
            if start > model.seconds_per_call {
                model.seconds_per_call = start;
            }
            model.contended_call = Some(median);
        }
        calls.extend(contended);
        model.observed = calls;
        Ok(model)
    }

    /// How many times slower the calls of `self`'s probe were than those of `other`'s, on the
    /// largest call size both made (a call stopped by its limit counts its limit): the
    /// comparison rests on measured calls, not on two fits of a few noisy short calls.
    pub fn slower_than(&self, other: &CostModel) -> f64 {
        let largest = |calls: &[CallTime], m: usize| {
            calls
                .iter()
                .filter(|c| c.releases == m)
                .map(|c| c.seconds)
                .fold(f64::NAN, f64::min)
        };
        let common = self
            .observed
            .iter()
            .map(|c| c.releases)
            .filter(|m| other.observed.iter().any(|c| c.releases == *m))
            .max();
        match common {
            Some(m) => {
                let (a, b) = (largest(&self.observed, m), largest(&other.observed, m));
                if a.is_finite() && b.is_finite() && b > 0.0 {
                    a / b
                } else {
                    1.0
                }
            }
            None => 1.0,
        }
    }

    /// Seconds of one call of `m` releases.
    pub fn call_seconds(&self, m: usize) -> f64 {
        self.seconds_per_call + m as f64 * self.seconds_per_release
    }

    /// The calls of a draw of `n` releases: ⌈n / batch⌉ calls of at most `batch` releases.
    pub fn calls_of(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        let b = self.batch;
        (0..n.div_ceil(b)).map(move |c| (n - c * b).min(b))
    }

    /// Seconds to make the draws `draws` (releases each) together: their calls, in order, on
    /// `jobs` slots, each to the slot that frees first.
    pub fn seconds(&self, draws: &[usize]) -> f64 {
        let mut slots = vec![0.0_f64; self.jobs.max(1)];
        for &n in draws {
            for m in self.calls_of(n) {
                // The slot that frees first (few slots: a linear scan is enough).
                let (k, _) = slots
                    .iter()
                    .enumerate()
                    .min_by(|a, b| a.1.total_cmp(b.1))
                    .unwrap_or((0, &0.0));
                slots[k] += self.call_seconds(m);
            }
        }
        slots.into_iter().fold(0.0, f64::max)
    }

    /// Seconds of `w` exploratory trials of `s` releases per side, scored together.
    pub fn wave_seconds(&self, s: usize, w: usize) -> f64 {
        self.seconds(&vec![s; 2 * w.max(1)])
    }

    /// Seconds of one confirmation of `n` releases per side (both sides drawn together).
    pub fn confirm_seconds(&self, n: usize) -> f64 {
        self.seconds(&[n, n])
    }

    /// Trials scored together at most: enough to keep every slot busy with the two sides of
    /// each (at least 1).
    pub fn wave_width(&self, s: usize) -> usize {
        let calls_per_trial = 2 * s.div_ceil(self.batch).max(1);
        self.jobs.div_ceil(calls_per_trial).max(1)
    }

    /// Refits the constants with the calls in `log` (see the module docs).
    pub fn observe(&mut self, log: &CallLog) {
        let new = log.take();
        if new.is_empty() {
            return;
        }
        self.observed.extend(new);
        if self.observed.len() > MAX_OBSERVED {
            let cut = self.observed.len() - MAX_OBSERVED;
            self.observed.drain(..cut);
        }
        // The recent calls, and the largest call ever made (often the probe's), so that the
        // per-release price always rests on a long call.
        let start = self.observed.len().saturating_sub(RECENT);
        let mut calls: Vec<CallTime> = self.observed[start..].to_vec();
        if let Some(big) = self.observed.iter().max_by_key(|c| c.releases)
            && calls.iter().all(|c| c.releases < big.releases)
        {
            calls.push(*big);
        }
        self.fit_calls(&calls);
    }

    /// A robust fit of seconds on releases (see the module docs): the per-release cost from the
    /// difference between the median time of the large calls (at least half the largest size)
    /// and that of the small ones (at most a quarter of it), the start-up from the small calls;
    /// medians, because a call slowed by something else on the machine must not move the
    /// prices. When every call has about one size, the start-up cannot be told from the
    /// releases: the current split is kept and scaled to the calls' median time.
    fn fit_calls(&mut self, calls: &[CallTime]) {
        let pts: Vec<(usize, f64)> = calls
            .iter()
            .filter(|c| c.seconds.is_finite() && c.seconds >= 0.0)
            .map(|c| (c.releases, c.seconds))
            .collect();
        if pts.is_empty() {
            return;
        }
        let median = |mut v: Vec<f64>| -> f64 {
            v.sort_by(f64::total_cmp);
            let k = v.len();
            if k % 2 == 1 {
                v[k / 2]
            } else {
                0.5 * (v[k / 2 - 1] + v[k / 2])
            }
        };
        let largest = pts.iter().map(|p| p.0).max().unwrap_or(1).max(1);
        let large: Vec<&(usize, f64)> = pts.iter().filter(|p| 2 * p.0 >= largest).collect();
        let small: Vec<&(usize, f64)> = pts.iter().filter(|p| 4 * p.0 <= largest).collect();
        let (a, b) = if !small.is_empty() && !large.is_empty() {
            let ml = median(large.iter().map(|p| p.0 as f64).collect());
            let tl = median(large.iter().map(|p| p.1).collect());
            let ms = median(small.iter().map(|p| p.0 as f64).collect());
            let ts = median(small.iter().map(|p| p.1).collect());
            let b = ((tl - ts) / (ml - ms)).max(MIN_SECONDS_PER_RELEASE);
            let a = median(small.iter().map(|p| p.1 - b * p.0 as f64).collect()).max(0.0);
            (a, b)
        } else {
            let m = median(pts.iter().map(|p| p.0 as f64).collect());
            let t = median(pts.iter().map(|p| p.1).collect());
            let pred = self.call_seconds(m.round() as usize);
            let k = if pred > 0.0 { t / pred } else { 1.0 };
            (self.seconds_per_call * k, self.seconds_per_release * k)
        };
        self.seconds_per_call = a.max(0.0);
        self.seconds_per_release = b.max(MIN_SECONDS_PER_RELEASE);
        self.calls_observed = pts.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_start_up_and_per_release_costs() {
        let mut m = CostModel::new(0.1, 1e-6, 2, 50_000);
        let log = CallLog::default();
        for n in [1usize, 200, 2_000, 20_000, 5_000, 5_000, 50_000] {
            log.push(n, 0.4 + n as f64 * 2e-6);
        }
        m.observe(&log);
        assert!((m.seconds_per_call - 0.4).abs() < 1e-6, "{m:?}");
        assert!((m.seconds_per_release - 2e-6).abs() < 1e-10, "{m:?}");
        assert_eq!(m.calls_observed, 7);
    }

    #[test]
    fn calls_of_one_size_rescale_the_split() {
        let mut m = CostModel::new(0.2, 1e-5, 2, 50_000);
        let log = CallLog::default();
        for _ in 0..4 {
            log.push(5_000, 0.5);
        }
        m.observe(&log);
        assert!((m.call_seconds(5_000) - 0.5).abs() < 1e-9, "{m:?}");
    }

    /// A program whose start-ups cannot overlap (a sandbox that serializes process starts):
    /// each call holds one lock for 20 ms.
    #[derive(Debug, Default)]
    struct Serialized(std::sync::Mutex<()>);

    impl Mechanism for Serialized {
        fn id(&self) -> &str {
            "serialized"
        }
        fn claim(&self) -> crate::mechanisms::PrivacyClaim {
            crate::mechanisms::PrivacyClaim::Pure { epsilon: 1.0 }
        }
        fn neighboring(&self) -> crate::mechanisms::Neighboring {
            crate::mechanisms::Neighboring::AddRemove
        }
        fn domain(&self) -> crate::mechanisms::RecordDomain {
            crate::mechanisms::RecordDomain::real(0.0, 1.0, 1)
        }
        fn output_dim(&self) -> usize {
            1
        }
        fn sample(
            &self,
            _data: &Dataset,
            n: usize,
            _rng: &mut dyn rand::Rng,
        ) -> crate::mechanisms::Result<crate::mechanisms::Samples> {
            let _held = self.0.lock().unwrap_or_else(|e| e.into_inner());
            std::thread::sleep(std::time::Duration::from_millis(20));
            Ok(crate::mechanisms::Samples::from_column(vec![0.0; n]))
        }
    }

    #[test]
    fn the_probe_prices_start_ups_as_they_run_together() {
        let data = Dataset::scalars(vec![0.5; 3]).unwrap();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let m = Serialized::default();
        let alone = CostModel::probe(&m, &data, 0, 1, 50_000, 1.0).unwrap();
        let four = pool.install(|| CostModel::probe(&m, &data, 0, 4, 50_000, 1.0).unwrap());
        // Alone a call costs its 20 ms; four started together end at 20, 40, 60 and 80 ms, and
        // the median of the wave (60 ms) is the price the plan must use.
        assert!(alone.contended_call.is_none());
        assert!(alone.seconds_per_call < 0.04, "{alone:?}");
        assert!(four.seconds_per_call >= 0.055, "{four:?}");
        assert!(four.contended_call.is_some_and(|c| c >= 0.055), "{four:?}");
    }

    #[test]
    fn schedules_fill_the_slots() {
        let m = CostModel::new(0.4, 1e-6, 2, 50_000);
        // Two calls on two slots: one call's time.
        assert!((m.wave_seconds(5_000, 1) - m.call_seconds(5_000)).abs() < 1e-12);
        // Four calls on two slots: two calls' time.
        assert!((m.wave_seconds(5_000, 2) - 2.0 * m.call_seconds(5_000)).abs() < 1e-12);
        // 200 000 per side in batches of 50 000: 8 calls, 4 per slot.
        assert!((m.confirm_seconds(200_000) - 4.0 * m.call_seconds(50_000)).abs() < 1e-9);
        assert_eq!(m.wave_width(5_000), 1);
        assert_eq!(CostModel::new(0.4, 1e-6, 16, 50_000).wave_width(5_000), 8);
        // Never below the floor per release.
        assert!(CostModel::new(0.1, 0.0, 1, 10).seconds_per_release >= MIN_SECONDS_PER_RELEASE);
    }
}
