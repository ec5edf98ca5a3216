//! The peak of a path: memory on one or several nodes, reached from a CPU node,
//! across socket links or not, for a mix's directions; and a figure's share of it.

use memfabric_model::{BandwidthReport, Efficiency, LinkPeak, MemoryPeak, Mix};
use memfabric_topo::Topology;

use super::{node_peak, node_socket, num};

/// Of the bytes a mix counts, the share that crosses the socket links in the
/// busier direction when the memory is remote: reads come from it, writes go to it.
/// Read: all one way (1); copy: half each way (1/2); triad: 2 of 3 one way.
pub fn busier_direction_share(mix: Mix) -> f64 {
    let (r, w) = (mix.read_arrays() as f64, mix.written_arrays() as f64);
    r.max(w) / (r + w)
}

/// The theoretical peak of the path from a CPU node to a memory node for a mix:
/// the memory node's own peak; across sockets, the smaller of that and what the
/// links carry for this mix when links are described: the per-direction peak over
/// the share of the mix's bytes that goes the busier way (a copy moves half its
/// bytes each way, so twice the per-direction peak).
pub fn path_peak(
    topo: &Topology,
    memory: &MemoryPeak,
    links: Option<&LinkPeak>,
    (cpu_node, mem_node): (u32, u32),
    mix: Mix,
) -> Result<(f64, String), String> {
    let target = node_peak(topo, memory, mem_node)?;
    let from = node_socket(topo, cpu_node)?;
    if from == target.socket {
        return Ok((target.peak_gb_s, target.basis));
    }
    let share = busier_direction_share(mix);
    match links.map(|l| (l, l.per_direction_gb_s / share)) {
        Some((l, carried)) if carried < target.peak_gb_s => Ok((
            carried,
            format!(
                "across sockets: the links' {} GB/s per direction; {mix} moves {}% of its bytes the busier way, so {} GB/s, below the memory's",
                num(l.per_direction_gb_s),
                num((100.0 * share).round()),
                num(carried)
            ),
        )),
        Some(_) => Ok((
            target.peak_gb_s,
            format!(
                "{}; across sockets: the memory's peak (links are faster)",
                target.basis
            ),
        )),
        None => Ok((
            target.peak_gb_s,
            format!(
                "{}; across sockets: the memory's peak (links not described)",
                target.basis
            ),
        )),
    }
}

/// The peak of memory on several nodes read at once, each thread its own node's
/// (STREAM's parts, a per-domain step, a loaded-latency load): the sum of the
/// nodes' peaks. Only the memory side: links are not counted.
pub fn nodes_peak(topo: &Topology, memory: &MemoryPeak, nodes: &[u32]) -> Result<(f64, String), String> {
    let mut nodes = nodes.to_vec();
    nodes.sort_unstable();
    nodes.dedup();
    let peaks = nodes
        .iter()
        .map(|&n| node_peak(topo, memory, n))
        .collect::<Result<Vec<_>, _>>()?;
    let total: f64 = peaks.iter().map(|p| p.peak_gb_s).sum();
    let parts: Vec<String> = peaks
        .iter()
        .map(|p| format!("node {}: {}", p.node, p.basis))
        .collect();
    Ok((total, parts.join("; ")))
}

/// A figure's share of a peak, or None for a peak that is not positive.
pub fn share(gb_s: f64, (peak, basis): (f64, String)) -> Option<Efficiency> {
    (peak > 0.0).then(|| Efficiency {
        peak_gb_s: peak,
        fraction: gb_s / peak,
        basis,
    })
}

/// Sets each ok cell's share of its path's peak, where the peak is known; returns
/// why it is not known for the others.
pub fn annotate_bandwidth(
    r: &mut BandwidthReport,
    topo: &Topology,
    memory: &MemoryPeak,
    links: Option<&LinkPeak>,
) -> Vec<String> {
    if r.interleave.is_some() {
        return vec![
            "memory interleaved over several nodes: part of it crosses sockets, so its path has no single peak".into(),
        ];
    }
    let mut unknown = Vec::new();
    for cell in &mut r.cells {
        let Some(m) = cell.outcome.ok() else { continue };
        match path_peak(topo, memory, links, (cell.cpu_node, cell.mem_node), cell.mix) {
            Ok((peak, basis)) if peak > 0.0 => {
                cell.efficiency = Some(Efficiency {
                    peak_gb_s: peak,
                    fraction: m.bandwidth_gb_s.median / peak,
                    basis,
                });
            }
            Ok(_) => unknown.push(format!("node {}: a peak of 0 GB/s", cell.mem_node)),
            Err(why) => unknown.push(why),
        }
    }
    unknown
}
