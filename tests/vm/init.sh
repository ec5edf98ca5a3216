#!/bin/sh
# /init of the test guest (busybox sh). Packed into the initramfs by run.sh.
#
# Kernel log and progress go to the console (ttyS0). Results go to the second
# serial port (ttyS1), in raw mode so bytes arrive unchanged, framed as:
#
#   ===BEGIN <name> bytes=<N>===\n   followed by exactly N bytes of stdout, then \n
#   ===STDERR <name> bytes=<M>===\n  followed by exactly M bytes of stderr, then \n
#   ===END <name> rc=<rc> secs=<s>===\n
#
# The first line is ===INIT uptime=<s>=== (kernel boot time), the last one
# ===DONE uptime=<s>===. extract.py parses this.

export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/root
umask 022

mkdir -p /proc /sys /dev /tmp /root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
exec </dev/console >/dev/console 2>&1
hostname memfabric-vm

# Results travel on ttyS1, so kernel messages on the console (ttyS0) cannot
# mix with them: keep errors, oopses and panics visible there.
dmesg -n 4

log() { echo "memfabric-vm: $*"; }

# Options from the kernel command line.
CMD_TIMEOUT=300
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        memfabric.cmd_timeout=*) CMD_TIMEOUT="${arg#*=}" ;;
    esac
done

RES=/dev/ttyS1
if [ ! -c "$RES" ]; then
    log "ERROR: $RES missing; results channel unavailable"
    poweroff -f
fi
stty -F "$RES" raw -echo 2>/dev/null
exec 3>"$RES"

uptime_s() { cut -d' ' -f1 /proc/uptime; }

# emit NAME RC SECS STDOUT_FILE STDERR_FILE
emit() {
    printf '===BEGIN %s bytes=%s===\n' "$1" "$(wc -c <"$4")" >&3
    cat "$4" >&3
    printf '\n===STDERR %s bytes=%s===\n' "$1" "$(wc -c <"$5")" >&3
    cat "$5" >&3
    printf '\n===END %s rc=%s secs=%s===\n' "$1" "$2" "$3" >&3
}

# ---- raw guest facts ------------------------------------------------------
# Format: "##FILE path" + content, "##LS path" + listing, "##HEX path" + xxd -p.
facts() {
    f_file() { for p in "$@"; do [ -e "$p" ] || continue; echo "##FILE $p"; cat "$p" 2>&1; done; }
    f_ls()   { for p in "$@"; do [ -e "$p" ] || continue; echo "##LS $p"; ls -1 "$p" 2>&1; done; }
    f_hex()  { for p in "$@"; do [ -e "$p" ] || continue; echo "##HEX $p"; xxd -p "$p" 2>&1; done; }

    f_file /proc/cmdline
    echo "##UNAME"; uname -r
    f_file /sys/devices/system/cpu/online /sys/devices/system/cpu/possible
    f_file /sys/devices/system/node/possible /sys/devices/system/node/online \
           /sys/devices/system/node/has_cpu /sys/devices/system/node/has_memory \
           /sys/devices/system/node/has_normal_memory
    f_ls /sys/devices/system/node
    for n in /sys/devices/system/node/node*; do
        f_file "$n/cpulist" "$n/distance"
        echo "##FILE $n/meminfo:MemTotal"
        grep MemTotal "$n/meminfo"
        for a in "$n"/access*; do
            [ -d "$a" ] || continue
            f_ls "$a/initiators" "$a/targets"
            f_file "$a"/initiators/read_* "$a"/initiators/write_*
        done
    done
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        t="$c/topology"
        f_file "$t/physical_package_id" "$t/die_id" "$t/core_id" \
               "$t/thread_siblings_list" "$t/core_siblings_list"
    done
    for i in /sys/devices/system/cpu/cpu0/cache/index*; do
        f_file "$i/level" "$i/type" "$i/size" "$i/coherency_line_size" "$i/shared_cpu_list"
    done
    echo "##FILE /proc/cpuinfo:processor0"
    sed '/^$/q' /proc/cpuinfo
    f_ls /sys/firmware/acpi/tables
    f_hex /sys/firmware/acpi/tables/SRAT /sys/firmware/acpi/tables/SLIT \
          /sys/firmware/acpi/tables/HMAT
    f_ls /sys/firmware/dmi/entries
    for e in /sys/firmware/dmi/entries/1-* /sys/firmware/dmi/entries/4-* \
             /sys/firmware/dmi/entries/16-* /sys/firmware/dmi/entries/17-*; do
        [ -e "$e/raw" ] && f_hex "$e/raw"
    done
    echo "##FILE /proc/meminfo:MemTotal"
    grep MemTotal /proc/meminfo
}

t0=$(uptime_s)
printf '===INIT uptime=%s===\n' "$t0" >&3
log "init started at uptime ${t0}s; collecting guest facts"
facts >/tmp/facts.out 2>/tmp/facts.err
t1=$(uptime_s)
emit guest-facts 0 "$(awk "BEGIN{printf \"%.2f\", $t1 - $t0}")" /tmp/facts.out /tmp/facts.err

# ---- memfabric commands ---------------------------------------------------
# /etc/memfabric-vm/commands.txt: "name: command line", '#' comments.
while IFS= read -r line <&4 || [ -n "$line" ]; do
    case "$line" in ''|'#'*) continue ;; esac
    name="${line%%:*}"
    cmd="${line#*:}"
    name="$(echo "$name" | tr -d ' \t')"
    log "running $name:$cmd"
    start=$(uptime_s)
    timeout "$CMD_TIMEOUT" sh -c "$cmd" </dev/null >/tmp/cmd.out 2>/tmp/cmd.err
    rc=$?
    end=$(uptime_s)
    secs=$(awk "BEGIN{printf \"%.2f\", $end - $start}")
    log "finished $name rc=$rc in ${secs}s"
    emit "$name" "$rc" "$secs" /tmp/cmd.out /tmp/cmd.err
done 4</etc/memfabric-vm/commands.txt

printf '===DONE uptime=%s===\n' "$(uptime_s)" >&3
exec 3>&-
sync
log "done; powering off"
poweroff -f
