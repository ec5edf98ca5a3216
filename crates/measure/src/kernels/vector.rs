//! One vector register of doubles per instruction set, behind one trait, so that each
//! bandwidth kernel is written once (sys::streams) and compiled once per instruction
//! set. Every method is `#[inline(always)]`: it is inlined into a kernel entry point
//! compiled with that instruction set enabled, where the intrinsics inline in turn.

/// The instruction set the bandwidth kernels use; chosen at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
    Sse2,
    /// aarch64 Advanced SIMD; streaming stores are STNP.
    Neon,
    /// Plain 64-bit loads and stores, without streaming stores.
    Scalar,
}

impl Isa {
    /// The widest instruction set this CPU can run.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return Isa::Avx2;
            }
            Isa::Sse2
        }
        #[cfg(target_arch = "aarch64")]
        {
            Isa::Neon
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        Isa::Scalar
    }

    /// Whether this CPU can run it (so a forced choice can be refused).
    pub fn supported(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::arch::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => std::arch::is_x86_feature_detected!("avx2"),
            #[cfg(target_arch = "x86_64")]
            Isa::Sse2 => true,
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => true,
            #[allow(unreachable_patterns)]
            _ => false,
        }
    }

    /// Whether its stores can bypass the caches (false for the scalar kernel).
    pub fn has_streaming_stores(self) -> bool {
        self != Isa::Scalar
    }

    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Sse2 => "sse2",
            Isa::Neon => "neon",
            Isa::Scalar => "scalar",
        }
    }
}

/// A register of `LANES` doubles. Pointers passed to `load`, `store` and `stream` are
/// aligned to the register's size and valid for `LANES` elements.
pub(super) trait Vector: Copy {
    const LANES: usize;
    unsafe fn load(p: *const f64) -> Self;
    unsafe fn store(p: *mut f64, v: Self);
    /// A store that bypasses the caches where the instruction set has one.
    unsafe fn stream(p: *mut f64, v: Self);
    unsafe fn splat(x: f64) -> Self;
    unsafe fn add(self, o: Self) -> Self;
    unsafe fn mul(self, o: Self) -> Self;
    /// Bitwise XOR: folds loaded values together without floating-point traps.
    unsafe fn xor(self, o: Self) -> Self;
    /// Every bit of the register folded into one word.
    unsafe fn fold(self) -> u64;
    /// Orders streaming stores before whatever follows.
    unsafe fn fence();
}

impl Vector for f64 {
    const LANES: usize = 1;
    #[inline(always)]
    unsafe fn load(p: *const f64) -> f64 {
        p.read()
    }
    #[inline(always)]
    unsafe fn store(p: *mut f64, v: f64) {
        p.write(v)
    }
    #[inline(always)]
    unsafe fn stream(p: *mut f64, v: f64) {
        p.write(v)
    }
    #[inline(always)]
    unsafe fn splat(x: f64) -> f64 {
        x
    }
    #[inline(always)]
    unsafe fn add(self, o: f64) -> f64 {
        self + o
    }
    #[inline(always)]
    unsafe fn mul(self, o: f64) -> f64 {
        self * o
    }
    #[inline(always)]
    unsafe fn xor(self, o: f64) -> f64 {
        f64::from_bits(self.to_bits() ^ o.to_bits())
    }
    #[inline(always)]
    unsafe fn fold(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    unsafe fn fence() {}
}

#[cfg(target_arch = "x86_64")]
pub(super) use x86::{V128, V256, V512};

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::Vector;

    #[derive(Clone, Copy)]
    pub struct V512(__m512d);
    #[derive(Clone, Copy)]
    pub struct V256(__m256d);
    #[derive(Clone, Copy)]
    pub struct V128(__m128d);

    /// Implements Vector for one register width from its intrinsics; the XOR goes
    /// through the integer domain so it needs no extension beyond the base one.
    macro_rules! x86_vector {
        ($t:ident, $lanes:expr, $load:ident, $store:ident, $stream:ident, $set1:ident,
         $add:ident, $mul:ident, $xor:ident, $fold:path) => {
            impl Vector for $t {
                const LANES: usize = $lanes;
                #[inline(always)]
                unsafe fn load(p: *const f64) -> $t {
                    $t($load(p))
                }
                #[inline(always)]
                unsafe fn store(p: *mut f64, v: $t) {
                    $store(p, v.0)
                }
                #[inline(always)]
                unsafe fn stream(p: *mut f64, v: $t) {
                    $stream(p, v.0)
                }
                #[inline(always)]
                unsafe fn splat(x: f64) -> $t {
                    $t($set1(x))
                }
                #[inline(always)]
                unsafe fn add(self, o: $t) -> $t {
                    $t($add(self.0, o.0))
                }
                #[inline(always)]
                unsafe fn mul(self, o: $t) -> $t {
                    $t($mul(self.0, o.0))
                }
                #[inline(always)]
                unsafe fn xor(self, o: $t) -> $t {
                    $t($xor(self.0, o.0))
                }
                #[inline(always)]
                unsafe fn fold(self) -> u64 {
                    $fold(self.0)
                }
                #[inline(always)]
                unsafe fn fence() {
                    _mm_sfence()
                }
            }
        };
    }

    #[inline(always)]
    unsafe fn lanes_xor<const N: usize, T>(v: T) -> u64 {
        let words: [u64; N] = std::mem::transmute_copy(&v);
        words.iter().fold(0, |a, w| a ^ w)
    }

    #[inline(always)]
    unsafe fn xor512(a: __m512d, b: __m512d) -> __m512d {
        _mm512_castsi512_pd(_mm512_xor_si512(_mm512_castpd_si512(a), _mm512_castpd_si512(b)))
    }

    #[inline(always)]
    unsafe fn xor256(a: __m256d, b: __m256d) -> __m256d {
        _mm256_castsi256_pd(_mm256_xor_si256(_mm256_castpd_si256(a), _mm256_castpd_si256(b)))
    }

    x86_vector!(
        V512,
        8,
        _mm512_load_pd,
        _mm512_store_pd,
        _mm512_stream_pd,
        _mm512_set1_pd,
        _mm512_add_pd,
        _mm512_mul_pd,
        xor512,
        lanes_xor::<8, __m512d>
    );
    x86_vector!(
        V256,
        4,
        _mm256_load_pd,
        _mm256_store_pd,
        _mm256_stream_pd,
        _mm256_set1_pd,
        _mm256_add_pd,
        _mm256_mul_pd,
        xor256,
        lanes_xor::<4, __m256d>
    );
    x86_vector!(
        V128,
        2,
        _mm_load_pd,
        _mm_store_pd,
        _mm_stream_pd,
        _mm_set1_pd,
        _mm_add_pd,
        _mm_mul_pd,
        _mm_xor_pd,
        lanes_xor::<2, __m128d>
    );
}

#[cfg(target_arch = "aarch64")]
pub(super) use arm::VNeon;

#[cfg(target_arch = "aarch64")]
mod arm {
    use std::arch::aarch64::*;
    use std::arch::asm;

    use super::Vector;

    /// Two Q registers (32 bytes), because the streaming store STNP writes a pair.
    #[derive(Clone, Copy)]
    pub struct VNeon(float64x2_t, float64x2_t);

    impl Vector for VNeon {
        const LANES: usize = 4;
        #[inline(always)]
        unsafe fn load(p: *const f64) -> VNeon {
            VNeon(vld1q_f64(p), vld1q_f64(p.add(2)))
        }
        #[inline(always)]
        unsafe fn store(p: *mut f64, v: VNeon) {
            vst1q_f64(p, v.0);
            vst1q_f64(p.add(2), v.1);
        }
        #[inline(always)]
        unsafe fn stream(p: *mut f64, v: VNeon) {
            asm!("stnp {a:q}, {b:q}, [{p}]", a = in(vreg) v.0, b = in(vreg) v.1, p = in(reg) p,
                 options(nostack, preserves_flags));
        }
        #[inline(always)]
        unsafe fn splat(x: f64) -> VNeon {
            VNeon(vdupq_n_f64(x), vdupq_n_f64(x))
        }
        #[inline(always)]
        unsafe fn add(self, o: VNeon) -> VNeon {
            VNeon(vaddq_f64(self.0, o.0), vaddq_f64(self.1, o.1))
        }
        #[inline(always)]
        unsafe fn mul(self, o: VNeon) -> VNeon {
            VNeon(vmulq_f64(self.0, o.0), vmulq_f64(self.1, o.1))
        }
        #[inline(always)]
        unsafe fn xor(self, o: VNeon) -> VNeon {
            let x = |a: float64x2_t, b: float64x2_t| {
                vreinterpretq_f64_u64(veorq_u64(vreinterpretq_u64_f64(a), vreinterpretq_u64_f64(b)))
            };
            VNeon(x(self.0, o.0), x(self.1, o.1))
        }
        #[inline(always)]
        unsafe fn fold(self) -> u64 {
            let w = veorq_u64(vreinterpretq_u64_f64(self.0), vreinterpretq_u64_f64(self.1));
            vgetq_lane_u64(w, 0) ^ vgetq_lane_u64(w, 1)
        }
        #[inline(always)]
        unsafe fn fence() {
            asm!("dmb ishst", options(nostack, preserves_flags));
        }
    }
}
