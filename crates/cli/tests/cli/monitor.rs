//! `monitor` through the binary: skipped with reasons where no counters exist, a
//! command run and its exit status reported, resctrl MBM from a fixture mount.

use std::path::PathBuf;

use serde_json::Value;

use super::memfabric;

fn fixture(name: &str) -> String {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/event_source"
    ))
    .join(name)
    .to_str()
    .unwrap()
    .to_string()
}

fn monitor_json(extra: &[&str]) -> Value {
    let out = memfabric()
        .arg("monitor")
        .arg("--json")
        .args(extra)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    serde_json::from_slice(&out).expect("stdout is one JSON document")
}

fn no_counters() -> Vec<String> {
    vec![
        "--sysfs".into(),
        format!("{}/sys", fixture("none")),
        "--resctrl".into(),
        fixture("no-such-resctrl"),
    ]
}

#[test]
fn nothing_available_is_skipped_with_what_is_missing() {
    let args = no_counters();
    let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
    a.extend(["--duration", "1s"]);
    let v = monitor_json(&a);
    assert_eq!(v["command"], "monitor");
    let r = &v["result"];
    assert!(r["source"].is_null());
    assert_eq!(r["outcome"]["status"], "skipped");
    let reason = r["outcome"]["reason"].as_str().unwrap();
    assert!(reason.contains("no memory-controller PMU"), "{reason}");
    assert!(
        reason.contains("found: breakpoint, msr, software, tracepoint, uprobe"),
        "{reason}"
    );
    assert!(
        reason.contains("mount -t resctrl resctrl /sys/fs/resctrl"),
        "{reason}"
    );
    assert!(reason.contains("perf_event_paranoid"), "{reason}");
    assert_eq!(r["candidates"].as_array().unwrap().len(), 6);
    let text = memfabric()
        .arg("monitor")
        .args(&a)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("skipped: no memory-traffic counters"), "{text}");
    assert!(text.contains("What is missing, and how to enable it:"), "{text}");
}

#[test]
fn a_command_runs_even_without_counters() {
    let args = no_counters();
    let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
    a.extend(["--", "sh", "-c", "echo hello; exit 3"]);
    let v = monitor_json(&a);
    let c = &v["result"]["command"];
    assert_eq!(c["argv"], serde_json::json!(["sh", "-c", "echo hello; exit 3"]));
    assert_eq!(c["exit_code"], 3);
    assert!(c["signal"].is_null());
    assert_eq!(v["result"]["outcome"]["status"], "skipped");
    memfabric()
        .args(["monitor", "--", "/no/such/program"])
        .assert()
        .code(2);
}

#[test]
fn resctrl_mbm_from_a_fixture_mount() {
    let sys = format!("{}/sys", fixture("none"));
    let res = format!("{}/resctrl", fixture("resctrl"));
    let v = monitor_json(&[
        "--sysfs",
        &sys,
        "--resctrl",
        &res,
        "--interval",
        "100ms",
        "--duration",
        "300ms",
    ]);
    let r = &v["result"];
    assert_eq!(r["source"], "resctrl-mbm");
    assert_eq!(r["outcome"]["status"], "ok");
    let m = &r["outcome"];
    let n = m["intervals"].as_array().unwrap().len();
    assert!((2..=4).contains(&n), "{n} intervals");
    let ch = m["total"]["channels"].as_array().unwrap();
    assert_eq!(
        (ch[0]["name"].as_str(), ch[1]["name"].as_str()),
        (Some("L3 domain 0"), Some("L3 domain 1"))
    );
    assert_eq!(
        m["total"]["system"]["total_bytes"], 0,
        "the fixture's counts do not move"
    );
    assert!(
        m["total"]["system"]["read_bytes"].is_null(),
        "MBM does not split reads and writes"
    );
    let out = memfabric()
        .args([
            "monitor",
            "--csv",
            "--sysfs",
            &sys,
            "--resctrl",
            &res,
            "--interval",
            "100ms",
            "--duration",
            "200ms",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let csv = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert!(
        lines[0].starts_with("interval,start_s,duration_s,channel,socket,read_bytes"),
        "{csv}"
    );
    assert!(
        lines[1].starts_with("0,0.000,") && lines[1].contains(",L3 domain 0,,,,0,"),
        "{csv}"
    );
    assert!(lines.iter().any(|l| l.contains(",system,")), "{csv}");
}

#[test]
fn fixture_pmus_are_found_and_named() {
    let sys = format!("{}/sys", fixture("intel-spr"));
    let v = monitor_json(&[
        "--sysfs",
        &sys,
        "--resctrl",
        &fixture("no-such-resctrl"),
        "--duration",
        "100ms",
    ]);
    let c = &v["result"]["candidates"][0];
    assert_eq!(
        (c["name"].as_str(), c["available"].as_bool()),
        (Some("intel-imc"), Some(true))
    );
    assert!(
        c["detail"]
            .as_str()
            .unwrap()
            .contains("uncore_imc_0, uncore_imc_1"),
        "{c}"
    );
    // The fixture's PMU types do not exist on this machine: opening them fails,
    // and the result says so.
    if v["result"]["source"].is_null() {
        let reason = v["result"]["outcome"]["reason"].as_str().unwrap();
        assert!(reason.contains("intel-imc found but not usable"), "{reason}");
    }
}

#[test]
fn text_has_interval_lines_then_totals() {
    let sys = format!("{}/sys", fixture("none"));
    let res = format!("{}/resctrl", fixture("resctrl"));
    let out = memfabric()
        .args([
            "monitor",
            "--sysfs",
            &sys,
            "--resctrl",
            &res,
            "--interval",
            "100ms",
            "--duration",
            "200ms",
        ])
        .args(["--", "true"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("s  system: total 0.00 GB/s"), "{text}");
    assert!(text.contains("Memory traffic counters: resctrl-mbm"), "{text}");
    assert!(text.contains("Command: true exited with status 0"), "{text}");
    assert!(text.contains("L3 domain 1"), "{text}");
}

/// A saved monitor run carries its figures, lists with a summary line, compares
/// with another and opens in `report` as a time series.
#[test]
fn saved_monitor_runs_compare_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let sys = format!("{}/sys", fixture("none"));
    let res = format!("{}/resctrl", fixture("resctrl"));
    for label in ["before", "after"] {
        memfabric()
            .arg("--db")
            .arg(&db)
            .args(["monitor", "--label", label, "--sysfs", &sys, "--resctrl", &res])
            .args(["--interval", "100ms", "--duration", "300ms"])
            .assert()
            .success();
    }
    let json = |args: &[&str]| -> Value {
        let out = memfabric()
            .arg("--db")
            .arg(&db)
            .arg("--json")
            .args(args)
            .assert()
            .success();
        serde_json::from_slice(&out.get_output().stdout).unwrap()
    };
    let list = json(&["runs", "list"]);
    for run in list["result"].as_array().unwrap() {
        assert!(run["figures"].as_u64().unwrap() > 0, "{run}");
        assert!(
            run["summary"]
                .as_str()
                .unwrap()
                .starts_with("monitor: resctrl-mbm "),
            "{run}"
        );
    }
    let c = json(&["compare", "1", "2"]);
    let rows = c["result"]["rows"].as_array().unwrap();
    let system = rows
        .iter()
        .find(|r| r["metric"] == "total_gb_s" && r["dims"]["system"] == "system")
        .expect("the system's traffic in both runs");
    assert_eq!(
        (system["a"].as_f64(), system["b"].as_f64()),
        (Some(0.0), Some(0.0))
    );
    assert!(
        rows.iter().any(|r| r["dims"]["channel"] == "L3 domain 1"),
        "every channel"
    );
    let html = dir.path().join("monitor.html");
    memfabric()
        .arg("--db")
        .arg(&db)
        .args(["report", "1", "--output"])
        .arg(&html)
        .assert()
        .success();
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(
        html.contains("Memory traffic over time") && html.contains("<polyline"),
        "the time series"
    );
    assert!(html.contains("Source: resctrl-mbm"));
}

/// `monitor --csv | head -2`: the monitor stops at the first interval nobody reads
/// and exits 141 without a message, instead of monitoring on with no reader.
#[test]
fn a_closed_stdout_stops_the_monitor() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let sys = format!("{}/sys", fixture("none"));
    let res = format!("{}/resctrl", fixture("resctrl"));
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("memfabric"))
        .args(["--quiet", "monitor", "--csv", "--sysfs", &sys, "--resctrl", &res])
        .args(["--interval", "50ms"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let header = lines.next().unwrap().unwrap();
    assert!(header.starts_with("interval,"), "{header}");
    drop(lines);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("monitor went on for 20 s after its reader left");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(141), "{err}");
    assert!(err.is_empty(), "{err}");
}
