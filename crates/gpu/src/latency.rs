//! `gpu latency`: one GPU thread chasing a random cyclic chain through device memory
//! from 1 KiB to past the L2, timed in SM cycles and ns inside the kernel; the
//! plateaus of the curve are named L1, L2 (near and far) and device memory.

use memfabric_measure::observer::{interrupted, Observer};
use memfabric_model::{GpuLatencyMeasurement, GpuLatencyPoint, Outcome};

use crate::plan::{chase_sizes, chase_steps, chase_words, name_levels, warm_steps, MAX_CHASE_BYTES};
use crate::sys::{timed, Arg, DeviceMem, GpuError, Op, Stream};
use crate::Gpu;

#[derive(Debug, Clone, PartialEq)]
pub struct GpuLatencyPlan {
    pub min_bytes: u64,
    /// None: four times the L2.
    pub max_bytes: Option<u64>,
    pub points_per_octave: u32,
    pub stride_bytes: u64,
    pub samples: usize,
    pub seed: u64,
}

/// One timed chase: SM cycles and ns per load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chased {
    pub cycles_per_load: f64,
    pub ns_per_load: f64,
    /// The word the chase stopped at: where the next walk goes on, so that no walk
    /// re-reads lines an earlier one left in a cache.
    pub end: u32,
}

pub fn measure(
    gpu: &Gpu,
    plan: &GpuLatencyPlan,
    obs: &dyn Observer,
) -> Result<Outcome<GpuLatencyMeasurement>, GpuError> {
    let l2 = gpu.info.l2_bytes;
    let max = plan.max_bytes.unwrap_or(4 * l2).max(plan.min_bytes);
    if max > MAX_CHASE_BYTES {
        return Ok(Outcome::Failed {
            reason: format!(
                "a {max}-byte chase is past the {MAX_CHASE_BYTES} bytes 32-bit word indexes reach"
            ),
        });
    }
    let sizes = chase_sizes(plan.min_bytes, max, plan.points_per_octave, plan.stride_bytes);
    obs.begin("gpu latency", sizes.len() as u64);
    let stream = Stream::new(&gpu.device)?;
    let out = DeviceMem::alloc(&gpu.device, 3 * 8)?;
    let mut points = Vec::with_capacity(sizes.len());
    for &size in &sizes {
        if obs.cancelled() {
            obs.finish();
            return Ok(interrupted());
        }
        let (words, start) = chase_words(size, plan.stride_bytes, plan.seed);
        let next = DeviceMem::alloc(&gpu.device, words.len() * 4)?;
        next.upload(&words)?;
        let elements = size / plan.stride_bytes;
        let warm = warm_steps(elements, size, l2);
        let mut at = chase(gpu, &stream, Arg::Dev(&next), warm, start, &out)?.end;
        let steps = chase_steps(elements);
        let mut runs = Vec::with_capacity(plan.samples);
        for _ in 0..plan.samples.max(1) {
            let c = chase(gpu, &stream, Arg::Dev(&next), steps, at, &out)?;
            at = c.end;
            runs.push(c);
        }
        points.push(point(size, steps, &runs));
        obs.advance(&format!("{} KiB", size >> 10));
    }
    obs.finish();
    let levels = name_levels(&points, l2);
    Ok(Outcome::Ok(GpuLatencyMeasurement { points, levels }))
}

/// The median sample's figures.
fn point(size: u64, steps: u64, runs: &[Chased]) -> GpuLatencyPoint {
    let mut r = runs.to_vec();
    r.sort_by(|a, b| a.cycles_per_load.total_cmp(&b.cycles_per_load));
    let m = r[r.len() / 2];
    GpuLatencyPoint {
        size_bytes: size,
        loads: steps,
        latency_cycles: m.cycles_per_load,
        latency_ns: m.ns_per_load,
        sm_clock_mhz: if m.ns_per_load > 0.0 {
            m.cycles_per_load / m.ns_per_load * 1e3
        } else {
            0.0
        },
    }
}

/// Runs the chase kernel once over `next` (device memory or mapped host memory) and
/// reads back its cycle and ns counts.
pub fn chase(
    gpu: &Gpu,
    s: &Stream,
    next: Arg<'_>,
    steps: u64,
    start: u32,
    out: &DeviceMem,
) -> Result<Chased, GpuError> {
    let op = Op::Launch {
        f: gpu.kernel("mf_chase")?,
        grid: 1,
        block: 1,
        args: vec![next, Arg::U64(steps), Arg::U32(start), Arg::Dev(out)],
    };
    timed(vec![(op, s)])?;
    let mut r = [0u64; 3];
    out.download(&mut r)?;
    let end =
        u32::try_from(r[0]).map_err(|_| GpuError::Other(format!("the chase ended at word {}", r[0])))?;
    Ok(per_load(r[1], r[2], steps, end))
}

/// Cycles and ns per load from the kernel's totals.
pub fn per_load(cycles: u64, ns: u64, steps: u64, end: u32) -> Chased {
    let n = steps.max(1) as f64;
    Chased {
        cycles_per_load: cycles as f64 / n,
        ns_per_load: ns as f64 / n,
        end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_takes_the_median_run_and_its_clock() {
        let runs = [
            per_load(3_300_000, 1_880_000, 100_000, 0),
            per_load(3_400_000, 1_940_000, 100_000, 0),
            per_load(9_000_000, 5_000_000, 100_000, 0),
        ];
        let p = point(1 << 20, 100_000, &runs);
        assert_eq!(p.latency_cycles, 34.0);
        assert!((p.latency_ns - 19.4).abs() < 1e-9);
        assert!((p.sm_clock_mhz - 34.0 / 19.4 * 1e3).abs() < 1e-6);
    }
}
