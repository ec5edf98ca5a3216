//! Devices the kernel describes under /sys and /proc beyond CPUs and memory: the
//! performance monitoring units (PMUs) under `bus/event_source/devices`, a PCI
//! slot's node and link, and what this process may do with perf events. Read here
//! as the kernel writes them; what they mean is worked out by their users.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// A PMU directory: `type`, `cpumask`, and the files of `format/` and `events/` as
/// text, by file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmuFiles {
    pub name: String,
    pub type_id: u32,
    /// The CPUs to open its events on (one per socket or die); empty if not given.
    pub cpus: Vec<u32>,
    pub formats: BTreeMap<String, String>,
    pub events: BTreeMap<String, String>,
}

/// Reads one PMU directory; None when `type` is missing (not a PMU).
pub fn read_pmu(dir: &Path) -> Option<PmuFiles> {
    let name = dir.file_name()?.to_string_lossy().to_string();
    let type_id = fs::read_to_string(dir.join("type")).ok()?.trim().parse().ok()?;
    let cpus = fs::read_to_string(dir.join("cpumask"))
        .ok()
        .and_then(|s| crate::parse_cpulist(s.trim()).ok())
        .unwrap_or_default();
    Some(PmuFiles {
        name,
        type_id,
        cpus,
        formats: files(&dir.join("format")),
        events: files(&dir.join("events")),
    })
}

/// Every PMU under `<sys>/bus/event_source/devices`, in directory order.
pub fn read_pmus(sys: &Path) -> Vec<PmuFiles> {
    fs::read_dir(sys.join("bus/event_source/devices"))
        .map(|rd| rd.flatten().filter_map(|e| read_pmu(&e.path())).collect())
        .unwrap_or_default()
}

fn files(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(rd) = fs::read_dir(dir) else { return out };
    for e in rd.flatten() {
        if let Ok(text) = fs::read_to_string(e.path()) {
            out.insert(e.file_name().to_string_lossy().to_string(), text);
        }
    }
    out
}

/// What decides whether this process may open system-wide perf events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfAccess {
    /// /proc/sys/kernel/perf_event_paranoid.
    pub paranoid: Option<i32>,
    pub cap_perfmon: bool,
    pub cap_sys_admin: bool,
}

impl PerfAccess {
    /// This process's access, from a /proc root.
    pub fn read(proc: &Path) -> PerfAccess {
        let paranoid = fs::read_to_string(proc.join("sys/kernel/perf_event_paranoid"))
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let caps = fs::read_to_string(proc.join("self/status"))
            .ok()
            .and_then(|s| cap_eff(&s))
            .unwrap_or(0);
        PerfAccess {
            paranoid,
            cap_perfmon: caps >> 38 & 1 == 1,
            cap_sys_admin: caps >> 21 & 1 == 1,
        }
    }

    pub fn privileged(&self) -> bool {
        self.cap_perfmon || self.cap_sys_admin
    }
}

/// The CapEff mask of a /proc/PID/status text.
pub fn cap_eff(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("CapEff:"))?;
    u64::from_str_radix(line["CapEff:".len()..].trim(), 16).ok()
}

/// A PCI device's slot as sysfs describes it (`<sys>/bus/pci/devices/<bus id>`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PciSlot {
    /// None where the kernel writes -1 (it does not know) or there is no such file.
    pub numa_node: Option<u32>,
    /// e.g. "32.0 GT/s PCIe".
    pub current_link_speed: Option<String>,
    pub current_link_width: Option<u32>,
    pub max_link_speed: Option<String>,
    pub max_link_width: Option<u32>,
}

impl PciSlot {
    /// The slot of `bus_id` (e.g. "0000:3b:00.0") under a sysfs root.
    pub fn read(sys: &Path, bus_id: &str) -> PciSlot {
        PciSlot::read_dir(&sys.join("bus/pci/devices").join(bus_id))
    }

    /// A slot directory (a saved copy, in tests).
    pub fn read_dir(slot: &Path) -> PciSlot {
        let text = |f: &str| {
            fs::read_to_string(slot.join(f))
                .ok()
                .map(|s| s.trim().to_string())
        };
        let number = |f: &str| text(f).and_then(|s| s.parse().ok());
        PciSlot {
            numa_node: text("numa_node").and_then(|s| parse_numa_node(&s)),
            current_link_speed: text("current_link_speed"),
            current_link_width: number("current_link_width"),
            max_link_speed: text("max_link_speed"),
            max_link_width: number("max_link_width"),
        }
    }
}

/// sysfs numa_node: -1 where the kernel does not know.
pub fn parse_numa_node(s: &str) -> Option<u32> {
    s.trim().parse::<i64>().ok().and_then(|n| u32::try_from(n).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numa_node_of_a_slot() {
        assert_eq!(parse_numa_node("-1\n"), None);
        assert_eq!(parse_numa_node("1\n"), Some(1));
    }

    #[test]
    fn cap_eff_mask() {
        let s = "Name:\tx\nCapEff:\t000001ffffffffff\n";
        assert_eq!(cap_eff(s), Some(0x1ff_ffff_ffff));
        assert_eq!(cap_eff("CapEff:\t0000000000000000"), Some(0));
    }
}
