#!/usr/bin/env bash
# memfabric beside its peers, on this machine, in one run: each pair runs
# interleaved (peer, memfabric, peer, memfabric, ...) for ROUNDS rounds on the
# same CPUs with the same buffer and page sizes, and the table gives per round
# the peer's figure, memfabric's and their ratio, then the median ratio. Each
# ratio compares the same statistic (STREAM's and multichase's "best" with
# memfabric's best sample; both tools' means for core-to-core latency). A
# benchmark, not a test: it never fails on a ratio.
#
#   STREAM_SRC=DIR MULTICHASE_SRC=DIR tests/bench/peers.sh [ROUNDS]   (default 5)
#
# STREAM_SRC holds jeffhammond/STREAM's stream.c; MULTICHASE_SRC google/multichase
# (multichase and multiload). core-to-core-latency is built from crates.io
# (`cargo install --root` in the work directory). Nothing of theirs is kept in
# this repository: they are built in a temporary directory. Writes the table to
# stdout and every figure to $PEERS_JSON (default target/peers.json).
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { echo "[peers] $*" >&2; }
die() { echo "[peers] FAIL: $*" >&2; exit 1; }
rounds=${1:-5}
[[ -f ${STREAM_SRC:-}/stream.c ]] || die "STREAM_SRC=DIR: a checkout of jeffhammond/STREAM (stream.c)"
[[ -f ${MULTICHASE_SRC:-}/multichase.c ]] || die "MULTICHASE_SRC=DIR: a checkout of google/multichase"
out_json=${PEERS_JSON:-target/peers.json}
work=$(mktemp -d "${TMPDIR:-/tmp}/memfabric-peers.XXXXXX")
trap 'rm -rf "$work"' EXIT
cpus=$(nproc)

say "building memfabric (release) and the peers in $work"
cargo build --release -q -p memfabric --bin memfabric
MF=$PWD/target/release/memfabric
# STREAM: arrays of 2^25 doubles (256 MiB each, STREAM's rule of 4x the LLC on any
# machine with less than 64 MiB of it), 10 passes, as memfabric's `--size 256M --ntimes 10`.
elements=$((1 << 25))
gcc -O3 -march=native -fopenmp -DSTREAM_ARRAY_SIZE=$elements -DNTIMES=10 \
    "$STREAM_SRC/stream.c" -o "$work/stream" || die "building STREAM"
cp -r "$MULTICHASE_SRC" "$work/multichase"
make -s -C "$work/multichase" multichase multiload >/dev/null 2>&1 || die "building multichase"
cargo install -q core-to-core-latency --root "$work/c2c" >/dev/null 2>&1 || die "cargo install core-to-core-latency"
C2C="$work/c2c/bin/core-to-core-latency"
MC="$work/multichase/multichase"
ML="$work/multichase/multiload"

# One figure of each tool, printed as a number.
stream_peer() { # THREADS FUNCTION -> best MB/s as GB/s
    local threads=$1 fn=$2
    OMP_NUM_THREADS=$threads OMP_PROC_BIND=spread taskset -c "$(cpu_list "$threads")" "$work/stream" |
        awk -v f="$fn:" '$1 == f { printf "%.3f\n", $2 / 1000 }'
}
stream_mf() {
    "$MF" --quiet stream --threads "$1" --size 256M --ntimes 10 --json |
        python3 -c 'import json,sys; fs=json.load(sys.stdin)["result"]["outcome"]["functions"]; print("%.3f" % [f["best_gb_s"] for f in fs if f["name"] == sys.argv[1]][0])' "$2"
}
cpu_list() { if (($1 == 1)); then echo 0; else echo "0-$(($1 - 1))"; fi; }
chase_peer() { taskset -c 0 "$MC" "$@" | tail -n 1 | tr -d ' '; }
chase_mf() {
    "$MF" --quiet latency --cpu 0 --size 1G "$@" --json |
        python3 -c 'import json,sys; c=json.load(sys.stdin)["result"]["cells"][0]["outcome"]; print("%.3f" % min(c["samples_ns"]))'
}
copy_peer() { # multiload memcpy, LdMaxMibs (read + write bytes) as GB/s
    taskset -c "$(cpu_list "$cpus")" "$ML" -l memcpy-libc -m 512m -t "$cpus" -n 5 |
        awk -F, 'NR == 2 { printf "%.3f\n", $8 * 1048576 / 1e9 }'
}
copy_mf() { # two arrays of 256 MiB per thread, as multiload's 512 MiB halves
    "$MF" --quiet bandwidth --mix copy-nt --size 256M --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin)["result"]; c=d["cells"][0]["outcome"]; print("%.3f" % c["bandwidth_gb_s"]["max"])'
}
c2c_peer() { # CAS on one line, CPUs 0 and 1: the mean over its samples, one way (ns)
    "$C2C" -c 0,1 --csv 2>/dev/null | sed -n 2p | cut -d, -f1
}
c2c_mf() {
    "$MF" --quiet c2c --cpus 0,1 --mode cas --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin)["result"]; print("%.3f" % d["matrices"][0]["pairs"][0]["outcome"]["one_way_ns"]["mean"])'
}

pairs=(
    "stream-triad-all|STREAM Triad, $cpus threads|GB/s|stream_peer $cpus Triad|stream_mf $cpus Triad"
    "stream-copy-all|STREAM Copy, $cpus threads|GB/s|stream_peer $cpus Copy|stream_mf $cpus Copy"
    "stream-triad-1|STREAM Triad, 1 thread|GB/s|stream_peer 1 Triad|stream_mf 1 Triad"
    "stream-copy-1|STREAM Copy, 1 thread|GB/s|stream_peer 1 Copy|stream_mf 1 Copy"
    "chase-random|multichase -m 1g -T 1g -s 64 / latency --pattern random|ns|chase_peer -m 1g -T 1g -s 64|chase_mf --pattern random"
    "chase-page|multichase -m 1g -T 4k -s 64 / latency --pattern page-random|ns|chase_peer -m 1g -T 4k -s 64|chase_mf --pattern page-random"
    "chase-window|multichase -m 1g / latency --window 256K --stride 256|ns|chase_peer -m 1g|chase_mf --pattern page-random --window 256K --stride 256"
    "copy|multiload memcpy-libc / bandwidth --mix copy-nt, $cpus threads|GB/s|copy_peer|copy_mf"
    "c2c|core-to-core-latency / c2c --mode cas, CPUs 0 and 1|ns|c2c_peer|c2c_mf"
)

rows="$work/rows.tsv"
: >"$rows"
for ((r = 1; r <= rounds; r++)); do
    for p in "${pairs[@]}"; do
        IFS='|' read -r key what unit peer mine <<<"$p"
        a=$($peer) || die "$key: the peer failed"
        b=$($mine) || die "$key: memfabric failed"
        [[ -n $a && -n $b ]] || die "$key: no figure (peer '$a', memfabric '$b')"
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$key" "$what" "$unit" "$r" "$a" "$b" >>"$rows"
        say "round $r $key: peer $a, memfabric $b $unit"
    done
done

python3 - "$rows" "$out_json" "$rounds" <<'EOF'
import json, statistics, sys, platform, os
rows_file, out, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
pairs = {}
for line in open(rows_file):
    key, what, unit, r, a, b = line.rstrip("\n").split("\t")
    p = pairs.setdefault(key, {"what": what, "unit": unit, "rounds": []})
    p["rounds"].append({"round": int(r), "peer": float(a), "memfabric": float(b), "ratio": float(b) / float(a)})
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print(f"memfabric beside its peers: {cpu}, {os.cpu_count()} CPUs, {rounds} interleaved rounds")
print("ratio = memfabric / peer (for ns, below 1 is a lower latency; for GB/s, above 1 is more bandwidth)\n")
print(f"{'pair':<70} {'unit':<5} {'peer per round':<40} {'memfabric per round':<40} median ratio")
for key, p in pairs.items():
    peer = " ".join(f"{x['peer']:.1f}" for x in p["rounds"])
    mine = " ".join(f"{x['memfabric']:.1f}" for x in p["rounds"])
    p["median_ratio"] = statistics.median(x["ratio"] for x in p["rounds"])
    print(f"{p['what']:<70} {p['unit']:<5} {peer:<40} {mine:<40} {p['median_ratio']:.2f}")
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
json.dump({"cpu": cpu, "cpus": os.cpu_count(), "rounds": rounds, "pairs": pairs}, open(out, "w"), indent=1)
print(f"\nevery figure: {out}")
EOF
