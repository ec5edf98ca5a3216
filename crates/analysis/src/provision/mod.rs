//! Provisioning, what `memfabric plan` answers before buying or rebooting (named
//! apart from `memfabric_measure::plan`, a measurement's resolved options): a
//! platform's rules (a TOML file in
//! `platforms/`, each citing its sources), the DIMM populations that reach a
//! capacity, the NUMA/link what-if, and this machine against its platform.
//!
//! Every figure here is a model, stated with its formula and its efficiencies;
//! nothing is measured. `plan numa --calibrate RUN` replaces the stated
//! efficiencies with those of a stored run of the same machine.

pub mod calibrate;
pub mod check;
pub mod links;
pub mod numa;
pub mod population;
pub mod shares;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use calibrate::{calibrate, Calibration, RunFigures};
pub use check::{check, CheckInput, CheckReport, Deviation, DimmSeen, SocketSeen, SocketVerdict};
pub use links::{LinkChoice, LinkUse};
pub use numa::{numa_plan, Bottleneck, Efficiencies, Figure, NumaPlan};
pub use population::{plan_population, Candidate, Class, PopulationAsk, PopulationPlan, Ras};

/// A platform as its file describes it (see docs/PLAN.md for every key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    pub name: String,
    /// Where the figures and rules come from: guide, table, datasheet.
    pub sources: Vec<String>,
    /// CPU model substrings that identify the platform for `plan check`.
    #[serde(default, rename = "match")]
    pub cpu_match: Vec<String>,
    pub sockets: u32,
    pub memory: MemorySpec,
    pub numa: NumaSpec,
    /// Absent for one socket.
    #[serde(default)]
    pub links: Option<LinksSpec>,
    /// RAS modes besides `none`, by name: `sparing`, `lockstep`, `mirroring`.
    #[serde(default)]
    pub ras: BTreeMap<String, RasSpec>,
    /// Idle latencies, where a source publishes them.
    #[serde(default)]
    pub latency: Option<LatencySpec>,
    #[serde(default)]
    pub efficiency: Efficiencies,
    /// For each key calibrated on a published measurement (`efficiency.link`,
    /// `latency`, ...), the measurement: `--explain` cites it.
    #[serde(default)]
    pub calibration: BTreeMap<String, String>,
}

/// Idle latency: local, and the hop a socket link adds (see `links::hop_ns`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencySpec {
    pub local_ns: f64,
    #[serde(default)]
    pub hop_ns: f64,
    /// Bit times of one lane the hop takes (a round trip).
    #[serde(default)]
    pub hop_lane_bits: f64,
    /// Bit times of the whole link the hop takes (a round trip).
    #[serde(default)]
    pub hop_link_bits: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemorySpec {
    /// DDR4, DDR5, LPDDR5X, ...
    pub kind: String,
    pub channels_per_socket: u32,
    /// Data bits per channel (64 for a DDR4/DDR5 DIMM channel).
    pub bus_bits: u32,
    /// Channels fall into this many equal groups (quadrants, memory
    /// controllers); DIMMs are placed round-robin over the groups, as the
    /// vendors' population orders do.
    #[serde(default = "one")]
    pub groups: u32,
    /// MT/s with 1, 2, ... DIMMs in a channel; its length is the most DIMMs a
    /// channel takes.
    pub mts: Vec<u32>,
    /// The DIMMs sold for it (socketed memory).
    #[serde(default)]
    pub dimms: Vec<DimmOption>,
    /// Capacities per socket (soldered memory: the package fixes the channels).
    #[serde(default)]
    pub capacities_gib: Vec<u32>,
    pub rule: Rule,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DimmOption {
    pub gib: u32,
    pub ranks: u32,
}

/// The named population rules. Each is what one vendor guide defines; the
/// platform file says which one its vendor uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// Balanced: every channel holds the same number of DIMMs. Near-balanced:
    /// every group (quadrant) is populated alike. Otherwise unbalanced.
    /// (Dell, "Balanced Memory with 2nd Generation AMD EPYC Processors", rev 1.4.)
    ChannelSymmetry,
    /// Balanced: every memory controller is populated alike and every
    /// populated channel holds the same number of DIMMs. Otherwise unbalanced.
    /// (Lenovo Press LP2000, 4th/5th Gen Xeon Scalable balanced memory.)
    ControllerSymmetry,
    /// Memory soldered with the package: every offered capacity is balanced.
    Soldered,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Rule::ChannelSymmetry => "channel-symmetry",
            Rule::ControllerSymmetry => "controller-symmetry",
            Rule::Soldered => "soldered",
        }
    }

    /// What `--explain` prints.
    pub fn explain(self) -> &'static str {
        match self {
            Rule::ChannelSymmetry => "channel-symmetry: balanced = every channel of the socket holds the same number of identical DIMMs (one interleave set over all channels); near-balanced = not every channel is populated, but every group of channels (quadrant) is populated alike; unbalanced = anything else (interleave sets of different widths). After Dell, \"Balanced Memory with 2nd Generation AMD EPYC Processors for PowerEdge Servers\", rev 1.4.",
            Rule::ControllerSymmetry => "controller-symmetry: balanced = every memory controller is populated alike and every populated channel holds the same number of identical DIMMs; unbalanced = anything else. After Lenovo Press LP2000 (4th/5th Gen Xeon Scalable).",
            Rule::Soldered => "soldered: the memory is part of the package, every channel always populated; each offered capacity is balanced.",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NumaSpec {
    /// How the BIOS names the mode: NPS (AMD), SNC (Intel), ...
    pub prefix: String,
    /// Nodes per socket it offers; 0 = memory interleaved across sockets
    /// (NPS0, or node interleaving).
    pub nodes_per_socket: Vec<u32>,
    /// What the BIOS calls mode 0 where it is not prefix + 0 ("node interleaving").
    #[serde(default)]
    pub interleaved_name: Option<String>,
}

impl NumaSpec {
    /// `NPS4`, `SNC2`; mode 0 by its own name where it has one.
    pub fn mode_name(&self, nps: u32) -> String {
        match (&self.interleaved_name, nps) {
            (Some(name), 0) => name.clone(),
            _ => format!("{}{nps}", self.prefix),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinksSpec {
    /// xGMI, UPI, QPI, NVLink-C2C.
    pub kind: String,
    /// Link counts a pair of sockets can have (the BIOS or board choice).
    pub counts: Vec<u32>,
    /// Data lanes per link, each allowed width; the first is the default.
    #[serde(default)]
    pub widths: Vec<u32>,
    /// Gbit/s per lane at most.
    #[serde(default)]
    pub gbps: Option<f64>,
    /// GB/s per link per direction, where the vendor gives that instead of
    /// lanes and rates.
    #[serde(default)]
    pub gb_s_per_link: Option<f64>,
    /// Lines a socket's cores keep in flight to the other socket at most,
    /// where a measurement shows it.
    #[serde(default)]
    pub remote_lines_in_flight: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RasSpec {
    /// Where the rule comes from.
    pub source: String,
    /// Copies of every write (mirroring: 2).
    #[serde(default)]
    pub write_copies: Option<u32>,
    /// Ranks held back per channel (rank sparing).
    #[serde(default)]
    pub spare_ranks_per_channel: Option<u32>,
    /// Channels work in pairs (lockstep): the two channels of a pair hold the same DIMMs.
    #[serde(default)]
    pub channel_pairs: bool,
    /// Triad relative to independent channels, where a source publishes it.
    #[serde(default)]
    pub triad_factor: Option<f64>,
}

/// The keys a platform's `[calibration]` may cite a measurement for.
pub const CALIBRATED_KEYS: [&str; 6] = [
    "efficiency.triad",
    "efficiency.read",
    "efficiency.link",
    "efficiency.link_mixed",
    "links.remote_lines_in_flight",
    "latency",
];

/// Why a platform, or a question about it, cannot be answered (exit 2).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProvisionError {
    /// A platform file breaks a rule its syntax cannot: `key` is the file's
    /// key (or `[table]`) the message is about, for finding its line.
    #[error("{message}")]
    Platform { key: String, message: String },
    #[error("{0}")]
    Ask(String),
}

impl ProvisionError {
    fn platform(key: &str, message: impl Into<String>) -> ProvisionError {
        ProvisionError::Platform {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl Platform {
    /// The checks a file's syntax cannot make.
    pub fn validate(&self) -> Result<(), ProvisionError> {
        let bad = |key: &str, m: String| Err(ProvisionError::platform(key, m));
        let m = &self.memory;
        if self.sockets == 0 {
            return bad("sockets", "sockets must be at least 1".into());
        }
        if m.channels_per_socket == 0 || m.bus_bits == 0 || !m.bus_bits.is_multiple_of(8) {
            return bad(
                "channels_per_socket",
                "memory: channels_per_socket must be at least 1 and bus_bits a multiple of 8".into(),
            );
        }
        if m.groups == 0 || !m.channels_per_socket.is_multiple_of(m.groups) {
            return bad(
                "groups",
                format!(
                    "memory: groups = {} does not divide channels_per_socket = {}",
                    m.groups, m.channels_per_socket
                ),
            );
        }
        if m.mts.is_empty() || m.mts.contains(&0) {
            return bad(
                "mts",
                "memory: mts needs one speed (MT/s) per DIMMs-per-channel count, none 0".into(),
            );
        }
        match (m.rule, m.dimms.is_empty(), m.capacities_gib.is_empty()) {
            (Rule::Soldered, _, true) => {
                return bad("rule", "memory: a soldered platform lists capacities_gib".into())
            }
            (Rule::Soldered, false, _) => {
                return bad(
                    "dimms",
                    "memory: a soldered platform has no dimms to choose".into(),
                )
            }
            (Rule::ChannelSymmetry | Rule::ControllerSymmetry, true, _) => {
                return bad(
                    "rule",
                    format!("memory: rule {} needs the dimms sold for it", m.rule.name()),
                )
            }
            _ => {}
        }
        if m.dimms.iter().any(|d| d.gib == 0 || d.ranks == 0) {
            return bad(
                "dimms",
                "memory: every DIMM needs gib and ranks of at least 1".into(),
            );
        }
        self.validate_rest()
    }

    /// NUMA modes, links, RAS modes, sources and efficiencies.
    fn validate_rest(&self) -> Result<(), ProvisionError> {
        let bad = |key: &str, m: String| Err(ProvisionError::platform(key, m));
        if self.numa.nodes_per_socket.is_empty() {
            return bad(
                "nodes_per_socket",
                "numa: nodes_per_socket lists at least one mode".into(),
            );
        }
        if let Some(l) = &self.links {
            let rated =
                l.gb_s_per_link.is_some() || (!l.widths.is_empty() && l.gbps.is_some_and(|g| g > 0.0));
            if l.counts.is_empty() || l.counts.contains(&0) || !rated {
                return bad(
                    "[links]",
                    "links: counts (none 0) and either widths with gbps or gb_s_per_link are needed".into(),
                );
            }
        } else if self.sockets > 1 {
            return bad(
                "sockets",
                format!("{} sockets need a [links] table", self.sockets),
            );
        }
        for (name, r) in &self.ras {
            if !["sparing", "lockstep", "mirroring"].contains(&name.as_str()) {
                return bad(
                    &format!("[ras.{name}]"),
                    format!("ras.{name}: the RAS modes are sparing, lockstep and mirroring"),
                );
            }
            if r.source.trim().is_empty() {
                return bad(
                    &format!("[ras.{name}]"),
                    format!("ras.{name}: say where the rule comes from (source)"),
                );
            }
        }
        if self.sources.iter().all(|s| s.trim().is_empty()) {
            return bad("sources", "sources: cite where the figures come from".into());
        }
        if let Some(l) = &self.latency {
            let fine = [l.local_ns, l.hop_ns, l.hop_lane_bits, l.hop_link_bits]
                .iter()
                .all(|v| v.is_finite() && *v >= 0.0);
            if !fine || l.local_ns <= 0.0 {
                return bad(
                    "[latency]",
                    "latency: local_ns is above 0 and the hop terms at least 0".into(),
                );
            }
        }
        if let Some(n) = self.links.as_ref().and_then(|l| l.remote_lines_in_flight) {
            if n.is_nan() || n < 1.0 || self.latency.is_none() {
                return bad(
                    "remote_lines_in_flight",
                    "links: remote_lines_in_flight is at least 1 and needs a [latency] table (Little's law)"
                        .into(),
                );
            }
        }
        for key in self.calibration.keys() {
            if !CALIBRATED_KEYS.contains(&key.as_str()) {
                return bad(
                    "[calibration]",
                    format!(
                        "calibration: {key} is not a model key; these are: {}",
                        CALIBRATED_KEYS.join(", ")
                    ),
                );
            }
        }
        self.efficiency
            .validate()
            .map_err(|m| ProvisionError::platform("[efficiency]", m))
    }

    /// GB/s of one channel at `mts` (GB = 10^9 bytes).
    pub fn channel_gb_s(&self, mts: u32) -> f64 {
        f64::from(mts) * f64::from(self.memory.bus_bits) / 8.0 / 1000.0
    }

    /// Every channel with one DIMM at the top speed: the socket's best.
    pub fn socket_peak_gb_s(&self) -> f64 {
        f64::from(self.memory.channels_per_socket) * self.channel_gb_s(self.memory.mts[0])
    }

    /// Every socket at its best.
    pub fn system_peak_gb_s(&self) -> f64 {
        self.socket_peak_gb_s() * f64::from(self.sockets)
    }

    pub fn max_dimms_per_channel(&self) -> u32 {
        self.memory.mts.len() as u32
    }
}

#[cfg(test)]
mod tests;
