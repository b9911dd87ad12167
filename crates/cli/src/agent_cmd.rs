//! `benchlab agent`: a load machine's end of a distributed run, and the
//! `run`/`http` flags that make the controller wait for agents.

use crate::{CliError, Outcome};
use benchlab_agent::controller::agents_word;
use benchlab_agent::tls::CertRole;
use benchlab_agent::{AgentError, AgentOptions, ControllerOptions, PeerOptions, RemotePool, TlsFiles};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

type Hook = Box<dyn Fn() + Send>;

static CTRL_C_HOOKS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());
static CTRL_C_HANDLER: Once = Once::new();

/// Runs `hook` on every Ctrl-C (SIGINT). The process has one handler
/// (`ctrlc` allows one): the wait for agents and the run after it each
/// add their own hook to it.
pub fn on_ctrl_c(hook: impl Fn() + Send + 'static) {
    CTRL_C_HANDLER.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            for h in CTRL_C_HOOKS.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                h();
            }
        });
    });
    CTRL_C_HOOKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Box::new(hook));
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The controller, HOST:PORT (its `run --listen`).
    #[arg(long, value_name = "HOST:PORT")]
    controller: String,
    /// This agent's certificate (PEM; `lab certs` writes agent-I.pem).
    #[arg(long, value_name = "FILE")]
    cert: PathBuf,
    /// Its private key (PEM).
    #[arg(long, value_name = "FILE")]
    key: PathBuf,
    /// The lab's CA certificate (ca.pem), which the controller's must be
    /// signed by.
    #[arg(long, value_name = "FILE")]
    ca: PathBuf,
    /// This agent's index, 0-based: it runs clients I×K+1 … (I+1)×K of
    /// each mix (K: the run's --clients-per-agent) [default: the index its
    /// certificate was made for (`lab certs`' agent-I.pem), else
    /// $JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it]. One
    /// that disagrees with the certificate is refused.
    #[arg(long, value_name = "I")]
    index: Option<u32>,
    /// The name the controller's certificate must carry [default: HOST].
    #[arg(long, value_name = "NAME")]
    server_name: Option<String>,
    /// How long to keep trying to reach the controller.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = crate::args::duration)]
    connect_timeout: Duration,
    /// The control protocol version to state (tests only).
    #[arg(long, hide = true)]
    protocol_version: Option<u32>,
}

/// The agent index a lab certificate (PEM) was made for, if it is one.
fn index_of_cert(pem: &[u8]) -> Option<u32> {
    match CertRole::of_pem(pem) {
        CertRole::Agent(i) => Some(i),
        _ => None,
    }
}

/// The agent's index: its certificate's (the controller lets it register
/// as no other), checked against --index or $JOB_COMPLETION_INDEX when
/// given; without an agent certificate, theirs.
fn index_of(a: &AgentArgs, cert_pem: &[u8]) -> Result<u32, CliError> {
    let given = given_index(a)?;
    match (index_of_cert(cert_pem), given) {
        (Some(c), Some((i, from))) if c != i => Err(CliError::Usage(format!(
            "{from} says agent index {i}, but {} is the certificate of agent {c}; give --index {c} (or none) or \
             use agent-{i}.pem and its key",
            a.cert.display()
        ))),
        (Some(c), _) => Ok(c),
        (None, Some((i, _))) => Ok(i),
        (None, None) => Err(CliError::Usage(format!(
            "{} is not a lab agent certificate (`benchlab lab certs` writes agent-I.pem): give the agent's \
             --index (or set JOB_COMPLETION_INDEX)",
            a.cert.display()
        ))),
    }
}

/// --index, or $JOB_COMPLETION_INDEX, with where it came from.
fn given_index(a: &AgentArgs) -> Result<Option<(u32, String)>, CliError> {
    if let Some(i) = a.index {
        return Ok(Some((i, "--index".into())));
    }
    match std::env::var("JOB_COMPLETION_INDEX") {
        Ok(v) => v
            .trim()
            .parse()
            .map(|i| Some((i, "JOB_COMPLETION_INDEX".to_string())))
            .map_err(|_| {
                CliError::Usage(format!(
                    "JOB_COMPLETION_INDEX is `{}`: expected a whole number (or give --index)",
                    benchlab_model::input::excerpt(&v)
                ))
            }),
        Err(_) => Ok(None),
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

pub fn run(a: AgentArgs) -> Result<Outcome, CliError> {
    let tls = TlsFiles::read(&a.ca, &a.cert, &a.key).map_err(|e| CliError::Usage(e.to_string()))?;
    let index = index_of(&a, &tls.cert)?;
    let opts = AgentOptions {
        peer: PeerOptions {
            controller: a.controller.clone(),
            server_name: a.server_name.clone(),
            tls,
            connect_timeout: a.connect_timeout,
        },
        index,
        host: host_name(),
        protocol_version: a.protocol_version.unwrap_or(benchlab_agent::proto::PROTOCOL_VERSION),
    };
    // A file mix's smb:// users run as processes of their own: this
    // binary again, as under `benchlab run`.
    if let Ok(exe) = std::env::current_exe() {
        benchlab_fileserver::process::set_user_command(vec![exe.into_os_string(), "__file-user".into()]);
    }
    eprintln!("benchlab agent {index}: connecting to {}", a.controller);
    match benchlab_agent::run_agent(&opts, &|line| eprintln!("benchlab {line}")) {
        Ok(()) => {
            eprintln!("benchlab agent {index}: the controller ended the session: the run is over");
            Ok(Outcome::Completed)
        }
        Err(e) if e.exit_code() == 2 => Err(CliError::Usage(format!("agent {index}: {e}"))),
        Err(e) => Err(CliError::CannotRun(format!("agent {index}: {e}"))),
    }
}

/// `run --agents N …`: the clients run on agents that dial in.
#[derive(Debug, Args, Clone)]
pub struct AgentRunArgs {
    /// Run the clients on N agents (`benchlab agent` on each load machine)
    /// instead of in this process; waits for all N to register.
    #[arg(long, value_name = "N", requires_all = ["listen", "tls_dir"])]
    pub agents: Option<u32>,
    /// Where agents (and monitors) connect to, ADDR:PORT.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<SocketAddr>,
    /// The lab's certificates (`benchlab lab certs`): ca.pem,
    /// controller.pem and controller.key are read.
    #[arg(long, value_name = "DIR")]
    pub tls_dir: Option<PathBuf>,
    /// Clients each agent runs: agent I runs clients I×K+1 … (I+1)×K.
    #[arg(long, value_name = "K", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub clients_per_agent: u32,
    /// How long to wait for every agent and monitor to register.
    #[arg(long, value_name = "DUR", default_value = "60s", value_parser = crate::args::duration)]
    pub agent_timeout: Duration,
    /// Stop the run when an agent is lost (default: its clients are marked
    /// lost and the mix completes with the others).
    #[arg(long, requires = "agents")]
    pub abort_on_lost_agent: bool,
    /// Wait for M server monitors (with or without agents): they connect
    /// to --listen with the lab's monitor certificate.
    #[arg(long, value_name = "M", default_value_t = 0)]
    pub monitors: u32,
}

impl AgentRunArgs {
    /// The clients a run has: --agents × --clients-per-agent, or the one
    /// in this process.
    pub fn clients(&self) -> usize {
        self.agents
            .map_or(1, |n| n as usize * self.clients_per_agent as usize)
            .max(1)
    }

    /// The controller's listener, once every agent and monitor has
    /// registered; `None` without --agents and --monitors. With --agents
    /// it is the run's pool of clients. `max_clients`: the most clients any
    /// mix runs.
    /// `threads_given`: the run sets the worker threads per client itself
    /// (otherwise each agent sizes them from its CPUs).
    pub fn pool(&self, max_clients: usize, threads_given: bool) -> Result<Option<Arc<RemotePool>>, CliError> {
        if self.agents.is_none() && self.monitors == 0 {
            return Ok(None);
        }
        let agents = self.agents.unwrap_or(0);
        let (Some(listen), Some(dir)) = (self.listen, &self.tls_dir) else {
            return Err(CliError::Usage(
                "--agents and --monitors need --listen and --tls-dir".into(),
            ));
        };
        let capacity = agents as usize * self.clients_per_agent as usize;
        if self.agents.is_some() && max_clients > capacity {
            return Err(CliError::Usage(format!(
                "a mix runs {max_clients} clients, but {} × {} clients each make {capacity}: \
                 raise --agents or --clients-per-agent",
                agents_word(agents),
                self.clients_per_agent
            )));
        }
        let tls = TlsFiles::controller(dir).map_err(|e| CliError::Usage(format!("--tls-dir: {e}")))?;
        let pool = RemotePool::listen(ControllerOptions {
            listen,
            tls,
            agents,
            monitors: self.monitors,
            clients_per_agent: self.clients_per_agent,
            abort_on_lost_agent: self.abort_on_lost_agent,
            threads_by_agent: !threads_given,
            log: Arc::new(|line| eprintln!("benchlab controller: {line}")),
        })
        .map_err(|e| CliError::CannotRun(e.to_string()))?;
        let mut waiting = Vec::new();
        if agents > 0 {
            waiting.push(agents_word(agents));
        }
        if self.monitors > 0 {
            waiting.push(if self.monitors == 1 {
                "1 monitor".to_string()
            } else {
                format!("{} monitors", self.monitors)
            });
        }
        eprintln!(
            "benchlab controller: listening on {}; waiting for {} (up to {})",
            pool.local_addr(),
            waiting.join(" and "),
            humantime::format_duration(self.agent_timeout)
        );
        // Ctrl-C ends the wait: nothing has run, nothing is written.
        let interrupted = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&interrupted);
        on_ctrl_c(move || flag.store(true, Ordering::Relaxed));
        match pool.wait_for_peers(self.agent_timeout, &|| interrupted.load(Ordering::Relaxed)) {
            Ok(()) => Ok(Some(Arc::new(pool))),
            Err(AgentError::Interrupted(why)) => {
                eprintln!("benchlab controller: {why}");
                // Every registered agent sees its session end.
                pool.shutdown();
                std::process::exit(i32::from(benchlab_results::exit::INTERRUPTED));
            }
            Err(e) => Err(CliError::CannotRun(e.to_string())),
        }
    }
}
