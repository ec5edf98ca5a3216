//! Runs users already have on disk: the database memfabric 0.4.0 wrote still lists
//! and reports, and a document this version cannot read is one line naming the run.

use std::path::{Path, PathBuf};

use memfabric_store::{NewRun, Store};

use super::memfabric;

/// A copy of the 0.4.0 database in a fresh directory (opening a store may write).
fn v040_copy(dir: &Path) -> PathBuf {
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/store/runs-v0.4.0.sqlite"
    );
    let db = dir.join("runs.sqlite");
    std::fs::copy(fixture, &db).expect("copy the fixture");
    db
}

#[test]
fn every_run_stored_by_0_4_0_is_reported_with_its_sections() {
    let dir = tempfile::tempdir().unwrap();
    let db = v040_copy(dir.path());
    let runs = Store::open(&db).unwrap().list().unwrap();
    assert_eq!(runs.len(), 16, "one run of every command that saves");
    for run in &runs {
        let out = dir.path().join(format!("{}.html", run.id));
        memfabric()
            .arg("--db")
            .arg(&db)
            .args(["report", &run.id.to_string(), "--output"])
            .arg(&out)
            .assert()
            .success();
        let html = std::fs::read_to_string(&out).unwrap();
        let sections = html.matches("<h2>").count();
        let want = if run.command == "run" { 9 } else { 1 };
        assert_eq!(sections, want, "run {} ({})", run.id, run.command);
        // Every section has something under its heading.
        for part in html.split("<h2>").skip(1) {
            let body = &part[part.find("</h2>").unwrap() + 5..];
            assert!(
                body.trim().len() > 20,
                "run {} ({}): empty section {part:.60}",
                run.id,
                run.command
            );
        }
    }
}

fn save_raw(db: &Path, command: &str, document: &str) -> i64 {
    let mut store = Store::open(db).unwrap();
    store
        .save(&NewRun {
            host_id: None,
            class_key: None,
            started_unix_s: 0,
            host: None,
            label: None,
            command: command.into(),
            tool_version: "9.0.0".into(),
            summary: String::new(),
            document: document.into(),
            doc_hash: memfabric_store::document_hash(document),
            figures: Vec::new(),
            campaign: None,
            facts: None,
        })
        .unwrap()
}

fn report_error(db: &Path, id: i64) -> String {
    let out = memfabric()
        .arg("--db")
        .arg(db)
        .args(["report", &id.to_string(), "--output"])
        .arg(db.with_extension("html"))
        .assert()
        .code(1);
    assert!(!db.with_extension("html").exists(), "no report written");
    String::from_utf8_lossy(&out.get_output().stderr).into_owned()
}

#[test]
fn a_document_from_a_newer_schema_is_one_line_naming_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = v040_copy(dir.path());
    let newer = r#"{"schema_version": 3, "command": "latency", "result": {"cells": "in a shape to come"}}"#;
    let id = save_raw(&db, "latency", newer);
    assert_eq!(
        report_error(&db, id),
        format!(
            "memfabric: error: run {id} cannot be reported: it was stored by a newer memfabric (schema 3; this one reads up to 2): upgrade memfabric to read it\n"
        )
    );
}

#[test]
fn a_document_that_does_not_parse_is_one_line_naming_the_run_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let db = v040_copy(dir.path());
    let broken = r#"{"schema_version": 2, "command": "latency", "result": {"cells": 3}}"#;
    let id = save_raw(&db, "latency", broken);
    let err = report_error(&db, id);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "memfabric: error: run {id} cannot be reported: its latency result does not parse: "
        )),
        "{err}"
    );
}

#[test]
fn runs_stored_by_0_4_0_count_in_a_fleet_report_and_are_not_ingested_twice() {
    let dir = tempfile::tempdir().unwrap();
    let db = v040_copy(dir.path());
    let out = memfabric()
        .arg("--db")
        .arg(&db)
        .args(["--json", "fleet", "report"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("reading 16 runs stored before fleet facts existed (once)"),
        "{err}"
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // One machine: its newest run with a headline (sweep has none; c2c has one).
    assert_eq!(r["result"]["hosts"], 1);
    let row = &r["result"]["rows"][0];
    assert_eq!(row["name"], "vm");
    assert!(row["values"]["c2c_ns"].as_f64().unwrap() > 0.0, "{row}");
    assert!(r["result"]["classes"][0]["key"]
        .as_str()
        .unwrap()
        .starts_with("unknown"));
    // The second time nothing is read again.
    let again = memfabric()
        .arg("--db")
        .arg(&db)
        .args(["fleet", "report"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&again.stderr).contains("reading"));
    // The run's own document, ingested, is the run already stored.
    let doc = Store::open(&db).unwrap().document(1).unwrap();
    let file = dir.path().join("run1.json");
    std::fs::write(&file, doc).unwrap();
    let out = memfabric()
        .arg("--db")
        .arg(&db)
        .args(["--json", "fleet", "ingest"])
        .arg(&file)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"]["duplicate"], 1, "{v}");
}
