//! The platform facts a result needs to be explained: firmware (DMI), the NUMA layout
//! as the kernel shows it, DIMM speeds, the kernel's NUMA and memory options, and the
//! socket links. A fact that cannot be read is recorded as unknown with the reason,
//! never left out, so that two runs can be told apart by what they say.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{format_cpulist, Fact, HardwareClass, Host, MemoryDevices, Roots, Topology};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Platform {
    /// A salted hash of the machine's id: the same machine, run after run.
    pub host_id: Fact<String>,
    /// What this machine is compared with: machines of the same class.
    pub class: HardwareClass,
    pub bios_vendor: Fact<String>,
    pub bios_version: Fact<String>,
    pub bios_date: Fact<String>,
    pub system_vendor: Fact<String>,
    pub system_product: Fact<String>,
    pub board_name: Fact<String>,
    pub numa: NumaSeen,
    /// Installed DIMMs with their configured and rated speeds.
    pub dimms: Fact<Vec<DimmSpeed>>,
    /// Kernel command-line options that change NUMA or memory placement (numa=,
    /// numa_balancing=, mem=, memmap=, movable_node, hugepages...); empty: none.
    pub kernel_memory_options: Fact<Vec<String>>,
    /// What the kernel shows of the socket links (UPI, xGMI).
    pub socket_links: Fact<String>,
}

/// The NUMA mode as this kernel sees it: what NPS / SNC / interleave settings show as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumaSeen {
    pub sockets: usize,
    pub nodes: Vec<NodeSeen>,
    /// SLIT rows, in the order of `nodes`.
    pub distances: Vec<Vec<u32>>,
    /// Nodes with CPUs per socket, where every socket has the same number.
    pub cpu_nodes_per_socket: Option<usize>,
    /// In words, e.g. "2 sockets, 1 node with CPUs per socket, 1 CPU-less node".
    pub described: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeSeen {
    pub id: u32,
    pub cpus: String,
    pub memory_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DimmSpeed {
    pub locator: Option<String>,
    pub size_bytes: Option<u64>,
    pub configured_mt_s: Option<u32>,
    pub rated_mt_s: Option<u32>,
}

/// Command-line words that change where memory goes or how much there is.
const MEMORY_OPTIONS: [&str; 12] = [
    "numa",
    "numa_balancing",
    "mem",
    "memmap",
    "movable_node",
    "kernelcore",
    "movablecore",
    "hugepages",
    "hugepagesz",
    "default_hugepagesz",
    "transparent_hugepage",
    "memhp_default_state",
];

impl Platform {
    /// Reads the facts of the machine `roots` describe; `host` and `devices` (its
    /// DIMMs, from SMBIOS or dmidecode) are as the caller already read them.
    pub fn read(topo: &Topology, roots: &Roots, host: &Host, devices: &MemoryDevices) -> Platform {
        let dmi = roots.sys.join("class/dmi/id");
        let field = |name: &str| dmi_field(&dmi, name);
        Platform {
            host_id: crate::host_id(roots),
            class: HardwareClass::of(topo, host.cpu_model.as_deref(), devices),
            bios_vendor: field("bios_vendor"),
            bios_version: field("bios_version"),
            bios_date: field("bios_date"),
            system_vendor: field("sys_vendor"),
            system_product: field("product_name"),
            board_name: field("board_name"),
            numa: numa_seen(topo),
            dimms: dimm_speeds(devices),
            kernel_memory_options: memory_options(&roots.proc.join("cmdline")),
            socket_links: socket_links(&roots.sys),
        }
    }
}

fn dmi_field(dir: &Path, name: &str) -> Fact<String> {
    if !dir.is_dir() {
        return Fact::Unknown(format!(
            "{} is absent: no DMI tables on this platform (some virtual machines, most boards without SMBIOS)",
            dir.display()
        ));
    }
    match std::fs::read_to_string(dir.join(name)) {
        Ok(s) if !s.trim().is_empty() => Fact::Known(s.trim().to_string()),
        Ok(_) => Fact::Unknown(format!("{name} is empty in the firmware's tables")),
        Err(e) => Fact::Unknown(format!("{}: {e}", dir.join(name).display())),
    }
}

fn numa_seen(topo: &Topology) -> NumaSeen {
    let sockets = topo.packages.len();
    let per_socket: Vec<usize> = topo
        .packages
        .iter()
        .map(|p| {
            topo.nodes
                .iter()
                .filter(|n| !n.cpu_less && n.cpus.iter().any(|c| p.cpus.contains(c)))
                .count()
        })
        .collect();
    let even = per_socket.windows(2).all(|w| w[0] == w[1]);
    let cpu_nodes_per_socket = (even && !per_socket.is_empty()).then(|| per_socket[0]);
    let cpu_less = topo.nodes.iter().filter(|n| n.cpu_less).count();
    let mut described = format!("{sockets} socket(s), {} NUMA node(s)", topo.nodes.len());
    if let Some(k) = cpu_nodes_per_socket {
        described += &format!(", {k} node(s) with CPUs per socket");
    }
    if cpu_less > 0 {
        described += &format!(", {cpu_less} CPU-less node(s)");
    }
    NumaSeen {
        sockets,
        nodes: topo
            .nodes
            .iter()
            .map(|n| NodeSeen {
                id: n.id,
                cpus: format_cpulist(&n.cpus),
                memory_bytes: n.mem_total_bytes,
            })
            .collect(),
        distances: topo.nodes.iter().map(|n| n.distances.clone()).collect(),
        cpu_nodes_per_socket,
        described,
    }
}

fn dimm_speeds(devices: &MemoryDevices) -> Fact<Vec<DimmSpeed>> {
    if devices.dimms.is_empty() {
        return Fact::Unknown(
            devices
                .unavailable
                .clone()
                .unwrap_or_else(|| "no memory devices in SMBIOS".into()),
        );
    }
    Fact::Known(
        devices
            .dimms
            .iter()
            .filter(|d| d.installed)
            .map(|d| DimmSpeed {
                locator: d.locator.clone(),
                size_bytes: d.size_bytes,
                configured_mt_s: d.configured_speed_mt_s,
                rated_mt_s: d.speed_mt_s,
            })
            .collect(),
    )
}

/// The memory and NUMA words of a kernel command line.
pub fn memory_options_of(cmdline: &str) -> Vec<String> {
    cmdline
        .split(" -- ")
        .next()
        .unwrap_or("")
        .split_whitespace()
        .filter(|w| {
            let key = w.split('=').next().unwrap_or(w);
            MEMORY_OPTIONS.contains(&key) || key.starts_with("numa")
        })
        .map(str::to_string)
        .collect()
}

fn memory_options(path: &Path) -> Fact<Vec<String>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Fact::Known(memory_options_of(&s)),
        Err(e) => Fact::Unknown(format!("{}: {e}", path.display())),
    }
}

/// Linux has no sysfs file for socket-link status; Intel's uncore driver does show
/// one UPI PMU per link, which at least counts them.
fn socket_links(sys: &Path) -> Fact<String> {
    let dir = sys.join("bus/event_source/devices");
    let mut upi: Vec<String> = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("uncore_upi"))
                .collect()
        })
        .unwrap_or_default();
    upi.sort();
    if upi.is_empty() {
        return Fact::Unknown(
            "Linux shows no socket-link (UPI, xGMI) status in sysfs and no UPI PMUs are present; link count, width and speed are BIOS settings"
                .into(),
        );
    }
    Fact::Known(format!("{} UPI link PMU(s): {}", upi.len(), upi.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_options_are_picked_from_the_command_line() {
        let line = "BOOT_IMAGE=/vmlinuz ro numa_balancing=disable quiet memmap=4G!12G numa=fake=4 \
                    hugepagesz=1G hugepages=16 transparent_hugepage=never -- init-arg numa=off";
        assert_eq!(
            memory_options_of(line),
            vec![
                "numa_balancing=disable",
                "memmap=4G!12G",
                "numa=fake=4",
                "hugepagesz=1G",
                "hugepages=16",
                "transparent_hugepage=never"
            ]
        );
        assert!(memory_options_of("console=ttyS0 quiet").is_empty());
    }

    #[test]
    fn missing_facts_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let f = dmi_field(&dir.path().join("class/dmi/id"), "bios_version");
        assert!(
            matches!(&f, Fact::Unknown(w) if w.contains("no DMI tables")),
            "{f:?}"
        );
        std::fs::create_dir_all(dir.path().join("id")).unwrap();
        std::fs::write(dir.path().join("id/bios_version"), "1.2.3\n").unwrap();
        std::fs::write(dir.path().join("id/board_name"), "\n").unwrap();
        assert_eq!(
            dmi_field(&dir.path().join("id"), "bios_version"),
            Fact::Known("1.2.3".into())
        );
        assert!(
            matches!(dmi_field(&dir.path().join("id"), "board_name"), Fact::Unknown(w) if w.contains("empty"))
        );
        assert!(matches!(socket_links(dir.path()), Fact::Unknown(w) if w.contains("BIOS settings")));
        std::fs::create_dir_all(dir.path().join("bus/event_source/devices/uncore_upi_0")).unwrap();
        std::fs::create_dir_all(dir.path().join("bus/event_source/devices/uncore_upi_1")).unwrap();
        assert_eq!(
            socket_links(dir.path()),
            Fact::Known("2 UPI link PMU(s): uncore_upi_0, uncore_upi_1".into())
        );
    }
}
