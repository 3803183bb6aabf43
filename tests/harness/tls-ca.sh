#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tls-ca.sh DIR: a private test PKI for the TLS tests (tests/tls), made
# fresh in DIR with openssl, EC P-256 keys, no prompt:
#
#   DIR/ca.crt                  CA A, the one the clients trust
#   DIR/right.crt, right.key    server certificate for 127.0.0.1 and
#                               localhost (SAN IP:127.0.0.1, DNS:localhost),
#                               signed by A
#   DIR/wrong.crt, wrong.key    signed by A, but for wrong.example only
#   DIR/unknown.crt, unknown.key  for 127.0.0.1 and localhost, signed by
#                               CA B, which no client trusts
#   DIR/<set>.pem               key and certificate in one file (Kafka's
#                               PEM keystore)
#
# Every certificate is valid for 30 days from now. The keys are test keys
# of a throw-away folder: never use them anywhere else.
set -euo pipefail
dir=${1:?usage: tls-ca.sh DIR}
mkdir -p "$dir"
cd "$dir"

key() { # key NAME: a PKCS#8 EC P-256 key (Kafka's PEM loader wants PKCS#8)
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
		-out "$1.key" 2>/dev/null
	chmod 600 "$1.key"
}

ca() { # ca NAME CN: a self-signed CA
	key "$1"
	openssl req -x509 -new -key "$1.key" -subj "/CN=$2" -days 30 \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$1.crt" 2>/dev/null
}

leaf() { # leaf NAME CA SAN: a server certificate signed by CA
	key "$1"
	openssl req -new -key "$1.key" -subj "/CN=chargeonce test $1" \
		-out "$1.csr" 2>/dev/null
	printf '%s\n' "subjectAltName=$3" \
		"basicConstraints=critical,CA:FALSE" \
		"keyUsage=critical,digitalSignature" \
		"extendedKeyUsage=serverAuth" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" \
		-CAcreateserial -days 30 -extfile "$1.ext" -out "$1.crt" \
		2>/dev/null
	cat "$1.key" "$1.crt" >"$1.pem"
	chmod 600 "$1.pem"
	rm -f "$1.csr" "$1.ext"
}

ca ca "chargeonce test CA A"
ca other-ca "chargeonce test CA B (untrusted)"
leaf right ca "IP:127.0.0.1,DNS:localhost"
leaf wrong ca "DNS:wrong.example"
leaf unknown other-ca "IP:127.0.0.1,DNS:localhost"
# CA B's key is not needed any more; CA A's stays for a by-hand check
rm -f other-ca.key ./*.srl
openssl verify -CAfile ca.crt right.crt wrong.crt >/dev/null
