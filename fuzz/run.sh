#!/usr/bin/env bash
# Fuzzes the pure core's readers (JSON, send job, App ID file, event) and the composer with
# libFuzzer + AddressSanitizer. Usage: fuzz/run.sh [seconds=60]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_TO_RUN=${1:-60}
out=.build/fuzz
mkdir -p "$out/corpus"
cp examples/jobs/*.json examples/apps.json "$out/corpus/" 2>/dev/null || true
swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name PushCoreFuzz \
  $(find Sources/PushCore -name '*.swift') fuzz/JobDecoderFuzz.swift -o "$out/job-decoder-fuzz" -lm
"$out/job-decoder-fuzz" -max_total_time="$SECONDS_TO_RUN" -max_len=8192 -rss_limit_mb=2048 -artifact_prefix="$out/" "$out/corpus"
