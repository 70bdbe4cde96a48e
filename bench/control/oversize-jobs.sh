#!/usr/bin/env bash
# Issue 52, finding 4, on the push-connector binary with default flags: jobs cheap to publish and
# costly to refuse. 4 jobs of 1 000 recipients sharing 700 KB of data (every message over FCM's
# 4 096 bytes) are queued ahead of another App ID's 100 single-recipient jobs; a fresh worker
# drains them. Prints the worker's CPU time until all 4 100 results were published and when the
# other App ID's last send reached FCM, against a run of the 100 jobs alone (same run, same
# worker flags).
#   usage: bench/control/oversize-jobs.sh [--bin DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--bin DIR]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/faults/common.sh
. bench/faults/common.sh
bin=$(fault_binaries "$bin")
fault_setup oversize-jobs
pc() { "$bin/push-connector" "$@"; }

fault_emulator
cat >"$state/apps.json" <<JSON
{"apps":[{"app_id":"shop-android","project_id":"shop-prod","credentials_file":"$state/sa.json"},
         {"app_id":"shop-ios","project_id":"shop-prod","credentials_file":"$state/sa.json"}]}
JSON
pc topology declare >/dev/null
python3 - "$state" <<'PY'
import json, sys
blob = "b" * 700_000
with open(sys.argv[1] + "/big.jsonl", "w") as f:
    for n in range(4):
        f.write(json.dumps({"job_id": f"big-{n}", "app_id": "shop-android", "notification": {"title": "T"}, "data": {"blob": blob},
                            "recipients": [{"token": f"big-{n}-{i}"} for i in range(1000)]}) + "\n")
with open(sys.argv[1] + "/other.jsonl", "w") as f:
    for n in range(100):
        f.write(json.dumps({"job_id": f"other-{n}", "app_id": "shop-ios", "notification": {"title": "T"},
                            "recipients": [{"token": f"other-{n}"}]}) + "\n")
PY
cpu() { awk '{print ($14 + $15) / 100}' "/proc/$1/stat"; }  # user + system, in seconds (100 ticks a second)

run() { # run LABEL FILE...: the files published, a worker started, timed until the other App ID's 100 sends
  local label=$1; shift
  local before; before=$(emulator_sent)
  for file in "$@"; do pc send --no-validate "$file" >/dev/null; done
  local start; start=$(date +%s.%N)
  "$bin/push-connector" worker --config "$state/apps.json" --no-declare --fcm-url "http://127.0.0.1:$port" --log-level warn \
    >"$state/$label.log" 2>&1 &
  local worker=$!
  pids+=("$worker")
  while [ $(( $(emulator_sent) - before )) -lt 100 ]; do sleep 0.02; done
  local reached; reached=$(echo "$(date +%s.%N) - $start" | bc -l)
  sleep 2  # the rejected results published meanwhile
  local used; used=$(cpu "$worker")
  kill "$worker"; wait "$worker" 2>/dev/null || true
  printf '%-22s other App ID last send %6.2f s after start   worker CPU %6.2f s\n' "$label" "$reached" "$used"
}

run "100 jobs alone" "$state/other.jsonl"
run "behind 4 oversize jobs" "$state/big.jsonl" "$state/other.jsonl"
