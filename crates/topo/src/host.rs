//! The running system's state, read from `/proc` and `/sys`: what can change a
//! measurement's numbers without changing the machine's shape (kernel, governor,
//! load, microcode, a hypervisor), and the memory the system can still give.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use crate::{Roots, Topology};

/// What the kernel says about the system now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Host {
    pub hostname: Option<String>,
    /// "model name" of /proc/cpuinfo, or "CPU part" on aarch64.
    pub cpu_model: Option<String>,
    pub microcode: Option<String>,
    /// The kernel release.
    pub kernel: Option<String>,
    /// `/proc/sys/kernel/numa_balancing`.
    pub numa_balancing: Option<String>,
    /// CPU 0's frequency governor.
    pub governor: Option<String>,
    /// The CPU flags of /proc/cpuinfo.
    pub cpu_flags: Vec<String>,
    pub load_avg_1m: Option<f64>,
}

impl Host {
    pub fn read(roots: &Roots) -> Host {
        let cpuinfo = fs::read_to_string(roots.proc.join("cpuinfo")).unwrap_or_default();
        let field = |k: &str| cpuinfo_field(&cpuinfo, k);
        Host {
            hostname: read_trimmed(&roots.proc.join("sys/kernel/hostname")),
            cpu_model: field("model name").or_else(|| field("CPU part")),
            microcode: field("microcode"),
            kernel: read_trimmed(&roots.proc.join("sys/kernel/osrelease")),
            numa_balancing: read_trimmed(&roots.proc.join("sys/kernel/numa_balancing")),
            governor: read_trimmed(&roots.sys.join("devices/system/cpu/cpu0/cpufreq/scaling_governor")),
            cpu_flags: field("flags")
                .map(|f| f.split_whitespace().map(str::to_string).collect())
                .unwrap_or_default(),
            load_avg_1m: read_trimmed(&roots.proc.join("loadavg"))
                .and_then(|s| s.split_whitespace().next()?.parse().ok()),
        }
    }

    pub fn has_flag(&self, flag: &str) -> bool {
        self.cpu_flags.iter().any(|f| f == flag)
    }
}

/// Each frequency governor in use and the CPUs using it; empty without cpufreq.
pub fn governors(topo: &Topology, sys: &Path) -> BTreeMap<String, Vec<u32>> {
    let mut out: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for cpu in &topo.cpus {
        let path = sys.join(format!(
            "devices/system/cpu/cpu{}/cpufreq/scaling_governor",
            cpu.id
        ));
        if let Some(g) = read_trimmed(&path) {
            out.entry(g).or_default().push(cpu.id);
        }
    }
    out
}

/// `/proc/sys/kernel/numa_balancing` under a /proc root.
pub fn numa_balancing(proc: &Path) -> Option<String> {
    read_trimmed(&proc.join("sys/kernel/numa_balancing"))
}

/// MemAvailable of /proc/meminfo, in bytes.
pub fn mem_available_bytes(proc: &Path) -> Option<u64> {
    let text = fs::read_to_string(proc.join("meminfo")).ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn read_trimmed(path: &Path) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The value of the first `key : value` line of /proc/cpuinfo.
pub fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo_fields() {
        let text = "processor\t: 0\nmodel name\t: Some CPU @ 2.0GHz\nmicrocode\t: 0x1\n";
        assert_eq!(
            cpuinfo_field(text, "model name").as_deref(),
            Some("Some CPU @ 2.0GHz")
        );
        assert_eq!(cpuinfo_field(text, "microcode").as_deref(), Some("0x1"));
        assert_eq!(cpuinfo_field(text, "flags"), None);
    }

    #[test]
    fn a_saved_proc_tree_is_read_like_the_live_one() {
        let dir = std::env::temp_dir().join(format!("memfabric-host-{}", std::process::id()));
        let proc = dir.join("proc");
        fs::create_dir_all(proc.join("sys/kernel")).unwrap();
        fs::write(
            proc.join("cpuinfo"),
            "model name\t: X\nflags\t\t: fpu hypervisor\n",
        )
        .unwrap();
        fs::write(proc.join("loadavg"), "1.50 0.9 0.1 1/100 42\n").unwrap();
        fs::write(proc.join("sys/kernel/hostname"), "node7\n").unwrap();
        fs::write(
            proc.join("meminfo"),
            "MemTotal: 100 kB\nMemAvailable:   2048 kB\n",
        )
        .unwrap();
        let host = Host::read(&Roots {
            sys: dir.join("sys"),
            proc: proc.clone(),
        });
        assert_eq!(host.hostname.as_deref(), Some("node7"));
        assert_eq!(host.cpu_model.as_deref(), Some("X"));
        assert!(host.has_flag("hypervisor") && !host.has_flag("hyper"));
        assert_eq!(host.load_avg_1m, Some(1.5));
        assert_eq!(host.governor, None);
        assert_eq!(mem_available_bytes(&proc), Some(2 << 20));
        fs::remove_dir_all(&dir).unwrap();
    }
}
