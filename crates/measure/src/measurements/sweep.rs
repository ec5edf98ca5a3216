//! The cache-hierarchy sweep: latency (a pointer chase) and bandwidth (an access mix)
//! against working-set size, from a few KiB to past the last-level cache, point by
//! point on a geometric grid; then the levels each curve shows, set beside the caches
//! the topology reports. The plan is made in `sweep_plan`.

use std::time::Duration;

use memfabric_model::{
    format_size, HugePages, Mix, MixInfo, Outcome, Pattern, SweepBandwidthPoint, SweepBandwidthSetup,
    SweepLatencyPoint, SweepLatencySetup, SweepPoint, SweepReport,
};
use memfabric_topo::Topology;

use crate::bandwidth::{measure_passes, round_array_bytes, KernelOptions};
use crate::latency::{prepare_chase, ChaseShape};
use crate::observer::{interrupted, Observer};
use crate::team::Member;
use memfabric_analysis::noise::{assess_latency, likely_causes, Conditions};
use memfabric_analysis::sweep_levels::{levels, ExpectedLevel};

/// How the bandwidth curve runs: the mix, one member per thread (the measuring CPU
/// first), and the kernel options whose array size each point replaces.
#[derive(Debug, Clone)]
pub struct SweepBandwidth {
    pub mix: Mix,
    pub members: Vec<Member>,
    pub kernel: KernelOptions,
}

#[derive(Debug, Clone)]
pub struct SweepPlan {
    pub cpu: u32,
    pub cpu_node: u32,
    pub mem_node: u32,
    /// The grid, increasing, multiples of 64 bytes.
    pub sizes: Vec<u64>,
    pub min_bytes: u64,
    pub max_bytes: u64,
    pub max_from: String,
    pub points_per_octave: u32,
    pub samples: usize,
    pub sample_time: Duration,
    /// The chase of every latency point; each point replaces its size.
    pub latency: Option<ChaseShape>,
    pub bandwidth: Option<SweepBandwidth>,
    /// The cache levels the topology reports, as the latency chase meets them.
    pub expected_latency: Vec<ExpectedLevel>,
    /// The same, shared among the bandwidth threads.
    pub expected_bandwidth: Vec<ExpectedLevel>,
}

/// Bytes of each array for a working set of `size`: its share, in whole kernel blocks.
pub(crate) fn array_bytes(mix: Mix, size: u64) -> u64 {
    round_array_bytes(size / mix.arrays())
}

pub fn run(plan: &SweepPlan, obs: &dyn Observer) -> SweepReport {
    obs.begin("sweep", plan.sizes.len() as u64);
    let mut pace_gb_s = None;
    let points = plan
        .sizes
        .iter()
        .map(|&size| {
            let latency = plan.latency.map(|shape| latency_point(plan, shape, size, obs));
            let bandwidth = plan
                .bandwidth
                .as_ref()
                .map(|b| bandwidth_point(plan, b, size, &mut pace_gb_s, obs));
            obs.advance(&format_size(size));
            SweepPoint {
                size_bytes: size,
                latency,
                bandwidth,
            }
        })
        .collect();
    obs.finish();
    report(plan, points)
}

/// One chase of `size` bytes (whole lines), on a thread of its own that it pins.
fn latency_point(plan: &SweepPlan, shape: ChaseShape, size: u64, obs: &dyn Observer) -> SweepLatencyPoint {
    let chase_bytes = (size / shape.stride_bytes).max(2) * shape.stride_bytes;
    let shape = ChaseShape {
        size_bytes: chase_bytes,
        window_bytes: match shape.pattern {
            Pattern::PageRandom => shape.window_bytes,
            _ => chase_bytes,
        },
        ..shape
    };
    let measure = || match prepare_chase(
        plan.cpu,
        &crate::placement::Target::Node(plan.mem_node),
        &shape,
        obs,
    ) {
        Ok(ready) => {
            let taken = ready.sample(plan.samples, plan.sample_time, obs);
            ready.measurement_of(taken)
        }
        Err(e) => e.outcome(),
    };
    let outcome = if obs.cancelled() {
        interrupted()
    } else {
        std::thread::scope(|s| {
            s.spawn(measure).join().unwrap_or_else(|_| Outcome::Failed {
                reason: "measuring thread panicked".into(),
            })
        })
    };
    SweepLatencyPoint { chase_bytes, outcome }
}

/// One bandwidth measurement of a `size`-byte working set per thread. Its passes per
/// sample come from the pace of the point before (sizes grow slowly, the pace changes
/// little), or for the first point from a short probe.
fn bandwidth_point(
    plan: &SweepPlan,
    b: &SweepBandwidth,
    size: u64,
    pace_gb_s: &mut Option<f64>,
    obs: &dyn Observer,
) -> SweepBandwidthPoint {
    let k = KernelOptions {
        array_bytes: array_bytes(b.mix, size),
        ..b.kernel
    };
    let bytes_per_pass = b.members.len() as u64 * k.array_bytes / 8 * b.mix.bytes_per_element();
    let gb_s = pace_gb_s.or_else(|| {
        let probe = KernelOptions { samples: 1, ..k };
        let passes = (4 << 20) / bytes_per_pass.max(1) + 1;
        let o = measure_passes(b.mix, &b.members, &probe, passes as usize, None, obs);
        o.ok().map(|m| m.bandwidth_gb_s.median)
    });
    let passes = passes_for(bytes_per_pass, gb_s, plan.sample_time);
    let outcome = measure_passes(b.mix, &b.members, &k, passes as usize, None, obs);
    if let Outcome::Ok(m) = &outcome {
        *pace_gb_s = Some(m.bandwidth_gb_s.median);
    }
    SweepBandwidthPoint {
        array_bytes_per_thread: k.array_bytes,
        working_set_bytes_per_thread: k.array_bytes * b.mix.arrays(),
        passes_per_sample: passes,
        outcome,
    }
}

/// Passes that fill a sample at `gb_s` (one pass when the pace is unknown).
fn passes_for(bytes_per_pass: u64, gb_s: Option<f64>, sample: Duration) -> u64 {
    let Some(gb_s) = gb_s.filter(|g| g.is_finite() && *g > 0.0) else {
        return 1;
    };
    let bytes = gb_s * 1e9 * sample.as_secs_f64();
    ((bytes / bytes_per_pass.max(1) as f64).ceil() as u64).clamp(1, 1 << 24)
}

fn report(plan: &SweepPlan, points: Vec<SweepPoint>) -> SweepReport {
    let bandwidth = plan.bandwidth.as_ref();
    let threads = bandwidth.map_or(1, |b| b.members.len());
    SweepReport {
        cpu: plan.cpu,
        cpu_node: plan.cpu_node,
        mem_node: plan.mem_node,
        huge_pages: plan.latency.map_or_else(
            || bandwidth.map_or(HugePages::Off, |b| b.kernel.huge_pages),
            |s| s.huge_pages,
        ),
        min_bytes: plan.min_bytes,
        max_bytes: plan.max_bytes,
        max_from: plan.max_from.clone(),
        points_per_octave: plan.points_per_octave,
        samples: plan.samples,
        sample_ms: plan.sample_time.as_secs_f64() * 1e3,
        latency: plan.latency.map(|s| SweepLatencySetup {
            pattern: s.pattern,
            stride_bytes: s.stride_bytes,
            window_bytes: (s.pattern == Pattern::PageRandom).then_some(s.window_bytes),
            seed: s.seed,
        }),
        bandwidth: bandwidth.map(|b| SweepBandwidthSetup {
            mix: MixInfo::of(b.mix),
            kernel: b.kernel.isa.name().into(),
            cpus: b.members.iter().map(|m| m.cpu).collect(),
        }),
        latency_levels: plan.latency.map(|_| {
            let curve = memfabric_model::latency_curve(&points);
            levels(curve, false, &plan.expected_latency, 1, plan.max_bytes)
        }),
        bandwidth_levels: bandwidth.map(|_| {
            levels(
                memfabric_model::bandwidth_curve(&points),
                true,
                &plan.expected_bandwidth,
                threads,
                plan.max_bytes,
            )
        }),
        points,
    }
}

/// Flags each point whose samples spread more than `threshold`.
pub fn annotate(r: &mut SweepReport, topo: &Topology, cond: &Conditions, threshold: f64) {
    let chase_cpu = [r.cpu];
    let bw_cpus = r.bandwidth.as_ref().map(|b| b.cpus.clone()).unwrap_or_default();
    let flag = |cv: f64, cpus: &[u32]| {
        (cv > threshold).then(|| memfabric_model::Noise {
            cv,
            threshold_cv: threshold,
            likely_causes: likely_causes(cond, topo, cpus),
        })
    };
    for p in &mut r.points {
        if let Some(Outcome::Ok(m)) = p.latency.as_mut().map(|l| &mut l.outcome) {
            m.noise = assess_latency(m, threshold, || likely_causes(cond, topo, &chase_cpu));
        }
        if let Some(Outcome::Ok(m)) = p.bandwidth.as_mut().map(|b| &mut b.outcome) {
            m.noise = flag(m.bandwidth_gb_s.cv, &bw_cpus);
        }
    }
}

/// `memfabric sweep`.
pub struct Sweep;

impl crate::measurement::Measurement for Sweep {
    type Options = crate::measurement::Request<crate::plan::sweep::SweepOptions>;
    type Plan = crate::measurement::Checked<SweepPlan>;
    type Report = SweepReport;

    fn plan(m: &crate::plan::Machine, o: &Self::Options) -> Result<Self::Plan, crate::plan::PlanError> {
        o.check(|_, opt| crate::plan::sweep::sweep_plan(m, opt))
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> SweepReport {
        run(&p.plan, obs)
    }

    fn enrich(r: &mut SweepReport, p: &Self::Plan, m: &crate::plan::Machine) {
        annotate(r, m.topo, &m.conditions(), p.threshold_cv);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_fill_a_sample_at_the_last_pace() {
        let ms = Duration::from_millis(2);
        // 100 GB/s for 2 ms is 200 MB: 48829 passes of 4 KiB.
        assert_eq!(passes_for(4096, Some(100.0), ms), 48_829);
        assert_eq!(passes_for(1 << 30, Some(10.0), ms), 1);
        assert_eq!(passes_for(4096, None, ms), 1);
        assert_eq!(passes_for(4096, Some(f64::NAN), ms), 1);
        assert_eq!(passes_for(64, Some(1e6), Duration::from_secs(1)), 1 << 24);
    }

    #[test]
    fn arrays_split_the_working_set_in_whole_blocks() {
        assert_eq!(array_bytes(Mix::Read, 4096), 4096);
        assert_eq!(array_bytes(Mix::Read, 4864), 5120);
        assert_eq!(array_bytes(Mix::Copy, 4096), 2048);
        assert_eq!(array_bytes(Mix::Triad, 1024), 512);
    }
}
