//! Cache-line flushes and a single timed walk over pointers stored in a buffer, for
//! measurements that need to know where a buffer's lines are (DRAM or a cache) at
//! the moment a CPU first reads them, e.g. after a device wrote them by DMA.

use std::time::Instant;

/// Whether `flush_lines` really evicts lines on this architecture.
pub const CAN_FLUSH: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

/// Writes back and evicts every cache line holding a byte of `bytes` from every cache
/// level, and waits until that is done: the next load of any of them comes from
/// memory. Contents are unchanged. Does nothing where `CAN_FLUSH` is false.
pub fn flush_lines(bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    let step = line_bytes();
    let start = bytes.as_ptr() as usize;
    // From the line holding the first byte to the one holding the last, so a slice
    // that starts or ends mid-line is covered too.
    let first = start & !(step - 1);
    let last = start + bytes.len() - 1;
    let mut line = first;
    while line <= last {
        // Pointing at the slice's own first byte keeps the address inside it for
        // the first, possibly partial, line.
        let p = bytes.as_ptr().wrapping_add(line.max(start) - start);
        flush_one(p);
        line += step;
    }
    fence();
}

#[cfg(target_arch = "x86_64")]
fn line_bytes() -> usize {
    // clflush works on whole lines whatever the address in them; every x86-64 CPU has
    // 64-byte lines (CPUID's clflush size).
    64
}

#[cfg(target_arch = "aarch64")]
fn line_bytes() -> usize {
    let ctr: u64;
    // SAFETY: CTR_EL0 is readable from EL0 on Linux (the kernel traps and emulates it
    // where the hardware does not allow it); reading it has no side effect.
    unsafe { core::arch::asm!("mrs {}, ctr_el0", out(reg) ctr, options(nomem, nostack)) };
    // DminLine (bits 19:16): log2 of the smallest data line in 4-byte words.
    4 << ((ctr >> 16) & 0xf)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn line_bytes() -> usize {
    64
}

#[cfg(target_arch = "x86_64")]
fn flush_one(p: *const u8) {
    // SAFETY: p points into a live slice (flush_lines); clflush is part of SSE2, which
    // every x86-64 CPU has, and it changes no memory contents.
    unsafe { core::arch::x86_64::_mm_clflush(p) };
}

#[cfg(target_arch = "aarch64")]
fn flush_one(p: *const u8) {
    // SAFETY: p points into a live slice (flush_lines); dc civac cleans and invalidates
    // the line to the point of coherency and changes no memory contents.
    unsafe { core::arch::asm!("dc civac, {}", in(reg) p, options(nostack, preserves_flags)) };
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn flush_one(_p: *const u8) {}

#[cfg(target_arch = "x86_64")]
fn fence() {
    // SAFETY: mfence only orders memory operations; it orders clflush too.
    unsafe { core::arch::x86_64::_mm_mfence() };
}

#[cfg(target_arch = "aarch64")]
fn fence() {
    // SAFETY: a barrier; it waits for the dc civac operations issued before it.
    unsafe { core::arch::asm!("dsb ish", options(nostack, preserves_flags)) };
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn fence() {}

/// The end of one timed walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walked {
    /// Offset in the buffer of the word the walk stopped at.
    pub end: usize,
    /// Wall-clock ns of the whole walk.
    pub ns: u64,
}

/// A word on the walk that does not hold the address of an 8-byte-aligned word
/// inside the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StrayPointer {
    pub step: u64,
    pub offset: usize,
    pub value: u64,
}

/// Follows `steps` dependent loads through `buf`, starting at the word at offset
/// `start`: each word read is the absolute address of the next word, inside `buf`.
/// Nothing is read before the clock starts, so the first load of each line shows
/// where that line was. Every loaded address is checked before it is followed: the
/// check is off the dependent path (a predicted branch), so it costs no latency.
pub fn walk(buf: &[u8], start: usize, steps: u64) -> Result<Walked, StrayPointer> {
    let base = buf.as_ptr() as usize;
    let inside = |off: usize| buf.len() >= 8 && off <= buf.len() - 8 && off.is_multiple_of(8);
    if !inside(start) || !(base + start).is_multiple_of(8) {
        return Err(StrayPointer {
            step: 0,
            offset: start,
            value: (base + start) as u64,
        });
    }
    let mut off = start;
    let t = Instant::now();
    for step in 0..steps {
        // SAFETY: `off` was checked to be an 8-byte-aligned offset with 8 bytes left in
        // `buf` (at the start or on the previous step) and base + off is 8-aligned, so
        // the read stays inside the live, borrowed buffer and is aligned.
        let value = unsafe { std::ptr::read(buf.as_ptr().add(off) as *const u64) };
        let next = (value as usize).wrapping_sub(base);
        if !inside(next) {
            return Err(StrayPointer {
                step,
                offset: off,
                value,
            });
        }
        off = next;
    }
    let ns = t.elapsed().as_nanos() as u64;
    Ok(Walked {
        end: std::hint::black_box(off),
        ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Vec holding, from a 64-byte-aligned offset, `lines` lines whose first words
    /// form one cycle of absolute addresses; returns it and that offset.
    fn chain(lines: usize) -> (Vec<u8>, usize) {
        let mut v = vec![0u8; lines * 64 + 64];
        let pad = (v.as_ptr() as usize).next_multiple_of(64) - v.as_ptr() as usize;
        let base = v.as_ptr() as usize + pad;
        for i in 0..lines {
            // An odd step through a power-of-two count visits every line once.
            let next = (i * 5 + 3) % lines;
            let at = pad + i * 64;
            v[at..at + 8].copy_from_slice(&((base + next * 64) as u64).to_ne_bytes());
        }
        (v, pad)
    }

    #[test]
    fn a_walk_visits_every_line_once_per_cycle() {
        let lines = 1024;
        let (v, pad) = chain(lines);
        let buf = &v[pad..pad + lines * 64];
        let mut seen = vec![false; lines];
        let mut off = 0;
        for _ in 0..lines {
            let w = walk(buf, off, 1).unwrap();
            assert!(!seen[w.end / 64], "line {} twice", w.end / 64);
            seen[w.end / 64] = true;
            off = w.end;
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(off, 0, "back at the start after one cycle");
        assert_eq!(walk(buf, 0, lines as u64).unwrap().end, 0);
        assert_eq!(walk(buf, 0, 0).unwrap().end, 0);
    }

    #[test]
    fn a_stray_pointer_is_refused() {
        let lines = 64;
        let (mut v, pad) = chain(lines);
        let steps_to_line_3 = {
            let buf = &v[pad..pad + lines * 64];
            let (mut off, mut step) = (0, 0u64);
            while off != 3 * 64 {
                off = walk(buf, off, 1).unwrap().end;
                step += 1;
            }
            step
        };
        v[pad + 3 * 64..pad + 3 * 64 + 8].copy_from_slice(&12345u64.to_ne_bytes());
        let buf = &v[pad..pad + lines * 64];
        let e = walk(buf, 0, lines as u64).unwrap_err();
        assert_eq!((e.step, e.offset, e.value), (steps_to_line_3, 3 * 64, 12345));
        assert!(walk(buf, 4, 1).is_err(), "misaligned start");
        assert!(walk(buf, lines * 64, 1).is_err(), "start past the end");
        assert!(walk(&[], 0, 1).is_err(), "empty buffer");
    }

    #[test]
    fn flushing_keeps_the_contents() {
        let mut v: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let before = v.clone();
        flush_lines(&v);
        flush_lines(&v[3..77]);
        flush_lines(&v[..0]);
        assert_eq!(v, before);
        v[5] = 9;
        flush_lines(&v);
        assert_eq!(v[5], 9);
    }
}
