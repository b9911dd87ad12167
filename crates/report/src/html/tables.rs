//! The tables: SPICE efficiency, fairness, the summary, open-loop, class
//! and client data reports, the configuration disclosure and the
//! definitions.

use super::*;

/// Why the at-peak latency efficiency says little by itself, in one
/// sentence (shown beside the efficiency table and in the analysis).
pub(super) const CLOSED_LOOP_LATENCY: &str = "In a closed loop each thread waits for its answer before it sends again, so a mix's mean latency is about its threads ÷ its requests/s: at each one's peak the latency ratio mostly restates how many threads each peak took, and the equal-load row, with the same threads on both sides, is the one that compares the two paths.";

/// A cell showing a results.json field (`data-field`), right-aligned.
fn field(name: &str, value: impl maud::Render) -> Markup {
    html! { td.n data-field=(name) { (value) } }
}

pub(super) fn efficiency(analyses: &[RunAnalysis]) -> Markup {
    let any = analyses.iter().any(|a| !a.efficiency.is_empty());
    let mixed = analyses
        .iter()
        .any(|a| a.phases.iter().any(|p| !p.class_latency.is_empty()));
    html! {
        section #efficiency {
            h2 { "SPICE efficiency" }
            @if !any && !mixed {
                p { "Not applicable: SPICE efficiency needs a phase of static requests and a phase of dynamic (SPICE) requests, or dynamic classes beside static ones." }
            } @else {
                p {
                    "Seed 001's definitions: request efficiency = SPICE request rate ÷ static request rate; latency efficiency = static latency ÷ SPICE latency, with the "
                    b { "mean" } " latency (seed 001 measured the average). Below 100 % the dynamic path is slower. Evaluated at each one's peak (each phase's own highest requests/s), at the highest load (each phase's mix with the most threads) and at equal load (the static and the SPICE mix with the same threads, the most both ran)."
                }
                p.note { (CLOSED_LOOP_LATENCY) }
                @if any {
                    div.tw { table {
                        tr {
                            th { "run" } th { "phase" } th { "SPI" } th { "at" } th.n { "static mix (threads)" } th.n { "SPICE mix (threads)" }
                            th.n { "static req/s" } th.n { "SPICE req/s" } th.n { "request efficiency" } th.n { "static mean latency µs" }
                            th.n { "SPICE mean latency µs" } th.n { "latency efficiency" }
                        }
                        @for (i, a) in analyses.iter().enumerate() {
                            @for e in &a.efficiency {
                                @for (at, pt) in [("peak", &e.at_peak), ("highest load", &e.at_highest_load), ("equal load", &e.at_equal_load)] {
                                    @if let Some(pt) = pt {
                                        tr data-run=(a.label) data-phase=(e.phase) data-at=(at) {
                                            (run_cell(i, &a.label))
                                            td { (e.phase) }
                                            td { (e.spi.as_deref().unwrap_or("")) }
                                            td { (at) }
                                            td.n { (pt.static_mix) " (" (int(pt.static_threads)) ")" }
                                            td.n { (pt.spice_mix) " (" (int(pt.spice_threads)) ")" }
                                            td.n { (requests_per_sec(pt.static_rate)) }
                                            td.n { (requests_per_sec(pt.spice_rate)) }
                                            td.n data-field="request_efficiency" { b { (opt_pct(pt.request)) } }
                                            td.n { (mean_us(pt.static_latency_mean_us)) }
                                            td.n { (mean_us(pt.spice_latency_mean_us)) }
                                            td.n data-field="latency_efficiency" { b { (opt_pct(pt.latency)) } }
                                        }
                                    }
                                }
                            }
                        }
                    } }
                }
                @if mixed {
                    h3 { "Dynamic classes within mixed phases" }
                    p { "Where static and dynamic classes share a mix, only the latency efficiency is defined: static classes' mean latency (request-weighted) ÷ the dynamic class's mean latency in the same mix. The classes' request rates follow their configured shares, so a request efficiency would only restate them." }
                    div.tw { table {
                        tr {
                            th { "run" } th { "phase" } th { "at" } th.n { "mix (threads)" } th { "class" } th { "SPI" }
                            th.n { "static mean latency µs" } th.n { "class mean latency µs" } th.n { "latency efficiency" }
                        }
                        @for (i, a) in analyses.iter().enumerate() {
                            @for p in &a.phases {
                                @for c in &p.class_latency {
                                    tr {
                                        (run_cell(i, &a.label))
                                        td { (p.name) }
                                        td { (c.at) }
                                        td.n { (c.mix) " (" (int(c.threads)) ")" }
                                        td { (c.class) }
                                        td { (c.spi.as_deref().unwrap_or("")) }
                                        td.n { (fixed(c.static_latency_mean_us, 1)) }
                                        td.n { (mean_us(c.class_latency_mean_us)) }
                                        td.n { b { (opt_pct(c.latency_efficiency)) } }
                                    }
                                }
                            }
                        }
                    } }
                }
            }
        }
    }
}

/// A mix's load in a table's threads column: its threads, or the offered
/// rate of an open loop (whose threads are 0).
fn mix_load(run: &Run, mix: usize, threads: u64) -> String {
    match run
        .results
        .mixes
        .iter()
        .find(|m| m.mix == mix)
        .and_then(|m| m.open_loop.as_ref())
    {
        Some(ol) => format!("{}/s offered", requests_per_sec(ol.rate)),
        None => int(threads),
    }
}

/// Mean, min ÷ mean, max ÷ mean and CV of a spread, as four cells.
fn spread_cells(s: &Option<crate::analysis::Spread>) -> Markup {
    html! {
        @match s {
            Some(s) => {
                td.n { (fixed(s.mean, 1)) }
                td.n { (format!("{:.3}", s.min_ratio)) }
                td.n { (format!("{:.3}", s.max_ratio)) }
                td.n { (format!("{:.3}", s.cv)) }
            }
            None => { td.n { "–" } td {} td {} td {} }
        }
    }
}

pub(super) fn fairness(runs: &[Run], analyses: &[RunAnalysis], o: &ReportOptions) -> Markup {
    html! {
        section #fairness {
            h2 { "Fairness across clients and the useful peak" }
            p.sub {
                "Per mix, the spread of the participating clients' requests/s and mean latency: min ÷ mean, max ÷ mean and the coefficient of variation (standard deviation ÷ mean). A client is flagged when its rate is outside ±"
                (fixed(o.fairness_tolerance * 100.0, 0)) " % of the mix's median client rate (its ratio to the median is shown). A mix counts towards the useful peak when no client is flagged or taken out, p99 ≤ "
                (ms(o.latency_limit_us as f64)) " and errors ≤ " (pct(o.max_error_share)) "."
            }
            div.tw { table {
                tr {
                    th { "run" } th { "phase" } th.n { "mix" } th.n { "threads" } th.n { "clients" } th.n { "client req/s: mean" }
                    th.n { "min ÷ mean" } th.n { "max ÷ mean" } th.n { "CV" } th.n { "client mean latency µs: mean" }
                    th.n { "min ÷ mean" } th.n { "max ÷ mean" } th.n { "CV" } th { "flagged clients: ×rate ÷ median" } th { "useful peak?" }
                }
                @for (i, a) in analyses.iter().enumerate() {
                    @for p in &a.phases {
                        @for (f, u) in p.fairness.iter().zip(&p.useful) {
                            @let flagged: Vec<String> = f.flagged.iter().map(|c| format!(
                                "client {}: ×{} ({}/s)",
                                c.client,
                                c.ratio.map(|r| format!("{r:.3}")).unwrap_or_else(|| "∞".into()),
                                requests_per_sec(c.requests_per_sec)
                            ))
                            .chain(f.taken_out.iter().map(|c| format!("client {c}: taken out")))
                            .collect();
                            tr data-run=(a.label) data-mix=(f.mix) {
                                (run_cell(i, &a.label))
                                td { (p.name) }
                                td.n { (f.mix) }
                                td.n { (mix_load(&runs[i], f.mix, f.threads)) }
                                td.n { (int(f.clients_participating.into())) }
                                (spread_cells(&f.rate))
                                (spread_cells(&f.latency))
                                td {
                                    @if !flagged.is_empty() {
                                        span.flag { @for (k, l) in flagged.iter().enumerate() { @if k > 0 { br; } (l) } }
                                    }
                                }
                                td {
                                    @if u.reasons.is_empty() { span.ok { "yes" } } @else { "no: " (u.reasons.join(", ")) }
                                }
                            }
                        }
                    }
                }
            } }
        }
    }
}

pub(super) fn summary(runs: &[Run]) -> Markup {
    html! {
        section #summary {
            h2 { "Summary report" }
            p.sub { "WebBench's summary report, a row per mix, values as in results.json with each quantity's decimals (latency in µs; MB = 10⁶ bytes, Mbit = 10⁶ bits; wire bytes, headers included)." }
            @for (i, r) in runs.iter().enumerate() {
                h3 { (swatch(i)) (r.label) }
                div.tw { table.summary data-run=(r.label) {
                    tr {
                        th.n { "mix" } th { "phase" } th.n { "clients" } th.n { "taking part" } th.n { "threads" } th.n { "window s" }
                        th.n { "requests" } th.n { "requests/s" } th.n { "MB/s" } th.n { "Mbit/s" } th.n { "mean µs" } th.n { "p50 µs" }
                        th.n { "p90 µs" } th.n { "p99 µs" } th.n { "p99.9 µs" } th.n { "max µs" } th.n { "errors" } th { "errors by kind" }
                        th.n { "connections" } th.n { "reconnects" } th.n { "in flight" } th.n { "client CPU s" }
                        th.n { "client CPU % of cores" } th { "client-bound" }
                    }
                    @for m in &r.results.mixes {
                        @let f = &m.figures;
                        @let l = &f.latency_us;
                        tr data-mix=(m.mix) {
                            (field("mix", m.mix))
                            td {
                                (m.phase)
                                @if m.partial { " (partial)" }
                                // A mix the peak search chose says so, and when it ran.
                                @if let Some(s) = &m.search { " (search step " (s.step) ", " (s.kind.name()) ")" }
                                // An open loop's load is its rate: its threads column reads 0.
                                @if let Some(ol) = &m.open_loop { " (open loop, offered " (requests_per_sec(ol.rate)) " requests/s)" }
                            }
                            (field("clients", int(m.clients as u64)))
                            (field("clients_participating", int(m.clients_participating as u64)))
                            (field("threads", int(m.threads)))
                            (field("window_s", seconds(m.window_s)))
                            (field("requests", int(f.requests)))
                            (field("requests_per_sec", requests_per_sec(f.requests_per_sec)))
                            (field("mbytes_per_sec", mbs(f.bytes_per_sec)))
                            (field("mbit_per_sec", mbit_per_sec(f.mbit_per_sec)))
                            (field("latency_us.mean", mean_us(l.mean)))
                            (field("latency_us.p50", int(l.p50)))
                            (field("latency_us.p90", int(l.p90)))
                            (field("latency_us.p99", int(l.p99)))
                            (field("latency_us.p999", int(l.p999)))
                            (field("latency_us.max", int(l.max)))
                            (field("errors_total", int(f.errors_total)))
                            td { (nonzero_errors(m)) }
                            (field("connections_opened", int(m.connections_opened)))
                            (field("reconnects", int(m.reconnects)))
                            (field("in_flight", int(m.in_flight)))
                            (field("client_cpu_s", seconds(m.client_cpu_s)))
                            (field("client_cpu.utilisation", pct(m.client_cpu.utilisation)))
                            td { @if m.client_cpu.client_bound { span.flag { "yes" } } @else { (yes_no(false)) } }
                        }
                    }
                } }
            }
        }
    }
}

/// The open-loop mixes (`rate = R`): the load is the offered rate, so the
/// table shows what was offered, what was achieved, how well the schedule
/// was kept (late sends, waits at the in-flight cap) and latency both ways:
/// corrected (from each request's intended send time) beside as-sent.
pub(super) fn open_loop(runs: &[Run]) -> Markup {
    if !any_open_loop(runs) {
        return html! {};
    }
    html! {
        section #open-loop {
            h2 { "Open loop" }
            p.sub {
                "Mixes run at a rate (" code { "rate = R" } ") instead of threads: requests are sent on a schedule whatever the server does, so a stall shows in the latency (coordinated omission avoided). Corrected latency counts from each request's intended send time; as-sent latency from when it actually left. A send is late when it left more than the tolerance after its time; a wait at the in-flight cap means the cap, not the schedule, held a request back; a send due but never sent had not left when the run ended."
            }
            @for (i, r) in runs.iter().enumerate() {
                h3 { (swatch(i)) (r.label) }
                div.tw { table.open-loop data-run=(r.label) {
                    tr {
                        th.n { "mix" } th { "phase" } th { "arrival" } th.n { "offered requests/s" } th.n { "sends/s" }
                        th.n { "achieved requests/s" } th.n { "late sends" } th.n { "late share" } th.n { "max in flight (per client)" }
                        th.n { "waits at the cap" } th.n title="Sends due inside the window that had not left when the run ended; with the sends, the schedule's count" { "due, never sent" } th.n { "corrected p50 µs" } th.n { "as-sent p50 µs" } th.n { "corrected p99 µs" }
                        th.n { "as-sent p99 µs" } th.n { "connections opened" }
                        th.n title="The most connections open at the same time; with several clients the sum of each one's most (≤: an upper bound)" { "most open at once" }
                    }
                    @for m in &r.results.mixes {
                        @if let Some(ol) = &m.open_loop {
                            @let late = if ol.sends > 0 { ol.late_sends as f64 / ol.sends as f64 } else { 0.0 };
                            tr data-mix=(m.mix) {
                                (field("mix", m.mix))
                                td { (m.phase) }
                                td { (ol.arrival) }
                                (field("open_loop.rate", requests_per_sec(ol.rate)))
                                (field("open_loop.sends_per_sec", requests_per_sec(ol.sends_per_sec)))
                                (field("requests_per_sec", requests_per_sec(m.figures.requests_per_sec)))
                                td.n data-field="open_loop.late_sends" {
                                    @if ol.late_sends > 0 { span.flag { (int(ol.late_sends)) } } @else { (int(ol.late_sends)) }
                                }
                                (field("late_share", pct(late)))
                                (field("open_loop.max_in_flight", int(ol.max_in_flight.into())))
                                (field("open_loop.max_in_flight_hit", int(ol.max_in_flight_hit)))
                                td.n data-field="open_loop.unsent" {
                                    @if ol.unsent > 0 { span.flag { (int(ol.unsent)) } } @else { (int(ol.unsent)) }
                                }
                                (field("latency_us.p50", int(m.figures.latency_us.p50)))
                                (field("open_loop.latency_as_sent_us.p50", int(ol.latency_as_sent_us.p50)))
                                (field("latency_us.p99", int(m.figures.latency_us.p99)))
                                (field("open_loop.latency_as_sent_us.p99", int(ol.latency_as_sent_us.p99)))
                                (field("connections_opened", int(m.connections_opened)))
                                @let bound = if ol.peak_connections_upper_bound { "≤ " } else { "" };
                                (field("open_loop.peak_connections", format!("{bound}{}", int(ol.peak_connections))))
                            }
                        }
                    }
                } }
            }
        }
    }
}

/// Whether any run has an open-loop mix (the page then has an open-loop
/// section, and the navigation a link to it).
pub(super) fn any_open_loop(runs: &[Run]) -> bool {
    runs.iter()
        .any(|r| r.results.mixes.iter().any(|m| m.open_loop.is_some()))
}

/// Whether any run has a flow workload's mix (the page then has a flows
/// section, and the navigation a link to it).
pub(super) fn any_flows(runs: &[Run]) -> bool {
    runs.iter().any(|r| r.results.mixes.iter().any(|m| m.flows.is_some()))
}

/// A flow workload's mixes: the flows walked and abandoned, and each step
/// (its class) with its requests, failed checks, bytes each way and
/// latency, and the first failed check of each step in words.
pub(super) fn flows(runs: &[Run]) -> Markup {
    if !any_flows(runs) {
        return html! {};
    }
    html! {
        section #flows {
            h2 { "Flows" }
            p.sub {
                "Each virtual user walks the flow's steps with its own cookie jar, data and captures. A flow is completed when its last step's response passed (counted as the user starts over), abandoned when a step failed: a check or capture (" code { "check_failed" } ") or the request itself. Steps are the mix's classes."
            }
            @for (i, r) in runs.iter().enumerate() {
                h3 { (swatch(i)) (r.label) }
                div.tw { table.flows data-run=(r.label) {
                    tr {
                        th.n { "mix" } th.n { "threads" } th { "step" } th.n { "requests" } th.n { "requests/s" }
                        th.n { "failed checks" } th.n { "errors" } th.n { "bytes sent" } th.n { "bytes received" }
                        th.n { "p50 µs" } th.n { "p99 µs" } th { "first failed check" }
                    }
                    @for m in &r.results.mixes {
                        @if let Some(fl) = &m.flows {
                            tr data-mix=(m.mix) {
                                td.n { (m.mix) }
                                td.n { (mix_load(r, m.mix, m.threads)) }
                                td { b { "all steps" } }
                                (field("flows.completed", format!("{} flows", int(fl.completed))))
                                (field("flows.completed_per_sec", requests_per_sec(fl.completed_per_sec)))
                                td.n { }
                                td.n data-field="flows.abandoned" {
                                    @if fl.abandoned > 0 { span.flag { (int(fl.abandoned)) " abandoned" } } @else { "0 abandoned" }
                                }
                                td.n { (int(m.figures.bytes_sent)) }
                                td.n { (int(m.figures.bytes)) }
                                td.n { (int(m.figures.latency_us.p50)) }
                                td.n { (int(m.figures.latency_us.p99)) }
                                td { }
                            }
                            @for c in &m.classes {
                                @let f = &c.figures;
                                @let failed = f.errors.get("check_failed").copied().unwrap_or(0);
                                tr data-mix=(m.mix) data-step=(c.name) {
                                    td.n { (m.mix) }
                                    td.n { }
                                    td { (c.name) }
                                    td.n { (int(f.requests)) }
                                    td.n { (requests_per_sec(f.requests_per_sec)) }
                                    td.n { @if failed > 0 { span.flag { (int(failed)) } } @else { "0" } }
                                    td.n { (int(f.errors_total)) }
                                    td.n { (int(f.bytes_sent)) }
                                    td.n { (int(f.bytes)) }
                                    td.n { (int(f.latency_us.p50)) }
                                    td.n { (int(f.latency_us.p99)) }
                                    td { (fl.check_failures.get(&c.name).map(String::as_str).unwrap_or("")) }
                                }
                            }
                        }
                    }
                } }
            }
        }
    }
}

pub(super) fn classes(runs: &[Run]) -> Markup {
    html! {
        section #classes {
            h2 { "Classes" }
            p.sub { "Per mix and URL class: configured and observed share of requests, rates and latency." }
            @for (i, r) in runs.iter().enumerate() {
                h3 { (swatch(i)) (r.label) }
                div.tw { table {
                    tr {
                        th.n { "mix" } th.n { "threads" } th { "class" } th { "kind" } th { "SPI" } th { "protocol" } th.n { "configured %" }
                        th.n { "observed %" } th.n { "requests" } th.n { "requests/s" } th.n { "MB/s" } th.n { "mean µs" }
                        th.n { "p50 µs" } th.n { "p99 µs" } th.n { "errors" }
                    }
                    @for m in &r.results.mixes {
                        @for c in &m.classes {
                            @let f = &c.figures;
                            tr {
                                td.n { (m.mix) }
                                td.n { (mix_load(r, m.mix, m.threads)) }
                                td { (c.name) }
                                td { (c.kind) }
                                td { (c.spi.as_deref().unwrap_or("")) }
                                td { (m.class_protocol(&c.name)) }
                                td.n { (pct100(c.percent)) }
                                td.n { (pct100(c.observed_percent)) }
                                td.n { (int(f.requests)) }
                                td.n { (requests_per_sec(f.requests_per_sec)) }
                                td.n { (mbs(f.bytes_per_sec)) }
                                td.n { (mean_us(f.latency_us.mean)) }
                                td.n { (int(f.latency_us.p50)) }
                                td.n { (int(f.latency_us.p99)) }
                                td.n { (int(f.errors_total)) }
                            }
                        }
                    }
                } }
            }
        }
    }
}

pub(super) fn clients(runs: &[Run]) -> Markup {
    html! {
        section #clients {
            h2 { "Client data report" }
            p.sub { "WebBench's client data report, a row per mix × client: a server that treats clients unequally shows here." }
            @for (i, r) in runs.iter().enumerate() {
                @let rows: usize = r.results.mixes.iter().map(|m| m.client_data.len()).sum();
                details open[rows <= 64] {
                    summary { (swatch(i)) (r.label) " — " (plural(rows as u64, "row", "rows")) }
                    div.tw { table.clients data-run=(r.label) {
                        tr {
                            th.n { "mix" } th.n { "client" } th { "address" } th { "taken out" } th.n { "requests" } th.n { "requests/s" }
                            th.n { "MB/s" } th.n { "mean µs" } th.n { "p50 µs" } th.n { "p99 µs" } th.n { "errors" } th.n { "connections" }
                            th.n { "in flight" } th.n { "delay s" } th.n { "CPU s" }
                        }
                        @for m in &r.results.mixes {
                            @for c in &m.client_data {
                                @let f = &c.figures;
                                tr data-mix=(m.mix) data-client=(c.client) {
                                    td.n { (m.mix) }
                                    td.n { (c.client) }
                                    td { (c.address.as_deref().unwrap_or("")) }
                                    // A lost client says so, and why (its figures are kept
                                    // apart from the mix's).
                                    td {
                                        @if let Some(why) = &c.lost { span.flag title=(why) { "lost" } }
                                        @else if c.taken_out { span.flag { "yes" } }
                                        @else { (yes_no(false)) }
                                    }
                                    (field("requests", int(f.requests)))
                                    (field("requests_per_sec", requests_per_sec(f.requests_per_sec)))
                                    td.n { (mbs(f.bytes_per_sec)) }
                                    td.n { (mean_us(f.latency_us.mean)) }
                                    td.n { (int(f.latency_us.p50)) }
                                    td.n { (int(f.latency_us.p99)) }
                                    td.n { (int(f.errors_total)) }
                                    td.n { (int(c.connections_opened)) }
                                    td.n { (int(c.in_flight)) }
                                    td.n { (seconds(c.delay_s)) }
                                    td.n { (seconds(c.cpu_s)) }
                                }
                            }
                        }
                    } }
                    // How together each mix's clients began (docs/counting.md,
                    // "Start spread").
                    @let spreads: Vec<_> = r.results.mixes.iter().filter_map(|m| Some((m.mix, m.start_spread.as_ref()?))).collect();
                    @if !spreads.is_empty() {
                        ul.spread {
                            @for (mix, s) in &spreads { li data-mix=(mix) { "mix " (mix) ": " (s.summary()) } }
                        }
                    }
                }
            }
        }
    }
}

/// A CPU list as `lab up --cpus` takes it, or "not pinned".
pub(crate) fn cpu_list(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "not pinned".to_owned()
    } else {
        cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
    }
}

/// The disclosure rows that results of older versions lack: the client
/// CPU set and the host facts.
fn environment_rows(e: &benchlab_results::Environment) -> Vec<(&'static str, String)> {
    let mut rows = vec![
        ("client CPUs", cpu_list(&e.client_cpus)),
        (
            "page cache",
            if e.cold_cache {
                match &e.cold_cache_method {
                    Some(how) => format!("dropped before each mix (--cold-cache): {how}"),
                    None => "dropped before each mix (--cold-cache)".into(),
                }
            } else {
                "as the previous mix left it".into()
            },
        ),
    ];
    if let Some(h) = &e.host_facts {
        rows.push(("CPU model", h.cpu_model.clone()));
        rows.push(("CPUs online", h.cpus_online.to_string()));
        rows.push((
            "memory",
            format!("{} bytes", benchlab_format::thousands(h.memory_bytes)),
        ));
        for (k, v) in &h.kernel_tunables {
            // The names are static (KERNEL_TUNABLES); an unknown one is skipped.
            if let Some(name) = benchlab_results::KERNEL_TUNABLES.iter().find(|n| *n == k) {
                rows.push((name, if v.is_empty() { "unreadable".into() } else { v.clone() }));
            }
        }
    }
    rows
}

pub(super) fn config(runs: &[Run]) -> Markup {
    html! {
        section #config {
            h2 { "Configuration disclosure" }
            p.sub { "Everything needed to reproduce each run: the command, the machine, the suite file as run and the parameters of every mix." }
            @for (i, r) in runs.iter().enumerate() {
                @let e = &r.results.environment;
                @let s = &r.results.suite;
                @let cmd: Vec<String> = e.command.iter().map(|a| shell_quote(a)).collect();
                @let rows: Vec<(&str, String)> = vec![
                    ("results directory", r.dir.display().to_string()),
                    ("command", cmd.join(" ")),
                    ("benchlab version", e.benchlab_version.clone()),
                    ("host", e.host.clone()),
                    ("kernel", e.kernel.clone()),
                    ("CPU", e.cpu.clone()),
                    ("cores", e.cores.to_string()),
                    ("target", e.target.clone()),
                    ("started", utc(e.started_unix)),
                    ("time scale", e.time_scale.to_string()),
                    ("suite", format!("{} — {}", s.name, s.description)),
                    ("suite file", s.file.clone()),
                    ("seed", s.seed.to_string()),
                    ("max clients", s.max_clients.map(|c| c.to_string()).unwrap_or_else(|| "–".into())),
                    ("complete", if r.results.complete { "yes: every mix ran to its end".into() } else { "no".into() }),
                ];
                @let rows = [rows, environment_rows(e)].concat();
                h3 { (swatch(i)) (r.label) }
                div.tw { table { @for (k, v) in &rows { tr { th { (k) } td { code { (v) } } } } } }
                @if let Some(sv) = &e.server {
                    h4 { "Server under test: " (sv.server) " (started by benchlab lab up)" }
                    div.tw { table {
                        tr { th { "server" } td { code { (sv.server) } } }
                        tr { th { "version" } td { code { (sv.version) } } }
                        tr { th { "URL" } td { code { (sv.url) } } }
                        tr { th { "server CPUs" } td { code { (cpu_list(&sv.cpus)) } } }
                        @if let Some(b) = &sv.listen_backlog {
                            tr { th { "listen backlog" } td { code { (b.text()) } } }
                        }
                    } }
                    details { summary { "Profile (its tuning)" } pre { (sv.profile) } }
                    @for c in &sv.effective_configuration {
                        details { summary { "Effective configuration: " (c.source) } pre { (c.text) } }
                    }
                }
                div.tw { table {
                    tr { th { "phase" } th { "workload" } th { "target" } th { "mixes" } }
                    @for p in &r.results.phases {
                        tr {
                            td { (p.name) } td { (p.workload) } td { (p.target) }
                            td { (p.mixes.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", ")) }
                        }
                    }
                } }
                div.tw { table {
                    tr {
                        th.n { "mix" } th.n { "clients" } th.n { "threads/client" } th.n { "delay s" } th.n { "ramp-up s" }
                        th.n { "ramp-down s" } th.n { "length s" } th.n { "think s" } th.n { "receive buffer" } th.n { "HTTP/1.0 %" }
                        th { "1.0 keep-alive" } th.n { "persistent %" } th { "requests/connection" } th.n { "timeout s" }
                        th { "protocol" } th { "workload" } th { "target" }
                    }
                    @for m in &r.results.mixes {
                        @let p = &m.params;
                        tr {
                            td.n { (m.mix) }
                            td.n { (int(m.clients.into())) }
                            td.n { (int(p.threads_per_client.into())) }
                            td.n { (seconds(p.delay_s)) }
                            td.n { (seconds(p.ramp_up_s)) }
                            td.n { (seconds(p.ramp_down_s)) }
                            td.n { (seconds(p.length_s)) }
                            td.n { (seconds(p.think_time_s)) }
                            td.n { (int(p.receive_buffer as u64)) }
                            td.n { (p.http10_percent) }
                            td { @if p.http10_keepalive { "on" } @else { "off" } }
                            td.n { (p.persistent_percent) }
                            td {
                                @match p.requests_per_connection {
                                    Some([a, b]) if a == b => (a),
                                    Some([a, b]) => { (a) ".." (b) }
                                    None => "unlimited",
                                }
                                // docs/counting.md, "Start spread".
                                @if p.preconnect { ", first connected before the start" }
                            }
                            td.n { (seconds(p.timeout_s)) }
                            // Every class of a mix speaks the mix's protocol.
                            td {
                                @match &m.http2 {
                                    Some(h) => {
                                        @if h.h3_classes.is_empty() {
                                            (if h.quic.is_some() { "HTTP/3, " } else { "HTTP/2, " })
                                        } @else {
                                            "HTTP/3 for " (h.h3_classes.join(", ")) " and HTTP/2, "
                                        }
                                        (int(h.connections)) " conn. × " (h.streams_per_connection) " streams"
                                        @if h.classes.len() < m.classes.len() {
                                            " for " (h.classes.join(", ")) ", HTTP/1 for the other classes"
                                        }
                                        "; "
                                        (int(h.streams_opened)) " streams, " (int(h.stream_resets.values().sum())) " reset"
                                    }
                                    None => "HTTP/1",
                                }
                            }
                            td { (p.workload) }
                            td { (p.target) }
                        }
                    }
                } }
                details { summary { "Suite file as run (" (s.file) ")" } pre { (s.text) } }
            }
        }
    }
}

pub(super) fn definitions(o: &ReportOptions) -> Markup {
    html! {
        section #definitions {
            h2 { "Definitions" }
            ul {
                li { b { "Requests/s" } ": successful requests completed inside the measurement window (after ramp-up, before ramp-down) ÷ the window's length. Failed requests are errors, not requests. " b { "Throughput" } ": wire bytes of successful responses (status line, headers, body) per second; MB = 10⁶ bytes, Mbit = 10⁶ bits." }
                li { b { "Latency" } ": from the start of connect (new connection) or the first byte written (reused connection) to the last byte of the response, successful requests only; percentiles from exactly merged HDR histograms. In an open loop, from each request's intended send time (corrected); as-sent latency from its actual send." }
                li { b { "Peak" } ": the mix with the highest requests/s in a phase (the lightest such mix on ties); peak throughput is the mix with the highest bytes/s. Ringed on the requests/s and throughput charts." }
                li { b { "Shape past the peak" } ": the share of the peak kept at the last mix (last ÷ peak) and the lowest share after the peak (lowest later mix ÷ peak). Seed 004's Apache 1.3.4: 1,000 → 68 → 87 requests/s is 6.8 % lowest, 8.7 % at the last mix. A lowest share below " b { (pct(o.collapse_share)) } " is flagged as a collapse (" code { "--collapse-below" } "; the dashed line in each run's colour on the requests/s and throughput charts)." }
                li { b { "Fairness" } ": per mix, each participating client's requests/s ÷ the median client rate; a client outside " b { "±" (fixed(o.fairness_tolerance * 100.0, 0)) " %" } " is flagged (with three or more clients, one client served at a fraction f of the others shows f). Also min ÷ mean, max ÷ mean and coefficient of variation of client rates and client mean latencies. Clients taken out (could not connect at all) are listed apart." }
                li { b { "Useful peak" } " (seed 001): the highest requests/s among the mixes where no client is flagged or taken out, p99 latency ≤ " b { (ms(o.latency_limit_us as f64)) } " and errors ≤ " b { (pct(o.max_error_share)) } " of completed requests. Change with " code { "--latency-limit" } ", " code { "--fairness-tolerance" } ", " code { "--max-errors" } "." }
                li { b { "SPICE efficiency" } " (seed 001): request efficiency = SPICE request rate ÷ static request rate; latency efficiency = static mean latency ÷ SPICE mean latency; at each phase's own peak, at each phase's highest load (most threads) and at equal load (the same threads on both sides). The static baseline is "
                    @match &o.static_phase {
                        Some(p) => { "phase " code { (p) } " (" code { "--static-phase" } ")" }
                        None => "the first phase whose classes are all static",
                    }
                    "." }
                li { b { "Response-time distribution" } ": each mix's latency at each percentile, read from its stored HDR histogram; the x axis is 1 ÷ (1 − percentile) on a log scale (HdrHistogram's percentile plot), so 90 %, 99 %, 99.9 % are evenly spaced and the tail gets the room." }
                li { b { "Price/performance" } " (seed 000): system price ÷ peak requests/s, in dollars per request/s." }
                li { b { "Client-bound" } ": the load generator's CPU (user + system time of its worker threads and controller over the mix) above 90 % of the cores it may use (its OS threads, within its affinity mask); its figures may be benchlab's limit, not the server's. " b { "Co-located" } ": the server is on the generator's machine (a loopback URL) and that machine's CPUs were above 90 % busy over the mix, by every process; generator and server competed for them." }
                li { b { "Comparison" } " (" code { "benchlab compare" } "): NEW regressed when, in any phase, its peak requests/s is below BASE's by more than the limit, or its p99 at BASE's peak load (same threads and clients) is above BASE's by more than the limit." }
            }
        }
    }
}
