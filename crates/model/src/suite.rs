//! `run`'s suite: the cells it measures, named once here. Running, the exit status,
//! the saved figures and the report all walk [`Cell::ALL`], so a cell added to the
//! suite is added to every one of them.

use memfabric_topo::Topology;
use serde::{Deserialize, Serialize};

use crate::{
    BandwidthReport, C2cReport, ConcurrentReport, GpuBandwidthReport, GpuCopyReport, LatencyReport,
    LoadedLatencyReport, StreamReport, SweepReport,
};

/// How much of the suite a run measures: `run --quick`, `run`, `run --thorough`.
/// The one spelling of a suite everywhere: the run document (`result.suite`), the
/// command line of `run`, and what `fleet run --suite` submits to every node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Suite {
    /// Buffer sizes still past most L3s, few samples: a first look.
    Quick,
    /// `run` without a flag.
    Default,
    /// Each command's own defaults, which follow the machine's cache sizes.
    Thorough,
}

impl Suite {
    pub const ALL: [Suite; 3] = [Suite::Quick, Suite::Default, Suite::Thorough];

    /// As the run document records it: quick, default or thorough.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Quick => "quick",
            Suite::Default => "default",
            Suite::Thorough => "thorough",
        }
    }

    /// As `fleet run --suite` calls it: quick, full (the default suite) or thorough.
    pub fn fleet_name(self) -> &'static str {
        match self {
            Suite::Default => "full",
            s => s.name(),
        }
    }

    /// The flag of `memfabric run` that selects it; none for the default suite.
    pub fn run_flag(self) -> Option<&'static str> {
        match self {
            Suite::Quick => Some("--quick"),
            Suite::Default => None,
            Suite::Thorough => Some("--thorough"),
        }
    }
}

/// One measurement of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Idle latency, every CPU node x memory node.
    Latency,
    /// Read bandwidth, every CPU node x memory node.
    Bandwidth,
    /// Every access mix, each node's own memory.
    Mixes,
    /// STREAM with every thread's memory interleaved over all nodes (NPS0-like);
    /// multi-node machines only.
    Interleaved,
    /// Every node reading another node's memory at once; multi-node machines only.
    AllRemote,
    LoadedLatency,
    C2c,
    Sweep,
    GpuBandwidth,
    GpuCopy,
}

impl Cell {
    /// In the order the suite runs them.
    pub const ALL: [Cell; 10] = [
        Cell::Latency,
        Cell::Bandwidth,
        Cell::Mixes,
        Cell::Interleaved,
        Cell::AllRemote,
        Cell::LoadedLatency,
        Cell::C2c,
        Cell::Sweep,
        Cell::GpuBandwidth,
        Cell::GpuCopy,
    ];

    /// Its field in the run's JSON document.
    pub fn name(self) -> &'static str {
        match self {
            Cell::Latency => "latency",
            Cell::Bandwidth => "bandwidth",
            Cell::Mixes => "mixes",
            Cell::Interleaved => "interleaved",
            Cell::AllRemote => "all_remote",
            Cell::LoadedLatency => "loaded_latency",
            Cell::C2c => "c2c",
            Cell::Sweep => "sweep",
            Cell::GpuBandwidth => "gpu_bandwidth",
            Cell::GpuCopy => "gpu_copy",
        }
    }

    /// Its heading in text and HTML.
    pub fn title(self) -> &'static str {
        match self {
            Cell::Latency => "Idle latency",
            Cell::Bandwidth => "Bandwidth",
            Cell::Mixes => "Bandwidth by access mix",
            Cell::Interleaved => "STREAM, memory interleaved over every node",
            Cell::AllRemote => "Every node reading remote memory at once",
            Cell::LoadedLatency => "Loaded latency",
            Cell::C2c => "Core-to-core latency",
            Cell::Sweep => "Cache hierarchy sweep",
            Cell::GpuBandwidth => "GPU memory bandwidth",
            Cell::GpuCopy => "Host-device copies",
        }
    }

    /// Measured only where there is more than one memory node: a one-node machine has
    /// nothing to interleave across and no remote memory.
    pub fn needs_nodes(self) -> bool {
        matches!(self, Cell::Interleaved | Cell::AllRemote)
    }

    /// The `measurement` of its saved figures, where it differs from the document's
    /// command (two cells are bandwidth documents).
    pub(crate) fn figure_measurement(self) -> Option<&'static str> {
        match self {
            Cell::Mixes => Some("bandwidth-mixes"),
            Cell::Interleaved => Some("stream-interleaved"),
            _ => None,
        }
    }
}

/// What `run` reports: the topology, then one result per cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub suite: Suite,
    /// The command line of each step, as a user would type it.
    pub steps: Vec<String>,
    /// Wall-clock seconds of each step, in the order of `steps` (what the run
    /// cost); absent in runs of memfabric before 0.6.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_seconds: Vec<f64>,
    pub topology: Topology,
    pub latency: LatencyReport,
    pub bandwidth: BandwidthReport,
    pub mixes: BandwidthReport,
    /// Absent on one-node machines, and in runs of memfabric before 0.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleaved: Option<StreamReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_remote: Option<ConcurrentReport>,
    pub loaded_latency: LoadedLatencyReport,
    pub c2c: C2cReport,
    pub sweep: SweepReport,
    /// Skipped, with why, where there is no NVIDIA driver or GPU.
    pub gpu_bandwidth: GpuBandwidthReport,
    pub gpu_copy: GpuCopyReport,
}
