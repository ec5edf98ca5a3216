//! What a NUMA mode and a socket-link choice give: per-node local and remote
//! Triad, and Triad with memory interleaved over every socket, each the lesser
//! of what the memory channels and the links carry, with stated efficiencies.
//!
//! With S fully connected sockets, each pair joined by links of L GB/s per
//! direction, and every core running Triad on memory interleaved evenly over
//! all sockets at a total T: each socket's memory serves T/S, and each
//! direction of each pair carries T/S^2 (a socket's reads from its peer flow
//! one way, its peer's writes to it the same way, and the two sum to T/S^2
//! whatever the read share). So `T = min(S x e_mem x P, S^2 x e_link x L)`.
//! One node reading from another socket is limited by the read direction
//! alone: `min(e_mem x P/nps, e_link x L / read share)`.

use serde::{Deserialize, Serialize};

use super::population::TRIAD_READ_SHARE;
use super::{Platform, ProvisionError};

/// The stated efficiencies: the figure a model multiplies raw rates by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Efficiencies {
    /// Triad over the theoretical DRAM peak.
    #[serde(default = "triad_default")]
    pub triad: f64,
    /// Data moved over the raw link rate, per direction.
    #[serde(default = "link_default")]
    pub link: f64,
}

/// Triad-like mixes reach 75-80 % of the DRAM peak (see ANCHORS and docs/PLAN.md).
fn triad_default() -> f64 {
    0.78
}

/// Socket links carry about 80 % of their raw rate as data (headers, CRC,
/// coherence messages); calibrate replaces it.
fn link_default() -> f64 {
    0.80
}

impl Default for Efficiencies {
    fn default() -> Self {
        Efficiencies {
            triad: triad_default(),
            link: link_default(),
        }
    }
}

impl Efficiencies {
    pub fn validate(&self) -> Result<(), String> {
        let ok = |v: f64| v > 0.0 && v <= 1.0;
        if ok(self.triad) && ok(self.link) {
            Ok(())
        } else {
            Err("efficiency: triad and link are fractions above 0 and at most 1".into())
        }
    }
}

/// The link settings asked for; None takes the platform's best.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkChoice {
    pub count: Option<u32>,
    pub lanes: Option<u32>,
    pub gbps: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bottleneck {
    MemoryChannels,
    SocketLinks,
}

impl Bottleneck {
    pub fn name(self) -> &'static str {
        match self {
            Bottleneck::MemoryChannels => "memory channels",
            Bottleneck::SocketLinks => "socket links",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkUse {
    pub kind: String,
    pub count: u32,
    pub lanes: Option<u32>,
    pub gbps: Option<f64>,
    /// Between one pair of sockets, one direction, raw.
    pub gb_s_per_direction: f64,
    pub formula: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NumaPlan {
    pub platform: String,
    pub mode: String,
    pub nodes_per_socket: u32,
    pub sockets: u32,
    pub links: Option<LinkUse>,
    pub socket_peak_gb_s: f64,
    pub node_peak_gb_s: f64,
    /// One node's CPUs on its own memory (NPS0: the whole machine's interleaved memory).
    pub local_triad_gb_s: f64,
    /// One node's CPUs on a node of another socket; None for one socket or NPS0.
    pub remote_triad_gb_s: Option<f64>,
    pub remote_bottleneck: Option<Bottleneck>,
    /// Every CPU, memory interleaved over every socket.
    pub interleaved_triad_gb_s: f64,
    pub interleaved_bottleneck: Bottleneck,
    pub efficiencies: Efficiencies,
    /// "stated in the platform file" or the run they were taken from.
    pub efficiency_source: String,
    pub formulas: Vec<String>,
    pub notes: Vec<String>,
}

pub fn numa_plan(
    p: &Platform,
    nps: u32,
    links: LinkChoice,
    cal: Option<&Calibration>,
) -> Result<NumaPlan, ProvisionError> {
    if !p.numa.nodes_per_socket.contains(&nps) {
        let offered: Vec<String> = p
            .numa
            .nodes_per_socket
            .iter()
            .map(|&n| p.numa.mode_name(n))
            .collect();
        return Err(ProvisionError::Ask(format!(
            "{} offers {}; not {}",
            p.name,
            offered.join(", "),
            p.numa.mode_name(nps)
        )));
    }
    let link = link_use(p, links)?;
    let e = cal.map_or(p.efficiency, |c| c.efficiencies);
    let s = f64::from(p.sockets);
    let peak = p.socket_peak_gb_s();
    let mem_all = s * e.triad * peak;
    let (inter, inter_by) = match &link {
        Some(l) if s * s * e.link * l.gb_s_per_direction < mem_all => {
            (s * s * e.link * l.gb_s_per_direction, Bottleneck::SocketLinks)
        }
        _ => (mem_all, Bottleneck::MemoryChannels),
    };
    let node_peak = if nps == 0 { peak * s } else { peak / f64::from(nps) };
    let local = if nps == 0 { inter } else { e.triad * node_peak };
    let remote = match (&link, nps) {
        (Some(l), 1..) => {
            let by_link = e.link * l.gb_s_per_direction / TRIAD_READ_SHARE;
            Some(if by_link < local {
                (by_link, Bottleneck::SocketLinks)
            } else {
                (local, Bottleneck::MemoryChannels)
            })
        }
        _ => None,
    };
    let mut formulas = vec![format!(
        "memory: {} channels x {} MT/s x {} bits / 8 = {:.1} GB/s per socket; Triad = {:.2} x peak",
        p.memory.channels_per_socket, p.memory.mts[0], p.memory.bus_bits, peak, e.triad
    )];
    if let Some(l) = &link {
        formulas.push(format!("links: {}; data = {:.2} x raw", l.formula, e.link));
        formulas.push(format!(
            "interleaved Triad = min({s} x {:.2} x {peak:.1}, {s}^2 x {:.2} x {:.1}) = {inter:.1} GB/s",
            e.triad, e.link, l.gb_s_per_direction
        ));
        if nps > 0 {
            formulas.push(format!(
                "remote Triad = min(local, {:.2} x {:.1} / {TRIAD_READ_SHARE:.3} read share)",
                e.link, l.gb_s_per_direction
            ));
        }
    }
    Ok(NumaPlan {
        platform: p.name.clone(),
        mode: p.numa.mode_name(nps),
        nodes_per_socket: nps,
        sockets: p.sockets,
        links: link,
        socket_peak_gb_s: peak,
        node_peak_gb_s: node_peak,
        local_triad_gb_s: local,
        remote_triad_gb_s: remote.map(|r| r.0),
        remote_bottleneck: remote.map(|r| r.1),
        interleaved_triad_gb_s: inter,
        interleaved_bottleneck: inter_by,
        efficiencies: e,
        efficiency_source: cal.map_or("stated in the platform file".into(), |c| c.source.clone()),
        formulas,
        notes: cal.map(|c| c.notes.clone()).unwrap_or_default(),
    })
}

fn link_use(p: &Platform, ask: LinkChoice) -> Result<Option<LinkUse>, ProvisionError> {
    let Some(spec) = &p.links else {
        if ask.count.is_some() || ask.lanes.is_some() || ask.gbps.is_some() {
            return Err(ProvisionError::Ask(format!(
                "{} has one socket: there are no socket links",
                p.name
            )));
        }
        return Ok(None);
    };
    let count = ask
        .count
        .unwrap_or_else(|| spec.counts.iter().copied().max().unwrap_or(1));
    if !spec.counts.contains(&count) {
        return Err(ProvisionError::Ask(format!(
            "{} joins sockets with {} {} link(s); not {count}",
            p.name,
            join(&spec.counts),
            spec.kind
        )));
    }
    if let Some(per_link) = spec.gb_s_per_link {
        if ask.lanes.is_some() || ask.gbps.is_some() {
            return Err(ProvisionError::Ask(format!(
                "{}'s {} links have a fixed rate: --link-width and --link-gbps do not apply",
                p.name, spec.kind
            )));
        }
        let total = f64::from(count) * per_link;
        return Ok(Some(LinkUse {
            kind: spec.kind.clone(),
            count,
            lanes: None,
            gbps: None,
            gb_s_per_direction: total,
            formula: format!(
                "{count} {} x {per_link} GB/s per direction = {total:.1} GB/s",
                spec.kind
            ),
        }));
    }
    let lanes = ask.lanes.unwrap_or(spec.widths[0]);
    if !spec.widths.contains(&lanes) {
        return Err(ProvisionError::Ask(format!(
            "{} links run x{}; not x{lanes}",
            spec.kind,
            spec.widths
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(" or x")
        )));
    }
    let top = spec.gbps.unwrap_or(0.0);
    let gbps = ask.gbps.unwrap_or(top);
    if !(gbps > 0.0 && gbps <= top) {
        return Err(ProvisionError::Ask(format!(
            "{} lanes run above 0 and at most {top} Gbit/s; not {gbps}",
            spec.kind
        )));
    }
    let total = f64::from(count * lanes) * gbps / 8.0;
    Ok(Some(LinkUse {
        kind: spec.kind.clone(),
        count,
        lanes: Some(lanes),
        gbps: Some(gbps),
        gb_s_per_direction: total,
        formula: format!(
            "{count} {} x {lanes} lanes x {gbps} Gbit/s / 8 = {total:.1} GB/s per direction ({:.1} both)",
            spec.kind,
            2.0 * total
        ),
    }))
}

fn join(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join(" or ")
}

/// What a stored run measured, as the fleet headlines read it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFigures {
    pub run: String,
    pub triad_per_node_gb_s: Option<f64>,
    pub interleaved_triad_gb_s: Option<f64>,
    pub sockets: usize,
    pub numa_nodes: usize,
    pub channels_populated: Option<usize>,
    pub dimm_mt_s: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Calibration {
    pub efficiencies: Efficiencies,
    pub source: String,
    pub notes: Vec<String>,
}

/// The efficiencies a run of the platform achieved: Triad per node over the
/// node's peak (from the run's own channels and speed where it recorded them),
/// and, where the links limited its interleaved Triad, that over the links'
/// raw rate (the platform's best link setting, which the run is taken to have).
pub fn calibrate(p: &Platform, r: &RunFigures) -> Result<Calibration, ProvisionError> {
    let refuse = |m: String| {
        Err(ProvisionError::Ask(format!(
            "cannot calibrate from {}: {m}",
            r.run
        )))
    };
    if r.sockets != p.sockets as usize {
        return refuse(format!(
            "it ran on {} socket(s); {} has {}",
            r.sockets, p.name, p.sockets
        ));
    }
    let Some(per_node) = r.triad_per_node_gb_s else {
        return refuse("it has no Triad per node (a `run` or `bandwidth` document has)".into());
    };
    let socket_peak = match (r.channels_populated, r.dimm_mt_s) {
        (Some(ch), Some(mts)) if ch > 0 => ch as f64 / r.sockets as f64 * p.channel_gb_s(mts),
        _ => p.socket_peak_gb_s(),
    };
    let nodes_per_socket = (r.numa_nodes / r.sockets.max(1)).max(1) as f64;
    let triad = per_node / (socket_peak / nodes_per_socket);
    if !(triad > 0.0 && triad <= 1.0) {
        return refuse(format!(
            "its Triad per node, {per_node:.1} GB/s, is {:.0} % of the node's theoretical {:.1} GB/s",
            triad * 100.0,
            socket_peak / nodes_per_socket
        ));
    }
    let mut e = Efficiencies {
        triad,
        ..p.efficiency
    };
    let mut notes = vec![format!(
        "Triad efficiency {triad:.2}: {per_node:.1} GB/s per node of {:.1} GB/s theoretical",
        socket_peak / nodes_per_socket
    )];
    let s = r.sockets as f64;
    match (r.interleaved_triad_gb_s, link_use(p, LinkChoice::default())?) {
        (Some(inter), Some(l)) if inter < 0.9 * s * triad * socket_peak => {
            e.link = (inter / (s * s * l.gb_s_per_direction)).min(1.0);
            notes.push(format!(
                "link efficiency {:.2}: interleaved Triad {inter:.1} GB/s, below the memory's {:.1}, over {s}^2 x {:.1} GB/s ({}, taken to be the run's)",
                e.link,
                s * triad * socket_peak,
                l.gb_s_per_direction,
                l.formula
            ));
        }
        (Some(inter), Some(_)) => notes.push(format!(
            "the links did not limit the run's interleaved Triad ({inter:.1} GB/s, at the memory's limit): link efficiency stays at the stated {:.2}",
            e.link
        )),
        _ => notes.push(format!(
            "no interleaved Triad across sockets in the run: link efficiency stays at the stated {:.2}",
            e.link
        )),
    }
    Ok(Calibration {
        efficiencies: e,
        source: r.run.clone(),
        notes,
    })
}
