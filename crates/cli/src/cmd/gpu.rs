//! `memfabric gpu ...`: GPU memory paths. Each subcommand turns its flags into the
//! options of one of memfabric-gpu's measurements, which opens the GPU, measures, and
//! records the GPU with its state before and after; without a driver the result is
//! skipped and the command exits 0.

use std::time::Duration;

use anyhow::Result;
use memfabric_gpu::measurements::{
    self as gpu, CopyOptions, HostLatencyOptions, InjectionOptions, LoadedOptions, OnGpu, Placed, Target,
};
use memfabric_gpu::{bandwidth::GpuBandwidthPlan, latency::GpuLatencyPlan};
use memfabric_model::{CopyDirection, GpuBandwidthReport, GpuCopyReport};
use memfabric_topo::{Roots, Topology};

use super::common;
use crate::args::{directions, GpuArgs, GpuBandwidthArgs, GpuCommand, GpuCopyArgs};
use crate::output::{this_machine, Ctx, Status};

mod render;

pub use render::{copy as render_copy, render_bandwidth};

fn target(gpu: u32) -> Target {
    Target {
        gpu,
        sysfs: Roots::live().sys,
    }
}

fn on<T>(gpu: u32, options: T) -> OnGpu<T> {
    OnGpu {
        target: target(gpu),
        options,
    }
}

pub fn run(ctx: &Ctx, a: &GpuArgs) -> Result<Status> {
    let topo = this_machine()?;
    let n = a.gpu;
    match &a.command {
        GpuCommand::Info => {
            let r = common::measure::<gpu::Info>(ctx, &topo, &on(n, ()))?;
            ctx.conclude(&topo, r, render::info)
        }
        GpuCommand::Bandwidth(b) => {
            let r = measure_bandwidth(ctx, &topo, n, b)?;
            ctx.conclude(&topo, r, render_bandwidth)
        }
        GpuCommand::Latency(l) => {
            let options = GpuLatencyPlan {
                min_bytes: l.min,
                max_bytes: l.max,
                points_per_octave: l.points_per_octave,
                stride_bytes: l.stride,
                samples: l.samples,
                seed: l.seed,
            };
            let r = common::measure::<gpu::Latency>(ctx, &topo, &on(n, options))?;
            ctx.conclude(&topo, r, render::latency)
        }
        GpuCommand::Copy(c) => {
            let r = measure_copy(ctx, &topo, n, c)?;
            ctx.conclude(&topo, r, render::copy)
        }
        GpuCommand::HostLatency(h) => {
            let options = HostLatencyOptions {
                size_bytes: h.size,
                stride_bytes: h.stride,
                nodes: h.nodes.as_ref().map(|l| l.0.clone()),
                samples: h.samples,
                seed: h.seed,
            };
            let r = common::measure::<gpu::HostLatency>(ctx, &topo, &on(n, options))?;
            ctx.conclude(&topo, r, render::host_latency)
        }
        GpuCommand::LoadedLatency(l) => {
            let options = LoadedOptions {
                chase_bytes: l.chase_size,
                copy_bytes: l.copy_size,
                direction: directions(&[l.direction])
                    .first()
                    .copied()
                    .unwrap_or(CopyDirection::Bidirectional),
                gaps_us: l.gaps.clone(),
                samples: l.samples,
                sample_time: Duration::from_millis(l.sample_ms.max(1)),
                seed: crate::args::DEFAULT_SEED,
            };
            let placed = Placed {
                target: target(n),
                node: l.node,
                cpu: l.cpu,
                options,
            };
            let r = common::measure::<gpu::LoadedLatency>(ctx, &topo, &placed)?;
            ctx.conclude(&topo, r, render::loaded)
        }
        GpuCommand::Injection(i) => {
            let options = InjectionOptions {
                buffer_bytes: i.size,
                samples: i.samples,
                seed: i.seed,
            };
            let placed = Placed {
                target: target(n),
                node: i.node,
                cpu: i.cpu,
                options,
            };
            let r = common::measure::<gpu::Injection>(ctx, &topo, &placed)?;
            ctx.conclude(&topo, r, render::injection)
        }
    }
}

pub fn measure_bandwidth(
    ctx: &Ctx,
    topo: &Topology,
    n: u32,
    a: &GpuBandwidthArgs,
) -> Result<GpuBandwidthReport> {
    let options = GpuBandwidthPlan {
        kernels: a.kernels(),
        array_bytes: a.sizes.clone(),
        block_threads: a.block_threads,
        samples: a.samples,
    };
    let r = common::measure::<gpu::Bandwidth>(ctx, topo, &on(n, options))?;
    let dropped: Vec<u64> = (if a.sizes.is_empty() {
        memfabric_gpu::plan::DEFAULT_ARRAY_BYTES.to_vec()
    } else {
        a.sizes.clone()
    })
    .into_iter()
    .filter(|s| !r.array_bytes.contains(s))
    .collect();
    if !dropped.is_empty() {
        eprintln!("memfabric: left out array sizes that do not fit in device memory: {dropped:?} bytes");
    }
    Ok(r)
}

pub fn measure_copy(ctx: &Ctx, topo: &Topology, n: u32, a: &GpuCopyArgs) -> Result<GpuCopyReport> {
    let options = CopyOptions {
        size_bytes: a.size,
        samples: a.samples,
        nodes: a.nodes.as_ref().map(|l| l.0.clone()),
        memories: a.memories(),
        engines: a.engines(),
        directions: a.directions(),
    };
    common::measure::<gpu::Copy>(ctx, topo, &on(n, options))
}
