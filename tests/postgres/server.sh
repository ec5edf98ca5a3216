#!/usr/bin/env bash
# Sourced by the rigs that need a PostgreSQL server: `pg_start` installs Debian's
# postgresql package where missing, starts a throwaway cluster in a temporary
# directory on a free port, owned by an unprivileged user, with TLS on (a CA and
# certificates it makes with openssl), and sets PG_URL (an admin URL), PG_DIR,
# PG_PID, PG_TLS (the CA, another CA and a client certificate) and PG_CTL (pg_ctl
# as the server's user); `pg_stop` stops it by that PID and removes the directory;
# `pg_ctl_do ARGS` runs pg_ctl and reads the new PID after a start or restart.
# The caller defines say() and die().

pg_start() {
    local DIR AS PORT PASSWORD PID made_policy
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
    pg_tls_files "$DIR"
    # TLS in postgresql.conf (not on the command line), so ALTER SYSTEM can turn it
    # off for the test that needs a server without it.
    printf "ssl = on\nssl_cert_file = '%s'\nssl_key_file = '%s'\nssl_ca_file = '%s'\n" \
        "$DIR/tls/server.crt" "$DIR/server.key" "$DIR/tls/ca.crt" >>"$DIR/data/postgresql.conf"
    # Before initdb's lines (the first match wins): memfabric_cert logs in by its
    # client certificate; memfabric_tls_only is refused without TLS.
    { printf 'hostssl all memfabric_cert 127.0.0.1/32 cert\nhostnossl all memfabric_tls_only 127.0.0.1/32 reject\n'
      cat "$DIR/data/pg_hba.conf"; } >"$DIR/hba" && "${AS[@]}" cp "$DIR/hba" "$DIR/data/pg_hba.conf"
    # max_connections: the 32-writer test and the suite's own connections.
    PG_OPTS="-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off"
    "${AS[@]}" "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 \
        -o "$PG_OPTS" start >/dev/null \
        || { cat "$DIR/server.log" >&2; die "pg_ctl start failed"; }
    PID="$(head -n 1 "$DIR/data/postmaster.pid")"
    say "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') running as PID $PID on 127.0.0.1:$PORT (data in $DIR)"

    PG_URL="postgres://memfabric:$PASSWORD@127.0.0.1:$PORT/postgres"
    PG_DIR="$DIR"
    PG_PID="$PID"
    PG_TLS="$DIR/tls"
    PG_CTL=("${AS[@]}" "$PGBIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60)
    PGOPTIONS='-c client_min_messages=warning' "$PGBIN/psql" -q "$PG_URL" \
        -c "CREATE ROLE memfabric_cert LOGIN" \
        -c "CREATE ROLE memfabric_tls_only LOGIN PASSWORD '$PASSWORD'" \
        -c "GRANT ALL ON DATABASE postgres TO memfabric_cert, memfabric_tls_only" >/dev/null \
        || die "creating the TLS test roles failed"
}

# A throwaway CA; a server certificate naming localhost only (so verify-full to
# 127.0.0.1 fails on the name); another CA that signed nothing the server has; a
# client certificate for memfabric_cert. Keys 0600; the server's owned by its user.
pg_tls_files() {
    local DIR="$1" T="$1/tls"
    command -v openssl >/dev/null || { [[ $(id -u) == 0 ]] && apt-get install -y -qq openssl >/dev/null 2>&1; } \
        || die "openssl is needed to make the test certificates"
    mkdir -p "$T" && chmod 755 "$T"
    (
        cd "$T"
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=memfabric test CA" -keyout ca.key -out ca.crt
        openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=another CA" -keyout other-ca.key -out other-ca.crt
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
        printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n' >server.ext
        openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.crt
        openssl req -newkey rsa:2048 -nodes -subj "/CN=memfabric_cert" -keyout client.key -out client.csr
        printf 'extendedKeyUsage=clientAuth\n' >client.ext
        openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile client.ext -out client.crt
    ) >"$DIR/tls.log" 2>&1 || { cat "$DIR/tls.log" >&2; die "openssl could not make the test certificates"; }
    chmod 600 "$T"/*.key && chmod 644 "$T"/*.crt
    cp "$T/server.key" "$DIR/server.key" && chmod 600 "$DIR/server.key"
    [[ $(id -u) == 0 ]] && chown postgres "$DIR/server.key"
    return 0
}

# pg_ctl as the server's user; after a start or restart, the new PID.
pg_ctl_do() {
    if [[ $1 == start ]]; then set -- start -o "$PG_OPTS"; fi
    "${PG_CTL[@]}" "$@" >/dev/null || return 1
    if [[ -f "$PG_DIR/data/postmaster.pid" ]]; then PG_PID="$(head -n 1 "$PG_DIR/data/postmaster.pid")"; fi
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
