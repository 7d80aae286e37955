//! Held-out counts asked for later, counted in the pass an earlier count makes over the same
//! rows ([`Pooled`]): the verdict's event and the ε estimate's are both chosen on the training
//! split, so both can be counted when the held-out rows are first read.

use std::sync::Mutex;

use super::{HeldOut, HeldOutEvents};
use crate::error::Result;

/// One held-out count: (second side, limit, events), as [`HeldOut::count`] takes it.
pub(crate) type Query = (bool, usize, HeldOutEvents);

/// Finds the counts a later stage will ask for, run once, before the first count.
pub(crate) type Ahead<'a> = Box<dyn FnOnce() -> Vec<Query> + Send + 'a>;

/// A [`HeldOut`] that counts the queries `ahead` names in the same pass as the first count of
/// their side, keeps their results, and answers them from there when they are asked.
///
/// Soundness does not rest on `ahead`: every answer is the count `inner` gives for the same
/// (side, limit, events) — integer counts of the same rows, however they are grouped — and a
/// query `ahead` did not name, or named differently, is counted when asked.
pub(crate) struct Pooled<'a> {
    inner: &'a dyn HeldOut,
    ahead: Mutex<Option<Ahead<'a>>>,
    /// Queries named ahead and not yet counted.
    wanted: Mutex<Vec<Query>>,
    /// Queries counted ahead, with their counts.
    done: Mutex<Vec<(Query, (u64, u64))>>,
}

impl<'a> Pooled<'a> {
    pub(crate) fn new(inner: &'a dyn HeldOut, ahead: Ahead<'a>) -> Self {
        Self {
            inner,
            ahead: Mutex::new(Some(ahead)),
            wanted: Mutex::new(Vec::new()),
            done: Mutex::new(Vec::new()),
        }
    }
}

impl HeldOut for Pooled<'_> {
    fn rows(&self, second: bool) -> usize {
        self.inner.rows(second)
    }

    fn count(&self, second: bool, limit: usize, events: &HeldOutEvents) -> Result<(u64, u64)> {
        let ahead = self.ahead.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(ahead) = ahead {
            let named = ahead();
            self.wanted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .extend(named);
        }
        let same = |q: &Query| q.0 == second && q.1 == limit && q.2 == *events;
        {
            let done = self.done.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, c)) = done.iter().find(|(q, _)| same(q)) {
                return Ok(*c);
            }
        }
        // This query and every one wanted on this side, in one pass.
        let mut along: Vec<Query> = Vec::new();
        {
            let mut wanted = self.wanted.lock().unwrap_or_else(|e| e.into_inner());
            let mut k = 0;
            while k < wanted.len() {
                if wanted[k].0 == second {
                    let q = wanted.swap_remove(k);
                    if !same(&q) && !along.iter().any(|a| a.1 == q.1 && a.2 == q.2) {
                        along.push(q);
                    }
                } else {
                    k += 1;
                }
            }
        }
        let mut queries: Vec<(usize, &HeldOutEvents)> = vec![(limit, events)];
        queries.extend(along.iter().map(|q| (q.1, &q.2)));
        let counts = self.inner.count_many(second, &queries)?;
        let mine = counts.first().copied().unwrap_or((0, 0));
        self.done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(along.into_iter().zip(counts.into_iter().skip(1)));
        Ok(mine)
    }
}

/// A [`HeldOut`] that counts nothing: it records the queries asked of it and answers (0, 0), so
/// that a stage run on it names the counts it will ask for (its choices are made on the training
/// split, before any count).
pub(crate) struct Recorder<'a> {
    inner: &'a dyn HeldOut,
    asked: Mutex<Vec<Query>>,
}

impl<'a> Recorder<'a> {
    pub(crate) fn new(inner: &'a dyn HeldOut) -> Self {
        Self {
            inner,
            asked: Mutex::new(Vec::new()),
        }
    }

    /// The queries asked so far, in order.
    pub(crate) fn asked(self) -> Vec<Query> {
        self.asked.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

impl HeldOut for Recorder<'_> {
    fn rows(&self, second: bool) -> usize {
        self.inner.rows(second)
    }

    fn count(&self, second: bool, limit: usize, events: &HeldOutEvents) -> Result<(u64, u64)> {
        self.asked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((second, limit, events.clone()));
        Ok((0, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mechanisms::Samples;
    use crate::testers::Tail;

    /// A [`HeldOut`] that counts how many passes are made over its rows.
    struct Passes<'a> {
        inner: Tail<'a>,
        passes: Mutex<usize>,
    }

    impl HeldOut for Passes<'_> {
        fn rows(&self, second: bool) -> usize {
            self.inner.rows(second)
        }
        fn count(&self, second: bool, limit: usize, events: &HeldOutEvents) -> Result<(u64, u64)> {
            *self.passes.lock().unwrap() += 1;
            self.inner.count(second, limit, events)
        }
        fn count_many(
            &self,
            second: bool,
            queries: &[(usize, &HeldOutEvents)],
        ) -> Result<Vec<(u64, u64)>> {
            *self.passes.lock().unwrap() += 1;
            queries
                .iter()
                .map(|&(l, e)| self.inner.count(second, l, e))
                .collect()
        }
    }

    fn event(t: f64) -> HeldOutEvents {
        serde_json::from_str(&format!(
            r#"{{"first":[{{"coordinate":{{"j":0,"sign":1.0}}}},{t}]}}"#
        ))
        .unwrap()
    }

    /// Several queries counted in one pass, each distinct score evaluated once, give each
    /// query's own count: the same score at other thresholds, a pair of events, other rows.
    #[test]
    fn one_pass_counts_are_each_querys_count() {
        let s = Samples::from_column((0..50_000).map(|i| f64::from(i % 997)).collect());
        let pair: HeldOutEvents = serde_json::from_str(
            r#"{"first":[{"coordinate":{"j":0,"sign":1.0}},900.0],"second":[{"coordinate":{"j":0,"sign":-1.0}},-20.0]}"#,
        )
        .unwrap();
        let queries = [event(500.0), event(100.0), pair, event(996.0)];
        let ranges = [0..50_000, 1000..30_000, 5..49_999, 20_000..20_000];
        let refs: Vec<&HeldOutEvents> = queries.iter().collect();
        let prepared = crate::testers::PreparedEvents::new(&refs);
        let many = crate::testers::count_chunk_many(&s, &ranges, &prepared);
        for ((e, r), got) in queries.iter().zip(&ranges).zip(&many) {
            // The reference: each query's rows counted alone, row by row.
            assert_eq!(*got, e.count_rows(&s, r.clone()));
        }
        assert!(many[2].1 > 0 && many[2].0 > 0, "{many:?}");
    }

    /// Counts named ahead are made in the first pass over their side and answered from there,
    /// each the count the rows give; a query not named is counted when asked.
    #[test]
    fn named_counts_ride_along_and_equal_the_direct_counts() {
        let p = Samples::from_column((0..1000).map(f64::from).collect());
        let q = Samples::from_column((0..1000).map(|i| f64::from(i) / 2.0).collect());
        let tail = || Tail {
            p: (&p, 200),
            q: (&q, 300),
        };
        let direct = tail();
        let passes = Passes {
            inner: tail(),
            passes: Mutex::new(0),
        };
        let named = vec![
            (false, 700, event(500.0)),
            (true, 650, event(100.0)),
            (false, 800, event(250.0)),
        ];
        let ahead_named = named.clone();
        let pooled = Pooled::new(&passes, Box::new(move || ahead_named));
        let asked = [
            (false, 750, event(300.0)),
            (false, 700, event(500.0)),
            (true, 650, event(100.0)),
            (false, 800, event(250.0)),
            (true, 10, event(0.0)),
        ];
        for (second, limit, e) in &asked {
            let got = pooled.count(*second, *limit, e).unwrap();
            assert_eq!(got, direct.count(*second, *limit, e).unwrap());
        }
        // One pass per side for the first five, one for the query nobody named.
        assert_eq!(*passes.passes.lock().unwrap(), 3);
    }
}
