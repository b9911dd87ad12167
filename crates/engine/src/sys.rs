//! The few operating-system facts a load generator must check or report:
//! its own CPU time, the file-descriptor limit, the ephemeral port range.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// CPU time (user, system) of the calling thread (`RUSAGE_THREAD`) or of the
/// whole process.
pub fn cpu_time(thread_only: bool) -> (Duration, Duration) {
    let who = if thread_only {
        libc::RUSAGE_THREAD
    } else {
        libc::RUSAGE_SELF
    };
    // SAFETY: rusage is plain integers, for which all-zero bytes are valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct we own and borrow mutably.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// Raises the soft file-descriptor limit to the hard limit and returns the
/// new soft limit.
pub fn raise_fd_limit() -> u64 {
    fd_limits().0
}

/// Raises the soft file-descriptor limit to the hard limit; returns the
/// new soft limit and the hard one.
fn fd_limits() -> (u64, u64) {
    // SAFETY: plain getrlimit/setrlimit on a struct we own.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) != 0 {
            return (1024, 1024);
        }
        if rl.rlim_cur < rl.rlim_max {
            let want = libc::rlimit {
                rlim_cur: rl.rlim_max,
                rlim_max: rl.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) == 0 {
                return (want.rlim_cur as u64, want.rlim_max as u64);
            }
        }
        (rl.rlim_cur as u64, rl.rlim_max as u64)
    }
}

/// Number of local ports the kernel hands out for outgoing connections
/// (`net.ipv4.ip_local_port_range`), if it can be read.
pub fn ephemeral_ports() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>());
    let lo = it.next()?.ok()?;
    let hi = it.next()?.ok()?;
    (hi >= lo).then(|| hi - lo + 1)
}

/// CPUs this process may run on (its affinity mask).
pub fn usable_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// What keeps this machine from holding a run: its limits, or a source
/// address it does not have. The message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CapacityError {
    #[error(
        "{users} threads need about {need} file descriptors, but the limit is {limit} \
         (ulimit -n); raise it (e.g. `ulimit -n {}` or LimitNOFILE= for a service) or use fewer threads",
        need.next_power_of_two()
    )]
    FileDescriptors { users: u64, need: u64, limit: u64 },
    /// Past the hard limit, which only root raises: what limits a larger
    /// run on this machine.
    #[error(
        "{users} threads need about {need} file descriptors, but this process may open at most {hard} \
         (its hard limit, ulimit -Hn, which only root can raise: `ulimit -Hn {}` as root, LimitNOFILE= for \
         a service, or nofile in /etc/security/limits.conf); or spread the threads over agents (`--agents`: \
         processes of their own), at most {} each",
        need.next_power_of_two(),
        hard.saturating_sub(64)
    )]
    HardFileDescriptors { users: u64, need: u64, hard: u64 },
    #[error(
        "{users} threads need as many simultaneous connections, but {addresses} source \
         address(es) × {ports} ephemeral ports (net.ipv4.ip_local_port_range) can hold only {}; \
         spread them with --source-addresses 127.0.0.1-127.0.0.N or widen the port range",
        ports * addresses
    )]
    EphemeralPorts { users: u64, addresses: u64, ports: u64 },
    #[error("source address {ip} is {ours} but the target is {theirs}: give source addresses of the target's family")]
    SourceFamily {
        ip: IpAddr,
        ours: &'static str,
        theirs: &'static str,
    },
    #[error("source address {ip} cannot be bound: {reason}; is it an address of this machine (`ip addr`)?")]
    SourceUnbound { ip: IpAddr, reason: String },
}

impl benchlab_input::Classify for CapacityError {
    /// The machine cannot hold the run as asked: it cannot run (exit 1).
    fn exit_class(&self) -> benchlab_input::ExitClass {
        benchlab_input::ExitClass::CannotRun
    }
}

/// Checks that the system can hold a run of `virtual_users` connections
/// spread over `source_addresses` local addresses (0 = the kernel's choice,
/// counted as one): each virtual user holds at most one connection, plus a
/// margin for the process's own files. Raises the fd limit first.
pub fn check_capacity(virtual_users: u64, source_addresses: usize) -> Result<(), CapacityError> {
    let (fds, hard) = fd_limits();
    let need = virtual_users + 64;
    if need > hard {
        return Err(CapacityError::HardFileDescriptors {
            users: virtual_users,
            need,
            hard,
        });
    }
    if need > fds {
        return Err(CapacityError::FileDescriptors {
            users: virtual_users,
            need,
            limit: fds,
        });
    }
    if let Some(ports) = ephemeral_ports() {
        let addrs = source_addresses.max(1) as u64;
        if virtual_users > ports * addrs {
            return Err(CapacityError::EphemeralPorts {
                users: virtual_users,
                addresses: addrs,
                ports,
            });
        }
    }
    Ok(())
}

/// Binds a socket of each target's address family to each of `sources`
/// (port 0, closed at once), so that a source address this machine does
/// not have is refused before the load, naming it, instead of failing
/// every connection of the run.
pub fn check_source_addresses(sources: &[IpAddr], targets: &[SocketAddr]) -> Result<(), CapacityError> {
    use socket2::{Domain, Socket, Type};
    let mut families: Vec<bool> = targets.iter().map(|t| t.is_ipv6()).collect();
    families.sort_unstable();
    families.dedup();
    for &ip in sources {
        for &v6 in &families {
            if ip.is_ipv6() != v6 {
                let (theirs, ours) = if v6 { ("IPv6", "IPv4") } else { ("IPv4", "IPv6") };
                return Err(CapacityError::SourceFamily { ip, ours, theirs });
            }
            let domain = if v6 { Domain::IPV6 } else { Domain::IPV4 };
            let bound = Socket::new(domain, Type::STREAM, None).and_then(|s| s.bind(&SocketAddr::new(ip, 0).into()));
            if let Err(e) = bound {
                return Err(CapacityError::SourceUnbound {
                    ip,
                    reason: e.to_string(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_advances() {
        let (u0, s0) = cpu_time(true);
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let (u1, s1) = cpu_time(true);
        assert!(u1 + s1 > u0 + s0);
    }

    #[test]
    fn source_addresses_must_be_bindable() {
        let target: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let here: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(check_source_addresses(&[here], &[target]), Ok(()));
        // TEST-NET-1 (RFC 5737) is on no machine.
        let away: IpAddr = "192.0.2.1".parse().unwrap();
        let err = check_source_addresses(&[here, away], &[target])
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("source address 192.0.2.1 cannot be bound"), "{err}");
        let v6: IpAddr = "::1".parse().unwrap();
        let err = check_source_addresses(&[v6], &[target]).unwrap_err().to_string();
        assert!(err.contains("::1 is IPv6"), "{err}");
    }

    #[test]
    fn capacity_limits() {
        assert!(check_capacity(10, 0).is_ok());
        // Past the hard limit (no machine has 2^62 descriptors): the
        // message says which limit and who may raise it.
        let err = check_capacity(u64::MAX / 4, 0).unwrap_err();
        assert!(matches!(err, CapacityError::HardFileDescriptors { .. }), "{err:?}");
        let err = err.to_string();
        assert!(
            err.contains("file descriptors, but this process may open at most"),
            "{err}"
        );
        assert!(err.contains("only root can raise"), "{err}");
    }
}
