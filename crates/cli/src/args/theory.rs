//! Arguments of `theory` and `audit`: a calculation, a machine file, or where
//! to read this machine (or a saved copy of one).

use std::path::PathBuf;

use clap::Args;

pub const THEORY_HELP: &str = "\
Peaks are raw transfer rates, GB/s = 10^9 bytes/s, before refresh, command and
protocol overhead:
  memory   channels x MT/s x bus bytes (64-bit channel: 8 B), per socket and for
           the system (x sockets); a wide bus (LPDDR5X, GDDR, HBM) by its total
           width: --bus-bits 256 --mts 8000
  links    links x lanes x Gbit/s / 8, per direction and both directions
With no numbers: this machine's peak from its DIMMs (SMBIOS type 17, root-only;
`dmidecode -t 17` is tried where the raw entries cannot be read). Where SMBIOS
says too little (no DIMMs, or locators that name no socket and channel), the
result is skipped with the reason and the command still exits 0: nothing is
guessed.

A machine file (TOML) describes a platform, planned or at hand; every key is
optional, unknown keys are refused:
  name = \"2S Genoa, 12 x DDR5-4800\"
  sockets = 2
  channels_per_socket = 12
  mts = 4800
  bus_bits = 64          # per channel; alone (no channels), one wide bus
  links = 4              # socket links, each of
  lanes = 16             # this many lanes at
  gbps = 32              # this many Gbit/s per lane

Examples:
  memfabric theory                                   this machine's DIMMs
  memfabric theory --channels 12 --mts 4800 --sockets 2
  memfabric theory --bus-bits 256 --mts 8000         a 256-bit LPDDR5X bus
  memfabric theory --links 4 --lanes 16 --gbps 32
  memfabric theory --machine genoa.toml

Exit codes: 0 success (a skipped peak included), 2 bad input or usage.";

pub const AUDIT_HELP: &str = "\
Findings have a severity (info, warning, critical), a plain-language why and the
evidence read. Memory: empty or unequal channels, sockets populated differently,
mixed DIMM sizes, speeds, ranks or part numbers, DIMMs below their rated speed
(SMBIOS type 17); NUMA nodes with CPUs but no memory, unequal node memory; kernel:
transparent huge pages, automatic NUMA balancing, CPU frequency governor, SMT.
Each socket gets a class, optimal, reduced, not-recommended (fewer than half the
channels, or channels of unequal size) or unknown, with the bandwidth it is
expected to lose against every listed channel populated at the fastest DIMM's
rated speed: 1 - this socket's peak / (listed channels x that MT/s x bus bytes).

Examples:
  memfabric audit
  memfabric audit --dmidecode saved-dmidecode.txt
  memfabric audit --sysfs saved/sys --smbios saved/dmi-entries --proc saved/proc

Exit codes: 0 success (findings included), 2 bad input or usage.";

/// Where this machine's description is read: live, or saved copies.
#[derive(Debug, Args)]
pub struct MachineSource {
    /// Read the topology, and SMBIOS entries under firmware/dmi/entries, from this directory instead of /sys
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sysfs: PathBuf,
    /// Read SMBIOS type 17 entries from this directory (a copy of /sys/firmware/dmi/entries)
    #[arg(long, value_name = "DIR")]
    pub smbios: Option<PathBuf>,
    /// Read memory devices from this saved `dmidecode -t 17` output
    #[arg(long, value_name = "FILE", conflicts_with = "smbios")]
    pub dmidecode: Option<PathBuf>,
}

impl MachineSource {
    pub fn is_live(&self) -> bool {
        memfabric_topo::Roots::is_live_sys(&self.sysfs) && self.smbios.is_none() && self.dmidecode.is_none()
    }
}

#[derive(Debug, Args)]
pub struct TheoryArgs {
    /// Memory channels per socket, 64 bits wide unless --bus-bits says otherwise
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub channels: Option<u32>,
    /// Memory transfer rate in MT/s (DDR5-4800: 4800)
    #[arg(long, value_name = "MT/S", value_parser = parse_count, allow_negative_numbers = true)]
    pub mts: Option<u32>,
    /// Data bits per channel (default 64); without --channels, the total width of one wide bus
    #[arg(long, value_name = "BITS", value_parser = parse_count, allow_negative_numbers = true)]
    pub bus_bits: Option<u32>,
    /// Sockets: the system peak is this many sockets' (default 1; at most 64)
    #[arg(long, value_name = "N", value_parser = parse_sockets, allow_negative_numbers = true)]
    pub sockets: Option<u32>,
    /// Socket-to-socket links (UPI, xGMI, ...)
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub links: Option<u32>,
    /// Lanes per link
    #[arg(long, value_name = "N", value_parser = parse_count, allow_negative_numbers = true)]
    pub lanes: Option<u32>,
    /// Signalling rate per lane in Gbit/s
    #[arg(long, value_name = "GBPS", value_parser = parse_rate, allow_negative_numbers = true)]
    pub gbps: Option<f64>,
    /// A machine description (TOML) instead of the numbers above; see below
    #[arg(long, value_name = "FILE", conflicts_with_all = ["channels", "mts", "bus_bits", "sockets", "links", "lanes", "gbps"])]
    pub machine: Option<PathBuf>,
    #[command(flatten)]
    pub source: MachineSource,
}

impl TheoryArgs {
    /// Whether any number of a calculation was given.
    pub fn calculates(&self) -> bool {
        let counts = [
            self.channels,
            self.mts,
            self.bus_bits,
            self.sockets,
            self.links,
            self.lanes,
        ];
        counts.iter().any(Option::is_some) || self.gbps.is_some()
    }
}

#[derive(Debug, Args)]
pub struct AuditArgs {
    #[command(flatten)]
    pub source: MachineSource,
    /// Read kernel settings (sys/kernel/numa_balancing) from this directory instead of /proc
    #[arg(long, value_name = "DIR", default_value = "/proc")]
    pub proc: PathBuf,
    /// Also print the rule that gives each socket its class, and how the expected loss is estimated
    #[arg(long)]
    pub explain: bool,
}

/// The largest single systems have 32 sockets; 64 leaves room, and a bound keeps a
/// typo (100000) from printing a line per socket for megabytes.
pub const MAX_SOCKETS: u32 = 64;

fn parse_sockets(s: &str) -> Result<u32, String> {
    match parse_count(s)? {
        n if n > MAX_SOCKETS => Err(format!("at most {MAX_SOCKETS}: no single system has {n} sockets")),
        n => Ok(n),
    }
}

fn parse_count(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(0) => Err("must be 1 or more".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a whole number of 1 or more")),
    }
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a positive number of Gbit/s")),
    }
}
