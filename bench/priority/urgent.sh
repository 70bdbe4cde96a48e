#!/usr/bin/env bash
# Issue 28, "urgent under load", on the push-connector binary with default flags: 200 000
# single-recipient normal jobs queued and draining through one worker; 5 s after the worker
# starts, 100 high-priority jobs are sent one every 100 ms (`push-connector send --priority high`,
# one process each: its start-up is counted in the latency). Prints the time from each urgent
# send's start to the emulator receiving it (p50, p99, max) and the normal jobs' drain rate over
# the same 10 s, against a baseline run without urgent jobs (same broker line, same run).
#   usage: bench/priority/urgent.sh [--normal N] [--line system|4.0|newest] [--quota PER_MINUTE] [--bin DIR]
# --quota puts the normal jobs' project over its FCM quota (the emulator answers 429 past PER_MINUTE
# sends a minute); the urgent jobs are then an App ID of another project, as FCM's quota is per
# project: no client can send to a project FCM refuses.
set -euo pipefail
cd "$(dirname "$0")/../.."
normal=200000 line=system quota=0 bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --normal) normal=$2; shift 2 ;;
    --line) line=$2; shift 2 ;;
    --quota) quota=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--normal N] [--line system|4.0|newest] [--quota PER_MINUTE] [--bin DIR]" >&2; exit 2 ;;
  esac
done
export PUSH_TEST_RABBITMQ_LINE=$line
[ "$line" = system ] || scripts/rabbitmq-lines.sh make "$line" >/dev/null
# shellcheck source=bench/faults/common.sh
. bench/faults/common.sh
bin=$(fault_binaries "$bin")
fault_setup urgent
echo "RabbitMQ $line ($(scripts/rabbitmq-lines.sh version "$line")), $normal normal jobs" \
  "$([ "$quota" -gt 0 ] && echo "over an FCM quota of $quota/min" || echo "(no quota)")"

urgent_project=shop-prod urgent_app=shop-android
[ "$quota" -gt 0 ] && urgent_project=tx-prod urgent_app=shop-transactional
for i in $(seq "$normal"); do
  printf '{"job_id":"n-%s","app_id":"shop-android","campaign":"C","notification":{"title":"T"},"recipients":[{"token":"n-%s"}]}\n' "$i" "$i"
done >"$state/normal.jsonl"

run() { # run WITH_URGENT: one measurement on a fresh topology; prints its figures into $state/run-$1
  local with=$1 prefix="u$1" port
  port=$(python3 scripts/free-port.py)
  "$bin/fcm-emulator" make-service-account --project shop-prod --token-uri "http://127.0.0.1:$port/token" --out "$state/sa.json" >/dev/null
  "$bin/fcm-emulator" make-service-account --project tx-prod --token-uri "http://127.0.0.1:$port/token" --out "$state/sa-tx.json" >/dev/null
  local quota_flag=()
  [ "$quota" -gt 0 ] && quota_flag=(--quota-per-minute "$quota")
  "$bin/fcm-emulator" --listen "127.0.0.1:$port" --service-account "$state/sa.json" --service-account "$state/sa-tx.json" \
    --record $((normal + 1000)) "${quota_flag[@]}" >"$state/fcm-$with.log" 2>&1 &
  local emulator=$!
  pids+=("$emulator")
  for _ in $(seq 100); do grep -q "listening on" "$state/fcm-$with.log" && break; sleep 0.1; done
  cat >"$state/apps.json" <<JSON
{"apps":[{"app_id":"shop-android","project_id":"shop-prod","credentials_file":"$state/sa.json"},
         {"app_id":"shop-transactional","project_id":"tx-prod","credentials_file":"$state/sa-tx.json"}]}
JSON
  "$bin/push-connector" topology declare --prefix "$prefix" >/dev/null
  "$bin/push-connector" send --prefix "$prefix" --no-validate "$state/normal.jsonl" >/dev/null
  "$bin/push-connector" worker --prefix "$prefix" --config "$state/apps.json" --no-declare --fcm-url "http://127.0.0.1:$port" \
    --log-level warn >"$state/worker-$with.log" 2>&1 &
  local worker=$!
  pids+=("$worker")
  sleep 5
  local t0 i
  t0=$(date +%s%3N)
  : >"$state/urgent-$with.tsv"
  for i in $(seq 100); do
    python3 -c "import time,sys; time.sleep(max(0, ($t0 + $i * 100 - 100) / 1000 - time.time()))"
    if [ "$with" = 1 ]; then
      printf '{"job_id":"u-%s","app_id":"%s","notification":{"title":"Code"},"recipients":[{"token":"urgent-%s"}]}\n' \
        "$i" "$urgent_app" "$i" >"$state/u.json"
      echo "urgent-$i $(date +%s%3N)" >>"$state/urgent-$with.tsv"
      "$bin/push-connector" send --prefix "$prefix" --priority high "$state/u.json" >/dev/null
    fi
  done
  sleep 2
  curl -s "http://127.0.0.1:$port/_emulator/messages" >"$state/messages-$with.json"
  kill "$worker" "$emulator" 2>/dev/null || true
  wait "$worker" "$emulator" 2>/dev/null || true
  python3 - "$state" "$with" "$t0" "$urgent_project" <<'PY'
import json, sys
state, with_urgent, t0, project = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
messages = json.load(open(f"{state}/messages-{with_urgent}.json"))["messages"]
times = [m["received_at_ms"] for m in messages if m.get("token", "").startswith("n-")]
normal = sum(1 for t in times if t0 <= t < t0 + 10_000)
out = {"normal_per_s": normal / 10, "normal_total": len(times),
       "normal_from_s": (min(times) - t0) / 1000 if times else None, "normal_to_s": (max(times) - t0) / 1000 if times else None}
if with_urgent == "1":
    sent = {l.split()[0]: int(l.split()[1]) for l in open(f"{state}/urgent-1.tsv")}
    got = {m["token"]: m["received_at_ms"] for m in messages if m.get("token", "").startswith("urgent-")}
    lat = sorted(got[t] - sent[t] for t in sent if t in got)
    out.update(urgent_received=len(lat), missing=len(sent) - len(lat), wrong_project=sum(
        1 for m in messages if m.get("token", "").startswith("urgent-") and m["project"] != project))
    if lat:
        out.update(p50=lat[len(lat) // 2], p99=lat[min(len(lat) - 1, int(len(lat) * 0.99))], max=lat[-1])
json.dump(out, open(f"{state}/run-{with_urgent}.json", "w"))
PY
}

run 0
run 1
python3 - "$state" <<'PY'
import json, sys
base, urgent = (json.load(open(f"{sys.argv[1]}/run-{n}.json")) for n in (0, 1))
print(f"urgent: {urgent['urgent_received']} of 100 received, p50 {urgent.get('p50')} ms, p99 {urgent.get('p99')} ms, max {urgent.get('max')} ms")
ratio = urgent["normal_per_s"] / base["normal_per_s"] if base["normal_per_s"] else float("nan")
for name, r in (("without", base), ("with", urgent)):
    print(f"run {name} urgent jobs: {r['normal_total']} normal sends received, from {r['normal_from_s']} s to {r['normal_to_s']} s after the urgent phase began")
print(f"normal drain over the same 10 s: {urgent['normal_per_s']:.0f}/s with urgent jobs, {base['normal_per_s']:.0f}/s without: {ratio:.2f}x")
ok = urgent["urgent_received"] == 100 and urgent["p99"] <= 1000 and urgent["p50"] <= 200 and ratio >= 0.9
print("targets (p99 <= 1000 ms, p50 <= 200 ms, drain >= 0.9x):", "met" if ok else "NOT met")
PY
