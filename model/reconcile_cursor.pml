/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile_cursor.pml: the reconciler's cursor on the payments' lease
 * index, checked with spin (model/README.md, "The reconciler's cursor").
 * chargeonce.pml's reconciler takes over an expired lease at any moment;
 * this model is the part it leaves out: how the reconciler reads only
 * [through, now()) of payments_lease_idx (0029, 0030), which holds every
 * payment, final ones too, and still finds every expired processing
 * payment although leases are written by transactions that start long
 * before they commit.
 *
 * Time is the server's clock, a few ticks (clock, from C0 to C0 + NTICK;
 * 0 is -infinity). NTX writer transactions write leases of processing
 * payments (NP of them), each atomic at its commit, in any interleaving
 * with the others and with the clock: a transaction reads the clock
 * (tx_now: in the code the clock_timestamp() its writing statement reads
 * while it runs), then appears in the barrier's source, pg_locks (at
 * most DELTA ticks later; in the code its lock on payments, taken before
 * the statement runs, so the gap is nil), then, after any time, it
 * commits one of
 *   claim    INSERT of a processing payment, lease tx_now + LEASE
 *            (nothing if the payment exists: ON CONFLICT DO NOTHING);
 *   renew    a processing payment's lease = tx_now + LEASE; a takeover
 *            writes the same with a stronger guard (lease < tx_now): the
 *            renewal covers it;
 *   release  a processing payment with lease >= tx_now: lease =
 *            tx_now - R (store_leases_release: clock_timestamp() - 1
 *            ms);
 *   settle   the payment is final (its lease stays: 0029), irrelevant to
 *            the cursor from then on;
 * or rolls back. What a transaction writes and on which payment is
 * chosen at its commit, as nothing reads it before (pg_locks shows only
 * its vxid), and its WHERE is evaluated then, on the payment as it is:
 * the row lock serializes the writers of a row as the commits do here.
 *
 * The cursor's row, reconcile_cursor (through, barrier_at,
 * barrier_vxids), starts at -infinity with no barrier. NREC reconcilers
 * each run passes of three statements, each its own snapshot taken at its
 * start, the statements of the other actors in between:
 *   CHK   reads barrier_at and whether the barrier's transactions have
 *         all ended (barrier_vxids NULL, or none of them in pg_locks);
 *   ADV   only if they have: one UPDATE under READ COMMITTED. (a) its
 *         now() and its snapshot of payments; (b) on the latest version
 *         of the cursor's row, only where barrier_at IS NOT DISTINCT FROM
 *         what CHK read: through = greatest(through, least(barrier_at,
 *         the least lease of a processing payment in [through,
 *         barrier_at) in the snapshot (a))) (through stays with no
 *         barrier yet), barrier_at = (a)'s now() - MARGIN, barrier_vxids
 *         = the vxids in pg_locks now (but its own);
 *   TAKE  the takeover of the processing payments with through <= lease
 *         < now() (through read in its snapshot): each gets lease now() +
 *         LEASE and is found.
 * A pass may end after any statement (an error, a crash and a restart):
 * each statement commits on its own, so the next pass is a new CHK. A
 * reconciler may stall between two statements for as long as the others
 * need. CHK writes nothing: one that finds a transaction still running
 * is no step of the model (its pass goes on to TAKE). TAKE is one atomic
 * step, at any moment between two passes, and by default writes nothing
 * (TAKE_WRITES=0): what its takeover writes, now() + LEASE, a writer's
 * renewal writes too, as a transaction with the gap above (a takeover in
 * flight is one of them), and a TAKE that writes nothing is where P12 is
 * checked at every moment it could run; TAKE_WRITES=1 (run by hand)
 * holds as well.
 *
 * The properties: P11, at every commit of a writer, ADV or TAKE (nothing
 * else writes a lease, a status or through), every committed processing
 * payment's lease is at or after through; P12, at every TAKE, every
 * committed processing payment whose lease is before TAKE's now() is in
 * [through, now()), so TAKE finds it (P11's consequence, stated where it
 * is used).
 *
 * The writers are alike, and so are the payments until claimed: writer
 * t starts only after writer t - 1 did, payment p is claimed only after
 * payment p - 1 was (any other order is the same states up to a
 * renaming).
 *
 * The guards of the real code are G_* macros (and MARGIN): a mutant
 * (model/mutants/reconcile_cursor_*) redefines one and includes this
 * file.
 *
 * Not modelled: the index itself (a range of lease values is what it
 * reads), what becomes of a final payment (review, a finish, gc: TAKE
 * skips it, and no property is about it), owners
 * and epochs (chargeonce.pml's: any writer may renew, release or settle
 * any payment, more than the fences let through), the takeover's LIMIT
 * and SKIP LOCKED (they delay, never skip: the next pass reads from the
 * same cursor), a release of several payments (one transaction, each
 * payment's write as alone), a clock that goes back, two-phase commit,
 * failovers, liveness (the clock is bounded).
 */

#ifndef NTX
#define NTX 3 /* writer transactions (at most 4) */
#endif
#ifndef NP
#define NP 2 /* payments (at most 4) */
#endif
#ifndef NREC
#define NREC 2 /* reconcilers */
#endif
#ifndef NTICK
#define NTICK 3 /* clock steps */
#endif
#ifndef LEASE
#define LEASE 1 /* lease.duration, >= 1 tick (seconds in reality) */
#endif
#ifndef R
#define R 1 /* a release's lease: tx_now - R (1 ms in reality) */
#endif
#ifndef TAKE_WRITES
#define TAKE_WRITES 0 /* TAKE writes the leases it finds (else the writers' renewals do) */
#endif
#ifndef DELTA
#define DELTA 1 /* ticks from a transaction's now() to its vxid in pg_locks */
#endif
/* the barrier's margin: barrier_at = ADV's now() - MARGIN (1 s in the
 * code); safe when MARGIN >= R + DELTA */
#ifndef MARGIN
#define MARGIN (R + DELTA)
#endif

/* -DONLY=n: only property n is checked (a mutant's run) */
#ifndef ONLY
#define ONLY 0
#endif

/* the properties (the name is in spin's report of a failed assertion) */
bit P11_lease_at_or_after_cursor = 1;
bit P12_take_finds_every_expired = 1;
#if ONLY == 0 || ONLY == 11
#define CHECK_P11(c) assert(P11_lease_at_or_after_cursor && (c))
#else
#define CHECK_P11(c) skip
#endif
#if ONLY == 0 || ONLY == 12
#define CHECK_P12(c) assert(P12_take_finds_every_expired && (c))
#else
#define CHECK_P12(c) skip
#endif

#define NEG_INF 0  /* -infinity */
#define INF 255    /* a snapshot's "not processing" */
#define C0 4       /* the clock's first value: room below for the margin */
#define MAXTX 4
/* no barrier is ever above C0 + NTICK - MARGIN: a snapshot's lease at or
 * above it is never in ADV's range [through, barrier_at), and the
 * snapshot keeps it as INF (fewer states, the same moves) */
#define SNAP_MAX (C0 + NTICK - MARGIN)

byte clock = C0;

/* the payments, committed: status and lease_expires_at */
#define P_NONE 0  /* not inserted */
#define P_PROC 1  /* processing */
#define P_FINAL 2 /* settled */
byte pst[NP];
byte lease[NP];

/* the writer transactions */
#define T_IDLE 0    /* not started */
#define T_PENDING 1 /* started (tx_now taken), its vxid not in pg_locks yet */
#define T_OPEN 2    /* its vxid in pg_locks */
#define T_ENDED 3   /* committed or rolled back */
byte tph[MAXTX];
byte txnow[MAXTX];

/* reconcile_cursor */
byte through = NEG_INF; /* through */
bit bnull = 1;          /* barrier_at IS NULL (and barrier_vxids) */
byte bat = 0;           /* barrier_at */
byte bset = 0;          /* barrier_vxids: a bit per writer transaction */

#define BIT(i) (1 << (i))

/* the clock may step only if no transaction waits for its vxid longer
 * than DELTA ticks */
#define PEND_OK(t) ((t) >= NTX || tph[t] != T_PENDING || clock + 1 <= txnow[t] + DELTA)
#define TICK_OK (PEND_OK(0) && PEND_OK(1) && PEND_OK(2) && PEND_OK(3))

/* CHK: a transaction of the barrier has ended (its vxid left pg_locks;
 * by then its commit is visible to every later snapshot) */
#ifndef G_BARRIER_ENDED
#define G_BARRIER_ENDED(t) (!(bset & BIT(t)) || tph[t] == T_ENDED)
#endif
#define ENDED(t) ((t) >= NTX || G_BARRIER_ENDED(t))
#define BARRIER_ENDED (bnull || (ENDED(0) && ENDED(1) && ENDED(2) && ENDED(3)))
/* ADV's WHERE: barrier_at IS NOT DISTINCT FROM the value CHK read */
#ifndef G_ADV_CAS
#define G_ADV_CAS (bnull == c_null && bat == c_at)
#endif
/* ADV's SET reads barrier_at on the cursor's row as it is then, which
 * the compare-and-swap makes the value CHK read (-DADV_BAT=c_at
 * -DADV_BNULL=c_null: the value CHK read, passed as a parameter) */
#ifndef ADV_BAT
#define ADV_BAT bat
#endif
#ifndef ADV_BNULL
#define ADV_BNULL bnull
#endif
/* ADV: through stops at the least lease of a processing payment below
 * the barrier (in ADV's snapshot) */
#ifndef G_ADV_MIN
#define G_ADV_MIN 1
#endif
/* the barrier checked in ADV's own statement (its WHERE), after ADV's
 * snapshot was taken, instead of in CHK before it */
#ifndef G_CHECK_IN_ADV
#define G_CHECK_IN_ADV 0
#endif

/* P11 on the committed state */
inline check_cursor()
{
	i = 0;
	do
	:: i == NP -> break
	:: i < NP ->
		CHECK_P11(pst[i] != P_PROC || lease[i] >= through);
		i++
	od;
	i = 0
}

proctype writer(byte t)
{
	byte p, i;

	/* the writers are alike: they start in the order of their numbers
	 * (any other order is the same up to a renaming) */
	d_step {
		(t == 0 || tph[t - 1] != T_IDLE);
		tph[t]   = T_PENDING;
		txnow[t] = clock;
		printf("MSC: tx %d starts: now() %d\n", t, clock)
	};
	d_step {
		tph[t] = T_OPEN;
		printf("MSC: tx %d: its vxid is in pg_locks (clock %d)\n", t, clock)
	};
	/* its commit: what it writes, on which payment (one step: chosen and
	 * done at once) */
	atomic {
		if
		/* claim: the next payment (they are claimed in order) */
		:: d_step {
			p = 0;
			do
			:: p < NP && pst[p] != P_NONE -> p++
			:: else -> break
			od;
			if
			:: p < NP ->
				pst[p]   = P_PROC;
				lease[p] = txnow[t] + LEASE;
				printf("MSC: tx %d commits: claims payment %d, lease %d (through %d)\n",
				       t, p, lease[p], through)
			:: else ->
				printf("MSC: tx %d commits: no payment left to claim\n", t)
			fi;
			tph[t] = T_ENDED;
			check_cursor();
			p = 0
		}
		:: select (p : 0 .. NP - 1);
		   if
		   /* renew (or take over) */
		   :: d_step {
			if
			:: pst[p] == P_PROC ->
				lease[p] = txnow[t] + LEASE;
				printf("MSC: tx %d commits: renews payment %d, lease %d (through %d)\n",
				       t, p, lease[p], through)
			:: else ->
				printf("MSC: tx %d commits: payment %d not processing, nothing\n", t, p)
			fi;
			tph[t] = T_ENDED;
			check_cursor();
			p = 0
		}
		   /* release */
		   :: d_step {
			if
			:: pst[p] == P_PROC && lease[p] >= txnow[t] ->
				lease[p] = txnow[t] - R;
				printf("MSC: tx %d commits: releases payment %d, lease %d (through %d)\n",
				       t, p, lease[p], through)
			:: else ->
				printf("MSC: tx %d commits: payment %d not released\n", t, p)
			fi;
			tph[t] = T_ENDED;
			check_cursor();
			p = 0
		}
		   /* settle */
		   :: d_step {
			if
			:: pst[p] == P_PROC ->
				pst[p] = P_FINAL;
				printf("MSC: tx %d commits: settles payment %d\n", t, p)
			:: else ->
				printf("MSC: tx %d commits: payment %d not processing, nothing\n", t, p)
			fi;
			tph[t] = T_ENDED;
			check_cursor();
			p = 0
		}
		   fi
		/* rollback */
		:: d_step {
			tph[t] = T_ENDED;
			printf("MSC: tx %d rolls back\n", t)
		}
		fi
	}
}

proctype clock_ticks()
{
	do
	:: d_step {
		clock < C0 + NTICK && TICK_OK;
		clock++;
		printf("MSC: clock %d\n", clock)
	}
	:: clock == C0 + NTICK -> break
	od
}

/* a reconciler's locals back to 0 after a pass's ADV */
inline adv_done()
{
	a_now  = 0;
	v      = 0;
	c_null = 0;
	c_at   = 0;
	i      = 0;
	do
	:: i == NP -> break
	:: i < NP -> snap[i] = 0; i++
	od;
	i = 0
}

/* A pass is CHK, then ADV if CHK found the barrier's transactions ended,
 * then TAKE. CHK writes nothing: a CHK that finds a transaction still
 * running is no step of the model (its pass goes on to TAKE), and TAKE,
 * at the top of the loop, is the TAKE of that pass or of the pass whose
 * ADV just ended or failed. */
proctype reconciler(byte r)
{
	bit c_null;    /* CHK: barrier_at IS NULL */
	byte c_at;     /* CHK: barrier_at */
	byte a_now;    /* ADV (a): now() */
	byte snap[NP]; /* ADV (a): a processing payment's lease (below
	                * SNAP_MAX), else INF */
	byte i, v;

	do
	/* TAKE: [through, now()) in one snapshot, through read in it */
	:: d_step {
		i = 0;
		do
		:: i == NP -> break
		:: i < NP ->
			if
			:: pst[i] == P_PROC && lease[i] < clock ->
				CHECK_P12(lease[i] >= through);
				if
				:: lease[i] >= through ->
					if
					:: TAKE_WRITES -> lease[i] = clock + LEASE
					:: else -> skip
					fi;
					printf("MSC: rec %d TAKE (now() %d, through %d) finds payment %d\n",
					       r, clock, through, i)
				:: else -> skip
				fi
			:: else -> skip
			fi;
			i++
		od;
		check_cursor()
	}
	/* CHK: the barrier's transactions have all ended */
	:: d_step {
		G_CHECK_IN_ADV || BARRIER_ENDED;
		c_null = bnull;
		c_at   = bat;
		printf("MSC: rec %d CHK: barrier %d (null %d) ended\n",
		       r, c_at, c_null)
	};
	   /* ADV (a): its now() and its snapshot of payments */
	   d_step {
		a_now = clock;
		i     = 0;
		do
		:: i == NP -> break
		:: i < NP ->
			if
			:: pst[i] == P_PROC && lease[i] < SNAP_MAX -> snap[i] = lease[i]
			:: else -> snap[i] = INF
			fi;
			i++
		od;
		i = 0;
		printf("MSC: rec %d ADV starts: now() %d\n", r, a_now)
	};
	   if
	   /* ADV (b): its WHERE and SET on the latest version of the
	    * cursor's row */
	   :: d_step {
		if
		:: G_ADV_CAS && (!G_CHECK_IN_ADV || BARRIER_ENDED) ->
			if
			:: ADV_BNULL -> skip
			:: else ->
				v = ADV_BAT;
				i = 0;
				do
				:: i == NP -> break
				:: i < NP ->
					if
					:: G_ADV_MIN && snap[i] >= through &&
					   snap[i] < ADV_BAT && snap[i] < v ->
						v = snap[i]
					:: else -> skip
					fi;
					i++
				od;
				if
				:: v > through -> through = v
				:: else -> skip
				fi
			fi;
			bnull = 0;
			bat   = a_now - MARGIN;
			bset  = 0;
			i     = 0;
			do
			:: i == NTX -> break
			:: i < NTX ->
				if
				:: tph[i] == T_OPEN -> bset = bset | BIT(i)
				:: else -> skip
				fi;
				i++
			od;
			printf("MSC: rec %d ADV: through %d, barrier %d, vxids %d\n",
			       r, through, bat, bset)
		:: else ->
			printf("MSC: rec %d ADV: the barrier moved (or runs): nothing\n", r)
		fi;
		check_cursor();
		adv_done()
	}
	   /* ADV fails (an error, a crash): the pass ends */
	   :: d_step { adv_done() }
	   fi
	od
}

init {
	atomic {
		byte k = 0;
		do
		:: k == NTX -> break
		:: k < NTX -> run writer(k); k++
		od;
		k = 0;
		do
		:: k == NREC -> break
		:: k < NREC -> run reconciler(k); k++
		od;
		run clock_ticks()
	}
}
