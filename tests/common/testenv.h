/* SPDX-License-Identifier: Apache-2.0 */
/*
 * testenv: what integration tests share. The services come from
 * tests/harness/with-services through CHARGEONCE_TEST_* variables; every
 * test makes its own database and topics with unique names, so tests run
 * side by side on one PostgreSQL and one broker.
 */
#ifndef CO_TESTENV_H
#define CO_TESTENV_H

#include <librdkafka/rdkafka.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Exit status that ctest reports as "skipped" (SKIP_RETURN_CODE). */
#define TESTENV_SKIP 77

/* True if the harness's services are there; otherwise prints why the test
 * is skipped. Call first; return TESTENV_SKIP when it says false. */
bool testenv_have_services(void);

const char *testenv_pg(void);    /* CHARGEONCE_TEST_PG */
const char *testenv_kafka(void); /* CHARGEONCE_TEST_KAFKA */

/* A unique name "<prefix>_<pid>_<random hex>" (lower case, [a-z0-9_]). */
void testenv_unique(const char *prefix, char *out, size_t outsz);

/*
 * Creates a fresh database (name from testenv_unique) and writes a conninfo
 * for it into out. Returns 0 or -1 (message on stderr).
 */
int testenv_db_create(const char *prefix, char *dbname, size_t dbname_size,
                      char *conninfo, size_t conninfo_size)
    __attribute__((warn_unused_result));
void testenv_db_drop(const char *dbname);

/* Runs `chargeonce migrate` (CHARGEONCE_BIN) against conninfo. */
int testenv_migrate(const char *conninfo) __attribute__((warn_unused_result));

/* Creates a topic with the Admin API and waits until its metadata shows
 * every partition with a leader. */
int testenv_topic_create(const char *topic, int partitions)
    __attribute__((warn_unused_result));

/* A producer/consumer configuration bootstrapped to the test broker. */
rd_kafka_conf_t *testenv_kafka_conf(void);

/* A single-row query's first value, or NULL (static buffer). */
const char *testenv_pg_value(PGconn *conn, const char *sql);

/*
 * A WAL receiver that is no standby: pg_receivewal --synchronous
 * (CHARGEONCE_TEST_PG_BIN), as a WAL archiver runs it, streaming from the
 * tests' server into a new folder of its own under TMPDIR (outside the log
 * root: the WAL holds every test's rows), written into dir. It reports a
 * flush position and no replay position; nothing can be promoted from
 * it. Returns once it has flushed the WAL written before it started
 * (within timeout_ms), with an application_name of its own; dies with the
 * calling process; stopped and its folder removed at exit if still running
 * (a failed check exits). One at a time. Returns its pid, or -1 (message
 * on stderr, nothing left running).
 */
pid_t testenv_wal_receiver_start(char *dir, size_t dir_size, int timeout_ms);

/* Stops it and removes its folder. */
void testenv_wal_receiver_stop(pid_t pid, const char *dir);

#endif
