//! Which DIMMs, how many: every population of one DIMM size that reaches a
//! capacity, with the channels it uses, its class under the platform's named
//! rule, its expected bandwidth and what RAS leaves usable.
//!
//! The bandwidth model: DIMMs go round-robin over the channel groups, as the
//! vendors' population orders place them. Memory is spread over the DIMMs
//! evenly, so a channel carries a share of the traffic equal to its share of
//! the DIMMs, and the busiest channel sets the pace:
//! `effective = channel GB/s x DIMMs / most DIMMs on one channel`. With every
//! channel alike this is `channels x channel GB/s`, the theoretical peak.
//! The speed is the platform's for the most DIMMs on one channel.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{DimmOption, Platform, ProvisionError, RasSpec, Rule};

/// Triad moves two bytes read for each byte written.
pub const TRIAD_READ_SHARE: f64 = 2.0 / 3.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Ras {
    None,
    Sparing,
    Lockstep,
    Mirroring,
}

impl Ras {
    pub fn name(self) -> &'static str {
        match self {
            Ras::None => "none",
            Ras::Sparing => "sparing",
            Ras::Lockstep => "lockstep",
            Ras::Mirroring => "mirroring",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    Balanced,
    NearBalanced,
    Unbalanced,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Balanced => "balanced",
            Class::NearBalanced => "near-balanced",
            Class::Unbalanced => "unbalanced",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct PopulationAsk {
    pub capacity_gib: f64,
    pub ras: Ras,
    /// Only these DIMM sizes; None for every size the platform lists.
    pub dimm_sizes_gib: Option<Vec<u32>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    /// DIMMs per socket (every socket alike); for soldered memory, 0.
    pub dimms_per_socket: u32,
    /// GiB of one DIMM; for soldered memory, the socket's capacity.
    pub dimm_gib: u32,
    pub channels_used: u32,
    /// DIMMs on each channel of a socket, in channel order.
    pub per_channel: Vec<u32>,
    pub mt_s: u32,
    pub installed_gib: u64,
    pub usable_gib: f64,
    pub class: Class,
    /// Every socket: populated channels x channel GB/s.
    pub peak_gb_s: f64,
    /// Every socket, after the busiest-channel model.
    pub effective_gb_s: f64,
    /// Below the platform's best (every channel, one DIMM, top speed), percent.
    pub loss_pct: f64,
    /// effective x Triad efficiency x the RAS mode's factor; None where the
    /// RAS mode's cost is not published for the platform.
    pub expected_triad_gb_s: Option<f64>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PopulationPlan {
    pub platform: String,
    pub capacity_gib: f64,
    pub ras: Ras,
    pub rule: &'static str,
    pub rule_text: &'static str,
    /// Every socket, every channel one DIMM at the top speed.
    pub best_gb_s: f64,
    pub triad_efficiency: f64,
    /// The recommendation first.
    pub candidates: Vec<Candidate>,
}

pub fn plan_population(p: &Platform, ask: &PopulationAsk) -> Result<PopulationPlan, ProvisionError> {
    let spec = ras_spec(p, ask.ras)?;
    if ask.capacity_gib.is_nan() || ask.capacity_gib <= 0.0 {
        return Err(ProvisionError::Ask("the capacity must be above 0".into()));
    }
    let mut all = if p.memory.rule == Rule::Soldered {
        soldered(p, ask)?
    } else {
        socketed(p, ask, spec)?
    };
    for c in &mut all {
        c.expected_triad_gb_s =
            triad_factor(ask.ras, spec).map(|f| c.effective_gb_s * p.efficiency.triad * f);
        if c.expected_triad_gb_s.is_none() {
            c.notes.push(format!(
                "{}'s bandwidth cost is not published in this platform's sources: not modelled",
                ask.ras.name()
            ));
        }
    }
    let most = all.iter().map(|c| c.usable_gib).fold(0.0, f64::max);
    if all.iter().all(|c| c.usable_gib + 1e-9 < ask.capacity_gib) {
        return Err(ProvisionError::Ask(format!(
            "{} GiB is more than {} holds: at most {} GiB usable with RAS {}",
            trim(ask.capacity_gib),
            p.name,
            trim(most),
            ask.ras.name()
        )));
    }
    let mut reach: Vec<Candidate> = all
        .into_iter()
        .filter(|c| c.usable_gib + 1e-9 >= ask.capacity_gib)
        .collect();
    keep_near(&mut reach, ask.capacity_gib);
    reach.sort_by(|a, b| rank(a).partial_cmp(&rank(b)).unwrap_or(std::cmp::Ordering::Equal));
    Ok(PopulationPlan {
        platform: p.name.clone(),
        capacity_gib: ask.capacity_gib,
        ras: ask.ras,
        rule: p.memory.rule.name(),
        rule_text: p.memory.rule.explain(),
        best_gb_s: p.system_peak_gb_s(),
        triad_efficiency: p.efficiency.triad,
        candidates: reach,
    })
}

/// Most bandwidth first; then the better class, less capacity bought, fewer DIMMs.
fn rank(c: &Candidate) -> (f64, Class, u64, u32) {
    let bw = c.expected_triad_gb_s.unwrap_or(c.effective_gb_s);
    (-(bw * 10.0).round(), c.class, c.installed_gib, c.dimms_per_socket)
}

/// Per DIMM size, the populations up to twice the capacity asked (at least the
/// smallest that reaches it): more is another purchase, not an answer.
fn keep_near(reach: &mut Vec<Candidate>, capacity: f64) {
    let mut smallest: BTreeMap<u32, f64> = BTreeMap::new();
    for c in reach.iter() {
        let least = smallest.entry(c.dimm_gib).or_insert(f64::INFINITY);
        *least = least.min(c.usable_gib);
    }
    reach.retain(|c| c.usable_gib <= smallest[&c.dimm_gib].max(2.0 * capacity) + 1e-9);
}

fn ras_spec(p: &Platform, ras: Ras) -> Result<Option<&RasSpec>, ProvisionError> {
    if ras == Ras::None {
        return Ok(None);
    }
    p.ras.get(ras.name()).map(Some).ok_or_else(|| {
        let offered: Vec<&str> = std::iter::once("none")
            .chain(p.ras.keys().map(String::as_str))
            .collect();
        ProvisionError::Ask(format!(
            "{} has no RAS mode {} (it offers: {})",
            p.name,
            ras.name(),
            offered.join(", ")
        ))
    })
}

/// Triad under the RAS mode relative to independent channels.
fn triad_factor(ras: Ras, spec: Option<&RasSpec>) -> Option<f64> {
    match (ras, spec) {
        (Ras::Mirroring, Some(s)) => {
            let copies = f64::from(s.write_copies.unwrap_or(2));
            Some(1.0 / (TRIAD_READ_SHARE + copies * (1.0 - TRIAD_READ_SHARE)))
        }
        (Ras::Lockstep, Some(s)) => s.triad_factor,
        _ => Some(1.0),
    }
}

fn soldered(p: &Platform, ask: &PopulationAsk) -> Result<Vec<Candidate>, ProvisionError> {
    if ask.dimm_sizes_gib.is_some() {
        return Err(ProvisionError::Ask(format!(
            "{} has soldered memory: there are no DIMM sizes to choose",
            p.name
        )));
    }
    let ch = p.memory.channels_per_socket;
    let mts = p.memory.mts[0];
    let peak = p.system_peak_gb_s();
    Ok(p.memory
        .capacities_gib
        .iter()
        .map(|&gib| Candidate {
            dimms_per_socket: 0,
            dimm_gib: gib,
            channels_used: ch,
            per_channel: vec![1; ch as usize],
            mt_s: mts,
            installed_gib: u64::from(gib) * u64::from(p.sockets),
            usable_gib: f64::from(gib) * f64::from(p.sockets),
            class: Class::Balanced,
            peak_gb_s: peak,
            effective_gb_s: peak,
            loss_pct: loss_pct(p, peak),
            expected_triad_gb_s: None,
            notes: vec![],
        })
        .collect())
}

fn socketed(
    p: &Platform,
    ask: &PopulationAsk,
    spec: Option<&RasSpec>,
) -> Result<Vec<Candidate>, ProvisionError> {
    let dimms = chosen_dimms(p, ask)?;
    let pairs = spec.is_some_and(|s| s.channel_pairs);
    let per_group = p.memory.channels_per_socket / p.memory.groups;
    if pairs && !per_group.is_multiple_of(2) {
        return Err(ProvisionError::Platform {
            key: "[ras.lockstep]".into(),
            message: format!(
                "{}: lockstep pairs channels, but a group has {per_group} channels",
                p.name
            ),
        });
    }
    let slots = p.memory.channels_per_socket * p.max_dimms_per_channel();
    let mut out = vec![];
    for d in &dimms {
        for n in 1..=slots {
            let counts = layout(p, n, pairs);
            if pairs && (n % 2 != 0 || counts.chunks(2).any(|c| c[0] != c[1])) {
                continue;
            }
            if let Some(c) = candidate(p, *d, n, counts, spec) {
                out.push(c);
            }
        }
    }
    Ok(out)
}

fn chosen_dimms(p: &Platform, ask: &PopulationAsk) -> Result<Vec<DimmOption>, ProvisionError> {
    let Some(sizes) = &ask.dimm_sizes_gib else {
        return Ok(p.memory.dimms.clone());
    };
    sizes
        .iter()
        .map(|&gib| {
            p.memory
                .dimms
                .iter()
                .find(|d| d.gib == gib)
                .copied()
                .ok_or_else(|| {
                    let sold: Vec<String> = p.memory.dimms.iter().map(|d| d.gib.to_string()).collect();
                    ProvisionError::Ask(format!(
                        "{} takes DIMMs of {} GiB; {gib} GiB is not one",
                        p.name,
                        sold.join(", ")
                    ))
                })
        })
        .collect()
}

/// DIMMs on each channel of a socket holding `n`: round-robin over the groups,
/// the first DIMM of every channel before any second (in pairs for lockstep).
pub fn layout(p: &Platform, n: u32, pairs: bool) -> Vec<u32> {
    let groups = p.memory.groups;
    let per_group = p.memory.channels_per_socket / groups;
    let step = if pairs { 2 } else { 1 };
    let mut order = vec![];
    for slot in (0..per_group).step_by(step as usize) {
        for g in 0..groups {
            for k in 0..step {
                order.push((g * per_group + slot + k) as usize);
            }
        }
    }
    let mut counts = vec![0; p.memory.channels_per_socket as usize];
    for i in 0..n as usize {
        counts[order[i % order.len()]] += 1;
    }
    counts
}

/// The class of a socket's population under a rule.
pub fn classify(rule: Rule, counts: &[u32], groups: u32) -> Class {
    let populated: Vec<u32> = counts.iter().copied().filter(|&c| c > 0).collect();
    let uniform = populated.windows(2).all(|w| w[0] == w[1]);
    let per_group = counts.len() / groups.max(1) as usize;
    let mut shapes: Vec<Vec<u32>> = counts
        .chunks(per_group.max(1))
        .map(|g| {
            let mut g = g.to_vec();
            g.sort_unstable();
            g
        })
        .collect();
    shapes.dedup();
    let groups_alike = shapes.len() == 1;
    match rule {
        Rule::Soldered => Class::Balanced,
        Rule::ChannelSymmetry if populated.len() == counts.len() && uniform => Class::Balanced,
        Rule::ChannelSymmetry if groups_alike => Class::NearBalanced,
        Rule::ControllerSymmetry if groups_alike && uniform => Class::Balanced,
        _ => Class::Unbalanced,
    }
}

/// `n` DIMMs like `d` per socket, in the population order, without RAS; None
/// where the platform has no such population.
pub fn population(p: &Platform, d: DimmOption, n: u32) -> Option<Candidate> {
    if n == 0 || n > p.memory.channels_per_socket * p.max_dimms_per_channel() {
        return None;
    }
    candidate(p, d, n, layout(p, n, false), None)
}

/// What the platform's rule makes of each DIMM count per socket (placed as
/// [`layout`] places them): the counts of each class, in class order. What
/// `--explain` prints as this platform's own reading of its rule.
pub fn counts_by_class(p: &Platform) -> Vec<(Class, Vec<u32>)> {
    let mut out: Vec<(Class, Vec<u32>)> = Vec::new();
    for n in 1..=p.memory.channels_per_socket * p.max_dimms_per_channel() {
        let class = classify(p.memory.rule, &layout(p, n, false), p.memory.groups);
        match out.iter_mut().find(|(c, _)| *c == class) {
            Some((_, ns)) => ns.push(n),
            None => out.push((class, vec![n])),
        }
    }
    out.sort_by_key(|(c, _)| *c as u8);
    out
}

/// Percent below the platform's best: every channel, one DIMM, top speed.
fn loss_pct(p: &Platform, effective_gb_s: f64) -> f64 {
    (1.0 - effective_gb_s / p.system_peak_gb_s()) * 100.0
}

fn candidate(
    p: &Platform,
    d: DimmOption,
    n: u32,
    counts: Vec<u32>,
    spec: Option<&RasSpec>,
) -> Option<Candidate> {
    let most = *counts.iter().max()?;
    let mts = p.memory.mts[most as usize - 1];
    let sockets = f64::from(p.sockets);
    let used = counts.iter().filter(|&&c| c > 0).count() as u32;
    let installed = u64::from(n) * u64::from(d.gib) * u64::from(p.sockets);
    let mut notes = vec![];
    let usable = match spec {
        Some(s) if s.write_copies.is_some() => installed as f64 / f64::from(s.write_copies.unwrap_or(2)),
        Some(s) if s.spare_ranks_per_channel.is_some() => {
            let spare = s.spare_ranks_per_channel.unwrap_or(1);
            let mut per_socket = 0.0;
            for &c in counts.iter().filter(|&&c| c > 0) {
                let ranks = c * d.ranks;
                if ranks <= spare {
                    return None;
                }
                per_socket += f64::from(c * d.gib) * f64::from(ranks - spare) / f64::from(ranks);
            }
            notes.push(format!("{spare} rank(s) per channel held as spare"));
            per_socket * sockets
        }
        _ => installed as f64,
    };
    let effective = p.channel_gb_s(mts) * f64::from(n) / f64::from(most) * sockets;
    Some(Candidate {
        dimms_per_socket: n,
        dimm_gib: d.gib,
        channels_used: used,
        class: classify(p.memory.rule, &counts, p.memory.groups),
        mt_s: mts,
        installed_gib: installed,
        usable_gib: usable,
        peak_gb_s: f64::from(used) * p.channel_gb_s(mts) * sockets,
        effective_gb_s: effective,
        per_channel: counts,
        loss_pct: loss_pct(p, effective),
        expected_triad_gb_s: None,
        notes,
    })
}

/// A number without a needless fraction: 1024, 1.5.
pub fn trim(v: f64) -> String {
    let s = format!("{v:.1}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}
