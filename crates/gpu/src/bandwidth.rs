//! `gpu bandwidth`: device-memory read, write, copy and triad over array sizes, each
//! launch timed by CUDA events, bytes counted as BabelStream 5.0 counts them, and the
//! written array checked after timing.

use memfabric_measure::observer::{interrupted, Observer};
use memfabric_model::{GpuBandwidthMeasurement, GpuBandwidthPoint, GpuStreamKernel, Outcome, Summary};

use crate::plan::{bytes_per_launch, grid_blocks, launches_per_sample};
use crate::sys::{timed, timed_held, Arg, DeviceMem, GpuError, Op, Stream};
use crate::Gpu;

/// Initial values and scalar: exact in binary, so a fused multiply-add on the GPU and
/// the host's expectation agree to the bit (triad: 1.0 + 3.0 * 0.5 = 2.5).
const INIT_A: f64 = 1.5;
const INIT_B: f64 = 1.0;
const INIT_C: f64 = 0.5;
const SCALAR: f64 = 3.0;
/// Bytes each timed sample moves at least (several launches for small arrays).
const SAMPLE_BYTES: u64 = 1 << 30;

#[derive(Debug, Clone, PartialEq)]
pub struct GpuBandwidthPlan {
    pub kernels: Vec<GpuStreamKernel>,
    pub array_bytes: Vec<u64>,
    pub block_threads: u32,
    pub samples: usize,
}

pub fn measure(
    gpu: &Gpu,
    plan: &GpuBandwidthPlan,
    obs: &dyn Observer,
) -> Result<Outcome<GpuBandwidthMeasurement>, GpuError> {
    obs.begin(
        "gpu bandwidth",
        (plan.kernels.len() * plan.array_bytes.len()) as u64,
    );
    let stream = Stream::new(&gpu.device)?;
    let mut points = Vec::new();
    for &bytes in &plan.array_bytes {
        let elements = bytes / 8;
        let arrays = Arrays::new(gpu, &stream, elements)?;
        for &k in &plan.kernels {
            if obs.cancelled() {
                obs.finish();
                return Ok(interrupted());
            }
            arrays.reset(gpu, &stream, elements)?;
            match point(gpu, plan, &arrays, &stream, k, elements)? {
                Ok(p) => points.push(p),
                Err(reason) => {
                    obs.finish();
                    return Ok(Outcome::Failed { reason });
                }
            }
            obs.advance(&format!("{} over {} MiB arrays", k.name(), bytes >> 20));
        }
    }
    obs.finish();
    Ok(Outcome::Ok(GpuBandwidthMeasurement { points }))
}

/// BabelStream's three arrays (a, b, c) and a sink for the read kernel.
struct Arrays {
    a: DeviceMem,
    b: DeviceMem,
    c: DeviceMem,
    sink: DeviceMem,
}

impl Arrays {
    fn new(gpu: &Gpu, s: &Stream, elements: u64) -> Result<Arrays, GpuError> {
        let bytes = (elements * 8) as usize;
        let arrays = Arrays {
            a: DeviceMem::alloc(&gpu.device, bytes)?,
            b: DeviceMem::alloc(&gpu.device, bytes)?,
            c: DeviceMem::alloc(&gpu.device, bytes)?,
            sink: DeviceMem::alloc(&gpu.device, 8)?,
        };
        arrays.reset(gpu, s, elements)?;
        Ok(arrays)
    }

    /// Back to the initial values, before each kernel, so each validates alone.
    fn reset(&self, gpu: &Gpu, s: &Stream, elements: u64) -> Result<(), GpuError> {
        for (m, v) in [(&self.a, INIT_A), (&self.b, INIT_B), (&self.c, INIT_C)] {
            fill(gpu, s, m, v, elements)?;
        }
        Ok(())
    }
}

fn fill(gpu: &Gpu, s: &Stream, m: &DeviceMem, v: f64, elements: u64) -> Result<(), GpuError> {
    let grid = grid_blocks(elements, gpu.info.sm_count, crate::plan::BLOCK_THREADS);
    let op = Op::Launch {
        f: gpu.kernel("mf_write")?,
        grid,
        block: crate::plan::BLOCK_THREADS,
        args: vec![Arg::Dev(m), Arg::F64(v), Arg::U64(elements)],
    };
    timed(vec![(op, s)]).map(|_| ())
}

/// One kernel at one size: a warm-up launch, then `samples` timed samples.
fn point(
    gpu: &Gpu,
    plan: &GpuBandwidthPlan,
    x: &Arrays,
    s: &Stream,
    k: GpuStreamKernel,
    elements: u64,
) -> Result<Result<GpuBandwidthPoint, String>, GpuError> {
    let grid = grid_blocks(elements, gpu.info.sm_count, plan.block_threads);
    let f = gpu.kernel(kernel_name(k))?;
    let args = || -> Vec<Arg<'_>> {
        match k {
            // The sum of positive values never equals -1.
            GpuStreamKernel::Read => vec![
                Arg::Dev(&x.a),
                Arg::U64(elements),
                Arg::F64(-1.0),
                Arg::Dev(&x.sink),
            ],
            GpuStreamKernel::Write => vec![Arg::Dev(&x.c), Arg::F64(SCALAR), Arg::U64(elements)],
            GpuStreamKernel::Copy => vec![Arg::Dev(&x.c), Arg::Dev(&x.a), Arg::U64(elements)],
            GpuStreamKernel::Triad => vec![
                Arg::Dev(&x.a),
                Arg::Dev(&x.b),
                Arg::Dev(&x.c),
                Arg::F64(SCALAR),
                Arg::U64(elements),
            ],
        }
    };
    let per_launch = bytes_per_launch(k, elements);
    let launches = launches_per_sample(per_launch, SAMPLE_BYTES);
    let ops = |n: u32| -> Vec<(Op<'_>, &Stream)> {
        (0..n)
            .map(|_| {
                let op = Op::Launch {
                    f,
                    grid,
                    block: plan.block_threads,
                    args: args(),
                };
                (op, s)
            })
            .collect()
    };
    timed(ops(1))?; // warm-up
    let hold = gpu.kernel("mf_hold")?;
    let mut samples_gb_s = Vec::with_capacity(plan.samples);
    for _ in 0..plan.samples {
        let secs = timed_held(Some((hold, hold_ns(launches))), ops(launches))?;
        samples_gb_s.push(per_launch as f64 * f64::from(launches) / secs.max(1e-9) * 1e-9);
    }
    let validated = match validate(k, x, elements)? {
        Ok(n) => n,
        Err(reason) => return Ok(Err(reason)),
    };
    let Some(summary) = Summary::of(&samples_gb_s) else {
        return Ok(Err("no samples".into()));
    };
    Ok(Ok(GpuBandwidthPoint {
        kernel: k,
        array_bytes: elements * 8,
        bytes_per_launch: per_launch,
        grid_blocks: grid,
        best_fraction_of_peak: gpu.info.peak_memory_gb_s.map(|p| summary.max / p),
        bandwidth_gb_s: summary,
        samples_gb_s,
        validated_elements: validated,
    }))
}

/// How long the stream is held while a sample's launches are queued: far longer than
/// the host needs to queue them (a few µs each), so they all wait behind the hold.
pub fn hold_ns(launches: u32) -> u64 {
    1_000_000 + 20_000 * u64::from(launches)
}

pub fn kernel_name(k: GpuStreamKernel) -> &'static str {
    match k {
        GpuStreamKernel::Read => "mf_read",
        GpuStreamKernel::Write => "mf_write",
        GpuStreamKernel::Copy => "mf_copy",
        GpuStreamKernel::Triad => "mf_triad",
    }
}

/// What every element of the written array must hold after any number of launches.
pub fn expected(k: GpuStreamKernel) -> Option<f64> {
    match k {
        GpuStreamKernel::Read => None,
        GpuStreamKernel::Write => Some(SCALAR),
        GpuStreamKernel::Copy => Some(INIT_A),
        GpuStreamKernel::Triad => Some(INIT_B + SCALAR * INIT_C),
    }
}

/// Checks every element of the array the kernel wrote; returns how many.
fn validate(k: GpuStreamKernel, x: &Arrays, elements: u64) -> Result<Result<u64, String>, GpuError> {
    let (Some(want), Some(array)) = (expected(k), written(k, x)) else {
        return Ok(Ok(0));
    };
    let mut host = vec![0f64; elements as usize];
    array.download(&mut host)?;
    Ok(check(&host, want, k))
}

fn written(k: GpuStreamKernel, x: &Arrays) -> Option<&DeviceMem> {
    match k {
        GpuStreamKernel::Read => None,
        GpuStreamKernel::Write | GpuStreamKernel::Copy => Some(&x.c),
        GpuStreamKernel::Triad => Some(&x.a),
    }
}

/// Every element equal to `want`, else the first wrong one.
pub fn check(host: &[f64], want: f64, k: GpuStreamKernel) -> Result<u64, String> {
    match host.iter().position(|&v| v != want) {
        None => Ok(host.len() as u64),
        Some(i) => Err(format!(
            "validation failed: {} element {i} of {} holds {}, expected {want}",
            k.name(),
            host.len(),
            host[i]
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_values_are_exact_and_distinct_from_the_initial_ones() {
        assert_eq!(expected(GpuStreamKernel::Triad), Some(2.5));
        assert_eq!(expected(GpuStreamKernel::Copy), Some(INIT_A));
        assert_ne!(expected(GpuStreamKernel::Copy), Some(INIT_C), "copy changes c");
        assert_ne!(expected(GpuStreamKernel::Write), Some(INIT_C), "write changes c");
        assert_ne!(expected(GpuStreamKernel::Triad), Some(INIT_A), "triad changes a");
        assert_eq!(expected(GpuStreamKernel::Read), None);
    }

    #[test]
    fn validation_names_the_first_wrong_element() {
        let mut v = vec![2.5; 100];
        assert_eq!(check(&v, 2.5, GpuStreamKernel::Triad), Ok(100));
        v[41] = 2.0;
        let e = check(&v, 2.5, GpuStreamKernel::Triad).unwrap_err();
        assert!(e.contains("element 41 of 100 holds 2"), "{e}");
    }

    #[test]
    fn every_kernel_has_an_entry_in_the_ptx() {
        for k in GpuStreamKernel::ALL {
            assert!(crate::ptx::STREAM.has_entry(kernel_name(k)), "{k:?}");
        }
    }
}
