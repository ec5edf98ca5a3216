//! `memfabric fleet`: many hosts' runs in one store (`ingest`, or `run` through
//! Slurm) and judged together against their hardware classes (`report`). The work
//! is `memfabric_fleet`'s; these modules turn flags into its calls and its results
//! into text.

use anyhow::Result;
use memfabric_fleet::FleetError;

use crate::args::{FleetAction, FleetArgs};
use crate::output::{Ctx, Interrupted, Status, Usage};

mod campaign;
pub mod ingest;
pub mod report;

pub fn run(ctx: &Ctx, a: &FleetArgs) -> Result<Status> {
    match &a.action {
        FleetAction::Ingest(i) => ingest::ingest(ctx, i),
        FleetAction::Report(r) => report::report(ctx, r),
        FleetAction::Run(r) => campaign::run(ctx, r),
    }
}

/// A fleet error as the exit status it stands for: bad input exits 2; a stop
/// signal says what was kept, then exits 128 + signal.
pub fn exit_error(e: FleetError) -> anyhow::Error {
    match e {
        FleetError::Usage(m) => Usage(m).into(),
        FleetError::Interrupted { signal, text } => {
            eprintln!("memfabric: {text}");
            Interrupted(signal).into()
        }
        e => e.into(),
    }
}
