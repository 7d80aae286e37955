//! Noise allocation over the groups of one sample (seed 000, McMahan, Andrew, Erlingsson,
//! Chien, Mironov, Papernot & Kairouz 2018, §3–§4): a step answers k Gaussian sum queries on
//! the same sample, group j clipped to C_j and noised with N(0, σ_j² I). §3 shows the k queries
//! are one Gaussian sum query of sensitivity 1 and noise multiplier
//!
//! ```text
//! z_eff = (Σ_j (C_j/σ_j)²)^(−1/2)
//! ```
//!
//! (divide group j by σ_j: every coordinate then has unit noise, and one example moves group j
//! by at most C_j/σ_j, so the whole vector by at most (Σ_j (C_j/σ_j)²)^(1/2): one Gaussian
//! mechanism of that sensitivity and unit noise, post-processed), so the ledger records
//! one `gaussian-sum` event of z_j = σ_j/C_j per group and the accountants compose them as one
//! query of z_eff. §4 allocates a target z over the groups:
//!
//! - **proportional**: σ_j = z·√k·C_j (every group has the same z_j = z√k);
//! - **dimensionality adjusted**: σ_j = α·C_j/√d_j with α = z·√(Σ_j d_j), noise proportional to
//!   the largest root-mean-square value C_j/√d_j a component of group j can have (d_j its
//!   dimension).
//!
//! Both give z_eff = z exactly in real arithmetic; [`allocate`] rounds every σ_j up, so the
//! allocated z_eff is never below the target (the safe side).

use crate::error::{AccountingError, Result};
use crate::ledger::LedgerEvent;

/// How a target noise multiplier is spread over the groups (§4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocationRule {
    /// σ_j = z·√k·C_j.
    Proportional,
    /// σ_j = z·√(Σ d)·C_j/√d_j.
    DimensionAdjusted,
}

/// One group of parameters or statistics: its clip norm C_j and its dimension d_j.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Group {
    /// C_j > 0.
    pub clip: f64,
    /// d_j ≥ 1.
    pub dim: u64,
}

fn bad(message: String) -> AccountingError {
    AccountingError::invalid("noise allocation", message)
}

/// The noise standard deviations σ_j of `groups` whose joint noise multiplier is `z` under
/// `rule`, each rounded up (so that [`effective_noise_multiplier`] of the result is ≥ z).
///
/// # Errors
/// No group, a clip norm not finite and > 0, a dimension 0, or z not finite and > 0.
pub fn allocate(rule: AllocationRule, groups: &[Group], z: f64) -> Result<Vec<f64>> {
    if groups.is_empty() {
        return Err(bad("no group; allowed: at least one".into()));
    }
    if !(z.is_finite() && z > 0.0) {
        return Err(bad(format!(
            "target noise multiplier z = {z}; allowed: finite and > 0"
        )));
    }
    if let Some(g) = groups
        .iter()
        .find(|g| !(g.clip.is_finite() && g.clip > 0.0))
    {
        return Err(bad(format!(
            "clip norm C = {}; allowed: finite and > 0",
            g.clip
        )));
    }
    if groups.iter().any(|g| g.dim == 0) {
        return Err(bad("a group of dimension 0; allowed: d ≥ 1".into()));
    }
    let k = groups.len() as f64;
    let total: f64 = groups.iter().map(|g| g.dim as f64).sum();
    // A relative margin of a few ulps per operation covers the rounding of the products and
    // square roots; each σ is then rounded up once more.
    let up = |x: f64| (x * (1.0 + 8.0 * f64::EPSILON)).next_up();
    Ok(groups
        .iter()
        .map(|g| match rule {
            AllocationRule::Proportional => up(z * k.sqrt() * g.clip),
            AllocationRule::DimensionAdjusted => {
                up(z * total.sqrt() * g.clip / (g.dim as f64).sqrt())
            }
        })
        .collect())
}

/// z_eff = (Σ_j (C_j/σ_j)²)^(−1/2): the noise multiplier of the one Gaussian sum query the k
/// groups amount to (§3).
///
/// # Errors
/// Different lengths, no group, or a value not finite and > 0.
pub fn effective_noise_multiplier(clips: &[f64], sigmas: &[f64]) -> Result<f64> {
    if clips.is_empty() || clips.len() != sigmas.len() {
        return Err(bad(format!(
            "{} clip norms and {} noise scales; allowed: the same number ≥ 1",
            clips.len(),
            sigmas.len()
        )));
    }
    if let Some(v) = clips
        .iter()
        .chain(sigmas)
        .find(|v| !(v.is_finite() && **v > 0.0))
    {
        return Err(bad(format!(
            "a clip norm or noise scale is {v}; allowed: finite and > 0"
        )));
    }
    let s: f64 = clips.iter().zip(sigmas).map(|(c, s)| (c / s).powi(2)).sum();
    Ok(1.0 / s.sqrt())
}

/// The ledger of `steps` steps at sampling rate `q` whose every step answers one Gaussian sum
/// per group, group j at noise multiplier z_j = σ_j/C_j: a sampling event, then one
/// `gaussian-sum` event per group (what seed 000's ledger records).
///
/// # Errors
/// As [`effective_noise_multiplier`]; q outside (0, 1] or steps = 0.
pub fn ledger_events(
    q: f64,
    steps: u64,
    clips: &[f64],
    sigmas: &[f64],
) -> Result<Vec<LedgerEvent>> {
    effective_noise_multiplier(clips, sigmas)?;
    if !(q > 0.0 && q <= 1.0) || steps == 0 {
        return Err(bad(format!(
            "q = {q}, steps = {steps}; allowed: 0 < q ≤ 1 and steps ≥ 1"
        )));
    }
    let mut events = vec![LedgerEvent::Sampling {
        probability: q,
        repetitions: steps,
    }];
    events.extend(
        clips
            .iter()
            .zip(sigmas)
            .map(|(c, s)| LedgerEvent::GaussianSum {
                noise_multiplier: s / c,
            }),
    );
    Ok(events)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Neighboring;
    use crate::pld::PldAccountant;

    fn groups() -> Vec<Group> {
        [(1.0, 100), (0.5, 10), (2.0, 1000), (1.0, 1)]
            .iter()
            .map(|&(clip, dim)| Group { clip, dim })
            .collect()
    }

    #[test]
    fn both_rules_reach_the_target_from_above() {
        for rule in [
            AllocationRule::Proportional,
            AllocationRule::DimensionAdjusted,
        ] {
            let g = groups();
            let sigmas = allocate(rule, &g, 1.3).unwrap();
            let clips: Vec<f64> = g.iter().map(|g| g.clip).collect();
            let z = effective_noise_multiplier(&clips, &sigmas).unwrap();
            assert!((1.3..1.3 * (1.0 + 1e-13)).contains(&z), "{rule:?}: {z}");
        }
        // Proportional: every group has z_j = z√k; dimensionality adjusted: σ_j ∝ C_j/√d_j.
        let s = allocate(AllocationRule::Proportional, &groups(), 1.0).unwrap();
        assert!((s[2] / 2.0 - 2.0).abs() < 1e-12);
        let s = allocate(AllocationRule::DimensionAdjusted, &groups(), 1.0).unwrap();
        let total = 1111.0_f64;
        assert!((s[3] - total.sqrt()).abs() < 1e-9, "{}", s[3]);
        assert!((s[2] - total.sqrt() * 2.0 / 1000f64.sqrt()).abs() < 1e-9);
        assert!(allocate(AllocationRule::Proportional, &[], 1.0).is_err());
        let zero = [Group { clip: 1.0, dim: 0 }];
        assert!(allocate(AllocationRule::DimensionAdjusted, &zero, 1.0).is_err());
    }

    /// §3 through the accountant: the ledger's k events of z_j compose to the ε of one event of
    /// z_eff (the PLD of k Gaussian sums on one sample is the PLD of one).
    #[test]
    fn the_ledgers_groups_account_as_one_query_of_the_effective_multiplier() {
        let g = groups();
        let clips: Vec<f64> = g.iter().map(|g| g.clip).collect();
        let sigmas = allocate(AllocationRule::DimensionAdjusted, &g, 1.1).unwrap();
        let events = ledger_events(0.01, 1000, &clips, &sigmas).unwrap();
        assert_eq!(events.len(), 5);
        let mut joint = PldAccountant::new(Neighboring::AddRemove);
        joint.compose_ledger(&events).unwrap();
        let mut one = PldAccountant::new(Neighboring::AddRemove);
        one.compose_poisson_gaussian(0.01, 1.1, 1000).unwrap();
        let (a, _) = joint.epsilon_bounds(1e-5).unwrap();
        let (b, _) = one.epsilon_bounds(1e-5).unwrap();
        assert!((a - b).abs() < 1e-3 * b, "{a} vs {b}");
    }
}
