//! The environment every result records: what could change the numbers.

use std::fs;
use std::path::Path;

use memfabric_model::{Environment, TimerInfo};
use memfabric_topo::{format_cpulist, Topology};

use crate::sys;

/// Reads the environment from /proc and the given sysfs root.
pub fn environment(topo: &Topology, sysfs: &Path) -> Environment {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let allowed = sys::current_affinity().unwrap_or_default();
    Environment {
        hostname: read_trimmed("/proc/sys/kernel/hostname"),
        arch: std::env::consts::ARCH.into(),
        cpu_model: cpuinfo_field(&cpuinfo, "model name").or_else(|| cpuinfo_field(&cpuinfo, "CPU part")),
        microcode: cpuinfo_field(&cpuinfo, "microcode"),
        kernel: read_trimmed("/proc/sys/kernel/osrelease"),
        thp_enabled: topo.huge_pages.thp_enabled.clone(),
        numa_balancing: read_trimmed("/proc/sys/kernel/numa_balancing"),
        governor: read_trimmed(sysfs.join("devices/system/cpu/cpu0/cpufreq/scaling_governor")),
        smt_active: topo.smt_active,
        cpus_online: topo.cpus.len(),
        cpus_allowed: format_cpulist(&allowed),
        numa_nodes: topo.nodes.len(),
        timer: timer_info(&cpuinfo),
    }
}

fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The value of the first `key : value` line of /proc/cpuinfo.
pub fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

fn timer_info(cpuinfo: &str) -> TimerInfo {
    let flags = cpuinfo_field(cpuinfo, "flags");
    TimerInfo {
        source: "clock_gettime(CLOCK_MONOTONIC)".into(),
        overhead_ns: clock_overhead_ns(),
        invariant_tsc: flags.map(|f| {
            let has = |name: &str| f.split_whitespace().any(|w| w == name);
            has("constant_tsc") && has("nonstop_tsc")
        }),
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
    fn cpuinfo_fields() {
        let text = "processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\nmicrocode\t: 0x1\n";
        assert_eq!(
            cpuinfo_field(text, "model name").as_deref(),
            Some("Some CPU @ 2.0GHz")
        );
        assert_eq!(cpuinfo_field(text, "microcode").as_deref(), Some("0x1"));
        assert_eq!(cpuinfo_field(text, "flags"), None);
    }

    #[test]
    fn clock_is_cheap_and_monotonic() {
        let o = clock_overhead_ns();
        assert!((0.0..10_000.0).contains(&o), "{o}");
    }
}
