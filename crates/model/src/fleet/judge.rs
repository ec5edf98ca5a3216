//! The fleet report: every host judged against its hardware class by a robust rule,
//! each outlier with the recorded facts that set it apart from its class, and each
//! class's configuration drift.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{FleetFacts, Headline};

/// When a host's figure counts as an outlier, and how classes are formed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Worse than the class median by more than this share, in percent ...
    pub worse_pct: f64,
    /// ... and farther from it than this many MADs (the median absolute deviation,
    /// scaled by 1.4826 so that it estimates the standard deviation of normal data).
    pub mads: f64,
    /// Classes (and figures) with fewer hosts than this are summarised, not judged.
    pub min_hosts: usize,
    /// Hosts whose class differs from the largest class of their platform (same CPU
    /// model, sockets and cores) only in population or NUMA mode, and that make up
    /// fewer than this share of the platform's hosts (or fewer than `min_hosts`),
    /// are judged in that largest class, and the difference is named as a cause.
    pub fold_share: f64,
}

impl Default for Rule {
    fn default() -> Rule {
        Rule {
            worse_pct: 10.0,
            mads: 3.0,
            min_hosts: 3,
            fold_share: 0.25,
        }
    }
}

/// MAD to standard deviation, for normally distributed figures.
const MAD_TO_SIGMA: f64 = 1.4826;

impl Rule {
    /// The rule in one sentence, as the report prints it.
    pub fn describe(&self) -> String {
        format!(
            "a host is an outlier on a figure when it is more than {}% worse than its class median \
             and more than {} MADs (x{MAD_TO_SIGMA}) from it; classes with fewer than {} hosts are not judged",
            self.worse_pct, self.mads, self.min_hosts
        )
    }
}

/// One host as the report sees it: its newest run's facts.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetHost {
    /// The run the facts came from (the newest one with facts).
    pub run_id: i64,
    /// When that run was measured, and when it was stored (saved or ingested).
    pub measured_unix_s: u64,
    pub stored_unix_s: u64,
    /// Hostname, else host id, else "run N".
    pub name: String,
    pub host_id: Option<String>,
    pub facts: FleetFacts,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FleetReport {
    pub rule: Rule,
    pub rule_text: String,
    pub hosts: usize,
    pub classes: Vec<ClassReport>,
    pub outliers: Vec<Outlier>,
    pub drift: Vec<Drift>,
    /// Every host, by class then name.
    pub rows: Vec<HostRow>,
    /// Nodes of the campaign that stored no run (`fleet run`), with why.
    pub missing: Vec<Missing>,
    /// Host ids that arrived with more than one hardware class in one campaign.
    pub conflicts: Vec<Conflict>,
}

/// One host id with two or more hardware classes in one campaign: a machine-id
/// cloned onto other hardware, or a host rebuilt mid-campaign. Its newest run alone
/// stands for it; runs of its other classes are not merged into it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    pub host_id: String,
    pub campaign: Option<String>,
    /// Each class with the runs that recorded it, newest class first.
    pub classes: Vec<(String, Vec<i64>)>,
}

impl FleetReport {
    /// Each (run, headline) that is an outlier, for looking up many at once.
    pub fn outlying(&self) -> std::collections::BTreeSet<(i64, &str)> {
        self.outliers
            .iter()
            .map(|o| (o.run_id, o.headline.as_str()))
            .collect()
    }
}

/// A node of a campaign without a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Missing {
    pub node: String,
    /// failed, cancelled or running (a campaign that was itself stopped).
    pub status: super::NodeStatus,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassReport {
    pub key: String,
    pub hosts: usize,
    /// Smaller classes judged in this one, with their hosts.
    pub folded: Vec<DriftValue>,
    pub judged: bool,
    pub outlier_hosts: usize,
    pub stats: Vec<HeadlineStats>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HeadlineStats {
    pub headline: String,
    pub higher_is_better: bool,
    pub hosts: usize,
    pub median: f64,
    /// Scaled MAD (see [`Rule::mads`]).
    pub mad: f64,
    /// Beyond this value a host is an outlier; None where the figure is not judged.
    pub limit: Option<f64>,
    pub min: f64,
    pub max: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostRow {
    pub name: String,
    pub host_id: Option<String>,
    pub run_id: i64,
    pub measured_unix_s: u64,
    pub stored_unix_s: u64,
    pub class: String,
    pub values: BTreeMap<String, f64>,
    /// How much worse than the class median, in percent (negative: better).
    pub worse_pct: BTreeMap<String, f64>,
    pub outlier: bool,
    /// Why it differs from its class; only for outliers.
    pub causes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outlier {
    pub host: String,
    pub host_id: Option<String>,
    pub run_id: i64,
    pub class: String,
    pub headline: String,
    pub value: f64,
    pub median: f64,
    pub worse_pct: f64,
    /// Distance from the median in scaled MADs; None when the MAD is 0.
    pub mads: Option<f64>,
    pub causes: Vec<String>,
}

/// A fact with more than one value among a class's hosts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    pub class: String,
    pub fact: String,
    /// Most common first.
    pub values: Vec<DriftValue>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriftValue {
    pub value: String,
    pub hosts: usize,
}

const UNKNOWN_CLASS: &str = "unknown (no platform facts: run by memfabric before 0.5)";

/// The facts a host is compared with its class on, in the order causes are listed.
const FACTS: [&str; 14] = [
    "memory channels populated",
    "DIMMs",
    "DIMM speed MT/s",
    "NUMA nodes",
    "NUMA mode",
    "noise-guard flags",
    "bios_version",
    "bios_vendor",
    "kernel_memory_options",
    "thp",
    "governor",
    "numa_balancing",
    "microcode",
    "kernel",
];

fn fact(f: &FleetFacts, name: &str) -> Option<String> {
    let class = f.class.as_ref();
    match name {
        "memory channels populated" => class?.channels_populated.map(|v| v.to_string()),
        "DIMMs" => f.dimms.map(|v| v.to_string()),
        "DIMM speed MT/s" => class?.dimm_mt_s.map(|v| v.to_string()),
        "NUMA nodes" => class.map(|c| c.numa_nodes.to_string()),
        "NUMA mode" => f.numa_mode.clone(),
        "noise-guard flags" => Some(if f.noise.is_empty() { "none" } else { "flagged" }.into()),
        setting => f.settings.get(setting).cloned(),
    }
}

/// What the difference likely means, for the facts where that is clear.
fn hint(name: &str, host: &str, class: &str) -> &'static str {
    let lower = host.parse::<f64>().ok() < class.parse::<f64>().ok();
    match name {
        "memory channels populated" | "DIMMs" if lower => " (a missing or failed DIMM)",
        "DIMM speed MT/s" if lower => " (a slower DIMM sets the speed of its channels)",
        "NUMA nodes" | "NUMA mode" => " (a different NPS/SNC setting in the BIOS)",
        _ => "",
    }
}

/// Each host's class key after folding (see [`Rule::fold_share`]), and the folded
/// keys per class.
fn assign(hosts: &[FleetHost], rule: &Rule) -> (Vec<String>, BTreeMap<String, Vec<DriftValue>>) {
    let own = |h: &FleetHost| {
        h.facts
            .class
            .as_ref()
            .map_or(UNKNOWN_CLASS.to_string(), |c| c.key.clone())
    };
    let platform = |h: &FleetHost| {
        h.facts
            .class
            .as_ref()
            .map(|c| (c.cpu_model.clone(), c.sockets, c.cores))
    };
    let mut groups: BTreeMap<_, BTreeMap<String, usize>> = BTreeMap::new();
    for h in hosts {
        *groups.entry(platform(h)).or_default().entry(own(h)).or_default() += 1;
    }
    let mut into: BTreeMap<String, String> = BTreeMap::new();
    let mut folded: BTreeMap<String, Vec<DriftValue>> = BTreeMap::new();
    for (p, keys) in &groups {
        let total: usize = keys.values().sum();
        let main = keys
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
            .expect("a group has a key");
        let floor = rule
            .min_hosts
            .max((rule.fold_share * total as f64).ceil() as usize);
        for (key, &n) in keys {
            let fold = p.is_some() && key != main.0 && n < floor;
            let target = if fold { main.0.clone() } else { key.clone() };
            if fold {
                folded.entry(target.clone()).or_default().push(DriftValue {
                    value: key.clone(),
                    hosts: n,
                });
            }
            into.insert(key.clone(), target);
        }
    }
    (hosts.iter().map(|h| into[&own(h)].clone()).collect(), folded)
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

fn stats(h: Headline, values: &[f64], rule: &Rule) -> HeadlineStats {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let med = median(&sorted);
    let mut dev: Vec<f64> = sorted.iter().map(|v| (v - med).abs()).collect();
    dev.sort_by(f64::total_cmp);
    let mad = MAD_TO_SIGMA * median(&dev);
    let limit = (values.len() >= rule.min_hosts).then(|| {
        if h.higher_is_better() {
            (med * (1.0 - rule.worse_pct / 100.0)).min(med - rule.mads * mad)
        } else {
            (med * (1.0 + rule.worse_pct / 100.0)).max(med + rule.mads * mad)
        }
    });
    HeadlineStats {
        headline: h.name().into(),
        higher_is_better: h.higher_is_better(),
        hosts: values.len(),
        median: med,
        mad,
        limit,
        min: sorted[0],
        max: sorted[sorted.len() - 1],
    }
}

/// The most common value of each fact among some hosts, with its count.
fn modes(members: &[&FleetHost]) -> BTreeMap<&'static str, Vec<DriftValue>> {
    let mut out = BTreeMap::new();
    for name in FACTS {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for h in members {
            if let Some(v) = fact(&h.facts, name) {
                *counts.entry(v).or_default() += 1;
            }
        }
        let mut values: Vec<DriftValue> = counts
            .into_iter()
            .map(|(value, hosts)| DriftValue { value, hosts })
            .collect();
        values.sort_by(|a, b| b.hosts.cmp(&a.hosts).then(a.value.cmp(&b.value)));
        out.insert(name, values);
    }
    out
}

/// The recorded facts that set a host apart from its class, most telling first.
fn causes(h: &FleetHost, class: &BTreeMap<&'static str, Vec<DriftValue>>, members: usize) -> Vec<String> {
    let mut out = Vec::new();
    for name in FACTS {
        let (Some(mine), Some(mode)) = (fact(&h.facts, name), class[name].first()) else {
            continue;
        };
        if mine == mode.value {
            continue;
        }
        if name == "noise-guard flags" {
            out.push(format!(
                "noisy run: {} measurement(s) flagged by the noise guard; first: {}",
                h.facts.noise.len(),
                h.facts.noise[0]
            ));
            continue;
        }
        out.push(format!(
            "{name} {mine}, its class {} ({} of {members} hosts){}",
            mode.value,
            mode.hosts,
            hint(name, &mine, &mode.value)
        ));
    }
    if out.is_empty() {
        out.push("none of its recorded facts differs from its class: look at the node itself (BMC event log, DIMM errors, cooling)".into());
    }
    out
}

/// Judges every host against its class by `rule`.
pub fn judge(hosts: &[FleetHost], rule: Rule) -> FleetReport {
    let (keys, mut folded) = assign(hosts, &rule);
    let mut by_class: BTreeMap<&str, Vec<&FleetHost>> = BTreeMap::new();
    for (h, k) in hosts.iter().zip(&keys) {
        by_class.entry(k.as_str()).or_default().push(h);
    }
    let mut report = FleetReport {
        rule,
        rule_text: rule.describe(),
        hosts: hosts.len(),
        classes: Vec::new(),
        outliers: Vec::new(),
        drift: Vec::new(),
        rows: Vec::new(),
        missing: Vec::new(),
        conflicts: Vec::new(),
    };
    for (key, mut members) in by_class {
        members.sort_by(|a, b| a.name.cmp(&b.name));
        judge_class(key, &members, folded.remove(key).unwrap_or_default(), &mut report);
    }
    report
}

impl HostRow {
    /// A host's row before it is judged.
    fn of(m: &FleetHost, class: &str) -> HostRow {
        HostRow {
            name: m.name.clone(),
            host_id: m.host_id.clone(),
            run_id: m.run_id,
            measured_unix_s: m.measured_unix_s,
            stored_unix_s: m.stored_unix_s,
            class: class.into(),
            values: m.facts.headlines.clone(),
            worse_pct: BTreeMap::new(),
            outlier: false,
            causes: Vec::new(),
        }
    }
}

fn judge_class(key: &str, members: &[&FleetHost], folded: Vec<DriftValue>, report: &mut FleetReport) {
    let rule = report.rule;
    let judged = members.len() >= rule.min_hosts;
    let stats: Vec<HeadlineStats> = Headline::ALL
        .into_iter()
        .filter_map(|h| {
            let values: Vec<f64> = members
                .iter()
                .filter_map(|m| m.facts.headlines.get(h.name()).copied())
                .collect();
            (!values.is_empty()).then(|| stats(h, &values, &rule))
        })
        .collect();
    let modes = modes(members);
    let mut outlier_hosts = 0;
    for m in members {
        let mut row = HostRow::of(m, key);
        let mut found = Vec::new();
        for s in &stats {
            let Some(&v) = m.facts.headlines.get(&s.headline) else {
                continue;
            };
            let sign = if s.higher_is_better { -1.0 } else { 1.0 };
            let worse = sign * (v - s.median) / s.median * 100.0;
            row.worse_pct.insert(s.headline.clone(), worse);
            let beyond = s.limit.is_some_and(|l| sign * (v - l) > 0.0);
            if judged && beyond {
                found.push(Outlier {
                    host: m.name.clone(),
                    host_id: m.host_id.clone(),
                    run_id: m.run_id,
                    class: key.into(),
                    headline: s.headline.clone(),
                    value: v,
                    median: s.median,
                    worse_pct: worse,
                    mads: (s.mad > 0.0).then(|| (v - s.median).abs() / s.mad),
                    causes: Vec::new(),
                });
            }
        }
        if !found.is_empty() {
            outlier_hosts += 1;
            row.outlier = true;
            row.causes = causes(m, &modes, members.len());
            for o in &mut found {
                o.causes.clone_from(&row.causes);
            }
            report.outliers.append(&mut found);
        }
        report.rows.push(row);
    }
    for (name, values) in modes {
        if values.len() > 1 {
            report.drift.push(Drift {
                class: key.into(),
                fact: name.into(),
                values,
            });
        }
    }
    report.classes.push(ClassReport {
        key: key.into(),
        hosts: members.len(),
        folded,
        judged,
        outlier_hosts,
        stats,
    });
}
