//! The PostgreSQL backend against a real server. tests/postgres/run.sh starts a
//! throwaway one and sets MEMFABRIC_TEST_PG (an admin URL); without it every test
//! here returns at once, and the script, which counts the tests that ran
//! (MEMFABRIC_TEST_PG_RAN), fails.

use std::io::Write;

use memfabric_store::{Store, StoreError, LATEST_VERSION};
use postgres::{Client, NoTls};

mod common;

/// A database of its own for one test, created afresh; its URL. None without a server.
fn fresh(name: &str) -> Option<String> {
    let admin = std::env::var("MEMFABRIC_TEST_PG").ok()?;
    let mut c = Client::connect(&admin, NoTls).expect("the test server answers");
    c.batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .unwrap();
    c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
    if let Ok(path) = std::env::var("MEMFABRIC_TEST_PG_RAN") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(f, "{name}").unwrap();
    }
    let (base, _) = admin.rsplit_once('/').expect("URL with a database");
    Some(format!("{base}/{name}"))
}

#[test]
fn pg_batches_duplicates_and_fleet_rows_match_sqlite() {
    let Some(url) = fresh("mf_fleet_rows") else { return };
    common::batches_and_fleet_rows(&mut Store::open_location(&url).unwrap());
}

#[test]
fn pg_round_trip_matches_sqlite() {
    let Some(url) = fresh("mf_round_trip") else { return };
    let mut s = Store::open_location(&url).unwrap();
    common::round_trip(&mut s);
    drop(s);
    let s = Store::open_location(&url).unwrap();
    assert_eq!(s.list().unwrap().len(), 1, "survives reconnecting");
    assert!(!s.location().contains(&password(&url)), "{}", s.location());
}

fn password(url: &str) -> String {
    let userinfo = url.split("://").nth(1).unwrap().split('@').next().unwrap();
    userinfo.split_once(':').unwrap().1.to_string()
}

#[test]
fn pg_newer_schema_is_refused_naming_both_versions() {
    let Some(url) = fresh("mf_newer") else { return };
    drop(Store::open_location(&url).unwrap());
    let mut c = Client::connect(&url, NoTls).unwrap();
    c.execute(
        "UPDATE memfabric_schema SET version = $1",
        &[&(LATEST_VERSION + 3)],
    )
    .unwrap();
    let err = Store::open_location(&url).err().expect("refused");
    assert!(matches!(err, StoreError::NewerSchema { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("schema {}", LATEST_VERSION + 3))
            && msg.contains(&format!("up to {LATEST_VERSION}")),
        "{msg}"
    );
}

#[test]
fn pg_unreachable_and_wrong_password_are_one_line_without_the_password() {
    let Some(url) = fresh("mf_faults") else { return };
    let secret = password(&url);
    let wrong = url.replacen(&format!(":{secret}@"), ":not-the-password@", 1);
    let err = Store::open_location(&wrong)
        .err()
        .expect("wrong password refused");
    assert!(matches!(err, StoreError::Login { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("password authentication failed") && !msg.contains("not-the-password"),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
    // A port nothing listens on (the server's, plus one, is free in practice).
    let port: u16 = url
        .rsplit_once(':')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let closed = url.replacen(&format!(":{port}/"), &format!(":{}/", port + 1), 1);
    let err = Store::open_location(&closed).err().expect("nothing listens");
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err}");
    assert!(
        !err.to_string().contains(&secret) && !err.to_string().contains('\n'),
        "{err}"
    );
}

#[test]
fn counted_writer_child() {
    common::counted_writer_child();
}

#[test]
fn pg_thirty_two_writer_processes_lose_nothing() {
    let Some(url) = fresh("mf_writers") else { return };
    drop(Store::open_location(&url).unwrap());
    common::writers_at_once(&url, 32, 5);
}

#[test]
fn pg_killed_writers_leave_only_whole_runs() {
    let Some(url) = fresh("mf_killed") else { return };
    drop(Store::open_location(&url).unwrap());
    common::kill_writers(&url, 6);
}

/// Many processes starting at once on an empty database migrate it once.
#[test]
fn pg_first_opens_at_once_migrate_once() {
    let Some(url) = fresh("mf_first_open") else { return };
    let start = std::sync::Barrier::new(8);
    std::thread::scope(|s| {
        let opens: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    Store::open_location(&url).map(|_| ())
                })
            })
            .collect();
        for o in opens {
            let r = o.join().unwrap();
            assert!(r.is_ok(), "{r:?}");
        }
    });
    let mut c = Client::connect(&url, NoTls).unwrap();
    let rows = c.query("SELECT version FROM memfabric_schema", &[]).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].get::<_, i64>(0), LATEST_VERSION);
}

/// tests/postgres/run.sh runs this alone, with MEMFABRIC_TEST_PG_RESTART a
/// command that restarts the server: a store held open across the restart (as
/// `fleet run` holds one through a campaign) writes again.
#[test]
fn pgrestart_a_store_open_across_a_server_restart_writes_again() {
    let Ok(restart) = std::env::var("MEMFABRIC_TEST_PG_RESTART") else {
        return;
    };
    let Some(url) = fresh("mf_restart") else { return };
    let mut s = Store::open_location(&url).unwrap();
    s.save_all(&[common::run("before", 3)]).unwrap();
    let status = std::process::Command::new("sh")
        .args(["-c", &restart])
        .status()
        .unwrap();
    assert!(status.success(), "{restart}");
    s.save_all(&[common::run("after", 3)]).unwrap();
    let labels: Vec<_> = s.list().unwrap().into_iter().map(|r| r.label).collect();
    assert_eq!(labels.len(), 2, "{labels:?}");
}
