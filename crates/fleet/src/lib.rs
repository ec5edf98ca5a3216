//! Many hosts in one store: documents ingested from files ([`ingest`]), campaigns
//! that run `memfabric run` on every node through a [`Scheduler`] (Slurm, or a fake
//! in tests), the rule for which run stands for a host ([`hosts`]), and the suite a
//! campaign measures with ([`suite`]).
//!
//! This crate runs the scheduler's processes and writes the store; it never prints.
//! What a user should see while it works goes to an [`Observer`].

#![forbid(unsafe_code)]

use thiserror::Error;

pub mod campaign;
pub mod hosts;
pub mod ingest;
pub mod reader;
pub mod scheduler;
pub mod slurm;
pub mod suite;

pub use campaign::{Campaign, CampaignEnd, CampaignProgress};
pub use hosts::{backfill, campaign_report, conflicts, hosts, report};
pub use ingest::{ingest, sources, Ingested, Rejected, Source};
pub use scheduler::{Job, JobExit, Scheduler, Submitted};
pub use slurm::Slurm;

#[derive(Debug, Error)]
pub enum FleetError {
    /// Bad input: a name, a node list, a campaign that does not exist (exit 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Store(#[from] memfabric_store::StoreError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A record in the store that does not read back.
    #[error("{0}")]
    Damaged(String),
    /// The scheduler failed to do what was asked (a command that did not start).
    #[error("{0}")]
    Scheduler(String),
    /// The store failed in the middle of an ingest: what was stored before
    /// stays stored, counted in `text`.
    #[error("{error}; {text}")]
    StoreFailed {
        error: memfabric_store::StoreError,
        text: String,
    },
    /// A stop signal ended the work; what was done is kept and counted in the text.
    #[error("{text}")]
    Interrupted { signal: i32, text: String },
}

impl FleetError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> FleetError {
        let what = what.into();
        move |source| FleetError::Io { what, source }
    }
}

/// What a user should see of long work, and whether to stop it. No-op defaults.
pub trait Observer: Sync {
    /// A line worth telling (e.g. a one-time migration); the caller decides where.
    fn note(&self, _line: &str) {}
    /// A phase of `total` steps begins.
    fn begin(&self, _what: &str, _total: u64) {}
    /// One step is done.
    fn advance(&self, _label: &str) {}
    /// The phase is over.
    fn finish(&self) {}
    /// A campaign's state changed: a job ended, or 30 s passed.
    fn campaign(&self, _p: &CampaignProgress) {}
    /// The signal that asks the work to stop, once one came.
    fn stop_signal(&self) -> Option<i32> {
        None
    }
}

/// Observes nothing and never stops.
pub struct Silent;

impl Observer for Silent {}
