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

/// A latency histogram that starts at its smallest (16 KiB) and grows to
/// the latencies recorded into it or added to it, never past
/// [`LATENCY_MAX_US`] (recording clamps): a client keeps one per operation
/// kind and event loop, and one made at the full range of 1 µs to 60 s
/// is 136 KiB whether the kind is sent or not — 3.7 MB a client, 737 MB
/// for 1,000 users in 100 clients (bench/smb2-users.sh). Growing keeps
/// every count exact: the same buckets, more of them.
fn histogram() -> Histogram<u64> {
    // Constant bounds that hdrhistogram accepts.
    let mut h = Histogram::new_with_bounds(1, 2, 3).expect("valid constant histogram bounds");
    h.auto(true);
    h
}

/// A latency histogram from its V2 bytes (a remote agent's counts, a user
/// process's answer), read into a fresh one of ours so it merges with
/// every other. The header is checked before the deserializer allocates
/// by it: a peer's header could ask for a buffer or counts of any size.
pub(crate) fn latency_of_v2(bytes: &[u8]) -> Result<Histogram<u64>, String> {
    benchlab_input::hdr::v2_header(bytes, LATENCY_MAX_US).map_err(|e| format!("a latency histogram: {e}"))?;
    let h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("a latency histogram: {e:?}"))?;
    let mut latency = histogram();
    if h.max() > LATENCY_MAX_US || latency.add(&h).is_err() {
        return Err("a latency histogram outside 1 µs to 60 s".into());
    }
    Ok(latency)
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
    /// Operations the client could not send over its protocol
    /// ([`Status::NotSent`]): in neither `count` nor `errors`.
    pub not_sent: u64,
}

impl Default for OpStats {
    fn default() -> Self {
        OpStats {
            count: 0,
            errors: 0,
            latency: histogram(),
            not_sent: 0,
        }
    }
}

/// One second of the measurement window: what completed in it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SecondStats {
    /// Operations done (not-sent ones excluded), errors included.
    pub operations: u64,
    pub errors: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
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
    /// Per second of the window (index 0: its first second), what
    /// completed in it; the totals above are their sums.
    pub seconds: Vec<SecondStats>,
    /// Bytes sent and received on the wire by the operations counted
    /// (every frame, its headers, signatures and encryption included),
    /// where the client sees its wire (benchlab's SMB2 client; not
    /// libsmbclient, not file://): `None` where it does not. Then the
    /// lease breaks and the oplock breaks acknowledged while they ran.
    pub wire: Option<[u64; 4]>,
    /// When the first operation left, less the user's drawn start delay,
    /// UTC ns on the clock of the host that ran it (a client's or mix's:
    /// its earliest user's): the start spread's figure (docs/counting.md).
    pub first_send_unix_ns: Option<i64>,
}

impl Default for FileStats {
    fn default() -> Self {
        FileStats {
            ops: (0..OpKind::ALL.len()).map(|_| OpStats::default()).collect(),
            bytes_read: 0,
            bytes_written: 0,
            errors: BTreeMap::new(),
            loops: 0,
            seconds: Vec::new(),
            wire: None,
            first_send_unix_ns: None,
        }
    }
}

impl FileStats {
    /// Notes that a user's first operation leaves now, `delay` (its drawn
    /// start delay) after its start: what every file client calls before
    /// its users' first operation (the user threads and processes, and an
    /// event-loop driver), so a file mix has a start spread as a web mix
    /// has. The earliest note is kept.
    pub fn note_first_send(&mut self, delay: std::time::Duration) {
        let now = match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Err(_) => return,
        };
        let t = now.saturating_sub(i64::try_from(delay.as_nanos()).unwrap_or(i64::MAX));
        self.first_send_unix_ns = Some(self.first_send_unix_ns.map_or(t, |f| f.min(t)));
    }

    /// Records one operation of `kind` that took `micros`; `got` differs
    /// from `expect` for an error.
    pub fn record(&mut self, kind: OpKind, micros: u64, expect: &Status, got: &Status) {
        let o = &mut self.ops[kind.index()];
        if *got == Status::NotSent {
            // Nothing reached the server: no operation done, no latency,
            // and no error (the loadfile asked for something the client
            // cannot express, not something the server refused).
            o.not_sent += 1;
            return;
        }
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
            a.not_sent += b.not_sent;
            // Same bounds on both sides: the add cannot fail.
            let _ = a.latency.add(&b.latency);
        }
        self.bytes_read += other.bytes_read;
        self.bytes_written += other.bytes_written;
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
        self.loops += other.loops;
        self.wire = match (self.wire, other.wire) {
            (Some(a), Some(b)) => Some(std::array::from_fn(|i| a[i] + b[i])),
            (a, b) => a.or(b),
        };
        self.first_send_unix_ns = match (self.first_send_unix_ns, other.first_send_unix_ns) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if self.seconds.len() < other.seconds.len() {
            self.seconds.resize(other.seconds.len(), SecondStats::default());
        }
        for (a, b) in self.seconds.iter_mut().zip(&other.seconds) {
            a.operations += b.operations;
            a.errors += b.errors;
            a.bytes_read += b.bytes_read;
            a.bytes_written += b.bytes_written;
        }
    }

    /// Adds one operation to second `second` of the window (as
    /// [`FileStats::record`] counts it: a not-sent one is not counted).
    pub fn record_second(&mut self, second: usize, error: bool, bytes_read: u64, bytes_written: u64) {
        if self.seconds.len() <= second {
            self.seconds.resize(second + 1, SecondStats::default());
        }
        let s = &mut self.seconds[second];
        s.operations += 1;
        s.errors += u64::from(error);
        s.bytes_read += bytes_read;
        s.bytes_written += bytes_written;
    }

    pub fn operations(&self) -> u64 {
        self.ops.iter().map(|o| o.count).sum()
    }

    pub fn error_count(&self) -> u64 {
        self.ops.iter().map(|o| o.errors).sum()
    }

    /// Operations not sent (see [`OpStats::not_sent`]).
    pub fn not_sent(&self) -> u64 {
        self.ops.iter().map(|o| o.not_sent).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's counts start small (16 KiB a kind, not 136) and grow
    /// exactly: a merge of small and grown histograms equals recording
    /// every value in one, and nothing passes 60 s.
    #[test]
    fn latency_histograms_start_small_and_grow_exactly() {
        let st = FileStats::default();
        let full = Histogram::<u64>::new_with_bounds(1, LATENCY_MAX_US, 3).unwrap();
        let small = st.ops[0].latency.distinct_values();
        assert!(
            small * 8 <= full.distinct_values(),
            "{small} of {}",
            full.distinct_values()
        );

        let ok = Status::Ok;
        let (mut a, mut b, mut one) = (FileStats::default(), FileStats::default(), full.clone());
        for (i, us) in [3u64, 870, 41_000, 2_500_000, 90_000_000].into_iter().enumerate() {
            let into = if i % 2 == 0 { &mut a } else { &mut b };
            into.record(OpKind::ReadX, us, &ok, &ok);
            one.record(us.min(LATENCY_MAX_US)).unwrap();
        }
        a.merge(&b);
        let h = &a.ops[OpKind::ReadX.index()].latency;
        assert_eq!(h.len(), 5);
        assert!(h.max() <= full.highest_equivalent(LATENCY_MAX_US), "{}", h.max());
        for q in [0.0, 0.25, 0.5, 0.75, 1.0] {
            assert_eq!(h.value_at_quantile(q), one.value_at_quantile(q), "q {q}");
        }
        assert!(h.distinct_values() <= full.distinct_values());
    }

    #[test]
    fn an_operation_not_sent_is_neither_done_nor_an_error_and_merges() {
        let mut a = FileStats::default();
        a.record(OpKind::LockX, 7, &Status::Ok, &Status::NotSent);
        a.record(OpKind::LockX, 9, &Status::Ok, &Status::Ok);
        a.record(OpKind::Flush, 3, &Status::Ok, &Status::NotSent);
        let lock = &a.ops[OpKind::LockX.index()];
        assert_eq!(
            (lock.count, lock.errors, lock.not_sent, lock.latency.len()),
            (1, 0, 1, 1)
        );
        assert_eq!((a.operations(), a.error_count(), a.not_sent()), (1, 0, 2));
        assert!(a.errors.is_empty());
        let mut b = FileStats::default();
        b.merge(&a);
        b.merge(&a);
        assert_eq!((b.operations(), b.not_sent()), (2, 4));
    }
}
