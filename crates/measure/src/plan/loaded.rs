//! Resolving a loaded-latency request against the machine: which CPU measures, which
//! CPUs load, which memory, and the steps. Refused here, before anything is allocated.

use std::time::Duration;

use memfabric_model::{HugePages, Mix, Pattern};
use memfabric_topo::format_cpulist;

use crate::bandwidth::KernelOptions;
use crate::kernels::Isa;
use crate::latency::ChaseShape;
use crate::loaded::{delay_levels, LoadThread, LoadedPlan, Step};
use crate::plan::{chase_shape, check_kernel, LatencyOptions, Machine, PlanError};
use crate::team::Member;

pub struct LoadedOptions {
    pub latency_cpu: Option<u32>,
    /// Measure from the first allowed CPU of this L3 domain.
    pub latency_domain: Option<usize>,
    pub load_cpus: Option<Vec<u32>>,
    /// Load from the allowed CPUs of this L3 domain.
    pub load_domain: Option<usize>,
    pub mem_node: Option<u32>,
    /// Load from the allowed CPUs of these nodes.
    pub load_nodes: Option<Vec<u32>>,
    /// Where the load's arrays live: one node for all, or one per --load-nodes node
    /// (default: the chase's node).
    pub load_mem_nodes: Option<Vec<u32>>,
    pub mix: Mix,
    /// One step per L3 domain, added one by one at full speed.
    pub spread: bool,
    /// Throttle levels (the first is no delay).
    pub points: usize,
    pub chase_bytes: Option<u64>,
    pub array_bytes_per_thread: Option<u64>,
    pub huge_pages: HugePages,
    pub samples: usize,
    pub sample_time: Duration,
    pub isa: Isa,
    pub seed: u64,
}

/// Fewest throttle levels a curve may have.
pub const MIN_POINTS: usize = 2;
/// Each point doubles the load threads' pause between 4 KiB blocks; at 24 points the
/// last pause is 2^22 spins (milliseconds per block: the load is all but idle), and
/// a few more would overflow any counter of time.
pub const MAX_POINTS: usize = 24;

pub fn loaded_plan(m: &Machine, opt: &LoadedOptions) -> Result<LoadedPlan, PlanError> {
    check_options(opt)?;
    let latency_cpu = match (opt.latency_cpu, opt.latency_domain) {
        (Some(cpu), _) => m.allowed_cpu(cpu)?.id,
        (None, Some(d)) => *domain_cpus(m, d)?.first().ok_or_else(|| no_allowed(m, d))?,
        (None, None) => *m
            .allowed_cpus
            .first()
            .ok_or_else(|| PlanError::BadValue("no allowed CPU".into()))?,
    };
    let mem_node = opt.mem_node.unwrap_or_else(|| m.node_of_cpu(latency_cpu));
    m.check_mem_node(mem_node)?;
    let (load, steps) = if opt.spread {
        spread(m, latency_cpu, mem_node)?
    } else {
        throttled(m, opt, latency_cpu, mem_node)?
    };
    let chase_size = opt.chase_bytes.unwrap_or_else(|| m.default_bytes());
    let latency = LatencyOptions {
        size_bytes: Some(chase_size),
        stride_bytes: 64,
        window_bytes: None,
        pattern: Pattern::Random,
        huge_pages: opt.huge_pages,
        samples: opt.samples,
        sample_time: opt.sample_time,
        seed: opt.seed,
    };
    let window_bytes = chase_shape(chase_size, &latency)?;
    let array_bytes = m.array_bytes(opt.array_bytes_per_thread, load.len());
    let mut nodes: Vec<u32> = load.iter().map(|l| l.member.mem_node).chain([mem_node]).collect();
    nodes.sort_unstable();
    nodes.dedup();
    for node in nodes {
        let threads = load.iter().filter(|l| l.member.mem_node == node).count() as u64;
        let arrays = array_bytes
            .saturating_mul(opt.mix.arrays())
            .saturating_mul(threads);
        // The chase's visit order is built beside it: 8 bytes per 64-byte line.
        let chase = if node == mem_node {
            chase_size + chase_size / 8
        } else {
            0
        };
        m.check_fits(node, arrays.saturating_add(chase), opt.huge_pages)?;
    }
    Ok(LoadedPlan {
        latency_cpu,
        latency_domain: m.topo.cpu(latency_cpu).and_then(|c| c.l3_domain),
        mem_node,
        shape: ChaseShape {
            size_bytes: chase_size,
            stride_bytes: 64,
            window_bytes,
            pattern: Pattern::Random,
            huge_pages: opt.huge_pages,
            seed: opt.seed,
        },
        samples: opt.samples,
        sample_time: opt.sample_time,
        load,
        mix: opt.mix,
        kernel: KernelOptions {
            isa: opt.isa,
            array_bytes,
            huge_pages: opt.huge_pages,
            samples: opt.samples,
        },
        steps,
        spread: opt.spread,
        settle: Duration::from_millis(50),
    })
}

/// The checks that need no machine: the kernel, flags that exclude each other, the
/// number of points.
fn check_options(opt: &LoadedOptions) -> Result<(), PlanError> {
    check_kernel(opt.isa, &[opt.mix], opt.samples)?;
    let conflict = |what: &str| Err(PlanError::Conflict(what.into()));
    if opt.latency_cpu.is_some() && opt.latency_domain.is_some() {
        return conflict("--latency-cpu and --latency-domain cannot be combined");
    }
    if opt.load_cpus.is_some() && opt.load_domain.is_some() {
        return conflict("--load-cpus and --load-domain cannot be combined");
    }
    let choosers = [
        opt.load_cpus.is_some(),
        opt.load_domain.is_some(),
        opt.load_nodes.is_some(),
    ];
    if choosers.iter().filter(|&&c| c).count() > 1 {
        return conflict("choose the load CPUs one way: --load-cpus, --load-domain or --load-nodes");
    }
    if opt.spread && choosers.contains(&true) {
        return conflict(
            "--spread loads every L3 domain in turn; drop --load-cpus, --load-domain and --load-nodes",
        );
    }
    if !opt.spread && !(MIN_POINTS..=MAX_POINTS).contains(&opt.points) {
        return Err(PlanError::BadValue(format!(
            "--points must be {MIN_POINTS} to {MAX_POINTS}, not {}: each point doubles the load's pause, and at {MAX_POINTS} the load is already all but idle",
            opt.points
        )));
    }
    Ok(())
}

/// Every load CPU from the first step, throttled by a delay that shrinks step by step.
fn throttled(
    m: &Machine,
    opt: &LoadedOptions,
    latency_cpu: u32,
    mem_node: u32,
) -> Result<(Vec<LoadThread>, Vec<Step>), PlanError> {
    let cpus = load_cpus(m, opt, latency_cpu)?;
    let load_mem = load_memory(m, opt, mem_node)?;
    let load = cpus
        .iter()
        .map(|&cpu| LoadThread {
            member: Member {
                cpu,
                mem_node: load_mem(m.node_of_cpu(cpu)),
            },
            from_step: 0,
        })
        .collect();
    let steps = delay_levels(opt.points)
        .into_iter()
        .map(|delay_spins| Step {
            delay_spins,
            domains: Vec::new(),
        })
        .collect();
    Ok((load, steps))
}

fn no_allowed(m: &Machine, d: usize) -> PlanError {
    PlanError::BadValue(format!(
        "L3 domain {d} has no CPU this process may use (allowed: {})",
        format_cpulist(&m.allowed_cpus)
    ))
}

/// The allowed CPUs of an L3 domain, refusing an index the topology does not have.
fn domain_cpus(m: &Machine, d: usize) -> Result<Vec<u32>, PlanError> {
    let domain = m.topo.l3_domains.get(d).ok_or_else(|| {
        PlanError::BadValue(format!(
            "L3 domain {d} does not exist (domains: 0-{})",
            m.topo.l3_domains.len().saturating_sub(1)
        ))
    })?;
    Ok(domain
        .cpus
        .iter()
        .copied()
        .filter(|c| m.allowed_cpus.contains(c))
        .collect())
}

/// Where each load CPU's arrays go, by the CPU's node: one --load-mem-nodes node for
/// all, else the one in the same place as its --load-nodes node, else the chase's.
fn load_memory(m: &Machine, opt: &LoadedOptions, chase_node: u32) -> Result<impl Fn(u32) -> u32, PlanError> {
    let given = opt.load_mem_nodes.clone().unwrap_or_default();
    for &n in &given {
        m.check_mem_node(n)?;
    }
    let load_nodes = opt.load_nodes.clone().unwrap_or_default();
    if given.len() > 1 && given.len() != load_nodes.len() {
        return Err(PlanError::BadValue(format!(
            "--load-mem-nodes gives {} nodes for {} --load-nodes: give one for all, or one per load node in the same order",
            given.len(),
            load_nodes.len()
        )));
    }
    Ok(move |cpu_node: u32| match given.as_slice() {
        [] => chase_node,
        [one] => *one,
        many => load_nodes
            .iter()
            .position(|&n| n == cpu_node)
            .map_or(chase_node, |i| many[i]),
    })
}

/// The CPUs that load: those named, a domain's, some nodes', or every other allowed CPU.
fn load_cpus(m: &Machine, opt: &LoadedOptions, latency_cpu: u32) -> Result<Vec<u32>, PlanError> {
    if let Some(nodes) = &opt.load_nodes {
        let mut cpus = Vec::new();
        for (i, &n) in nodes.iter().enumerate() {
            if nodes[..i].contains(&n) {
                return Err(PlanError::BadValue(format!("--load-nodes names node {n} twice")));
            }
            cpus.extend(m.allowed_cpus_of(n)?.into_iter().filter(|&c| c != latency_cpu));
        }
        if cpus.is_empty() {
            return Err(PlanError::BadValue(format!(
                "--load-nodes {}: no CPU left to load besides latency CPU {latency_cpu}",
                format_cpulist(nodes)
            )));
        }
        return Ok(cpus);
    }
    let cpus = match (&opt.load_cpus, opt.load_domain) {
        (Some(list), _) => {
            for &c in list {
                m.allowed_cpu(c)?;
            }
            if list.contains(&latency_cpu) {
                return Err(PlanError::Conflict(format!(
                    "CPU {latency_cpu} measures latency and cannot also load (--load-cpus)"
                )));
            }
            list.clone()
        }
        (None, Some(d)) => domain_cpus(m, d)?
            .into_iter()
            .filter(|&c| c != latency_cpu)
            .collect(),
        (None, None) => m
            .allowed_cpus
            .iter()
            .copied()
            .filter(|&c| c != latency_cpu)
            .collect(),
    };
    if cpus.is_empty() {
        return Err(PlanError::BadValue(format!(
            "no CPU left to load memory besides latency CPU {latency_cpu} (allowed: {})",
            format_cpulist(&m.allowed_cpus)
        )));
    }
    Ok(cpus)
}

/// Spread mode: every L3 domain with an allowed CPU other than the latency CPU, in
/// index order, one step each; step k runs the domains of steps 0..=k at full speed.
fn spread(m: &Machine, latency_cpu: u32, mem_node: u32) -> Result<(Vec<LoadThread>, Vec<Step>), PlanError> {
    let mut load = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    for d in 0..m.topo.l3_domains.len() {
        let cpus: Vec<u32> = domain_cpus(m, d)?
            .into_iter()
            .filter(|&c| c != latency_cpu)
            .collect();
        if cpus.is_empty() {
            continue;
        }
        let from_step = steps.len();
        load.extend(cpus.iter().map(|&cpu| LoadThread {
            member: Member { cpu, mem_node },
            from_step,
        }));
        let mut domains = steps.last().map(|s| s.domains.clone()).unwrap_or_default();
        domains.push(d);
        steps.push(Step {
            delay_spins: 0,
            domains,
        });
    }
    if steps.is_empty() {
        return Err(PlanError::BadValue(format!(
            "--spread needs an L3 domain with an allowed CPU besides latency CPU {latency_cpu}"
        )));
    }
    Ok((load, steps))
}
