#!/usr/bin/env bash
# Issue 32, item 1, measured on the push-connector binary: an FCM endpoint whose certificate
# (signed by a CA the worker trusts) names another host. Prints the connections the worker
# opened in the first 10 s, the time to the first log line naming the cause, what became of the
# jobs (no dead letters, nothing sent), and how long SIGTERM took in that state.
#   usage: bench/faults/tls-mismatch.sh [--jobs N] [--bin DIR]   (default: 1000 jobs, the release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=1000 bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--jobs N] [--bin DIR]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/faults/common.sh
. bench/faults/common.sh
bin=$(fault_binaries "$bin")
fault_setup tls-mismatch

# Tokens from a plain emulator; sends to one whose certificate names wrong.example.
token_port=$(python3 scripts/free-port.py)
"$bin/fcm-emulator" make-service-account --project shop-prod --token-uri "http://127.0.0.1:$token_port/token" \
  --out "$state/sa.json" >/dev/null
"$bin/fcm-emulator" --listen "127.0.0.1:$token_port" --service-account "$state/sa.json" >"$state/tokens.log" 2>&1 &
pids+=($!)
DEV_CERT_SAN=DNS:wrong.example scripts/make-dev-cert.sh "$state/certs" >/dev/null
fcm_port=$(python3 scripts/free-port.py)
"$bin/fcm-emulator" --listen "127.0.0.1:$fcm_port" --no-auth --tls-cert "$state/certs/server.pem" \
  --tls-key "$state/certs/server-key.pem" >"$state/fcm.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$state/fcm.log" && grep -q "listening on" "$state/tokens.log" && break; sleep 0.1; done

cat >"$state/apps.json" <<JSON
{"apps":[{"app_id":"shop-android","project_id":"shop-prod","credentials_file":"$state/sa.json"}]}
JSON
"$bin/push-connector" topology declare >/dev/null
for i in $(seq "$jobs"); do
  printf '{"job_id":"tls-%s","app_id":"shop-android","notification":{"title":"T"},"recipients":[{"token":"tok-%s"}]}\n' "$i" "$i"
done >"$state/jobs.jsonl"
"$bin/push-connector" send --no-validate "$state/jobs.jsonl" >/dev/null

started=$(date +%s.%N)
"$bin/push-connector" worker --config "$state/apps.json" --no-declare --fcm-url "https://127.0.0.1:$fcm_port" \
  --ca-file "$state/certs/ca.pem" --log-format json >"$state/worker.log" 2>&1 &
worker=$!
pids+=("$worker")
first_line=""
while [ "$(echo "$(date +%s.%N) - $started < 10" | bc)" = 1 ]; do
  if [ -z "$first_line" ] && grep -q "project paused" "$state/worker.log"; then
    first_line=$(echo "$(date +%s.%N) - $started" | bc)
  fi
  sleep 0.05
done
connections=$(curl -sk "https://127.0.0.1:$fcm_port/_emulator/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["connections_accepted"])')
sent=$(curl -sk "https://127.0.0.1:$fcm_port/_emulator/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"].get("sent",0))')
dlq=$("$bin/push-connector" dlq stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
term=$(date +%s.%N)
kill -TERM "$worker"
wait "$worker" || true
stopped=$(echo "$(date +%s.%N) - $term" | bc)
echo "jobs: $jobs"
echo "connections opened in the first 10 s: $connections"
echo "first log line naming the cause after: ${first_line:-none} s"
grep -m1 "project paused" "$state/worker.log" || true
echo "sent: $sent, dead-lettered: $dlq"
echo "SIGTERM to exit: $stopped s"
