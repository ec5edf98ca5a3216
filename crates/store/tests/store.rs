//! The store as commands use it: round trips, refusals, and what interruptions and
//! concurrent writers leave behind.

use std::path::{Path, PathBuf};
use std::time::Duration;

use memfabric_store::{default_path, Store, StoreError, LATEST_VERSION};

mod common;
use common::run;

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("sub/dir/runs.sqlite")
}

#[test]
fn batches_duplicates_and_fleet_rows() {
    let dir = tempfile::tempdir().unwrap();
    common::batches_and_fleet_rows(&mut Store::open(&db(&dir)).unwrap());
}

#[test]
fn runs_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&db(&dir)).unwrap();
    common::round_trip(&mut s);
    drop(s);
    let s = Store::open(&db(&dir)).unwrap();
    assert_eq!(s.list().unwrap().len(), 1, "survives reopening");
}

/// Child side of the concurrency test: saves `MEMFABRIC_STORE_CHILD_RUNS` runs.
#[test]
fn counted_writer_child() {
    common::counted_writer_child();
}

/// 32 processes saving at once into one SQLite file lose nothing.
#[test]
fn thirty_two_writer_processes_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    drop(Store::open(&path).unwrap());
    common::writers_at_once(&path.display().to_string(), 32, 5);
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    drop(Store::open(&path).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", LATEST_VERSION + 5)
        .unwrap();
    drop(conn);
    let err = Store::open(&path).err().expect("refused");
    assert!(matches!(err, StoreError::NewerSchema { .. }), "{err}");
    assert!(err.to_string().contains("newer memfabric"), "{err}");
}

#[test]
fn a_file_that_is_not_a_database_gives_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    let err = Store::open(&path).err().expect("refused");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("move it aside"), "{err}");
}

#[test]
fn a_held_lock_times_out_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    drop(Store::open(&path).unwrap());
    let holder = rusqlite::Connection::open(&path).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let err = Store::open_with_timeout(&path, Duration::from_millis(200))
        .and_then(|mut s| s.save(&run("blocked", 1)))
        .expect_err("locked");
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    holder.execute_batch("ROLLBACK").unwrap();
}

#[test]
fn two_writers_at_once_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    drop(Store::open(&path).unwrap());
    std::thread::scope(|s| {
        for w in 0..2 {
            let path = &path;
            s.spawn(move || {
                let mut store = Store::open(path).unwrap();
                for i in 0..40 {
                    store.save(&run(&format!("w{w}-{i}"), 50)).unwrap();
                }
            });
        }
    });
    let store = Store::open(&path).unwrap();
    let list = store.list().unwrap();
    assert_eq!(list.len(), 80);
    assert!(list.iter().all(|r| r.figures == 50));
}

#[test]
fn default_path_follows_flag_env_xdg_home() {
    let flag = Path::new("/tmp/x.sqlite");
    assert_eq!(
        default_path(Some(flag), Some("/e"), Some("/x"), Some("/h")).unwrap(),
        flag
    );
    assert_eq!(
        default_path(None, Some("/e.db"), Some("/x"), Some("/h")).unwrap(),
        Path::new("/e.db")
    );
    assert_eq!(
        default_path(None, None, Some("/x"), Some("/h")).unwrap(),
        Path::new("/x/memfabric/runs.sqlite")
    );
    assert_eq!(
        default_path(None, Some(""), Some(""), Some("/h")).unwrap(),
        Path::new("/h/.local/share/memfabric/runs.sqlite")
    );
    assert_eq!(default_path(None, None, None, None), None);
}

/// Child side of the kill test: saves runs until it is killed.
#[test]
fn writer_child() {
    let Ok(path) = std::env::var("MEMFABRIC_STORE_CHILD_DB") else {
        return;
    };
    let mut store = Store::open(Path::new(&path)).unwrap();
    for i in 0.. {
        store.save(&run(&format!("child-{i}"), 400)).unwrap();
    }
}

/// Kills writers with SIGKILL, SIGTERM and SIGINT at varied moments during their saves;
/// the database must open, pass SQLite's integrity check, and hold only whole runs.
#[test]
fn killed_writers_leave_only_whole_runs() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    drop(Store::open(&path).unwrap());
    let exe = std::env::current_exe().unwrap();
    for (round, signal) in ["KILL", "TERM", "INT"].iter().cycle().take(9).enumerate() {
        let mut child = std::process::Command::new(&exe)
            .args(["--exact", "writer_child", "--nocapture", "--test-threads", "1"])
            .env("MEMFABRIC_STORE_CHILD_DB", &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(150 + 37 * round as u64));
        let status = std::process::Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        child.wait().unwrap();
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    drop(conn);
    let store = Store::open(&path).unwrap();
    let list = store.list().unwrap();
    assert!(list.len() > 9, "the writers saved something: {}", list.len());
    for r in &list {
        assert_eq!(r.figures, 400, "run {} ({:?}) is partial", r.id, r.label);
        assert!(store.document(r.id).unwrap().ends_with("\"}"));
    }
}

/// Processes that open a database that does not exist yet at the same moment (two
/// `--save`s started together) all get it: switching a new file to WAL can answer
/// "busy" without waiting, and opening tries again until the busy timeout.
#[test]
fn opening_a_new_database_from_several_threads_at_once_succeeds() {
    for round in 0..20 {
        let dir = tempfile::tempdir().unwrap();
        let path = db(&dir);
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            let opens: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        Store::open(&path).map(|_| ())
                    })
                })
                .collect();
            for o in opens {
                let r = o.join().unwrap();
                assert!(r.is_ok(), "round {round}: {r:?}");
            }
        });
    }
}

/// A database memfabric 0.4.0 wrote (schema 1) gains the host and class columns; its
/// runs keep everything and read back with neither.
#[test]
fn a_v040_database_migrates_and_new_runs_carry_host_and_class() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.sqlite");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/store/runs-v0.4.0.sqlite"
    );
    std::fs::copy(fixture, &path).unwrap();
    let mut s = Store::open(&path).unwrap();
    let old = s.list().unwrap();
    assert_eq!(old.len(), 16);
    assert!(old.iter().all(|r| r.class_key.is_none() && r.host_id.is_none()));
    let mut new = run("classed", 3);
    new.class_key = Some("CPU/2S/64C/16ch/3200MT/2N".into());
    new.host_id = Some("machine-id:0123456789abcdef".into());
    let id = s.save(&new).unwrap();
    let got = s.summary(id).unwrap();
    assert_eq!(got.class_key, new.class_key);
    assert_eq!(got.host_id, new.host_id);
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let v: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
    assert_eq!(v, LATEST_VERSION);
}
