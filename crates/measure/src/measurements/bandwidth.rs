//! Bandwidth of an access mix: each thread owns its arrays on one memory node and runs
//! the mix's kernel over them, all threads released together. Arrays a mix writes are
//! checked after timing, as STREAM checks its own.

use memfabric_model::{
    BandwidthCell, BandwidthMeasurement, BandwidthReport, HugePages, Interleave, Mix, MixInfo, Outcome,
    Placement, Summary,
};
use std::time::Instant;

use crate::kernels::{run_pass, Isa, Op, Pass, BLOCK_ELEMENTS};
use crate::monitor::DramCounters;
use crate::observer::{interrupted, Observer};
use crate::placement::Target;
use crate::team::{self, Arrays, Edge, Member};

/// The `s` of every kernel that takes one (STREAM's value).
pub const SCALAR: f64 = 3.0;

/// How every thread of a measurement runs its kernel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelOptions {
    pub isa: Isa,
    /// Bytes of each of a thread's arrays: whole blocks of BLOCK_ELEMENTS doubles.
    pub array_bytes: u64,
    pub huge_pages: HugePages,
    /// Timed samples, after one discarded warm-up pass.
    pub samples: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BandwidthCellSpec {
    pub mix: Mix,
    pub cpu_node: u32,
    pub mem_node: u32,
    pub cpus: Vec<u32>,
}

#[derive(Debug, Clone)]
pub struct BandwidthPlan {
    pub cells: Vec<BandwidthCellSpec>,
    pub mixes: Vec<Mix>,
    pub cpu_nodes: Vec<u32>,
    pub mem_nodes: Vec<u32>,
    pub thread_counts: Vec<usize>,
    pub kernel: KernelOptions,
    /// Every cell's memory spread over these nodes instead of its `mem_node` (which is
    /// then the set's first node).
    pub interleave: Option<Interleave>,
}

/// Measures every cell of the plan; with `dram`, each cell's timed samples are also
/// counted by the memory controllers.
pub fn run(plan: &BandwidthPlan, dram: Option<&DramCounters>, obs: &dyn Observer) -> BandwidthReport {
    obs.begin("bandwidth", plan.cells.len() as u64);
    let cells = plan
        .cells
        .iter()
        .map(|spec| {
            let members: Vec<Member> = spec
                .cpus
                .iter()
                .map(|&cpu| Member {
                    cpu,
                    mem_node: spec.mem_node,
                })
                .collect();
            let target = Target::of(plan.interleave.as_ref(), spec.mem_node);
            let outcome = measure_at(spec.mix, &members, Some(&target), &plan.kernel, 1, dram, obs);
            obs.advance(&format!(
                "{} node {} -> {}, {} threads",
                spec.mix,
                spec.cpu_node,
                target.label(),
                spec.cpus.len()
            ));
            BandwidthCell {
                mix: spec.mix,
                cpu_node: spec.cpu_node,
                mem_node: spec.mem_node,
                cpus: spec.cpus.clone(),
                outcome,
                efficiency: None,
            }
        })
        .collect();
    obs.finish();
    BandwidthReport {
        kernel: plan.kernel.isa.name().into(),
        huge_pages: plan.kernel.huge_pages,
        array_bytes_per_thread: plan.kernel.array_bytes,
        mixes: plan.mixes.iter().map(|&m| MixInfo::of(m)).collect(),
        cpu_nodes: plan.cpu_nodes.clone(),
        mem_nodes: plan.mem_nodes.clone(),
        thread_counts: plan.thread_counts.clone(),
        cells,
        firmware: None,
        dram_counting: Default::default(),
        peak_unknown: None,
        cache_caveat: None,
        interleave: plan.interleave.clone(),
    }
}

/// The kernel operation of a mix, and whether it stores non-temporally.
pub fn op_of(mix: Mix) -> (Op, bool) {
    match mix {
        Mix::Read => (Op::Read, false),
        Mix::Write => (Op::Fill, false),
        Mix::WriteNt => (Op::Fill, true),
        Mix::Ratio3to1 => (Op::Ratio(3), false),
        Mix::Ratio2to1 => (Op::Ratio(2), false),
        Mix::Ratio1to1 => (Op::Ratio(1), false),
        Mix::Rmw => (Op::Rmw, false),
        Mix::Copy => (Op::Copy, false),
        Mix::CopyNt => (Op::Copy, true),
        Mix::Triad => (Op::Triad, false),
        Mix::TriadNt => (Op::Triad, true),
    }
}

/// One mix on a group of threads, each with its own arrays on its member's node.
pub fn measure(
    mix: Mix,
    members: &[Member],
    k: &KernelOptions,
    dram: Option<&DramCounters>,
    obs: &dyn Observer,
) -> Outcome<BandwidthMeasurement> {
    measure_passes(mix, members, k, 1, dram, obs)
}

/// As [`measure`], with `passes` passes over the arrays in each sample: arrays that
/// fit in a cache take one pass in well under a microsecond, too short to time alone.
/// With `dram`, the counters are read at the edges of the timed samples.
pub fn measure_passes(
    mix: Mix,
    members: &[Member],
    k: &KernelOptions,
    passes: usize,
    dram: Option<&DramCounters>,
    obs: &dyn Observer,
) -> Outcome<BandwidthMeasurement> {
    measure_at(mix, members, None, k, passes, dram, obs)
}

/// As [`measure_passes`], with every member's arrays at `target` when one is given
/// (an interleave, say) instead of on its own `mem_node`.
pub fn measure_at(
    mix: Mix,
    members: &[Member],
    target: Option<&Target>,
    k: &KernelOptions,
    passes: usize,
    dram: Option<&DramCounters>,
    obs: &dyn Observer,
) -> Outcome<BandwidthMeasurement> {
    let passes = passes.max(1);
    if obs.cancelled() {
        return interrupted();
    }
    // Round 0 is the warm-up: the counters start after it.
    let window = dram.map(|d| d.window(1));
    let edge = |e: Edge| {
        if let Some(w) = &window {
            w.edge(e)
        }
    };
    let ran = match run_mix(mix, members, target, k, passes, obs, &edge) {
        Ok(ran) => ran,
        Err(reason) => return Outcome::Failed { reason },
    };
    let per_array = members.len() as u64 * k.array_bytes * passes as u64;
    let bytes_per_sample = per_array * (mix.read_arrays() + mix.written_arrays());
    debug_assert_eq!(bytes_per_sample, per_array / 8 * mix.bytes_per_element());
    let dram =
        window.and_then(|w| w.traffic(per_array * mix.read_arrays(), per_array * mix.written_arrays()));
    // Round 0 is the warm-up.
    let samples_gb_s: Vec<f64> = team::round_seconds(&ran.times)
        .iter()
        .skip(1)
        .map(|s| bytes_per_sample as f64 / s * 1e-9)
        .collect();
    match Summary::of(&samples_gb_s) {
        Some(bandwidth_gb_s) => Outcome::Ok(BandwidthMeasurement {
            bandwidth_gb_s,
            samples_gb_s,
            bytes_per_sample,
            validated_elements: ran.validated_elements,
            placement: ran.placement,
            noise: None,
            dram,
        }),
        None => interrupted(),
    }
}

/// What a team running one mix brings back, member by member.
pub(crate) struct Ran {
    pub placement: Vec<Placement>,
    /// Each member's (start, end) per round, round 0 the warm-up.
    pub times: Vec<Vec<(Instant, Instant)>>,
    pub validated_elements: u64,
}

/// Runs `mix` on every member at once, `k.samples` timed rounds after one warm-up,
/// each member over its own arrays (at `target`, else on its `mem_node`), then checks
/// the arrays it wrote. The first member to fail fails the whole team.
pub(crate) fn run_mix(
    mix: Mix,
    members: &[Member],
    target: Option<&Target>,
    k: &KernelOptions,
    passes: usize,
    obs: &dyn Observer,
    edge: &(dyn Fn(Edge) + Sync),
) -> Result<Ran, String> {
    let (op, non_temporal) = op_of(mix);
    let pass = Pass {
        op,
        isa: k.isa,
        non_temporal,
        scalar: SCALAR,
    };
    let elements = (k.array_bytes / 8) as usize;
    let setup = |m: Member| {
        let own = Target::Node(m.mem_node);
        let mut arrays = Arrays::placed(m.cpu, target.unwrap_or(&own), op.arrays(), elements, k.huge_pages)?;
        fill(mix, &mut arrays.slices());
        Ok(arrays)
    };
    let round = |a: &mut Arrays, _: usize| {
        let mut slices = a.slices();
        for _ in 0..passes {
            std::hint::black_box(run_pass(&pass, &mut slices));
        }
    };
    let finish = |mut a: Arrays, rounds: usize| {
        let checked = validate(mix, &a.slices(), rounds * passes)?;
        Ok((a.placement, checked))
    };
    let results = team::run_with_edges(members, k.samples + 1, obs, &setup, &round, &finish, edge);
    let mut ran = Ran {
        placement: Vec::new(),
        times: Vec::new(),
        validated_elements: 0,
    };
    for r in results {
        let ((p, checked), t) = r?;
        ran.placement.push(p);
        ran.validated_elements += checked;
        ran.times.push(t);
    }
    Ok(ran)
}

/// Initial contents: the arrays a mix reads hold distinct values, so a misplaced load
/// or store shows in the result; the array it writes starts at zero.
pub(crate) fn fill(mix: Mix, arrays: &mut [&mut [f64]]) {
    for (q, a) in arrays.iter_mut().enumerate() {
        let writes = q == 0 && mix != Mix::Read;
        for (i, x) in a.iter_mut().enumerate() {
            *x = match (writes, mix) {
                (true, _) => 0.0,
                (false, Mix::Triad | Mix::TriadNt) if q == 2 => 2.0,
                _ => i as f64 + q as f64,
            };
        }
    }
}

/// What element i of the written array must hold after `passes` passes.
fn expected(mix: Mix, i: usize, passes: usize) -> Option<f64> {
    Some(match mix {
        Mix::Read => return None,
        Mix::Write | Mix::WriteNt | Mix::Ratio3to1 | Mix::Ratio2to1 | Mix::Ratio1to1 => SCALAR,
        Mix::Rmw => passes as f64 * SCALAR,
        Mix::Copy | Mix::CopyNt => i as f64 + 1.0,
        Mix::Triad | Mix::TriadNt => (i as f64 + 1.0) + SCALAR * 2.0,
    })
}

/// Checks every element of the written array; returns how many were checked.
fn validate(mix: Mix, arrays: &[&mut [f64]], passes: usize) -> Result<u64, String> {
    if passes == 0 || mix == Mix::Read {
        return Ok(0);
    }
    let a = &arrays[0];
    let mut wrong = a
        .iter()
        .enumerate()
        .filter(|&(i, &x)| Some(x) != expected(mix, i, passes));
    match wrong.next() {
        None => Ok(a.len() as u64),
        Some((i, &x)) => Err(format!(
            "validation failed: {} of {} elements of the written array are wrong (element {i} holds {x}, expected {})",
            1 + wrong.count(),
            a.len(),
            expected(mix, i, passes).unwrap_or_default()
        )),
    }
}

/// Rounds a per-thread array size to what the kernels take: whole blocks.
pub fn round_array_bytes(bytes: u64) -> u64 {
    let block = (BLOCK_ELEMENTS * 8) as u64;
    bytes.max(block).next_multiple_of(block)
}

/// `memfabric bandwidth`: its own options, the socket links for the share of peak,
/// and where DRAM traffic is counted from.
pub struct BandwidthAsk {
    pub options: crate::plan::BandwidthOptions,
    pub links: Option<memfabric_model::LinkPeak>,
    pub dram: crate::monitor::DramSource,
}

/// A bandwidth plan with its counter source open.
pub struct BandwidthReady {
    pub checked: crate::measurement::Checked<BandwidthPlan>,
    pub links: Option<memfabric_model::LinkPeak>,
    counters: Option<DramCounters>,
    counting: memfabric_model::DramCounting,
}

/// `memfabric bandwidth`.
pub struct Bandwidth;

impl crate::measurement::Measurement for Bandwidth {
    type Options = crate::measurement::Request<BandwidthAsk>;
    type Plan = BandwidthReady;
    type Report = BandwidthReport;

    fn plan(m: &crate::plan::Machine, o: &Self::Options) -> Result<Self::Plan, crate::plan::PlanError> {
        let checked = o.check(|sel, ask| crate::plan::bandwidth_plan(m, sel, &ask.options))?;
        let (counters, counting) = o.options.dram.open();
        Ok(BandwidthReady {
            checked,
            links: o.options.links.clone(),
            counters,
            counting,
        })
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> BandwidthReport {
        run(&p.checked.plan, p.counters.as_ref(), obs)
    }

    fn enrich(r: &mut BandwidthReport, p: &Self::Plan, m: &crate::plan::Machine) {
        r.dram_counting = crate::monitor::finish_counting(p.counting.clone(), p.counters.as_ref());
        let conditions = m.conditions();
        memfabric_analysis::noise::annotate_bandwidth(r, m.topo, &conditions, p.checked.threshold_cv);
        crate::efficiency::annotate(r, m.topo, p.links.as_ref(), p.checked.memory_peak.as_ref());
        memfabric_analysis::caches::annotate_bandwidth(r, m.topo);
        // Firmware figures are per node pair; an interleave is no one pair.
        if r.interleave.is_none() {
            r.firmware = memfabric_analysis::firmware::compare_bandwidth(r, m.topo);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mix_has_a_kernel_with_matching_arrays() {
        for mix in Mix::ALL {
            let (op, nt) = op_of(mix);
            assert_eq!(op.arrays() as u64, mix.arrays(), "{mix}");
            assert_eq!(nt, mix.non_temporal(), "{mix}");
        }
    }

    #[test]
    #[allow(clippy::needless_range_loop)] // the reference code reads best indexed
    fn validation_catches_a_wrong_element() {
        for mix in Mix::ALL.into_iter().filter(|&m| m != Mix::Read) {
            let mut store: Vec<Vec<f64>> = (0..mix.arrays()).map(|_| vec![0.0; 100]).collect();
            let mut arrays: Vec<&mut [f64]> = store.iter_mut().map(|v| v.as_mut_slice()).collect();
            fill(mix, &mut arrays);
            let (op, _) = op_of(mix);
            // Apply the mix three times by hand-written reference code.
            for _ in 0..3 {
                for i in 0..100 {
                    let v = match op {
                        Op::Fill | Op::Ratio(_) => SCALAR,
                        Op::Rmw => arrays[0][i] + SCALAR,
                        Op::Copy => arrays[1][i],
                        Op::Triad => arrays[1][i] + SCALAR * arrays[2][i],
                        _ => unreachable!(),
                    };
                    arrays[0][i] = v;
                }
            }
            assert_eq!(validate(mix, &arrays, 3), Ok(100), "{mix}");
            arrays[0][57] += 1.0;
            let err = validate(mix, &arrays, 3).unwrap_err();
            assert!(
                err.contains("1 of 100") && err.contains("element 57"),
                "{mix}: {err}"
            );
        }
    }
}
