//! Sampling is bit-identical for any number of threads: chunks come from their own seeded streams
//! and are concatenated in order.

use dp_audit::mechanisms::{Params, catalogue};
use dp_audit::rng::{Seed, Side, Stream, sample_parallel};

#[test]
fn one_and_two_threads_give_identical_samples() {
    let entry = catalogue::build("laplace-sum", &Params::new()).unwrap();
    let draw = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            sample_parallel(
                &*entry.mechanism,
                entry.witness.first(),
                50_001, // not a multiple of the chunk size
                Seed(42),
                Stream::Confirm {
                    trial: 0,
                    side: Side::First,
                    chunk: 0,
                },
            )
            .unwrap()
        })
    };
    let one = draw(1);
    let two = draw(2);
    assert_eq!(one.n(), 50_001);
    let bits = |s: &dp_audit::Samples| s.values().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&one), bits(&two));
}
