#!/usr/bin/env bash
# Quick start "run": the whole pipeline on this machine.
#   1. installs what is missing and builds push-connector and fcm-emulator (release);
#   2. starts a private RabbitMQ node and the fcm-emulator (FCM HTTP v1 + OAuth2) over TLS with a
#      throwaway dev CA (scripts/make-dev-cert.sh; the worker trusts it with --ca-file), with a
#      throwaway service account whose token_uri is the emulator's https:// /token;
#   3. declares the topology, starts a worker and the events consumer;
#   4. publishes the seed document's jobs (Notification + Data with 3 recipients, one of them an
#      unregistered token; Data-only) and a job for an unknown App ID;
#   5. shows the results, posts open / click events for one notification and shows the campaign
#      funnel, what the emulator received, and the dead-lettered job; stops everything.
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

port=$(python3 scripts/free-port.py)
echo "== starting fcm-emulator on https://127.0.0.1:$port (TLS with a throwaway dev CA, like real FCM)"
# Sends share one HTTP/2 connection per 100 in flight (libnghttp2, over TLS or plain http://); TLS
# as with real FCM. Verification stays on: the worker trusts the CA.
scripts/make-dev-cert.sh "$state/certs" >/dev/null
ca="$state/certs/ca.pem"
"$bin/fcm-emulator" make-service-account --project shop-prod --token-uri "https://127.0.0.1:$port/token" \
  --out .local/demo-service-account.json
"$bin/fcm-emulator" --listen "127.0.0.1:$port" --tls-cert "$state/certs/server.pem" --tls-key "$state/certs/server-key.pem" \
  --service-account .local/demo-service-account.json >"$state/emulator.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "listening on" "$state/emulator.log" && break; sleep 0.1; done
export PUSH_CONNECTOR_FCM_URL=https://127.0.0.1:$port

"$bin/push-connector" config check examples/apps.json
"$bin/push-connector" topology declare
echo "== starting the worker"
"$bin/push-connector" worker --config examples/apps.json --no-declare --ca-file "$ca" >"$state/worker.log" 2>&1 &
pids+=($!)
events_port=$(python3 scripts/free-port.py)
echo "== starting the events consumer (POST /event on 127.0.0.1:$events_port)"
"$bin/push-connector" events --config examples/apps.json --http "127.0.0.1:$events_port" --db "$state/events.db" \
  --no-declare >"$state/events.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$events_port/healthz" >/dev/null && break; sleep 0.1; done

echo "== sending the seed jobs"
"$bin/push-connector" send --config examples/apps.json examples/jobs/notification.json examples/jobs/data-only.json
sed 's/"shop-android"/"unknown-app"/' examples/jobs/data-only.json > "$state/unknown-app.json"
"$bin/push-connector" send --no-validate "$state/unknown-app.json"

echo "== results (one per recipient, routing key <app_id>.<outcome>; the unknown-app job is dead_lettered)"
"$bin/push-connector" results --count 5 --timeout 30
echo "== the app reports what Ada did with the notification (POST /event with its mn_message_id)"
for type in receive open click; do
  curl -s -X POST "http://127.0.0.1:$events_port/event" -H 'content-type: application/json' \
    -d "{\"event_type\":\"$type\",\"mn_message_id\":\"mnid2m.1234.12.12.1.2\",\"app_id\":\"shop-android\"}"
  echo
done
echo "== funnel of the campaign"
for _ in $(seq 50); do
  "$bin/push-connector" stats --db "$state/events.db" --campaign OFFERTA_ESTIVA --json 2>/dev/null | grep -q '"clicked": *1' && break
  sleep 0.2
done
"$bin/push-connector" stats --db "$state/events.db" --campaign OFFERTA_ESTIVA
echo "== what FCM (the emulator) received"
curl -s --cacert "$ca" "https://127.0.0.1:$port/_emulator/messages" | python3 -m json.tool > "$state/emulator-messages.json"
head -40 "$state/emulator-messages.json"; echo "   … (all of it in $state/emulator-messages.json)"
echo "== dead-letter queue"
"$bin/push-connector" dlq list
echo "== worker log"
cat "$state/worker.log"
