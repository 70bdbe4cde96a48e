#!/bin/sh
# Compose init service (deploy/Dockerfile target "devtools"): provisions, once, what the local
# stack needs in the shared secrets volume (SECRETS_DIR, default /secrets):
#   ca.pem, server.pem, server-key.pem  the emulator's TLS certificate for the name fcm-emulator
#   shop-sa.json                         a throwaway service account whose token_uri is the
#                                        emulator's own /token (the emulator trusts it)
# Idempotent: an existing file is kept. deploy/check.sh runs it on the host too.
set -eu
dir="${SECRETS_DIR:-/secrets}"
emulator="${EMULATOR_URL:-https://fcm-emulator:8443}"
tools="${TOOLS_DIR:-/usr/local/share/push-connector}"
mkdir -p "$dir"
if [ ! -f "$dir/server.pem" ]; then
  DEV_CERT_DNS=fcm-emulator sh "$tools/make-dev-cert.sh" "$dir"
fi
if [ ! -f "$dir/shop-sa.json" ]; then
  fcm-emulator make-service-account --project shop-prod --token-uri "$emulator/token" --out "$dir/shop-sa.json"
fi
# The worker (uid 10001) and the emulator read these; the CA key is not needed any more.
rm -f "$dir/ca-key.pem"
chmod 0644 "$dir"/*.pem "$dir/shop-sa.json"
echo "init: $dir ready (emulator $emulator)"
