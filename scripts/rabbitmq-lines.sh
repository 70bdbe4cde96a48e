#!/bin/sh
# The RabbitMQ release lines the tests run on. `system` is the host's rabbitmq-server (Debian 12:
# 3.10); the others are Debian's own packages of newer releases, installed into a Debian root made
# with debootstrap and run under chroot by scripts/test-broker.sh (PUSH_TEST_RABBITMQ_LINE).
#
#   scripts/rabbitmq-lines.sh make [LINE...]   makes the roots that are missing (default: all);
#                                              once per machine, reused after (a cache folder)
#   scripts/rabbitmq-lines.sh root LINE        prints the line's root ("" for system)
#   scripts/rabbitmq-lines.sh version LINE     prints the line's rabbitmq-server package version
#   scripts/rabbitmq-lines.sh epmd LINE        prints the epmd port its nodes use
#
# LINE: system | 4.0 (Debian 13 "trixie": 4.0.x) | newest (Debian unstable "sid": 4.3.x today)
# Roots live in $PUSH_RABBITMQ_ROOTS (default /var/cache/push-connector/rabbitmq). Making one
# takes ~40 s and ~300 MB; needs root and Debian's mirror (the same archive as apt here).
# Each line has its own epmd port (ERL_EPMD_PORT), so two Erlang releases never share an epmd.
set -eu
base=${PUSH_RABBITMQ_ROOTS:-/var/cache/push-connector/rabbitmq}
mirror=${PUSH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cmd=${1:-}
[ $# -gt 0 ] && shift

suite() {
    case "$1" in
        4.0) echo trixie ;;
        newest) echo sid ;;
        system) echo "" ;;
        *) echo "rabbitmq-lines: unknown line \"$1\" (system, 4.0, newest)" >&2; exit 2 ;;
    esac
}

root() { s=$(suite "$1"); [ -z "$s" ] && echo "" || echo "$base/$s"; }

make_root() {
    s=$(suite "$1")
    [ -n "$s" ] || return 0
    dir="$base/$s"
    [ -f "$dir/.ready" ] && return 0
    command -v debootstrap >/dev/null || {
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
    }
    mkdir -p "$base"
    rm -rf "$dir.tmp"
    echo "rabbitmq-lines: making the $1 root ($s) in $dir" >&2
    started=$(date +%s)
    if ! debootstrap --variant=minbase --include=rabbitmq-server "$s" "$dir.tmp" "$mirror" >"$base/$s.log" 2>&1; then
        echo "rabbitmq-lines: debootstrap $s failed; see $base/$s.log" >&2
        tail -5 "$base/$s.log" >&2
        exit 1
    fi
    # epmd resolves the node's host: without the host's /etc/hosts it fails with nxdomain.
    cp /etc/hosts "$dir.tmp/etc/hosts"
    # The package's post-install may have started a node in the root: stop it.
    chroot "$dir.tmp" sh -c 'pkill -u rabbitmq beam.smp; pkill -u rabbitmq epmd' 2>/dev/null || true
    # shellcheck disable=SC2016 # dpkg-query's own ${Version}
    chroot "$dir.tmp" dpkg-query -W -f='${Version}\n' rabbitmq-server > "$dir.tmp/.ready"
    mv "$dir.tmp" "$dir"
    echo "rabbitmq-lines: $1 root ready: rabbitmq-server $(cat "$dir/.ready") in $(( $(date +%s) - started )) s" >&2
}

case "$cmd" in
make)
    [ $# -gt 0 ] || set -- 4.0 newest
    for line in "$@"; do make_root "$line"; done ;;
root) root "$1" ;;
version)
    r=$(root "$1")
    # shellcheck disable=SC2016 # dpkg-query's own ${Version}
    if [ -z "$r" ]; then dpkg-query -W -f='${Version}\n' rabbitmq-server
    else cat "$r/.ready" 2>/dev/null || { echo "rabbitmq-lines: no $1 root (run: $0 make $1)" >&2; exit 1; }; fi ;;
epmd)
    case "$1" in system) echo 4369 ;; 4.0) echo 4371 ;; newest) echo 4372 ;; *) suite "$1" >/dev/null ;; esac ;;
*) echo "usage: $0 make [LINE...] | root LINE | version LINE | epmd LINE" >&2; exit 2 ;;
esac
