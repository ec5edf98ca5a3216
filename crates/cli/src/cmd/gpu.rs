//! `memfabric gpu ...`: GPU memory paths. Each subcommand opens the GPU, measures,
//! and records the GPU with its state before and after; without a driver the result
//! is skipped and the command exits 0.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use memfabric_gpu::{bandwidth, copy, host_latency, injection, latency, loaded, plan, with_gpu};
use memfabric_measure::latency::ChaseShape;
use memfabric_model::{
    CopyDirection, GpuBandwidthReport, GpuCopyReport, GpuHostLatencyReport, GpuInfoReport,
    GpuInjectionReport, GpuLatencyReport, GpuLoadedLatencyReport, GpuRecord, HugePages, Outcome, Pattern,
};
use memfabric_topo::Topology;

use crate::args::{
    directions, GpuArgs, GpuBandwidthArgs, GpuCommand, GpuCopyArgs, GpuHostLatencyArgs, GpuInjectionArgs,
    GpuLatencyArgs, GpuLoadedArgs,
};
use crate::output::{this_machine, Ctx, Status, Usage};

mod render;

pub use render::{copy as render_copy, render_bandwidth};

pub fn run(ctx: &Ctx, a: &GpuArgs) -> Result<Status> {
    let topo = this_machine()?;
    let sys = Path::new("/sys");
    let n = a.gpu;
    match &a.command {
        GpuCommand::Info => {
            let (_, outcome) = with_gpu(n, sys, |g| {
                Ok(Outcome::Ok(GpuRecord {
                    info: g.info.clone(),
                    start: g.state(),
                    end: g.state(),
                }))
            });
            let r = GpuInfoReport { outcome };
            finish(ctx, "gpu-info", &topo, &r, &r.outcome, || render::info(&r))
        }
        GpuCommand::Bandwidth(b) => {
            let r = measure_bandwidth(ctx, n, b)?;
            finish(ctx, "gpu-bandwidth", &topo, &r, &r.outcome, || {
                render_bandwidth(&r)
            })
        }
        GpuCommand::Latency(l) => {
            let r = measure_latency(ctx, n, l)?;
            finish(ctx, "gpu-latency", &topo, &r, &r.outcome, || render::latency(&r))
        }
        GpuCommand::Copy(c) => {
            let r = measure_copy(ctx, &topo, n, c)?;
            finish(ctx, "gpu-copy", &topo, &r, &r.outcome, || render::copy(&r))
        }
        GpuCommand::HostLatency(h) => {
            let r = measure_host_latency(ctx, &topo, n, h)?;
            finish(ctx, "gpu-host-latency", &topo, &r, &r.outcome, || {
                render::host_latency(&r)
            })
        }
        GpuCommand::LoadedLatency(l) => {
            let r = measure_loaded(ctx, &topo, n, l)?;
            finish(ctx, "gpu-loaded-latency", &topo, &r, &r.outcome, || {
                render::loaded(&r)
            })
        }
        GpuCommand::Injection(i) => {
            let r = measure_injection(ctx, &topo, n, i)?;
            finish(ctx, "gpu-injection", &topo, &r, &r.outcome, || {
                render::injection(&r)
            })
        }
    }
}

/// Prints (and saves) the report; a failed measurement exits 1, a skipped one 0.
fn finish<T: serde::Serialize + memfabric_model::Figures, O>(
    ctx: &Ctx,
    command: &str,
    topo: &Topology,
    report: &T,
    outcome: &Outcome<O>,
    text: impl FnOnce() -> String,
) -> Result<Status> {
    ctx.finish_report(command, topo, report, text)?;
    Ok(Status::from_failures(matches!(outcome, Outcome::Failed { .. })))
}

fn positive(what: &str, n: usize) -> Result<()> {
    if n == 0 {
        return Err(Usage(format!("{what} must be 1 or more")).into());
    }
    Ok(())
}

pub fn measure_bandwidth(ctx: &Ctx, n: u32, a: &GpuBandwidthArgs) -> Result<GpuBandwidthReport> {
    positive("--samples", a.samples)?;
    if a.block_threads == 0 || a.block_threads > 1024 || !a.block_threads.is_multiple_of(32) {
        return Err(Usage("--block-threads must be a multiple of 32 from 32 to 1024".into()).into());
    }
    if let Some(s) = a.sizes.iter().find(|&&s| s < 1024 || s % 16 != 0) {
        return Err(Usage(format!(
            "--sizes: {s} bytes is not a multiple of 16 of at least 1K"
        ))
        .into());
    }
    let kernels = a.kernels();
    let asked = if a.sizes.is_empty() {
        plan::DEFAULT_ARRAY_BYTES.to_vec()
    } else {
        a.sizes.clone()
    };
    let mut array_bytes = asked.clone();
    let (gpu, outcome) = with_gpu(n, Path::new("/sys"), |g| {
        let (free, _) = g.device.mem_info()?;
        let (fit, dropped) = plan::fitting_sizes(&asked, free);
        if fit.is_empty() {
            return Ok(Outcome::Failed {
                reason: format!(
                    "no array size fits in the {} MiB of free device memory",
                    free >> 20
                ),
            });
        }
        if !dropped.is_empty() {
            eprintln!("memfabric: left out array sizes that do not fit in device memory: {dropped:?} bytes");
        }
        array_bytes = fit.clone();
        let p = bandwidth::GpuBandwidthPlan {
            kernels: kernels.clone(),
            array_bytes: fit,
            block_threads: a.block_threads,
            samples: a.samples,
        };
        bandwidth::measure(g, &p, &ctx.progress)
    });
    Ok(GpuBandwidthReport {
        gpu,
        kernels,
        array_bytes,
        block_threads: a.block_threads,
        samples: a.samples,
        outcome,
    })
}

fn measure_latency(ctx: &Ctx, n: u32, a: &GpuLatencyArgs) -> Result<GpuLatencyReport> {
    positive("--samples", a.samples)?;
    positive("--points-per-octave", a.points_per_octave as usize)?;
    if a.stride == 0 || !a.stride.is_multiple_of(4) {
        return Err(Usage("--stride must be a multiple of 4 bytes".into()).into());
    }
    if a.min < a.stride || a.max.is_some_and(|m| m < a.min) {
        return Err(Usage("--min must be at least --stride, and --max at least --min".into()).into());
    }
    if a.max.is_some_and(|m| m > plan::MAX_CHASE_BYTES) {
        return Err(Usage("--max: the chase indexes 32-bit words, so at most 16G".into()).into());
    }
    let p = latency::GpuLatencyPlan {
        min_bytes: a.min,
        max_bytes: a.max,
        points_per_octave: a.points_per_octave,
        stride_bytes: a.stride,
        samples: a.samples,
        seed: a.seed,
    };
    let (gpu, outcome) = with_gpu(n, Path::new("/sys"), |g| latency::measure(g, &p, &ctx.progress));
    Ok(GpuLatencyReport {
        gpu,
        stride_bytes: a.stride,
        seed: a.seed,
        outcome,
    })
}

/// Nodes that hold memory, or the ones asked for (each checked).
fn memory_nodes(topo: &Topology, asked: Option<&[u32]>) -> Result<Vec<u32>> {
    let with_memory: Vec<u32> = topo
        .nodes
        .iter()
        .filter(|n| n.mem_total_bytes > 0)
        .map(|n| n.id)
        .collect();
    match asked {
        None => Ok(with_memory),
        Some(list) => {
            if let Some(bad) = list.iter().find(|n| !with_memory.contains(n)) {
                return Err(Usage(format!(
                    "node {bad} has no memory (nodes with memory: {with_memory:?})"
                ))
                .into());
            }
            Ok(list.to_vec())
        }
    }
}

pub fn measure_copy(ctx: &Ctx, topo: &Topology, n: u32, a: &GpuCopyArgs) -> Result<GpuCopyReport> {
    positive("--samples", a.samples)?;
    if a.size < 4096 || !a.size.is_multiple_of(16) {
        return Err(Usage("--size must be a multiple of 16 bytes, at least 4K".into()).into());
    }
    let nodes = memory_nodes(topo, a.nodes.as_ref().map(|l| l.0.as_slice()))?;
    let p = copy::GpuCopyPlan {
        size_bytes: a.size,
        samples: a.samples,
        nodes: nodes.clone(),
        memories: a.memories(),
        engines: a.engines(),
        directions: a.directions(),
        huge_pages: HugePages::Off,
    };
    let (gpu, outcome) = with_gpu(n, Path::new("/sys"), |g| copy::measure(g, &p, &ctx.progress));
    Ok(GpuCopyReport {
        gpu,
        size_bytes: a.size,
        samples: a.samples,
        nodes,
        outcome,
    })
}

fn measure_host_latency(
    ctx: &Ctx,
    topo: &Topology,
    n: u32,
    a: &GpuHostLatencyArgs,
) -> Result<GpuHostLatencyReport> {
    positive("--samples", a.samples)?;
    if a.stride == 0 || !a.stride.is_multiple_of(4) || a.size < a.stride {
        return Err(
            Usage("--stride must be a multiple of 4 bytes, and --size at least one stride".into()).into(),
        );
    }
    let nodes = memory_nodes(topo, a.nodes.as_ref().map(|l| l.0.as_slice()))?;
    let p = host_latency::GpuHostLatencyPlan {
        size_bytes: a.size,
        stride_bytes: a.stride,
        nodes: nodes.clone(),
        samples: a.samples,
        seed: a.seed,
    };
    let (gpu, outcome) = with_gpu(n, Path::new("/sys"), |g| {
        host_latency::measure(g, &p, &ctx.progress)
    });
    Ok(GpuHostLatencyReport {
        gpu,
        size_bytes: a.size,
        stride_bytes: a.stride,
        nodes,
        outcome,
    })
}

/// The node asked for, else the GPU's own, else 0; and the CPU asked for, else the
/// node's first allowed CPU, else the first allowed CPU (a CPU-less node).
fn node_and_cpu(
    topo: &Topology,
    node: Option<u32>,
    gpu_node: Option<u32>,
    cpu: Option<u32>,
) -> Result<(u32, u32)> {
    let node = node.or(gpu_node).unwrap_or(0);
    let allowed = memfabric_measure::sys::current_affinity()?;
    let Some(n) = topo.node(node) else {
        return Err(Usage(format!("no NUMA node {node}")).into());
    };
    if let Some(c) = cpu {
        if !allowed.contains(&c) {
            return Err(Usage(format!("CPU {c} is not one this process may run on")).into());
        }
        return Ok((node, c));
    }
    let first = n.cpus.iter().find(|c| allowed.contains(c)).or(allowed.first());
    match first {
        Some(&c) => Ok((node, c)),
        None => Err(Usage("no CPU this process may run on".into()).into()),
    }
}

/// Runs `measure` on GPU `n` on a node and CPU: those asked for (refused before the GPU
/// is touched where wrong), else the GPU's own node, known once it is open. Returns
/// the node and CPU used with the result.
fn on_node<T>(
    topo: &Topology,
    n: u32,
    node: Option<u32>,
    cpu: Option<u32>,
    measure: impl FnOnce(&memfabric_gpu::Gpu, u32, u32) -> Result<Outcome<T>, memfabric_gpu::GpuError>,
) -> Result<(u32, u32, Option<GpuRecord>, Outcome<T>)> {
    let mut chosen = node_and_cpu(topo, node, None, cpu)?;
    let (gpu, outcome) = with_gpu(n, Path::new("/sys"), |g| {
        if node.is_none() && g.info.numa_node.is_some() {
            chosen = node_and_cpu(topo, None, g.info.numa_node, cpu)
                .map_err(|e| memfabric_gpu::GpuError::Other(e.to_string()))?;
        }
        measure(g, chosen.0, chosen.1)
    });
    Ok((chosen.0, chosen.1, gpu, outcome))
}

fn measure_loaded(ctx: &Ctx, topo: &Topology, n: u32, a: &GpuLoadedArgs) -> Result<GpuLoadedLatencyReport> {
    positive("--samples", a.samples)?;
    let direction = directions(&[a.direction])
        .first()
        .copied()
        .unwrap_or(CopyDirection::Bidirectional);
    let chase_bytes = a
        .chase_size
        .unwrap_or(topo.total_llc_bytes().saturating_mul(4).max(256 << 20));
    let gaps: Vec<Option<u64>> = if a.gaps.is_empty() {
        loaded::default_gaps()
    } else {
        std::iter::once(None)
            .chain(a.gaps.iter().map(|&g| Some(g)))
            .collect()
    };
    let plan = |cpu, node| loaded::GpuLoadedPlan {
        cpu,
        node,
        chase: ChaseShape {
            size_bytes: chase_bytes,
            stride_bytes: 64,
            window_bytes: 4096,
            pattern: Pattern::Random,
            huge_pages: HugePages::Off,
            seed: crate::args::DEFAULT_SEED,
        },
        copy_bytes: a.copy_size,
        direction,
        gaps_us: gaps.clone(),
        samples: a.samples,
        sample_time: Duration::from_millis(a.sample_ms.max(1)),
    };
    let (node, cpu, gpu, outcome) = on_node(topo, n, a.node, a.cpu, |g, node, cpu| {
        loaded::measure(g, &plan(cpu, node), &ctx.progress)
    })?;
    Ok(GpuLoadedLatencyReport {
        gpu,
        cpu,
        node,
        chase_bytes,
        copy_bytes: a.copy_size,
        direction,
        outcome,
    })
}

fn measure_injection(ctx: &Ctx, topo: &Topology, n: u32, a: &GpuInjectionArgs) -> Result<GpuInjectionReport> {
    positive("--samples", a.samples)?;
    if a.size < 4096 || !a.size.is_multiple_of(64) {
        return Err(Usage("--size must be a multiple of 64 bytes, at least 4K".into()).into());
    }
    let plan = |cpu, node| injection::GpuInjectionPlan {
        cpu,
        node,
        buffer_bytes: a.size,
        samples: a.samples,
        seed: a.seed,
    };
    let (node, cpu, gpu, outcome) = on_node(topo, n, a.node, a.cpu, |g, node, cpu| {
        injection::measure(g, &plan(cpu, node), &ctx.progress)
    })?;
    Ok(GpuInjectionReport {
        gpu,
        cpu,
        node,
        buffer_bytes: a.size,
        outcome,
    })
}
