#!/usr/bin/env bash
# Events ingestion benchmark: POST /event (and POST /events batches) → published with confirms
# → consumed → committed to SQLite, then the same phases into PostgreSQL, with
# `push-connector events` (release build), a RabbitMQ node (scripts/test-broker.sh) and a
# PostgreSQL server (scripts/test-postgres.sh) on this machine. Load generator: wrk (Debian
# package `wrk`) with Lua scripts that make every event distinct. Baseline in the same run:
# GET /healthz through the same server (no broker, no database), for a ratio; the PostgreSQL
# figures are also given as a ratio to SQLite's.
# Usage: bench/events/run.sh [seconds per phase, default 10] [connections, default 64]
#        DATABASES="sqlite postgres" (default) picks the stores measured.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_PER_PHASE=${1:-10}
CONNECTIONS=${2:-64}
DATABASES=${DATABASES:-sqlite postgres}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk" >&2; exit 1; }
[ -n "${SKIP_BUILD:-}" ] || flock /tmp/swift-build.lock swift build -c release --product push-connector >/dev/null
BIN=.build/release
WORK=$(mktemp -d)
EVENTS_PID=
BROKER_DIR=/tmp/pc-events-bench-broker.$$  # the rabbitmq user must reach it (not under mktemp's 0700 folder)
POSTGRES_DIR=/tmp/pc-events-bench-postgres.$$
OWN_BROKER=
OWN_POSTGRES=
cleanup() {
  [ -n "$EVENTS_PID" ] && kill "$EVENTS_PID" 2>/dev/null && wait "$EVENTS_PID" 2>/dev/null
  if [ -n "$OWN_BROKER" ]; then scripts/test-broker.sh stop --dir "$BROKER_DIR" >/dev/null 2>&1 || true; fi
  if [ -n "$OWN_POSTGRES" ]; then scripts/test-postgres.sh stop --dir "$POSTGRES_DIR" >/dev/null 2>&1 || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# A running node can be given with PUSH_TEST_AMQP_URL; otherwise one is started for the run.
if [ -z "${PUSH_TEST_AMQP_URL:-}" ]; then
  OWN_BROKER=1
  eval "$(scripts/test-broker.sh start --dir "$BROKER_DIR")"
fi
# Likewise PUSH_TEST_POSTGRES_URL. The test server runs without fsync; commits are made
# synchronous here (WAL written at each COMMIT, as SQLite's WAL with synchronous=NORMAL: a commit
# survives the server process dying, not a power loss), so the two stores keep the same promise.
if [[ " $DATABASES " == *" postgres "* && -z "${PUSH_TEST_POSTGRES_URL:-}" ]]; then
  OWN_POSTGRES=1
  eval "$(scripts/test-postgres.sh start --dir "$POSTGRES_DIR")"
  psql -q "$PUSH_TEST_POSTGRES_URL" -c "ALTER DATABASE push SET synchronous_commit = on"
fi
PORT=$(python3 scripts/free-port.py)

metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
# Waits until every accepted event is stored; prints seconds waited after the load ended.
wait_stored() {
  local start
  start=$(date +%s.%N)
  for _ in $(seq 600); do
    local done=$(( $(metric 'push_connector_events_stored_total{kind="event"}') + $(metric push_connector_events_duplicates_total) ))
    [ "$done" -ge "$(metric push_connector_events_accepted_total)" ] && break
    sleep 0.05
  done
  echo "$(date +%s.%N) - $start" | bc
}
run_wrk() { # $1 = script or "", $2 = path
  local script=()
  [ -n "$1" ] && script=(-s "bench/events/$1")
  RUN="$2-$$-$(date +%s%N)" wrk -t 2 -c "$CONNECTIONS" -d "${SECONDS_PER_PHASE}s" "${script[@]}" "http://127.0.0.1:$PORT$2" 2>&1
}
rate_of() { awk '/Requests\/sec/ { print $2 }'; }
non2xx() { awk '/Non-2xx/ { print $NF }' ; }

declare -A STORED_RATE
# Starts `events` on $2 (a --db value), runs the baseline and the three phases, stops it.
run_database() { # $1 = label, $2 = --db
  "$BIN/push-connector" events --amqp-url "$PUSH_TEST_AMQP_URL" --prefix "bench-$1" --http "127.0.0.1:$PORT" --db "$2" \
    --log-level warn > "$WORK/events-$1.log" 2>&1 &
  EVENTS_PID=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.05; done
  echo "-- $1"
  local base_out base
  base_out=$(run_wrk "" /healthz)
  base=$(rate_of <<< "$base_out")
  printf '%-34s %10s req/s\n' "baseline GET /healthz" "$base"
  for phase in single batch10 batch100; do
    local before start out lag end stored reqs errors eps ratio
    before=$(metric 'push_connector_events_stored_total{kind="event"}')
    start=$(date +%s.%N)
    case $phase in
      single) out=$(run_wrk event.lua /event) ;;
      batch10) out=$(BATCH=10 run_wrk batch.lua /events) ;;
      batch100) out=$(BATCH=100 run_wrk batch.lua /events) ;;
    esac
    lag=$(wait_stored)
    end=$(date +%s.%N)
    stored=$(( $(metric 'push_connector_events_stored_total{kind="event"}') - before ))
    reqs=$(rate_of <<< "$out")
    errors=$(non2xx <<< "$out"); errors=${errors:-0}
    eps=$(echo "scale=0; $stored / ($end - $start)" | bc)
    ratio=$(echo "scale=3; $eps / $base" | bc)
    STORED_RATE[$1-$phase]=$eps
    printf '%-34s %10s req/s  %8s events/s stored (incl. %.2fs drain)  events/s ÷ healthz req/s %s  non-2xx %s\n' \
      "POST ${phase}" "$reqs" "$eps" "$lag" "$ratio" "$errors"
  done
  echo "stored in total (expected: all distinct, duplicates 0): $(metric 'push_connector_events_stored_total{kind="event"}'), duplicates: $(metric push_connector_events_duplicates_total), transactions: $(metric push_connector_events_transactions_total), 503s: $(metric 'push_connector_events_rejected_total{reason="unavailable"}')"
  kill "$EVENTS_PID"; wait "$EVENTS_PID" || true; EVENTS_PID=
}

echo "events bench: $(nproc) cores, wrk -t2 -c$CONNECTIONS, ${SECONDS_PER_PHASE}s per phase, broker, database and server on this machine"
for database in $DATABASES; do
  case $database in
    sqlite) run_database sqlite "$WORK/events.db" ;;
    postgres) run_database postgres "$PUSH_TEST_POSTGRES_URL" ;;
    *) echo "unknown database $database (sqlite, postgres)" >&2; exit 2 ;;
  esac
done
if [[ -n "${STORED_RATE[sqlite-single]:-}" && -n "${STORED_RATE[postgres-single]:-}" ]]; then
  for phase in single batch10 batch100; do
    printf 'PostgreSQL ÷ SQLite events/s stored, %-9s %s\n' "$phase" \
      "$(echo "scale=2; ${STORED_RATE[postgres-$phase]} / ${STORED_RATE[sqlite-$phase]}" | bc)"
  done
fi
