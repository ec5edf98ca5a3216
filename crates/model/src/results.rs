//! Result types for each measurement, and the envelope every JSON document shares.

use serde::{Deserialize, Serialize};

use crate::mix::Mix;
use crate::stats::Summary;

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

/// Idle latency: one pinned CPU chasing pointers through memory on one node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    pub pattern: Pattern,
    pub huge_pages: HugePages,
    pub size_bytes: u64,
    /// Distance between chase elements: 64 is one load per cache line.
    pub stride_bytes: u64,
    /// page-random only: the window inside which the order is random (4 KiB: a page).
    pub window_bytes: Option<u64>,
    /// Seed of the random permutation, so a chase can be rebuilt exactly.
    pub seed: u64,
    /// Row and column labels of the matrix (rows: CPU nodes, columns: memory nodes).
    pub cpu_nodes: Vec<u32>,
    pub mem_nodes: Vec<u32>,
    pub cells: Vec<LatencyCell>,
    /// Firmware (SLIT/HMAT) figures beside the measured ones; `None` where the
    /// firmware publishes nothing for these cells.
    #[serde(default)]
    pub firmware: Option<crate::theory::FirmwareComparison>,
    /// `--interleave`: every cell's memory was spread over these nodes (its placement
    /// holds the shares found), and `mem_nodes` / `mem_node` name the set's first node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<crate::Interleave>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyCell {
    pub cpu: u32,
    pub cpu_node: u32,
    pub mem_node: u32,
    pub outcome: Outcome<LatencyMeasurement>,
}

impl LatencyCell {
    /// How text names the cell: "cpu 2 -> node 1".
    pub fn label(&self) -> String {
        format!("cpu {} -> node {}", self.cpu, self.mem_node)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyMeasurement {
    pub latency_ns: Summary,
    /// Nanoseconds per load, one value per sample, in the order taken.
    pub samples_ns: Vec<f64>,
    /// Dependent loads timed per sample (calibrated to a sample time from the warm-up).
    pub loads_per_sample: u64,
    /// Samples taken again because the measuring thread ran for less than 95 % of the
    /// sample (another task, or the host of a guest, had its CPU): they timed the
    /// scheduler, not the memory. At most one retake per sample asked for.
    #[serde(default)]
    pub samples_retaken: u32,
    /// Samples kept although the thread lost its CPU in them, once the retakes ran
    /// out: their figures are too high, and `noise` says so.
    #[serde(default)]
    pub samples_preempted: u32,
    /// Elements the validating walk visited before returning to its start: equal to
    /// size_bytes / stride_bytes, so the chase is one cycle through every element.
    pub cycle_verified_elements: u64,
    pub placement: Placement,
    /// Set when the samples spread more than the noise threshold allows, or when
    /// samples were kept in which the thread lost its CPU.
    pub noise: Option<Noise>,
}

/// A measurement whose coefficient of variation is above the threshold, and why
/// that may be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    pub cv: f64,
    pub threshold_cv: f64,
    pub likely_causes: Vec<String>,
}

/// Bandwidth from the CPUs of one node to memory on one node, for one or more access
/// mixes and thread counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthReport {
    /// Instruction set of the kernels chosen at run time, e.g. "avx512".
    pub kernel: String,
    pub huge_pages: HugePages,
    /// Bytes of each array a thread owns (a mix uses `MixInfo::arrays` of them).
    pub array_bytes_per_thread: u64,
    /// The mixes measured, in the order of the cells, with how each counts bytes.
    pub mixes: Vec<MixInfo>,
    pub cpu_nodes: Vec<u32>,
    pub mem_nodes: Vec<u32>,
    /// Threads per cell, as asked with --threads; empty when every CPU of the node ran.
    pub thread_counts: Vec<usize>,
    /// Ordered by mix, then (CPU node, memory node), then thread count.
    pub cells: Vec<BandwidthCell>,
    /// Firmware (SLIT/HMAT) figures beside the measured ones; `None` where the
    /// firmware publishes nothing for these cells.
    #[serde(default)]
    pub firmware: Option<crate::theory::FirmwareComparison>,
    /// Whether the cells' DRAM traffic was counted by the memory controllers.
    #[serde(default)]
    pub dram_counting: crate::DramCounting,
    /// Why no share of the theoretical peak is given, where none is (no SMBIOS, a
    /// DIMM speed not readable without root...); absent when shares are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_unknown: Option<String>,
    /// `--interleave`: every cell's memory was spread over these nodes (its placement
    /// holds the shares found), and `mem_nodes` / `mem_node` name the set's first node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<crate::Interleave>,
}

/// One access mix and how its bytes are counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixInfo {
    pub mix: Mix,
    pub description: String,
    /// Arrays each thread allocates for it.
    pub arrays: u64,
    /// Bytes counted per element (8-byte double) of one array: read plus written.
    pub bytes_per_element: u64,
    pub non_temporal: bool,
    pub byte_counting: String,
}

impl MixInfo {
    pub fn of(mix: Mix) -> MixInfo {
        MixInfo {
            mix,
            description: mix.describe().into(),
            arrays: mix.arrays(),
            bytes_per_element: mix.bytes_per_element(),
            non_temporal: mix.non_temporal(),
            byte_counting: mix.byte_counting(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthCell {
    pub mix: Mix,
    pub cpu_node: u32,
    pub mem_node: u32,
    /// One thread per CPU listed, each with its own arrays.
    pub cpus: Vec<u32>,
    pub outcome: Outcome<BandwidthMeasurement>,
    /// The median's share of the path's theoretical peak, where one is known.
    #[serde(default)]
    pub efficiency: Option<crate::theory::Efficiency>,
}

impl BandwidthCell {
    /// How text names the cell: "copy node 0 -> node 1, 4 threads".
    pub fn label(&self) -> String {
        format!(
            "{} node {} -> node {}, {} threads",
            self.mix,
            self.cpu_node,
            self.mem_node,
            self.cpus.len()
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BandwidthMeasurement {
    pub bandwidth_gb_s: Summary,
    /// GB/s (10^9 bytes per second) of every thread together, one value per sample.
    pub samples_gb_s: Vec<f64>,
    /// Bytes all threads move in one sample, counted as the mix says.
    pub bytes_per_sample: u64,
    /// Elements of the written arrays checked after timing, as STREAM checks its
    /// arrays; 0 for a mix that writes nothing.
    pub validated_elements: u64,
    /// One entry per thread, in the order of `cpus`.
    pub placement: Vec<Placement>,
    /// Set when the samples spread more than the noise threshold allows.
    pub noise: Option<Noise>,
    /// Memory-controller traffic over the timed samples, where a counter source is
    /// available (see `memfabric monitor`).
    #[serde(default)]
    pub dram: Option<crate::DramTraffic>,
}

/// How much bandwidth each L3 domain draws alone, and how the total grows as domains
/// join one by one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainScalingReport {
    pub mix: MixInfo,
    pub kernel: String,
    pub huge_pages: HugePages,
    pub array_bytes_per_thread: u64,
    /// The fabric clock the user gave, for bytes per fabric cycle.
    pub fclk_mhz: Option<f64>,
    /// Each domain measured alone, every one of its CPUs reading.
    pub alone: Vec<DomainBandwidth>,
    /// Domains 1, 1+2, 1+2+3, ... measured together.
    pub cumulative: Vec<DomainBandwidth>,
    /// Whether the steps' DRAM traffic was counted by the memory controllers.
    #[serde(default)]
    pub dram_counting: crate::DramCounting,
    /// Why no share of the theoretical peak is given, where none is (no SMBIOS, a
    /// DIMM speed not readable without root...); absent when shares are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_unknown: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DomainBandwidth {
    /// Indexes into the topology's `l3_domains`.
    pub domains: Vec<usize>,
    pub cpus: Vec<u32>,
    /// Memory node of each thread's arrays, in the order of `cpus`.
    pub mem_nodes: Vec<u32>,
    pub outcome: Outcome<BandwidthMeasurement>,
    /// Median bytes per fabric clock cycle, when --fclk was given.
    pub bytes_per_fclk: Option<f64>,
    /// The median's share of the memory peak of the nodes read, where known.
    #[serde(default)]
    pub efficiency: Option<crate::theory::Efficiency>,
}

/// STREAM's four kernels, timed and counted as STREAM 5.10 does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamReport {
    pub kernel: String,
    /// Stores were streaming (non-temporal) stores followed by a store fence.
    pub non_temporal: bool,
    pub huge_pages: HugePages,
    /// Elements of each of the three arrays, all threads together (STREAM_ARRAY_SIZE).
    pub array_elements: u64,
    pub bytes_per_element: u64,
    /// Passes of all four kernels; the first is not counted, as in STREAM (NTIMES).
    pub ntimes: usize,
    pub cpus: Vec<u32>,
    /// Memory node of each thread's part of the arrays, in the order of `cpus`.
    pub mem_nodes: Vec<u32>,
    pub outcome: Outcome<StreamMeasurement>,
    /// Why no share of the theoretical peak is given, where none is (no SMBIOS, a
    /// DIMM speed not readable without root...); absent when shares are given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_unknown: Option<String>,
    /// `--interleave`: every thread's part of the arrays was spread over these nodes
    /// (each placement holds the shares found); `mem_nodes` hold the set's first node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interleave: Option<crate::Interleave>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamMeasurement {
    /// Copy, Scale, Add, Triad.
    pub functions: Vec<StreamFunction>,
    pub validation: StreamValidation,
    pub placement: Vec<Placement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamFunction {
    pub name: String,
    /// 16 for Copy and Scale, 24 for Add and Triad.
    pub bytes_per_element: u64,
    /// STREAM's "Best Rate": bytes over the shortest time.
    pub best_gb_s: f64,
    pub bandwidth_gb_s: Summary,
    pub samples_gb_s: Vec<f64>,
    pub avg_time_s: f64,
    pub min_time_s: f64,
    pub max_time_s: f64,
    pub noise: Option<Noise>,
    /// The best rate's share of the memory peak of the nodes holding the arrays, where known.
    #[serde(default)]
    pub efficiency: Option<crate::theory::Efficiency>,
}

/// STREAM's check: every element of a, b and c against the values the same sequence
/// of operations gives on scalars.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamValidation {
    pub passed: bool,
    /// Largest relative error allowed (STREAM: 1e-13 for doubles).
    pub epsilon: f64,
    /// Elements whose relative error is above epsilon, per array a, b, c.
    pub errors: [u64; 3],
    pub expected: [f64; 3],
}

/// Latency of one CPU while other CPUs load the same memory: the idle figure, then one
/// point per throttle level (or per added L3 domain in spread mode).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadedLatencyReport {
    pub latency_cpu: u32,
    /// The latency CPU's L3 domain (index into the topology's `l3_domains`).
    pub latency_domain: Option<usize>,
    /// The chase's node, and the load threads' too unless `load_mem_nodes` says otherwise.
    pub mem_node: u32,
    /// Every CPU that runs load in some step.
    pub load_cpus: Vec<u32>,
    /// The node of each load CPU's arrays, in the order of `load_cpus`; empty when all
    /// are on `mem_node` (`--load-mem-nodes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_mem_nodes: Vec<u32>,
    pub mix: MixInfo,
    pub kernel: String,
    pub huge_pages: HugePages,
    pub array_bytes_per_thread: u64,
    pub chase_size_bytes: u64,
    pub pattern: Pattern,
    /// Measured cost of one spin-loop hint, the unit of the delays.
    pub spin_ns: f64,
    /// Steps add L3 domains at full speed instead of lowering a delay.
    pub spread: bool,
    /// Latency with every load thread idle.
    pub idle: Outcome<LatencyMeasurement>,
    pub steps: Vec<LoadStep>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadStep {
    /// Spin-loop hints each load thread waits after every 4 KiB of each array.
    pub delay_spins: u64,
    /// The same delay in ns (delay_spins x spin_ns).
    pub delay_ns: f64,
    /// L3 domains whose CPUs load in this step (spread mode; empty otherwise).
    pub domains: Vec<usize>,
    pub load_cpus: Vec<u32>,
    /// GB/s the load threads moved while the latency was sampled, counted as the mix
    /// counts bytes.
    pub load_bandwidth_gb_s: f64,
    pub latency: Outcome<LatencyMeasurement>,
    /// The load's share of the memory node's peak, where known.
    #[serde(default)]
    pub efficiency: Option<crate::theory::Efficiency>,
}
