//! The learned score: the logit of a logistic-regression discriminator fitted on the training
//! rows (the event-search form's score for vector outputs, and the variational form's
//! discriminator).

use serde::{Deserialize, Serialize};

use crate::testers::rows::Rows;

/// Most training rows per side the discriminator is fitted on.
const FIT_ROWS_PER_SIDE: usize = 10_000;
/// Budget on rows × features of the fit (both sides together): the rows per side are cut to
/// max(1000, FIT_CELLS / (2 × features)) for wide outputs.
const FIT_CELLS: usize = 1_000_000;
/// L-BFGS iteration cap of the fit.
const FIT_MAX_ITERATIONS: u64 = 100;

/// A logistic-regression discriminator's logit on standardized coordinates and their squares:
/// s(x) = b + Σ_k w_k z_k + v_k (z_k² − a_k)/c_k with z_k = (x_{j_k} − μ_k)/σ_k; every constant
/// is estimated on training rows only.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct LearnedScore {
    pub(super) coords: Vec<usize>,
    pub(super) mean: Vec<f64>,
    pub(super) sd: Vec<f64>,
    pub(super) sq_mean: Vec<f64>,
    pub(super) sq_sd: Vec<f64>,
    pub(super) w_lin: Vec<f64>,
    pub(super) w_sq: Vec<f64>,
    pub(super) intercept: f64,
    /// Training rows per side the fit used.
    pub(super) rows_per_side: usize,
    /// True in the variational form: the event is the class-weighted decision {logit ≥ ε}.
    pub(super) decision: bool,
}

impl LearnedScore {
    pub(super) fn logit(&self, row: &ndarray::ArrayView1<'_, f64>) -> f64 {
        let mut s = self.intercept;
        for (k, &j) in self.coords.iter().enumerate() {
            let z = (row[j] - self.mean[k]) / self.sd[k];
            s += self.w_lin[k] * z + self.w_sq[k] * (z * z - self.sq_mean[k]) / self.sq_sd[k];
        }
        s
    }

    /// The same discriminator with the labels swapped: every parameter negated.
    pub(super) fn negated(&self) -> Self {
        let neg = |v: &[f64]| v.iter().map(|w| -w).collect();
        Self {
            w_lin: neg(&self.w_lin),
            w_sq: neg(&self.w_sq),
            intercept: -self.intercept,
            ..self.clone()
        }
    }

    pub(super) fn describe(&self, t: f64) -> String {
        let what = format!(
            "logistic-regression discriminator fitted on {0} + {0} training rows (features: coordinates {1:?} standardized, and their squares)",
            self.rows_per_side, self.coords
        );
        if self.decision {
            format!(
                "the class-weighted decision of a {what}: logit ≥ ε = {t:.6} (variational form)"
            )
        } else {
            format!("logit of a {what} ≥ {t:.6}")
        }
    }
}

/// Fits the discriminator of `a` (label 1) against `b` (label 0) on the first half (at most) of
/// their training rows `0..na` and `0..nb`, with features the coordinates `coords`
/// (standardized) and their squares; the other training rows choose its threshold (see
/// [`Score::selection_start`](super::score::Score::selection_start)).
///
/// Cost bound: at most [`FIT_ROWS_PER_SIDE`] rows per side and about [`FIT_CELLS`] feature cells
/// in all, [`FIT_MAX_ITERATIONS`] L-BFGS iterations. The rows are the first m training rows of
/// each side: the rows are i.i.d., so this deterministic prefix is a uniform subsample, and
/// equal counts make the classes balanced (the logit then estimates ln(p/q)). `None` when no
/// coordinate varies or the fit fails; the candidate is then skipped.
pub(super) fn fit_learned(
    a: Rows<'_>,
    na: usize,
    b: Rows<'_>,
    nb: usize,
    coords: &[usize],
    decision: bool,
) -> Option<LearnedScore> {
    if coords.is_empty() {
        return None;
    }
    let features = 2 * coords.len();
    let m = (na / 2)
        .min(nb / 2)
        .min(FIT_ROWS_PER_SIDE)
        .min((FIT_CELLS / (2 * features)).max(1000));
    if m < 2 {
        return None;
    }
    let rows = 2 * m;
    let value = |i: usize, j: usize| {
        if i < m { a.get(i, j) } else { b.get(i - m, j) }
    };
    // Pooled standardization of each coordinate and of its square (training rows only).
    let moments = |f: &dyn Fn(usize) -> f64| {
        let mean = (0..rows).map(f).sum::<f64>() / rows as f64;
        let var = (0..rows).map(|i| (f(i) - mean).powi(2)).sum::<f64>() / rows as f64;
        (mean, var.sqrt())
    };
    let mut kept = Vec::new();
    let (mut mean, mut sd, mut sq_mean, mut sq_sd) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &j in coords {
        let (mu, sigma) = moments(&|i| value(i, j));
        if !(sigma > 0.0 && sigma.is_finite() && mu.is_finite()) {
            continue;
        }
        let z = |i: usize| (value(i, j) - mu) / sigma;
        let (a2, c2) = moments(&|i| z(i) * z(i));
        if !(c2 > 0.0 && c2.is_finite()) {
            // z² constant (a coordinate with two values): keep only the linear term.
            kept.push(j);
            mean.push(mu);
            sd.push(sigma);
            sq_mean.push(0.0);
            sq_sd.push(f64::INFINITY);
            continue;
        }
        kept.push(j);
        mean.push(mu);
        sd.push(sigma);
        sq_mean.push(a2);
        sq_sd.push(c2);
    }
    if kept.is_empty() {
        return None;
    }
    let k = kept.len();
    let x = ndarray::Array2::from_shape_fn((rows, 2 * k), |(i, f)| {
        let c = f % k;
        let z = (value(i, kept[c]) - mean[c]) / sd[c];
        if f < k {
            z
        } else if sq_sd[c].is_finite() {
            (z * z - sq_mean[c]) / sq_sd[c]
        } else {
            0.0
        }
    });
    let y = ndarray::Array1::from_shape_fn(rows, |i| usize::from(i < m));
    let dataset = linfa::Dataset::new(x, y);
    // The loss is a sum over rows, so the L2 penalty α = 1 is negligible at these sizes; it only
    // keeps the problem strongly convex (separable data). Gradient tolerance relative to the rows.
    let model = linfa::traits::Fit::fit(
        &linfa_logistic::LogisticRegression::default()
            .alpha(1.0)
            .max_iterations(FIT_MAX_ITERATIONS)
            .gradient_tolerance(1e-6 * rows as f64),
        &dataset,
    )
    .ok()?;
    let w = model.params();
    let intercept = model.intercept();
    if !intercept.is_finite() || w.iter().any(|v| !v.is_finite()) {
        return None;
    }
    Some(LearnedScore {
        coords: kept,
        mean,
        sd,
        sq_mean,
        sq_sd,
        w_lin: w.iter().take(k).copied().collect(),
        w_sq: w.iter().skip(k).copied().collect(),
        intercept,
        rows_per_side: m,
        decision,
    })
}
