#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Brings a fresh Debian 12 machine to "can build, test and run the demo".
# Idempotent: packages already present are not touched, and the second run
# does nothing. Quiet on success; on failure prints apt's output and exits 1.
#
# Two parts: Debian packages (apt), then the pinned Python tools of
# scripts/requirements-tools.txt (kubernetes-validate) in a virtual
# environment of their own: /opt/chargeonce-tools/venv as root, else
# ~/.local/share/chargeonce-tools/venv; made again only when the pins
# changed.
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
	# tests/deploy: promtool (checks and tests the alert rules), and venv
	# for the pinned Python tools below
	prometheus python3-venv
)

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
sudo=""
log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null || {
			echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
			exit 1
		}
		sudo="sudo"
	fi
	if ! { $sudo apt-get update -q && \
		$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
		>"$log" 2>&1; then
		cat "$log" >&2
		echo "install-deps: FAILED installing: ${missing[*]}" >&2
		exit 1
	fi
	# Debian's postgresql package starts a cluster on 5432; our tests run
	# their own private clusters and leave that one alone.
fi

# The pinned Python tools: a venv whose pip freeze equals the pins is left
# as it is; any other is made again.
req=$(cd "$(dirname "$0")" && pwd)/requirements-tools.txt
if [ "$(id -u)" = 0 ]; then
	venv=/opt/chargeonce-tools/venv
else
	venv=$HOME/.local/share/chargeonce-tools/venv
fi
want=$(grep -v '^#' "$req" | sed '/^$/d' | tr 'A-Z_' 'a-z-' | sort)
have=$("$venv/bin/pip" freeze 2>/dev/null | tr 'A-Z_' 'a-z-' | sort || true)
if [ "$want" != "$have" ]; then
	rm -rf "$venv"
	mkdir -p "$(dirname "$venv")"
	if ! { /usr/bin/python3 -m venv "$venv" &&
		"$venv/bin/pip" install -q --disable-pip-version-check \
			--no-deps -r "$req"; } >"$log" 2>&1; then
		cat "$log" >&2
		echo "install-deps: FAILED installing $req into $venv" >&2
		exit 1
	fi
fi
# Quiet on success.
