#!/usr/bin/env bash
# End-to-end cost of the send worker against two floors, in one run (see bench/e2e/README.md).
#
#   bench/e2e/run.sh [--jobs N] [--soak N] [--only LIST] [--no-build] [--keep] [--perf] [--broker-tls]
#
#   --jobs N     single-recipient jobs per measurement (default 30000); the 10-recipient
#                measurement uses N/10 jobs, the latency pair N/2 jobs each
#   --soak N     messages of the memory soak (default 1000000; 0 skips it)
#   --only LIST  comma-separated subset of: single,ten,latency,soak (default all) and big (only
#                when named: N/100 jobs x 1 000 recipients, the worker alone, its peak RSS)
#   --no-build   use the release binary already built
#   --keep       keep the work folder (logs, configs, and rss-LABEL.txt per worker run: every 0.1 s
#                the time, results so far, RSS in MiB, confirms pending, FCM requests in flight)
#   --perf       record a CPU profile of each worker run (perf record -e cpu-clock -g) into the
#                work folder as perf-LABEL.data (implies --keep); the figures then include perf's cost
#                (PERF_EVENT=EVENT records another event, e.g. a probe on malloc)
#   --broker-tls the worker reaches the broker over TLS (the node's amqps:// listener, its CA
#                trusted); the floors stay on plain TCP, so the ratios then include the worker's TLS
#   WORKER_FLAGS="..." (environment) adds flags to every worker run, to compare a setting
#                against the defaults (e.g. WORKER_FLAGS="--prefetch 500")
#
# Starts a private RabbitMQ node (scripts/test-broker.sh), Debian's nginx-light as a static
# HTTP/2 TLS endpoint shaped like FCM (nginx.conf.in), and measures three C floors:
#   h2load          Debian's nghttp2 load generator (libnghttp2): the worker's request body, one
#                   TLS connection, 100 streams; the least an HTTP/2 client spends per send;
#   curl_floor      a libcurl multi client sending the same requests as the worker (100 streams);
#   consumer_floor  the worker's broker work alone: consume the job queue, publish one result per
#                   recipient to the results exchange, confirms read as a stream, acks `multiple`.
# Then runs the floors (each alone, then both at once) and the real `push-connector worker`
# binary (default flags) one after another on the same topology and prints msg/s, CPU per message
# (worker from /proc, broker = the node's beam.smp from /proc), peak RSS and the ratios. The
# latency pair runs the project's fcm-emulator at 0 ms and 100 ms. Holds /tmp/pc-cpu.lock while
# measuring: do not wrap it in flock.
# shellcheck disable=SC2317  # cleanup runs from the EXIT trap
set -euo pipefail
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
cd "$(dirname "$0")/../.."

JOBS=30000 SOAK=1000000 ONLY="single,ten,latency,soak" BUILD=1 KEEP=0 PERF=0 BROKER_TLS=0
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) JOBS=${2:-}; shift 2 ;;
    --soak) SOAK=${2:-}; shift 2 ;;
    --only) ONLY=${2:-}; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    --keep) KEEP=1; shift ;;
    --perf) PERF=1 KEEP=1; shift ;;
    --broker-tls) BROKER_TLS=1; shift ;;
    -h|--help) sed -n '2,/^# shellcheck/p' "$SELF" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
if ! [[ $JOBS =~ ^[0-9]+$ ]] || ((JOBS < 100)); then echo "run.sh: --jobs takes a whole number >= 100" >&2; exit 2; fi
[[ $SOAK =~ ^[0-9]+$ ]] || { echo "run.sh: --soak takes a whole number" >&2; exit 2; }
for s in ${ONLY//,/ }; do
  case "$s" in single|ten|latency|soak|big) ;; *) echo "run.sh: --only knows single,ten,latency,soak,big, not $s" >&2; exit 2 ;; esac
done
wants() { [[ ",$ONLY," == *",$1,"* ]]; }
command -v nginx >/dev/null || { echo "run.sh: needs Debian's nginx-light (apt-get install nginx-light)" >&2; exit 1; }
command -v gcc >/dev/null || { echo "run.sh: needs gcc" >&2; exit 1; }
command -v h2load >/dev/null || { echo "run.sh: needs h2load (apt-get install nghttp2-client)" >&2; exit 1; }
((PERF == 0)) || command -v perf >/dev/null || { echo "run.sh: --perf needs perf (apt-get install linux-perf)" >&2; exit 1; }

NAME=run.sh
read -ra EXTRA_FLAGS <<<"${WORKER_FLAGS:-}"
# shellcheck source=bench/common.sh
. bench/common.sh
release_binaries

WORK=/tmp/pc-e2e-$$
mkdir -p "$WORK/logs"
chmod 755 "$WORK"
NGINX_STARTED=0 EMULATOR_PID="" WORKER_PID="" BROKER_STARTED=0
cleanup() {
  [ -n "$WORKER_PID" ] && kill -9 "$WORKER_PID" 2>/dev/null
  [ -n "$EMULATOR_PID" ] && kill -9 "$EMULATOR_PID" 2>/dev/null
  ((NGINX_STARTED)) && nginx -p "$WORK" -c "$WORK/nginx.conf" -s stop 2>/dev/null
  ((BROKER_STARTED)) && scripts/test-broker.sh stop --dir "$WORK/broker" >/dev/null 2>&1
  wait 2>/dev/null
  if ((KEEP)); then echo "work folder kept: $WORK"; else rm -rf "$WORK"; fi
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
now() { date +%s.%N; }
cpu_of() { # utime + stime of a pid, in seconds
  awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) / hz }' "/proc/$1/stat"
}
context_switches() { # voluntary + involuntary, summed over the threads of a pid
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches:/ { n += $2 } END { print n + 0 }'
}
peak_rss_mib() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
rss_mib() { awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
calc() { python3 -c "print($1)"; }

echo "== building the C floors"
gcc -O2 -Wall -Wextra -o "$WORK/curl_floor" bench/e2e/curl_floor.c -lcurl
gcc -O2 -Wall -Wextra -o "$WORK/consumer_floor" bench/e2e/consumer_floor.c -lrabbitmq

exec 9>/tmp/pc-cpu.lock
echo "== waiting for /tmp/pc-cpu.lock"
flock 9

echo "== starting RabbitMQ (private node), nginx (HTTP/2 TLS), certificates"
eval "$(scripts/test-broker.sh start --dir "$WORK/broker" --owner-pid $$ 9>&-)"
BROKER_STARTED=1
# shellcheck disable=SC2153  # PUSH_TEST_AMQP_URL is set by test-broker.sh start
AMQP_URL=$PUSH_TEST_AMQP_URL
WORKER_AMQP_URL=$AMQP_URL
if ((BROKER_TLS)); then
  [ -n "${PUSH_TEST_AMQPS_URL:-}" ] || { echo "run.sh: --broker-tls: the test broker has no TLS listener" >&2; exit 1; }
  WORKER_AMQP_URL=$PUSH_TEST_AMQPS_URL
fi
AMQP_PORT=$(echo "$AMQP_URL" | sed -E 's|.*:([0-9]+)/?$|\1|')
BEAM=$(cat "$WORK/broker/beam.pid")
scripts/make-dev-cert.sh "$WORK/certs" >/dev/null
FCM_PORT=$(free_port)
sed -e "s|@WORK@|$WORK|g" -e "s|@PORT@|$FCM_PORT|g" bench/e2e/nginx.conf.in > "$WORK/nginx.conf"
mkdir -p "$WORK/logs"
nginx -p "$WORK" -c "$WORK/nginx.conf" -g 'daemon on;' 2>"$WORK/logs/nginx-start.log" 9>&- \
  || { cat "$WORK/logs/nginx-start.log" >&2; exit 1; }
NGINX_STARTED=1
FCM_URL="https://127.0.0.1:$FCM_PORT"
"$BIN/fcm-emulator" make-service-account --project e2e-project --token-uri "$FCM_URL/token" --out "$WORK/sa.json" >/dev/null
# The project's quota is raised (as for a project whose FCM quota was raised): at FCM's default,
# 600 000 a minute, the worker paces one project to 10 000 msg/s, and the runs would measure the
# pacing instead of the delivery path.
cat > "$WORK/apps.json" <<JSON
{"schema_version": 1,
 "apps": [{"app_id": "e2e-app", "project_id": "e2e-project", "credentials_file": "$WORK/sa.json",
           "default_message_type": "data", "default_payload": {"pushdata.source": "e2e"},
           "extra_options": {"android": {"priority": "high", "ttl": "86400s"}},
           "rate_limit_per_minute": 60000000}]}
JSON
"$PC" topology declare --amqp-url "$AMQP_URL" >/dev/null

jobs_file() { # $1 = jobs, $2 = recipients per job, $3 = file, $4 = first job number
  python3 - "$1" "$2" "$3" "$4" <<'PY'
import json, sys
jobs, per, path, first = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
with open(path, "w") as f:
    for j in range(first, first + jobs):
        f.write(json.dumps({"job_id": f"e2e-{j}", "app_id": "e2e-app", "message_type": "data",
                            "data": {"pushdata.action": "promo", "pushdata.campaign": "winter-sale",
                                     "pushdata.user_id": f"USR{j:08d}"},
                            "recipients": [{"token": f"tok-{j}-{r}", "mn_message_id": f"mnid2m.{j}.{r}.1.1.1"}
                                           for r in range(per)]}, separators=(",", ":")) + "\n")
PY
}
publish() { # $1 = file
  "$PC" send --no-validate --amqp-url "$AMQP_URL" "$1" >"$WORK/logs/send.log" 2>&1 \
    || { echo "run.sh: publishing $1 failed:" >&2; cat "$WORK/logs/send.log" >&2; exit 1; }
}

# The request body the worker sends, with the token left as %TOKEN% for curl_floor.
jobs_file 1 1 "$WORK/one.jsonl" 0
"$PC" compose --config "$WORK/apps.json" "$WORK/one.jsonl" | python3 -c '
import json, sys
body = json.load(sys.stdin)
body["message"]["token"] = "%TOKEN%"
print(json.dumps(body, separators=(",", ":")))' > "$WORK/body.json"
sed 's/%TOKEN%/e2e-1/' "$WORK/body.json" | tr -d '\n' > "$WORK/body-h2.json"  # h2load sends one body for every request
# The size of one result as the worker publishes it: a `sent` result of these jobs is ~260 bytes
# (app, job and message ids, target, FCM message name, timestamps).
RESULT_BYTES=260

declare -A FIG
metrics_sample() { # $1 = metrics port: results so far, confirms pending, FCM requests in flight
  { curl -s --max-time 2 "http://127.0.0.1:$1/metrics" || true; } | awk '
    /^push_connector_results_total[{ ]/ { r += $NF }
    /^push_connector_confirms_pending[{ ]/ { c += $NF }
    /^push_connector_fcm_requests_in_flight[{ ]/ { f += $NF }
    END { printf "%d %d %d\n", r, c, f }'
}
results_done() { # $1 = metrics port: the sum of push_connector_results_total
  local results _
  read -r results _ < <(metrics_sample "$1")
  echo "$results"
}

curl_floor() { # $1 = requests: the C libcurl client against nginx, 100 streams
  "$WORK/curl_floor" "$FCM_URL/v1/projects/e2e-project/messages:send" "$WORK/certs/ca.pem" ya29.e2e-bench-token \
    "$WORK/body.json" "$1" 100
}
h2_floor() { # $1 = requests: h2load (libnghttp2) against nginx, one TLS connection, 100 streams, the worker's body
  python3 - "$1" "$FCM_URL/v1/projects/e2e-project/messages:send" "$WORK/body-h2.json" <<'PY'
import re, resource, subprocess, sys, time
count, url, body = sys.argv[1:4]
start = time.monotonic()
run = subprocess.run(["h2load", "-n", count, "-c", "1", "-t", "1", "-m", "100", "-d", body,
                      "-H", "authorization: Bearer ya29.e2e-bench-token", "-H", "content-type: application/json", url],
                     capture_output=True, text=True)
seconds = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
ok = re.search(r"status codes: (\d+) 2xx", run.stdout)
done = re.search(r"requests: \d+ total, \d+ started, (\d+) done", run.stdout)
if run.returncode != 0 or not ok or not done or int(ok.group(1)) != int(count):
    sys.exit(f"h2_floor: h2load did not send {count} requests with 2xx answers:\n{run.stdout}{run.stderr}")
print(f"sent={ok.group(1)} failed={int(done.group(1)) - int(ok.group(1))} seconds={seconds:.3f} "
      f"cpu_seconds={usage.ru_utime + usage.ru_stime:.3f}")
PY
}
consumer_floor() { # $1 = jobs, $2 = recipients per job: the C consumer on the job queue, prefetch 250
  "$WORK/consumer_floor" 127.0.0.1 "$AMQP_PORT" guest guest / push.jobs push.results e2e-app.sent \
    "$1" 250 "$RESULT_BYTES" "$2"
}

run_curl_floor() { # $1 = label, $2 = requests
  local out
  out=$(curl_floor "$2")
  FIG[$1.rate]=$(echo "$out" | awk -F'[= ]' '{ printf "%.0f", $2 / $6 }')
  FIG[$1.cpu]=$(echo "$out" | awk -F'[= ]' '{ printf "%.1f", $8 / $2 * 1e6 }')
  echo "   curl_floor: $out"
}

run_h2_floor() { # $1 = label, $2 = requests
  local out
  out=$(h2_floor "$2")
  FIG[$1.rate]=$(echo "$out" | awk -F'[= ]' '{ printf "%.0f", $2 / $6 }')
  FIG[$1.cpu]=$(echo "$out" | awk -F'[= ]' '{ printf "%.1f", $8 / $2 * 1e6 }')
  echo "   h2load: $out"
}

run_consumer_floor() { # $1 = label, $2 = jobs, $3 = recipients per job
  local out b0 b1
  jobs_file "$2" "$3" "$WORK/floor.jsonl" 0
  publish "$WORK/floor.jsonl"
  b0=$(cpu_of "$BEAM")
  out=$(consumer_floor "$2" "$3")
  b1=$(cpu_of "$BEAM")
  FIG[$1.rate]=$(echo "$out" | awk -v per="$3" -F'[= ]' '{ printf "%.0f", $2 * per / $8 }')
  FIG[$1.broker]=$(calc "round(($b1 - $b0) / ($2 * $3) * 1e6, 1)")
  FIG[$1.cpu]=$(echo "$out" | awk -v per="$3" -F'[= ]' '{ printf "%.1f", $10 / ($2 * per) * 1e6 }')
  echo "   consumer_floor: $out"
}

# Both floors at once, sharing the two cores as the worker shares them with the broker and nginx:
# what two C programs doing the worker's two halves reach together on this machine.
run_floors_together() { # $1 = label, $2 = jobs, $3 = recipients per job
  local t0 t1 curl_pid amqp_pid
  jobs_file "$2" "$3" "$WORK/floor.jsonl" 0
  publish "$WORK/floor.jsonl"
  t0=$(now)
  curl_floor "$(($2 * $3))" >"$WORK/logs/together-curl.txt" &
  curl_pid=$!
  consumer_floor "$2" "$3" >"$WORK/logs/together-amqp.txt" &
  amqp_pid=$!
  wait "$curl_pid"  # two commands: set -e stops the run when either floor failed
  wait "$amqp_pid"
  t1=$(now)
  FIG[$1.rate]=$(calc "round($2 * $3 / ($t1 - $t0))")
  echo "   both floors at once: $(($2 * $3)) messages in $(calc "round($t1 - $t0, 2)") s; curl: $(cat "$WORK/logs/together-curl.txt"); consumer: $(cat "$WORK/logs/together-amqp.txt")"
}

run_worker() { # $1 = label, $2 = jobs, $3 = recipients per job, $4 = FCM URL, $5 = service account; rest: worker flags
  local label=$1 jobs=$2 per=$3 url=$4 sa=$5
  shift 5
  local mport expected t0 t1 b0 b1 done_count=0 last_log pending sending
  mport=$(free_port)
  expected=$((jobs * per))
  sed "s|$WORK/sa.json|$sa|" "$WORK/apps.json" > "$WORK/apps-run.json"
  jobs_file "$jobs" "$per" "$WORK/worker.jsonl" 1000000
  publish "$WORK/worker.jsonl"
  b0=$(cpu_of "$BEAM")
  t0=$(now)
  "$PC" worker --config "$WORK/apps-run.json" --amqp-url "$WORKER_AMQP_URL" --fcm-url "$url" --ca-file "$WORK/certs/ca.pem" \
    --http "127.0.0.1:$mport" "${EXTRA_FLAGS[@]}" "$@" >"$WORK/logs/worker-$label.log" 2>&1 9>&- &
  WORKER_PID=$!
  local perf_pid=""
  last_log=$(date +%s)
  while :; do
    kill -0 "$WORKER_PID" 2>/dev/null || { echo "run.sh: the worker exited; its log:" >&2; tail -20 "$WORK/logs/worker-$label.log" >&2; exit 1; }
    read -r done_count pending sending < <(metrics_sample "$mport")
    echo "$(now) $done_count $(rss_mib "$WORKER_PID" 2>/dev/null) $pending $sending" >>"$WORK/rss-$label.txt"
    # perf follows the threads that exist when it attaches: wait until the lanes run.
    if ((PERF)) && [ -z "$perf_pid" ] && [ "${done_count:-0}" -gt 0 ]; then
      perf record -q -e "${PERF_EVENT:-cpu-clock}" -g -p "$WORKER_PID" -o "$WORK/perf-$label.data" >/dev/null 2>&1 &
      perf_pid=$!
    fi
    [ "${done_count:-0}" -ge "$expected" ] && break
    if (( $(date +%s) - last_log >= 10 )); then echo "   ... $done_count of $expected"; last_log=$(date +%s); fi
    sleep 0.1
  done
  t1=$(now)
  b1=$(cpu_of "$BEAM")
  FIG[$label.rate]=$(calc "round($expected / ($t1 - $t0))")
  FIG[$label.cpu]=$(calc "round($(cpu_of "$WORKER_PID") / $expected * 1e6, 1)")
  FIG[$label.broker]=$(calc "round(($b1 - $b0) / $expected * 1e6, 1)")
  FIG[$label.rss]=$(peak_rss_mib "$WORKER_PID")
  FIG[$label.switches]=$(calc "round($(context_switches "$WORKER_PID") / $expected, 2)")
  if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true; echo "   profile: $WORK/perf-$label.data"; fi
  kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null || true; WORKER_PID=""
  echo "   worker: $expected results in $(calc "round($t1 - $t0, 2)") s, peak RSS ${FIG[$label.rss]} MiB, ${FIG[$label.switches]} context switches per message"
}

ratio() { calc "round($1 / $2, 2)"; }
report_pair() { # $1 = floor label prefix, $2 = worker label, $3 = title, $4 = issue 30's CPU target
  local f=$1 w=$2
  printf '\n%s\n' "$3"
  printf '  %-42s %10s %12s %12s %9s\n' "" "msg/s" "CPU µs/msg" "broker µs/msg" "peak RSS"
  printf '  %-42s %10s %12s %12s %9s\n' "C nghttp2 client (h2load, 100 streams)" "${FIG[$f-h2.rate]}" "${FIG[$f-h2.cpu]}" "-" "-"
  printf '  %-42s %10s %12s %12s %9s\n' "C libcurl multi client (100 streams)" "${FIG[$f-curl.rate]}" "${FIG[$f-curl.cpu]}" "-" "-"
  printf '  %-42s %10s %12s %12s %9s\n' "C consumer (broker work only)" "${FIG[$f-amqp.rate]}" "${FIG[$f-amqp.cpu]}" "${FIG[$f-amqp.broker]}" "-"
  printf '  %-42s %10s %12s %12s %9s\n' "both C floors at once (sharing the cores)" "${FIG[$f-together.rate]}" "-" "-" "-"
  printf '  %-42s %10s %12s %12s %9s\n' "push-connector worker (defaults)" "${FIG[$w.rate]}" "${FIG[$w.cpu]}" "${FIG[$w.broker]}" "${FIG[$w.rss]} MiB"
  local floor_rate c_floor
  floor_rate=$(calc "min(${FIG[$f-curl.rate]}, ${FIG[$f-amqp.rate]})")
  c_floor=$(calc "round(${FIG[$f-h2.cpu]} + ${FIG[$f-amqp.cpu]}, 1)")
  printf '  worker CPU / (nghttp2 + AMQP floors, %s µs) = %s (issue 30: <= %s); / (libcurl + AMQP floors) = %s\n' \
    "$c_floor" "$(ratio "${FIG[$w.cpu]}" "$c_floor")" "$4" "$(ratio "${FIG[$w.cpu]}" "$(calc "round(${FIG[$f-curl.cpu]} + ${FIG[$f-amqp.cpu]}, 1)")")"
  printf '  ratios: worker CPU / curl CPU = %s (target <= 1.25); broker / C consumer = %s (target <= 1.1); msg/s / min(floors) = %s (target >= 0.8)\n' \
    "$(ratio "${FIG[$w.cpu]}" "${FIG[$f-curl.cpu]}")" "$(ratio "${FIG[$w.broker]}" "${FIG[$f-amqp.broker]}")" \
    "$(ratio "${FIG[$w.rate]}" "$floor_rate")"
  printf '  msg/s / both floors at once = %s (the most two C programs doing its two halves reach here together)\n' \
    "$(ratio "${FIG[$w.rate]}" "${FIG[$f-together.rate]}")"
}

if wants single; then
  echo "== $JOBS jobs x 1 recipient"
  run_h2_floor single-h2 "$JOBS"
  run_curl_floor single-curl "$JOBS"
  run_consumer_floor single-amqp "$JOBS" 1
  run_floors_together single-together "$JOBS" 1
  run_worker single "$JOBS" 1 "$FCM_URL" "$WORK/sa.json"
fi
if wants ten; then
  echo "== $((JOBS / 10)) jobs x 10 recipients"
  run_h2_floor ten-h2 "$JOBS"
  run_curl_floor ten-curl "$JOBS"
  run_consumer_floor ten-amqp "$((JOBS / 10))" 10
  run_floors_together ten-together "$((JOBS / 10))" 10
  run_worker ten "$((JOBS / 10))" 10 "$FCM_URL" "$WORK/sa.json"
fi
if wants big; then
  echo "== $((JOBS / 100)) jobs x 1000 recipients (the worker alone)"
  run_worker big "$((JOBS / 100))" 1000 "$FCM_URL" "$WORK/sa.json"
fi
if wants latency; then
  LAT_JOBS=$((JOBS / 2))
  for latency in 0 100; do
    echo "== $LAT_JOBS jobs x 1 recipient, fcm-emulator answering in $latency ms, default flags"
    EMU_PORT=$(free_port)
    "$BIN/fcm-emulator" make-service-account --project e2e-project --token-uri "https://127.0.0.1:$EMU_PORT/token" \
      --out "$WORK/sa-emulator.json" >/dev/null
    "$BIN/fcm-emulator" --listen "127.0.0.1:$EMU_PORT" --tls-cert "$WORK/certs/server.pem" --tls-key "$WORK/certs/server-key.pem" \
      --service-account "$WORK/sa-emulator.json" --latency "$latency" >"$WORK/logs/emulator-$latency.log" 2>&1 9>&- &
    EMULATOR_PID=$!
    for _ in $(seq 100); do grep -q "listening on" "$WORK/logs/emulator-$latency.log" && break; sleep 0.1; done
    run_worker "latency$latency" "$LAT_JOBS" 1 "https://127.0.0.1:$EMU_PORT" "$WORK/sa-emulator.json"
    FIG[latency$latency.emulator]=$(calc "round($(cpu_of "$EMULATOR_PID") / $LAT_JOBS * 1e6, 1)")
    kill "$EMULATOR_PID"; wait "$EMULATOR_PID" 2>/dev/null || true; EMULATOR_PID=""
  done
fi

echo
echo "== figures (one run, same machine, ratios against floors measured in this run)"
wants single && report_pair single single "30 000-style run: $JOBS jobs x 1 recipient" 2.0
wants ten && report_pair ten ten "$((JOBS / 10)) jobs x 10 recipients" 1.5
if wants big; then
  printf '\n%s jobs x 1000 recipients, worker (defaults): %s msg/s, CPU %s µs/msg, broker %s µs/msg, peak RSS %s MiB\n' \
    "$((JOBS / 100))" "${FIG[big.rate]}" "${FIG[big.cpu]}" "${FIG[big.broker]}" "${FIG[big.rss]}"
fi
if wants latency; then
  printf '\nfcm-emulator latency, default flags: 0 ms %s msg/s, 100 ms %s msg/s, ratio %s (target >= 0.8)\n' \
    "${FIG[latency0.rate]}" "${FIG[latency100.rate]}" "$(ratio "${FIG[latency100.rate]}" "${FIG[latency0.rate]}")"
  printf '  CPU µs/msg at 0 / 100 ms: worker %s / %s, emulator %s / %s, broker %s / %s (they share the two cores)\n' \
    "${FIG[latency0.cpu]}" "${FIG[latency100.cpu]}" "${FIG[latency0.emulator]}" "${FIG[latency100.emulator]}" \
    "${FIG[latency0.broker]}" "${FIG[latency100.broker]}"
fi

soak() { # $1 = messages: single-recipient jobs fed in chunks while the worker runs; RSS sampled every 5 s
  local total=$1 chunk=50000 published=0 done_count=0 mport next_sample rss first_rss="" max_rss=0 start
  mport=$(free_port)
  "$PC" worker --config "$WORK/apps.json" --amqp-url "$WORKER_AMQP_URL" --fcm-url "$FCM_URL" --ca-file "$WORK/certs/ca.pem" \
    --http "127.0.0.1:$mport" "${EXTRA_FLAGS[@]}" >"$WORK/logs/worker-soak.log" 2>&1 9>&- &
  WORKER_PID=$!
  start=$(date +%s)
  next_sample=$start
  echo "   elapsed_s results rss_mib" > "$WORK/soak.txt"
  while ((done_count < total)); do
    kill -0 "$WORKER_PID" 2>/dev/null || { echo "run.sh: the worker exited; its log:" >&2; tail -20 "$WORK/logs/worker-soak.log" >&2; exit 1; }
    done_count=$(results_done "$mport")
    done_count=${done_count:-0}
    if ((published < total && published - done_count < 2 * chunk)); then
      local n=$((total - published < chunk ? total - published : chunk))
      jobs_file "$n" 1 "$WORK/soak.jsonl" $((2000000 + published))
      publish "$WORK/soak.jsonl"
      published=$((published + n))
    fi
    if (( $(date +%s) >= next_sample )); then
      rss=$(rss_mib "$WORKER_PID")
      echo "   $(( $(date +%s) - start )) $done_count $rss" >> "$WORK/soak.txt"
      if ((done_count >= 100000)); then
        [ -z "$first_rss" ] && first_rss=$rss
        max_rss=$(calc "max($max_rss, $rss)")
      fi
      next_sample=$((next_sample + 5))
    fi
    sleep 0.2
  done
  rss=$(rss_mib "$WORKER_PID")
  echo "   $(( $(date +%s) - start )) $done_count $rss" >> "$WORK/soak.txt"
  max_rss=$(calc "max($max_rss, $rss)")
  cat "$WORK/soak.txt"
  printf '   soak: %s results in %s s; RSS at 100 000 results %s MiB, highest after %s MiB (ratio %s, target <= 1.10); peak RSS %s MiB (target <= 64)\n' \
    "$done_count" "$(( $(date +%s) - start ))" "${first_rss:-n/a}" "$max_rss" \
    "$( [ -n "$first_rss" ] && ratio "$max_rss" "$first_rss" || echo n/a)" "$(peak_rss_mib "$WORKER_PID")"
  kill -TERM "$WORKER_PID"; wait "$WORKER_PID" 2>/dev/null || true; WORKER_PID=""
}

if wants soak && ((SOAK > 0)); then
  echo
  echo "== soak: $SOAK single-recipient messages against nginx, default flags"
  soak "$SOAK"
fi
