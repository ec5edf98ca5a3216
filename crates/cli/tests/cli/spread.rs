//! `--interleave`, `bandwidth --concurrent` and `loaded-latency --load-nodes` as
//! users meet them on a one-node machine: the JSON they carry and the refusals. Their
//! multi-node behaviour is proved in the VM rig (tests/vm).

use super::{json_of, measuring, memfabric};

#[test]
fn interleave_records_its_set_and_the_shares_found() {
    let _turn = measuring();
    let v = json_of(&["stream", "--interleave", "all", "--size", "4M", "--ntimes", "2"]);
    let r = &v["result"];
    assert_eq!(r["interleave"], serde_json::json!({"nodes": [0], "weights": [1]}));
    for p in r["outcome"]["placement"].as_array().unwrap() {
        let s = &p["interleave"];
        assert_eq!(p["verified"], true, "{p}");
        assert_eq!(s["pages_per_node"][0], p["pages_sampled"]);
        assert_eq!(s["share_pct"][0], 100.0);
        assert!(s["method"].as_str().unwrap().contains("MPOL_INTERLEAVE"));
    }
    let v = json_of(&[
        "latency",
        "--interleave",
        "0",
        "--interleave-weights",
        "2",
        "--size",
        "1M",
        "--samples",
        "2",
        "--sample-ms",
        "1",
    ]);
    assert_eq!(
        v["result"]["cells"][0]["outcome"]["placement"]["interleave"]["weights"],
        serde_json::json!([2])
    );
    assert!(v["result"]["firmware"].is_null());
}

#[test]
fn concurrent_streams_report_windows_totals_and_sums() {
    let _turn = measuring();
    let v = json_of(&[
        "bandwidth",
        "--concurrent",
        "all-local",
        "--size",
        "1M",
        "--samples",
        "3",
    ]);
    let r = &v["result"];
    assert_eq!(r["pattern"], "all-local");
    assert_eq!(r["streams"][0]["mem_node"], 0);
    let m = &r["outcome"];
    assert_eq!(m["status"], "ok", "{m}");
    let s = &m["streams"][0];
    assert_eq!(s["windows_ns"].as_array().unwrap().len(), 3);
    for (w, gb) in s["windows_ns"]
        .as_array()
        .unwrap()
        .iter()
        .zip(s["samples_gb_s"].as_array().unwrap())
    {
        let (a, b) = (w[0].as_f64().unwrap(), w[1].as_f64().unwrap());
        let rate = s["bytes_per_sample"].as_f64().unwrap() / (b - a);
        assert!((rate - gb.as_f64().unwrap()).abs() <= 1e-6 * rate);
    }
    // One stream: its span is the whole span.
    assert_eq!(m["min_overlap_pct"], 100.0);
    assert!(
        m["links"].as_array().unwrap().is_empty(),
        "one socket: nothing crosses"
    );
    let text = memfabric()
        .args([
            "bandwidth",
            "--concurrent",
            "all-local",
            "--size",
            "1M",
            "--samples",
            "2",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("pattern all-local") && text.contains("all at once"),
        "{text}"
    );
}

#[test]
fn bad_spread_input_exits_2_with_one_line() {
    let cases: [(&[&str], &str); 8] = [
        (
            &["latency", "--interleave", "0,5"],
            "node 5 does not exist (nodes: 0)",
        ),
        (
            &["stream", "--interleave", ""],
            "--interleave needs at least one node, or all",
        ),
        (
            &["latency", "--interleave", "0,0"],
            "--interleave names node 0 twice",
        ),
        (
            &["latency", "--interleave", "x"],
            "--interleave x: not a node list",
        ),
        (
            &["bandwidth", "--interleave", "0", "--interleave-weights", "1,2"],
            "--interleave-weights gives 2 weights for 1 nodes (0)",
        ),
        (
            &["latency", "--interleave", "0", "--matrix"],
            "--interleave replaces --mem-nodes and --matrix",
        ),
        (
            &["bandwidth", "--concurrent", "all-remote"],
            "--concurrent all-remote needs a node with memory other than node 0",
        ),
        (
            &["loaded-latency", "--load-nodes", "0", "--load-cpus", "1"],
            "choose the load CPUs one way",
        ),
    ];
    for (args, want) in cases {
        let err = super::refused(args);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
