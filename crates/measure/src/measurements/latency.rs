//! Idle latency: one pinned CPU follows a dependent pointer chase through a buffer on
//! one node, one 64-byte line per load, so each load waits for the one before it.

use std::time::{Duration, Instant};

use memfabric_model::{
    HugePages, LatencyCell, LatencyMeasurement, LatencyReport, Outcome, Pattern, Placement, Summary,
};

use crate::kernels::{chase, chase_count_cycle, link_chase, Chain};
use crate::observer::{interrupted, Observer};
use crate::order::successors;
use crate::placement::{allocate_verified, pin, Target};

/// One cell: a CPU (on `cpu_node`) chasing through memory on `mem_node`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LatencyCellSpec {
    pub cpu: u32,
    pub cpu_node: u32,
    pub mem_node: u32,
}

/// A validated latency measurement, resolved against the topology (see `plan`).
#[derive(Debug, Clone)]
pub struct LatencyPlan {
    pub cells: Vec<LatencyCellSpec>,
    pub cpu_nodes: Vec<u32>,
    pub mem_nodes: Vec<u32>,
    pub size_bytes: u64,
    /// A multiple of 64 bytes.
    pub stride_bytes: u64,
    /// page-random: a multiple of the stride. It stays the same whatever the page
    /// size, so that the pattern means the same thing with huge pages.
    pub window_bytes: u64,
    pub pattern: Pattern,
    pub huge_pages: HugePages,
    pub samples: usize,
    pub sample_time: Duration,
    pub seed: u64,
    /// Memory spread over these nodes instead of each cell's `mem_node` (which is
    /// then the set's first node).
    pub interleave: Option<memfabric_model::Interleave>,
}

pub fn run(plan: &LatencyPlan, obs: &dyn Observer) -> LatencyReport {
    obs.begin("latency", plan.cells.len() as u64);
    let mut cells = Vec::with_capacity(plan.cells.len());
    for spec in &plan.cells {
        let outcome = if obs.cancelled() {
            interrupted()
        } else {
            std::thread::scope(|s| {
                s.spawn(|| measure_cell(plan, spec, obs))
                    .join()
                    .unwrap_or_else(|_| Outcome::Failed {
                        reason: "measuring thread panicked".into(),
                    })
            })
        };
        let to = Target::of(plan.interleave.as_ref(), spec.mem_node);
        obs.advance(&format!("cpu {} -> {}", spec.cpu, to.label()));
        cells.push(LatencyCell {
            cpu: spec.cpu,
            cpu_node: spec.cpu_node,
            mem_node: spec.mem_node,
            outcome,
        });
    }
    obs.finish();
    LatencyReport {
        pattern: plan.pattern,
        huge_pages: plan.huge_pages,
        size_bytes: plan.size_bytes,
        stride_bytes: plan.stride_bytes,
        window_bytes: (plan.pattern == Pattern::PageRandom).then_some(plan.window_bytes),
        seed: plan.seed,
        cpu_nodes: plan.cpu_nodes.clone(),
        mem_nodes: plan.mem_nodes.clone(),
        cells,
        firmware: None,
        interleave: plan.interleave.clone(),
    }
}

/// What a chase needs besides the CPU and node: its shape and pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChaseShape {
    pub size_bytes: u64,
    pub stride_bytes: u64,
    pub window_bytes: u64,
    pub pattern: Pattern,
    pub huge_pages: HugePages,
    pub seed: u64,
}

impl LatencyPlan {
    pub fn shape(&self) -> ChaseShape {
        ChaseShape {
            size_bytes: self.size_bytes,
            stride_bytes: self.stride_bytes,
            window_bytes: self.window_bytes,
            pattern: self.pattern,
            huge_pages: self.huge_pages,
            seed: self.seed,
        }
    }
}

/// A chase ready to be timed: built on its node by the calling thread (pinned to
/// `cpu` here), its placement verified and its cycle walked once (the warm-up).
pub struct ReadyChase {
    pub chain: Chain,
    pub placement: Placement,
    pub visited: u64,
}

/// Why a chase could not be made ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    Failed(String),
    Interrupted,
}

impl NotReady {
    /// The outcome to report instead of a measurement.
    pub fn outcome<T>(self) -> Outcome<T> {
        match self {
            NotReady::Failed(reason) => Outcome::Failed { reason },
            NotReady::Interrupted => interrupted(),
        }
    }
}

/// Pins the calling thread to `cpu`, then builds and validates the chase at `target`.
pub fn prepare_chase(
    cpu: u32,
    target: &Target,
    shape: &ChaseShape,
    obs: &dyn Observer,
) -> Result<ReadyChase, NotReady> {
    let failed = NotReady::Failed;
    let affinity = pin(cpu).map_err(|e| failed(e.to_string()))?;
    let (buf, placement) =
        allocate_verified(shape.size_bytes as usize, target, shape.huge_pages, affinity).map_err(failed)?;
    let stride = shape.stride_bytes as usize;
    // The chase covers size_bytes, not the whole (page-rounded) mapping: a 20 KiB chase
    // stays 20 KiB, with 4 KiB pages as with 1 GiB ones.
    let elements = (shape.size_bytes as usize).min(buf.len()) / stride;
    let per_window = (shape.window_bytes / shape.stride_bytes) as usize;
    let succ = successors(shape.pattern, elements, per_window, shape.seed);
    let Ok(chain) = link_chase(buf, &succ, stride) else {
        return Err(failed("internal error: chase order is not a permutation".into()));
    };
    drop(succ);
    // The warm-up walk is also the proof that the chase is one cycle through every line.
    let visited = chase_count_cycle(&chain, &|| obs.cancelled()).ok_or(NotReady::Interrupted)?;
    if visited != chain.elements() {
        return Err(failed(format!(
            "chase returned to its start after {visited} of {} elements",
            chain.elements()
        )));
    }
    Ok(ReadyChase {
        chain,
        placement,
        visited,
    })
}

impl ReadyChase {
    /// Takes `samples` samples of about `sample_time` each (stopping early if the
    /// observer cancels); returns ns per load of each, and the loads per sample.
    pub fn sample(&self, samples: usize, sample_time: Duration, obs: &dyn Observer) -> (Vec<f64>, u64) {
        let (loads, mut p) = calibrate(&self.chain, sample_time);
        let mut samples_ns = Vec::with_capacity(samples);
        for _ in 0..samples {
            if obs.cancelled() {
                break;
            }
            let t = Instant::now();
            p = chase(&self.chain, p, loads);
            samples_ns.push(t.elapsed().as_nanos() as f64 / loads as f64);
        }
        std::hint::black_box(p);
        (samples_ns, loads)
    }

    /// The measurement of these samples, or interrupted if there are none.
    pub fn measurement_of(&self, samples_ns: Vec<f64>, loads: u64) -> Outcome<LatencyMeasurement> {
        match Summary::of(&samples_ns) {
            Some(latency_ns) => Outcome::Ok(LatencyMeasurement {
                latency_ns,
                samples_ns,
                loads_per_sample: loads,
                cycle_verified_elements: self.visited,
                placement: self.placement.clone(),
                noise: None,
            }),
            None => interrupted(),
        }
    }
}

/// Runs on its own thread, which it pins: the caller's affinity is left alone.
fn measure_cell(
    plan: &LatencyPlan,
    spec: &LatencyCellSpec,
    obs: &dyn Observer,
) -> Outcome<LatencyMeasurement> {
    let target = Target::of(plan.interleave.as_ref(), spec.mem_node);
    match prepare_chase(spec.cpu, &target, &plan.shape(), obs) {
        Ok(ready) => {
            let (samples_ns, loads) = ready.sample(plan.samples, plan.sample_time, obs);
            ready.measurement_of(samples_ns, loads)
        }
        Err(e) => e.outcome(),
    }
}

/// Chases ever longer runs until one lasts a tenth of the sample time, then scales the
/// load count to fill a sample. These runs are discarded: they are the warm-up.
/// Returns the loads per sample and where the chase stopped.
fn calibrate(chain: &Chain, sample_time: Duration) -> (u64, *const u8) {
    let mut loads = 4096;
    let mut p = chain.start();
    loop {
        let t = Instant::now();
        p = chase(chain, p, loads);
        let ns = t.elapsed().as_nanos() as f64;
        if ns * 10.0 >= sample_time.as_nanos() as f64 || loads >= 1 << 30 {
            return (loads_per_sample(sample_time, ns / loads as f64), p);
        }
        loads *= 4;
    }
}

/// Enough loads to fill the sample time at the measured pace; at least 4096 so the
/// clock's own cost (tens of ns) stays below 1 % even for L1-resident chases.
fn loads_per_sample(sample_time: Duration, ns_per_load: f64) -> u64 {
    let n = (sample_time.as_nanos() as f64 / ns_per_load.max(0.01)) as u64;
    n.clamp(4096, 1 << 34).next_multiple_of(8)
}

/// `memfabric latency`.
pub struct Latency;

impl crate::measurement::Measurement for Latency {
    const ENTRY: crate::registry::Entry = crate::registry::LATENCY;
    type Options = crate::measurement::Request<crate::plan::LatencyOptions>;
    type Plan = crate::measurement::Checked<LatencyPlan>;
    type Report = LatencyReport;

    fn plan(m: &crate::plan::Machine, o: &Self::Options) -> Result<Self::Plan, crate::plan::PlanError> {
        o.check(|sel, opt| crate::plan::latency_plan(m, sel, opt))
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> LatencyReport {
        run(&p.plan, obs)
    }

    fn enrich(r: &mut LatencyReport, p: &Self::Plan, m: &crate::plan::Machine) {
        let conditions = m.conditions();
        memfabric_analysis::noise::annotate_latency(r, m.topo, &conditions, p.threshold_cv);
        // Firmware figures are per node pair; an interleave is no one pair.
        if r.interleave.is_none() {
            r.firmware = memfabric_analysis::firmware::compare_latency(r, m.topo);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_sizing() {
        assert_eq!(loads_per_sample(Duration::from_millis(10), 100.0), 100_000);
        assert_eq!(loads_per_sample(Duration::from_micros(1), 100.0), 4096);
    }
}
