//! Which machine a result came from, and which machines it should be compared with:
//! a stable host id that does not reveal the machine's own id, and a hardware-class
//! key made of what sets a machine's memory performance.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Fact, MemoryDevices, Roots, Topology};

/// Mixed into the hash, so the id means nothing outside memfabric.
const SALT: &str = "memfabric host id v1";

/// Hex digits of the hash kept: 64 bits, plenty to tell a fleet's hosts apart.
const ID_HEX: usize = 16;

/// A hash of /etc/machine-id (beside the /sys the roots name), else of the DMI
/// product UUID; stable across reboots and reinstalls of memfabric, not across OS
/// reinstalls (which write a new machine-id).
pub fn host_id(roots: &Roots) -> Fact<String> {
    let etc = roots
        .sys
        .parent()
        .unwrap_or(Path::new("/"))
        .join("etc/machine-id");
    let uuid = roots.sys.join("class/dmi/id/product_uuid");
    for (source, path) in [("machine-id", &etc), ("product_uuid", &uuid)] {
        if let Ok(text) = std::fs::read_to_string(path) {
            let id = text.trim();
            if !id.is_empty() {
                return Fact::Known(format!("{source}:{}", hash(id)));
            }
        }
    }
    Fact::Unknown(format!(
        "neither {} nor {} could be read (the UUID is root-only)",
        etc.display(),
        uuid.display()
    ))
}

fn hash(id: &str) -> String {
    let digest = Sha256::digest(format!("{SALT}\0{id}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..ID_HEX].to_string()
}

/// What makes two machines' memory figures comparable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HardwareClass {
    pub cpu_model: Option<String>,
    pub sockets: usize,
    /// Physical cores, all sockets.
    pub cores: usize,
    /// Channels with a DIMM, all sockets; None where SMBIOS does not say.
    pub channels_populated: Option<usize>,
    /// The slowest configured DIMM speed; None where SMBIOS does not say.
    pub dimm_mt_s: Option<u32>,
    pub numa_nodes: usize,
    /// All of the above in one line, e.g. `AMD EPYC 9654 96-Core Processor/2S/192C/24ch/4800MT/8N`;
    /// `?` for what is not known.
    pub key: String,
}

impl HardwareClass {
    pub fn of(topo: &Topology, cpu_model: Option<&str>, devices: &MemoryDevices) -> HardwareClass {
        let mut cores: Vec<(u32, u32)> = topo.cpus.iter().map(|c| (c.package, c.core)).collect();
        cores.sort_unstable();
        cores.dedup();
        let installed: Vec<_> = devices.dimms.iter().filter(|d| d.installed).collect();
        let mut channels: Vec<(u32, &str)> = installed
            .iter()
            .filter_map(|d| Some((d.socket?, d.channel.as_deref()?)))
            .collect();
        channels.sort_unstable();
        channels.dedup();
        let channels_populated = (!channels.is_empty()).then_some(channels.len());
        let dimm_mt_s = installed.iter().filter_map(|d| d.configured_speed_mt_s).min();
        let cpu_model = cpu_model.map(|m| m.split_whitespace().collect::<Vec<_>>().join(" "));
        let opt = |v: Option<String>| v.unwrap_or_else(|| "?".into());
        let key = format!(
            "{}/{}S/{}C/{}ch/{}MT/{}N",
            opt(cpu_model.clone()),
            topo.packages.len(),
            cores.len(),
            opt(channels_populated.map(|c| c.to_string())),
            opt(dimm_mt_s.map(|s| s.to_string())),
            topo.nodes.len()
        );
        HardwareClass {
            cpu_model,
            sockets: topo.packages.len(),
            cores: cores.len(),
            channels_populated,
            dimm_mt_s,
            numa_nodes: topo.nodes.len(),
            key,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_id_is_a_salted_hash_never_the_id() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("etc")).unwrap();
        std::fs::create_dir_all(dir.path().join("sys")).unwrap();
        let roots = Roots {
            sys: dir.path().join("sys"),
            proc: dir.path().join("proc"),
        };
        assert!(matches!(host_id(&roots), Fact::Unknown(w) if w.contains("machine-id")));
        let id = "0123456789abcdef0123456789abcdef";
        std::fs::write(dir.path().join("etc/machine-id"), format!("{id}\n")).unwrap();
        let Fact::Known(got) = host_id(&roots) else {
            panic!("known")
        };
        assert!(
            got.starts_with("machine-id:") && got.len() == "machine-id:".len() + ID_HEX,
            "{got}"
        );
        assert!(!got.contains(&id[..8]));
        assert_eq!(host_id(&roots), Fact::Known(got), "stable");
    }

    #[test]
    fn class_key_names_what_sets_memory_performance() {
        let root = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/epyc7601-2s/sys"
        ));
        let topo = Topology::read(root).unwrap();
        let c = HardwareClass::of(
            &topo,
            Some("AMD EPYC 7601 32-Core  Processor"),
            &MemoryDevices::default(),
        );
        assert_eq!(c.key, "AMD EPYC 7601 32-Core Processor/2S/64C/?ch/?MT/8N");
        assert_eq!((c.sockets, c.cores, c.numa_nodes), (2, 64, 8));
    }
}
