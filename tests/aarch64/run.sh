#!/usr/bin/env bash
# Cross-build memfabric for aarch64 and run it under qemu-user.
#
# Steps: install host packages (Debian) if missing, add the Rust target if missing,
# build the whole workspace for aarch64-unknown-linux-gnu (release), run the unit
# tests of memfabric-topo, -model, -analysis, -measure and -gpu under qemu-aarch64-static, then run
# the aarch64 memfabric binary (--version, topology --json).
#
# The build goes to its own target dir (target/aarch64) and the linker and runner
# are set through the environment here, not in .cargo/config.toml, so host builds
# are untouched.
set -euo pipefail

T_START=$SECONDS
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TRIPLE=aarch64-unknown-linux-gnu
SYSROOT=/usr/aarch64-linux-gnu
WORK="$ROOT/target/aarch64"
BIN="$WORK/$TRIPLE/release/memfabric"

say() { echo "[aarch64] $*"; }
die() { echo "[aarch64] FAIL: $*" >&2; exit 1; }

mkdir -p "$WORK"

# ---------------------------------------------------------------------------
# 1. Host packages and Rust target
# ---------------------------------------------------------------------------
SUDO=()
if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null || die "not root and no sudo: cannot install packages"
    SUDO=(sudo)
fi
need_pkgs=()
command -v aarch64-linux-gnu-gcc >/dev/null || need_pkgs+=(gcc-aarch64-linux-gnu)
dpkg -s libc6-dev-arm64-cross >/dev/null 2>&1 || need_pkgs+=(libc6-dev-arm64-cross)
command -v qemu-aarch64-static >/dev/null || need_pkgs+=(qemu-user-static)
command -v python3 >/dev/null || need_pkgs+=(python3)
if ((${#need_pkgs[@]})); then
    say "apt-get update"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$WORK/apt.log" 2>&1 \
        || { cat "$WORK/apt.log" >&2; die "apt-get update failed"; }
    say "installing: ${need_pkgs[*]}"
    "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${need_pkgs[@]}" >>"$WORK/apt.log" 2>&1 \
        || { tail -n 30 "$WORK/apt.log" >&2; die "apt-get install ${need_pkgs[*]} failed"; }
fi
[[ -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ]] || die "no aarch64 loader in $SYSROOT (libc6-arm64-cross)"

if ! rustup target list --installed | grep -qx "$TRIPLE"; then
    say "rustup target add $TRIPLE"
    rustup target add "$TRIPLE"
fi

export CARGO_TARGET_DIR="$WORK"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64-static -L $SYSROOT"

# ---------------------------------------------------------------------------
# 2. Build (every crate, the binary included)
# ---------------------------------------------------------------------------
t=$SECONDS
say "cargo build --release --target $TRIPLE --workspace"
cargo build --release --target "$TRIPLE" --workspace || die "cargo build failed"
[[ -x "$BIN" ]] || die "no binary at $BIN"
aarch64-linux-gnu-readelf -h "$BIN" | grep -q 'Machine:.*AArch64' || die "$BIN is not an AArch64 ELF"
T_BUILD=$((SECONDS - t))

# ---------------------------------------------------------------------------
# 3. Unit tests of the library crates, run by the qemu-user runner
# ---------------------------------------------------------------------------
t=$SECONDS
say "cargo test --target $TRIPLE (library unit tests, under qemu-user)"
TEST_LOG="$WORK/test.log"
cargo test --target "$TRIPLE" -p memfabric-measure -p memfabric-analysis -p memfabric-model -p memfabric-topo -p memfabric-gpu --lib 2>&1 \
    | tee "$TEST_LOG" || die "unit tests failed under qemu-user (log: $TEST_LOG)"
read -r PASSED IGNORED < <(awk '/^test result: ok\./ {p += $4; i += $8} END {print p + 0, i + 0}' "$TEST_LOG")
SUITES=$(grep -c '^test result: ok\.' "$TEST_LOG" || true)
[[ $SUITES == 5 ]] || die "expected 5 unit-test suites, saw $SUITES (log: $TEST_LOG)"
((PASSED > 0)) || die "no unit test ran (log: $TEST_LOG)"
T_TEST=$((SECONDS - t))

# ---------------------------------------------------------------------------
# 4. The binary itself
# ---------------------------------------------------------------------------
t=$SECONDS
QEMU=(qemu-aarch64-static -L "$SYSROOT")
say "memfabric --version"
VERSION=$("${QEMU[@]}" "$BIN" --version) || die "memfabric --version failed"
echo "$VERSION"
[[ $VERSION == memfabric\ * ]] || die "unexpected --version output: $VERSION"
say "memfabric topology --json"
"${QEMU[@]}" "$BIN" topology --json >"$WORK/topology.json" || die "memfabric topology --json failed"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$WORK/topology.json" \
    || die "topology --json did not print JSON (see $WORK/topology.json)"
say "memfabric gpu info --json (no NVIDIA driver here: skipped, exit 0)"
"${QEMU[@]}" "$BIN" --quiet gpu info --json >"$WORK/gpu.json" || die "memfabric gpu info failed"
python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))["result"]["outcome"]; assert o["status"] == "skipped", o' \
    "$WORK/gpu.json" || die "gpu info without a driver is not a skip (see $WORK/gpu.json)"
T_RUN=$((SECONDS - t))

say "timings: build ${T_BUILD}s, tests ${T_TEST}s, binary ${T_RUN}s, total $((SECONDS - T_START))s"
say "aarch64: build OK, $PASSED unit tests passed under qemu-user ($IGNORED ignored), memfabric --version, topology --json and gpu info (skipped) OK"
