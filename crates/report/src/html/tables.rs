//! The tables: SPICE efficiency, fairness, the summary, class and client
//! data reports, the configuration disclosure and the definitions.

use super::*;

/// Why the at-peak latency efficiency says little by itself, in one
/// sentence (shown beside the efficiency table and in the analysis).
pub(super) const CLOSED_LOOP_LATENCY: &str = "In a closed loop each thread waits for its answer before it sends again, so a mix's mean latency is about its threads ÷ its requests/s: at each one's peak the latency ratio mostly restates how many threads each peak took, and the equal-load row, with the same threads on both sides, is the one that compares the two paths.";

pub(super) fn efficiency(h: &mut String, analyses: &[RunAnalysis]) {
    h.push_str(r#"<section id="efficiency"><h2>SPICE efficiency</h2>"#);
    let any = analyses.iter().any(|a| !a.efficiency.is_empty());
    let mixed = analyses
        .iter()
        .any(|a| a.phases.iter().any(|p| !p.class_latency.is_empty()));
    if !any && !mixed {
        h.push_str("<p>Not applicable: SPICE efficiency needs a phase of static requests and a phase of dynamic (SPICE) requests, or dynamic classes beside static ones.</p></section>");
        return;
    }
    h.push_str("<p>Seed 001's definitions: request efficiency = SPICE request rate ÷ static request rate; latency efficiency = static latency ÷ SPICE latency, with the <b>mean</b> latency (seed 001 measured the average). Below 100 % the dynamic path is slower. Evaluated at each one's peak (each phase's own highest requests/s), at the highest load (each phase's mix with the most threads) and at equal load (the static and the SPICE mix with the same threads, the most both ran).</p>");
    h.push_str(&format!("<p class=\"note\">{}</p>", CLOSED_LOOP_LATENCY));
    if any {
        h.push_str(r#"<table><tr><th>run</th><th>phase</th><th>SPI</th><th>at</th><th class="n">static mix (threads)</th><th class="n">SPICE mix (threads)</th><th class="n">static req/s</th><th class="n">SPICE req/s</th><th class="n">request efficiency</th><th class="n">static mean latency µs</th><th class="n">SPICE mean latency µs</th><th class="n">latency efficiency</th></tr>"#);
        for (i, a) in analyses.iter().enumerate() {
            for e in &a.efficiency {
                for (at, pt) in [
                    ("peak", &e.at_peak),
                    ("highest load", &e.at_highest_load),
                    ("equal load", &e.at_equal_load),
                ] {
                    let Some(pt) = pt else { continue };
                    let _ = write!(
                        h,
                        r#"<tr data-run="{}" data-phase="{}" data-at="{at}">{}<td>{}</td><td>{}</td><td>{at}</td><td class="n">{} ({})</td><td class="n">{} ({})</td><td class="n">{}</td><td class="n">{}</td><td class="n" data-field="request_efficiency"><b>{}</b></td><td class="n">{}</td><td class="n">{}</td><td class="n" data-field="latency_efficiency"><b>{}</b></td></tr>"#,
                        esc(&a.label),
                        esc(&e.phase),
                        run_cell(i, &a.label),
                        esc(&e.phase),
                        esc(e.spi.as_deref().unwrap_or("")),
                        pt.static_mix,
                        int(pt.static_threads),
                        pt.spice_mix,
                        int(pt.spice_threads),
                        requests_per_sec(pt.static_rate),
                        requests_per_sec(pt.spice_rate),
                        opt_pct(pt.request),
                        mean_us(pt.static_latency_mean_us),
                        mean_us(pt.spice_latency_mean_us),
                        opt_pct(pt.latency)
                    );
                }
            }
        }
        h.push_str("</table>");
    }
    if mixed {
        h.push_str("<h3>Dynamic classes within mixed phases</h3><p>Where static and dynamic classes share a mix, only the latency efficiency is defined: static classes' mean latency (request-weighted) ÷ the dynamic class's mean latency in the same mix. The classes' request rates follow their configured shares, so a request efficiency would only restate them.</p>");
        h.push_str(r#"<table><tr><th>run</th><th>phase</th><th>at</th><th class="n">mix (threads)</th><th>class</th><th>SPI</th><th class="n">static mean latency µs</th><th class="n">class mean latency µs</th><th class="n">latency efficiency</th></tr>"#);
        for (i, a) in analyses.iter().enumerate() {
            for p in &a.phases {
                for c in &p.class_latency {
                    let _ = write!(
                        h,
                        r#"<tr>{}<td>{}</td><td>{}</td><td class="n">{} ({})</td><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n"><b>{}</b></td></tr>"#,
                        run_cell(i, &a.label),
                        esc(&p.name),
                        esc(&c.at),
                        c.mix,
                        int(c.threads),
                        esc(&c.class),
                        esc(c.spi.as_deref().unwrap_or("")),
                        fixed(c.static_latency_mean_us, 1),
                        mean_us(c.class_latency_mean_us),
                        opt_pct(c.latency_efficiency)
                    );
                }
            }
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
}

pub(super) fn fairness(h: &mut String, analyses: &[RunAnalysis], o: &ReportOptions) {
    let _ = write!(
        h,
        r#"<section id="fairness"><h2>Fairness across clients and the useful peak</h2><p class="sub">Per mix, the spread of the participating clients' requests/s and mean latency: min ÷ mean, max ÷ mean and the coefficient of variation (standard deviation ÷ mean). A client is flagged when its rate is outside ±{:.0} % of the mix's median client rate (its ratio to the median is shown). A mix counts towards the useful peak when no client is flagged or taken out, p99 ≤ {} and errors ≤ {}.</p>"#,
        o.fairness_tolerance * 100.0,
        ms(o.latency_limit_us as f64),
        pct(o.max_error_share)
    );
    h.push_str(r#"<table><tr><th>run</th><th>phase</th><th class="n">mix</th><th class="n">threads</th><th class="n">clients</th><th class="n">client req/s: mean</th><th class="n">min ÷ mean</th><th class="n">max ÷ mean</th><th class="n">CV</th><th class="n">client mean latency µs: mean</th><th class="n">min ÷ mean</th><th class="n">max ÷ mean</th><th class="n">CV</th><th>flagged clients: ×rate ÷ median</th><th>useful peak?</th></tr>"#);
    for (i, a) in analyses.iter().enumerate() {
        for p in &a.phases {
            for (f, u) in p.fairness.iter().zip(&p.useful) {
                let sp = |s: &Option<crate::analysis::Spread>| match s {
                    Some(s) => format!(
                        r#"<td class="n">{}</td><td class="n">{:.3}</td><td class="n">{:.3}</td><td class="n">{:.3}</td>"#,
                        fixed(s.mean, 1),
                        s.min_ratio,
                        s.max_ratio,
                        s.cv
                    ),
                    None => r#"<td class="n">–</td><td></td><td></td><td></td>"#.into(),
                };
                let mut flagged: Vec<String> = f
                    .flagged
                    .iter()
                    .map(|c| {
                        format!(
                            "client {}: ×{} ({}/s)",
                            c.client,
                            c.ratio.map(|r| format!("{r:.3}")).unwrap_or_else(|| "∞".into()),
                            requests_per_sec(c.requests_per_sec)
                        )
                    })
                    .collect();
                for c in &f.taken_out {
                    flagged.push(format!("client {c}: taken out"));
                }
                let flagged = if flagged.is_empty() {
                    String::new()
                } else {
                    let lines: Vec<String> = flagged.iter().map(|l| esc(l)).collect();
                    format!(r#"<span class="flag">{}</span>"#, lines.join("<br>"))
                };
                let useful = if u.reasons.is_empty() {
                    r#"<span class="ok">yes</span>"#.to_string()
                } else {
                    format!("no: {}", esc(&u.reasons.join(", ")))
                };
                let _ = write!(
                    h,
                    r#"<tr data-run="{}" data-mix="{}">{}<td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td>{}{}<td>{flagged}</td><td>{useful}</td></tr>"#,
                    esc(&a.label),
                    f.mix,
                    run_cell(i, &a.label),
                    esc(&p.name),
                    f.mix,
                    int(f.threads),
                    int(f.clients_participating.into()),
                    sp(&f.rate),
                    sp(&f.latency)
                );
            }
        }
    }
    h.push_str("</table></section>");
}

pub(super) fn summary(h: &mut String, runs: &[Run]) {
    h.push_str(r#"<section id="summary"><h2>Summary report</h2><p class="sub">WebBench's summary report, a row per mix, values as in results.json with each quantity's decimals (latency in µs; MB = 10⁶ bytes, Mbit = 10⁶ bits; wire bytes, headers included).</p>"#);
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            h,
            r#"<h3>{}{}</h3><table class="summary" data-run="{}"><tr><th class="n">mix</th><th>phase</th><th class="n">clients</th><th class="n">taking part</th><th class="n">threads</th><th class="n">window s</th><th class="n">requests</th><th class="n">requests/s</th><th class="n">MB/s</th><th class="n">Mbit/s</th><th class="n">mean µs</th><th class="n">p50 µs</th><th class="n">p90 µs</th><th class="n">p99 µs</th><th class="n">p99.9 µs</th><th class="n">max µs</th><th class="n">errors</th><th>errors by kind</th><th class="n">connections</th><th class="n">reconnects</th><th class="n">in flight</th><th class="n">client CPU s</th><th class="n">client CPU % of cores</th><th>client-bound</th></tr>"#,
            swatch(i),
            esc(&r.label),
            esc(&r.label)
        );
        for m in &r.results.mixes {
            let f = &m.figures;
            let l = &f.latency_us;
            let td = |field: &str, v: String| format!(r#"<td class="n" data-field="{field}">{v}</td>"#);
            let mut partial = if m.partial { " (partial)" } else { "" }.to_string();
            // A mix the peak search chose says so, and when it ran.
            if let Some(s) = &m.search {
                partial.push_str(&format!(" (search step {}, {})", s.step, s.kind.name()));
            }
            // An open loop's load is its rate: its threads column reads 0.
            if let Some(ol) = &m.open_loop {
                partial.push_str(&format!(
                    " (open loop, offered {} requests/s)",
                    requests_per_sec(ol.rate)
                ));
            }
            let _ = write!(
                h,
                r#"<tr data-mix="{}">{}<td>{}{partial}</td>{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}<td>{}</td>{}{}{}{}{}<td>{}</td></tr>"#,
                m.mix,
                td("mix", m.mix.to_string()),
                esc(&m.phase),
                td("clients", int(m.clients as u64)),
                td("clients_participating", int(m.clients_participating as u64)),
                td("threads", int(m.threads)),
                td("window_s", seconds(m.window_s)),
                td("requests", int(f.requests)),
                td("requests_per_sec", requests_per_sec(f.requests_per_sec)),
                td("mbytes_per_sec", mbs(f.bytes_per_sec)),
                td("mbit_per_sec", mbit_per_sec(f.mbit_per_sec)),
                td("latency_us.mean", mean_us(l.mean)),
                td("latency_us.p50", int(l.p50)),
                td("latency_us.p90", int(l.p90)),
                td("latency_us.p99", int(l.p99)),
                td("latency_us.p999", int(l.p999)),
                td("latency_us.max", int(l.max)),
                td("errors_total", int(f.errors_total)),
                esc(&nonzero_errors(m)),
                td("connections_opened", int(m.connections_opened)),
                td("reconnects", int(m.reconnects)),
                td("in_flight", int(m.in_flight)),
                td("client_cpu_s", seconds(m.client_cpu_s)),
                td("client_cpu.utilisation", pct(m.client_cpu.utilisation)),
                if m.client_cpu.client_bound {
                    r#"<span class="flag">yes</span>"#
                } else {
                    yes_no(false)
                },
            );
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
}

/// The open-loop mixes (`rate = R`): the load is the offered rate, so the
/// table shows what was offered, what was achieved, how well the schedule
/// was kept (late sends, waits at the in-flight cap) and latency both ways:
/// corrected (from each request's intended send time) beside as-sent.
pub(super) fn open_loop(h: &mut String, runs: &[Run]) {
    if !runs
        .iter()
        .any(|r| r.results.mixes.iter().any(|m| m.open_loop.is_some()))
    {
        return;
    }
    h.push_str(r#"<section id="open-loop"><h2>Open loop</h2><p class="sub">Mixes run at a rate (<code>rate = R</code>) instead of threads: requests are sent on a schedule whatever the server does, so a stall shows in the latency (coordinated omission avoided). Corrected latency counts from each request's intended send time; as-sent latency from when it actually left. A send is late when it left more than the tolerance after its time; a wait at the in-flight cap means the cap, not the schedule, held a request back.</p>"#);
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            h,
            r#"<h3>{}{}</h3><table class="open-loop" data-run="{}"><tr><th class="n">mix</th><th>phase</th><th>arrival</th><th class="n">offered requests/s</th><th class="n">sends/s</th><th class="n">achieved requests/s</th><th class="n">late sends</th><th class="n">late share</th><th class="n">max in flight (per client)</th><th class="n">waits at the cap</th><th class="n">corrected p50 µs</th><th class="n">as-sent p50 µs</th><th class="n">corrected p99 µs</th><th class="n">as-sent p99 µs</th><th class="n">connections opened</th></tr>"#,
            swatch(i),
            esc(&r.label),
            esc(&r.label)
        );
        for m in &r.results.mixes {
            let Some(ol) = &m.open_loop else { continue };
            let td = |field: &str, v: String| format!(r#"<td class="n" data-field="{field}">{v}</td>"#);
            let late = if ol.sends > 0 {
                ol.late_sends as f64 / ol.sends as f64
            } else {
                0.0
            };
            let late_cell = if ol.late_sends > 0 {
                format!(r#"<span class="flag">{}</span>"#, int(ol.late_sends))
            } else {
                int(ol.late_sends)
            };
            let _ = write!(
                h,
                r#"<tr data-mix="{}">{}<td>{}</td><td>{}</td>{}{}{}<td class="n" data-field="open_loop.late_sends">{late_cell}</td>{}{}{}{}{}{}{}{}</tr>"#,
                m.mix,
                td("mix", m.mix.to_string()),
                esc(&m.phase),
                esc(&ol.arrival),
                td("open_loop.rate", requests_per_sec(ol.rate)),
                td("open_loop.sends_per_sec", requests_per_sec(ol.sends_per_sec)),
                td("requests_per_sec", requests_per_sec(m.figures.requests_per_sec)),
                td("late_share", pct(late)),
                td("open_loop.max_in_flight", int(ol.max_in_flight.into())),
                td("open_loop.max_in_flight_hit", int(ol.max_in_flight_hit)),
                td("latency_us.p50", int(m.figures.latency_us.p50)),
                td("open_loop.latency_as_sent_us.p50", int(ol.latency_as_sent_us.p50)),
                td("latency_us.p99", int(m.figures.latency_us.p99)),
                td("open_loop.latency_as_sent_us.p99", int(ol.latency_as_sent_us.p99)),
                // To show beside it once results.json has it (h-olr):
                // open_loop.peak_connections, the most connections open at once.
                td("connections_opened", int(m.connections_opened)),
            );
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
}

pub(super) fn classes(h: &mut String, runs: &[Run]) {
    h.push_str(r#"<section id="classes"><h2>Classes</h2><p class="sub">Per mix and URL class: configured and observed share of requests, rates and latency.</p>"#);
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            h,
            r#"<h3>{}{}</h3><table><tr><th class="n">mix</th><th class="n">threads</th><th>class</th><th>kind</th><th>SPI</th><th class="n">configured %</th><th class="n">observed %</th><th class="n">requests</th><th class="n">requests/s</th><th class="n">MB/s</th><th class="n">mean µs</th><th class="n">p50 µs</th><th class="n">p99 µs</th><th class="n">errors</th></tr>"#,
            swatch(i),
            esc(&r.label)
        );
        for m in &r.results.mixes {
            for c in &m.classes {
                let f = &c.figures;
                let _ = write!(
                    h,
                    r#"<tr><td class="n">{}</td><td class="n">{}</td><td>{}</td><td>{}</td><td>{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td></tr>"#,
                    m.mix,
                    int(m.threads),
                    esc(&c.name),
                    esc(&c.kind),
                    esc(c.spi.as_deref().unwrap_or("")),
                    pct100(c.percent),
                    pct100(c.observed_percent),
                    int(f.requests),
                    requests_per_sec(f.requests_per_sec),
                    mbs(f.bytes_per_sec),
                    mean_us(f.latency_us.mean),
                    int(f.latency_us.p50),
                    int(f.latency_us.p99),
                    int(f.errors_total)
                );
            }
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
}

pub(super) fn clients(h: &mut String, runs: &[Run]) {
    h.push_str(r#"<section id="clients"><h2>Client data report</h2><p class="sub">WebBench's client data report, a row per mix × client: a server that treats clients unequally shows here.</p>"#);
    for (i, r) in runs.iter().enumerate() {
        let rows: usize = r.results.mixes.iter().map(|m| m.client_data.len()).sum();
        let _ = write!(
            h,
            r#"<details{}><summary>{}{} — {}</summary><table class="clients" data-run="{}"><tr><th class="n">mix</th><th class="n">client</th><th>address</th><th>taken out</th><th class="n">requests</th><th class="n">requests/s</th><th class="n">MB/s</th><th class="n">mean µs</th><th class="n">p50 µs</th><th class="n">p99 µs</th><th class="n">errors</th><th class="n">connections</th><th class="n">in flight</th><th class="n">delay s</th><th class="n">CPU s</th></tr>"#,
            if rows <= 64 { " open" } else { "" },
            swatch(i),
            esc(&r.label),
            plural(rows as u64, "row", "rows"),
            esc(&r.label)
        );
        for m in &r.results.mixes {
            for c in &m.client_data {
                let f = &c.figures;
                let _ = write!(
                    h,
                    r#"<tr data-mix="{}" data-client="{}"><td class="n">{}</td><td class="n">{}</td><td>{}</td><td>{}</td><td class="n" data-field="requests">{}</td><td class="n" data-field="requests_per_sec">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td></tr>"#,
                    m.mix,
                    c.client,
                    m.mix,
                    c.client,
                    esc(c.address.as_deref().unwrap_or("")),
                    if c.taken_out {
                        r#"<span class="flag">yes</span>"#
                    } else {
                        yes_no(false)
                    },
                    int(f.requests),
                    requests_per_sec(f.requests_per_sec),
                    mbs(f.bytes_per_sec),
                    mean_us(f.latency_us.mean),
                    int(f.latency_us.p50),
                    int(f.latency_us.p99),
                    int(f.errors_total),
                    int(c.connections_opened),
                    int(c.in_flight),
                    seconds(c.delay_s),
                    seconds(c.cpu_s)
                );
            }
        }
        h.push_str("</table></details>");
    }
    h.push_str("</section>");
}

pub(super) fn config(h: &mut String, runs: &[Run]) {
    h.push_str(r#"<section id="config"><h2>Configuration disclosure</h2><p class="sub">Everything needed to reproduce each run: the command, the machine, the suite file as run and the parameters of every mix.</p>"#);
    for (i, r) in runs.iter().enumerate() {
        let e = &r.results.environment;
        let s = &r.results.suite;
        let _ = write!(h, "<h3>{}{}</h3><table>", swatch(i), esc(&r.label));
        let cmd: Vec<String> = e.command.iter().map(|a| shell_quote(a)).collect();
        let rows: Vec<(&str, String)> = vec![
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
            (
                "max clients",
                s.max_clients.map(|c| c.to_string()).unwrap_or_else(|| "–".into()),
            ),
            (
                "complete",
                if r.results.complete {
                    "yes: every mix ran to its end".into()
                } else {
                    "no".into()
                },
            ),
        ];
        for (k, v) in rows {
            let _ = write!(h, "<tr><th>{k}</th><td><code>{}</code></td></tr>", esc(&v));
        }
        h.push_str("</table>");
        h.push_str(r#"<table><tr><th>phase</th><th>workload</th><th>target</th><th>mixes</th></tr>"#);
        for p in &r.results.phases {
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&p.name),
                esc(&p.workload),
                esc(&p.target),
                p.mixes.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(", ")
            );
        }
        h.push_str("</table>");
        h.push_str(r#"<table><tr><th class="n">mix</th><th class="n">clients</th><th class="n">threads/client</th><th class="n">delay s</th><th class="n">ramp-up s</th><th class="n">ramp-down s</th><th class="n">length s</th><th class="n">think s</th><th class="n">receive buffer</th><th class="n">HTTP/1.0 %</th><th>1.0 keep-alive</th><th class="n">persistent %</th><th>requests/connection</th><th class="n">timeout s</th><th>workload</th><th>target</th></tr>"#);
        for m in &r.results.mixes {
            let p = &m.params;
            let _ = write!(
                h,
                r#"<tr><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td class="n">{}</td><td>{}</td><td class="n">{}</td><td>{}</td><td class="n">{}</td><td>{}</td><td>{}</td></tr>"#,
                m.mix,
                int(m.clients.into()),
                int(p.threads_per_client.into()),
                seconds(p.delay_s),
                seconds(p.ramp_up_s),
                seconds(p.ramp_down_s),
                seconds(p.length_s),
                seconds(p.think_time_s),
                int(p.receive_buffer as u64),
                p.http10_percent,
                if p.http10_keepalive { "on" } else { "off" },
                p.persistent_percent,
                match p.requests_per_connection {
                    Some([a, b]) if a == b => a.to_string(),
                    Some([a, b]) => format!("{a}..{b}"),
                    None => "unlimited".into(),
                },
                seconds(p.timeout_s),
                esc(&p.workload),
                esc(&p.target)
            );
        }
        h.push_str("</table>");
        let _ = write!(
            h,
            "<details><summary>Suite file as run ({})</summary><pre>{}</pre></details>",
            esc(&s.file),
            esc(&s.text)
        );
    }
    h.push_str("</section>");
}

pub(super) fn definitions(h: &mut String, o: &ReportOptions) {
    let _ = write!(
        h,
        r#"<section id="definitions"><h2>Definitions</h2><ul>
<li><b>Requests/s</b>: successful requests completed inside the measurement window (after ramp-up, before ramp-down) ÷ the window's length. Failed requests are errors, not requests. <b>Throughput</b>: wire bytes of successful responses (status line, headers, body) per second; MB = 10⁶ bytes, Mbit = 10⁶ bits.</li>
<li><b>Latency</b>: from the start of connect (new connection) or the first byte written (reused connection) to the last byte of the response, successful requests only; percentiles from exactly merged HDR histograms.</li>
<li><b>Peak</b>: the mix with the highest requests/s in a phase (the lightest such mix on ties); peak throughput is the mix with the highest bytes/s.</li>
<li><b>Shape past the peak</b>: the share of the peak kept at the last mix (last ÷ peak) and the lowest share after the peak (lowest later mix ÷ peak). Seed 004's Apache 1.3.4: 1,000 → 68 → 87 requests/s is 6.8 % lowest, 8.7 % at the last mix. A lowest share below <b>{collapse}</b> is flagged as a collapse.</li>
<li><b>Fairness</b>: per mix, each participating client's requests/s ÷ the median client rate; a client outside <b>±{tol:.0} %</b> is flagged (with three or more clients, one client served at a fraction f of the others shows f). Also min ÷ mean, max ÷ mean and coefficient of variation of client rates and client mean latencies. Clients taken out (could not connect at all) are listed apart.</li>
<li><b>Useful peak</b> (seed 001): the highest requests/s among the mixes where no client is flagged or taken out, p99 latency ≤ <b>{lim}</b> and errors ≤ <b>{err}</b> of completed requests. Change with <code>--latency-limit</code>, <code>--fairness-tolerance</code>, <code>--max-errors</code>.</li>
<li><b>SPICE efficiency</b> (seed 001): request efficiency = SPICE request rate ÷ static request rate; latency efficiency = static mean latency ÷ SPICE mean latency; at each phase's own peak and at each phase's highest load (most threads). The static baseline is {baseline}.</li>
<li><b>Price/performance</b> (seed 000): system price ÷ peak requests/s, in dollars per request/s.</li>
<li><b>Client-bound</b>: the load generator's CPU (user + system time of its worker threads and controller over the mix) above 90 % of the cores it may use (its OS threads, within its affinity mask); its figures may be benchlab's limit, not the server's. <b>Co-located</b>: the server is on the generator's machine (a loopback URL) and that machine's CPUs were above 90 % busy over the mix, by every process; generator and server competed for them.</li>
<li><b>Comparison</b> (<code>benchlab compare</code>): NEW regressed when, in any phase, its peak requests/s is below BASE's by more than the limit, or its p99 at BASE's peak load (same threads and clients) is above BASE's by more than the limit.</li>
</ul></section>"#,
        collapse = pct(o.collapse_share),
        tol = o.fairness_tolerance * 100.0,
        lim = ms(o.latency_limit_us as f64),
        err = pct(o.max_error_share),
        baseline = match &o.static_phase {
            Some(p) => format!("phase <code>{}</code> (<code>--static-phase</code>)", esc(p)),
            None => "the first phase whose classes are all static".into(),
        }
    );
}
