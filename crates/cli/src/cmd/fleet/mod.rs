//! `memfabric fleet`: many hosts' runs in one store (`ingest`, or `run` through
//! Slurm) and judged together against their hardware classes (`report`).

use anyhow::Result;

use crate::args::{FleetAction, FleetArgs};
use crate::output::{Ctx, Status};

mod campaign;
pub mod ingest;
pub mod report;
mod slurm;
mod suite;

pub fn run(ctx: &Ctx, a: &FleetArgs) -> Result<Status> {
    match &a.action {
        FleetAction::Ingest(i) => ingest::ingest(ctx, i),
        FleetAction::Report(r) => report::report(ctx, r),
        FleetAction::Run(r) => campaign::run(ctx, r),
    }
}
