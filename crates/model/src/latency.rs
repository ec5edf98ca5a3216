//! `memfabric latency`: idle latency by dependent pointer chase.

use serde::{Deserialize, Serialize};

use crate::common::{HugePages, Noise, Outcome, Pattern, Placement};
use crate::stats::Summary;

/// Idle latency: one pinned CPU chasing pointers through memory on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    pub pattern: Pattern,
    pub huge_pages: HugePages,
    pub size_bytes: u64,
    /// Distance between chase elements: 64 is one load per cache line.
    pub stride_bytes: u64,
    /// page-random only: the window inside which the order is random (4 KiB: a page).
    pub window_bytes: Option<u64>,
    /// Seed of the random permutation, so a chase can be rebuilt exactly.
    pub seed: u64,
    /// Row and column labels of the matrix (rows: CPU nodes, columns: memory nodes).
    pub cpu_nodes: Vec<u32>,
    pub mem_nodes: Vec<u32>,
    pub cells: Vec<LatencyCell>,
    /// Firmware (SLIT/HMAT) figures beside the measured ones; `None` where the
    /// firmware publishes nothing for these cells.
    #[serde(default)]
    pub firmware: Option<crate::theory::FirmwareComparison>,
    /// `--interleave`: every cell's memory was spread over these nodes (its placement
    /// holds the shares found), and `mem_nodes` / `mem_node` name the set's first node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<crate::Interleave>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyCell {
    pub cpu: u32,
    pub cpu_node: u32,
    pub mem_node: u32,
    pub outcome: Outcome<LatencyMeasurement>,
}

impl LatencyCell {
    /// How text names the cell: "cpu 2 -> node 1".
    pub fn label(&self) -> String {
        format!("cpu {} -> node {}", self.cpu, self.mem_node)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyMeasurement {
    pub latency_ns: Summary,
    /// Nanoseconds per load, one value per sample, in the order taken.
    pub samples_ns: Vec<f64>,
    /// Dependent loads timed per sample (calibrated to a sample time from the warm-up).
    pub loads_per_sample: u64,
    /// Samples taken again because the measuring thread ran for less than 95 % of the
    /// sample (another task, or the host of a guest, had its CPU): they timed the
    /// scheduler, not the memory. At most one retake per sample asked for.
    #[serde(default)]
    pub samples_retaken: u32,
    /// Samples kept although the thread lost its CPU in them, once the retakes ran
    /// out: their figures are too high, and `noise` says so.
    #[serde(default)]
    pub samples_preempted: u32,
    /// Elements the validating walk visited before returning to its start: equal to
    /// size_bytes / stride_bytes, so the chase is one cycle through every element.
    pub cycle_verified_elements: u64,
    pub placement: Placement,
    /// Set when the samples spread more than the noise threshold allows, or when
    /// samples were kept in which the thread lost its CPU.
    pub noise: Option<Noise>,
}
