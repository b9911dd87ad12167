//! How busy this machine's CPUs were over a span, by every process: with
//! the server under test on the same machine (a loopback target), a load
//! generator that uses only part of its cores can still be starved, because
//! the server takes the rest. Read from `/proc/stat` for the CPUs this
//! process may run on (`Cpus_allowed_list` of `/proc/self/status`, the
//! affinity mask), so no system call crate is needed; `None` where those
//! files cannot be read (not Linux, a restricted /proc).

/// Busy and total clock ticks of the allowed CPUs since boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTicks {
    pub busy: u64,
    pub total: u64,
}

impl CpuTicks {
    /// The ticks now.
    pub fn now() -> Option<CpuTicks> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let allowed = status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .and_then(|l| parse_cpu_list(l.trim()))?;
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        ticks(&stat, &allowed)
    }

    /// The share (0–1) of the ticks from `self` to `later` that were busy.
    pub fn busy_share(self, later: CpuTicks) -> Option<f64> {
        let total = later.total.checked_sub(self.total)?;
        let busy = later.busy.checked_sub(self.busy)?;
        (total > 0).then(|| busy as f64 / total as f64)
    }
}

/// `0-3,6,8-9` → [0, 1, 2, 3, 6, 8, 9].
fn parse_cpu_list(s: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if b < a || b - a > 65_536 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    (!cpus.is_empty()).then_some(cpus)
}

/// Sums the `cpuN` lines of `/proc/stat` for the CPUs in `allowed`: busy =
/// user + nice + system + irq + softirq + steal, total = busy + idle +
/// iowait (guest time is already inside user).
fn ticks(stat: &str, allowed: &[usize]) -> Option<CpuTicks> {
    let mut t = CpuTicks { busy: 0, total: 0 };
    let mut seen = false;
    for line in stat.lines() {
        let Some(rest) = line.strip_prefix("cpu") else { continue };
        let mut fields = rest.split_whitespace();
        let Some(Ok(cpu)) = fields.next().map(str::parse::<usize>) else {
            continue; // the "cpu " line of all CPUs together
        };
        if !allowed.contains(&cpu) {
            continue;
        }
        let v: Vec<u64> = fields.take(8).map(|f| f.parse().unwrap_or(0)).collect();
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7);
        t.busy += busy;
        t.total += busy + at(3) + at(4);
        seen = true;
    }
    seen.then_some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0-2,5,7-8"), Some(vec![0, 1, 2, 5, 7, 8]));
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn ticks_of_the_allowed_cpus() {
        let stat = "cpu  30 0 10 60 0 0 0 0 0 0\ncpu0 10 0 5 30 0 0 0 0 0 0\ncpu1 20 0 5 30 0 0 0 0 0 0\nintr 1 2\n";
        assert_eq!(ticks(stat, &[0, 1]), Some(CpuTicks { busy: 40, total: 100 }));
        assert_eq!(ticks(stat, &[1]), Some(CpuTicks { busy: 25, total: 55 }));
        assert_eq!(ticks(stat, &[4]), None);
        let a = CpuTicks { busy: 40, total: 100 };
        let b = CpuTicks { busy: 130, total: 200 };
        assert_eq!(a.busy_share(b), Some(0.9));
        assert_eq!(b.busy_share(a), None);
        assert_eq!(a.busy_share(a), None);
    }

    #[test]
    fn reads_this_machine() {
        // On Linux both files exist; the share of a short busy loop is > 0.
        let t0 = CpuTicks::now().expect("/proc/stat and /proc/self/status");
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(50) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let t1 = CpuTicks::now().expect("ticks");
        assert!(t1.total >= t0.total && t1.busy >= t0.busy);
    }
}
