//! `fleet ingest` and `fleet report` on a synthetic fleet with planted faults.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::memfabric;
use super::synth::{self, Fault};

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn json(store: &Path, args: &[&str], code: i32) -> Value {
    let out = memfabric()
        .arg("--store")
        .arg(store)
        .arg("--json")
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

/// Refused input for a store: exit 2, nothing on stdout; stderr.
fn refused(store: &Path, args: &[&str]) -> String {
    let mut all = vec!["--store", store.to_str().unwrap()];
    all.extend_from_slice(args);
    super::refused(&all)
}

/// Ingests a directory into campaign "acceptance": (new, duplicate).
fn ingest(store: &Path, docs: &Path) -> (u64, u64) {
    let args = [
        "fleet",
        "ingest",
        "--campaign",
        "acceptance",
        docs.to_str().unwrap(),
    ];
    let r = &json(store, &args, 0)["result"];
    (r["new"].as_u64().unwrap(), r["duplicate"].as_u64().unwrap())
}

#[test]
fn a_fleet_is_stored_once_and_its_planted_faults_found_with_their_causes() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    let store = dir.path().join("fleet.sqlite");
    let truth = synth::write_fleet(&repo(), &docs, 200);
    let planted: BTreeMap<&str, Fault> = truth
        .iter()
        .filter_map(|(h, f)| Some((h.as_str(), (*f)?)))
        .collect();
    assert_eq!(planted.len(), 16, "4 faults in each of 4 classes");

    assert_eq!(ingest(&store, &docs), (200, 0));
    assert_eq!(ingest(&store, &docs), (0, 200), "ingesting twice stores once");

    let r = json(&store, &["fleet", "report", "--campaign", "acceptance"], 0)["result"].clone();
    assert_eq!(r["hosts"], 200);
    let classes: Vec<u64> = r["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["hosts"].as_u64().unwrap())
        .collect();
    assert_eq!(
        classes,
        [50, 50, 50, 50],
        "a missing or slow DIMM is judged in its class, not a class of one"
    );
    let mut found: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for o in r["outliers"].as_array().unwrap() {
        let causes = o["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect();
        found.insert(o["host"].as_str().unwrap().to_string(), causes);
    }
    let found_hosts: Vec<&str> = found.keys().map(String::as_str).collect();
    let planted_hosts: Vec<&str> = planted.keys().copied().collect();
    assert_eq!(found_hosts, planted_hosts, "every planted fault and nothing else");
    for (host, fault) in &planted {
        let causes = &found[*host];
        assert!(
            causes[0].starts_with(fault.cause()),
            "{host} ({fault:?}): {causes:?}"
        );
    }
    let drift: Vec<&str> = r["drift"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["fact"].as_str().unwrap())
        .collect();
    assert!(
        drift.contains(&"kernel") && drift.contains(&"bios_version"),
        "{drift:?}"
    );

    forms_of_the_report(&store, &r, &planted_hosts);
}

/// Text, CSV, HTML and one class: the same verdicts in every form.
fn forms_of_the_report(store: &Path, r: &Value, planted_hosts: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    // An acceptance script's gate.
    let out = memfabric()
        .arg("--store")
        .arg(store)
        .args(["fleet", "report", "--fail-on-outliers"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("Fleet: 200 hosts in 4 classes, "), "{text}");
    assert!(
        text.contains("Outlier hosts (") && text.contains("Configuration drift"),
        "{text}"
    );

    let csv = memfabric()
        .arg("--store")
        .arg(store)
        .args(["fleet", "report", "--csv"])
        .output()
        .unwrap();
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert!(csv.starts_with(
        "class,host,host_id,run_id,figure,value,class_median,worse_pct,outlier,causes,measured_unix_s,stored_unix_s\n"
    ));
    let outlier_rows = csv.lines().filter(|l| l.contains(",true,")).count();
    assert_eq!(outlier_rows, r["outliers"].as_array().unwrap().len());

    let html = dir.path().join("fleet.html");
    memfabric()
        .arg("--store")
        .arg(store)
        .args(["fleet", "report", "--html"])
        .arg(&html)
        .assert()
        .success();
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains(planted_hosts[0]) && !page.contains("<script"));

    let key = r["classes"][0]["key"].as_str().unwrap();
    let one = json(store, &["fleet", "report", "--class", key], 0)["result"].clone();
    assert_eq!(one["hosts"], 50);
    let e = refused(store, &["fleet", "report", "--class", "nope"]);
    assert!(
        e.starts_with("memfabric: error: no hosts of class nope; the classes are: ")
            && e.lines().count() == 1,
        "{e}"
    );
}

#[test]
fn rejected_documents_are_named_with_their_reason_and_the_rest_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("fleet.sqlite");
    let t = synth::Templates::load(&repo());
    let good = synth::document(&t, &synth::CLASSES[0], 0, 1, None);
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"schema_version\": 2,").unwrap();
    let newer = dir.path().join("newer.json");
    let mut v = good.clone();
    v["schema_version"] = serde_json::json!(99);
    std::fs::write(&newer, v.to_string()).unwrap();
    // Two documents one after another, as `cat a.json b.json` gives.
    let both = dir.path().join("both.json");
    let other = synth::document(&t, &synth::CLASSES[0], 0, 2, None);
    std::fs::write(&both, format!("{good}\n{other}\n")).unwrap();
    let out = json(
        &store,
        &[
            "fleet",
            "ingest",
            both.to_str().unwrap(),
            bad.to_str().unwrap(),
            newer.to_str().unwrap(),
        ],
        1,
    );
    let r = &out["result"];
    assert_eq!((r["documents"].as_u64(), r["new"].as_u64()), (Some(4), Some(2)));
    let reasons: Vec<String> = r["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            format!(
                "{}: {}",
                x["source"].as_str().unwrap(),
                x["reason"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(reasons.len(), 2);
    assert!(reasons[0].contains("bad.json: it is not JSON"), "{reasons:?}");
    assert!(
        reasons[1].contains("newer.json: it was stored by a newer memfabric (schema 99"),
        "{reasons:?}"
    );

    // Standard input, and a pretty-printed copy of a stored document: a duplicate.
    let pretty = serde_json::to_string_pretty(&good).unwrap();
    let out = memfabric()
        .arg("--store")
        .arg(&store)
        .args(["--json", "fleet", "ingest", "-"])
        .write_stdin(pretty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["result"]["duplicate"], 1);

    let e = refused(&store, &["fleet", "ingest", "/nonexistent/x.json"]);
    assert_eq!(
        e,
        "memfabric: error: /nonexistent/x.json: no such file or directory\n"
    );
    let empty = tempfile::tempdir().unwrap();
    let e = refused(&store, &["fleet", "ingest", empty.path().to_str().unwrap()]);
    assert!(e.contains("no *.json file under"), "{e}");
    let fresh = dir.path().join("empty.sqlite");
    memfabric()
        .arg("--store")
        .arg(&fresh)
        .args(["runs", "list"])
        .assert()
        .code(2);
}

/// 400 documents of one class (so every one holds the same number of figures) in
/// `dir/docs`.
fn four_hundred(dir: &Path) -> PathBuf {
    let docs = dir.join("docs");
    std::fs::create_dir(&docs).unwrap();
    let t = synth::Templates::load(&repo());
    for i in 0..400 {
        let doc = synth::document(&t, &synth::CLASSES[1], 1, i, None);
        std::fs::write(docs.join(format!("{i:04}.json")), doc.to_string()).unwrap();
    }
    docs
}

#[test]
fn a_killed_ingest_leaves_whole_runs_and_ingesting_again_completes_it() {
    let dir = tempfile::tempdir().unwrap();
    let docs = four_hundred(dir.path());
    let store = dir.path().join("fleet.sqlite");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("memfabric"))
        .arg("--quiet")
        .arg("--store")
        .arg(&store)
        .args(["fleet", "ingest"])
        .arg(&docs)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let stored = |s: &Path| {
        memfabric_store::Store::open(s)
            .ok()
            .and_then(|st| st.list().ok())
            .unwrap_or_default()
    };
    while stored(&store).is_empty() {
        assert!(started.elapsed().as_secs() < 120, "nothing stored in two minutes");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let runs = stored(&store);
    assert!(
        !runs.is_empty() && runs.len() < 400,
        "killed part-way: {} runs",
        runs.len()
    );
    let figures = runs[0].figures;
    assert!(runs.iter().all(|r| r.figures == figures), "a partial run");
    let (new, duplicate) = {
        let args = ["fleet", "ingest", docs.to_str().unwrap()];
        let r = &json(&store, &args, 0)["result"];
        (r["new"].as_u64().unwrap(), r["duplicate"].as_u64().unwrap())
    };
    assert_eq!((new + duplicate, duplicate), (400, runs.len() as u64));
    let all = stored(&store);
    assert_eq!(all.len(), 400);
    assert!(all.iter().all(|r| r.figures == figures));
}

#[test]
fn fleet_run_without_slurm_says_so_in_one_line() {
    let empty = tempfile::tempdir().unwrap();
    let out = memfabric()
        .env("PATH", empty.path())
        .args(["fleet", "run", "--all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8(out.stderr).unwrap();
    assert!(
        e.starts_with("memfabric: error: Slurm is not installed here (no srun on PATH)")
            && e.lines().count() == 1,
        "{e}"
    );
    let out = memfabric()
        .args(["fleet", "run", "--all", "--campaign", "bad name"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8(out.stderr).unwrap();
    assert!(e.contains("campaign name \"bad name\": use letters"), "{e}");
    memfabric().args(["fleet", "run"]).assert().code(2);
}

#[test]
fn ctrl_c_during_ingest_says_how_many_were_stored_and_that_a_rerun_stores_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let docs = four_hundred(dir.path());
    let store = dir.path().join("fleet.sqlite");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("memfabric"))
        .arg("--store")
        .arg(&store)
        .args(["fleet", "ingest"])
        .arg(&docs)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let count = |s: &Path| {
        memfabric_store::Store::open(s)
            .ok()
            .and_then(|st| st.list().ok())
            .map_or(0, |l| l.len())
    };
    let started = std::time::Instant::now();
    while count(&store) == 0 {
        assert!(started.elapsed().as_secs() < 120, "nothing stored in two minutes");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: kill(2) on the child's pid, which has not been waited for.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("stopped after"))
        .unwrap_or_else(|| panic!("{stderr}"));
    let stored: usize = line
        .split(": ")
        .nth(2)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert_eq!(stored, count(&store), "{line}");
    assert!(
        stored < 400 && line.ends_with("Ingesting the same inputs again stores only the rest"),
        "{line}"
    );
}
