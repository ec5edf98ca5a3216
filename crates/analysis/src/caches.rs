//! Whether a bandwidth figure is the memory's: a working set that fits in the
//! last-level cache its CPUs share is served partly by the cache, and its GB/s
//! describe the cache. The caveat is recorded in the result, so the terminal, JSON
//! and the HTML report all carry it.

use memfabric_model::{format_size, BandwidthReport, LoadedLatencyReport};
use memfabric_topo::Topology;

/// The last-level cache the CPUs can fill: every L3 domain holding one of them.
pub fn llc_of(topo: &Topology, cpus: &[u32]) -> u64 {
    topo.l3_domains
        .iter()
        .filter(|d| d.cpus.iter().any(|c| cpus.contains(c)))
        .fold(0, |total, d| total.saturating_add(d.size_bytes))
}

/// The per-thread size that puts a working set at twice the cache: what a figure of
/// the memory needs.
fn needed(llc: u64, threads: u64, arrays: u64) -> u64 {
    (2 * llc)
        .div_ceil((threads * arrays).max(1))
        .next_multiple_of(1 << 20)
}

/// Sets the caveat of a bandwidth result whose cells' working sets (threads x arrays
/// x array bytes) fit in the last-level cache of their CPUs.
pub fn annotate_bandwidth(r: &mut BandwidthReport, topo: &Topology) {
    let mut fits = Vec::new();
    for c in &r.cells {
        let arrays = r.mixes.iter().find(|m| m.mix == c.mix).map_or(1, |m| m.arrays);
        let threads = c.cpus.len() as u64;
        let working = threads * arrays * r.array_bytes_per_thread;
        let llc = llc_of(topo, &c.cpus);
        if llc > 0 && working < llc {
            fits.push((working, llc, needed(llc, threads, arrays)));
        }
    }
    let Some(&(working, llc, _)) = fits.iter().min() else {
        return;
    };
    let need = fits.iter().map(|f| f.2).max().unwrap_or(0);
    r.cache_caveat = Some(format!(
        "{} of {} cells hold a working set that fits in their CPUs' last-level cache (the smallest {} in {}): caches serve part of the traffic, and those GB/s are not the memory's; --size {} or more per thread measures memory",
        fits.len(),
        r.cells.len(),
        format_size(working),
        format_size(llc),
        format_size(need)
    ));
}

/// Sets the caveat of a loaded-latency result whose load arrays, or whose chase,
/// fit in the last-level cache of the CPUs that use them.
pub fn annotate_loaded(r: &mut LoadedLatencyReport, topo: &Topology) {
    let threads = r.load_cpus.len() as u64;
    let working = threads * r.mix.arrays * r.array_bytes_per_thread;
    let llc = llc_of(topo, &r.load_cpus);
    let mut notes = Vec::new();
    if llc > 0 && threads > 0 && working < llc {
        notes.push(format!(
            "the load's working set ({} over {threads} thread(s)) fits in their last-level cache ({}): the load's GB/s are partly the cache's, and the memory is loaded less than they say; --size {} or more per thread loads memory",
            format_size(working),
            format_size(llc),
            format_size(needed(llc, threads, r.mix.arrays))
        ));
    }
    let own = llc_of(topo, &[r.latency_cpu]);
    if own > 0 && r.chase_size_bytes < own {
        notes.push(format!(
            "the chase ({}) fits in the measuring CPU's last-level cache ({}): its latency is partly the cache's",
            format_size(r.chase_size_bytes),
            format_size(own)
        ));
    }
    if !notes.is_empty() {
        r.cache_caveat = Some(notes.join("; "));
    }
}
