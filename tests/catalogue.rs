//! Every catalogue entry, audited on its witness with `audit run`'s default settings (seed 0,
//! 200 000 releases per side, β = 1e-3, hockey-stick tester): buggy entries are flagged and
//! correct ones are not. An entry whose bug lives in the float representation of its output is
//! audited through the output transform it recommends, as `audit run --mechanism` does (a fixed
//! post-processing: by the data-processing inequality its bounds are bounds on the mechanism).
//!
//! False-failure rate: for a correct entry the runner reports a violation with probability ≤ β =
//! 1e-3 over seeds, so the "no correct entry flagged" half fails for at most (number of correct
//! entries) × 1e-3 of seeds. The seed is fixed (the CLI's default), so the test is deterministic;
//! if it fails, investigate the entry, never the seed.

use dp_audit::audit::{AuditConfig, Verdict, audit_pair};
use dp_audit::mechanisms::catalogue;
use dp_audit::testers::transforms::with_recommended_transform;
use dp_audit::testers::{HockeyStickTester, PropertyTester};

#[test]
fn catalogue_verdicts_with_default_settings() {
    let config = AuditConfig::default();
    let testers: Vec<Box<dyn PropertyTester>> = vec![Box::new(HockeyStickTester::default())];
    let mut failures = Vec::new();
    let mut summary = String::new();
    for e in catalogue::catalogue().unwrap() {
        let (m, _) = with_recommended_transform(e.mechanism).unwrap();
        let m = &*m;
        let r = audit_pair(m, &m.claim(), &e.witness, &testers, &config).unwrap();
        let best = r
            .bounds
            .iter()
            .map(|b| b.value - b.allowed)
            .fold(f64::NEG_INFINITY, f64::max);
        summary += &format!(
            "{:32} {:7} {:13} max(bound − allowed) = {best:+.3e}\n",
            m.id(),
            e.status.word(),
            r.verdict.words()
        );
        let expected = if e.status.is_buggy() {
            Verdict::Violation
        } else {
            Verdict::NoViolation
        };
        if r.verdict != expected {
            failures.push(m.id().to_string());
        }
    }
    eprintln!("{summary}");
    assert!(
        failures.is_empty(),
        "wrong verdicts for {failures:?}\n{summary}"
    );
}
