//! `audit accountant`: DP-SGD's ε from the RDP accountant (and the exact Gaussian value at q = 1).

use std::fmt::Write as _;

use clap::Args;
use serde_json::json;

use super::{Outcome, to_json};
use crate::error::Result;

/// Options of `audit accountant`.
#[derive(Debug, Args)]
pub struct AccountantArgs {
    /// Sampling rate q in (0, 1] (1 = full batch).
    #[arg(allow_hyphen_values = true, long)]
    pub sampling_rate: f64,
    /// Noise multiplier z > 0 (noise std = z · clipping norm).
    #[arg(allow_hyphen_values = true, long)]
    pub noise_multiplier: f64,
    /// Number of steps T ≥ 1.
    #[arg(allow_hyphen_values = true, long)]
    pub steps: u64,
    /// δ in (0, 1).
    #[arg(allow_hyphen_values = true, long)]
    pub delta: f64,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn accountant(a: &AccountantArgs) -> Result<Outcome> {
    use crate::mechanisms::accountant::{
        RdpAccountant, gaussian_exact_epsilon, gaussian_zcdp_rho, zcdp_to_epsilon,
    };
    let bad = |flag: &str, v: f64, allowed: &str| {
        Err(crate::error::Error::InvalidConfig(format!(
            "{flag} {v}; allowed: {allowed}"
        )))
    };
    if !(a.sampling_rate > 0.0 && a.sampling_rate <= 1.0) {
        return bad("--sampling-rate", a.sampling_rate, "0 < q ≤ 1");
    }
    if !(a.noise_multiplier.is_finite() && a.noise_multiplier > 0.0) {
        return bad(
            "--noise-multiplier",
            a.noise_multiplier,
            "a finite number > 0",
        );
    }
    if !(a.delta > 0.0 && a.delta < 1.0) {
        return bad("--delta", a.delta, "0 < δ < 1");
    }
    if a.steps == 0 {
        return bad("--steps", 0.0, "a whole number ≥ 1");
    }
    let mut acc = RdpAccountant::new();
    acc.compose_poisson_gaussian(a.sampling_rate, a.noise_multiplier, a.steps)?;
    let (eps, order) = acc.epsilon(a.delta)?;
    // q = 1: T Gaussian steps are exactly (√T/z)-GDP (Dong, Roth & Su 2019), and
    // ρ = T/(2z²)-zCDP (Bun & Steinke 2016).
    let full = a.sampling_rate == 1.0;
    let exact = if full {
        Some(gaussian_exact_epsilon(
            a.noise_multiplier,
            a.steps,
            a.delta,
        )?)
    } else {
        None
    };
    let zcdp = if full {
        let rho = gaussian_zcdp_rho(a.noise_multiplier) * a.steps as f64;
        Some((rho, zcdp_to_epsilon(rho, a.delta)?))
    } else {
        None
    };
    let stdout = if a.json {
        to_json(&json!({
            "sampling_rate": a.sampling_rate,
            "noise_multiplier": a.noise_multiplier,
            "steps": a.steps,
            "delta": a.delta,
            "rdp": {"epsilon": eps, "order": order,
                    "method": "RDP of the Poisson-subsampled Gaussian (Mironov, Talwar & Zhang 2019), composed over steps, converted with Balle et al. 2020 / Canonne, Kamath & Steinke 2020"},
            "exact_gaussian": exact.map(|e| json!({"epsilon": e, "method": "exact Gaussian privacy profile, mu = sqrt(T)/z (Balle & Wang 2018; Dong, Roth & Su 2019)"})),
            "zcdp": zcdp.map(|(rho, e)| json!({"rho": rho, "epsilon": e, "method": "rho = T/(2 z^2) (Bun & Steinke 2016), converted through RDP at the best order"})),
        }))?
    } else {
        let mut s = format!(
            "Poisson-subsampled Gaussian: q = {}, z = {}, T = {}, δ = {}\n",
            a.sampling_rate, a.noise_multiplier, a.steps, a.delta
        );
        let _ = writeln!(
            s,
            "RDP accountant   ε = {eps:.7}  (optimal order {order}; Mironov, Talwar & Zhang 2019; conversion of Balle et al. 2020)"
        );
        if let Some(e) = exact {
            let _ = writeln!(
                s,
                "exact Gaussian   ε = {e:.7}  (μ = √T/z = {:.6}; analytic Gaussian, Balle & Wang 2018)",
                (a.steps as f64).sqrt() / a.noise_multiplier
            );
        }
        if let Some((rho, e)) = zcdp {
            let _ = writeln!(
                s,
                "zCDP             ε = {e:.7}  (ρ = {rho:.6e}; Bun & Steinke 2016)"
            );
        }
        s
    };
    Ok(Outcome::new(stdout, 0))
}
