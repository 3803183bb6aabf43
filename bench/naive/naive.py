#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench/naive/naive.py: the naive consumer that chargeonce is compared with.

What a competent engineer writes in an afternoon with Debian's
python3-confluent-kafka and python3-psycopg2: one message at a time, the
"claim first" order, one commit per step, a synchronous gateway call.

Per intent message:
  1. parse the JSON intent (a bad one is skipped with a log line) and
     compute the contract's canonical SHA-256 request hash;
  2. claim: INSERT the key as 'processing' and COMMIT; on a unique
     violation SELECT the row instead: another hash -> result `conflict`,
     still 'processing' -> no result (the first copy answers), 'done' ->
     the stored result again (`replayed`: true);
  3. POST /v1/charges on one persistent connection, with an Idempotency-Key
     derived from tenant + idempotency key (the same on every retry);
     200/201 succeeded, 402 failed, 409/429/5xx/timeouts retried a few times
     with backoff and the same key, then `review`; other 4xx `review`;
  4. UPDATE the row to 'done' with the result and COMMIT;
  5. produce the result (contract section 3), flush(), then commit the
     message's offset synchronously: at least once, no intent is lost.

A crash between 2 and 4 leaves the key 'processing' for good: the copies
that come later get no result. That is the naive design, kept on purpose.

Tables: bench/naive/schema.sql. Runs until SIGTERM or SIGINT, then closes
the consumer (leaving the group) and exits 0.

usage: naive.py --brokers B --group G --intents T --results R --db CONNINFO
                --gateway URL --api-key KEY
"""
import argparse
import hashlib
import http.client
import json
import logging
import signal
import sys
import time
import urllib.parse
import uuid
from datetime import datetime, timezone

import psycopg2
import psycopg2.errors
from confluent_kafka import Consumer, KafkaException, Producer

log = logging.getLogger("naive")

HASH_FIELDS = ("amount", "currency", "customer_id", "idempotency_key",
               "order_id", "payment_method", "tenant_id")
PAYMENT_NS = uuid.UUID("6d1f0c55-5a0e-4c1b-9a55-0b7e6e1c0001")
ATTEMPTS = 5          # gateway attempts per intent
BACKOFF_S = 0.1       # first retry after 0.1 s, then 0.2, 0.4, 0.8


def now_rfc3339():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def parse_intent(raw):
    """The intent as a dict, or None with the reason (a bad message)."""
    try:
        doc = json.loads(raw)
    except (TypeError, ValueError) as e:
        return None, "not JSON (%s)" % e.__class__.__name__
    if not isinstance(doc, dict):
        return None, "not a JSON object"
    for f in ("event_id", "tenant_id", "idempotency_key", "order_id",
              "customer_id", "currency", "payment_method"):
        if not isinstance(doc.get(f), str) or not doc[f]:
            return None, "field %s missing or not a string" % f
    a = doc.get("amount")
    if not isinstance(a, int) or isinstance(a, bool) or a <= 0:
        return None, "amount missing or not a positive integer"
    return doc, None


def request_hash(doc):
    """SHA-256 of the canonical form (docs/request-hash.md)."""
    fields = {k: doc[k] for k in HASH_FIELDS}
    canon = json.dumps(fields, sort_keys=True, separators=(",", ":"),
                       ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(canon).hexdigest()


class Gateway:
    """POST /v1/charges on one persistent HTTP connection."""

    def __init__(self, url, api_key, timeout=10.0):
        u = urllib.parse.urlsplit(url)
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.https else 80)
        self.path = u.path.rstrip("/") + "/v1/charges"
        self.auth = "Bearer " + api_key
        self.timeout = timeout
        self.conn = None

    def _connect(self):
        cls = http.client.HTTPSConnection if self.https \
            else http.client.HTTPConnection
        self.conn = cls(self.host, self.port, timeout=self.timeout)

    def post(self, body, key):
        """(status, parsed body or None, Retry-After seconds or None);
        status 0 for a transport error or a timeout."""
        if self.conn is None:
            self._connect()
        data = json.dumps(body).encode()
        try:
            self.conn.request("POST", self.path, body=data, headers={
                "Content-Type": "application/json",
                "Authorization": self.auth,
                "Idempotency-Key": key,
            })
            r = self.conn.getresponse()
            raw = r.read()
        except (OSError, http.client.HTTPException) as e:
            log.warning("gateway: %s", e.__class__.__name__)
            self.conn.close()
            self.conn = None
            return 0, None, None
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = None
        ra = r.getheader("Retry-After")
        try:
            ra = float(ra) if ra is not None else None
        except ValueError:
            ra = None
        if r.getheader("Connection", "").lower() == "close":
            self.conn.close()
            self.conn = None
        return r.status, doc, ra


def charge(gw, intent, payment_id, provider_key):
    """(status, provider_charge_id, error) of the gateway's final answer."""
    body = {
        "amount": intent["amount"],
        "currency": intent["currency"],
        "payment_method": intent["payment_method"],
        "reference": payment_id,
        "metadata": {"tenant_id": intent["tenant_id"],
                     "order_id": intent["order_id"]},
    }
    code = 0
    for attempt in range(ATTEMPTS):
        code, doc, retry_after = gw.post(body, provider_key)
        ch = doc if isinstance(doc, dict) else {}
        if code in (200, 201) and ch.get("status") == "succeeded":
            return "succeeded", ch.get("id"), None
        if code in (200, 201, 402) and ch.get("status") == "failed":
            err = ch.get("error") or {}
            return "failed", ch.get("id"), {
                "code": str(err.get("code") or "declined"),
                "message": str(err.get("message") or "declined")}
        if code == 422:
            return "review", None, {
                "code": "parameters_mismatch",
                "message": "the gateway saw this key with other parameters"}
        if 400 <= code < 500 and code not in (409, 429):
            return "review", None, {
                "code": "gateway_http_%d" % code,
                "message": "the gateway refused the request"}
        # 409 in progress, 429, 5xx, timeout, reset: same key, later
        if attempt + 1 < ATTEMPTS:
            wait = BACKOFF_S * (2 ** attempt)
            if code == 429 and retry_after is not None:
                wait = max(wait, retry_after)
            time.sleep(wait)
    return "review", None, {
        "code": "gateway_unavailable",
        "message": "no final answer after %d attempts (last %d)" %
        (ATTEMPTS, code)}


class Naive:
    def __init__(self, a):
        self.a = a
        self.db = psycopg2.connect(a.db)
        self.cur = self.db.cursor()
        self.gw = Gateway(a.gateway, a.api_key)
        self.producer = Producer({
            "bootstrap.servers": a.brokers,
            "enable.idempotence": True,
        })
        self.consumer = Consumer({
            "bootstrap.servers": a.brokers,
            "group.id": a.group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        })
        self.delivery_error = None

    def _delivered(self, err, msg):
        if err is not None:
            self.delivery_error = err

    def publish(self, result):
        key = "%s/%s" % (result["tenant_id"], result["idempotency_key"])
        self.delivery_error = None
        self.producer.produce(self.a.results, key=key.encode(),
                              value=json.dumps(result).encode(),
                              on_delivery=self._delivered)
        if self.producer.flush(30) != 0 or self.delivery_error is not None:
            raise KafkaException(self.delivery_error or "flush timed out")

    def result(self, intent, status, payment_id, charge_id, error, replayed):
        return {
            "schema_version": 1,
            "event_id": str(uuid.uuid4()),
            "intent_event_id": intent["event_id"],
            "tenant_id": intent["tenant_id"],
            "idempotency_key": intent["idempotency_key"],
            "order_id": intent["order_id"],
            "payment_id": payment_id,
            "status": status,
            "amount": intent["amount"],
            "currency": intent["currency"],
            "provider_charge_id": charge_id,
            "error": error,
            "replayed": replayed,
            "occurred_at": now_rfc3339(),
        }

    def handle(self, raw):
        """Works one intent message; the result to publish, or None."""
        intent, why = parse_intent(raw)
        if intent is None:
            log.warning("skipped a bad intent message: %s", why)
            return None
        tenant, key = intent["tenant_id"], intent["idempotency_key"]
        h = request_hash(intent)
        try:
            self.cur.execute(
                "INSERT INTO idem (tenant_id, idempotency_key, request_hash,"
                " state) VALUES (%s, %s, %s, 'processing')", (tenant, key, h))
            self.db.commit()
        except psycopg2.errors.UniqueViolation:
            self.db.rollback()
            self.cur.execute(
                "SELECT request_hash, state, response FROM idem"
                " WHERE tenant_id = %s AND idempotency_key = %s",
                (tenant, key))
            row = self.cur.fetchone()
            self.db.commit()
            if row is None:  # cannot happen: rows are never deleted
                raise RuntimeError("claimed key vanished")
            if row[0] != h:
                return self.result(intent, "conflict", None, None, {
                    "code": "idempotency_key_reused",
                    "message": "this key was used for another request"},
                    False)
            if row[1] == "processing":
                return None
            stored = dict(row[2])
            stored.update(event_id=str(uuid.uuid4()),
                          intent_event_id=intent["event_id"], replayed=True,
                          occurred_at=now_rfc3339())
            return stored
        # claimed: charge, then record the outcome
        payment_id = str(uuid.uuid5(PAYMENT_NS, "%s/%s" % (tenant, key)))
        provider_key = "naive_" + hashlib.sha256(
            ("%s\0%s" % (tenant, key)).encode()).hexdigest()
        status, charge_id, error = charge(self.gw, intent, payment_id,
                                          provider_key)
        res = self.result(intent, status, payment_id, charge_id, error, False)
        self.cur.execute(
            "UPDATE idem SET state = 'done', response = %s"
            " WHERE tenant_id = %s AND idempotency_key = %s",
            (json.dumps(res), tenant, key))
        self.db.commit()
        return res

    def run(self, stop):
        self.consumer.subscribe([self.a.intents])
        n = 0
        while not stop["now"]:
            m = self.consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                log.warning("consumer: %s", m.error())
                continue
            res = self.handle(m.value())
            if res is not None:
                self.publish(res)
            self.consumer.commit(message=m, asynchronous=False)
            n += 1
        log.info("stopping after %d messages", n)

    def close(self):
        self.consumer.close()
        self.producer.flush(10)
        self.db.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for o in ("brokers", "group", "intents", "results", "db", "gateway",
              "api-key"):
        p.add_argument("--" + o, required=True)
    a = p.parse_args()
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s naive %(levelname)s %(message)s")
    stop = {"now": False}

    def on_signal(signum, frame):
        stop["now"] = True
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    n = Naive(a)
    log.info("consuming %s as group %s", a.intents, a.group)
    try:
        n.run(stop)
    finally:
        n.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
