//! The first screen of `run`: the headline numbers, each named as the tool people
//! compare it with names it; and repeated noise warnings folded into one line each.

use memfabric_model::{BandwidthReport, Mix, Outcome, RunReport};

use crate::table::Table;

/// Median of the medians of `values`, with their range when there are several.
fn spread(mut values: Vec<f64>, decimals: usize) -> Option<String> {
    values.retain(|v| v.is_finite());
    values.sort_by(f64::total_cmp);
    let (lo, hi) = (*values.first()?, *values.last()?);
    Some(if values.len() == 1 || (hi - lo).abs() < 1e-9 {
        format!("{lo:.decimals$}")
    } else {
        format!("{lo:.decimals$}-{hi:.decimals$}")
    })
}

/// Local (CPU node = memory node) and remote medians of a mix's cells.
fn bandwidth_of(r: &BandwidthReport, mix: Mix, local: bool) -> Option<String> {
    let v = r
        .cells
        .iter()
        .filter(|c| c.mix == mix && (c.cpu_node == c.mem_node) == local)
        .filter_map(|c| c.outcome.ok().map(|m| m.bandwidth_gb_s.median))
        .collect();
    spread(v, 1)
}

fn latency_rows(r: &RunReport, t: &mut Table) {
    for local in [true, false] {
        let v = r
            .latency
            .cells
            .iter()
            .filter(|c| (c.cpu_node == c.mem_node) == local)
            .filter_map(|c| c.outcome.ok().map(|m| m.latency_ns.median))
            .collect();
        if let Some(v) = spread(v, 1) {
            let what = if local { "local" } else { "remote" };
            let name = format!("idle memory latency, {what} (multichase, MLC --idle_latency)");
            t.row(vec![name, v, "ns".into()]);
        }
    }
}

fn bandwidth_rows(r: &RunReport, t: &mut Table) {
    let rows = [
        (
            &r.bandwidth,
            Mix::Read,
            true,
            "read bandwidth, all CPUs of a node, local (MLC --bandwidth_matrix)",
        ),
        (
            &r.bandwidth,
            Mix::Read,
            false,
            "read bandwidth, remote (MLC --bandwidth_matrix)",
        ),
        (&r.mixes, Mix::Triad, true, "triad mix (STREAM Triad's bytes)"),
        (&r.mixes, Mix::Copy, true, "copy mix (STREAM Copy's bytes)"),
    ];
    for (report, mix, local, name) in rows {
        if let Some(v) = bandwidth_of(report, mix, local) {
            t.row(vec![name.into(), v, "GB/s".into()]);
        }
    }
    let triad = r.interleaved.as_ref().and_then(|s| s.outcome.ok()).and_then(|m| {
        m.functions
            .iter()
            .find(|f| f.name == "Triad")
            .map(|f| f.best_gb_s)
    });
    if let Some(gb_s) = triad {
        let name = "STREAM Triad, memory interleaved over every node (numactl --interleave=all stream)";
        t.row(vec![name.into(), format!("{gb_s:.1}"), "GB/s".into()]);
    }
    if let Some(m) = r.all_remote.as_ref().and_then(|c| c.outcome.ok()) {
        let name = "read bandwidth, every node from remote memory at once, total";
        t.row(vec![
            name.into(),
            format!("{:.1}", m.total_gb_s.median),
            "GB/s".into(),
        ]);
    }
}

fn other_rows(r: &RunReport, t: &mut Table) {
    let busiest = r
        .loaded_latency
        .steps
        .iter()
        .filter_map(|s| Some((s.load_bandwidth_gb_s, s.latency.ok()?.latency_ns.median)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((gb_s, ns)) = busiest {
        let name = format!("latency under the heaviest load, {gb_s:.1} GB/s (MLC --loaded_latency)");
        t.row(vec![name, format!("{ns:.1}"), "ns".into()]);
    }
    let c2c = r.c2c.matrices.iter().find_map(|m| m.mean_one_way_ns);
    if let Some(ns) = c2c {
        let name = "core-to-core one-way, mean of every sample of every pair (core-to-core-latency's mean)";
        t.row(vec![name.into(), format!("{ns:.1}"), "ns".into()]);
    }
    if let Some(l) = &r.sweep.latency_levels {
        let levels: Vec<String> = l
            .plateaus
            .iter()
            .filter_map(|p| Some(format!("{} {:.1}", p.level, p.latency_ns?)))
            .collect();
        if !levels.is_empty() {
            t.row(vec![
                "latency per cache level (lmbench lat_mem_rd)".into(),
                levels.join(", "),
                "ns".into(),
            ]);
        }
    }
}

/// The GPU cells that did not run, one line each.
fn skipped_lines(r: &RunReport) -> String {
    let line =
        |o: Option<&String>, name: &str| o.map_or(String::new(), |why| format!("{name}: skipped: {why}\n"));
    line(
        reason(&r.gpu_bandwidth.outcome),
        "GPU memory bandwidth (BabelStream)",
    ) + &line(reason(&r.gpu_copy.outcome), "host-device copies (nvbandwidth)")
}

fn reason<T>(o: &Outcome<T>) -> Option<&String> {
    match o {
        Outcome::Skipped { reason } => Some(reason),
        _ => None,
    }
}

/// The headline numbers of a run, one table.
pub fn headline(r: &RunReport) -> String {
    let mut t = Table::new(&["<summary", "<value", "<unit"]);
    latency_rows(r, &mut t);
    bandwidth_rows(r, &mut t);
    other_rows(r, &mut t);
    format!("{}{}", t.render(), skipped_lines(r))
}

/// `text` with its noise warnings (the lines `common::noise_notes` writes) taken
/// out and folded, per likely cause, into one line with a count and the range of
/// coefficients of variation.
pub fn fold_noise(text: &str) -> String {
    let mut kept = String::new();
    // likely causes -> (count, cv values, threshold)
    let mut groups: Vec<(String, Vec<f64>, String)> = Vec::new();
    for line in text.lines() {
        match noise_line(line) {
            Some((cv, threshold, causes)) => match groups.iter_mut().find(|g| g.0 == causes) {
                Some(g) => g.1.push(cv),
                None => groups.push((causes, vec![cv], threshold)),
            },
            None => {
                kept += line;
                kept += "\n";
            }
        }
    }
    for (causes, cvs, threshold) in groups {
        let range = spread(cvs.clone(), 1).unwrap_or_default();
        kept += &format!(
            "  ! {} result(s) spread more than the noise threshold (coefficient of variation {range} %, above {threshold} %); likely: {causes}\n",
            cvs.len()
        );
    }
    kept
}

/// (cv %, threshold %, causes) of a noise warning line.
fn noise_line(line: &str) -> Option<(f64, String, String)> {
    let rest = line.strip_prefix("  ! ")?;
    let (_, rest) = rest.split_once(": coefficient of variation ")?;
    let (cv, rest) = rest.split_once(" % is above ")?;
    let (threshold, causes) = rest.split_once(" %; likely: ")?;
    Some((cv.parse().ok()?, threshold.to_string(), causes.to_string()))
}
