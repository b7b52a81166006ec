//! TLS to the server: rustls (the workspace's, with the crypto provider it already builds)
//! through `tokio-postgres-rustls`. The server's certificate is always verified, against the
//! system's root certificates or the one the builder was given, and must name the host
//! (what libpq calls `verify-full`).

use std::sync::Arc;

use agentscope_core::session::SessionError;
use rustls::RootCertStore;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::config_error;

/// A TLS connector trusting `root_certificate` (PEM: one or more certificates), or the
/// system's root certificates without one.
pub(crate) fn connector(
    root_certificate: Option<&[u8]>,
) -> Result<MakeRustlsConnect, SessionError> {
    let mut roots = RootCertStore::empty();
    match root_certificate {
        Some(pem) => {
            let certificates: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
                .collect::<Result<_, _>>()
                .map_err(|error| {
                    config_error(format!(
                        "connecting to PostgreSQL: the TLS root certificate is not valid PEM: {error}"
                    ))
                })?;
            let (added, _) = roots.add_parsable_certificates(certificates);
            if added == 0 {
                return Err(config_error(
                    "connecting to PostgreSQL: the TLS root certificate holds no usable certificate",
                ));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            for error in &found.errors {
                tracing::debug!(
                    target: "agentscope_postgres",
                    %error,
                    "skipping a system root certificate that could not be read"
                );
            }
            roots.add_parsable_certificates(found.certs);
        }
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|error| {
            config_error(format!("connecting to PostgreSQL: setting up TLS: {error}"))
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// The process's default rustls crypto provider, or aws-lc-rs (the one reqwest and redis use
/// in this workspace) when none is installed. Installs nothing: the choice stays the
/// application's.
fn provider() -> Arc<CryptoProvider> {
    CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider()))
}
