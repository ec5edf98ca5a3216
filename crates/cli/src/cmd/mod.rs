//! One module per subcommand.

pub mod audit;
pub mod bandwidth;
pub mod c2c;
pub mod common;
pub mod efficiency;
pub mod firmware;
pub mod fleet;
pub mod gpu;
pub mod helpers;
pub mod latency;
pub mod list;
pub mod loaded;
pub mod monitor;
pub mod plan;
pub mod report;
pub mod run;
pub mod runs;
pub mod stream;
pub mod study;
pub mod sweep;
pub mod theory;
pub mod topology;
