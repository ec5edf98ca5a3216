//! What a new user trips over first: store locations that are typos, labels that
//! name runs, read-only commands that must not create, text that must not reach the
//! terminal raw, and commands that say what they did in JSON.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

use super::{measuring, memfabric, refused};

/// A latency measurement that takes a moment.
const QUICK: [&str; 7] = ["latency", "--size", "64K", "--samples", "2", "--sample-ms", "1"];

/// A quick saved measurement labelled `label` in `db`.
fn save(db: &Path, label: &str) {
    memfabric()
        .arg("--db")
        .arg(db)
        .args(QUICK)
        .args(["--label", label])
        .assert()
        .success();
}

fn with_db(db: &Path) -> Command {
    let mut c = memfabric();
    c.arg("--db").arg(db);
    c
}

#[test]
fn an_unknown_store_scheme_is_refused_without_showing_its_password_or_creating_a_file() {
    let dir = tempfile::tempdir().unwrap();
    for url in ["postgress://u:s3cret@127.0.0.1:1/db", "mysql://x:s3cret@h/db"] {
        let out = memfabric()
            .current_dir(dir.path())
            .args(["--store", url, "latency", "--size", "64K", "--save"])
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        let scheme = url.split("://").next().unwrap();
        assert_eq!(
            err,
            format!("memfabric: error: {scheme}:// is not a store this memfabric knows: give a postgres:// or postgresql:// URL, an sqlite://PATH, or a file path\n")
        );
        assert!(!err.contains("s3cret"));
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no file was created"
    );
    // sqlite://PATH is a file store.
    let _turn = measuring();
    let db = dir.path().join("via-url.sqlite");
    let url = format!("sqlite://{}", db.display());
    memfabric()
        .args(["--store", &url])
        .args(QUICK)
        .arg("--save")
        .assert()
        .success();
    assert!(db.is_file());
}

#[test]
fn labels_name_runs_and_a_shared_label_is_refused_with_its_runs() {
    let _turn = measuring();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    save(&db, "ddr4");
    save(&db, "ddr5");
    let show = with_db(&db)
        .args(["--json", "runs", "show", "ddr5"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&show.get_output().stdout).unwrap();
    assert_eq!(v["result"]["run"]["id"], 2, "{v}");
    with_db(&db).args(["compare", "ddr4", "ddr5"]).assert().success();
    save(&db, "ddr5");
    let e = refused(&["--db", db.to_str().unwrap(), "runs", "show", "ddr5"]);
    assert_eq!(
        e,
        "memfabric: error: the label \"ddr5\" names 2 runs (3, 2): give one of their ids\n"
    );
    let e = refused(&["--db", db.to_str().unwrap(), "report", "nope"]);
    assert!(
        e.starts_with("memfabric: error: no run labelled \"nope\" in "),
        "{e}"
    );
    for bad in ["", "  ", "7", "last"] {
        let e = refused(&["--db", db.to_str().unwrap(), "latency", "--label", bad]);
        assert!(e.starts_with("memfabric: error: --label"), "{bad:?}: {e}");
    }
    let e = refused(&["--db", db.to_str().unwrap(), "compare", "1", "1"]);
    assert!(e.contains("run 1 is given twice"), "{e}");
}

#[test]
fn an_exported_run_keeps_its_label_through_ingest_and_counts_as_the_same_run() {
    let _turn = measuring();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    save(&db, "baseline");
    let out = with_db(&db)
        .args(["runs", "export", "baseline"])
        .assert()
        .success();
    let exported = out.get_output().stdout.clone();
    let v: Value = serde_json::from_slice(&exported).unwrap();
    assert_eq!(v["label"], "baseline");
    let file = dir.path().join("baseline.json");
    std::fs::write(&file, &exported).unwrap();
    // Into the same store: the same document, not a second run.
    let same = with_db(&db)
        .args(["--json", "fleet", "ingest"])
        .arg(&file)
        .assert()
        .success();
    let r: Value = serde_json::from_slice(&same.get_output().stdout).unwrap();
    assert_eq!(
        (r["result"]["new"].as_u64(), r["result"]["duplicate"].as_u64()),
        (Some(0), Some(1))
    );
    // Into another store: the label comes along, and exports again once.
    let other = dir.path().join("other.sqlite");
    with_db(&other)
        .args(["fleet", "ingest"])
        .arg(&file)
        .assert()
        .success();
    let list = with_db(&other)
        .args(["--json", "runs", "list"])
        .assert()
        .success();
    let l: Value = serde_json::from_slice(&list.get_output().stdout).unwrap();
    assert_eq!(l["result"][0]["label"], "baseline");
    let again = with_db(&other)
        .args(["runs", "export", "baseline"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&again.get_output().stdout).into_owned();
    assert_eq!(text.matches("\"label\"").count(), 1, "{text}");
}

#[test]
fn read_only_commands_create_nothing_and_an_empty_variable_is_not_the_default_store() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.sqlite");
    std::fs::write(&empty, "").unwrap();
    let e = refused(&["--db", empty.to_str().unwrap(), "runs", "list"]);
    assert!(e.contains("is an empty file, not a run database"), "{e}");
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0, "left as it was");
    let missing = dir.path().join("missing.sqlite");
    refused(&["--db", missing.to_str().unwrap(), "runs", "list"]);
    assert!(!missing.exists());
    for var in ["MEMFABRIC_DB", "MEMFABRIC_STORE"] {
        let out = memfabric()
            .env("HOME", dir.path())
            .env(var, "")
            .args(["runs", "list"])
            .assert()
            .code(2);
        let e = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert_eq!(
            e,
            format!(
                "memfabric: error: {var} is set but empty: unset it for the default store, or give a path\n"
            )
        );
    }
}

#[test]
fn labels_with_control_characters_reach_the_terminal_escaped() {
    let _turn = measuring();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    save(&db, "evil\u{1b}[2J\nrow");
    let out = with_db(&db).args(["runs", "list"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!text.contains('\u{1b}'), "{text:?}");
    assert!(text.contains("evil\\u{1b}[2J\\nrow"), "{text}");
    assert_eq!(text.lines().count(), 2, "one header, one run: {text}");
}

#[test]
fn report_and_delete_answer_json_and_an_existing_report_is_kept_without_force() {
    let _turn = measuring();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    save(&db, "one");
    let page = dir.path().join("one.html");
    let out = with_db(&db)
        .args(["--json", "report", "one", "-o"])
        .arg(&page)
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(
        (v["command"].as_str(), v["result"]["run"].as_i64()),
        (Some("report"), Some(1))
    );
    assert_eq!(v["result"]["path"], page.display().to_string());
    let e = refused(&[
        "--db",
        db.to_str().unwrap(),
        "report",
        "one",
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(e.contains("exists: --force overwrites it"), "{e}");
    with_db(&db)
        .args(["report", "one", "--force", "-o"])
        .arg(&page)
        .assert()
        .success();
    // A write that fails leaves no partial file.
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let target = ro.join("missing-dir").join("x.html");
    with_db(&db)
        .args(["report", "one", "-o"])
        .arg(&target)
        .assert()
        .code(1);
    assert_eq!(std::fs::read_dir(&ro).unwrap().count(), 0);
    let out = with_db(&db)
        .args(["--json", "runs", "delete", "one"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["result"]["deleted"], 1);
}

#[test]
fn compare_names_the_settings_two_runs_were_taken_with_first() {
    let _turn = measuring();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let quick = ["latency", "--samples", "2", "--sample-ms", "1", "--save"];
    with_db(&db)
        .args(quick)
        .args(["--size", "64K"])
        .assert()
        .success();
    with_db(&db)
        .args(quick)
        .args(["--size", "128K", "--huge-pages", "thp"])
        .assert()
        .success();
    with_db(&db)
        .args(quick)
        .args(["--size", "64K"])
        .assert()
        .success();
    let out = with_db(&db).args(["compare", "1", "2"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let warn = text
        .find("The runs were taken with different settings")
        .expect("the warning");
    assert!(
        warn < text.find("minus run").unwrap(),
        "before the differences: {text}"
    );
    assert!(text.contains("result.size_bytes  65536  131072"), "{text}");
    assert!(text.contains("result.huge_pages  off    thp"), "{text}");
    let same = with_db(&db).args(["compare", "1", "3"]).assert().success();
    assert!(!String::from_utf8_lossy(&same.get_output().stdout).contains("different settings"));
    let json = with_db(&db)
        .args(["--json", "compare", "1", "2", "3"])
        .assert()
        .success();
    let v: Value = serde_json::from_slice(&json.get_output().stdout).unwrap();
    let d = v["result"]["settings_differ"].as_array().unwrap();
    assert!(d.iter().all(|x| x["run"] == 2), "{d:?}");
    assert_eq!(d.len(), 2);
}
