//! Non-adaptive finders: fixed pairs, a grid, uniform random points, a Halton sequence, and
//! typical records drawn from a data sample.

use rand::RngExt;

use super::{DatasetFinder, PairSpace};
use crate::error::{Error, Result};
use crate::mechanisms::{Dataset, DatasetPair, Neighboring};
use crate::rng::AuditRng;

/// Replays given pairs in order (the catalogue witness, or pairs from a file).
#[derive(Debug)]
pub struct FixedFinder {
    pairs: Vec<DatasetPair>,
    next: usize,
}

impl FixedFinder {
    /// Errors when `pairs` is empty.
    pub fn new(pairs: Vec<DatasetPair>) -> Result<Self> {
        if pairs.is_empty() {
            return Err(Error::InvalidConfig(
                "the fixed finder needs at least one pair (--pairs FILE, or a catalogue witness)"
                    .into(),
            ));
        }
        Ok(Self { pairs, next: 0 })
    }
}

impl DatasetFinder for FixedFinder {
    fn name(&self) -> &'static str {
        "fixed"
    }
    fn ask(&mut self) -> Result<Option<DatasetPair>> {
        let p = self.pairs.get(self.next).cloned();
        self.next += 1;
        Ok(p)
    }
    fn tell(&mut self, _score: f64) {}
    fn next_is_independent(&self) -> bool {
        true
    }
}

/// A regular grid over the pair space with `levels` values per coordinate, visited in an order
/// that spreads early points (coordinates as digits of a mixed-radix counter, most significant
/// last). `levels` is the largest number with levels^m ≤ trials (at least 2).
#[derive(Debug)]
pub struct GridFinder {
    space: PairSpace,
    levels: usize,
    next: u64,
    total: u64,
}

impl GridFinder {
    /// A grid with about `trials` points.
    pub fn new(space: PairSpace, trials: usize) -> Self {
        let m = space.dim() as f64;
        let levels = ((trials.max(1) as f64).powf(1.0 / m).floor() as usize).max(2);
        let total = (levels as f64).powf(m).min(u64::MAX as f64 / 2.0) as u64;
        Self {
            space,
            levels,
            next: 0,
            total,
        }
    }
}

impl DatasetFinder for GridFinder {
    fn name(&self) -> &'static str {
        "grid"
    }
    fn ask(&mut self) -> Result<Option<DatasetPair>> {
        if self.next >= self.total {
            return Ok(None);
        }
        let mut k = self.next;
        self.next += 1;
        let l = self.levels as u64;
        let u: Vec<f64> = (0..self.space.dim())
            .map(|_| {
                let digit = k % l;
                k /= l;
                digit as f64 / (l - 1) as f64
            })
            .collect();
        self.space.decode(&u).map(Some)
    }
    fn tell(&mut self, _score: f64) {}
    fn next_is_independent(&self) -> bool {
        true
    }
}

/// Uniform random points of the pair space.
#[derive(Debug)]
pub struct RandomFinder {
    space: PairSpace,
    rng: AuditRng,
}

impl RandomFinder {
    /// Draws from `rng`.
    pub fn new(space: PairSpace, rng: AuditRng) -> Self {
        Self { space, rng }
    }
}

impl DatasetFinder for RandomFinder {
    fn name(&self) -> &'static str {
        "random"
    }
    fn ask(&mut self) -> Result<Option<DatasetPair>> {
        let u: Vec<f64> = (0..self.space.dim()).map(|_| self.rng.random()).collect();
        self.space.decode(&u).map(Some)
    }
    fn tell(&mut self, _score: f64) {}
    fn next_is_independent(&self) -> bool {
        true
    }
}

/// Random vertices of the record box: every coordinate of every record is the range's lower or
/// upper end, each with probability ½. Bugs tend to show at the edges of the range (the largest
/// sensitivity, threshold queries pushed to opposite sides), which uniform draws reach rarely in
/// high dimension.
#[derive(Debug)]
pub struct CornersFinder {
    space: PairSpace,
    rng: AuditRng,
}

impl CornersFinder {
    /// Draws from `rng`.
    pub fn new(space: PairSpace, rng: AuditRng) -> Self {
        Self { space, rng }
    }
}

impl DatasetFinder for CornersFinder {
    fn name(&self) -> &'static str {
        "corners"
    }
    fn ask(&mut self) -> Result<Option<DatasetPair>> {
        let u: Vec<f64> = (0..self.space.dim())
            .map(|_| if self.rng.random::<bool>() { 1.0 } else { 0.0 })
            .collect();
        self.space.decode(&u).map(Some)
    }
    fn tell(&mut self, _score: f64) {}
    fn next_is_independent(&self) -> bool {
        true
    }
}

/// The Halton low-discrepancy sequence (radical inverses in the first m primes), starting at
/// index 1. Hand-written: it is a dozen lines and no maintained crate offers it for rand 0.10.
#[derive(Debug)]
pub struct HaltonFinder {
    space: PairSpace,
    index: u64,
    primes: Vec<u64>,
}

fn first_primes(m: usize) -> Vec<u64> {
    let mut ps = Vec::with_capacity(m);
    let mut c = 2u64;
    while ps.len() < m {
        if ps
            .iter()
            .take_while(|&&p| p * p <= c)
            .all(|&p| !c.is_multiple_of(p))
        {
            ps.push(c);
        }
        c += 1;
    }
    ps
}

/// Radical inverse of `i` in base `b`.
fn radical_inverse(mut i: u64, b: u64) -> f64 {
    let (mut f, mut r) = (1.0, 0.0);
    while i > 0 {
        f /= b as f64;
        r += f * (i % b) as f64;
        i /= b;
    }
    r
}

impl HaltonFinder {
    /// The sequence over `space`.
    pub fn new(space: PairSpace) -> Self {
        Self {
            primes: first_primes(space.dim()),
            space,
            index: 1,
        }
    }
}

impl DatasetFinder for HaltonFinder {
    fn name(&self) -> &'static str {
        "halton"
    }
    fn ask(&mut self) -> Result<Option<DatasetPair>> {
        let i = self.index;
        self.index += 1;
        let u: Vec<f64> = self.primes.iter().map(|&b| radical_inverse(i, b)).collect();
        self.space.decode(&u).map(Some)
    }
    fn tell(&mut self, _score: f64) {}
    fn next_is_independent(&self) -> bool {
        true
    }
}

/// The `from-data` finder (formerly `typical`, still accepted as an alias): the base dataset and
/// the differing record are drawn from a given data sample instead of chosen adversarially.
/// It proposes *fixed pairs* that are then audited against the ordinary worst-case claim, one
/// pair at a time; it does not test Bayesian DP (the typical case averaged over x' ~ μ), which
/// is `audit run --claim bdp:EPS:DELTA --data FILE` ([`crate::audit::bayesian`]).
#[derive(Debug)]
pub struct TypicalFinder {
    data: Dataset,
    size: usize,
    relation: Neighboring,
    rng: AuditRng,
}

impl TypicalFinder {
    /// Draws datasets of `size` records (and the differing record) from the rows of `data`,
    /// uniformly with replacement.
    pub fn new(data: Dataset, size: usize, relation: Neighboring, rng: AuditRng) -> Result<Self> {
        if data.is_empty() {
            return Err(Error::InvalidConfig(
                "typical-record mode needs a non-empty data sample".into(),
            ));
        }
        if relation == Neighboring::ReplaceOne && size == 0 {
            return Err(Error::InvalidConfig(
                "dataset size 0 with replace-one neighbors; allowed: ≥ 1".into(),
            ));
        }
        Ok(Self {
            data,
            size,
            relation,
            rng,
        })
    }
}

impl DatasetFinder for TypicalFinder {
    fn name(&self) -> &'static str {
        "from-data"
    }
    fn ask(&mut self) -> Result<Option<DatasetPair>> {
        let n = self.data.len();
        let d = self.data.dim();
        for _ in 0..100 {
            let rows: Vec<Vec<f64>> = (0..=self.size)
                .map(|_| self.data.record(self.rng.random_range(0..n)).to_vec())
                .collect();
            let base = Dataset::vectors(d, &rows[..self.size])?;
            let extra = &rows[self.size];
            let (first, second) = match self.relation {
                Neighboring::AddRemove => (base.clone(), base.with_record(extra)?),
                Neighboring::ReplaceOne => {
                    if *extra == rows[self.size - 1] {
                        continue; // no change; draw again
                    }
                    (base.clone(), base.with_replaced(self.size - 1, extra)?)
                }
                // D holds a typical record, D′ the null record in its place.
                Neighboring::ZeroOut => {
                    let null = Neighboring::null_record(d);
                    if *extra == null {
                        continue; // no change; draw again
                    }
                    (base.with_record(extra)?, base.with_record(&null)?)
                }
            };
            return Ok(Some(DatasetPair::new(first, second, self.relation)?));
        }
        Err(Error::InvalidConfig(
            "typical-record mode: the data sample has no two distinct records to swap".into(),
        ))
    }
    fn tell(&mut self, _score: f64) {}
    fn next_is_independent(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::RecordDomain;
    use rand::SeedableRng;

    fn space() -> PairSpace {
        PairSpace::new(RecordDomain::real(0.0, 1.0, 1), 1, Neighboring::AddRemove).unwrap()
    }

    #[test]
    fn halton_is_the_van_der_corput_sequence_in_base_2() {
        let r: Vec<f64> = (1..5).map(|i| radical_inverse(i, 2)).collect();
        assert_eq!(r, vec![0.5, 0.25, 0.75, 0.125]);
        assert_eq!(first_primes(5), vec![2, 3, 5, 7, 11]);
    }

    #[test]
    fn grid_covers_corners_and_stops() {
        let mut g = GridFinder::new(space(), 9);
        let mut n = 0;
        let mut saw_edge = false;
        while let Some(p) = g.ask().unwrap() {
            n += 1;
            saw_edge |= p.second().record(1)[0] == 1.0 && p.first().record(0)[0] == 0.0;
        }
        assert_eq!(n, 9);
        assert!(saw_edge);
    }

    #[test]
    fn random_and_typical_are_seeded() {
        let draw = |seed| {
            let mut f = RandomFinder::new(space(), AuditRng::seed_from_u64(seed));
            f.ask().unwrap().unwrap()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
        let data = Dataset::scalars(vec![0.1, 0.2, 0.3]).unwrap();
        let mut t =
            TypicalFinder::new(data, 2, Neighboring::ReplaceOne, AuditRng::seed_from_u64(3))
                .unwrap();
        let p = t.ask().unwrap().unwrap();
        assert_eq!(p.first().len(), 2);
        assert!(FixedFinder::new(vec![]).is_err());
    }
}
