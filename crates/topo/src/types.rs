//! The topology as plain serde data. Every list of ids is sorted.

use serde::{Deserialize, Serialize};

use crate::smbios::MemoryDevices;

/// What the machine is: CPUs, caches, NUMA nodes and firmware-reported
/// memory performance, as read from sysfs by [`Topology::read`].
///
/// [`Topology::read`]: crate::Topology::read
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Online CPUs, sorted by id.
    pub cpus: Vec<Cpu>,
    /// Sockets, sorted by id.
    pub packages: Vec<Package>,
    /// Dies, sorted by (package, id).
    pub dies: Vec<Die>,
    /// Groups of CPUs sharing one last-level cache, sorted by their lowest
    /// CPU; [`Cpu::l3_domain`] indexes this list.
    pub l3_domains: Vec<CacheDomain>,
    /// Online NUMA nodes, sorted by id.
    pub nodes: Vec<Node>,
    /// One entry per (level, kind) of CPU cache, sorted by level then kind.
    pub caches: Vec<CacheLevel>,
    pub huge_pages: HugePages,
    /// Firmware (ACPI HMAT) performance figures, sorted by
    /// (target_node, access_class). Empty when the platform has no HMAT.
    pub hmat: Vec<HmatEntry>,
    /// Whether SMT siblings are online (`devices/system/cpu/smt/active`).
    pub smt_active: Option<bool>,
    /// SMBIOS memory devices (DIMMs and empty slots) from
    /// `firmware/dmi/entries/17-*/raw`, grouped by socket and channel where
    /// their locators say; empty, with the reason, where SMBIOS says nothing.
    #[serde(default)]
    pub memory_devices: MemoryDevices,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cpu {
    pub id: u32,
    pub package: u32,
    /// Die id as the kernel reports it; 0 when it has no `die_id` file.
    pub die: u32,
    /// Core id within the package; not necessarily dense.
    pub core: u32,
    pub node: Option<u32>,
    /// Online hardware threads of this core, this CPU included.
    pub smt_siblings: Vec<u32>,
    /// Index into [`Topology::l3_domains`].
    pub l3_domain: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Package {
    pub id: u32,
    pub cpus: Vec<u32>,
    /// Ids of the dies in this package.
    pub dies: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Die {
    pub package: u32,
    pub id: u32,
    pub cpus: Vec<u32>,
}

/// CPUs sharing one instance of the last-level cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheDomain {
    /// Position in [`Topology::l3_domains`].
    pub index: usize,
    /// The kernel's cache `id`, where it provides one.
    pub cache_id: Option<u32>,
    pub level: u8,
    pub size_bytes: u64,
    pub cpus: Vec<u32>,
    /// The node of its CPUs when they all belong to one node; `None` when
    /// the cache spans nodes (e.g. Intel SNC) or nodes are unknown.
    pub node: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Node {
    pub id: u32,
    pub cpus: Vec<u32>,
    pub mem_total_bytes: u64,
    pub mem_free_bytes: u64,
    /// No CPUs: a memory expander (CXL), HBM or a far-memory node.
    pub cpu_less: bool,
    /// This node's row of the ACPI SLIT, in the order of [`Topology::nodes`].
    pub distances: Vec<u32>,
    /// This node's hugetlb pools, sorted by page size.
    pub hugepages: Vec<HugePool>,
}

/// One kind of CPU cache across the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheLevel {
    pub level: u8,
    /// `Data`, `Instruction` or `Unified`, as the kernel names it.
    pub kind: String,
    /// Size of one instance; on hybrid parts whose instances differ, the
    /// largest.
    pub size_bytes: u64,
    /// Sum over all instances.
    pub total_size_bytes: u64,
    pub line_size_bytes: u32,
    /// `Some(0)` is the kernel's way of saying fully associative.
    pub ways: Option<u32>,
    pub instances: u32,
    /// Online CPUs sharing one instance (the largest group on hybrid parts).
    pub cpus_per_instance: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HugePages {
    /// Transparent huge page mode, the bracketed word of
    /// `kernel/mm/transparent_hugepage/enabled` (`always`, `madvise`, `never`).
    pub thp_enabled: Option<String>,
    /// The bracketed word of `kernel/mm/transparent_hugepage/defrag`.
    pub thp_defrag: Option<String>,
    /// System-wide hugetlb pools, sorted by page size.
    pub pools: Vec<HugePool>,
}

/// A hugetlb pool of one page size, counted in pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HugePool {
    pub page_size_bytes: u64,
    pub total: u64,
    pub free: u64,
}

/// Performance the firmware (ACPI HMAT) reports for reaching one memory
/// target node from its best initiators in one access class.
///
/// Values are passed through from the kernel's
/// `nodeN/accessK/initiators/` files; a value the firmware did not supply
/// (the kernel writes 0) is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HmatEntry {
    pub target_node: u32,
    /// 0 for `access0` (best initiators of any kind, CPUs or generic
    /// initiators such as accelerators), 1 for `access1` (best CPU
    /// initiators only).
    pub access_class: u8,
    /// Nodes whose initiators get this performance.
    pub initiators: Vec<u32>,
    pub read_latency_ns: Option<u64>,
    pub write_latency_ns: Option<u64>,
    /// Megabytes (10^6 bytes) per second, as ACPI defines the HMAT unit.
    pub read_bandwidth_mb_s: Option<u64>,
    pub write_bandwidth_mb_s: Option<u64>,
}
