#!/usr/bin/env bash
# Quick start "run": the whole pipeline on this machine.
#   1. installs what is missing and builds push-connector and fcm-emulator (release);
#   2. starts a private RabbitMQ node and the fcm-emulator (FCM HTTP v1 + OAuth2), with a
#      throwaway service account;
#   3. declares the topology, starts a worker;
#   4. publishes the seed document's jobs (Notification + Data with 3 recipients, one of them an
#      unregistered token; Data-only) and a job for an unknown App ID;
#   5. shows the results, what the emulator received, and the dead-lettered job; stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product push-connector
swift build -c release --product fcm-emulator
bin=$(swift build -c release --show-bin-path)
state=.local/demo
# The broker runs as the rabbitmq user: its folder lives under /tmp, which that user can reach.
broker_dir=/tmp/push-connector-demo-broker
rm -rf "$state" && mkdir -p "$state"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  scripts/test-broker.sh stop --dir "$broker_dir" >/dev/null 2>&1 || true
}
trap cleanup EXIT

echo "== starting RabbitMQ (private node)"
eval "$(scripts/test-broker.sh start --dir "$broker_dir")"
export PUSH_CONNECTOR_AMQP_URL=$PUSH_TEST_AMQP_URL

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
echo "== starting fcm-emulator on 127.0.0.1:$port"
"$bin/fcm-emulator" make-service-account --project shop-prod --token-uri "http://127.0.0.1:$port/token" \
  --out .local/demo-service-account.json
"$bin/fcm-emulator" --listen "127.0.0.1:$port" --service-account .local/demo-service-account.json >"$state/emulator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$state/emulator.log" && break; sleep 0.1; done
export PUSH_CONNECTOR_FCM_URL=http://127.0.0.1:$port

"$bin/push-connector" config check examples/apps.json
"$bin/push-connector" topology declare
echo "== starting the worker"
"$bin/push-connector" worker --config examples/apps.json --no-declare >"$state/worker.log" 2>&1 &
pids+=($!)

echo "== sending the seed jobs"
"$bin/push-connector" send --config examples/apps.json examples/jobs/notification.json examples/jobs/data-only.json
sed 's/"shop-android"/"unknown-app"/' examples/jobs/data-only.json > "$state/unknown-app.json"
"$bin/push-connector" send --no-validate "$state/unknown-app.json"

echo "== results (one per recipient, routing key <app_id>.<outcome>)"
"$bin/push-connector" results --count 4 --timeout 30
echo "== what FCM (the emulator) received"
curl -s "http://127.0.0.1:$port/_emulator/messages" | python3 -m json.tool | head -60
echo "== dead-letter queue"
scripts/test-broker.sh ctl --dir "$broker_dir" list_queues name messages | grep -E "push\.(jobs|results|jobs\.dlq)\b" || true
echo "== worker log"
cat "$state/worker.log"
