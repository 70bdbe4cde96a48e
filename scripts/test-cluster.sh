#!/bin/sh
# A three-node RabbitMQ cluster on one machine, for tests and chaos runs, from Debian's
# rabbitmq-server. Each node is a scripts/test-broker.sh node (own name, AMQP and distribution
# ports, data and log folders) in BASE/n1, BASE/n2, BASE/n3; n2 and n3 join n1's cluster.
# Quorum queues and streams declared afterwards are replicated on all three nodes.
#
#   scripts/test-cluster.sh start [--dir BASE] [--owner-pid PID]
#        Starts and joins the three nodes, prints shell-style lines:
#        PUSH_TEST_AMQP_URLS=url1,url2,url3  PUSH_TEST_CLUSTER_NODES='n1 n2 n3'  PUSH_TEST_CLUSTER_DIR=BASE
#   scripts/test-cluster.sh stop [--dir BASE]            Stops every node and removes BASE.
#   scripts/test-cluster.sh halt N [--dir BASE]          Stops node N (1-3), keeping its data.
#   scripts/test-cluster.sh kill N [--dir BASE]          SIGKILLs node N's VM, keeping its data.
#   scripts/test-cluster.sh resume N [--dir BASE]        Starts node N again; it rejoins the cluster.
#   scripts/test-cluster.sh urls [--dir BASE]            Prints the comma-separated AMQP URLs.
#   scripts/test-cluster.sh ctl N [--dir BASE] ARGS      `rabbitmqctl -n NODE_N ARGS`.
#
# BASE defaults to $PUSH_TEST_CLUSTER_DIR or /tmp/pc-test-cluster. Needs root or the rabbitmq user.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
broker="$here/test-broker.sh"
cmd=${1:-}
[ $# -gt 0 ] && shift
number=""
case "$cmd" in halt|kill|resume|ctl) number=${1:-}; [ $# -gt 0 ] && shift ;; esac
base=${PUSH_TEST_CLUSTER_DIR:-/tmp/pc-test-cluster}
owner=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dir) base=$2; shift 2 ;;
        --owner-pid) owner=$2; shift 2 ;;
        *) break ;;
    esac
done
if [ -n "$number" ] || [ "$cmd" = halt ] || [ "$cmd" = kill ] || [ "$cmd" = resume ] || [ "$cmd" = ctl ]; then
    case "$number" in 1|2|3) ;; *) echo "test-cluster: $cmd needs a node number 1, 2 or 3" >&2; exit 2 ;; esac
fi

node_env() { # node_env N VAR: a variable of node N's env file
    sed -n "s/^$2=//p" "$base/n$1/env"
}

urls() {
    printf '%s,%s,%s\n' "$(node_env 1 PUSH_TEST_AMQP_URL)" "$(node_env 2 PUSH_TEST_AMQP_URL)" "$(node_env 3 PUSH_TEST_AMQP_URL)"
}

stop_all() {
    for n in 1 2 3; do
        if [ -d "$base/n$n" ]; then "$broker" stop --dir "$base/n$n" >/dev/null 2>&1 || true; fi
    done
    rm -rf "$base"
    # a chroot line keeps the nodes' folders in its root (test-broker.sh removed them): the base too
    root=$("$here/rabbitmq-lines.sh" root "${PUSH_TEST_RABBITMQ_LINE:-system}" 2>/dev/null || true)
    if [ -n "$root" ]; then rmdir "$root$base" 2>/dev/null || true; fi
}

case "$cmd" in
start)
    if [ -d "$base/n1" ]; then echo "test-cluster: $base already holds a cluster; stop it first" >&2; exit 1; fi
    mkdir -p "$base"
    # the three nodes boot at once (each on its own ports and folder), then join one by one
    pids=""
    for n in 1 2 3; do
        "$broker" start --dir "$base/n$n" >"$base/start-$n.log" 2>&1 &
        pids="$pids $!"
    done
    n=0
    for pid in $pids; do
        n=$((n + 1))
        if ! wait "$pid"; then
            echo "test-cluster: node $n did not start:" >&2; cat "$base/start-$n.log" >&2; stop_all; exit 1
        fi
    done
    first=$(node_env 1 PUSH_TEST_BROKER_NODE)
    for n in 2 3; do
        if ! { "$broker" ctl --dir "$base/n$n" stop_app >/dev/null &&
               "$broker" ctl --dir "$base/n$n" join_cluster "$first" >/dev/null &&
               "$broker" ctl --dir "$base/n$n" start_app >/dev/null; }; then
            echo "test-cluster: node $n could not join $first" >&2; stop_all; exit 1
        fi
    done
    running=$("$broker" ctl --dir "$base/n1" eval 'length(rabbit_nodes:all_running()).')
    if [ "$running" != 3 ]; then echo "test-cluster: $running of 3 nodes running after the joins" >&2; stop_all; exit 1; fi
    if [ -n "$owner" ]; then
        setsid sh -c "while kill -0 $owner 2>/dev/null; do sleep 1; done; PUSH_TEST_CLUSTER_DIR='$base' '$here/test-cluster.sh' stop" </dev/null >/dev/null 2>&1 &
    fi
    echo "PUSH_TEST_AMQP_URLS=$(urls)"
    echo "PUSH_TEST_CLUSTER_NODES='$(node_env 1 PUSH_TEST_BROKER_NODE) $(node_env 2 PUSH_TEST_BROKER_NODE) $(node_env 3 PUSH_TEST_BROKER_NODE)'"
    echo "PUSH_TEST_CLUSTER_DIR=$base"
    ;;
stop) stop_all ;;
halt) "$broker" halt --dir "$base/n$number" ;;
kill)
    if [ -f "$base/n$number/beam.pid" ]; then kill -9 "$(cat "$base/n$number/beam.pid")" 2>/dev/null || true; rm -f "$base/n$number/beam.pid"; fi
    if [ -f "$base/n$number/pid" ]; then kill -9 -- "-$(cat "$base/n$number/pid")" 2>/dev/null || true; fi
    ;;
resume) "$broker" resume --dir "$base/n$number" >/dev/null; echo "PUSH_TEST_AMQP_URLS=$(urls)" ;;
urls) urls ;;
ctl) "$broker" ctl --dir "$base/n$number" "$@" ;;
*) echo "usage: $0 start|stop|halt N|kill N|resume N|urls|ctl N [--dir BASE] ARGS [--owner-pid PID]" >&2; exit 2 ;;
esac
