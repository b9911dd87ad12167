//! `benchlab lab kubernetes`: the manifests written by the real binary read
//! back into the typed Kubernetes objects, with the user's certificates
//! (and nothing else of the certificate directory) in the Secrets.

mod common;

use benchlab_kube::Manifests;
use common::benchlab_bin;
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn kubernetes(dir: &Path, args: &[&str]) -> Output {
    Command::new(benchlab_bin())
        .current_dir(dir)
        .args(["lab", "kubernetes"])
        .args(args)
        .output()
        .expect("run benchlab lab kubernetes")
}

/// A certificate directory as `benchlab lab certs` lays it out, with
/// recognisable contents.
fn tls_dir(dir: &Path, agents: u32) {
    let tls = dir.join("tls");
    fs::create_dir_all(&tls).unwrap();
    let mut names = vec![
        "ca.pem",
        "ca.key",
        "controller.pem",
        "controller.key",
        "monitor.pem",
        "monitor.key",
    ]
    .into_iter()
    .map(str::to_string)
    .collect::<Vec<_>>();
    for i in 0..agents {
        names.push(format!("agent-{i}.pem"));
        names.push(format!("agent-{i}.key"));
    }
    for name in names {
        fs::write(tls.join(&name), format!("contents of {name}\n")).unwrap();
    }
}

#[test]
fn manifests_read_back_with_the_certificates_and_the_suite() {
    let dir = tempfile::tempdir().unwrap();
    tls_dir(dir.path(), 3);
    let suite = "name = \"tiny\"\ntarget = \"http://127.0.0.1:1\"\n";
    fs::write(dir.path().join("tiny.toml"), suite).unwrap();
    let out = kubernetes(
        dir.path(),
        &[
            "--agents",
            "3",
            "--image",
            "registry.example/benchlab:1",
            "--suite",
            "tiny.toml",
            "--tls-dir",
            "tls",
            "--namespace",
            "load",
            "--fileset",
            "ct-10k:7",
            "--out",
            "lab.yaml",
            "--",
            "--target",
            "http://web.load.svc/",
        ],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = fs::read_to_string(dir.path().join("lab.yaml")).unwrap();
    let m = Manifests::parse(&text).unwrap();

    let secret = |s: &k8s_openapi::api::core::v1::Secret, file: &str| {
        String::from_utf8(s.data.as_ref().unwrap()[file].0.clone()).unwrap()
    };
    assert_eq!(
        secret(&m.controller_tls, "controller.key"),
        "contents of controller.key\n"
    );
    assert_eq!(secret(&m.agent_tls, "agent-2.pem"), "contents of agent-2.pem\n");
    // The CA's key never enters the cluster; the agents never see the
    // controller's key, nor the controller the agents'.
    assert!(!text.contains(&base64_of("contents of ca.key\n")));
    assert!(!m.agent_tls.data.as_ref().unwrap().contains_key("controller.key"));
    assert!(!m.controller_tls.data.as_ref().unwrap().contains_key("agent-0.key"));
    assert_eq!(m.suite.data.as_ref().unwrap()["tiny.toml"], suite);

    let agents = m.agents.spec.unwrap();
    assert_eq!(agents.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(agents.completions, Some(3));
    let args = agents.template.spec.unwrap().containers[0].args.clone().unwrap();
    assert_eq!(
        args[..3],
        ["agent", "--controller", "benchlab-controller.load.svc:7878"]
    );

    let controller = m.controller.spec.unwrap().template.spec.unwrap();
    let run = controller.containers[0].args.clone().unwrap().join(" ");
    assert_eq!(
        run,
        "run /etc/benchlab/suite/tiny.toml --agents 3 --listen 0.0.0.0:7878 --tls-dir \
         /etc/benchlab/tls --out /results/benchlab --fileset ct-10k=/filesets/ct-10k \
         --target http://web.load.svc/"
    );
    let init = controller.init_containers.unwrap();
    assert_eq!(
        init[0].args.clone().unwrap().join(" "),
        "fileset generate ct-10k --seed 7 --out /filesets/ct-10k"
    );
}

#[test]
fn a_missing_certificate_is_named_with_the_command_that_makes_it() {
    let dir = tempfile::tempdir().unwrap();
    tls_dir(dir.path(), 2);
    fs::write(dir.path().join("s.toml"), "name = \"s\"\n").unwrap();
    let out = kubernetes(
        dir.path(),
        &["--agents", "4", "--image", "i", "--suite", "s.toml", "--tls-dir", "tls"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no `agent-2.pem`"), "{err}");
    assert!(err.contains("benchlab lab certs --out DIR --agents 4"), "{err}");
    assert!(!dir.path().join("benchlab-kubernetes.yaml").exists());

    let out = kubernetes(
        dir.path(),
        &[
            "--agents",
            "1",
            "--image",
            "i",
            "--suite",
            "s.toml",
            "--tls-dir",
            "tls",
            "--fileset",
            "ct-10k:x",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`x` is not a seed"));
}

fn base64_of(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}
