use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;

use super::*;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

fn host(c: &Conninfo) -> String {
    match &c.config.get_hosts()[0] {
        Host::Tcp(h) => h.clone(),
        Host::Unix(p) => p.display().to_string(),
    }
}

#[test]
fn the_url_wins_then_the_environment_then_the_defaults() {
    let env = env_of(&[
        ("PGHOST", "db.example"),
        ("PGPORT", "6543"),
        ("PGUSER", "ann"),
        ("PGDATABASE", "fleet"),
    ]);
    let c = resolve("postgresql://", &env, None).unwrap();
    assert_eq!(host(&c), "db.example");
    assert_eq!(c.config.get_ports(), &[6543]);
    assert_eq!(c.config.get_user(), Some("ann"));
    assert_eq!(c.config.get_dbname(), Some("fleet"));
    assert_eq!(c.mode, SslMode::Prefer);
    let c = resolve("postgres://bob@h:1/d", &env, None).unwrap();
    assert_eq!(
        (
            host(&c),
            c.config.get_ports(),
            c.config.get_user(),
            c.config.get_dbname()
        ),
        ("h".into(), &[1u16][..], Some("bob"), Some("d"))
    );
    let none = env_of(&[("USER", "carl")]);
    let c = resolve("postgres://", &none, None).unwrap();
    assert_eq!(host(&c), "/var/run/postgresql");
    assert_eq!(c.config.get_user(), Some("carl"));
    assert!(resolve("postgres://", &env_of(&[]), None)
        .unwrap_err()
        .contains("no user"));
    assert!(
        resolve("postgres://", &env_of(&[("USER", "x"), ("PGPORT", "http")]), None)
            .unwrap_err()
            .contains("PGPORT=http is not a port")
    );
}

#[test]
fn ssl_parameters_come_from_the_url_or_pgssl_variables() {
    let env = env_of(&[
        ("USER", "u"),
        ("PGSSLMODE", "require"),
        ("PGSSLROOTCERT", "/env/ca.crt"),
    ]);
    let c = resolve("postgres://h/d", &env, None).unwrap();
    assert_eq!(c.mode, SslMode::Require);
    assert_eq!(c.files.rootcert.as_deref(), Some(Path::new("/env/ca.crt")));
    let c = resolve(
        "postgres://h/d?sslmode=verify-full&sslrootcert=%2Ftmp%2Fmy%20ca.crt&application_name=x",
        &env,
        None,
    )
    .unwrap();
    assert_eq!(c.mode, SslMode::VerifyFull);
    assert_eq!(c.files.rootcert.as_deref(), Some(Path::new("/tmp/my ca.crt")));
    assert_eq!(c.config.get_application_name(), Some("x"));
    assert!(resolve("postgres://h/d?sslmode=allow", &env, None)
        .unwrap_err()
        .contains("not offered"));
    assert!(resolve("postgres://h/d?sslmode=bogus", &env, None)
        .unwrap_err()
        .contains("sslmode=bogus"));
}

#[test]
fn the_default_files_are_used_where_they_exist() {
    let home = tempfile::tempdir().unwrap();
    let env = env_of(&[("USER", "u")]);
    let c = resolve("postgres://h/d", &env, Some(home.path())).unwrap();
    assert_eq!(c.files, TlsFiles::default());
    let dot = home.path().join(".postgresql");
    std::fs::create_dir(&dot).unwrap();
    for f in ["root.crt", "postgresql.crt", "postgresql.key"] {
        std::fs::write(dot.join(f), "x").unwrap();
    }
    let c = resolve("postgres://h/d", &env, Some(home.path())).unwrap();
    assert_eq!(c.files.rootcert, Some(dot.join("root.crt")));
    assert!(!c.files.rootcert_given);
    assert_eq!(c.files.key, Some(dot.join("postgresql.key")));
}

fn pgpass(dir: &Path, text: &str, mode: u32) -> PathBuf {
    let f = dir.join("pgpass");
    std::fs::write(&f, text).unwrap();
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
    f
}

#[test]
fn the_password_file_matches_as_libpq_matches() {
    let dir = tempfile::tempdir().unwrap();
    let f = pgpass(
        dir.path(),
        "# comment\nother:5432:*:ann:nope\ndb.example:6543:fleet:ann:s3cr\\:et\n*:*:*:ann:fallback\n",
        0o600,
    );
    let env = env_of(&[("PGPASSFILE", f.to_str().unwrap())]);
    let c = resolve("postgres://ann@db.example:6543/fleet", &env, None).unwrap();
    assert_eq!(c.config.get_password(), Some(&b"s3cr:et"[..]));
    assert!(c.warnings.is_empty());
    let c = resolve("postgres://ann@elsewhere/fleet", &env, None).unwrap();
    assert_eq!(c.config.get_password(), Some(&b"fallback"[..]));
    let c = resolve("postgres://zed@db.example:6543/fleet", &env, None).unwrap();
    assert_eq!(c.config.get_password(), None);
    // The URL's password and PGPASSWORD come first.
    let c = resolve("postgres://ann:url@db.example:6543/fleet", &env, None).unwrap();
    assert_eq!(c.config.get_password(), Some(&b"url"[..]));
    let both = env_of(&[("PGPASSFILE", f.to_str().unwrap()), ("PGPASSWORD", "envpw")]);
    let c = resolve("postgres://ann@db.example:6543/fleet", &both, None).unwrap();
    assert_eq!(c.config.get_password(), Some(&b"envpw"[..]));
    // passfile= in the URL, and ~/.pgpass by default.
    let url = format!("postgres://ann@db.example:6543/fleet?passfile={}", f.display());
    let c = resolve(&url, &env_of(&[]), None).unwrap();
    assert_eq!(c.config.get_password(), Some(&b"s3cr:et"[..]));
    std::fs::copy(&f, dir.path().join(".pgpass")).unwrap();
    let c = resolve("postgres://ann@x/y", &env_of(&[]), Some(dir.path())).unwrap();
    assert_eq!(c.config.get_password(), Some(&b"fallback"[..]));
}

#[test]
fn a_password_file_others_can_read_is_ignored_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let f = pgpass(dir.path(), "*:*:*:*:secret\n", 0o644);
    let env = env_of(&[("PGPASSFILE", f.to_str().unwrap())]);
    let c = resolve("postgres://ann@h/d", &env, None).unwrap();
    assert_eq!(c.config.get_password(), None);
    assert_eq!(c.warnings.len(), 1);
    assert!(c.warnings[0].contains("has group or world access") && c.warnings[0].contains("ignored"));
    assert!(!c.warnings[0].contains("secret"));
}

#[test]
fn a_unix_socket_host_matches_localhost_in_the_password_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = pgpass(dir.path(), "localhost:5432:*:ann:local\n", 0o600);
    let env = env_of(&[("PGPASSFILE", f.to_str().unwrap()), ("PGUSER", "ann")]);
    let c = resolve("postgres://", &env, None).unwrap();
    assert_eq!(c.config.get_password(), Some(&b"local"[..]));
}
