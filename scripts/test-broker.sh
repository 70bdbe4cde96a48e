#!/bin/sh
# Start / stop one isolated RabbitMQ node for tests and local development, from Debian's
# rabbitmq-server. Nothing of the system node is touched: own node name, AMQP port,
# distribution port, data and log folders, plugins file (none enabled), config file.
#
#   scripts/test-broker.sh start [--dir DIR] [--owner-pid PID]
#        Starts a node, waits until it accepts AMQP logins, prints shell-style lines:
#        PUSH_TEST_AMQP_URL=amqp://guest:guest@127.0.0.1:PORT/  PUSH_TEST_BROKER_NODE=...
#        PUSH_TEST_BROKER_DIR=...   With --owner-pid, a watchdog stops the node when PID exits.
#        The node also listens for AMQP over TLS (a throwaway CA and certificate in DIR/tls,
#        scripts/make-dev-cert.sh): PUSH_TEST_AMQPS_URL=amqps://guest:guest@localhost:PORT/?cacertfile=DIR/tls/ca.pem
#        (named localhost: librabbitmq's host-name check does not match IP addresses).
#   scripts/test-broker.sh stop [--dir DIR]      Stops the node and removes its folder.
#   scripts/test-broker.sh restart [--dir DIR]   Stops the whole node (the Erlang VM) and starts it
#        again with the same name, ports and data (a node restart, not only stop_app/start_app).
#   scripts/test-broker.sh halt [--dir DIR]      Stops the node's VM and keeps its folder (a node
#        that is down, for cluster tests); `resume` starts it again.
#   scripts/test-broker.sh resume [--dir DIR]    Starts a halted node with the same name, ports, data.
#   scripts/test-broker.sh url  [--dir DIR]      Prints the AMQP URL of a running node.
#   scripts/test-broker.sh ctl  [--dir DIR] ARGS  Runs `rabbitmqctl -n NODE ARGS`.
#
#   scripts/test-broker.sh rabbitmqctl [--dir DIR] ARGS  Runs the node's line's rabbitmqctl ARGS as
#        they are (no -n); `start` also writes DIR/rabbitmqctl, which does the same.
#
# DIR defaults to $PUSH_TEST_BROKER_DIR or /tmp/pc-test-broker. Must run as root or as the
# rabbitmq user (Debian's script drops to `rabbitmq`; the folder is owned by that user).
# rabbitmqctl uses the rabbitmq user's cookie (/var/lib/rabbitmq/.erlang.cookie), which the node
# shares, so `rabbitmqctl -n NODE ...` works (e.g. close_connection in tests).
#
# PUSH_TEST_RABBITMQ_LINE picks the RabbitMQ release line of a new node: system (the default:
# the host's rabbitmq-server), 4.0 or newest, which run from a Debian root under chroot
# (scripts/rabbitmq-lines.sh makes them). Such a node's folder lives inside the root, at the
# same path, and DIR is a symlink to it; its line has its own epmd port.
set -eu

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cmd=${1:-}
[ $# -gt 0 ] && shift
dir=${PUSH_TEST_BROKER_DIR:-/tmp/pc-test-broker}
owner=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir=$2; shift 2 ;;
        --owner-pid) owner=$2; shift 2 ;;
        *) break ;;
    esac
done

free_port() { # see scripts/free-port.py
    python3 "$(dirname "$self")/free-port.py"
}

line=${PUSH_TEST_RABBITMQ_LINE:-system}
lines="$(dirname "$self")/rabbitmq-lines.sh"

mount_proc() { # a chroot line's root needs /proc (the Erlang VM and epmd read it)
    mountpoint -q "$PUSH_TEST_BROKER_ROOT/proc" || mount -t proc proc "$PUSH_TEST_BROKER_ROOT/proc"
}

within() { # within SECONDS LINE: runs the command line LINE as the rabbitmq user of the node's
           # line, keeping the environment, killed after SECONDS ("": no limit)
    limit=""; [ -n "$1" ] && limit="timeout $1"
    if [ -n "${PUSH_TEST_BROKER_ROOT:-}" ]; then
        mount_proc
        # shellcheck disable=SC2086 # $limit: no words or two
        ERL_EPMD_PORT=$PUSH_TEST_BROKER_EPMD $limit chroot "$PUSH_TEST_BROKER_ROOT" su rabbitmq -s /bin/sh -c "$2"
    elif [ "$(id -u)" = "$(id -u rabbitmq)" ]; then
        # shellcheck disable=SC2086
        $limit sh -c "$2"
    else
        # shellcheck disable=SC2086
        $limit su rabbitmq -s /bin/sh -c "$2"
    fi
}

as_rabbitmq() { within "" "$1"; }

load() {
    [ -f "$dir/env" ] || { echo "test-broker: no broker in $dir (run: $0 start)" >&2; exit 1; }
    # shellcheck source=/dev/null
    . "$dir/env"
}

quoted() { # the arguments as one shell-quoted line
    for a in "$@"; do printf "'%s' " "$(printf '%s' "$a" | sed "s/'/'\\\\''/g")"; done
}

rabbitmqctl_line() { echo "HOME=/var/lib/rabbitmq /usr/lib/rabbitmq/bin/rabbitmqctl $(quoted "$@")"; }

ctl() { as_rabbitmq "$(rabbitmqctl_line -q -n "$PUSH_TEST_BROKER_NODE" "$@")"; }

ctl_within() { # ctl_within SECONDS ARGS...: ctl with a hard time limit
    secs=$1; shift
    within "$secs" "$(rabbitmqctl_line -q -n "$PUSH_TEST_BROKER_NODE" "$@")"
}

halt_node() { # stops the node's VM and launcher, keeping its folder
    load
    ctl_within 30 stop >/dev/null 2>&1 || true
    # the beam process of this node (its pid file), then the launcher, by their ids only
    if [ -f "$dir/beam.pid" ]; then
        beam=$(cat "$dir/beam.pid")
        i=0
        while kill -0 "$beam" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
        kill -9 "$beam" 2>/dev/null || true
        rm -f "$dir/beam.pid"
    fi
    if [ -f "$dir/pid" ]; then kill -9 -- "-$(cat "$dir/pid")" 2>/dev/null || true; fi
}

stop_node() {
    halt_node
    if [ -L "$dir" ]; then rm -rf "$(readlink "$dir")"; fi  # a node of a chroot line: its folder in the root
    rm -rf "$dir"
}

launch() { # starts the node described by $dir (env, ports, config) and waits until it is up
    load
    # shellcheck source=/dev/null
    . "$dir/ports"
    # shellcheck disable=SC2086 # two words on purpose: the AMQP and distribution ports
    set -- $PUSH_TEST_BROKER_PORTS
    export RABBITMQ_NODENAME="$PUSH_TEST_BROKER_NODE" RABBITMQ_NODE_PORT="$1" RABBITMQ_DIST_PORT="$2" \
        RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
        RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log" \
        RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" \
        RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf" RABBITMQ_CONF_ENV_FILE=/dev/null \
        RABBITMQ_PID_FILE="$dir/beam.pid" HOME=/var/lib/rabbitmq
    # The node must not inherit the caller's descriptors 3-9 (a `flock` lock, a test's pipes):
    # a daemon holding them would keep the caller's lock or pipe open long after it is gone.
    run="cd /var/lib/rabbitmq; $(command -v su) rabbitmq -s /bin/sh -c 'exec /usr/lib/rabbitmq/bin/rabbitmq-server'"
    if [ -n "${PUSH_TEST_BROKER_ROOT:-}" ]; then
        mount_proc
        export ERL_EPMD_PORT="$PUSH_TEST_BROKER_EPMD"
        run="$(command -v chroot) '$PUSH_TEST_BROKER_ROOT' su rabbitmq -s /bin/sh -c 'cd /var/lib/rabbitmq; exec /usr/lib/rabbitmq/bin/rabbitmq-server'"
    fi
    setsid sh -c "exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-; $run >>'$dir/startup.log' 2>&1" </dev/null >/dev/null 2>&1 &
    echo $! > "$dir/pid"
    # epmd knows the node only once it booted a little: poll until it answers, within a cap
    # (PUSH_TEST_BROKER_START_TIMEOUT seconds, default 90) so that a hung start fails fast.
    cap=${PUSH_TEST_BROKER_START_TIMEOUT:-90}
    deadline=$(( $(date +%s) + cap ))
    started=""
    while :; do
        left=$(( deadline - $(date +%s) ))
        [ "$left" -gt 0 ] || break
        slice=$(( left < 30 ? left : 30 ))
        if ctl_within $((slice + 10)) await_startup --timeout "$slice" >/dev/null 2>"$dir/await.err"; then
            started=yes; break
        fi
        kill -0 "$(cat "$dir/pid")" 2>/dev/null || break
        sleep 0.5
    done
    if [ -z "$started" ]; then
        echo "test-broker: node $PUSH_TEST_BROKER_NODE did not start within ${cap} s; see $dir/startup.log and $dir/log" >&2
        echo "--- startup.log (tail)" >&2; tail -20 "$dir/startup.log" >&2 2>/dev/null || true
        for f in "$dir"/log/*.log; do
            [ -f "$f" ] || continue
            echo "--- $f (tail)" >&2; tail -30 "$f" >&2
        done
        echo "--- await_startup" >&2; cat "$dir/await.err" >&2 2>/dev/null || true
        # stop what was started, by its ids, keeping the logs for a look
        if [ -f "$dir/beam.pid" ]; then kill -9 "$(cat "$dir/beam.pid")" 2>/dev/null || true; fi
        kill -9 -- "-$(cat "$dir/pid")" 2>/dev/null || true
        rm -f "$dir/env"
        exit 1
    fi
}

case "$cmd" in
start)
    if [ -f "$dir/env" ]; then echo "test-broker: $dir already holds a broker; stop it first" >&2; exit 1; fi
    root=$("$lines" root "$line")
    if [ -n "$root" ]; then
        [ -f "$root/.ready" ] || { echo "test-broker: no RabbitMQ $line root in $root (run: $lines make $line)" >&2; exit 1; }
        mkdir -p "$root$dir"
        ln -sfn "$root$dir" "$dir"
    fi
    mkdir -p "$dir"
    port=$(free_port); dist=$(free_port); tls_port=$(free_port)
    node="pctest-$$-$port@localhost"
    PUSH_TEST_BROKER_NODE=$node
    mkdir -p "$dir/mnesia" "$dir/log"
    echo '[].' > "$dir/enabled_plugins"
    env -u DEV_CERT_SAN -u DEV_CERT_DNS "$(dirname "$self")/make-dev-cert.sh" "$dir/tls" >/dev/null \
        || { echo "test-broker: cannot make the TLS listener's certificate in $dir/tls (is openssl installed?)" >&2; exit 1; }
    chmod 755 "$dir/tls"
    cat > "$dir/rabbitmq.conf" <<CONF
listeners.tcp.1 = 127.0.0.1:$port
listeners.ssl.1 = 127.0.0.1:$tls_port
ssl_options.cacertfile = $dir/tls/ca.pem
ssl_options.certfile = $dir/tls/server-cert.pem
ssl_options.keyfile = $dir/tls/server-key.pem
ssl_options.verify = verify_none
ssl_options.fail_if_no_peer_cert = false
loopback_users.guest = true
log.console = false
log.file.level = warning
CONF
    cat > "$dir/env" <<ENV
PUSH_TEST_AMQP_URL=amqp://guest:guest@127.0.0.1:$port/
PUSH_TEST_AMQPS_URL=amqps://guest:guest@localhost:$tls_port/?cacertfile=$dir/tls/ca.pem
PUSH_TEST_BROKER_NODE=$node
PUSH_TEST_BROKER_DIR=$dir
PUSH_TEST_BROKER_LINE=$line
PUSH_TEST_BROKER_ROOT=$root
PUSH_TEST_BROKER_EPMD=$("$lines" epmd "$line")
PUSH_TEST_RABBITMQCTL=$dir/rabbitmqctl
ENV
    printf '#!/bin/sh\n# rabbitmqctl of this node'"'"'s RabbitMQ line, as the rabbitmq user; arguments as they are\nexec %s rabbitmqctl --dir %s "$@"\n' \
        "$(quoted "$self")" "$(quoted "$dir")" > "$dir/rabbitmqctl"
    chmod 755 "$dir/rabbitmqctl"
    if [ -n "$root" ]; then chroot "$root" chown -R rabbitmq:rabbitmq "$dir"; else chown -R rabbitmq:rabbitmq "$dir"; fi
    chmod 755 "$dir"
    echo "PUSH_TEST_BROKER_PORTS='$port $dist'" > "$dir/ports"
    launch
    if [ -n "$owner" ]; then
        # watchdog: stop the node when its owner process is gone (even after SIGKILL)
        setsid sh -c "while kill -0 $owner 2>/dev/null; do sleep 1; done; PUSH_TEST_BROKER_DIR='$dir' '$self' stop" </dev/null >/dev/null 2>&1 &
    fi
    cat "$dir/env"
    ;;
restart)
    halt_node
    launch
    cat "$dir/env"
    ;;
halt) halt_node ;;
resume) launch; cat "$dir/env" ;;
stop) stop_node ;;
url) load; echo "$PUSH_TEST_AMQP_URL" ;;
ctl) load; ctl "$@" ;;
rabbitmqctl) load; as_rabbitmq "$(rabbitmqctl_line "$@")" ;;
*) echo "usage: $0 start|stop|restart|halt|resume|url|ctl|rabbitmqctl [--dir DIR] [--owner-pid PID]" >&2; exit 2 ;;
esac
