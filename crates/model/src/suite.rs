//! `run`'s suite: the cells it measures, named once here. Running, the exit status,
//! the saved figures and the report all walk [`Cell::ALL`], so a cell added to the
//! suite is added to every one of them.

use memfabric_topo::Topology;
use serde::{Deserialize, Serialize};

use crate::document::Document;
use crate::failures::{Failure, Failures};
use crate::{
    BandwidthReport, C2cReport, ConcurrentReport, Figure, Figures, GpuBandwidthReport, GpuCopyReport,
    LatencyReport, LoadedLatencyReport, StreamReport, SweepReport,
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
    fn figure_measurement(self) -> Option<&'static str> {
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

/// A cell's result was not the kind of document the cell makes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("suite cell {cell} got a {got} document")]
pub struct WrongDocument {
    pub cell: &'static str,
    pub got: &'static str,
}

impl RunReport {
    /// Assembles the report from one document per cell, in any order.
    pub fn assemble(
        suite: Suite,
        steps: Vec<String>,
        topology: Topology,
        mut parts: Vec<(Cell, Document)>,
    ) -> Result<RunReport, WrongDocument> {
        let mut take = |cell: Cell| {
            let i = parts.iter().position(|(c, _)| *c == cell);
            i.map(|i| parts.swap_remove(i).1)
        };
        macro_rules! part {
            ($cell:expr, $variant:ident) => {
                match take($cell) {
                    Some(Document::$variant(r)) => r,
                    other => {
                        return Err(WrongDocument {
                            cell: $cell.name(),
                            got: other.as_ref().map_or("missing", Document::command),
                        })
                    }
                }
            };
        }
        macro_rules! optional {
            ($cell:expr, $variant:ident) => {
                match take($cell) {
                    None => None,
                    Some(Document::$variant(r)) => Some(r),
                    Some(other) => {
                        return Err(WrongDocument {
                            cell: $cell.name(),
                            got: other.command(),
                        })
                    }
                }
            };
        }
        Ok(RunReport {
            suite,
            steps,
            topology,
            latency: part!(Cell::Latency, Latency),
            bandwidth: part!(Cell::Bandwidth, Bandwidth),
            mixes: part!(Cell::Mixes, Bandwidth),
            interleaved: optional!(Cell::Interleaved, Stream),
            all_remote: optional!(Cell::AllRemote, BandwidthConcurrent),
            loaded_latency: part!(Cell::LoadedLatency, LoadedLatency),
            c2c: part!(Cell::C2c, C2c),
            sweep: part!(Cell::Sweep, Sweep),
            gpu_bandwidth: part!(Cell::GpuBandwidth, GpuBandwidth),
            gpu_copy: part!(Cell::GpuCopy, GpuCopy),
        })
    }

    /// A cell's result as a document of its own; None for a cell this run did not
    /// measure (see [`Cell::needs_nodes`]).
    pub fn part(&self, cell: Cell) -> Option<Document> {
        Some(match cell {
            Cell::Latency => Document::Latency(self.latency.clone()),
            Cell::Bandwidth => Document::Bandwidth(self.bandwidth.clone()),
            Cell::Mixes => Document::Bandwidth(self.mixes.clone()),
            Cell::Interleaved => Document::Stream(self.interleaved.clone()?),
            Cell::AllRemote => Document::BandwidthConcurrent(self.all_remote.clone()?),
            Cell::LoadedLatency => Document::LoadedLatency(self.loaded_latency.clone()),
            Cell::C2c => Document::C2c(self.c2c.clone()),
            Cell::Sweep => Document::Sweep(self.sweep.clone()),
            Cell::GpuBandwidth => Document::GpuBandwidth(self.gpu_bandwidth.clone()),
            Cell::GpuCopy => Document::GpuCopy(self.gpu_copy.clone()),
        })
    }

    /// The cells this run measured, each with its document, in suite order.
    pub fn parts(&self) -> Vec<(Cell, Document)> {
        Cell::ALL
            .iter()
            .filter_map(|&c| self.part(c).map(|d| (c, d)))
            .collect()
    }

    /// Every failed cell of every part, with the part it belongs to.
    pub fn failed_cells(&self) -> Vec<(Cell, Failure)> {
        self.parts()
            .into_iter()
            .flat_map(|(c, d)| d.failures().into_iter().map(move |f| (c, f)))
            .collect()
    }
}

impl Figures for RunReport {
    fn figures(&self) -> Vec<Figure> {
        let mut out = Vec::new();
        for (cell, doc) in self.parts() {
            for mut f in doc.figures() {
                if let Some(m) = cell.figure_measurement() {
                    f.measurement = m.into();
                }
                out.push(f);
            }
        }
        out
    }
}

impl Failures for RunReport {
    fn failures(&self) -> Vec<Failure> {
        self.failed_cells()
            .into_iter()
            .map(|(c, f)| Failure {
                cell: format!("{}: {}", c.name(), f.cell),
                reason: f.reason,
            })
            .collect()
    }
}
