//! memfabric's result model: plain serde types with units in field names and raw
//! samples kept beside every summary. Nothing here measures or prints.
//!
//! The JSON layout is versioned by [`SCHEMA_VERSION`] and documented in docs/JSON.md.

#![forbid(unsafe_code)]

pub mod bandwidth;
pub mod c2c;
pub mod common;
pub mod concurrent;
pub mod document;
pub mod failures;
pub mod figures;
pub mod fleet;
pub mod gpu;
mod gpu_figures;
pub mod interleave;
pub mod latency;
pub mod loaded;
pub mod mix;
pub mod monitor;
pub mod noise;
pub mod run_parts;
pub mod settings;
pub mod stats;
pub mod stream;
pub mod study;
pub mod suite;
pub mod sweep;
pub mod theory;
pub mod tiers;
pub mod units;
pub mod validate;

pub use bandwidth::*;
pub use c2c::*;
pub use common::*;
pub use concurrent::{
    link_flows, overlap_pct, ConcurrentMeasurement, ConcurrentPattern, ConcurrentReport,
    ConcurrentStreamSpec, LinkFlow, StreamRate,
};
pub use document::{BandwidthShape, Document, DocumentError, StoredDocument};
pub use failures::{Failure, Failures};
pub use figures::{summarize, Figure, Figures};
pub use gpu::*;
pub use interleave::{Interleave, InterleaveShares};
pub use latency::*;
pub use loaded::*;
pub use mix::{Mix, UnknownMix};
pub use monitor::{
    CommandRun, DramTraffic, MonitorInterval, MonitorMeasurement, MonitorReport, SourceStatus, Traffic,
};
pub use noise::Noises;
pub use stats::Summary;
pub use stream::*;
pub use study::{study, Study, StudyRow, StudyRun};
pub use suite::{Cell, RunReport, Suite};
pub use sweep::{
    bandwidth_curve, latency_curve, Boundary, LevelComparison, Plateau, SweepBandwidthPoint,
    SweepBandwidthSetup, SweepLatencyPoint, SweepLatencySetup, SweepLevels, SweepPoint, SweepReport,
};
pub use theory::{
    AuditReport, ChannelPeak, Efficiency, Finding, FirmwareCell, FirmwareComparison, LinkPeak, MemoryPeak,
    PopulationClass, Severity, SocketClass, SocketPeak, TheoryReport,
};
pub use tiers::{latency_tiers, Tier, TierCell};
pub use units::{format_size, parse_size, SizeError};

/// Bumped whenever a field is renamed or removed, or its meaning changes.
/// Adding a field does not bump it.
pub const SCHEMA_VERSION: u32 = 2;
