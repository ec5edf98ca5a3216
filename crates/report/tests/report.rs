//! The report as files: snapshots of the SVG and HTML, and what an offline page must
//! not contain.

use memfabric_model::StoredDocument;
use memfabric_report::svg::{Heatmap, LineChart, Series};
use memfabric_report::{render_comparison, render_run, CompareLine, RunInfo};
use serde_json::{json, Value};

fn summary(median: f64) -> Value {
    json!({"count": 3, "min": median * 0.98, "median": median, "p99": median * 1.02, "max": median * 1.02, "mean": median, "cv": 0.01})
}

fn placement(node: u32, cpu: u32) -> Value {
    json!({"requested_node": node, "page_size_bytes": 4096, "pages_total": 16, "pages_sampled": 16, "pages_on_node": 16,
           "pages_elsewhere": [], "thread_affinity": [cpu], "verified": true, "method": "test"})
}

fn latency_cell(c: u32, m: u32, ns: f64) -> Value {
    json!({"cpu": c * 2, "cpu_node": c, "mem_node": m, "outcome": {"status": "ok", "latency_ns": summary(ns),
        "samples_ns": [ns], "loads_per_sample": 4096, "cycle_verified_elements": 1024, "placement": placement(m, c * 2), "noise": null}})
}

fn bandwidth_cell(mix: &str, c: u32, m: u32, gbs: f64) -> Value {
    let efficiency = (m < 2).then(|| json!({"peak_gb_s": 76.8, "fraction": gbs / 76.8, "basis": "socket 0: 2 channels x 4800 MT/s x 8 B <SMBIOS>"}));
    json!({"mix": mix, "cpu_node": c, "mem_node": m, "cpus": [c * 2, c * 2 + 1], "efficiency": efficiency, "outcome": {"status": "ok",
        "bandwidth_gb_s": summary(gbs), "samples_gb_s": [gbs], "bytes_per_sample": 1024, "validated_elements": 0,
        "placement": [placement(m, c * 2), placement(m, c * 2 + 1)], "noise": null}})
}

fn mix_info(mix: &str) -> Value {
    json!({"mix": mix, "description": "d", "arrays": 1, "bytes_per_element": 8, "non_temporal": false, "byte_counting": "counted <as> STREAM"})
}

/// The `run` document memfabric 0.4.0 stored in the fixture database (a copy is
/// opened: opening a store may write to it).
fn stored_run() -> Value {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/store/runs-v0.4.0.sqlite"
    );
    std::fs::copy(fixture, &db).unwrap();
    let store = memfabric_store::Store::open(&db).unwrap();
    serde_json::from_str(&store.document(1).unwrap()).unwrap()
}

/// A `run` document of a 2-socket machine with a CPU-less node: the stored run with
/// the SNC fixture's topology and made-up latency and bandwidth matrices.
fn run_doc() -> Value {
    let lat = [[80.0, 140.0, 250.0], [140.0, 81.0, 350.0]];
    let bw = [[40.0, 20.0, 10.0], [20.0, 39.0, 5.0]];
    let mut lcells = vec![];
    let mut bcells = vec![];
    for c in 0..2u32 {
        for m in 0..3u32 {
            lcells.push(latency_cell(c, m, lat[c as usize][m as usize]));
            bcells.push(bandwidth_cell("read", c, m, bw[c as usize][m as usize]));
        }
    }
    let sys = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/snc-2s/sys");
    let topology = memfabric_topo::Topology::read(std::path::Path::new(sys)).unwrap();
    let mut doc = stored_run();
    doc["tool"]["version"] = json!("0.2.0");
    let env = &mut doc["environment"];
    env["cpu_model"] = json!("Test CPU <8 cores>");
    env["kernel"] = json!("6.1");
    env["thp_enabled"] = json!("madvise");
    env["governor"] = json!("performance");
    let result = &mut doc["result"];
    result["topology"] = serde_json::to_value(&topology).unwrap();
    result["latency"] = json!({"pattern": "random", "huge_pages": "off", "size_bytes": 268435456u64, "stride_bytes": 64,
        "window_bytes": null, "seed": 1, "cpu_nodes": [0, 1], "mem_nodes": [0, 1, 2], "cells": lcells});
    result["bandwidth"] = json!({"kernel": "avx2", "huge_pages": "off", "array_bytes_per_thread": 1048576, "mixes": [mix_info("read")],
        "cpu_nodes": [0, 1], "mem_nodes": [0, 1, 2], "thread_counts": [], "cells": bcells});
    doc
}

/// The document as the report reads it.
fn typed(doc: &Value) -> StoredDocument {
    StoredDocument::parse(&doc.to_string()).unwrap()
}

fn info(id: i64, label: &str) -> RunInfo {
    RunInfo {
        id,
        label: Some(label.into()),
        host: Some("host-a".into()),
        date: "2026-11-22 14:22 UTC".into(),
        command: "run".into(),
        tool_version: "0.2.0".into(),
    }
}

/// No script, no external reference: the only URL is the SVG namespace.
fn assert_offline(html: &str) {
    assert!(!html.contains("<script"), "script in the report");
    assert!(
        !html.contains("@import") && !html.contains("src="),
        "external reference"
    );
    let urls = html.matches("http").count();
    let ns = html.matches("http://www.w3.org/2000/svg").count();
    assert_eq!(urls, ns, "a URL other than the SVG namespace");
    for href in html.match_indices("url(#") {
        let id_end = html[href.0 + 5..].find(')').unwrap();
        let id = &html[href.0 + 5..href.0 + 5 + id_end];
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "gradient {id} referenced but not defined"
        );
    }
}

#[test]
fn run_report_html() {
    let html = render_run(&info(7, "DDR5-4800"), &typed(&run_doc()));
    assert_offline(&html);
    assert!(html.contains("Latency tiers"), "tiers of a 2-socket matrix");
    assert!(html.contains("Test CPU &lt;8 cores&gt;"), "text is escaped");
    let matrices =
        &html[html.find("<h2>Idle latency").unwrap()..html.find("<h2>Bandwidth by access mix").unwrap()];
    assert_eq!(
        matrices.matches("<svg").count(),
        2,
        "latency and bandwidth heatmaps"
    );
    for cell in memfabric_model::Cell::ALL.iter().filter(|c| !c.needs_nodes()) {
        assert!(
            html.contains(&format!("<h2>{}</h2>", cell.title())),
            "a section per suite cell"
        );
    }
    assert!(
        html.contains("% of peak") && html.contains("52.1") && html.contains("&lt;SMBIOS&gt;"),
        "share of peak"
    );
    insta::assert_snapshot!(html);
}

#[test]
fn comparison_report_html() {
    let lines = [
        CompareLine {
            measurement: "latency".into(),
            what: "cpu_node=0 mem_node=0".into(),
            metric: "latency_ns".into(),
            a: 80.0,
            b: 84.0,
            percent: Some(5.0),
            noise: false,
        },
        CompareLine {
            measurement: "latency".into(),
            what: "cpu_node=0 mem_node=1".into(),
            metric: "latency_ns".into(),
            a: 140.0,
            b: 140.5,
            percent: Some(0.36),
            noise: true,
        },
    ];
    let html = render_comparison(
        (&info(1, "DDR4-2400"), &typed(&run_doc())),
        (&info(2, "DDR4-2666"), &typed(&run_doc())),
        &lines,
    );
    assert_offline(&html);
    assert!(html.contains("class=\"noise\""));
    insta::assert_snapshot!(html);
}

#[test]
fn heatmap_svg() {
    let svg = Heatmap {
        title: "t",
        row_label: "CPU node",
        col_label: "memory node",
        rows: vec!["0".into(), "1".into()],
        cols: vec!["0".into(), "1".into()],
        values: vec![vec![Some(80.0), Some(140.0)], vec![None, Some(81.5)]],
        unit: "ns",
        decimals: 1,
    }
    .render();
    insta::assert_snapshot!(svg);
}

#[test]
fn line_chart_svg() {
    let svg = LineChart {
        title: "sweep",
        x_label: "working set",
        y_label: "ns",
        series: vec![Series {
            name: "latency".into(),
            points: vec![(4096.0, 1.2), (65536.0, 4.0), (1048576.0, 12.0), (1e9, 90.0)],
        }],
        log2_x: true,
        marks: vec![(49152.0, "L1".into()), (2097152.0, "L2".into())],
    }
    .render();
    assert!(svg.contains("L1") && svg.contains("stroke-dasharray"));
    insta::assert_snapshot!(svg);
}

#[test]
fn dram_traffic_table_where_counted_and_the_reason_where_not() {
    let mut doc = run_doc();
    let traffic = json!({"source": "intel-imc", "rounds": 3, "window_s": 0.5, "sockets": [],
        "system": {"name": "system", "socket": null, "read_bytes": 2048, "write_bytes": 0, "total_bytes": 2048,
                   "read_gb_s": 4.1e-6, "write_gb_s": 0.0, "total_gb_s": 4.1e-6},
        "program_read_bytes": 3072, "program_write_bytes": 0, "ratio": 0.6667, "read_ratio": 0.6667, "write_ratio": null});
    let bw = &mut doc["result"]["bandwidth"];
    bw["cells"][0]["outcome"]["dram"] = traffic;
    bw["dram_counting"] = json!({"source": "intel-imc", "reason": "intel-imc: the first available <of 6>"});
    let html = render_run(&info(7, "DDR5-4800"), &typed(&doc));
    assert_offline(&html);
    assert!(html.contains("counted by intel-imc"), "the table's title");
    assert!(
        html.contains("<td>0.67</td><td>0.67</td><td>-</td>"),
        "ratios of the counted cell"
    );
    let bw = &mut doc["result"]["bandwidth"];
    bw["dram_counting"] =
        json!({"source": null, "reason": "no memory-traffic counters: resctrl <not mounted>"});
    let html = render_run(&info(7, "DDR5-4800"), &typed(&doc));
    assert!(
        html.contains("DRAM traffic not counted: no memory-traffic counters: resctrl &lt;not mounted&gt;")
    );
}

#[test]
fn gpu_latency_curve_and_bandwidth_of_a_run() {
    use memfabric_model::{GpuLatencyMeasurement, GpuLatencyPoint, GpuLatencyReport, GpuLevel, Outcome};
    let points: Vec<GpuLatencyPoint> = [(1u64 << 10, 33.0), (1 << 20, 262.0), (256 << 20, 655.0)]
        .iter()
        .map(|&(s, c)| GpuLatencyPoint {
            size_bytes: s,
            loads: 1,
            latency_cycles: c,
            latency_ns: c / 2.0,
            sm_clock_mhz: 2000.0,
        })
        .collect();
    let r = GpuLatencyReport {
        gpu: None,
        stride_bytes: 128,
        seed: 1,
        outcome: Outcome::Ok(GpuLatencyMeasurement {
            points,
            levels: vec![GpuLevel {
                name: "device <memory>".into(),
                first_bytes: 256 << 20,
                last_bytes: 256 << 20,
                latency_cycles: 655.0,
                latency_ns: 327.5,
            }],
        }),
    };
    let doc = json!({"schema_version": 2, "tool": {"name": "memfabric", "version": "0.4.0"}, "command": "gpu-latency",
        "args": [], "started_unix_s": 0, "result": serde_json::to_value(&r).unwrap()});
    let gpu_run = RunInfo {
        command: "gpu-latency".into(),
        ..info(3, "H100")
    };
    let html = render_run(&gpu_run, &typed(&doc));
    assert_offline(&html);
    assert!(
        html.contains("GPU memory latency") && html.contains("<svg"),
        "the curve"
    );
    assert!(
        html.contains("device &lt;memory&gt;</td><td>655</td>"),
        "levels, escaped"
    );
    // A run without a GPU says why.
    let mut run = run_doc();
    run["result"]["gpu_bandwidth"] = json!({"gpu": null, "kernels": ["triad"], "array_bytes": [268435456u64],
        "block_threads": 256, "samples": 3,
        "outcome": {"status": "skipped", "reason": "no NVIDIA driver found (libcuda.so could not be loaded)"}});
    let html = render_run(&info(7, "DDR5-4800"), &typed(&run));
    assert!(html.contains("GPU memory bandwidth") && html.contains("Skipped: no NVIDIA driver found"));
}

/// Every caveat the terminal prints beside a section reaches the page: the suite,
/// how each section's figures were taken, noise flags, unverified placement, a
/// working set that fits in cache, failed cells.
#[test]
fn the_page_says_what_the_terminal_says_beside_the_figures() {
    let mut doc = stored_run();
    let html = render_run(&info(1, "quick"), &typed(&doc));
    assert!(html.contains("run (quick suite) on "), "the suite");
    // The two "read" figures of the quick suite are of different array sizes.
    assert!(html.contains("Taken with: huge pages off; array per thread 32M; kernel avx2"));
    assert!(html.contains("Taken with: huge pages off; array per thread 16M; kernel avx2"));
    assert!(html.contains(
        "<li>noise guard: 6 measurement(s) flagged; the first: cv 17.1 % over the 5.0 % threshold"
    ));
    let r = &mut doc["result"];
    r["loaded_latency"]["cache_caveat"] =
        json!("the load's working set (16M over 1 thread(s)) fits in their last-level cache (32M)");
    let cell = &mut r["latency"]["cells"][0]["outcome"];
    cell["placement"]["verified"] = json!(false);
    cell["placement"]["method"] = json!("move_pages is not permitted here");
    let html = render_run(&info(1, "quick"), &typed(&doc));
    assert!(html.contains("<li>placement not verified: move_pages is not permitted here</li>"));
    assert!(
        html.contains(
            "<li>the load&#39;s working set (16M over 1 thread(s)) fits in their last-level cache (32M)</li>"
        ) || html.contains(
            "<li>the load's working set (16M over 1 thread(s)) fits in their last-level cache (32M)</li>"
        )
    );
}
