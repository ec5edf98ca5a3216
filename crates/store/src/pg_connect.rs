//! Connecting to a PostgreSQL store: plain or over TLS as the `sslmode` asks,
//! and a failure told in one line a user can act on.

use std::time::Duration;

use postgres::error::SqlState;
use postgres::{Client, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::pg_conn::Conninfo;
use crate::pg_tls::{self, SslMode};
use crate::StoreError;

/// How long connecting may take before the store is called unreachable (unless the
/// URL sets `connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) fn connect(info: &Conninfo, place: &str) -> Result<Client, StoreError> {
    let mut config = info.config.clone();
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    let tls = pg_tls::client_config(info.mode, &info.files).map_err(|detail| StoreError::Open {
        place: place.to_string(),
        detail,
    })?;
    let connected = match tls {
        None => config.connect(NoTls),
        Some(c) => config.connect(MakeRustlsConnect::new(c)),
    };
    connected.map_err(|e| connect_error(place, &e, info.mode))
}

/// Why connecting failed, as the error a user can act on.
fn connect_error(place: &str, e: &postgres::Error, mode: SslMode) -> StoreError {
    let place = place.to_string();
    if let Some(detail) = tls_failure(e, mode) {
        return StoreError::Open { place, detail };
    }
    if chain(e).contains("password missing") {
        return StoreError::Login {
            place,
            detail: "the server asks for a password and none was given".into(),
        };
    }
    match e.code() {
        Some(c)
            if *c == SqlState::INVALID_PASSWORD || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
        {
            StoreError::Login {
                place,
                detail: e
                    .as_db_error()
                    .map_or_else(|| e.to_string(), |d| d.message().to_string()),
            }
        }
        Some(_) => StoreError::Open {
            place,
            detail: e
                .as_db_error()
                .map_or_else(|| e.to_string(), |d| d.message().to_string()),
        },
        None => StoreError::Unreachable {
            place,
            detail: std::error::Error::source(e).map_or_else(|| e.to_string(), |s| s.to_string()),
        },
    }
}

/// The error and its sources, in one line.
fn chain(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text = format!("{text}: {s}");
        source = s.source();
    }
    text.replace('\n', " ")
}

/// A TLS failure in one line: what the mode asked and what the server did.
fn tls_failure(e: &postgres::Error, mode: SslMode) -> Option<String> {
    let line = chain(e);
    if line.contains("server does not support TLS") {
        return Some(format!(
            "the server does not accept TLS (its ssl is off) and sslmode={} requires it; use sslmode=prefer or disable, or turn ssl on",
            mode.name()
        ));
    }
    if line.contains("certificate not valid for name") || line.contains("NotValidForName") {
        let why = line
            .rsplit("certificate not valid for name")
            .next()
            .unwrap_or("")
            .trim();
        return Some(format!(
            "TLS: the server's certificate does not name the host connected to (sslmode=verify-full checks it): certificate not valid for name {why}"
        ));
    }
    if line.contains("invalid peer certificate") || line.contains("UnknownIssuer") {
        let why = line
            .rsplit("invalid peer certificate:")
            .next()
            .unwrap_or(&line)
            .trim();
        return Some(format!(
            "TLS: the server's certificate is not trusted with sslmode={}: {why}",
            mode.name()
        ));
    }
    if line.contains("error performing TLS handshake") {
        let why = line
            .rsplit("error performing TLS handshake:")
            .next()
            .unwrap_or(&line)
            .trim();
        return Some(format!("TLS handshake failed: {why}"));
    }
    None
}
