#!/usr/bin/env bash
# Checks the deployment files on this host (containers cannot run here). Exit status 1 when any
# check fails. Run by scripts/test.sh; deploy/README.md says what this does and does not prove.
#   1. every YAML file parses (yamllint, relaxed rules) and every JSON file parses;
#   2. deploy/Dockerfile copies every folder a target of Package.swift lives in;
#   3. every push-connector command line of docker-compose.yml, deploy/k8s and deploy/systemd
#      passes `push-connector ... --check` (deploy/check_commands.py builds the files it names);
#   4. the alert rules pass `promtool check rules` and their unit tests `promtool test rules`;
#   5. the cross-file rules hold (deploy/check_coherence.py: codes and metrics the source
#      writes, alerts for what must be heard, one vhost, KEDA capped, runbook URLs);
#   6. every shell script passes shellcheck.
# Usage: deploy/check.sh [BIN_DIR]   (default: the debug build, `swift build --show-bin-path`)
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-$(swift build --show-bin-path)}"
if [ ! -x "$bin/push-connector" ] || [ ! -x "$bin/fcm-emulator" ]; then
  echo "check: build first ($bin has no push-connector or fcm-emulator)" >&2
  exit 1
fi
status=0
step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; status=1; }

step "YAML and JSON parse"
yaml_files=(docker-compose.yml deploy/k8s/*.yaml deploy/prometheus/*.yml)
yamllint -d '{extends: relaxed, rules: {line-length: {max: 160}}}' "${yaml_files[@]}" || fail "yamllint"
for f in deploy/grafana/*.json deploy/compose/*.json deploy/systemd/*.json deploy/rabbitmq-definitions.json; do
  python3 -m json.tool "$f" >/dev/null || fail "$f is not JSON"
done

step "Dockerfile copies every target folder of Package.swift"
python3 - <<'PY' || fail "Dockerfile"
import re, sys
manifest = open("Package.swift").read()
folders = []
for kind, body in re.findall(r'\.(target|executableTarget|testTarget|systemLibrary)\((.*?)\)(?:,|\n)', manifest, re.S):
    name = re.search(r'name:\s*"([^"]+)"', body).group(1)
    path = re.search(r'path:\s*"([^"]+)"', body)
    folders.append(path.group(1) if path else ("Tests/" if kind == "testTarget" else "Sources/") + name)
copied = [m.rstrip("/") for m in re.findall(r'^COPY\s+(?!--)(\S+)\s', open("deploy/Dockerfile").read(), re.M)]
missing = [f for f in folders if not any(f == c or f.startswith(c + "/") for c in copied)]
print(f"{len(folders)} target folders, copied by: {', '.join(copied)}")
if missing:
    print("not copied: " + ", ".join(missing), file=sys.stderr)
    sys.exit(1)
PY

step "every command line passes --check"
root=$(mktemp -d /tmp/pc-deploy-check.XXXXXX)
trap 'rm -rf "$root"' EXIT
python3 deploy/check_commands.py "$bin" "$root" || fail "command lines"

step "alert rules"
promtool check rules deploy/prometheus/alerts.yml || fail "promtool check rules"
promtool test rules deploy/prometheus/alerts.test.yml || fail "promtool test rules"

step "cross-file rules (codes, metrics, alerts, vhost, KEDA, runbooks)"
python3 deploy/check_coherence.py || fail "cross-file rules"

step "shellcheck"
mapfile -t scripts < <(git ls-files '*.sh' .ci/run; ls deploy/*.sh deploy/compose/*.sh 2>/dev/null)
shellcheck -x "${scripts[@]}" || fail "shellcheck"

[ "$status" = 0 ] && echo "deploy checks: all passed" || echo "deploy checks: FAILED" >&2
exit "$status"
