//! The monitored hosts' seconds of a mix's window and the verdict on what
//! limited the mix: the same for a web mix and a file mix.

use benchlab_monitor::MonitorSource;
use benchlab_results::resources::*;
use benchlab_results::*;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The monitored hosts' seconds of a mix's window (from `from`, the wall
/// clock of its start, for the window measured) and the verdict on what
/// limited the mix. A sample covers the second before its time stamp, so
/// the window's seconds are those stamped from half a second after its
/// start to half a second after its end; the call waits (at most 2.5 s)
/// for the sample that closes the window.
pub(crate) fn mix_resources(
    monitors: &[Arc<dyn MonitorSource>],
    from: SystemTime,
    result: &MixResult,
    one_box: bool,
    generator: &GeneratorCores,
) -> MixResources {
    let to = from + Duration::from_secs_f64(result.window_s.max(0.0));
    let half = Duration::from_millis(500);
    let done = result.figures.requests + result.figures.errors_total;
    let hosts: Vec<HostResources> = monitors
        .iter()
        .map(|m| {
            let waited = std::time::Instant::now();
            while m.window(to, to + Duration::from_secs(3600)).is_empty()
                && m.error().is_none()
                && waited.elapsed() < Duration::from_millis(2500)
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            let seconds = m.window(from + half, to + half);
            let average = HostSample::mean(&seconds);
            let context_switches_per_request = average
                .as_ref()
                .filter(|_| done > 0 && result.window_s > 0.0)
                .map(|a| round(a.context_switches_per_sec * result.window_s / done as f64, 3));
            HostResources {
                host: m.host(),
                role: if one_box {
                    HostRole::ServerAndClient
                } else {
                    HostRole::Server
                },
                source: m.source(),
                seconds,
                average,
                context_switches_per_request,
            }
        })
        .collect();
    let verdict = verdict(
        hosts.first().and_then(|h| h.average.as_ref()),
        one_box,
        &result.client_cpu,
        generator,
    );
    MixResources { hosts, verdict }
}
