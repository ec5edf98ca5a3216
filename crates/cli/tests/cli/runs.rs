//! The run history through the binary: --save/--label, runs, compare, export, and
//! what interrupted or concurrent saves leave behind.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

use super::{measuring, memfabric};

fn with_db(db: &Path) -> Command {
    let mut c = memfabric();
    c.env("MEMFABRIC_DB", db);
    c
}

fn json(db: &Path, args: &[&str]) -> Value {
    let out = with_db(db).args(args).arg("--json").assert().success();
    serde_json::from_slice(&out.get_output().stdout).expect("one JSON document")
}

const QUICK_BW: [&str; 7] = [
    "bandwidth",
    "--mix",
    "read,copy",
    "--size",
    "1M",
    "--samples",
    "2",
];

#[test]
fn saved_runs_list_show_compare_export_and_delete() {
    let _turn = measuring();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("h/runs.sqlite");
    with_db(&db)
        .args(QUICK_BW)
        .args(["--label", "first"])
        .assert()
        .success();
    let second = json(&db, &[&QUICK_BW[..], &["--save"]].concat());
    assert_eq!(
        second["command"], "bandwidth",
        "the saved run still prints its result"
    );
    let list = json(&db, &["runs", "list"]);
    let runs = list["result"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[1]["label"], "first");
    assert_eq!(runs[0]["figures"], 2);
    let shown = json(&db, &["runs", "show", "last"]);
    assert_eq!(shown["result"]["figures"][0]["metric"], "bandwidth_gb_s");
    let c = json(&db, &["compare", "1", "2"]);
    let rows = c["result"]["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "both mixes pair up");
    for r in rows {
        let (a, b) = (r["a"].as_f64().unwrap(), r["b"].as_f64().unwrap());
        assert!((r["delta"].as_f64().unwrap() - (b - a)).abs() < 1e-9);
    }
    let text = with_db(&db).args(["compare", "1", "last"]).assert().success();
    let text = String::from_utf8(text.get_output().stdout.clone()).unwrap();
    assert!(text.contains("run 2 minus run 1"), "{text}");
    let csv = with_db(&db)
        .args(["runs", "export", "1", "--format", "csv"])
        .assert()
        .success();
    let csv = String::from_utf8(csv.get_output().stdout.clone()).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "run_id,measurement,cpu_node,mem_node,mix,threads,metric,unit,value,min,max,cv,samples"
    );
    assert_eq!(lines.len(), 3);
    let doc = with_db(&db).args(["runs", "export", "2"]).assert().success();
    let doc: Value = serde_json::from_slice(&doc.get_output().stdout).unwrap();
    assert_eq!(doc, second, "export gives back the document the run printed");
    with_db(&db).args(["runs", "delete", "1"]).assert().success();
    let out = with_db(&db).args(["runs", "show", "1"]).assert().code(2);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("no run with id 1"));
}

#[test]
fn damaged_or_missing_databases_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.sqlite");
    let out = with_db(&missing).args(["runs", "list"]).assert().code(2);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("no run database"));
    let junk = dir.path().join("junk.sqlite");
    std::fs::write(&junk, vec![7u8; 4096]).unwrap();
    let out = with_db(&junk).args(["runs", "list"]).assert().code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        err.contains("not a memfabric database") && err.contains("move it aside"),
        "{err}"
    );
    let out = memfabric()
        .args(["--db", junk.to_str().unwrap(), "runs", "list"])
        .assert()
        .code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("junk.sqlite"));
    memfabric().args(["compare", "1", "zero"]).assert().code(2);
}

#[test]
fn two_processes_saving_at_once_both_land() {
    let _turn = measuring();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let bin = assert_cmd::cargo::cargo_bin("memfabric");
    let spawn = |label: &str| {
        std::process::Command::new(&bin)
            .arg("--quiet")
            .args([
                "bandwidth",
                "--label",
                label,
                "--size",
                "1M",
                "--samples",
                "2",
                "--threads",
                "1",
            ])
            .env("MEMFABRIC_DB", &db)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (spawn("a"), spawn("b"));
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    let list = json(&db, &["runs", "list"]);
    let mut labels: Vec<&str> = list["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    labels.sort_unstable();
    assert_eq!(labels, ["a", "b"]);
}

#[test]
fn an_interrupted_measurement_saves_nothing() {
    let _turn = measuring();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("memfabric"))
        .args([
            "--quiet",
            "bandwidth",
            "--save",
            "--size",
            "16M",
            "--samples",
            "100000",
        ])
        .env("MEMFABRIC_DB", &db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1000));
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    if db.exists() {
        let list = json(&db, &["runs", "list"]);
        assert_eq!(
            list["result"].as_array().unwrap().len(),
            0,
            "an interrupted run was saved"
        );
    }
}

/// Every saved run carries this machine's hardware class and host id, as `topology`
/// prints them, and `runs list` selects by either.
#[test]
fn runs_carry_and_select_by_hardware_class_and_host() {
    let _turn = measuring();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    with_db(&db).args(QUICK_BW).arg("--save").assert().success();
    let topo = memfabric().arg("topology").assert().success();
    let text = String::from_utf8_lossy(&topo.get_output().stdout).into_owned();
    let class = text
        .lines()
        .find_map(|l| l.strip_prefix("Hardware class: "))
        .and_then(|l| l.strip_suffix(" (runs list --class)"))
        .expect("topology prints the class");
    let listed = json(&db, &["runs", "list", "--class", class]);
    assert_eq!(listed["result"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed["result"][0]["class_key"], class);
    let host = listed["result"][0]["host_id"].as_str().map(str::to_string);
    if let Some(h) = host {
        assert_eq!(
            json(&db, &["runs", "list", "--host-id", &h])["result"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }
    let none = json(&db, &["runs", "list", "--class", "no-such-class"]);
    assert!(none["result"].as_array().unwrap().is_empty());
}

/// A configuration study: three labelled runs, selected by label prefix, one column
/// each and their ratios to the first, as text, JSON and grouped bars.
#[test]
fn compare_takes_any_number_of_runs_and_label_prefixes() {
    let _turn = measuring();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    for label in ["cfg-a", "other", "cfg-b", "cfg-c"] {
        with_db(&db)
            .args(QUICK_BW)
            .args(["--label", label])
            .assert()
            .success();
    }
    let s = json(&db, &["compare", "--label-prefix", "cfg-"]);
    let runs: Vec<&str> = s["result"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        runs,
        ["cfg-a", "cfg-b", "cfg-c"],
        "oldest first, `other` left out"
    );
    let rows = s["result"]["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        assert_eq!(r["values"].as_array().unwrap().len(), 3);
        assert_eq!(r["ratios"][0], 1.0);
        let (v0, v2) = (r["values"][0].as_f64().unwrap(), r["values"][2].as_f64().unwrap());
        assert!((r["ratios"][2].as_f64().unwrap() - v2 / v0).abs() < 1e-9);
    }
    let html = dir.path().join("study.html");
    let out = with_db(&db)
        .args(["compare", "1", "3", "4", "--html"])
        .arg(&html)
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("Study of 3 runs") && text.contains("#3 cfg-b / #1 cfg-a"),
        "{text}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("#4 cfg-c"));
    let one = with_db(&db).args(["compare", "1"]).assert().code(2);
    let err = String::from_utf8_lossy(&one.get_output().stderr).into_owned();
    assert!(err.contains("at least two runs; 1 given"), "{err}");
}
