#!/usr/bin/env bash
# The PostgreSQL store against a real server: a throwaway cluster from Debian's
# postgresql package, in a temporary directory, on a free port, owned by an
# unprivileged user, stopped by the PID it started. Runs the store's test suite on
# both backends (crates/store/tests/postgres.rs) and the CLI's PostgreSQL tests.
# Fails, never skips, when PostgreSQL cannot be installed or started.
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { echo "[pg] $*" >&2; }
die() { echo "[pg] FAIL: $*" >&2; exit 1; }

# shellcheck source=server.sh
. tests/postgres/server.sh
trap pg_stop EXIT
pg_start

export MEMFABRIC_TEST_PG="$PG_URL"
export MEMFABRIC_TEST_PG_RAN="$PG_DIR/ran"
rm -f "$MEMFABRIC_TEST_PG_RAN"
cargo test -q -p memfabric-store --test postgres -- --test-threads 4 ${MEMFABRIC_PG_TEST_FILTER:-}
cargo test -q -p memfabric --test cli postgres
# The suites count what they ran against the server: a run that skipped it is a failure.
ran="$(cat "$MEMFABRIC_TEST_PG_RAN" 2>/dev/null | wc -l)"
((ran >= 10)) || die "only $ran PostgreSQL tests ran against the server"
say "OK: $ran tests ran against the server; stopping PID $PG_PID"
