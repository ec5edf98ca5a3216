//! NUMA nodes from `devices/system/node` and hugetlb pools.

use std::path::Path;

use crate::error::TopoError;
use crate::parse::{hugepage_dir_size_bytes, meminfo_value, parse_distances, parse_u64};
use crate::sysfs::{
    entry_names, numbered_entries, read_list, read_list_optional, read_parsed, read_required,
};
use crate::types::{HugePool, Node};

/// SLIT distance of a node to itself (the kernel's LOCAL_DISTANCE).
const LOCAL_DISTANCE: u32 = 10;

/// Ids of the online nodes, or `None` when the kernel was built without
/// NUMA and has no `devices/system/node` directory.
pub(crate) fn read_node_ids(node_dir: &Path) -> Result<Option<Vec<u32>>, TopoError> {
    if !node_dir.is_dir() {
        return Ok(None);
    }
    // `online` is authoritative; listing `nodeN` directories covers trees
    // captured without it.
    let ids = match read_list_optional(&node_dir.join("online"))? {
        Some(ids) => ids,
        None => numbered_entries(node_dir, "node")?,
    };
    Ok(Some(ids))
}

/// Reads every online node. Node CPU lists are cut down to online CPUs so
/// that they agree with [`crate::Topology::cpus`].
pub(crate) fn read_nodes(node_dir: &Path, ids: &[u32], online_cpus: &[u32]) -> Result<Vec<Node>, TopoError> {
    ids.iter()
        .map(|&id| read_node(&node_dir.join(format!("node{id}")), id, ids.len(), online_cpus))
        .collect()
}

fn read_node(dir: &Path, id: u32, node_count: usize, online_cpus: &[u32]) -> Result<Node, TopoError> {
    let cpus: Vec<u32> = read_list(&dir.join("cpulist"))?
        .into_iter()
        .filter(|c| online_cpus.binary_search(c).is_ok())
        .collect();
    let meminfo_path = dir.join("meminfo");
    let meminfo = read_required(&meminfo_path)?;
    let mem_field = |key: &str| {
        meminfo_value(&meminfo, key)
            .ok_or_else(|| TopoError::format(&meminfo_path, format!("no readable {key} line")))
    };
    let mem_total_bytes = mem_field("MemTotal")?;
    let mem_free_bytes = mem_field("MemFree")?;
    let distance_path = dir.join("distance");
    let distances = read_parsed(&distance_path, parse_distances)?;
    // The row follows the online node order; a length mismatch means the
    // node list and the distance table disagree, and the matrix would lie.
    if distances.len() != node_count {
        return Err(TopoError::format(
            &distance_path,
            format!("{} distances for {node_count} online nodes", distances.len()),
        ));
    }
    Ok(Node {
        id,
        cpu_less: cpus.is_empty(),
        cpus,
        mem_total_bytes,
        mem_free_bytes,
        distances,
        hugepages: read_pools(&dir.join("hugepages"))?,
    })
}

/// The stand-in for a kernel without NUMA support: one node 0 holding all
/// online CPUs. Its memory is reported as 0 bytes because sysfs then has no
/// per-node meminfo; callers needing a size read it elsewhere.
pub(crate) fn single_node(online_cpus: &[u32]) -> Node {
    Node {
        id: 0,
        cpus: online_cpus.to_vec(),
        mem_total_bytes: 0,
        mem_free_bytes: 0,
        cpu_less: online_cpus.is_empty(),
        distances: vec![LOCAL_DISTANCE],
        hugepages: Vec::new(),
    }
}

/// Reads the pools in a `hugepages` directory (system-wide under
/// `kernel/mm/hugepages`, per node under `nodeN/hugepages`), sorted by page
/// size. An absent directory means a kernel without hugetlbfs: no pools.
pub(crate) fn read_pools(dir: &Path) -> Result<Vec<HugePool>, TopoError> {
    let mut pools = Vec::new();
    for name in entry_names(dir)? {
        let Some(page_size_bytes) = hugepage_dir_size_bytes(&name) else {
            continue;
        };
        let pool_dir = dir.join(&name);
        pools.push(HugePool {
            page_size_bytes,
            total: read_parsed(&pool_dir.join("nr_hugepages"), parse_u64)?,
            free: read_parsed(&pool_dir.join("free_hugepages"), parse_u64)?,
        });
    }
    pools.sort_by_key(|p| p.page_size_bytes);
    Ok(pools)
}
