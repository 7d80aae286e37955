//! Unit tests of `dpsgd_variants.rs`.

use super::*;

fn build(id: &str, assignments: &[&str]) -> Entry {
    super::super::build(id, &Params::parse(assignments).unwrap())
        .unwrap_or_else(|e| panic!("{id} {assignments:?}: {e}"))
}

#[test]
fn defaults_print() {
    for s in specs() {
        let e = build(s.id, &[]);
        eprintln!("{} {:?} {}", s.id, e.mechanism.claim(), e.status.word());
        if let Status::Buggy { true_guarantee, .. } = &e.status {
            eprintln!("   {true_guarantee}");
        }
    }
}
