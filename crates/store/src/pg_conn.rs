//! A PostgreSQL store's connection parameters the libpq way: the URL first,
//! then `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGPASSWORD`, then the
//! password file (`passfile=` in the URL, `PGPASSFILE`, or `~/.pgpass`, ignored
//! with a warning where its group or others may read it); `sslmode`,
//! `sslrootcert`, `sslcert` and `sslkey` from the URL, else `PGSSLMODE`,
//! `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY`, else `~/.postgresql/root.crt`,
//! `postgresql.crt` and `postgresql.key` where they exist.

use std::path::{Path, PathBuf};

use postgres::config::{Host, SslMode as PgSslMode};
use postgres::Config;

use crate::pg_tls::{SslMode, TlsFiles};

/// Where libpq looks for a server when neither the URL nor PGHOST names one.
const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// The URL's parameters memfabric reads itself (the postgres crate does not
/// know them).
const OWN_PARAMS: [&str; 5] = ["sslmode", "sslrootcert", "sslcert", "sslkey", "passfile"];

#[derive(Debug)]
pub struct Conninfo {
    pub config: Config,
    pub mode: SslMode,
    pub files: TlsFiles,
    /// Said on stderr once: an ignored password file.
    pub warnings: Vec<String>,
}

/// What the process environment says; a closure so tests can give their own.
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

pub fn resolve(url: &str, env: Env, home: Option<&Path>) -> Result<Conninfo, String> {
    let (base, own, rest) = split_params(url)?;
    let rebuilt = if rest.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    let mut config: Config = rebuilt
        .parse()
        .map_err(|e| format!("not a PostgreSQL URL: {e}"))?;
    let get = |k: &str| own.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let var = |k: &str| env(k).filter(|v| !v.is_empty());
    if config.get_hosts().is_empty() {
        config.host(&var("PGHOST").unwrap_or_else(|| DEFAULT_SOCKET_DIR.into()));
    }
    if config.get_ports().is_empty() {
        if let Some(p) = var("PGPORT") {
            let port = p.parse().map_err(|_| format!("PGPORT={p} is not a port"))?;
            config.port(port);
        }
    }
    if config.get_user().is_none() {
        let user = var("PGUSER")
            .or_else(|| var("USER"))
            .or_else(|| var("LOGNAME"))
            .ok_or("no user: give one in the URL (postgres://USER@HOST/DB) or PGUSER")?;
        config.user(&user);
    }
    if config.get_dbname().is_none() {
        if let Some(db) = var("PGDATABASE") {
            config.dbname(&db);
        }
    }
    let mut warnings = vec![];
    if config.get_password().is_none() {
        if let Some(pw) = var("PGPASSWORD") {
            config.password(pw);
        } else {
            let file = get("passfile")
                .map(PathBuf::from)
                .or_else(|| var("PGPASSFILE").map(PathBuf::from))
                .or_else(|| home.map(|h| h.join(".pgpass")));
            if let Some(file) = file {
                if let Some(pw) = password_from_file(&file, &config, &mut warnings) {
                    config.password(pw);
                }
            }
        }
    }
    let mode = match get("sslmode").or_else(|| var("PGSSLMODE")) {
        Some(m) => SslMode::parse(&m)?,
        None => SslMode::Prefer,
    };
    config.ssl_mode(match mode {
        SslMode::Disable => PgSslMode::Disable,
        SslMode::Prefer => PgSslMode::Prefer,
        _ => PgSslMode::Require,
    });
    let files = tls_files(&get, &var, home);
    Ok(Conninfo {
        config,
        mode,
        files,
        warnings,
    })
}

type Get<'a> = dyn Fn(&str) -> Option<String> + 'a;

fn tls_files(get: &Get, var: &Get, home: Option<&Path>) -> TlsFiles {
    let dot = |name: &str| {
        home.map(|h| h.join(".postgresql").join(name))
            .filter(|p| p.exists())
    };
    let given_root = get("sslrootcert")
        .or_else(|| var("PGSSLROOTCERT"))
        .map(PathBuf::from);
    let cert = get("sslcert").or_else(|| var("PGSSLCERT")).map(PathBuf::from);
    let key = get("sslkey").or_else(|| var("PGSSLKEY")).map(PathBuf::from);
    let (cert, key) = match (cert, key) {
        (None, None) => match (dot("postgresql.crt"), dot("postgresql.key")) {
            (Some(c), Some(k)) => (Some(c), Some(k)),
            _ => (None, None),
        },
        given => given,
    };
    TlsFiles {
        rootcert_given: given_root.is_some(),
        rootcert: given_root.or_else(|| dot("root.crt")),
        cert,
        key,
    }
}

/// The URL without memfabric's own parameters, those parameters (decoded),
/// and the others as given.
type Split<'a> = (&'a str, Vec<(String, String)>, Vec<&'a str>);

fn split_params(url: &str) -> Result<Split<'_>, String> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url, vec![], vec![]));
    };
    let mut own = vec![];
    let mut rest = vec![];
    for p in query.split('&').filter(|p| !p.is_empty()) {
        match p.split_once('=') {
            Some((k, v)) if OWN_PARAMS.contains(&k) => own.push((k.to_string(), decode(v)?)),
            _ => rest.push(p),
        }
    }
    Ok((base, own, rest))
}

/// `%XX` escapes decoded, as in a URL's query.
fn decode(v: &str) -> Result<String, String> {
    let bytes = v.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = v.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok());
            let Some(b) = hex else {
                return Err(format!("a bad %-escape in the URL parameter {v}"));
            };
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("the URL parameter {v} is not UTF-8"))
}

/// libpq's password file: `host:port:database:user:password` lines, `*`
/// matching anything, `\:` and `\\` escaped; the first match wins. A file its
/// group or others may read is ignored, with a warning.
fn password_from_file(file: &Path, config: &Config, warnings: &mut Vec<String>) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() {
        return None;
    }
    if meta.permissions().mode() & 0o077 != 0 {
        warnings.push(format!(
            "password file {} has group or world access; permissions should be u=rw (0600) or less: it is ignored",
            file.display()
        ));
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) if p == Path::new(DEFAULT_SOCKET_DIR) => "localhost".into(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
    let user = config.get_user().unwrap_or_default().to_string();
    let db = config.get_dbname().map_or(user.clone(), str::to_string);
    let want = [host, port, db, user];
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty())
        .map(fields)
        .filter(|f| f.len() == 5)
        .find(|f| f[..4].iter().zip(&want).all(|(pat, v)| pat == "*" || pat == v))
        .map(|f| f[4].clone())
}

/// One line's fields, split on unescaped `:`.
fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.last_mut().expect("a field").push(n);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut().expect("a field").push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
