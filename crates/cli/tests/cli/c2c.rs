//! Core-to-core latency through the binary: a real pair each way, one matrix per
//! offset and mode, the inputs it refuses, and a clean stop on SIGINT.

use predicates::prelude::*;
use serde_json::Value;

use super::{interrupt, json_of, measuring, memfabric};

fn two_cpus() -> bool {
    let ok = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    if !ok {
        eprintln!("skipped: needs 2 CPUs");
    }
    ok
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn a_pair_bounces_its_line_both_ways() {
    if !two_cpus() {
        return;
    }
    let _turn = measuring();
    let v = json_of(&["c2c", "--cpus", "0,1", "--samples", "3"]);
    assert_eq!(v["command"], "c2c");
    let r = &v["result"];
    assert_eq!(r["cpus"], serde_json::json!([0, 1]));
    assert_eq!(r["round_trips_per_sample"], 1000);
    assert!(r["method"].as_str().unwrap().contains("/ 2"));
    assert_eq!(r["line_pages"][0]["outcome"]["verified"], true);
    let matrices = r["matrices"].as_array().unwrap();
    assert_eq!(matrices.len(), 1);
    let m = &matrices[0];
    assert_eq!(
        (m["mode"].as_str(), m["offset_bytes"].as_u64()),
        (Some("cas"), Some(0))
    );
    let pairs = m["pairs"].as_array().unwrap();
    let order: Vec<(u64, u64)> = pairs
        .iter()
        .map(|p| {
            (
                p["first_cpu"].as_u64().unwrap(),
                p["second_cpu"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(order, [(0, 1), (1, 0)]);
    for p in pairs {
        let o = &p["outcome"];
        assert_eq!(o["status"], "ok", "{o}");
        let median = f(&o["one_way_ns"]["median"]);
        assert!((5.0..5000.0).contains(&median), "{median} ns one way");
        assert_eq!(o["samples_one_way_ns"].as_array().unwrap().len(), 3);
        assert_eq!(o["first_affinity"], serde_json::json!([p["first_cpu"]]));
        assert_eq!(o["second_affinity"], serde_json::json!([p["second_cpu"]]));
    }
    let dense = &m["median_one_way_ns"];
    assert!(dense[0][0].is_null() && dense[1][1].is_null());
    assert_eq!(f(&dense[0][1]), f(&pairs[0]["outcome"]["one_way_ns"]["median"]));
    let classes = m["classes"].as_array().unwrap();
    let counted: u64 = classes
        .iter()
        .map(|c| c["pair_medians_ns"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(counted, 2, "every pair in one class: {classes:?}");
    let mean = f(&m["mean_one_way_ns"]);
    let lo = pairs
        .iter()
        .map(|p| f(&p["outcome"]["one_way_ns"]["min"]))
        .fold(f64::MAX, f64::min);
    let hi = pairs
        .iter()
        .map(|p| f(&p["outcome"]["one_way_ns"]["max"]))
        .fold(0.0, f64::max);
    assert!(lo <= mean && mean <= hi, "mean {mean} outside [{lo}, {hi}]");
}

#[test]
fn each_offset_and_mode_gives_its_own_matrix() {
    if !two_cpus() {
        return;
    }
    let _turn = measuring();
    let args = [
        "c2c",
        "--offsets",
        "0,64,2048",
        "--samples",
        "2",
        "--iterations",
        "200",
    ];
    let v = json_of(&args);
    let offsets: Vec<u64> = v["result"]["matrices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["offset_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(offsets, [0, 64, 2048]);
    assert_eq!(v["result"]["offsets_bytes"], serde_json::json!([0, 64, 2048]));
    let out = memfabric()
        .args(["c2c", "--mode", "all", "--samples", "2", "--iterations", "200"])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.starts_with("Core-to-core latency: CPUs "), "{text}");
    assert_eq!(text.matches("first \\ second").count(), 2, "{text}");
    assert!(
        text.contains("\ncas: ") && text.contains("\npingpong: "),
        "{text}"
    );
    assert_eq!(text.matches("Mean of all samples: ").count(), 2, "{text}");
}

#[test]
fn c2c_bad_input_exits_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["c2c", "--cpus", "0"], "--cpus 0 names 1 CPU"),
        (&["c2c", "--cpus", "0,4096"], "CPU 4096 is not online"),
        (&["c2c", "--cpus", "4096"], "CPU 4096 is not online"),
        (
            &["c2c", "--offsets", "100"],
            "--offsets 100: each offset must be a multiple of 64",
        ),
        (
            &["c2c", "--offsets", "4096"],
            "--offsets 4096: each offset must be a multiple of 64",
        ),
        (&["c2c", "--offsets", "0,,64"], "empty entry"),
        (
            &["c2c", "--samples", "0"],
            "'--samples <N>': must be a number above 0, not 0",
        ),
        (
            &["c2c", "--iterations", "0"],
            "'--iterations <N>': must be a number above 0, not 0",
        ),
        (&["c2c", "--mode", "mesi"], "mesi"),
        (
            &["c2c", "--cv-threshold", "0"],
            "'--cv-threshold <PCT>': must be a number above 0",
        ),
    ];
    for (args, needle) in cases {
        let err = super::refused(args);
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.contains(needle),
            "{args:?}: first stderr line {first:?} lacks {needle:?}"
        );
    }
}

#[test]
fn c2c_stops_on_sigint_inside_a_long_sample() {
    if !two_cpus() {
        return;
    }
    let _turn = measuring();
    // One sample would take hours: only the check inside the sample can stop it.
    let long = ["c2c", "--iterations", "100000000000", "--json"];
    let (code, stdout, stderr, secs) = interrupt(&long, libc::SIGINT, std::time::Duration::from_millis(1000));
    assert_eq!(code, 130, "{stderr}");
    assert!(stdout.is_empty(), "half a result on stdout");
    assert!(stderr.contains("interrupted by SIGINT"), "{stderr}");
    assert!(secs < 3.0, "took {secs} s to stop");
}

#[test]
fn c2c_is_listed_and_explains_its_figure() {
    memfabric()
        .arg("list")
        .assert()
        .success()
        .stdout(predicate::str::contains("c2c"));
    memfabric().args(["c2c", "--help"]).assert().success().stdout(
        predicate::str::contains("round trips / 2").and(predicate::str::contains("core-to-core-latency")),
    );
}
