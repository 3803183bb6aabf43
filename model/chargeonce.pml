/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chargeonce.pml: the protocol of chargeonce for one payment intent,
 * checked with spin (issue 31). model/README.md maps every step below to
 * the function of src/ that does it, states the bounds and what is and is
 * not modelled; model/check.sh runs it and every mutant.
 *
 * One tenant and one idempotency key. Request A (the intent) is published
 * as event E1 and, later or never, as the client's retry E2 (a new event
 * id, the same request hash); request B (another amount under the same
 * key: another hash) is event E3. Kafka delivers them in any order, again
 * after a crash of the consumer that held them, once more on its own
 * (a rebalance's copy) and again after an operator's rewind.
 *
 * Actors: NW consume processes (each its own lease owner instance), one
 * reconciler (NR items of the payment, one after the other: a takeover
 * round never takes over what an item still holds), one relay (each may
 * crash at any step and restarts at once; any of them may stall between
 * two steps for as long as the others need, i.e. be frozen past its
 * lease),
 * the gateway (one outcome per provider key; answers lost; a status
 * query; webhooks, duplicated, late), an operator (review resolutions,
 * gc), time (leases expire, the payment ages past review_after, the
 * gateway's key retention and the idempotency retention), and a failover
 * to an asynchronous standby that loses the commits since it last caught
 * up, followed by the operator's rewind of the consumer group (with
 * RELAY_WAITS_STANDBY, relay.wait_for_standbys = 1: the relay publishes
 * only what the standby has).
 *
 * Every database transaction is one atomic step, as it is one statement
 * or one explicit transaction in src/store. The guards of the real code
 * are the G_* macros below: a mutant (model/mutants/) redefines one of
 * them and includes this file.
 *
 * The properties are assertions tagged P1_..P7_ (a constant that spin
 * prints with the failing expression) and the LTL formula p6. The bounds
 * of each run are -D flags: model/check.sh's scenarios.
 */
#include "status.pml"

/* ------------------------------------------------------------------ */
/* bounds (-D on the command line; model/README.md)                    */

#ifndef NW
#define NW 2 /* chargeonce consume processes */
#endif
#ifndef MAX_CRASH
#define MAX_CRASH 1 /* crashes of any actor, in all */
#endif
#ifndef MAX_LOST
#define MAX_LOST 1 /* gateway answers (or settle answers) lost */
#endif
#ifndef MAX_REDELIVER
#define MAX_REDELIVER 1 /* extra copies Kafka delivers on its own */
#endif
#ifndef MAX_WEBHOOK
#define MAX_WEBHOOK 1 /* webhook deliveries (2: a duplicate too) */
#endif
#ifndef WITH_B
#define WITH_B 1 /* request B: the same key, another request hash */
#endif
#ifndef WITH_RETRY
#define WITH_RETRY 1 /* E2: the client's retry of A, any time */
#endif
#ifndef WITH_FAILOVER
#define WITH_FAILOVER 1 /* a failover to an asynchronous standby */
#endif
#ifndef WITH_GC
#define WITH_GC 1 /* chargeonce gc after the idempotency retention */
#endif
#ifndef WITH_TWIN
#define WITH_TWIN 1 /* change 3 with a frozen predecessor (a crash) */
#endif
#ifndef WITH_REVIEW
#define WITH_REVIEW 1 /* an operator resolves review payments */
#endif
#ifndef NR
#define NR 1 /* the reconciler's items that may take the payment over (2:
              * R and R', which only the takeover's guard keeps from
              * holding it at once; finding F4) */
#endif
#ifndef SHARED_WORKER_ID
#define SHARED_WORKER_ID 0 /* W2 runs under W1's worker.id: a successor
                            * started beside a predecessor that hangs, both
                            * live; W2's start releases the name's leases
                            * (finding F4) */
#endif
#ifndef RELAY_WAITS_STANDBY
#define RELAY_WAITS_STANDBY 0 /* relay.wait_for_standbys = 1 (4cd8611): the
                               * relay publishes a row only once the
                               * standby has its commit (0: the default,
                               * no wait; finding F2) */
#endif

/* ------------------------------------------------------------------ */
/* the guards of the real code (a mutant redefines exactly one)        */

/* store_settle_batch: "AND p.lease_epoch = i.lease_epoch" */
#ifndef G_SETTLE_EPOCH
#define G_SETTLE_EPOCH(row, held) ((row) == (held))
#endif
/* store_settle_batch: "AND p.lease_owner = ($10::text[])[i.ord]", the
 * owner the item holds its epoch under (settle_item.lease_owner: the
 * process's instance of its name, OWN_OF) */
#ifndef G_SETTLE_OWNER
#define G_SETTLE_OWNER(row, own) ((row) == (own))
#endif
/* store_settle_batch: "AND p.status = 'processing'" */
#ifndef G_SETTLE_PROCESSING
#define G_SETTLE_PROCESSING(st) ((st) == ST_PROCESSING)
#endif
/* store_claim_batch: "WHEN k.request_hash <> f.request_hash THEN
 * 'conflict'" */
#ifndef G_CLAIM_HASH
#define G_CLAIM_HASH(keyreq, req) ((keyreq) == (req))
#endif
/* gateway_send_check (gateway/presend.c), before every POST: the lease
 * this worker holds (lease_until_ms) still holds */
#ifndef G_PRESEND_LEASE
#define G_PRESEND_LEASE(held) (held)
#endif
/* gateway_send_check, its other half: the call's deadline (from the
 * call's start) has not passed; a call never outlives a clock step */
#ifndef G_PRESEND_DEADLINE
#define G_PRESEND_DEADLINE(start) ((start) == clk)
#endif
/* payment_webhook_rule: a finish only for processing or review */
#ifndef G_WEBHOOK_OPEN
#define G_WEBHOOK_OPEN(st) ((st) == ST_PROCESSING || (st) == ST_REVIEW)
#endif
/* payment_review_decide: the decision must agree with what the gateway
 * lists (q: G_CHARGED, G_DECLINED or G_NONE) */
#ifndef G_REVIEW_RULE
#define G_REVIEW_RULE(q, succ)                                                 \
	((succ) && (q) == G_CHARGED || !(succ) && (q) != G_CHARGED)
#endif
/* store_outbox_batch (cur, ok): a replay is written only while its
 * payment still holds the replayed status (read FOR SHARE); else nothing,
 * the inbox row included, and the item is stale: claim_again
 * (src/pipeline/jobs.c) claims the copy again (F1, fixed in 7724dd1) */
#ifndef G_REPLAY_CURRENT
#define G_REPLAY_CURRENT(p, st) (P.p_on && P.p_pid == (p) && P.p_st == (st))
#endif
/* store_takeover_expired: "AND lease_expires_at < now()" */
#ifndef G_TAKEOVER_EXPIRED
#define G_TAKEOVER_EXPIRED(live) (!(live))
#endif
/* store_takeover_expired: "AND payment_id <> ALL ($4)", the payments the
 * reconciler's live items hold (take_over, src/reconcile/reconcile.c;
 * held: one bit per item holding the payment; F4, fixed in 717a663) */
#ifndef G_TAKEOVER_NOT_HELD
#define G_TAKEOVER_NOT_HELD(held) ((held) == 0)
#endif
/* fill_owner (src/cmd/opts.c), store_lease_owner_instance
 * (src/store/lease.c): a lease is granted to this process's instance of
 * its owner name, "<name>#<16 hex>", a nonce drawn at each start (0: to
 * the name itself, as before 717a663; F4) */
#ifndef G_OWNER_INSTANCE
#define G_OWNER_INSTANCE 1
#endif
/* store_gc_batch and payment_key_retention_check: only keys past
 * idempotency.retention, itself no shorter than the topic's retention.ms
 * and gateway.key_retention */
#ifndef G_GC_RETENTION
#define G_GC_RETENTION (clk >= K_EXPIRE)
#endif
/* store_gc_batch: the key becomes a tombstone (1), never deleted */
#ifndef G_GC_TOMBSTONE
#define G_GC_TOMBSTONE 1
#endif
/* change 1: payment_id = UUID(HMAC(secret, tenant, key, request hash)),
 * the same on every claim of a request (PID_FRESH: a new one per claim,
 * the old store_claim_batch) */
#ifndef PID_FRESH
#define PID_FRESH 0
#endif
/* pipeline_finish -> offsets_done (src/pipeline/item.c, offsets.c): a
 * message's offset becomes committable only once it is durably handled;
 * for a replay or a conflict, once store_outbox_batch wrote its result */
#ifndef G_OFFSET_AFTER_RESULT
#define G_OFFSET_AFTER_RESULT 1
#endif
/* change 2: a settle that finds no payment row claims the intent again */
#ifndef G_RECLAIM_LOST
#define G_RECLAIM_LOST 1
#endif
/* relay.wait_for_standbys (relay_round -> standbys_have,
 * src/relay/round.c): after its fetch a round produces its rows only once
 * the standby has flushed the WAL up to the primary's insert position,
 * past the commit of every row fetched. The standby (S) holds a prefix of
 * the primary's commits, so it has outbox row i's commit when i < S.ob_n.
 * After the failover (one at most) nothing published can be lost any
 * more: the promoted primary's rows go out as they come (src/ waits until
 * a standby is attached and has them, a delay no property here sees).
 * Default: no wait (F2) */
#ifndef G_RELAY_STANDBY_HAS
#if RELAY_WAITS_STANDBY
#define G_RELAY_STANDBY_HAS(i) (failovers > 0 || (i) < S.ob_n)
#else
#define G_RELAY_STANDBY_HAS(i) 1
#endif
#endif

/* ------------------------------------------------------------------ */
/* names                                                                */

#define E1 0 /* A, as first published */
#define E2 1 /* A again: the client's retry, a new event id */
#define E3 2 /* B: the same key, another request hash */
#define RA 1
#define RB 2
#define REQ_OF(e) ((e) == E3 -> RB : RA)
#define EBIT(e) (1 << (e))

#define RID (NW + 1)   /* the reconciler: its first item, its owner */
#define RELAY (NW + 2) /* the relay (crash requests only) */
#define RID2 (NW + 3)  /* the reconciler's second item (NR 2) */
#define NACT (NW + 4)
#define IBIT(me) ((me) == RID -> 1 : 2) /* a reconciler item's bit */

/* the owner name of actor me (or of an owner as written in the row): a
 * consumer's worker.id (W2's is W1's with SHARED_WORKER_ID), the
 * reconciler's "<worker.id>/reconcile" for every item */
#define NAME_OF(me) ((me) >= RID -> RID : (SHARED_WORKER_ID && (me) == 2 -> 1 : (me)))
/* the lease owner actor me writes (store: lease_owner): its process's
 * instance of its name, which the reconciler's items share. A process
 * restarted after a crash keeps its number here: it holds nothing of the
 * crashed one's in hand, and the crashed one's grants have no holder
 * (a crash and a failover in one run could only make the model report
 * more, never less: no scenario has both) */
#define OWN_OF(me) (G_OWNER_INSTANCE -> ((me) >= RID -> RID : (me)) : NAME_OF(me))

#define G_NONE 0     /* the gateway has no outcome for the key */
#define G_CHARGED 1  /* charged (200/201 succeeded) */
#define G_DECLINED 2 /* final refusal (402) */
#define G_LOST 3     /* no answer: timeout, reset, 5xx, lost */
#define G_NOTSENT 4  /* held back by gateway_send_check: unknown */

#define C_NEW 1
#define C_INPROG 2
#define C_REPLAY 3
#define C_CONFLICT 4
#define C_DUP 5
#define C_STALE 6 /* the payment moved since the claim read it (F1) */

#define ST_NONE 7 /* no status (not in status.pml) */

/* the clock: how old the intent is */
#define K_YOUNG 0  /* inside every bound */
#define K_REVIEW 1 /* past reconcile.review_after */
#define K_RETAIN 2 /* past gateway.key_retention: the gateway may forget */
#define K_EXPIRE 3 /* past idempotency.retention and the topic's
                    * retention.ms: gc may run, old messages are gone */

#define NOB 6    /* outbox rows */
#define MAXPID 4 /* payment ids (2 when derived) */

/* an outbox row: request, status, payment id, charge id, replayed, and
 * its result event id (a ghost number: the row's identity) */
#define ROW(r, s, p, c, rep) ((r) | ((s) << 2) | ((p) << 5) | ((c) << 8) | ((rep) << 11) | (RID_OF(s, p, rep) << 12))
/* the result event id: a new one per row (a uuid v4), or, with
 * RESULT_ID_DERIVED, derived from (payment id, status) for a payment's
 * own result, as sql/0017 (in progress) derives it */
#ifdef RESULT_ID_DERIVED
#define RID_OF(s, p, rep) ((rep) || (s) == ST_CONFLICT -> 8 + nrid % 8 : ((p) - 1) * 4 + (s))
#else
#define RID_OF(s, p, rep) (nrid)
#endif
#define ROW_RID(x) (((x) >> 12) & 15)
#define ROW_REQ(x) ((x) & 3)
#define ROW_ST(x) (((x) >> 2) & 7)
#define ROW_PID(x) (((x) >> 5) & 7)
#define ROW_CH(x) (((x) >> 8) & 7)
#define ROW_REP(x) (((x) >> 11) & 1)

/* ------------------------------------------------------------------ */
/* the database (P, the primary) and its asynchronous standby (S)      */

typedef DB {
	/* idempotency_keys: the one key (tenant, key) */
	unsigned k_on : 1;
	unsigned k_req : 2;  /* whose request hash it holds */
	unsigned k_pid : 3;
	unsigned k_fin : 1;  /* state = 'final' */
	unsigned k_st : 3;   /* status, when final */
	unsigned k_tomb : 1; /* tombstoned_at set (gc) */
	/* payments: UNIQUE (tenant_id, idem_key): at most one row */
	unsigned p_on : 1;
	unsigned p_pid : 3;
	unsigned p_st : 3;
	unsigned p_ep : 4;   /* lease_epoch */
	unsigned p_own : 3;  /* lease_owner (0: none) */
	unsigned p_live : 1; /* lease_expires_at in the future */
	unsigned p_ch : 3;   /* provider_charge_id (0: none) */
	unsigned p_tok : 4;  /* ghost: which lease grant the row is under */
	unsigned ib : 3;     /* inbox: one bit per event id */
	unsigned whs : 5;    /* webhook_events: one webhook id per key */
	unsigned ob_n : 3;   /* outbox rows */
	unsigned ob_pub : 3; /* rows before it are marked published */
	int ob[NOB]
}

DB P;
DB S;

#define COPY_DB(d, s)                                                          \
	d.k_on = s.k_on; d.k_req = s.k_req; d.k_pid = s.k_pid;                 \
	d.k_fin = s.k_fin; d.k_st = s.k_st; d.k_tomb = s.k_tomb;               \
	d.p_on = s.p_on; d.p_pid = s.p_pid; d.p_st = s.p_st;                   \
	d.p_ep = s.p_ep; d.p_own = s.p_own; d.p_live = s.p_live;               \
	d.p_ch = s.p_ch; d.p_tok = s.p_tok; d.ib = s.ib; d.whs = s.whs;        \
	d.ob_n = s.ob_n; d.ob_pub = s.ob_pub; d.ob[0] = s.ob[0];               \
	d.ob[1] = s.ob[1]; d.ob[2] = s.ob[2]; d.ob[3] = s.ob[3];               \
	d.ob[4] = s.ob[4]; d.ob[5] = s.ob[5]

/* ------------------------------------------------------------------ */
/* Kafka, the gateway, time, budgets                                    */

unsigned avail : 3;  /* a copy of the event is waiting to be consumed */
unsigned done : 3;   /* its offset is committed */
unsigned pubd : 3;   /* published on the intents topic at all */
unsigned intopic : 3; /* still held by the topic (retention.ms) */
unsigned redo : 3;   /* delivered again (a crash, a copy, a rewind) */
bit rewinding;       /* a failover happened, the group is not rewound yet */
unsigned clk : 2;    /* the clock, K_* */

byte g_st[MAXPID + 1]; /* the gateway's outcome per provider key */
byte g_ch[MAXPID + 1]; /* its charge id */
byte g_at[MAXPID + 1]; /* the clock when it stored that outcome */

bit lok[NACT];       /* each holder's own view: my lease still holds */
bit crash_req[NACT]; /* time to crash (set by env) */
byte r_hold = 255;   /* the reconciler held the payment (a wait) at clk */
byte r_held;         /* NR 2: the items that hold the payment (IBIT):
                      * took it over and have not let it go */

byte crashes, lost, redelivered, nwebhook, failovers, gcs;

/* ghosts: never reverted by a failover */
byte ntok;               /* lease grants made */
byte nch;                /* charges made (charge ids) */
byte nrid;               /* results written (result event ids) */
short pubset;            /* result event ids published */
byte charges[3];         /* charges per request */
byte ch_of[MAXPID + 1];  /* the charge made for a key, forgotten or not */
bit born;                /* the intent was first claimed: its age runs */
byte pseq;               /* PID_FRESH: payment ids made */
byte preq[MAXPID + 1];   /* the request a payment id was made for */
byte pub_st[3] = ST_NONE; /* per request: the last final status published */
byte pub_pid[3];
byte pub_ch[3];
bit pub_conf[3];  /* a conflict was published for the request */
bit pub_own[3];   /* a result of its own payment was published */
bit pubfinal[3];  /* some final answer was published (liveness) */
bit gc_done[3];   /* gc collected the request's key */
bit failed_ever[3]; /* a payment of the request was ever stored failed */

/* the properties: spin prints the name with a failing assertion; with
 * -DONLY=n only property n is checked (a mutant's run) */
#ifndef ONLY
#define ONLY 0
#endif
bit P1_at_most_one_charge = 1;
bit P2_results_agree = 1;
bit P3_no_stale_epoch_write = 1;
bit P4_outcome_never_contradicted = 1;
bit P5_never_backwards = 1;
bit P7_gc_never_charges_again = 1;
bit BOUND_model_bound_exceeded = 1;
bit MODEL_consistent = 1;
#if ONLY == 0
#define CHECK_MODEL(c) assert(MODEL_consistent && (c))
#else
#define CHECK_MODEL(c) skip
#endif
#if ONLY == 0 || ONLY == 1
#define CHECK_P1(c) assert(P1_at_most_one_charge && (c))
#else
#define CHECK_P1(c) skip
#endif
#if ONLY == 0 || ONLY == 2
#define CHECK_P2(c) assert(P2_results_agree && (c))
#else
#define CHECK_P2(c) skip
#endif
#if ONLY == 0 || ONLY == 3
#define CHECK_P3(c) assert(P3_no_stale_epoch_write && (c))
#else
#define CHECK_P3(c) skip
#endif
#if ONLY == 0 || ONLY == 4
#define CHECK_P4(c) assert(P4_outcome_never_contradicted && (c))
#else
#define CHECK_P4(c) skip
#endif
#if ONLY == 0 || ONLY == 5
#define CHECK_P5(c) assert(P5_never_backwards && (c))
#else
#define CHECK_P5(c) skip
#endif
#if ONLY == 0 || ONLY == 7
#define CHECK_P7(c) assert(P7_gc_never_charges_again && (c))
#else
#define CHECK_P7(c) skip
#endif

#define PREQ(p) (PID_FRESH -> preq[p] : (p))

/* scratch of one atomic step, always 0 between steps (hidden variables
 * would break pan's undo of the steps that index arrays with them) */
byte h_r, h_s, h_p, h_c, h_q;
int h_row;

/* ------------------------------------------------------------------ */
/* helpers                                                              */

/* A status write on the payment row (P5: the generated table). */
inline move(to)
{
	CHECK_P5(MAY_MOVE(P.p_st, to));
	P.p_st = to
}

/* P2's one exception (finding F2, model/README.md): after a failover a
 * review result can be made and published behind a final result the
 * relay published from a commit the failover lost. relay.wait_for_standbys
 * (RELAY_WAITS_STANDBY, 4cd8611) closes it: P2_STRICT holds with it
 * (live_failover_wait) */
#ifdef P2_STRICT
#define F2_REVIEW_AGAIN(x) 0
#else
#define F2_REVIEW_AGAIN(x) (failovers > 0 && ROW_ST(x) == ST_REVIEW)
#endif

/* P2, on every result as it is published on payments.results; a row
 * published again (a relay that died before its mark, a mark lost in a
 * failover) has the same event id and bytes: downstream drops it */
inline published(x)
{
	h_q = ROW_REQ(x);
	printf("MSC: result on payments.results: request %d, status %d, payment %d, charge %d, replayed %d\n",
	       ROW_REQ(x), ROW_ST(x), ROW_PID(x), ROW_CH(x), ROW_REP(x));
	if
	:: WITH_FAILOVER && (pubset & (1 << ROW_RID(x))) -> skip
	:: else ->
	pubset = pubset | (WITH_FAILOVER -> 1 << ROW_RID(x) : 0);
	if
	:: ROW_ST(x) == ST_CONFLICT ->
		CHECK_P2(!pub_own[h_q]);
		pub_conf[h_q] = 1
	:: else ->
		/* a result of the request's own payment, never of another's;
		 * the same facts as before, or a move the table allows */
		CHECK_P2(PREQ(ROW_PID(x)) == h_q &&
		       !pub_conf[h_q]);
		if
		:: pub_st[h_q] == ST_NONE -> skip
		:: else ->
			CHECK_P2(ROW_PID(x) == pub_pid[h_q] &&
			       (ROW_ST(x) == pub_st[h_q] &&
			        ROW_CH(x) == pub_ch[h_q] ||
			        MAY_MOVE(pub_st[h_q], ROW_ST(x)) ||
			        F2_REVIEW_AGAIN(x)))
		fi;
		pub_st[h_q] = ROW_ST(x);
		pub_pid[h_q] = ROW_PID(x);
		pub_ch[h_q] = ROW_CH(x);
		pub_own[h_q] = 1
	fi;
	pubfinal[h_q] = 1
	fi;
	h_q = 0
}

/*
 * An outbox row appended; the relay publishes rows in order. Without a
 * failover the relay's lag changes nothing the properties see (results
 * leave in row order, a re-publish has the same event id and bytes), so
 * the row is published with the transaction that writes it; with one,
 * the relay runs on its own and rows not yet published can be lost.
 */
inline outbox(r, s, p, c, rep)
{
#if WITH_FAILOVER
	assert(BOUND_model_bound_exceeded && P.ob_n < NOB && nrid < 15);
	nrid++;
	P.ob[P.ob_n] = ROW(r, s, p, c, rep);
	P.ob_n++
#else
	/* published at once, and then nothing of the row matters */
	h_row = ROW(r, s, p, c, rep);
	published(h_row);
	h_row = 0
#endif
}

/* A new lease grant (claim or takeover) to holder tok: a ghost token
 * with a failover (a grant can be lost and its epoch given again), the
 * epoch itself without one. */
inline grant(tok)
{
	if
	:: WITH_FAILOVER ->
		ntok++;
		assert(BOUND_model_bound_exceeded && ntok < 15);
		P.p_tok = ntok;
		tok = ntok
	:: else -> tok = P.p_ep
	fi
}

/* P3: a fenced write by the holder of grant tok is by the current one.
 * No exception: a grant lost in a failover is given again with the same
 * epoch, but to another owner, which the settle's owner fence tells apart
 * (F3, fixed in 7724dd1): another owner instance even under the same
 * name, a successor under the same worker.id (SHARED_WORKER_ID), and
 * never the reconciler's own item again while one of its items still
 * holds the lost grant (NR 2) (F4, fixed in 717a663). */
#if !WITH_FAILOVER
#define GRANT_OK(tok) ((tok) == P.p_ep)
#else
#define GRANT_OK(tok) ((tok) == P.p_tok)
#endif

/* P4: nothing the gateway does contradicts a stored failed outcome */
#define NOT_FAILED(r) (!failed_ever[r] && pub_st[r] != ST_FAILED)

/*
 * POST /v1/charges with provider key p (the payment id's HMAC: one key
 * per payment id). The gateway decides once per key while it keeps it:
 * charged or refused; then it answers the same. The answer may be lost.
 */
inline gw_post(p, ans, ch)
{
	if
	:: g_st[p] == G_NONE ->
		g_at[p] = clk;
		if
		:: g_st[p] = G_CHARGED;
			nch++;
			g_ch[p] = nch;
			ch_of[p] = nch;
			charges[PREQ(p)]++;
			CHECK_P7(!gc_done[PREQ(p)]);
			CHECK_P1(charges[PREQ(p)] <= 1);
			CHECK_P4(NOT_FAILED(PREQ(p)));
			printf("MSC: gateway charges key %d (charge %d)\n", p, nch)
		:: g_st[p] = G_DECLINED;
			printf("MSC: gateway refuses key %d (402)\n", p)
		fi
	:: else -> skip
	fi;
	if
	:: ans = g_st[p]; ch = g_ch[p]
	:: lost < MAX_LOST -> lost++; ans = G_LOST; ch = 0;
		printf("MSC: the answer is lost\n")
	fi
}

/* GET /v1/charges?reference=: what the gateway has (or no answer). */
inline gw_query(p, ans, ch)
{
	if
	:: ans = g_st[p]; ch = g_ch[p]
	:: lost < MAX_LOST -> lost++; ans = G_LOST; ch = 0
	fi
}

/*
 * store_settle_batch for one payment: fenced by status, epoch and owner;
 * the payment final, the key final with its status, the outbox result, in
 * one statement. res: 1 ok, 2 fenced or already, 3 no payment row.
 */
#define SETTLE_FENCE(ep, me)                                                   \
	(G_SETTLE_PROCESSING(P.p_st) && G_SETTLE_EPOCH(P.p_ep, ep) &&          \
	 G_SETTLE_OWNER(P.p_own, OWN_OF(me)))

inline settle(me, pay, ep, tok, s, ch, res)
{
	if
	:: me == RID ->
		printf("MSC: R settles payment %d as %d with epoch %d\n", pay, s, ep)
	:: me == RID2 ->
		printf("MSC: R' settles payment %d as %d with epoch %d\n", pay, s,
		       ep)
	:: else ->
		printf("MSC: W%d settles payment %d as %d with epoch %d\n", me, pay,
		       s, ep)
	fi;
	/* every write out of processing clears lease_owner and only a
	 * processing payment gets one, so a settle (which always names its
	 * owner) that passes the owner fence finds the payment processing:
	 * the status guard is implied (model/README.md, "Mutants") */
	CHECK_MODEL(P.p_own == 0 || P.p_st == ST_PROCESSING);
	if
	:: P.p_on && P.p_pid == pay && SETTLE_FENCE(ep, me) ->
		CHECK_P3(GRANT_OK(tok));
		move(s);
		if
		:: ch != 0 -> P.p_ch = ch
		:: else -> skip
		fi;
		P.p_own = 0;
		P.p_live = 0;
		P.p_tok = 0;
		CHECK_MODEL(P.k_on && P.k_pid == pay);
		P.k_fin = 1;
		P.k_st = s;
		h_r = PREQ(pay);
		h_c = P.p_ch;
		outbox(h_r, s, pay, h_c, 0);
		h_r = 0;
		h_c = 0;
		if
		:: s == ST_FAILED ->
			failed_ever[PREQ(pay)] = 1;
			CHECK_P4(
			       charges[PREQ(pay)] == 0)
		:: else -> skip
		fi;
		res = 1
	:: P.p_on && P.p_pid == pay && !SETTLE_FENCE(ep, me) ->
		printf("MSC:   fenced (the row: status %d, epoch %d, owner %d): nothing written\n",
		       P.p_st, P.p_ep, P.p_own);
		res = 2
	:: !(P.p_on && P.p_pid == pay) ->
		printf("MSC:   no payment row\n");
		res = 3
	fi
}

/* store_lease_renew: fenced by status, epoch and owner. */
inline renew(me, pay, ep, tok)
{
	if
	:: P.p_on && P.p_pid == pay && P.p_st == ST_PROCESSING &&
	   P.p_ep == ep && P.p_own == OWN_OF(me) ->
		if
		:: me == RID -> printf("MSC: R renews its lease: epoch %d\n", ep)
		:: me == RID2 -> printf("MSC: R' renews its lease: epoch %d\n", ep)
		:: else -> printf("MSC: W%d renews its lease: epoch %d\n", me, ep)
		fi;
		CHECK_P3(GRANT_OK(tok));
		P.p_live = 1;
		lok[me] = 1
	:: else -> lok[me] = 0
	fi
}

/* store_leases_release at the start of actor me's process,
 * every_instance: the leases of every instance of its name on a
 * processing payment expire, the epoch kept (a takeover raises it). Their
 * holder's own view of its lease is not touched: a predecessor that hangs
 * still believes it holds. */
inline release_name(me)
{
	if
	:: P.p_on && P.p_st == ST_PROCESSING && NAME_OF(P.p_own) == NAME_OF(me) ->
		P.p_live = 0
	:: else -> skip
	fi
}

/* store/finish.c: a webhook's or an operator's finish (the payment
 * locked FOR UPDATE; lease cleared and lease_epoch + 1; key final; a
 * result that resolves_review when it was in review). */
inline finish(s, ch)
{
	move(s);
	P.p_ch = ch;
	P.p_ep++;
	assert(BOUND_model_bound_exceeded && P.p_ep < 15);
	P.p_own = 0;
	P.p_live = 0;
	P.p_tok = 0;
	P.k_fin = 1;
	P.k_st = s;
	h_r = PREQ(P.p_pid);
	h_p = P.p_pid;
	outbox(h_r, s, h_p, ch, 0);
	h_r = 0;
	h_p = 0;
	if
	:: s == ST_FAILED ->
		failed_ever[PREQ(P.p_pid)] = 1;
		CHECK_P4(
		       charges[PREQ(P.p_pid)] == 0)
	:: else -> skip
	fi
}

/* ------------------------------------------------------------------ */
/* chargeonce consume: the pipeline (src/pipeline/jobs.c)              */

/* store_claim_batch for event e of request r: the inbox row, the key
 * (INSERT ... ON CONFLICT) and the payment in one statement. */
inline claim_tx(me)
{
	pay = 0; ep = 0; tok = 0; st = 0; sch = 0; tries = 0;
	if
	:: P.ib & EBIT(e) -> res = C_DUP
	:: else ->
		if
		:: !P.k_on ->
			/* the key and the payment inserted: new (change 1:
			 * the payment id is the request's own) */
			if
			:: PID_FRESH -> pseq++; pay = pseq
			:: else -> pay = r
			fi;
			assert(BOUND_model_bound_exceeded && pay <= MAXPID);
			preq[pay] = r;
			P.k_on = 1; P.k_req = r; P.k_pid = pay;
			P.k_fin = 0; P.k_st = 0; P.k_tomb = 0;
			P.p_on = 1; P.p_pid = pay;
			P.p_st = ST_PROCESSING; P.p_ep = 1;
			P.p_own = OWN_OF(me); P.p_live = 1; P.p_ch = 0;
			grant(tok);
			ep = 1;
			lok[me] = 1;
			born = 1;
			P.ib = P.ib | EBIT(e);
			res = C_NEW
		:: P.k_on && !G_CLAIM_HASH(P.k_req, r) ->
			res = C_CONFLICT
		:: P.k_on && G_CLAIM_HASH(P.k_req, r) &&
		   (!P.k_fin || !P.p_on || P.p_st != P.k_st) ->
			P.ib = P.ib | EBIT(e);
			res = C_INPROG
		:: P.k_on && G_CLAIM_HASH(P.k_req, r) && P.k_fin && P.p_on &&
		   P.p_st == P.k_st ->
			pay = P.k_pid; st = P.k_st; sch = P.p_ch;
			res = C_REPLAY
		fi
	fi;
	if
	:: res == C_NEW ->
		printf("MSC: W%d claims event E%d: new, payment %d, epoch %d\n",
		       me, e + 1, pay, ep)
	:: res == C_DUP ->
		printf("MSC: W%d claims event E%d: duplicate event\n", me, e + 1)
	:: res == C_INPROG ->
		printf("MSC: W%d claims event E%d: in progress\n", me, e + 1)
	:: res == C_REPLAY ->
		printf("MSC: W%d claims event E%d: replay of payment %d, status %d\n",
		       me, e + 1, pay, st)
	:: res == C_CONFLICT ->
		printf("MSC: W%d claims event E%d: conflict\n", me, e + 1)
	fi
}

/* offsets_store: the message is handled (a crash before this only
 * means Kafka delivers it again: MAX_REDELIVER covers that case) */
inline handled(me)
{
	done = done | EBIT(e);
	lok[me] = 0;
	e = 255; r = 0; pay = 0; ep = 0; tok = 0; res = 0;
	ans = 0; ch = 0; st = 0; sch = 0; tries = 0; cclk = 0
}

proctype consumer(byte me)
{
	byte e = 255, r, pay, ep, tok, res, ans, ch, st, sch, tries, cclk;

#if SHARED_WORKER_ID
	/* W2 starts, at any moment, under W1's worker.id beside W1 (which
	 * may hang): another instance of the name, whose start releases the
	 * leases of every instance of it (release_leases at start,
	 * src/pipeline/pipeline.c); W1's own view of its lease is kept */
	if
	:: me == 2 ->
		atomic {
			release_name(me);
			printf("MSC: W2 starts under W1's worker.id: the name's leases expire\n")
		}
	:: else -> skip
	fi;
#endif
end_idle:
	do
	:: {
		/* a message of the intents topic (kconsumer poll, keyq),
		 * claimed at once: a crash in between only means that the
		 * message is delivered again */
		atomic {
			avail != 0;
			if
			:: avail & EBIT(E1) -> e = E1
			:: avail & EBIT(E2) -> e = E2
			:: avail & EBIT(E3) -> e = E3
			fi;
			avail = avail & ~EBIT(e);
			r = REQ_OF(e);
			claim_tx(me);
			if
			:: res == C_DUP || res == C_INPROG -> handled(me)
			:: (res == C_REPLAY || res == C_CONFLICT) &&
			   !G_OFFSET_AFTER_RESULT ->
				done = done | EBIT(e) /* stored too early */
			:: else -> skip
			fi
		};
claimed:
		if
		:: res == C_NEW ->
			/* pipeline_charge: the call starts (its deadline runs
			 * from now), the same provider key on every POST, each
			 * one checked by gateway_send_check first */
			cclk = clk;
post:
			atomic {
				if
				:: G_PRESEND_LEASE(lok[me]) && G_PRESEND_DEADLINE(cclk) ->
					printf("MSC: W%d posts payment %d\n", me, pay);
					gw_post(pay, ans, ch)
				:: else ->
					printf("MSC: W%d does not post: lease lost\n", me);
					ans = G_NOTSENT
				fi;
				tries++;
				if
				:: ans == G_NOTSENT || ans == G_LOST && tries >= 2 ->
					/* unknown: left processing for the reconciler */
					handled(me)
				:: else -> skip
				fi
			};
			if
			:: ans == G_LOST && tries < 2 ->
				/* pipeline_renew_leases while at the gateway,
				 * then the client's retry */
				if
				:: atomic { renew(me, pay, ep, tok) }
				:: skip
				fi;
				goto post
			:: ans == G_CHARGED || ans == G_DECLINED ->
again:
				/* store_settle_batch, fenced */
				atomic {
					st = (ans == G_CHARGED -> ST_SUCCEEDED : ST_FAILED);
					settle(me, pay, ep, tok, st, ch, res);
					if
					:: res == 1 && lost < MAX_LOST ->
						/* the commit's answer lost with the
						 * connection: the store reconnects and
						 * the call is made again */
						lost++;
						res = 4
					:: res == 1 || res == 2 || res == 3 && !G_RECLAIM_LOST ->
						handled(me)
					:: res == 3 && G_RECLAIM_LOST -> skip
					fi
				};
				if
				:: res == 4 -> goto again
				:: res == 3 ->
					/* change 2: the claim is gone: claim again
					 * (the same payment id, so the same provider
					 * key: a POST again is answered the same) */
					atomic { claim_tx(me) };
					goto claimed
				:: else -> skip
				fi
			:: else -> skip
			fi
		:: res == C_REPLAY || res == C_CONFLICT ->
			/* store_outbox_batch: the inbox insert gates the row */
			atomic {
				if
				:: !(P.ib & EBIT(e)) && res == C_REPLAY &&
				   !G_REPLAY_CURRENT(pay, st) ->
					res = C_STALE
				:: !(P.ib & EBIT(e)) &&
				   (res == C_CONFLICT || G_REPLAY_CURRENT(pay, st)) ->
					P.ib = P.ib | EBIT(e);
					if
					:: res == C_REPLAY -> outbox(r, st, pay, sch, 1)
					:: else -> outbox(r, ST_CONFLICT, 0, 0, 0)
					fi;
					handled(me)
				:: P.ib & EBIT(e) -> handled(me)
				fi
			};
			if
			:: res == C_STALE ->
				atomic { claim_tx(me) };
				goto claimed
			:: else -> skip
			fi
		:: else -> skip
		fi
	} unless {
		atomic {
			crash_req[me] ->
			crash_req[me] = 0;
			/* not committed: Kafka delivers the message again */
			if
			:: e != 255 && !(done & EBIT(e)) ->
				avail = avail | EBIT(e);
				redo = redo | EBIT(e)
			:: else -> skip
			fi;
			lok[me] = 0;
			/* change 3: restarted with the same worker.id (a new
			 * instance), it expires the leases of every instance
			 * of the name at once */
			release_name(me);
			printf("MSC: W%d crashes and restarts\n", me);
			e = 255; r = 0; pay = 0; ep = 0; tok = 0; res = 0;
			ans = 0; ch = 0; st = 0; sch = 0; tries = 0; cclk = 0
		}
	}
	od
}


/* ------------------------------------------------------------------ */
/* the reconciler (src/reconcile/)                                      */

proctype reconciler(byte me)
{
	byte pay, ep, tok, res, ans, ch, s;

end_idle:
	do
	:: {
		/*
		 * store_takeover_expired (CAS: lease_epoch + 1), then
		 * gateway_query and reconcile_decide, and for an empty list
		 * inside the bounds the re-post (act_reposts: the lease
		 * renewed first, gateway_charge with resume). One step: with
		 * one reconciler nothing else can act on the payment or the
		 * key at the gateway meanwhile (no other lease holder can
		 * post, no webhook or review exists for an unused key).
		 * The second item (NR 2, R') is another item of the same
		 * reconciler, the same owner instance: a later takeover
		 * round's. The takeover skips a payment an item still holds
		 * (its answer late, its lease not renewed in time): without
		 * that, R' would take over again the payment R holds.
		 */
		atomic {
			P.p_on && P.p_st == ST_PROCESSING &&
			G_TAKEOVER_EXPIRED(P.p_live) && r_hold != clk &&
			G_TAKEOVER_NOT_HELD(r_held);
			P.p_ep++;
			assert(BOUND_model_bound_exceeded && P.p_ep < 15);
			P.p_own = OWN_OF(me);
			P.p_live = 1;
			grant(tok);
			pay = P.p_pid;
			ep = P.p_ep;
			lok[me] = 1;
			if
			:: me == RID ->
				printf("MSC: R takes payment %d over: epoch %d\n", pay, ep)
			:: else ->
				printf("MSC: R' (another item of the reconciler) takes payment %d over: epoch %d\n",
				       pay, ep)
			fi;
			gw_query(pay, ans, ch);
			if
			:: me == RID -> printf("MSC: R asks the gateway: %d\n", ans)
			:: else -> printf("MSC: R' asks the gateway: %d\n", ans)
			fi;
			if
			:: ans == G_NONE && clk < K_REVIEW ->
				renew(me, pay, ep, tok);
				if
				:: G_PRESEND_LEASE(lok[me]) ->
					if
					:: me == RID ->
						printf("MSC: R posts payment %d again\n", pay)
					:: else ->
						printf("MSC: R' posts payment %d again\n", pay)
					fi;
					gw_post(pay, ans, ch)
				:: else -> ans = G_NOTSENT
				fi
			:: else -> skip
			fi;
			if
			:: ans == G_CHARGED -> s = ST_SUCCEEDED
			:: ans == G_DECLINED -> s = ST_FAILED
			:: ans != G_CHARGED && ans != G_DECLINED && clk >= K_REVIEW ->
				/* outcome_unknown, deadline_passed,
				 * key_retention_passed */
				s = ST_REVIEW
			:: else ->
				/* wait: act_waits holds the lease for the backoff */
				r_hold = clk;
				if
				:: me == RID -> printf("MSC: R waits\n")
				:: else -> printf("MSC: R' waits\n")
				fi;
				lok[me] = 0;
				pay = 0; ep = 0; tok = 0; res = 0; ans = 0; ch = 0;
				s = ST_NONE
			fi;
			if
			:: NR > 1 && s != ST_NONE -> r_held = r_held | IBIT(me)
			:: else -> skip
			fi
		};
		if
		:: s != ST_NONE ->
			/* act_settles: store_settle_batch with the epoch taken,
			 * under the reconciler's owner instance */
			atomic {
				settle(me, pay, ep, tok, s, ch, res);
				lok[me] = 0;
				pay = 0; ep = 0; tok = 0; res = 0; ans = 0; ch = 0;
				s = 0;
				if
				:: NR > 1 -> r_held = r_held & ~IBIT(me)
				:: else -> skip
				fi
			}
		:: else -> s = 0
		fi
	} unless {
		atomic {
			crash_req[me] ->
			crash_req[me] = 0;
			lok[me] = 0;
			if
			:: NR > 1 -> r_held = r_held & ~IBIT(me)
			:: else -> skip
			fi;
			if
			:: me == RID -> printf("MSC: R crashes and restarts\n")
			:: else -> skip
			fi;
			pay = 0; ep = 0; tok = 0; res = 0; ans = 0; ch = 0; s = 0
		}
	}
	od
}

/* ------------------------------------------------------------------ */
/* the outbox relay (src/relay/round.c)                                 */

proctype relay()
{
	byte i;

end_idle:
	do
	:: {
		/* fetch the first unpublished row, produce it, mark it
		 * published when its delivery report came (a crash in
		 * between publishes the same row again: the same event id
		 * and bytes, which P2 accepts by construction, so it is
		 * one step here); with relay.wait_for_standbys, only once
		 * the standby has the row's commit (a round that waits in
		 * vain gives its rows back: no step) */
		atomic {
			P.ob_pub < P.ob_n && G_RELAY_STANDBY_HAS(P.ob_pub);
			i = P.ob_pub;
#if RELAY_WAITS_STANDBY
			if
			:: failovers == 0 ->
				printf("MSC: relay publishes row %d (the standby has %d of %d rows)\n",
				       i, S.ob_n, P.ob_n)
			:: else ->
				printf("MSC: relay publishes row %d (after the failover)\n", i)
			fi;
#else
			printf("MSC: relay publishes row %d\n", i);
#endif
			published(P.ob[i]);
			P.ob_pub++;
			i = 0
		}
	} unless {
		atomic {
			crash_req[RELAY] ->
			crash_req[RELAY] = 0;
			printf("MSC: relay crashes and restarts\n");
			i = 0
		}
	}
	od
}

/* ------------------------------------------------------------------ */
/* webhooks (store_webhook_apply, payment_webhook_rule)                */

proctype webhooks()
{
	byte p, t, ch;

end_idle:
	do
	:: atomic {
		nwebhook < MAX_WEBHOOK &&
		(g_st[1] != G_NONE || g_st[2] != G_NONE ||
		 PID_FRESH && (g_st[3] != G_NONE || g_st[4] != G_NONE));
		/* the gateway signs one webhook id per outcome it made */
		if
		:: g_st[1] != G_NONE -> p = 1
		:: g_st[2] != G_NONE -> p = 2
		:: PID_FRESH && g_st[3] != G_NONE -> p = 3
		:: PID_FRESH && g_st[4] != G_NONE -> p = 4
		fi;
		t = g_st[p];
		ch = g_ch[p];
		nwebhook++;
		if
		:: P.whs & (1 << p) -> skip /* duplicate: nothing */
		:: else ->
			P.whs = P.whs | (1 << p);
			if
			:: !P.p_on || P.p_pid != p -> skip /* unknown_reference */
			:: P.p_on && P.p_pid == p && G_WEBHOOK_OPEN(P.p_st) ->
				printf("MSC: webhook %d finishes payment %d\n", t, p);
				h_s = (t == G_CHARGED -> ST_SUCCEEDED : ST_FAILED);
				h_c = (t == G_CHARGED -> ch : 0);
				finish(h_s, h_c);
				h_s = 0;
				h_c = 0
			:: P.p_on && P.p_pid == p && !G_WEBHOOK_OPEN(P.p_st) ->
				/* ignored when it agrees; a contradiction is
				 * recorded, never applied */
				CHECK_P4(
				       (P.p_st == ST_SUCCEEDED && t == G_CHARGED ||
				        P.p_st == ST_FAILED && t == G_DECLINED))
			fi
		fi;
		p = 0; t = 0; ch = 0
	}
	od
}

/* ------------------------------------------------------------------ */
/* the operator: review resolve (cmd/review_resolve.c, store/review.c)  */
/* and chargeonce gc (cmd/gc.c, store/gc.c)                             */

proctype operator()
{
	byte pay, q, qch;
	bit succ;

end_idle:
	do
	:: /* review resolve PAYMENT_ID: it asks the gateway, judges the
	    * decision (payment_review_decide), and store_review_resolve
	    * finishes the payment only while it is still in review */
		atomic {
			WITH_REVIEW && P.p_on && P.p_st == ST_REVIEW;
			pay = P.p_pid;
			q = g_st[pay];
			qch = g_ch[pay];
			if
			:: q == G_NONE && clk >= K_RETAIN ->
				/* past the key retention an empty list is no
				 * evidence: the operator decides from the PSP's
				 * own records (--provider-charge-id) */
				if
				:: ch_of[pay] != 0 -> succ = 1; q = G_CHARGED; qch = ch_of[pay]
				:: else -> succ = 0
				fi
			:: else ->
				/* any decision; payment_review_decide refuses the
				 * ones the gateway's answer contradicts */
				if
				:: succ = 1
				:: succ = 0
				fi
			fi;
			if
			:: G_REVIEW_RULE(q, succ) ->
				printf("MSC: operator resolves payment %d as %d\n",
				       pay, succ);
				h_s = (succ -> ST_SUCCEEDED : ST_FAILED);
				h_c = (succ -> qch : 0);
				finish(h_s, h_c);
				h_s = 0;
				h_c = 0
			:: else -> skip
			fi;
			pay = 0; q = 0; qch = 0; succ = 0
		}
	:: /* store_gc_batch: final succeeded or failed keys, expired,
		 * whose results are all published */
		atomic {
			WITH_GC && gcs == 0 && G_GC_RETENTION && P.k_on && !P.k_tomb &&
			P.k_fin && (P.k_st == ST_SUCCEEDED || P.k_st == ST_FAILED) &&
			P.p_on && P.p_pid == P.k_pid &&
			(P.p_st == ST_SUCCEEDED || P.p_st == ST_FAILED) &&
			P.ob_pub == P.ob_n;
			gcs++;
			gc_done[P.k_req] = 1;
			P.ib = 0;
			if
			:: G_GC_TOMBSTONE -> P.k_tomb = 1
			:: else -> P.k_on = 0; P.p_on = 0
			fi;
			printf("MSC: gc collects the key\n")
		}
	od
}

/* ------------------------------------------------------------------ */
/* time, Kafka's own copies, the client's retry, crashes               */

proctype clock()
{
	byte a;

end_idle:
	do
	:: atomic {
		/* copies delivered again are consumed within a clock step
		 * (consumer lag is far below reconcile.review_after) */
		born && clk < K_EXPIRE && (avail & redo) == 0 && !rewinding;
		/* hours pass: every lease and every holder's view of one
		 * has run out (lease.duration, gateway.deadline and
		 * reconcile.backoff_max are minutes at most) */
		P.p_live = 0;
		a = 0;
		do
		:: a < NACT -> lok[a] = 0; a++
		:: else -> break
		od;
		a = 0;
		/* the standby lags by less than a clock step */
		if
		:: WITH_FAILOVER && failovers == 0 -> COPY_DB(S, P)
		:: else -> skip
		fi;
		clk++;
		if
		:: clk == K_EXPIRE -> intopic = 0 /* retention.ms passed */
		:: else -> skip
		fi;
		printf("MSC: time passes: clock %d\n", clk)
	}
	od
}

proctype env()
{
	byte a;

end_idle:
	do
	:: atomic {
		/* a lease runs out (nobody renewed it in time); every view
		 * of it, taken no later than its last renewal, too */
		P.p_on && P.p_st == ST_PROCESSING && P.p_live;
		P.p_live = 0;
		a = 0;
		do
		:: a < NACT -> lok[a] = 0; a++
		:: else -> break
		od;
		a = 0;
		printf("MSC: the lease expires (time)\n")
	}
	:: atomic {
		crashes < MAX_CRASH;
		crashes++;
		if
		:: a = 1
		:: NW > 1 -> a = 2
		:: a = RID
		:: WITH_FAILOVER -> a = RELAY /* the relay runs only then */
		fi;
		crash_req[a] = 1;
		if
		:: a == RID && NR > 1 -> crash_req[RID2] = 1 /* one process */
		:: else -> skip
		fi
	}
	:: atomic {
		/* change 3 with a frozen predecessor: a process started with
		 * W1's worker.id (another instance of its name) while W1 is
		 * stopped (not dead) expires the leases of every instance of
		 * the name at its start; W1's own view of its lease, a clock
		 * reading, still says it holds (counted as a crash) */
		WITH_TWIN && crashes < MAX_CRASH && P.p_on &&
		P.p_st == ST_PROCESSING && NAME_OF(P.p_own) == 1 && P.p_live;
		crashes++;
		P.p_live = 0;
		printf("MSC: a process with W1's worker.id starts: the name's leases expire\n")
	}
	:: atomic {
		/* Kafka delivers a copy again (a rebalance), while the
		 * topic still holds the message */
		redelivered < MAX_REDELIVER && (intopic & ~avail) != 0;
		redelivered++;
		if
		:: intopic & ~avail & EBIT(E1) -> avail = avail | EBIT(E1)
		:: intopic & ~avail & EBIT(E2) -> avail = avail | EBIT(E2)
		:: intopic & ~avail & EBIT(E3) -> avail = avail | EBIT(E3)
		fi;
		redo = redo | avail
	}
	:: atomic {
		/* gateway.key_retention after it stored an outcome, the
		 * gateway forgets the key */
#define FORGETS(p) (g_st[p] != G_NONE && clk >= g_at[p] + K_RETAIN)
		FORGETS(1) || FORGETS(2) || PID_FRESH && (FORGETS(3) || FORGETS(4));
		if
		:: FORGETS(1) -> a = 1
		:: FORGETS(2) -> a = 2
		:: PID_FRESH && FORGETS(3) -> a = 3
		:: PID_FRESH && FORGETS(4) -> a = 4
		fi;
		g_st[a] = G_NONE;
		g_ch[a] = 0;
		g_at[a] = 0;
		printf("MSC: the gateway forgets key %d\n", a);
		a = 0
	}
	od
}

/* A failover to the asynchronous standby: the commits since it last
 * caught up are lost; the operator then rewinds the consumer group
 * (docs/operations.md, "Replaying a partition"). */
proctype failover()
{
end_idle:
	do
	:: atomic {
		COPY_DB(S, P)
	}
	:: atomic {
		failovers == 0;
		failovers++;
		rewinding = 1;
		COPY_DB(P, S);
		printf("MSC: failover: the commits since the standby caught up are lost\n");
		break
	}
	od;
	/* the operator's runbook, before the clock moves on: stop the
	 * consumers, rewind the group to before the lost commits
	 * (chargeonce replay refuses while the group has members), start
	 * them again: every message still in the topic is delivered again.
	 * A consumer that holds one goes on with it at the same time (it
	 * drains, or was killed and its copy is this one): more than the
	 * runbook allows, never less. */
	atomic {
		avail = avail | intopic;
		redo = redo | intopic;
		done = 0;
		rewinding = 0;
		printf("MSC: the group is rewound\n")
	}
}

/* liveness (p6): the key and its payment are final in the database,
 * every request published has its answer on the results topic, and
 * every result row is published */
#define ANSWERED(r, ev) (!(pubd & EBIT(ev)) || pubfinal[r])
#define DONE                                                                   \
	(P.k_on && P.k_fin && P.p_on && P.p_st != ST_PROCESSING &&            \
	 pubfinal[RA] && ANSWERED(RB, E3) && P.ob_pub == P.ob_n)

/* []<> rather than <>[]: the same here (a failover is the only thing that
 * undoes DONE, and it happens once), and a claim whose acceptance state
 * loops on itself, which pan's weak fairness needs to see a stall */
ltl p6 { [] <> DONE }

init
{
	atomic {
		/* E2, the client's retry, is published from the start: a
		 * consumer may take it at any later moment, after gc too */
		pubd = EBIT(E1) | (WITH_RETRY -> EBIT(E2) : 0) |
		       (WITH_B -> EBIT(E3) : 0);
		intopic = pubd;
		avail = pubd;
		S.ob_pub = 0;
		run consumer(1);
		if
		:: NW > 1 -> run consumer(2)
		:: else -> skip
		fi;
		run reconciler(RID);
		if
		:: NR > 1 -> run reconciler(RID2)
		:: else -> skip
		fi;
		if
		:: WITH_FAILOVER -> run relay()
		:: else -> skip
		fi;
		run webhooks();
		run operator();
		run clock();
		run env();
		if
		:: WITH_FAILOVER -> run failover()
		:: else -> skip
		fi
	}
}
