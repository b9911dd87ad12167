//! "What limited the run": per mix, the verdict on what set its figures —
//! the server's CPU, a NIC, a disk, the load generator, or none of them —
//! with the evidence in words, and the monitored figures behind it.

use super::charts::{busiest_nic, server_average, server_cpu};
use super::*;

/// Whether any run's mix was monitored.
pub(super) fn any_resources(runs: &[Run]) -> bool {
    runs.iter()
        .any(|r| r.results.mixes.iter().any(|m| m.resources.is_some()))
}

pub(super) fn resources(runs: &[Run]) -> Markup {
    if !any_resources(runs) {
        return html! {};
    }
    html! {
        section #resources {
            h2 { "What limited the run: server resources" }
            p.sub {
                "Each monitored mix's verdict names the resource that limited it, from the server host's seconds inside the "
                "measurement window (CPU of the server's cores split into user and system time, context switches, NICs "
                "against their link speed, disks) and the load generator's own CPU. A generator whose cores were saturated "
                "measured itself, not the server; where client and server share one machine's cores, either may have set "
                "the figures."
            }
            @for (i, r) in runs.iter().enumerate() {
                @let mixes: Vec<&MixResult> = r.results.mixes.iter().filter(|m| m.resources.is_some()).collect();
                @if !mixes.is_empty() {
                    div.tw { table.resources data-run=(r.label) {
                        tr {
                            th { "run" } th.n { "mix" } th { "phase" } th.n { "threads" } th.n { "requests/s" } th { "verdict" }
                            th.n { "server CPU busy %" } th.n { "user %" } th.n { "system %" } th.n { "context switches / request" }
                            th { "network" } th.n { "disk ops/s" } th.n { "client CPU %" } th.n { "loop lag max ms" }
                        }
                        @for m in &mixes {
                            @let res = m.resources.as_ref();
                            @let v = res.map(|r| &r.verdict);
                            @let avg = server_average(m);
                            @let cpu = avg.map(server_cpu);
                            @let lag = m.client_data.iter().map(|c| c.loop_lag_max_us).max().unwrap_or(0);
                            tr data-mix=(m.mix) data-limit=(v.map_or(String::new(), |v| serde_json::to_value(v.limit).ok().and_then(|x| x.as_str().map(String::from)).unwrap_or_default())) {
                                (run_cell(i, &r.label))
                                td.n { (m.mix) }
                                td { (m.phase) }
                                td.n { (int(m.threads)) }
                                td.n { (requests_per_sec(m.figures.requests_per_sec)) }
                                td.verdict-text {
                                    @if let Some(v) = v {
                                        span class=(if matches!(v.limit, benchlab_results::resources::Limit::Client) { "flag" } else { "" }) { (v.summary) }
                                    }
                                }
                                td.n { (cpu.as_ref().map_or("–".into(), |c| pct100(c.busy()))) }
                                td.n { (cpu.as_ref().map_or("–".into(), |c| pct100(c.user))) }
                                td.n { (cpu.as_ref().map_or("–".into(), |c| pct100(c.kernel()))) }
                                td.n { (res.and_then(|r| r.hosts.first()).and_then(|h| h.context_switches_per_request).map_or("–".into(), |v| fixed(v, 2))) }
                                td { (avg.and_then(busiest_nic).map_or("–".into(), |n| match n.speed_mbit {
                                    Some(s) => format!("{} {} of {s} Mbit/s", n.name, fixed(n.mbit_per_sec(), 1)),
                                    None => format!("{} {} Mbit/s", n.name, fixed(n.mbit_per_sec(), 1)),
                                })) }
                                td.n { (avg.map_or("–".into(), |a| fixed(a.disks.iter().map(|d| d.ops_per_sec()).sum::<f64>(), 1))) }
                                td.n { (pct(m.client_cpu.utilisation)) }
                                td.n { (fixed(lag as f64 / 1000.0, 1)) }
                            }
                        }
                    } }
                    @for m in &mixes {
                        @if let Some(res) = &m.resources {
                            details {
                                summary { (swatch(i)) (r.label) " mix " (m.mix) ": " (res.verdict.summary) }
                                ul { @for e in &res.verdict.evidence { li { (e) } } }
                                p.sub {
                                    @for h in &res.hosts {
                                        "Host " b { (h.host) } " (" (h.source) "): " (plural(h.seconds.len() as u64, "second", "seconds")) " sampled in the window. "
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}
