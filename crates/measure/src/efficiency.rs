//! Each result's share of its path's theoretical peak, from this machine's DIMMs:
//! set after measuring (the enrich stage), shown beside the measured figures.

use memfabric_model::{
    BandwidthReport, DomainScalingReport, LinkPeak, LoadedLatencyReport, MemoryPeak, Outcome, StreamReport,
};
use memfabric_topo::Topology;

use memfabric_analysis::theory;

/// Sets each bandwidth cell's share of its path's peak; cells whose peak is
/// not known (no SMBIOS, CPU-less nodes, ...) are left without one.
pub fn annotate(r: &mut BandwidthReport, topo: &Topology, links: Option<&LinkPeak>) {
    if let Some(peak) = memory_peak(topo) {
        theory::annotate_bandwidth(r, topo, &peak, links);
    }
}

/// This machine's memory peak from SMBIOS, when it says enough.
pub fn memory_peak(topo: &Topology) -> Option<MemoryPeak> {
    let devices = memfabric_topo::live_memory_devices(topo);
    match theory::smbios_peak(&devices) {
        Outcome::Ok(peak) => Some(peak),
        _ => None,
    }
}

/// Each STREAM function's best rate as a share of the peak of the nodes that hold
/// the arrays.
pub fn annotate_stream(r: &mut StreamReport, topo: &Topology) {
    let Some(peak) = memory_peak(topo) else { return };
    let Ok(nodes) = theory::nodes_peak(topo, &peak, &r.mem_nodes) else {
        return;
    };
    if let Outcome::Ok(m) = &mut r.outcome {
        for f in &mut m.functions {
            f.efficiency = theory::share(f.best_gb_s, nodes.clone());
        }
    }
}

/// Each per-domain step's median as a share of the peak of the nodes it reads.
pub fn annotate_domains(r: &mut DomainScalingReport, topo: &Topology) {
    let Some(peak) = memory_peak(topo) else { return };
    for step in r.alone.iter_mut().chain(r.cumulative.iter_mut()) {
        let Some(m) = step.outcome.ok() else { continue };
        if let Ok(nodes) = theory::nodes_peak(topo, &peak, &step.mem_nodes) {
            step.efficiency = theory::share(m.bandwidth_gb_s.median, nodes);
        }
    }
}

/// Each loaded-latency step's load as a share of the memory node's peak.
pub fn annotate_loaded(r: &mut LoadedLatencyReport, topo: &Topology) {
    let Some(peak) = memory_peak(topo) else { return };
    let Ok(node) = theory::nodes_peak(topo, &peak, &[r.mem_node]) else {
        return;
    };
    for s in &mut r.steps {
        s.efficiency = theory::share(s.load_bandwidth_gb_s, node.clone());
    }
}
