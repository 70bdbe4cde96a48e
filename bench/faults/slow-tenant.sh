#!/usr/bin/env bash
# Issue 52, finding 2, "one slow tenant holds every other", on the push-connector binary with
# default flags: --slow single-recipient jobs of an App ID whose project is slow, queued ahead
# of --others jobs of another App ID (another project). Three runs, each on a fresh topology and
# a fresh worker: the others alone (the baseline), behind a project whose token endpoint hangs
# (a port that accepts and never answers), and behind a project whose FCM answers take 20 s.
# Prints the others' latency (their `send` starting → the emulator receiving them: p50, p99),
# its ratio to the baseline, and how long SIGTERM took after each run.
#   usage: bench/faults/slow-tenant.sh [--slow N] [--others N] [--bin DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
slow=3000 others=200 bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --slow) slow=$2; shift 2 ;;
    --others) others=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--slow N] [--others N] [--bin DIR]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/faults/common.sh
. bench/faults/common.sh
bin=$(fault_binaries "$bin")
fault_setup slow-tenant

# A token endpoint that hangs: accepts connections, never reads or answers.
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4096)
print(s.getsockname()[1], flush=True); time.sleep(86400)' >"$state/hung.port" &
pids+=($!)
for _ in $(seq 50); do [ -s "$state/hung.port" ] && break; sleep 0.1; done
hung_port=$(cat "$state/hung.port")

port=$(python3 scripts/free-port.py)
"$bin/fcm-emulator" make-service-account --project shop-prod --token-uri "http://127.0.0.1:$port/token" --out "$state/sa.json" >/dev/null
"$bin/fcm-emulator" make-service-account --project slow-prod --token-uri "http://127.0.0.1:$port/token" --out "$state/sa-slow.json" >/dev/null
"$bin/fcm-emulator" make-service-account --project slow-prod --token-uri "http://127.0.0.1:$hung_port/token" --out "$state/sa-hung.json" >/dev/null
"$bin/fcm-emulator" --listen "127.0.0.1:$port" --service-account "$state/sa.json" --service-account "$state/sa-slow.json" \
  --record $((others * 4 + 1000)) >"$state/fcm.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$state/fcm.log" && break; sleep 0.1; done
echo "RabbitMQ system ($(scripts/rabbitmq-lines.sh version system)); $slow jobs of the slow project ahead of $others of another"

run() { # run NAME SLOW_CREDENTIALS SLOW_TOKEN_PREFIX: prints "p50 p99 received sigterm_ms" into $state/run-NAME
  local name=$1 credentials=$2 token=$3 prefix="st$1" i
  cat >"$state/apps-$name.json" <<JSON
{"apps":[{"app_id":"shop-android","project_id":"shop-prod","credentials_file":"$state/sa.json"},
         {"app_id":"slow-android","project_id":"slow-prod","credentials_file":"$state/$credentials"}]}
JSON
  for i in $(seq "$slow"); do
    printf '{"job_id":"s-%s","app_id":"slow-android","notification":{"title":"T"},"recipients":[{"token":"%sslow-%s"}]}\n' "$i" "$token" "$i"
  done >"$state/slow.jsonl"
  for i in $(seq "$others"); do
    printf '{"job_id":"o-%s","app_id":"shop-android","notification":{"title":"T"},"recipients":[{"token":"%s-other-%s"}]}\n' "$i" "$name" "$i"
  done >"$state/others.jsonl"
  "$bin/push-connector" topology declare --prefix "$prefix" >/dev/null
  "$bin/push-connector" worker --prefix "$prefix" --config "$state/apps-$name.json" --no-declare --fcm-url "http://127.0.0.1:$port" \
    --log-level warn >"$state/worker-$name.log" 2>&1 &
  local worker=$!
  pids+=("$worker")
  sleep 2
  [ "$name" = alone ] || "$bin/push-connector" send --prefix "$prefix" --no-validate "$state/slow.jsonl" >/dev/null
  local t0
  t0=$(date +%s%3N)
  "$bin/push-connector" send --prefix "$prefix" --no-validate "$state/others.jsonl" >/dev/null
  for _ in $(seq 600); do
    [ "$(curl -s "http://127.0.0.1:$port/_emulator/messages?project=shop-prod" | python3 -c "import json,sys; print(sum(1 for m in json.load(sys.stdin)['messages'] if m.get('token','').startswith('$name-other-')))")" -ge "$others" ] && break
    sleep 0.1
  done
  local stop
  stop=$(date +%s%3N)
  kill -TERM "$worker"
  wait "$worker" 2>/dev/null || true
  local stopped
  stopped=$(date +%s%3N)
  curl -s "http://127.0.0.1:$port/_emulator/messages?project=shop-prod" | python3 -c "
import json, sys
got = sorted(m['received_at_ms'] - $t0 for m in json.load(sys.stdin)['messages'] if m.get('token', '').startswith('$name-other-'))
p = lambda q: got[min(len(got) - 1, int(len(got) * q))] if got else -1
print(p(0.5), p(0.99), len(got), $stopped - $stop)" >"$state/run-$name"
}

run alone sa.json ""
run hung sa-hung.json ""
run slow20 sa-slow.json "slow20000-"
python3 - "$state" "$others" <<'PY'
import sys
state, others = sys.argv[1], int(sys.argv[2])
runs = {n: [float(x) for x in open(f"{state}/run-{n}").read().split()] for n in ("alone", "hung", "slow20")}
base = runs["alone"][0] or 1
labels = {"alone": "alone (baseline)", "hung": "behind a hung token endpoint", "slow20": "behind 20 s FCM answers"}
ok = True
for name, (p50, p99, got, term) in runs.items():
    print(f"{labels[name]:32} p50 {p50 / 1000:6.2f} s  p99 {p99 / 1000:6.2f} s  ({p50 / base:5.1f}x the baseline p50)"
          f"  received {int(got)}/{others}  SIGTERM {term / 1000:.2f} s")
    ok = ok and got == others and p50 <= 1000
print("target (the others' p50 <= 1 s in every run):", "met" if ok else "NOT met")
PY
