//! This machine against its platform's rules: populated channels, DIMM sizes
//! and speeds, and the NUMA mode, each deviation with its fix.

use std::collections::BTreeMap;

use memfabric_topo::{Dimm, MemoryDevices, Topology};
use serde::Serialize;

use super::population::{classify, layout, trim, Class};
use super::{Platform, Rule};
use crate::audit::{socket_views, SocketView};

/// One installed DIMM as the firmware lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct DimmSeen {
    pub mib: Option<u64>,
    pub configured_mt_s: Option<u32>,
    pub rated_mt_s: Option<u32>,
}

/// A socket's channels by name, in board order (empty slots count their
/// channel with no DIMM).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SocketSeen {
    pub socket: u32,
    pub channels: Vec<(String, Vec<DimmSeen>)>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct CheckInput {
    pub sockets: u32,
    pub numa_nodes: u32,
    /// Sockets with their DIMMs; empty with `unreadable` set when the firmware
    /// tables could not be read.
    pub dimms: Vec<SocketSeen>,
    pub unreadable: Option<String>,
}

impl CheckInput {
    /// What the topology and the firmware's DIMM list say: sockets, nodes with
    /// CPUs, and each socket's channels as the audit groups them.
    pub fn of(topo: &Topology, devices: &MemoryDevices) -> CheckInput {
        let mut m = CheckInput {
            sockets: topo.packages.len().max(1) as u32,
            numa_nodes: topo.nodes.iter().filter(|n| !n.cpu_less).count().max(1) as u32,
            ..CheckInput::default()
        };
        if devices.dimms.iter().all(|d| !d.installed) {
            let why = devices.unavailable.clone();
            m.unreadable = Some(why.unwrap_or_else(|| "the firmware lists no installed DIMM".into()));
        } else if devices
            .dimms
            .iter()
            .any(|d| d.socket.is_none() || d.channel.is_none())
        {
            m.unreadable = Some("the DIMM locators name no socket and channel".into());
        } else {
            m.dimms = socket_views(devices).iter().map(seen).collect();
        }
        m
    }
}

fn seen(v: &SocketView) -> SocketSeen {
    let installed = |slots: &[&Dimm]| {
        slots
            .iter()
            .filter(|d| d.installed)
            .map(|d| DimmSeen {
                mib: d.size_bytes.map(|b| b >> 20),
                configured_mt_s: d.configured_speed_mt_s,
                rated_mt_s: d.speed_mt_s,
            })
            .collect()
    };
    SocketSeen {
        socket: v.socket,
        channels: v
            .channels()
            .map(|(name, slots)| (name.to_string(), installed(slots)))
            .collect(),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Deviation {
    pub what: String,
    pub seen: String,
    pub expected: String,
    pub fix: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SocketVerdict {
    pub socket: u32,
    pub dimms: u32,
    pub channels_used: u32,
    pub per_channel: Vec<u32>,
    pub class: Class,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckReport {
    pub platform: String,
    pub rule: &'static str,
    pub numa_mode: Option<String>,
    pub sockets: Vec<SocketVerdict>,
    pub deviations: Vec<Deviation>,
    /// What could not be checked, and why.
    pub not_checked: Vec<String>,
}

pub fn check(p: &Platform, m: &CheckInput) -> CheckReport {
    let mut r = CheckReport {
        platform: p.name.clone(),
        rule: p.memory.rule.name(),
        numa_mode: None,
        sockets: vec![],
        deviations: vec![],
        not_checked: vec![],
    };
    if m.sockets != p.sockets {
        r.deviations.push(Deviation {
            what: "sockets".into(),
            seen: m.sockets.to_string(),
            expected: p.sockets.to_string(),
            fix: format!(
                "this machine is not a {}: name its platform with --platform",
                p.name
            ),
        });
        return r;
    }
    numa_mode(p, m, &mut r);
    if let Some(why) = &m.unreadable {
        r.not_checked.push(format!("DIMM population and speeds: {why}"));
    } else if p.memory.rule != Rule::Soldered {
        for s in &m.dimms {
            socket(p, s, &mut r);
        }
        sockets_alike(&mut r);
        mode_allowed(p, &mut r);
    }
    r
}

fn numa_mode(p: &Platform, m: &CheckInput, r: &mut CheckReport) {
    let per_socket = if m.sockets > 1 && m.numa_nodes == 1 {
        0
    } else {
        m.numa_nodes / m.sockets.max(1)
    };
    if p.numa.nodes_per_socket.contains(&per_socket) {
        r.numa_mode = Some(p.numa.mode_name(per_socket));
        return;
    }
    let offered: Vec<String> = p
        .numa
        .nodes_per_socket
        .iter()
        .map(|&n| p.numa.mode_name(n))
        .collect();
    r.deviations.push(Deviation {
        what: "NUMA mode".into(),
        seen: format!("{} node(s) over {} socket(s)", m.numa_nodes, m.sockets),
        expected: offered.join(", "),
        fix:
            "set the BIOS NUMA mode to one the platform offers; nodes without CPUs (CXL, HBM) count here too"
                .into(),
    });
}

fn socket(p: &Platform, s: &SocketSeen, r: &mut CheckReport) {
    // Channel order decides the groups; SocketSeen keeps the board's.
    let mut counts: Vec<u32> = s.channels.iter().map(|(_, d)| d.len() as u32).collect();
    counts.resize(p.memory.channels_per_socket as usize, 0);
    let dimms: Vec<&DimmSeen> = s.channels.iter().flat_map(|(_, d)| d).collect();
    let n = dimms.len() as u32;
    let class = classify(p.memory.rule, &counts, p.memory.groups);
    let label = format!("socket {}", s.socket);
    let sizes = tally(dimms.iter().filter_map(|d| d.mib));
    if sizes.len() > 1 {
        let seen: Vec<String> = sizes
            .iter()
            .map(|(m, k)| format!("{k} x {} GiB", gib(*m)))
            .collect();
        r.deviations.push(Deviation {
            what: format!("{label}: DIMM sizes"),
            seen: seen.join(", "),
            expected: "one size".into(),
            fix: "use identical DIMMs in every slot of a socket: mixed sizes split the memory into interleave sets of different widths".into(),
        });
    }
    if class != Class::Balanced {
        r.deviations.push(Deviation {
            what: format!("{label}: population"),
            seen: format!(
                "{n} DIMMs on {} of {} channels ({})",
                counts.iter().filter(|&&c| c > 0).count(),
                counts.len(),
                class.name()
            ),
            expected: format!("balanced under {}", p.memory.rule.name()),
            fix: balanced_fix(p, n, sizes.last().map(|s| s.0)),
        });
    }
    speeds(p, s, &counts, &label, r);
    r.sockets.push(SocketVerdict {
        socket: s.socket,
        dimms: n,
        channels_used: counts.iter().filter(|&&c| c > 0).count() as u32,
        per_channel: counts,
        class,
    });
}

/// The nearest balanced count at or above `n` (or below, when none above).
fn balanced_fix(p: &Platform, n: u32, mib: Option<u64>) -> String {
    let slots = p.memory.channels_per_socket * p.max_dimms_per_channel();
    let balanced =
        |k: &u32| classify(p.memory.rule, &layout(p, *k, false), p.memory.groups) == Class::Balanced;
    let target = (n..=slots).find(balanced).or_else(|| (1..n).rev().find(balanced));
    let size = mib.map_or(String::new(), |m| format!(" of {} GiB", gib(m)));
    match target {
        Some(k) if k > n => format!(
            "add {} DIMM(s){size} for {k} per socket, placed in the population order",
            k - n
        ),
        Some(k) => format!(
            "take out {} DIMM(s) for {k} per socket, or add DIMMs up to a balanced count",
            n - k
        ),
        None => "no balanced count exists for this platform's rule".into(),
    }
}

fn speeds(p: &Platform, s: &SocketSeen, counts: &[u32], label: &str, r: &mut CheckReport) {
    let most = counts.iter().copied().max().unwrap_or(0);
    let Some(&platform) = p.memory.mts.get(most.saturating_sub(1) as usize) else {
        r.deviations.push(Deviation {
            what: format!("{label}: DIMMs per channel"),
            seen: most.to_string(),
            expected: format!("at most {}", p.max_dimms_per_channel()),
            fix: "the platform does not take this many DIMMs on one channel: check the locators".into(),
        });
        return;
    };
    let slow: Vec<&DimmSeen> = s
        .channels
        .iter()
        .flat_map(|(_, d)| d)
        .filter(|d| d.configured_mt_s.is_some_and(|c| c < platform))
        .collect();
    if let Some(d) = slow.first() {
        let rated = d
            .rated_mt_s
            .map_or("not listed".to_string(), |v| format!("{v} MT/s"));
        let cause = if d.rated_mt_s.is_some_and(|v| v < platform) {
            "the DIMMs are rated below it: replace them"
        } else {
            "check the BIOS memory speed setting"
        };
        r.deviations.push(Deviation {
            what: format!("{label}: speed"),
            seen: format!(
                "{} DIMM(s) at {} MT/s (rated {rated})",
                slow.len(),
                d.configured_mt_s.unwrap_or(0)
            ),
            expected: format!("{platform} MT/s at {most} DIMM(s) per channel"),
            fix: cause.into(),
        });
    }
}

fn sockets_alike(r: &mut CheckReport) {
    let Some(first) = r.sockets.first().cloned() else {
        return;
    };
    for s in r.sockets.iter().skip(1) {
        if s.per_channel != first.per_channel {
            r.deviations.push(Deviation {
                what: format!("socket {}: against socket {}", s.socket, first.socket),
                seen: format!("{} DIMMs on {} channels", s.dimms, s.channels_used),
                expected: format!("{} DIMMs on {} channels, as socket {}", first.dimms, first.channels_used, first.socket),
                fix: "populate every socket alike: a socket with less memory bandwidth slows every job that spans both".into(),
            });
        }
    }
}

/// Dell's rule for the EPYC generations that use quadrants: a population that
/// is not (near-)balanced leaves NPS4 as the only interleave that works.
fn mode_allowed(p: &Platform, r: &mut CheckReport) {
    let four = p.numa.mode_name(4);
    let unbalanced = r.sockets.iter().any(|s| s.class == Class::Unbalanced);
    if p.memory.rule == Rule::ChannelSymmetry
        && unbalanced
        && r.numa_mode.as_ref().is_some_and(|m| *m != four)
    {
        r.deviations.push(Deviation {
            what: "NUMA mode for this population".into(),
            seen: r.numa_mode.clone().unwrap_or_default(),
            expected: four.clone(),
            fix: format!(
                "balance the population, or set {four}: an unbalanced population cannot interleave wider"
            ),
        });
    }
}

fn gib(mib: u64) -> String {
    trim(mib as f64 / 1024.0)
}

/// (value, count) ascending by count.
fn tally(values: impl Iterator<Item = u64>) -> Vec<(u64, usize)> {
    let mut m: BTreeMap<u64, usize> = BTreeMap::new();
    for v in values {
        *m.entry(v).or_default() += 1;
    }
    let mut v: Vec<(u64, usize)> = m.into_iter().collect();
    v.sort_by_key(|&(_, k)| k);
    v
}
