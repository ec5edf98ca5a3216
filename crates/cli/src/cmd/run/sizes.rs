//! The suite's buffer sizes held past this machine's caches. A step's sizes are
//! what a small machine needs; on one whose last-level cache is larger, a fixed
//! `--size` would measure the cache and call it memory. Each size is raised, never
//! lowered, to what the design asks of a memory figure: a chase of at least 4x the
//! last-level cache, and a bandwidth working set (threads x arrays) of at least
//! twice the cache its CPUs share.

use memfabric_model::{format_size, parse_size};
use memfabric_topo::Topology;

/// The largest last-level cache a node's CPUs share, and the fewest CPUs of a node.
fn node_cache(topo: &Topology) -> (u64, u64) {
    let nodes: Vec<&memfabric_topo::Node> = topo.nodes.iter().filter(|n| !n.cpu_less).collect();
    let llc = nodes
        .iter()
        .map(|n| memfabric_analysis::caches::llc_of(topo, &n.cpus))
        .max()
        .unwrap_or(0);
    let cpus = nodes.iter().map(|n| n.cpus.len() as u64).min().unwrap_or(1);
    (llc, cpus.max(1))
}

fn mib(bytes: u64) -> u64 {
    bytes.next_multiple_of(1 << 20)
}

/// The step's command line with each size at least what measures memory here.
pub fn past_caches(line: &str, topo: &Topology) -> String {
    let (llc, cpus) = node_cache(topo);
    if llc == 0 {
        return line.to_string();
    }
    let command = line.split_whitespace().next().unwrap_or("");
    let chase = mib(4 * topo.total_llc_bytes());
    // Bandwidth: one thread per CPU of a node, at least one array each. Loaded
    // latency: every CPU but the chasing one loads.
    let threads = if command == "loaded-latency" {
        (cpus - 1).max(1)
    } else {
        cpus
    };
    let per_thread = mib((2 * llc).div_ceil(threads));
    let need = |flag: &str| match (command, flag) {
        ("latency" | "stream", "--size") | (_, "--chase-size") | ("sweep", "--max") => Some(chase),
        ("bandwidth" | "loaded-latency", "--size") => Some(per_thread),
        _ => None,
    };
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out: Vec<String> = Vec::with_capacity(words.len());
    for (i, w) in words.iter().enumerate() {
        let flag = i.checked_sub(1).map_or("", |p| words[p]);
        let raised = need(flag)
            .zip(parse_size(w).ok())
            .and_then(|(need, given)| (need > given).then_some(need));
        out.push(raised.map_or_else(|| w.to_string(), format_size));
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This development machine (one node, 2 CPUs, one L3) with an L3 of `llc_mib`.
    fn machine(llc_mib: u64) -> Topology {
        let sys = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/this-machine/sys"
        );
        let mut t = Topology::read(std::path::Path::new(sys)).unwrap();
        for d in &mut t.l3_domains {
            d.size_bytes = llc_mib << 20;
        }
        t
    }

    #[test]
    fn sizes_are_raised_past_a_large_cache_and_kept_on_a_small_one() {
        let big = machine(256);
        assert_eq!(
            past_caches("bandwidth --mix all --size 16M --samples 3", &big),
            "bandwidth --mix all --size 256M --samples 3"
        );
        assert_eq!(
            past_caches("loaded-latency --chase-size 64M --size 16M --points 12", &big),
            "loaded-latency --chase-size 1G --size 512M --points 12"
        );
        assert_eq!(
            past_caches("sweep --max 64M --points-per-octave 2", &big),
            "sweep --max 1G --points-per-octave 2"
        );
        let small = machine(8);
        let line = "latency --matrix --size 64M --samples 5 --sample-ms 10";
        assert_eq!(past_caches(line, &small), line);
    }
}
