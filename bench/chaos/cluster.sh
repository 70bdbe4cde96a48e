#!/usr/bin/env bash
# Cluster chaos run: N send jobs through W workers on a three-node RabbitMQ cluster while, under
# load, the node the workers are connected to stops, and later the node leading the job queue;
# then an account of every recipient and the failover times (see bench/chaos/README.md).
#
#   bench/chaos/cluster.sh [--jobs N] [--workers N] [--feed-seconds S] [--limit SECONDS]
#                          [--no-build] [--keep]
#
#   --jobs N          send jobs (default 20000; every 10th has 3 recipients, 1 % unregistered)
#   --workers N       push-connector worker processes (default 3), all given the three URLs
#   --feed-seconds S  the feed window (default 60): a fifth of the jobs before the workers start,
#                     the rest in 60 batches over the window
#   --limit S         overall time limit in seconds (default 600)
#   --no-build        use the release binaries already built
#   --keep            keep the work folder (logs, results, DLQ export, emulator record)
#
# Faults, in order: at a quarter of the window the node holding most worker connections stops
# (`rabbitmqctl stop`, data kept), and starts again 15 s later; at two thirds the node leading
# push.jobs stops and stays down until the account is done, so the drain, `results` and `dlq`
# run against the two surviving nodes. Failover time: the longest pause between consecutive
# results (by completed_at) in the minute after each stop. Holds /tmp/pc-cpu.lock during the
# measurement: do not wrap it in flock. Exit status: 0 when every recipient has a result or a
# dead letter; 1 otherwise or on a setup failure; 2 on a bad option.
# shellcheck disable=SC2317  # stop_all runs from the EXIT trap
set -euo pipefail
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

JOBS=20000 WORKERS=3 FEED_SECONDS=60 LIMIT=600 BUILD=1 KEEP=0
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) JOBS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --feed-seconds) FEED_SECONDS=$2; shift 2 ;;
    --limit) LIMIT=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,/^# shellcheck/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cluster.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$JOBS" "$WORKERS" "$FEED_SECONDS" "$LIMIT"; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "cluster.sh: options take positive whole numbers, got $n" >&2; exit 2; }
done

NAME=cluster.sh
# shellcheck source=bench/chaos/common.sh
. "$ROOT/bench/chaos/common.sh"
release_binaries

WORK=/tmp/pc-cluster-chaos-$$
CLUSTER=$WORK/cluster
mkdir -p "$WORK/logs"
chmod 755 "$WORK"   # the nodes run as the rabbitmq user and must reach their folders
declare -a WPID=()
EMULATOR_PID=""
stop_all() {
  local p
  for p in "${WPID[@]}" "$EMULATOR_PID"; do if [ -n "$p" ]; then kill -9 "$p" 2>/dev/null || true; fi; done
  scripts/test-cluster.sh stop --dir "$CLUSTER" >/dev/null 2>&1 || true
  wait 2>/dev/null || true
  if ((KEEP)); then echo "work folder kept: $WORK"; else rm -rf "$WORK"; fi
}
trap stop_all EXIT
trap 'exit 130' INT TERM
cluster() { scripts/test-cluster.sh "$@" --dir "$CLUSTER" 9>&-; }
ctl_any() { # rabbitmqctl on the first node that answers
  local n
  for n in 1 2 3; do
    if timeout 60 scripts/test-cluster.sh ctl "$n" --dir "$CLUSTER" "$@" 9>&- 2>/dev/null; then return 0; fi
  done
  return 1
}

take_cpu_lock

log "starting a three-node cluster in $CLUSTER"
eval "$(cluster start --owner-pid $$)"
URLS=$PUSH_TEST_AMQP_URLS
BROKER_ARGS=(--amqp-url "$URLS")
TIER_ARGS=(--retry-tiers "1,2,5")  # only topology declare and the workers read them
log "nodes: $PUSH_TEST_CLUSTER_NODES"

start_emulator --latency 20
"$PC" topology declare "${BROKER_ARGS[@]}" "${TIER_ARGS[@]}" >/dev/null
log "topology declared; push.jobs members: $(ctl_any list_queues name members | awk '$1 == "push.jobs" {$1 = ""; print}')"

python3 "$ROOT/bench/chaos/make_jobs.py" "$JOBS" "$WORK/jobs.jsonl"
PRELOAD=$((JOBS / 5))
BATCH=$(( (JOBS - PRELOAD + 59) / 60 ))
mkdir -p "$WORK/batches"
head -n "$PRELOAD" "$WORK/jobs.jsonl" >"$WORK/preload.jsonl"
tail -n +"$((PRELOAD + 1))" "$WORK/jobs.jsonl" | split -l "$BATCH" -d -a 4 - "$WORK/batches/b-"
BATCHES=("$WORK"/batches/b-*)
publish "$WORK/preload.jsonl"
log "published $PRELOAD jobs before the workers start"

for ((i = 0; i < WORKERS; i++)); do start_worker "$i"; done
RUN_T0=$(now_ms)
log "started $WORKERS workers"

node_number() { # the number (1-3) of a node name
  local n
  for n in 1 2 3; do
    [ "$(sed -n 's/^PUSH_TEST_BROKER_NODE=//p' "$CLUSTER/n$n/env")" = "$1" ] && { echo "$n"; return 0; }
  done
  return 1
}
connections_per_node() { # "N count" per node holding connections, by the node's AMQP port
  local port n
  ctl_any list_connections --no-table-headers port | sort | uniq -c | while read -r count port; do
    for n in 1 2 3; do
      if grep -q "127.0.0.1:$port/" "$CLUSTER/n$n/env"; then echo "$n $count"; fi
    done
  done
}
jobs_leader() { # the node number leading push.jobs
  node_number "$(ctl_any list_queues name leader | awk '$1 == "push.jobs" {print $2}')"
}
leaders() { # "queue=node-number" for the job queue and the results stream
  local q
  for q in push.jobs push.results.stream; do
    printf '%s=%s ' "$q" "$(node_number "$(ctl_any list_queues name leader | awk -v q="$q" '$1 == q {print $2}')" || echo '?')"
  done
}
FAULT_MS=()
fault_busiest_node() {
  local per busiest t
  per=$(connections_per_node)
  busiest=$(echo "$per" | sort -k2,2nr | head -1 | cut -d' ' -f1)
  log "fault 1: connections per node: $(echo "$per" | tr '\n' ' '); leaders: $(leaders); stopping node $busiest"
  FAULT_MS+=("$(now_ms)")
  t=$(now_ms); cluster halt "$busiest" >/dev/null; log "   node $busiest stopped in $(( $(now_ms) - t )) ms"
  RESUME_AT=$(( $(now_ms) + 15000 )) RESUME_NODE=$busiest
}
fault_jobs_leader() {
  local leader t
  leader=$(jobs_leader)
  log "fault 2: leaders: $(leaders); stopping node $leader, push.jobs's (it stays down until the account is done)"
  FAULT_MS+=("$(now_ms)")
  t=$(now_ms); cluster halt "$leader" >/dev/null; log "   node $leader stopped in $(( $(now_ms) - t )) ms"
  DOWN_NODE=$leader
}
RESUME_AT=0 RESUME_NODE="" DOWN_NODE=""
FEED_MS=$((FEED_SECONDS * 1000))
next_batch=0 fault=0
while ((next_batch < ${#BATCHES[@]} || fault < 2)); do
  past_deadline && { log "!! time limit reached while feeding"; break; }
  t=$(( $(now_ms) - RUN_T0 ))
  if ((fault == 0 && t >= FEED_MS / 4)); then fault_busiest_node; fault=1
  elif ((fault == 1 && t >= 2 * FEED_MS / 3)); then fault_jobs_leader; fault=2
  elif [ -n "$RESUME_NODE" ] && (( $(now_ms) >= RESUME_AT )); then
    cluster resume "$RESUME_NODE" >/dev/null; log "   node $RESUME_NODE started again and rejoined"; RESUME_NODE=""
  elif ((next_batch < ${#BATCHES[@]} && t >= next_batch * FEED_MS / ${#BATCHES[@]})); then
    publish "${BATCHES[$next_batch]}"; next_batch=$((next_batch + 1))
  else
    sleep 0.1
  fi
done
if [ -n "$RESUME_NODE" ]; then cluster resume "$RESUME_NODE" >/dev/null; log "   node $RESUME_NODE started again"; fi
log "published $PUBLISHED jobs ($PUBLISH_FAILURES failed send(s)); both faults injected"

depths() { ctl_any list_queues name messages | awk '$1 == "push.jobs" || $1 ~ /^push\.retry\./ {t += $2} END {print t + 0}'; }
DRAINED=0 zero_since=0
while ! past_deadline; do
  d=$(depths 2>/dev/null || echo x)
  if [ "$d" = 0 ]; then
    ((zero_since == 0)) && zero_since=$(now_ms)
    (( $(now_ms) - zero_since >= 10000 )) && { DRAINED=1; break; }
  else
    zero_since=0
  fi
  sleep 1
done
RUN_MS=$(( $(now_ms) - RUN_T0 ))
log "drained=$DRAINED after $((RUN_MS / 1000)) s of work"
for p in "${WPID[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
for p in "${WPID[@]}"; do wait "$p" 2>/dev/null || true; done
WPID=()

log "account against the surviving nodes (node $DOWN_NODE still down)"
ctl_any list_queues name messages | awk '$1 ~ /^push\./ {print $1, $2}' | sort >"$WORK/final-depths.txt"
RESULTS_DEPTH=$(awk '$1 == "push.results.stream" {print $2}' "$WORK/final-depths.txt")
DLQ_DEPTH=$(awk '$1 == "push.jobs.dlq" {print $2}' "$WORK/final-depths.txt")
timeout 300 "$PC" results "${BROKER_ARGS[@]}" --count 1000000 --timeout 5 >"$WORK/results.jsonl" 2>"$WORK/logs/results.err" || true
log "   push-connector results: $(wc -l <"$WORK/results.jsonl") result(s); the stream holds ${RESULTS_DEPTH:-?}"
timeout 300 "$PC" dlq export "$WORK/dlq.jsonl" --json "${BROKER_ARGS[@]}" >/dev/null 2>"$WORK/logs/dlq.err" || : >"$WORK/dlq.jsonl"
timeout 300 "$PC" dlq stats --json "${BROKER_ARGS[@]}" >"$WORK/dlq-stats.json" 2>>"$WORK/logs/dlq.err" || echo '{}' >"$WORK/dlq-stats.json"
log "   push-connector dlq export: $(wc -l <"$WORK/dlq.jsonl") dead letter(s); the DLQ holds ${DLQ_DEPTH:-?}"
emulator /_emulator/messages >"$WORK/emulator-messages.json"
emulator /_emulator/stats >"$WORK/emulator-stats.json"
summarize_worker_logs "$WORKERS"

python3 - "$WORK/results.jsonl" "${FAULT_MS[@]}" <<'PY'
import datetime, json, sys
stamps = []
for line in open(sys.argv[1]):
    try:
        stamps.append(datetime.datetime.fromisoformat(json.loads(line)["completed_at"].replace("Z", "+00:00")).timestamp())
    except (ValueError, KeyError):
        pass
stamps.sort()
for n, fault_ms in enumerate(sys.argv[2:], 1):
    t = int(fault_ms) / 1000
    window = [s for s in stamps if t - 2 <= s <= t + 60]
    gaps = [b - a for a, b in zip(window, window[1:])]
    after = [s for s in stamps if s >= t]
    print(f"failover {n}: longest pause between results {max(gaps, default=float('nan')):.0f} s; "
          f"first result after the stop {after[0] - t if after else float('nan'):.0f} s later (completed_at has whole seconds)")
PY
rc=0
python3 "$ROOT/bench/chaos/report.py" --jobs "$WORK/jobs.jsonl" --results "$WORK/results.jsonl" \
  --dlq "$WORK/dlq.jsonl" --dlq-stats "$WORK/dlq-stats.json" --emulator-messages "$WORK/emulator-messages.json" \
  --emulator-stats "$WORK/emulator-stats.json" --run-seconds "$((RUN_MS / 1000))" --published "$PUBLISHED" \
  --publish-failures "$PUBLISH_FAILURES" --drained "$DRAINED" --final-depths "$WORK/final-depths.txt" \
  --unexpected-exits 0 --worker-logs "$WORK/worker-log-summary.txt" --seed none \
  --dlq-depth "${DLQ_DEPTH:--1}" --results-depth "${RESULTS_DEPTH:--1}" || rc=$?
log "wall time of the measurement: $(elapsed) s"
exit "$rc"
