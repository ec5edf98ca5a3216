//! What a platform could do and what is wrong with it: theoretical peaks
//! (`theory`), the memory-configuration audit (`audit`), the share of the peak
//! a bandwidth cell reached, and firmware (SLIT/HMAT) figures beside measured
//! ones.
//!
//! Peaks are raw transfer rates: bus width x transfers per second, before
//! refresh, command overhead, link encoding and protocol. GB/s is 10^9 bytes/s.

use serde::{Deserialize, Serialize};

use crate::common::Outcome;

/// `memfabric theory`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TheoryReport {
    /// Where the figures come from: `calculator` (flags), `machine-file`,
    /// `smbios` (this machine's DIMMs) or `dmidecode` (its text).
    pub source: String,
    /// The platform's name, from a machine file.
    pub name: Option<String>,
    /// Skipped (with the reason) when nothing describes the memory.
    pub memory: Outcome<MemoryPeak>,
    /// Socket-to-socket links, when described.
    pub links: Option<LinkPeak>,
}

/// Peak memory bandwidth per socket and for the system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryPeak {
    pub sockets: Vec<SocketPeak>,
    pub system_gb_s: f64,
    /// e.g. `2 sockets x 460.8 GB/s = 921.6 GB/s`.
    pub formula: String,
}

/// One socket's memory channels and their peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketPeak {
    pub socket: u32,
    /// Channels with memory: the ones that count.
    pub populated_channels: u32,
    /// Channels the description lists, populated or not (SMBIOS: every
    /// channel some slot of this socket names).
    pub listed_channels: u32,
    /// Transfer rate when all populated channels share it.
    pub mt_s: Option<u32>,
    /// Data bits per channel when all populated channels share it.
    pub bus_bits: Option<u32>,
    pub peak_gb_s: f64,
    /// e.g. `12 channels x 4800 MT/s x 8 B = 460.8 GB/s`.
    pub formula: String,
    /// Per channel, from SMBIOS; empty for a calculation.
    pub channels: Vec<ChannelPeak>,
}

/// One memory channel from SMBIOS.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelPeak {
    pub channel: String,
    /// Locators of the installed DIMMs on it.
    pub dimms: Vec<String>,
    /// The speed it runs at: its DIMMs' configured speed (the slowest, if
    /// they differ, since a channel runs at one speed).
    pub mt_s: u32,
    pub bus_bits: u32,
    pub peak_gb_s: f64,
    /// Said when the speed is not simply the configured one.
    pub note: Option<String>,
}

/// Socket-to-socket links: links x lanes x Gbps / 8.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkPeak {
    pub links: u32,
    pub lanes: u32,
    /// Signalling rate per lane, Gbit/s.
    pub gbps: f64,
    pub per_direction_gb_s: f64,
    pub both_directions_gb_s: f64,
    pub formula: String,
}

/// A bandwidth cell's share of its theoretical peak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Efficiency {
    /// The peak of the path the cell measured, GB/s.
    pub peak_gb_s: f64,
    /// Median GB/s divided by the peak (0.62 = 62 %).
    pub fraction: f64,
    /// How the peak was found, e.g. `socket 0: 8 channels x 4800 MT/s x 8 B (SMBIOS)`.
    pub basis: String,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Critical,
}

/// One thing the audit found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    pub title: String,
    /// Why it matters, in plain words.
    pub why: String,
    /// What was read that shows it.
    pub evidence: Vec<String>,
}

/// A socket's memory population, judged for bandwidth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PopulationClass {
    /// Every listed channel populated alike, at the modules' rated speed.
    Optimal,
    /// Some bandwidth lost (empty channels, a lower speed, mixed modules).
    Reduced,
    /// Fewer than half the channels, or channels of unequal capacity (memory
    /// split into interleave sets of different bandwidth).
    NotRecommended,
    /// SMBIOS does not say enough to judge.
    Unknown,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SocketClass {
    pub socket: u32,
    pub class: PopulationClass,
    /// Expected loss of peak bandwidth against the same socket with every
    /// listed channel populated at the modules' rated speed (0.25 = 25 %).
    pub expected_loss: Option<f64>,
    /// How the estimate was made.
    pub estimate: String,
}

/// `memfabric audit`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditReport {
    /// Most severe first.
    pub findings: Vec<Finding>,
    pub sockets: Vec<SocketClass>,
}

/// Firmware figures for the cells of a measured matrix, and where the
/// measurement disagrees with them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirmwareComparison {
    /// What `measured` holds, e.g. `median ns per load` or `read, median GB/s`.
    pub measured_what: String,
    pub cells: Vec<FirmwareCell>,
    /// Plain-language disagreements; empty when firmware and measurement agree.
    pub disagreements: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FirmwareCell {
    pub cpu_node: u32,
    pub mem_node: u32,
    /// ACPI SLIT distance (10 = local).
    pub slit_distance: Option<u32>,
    /// HMAT read latency, where this CPU node is among the target's best
    /// initiators (the only pairs Linux shows).
    pub hmat_read_latency_ns: Option<u64>,
    /// HMAT read bandwidth, as GB/s (HMAT's MB/s / 1000).
    pub hmat_read_bandwidth_gb_s: Option<f64>,
    pub measured: Option<f64>,
}
