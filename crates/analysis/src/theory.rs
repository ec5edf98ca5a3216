//! Theoretical peaks: what a memory system and its socket links can move at
//! most, from numbers (a calculation or a machine file) or from this
//! machine's DIMMs, and each bandwidth cell's share of its path's peak.
//!
//! Memory: channels x transfers per second x bytes per transfer. A channel is
//! what the board's locators name (`CPU0_DIMM_A1` is channel A). DDR5 splits
//! each DIMM into two 32-bit subchannels, and SMBIOS reports the DIMM's data
//! width as 64 bits (both together), so one named channel counts 64 bits and
//! each subchannel is counted once. Should a firmware list each subchannel as
//! a device of its own (data width 32), each names its own channel and 32
//! bits each add up the same. DIMMs sharing a channel (2 per channel) share
//! its bus: they add capacity, not bandwidth.
//!
//! Links: links x lanes x Gbit/s / 8 per direction, the raw signalling rate
//! (before encoding and protocol overhead).

use std::collections::BTreeMap;

use memfabric_model::{BandwidthReport, ChannelPeak, LinkPeak, MemoryPeak, Mix, Outcome, SocketPeak};
use memfabric_topo::{Dimm, MemoryDevices, Topology};

mod describe;
mod paths;
pub use describe::{Description, DramSpec, LinkSpec, Names, Platform, TheoryError, FILE_NAMES, FLAG_NAMES};
pub use paths::{annotate_bandwidth, busier_direction_share, nodes_peak, path_peak, share};

/// A number as people write it: no trailing zeros, at most 3 decimals.
pub fn num(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// GB/s of `channels` x `mt_s` x `bus_bits` / 8, computed in integers so the
/// figure is exact (12 x 4800 x 8 B = 460.8 GB/s, not 460.79999).
pub fn dram_gb_s(channels: u32, mt_s: u32, bus_bits: u32) -> f64 {
    let bytes_per_us = u128::from(channels) * u128::from(mt_s) * u128::from(bus_bits) / 8;
    bytes_per_us as f64 / 1000.0
}

fn channel_formula(channels: u32, mt_s: u32, bus_bits: u32) -> String {
    if channels == 1 && bus_bits != 64 {
        format!(
            "{bus_bits}-bit bus ({} B) x {mt_s} MT/s",
            num(f64::from(bus_bits) / 8.0)
        )
    } else {
        let s = if channels == 1 { "" } else { "s" };
        format!(
            "{channels} channel{s} x {mt_s} MT/s x {} B",
            num(f64::from(bus_bits) / 8.0)
        )
    }
}

/// The peak of identical sockets.
pub fn dram_peak(d: &DramSpec) -> MemoryPeak {
    let per = dram_gb_s(d.channels, d.mt_s, d.bus_bits);
    let formula = format!(
        "{} = {} GB/s",
        channel_formula(d.channels, d.mt_s, d.bus_bits),
        num(per)
    );
    let sockets = (0..d.sockets)
        .map(|socket| SocketPeak {
            socket,
            populated_channels: d.channels,
            listed_channels: d.channels,
            mt_s: Some(d.mt_s),
            bus_bits: Some(d.bus_bits),
            peak_gb_s: per,
            formula: formula.clone(),
            channels: Vec::new(),
        })
        .collect();
    let system = per * f64::from(d.sockets);
    let s = if d.sockets == 1 { "" } else { "s" };
    MemoryPeak {
        sockets,
        system_gb_s: system,
        formula: format!(
            "{} socket{s} x {} GB/s = {} GB/s",
            d.sockets,
            num(per),
            num(system)
        ),
    }
}

pub fn link_peak(l: &LinkSpec) -> LinkPeak {
    let per_direction = f64::from(l.links) * f64::from(l.lanes) * l.gbps / 8.0;
    LinkPeak {
        links: l.links,
        lanes: l.lanes,
        gbps: l.gbps,
        per_direction_gb_s: per_direction,
        both_directions_gb_s: 2.0 * per_direction,
        formula: format!(
            "{} links x {} lanes x {} Gbit/s / 8 = {} GB/s per direction, {} GB/s both directions",
            l.links,
            l.lanes,
            num(l.gbps),
            num(per_direction),
            num(2.0 * per_direction)
        ),
    }
}

/// Channel names in board order: letters, then numbers by value.
fn channel_key(name: &str) -> (usize, String) {
    (name.len(), name.to_string())
}

/// This machine's peak from its DIMMs: per socket, the sum over populated
/// channels of the speed they run at x their data width. Skipped, with the
/// reason, where SMBIOS lists nothing or leaves a DIMM's channel, speed or
/// width unknown: a guessed peak would be worse than none.
pub fn smbios_peak(devices: &MemoryDevices) -> Outcome<MemoryPeak> {
    match try_smbios_peak(devices) {
        Ok(peak) => Outcome::Ok(peak),
        Err(reason) => Outcome::Skipped { reason },
    }
}

fn try_smbios_peak(devices: &MemoryDevices) -> Result<MemoryPeak, String> {
    if devices.dimms.is_empty() {
        let why = devices.unavailable.clone();
        return Err(why.unwrap_or_else(|| "SMBIOS lists no memory devices".into()));
    }
    let installed: Vec<&Dimm> = devices.dimms.iter().filter(|d| d.installed).collect();
    if installed.is_empty() {
        return Err(format!(
            "SMBIOS lists {} memory slots, none with a module installed",
            devices.dimms.len()
        ));
    }
    let ungrouped: Vec<String> = installed
        .iter()
        .filter(|d| d.socket.is_none() || d.channel.is_none())
        .map(|d| describe_locator(d))
        .collect();
    if !ungrouped.is_empty() {
        return Err(format!(
            "the locators of {} of {} installed DIMMs ({}) name no socket and channel, so which DIMMs share a channel is unknown",
            ungrouped.len(),
            installed.len(),
            shorten(&ungrouped, 3)
        ));
    }
    // Every slot with a known place counts toward the channels a socket lists.
    let mut sockets: BTreeMap<u32, BTreeMap<(usize, String), Vec<&Dimm>>> = BTreeMap::new();
    for d in devices.dimms.iter() {
        if let (Some(s), Some(ch)) = (d.socket, d.channel.as_deref()) {
            sockets
                .entry(s)
                .or_default()
                .entry(channel_key(ch))
                .or_default()
                .push(d);
        }
    }
    let sockets = sockets
        .into_iter()
        .map(|(socket, channels)| socket_peak(socket, &channels))
        .collect::<Result<Vec<_>, _>>()?;
    let system: f64 = sockets.iter().map(|s| s.peak_gb_s).sum();
    let formula = system_formula(&sockets, system);
    Ok(MemoryPeak {
        sockets,
        system_gb_s: system,
        formula,
    })
}

fn describe_locator(d: &Dimm) -> String {
    let loc = d.locator.as_deref().unwrap_or("no locator");
    match d.bank_locator.as_deref() {
        Some(bank) => format!("'{loc}' in bank '{bank}'"),
        None => format!("'{loc}'"),
    }
}

fn shorten(items: &[String], keep: usize) -> String {
    let mut out = items.iter().take(keep).cloned().collect::<Vec<_>>().join(", ");
    if items.len() > keep {
        out += &format!(" and {} more", items.len() - keep);
    }
    out
}

fn name(d: &Dimm) -> String {
    d.locator.clone().unwrap_or_else(|| d.entry.clone())
}

/// One channel's figures from its installed DIMMs.
fn channel_peak(channel: &str, dimms: &[&Dimm]) -> Result<Option<ChannelPeak>, String> {
    let installed: Vec<&&Dimm> = dimms.iter().filter(|d| d.installed).collect();
    if installed.is_empty() {
        return Ok(None);
    }
    let configured: Option<Vec<u32>> = installed.iter().map(|d| d.configured_speed_mt_s).collect();
    let rated: Option<Vec<u32>> = installed.iter().map(|d| d.speed_mt_s).collect();
    let (mt_s, note) = match (configured, rated) {
        (Some(c), _) => (c.into_iter().min(), None),
        (None, Some(r)) => (
            r.into_iter().min(),
            Some("configured speed not given: rated speed used, an upper bound".to_string()),
        ),
        (None, None) => {
            let d = installed
                .iter()
                .find(|d| d.speed_mt_s.is_none())
                .unwrap_or(&installed[0]);
            return Err(format!(
                "DIMM {} gives neither its configured nor its rated speed",
                name(d)
            ));
        }
    };
    let widths: Option<Vec<u16>> = installed.iter().map(|d| d.data_width_bits).collect();
    let Some(widths) = widths else {
        let d = installed
            .iter()
            .find(|d| d.data_width_bits.is_none())
            .unwrap_or(&installed[0]);
        return Err(format!("DIMM {} does not give its data width", name(d)));
    };
    // DIMMs on one channel share its bus, so the channel is as wide as one of them.
    let bus_bits = u32::from(widths.into_iter().max().unwrap_or(0));
    let mt_s = mt_s.unwrap_or(0);
    Ok(Some(ChannelPeak {
        channel: channel.to_string(),
        dimms: installed.iter().map(|d| name(d)).collect(),
        mt_s,
        bus_bits,
        peak_gb_s: dram_gb_s(1, mt_s, bus_bits),
        note,
    }))
}

fn socket_peak(socket: u32, channels: &BTreeMap<(usize, String), Vec<&Dimm>>) -> Result<SocketPeak, String> {
    let mut peaks = Vec::new();
    for ((_, ch), dimms) in channels {
        if let Some(p) = channel_peak(ch, dimms)? {
            peaks.push(p);
        }
    }
    let peak: f64 = peaks.iter().map(|c| c.peak_gb_s).sum();
    let uniform = |f: fn(&ChannelPeak) -> u32| {
        let first = peaks.first().map(f)?;
        peaks.iter().all(|c| f(c) == first).then_some(first)
    };
    // Channels grouped by (speed, width) make a short formula even when mixed.
    let mut groups: BTreeMap<(u32, u32), u32> = BTreeMap::new();
    for c in &peaks {
        *groups.entry((c.mt_s, c.bus_bits)).or_default() += 1;
    }
    let terms: Vec<String> = groups
        .iter()
        .rev()
        .map(|(&(mt_s, bits), &n)| channel_formula(n, mt_s, bits))
        .collect();
    let formula = if terms.is_empty() {
        "no channel populated = 0 GB/s".to_string()
    } else {
        format!("{} = {} GB/s", terms.join(" + "), num(peak))
    };
    Ok(SocketPeak {
        socket,
        populated_channels: peaks.len() as u32,
        listed_channels: channels.len() as u32,
        mt_s: uniform(|c| c.mt_s),
        bus_bits: uniform(|c| c.bus_bits),
        peak_gb_s: peak,
        formula,
        channels: peaks,
    })
}

fn system_formula(sockets: &[SocketPeak], system: f64) -> String {
    let first = sockets.first().map(|s| s.peak_gb_s);
    if sockets.len() > 1 && sockets.iter().all(|s| Some(s.peak_gb_s) == first) {
        return format!(
            "{} sockets x {} GB/s = {} GB/s",
            sockets.len(),
            num(first.unwrap_or(0.0)),
            num(system)
        );
    }
    let terms: Vec<String> = sockets.iter().map(|s| num(s.peak_gb_s)).collect();
    format!("{} = {} GB/s", terms.join(" + "), num(system))
}

/// A memory node's peak: its socket's channels, or an even share of them
/// when the socket is split into several nodes (SNC, NPS).
#[derive(Debug, Clone, PartialEq)]
pub struct NodePeak {
    pub node: u32,
    pub socket: u32,
    pub peak_gb_s: f64,
    pub basis: String,
}

/// The socket (index into SMBIOS sockets, in package order) of a node with CPUs.
fn node_socket(topo: &Topology, node: u32) -> Result<u32, String> {
    let n = topo
        .node(node)
        .ok_or_else(|| format!("node {node} is not online"))?;
    if n.cpu_less {
        return Err(format!(
            "node {node} has no CPUs: SMBIOS does not say which DIMMs back it"
        ));
    }
    let mut packages: Vec<u32> = n
        .cpus
        .iter()
        .filter_map(|&c| topo.cpu(c))
        .map(|c| c.package)
        .collect();
    packages.sort_unstable();
    packages.dedup();
    match packages.as_slice() {
        [p] => {
            let index = topo.packages.iter().position(|pk| pk.id == *p);
            index
                .map(|i| i as u32)
                .ok_or_else(|| format!("package {p} of node {node} is unknown"))
        }
        _ => Err(format!("node {node} spans sockets {packages:?}")),
    }
}

/// The peak of one node's local memory, or why it is not known.
pub fn node_peak(topo: &Topology, memory: &MemoryPeak, node: u32) -> Result<NodePeak, String> {
    let socket = node_socket(topo, node)?;
    if memory.sockets.len() > topo.packages.len() {
        return Err(format!(
            "SMBIOS names {} sockets but Linux shows {} packages",
            memory.sockets.len(),
            topo.packages.len()
        ));
    }
    let sp = memory
        .sockets
        .iter()
        .find(|s| s.socket == socket)
        .ok_or_else(|| format!("SMBIOS lists no DIMMs for socket {socket}"))?;
    // The socket's nodes that hold memory: SNC/NPS split its channels evenly.
    let siblings: Vec<&memfabric_topo::Node> = topo
        .nodes
        .iter()
        .filter(|n| n.mem_total_bytes > 0 && node_socket(topo, n.id) == Ok(socket))
        .collect();
    let k = siblings.len().max(1) as u32;
    if k == 1 {
        let basis = format!("socket {socket}: {}", sp.formula);
        return Ok(NodePeak {
            node,
            socket,
            peak_gb_s: sp.peak_gb_s,
            basis,
        });
    }
    let sizes: Vec<u64> = siblings.iter().map(|n| n.mem_total_bytes).collect();
    let (lo, hi) = (
        sizes.iter().min().copied().unwrap_or(0),
        sizes.iter().max().copied().unwrap_or(0),
    );
    if (hi - lo) as f64 > 0.05 * hi as f64 {
        return Err(format!(
            "socket {socket} is split into {k} nodes of unequal memory: which channels serve node {node} is unknown"
        ));
    }
    let peak = sp.peak_gb_s / f64::from(k);
    let basis = format!(
        "socket {socket}'s {} GB/s over its {k} nodes (SNC/NPS)",
        num(sp.peak_gb_s)
    );
    Ok(NodePeak {
        node,
        socket,
        peak_gb_s: peak,
        basis,
    })
}

/// The mix a firmware comparison of bandwidth uses: read where measured.
pub fn comparison_mix(r: &BandwidthReport) -> Option<Mix> {
    let mixes: Vec<Mix> = r.mixes.iter().map(|m| m.mix).collect();
    mixes
        .iter()
        .copied()
        .find(|&m| m == Mix::Read)
        .or(mixes.first().copied())
}

#[cfg(test)]
mod tests;
