#!/usr/bin/env bash
# Fuzzes every reader of outside input with libFuzzer + AddressSanitizer, one reader at a time:
#   job           send-job decoder (+ JSON parser round trip, composer, validator)   PushCore
#   appfile       App ID file reader (+ composition against each App ID read)        PushCore
#   event         /event and /events bodies (+ round trip)                           PushCore
#   dlq-line      a `dlq export` line (+ round trip, header table through librabbitmq) DeadLetterTools
#   amqp-table    an AMQP field table from the wire: amqp_decode_table + CDecode     AMQP
#   fcm-response  an FCM HTTP answer: status, Retry-After, body                      FCM
#
# Usage: fuzz/run.sh [--smoke | --runs N | --seconds S] [READER...]
#   default      1 000 000 executions per reader (the full run; several minutes in all)
#   --smoke      5 seconds per reader (what scripts/test.sh runs on every test run)
# The readers' own source files are compiled into one module with the harnesses in
# fuzz/targets (imports of project modules removed; librabbitmq linked for the AMQP ones).
# A crash stops the run with libFuzzer's report and the input in .build/fuzz/crash-*.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=(-runs=1000000)
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) mode=(-max_total_time=5); shift ;;
        --runs) mode=(-runs="$2"); shift 2 ;;
        --seconds) mode=(-max_total_time="$2"); shift 2 ;;
        -*) echo "fuzz/run.sh: unknown option $1 (use --smoke, --runs N or --seconds S)" >&2; exit 2 ;;
        *) break ;;
    esac
done
readers=("$@")
[ ${#readers[@]} -gt 0 ] || readers=(job appfile event dlq-line amqp-table fcm-response)

out=.build/fuzz
src="$out/src"
mkdir -p "$src"
# Sources outside PushCore lose their `import PushCore/AMQP/FCM` lines: everything is one module.
# A copy is rewritten only when it changed, so an unchanged tree does not rebuild.
for file in Sources/AMQP/AMQPFieldValue.swift Sources/AMQP/MessageProperties.swift Sources/AMQP/CTableCoding.swift \
            Sources/DeadLetterTools/DeadLetterRecord.swift \
            Sources/FCM/FCMResponseDecoder.swift Sources/FCM/FCMOutcome.swift Sources/FCM/RetryAfter.swift; do
    copy="$src/$(basename "$file")"
    sed -E '/^import (PushCore|AMQP|FCM)$/d' "$file" > "$copy.new"
    if cmp -s "$copy.new" "$copy"; then rm "$copy.new"; else mv "$copy.new" "$copy"; fi
done
binary="$out/readers-fuzz"
if [ ! -x "$binary" ] || [ -n "$(find Sources/PushCore "$src" fuzz/targets -name '*.swift' -newer "$binary" | head -1)" ]; then
    echo "fuzz: building $binary" >&2
    # shellcheck disable=SC2046 # one word per source file (the paths have no spaces)
    swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name ReadersFuzz \
        -I Sources/CRabbitMQ \
        $(find Sources/PushCore -name '*.swift') "$src"/*.swift fuzz/targets/*.swift -o "$binary" -lm \
        2> >(grep -v "Cannot export local symbol" >&2)
fi

for reader in "${readers[@]}"; do
    corpus="$out/corpus/$reader"
    mkdir -p "$corpus"
    cp fuzz/seeds/"$reader"/* "$corpus/" 2>/dev/null || true
    echo "fuzz: $reader (${mode[*]})" >&2
    log="$out/$reader.log"
    if ! FUZZ_READER="$reader" "$binary" "${mode[@]}" -max_len=8192 -rss_limit_mb=2048 -timeout=10 \
            -print_final_stats=1 -artifact_prefix="$out/$reader-" "$corpus" >"$log" 2>&1; then
        tail -60 "$log" >&2
        echo "fuzz: $reader FAILED (log: $log)" >&2
        exit 1
    fi
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    echo "fuzz: $reader ok, $runs executions" >&2
done
