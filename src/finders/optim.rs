//! Black-box optimizers from `argmin` (Nelder–Mead, particle swarm, simulated annealing) on the
//! noisy exploratory score, turned into ask/tell finders.
//!
//! argmin drives its own loop and calls `cost(x)`; a finder is asked for points. The optimizer
//! therefore runs on its own thread: its cost function sends x to the finder's `ask` and blocks
//! until `tell` sends back the score (negated: argmin minimizes). The exchange is strictly
//! sequential, so the sequence of proposals depends only on the seed and the scores: runs are
//! repeatable. Dropping the finder closes the channels; the cost function then returns an error
//! and the optimizer thread ends.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use argmin::core::{CostFunction, Error as ArgminError};
use argmin::core::{Executor, State};
use argmin::solver::neldermead::NelderMead;
use argmin::solver::particleswarm::ParticleSwarm;
use argmin::solver::simulatedannealing::{Anneal, SimulatedAnnealing};
use rand::RngExt;
use rand09::SeedableRng as _;

use super::{DatasetFinder, PairSpace};
use crate::error::{Error, Result};
use crate::mechanisms::DatasetPair;
use crate::rng::AuditRng;

/// Which argmin solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgminSolver {
    /// Nelder & Mead 1965 simplex search from a random simplex.
    NelderMead,
    /// Particle swarm (Kennedy & Eberhart 1995) over the unit box, 8 particles.
    ParticleSwarm,
    /// Simulated annealing with Gaussian moves scaled by the temperature.
    SimulatedAnnealing,
}

struct Problem {
    /// Cost calls answered after the finder was dropped (see `cost`).
    closed_calls: AtomicUsize,
    /// Calls a solver's initialization may make without checking errors (Nelder–Mead's init
    /// unwraps its m + 1 simplex costs).
    init_calls: usize,
    to_finder: Sender<Vec<f64>>,
    from_finder: Mutex<Receiver<f64>>,
    /// Randomness of annealing moves.
    moves: Mutex<AuditRng>,
}

impl CostFunction for Problem {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, x: &Self::Param) -> std::result::Result<f64, ArgminError> {
        let x: Vec<f64> = x.iter().map(|v| v.clamp(0.0, 1.0)).collect();
        let answer = match self.to_finder.send(x) {
            Ok(()) => self
                .from_finder
                .lock()
                .map_err(|_| ArgminError::msg("finder poisoned"))?
                .recv()
                .ok(),
            Err(_) => None,
        };
        let Some(score) = answer else {
            // The finder was dropped. Nelder–Mead's initialization unwraps the costs of its
            // simplex, so answer those with a neutral value; afterwards fail, which ends the
            // optimizer's run cleanly.
            if self.closed_calls.fetch_add(1, Ordering::SeqCst) < self.init_calls {
                return Ok(0.0);
            }
            return Err(ArgminError::msg("finder stopped"));
        };
        // argmin minimizes; non-finite scores are treated as uninformative.
        Ok(if score.is_finite() { -score } else { 0.0 })
    }
}

impl Anneal for Problem {
    type Param = Vec<f64>;
    type Output = Vec<f64>;
    type Float = f64;
    fn anneal(&self, x: &Vec<f64>, temp: f64) -> std::result::Result<Vec<f64>, ArgminError> {
        let mut rng = self
            .moves
            .lock()
            .map_err(|_| ArgminError::msg("finder poisoned"))?;
        // Temperature starts at 1 and decays; moves of up to ±temp/2 per coordinate.
        Ok(x.iter()
            .map(|v| (v + (rng.random::<f64>() - 0.5) * temp.min(1.0)).clamp(0.0, 1.0))
            .collect())
    }
}

/// An argmin solver as an ask/tell finder. See the module docs.
pub struct ArgminFinder {
    solver: ArgminSolver,
    space: PairSpace,
    points: Receiver<Vec<f64>>,
    scores: Option<Sender<f64>>,
    thread: Option<JoinHandle<()>>,
    awaiting_score: bool,
}

impl std::fmt::Debug for ArgminFinder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgminFinder")
            .field("solver", &self.solver)
            .finish()
    }
}

impl ArgminFinder {
    /// Starts `solver` over `space`, seeded from `rng`.
    pub fn new(space: PairSpace, solver: ArgminSolver, mut rng: AuditRng) -> Result<Self> {
        let m = space.dim();
        let (to_finder, points) = channel();
        let (scores, from_finder) = channel();
        let seed: u64 = rng.random();
        let start: Vec<f64> = (0..m).map(|_| rng.random()).collect();
        let simplex: Vec<Vec<f64>> = std::iter::once(start.clone())
            .chain((0..m).map(|i| {
                let mut p = start.clone();
                // Step of 0.5 toward the far side of the box along coordinate i.
                p[i] = if p[i] < 0.5 { p[i] + 0.5 } else { p[i] - 0.5 };
                p
            }))
            .collect();
        let problem = Problem {
            closed_calls: AtomicUsize::new(0),
            init_calls: m + 1,
            to_finder,
            from_finder: Mutex::new(from_finder),
            moves: Mutex::new(rng),
        };
        let thread = std::thread::Builder::new()
            .name(format!("finder-{solver:?}"))
            .spawn(move || {
                // The result is not needed: the finder saw every point and score. Errors
                // ("finder stopped") are the normal way the thread ends.
                let _ = match solver {
                    ArgminSolver::NelderMead => {
                        NelderMead::new(simplex).with_sd_tolerance(1e-12).map(|s| {
                            Executor::new(problem, s)
                                .configure(|c| c.max_iters(1_000_000))
                                .run()
                                .map(|r| r.state().get_iter())
                        })
                    }
                    ArgminSolver::ParticleSwarm => {
                        let s = ParticleSwarm::new((vec![0.0; m], vec![1.0; m]), 8)
                            .with_rng_generator(rand09::rngs::StdRng::seed_from_u64(seed));
                        Ok(Executor::new(problem, s)
                            .configure(|c| c.max_iters(1_000_000))
                            .run()
                            .map(|r| r.state().get_iter()))
                    }
                    ArgminSolver::SimulatedAnnealing => SimulatedAnnealing::new_with_rng(
                        1.0,
                        rand09::rngs::StdRng::seed_from_u64(seed),
                    )
                    .map(|s| {
                        Executor::new(problem, s)
                            .configure(|c| c.param(start).max_iters(1_000_000))
                            .run()
                            .map(|r| r.state().get_iter())
                    }),
                };
            })
            .map_err(|e| Error::InvalidConfig(format!("cannot start the finder thread: {e}")))?;
        Ok(Self {
            solver,
            space,
            points,
            scores: Some(scores),
            thread: Some(thread),
            awaiting_score: false,
        })
    }
}

impl DatasetFinder for ArgminFinder {
    fn name(&self) -> &'static str {
        match self.solver {
            ArgminSolver::NelderMead => "nelder-mead",
            ArgminSolver::ParticleSwarm => "pso",
            ArgminSolver::SimulatedAnnealing => "annealing",
        }
    }
    fn ask(&mut self) -> Result<Option<DatasetPair>> {
        if self.awaiting_score {
            // A point was asked but never scored: score it as uninformative.
            self.tell(f64::NEG_INFINITY);
        }
        match self.points.recv() {
            Ok(u) => {
                self.awaiting_score = true;
                self.space.decode(&u).map(Some)
            }
            Err(_) => Ok(None), // the optimizer finished
        }
    }
    fn tell(&mut self, score: f64) {
        if self.awaiting_score {
            self.awaiting_score = false;
            if let Some(s) = &self.scores {
                let _ = s.send(score);
            }
        }
    }
}

impl Drop for ArgminFinder {
    fn drop(&mut self) {
        // Closing the score channel makes the blocked cost function fail; then the thread ends.
        self.scores = None;
        // Drain a point the optimizer may be trying to hand over, so it is not blocked.
        while self.points.try_recv().is_ok() {}
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::{Neighboring, RecordDomain};
    use rand::SeedableRng;

    /// Each solver climbs a smooth score (the added record's value) and is repeatable.
    #[test]
    fn solvers_climb_a_smooth_score_repeatably() {
        let space =
            PairSpace::new(RecordDomain::real(0.0, 1.0, 1), 1, Neighboring::AddRemove).unwrap();
        for solver in [
            ArgminSolver::NelderMead,
            ArgminSolver::ParticleSwarm,
            ArgminSolver::SimulatedAnnealing,
        ] {
            let run = || {
                let mut f = ArgminFinder::new(space, solver, AuditRng::seed_from_u64(5)).unwrap();
                let mut best = f64::NEG_INFINITY;
                let mut seq = Vec::new();
                for _ in 0..60 {
                    let Some(p) = f.ask().unwrap() else { break };
                    let x = p.second().column(0)[1];
                    seq.push(x);
                    best = best.max(x);
                    f.tell(x);
                }
                (best, seq)
            };
            let (best, seq) = run();
            assert!(best > 0.9, "{solver:?}: best {best}");
            assert_eq!(seq, run().1, "{solver:?} is not repeatable");
        }
    }
}
