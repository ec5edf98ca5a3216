//! memfabric's measurement core: placement, kernels and timing. It never prints; it
//! reports progress to an [`Observer`] and returns plain results from memfabric-model.

pub mod bandwidth;
pub mod domains;
pub mod env;
pub mod latency;
pub mod loaded;
pub mod loaded_plan;
pub mod noise;
pub mod observer;
pub mod order;
pub mod placement;
pub mod plan;
pub mod registry;
pub mod stream;
pub mod sys;
pub mod team;

pub use observer::{Observer, Silent};
