#!/bin/sh
# Start / stop one throwaway PostgreSQL server for tests and benchmarks, from Debian's
# `postgresql` package: `initdb` into its own folder, its own port on 127.0.0.1, its own socket
# folder; the system cluster (if any) is not touched. Runs as the `postgres` user.
#
#   scripts/test-postgres.sh start [--dir DIR] [--owner-pid PID]
#        Creates and starts a server with a database `push` owned by user `pc` (trust auth on
#        127.0.0.1 only) and prints shell-style lines:
#        PUSH_TEST_POSTGRES_URL=postgres://pc@127.0.0.1:PORT/push  PUSH_TEST_POSTGRES_DIR=DIR
#        With --owner-pid, a watchdog stops the server when PID exits.
#   scripts/test-postgres.sh stop [--dir DIR]    Stops the server and removes its folder.
#   scripts/test-postgres.sh halt [--dir DIR]    Stops the server at once (as a crash), keeping
#        its folder; `resume` starts it again on the same port (outage tests).
#   scripts/test-postgres.sh url  [--dir DIR]    Prints the URL of a running server.
#
# DIR defaults to $PUSH_TEST_POSTGRES_DIR or /tmp/pc-test-postgres. Durability is traded for
# speed (fsync off, no synchronous commit): a test server, never a production one.
set -eu

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cmd=${1:-}
[ $# -gt 0 ] && shift
dir=${PUSH_TEST_POSTGRES_DIR:-/tmp/pc-test-postgres}
owner=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir=$2; shift 2 ;;
        --owner-pid) owner=$2; shift 2 ;;
        *) echo "test-postgres: unknown argument $1" >&2; exit 2 ;;
    esac
done

bindir() {
    for d in /usr/lib/postgresql/*/bin; do
        if [ -x "$d/initdb" ]; then echo "$d"; return 0; fi
    done
    echo "test-postgres: no PostgreSQL server found (apt-get install postgresql)" >&2
    exit 1
}

as_postgres() { # runs a command line as the postgres user (or as is, when already that user)
    if [ "$(id -un)" = postgres ]; then sh -c "$1"; else su postgres -s /bin/sh -c "$1"; fi
}

serve() { # $1 = bin dir, $2 = port: starts the server of $dir in the background
    # Closes descriptors 3-9 for the server, as test-broker.sh does: a daemon must not hold a
    # caller's lock or pipe.
    as_postgres "exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; '$1/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -t 60 \
            -o \"-p $2 -k '$dir/sock' -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off\" start" \
            >"$dir/pg_ctl.log" 2>&1
}

free_port() { # see scripts/free-port.py
    python3 "$(dirname "$self")/free-port.py"
}

case "$cmd" in
start)
    if [ -f "$dir/env" ]; then echo "test-postgres: $dir already holds a server; stop it first" >&2; exit 1; fi
    bin=$(bindir)
    port=$(free_port)
    mkdir -p "$dir/sock"
    chown -R postgres "$dir" 2>/dev/null || true
    chmod 755 "$dir"
    if ! as_postgres "'$bin/initdb' -D '$dir/data' -U pc -A trust --no-sync -E UTF8 --locale=C.UTF-8" >"$dir/initdb.log" 2>&1; then
        echo "test-postgres: initdb failed:" >&2; cat "$dir/initdb.log" >&2; exit 1
    fi
    if ! serve "$bin" "$port"; then
        echo "test-postgres: the server did not start:" >&2; cat "$dir/pg_ctl.log" "$dir/server.log" >&2 2>/dev/null; exit 1
    fi
    if ! as_postgres "'$bin/createdb' -h 127.0.0.1 -p $port -U pc push" >"$dir/createdb.log" 2>&1; then
        echo "test-postgres: createdb failed:" >&2; cat "$dir/createdb.log" >&2; exit 1
    fi
    cat > "$dir/env" <<ENV
PUSH_TEST_POSTGRES_URL=postgres://pc@127.0.0.1:$port/push
PUSH_TEST_POSTGRES_DIR=$dir
ENV
    if [ -n "$owner" ]; then
        setsid sh -c "while kill -0 $owner 2>/dev/null; do sleep 1; done; PUSH_TEST_POSTGRES_DIR='$dir' '$self' stop" </dev/null >/dev/null 2>&1 &
    fi
    cat "$dir/env"
    ;;
stop)
    if [ -d "$dir/data" ]; then
        bin=$(bindir)
        as_postgres "'$bin/pg_ctl' -D '$dir/data' -m immediate -w -t 30 stop" >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
    ;;
halt)
    as_postgres "'$(bindir)/pg_ctl' -D '$dir/data' -m immediate -w -t 30 stop" >/dev/null
    ;;
resume)
    [ -f "$dir/env" ] || { echo "test-postgres: no server in $dir" >&2; exit 1; }
    port=$(sed -n 's/^PUSH_TEST_POSTGRES_URL=.*:\([0-9]*\)\/.*/\1/p' "$dir/env")
    if ! serve "$(bindir)" "$port"; then
        echo "test-postgres: the server did not start again:" >&2; cat "$dir/pg_ctl.log" >&2; exit 1
    fi
    ;;
url)
    [ -f "$dir/env" ] || { echo "test-postgres: no server in $dir" >&2; exit 1; }
    sed -n 's/^PUSH_TEST_POSTGRES_URL=//p' "$dir/env"
    ;;
*) echo "usage: $0 start|stop|halt|resume|url [--dir DIR] [--owner-pid PID]" >&2; exit 2 ;;
esac
