//! `memfabric plan`: decide a memory population and a NUMA/link configuration
//! before buying or rebooting. The models live in memfabric_analysis::provision;
//! this reads the platform files and the machine, and prints.

mod check;
pub mod expect;
mod numa;
mod platforms;
mod population;

use anyhow::Result;
use memfabric_analysis::provision::ProvisionError;

use crate::args::{PlanAction, PlanArgs};
use crate::output::{Ctx, Status, Usage};

pub fn run(ctx: &Ctx, a: &PlanArgs) -> Result<Status> {
    match &a.action {
        PlanAction::Population(p) => population::run(ctx, p),
        PlanAction::Numa(n) => numa::run(ctx, n),
        PlanAction::Check(c) => check::run(ctx, c),
        PlanAction::Platforms => platforms::list(ctx),
    }
}

/// A question the platform cannot answer is bad input (exit 2).
fn usage(e: ProvisionError) -> anyhow::Error {
    Usage(e.to_string()).into()
}

/// GB/s with one decimal, or a dash.
fn gb(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.1}"))
}
