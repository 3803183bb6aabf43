#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A network namespace of its own for the process under test, and the
# faults of its links (tests/netfault). Everything happens in that
# namespace: its veth pair and its own iptables (`ip netns exec NAME
# iptables ...`); the host's tables are never touched, so nothing but the
# namespace's own packets is ever dropped.
#
#   netns.sh check              root, ip, iptables and namespaces usable
#                               (exit 1 naming what is missing)
#   netns.sh new SEED           a fresh namespace co-nf-N with N picked from
#                               SEED (e.g. the caller's pid) among the free
#                               ones; prints "NAME N"
#   netns.sh up NAME N          ip netns add NAME; veth pair nfhN (host,
#                               10.213.N.1/30) and nfnN (in NAME,
#                               10.213.N.2/30); lo up in NAME
#   netns.sh down NAME          kills what still runs in NAME (only this
#                               test's processes live there), removes the
#                               namespace and the host side of its veth;
#                               idempotent
#   netns.sh fault NAME KIND PORT
#                               the link between NAME and the host's
#                               service on PORT (TCP):
#        blackhole  DROP both ways (no RST, no FIN): in NAME, OUTPUT -d
#                   host --dport PORT and INPUT -s host --sport PORT
#        reset      REJECT --reject-with tcp-reset on both
#        drop-out   DROP NAME -> service only (OUTPUT)
#        drop-in    DROP service -> NAME only (INPUT)
#   netns.sh heal NAME PORT     removes PORT's rules (every kind)
#   netns.sh rules NAME         lists NAME's rules
#
# N is 1..254: the third octet of 10.213.N.0/30. Rules carry the comment
# co-netfault:PORT, which heal removes by.
set -euo pipefail

die() {
	echo "netns.sh: $*" >&2
	exit 1
}

check() {
	[ "$(id -u)" = 0 ] || die "needs root (network namespaces, iptables)"
	command -v ip >/dev/null || die "no ip (Debian package iproute2)"
	command -v iptables >/dev/null ||
		die "no iptables (Debian package iptables; scripts/install-deps.sh)"
	local probe=co-nf-probe-$$
	ip netns add "$probe" 2>/dev/null ||
		die "ip netns add fails: no network namespaces here"
	if ! ip netns exec "$probe" iptables -w -S >/dev/null 2>&1; then
		ip netns del "$probe" 2>/dev/null || true
		die "iptables does not work inside a namespace"
	fi
	ip netns del "$probe"
}

# Whether namespace $1 exists. The lists are read whole before grep: under
# pipefail, grep -q leaving early could fail the writer with SIGPIPE.
exists() {
	local list
	list=$(ip netns list 2>/dev/null | awk '{ print $1 }')
	grep -qxF "$1" <<<"$list"
}

valid_n() {
	[[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le 254 ] ||
		die "N must be 1..254, not $1"
}

up() {
	local name=$1 n=$2
	valid_n "$n"
	ip netns add "$name" || die "namespace $name exists or cannot be made"
	if ! {
		ip link add "nfh$n" type veth peer name "nfn$n" &&
			ip link set "nfn$n" netns "$name" &&
			ip addr add "10.213.$n.1/30" dev "nfh$n" &&
			ip link set "nfh$n" up &&
			ip netns exec "$name" ip addr add "10.213.$n.2/30" dev "nfn$n" &&
			ip netns exec "$name" ip link set "nfn$n" up &&
			ip netns exec "$name" ip link set lo up
	}; then
		down "$name"
		die "could not set up namespace $name (N=$n)"
	fi
}

# The N of a namespace, from its veth's address (empty if none).
n_of() {
	local addrs n
	addrs=$(ip netns exec "$1" ip -o -4 addr show 2>/dev/null) || return 0
	n=$(sed -n 's/.* inet 10\.213\.\([0-9]*\)\.2\/30 .*/\1/p' <<<"$addrs")
	echo "${n%%$'\n'*}"
}

new() {
	local seed=$1 i n addrs
	[[ "$seed" =~ ^[0-9]+$ ]] || die "new: SEED must be a number"
	for ((i = 0; i < 254; i++)); do
		n=$(((seed + i) % 254 + 1))
		# taken by another run: its namespace, or its host address
		exists "co-nf-$n" && continue
		addrs=$(ip -o -4 addr show 2>/dev/null)
		grep -q " inet 10\.213\.$n\." <<<"$addrs" && continue
		ip link show "nfh$n" >/dev/null 2>&1 && continue
		# ip netns add is the claim: of two runs picking the same N at
		# the same moment, one fails here and tries the next
		if (up "co-nf-$n" "$n") 2>/dev/null; then
			echo "co-nf-$n $n"
			return 0
		fi
	done
	die "no free 10.213.N.0/30 for a namespace"
}

down() {
	local name=$1 n pid
	exists "$name" || return 0
	n=$(n_of "$name")
	# only this test's processes were started in the namespace
	for pid in $(ip netns pids "$name" 2>/dev/null); do
		kill -KILL "$pid" 2>/dev/null || true
	done
	ip netns del "$name" 2>/dev/null || true
	# the veth pair goes with the namespace, but only once the kernel
	# frees it: remove the host side now, so that N is free at once
	[ -z "$n" ] || ip link del "nfh$n" 2>/dev/null || true
}

ipt() { # ipt NAME ARGS...: iptables in the namespace (waits for its lock)
	local name=$1
	shift
	ip netns exec "$name" iptables -w "$@"
}

fault() {
	local name=$1 kind=$2 port=$3 n host tag out in
	[[ "$port" =~ ^[0-9]+$ ]] || die "fault: PORT must be a number"
	n=$(n_of "$name")
	[ -n "$n" ] || die "no namespace $name (or it has no veth)"
	host=10.213.$n.1
	tag=(-m comment --comment "co-netfault:$port")
	out=(OUTPUT -p tcp -d "$host" --dport "$port" "${tag[@]}")
	in=(INPUT -p tcp -s "$host" --sport "$port" "${tag[@]}")
	case $kind in
	blackhole)
		ipt "$name" -A "${out[@]}" -j DROP
		ipt "$name" -A "${in[@]}" -j DROP
		;;
	reset)
		ipt "$name" -A "${out[@]}" -j REJECT --reject-with tcp-reset
		ipt "$name" -A "${in[@]}" -j REJECT --reject-with tcp-reset
		;;
	drop-out) ipt "$name" -A "${out[@]}" -j DROP ;;
	drop-in) ipt "$name" -A "${in[@]}" -j DROP ;;
	*) die "fault: KIND is blackhole, reset, drop-out or drop-in, not $kind" ;;
	esac
}

heal() {
	local name=$1 port=$2 chain nums num
	[[ "$port" =~ ^[0-9]+$ ]] || die "heal: PORT must be a number"
	exists "$name" || die "no namespace $name"
	for chain in INPUT OUTPUT; do
		# highest rule number first, so the others keep theirs
		nums=$(ipt "$name" -L "$chain" -n --line-numbers |
			awk -v t="/* co-netfault:$port */" 'index($0, t) { print $1 }' |
			sort -rn)
		for num in $nums; do
			ipt "$name" -D "$chain" "$num"
		done
	done
}

cmd=${1:-}
case $cmd in
check) check ;;
new) [ $# = 2 ] || die "usage: netns.sh new SEED" && new "$2" ;;
up) [ $# = 3 ] || die "usage: netns.sh up NAME N" && up "$2" "$3" ;;
down) [ $# = 2 ] || die "usage: netns.sh down NAME" && down "$2" ;;
fault)
	[ $# = 4 ] || die "usage: netns.sh fault NAME KIND PORT"
	fault "$2" "$3" "$4"
	;;
heal) [ $# = 3 ] || die "usage: netns.sh heal NAME PORT" && heal "$2" "$3" ;;
rules) [ $# = 2 ] || die "usage: netns.sh rules NAME" && ipt "$2" -S ;;
*)
	echo "usage: netns.sh check|new|up|down|fault|heal|rules ..." >&2
	exit 2
	;;
esac
