//! The environment every result records: what could change the numbers.

use memfabric_model::{Environment, TimerInfo};
use memfabric_topo::{format_cpulist, Host, Platform, Roots, Topology};

use crate::sys;

/// The environment of the machine `roots` describe (the live one: the timer and
/// this process's affinity are read here).
pub fn environment(topo: &Topology, roots: &Roots) -> Environment {
    let host = Host::read(roots);
    let allowed = sys::current_affinity().unwrap_or_default();
    Environment {
        hostname: host.hostname.clone(),
        arch: std::env::consts::ARCH.into(),
        cpu_model: host.cpu_model.clone(),
        microcode: host.microcode.clone(),
        kernel: host.kernel.clone(),
        thp_enabled: topo.huge_pages.thp_enabled.clone(),
        numa_balancing: host.numa_balancing.clone(),
        governor: host.governor.clone(),
        smt_active: topo.smt_active,
        cpus_online: topo.cpus.len(),
        cpus_allowed: format_cpulist(&allowed),
        numa_nodes: topo.nodes.len(),
        timer: timer_info(&host),
        platform: Some(Platform::read(
            topo,
            roots,
            &host,
            &memfabric_topo::live_memory_devices(topo),
        )),
        // Set by Slurm in a job's environment: the cluster's name for this node.
        scheduler_node: std::env::var("SLURMD_NODENAME").ok().filter(|n| !n.is_empty()),
    }
}

fn timer_info(host: &Host) -> TimerInfo {
    TimerInfo {
        source: "clock_gettime(CLOCK_MONOTONIC)".into(),
        overhead_ns: clock_overhead_ns(),
        // Unknown where /proc/cpuinfo lists no flags (aarch64 says "Features").
        invariant_tsc: (!host.cpu_flags.is_empty())
            .then(|| host.has_flag("constant_tsc") && host.has_flag("nonstop_tsc")),
    }
}

/// Median cost of one clock read, from pairs of back-to-back reads.
pub fn clock_overhead_ns() -> f64 {
    let mut d: Vec<u64> = (0..1001)
        .map(|_| {
            let a = sys::monotonic_ns();
            sys::monotonic_ns() - a
        })
        .collect();
    d.sort_unstable();
    d[d.len() / 2] as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_cheap_and_monotonic() {
        let o = clock_overhead_ns();
        assert!((0.0..10_000.0).contains(&o), "{o}");
    }
}
