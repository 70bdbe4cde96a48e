#!/usr/bin/env bash
# Installs the Debian packages push-connector needs to build, test and run (idempotent).
# Needs root (or sudo). The Swift 6 toolchain itself must already be on PATH.
set -euo pipefail
PACKAGES=(pkg-config librabbitmq-dev libcurl4-openssl-dev libssl-dev libnghttp2-dev libmicrohttpd-dev
          libsqlite3-dev sqlite3 libpq-dev postgresql rabbitmq-server nghttp2-client curl openssl wrk bc
          shellcheck yamllint prometheus python3-yaml debootstrap golang-go golang-github-rabbitmq-amqp091-go-dev
          chromium libfaketime kotlin)
# deploy/check.sh uses shellcheck, yamllint, promtool (package prometheus) and python3-yaml;
# the PostgreSQL tests start their own server from Debian's postgresql (scripts/test-postgres.sh).
# debootstrap makes the Debian roots of the newer RabbitMQ lines (scripts/rabbitmq-lines.sh).
# Go and amqp091-go build the reference clients of examples/go (ReferenceClientsTests); headless
# chromium runs the web snippet of examples/web against the events endpoint (WebSnippetBrowserTests).
# libfaketime gives shipped workers clocks of their own (ClockSkewTests). kotlin builds the Android
# events client of examples/android (MobileClientsTests).
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # Debian's rabbitmq-server post-install starts a system node; the project runs its own nodes.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The emulator's fidelity test drives the official Firebase Admin SDK (Python, from PyPI).
if ! python3 -c "import firebase_admin" 2>/dev/null; then
  echo "install-deps: installing firebase-admin (pip)"
  python3 -m pip install --quiet --disable-pip-version-check firebase-admin \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages firebase-admin
fi
# The contract checks (contracts/check.py, run by ContractSchemaTests) validate JSON Schema
# 2020-12 with date-times checked, and the OpenAPI document; the Python reference clients of
# examples/python use pika (all from PyPI, for whichever python3 is on PATH).
python_packages=(jsonschema rfc3339-validator openapi-spec-validator pika)
if ! python3 -c "import jsonschema, rfc3339_validator, openapi_spec_validator, pika" 2>/dev/null; then
  echo "install-deps: installing ${python_packages[*]} (pip)"
  python3 -m pip install --quiet --disable-pip-version-check "${python_packages[@]}" \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "${python_packages[@]}"
fi
command -v swift >/dev/null || { echo "install-deps: the Swift 6 toolchain is not on PATH (see README)" >&2; exit 1; }
