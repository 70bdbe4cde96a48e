#!/bin/sh
# shellcheck disable=SC2086 # $b and $row are split into words on purpose
# DLQ tool benchmark: N dead letters through dlq import / stats / list / export / replay, against
# `push-connector send` of the same N jobs (pipelined publisher confirms) as the baseline, then
# `dlq replay` with windows 1, 16, 100, 300 (default) and 1000, each on N freshly imported dead letters.
#   bench/dlq/run.sh [N]        (default 1000; builds push-connector in release mode;
#                               WINDOWS="1 16 100 300 1000" picks the replay windows)
# Starts its own broker (scripts/test-broker.sh) and stops it at the end.
set -eu
n=${1:-1000}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
timeout 900 swift build -c release --product push-connector >/dev/null
bin=$root/.build/release/push-connector
dir=$(mktemp -d /tmp/dlq-bench.XXXXXX)
broker_dir=/tmp/dlq-bench-broker-$$   # outside $dir: the rabbitmq user must reach it
eval "$(scripts/test-broker.sh start --dir "$broker_dir" --owner-pid $$ | sed 's/^/export /')"
trap 'scripts/test-broker.sh stop --dir "$broker_dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
b="--amqp-url $PUSH_TEST_AMQP_URL --prefix bench"
$bin topology declare $b >/dev/null

python3 - "$n" "$dir" <<'PY'
import json, sys
n, d = int(sys.argv[1]), sys.argv[2]
with open(d + "/dlq.jsonl", "w") as dl, open(d + "/jobs.jsonl", "w") as jobs:
    for i in range(n):
        job = json.dumps({"job_id": "bench-%d" % i, "app_id": "app-%d" % (i % 3),
                          "notification": {"title": "T", "body": "B"}, "recipients": [{"token": "dev-%d" % i}]})
        jobs.write(job + "\n")
        h = {"push-error-code": {"type": "string", "value": "UNKNOWN_APP"},
             "push-error-message": {"type": "string", "value": "unknown App ID"},
             "push-attempts": {"type": "int", "value": 1}, "push-replays": {"type": "int", "value": 0},
             "push-first-failed-at": {"type": "string", "value": "2026-11-29T10:00:00Z"},
             "push-last-failed-at": {"type": "string", "value": "2026-11-29T10:00:00Z"}}
        dl.write(json.dumps({"format": "push-connector-dlq/1", "body_encoding": "utf8", "body": job,
                             "properties": {"content_type": "application/json", "delivery_mode": 2}, "headers": h}) + "\n")
PY

secs() { date +%s.%N; }
rate() { python3 -c "import sys; print('%8.0f' % ($n / ($2 - $1)))" "$1" "$2"; }
count() { $bin dlq stats --json $b | python3 -c "import json,sys; print(json.load(sys.stdin)['total'])"; }
t0=$(secs); $bin send --no-validate $b "$dir/jobs.jsonl" >/dev/null; t1=$(secs)
$bin dlq import $b "$dir/dlq.jsonl" >/dev/null; t2=$(secs)
$bin dlq stats $b >/dev/null; t3=$(secs)
$bin dlq list $b >/dev/null; t4=$(secs)
$bin dlq export $b "$dir/out.jsonl" >/dev/null; t5=$(secs)
$bin dlq replay $b >/dev/null; t6=$(secs)
rows="send (baseline, pipelined confirms)|$t0|$t1
dlq import (window 300, the default)|$t1|$t2
dlq stats (consume, copy back, window 16)|$t2|$t3
dlq list|$t3|$t4
dlq export|$t4|$t5
dlq replay (window 300, the default)|$t5|$t6"
left=$(count)
[ "$left" = 0 ] || { echo "replay left $left dead letters" >&2; exit 1; }
for w in ${WINDOWS:-1 16 100 300 1000}; do
    $bin dlq purge --yes $b >/dev/null
    $bin dlq import $b "$dir/dlq.jsonl" >/dev/null
    a=$(secs); $bin dlq replay --window $w $b >/dev/null; z=$(secs)
    rows="$rows
dlq replay --window $w|$a|$z"
done
echo "N=$n messages; msg/s (ratio to send in the same run)"
base=$(rate "$t0" "$t1")
echo "$rows" | while IFS='|' read -r label a z; do
    r=$(rate "$a" "$z")
    printf '%-44s %s/s  x%s\n' "$label" "$r" "$(python3 -c "print('%.2f' % ($r / $base))")"
done
