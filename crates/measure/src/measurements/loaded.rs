//! Loaded latency: one CPU chases pointers through memory on a node while other CPUs
//! stream through their own arrays on the same node, throttled by a delay after every
//! 4 KiB of each array. Each throttle level gives one (bandwidth, latency) point:
//! the curve MLC draws with --loaded_latency. The spread mode instead adds the load one
//! L3 domain at a time at full speed, to show what busy neighbours do to a CPU.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use memfabric_model::{LatencyMeasurement, LoadStep, LoadedLatencyReport, Mix, MixInfo, Outcome};

use crate::bandwidth::{fill, op_of, KernelOptions, SCALAR};
use crate::kernels::{run_pass_range, Pass, BLOCK_ELEMENTS};
use crate::latency::{prepare_chase, ChaseShape, ReadyChase};
use crate::observer::{interrupted, Observer};
use crate::team::{Arrays, Member};

/// One load thread and the step from which it runs (0: from the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadThread {
    pub member: Member,
    pub from_step: usize,
}

/// What each step loads: all threads with `from_step <= step`, throttled by `delay`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub delay_spins: u64,
    /// The L3 domains whose threads run (spread mode), for the report.
    pub domains: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct LoadedPlan {
    pub latency_cpu: u32,
    pub latency_domain: Option<usize>,
    pub mem_node: u32,
    pub shape: ChaseShape,
    pub samples: usize,
    pub sample_time: Duration,
    pub load: Vec<LoadThread>,
    pub mix: Mix,
    pub kernel: KernelOptions,
    pub steps: Vec<Step>,
    /// Steps add domains one by one at full speed rather than lower a delay.
    pub spread: bool,
    /// How long the load runs at each step before the latency is sampled.
    pub settle: Duration,
}

/// Delays of the default throttle curve: none, then 1, 2, 4, ... spin-loop hints.
pub fn delay_levels(points: usize) -> Vec<u64> {
    (0..points)
        .map(|k| {
            if k == 0 {
                0
            } else {
                1u64.checked_shl(k as u32 - 1).unwrap_or(u64::MAX)
            }
        })
        .collect()
}

/// Elements of each array run between two delays: 4 KiB, so the cost of a call stays
/// small beside the delay.
const THROTTLE_ELEMENTS: usize = 8 * BLOCK_ELEMENTS;
/// Elements of each array per call at full speed (32 KiB): the call costs nothing
/// beside it, and the byte counters move often enough for a short sampling window
/// (a few ms in an emulated guest).
const FULL_SPEED_ELEMENTS: usize = 4096;
/// `step` values that are not steps.
const IDLE: usize = usize::MAX;
const STOP: usize = usize::MAX - 1;

/// What the load threads read: the current step, its delay, and where bytes are counted.
struct Control {
    step: AtomicUsize,
    delay: AtomicU64,
    bytes: Vec<AtomicU64>,
    failed: AtomicBool,
    ready: Barrier,
}

pub fn run(plan: &LoadedPlan, obs: &dyn Observer) -> LoadedLatencyReport {
    obs.begin("loaded latency", plan.steps.len() as u64 + 1);
    let spin_ns = spin_cost_ns();
    let control = Control {
        step: AtomicUsize::new(IDLE),
        delay: AtomicU64::new(0),
        bytes: plan.load.iter().map(|_| AtomicU64::new(0)).collect(),
        failed: AtomicBool::new(false),
        ready: Barrier::new(plan.load.len() + 1),
    };
    let (idle, steps) = std::thread::scope(|s| {
        for (t, load) in plan.load.iter().enumerate() {
            let control = &control;
            s.spawn(move || load_thread(plan, t, load, control));
        }
        let coordinator = s.spawn(|| coordinate(plan, &control, spin_ns, obs));
        let result = coordinator.join();
        control.step.store(STOP, Ordering::SeqCst);
        result.unwrap_or_else(|_| {
            let failed = Outcome::Failed {
                reason: "latency thread panicked".into(),
            };
            (failed, Vec::new())
        })
    });
    obs.finish();
    LoadedLatencyReport {
        latency_cpu: plan.latency_cpu,
        latency_domain: plan.latency_domain,
        mem_node: plan.mem_node,
        load_cpus: plan.load.iter().map(|l| l.member.cpu).collect(),
        load_mem_nodes: if plan.load.iter().all(|l| l.member.mem_node == plan.mem_node) {
            Vec::new()
        } else {
            plan.load.iter().map(|l| l.member.mem_node).collect()
        },
        mix: MixInfo::of(plan.mix),
        kernel: plan.kernel.isa.name().into(),
        huge_pages: plan.kernel.huge_pages,
        array_bytes_per_thread: plan.kernel.array_bytes,
        chase_size_bytes: plan.shape.size_bytes,
        pattern: plan.shape.pattern,
        spin_ns,
        spread: plan.spread,
        idle,
        steps,
        cache_caveat: None,
    }
}

type Coordinated = (Outcome<LatencyMeasurement>, Vec<LoadStep>);

/// The latency thread: builds its chase, waits for the load threads' arrays, then
/// walks the steps, sampling latency while the load runs and counting its bytes.
fn coordinate(plan: &LoadedPlan, control: &Control, spin_ns: f64, obs: &dyn Observer) -> Coordinated {
    let ready = prepare_chase(
        plan.latency_cpu,
        &crate::placement::Target::Node(plan.mem_node),
        &plan.shape,
        obs,
    );
    if ready.is_err() {
        control.failed.store(true, Ordering::SeqCst);
    }
    control.ready.wait();
    let chase = match ready {
        Ok(c) => c,
        Err(e) => return (e.outcome(), Vec::new()),
    };
    if control.failed.load(Ordering::SeqCst) {
        let reason = "a load thread could not set up its arrays (see its CPU and node)".to_string();
        return (Outcome::Failed { reason }, Vec::new());
    }
    let idle = sample(plan, &chase, obs);
    obs.advance("idle");
    let mut steps = Vec::with_capacity(plan.steps.len());
    for (k, step) in plan.steps.iter().enumerate() {
        if obs.cancelled() {
            break;
        }
        control.delay.store(step.delay_spins, Ordering::SeqCst);
        control.step.store(k, Ordering::SeqCst);
        std::thread::sleep(plan.settle);
        let before = total(&control.bytes);
        let t = Instant::now();
        let latency = sample(plan, &chase, obs);
        let bytes = total(&control.bytes) - before;
        let seconds = t.elapsed().as_secs_f64();
        let cpus = plan
            .load
            .iter()
            .filter(|l| l.from_step <= k)
            .map(|l| l.member.cpu)
            .collect();
        steps.push(LoadStep {
            delay_spins: step.delay_spins,
            delay_ns: step.delay_spins as f64 * spin_ns,
            domains: step.domains.clone(),
            load_cpus: cpus,
            load_bandwidth_gb_s: bytes as f64 / seconds * 1e-9,
            latency,
            efficiency: None,
        });
        obs.advance(&format!("step {} of {}", k + 1, plan.steps.len()));
    }
    control.step.store(IDLE, Ordering::SeqCst);
    if steps.len() < plan.steps.len() {
        return (interrupted(), steps);
    }
    (idle, steps)
}

fn sample(plan: &LoadedPlan, chase: &ReadyChase, obs: &dyn Observer) -> Outcome<LatencyMeasurement> {
    chase.measurement_of(chase.sample(plan.samples, plan.sample_time, obs))
}

fn total(counters: &[AtomicU64]) -> u64 {
    counters.iter().map(|c| c.load(Ordering::Relaxed)).sum()
}

/// A load thread: sets up its arrays, then runs its mix whenever the current step
/// includes it, counting the bytes it moves, until told to stop.
fn load_thread(plan: &LoadedPlan, t: usize, load: &LoadThread, control: &Control) {
    let elements = (plan.kernel.array_bytes / 8) as usize;
    let (op, non_temporal) = op_of(plan.mix);
    let arrays = Arrays::new(load.member, op.arrays(), elements, plan.kernel.huge_pages);
    let mut arrays = match arrays {
        Ok(mut a) => {
            fill(plan.mix, &mut a.slices());
            Some(a)
        }
        Err(_) => {
            control.failed.store(true, Ordering::SeqCst);
            None
        }
    };
    control.ready.wait();
    let Some(arrays) = arrays.as_mut() else { return };
    let mut slices = arrays.slices();
    let pass = Pass {
        op,
        isa: plan.kernel.isa,
        non_temporal,
        scalar: SCALAR,
    };
    let per_element = plan.mix.bytes_per_element();
    let mut at = 0;
    loop {
        let step = control.step.load(Ordering::Relaxed);
        if step == STOP {
            return;
        }
        if step == IDLE || step < load.from_step {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        let delay = control.delay.load(Ordering::Relaxed);
        let chunk = if delay == 0 {
            FULL_SPEED_ELEMENTS
        } else {
            THROTTLE_ELEMENTS
        };
        let n = chunk.min(elements - at);
        std::hint::black_box(run_pass_range(&pass, &mut slices, at, n));
        for _ in 0..delay {
            std::hint::spin_loop();
        }
        control.bytes[t].fetch_add(n as u64 * per_element, Ordering::Relaxed);
        at = if at + n >= elements { 0 } else { at + n };
    }
}

/// Nanoseconds one spin-loop hint takes on this CPU (a PAUSE costs from a few cycles
/// to over a hundred, depending on the core), so delays can be stated in time. The
/// fastest of several short runs, so a preempted run does not inflate it.
pub fn spin_cost_ns() -> f64 {
    const SPINS: u32 = 20_000;
    (0..10)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..SPINS {
                std::hint::spin_loop();
            }
            t.elapsed().as_nanos() as f64 / f64::from(SPINS)
        })
        .fold(f64::INFINITY, f64::min)
}

/// `memfabric loaded-latency`.
pub struct LoadedLatency;

impl crate::measurement::Measurement for LoadedLatency {
    type Options = crate::measurement::Request<crate::plan::loaded::LoadedOptions>;
    type Plan = crate::measurement::Checked<LoadedPlan>;
    type Report = LoadedLatencyReport;

    fn plan(m: &crate::plan::Machine, o: &Self::Options) -> Result<Self::Plan, crate::plan::PlanError> {
        o.check(|_, opt| crate::plan::loaded::loaded_plan(m, opt))
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> LoadedLatencyReport {
        run(&p.plan, obs)
    }

    fn enrich(r: &mut LoadedLatencyReport, p: &Self::Plan, m: &crate::plan::Machine) {
        let conditions = m.conditions();
        memfabric_analysis::noise::annotate_loaded(r, m.topo, &conditions, p.threshold_cv);
        crate::efficiency::annotate_loaded(r, m.topo);
        memfabric_analysis::caches::annotate_loaded(r, m.topo);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_go_from_none_to_doubling_delays() {
        assert_eq!(delay_levels(5), [0, 1, 2, 4, 8]);
        assert_eq!(delay_levels(16).len(), 16);
        assert_eq!(delay_levels(16)[15], 1 << 14);
    }

    #[test]
    fn spin_cost_is_measured_and_finite() {
        let ns = spin_cost_ns();
        assert!(ns > 0.0 && ns < 10_000.0, "{ns}");
    }
}
