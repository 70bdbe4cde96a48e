#!/bin/sh
# Makes a throwaway development CA and a server certificate for 127.0.0.1 / localhost / ::1,
# for running fcm-emulator over TLS (HTTP/2 via ALPN).
#   usage: scripts/make-dev-cert.sh [OUTDIR]      (default: ./dev-certs)
# DEV_CERT_DNS=name adds a DNS name (compose: fcm-emulator). DEV_CERT_SAN=... replaces the whole
# subjectAltName (e.g. DNS:wrong.example, for a certificate that does not name the server).
# Writes OUTDIR/ca.pem (trust this in clients), OUTDIR/server.pem (chain), OUTDIR/server-key.pem.
# Keys are for local testing only; never use them anywhere else.
set -eu
out="${1:-dev-certs}"
mkdir -p "$out"
umask 077
openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 825 \
  -subj "/CN=fcm-emulator dev CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -keyout "$out/ca-key.pem" -out "$out/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -sha256 -subj "/CN=localhost" \
  -keyout "$out/server-key.pem" -out "$out/server.csr" 2>/dev/null
cat > "$out/server.ext" <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=${DEV_CERT_SAN:-IP:127.0.0.1,IP:::1,DNS:localhost${DEV_CERT_DNS:+,DNS:$DEV_CERT_DNS}}
EXT
openssl x509 -req -in "$out/server.csr" -CA "$out/ca.pem" -CAkey "$out/ca-key.pem" -CAcreateserial \
  -days 825 -sha256 -extfile "$out/server.ext" -out "$out/server-cert.pem" 2>/dev/null
cat "$out/server-cert.pem" "$out/ca.pem" > "$out/server.pem"
rm -f "$out/server.csr" "$out/server.ext" "$out/ca.srl"
chmod 644 "$out/ca.pem" "$out/server.pem" "$out/server-cert.pem"
echo "CA: $out/ca.pem  certificate: $out/server.pem  key: $out/server-key.pem"
