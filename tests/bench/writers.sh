#!/usr/bin/env bash
# Many writers at once into one PostgreSQL store (docs/FLEET.md, "The 10,000-node
# case"): a throwaway server as in tests/postgres, a synthetic fleet, and K
# concurrent `memfabric fleet ingest` processes each storing its share, for each K
# given. Prints the wall time, the aggregate rate and the runs counted in the store.
# A benchmark, not a test.
#
#   tests/bench/writers.sh [DOCS] [K...]      (default 2000 documents, K = 1 16 64)
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { echo "[writers] $*" >&2; }
die() { echo "[writers] FAIL: $*" >&2; exit 1; }
docs=${1:-2000}
shift || true
ks=("${@:-1 16 64}")
read -r -a ks <<<"${ks[*]}"
cargo build --release -q -p memfabric --bin memfabric --example fleet_synth
MF=$PWD/target/release/memfabric
work=$(mktemp -d "${TMPDIR:-/tmp}/memfabric-writers.XXXXXX")
# shellcheck source=../postgres/server.sh
. tests/postgres/server.sh
trap 'pg_stop; rm -rf "$work"' EXIT
pg_start
target/release/examples/fleet_synth write --hosts "$docs" --out "$work/docs" --truth "$work/truth.json"
base=${PG_URL%/*}
for k in "${ks[@]}"; do
    db="mf_writers_$k"
    PGOPTIONS='-c client_min_messages=warning' psql -q "$PG_URL" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
    rm -rf "$work/parts" && mkdir -p "$work/parts"
    i=0
    for f in "$work"/docs/*.json; do
        d="$work/parts/$((i % k))"; mkdir -p "$d"; ln -s "$f" "$d/"; i=$((i + 1))
    done
    # The schema is made once, as a campaign's first store would; then every writer starts.
    "$MF" --quiet --store "$base/$db" runs list >/dev/null 2>&1 || true
    start=$(date +%s.%N)
    pids=()
    for p in "$work"/parts/*; do
        "$MF" --quiet --store "$base/$db" fleet ingest --campaign "k$k" "$p" >/dev/null & pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || die "a writer failed"; done
    end=$(date +%s.%N)
    stored=$("$MF" --quiet --store "$base/$db" --json runs list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["result"]))')
    secs=$(echo "$end - $start" | bc)
    printf '[writers] %3d writers: %d documents in %.1f s = %.0f documents/s; %d runs in the store\n' \
        "$k" "$docs" "$secs" "$(echo "$docs / $secs" | bc -l)" "$stored"
    [[ $stored == "$docs" ]] || die "$stored runs stored, $docs expected"
done
