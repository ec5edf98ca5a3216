//! Synthetic fleets for the fleet tests and the fleet benchmark: `run` documents of
//! hosts in a few hardware classes, with faults planted on some hosts. Each document
//! is the real `run` document memfabric 0.4.0 wrote into the fixture store, with its
//! environment, platform facts and headline measurements replaced; its other parts
//! (loaded latency, sweep, the 1-node topology) are kept as they were, so documents
//! are as large as a real run's. The figures are made up: effect sizes of the faults
//! are chosen, not measured.

#![allow(dead_code)]

use std::path::Path;

use serde_json::{json, Value};

/// A hardware class and the figures its healthy hosts show.
pub struct Class {
    pub name: &'static str,
    pub cpu_model: &'static str,
    pub sockets: usize,
    pub cores: usize,
    pub nodes: usize,
    pub channels: usize,
    pub mt_s: u32,
    pub bios: &'static str,
    pub triad_per_node: f64,
    pub interleaved: f64,
    pub local_ns: f64,
    pub remote_ns: f64,
    pub c2c_ns: f64,
    pub all_remote: f64,
}

pub const CLASSES: [Class; 4] = [
    Class {
        name: "genoa",
        cpu_model: "AMD EPYC 9654 96-Core Processor",
        sockets: 2,
        cores: 192,
        nodes: 2,
        channels: 24,
        mt_s: 4800,
        bios: "1.7.3",
        triad_per_node: 370.0,
        interleaved: 700.0,
        local_ns: 118.0,
        remote_ns: 205.0,
        c2c_ns: 95.0,
        all_remote: 230.0,
    },
    Class {
        name: "spr",
        cpu_model: "Intel(R) Xeon(R) Platinum 8480+",
        sockets: 2,
        cores: 112,
        nodes: 2,
        channels: 16,
        mt_s: 4800,
        bios: "2.3.1",
        triad_per_node: 250.0,
        interleaved: 480.0,
        local_ns: 110.0,
        remote_ns: 190.0,
        c2c_ns: 60.0,
        all_remote: 170.0,
    },
    Class {
        name: "milan-nps4",
        cpu_model: "AMD EPYC 7763 64-Core Processor",
        sockets: 2,
        cores: 128,
        nodes: 8,
        channels: 16,
        mt_s: 3200,
        bios: "2.9.4",
        triad_per_node: 40.0,
        interleaved: 330.0,
        local_ns: 105.0,
        remote_ns: 190.0,
        c2c_ns: 110.0,
        all_remote: 160.0,
    },
    Class {
        name: "altra",
        cpu_model: "Neoverse-N1",
        sockets: 1,
        cores: 80,
        nodes: 1,
        channels: 8,
        mt_s: 3200,
        bios: "F31k",
        triad_per_node: 150.0,
        interleaved: 0.0,
        local_ns: 130.0,
        remote_ns: 0.0,
        c2c_ns: 50.0,
        all_remote: 0.0,
    },
];

/// What is wrong with a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// One DIMM configured slower: every channel runs at its speed.
    SlowDimm,
    /// One channel without its DIMM.
    MissingDimm,
    /// An older BIOS with slower memory timings.
    WrongBios,
    /// Other load during the run: the noise guard flagged its measurements.
    NoisyRun,
}

impl Fault {
    pub fn name(self) -> &'static str {
        match self {
            Fault::SlowDimm => "slow-dimm",
            Fault::MissingDimm => "missing-dimm",
            Fault::WrongBios => "wrong-bios",
            Fault::NoisyRun => "noisy-run",
        }
    }

    /// How the fleet report's cause for it begins.
    pub fn cause(self) -> &'static str {
        match self {
            Fault::SlowDimm => "DIMM speed MT/s",
            Fault::MissingDimm => "memory channels populated",
            Fault::WrongBios => "bios_version",
            Fault::NoisyRun => "noisy run",
        }
    }
}

/// The planted fault of host `i`: one host in 50 each, 8 % in all.
pub fn fault_of(i: usize) -> Option<Fault> {
    match i % 50 {
        7 => Some(Fault::SlowDimm),
        19 => Some(Fault::MissingDimm),
        31 => Some(Fault::WrongBios),
        43 => Some(Fault::NoisyRun),
        _ => None,
    }
}

/// splitmix64: a small deterministic generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// A factor 1 + N(0, sd).
    pub fn spread(&mut self, sd: f64) -> f64 {
        let (u, v) = (self.unit(), self.unit());
        1.0 + sd * (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// The parts of real documents the synthetic ones are made from.
pub struct Templates {
    run: Value,
    stream: Value,
    concurrent: Value,
}

fn clear_noise(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if k == "noise" {
                    *child = Value::Null;
                } else {
                    clear_noise(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clear_noise),
        _ => {}
    }
}

impl Templates {
    /// Reads the fixture store (a copy: opening migrates it) and the fixture documents.
    pub fn load(repo: &Path) -> Templates {
        let dir = tempfile::tempdir().expect("temporary directory");
        let db = dir.path().join("runs.sqlite");
        std::fs::copy(repo.join("tests/fixtures/store/runs-v0.4.0.sqlite"), &db).expect("fixture store");
        let store = memfabric_store::Store::open(&db).expect("fixture store opens");
        let doc =
            |id| -> Value { serde_json::from_str(&store.document(id).expect("fixture run")).expect("JSON") };
        let mut run = doc(1);
        let mut stream = doc(5)["result"].take();
        let text = std::fs::read_to_string(repo.join("tests/fixtures/documents/concurrent-pairs.json"))
            .expect("fixture document");
        let mut concurrent: Value = serde_json::from_str(&text).expect("JSON");
        let mut concurrent = concurrent["result"].take();
        concurrent["pattern"] = json!("all-remote");
        for v in [&mut run, &mut stream, &mut concurrent] {
            clear_noise(v);
        }
        Templates {
            run,
            stream,
            concurrent,
        }
    }
}

/// Five samples spread by `cv` around `median`, and their summary: a document whose
/// raw samples agree with its figures, as memfabric writes them.
fn measured(median: f64, cv: f64) -> (Value, Value) {
    let samples: Vec<f64> = [-2.0, -1.0, 0.0, 1.0, 2.0]
        .iter()
        .map(|k| median * (1.0 + k * cv))
        .collect();
    let summary = json!({"count": 5, "min": samples[0], "median": median, "p99": samples[4],
           "max": samples[4], "mean": median, "cv": cv});
    (summary, json!(samples))
}

fn noise(noisy: bool) -> Value {
    if noisy {
        json!({"cv": 0.14, "threshold_cv": 0.05, "likely_causes": ["other load: 1-minute load average 41.20 while 2 CPU(s) measure"]})
    } else {
        Value::Null
    }
}

fn placement(node: usize) -> Value {
    json!({"requested_node": node, "page_size_bytes": 4096, "pages_total": 16, "pages_sampled": 16, "pages_on_node": 16,
           "pages_elsewhere": [], "thread_affinity": [0], "verified": true, "method": "synthetic"})
}

fn latency_cell(c: usize, m: usize, ns: f64, noisy: bool) -> Value {
    let cv = if noisy { 0.14 } else { 0.01 };
    let (summary, samples) = measured(ns, cv);
    json!({"cpu": c, "cpu_node": c, "mem_node": m, "outcome": {"status": "ok", "latency_ns": summary,
        "samples_ns": samples, "loads_per_sample": 4096, "cycle_verified_elements": 1024, "placement": placement(m), "noise": noise(noisy)}})
}

fn bandwidth_cell(mix: &str, c: usize, m: usize, gbs: f64, noisy: bool) -> Value {
    let cv = if noisy { 0.14 } else { 0.01 };
    let (summary, samples) = measured(gbs, cv);
    json!({"mix": mix, "cpu_node": c, "mem_node": m, "cpus": [c], "efficiency": null, "outcome": {"status": "ok",
        "bandwidth_gb_s": summary, "samples_gb_s": samples, "bytes_per_sample": 1024, "validated_elements": 0,
        "placement": [placement(m)], "noise": noise(noisy)}})
}

fn mix_info(mix: &str) -> Value {
    json!({"mix": mix, "description": "synthetic", "arrays": 3, "bytes_per_element": 24, "non_temporal": false, "byte_counting": "STREAM"})
}

/// How a fault moves each figure: (triad per node, interleaved, latency, c2c, all-remote).
fn effect(fault: Option<Fault>) -> [f64; 5] {
    match fault {
        None => [1.0; 5],
        Some(Fault::SlowDimm) => [0.8, 0.83, 1.03, 1.0, 0.9],
        Some(Fault::MissingDimm) => [0.78, 0.9, 1.0, 1.0, 0.95],
        Some(Fault::WrongBios) => [0.97, 0.97, 1.18, 1.1, 0.97],
        Some(Fault::NoisyRun) => [0.75, 0.8, 1.06, 1.05, 0.8],
    }
}

fn platform(c: &Class, host_id: &str, fault: Option<Fault>) -> Value {
    let channels = c.channels - usize::from(fault == Some(Fault::MissingDimm));
    let slow = fault == Some(Fault::SlowDimm);
    let mt_s = if slow { 4000.min(c.mt_s - 400) } else { c.mt_s };
    let bios = if fault == Some(Fault::WrongBios) {
        "0.9.1"
    } else {
        c.bios
    };
    let dimms: Vec<Value> = (0..channels)
        .map(|i| {
            let speed = if slow && i == 0 { mt_s } else { c.mt_s };
            json!({"locator": format!("DIMM_{i}"), "size_bytes": 68_719_476_736u64, "configured_mt_s": speed, "rated_mt_s": c.mt_s})
        })
        .collect();
    let per = c.nodes / c.sockets;
    let nodes: Vec<Value> = (0..c.nodes)
        .map(|n| json!({"id": n, "cpus": format!("{}-{}", n * c.cores / c.nodes, (n + 1) * c.cores / c.nodes - 1), "memory_bytes": 1u64 << 37}))
        .collect();
    let distances: Vec<Vec<u32>> = (0..c.nodes)
        .map(|a| {
            (0..c.nodes)
                .map(|b| {
                    if a == b {
                        10
                    } else if a / per == b / per {
                        12
                    } else {
                        32
                    }
                })
                .collect()
        })
        .collect();
    let key = format!(
        "{}/{}S/{}C/{channels}ch/{mt_s}MT/{}N",
        c.cpu_model, c.sockets, c.cores, c.nodes
    );
    json!({
        "host_id": {"known": host_id},
        "class": {"cpu_model": c.cpu_model, "sockets": c.sockets, "cores": c.cores, "channels_populated": channels,
                  "dimm_mt_s": mt_s, "numa_nodes": c.nodes, "key": key},
        "bios_vendor": {"known": "American Megatrends International, LLC."},
        "bios_version": {"known": bios},
        "bios_date": {"known": "06/14/2026"},
        "system_vendor": {"known": "Acme"},
        "system_product": {"known": format!("{} server", c.name)},
        "board_name": {"known": "MB-1"},
        "numa": {"sockets": c.sockets, "nodes": nodes, "distances": distances, "cpu_nodes_per_socket": per,
                 "described": format!("{} sockets, {per} node(s) with CPUs per socket", c.sockets)},
        "dimms": {"known": dimms},
        "kernel_memory_options": {"known": []},
        "socket_links": {"unknown": "synthetic host"}
    })
}

/// The STREAM-interleaved and all-remote parts of a multi-node host's run, moved by
/// the fault's effects on them.
fn multi_node(t: &Templates, c: &Class, rng: &mut Rng, inter: f64, remote_all: f64) -> (Value, Value) {
    let mut s = t.stream.clone();
    for f in s["outcome"]["functions"].as_array_mut().expect("functions") {
        let gbs = c.interleaved * inter * rng.spread(0.015);
        (f["bandwidth_gb_s"], f["samples_gb_s"]) = measured(gbs, 0.01);
        f["best_gb_s"] = json!(gbs * 1.01);
    }
    let mut a = t.concurrent.clone();
    let total = c.all_remote * remote_all * rng.spread(0.015);
    (a["outcome"]["total_gb_s"], a["outcome"]["total_samples_gb_s"]) = measured(total, 0.01);
    (s, a)
}

/// Host `i` of class `c` as a `run` document.
pub fn document(t: &Templates, c: &Class, class_index: usize, i: usize, fault: Option<Fault>) -> Value {
    let mut rng = Rng::new(((class_index as u64) << 32) ^ i as u64);
    let [triad, inter, lat, c2c, remote_all] = effect(fault);
    let noisy = fault == Some(Fault::NoisyRun);
    let name = format!("{}-{i:05}", c.name);
    let host_id = format!(
        "machine-id:{:016x}",
        Rng::new(((class_index as u64) << 40) ^ i as u64).next()
    );
    let mut doc = t.run.clone();
    doc["started_unix_s"] = json!(1_764_800_000 + i as u64);
    let env = &mut doc["environment"];
    env["hostname"] = json!(name);
    env["cpu_model"] = json!(c.cpu_model);
    env["numa_nodes"] = json!(c.nodes);
    env["governor"] = json!("performance");
    env["thp_enabled"] = json!("always");
    // A kernel update part-way through the fleet: drift, not a fault.
    env["kernel"] = json!(if i % 10 == 3 {
        "6.1.0-28-amd64"
    } else {
        "6.1.0-27-amd64"
    });
    env["platform"] = platform(c, &host_id, fault);
    let (mut lcells, mut bcells, mut mcells) = (vec![], vec![], vec![]);
    for a in 0..c.nodes {
        // The fault shows on one node (the first); the others are healthy.
        let hit = a == 0;
        for m in 0..c.nodes {
            let base = if a == m { c.local_ns } else { c.remote_ns };
            let f = if hit { lat } else { 1.0 };
            lcells.push(latency_cell(a, m, base * f * rng.spread(0.01), noisy && hit));
            bcells.push(bandwidth_cell(
                "read",
                a,
                m,
                c.triad_per_node * 1.1 * rng.spread(0.015),
                false,
            ));
        }
        let f = if hit { triad } else { 1.0 };
        mcells.push(bandwidth_cell(
            "triad",
            a,
            a,
            c.triad_per_node * f * rng.spread(0.015),
            noisy && hit,
        ));
        mcells.push(bandwidth_cell(
            "copy",
            a,
            a,
            c.triad_per_node * 0.95 * rng.spread(0.015),
            false,
        ));
    }
    let nodes: Vec<usize> = (0..c.nodes).collect();
    let r = &mut doc["result"];
    r["latency"] = json!({"pattern": "random", "huge_pages": "off", "size_bytes": 1u64 << 30, "stride_bytes": 64,
        "window_bytes": null, "seed": 1, "cpu_nodes": nodes, "mem_nodes": nodes, "cells": lcells});
    r["bandwidth"] = json!({"kernel": "avx2", "huge_pages": "off", "array_bytes_per_thread": 1u64 << 26, "mixes": [mix_info("read")],
        "cpu_nodes": nodes, "mem_nodes": nodes, "thread_counts": [], "cells": bcells});
    r["mixes"] = json!({"kernel": "avx2", "huge_pages": "off", "array_bytes_per_thread": 1u64 << 26,
        "mixes": [mix_info("triad"), mix_info("copy")], "cpu_nodes": nodes, "mem_nodes": nodes, "thread_counts": [], "cells": mcells});
    let mean = c.c2c_ns * c2c * rng.spread(0.01);
    r["c2c"]["matrices"][0]["mean_one_way_ns"] = json!(mean);
    if c.nodes > 1 {
        let (interleaved, all_remote) = multi_node(t, c, &mut rng, inter, remote_all);
        r["interleaved"] = interleaved;
        r["all_remote"] = all_remote;
    }
    doc
}

/// Writes `hosts` documents, spread over the classes in turn, into `dir`; returns
/// each host's name and planted fault.
pub fn write_fleet(repo: &Path, dir: &Path, hosts: usize) -> Vec<(String, Option<Fault>)> {
    let t = Templates::load(repo);
    let mut truth = Vec::new();
    for h in 0..hosts {
        let (k, i) = (h % CLASSES.len(), h / CLASSES.len());
        let fault = fault_of(i);
        let doc = document(&t, &CLASSES[k], k, i, fault);
        let name = doc["environment"]["hostname"]
            .as_str()
            .expect("hostname")
            .to_string();
        std::fs::write(
            dir.join(format!("{name}.json")),
            serde_json::to_string_pretty(&doc).expect("encodes"),
        )
        .expect("writing a document");
        truth.push((name, fault));
    }
    truth
}
