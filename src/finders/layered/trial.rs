//! One exploratory trial of the layered search: its draw (shrunk on a pair the program is slow
//! on, or one call of many datasets when the program reads them) and its score in every layer.

use std::time::Instant;

use super::plan::duration;
use super::{float_coords, view};
use crate::audit::{AuditConfig, Phase, audit_drawn};
use crate::error::{Error, Result};
use crate::finders::SEARCH_BETA;
use crate::finders::cost::CallLog;
use crate::mechanisms::math::readable;
use crate::mechanisms::{DatasetPair, Mechanism, MechanismError, PrivacyClaim, Samples};
use crate::record::layers::{LayerKind, integer_valued};
use crate::rng::{Seed, sample_pair_parallel};
use crate::testers::PropertyTester;

/// One exploratory trial's outcome, computed in parallel with the others of its wave.
pub(super) struct Scored {
    pub(super) pair: DatasetPair,
    /// The releases of both sides, or the program's refusal (with the seconds per release it
    /// took at least, when it was too slow on the pair).
    pub(super) outcome: std::result::Result<ScoredLayers, (MechanismError, Option<f64>)>,
}

/// A trial's draw: the releases, or the program's refusal or slowness.
pub(super) enum Draw {
    /// Both sides, the releases per side drawn and the seconds the draw took.
    Drawn(Samples, Samples, usize, f64),
    /// Too slow on the pair for even [`MIN_SLOW_SEARCH_SAMPLES`] releases per side: the
    /// skip's message and the seconds per release it took at least.
    TooSlow(MechanismError, f64),
}

/// One layer's score of a trial: the score, the exploratory margin, and the floating-point
/// view's coordinates (wide outputs).
pub(super) type LayerScore = (f64, f64, Option<Vec<usize>>);

/// A trial's scores per layer (None for a layer that cannot run on it).
pub(super) struct ScoredLayers {
    /// Whether every release of the trial is an integer.
    pub(super) integer: bool,
    /// Each layer's score, in the order of the run's layers.
    pub(super) per_layer: Vec<Option<LayerScore>>,
    /// When the program was too slow on the pair for the full size: the releases per side it
    /// was scored on, and the seconds per release measured on them.
    pub(super) slow: Option<(usize, f64)>,
    /// Releases per side scored and the seconds the testers took on them (all layers).
    pub(super) scoring: (usize, f64),
}

/// How a trial skipped because the program was too slow on its pair begins its message.
const TOO_SLOW: &str = "too slow on this pair";

/// Fewest releases per side a trial is shrunk to on a pair the program is slow on; below it
/// the pair is skipped as too slow.
pub const MIN_SLOW_SEARCH_SAMPLES: usize = 50;
/// Fewest releases per side a confirmation of such a pair draws, whatever it costs.
pub const MIN_SLOW_CONFIRM_SAMPLES: usize = 100;

/// Draws `s` releases per side of `pair` for trial `index`; when a call runs past the limit
/// the search set ([`Mechanism::set_call_limit`]), draws again at a size that fits it at the
/// slowness observed (at most 3 times, each at most a quarter of the last size). Returns the
/// releases, the size drawn and the seconds the draw took.
#[allow(clippy::too_many_arguments)]
pub(super) fn draw_trial(
    mechanism: &dyn Mechanism,
    pair: &DatasetPair,
    s: usize,
    seed: Seed,
    index: usize,
    startup: f64,
    hint: f64,
    log: &CallLog,
) -> Result<Draw> {
    let mut size = s;
    let mut last_rate = hint;
    for _ in 0..4 {
        let t0 = Instant::now();
        let drawn = if one_call_fits(mechanism, pair, size) {
            draw_in_one_call(mechanism, pair, size, seed, index, log)
        } else {
            sample_pair_parallel(
                mechanism,
                pair,
                size,
                seed,
                |side| Phase::Search(index as u64).stream_of(side),
                Some(log),
            )
        };
        match drawn {
            Ok((p, q)) => return Ok(Draw::Drawn(p, q, size, t0.elapsed().as_secs_f64())),
            Err(Error::Mechanism(MechanismError::Slow {
                mechanism: id,
                releases,
                seconds,
            })) => {
                // At least this much per release: the call ran past `seconds`; and at least as
                // slow as the slowest pair seen so far (`hint`), so that the next size is one
                // that can fit.
                let rate =
                    ((seconds - startup).max(0.5 * seconds) / releases.max(1) as f64).max(hint);
                let fits = ((0.5 * seconds - startup).max(0.25 * seconds) / rate).floor();
                let next = (fits.max(0.0) as usize).min(size / 4);
                if next < MIN_SLOW_SEARCH_SAMPLES {
                    return Ok(Draw::TooSlow(
                        MechanismError::Refused {
                            mechanism: id,
                            message: format!(
                                "{TOO_SLOW}{}",
                                format_args!(
                                    ": a call of {releases} releases ran past the {} s a trial's call is given (at least {} per release here); {MIN_SLOW_SEARCH_SAMPLES} releases per side would not fit, so the pair was skipped",
                                    readable((seconds * 100.0).round() / 100.0),
                                    duration(rate)
                                )
                            ),
                        },
                        rate,
                    ));
                }
                last_rate = rate;
                size = next;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Draw::TooSlow(
        MechanismError::Refused {
            mechanism: mechanism.id().to_string(),
            message: format!(
                "{TOO_SLOW}: still past the time a trial's call is given at {size} releases per side; the pair was skipped"
            ),
        },
        last_rate,
    ))
}

/// Most record values the datasets of a one-call trial may hold together (the bound of one
/// request's dataset, [`crate::sources::exec::MAX_DATASET_VALUES`]).
const ONE_CALL_VALUES: usize = crate::sources::exec::MAX_DATASET_VALUES;

/// Whether a trial of `size` releases per side of `pair` is drawn in one call: the mechanism
/// reads at least `2 · size` datasets per call (`--exec-datasets`) and they fit one request.
pub(super) fn one_call_fits(mechanism: &dyn Mechanism, pair: &DatasetPair, size: usize) -> bool {
    let values = size * (pair.first().len() + pair.second().len()) * pair.first().dim();
    mechanism
        .datasets_per_call()
        .is_some_and(|k| 2 * size <= k && values <= ONE_CALL_VALUES)
}

/// A trial's releases from one call of `2 · size` datasets (`size` copies of each side, one
/// release each, independent given the datasets): one start-up instead of two, which is what a
/// slow-start program that reads many datasets per request makes possible. Its randomness is
/// the trial's own search stream (the first side's), so the releases do not depend on any
/// other trial.
fn draw_in_one_call(
    mechanism: &dyn Mechanism,
    pair: &DatasetPair,
    size: usize,
    seed: Seed,
    index: usize,
    log: &CallLog,
) -> Result<(Samples, Samples)> {
    let mut datasets = Vec::with_capacity(2 * size);
    datasets.extend(std::iter::repeat_n(pair.first().clone(), size));
    datasets.extend(std::iter::repeat_n(pair.second().clone(), size));
    let mut rng = seed.rng(Phase::Search(index as u64).stream_of(crate::rng::Side::First));
    let t0 = Instant::now();
    let all = mechanism.sample_each(&datasets, &mut rng)?;
    log.push(2 * size, t0.elapsed().as_secs_f64());
    let dim = mechanism.output_dim();
    if all.n() != 2 * size || all.dim() != dim {
        return Err(Error::InvalidSamples(format!(
            "mechanism {} returned {} × {} releases for a request of {} datasets, expected {} × {dim}",
            mechanism.id(),
            all.n(),
            all.dim(),
            2 * size,
            2 * size
        )));
    }
    if let Some((i, j, v)) = all.first_non_finite() {
        return Err(Error::InvalidSamples(format!(
            "mechanism {} released a non-finite value {v} (release {i}, coordinate {j})",
            mechanism.id()
        )));
    }
    let v = all.values();
    let p = Samples::new(v.slice(ndarray::s![..size, ..]).to_owned())?;
    let q = Samples::new(v.slice(ndarray::s![size.., ..]).to_owned())?;
    Ok((p, q))
}

/// What scoring a trial of a wave needs: the target, the search's sizes and the slowness seen
/// so far; shared by the wave's trials, which run in parallel.
pub(super) struct TrialScorer<'a> {
    pub(super) mechanism: &'a dyn Mechanism,
    pub(super) claim: &'a PrivacyClaim,
    pub(super) testers: &'a [Box<dyn PropertyTester>],
    pub(super) audit: &'a AuditConfig,
    pub(super) layers: &'a [LayerKind],
    /// The run's call log, which every call a scored trial finished joins.
    pub(super) log: &'a CallLog,
    /// Releases per side of a trial.
    pub(super) search_samples: usize,
    /// Seconds per program start.
    pub(super) startup: f64,
    /// The largest seconds per release seen on a pair the program was slow on.
    pub(super) hint: f64,
    /// Whether an earlier wave skipped the floating-point layer.
    pub(super) float_skipped: bool,
}

impl TrialScorer<'_> {
    /// Draws trial `index` on `pair` and scores it in every layer. The program's refusal, a
    /// call stopped at the deadline and a pair too slow to draw are the trial's outcome; any
    /// other error is the run's.
    pub(super) fn score(&self, index: usize, pair: DatasetPair) -> Result<Scored> {
        let s = self.search_samples;
        let startup = self.startup;
        let own = CallLog::default();
        let seed = Seed(self.audit.seed);
        let drawn = draw_trial(
            self.mechanism,
            &pair,
            s,
            seed,
            index,
            startup,
            self.hint,
            &own,
        );
        let (p, q, size, secs) = match drawn {
            Ok(Draw::Drawn(p, q, size, secs)) => (p, q, size, secs),
            Ok(Draw::TooSlow(e, rate)) => {
                return Ok(Scored {
                    pair,
                    outcome: Err((e, Some(rate))),
                });
            }
            Err(Error::Mechanism(
                e @ (MechanismError::Refused { .. } | MechanismError::OutOfTime { .. }),
            )) => {
                return Ok(Scored {
                    pair,
                    outcome: Err((e, None)),
                });
            }
            Err(e) => return Err(e),
        };
        let scoring_started = Instant::now();
        let integer = integer_valued(&[&p, &q]);
        let per_layer = self.score_layers(index, &pair, (&p, &q), size, integer)?;
        // Every call that finished prices the run, those of a shrunk trial too: a model that
        // shrank every trial was wrong, and learns here.
        for c in own.take() {
            self.log.push(c.releases, c.seconds);
        }
        let slow = (size < s).then(|| {
            (
                size,
                ((secs - startup).max(0.5 * secs) / size as f64)
                    .max(crate::finders::cost::MIN_SECONDS_PER_RELEASE),
            )
        });
        Ok(Scored {
            pair,
            outcome: Ok(ScoredLayers {
                integer,
                per_layer,
                slow,
                scoring: (size, scoring_started.elapsed().as_secs_f64()),
            }),
        })
    }

    /// Trial `index`'s score in each layer on its releases (`size` per side), each layer
    /// through its own view and tester streams; None for the floating-point layer when it is
    /// skipped or every release is an `integer`.
    fn score_layers(
        &self,
        index: usize,
        pair: &DatasetPair,
        (p, q): (&Samples, &Samples),
        size: usize,
        integer: bool,
    ) -> Result<Vec<Option<LayerScore>>> {
        let mut per_layer = Vec::new();
        for &kind in self.layers {
            if kind == LayerKind::FloatingPoint && (self.float_skipped || integer) {
                per_layer.push(None);
                continue;
            }
            let coords = if kind == LayerKind::FloatingPoint {
                float_coords(p, q)
            } else {
                None
            };
            let (vp, _, _) = view(kind, p, coords.as_deref())?;
            let (vq, _, _) = view(kind, q, coords.as_deref())?;
            let config = AuditConfig {
                seed: self.audit.seed,
                samples_per_side: size,
                failure_probability: SEARCH_BETA,
            };
            let r = audit_drawn(
                self.mechanism,
                self.claim,
                pair,
                (&vp, &vq),
                self.testers,
                &config,
                Phase::Search(index as u64).tester_base() + (kind.index() << 19),
            )?;
            let (score, margin) = crate::finders::score_and_margin(&r);
            per_layer.push(Some((score, margin, coords)));
        }
        Ok(per_layer)
    }
}
