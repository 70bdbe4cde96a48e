#!/usr/bin/env bash
# FCM client micro-benchmark: sends/s, client CPU µs per send and peak RSS of FCMClient over
# both send transports (--transport curl: libcurl multi; nghttp2: H2Transport), HTTP/2 over TLS,
# against fcm-emulator, at concurrency 1, 100, 1000, with and without 50 ms emulator latency.
# Baseline in the same run: h2load (nghttp2's C load generator) against the same emulator.
# Ratios (rate x, cpu x, rss x) are nghttp2 ÷ curl.
# Usage: bench/fcm/run.sh [scale]   (scale multiplies request counts; default 1)
set -euo pipefail
cd "$(dirname "$0")/../.."
SCALE=${1:-1}
flock /tmp/swift-build.lock swift build -c release --product fcm-bench >/dev/null
flock /tmp/swift-build.lock swift build -c release --product fcm-emulator >/dev/null
BIN=$(swift build -c release --show-bin-path)
WORK=$(mktemp -d)
EMULATOR_PID=
cleanup() { [ -n "$EMULATOR_PID" ] && kill "$EMULATOR_PID" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout "$WORK/key.pem" -out "$WORK/cert.pem" \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 -addext basicConstraints=critical,CA:TRUE 2>/dev/null
PORT=$(python3 scripts/free-port.py)
URL="https://127.0.0.1:$PORT"
"$BIN/fcm-emulator" make-service-account --project bench-project --token-uri "$URL/token" --out "$WORK/sa.json" >/dev/null
printf '{"message":{"token":"bench-h2load","notification":{"title":"Hello","body":"World"}},"validate_only":false}' > "$WORK/body.json"

start_emulator() { # $1 = latency ms
  local args=(--listen "127.0.0.1:$PORT" --tls-cert "$WORK/cert.pem" --tls-key "$WORK/key.pem"
              --service-account "$WORK/sa.json" --no-auth --record 1000)
  [ "$1" != 0 ] && args+=(--latency "$1")
  "$BIN/fcm-emulator" "${args[@]}" > "$WORK/emulator.log" 2>&1 &
  EMULATOR_PID=$!
  for _ in $(seq 100); do grep -q "listening on" "$WORK/emulator.log" && return; sleep 0.05; done
  echo "emulator did not start" >&2; cat "$WORK/emulator.log" >&2; exit 1
}
stop_emulator() { kill "$EMULATOR_PID"; wait "$EMULATOR_PID" 2>/dev/null || true; EMULATOR_PID=; }

field() { sed -E "s/.*$1=([0-9.]+).*/\\1/" <<< "$2"; }
printf '%-7s %-5s %-7s | %8s %7s %7s | %8s %7s %7s | %8s %7s | %6s %6s %6s\n' latency conc requests \
  "curl/s" "curl µs" "curlMiB" "h2/s" "h2 µs" "h2 MiB" "h2load/s" "h2ld µs" "rate x" "cpu x" "rss x"
for latency in 0 50; do
  start_emulator "$latency"
  for conc in 1 100 1000; do
    case "$latency/$conc" in
      0/1) n=2000 ;; 0/100) n=20000 ;; 0/1000) n=40000 ;;
      50/1) n=100 ;; 50/100) n=10000 ;; 50/1000) n=40000 ;;
    esac
    n=$(( n * SCALE ))
    declare -A rate cpu rss
    for transport in curl nghttp2; do
      line=$("$BIN/fcm-bench" --url "$URL" --ca-file "$WORK/cert.pem" --service-account "$WORK/sa.json" \
             --concurrency "$conc" --requests "$n" --transport "$transport")
      rate[$transport]=$(field sends_per_s "$line")
      cpu[$transport]=$(field cpu_us_per_send "$line")
      rss[$transport]=$(field peak_rss_kib "$line")
      fails=$(field failures "$line")
      [ "$fails" != 0 ] && echo "warning: $transport: $fails failed sends" >&2
    done
    # h2load: same streams-per-connection cap (100) and connection count as the client.
    streams=$(( conc < 100 ? conc : 100 )); conns=$(( (conc + 99) / 100 ))
    TIMEFORMAT='%U %S'
    { time h2load -n "$n" -c "$conns" -m "$streams" -d "$WORK/body.json" \
        -H 'content-type: application/json' "$URL/v1/projects/bench-project/messages:send" \
        > "$WORK/h2load.out" 2>&1 ; } 2> "$WORK/h2load.time"
    h2rate=$(grep -E '^finished in' "$WORK/h2load.out" | sed -E 's/.* ([0-9.]+) req\/s.*/\1/')
    h2cpu=$(awk -v n="$n" '{ printf "%.1f", ($1 + $2) * 1e6 / n }' "$WORK/h2load.time")
    printf '%-7s %-5s %-7s | %8.0f %7.1f %7.1f | %8.0f %7.1f %7.1f | %8.0f %7.1f | %6.2f %6.2f %6.2f\n' \
      "${latency}ms" "$conc" "$n" \
      "${rate[curl]}" "${cpu[curl]}" "$(echo "${rss[curl]} / 1024" | bc -l)" \
      "${rate[nghttp2]}" "${cpu[nghttp2]}" "$(echo "${rss[nghttp2]} / 1024" | bc -l)" \
      "$h2rate" "$h2cpu" \
      "$(echo "${rate[nghttp2]} / ${rate[curl]}" | bc -l)" "$(echo "${cpu[nghttp2]} / ${cpu[curl]}" | bc -l)" \
      "$(echo "${rss[nghttp2]} / ${rss[curl]}" | bc -l)"
  done
  stop_emulator
done
