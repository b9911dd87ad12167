//! The noise statistics of `benchlab compare`, for web and file suites
//! alike: the interval of a NEW ÷ BASE ratio from both runs' samples
//! (Welch's t on the log ratio), and the rule that calls a figure
//! regressed only beyond both the limit and that noise. Here, beside the
//! results' types, so that every reader of results (the report, the file
//! suites' compare) takes them from one place.

use serde::Serialize;

/// What `benchlab compare` says of one figure of NEW against BASE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Worse beyond both the limit and the noise.
    Regressed,
    /// Better beyond both the limit and the noise; never a regression.
    Improved,
    /// Within the limit or within the noise.
    Unchanged,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::Unchanged => "unchanged",
        }
    }
}

/// The regression rule of `benchlab compare` for one figure: NEW ÷ BASE is
/// `ratio`, and the noise of both runs puts it within `interval` (low,
/// high) at the confidence used; `None` where the noise is unknown, and the
/// limit alone decides. `higher_is_better` for a rate, not for a latency.
/// NEW regressed only when even the end of the interval most favourable to
/// it is worse than BASE by more than `max_regression` (a fraction);
/// improved when even the least favourable end is better by more than it.
pub fn regressed(ratio: f64, interval: Option<(f64, f64)>, higher_is_better: bool, max_regression: f64) -> Verdict {
    let (low, high) = interval.unwrap_or((ratio, ratio));
    let (best, worst) = if higher_is_better { (high, low) } else { (low, high) };
    let worse = |x: f64| {
        if higher_is_better {
            x < 1.0 - max_regression
        } else {
            x > 1.0 + max_regression
        }
    };
    let better = |x: f64| {
        if higher_is_better {
            x > 1.0 + max_regression
        } else {
            x < 1.0 - max_regression
        }
    };
    if worse(best) {
        Verdict::Regressed
    } else if better(worst) {
        Verdict::Improved
    } else {
        Verdict::Unchanged
    }
}

/// Squared coefficient of variation (sample variance ÷ mean²) of at least
/// two values with a positive mean.
pub fn cv2(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if mean.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    Some(var / (mean * mean))
}

/// The interval of `ratio` (NEW ÷ BASE) the samples of both sides allow at
/// `confidence`: Welch's t on the log ratio, each side's variance of the
/// log of its mean by the delta method (cv² ÷ n). A side with fewer than
/// two samples borrows the other side's relative spread (same noise, one
/// sample); `None` when neither side has two.
pub fn ratio_interval(ratio: f64, base: &[f64], new: &[f64], confidence: f64) -> Option<(f64, f64)> {
    let (cb, cn) = (cv2(base), cv2(new));
    // (variance of the log of the side's mean, its degrees of freedom).
    let side = |own: Option<f64>, n: usize, other: Option<f64>, other_n: usize| match own {
        Some(c) => Some((c / n as f64, (n - 1) as f64)),
        None => other.map(|c| (c / n.max(1) as f64, other_n.saturating_sub(1).max(1) as f64)),
    };
    let (vb, db) = side(cb, base.len(), cn, new.len())?;
    let (vn, dn) = side(cn, new.len(), cb, base.len())?;
    let var = vb + vn;
    let half = if var > 0.0 {
        let df = var * var / (vb * vb / db + vn * vn / dn);
        t_quantile((1.0 + confidence) / 2.0, df) * var.sqrt()
    } else {
        0.0
    };
    Some((ratio * (-half).exp(), ratio * half.exp()))
}

/// Quantile `p` (0.5–1) of Student's t with `df` degrees of freedom,
/// rounded down to a whole number (fewer is wider: the interval errs on the
/// side of calling no regression). Exact for 1 and 2; the Cornish–Fisher
/// expansion (Abramowitz & Stegun 26.7.5) from 3, within 1 % of the tables.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let nu = if df.is_finite() { df.floor().max(1.0) } else { 1e9 };
    if nu == 1.0 {
        return (std::f64::consts::PI * (p - 0.5)).tan();
    }
    if nu == 2.0 {
        return (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
    }
    let z = normal_quantile(p);
    let (z3, z5, z7, z9) = (z.powi(3), z.powi(5), z.powi(7), z.powi(9));
    let g1 = (z3 + z) / 4.0;
    let g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
    let g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
    let g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92160.0;
    z + g1 / nu + g2 / nu.powi(2) + g3 / nu.powi(3) + g4 / nu.powi(4)
}

/// Quantile `p` (0–1, exclusive) of the standard normal distribution, by
/// Acklam's rational approximation (relative error below 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p <= 1.0 - 0.02425 {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_the_tables() {
        let close = |a: f64, b: f64, tol: f64| (a - b).abs() <= tol * b.abs();
        assert!(close(normal_quantile(0.975), 1.959964, 1e-6));
        assert!(close(normal_quantile(0.995), 2.575829, 1e-6));
        assert!(close(normal_quantile(0.01), -2.326348, 1e-6));
        // Student's t, two-sided 95 % and 99 %.
        for (df, t95, t99) in [
            (1.0, 12.706, 63.657),
            (2.0, 4.303, 9.925),
            (3.0, 3.182, 5.841),
            (4.0, 2.776, 4.604),
            (10.0, 2.228, 3.169),
            (30.0, 2.042, 2.750),
        ] {
            assert!(
                close(t_quantile(0.975, df), t95, 0.01),
                "df {df}: {}",
                t_quantile(0.975, df)
            );
            assert!(
                close(t_quantile(0.995, df), t99, 0.01),
                "df {df}: {}",
                t_quantile(0.995, df)
            );
        }
        // A fractional df rounds down (wider).
        assert_eq!(t_quantile(0.975, 2.7), t_quantile(0.975, 2.0));
    }

    #[test]
    fn the_interval_widens_with_the_noise_and_needs_two_samples() {
        let quiet = [100.0, 101.0, 99.0];
        let noisy = [70.0, 100.0, 130.0];
        let (lo, hi) = ratio_interval(0.8, &quiet, &[80.0, 81.0, 79.0], 0.95).expect("interval");
        assert!(lo < 0.8 && hi > 0.8 && hi < 0.83, "{lo} {hi}");
        let (lo2, hi2) = ratio_interval(0.8, &noisy, &[56.0, 80.0, 104.0], 0.95).expect("interval");
        assert!(lo2 < lo && hi2 > 1.0, "{lo2} {hi2}");
        // One side with one sample borrows the other's spread.
        assert!(ratio_interval(0.8, &quiet, &[80.0], 0.95).is_some());
        assert_eq!(ratio_interval(0.8, &[100.0], &[80.0], 0.95), None);
        // No spread at all: the ratio itself.
        assert_eq!(ratio_interval(0.8, &[5.0, 5.0], &[4.0, 4.0], 0.95), Some((0.8, 0.8)));
    }
}
