#!/usr/bin/env bash
# The PostgreSQL store against a real server: a throwaway cluster from Debian's
# postgresql package, in a temporary directory, on a free port, owned by an
# unprivileged user, with TLS on (certificates made here), stopped by the PID it
# started. Runs the store's test suite on both backends (crates/store/tests/postgres.rs),
# the CLI's PostgreSQL tests (TLS modes, libpq's environment and password file,
# hostile text), a server restart under an open store, the server with ssl off,
# and the faults of tests/postgres/faults.sh, with their figures.
# Fails, never skips, when PostgreSQL cannot be installed or started.
set -euo pipefail
cd "$(dirname "$0")/../.."
say() { echo "[pg] $*" >&2; }
die() { echo "[pg] FAIL: $*" >&2; exit 1; }

# shellcheck source=server.sh
. tests/postgres/server.sh
# shellcheck source=faults.sh
. tests/postgres/faults.sh
trap 'faults_cleanup; pg_stop' EXIT
pg_start

export MEMFABRIC_TEST_PG="$PG_URL"
export MEMFABRIC_TEST_PG_TLS="$PG_TLS"
export MEMFABRIC_TEST_PG_RAN="$PG_DIR/ran"
rm -f "$MEMFABRIC_TEST_PG_RAN"
cargo test -q -p memfabric-store --test postgres -- --test-threads 4 ${MEMFABRIC_PG_TEST_FILTER:-}
cargo test -q -p memfabric --test cli postgres

# A store held open while the server restarts writes again (alone: the server goes away).
MEMFABRIC_TEST_PG_RESTART="$(printf '%q ' "${PG_CTL[@]}") restart -m fast" \
    cargo test -q -p memfabric-store --test postgres pgrestart -- --test-threads 1
pg_ctl_do status || die "the server did not come back after the restart"
say "restarted under an open store: now PID $PG_PID"

# The server without TLS: require fails in one line, prefer connects in plain.
psql -q "$PG_URL" -c "ALTER SYSTEM SET ssl = off" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
MEMFABRIC_TEST_PG_SSL_OFF=1 cargo test -q -p memfabric --test cli pgssloff -- --test-threads 1
psql -q "$PG_URL?sslmode=disable" -c "ALTER SYSTEM RESET ssl" -c "SELECT pg_reload_conf()" >/dev/null

# The suites count what they ran against the server: a run that skipped it is a failure.
ran="$(cat "$MEMFABRIC_TEST_PG_RAN" 2>/dev/null | wc -l)"
((ran >= 17)) || die "only $ran PostgreSQL tests ran against the server"
say "$ran tests ran against the server"

faults_all
say "OK; stopping PID $PG_PID"
