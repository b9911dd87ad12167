//! A mix's start spread: how together its clients began. Every client
//! notes when its first request began on its own wall clock; a remote
//! agent's driver puts that on the controller's clock with the offset its
//! clock check measured (and says how far off that may be); here each is
//! compared with the start the client was given: the mix's start plus the
//! client's own delay (docs/counting.md, "Start spread").

use crate::drive::{ClientEnd, Driven};
use crate::plan::ClientPlan;
use benchlab_results::StartSpread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn nanos_of(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// The start spread of a mix started at `start_at` (the controller's
/// clock), `plans` its clients' plans in client order: `None` when no
/// client reported a first send (none sent a request, or every one was
/// lost).
pub fn start_spread(start_at: SystemTime, plans: &[ClientPlan], driven: &Driven) -> Option<StartSpread> {
    let firsts = driven.clients.iter().enumerate().filter_map(|(i, end)| {
        let ClientEnd::Finished(r) = end else { return None };
        let delay = plans.get(i).map_or(Duration::ZERO, |p| p.settings.start_delay);
        Some((i as u32 + 1, r.first_send_unix_ns?, delay, r.first_send_uncertainty_ns))
    });
    spread_of(start_at, firsts)
}

/// The start spread of clients that began at `start_at` (the controller's
/// clock): per client its number, its first send (UTC ns, the controller's
/// clock), its own start delay and how far off that first send may be. A
/// web mix's clients and a file mix's (whose first send is already less
/// its user's drawn delay: pass zero) alike.
pub fn spread_of(
    start_at: SystemTime,
    firsts: impl IntoIterator<Item = (u32, i64, Duration, u64)>,
) -> Option<StartSpread> {
    let start = nanos_of(start_at);
    // (client number, ns after its own start), and the worst uncertainty.
    let mut late: Vec<(u32, i128)> = Vec::new();
    let mut uncertainty_ns = 0u64;
    for (client, first, delay, uncertainty) in firsts {
        late.push((client, i128::from(first) - (start + delay.as_nanos() as i128)));
        uncertainty_ns = uncertainty_ns.max(uncertainty);
    }
    let min = late.iter().map(|l| l.1).min()?;
    let (latest_client, max) = late.iter().copied().max_by_key(|l| l.1)?;
    let us = |ns: i128| i64::try_from(ns.div_euclid(1000)).unwrap_or(i64::MAX);
    let (min_us, max_us) = (us(min), us(max));
    Some(StartSpread {
        clients: late.len() as u32,
        min_us,
        max_us,
        // From the whole µs shown, so that it is exactly max − min.
        spread_us: max_us.abs_diff(min_us),
        latest_client,
        clock_uncertainty_us: uncertainty_ns.div_ceil(1000),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchlab_engine::{ClientReport, Stats};
    use std::time::Duration;

    fn report(first: Option<i64>, uncertainty_ns: u64) -> ClientEnd {
        ClientEnd::Finished(Box::new(ClientReport {
            stats: Stats::new(1),
            seconds: Vec::new(),
            in_flight: 0,
            cpu_user: Duration::ZERO,
            cpu_system: Duration::ZERO,
            elapsed: Duration::ZERO,
            tls_error: None,
            check_failures: Default::default(),
            users_arrived: 0,
            users_waiting: 0,
            peak_connections: 0,
            threads_lost: 0,
            h2_settings: None,
            first_send_unix_ns: first,
            first_send_uncertainty_ns: uncertainty_ns,
        }))
    }

    fn plan(delay: Duration) -> ClientPlan {
        ClientPlan {
            urls: "x".into(),
            settings: benchlab_engine::ClientSettings {
                virtual_users: 1,
                load: benchlab_engine::Load::Closed,
                os_threads: 1,
                stop: benchlab_engine::Stop::After(Duration::from_secs(1)),
                window: (Duration::ZERO, Duration::from_secs(1)),
                start_delay: delay,
                think_time: Duration::ZERO,
                ramp_up: Duration::ZERO,
                timeout: Duration::from_secs(1),
                receive_buffer: 4096,
                ..Default::default()
            },
        }
    }

    #[test]
    fn each_client_counts_from_its_own_start_and_the_worst_uncertainty_is_kept() {
        let start_at = UNIX_EPOCH + Duration::from_secs(1_764_000_000);
        let s = nanos_of(start_at) as i64;
        let plans = [
            plan(Duration::ZERO),
            plan(Duration::from_millis(50)),
            plan(Duration::ZERO),
        ];
        let driven = Driven {
            clients: vec![
                // 120 µs late; 50 ms + 40 µs late against 50 ms of delay;
                // 30 µs early.
                report(Some(s + 120_000), 40_000),
                report(Some(s + 50_040_000), 250_500),
                report(Some(s - 30_000), 0),
            ],
            seconds: Vec::new(),
            partial: false,
        };
        let spread = start_spread(start_at, &plans, &driven).expect("a spread");
        assert_eq!(
            spread,
            StartSpread {
                clients: 3,
                min_us: -30,
                max_us: 120,
                spread_us: 150,
                latest_client: 1,
                clock_uncertainty_us: 251,
            }
        );
    }

    #[test]
    fn clients_without_a_first_send_are_left_out() {
        let start_at = UNIX_EPOCH + Duration::from_secs(1_764_000_000);
        let s = nanos_of(start_at) as i64;
        let driven = Driven {
            clients: vec![
                report(None, 0),
                ClientEnd::Lost {
                    why: "gone".into(),
                    window: Default::default(),
                    conn: Default::default(),
                    seconds: 0,
                },
                report(Some(s + 7_000), 0),
            ],
            seconds: Vec::new(),
            partial: false,
        };
        let plans = [plan(Duration::ZERO), plan(Duration::ZERO), plan(Duration::ZERO)];
        let spread = start_spread(start_at, &plans, &driven).expect("a spread");
        assert_eq!((spread.clients, spread.spread_us, spread.latest_client), (1, 0, 3));
        // The spread is that of the whole µs shown: 1.9 µs and 4.2 µs are
        // 1 and 4, 3 apart (not the 2 of 2.3 µs truncated).
        let rounded = Driven {
            clients: vec![report(Some(s + 1_900), 0), report(Some(s + 4_200), 0)],
            seconds: Vec::new(),
            partial: false,
        };
        let spread = start_spread(start_at, &plans, &rounded).expect("a spread");
        assert_eq!((spread.min_us, spread.max_us, spread.spread_us), (1, 4, 3));
        let none = Driven {
            clients: vec![report(None, 0)],
            seconds: Vec::new(),
            partial: false,
        };
        assert_eq!(start_spread(start_at, &plans, &none), None);
    }
}
