//! Arguments of `memfabric plan`: decide a memory population and a NUMA/link
//! configuration before buying or rebooting.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

use super::{MachineSource, RunRef};

pub const PLAN_HELP: &str = "\
A platform is a TOML file of its vendor's rules, each citing its source. The
built-in ones (`memfabric plan platforms`) come from platforms/ in the source;
a file of your own is named by its path (--platform my.toml), or put in the
directory $MEMFABRIC_PLATFORMS and named without .toml. docs/PLAN.md lists
every key and walks through a population and an NPS/link decision.

Every figure is a model, printed with its formula and efficiencies; nothing is
measured. GB/s = 10^9 bytes/s; capacities are GiB (2^30 bytes).

Examples:
  memfabric plan population --platform epyc-9004-2s --capacity 1TiB
  memfabric plan population --platform xeon-sp-2s --capacity 384G --ras mirroring --explain
  memfabric plan numa --platform epyc-9004-2s --nps 0 --links 3
  memfabric plan numa --platform epyc-9004-2s --nps 4 --calibrate last
  memfabric plan check

Exit codes: 0 success; 1 `plan check` found a deviation; 2 bad input (an unknown
platform, a capacity the platform cannot hold, a mode or RAS it lacks).";

#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(subcommand)]
    pub action: PlanAction,
}

#[derive(Debug, Subcommand)]
pub enum PlanAction {
    /// The DIMM populations that reach a capacity: channels used, class, expected bandwidth and loss, usable capacity after RAS; the recommendation first
    Population(PopulationArgs),
    /// Expected per-node local and remote Triad and interleaved Triad for a NUMA mode and socket-link setting, with the bottleneck named
    Numa(NumaArgs),
    /// This machine's populated channels, DIMM speeds and NUMA mode against its platform's rules, with the fix for each deviation
    Check(CheckArgs),
    /// The platforms known here: built in, and in $MEMFABRIC_PLATFORMS
    Platforms,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RasArg {
    /// Every byte installed is usable
    None,
    /// One rank per channel held back to replace a failing one
    Sparing,
    /// Channels work in pairs (the platform says what it costs, where its sources publish it)
    Lockstep,
    /// Every write goes to two copies: half the memory is usable
    Mirroring,
}

#[derive(Debug, Args)]
pub struct PopulationArgs {
    /// A built-in platform's name, a file in $MEMFABRIC_PLATFORMS, or a path to a .toml file
    #[arg(long, value_name = "P")]
    pub platform: String,
    /// The usable capacity wanted, all sockets: 512G, 1TiB, 1536G (binary multiples)
    #[arg(long, value_name = "SIZE", value_parser = parse_gib)]
    pub capacity: f64,
    /// RAS mode, which decides how much of what is installed is usable
    #[arg(long, value_enum, default_value_t = RasArg::None)]
    pub ras: RasArg,
    /// Only these DIMM sizes, in GiB: 32,64 (or 32G,64G)
    #[arg(long, value_name = "LIST", value_parser = parse_dimm_sizes)]
    pub dimm_sizes: Option<DimmSizes>,
    /// Also print the platform's population rule and how bandwidth is estimated
    #[arg(long)]
    pub explain: bool,
    /// Every candidate, not the first 12
    #[arg(long)]
    pub all: bool,
    /// Also write the candidates as one HTML file: bandwidth against capacity
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct NumaArgs {
    /// A built-in platform's name, a file in $MEMFABRIC_PLATFORMS, or a path to a .toml file
    #[arg(long, value_name = "P")]
    pub platform: String,
    /// NUMA nodes per socket (NPS, SNC); 0 = memory interleaved across sockets (NPS0)
    #[arg(long, value_name = "N")]
    pub nps: u32,
    /// Socket links between each pair of sockets (default: the platform's most)
    #[arg(long, value_name = "N")]
    pub links: Option<u32>,
    /// Lanes per link: x16, x8, x4 (default: the platform's widest)
    #[arg(long, value_name = "xN", value_parser = parse_width)]
    pub link_width: Option<u32>,
    /// Gbit/s per lane (default: the platform's fastest)
    #[arg(long, value_name = "G")]
    pub link_gbps: Option<f64>,
    /// Take the efficiencies from a stored run of this tool on such a machine (an id, or `last`)
    #[arg(long, value_name = "RUN")]
    pub calibrate: Option<RunRef>,
    /// Say what crosses the links and why, and which figures rest on published measurements
    #[arg(long)]
    pub explain: bool,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The platform (default: the one whose CPU model matches this machine's)
    #[arg(long, value_name = "P")]
    pub platform: Option<String>,
    #[command(flatten)]
    pub source: MachineSource,
}

/// DIMM sizes in GiB, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimmSizes(pub Vec<u32>);

fn parse_gib(s: &str) -> Result<f64, String> {
    let bytes = memfabric_model::parse_size(s).map_err(|e| e.to_string())?;
    if bytes == 0 {
        return Err("the capacity must be above 0".into());
    }
    Ok(bytes as f64 / f64::from(1u32 << 30))
}

fn parse_dimm_sizes(s: &str) -> Result<DimmSizes, String> {
    let one = |w: &str| -> Result<u32, String> {
        let w = w.trim();
        if let Ok(n) = w.parse::<u32>() {
            return Ok(n);
        }
        let gib = parse_gib(w)?;
        if gib.fract() != 0.0 || gib > f64::from(u32::MAX) {
            return Err(format!("'{w}' is not a whole number of GiB"));
        }
        Ok(gib as u32)
    };
    let sizes: Vec<u32> = s.split(',').map(one).collect::<Result<_, _>>()?;
    if sizes.contains(&0) {
        return Err("a DIMM size must be above 0".into());
    }
    Ok(DimmSizes(sizes))
}

fn parse_width(s: &str) -> Result<u32, String> {
    s.trim()
        .trim_start_matches(['x', 'X'])
        .parse::<u32>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("'{s}' is not a link width like x16 or x4"))
}
