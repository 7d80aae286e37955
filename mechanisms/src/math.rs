//! Small numerical helpers shared by claims, calibrations and the catalogue: the accounting
//! crate's ([`dp_audit_accounting::math`]: the normal CDF, the Gaussian-DP curve, the analytic
//! Gaussian calibration, how numbers are printed), and the edit distance of the catalogue's
//! suggestions.

pub use dp_audit_accounting::math::*;

/// Levenshtein edit distance, used to suggest the closest catalogue ids.
///
/// Hand-written because it is eight lines and the mechanisms crate is a leaf that should not
/// pull a string-metrics dependency for one error message.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("dpsgd", "dpsgd"), 0);
    }
}
