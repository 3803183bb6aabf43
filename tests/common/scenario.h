/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scenario: building blocks of end-to-end tests, on the services of
 * with-services: the gateway simulator and chargeonce as real child
 * processes, intents produced to a real broker, ground truth read from the
 * simulator, the database and the group's committed offsets.
 */
#ifndef CO_SCENARIO_H
#define CO_SCENARIO_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SC_CHECK(cond, ...)                                                    \
        do {                                                                   \
                if (!(cond)) {                                                 \
                        fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);   \
                        fprintf(stderr, __VA_ARGS__);                          \
                        fprintf(stderr, "\n");                                 \
                        sc_fail_dump();                                        \
                        exit(1);                                               \
                }                                                              \
        } while (0)

/* Everything one test owns: its database, topics, group, temp folder. */
struct scenario {
        char name[64];
        char dir[256];     /* temp folder (logs) */
        char secrets[256]; /* temp folder of secret files, outside the
                              log root the log scan reads; "" = none */
        char db[128];
        char conninfo[1024];
        char t_intents[128], t_results[128], t_dlq[128];
        char group[128];
        PGconn *pg;
        rd_kafka_t *producer;
        int partitions;
};

/* Makes db (migrated), topics (intents with `partitions`), a producer. */
void sc_init(struct scenario *sc, const char *name, int partitions);
/* Drops what sc_init made (on success; kept on failure for the dump). */
void sc_cleanup(struct scenario *sc);
/* On failure: prints the logs of every child started by this test. */
void sc_fail_dump(void);

/* ---- the simulator ---- */
struct sim {
        pid_t pid;
        int port;
        char url[64];
        char log[300];
};
/* Starts chargeonce-gatewaysim with extra options ("--p-slow 0.1 ...");
 * with "--tls-cert F --tls-key K" it serves HTTPS and url is https://. */
void sim_start(struct scenario *sc, struct sim *s, const char *opts);
void sim_stop(struct sim *s);
/* POST /_sim/config with a JSON object. */
void sim_config(const struct sim *s, const char *json);
void sim_reset(const struct sim *s);
/* GET /_sim/stats (owned by the caller, json_decref). */
json_t *sim_stats(const struct sim *s);
/* GET url until it answers 200 (up to 20 s, e.g. a process's /metrics
 * while it starts): the body (malloc'd). */
char *sc_scrape(const char *url);
/* A TCP port free now on 127.0.0.1 (the kernel's pick). Another process
 * may take it before the one it is meant for binds it: a chargeonce's own
 * HTTP port is co_http_port(). */
int sc_free_port(void);
/* field: a top-level name or "group.name" (e.g. "webhooks.delivered"). */
long sim_stat(json_t *stats, const char *field);
/* Successful charges recorded for (tenant, order) / for a reference. */
long sim_charges_order(json_t *stats, const char *tenant, const char *order);
long sim_charges_reference(json_t *stats, const char *reference);

/* ---- chargeonce ---- */
struct co {
        pid_t pid;
        char log[300];
};
/*
 * Starts `chargeonce <command>` with the scenario's database, topics and
 * group, the simulator's URL, and extra "-X key=value" settings
 * (NULL-terminated list). env: extra "NAME=value" for the child (or NULL).
 */
void co_start(struct scenario *sc, struct co *c, const char *command,
              const struct sim *s, const char *const *xs,
              const char *const *env);

/* Writes value into a file (mode 0600) named name in sc->secrets,
 * and its path into path: a secret for a `<key>_file` key (production
 * mode refuses secrets on the command line). */
void sc_secret_file(struct scenario *sc, const char *name, const char *value,
                    char *path, size_t pathsz);
/* Sends sig and waits up to timeout_ms. Returns the exit status, 128+sig
 * if killed by a signal, or -1 if it did not end (then it is killed). */
int co_stop(struct co *c, int sig, int timeout_ms);
/* Waits for the child to end by itself. Same return values. */
int co_wait(struct co *c, int timeout_ms);
bool co_alive(struct co *c);
/* Whether the child's log has a line containing needle, now. */
bool co_log_has(struct co *c, const char *needle);
/*
 * The port of the child's HTTP server, from its own log line "http:
 * listening on 127.0.0.1:PORT" (co_start's http.listen=127.0.0.1:0), up
 * to 20 s. A probe of a port picked free beforehand could reach another
 * test's process that took it first.
 */
int co_http_port(struct co *c);

/* ---- intents ---- */
struct intent_spec {
        const char *event_id; /* NULL: a new uuid */
        const char *tenant;
        const char *key;
        const char *order;
        long long amount;
        const char *currency;
        const char *method; /* payment_method */
};
/* The intent JSON (malloc'd); *event_id_out gets the event id if given. */
char *sc_intent_json(const struct intent_spec *is, char *event_id_out);
/* Produces value with key to partition (-1: by key). */
void sc_produce(struct scenario *sc, int partition, const char *key,
                const char *value, size_t len);
void sc_produce_intent(struct scenario *sc, int partition,
                       const struct intent_spec *is, char *event_id_out);
void sc_flush(struct scenario *sc);

/* ---- waiting and truth ---- */
/* SQL conditions on an outbox row (unaliased): published or not (0027:
 * through relay_cursor; published_at only on rows published before). A
 * parked row is not published. */
#define SC_PUBLISHED   " co_outbox_published(id, parked_at, published_at)"
#define SC_UNPUBLISHED " NOT" SC_PUBLISHED
/* An outbox row's result text to look for a member of the value in
 * (LIKE): the message, or a compact row's detail (0028), which holds the
 * members its columns do not (order_id, amount, currency,
 * provider_charge_id, error, occurred_at); ask the columns for the rest. */
#define SC_RESULT_TEXT " coalesce(payload, detail)"

/* Waits until the group's committed offsets reach the end of every
 * partition of the intents topic. Returns true in time. */
bool sc_wait_consumed(struct scenario *sc, int timeout_ms);
/* Waits until everything is consumed, no payment is processing and every
 * result is published; fails the test with the counts otherwise. */
void sc_wait_finished(struct scenario *sc, int timeout_ms);
/* Waits until sql (one boolean) is true. */
bool sc_wait_sql(struct scenario *sc, const char *sql, int timeout_ms);
/* First value of a one-row query (static buffer), or NULL. */
const char *sc_sql(struct scenario *sc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
long sc_sql_long(struct scenario *sc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Fails the test with the rows if invariant_violations is not empty. */
void sc_check_invariants(struct scenario *sc);
/* The n distinct intents of a run each consumed, final, paid once and
 * answered by exactly one non-replayed result; no invariant broken. */
void sc_check_all_once(struct scenario *sc, struct sim *s, int n);
/* Messages in a topic (all partitions), read from the beginning until
 * idle_ms without news. Caller frees with sc_messages_free. */
struct sc_msg {
        char *key, *value;
        int32_t partition;
        int64_t offset;
        char *headers; /* "name=value\n"... */
};
size_t sc_read_topic(struct scenario *sc, const char *topic, int idle_ms,
                     struct sc_msg **out);
void sc_messages_free(struct sc_msg *m, size_t n);
/* The value of header name in a message's headers ("name=value\n"...)
 * into out; false when it has none. */
bool sc_header(const char *headers, const char *name, char *out, size_t outsz);

#endif
