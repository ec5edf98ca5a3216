#!/usr/bin/env bash
# Every test: the workspace's unit and integration tests, then the rigs that need
# more than cargo (each installs the Debian packages it needs where missing, and
# fails rather than skips when it cannot run). .ci/run runs this after fmt, clippy
# and the size limits.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# The hugetlb tests need a few reserved 2 MiB pages; reserve them where we may and
# put the pool back afterwards. Without them those tests say "skipped" and pass.
pool=/proc/sys/vm/nr_hugepages
if [ -w "$pool" ]; then
    before=$(cat "$pool")
    trap 'echo "$before" > "$pool"' EXIT
    echo $((before + 96)) > "$pool" || true
fi

MEMFABRIC_FUZZ_CASES="${MEMFABRIC_FUZZ_CASES:-2000}" cargo test --workspace

# The store on PostgreSQL: a throwaway server from Debian's package, stopped by PID.
bash tests/postgres/run.sh

# fleet run through Slurm: munged, slurmctld and three slurmd on this host (Debian's
# packages), a node crashed mid-campaign, a retry, a Ctrl-C; every daemon stopped by PID.
bash tests/fleet/run.sh

# The aarch64 build and its NEON kernels: cross-built, unit-tested under qemu-user.
bash tests/aarch64/run.sh

# A real NVIDIA driver library (Debian's, no GPU here): every function memfabric
# calls is exported, it loads at run time, and no GPU is a skip.
bash tests/gpu/run.sh

# The HTML report in headless Chromium: no console message, screenshots kept.
bash tests/report/run.sh

# The multi-socket proof: a 2-socket, 3-node guest (one node CPU-less) under QEMU,
# running every measurement command and checking placement, SLIT and HMAT.
bash tests/vm/run.sh
