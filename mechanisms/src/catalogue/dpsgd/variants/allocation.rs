//! The ledger's noise allocation (seed 000 §4): a target noise multiplier z spread over k
//! groups of one step by a rule of [`crate::accounting::allocation`], each group recorded in
//! the ledger as its own Gaussian sum, and a twin whose allocation misses its target while its
//! ledger records the target.
//!
//! Groups (defaults): clip norms C = (1, 0.5, 0.25, 1) and dimensions d = (100, 10, 1000, 1),
//! full batches (q = 1), one step, target z the analytic σ of (1, 1e-5) (3.7306); each group is
//! modelled by one coordinate clipped to C_j (a group's privacy depends on its norm bound only,
//! not on how many coordinates share it).
//!
//! | id | noise σ_j | ledger | true guarantee |
//! |---|---|---|---|
//! | `dpsgd-noise-allocator` | dimensionality adjusted: z·√(Σ d)·C_j/√d_j | one `gaussian-sum` of z_j = σ_j/C_j per group: composes to z exactly | as claimed, (1, 1e-5) |
//! | `dpsgd-noise-allocator-reused-constant` | z·√k·C_j/√d_j: the proportional rule's constant √k where √(Σ d) belongs | the target z, as the allocator promised | μ = √(Σ d/k)/z = 4.47-GDP: δ ≥ 0.959 at ε = 1 |
//!
//! Derivation. Dividing group j by σ_j gives unit noise everywhere and moves group j by at most
//! C_j/σ_j when an example is added, so one step is one Gaussian mechanism of sensitivity
//! μ = (Σ_j (C_j/σ_j)²)^{1/2} and unit noise (seed 000 §3), i.e. μ-GDP, tight on the witness
//! (the all-ones record at every group's clip boundary, C_j ≤ 1). The correct allocation has
//! μ = 1/z by construction (σ_j rounded up: μ ≤ 1/z). The twin's Σ_j (C_j/σ_j)² =
//! Σ_j d_j/(z²k), so μ = √(Σ d/k)/z = √(1111/4)/3.7306 = 4.4674 at the defaults, while its ledger
//! says 1/z = 0.268: the exact Gaussian profile gives its δ at the claimed ε (status computed by
//! the family's `status`, the same exact profile).

use super::{DpSgdVariant, Variant, built, default_noise_multiplier, ones_witness};
use crate::accounting::allocation::{AllocationRule, Group, allocate};
use crate::catalogue::{Entry, Spec};
use crate::error::{MechanismError, Result};
use crate::mechanism::Params;

/// The allocator's default groups: (C_j, d_j).
const GROUPS: [(f64, u64); 4] = [(1.0, 100), (0.5, 10), (0.25, 1000), (1.0, 1)];

pub(super) fn specs() -> Vec<Spec> {
    vec![
        Spec {
            id: "dpsgd-noise-allocator",
            summary: "DP-SGD whose target noise multiplier is spread over 4 groups by dimension (seed 000 §4), each group in the ledger",
            build: allocator,
        },
        Spec {
            id: "dpsgd-noise-allocator-reused-constant",
            summary: "the dimension-adjusted allocator with the proportional rule's √k constant: its ledger records a target it misses",
            build: reused_constant,
        },
    ]
}

/// The groups, the target z (`noise_multiplier`, default the analytic σ of (1, 1e-5)) and δ.
fn settings(params: &mut Params, id: &'static str) -> Result<(Vec<Group>, f64, f64)> {
    let z = params.take_in(
        id,
        "noise_multiplier",
        default_noise_multiplier(id)?,
        1e-2,
        1e4,
    )?;
    let delta = params.take_in(id, "delta", 1e-5, 1e-12, 0.5)?;
    let groups = GROUPS
        .iter()
        .map(|&(clip, dim)| Group { clip, dim })
        .collect();
    Ok((groups, z, delta))
}

fn named(id: &'static str) -> impl Fn(crate::accounting::AccountingError) -> MechanismError {
    move |e| MechanismError::InvalidParameter {
        mechanism: id.into(),
        message: e.to_string(),
    }
}

/// `dpsgd-noise-allocator`: dimensionality-adjusted σ_j, each group in the ledger.
fn allocator(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-noise-allocator";
    let (groups, z, delta) = settings(params, id)?;
    let sigmas =
        allocate(AllocationRule::DimensionAdjusted, &groups, z).map_err(named(id))?;
    let variant = Variant::PerGroup {
        clips: groups.iter().map(|g| g.clip).collect(),
        sigmas,
        independent: false,
        ledger_z: None,
    };
    let m = DpSgdVariant::new(id, variant, 1.0, 1, 1.0, 1.0, delta)?;
    built(m, ones_witness(groups.len())?, None)
}

/// `dpsgd-noise-allocator-reused-constant`: σ_j = z·√k·C_j/√d_j, the ledger records z.
fn reused_constant(params: &mut Params) -> Result<Entry> {
    let id = "dpsgd-noise-allocator-reused-constant";
    let (groups, z, delta) = settings(params, id)?;
    let k = groups.len() as f64;
    // The bug: the proportional rule's √k in the dimension-adjusted rule (σ_j = α·C_j/√d_j with
    // α = z·√k instead of z·√(Σ d)).
    let sigmas: Vec<f64> = groups
        .iter()
        .map(|g| z * k.sqrt() * g.clip / (g.dim as f64).sqrt())
        .collect();
    let variant = Variant::PerGroup {
        clips: groups.iter().map(|g| g.clip).collect(),
        sigmas,
        independent: false,
        ledger_z: Some(z),
    };
    let m = DpSgdVariant::new(id, variant, 1.0, 1, 1.0, 1.0, delta)?;
    let bug = format!(
        "the dimensionality-adjusted allocator scales σ_j = α·C_j/√d_j with the proportional rule's α = z·√k instead of z·√(Σ d) (Σ d = {}), so the {} groups compose to noise multiplier z·√(k/Σ d) while the ledger records the target z = {z:.6}",
        groups.iter().map(|g| g.dim).sum::<u64>(),
        groups.len()
    );
    built(m, ones_witness(groups.len())?, Some(bug))
}
