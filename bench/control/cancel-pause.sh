#!/usr/bin/env bash
# Issue 28, on the push-connector binary with default flags.
# Cancel under load: 3 worker processes drain a campaign of 1 000 jobs x 100 recipients; it is
#   cancelled once about a third has reached FCM. Prints the sends after `cancel` returned (the
#   bound: the workers' windows, 3 x 2 000), checks that every recipient has exactly one result,
#   sent or cancelled, that each token reached FCM at most once and only if its result is sent,
#   and that retry copies coming back after the cancel are cancelled (1 job in 10 has a recipient
#   whose first attempt fails);
#   then a fourth worker started after the cancel gets 10 more jobs of the campaign: all cancelled.
# Pause: an App ID with 20 000 queued jobs is paused; another App ID's 100 jobs published behind
#   them must complete within 2 s; after `resume` every paused job is sent exactly once.
#   usage: bench/control/cancel-pause.sh [--line system|4.0|newest] [--bin DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
line=system bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --line) line=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--line system|4.0|newest] [--bin DIR]" >&2; exit 2 ;;
  esac
done
export PUSH_TEST_RABBITMQ_LINE=$line
[ "$line" = system ] || scripts/rabbitmq-lines.sh make "$line" >/dev/null
# shellcheck source=bench/faults/common.sh
. bench/faults/common.sh
bin=$(fault_binaries "$bin")
fault_setup cancel-pause
echo "RabbitMQ $line ($(scripts/rabbitmq-lines.sh version "$line"))"
pc() { "$bin/push-connector" "$@"; }

fault_emulator --record 200000
cat >"$state/apps.json" <<JSON
{"apps":[{"app_id":"shop-android","project_id":"shop-prod","credentials_file":"$state/sa.json"},
         {"app_id":"shop-ios","project_id":"shop-prod","credentials_file":"$state/sa.json"}]}
JSON
pc topology declare >/dev/null
worker() { # worker NAME: a worker process with default flags
  pc worker --config "$state/apps.json" --no-declare --fcm-url "http://127.0.0.1:$port" --log-level warn >"$state/$1.log" 2>&1 &
  pids+=($!)
  eval "$1_pid=$!"
}

# --- cancel under load
python3 - "$state/campaign.jsonl" <<'PY'
import json, sys
def token(j, r):  # the first recipient of 1 job in 10 fails once: its retry copy comes back later
    return f"flaky1-c-{j}-{r}" if r == 0 and j % 10 == 0 else f"c-{j}-{r}"
with open(sys.argv[1], "w") as f:
    for j in range(1000):
        f.write(json.dumps({"job_id": f"c-{j}", "app_id": "shop-android", "campaign": "WRONG", "notification": {"title": "T"},
                            "recipients": [{"token": token(j, r)} for r in range(100)]}) + "\n")
PY
pc send --no-validate "$state/campaign.jsonl" >/dev/null
worker w1; worker w2; worker w3
while [ "$(emulator_sent)" -lt 33000 ]; do sleep 0.05; done
pc cancel --campaign WRONG --reason "wrong segment" >"$state/cancel.out"
returned=$(date +%s%3N)
at_cancel=$(emulator_sent)
echo "cancelled at $at_cancel of 100000 recipients sent: $(cat "$state/cancel.out")"
# Every recipient gets its result: the unsent rest of jobs in flight come back from a retry tier.
pc results --json --timeout 40 --count 100000 >"$state/results.jsonl" || true  # retry copies: 5 s and 30 s tiers
# shellcheck disable=SC2154  # set by `worker`
kill -TERM "$w1_pid" "$w2_pid" "$w3_pid"; wait "$w1_pid" "$w2_pid" "$w3_pid" || true
worker w4
python3 - "$state/late.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for j in range(10):
        f.write(json.dumps({"job_id": f"late-{j}", "app_id": "shop-android", "campaign": "WRONG", "notification": {"title": "T"},
                            "recipients": [{"token": f"late-{j}"}]}) + "\n")
PY
pc results --json --timeout 10 --from next --count 10 >"$state/late-results.jsonl" &
late_reader=$!
sleep 1
pc send --no-validate "$state/late.jsonl" >/dev/null
wait "$late_reader" || true
# shellcheck disable=SC2154
kill -TERM "$w4_pid"; wait "$w4_pid" || true
curl -s "http://127.0.0.1:$port/_emulator/messages" >"$state/messages.json"
python3 - "$state" "$returned" <<'PY'
import collections, json, sys
state, returned = sys.argv[1], int(sys.argv[2])
messages = json.load(open(f"{state}/messages.json"))["messages"]
sends = collections.Counter(m.get("token") for m in messages)
after = sum(1 for m in messages if "c-" in m.get("token", "") and m["received_at_ms"] > returned)
results = collections.defaultdict(list)
for line in open(f"{state}/results.jsonl"):
    r = json.loads(line)
    results[r["target"]["token"]].append(r["outcome"])
outcomes = collections.Counter(o for v in results.values() for o in v)
def token(j, r):
    return f"flaky1-c-{j}-{r}" if r == 0 and j % 10 == 0 else f"c-{j}-{r}"
expected = {token(j, r) for j in range(1000) for r in range(100)}
retried = collections.Counter(v[0] for t, v in results.items() if t.startswith("flaky1-") and v)
missing = len(expected - results.keys())
twice = sum(1 for v in results.values() if len(v) > 1)
sent_without = sum(1 for t, n in sends.items() if t and "c-" in t and "sent" not in results.get(t, []))
pushed_twice = sum(1 for t, n in sends.items() if t and n > 1)
late = [json.loads(l)["outcome"] for l in open(f"{state}/late-results.jsonl")]
late_sent = sum(1 for t in sends if t and t.startswith("late-"))
print(f"sends after the cancel returned: {after} (bound: 3 workers x --max-in-flight 2000 = 6000)")
print(f"results: {dict(outcomes)}; recipients without a result: {missing}, with two: {twice}")
print(f"tokens pushed twice: {pushed_twice}; pushed without a sent result: {sent_without}")
print(f"recipients retried through a tier (their first attempt failed): {dict(retried)}")
print(f"fourth worker, started after the cancel: {collections.Counter(late)} of 10, pushed {late_sent}")
ok = after <= 6000 and retried["cancelled"] > 0 and missing == 0 and twice == 0 and pushed_twice == 0 and sent_without == 0 \
    and late == ["cancelled"] * 10 and late_sent == 0 and outcomes["sent"] + outcomes["cancelled"] == 100000
print("cancel: OK" if ok else "cancel: FAILED")
sys.exit(0 if ok else 1)
PY

# --- pause
curl -s -X DELETE "http://127.0.0.1:$port/_emulator/messages" >/dev/null
pc pause --app-id shop-android --reason incident >/dev/null
for i in $(seq 20000); do
  printf '{"job_id":"p-%s","app_id":"shop-android","notification":{"title":"T"},"recipients":[{"token":"p-%s"}]}\n' "$i" "$i"
done >"$state/paused.jsonl"
for i in $(seq 100); do
  printf '{"job_id":"o-%s","app_id":"shop-ios","notification":{"title":"T"},"recipients":[{"token":"o-%s"}]}\n' "$i" "$i"
done >"$state/others.jsonl"
pc send --no-validate "$state/paused.jsonl" >/dev/null
worker w5
sleep 2
published=$(date +%s%3N)
pc send --no-validate "$state/others.jsonl" >/dev/null
sleep 3
curl -s "http://127.0.0.1:$port/_emulator/messages" >"$state/paused-phase.json"
pc resume --app-id shop-android >/dev/null
resumed=$(date +%s)
while [ "$(curl -s "http://127.0.0.1:$port/_emulator/messages" | python3 -c 'import json,sys; print(sum(1 for m in json.load(sys.stdin)["messages"] if m.get("token","").startswith("p-")))')" -lt 20000 ]; do
  [ $(( $(date +%s) - resumed )) -lt 120 ] || break
  sleep 1
done
sleep 2
curl -s "http://127.0.0.1:$port/_emulator/messages" >"$state/after-resume.json"
python3 - "$state" "$published" "$resumed" <<'PY'
import collections, json, sys
state, published, resumed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
during = json.load(open(f"{state}/paused-phase.json"))["messages"]
others = sorted(m["received_at_ms"] - published for m in during if m.get("token", "").startswith("o-"))
paused_sent = sum(1 for m in during if m.get("token", "").startswith("p-"))
after = json.load(open(f"{state}/after-resume.json"))["messages"]
counts = collections.Counter(m["token"] for m in after if m.get("token", "").startswith("p-"))
last = max((m["received_at_ms"] for m in after if m.get("token", "").startswith("p-")), default=0) / 1000 - resumed
print(f"other App ID: {len(others)} of 100 sent while paused, the last {others[-1] if others else None} ms after publishing")
print(f"paused App ID: {paused_sent} sent while paused; after resume {len(counts)} of 20000 sent, "
      f"{sum(1 for n in counts.values() if n > 1)} twice, the last {last:.1f} s after resume")
ok = len(others) == 100 and others[-1] <= 2000 and paused_sent == 0 and len(counts) == 20000 and all(n == 1 for n in counts.values())
print("pause: OK" if ok else "pause: FAILED")
sys.exit(0 if ok else 1)
PY
