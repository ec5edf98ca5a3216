// The pointer chase of `memfabric gpu latency` and `gpu host-latency`: one thread
// follows next[] from `start` for `steps` dependent loads, timed in SM clock cycles
// (clock64) and in ns (the GPU's global timer) around the loop.
//
// next[] holds word indexes: next[p] is the position of the element after the one
// at p. Only one word per stride is used, so the chase touches one line per load.
//
// Regenerate the PTX after any change: crates/gpu/kernels/build-ptx.sh

typedef unsigned long long u64;

__device__ __forceinline__ u64 global_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// out[0] = where the chase ended, out[1] = cycles, out[2] = ns.
extern "C" __global__ void mf_chase(const unsigned int* next, u64 steps, unsigned int start, u64* out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) {
        return;
    }
    unsigned int p = start;
    const long long c0 = clock64();
    const u64 t0 = global_ns();
    for (u64 s = 0; s < steps; s++) {
        p = next[p];
    }
    // The store needs the last load's value, so both clocks are read after it lands.
    out[0] = p;
    const long long c1 = clock64();
    const u64 t1 = global_ns();
    out[1] = (u64)(c1 - c0);
    out[2] = t1 - t0;
}
