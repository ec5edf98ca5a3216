//! What a measurement is: three stages, each in the library that owns the
//! measurement, so the CLI only turns flags into options, calls [`measure`] and
//! prints the report.
//!
//! - plan: the options resolved against this machine (CPUs, nodes, sizes, pools);
//!   everything that can be known to fail is refused here, before a byte is
//!   allocated, as a [`PlanError`] (exit code 2).
//! - run: the plan carried out; never fails as a whole: each cell is an
//!   [`memfabric_model::Outcome`], ok, skipped or failed.
//! - enrich: what the machine's other facts say about the numbers: noise flags,
//!   share of the theoretical peak, firmware figures beside measured ones.

use memfabric_model::{Document, Failures, Figures};
use serde::Serialize;

use crate::plan::{Machine, PlanError, Selection};
use crate::Observer;

pub trait Measurement {
    /// What the user asked, syntax already checked, not yet held against the machine.
    type Options;
    /// The options resolved against the machine: ready to run.
    type Plan;
    type Report: Serialize + Figures + Failures + Into<Document>;

    fn plan(machine: &Machine, options: &Self::Options) -> Result<Self::Plan, PlanError>;

    fn run(plan: &Self::Plan, obs: &dyn Observer) -> Self::Report;

    /// Facts about the machine added to the report after the run; none by default.
    fn enrich(_report: &mut Self::Report, _plan: &Self::Plan, _machine: &Machine) {}
}

/// Plan, run, enrich.
pub fn measure<M: Measurement>(
    machine: &Machine,
    options: &M::Options,
    obs: &dyn Observer,
) -> Result<M::Report, PlanError> {
    let plan = M::plan(machine, options)?;
    let mut report = M::run(&plan, obs);
    M::enrich(&mut report, &plan, machine);
    Ok(report)
}

/// The coefficient of variation above which a result is flagged, from the
/// --cv-threshold percentage.
pub fn cv_threshold(pct: f64) -> Result<f64, PlanError> {
    if !(pct.is_finite() && pct > 0.0) {
        return Err(PlanError::BadValue(format!(
            "--cv-threshold must be a positive percentage, not {pct}"
        )));
    }
    Ok(pct / 100.0)
}

/// What a CPU measurement is asked besides its own options.
pub struct Request<O> {
    pub options: O,
    /// Which CPU and memory nodes. Latency, bandwidth and STREAM read it; c2c, sweep
    /// and loaded latency name their CPUs and node in their own options.
    pub selection: Selection,
    /// --cv-threshold: a result whose samples spread more is flagged as noisy.
    pub cv_threshold_pct: f64,
    /// The memory's peak as the user described it (--channels/--mts, --machine), for
    /// the bandwidth measurements' share of peak; None: from this machine's SMBIOS.
    pub memory_peak: Option<memfabric_model::MemoryPeak>,
}

/// A CPU measurement's plan, with what its enrich stage needs from the request:
/// the noise threshold, and the memory peak the user described.
#[derive(Debug)]
pub struct Checked<P> {
    pub plan: P,
    pub threshold_cv: f64,
    pub memory_peak: Option<memfabric_model::MemoryPeak>,
}

impl<O> Request<O> {
    /// Resolves the options with `plan` and checks the threshold.
    pub fn check<P>(
        &self,
        plan: impl FnOnce(&Selection, &O) -> Result<P, PlanError>,
    ) -> Result<Checked<P>, PlanError> {
        let plan = plan(&self.selection, &self.options)?;
        Ok(Checked {
            plan,
            threshold_cv: cv_threshold(self.cv_threshold_pct)?,
            memory_peak: self.memory_peak.clone(),
        })
    }
}
