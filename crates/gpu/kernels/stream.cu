// Device-memory kernels of `memfabric gpu bandwidth` and the SM copies of `gpu copy`.
//
// Every kernel walks its arrays with a grid-stride loop over 16-byte double2
// vectors (one 16-byte load or store per thread per step, fully coalesced), then
// finishes an odd last element in thread 0. Arrays are at least 16-byte aligned:
// cuMemAlloc and page-aligned host mappings both are.
//
// Regenerate the PTX after any change: crates/gpu/kernels/build-ptx.sh

typedef unsigned long long u64;

__device__ __forceinline__ u64 first_index() {
    return (u64)blockIdx.x * blockDim.x + threadIdx.x;
}

__device__ __forceinline__ u64 grid_stride() {
    return (u64)gridDim.x * blockDim.x;
}

// sum += a[i]. The sum is stored only if it equals `never` (the host passes a value
// the sum cannot take), so the loads cannot be optimised away and nothing is written.
extern "C" __global__ void mf_read(const double* __restrict__ a, u64 n, double never, double* __restrict__ sink) {
    const double2* a2 = reinterpret_cast<const double2*>(a);
    double sum = 0.0;
    for (u64 i = first_index(); i < n / 2; i += grid_stride()) {
        double2 v = a2[i];
        sum += v.x + v.y;
    }
    if ((n & 1) && first_index() == 0) {
        sum += a[n - 1];
    }
    if (sum == never) {
        sink[0] = sum;
    }
}

// a[i] = s
extern "C" __global__ void mf_write(double* __restrict__ a, double s, u64 n) {
    double2* a2 = reinterpret_cast<double2*>(a);
    for (u64 i = first_index(); i < n / 2; i += grid_stride()) {
        a2[i] = make_double2(s, s);
    }
    if ((n & 1) && first_index() == 0) {
        a[n - 1] = s;
    }
}

// c[i] = a[i]; also the SM copy between device memory and mapped host memory.
extern "C" __global__ void mf_copy(double* __restrict__ c, const double* __restrict__ a, u64 n) {
    double2* c2 = reinterpret_cast<double2*>(c);
    const double2* a2 = reinterpret_cast<const double2*>(a);
    for (u64 i = first_index(); i < n / 2; i += grid_stride()) {
        c2[i] = a2[i];
    }
    if ((n & 1) && first_index() == 0) {
        c[n - 1] = a[n - 1];
    }
}

// a[i] = b[i] + s * c[i]
extern "C" __global__ void mf_triad(double* __restrict__ a, const double* __restrict__ b, const double* __restrict__ c,
                                    double s, u64 n) {
    double2* a2 = reinterpret_cast<double2*>(a);
    const double2* b2 = reinterpret_cast<const double2*>(b);
    const double2* c2 = reinterpret_cast<const double2*>(c);
    for (u64 i = first_index(); i < n / 2; i += grid_stride()) {
        double2 x = b2[i];
        double2 y = c2[i];
        a2[i] = make_double2(x.x + s * y.x, x.y + s * y.y);
    }
    if ((n & 1) && first_index() == 0) {
        a[n - 1] = b[n - 1] + s * c[n - 1];
    }
}

// Holds its stream for `ns` nanoseconds of the GPU's global timer, so that the host
// can queue many short launches behind it and they then run back to back: their
// timing is the GPU's, not the host's launch rate.
extern "C" __global__ void mf_hold(u64 ns) {
    u64 t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    u64 t = t0;
    while (t - t0 < ns) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    }
}
