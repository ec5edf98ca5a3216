//! The second parsing stage: what the user asked, resolved against the topology and
//! this process's allowed CPUs into a plan that can run. Everything that can be known
//! to fail is refused here, before a byte is allocated.

use std::time::Duration;

use memfabric_model::{format_size, HugePages, Pattern};
use memfabric_topo::{format_cpulist, Roots, Topology};
use thiserror::Error;

use crate::kernels::LINE;
use crate::latency::{LatencyCellSpec, LatencyPlan};

pub mod bandwidth;
pub mod c2c;
pub mod concurrent;
pub mod interleave;
pub mod loaded;
pub mod sweep;

pub(crate) use bandwidth::check_kernel;
pub use bandwidth::{
    bandwidth_plan, domain_plan, stream_plan, BandwidthOptions, DomainOptions, StreamOptions,
};
pub use interleave::InterleaveAsk;

#[derive(Debug, Error, PartialEq)]
pub enum PlanError {
    #[error("node {node} does not exist (nodes: {known})")]
    UnknownNode { node: u32, known: String },
    #[error("node {node} has no CPUs to measure from (CPU nodes: {cpu_nodes})")]
    NoCpus { node: u32, cpu_nodes: String },
    #[error("node {node} has no memory to measure (memory nodes: {mem_nodes})")]
    NoMemory { node: u32, mem_nodes: String },
    #[error("CPU {cpu} is not online (online CPUs: {online})")]
    UnknownCpu { cpu: u32, online: String },
    #[error("CPU {cpu} is outside this process's allowed CPUs {allowed} (taskset or cpuset)")]
    CpuNotAllowed { cpu: u32, allowed: String },
    #[error(
        "none of node {node}'s CPUs ({cpus}) is in this process's allowed CPUs {allowed} (taskset or cpuset)"
    )]
    NodeNotAllowed {
        node: u32,
        cpus: String,
        allowed: String,
    },
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    BadValue(String),
    #[error("node {node} needs {need} but has {free} free (MemFree, or MemAvailable on a one-node machine); use a smaller --size")]
    TooLarge { node: u32, need: String, free: String },
    #[error("{size} huge pages: node {node} needs {need} but its pool has {free} free; reserve them with: echo {total} | sudo tee /sys/devices/system/node/node{node}/hugepages/hugepages-{kb}kB/nr_hugepages")]
    HugePagesMissing {
        node: u32,
        size: String,
        need: u64,
        free: u64,
        total: u64,
        kb: u64,
    },
    #[error("transparent huge pages are disabled (mode: never); enable them with: echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled")]
    ThpDisabled,
    #[error("--threads {threads} is more than node {node}'s {available} allowed CPUs ({cpus})")]
    TooManyThreads {
        threads: usize,
        node: u32,
        available: usize,
        cpus: String,
    },
}

/// Which CPUs and memory the user asked for, syntax already checked.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub cpu_nodes: Option<Vec<u32>>,
    pub mem_nodes: Option<Vec<u32>>,
    /// Latency only: measure from this CPU instead of each node's first CPU.
    pub cpu: Option<u32>,
    /// All memory nodes for every CPU node; otherwise each CPU node's own memory.
    pub matrix: bool,
    /// Memory spread over several nodes instead (`--interleave`).
    pub interleave: Option<InterleaveAsk>,
}

/// The machine as the plan sees it: the topology, the CPUs this process may use, and
/// where its /sys and /proc are.
pub struct Machine<'a> {
    pub topo: &'a Topology,
    pub allowed_cpus: Vec<u32>,
    pub roots: Roots,
}

pub struct LatencyOptions {
    pub size_bytes: Option<u64>,
    /// Bytes between chase elements (64: every line).
    pub stride_bytes: u64,
    /// page-random only: the randomisation window (default 4 KiB, a page).
    pub window_bytes: Option<u64>,
    pub pattern: Pattern,
    pub huge_pages: HugePages,
    pub samples: usize,
    pub sample_time: Duration,
    pub seed: u64,
}

/// (cpu node, mem node) pairs in row-major order, and the memory nodes (columns).
type Pairs = (Vec<(u32, u32)>, Vec<u32>);

/// Smallest default buffer, for machines whose LLC size is unknown or tiny.
const MIN_DEFAULT_BYTES: u64 = 256 << 20;

impl Machine<'_> {
    /// What the system's state says can make samples spread, read now.
    pub fn conditions(&self) -> memfabric_analysis::noise::Conditions {
        memfabric_analysis::noise::Conditions::of(&memfabric_topo::Host::read(&self.roots))
    }

    /// An online CPU this process may run on.
    pub(crate) fn allowed_cpu(&self, cpu: u32) -> Result<&memfabric_topo::Cpu, PlanError> {
        let c = self
            .topo
            .cpus
            .iter()
            .find(|c| c.id == cpu)
            .ok_or_else(|| PlanError::UnknownCpu {
                cpu,
                online: format_cpulist(&self.topo.cpus.iter().map(|c| c.id).collect::<Vec<_>>()),
            })?;
        if !self.allowed_cpus.contains(&cpu) {
            return Err(PlanError::CpuNotAllowed {
                cpu,
                allowed: self.allowed(),
            });
        }
        Ok(c)
    }

    /// Nodes with memory, or the ones asked for, each checked.
    pub fn memory_nodes(&self, asked: Option<&[u32]>) -> Result<Vec<u32>, PlanError> {
        match asked {
            None => Ok(self.topo.memory_nodes()),
            Some(list) => {
                for &n in list {
                    self.check_mem_node(n)?;
                }
                Ok(list.to_vec())
            }
        }
    }

    /// A node (which must exist) and a CPU to work from: the CPU asked for (online and
    /// allowed), else the node's first allowed CPU, else the first allowed CPU (a
    /// CPU-less node).
    pub fn node_and_cpu(&self, node: u32, cpu: Option<u32>) -> Result<(u32, u32), PlanError> {
        let n = self.topo.node(node).ok_or_else(|| PlanError::UnknownNode {
            node,
            known: self.known_nodes(),
        })?;
        if let Some(c) = cpu {
            self.allowed_cpu(c)?;
            return Ok((node, c));
        }
        let first = n
            .cpus
            .iter()
            .find(|c| self.allowed_cpus.contains(c))
            .or(self.allowed_cpus.first());
        match first {
            Some(&c) => Ok((node, c)),
            None => Err(PlanError::BadValue("no CPU this process may run on".into())),
        }
    }

    /// Memory a node can still give. Its own MemFree, except on a one-node machine,
    /// where all of the system's available memory is that node's: some virtual
    /// machines (Firecracker guests, for one) count in nodeN/meminfo only the memory
    /// touched so far, well below /proc/meminfo (7 of 24 GiB on one such guest).
    fn free_bytes(&self, n: &memfabric_topo::Node) -> u64 {
        if self.topo.nodes.len() != 1 {
            return n.mem_free_bytes;
        }
        let available = memfabric_topo::mem_available_bytes(&self.roots.proc);
        n.mem_free_bytes.max(available.unwrap_or(0))
    }

    fn known_nodes(&self) -> String {
        let ids: Vec<u32> = self.topo.nodes.iter().map(|n| n.id).collect();
        format_cpulist(&ids)
    }

    fn allowed(&self) -> String {
        format_cpulist(&self.allowed_cpus)
    }

    /// A node's CPUs that this process may run on.
    pub(crate) fn allowed_cpus_of(&self, node: u32) -> Result<Vec<u32>, PlanError> {
        let n = self.topo.node(node).ok_or_else(|| PlanError::UnknownNode {
            node,
            known: self.known_nodes(),
        })?;
        if n.cpus.is_empty() {
            return Err(PlanError::NoCpus {
                node,
                cpu_nodes: format_cpulist(&self.topo.cpu_nodes()),
            });
        }
        let cpus: Vec<u32> = n
            .cpus
            .iter()
            .copied()
            .filter(|c| self.allowed_cpus.contains(c))
            .collect();
        if cpus.is_empty() {
            return Err(PlanError::NodeNotAllowed {
                node,
                cpus: format_cpulist(&n.cpus),
                allowed: self.allowed(),
            });
        }
        Ok(cpus)
    }

    pub(crate) fn check_mem_node(&self, node: u32) -> Result<(), PlanError> {
        let n = self.topo.node(node).ok_or_else(|| PlanError::UnknownNode {
            node,
            known: self.known_nodes(),
        })?;
        if n.mem_total_bytes == 0 {
            return Err(PlanError::NoMemory {
                node,
                mem_nodes: format_cpulist(&self.topo.memory_nodes()),
            });
        }
        Ok(())
    }

    /// CPU nodes the user named, or every node with an allowed CPU.
    pub(crate) fn cpu_nodes(&self, sel: &Selection) -> Result<Vec<u32>, PlanError> {
        match &sel.cpu_nodes {
            Some(list) => {
                for &n in list {
                    self.allowed_cpus_of(n)?;
                }
                Ok(list.clone())
            }
            None => Ok(self
                .topo
                .cpu_nodes()
                .into_iter()
                .filter(|&n| self.allowed_cpus_of(n).is_ok())
                .collect()),
        }
    }

    /// (cpu node, mem node) pairs in row-major order, and the column labels. With
    /// `--interleave`, one column: the interleave set, labelled by its first node.
    pub(crate) fn pairs(&self, sel: &Selection, cpu_nodes: &[u32]) -> Result<Pairs, PlanError> {
        interleave::check_alone(sel)?;
        if let Some(i) = self.interleave(sel)? {
            let first = i.nodes[0];
            return Ok((cpu_nodes.iter().map(|&c| (c, first)).collect(), vec![first]));
        }
        let mem_nodes = match (&sel.mem_nodes, sel.matrix) {
            (Some(list), _) => list.clone(),
            (None, true) => self.topo.memory_nodes(),
            (None, false) => cpu_nodes.to_vec(),
        };
        for &m in &mem_nodes {
            self.check_mem_node(m)?;
        }
        let local_only = sel.mem_nodes.is_none() && !sel.matrix;
        let pairs = cpu_nodes
            .iter()
            .flat_map(|&c| mem_nodes.iter().map(move |&m| (c, m)))
            .filter(|&(c, m)| !local_only || c == m)
            .collect();
        Ok((pairs, mem_nodes))
    }

    /// A buffer past the caches: four times the last-level caches, at least 256 MiB.
    pub fn default_bytes(&self) -> u64 {
        self.topo
            .total_llc_bytes()
            .saturating_mul(4)
            .max(MIN_DEFAULT_BYTES)
    }

    /// Refuses a plan whose buffers cannot fit: free memory, hugetlb pools, THP mode.
    pub(crate) fn check_fits(&self, node: u32, bytes: u64, huge: HugePages) -> Result<(), PlanError> {
        let n = self.topo.node(node).expect("checked node");
        match huge {
            HugePages::Huge2M | HugePages::Huge1G => {
                let page = if huge == HugePages::Huge2M {
                    2u64 << 20
                } else {
                    1 << 30
                };
                let need = bytes.div_ceil(page);
                let pool = n.hugepages.iter().find(|p| p.page_size_bytes == page);
                let (free, total) = pool.map_or((0, 0), |p| (p.free, p.total));
                if free < need {
                    return Err(PlanError::HugePagesMissing {
                        node,
                        size: format_size(page),
                        need,
                        free,
                        total: total + (need - free),
                        kb: page >> 10,
                    });
                }
                Ok(())
            }
            HugePages::Off | HugePages::Thp => {
                if huge == HugePages::Thp && self.topo.huge_pages.thp_enabled.as_deref() == Some("never") {
                    return Err(PlanError::ThpDisabled);
                }
                let free = self.free_bytes(n);
                if bytes > free {
                    return Err(PlanError::TooLarge {
                        node,
                        need: format_size(bytes),
                        free: format_size(free),
                    });
                }
                Ok(())
            }
        }
    }
}

pub fn latency_plan(m: &Machine, sel: &Selection, opt: &LatencyOptions) -> Result<LatencyPlan, PlanError> {
    if opt.samples == 0 {
        return Err(PlanError::BadValue("--samples must be at least 1".into()));
    }
    let cpu_nodes = match sel.cpu {
        Some(cpu) => {
            if sel.cpu_nodes.is_some() {
                return Err(PlanError::Conflict(
                    "--cpu and --cpu-nodes cannot be combined: --cpu picks its node".into(),
                ));
            }
            vec![m.allowed_cpu(cpu)?.node.unwrap_or(0)]
        }
        None => m.cpu_nodes(sel)?,
    };
    let (pairs, mem_nodes) = m.pairs(sel, &cpu_nodes)?;
    let size_bytes = opt.size_bytes.unwrap_or_else(|| m.default_bytes());
    let window_bytes = chase_shape(size_bytes, opt)?;
    // The visit order is built in memory beside the buffer: 8 bytes per 64-byte line.
    let interleave = m.interleave(sel)?;
    m.check_spread_fits(
        interleave.as_ref(),
        &mem_nodes,
        size_bytes + size_bytes / 8,
        opt.huge_pages,
    )?;
    let mut cells = Vec::new();
    for (cpu_node, mem_node) in pairs {
        let cpu = match sel.cpu {
            Some(c) => c,
            None => m.allowed_cpus_of(cpu_node)?[0],
        };
        cells.push(LatencyCellSpec {
            cpu,
            cpu_node,
            mem_node,
        });
    }
    Ok(LatencyPlan {
        cells,
        cpu_nodes,
        mem_nodes,
        size_bytes,
        stride_bytes: opt.stride_bytes,
        window_bytes,
        pattern: opt.pattern,
        huge_pages: opt.huge_pages,
        samples: opt.samples,
        sample_time: opt.sample_time,
        seed: opt.seed,
        interleave,
    })
}

/// Checks stride, window and size against each other; returns the window.
pub(crate) fn chase_shape(size: u64, opt: &LatencyOptions) -> Result<u64, PlanError> {
    let stride = opt.stride_bytes;
    let bad = |m: String| Err(PlanError::BadValue(m));
    if stride == 0 || !stride.is_multiple_of(LINE as u64) {
        return bad(format!(
            "--stride must be a multiple of {LINE} bytes (a cache line), not {stride}"
        ));
    }
    if size < 2 * stride {
        return bad(format!(
            "--size must be at least two strides ({} bytes)",
            2 * stride
        ));
    }
    if size / stride > u32::MAX as u64 {
        return bad(format!(
            "--size {} holds more than 2^32 elements of --stride {stride}",
            format_size(size)
        ));
    }
    match (opt.pattern, opt.window_bytes) {
        (Pattern::PageRandom, w) => {
            let w = w.unwrap_or(4096);
            if w < stride || !w.is_multiple_of(stride) {
                return bad(format!(
                    "--window must be a multiple of --stride ({stride} bytes), not {w}"
                ));
            }
            Ok(w)
        }
        (_, Some(_)) => Err(PlanError::Conflict(
            "--window applies to --pattern page-random only".into(),
        )),
        (_, None) => Ok(size),
    }
}
