//! The bandwidth engine through the binary: mixes, thread lists, per-domain scaling,
//! STREAM, and the inputs each refuses.

use serde_json::Value;

use super::{cell_mix, json_of, measuring, memfabric};

fn median(o: &Value) -> f64 {
    o["bandwidth_gb_s"]["median"].as_f64().expect("median GB/s")
}

#[test]
fn every_mix_runs_validates_and_counts_its_bytes() {
    let _turn = measuring();
    let v = json_of(&["bandwidth", "--mix", "all", "--size", "4M", "--samples", "2"]);
    let r = &v["result"];
    let names = [
        "read", "write", "write-nt", "3:1", "2:1", "1:1", "rmw", "copy", "copy-nt", "triad", "triad-nt",
    ];
    let mixes: Vec<&str> = r["mixes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mix"].as_str().unwrap())
        .collect();
    assert_eq!(mixes, names);
    let cells = r["cells"].as_array().unwrap();
    assert_eq!(cells.len(), names.len(), "one cell per mix on a one-node machine");
    let elements = r["array_bytes_per_thread"].as_u64().unwrap() / 8;
    for (cell, info) in cells.iter().zip(r["mixes"].as_array().unwrap()) {
        let mix = cell_mix(cell);
        let o = &cell["outcome"];
        assert_eq!(o["status"], "ok", "{mix}: {o}");
        let threads = cell["cpus"].as_array().unwrap().len() as u64;
        let per_element = info["bytes_per_element"].as_u64().unwrap();
        assert_eq!(
            o["bytes_per_sample"].as_u64().unwrap(),
            threads * elements * per_element,
            "{mix}"
        );
        let checked = o["validated_elements"].as_u64().unwrap();
        let want = if mix == "read" { 0 } else { threads * elements };
        assert_eq!(checked, want, "{mix}: elements checked after timing");
        assert!(median(o) > 0.1, "{mix}: {} GB/s", median(o));
    }
    let counting = r["mixes"][1]["byte_counting"].as_str().unwrap();
    assert!(counting.contains("write-allocate"), "{counting}");
}

#[test]
fn mixes_print_in_one_table_with_their_byte_counting() {
    let _turn = measuring();
    let out = memfabric()
        .args([
            "bandwidth",
            "--mix",
            "read,copy-nt,triad",
            "--size",
            "4M",
            "--samples",
            "2",
        ])
        .assert()
        .success();
    let text = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("read ") || l.starts_with("copy-nt ") || l.starts_with("triad "))
        .collect();
    assert_eq!(rows.len(), 3, "{text}");
    assert!(
        text.contains("Bytes counted:") && text.contains("streaming stores skip"),
        "{text}"
    );
}

#[test]
fn thread_list_gives_one_cell_per_count() {
    let _turn = measuring();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let list = if cpus >= 2 { "1,2" } else { "1" };
    let v = json_of(&[
        "bandwidth",
        "--mix",
        "copy",
        "--threads",
        list,
        "--size",
        "4M",
        "--samples",
        "2",
    ]);
    let counts: Vec<usize> = v["result"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cpus"].as_array().unwrap().len())
        .collect();
    let want: Vec<usize> = list.split(',').map(|s| s.parse().unwrap()).collect();
    assert_eq!(counts, want);
    assert_eq!(v["result"]["thread_counts"], serde_json::json!(want));
}

#[test]
fn per_domain_measures_each_domain_then_adds_them_up() {
    let _turn = measuring();
    let topo = json_of(&["topology"]);
    let domains = topo["result"]["l3_domains"].as_array().unwrap().len();
    let v = json_of(&[
        "bandwidth",
        "--per-domain",
        "--fclk",
        "2000",
        "--size",
        "4M",
        "--samples",
        "2",
    ]);
    let r = &v["result"];
    assert_eq!(r["alone"].as_array().unwrap().len(), domains);
    let cumulative = r["cumulative"].as_array().unwrap();
    assert_eq!(cumulative.len(), domains);
    for (k, step) in cumulative.iter().enumerate() {
        assert_eq!(step["domains"].as_array().unwrap().len(), k + 1);
    }
    let first = &r["alone"][0];
    let want = median(&first["outcome"]) * 1e3 / 2000.0;
    let got = first["bytes_per_fclk"].as_f64().unwrap();
    assert!((got - want).abs() < 1e-9 * want.max(1.0), "{got} vs {want}");
}

#[test]
fn stream_counts_and_validates_as_stream_does() {
    let _turn = measuring();
    let v = json_of(&["stream", "--size", "16M", "--ntimes", "4"]);
    let r = &v["result"];
    assert_eq!(r["array_elements"], 2 * 1024 * 1024);
    let m = &r["outcome"];
    assert_eq!(m["status"], "ok", "{m}");
    assert_eq!(m["validation"]["passed"], true);
    assert_eq!(m["validation"]["errors"], serde_json::json!([0, 0, 0]));
    let f = m["functions"].as_array().unwrap();
    let names: Vec<&str> = f.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Copy", "Scale", "Add", "Triad"]);
    let bytes: Vec<u64> = f
        .iter()
        .map(|x| x["bytes_per_element"].as_u64().unwrap())
        .collect();
    assert_eq!(bytes, [16, 16, 24, 24]);
    for x in f {
        assert_eq!(
            x["samples_gb_s"].as_array().unwrap().len(),
            3,
            "first pass not counted"
        );
        let best = x["best_gb_s"].as_f64().unwrap();
        assert!(best >= median(x) && best > 0.1, "{x}");
        // Best rate is bytes over the shortest time, exactly as STREAM prints it.
        let t = x["min_time_s"].as_f64().unwrap();
        let bytes = x["bytes_per_element"].as_f64().unwrap() * 2.0 * 1024.0 * 1024.0;
        assert!((bytes / t * 1e-9 - best).abs() < 1e-6 * best);
    }
}

#[test]
fn stream_with_streaming_stores_still_validates() {
    let _turn = measuring();
    let v = json_of(&[
        "stream",
        "--size",
        "8M",
        "--ntimes",
        "2",
        "--non-temporal",
        "--threads",
        "1",
    ]);
    assert_eq!(v["result"]["non_temporal"], true);
    assert_eq!(v["result"]["outcome"]["validation"]["passed"], true);
}

#[test]
fn bandwidth_bad_input_exits_2() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["bandwidth", "--mix", "4:1"],
            "valid: read, write, write-nt, 3:1, 2:1, 1:1, rmw, copy, copy-nt, triad, triad-nt",
        ),
        (
            &["bandwidth", "--threads", "0"],
            "thread counts must be 1 or more",
        ),
        (
            &["bandwidth", "--threads", "1,4096"],
            "--threads 4096 is more than node 0",
        ),
        (&["bandwidth", "--fclk", "1600"], "--per-domain"),
        (
            &["bandwidth", "--per-domain", "--fclk", "0"],
            "--fclk must be a positive",
        ),
        (
            &["bandwidth", "--per-domain", "--mix", "read,copy"],
            "--per-domain takes one --mix",
        ),
        (&["bandwidth", "--per-domain", "--matrix"], "cannot be combined"),
        (
            &["bandwidth", "--mix", "write-nt", "--kernel", "scalar"],
            "needs streaming stores",
        ),
        (&["stream", "--ntimes", "1"], "--ntimes must be at least 2"),
        (&["bandwidth", "--links", "4"], "--lanes"),
        (
            &["bandwidth", "--links", "0", "--lanes", "16", "--gbps", "32"],
            "--links and --lanes must be at least 1",
        ),
        (
            &["stream", "--non-temporal", "--kernel", "scalar"],
            "needs streaming stores",
        ),
        (
            &["stream", "--threads", "4096"],
            "--threads must be between 1 and",
        ),
        (
            &["stream", "--mem-nodes", "0,1"],
            "stream takes one --mem-nodes node",
        ),
        (&["stream", "--mem-nodes", "7"], "node 7 does not exist"),
    ];
    for (args, needle) in cases {
        let err = super::refused(args);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

fn counters(name: &str) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/event_source");
    format!("{root}/{name}")
}

/// A small bandwidth run of two mixes.
const DRAM_BASE: [&str; 7] = [
    "bandwidth",
    "--mix",
    "read,copy",
    "--size",
    "4M",
    "--samples",
    "2",
];

fn dram_run(extra: &[&str]) -> Value {
    let args: Vec<&str> = DRAM_BASE.iter().chain(extra).copied().collect();
    json_of(&args)
}

#[test]
fn dram_traffic_is_counted_where_a_source_is() {
    let _turn = measuring();
    let none_sys = format!("{}/sys", counters("none"));
    let mbm = format!("{}/resctrl", counters("resctrl"));
    let base = DRAM_BASE;
    let with = dram_run;
    // resctrl MBM from a fixture mount: every cell carries its window's traffic.
    let v = with(&["--counters-sysfs", &none_sys, "--counters-resctrl", &mbm]);
    let r = &v["result"];
    assert_eq!(
        r["dram_counting"]["source"], "resctrl-mbm",
        "{}",
        r["dram_counting"]
    );
    for cell in r["cells"].as_array().unwrap() {
        let o = &cell["outcome"];
        let d = &o["dram"];
        assert_eq!(
            (d["source"].as_str(), d["rounds"].as_u64()),
            (Some("resctrl-mbm"), Some(2))
        );
        let program = d["program_read_bytes"].as_u64().unwrap() + d["program_write_bytes"].as_u64().unwrap();
        assert_eq!(
            program,
            2 * o["bytes_per_sample"].as_u64().unwrap(),
            "{}",
            cell_mix(cell)
        );
        // The fixture's counts do not move; MBM does not split reads and writes.
        assert_eq!(
            (d["system"]["total_bytes"].as_u64(), d["ratio"].as_f64()),
            (Some(0), Some(0.0))
        );
        assert!(d["read_ratio"].is_null() && d["system"]["read_bytes"].is_null());
    }
    let text = memfabric()
        .args(base)
        .args(["--counters-sysfs", &none_sys, "--counters-resctrl", &mbm])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("counted by resctrl-mbm"), "{text}");
    assert!(text.contains("program GB"), "{text}");
}

#[test]
fn dram_traffic_not_counted_says_why() {
    let _turn = measuring();
    let none_sys = format!("{}/sys", counters("none"));
    let mbm = format!("{}/resctrl", counters("resctrl"));
    let with = dram_run;
    // No source: nothing attached, and the reason says what is missing.
    let v = with(&[
        "--counters-sysfs",
        &none_sys,
        "--counters-resctrl",
        "/no/such/resctrl",
    ]);
    let r = &v["result"];
    assert!(r["dram_counting"]["source"].is_null());
    let why = r["dram_counting"]["reason"].as_str().unwrap();
    assert!(
        why.starts_with("no memory-traffic counters") && why.contains("mount -t resctrl"),
        "{why}"
    );
    assert!(r["cells"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["outcome"]["dram"].is_null()));
    // Off: not even looked for.
    let v = with(&["--dram-counters", "off", "--counters-resctrl", &mbm]);
    assert_eq!(
        v["result"]["dram_counting"]["reason"],
        "not counted: --dram-counters off"
    );
    assert!(v["result"]["cells"][0]["outcome"]["dram"].is_null());
}

#[test]
fn per_domain_steps_carry_dram_traffic_too() {
    let _turn = measuring();
    let none_sys = format!("{}/sys", counters("none"));
    let mbm = format!("{}/resctrl", counters("resctrl"));
    let v = json_of(&[
        "bandwidth",
        "--per-domain",
        "--size",
        "4M",
        "--samples",
        "2",
        "--counters-sysfs",
        &none_sys,
        "--counters-resctrl",
        &mbm,
    ]);
    let r = &v["result"];
    assert_eq!(r["dram_counting"]["source"], "resctrl-mbm");
    assert_eq!(r["alone"][0]["outcome"]["dram"]["rounds"], 2);
}

#[test]
fn a_peak_given_on_the_command_line_is_not_called_smbios() {
    let _turn = super::measuring();
    let out = super::memfabric()
        .args([
            "bandwidth",
            "--channels",
            "8",
            "--mts",
            "3200",
            "--size",
            "1M",
            "--samples",
            "2",
        ])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(!text.contains("SMBIOS"), "{text}");
    assert!(
        text.contains("8 channels x 3200 MT/s x 8 B = 204.8 GB/s (as given: --channels/--mts or --machine)"),
        "{text}"
    );
}

/// The machine's largest L3 domain, from `topology --json`.
fn llc_bytes() -> u64 {
    let v = super::json_of(&["topology"]);
    let domains = v["result"]["l3_domains"].as_array().cloned().unwrap_or_default();
    domains
        .iter()
        .filter_map(|d| d["size_bytes"].as_u64())
        .max()
        .unwrap_or(0)
}

#[test]
fn a_working_set_that_fits_in_the_cache_is_not_passed_off_as_memory() {
    let llc = llc_bytes();
    if llc < 4 << 20 {
        eprintln!("skipped: no last-level cache of 4 MiB or more here ({llc} bytes)");
        return;
    }
    let _turn = super::measuring();
    // One thread reading a quarter of the cache.
    let size = memfabric_model::format_size(llc / 4);
    let v = super::json_of(&["bandwidth", "--threads", "1", "--size", &size, "--samples", "2"]);
    let caveat = v["result"]["cache_caveat"]
        .as_str()
        .unwrap_or_else(|| panic!("no caveat: {v}"));
    assert!(
        caveat.starts_with("1 of 1 cells hold a working set that fits in their CPUs' last-level cache"),
        "{caveat}"
    );
    let out = super::memfabric()
        .args(["bandwidth", "--threads", "1", "--size", &size, "--samples", "2"])
        .assert()
        .success();
    assert!(String::from_utf8_lossy(&out.get_output().stdout).contains("  ! 1 of 1 cells hold a working set"));
    let past = memfabric_model::format_size(2 * llc);
    let v = super::json_of(&["bandwidth", "--threads", "1", "--size", &past, "--samples", "2"]);
    assert!(
        v["result"].get("cache_caveat").is_none(),
        "{}",
        v["result"]["cache_caveat"]
    );
}
