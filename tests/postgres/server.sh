#!/usr/bin/env bash
# Sourced by the rigs that need a PostgreSQL server: `pg_start` installs Debian's
# postgresql package where missing, starts a throwaway cluster in a temporary
# directory on a free port, owned by an unprivileged user, and sets PG_URL (an admin
# URL), PG_DIR and PG_PID; `pg_stop` stops it by that PID and removes the directory.
# The caller defines say() and die().

pg_start() {
    local PGBIN DIR AS PORT PASSWORD PID made_policy
    pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
    PGBIN="$(pg_bin || true)"
    if [[ -z "$PGBIN" || ! -x "$PGBIN/initdb" ]]; then
        [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null \
            || die "PostgreSQL is not installed (Debian: apt-get install postgresql) and this user cannot install it"
        say "installing postgresql"
        # The package starts a system cluster where it can; this test wants none.
        made_policy=0
        if [[ ! -e /usr/sbin/policy-rc.d ]]; then
            printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; made_policy=1
        fi
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq postgresql >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq postgresql >/dev/null 2>&1; } \
            || { ((made_policy)) && rm -f /usr/sbin/policy-rc.d; die "apt-get install postgresql failed"; }
        ((made_policy)) && rm -f /usr/sbin/policy-rc.d
        PGBIN="$(pg_bin)"
        [[ -x "$PGBIN/initdb" ]] || die "postgresql installed but no initdb under /usr/lib/postgresql/*/bin"
    fi

    # initdb refuses to run as root: run the server as the package's `postgres` user.
    DIR="$(mktemp -d /tmp/memfabric-pg.XXXXXX)"
    if [[ $(id -u) == 0 ]]; then
        id postgres >/dev/null 2>&1 || die "no 'postgres' user to run the server as"
        chown postgres "$DIR"
        AS=(runuser -u postgres --)
    else
        AS=()
    fi
    # Known to pg_stop from here on, so a failed start still removes the directory.
    PG_DIR="$DIR"

    PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    PASSWORD="mf-$RANDOM-$RANDOM"
    printf '%s\n' "$PASSWORD" >"$DIR/pw"
    [[ $(id -u) == 0 ]] && chown postgres "$DIR/pw"
    "${AS[@]}" "$PGBIN/initdb" -D "$DIR/data" -U memfabric --pwfile="$DIR/pw" -A scram-sha-256 -E UTF8 \
        --no-sync >"$DIR/initdb.log" 2>&1 || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
    # max_connections: the 32-writer test and the suite's own connections.
    "${AS[@]}" "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
        -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off" start >/dev/null \
        || { cat "$DIR/server.log" >&2; die "pg_ctl start failed"; }
    PID="$(head -n 1 "$DIR/data/postmaster.pid")"
    say "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') running as PID $PID on 127.0.0.1:$PORT (data in $DIR)"

    PG_URL="postgres://memfabric:$PASSWORD@127.0.0.1:$PORT/postgres"
    PG_DIR="$DIR"
    PG_PID="$PID"
}

pg_stop() {
    if [[ -n "${PG_PID:-}" ]] && kill -0 "$PG_PID" 2>/dev/null; then
        kill -TERM "$PG_PID"
        for _ in $(seq 1 100); do kill -0 "$PG_PID" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$PG_PID" 2>/dev/null && { say "server $PG_PID did not stop on SIGTERM; killing it"; kill -KILL "$PG_PID"; }
    fi
    [[ -n "${PG_DIR:-}" ]] && rm -rf "$PG_DIR"
    PG_PID=""
}
