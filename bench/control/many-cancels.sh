#!/usr/bin/env bash
# Issue 52, finding 3, on the push-connector binary with default flags: what cancels in force cost
# every job. For each count of one-job cancels (0, then N, default 10 000, written straight to the
# control log as `push-connector cancel --job-id` writes them, none matching), a fresh worker
# drains the same 10 000 single-recipient jobs. Prints the control log catch-up at start (from
# the worker's "control log read" line) and the drain rate (jobs/s from the first to the last
# send the emulator counts), then the rate with N cancels over the rate with none.
#   usage: bench/control/many-cancels.sh [--cancels N] [--jobs N] [--bin DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
cancels=10000 jobs=10000 bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cancels) cancels=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--cancels N] [--jobs N] [--bin DIR]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/faults/common.sh
. bench/faults/common.sh
bin=$(fault_binaries "$bin")
fault_setup many-cancels
pc() { "$bin/push-connector" "$@"; }

fault_emulator
cat >"$state/apps.json" <<JSON
{"apps":[{"app_id":"shop-android","project_id":"shop-prod","credentials_file":"$state/sa.json"}]}
JSON
pc topology declare >/dev/null
python3 - "$state/jobs.jsonl" "$jobs" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for j in range(int(sys.argv[2])):
        f.write(json.dumps({"job_id": f"j-{j}", "app_id": "shop-android", "campaign": f"C{j % 50}",
                            "notification": {"title": "T"}, "recipients": [{"token": f"t-{j}"}]}) + "\n")
PY

# One run: the jobs queued, a worker started, timed until every job is sent.
run() { # run LABEL
  pc send --no-validate "$state/jobs.jsonl" >/dev/null
  local before start now count
  before=$(emulator_sent)
  local launched
  launched=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)
  "$bin/push-connector" worker --config "$state/apps.json" --no-declare --fcm-url "http://127.0.0.1:$port" --log-level info \
    >"$state/$1.log" 2>&1 &
  local worker=$!
  pids+=("$worker")
  start=""
  while :; do
    count=$(( $(emulator_sent) - before ))
    now=$(date +%s.%N)
    if [ -z "$start" ] && [ "$count" -gt 0 ]; then start=$now first=$count; fi
    [ "$count" -ge "$jobs" ] && break
    sleep 0.05
  done
  kill "$worker"; wait "$worker" 2>/dev/null || true
  local catchup
  catchup=$(python3 - "$state/$1.log" "$launched" <<'PY'
import sys, datetime
def at(text): return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
read = next(at(l.split()[0]) for l in open(sys.argv[1]) if "control log read" in l)
print(f"{(read - at(sys.argv[2])).total_seconds():.2f}")
PY
)
  local rate
  rate=$(echo "($jobs - $first) / ($now - $start)" | bc -l)
  printf '%-16s control log catch-up %5s s   drain %8.0f jobs/s\n' "$1" "$catchup" "$rate" >&2
  echo "$rate"
}

none=$(run "no cancels")
python3 - "$PUSH_TEST_AMQP_URL" "$cancels" <<'PY'
import json, sys, time, pika
url, count = sys.argv[1], int(sys.argv[2])
connection = pika.BlockingConnection(pika.URLParameters(url))
channel = connection.channel()
channel.confirm_delivery()
now = int(time.time() * 1000)
for i in range(count):
    record = {"id": f"cancel-bench-{i}", "kind": "cancel", "job_id": f"not-queued-{i}", "reason": "bench",
              "at": now, "until": now + 7 * 86_400_000}
    channel.basic_publish("", "push.control.log", json.dumps(record).encode(),
                          pika.BasicProperties(content_type="application/json", delivery_mode=2))
connection.close()
PY
with=$(run "$cancels cancels")
printf 'rate with %d cancels / rate with none: %.2f\n' "$cancels" "$(echo "$with / $none" | bc -l)"
