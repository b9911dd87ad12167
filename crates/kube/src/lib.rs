//! benchlab on Kubernetes: the manifests of one lab run.
//!
//! A run on a cluster is the same run as on plain hosts — a controller and
//! N agents that dial it over mutual TLS — placed by the scheduler users
//! already run for this (k6-operator and Locust do the same):
//!
//! - an **Indexed Job** of agents: pod `i` gets its index from the Job
//!   controller (`batch.kubernetes.io/job-completion-index`, also exported
//!   as `JOB_COMPLETION_INDEX`), presents `agent-i.pem`, and is kept off the
//!   nodes of the other agents by pod anti-affinity, so that N agents are N
//!   test systems and not N processes on one node;
//! - the **controller** as a Job (it runs the suite once and exits) with a
//!   **Service** in front of it, the name the agents dial;
//! - two **Secrets** with the certificates of `benchlab lab certs`: the
//!   controller's pod sees only the CA and its own key, the agents' pods
//!   only the CA and the agents' keys (the CA's private key never enters
//!   the cluster);
//! - a **ConfigMap** with the suite file.
//!
//! Every object is built from the typed API structs of `k8s-openapi`, so a
//! misspelt field is a compile error rather than a manifest the API server
//! rejects (or, worse, silently ignores). The file written is a YAML
//! stream whose documents are JSON (JSON is YAML), so `kubectl apply -f`
//! reads it and no YAML library is needed to write or to read it back.

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{
    Affinity, ConfigMap, ConfigMapVolumeSource, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    KeyToPath, ObjectFieldSelector, PersistentVolumeClaimVolumeSource, PodAffinityTerm, PodAntiAffinity,
    PodSecurityContext, PodSpec, PodTemplateSpec, Secret, SecretVolumeSource, Service, ServicePort, ServiceSpec,
    Volume, VolumeMount, WeightedPodAffinityTerm,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::ByteString;
use std::collections::BTreeMap;

/// Where the pods find the certificates.
pub const TLS_DIR: &str = "/etc/benchlab/tls";
/// Where the controller's pod finds the suite file.
pub const SUITE_DIR: &str = "/etc/benchlab/suite";
/// Where the controller's pod generates the file sets the suite names.
pub const FILESETS_DIR: &str = "/filesets";
/// Where the controller's pod writes its results directory.
pub const RESULTS_DIR: &str = "/results";
/// The environment variable the agents' pods carry their index in; the
/// container's arguments refer to it as `$(BENCHLAB_AGENT_INDEX)`, which
/// the kubelet expands (it expands only variables the container declares,
/// so the index is declared here rather than relying on the Job
/// controller's own `JOB_COMPLETION_INDEX`).
pub const INDEX_ENV: &str = "BENCHLAB_AGENT_INDEX";
/// The user and group the pods run as (the Dockerfile's `USER`).
const UNPRIVILEGED: i64 = 65532;
/// The annotation the Job controller writes the completion index into.
const INDEX_ANNOTATION: &str = "metadata.annotations['batch.kubernetes.io/job-completion-index']";

/// How strictly the agents are spread over nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// Prefer one agent per node, but schedule anyway when there are fewer
    /// nodes than agents (the report's per-client data then shows agents
    /// sharing a node's NIC and cores).
    Preferred,
    /// One agent per node or the pod stays pending: N agents need N nodes.
    Required,
}

/// Everything one lab run on a cluster needs.
#[derive(Debug, Clone)]
pub struct LabSpec {
    /// Prefix of every object's name and the `app.kubernetes.io/instance`
    /// label (a DNS label: lower-case letters, digits and `-`).
    pub name: String,
    /// The namespace of every object; `None` leaves it to `kubectl -n`.
    pub namespace: Option<String>,
    /// The container image with the `benchlab` binary as its entry point.
    pub image: String,
    /// How many agents (test systems).
    pub agents: u32,
    /// Clients each agent runs (`--clients-per-agent`); `None`: one.
    pub clients_per_agent: Option<u32>,
    /// The port the controller listens on for agents.
    pub port: u16,
    /// The suite file's name (its key in the ConfigMap) and text.
    pub suite_file: String,
    pub suite_text: String,
    /// More arguments of `benchlab run` (`--target URL`, `--time-scale F` …).
    pub run_args: Vec<String>,
    /// File sets the suite names, as (kind, seed): the controller needs
    /// their manifests for its URL lists, so an init container generates
    /// each (byte-identical to the server's copy made with the same kind
    /// and seed) before the run.
    pub filesets: Vec<(String, u64)>,
    /// The files of a `benchlab lab certs` directory, by file name.
    pub tls_files: BTreeMap<String, Vec<u8>>,
    pub spread: Spread,
    /// A PersistentVolumeClaim to write the results directory to; `None`:
    /// an emptyDir, gone with the pod (the summary is in its log).
    pub results_claim: Option<String>,
}

/// What is wrong with a [`LabSpec`], in words for the user.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    #[error("`{0}` is not a valid name: use 1 to 40 lower-case letters, digits and `-`, starting with a letter (it prefixes Kubernetes object names)")]
    BadName(String),
    #[error("`{0}` is not a file set kind (see `benchlab fileset generate --help`)")]
    BadFileset(String),
    #[error("--agents must be at least 1")]
    NoAgents,
    #[error("the certificate directory has no `{0}`: make it with `benchlab lab certs --out DIR --agents {1} --controller-name {2}`")]
    MissingTlsFile(String, u32, String),
    #[error("the suite file name `{0}` cannot be a ConfigMap key: use letters, digits, `-`, `_` and `.`")]
    BadSuiteFileName(String),
    #[error("document {0} of the manifest file: {1}")]
    Parse(usize, String),
    #[error("the manifest file has {found}, expected the 6 objects `benchlab lab kubernetes` writes (2 Secrets, a ConfigMap, a Service, 2 Jobs)")]
    Shape { found: String },
}

/// The objects of one lab run, in the order they are applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifests {
    pub controller_tls: Secret,
    pub agent_tls: Secret,
    pub suite: ConfigMap,
    pub service: Service,
    pub controller: Job,
    pub agents: Job,
}

impl LabSpec {
    /// The DNS name the agents dial (the Service's, namespace-qualified when
    /// the namespace is known); the controller's certificate must name it.
    pub fn controller_host(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{}-controller.{ns}.svc", self.name),
            None => format!("{}-controller", self.name),
        }
    }

    fn check(&self) -> Result<(), Error> {
        let valid_label = |s: &str| {
            !s.is_empty()
                && s.len() <= 40
                && s.starts_with(|c: char| c.is_ascii_lowercase())
                && !s.ends_with('-')
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        };
        if !valid_label(&self.name) {
            return Err(Error::BadName(self.name.clone()));
        }
        if let Some(ns) = &self.namespace {
            if !valid_label(ns) {
                return Err(Error::BadName(ns.clone()));
            }
        }
        if self.agents == 0 {
            return Err(Error::NoAgents);
        }
        for (kind, _) in &self.filesets {
            if !valid_label(kind) {
                return Err(Error::BadFileset(kind.clone()));
            }
        }
        if self.suite_file.is_empty()
            || !self
                .suite_file
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(Error::BadSuiteFileName(self.suite_file.clone()));
        }
        for file in controller_tls_files().chain(agent_tls_files(self.agents)) {
            if !self.tls_files.contains_key(&file) {
                return Err(Error::MissingTlsFile(file, self.agents, self.controller_host()));
            }
        }
        Ok(())
    }

    fn meta(&self, suffix: &str, component: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(format!("{}-{suffix}", self.name)),
            namespace: self.namespace.clone(),
            labels: Some(self.labels(component)),
            ..ObjectMeta::default()
        }
    }

    fn labels(&self, component: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("app.kubernetes.io/name".to_string(), "benchlab".to_string()),
            ("app.kubernetes.io/instance".to_string(), self.name.clone()),
            ("app.kubernetes.io/component".to_string(), component.to_string()),
        ])
    }

    fn secret(&self, suffix: &str, files: impl Iterator<Item = String>) -> Secret {
        Secret {
            metadata: self.meta(suffix, "tls"),
            type_: Some("Opaque".to_string()),
            immutable: Some(true),
            data: Some(
                files
                    .map(|f| {
                        let bytes = self.tls_files.get(&f).cloned().unwrap_or_default();
                        (f, ByteString(bytes))
                    })
                    .collect(),
            ),
            ..Secret::default()
        }
    }

    fn tls_volume(&self, secret: &str) -> Volume {
        Volume {
            name: "tls".to_string(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(format!("{}-{secret}", self.name)),
                // Private keys readable by the pod's group (fsGroup) only.
                default_mode: Some(0o440),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        }
    }

    /// Both pods run as the image's unprivileged user; the Secret's files
    /// belong to its group.
    fn security_context() -> PodSecurityContext {
        PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(UNPRIVILEGED),
            run_as_group: Some(UNPRIVILEGED),
            fs_group: Some(UNPRIVILEGED),
            ..PodSecurityContext::default()
        }
    }

    fn tls_mount() -> VolumeMount {
        VolumeMount {
            name: "tls".to_string(),
            mount_path: TLS_DIR.to_string(),
            read_only: Some(true),
            ..VolumeMount::default()
        }
    }

    /// The controller's `benchlab run` command line (after the image's
    /// entry point, `benchlab`).
    pub fn controller_args(&self) -> Vec<String> {
        let mut args = vec![
            "run".to_string(),
            format!("{SUITE_DIR}/{}", self.suite_file),
            "--agents".to_string(),
            self.agents.to_string(),
            "--listen".to_string(),
            format!("0.0.0.0:{}", self.port),
            "--tls-dir".to_string(),
            TLS_DIR.to_string(),
            "--out".to_string(),
            format!("{RESULTS_DIR}/{}", self.name),
        ];
        if let Some(k) = self.clients_per_agent {
            args.extend(["--clients-per-agent".to_string(), k.to_string()]);
        }
        for (kind, _) in &self.filesets {
            args.extend(["--fileset".to_string(), format!("{kind}={FILESETS_DIR}/{kind}")]);
        }
        args.extend(self.run_args.iter().cloned());
        args
    }

    /// An agent's `benchlab agent` command line; `$(BENCHLAB_AGENT_INDEX)`
    /// is expanded by the kubelet from the pod's completion index.
    pub fn agent_args(&self) -> Vec<String> {
        let index = format!("$({INDEX_ENV})");
        vec![
            "agent".to_string(),
            "--controller".to_string(),
            format!("{}:{}", self.controller_host(), self.port),
            "--ca".to_string(),
            format!("{TLS_DIR}/ca.pem"),
            "--cert".to_string(),
            format!("{TLS_DIR}/agent-{index}.pem"),
            "--key".to_string(),
            format!("{TLS_DIR}/agent-{index}.key"),
            "--index".to_string(),
            index,
        ]
    }

    fn controller_job(&self) -> Job {
        let results = Volume {
            name: "results".to_string(),
            persistent_volume_claim: self
                .results_claim
                .as_ref()
                .map(|claim| PersistentVolumeClaimVolumeSource {
                    claim_name: claim.clone(),
                    read_only: Some(false),
                }),
            empty_dir: match self.results_claim {
                Some(_) => None,
                None => Some(EmptyDirVolumeSource::default()),
            },
            ..Volume::default()
        };
        let suite = Volume {
            name: "suite".to_string(),
            config_map: Some(ConfigMapVolumeSource {
                name: format!("{}-suite", self.name),
                items: Some(vec![KeyToPath {
                    key: self.suite_file.clone(),
                    path: self.suite_file.clone(),
                    mode: None,
                }]),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        };
        let filesets_mount = VolumeMount {
            name: "filesets".to_string(),
            mount_path: FILESETS_DIR.to_string(),
            ..VolumeMount::default()
        };
        let init_containers: Vec<Container> = self
            .filesets
            .iter()
            .map(|(kind, seed)| Container {
                name: format!("fileset-{kind}"),
                image: Some(self.image.clone()),
                args: Some(vec![
                    "fileset".to_string(),
                    "generate".to_string(),
                    kind.clone(),
                    "--seed".to_string(),
                    seed.to_string(),
                    "--out".to_string(),
                    format!("{FILESETS_DIR}/{kind}"),
                ]),
                volume_mounts: Some(vec![filesets_mount.clone()]),
                ..Container::default()
            })
            .collect();
        let container = Container {
            name: "controller".to_string(),
            image: Some(self.image.clone()),
            args: Some(self.controller_args()),
            ports: Some(vec![ContainerPort {
                name: Some("control".to_string()),
                container_port: i32::from(self.port),
                protocol: Some("TCP".to_string()),
                ..ContainerPort::default()
            }]),
            volume_mounts: Some(vec![
                Self::tls_mount(),
                VolumeMount {
                    name: "suite".to_string(),
                    mount_path: SUITE_DIR.to_string(),
                    read_only: Some(true),
                    ..VolumeMount::default()
                },
                VolumeMount {
                    name: "results".to_string(),
                    mount_path: RESULTS_DIR.to_string(),
                    ..VolumeMount::default()
                },
                filesets_mount,
            ]),
            ..Container::default()
        };
        Job {
            metadata: self.meta("controller", "controller"),
            spec: Some(JobSpec {
                completions: Some(1),
                parallelism: Some(1),
                // A run is not retried behind the user's back: a second
                // run would meet agents that already finished.
                backoff_limit: Some(0),
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(self.labels("controller")),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(PodSpec {
                        restart_policy: Some("Never".to_string()),
                        security_context: Some(Self::security_context()),
                        init_containers: (!init_containers.is_empty()).then_some(init_containers),
                        containers: vec![container],
                        volumes: Some(vec![
                            self.tls_volume("controller-tls"),
                            suite,
                            results,
                            Volume {
                                name: "filesets".to_string(),
                                empty_dir: Some(EmptyDirVolumeSource::default()),
                                ..Volume::default()
                            },
                        ]),
                        ..PodSpec::default()
                    }),
                },
                ..JobSpec::default()
            }),
            ..Job::default()
        }
    }

    fn agents_job(&self) -> Job {
        let term = PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some(self.labels("agent")),
                ..LabelSelector::default()
            }),
            topology_key: "kubernetes.io/hostname".to_string(),
            ..PodAffinityTerm::default()
        };
        let anti_affinity = match self.spread {
            Spread::Required => PodAntiAffinity {
                required_during_scheduling_ignored_during_execution: Some(vec![term]),
                ..PodAntiAffinity::default()
            },
            Spread::Preferred => PodAntiAffinity {
                preferred_during_scheduling_ignored_during_execution: Some(vec![WeightedPodAffinityTerm {
                    weight: 100,
                    pod_affinity_term: term,
                }]),
                ..PodAntiAffinity::default()
            },
        };
        let container = Container {
            name: "agent".to_string(),
            image: Some(self.image.clone()),
            args: Some(self.agent_args()),
            env: Some(vec![EnvVar {
                name: INDEX_ENV.to_string(),
                value_from: Some(EnvVarSource {
                    field_ref: Some(ObjectFieldSelector {
                        field_path: INDEX_ANNOTATION.to_string(),
                        ..ObjectFieldSelector::default()
                    }),
                    ..EnvVarSource::default()
                }),
                ..EnvVar::default()
            }]),
            volume_mounts: Some(vec![Self::tls_mount()]),
            ..Container::default()
        };
        let agents = i32::try_from(self.agents).unwrap_or(i32::MAX);
        Job {
            metadata: self.meta("agents", "agent"),
            spec: Some(JobSpec {
                completion_mode: Some("Indexed".to_string()),
                completions: Some(agents),
                // All at once: the controller waits for every agent before
                // the first mix.
                parallelism: Some(agents),
                // A restarted agent would find its run already going
                // without it (the controller dropped it); fail instead.
                backoff_limit: Some(0),
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(self.labels("agent")),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(PodSpec {
                        restart_policy: Some("Never".to_string()),
                        security_context: Some(Self::security_context()),
                        affinity: Some(Affinity {
                            pod_anti_affinity: Some(anti_affinity),
                            ..Affinity::default()
                        }),
                        containers: vec![container],
                        volumes: Some(vec![self.tls_volume("agent-tls")]),
                        ..PodSpec::default()
                    }),
                },
                ..JobSpec::default()
            }),
            ..Job::default()
        }
    }

    fn service(&self) -> Service {
        Service {
            metadata: self.meta("controller", "controller"),
            spec: Some(ServiceSpec {
                selector: Some(self.labels("controller")),
                ports: Some(vec![ServicePort {
                    name: Some("control".to_string()),
                    port: i32::from(self.port),
                    target_port: Some(IntOrString::String("control".to_string())),
                    protocol: Some("TCP".to_string()),
                    ..ServicePort::default()
                }]),
                ..ServiceSpec::default()
            }),
            ..Service::default()
        }
    }

    /// Builds the objects, or says what is missing or malformed.
    pub fn manifests(&self) -> Result<Manifests, Error> {
        self.check()?;
        Ok(Manifests {
            controller_tls: self.secret("controller-tls", controller_tls_files()),
            agent_tls: self.secret("agent-tls", agent_tls_files(self.agents)),
            suite: ConfigMap {
                metadata: self.meta("suite", "controller"),
                data: Some(BTreeMap::from([(self.suite_file.clone(), self.suite_text.clone())])),
                ..ConfigMap::default()
            },
            service: self.service(),
            controller: self.controller_job(),
            agents: self.agents_job(),
        })
    }
}

/// The files of a certificate directory the controller's pod sees.
fn controller_tls_files() -> impl Iterator<Item = String> {
    ["ca.pem", "controller.pem", "controller.key"]
        .into_iter()
        .map(str::to_string)
}

/// The files of a certificate directory the agents' pods see.
fn agent_tls_files(agents: u32) -> impl Iterator<Item = String> {
    std::iter::once("ca.pem".to_string())
        .chain((0..agents).flat_map(|i| [format!("agent-{i}.pem"), format!("agent-{i}.key")]))
}

/// The document separator of the YAML stream.
const SEPARATOR: &str = "---\n";

impl Manifests {
    /// The YAML stream `kubectl apply -f` takes: one JSON document per
    /// object, Secrets and ConfigMap first so that the pods find them.
    pub fn to_yaml_stream(&self) -> String {
        let documents = [
            serde_json::to_string_pretty(&self.controller_tls),
            serde_json::to_string_pretty(&self.agent_tls),
            serde_json::to_string_pretty(&self.suite),
            serde_json::to_string_pretty(&self.service),
            serde_json::to_string_pretty(&self.controller),
            serde_json::to_string_pretty(&self.agents),
        ];
        let mut out = String::from("# Written by `benchlab lab kubernetes`: apply with `kubectl apply -f FILE`.\n");
        for document in documents {
            // Serialising these plain structs cannot fail (no maps with
            // non-string keys, no custom serialisers that error).
            let text = document.unwrap_or_default();
            out.push_str(SEPARATOR);
            out.push_str(&text);
            out.push('\n');
        }
        out
    }

    /// Reads back a stream written by [`Manifests::to_yaml_stream`] into
    /// the typed objects (the check that each document is the object it
    /// claims to be, field for field).
    pub fn parse(text: &str) -> Result<Manifests, Error> {
        let documents: Vec<&str> = text
            .split(SEPARATOR)
            .filter(|d| d.lines().any(|l| !l.trim().is_empty() && !l.starts_with('#')))
            .collect();
        let kinds: Vec<String> = documents
            .iter()
            .enumerate()
            .map(|(i, d)| {
                serde_json::from_str::<serde_json::Value>(d)
                    .map_err(|e| Error::Parse(i + 1, e.to_string()))
                    .map(|v| v["kind"].as_str().unwrap_or("?").to_string())
            })
            .collect::<Result<_, _>>()?;
        let expected = ["Secret", "Secret", "ConfigMap", "Service", "Job", "Job"];
        if kinds != expected {
            return Err(Error::Shape {
                found: kinds.join(", "),
            });
        }
        fn typed<T: serde::de::DeserializeOwned>(i: usize, d: &str) -> Result<T, Error> {
            serde_json::from_str(d).map_err(|e| Error::Parse(i + 1, e.to_string()))
        }
        Ok(Manifests {
            controller_tls: typed(0, documents[0])?,
            agent_tls: typed(1, documents[1])?,
            suite: typed(2, documents[2])?,
            service: typed(3, documents[3])?,
            controller: typed(4, documents[4])?,
            agents: typed(5, documents[5])?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(agents: u32) -> LabSpec {
        let mut tls_files: BTreeMap<String, Vec<u8>> = controller_tls_files()
            .chain(agent_tls_files(agents))
            .map(|f| (f.clone(), f.into_bytes()))
            .collect();
        tls_files.insert("ca.key".to_string(), b"never in the cluster".to_vec());
        LabSpec {
            name: "bench".to_string(),
            namespace: Some("load".to_string()),
            image: "registry.example/benchlab:1".to_string(),
            agents,
            clients_per_agent: Some(2),
            port: 7878,
            suite_file: "mindcraft-1998.toml".to_string(),
            suite_text: "name = \"x\"\n".to_string(),
            run_args: vec!["--target".to_string(), "http://web/".to_string()],
            filesets: vec![],
            tls_files,
            spread: Spread::Preferred,
            results_claim: None,
        }
    }

    #[test]
    fn the_stream_reads_back_field_for_field() {
        let m = spec(3).manifests().unwrap();
        let back = Manifests::parse(&m.to_yaml_stream()).unwrap();
        assert_eq!(back, m);
    }

    #[test]
    fn agents_are_an_indexed_job_spread_over_nodes() {
        let m = spec(4).manifests().unwrap();
        let job = m.agents.spec.unwrap();
        assert_eq!(job.completion_mode.as_deref(), Some("Indexed"));
        assert_eq!((job.completions, job.parallelism), (Some(4), Some(4)));
        let pod = job.template.spec.unwrap();
        let anti = pod.affinity.unwrap().pod_anti_affinity.unwrap();
        let term = &anti.preferred_during_scheduling_ignored_during_execution.unwrap()[0].pod_affinity_term;
        assert_eq!(term.topology_key, "kubernetes.io/hostname");
        let env = &pod.containers[0].env.as_ref().unwrap()[0];
        assert_eq!(env.name, INDEX_ENV);
        assert_eq!(
            env.value_from.as_ref().unwrap().field_ref.as_ref().unwrap().field_path,
            INDEX_ANNOTATION
        );
        let args = pod.containers[0].args.clone().unwrap();
        assert!(args.contains(&"bench-controller.load.svc:7878".to_string()));
        assert!(args.contains(&"/etc/benchlab/tls/agent-$(BENCHLAB_AGENT_INDEX).pem".to_string()));
    }

    #[test]
    fn required_spread_is_a_hard_rule() {
        let mut s = spec(2);
        s.spread = Spread::Required;
        let anti = s
            .manifests()
            .unwrap()
            .agents
            .spec
            .unwrap()
            .template
            .spec
            .unwrap()
            .affinity
            .unwrap()
            .pod_anti_affinity
            .unwrap();
        assert!(anti.preferred_during_scheduling_ignored_during_execution.is_none());
        assert_eq!(
            anti.required_during_scheduling_ignored_during_execution.unwrap().len(),
            1
        );
    }

    #[test]
    fn each_pod_sees_only_its_keys_and_the_ca_key_stays_out() {
        let m = spec(2).manifests().unwrap();
        let keys = |s: &Secret| s.data.as_ref().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&m.controller_tls), ["ca.pem", "controller.key", "controller.pem"]);
        assert_eq!(
            keys(&m.agent_tls),
            ["agent-0.key", "agent-0.pem", "agent-1.key", "agent-1.pem", "ca.pem"]
        );
        assert_eq!(m.agent_tls.data.as_ref().unwrap()["agent-1.pem"].0, b"agent-1.pem");
    }

    #[test]
    fn the_service_selects_the_controller_pod_and_its_port() {
        let m = spec(1).manifests().unwrap();
        let svc = m.service.spec.unwrap();
        let pod_labels = m.controller.spec.unwrap().template.metadata.unwrap().labels.unwrap();
        for (k, v) in svc.selector.unwrap() {
            assert_eq!(pod_labels.get(&k), Some(&v));
        }
        assert_eq!(svc.ports.unwrap()[0].port, 7878);
    }

    #[test]
    fn the_controller_runs_the_suite_across_the_agents() {
        let s = spec(3);
        let args = s.controller_args();
        assert_eq!(
            args.join(" "),
            "run /etc/benchlab/suite/mindcraft-1998.toml --agents 3 --listen 0.0.0.0:7878 \
             --tls-dir /etc/benchlab/tls --out /results/bench --clients-per-agent 2 \
             --target http://web/"
        );
    }

    #[test]
    fn file_sets_are_generated_before_the_run_and_named_to_it() {
        let mut s = spec(1);
        s.filesets = vec![("mindcraft-1998".to_string(), 1)];
        assert!(s
            .controller_args()
            .join(" ")
            .ends_with("--fileset mindcraft-1998=/filesets/mindcraft-1998 --target http://web/"));
        let pod = s.manifests().unwrap().controller.spec.unwrap().template.spec.unwrap();
        let init = &pod.init_containers.unwrap()[0];
        assert_eq!(
            init.args.clone().unwrap().join(" "),
            "fileset generate mindcraft-1998 --seed 1 --out /filesets/mindcraft-1998"
        );
        assert_eq!(init.volume_mounts.as_ref().unwrap()[0].name, "filesets");
        // Without file sets no init container is written.
        let pod = spec(1)
            .manifests()
            .unwrap()
            .controller
            .spec
            .unwrap()
            .template
            .spec
            .unwrap();
        assert!(pod.init_containers.is_none());
    }

    #[test]
    fn bad_input_is_named() {
        let mut s = spec(2);
        s.tls_files.remove("agent-1.key");
        assert!(matches!(s.manifests(), Err(Error::MissingTlsFile(f, 2, _)) if f == "agent-1.key"));
        let mut s = spec(2);
        s.name = "Bench_1".to_string();
        assert_eq!(s.manifests(), Err(Error::BadName("Bench_1".to_string())));
        let mut s = spec(2);
        s.agents = 0;
        assert_eq!(s.manifests(), Err(Error::NoAgents));
        let mut s = spec(2);
        s.suite_file = "a b.toml".to_string();
        assert!(matches!(s.manifests(), Err(Error::BadSuiteFileName(_))));
    }

    #[test]
    fn a_foreign_stream_is_refused_with_what_it_holds() {
        let text = "---\n{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}\n";
        assert_eq!(
            Manifests::parse(text),
            Err(Error::Shape {
                found: "Pod".to_string()
            })
        );
        assert!(matches!(Manifests::parse("---\n{nope\n"), Err(Error::Parse(1, _))));
    }
}
