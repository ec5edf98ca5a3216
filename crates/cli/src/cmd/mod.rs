//! One module per subcommand.

pub mod bandwidth;
mod common;
pub mod latency;
pub mod list;
pub mod loaded;
pub mod run;
pub mod stream;
pub mod topology;
