//! `memfabric loaded-latency`: one CPU's latency while others load the memory.

use serde::{Deserialize, Serialize};

use crate::bandwidth::MixInfo;
use crate::common::{HugePages, Outcome, Pattern};
use crate::latency::LatencyMeasurement;

/// Latency of one CPU while other CPUs load the same memory: the idle figure, then one
/// point per throttle level (or per added L3 domain in spread mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedLatencyReport {
    pub latency_cpu: u32,
    /// The latency CPU's L3 domain (index into the topology's `l3_domains`).
    pub latency_domain: Option<usize>,
    /// The chase's node, and the load threads' too unless `load_mem_nodes` says otherwise.
    pub mem_node: u32,
    /// Every CPU that runs load in some step.
    pub load_cpus: Vec<u32>,
    /// The node of each load CPU's arrays, in the order of `load_cpus`; empty when all
    /// are on `mem_node` (`--load-mem-nodes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_mem_nodes: Vec<u32>,
    pub mix: MixInfo,
    pub kernel: String,
    pub huge_pages: HugePages,
    pub array_bytes_per_thread: u64,
    pub chase_size_bytes: u64,
    pub pattern: Pattern,
    /// Measured cost of one spin-loop hint, the unit of the delays.
    pub spin_ns: f64,
    /// Steps add L3 domains at full speed instead of lowering a delay.
    pub spread: bool,
    /// Latency with every load thread idle.
    pub idle: Outcome<LatencyMeasurement>,
    pub steps: Vec<LoadStep>,
    /// Set where a working set fits in the last-level cache of its CPUs: what the
    /// figures then describe, and the size that measures memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_caveat: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadStep {
    /// Spin-loop hints each load thread waits after every 4 KiB of each array.
    pub delay_spins: u64,
    /// The same delay in ns (delay_spins x spin_ns).
    pub delay_ns: f64,
    /// L3 domains whose CPUs load in this step (spread mode; empty otherwise).
    pub domains: Vec<usize>,
    pub load_cpus: Vec<u32>,
    /// GB/s the load threads moved while the latency was sampled, counted as the mix
    /// counts bytes.
    pub load_bandwidth_gb_s: f64,
    pub latency: Outcome<LatencyMeasurement>,
    /// The load's share of the memory node's peak, where known.
    #[serde(default)]
    pub efficiency: Option<crate::theory::Efficiency>,
}
