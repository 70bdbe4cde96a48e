#!/usr/bin/env bash
# Chaos run: N send jobs through W workers while the broker, the network and the workers fail,
# then an account of every recipient (see bench/chaos/README.md).
#
#   bench/chaos/run.sh [--jobs N] [--workers N] [--kills N] [--limit SECONDS] [--seed N]
#                      [--feed-seconds S] [--quota-rate P] [--retry-tiers LIST] [--no-build] [--keep]
#
#   --jobs N        send jobs to publish (default 50000; every 10th has 3 recipients, 1 % of the
#                   tokens are unregistered); a fifth before the workers start, the rest in 100
#                   batches spread over the feed window
#   --feed-seconds S  the feed window, during which the faults strike (default 90)
#   --workers N     push-connector worker processes (default 3)
#   --kills N       SIGKILLs of a random worker, each followed by a restart (default 5)
#   --limit S       overall time limit of the measurement in seconds (default 900)
#   --seed N        seed of the fault schedule (default: random, printed)
#   --quota-rate P  share of sends the emulator answers 429 QUOTA_EXCEEDED (default 0.02)
#   --retry-tiers L the workers' retry tiers in seconds (default 1,2,5)
#   --no-build      use the release binaries already built
#   --keep          keep the work folder (logs, results, DLQ export, emulator record)
#
# Starts everything itself on 127.0.0.1 (a private RabbitMQ node, fcm-emulator over TLS with
# faults, the workers) and stops all of it on exit. Holds /tmp/pc-cpu.lock during the
# measurement: do not wrap it in flock. Exit status: 0 when every recipient has a result or a
# dead letter; 1 on any loss, on unfinished work at the time limit, or on a setup failure.
# shellcheck disable=SC2317  # stop_all runs from the EXIT trap, fault_* from the schedule
set -euo pipefail
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

JOBS=50000 WORKERS=3 KILLS=5 LIMIT=900 SEED="" BUILD=1 KEEP=0 QUOTA_RATE=0.02 RETRY_TIERS=1,2,5 FEED_SECONDS=90
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) JOBS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --kills) KILLS=$2; shift 2 ;;
    --limit) LIMIT=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --quota-rate) QUOTA_RATE=$2; shift 2 ;;
    --feed-seconds) FEED_SECONDS=$2; shift 2 ;;
    --retry-tiers) RETRY_TIERS=$2; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,/^# shellcheck/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$JOBS" "$WORKERS" "$KILLS" "$LIMIT" "$FEED_SECONDS" ${SEED:+"$SEED"}; do
  [[ $n =~ ^[0-9]+$ ]] || { echo "run.sh: options take whole numbers, got $n" >&2; exit 2; }
done
((JOBS > 0 && WORKERS > 0 && LIMIT > 0 && FEED_SECONDS > 0)) || { echo "run.sh: --jobs, --workers, --limit and --feed-seconds must be positive" >&2; exit 2; }
SEED=${SEED:-$((RANDOM * 32768 + RANDOM))}
RANDOM=$((SEED % 32768))

# Fault settings of the emulator.
EMULATOR_FAULTS=(--error-rate unavailable=0.05 --error-rate "quota=$QUOTA_RATE" --retry-after 1 --goaway-every 1000
                 --latency 100 --latency-share 0.1)
ALARM_SECONDS=5

NAME=run.sh
# shellcheck source=bench/chaos/common.sh
. "$ROOT/bench/chaos/common.sh"
release_binaries

WORK=/tmp/pc-chaos-$$
BROKER_DIR=$WORK/broker
mkdir -p "$WORK/pids" "$WORK/logs"
chmod 755 "$WORK"   # the broker runs as the rabbitmq user and must reach its folder

# ---------------------------------------------------------------- cleanup
declare -a WPID=()
EMULATOR_PID=""
stop_all() {
  local p
  for p in "${WPID[@]}" "$EMULATOR_PID"; do if [ -n "$p" ]; then kill -9 "$p" 2>/dev/null || true; fi; done
  broker_kill
  if [ -n "${WATCHDOG:-}" ]; then kill "$WATCHDOG" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  if ((KEEP)); then echo "work folder kept: $WORK"; else rm -rf "$WORK"; fi
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- broker (own node, restartable)
# A scripts/test-broker.sh node, of the RabbitMQ line PUSH_TEST_RABBITMQ_LINE names (default: the
# system's; 4.0 or newest run from their Debian roots, scripts/rabbitmq-lines.sh).
broker() { timeout 120 "$ROOT/scripts/test-broker.sh" "$@" 9>&-; }
ctl() { broker ctl --dir "$BROKER_DIR" "$@"; }
broker_launch() { # the first time: a fresh node; after a stop: the same node again
  if [ -f "$BROKER_DIR/env" ]; then
    broker resume --dir "$BROKER_DIR" >/dev/null || { echo "run.sh: broker node did not start again" >&2; return 1; }
  else
    local out
    out=$(broker start --dir "$BROKER_DIR") || { echo "run.sh: broker node did not start" >&2; return 1; }
    eval "$out"
    NODE=$PUSH_TEST_BROKER_NODE
    AMQP_URL=$PUSH_TEST_AMQP_URL
  fi
}
broker_stop() { broker halt --dir "$BROKER_DIR" >/dev/null 2>&1 || true; }  # a full node stop: the Erlang VM exits
broker_kill() {
  if ((KEEP)); then broker halt --dir "$BROKER_DIR" >/dev/null 2>&1 || true
  else broker stop --dir "$BROKER_DIR" >/dev/null 2>&1 || true; fi
}
queue_depths() { # "name messages" per line for the job queue and the retry tiers; nothing unless all are up
  local out
  out=$(ctl list_queues name messages state 2>/dev/null | awk '$1 == "push.jobs" || $1 ~ /^push\.retry\./') || return 1
  # a quorum queue without a leader yet (after a node restart) reports no usable count
  if [ -z "$out" ] || echo "$out" | awk '$3 != "running" || $2 !~ /^[0-9]+$/ {bad = 1} END {exit !bad}'; then return 1; fi
  echo "$out" | awk '{print $1, $2}'
}

# ---------------------------------------------------------------- the measurement (under the CPU lock)
take_cpu_lock
log "seed $SEED, $JOBS jobs, $WORKERS workers, $KILLS kills, limit ${LIMIT}s, work folder $WORK"

# A watchdog stops everything if this script dies without running its trap (SIGKILL).
setsid bash -c "while kill -0 $$ 2>/dev/null; do sleep 1; done
  for f in '$WORK'/pids/*; do [ -f \"\$f\" ] && kill -9 \"\$(cat \"\$f\")\" 2>/dev/null; done
  [ -f '$BROKER_DIR/beam.pid' ] && kill -9 \"\$(cat '$BROKER_DIR/beam.pid')\" 2>/dev/null
  [ -f '$BROKER_DIR/pid' ] && kill -9 -- \"-\$(cat '$BROKER_DIR/pid')\" 2>/dev/null
  sleep 1; rm -rf '$WORK'" </dev/null >/dev/null 2>&1 9>&- &
WATCHDOG=$!

log "starting a RabbitMQ node (line ${PUSH_TEST_RABBITMQ_LINE:-system}: rabbitmq-server $("$ROOT/scripts/rabbitmq-lines.sh" version "${PUSH_TEST_RABBITMQ_LINE:-system}"))"
broker_launch
log "node $NODE at $AMQP_URL"
BROKER_ARGS=(--amqp-url "$AMQP_URL")
TIER_ARGS=(--retry-tiers "$RETRY_TIERS")  # only topology declare and the workers read them

log "starting fcm-emulator (TLS, faults: ${EMULATOR_FAULTS[*]})"
start_emulator "${EMULATOR_FAULTS[@]}"
echo "$EMULATOR_PID" > "$WORK/pids/emulator"
"$PC" topology declare "${BROKER_ARGS[@]}" "${TIER_ARGS[@]}" >/dev/null

python3 "$ROOT/bench/chaos/make_jobs.py" "$JOBS" "$WORK/jobs.jsonl"
RECIPIENTS=$(python3 -c 'import sys,json; print(sum(len(json.loads(l)["recipients"]) for l in open(sys.argv[1])))' "$WORK/jobs.jsonl")
# A fifth of the jobs is waiting when the workers start; the rest arrives in batches during the
# feed window, while the faults strike, so that every fault meets work in progress.
PRELOAD=$((JOBS / 5))
BATCH=$(( (JOBS - PRELOAD + 99) / 100 )); ((BATCH > 0)) || BATCH=1
mkdir -p "$WORK/batches"
if ((PRELOAD > 0)); then head -n "$PRELOAD" "$WORK/jobs.jsonl" >"$WORK/preload.jsonl"; fi
tail -n +"$((PRELOAD + 1))" "$WORK/jobs.jsonl" | split -l "$BATCH" -d -a 4 - "$WORK/batches/b-"
BATCHES=("$WORK"/batches/b-*)
[ -f "${BATCHES[0]}" ] || BATCHES=()
log "publishing $PRELOAD of $JOBS jobs before the workers start ($RECIPIENTS recipients in all)"
if ((PRELOAD > 0)); then publish "$WORK/preload.jsonl"; fi

# ---------------------------------------------------------------- workers
UNEXPECTED_EXITS=0
check_workers() { # a worker that died by itself is reported and restarted
  local i rc
  for i in "${!WPID[@]}"; do
    if ! kill -0 "${WPID[$i]}" 2>/dev/null; then
      rc=0; wait "${WPID[$i]}" 2>/dev/null || rc=$?
      UNEXPECTED_EXITS=$((UNEXPECTED_EXITS + 1))
      log "!! worker $i (pid ${WPID[$i]}) exited by itself with status $rc; restarting it"
      echo "--- exited with status $rc" >>"$WORK/logs/worker-$i.log"
      start_worker "$i"
    fi
  done
}
for ((i = 0; i < WORKERS; i++)); do start_worker "$i"; done
RUN_T0=$(now_ms)
log "started $WORKERS workers"

pct() { echo "$(($1 / 10)).$(($1 % 10))%"; }

# ---------------------------------------------------------------- faults
fault_kill() {
  local i=$(((RANDOM >> 5) % WORKERS))
  kill -9 "${WPID[$i]}" 2>/dev/null || true
  wait "${WPID[$i]}" 2>/dev/null || true
  echo "--- SIGKILL by run.sh" >>"$WORK/logs/worker-$i.log"
  log "   SIGKILL worker $i (pid ${WPID[$i]})"
  sleep "0.$((RANDOM % 10))"
  start_worker "$i"
  log "   worker $i restarted (pid ${WPID[$i]})"
}
fault_broker_restart() {
  local t
  t=$(now_ms)
  broker_stop
  log "   broker node stopped (full stop: the Erlang VM exited) in $(( $(now_ms) - t )) ms"
  sleep 2
  t=$(now_ms)
  broker_launch
  log "   broker node started again in $(( $(now_ms) - t )) ms"
  local i
  for i in $(seq 60); do queue_depths >/dev/null && break; sleep 1; done
  log "   queues running again: $(queue_depths | tr '\n' ' ')(counts right after a restart can read 0 for a few seconds)"
}
fault_close_all() {
  ctl close_all_connections "chaos run" >/dev/null
  log "   rabbitmqctl close_all_connections done"
}
fault_memory_alarm() {
  ctl set_vm_memory_high_watermark 0.00001 >/dev/null
  log "   memory alarm raised (vm_memory_high_watermark 0.00001) for ${ALARM_SECONDS}s"
  sleep "$ALARM_SECONDS"
  ctl set_vm_memory_high_watermark 0.4 >/dev/null
  log "   memory alarm cleared (vm_memory_high_watermark 0.4)"
}

# The schedule: every fault at a random moment of the feed window, one fault per slot of
# [5 %, 90 %] of it, in a random order; the batches go out evenly over the window. Faults run
# one at a time (a broker restart takes ~10 s); batches that fell due meanwhile go out after.
FAULTS=(broker_restart close_all memory_alarm)
for ((k = 0; k < KILLS; k++)); do FAULTS+=(kill); done
for ((k = ${#FAULTS[@]} - 1; k > 0; k--)); do
  j=$((RANDOM % (k + 1))); tmp=${FAULTS[k]}; FAULTS[k]=${FAULTS[j]}; FAULTS[j]=$tmp
done
declare -a AT=()   # per mille of the feed window
slot=$((850 / ${#FAULTS[@]}))
for k in "${!FAULTS[@]}"; do AT[k]=$((50 + k * slot + RANDOM % slot)); done
FEED_MS=$((FEED_SECONDS * 1000))
schedule=""
for k in "${!FAULTS[@]}"; do schedule+=" ${FAULTS[$k]}@$((AT[k] * FEED_SECONDS / 1000))s"; done
log "feeding ${#BATCHES[@]} batches of $BATCH jobs over ${FEED_SECONDS}s; faults at (s after the workers started):$schedule"

next_fault=0 next_batch=0
while ((next_fault < ${#FAULTS[@]} || next_batch < ${#BATCHES[@]})); do
  past_deadline && { log "!! time limit reached while feeding"; break; }
  check_workers
  t=$(( $(now_ms) - RUN_T0 ))
  if ((next_fault < ${#FAULTS[@]} && t >= AT[next_fault] * FEED_MS / 1000)); then
    log "fault $((next_fault + 1))/${#FAULTS[@]}: ${FAULTS[$next_fault]} ($PUBLISHED jobs published so far)"
    "fault_${FAULTS[$next_fault]}"
    next_fault=$((next_fault + 1))
  elif ((next_batch < ${#BATCHES[@]} && t >= next_batch * FEED_MS / ${#BATCHES[@]})); then
    publish "${BATCHES[$next_batch]}"
    next_batch=$((next_batch + 1))
  else
    sleep 0.1
  fi
done
log "published $PUBLISHED jobs ($PUBLISH_FAILURES failed send(s)); all faults injected"

# ---------------------------------------------------------------- drain
log "waiting until push.jobs and the retry tiers are empty"
DRAINED=0 zero_checks=0 zero_since=0 last_report=0
while ! past_deadline; do
  check_workers
  depths=$(queue_depths || true)
  if [ -n "$depths" ] && (($(echo "$depths" | awk '{t += $2} END {print t + 0}') == 0)); then
    # Empty for 10 s in a row: right after a node restart the quorum queues answer "running"
    # with 0 messages for a few seconds while they replay their log.
    ((zero_checks == 0)) && zero_since=$(now_ms)
    zero_checks=$((zero_checks + 1))
    ((zero_checks >= 3 && $(now_ms) - zero_since >= 10000)) && { DRAINED=1; break; }
  else
    zero_checks=0
    if (( $(now_ms) - last_report >= 10000 )); then
      last_report=$(now_ms)
      log "   queued: $(echo "$depths" | sort | tr '\n' ' ')"
    fi
  fi
  sleep 1
done
RUN_MS=$(( $(now_ms) - RUN_T0 ))
if ((DRAINED)); then log "drained: every queue empty after $((RUN_MS / 1000)) s of work"; else log "!! time limit reached before the queues drained"; fi
FINAL_DEPTHS=$(queue_depths || true)

log "   left in the queues: $(echo "$FINAL_DEPTHS" | tr '\n' ' ')"
log "stopping the workers (SIGTERM)"
for i in "${!WPID[@]}"; do kill -TERM "${WPID[$i]}" 2>/dev/null || true; done
for i in "${!WPID[@]}"; do
  for _ in $(seq 150); do kill -0 "${WPID[$i]}" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "${WPID[$i]}" 2>/dev/null; then log "!! worker $i did not stop within 15 s of SIGTERM; SIGKILL"; kill -9 "${WPID[$i]}" 2>/dev/null || true; fi
  wait "${WPID[$i]}" 2>/dev/null || true
done
WPID=()

# ---------------------------------------------------------------- account
log "reading results, dead letters and the emulator's record"
budget() { local r=$(( (DEADLINE - $(now_ms)) / 1000 )); echo $((r > 60 ? r : 60)); }
ctl list_queues name messages 2>/dev/null | awk '$1 ~ /^push\./ {print $1, $2}' | sort >"$WORK/final-depths.txt" || true
RESULTS_DEPTH=$(awk '$1 == "push.results.stream" {print $2}' "$WORK/final-depths.txt")
DLQ_DEPTH=$(awk '$1 == "push.jobs.dlq" {print $2}' "$WORK/final-depths.txt")
log "   push.results.stream holds ${RESULTS_DEPTH:-?} result(s), push.jobs.dlq ${DLQ_DEPTH:-?} dead letter(s)"
t=$(now_ms)
timeout "$(budget)" "$PC" results "${BROKER_ARGS[@]}" --count 1000000 --timeout 3 >"$WORK/results.jsonl" 2>"$WORK/logs/results.err" || true
log "   push-connector results: $(wc -l <"$WORK/results.jsonl") result(s) in $(( ($(now_ms) - t) / 1000 )) s"
t=$(now_ms)
rm -f "$WORK/dlq.jsonl"
timeout "$(budget)" "$PC" dlq export "$WORK/dlq.jsonl" --json "${BROKER_ARGS[@]}" >/dev/null 2>>"$WORK/logs/dlq.err" || true
[ -f "$WORK/dlq.jsonl" ] || : >"$WORK/dlq.jsonl"
log "   push-connector dlq export: $(wc -l <"$WORK/dlq.jsonl") dead letter(s) in $(( ($(now_ms) - t) / 1000 )) s"
t=$(now_ms)
timeout "$(budget)" "$PC" dlq stats --json "${BROKER_ARGS[@]}" >"$WORK/dlq-stats.json" 2>>"$WORK/logs/dlq.err" || echo '{}' >"$WORK/dlq-stats.json"
log "   push-connector dlq stats: $(( ($(now_ms) - t) / 1000 )) s"
emulator /_emulator/messages >"$WORK/emulator-messages.json"
emulator /_emulator/stats >"$WORK/emulator-stats.json"
summarize_worker_logs "$WORKERS"

rc=0
python3 "$ROOT/bench/chaos/report.py" --jobs "$WORK/jobs.jsonl" --results "$WORK/results.jsonl" \
  --dlq "$WORK/dlq.jsonl" --dlq-stats "$WORK/dlq-stats.json" --emulator-messages "$WORK/emulator-messages.json" \
  --emulator-stats "$WORK/emulator-stats.json" --run-seconds "$((RUN_MS / 1000))" --published "$PUBLISHED" --publish-failures "$PUBLISH_FAILURES" --drained "$DRAINED" \
  --final-depths "$WORK/final-depths.txt" --unexpected-exits "$UNEXPECTED_EXITS" \
  --worker-logs "$WORK/worker-log-summary.txt" --seed "$SEED" \
  --dlq-depth "${DLQ_DEPTH:--1}" --results-depth "${RESULTS_DEPTH:--1}" || rc=$?
log "wall time of the measurement: $(elapsed) s"
exit "$rc"
