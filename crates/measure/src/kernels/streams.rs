//! The bandwidth kernels: one generic loop per operation, compiled once per instruction
//! set (sys::vector) with the operation and the store kind as constants, so the inner
//! loop holds nothing but loads, arithmetic and stores.

use super::vector::{Isa, Vector};

/// What one pass does to a thread's arrays. `arrays[0]` is the one written, where one is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Loads `arrays[0]`, folding every value into the result.
    Read,
    /// `arrays[0][i] = s`.
    Fill,
    /// `arrays[0][i] = s` while loading arrays 1..=n (n read streams, one write stream).
    Ratio(u8),
    /// `arrays[0][i] += s`.
    Rmw,
    /// `arrays[0][i] = arrays[1][i]`.
    Copy,
    /// `arrays[0][i] = s * arrays[1][i]`.
    Scale,
    /// `arrays[0][i] = arrays[1][i] + arrays[2][i]`.
    Add,
    /// `arrays[0][i] = arrays[1][i] + s * arrays[2][i]`.
    Triad,
}

impl Op {
    pub fn arrays(self) -> usize {
        match self {
            Op::Read | Op::Fill | Op::Rmw => 1,
            Op::Ratio(n) => 1 + n as usize,
            Op::Copy | Op::Scale => 2,
            Op::Add | Op::Triad => 3,
        }
    }

    /// The compile-time code of each operation (const generics take integers only).
    fn code(self) -> u8 {
        match self {
            Op::Read => READ,
            Op::Fill => FILL,
            Op::Ratio(1) => RATIO1,
            Op::Ratio(2) => RATIO2,
            Op::Ratio(3) => RATIO3,
            Op::Ratio(n) => panic!("no kernel for {n} read streams"),
            Op::Rmw => RMW,
            Op::Copy => COPY,
            Op::Scale => SCALE,
            Op::Add => ADD,
            Op::Triad => TRIAD,
        }
    }
}

const READ: u8 = 0;
const FILL: u8 = 1;
const RATIO1: u8 = 2;
const RATIO2: u8 = 3;
const RATIO3: u8 = 4;
const RMW: u8 = 5;
const COPY: u8 = 6;
const SCALE: u8 = 7;
const ADD: u8 = 8;
const TRIAD: u8 = 9;

/// Doubles per unrolled iteration: 512 bytes, eight cache lines per array.
pub const BLOCK_ELEMENTS: usize = 64;

/// Alignment every array must have: one AVX-512 register.
pub const ARRAY_ALIGN: usize = 64;

/// One pass of an operation.
#[derive(Debug, Clone, Copy)]
pub struct Pass {
    pub op: Op,
    pub isa: Isa,
    /// Streaming stores plus a store fence; needs an instruction set that has them.
    pub non_temporal: bool,
    pub scalar: f64,
}

/// A byte buffer seen as doubles: it must be 8-byte aligned and a multiple of 8 long.
pub fn as_doubles(bytes: &mut [u8]) -> &mut [f64] {
    assert!((bytes.as_ptr() as usize).is_multiple_of(8) && bytes.len().is_multiple_of(8));
    // SAFETY: alignment and length are checked above, every bit pattern is a valid
    // f64, and the new slice takes over the unique borrow of the bytes.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut f64, bytes.len() / 8) }
}

type Ptrs = [*mut f64; 4];
type Entry = unsafe fn(&Ptrs, usize, f64) -> u64;

/// Runs one pass over every element of `arrays` (`op.arrays()` of them, equal lengths,
/// each 64-byte aligned) and returns a fold of every value loaded, so that no load can
/// be dropped. Lengths need not be a multiple of anything: a scalar loop ends the pass.
pub fn run_pass(pass: &Pass, arrays: &mut [&mut [f64]]) -> u64 {
    assert_eq!(
        arrays.len(),
        pass.op.arrays(),
        "{:?} takes {} arrays",
        pass.op,
        pass.op.arrays()
    );
    let n = arrays[0].len();
    assert!(arrays.iter().all(|a| a.len() == n), "arrays of different lengths");
    assert!(
        arrays
            .iter()
            .all(|a| (a.as_ptr() as usize).is_multiple_of(ARRAY_ALIGN)),
        "arrays must be {ARRAY_ALIGN}-byte aligned"
    );
    assert!(pass.isa.supported(), "{} not supported here", pass.isa.name());
    assert!(
        !pass.non_temporal || pass.isa.has_streaming_stores(),
        "the {} kernel has no streaming stores",
        pass.isa.name()
    );
    let mut p: Ptrs = [std::ptr::null_mut(); 4];
    for (slot, a) in p.iter_mut().zip(arrays.iter_mut()) {
        *slot = a.as_mut_ptr();
    }
    let body = n - n % BLOCK_ELEMENTS;
    let entry = select(pass.op.code(), pass.isa, pass.non_temporal);
    // SAFETY: the entry's instruction set is supported (asserted); each of the
    // op.arrays() pointers is valid for n elements, aligned as the vector loads need,
    // and the slices are distinct &mut borrows, so nothing else aliases them.
    // `tail` covers elements body..n of the same arrays with plain scalar code.
    unsafe {
        let folded = entry(&p, body, pass.scalar);
        let tail: Ptrs = p.map(|q| q.wrapping_add(body));
        folded ^ scalar_entry(pass.op.code())(&tail, n - body, pass.scalar)
    }
}

/// As `run_pass`, over elements `start..start + len` of each array, without allocating:
/// for loops that run a pass in pieces (a throttled load).
pub fn run_pass_range(pass: &Pass, arrays: &mut [&mut [f64]], start: usize, len: usize) -> u64 {
    let count = arrays.len();
    let mut parts: [&mut [f64]; 4] = Default::default();
    for (slot, a) in parts.iter_mut().zip(arrays.iter_mut()) {
        *slot = &mut a[start..start + len];
    }
    run_pass(pass, &mut parts[..count])
}

/// Picks the instance of the kernel for an operation, instruction set and store kind.
fn select(op: u8, isa: Isa, nt: bool) -> Entry {
    macro_rules! by_op {
        ($f:ident) => {
            match (op, nt) {
                (READ, _) => $f::<READ, false> as Entry,
                (FILL, false) => $f::<FILL, false>,
                (FILL, true) => $f::<FILL, true>,
                (RATIO1, false) => $f::<RATIO1, false>,
                (RATIO1, true) => $f::<RATIO1, true>,
                (RATIO2, false) => $f::<RATIO2, false>,
                (RATIO2, true) => $f::<RATIO2, true>,
                (RATIO3, false) => $f::<RATIO3, false>,
                (RATIO3, true) => $f::<RATIO3, true>,
                (RMW, false) => $f::<RMW, false>,
                (RMW, true) => $f::<RMW, true>,
                (COPY, false) => $f::<COPY, false>,
                (COPY, true) => $f::<COPY, true>,
                (SCALE, false) => $f::<SCALE, false>,
                (SCALE, true) => $f::<SCALE, true>,
                (ADD, false) => $f::<ADD, false>,
                (ADD, true) => $f::<ADD, true>,
                (TRIAD, false) => $f::<TRIAD, false>,
                (TRIAD, true) => $f::<TRIAD, true>,
                _ => unreachable!("operation code {op}"),
            }
        };
    }
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => by_op!(avx512),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => by_op!(avx2),
        #[cfg(target_arch = "x86_64")]
        Isa::Sse2 => by_op!(sse2),
        #[cfg(target_arch = "aarch64")]
        Isa::Neon => by_op!(neon),
        _ => by_op!(scalar),
    }
}

fn scalar_entry(op: u8) -> Entry {
    select(op, Isa::Scalar, false)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn avx512<const OP: u8, const NT: bool>(p: &Ptrs, n: usize, s: f64) -> u64 {
    span::<super::vector::V512, OP, NT>(p, n, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn avx2<const OP: u8, const NT: bool>(p: &Ptrs, n: usize, s: f64) -> u64 {
    span::<super::vector::V256, OP, NT>(p, n, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse2")]
unsafe fn sse2<const OP: u8, const NT: bool>(p: &Ptrs, n: usize, s: f64) -> u64 {
    span::<super::vector::V128, OP, NT>(p, n, s)
}

#[cfg(target_arch = "aarch64")]
unsafe fn neon<const OP: u8, const NT: bool>(p: &Ptrs, n: usize, s: f64) -> u64 {
    span::<super::vector::VNeon, OP, NT>(p, n, s)
}

unsafe fn scalar<const OP: u8, const NT: bool>(p: &Ptrs, n: usize, s: f64) -> u64 {
    span::<f64, OP, NT>(p, n, s)
}

/// Doubles in a 4 KiB page, and pages walked side by side by the interleaved loop.
const PAGE_ELEMENTS: usize = 512;
const PAGES: usize = 4;
/// Doubles taken from each page per step of the interleaved loop (128 bytes).
const STEP_ELEMENTS: usize = 16;

/// The loop every kernel shares. Blocks of BLOCK_ELEMENTS when V is a vector (the
/// caller passes a multiple of it), single elements when V is f64. Four accumulators
/// keep the folded loads from forming one long dependency chain.
///
/// Loads-only and streaming-store kernels walk four 4 KiB pages side by side: one
/// core then keeps four page streams in flight for the hardware prefetchers instead of
/// one. Measured on a 2-CPU EPYC guest (docs/PERFORMANCE.md): +15 % for reads and
/// +28 % for a streaming-store copy, which then matches glibc's memcpy (itself
/// page-interleaved). With regular stores the same walk was 20 % slower, so those
/// kernels go straight through.
#[inline(always)]
unsafe fn span<V: Vector, const OP: u8, const NT: bool>(p: &Ptrs, n: usize, s: f64) -> u64 {
    let sv = V::splat(s);
    let mut acc = [V::splat(0.0); 4];
    let mut i = 0;
    if V::LANES > 1 && (NT || OP == READ) {
        let chunk = PAGES * PAGE_ELEMENTS;
        while i + chunk <= n {
            for off in (0..PAGE_ELEMENTS).step_by(STEP_ELEMENTS) {
                for (q, a) in acc.iter_mut().enumerate().take(PAGES) {
                    for k in 0..STEP_ELEMENTS / V::LANES {
                        let j = i + q * PAGE_ELEMENTS + off + k * V::LANES;
                        *a = element::<V, OP, NT>(p, j, sv, *a);
                    }
                }
            }
            i += chunk;
        }
    }
    let per_iter = if V::LANES == 1 { 1 } else { BLOCK_ELEMENTS };
    while i < n {
        for k in 0..per_iter / V::LANES {
            let j = i + k * V::LANES;
            acc[k % 4] = element::<V, OP, NT>(p, j, sv, acc[k % 4]);
        }
        i += per_iter;
    }
    if NT {
        V::fence();
    }
    acc[0].xor(acc[1]).xor(acc[2].xor(acc[3])).fold()
}

/// One register's worth of an operation at element j; returns the accumulator.
#[inline(always)]
unsafe fn element<V: Vector, const OP: u8, const NT: bool>(p: &Ptrs, j: usize, s: V, acc: V) -> V {
    let put = |v: V| {
        if NT {
            V::stream(p[0].add(j), v)
        } else {
            V::store(p[0].add(j), v)
        }
    };
    let get = |q: usize| V::load(p[q].add(j));
    match OP {
        READ => return acc.xor(get(0)),
        FILL => put(s),
        RATIO1 => {
            put(s);
            return acc.xor(get(1));
        }
        RATIO2 => {
            put(s);
            return acc.xor(get(1)).xor(get(2));
        }
        RATIO3 => {
            put(s);
            return acc.xor(get(1)).xor(get(2)).xor(get(3));
        }
        RMW => put(get(0).add(s)),
        COPY => put(get(1)),
        SCALE => put(get(1).mul(s)),
        ADD => put(get(1).add(get(2))),
        TRIAD => put(get(1).add(get(2).mul(s))),
        _ => unreachable!(),
    }
    acc
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation, on every instruction set this CPU has, against plain Rust, at
    /// lengths that exercise the vector body, the scalar tail, and both.
    #[test]
    fn every_kernel_matches_plain_code() {
        let ops = [
            Op::Read,
            Op::Fill,
            Op::Ratio(1),
            Op::Ratio(2),
            Op::Ratio(3),
            Op::Rmw,
            Op::Copy,
            Op::Scale,
            Op::Add,
            Op::Triad,
        ];
        let isas = [Isa::Avx512, Isa::Avx2, Isa::Sse2, Isa::Neon, Isa::Scalar];
        for isa in isas.into_iter().filter(|i| i.supported()) {
            for op in ops {
                for nt in [false, true] {
                    if nt && (!isa.has_streaming_stores() || op == Op::Read) {
                        continue;
                    }
                    for n in [0, 7, 64, 200, 1024, 2048, 2048 + 64 + 3, 3 * 2048 + 512] {
                        check(
                            Pass {
                                op,
                                isa,
                                non_temporal: nt,
                                scalar: 3.0,
                            },
                            n,
                        );
                    }
                }
            }
        }
    }

    #[repr(align(64))]
    #[derive(Clone, Copy)]
    struct Line([f64; 8]);

    fn check(pass: Pass, n: usize) {
        let fill = |k: usize| -> Vec<Line> {
            let mut v = vec![Line([0.0; 8]); n.div_ceil(8)];
            for (i, x) in v.iter_mut().flat_map(|l| l.0.iter_mut()).enumerate() {
                *x = (i * 7 + k * 1000) as f64 * 0.5;
            }
            v
        };
        let mut store: Vec<Vec<Line>> = (0..pass.op.arrays()).map(fill).collect();
        let before: Vec<Vec<f64>> = store.iter().map(|a| flat(a)[..n].to_vec()).collect();
        let mut arrays: Vec<&mut [f64]> = store.iter_mut().map(|a| &mut flat_mut(a)[..n]).collect();
        let folded = run_pass(&pass, &mut arrays);
        let after: Vec<f64> = arrays[0].to_vec();
        let s = pass.scalar;
        let want: Vec<f64> = (0..n)
            .map(|i| match pass.op {
                Op::Read => before[0][i],
                Op::Fill | Op::Ratio(_) => s,
                Op::Rmw => before[0][i] + s,
                Op::Copy => before[1][i],
                Op::Scale => s * before[1][i],
                Op::Add => before[1][i] + before[2][i],
                Op::Triad => before[1][i] + s * before[2][i],
            })
            .collect();
        assert_eq!(after, want, "{pass:?} n={n}");
        let read_arrays = match pass.op {
            Op::Read => vec![0],
            Op::Ratio(r) => (1..=r as usize).collect(),
            _ => vec![],
        };
        if !read_arrays.is_empty() {
            let expect = read_arrays
                .iter()
                .flat_map(|&q| before[q].iter())
                .fold(0u64, |a, x| a ^ x.to_bits());
            assert_eq!(folded, expect, "{pass:?} n={n}: fold of the loads");
        }
    }

    fn flat(v: &[Line]) -> &[f64] {
        // SAFETY: Line is repr(align(64)) around [f64; 8] with no padding.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const f64, v.len() * 8) }
    }

    fn flat_mut(v: &mut [Line]) -> &mut [f64] {
        // SAFETY: as in `flat`.
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut f64, v.len() * 8) }
    }
}
