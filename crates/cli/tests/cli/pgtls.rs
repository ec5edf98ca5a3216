//! The PostgreSQL store on a real network: TLS with libpq's sslmode
//! semantics, libpq's environment variables and password file, and text from
//! hostile nodes stored and shown as text. Runs against the server
//! tests/postgres/run.sh starts with ssl on (MEMFABRIC_TEST_PG, and the
//! certificates it made in MEMFABRIC_TEST_PG_TLS); without one each test
//! returns at once, and that script, which counts what ran, fails.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::postgres::counted;
use super::{memfabric, synth};

struct Server {
    /// postgres://memfabric:PW@127.0.0.1:PORT
    base: String,
    password: String,
    port: String,
    tls: PathBuf,
}

/// The test server and a fresh database `db` owned by `owner`.
fn server(db: &str, owner: &str) -> Option<Server> {
    let admin = std::env::var("MEMFABRIC_TEST_PG").ok()?;
    let tls =
        PathBuf::from(std::env::var("MEMFABRIC_TEST_PG_TLS").expect("the rig sets MEMFABRIC_TEST_PG_TLS"));
    let status = std::process::Command::new("psql")
        .arg(&admin)
        .args(["-q", "-c", &format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)")])
        .args(["-c", &format!("CREATE DATABASE {db} OWNER {owner}")])
        .status()
        .expect("psql runs");
    assert!(status.success(), "creating database {db}");
    counted(db);
    let base = admin.rsplit_once('/').unwrap().0.to_string();
    let (cred, host) = base.trim_start_matches("postgres://").split_once('@').unwrap();
    Some(Server {
        password: cred.split_once(':').unwrap().1.to_string(),
        port: host.rsplit_once(':').unwrap().1.to_string(),
        base,
        tls,
    })
}

impl Server {
    fn file(&self, name: &str) -> String {
        self.tls.join(name).display().to_string()
    }

    /// `user@localhost` (the name the server's certificate holds), reached at 127.0.0.1.
    fn by_name(&self, user: &str, db: &str, params: &str) -> String {
        format!(
            "postgres://{user}@localhost:{}/{db}?hostaddr=127.0.0.1&{params}",
            self.port
        )
    }
}

/// `memfabric --store URL runs list` with a clean libpq environment and an
/// empty HOME: status, stdout, stderr.
fn runs_list(url: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let home = tempfile::tempdir().unwrap();
    let mut c = memfabric();
    c.env("HOME", home.path());
    for v in [
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGPASSWORD",
        "PGPASSFILE",
        "PGSSLMODE",
        "PGSSLROOTCERT",
    ] {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c
        .args(["--store", url, "--json", "runs", "list"])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(s: &Server, url: &str, env: &[(&str, &str)]) {
    let (fine, out, err) = runs_list(url, env);
    assert!(fine, "{url}: {err}");
    assert!(
        !out.contains(&s.password) && !err.contains(&s.password),
        "{url}: the password was shown"
    );
}

/// Refused in one line that says `why`, without the password.
fn fails(s: &Server, url: &str, env: &[(&str, &str)], why: &str) -> String {
    let (fine, out, err) = runs_list(url, env);
    assert!(!fine, "{url} should fail");
    assert_eq!(err.trim_end().lines().count(), 1, "{url}: one line: {err}");
    assert!(err.contains(why), "{url}: {err}");
    assert!(
        !out.contains(&s.password) && !err.contains(&s.password),
        "{url}: the password was shown: {err}"
    );
    err
}

#[test]
fn postgres_tls_modes_check_what_libpq_checks() {
    let Some(s) = server("mf_tls_modes", "memfabric") else {
        return;
    };
    let url = format!("{}/mf_tls_modes", s.base);
    let (ca, other) = (s.file("ca.crt"), s.file("other-ca.crt"));
    for mode in ["disable", "prefer", "require"] {
        ok(&s, &format!("{url}?sslmode={mode}"), &[]);
    }
    ok(&s, &format!("{url}?sslmode=verify-ca&sslrootcert={ca}"), &[]);
    let pw = format!("memfabric:{}", s.password);
    let named = s.by_name(
        &pw,
        "mf_tls_modes",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    ok(&s, &named, &[]);
    let err = fails(
        &s,
        &format!("{url}?sslmode=verify-full&sslrootcert={ca}"),
        &[],
        "does not name the host",
    );
    assert!(err.contains("127.0.0.1"), "{err}");
    fails(
        &s,
        &format!("{url}?sslmode=verify-ca&sslrootcert={other}"),
        &[],
        "is not trusted",
    );
    fails(
        &s,
        &format!("{url}?sslmode=verify-full"),
        &[],
        "sslmode=verify-full needs the certificate",
    );
    // The same from PGSSLMODE and PGSSLROOTCERT.
    ok(&s, &url, &[("PGSSLMODE", "verify-ca"), ("PGSSLROOTCERT", &ca)]);
    fails(
        &s,
        &url,
        &[("PGSSLMODE", "verify-full"), ("PGSSLROOTCERT", &ca)],
        "does not name the host",
    );
    fails(&s, &format!("{url}?sslmode=allow"), &[], "sslmode=allow");
}

/// A role the server refuses without TLS logs in with prefer and require:
/// the connection is encrypted.
#[test]
fn postgres_tls_is_used_where_the_server_asks_for_it() {
    let Some(s) = server("mf_tls_only", "memfabric_tls_only") else {
        return;
    };
    let host = s.base.rsplit_once('@').unwrap().1.to_string();
    let url = format!("postgres://memfabric_tls_only:{}@{host}/mf_tls_only", s.password);
    ok(&s, &format!("{url}?sslmode=require"), &[]);
    ok(&s, &url, &[]);
    fails(&s, &format!("{url}?sslmode=disable"), &[], "no encryption");
}

#[test]
fn postgres_tls_client_certificate_logs_in() {
    let Some(s) = server("mf_tls_cert", "memfabric_cert") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("client.key");
    std::fs::copy(s.tls.join("client.key"), &key).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let certs = format!(
        "sslmode=verify-full&sslrootcert={}&sslcert={}&sslkey={}",
        s.file("ca.crt"),
        s.file("client.crt"),
        key.display()
    );
    ok(&s, &s.by_name("memfabric_cert", "mf_tls_cert", &certs), &[]);
    let without = s.by_name(
        "memfabric_cert",
        "mf_tls_cert",
        &format!("sslmode=verify-full&sslrootcert={}", s.file("ca.crt")),
    );
    fails(&s, &without, &[], "certificate");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    fails(
        &s,
        &s.by_name("memfabric_cert", "mf_tls_cert", &certs),
        &[],
        "has group or world access",
    );
}

fn pgpass(dir: &Path, line: &str, mode: u32) -> String {
    let f = dir.join("pgpass");
    std::fs::write(&f, format!("{line}\n")).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
    f.display().to_string()
}

#[test]
fn postgres_env_and_password_file_fill_a_url_without_a_password() {
    let Some(s) = server("mf_pg_env", "memfabric") else {
        return;
    };
    let env = [
        ("PGHOST", "127.0.0.1"),
        ("PGPORT", s.port.as_str()),
        ("PGUSER", "memfabric"),
        ("PGDATABASE", "mf_pg_env"),
        ("PGPASSWORD", s.password.as_str()),
    ];
    ok(&s, "postgresql://", &env);
    ok(&s, "postgres://", &env);
    let bare = format!("postgres://memfabric@127.0.0.1:{}/mf_pg_env", s.port);
    let dir = tempfile::tempdir().unwrap();
    let line = format!("127.0.0.1:{}:mf_pg_env:memfabric:{}", s.port, s.password);
    let file = pgpass(dir.path(), &line, 0o600);
    ok(&s, &bare, &[("PGPASSFILE", &file)]);
    ok(&s, &format!("{bare}?passfile={file}"), &[]);
    let file = pgpass(dir.path(), &line, 0o644);
    let (fine, _, err) = runs_list(&bare, &[("PGPASSFILE", &file)]);
    assert!(!fine);
    assert!(
        err.contains("has group or world access") && err.contains("ignored"),
        "{err}"
    );
    assert!(err.contains("asks for a password"), "{err}");
    assert!(!err.contains(&s.password), "{err}");
}

/// memfabric --store STORE ARGS... [PATH]
fn on(store: &str, args: &[&str], path: Option<&Path>) -> std::process::Output {
    let mut c = memfabric();
    c.args(["--store", store]).args(args);
    if let Some(p) = path {
        c.arg(p);
    }
    c.output().unwrap()
}

/// Synthetic host `i` with `host` as its name (and `label` where given), written to `dir`.
fn hostile_doc(dir: &Path, i: usize, host: &str, label: Option<&str>) -> PathBuf {
    let t = synth::Templates::load(&PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")));
    let mut doc = synth::document(&t, &synth::CLASSES[0], 0, i, None);
    doc["environment"]["hostname"] = Value::from(host);
    if let Some(l) = label {
        doc["label"] = Value::from(l);
    }
    let file = dir.join(format!("d{i}.json"));
    std::fs::write(&file, serde_json::to_string(&doc).unwrap()).unwrap();
    file
}

/// Labels, campaign ids, host names and --class values with quotes,
/// semicolons and HTML are stored and shown as text, and escaped in HTML.
fn hostile_text_stays_text(store: &str, password: Option<&str>) {
    let hostile = "h'; DROP TABLE runs; --<script>alert(1)</script>\"";
    let dir = tempfile::tempdir().unwrap();
    let file = hostile_doc(dir.path(), 1, hostile, Some("lab'el;<b>x</b>"));
    let ingest = on(store, &["fleet", "ingest"], Some(&file));
    assert!(
        ingest.status.success(),
        "{}",
        String::from_utf8_lossy(&ingest.stderr)
    );
    let list = on(store, &["--json", "runs", "list"], None);
    let v: Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(v["result"][0]["host"], hostile, "{v}");
    assert_eq!(v["result"][0]["label"], "lab'el;<b>x</b>");
    let html = dir.path().join("fleet.html");
    let class = on(
        store,
        &[
            "fleet",
            "report",
            "--class",
            "x'; DROP TABLE runs;--<i>",
            "--html",
        ],
        Some(&html),
    );
    assert!(class.status.code().is_some_and(|c| c <= 2), "{class:?}");
    let report = on(store, &["fleet", "report", "--html"], Some(&html));
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        !page.contains("<script>alert(1)"),
        "HTML from a node reached the page"
    );
    assert!(
        page.contains("&lt;script&gt;alert(1)"),
        "the host name is shown, escaped"
    );
    let campaign = "c'; DROP TABLE runs;--<i>";
    let second = hostile_doc(dir.path(), 2, "plain", None);
    let tagged = on(store, &["fleet", "ingest", "--campaign", campaign], Some(&second));
    assert!(
        tagged.status.success(),
        "a campaign id is text: {}",
        String::from_utf8_lossy(&tagged.stderr)
    );
    let r = on(
        store,
        &["--json", "fleet", "report", "--campaign", campaign],
        None,
    );
    let v: Value = serde_json::from_slice(&r.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&r.stderr)));
    let rows = v["result"]["rows"].as_array().unwrap();
    assert!(
        rows.len() == 1 && rows[0]["name"] == "plain",
        "the campaign's one host: {v}"
    );
    if let Some(pw) = password {
        for o in [
            &ingest.stdout,
            &ingest.stderr,
            &list.stdout,
            &tagged.stderr,
            &r.stdout,
        ] {
            assert!(!String::from_utf8_lossy(o).contains(pw));
        }
        assert!(!page.contains(pw));
    }
}

#[test]
fn hostile_text_stays_text_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    hostile_text_stays_text(dir.path().join("runs.sqlite").to_str().unwrap(), None);
}

#[test]
fn postgres_hostile_text_stays_text() {
    let Some(s) = server("mf_hostile", "memfabric") else {
        return;
    };
    hostile_text_stays_text(&format!("{}/mf_hostile", s.base), Some(&s.password));
}

/// Run by tests/postgres/run.sh after it turned the server's ssl off
/// (MEMFABRIC_TEST_PG_SSL_OFF): require fails in one line, prefer connects.
#[test]
fn pgssloff_require_fails_in_one_line_and_prefer_connects() {
    if std::env::var("MEMFABRIC_TEST_PG_SSL_OFF").is_err() {
        return;
    }
    let Some(s) = server("mf_ssl_off", "memfabric") else {
        return;
    };
    let url = format!("{}/mf_ssl_off", s.base);
    fails(&s, &format!("{url}?sslmode=require"), &[], "does not accept TLS");
    ok(&s, &format!("{url}?sslmode=prefer"), &[]);
}
