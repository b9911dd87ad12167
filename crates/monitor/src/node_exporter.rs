//! Reading a host through a Prometheus node_exporter where one already runs:
//! its `/metrics` page in the text exposition format (`name{label="v"}
//! value` lines, `#` comments) gives the same counters /proc does, so the
//! samples are the same, less the watched process (node_exporter has no
//! per-process figures).
//!
//! The page is fetched with a plain HTTP/1.0 GET: the answer then comes
//! whole, unchunked, ending when the exporter closes — no HTTP client
//! crate is needed for one page a second. `http://` only.

use crate::raw::{rates, CpuCounters, DiskCounters, NicCounters, Raw};
use crate::{HostSample, MemorySample, MonitorError};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// One metric line: its name, labels and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Parses the text exposition format; lines that do not parse (and
/// comments) are skipped, as Prometheus' own parser would reject only
/// those.
pub fn parse_metrics(text: &str) -> Vec<Metric> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Metric> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (name, rest) = match line.find(['{', ' ']) {
        Some(i) => line.split_at(i),
        None => return None,
    };
    let mut labels = BTreeMap::new();
    let rest = if let Some(body) = rest.strip_prefix('{') {
        // Label values may hold `,` `}` and escaped quotes: walk them.
        let mut chars = body.char_indices().peekable();
        let mut end = None;
        loop {
            while chars.peek().is_some_and(|&(_, c)| c == ',' || c == ' ') {
                chars.next();
            }
            match chars.peek() {
                Some(&(i, '}')) => {
                    end = Some(i);
                    break;
                }
                None => break,
                _ => {}
            }
            let mut key = String::new();
            for (_, c) in chars.by_ref() {
                if c == '=' {
                    break;
                }
                key.push(c);
            }
            if chars.next().map(|(_, c)| c) != Some('"') {
                return None;
            }
            let mut value = String::new();
            let mut closed = false;
            while let Some((_, c)) = chars.next() {
                match c {
                    '\\' => match chars.next().map(|(_, c)| c) {
                        Some('n') => value.push('\n'),
                        Some(c) => value.push(c),
                        None => return None,
                    },
                    '"' => {
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                return None;
            }
            labels.insert(key.trim().to_string(), value);
        }
        &body[end? + 1..]
    } else {
        rest
    };
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Metric {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Samples a host through its node_exporter.
#[derive(Debug)]
pub struct NodeExporter {
    url: String,
    /// `host:port` to connect to, and the path to ask for.
    authority: String,
    path: String,
    host: String,
    prev: Raw,
}

impl NodeExporter {
    /// Checks `url` (`http://HOST:PORT[/metrics]`) and takes a first reading.
    pub fn new(url: &str) -> Result<NodeExporter, MonitorError> {
        let bad = |why: &str| MonitorError::NodeExporter {
            url: url.to_string(),
            why: why.to_string(),
        };
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| bad("expected an http:// URL, such as http://server:9100/metrics"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/metrics"),
        };
        if authority.is_empty() {
            return Err(bad("the URL names no host"));
        }
        let authority = if authority.contains(':') && !authority.ends_with(']') {
            authority.to_string()
        } else {
            format!("{authority}:9100")
        };
        let host = authority
            .rsplit_once(':')
            .map_or(authority.as_str(), |(h, _)| h)
            .trim_matches(['[', ']'])
            .to_string();
        let mut n = NodeExporter {
            url: url.to_string(),
            authority,
            path: path.to_string(),
            host,
            prev: Raw::now(),
        };
        n.prev = n.read()?;
        Ok(n)
    }

    /// The host's name: the URL's host.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The host since the last reading.
    pub fn sample(&mut self) -> Result<HostSample, MonitorError> {
        let now = self.read()?;
        let s = rates(&self.host, &self.prev, &now);
        self.prev = now;
        Ok(s)
    }

    fn read(&self) -> Result<Raw, MonitorError> {
        let page = self.fetch().map_err(|why| MonitorError::NodeExporter {
            url: self.url.clone(),
            why,
        })?;
        Ok(raw_of(&parse_metrics(&page)))
    }

    fn fetch(&self) -> Result<String, String> {
        let addr = self
            .authority
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {}: {e}", self.authority))?
            .next()
            .ok_or_else(|| format!("{} resolves to no address", self.authority))?;
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        write!(
            s,
            "GET {} HTTP/1.0\r\nHost: {}\r\nAccept: text/plain\r\n\r\n",
            self.path, self.authority
        )
        .map_err(|e| e.to_string())?;
        let mut body = Vec::new();
        s.read_to_end(&mut body).map_err(|e| e.to_string())?;
        let text = String::from_utf8_lossy(&body);
        let (head, page) = text.split_once("\r\n\r\n").ok_or("the answer has no end of headers")?;
        let status = head.lines().next().unwrap_or("");
        if status.split_whitespace().nth(1) != Some("200") {
            return Err(format!("answered `{status}`, expected 200"));
        }
        Ok(page.to_string())
    }
}

fn device(m: &Metric) -> String {
    m.labels.get("device").cloned().unwrap_or_default()
}

/// The counters of a node_exporter's metrics.
pub(crate) fn raw_of(metrics: &[Metric]) -> Raw {
    let mut r = Raw::now();
    let mut cpus: BTreeMap<usize, CpuCounters> = BTreeMap::new();
    let mut mem: BTreeMap<&str, f64> = BTreeMap::new();
    for m in metrics {
        let label = |k: &str| m.labels.get(k).map(String::as_str).unwrap_or("");
        fn nic<'a>(r: &'a mut Raw, m: &Metric) -> &'a mut NicCounters {
            r.nics.entry(device(m)).or_default()
        }
        fn disk<'a>(r: &'a mut Raw, m: &Metric) -> &'a mut DiskCounters {
            r.disks.entry(device(m)).or_default()
        }
        match m.name.as_str() {
            "node_cpu_seconds_total" => {
                let Ok(cpu) = label("cpu").parse::<usize>() else {
                    continue;
                };
                let c = cpus.entry(cpu).or_default();
                match label("mode") {
                    "user" => c.user = m.value,
                    "nice" => c.nice = m.value,
                    "system" => c.system = m.value,
                    "idle" => c.idle = m.value,
                    "iowait" => c.iowait = m.value,
                    "irq" => c.irq = m.value,
                    "softirq" => c.softirq = m.value,
                    "steal" => c.steal = m.value,
                    _ => {}
                }
            }
            "node_context_switches_total" => r.context_switches = m.value,
            "node_intr_total" => r.interrupts = m.value,
            "node_procs_running" => r.run_queue = m.value,
            "node_memory_MemTotal_bytes" => _ = mem.insert("total", m.value),
            "node_memory_MemFree_bytes" => _ = mem.insert("free", m.value),
            "node_memory_Buffers_bytes" => _ = mem.insert("buffers", m.value),
            "node_memory_Cached_bytes" => _ = mem.insert("cached", m.value),
            "node_memory_SReclaimable_bytes" => _ = mem.insert("reclaimable", m.value),
            "node_network_receive_bytes_total" => nic(&mut r, m).rx_bytes = m.value,
            "node_network_transmit_bytes_total" => nic(&mut r, m).tx_bytes = m.value,
            "node_network_receive_packets_total" => nic(&mut r, m).rx_packets = m.value,
            "node_network_transmit_packets_total" => nic(&mut r, m).tx_packets = m.value,
            // Bytes per second; node_exporter reports -1 or leaves it out
            // where the kernel has no speed.
            "node_network_speed_bytes" if m.value > 0.0 => {
                nic(&mut r, m).speed_mbit = Some((m.value * 8.0 / 1e6).round() as u64)
            }
            "node_disk_reads_completed_total" => disk(&mut r, m).reads = m.value,
            "node_disk_writes_completed_total" => disk(&mut r, m).writes = m.value,
            "node_disk_read_bytes_total" => disk(&mut r, m).read_bytes = m.value,
            "node_disk_written_bytes_total" => disk(&mut r, m).write_bytes = m.value,
            "node_disk_io_time_seconds_total" => disk(&mut r, m).io_seconds = m.value,
            "node_netstat_TcpExt_ListenOverflows" => r.listen_overflows = m.value,
            "node_netstat_TcpExt_ListenDrops" => r.listen_drops = m.value,
            _ => {}
        }
    }
    // CPUs by number: a gap (an offline CPU) would shift the others.
    if let Some(&last) = cpus.keys().last() {
        r.cpus = (0..=last).map(|i| cpus.get(&i).copied().unwrap_or_default()).collect();
    }
    let get = |k: &str| mem.get(k).copied().unwrap_or(0.0);
    let cache = get("cached") + get("buffers") + get("reclaimable");
    r.memory = MemorySample {
        total_bytes: get("total") as u64,
        used_bytes: (get("total") - get("free") - cache).max(0.0) as u64,
        page_cache_bytes: get("cached") as u64,
    };
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_exposition_format() {
        let m = parse_metrics(
            "# HELP x y\n# TYPE node_cpu_seconds_total counter\nnode_cpu_seconds_total{cpu=\"0\",mode=\"idle\"} 1.5e3\n\
             up 1\nweird{a=\"b,}\\\"c\"} 2 1700000000\nbroken{a=b} 3\nnovalue\n",
        );
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].labels["mode"], "idle");
        assert_eq!(m[0].value, 1500.0);
        assert_eq!(m[1].name, "up");
        assert_eq!(m[2].labels["a"], "b,}\"c");
        assert_eq!(m[2].value, 2.0);
    }

    #[test]
    fn urls_are_checked() {
        let e = NodeExporter::new("https://x:9100/metrics").expect_err("https is refused");
        assert!(e.to_string().contains("expected an http:// URL"), "{e}");
    }
}
