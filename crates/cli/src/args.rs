//! The command line, first parsing stage: syntax only. Resolving against the machine
//! happens in memfabric_measure::plan.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use memfabric_measure::registry;
use memfabric_model::{HugePages, Mix, Pattern};

mod fleet;
mod gpu;
mod history;
mod interleave;
mod lists;
mod monitor;
mod pairs;
mod plan;
mod theory;
pub use fleet::{FleetAction, FleetArgs, FleetReportArgs, FleetRunArgs, IngestArgs, FLEET_HELP};
pub use gpu::{directions, GpuArgs, GpuBandwidthArgs, GpuCommand, GpuCopyArgs, GPU_HELP};
pub use history::{CompareArgs, ExportFormat, Keep, ReportArgs, RunRef, RunsAction, RunsArgs};
pub use interleave::{ConcurrentArg, InterleaveArgs};
use lists::parse_counts;
pub use lists::{positive, Counts};
pub use monitor::{DramArg, DramArgs, MonitorArgs, MONITOR_HELP};
pub use pairs::{C2cArgs, C2cModeArg, SweepArgs, SweepThreadsArg, SweepWhat, C2C_HELP, SWEEP_HELP};
pub use plan::{CheckArgs, NumaArgs, PlanAction, PlanArgs, PopulationArgs, RasArg, PLAN_HELP};
pub use theory::{AuditArgs, MachineSource, TheoryArgs};

const AFTER_HELP: &str = "\
Lists of CPUs and nodes use Linux syntax: 0-3,8,10-11.
Sizes take binary suffixes: 64K = 65536 bytes, 256M, 1G, 1GiB.
GB/s means 10^9 bytes per second.
Exit codes: 0 success, 1 a measurement failed, 2 bad input or usage.";

const BANDWIDTH_HELP: &str = "\
Mixes (each thread runs it over its own arrays of 8-byte doubles, s = 3):
  read      loads only
  write     a[i] = s, regular stores (each written line is read first: write-allocate)
  write-nt  a[i] = s, non-temporal (streaming) stores and a store fence
  3:1 2:1 1:1  that many read streams beside one write stream
  rmw       a[i] += s
  copy      a[i] = b[i]            copy-nt   the same with streaming stores
  triad     a[i] = b[i] + s*c[i]   triad-nt  the same with streaming stores
Bytes are counted as STREAM counts them: bytes the program reads plus bytes it
writes; the write-allocate read of a regular store is extra traffic, not counted.
Arrays a mix writes are checked after timing; a wrong element fails the cell.

Examples:
  memfabric bandwidth --mix all                 every mix, each node's own memory
  memfabric bandwidth --mix read,triad --matrix  every CPU node x every memory node
  memfabric bandwidth --threads 1,2,4,8         bandwidth vs thread count
  memfabric bandwidth --per-domain --fclk 1600  each L3 domain alone, then adding up

Lists of CPUs and nodes use Linux syntax: 0-3,8,10-11.
Sizes take binary suffixes: 64K = 65536 bytes, 256M, 1G, 1GiB.
GB/s means 10^9 bytes per second.
Exit codes: 0 success, 1 a measurement failed, 2 bad input or usage.";

const STREAM_HELP: &str = "\
Runs STREAM 5.10's Copy (c = a), Scale (b = s*c), Add (c = a + b) and Triad
(a = b + s*c) the way STREAM does: three arrays split into one contiguous part per
thread, each part first-touched by its own pinned thread; --ntimes passes of the
four kernels, the first not counted; bytes counted 16, 16, 24 and 24 per element;
the arrays checked against the same operations on scalars (relative error 1e-13).
Best GB/s is STREAM's Best Rate MB/s divided by 1000. To compare with STREAM,
give the same array size: STREAM_ARRAY_SIZE=N is --size 8*N bytes. Note that
gcc (even at STREAM's -O2) compiles STREAM's Copy loop into a call to memcpy, and
glibc's memcpy uses streaming stores for large copies: that Copy compares with
memfabric's Copy under --non-temporal, its other three kernels without it.

Examples:
  memfabric stream                        every allowed CPU, arrays 4x the LLC
  memfabric stream --size 1600000000      STREAM_ARRAY_SIZE=200000000
  memfabric stream --threads 1            one thread

Lists of CPUs and nodes use Linux syntax: 0-3,8,10-11.
Sizes take binary suffixes: 64K = 65536 bytes, 256M, 1G, 1GiB.
GB/s means 10^9 bytes per second.
Exit codes: 0 success, 1 a measurement failed, 2 bad input or usage.";

const LOADED_HELP: &str = "\
One CPU chases pointers through a random cycle in memory on a node (as `latency`
does) while the other CPUs run a bandwidth mix over their own arrays on the same
node. Each load thread waits a number of spin-loop hints after every 4 KiB of each
array: none at the first point, then 1, 2, 4, ... doubling, down to near idle.
Each point prints the load's GB/s (measured while the latency is sampled) and the
latency: the curve of `mlc --loaded_latency`. The idle latency (no load) comes first.

--spread instead adds the load one L3 domain (CCX/CCD, sub-NUMA cluster) at a time at
full speed, to show what busy neighbours do to the latency CPU; --load-domain and
--latency-domain put the load on one domain and the measuring CPU on another.

Examples:
  memfabric loaded-latency                              CPU 0 measures, all others load
  memfabric loaded-latency --mix triad-nt --points 20
  memfabric loaded-latency --latency-domain 0 --load-domain 1
  memfabric loaded-latency --spread

Lists of CPUs and nodes use Linux syntax: 0-3,8,10-11.
Sizes take binary suffixes: 64K = 65536 bytes, 256M, 1G, 1GiB.
GB/s means 10^9 bytes per second.
Exit codes: 0 success, 1 a measurement failed, 2 bad input or usage.";

/// Seed of the latency chase when none is given, so runs rebuild the same cycle.
pub const DEFAULT_SEED: u64 = 0x6d65_6d66;

/// --cv-threshold when none is given, in percent.
pub const DEFAULT_CV_PERCENT: f64 = 100.0 * memfabric_analysis::noise::DEFAULT_THRESHOLD_CV;

#[derive(Debug, Parser)]
#[command(name = "memfabric", version, about = "Map a machine's memory fabric: latency and bandwidth between every CPU node and every memory node", after_help = AFTER_HELP)]
pub struct Cli {
    /// Print one JSON document on stdout (schema in docs/JSON.md) instead of tables
    #[arg(long, global = true)]
    pub json: bool,
    /// Do not draw progress on stderr
    #[arg(long, global = true)]
    pub quiet: bool,
    /// The run database, an SQLite file (default: $MEMFABRIC_DB, else $XDG_DATA_HOME/memfabric/runs.sqlite, else ~/.local/share/memfabric/runs.sqlite)
    #[arg(long, global = true, value_name = "PATH", conflicts_with = "store")]
    pub db: Option<PathBuf>,
    /// Where runs are kept: postgres://USER@HOST:PORT/DB?sslmode=verify-full&sslrootcert=CA for PostgreSQL (parts left out, and the password, come from PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD or ~/.pgpass, as libpq takes them), or an SQLite file (default: $MEMFABRIC_STORE, else as --db)
    #[arg(long, global = true, value_name = "URL|PATH")]
    pub store: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the default suite (topology, latency and bandwidth matrices, every mix, loaded latency, core-to-core, cache sweep, GPU memory bandwidth and host-device copies where a GPU is), save it and write its HTML report
    Run(RunArgs),
    #[command(about = registry::TOPOLOGY.about)]
    Topology(TopologyArgs),
    #[command(about = registry::LATENCY.about, after_help = AFTER_HELP)]
    Latency(LatencyArgs),
    #[command(about = registry::BANDWIDTH.about, after_help = BANDWIDTH_HELP)]
    Bandwidth(BandwidthArgs),
    #[command(about = registry::STREAM.about, after_help = STREAM_HELP)]
    Stream(StreamArgs),
    #[command(name = "loaded-latency", about = registry::LOADED_LATENCY.about, after_help = LOADED_HELP)]
    LoadedLatency(LoadedLatencyArgs),
    /// The run history: list, show, delete or export saved runs
    Runs(RunsArgs),
    /// Two saved runs side by side: every shared figure, its difference and percentage
    Compare(CompareArgs),
    /// A saved run as one offline HTML file: heatmaps, curves, tiers; --compare for two runs
    Report(ReportArgs),
    /// Many hosts' runs: measure a cluster through Slurm (run) or gather JSON documents (ingest), then judge every host against its hardware class (report)
    #[command(after_help = FLEET_HELP)]
    Fleet(FleetArgs),
    #[command(about = registry::C2C.about, after_help = C2C_HELP)]
    C2c(C2cArgs),
    #[command(about = registry::SWEEP.about, after_help = SWEEP_HELP)]
    Sweep(SweepArgs),
    #[command(about = registry::THEORY.about, after_help = theory::THEORY_HELP)]
    Theory(TheoryArgs),
    #[command(about = registry::AUDIT.about, after_help = theory::AUDIT_HELP)]
    Audit(AuditArgs),
    /// Decide before buying or rebooting: DIMM populations for a capacity, what a NUMA mode and socket-link setting give, this machine against its platform's rules
    #[command(after_help = PLAN_HELP)]
    Plan(PlanArgs),
    #[command(about = registry::MONITOR.about, after_help = MONITOR_HELP)]
    Monitor(MonitorArgs),
    #[command(about = registry::GPU.about, after_help = GPU_HELP)]
    Gpu(GpuArgs),
    /// List the measurements memfabric offers and what each reports
    List,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub keep: Keep,
    /// Smaller buffers and fewer samples: a first look in seconds, not a reference figure
    #[arg(long)]
    pub quick: bool,
    /// Each command's own defaults (sizes from the machine's caches, more samples): as long as it needs
    #[arg(long, conflicts_with = "quick")]
    pub thorough: bool,
    /// Do not write the HTML report (memfabric-run-ID.html in the current directory)
    #[arg(long)]
    pub no_report: bool,
    /// Do not keep the result in the run database, only print it (`fleet run` uses this: results come back through the scheduler); implies --no-report
    #[arg(long, conflicts_with_all = ["save", "label"])]
    pub no_save: bool,
}

#[derive(Debug, Args)]
pub struct TopologyArgs {
    /// Read this directory instead of /sys (a saved sysfs tree, e.g. tests/fixtures/NAME/sys)
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sysfs: PathBuf,
}

/// Which CPUs measure which memory; shared by latency and bandwidth.
#[derive(Debug, Args)]
pub struct Selection {
    /// Every CPU node against every memory node, CPU-less nodes included (default: each node's own memory)
    #[arg(long)]
    pub matrix: bool,
    /// CPU nodes to measure from (default: every node with CPUs this process may use)
    #[arg(long, value_name = "LIST", value_parser = parse_list)]
    pub cpu_nodes: Option<IdList>,
    /// Memory nodes to measure (default: the CPU node's own, or all with --matrix)
    #[arg(long, value_name = "LIST", value_parser = parse_list)]
    pub mem_nodes: Option<IdList>,
    #[command(flatten)]
    pub spread: InterleaveArgs,
}

#[derive(Debug, Args)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub keep: Keep,
    #[command(flatten)]
    pub select: Selection,
    /// Measure from this CPU (default: the first allowed CPU of each CPU node)
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<u32>,
    /// Buffer size (default: 4x the total last-level cache, at least 256M)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub size: Option<u64>,
    /// Bytes between chase elements, a multiple of 64 (64: one load per cache line)
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "64")]
    pub stride: u64,
    /// With page-random: the window inside which the order is random (windows in random order)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub window: Option<u64>,
    /// Access order: random (one Sattolo cycle over all lines), page-random (random inside each 4 KiB page, pages in random order: few TLB misses), sequential
    #[arg(long, value_enum, default_value_t = PatternArg::Random)]
    pub pattern: PatternArg,
    #[command(flatten)]
    pub common: Common,
    /// Time per sample in milliseconds (the load count per sample is calibrated to it)
    #[arg(long, value_name = "MS", default_value_t = 20, value_parser = crate::args::positive::<u64>, allow_negative_numbers = true)]
    pub sample_ms: u64,
    /// Seed of the random chase, to rebuild the exact same permutation
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
}

#[derive(Debug, Args)]
pub struct BandwidthArgs {
    #[command(flatten)]
    pub keep: Keep,
    #[command(flatten)]
    pub select: Selection,
    /// Access mixes, comma-separated, or all (see below)
    #[arg(long, value_name = "MIX", value_parser = parse_mixes, default_value = "read")]
    pub mix: Mixes,
    /// Thread counts, one measurement each, threads on the node's CPUs in order (e.g. 1,2,4,8; default: every allowed CPU of the node)
    #[arg(long, value_name = "LIST", value_parser = parse_counts)]
    pub threads: Option<Counts>,
    /// Each L3 domain (CCX/CCD, sub-NUMA cluster, socket) alone, then domains added one by one
    #[arg(long)]
    pub per_domain: bool,
    /// Streams at the same time, each with its own rate and all summed: pairs (two nodes read each other's memory), all-remote (every node reads the next node's), all-local (every node its own)
    #[arg(long, value_enum, value_name = "PATTERN", conflicts_with = "per_domain")]
    pub concurrent: Option<ConcurrentArg>,
    /// With --per-domain: the fabric clock in MHz, to give bytes per fabric cycle
    #[arg(long, value_name = "MHZ", requires = "per_domain")]
    pub fclk: Option<f64>,
    /// Bytes of each array of each thread (default: 4x the total last-level cache split over the threads, at least 64M)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub size: Option<u64>,
    /// Vector kernel (default: the widest this CPU supports)
    #[arg(long, value_enum, default_value_t = KernelArg::Auto)]
    pub kernel: KernelArg,
    /// Socket links between sockets (UPI, xGMI...), for the peak of cross-socket cells: links x lanes x Gbit/s / 8
    #[arg(long, value_name = "N", requires_all = ["lanes", "gbps"])]
    pub links: Option<u32>,
    /// Lanes per socket link (with --links)
    #[arg(long, value_name = "N", requires_all = ["links", "gbps"])]
    pub lanes: Option<u32>,
    /// Gbit/s per lane (with --links)
    #[arg(long, value_name = "GBPS", requires_all = ["links", "lanes"])]
    pub gbps: Option<f64>,
    #[command(flatten)]
    pub peak: PeakArgs,
    #[command(flatten)]
    pub dram: DramArgs,
    #[command(flatten)]
    pub common: Common,
}

/// The memory's peak where SMBIOS does not give it (or gives it wrong), for the
/// "% of peak" column.
#[derive(Debug, Args)]
pub struct PeakArgs {
    /// Memory channels per socket, for the share of the peak where SMBIOS does not say (with --mts)
    #[arg(long, value_name = "N", requires = "mts", conflicts_with = "machine")]
    pub channels: Option<u32>,
    /// Transfer rate of those channels in MT/s (DDR5-4800: 4800; with --channels)
    #[arg(long, value_name = "MT/S", requires = "channels")]
    pub mts: Option<u32>,
    /// Data bits per channel (default 64; with --channels)
    #[arg(long, value_name = "BITS", requires = "channels")]
    pub bus_bits: Option<u32>,
    /// A machine file (see `memfabric theory --machine`) whose memory is the peak
    #[arg(long, value_name = "FILE")]
    pub machine: Option<std::path::PathBuf>,
}

#[derive(Debug, Args)]
pub struct StreamArgs {
    #[command(flatten)]
    pub keep: Keep,
    /// CPU nodes whose CPUs run threads (default: every node with CPUs this process may use)
    #[arg(long, value_name = "LIST", value_parser = parse_list)]
    pub cpu_nodes: Option<IdList>,
    /// The one memory node for all arrays (default: each thread's part on its own node)
    #[arg(long, value_name = "NODE", value_parser = parse_list)]
    pub mem_nodes: Option<IdList>,
    #[command(flatten)]
    pub spread: InterleaveArgs,
    /// Threads, on the selected nodes' CPUs in order (default: every allowed CPU)
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Bytes of each of the three arrays, all threads together (default: 4x the total last-level cache, at least 256M)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub size: Option<u64>,
    /// Streaming (non-temporal) stores in all four kernels, then a store fence
    #[arg(long)]
    pub non_temporal: bool,
    /// Passes of the four kernels; the first is not counted (STREAM's NTIMES)
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub ntimes: usize,
    /// Page size: off (4 KiB, THP refused), thp (transparent huge pages), 2M or 1G (reserved hugetlb pages)
    #[arg(long, value_enum, default_value_t = HugeArg::Off)]
    pub huge_pages: HugeArg,
    /// Vector kernel (default: the widest this CPU supports)
    #[arg(long, value_enum, default_value_t = KernelArg::Auto)]
    pub kernel: KernelArg,
    /// Flag functions whose passes spread more than this many percent
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_CV_PERCENT, value_parser = crate::args::positive::<f64>, allow_negative_numbers = true)]
    pub cv_threshold: f64,
    #[command(flatten)]
    pub peak: PeakArgs,
}

#[derive(Debug, Args)]
pub struct LoadedLatencyArgs {
    #[command(flatten)]
    pub keep: Keep,
    /// The CPU that measures latency (default: the first allowed CPU)
    #[arg(long, value_name = "CPU")]
    pub latency_cpu: Option<u32>,
    /// Measure from the first allowed CPU of this L3 domain (index as `topology` lists them)
    #[arg(long, value_name = "INDEX")]
    pub latency_domain: Option<usize>,
    /// CPUs that load memory (default: every other allowed CPU)
    #[arg(long, value_name = "LIST", value_parser = parse_list)]
    pub load_cpus: Option<IdList>,
    /// Load from the allowed CPUs of this L3 domain
    #[arg(long, value_name = "INDEX")]
    pub load_domain: Option<usize>,
    /// Node of the chase and of the load's arrays (default: the latency CPU's node)
    #[arg(long, value_name = "NODE")]
    pub mem_node: Option<u32>,
    /// Load from the allowed CPUs of these nodes (e.g. the other socket's), in this order
    #[arg(long, value_name = "LIST", value_parser = parse_ordered)]
    pub load_nodes: Option<IdList>,
    /// Where the load's arrays live: one node for all, or one per --load-nodes node in the same order (default: the chase's node)
    #[arg(long, value_name = "LIST", value_parser = parse_ordered)]
    pub load_mem_nodes: Option<IdList>,
    /// The load's access mix (see `bandwidth --help`)
    #[arg(long, value_name = "MIX", default_value = "read")]
    pub mix: Mix,
    /// Add the load one L3 domain at a time, at full speed, instead of throttling it
    #[arg(long)]
    pub spread: bool,
    /// Throttle levels: no delay, then doubling delays (2 to 24)
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub points: usize,
    /// Size of the latency chase (default: 4x the total last-level cache, at least 256M)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub chase_size: Option<u64>,
    /// Bytes of each array of each load thread (default: 4x the LLC split over the threads, at least 64M)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub size: Option<u64>,
    /// Time per latency sample in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 20, value_parser = crate::args::positive::<u64>, allow_negative_numbers = true)]
    pub sample_ms: u64,
    /// Vector kernel of the load (default: the widest this CPU supports)
    #[arg(long, value_enum, default_value_t = KernelArg::Auto)]
    pub kernel: KernelArg,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Args)]
pub struct Common {
    /// Page size: off (4 KiB, THP refused), thp (transparent huge pages), 2M or 1G (reserved hugetlb pages)
    #[arg(long, value_enum, default_value_t = HugeArg::Off)]
    pub huge_pages: HugeArg,
    /// Timed samples per cell, after one discarded warm-up
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub samples: usize,
    /// Flag results whose coefficient of variation exceeds this many percent, and name likely causes
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_CV_PERCENT, value_parser = crate::args::positive::<f64>, allow_negative_numbers = true)]
    pub cv_threshold: f64,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PatternArg {
    Random,
    PageRandom,
    Sequential,
}

impl From<PatternArg> for Pattern {
    fn from(p: PatternArg) -> Pattern {
        match p {
            PatternArg::Random => Pattern::Random,
            PatternArg::PageRandom => Pattern::PageRandom,
            PatternArg::Sequential => Pattern::Sequential,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HugeArg {
    Off,
    Thp,
    #[value(name = "2M")]
    Huge2M,
    #[value(name = "1G")]
    Huge1G,
}

impl From<HugeArg> for HugePages {
    fn from(h: HugeArg) -> HugePages {
        match h {
            HugeArg::Off => HugePages::Off,
            HugeArg::Thp => HugePages::Thp,
            HugeArg::Huge2M => HugePages::Huge2M,
            HugeArg::Huge1G => HugePages::Huge1G,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KernelArg {
    Auto,
    Avx512,
    Avx2,
    Sse2,
    Neon,
    Scalar,
}

/// A Linux id list (`0-3,8`); a newtype so clap takes it as one value, not many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdList(pub Vec<u32>);

fn parse_list(s: &str) -> Result<IdList, String> {
    let v = memfabric_topo::parse_cpulist(s).map_err(|e| e.to_string())?;
    if v.is_empty() {
        return Err("empty list".into());
    }
    Ok(IdList(v))
}

/// Node ids in the order given, repeats kept: "1,0" pairs with another list by position.
fn parse_ordered(s: &str) -> Result<IdList, String> {
    let ids: Result<Vec<u32>, _> = s.split(',').map(|x| x.trim().parse::<u32>()).collect();
    match ids {
        Ok(v) if !v.is_empty() => Ok(IdList(v)),
        _ => Err(format!("'{s}' is not a list of node numbers like 1,0")),
    }
}

fn parse_size(s: &str) -> Result<u64, String> {
    memfabric_model::parse_size(s).map_err(|e| e.to_string())
}

/// Mixes as given to --mix, in the order given, without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mixes(pub Vec<Mix>);

fn parse_mixes(s: &str) -> Result<Mixes, String> {
    let mut out = Vec::new();
    for word in s.split(',').map(str::trim) {
        let add: Vec<Mix> = if word == "all" {
            Mix::ALL.to_vec()
        } else {
            vec![word.parse::<Mix>().map_err(|e| e.to_string())?]
        };
        for m in add {
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    Ok(Mixes(out))
}
