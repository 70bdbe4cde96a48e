#!/usr/bin/env bash
# Issue 32, item 6, measured on the push-connector binary: an App ID whose project has a
# rate_limit_per_minute far below what the worker could send, a backlog of single-recipient jobs,
# the default retry tiers. Prints the sends in the first 60 s as a share of the limit (quota use)
# and the retry copies published per send.
#   usage: bench/faults/paced-quota.sh [--jobs N] [--limit PER_MINUTE] [--bin DIR]
#          (default: 8000 jobs, more than a minute at 6000/min, the release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=8000 limit=6000 bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--jobs N] [--limit PER_MINUTE] [--bin DIR]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/faults/common.sh
. bench/faults/common.sh
bin=$(fault_binaries "$bin")
fault_setup paced-quota

port=$(python3 scripts/free-port.py)
"$bin/fcm-emulator" make-service-account --project shop-prod --token-uri "http://127.0.0.1:$port/token" \
  --out "$state/sa.json" >/dev/null
"$bin/fcm-emulator" --listen "127.0.0.1:$port" --service-account "$state/sa.json" >"$state/fcm.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$state/fcm.log" && break; sleep 0.1; done
cat >"$state/apps.json" <<JSON
{"apps":[{"app_id":"shop-android","project_id":"shop-prod","credentials_file":"$state/sa.json","rate_limit_per_minute":$limit}]}
JSON
"$bin/push-connector" topology declare >/dev/null
for i in $(seq "$jobs"); do
  printf '{"job_id":"paced-%s","app_id":"shop-android","notification":{"title":"T"},"recipients":[{"token":"tok-%s"}]}\n' "$i" "$i"
done >"$state/jobs.jsonl"
"$bin/push-connector" send --no-validate "$state/jobs.jsonl" >/dev/null

http_port=$(python3 scripts/free-port.py)
"$bin/push-connector" worker --config "$state/apps.json" --no-declare --fcm-url "http://127.0.0.1:$port" \
  --http "127.0.0.1:$http_port" >"$state/worker.log" 2>&1 &
pids+=($!)
sleep 60
stats=$(curl -s "http://127.0.0.1:$port/_emulator/stats")
sent=$(echo "$stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"].get("sent",0))')
retries=$(curl -s "http://127.0.0.1:$http_port/metrics" | awk '/^push_connector_retries_total/ {s += $2} END {print s + 0}')
echo "jobs: $jobs, rate_limit_per_minute: $limit"
echo "sent in the first 60 s: $sent"
echo "quota use: $(echo "scale=3; $sent / $limit" | bc)"
echo "retry copies: $retries ($(echo "scale=4; $retries / ($sent + ($sent == 0))" | bc) per send)"
