//! `gpu host-latency`: one GPU thread chasing pointers through pinned host memory
//! mapped into the GPU (zero-copy), placed on each NUMA node in turn.

use memfabric_measure::observer::{interrupted, Observer};
use memfabric_measure::placement::{allocate_verified, Target};
use memfabric_measure::sys::current_affinity;
use memfabric_model::{GpuHostLatencyCell, GpuHostLatencyMeasurement, HugePages, Outcome, Summary};

use crate::latency::{chase, Chased};
use crate::plan::{chase_steps, chase_words};
use crate::sys::{Arg, DeviceMem, GpuError, Registered, Stream};
use crate::Gpu;

/// Loads of the untimed walk: the first launch and the mapping's first use pay
/// one-off costs (module load, clocks ramping up) that no sample should carry.
const WARM_STEPS: u64 = 1000;
/// Host loads over PCIe take 1-2 us each: 20 000 keep a sample near 30 ms.
const MAX_STEPS: u64 = 20_000;

#[derive(Debug, Clone, PartialEq)]
pub struct GpuHostLatencyPlan {
    pub size_bytes: u64,
    pub stride_bytes: u64,
    pub nodes: Vec<u32>,
    pub samples: usize,
    pub seed: u64,
}

pub fn measure(
    gpu: &Gpu,
    plan: &GpuHostLatencyPlan,
    obs: &dyn Observer,
) -> Result<Outcome<Vec<GpuHostLatencyCell>>, GpuError> {
    if let Err(reason) = check(plan) {
        return Ok(Outcome::Failed { reason });
    }
    obs.begin("gpu host-latency", plan.nodes.len() as u64);
    let stream = Stream::new(&gpu.device)?;
    let out = DeviceMem::alloc(&gpu.device, 3 * 8)?;
    let mut cells = Vec::with_capacity(plan.nodes.len());
    for &node in &plan.nodes {
        if obs.cancelled() {
            obs.finish();
            return Ok(interrupted());
        }
        let outcome = match node_cell(gpu, plan, node, &stream, &out) {
            Ok(m) => Outcome::Ok(m),
            Err(reason) => Outcome::Failed { reason },
        };
        cells.push(GpuHostLatencyCell { node, outcome });
        obs.advance(&format!("node {node}"));
    }
    obs.finish();
    Ok(Outcome::Ok(cells))
}

/// What the chase kernel needs of a plan: whole u32 words per stride, one element at least.
pub fn check(plan: &GpuHostLatencyPlan) -> Result<(), String> {
    if plan.stride_bytes < 4 || !plan.stride_bytes.is_multiple_of(4) {
        return Err(format!(
            "stride {} B is not a whole number of 4-byte words",
            plan.stride_bytes
        ));
    }
    if plan.size_bytes < plan.stride_bytes {
        return Err(format!(
            "size {} B is less than one stride ({} B)",
            plan.size_bytes, plan.stride_bytes
        ));
    }
    let words = plan.size_bytes / 4;
    if words > u64::from(u32::MAX) {
        return Err(format!(
            "size {} B holds more words than a u32 index reaches",
            plan.size_bytes
        ));
    }
    Ok(())
}

/// Timed loads per sample.
pub fn steps(size: u64, stride: u64) -> u64 {
    chase_steps(size / stride.max(1)).min(MAX_STEPS)
}

/// Writes `words` as native-endian u32s at the start of `dst`, as the GPU reads them.
pub fn write_words(dst: &mut [u8], words: &[u32]) {
    for (chunk, w) in dst.chunks_exact_mut(4).zip(words) {
        chunk.copy_from_slice(&w.to_ne_bytes());
    }
}

/// One node: the chase placed there, registered, walked once untimed, then timed.
fn node_cell(
    gpu: &Gpu,
    plan: &GpuHostLatencyPlan,
    node: u32,
    stream: &Stream,
    out: &DeviceMem,
) -> Result<GpuHostLatencyMeasurement, String> {
    let affinity = current_affinity().unwrap_or_default();
    let (mut buf, placement) = allocate_verified(
        plan.size_bytes as usize,
        &Target::Node(node),
        HugePages::Off,
        affinity,
    )?;
    let (words, start) = chase_words(plan.size_bytes, plan.stride_bytes, plan.seed);
    write_words(buf.as_mut_slice(), &words);
    let mapped = Registered::new(&gpu.device, buf.as_mut_slice()).map_err(|e| e.to_string())?;
    let steps = steps(plan.size_bytes, plan.stride_bytes);
    // Each walk goes on from where the last one ended: no line is loaded twice while
    // the cycle is longer than all the walks together, so no GPU cache can serve one.
    let mut at = start;
    let mut walk = |n: u64| -> Result<Chased, String> {
        let c = chase(gpu, stream, Arg::Mapped(&mapped), n, at, out).map_err(|e| e.to_string())?;
        at = c.end;
        Ok(c)
    };
    walk(WARM_STEPS)?;
    let runs = (0..plan.samples.max(1))
        .map(|_| walk(steps))
        .collect::<Result<Vec<Chased>, String>>()?;
    summarise(&runs, steps).map(
        |(samples_ns, latency_ns, latency_cycles)| GpuHostLatencyMeasurement {
            latency_ns,
            samples_ns,
            latency_cycles,
            loads_per_sample: steps,
            placement,
        },
    )
}

/// ns per load of each run, and the summaries of ns and cycles per load.
pub fn summarise(runs: &[Chased], steps: u64) -> Result<(Vec<f64>, Summary, Summary), String> {
    let ns: Vec<f64> = runs.iter().map(|r| r.ns_per_load).collect();
    let cycles: Vec<f64> = runs.iter().map(|r| r.cycles_per_load).collect();
    match (Summary::of(&ns), Summary::of(&cycles)) {
        (Some(n), Some(c)) if n.min > 0.0 => Ok((ns, n, c)),
        _ => Err(format!("the chase kernel timed nothing over {steps} loads")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::per_load;
    use crate::plan::cycle_length;

    fn plan(size_bytes: u64, stride_bytes: u64) -> GpuHostLatencyPlan {
        GpuHostLatencyPlan {
            size_bytes,
            stride_bytes,
            nodes: vec![0],
            samples: 3,
            seed: 7,
        }
    }

    #[test]
    fn plans_the_kernel_cannot_walk_are_refused() {
        assert!(check(&plan(64 << 20, 64)).is_ok());
        assert!(check(&plan(64 << 20, 2)).unwrap_err().contains("4-byte words"));
        assert!(check(&plan(64 << 20, 66)).is_err());
        assert!(check(&plan(32, 64)).unwrap_err().contains("less than one stride"));
        assert!(check(&plan(64 << 30, 64)).unwrap_err().contains("u32"));
    }

    #[test]
    fn samples_stay_short_over_pcie() {
        assert_eq!(steps(64 << 20, 64), MAX_STEPS, "1 M elements");
        assert_eq!(steps(4096, 64), MAX_STEPS, "chase_steps' floor is above the cap");
        assert_eq!(steps(64 << 20, 0), MAX_STEPS);
    }

    #[test]
    fn words_written_as_bytes_read_back_as_the_same_chase() {
        let (words, start) = chase_words(64 * 100, 64, 3);
        let mut bytes = vec![0xffu8; 64 * 100 + 4096];
        write_words(&mut bytes, &words);
        let back: Vec<u32> = bytes
            .chunks_exact(4)
            .take(words.len())
            .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(back, words);
        assert_eq!(cycle_length(&back, start), 100);
        assert!(
            bytes[words.len() * 4..].iter().all(|&b| b == 0xff),
            "nothing past the chase"
        );
    }

    #[test]
    fn summaries_take_ns_and_cycles_per_load() {
        let runs = [
            per_load(36_000_000, 20_000_000, 20_000, 0),
            per_load(38_000_000, 21_000_000, 20_000, 0),
        ];
        let (ns, n, c) = summarise(&runs, 20_000).unwrap();
        assert_eq!(ns, vec![1000.0, 1050.0]);
        assert_eq!((n.min, n.max), (1000.0, 1050.0));
        assert_eq!((c.min, c.max), (1800.0, 1900.0));
        assert!(summarise(&[per_load(0, 0, 20_000, 0)], 20_000).is_err());
        assert!(summarise(&[], 20_000).is_err());
    }

    /// Needs an NVIDIA GPU: cargo test -p memfabric-gpu -- --ignored
    #[test]
    #[ignore]
    fn chases_host_memory_from_a_real_gpu() {
        let gpu = Gpu::open(0, &memfabric_topo::Roots::live().sys).expect("a GPU");
        let p = plan(8 << 20, 64);
        let Outcome::Ok(cells) = measure(&gpu, &p, &memfabric_measure::Silent).unwrap() else {
            panic!("not measured");
        };
        let Outcome::Ok(m) = &cells[0].outcome else {
            panic!("{:?}", cells[0]);
        };
        assert!(
            m.latency_ns.median > 200.0 && m.latency_ns.median < 10_000.0,
            "{m:?}"
        );
        assert!(m.placement.verified);
        assert_eq!(m.samples_ns.len(), 3);
    }
}
