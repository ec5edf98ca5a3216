//! `monitor`: live memory traffic from the memory controllers' own counters, found
//! by name under /sys/bus/event_source/devices (perf_event_open) or in resctrl's
//! MBM files. Discovery reads an injectable sysfs root and resctrl root; the
//! arithmetic is pure and runs on recorded counts as well as live ones.

pub mod dram;
pub mod pmu;
pub mod sample;

use std::fs;
use std::path::{Path, PathBuf};

use memfabric_model::SourceStatus;
use thiserror::Error;

pub use dram::{chosen_because, finish_counting, open_first, DramCounters, DramSource, Window};
pub use pmu::{encode, parse_format, read_pmus, Pmu};
pub use sample::{delta, interval, CounterSource, Live, Monitor, Replay};

#[derive(Debug, Error)]
pub enum MonitorError {
    #[error("bad format field '{0}'")]
    Format(String),
    #[error("bad event term '{0}'")]
    Term(String),
    #[error("cannot open {what}: {source}")]
    Open { what: String, source: std::io::Error },
    #[error("cannot read a counter: {0}")]
    Read(std::io::Error),
    #[error("the recording has no more readings")]
    ReplayEnded,
    #[error("a recorded reading has {0} values for {1} counters")]
    ReplayWidth(usize, usize),
}

/// What a counter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
    /// Reads and writes together (AMD DF channel beats, resctrl MBM).
    Total,
}

/// Where a counter's value is read.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    Perf {
        pmu: String,
        pmu_type: u32,
        config: [u64; 3],
        cpu: u32,
    },
    File(PathBuf),
}

/// One counter to open.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterSpec {
    /// The channel, controller or L3 domain it belongs to.
    pub channel: String,
    pub socket: Option<u32>,
    pub dir: Dir,
    pub event: String,
    pub bytes_per_count: f64,
    /// Bits before the value wraps (64 where the kernel extends it, as perf does).
    pub width_bits: u32,
    pub origin: Origin,
}

/// A source looked for, and its counters when found.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub name: &'static str,
    pub specs: Vec<CounterSpec>,
    pub detail: String,
}

impl Candidate {
    pub fn status(&self) -> SourceStatus {
        SourceStatus {
            name: self.name.into(),
            available: !self.specs.is_empty(),
            detail: self.detail.clone(),
        }
    }
}

/// An event a source needs: sysfs names to look for, else the built-in encoding.
struct Want {
    dir: Dir,
    names: &'static [&'static str],
    /// Terms and bytes per count when the kernel publishes no event file.
    fallback: Option<(&'static str, f64)>,
    /// Bytes per count when the event file has no .scale.
    bytes: f64,
}

const READ_WRITE_64: &[Want] = &[
    Want {
        dir: Dir::Read,
        names: &["cas_count_read", "read", "data_read"],
        fallback: None,
        bytes: 64.0,
    },
    Want {
        dir: Dir::Write,
        names: &["cas_count_write", "write", "data_write"],
        fallback: None,
        bytes: 64.0,
    },
];

// AMD publishes no UMC events in sysfs; these are perf's own JSON events
// (umc_cas_cmd.rd / .wr: event 0x0a, rdwrmask 1 / 2), one 64-byte CAS each.
// Not verified on hardware here.
const AMD_UMC: &[Want] = &[
    Want {
        dir: Dir::Read,
        names: &["umc_cas_cmd.rd"],
        fallback: Some(("event=0x0a,rdwrmask=0x1", 64.0)),
        bytes: 64.0,
    },
    Want {
        dir: Dir::Write,
        names: &["umc_cas_cmd.wr"],
        fallback: Some(("event=0x0a,rdwrmask=0x2", 64.0)),
        bytes: 64.0,
    },
];

// Grace SCF (drivers/perf/arm_cspmu/nvidia_cspmu.c): cmem_rd_data 0x1a5 counts
// 32-byte read beats (per NVIDIA's Grace tuning guide; not verified on hardware
// here), cmem_wr_total_bytes 0x1db counts bytes.
const NVIDIA_SCF: &[Want] = &[
    Want {
        dir: Dir::Read,
        names: &["cmem_rd_data"],
        fallback: Some(("event=0x1a5", 32.0)),
        bytes: 32.0,
    },
    Want {
        dir: Dir::Write,
        names: &["cmem_wr_total_bytes"],
        fallback: Some(("event=0x1db", 1.0)),
        bytes: 1.0,
    },
];

// Zen 2/3 DF: DRAM channel data beats, one event per channel (perf's JSON
// dram_channel_data_controller_0..7: event 0x07 + 0x40 * channel, umask 0x38),
// reads and writes together, 64 bytes per beat. Not verified on hardware here.
const AMD_DF_CHANNELS: [&str; 8] = [
    "event=0x07,umask=0x38",
    "event=0x47,umask=0x38",
    "event=0x87,umask=0x38",
    "event=0xc7,umask=0x38",
    "event=0x107,umask=0x38",
    "event=0x147,umask=0x38",
    "event=0x187,umask=0x38",
    "event=0x1c7,umask=0x38",
];

/// Every source, in order of preference, found or not, from `sysfs` (normally /sys)
/// and the resctrl mount (normally /sys/fs/resctrl).
pub fn discover(sysfs: &Path, resctrl: &Path) -> Vec<Candidate> {
    let pmus = read_pmus(sysfs);
    let socket = |cpu: u32| socket_of(sysfs, cpu);
    let group = |name: &'static str, what: &str, pick: &dyn Fn(&str) -> bool, wants: &[Want]| {
        let found: Vec<&Pmu> = pmus.iter().filter(|p| pick(&p.name)).collect();
        pmu_candidate(name, what, &found, wants, &socket)
    };
    let imc = |n: &str| n.starts_with("uncore_imc_") && !n.starts_with("uncore_imc_free_running");
    vec![
        group(
            "intel-imc",
            "uncore_imc_* (Intel CAS counts)",
            &imc,
            READ_WRITE_64,
        ),
        group(
            "intel-imc-free-running",
            "uncore_imc_free_running_* (Intel)",
            &|n| n.starts_with("uncore_imc_free_running_"),
            READ_WRITE_64,
        ),
        group(
            "amd-umc",
            "amd_umc_* (AMD Zen 4+, Linux 6.7+)",
            &|n| n.starts_with("amd_umc_"),
            AMD_UMC,
        ),
        amd_df(pmus.iter().find(|p| p.name == "amd_df"), &socket),
        group(
            "nvidia-scf",
            "nvidia_scf_pmu_* (NVIDIA Grace)",
            &|n| n.starts_with("nvidia_scf_pmu_"),
            NVIDIA_SCF,
        ),
        resctrl_candidate(resctrl),
    ]
}

fn pmu_candidate(
    name: &'static str,
    what: &str,
    pmus: &[&Pmu],
    wants: &[Want],
    socket: &dyn Fn(u32) -> Option<u32>,
) -> Candidate {
    let mut specs = Vec::new();
    let mut problems = Vec::new();
    for p in pmus {
        for w in wants {
            let found = w
                .names
                .iter()
                .find_map(|n| p.events.get(*n).map(|e| (n.to_string(), e)));
            let (event, terms, bytes) = match (found, w.fallback) {
                (Some((n, e)), _) => (n, e.terms.clone(), pmu::bytes_per_count(e).unwrap_or(w.bytes)),
                (None, Some((t, b))) => (w.names[0].to_string(), t.to_string(), b),
                (None, None) => {
                    problems.push(format!("{} has no {} event", p.name, w.names.join("/")));
                    continue;
                }
            };
            match encode(&p.formats, &terms) {
                Ok(config) => specs.extend(p.cpus.iter().map(|&cpu| CounterSpec {
                    channel: p.name.clone(),
                    socket: socket(cpu),
                    dir: w.dir,
                    event: event.clone(),
                    bytes_per_count: bytes,
                    width_bits: 64,
                    origin: Origin::Perf {
                        pmu: p.name.clone(),
                        pmu_type: p.type_id,
                        config,
                        cpu,
                    },
                })),
                Err(e) => problems.push(format!("{}: {e}", p.name)),
            }
        }
    }
    let detail = if pmus.is_empty() {
        format!("no {what}")
    } else if specs.is_empty() {
        format!("{what}: {}", problems.join("; "))
    } else {
        let names: Vec<&str> = pmus.iter().map(|p| p.name.as_str()).collect();
        format!(
            "{} PMUs ({}), {} counters",
            pmus.len(),
            names.join(", "),
            specs.len()
        )
    };
    Candidate { name, specs, detail }
}

fn amd_df(p: Option<&Pmu>, socket: &dyn Fn(u32) -> Option<u32>) -> Candidate {
    let Some(p) = p else {
        return Candidate {
            name: "amd-df",
            specs: Vec::new(),
            detail: "no amd_df (AMD Zen 1-3 data fabric)".into(),
        };
    };
    let mut specs = Vec::new();
    for (ch, terms) in AMD_DF_CHANNELS.iter().enumerate() {
        let Ok(config) = encode(&p.formats, terms) else {
            continue;
        };
        for &cpu in &p.cpus {
            let s = socket(cpu);
            specs.push(CounterSpec {
                channel: format!("socket{}-channel{ch}", s.unwrap_or(cpu)),
                socket: s,
                dir: Dir::Total,
                event: format!("dram_channel_data_controller_{ch}"),
                bytes_per_count: 64.0,
                width_bits: 64,
                origin: Origin::Perf {
                    pmu: p.name.clone(),
                    pmu_type: p.type_id,
                    config,
                    cpu,
                },
            });
        }
    }
    let detail = format!(
        "amd_df, {} counters (8 DRAM channels per socket, reads and writes together)",
        specs.len()
    );
    Candidate {
        name: "amd-df",
        specs,
        detail,
    }
}

fn resctrl_candidate(root: &Path) -> Candidate {
    let mut domains: Vec<(String, PathBuf)> = fs::read_dir(root.join("mon_data"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    let f = e.path().join("mbm_total_bytes");
                    (n.starts_with("mon_L3_") && f.exists()).then_some((n, f))
                })
                .collect()
        })
        .unwrap_or_default();
    domains.sort();
    let specs: Vec<CounterSpec> = domains
        .into_iter()
        .map(|(n, f)| CounterSpec {
            channel: format!(
                "L3 domain {}",
                n.trim_start_matches("mon_L3_")
                    .trim_start_matches('0')
                    .parse::<u32>()
                    .unwrap_or(0)
            ),
            socket: None,
            dir: Dir::Total,
            event: "mbm_total_bytes".into(),
            bytes_per_count: 1.0,
            width_bits: 64,
            origin: Origin::File(f),
        })
        .collect();
    let detail = if specs.is_empty() {
        format!("no resctrl MBM files under {}/mon_data", root.display())
    } else {
        format!(
            "{} L3 domains (mbm_total_bytes, reads and writes together)",
            specs.len()
        )
    };
    Candidate {
        name: "resctrl-mbm",
        specs,
        detail,
    }
}

fn socket_of(sysfs: &Path, cpu: u32) -> Option<u32> {
    let p = sysfs.join(format!(
        "devices/system/cpu/cpu{cpu}/topology/physical_package_id"
    ));
    fs::read_to_string(p).ok()?.trim().parse().ok()
}

/// What decides whether this process may open system-wide counters.
pub use memfabric_topo::{cap_eff, PerfAccess as Access};

/// What is missing for counters, each item with how to enable it. `found_pmus`
/// names what event_source holds, for the message.
pub fn missing(
    candidates: &[Candidate],
    access: &Access,
    resctrl: &Path,
    found_pmus: &[String],
) -> Vec<String> {
    let mut out = Vec::new();
    let have_pmu = candidates
        .iter()
        .any(|c| c.name != "resctrl-mbm" && !c.specs.is_empty());
    if !have_pmu {
        out.push(format!(
            "no memory-controller PMU under /sys/bus/event_source/devices (found: {}); looked for uncore_imc_* \
             (Intel, module intel_uncore), amd_umc_* (AMD Zen 4+, Linux 6.7+, module amd_uncore), amd_df (earlier Zen), \
             nvidia_scf_pmu_* (NVIDIA Grace, module nvidia_cspmu); virtual machines rarely expose them: run on bare metal",
            if found_pmus.is_empty() { "nothing".to_string() } else { found_pmus.join(", ") }
        ));
    }
    let privileged = access.privileged();
    match access.paranoid {
        Some(p) if p > 0 && !privileged => out.push(format!(
            "perf_event_paranoid is {p}: system-wide counters need 0 or less, or CAP_PERFMON: sysctl -w kernel.perf_event_paranoid=0"
        )),
        Some(p) => out.push(format!(
            "perf_event_paranoid is {p}: no obstacle ({})",
            if privileged { "this process has CAP_PERFMON or CAP_SYS_ADMIN" } else { "0 or less allows system-wide counters" }
        )),
        None => out.push("perf_event_paranoid cannot be read (/proc/sys/kernel/perf_event_paranoid): perf events may be off in this kernel".into()),
    }
    if !privileged {
        out.push("this process lacks CAP_PERFMON (and CAP_SYS_ADMIN): run as root, or sudo setcap cap_perfmon+ep $(command -v memfabric)".into());
    }
    if !candidates
        .iter()
        .any(|c| c.name == "resctrl-mbm" && !c.specs.is_empty())
    {
        out.push(if resctrl.join("info").is_dir() {
            format!(
                "resctrl is mounted at {} but has no MBM files (mon_data/mon_L3_*/mbm_total_bytes): this CPU lacks memory bandwidth monitoring",
                resctrl.display()
            )
        } else {
            format!(
                "resctrl is not mounted at {}: mount -t resctrl resctrl /sys/fs/resctrl (needs a CPU with MBM: flag cqm_mbm_total in /proc/cpuinfo)",
                resctrl.display()
            )
        });
    }
    out
}

#[cfg(test)]
mod tests;
