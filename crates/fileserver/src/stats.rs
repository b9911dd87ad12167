//! What one user measured: per operation kind a count, the errors and an
//! HDR histogram of latency; bytes read and written; errors by what was
//! expected and what came back. Users merge exactly into clients and mixes.

use crate::loadfile::OpKind;
use crate::status::Status;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// The longest latency a histogram holds, in microseconds (60 s); longer
/// ones are recorded as this.
pub const LATENCY_MAX_US: u64 = 60_000_000;

fn histogram() -> Histogram<u64> {
    // Constant bounds that hdrhistogram accepts.
    Histogram::new_with_bounds(1, LATENCY_MAX_US, 3).expect("valid constant histogram bounds")
}

/// One operation kind's counts.
#[derive(Debug, Clone)]
pub struct OpStats {
    /// Operations completed in the window, errors included.
    pub count: u64,
    /// Of them, those that did not end as expected.
    pub errors: u64,
    /// Latency of every counted operation, microseconds.
    pub latency: Histogram<u64>,
}

impl Default for OpStats {
    fn default() -> Self {
        OpStats {
            count: 0,
            errors: 0,
            latency: histogram(),
        }
    }
}

/// A user's (or a client's, or a mix's) measurements.
#[derive(Debug, Clone)]
pub struct FileStats {
    pub ops: Vec<OpStats>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// "KIND: expected X, got Y" → count.
    pub errors: BTreeMap<String, u64>,
    /// Whole passes of a loadfile completed in the window.
    pub loops: u64,
}

impl Default for FileStats {
    fn default() -> Self {
        FileStats {
            ops: (0..OpKind::ALL.len()).map(|_| OpStats::default()).collect(),
            bytes_read: 0,
            bytes_written: 0,
            errors: BTreeMap::new(),
            loops: 0,
        }
    }
}

impl FileStats {
    /// Records one operation of `kind` that took `micros`; `got` differs
    /// from `expect` for an error.
    pub fn record(&mut self, kind: OpKind, micros: u64, expect: &Status, got: &Status) {
        let o = &mut self.ops[kind.index()];
        o.count += 1;
        let _ = o.latency.record(micros.clamp(1, LATENCY_MAX_US));
        if expect != got {
            o.errors += 1;
            *self
                .errors
                .entry(format!("{kind}: expected {expect}, got {got}"))
                .or_default() += 1;
        }
    }

    pub fn merge(&mut self, other: &FileStats) {
        for (a, b) in self.ops.iter_mut().zip(&other.ops) {
            a.count += b.count;
            a.errors += b.errors;
            // Same bounds on both sides: the add cannot fail.
            let _ = a.latency.add(&b.latency);
        }
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.loops += other.loops;
    }

    pub fn operations(&self) -> u64 {
        self.ops.iter().map(|o| o.count).sum()
    }

    pub fn error_count(&self) -> u64 {
        self.ops.iter().map(|o| o.errors).sum()
    }
}
