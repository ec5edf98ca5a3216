//! The pointer chase: building one cycle through a buffer, and following it.

use crate::sys::Buffer;

/// A cache line: the smallest chase stride; strides are multiples of it.
pub const LINE: usize = 64;

/// A buffer cut into slots of `stride` bytes, each holding one element: a pointer to
/// the next element of one cycle. Only `link_chase` makes one, so `chase` can trust
/// every pointer it follows.
pub struct Chain {
    buf: Buffer,
    stride: usize,
    elements: u64,
}

/// Where element `i` sits inside its slot: at an 8-byte word picked by a fixed hash of
/// `i`, as multichase places its elements, so that no position in a slot is favoured.
/// With every element at the start of its slot, a 256-byte-stride windowed chase
/// measured 0.60x of multichase's; with this layout, 0.93-0.95x (docs/PERFORMANCE.md).
fn element_offset(i: usize, stride: usize) -> usize {
    let h = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    (h as usize % (stride / 8)) * 8
}

/// Writes into each element `i` of the buffer a pointer to element `succ[i]`. The
/// stride must be a multiple of LINE, and `succ` a permutation of 0..n where
/// 0 < n <= buf.len() / stride (the chase covers the first n slots: a mapping is whole
/// pages, a chase need not be); anything else is refused.
pub fn link_chase(mut buf: Buffer, succ: &[u32], stride: usize) -> Result<Chain, Buffer> {
    if stride == 0 || !stride.is_multiple_of(LINE) {
        return Err(buf);
    }
    let n = succ.len();
    if n == 0 || n > buf.len() / stride || !is_permutation(succ) {
        return Err(buf);
    }
    let base = buf.as_mut_slice().as_mut_ptr();
    let at = |i: usize| i * stride + element_offset(i, stride);
    for (i, &next) in succ.iter().enumerate() {
        // SAFETY: both indices are < n (checked permutation) and an element's 8 bytes
        // stay inside its slot, so both addresses lie inside the buffer; elements are
        // 8-byte aligned, so no pointer straddles a line.
        unsafe {
            let slot = base.add(at(i)) as *mut *const u8;
            slot.write(base.add(at(next as usize)));
        }
    }
    Ok(Chain {
        buf,
        stride,
        elements: n as u64,
    })
}

fn is_permutation(order: &[u32]) -> bool {
    let mut seen = vec![false; order.len()];
    order.iter().all(|&i| {
        let fresh = (i as usize) < seen.len() && !seen[i as usize];
        if fresh {
            seen[i as usize] = true;
        }
        fresh
    })
}

impl Chain {
    pub fn elements(&self) -> u64 {
        self.elements
    }

    pub fn buffer(&self) -> &Buffer {
        &self.buf
    }

    /// Element 0, where every walk begins.
    pub fn start(&self) -> *const u8 {
        self.buf.as_ptr().wrapping_add(element_offset(0, self.stride))
    }
}

/// Follows `steps` dependent loads from `from` (a line start of `chain`, e.g. the
/// return value of a previous call) and returns where it stopped.
pub fn chase(chain: &Chain, from: *const u8, steps: u64) -> *const u8 {
    let base = chain.buf.as_ptr() as usize;
    assert!(
        (from as usize).wrapping_sub(base) < chain.buf.len() && (from as usize - base).is_multiple_of(8),
        "chase start outside its chain"
    );
    let mut p = from;
    // SAFETY: every line of the chain holds a pointer to a line of the same chain
    // (link_chase), and `from` was checked to be one, so each load stays inside it.
    unsafe {
        for _ in 0..steps / 8 {
            p = *(p as *const *const u8);
            p = *(p as *const *const u8);
            p = *(p as *const *const u8);
            p = *(p as *const *const u8);
            p = *(p as *const *const u8);
            p = *(p as *const *const u8);
            p = *(p as *const *const u8);
            p = *(p as *const *const u8);
        }
        for _ in 0..steps % 8 {
            p = *(p as *const *const u8);
        }
    }
    p
}

/// Walks the chain from its start until it returns there (at most `elements` steps)
/// and returns the number of steps: equal to `elements` exactly when the chase is one
/// cycle through every element. Doubles as the warm-up pass. Walks in slices so that
/// `stop()` is asked every few milliseconds; returns None if it said stop.
pub fn chase_count_cycle(chain: &Chain, stop: &dyn Fn() -> bool) -> Option<u64> {
    const SLICE: u64 = 1 << 16;
    let start = chain.start();
    let mut p = start;
    let mut steps = 0;
    while steps < chain.elements {
        if steps % SLICE == 0 && stop() {
            return None;
        }
        // SAFETY: as in `chase`.
        p = unsafe { *(p as *const *const u8) };
        steps += 1;
        if p == start {
            break;
        }
    }
    Some(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_stay_inside_the_slot_and_use_every_word() {
        for stride in [64, 256] {
            let mut seen = vec![0usize; stride / 8];
            for i in 0..(100 * stride) {
                let off = element_offset(i, stride);
                assert!(off + 8 <= stride && off.is_multiple_of(8));
                seen[off / 8] += 1;
            }
            assert!(
                seen.iter().all(|&n| n > 500),
                "uneven spread at stride {stride}: {seen:?}"
            );
        }
    }
}
