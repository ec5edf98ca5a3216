//! Assembling a [`Topology`] from a sysfs tree, and questions about it.

use std::path::Path;

use crate::cache::{build_domains, read_instances, summarize_levels};
use crate::cpu::{build_dies, build_packages, read_cpus, read_online, read_smt_active};
use crate::error::TopoError;
use crate::hmat::read_hmat;
use crate::locator::group_dimms;
use crate::node::{read_node_ids, read_nodes, read_pools, single_node};
use crate::parse::parse_bracketed;
use crate::smbios::read_memory_devices;
use crate::sysfs::read_optional;
use crate::types::{Cpu, HugePages, Node, Topology};

impl Topology {
    /// Reads the topology from a sysfs tree: `Path::new("/sys")` on a live
    /// system, or a captured copy such as `tests/fixtures/<name>/sys`.
    ///
    /// Files that depend on kernel version, firmware or configuration
    /// (HMAT, hugepages, `die_id`, `smt/active`, THP, cache directories)
    /// may be absent; the matching fields are then empty or `None`. A
    /// kernel without NUMA support yields one node 0 holding every online
    /// CPU, with memory sizes of 0.
    pub fn read(sysfs_root: &Path) -> Result<Topology, TopoError> {
        let cpu_dir = sysfs_root.join("devices/system/cpu");
        let node_dir = sysfs_root.join("devices/system/node");
        let online = read_online(&cpu_dir)?;
        let raw_cpus = read_cpus(&cpu_dir, &online)?;
        let (nodes, hmat) = match read_node_ids(&node_dir)? {
            Some(ids) => (read_nodes(&node_dir, &ids, &online)?, read_hmat(&node_dir, &ids)?),
            None => (vec![single_node(&online)], Vec::new()),
        };
        let node_of_cpu = |cpu: u32| {
            nodes
                .iter()
                .find(|n| n.cpus.binary_search(&cpu).is_ok())
                .map(|n| n.id)
        };
        let instances = read_instances(&cpu_dir, &online)?;
        let l3_domains = build_domains(&instances, node_of_cpu);
        let cpus = raw_cpus
            .iter()
            .map(|raw| Cpu {
                id: raw.id,
                package: raw.package,
                die: raw.die,
                core: raw.core,
                node: node_of_cpu(raw.id),
                smt_siblings: raw.smt_siblings.clone(),
                l3_domain: l3_domains
                    .iter()
                    .position(|d| d.cpus.binary_search(&raw.id).is_ok()),
            })
            .collect();
        let packages = build_packages(&raw_cpus);
        let mut memory_devices = read_memory_devices(&sysfs_root.join("firmware/dmi/entries"));
        group_dimms(&mut memory_devices.dimms, packages.len());
        Ok(Topology {
            cpus,
            memory_devices,
            packages,
            dies: build_dies(&raw_cpus),
            l3_domains,
            caches: summarize_levels(&instances),
            huge_pages: read_huge_pages(sysfs_root)?,
            hmat,
            smt_active: read_smt_active(&cpu_dir)?,
            nodes,
        })
    }

    /// The node with this id, if online.
    pub fn node(&self, id: u32) -> Option<&Node> {
        self.nodes.iter().find(|n| n.id == id)
    }

    /// The online CPU with this id.
    pub fn cpu(&self, id: u32) -> Option<&Cpu> {
        self.cpus
            .binary_search_by_key(&id, |c| c.id)
            .ok()
            .map(|i| &self.cpus[i])
    }

    /// Ids of the nodes that have CPUs.
    pub fn cpu_nodes(&self) -> Vec<u32> {
        self.nodes.iter().filter(|n| !n.cpu_less).map(|n| n.id).collect()
    }

    /// Ids of the nodes that have memory, CPU-less ones included.
    pub fn memory_nodes(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter(|n| n.mem_total_bytes > 0)
            .map(|n| n.id)
            .collect()
    }

    /// SLIT distance from node `from` to node `to`.
    pub fn distance(&self, from: u32, to: u32) -> Option<u32> {
        let column = self.nodes.iter().position(|n| n.id == to)?;
        self.node(from)?.distances.get(column).copied()
    }

    /// Total last-level cache in bytes, the yardstick for sizing buffers
    /// that must miss in cache. 0 when the kernel exposes no cache data;
    /// saturates at `u64::MAX`, which only a damaged `size` file can reach.
    pub fn total_llc_bytes(&self) -> u64 {
        self.l3_domains
            .iter()
            .fold(0, |total, d| total.saturating_add(d.size_bytes))
    }
}

fn read_huge_pages(sysfs_root: &Path) -> Result<HugePages, TopoError> {
    let mm = sysfs_root.join("kernel/mm");
    let thp_dir = mm.join("transparent_hugepage");
    let choice = |name: &str| -> Result<Option<String>, TopoError> {
        Ok(read_optional(&thp_dir.join(name))?
            .as_deref()
            .and_then(parse_bracketed))
    };
    Ok(HugePages {
        thp_enabled: choice("enabled")?,
        thp_defrag: choice("defrag")?,
        pools: read_pools(&mm.join("hugepages"))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CacheDomain;

    fn domain(index: usize, size_bytes: u64) -> CacheDomain {
        CacheDomain {
            index,
            cache_id: None,
            level: 3,
            size_bytes,
            cpus: vec![index as u32],
            node: None,
        }
    }

    #[test]
    fn llc_total_saturates() {
        // Found beside the fuzzing finding in `summarize_levels`: one L3
        // `size` of u64::MAX next to a real one overflowed the sum (a
        // panic in debug builds).
        let mut topo = Topology {
            cpus: Vec::new(),
            packages: Vec::new(),
            dies: Vec::new(),
            l3_domains: vec![domain(0, 8 << 20), domain(1, u64::MAX)],
            nodes: Vec::new(),
            caches: Vec::new(),
            huge_pages: HugePages::default(),
            hmat: Vec::new(),
            smt_active: None,
            memory_devices: Default::default(),
        };
        assert_eq!(topo.total_llc_bytes(), u64::MAX);
        topo.l3_domains[1].size_bytes = 8 << 20;
        assert_eq!(topo.total_llc_bytes(), 16 << 20);
    }
}
