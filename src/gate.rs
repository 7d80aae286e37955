//! Gating in `cargo test`: fail a downstream test when a mechanism change breaks its claim.
//!
//! Put `dp-audit` in `[dev-dependencies]`, implement [`Mechanism`] for your mechanism (or wrap
//! it), pick one or more neighboring pairs where a bug would show (an added record at the edge of
//! the range, a query stream that crosses a threshold), and write:
//!
//! ```
//! use dp_audit::gate::{Gate, assert_claim_holds};
//! use dp_audit::mechanisms::noise::LaplaceNoise;
//! use dp_audit::{Dataset, DatasetPair, Mechanism, Neighboring, PrivacyClaim, RecordDomain, Samples};
//! use dp_audit::mechanisms::{Result, rand::Rng};
//!
//! /// My noisy count: |D| + Lap(scale).
//! #[derive(Debug)]
//! struct NoisyCount { epsilon: f64, scale: f64 }
//!
//! impl Mechanism for NoisyCount {
//!     fn id(&self) -> &str { "my-noisy-count" }
//!     fn claim(&self) -> PrivacyClaim { PrivacyClaim::Pure { epsilon: self.epsilon } }
//!     fn neighboring(&self) -> Neighboring { Neighboring::AddRemove }
//!     fn domain(&self) -> RecordDomain { RecordDomain::real(0.0, 1.0, 1) }
//!     fn output_dim(&self) -> usize { 1 }
//!     fn sample(&self, data: &Dataset, n: usize, rng: &mut dyn Rng) -> Result<Samples> {
//!         let noise = LaplaceNoise::new(self.scale)?;
//!         let count = data.len() as f64;
//!         Ok(Samples::from_column((0..n).map(|_| count + noise.sample(rng)).collect()))
//!     }
//! }
//!
//! let d = Dataset::scalars(vec![0.5; 3])?;
//! let pair = DatasetPair::new(d.clone(), d.with_record(&[1.0])?, Neighboring::AddRemove)?;
//!
//! // Correct: scale 1/ε. Passes (false-failure rate ≤ 1e-6).
//! assert_claim_holds(&NoisyCount { epsilon: 1.0, scale: 1.0 }, &[pair.clone()]);
//!
//! // Someone halves the noise: the non-panicking form reports the violation.
//! let outcome = Gate::default().check(&NoisyCount { epsilon: 1.0, scale: 0.5 }, &[pair])?;
//! assert!(outcome.violation_found());
//! println!("{}", outcome.explain());
//! # Ok::<(), dp_audit::Error>(())
//! ```
//!
//! # What a failure means, and how often a correct mechanism fails
//! The gate runs the confirming audit of [`crate::audit::audit_pair`] on each pair with fresh
//! samples. With the defaults, the total failure probability β = 1e-6 is split evenly over the
//! pairs (and inside each audit over its bounds), so **a mechanism that keeps its claim fails
//! the gate with probability at most 1e-6** over the randomness of the seed. The seed is fixed
//! ([`Gate::DEFAULT_SEED`]) so a run is deterministic: the same mechanism code gives the same
//! verdict on every machine and thread count, and a red gate is reproducible.
//! The guarantee needs the mechanism to honor the contract: all randomness from the generator
//! passed to `sample`.
//!
//! # What it detects
//! With the defaults (2e5 releases per side, hockey-stick tester, one pair), measured in
//! `tests/gate.rs`:
//! - a Laplace mechanism whose noise is scaled by 0.5 or less (true ε twice the claim);
//! - a Gaussian mechanism calibrated for (1, 1e-5) whose noise is scaled by 0.5 or less
//!   (true δ(1) = 1.04e-2);
//! - gross bugs (missing noise, wrong sensitivity by a factor of 2 or more) on the pairs given.
//!
//! Smaller bugs need more samples: the bound's slack shrinks like 1/√n, so four times the samples
//! halve the detectable excess (`Gate::default().samples_per_side(800_000)`). The gate never
//! proves a claim: it only looks on the pairs it is given.

use crate::audit::{AuditConfig, AuditReport, Verdict, audit_pair};
use crate::error::{Error, Result};
use crate::mechanisms::{DatasetPair, Mechanism, PrivacyClaim};
use crate::report::text::render_text;
use crate::testers::{HockeyStickTester, PropertyTester};

/// A configured gate. See the module docs.
#[derive(Debug)]
pub struct Gate {
    seed: u64,
    samples_per_side: usize,
    failure_probability: f64,
    testers: Vec<Box<dyn PropertyTester>>,
    claim: Option<PrivacyClaim>,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            seed: Self::DEFAULT_SEED,
            samples_per_side: Self::DEFAULT_SAMPLES,
            failure_probability: Self::DEFAULT_FAILURE_PROBABILITY,
            testers: vec![Box::new(HockeyStickTester::default())],
            claim: None,
        }
    }
}

impl Gate {
    /// The fixed seed of the defaults.
    pub const DEFAULT_SEED: u64 = 0x5eed_da7a;
    /// Releases per side per pair.
    pub const DEFAULT_SAMPLES: usize = 200_000;
    /// Probability that a mechanism keeping its claim fails the gate.
    pub const DEFAULT_FAILURE_PROBABILITY: f64 = 1e-6;

    /// Uses another seed (the verdict stays deterministic for a given seed).
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Releases per side per pair: more samples detect smaller bugs (slack ∝ 1/√n).
    pub fn samples_per_side(mut self, n: usize) -> Self {
        self.samples_per_side = n;
        self
    }

    /// Total probability of failing a correct mechanism, split over pairs and bounds.
    pub fn failure_probability(mut self, beta: f64) -> Self {
        self.failure_probability = beta;
        self
    }

    /// The testers to run (default: hockey-stick).
    pub fn testers(mut self, testers: Vec<Box<dyn PropertyTester>>) -> Self {
        self.testers = testers;
        self
    }

    /// Tests this claim instead of the mechanism's own.
    pub fn claim(mut self, claim: PrivacyClaim) -> Self {
        self.claim = Some(claim);
        self
    }

    /// Audits `mechanism` on each pair and returns the outcome; never panics on a violation.
    ///
    /// Errors: no pairs, a pair outside the mechanism's domain or relation, invalid settings, or
    /// a mechanism that fails to sample.
    pub fn check(&self, mechanism: &dyn Mechanism, pairs: &[DatasetPair]) -> Result<GateOutcome> {
        if pairs.is_empty() {
            return Err(Error::InvalidConfig(
                "the gate needs at least one neighboring pair".into(),
            ));
        }
        if !(self.failure_probability > 0.0 && self.failure_probability < 1.0) {
            return Err(Error::InvalidConfig(format!(
                "failure probability β = {}; allowed: 0 < β < 1",
                self.failure_probability
            )));
        }
        let claim = self.claim.unwrap_or_else(|| mechanism.claim());
        let per_pair = self.failure_probability / pairs.len() as f64;
        let mut reports = Vec::with_capacity(pairs.len());
        for (i, pair) in pairs.iter().enumerate() {
            let domain = mechanism.domain();
            domain.check(pair.first())?;
            domain.check(pair.second())?;
            if pair.relation() != mechanism.neighboring() {
                return Err(Error::InvalidConfig(format!(
                    "pair {i} is a {} pair; {} is audited under {}",
                    pair.relation(),
                    mechanism.id(),
                    mechanism.neighboring()
                )));
            }
            let config = AuditConfig {
                // Each pair gets its own seed derived from the gate's, so pairs use
                // independent streams.
                seed: self.seed.wrapping_add(i as u64),
                samples_per_side: self.samples_per_side,
                failure_probability: per_pair,
            };
            reports.push(audit_pair(mechanism, &claim, pair, &self.testers, &config)?);
        }
        Ok(GateOutcome {
            failure_probability: self.failure_probability,
            reports,
        })
    }
}

/// What a gate found: one audit report per pair.
#[derive(Debug)]
pub struct GateOutcome {
    /// Total β of the gate.
    pub failure_probability: f64,
    /// One report per pair, in order.
    pub reports: Vec<AuditReport>,
}

impl GateOutcome {
    /// True when any pair's audit found a violation.
    pub fn violation_found(&self) -> bool {
        self.reports.iter().any(|r| r.verdict == Verdict::Violation)
    }

    /// A readable account: per pair the verdict, the bounds against what the claim allows, and
    /// how to reproduce.
    pub fn explain(&self) -> String {
        let mut s = format!(
            "dp-audit gate: {} on {} pair(s), β = {} split evenly over the pairs\n",
            if self.violation_found() {
                "VIOLATION FOUND"
            } else {
                "no violation found"
            },
            self.reports.len(),
            self.failure_probability
        );
        for (i, r) in self.reports.iter().enumerate() {
            s += &format!("\n--- pair {i} ---\n{}", render_text(r));
            s += &format!(
                "reproduce    the gate is deterministic: seed {} (pair {i}), {} samples per side, β = {} for this pair; rerun the same test",
                r.seed, r.samples_per_side, r.beta.total
            );
            if crate::mechanisms::catalogue::ids().contains(&r.mechanism.id.as_str()) {
                s += &format!(
                    ", or (with the same --param values, if any): audit run --mechanism {} --claim {} --seed {} --samples {} --failure-probability {}",
                    r.mechanism.id, r.mechanism.claim, r.seed, r.samples_per_side, r.beta.total
                );
            }
            s.push('\n');
        }
        s
    }
}

/// Panics with [`GateOutcome::explain`] when a violation is found (or the audit cannot run),
/// using the default [`Gate`]: false-failure rate ≤ 1e-6 for a mechanism keeping its claim.
#[track_caller]
pub fn assert_claim_holds(mechanism: &dyn Mechanism, pairs: &[DatasetPair]) {
    match Gate::default().check(mechanism, pairs) {
        Ok(o) if !o.violation_found() => {}
        Ok(o) => panic!(
            "{} does not keep its claim {}:\n{}",
            mechanism.id(),
            mechanism.claim(),
            o.explain()
        ),
        Err(e) => panic!("dp-audit gate could not audit {}: {e}", mechanism.id()),
    }
}

/// `assert_dp!(mechanism, pair, ...)`: [`assert_claim_holds`] with pairs listed inline.
#[macro_export]
macro_rules! assert_dp {
    ($mechanism:expr, $($pair:expr),+ $(,)?) => {
        $crate::gate::assert_claim_holds(&$mechanism, &[$($pair.clone()),+])
    };
}
