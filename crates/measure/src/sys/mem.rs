//! Anonymous memory mappings bound to a NUMA node.

use std::io;

use memfabric_model::HugePages;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum MapError {
    #[error("mmap of {size_bytes} bytes failed: {source}")]
    Mmap { size_bytes: u64, source: io::Error },
    #[error("mbind to node {node} failed: {source}")]
    Mbind { node: u32, source: io::Error },
    #[error("mbind(MPOL_INTERLEAVE) over nodes {nodes} failed: {source}")]
    Interleave { nodes: String, source: io::Error },
    #[error("madvise failed: {0}")]
    Madvise(io::Error),
}

const MPOL_BIND: libc::c_int = 2;
const MPOL_INTERLEAVE: libc::c_int = 3;
const MPOL_MF_STRICT: libc::c_uint = 1;
const MPOL_MF_MOVE: libc::c_uint = 2;
const MAP_HUGE_SHIFT: libc::c_int = 26;
const THP_ALIGN: usize = 2 << 20;
const NODEMASK_WORDS: usize = 16; // 1024 nodes, the kernel's usual MAX_NUMNODES ceiling

/// A page-aligned anonymous mapping, unmapped on drop.
pub struct Buffer {
    ptr: *mut u8,
    len: usize,
    page_size: usize,
}

// SAFETY: the mapping is owned by this value alone; moving it to another thread moves
// the only handle to it.
unsafe impl Send for Buffer {}

impl Buffer {
    /// Maps `len` bytes (rounded up to the page size) without touching them, so that a
    /// policy set next decides where first touch places them.
    pub fn map(len: usize, huge: HugePages) -> Result<Buffer, MapError> {
        let page_size = page_size_for(huge);
        let len = len.max(1).div_ceil(page_size) * page_size;
        // hugetlb mappings reserve their pages at mmap time (no MAP_NORESERVE), so an
        // empty pool fails here with ENOMEM instead of SIGBUS at first touch.
        let flags = libc::MAP_PRIVATE
            | libc::MAP_ANONYMOUS
            | match huge {
                HugePages::Huge2M => libc::MAP_HUGETLB | (21 << MAP_HUGE_SHIFT),
                HugePages::Huge1G => libc::MAP_HUGETLB | (30 << MAP_HUGE_SHIFT),
                HugePages::Off | HugePages::Thp => libc::MAP_NORESERVE,
            };
        // THP can only back 2 MiB-aligned ranges: map 2 MiB more and trim both ends.
        let slack = if huge == HugePages::Thp { THP_ALIGN } else { 0 };
        // SAFETY: an anonymous mapping at an address of the kernel's choosing aliases
        // nothing; the result is checked against MAP_FAILED.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len + slack,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(MapError::Mmap {
                size_bytes: len as u64,
                source: io::Error::last_os_error(),
            });
        }
        let ptr: *mut u8 = ptr.cast();
        let start = if slack > 0 {
            let aligned = (ptr as usize).next_multiple_of(THP_ALIGN) as *mut u8;
            let head = aligned as usize - ptr as usize;
            // SAFETY: both ranges lie inside the mapping just created and outside the
            // aligned [aligned, aligned + len) range this Buffer keeps.
            unsafe {
                if head > 0 {
                    libc::munmap(ptr.cast(), head);
                }
                if slack - head > 0 {
                    libc::munmap(aligned.add(len).cast(), slack - head);
                }
            }
            aligned
        } else {
            ptr
        };
        let buf = Buffer {
            ptr: start,
            len,
            page_size,
        };
        let advice = match huge {
            HugePages::Off => Some(libc::MADV_NOHUGEPAGE),
            HugePages::Thp => Some(libc::MADV_HUGEPAGE),
            _ => None,
        };
        if let Some(advice) = advice {
            // SAFETY: the range is exactly the mapping created above.
            if unsafe { libc::madvise(buf.ptr.cast(), buf.len, advice) } != 0 {
                return Err(MapError::Madvise(io::Error::last_os_error()));
            }
        }
        Ok(buf)
    }

    /// Binds the whole mapping to one node (MPOL_BIND, strict): pages are placed there
    /// at first touch or the touch fails, rather than silently spilling elsewhere.
    pub fn bind(&self, node: u32) -> Result<(), MapError> {
        self.bind_range(0, self.len, node)
    }

    /// Binds `len` bytes from `offset` (both multiples of the page size) to one node.
    pub fn bind_range(&self, offset: usize, len: usize, node: u32) -> Result<(), MapError> {
        assert!(offset + len <= self.len, "range outside the mapping");
        mbind(self.ptr.wrapping_add(offset), len, MPOL_BIND, &[node])
            .map_err(|source| MapError::Mbind { node, source })
    }

    /// Spreads the mapping over `nodes` one page at a time (MPOL_INTERLEAVE); the
    /// kernel picks each page's node from its offset at first touch. Not strict: a
    /// node that runs out of memory has its pages placed elsewhere, which is why the
    /// caller checks the shares afterwards.
    pub fn interleave(&self, nodes: &[u32]) -> Result<(), MapError> {
        mbind(self.ptr, self.len, MPOL_INTERLEAVE, nodes).map_err(|source| MapError::Interleave {
            nodes: nodes.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
            source,
        })
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is len bytes, readable and writable, and &mut self makes
        // this the only live reference to it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: as above, shared.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Addresses of up to `max_samples` pages in 16 runs of neighbouring pages spread
    /// over the buffer (every page when it has no more): an interleave check counts
    /// whole rounds of the rotation, which pages taken at a stride could alias with.
    pub fn window_pages(&self, max_samples: usize) -> Vec<*const u8> {
        const WINDOWS: usize = 16;
        let pages = self.len / self.page_size;
        let addr = |p: usize| self.ptr.wrapping_add(p * self.page_size) as *const u8;
        if pages <= max_samples {
            return (0..pages).map(addr).collect();
        }
        let per = max_samples / WINDOWS;
        let gap = pages / WINDOWS;
        (0..WINDOWS)
            .flat_map(|w| (w * gap..w * gap + per).map(addr))
            .collect()
    }

    /// Addresses of every `step`-th page, for a placement check that need not ask
    /// about every page of a large buffer.
    pub fn sample_pages(&self, max_samples: usize) -> Vec<*const u8> {
        let pages = self.len / self.page_size;
        let step = pages.div_ceil(max_samples.max(1)).max(1);
        (0..pages)
            .step_by(step)
            .map(|p| self.ptr.wrapping_add(p * self.page_size) as *const u8)
            .collect()
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: ptr/len are the mapping created in `map`, unmapped exactly once here.
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// mbind(2) over [ptr, ptr + len) with a node mask holding `nodes`.
fn mbind(ptr: *mut u8, len: usize, mode: libc::c_int, nodes: &[u32]) -> io::Result<()> {
    let mut mask = [0u64; NODEMASK_WORDS];
    for &node in nodes {
        let word = node as usize / 64;
        if word >= NODEMASK_WORDS {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        mask[word] |= 1 << (node % 64);
    }
    // SAFETY: the caller passes a range inside a mapping it owns; the mask holds
    // NODEMASK_WORDS words and maxnode tells the kernel so (it reads maxnode - 1 bits).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            ptr,
            len as libc::c_ulong,
            mode,
            mask.as_ptr(),
            (NODEMASK_WORDS * 64 + 1) as libc::c_ulong,
            MPOL_MF_STRICT | MPOL_MF_MOVE,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The page size a mapping of this kind is made of (THP pages are still 4 KiB pages
/// to the mapping; the kernel may back them with 2 MiB ones).
pub fn page_size_for(huge: HugePages) -> usize {
    match huge {
        HugePages::Huge2M => 2 << 20,
        HugePages::Huge1G => 1 << 30,
        HugePages::Off | HugePages::Thp => base_page_size(),
    }
}

fn base_page_size() -> usize {
    // SAFETY: sysconf only returns a value.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as usize
    } else {
        4096
    }
}
