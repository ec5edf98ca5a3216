//! TLS for the PostgreSQL store with libpq's `sslmode` semantics, on rustls
//! (ring): what each mode checks of the server's certificate, and the client
//! certificate where one is given.
//!
//! - `disable`: no TLS.
//! - `prefer` (the default, as libpq's): TLS where the server offers it,
//!   plain where it does not; the certificate is not checked.
//! - `require`: TLS or nothing; the certificate is not checked, unless a root
//!   certificate is given (or `~/.postgresql/root.crt` exists), when it is
//!   checked as `verify-ca` (libpq does the same).
//! - `verify-ca`: the certificate must chain to the root certificate.
//! - `verify-full`: and it must name the host connected to.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{ring, verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, Error as TlsError, RootCertStore, SignatureScheme,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn parse(s: &str) -> Result<SslMode, String> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            "allow" => {
                return Err("sslmode=allow (plain first, TLS if the server insists) is not offered: use prefer or disable".into())
            }
            other => {
                return Err(format!(
                    "sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
                ))
            }
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    fn verifies(self) -> bool {
        matches!(self, SslMode::VerifyCa | SslMode::VerifyFull)
    }
}

/// The files a TLS connection uses, as the URL, the environment or the
/// defaults give them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TlsFiles {
    pub rootcert: Option<PathBuf>,
    /// Whether `rootcert` was asked for (not the default file found).
    pub rootcert_given: bool,
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
}

/// The rustls configuration for `mode`, or None for `disable`.
pub fn client_config(mode: SslMode, files: &TlsFiles) -> Result<Option<ClientConfig>, String> {
    if mode == SslMode::Disable {
        return Ok(None);
    }
    // ring, not aws-lc-rs: no C++/cmake toolchain for the static and the
    // aarch64 builds. rustls marks ring's provider deprecated for lacking
    // post-quantum key exchange; X25519 and the P-curves are what PostgreSQL's
    // OpenSSL offers anyway.
    #[allow(deprecated)]
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let check_chain = mode.verifies() || (mode == SslMode::Require && files.rootcert.is_some());
    let verifier: Arc<dyn ServerCertVerifier> = if check_chain {
        let Some(path) = &files.rootcert else {
            return Err(format!(
                "sslmode={} needs the certificate of the authority that signed the server's: give sslrootcert=FILE or PGSSLROOTCERT (~/.postgresql/root.crt does not exist)",
                mode.name()
            ));
        };
        let roots = Arc::new(roots(path)?);
        let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
            .build()
            .map_err(|e| format!("TLS: {e}"))?;
        if mode == SslMode::VerifyFull {
            inner
        } else {
            Arc::new(ChainOnly { inner })
        }
    } else {
        Arc::new(Unchecked { provider })
    };
    let builder = builder.dangerous().with_custom_certificate_verifier(verifier);
    let config = match (&files.cert, &files.key) {
        (Some(cert), Some(key)) => {
            let chain = certificates(cert)?;
            check_key_permissions(key)?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("TLS: the client key {}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("TLS: the client certificate: {e}"))?
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err("TLS: a client certificate needs both sslcert and sslkey".into());
        }
        (None, None) => builder.with_no_client_auth(),
    };
    Ok(Some(config))
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let read = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("TLS: {}: {e}", path.display()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("TLS: {}: {e}", path.display()))?;
    if read.is_empty() {
        return Err(format!("TLS: {} holds no PEM certificate", path.display()));
    }
    Ok(read)
}

fn roots(path: &Path) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    for c in certificates(path)? {
        store
            .add(c)
            .map_err(|e| format!("TLS: {}: {e}", path.display()))?;
    }
    Ok(store)
}

/// libpq's rule: a private key others can read is refused.
fn check_key_permissions(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|e| format!("TLS: the client key {}: {e}", path.display()))?;
    let mode = meta.mode();
    let root_group_read = meta.uid() == 0 && mode & 0o037 == 0;
    if mode & 0o077 != 0 && !root_group_read {
        return Err(format!(
            "TLS: the client key {} has group or world access; permissions should be u=rw (0600) or less",
            path.display()
        ));
    }
    Ok(())
}

/// `prefer` and `require` without a root certificate: the connection is
/// encrypted, the server not identified. The handshake's signatures are still
/// checked, by rustls.
#[derive(Debug)]
struct Unchecked {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// `verify-ca`: rustls's whole check, except that the certificate need not
/// name the host.
#[derive(Debug)]
struct ChainOnly {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, TlsError> {
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(TlsError::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, TlsError> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_as_libpq_names_them() {
        for m in ["disable", "prefer", "require", "verify-ca", "verify-full"] {
            assert_eq!(SslMode::parse(m).unwrap().name(), m);
        }
        assert!(SslMode::parse("allow").unwrap_err().contains("not offered"));
        assert!(SslMode::parse("verify_full")
            .unwrap_err()
            .contains("is not one of"));
    }

    #[test]
    fn verifying_modes_need_a_root_certificate() {
        let none = TlsFiles::default();
        assert!(client_config(SslMode::Disable, &none).unwrap().is_none());
        assert!(client_config(SslMode::Prefer, &none).unwrap().is_some());
        assert!(client_config(SslMode::Require, &none).unwrap().is_some());
        let err = client_config(SslMode::VerifyFull, &none).unwrap_err();
        assert!(
            err.contains("sslmode=verify-full needs") && err.contains("sslrootcert"),
            "{err}"
        );
        let missing = TlsFiles {
            rootcert: Some("/nonexistent/ca.crt".into()),
            rootcert_given: true,
            ..TlsFiles::default()
        };
        let err = client_config(SslMode::VerifyCa, &missing).unwrap_err();
        assert!(err.contains("/nonexistent/ca.crt"), "{err}");
        let half = TlsFiles {
            cert: Some("/x.crt".into()),
            ..TlsFiles::default()
        };
        assert!(client_config(SslMode::Require, &half)
            .unwrap_err()
            .contains("both sslcert and sslkey"));
    }
}
