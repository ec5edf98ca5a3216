//! Loaded latency through the binary: the throttle curve, spread mode, bad input.

use serde_json::Value;

use super::{json_of, measuring, memfabric};

fn two_cpus() -> bool {
    std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2
}

fn median_ns(o: &Value) -> f64 {
    o["latency_ns"]["median"].as_f64().expect("latency median")
}

#[test]
fn throttle_curve_runs_from_full_load_to_near_idle() {
    if !two_cpus() {
        eprintln!("skipped: needs 2 CPUs");
        return;
    }
    let _turn = measuring();
    let v = json_of(&[
        "loaded-latency",
        "--chase-size",
        "32M",
        "--size",
        "8M",
        "--samples",
        "3",
        "--sample-ms",
        "5",
        "--points",
        "12",
    ]);
    let r = &v["result"];
    assert_eq!(r["idle"]["status"], "ok", "{}", r["idle"]);
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 12);
    for s in steps {
        assert_eq!(s["latency"]["status"], "ok", "{s}");
        assert!((1.0..100_000.0).contains(&median_ns(&s["latency"])), "{s}");
        assert!(!s["load_cpus"].as_array().unwrap().contains(&r["latency_cpu"]));
    }
    let bw = |k: usize| steps[k]["load_bandwidth_gb_s"].as_f64().unwrap();
    assert!(bw(0) > 0.5, "full load moved {} GB/s", bw(0));
    assert!(
        bw(11) < bw(0) / 4.0,
        "the longest delay should nearly idle the load: {} vs {}",
        bw(11),
        bw(0)
    );
    assert_eq!(steps[0]["delay_spins"], 0);
    let spin_ns = r["spin_ns"].as_f64().unwrap();
    let delay_ns = steps[3]["delay_ns"].as_f64().unwrap();
    assert!((delay_ns - 4.0 * spin_ns).abs() < 1e-9 * delay_ns.max(1.0));
}

#[test]
fn spread_adds_one_domain_per_step() {
    if !two_cpus() {
        eprintln!("skipped: needs 2 CPUs");
        return;
    }
    let _turn = measuring();
    let topo = json_of(&["topology"]);
    let domains = topo["result"]["l3_domains"].as_array().unwrap().len();
    let v = json_of(&[
        "loaded-latency",
        "--spread",
        "--chase-size",
        "32M",
        "--size",
        "8M",
        "--samples",
        "3",
        "--sample-ms",
        "5",
    ]);
    let steps = v["result"]["steps"].as_array().unwrap();
    assert!(!steps.is_empty() && steps.len() <= domains);
    for (k, s) in steps.iter().enumerate() {
        assert_eq!(s["domains"].as_array().unwrap().len(), k + 1);
        assert_eq!(s["latency"]["status"], "ok");
    }
    let out = memfabric()
        .args([
            "loaded-latency",
            "--spread",
            "--chase-size",
            "32M",
            "--size",
            "8M",
            "--samples",
            "2",
            "--sample-ms",
            "5",
        ])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(text.contains("idle") && text.contains("L3 0"), "{text}");
}

#[test]
fn loaded_latency_bad_input_exits_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["loaded-latency", "--points", "1"],
            "--points must be 2 to 24, not 1",
        ),
        // Each point doubles the delay: 100 points overflowed it and printed a
        // delay of 224697483718846840832 ns.
        (
            &["loaded-latency", "--points", "100"],
            "--points must be 2 to 24, not 100: each point doubles the load's pause",
        ),
        (&["loaded-latency", "--mix", "4:1"], "unknown mix"),
        (
            &["loaded-latency", "--latency-cpu", "0", "--load-cpus", "0"],
            "cannot also load",
        ),
        (
            &["loaded-latency", "--latency-cpu", "4096"],
            "CPU 4096 is not online",
        ),
        (
            &["loaded-latency", "--latency-domain", "99"],
            "L3 domain 99 does not exist",
        ),
        (
            &["loaded-latency", "--latency-cpu", "0", "--latency-domain", "0"],
            "cannot be combined",
        ),
        (&["loaded-latency", "--spread", "--load-domain", "0"], "--spread"),
        (&["loaded-latency", "--mem-node", "9"], "node 9 does not exist"),
    ];
    for (args, needle) in cases {
        let err = super::refused(args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn sigint_stops_a_loaded_run_with_nothing_on_stdout() {
    if !two_cpus() {
        eprintln!("skipped: needs 2 CPUs");
        return;
    }
    let _turn = measuring();
    let long = [
        "loaded-latency",
        "--chase-size",
        "32M",
        "--size",
        "8M",
        "--samples",
        "100000",
        "--json",
    ];
    let (code, stdout, stderr, secs) =
        super::interrupt(&long, libc::SIGINT, std::time::Duration::from_millis(1500));
    assert_eq!(code, 130, "{stderr}");
    assert!(stdout.is_empty(), "half a result on stdout");
    assert!(secs < 5.0, "took {secs} s to stop");
}

#[test]
fn a_load_or_a_chase_that_fits_in_the_cache_is_said_to() {
    let _turn = super::measuring();
    let v = super::json_of(&[
        "loaded-latency",
        "--size",
        "1M",
        "--chase-size",
        "256K",
        "--points",
        "2",
        "--samples",
        "2",
        "--sample-ms",
        "2",
    ]);
    let caveat = v["result"]["cache_caveat"]
        .as_str()
        .unwrap_or_else(|| panic!("no caveat: {}", v["result"]));
    assert!(
        caveat.contains("the load's working set (1M over 1 thread(s)) fits in their last-level cache"),
        "{caveat}"
    );
    assert!(
        caveat.contains("the chase (256K) fits in the measuring CPU's last-level cache"),
        "{caveat}"
    );
}
