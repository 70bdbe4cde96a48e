#!/bin/sh
# AMQP layer benchmark: starts a private RabbitMQ node (scripts/test-broker.sh), builds
# amqp-bench in release mode (through the build lock) and runs it. Usage:
#   bench/amqp/run.sh [messages=20000] [window=1000]
#   bench/amqp/run.sh results [messages=20000] [window=1000] [rounds=2]   broker CPU per result
# Set PUSH_TEST_AMQP_URL to use a running broker instead (results mode then needs BEAM_PID).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
flock /tmp/swift-build.lock swift build -c release --product amqp-bench -Xswiftc -warnings-as-errors >/dev/null
url=${PUSH_TEST_AMQP_URL:-}
dir=""
if [ -z "$url" ]; then
    dir=/tmp/pc-bench-broker-$$
    url=$("$root/scripts/test-broker.sh" start --dir "$dir" --owner-pid $$ | sed -n 's/^PUSH_TEST_AMQP_URL=//p')
    trap '"$root/scripts/test-broker.sh" stop --dir "$dir"' EXIT
fi
if [ "${1:-}" = results ]; then
    [ -n "$dir" ] && BEAM_PID=$(cat "$dir/beam.pid") && export BEAM_PID
    "$root/.build/release/amqp-bench" "$url" results "${2:-20000}" "${3:-1000}" "${4:-2}"
else
    "$root/.build/release/amqp-bench" "$url" "${1:-20000}" "${2:-1000}"
fi
