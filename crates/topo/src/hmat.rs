//! Firmware memory performance (ACPI HMAT) from
//! `devices/system/node/nodeN/accessK/initiators/`.
//!
//! For a memory target node N, `accessK/initiators/` holds one entry
//! `nodeM` per initiator node with class-K access (symlinks in a live
//! sysfs; only the names matter here) plus `read_latency`,
//! `write_latency` (nanoseconds), `read_bandwidth` and `write_bandwidth`
//! (MB/s) for those initiators.

use std::path::Path;

use crate::error::TopoError;
use crate::parse::{numbered_name, parse_u64};
use crate::sysfs::{entry_names, numbered_entries, read_parsed_optional};
use crate::types::HmatEntry;

/// Reads the HMAT entries of every listed node, sorted by
/// (target node, access class). Nodes without `accessK` directories (no
/// HMAT, or kernels before 5.2) contribute nothing.
pub(crate) fn read_hmat(node_dir: &Path, node_ids: &[u32]) -> Result<Vec<HmatEntry>, TopoError> {
    let mut entries = Vec::new();
    for &target_node in node_ids {
        let dir = node_dir.join(format!("node{target_node}"));
        for class in numbered_entries(&dir, "access")? {
            let Ok(access_class) = u8::try_from(class) else {
                continue;
            };
            let initiators_dir = dir.join(format!("access{class}")).join("initiators");
            if let Some(entry) = read_entry(&initiators_dir, target_node, access_class)? {
                entries.push(entry);
            }
        }
    }
    entries.sort_by_key(|e| (e.target_node, e.access_class));
    Ok(entries)
}

fn read_entry(dir: &Path, target_node: u32, access_class: u8) -> Result<Option<HmatEntry>, TopoError> {
    let mut initiators: Vec<u32> = entry_names(dir)?
        .iter()
        .filter_map(|name| numbered_name(name, "node"))
        .collect();
    initiators.sort_unstable();
    let value = |name: &str| -> Result<Option<u64>, TopoError> {
        // The kernel writes 0 for an attribute the firmware left out.
        Ok(read_parsed_optional(&dir.join(name), parse_u64)?.filter(|&v| v != 0))
    };
    let entry = HmatEntry {
        target_node,
        access_class,
        initiators,
        read_latency_ns: value("read_latency")?,
        write_latency_ns: value("write_latency")?,
        read_bandwidth_mb_s: value("read_bandwidth")?,
        write_bandwidth_mb_s: value("write_bandwidth")?,
    };
    // Initiator-only nodes get an empty `initiators` directory of their own.
    let empty = entry.initiators.is_empty()
        && entry.read_latency_ns.is_none()
        && entry.write_latency_ns.is_none()
        && entry.read_bandwidth_mb_s.is_none()
        && entry.write_bandwidth_mb_s.is_none();
    Ok((!empty).then_some(entry))
}
