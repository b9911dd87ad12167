//! What only file suites have: per mix, bytes read and written and their
//! Mbit/s, operations not sent, loadfile passes and errors by NT status;
//! per operation kind, its count and latency (the per-operation latency
//! table NetBench and dbench print).

use super::*;

pub(super) fn files(runs: &[Run]) -> Markup {
    if !runs.iter().any(is_file) {
        return html! {};
    }
    html! {
        section #files {
            h2 { "File operations" }
            p.sub {
                "A file suite's operations are its requests: every operation answered inside the window, those answered with another NT status than the loadfile expected included (they are its errors). Mbit/s = (bytes read + bytes written) × 8 ÷ 10⁶ ÷ the window. Operations the client could not send over the target's protocol are counted apart (not sent), in no other figure. Wire bytes are every frame the counted operations sent and received (headers, signatures and encryption included), where the client sees its wire (benchlab's SMB2 client); bytes read and written are the payload."
            }
            @for (i, r) in runs.iter().enumerate().filter(|(_, r)| is_file(r)) {
                @let smb = r.results.mixes.iter().any(|m| m.files.as_ref().is_some_and(|f| f.smb.is_some()));
                h3 { (swatch(i)) (r.label) }
                div.tw { table {
                    tr {
                        th.n { "mix" } th { "phase" } th.n { "clients" } th.n { "users" } th.n { "Mbit/s" } th.n { "read Mbit/s" }
                        th.n { "write Mbit/s" } th.n { "operations/s" } th.n { "errors" } th.n { "not sent" } th.n { "loops" }
                        th.n { "prepared bytes" } th.n { "wire bytes sent" } th.n { "wire bytes received" } th.n { "lease breaks" } th.n { "oplock breaks" } th.n { "fairness" } th { "errors by status" }
                        @if smb { th { "SMB negotiated" } }
                    }
                    @for m in &r.results.mixes {
                        @if let Some(f) = &m.files {
                            tr {
                                td.n { (m.mix) }
                                td { (m.phase) }
                                td.n { (int(m.clients.into())) }
                                td.n { (int(f.users.into())) }
                                td.n data-field="mbit_per_sec" { (mbit_per_sec(m.figures.mbit_per_sec)) }
                                td.n data-field="files.read_mbit_per_sec" { (mbit_per_sec(f.read_mbit_per_sec)) }
                                td.n data-field="files.write_mbit_per_sec" { (mbit_per_sec(f.write_mbit_per_sec)) }
                                td.n { (requests_per_sec(m.figures.requests_per_sec)) }
                                td.n { (int(m.figures.errors_total)) }
                                td.n { (int(f.not_sent)) }
                                td.n { (int(f.loops)) }
                                td.n { (int(f.prepared_bytes)) }
                                // Absent where the client cannot see its wire (libsmbclient, file://).
                                td.n data-field="files.wire_bytes_sent" { (f.wire_bytes_sent.map(int).unwrap_or_else(|| "—".into())) }
                                td.n data-field="files.wire_bytes_received" { (f.wire_bytes_received.map(int).unwrap_or_else(|| "—".into())) }
                                td.n data-field="files.lease_breaks" { (f.lease_breaks.map(int).unwrap_or_else(|| "—".into())) }
                                td.n data-field="files.oplock_breaks" { (f.oplock_breaks.map(int).unwrap_or_else(|| "—".into())) }
                                td.n { (fixed(f.fairness, 3)) }
                                td { (f.errors_by_status.iter().map(|(k, n)| format!("{k}: {}", int(*n))).collect::<Vec<_>>().join("; ")) }
                                @if smb { td data-field="files.smb" { (f.smb.as_ref().map_or("—".to_string(), |n| n.describe())) } }
                            }
                        }
                    }
                } }
                h3 id={ "operations-" (i) } { "Per-operation latency — " (r.label) }
                div.tw { table.operations {
                    tr {
                        th.n { "mix" } th { "operation" } th.n { "count" } th.n { "operations/s" } th.n { "errors" }
                        th.n { "not sent" } th.n { "mean µs" } th.n { "p50 µs" } th.n { "p90 µs" } th.n { "p99 µs" }
                        th.n { "p99.9 µs" } th.n { "max µs" }
                    }
                    @for m in &r.results.mixes {
                        @let not_sent = m.files.as_ref().map(|f| &f.not_sent_by_operation);
                        @for c in &m.classes {
                            @let f = &c.figures;
                            tr data-mix=(m.mix) data-operation=(c.name) {
                                td.n { (m.mix) }
                                td { (c.name) }
                                td.n data-field="requests" { (int(f.requests)) }
                                td.n { (requests_per_sec(f.requests_per_sec)) }
                                td.n { (int(f.errors_total)) }
                                td.n { (int(not_sent.and_then(|n| n.get(&c.name)).copied().unwrap_or(0))) }
                                td.n { (mean_us(f.latency_us.mean)) }
                                td.n data-field="latency_us.p50" { (int(f.latency_us.p50)) }
                                td.n { (int(f.latency_us.p90)) }
                                td.n data-field="latency_us.p99" { (int(f.latency_us.p99)) }
                                td.n { (int(f.latency_us.p999)) }
                                td.n { (int(f.latency_us.max)) }
                            }
                        }
                    }
                } }
            }
        }
    }
}
