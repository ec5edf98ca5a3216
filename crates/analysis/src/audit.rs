//! `memfabric audit`: what is wrong with this machine's memory configuration,
//! each finding with a severity and a plain-language why, and a class per
//! socket with the bandwidth it is expected to lose.
//!
//! Sources: SMBIOS DIMMs (population, see `memory`), the topology (nodes
//! without memory, unequal nodes) and kernel settings (THP, automatic NUMA
//! balancing, the CPU frequency governor, SMT). Everything is read from a
//! sysfs root and a procfs root given by the caller, so tests run against
//! fixture trees; what cannot be read is reported as unknown, never assumed.

pub mod class;
mod memory;
pub(crate) use memory::{socket_views, SocketView};

use std::collections::BTreeMap;

use memfabric_model::{format_size, AuditReport, Finding, MemoryPeak, Outcome, Severity};
use memfabric_topo::{format_cpulist, Topology};

use crate::theory::smbios_peak;

/// Kernel settings that change memory performance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// The selected word of `transparent_hugepage/enabled`.
    pub thp_enabled: Option<String>,
    /// `/proc/sys/kernel/numa_balancing`, trimmed.
    pub numa_balancing: Option<String>,
    /// Governor -> CPUs using it; empty where there is no cpufreq.
    pub governors: BTreeMap<String, Vec<u32>>,
    pub smt_active: Option<bool>,
}

impl Settings {
    /// The settings of `topo` (THP mode, SMT) with the governors and NUMA balancing
    /// read beside it (`memfabric_topo::governors`, `memfabric_topo::numa_balancing`).
    pub fn new(
        topo: &Topology,
        governors: BTreeMap<String, Vec<u32>>,
        numa_balancing: Option<String>,
    ) -> Settings {
        Settings {
            thp_enabled: topo.huge_pages.thp_enabled.clone(),
            numa_balancing,
            governors,
            smt_active: topo.smt_active,
        }
    }
}

pub(crate) fn finding(severity: Severity, title: &str, why: &str, evidence: Vec<String>) -> Finding {
    Finding {
        severity,
        title: title.to_string(),
        why: why.to_string(),
        evidence,
    }
}

/// The audit of `topo` (its `memory_devices` included) and `settings`.
pub fn audit(topo: &Topology, settings: &Settings) -> AuditReport {
    let devices = &topo.memory_devices;
    let peak: Outcome<MemoryPeak> = smbios_peak(devices);
    let mut findings = memory::findings(devices);
    findings.extend(node_findings(topo));
    findings.extend(settings_findings(topo, settings));
    // Most severe first; the order within a severity is the order of the checks.
    findings.sort_by_key(|f| std::cmp::Reverse(f.severity));
    AuditReport {
        findings,
        sockets: memory::classes(topo, devices, &peak),
    }
}

fn node_findings(topo: &Topology) -> Vec<Finding> {
    // A kernel without NUMA shows one stand-in node whose memory is unknown.
    if topo.nodes.len() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    let starved: Vec<u32> = topo
        .nodes
        .iter()
        .filter(|n| !n.cpu_less && n.mem_total_bytes == 0)
        .map(|n| n.id)
        .collect();
    if !starved.is_empty() {
        out.push(finding(
            Severity::Warning,
            &format!("NUMA node(s) {} have CPUs but no memory", format_cpulist(&starved)),
            "Every memory access from those CPUs goes to another node: higher latency, and bandwidth shared with that node's own CPUs. Usually a socket or die whose channels are empty, or a firmware NUMA setting.",
            starved.iter().map(|n| format!("node {n}: 0 bytes of memory")).collect(),
        ));
    }
    let with_memory: Vec<_> = topo
        .nodes
        .iter()
        .filter(|n| !n.cpu_less && n.mem_total_bytes > 0)
        .collect();
    let lo = with_memory.iter().map(|n| n.mem_total_bytes).min().unwrap_or(0);
    let hi = with_memory.iter().map(|n| n.mem_total_bytes).max().unwrap_or(0);
    if lo > 0 && hi as f64 > 1.10 * lo as f64 {
        out.push(finding(
            Severity::Warning,
            "NUMA nodes with CPUs hold unequal memory",
            "Programs fill the smaller node first and then get remote memory; unequal node memory usually means an unequal DIMM population behind the nodes, and so unequal bandwidth too.",
            with_memory
                .iter()
                .map(|n| format!("node {}: {}", n.id, format_size(n.mem_total_bytes)))
                .collect(),
        ));
    }
    out
}

fn settings_findings(topo: &Topology, s: &Settings) -> Vec<Finding> {
    let mut out = Vec::new();
    match s.thp_enabled.as_deref() {
        Some("never") => out.push(finding(
            Severity::Warning,
            "Transparent huge pages are off (never)",
            "Every 4 KiB page needs its own TLB entry: large working sets take TLB misses that 2 MiB pages avoid, which lowers bandwidth and raises latency.",
            vec!["transparent_hugepage/enabled: never".into()],
        )),
        Some("madvise") => out.push(finding(
            Severity::Info,
            "Transparent huge pages only on request (madvise)",
            "Programs that do not ask with madvise get 4 KiB pages; memfabric asks when given --huge-pages thp.",
            vec!["transparent_hugepage/enabled: madvise".into()],
        )),
        _ => {}
    }
    if let Some(v) = s.numa_balancing.as_deref().filter(|v| *v != "0") {
        if topo.nodes.len() > 1 {
            out.push(finding(
                Severity::Warning,
                "Automatic NUMA balancing is on",
                "The kernel periodically unmaps pages to see which node uses them (NUMA hinting faults) and migrates them: extra faults and page moves disturb latency-sensitive work and measurements. memfabric binds its own buffers; other programs' pages still move.",
                vec![format!("kernel/numa_balancing = {v}")],
            ));
        }
    }
    out.push(governor_finding(s));
    out.push(match s.smt_active {
        Some(true) => finding(
            Severity::Info,
            "SMT is on",
            "Hardware threads of one core share its load/store units and caches. With one thread per CPU, two threads share each core; give --threads or CPUs one per core to measure per core.",
            vec!["devices/system/cpu/smt/active = 1".into()],
        ),
        Some(false) => finding(
            Severity::Info,
            "SMT is off or not supported",
            "Each core runs one hardware thread: per-CPU figures are per-core figures.",
            vec!["devices/system/cpu/smt/active = 0".into()],
        ),
        None => finding(
            Severity::Info,
            "SMT state unknown",
            "The kernel does not say whether sibling threads are online (no smt/active).",
            Vec::new(),
        ),
    });
    out
}

fn governor_finding(s: &Settings) -> Finding {
    let evidence = s
        .governors
        .iter()
        .map(|(g, cpus)| format!("CPUs {}: {g}", format_cpulist(cpus)))
        .collect();
    let others: Vec<&str> = s
        .governors
        .keys()
        .map(String::as_str)
        .filter(|g| *g != "performance")
        .collect();
    if s.governors.is_empty() {
        finding(
            Severity::Info,
            "CPU frequency governor unknown",
            "There is no cpufreq here (a virtual machine, or firmware that controls frequency itself), so the frequency policy cannot be checked.",
            Vec::new(),
        )
    } else if others.is_empty() {
        finding(
            Severity::Info,
            "CPU governor is 'performance'",
            "Cores stay at their highest frequency policy: measurements do not depend on recent load.",
            evidence,
        )
    } else {
        finding(
            Severity::Warning,
            &format!("CPU governor is '{}', not 'performance'", others.join("', '")),
            "Other governors let cores slow down between bursts of work: latency and bandwidth then depend on recent load, and runs disagree.",
            evidence,
        )
    }
}

#[cfg(test)]
mod tests;
