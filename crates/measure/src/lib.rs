//! memfabric's measurement core: placement, kernels and timing. It never prints; it
//! reports progress to an [`Observer`] and returns plain results from memfabric-model.

pub mod audit;
pub mod bandwidth;
mod bandwidth_plan;
pub mod c2c;
pub mod c2c_plan;
pub mod domains;
pub mod efficiency;
pub mod env;
pub mod firmware;
pub mod latency;
pub mod levels;
pub mod loaded;
pub mod loaded_plan;
pub mod measurement;
pub mod monitor;
pub mod noise;
pub mod observer;
pub mod order;
pub mod placement;
pub mod plan;
pub mod registry;
pub mod stream;
pub mod sweep;
pub mod sweep_levels;
pub mod sweep_plan;
pub mod sys;
pub mod team;
pub mod theory;

pub use measurement::{measure, Measurement, Request};
pub use observer::{Observer, Silent};

/// Unit tests that run real measurements take turns: on a 2-CPU machine two of them
/// at once (each pinning spinning threads to the same CPUs) measure each other, and a
/// ping-pong whose partner is descheduled crawls at one handoff per time slice.
#[cfg(test)]
pub(crate) fn measuring() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}
