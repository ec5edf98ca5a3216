//! The cache-hierarchy sweep through the binary: a real small sweep, its text, its
//! threads, and the inputs it refuses.

use serde_json::Value;

use super::{json_of, measuring, memfabric};

fn median(o: &Value, summary: &str) -> f64 {
    o[summary]["median"].as_f64().expect("median")
}

fn sizes(r: &Value) -> Vec<u64> {
    let points = r["points"].as_array().expect("points");
    points.iter().map(|p| p["size_bytes"].as_u64().unwrap()).collect()
}

#[test]
fn small_sweep_climbs_from_l1_and_verifies_every_point() {
    let _turn = measuring();
    let t = std::time::Instant::now();
    let v = json_of(&["sweep", "--max", "4M"]);
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(v["command"], "sweep");
    let r = &v["result"];
    let s = sizes(r);
    assert_eq!((s[0], *s.last().unwrap()), (4 << 10, 4 << 20));
    assert!(s.windows(2).all(|w| w[0] < w[1]), "sizes increase: {s:?}");
    // At least four points in every octave from 4K to 4M.
    for &from in s.iter().filter(|&&x| x <= 2 << 20) {
        let inside = s.iter().filter(|&&x| x >= from && x < 2 * from).count();
        assert!(inside >= 4, "{inside} points from {from} up to twice that");
    }
    let node = r["mem_node"].as_u64().unwrap();
    for p in r["points"].as_array().unwrap() {
        let l = &p["latency"];
        let o = &l["outcome"];
        assert_eq!(o["status"], "ok", "{p}");
        // The chase covers exactly the point's size, one element per line.
        assert_eq!(l["chase_bytes"], p["size_bytes"]);
        assert_eq!(
            o["cycle_verified_elements"].as_u64().unwrap(),
            l["chase_bytes"].as_u64().unwrap() / 64
        );
        assert_eq!(
            (
                o["placement"]["verified"].as_bool(),
                o["placement"]["requested_node"].as_u64()
            ),
            (Some(true), Some(node))
        );
        let b = &p["bandwidth"]["outcome"];
        assert_eq!(b["status"], "ok", "{p}");
        assert!(b["placement"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["verified"] == true));
        assert!(p["bandwidth"]["passes_per_sample"].as_u64().unwrap() >= 1);
    }
    let points = r["points"].as_array().unwrap();
    let ns = |p: &Value| median(&p["latency"]["outcome"], "latency_ns");
    let mut small: Vec<f64> = points
        .iter()
        .filter(|p| p["size_bytes"].as_u64() <= Some(16 << 10))
        .map(ns)
        .collect();
    small.sort_by(f64::total_cmp);
    let l1 = small[small.len() / 2];
    let at_4m = ns(points.last().unwrap());
    assert!(l1 * 2.0 < at_4m, "latency at 4K-16K {l1} ns, at 4M {at_4m} ns");
    let levels = &r["latency_levels"];
    let plateaus = levels["plateaus"].as_array().unwrap().len();
    assert_eq!(plateaus, levels["boundaries"].as_array().unwrap().len() + 1);
    assert_eq!(levels["comparison"][0]["level"], "L1 Data", "{levels}");
    assert!(r["bandwidth_levels"]["comparison"].as_array().is_some());
    assert!(secs < 30.0, "a 4K-4M sweep took {secs:.1} s");
}

#[test]
fn text_shows_the_table_the_levels_and_a_plot() {
    let _turn = measuring();
    let out = memfabric()
        .args([
            "sweep",
            "--what",
            "latency",
            "--max",
            "256K",
            "--points-per-octave",
            "2",
        ])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for needle in [
        "latency ns",
        "Levels of the latency curve:",
        "L1 Data",
        "Plateaus:",
        " +---",
        "4K",
    ] {
        assert!(text.contains(needle), "no {needle:?} in\n{text}");
    }
    assert!(!text.contains("GB/s"), "bandwidth was not asked for:\n{text}");
}

#[test]
fn every_thread_of_the_node_reads_its_own_arrays() {
    let _turn = measuring();
    let v = json_of(&[
        "sweep",
        "--what",
        "bandwidth",
        "--threads",
        "all",
        "--mix",
        "copy",
        "--max",
        "1M",
        "--points-per-octave",
        "1",
    ]);
    let r = &v["result"];
    assert!(r["latency"].is_null() && r["latency_levels"].is_null());
    let cpus = r["bandwidth"]["cpus"].as_array().unwrap().clone();
    assert_eq!(cpus[0], r["cpu"], "the measuring CPU runs the first thread");
    for p in r["points"].as_array().unwrap() {
        assert!(p["latency"].is_null());
        let b = &p["bandwidth"];
        let o = &b["outcome"];
        assert_eq!(o["status"], "ok", "{p}");
        assert_eq!(o["placement"].as_array().unwrap().len(), cpus.len());
        let each = b["array_bytes_per_thread"].as_u64().unwrap();
        assert_eq!(
            b["working_set_bytes_per_thread"].as_u64(),
            Some(2 * each),
            "copy has two arrays"
        );
        // The written array of every thread is checked after every pass.
        assert_eq!(
            o["validated_elements"].as_u64(),
            Some(cpus.len() as u64 * each / 8)
        );
    }
    assert_eq!(r["bandwidth_levels"]["threads"].as_u64(), Some(cpus.len() as u64));
}

#[test]
fn sweep_bad_input_exits_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["sweep", "--min", "8M", "--max", "1M"],
            "--min 8M is larger than --max 1M",
        ),
        (
            &["sweep", "--points-per-octave", "0"],
            "'--points-per-octave <N>': must be a number above 0, not 0",
        ),
        (&["sweep", "--what", "everything"], "everything"),
        (&["sweep", "--threads", "0"], "not a thread count"),
        (
            &["sweep", "--threads", "4096"],
            "--threads 4096 is more than node",
        ),
        (
            &["sweep", "--what", "latency", "--threads", "all"],
            "the latency chase runs on one CPU",
        ),
        (&["sweep", "--min", "100"], "--min must be at least 1K"),
        (&["sweep", "--max", "64T"], "use a smaller --max"),
        (&["sweep", "--cpu", "4096"], "CPU 4096 is not online"),
        (&["sweep", "--mem-node", "7"], "node 7 does not exist"),
        (
            &["sweep", "--mix", "write-nt", "--kernel", "scalar"],
            "needs streaming stores",
        ),
        (
            &["sweep", "--max", "1M", "--cv-threshold", "0"],
            "'--cv-threshold <PCT>': must be a number above 0",
        ),
    ];
    for (args, needle) in cases {
        let err = super::refused(args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    memfabric()
        .arg("list")
        .assert()
        .success()
        .stdout(predicates::str::contains("sweep"));
}
