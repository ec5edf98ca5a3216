//! memfabric's measurement core: placement, kernels and timing. It never prints; it
//! reports progress to an [`Observer`] and returns plain results from memfabric-model.

#![deny(unsafe_code)]

pub mod efficiency;
pub mod env;
#[allow(unsafe_code)]
pub mod kernels;
pub mod measurement;
mod measurements;
pub mod monitor;
pub mod observer;
pub mod order;
pub mod placement;
pub mod plan;
pub mod registry;
// Syscalls: with `kernels`, the only modules that may use unsafe code.
#[allow(unsafe_code)]
pub mod sys;
pub mod team;

pub use measurement::{measure, Measurement, Request};
pub use measurements::monitor::{MonitorOptions, MonitorTraffic};
pub use measurements::{bandwidth, c2c, concurrent, domains, latency, loaded, stream, sweep};
pub use observer::{Observer, Silent};

/// Unit tests that run real measurements take turns: on a 2-CPU machine two of them
/// at once (each pinning spinning threads to the same CPUs) measure each other, and a
/// ping-pong whose partner is descheduled crawls at one handoff per time slice.
#[cfg(test)]
pub(crate) fn measuring() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}
