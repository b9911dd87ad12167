//! `benchlab lab kubernetes`: the manifests of a run on a cluster
//! (`benchlab_kube` builds them from the typed Kubernetes API; this reads
//! the user's files and writes the stream).

use crate::{CliError, Outcome};
use benchlab_kube::{LabSpec, Spread};
use clap::{Args, ValueEnum};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
#[command(after_help = "\
Writes one file for `kubectl apply -f`: an Indexed Job of N agents (each pod's index from its \
completion index, one agent per node by pod anti-affinity), the controller as a Job running \
`benchlab run SUITE --agents N` with a Service the agents dial, two Secrets (the controller's \
key and the agents' keys, each pod sees only its side; the CA's private key stays out) and a \
ConfigMap with the suite. Make the certificates first, naming the Service in the controller's: \
`benchlab lab certs --out DIR --agents N --controller-name NAME-controller.NAMESPACE.svc`. \
Arguments after `--` go to `benchlab run` (e.g. -- --target http://web.load.svc/ --time-scale 0.1).")]
pub struct KubeArgs {
    /// How many agents (test systems, one pod each).
    #[arg(long, value_name = "N")]
    agents: u32,
    /// The container image whose entry point is the `benchlab` binary
    /// (the repository's Dockerfile builds one).
    #[arg(long, value_name = "IMAGE")]
    image: String,
    /// The suite file the controller runs.
    #[arg(long, value_name = "FILE")]
    suite: PathBuf,
    /// The directory `benchlab lab certs` wrote.
    #[arg(long, value_name = "DIR")]
    tls_dir: PathBuf,
    /// Prefix of the objects' names.
    #[arg(long, default_value = "benchlab")]
    name: String,
    /// Namespace of the objects [default: kubectl's].
    #[arg(long, value_name = "NS")]
    namespace: Option<String>,
    /// The controller's port for agents.
    #[arg(long, default_value_t = 7878)]
    port: u16,
    /// Clients each agent runs.
    #[arg(long, value_name = "K")]
    clients_per_agent: Option<u32>,
    /// Spread of agents over nodes: `preferred` (one per node where there
    /// are enough nodes) or `required` (N agents need N nodes).
    #[arg(long, value_enum, default_value_t = SpreadArg::Preferred)]
    spread: SpreadArg,
    /// A PersistentVolumeClaim for the results directory [default: an
    /// emptyDir, gone with the pod; the summary stays in its log].
    #[arg(long, value_name = "CLAIM")]
    results_claim: Option<String>,
    /// A file set the suite names, KIND[:SEED] (repeatable): the
    /// controller's pod generates it before the run (as the server's copy
    /// was made: same kind, same seed, same bytes) for its URL lists.
    #[arg(long, value_name = "KIND[:SEED]", value_parser = fileset)]
    fileset: Vec<(String, u64)>,
    /// Where to write the manifests.
    #[arg(long, value_name = "FILE", default_value = "benchlab-kubernetes.yaml")]
    out: PathBuf,
    /// Arguments for the controller's `benchlab run`.
    #[arg(last = true, value_name = "RUN ARGS")]
    run_args: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SpreadArg {
    Preferred,
    Required,
}

fn fileset(text: &str) -> Result<(String, u64), String> {
    match text.split_once(':') {
        None => Ok((text.to_string(), 1)),
        Some((kind, seed)) => seed
            .parse()
            .map(|seed| (kind.to_string(), seed))
            .map_err(|_| format!("`{seed}` is not a seed: expected KIND or KIND:SEED, e.g. mindcraft-1998:1")),
    }
}

/// A suite or certificate file, read with its kind's bound.
fn read(path: &Path, what: &'static str) -> Result<Vec<u8>, CliError> {
    let limit = match what {
        "suite file" => benchlab_model::input::MAX_SUITE_BYTES,
        _ => benchlab_engine::MAX_PEM_BYTES,
    };
    benchlab_model::input::read_bounded(path, what, limit).map_err(|e| CliError::Usage(format!("{what} {}", e)))
}

pub fn run(a: KubeArgs) -> Result<Outcome, CliError> {
    let suite_text = String::from_utf8(read(&a.suite, "suite file")?)
        .map_err(|_| CliError::Usage(format!("suite file {}: not UTF-8 text", a.suite.display())))?;
    let suite_file = a
        .suite
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let entries = std::fs::read_dir(&a.tls_dir).map_err(|e| {
        CliError::Usage(format!(
            "--tls-dir {}: {e} (make it with `benchlab lab certs --out DIR --agents {}`)",
            a.tls_dir.display(),
            a.agents
        ))
    })?;
    let mut tls_files = BTreeMap::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        // Only what the pods use is read: the CA's private key must never
        // be copied into the cluster.
        let used = name == "ca.pem"
            || name.starts_with("controller.")
            || (name.starts_with("agent-") && (name.ends_with(".pem") || name.ends_with(".key")));
        if used {
            tls_files.insert(name, read(&entry.path(), "certificate file")?);
        }
    }
    let spec = LabSpec {
        name: a.name,
        namespace: a.namespace,
        image: a.image,
        agents: a.agents,
        clients_per_agent: a.clients_per_agent,
        port: a.port,
        suite_file,
        suite_text,
        run_args: a.run_args,
        filesets: a.fileset,
        tls_files,
        spread: match a.spread {
            SpreadArg::Preferred => Spread::Preferred,
            SpreadArg::Required => Spread::Required,
        },
        results_claim: a.results_claim,
    };
    let manifests = spec.manifests().map_err(|e| CliError::Usage(e.to_string()))?;
    std::fs::write(&a.out, manifests.to_yaml_stream())
        .map_err(|e| CliError::CannotRun(format!("lab kubernetes: writing {}: {e}", a.out.display())))?;
    eprintln!(
        "benchlab lab kubernetes: wrote {} ({} agents dialling {}:{}); `kubectl apply -f {0}`, \
         then `kubectl logs -f job/{}-controller`",
        a.out.display(),
        spec.agents,
        spec.controller_host(),
        spec.port,
        spec.name
    );
    Ok(Outcome::Completed)
}
