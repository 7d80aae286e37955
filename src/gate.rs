//! Gating in `cargo test`: fail a downstream test when a mechanism change breaks its claim.
//!
//! Put `dp-audit` in `[dev-dependencies]`, implement [`Mechanism`] for your mechanism (or wrap
//! it), pick one or more neighboring pairs where a bug would show (an added record at the edge of
//! the range, a query stream that crosses a threshold), and write:
//!
//! ```
//! use dp_audit::gate::{Gate, assert_claim_holds};
//! use dp_audit::mechanisms::snapping::SnappingLaplace;
//! use dp_audit::{Dataset, DatasetPair, Mechanism, Neighboring, PrivacyClaim, RecordDomain, Samples};
//! use dp_audit::mechanisms::{Result, rand::Rng};
//!
//! /// My noisy count: |D| + Laplace noise of scale 1/ε, by the snapping mechanism (float-safe).
//! #[derive(Debug)]
//! struct NoisyCount { epsilon: f64, noise_epsilon: f64 }
//!
//! impl Mechanism for NoisyCount {
//!     fn id(&self) -> &str { "my-noisy-count" }
//!     fn claim(&self) -> PrivacyClaim {
//!         // The snapping mechanism's guarantee at ε: ε·(1 + 2^-49·B), rounded up.
//!         let epsilon = SnappingLaplace::new(self.epsilon, 1024.0).map_or(f64::NAN, |s| s.epsilon());
//!         PrivacyClaim::Pure { epsilon }
//!     }
//!     fn neighboring(&self) -> Neighboring { Neighboring::AddRemove }
//!     fn domain(&self) -> RecordDomain { RecordDomain::real(0.0, 1.0, 1) }
//!     fn output_dim(&self) -> usize { 1 }
//!     fn sample(&self, data: &Dataset, n: usize, rng: &mut dyn Rng) -> Result<Samples> {
//!         let noise = SnappingLaplace::new(self.noise_epsilon, 1024.0)?;
//!         let count = data.len() as f64;
//!         Ok(Samples::from_column((0..n).map(|_| noise.release(count, rng)).collect()))
//!     }
//! }
//!
//! let d = Dataset::scalars(vec![0.5; 3])?;
//! let pair = DatasetPair::new(d.clone(), d.with_record(&[1.0])?, Neighboring::AddRemove)?;
//!
//! // Correct: noise for ε. Passes both layers (false-failure rate ≤ 1e-6).
//! assert_claim_holds(&NoisyCount { epsilon: 1.0, noise_epsilon: 1.0 }, &[pair.clone()]);
//!
//! // Someone halves the noise: the non-panicking form reports the violation, and its layer.
//! let outcome = Gate::default().check(&NoisyCount { epsilon: 1.0, noise_epsilon: 2.0 }, &[pair])?;
//! assert!(outcome.mechanism_violation());
//! println!("{}", outcome.explain());
//! # Ok::<(), dp_audit::Error>(())
//! ```
//!
//! # Two layers: the algorithm and its floating-point code
//! A mechanism is an algorithm on real numbers run in binary64, and either can break its claim
//! (see [`crate::record::layers`]). The gate checks both on the same releases, and
//! [`GateOutcome`] answers each separately:
//! - the **mechanism layer** sees the output values only (a wrong noise scale, sensitivity or
//!   budget shows here);
//! - the **floating-point layer** sees only the representation of the outputs (low mantissa
//!   bits, f32 exactness, dyadic grid, binade). Noise drawn in floating point and added to the
//!   exact answer (`statrs`' Laplace, `rand_distr`'s Normal) leaks the answer through which
//!   doubles can occur (Mironov 2012), and fails here although the algorithm is right. Draw the
//!   noise on a grid independent of the data instead: [`crate::mechanisms::snapping`] for
//!   Laplace, or integer noise (discrete Laplace, discrete Gaussian) on an integer-valued query.
//!   Integer outputs have an exact representation; the layer is skipped for them, and says so.
//!   Told to the `dp_audit` Python package ([`Audience::Python`]), the same advice names its
//!   `dp_audit.noise` samplers, which are these.
//!
//! [`assert_claim_holds`] fails on either layer. To gate the algorithm alone (a mechanism kept
//! in the real-valued model on purpose, a prototype whose noise will be replaced), use
//! `Gate::default().check_layers(Check::Mechanism)` and [`assert_gate_passes`].
//!
//! # What a failure means, and how often a correct mechanism fails
//! The gate runs a confirming audit (as [`crate::audit::audit_pair`] does) on each pair with
//! fresh samples, in each layer. With the defaults, the total failure probability β = 1e-6 is
//! split evenly over the pairs and the layers (and inside each audit over its bounds; a layer
//! skipped for integer outputs leaves its share unused), so **a mechanism that keeps its claim
//! fails the gate with probability at most 1e-6** over the randomness of the seed, whichever
//! layer fails. The seed is fixed
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

use crate::audit::{AuditConfig, AuditReport, Phase, Verdict, audit_drawn};
use crate::error::{Error, Result};
use crate::finders::layered::{FLOAT_COORDS, float_coords, name_events, view};
use crate::mechanisms::{DatasetPair, Mechanism, PrivacyClaim, Samples};
use crate::record::layers::integer_valued;
pub use crate::record::layers::{Check, LayerKind};
use crate::report::text::render_text;
use crate::rng::{Seed, Side, chunk_len, sample_parallel};
use crate::testers::{HockeyStickTester, PropertyTester};

/// Who reads the gate's advice: the fix [`GateOutcome::summary`] names for a violation found
/// in the floating-point layer alone is written in that reader's language (the Rust items, or
/// the `dp_audit` Python package's). Nothing else differs: the audits, the verdicts and the
/// records are the same.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Audience {
    /// Rust code (the default): `dp_audit::mechanisms::snapping`, `Gate::check_layers`.
    #[default]
    Rust,
    /// The `dp_audit` Python package: `dp_audit.noise.*`, `assert_dp(..., check="mechanism")`.
    Python,
}

/// A configured gate. See the module docs.
#[derive(Debug)]
pub struct Gate {
    seed: u64,
    samples_per_side: usize,
    failure_probability: f64,
    testers: Vec<Box<dyn PropertyTester>>,
    claim: Option<PrivacyClaim>,
    check: Check,
    audience: Audience,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            seed: Self::DEFAULT_SEED,
            samples_per_side: Self::DEFAULT_SAMPLES,
            failure_probability: Self::DEFAULT_FAILURE_PROBABILITY,
            testers: vec![Box::new(HockeyStickTester::default())],
            claim: None,
            check: Check::Both,
            audience: Audience::Rust,
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

    /// Which layers are checked (default [`Check::Both`], β split evenly over them):
    /// `Check::Mechanism` gates the algorithm alone, on its output values, with all of β.
    pub fn check_layers(mut self, check: Check) -> Self {
        self.check = check;
        self
    }

    /// Whose language the outcome's advice is written in (default [`Audience::Rust`]).
    pub fn audience(mut self, audience: Audience) -> Self {
        self.audience = audience;
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
        let layers = self.check.layers();
        let per_audit = self.failure_probability / (pairs.len() * layers.len()) as f64;
        let mut checked = Vec::with_capacity(pairs.len());
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
                failure_probability: per_audit,
            };
            config.validate(mechanism.output_dim())?;
            let claim = claim.validated()?;
            let seed = Seed(config.seed);
            let n = config.samples_per_side;
            // One draw per pair from the confirm streams; every layer views the same releases.
            let phase = Phase::Confirm(0);
            let p = sample_parallel(
                mechanism,
                pair.first(),
                n,
                seed,
                phase.stream_of(Side::First),
            )?;
            let q = sample_parallel(
                mechanism,
                pair.second(),
                n,
                seed,
                phase.stream_of(Side::Second),
            )?;
            let mut result = GatePair::default();
            for &kind in &layers {
                if kind == LayerKind::FloatingPoint && integer_valued(&[&p, &q]) {
                    result.float_skipped = Some(
                        "every release is an integer below 2^53 in magnitude, exactly represented: no representation to leak".into(),
                    );
                    continue;
                }
                // Wide outputs: the floating-point layer keeps the FLOAT_COORDS coordinates
                // whose representation differs most, chosen on a separate draw (the search
                // streams of this pair), never on the releases it then tests.
                let coords = if kind == LayerKind::FloatingPoint && p.dim() > FLOAT_COORDS {
                    let m = n.clamp(1, 20_000);
                    let search = Phase::Search(0);
                    let sp = sample_parallel(
                        mechanism,
                        pair.first(),
                        m,
                        seed,
                        search.stream_of(Side::First),
                    )?;
                    let sq = sample_parallel(
                        mechanism,
                        pair.second(),
                        m,
                        seed,
                        search.stream_of(Side::Second),
                    )?;
                    float_coords(&sp, &sq)
                } else {
                    None
                };
                let report = audit_layer(
                    mechanism,
                    &claim,
                    pair,
                    (&p, &q),
                    kind,
                    coords.as_deref(),
                    &self.testers,
                    &config,
                    phase,
                )?;
                match kind {
                    LayerKind::Mechanism => result.mechanism = Some(report),
                    LayerKind::FloatingPoint => result.floating_point = Some(report),
                }
            }
            checked.push(result);
        }
        Ok(GateOutcome {
            failure_probability: self.failure_probability,
            check: self.check,
            pairs: checked,
            audience: self.audience,
        })
    }
}

/// One layer's confirming audit of releases already drawn.
#[allow(clippy::too_many_arguments)]
fn audit_layer(
    mechanism: &dyn Mechanism,
    claim: &PrivacyClaim,
    pair: &DatasetPair,
    (p, q): (&Samples, &Samples),
    kind: LayerKind,
    coords: Option<&[usize]>,
    testers: &[Box<dyn PropertyTester>],
    config: &AuditConfig,
    phase: Phase,
) -> Result<AuditReport> {
    let (vp, names, transform) = view(kind, p, coords)?;
    let (vq, _, _) = view(kind, q, coords)?;
    let mut r = audit_drawn(
        mechanism,
        claim,
        pair,
        (&vp, &vq),
        testers,
        config,
        // Layers never share tester randomness (as in a layered run).
        phase.tester_base() + (kind.index() << 19),
    )?;
    name_events(&mut r, &names);
    r.output_transform = Some(transform);
    r.release_dim = Some(p.dim());
    r.mechanism_calls = 2 * config.samples_per_side.div_ceil(chunk_len(mechanism)) as u64;
    Ok(r)
}

/// What the gate found on one pair: each layer's audit.
#[derive(Debug, Default)]
pub struct GatePair {
    /// The mechanism layer's audit (the output values); `None` when not checked.
    pub mechanism: Option<AuditReport>,
    /// The floating-point layer's audit (the outputs' representation); `None` when not checked
    /// or skipped.
    pub floating_point: Option<AuditReport>,
    /// Why the floating-point layer was skipped (integer outputs), if it was.
    pub float_skipped: Option<String>,
}

impl GatePair {
    /// The audits run, mechanism layer first, each with its layer.
    pub fn layers(&self) -> Vec<(LayerKind, &AuditReport)> {
        let mut v = Vec::new();
        if let Some(r) = &self.mechanism {
            v.push((LayerKind::Mechanism, r));
        }
        if let Some(r) = &self.floating_point {
            v.push((LayerKind::FloatingPoint, r));
        }
        v
    }
}

/// What a gate found: per pair, each layer's audit.
#[derive(Debug)]
pub struct GateOutcome {
    /// Total β of the gate.
    pub failure_probability: f64,
    /// The layers checked.
    pub check: Check,
    /// One entry per pair, in order.
    pub pairs: Vec<GatePair>,
    /// Whose language [`Self::summary`]'s advice is written in.
    pub audience: Audience,
}

impl GateOutcome {
    /// True when any pair's audit, in any layer, found a violation.
    pub fn violation_found(&self) -> bool {
        self.mechanism_violation() || self.float_violation()
    }

    /// True when the mechanism layer (the algorithm, on the output values) found a violation.
    pub fn mechanism_violation(&self) -> bool {
        self.pairs
            .iter()
            .filter_map(|p| p.mechanism.as_ref())
            .any(|r| r.verdict == Verdict::Violation)
    }

    /// True when the floating-point layer (the outputs' representation) found a violation.
    pub fn float_violation(&self) -> bool {
        self.pairs
            .iter()
            .filter_map(|p| p.floating_point.as_ref())
            .any(|r| r.verdict == Verdict::Violation)
    }

    /// Every audit run, with its pair index and layer.
    pub fn reports(&self) -> impl Iterator<Item = (usize, LayerKind, &AuditReport)> {
        self.pairs
            .iter()
            .enumerate()
            .flat_map(|(i, p)| p.layers().into_iter().map(move |(k, r)| (i, k, r)))
    }

    /// The verdict in one sentence, naming the layer and what to do.
    pub fn summary(&self) -> String {
        match (self.mechanism_violation(), self.float_violation()) {
            (true, _) => "VIOLATION FOUND in the mechanism layer: the output values differ between the datasets more than the claim allows, so the algorithm itself (its noise scale, sensitivity or budget) breaks the claim. Fix the algorithm first".into(),
            (false, true) => format!(
                "VIOLATION FOUND in the floating-point layer: the values keep the claim, but the low-order bits or binade of the outputs reveal which dataset was used (noise computed in floating point on top of the exact answer, Mironov 2012). Fix: {}",
                match self.audience {
                    Audience::Rust => "draw the noise on a grid independent of the data (dp_audit::mechanisms::snapping, or discrete Laplace / Gaussian noise on an integer query); to gate the algorithm alone, use Gate::default().check_layers(Check::Mechanism)",
                    Audience::Python => "draw the noise on a grid independent of the data: dp_audit.noise.snapping_laplace(values, epsilon=..., bound=..., seed=seed) for Laplace noise on a real-valued query, or dp_audit.noise.discrete_laplace(values, scale=..., seed=seed) / dp_audit.noise.discrete_gaussian(values, sigma=..., seed=seed) on an integer-valued query; to gate the algorithm alone, use dp_audit.assert_dp(..., check=\"mechanism\")",
                }
            ),
            (false, false) => format!(
                "no violation found ({}): no bound exceeded what the claim allows on the pairs given",
                match self.check {
                    Check::Both => "mechanism and floating-point layers",
                    Check::Mechanism => "mechanism layer only",
                    Check::Float => "floating-point layer only",
                }
            ),
        }
    }

    /// A readable account: the verdict naming the layer, then per pair and layer the bounds
    /// against what the claim allows, and how to reproduce.
    pub fn explain(&self) -> String {
        let layers = self.check.layers().len();
        let mut s = format!(
            "dp-audit gate: {}\n{} pair(s) × {} layer(s), β = {} split evenly over them ({} per audit)\n",
            self.summary(),
            self.pairs.len(),
            layers,
            self.failure_probability,
            crate::mechanisms::math::readable(
                self.failure_probability / (self.pairs.len() * layers).max(1) as f64
            )
        );
        for (i, p) in self.pairs.iter().enumerate() {
            for (kind, r) in p.layers() {
                s += &format!(
                    "\n--- pair {i}, {} layer ---\n{}",
                    match kind {
                        LayerKind::Mechanism => "mechanism (the output values)",
                        LayerKind::FloatingPoint => "floating-point (the outputs' representation)",
                    },
                    render_text(r)
                );
                s += &format!(
                    "reproduce    the gate is deterministic: seed {} (pair {i}), {} samples per side, β = {} for this audit; rerun the same test",
                    r.seed, r.samples_per_side, r.beta.total
                );
                if crate::mechanisms::catalogue::ids().contains(&r.mechanism.id.as_str()) {
                    s += &format!(
                        ", or (with the same --param values, if any): audit run --mechanism {} --claim {} --seed {} --samples {} --check {}",
                        r.mechanism.id, r.mechanism.claim, r.seed, r.samples_per_side, self.check
                    );
                }
                s.push('\n');
            }
            if let Some(why) = &p.float_skipped {
                s += &format!("\n--- pair {i}, floating-point layer: skipped: {why}\n");
            }
        }
        s
    }
}

/// Panics with [`GateOutcome::explain`] when a violation is found in either layer (or the
/// audit cannot run), using the default [`Gate`]: false-failure rate ≤ 1e-6 for a mechanism
/// keeping its claim, over both layers. To gate the algorithm alone, see
/// [`assert_gate_passes`] with `Gate::default().check_layers(Check::Mechanism)`.
#[track_caller]
pub fn assert_claim_holds(mechanism: &dyn Mechanism, pairs: &[DatasetPair]) {
    assert_gate_passes(&Gate::default(), mechanism, pairs);
}

/// [`assert_claim_holds`] with a configured gate (other layers, samples, β or seed).
#[track_caller]
pub fn assert_gate_passes(gate: &Gate, mechanism: &dyn Mechanism, pairs: &[DatasetPair]) {
    match gate.check(mechanism, pairs) {
        Ok(o) if !o.violation_found() => {}
        Ok(o) => panic!(
            "{} does not keep its claim {}:\n{}",
            mechanism.id(),
            gate.claim.unwrap_or_else(|| mechanism.claim()),
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
