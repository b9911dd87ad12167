//! The request duration as a histogram of fixed bounds: each merged
//! second's HDR histogram (every client's, summed) counted into the same
//! buckets, so a mix's buckets add up second by second, exactly, to its
//! successful requests (docs/metrics.md, "The duration histogram").

use hdrhistogram::Histogram;

/// The buckets' upper bounds (inclusive), in microseconds: 1, 2, 5 a
/// decade from 10 µs to 20 s, then 60 s; above it the `+Inf` bucket.
/// Fixed, so a dashboard's `histogram_quantile` and a sum over runs or
/// machines always meet the same bounds.
pub const BOUNDS_US: [u64; 21] = [
    10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000,
    2_000_000, 5_000_000, 10_000_000, 20_000_000, 60_000_000,
];

/// The bounds in seconds, as OTLP's `explicit_bounds` carries them.
pub fn bounds_s() -> Vec<f64> {
    BOUNDS_US.iter().map(|&b| b as f64 / 1e6).collect()
}

/// Requests per bucket (not cumulative: the last one is above the last
/// bound), their number and their durations' sum.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Buckets {
    pub counts: [u64; BOUNDS_US.len() + 1],
    pub count: u64,
    pub sum_s: f64,
}

impl Buckets {
    /// The counts of `h` (microseconds). A value goes to the first bucket
    /// whose bound holds HDR's highest value equivalent to it, the value
    /// HDR's percentiles report (results.json's p99 is one), so a
    /// percentile and the bucket holding it agree; the sum takes each HDR
    /// bucket's middle value, as HDR's mean does (3 significant digits).
    pub fn of(h: &Histogram<u64>) -> Buckets {
        let mut b = Buckets::default();
        for v in h.iter_recorded() {
            let n = v.count_at_value();
            let top = v.value_iterated_to();
            let i = BOUNDS_US.partition_point(|&bound| bound < top);
            b.counts[i] += n;
            b.count += n;
            b.sum_s += h.median_equivalent(top) as f64 * n as f64 / 1e6;
        }
        b
    }

    pub fn add(&mut self, o: &Buckets) {
        for (a, b) in self.counts.iter_mut().zip(&o.counts) {
            *a += b;
        }
        self.count += o.count;
        self.sum_s += o.sum_s;
    }

    /// Cumulative counts, one per bound, then `+Inf` (= `count`).
    pub fn cumulative(&self) -> Vec<u64> {
        self.counts
            .iter()
            .scan(0u64, |acc, n| {
                *acc += n;
                Some(*acc)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(values: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("bounds");
        for &v in values {
            h.record(v).expect("in range");
        }
        h
    }

    #[test]
    fn every_value_lands_in_the_bucket_of_its_bound_and_the_count_is_exact() {
        // 10 µs is on a bound (le is inclusive); 5,000 µs is not exact in
        // HDR (its bucket reaches 5,003 µs), so it counts above 5 ms, with
        // the percentile HDR reports for it.
        let h = histogram(&[1, 10, 11, 150, 150, 5_000, 70_000_000, 3_000_000_000]);
        let b = Buckets::of(&h);
        assert_eq!(b.count, 8);
        assert_eq!(b.counts[0], 2, "1 and 10 µs: le 10 µs");
        assert_eq!(b.counts[1], 1, "11 µs: le 20 µs");
        assert_eq!(b.counts[4], 2, "150 µs: le 200 µs");
        assert_eq!(b.counts[8], 0, "5,000 µs reads as 5,003 µs");
        assert_eq!(b.counts[9], 1);
        assert_eq!(b.counts[21], 2, "above 60 s: +Inf only");
        assert_eq!(h.value_at_quantile(0.7), 5_003);
        let c = b.cumulative();
        assert_eq!(c.len(), BOUNDS_US.len() + 1);
        assert!(c.windows(2).all(|w| w[0] <= w[1]), "{c:?}");
        assert_eq!(c[BOUNDS_US.len()], 8, "+Inf is the count");
        let mut twice = b;
        twice.add(&b);
        assert_eq!(twice.count, 16);
        assert_eq!(twice.counts[4], 4);
        assert!((twice.sum_s - 2.0 * b.sum_s).abs() < 1e-9);
    }

    #[test]
    fn the_sum_is_the_durations_sum_to_hdr_precision() {
        let b = Buckets::of(&histogram(&[100, 200, 300]));
        assert!((b.sum_s - 0.0006).abs() < 1e-12, "{}", b.sum_s);
        assert_eq!(Buckets::of(&histogram(&[])), Buckets::default());
    }
}
