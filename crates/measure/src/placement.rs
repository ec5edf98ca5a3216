//! Memory bound to a node or interleaved over several, first-touched by the measuring
//! thread, then checked page by page: placement is verified, never assumed.

use memfabric_model::{HugePages, Interleave, NodePages, Placement};
use thiserror::Error;

use crate::sys::{self, Buffer, MapError};

pub mod interleave;

/// Pages asked about per buffer: enough to catch a partial spill, cheap for any size.
const MAX_SAMPLED_PAGES: usize = 4096;

#[derive(Debug, Error)]
pub enum PlaceError {
    #[error(transparent)]
    Map(#[from] MapError),
    #[error("could not pin the measuring thread to CPU {cpu}: {source}")]
    Pin { cpu: u32, source: std::io::Error },
    #[error("the measuring thread asked for CPU {cpu} but its affinity reads back as {got:?}")]
    Affinity { cpu: u32, got: Vec<u32> },
    #[error(
        "this kernel has no NUMA support (mbind answers ENOSYS): memory cannot be spread over nodes {0}"
    )]
    NoNuma(String),
}

/// Where a buffer's pages are to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Node(u32),
    Interleave(Interleave),
}

impl Target {
    /// The interleave set when one is given, else `node`: what a plan's
    /// `interleave` option means for one of its buffers.
    pub fn of(interleave: Option<&Interleave>, node: u32) -> Target {
        match interleave {
            Some(i) => Target::Interleave(i.clone()),
            None => Target::Node(node),
        }
    }

    /// The node a single-node target names, or an interleave set's first node.
    pub fn first_node(&self) -> u32 {
        match self {
            Target::Node(n) => *n,
            Target::Interleave(i) => i.nodes[0],
        }
    }

    /// "node 1" or "interleave 0,1".
    pub fn label(&self) -> String {
        match self {
            Target::Node(n) => format!("node {n}"),
            Target::Interleave(i) => format!("interleave {}", i.label()),
        }
    }
}

/// Pins the calling thread to `cpu` and checks that it stuck. Returns the mask read back.
pub fn pin(cpu: u32) -> Result<Vec<u32>, PlaceError> {
    let got = sys::pin_current_thread(cpu).map_err(|source| PlaceError::Pin { cpu, source })?;
    if got != [cpu] {
        return Err(PlaceError::Affinity { cpu, got });
    }
    Ok(got)
}

/// Maps `size_bytes` bound to `node` and touches every page from the calling thread,
/// which the caller has already pinned (its affinity is passed in to be recorded).
pub fn allocate_on_node(
    size_bytes: usize,
    node: u32,
    huge: HugePages,
    affinity: Vec<u32>,
) -> Result<(Buffer, Placement), PlaceError> {
    let mut buf = Buffer::map(size_bytes, huge)?;
    let bound = match buf.bind(node) {
        Ok(()) => true,
        // A kernel built without NUMA has no mbind: one node, nothing to bind.
        Err(MapError::Mbind { source, .. }) if source.raw_os_error() == Some(libc::ENOSYS) => false,
        Err(e) => return Err(e.into()),
    };
    let step = buf.page_size();
    for page in buf.as_mut_slice().chunks_mut(step) {
        page[0] = 0;
    }
    let placement = verify(&buf, node, bound, affinity);
    Ok((buf, placement))
}

fn verify(buf: &Buffer, node: u32, bound: bool, affinity: Vec<u32>) -> Placement {
    let pages = buf.sample_pages(MAX_SAMPLED_PAGES);
    let mut placement = unchecked(buf, node, pages.len(), affinity);
    match sys::page_nodes(&pages) {
        Ok(status) => {
            tally(&mut placement, &status);
            placement.method = format!(
                "mbind(MPOL_BIND) before first touch; move_pages query of {} of {} pages",
                placement.pages_sampled, placement.pages_total
            );
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) && !bound && node == 0 => {
            placement.verified = true;
            placement.method = "kernel without NUMA support: one memory node, nothing to verify".into();
        }
        Err(e) => placement.method = format!("move_pages failed: {e}"),
    }
    placement
}

/// A placement of `buf` before its pages are counted: nothing found yet, not verified.
pub(crate) fn unchecked(buf: &Buffer, requested_node: u32, sampled: usize, affinity: Vec<u32>) -> Placement {
    Placement {
        requested_node,
        page_size_bytes: buf.page_size() as u64,
        pages_total: (buf.len() / buf.page_size()) as u64,
        pages_sampled: sampled as u64,
        pages_on_node: 0,
        pages_elsewhere: Vec::new(),
        thread_affinity: affinity,
        verified: false,
        method: String::new(),
        interleave: None,
    }
}

pub(crate) fn tally(placement: &mut Placement, status: &[i32]) {
    let node = placement.requested_node as i32;
    for &s in status {
        if s == node {
            placement.pages_on_node += 1;
        } else if let Some(np) = placement.pages_elsewhere.iter_mut().find(|np| np.node == s) {
            np.pages += 1;
        } else {
            placement.pages_elsewhere.push(NodePages { node: s, pages: 1 });
        }
    }
    placement.pages_elsewhere.sort_by_key(|np| np.node);
    placement.verified = !status.is_empty() && placement.pages_on_node == status.len() as u64;
}

/// Maps and first-touches a buffer for `target`, with a placement that cannot be
/// verified an error: the buffer is usable only where its pages are where they were
/// asked to be (for an interleave, in the shares asked for).
pub fn allocate_verified(
    size_bytes: usize,
    target: &Target,
    huge: HugePages,
    affinity: Vec<u32>,
) -> Result<(Buffer, Placement), String> {
    let (buf, placement) = match target {
        Target::Node(node) => allocate_on_node(size_bytes, *node, huge, affinity),
        Target::Interleave(spec) => interleave::allocate(size_bytes, spec, huge, affinity),
    }
    .map_err(|e| e.to_string())?;
    if !placement.verified {
        return Err(match &placement.interleave {
            Some(shares) if placement.pages_elsewhere.is_empty() => shares.describe_miss(),
            _ => describe_mismatch(&placement),
        });
    }
    Ok((buf, placement))
}

/// One line saying where pages went, for an error message.
pub fn describe_mismatch(p: &Placement) -> String {
    let asked = match &p.interleave {
        Some(i) => format!(
            "interleave over nodes {}",
            i.nodes.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
        ),
        None => format!("node {}", p.requested_node),
    };
    let elsewhere: Vec<String> = p
        .pages_elsewhere
        .iter()
        .map(|np| match np.node {
            n if n >= 0 => format!("{} on node {n}", np.pages),
            n => format!("{} not resident (errno {})", np.pages, -n),
        })
        .collect();
    format!(
        "placement check failed for {asked}: of {} sampled pages {} were on {}, {}{}",
        p.pages_sampled,
        p.pages_on_node,
        if p.interleave.is_some() {
            "those nodes".to_string()
        } else {
            format!("node {}", p.requested_node)
        },
        if elsewhere.is_empty() {
            "none elsewhere".into()
        } else {
            elsewhere.join(", ")
        },
        if p.method.starts_with("move_pages failed") {
            format!(" ({})", p.method)
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blank(node: u32) -> Placement {
        Placement {
            requested_node: node,
            page_size_bytes: 4096,
            pages_total: 8,
            pages_sampled: 4,
            pages_on_node: 0,
            pages_elsewhere: vec![],
            thread_affinity: vec![0],
            verified: false,
            method: String::new(),
            interleave: None,
        }
    }

    #[test]
    fn tally_counts_and_flags_spills() {
        let mut p = blank(1);
        tally(&mut p, &[1, 1, 0, -14]);
        assert_eq!(p.pages_on_node, 2);
        assert!(!p.verified);
        assert_eq!(
            p.pages_elsewhere,
            vec![NodePages { node: -14, pages: 1 }, NodePages { node: 0, pages: 1 }]
        );
        let msg = describe_mismatch(&p);
        assert!(msg.contains("1 on node 0") && msg.contains("errno 14"), "{msg}");
        let mut ok = blank(0);
        tally(&mut ok, &[0, 0]);
        assert!(ok.verified);
    }

    #[test]
    fn real_buffer_lands_on_node_zero() {
        let _turn = crate::measuring();
        let cpu = sys::current_affinity().unwrap()[0];
        let affinity = pin(cpu).unwrap();
        let (buf, p) = allocate_on_node(1 << 20, 0, HugePages::Off, affinity).unwrap();
        assert_eq!(buf.len(), 1 << 20);
        assert!(p.verified, "{p:?}");
        assert_eq!(p.pages_sampled, p.pages_total);
    }
}
