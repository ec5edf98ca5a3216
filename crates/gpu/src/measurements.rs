//! Every GPU command as a [`Measurement`]: the plan stage checks the options and
//! resolves nodes and CPUs with the same rules as the CPU measurements (before the
//! GPU is touched); the run stage opens the GPU, measures and records it.

use std::path::PathBuf;
use std::time::Duration;

use memfabric_measure::latency::ChaseShape;
use memfabric_measure::plan::{Machine, PlanError};
use memfabric_measure::{Measurement, Observer};
use memfabric_model::{
    CopyDirection, CopyEngine, GpuBandwidthReport, GpuCopyReport, GpuHostLatencyReport, GpuInfoReport,
    GpuInjectionReport, GpuLatencyReport, GpuLoadedLatencyReport, GpuRecord, HostMemory, HugePages, Outcome,
    Pattern,
};

use crate::{bandwidth, copy, host_latency, injection, latency, loaded, plan, with_gpu, Gpu, GpuError};

/// Which GPU, and the sysfs root its PCI slot's node and link are read from.
#[derive(Debug, Clone)]
pub struct Target {
    pub gpu: u32,
    pub sysfs: PathBuf,
}

/// A GPU measurement's options (or plan) and the GPU it runs on.
#[derive(Debug, Clone)]
pub struct OnGpu<T> {
    pub target: Target,
    pub options: T,
}

impl Target {
    fn with<T>(
        &self,
        measure: impl FnOnce(&Gpu) -> Result<Outcome<T>, GpuError>,
    ) -> (Option<GpuRecord>, Outcome<T>) {
        with_gpu(self.gpu, &self.sysfs, measure)
    }

    fn plan<P>(&self, plan: P) -> OnGpu<P> {
        OnGpu {
            target: self.clone(),
            options: plan,
        }
    }
}

fn bad(text: &str) -> PlanError {
    PlanError::BadValue(text.into())
}

fn positive(what: &str, n: usize) -> Result<(), PlanError> {
    if n == 0 {
        return Err(PlanError::BadValue(format!("{what} must be 1 or more")));
    }
    Ok(())
}

/// `memfabric gpu info`.
pub struct Info;

impl Measurement for Info {
    type Options = OnGpu<()>;
    type Plan = OnGpu<()>;
    type Report = GpuInfoReport;

    fn plan(_: &Machine, o: &Self::Options) -> Result<Self::Plan, PlanError> {
        Ok(o.clone())
    }

    fn run(p: &Self::Plan, _: &dyn Observer) -> GpuInfoReport {
        let (_, outcome) = p.target.with(|g| {
            Ok(Outcome::Ok(GpuRecord {
                info: g.info.clone(),
                start: g.state(),
                end: g.state(),
            }))
        });
        GpuInfoReport { outcome }
    }
}

/// `memfabric gpu bandwidth`: the plan's sizes are those asked for (or the
/// defaults); the run keeps those that fit in free device memory.
pub struct Bandwidth;

impl Measurement for Bandwidth {
    type Options = OnGpu<bandwidth::GpuBandwidthPlan>;
    type Plan = OnGpu<bandwidth::GpuBandwidthPlan>;
    type Report = GpuBandwidthReport;

    fn plan(_: &Machine, o: &Self::Options) -> Result<Self::Plan, PlanError> {
        let a = &o.options;
        positive("--samples", a.samples)?;
        if a.block_threads == 0 || a.block_threads > 1024 || !a.block_threads.is_multiple_of(32) {
            return Err(bad("--block-threads must be a multiple of 32 from 32 to 1024"));
        }
        if let Some(s) = a.array_bytes.iter().find(|&&s| s < 1024 || s % 16 != 0) {
            return Err(PlanError::BadValue(format!(
                "--sizes: {s} bytes is not a multiple of 16 of at least 1K"
            )));
        }
        let mut p = a.clone();
        if p.array_bytes.is_empty() {
            p.array_bytes = plan::DEFAULT_ARRAY_BYTES.to_vec();
        }
        Ok(o.target.plan(p))
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> GpuBandwidthReport {
        let asked = &p.options;
        let mut array_bytes = asked.array_bytes.clone();
        let (gpu, outcome) = p.target.with(|g| {
            let (free, _) = g.device.mem_info()?;
            let (fit, _) = plan::fitting_sizes(&asked.array_bytes, free);
            if fit.is_empty() {
                return Ok(Outcome::Failed {
                    reason: format!(
                        "no array size fits in the {} MiB of free device memory",
                        free >> 20
                    ),
                });
            }
            array_bytes = fit.clone();
            let fitting = bandwidth::GpuBandwidthPlan {
                array_bytes: fit,
                ..asked.clone()
            };
            bandwidth::measure(g, &fitting, obs)
        });
        GpuBandwidthReport {
            gpu,
            kernels: asked.kernels.clone(),
            array_bytes,
            block_threads: asked.block_threads,
            samples: asked.samples,
            outcome,
        }
    }
}

/// `memfabric gpu latency`.
pub struct Latency;

impl Measurement for Latency {
    type Options = OnGpu<latency::GpuLatencyPlan>;
    type Plan = OnGpu<latency::GpuLatencyPlan>;
    type Report = GpuLatencyReport;

    fn plan(_: &Machine, o: &Self::Options) -> Result<Self::Plan, PlanError> {
        let a = &o.options;
        positive("--samples", a.samples)?;
        positive("--points-per-octave", a.points_per_octave as usize)?;
        if a.stride_bytes == 0 || !a.stride_bytes.is_multiple_of(4) {
            return Err(bad("--stride must be a multiple of 4 bytes"));
        }
        if a.min_bytes < a.stride_bytes || a.max_bytes.is_some_and(|m| m < a.min_bytes) {
            return Err(bad("--min must be at least --stride, and --max at least --min"));
        }
        if a.max_bytes.is_some_and(|m| m > plan::MAX_CHASE_BYTES) {
            return Err(bad("--max: the chase indexes 32-bit words, so at most 16G"));
        }
        Ok(o.clone())
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> GpuLatencyReport {
        let (gpu, outcome) = p.target.with(|g| latency::measure(g, &p.options, obs));
        GpuLatencyReport {
            gpu,
            stride_bytes: p.options.stride_bytes,
            seed: p.options.seed,
            outcome,
        }
    }
}

/// What `gpu copy` is asked: `nodes` None is every node with memory.
#[derive(Debug, Clone)]
pub struct CopyOptions {
    pub size_bytes: u64,
    pub samples: usize,
    pub nodes: Option<Vec<u32>>,
    pub memories: Vec<HostMemory>,
    pub engines: Vec<CopyEngine>,
    pub directions: Vec<CopyDirection>,
}

/// `memfabric gpu copy`.
pub struct Copy;

impl Measurement for Copy {
    type Options = OnGpu<CopyOptions>;
    type Plan = OnGpu<copy::GpuCopyPlan>;
    type Report = GpuCopyReport;

    fn plan(m: &Machine, o: &Self::Options) -> Result<Self::Plan, PlanError> {
        let a = &o.options;
        positive("--samples", a.samples)?;
        if a.size_bytes < 4096 || !a.size_bytes.is_multiple_of(16) {
            return Err(bad("--size must be a multiple of 16 bytes, at least 4K"));
        }
        Ok(o.target.plan(copy::GpuCopyPlan {
            size_bytes: a.size_bytes,
            samples: a.samples,
            nodes: m.memory_nodes(a.nodes.as_deref())?,
            memories: a.memories.clone(),
            engines: a.engines.clone(),
            directions: a.directions.clone(),
            huge_pages: HugePages::Off,
        }))
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> GpuCopyReport {
        let (gpu, outcome) = p.target.with(|g| copy::measure(g, &p.options, obs));
        GpuCopyReport {
            gpu,
            size_bytes: p.options.size_bytes,
            samples: p.options.samples,
            nodes: p.options.nodes.clone(),
            outcome,
        }
    }
}

/// What `gpu host-latency` is asked: `nodes` None is every node with memory.
#[derive(Debug, Clone)]
pub struct HostLatencyOptions {
    pub size_bytes: u64,
    pub stride_bytes: u64,
    pub nodes: Option<Vec<u32>>,
    pub samples: usize,
    pub seed: u64,
}

/// `memfabric gpu host-latency`.
pub struct HostLatency;

impl Measurement for HostLatency {
    type Options = OnGpu<HostLatencyOptions>;
    type Plan = OnGpu<host_latency::GpuHostLatencyPlan>;
    type Report = GpuHostLatencyReport;

    fn plan(m: &Machine, o: &Self::Options) -> Result<Self::Plan, PlanError> {
        let a = &o.options;
        positive("--samples", a.samples)?;
        if a.stride_bytes == 0 || !a.stride_bytes.is_multiple_of(4) || a.size_bytes < a.stride_bytes {
            return Err(bad(
                "--stride must be a multiple of 4 bytes, and --size at least one stride",
            ));
        }
        Ok(o.target.plan(host_latency::GpuHostLatencyPlan {
            size_bytes: a.size_bytes,
            stride_bytes: a.stride_bytes,
            nodes: m.memory_nodes(a.nodes.as_deref())?,
            samples: a.samples,
            seed: a.seed,
        }))
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> GpuHostLatencyReport {
        let (gpu, outcome) = p.target.with(|g| host_latency::measure(g, &p.options, obs));
        GpuHostLatencyReport {
            gpu,
            size_bytes: p.options.size_bytes,
            stride_bytes: p.options.stride_bytes,
            nodes: p.options.nodes.clone(),
            outcome,
        }
    }
}

/// Where a CPU-side GPU measurement runs: the node and CPU asked for, checked in
/// the plan; without a node, the GPU's own, known once it is open (node 0 and its
/// CPU until then).
#[derive(Debug, Clone)]
pub struct Placed<T> {
    pub target: Target,
    pub node: Option<u32>,
    pub cpu: Option<u32>,
    pub options: T,
}

/// A placed plan: the node and CPU resolved before the GPU is opened, and the
/// machine's nodes and allowed CPUs, to resolve the GPU's own node against.
pub struct Resolved<T> {
    pub placed: Placed<T>,
    pub chosen: (u32, u32),
    machine: (memfabric_topo::Topology, Vec<u32>, memfabric_topo::Roots),
}

impl<T: Clone> Resolved<T> {
    fn new(m: &Machine, o: &Placed<T>) -> Result<Resolved<T>, PlanError> {
        Ok(Resolved {
            placed: o.clone(),
            chosen: m.node_and_cpu(o.node.unwrap_or(0), o.cpu)?,
            machine: (m.topo.clone(), m.allowed_cpus.clone(), m.roots.clone()),
        })
    }

    /// A CPU's SMT siblings, from the topology.
    fn siblings(&self, cpu: u32) -> Vec<u32> {
        self.machine
            .0
            .cpu(cpu)
            .map(|c| c.smt_siblings.clone())
            .unwrap_or_default()
    }

    /// Opens the GPU and measures on the chosen node and CPU; returns them with
    /// the GPU's record and the outcome.
    fn on_node<R>(
        &self,
        measure: impl FnOnce(&Gpu, u32, u32) -> Result<Outcome<R>, GpuError>,
    ) -> ((u32, u32), Option<GpuRecord>, Outcome<R>) {
        let mut chosen = self.chosen;
        let (gpu, outcome) = self.placed.target.with(|g| {
            if let (None, Some(own)) = (self.placed.node, g.info.numa_node) {
                let m = Machine {
                    topo: &self.machine.0,
                    allowed_cpus: self.machine.1.clone(),
                    roots: self.machine.2.clone(),
                };
                chosen = m
                    .node_and_cpu(own, self.placed.cpu)
                    .map_err(|e| GpuError::Other(e.to_string()))?;
            }
            measure(g, chosen.0, chosen.1)
        });
        (chosen, gpu, outcome)
    }
}

/// What `gpu loaded-latency` is asked.
#[derive(Debug, Clone)]
pub struct LoadedOptions {
    /// None: four times the last-level caches, at least 256 MiB.
    pub chase_bytes: Option<u64>,
    pub copy_bytes: u64,
    pub direction: CopyDirection,
    /// Microseconds between copies, one point each; empty: the default list.
    pub gaps_us: Vec<u64>,
    pub samples: usize,
    pub sample_time: Duration,
    pub seed: u64,
}

/// `memfabric gpu loaded-latency`.
pub struct LoadedLatency;

impl Measurement for LoadedLatency {
    type Options = Placed<LoadedOptions>;
    type Plan = Resolved<LoadedOptions>;
    type Report = GpuLoadedLatencyReport;

    fn plan(m: &Machine, o: &Self::Options) -> Result<Self::Plan, PlanError> {
        positive("--samples", o.options.samples)?;
        let mut r = Resolved::new(m, o)?;
        let a = &mut r.placed.options;
        a.chase_bytes = Some(a.chase_bytes.unwrap_or_else(|| m.default_bytes()));
        Ok(r)
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> GpuLoadedLatencyReport {
        let a = &p.placed.options;
        let chase_bytes = a.chase_bytes.expect("planned");
        let gaps_us = if a.gaps_us.is_empty() {
            loaded::default_gaps()
        } else {
            std::iter::once(None)
                .chain(a.gaps_us.iter().map(|&g| Some(g)))
                .collect()
        };
        let ((node, cpu), gpu, outcome) = p.on_node(|g, node, cpu| {
            let plan = loaded::GpuLoadedPlan {
                cpu,
                cpu_siblings: p.siblings(cpu),
                node,
                chase: ChaseShape {
                    size_bytes: chase_bytes,
                    stride_bytes: 64,
                    window_bytes: 4096,
                    pattern: Pattern::Random,
                    huge_pages: HugePages::Off,
                    seed: a.seed,
                },
                copy_bytes: a.copy_bytes,
                direction: a.direction,
                gaps_us,
                samples: a.samples,
                sample_time: a.sample_time,
            };
            loaded::measure(g, &plan, obs)
        });
        GpuLoadedLatencyReport {
            gpu,
            cpu,
            node,
            chase_bytes,
            copy_bytes: a.copy_bytes,
            direction: a.direction,
            outcome,
        }
    }
}

/// What `gpu injection` is asked.
#[derive(Debug, Clone)]
pub struct InjectionOptions {
    pub buffer_bytes: u64,
    pub samples: usize,
    pub seed: u64,
}

/// `memfabric gpu injection`.
pub struct Injection;

impl Measurement for Injection {
    type Options = Placed<InjectionOptions>;
    type Plan = Resolved<InjectionOptions>;
    type Report = GpuInjectionReport;

    fn plan(m: &Machine, o: &Self::Options) -> Result<Self::Plan, PlanError> {
        let a = &o.options;
        positive("--samples", a.samples)?;
        if a.buffer_bytes < 4096 || !a.buffer_bytes.is_multiple_of(64) {
            return Err(bad("--size must be a multiple of 64 bytes, at least 4K"));
        }
        Resolved::new(m, o)
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> GpuInjectionReport {
        let a = &p.placed.options;
        let ((node, cpu), gpu, outcome) = p.on_node(|g, node, cpu| {
            let plan = injection::GpuInjectionPlan {
                cpu,
                node,
                buffer_bytes: a.buffer_bytes,
                samples: a.samples,
                seed: a.seed,
            };
            injection::measure(g, &plan, obs)
        });
        GpuInjectionReport {
            gpu,
            cpu,
            node,
            buffer_bytes: a.buffer_bytes,
            outcome,
        }
    }
}
