#!/usr/bin/env bash
# Issue 29: moving a running push-connector from RabbitMQ 3.x to 4.x, blue-green, as
# docs/operations.md ("Upgrading RabbitMQ 3.x → 4.x") tells an operator to:
#   1. blue (the system RabbitMQ, 3.10) runs the topology and workers, jobs are queued on it;
#   2. green (4.x) gets the topology from `topology definitions --rabbitmq-version` through
#      `rabbitmqctl import_definitions`, then its own workers; publishers switch to green;
#   3. blue's workers drain blue (job queue and retry tiers empty), then stop; blue's DLQ moves
#      to green with `dlq export` / `dlq import`, then `dlq purge` on blue;
#   4. the account: every job has exactly one result (read from both results streams), the
#      emulator got each token once (no duplicate push), nothing is left on blue.
# 1 job in 20 goes through the retry tiers (its token fails twice with 503), 1 in 200 is
# dead-lettered (an App ID no worker knows), so the retry tiers and the DLQ have something to move.
# FCM answers after 50 ms and a worker keeps 20 sends in flight (about 400 jobs/s each), so blue
# still holds most of its half when green takes over.
#   usage: bench/upgrade/blue-green.sh [--jobs N] [--green LINE] [--bin DIR]
#          (default: 20000 jobs, half before the switch, green = newest; the release build)
set -euo pipefail
cd "$(dirname "$0")/../.."
jobs=20000 green_line=newest bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs=$2; shift 2 ;;
    --green) green_line=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    *) echo "usage: $0 [--jobs N] [--green LINE] [--bin DIR]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/faults/common.sh
. bench/faults/common.sh
bin=$(fault_binaries "$bin")
fault_setup blue-green
blue_url=$PUSH_TEST_AMQP_URL
scripts/rabbitmq-lines.sh make "$green_line" >/dev/null
green_dir=$state/green
cleanup_green() { PUSH_TEST_RABBITMQ_LINE=$green_line scripts/test-broker.sh stop --dir "$green_dir" >/dev/null 2>&1 || true; fault_cleanup; }
trap cleanup_green EXIT
eval "$(PUSH_TEST_RABBITMQ_LINE=$green_line scripts/test-broker.sh start --dir "$green_dir")"
green_url=$PUSH_TEST_AMQP_URL
unset PUSH_CONNECTOR_AMQP_URL
tiers=1,2,5
pc() { "$bin/push-connector" "$@"; }
echo "blue: RabbitMQ $(scripts/rabbitmq-lines.sh version system), green: RabbitMQ $(scripts/rabbitmq-lines.sh version "$green_line")"

port=$(python3 scripts/free-port.py)
"$bin/fcm-emulator" make-service-account --project shop-prod --token-uri "http://127.0.0.1:$port/token" \
  --out "$state/sa.json" >/dev/null
"$bin/fcm-emulator" --listen "127.0.0.1:$port" --service-account "$state/sa.json" --record $((jobs + 1000)) --latency 50 \
  >"$state/fcm.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$state/fcm.log" && break; sleep 0.1; done
cat >"$state/apps.json" <<JSON
{"apps":[{"app_id":"shop-android","project_id":"shop-prod","credentials_file":"$state/sa.json"}]}
JSON
for i in $(seq "$jobs"); do
  token="tok-$i" app=shop-android
  if [ $((i % 200)) = 0 ]; then app=gone-app; elif [ $((i % 20)) = 0 ]; then token="flaky2-$i"; fi
  printf '{"job_id":"bg-%s","app_id":"%s","notification":{"title":"T"},"recipients":[{"token":"%s"}]}\n' "$i" "$app" "$token"
done >"$state/jobs.jsonl"
half=$((jobs / 2))
head -n "$half" "$state/jobs.jsonl" >"$state/blue-jobs.jsonl"
tail -n +$((half + 1)) "$state/jobs.jsonl" >"$state/green-jobs.jsonl"

worker() { # worker NAME URL: a worker process on that broker, logging to NAME.log
  pc worker --amqp-url "$2" --config "$state/apps.json" --retry-tiers "$tiers" --retry-base-delay 1 --no-declare \
    --fcm-url "http://127.0.0.1:$port" --max-in-flight 20 --log-level warn >"$state/$1.log" 2>&1 &
  pids+=($!)
  eval "$1_pid=$!"
}
depth() { # depth DIR: ready + unacked messages of the job queue and the retry tiers of that node, as
          # list_queues reports them: quorum queue figures there are refreshed every 5 s
  local dir=$1
  PUSH_TEST_BROKER_DIR=$dir scripts/test-broker.sh ctl list_queues name messages 2>/dev/null \
    | awk '$1 == "push.jobs" || $1 ~ /^push\.retry\./ {s += $2} END {print s + 0}'
}
drained() { # drained DIR NAME SECONDS: waits for three empty reports in a row (15 s); fails after
            # SECONDS since the switch
  local quiet=0
  while [ $quiet -lt 3 ]; do
    if [ "$(depth "$1")" = 0 ]; then quiet=$((quiet + 1)); else quiet=0; fi
    [ $(( $(date +%s) - switched )) -lt "$3" ] || { echo "$2 did not drain in $3 s" >&2; exit 1; }
    sleep 5
  done
}

# 1. Blue: topology, half the jobs, two workers.
pc topology declare --amqp-url "$blue_url" --retry-tiers "$tiers" >/dev/null
pc send --amqp-url "$blue_url" --no-validate "$state/blue-jobs.jsonl" >/dev/null
worker blue1 "$blue_url"; worker blue2 "$blue_url"
sleep 6
echo "at the switch: blue holds $(depth "$broker_dir") job(s) in its job queue and retry tiers"

# 2. Green: the topology from the definitions document, its workers; publishers switch.
pc topology definitions --retry-tiers "$tiers" --rabbitmq-version "$(scripts/rabbitmq-lines.sh version "$green_line")" \
  >"$green_dir/definitions.json"
chmod 644 "$green_dir/definitions.json"
scripts/test-broker.sh ctl --dir "$green_dir" import_definitions "$green_dir/definitions.json" >/dev/null  # the same path inside its root
worker green1 "$green_url"; worker green2 "$green_url"
pc send --amqp-url "$green_url" --no-validate "$state/green-jobs.jsonl" >/dev/null
switched=$(date +%s)

# 3. Blue drains: its job queue and retry tiers empty in three reports in a row (15 s), then its
#    workers stop.
drained "$broker_dir" blue 300
# shellcheck disable=SC2154  # set by `worker`
kill -TERM "$blue1_pid" "$blue2_pid"; wait "$blue1_pid" "$blue2_pid" || true
echo "blue drained $(( $(date +%s) - switched )) s after the switch; its workers stopped"
pc dlq export --amqp-url "$blue_url" "$state/blue-dlq.jsonl" >/dev/null
pc dlq import --amqp-url "$green_url" "$state/blue-dlq.jsonl" >/dev/null
pc dlq purge --amqp-url "$blue_url" --yes >/dev/null  # exported and imported: green has them now
echo "blue's DLQ moved to green: $(wc -l <"$state/blue-dlq.jsonl") dead letter(s)"
drained "$green_dir" green 600
# shellcheck disable=SC2154  # set by `worker`
kill -TERM "$green1_pid" "$green2_pid"; wait "$green1_pid" "$green2_pid" || true

# 4. The account.
pc results --amqp-url "$blue_url" --json --timeout 3 >"$state/blue-results.jsonl"
pc results --amqp-url "$green_url" --json --timeout 3 >"$state/green-results.jsonl"
pc dlq export --amqp-url "$green_url" "$state/green-dlq.jsonl" >/dev/null
curl -s "http://127.0.0.1:$port/_emulator/messages" >"$state/sent.json"
python3 - "$state" "$jobs" "$broker_dir" <<'PY'
import json, sys, collections
state, jobs = sys.argv[1], int(sys.argv[2])
results = collections.defaultdict(list)
for side in ("blue", "green"):
    for line in open(f"{state}/{side}-results.jsonl"):
        r = json.loads(line)
        results[r["job_id"]].append((side, r["outcome"]))
sends = collections.Counter(m.get("token") for m in json.load(open(f"{state}/sent.json"))["messages"])
dead = sum(1 for _ in open(f"{state}/green-dlq.jsonl"))
missing = [f"bg-{i}" for i in range(1, jobs + 1) if f"bg-{i}" not in results]
twice = {j: r for j, r in results.items() if len(r) > 1}
outcomes = collections.Counter(o for r in results.values() for _, o in r)
by_side = collections.Counter(s for r in results.values() for s, _ in r)
duplicate_pushes = sum(1 for t, n in sends.items() if n > 1)
print(f"results: {sum(by_side.values())} ({by_side['blue']} on blue, {by_side['green']} on green), outcomes {dict(outcomes)}")
print(f"jobs without a result: {len(missing)}, jobs with two results: {len(twice)}")
print(f"pushes received: {sum(sends.values())}, tokens pushed twice: {duplicate_pushes}")
print(f"dead letters on green after the move: {dead} (expected {jobs // 200})")
ok = (not missing and not twice and duplicate_pushes == 0 and dead == jobs // 200
      and outcomes.get("sent", 0) == jobs - jobs // 200 and outcomes.get("dead_lettered", 0) == jobs // 200)
print("account: OK" if ok else "account: FAILED")
sys.exit(0 if ok else 1)
PY
left=$(PUSH_TEST_BROKER_DIR=$broker_dir scripts/test-broker.sh ctl list_queues name messages 2>/dev/null \
  | awk '$1 ~ /^push\.(jobs|retry\.|jobs\.dlq)/ {s += $2} END {print s + 0}')
echo "left on blue (job queue, retry tiers, DLQ): $left"
[ "$left" = 0 ]
