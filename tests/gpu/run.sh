#!/usr/bin/env bash
# memfabric against a real NVIDIA driver library, on a machine without a GPU.
#
# Fetches Debian's libcuda1 and libnvidia-ml1 (bookworm non-free, driver 535: CUDA
# 12.2) into target/gpu-driver, then checks that
#   1. the driver library exports every CUDA function memfabric calls, and NVML every
#      function it looks up (a missing one would be a failed result at run time);
#   2. memfabric loads that libcuda at run time, and with no GPU present reports
#      "skipped: no CUDA device 0" and exits 0 (cuInit's CUDA_ERROR_NO_DEVICE path);
#   3. NVML loads, and its failure without the kernel driver is a note, not a crash.
# The checks that need a GPU are the #[ignore]d tests of crates/gpu (see docs/GPU.md).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
WORK="$ROOT/target/gpu-driver"
say() { echo "[gpu] $*"; }
die() { echo "[gpu] FAIL: $*" >&2; exit 1; }

# Every driver function memfabric calls: directly in crates/gpu/src/sys/*.rs, and
# through cudarc's result:: wrappers it uses there (each wrapper's function named).
CUDA_FUNCTIONS="cuInit cuDeviceGetCount cuDeviceGet cuDevicePrimaryCtxRetain
cuDevicePrimaryCtxRelease_v2 cuCtxSetCurrent cuCtxSynchronize cuDeviceGetAttribute
cuDeviceGetName cuDeviceTotalMem_v2 cuMemGetInfo_v2 cuDriverGetVersion cuDeviceGetPCIBusId
cuModuleLoadData cuModuleGetFunction cuModuleUnload cuStreamCreate cuStreamSynchronize
cuStreamDestroy_v2 cuEventCreate cuEventRecord cuStreamWaitEvent cuEventElapsedTime
cuEventDestroy_v2 cuMemAlloc_v2 cuMemFree_v2 cuMemcpyHtoD_v2 cuMemcpyDtoH_v2 cuMemHostAlloc
cuMemFreeHost cuMemHostRegister_v2 cuMemHostUnregister cuMemHostGetDevicePointer_v2
cuMemcpyHtoDAsync_v2 cuMemcpyDtoHAsync_v2 cuLaunchKernel cuGetErrorString cuGetErrorName"
NVML_FUNCTIONS=$(grep -ho '"nvml[A-Z][A-Za-z0-9_]*"' crates/gpu/src/sys/nvml.rs crates/gpu/src/info.rs | tr -d '"' | sort -u)

# The list must name every function crates/gpu/src/sys calls directly.
for f in $(grep -ho 'sys::cu[A-Za-z0-9_]*' crates/gpu/src/sys/*.rs | sed 's/sys:://' | sort -u); do
    grep -qw "$f" <<<"$CUDA_FUNCTIONS" || die "$f is called in crates/gpu/src/sys but not listed here"
done

LIB="$WORK/root/usr/lib/x86_64-linux-gnu/nvidia/current"
if [[ ! -e $LIB/libcuda.so.1 || ! -e $LIB/libnvidia-ml.so.1 ]]; then
    say "fetching libcuda1 and libnvidia-ml1 from Debian bookworm non-free"
    mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/debs"
    echo "deb http://deb.debian.org/debian bookworm non-free" >"$WORK/apt/sources.list"
    APT=(-o Dir::Etc::SourceList="$WORK/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
         -o Dir::State::Lists="$WORK/apt/lists" -o Dir::Cache="$WORK/apt/cache"
         -o APT::Sandbox::User=root)
    apt-get -qq "${APT[@]}" update || die "apt-get update failed"
    (cd "$WORK/debs" && apt-get -qq "${APT[@]}" download libcuda1 libnvidia-ml1) || die "download failed"
    for d in "$WORK"/debs/*.deb; do dpkg-deb -x "$d" "$WORK/root"; done
fi
[[ -e $LIB/libcuda.so.1 ]] || die "no libcuda.so.1 in the package"
VERSION=$(basename "$(readlink -f "$LIB/libcuda.so.1")")
say "driver library: $VERSION"

CUDA_EXPORTS=$(nm -D --defined-only "$LIB/libcuda.so.1")
NVML_EXPORTS=$(nm -D --defined-only "$LIB/libnvidia-ml.so.1")
missing=()
for f in $CUDA_FUNCTIONS; do
    grep -qw "$f" <<<"$CUDA_EXPORTS" || missing+=("$f")
done
for f in $NVML_FUNCTIONS; do
    grep -qw "$f" <<<"$NVML_EXPORTS" || missing+=("$f")
done
((${#missing[@]} == 0)) || die "not exported by $VERSION: ${missing[*]}"
say "$(wc -w <<<"$CUDA_FUNCTIONS") CUDA and $(wc -w <<<"$NVML_FUNCTIONS") NVML functions exported"

cargo build -q --bin memfabric
OUT=$(LD_LIBRARY_PATH="$LIB" target/debug/memfabric --quiet gpu info --json) || die "gpu info failed"
python3 - "$OUT" <<'PY' || die "with a driver and no GPU, gpu info is not a 'no CUDA device' skip: $OUT"
import json, sys
o = json.loads(sys.argv[1])["result"]["outcome"]
assert o["status"] == "skipped" and o["reason"].startswith("no CUDA device 0"), o
PY
NOTE=$(LD_LIBRARY_PATH="$LIB" cargo test -q -p memfabric-gpu --lib telemetry_without -- --nocapture 2>&1) \
    || die "NVML without its kernel driver: $NOTE"
grep -q "nvmlInit failed" <<<"$NOTE" || die "Debian's NVML was not the one loaded: $NOTE"
say "NVML loads and its failure is a note: $(grep -o 'NVML: .*' <<<"$NOTE")"
say "OK: libcuda loaded at run time; no GPU is a skip: $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["result"]["outcome"]["reason"])' "$OUT")"
