//! `bandwidth --concurrent`: several streams, each a CPU node's threads over one
//! memory node, run as one team so that every sample starts on every thread at once.
//! Each stream's rate is its bytes over its own span; the total is all bytes over the
//! span from the first start to the last end; the windows are kept to prove overlap.

use std::time::Instant;

use memfabric_model::{
    link_flows, overlap_pct, ConcurrentMeasurement, ConcurrentPattern, ConcurrentReport,
    ConcurrentStreamSpec, Mix, MixInfo, Outcome, StreamRate, Summary,
};

use crate::bandwidth::{run_mix, KernelOptions, Ran};
use crate::observer::{interrupted, Observer};
use crate::team::{self, Member};

#[derive(Debug, Clone)]
pub struct ConcurrentPlan {
    pub pattern: ConcurrentPattern,
    pub mix: Mix,
    pub streams: Vec<ConcurrentStreamSpec>,
    /// (CPU socket, memory socket) of each stream, where known.
    pub sockets: Vec<(Option<u32>, Option<u32>)>,
    pub kernel: KernelOptions,
}

pub fn run(plan: &ConcurrentPlan, obs: &dyn Observer) -> ConcurrentReport {
    obs.begin("bandwidth --concurrent", 1);
    let outcome = if obs.cancelled() {
        interrupted()
    } else {
        measure(plan, obs)
    };
    obs.advance(&format!("{} streams", plan.streams.len()));
    obs.finish();
    ConcurrentReport {
        pattern: plan.pattern,
        mix: MixInfo::of(plan.mix),
        kernel: plan.kernel.isa.name().into(),
        huge_pages: plan.kernel.huge_pages,
        array_bytes_per_thread: plan.kernel.array_bytes,
        streams: plan.streams.clone(),
        outcome,
    }
}

fn measure(plan: &ConcurrentPlan, obs: &dyn Observer) -> Outcome<ConcurrentMeasurement> {
    let members: Vec<Member> = plan
        .streams
        .iter()
        .flat_map(|s| {
            s.cpus.iter().map(|&cpu| Member {
                cpu,
                mem_node: s.mem_node,
            })
        })
        .collect();
    match run_mix(plan.mix, &members, None, &plan.kernel, 1, obs, &|_| {}) {
        Ok(ran) => summarize(plan, ran),
        Err(reason) => Outcome::Failed { reason },
    }
}

/// Rates per stream and in total from the members' round times (round 0, the
/// warm-up, left out).
fn summarize(plan: &ConcurrentPlan, ran: Ran) -> Outcome<ConcurrentMeasurement> {
    let per_thread = plan.kernel.array_bytes * plan.mix.bytes_per_element() / 8;
    let rounds = ran.times.iter().map(Vec::len).min().unwrap_or(0);
    if rounds < 2 {
        return interrupted();
    }
    let t0 = ran.times.iter().map(|t| t[1].0).min().expect("members");
    let ns = |i: Instant| i.saturating_duration_since(t0).as_nanos() as u64;
    let mut streams = Vec::new();
    let mut first = 0;
    for s in &plan.streams {
        let times = &ran.times[first..first + s.cpus.len()];
        let windows_ns: Vec<[u64; 2]> = (1..rounds)
            .map(|r| {
                let start = times.iter().map(|t| t[r].0).min().expect("threads");
                let end = times.iter().map(|t| t[r].1).max().expect("threads");
                [ns(start), ns(end)]
            })
            .collect();
        let bytes_per_sample = per_thread * s.cpus.len() as u64;
        let samples_gb_s: Vec<f64> = windows_ns
            .iter()
            .map(|w| bytes_per_sample as f64 / (w[1] - w[0]).max(1) as f64)
            .collect();
        streams.push(StreamRate {
            cpu_node: s.cpu_node,
            mem_node: s.mem_node,
            bandwidth_gb_s: Summary::of(&samples_gb_s).expect("samples"),
            samples_gb_s,
            bytes_per_sample,
            windows_ns,
            placement: ran.placement[first..first + s.cpus.len()].to_vec(),
        });
        first += s.cpus.len();
    }
    let all_bytes: u64 = streams.iter().map(|s| s.bytes_per_sample).sum();
    let total_samples_gb_s: Vec<f64> = team::round_seconds(&ran.times)
        .iter()
        .skip(1)
        .map(|s| all_bytes as f64 / s * 1e-9)
        .collect();
    let sums: Vec<f64> = (0..rounds - 1)
        .map(|r| streams.iter().map(|s| s.samples_gb_s[r]).sum())
        .collect();
    let min_overlap_pct = (0..rounds - 1)
        .map(|r| overlap_pct(&streams.iter().map(|s| s.windows_ns[r]).collect::<Vec<_>>()))
        .fold(100.0, f64::min);
    let crossing: Vec<(u32, u32, f64)> = plan
        .sockets
        .iter()
        .zip(&streams)
        .filter_map(|(&(c, m), s)| Some((c?, m?, s.bandwidth_gb_s.median)))
        .collect();
    let read_fraction =
        plan.mix.read_arrays() as f64 / (plan.mix.read_arrays() + plan.mix.written_arrays()) as f64;
    Outcome::Ok(ConcurrentMeasurement {
        total_gb_s: Summary::of(&total_samples_gb_s).expect("samples"),
        total_samples_gb_s,
        sum_of_streams_gb_s: Summary::of(&sums).expect("samples"),
        streams,
        min_overlap_pct,
        links: link_flows(&crossing, read_fraction),
        validated_elements: ran.validated_elements,
    })
}

/// `memfabric bandwidth --concurrent`.
pub struct Concurrent;

impl crate::measurement::Measurement for Concurrent {
    type Options = crate::measurement::Request<crate::plan::concurrent::ConcurrentOptions>;
    type Plan = crate::measurement::Checked<ConcurrentPlan>;
    type Report = ConcurrentReport;

    fn plan(m: &crate::plan::Machine, o: &Self::Options) -> Result<Self::Plan, crate::plan::PlanError> {
        o.check(|sel, opt| crate::plan::concurrent::concurrent_plan(m, sel, opt))
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> ConcurrentReport {
        run(&p.plan, obs)
    }

    fn enrich(_: &mut ConcurrentReport, _: &Self::Plan, _: &crate::plan::Machine) {}
}
