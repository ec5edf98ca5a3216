//! The plan of `bandwidth --concurrent`: which streams run together, each on its own
//! CPU node's CPUs, refused here when the machine cannot run the pattern.

use memfabric_model::{ConcurrentPattern, ConcurrentStreamSpec, HugePages, Mix};
use memfabric_topo::format_cpulist;

use crate::bandwidth::KernelOptions;
use crate::concurrent::ConcurrentPlan;
use crate::kernels::Isa;
use crate::plan::{check_kernel, Machine, PlanError, Selection};

pub struct ConcurrentOptions {
    pub pattern: ConcurrentPattern,
    pub mix: Mix,
    /// Threads per stream, on its node's CPUs in order (default: every allowed CPU).
    pub threads: Option<usize>,
    pub array_bytes_per_thread: Option<u64>,
    pub huge_pages: HugePages,
    pub samples: usize,
    pub isa: Isa,
}

pub fn concurrent_plan(
    m: &Machine,
    sel: &Selection,
    opt: &ConcurrentOptions,
) -> Result<ConcurrentPlan, PlanError> {
    check_kernel(opt.isa, &[opt.mix], opt.samples)?;
    if sel.matrix || sel.interleave.is_some() {
        return Err(PlanError::Conflict(
            "--concurrent chooses each stream's memory itself: it takes neither --matrix nor --interleave"
                .into(),
        ));
    }
    let cpu_nodes = m.cpu_nodes(sel)?;
    let memory = m.memory_nodes(sel.mem_nodes.as_deref())?;
    let pairs = streams(opt.pattern, &cpu_nodes, &memory, sel.cpu_nodes.is_some())?;
    let mut specs = Vec::new();
    for (cpu_node, mem_node) in pairs {
        m.check_mem_node(mem_node)?;
        let mut cpus = m.allowed_cpus_of(cpu_node)?;
        if let Some(t) = opt.threads {
            if t == 0 || t > cpus.len() {
                return Err(PlanError::TooManyThreads {
                    threads: t,
                    node: cpu_node,
                    available: cpus.len(),
                    cpus: format_cpulist(&cpus),
                });
            }
            cpus.truncate(t);
        }
        specs.push(ConcurrentStreamSpec {
            cpu_node,
            mem_node,
            cpus,
        });
    }
    let threads: usize = specs.iter().map(|s| s.cpus.len()).sum();
    let array_bytes = m.array_bytes(opt.array_bytes_per_thread, threads);
    for node in memory.iter().copied() {
        let on_node: u64 = specs
            .iter()
            .filter(|s| s.mem_node == node)
            .map(|s| s.cpus.len() as u64)
            .sum();
        if on_node > 0 {
            m.check_fits(node, on_node * array_bytes * opt.mix.arrays(), opt.huge_pages)?;
        }
    }
    let sockets = specs
        .iter()
        .map(|s| (m.socket_of_node(s.cpu_node), m.socket_of_node(s.mem_node)))
        .collect();
    Ok(ConcurrentPlan {
        pattern: opt.pattern,
        mix: opt.mix,
        streams: specs,
        sockets,
        kernel: KernelOptions {
            isa: opt.isa,
            array_bytes,
            huge_pages: opt.huge_pages,
            samples: opt.samples,
        },
    })
}

/// (CPU node, memory node) of each stream of the pattern. `named`: the user gave the
/// CPU nodes (pairs then takes exactly those two).
pub fn streams(
    pattern: ConcurrentPattern,
    cpu_nodes: &[u32],
    memory: &[u32],
    named: bool,
) -> Result<Vec<(u32, u32)>, PlanError> {
    let refuse = |m: String| Err(PlanError::BadValue(m));
    match pattern {
        ConcurrentPattern::Pairs => {
            let two: Vec<u32> = cpu_nodes.iter().copied().filter(|n| memory.contains(n)).collect();
            match two.as_slice() {
                [a, b] => Ok(vec![(*a, *b), (*b, *a)]),
                [a, b, ..] if !named => Ok(vec![(*a, *b), (*b, *a)]),
                _ => refuse(format!(
                    "--concurrent pairs needs two CPU nodes that have memory; {} {} ({})",
                    if named {
                        "--cpu-nodes names"
                    } else {
                        "this machine has"
                    },
                    two.len(),
                    format_cpulist(&two),
                )),
            }
        }
        ConcurrentPattern::AllRemote => {
            let mut out = Vec::new();
            for &c in cpu_nodes {
                // The next memory node after c, wrapping around: each node is read by
                // one other node when CPU and memory nodes are the same set.
                let next = memory
                    .iter()
                    .copied()
                    .filter(|&n| n != c)
                    .min_by_key(|&n| (n <= c, n));
                match next {
                    Some(n) => out.push((c, n)),
                    None => {
                        return refuse(format!(
                            "--concurrent all-remote needs a node with memory other than node {c}; memory nodes: {}",
                            format_cpulist(memory)
                        ))
                    }
                }
            }
            Ok(out)
        }
        ConcurrentPattern::AllLocal => {
            let mut out = Vec::new();
            for &c in cpu_nodes {
                if !memory.contains(&c) {
                    return refuse(format!(
                        "--concurrent all-local: node {c} has CPUs but no memory of its own among {}",
                        format_cpulist(memory)
                    ));
                }
                out.push((c, c));
            }
            Ok(out)
        }
    }
}

impl Machine<'_> {
    /// The package (socket) of a node's CPUs; None for a CPU-less node or one whose
    /// CPUs span packages.
    pub(crate) fn socket_of_node(&self, node: u32) -> Option<u32> {
        let n = self.topo.node(node)?;
        let mut packages: Vec<u32> = n
            .cpus
            .iter()
            .filter_map(|&c| self.topo.cpu(c))
            .map(|c| c.package)
            .collect();
        packages.dedup();
        match packages.as_slice() {
            [p] => Some(*p),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConcurrentPattern::*;

    #[test]
    fn patterns_on_the_rig_guest() {
        // Two CPU nodes, a third with memory only (the VM rig's guest).
        let (cpu, mem) = ([0, 1], [0, 1, 2]);
        assert_eq!(streams(Pairs, &cpu, &mem, false).unwrap(), vec![(0, 1), (1, 0)]);
        assert_eq!(
            streams(AllRemote, &cpu, &mem, false).unwrap(),
            vec![(0, 1), (1, 2)]
        );
        assert_eq!(
            streams(AllLocal, &cpu, &mem, false).unwrap(),
            vec![(0, 0), (1, 1)]
        );
    }

    #[test]
    fn all_remote_wraps_around_and_never_reads_its_own_node() {
        let nodes = [0, 1, 2, 3];
        let s = streams(AllRemote, &nodes, &nodes, false).unwrap();
        assert_eq!(s, vec![(0, 1), (1, 2), (2, 3), (3, 0)]);
        let mut read: Vec<u32> = s.iter().map(|p| p.1).collect();
        read.sort_unstable();
        assert_eq!(read, nodes);
    }

    #[test]
    fn one_node_machines_are_refused_in_one_line() {
        let e = streams(AllRemote, &[0], &[0], false).unwrap_err().to_string();
        assert!(e.contains("needs a node with memory other than node 0"), "{e}");
        let e = streams(Pairs, &[0], &[0], false).unwrap_err().to_string();
        assert!(e.contains("needs two CPU nodes"), "{e}");
        assert!(!e.contains('\n'));
        let e = streams(Pairs, &[0, 1, 2], &[0, 1, 2], true)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--cpu-nodes names 3 (0-2)"), "{e}");
    }
}
