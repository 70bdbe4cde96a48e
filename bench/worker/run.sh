#!/usr/bin/env bash
# Send-worker end-to-end benchmark: N jobs pre-loaded on a private RabbitMQ node, one worker
# process (worker-bench) consuming them; real dispatch to fcm-emulator (HTTP/2 over TLS, no auth,
# no latency) vs dispatch replaced by an instant "sent", in the same run.
# Usage: bench/worker/run.sh [jobs=1000] [recipients=1] [repeats=3]
set -euo pipefail
cd "$(dirname "$0")/../.."
JOBS=${1:-1000}; RECIPIENTS=${2:-1}; REPEATS=${3:-3}
flock /tmp/swift-build.lock swift build -c release --product worker-bench >/dev/null
flock /tmp/swift-build.lock swift build -c release --product fcm-emulator >/dev/null
BIN=$(swift build -c release --show-bin-path)
WORK=$(mktemp -d)
chmod 755 "$WORK"   # the broker runs as the rabbitmq user and must reach its folder
EMULATOR_PID=
cleanup() { [ -n "$EMULATOR_PID" ] && kill "$EMULATOR_PID" 2>/dev/null; scripts/test-broker.sh stop --dir "$WORK/broker" >/dev/null 2>&1 || true; rm -rf "$WORK"; }
trap cleanup EXIT
eval "$(scripts/test-broker.sh start --dir "$WORK/broker")"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -addext basicConstraints=critical,CA:TRUE 2>/dev/null
PORT=$(python3 scripts/free-port.py)
URL="https://127.0.0.1:$PORT"
"$BIN/fcm-emulator" make-service-account --project bench-project --token-uri "$URL/token" --out "$WORK/sa.json" >/dev/null
"$BIN/fcm-emulator" --listen "127.0.0.1:$PORT" --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem" \
  --service-account "$WORK/sa.json" --record 1000 > "$WORK/emulator.log" 2>&1 &
EMULATOR_PID=$!
for _ in $(seq 100); do grep -q "listening on" "$WORK/emulator.log" && break; sleep 0.05; done
for _ in $(seq "$REPEATS"); do
  "$BIN/worker-bench" --amqp-url "$PUSH_TEST_AMQP_URL" --fcm-url "$URL" --ca-file "$WORK/cert.pem" \
    --service-account "$WORK/sa.json" --jobs "$JOBS" --recipients "$RECIPIENTS"
done
