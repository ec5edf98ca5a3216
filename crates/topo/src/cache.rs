//! CPU caches from `devices/system/cpu/cpuN/cache/indexK`.
//!
//! The kernel describes caches per CPU; one physical cache shows up once
//! for each CPU sharing it. Instances are recovered by grouping on
//! (level, type, shared CPUs).

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::TopoError;
use crate::parse::{parse_cache_size, parse_topology_id, parse_u64};
use crate::sysfs::{numbered_entries, read_list, read_optional, read_parsed_optional};
use crate::types::{CacheDomain, CacheLevel};

/// One physical cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CacheInstance {
    pub level: u8,
    pub kind: String,
    pub size_bytes: u64,
    pub line_size_bytes: Option<u32>,
    pub ways: Option<u32>,
    pub cache_id: Option<u32>,
    /// Online CPUs sharing it, sorted.
    pub cpus: Vec<u32>,
}

/// Reads every cache seen by the online CPUs, one entry per instance,
/// sorted by (level, kind, lowest CPU).
pub(crate) fn read_instances(cpu_dir: &Path, online: &[u32]) -> Result<Vec<CacheInstance>, TopoError> {
    let mut seen: BTreeMap<(u8, String, Vec<u32>), CacheInstance> = BTreeMap::new();
    for &cpu in online {
        let cache_dir = cpu_dir.join(format!("cpu{cpu}")).join("cache");
        for index in numbered_entries(&cache_dir, "index")? {
            let index_dir = cache_dir.join(format!("index{index}"));
            if let Some(instance) = read_index(&index_dir, cpu, online)? {
                let key = (instance.level, instance.kind.clone(), instance.cpus.clone());
                seen.entry(key).or_insert(instance);
            }
        }
    }
    let mut instances: Vec<CacheInstance> = seen.into_values().collect();
    instances.sort_by(|a, b| (a.level, &a.kind, a.cpus.first()).cmp(&(b.level, &b.kind, b.cpus.first())));
    Ok(instances)
}

/// Reads one `indexK` directory. The kernel hides `level` and `type` when
/// firmware does not know them; such a cache cannot be placed in the
/// hierarchy and is skipped.
fn read_index(dir: &Path, cpu: u32, online: &[u32]) -> Result<Option<CacheInstance>, TopoError> {
    let Some(level) = read_parsed_optional(&dir.join("level"), parse_u64)? else {
        return Ok(None);
    };
    let Some(kind) = read_optional(&dir.join("type"))? else {
        return Ok(None);
    };
    let level = u8::try_from(level)
        .map_err(|_| TopoError::format(dir.join("level"), format!("cache level {level} out of range")))?;
    let as_u32 = |text: &str| parse_u64(text).map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    let mut cpus: Vec<u32> = read_list(&dir.join("shared_cpu_list"))?
        .into_iter()
        .filter(|c| online.binary_search(c).is_ok())
        .collect();
    if cpus.binary_search(&cpu).is_err() {
        cpus.push(cpu);
        cpus.sort_unstable();
    }
    Ok(Some(CacheInstance {
        level,
        kind: kind.trim().to_string(),
        // The kernel hides `size` (and `ways_of_associativity`) when unknown.
        size_bytes: read_parsed_optional(&dir.join("size"), parse_cache_size)?.unwrap_or(0),
        line_size_bytes: read_parsed_optional(&dir.join("coherency_line_size"), as_u32)?,
        ways: read_parsed_optional(&dir.join("ways_of_associativity"), as_u32)?,
        cache_id: read_parsed_optional(&dir.join("id"), parse_topology_id)?,
        cpus,
    }))
}

/// One summary per (level, kind), sorted by level then kind.
pub(crate) fn summarize_levels(instances: &[CacheInstance]) -> Vec<CacheLevel> {
    let mut by_key: BTreeMap<(u8, &str), CacheLevel> = BTreeMap::new();
    for inst in instances {
        let entry = by_key
            .entry((inst.level, inst.kind.as_str()))
            .or_insert_with(|| CacheLevel {
                level: inst.level,
                kind: inst.kind.clone(),
                size_bytes: 0,
                total_size_bytes: 0,
                line_size_bytes: 0,
                ways: None,
                instances: 0,
                cpus_per_instance: 0,
            });
        // Hybrid parts mix instance sizes; the largest is what a working-set
        // sweep must exceed to leave this level.
        if inst.size_bytes >= entry.size_bytes {
            entry.size_bytes = inst.size_bytes;
            entry.ways = inst.ways.or(entry.ways);
        }
        // A damaged `size` file can claim up to u64::MAX bytes. Saturating
        // keeps the read alive; no real machine comes near the limit, so a
        // total of u64::MAX itself says that a file was damaged.
        entry.total_size_bytes = entry.total_size_bytes.saturating_add(inst.size_bytes);
        entry.line_size_bytes = entry.line_size_bytes.max(inst.line_size_bytes.unwrap_or(0));
        entry.instances += 1;
        let sharing = u32::try_from(inst.cpus.len()).unwrap_or(u32::MAX);
        entry.cpus_per_instance = entry.cpus_per_instance.max(sharing);
    }
    by_key.into_values().collect()
}

/// The instances of the last-level cache: the highest level holding data
/// (normally L3; L2 on parts without L3; L4 where one is exposed).
pub(crate) fn llc_instances(instances: &[CacheInstance]) -> Vec<&CacheInstance> {
    let holds_data = |inst: &&CacheInstance| inst.kind != "Instruction";
    let Some(top) = instances.iter().filter(holds_data).map(|i| i.level).max() else {
        return Vec::new();
    };
    let mut llc: Vec<&CacheInstance> = instances
        .iter()
        .filter(holds_data)
        .filter(|i| i.level == top)
        .collect();
    // A split data-only top level next to a unified one would double count.
    if llc.iter().any(|i| i.kind == "Unified") {
        llc.retain(|i| i.kind == "Unified");
    }
    llc.sort_by_key(|i| i.cpus.first().copied());
    llc
}

/// Turns last-level cache instances into domains, placing each on a node
/// when all its CPUs share one.
pub(crate) fn build_domains(
    instances: &[CacheInstance],
    node_of_cpu: impl Fn(u32) -> Option<u32>,
) -> Vec<CacheDomain> {
    llc_instances(instances)
        .into_iter()
        .enumerate()
        .map(|(index, inst)| {
            let mut nodes = inst.cpus.iter().map(|&c| node_of_cpu(c));
            let first = nodes.next().flatten();
            let node = first.filter(|_| nodes.all(|n| n == first));
            CacheDomain {
                index,
                cache_id: inst.cache_id,
                level: inst.level,
                size_bytes: inst.size_bytes,
                cpus: inst.cpus.clone(),
                node,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(level: u8, kind: &str, size_kib: u64, cpus: &[u32]) -> CacheInstance {
        CacheInstance {
            level,
            kind: kind.to_string(),
            size_bytes: size_kib << 10,
            line_size_bytes: Some(64),
            ways: Some(8),
            cache_id: None,
            cpus: cpus.to_vec(),
        }
    }

    #[test]
    fn summary_counts_instances_and_sharing() {
        let all = [
            inst(1, "Data", 32, &[0]),
            inst(1, "Data", 32, &[1]),
            inst(2, "Unified", 1024, &[0]),
            inst(2, "Unified", 2048, &[1]),
            inst(3, "Unified", 8192, &[0, 1]),
        ];
        let levels = summarize_levels(&all);
        assert_eq!(levels.len(), 3);
        assert_eq!((levels[0].instances, levels[0].cpus_per_instance), (2, 1));
        assert_eq!(levels[1].size_bytes, 2048 << 10);
        assert_eq!(levels[1].total_size_bytes, 3072 << 10);
        assert_eq!(levels[2].cpus_per_instance, 2);
    }

    #[test]
    fn summary_saturates_on_absurd_sizes() {
        // Found by fuzzing: a `size` of 18446744073709551615 next to a real
        // 48K instance overflowed the total (a panic in debug builds).
        let mut huge = inst(1, "Data", 0, &[0]);
        huge.size_bytes = u64::MAX;
        let levels = summarize_levels(&[huge, inst(1, "Data", 48, &[1])]);
        assert_eq!(levels[0].size_bytes, u64::MAX);
        assert_eq!(levels[0].total_size_bytes, u64::MAX);
        assert_eq!(levels[0].instances, 2);
    }

    #[test]
    fn llc_is_highest_data_level() {
        let no_l3 = [inst(1, "Instruction", 64, &[0]), inst(2, "Unified", 512, &[0, 1])];
        let llc = llc_instances(&no_l3);
        assert_eq!(llc.len(), 1);
        assert_eq!(llc[0].level, 2);
        assert!(llc_instances(&[inst(1, "Instruction", 64, &[0])]).is_empty());
        assert!(llc_instances(&[]).is_empty());
    }

    #[test]
    fn domains_get_a_node_only_when_unambiguous() {
        let all = [
            inst(3, "Unified", 8192, &[2, 3]),
            inst(3, "Unified", 8192, &[0, 1]),
        ];
        let domains = build_domains(&all, |cpu| Some(if cpu == 3 { 1 } else { 0 }));
        assert_eq!(domains[0].cpus, vec![0, 1]);
        assert_eq!(domains[0].node, Some(0));
        assert_eq!(domains[1].index, 1);
        assert_eq!(domains[1].node, None);
        assert_eq!(build_domains(&all, |_| None)[0].node, None);
    }
}
