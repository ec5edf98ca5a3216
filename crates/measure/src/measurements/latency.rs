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
use crate::sys::thread_cpu_ns;

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

/// A sample in which the measuring thread ran for less than this share of the wall
/// time lost its CPU (to another task, or in a guest to the host): it timed the
/// scheduler as well as the memory.
pub const MIN_CPU_SHARE: f64 = 0.95;

/// The samples of a chase: ns per load of each, the loads per sample, and how many
/// were retaken, or kept, although the thread lost its CPU in them.
#[derive(Debug, Clone, PartialEq)]
pub struct Taken {
    pub samples_ns: Vec<f64>,
    pub loads: u64,
    pub retaken: u32,
    pub preempted: u32,
}

/// Whether a sample of `wall_ns` in which the thread ran `cpu_ns` lost its CPU;
/// without a thread clock nothing can be told, and the sample is kept.
fn lost_the_cpu(wall_ns: f64, cpu_ns: Option<u64>) -> bool {
    cpu_ns.is_some_and(|c| (c as f64) < MIN_CPU_SHARE * wall_ns)
}

impl ReadyChase {
    /// Takes `samples` samples of about `sample_time` each (stopping early if the
    /// observer cancels). A sample in which the thread lost its CPU is taken again,
    /// up to `samples` retakes in all; after that such samples are kept and counted.
    pub fn sample(&self, samples: usize, sample_time: Duration, obs: &dyn Observer) -> Taken {
        let (loads, mut p) = calibrate(&self.chain, sample_time);
        let mut taken = Taken {
            samples_ns: Vec::with_capacity(samples),
            loads,
            retaken: 0,
            preempted: 0,
        };
        while taken.samples_ns.len() < samples && !obs.cancelled() {
            let cpu0 = thread_cpu_ns();
            let t = Instant::now();
            p = chase(&self.chain, p, loads);
            let wall_ns = t.elapsed().as_nanos() as f64;
            let cpu_ns = thread_cpu_ns().zip(cpu0).map(|(c1, c0)| c1.saturating_sub(c0));
            if lost_the_cpu(wall_ns, cpu_ns) {
                if (taken.retaken as usize) < samples {
                    taken.retaken += 1;
                    continue;
                }
                taken.preempted += 1;
            }
            taken.samples_ns.push(wall_ns / loads as f64);
        }
        std::hint::black_box(p);
        taken
    }

    /// The measurement of these samples, or interrupted if there are none.
    pub fn measurement_of(&self, taken: Taken) -> Outcome<LatencyMeasurement> {
        let Taken {
            samples_ns,
            loads,
            retaken,
            preempted,
        } = taken;
        match Summary::of(&samples_ns) {
            Some(latency_ns) => Outcome::Ok(LatencyMeasurement {
                latency_ns,
                samples_ns,
                loads_per_sample: loads,
                samples_retaken: retaken,
                samples_preempted: preempted,
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
            let taken = ready.sample(plan.samples, plan.sample_time, obs);
            ready.measurement_of(taken)
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

    #[test]
    fn a_sample_lost_the_cpu_when_the_thread_ran_under_95_percent_of_it() {
        assert!(lost_the_cpu(10e6, Some(9_400_000)));
        assert!(!lost_the_cpu(10e6, Some(9_600_000)));
        assert!(!lost_the_cpu(10e6, Some(10_000_100)));
        assert!(
            !lost_the_cpu(10e6, None),
            "without a thread clock, keep the sample"
        );
    }

    #[test]
    fn the_thread_clock_runs_while_the_thread_does() {
        let c0 = thread_cpu_ns().expect("Linux has CLOCK_THREAD_CPUTIME_ID");
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let ran = thread_cpu_ns().unwrap() - c0;
        assert!(ran > 1_000_000, "a 20 ms spin ran {ran} ns of CPU time");
    }
}
