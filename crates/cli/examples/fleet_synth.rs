//! The fleet benchmark's generator and scorer (docs/PERFORMANCE.md, "Fleet ingest and
//! report").
//!
//!     fleet_synth write --hosts 10000 --out DIR --truth truth.json
//!     fleet_synth score --truth truth.json --report report.json
//!
//! `write` writes one synthetic `run` document per host (4 hardware classes, faults
//! planted on 8 % of the hosts: slow DIMM, missing DIMM, wrong BIOS, noisy run) and
//! the truth: each host's planted fault. `score` reads a `fleet report --json` and
//! prints how many planted faults it found (recall), how many of its outliers were
//! planted (precision), and how often the first cause it names is the planted one.

#[path = "../tests/synth/mod.rs"]
mod synth;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

fn arg(args: &[String], name: &str) -> String {
    let i = args
        .iter()
        .position(|a| a == name)
        .unwrap_or_else(|| panic!("{name} is needed"));
    args.get(i + 1)
        .cloned()
        .unwrap_or_else(|| panic!("{name} needs a value"))
}

fn write(args: &[String]) {
    let hosts: usize = arg(args, "--hosts").parse().expect("--hosts N");
    let out = PathBuf::from(arg(args, "--out"));
    std::fs::create_dir_all(&out).expect("creating --out");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let truth = synth::write_fleet(&repo, &out, hosts);
    let truth: BTreeMap<String, Value> = truth
        .into_iter()
        .map(|(h, f)| {
            (
                h,
                f.map_or(Value::Null, |f| json!({"fault": f.name(), "cause": f.cause()})),
            )
        })
        .collect();
    std::fs::write(
        arg(args, "--truth"),
        serde_json::to_string_pretty(&truth).expect("encodes"),
    )
    .expect("writing --truth");
}

fn score(args: &[String]) {
    let read = |p: String| -> Value {
        serde_json::from_str(&std::fs::read_to_string(&p).expect("readable")).expect("JSON")
    };
    let truth = read(arg(args, "--truth"));
    let report = read(arg(args, "--report"));
    let planted: BTreeMap<&str, &str> = truth
        .as_object()
        .expect("truth")
        .iter()
        .filter_map(|(h, f)| Some((h.as_str(), f["cause"].as_str()?)))
        .collect();
    let mut flagged: BTreeMap<&str, &str> = BTreeMap::new();
    for o in report["result"]["outliers"].as_array().expect("outliers") {
        flagged.insert(
            o["host"].as_str().expect("host"),
            o["causes"][0].as_str().unwrap_or(""),
        );
    }
    let hits = flagged.keys().filter(|h| planted.contains_key(*h)).count();
    let right_cause = flagged
        .iter()
        .filter(|(h, c)| planted.get(*h).is_some_and(|want| c.starts_with(want)))
        .count();
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    println!(
        "hosts {}, planted faults {}, outlier hosts {}",
        truth.as_object().expect("truth").len(),
        planted.len(),
        flagged.len()
    );
    println!(
        "detection: precision {:.4}, recall {:.4}",
        ratio(hits, flagged.len()),
        ratio(hits, planted.len())
    );
    println!("first cause names the planted fault: {right_cause} of {hits} found ({:.4}); recall with the right cause {:.4}", ratio(right_cause, hits), ratio(right_cause, planted.len()));
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("write") => write(&args),
        Some("score") => score(&args),
        _ => eprintln!(
            "usage: fleet_synth write --hosts N --out DIR --truth FILE | score --truth FILE --report FILE"
        ),
    }
}
