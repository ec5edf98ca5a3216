//! memfabric's result model: plain serde types with units in field names and raw
//! samples kept beside every summary. Nothing here measures or prints.
//!
//! The JSON layout is versioned by [`SCHEMA_VERSION`] and documented in docs/JSON.md.

pub mod figures;
pub mod mix;
pub mod results;
pub mod stats;
pub mod tiers;
pub mod units;

pub use figures::{Figure, Figures};
pub use mix::{Mix, UnknownMix};
pub use results::*;
pub use stats::Summary;
pub use tiers::{latency_tiers, Tier, TierCell};
pub use units::{format_size, parse_size, SizeError};

/// Bumped whenever a field is renamed or removed, or its meaning changes.
/// Adding a field does not bump it.
pub const SCHEMA_VERSION: u32 = 2;
