//! `memfabric bandwidth`: access mixes per CPU node x memory node, and `--per-domain`.

use serde::{Deserialize, Serialize};

use crate::common::{HugePages, Noise, Outcome, Placement};
use crate::mix::Mix;
use crate::stats::Summary;

/// Bandwidth from the CPUs of one node to memory on one node, for one or more access
/// mixes and thread counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthReport {
    /// Instruction set of the kernels chosen at run time, e.g. "avx512".
    pub kernel: String,
    pub huge_pages: HugePages,
    /// Bytes of each array a thread owns (a mix uses `MixInfo::arrays` of them).
    pub array_bytes_per_thread: u64,
    /// The mixes measured, in the order of the cells, with how each counts bytes.
    pub mixes: Vec<MixInfo>,
    pub cpu_nodes: Vec<u32>,
    pub mem_nodes: Vec<u32>,
    /// Threads per cell, as asked with --threads; empty when every CPU of the node ran.
    pub thread_counts: Vec<usize>,
    /// Ordered by mix, then (CPU node, memory node), then thread count.
    pub cells: Vec<BandwidthCell>,
    /// Firmware (SLIT/HMAT) figures beside the measured ones; `None` where the
    /// firmware publishes nothing for these cells.
    #[serde(default)]
    pub firmware: Option<crate::theory::FirmwareComparison>,
    /// Whether the cells' DRAM traffic was counted by the memory controllers.
    #[serde(default)]
    pub dram_counting: crate::common::DramCounting,
    /// Why no share of the theoretical peak is given, where none is (no SMBIOS, a
    /// DIMM speed not readable without root...); absent when shares are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_unknown: Option<String>,
    /// Set where a working set fits in the last-level cache of its CPUs: what the
    /// figures then describe, and the size that measures memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_caveat: Option<String>,
    /// `--interleave`: every cell's memory was spread over these nodes (its placement
    /// holds the shares found), and `mem_nodes` / `mem_node` name the set's first node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<crate::Interleave>,
}

/// One access mix and how its bytes are counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixInfo {
    pub mix: Mix,
    pub description: String,
    /// Arrays each thread allocates for it.
    pub arrays: u64,
    /// Bytes counted per element (8-byte double) of one array: read plus written.
    pub bytes_per_element: u64,
    pub non_temporal: bool,
    pub byte_counting: String,
}

impl MixInfo {
    pub fn of(mix: Mix) -> MixInfo {
        MixInfo {
            mix,
            description: mix.describe().into(),
            arrays: mix.arrays(),
            bytes_per_element: mix.bytes_per_element(),
            non_temporal: mix.non_temporal(),
            byte_counting: mix.byte_counting(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthCell {
    pub mix: Mix,
    pub cpu_node: u32,
    pub mem_node: u32,
    /// One thread per CPU listed, each with its own arrays.
    pub cpus: Vec<u32>,
    pub outcome: Outcome<BandwidthMeasurement>,
    /// The median's share of the path's theoretical peak, where one is known.
    #[serde(default)]
    pub efficiency: Option<crate::theory::Efficiency>,
}

impl BandwidthCell {
    /// How text names the cell: "copy node 0 -> node 1, 4 threads".
    pub fn label(&self) -> String {
        format!(
            "{} node {} -> node {}, {} threads",
            self.mix,
            self.cpu_node,
            self.mem_node,
            self.cpus.len()
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthMeasurement {
    pub bandwidth_gb_s: Summary,
    /// GB/s (10^9 bytes per second) of every thread together, one value per sample.
    pub samples_gb_s: Vec<f64>,
    /// Bytes all threads move in one sample, counted as the mix says.
    pub bytes_per_sample: u64,
    /// Elements of the written arrays checked after timing, as STREAM checks its
    /// arrays; 0 for a mix that writes nothing.
    pub validated_elements: u64,
    /// One entry per thread, in the order of `cpus`.
    pub placement: Vec<Placement>,
    /// Set when the samples spread more than the noise threshold allows.
    pub noise: Option<Noise>,
    /// Memory-controller traffic over the timed samples, where a counter source is
    /// available (see `memfabric monitor`).
    #[serde(default)]
    pub dram: Option<crate::DramTraffic>,
}

/// How much bandwidth each L3 domain draws alone, and how the total grows as domains
/// join one by one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainScalingReport {
    pub mix: MixInfo,
    pub kernel: String,
    pub huge_pages: HugePages,
    pub array_bytes_per_thread: u64,
    /// The fabric clock the user gave, for bytes per fabric cycle.
    pub fclk_mhz: Option<f64>,
    /// Each domain measured alone, every one of its CPUs reading.
    pub alone: Vec<DomainBandwidth>,
    /// Domains 1, 1+2, 1+2+3, ... measured together.
    pub cumulative: Vec<DomainBandwidth>,
    /// Whether the steps' DRAM traffic was counted by the memory controllers.
    #[serde(default)]
    pub dram_counting: crate::common::DramCounting,
    /// Why no share of the theoretical peak is given, where none is (no SMBIOS, a
    /// DIMM speed not readable without root...); absent when shares are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_unknown: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainBandwidth {
    /// Indexes into the topology's `l3_domains`.
    pub domains: Vec<usize>,
    pub cpus: Vec<u32>,
    /// Memory node of each thread's arrays, in the order of `cpus`.
    pub mem_nodes: Vec<u32>,
    pub outcome: Outcome<BandwidthMeasurement>,
    /// Median bytes per fabric clock cycle, when --fclk was given.
    pub bytes_per_fclk: Option<f64>,
    /// The median's share of the memory peak of the nodes read, where known.
    #[serde(default)]
    pub efficiency: Option<crate::theory::Efficiency>,
}
