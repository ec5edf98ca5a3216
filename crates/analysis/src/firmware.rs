//! Firmware beside measurement: the SLIT distance and the HMAT figures the
//! firmware publishes for each measured (CPU node, memory node) pair, and
//! where the measured matrix disagrees with them.
//!
//! What counts as a disagreement (firmware figures are estimates, and a
//! measurement has noise, so small differences are not flagged):
//! - order: SLIT (or HMAT) says node a is nearer than node b from a CPU node,
//!   but a measured more than 10 % worse than b;
//! - ratio: a remote/local latency ratio more than 2x off the SLIT ratio
//!   (distance / 10), or a latency more than 2x off the HMAT figure;
//! - bandwidth above the HMAT figure by more than 10 % (firmware understates).
//!
//! Linux shows HMAT figures only for each target's best initiators
//! (`nodeN/accessK/initiators/`), so other pairs have none.

use memfabric_model::{BandwidthReport, FirmwareCell, FirmwareComparison, LatencyReport};
use memfabric_topo::Topology;

use crate::theory::{comparison_mix, num};

const ORDER_MARGIN: f64 = 1.10;
const RATIO_LIMIT: f64 = 2.0;

/// HMAT read latency and bandwidth (GB/s) for `cpu_node` reaching `mem_node`,
/// preferring access class 1 (CPU initiators).
fn hmat_for(topo: &Topology, cpu_node: u32, mem_node: u32) -> (Option<u64>, Option<f64>) {
    let mut entries: Vec<_> = topo
        .hmat
        .iter()
        .filter(|e| e.target_node == mem_node && e.initiators.contains(&cpu_node))
        .collect();
    entries.sort_by_key(|e| std::cmp::Reverse(e.access_class));
    let latency = entries.iter().find_map(|e| e.read_latency_ns);
    let bandwidth = entries
        .iter()
        .find_map(|e| e.read_bandwidth_mb_s)
        .map(|mb| mb as f64 / 1000.0);
    (latency, bandwidth)
}

fn cells_for(topo: &Topology, pairs: &[(u32, u32, Option<f64>)]) -> Vec<FirmwareCell> {
    pairs
        .iter()
        .map(|&(c, m, measured)| {
            let (lat, bw) = hmat_for(topo, c, m);
            FirmwareCell {
                cpu_node: c,
                mem_node: m,
                slit_distance: topo.distance(c, m),
                hmat_read_latency_ns: lat,
                hmat_read_bandwidth_gb_s: bw,
                measured,
            }
        })
        .collect()
}

/// Nothing to compare: one cell, or no firmware figure beyond a lone SLIT 10.
fn worth_showing(cells: &[FirmwareCell]) -> bool {
    let hmat = cells
        .iter()
        .any(|c| c.hmat_read_latency_ns.is_some() || c.hmat_read_bandwidth_gb_s.is_some());
    let slit = cells.iter().filter(|c| c.slit_distance.is_some()).count() > 1;
    hmat || slit
}

/// Pairs of cells in one row (same CPU node), each pair once.
fn row_pairs(cells: &[FirmwareCell]) -> impl Iterator<Item = (&FirmwareCell, &FirmwareCell)> {
    cells.iter().enumerate().flat_map(move |(i, a)| {
        cells[i + 1..]
            .iter()
            .filter(move |b| b.cpu_node == a.cpu_node)
            .map(move |b| (a, b))
    })
}

/// How a firmware figure ranks nodes.
#[derive(Clone, Copy)]
enum Nearer {
    /// Distance, latency: lower is nearer.
    Lower,
    /// Bandwidth: higher is nearer.
    Higher,
}

/// Ordering disagreements: the firmware ranks node a nearer than node b from
/// the same CPU node, the measurement (where `higher_is_better` for
/// bandwidth) ranks them the other way by more than the margin.
fn order_flags(
    cells: &[FirmwareCell],
    what: &str,
    firmware: impl Fn(&FirmwareCell) -> Option<f64>,
    nearer: Nearer,
    higher_is_better: bool,
    unit: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for (a, b) in row_pairs(cells) {
        let (Some(fa), Some(fb), Some(ma), Some(mb)) = (firmware(a), firmware(b), a.measured, b.measured)
        else {
            continue;
        };
        if fa == fb {
            continue;
        }
        let a_nearer = match nearer {
            Nearer::Lower => fa < fb,
            Nearer::Higher => fa > fb,
        };
        let ((near, fnear, mn), (far, ffar, mf)) = if a_nearer {
            ((a, fa, ma), (b, fb, mb))
        } else {
            ((b, fb, mb), (a, fa, ma))
        };
        let worse = if higher_is_better {
            mn * ORDER_MARGIN < mf
        } else {
            mn > mf * ORDER_MARGIN
        };
        if worse {
            out.push(format!(
                "from node {}: {what} puts node {} ({}) nearer than node {} ({}), but node {} measured {} {unit} against {} {unit}",
                near.cpu_node,
                near.mem_node,
                num(fnear),
                far.mem_node,
                num(ffar),
                near.mem_node,
                num(round2(mn)),
                num(round2(mf))
            ));
        }
    }
    out
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// Latency matrix against SLIT and HMAT.
pub fn compare_latency(r: &LatencyReport, topo: &Topology) -> Option<FirmwareComparison> {
    let pairs: Vec<(u32, u32, Option<f64>)> = r
        .cells
        .iter()
        .map(|c| {
            (
                c.cpu_node,
                c.mem_node,
                c.outcome.ok().map(|m| m.latency_ns.median),
            )
        })
        .collect();
    let cells = cells_for(topo, &pairs);
    if !worth_showing(&cells) {
        return None;
    }
    let slit = |c: &FirmwareCell| c.slit_distance.map(f64::from);
    let hmat = |c: &FirmwareCell| c.hmat_read_latency_ns.map(|v| v as f64);
    let mut flags = order_flags(&cells, "SLIT", slit, Nearer::Lower, false, "ns");
    flags.extend(order_flags(
        &cells,
        "HMAT latency",
        hmat,
        Nearer::Lower,
        false,
        "ns",
    ));
    flags.extend(slit_ratio_flags(&cells));
    for c in &cells {
        if let (Some(h), Some(m)) = (c.hmat_read_latency_ns, c.measured) {
            let ratio = m / h as f64;
            if !(1.0 / RATIO_LIMIT..=RATIO_LIMIT).contains(&ratio) {
                flags.push(format!(
                    "node {} -> node {}: HMAT says {h} ns, measured {} ns ({}x)",
                    c.cpu_node,
                    c.mem_node,
                    num(round2(m)),
                    num(round2(ratio))
                ));
            }
        }
    }
    Some(FirmwareComparison {
        measured_what: "median ns per load".into(),
        cells,
        disagreements: flags,
    })
}

/// Remote/local latency against distance/10, per row.
fn slit_ratio_flags(cells: &[FirmwareCell]) -> Vec<String> {
    let mut out = Vec::new();
    for local in cells.iter().filter(|c| c.slit_distance == Some(10)) {
        let Some(base) = local.measured.filter(|&v| v > 0.0) else {
            continue;
        };
        for c in cells
            .iter()
            .filter(|c| c.cpu_node == local.cpu_node && c.mem_node != local.mem_node)
        {
            let (Some(d), Some(m)) = (c.slit_distance, c.measured) else {
                continue;
            };
            let expected = f64::from(d) / 10.0;
            let measured = m / base;
            if !(1.0 / RATIO_LIMIT..=RATIO_LIMIT).contains(&(measured / expected)) {
                out.push(format!(
                    "node {} -> node {}: SLIT {d} implies {}x the local latency, measured {}x",
                    c.cpu_node,
                    c.mem_node,
                    num(expected),
                    num(round2(measured))
                ));
            }
        }
    }
    out
}

/// Bandwidth matrix (one mix, the most threads per pair) against SLIT and HMAT.
pub fn compare_bandwidth(r: &BandwidthReport, topo: &Topology) -> Option<FirmwareComparison> {
    let mix = comparison_mix(r)?;
    let mut pairs: Vec<(u32, u32, Option<f64>, usize)> = Vec::new();
    for c in r.cells.iter().filter(|c| c.mix == mix) {
        let v = c.outcome.ok().map(|m| m.bandwidth_gb_s.median);
        match pairs.iter_mut().find(|p| (p.0, p.1) == (c.cpu_node, c.mem_node)) {
            Some(p) if c.cpus.len() > p.3 => *p = (c.cpu_node, c.mem_node, v, c.cpus.len()),
            Some(_) => {}
            None => pairs.push((c.cpu_node, c.mem_node, v, c.cpus.len())),
        }
    }
    let pairs: Vec<(u32, u32, Option<f64>)> = pairs.into_iter().map(|(c, m, v, _)| (c, m, v)).collect();
    let cells = cells_for(topo, &pairs);
    if !worth_showing(&cells) {
        return None;
    }
    let slit = |c: &FirmwareCell| c.slit_distance.map(f64::from);
    let hmat = |c: &FirmwareCell| c.hmat_read_bandwidth_gb_s;
    let mut flags = order_flags(&cells, "SLIT", slit, Nearer::Lower, true, "GB/s");
    flags.extend(order_flags(
        &cells,
        "HMAT bandwidth",
        hmat,
        Nearer::Higher,
        true,
        "GB/s",
    ));
    for c in &cells {
        if let (Some(h), Some(m)) = (c.hmat_read_bandwidth_gb_s, c.measured) {
            if m > h * ORDER_MARGIN {
                flags.push(format!(
                    "node {} -> node {}: measured {} GB/s, above the HMAT figure of {} GB/s",
                    c.cpu_node,
                    c.mem_node,
                    num(round2(m)),
                    num(h)
                ));
            }
        }
    }
    Some(FirmwareComparison {
        measured_what: format!("{mix}, median GB/s"),
        cells,
        disagreements: flags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_model::{HugePages, LatencyCell, LatencyMeasurement, Outcome, Pattern, Placement, Summary};
    use std::path::PathBuf;

    fn topo(name: &str) -> Topology {
        let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures"))
            .join(name)
            .join("sys");
        Topology::read(&root).unwrap()
    }

    fn latency(cells: &[(u32, u32, f64)]) -> LatencyReport {
        let cell = |&(c, m, v): &(u32, u32, f64)| LatencyCell {
            cpu: c,
            cpu_node: c,
            mem_node: m,
            outcome: Outcome::Ok(LatencyMeasurement {
                latency_ns: Summary::of(&[v]).unwrap(),
                samples_ns: vec![v],
                loads_per_sample: 1,
                samples_retaken: 0,
                samples_preempted: 0,
                cycle_verified_elements: 1,
                placement: Placement {
                    requested_node: m,
                    page_size_bytes: 4096,
                    pages_total: 1,
                    pages_sampled: 1,
                    pages_on_node: 1,
                    pages_elsewhere: Vec::new(),
                    thread_affinity: vec![c],
                    verified: true,
                    method: "test".into(),
                    interleave: None,
                },
                noise: None,
            }),
        };
        LatencyReport {
            pattern: Pattern::Random,
            huge_pages: HugePages::Off,
            size_bytes: 1,
            stride_bytes: 64,
            window_bytes: None,
            seed: 1,
            cpu_nodes: Vec::new(),
            mem_nodes: Vec::new(),
            cells: cells.iter().map(cell).collect(),
            firmware: None,
            interleave: None,
        }
    }

    #[test]
    fn agreeing_matrix_has_no_flags() {
        // snc-2s: SLIT 10/12/21, HMAT 80 ns for each node's own memory.
        let t = topo("snc-2s");
        let r = latency(&[(0, 0, 85.0), (0, 1, 95.0), (0, 2, 140.0), (0, 3, 145.0)]);
        let f = compare_latency(&r, &t).unwrap();
        assert_eq!(f.cells[1].slit_distance, Some(12));
        assert_eq!(f.cells[0].hmat_read_latency_ns, Some(80));
        assert_eq!(
            f.cells[2].hmat_read_latency_ns, None,
            "only best initiators are listed"
        );
        assert!(f.disagreements.is_empty(), "{:?}", f.disagreements);
    }

    #[test]
    fn disagreements_are_flagged() {
        let t = topo("snc-2s");
        let r = latency(&[(0, 0, 200.0), (0, 1, 95.0), (0, 2, 100.0), (0, 3, 145.0)]);
        let f = compare_latency(&r, &t).unwrap();
        let all = f.disagreements.join("\n");
        assert!(
            all.contains("SLIT puts node 0 (10) nearer than node 1 (12)"),
            "{all}"
        );
        assert!(all.contains("HMAT says 80 ns, measured 200 ns (2.5x)"), "{all}");
        assert!(
            all.contains("SLIT 21 implies 2.1x the local latency, measured 0.5x"),
            "{all}"
        );
    }

    #[test]
    fn one_node_without_hmat_shows_nothing() {
        let t = topo("this-machine");
        assert!(compare_latency(&latency(&[(0, 0, 90.0)]), &t).is_none());
    }
}
