//! A lab's certificates: one CA, the controller's server certificate, and
//! a client certificate per agent and for the server monitor, so mutual
//! TLS needs no other tool (`benchlab lab certs`). There is no switch to
//! turn TLS off: a peer without a certificate of the lab's CA gets no
//! stream at all.

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use std::path::{Path, PathBuf};

/// The files of a lab's certificate directory (the Kubernetes Secret uses
/// the same names).
pub const CA_CERT: &str = "ca.pem";
pub const CA_KEY: &str = "ca.key";
pub const CONTROLLER_CERT: &str = "controller.pem";
pub const CONTROLLER_KEY: &str = "controller.key";
pub const MONITOR_CERT: &str = "monitor.pem";
pub const MONITOR_KEY: &str = "monitor.key";

/// `agent-I.pem` and `agent-I.key`.
pub fn agent_files(index: u32) -> (String, String) {
    (format!("agent-{index}.pem"), format!("agent-{index}.key"))
}

/// The common names `lab certs` gives the agents' certificates (followed
/// by the index) and the monitor's: the controller lets a certificate
/// register only in the role it names.
pub const AGENT_CN_PREFIX: &str = "benchlab agent ";
pub const MONITOR_CN: &str = "benchlab monitor";

/// The role a lab certificate was made for, read from its common name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertRole {
    /// `agent-I.pem`: may register as agent index I only.
    Agent(u32),
    /// `monitor.pem`: may register as a monitor only.
    Monitor,
    /// Any other name (the controller's, one made by another tool): no role.
    Other(String),
}

impl CertRole {
    /// The role of the certificate `der` (DER, as TLS carries it).
    pub fn of_der(der: &[u8]) -> CertRole {
        let Ok((_, cert)) = x509_parser::parse_x509_certificate(der) else {
            return CertRole::Other("an unreadable certificate".into());
        };
        let cn = cert
            .subject()
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .unwrap_or_default()
            .to_string();
        CertRole::of_name(&cn)
    }

    /// The role of a certificate whose common name is `cn`.
    pub fn of_name(cn: &str) -> CertRole {
        if cn == MONITOR_CN {
            return CertRole::Monitor;
        }
        match cn.strip_prefix(AGENT_CN_PREFIX).map(str::parse::<u32>) {
            Some(Ok(i)) if cn == format!("{AGENT_CN_PREFIX}{i}") => CertRole::Agent(i),
            _ => CertRole::Other(format!("`{cn}`")),
        }
    }
}

impl std::fmt::Display for CertRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CertRole::Agent(i) => write!(f, "agent-{i}"),
            CertRole::Monitor => write!(f, "monitor"),
            CertRole::Other(name) => write!(f, "{name} (no agent or monitor)"),
        }
    }
}

/// Why a certificate could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{path} is not a PEM {what}")]
    NotPem { path: PathBuf, what: &'static str },
    #[error("cannot make a certificate: {0}")]
    Make(#[from] rcgen::Error),
}

/// One peer's PEM material: the lab's CA, its certificate and key.
#[derive(Clone)]
pub struct TlsFiles {
    pub ca: Vec<u8>,
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
}

impl std::fmt::Debug for TlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print a key.
        f.write_str("TlsFiles { .. }")
    }
}

impl TlsFiles {
    /// Reads the three files, checking each is PEM.
    pub fn read(ca: &Path, cert: &Path, key: &Path) -> Result<TlsFiles, TlsError> {
        let read = |path: &Path, what: &'static str, marker: &str| {
            let bytes = benchlab_engine::read_pem(path).map_err(|source| TlsError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            if !String::from_utf8_lossy(&bytes).contains(marker) {
                return Err(TlsError::NotPem {
                    path: path.to_path_buf(),
                    what,
                });
            }
            Ok(bytes)
        };
        Ok(TlsFiles {
            ca: read(ca, "certificate", "-----BEGIN CERTIFICATE-----")?,
            cert: read(cert, "certificate", "-----BEGIN CERTIFICATE-----")?,
            key: read(key, "private key", "PRIVATE KEY-----")?,
        })
    }

    /// The controller's files in a lab certificate directory.
    pub fn controller(dir: &Path) -> Result<TlsFiles, TlsError> {
        TlsFiles::read(
            &dir.join(CA_CERT),
            &dir.join(CONTROLLER_CERT),
            &dir.join(CONTROLLER_KEY),
        )
    }
}

/// What `benchlab lab certs` writes.
#[derive(Debug, Clone)]
pub struct CertsPlan {
    /// Names and addresses the controller is reached by (its SANs).
    pub controller_names: Vec<String>,
    pub agents: u32,
}

/// Writes a lab's certificates into `dir` (made if missing); keys are
/// written owner-only (0600). Returns the files written.
pub fn write_certs(dir: &Path, plan: &CertsPlan) -> Result<Vec<PathBuf>, TlsError> {
    std::fs::create_dir_all(dir).map_err(|source| TlsError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    let mut write = |name: &str, text: &str, secret: bool| -> Result<(), TlsError> {
        let path = dir.join(name);
        write_file(&path, text.as_bytes(), secret).map_err(|source| TlsError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
        Ok(())
    };
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca_params.distinguished_name.push(DnType::CommonName, "benchlab lab CA");
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let ca = CertifiedIssuer::self_signed(ca_params, ca_key)?;
    write(CA_CERT, &ca.pem(), false)?;
    write(CA_KEY, &ca.key().serialize_pem(), true)?;
    let leaf = |cn: &str, sans: Vec<String>, usage: ExtendedKeyUsagePurpose| -> Result<(String, String), TlsError> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(sans)?;
        params.distinguished_name.push(DnType::CommonName, cn);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![usage];
        let cert = params.signed_by(&key, &ca)?;
        Ok((cert.pem(), key.serialize_pem()))
    };
    let (cert, key) = leaf(
        "benchlab controller",
        plan.controller_names.clone(),
        ExtendedKeyUsagePurpose::ServerAuth,
    )?;
    write(CONTROLLER_CERT, &cert, false)?;
    write(CONTROLLER_KEY, &key, true)?;
    for i in 0..plan.agents {
        let (cert, key) = leaf(
            &format!("{AGENT_CN_PREFIX}{i}"),
            Vec::new(),
            ExtendedKeyUsagePurpose::ClientAuth,
        )?;
        let (c, k) = agent_files(i);
        write(&c, &cert, false)?;
        write(&k, &key, true)?;
    }
    let (cert, key) = leaf(MONITOR_CN, Vec::new(), ExtendedKeyUsagePurpose::ClientAuth)?;
    write(MONITOR_CERT, &cert, false)?;
    write(MONITOR_KEY, &key, true)?;
    Ok(written)
}

/// Writes `bytes` to `path`, owner-only when `secret` (set at creation, so
/// a key is never readable by others even for a moment).
fn write_file(path: &Path, bytes: &[u8], secret: bool) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    if secret {
        o.mode(0o600);
    }
    let mut f = o.open(path)?;
    if secret {
        // An existing file keeps its mode on open: set it.
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    f.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_lab_gets_a_ca_a_controller_agents_and_a_monitor_with_private_keys() {
        let dir = tempfile::tempdir().unwrap();
        let plan = CertsPlan {
            controller_names: vec!["localhost".into(), "127.0.0.1".into()],
            agents: 2,
        };
        let files = write_certs(dir.path(), &plan).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "ca.pem",
                "ca.key",
                "controller.pem",
                "controller.key",
                "agent-0.pem",
                "agent-0.key",
                "agent-1.pem",
                "agent-1.key",
                "monitor.pem",
                "monitor.key"
            ]
        );
        for f in &files {
            let mode = std::fs::metadata(f).unwrap().permissions().mode() & 0o777;
            let key = f.extension().is_some_and(|e| e == "key");
            assert!(!key || mode == 0o600, "{}: {mode:o}", f.display());
        }
        TlsFiles::controller(dir.path()).unwrap();
        let err = TlsFiles::read(
            &dir.path().join("ca.key"),
            &dir.path().join("ca.pem"),
            &dir.path().join("ca.key"),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("ca.key is not a PEM certificate"), "{err}");
    }

    #[test]
    fn each_lab_certificate_names_its_role() {
        let dir = tempfile::tempdir().unwrap();
        let plan = CertsPlan {
            controller_names: vec!["localhost".into()],
            agents: 3,
        };
        write_certs(dir.path(), &plan).unwrap();
        let role = |name: &str| {
            let pem = std::fs::read(dir.path().join(name)).unwrap();
            let (_, pem) = x509_parser::pem::parse_x509_pem(&pem).unwrap();
            CertRole::of_der(&pem.contents)
        };
        assert_eq!(role("agent-0.pem"), CertRole::Agent(0));
        assert_eq!(role("agent-2.pem"), CertRole::Agent(2));
        assert_eq!(role("monitor.pem"), CertRole::Monitor);
        assert_eq!(
            role("controller.pem").to_string(),
            "`benchlab controller` (no agent or monitor)"
        );
        assert_eq!(role("agent-2.pem").to_string(), "agent-2");
        // Only the exact name: no sign, no leading zero, no suffix.
        for cn in [
            "benchlab agent +1",
            "benchlab agent 01",
            "benchlab agent 1x",
            "benchlab agent ",
        ] {
            assert!(matches!(CertRole::of_name(cn), CertRole::Other(_)), "{cn}");
        }
        assert!(matches!(CertRole::of_der(b"not DER"), CertRole::Other(_)));
    }
}
