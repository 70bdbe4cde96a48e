# shellcheck shell=bash disable=SC2034  # EMULATOR_PID, WPID are read by the sourcing script
# What bench/chaos/run.sh and bench/chaos/cluster.sh share; sourced after they parsed their
# options. Uses NAME (the script's name for messages), BUILD, LIMIT, WORK, JOBS, BROKER_ARGS and TIER_ARGS.
# shellcheck source=bench/common.sh
. "$ROOT/bench/common.sh"

log() { printf '[%6.1fs] %s\n' "$(elapsed)" "$*"; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
elapsed() { if [ -n "${T0:-}" ]; then awk -v ms=$(( $(now_ms) - T0 )) 'BEGIN {printf "%.1f", ms / 1000}'; else echo 0; fi; }

# Holds /tmp/pc-cpu.lock (fd 9) for the rest of the run and starts the clock: T0, and DEADLINE
# LIMIT seconds later (`past_deadline`).
take_cpu_lock() {
  exec 9>/tmp/pc-cpu.lock
  echo "== waiting for /tmp/pc-cpu.lock"
  flock 9
  T0=$(now_ms)
  DEADLINE=$((T0 + LIMIT * 1000))
}
past_deadline() { (( $(now_ms) >= DEADLINE )); }


# start_emulator FLAGS...: fcm-emulator over TLS (a dev CA) with a throwaway service account,
# recording 4 × JOBS sends, and the App ID file naming it. Sets EMU_URL and EMULATOR_PID.
start_emulator() {
  local port
  scripts/make-dev-cert.sh "$WORK/certs" >/dev/null
  port=$(free_port)
  EMU_URL="https://127.0.0.1:$port"
  "$BIN/fcm-emulator" make-service-account --project chaos-project --token-uri "$EMU_URL/token" --out "$WORK/sa.json" >/dev/null
  "$BIN/fcm-emulator" --listen "127.0.0.1:$port" --tls-cert "$WORK/certs/server.pem" --tls-key "$WORK/certs/server-key.pem" \
    --service-account "$WORK/sa.json" --record $((JOBS * 4 + 1000)) "$@" \
    >"$WORK/logs/emulator.log" 2>&1 9>&- &
  EMULATOR_PID=$!  # read by the sourcing script
  for _ in $(seq 100); do grep -q "listening on" "$WORK/logs/emulator.log" && break; sleep 0.1; done
  grep -q "listening on" "$WORK/logs/emulator.log" || { echo "$NAME: the emulator did not start" >&2; cat "$WORK/logs/emulator.log" >&2; exit 1; }
  cat > "$WORK/apps.json" <<JSON
{"schema_version": 1,
 "apps": [{"app_id": "chaos-app", "project_id": "chaos-project", "credentials_file": "$WORK/sa.json",
           "default_message_type": "data", "default_payload": {"pushdata.source": "chaos"}}]}
JSON
}
emulator() { curl -sS --max-time 120 --cacert "$WORK/certs/ca.pem" "$EMU_URL$1"; }

# publish FILE: `push-connector send` with confirms; a failed send is reported, then retried once.
PUBLISHED=0 PUBLISH_FAILURES=0
publish() {
  local n out
  n=$(wc -l <"$1")
  if out=$(timeout 120 "$PC" send --config "$WORK/apps.json" "${BROKER_ARGS[@]}" "$1" 2>&1); then
    PUBLISHED=$((PUBLISHED + n)); return 0
  fi
  PUBLISH_FAILURES=$((PUBLISH_FAILURES + 1))
  log "!! publishing $(basename "$1") failed ($out); sending it again (its jobs may now exist twice)"
  sleep 2
  if out=$(timeout 120 "$PC" send --config "$WORK/apps.json" "${BROKER_ARGS[@]}" "$1" 2>&1); then PUBLISHED=$((PUBLISHED + n)); return 0; fi
  log "!! publishing $(basename "$1") failed again ($out)"
}

# start_worker INDEX EXTRA...: a worker process logging to logs/worker-INDEX.log; sets WPID[INDEX].
start_worker() {
  local i=$1; shift
  "$PC" worker --config "$WORK/apps.json" --no-declare "${BROKER_ARGS[@]}" "${TIER_ARGS[@]}" --retry-base-delay 1 \
    --fcm-url "$EMU_URL" --ca-file "$WORK/certs/ca.pem" --shutdown-deadline 10 "$@" \
    >>"$WORK/logs/worker-$i.log" 2>&1 9>&- &
  WPID[i]=$!
  if [ -d "$WORK/pids" ]; then echo "${WPID[i]}" >"$WORK/pids/worker-$i"; fi
}

# summarize_worker_logs COUNT: warnings and errors per worker log, in worker-log-summary.txt.
summarize_worker_logs() {
  local i
  for i in $(seq 0 $(($1 - 1))); do
    printf 'worker %s log: %s\n' "$i" "$(awk '$2 == "warn" || $2 == "error" {n[$2]++} END {for (l in n) printf "%s %d  ", l, n[l]}' "$WORK/logs/worker-$i.log")"
  done >"$WORK/worker-log-summary.txt"
  # the most frequent warnings, without timestamps and variable details
  cat "$WORK"/logs/worker-*.log | awk '$2 == "warn" || $2 == "error"' | cut -d' ' -f2- \
    | sed -E 's/ (error|in|reason)=.*//' | sort | uniq -c | sort -rn | head -8 | sed 's/^/  /' >>"$WORK/worker-log-summary.txt"
}
