#!/bin/sh
# fcm-emulator throughput: h2load (nghttp2-client) with 100 concurrent streams on one h2c
# connection against a release build started with --no-auth and no latency.
#   usage: bench/emulator/run.sh [REQUESTS]      (default 200000)
# Reports req/s for
#   baseline: GET /_emulator/health (routing + HTTP/2 framing only, no JSON work)
#   send:     POST /v1/projects/bench/messages:send with a typical ~300-byte message
#             (full parse, FCM validation, size check, recording in the ring)
# and the ratio send/baseline. The emulator is pinned to one core (taskset) when available.
set -eu
cd "$(dirname "$0")/../.."
n="${1:-200000}"
flock /tmp/swift-build.lock swift build -c release --product fcm-emulator -Xswiftc -warnings-as-errors >/dev/null
bin="$(swift build -c release --show-bin-path)/fcm-emulator"
work="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT INT TERM
pin=""
if command -v taskset >/dev/null 2>&1; then pin="taskset -c 0"; fi
$pin "$bin" --listen 127.0.0.1:0 --no-auth --record 10000 >"$work/out" 2>&1 &
pid=$!
i=0
until grep -q '^listening on ' "$work/out"; do
  i=$((i + 1)); [ "$i" -lt 100 ] || { echo "emulator did not start"; cat "$work/out"; exit 1; }
  sleep 0.1
done
url="$(sed -n 's/^listening on //p' "$work/out")"
cat >"$work/body.json" <<'JSON'
{"message":{"token":"bench-device-token-0123456789abcdefghijklmnopqrstuvwxyz","notification":{"title":"Nuova offerta disponibile!","body":"Accedi all'app e scopri i dettagli.","image":"https://example.com/img/promo.png"},"data":{"mn_message_id":"mnid2m.1234.12.12.1.2","pushdata.promo":"OFFERTA_ESTIVA"},"android":{"priority":"high","ttl":"86400s"},"fcm_options":{"analytics_label":"promo"}}}
JSON
h2() { h2load -n "$n" -c 1 -m 100 "$@" 2>&1; }
h2 -n 20000 "$url/_emulator/health" >/dev/null   # warm-up
base="$(h2 "$url/_emulator/health" | tee "$work/base.txt" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')"
send="$(h2 -d "$work/body.json" -H 'content-type: application/json' "$url/v1/projects/bench/messages:send" \
  | tee "$work/send.txt" | sed -n 's/^finished in .*, \([0-9.]*\) req\/s.*/\1/p')"
grep -E '^status codes' "$work/base.txt" "$work/send.txt" | sed "s|$work/||"
echo "baseline GET /_emulator/health : $base req/s"
echo "POST messages:send             : $send req/s"
awk -v s="$send" -v b="$base" 'BEGIN { printf "ratio send/baseline           : %.2f\n", s / b }'
awk -v s="$send" 'BEGIN { if (s < 30000) { print "below the 30000 req/s target"; exit 1 } }'
