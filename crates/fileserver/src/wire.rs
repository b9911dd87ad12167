//! A file mix as it travels to and from a remote agent (serde JSON inside
//! the control protocol's envelopes): the order — the workload's own text,
//! the target, the mix's plan and which clients the agent runs — and what
//! the agent measured, HDR histograms included, so the controller merges
//! the agents' counts exactly.

use crate::diskmix::DiskMix;
use crate::loadfile::{Loadfile, OpKind};
use crate::mix::Part;
use crate::run::{FileMixMeasure, FileMixPlan, FileWorkload};
use crate::stats::{FileStats, OpStats, SecondStats};
use base64::Engine as _;
use benchlab_model::input::{read_bounded, MAX_DISK_MIX_BYTES, MAX_LOADFILE_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// One operation kind's counts on the wire: its histogram in the standard
/// V2 serialisation, base64.
#[derive(Serialize, Deserialize)]
struct OpWire {
    count: u64,
    errors: u64,
    not_sent: u64,
    latency: String,
}

impl Serialize for OpStats {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        OpWire {
            count: self.count,
            errors: self.errors,
            not_sent: self.not_sent,
            latency: benchlab_results::histogram_b64(&self.latency),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for OpStats {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let w = OpWire::deserialize(d)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(w.latency.as_bytes())
            .map_err(D::Error::custom)?;
        let latency = crate::stats::latency_of_v2(&bytes).map_err(D::Error::custom)?;
        Ok(OpStats {
            count: w.count,
            errors: w.errors,
            not_sent: w.not_sent,
            latency,
        })
    }
}

#[derive(Serialize, Deserialize)]
struct StatsWire {
    ops: Vec<OpStats>,
    bytes_read: u64,
    bytes_written: u64,
    errors: BTreeMap<String, u64>,
    loops: u64,
    seconds: Vec<SecondStats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    wire: Option<[u64; 4]>,
    first_send_unix_ns: Option<i64>,
}

impl Serialize for FileStats {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        StatsWire {
            ops: self.ops.clone(),
            bytes_read: self.bytes_read,
            bytes_written: self.bytes_written,
            errors: self.errors.clone(),
            loops: self.loops,
            seconds: self.seconds.clone(),
            wire: self.wire,
            first_send_unix_ns: self.first_send_unix_ns,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for FileStats {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = StatsWire::deserialize(d)?;
        if w.ops.len() != OpKind::ALL.len() {
            return Err(serde::de::Error::custom(format!(
                "{} operation kinds, expected {}",
                w.ops.len(),
                OpKind::ALL.len()
            )));
        }
        Ok(FileStats {
            ops: w.ops,
            bytes_read: w.bytes_read,
            bytes_written: w.bytes_written,
            errors: w.errors,
            loops: w.loops,
            seconds: w.seconds,
            wire: w.wire,
            first_send_unix_ns: w.first_send_unix_ns,
        })
    }
}

/// How a client of a file mix ended on an agent: what it measured and the
/// CPU its users took (user and system µs), the load generator's own.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FileEnd {
    pub measure: FileMixMeasure,
    pub cpu_us: [u64; 2],
    /// How far the first send may be off the controller's clock (half the
    /// clock check's round trip), set where the controller receives it.
    #[serde(default)]
    pub first_send_uncertainty_ns: u64,
}

/// A workload as its own text, rebuilt where the agent runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadText {
    /// `loadfile` or `disk_mix`.
    pub kind: String,
    /// The file's name (no directory), for messages and the copy's name.
    pub name: String,
    pub text: String,
    /// A loadfile's passes per user.
    pub loops: Option<u32>,
}

/// What an agent runs of a file mix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileOrder {
    pub workload: WorkloadText,
    /// The target as the users connect to it (an SMB password included:
    /// it travels only over the agents' mutual TLS, never to results).
    pub target: String,
    pub plan: FileMixPlan,
    pub part: Part,
}

impl FileOrder {
    /// The order for the clients `part` of a mix of `workload` (its file
    /// read again, with its bound) against `target`.
    pub fn new(
        workload: &FileWorkload,
        target: &str,
        plan: &FileMixPlan,
        part: Part,
    ) -> Result<FileOrder, crate::FileError> {
        let (kind, path, loops, limit) = match workload {
            FileWorkload::Loadfile(l, loops) => ("loadfile", &l.path, *loops, MAX_LOADFILE_BYTES),
            FileWorkload::DiskMix(m) => ("disk_mix", &m.path, None, MAX_DISK_MIX_BYTES),
        };
        let bytes = read_bounded(path, kind, limit).map_err(|e| crate::FileError::Input(e.to_string()))?;
        Ok(FileOrder {
            workload: WorkloadText {
                kind: kind.into(),
                name: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| kind.into()),
                text: String::from_utf8_lossy(&bytes).into_owned(),
                loops,
            },
            target: target.to_string(),
            plan: plan.clone(),
            part,
        })
    }

    /// The workload, its text written into `dir` (user processes read it
    /// from there) and checked as on the controller.
    /// A bad order (it came from the network) means this client cannot
    /// run.
    pub fn workload(&self, dir: &Path) -> Result<FileWorkload, crate::FileError> {
        self.read_workload(dir).map_err(crate::FileError::Run)
    }

    fn read_workload(&self, dir: &Path) -> Result<FileWorkload, String> {
        let w = &self.workload;
        // Only a plain name: the order comes from the network.
        let name: String = w
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{}-{name}", w.kind));
        std::fs::write(&path, &w.text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        match w.kind.as_str() {
            "loadfile" => Ok(FileWorkload::Loadfile(
                Arc::new(Loadfile::parse(&path, &w.text).map_err(|e| e.to_string())?),
                w.loops,
            )),
            "disk_mix" => Ok(FileWorkload::DiskMix(Arc::new(
                DiskMix::parse(&path, &w.text).map_err(|e| e.to_string())?,
            ))),
            k => Err(format!("a workload of kind `{k}`: expected loadfile or disk_mix")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    #[test]
    fn a_measure_survives_the_wire_exactly() {
        let mut s = FileStats::default();
        for us in [3, 70, 900, 12_000] {
            s.record(OpKind::ReadX, us, &Status::Ok, &Status::Ok);
        }
        s.record(OpKind::Unlink, 5, &Status::Ok, &Status::NotSent);
        s.bytes_read = 4096;
        s.record_second(0, false, 4096, 0);
        let m = FileMixMeasure {
            total: s.clone(),
            clients: vec![s],
            window: 1.5,
            prepared_bytes: 7,
            partial: false,
            smb: None,
        };
        let back: FileMixMeasure = serde_json::from_slice(&serde_json::to_vec(&m).unwrap()).unwrap();
        let read = &back.total.ops[OpKind::ReadX.index()];
        assert_eq!((read.count, read.latency.len(), read.latency.max()), (4, 4, 12_007));
        assert_eq!(read.latency, m.total.ops[OpKind::ReadX.index()].latency);
        assert_eq!(back.total.ops[OpKind::Unlink.index()].not_sent, 1);
        assert_eq!(
            (back.total.bytes_read, back.total.seconds.clone()),
            (4096, m.total.seconds.clone())
        );
        assert_eq!((back.window, back.prepared_bytes, back.clients.len()), (1.5, 7, 1));
        // A peer's short list of kinds is refused, not indexed past.
        let short = serde_json::json!({"ops": [], "bytes_read": 0, "bytes_written": 0, "errors": {}, "loops": 0, "seconds": []});
        assert!(serde_json::from_value::<FileStats>(short).is_err());
    }

    /// A peer's histogram is read only when its header is of our shape:
    /// bounds or digits past ours would have the deserializer allocate
    /// tens of MB of counts (an empty one of 1 to 2^40 at 5 digits used to
    /// be accepted), and a payload length past the bytes a 4 GiB buffer.
    #[test]
    fn a_peers_histogram_of_another_shape_is_refused_before_it_is_allocated() {
        let op = |h: &hdrhistogram::Histogram<u64>| {
            let json = serde_json::json!({"count": 0, "errors": 0, "not_sent": 0, "latency": benchlab_results::histogram_b64(h)});
            serde_json::from_value::<OpStats>(json)
        };
        let wide = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 1 << 40, 5).unwrap();
        let e = op(&wide).unwrap_err().to_string();
        assert!(e.contains("expected 1 to at most 60000000"), "{e}");
        let mut ours = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        ours.record(1_234).unwrap();
        assert_eq!(op(&ours).unwrap().latency.len(), 1);
        use base64::Engine as _;
        let mut bytes = base64::engine::general_purpose::STANDARD
            .decode(benchlab_results::histogram_b64(&ours))
            .unwrap();
        bytes[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let json = serde_json::json!({"count": 0, "errors": 0, "not_sent": 0,
            "latency": base64::engine::general_purpose::STANDARD.encode(&bytes)});
        let e = serde_json::from_value::<OpStats>(json).unwrap_err().to_string();
        assert!(e.contains("payload of 4294967295 bytes"), "{e}");
    }
}
