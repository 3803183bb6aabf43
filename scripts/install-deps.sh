#!/usr/bin/env bash
# Brings a fresh Debian 12 machine to "can build, test and run the demo".
# Idempotent: packages already present are not touched, and the second run
# does nothing. Quiet on success; on failure prints apt's output and exits 1.
set -euo pipefail

PKGS=(
	build-essential cmake pkg-config git ca-certificates curl
	librdkafka-dev libpq-dev libjansson-dev libssl-dev
	libcurl4-openssl-dev libmicrohttpd-dev libgnutls28-dev libcmocka-dev
	kcat postgresql postgresql-contrib
	openjdk-17-jre-headless maven
	clang-format valgrind python3 python3-jsonschema gnuplot-nox
	python3-prometheus-client python3-yaml
	python3-confluent-kafka python3-psycopg2
	openssl systemd
	clang-14 libclang-rt-14-dev
	# tests/netfault: network namespaces and their iptables rules
	iproute2 iptables
	# model/check.sh: the protocol's model checker
	spin
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || {
		echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
		exit 1
	}
	sudo="sudo"
fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -q && \
	$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
	>"$log" 2>&1; then
	cat "$log" >&2
	echo "install-deps: FAILED installing: ${missing[*]}" >&2
	exit 1
fi
# Quiet on success. Debian's postgresql package starts a cluster on 5432;
# our tests run their own private clusters and leave that one alone.
