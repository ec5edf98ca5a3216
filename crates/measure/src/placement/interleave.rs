//! Buffers spread over several nodes, and the count of where their pages went.
//!
//! Even shares use the kernel's own page-by-page interleave (MPOL_INTERLEAVE). Uneven
//! shares are laid out here: the buffer is cut into blocks, and runs of blocks are
//! bound (MPOL_BIND) to the nodes in turn, `weight` blocks each. Linux 6.9 has a
//! weighted interleave too, but it takes its weights from one system-wide table in
//! /sys that only root can write and that every process on the machine shares, so a
//! measurement does not change it.

use memfabric_model::{HugePages, Interleave, InterleaveShares, Placement};

use super::{tally, unchecked, PlaceError};
use crate::sys::{self, Buffer, MapError};

/// Pages asked about per buffer: all of them up to 1 GiB of 4 KiB pages.
const MAX_COUNTED_PAGES: usize = 1 << 18;

/// The most runs a weighted buffer is cut into: each is a mapping of its own to the
/// kernel (vm.max_map_count is 65530 by default), and a bandwidth test maps one
/// buffer per thread.
const MAX_RUNS: usize = 256;

/// One run of a weighted layout: `len` bytes from `offset` bound to `nodes[node]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub offset: usize,
    pub len: usize,
    pub node: usize,
}

/// The block size and runs that lay `len` bytes out in `weights` turns. Blocks are
/// whole `unit`s (a page, or 2 MiB under THP so a huge page never straddles two
/// nodes) and as small as [`MAX_RUNS`] allows.
pub fn weighted_runs(len: usize, unit: usize, weights: &[u32]) -> (usize, Vec<Run>) {
    let round_blocks: usize = weights.iter().map(|&w| w as usize).sum::<usize>().max(1);
    let nodes_per_round = weights.iter().filter(|&&w| w > 0).count().max(1);
    let rounds = (MAX_RUNS / nodes_per_round).max(1);
    let block = len
        .div_ceil(rounds * round_blocks)
        .next_multiple_of(unit)
        .max(unit);
    let mut runs = Vec::new();
    let mut offset = 0;
    'fill: loop {
        for (node, &w) in weights.iter().enumerate() {
            if offset >= len {
                break 'fill;
            }
            if w == 0 {
                continue;
            }
            let run = (w as usize * block).min(len - offset);
            runs.push(Run {
                offset,
                len: run,
                node,
            });
            offset += run;
        }
    }
    (block, runs)
}

/// Maps `size_bytes` spread over `spec`'s nodes, touches every page from the calling
/// (pinned) thread, and counts where the pages went.
pub fn allocate(
    size_bytes: usize,
    spec: &Interleave,
    huge: HugePages,
    affinity: Vec<u32>,
) -> Result<(Buffer, Placement), PlaceError> {
    let mut buf = Buffer::map(size_bytes, huge)?;
    let unit = match huge {
        HugePages::Thp => 2 << 20,
        _ => buf.page_size(),
    };
    let placed = if spec.is_even() {
        buf.interleave(&spec.nodes)
            .map(|()| ("mbind(MPOL_INTERLEAVE) before first touch".to_string(), unit))
    } else {
        let (block, runs) = weighted_runs(buf.len(), unit, &spec.weights);
        runs.iter()
            .try_for_each(|r| buf.bind_range(r.offset, r.len, spec.nodes[r.node]))
            .map(|()| {
                let method = format!(
                    "mbind(MPOL_BIND) of {} runs of {}-byte blocks in weighted turns before first touch",
                    runs.len(),
                    block
                );
                (method, block)
            })
    };
    // A kernel without NUMA (or qemu-user) has no mbind: one node, nothing to spread.
    let (method, unit_bytes, bound) = match placed {
        Ok((method, unit_bytes)) => (method, unit_bytes, true),
        Err(e) if no_numa(&e) && spec.nodes == [0] => ("no NUMA support: one node".to_string(), unit, false),
        Err(e) if no_numa(&e) => {
            let nodes: Vec<String> = spec.nodes.iter().map(u32::to_string).collect();
            return Err(PlaceError::NoNuma(nodes.join(",")));
        }
        Err(e) => return Err(e.into()),
    };
    let step = buf.page_size();
    for page in buf.as_mut_slice().chunks_mut(step) {
        page[0] = 0;
    }
    let placement = count(&buf, spec, &method, unit_bytes as u64, affinity, bound);
    Ok((buf, placement))
}

fn no_numa(e: &MapError) -> bool {
    match e {
        MapError::Mbind { source, .. } | MapError::Interleave { source, .. } => {
            source.raw_os_error() == Some(libc::ENOSYS)
        }
        _ => false,
    }
}

fn count(
    buf: &Buffer,
    spec: &Interleave,
    method: &str,
    unit_bytes: u64,
    affinity: Vec<u32>,
    bound: bool,
) -> Placement {
    let pages = buf.window_pages(MAX_COUNTED_PAGES);
    let total = (buf.len() / buf.page_size()) as u64;
    let windows = if pages.len() as u64 == total { 1 } else { 16 };
    let mut placement = unchecked(buf, spec.nodes[0], pages.len(), affinity);
    let status = match sys::page_nodes(&pages) {
        Ok(status) => status,
        // No NUMA support: every page is on the one node.
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) && !bound => vec![0; pages.len()],
        Err(e) => {
            placement.method = format!("move_pages failed: {e}");
            return placement;
        }
    };
    let per_node: Vec<u64> = spec
        .nodes
        .iter()
        .map(|&n| status.iter().filter(|&&s| s == n as i32).count() as u64)
        .collect();
    // Pages outside the set are "elsewhere"; the set's own are counted as on node.
    let outside: Vec<i32> = status
        .iter()
        .copied()
        .filter(|&s| s < 0 || !spec.nodes.contains(&(s as u32)))
        .collect();
    tally(&mut placement, &outside);
    placement.pages_on_node = per_node.iter().sum();
    let shares = InterleaveShares::of(
        spec,
        method,
        unit_bytes,
        per_node,
        pages.len() as u64,
        buf.page_size() as u64,
        windows,
    );
    placement.verified = outside.is_empty() && !pages.is_empty() && shares.within_tolerance();
    placement.method = format!(
        "{method}; move_pages query of {} of {} pages",
        placement.pages_sampled, placement.pages_total
    );
    placement.interleave = Some(shares);
    placement
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::placement::pin;

    #[test]
    fn weighted_runs_cover_the_buffer_in_turns() {
        let (block, runs) = weighted_runs(1 << 20, 4096, &[3, 1]);
        assert_eq!(block % 4096, 0);
        assert_eq!(runs.iter().map(|r| r.len).sum::<usize>(), 1 << 20);
        assert!(runs.len() <= MAX_RUNS);
        assert_eq!((runs[0].node, runs[0].len), (0, 3 * block));
        assert_eq!((runs[1].node, runs[1].len), (1, block));
        assert!(runs.windows(2).all(|w| w[0].offset + w[0].len == w[1].offset));
        // A buffer smaller than one round still gets the first node's share first.
        let (_, tiny) = weighted_runs(8192, 4096, &[3, 1]);
        assert_eq!(
            tiny,
            vec![Run {
                offset: 0,
                len: 8192,
                node: 0
            }]
        );
        // Huge pages: blocks are whole 2 MiB units.
        let (block, _) = weighted_runs(64 << 20, 2 << 20, &[1, 2]);
        assert_eq!(block % (2 << 20), 0);
    }

    #[test]
    fn even_interleave_over_the_one_node_lands_there_and_is_counted() {
        let _turn = crate::measuring();
        let cpu = sys::current_affinity().unwrap()[0];
        let affinity = pin(cpu).unwrap();
        let (_, p) = allocate(1 << 20, &Interleave::even(vec![0]), HugePages::Off, affinity).unwrap();
        assert!(p.verified, "{p:?}");
        let shares = p.interleave.unwrap();
        assert_eq!(shares.pages_per_node, vec![256]);
        // qemu-user (the aarch64 tests) has no mbind: one node, nothing spread.
        assert!(
            shares.method.contains("MPOL_INTERLEAVE") || shares.method.starts_with("no NUMA support"),
            "{}",
            shares.method
        );
    }

    #[test]
    fn a_weighted_set_naming_a_node_without_memory_is_refused_by_the_kernel() {
        let _turn = crate::measuring();
        let spec = Interleave {
            nodes: vec![0, 63],
            weights: vec![1, 2],
        };
        let cpu = sys::current_affinity().unwrap()[0];
        let affinity = pin(cpu).unwrap();
        let err = allocate(1 << 20, &spec, HugePages::Off, affinity)
            .err()
            .expect("node 63 has no memory");
        assert!(err.to_string().contains("63"), "{err}");
    }
}
