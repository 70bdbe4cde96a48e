#!/usr/bin/env bash
# The test command: installs what is missing, builds with warnings as errors, runs every test.
# Integration tests start their own RabbitMQ node and fcm-emulator (see docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests -Xswiftc -warnings-as-errors
# Serial: on two cores, parallel integration tests (real broker, real processes, rabbitmqctl)
# starve each other's tasks; serial runs are deterministic and take about 6 minutes (the broker
# outage and restart tests take most of it).
swift test --skip-build --no-parallel "$@"
# The deployment files (compose, k8s, systemd, alerts, Dockerfile, shell scripts), checked on
# this host: see deploy/README.md. Fails the run when any check fails.
deploy/check.sh "$(swift build --show-bin-path)"
# Fuzz smoke: every reader of outside input for a few seconds, seeds first (they include every
# input that once crashed), so a crash found by fuzzing stays found. Full runs: fuzz/README.md.
fuzz/run.sh --smoke
