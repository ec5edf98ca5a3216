#!/usr/bin/env bash
# Boot an emulated 2-socket, 3-NUMA-node machine (QEMU) and run memfabric in it.
#
#   node 0: CPUs 0-1 (socket 0) + 1 GiB
#   node 1: CPUs 2-3 (socket 1) + 1 GiB
#   node 2: no CPUs           + 1 GiB   (CXL-expander-like, initiator = node 0)
#   SLIT:   0-1 = 21, 0-2 = 30, 1-2 = 40
#   HMAT:   access latency/bandwidth for every initiator/target pair
#   SMBIOS: type 17 memory devices: 2 sockets x 3 DDR5 channels, channel C empty
#           (raw structures from tests/fixtures/smbios/generate.py, QEMU_VM)
#
# Steps: install host packages (Debian) if missing, build a static memfabric,
# pack an initramfs (busybox + memfabric + init.sh + commands.txt), boot it,
# extract results to target/vm/out/, run check.py.
#
# Environment knobs:
#   MEMFABRIC_VM_ACCEL=tcg|kvm     accelerator (default tcg; kvm is not reliable nested)
#   MEMFABRIC_VM_TIMEOUT=600       hard wall-clock limit for QEMU, seconds
#   MEMFABRIC_VM_CMD_TIMEOUT=300   per-command limit inside the guest, seconds
#   MEMFABRIC_VM_BOOT_TIMEOUT=60   boot watchdog: seconds for the guest to reach /init
#   MEMFABRIC_VM_BOOT_ATTEMPTS=3   boots tried when the watchdog fires
#   MEMFABRIC_VM_KERNEL=/path      use this bzImage instead of the Debian cloud kernel
#   MEMFABRIC_VM_APPEND="..."      extra kernel command line (e.g. "loglevel=7" to debug boot)
#   MEMFABRIC_VM_SKIP_BUILD=1      reuse the previously built static binary
#   MEMFABRIC_VM_COMMANDS=/path    command list to run instead of tests/vm/commands.txt
set -euo pipefail

T_START=$(date +%s.%N)
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/tests/vm"
WORK="$ROOT/target/vm"
OUT="$WORK/out"
CONSOLE_LOG="$WORK/console.log"
RESULTS_LOG="$WORK/results.log"
ACCEL="${MEMFABRIC_VM_ACCEL:-tcg}"
QEMU_TIMEOUT="${MEMFABRIC_VM_TIMEOUT:-600}"
CMD_TIMEOUT="${MEMFABRIC_VM_CMD_TIMEOUT:-300}"
BOOT_TIMEOUT="${MEMFABRIC_VM_BOOT_TIMEOUT:-60}"
BOOT_ATTEMPTS="${MEMFABRIC_VM_BOOT_ATTEMPTS:-3}"
COMMANDS="${MEMFABRIC_VM_COMMANDS:-$HERE/commands.txt}"
KERNEL_FLAVOUR=cloud-amd64
TARGET_TRIPLE=x86_64-unknown-linux-gnu

say()  { echo "[vm] $*"; }
die()  { echo "[vm] FAIL: $*" >&2; exit 1; }
now()  { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b - a}'; }
declare -a TIMINGS=()
timing() { TIMINGS+=("$(printf '%-10s %6ss' "$1" "$2")"); }

guest_log_tail() {
    [[ -s "$CONSOLE_LOG" ]] || echo "[vm] guest console log $CONSOLE_LOG is empty (guest hung before printing?)" >&2
    if [[ -s "$CONSOLE_LOG" ]]; then
        echo "----- last 60 lines of $CONSOLE_LOG -----" >&2
        tail -n 60 "$CONSOLE_LOG" | tr -d '\r' >&2
        echo "-----" >&2
    fi
    if [[ -s "$RESULTS_LOG" ]]; then
        echo "----- last 30 lines of $RESULTS_LOG -----" >&2
        tail -n 30 "$RESULTS_LOG" | tr -d '\r' >&2
        echo "-----" >&2
    fi
}

mkdir -p "$WORK"

# ---------------------------------------------------------------------------
# 1. Host packages
# ---------------------------------------------------------------------------
t=$(now)
APT_UPDATED=0
apt_update_once() {
    if [[ $APT_UPDATED == 0 ]]; then
        say "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >"$WORK/apt.log" 2>&1 \
            || { cat "$WORK/apt.log" >&2; die "apt-get update failed"; }
        APT_UPDATED=1
    fi
}
need_pkgs=()
command -v qemu-system-x86_64 >/dev/null || need_pkgs+=(qemu-system-x86)
[[ -x /bin/busybox ]] && file -L /bin/busybox | grep -q 'statically linked' || need_pkgs+=(busybox-static)
command -v cpio >/dev/null || need_pkgs+=(cpio)
command -v file >/dev/null || need_pkgs+=(file)
command -v xz >/dev/null || need_pkgs+=(xz-utils)
command -v python3 >/dev/null || need_pkgs+=(python3)
if ((${#need_pkgs[@]})); then
    apt_update_once
    say "installing: ${need_pkgs[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${need_pkgs[@]}" >>"$WORK/apt.log" 2>&1 \
        || { tail -n 30 "$WORK/apt.log" >&2; die "apt-get install ${need_pkgs[*]} failed"; }
fi
BUSYBOX=/bin/busybox
file -L "$BUSYBOX" | grep -q 'statically linked' || die "$BUSYBOX is not static (install busybox-static)"

# Kernel: the Debian cloud kernel has everything needed built in (NUMA, ACPI
# SRAT/SLIT/HMAT, HMEM_REPORTING, DMI sysfs, 8250 serial, devtmpfs), so the
# initramfs needs no modules. It is unpacked from the .deb into target/vm/kernel
# rather than installed into /boot (no bootloader or initramfs hooks involved).
check_kconfig() { # config-file
    local missing=()
    for opt in CONFIG_NUMA CONFIG_ACPI_NUMA CONFIG_ACPI_HMAT CONFIG_HMEM_REPORTING \
               CONFIG_DMI_SYSFS CONFIG_SERIAL_8250 CONFIG_SERIAL_8250_CONSOLE \
               CONFIG_DEVTMPFS CONFIG_BLK_DEV_INITRD; do
        grep -q "^$opt=y" "$1" || missing+=("$opt")
    done
    ((${#missing[@]} == 0)) || die "kernel config $1 lacks (=y): ${missing[*]}"
}
if [[ -n "${MEMFABRIC_VM_KERNEL:-}" ]]; then
    KERNEL="$MEMFABRIC_VM_KERNEL"
    [[ -r "$KERNEL" ]] || die "MEMFABRIC_VM_KERNEL=$KERNEL not readable"
else
    KDIR="$WORK/kernel"
    KERNEL="$(ls -1 "$KDIR"/boot/vmlinuz-*-"$KERNEL_FLAVOUR" 2>/dev/null | sort -V | tail -n 1 || true)"
    if [[ -z "$KERNEL" ]]; then
        resolve_kpkg() {
            apt-cache depends "linux-image-$KERNEL_FLAVOUR" 2>/dev/null \
                | awk '/Depends: linux-image-[0-9]/{print $2; exit}'
        }
        KPKG="$(resolve_kpkg)"
        if [[ -z "$KPKG" ]]; then apt_update_once; KPKG="$(resolve_kpkg)"; fi
        [[ -n "$KPKG" ]] || die "cannot resolve linux-image-$KERNEL_FLAVOUR"
        say "fetching kernel package $KPKG"
        rm -rf "$KDIR" "$WORK/kdeb"; mkdir -p "$WORK/kdeb"
        (cd "$WORK/kdeb" && apt-get download -qq -o APT::Sandbox::User=root "$KPKG") \
            >>"$WORK/apt.log" 2>&1 || { apt_update_once;
                (cd "$WORK/kdeb" && apt-get download -qq -o APT::Sandbox::User=root "$KPKG") \
                    >>"$WORK/apt.log" 2>&1 || die "apt-get download $KPKG failed"; }
        # only ./boot is needed; modules are not used
        dpkg-deb --fsys-tarfile "$WORK"/kdeb/*.deb | tar -x -C "$WORK/kdeb" ./boot
        mkdir -p "$KDIR"; mv "$WORK/kdeb/boot" "$KDIR/boot"; rm -rf "$WORK/kdeb"
        KERNEL="$(ls -1 "$KDIR"/boot/vmlinuz-*-"$KERNEL_FLAVOUR" | sort -V | tail -n 1)"
    fi
    check_kconfig "$(dirname "$KERNEL")/config-${KERNEL##*/vmlinuz-}"
fi
timing "packages" "$(since "$t")"
say "kernel: $KERNEL"

# ---------------------------------------------------------------------------
# 2. Static memfabric (own target dir so the normal build is not invalidated)
# ---------------------------------------------------------------------------
t=$(now)
BIN="$WORK/cargo/$TARGET_TRIPLE/release/memfabric"
if [[ "${MEMFABRIC_VM_SKIP_BUILD:-0}" != 1 || ! -x "$BIN" ]]; then
    say "building static memfabric"
    (cd "$ROOT" && RUSTFLAGS="-C target-feature=+crt-static" \
        cargo build --release --target "$TARGET_TRIPLE" -p memfabric --target-dir "$WORK/cargo") \
        || die "cargo build (static) failed"
fi
[[ -x "$BIN" ]] || die "no binary at $BIN"
file "$BIN" | grep -Eq 'statically linked|static-pie linked' \
    || die "memfabric is not static: $(file "$BIN")"
if ldd "$BIN" 2>&1 | grep -q '=>'; then die "memfabric has dynamic deps: $(ldd "$BIN")"; fi
timing "build" "$(since "$t")"

# ---------------------------------------------------------------------------
# 3. Initramfs
# ---------------------------------------------------------------------------
t=$(now)
IRD="$WORK/initramfs"
rm -rf "$IRD"; mkdir -p "$IRD"/{bin,sbin,usr/bin,usr/sbin,etc/memfabric-vm,proc,sys,dev,tmp,root}
cp "$BUSYBOX" "$IRD/bin/busybox"
for applet in $("$BUSYBOX" --list); do
    [[ -e "$IRD/bin/$applet" ]] || ln -s busybox "$IRD/bin/$applet"
done
strip -o "$IRD/bin/memfabric" "$BIN" 2>/dev/null || cp "$BIN" "$IRD/bin/memfabric"
install -m 0755 "$HERE/init.sh" "$IRD/init"
# validate and normalise commands.txt (CRLF, names)
[[ -r "$COMMANDS" ]] || die "command list $COMMANDS not readable"
tr -d '\r' <"$COMMANDS" >"$IRD/etc/memfabric-vm/commands.txt"
declare -a CMD_NAMES=()
while IFS= read -r line || [[ -n "$line" ]]; do
    [[ -z "${line//[[:space:]]/}" || "$line" =~ ^[[:space:]]*# ]] && continue
    [[ "$line" == *:* ]] || die "commands.txt: missing 'name:' in: $line"
    name="${line%%:*}"; name="${name//[[:space:]]/}"
    [[ "$name" =~ ^[A-Za-z0-9._-]+$ ]] || die "commands.txt: bad name '$name'"
    [[ "$name" != guest-facts ]] || die "commands.txt: 'guest-facts' is reserved"
    for seen in "${CMD_NAMES[@]}"; do [[ "$seen" != "$name" ]] || die "commands.txt: duplicate '$name'"; done
    CMD_NAMES+=("$name")
done <"$IRD/etc/memfabric-vm/commands.txt"
printf '%s\n' "${CMD_NAMES[@]}" >"$WORK/expected-commands.txt"
(cd "$IRD" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc -R 0:0 --quiet) >"$WORK/initramfs.cpio"
timing "initramfs" "$(since "$t")"
say "initramfs: $(du -h "$WORK/initramfs.cpio" | cut -f1), commands: ${CMD_NAMES[*]:-(none)}"

# ---------------------------------------------------------------------------
# 4. Boot
# ---------------------------------------------------------------------------
case "$ACCEL" in
    tcg) ACCEL_ARGS=(-accel tcg,thread=multi -cpu max) ;;
    kvm) ACCEL_ARGS=(-accel kvm -cpu host) ;;
    *) die "MEMFABRIC_VM_ACCEL must be tcg or kvm" ;;
esac
python3 "$ROOT/tests/fixtures/smbios/generate.py" --qemu "$WORK/smbios" || die "writing SMBIOS DIMMs failed"
SMBIOS_DIMMS=()
for f in $(ls -1 "$WORK"/smbios/dimm*.bin | sort -V); do SMBIOS_DIMMS+=(-smbios "file=$f"); done
QEMU=(
    qemu-system-x86_64
    -machine q35,hmat=on
    "${ACCEL_ARGS[@]}"
    -smp 4,sockets=2,cores=2,threads=1
    -m 3G
    -object memory-backend-ram,id=m0,size=1G
    -object memory-backend-ram,id=m1,size=1G
    -object memory-backend-ram,id=m2,size=1G
    -numa node,nodeid=0,memdev=m0
    -numa node,nodeid=1,memdev=m1
    -numa node,nodeid=2,memdev=m2,initiator=0
    -numa cpu,node-id=0,socket-id=0
    -numa cpu,node-id=1,socket-id=1
    -numa dist,src=0,dst=1,val=21
    -numa dist,src=0,dst=2,val=30
    -numa dist,src=1,dst=2,val=40
    # HMAT: latency in ns, bandwidth in bytes/s (M = MiB/s; Linux shows it as MB/s = MiB/s)
    -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-latency,latency=80
    -numa hmat-lb,initiator=0,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=40000M
    -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-latency,latency=140
    -numa hmat-lb,initiator=0,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=20000M
    -numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-latency,latency=250
    -numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-bandwidth,bandwidth=10000M
    -numa hmat-lb,initiator=1,target=0,hierarchy=memory,data-type=access-latency,latency=140
    -numa hmat-lb,initiator=1,target=0,hierarchy=memory,data-type=access-bandwidth,bandwidth=20000M
    -numa hmat-lb,initiator=1,target=1,hierarchy=memory,data-type=access-latency,latency=80
    -numa hmat-lb,initiator=1,target=1,hierarchy=memory,data-type=access-bandwidth,bandwidth=40000M
    -numa hmat-lb,initiator=1,target=2,hierarchy=memory,data-type=access-latency,latency=350
    -numa hmat-lb,initiator=1,target=2,hierarchy=memory,data-type=access-bandwidth,bandwidth=5000M
    -smbios type=1,manufacturer=Acme,product=memfabric-vm
    -smbios type=4,sock_pfx=CPU,manufacturer=Acme,version=Acme-Sim-CPU,max-speed=3000,current-speed=2400
    # SMBIOS type 17: the DIMMs of QEMU_VM in tests/fixtures/smbios/generate.py, one
    # raw structure per file (QEMU 7.2's -smbios type=17 makes one DIMM per 16 GiB
    # with one locator prefix, too little to name sockets and channels).
    "${SMBIOS_DIMMS[@]}"
    -nodefaults -display none -no-reboot
    # a guest reset (triple fault) or shutdown is otherwise silent: log it
    -d guest_errors,cpu_reset -D "$WORK/qemu-debug.log"
    -serial "file:$CONSOLE_LOG"
    -serial "file:$RESULTS_LOG"
    -kernel "$KERNEL"
    -initrd "$WORK/initramfs.cpio"
    # Do not add tsc=reliable: it makes the kernel flip the __sched_clock_stable
    # static key late in boot, and patching that key while the other vCPUs run
    # the tick path livelocks multi-threaded TCG (QEMU 7.2) in a few % of boots.
    # Without it the guest marks the TSC unstable early (AMD-like CPU, no
    # constant_tsc), never flips the key, and uses the HPET clocksource.
    # nokaslr: with physical KASLR the kernel image lands on node 0, 1 or 2 at
    # random, moving ~100 MB of reserved memory between nodes from boot to
    # boot; without it per-node MemTotal is the same every boot.
    -append "console=ttyS0 panic=-1 quiet loglevel=3 nokaslr memfabric.cmd_timeout=$CMD_TIMEOUT${MEMFABRIC_VM_APPEND:+ $MEMFABRIC_VM_APPEND}"
)
# readable, copy-pasteable record of the exact command line
for w in timeout "$QEMU_TIMEOUT" "${QEMU[@]}"; do
    if [[ "$w" =~ ^[A-Za-z0-9_,.=:/+@%-]+$ ]]; then printf '%s ' "$w"; else printf "'%s' " "$w"; fi
done >"$WORK/qemu-cmdline.txt"
echo >>"$WORK/qemu-cmdline.txt"

# The guest reaches /init in ~3-6 s of guest time (5-15 s wall). Should a boot
# ever hang before /init (seen with tsc=reliable, see above), a boot watchdog
# kills that attempt and boots again instead of waiting for the overall timeout.
QEMU_PID=""
cleanup() { [[ -z "$QEMU_PID" ]] || kill "$QEMU_PID" 2>/dev/null || true; }
trap cleanup EXIT
rm -f "$WORK"/console.hung-*.log "$WORK/qemu-debug.log"
t=$(now)
for attempt in $(seq 1 "$BOOT_ATTEMPTS"); do
    rm -f "$CONSOLE_LOG" "$RESULTS_LOG"
    say "booting guest ($ACCEL, attempt $attempt/$BOOT_ATTEMPTS, boot watchdog ${BOOT_TIMEOUT}s, timeout ${QEMU_TIMEOUT}s); console: $CONSOLE_LOG"
    ta=$SECONDS
    timeout --kill-after=10 "$QEMU_TIMEOUT" "${QEMU[@]}" </dev/null >"$WORK/qemu.stdout" 2>&1 &
    QEMU_PID=$!
    booted=0; hung=0
    while kill -0 "$QEMU_PID" 2>/dev/null; do
        if ((booted == 0)); then
            if grep -q '^===INIT' "$RESULTS_LOG" 2>/dev/null; then
                booted=1
                say "guest reached /init after $((SECONDS - ta))s"
            elif ((SECONDS - ta >= BOOT_TIMEOUT)); then
                hung=1
                kill "$QEMU_PID" 2>/dev/null || true  # timeout(1) passes SIGTERM on to QEMU
                break
            fi
        fi
        sleep 0.2
    done
    set +e
    wait "$QEMU_PID"
    qrc=$?
    set -e
    QEMU_PID=""
    if ((hung)); then
        cp "$CONSOLE_LOG" "$WORK/console.hung-$attempt.log" 2>/dev/null || true
        say "guest did not reach /init within ${BOOT_TIMEOUT}s (attempt $attempt); console kept in console.hung-$attempt.log"
        continue
    fi
    break
done
if ((hung)); then
    guest_log_tail
    die "guest did not boot to /init in $BOOT_ATTEMPTS attempts of ${BOOT_TIMEOUT}s"
fi
T_BOOT=$(since "$t")
timing "guest" "$T_BOOT"
if [[ $qrc == 124 || $qrc == 137 ]]; then
    guest_log_tail
    # keep whatever finished, and name what was still running
    python3 "$HERE/extract.py" "$RESULTS_LOG" "$OUT" >/dev/null 2>&1 || true
    running="$(tr -d '\r' <"$CONSOLE_LOG" 2>/dev/null | grep 'memfabric-vm: running ' | tail -n 1 || true)"
    [[ -z "$running" ]] || echo "[vm] guest was still in: ${running#memfabric-vm: }" >&2
    die "QEMU did not finish within ${QEMU_TIMEOUT}s (partial outputs in $OUT)"
elif [[ $qrc != 0 ]]; then
    cat "$WORK/qemu.stdout" >&2; guest_log_tail; die "QEMU exited with status $qrc"
fi

# ---------------------------------------------------------------------------
# 5. Extract + 6. check
# ---------------------------------------------------------------------------
t=$(now)
if ! python3 "$HERE/extract.py" "$RESULTS_LOG" "$OUT" "$WORK/expected-commands.txt"; then
    guest_log_tail
    running="$(tr -d '\r' <"$CONSOLE_LOG" 2>/dev/null | grep 'memfabric-vm: running ' | tail -n 1 || true)"
    [[ -z "$running" ]] || echo "[vm] guest stopped while ${running#memfabric-vm: }" >&2
    if grep -qi 'triple fault' "$WORK/qemu-debug.log" 2>/dev/null \
        && ! tr -d '\r' <"$CONSOLE_LOG" | grep -q 'reboot: Power down'; then
        echo "[vm] the guest triple-faulted (see $WORK/qemu-debug.log)" >&2
    fi
    die "could not extract all results from $RESULTS_LOG"
fi
set +e
python3 "$HERE/check.py" "$OUT"
crc=$?
set -e
timing "check" "$(since "$t")"
timing "total" "$(since "$T_START")"
say "timings:"; printf '[vm]   %s\n' "${TIMINGS[@]}"
if [[ $crc != 0 ]]; then
    guest_log_tail; die "checks failed (outputs in $OUT)"
fi
say "OK (outputs in $OUT)"
