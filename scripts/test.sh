#!/usr/bin/env bash
# The test command: installs what is missing, builds with warnings as errors, runs every test.
# Integration tests start their own RabbitMQ node and fcm-emulator (see docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests -Xswiftc -warnings-as-errors
# The RabbitMQ release lines (scripts/rabbitmq-lines.sh): the whole suite on the system's (Debian
# 12: 3.10) and on the newest (Debian unstable: 4.3.x), the broker-facing suites on 4.0 (Debian
# 13). PUSH_TEST_RABBITMQ_LINES picks others, e.g. "newest" or "system 4.0" (each whole; add
# ":broker" to a line for the broker-facing suites alone). The roots are made once per machine.
lines=${PUSH_TEST_RABBITMQ_LINES:-system newest 4.0:broker}
broker_facing='AMQPTests|WorkerIntegrationTests|RetryTierIntegrationTests|DlqIntegrationTests|ResultsStreamTests'
broker_facing+='|EventsIntegrationTests|QuotaSharingTests|WorkerOutageTests|ClusterFailoverTests|DeadLetteredResultsTests'
broker_facing+='|StreamedJobTests|PacedProjectTests|ForgedHeadersTests|WorkerProcessTests|RabbitMQLineTests|UrgentJobTests|CancelAndPauseTests'
broker_facing+='|EventsForRealClientsTests|ReferenceClientsTests|SilentNodeTests|ClockSkewTests'
for entry in $lines; do
  [ "${entry%%:*}" = system ] || scripts/rabbitmq-lines.sh make "${entry%%:*}"
done
# Serial: on two cores, parallel integration tests (real broker, real processes, rabbitmqctl)
# starve each other's tasks; serial runs are deterministic and take about 9 minutes a line (the
# broker outage and restart tests take most of it).
summary=() digest=() failed=0
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
for entry in $lines; do
  line=${entry%%:*} filter=() scope="whole suite"
  if [ "$entry" = "$line:broker" ]; then filter=(--filter "$broker_facing") scope="broker-facing suites"; fi
  version=$(scripts/rabbitmq-lines.sh version "$line")
  echo "== RabbitMQ $line ($version): $scope"
  started=$(date +%s)
  status=0 log="$logs/$line.log"
  PUSH_TEST_RABBITMQ_LINE=$line swift test --skip-build --no-parallel "${filter[@]}" "$@" 2>&1 | tee "$log" || status=$?
  summary+=("RabbitMQ $line ($version), $scope: $([ $status = 0 ] && echo passed || echo FAILED) in $(( $(date +%s) - started )) s")
  if [ $status != 0 ]; then
    failed=1
    # What failed, repeated at the end (a CI page often shows only the tail): the failed tests'
    # lines, the test that was running when the process stopped, and the run's last lines.
    digest+=("-- RabbitMQ $line: failed tests and issues"
             "$(grep -E '✘|error:|Fatal error|fatal error|[Cc]rash|signal' "$log" | head -40 || true)"
             "-- RabbitMQ $line: the last test started: $(grep -E '◇ Test .* started|Test Case .* started' "$log" | tail -1 || true)"
             "-- RabbitMQ $line: the run's last 25 lines"
             "$(tail -25 "$log")")
  fi
done
[ ${#digest[@]} = 0 ] || printf '%s\n' "${digest[@]}"
printf '%s\n' "${summary[@]}"
[ $failed = 0 ] || { echo "test.sh: the suite failed on a RabbitMQ line (above)" >&2; exit 1; }
# The deployment files (compose, k8s, systemd, alerts, Dockerfile, shell scripts), checked on
# this host: see deploy/README.md. Fails the run when any check fails.
deploy/check.sh "$(swift build --show-bin-path)"
# Fuzz smoke: every reader of outside input for a few seconds, seeds first (they include every
# input that once crashed), so a crash found by fuzzing stays found. Full runs: fuzz/README.md.
fuzz/run.sh --smoke
