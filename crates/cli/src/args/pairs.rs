//! Arguments of `c2c` (pairs of CPUs) and `sweep` (working-set sizes).

use clap::{Args, ValueEnum};
use memfabric_model::Mix;

use super::{
    parse_list, parse_size, HugeArg, IdList, KernelArg, PatternArg, DEFAULT_CV_PERCENT, DEFAULT_SEED,
};

pub const C2C_HELP: &str = "\
Two threads pinned to two CPUs hand one cache line back and forth, for every ordered
pair of the selected CPUs. Rows: the first CPU, which times the round trips and on
whose node the line's page is bound. Columns: the second CPU, which answers.
Modes:
  cas       each side swaps the other's value for its own with compare-exchange,
            retrying until it succeeds (core-to-core-latency's default benchmark)
  pingpong  each side spins on loads until the other's value shows, then stores its
            own (on one line; core-to-core-latency's bench 2 uses two lines)
Values are one-way ns: a sample's time / its round trips / 2, the figure
core-to-core-latency prints, so its \"Mean latency\" compares with the mean here.
One warm-up sample per pair is discarded. Each --offsets value puts the line at that
byte of the same page (which agent owns a line depends on its address): one matrix
each. Pair medians are summarized by topology class: same L3, other L3 of the same
socket, other socket.

Examples:
  memfabric c2c                          every allowed CPU, cas, offset 0
  memfabric c2c --cpus 0-7 --mode all    both modes
  memfabric c2c --offsets 0,64,2048      three matrices

Lists of CPUs use Linux syntax: 0-3,8,10-11.
Exit codes: 0 success, 1 a measurement failed, 2 bad input or usage.";

#[derive(Debug, Args)]
pub struct C2cArgs {
    #[command(flatten)]
    pub keep: super::Keep,
    /// CPUs to pair, at least 2 (default: every online CPU this process may use)
    #[arg(long, value_name = "LIST", value_parser = parse_list)]
    pub cpus: Option<IdList>,
    /// Handoff: cas (compare-exchange), pingpong (loads, then a store), or all (both)
    #[arg(long, value_enum, default_value_t = C2cModeArg::Cas)]
    pub mode: C2cModeArg,
    /// Timed samples per pair, after one discarded warm-up sample
    #[arg(long, value_name = "N", default_value_t = memfabric_measure::c2c::DEFAULT_SAMPLES, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub samples: usize,
    /// Round trips per sample
    #[arg(long, value_name = "N", default_value_t = memfabric_measure::c2c::DEFAULT_ROUND_TRIPS, value_parser = crate::args::positive::<u64>, allow_negative_numbers = true)]
    pub iterations: u64,
    /// Byte offsets of the line inside its 4 KiB page: multiples of 64 below 4096, one matrix each
    #[arg(long, value_name = "LIST", value_parser = parse_offset_list, default_value = "0")]
    pub offsets: Offsets,
    /// Flag pairs whose coefficient of variation exceeds this many percent, and name likely causes
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_CV_PERCENT, value_parser = crate::args::positive::<f64>, allow_negative_numbers = true)]
    pub cv_threshold: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum C2cModeArg {
    Cas,
    Pingpong,
    All,
}

/// Byte offsets as given to --offsets, in order, without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offsets(pub Vec<u64>);

fn parse_offset_list(s: &str) -> Result<Offsets, String> {
    memfabric_model::parse_offsets(s)
        .map(Offsets)
        .map_err(|e| e.to_string())
}

pub const SWEEP_HELP: &str = "\
Measures latency (a pointer chase, as `latency` does) and bandwidth (a mix, as
`bandwidth` does) at working-set sizes from --min to --max, --points-per-octave sizes
per doubling, then finds the levels each curve shows: plateaus, and the boundaries
where the curve steps to the next, slower level (halfway, geometrically, from one
plateau to the next). Each boundary is set beside the cache sizes the topology
reports; with several bandwidth threads, a shared cache's size is divided among the
threads that share it. Samples are short (--sample-ms) so that a sweep takes seconds
to a minute or two.

The default --max is 4x the measuring CPU's last-level cache, but at most 1G: past
that a sweep takes minutes. Give --max to go further (e.g. to see memory on a
machine with a very large LLC, or a VM that reports one).

Latency always runs on the one CPU; --threads sets the bandwidth threads, each with
its own arrays of the point's size, pinned to the CPUs of the measuring CPU's node.

Examples:
  memfabric sweep                                latency and bandwidth, 4K to 4x LLC
  memfabric sweep --what latency --max 64M --points-per-octave 8
  memfabric sweep --huge-pages 2M                fewer TLB misses: compare with off
  memfabric sweep --what bandwidth --threads all --mix copy

Sizes take binary suffixes: 64K = 65536 bytes, 256M, 1G, 1GiB.
GB/s means 10^9 bytes per second.
Exit codes: 0 success, 1 a measurement failed, 2 bad input or usage.";

#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    pub keep: super::Keep,
    /// The curves to measure
    #[arg(long, value_enum, default_value_t = SweepWhat::Both)]
    pub what: SweepWhat,
    /// Smallest working set
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "4K")]
    pub min: u64,
    /// Largest working set; the sweep stops there (default: 4x the measuring CPU's last-level cache, at most 1G)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max: Option<u64>,
    /// Sizes per doubling (each rounded to what its kernel takes: 64-byte lines, 512-byte blocks)
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = crate::args::positive::<u32>, allow_negative_numbers = true)]
    pub points_per_octave: u32,
    /// Bandwidth threads: N, or all (every allowed CPU of the measuring CPU's node)
    #[arg(long, value_name = "N|all", value_parser = parse_sweep_threads, default_value = "1")]
    pub threads: SweepThreadsArg,
    /// The measuring CPU (default: the first allowed CPU)
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<u32>,
    /// Memory node of every buffer (default: the measuring CPU's node)
    #[arg(long, value_name = "NODE")]
    pub mem_node: Option<u32>,
    /// Page size: off (4 KiB, THP refused), thp, 2M or 1G (reserved hugetlb pages); compare to see TLB effects
    #[arg(long, value_enum, default_value_t = HugeArg::Off)]
    pub huge_pages: HugeArg,
    /// Access mix of the bandwidth curve (see `bandwidth --help`)
    #[arg(long, value_name = "MIX", default_value = "read")]
    pub mix: Mix,
    /// Access order of the latency chase (see `latency --help`)
    #[arg(long, value_enum, default_value_t = PatternArg::Random)]
    pub pattern: PatternArg,
    /// Timed samples per point and curve, after a warm-up
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub samples: usize,
    /// Time per sample in milliseconds (loads or passes per sample are calibrated to it)
    #[arg(long, value_name = "MS", default_value_t = 2, value_parser = crate::args::positive::<u64>, allow_negative_numbers = true)]
    pub sample_ms: u64,
    /// Seed of the random chase
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Vector kernel (default: the widest this CPU supports)
    #[arg(long, value_enum, default_value_t = KernelArg::Auto)]
    pub kernel: KernelArg,
    /// Flag points whose samples spread more than this many percent
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_CV_PERCENT, value_parser = crate::args::positive::<f64>, allow_negative_numbers = true)]
    pub cv_threshold: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SweepWhat {
    Latency,
    Bandwidth,
    Both,
}

/// --threads of `sweep`: a count, or every allowed CPU of the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepThreadsArg {
    Count(usize),
    All,
}

fn parse_sweep_threads(s: &str) -> Result<SweepThreadsArg, String> {
    if s == "all" {
        return Ok(SweepThreadsArg::All);
    }
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(SweepThreadsArg::Count(n)),
        _ => Err(format!(
            "'{s}' is not a thread count: use a number of 1 or more, or all"
        )),
    }
}
