//! The DIMM population, judged for bandwidth: empty and unbalanced
//! channels, unequal sockets, mixed modules, speeds below rating, and a
//! class per socket with the bandwidth it is expected to lose.

use std::collections::BTreeMap;

use memfabric_model::{format_size, Finding, MemoryPeak, Outcome, PopulationClass, Severity, SocketClass};
use memfabric_topo::{Dimm, MemoryDevices, Topology};

use crate::theory::num;

use super::finding;

/// One socket's slots by channel (board order), empty slots included.
pub(crate) struct SocketView<'a> {
    pub socket: u32,
    channels: BTreeMap<(usize, String), Vec<&'a Dimm>>,
}

impl<'a> SocketView<'a> {
    /// Each channel's name and slots, in board order: A..H, or 0..11 numerically.
    pub(crate) fn channels(&self) -> impl Iterator<Item = (&str, &[&'a Dimm])> + '_ {
        self.channels
            .iter()
            .map(|((_, name), slots)| (name.as_str(), slots.as_slice()))
    }

    fn channel_names(&self, populated: bool) -> Vec<&str> {
        self.channels
            .iter()
            .filter(|(_, slots)| slots.iter().any(|d| d.installed) == populated)
            .map(|((_, name), _)| name.as_str())
            .collect()
    }

    fn installed(&self) -> impl Iterator<Item = &'a Dimm> + '_ {
        self.channels.values().flatten().copied().filter(|d| d.installed)
    }

    /// Memory per populated channel; `None` where a size is unknown.
    fn capacities(&self) -> Vec<(&str, Option<u64>)> {
        self.channels
            .iter()
            .filter(|(_, slots)| slots.iter().any(|d| d.installed))
            .map(|((_, name), slots)| {
                let sizes: Option<Vec<u64>> = slots
                    .iter()
                    .filter(|d| d.installed)
                    .map(|d| d.size_bytes)
                    .collect();
                (name.as_str(), sizes.map(|s| s.iter().sum()))
            })
            .collect()
    }
}

/// Sockets as the grouped DIMMs show them.
pub(crate) fn socket_views(devices: &MemoryDevices) -> Vec<SocketView<'_>> {
    let mut by_socket: BTreeMap<u32, SocketView> = BTreeMap::new();
    for d in &devices.dimms {
        if let (Some(s), Some(ch)) = (d.socket, d.channel.as_ref()) {
            let view = by_socket.entry(s).or_insert_with(|| SocketView {
                socket: s,
                channels: BTreeMap::new(),
            });
            view.channels.entry((ch.len(), ch.clone())).or_default().push(d);
        }
    }
    by_socket.into_values().collect()
}

fn locator(d: &Dimm) -> String {
    let loc = d.locator.as_deref().unwrap_or(&d.entry);
    match d.bank_locator.as_deref() {
        Some(bank) => format!("{loc} ({bank})"),
        None => loc.to_string(),
    }
}

/// Consecutive names joined: `C, D, E` stays; a long run of letters becomes `C-H`.
fn names(list: &[&str]) -> String {
    if list.len() > 3 && list.iter().all(|n| n.len() == 1) {
        return format!("{}-{}", list[0], list[list.len() - 1]);
    }
    list.join(", ")
}

pub(super) fn findings(devices: &MemoryDevices) -> Vec<Finding> {
    if devices.dimms.is_empty() {
        let mut evidence: Vec<String> = devices.unavailable.iter().cloned().collect();
        evidence.extend(devices.problems.iter().cloned());
        let how = if devices.permission_denied {
            "run as root (the entries are root-only) or give --dmidecode FILE"
        } else {
            "give --dmidecode FILE with the output of `dmidecode -t 17` from the machine, or read the population from its management controller"
        };
        return vec![finding(
            Severity::Info,
            "SMBIOS gives no memory devices: DIMM population not checked",
            &format!("Without SMBIOS type 17 entries the channels, module sizes and speeds cannot be seen, and memfabric does not guess them; {how}."),
            evidence,
        )];
    }
    let mut out = Vec::new();
    let installed: Vec<&Dimm> = devices.dimms.iter().filter(|d| d.installed).collect();
    let ungrouped: Vec<&&Dimm> = installed.iter().filter(|d| d.channel.is_none()).collect();
    if !ungrouped.is_empty() {
        out.push(finding(
            Severity::Info,
            &format!("{} of {} DIMMs cannot be placed on a channel", ungrouped.len(), installed.len()),
            "Their locators name no socket and channel in a form memfabric knows, so empty or unbalanced channels cannot be found for them and no theoretical peak is given. The module checks still apply.",
            ungrouped.iter().map(|d| format!("{}: {}", d.entry, locator(d))).collect(),
        ));
    }
    let views = socket_views(devices);
    for v in &views {
        out.extend(socket_findings(v));
    }
    out.extend(socket_balance(&views));
    out.extend(module_findings(&installed));
    out
}

fn socket_findings(v: &SocketView) -> Vec<Finding> {
    let (full, empty) = (v.channel_names(true), v.channel_names(false));
    let listed = full.len() + empty.len();
    let mut out = Vec::new();
    if full.is_empty() {
        out.push(finding(
            Severity::Critical,
            &format!("Socket {} has no memory installed", v.socket),
            "Every memory access from its cores crosses the socket link to another socket's memory: higher latency, and the link's bandwidth instead of local channels.",
            vec![format!("{listed} channels listed, all empty")],
        ));
        return out;
    }
    if !empty.is_empty() {
        let severity = if full.len() * 2 < listed {
            Severity::Critical
        } else {
            Severity::Warning
        };
        let share = 100.0 * full.len() as f64 / listed as f64;
        out.push(finding(
            severity,
            &format!("Socket {}: {} of {listed} memory channels empty ({})", v.socket, empty.len(), names(&empty)),
            &format!(
                "A socket's memory bandwidth is the sum of its channels: with {} of {listed} populated it peaks at {}% of a full set, and all its cores share that.",
                full.len(),
                num(share.round())
            ),
            empty
                .iter()
                .map(|ch| {
                    let slots = &v.channels[&(ch.len(), ch.to_string())];
                    let slots: Vec<String> = slots.iter().map(|d| locator(d)).collect();
                    format!("channel {ch}: {} empty", slots.join(", "))
                })
                .collect(),
        ));
    }
    if let Some(f) = unbalanced(v) {
        out.push(f);
    }
    out
}

/// Channels of unequal capacity, as levels: capacity -> channel names.
fn capacity_levels(v: &SocketView) -> Option<BTreeMap<u64, Vec<String>>> {
    let mut levels: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for (ch, cap) in v.capacities() {
        levels.entry(cap?).or_default().push(ch.to_string());
    }
    Some(levels)
}

pub(super) fn is_unbalanced(v: &SocketView) -> bool {
    capacity_levels(v).is_some_and(|l| l.len() > 1)
}

fn unbalanced(v: &SocketView) -> Option<Finding> {
    let levels = capacity_levels(v)?;
    if levels.len() < 2 {
        return None;
    }
    let populated: usize = levels.values().map(Vec::len).sum();
    let (&smallest, _) = levels.iter().next()?;
    let larger: usize = levels.range(smallest + 1..).map(|(_, c)| c.len()).sum();
    let extra: u64 = levels
        .iter()
        .map(|(cap, chs)| (cap - smallest) * chs.len() as u64)
        .sum();
    let shown: Vec<String> = levels
        .iter()
        .rev()
        .map(|(cap, chs)| {
            let refs: Vec<&str> = chs.iter().map(String::as_str).collect();
            format!("{}: {}", names(&refs), format_size(*cap))
        })
        .collect();
    Some(finding(
        Severity::Warning,
        &format!("Socket {}: channels hold unequal memory ({})", v.socket, shown.join("; ")),
        &format!(
            "Memory interleaves evenly only across channels of equal size: the first {} of each channel is spread over all {populated}, the remaining {} over only {larger} of them, at about {larger}/{populated} of the bandwidth. Which part a program gets is up to the allocator.",
            format_size(smallest),
            format_size(extra)
        ),
        shown,
    ))
}

fn socket_balance(views: &[SocketView]) -> Option<Finding> {
    if views.len() < 2 {
        return None;
    }
    let summary: Vec<(usize, Option<u64>)> = views
        .iter()
        .map(|v| {
            let sizes: Option<Vec<u64>> = v.installed().map(|d| d.size_bytes).collect();
            (v.channel_names(true).len(), sizes.map(|s| s.iter().sum()))
        })
        .collect();
    if summary.iter().all(|s| *s == summary[0]) {
        return None;
    }
    Some(finding(
        Severity::Warning,
        "Sockets are populated differently",
        "Threads on the weaker socket get less local bandwidth, and its memory fills sooner, so allocations spill to the other socket's memory.",
        views
            .iter()
            .zip(&summary)
            .map(|(v, (channels, bytes))| {
                let size = bytes.map_or("unknown size".to_string(), format_size);
                format!("socket {}: {channels} channels populated, {size}", v.socket)
            })
            .collect(),
    ))
}

/// `2 x 16G, 14 x 32G` from values and their counts.
fn tally<T: Ord + Clone>(values: impl Iterator<Item = T>, show: impl Fn(&T) -> String) -> (usize, String) {
    let mut counts: BTreeMap<T, usize> = BTreeMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    let text: Vec<String> = counts.iter().map(|(v, n)| format!("{n} x {}", show(v))).collect();
    (counts.len(), text.join(", "))
}

fn module_findings(installed: &[&Dimm]) -> Vec<Finding> {
    let mut out = Vec::new();
    let (kinds, text) = tally(installed.iter().filter_map(|d| d.size_bytes), |b| format_size(*b));
    if kinds > 1 {
        out.push(finding(
            Severity::Warning,
            &format!("Mixed DIMM sizes: {text}"),
            "Modules of different sizes make channels or sockets unequal, so memory splits into segments interleaved over different numbers of channels, with different bandwidth.",
            Vec::new(),
        ));
    }
    let (kinds, text) = tally(installed.iter().filter_map(|d| d.speed_mt_s), |s| {
        format!("{s} MT/s")
    });
    if kinds > 1 {
        out.push(finding(
            Severity::Info,
            &format!("Mixed rated speeds: {text}"),
            "A channel, and on most platforms the whole socket, runs at its slowest module's speed; the faster modules' extra speed goes unused.",
            Vec::new(),
        ));
    }
    let (kinds, text) = tally(installed.iter().filter_map(|d| d.ranks), |r| format!("{r}R"));
    if kinds > 1 {
        out.push(finding(
            Severity::Info,
            &format!("Mixed rank counts: {text}"),
            "The number of ranks changes how a channel hides refresh and turnarounds: channels with different ranks deliver different bandwidth, and some platforms lower the speed for mixed ranks.",
            Vec::new(),
        ));
    }
    let (kinds, text) = tally(installed.iter().filter_map(|d| d.part_number.clone()), |p| {
        p.clone()
    });
    if kinds > 1 {
        out.push(finding(
            Severity::Info,
            &format!("Mixed DIMM part numbers: {text}"),
            "Modules of different makes differ in timings and organisation; platforms are validated with identical sets.",
            Vec::new(),
        ));
    }
    out.extend(below_rated(installed));
    out
}

fn below_rated(installed: &[&Dimm]) -> Option<Finding> {
    let slow: Vec<(u32, u32)> = installed
        .iter()
        .filter_map(|d| Some((d.speed_mt_s?, d.configured_speed_mt_s?)))
        .filter(|(rated, run)| run < rated)
        .collect();
    if slow.is_empty() {
        return None;
    }
    let (_, text) = tally(slow.iter().copied(), |(r, c)| {
        format!("rated {r} MT/s running at {c} MT/s")
    });
    let worst = slow
        .iter()
        .map(|(r, c)| f64::from(*c) / f64::from(*r))
        .fold(1.0, f64::min);
    Some(finding(
        Severity::Warning,
        &format!("DIMMs run below their rated speed: {text}"),
        &format!(
            "Peak bandwidth is proportional to the transfer rate: the slowest of these gives up {}%. Common causes: two DIMMs per channel, a CPU or platform limit, mixed modules, or a BIOS memory-speed setting.",
            num((100.0 * (1.0 - worst)).round())
        ),
        Vec::new(),
    ))
}

/// Each socket's class and expected bandwidth loss.
pub(super) fn classes(
    topo: &Topology,
    devices: &MemoryDevices,
    peak: &Outcome<MemoryPeak>,
) -> Vec<SocketClass> {
    let views = socket_views(devices);
    let unknown = |socket: u32, why: String| SocketClass {
        socket,
        class: PopulationClass::Unknown,
        expected_loss: None,
        estimate: why,
    };
    let Outcome::Ok(peak) = peak else {
        let why = match peak {
            Outcome::Skipped { reason } | Outcome::Failed { reason } => reason.clone(),
            Outcome::Ok(_) => String::new(),
        };
        let count = views.len().max(topo.packages.len()) as u32;
        return (0..count).map(|s| unknown(s, why.clone())).collect();
    };
    views
        .iter()
        .map(|v| match peak.sockets.iter().find(|s| s.socket == v.socket) {
            Some(sp) => class_of(v, sp.peak_gb_s),
            None => unknown(v.socket, "no peak for this socket".into()),
        })
        .collect()
}

/// Modules of more than one size or rank count.
fn mixed_modules(installed: &[&Dimm]) -> bool {
    let mut sizes: Vec<Option<u64>> = installed.iter().map(|d| d.size_bytes).collect();
    let mut ranks: Vec<Option<u8>> = installed.iter().map(|d| d.ranks).collect();
    sizes.sort_unstable();
    sizes.dedup();
    ranks.sort_unstable();
    ranks.dedup();
    sizes.len() > 1 || ranks.len() > 1
}

fn class_of(v: &SocketView, actual_gb_s: f64) -> SocketClass {
    let (full, listed) = (v.channel_names(true).len(), v.channels.len());
    let installed: Vec<&Dimm> = v.installed().collect();
    let rated = installed
        .iter()
        .filter_map(|d| d.speed_mt_s.or(d.configured_speed_mt_s))
        .max()
        .unwrap_or(0);
    let running = installed
        .iter()
        .filter_map(|d| d.configured_speed_mt_s.or(d.speed_mt_s))
        .min()
        .unwrap_or(0);
    let width = installed
        .iter()
        .filter_map(|d| d.data_width_bits)
        .max()
        .map_or(0, u32::from);
    let ideal = crate::theory::dram_gb_s(listed as u32, rated, width);
    let unbalanced = is_unbalanced(v);
    // Unequal channels: the memory beyond the smallest is reached through fewer.
    let channels = match capacity_levels(v).filter(|l| l.len() > 1) {
        Some(levels) => super::class::channel_share(&levels, listed),
        None => full as f64 / listed.max(1) as f64,
    };
    let speed = if rated > 0 {
        f64::from(running) / f64::from(rated)
    } else {
        0.0
    };
    let expected = if unbalanced {
        ideal * channels * speed
    } else {
        actual_gb_s
    };
    let loss = if ideal > 0.0 {
        (1.0 - expected / ideal).max(0.0)
    } else {
        1.0
    };
    let mixed = mixed_modules(&installed);
    let class = super::class::class_of_loss(loss);
    let mut estimate = format!(
        "{full} of {listed} channels populated (x{}) at {running} of the rated {rated} MT/s (x{}): {} of {} GB/s, {}% less",
        num(full as f64 / listed.max(1) as f64),
        num(speed),
        num(expected),
        num(ideal),
        num((100.0 * loss).round())
    );
    if unbalanced {
        estimate += "; channels hold unequal memory, so part of it is reached through fewer channels (x";
        estimate += &num(channels);
        estimate += " of the listed channels' bandwidth for a program that streams over all of it)";
    }
    if mixed && !unbalanced {
        estimate += "; mixed sizes or ranks";
    }
    SocketClass {
        socket: v.socket,
        class,
        expected_loss: Some(loss),
        estimate,
    }
}
