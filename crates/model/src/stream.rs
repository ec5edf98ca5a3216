//! `memfabric stream`: STREAM 5.10's four kernels.

use serde::{Deserialize, Serialize};

use crate::common::{HugePages, Noise, Outcome, Placement};
use crate::stats::Summary;

/// STREAM's four kernels, timed and counted as STREAM 5.10 does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamReport {
    pub kernel: String,
    /// Stores were streaming (non-temporal) stores followed by a store fence.
    pub non_temporal: bool,
    pub huge_pages: HugePages,
    /// Elements of each of the three arrays, all threads together (STREAM_ARRAY_SIZE).
    pub array_elements: u64,
    pub bytes_per_element: u64,
    /// Passes of all four kernels; the first is not counted, as in STREAM (NTIMES).
    pub ntimes: usize,
    pub cpus: Vec<u32>,
    /// Memory node of each thread's part of the arrays, in the order of `cpus`.
    pub mem_nodes: Vec<u32>,
    pub outcome: Outcome<StreamMeasurement>,
    /// Why no share of the theoretical peak is given, where none is (no SMBIOS, a
    /// DIMM speed not readable without root...); absent when shares are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_unknown: Option<String>,
    /// `--interleave`: every thread's part of the arrays was spread over these nodes
    /// (each placement holds the shares found); `mem_nodes` hold the set's first node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<crate::Interleave>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamMeasurement {
    /// Copy, Scale, Add, Triad.
    pub functions: Vec<StreamFunction>,
    pub validation: StreamValidation,
    pub placement: Vec<Placement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamFunction {
    pub name: String,
    /// 16 for Copy and Scale, 24 for Add and Triad.
    pub bytes_per_element: u64,
    /// STREAM's "Best Rate": bytes over the shortest time.
    pub best_gb_s: f64,
    pub bandwidth_gb_s: Summary,
    pub samples_gb_s: Vec<f64>,
    pub avg_time_s: f64,
    pub min_time_s: f64,
    pub max_time_s: f64,
    pub noise: Option<Noise>,
    /// The best rate's share of the memory peak of the nodes holding the arrays, where known.
    #[serde(default)]
    pub efficiency: Option<crate::theory::Efficiency>,
}

/// STREAM's check: every element of a, b and c against the values the same sequence
/// of operations gives on scalars.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamValidation {
    pub passed: bool,
    /// Largest relative error allowed (STREAM: 1e-13 for doubles).
    pub epsilon: f64,
    /// Elements whose relative error is above epsilon, per array a, b, c.
    pub errors: [u64; 3],
    pub expected: [f64; 3],
}
