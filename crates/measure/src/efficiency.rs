//! Each result's share of its path's theoretical peak, from this machine's DIMMs
//! (or the memory the user described): set after measuring (the enrich stage),
//! shown beside the measured figures. Where no share can be given, the report says
//! why (`peak_unknown`).

use memfabric_model::{
    BandwidthReport, DomainScalingReport, LinkPeak, LoadedLatencyReport, MemoryPeak, Outcome, StreamReport,
};
use memfabric_topo::Topology;

use memfabric_analysis::theory;

/// The memory's peak: the one the user gave (--channels/--mts, --machine), else the
/// one this machine's SMBIOS gives; or why there is none.
/// Each socket's formula names where its figures came from, since every share the
/// reports print is read against it.
pub fn memory_peak(topo: &Topology, given: Option<&MemoryPeak>) -> Result<MemoryPeak, String> {
    let (mut peak, source) = match given {
        Some(p) => (p.clone(), "as given: --channels/--mts or --machine"),
        None => match theory::smbios_peak(&memfabric_topo::live_memory_devices(topo)) {
            Outcome::Ok(peak) => (peak, "SMBIOS"),
            Outcome::Skipped { reason } | Outcome::Failed { reason } => return Err(reason),
        },
    };
    for s in &mut peak.sockets {
        s.formula = format!("{} ({source})", s.formula);
    }
    Ok(peak)
}

/// The reasons, each once, as one line.
fn joined(mut reasons: Vec<String>) -> Option<String> {
    reasons.dedup();
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// Sets each bandwidth cell's share of its path's peak; cells whose peak is not
/// known (no SMBIOS, CPU-less nodes, ...) are left without one, and the report says
/// why.
pub fn annotate(
    r: &mut BandwidthReport,
    topo: &Topology,
    links: Option<&LinkPeak>,
    given: Option<&MemoryPeak>,
) {
    r.peak_unknown = match memory_peak(topo, given) {
        Ok(peak) => joined(theory::annotate_bandwidth(r, topo, &peak, links)),
        Err(why) => Some(why),
    };
}

/// Each STREAM function's best rate as a share of the peak of the nodes that hold
/// the arrays.
pub fn annotate_stream(r: &mut StreamReport, topo: &Topology, given: Option<&MemoryPeak>) {
    // Interleaved, every thread's part is spread over the whole set.
    let mem_nodes = match &r.interleave {
        Some(i) => i.nodes.clone(),
        None => r.mem_nodes.clone(),
    };
    let nodes = memory_peak(topo, given).and_then(|peak| theory::nodes_peak(topo, &peak, &mem_nodes));
    let nodes = match nodes {
        Ok(n) => n,
        Err(why) => {
            r.peak_unknown = Some(why);
            return;
        }
    };
    if let Outcome::Ok(m) = &mut r.outcome {
        for f in &mut m.functions {
            f.efficiency = theory::share(f.best_gb_s, nodes.clone());
        }
    }
}

/// Each per-domain step's median as a share of the peak of the nodes it reads.
pub fn annotate_domains(r: &mut DomainScalingReport, topo: &Topology, given: Option<&MemoryPeak>) {
    let peak = match memory_peak(topo, given) {
        Ok(p) => p,
        Err(why) => {
            r.peak_unknown = Some(why);
            return;
        }
    };
    let mut unknown = Vec::new();
    for step in r.alone.iter_mut().chain(r.cumulative.iter_mut()) {
        let Some(m) = step.outcome.ok() else { continue };
        match theory::nodes_peak(topo, &peak, &step.mem_nodes) {
            Ok(nodes) => step.efficiency = theory::share(m.bandwidth_gb_s.median, nodes),
            Err(why) => unknown.push(why),
        }
    }
    r.peak_unknown = joined(unknown);
}

/// Each loaded-latency step's load as a share of the memory node's peak.
pub fn annotate_loaded(r: &mut LoadedLatencyReport, topo: &Topology) {
    let Ok(peak) = memory_peak(topo, None) else { return };
    let Ok(node) = theory::nodes_peak(topo, &peak, &[r.mem_node]) else {
        return;
    };
    for s in &mut r.steps {
        s.efficiency = theory::share(s.load_bandwidth_gb_s, node.clone());
    }
}
