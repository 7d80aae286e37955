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
    /// The factor (at least 1) the plan multiplies the central price by: an upper quantile of
    /// the recent calls' times over their central price, so that a busy machine or a jittery
    /// program is planned at the price its slow calls cost, not at its median.
    #[serde(default = "one")]
    pub price_factor: f64,
    /// Seconds the testers take to score one release per side of a trial (all layers),
    /// measured on the run's own scoring; part of a trial's price.
    #[serde(default)]
    pub score_seconds_per_release: f64,
    /// Trials whose scoring set the price.
    #[serde(skip)]
    scorings_seen: usize,
    /// Most datasets one call takes when the program reads many per request
    /// (`--exec-datasets`): a trial of `s` releases per side is then one call of `2s`
    /// datasets when `2s` fits, one start-up instead of two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datasets_per_call: Option<usize>,
    /// The machine's load average (1 minute) when the prices were measured, and its cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<(f64, usize)>,
    #[serde(skip)]
    observed: Vec<CallTime>,
    /// The probe's calls were stopped at their limit and no call with releases has completed
    /// since: the price is only a lower bound, and a call's limit derived from it is widened
    /// (to a quarter of the budget, see the paced search).
    #[serde(skip)]
    pub censored: bool,
}

fn one() -> f64 {
    1.0
}

/// The largest price factor the model uses: beyond it the calls are not slow, the model is
/// wrong, and the refit of the constants answers it.
const MAX_PRICE_FACTOR: f64 = 4.0;
/// Calls whose ratio to the central price sets the price factor (the most recent ones).
const FACTOR_CALLS: usize = 16;

/// The machine's one-minute load average and its cores (Linux `/proc/loadavg`; `None`
/// elsewhere). Read for the plan's words: a price measured under load says so.
pub fn machine_load() -> Option<(f64, usize)> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let one: f64 = text.split_whitespace().next()?.parse().ok()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Some((one, cores))
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
            price_factor: 1.0,
            score_seconds_per_release: 0.0,
            scorings_seen: 0,
            datasets_per_call: None,
            load: None,
            observed: Vec::new(),
            censored: false,
        }
    }

    /// [`CostModel::probe_with`] without calls measured beforehand.
    pub fn probe(
        mechanism: &dyn Mechanism,
        dataset: &Dataset,
        seed: u64,
        jobs: usize,
        batch: usize,
        max_seconds: f64,
    ) -> Result<Self> {
        Self::probe_with(mechanism, dataset, seed, jobs, batch, max_seconds, &[])
    }

    /// Measures the program's cost on `dataset` from streams no audit reads, in waves of
    /// `max(jobs, 2)` calls started together (so every price is measured at the contention the
    /// run will have, and every size at least twice): one wave of 1-release calls (the
    /// start-up), then waves of 200, 2 000, 20 000 and 200 000 releases (at most `batch`) until
    /// the releases of a call take clearly longer than the start-up's jitter (0.25 s and four
    /// times the spread of the start-ups), or the next wave would pass `max_seconds`. `prior`:
    /// calls measured before (the program's first request), counted as start-ups.
    ///
    /// The price is pessimistic where the measurement is not conclusive: when the releases of
    /// the largest call are lost in the start-up's jitter, the per-release price is the upper
    /// one (the slowest large call minus the fastest start-up), never a difference of two noisy
    /// calls that can come out at ~0; and the price factor is an upper quantile of the calls'
    /// times over the fit. The run refits both from every call it makes.
    pub fn probe_with(
        mechanism: &dyn Mechanism,
        dataset: &Dataset,
        seed: u64,
        jobs: usize,
        batch: usize,
        max_seconds: f64,
        prior: &[CallTime],
    ) -> Result<Self> {
        let seed = Seed(seed);
        let started = Instant::now();
        let load = machine_load();
        // A call stopped by the caller's limit (the mechanism is slow on this dataset) counts
        // as taking the limit, a lower bound on its time, and ends the probe.
        let slow = std::sync::atomic::AtomicBool::new(false);
        let wave = |first_index: u64, m: usize| {
            probe_wave(mechanism, dataset, seed, jobs, first_index, m, &slow)
        };
        let is_slow = || slow.load(std::sync::atomic::Ordering::Relaxed);
        // A start-up of half a second or more measured before is not measured again: the
        // first wave of larger calls prices it under contention (as start-up plus releases,
        // which errs on the safe side), and the search refits it from every call.
        let known_slow_start = !prior.is_empty() && prior.iter().all(|c| c.seconds >= 0.5);
        let mut starts: Vec<CallTime> = if known_slow_start {
            Vec::new()
        } else {
            wave(0, 1)?
        };
        let contended = starts.clone();
        starts.extend(prior.iter().copied());
        let start_times: Vec<f64> = starts.iter().map(|c| c.seconds).collect();
        let (s_min, s_med, s_max) = spread(&start_times);
        let mut jitter = (s_max - s_min).max(0.0);
        let mut calls = starts.clone();
        let mut largest: Vec<CallTime> = Vec::new();
        for (index, m) in [
            (100u64, 200usize),
            (200, 2_000),
            (300, 20_000),
            (400, 200_000),
        ] {
            if is_slow() {
                break;
            }
            let m = m.min(batch.max(1));
            let w = wave(index, m)?;
            calls.extend(w.iter().copied());
            let (w_min, t_med, w_max) = spread(&w.iter().map(|c| c.seconds).collect::<Vec<_>>());
            // Calls of one size started together differ by the start-up's jitter too: with one
            // start-up measured, theirs is the estimate.
            if starts.len() < 2 {
                jitter = jitter.max(w_max - w_min);
            }
            largest = w;
            let spent = started.elapsed().as_secs_f64();
            let release_part = t_med - s_med;
            // The next wave is about 10× this one's releases.
            let next = s_max + 10.0 * release_part.max(0.0);
            // Releases still lost in the jitter: the probe may take twice its share to resolve
            // them (a per-release price it cannot resolve is planned at its upper end).
            let limit = if release_part >= 0.25 {
                max_seconds
            } else {
                2.0 * max_seconds
            };
            if (release_part >= 0.25 && release_part >= 4.0 * jitter)
                || m >= batch
                || spent + next > limit
            {
                break;
            }
        }
        let mut model = Self::new(s_med, 0.0, jobs, batch);
        model.load = load;
        model.fit_calls(&calls);
        model.price_unresolved_releases(&largest, (s_min, s_med), jitter);
        if jobs > 1 {
            model.price_contended_start(&contended);
        }
        model.observed = calls;
        model.censored = is_slow();
        model.update_factor();
        Ok(model)
    }

    /// When the probe's largest calls did not resolve their releases from the start-ups'
    /// `jitter` (start-ups' fastest and median `s_min`, `s_med`), prices a release at the upper
    /// end the calls allow: the slowest large call less the fastest start-up, and at least the
    /// jitter spread over the releases.
    fn price_unresolved_releases(
        &mut self,
        largest: &[CallTime],
        (s_min, s_med): (f64, f64),
        jitter: f64,
    ) {
        if let Some(big) = largest.first().map(|c| c.releases)
            && big > 1
        {
            let t: Vec<f64> = largest.iter().map(|c| c.seconds).collect();
            let (_, t_med, t_max) = spread(&t);
            // Not conclusive: the releases are within the start-ups' jitter (or barely above
            // it). The per-release price is then the upper one the calls allow: the slowest
            // large call less the fastest start-up, and at least the jitter spread over the
            // releases (what the calls cannot tell from the start-up's noise).
            if t_med - s_med < 4.0 * jitter.max(0.01) {
                let upper =
                    ((t_max - s_min).max(jitter) / (big - 1) as f64).max(MIN_SECONDS_PER_RELEASE);
                if upper > self.seconds_per_release {
                    self.seconds_per_release = upper;
                }
            }
        }
    }

    /// The start-up as the run pays it with several programs at once: the median of the
    /// `contended` wave of start-ups, when slower than the fit.
    fn price_contended_start(&mut self, contended: &[CallTime]) {
        if contended.is_empty() {
            return;
        }
        let (_, median, _) = spread(&contended.iter().map(|c| c.seconds).collect::<Vec<_>>());
        let start = median - self.seconds_per_release;
        if start > self.seconds_per_call {
            self.seconds_per_call = start;
        }
        self.contended_call = Some(median);
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

    /// Seconds of one call of `m` releases at the plan's (pessimistic) price: the central fit
    /// times the price factor.
    pub fn call_seconds(&self, m: usize) -> f64 {
        self.price_factor.max(1.0) * self.central_call_seconds(m)
    }

    /// Seconds of one call of `m` releases at the central (median) fit.
    pub fn central_call_seconds(&self, m: usize) -> f64 {
        self.seconds_per_call + m as f64 * self.seconds_per_release
    }

    /// Seconds the testers take to score a trial of `s` releases per side (all layers).
    pub fn score_seconds(&self, s: usize) -> f64 {
        self.score_seconds_per_release * s as f64
    }

    /// Takes in one trial's scoring: `seconds` to score `s` releases per side (all layers).
    /// The price is an exponential running mean (weight 0.2 on the newest), started at the
    /// first trial's: the calibration's estimate is replaced by what the run's own releases
    /// cost.
    pub fn observe_scoring(&mut self, s: usize, seconds: f64) {
        if s == 0 || !seconds.is_finite() || seconds < 0.0 {
            return;
        }
        let x = seconds / s as f64;
        self.scorings_seen += 1;
        self.score_seconds_per_release = if self.scorings_seen == 1 {
            x
        } else {
            0.8 * self.score_seconds_per_release + 0.2 * x
        };
    }

    /// The calls of a draw of `n` releases: ⌈n / batch⌉ calls of at most `batch` releases.
    pub fn calls_of(&self, n: usize) -> impl Iterator<Item = usize> + '_ {
        let b = self.batch;
        (0..n.div_ceil(b)).map(move |c| (n - c * b).min(b))
    }

    /// Seconds to make the draws `draws` (releases each) together: their calls, in order, on
    /// `jobs` slots, each to the slot that frees first.
    pub fn seconds(&self, draws: &[usize]) -> f64 {
        let calls: Vec<usize> = draws.iter().flat_map(|&n| self.calls_of(n)).collect();
        self.schedule(&calls)
    }

    /// Seconds of the calls `calls` (releases each), in order, on `jobs` slots, each to the
    /// slot that frees first.
    fn schedule(&self, calls: &[usize]) -> f64 {
        let mut slots = vec![0.0_f64; self.jobs.max(1)];
        for &m in calls {
            // The slot that frees first (few slots: a linear scan is enough).
            let (k, _) = slots
                .iter()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(b.1))
                .unwrap_or((0, &0.0));
            slots[k] += self.call_seconds(m);
        }
        slots.into_iter().fold(0.0, f64::max)
    }

    /// Whether a trial of `s` releases per side is one call (see
    /// [`CostModel::datasets_per_call`]).
    pub fn trial_in_one_call(&self, s: usize) -> bool {
        self.datasets_per_call.is_some_and(|k| 2 * s <= k)
    }

    /// Seconds of `w` exploratory trials of `s` releases per side, drawn and scored together
    /// (the scorings share the `jobs` threads once the draws are in).
    pub fn wave_seconds(&self, s: usize, w: usize) -> f64 {
        let w = w.max(1);
        let scoring = self.score_seconds(s) * w.div_ceil(self.jobs.max(1)) as f64;
        let draws = if self.trial_in_one_call(s) {
            self.schedule(&vec![2 * s; w])
        } else {
            self.seconds(&vec![s; 2 * w])
        };
        draws + scoring
    }

    /// Seconds of one confirmation of `n` releases per side (both sides drawn together, then
    /// scored).
    pub fn confirm_seconds(&self, n: usize) -> f64 {
        self.seconds(&[n, n]) + self.score_seconds(n)
    }

    /// The largest confirmation (releases per side, at most `cap`) whose price fits `seconds`;
    /// 0 when none does.
    pub fn confirm_fitting(&self, seconds: f64, cap: usize) -> usize {
        let (mut lo, mut hi) = (0usize, cap);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if self.confirm_seconds(mid) <= seconds {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// Trials scored together at most: enough to keep every slot busy with the two sides of
    /// each (at least 1).
    pub fn wave_width(&self, s: usize) -> usize {
        let calls_per_trial = if self.trial_in_one_call(s) {
            1
        } else {
            2 * s.div_ceil(self.batch).max(1)
        };
        self.jobs.div_ceil(calls_per_trial).max(1)
    }

    /// Refits the constants with the calls in `log` (see the module docs).
    pub fn observe(&mut self, log: &CallLog) {
        let new = log.take();
        if new.is_empty() {
            return;
        }
        if new.iter().any(|c| c.releases > 2) {
            self.censored = false;
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
        self.update_factor();
    }

    /// The price factor from the most recent calls: the upper quartile of their times over the
    /// central fit's, at least 1 and at most [`MAX_PRICE_FACTOR`].
    fn update_factor(&mut self) {
        let start = self.observed.len().saturating_sub(FACTOR_CALLS);
        let mut r: Vec<f64> = self.observed[start..]
            .iter()
            .filter(|c| c.seconds.is_finite() && c.seconds > 0.0)
            .map(|c| c.seconds / self.central_call_seconds(c.releases).max(1e-9))
            .collect();
        if r.is_empty() {
            return;
        }
        r.sort_by(f64::total_cmp);
        let q = r[((0.75 * (r.len() - 1) as f64).ceil() as usize).min(r.len() - 1)];
        self.price_factor = q.clamp(1.0, MAX_PRICE_FACTOR);
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

/// The smallest, median and largest of `v` (0 for an empty `v`).
fn spread(v: &[f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let k = v.len();
    let median = if k % 2 == 1 {
        v[k / 2]
    } else {
        0.5 * (v[k / 2 - 1] + v[k / 2])
    };
    (v[0], median, v[k - 1])
}

/// One wave of the speed probe: `max(jobs, 2)` calls of `m` releases on `dataset` started
/// together (one after the other with one job), call k on the probe's stream `first_index` + k
/// (tag 0x5EED: no audit reads them). A call stopped by the caller's limit counts as taking
/// the limit (a lower bound on its time) and sets `slow`.
fn probe_wave(
    mechanism: &dyn Mechanism,
    dataset: &Dataset,
    seed: Seed,
    jobs: usize,
    first_index: u64,
    m: usize,
    slow: &std::sync::atomic::AtomicBool,
) -> Result<Vec<CallTime>> {
    use rayon::prelude::*;
    let one = |k: u64| -> Result<CallTime> {
        let mut rng = seed.rng(Stream::Other {
            tag: 0x5EED,
            index: first_index + k,
        });
        let t = Instant::now();
        let seconds = match mechanism.sample(dataset, m, &mut rng) {
            Ok(_) => t.elapsed().as_secs_f64(),
            Err(crate::mechanisms::MechanismError::Slow { seconds, .. }) => {
                slow.store(true, std::sync::atomic::Ordering::Relaxed);
                seconds
            }
            Err(e) => return Err(e.into()),
        };
        Ok(CallTime {
            releases: m,
            seconds,
        })
    };
    let width = jobs.max(2);
    // One job: the calls one after the other, as the run makes them.
    let out: Vec<Result<CallTime>> = if jobs > 1 {
        (0..width as u64).into_par_iter().map(one).collect()
    } else {
        (0..width as u64).map(one).collect()
    };
    out.into_iter().collect()
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
        // Alone a call costs its 20 ms; four started together end at 20, 40, 60 and 80 ms: the
        // median of the wave (50 ms) is the central start-up, and the slow half of the calls
        // raises the plan's price above it.
        assert!(alone.contended_call.is_none());
        assert!(alone.seconds_per_call < 0.04, "{alone:?}");
        assert!(four.seconds_per_call >= 0.045, "{four:?}");
        assert!(four.call_seconds(1) >= 0.055, "{four:?}");
        assert!(four.contended_call.is_some_and(|c| c >= 0.045), "{four:?}");
    }

    /// A program whose start-up (0.3 s) jitters by ±0.03 s, at 70 µs per release: the probe's
    /// largest call is lost in that jitter (a slow-start program seen at a tenth of its
    /// scale), and its per-release price must not come out at ~0.
    #[derive(Debug, Default)]
    struct JitteryStart(std::sync::atomic::AtomicU64);

    impl Mechanism for JitteryStart {
        fn id(&self) -> &str {
            "jittery-start"
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
            let k = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let jitter = if k.is_multiple_of(2) { -0.03 } else { 0.03 };
            std::thread::sleep(std::time::Duration::from_secs_f64(
                0.3 + jitter + 7e-5 * n as f64,
            ));
            Ok(crate::mechanisms::Samples::from_column(vec![0.0; n]))
        }
    }

    #[test]
    fn releases_lost_in_the_start_ups_jitter_are_priced_at_their_upper_end() {
        let data = Dataset::scalars(vec![0.5; 3]).unwrap();
        let m = JitteryStart::default();
        let prior = [CallTime {
            releases: 2,
            seconds: 0.33,
        }];
        let model = CostModel::probe_with(&m, &data, 0, 2, 50_000, 0.5, &prior).unwrap();
        // The true cost is 70 µs per release; a difference of two noisy calls could give ~0.
        assert!(model.seconds_per_release >= 7e-5, "{model:?}");
        assert!(model.seconds_per_release <= 1e-3, "{model:?}");
        assert!(model.call_seconds(1) >= 0.25, "{model:?}");
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
