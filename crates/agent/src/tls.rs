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

    /// The role of the first certificate of a PEM file.
    pub fn of_pem(pem: &[u8]) -> CertRole {
        match x509_parser::pem::parse_x509_pem(pem) {
            Ok((_, p)) => CertRole::of_der(&p.contents),
            Err(_) => CertRole::Other("an unreadable certificate".into()),
        }
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

/// The controller's TLS: its certificate, and client certificates of the
/// lab's CA only; HTTP/2 (gRPC) by ALPN. The controller does its own
/// handshakes (not tonic's) so that each has a time limit, their number a
/// bound, and a refusal a line naming the peer and why.
pub(crate) fn server_config(tls: &TlsFiles) -> Result<std::sync::Arc<rustls::ServerConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use std::sync::Arc;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&tls.ca) {
        let c = c.map_err(|e| format!("the lab's CA certificate: {e}"))?;
        roots.add(c).map_err(|e| format!("the lab's CA certificate: {e}"))?;
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
        .build()
        .map_err(|e| format!("the lab's CA certificate: {e}"))?;
    let certs = CertificateDer::pem_slice_iter(&tls.cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the controller's certificate: {e}"))?;
    let key = PrivateKeyDer::from_pem_slice(&tls.key).map_err(|e| format!("the controller's key: {e}"))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs, key)
        .map_err(|e| format!("the controller's certificate or key: {e}"))?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// The TLS error somewhere in `e`'s source chain: tonic says "transport
/// error", hyper and tokio-rustls wrap it in an `io::Error`, whose own
/// `source()` skips the error it wraps.
pub fn tls_error_in<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a rustls::Error> {
    let mut at: Option<&'a (dyn std::error::Error + 'static)> = Some(e);
    while let Some(e) = at {
        if let Some(t) = e.downcast_ref::<rustls::Error>() {
            return Some(t);
        }
        if let Some(inner) = e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()) {
            if let Some(t) = inner.downcast_ref::<rustls::Error>() {
                return Some(t);
            }
            if let Some(t) = tls_error_in(inner) {
                return Some(t);
            }
        }
        at = e.source();
    }
    None
}

/// Why a certificate was not accepted, in words.
fn certificate_words(c: &rustls::CertificateError) -> String {
    use rustls::CertificateError as C;
    match c {
        C::UnknownIssuer => "it is not signed by the lab's CA (unknown CA)".into(),
        C::Expired | C::ExpiredContext { .. } => "it has expired".into(),
        C::NotValidYet | C::NotValidYetContext { .. } => "it is not valid yet (check both clocks)".into(),
        C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
            "it is not made for this use (its extended key usage)".into()
        }
        C::NotValidForName | C::NotValidForNameContext { .. } => "it does not carry the name dialled".into(),
        // Every lab's CA has the same name: a certificate of another lab
        // fails here, on the signature, rather than as an unknown issuer.
        C::BadSignature => "its signature does not verify (signed by another lab's CA, or a key that does not \
                            match it)"
            .into(),
        other => format!("{other:?}"),
    }
}

/// The controller's words for a peer whose handshake failed.
pub fn refused_peer_words(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(c) => format!("its certificate is refused: {}", certificate_words(c)),
        rustls::Error::NoCertificatesPresented => "it presented no client certificate".into(),
        rustls::Error::InvalidMessage(_) => "it does not speak TLS".into(),
        rustls::Error::AlertReceived(a) => format!("it refused the controller (TLS alert {a:?})"),
        other => other.to_string(),
    }
}

/// An agent's (or monitor's) words for a TLS failure: the controller's
/// refusal of its certificate (a TLS alert), or its refusal of the
/// controller's.
pub fn peer_tls_words(e: &rustls::Error) -> String {
    use rustls::AlertDescription as A;
    match e {
        rustls::Error::AlertReceived(a) => {
            let why = match a {
                A::UnknownCA => "it is not signed by the controller's CA (unknown CA): use the files of the controller's lab (its --tls-dir)".to_string(),
                A::CertificateExpired => "it has expired or is not valid yet (check both clocks, or make new certificates with `benchlab lab certs`)".to_string(),
                A::UnsupportedCertificate => "it is not made for a client (its extended key usage)".to_string(),
                // Every lab's CA has the same name: another lab's
                // certificate fails on its signature.
                A::DecryptError => "its signature does not verify: it is signed by another lab's CA, or its key \
                                    does not match it; use the files of the controller's lab (its --tls-dir)"
                    .to_string(),
                other => format!("TLS alert {other:?}"),
            };
            format!("the controller refused this certificate: {why}")
        }
        rustls::Error::InvalidCertificate(c) => {
            format!("the controller's certificate is refused: {}", certificate_words(c))
        }
        other => format!("TLS: {other}"),
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

/// Writes `bytes` to `path` as a new file: first to a fresh temporary file
/// beside it (created exclusively, never through a link, owner-only when
/// `secret`, so a key is never readable by others even for a moment), then
/// renamed over `path`. A symbolic link planted at `path` is replaced, never
/// written through, and a reader never sees half a file.
fn write_file(path: &Path, bytes: &[u8], secret: bool) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        // O_CREAT|O_EXCL: fails on anything already there, a link included.
        .create_new(true)
        .mode(if secret { 0o600 } else { 0o644 })
        .open(&tmp)?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    drop(f);
    match written.and_then(|()| std::fs::rename(&tmp, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
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
    fn certificates_replace_planted_links_and_never_write_through_them() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"not yours").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
        let out = dir.path().join("certs");
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&victim, out.join("ca.key")).unwrap();
        let plan = CertsPlan {
            controller_names: vec!["localhost".into()],
            agents: 1,
        };
        write_certs(&out, &plan).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"not yours");
        let meta = std::fs::symlink_metadata(out.join("ca.key")).unwrap();
        assert!(meta.file_type().is_file(), "ca.key is still a link");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
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
