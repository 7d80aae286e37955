//! The default finder for programs dp-audit has never seen: structured proposals where real
//! bugs live, then uniform random search and Bayesian optimization, sharing one budget.
//!
//! Sensitivity, clamping and rounding bugs show on datasets a uniform draw almost never makes
//! (Casacuberta et al. 2022, "Widespread underestimation of sensitivity in differentially private
//! libraries"): every record at one end of the range, at zero or at one level; all records equal
//! but one; records that cancel (half at each end); the empty and the one-record dataset; large
//! sums whose low bits are lost; and, under add-remove, alternating blocks of records with the
//! first one removed, which shifts every later record's position (computations that chunk the
//! data by position, such as TensorFlow Privacy's microbatches); and the same differing record
//! against moved batch partners (the records common to both datasets at the centre, at
//! alternating ends, or at the centre of one coordinate and an end of the others), where
//! components that couple a batch's examples show (batch normalization, contrastive losses,
//! shared gradient buffers). The portfolio proposes those first, in order of how often such
//! bugs show there, then interleaves:
//! - structured pairs at random levels and sizes (a constant base at a uniform level, the
//!   differing record at an end, at the base's mirror image or at another uniform level);
//! - uniform random pairs in the record box ([`super::RandomFinder`]);
//! - Bayesian optimization ([`super::BayesFinder`]) on the exploratory scores it was told.
//!
//! Every proposal is a neighboring pair inside the record domain; which pair is scored never
//! touches the confirm phase's samples, so the portfolio changes power, not soundness
//! (see [`super::search_and_confirm`]).
//!
//! Sizes: under add-remove the structured list uses the requested size N and the small sizes 0,
//! 1 and 2, and the random levels draw sizes among 1, 2, 3, the powers of two below N and N; the
//! box finders (random, Bayes) work on (size + 1) × dim coordinates, so they run at min(N, 64)
//! and min(N, 16) records. Under replace-one every proposal has N records (bounded DP is a claim
//! about datasets of that size, and per-record outputs change dimension with it), and the box
//! finders run only when N ≤ 64 and N ≤ 16 respectively.

use rand::RngExt;

use super::{BayesFinder, DatasetFinder, PairSpace, RandomFinder};
use crate::error::Result;
use crate::mechanisms::{Dataset, DatasetPair, Neighboring, RecordDomain};
use crate::rng::AuditRng;

/// Largest size the uniform random member searches at (its box has (size + 1)·dim coordinates).
const RANDOM_MAX_SIZE: usize = 64;
/// Largest size the Bayesian member searches at (a GP in more dimensions learns little in the
/// few dozen evaluations a budget allows).
const BAYES_MAX_SIZE: usize = 16;

/// Which member proposed a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Member {
    Structured,
    Random,
    Bayes,
}

/// Batch partners, the differing record in D and the one in D′ (proposal 8 of the fixed list).
type PartnerSet = (Vec<Vec<f64>>, Vec<f64>, Vec<f64>);

/// Structured proposals, then structured-random, uniform random and Bayesian proposals in turn.
#[derive(Debug)]
pub struct PortfolioFinder {
    domain: RecordDomain,
    size: usize,
    relation: Neighboring,
    structured: Vec<DatasetPair>,
    next_structured: usize,
    random: Option<RandomFinder>,
    bayes: Option<BayesFinder>,
    rng: AuditRng,
    turn: usize,
    /// The members that proposed the pairs whose scores are not told yet, oldest first (so
    /// `tell` reaches the member that learns).
    pending: std::collections::VecDeque<Member>,
}

/// Appends `p` to `out` unless it is there already (or is None).
fn push_new(out: &mut Vec<DatasetPair>, p: Option<DatasetPair>) {
    if let Some(p) = p
        && !out.contains(&p)
    {
        out.push(p);
    }
}

/// The proposals of families 1 to 5 (`marks`: where families 2 to 6 begin in `list`) taken in
/// turn, one of each family per round (constant at the ends, the smallest datasets, one record
/// moved to an end, records that cancel, the centre), then the rest in order: a slow program
/// whose budget scores a handful of pairs still sees each kind of structured dataset among the
/// first (the pair at the range's ends stays first).
fn interleave(list: Vec<DatasetPair>, marks: &[usize]) -> Vec<DatasetPair> {
    let [a, b, c, d, e] = marks else {
        return list;
    };
    let (a, b, c, d, e) = (*a, *b, *c, *d, *e);
    // Families 1 (ends), 3 (smallest), 5 (one moved), 4 (cancel), 2 (centre).
    let families: [std::ops::Range<usize>; 5] = [0..a, b..c, d..e, c..d, a..b];
    let mut out = Vec::with_capacity(list.len());
    let longest = families.iter().map(|r| r.len()).max().unwrap_or(0);
    for k in 0..longest {
        for r in &families {
            if let Some(p) = list.get(r.start + k).filter(|_| k < r.len()) {
                out.push(p.clone());
            }
        }
    }
    out.extend(list[e..].iter().cloned());
    out
}

impl PortfolioFinder {
    /// A portfolio over records of `domain`, datasets of `size` records (D) and `relation`.
    /// Errors when no neighboring pair of that size fits the domain.
    pub fn new(
        domain: RecordDomain,
        size: usize,
        relation: Neighboring,
        mut rng: AuditRng,
    ) -> Result<Self> {
        if relation == Neighboring::ZeroOut {
            super::check_zero_out(&domain)?;
        }
        // The members draw from streams split off the portfolio's own generator, so the order
        // in which they are asked never changes what each one proposes.
        let child = |rng: &mut AuditRng| -> AuditRng {
            use rand::SeedableRng;
            AuditRng::seed_from_u64(rng.random())
        };
        // Under replace-one every dataset keeps the declared size: the claim of bounded DP is
        // about datasets of that size, and a program whose output has one entry per record (local
        // DP, per-record releases) has an output dimension that changes with the size. The box
        // members then run only where the box at that size is small enough.
        let box_space = |cap: usize| {
            let s = if relation == Neighboring::ReplaceOne {
                if size > cap {
                    return None;
                }
                size.max(1)
            } else {
                size.min(cap)
            };
            PairSpace::new(domain, s, relation).ok()
        };
        let random = box_space(RANDOM_MAX_SIZE).map(|sp| RandomFinder::new(sp, child(&mut rng)));
        let bayes = box_space(BAYES_MAX_SIZE).map(|sp| BayesFinder::new(sp, child(&mut rng)));
        let mut f = Self {
            domain,
            size,
            relation,
            structured: Vec::new(),
            next_structured: 0,
            random,
            bayes,
            rng,
            turn: 0,
            pending: std::collections::VecDeque::new(),
        };
        f.structured = f.fixed_proposals();
        if f.structured.is_empty() && f.random.is_none() {
            return Err(crate::error::Error::InvalidConfig(format!(
                "--dataset-size {size}: no {relation} pair of that size fits the record domain (datasets of {} to {} records)",
                domain.min_size, domain.max_size
            )));
        }
        Ok(f)
    }

    /// Number of fixed structured proposals asked before the members take turns.
    pub fn fixed_len(&self) -> usize {
        self.structured.len()
    }

    fn lo(&self) -> f64 {
        self.domain.lower
    }

    fn hi(&self) -> f64 {
        self.domain.upper
    }

    fn level(&self, v: f64) -> f64 {
        let v = v.clamp(self.lo(), self.hi());
        if self.domain.integer { v.round() } else { v }
    }

    /// A record with every coordinate at `v` (the diagonal of the box).
    fn record(&self, v: f64) -> Vec<f64> {
        vec![self.level(v); self.domain.dim]
    }

    /// The pair (D, D') with D = `base` and D' = D plus `x` (add-remove), D with its record
    /// `replace` replaced by `x` (replace-one), or D = `base` plus `x` and D' = `base` plus the
    /// null record (zero-out); `None` when it does not fit the domain.
    fn pair(&self, base: &[Vec<f64>], x: &[f64], replace: usize) -> Option<DatasetPair> {
        let mut d = Dataset::vectors(self.domain.dim, base).ok()?;
        let second = match self.relation {
            Neighboring::AddRemove => d.with_record(x).ok()?,
            Neighboring::ReplaceOne => {
                if base.is_empty() || base[replace.min(base.len() - 1)] == x {
                    return None;
                }
                d.with_replaced(replace.min(base.len() - 1), x).ok()?
            }
            Neighboring::ZeroOut => {
                let null = Neighboring::null_record(self.domain.dim);
                if x == null.as_slice() {
                    return None;
                }
                let second = d.with_record(&null).ok()?;
                d = d.with_record(x).ok()?;
                second
            }
        };
        self.domain.check(&d).ok()?;
        self.domain.check(&second).ok()?;
        DatasetPair::new(d, second, self.relation).ok()
    }

    fn constant(&self, v: f64, n: usize) -> Vec<Vec<f64>> {
        vec![self.record(v); n]
    }

    /// The fixed proposals, most telling first: the families below taken in turn
    /// ([`interleave`]), so that a slow program's few trials see each kind.
    fn fixed_proposals(&self) -> Vec<DatasetPair> {
        let (lo, hi) = (self.lo(), self.hi());
        let mid = self.level(0.5 * (lo + hi));
        let zero = (lo < 0.0 && 0.0 < hi).then_some(0.0);
        let centre = zero.unwrap_or(mid);
        let mut out: Vec<DatasetPair> = Vec::new();
        self.push_constant_at_ends(&mut out);
        let mut marks = vec![out.len()];
        self.push_constant_at_centre(&mut out, centre);
        marks.push(out.len());
        self.push_smallest(&mut out, centre);
        marks.push(out.len());
        self.push_cancelling(&mut out);
        marks.push(out.len());
        self.push_all_equal_but_one(&mut out, centre);
        marks.push(out.len());
        self.push_order_dependent(&mut out, centre);
        self.push_vertices(&mut out, centre);
        self.push_batch_partners(&mut out);
        interleave(out, &marks)
    }

    /// Whether datasets of any size are proposed (add-remove and zero-out); replace-one keeps
    /// the declared size.
    fn adds(&self) -> bool {
        self.relation != Neighboring::ReplaceOne
    }

    /// The position of the replaced record (replace-one) in a dataset of the declared size: the
    /// last; under add-remove it is unused.
    fn last(&self) -> usize {
        self.size.saturating_sub(1)
    }

    /// 1. Constant datasets at an end, the differing record at the other end.
    fn push_constant_at_ends(&self, out: &mut Vec<DatasetPair>) {
        let (lo, hi, n, last) = (self.lo(), self.hi(), self.size, self.last());
        push_new(
            out,
            self.pair(&self.constant(lo, n), &self.record(hi), last),
        );
        push_new(
            out,
            self.pair(&self.constant(hi, n), &self.record(lo), last),
        );
    }

    /// 2. At zero or the middle of the range (`centre`), the differing record at either end.
    fn push_constant_at_centre(&self, out: &mut Vec<DatasetPair>, centre: f64) {
        let (lo, hi, n, last) = (self.lo(), self.hi(), self.size, self.last());
        push_new(
            out,
            self.pair(&self.constant(centre, n), &self.record(hi), last),
        );
        push_new(
            out,
            self.pair(&self.constant(centre, n), &self.record(lo), last),
        );
    }

    /// 3. The smallest datasets (add-remove only; replace-one keeps the declared size): empty,
    ///    one and two records.
    fn push_smallest(&self, out: &mut Vec<DatasetPair>, centre: f64) {
        let (lo, hi) = (self.lo(), self.hi());
        for k in [0usize, 1, 2] {
            if !self.adds() {
                continue;
            }
            let at = k.saturating_sub(1);
            push_new(out, self.pair(&self.constant(lo, k), &self.record(hi), at));
            push_new(out, self.pair(&self.constant(hi, k), &self.record(lo), at));
            push_new(
                out,
                self.pair(&self.constant(centre, k), &self.record(hi), at),
            );
        }
    }

    /// 4. Records that cancel: half at each end (sum 0 on a symmetric range), the differing
    ///    record at an end.
    fn push_cancelling(&self, out: &mut Vec<DatasetPair>) {
        let (lo, hi, n) = (self.lo(), self.hi(), self.size);
        if n >= 2 {
            let mut base = self.constant(lo, n / 2);
            base.extend(self.constant(hi, n - n / 2));
            push_new(out, self.pair(&base, &self.record(hi), 0));
            push_new(out, self.pair(&base, &self.record(lo), n - 1));
        }
    }

    /// 5. All records equal but one (at the other end), then the differing record.
    fn push_all_equal_but_one(&self, out: &mut Vec<DatasetPair>, centre: f64) {
        let (lo, hi, n) = (self.lo(), self.hi(), self.size);
        if n >= 2 {
            let mut base = self.constant(lo, n - 1);
            base.push(self.record(hi));
            push_new(out, self.pair(&base, &self.record(hi), 0));
            let mut base = self.constant(centre, n - 1);
            base.push(self.record(lo));
            push_new(out, self.pair(&base, &self.record(hi), 0));
        }
    }

    /// 6. Order-dependent processing (microbatches, blocks, windows taken by position):
    ///    blocks of p records at the centre and p at the upper end, alternating, against the
    ///    same list without its first record (add-remove), which moves every later record
    ///    one position: each block of a chunked computation then sees a different mix.
    fn push_order_dependent(&self, out: &mut Vec<DatasetPair>, centre: f64) {
        let (hi, n) = (self.hi(), self.size);
        if self.adds() {
            let mut p = 1;
            while 2 * p <= n.max(2) && p <= 8 {
                let full: Vec<Vec<f64>> = (0..n.max(2 * p))
                    .map(|i| self.record(if (i / p) % 2 == 0 { centre } else { hi }))
                    .collect();
                let pair = Dataset::vectors(self.domain.dim, &full[1..])
                    .ok()
                    .zip(Dataset::vectors(self.domain.dim, &full).ok())
                    .filter(|(a, b)| self.domain.check(a).is_ok() && self.domain.check(b).is_ok())
                    .and_then(|(a, b)| DatasetPair::new(a, b, self.relation).ok());
                push_new(out, pair);
                p *= 2;
            }
        }
    }

    /// 7. Vector records: the differing record at a vertex off the diagonal, and at its
    ///    mirror image (coordinates with different roles, e.g. a time step and a value, put
    ///    the worst record at either one).
    fn push_vertices(&self, out: &mut Vec<DatasetPair>, centre: f64) {
        let (lo, hi, n, last) = (self.lo(), self.hi(), self.size, self.last());
        if self.domain.dim > 1 {
            let alt: Vec<f64> = (0..self.domain.dim)
                .map(|j| if j % 2 == 0 { hi } else { lo })
                .collect();
            let mirror: Vec<f64> = alt.iter().map(|&v| lo + hi - v).collect();
            push_new(out, self.pair(&self.constant(centre, n), &alt, last));
            push_new(out, self.pair(&self.constant(lo, n), &alt, last));
            push_new(out, self.pair(&self.constant(centre, n), &mirror, last));
            push_new(out, self.pair(&self.constant(lo, n), &mirror, last));
        }
    }

    /// 8. Batch partners: the differing record is kept (at the first position, swinging from
    ///    the lower corner to the upper one) while the records common to both datasets, its
    ///    batch partners, are moved: to the centre, to alternating ends (opposite signs), and
    ///    for vector records to the centre in one coordinate and the lower end in the others
    ///    (the record then at the upper end there). Components that couple a batch's examples
    ///    (batch statistics in the forward pass, losses over pairs of examples, gradient
    ///    buffers shared across micro-steps) let the record move its partners' clipped
    ///    gradients, by an amount that depends on where the partners sit; the proposals above
    ///    only move the record against constant partners at its own starting level.
    fn push_batch_partners(&self, out: &mut Vec<DatasetPair>) {
        let n = self.size;
        for (partners, from, to) in self.partner_sets(n) {
            let base: Vec<Vec<f64>> = if self.adds() {
                partners
            } else {
                std::iter::once(from).chain(partners).take(n).collect()
            };
            push_new(out, self.pair(&base, &to, 0));
        }
    }

    /// The batch-partner sets of proposal 8: (partners, the differing record in D, in D′). Under
    /// add-remove and zero-out the partners are D's n records and the record the one added;
    /// under replace-one they are n − 1 records after it.
    fn partner_sets(&self, n: usize) -> Vec<PartnerSet> {
        let (lo, hi) = (self.lo(), self.hi());
        let dim = self.domain.dim;
        let centre = if lo < 0.0 && 0.0 < hi {
            0.0
        } else {
            self.level(0.5 * (lo + hi))
        };
        let count = if self.relation == Neighboring::ReplaceOne {
            n.saturating_sub(1)
        } else {
            n.max(2)
        };
        let mut sets = vec![
            (
                self.constant(centre, count),
                self.record(lo),
                self.record(hi),
            ),
            (
                (0..count)
                    .map(|i| self.record(if i % 2 == 0 { lo } else { hi }))
                    .collect(),
                self.record(lo),
                self.record(hi),
            ),
        ];
        if dim > 1 {
            for j in [0, dim - 1] {
                let at = |vj: f64, rest: f64| -> Vec<f64> {
                    (0..dim)
                        .map(|c| self.level(if c == j { vj } else { rest }))
                        .collect()
                };
                sets.push((vec![at(centre, lo); count], at(lo, hi), at(hi, hi)));
            }
        }
        sets
    }

    /// A structured pair at random: a constant base at a uniform level and a size among 1, 2,
    /// 3, the powers of two below N and N; the differing record at an end, at the mirror image
    /// of the level, or at another uniform level.
    fn random_structured(&mut self) -> Option<DatasetPair> {
        let mut sizes: Vec<usize> = Vec::new();
        if self.relation != Neighboring::ReplaceOne {
            sizes.extend([1, 2, 3]);
            let mut p = 4;
            while p < self.size {
                sizes.push(p);
                p *= 2;
            }
        }
        sizes.push(self.size.max(1));
        for _ in 0..16 {
            let k = sizes[self.rng.random_range(0..sizes.len())];
            let (lo, hi) = (self.lo(), self.hi());
            let u: f64 = self.rng.random();
            let a = self.level(lo + u * (hi - lo));
            let x = match self.rng.random_range(0..4) {
                0 => lo,
                1 => hi,
                2 => lo + hi - a,
                _ => lo + self.rng.random::<f64>() * (hi - lo),
            };
            let near = self.rng.random_range(0..2) == 1 && k >= 2;
            let mut base = self.constant(a, k);
            if near {
                // All equal but one record, at an end.
                let end = if self.rng.random_range(0..2) == 0 {
                    lo
                } else {
                    hi
                };
                base[0] = self.record(end);
            }
            let replace = k - 1;
            if let Some(p) = self.pair(&base, &self.record(x), replace) {
                return Some(p);
            }
        }
        None
    }
}

impl DatasetFinder for PortfolioFinder {
    fn name(&self) -> &'static str {
        "portfolio"
    }

    fn ask(&mut self) -> Result<Option<DatasetPair>> {
        if self.next_structured < self.structured.len() {
            self.next_structured += 1;
            self.pending.push_back(Member::Structured);
            return Ok(Some(self.structured[self.next_structured - 1].clone()));
        }
        // Then in turn: structured at random, uniform random, Bayes (members that cannot run at
        // this size are skipped).
        for _ in 0..3 {
            let t = self.turn % 3;
            self.turn += 1;
            match t {
                0 => {
                    if let Some(p) = self.random_structured() {
                        self.pending.push_back(Member::Structured);
                        return Ok(Some(p));
                    }
                }
                1 => {
                    if let Some(r) = &mut self.random
                        && let Some(p) = r.ask()?
                    {
                        self.pending.push_back(Member::Random);
                        return Ok(Some(p));
                    }
                }
                _ => {
                    if let Some(b) = &mut self.bayes
                        && let Some(p) = b.ask()?
                    {
                        self.pending.push_back(Member::Bayes);
                        return Ok(Some(p));
                    }
                }
            }
        }
        Ok(None)
    }

    fn next_is_independent(&self) -> bool {
        // The structured list and the random members never learn; the Bayesian member does,
        // and proposes at turns ≡ 2 (mod 3), or when a random member cannot run.
        self.next_structured < self.structured.len()
            || self.bayes.is_none()
            || (self.turn % 3 != 2 && self.random.is_some())
    }

    fn tell(&mut self, score: f64) {
        match self.pending.pop_front().unwrap_or(Member::Structured) {
            Member::Structured => {}
            Member::Random => {
                if let Some(r) = &mut self.random {
                    r.tell(score);
                }
            }
            Member::Bayes => {
                if let Some(b) = &mut self.bayes {
                    b.tell(score);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::finders::finder_rng;

    fn finder(lo: f64, hi: f64, dim: usize, n: usize, rel: Neighboring) -> PortfolioFinder {
        let domain = RecordDomain::real(lo, hi, dim).with_sizes(0, 1_000_000);
        PortfolioFinder::new(domain, n, rel, finder_rng(7)).unwrap()
    }

    #[test]
    fn first_proposals_are_constant_datasets_at_the_ends() {
        let mut f = finder(-5.0, 5.0, 1, 10, Neighboring::AddRemove);
        let p = f.ask().unwrap().unwrap();
        assert_eq!(p.first().column(0), vec![-5.0; 10]);
        assert_eq!(p.second().column(0).last(), Some(&5.0));
        // Then one of each structured family in turn: the smallest datasets (the empty one),
        // one record moved to an end, records that cancel, the centre (zero when the range
        // holds it).
        let p = f.ask().unwrap().unwrap();
        assert_eq!(p.first().len(), 0, "{p:?}");
        let p = f.ask().unwrap().unwrap();
        let d = p.first().column(0);
        assert_eq!(d.iter().filter(|&&x| x == -5.0).count(), 9, "{p:?}");
        let p = f.ask().unwrap().unwrap();
        let d = p.first().column(0);
        assert_eq!(d.iter().filter(|&&x| x == 5.0).count(), 5, "{p:?}");
        let p = f.ask().unwrap().unwrap();
        assert_eq!(
            p.first().column(0),
            vec![0.0; 10],
            "zero when the range holds it"
        );
        // The second round starts at the other end.
        let p = f.ask().unwrap().unwrap();
        assert_eq!(p.first().column(0), vec![5.0; 10]);
    }

    #[test]
    fn every_proposal_is_a_neighboring_pair_in_the_domain_and_sizes_vary() {
        for rel in [
            Neighboring::AddRemove,
            Neighboring::ReplaceOne,
            Neighboring::ZeroOut,
        ] {
            for (dim, n) in [(1, 4096), (3, 5), (1, 1)] {
                let domain = RecordDomain::real(0.0, 1.0, dim).with_sizes(0, 1_000_000);
                let mut f = PortfolioFinder::new(domain, n, rel, finder_rng(1)).unwrap();
                let mut sizes = std::collections::BTreeSet::new();
                for _ in 0..200 {
                    let p = f.ask().unwrap().expect("the portfolio never runs dry");
                    f.tell(0.0);
                    domain.check(p.first()).unwrap();
                    domain.check(p.second()).unwrap();
                    assert_eq!(p.relation(), rel);
                    // Zero-out: D holds the differing record, D' the null record in its place.
                    let base = if rel == Neighboring::ZeroOut {
                        let null = Neighboring::null_record(dim);
                        assert!(p.second().to_rows().contains(&null), "{p:?}");
                        p.first().len() - 1
                    } else {
                        p.first().len()
                    };
                    sizes.insert(base);
                }
                if rel != Neighboring::ReplaceOne {
                    assert!(sizes.len() >= 3, "{rel:?} {dim} {n}: sizes {sizes:?}");
                } else {
                    assert_eq!(sizes.len(), 1, "replace-one keeps the size: {sizes:?}");
                }
                assert!(sizes.contains(&n), "{sizes:?}");
            }
        }
    }

    /// Proposal 8 keeps the differing record (first position, lower corner to upper corner)
    /// and moves its partners: centre, alternating ends, and for vectors the centre of one
    /// coordinate with the lower end of the others.
    #[test]
    fn batch_partner_proposals_move_the_common_records() {
        let pairs = finder(-1.0, 1.0, 2, 8, Neighboring::ReplaceOne).fixed_proposals();
        let has = |d0: [f64; 2], d1: [f64; 2], partners: &dyn Fn(usize) -> [f64; 2]| {
            pairs.iter().any(|p| {
                let (a, b) = (p.first().to_rows(), p.second().to_rows());
                a[0] == d0
                    && b[0] == d1
                    && (1..8).all(|i| a[i] == partners(i - 1) && b[i] == partners(i - 1))
            })
        };
        assert!(has([-1.0, -1.0], [1.0, 1.0], &|_| [0.0, 0.0]), "centre");
        assert!(
            has([-1.0, -1.0], [1.0, 1.0], &|i| if i % 2 == 0 {
                [-1.0, -1.0]
            } else {
                [1.0, 1.0]
            }),
            "alternating"
        );
        assert!(
            has([-1.0, 1.0], [1.0, 1.0], &|_| [0.0, -1.0]),
            "mixed, j = 0"
        );
        assert!(
            has([1.0, -1.0], [1.0, 1.0], &|_| [-1.0, 0.0]),
            "mixed, j = 1"
        );
        // Add-remove: the partners are D, the record is added.
        let pairs = finder(0.0, 1.0, 1, 4, Neighboring::AddRemove).fixed_proposals();
        assert!(pairs.iter().any(|p| {
            p.first().column(0) == [0.0, 1.0, 0.0, 1.0]
                && p.second().column(0) == [0.0, 1.0, 0.0, 1.0, 1.0]
        }));
    }

    #[test]
    fn the_same_seed_proposes_the_same_pairs() {
        let run = || {
            let mut f = finder(0.0, 1.0, 2, 8, Neighboring::ReplaceOne);
            (0..60)
                .map(|i| {
                    let p = f.ask().unwrap().unwrap();
                    f.tell(i as f64 * 0.01);
                    p
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }
}
