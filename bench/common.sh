# shellcheck shell=bash disable=SC2034  # BIN and PC are read by the sourcing script
# Helpers every bench script that runs the shipped binaries shares (bench/chaos, bench/e2e).
# Sourced from the repository root after option parsing; uses NAME (the script's name for
# messages) and BUILD (0 with --no-build).

free_port() { python3 scripts/free-port.py; }  # run from the repository's root

# The release binaries, each built under /tmp/pc-cpu.lock unless --no-build: sets BIN and PC.
release_binaries() {
  if ((BUILD)); then
    echo "== building release binaries (waits for /tmp/pc-cpu.lock)"
    flock /tmp/pc-cpu.lock swift build -c release --product push-connector 2>&1 | tail -3
    flock /tmp/pc-cpu.lock swift build -c release --product fcm-emulator 2>&1 | tail -3
  fi
  BIN=$(swift build -c release --show-bin-path)
  PC=$BIN/push-connector
  if [ ! -x "$PC" ] || [ ! -x "$BIN/fcm-emulator" ]; then echo "$NAME: release binaries missing in $BIN (drop --no-build)" >&2; exit 1; fi
}
