//! TLS client configuration (rustls with the *ring* provider).
//!
//! Two configurations are built per client: one that never resumes (every
//! new connection pays a full handshake, the default of docs/counting.md) and one with a
//! session cache, picked for the share of connections the plan wants
//! resumed. Which kind of handshake really happened is read back from
//! rustls and counted, so the counts never rest on what was asked for.

use crate::plan::{PlanError, TlsOptions};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, WebPkiServerVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::sync::Arc;

/// The two client configurations a run uses.
#[derive(Debug, Clone)]
pub struct TlsConfigs {
    /// Never resumes: a full handshake on every connection.
    pub full: Arc<ClientConfig>,
    /// Keeps and offers sessions (tickets and IDs).
    pub resuming: Arc<ClientConfig>,
    /// The certificate check both use (`--insecure`'s, or the roots'), for
    /// HTTP/3, which wraps it to learn which handshakes were full ones.
    pub verifier: Arc<dyn ServerCertVerifier>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl TlsConfigs {
    pub fn new(opts: &TlsOptions) -> Result<TlsConfigs, PlanError> {
        let verifier: Arc<dyn ServerCertVerifier> = if opts.insecure {
            Arc::new(AcceptAnyCert(provider()))
        } else {
            let mut roots = RootCertStore::empty();
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            if let Some(path) = &opts.ca_file {
                let pem = read_pem(path)
                    .map_err(|e| PlanError::Invalid(format!("{}: cannot read CA file: {e}", path.display())))?;
                let mut added = 0;
                for cert in rustls_pem_certs(&pem) {
                    roots
                        .add(cert)
                        .map_err(|e| PlanError::Invalid(format!("{}: bad CA certificate: {e}", path.display())))?;
                    added += 1;
                }
                if added == 0 {
                    return Err(PlanError::Invalid(format!(
                        "{}: no PEM certificate (expected -----BEGIN CERTIFICATE-----)",
                        path.display()
                    )));
                }
            }
            // What `with_root_certificates` builds, kept so HTTP/3 can
            // wrap it.
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
                .build()
                .map_err(|e| PlanError::Invalid(format!("TLS setup: {e}")))?
        };
        let make = |resumption: Resumption| -> Result<Arc<ClientConfig>, PlanError> {
            let mut cfg = ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .map_err(|e| PlanError::Invalid(format!("TLS setup: {e}")))?
                .dangerous()
                .with_custom_certificate_verifier(Arc::clone(&verifier))
                .with_no_client_auth();
            cfg.resumption = resumption;
            Ok(Arc::new(cfg))
        };
        Ok(TlsConfigs {
            full: make(Resumption::disabled())?,
            resuming: make(Resumption::in_memory_sessions(1024))?,
            verifier: Arc::clone(&verifier),
        })
    }
}

/// Reads the certificates of a PEM file.
fn rustls_pem_certs(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem).filter_map(Result::ok).collect()
}

/// The server name for SNI and certificate checks.
pub fn server_name(host: &str) -> Result<ServerName<'static>, PlanError> {
    ServerName::try_from(host.to_string())
        .map_err(|e| PlanError::Invalid(format!("`{host}` is not a TLS server name: {e}")))
}

/// `--insecure`: accepts any certificate but still checks the handshake
/// signatures, so the handshake costs what a real one costs.
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A TLS handshake the server ended by closing the connection.
pub const CLOSED_IN_HANDSHAKE: &str = "the server closed the connection during the TLS handshake: \
     is it a TLS server (if not, use http:// instead of https://), and does it speak TLS 1.2 or 1.3?";

/// What to try when the certificate is not trusted, given the flags used.
fn trust_hint(opts: &TlsOptions) -> &'static str {
    if opts.ca_file.is_some() {
        "check that --ca-file holds the CA certificate that signed the server's certificate, \
         or pass --insecure to accept any certificate (test servers only)"
    } else {
        "pass --ca-file FILE with the CA certificate that signed it, \
         or --insecure to accept any certificate (test servers only)"
    }
}

/// Says in words what failed in a TLS handshake with `host` and what to
/// try, instead of rustls's `Debug` form (`Other(OtherError(
/// CaUsedAsEndEntity))`). `opts` are the run's TLS flags, so the hint does
/// not suggest what was already tried.
pub fn explain(e: &rustls::Error, host: &str, opts: &TlsOptions) -> String {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E, InvalidMessage as M};
    let hint = trust_hint(opts);
    match e {
        E::InvalidCertificate(c) => match c {
            C::UnknownIssuer => format!(
                "the server's certificate is not signed by a trusted authority \
                 (self-signed, or signed by a private CA): {hint}"
            ),
            C::Expired | C::ExpiredContext { .. } => {
                let when = match c {
                    C::ExpiredContext { time, not_after } => format!(" ({} ago)", apart(*not_after, *time)),
                    _ => String::new(),
                };
                format!(
                    "the server's certificate has expired{when}: renew it, check this machine's clock, \
                     or pass --insecure to accept it anyway"
                )
            }
            C::NotValidYet | C::NotValidYetContext { .. } => {
                let when = match c {
                    C::NotValidYetContext { time, not_before } => {
                        format!(" (for another {})", apart(*time, *not_before))
                    }
                    _ => String::new(),
                };
                format!(
                    "the server's certificate is not valid yet{when}: check this machine's clock, \
                     or pass --insecure to accept it anyway"
                )
            }
            C::NotValidForName | C::NotValidForNameContext { .. } => {
                let names = match c {
                    C::NotValidForNameContext { presented, .. } if !presented.is_empty() => {
                        // rustls gives `DnsName("localhost")`: keep the name.
                        let bare: Vec<&str> = presented
                            .iter()
                            .map(|p| match (p.find("(\""), p.rfind("\")")) {
                                (Some(a), Some(b)) if a + 2 <= b => &p[a + 2..b],
                                _ => p.as_str(),
                            })
                            .collect();
                        format!(" (it names {})", bare.join(", "))
                    }
                    _ => String::new(),
                };
                format!(
                    "the server's certificate is not valid for `{host}`, the host in the URL{names}: \
                     use a name the certificate holds in the URL, or pass --insecure to accept it anyway"
                )
            }
            C::Revoked => "the server's certificate has been revoked".to_string(),
            C::BadSignature => {
                "the server's certificate has a bad signature: it was not signed by the issuer it names".to_string()
            }
            C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
                "the server's certificate is not meant for a TLS server (its extended key usage lacks serverAuth): \
                 issue one for a server, or pass --insecure to accept it anyway"
                    .to_string()
            }
            C::Other(o) if format!("{o:?}").contains("CaUsedAsEndEntity") => {
                "the server's certificate is a CA certificate (basicConstraints CA:TRUE, as a self-signed one \
                 from `openssl req -x509` is by default), which a client refuses as a server's own certificate, \
                 even with that file in --ca-file: pass --insecure to accept it (test servers only), or give the \
                 server a certificate signed by a CA and pass that CA with --ca-file"
                    .to_string()
            }
            other => format!("the server's certificate was refused ({other:?}): {hint}"),
        },
        E::InvalidMessage(M::InvalidContentType | M::UnknownProtocolVersion) | E::PeerSentOversizedRecord => {
            "the server did not answer in TLS (it looks like plain HTTP): use http:// instead of https://, \
             or the port where the server speaks TLS"
                .to_string()
        }
        E::AlertReceived(A::HandshakeFailure | A::ProtocolVersion | A::InsufficientSecurity)
        | E::PeerIncompatible(_) => {
            format!(
                "the server and benchlab share no TLS version or cipher suite (benchlab speaks TLS 1.2 and 1.3): {e}"
            )
        }
        E::AlertReceived(a) => format!("the server ended the TLS handshake with the alert `{a:?}`"),
        E::NoCertificatesPresented => "the server presented no certificate".to_string(),
        other => format!("the TLS handshake failed: {other}"),
    }
}

/// The TLS failure inside an I/O error (rustls's streams wrap their errors
/// in `io::ErrorKind::InvalidData`), explained; `None` when it holds none.
pub fn explain_io(e: &std::io::Error, host: &str, opts: &TlsOptions) -> Option<String> {
    let inner = e.get_ref()?;
    inner.downcast_ref::<rustls::Error>().map(|t| explain(t, host, opts))
}

/// How far apart two certificate times are, in words (`3 days`).
fn apart(earlier: UnixTime, later: UnixTime) -> String {
    let secs = later.as_secs().saturating_sub(earlier.as_secs());
    match secs / 86_400 {
        0 => format!("{} hours", secs / 3600),
        1 => "1 day".to_string(),
        d => format!("{d} days"),
    }
}

/// The largest certificate or key file read (`--ca-file`, an agent's
/// certificates): a system CA bundle is about 200 KiB; a path to a log or
/// `/dev/zero` by mistake is refused at this size, not read whole.
pub const MAX_PEM_BYTES: u64 = 4 << 20;

/// The bytes of a PEM file, at most [`MAX_PEM_BYTES`]: a larger (or
/// endless) file is an error of kind `InvalidData` saying the limit.
pub fn read_pem(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    Ok(benchlab_input::read_bounded(path, "certificate or key", MAX_PEM_BYTES)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::{AlertDescription, CertificateError, Error, InvalidMessage, OtherError};

    fn say(e: Error) -> String {
        explain(&e, "127.0.0.1", &TlsOptions::default())
    }

    #[test]
    fn explains_certificate_failures() {
        let s = say(Error::InvalidCertificate(CertificateError::UnknownIssuer));
        assert!(
            s.starts_with("the server's certificate is not signed by a trusted authority"),
            "{s}"
        );
        assert!(s.contains("--ca-file FILE") && s.contains("--insecure"), "{s}");
        let with_ca = explain(
            &Error::InvalidCertificate(CertificateError::UnknownIssuer),
            "h",
            &TlsOptions {
                ca_file: Some("ca.pem".into()),
                ..TlsOptions::default()
            },
        );
        assert!(
            with_ca.contains("check that --ca-file holds the CA certificate"),
            "{with_ca}"
        );
        let s = say(Error::InvalidCertificate(CertificateError::ExpiredContext {
            time: UnixTime::since_unix_epoch(std::time::Duration::from_secs(1_000_000 + 3 * 86_400)),
            not_after: UnixTime::since_unix_epoch(std::time::Duration::from_secs(1_000_000)),
        }));
        assert!(
            s.starts_with("the server's certificate has expired (3 days ago)"),
            "{s}"
        );
        let s = say(Error::InvalidCertificate(CertificateError::NotValidForName));
        assert!(s.contains("not valid for `127.0.0.1`, the host in the URL:"), "{s}");
        let s = say(Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected: ServerName::try_from("127.0.0.1").unwrap(),
            presented: vec!["DnsName(\"localhost\")".into(), "odd".into()],
        }));
        assert!(s.contains("the host in the URL (it names localhost, odd):"), "{s}");
        // webpki's CaUsedAsEndEntity reaches rustls as an opaque OtherError.
        #[derive(Debug)]
        struct CaUsedAsEndEntity;
        impl std::fmt::Display for CaUsedAsEndEntity {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "CaUsedAsEndEntity")
            }
        }
        impl std::error::Error for CaUsedAsEndEntity {}
        let s = say(Error::InvalidCertificate(CertificateError::Other(OtherError(
            Arc::new(CaUsedAsEndEntity),
        ))));
        assert!(s.starts_with("the server's certificate is a CA certificate"), "{s}");
        assert!(!s.contains("OtherError"), "{s}");
    }

    #[test]
    fn explains_protocol_failures() {
        let s = say(Error::InvalidMessage(InvalidMessage::InvalidContentType));
        assert!(s.contains("use http:// instead of https://"), "{s}");
        let s = say(Error::AlertReceived(AlertDescription::HandshakeFailure));
        assert!(s.contains("share no TLS version or cipher suite"), "{s}");
    }
}
