//! `--store postgres://...` as users meet it. Runs against the server
//! tests/postgres/run.sh starts (MEMFABRIC_TEST_PG); without one each test returns
//! at once and that script, which counts what ran, fails.

use std::io::Write;

use super::memfabric;

/// A fresh database on the test server for one test, and its URL.
fn fresh(name: &str) -> Option<String> {
    let admin = std::env::var("MEMFABRIC_TEST_PG").ok()?;
    let status = std::process::Command::new("psql")
        .arg(&admin)
        .args([
            "-q",
            "-c",
            &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        ])
        .args(["-c", &format!("CREATE DATABASE {name}")])
        .status()
        .expect("psql runs");
    assert!(status.success(), "creating database {name}");
    counted(name);
    Some(format!("{}/{name}", admin.rsplit_once('/').unwrap().0))
}

/// Tells tests/postgres/run.sh, which counts them, that a test ran against the server.
pub fn counted(name: &str) {
    if let Ok(path) = std::env::var("MEMFABRIC_TEST_PG_RAN") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(f, "cli {name}").unwrap();
    }
}

#[test]
fn postgres_store_saves_lists_and_reports() {
    let Some(url) = fresh("mf_cli_store") else { return };
    let _turn = super::measuring();
    let home = tempfile::tempdir().unwrap();
    let out = memfabric()
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .args([
            "--store", &url, "stream", "--size", "1M", "--ntimes", "2", "--label", "pg",
        ])
        .assert()
        .success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains("saved as run 1 in postgres://memfabric:***@"),
        "{err}"
    );
    let list = super::json_of(&["--store", &url, "runs", "list"]);
    assert_eq!(list["result"][0]["label"], "pg");
    let report = home.path().join("r.html");
    memfabric()
        .env("MEMFABRIC_STORE", &url)
        .args(["report", "last", "-o"])
        .arg(&report)
        .assert()
        .success();
    assert!(std::fs::read_to_string(&report).unwrap().contains("STREAM"));
    assert_eq!(
        std::fs::read_dir(home.path()).unwrap().count(),
        1,
        "only the report: no local database"
    );
}

#[test]
fn postgres_store_unreachable_is_one_line_exit_1_and_measures_nothing() {
    let Some(url) = fresh("mf_cli_down") else { return };
    let port: u16 = url
        .rsplit_once(':')
        .unwrap()
        .1
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let down = url.replacen(&format!(":{port}/"), &format!(":{}/", port + 1), 1);
    let home = tempfile::tempdir().unwrap();
    let out = memfabric()
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .args([
            "--store", &down, "stream", "--size", "1M", "--ntimes", "2", "--save",
        ])
        .assert()
        .code(1);
    let o = out.get_output();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("cannot reach the PostgreSQL store postgres://memfabric:***@"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "nothing measured or printed");
    assert_eq!(
        std::fs::read_dir(home.path()).unwrap().count(),
        0,
        "nothing written locally"
    );
}

#[test]
fn postgres_fleet_ingest_is_idempotent_and_reports_the_planted_faults() {
    let Some(url) = fresh("mf_cli_fleet") else { return };
    let dir = tempfile::tempdir().unwrap();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let truth = super::synth::write_fleet(&repo, dir.path(), 40);
    let docs = dir.path().to_str().unwrap();
    for (new, duplicate) in [(40, 0), (0, 40)] {
        let r = super::json_of(&["--store", &url, "fleet", "ingest", "--campaign", "pg", docs]);
        assert_eq!(
            (r["result"]["new"].as_u64(), r["result"]["duplicate"].as_u64()),
            (Some(new), Some(duplicate))
        );
    }
    let r = super::json_of(&["--store", &url, "fleet", "report", "--campaign", "pg"]);
    let mut found: Vec<&str> = r["result"]["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["host"].as_str().unwrap())
        .collect();
    found.dedup();
    let planted: Vec<&str> = truth
        .iter()
        .filter(|(_, f)| f.is_some())
        .map(|(h, _)| h.as_str())
        .collect();
    let mut found_sorted = found.clone();
    found_sorted.sort_unstable();
    let mut planted_sorted = planted.clone();
    planted_sorted.sort_unstable();
    assert_eq!(found_sorted, planted_sorted);
}
