//! Plans of the bandwidth engine: mixes and thread counts per node pair, per-domain
//! scaling, and STREAM. Resolved against the machine and refused here, before anything
//! is allocated, as `plan` does for latency.

use memfabric_model::{format_size, HugePages, Mix};
use memfabric_topo::format_cpulist;

use crate::bandwidth::{round_array_bytes, BandwidthCellSpec, BandwidthPlan, KernelOptions};
use crate::domains::{DomainPlan, DomainSpec};
use crate::kernels::Isa;
use crate::plan::{Machine, PlanError, Selection};
use crate::stream::StreamPlan;
use crate::team::Member;

pub struct BandwidthOptions {
    pub mixes: Vec<Mix>,
    /// Bytes of each array of each thread (default: 4x the LLC over the threads, >= 64M).
    pub array_bytes_per_thread: Option<u64>,
    /// Thread counts per cell, each a measurement; empty: every allowed CPU of the node.
    pub threads: Vec<usize>,
    pub huge_pages: HugePages,
    pub samples: usize,
    pub isa: Isa,
}

pub struct DomainOptions {
    pub mix: Mix,
    pub array_bytes_per_thread: Option<u64>,
    pub huge_pages: HugePages,
    pub samples: usize,
    pub isa: Isa,
    pub fclk_mhz: Option<f64>,
}

pub struct StreamOptions {
    /// Bytes of each of the three arrays, all threads together (default: 4x the LLC, >= 256M).
    pub array_bytes: Option<u64>,
    pub threads: Option<usize>,
    pub ntimes: usize,
    pub huge_pages: HugePages,
    pub isa: Isa,
    pub non_temporal: bool,
}

/// Smallest default array per thread, so that short runs still leave the caches.
const MIN_DEFAULT_ARRAY_BYTES: u64 = 64 << 20;

/// Refuses what no kernel can do: zero samples, streaming stores without an ISA that has them.
pub(crate) fn check_kernel(isa: Isa, mixes: &[Mix], samples: usize) -> Result<(), PlanError> {
    if samples == 0 {
        return Err(PlanError::BadValue("--samples must be at least 1".into()));
    }
    if let Some(m) = mixes.iter().find(|m| m.non_temporal()) {
        if !isa.has_streaming_stores() {
            return Err(PlanError::Conflict(format!(
                "mix {m} needs streaming stores, which the {} kernel does not have",
                isa.name()
            )));
        }
    }
    Ok(())
}

impl Machine<'_> {
    /// Array bytes per thread: the user's, or the default share of 4x the LLC.
    pub(crate) fn array_bytes(&self, given: Option<u64>, threads: usize) -> u64 {
        round_array_bytes(
            given.unwrap_or_else(|| {
                (self.default_bytes() / threads.max(1) as u64).max(MIN_DEFAULT_ARRAY_BYTES)
            }),
        )
    }

    /// Checks that every node can hold the arrays the members bound to it need at once.
    pub(crate) fn check_members_fit(
        &self,
        members: &[Member],
        bytes_each: u64,
        huge: HugePages,
    ) -> Result<(), PlanError> {
        let mut nodes: Vec<u32> = members.iter().map(|m| m.mem_node).collect();
        nodes.sort_unstable();
        nodes.dedup();
        for node in nodes {
            let count = members.iter().filter(|m| m.mem_node == node).count() as u64;
            self.check_fits(node, bytes_each.saturating_mul(count), huge)?;
        }
        Ok(())
    }

    pub(crate) fn node_of_cpu(&self, cpu: u32) -> u32 {
        self.topo.cpu(cpu).and_then(|c| c.node).unwrap_or(0)
    }

    /// The one memory node --mem-nodes names, if any; more than one is refused.
    fn single_mem_node(&self, sel: &Selection, what: &str) -> Result<Option<u32>, PlanError> {
        match sel.mem_nodes.as_deref() {
            None => Ok(None),
            Some([n]) => {
                self.check_mem_node(*n)?;
                Ok(Some(*n))
            }
            Some(_) => Err(PlanError::Conflict(format!(
                "{what} takes one --mem-nodes node (default: each thread's own node)"
            ))),
        }
    }
}

pub fn bandwidth_plan(
    m: &Machine,
    sel: &Selection,
    opt: &BandwidthOptions,
) -> Result<BandwidthPlan, PlanError> {
    check_kernel(opt.isa, &opt.mixes, opt.samples)?;
    if opt.mixes.is_empty() {
        return Err(PlanError::BadValue("no mix to measure".into()));
    }
    if opt.threads.contains(&0) {
        return Err(PlanError::BadValue("--threads must be at least 1".into()));
    }
    let cpu_nodes = m.cpu_nodes(sel)?;
    let (pairs, mem_nodes) = m.pairs(sel, &cpu_nodes)?;
    let mut groups = Vec::new();
    for (cpu_node, mem_node) in pairs {
        let cpus = m.allowed_cpus_of(cpu_node)?;
        if opt.threads.is_empty() {
            groups.push((cpu_node, mem_node, cpus));
            continue;
        }
        for &t in &opt.threads {
            if t > cpus.len() {
                return Err(PlanError::TooManyThreads {
                    threads: t,
                    node: cpu_node,
                    available: cpus.len(),
                    cpus: format_cpulist(&cpus),
                });
            }
            groups.push((cpu_node, mem_node, cpus[..t].to_vec()));
        }
    }
    let max_threads = groups.iter().map(|g| g.2.len()).max().unwrap_or(1);
    let array_bytes = m.array_bytes(opt.array_bytes_per_thread, max_threads);
    let max_arrays = opt.mixes.iter().map(|x| x.arrays()).max().unwrap_or(1);
    let need = array_bytes
        .saturating_mul(max_arrays)
        .saturating_mul(max_threads as u64);
    let interleave = m.interleave(sel)?;
    m.check_spread_fits(interleave.as_ref(), &mem_nodes, need, opt.huge_pages)?;
    let cells = opt
        .mixes
        .iter()
        .flat_map(|&mix| {
            groups
                .iter()
                .map(move |(cpu_node, mem_node, cpus)| BandwidthCellSpec {
                    mix,
                    cpu_node: *cpu_node,
                    mem_node: *mem_node,
                    cpus: cpus.clone(),
                })
        })
        .collect();
    Ok(BandwidthPlan {
        cells,
        mixes: opt.mixes.clone(),
        cpu_nodes,
        mem_nodes,
        thread_counts: opt.threads.clone(),
        kernel: KernelOptions {
            isa: opt.isa,
            array_bytes,
            huge_pages: opt.huge_pages,
            samples: opt.samples,
        },
        interleave,
    })
}

/// One entry per L3 domain with an allowed CPU in the selected CPU nodes; each thread's
/// arrays on the one --mem-nodes node or else on its own CPU's node.
pub fn domain_plan(m: &Machine, sel: &Selection, opt: &DomainOptions) -> Result<DomainPlan, PlanError> {
    check_kernel(opt.isa, &[opt.mix], opt.samples)?;
    if sel.matrix {
        return Err(PlanError::Conflict(
            "--per-domain and --matrix cannot be combined: --per-domain reads each domain's own node, or the one --mem-nodes node".into(),
        ));
    }
    if sel.interleave.is_some() {
        return Err(PlanError::Conflict(
            "--per-domain and --interleave cannot be combined: --per-domain reads each domain's own node, or the one --mem-nodes node".into(),
        ));
    }
    if let Some(f) = opt.fclk_mhz {
        if !(f.is_finite() && f > 0.0) {
            return Err(PlanError::BadValue(format!(
                "--fclk must be a positive number of MHz, not {f}"
            )));
        }
    }
    let mem_node = m.single_mem_node(sel, "--per-domain")?;
    let cpu_nodes = m.cpu_nodes(sel)?;
    let domains: Vec<DomainSpec> = m
        .topo
        .l3_domains
        .iter()
        .map(|d| DomainSpec {
            index: d.index,
            members: d
                .cpus
                .iter()
                .filter(|&&c| m.allowed_cpus.contains(&c) && cpu_nodes.contains(&m.node_of_cpu(c)))
                .map(|&cpu| Member {
                    cpu,
                    mem_node: mem_node.unwrap_or_else(|| m.node_of_cpu(cpu)),
                })
                .collect(),
        })
        .filter(|d| !d.members.is_empty())
        .collect();
    if domains.is_empty() {
        return Err(PlanError::BadValue(
            "no L3 domain to measure: the topology shows no last-level cache domains with allowed CPUs"
                .into(),
        ));
    }
    let all: Vec<Member> = domains.iter().flat_map(|d| d.members.iter().copied()).collect();
    let array_bytes = m.array_bytes(opt.array_bytes_per_thread, all.len());
    m.check_members_fit(&all, array_bytes * opt.mix.arrays(), opt.huge_pages)?;
    Ok(DomainPlan {
        mix: opt.mix,
        domains,
        kernel: KernelOptions {
            isa: opt.isa,
            array_bytes,
            huge_pages: opt.huge_pages,
            samples: opt.samples,
        },
        fclk_mhz: opt.fclk_mhz,
    })
}

/// STREAM's setup: one thread per allowed CPU of the selected nodes (or the first
/// --threads of them), each part of the arrays on its thread's node unless --mem-nodes
/// names one.
pub fn stream_plan(m: &Machine, sel: &Selection, opt: &StreamOptions) -> Result<StreamPlan, PlanError> {
    if opt.ntimes < 2 {
        return Err(PlanError::BadValue(
            "--ntimes must be at least 2: STREAM does not count the first pass".into(),
        ));
    }
    if sel.matrix {
        return Err(PlanError::Conflict(
            "stream has no --matrix: choose the memory with --mem-nodes".into(),
        ));
    }
    if opt.non_temporal && !opt.isa.has_streaming_stores() {
        return Err(PlanError::Conflict(format!(
            "--non-temporal needs streaming stores, which the {} kernel does not have",
            opt.isa.name()
        )));
    }
    super::interleave::check_alone(sel)?;
    let interleave = m.interleave(sel)?;
    let mem_node = match &interleave {
        Some(i) => Some(i.nodes[0]),
        None => m.single_mem_node(sel, "stream")?,
    };
    let mut cpus = Vec::new();
    for node in m.cpu_nodes(sel)? {
        cpus.extend(m.allowed_cpus_of(node)?);
    }
    if let Some(t) = opt.threads {
        if t == 0 || t > cpus.len() {
            return Err(PlanError::BadValue(format!(
                "--threads must be between 1 and the {} allowed CPUs of the selected nodes ({}), not {t}",
                cpus.len(),
                format_cpulist(&cpus)
            )));
        }
        cpus.truncate(t);
    }
    let members: Vec<Member> = cpus
        .iter()
        .map(|&cpu| Member {
            cpu,
            mem_node: mem_node.unwrap_or_else(|| m.node_of_cpu(cpu)),
        })
        .collect();
    let array_bytes = opt.array_bytes.unwrap_or_else(|| m.default_bytes());
    let array_elements = array_bytes / 8;
    if array_elements < members.len() as u64 {
        return Err(PlanError::BadValue(format!(
            "--size {} gives fewer elements than threads",
            format_size(array_bytes)
        )));
    }
    let per_thread = array_elements.div_ceil(members.len() as u64) * 8;
    match &interleave {
        Some(i) => m.check_spread_fits(
            Some(i),
            &[],
            3 * per_thread * members.len() as u64,
            opt.huge_pages,
        )?,
        None => m.check_members_fit(&members, 3 * per_thread, opt.huge_pages)?,
    }
    Ok(StreamPlan {
        members,
        array_elements,
        ntimes: opt.ntimes,
        huge_pages: opt.huge_pages,
        isa: opt.isa,
        non_temporal: opt.non_temporal,
        interleave,
    })
}
