//! A file suite's run: its workloads read and checked, then mix after mix
//! (each repeated with `--repeat`), results.json written after each (the
//! one results schema, see [`crate::results`]). The report and workbook are
//! the caller's to write (crates/report, as for web suites).

use crate::diskmix::DiskMix;
use crate::loadfile::Loadfile;
use crate::mix::run_mix;
use crate::results::{mix_result, write};
use crate::run::{FileMixPlan, FileTarget, FileWorkload};
use benchlab_model::{FileWorkloadKind, Mix, Suite};
use benchlab_results::{fold_repeats, MixResult, Results};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Reads and checks every file workload of the suite (disk-mix files and
/// loadfiles), before anything runs.
pub fn load_workloads(suite: &Suite) -> Result<BTreeMap<String, FileWorkload>, String> {
    let mut out = BTreeMap::new();
    for (name, w) in &suite.file_workloads {
        let fw = match w.kind {
            FileWorkloadKind::DiskMix => {
                FileWorkload::DiskMix(Arc::new(DiskMix::read(&w.path).map_err(|e| e.to_string())?))
            }
            FileWorkloadKind::Loadfile => {
                FileWorkload::Loadfile(Arc::new(Loadfile::read(&w.path).map_err(|e| e.to_string())?), w.loops)
            }
        };
        out.insert(name.clone(), fw);
    }
    Ok(out)
}

/// What the caller sees while a file suite runs.
pub trait FileObserver {
    fn mix_started(&mut self, _mix: &Mix, _phase: &str) {}
    /// With `run --repeat N`: run `repeat` of `of` of the mix starts.
    fn repeat_started(&mut self, _mix: &Mix, _repeat: u32, _of: u32) {}
    /// A second of the mix ended (thread users, file://: live).
    fn second(&mut self, _mix: &Mix, _second: &crate::run::LiveSecond) {}
    fn mix_finished(&mut self, _result: &MixResult) {}
}

/// Runs a file suite's mixes in order, writing results.json after each
/// into `out`.
pub fn run_file_suite(
    suite: &Suite,
    workloads: &BTreeMap<String, FileWorkload>,
    out: &Path,
    command: Vec<String>,
    repeat: u32,
    stop: &AtomicBool,
    observer: &mut dyn FileObserver,
) -> Result<Results, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let mut results = crate::results::results(suite, &command, started);
    for mix in &suite.mixes {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        let phase = &suite.phases[mix.phase].name;
        let workload = workloads.get(&mix.params.workload).ok_or_else(|| {
            format!(
                "mix {}: workload `{}` is not a file workload",
                mix.number, mix.params.workload
            )
        })?;
        let target = FileTarget::parse(&mix.params.target)?;
        let p = &mix.params;
        let plan = FileMixPlan {
            clients: mix.clients,
            threads_per_client: p.threads_per_client,
            delay: p.delay,
            ramp_up: p.ramp_up,
            ramp_down: p.ramp_down,
            length: p.length,
            think_time: p.think_time,
            seed: suite.seed ^ (mix.number as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        };
        let of = repeat.max(1);
        let mut runs = Vec::new();
        for r in 1..=of {
            if r > 1 && stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            if of > 1 {
                observer.repeat_started(mix, r, of);
            }
            observer.mix_started(mix, phase);
            let m = run_mix(workload, &target, &plan, stop, &mut |s| observer.second(mix, &s))
                .map_err(|e| format!("mix {}: {e}", mix.number))?;
            let res = mix_result(mix, phase, mix.clients * p.threads_per_client, &m);
            observer.mix_finished(&res);
            runs.push(res);
        }
        results
            .mixes
            .push(fold_repeats(runs).ok_or_else(|| format!("mix {}: ran no time", mix.number))?);
        write(out, &results)?;
    }
    results.complete = !stop.load(std::sync::atomic::Ordering::Relaxed) && results.mixes.len() == suite.mixes.len();
    write(out, &results)?;
    Ok(results)
}
