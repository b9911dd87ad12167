//! TLS client configuration (rustls with the *ring* provider).
//!
//! Two configurations are built per client: one that never resumes (every
//! new connection pays a full handshake, the default of docs/counting.md) and one with a
//! session cache, picked for the share of connections the plan wants
//! resumed. Which kind of handshake really happened is read back from
//! rustls and counted, so the counts never rest on what was asked for.

use crate::plan::{PlanError, TlsOptions};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
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
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

impl TlsConfigs {
    pub fn new(opts: &TlsOptions) -> Result<TlsConfigs, PlanError> {
        let make = |resumption: Resumption| -> Result<Arc<ClientConfig>, PlanError> {
            let builder = ClientConfig::builder_with_provider(provider())
                .with_safe_default_protocol_versions()
                .map_err(|e| PlanError::Invalid(format!("TLS setup: {e}")))?;
            let mut cfg = if opts.insecure {
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider())))
                    .with_no_client_auth()
            } else {
                let mut roots = RootCertStore::empty();
                roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
                if let Some(path) = &opts.ca_file {
                    let pem = std::fs::read(path)
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
                builder.with_root_certificates(roots).with_no_client_auth()
            };
            cfg.resumption = resumption;
            Ok(Arc::new(cfg))
        };
        Ok(TlsConfigs {
            full: make(Resumption::disabled())?,
            resuming: make(Resumption::in_memory_sessions(1024))?,
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
