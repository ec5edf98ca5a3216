//! A run's cells as documents of their own: the run assembled from one document per
//! cell, and each cell given back as one. Its figures, failures and noise flags walk
//! the cells this way, so a cell added to [`Cell::ALL`] is counted by all of them.

use crate::document::Document;
use crate::failures::{Failure, Failures};
use crate::noise::Noises;
use crate::suite::{Cell, RunReport, Suite};
use crate::{Figure, Figures, Noise};
use memfabric_topo::Topology;

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
            step_seconds: vec![],
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

/// Walks [`Cell::ALL`] as the figures and failures do, borrowing each part (the
/// parts as documents are copies): a cell added to the suite must be matched here.
impl Noises for RunReport {
    fn noises(&self) -> Vec<&Noise> {
        Cell::ALL
            .iter()
            .flat_map(|&cell| match cell {
                Cell::Latency => self.latency.noises(),
                Cell::Bandwidth => self.bandwidth.noises(),
                Cell::Mixes => self.mixes.noises(),
                Cell::Interleaved => self.interleaved.iter().flat_map(Noises::noises).collect(),
                Cell::AllRemote => self.all_remote.iter().flat_map(Noises::noises).collect(),
                Cell::LoadedLatency => self.loaded_latency.noises(),
                Cell::C2c => self.c2c.noises(),
                Cell::Sweep => self.sweep.noises(),
                Cell::GpuBandwidth => self.gpu_bandwidth.noises(),
                Cell::GpuCopy => self.gpu_copy.noises(),
            })
            .collect()
    }
}
