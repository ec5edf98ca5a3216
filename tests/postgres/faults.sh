#!/usr/bin/env bash
# Sourced by tests/postgres/run.sh once its server runs: the store's faults, each a
# test with its figures (printed as "[pg] figure: ..." lines, which
# docs/RELIABILITY.md quotes):
#   - 32 concurrent `fleet ingest` writers into one SQLite file and into PostgreSQL:
#     runs expected = runs stored, none lost, none duplicated;
#   - the server stopped (pg_ctl stop -m immediate) in the middle of a 2,000-document
#     ingest, then started: the ingest says how many documents it stored before the
#     fault, the store holds that many, and a rerun stores exactly the rest;
#   - kill -9 of an ingest, PostgreSQL and SQLite: the store opens, no run lacks its
#     figures, a rerun stores exactly the rest;
#   - the disk full under SQLite (a small tmpfs): one line, the database opens and
#     holds every earlier run.
# Needs root for the tmpfs.

FAULT_WORK=""
FAULT_MOUNT=""

faults_cleanup() {
    if [[ -n "$FAULT_MOUNT" ]]; then umount "$FAULT_MOUNT" 2>/dev/null || true; fi
    if [[ -n "$FAULT_WORK" ]]; then rm -rf "$FAULT_WORK"; fi
    FAULT_MOUNT=""
    FAULT_WORK=""
}

fig() { say "figure: $*"; }

# psql quietly; prints the one value a query returns.
pg_value() { PGOPTIONS='-c client_min_messages=warning' psql -qAt "$1" -c "$2"; }

fresh_db() {
    PGOPTIONS='-c client_min_messages=warning' psql -q "$PG_URL" \
        -c "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -c "CREATE DATABASE $1" >/dev/null
    echo "${PG_URL%/*}/$1"
}

# Runs in a store: PostgreSQL URL or SQLite file; 0 before the schema exists.
runs_in() {
    local n
    if [[ $1 == postgres://* ]]; then
        n="$(pg_value "$1" "SELECT count(*) FROM runs" 2>/dev/null)" || n=0
    else
        n="$(sqlite3 "$1" "SELECT count(*) FROM runs" 2>/dev/null)" || n=0
    fi
    echo "${n:-0}"
}

# Runs without a figure (a half-written run would be one); duplicated documents.
partial_in() {
    local q="SELECT count(*) FROM runs r WHERE NOT EXISTS (SELECT 1 FROM figures f WHERE f.run_id = r.id)"
    if [[ $1 == postgres://* ]]; then pg_value "$1" "$q"; else sqlite3 "$1" "$q"; fi
}
duplicated_in() {
    local q="SELECT count(*) - count(DISTINCT doc_hash) FROM runs"
    if [[ $1 == postgres://* ]]; then pg_value "$1" "$q"; else sqlite3 "$1" "$q"; fi
}

wait_runs() { # STORE N PID: until N runs are stored (or the ingest ended)
    local i
    for i in $(seq 1 1200); do
        (($(runs_in "$1") >= $2)) && return 0
        kill -0 "$3" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# A directory of links to the first N synthetic documents.
docs_dir() {
    local d="$FAULT_WORK/first-$1"
    if [[ ! -d $d ]]; then
        mkdir -p "$d"
        find "$FAULT_WORK/docs" -name '*.json' | sort | head -n "$1" | while read -r f; do ln -s "$f" "$d/"; done
    fi
    echo "$d"
}

new_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["new"])' "$1"; }

faults_setup() {
    command -v sqlite3 >/dev/null || { [[ $(id -u) == 0 ]] && apt-get install -y -qq sqlite3 >/dev/null 2>&1; } \
        || die "sqlite3 is needed to count the SQLite store's runs"
    cargo build -q -p memfabric --bin memfabric --example fleet_synth
    MF="$PWD/target/debug/memfabric"
    FAULT_WORK="$(mktemp -d /tmp/memfabric-faults.XXXXXX)"
    target/debug/examples/fleet_synth write --hosts 2000 --out "$FAULT_WORK/docs" --truth "$FAULT_WORK/truth.json" >/dev/null
}

fault_writers() { # STORE LABEL: 32 writers of 10 documents each
    local store="$1" parts="$FAULT_WORK/parts" pids=() i=0 f
    rm -rf "$parts" && mkdir -p "$parts"
    for f in $(find "$(docs_dir 320)" -name '*.json' | sort); do
        mkdir -p "$parts/$((i % 32))" && ln -s "$(readlink "$f")" "$parts/$((i % 32))/"; i=$((i + 1))
    done
    local start=$SECONDS
    for p in "$parts"/*; do "$MF" --quiet --store "$store" fleet ingest "$p" >/dev/null & pids+=($!); done
    for p in "${pids[@]}"; do wait "$p" || die "$2: a writer failed"; done
    local stored dup
    stored="$(runs_in "$store")"; dup="$(duplicated_in "$store")"
    fig "$2: 32 writers x 10 documents at once: 320 expected, $stored stored, $((320 - stored)) lost, $dup duplicated ($((SECONDS - start)) s)"
    ((stored == 320 && dup == 0)) || die "$2: $stored of 320 stored, $dup duplicated"
}

fault_server_stop() {
    local url docs out="$FAULT_WORK/stop" pid said held
    url="$(fresh_db mf_fault_stop)"; docs="$FAULT_WORK/docs"
    "$MF" --quiet --store "$url" fleet ingest "$docs" >"$out.out" 2>"$out.err" &
    pid=$!
    wait_runs "$url" 500 "$pid" || die "the ingest did not reach 500 runs: $(cat "$out.err")"
    pg_ctl_do stop -m immediate || die "pg_ctl stop -m immediate failed"
    if wait "$pid"; then die "the ingest succeeded without its server"; fi
    [[ $(wc -l <"$out.err") == 1 ]] || die "more than one line: $(cat "$out.err")"
    said="$(grep -o '[0-9]* documents were stored before the fault' "$out.err" | cut -d' ' -f1)"
    [[ -n $said ]] || die "the ingest did not say what it stored: $(cat "$out.err")"
    pg_ctl_do start || die "pg_ctl start failed"
    held="$(runs_in "$url")"
    # A batch the server committed as it went down is stored though the ingest could not hear it.
    ((held == said || (held > said && held <= said + 64))) || die "the ingest said $said, the store holds $held"
    "$MF" --quiet --store "$url" --json fleet ingest "$docs" >"$out.rerun" || die "the rerun failed"
    local new; new="$(new_of "$out.rerun")"
    fig "server stopped (pg_ctl stop -m immediate) mid-ingest of 2000 documents: the ingest said $said stored, the store held $held, the rerun stored $new new; $(runs_in "$url") of 2000 in the store"
    say "  its line: $(cat "$out.err")"
    ((new == 2000 - held && $(runs_in "$url") == 2000)) || die "the rerun stored $new, expected $((2000 - held))"
}

fault_kill() { # STORE LABEL
    local store="$1" docs out="$FAULT_WORK/kill" pid held partial new
    docs="$(docs_dir 600)"
    "$MF" --quiet --store "$store" fleet ingest "$docs" >/dev/null 2>"$out.err" &
    pid=$!
    wait_runs "$store" 200 "$pid" || die "$2: the ingest did not reach 200 runs"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null || true
    held="$(runs_in "$store")"; partial="$(partial_in "$store")"
    "$MF" --quiet --store "$store" --json fleet ingest "$docs" >"$out.rerun" || die "$2: the rerun failed"
    new="$(new_of "$out.rerun")"
    fig "$2: kill -9 of an ingest of 600 documents: $held stored whole, $partial without figures; the rerun stored $new new; $(runs_in "$store") of 600 in the store"
    ((partial == 0 && new == 600 - held && $(runs_in "$store") == 600)) || die "$2: kill -9 left $partial partial runs or the rerun stored $new"
}

fault_disk_full() {
    [[ $(id -u) == 0 ]] || die "the disk-full test mounts a tmpfs: run as root"
    FAULT_MOUNT="$FAULT_WORK/full"
    mkdir -p "$FAULT_MOUNT" && mount -t tmpfs -o size=16m tmpfs "$FAULT_MOUNT" || die "mounting a tmpfs failed"
    local db="$FAULT_MOUNT/runs.sqlite" err="$FAULT_WORK/full.err" said held check
    if "$MF" --quiet --store "$db" fleet ingest "$(docs_dir 600)" >/dev/null 2>"$err"; then
        die "600 documents fitted in 16 MiB"
    fi
    [[ $(wc -l <"$err") == 1 ]] || die "more than one line: $(cat "$err")"
    grep -q "full" "$err" || die "the error does not say the disk is full: $(cat "$err")"
    said="$(grep -o '[0-9]* documents were stored before the fault' "$err" | cut -d' ' -f1)"
    "$MF" --quiet --store "$db" runs list >/dev/null || die "the full database does not open"
    held="$(runs_in "$db")"; check="$(sqlite3 "$db" "PRAGMA integrity_check")"
    fig "SQLite on a 16 MiB tmpfs, 600 documents: failed with \"$(cut -c1-160 "$err")\"; it said $said stored, the database holds $held, integrity_check: $check"
    [[ $check == ok && $held == "$said" ]] || die "after the disk filled: $held runs, said $said, integrity $check"
    umount "$FAULT_MOUNT" && FAULT_MOUNT=""
}

faults_all() {
    local start=$SECONDS
    faults_setup
    fault_writers "$FAULT_WORK/writers.sqlite" "SQLite"
    fault_writers "$(fresh_db mf_fault_writers)" "PostgreSQL"
    fault_server_stop
    fault_kill "$(fresh_db mf_fault_kill)" "PostgreSQL"
    fault_kill "$FAULT_WORK/kill.sqlite" "SQLite"
    fault_disk_full
    say "faults: every figure held ($((SECONDS - start)) s)"
}
