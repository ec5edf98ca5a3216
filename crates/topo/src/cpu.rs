//! CPUs, packages and dies from `devices/system/cpu`.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::TopoError;
use crate::parse::{parse_flag, parse_topology_id};
use crate::sysfs::{read_list, read_list_optional, read_optional, read_parsed, read_parsed_optional};
use crate::types::{Die, Package};

/// One online CPU's place in the package/die/core hierarchy, before nodes
/// and caches are attached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawCpu {
    pub id: u32,
    pub package: u32,
    pub die: u32,
    pub core: u32,
    pub smt_siblings: Vec<u32>,
}

/// Reads the online CPU list. Offline CPUs have no `topology` directory,
/// so they are left out everywhere rather than half-described.
pub(crate) fn read_online(cpu_dir: &Path) -> Result<Vec<u32>, TopoError> {
    let path = cpu_dir.join("online");
    let online = read_list(&path)?;
    if online.is_empty() {
        return Err(TopoError::format(&path, "no online CPUs listed"));
    }
    Ok(online)
}

/// Reads the topology of every online CPU.
pub(crate) fn read_cpus(cpu_dir: &Path, online: &[u32]) -> Result<Vec<RawCpu>, TopoError> {
    online
        .iter()
        .map(|&id| read_cpu(&cpu_dir.join(format!("cpu{id}")).join("topology"), id, online))
        .collect()
}

fn read_cpu(topo_dir: &Path, id: u32, online: &[u32]) -> Result<RawCpu, TopoError> {
    let package = read_parsed(&topo_dir.join("physical_package_id"), parse_topology_id)?;
    // die_id appeared in Linux 5.2; before that every package is one die.
    let die = read_parsed_optional(&topo_dir.join("die_id"), parse_topology_id)?.unwrap_or(0);
    let core = read_parsed(&topo_dir.join("core_id"), parse_topology_id)?;
    let siblings_path = topo_dir.join("thread_siblings_list");
    let mut smt_siblings: Vec<u32> = read_list_optional(&siblings_path)?
        .unwrap_or_default()
        .into_iter()
        .filter(|cpu| online.binary_search(cpu).is_ok())
        .collect();
    if smt_siblings.binary_search(&id).is_err() {
        smt_siblings.push(id);
        smt_siblings.sort_unstable();
    }
    Ok(RawCpu {
        id,
        package,
        die,
        core,
        smt_siblings,
    })
}

/// Reads `smt/active`, present since Linux 4.19 on x86 and later elsewhere.
pub(crate) fn read_smt_active(cpu_dir: &Path) -> Result<Option<bool>, TopoError> {
    let text = read_optional(&cpu_dir.join("smt").join("active"))?;
    Ok(text.as_deref().and_then(parse_flag))
}

/// Groups CPUs into packages, each listing its die ids.
pub(crate) fn build_packages(cpus: &[RawCpu]) -> Vec<Package> {
    let mut by_id: BTreeMap<u32, Package> = BTreeMap::new();
    for cpu in cpus {
        let package = by_id.entry(cpu.package).or_insert_with(|| Package {
            id: cpu.package,
            cpus: Vec::new(),
            dies: Vec::new(),
        });
        package.cpus.push(cpu.id);
        if !package.dies.contains(&cpu.die) {
            package.dies.push(cpu.die);
        }
    }
    let mut packages: Vec<Package> = by_id.into_values().collect();
    for package in &mut packages {
        package.cpus.sort_unstable();
        package.dies.sort_unstable();
    }
    packages
}

/// Groups CPUs into dies. A die is keyed by (package, die id) because some
/// kernels number dies within each package and others across the machine.
pub(crate) fn build_dies(cpus: &[RawCpu]) -> Vec<Die> {
    let mut by_key: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
    for cpu in cpus {
        by_key.entry((cpu.package, cpu.die)).or_default().push(cpu.id);
    }
    by_key
        .into_iter()
        .map(|((package, id), mut cpus)| {
            cpus.sort_unstable();
            Die { package, id, cpus }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(id: u32, package: u32, die: u32) -> RawCpu {
        RawCpu {
            id,
            package,
            die,
            core: id,
            smt_siblings: vec![id],
        }
    }

    #[test]
    fn packages_and_dies_group_cpus() {
        let cpus = [raw(0, 0, 0), raw(1, 0, 1), raw(2, 1, 0), raw(3, 0, 0)];
        let packages = build_packages(&cpus);
        assert_eq!(packages.len(), 2);
        assert_eq!(packages[0].cpus, vec![0, 1, 3]);
        assert_eq!(packages[0].dies, vec![0, 1]);
        assert_eq!(packages[1].dies, vec![0]);
        let dies = build_dies(&cpus);
        assert_eq!(dies.len(), 3);
        assert_eq!(
            dies[0],
            Die {
                package: 0,
                id: 0,
                cpus: vec![0, 3]
            }
        );
        assert_eq!(dies[2].package, 1);
    }
}
