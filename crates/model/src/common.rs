//! What every result shares: the envelope of a JSON document, the machine it ran on,
//! the outcome of a cell, where its memory was found, the noise guard's verdict, and
//! the pattern and page settings measurements are taken with.

use serde::{Deserialize, Serialize};

/// The top-level JSON document every `--json` command prints.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Envelope<T> {
    pub schema_version: u32,
    pub tool: Tool,
    /// The subcommand, e.g. "latency".
    pub command: String,
    /// The command line as given, for reproduction.
    pub args: Vec<String>,
    pub started_unix_s: u64,
    pub environment: Option<Environment>,
    pub result: T,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

/// What the machine was when the numbers were taken.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub hostname: Option<String>,
    pub arch: String,
    pub cpu_model: Option<String>,
    pub microcode: Option<String>,
    pub kernel: Option<String>,
    pub thp_enabled: Option<String>,
    pub numa_balancing: Option<String>,
    pub governor: Option<String>,
    pub smt_active: Option<bool>,
    pub cpus_online: usize,
    /// CPUs this process may run on (taskset / cpuset), as a Linux list.
    pub cpus_allowed: String,
    pub numa_nodes: usize,
    pub timer: TimerInfo,
    /// Firmware, NUMA layout, DIMM speeds, kernel memory options and socket links:
    /// what explains a result beside others. Absent in documents before 0.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<memfabric_topo::Platform>,
    /// The scheduler's name for this node, when run as a Slurm job (`SLURMD_NODENAME`):
    /// what `fleet run` and `fleet report` call it. Absent outside a job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_node: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimerInfo {
    pub source: String,
    /// Median cost of one clock read, measured at start-up.
    pub overhead_ns: f64,
    /// The CPU advertises a constant, non-stop TSC (x86 `constant_tsc` + `nonstop_tsc`).
    pub invariant_tsc: Option<bool>,
}

/// A measurement that could not or did not run is a result, never a panic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome<T> {
    Ok(T),
    Skipped { reason: String },
    Failed { reason: String },
}

impl<T> Outcome<T> {
    pub fn ok(&self) -> Option<&T> {
        match self {
            Outcome::Ok(v) => Some(v),
            _ => None,
        }
    }
}

/// Where a buffer's pages were found after first touch (move_pages with nodes = NULL).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub requested_node: u32,
    pub page_size_bytes: u64,
    pub pages_total: u64,
    pub pages_sampled: u64,
    pub pages_on_node: u64,
    /// Sampled pages found elsewhere: (node, pages); a negative node is a kernel error code
    /// (e.g. -14 EFAULT: page not present).
    pub pages_elsewhere: Vec<NodePages>,
    /// CPUs the measuring thread's affinity mask held, read back after pinning.
    pub thread_affinity: Vec<u32>,
    pub verified: bool,
    /// How verification was done, or why it could not be.
    pub method: String,
    /// Interleaved memory (`--interleave`): `requested_node` is the set's first node,
    /// `pages_on_node` counts pages on any node of the set, and this holds the shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<crate::InterleaveShares>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodePages {
    pub node: i32,
    pub pages: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// One Sattolo cycle over every line of the buffer.
    Random,
    /// Random order inside each window (a 4 KiB page unless set), windows in random order.
    PageRandom,
    Sequential,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HugePages {
    /// 4 KiB pages; transparent huge pages refused with MADV_NOHUGEPAGE.
    Off,
    /// Transparent huge pages requested with MADV_HUGEPAGE.
    Thp,
    /// hugetlbfs 2 MiB pages from the reserved pool.
    #[serde(rename = "2M")]
    Huge2M,
    /// hugetlbfs 1 GiB pages from the reserved pool.
    #[serde(rename = "1G")]
    Huge1G,
}

/// A measurement whose coefficient of variation is above the threshold, and why
/// that may be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    pub cv: f64,
    pub threshold_cv: f64,
    pub likely_causes: Vec<String>,
}

/// Whether a measurement's DRAM traffic was counted, and with what.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DramCounting {
    /// The counter source used; none where no source is available or it was off.
    pub source: Option<String>,
    /// Why this source, or why none (what is missing and how to enable it).
    pub reason: String,
}
