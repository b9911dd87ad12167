//! The report's analysis as pure functions over numbers, so every definition
//! is written once, stated in the report, and property-tested on synthetic
//! curves with known answers (docs/design.md, "What the reports answer").
//!
//! Shares and ratios are fractions (0.068, not 6.8 %); the page formats them.
//! A function returns `None` where its answer is undefined (an empty curve, a
//! peak of zero, a single client) rather than inventing a number.

use serde::Serialize;

/// Where a curve over rising load peaks, and how much of the peak it kept
/// past it — the two numbers of docs/design.md for the shape past the peak (Apache
/// 1.3.4 in seed 004: 1,000 → 68 → 87 requests/s is a lowest share of 0.068
/// and a share of 0.087 kept at the last mix).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Shape {
    /// Index of the highest value (the first one on ties: the lightest load
    /// that reaches the peak).
    pub peak_index: usize,
    pub peak: f64,
    /// Last value ÷ peak; 1 when the peak is the last mix.
    pub kept_at_last: f64,
    /// Lowest value after the peak ÷ peak, and its index; `None` when the
    /// peak is the last mix (nothing came after it).
    pub lowest_after_peak: Option<f64>,
    pub lowest_index: Option<usize>,
}

/// Index of the highest finite value, the first on ties; `None` when there
/// is none.
pub fn peak_index(values: &[f64]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, v) in values.iter().enumerate() {
        if !v.is_finite() {
            continue;
        }
        match best {
            Some(b) if values[b] >= *v => {}
            _ => best = Some(i),
        }
    }
    best
}

/// The peak and the shape past it; `None` for an empty curve or a peak that
/// is not positive (no share of nothing).
pub fn shape(values: &[f64]) -> Option<Shape> {
    let p = peak_index(values)?;
    let peak = values[p];
    if peak <= 0.0 {
        return None;
    }
    let last = values.len() - 1;
    let kept_at_last = values[last] / peak;
    let mut lowest: Option<usize> = None;
    for (i, v) in values.iter().enumerate().skip(p + 1) {
        if !v.is_finite() {
            continue;
        }
        match lowest {
            Some(l) if values[l] <= *v => {}
            _ => lowest = Some(i),
        }
    }
    Some(Shape {
        peak_index: p,
        peak,
        kept_at_last,
        lowest_after_peak: lowest.map(|l| values[l] / peak),
        lowest_index: lowest,
    })
}

/// [`shape`] over the mixes that measured the server alone: `lost[i]` is
/// true for a mix that lost clients (an agent gone), whose low figure says
/// what the clients did, not the server; it is left out of the peak and of
/// the shape past it. Indexes are those of `values`.
pub fn shape_of_whole_mixes(values: &[f64], lost: &[bool]) -> Option<Shape> {
    let kept: Vec<usize> = (0..values.len())
        .filter(|&i| !lost.get(i).copied().unwrap_or(false))
        .collect();
    let whole: Vec<f64> = kept.iter().map(|&i| values[i]).collect();
    let s = shape(&whole)?;
    Some(Shape {
        peak_index: kept[s.peak_index],
        lowest_index: s.lowest_index.map(|l| kept[l]),
        ..s
    })
}

/// A collapse: after the peak the curve fell below `threshold` of it (the
/// report's default threshold is 0.5).
pub fn collapsed(lowest_after_peak: Option<f64>, threshold: f64) -> bool {
    lowest_after_peak.is_some_and(|s| s < threshold)
}

/// The spread of per-client values (requests/s or mean latency) in one mix:
/// the numbers that show a server treating clients unequally.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// min ÷ mean.
    pub min_ratio: f64,
    /// max ÷ mean.
    pub max_ratio: f64,
    /// Coefficient of variation: population standard deviation ÷ mean.
    pub cv: f64,
}

/// `None` for no values or a mean that is not positive.
pub fn spread(values: &[f64]) -> Option<Spread> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
        return None;
    }
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    Some(Spread {
        mean,
        min,
        max,
        min_ratio: min / mean,
        max_ratio: max / mean,
        cv: var.sqrt() / mean,
    })
}

/// Median (the mean of the two middle values for an even count); `None`
/// when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Each client's rate ÷ the median client rate of the mix. The median, not
/// the mean, is the reference so that one client served at a fraction `f` of
/// the others shows exactly `f` (with three or more clients) and the others
/// show 1: the outlier does not drag the reference. `None` where the median
/// is zero.
pub fn client_ratios(rates: &[f64]) -> Vec<Option<f64>> {
    let Some(m) = median(rates) else {
        return Vec::new();
    };
    rates.iter().map(|r| if m > 0.0 { Some(r / m) } else { None }).collect()
}

/// Indices of the clients served unequally: rate outside ±`tolerance` of
/// the median client rate (the report's default tolerance is 0.2). With a
/// median of zero, any client that was served at all is flagged (the others
/// got nothing). Fewer than two clients are never unequal.
pub fn unequal_clients(rates: &[f64], tolerance: f64) -> Vec<usize> {
    if rates.len() < 2 {
        return Vec::new();
    }
    client_ratios(rates)
        .iter()
        .enumerate()
        .filter(|(i, r)| match r {
            Some(r) => *r < 1.0 - tolerance || *r > 1.0 + tolerance,
            None => rates[*i] > 0.0,
        })
        .map(|(i, _)| i)
        .collect()
}

/// One mix as the useful-peak rule sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MixPoint {
    pub rate: f64,
    pub p99_us: u64,
    /// Every participating client within the tolerance of the median client
    /// rate, and no client taken out.
    pub clients_equal: bool,
    /// Failed ÷ (successful + failed) requests in the window.
    pub error_share: f64,
}

/// The limits a mix must keep to count towards the useful peak.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsefulLimits {
    /// p99 latency limit in microseconds (default 1 s).
    pub latency_limit_us: u64,
    /// Highest error share allowed (default 0.01: 1 %).
    pub max_error_share: f64,
}

/// Why a mix does not count towards the useful peak; empty when it counts.
pub fn useful_exclusions(p: &MixPoint, limits: &UsefulLimits) -> Vec<&'static str> {
    let mut why = Vec::new();
    if !p.clients_equal {
        why.push("clients served unequally");
    }
    if p.p99_us > limits.latency_limit_us {
        why.push("p99 over the latency limit");
    }
    if p.error_share > limits.max_error_share {
        why.push("errors over the limit");
    }
    if p.rate <= 0.0 {
        why.push("no successful request");
    }
    why
}

/// The useful peak (seed 001): the index of the highest rate among the mixes
/// where clients are served equally, p99 stays within the latency limit and
/// errors stay within their limit; the first on ties; `None` when no mix
/// qualifies.
pub fn useful_peak(points: &[MixPoint], limits: &UsefulLimits) -> Option<usize> {
    let rates: Vec<f64> = points
        .iter()
        .map(|p| {
            if useful_exclusions(p, limits).is_empty() {
                p.rate
            } else {
                f64::NAN
            }
        })
        .collect();
    peak_index(&rates)
}

/// SPICE efficiency as seed 001 defines it: request efficiency = SPICE
/// request rate ÷ static request rate; latency efficiency = static latency ÷
/// SPICE latency (seed 001 measures the *average* latency, so callers pass
/// means). Both are ≤ 1 when the dynamic path is slower. A ratio is `None`
/// when its divisor is not positive.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Efficiency {
    pub request: Option<f64>,
    pub latency: Option<f64>,
}

pub fn efficiency(static_rate: f64, static_latency: f64, spice_rate: f64, spice_latency: f64) -> Efficiency {
    Efficiency {
        request: (static_rate > 0.0).then(|| spice_rate / static_rate),
        latency: (spice_latency > 0.0).then(|| static_latency / spice_latency),
    }
}

/// Index of the highest load (most threads), the last on ties (the later
/// mix of equal load).
pub fn highest_load_index(threads: &[u64]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, t) in threads.iter().enumerate() {
        match best {
            Some(b) if threads[b] > *t => {}
            _ => best = Some(i),
        }
    }
    best
}

/// `new ÷ base`, `None` when `base` is not positive.
pub fn ratio(new: f64, base: f64) -> Option<f64> {
    (base > 0.0).then(|| new / base)
}

pub use benchlab_results::noise::{regressed, Verdict};

/// Mixes as prose: `mix 2`, `mixes 2 and 3`, `mixes 2, 3 and 5`.
pub fn mixes_text(mixes: &[usize]) -> String {
    let n: Vec<String> = mixes.iter().map(|m| m.to_string()).collect();
    match n.as_slice() {
        [] => "no mix".into(),
        [one] => format!("mix {one}"),
        [init @ .., last] => format!("mixes {} and {last}", init.join(", ")),
    }
}

/// What it means that `mixes` were client-bound (the load generator used
/// more than `threshold` (0–1) of the cores it may use), in the words the
/// terminal, the HTML headline and the workbook all use; `None` when no mix
/// was.
pub fn client_bound_note(mixes: &[usize], threshold: f64) -> Option<String> {
    if mixes.is_empty() {
        return None;
    }
    Some(format!(
        "CLIENT-BOUND: {}: the load generator used more than {} of the CPU cores it may use, so {} may show \
         benchlab's limit rather than the server's, and the peak can move between identical runs. Give the \
         generator more cores (--os-threads-per-client) or more client machines, and do not run it beside the \
         server.",
        mixes_text(mixes),
        benchlab_format::percent(threshold * 100.0),
        if mixes.len() == 1 {
            "its figures"
        } else {
            "their figures"
        }
    ))
}

/// What it means that `mixes` ran with the server on the same machine
/// while its CPUs were more than `threshold` (0–1) busy, though the
/// generator itself stayed under its cores; `None` when no mix did.
pub fn co_located_note(mixes: &[usize], threshold: f64) -> Option<String> {
    if mixes.is_empty() {
        return None;
    }
    Some(format!(
        "CO-LOCATED: {}: the server ran on the load generator's machine and its CPUs were more than {} busy, so \
         benchlab and the server competed for them and either may have set {}; the peak can move between \
         identical runs. Run the load from another machine.",
        mixes_text(mixes),
        benchlab_format::percent(threshold * 100.0),
        if mixes.len() == 1 {
            "its figures"
        } else {
            "their figures"
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_bound_note_names_the_mixes() {
        assert_eq!(client_bound_note(&[], 0.9), None);
        let one = client_bound_note(&[3], 0.9).expect("a note");
        assert!(one.starts_with("CLIENT-BOUND: mix 3: "), "{one}");
        assert!(one.contains("more than 90.0 % of the CPU cores"), "{one}");
        assert!(one.contains("its figures"), "{one}");
        let two = client_bound_note(&[2, 3, 5], 0.5).expect("a note");
        assert!(two.starts_with("CLIENT-BOUND: mixes 2, 3 and 5: "), "{two}");
        assert!(two.contains("more than 50.0 %"), "{two}");
        assert_eq!(mixes_text(&[1, 2]), "mixes 1 and 2");
        assert_eq!(co_located_note(&[], 0.9), None);
        let c = co_located_note(&[1, 4], 0.9).expect("a note");
        assert!(
            c.starts_with("CO-LOCATED: mixes 1 and 4: the server ran on the load generator's machine"),
            "{c}"
        );
        assert!(c.contains("more than 90.0 % busy"), "{c}");
    }

    /// Seed 004's Apache 1.3.4 numbers.
    #[test]
    fn seed_004_apache() {
        let s = shape(&[300.0, 700.0, 1000.0, 68.0, 87.0]).expect("shape");
        assert_eq!(s.peak_index, 2);
        assert!((s.lowest_after_peak.expect("lowest") - 0.068).abs() < 1e-12);
        assert!((s.kept_at_last - 0.087).abs() < 1e-12);
        assert_eq!(s.lowest_index, Some(3));
        assert!(collapsed(s.lowest_after_peak, 0.5));
    }

    #[test]
    fn a_mix_that_lost_its_clients_is_no_collapse() {
        // 1,000 → 0 requests/s: every agent lost in the last mix.
        let rates = [400.0, 1000.0, 0.0];
        assert!(collapsed(shape(&rates).unwrap().lowest_after_peak, 0.5));
        let s = shape_of_whole_mixes(&rates, &[false, false, true]).unwrap();
        assert_eq!(s.peak_index, 1);
        assert_eq!(s.lowest_after_peak, None);
        assert_eq!(s.kept_at_last, 1.0);
        assert!(!collapsed(s.lowest_after_peak, 0.5));
        // A real fall past the peak still reads as one, indexes unchanged.
        let rates = [400.0, 1000.0, 0.0, 80.0];
        let s = shape_of_whole_mixes(&rates, &[false, false, true, false]).unwrap();
        assert_eq!((s.peak_index, s.lowest_index), (1, Some(3)));
        assert_eq!(s.lowest_after_peak, Some(0.08));
        assert!(collapsed(s.lowest_after_peak, 0.5));
        assert_eq!(shape_of_whole_mixes(&rates, &[true; 4]), None);
    }

    #[test]
    fn peak_last_and_ties() {
        let s = shape(&[1.0, 2.0, 3.0]).expect("shape");
        assert_eq!((s.peak_index, s.kept_at_last, s.lowest_after_peak), (2, 1.0, None));
        assert_eq!(peak_index(&[5.0, 5.0, 1.0]), Some(0));
        assert_eq!(peak_index(&[]), None);
        assert!(shape(&[0.0, 0.0]).is_none());
    }

    #[test]
    fn a_regression_is_beyond_the_limit_and_the_noise() {
        // A rate 20 % lower: a regression while the interval stays below −5 %.
        assert_eq!(regressed(0.8, Some((0.75, 0.85)), true, 0.05), Verdict::Regressed);
        assert_eq!(regressed(0.8, None, true, 0.05), Verdict::Regressed);
        // The noise reaches past the limit: no call.
        assert_eq!(regressed(0.8, Some((0.6, 0.97)), true, 0.05), Verdict::Unchanged);
        // A latency 25 % higher, and one within the noise.
        assert_eq!(regressed(1.25, Some((1.1, 1.4)), false, 0.05), Verdict::Regressed);
        assert_eq!(regressed(1.25, Some((1.0, 1.5)), false, 0.05), Verdict::Unchanged);
        // Faster and lower latency are improvements, never regressions.
        assert_eq!(regressed(3.0, Some((2.5, 3.5)), true, 0.05), Verdict::Improved);
        assert_eq!(regressed(0.33, Some((0.3, 0.4)), false, 0.05), Verdict::Improved);
        assert_eq!(regressed(1.02, Some((0.99, 1.05)), true, 0.05), Verdict::Unchanged);
    }

    #[test]
    fn two_clients_are_symmetric() {
        assert_eq!(unequal_clients(&[100.0, 50.0], 0.2), vec![0, 1]);
        assert!(unequal_clients(&[100.0], 0.2).is_empty());
        assert_eq!(unequal_clients(&[0.0, 0.0, 5.0], 0.2), vec![2]);
    }
}
