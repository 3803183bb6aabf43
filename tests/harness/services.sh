#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Starts and stops the real services of chargeonce's tests under one state
# folder DIR (made by tests/harness/with-services):
#
#   services.sh start-pg DIR       private PostgreSQL 15 cluster (initdb)
#   services.sh start-kafka DIR    single-node Apache Kafka 3.9 in KRaft mode
#   services.sh stop-pg|stop-kafka|start-again-pg|start-again-kafka DIR
#   services.sh stop-all DIR
#   services.sh logs DIR           the tail of each service's log
#   services.sh kafka-started DIR N  0 when the broker's log says it
#                                  started after its line N
#   services.sh start-tls DIR      the TLS services of tests/tls under
#                                  DIR/tls (see start_tls below); a second
#                                  call while they run does nothing
#   services.sh stop-tls DIR       (stop-all stops them too)
#
# Network namespaces (tests/netfault): with CHARGEONCE_SVC_ADDR=10.213.N.1
# (the host side of a namespace's veth pair; nothing else is accepted),
# start-pg also listens there (pg_hba lets 10.213.N.0/30 in) and start-kafka
# adds a second listener NETNS://10.213.N.1:PORT2, advertised as such, so a
# client that bootstraps on it is told to come back on it. pg.env and
# kafka.env then export CHARGEONCE_TEST_PG_NS and CHARGEONCE_TEST_KAFKA_NS.
#
# A streaming standby of DIR's PostgreSQL (failover tests):
#   services.sh start-standby DIR  pg_basebackup -R -X stream into
#                                  DIR/standby, started on its own port;
#                                  writes DIR/standby.env
#   services.sh sync-standby DIR on|off
#                                  synchronous_standby_names '*' or '' on
#                                  the primary; waits for sync_state
#   services.sh cut-replication DIR / restore-replication DIR
#                                  the standby's primary_conninfo pointed at
#                                  a port nobody listens on, and back (no
#                                  network rule); waits until its WAL
#                                  receiver has stopped / streams again
#   services.sh crash-primary DIR  pg_ctl -m immediate stop of the primary
#   services.sh promote-standby DIR
#                                  pg_ctl -w promote
#   services.sh start-old-primary DIR
#                                  the crashed primary's data started again
#                                  on a new port (DIR/oldprimary.port), for
#                                  reading what it had; stop-pg stops it
#   services.sh stop-standby DIR   (stop-all stops it too)
#
# Ports are free ones picked at start, so two runs side by side never
# collide. Each start writes DIR/<service>.env with the variables that the
# tests read. The *-again variants restart a stopped service on the same
# port and data (for restart tests).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

as_pg() {
	# initdb and postgres refuse to run as root
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

pg_bin() {
	local b
	for b in /usr/lib/postgresql/15/bin "$(pg_config --bindir 2>/dev/null)"; do
		[ -x "$b/initdb" ] && { echo "$b"; return; }
	done
	dirname "$(command -v initdb)"
}

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
	local secs=$1 what=$2
	shift 2
	local end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if [ $SECONDS -ge $end ]; then
			echo "services: $what not ready after ${secs}s" >&2
			return 1
		fi
		sleep 0.2
	done
}

# The namespace address of CHARGEONCE_SVC_ADDR, checked: only the host side
# of a tests/netfault veth pair (10.213.N.1) is ever listened on. Prints
# nothing without it.
svc_addr() {
	local a=${CHARGEONCE_SVC_ADDR:-}
	[ -n "$a" ] || return 0
	if ! [[ "$a" =~ ^10\.213\.([0-9]{1,3})\.1$ ]] ||
		[ "${BASH_REMATCH[1]}" -gt 255 ]; then
		echo "services: CHARGEONCE_SVC_ADDR=$a: only 10.213.N.1 (a test namespace's veth) is allowed" >&2
		return 1
	fi
	# read whole before grep: under pipefail, grep -q leaving early could
	# fail ip with SIGPIPE once the host has many addresses
	local addrs
	addrs=$(ip -o -4 addr show 2>/dev/null)
	grep -qF " inet $a/" <<<"$addrs" || {
		echo "services: CHARGEONCE_SVC_ADDR=$a is no address of this host (make the namespace first)" >&2
		return 1
	}
	echo "$a"
}

start_pg_server() {
	local dir=$1 port listen=127.0.0.1
	port=$(cat "$dir/pg.port")
	# the namespace address given at start-pg, kept for start-again-pg
	[ -s "$dir/pg.addr" ] && listen="$listen,$(cat "$dir/pg.addr")"
	as_pg "$(pg_bin)/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/postgres.log" \
		-o "-p $port -k $dir/pg -c listen_addresses=$listen" \
		-w -t 60 start >/dev/null
}

start_pg() {
	local dir=$1 port bin addr
	bin=$(pg_bin)
	addr=$(svc_addr) || return 1
	mkdir -p "$dir/pg"
	[ "$(id -u)" = 0 ] && chown postgres: "$dir/pg"
	as_pg "$bin/initdb" -D "$dir/pg/data" -A trust -U postgres -E UTF8 \
		--locale=C.UTF-8 --no-sync >"$dir/pg/initdb.log" 2>&1 || {
		cat "$dir/pg/initdb.log" >&2
		return 1
	}
	cat >>"$dir/pg/data/postgresql.conf" <<CONF
max_connections = 300
shared_buffers = 256MB
synchronous_commit = on
fsync = on
log_min_messages = warning
log_line_prefix = '%m [%p] '
# per-statement counters for bench/capacity.sh (a few per cent of CPU at
# most; production servers usually load it too)
shared_preload_libraries = 'pg_stat_statements'
pg_stat_statements.track = top
CONF
	if [ -n "$addr" ]; then
		# the namespace side of the veth pair (10.213.N.2)
		echo "host all all ${addr%.1}.0/30 trust" \
			>>"$dir/pg/data/pg_hba.conf"
		echo "$addr" >"$dir/pg.addr"
	fi
	port=$(free_port)
	echo "$port" >"$dir/pg.port"
	start_pg_server "$dir"
	cat >"$dir/pg.env" <<ENV
export CHARGEONCE_TEST_PG='host=127.0.0.1 port=$port user=postgres dbname=postgres'
export CHARGEONCE_TEST_PGPORT=$port
export CHARGEONCE_TEST_PG_BIN='$(pg_bin)'
ENV
	[ -z "$addr" ] || cat >>"$dir/pg.env" <<ENV
export CHARGEONCE_TEST_PG_NS='host=$addr port=$port user=postgres dbname=postgres'
ENV
}

stop_pg() {
	local dir=$1
	[ -f "$dir/pg/data/postmaster.pid" ] || return 0
	as_pg "$(pg_bin)/pg_ctl" -D "$dir/pg/data" -m fast -w -t 30 stop \
		>/dev/null 2>&1 || true
}

kafka_running() {
	local dir=$1
	[ -f "$dir/kafka.pid" ] && kill -0 "$(cat "$dir/kafka.pid")" 2>/dev/null
}

# Whether the broker logged "Kafka Server started" after line $2 of its
# log. Not `tail | grep -q`: under pipefail, grep -q leaving early kills
# tail with SIGPIPE once the rest of the log outgrows the pipe (a restart
# late in a long suite logs every group and partition), and the pipeline
# then reads as "not started" for ever.
kafka_started() {
	awk -v n="$2" 'NR > n && /Kafka Server started/ { found = 1; exit }
		END { exit !found }' "$1/kafka/server.log"
}

start_kafka_server() {
	local dir=$1 jars=$2 start_line pid end
	: >>"$dir/kafka/server.log"
	start_line=$(wc -l <"$dir/kafka/server.log")
	# setsid: the broker gets its own process group, so a Ctrl-C aimed at
	# the test run does not kill it before the orderly stop below
	setsid java -Xms256m -Xmx768m -XX:+UseG1GC -Djava.awt.headless=true \
		-Dlog4j.configuration="file:$dir/kafka/log4j.properties" \
		-cp "$jars/*" kafka.Kafka "$dir/kafka/server.properties" \
		>>"$dir/kafka/server.log" 2>&1 </dev/null &
	pid=$!
	echo $pid >"$dir/kafka.pid"
	end=$((SECONDS + 90))
	until kafka_started "$dir" "$start_line"; do
		if ! kafka_running "$dir"; then
			echo "services: the Kafka broker exited during start" >&2
			tail -n 40 "$dir/kafka/server.log" >&2
			return 1
		fi
		if [ $SECONDS -ge $end ]; then
			echo "services: the Kafka broker did not start in 90s;" \
				"its last lines and threads:" >&2
			tail -n 20 "$dir/kafka/server.log" >&2
			kill -QUIT "$pid" 2>/dev/null || true # a thread dump
			sleep 2
			tail -n +"$((start_line + 1))" "$dir/kafka/server.log" |
				grep -A12 -E '^"(main|broker|controller|kafka-)' |
				head -n 150 >&2 || true
			return 1
		fi
		sleep 0.3
	done
}

# kafka_config DIR CONTROLLER_PORT LISTENERS ADVERTISED PROTOCOL_MAP EXTRA:
# DIR/kafka/server.properties (one node, broker and controller, data in
# DIR/kafka/data; EXTRA: more property lines) and its log4j.properties.
kafka_config() {
	local dir=$1 cport=$2 listeners=$3 adv=$4 map=$5 extra=$6
	cat >"$dir/kafka/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=$listeners
advertised.listeners=$adv
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=$map
${extra}log.dirs=$dir/kafka/data
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
min.insync.replicas=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
log.segment.bytes=67108864
PROPS
	cat >"$dir/kafka/log4j.properties" <<'L4J'
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka=INFO
log4j.logger.org.apache.kafka=INFO
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
L4J
}

# kafka_format DIR JARS: formats DIR/kafka/data for a new KRaft cluster.
# A cluster id starting with '-' would be taken for an option by the
# storage tool's argument parser (1 start in 64 failed so): draw again.
kafka_format() {
	local dir=$1 jars=$2 cid
	cid=$(python3 -c 'import base64,uuid
while True:
    c = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    if not c.startswith("-"):
        print(c)
        break')
	java -Xmx256m -Dlog4j.configuration="file:$dir/kafka/log4j.properties" \
		-cp "$jars/*" kafka.tools.StorageTool format -t "$cid" \
		-c "$dir/kafka/server.properties" >"$dir/kafka/format.log" 2>&1 || {
		cat "$dir/kafka/format.log" >&2
		return 1
	}
}

start_kafka() {
	local dir=$1 jars port cport addr nport=
	addr=$(svc_addr) || return 1
	jars=$("$top/scripts/kafka-jars.sh")
	mkdir -p "$dir/kafka/data"
	port=$(free_port)
	cport=$(free_port)
	while [ "$cport" = "$port" ]; do cport=$(free_port); done
	if [ -z "$addr" ]; then
		kafka_config "$dir" "$cport" \
			"PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport" \
			"PLAINTEXT://127.0.0.1:$port" \
			"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT" ""
	else
		# a second listener on the namespace address: clients that
		# bootstrap there get metadata naming it, the loopback clients
		# keep 127.0.0.1
		nport=$(free_port)
		while [ "$nport" = "$port" ] || [ "$nport" = "$cport" ]; do
			nport=$(free_port)
		done
		kafka_config "$dir" "$cport" \
			"PLAINTEXT://127.0.0.1:$port,NETNS://$addr:$nport,CONTROLLER://127.0.0.1:$cport" \
			"PLAINTEXT://127.0.0.1:$port,NETNS://$addr:$nport" \
			"PLAINTEXT:PLAINTEXT,NETNS:PLAINTEXT,CONTROLLER:PLAINTEXT" ""
	fi
	kafka_format "$dir" "$jars" || return 1
	echo "$jars" >"$dir/kafka.jars"
	start_kafka_server "$dir" "$jars"
	cat >"$dir/kafka.env" <<ENV
export CHARGEONCE_TEST_KAFKA=127.0.0.1:$port
export CHARGEONCE_TEST_KAFKA_JARS='$jars'
ENV
	[ -z "$addr" ] || cat >>"$dir/kafka.env" <<ENV
export CHARGEONCE_TEST_KAFKA_NS=$addr:$nport
ENV
}

stop_kafka() {
	local dir=$1 pid i
	kafka_running "$dir" || return 0
	pid=$(cat "$dir/kafka.pid")
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$dir/kafka.pid"
}

# ---- TLS services (tests/tls) ----
# Made on demand by the first TLS test of a run, under DIR/tls, and kept
# for the rest of the run (the sanitizer build's tests reuse them): a test
# PKI (tests/harness/tls-ca.sh), a second PostgreSQL with ssl = on (the
# plain one above is left as it is), and a second Kafka broker with one
# plaintext listener for the tests' own clients and three SSL listeners,
# one per certificate set, so one JVM serves every case:
#   RIGHT    CA A's certificate for 127.0.0.1 and localhost
#   WRONG    CA A's certificate for wrong.example
#   UNKNOWN  CA B's certificate for 127.0.0.1 and localhost
# PostgreSQL serves one certificate at a time: the tests switch it with
# ALTER SYSTEM and pg_reload_conf() (copies of the three sets are in
# DIR/tls/pg/ssl, owned by the server's user). Its pg_hba.conf refuses
# TCP without TLS, so a client that gets in used TLS.
tls_running() {
	local t=$1/tls
	[ -f "$t/tls.env" ] && kafka_running "$t" &&
		[ -f "$t/pg/data/postmaster.pid" ] &&
		kill -0 "$(head -n 1 "$t/pg/data/postmaster.pid")" 2>/dev/null
}

start_pg_tls() { # start_pg_tls T: T is DIR/tls
	local t=$1 set port
	start_pg "$t"
	port=$(cat "$t/pg.port")
	mkdir -p "$t/pg/ssl"
	for set in right wrong unknown; do
		cp "$t/ca/$set.crt" "$t/ca/$set.key" "$t/pg/ssl/"
	done
	chmod 600 "$t/pg/ssl/"*.key
	[ "$(id -u)" = 0 ] && chown -R postgres: "$t/pg/ssl"
	cat >>"$t/pg/data/postgresql.conf" <<CONF
ssl = on
ssl_cert_file = '$t/pg/ssl/right.crt'
ssl_key_file = '$t/pg/ssl/right.key'
CONF
	cat >"$t/pg/data/pg_hba.conf" <<'HBA'
local all all trust
hostssl all all 127.0.0.1/32 trust
hostnossl all all all reject
HBA
	as_pg "$(pg_bin)/pg_ctl" -D "$t/pg/data" reload >/dev/null
	# ready when a verify-full connection gets in with CA A
	wait_for 30 "PostgreSQL with TLS" psql -XAtq -c 'SELECT 1' \
		"host=localhost port=$port user=postgres dbname=postgres sslmode=verify-full sslrootcert=$t/ca/ca.crt"
}

start_kafka_tls() { # start_kafka_tls T: T is DIR/tls
	local t=$1 jars port cport pr pw pu p l listeners adv ssl=
	local -a ports
	jars=$("$top/scripts/kafka-jars.sh")
	mkdir -p "$t/kafka/data"
	ports=()
	while [ ${#ports[@]} -lt 5 ]; do
		p=$(free_port)
		case " ${ports[*]} " in *" $p "*) ;; *) ports+=("$p") ;; esac
	done
	port=${ports[0]} cport=${ports[1]} pr=${ports[2]} pw=${ports[3]}
	pu=${ports[4]}
	adv="PLAINTEXT://127.0.0.1:$port,RIGHT://127.0.0.1:$pr"
	adv="$adv,WRONG://127.0.0.1:$pw,UNKNOWN://127.0.0.1:$pu"
	listeners="$adv,CONTROLLER://127.0.0.1:$cport"
	for l in right wrong unknown; do
		ssl="${ssl}listener.name.$l.ssl.keystore.type=PEM
listener.name.$l.ssl.keystore.location=$t/ca/$l.pem
"
	done
	kafka_config "$t" "$cport" "$listeners" "$adv" \
		"PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,RIGHT:SSL,WRONG:SSL,UNKNOWN:SSL" \
		"$ssl"
	kafka_format "$t" "$jars" || return 1
	start_kafka_server "$t" "$jars"
	cat >"$t/kafka.env" <<ENV
export CHARGEONCE_TEST_TLS_KAFKA=127.0.0.1:$port
export CHARGEONCE_TEST_TLS_KAFKA_RIGHT=127.0.0.1:$pr
export CHARGEONCE_TEST_TLS_KAFKA_WRONG=127.0.0.1:$pw
export CHARGEONCE_TEST_TLS_KAFKA_UNKNOWN=127.0.0.1:$pu
ENV
}

# Under the lock of DIR/tls.lock (flock -o: the servers started here must
# not inherit it).
start_tls_locked() {
	local dir=$1 t=$1/tls pg_pid kafka_pid ok=1
	tls_running "$dir" && return 0
	stop_tls "$dir" # what a failed start left
	rm -rf "$t"
	mkdir -p "$t"
	chmod 755 "$t"
	"$here/tls-ca.sh" "$t/ca"
	chmod 755 "$t/ca"
	start_pg_tls "$t" >"$t/start-pg.out" 2>&1 &
	pg_pid=$!
	start_kafka_tls "$t" >"$t/start-kafka.out" 2>&1 &
	kafka_pid=$!
	wait $pg_pid || { ok=0; cat "$t/start-pg.out" >&2; }
	wait $kafka_pid || { ok=0; cat "$t/start-kafka.out" >&2; }
	[ $ok = 1 ] || return 1
	cat "$t/kafka.env" - >"$t/tls.env.tmp" <<ENV
export CHARGEONCE_TEST_TLS_CA=$t/ca/ca.crt
export CHARGEONCE_TEST_TLS_CERTS=$t/ca
export CHARGEONCE_TEST_TLS_PG='host=$t/pg port=$(cat "$t/pg.port") user=postgres dbname=postgres'
export CHARGEONCE_TEST_TLS_PGPORT=$(cat "$t/pg.port")
export CHARGEONCE_TEST_TLS_PG_SSL=$t/pg/ssl
ENV
	mv "$t/tls.env.tmp" "$t/tls.env"
}

start_tls() {
	flock -o "$1/tls.lock" "$here/services.sh" start-tls-locked "$1"
}

stop_tls() {
	local t=$1/tls
	[ -d "$t" ] || return 0
	stop_kafka "$t" &
	stop_pg "$t"
	wait
}

# ---- a streaming standby (failover tests) ----
# DIR/standby: a pg_basebackup of DIR's primary (-R: standby.signal and
# primary_conninfo), on its own port. Replication is cut without any
# network rule: the standby's primary_conninfo is pointed at a port nobody
# listens on (the original is kept in DIR/standby.conninfo) and reloaded,
# which stops its WAL receiver.
psql_at() { # psql_at PORT SQL: one value, no decoration
	psql -XAtq "host=127.0.0.1 port=$1 user=postgres dbname=postgres" \
		-c "$2"
}

sql_is() { # sql_is PORT SQL WANT: the query's value is WANT
	[ "$(psql_at "$1" "$2" 2>/dev/null)" = "$3" ]
}

start_standby_server() {
	local dir=$1 port
	port=$(cat "$dir/standby.port")
	as_pg "$(pg_bin)/pg_ctl" -D "$dir/standby/data" \
		-l "$dir/standby/postgres.log" \
		-o "-p $port -k $dir/standby -c listen_addresses=127.0.0.1" \
		-w -t 60 start >/dev/null
}

start_standby() {
	local dir=$1 pport port
	pport=$(cat "$dir/pg.port")
	rm -rf "$dir/standby"
	mkdir -p "$dir/standby"
	[ "$(id -u)" = 0 ] && chown postgres: "$dir/standby"
	as_pg "$(pg_bin)/pg_basebackup" -D "$dir/standby/data" -R -X stream \
		-h 127.0.0.1 -p "$pport" -U postgres --no-sync \
		>"$dir/standby/basebackup.log" 2>&1 || {
		cat "$dir/standby/basebackup.log" >&2
		return 1
	}
	port=$(free_port)
	while [ "$port" = "$pport" ]; do port=$(free_port); done
	echo "$port" >"$dir/standby.port"
	start_standby_server "$dir"
	wait_for 30 "the standby streaming" sql_is "$pport" \
		"SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 1
	cat >"$dir/standby.env" <<ENV
export CHARGEONCE_TEST_STANDBY_PG='host=127.0.0.1 port=$port user=postgres dbname=postgres'
export CHARGEONCE_TEST_STANDBY_PGPORT=$port
ENV
}

sync_standby() {
	local dir=$1 mode=$2 pport names want
	pport=$(cat "$dir/pg.port")
	case $mode in
	on) names='*' want=1 ;; # a standby says sync
	off) names='' want=0 ;; # none does (also with none connected)
	*)
		echo "services: sync-standby DIR on|off" >&2
		return 2
		;;
	esac
	psql_at "$pport" "ALTER SYSTEM SET synchronous_standby_names = '$names'" >/dev/null
	psql_at "$pport" "SELECT pg_reload_conf()" >/dev/null
	wait_for 30 "sync_state $mode" sql_is "$pport" \
		"SELECT least(count(*), 1) FROM pg_stat_replication WHERE sync_state IN ('sync', 'quorum')" "$want"
}

cut_replication() {
	local dir=$1 sport pport
	sport=$(cat "$dir/standby.port")
	pport=$(cat "$dir/pg.port")
	[ -s "$dir/standby.conninfo" ] ||
		psql_at "$sport" "SHOW primary_conninfo" >"$dir/standby.conninfo"
	# port 1: nothing listens there, the receiver's connects are refused
	psql_at "$sport" "ALTER SYSTEM SET primary_conninfo = 'host=127.0.0.1 port=1 user=postgres connect_timeout=2'" >/dev/null
	psql_at "$sport" "SELECT pg_reload_conf()" >/dev/null
	wait_for 30 "the standby's WAL receiver stopped" sql_is "$sport" \
		"SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'" 0
	# the primary may still list the walsender until it notices the end
	if sql_is "$pport" "SELECT 1" 1; then
		wait_for 30 "the primary's walsender gone" sql_is "$pport" \
			"SELECT count(*) FROM pg_stat_replication" 0
	fi
}

restore_replication() {
	local dir=$1 sport pport ci
	sport=$(cat "$dir/standby.port")
	pport=$(cat "$dir/pg.port")
	# the saved value as an SQL literal (pg_basebackup quotes its values)
	ci=$(sed "s/'/''/g" "$dir/standby.conninfo")
	psql_at "$sport" "ALTER SYSTEM SET primary_conninfo = '$ci'" >/dev/null
	psql_at "$sport" "SELECT pg_reload_conf()" >/dev/null
	wait_for 30 "the standby streaming again" sql_is "$sport" \
		"SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'" 1
	wait_for 30 "the primary streaming again" sql_is "$pport" \
		"SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" 1
}

crash_primary() {
	as_pg "$(pg_bin)/pg_ctl" -D "$1/pg/data" -m immediate stop >/dev/null
}

promote_standby() {
	local dir=$1
	as_pg "$(pg_bin)/pg_ctl" -D "$dir/standby/data" -w -t 60 promote >/dev/null
	wait_for 30 "the promoted standby read-write" sql_is \
		"$(cat "$dir/standby.port")" "SELECT pg_is_in_recovery()" f
}

# The crashed primary's data again, on a new port nobody else was told
# about (chargeonce's conninfo names the old one), to read what it had.
start_old_primary() {
	local dir=$1 port
	port=$(free_port)
	echo "$port" >"$dir/oldprimary.port"
	as_pg "$(pg_bin)/pg_ctl" -D "$dir/pg/data" -l "$dir/pg/oldprimary.log" \
		-o "-p $port -k $dir/pg -c listen_addresses=127.0.0.1" \
		-w -t 60 start >/dev/null
}

stop_standby() {
	local dir=$1
	[ -f "$dir/standby/data/postmaster.pid" ] || return 0
	as_pg "$(pg_bin)/pg_ctl" -D "$dir/standby/data" -m fast -w -t 30 stop \
		>/dev/null 2>&1 || true
}

show_logs() {
	local dir=$1 f
	for f in "$dir/pg/postgres.log" "$dir/kafka/server.log" "$dir"/*.log \
		"$dir/standby/postgres.log" \
		"$dir/tls/pg/postgres.log" "$dir/tls/kafka/server.log"; do
		[ -s "$f" ] || continue
		echo "----- last lines of ${f#"$dir"/} -----"
		tail -n 60 "$f"
	done
}

cmd=${1:-}
dir=${2:-${CHARGEONCE_TEST_DIR:-}}
[ -n "$cmd" ] && [ -n "$dir" ] || {
	echo "usage: services.sh start-pg|start-kafka|stop-pg|stop-kafka|start-again-pg|start-again-kafka|start-tls|stop-tls|start-standby|sync-standby|cut-replication|restore-replication|crash-primary|promote-standby|start-old-primary|stop-standby|stop-all|logs DIR" >&2
	exit 2
}
case $cmd in
start-pg) start_pg "$dir" ;;
start-kafka) start_kafka "$dir" ;;
stop-pg) stop_pg "$dir" ;;
stop-kafka) stop_kafka "$dir" ;;
start-again-pg) start_pg_server "$dir" ;;
start-again-kafka) start_kafka_server "$dir" "$(cat "$dir/kafka.jars")" ;;
stop-all)
	stop_kafka "$dir" &
	stop_pg "$dir"
	stop_standby "$dir"
	stop_tls "$dir"
	wait
	;;
start-standby) start_standby "$dir" ;;
sync-standby) sync_standby "$dir" "${3:-}" ;;
cut-replication) cut_replication "$dir" ;;
restore-replication) restore_replication "$dir" ;;
crash-primary) crash_primary "$dir" ;;
promote-standby) promote_standby "$dir" ;;
start-old-primary) start_old_primary "$dir" ;;
stop-standby) stop_standby "$dir" ;;
start-tls) start_tls "$dir" ;;
start-tls-locked) start_tls_locked "$dir" ;;
stop-tls) stop_tls "$dir" ;;
logs) show_logs "$dir" ;;
kafka-started) kafka_started "$dir" "${3:-0}" ;; # for tests/harness/check
*)
	echo "services.sh: unknown command $cmd" >&2
	exit 2
	;;
esac
