//! `theory` and `audit` through the binary: the calculators' exact figures,
//! machine files, fixtures of SMBIOS and dmidecode, and the inputs refused.

use std::path::PathBuf;

use predicates::prelude::*;
use serde_json::Value;

use super::{fixture, json_of, memfabric};

fn fixtures() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
}

fn path(rel: &str) -> String {
    fixtures().join(rel).to_str().unwrap().to_string()
}

fn gb(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn dram_calculator_per_socket_and_system() {
    let out = memfabric()
        .args(["theory", "--channels", "12", "--mts", "4800", "--sockets", "2"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains("12 channels x 4800 MT/s x 8 B = 460.8 GB/s"),
        "{text}"
    );
    assert!(text.contains("2 sockets x 460.8 GB/s = 921.6 GB/s"), "{text}");
    let v = json_of(&["theory", "--channels", "12", "--mts", "4800", "--sockets", "2"]);
    assert_eq!(v["command"], "theory");
    assert!(v["environment"].is_null(), "a calculation is not this machine");
    let r = &v["result"];
    assert_eq!(
        (r["source"].as_str(), r["memory"]["status"].as_str()),
        (Some("calculator"), Some("ok"))
    );
    let sockets = r["memory"]["sockets"].as_array().unwrap();
    assert_eq!(sockets.len(), 2);
    assert_eq!(gb(&sockets[1]["peak_gb_s"]), 460.8);
    assert_eq!(gb(&r["memory"]["system_gb_s"]), 921.6);
    assert!(r["memory_devices"].is_null() && r["links"].is_null());
}

#[test]
fn wide_bus_and_socket_links() {
    let v = json_of(&["theory", "--bus-bits", "256", "--mts", "8000"]);
    assert_eq!(gb(&v["result"]["memory"]["system_gb_s"]), 256.0);
    let v = json_of(&["theory", "--links", "4", "--lanes", "16", "--gbps", "32"]);
    let l = &v["result"]["links"];
    assert_eq!(
        (gb(&l["per_direction_gb_s"]), gb(&l["both_directions_gb_s"])),
        (256.0, 512.0)
    );
    assert_eq!(v["result"]["memory"]["status"], "skipped");
    memfabric()
        .args(["theory", "--links", "4", "--lanes", "16", "--gbps", "32"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains(
                "4 links x 16 lanes x 32 Gbit/s / 8 = 256 GB/s per direction, 512 GB/s both directions",
            )
            .and(predicate::str::contains("Memory: skipped").not()),
        );
}

#[test]
fn machine_file_describes_a_planned_platform() {
    let v = json_of(&["theory", "--machine", &path("machines/genoa-2s.toml")]);
    let r = &v["result"];
    assert_eq!(r["source"], "machine-file");
    assert_eq!(r["name"], "2S EPYC 9004, 12 x DDR5-4800 per socket");
    assert_eq!(gb(&r["memory"]["system_gb_s"]), 921.6);
    assert_eq!(gb(&r["links"]["per_direction_gb_s"]), 256.0);
}

#[test]
fn this_machines_dimms_from_fixtures() {
    let v = json_of(&[
        "theory",
        "--sysfs",
        fixture("snc-2s").to_str().unwrap(),
        "--smbios",
        &path("smbios/ddr5-2s-16dimm"),
    ]);
    assert!(v["environment"].is_null(), "a saved tree is not this machine");
    let r = &v["result"];
    assert_eq!(r["source"], "smbios");
    assert_eq!(gb(&r["memory"]["sockets"][0]["peak_gb_s"]), 307.2);
    assert_eq!(gb(&r["memory"]["system_gb_s"]), 614.4);
    assert_eq!(
        r["memory"]["sockets"][1]["channels"][7]["dimms"][0],
        "CPU1_DIMM_H1"
    );
    assert_eq!(r["memory_devices"]["dimms"].as_array().unwrap().len(), 16);

    let v = json_of(&[
        "theory",
        "--sysfs",
        fixture("this-machine").to_str().unwrap(),
        "--dmidecode",
        &path("smbios/dmidecode-1s.txt"),
    ]);
    let r = &v["result"];
    assert_eq!(r["source"], "dmidecode");
    assert_eq!(
        r["memory"]["sockets"][0]["formula"],
        "2 channels x 2933 MT/s x 8 B = 46.928 GB/s"
    );

    let out = memfabric()
        .args([
            "theory",
            "--sysfs",
            fixture("this-machine").to_str().unwrap(),
            "--smbios",
            &path("smbios/qemu-default"),
        ])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(
        text.contains(
            "Memory: skipped: the locators of 1 of 1 installed DIMMs ('DIMM 0') name no socket and channel"
        ),
        "{text}"
    );
    assert!(text.contains("nothing is guessed"), "{text}");
}

/// On the machine at hand: a peak from its DIMMs, or skipped with a reason.
#[test]
fn this_machine_says_what_it_can() {
    let v = json_of(&["theory"]);
    let m = &v["result"]["memory"];
    match m["status"].as_str() {
        Some("ok") => assert!(gb(&m["system_gb_s"]) > 0.0),
        Some("skipped") => assert!(!m["reason"].as_str().unwrap().is_empty()),
        other => panic!("status {other:?}"),
    }
    let v = json_of(&["audit"]);
    assert!(!v["result"]["findings"].as_array().unwrap().is_empty());
    assert!(v["environment"]["cpus_online"].as_u64().unwrap() >= 1);
}

#[test]
fn audit_of_a_mixed_population() {
    let v = json_of(&[
        "audit",
        "--sysfs",
        fixture("epyc7601-2s").to_str().unwrap(),
        "--smbios",
        &path("smbios/ddr4-2s-mixed"),
        "--proc",
        &path("smbios/proc-untuned"),
    ]);
    let r = &v["result"];
    let classes: Vec<&str> = r["sockets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["class"].as_str().unwrap())
        .collect();
    // One rule, loss to class: 32 % (unequal channels, slow DIMMs) and 25 % (two of
    // eight channels empty) are both above the 15 % bound.
    assert_eq!(classes, ["not-recommended", "not-recommended"]);
    assert_eq!(gb(&r["sockets"][1]["expected_loss"]), 0.25);
    let findings = r["findings"].as_array().unwrap();
    let title = |t: &str| {
        findings
            .iter()
            .find(|f| f["title"].as_str().unwrap().starts_with(t))
    };
    let empty = title("Socket 1: 2 of 8 memory channels empty").expect("empty channels found");
    assert_eq!(empty["severity"], "warning");
    assert!(empty["why"].as_str().unwrap().contains("sum of its channels"));
    assert!(title("Automatic NUMA balancing is on").is_some());
    assert!(title("DIMMs run below their rated speed").is_some());
    assert_eq!(r["memory_devices"]["dimms"].as_array().unwrap().len(), 32);
}

fn temp_toml(name: &str, text: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    let s = p.to_str().unwrap().to_string();
    (dir, s)
}

/// Each bad input: exit 2, nothing on stdout, the problem in stderr's first line.
#[test]
fn bad_theory_input_exits_2() {
    let (_d1, unknown) = temp_toml("unknown.toml", "sockets = 2\nchannels = 12\nmts = 4800\n");
    let (_d2, broken) = temp_toml("broken.toml", "sockets = [\n");
    let (_d3, zero) = temp_toml("zero.toml", "channels_per_socket = 0\nmts = 4800\n");
    let (_d4, negative) = temp_toml("negative.toml", "channels_per_socket = -4\nmts = 4800\n");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["theory", "--channels", "0", "--mts", "4800"],
            "must be 1 or more",
        ),
        (
            vec!["theory", "--channels", "-2", "--mts", "4800"],
            "'-2' is not a whole number",
        ),
        (vec!["theory", "--channels", "12"], "give --mts"),
        (vec!["theory", "--mts", "4800"], "--mts needs --channels"),
        (
            vec!["theory", "--bus-bits", "12", "--mts", "4800"],
            "--bus-bits must be a multiple of 8",
        ),
        (
            vec!["theory", "--links", "4", "--lanes", "16"],
            "all three of --links, --lanes and --gbps",
        ),
        (
            vec!["theory", "--links", "4", "--lanes", "16", "--gbps", "0"],
            "not a positive number of Gbit/s",
        ),
        (vec!["theory", "--machine", &unknown], "unknown field `channels`"),
        (vec!["theory", "--machine", &broken], "line 1:"),
        (
            vec!["theory", "--machine", &zero],
            "channels_per_socket must be at least 1",
        ),
        (vec!["theory", "--machine", &negative], "line 1:"),
        (
            vec!["theory", "--machine", "/nonexistent/m.toml"],
            "cannot read machine file /nonexistent/m.toml",
        ),
        (
            vec!["theory", "--machine", &unknown, "--channels", "2"],
            "cannot be used with",
        ),
        (
            vec!["theory", "--channels", "2", "--mts", "4800", "--sysfs", "/tmp"],
            "do not combine",
        ),
        (vec!["theory", "--sysfs", "/nonexistent"], "/nonexistent"),
        (
            vec!["theory", "--smbios", "/nonexistent"],
            "--smbios /nonexistent: not a directory",
        ),
        (
            vec!["audit", "--dmidecode", "/nonexistent.txt"],
            "cannot read dmidecode output /nonexistent.txt",
        ),
        (
            vec!["audit", "--proc", "/nonexistent"],
            "--proc /nonexistent: not a directory",
        ),
    ];
    for (args, needle) in cases {
        let out = memfabric()
            .args(&args)
            .assert()
            .code(2)
            .stdout(predicate::str::is_empty());
        let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.contains(needle),
            "{args:?}: first stderr line {first:?} lacks {needle:?}"
        );
    }
}

#[test]
fn listed_with_the_measurements() {
    memfabric()
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("theory").and(predicate::str::contains("audit")));
    memfabric()
        .args(["theory", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("channels_per_socket = 12"));
}

#[test]
fn theory_bounds_sockets_and_sends_platform_files_to_plan() {
    let e = super::refused(&[
        "theory",
        "--channels",
        "12",
        "--mts",
        "4800",
        "--sockets",
        "100000",
    ]);
    assert!(
        e.contains("at most 64: no single system has 100000 sockets"),
        "{e}"
    );
    let platform = concat!(env!("CARGO_MANIFEST_DIR"), "/../../platforms/epyc-9004-2s.toml");
    let e = super::refused(&["theory", "--machine", platform]);
    assert!(e.contains("is a platform file (rules and choices for `memfabric plan`), not a machine file: try `memfabric plan population --platform"), "{e}");
    assert_eq!(e.lines().count(), 1);
}
