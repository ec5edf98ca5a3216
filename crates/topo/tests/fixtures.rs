//! Reads every sysfs fixture under `tests/fixtures/` and checks both the
//! facts each one was built to show and, by snapshot, everything else.
//!
//! Fixtures are regenerated with `tests/fixtures/generate.py` (synthetic)
//! or `tests/fixtures/capture.sh` (real machines); snapshots are refreshed
//! with `INSTA_UPDATE=always cargo test -p memfabric-topo`.

#[path = "fixtures/fuzz.rs"]
mod fuzz;
/// SMBIOS memory devices: raw type 17 entries and dmidecode text.
#[path = "smbios/mod.rs"]
mod smbios;

use std::path::PathBuf;

use memfabric_topo::{parse_cpulist, Topology};

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn fixture(name: &str) -> Topology {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/"))
        .join(name)
        .join("sys");
    Topology::read(&root).unwrap_or_else(|e| panic!("reading fixture {name}: {e}"))
}

fn ids(list: &str) -> Vec<u32> {
    parse_cpulist(list).unwrap()
}

/// Invariants every topology must satisfy, whatever the machine.
fn check_consistency(topo: &Topology) {
    let all: Vec<u32> = topo.cpus.iter().map(|c| c.id).collect();
    assert!(all.windows(2).all(|w| w[0] < w[1]), "cpus sorted by id");
    let mut in_packages: Vec<u32> = topo.packages.iter().flat_map(|p| p.cpus.clone()).collect();
    in_packages.sort_unstable();
    assert_eq!(in_packages, all, "packages partition the CPUs");
    let mut in_dies: Vec<u32> = topo.dies.iter().flat_map(|d| d.cpus.clone()).collect();
    in_dies.sort_unstable();
    assert_eq!(in_dies, all, "dies partition the CPUs");
    for (i, domain) in topo.l3_domains.iter().enumerate() {
        assert_eq!(domain.index, i);
        for &cpu in &domain.cpus {
            assert_eq!(topo.cpu(cpu).unwrap().l3_domain, Some(i));
        }
    }
    for node in &topo.nodes {
        assert_eq!(node.distances.len(), topo.nodes.len());
        assert_eq!(node.cpu_less, node.cpus.is_empty());
        assert_eq!(topo.distance(node.id, node.id), Some(10));
        for &cpu in &node.cpus {
            assert_eq!(topo.cpu(cpu).unwrap().node, Some(node.id));
        }
    }
    for cpu in &topo.cpus {
        assert!(cpu.smt_siblings.contains(&cpu.id));
    }
    let json = serde_json::to_string(topo).unwrap();
    let back: Topology = serde_json::from_str(&json).unwrap();
    assert_eq!(&back, topo, "serde round trip");
}

#[test]
fn this_machine() {
    let topo = fixture("this-machine");
    check_consistency(&topo);
    assert_eq!(topo.cpus.len(), 2);
    assert_eq!(topo.packages.len(), 1);
    assert_eq!(topo.nodes.len(), 1);
    assert_eq!(topo.cpu_nodes(), vec![0]);
    assert_eq!(topo.memory_nodes(), vec![0]);
    assert_eq!(topo.l3_domains.len(), 1);
    assert_eq!(topo.l3_domains[0].cpus, vec![0, 1]);
    assert_eq!(topo.l3_domains[0].node, Some(0));
    assert_eq!(topo.total_llc_bytes(), 491520 * 1024);
    assert_eq!(topo.caches.len(), 4);
    assert_eq!(topo.smt_active, Some(false));
    assert!(topo.hmat.is_empty());
    assert_eq!(topo.huge_pages.thp_enabled.as_deref(), Some("madvise"));
    insta::assert_json_snapshot!("this-machine", topo);
}

#[test]
fn epyc7601_2s() {
    let topo = fixture("epyc7601-2s");
    check_consistency(&topo);
    assert_eq!(topo.cpus.len(), 128);
    assert_eq!(topo.packages.len(), 2);
    assert_eq!(topo.packages[1].cpus, ids("32-63,96-127"));
    assert_eq!(topo.packages[1].dies, vec![4, 5, 6, 7]);
    assert_eq!(topo.dies.len(), 8);
    assert_eq!(topo.nodes.len(), 8);
    assert_eq!(topo.node(3).unwrap().cpus, ids("24-31,88-95"));
    assert_eq!(topo.distance(0, 4), Some(32));
    assert_eq!(topo.nodes[0].distances[4], 32);
    assert_eq!(topo.distance(5, 6), Some(16));
    assert_eq!(topo.cpu(0).unwrap().smt_siblings, vec![0, 64]);
    assert_eq!(topo.cpu(100).unwrap().node, Some(4));
    assert_eq!(topo.smt_active, Some(true));

    assert_eq!(topo.l3_domains.len(), 16);
    assert!(topo
        .l3_domains
        .iter()
        .all(|d| d.size_bytes == 8 * MIB && d.cpus.len() == 8));
    assert_eq!(topo.l3_domains[1].cpus, ids("4-7,68-71"));
    assert_eq!(topo.l3_domains[1].node, Some(0));
    assert_eq!(topo.l3_domains[15].cache_id, Some(15));
    assert_eq!(topo.cpu(68).unwrap().l3_domain, Some(1));
    assert_eq!(topo.total_llc_bytes(), 128 * MIB);

    let l2 = topo.caches.iter().find(|c| c.level == 2).unwrap();
    assert_eq!(
        (l2.size_bytes, l2.instances, l2.cpus_per_instance),
        (512 * 1024, 64, 2)
    );
    let l1i = topo.caches.iter().find(|c| c.kind == "Instruction").unwrap();
    assert_eq!((l1i.size_bytes, l1i.ways), (64 * 1024, Some(4)));

    for node in &topo.nodes {
        assert!(node.mem_total_bytes > 31 * GIB && node.mem_total_bytes < 32 * GIB);
        assert_eq!(node.hugepages.len(), 2);
    }
    let pools = &topo.huge_pages.pools;
    assert_eq!(
        (pools[0].page_size_bytes, pools[0].total, pools[0].free),
        (2 * MIB, 1024, 1008)
    );
    assert_eq!((pools[1].page_size_bytes, pools[1].total), (GIB, 8));
    assert_eq!(topo.huge_pages.thp_defrag.as_deref(), Some("madvise"));
    assert!(topo.hmat.is_empty());
    insta::assert_json_snapshot!("epyc7601-2s", topo);
}

#[test]
fn snc_2s() {
    let topo = fixture("snc-2s");
    check_consistency(&topo);
    assert_eq!(topo.cpus.len(), 48);
    assert_eq!(topo.packages.len(), 2);
    assert_eq!(topo.dies.len(), 2);
    assert_eq!(topo.nodes.len(), 4);
    assert_eq!(topo.node(1).unwrap().cpus, ids("3-5,9-11,15-17,21-23"));
    assert_eq!(topo.nodes[0].distances, vec![10, 12, 21, 21]);
    assert_eq!(topo.smt_active, Some(false));
    assert_eq!(topo.cpu(30).unwrap().smt_siblings, vec![30]);
    assert_eq!(topo.cpu(30).unwrap().core, 8);

    assert_eq!(topo.l3_domains.len(), 2);
    for (package, domain) in topo.l3_domains.iter().enumerate() {
        assert_eq!(domain.cache_id, Some(package as u32));
        assert_eq!(domain.size_bytes, 36 * MIB);
        assert_eq!(domain.cpus.len(), 24);
        assert_eq!(domain.node, None, "an SNC L3 spans two nodes");
        let mut nodes: Vec<u32> = domain
            .cpus
            .iter()
            .filter_map(|&c| topo.cpu(c).unwrap().node)
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        assert_eq!(nodes.len(), 2);
    }

    assert_eq!(topo.hmat.len(), 8);
    for node in 0..4 {
        for class in 0..2u8 {
            let entry = &topo.hmat[(node * 2) as usize + class as usize];
            assert_eq!((entry.target_node, entry.access_class), (node, class));
            assert_eq!(entry.initiators, vec![node]);
            assert_eq!(entry.read_latency_ns, Some(80));
        }
    }
    insta::assert_json_snapshot!("snc-2s", topo);
}

#[test]
fn cxl_cpuless() {
    let topo = fixture("cxl-cpuless");
    check_consistency(&topo);
    assert_eq!(topo.cpus.len(), 8);
    assert_eq!(topo.cpu_nodes(), vec![0]);
    assert_eq!(topo.memory_nodes(), vec![0, 1]);
    let expander = topo.node(1).unwrap();
    assert!(expander.cpu_less);
    assert!(expander.cpus.is_empty());
    assert_eq!(expander.mem_total_bytes, 128 * GIB);
    assert_eq!(expander.distances, vec![20, 10]);
    assert!(topo.cpus.iter().all(|c| c.node == Some(0)));

    assert_eq!(topo.hmat.len(), 2);
    let local = &topo.hmat[0];
    assert_eq!((local.target_node, local.access_class), (0, 0));
    assert_eq!(local.initiators, vec![0]);
    assert_eq!(local.read_latency_ns, Some(100));
    assert_eq!(local.write_latency_ns, Some(110));
    let far = &topo.hmat[1];
    assert_eq!(far.target_node, 1);
    assert_eq!(far.initiators, vec![0]);
    assert_eq!(
        (far.read_latency_ns, far.write_latency_ns),
        (Some(250), Some(270))
    );
    assert_eq!(
        (far.read_bandwidth_mb_s, far.write_bandwidth_mb_s),
        (Some(30720), Some(25600))
    );
    assert!(far.read_bandwidth_mb_s < local.read_bandwidth_mb_s);
    insta::assert_json_snapshot!("cxl-cpuless", topo);
}

#[test]
fn missing_root_names_the_file() {
    let err = Topology::read(std::path::Path::new("/nonexistent-sysfs-root")).unwrap_err();
    let message = err.to_string();
    assert!(
        message.contains("/nonexistent-sysfs-root/devices/system/cpu/online"),
        "{message}"
    );
}

/// A scratch sysfs tree under the system temp dir, removed on drop.
struct ScratchTree(PathBuf);

impl ScratchTree {
    fn new(name: &str) -> Self {
        let root = std::env::temp_dir().join(format!("memfabric-topo-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        ScratchTree(root)
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.0.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

impl Drop for ScratchTree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The oldest, barest tree the reader accepts: no NUMA, no caches, no
/// die_id, no SMT control, no THP, no hugetlb.
fn bare_tree(name: &str) -> ScratchTree {
    let tree = ScratchTree::new(name);
    tree.write("devices/system/cpu/online", "0-1\n");
    for cpu in 0..2 {
        let dir = format!("devices/system/cpu/cpu{cpu}/topology");
        tree.write(&format!("{dir}/physical_package_id"), "0\n");
        tree.write(&format!("{dir}/core_id"), &format!("{cpu}\n"));
    }
    tree
}

#[test]
fn kernel_without_numa_is_one_node() {
    let tree = bare_tree("no-numa");
    let topo = Topology::read(&tree.0).unwrap();
    assert_eq!(topo.nodes.len(), 1);
    let node = &topo.nodes[0];
    assert_eq!(
        (node.id, node.cpus.clone(), node.mem_total_bytes),
        (0, vec![0, 1], 0)
    );
    assert_eq!(node.distances, vec![10]);
    assert!(topo
        .cpus
        .iter()
        .all(|c| c.node == Some(0) && c.die == 0 && c.l3_domain.is_none()));
    assert_eq!(topo.cpus[1].smt_siblings, vec![1]);
    assert!(topo.caches.is_empty() && topo.l3_domains.is_empty() && topo.hmat.is_empty());
    assert_eq!(topo.total_llc_bytes(), 0);
    assert_eq!(topo.smt_active, None);
    assert_eq!(topo.huge_pages, Default::default());
    assert_eq!(topo.cpu_nodes(), vec![0]);
    assert!(topo.memory_nodes().is_empty());
}

#[test]
fn offline_cpus_are_left_out() {
    let tree = bare_tree("offline");
    tree.write("devices/system/cpu/online", "0\n");
    tree.write("devices/system/cpu/cpu0/topology/thread_siblings_list", "0-1\n");
    let topo = Topology::read(&tree.0).unwrap();
    assert_eq!(topo.cpus.len(), 1);
    assert_eq!(topo.cpus[0].smt_siblings, vec![0]);
}

#[test]
fn errors_name_the_bad_file() {
    let tree = bare_tree("bad-distance");
    tree.write("devices/system/node/online", "0\n");
    tree.write("devices/system/node/node0/cpulist", "0-1\n");
    tree.write(
        "devices/system/node/node0/meminfo",
        "Node 0 MemTotal: 1024 kB\nNode 0 MemFree: 0 kB\n",
    );
    tree.write("devices/system/node/node0/distance", "10 20\n");
    let message = Topology::read(&tree.0).unwrap_err().to_string();
    assert!(
        message.contains("node0/distance") && message.contains("2 distances for 1"),
        "{message}"
    );

    tree.write("devices/system/node/node0/distance", "10\n");
    tree.write("devices/system/node/node0/cpulist", "0-x\n");
    let message = Topology::read(&tree.0).unwrap_err().to_string();
    assert!(
        message.contains("node0/cpulist") && message.contains("\"0-x\""),
        "{message}"
    );

    tree.write("devices/system/node/node0/cpulist", "0-1\n");
    tree.write("devices/system/cpu/cpu1/topology/core_id", "one\n");
    let message = Topology::read(&tree.0).unwrap_err().to_string();
    assert!(message.contains("cpu1/topology/core_id"), "{message}");
}

/// The reader must cope with whatever Linux the tests run on.
#[test]
fn live_sysfs_reads_when_present() {
    let root = std::path::Path::new("/sys");
    if !root.join("devices/system/cpu/online").exists() {
        return;
    }
    let topo = Topology::read(root).unwrap_or_else(|e| panic!("reading /sys: {e}"));
    check_consistency(&topo);
    assert!(!topo.cpus.is_empty());
}
