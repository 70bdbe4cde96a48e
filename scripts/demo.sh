#!/usr/bin/env bash
# Quick start "run": builds push-connector and composes the seed document's two jobs
# (Notification + Data and Data-only) with the example App ID configuration.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product push-connector
bin=.build/release/push-connector
for job in examples/jobs/notification.json examples/jobs/data-only.json; do
  echo "== $job"
  "$bin" compose --config examples/apps.json "$job"
done
echo "== examples/jobs/invalid.json (refused, exit code 2)"
"$bin" compose --config examples/apps.json examples/jobs/invalid.json || echo "exit code $?"
