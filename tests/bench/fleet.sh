#!/usr/bin/env bash
# The fleet benchmark (docs/PERFORMANCE.md, "Fleet ingest and report"): writes a
# synthetic fleet with planted faults, ingests it into a fresh SQLite store, reports
# on it, and scores the report against the planted faults. A benchmark, not a test:
# it prints times and scores and passes whatever they are.
#
#   tests/bench/fleet.sh [HOSTS]      (default 10000; needs about 3 GB in $TMPDIR)
set -euo pipefail
hosts=${1:-10000}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build --release -q -p memfabric --bin memfabric --example fleet_synth
bin=target/release/memfabric
synth=target/release/examples/fleet_synth
work=$(mktemp -d "${TMPDIR:-/tmp}/memfabric-fleet-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

now() { date +%s.%N; }
took() { echo "$2 - $1" | bc; }

t0=$(now)
"$synth" write --hosts "$hosts" --out "$work/docs" --truth "$work/truth.json"
t1=$(now)
echo "wrote $hosts documents ($(du -sh "$work/docs" | cut -f1)) in $(took "$t0" "$t1") s"

t0=$(now)
"$bin" --quiet --store "$work/fleet.sqlite" fleet ingest --campaign bench "$work/docs"
t1=$(now)
echo "ingest: $(took "$t0" "$t1") s (store $(du -sh "$work/fleet.sqlite" | cut -f1))"

t0=$(now)
"$bin" --quiet --store "$work/fleet.sqlite" fleet ingest --campaign bench "$work/docs" | tail -1
t1=$(now)
echo "ingest again (all duplicates): $(took "$t0" "$t1") s"

t0=$(now)
"$bin" --quiet --store "$work/fleet.sqlite" --json fleet report --campaign bench > "$work/report.json"
t1=$(now)
echo "report --json: $(took "$t0" "$t1") s"
t0=$(now)
"$bin" --quiet --store "$work/fleet.sqlite" fleet report --campaign bench > "$work/report.txt"
t1=$(now)
echo "report (text): $(took "$t0" "$t1") s; first line: $(head -1 "$work/report.txt")"

"$synth" score --truth "$work/truth.json" --report "$work/report.json"
