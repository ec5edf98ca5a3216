//! The second parsing stage: what the user asked, resolved against the topology and
//! this process's allowed CPUs into a plan that can run. Everything that can be known
//! to fail is refused here, before a byte is allocated.

use std::time::Duration;

use memfabric_model::{format_size, HugePages, Pattern};
use memfabric_topo::{format_cpulist, Topology};
use thiserror::Error;

use memfabric_model::Mix;

use crate::bandwidth::{round_array_bytes, BandwidthCellSpec, BandwidthPlan, KernelOptions};
use crate::domains::{DomainPlan, DomainSpec};
use crate::latency::{LatencyCellSpec, LatencyPlan};
use crate::stream::StreamPlan;
use crate::sys::{Isa, LINE};
use crate::team::Member;

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
}

/// The machine as the plan sees it: the topology, and the CPUs this process may use.
pub struct Machine<'a> {
    pub topo: &'a Topology,
    pub allowed_cpus: Vec<u32>,
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

/// (cpu node, mem node) pairs in row-major order, and the memory nodes (columns).
type Pairs = (Vec<(u32, u32)>, Vec<u32>);

/// Smallest default buffer, for machines whose LLC size is unknown or tiny.
const MIN_DEFAULT_BYTES: u64 = 256 << 20;

impl Machine<'_> {
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

    /// Memory a node can still give. Its own MemFree, except on a one-node machine,
    /// where all of the system's available memory is that node's: some virtual
    /// machines (Firecracker guests, for one) count in nodeN/meminfo only the memory
    /// touched so far, well below /proc/meminfo (7 of 24 GiB on one such guest).
    fn free_bytes(&self, n: &memfabric_topo::Node) -> u64 {
        if self.topo.nodes.len() != 1 {
            return n.mem_free_bytes;
        }
        let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kb * 1024)
        });
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
    fn allowed_cpus_of(&self, node: u32) -> Result<Vec<u32>, PlanError> {
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
    fn cpu_nodes(&self, sel: &Selection) -> Result<Vec<u32>, PlanError> {
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

    /// (cpu node, mem node) pairs in row-major order, and the column labels.
    fn pairs(&self, sel: &Selection, cpu_nodes: &[u32]) -> Result<Pairs, PlanError> {
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

    pub(crate) fn default_bytes(&self) -> u64 {
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
    for &node in &mem_nodes {
        m.check_fits(node, size_bytes + size_bytes / 8, opt.huge_pages)?;
    }
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
    for &node in &mem_nodes {
        let need = array_bytes
            .saturating_mul(max_arrays)
            .saturating_mul(max_threads as u64);
        m.check_fits(node, need, opt.huge_pages)?;
    }
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
    let mem_node = m.single_mem_node(sel, "stream")?;
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
    m.check_members_fit(&members, 3 * per_thread, opt.huge_pages)?;
    Ok(StreamPlan {
        members,
        array_elements,
        ntimes: opt.ntimes,
        huge_pages: opt.huge_pages,
        isa: opt.isa,
        non_temporal: opt.non_temporal,
    })
}
