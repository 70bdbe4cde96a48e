# shellcheck shell=bash disable=SC2034  # state, pids and broker_dir are read by the sourcing script
# What the fault scripts share, sourced from the repository's root after option parsing:
# `fault_setup NAME BIN` builds the release binaries unless BIN names a folder (prints it), makes
# a state folder (kept with KEEP=1), starts a private broker in it, and stops everything on exit;
# `fault_emulator [ARGS…]` starts an fcm-emulator (plain HTTP, project shop-prod, service account
# $state/sa.json) on a free `port`, and `emulator_sent` prints how many sends it accepted.

fault_binaries() {
  if [ -n "$1" ]; then echo "$1"; return; fi
  swift build -c release --product push-connector >/dev/null
  swift build -c release --product fcm-emulator >/dev/null
  swift build -c release --show-bin-path
}

fault_cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  scripts/test-broker.sh stop --dir "$broker_dir" >/dev/null 2>&1 || true
  [ -n "${KEEP:-}" ] || rm -rf "$state"
}

fault_setup() {
  state=$(mktemp -d "/tmp/$1.XXXXXX")
  chmod 755 "$state"  # the broker runs as rabbitmq and keeps its node folder inside
  broker_dir=$state/broker
  pids=()
  trap fault_cleanup EXIT
  eval "$(scripts/test-broker.sh start --dir "$broker_dir")"
  export PUSH_CONNECTOR_AMQP_URL=$PUSH_TEST_AMQP_URL
}

# shellcheck disable=SC2120,SC2154 # optional extra emulator flags; bin is the sourcing script's
fault_emulator() {
  port=$(python3 scripts/free-port.py)
  "$bin/fcm-emulator" make-service-account --project shop-prod --token-uri "http://127.0.0.1:$port/token" \
    --out "$state/sa.json" >/dev/null
  "$bin/fcm-emulator" --listen "127.0.0.1:$port" --service-account "$state/sa.json" "$@" >"$state/fcm.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$state/fcm.log" && break; sleep 0.1; done
}

emulator_sent() {
  curl -s "http://127.0.0.1:$port/_emulator/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["totals"].get("sent",0))'
}
