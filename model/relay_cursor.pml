/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay_cursor.pml: the outbox relay's cursor and its overlapped rounds,
 * checked with spin (model/README.md, "The relay's cursor").
 * chargeonce.pml publishes a result in the transaction that writes it
 * (its A8); this model is the part it leaves out: how the relay finds
 * what to publish when outbox ids are drawn at insert and commit in any
 * order.
 *
 * W writer transactions each insert one outbox row (a settle, a finish,
 * an answer to a copy): each takes its RowExclusiveLock on outbox, then
 * draws its id from the sequence (one at a time: CACHE 1), then commits
 * or aborts, in any interleaving with the others. Writer w writes key
 * w % NK, and a key's later row is written only by a transaction that
 * started after its earlier one ended (a replay reads the committed
 * outcome; sql/0001's "Ordering"), so a key's rows are in id order.
 *
 * Since sql/0027 the outbox row is never written on its way out: what is
 * published lives in the cursor's row, relay_cursor.through and
 * relay_cursor.done (the ids published above through). So the model
 * keeps apart what the outbox row is (st[]: not drawn, committed,
 * aborted, parked) and what the cursor's row says is published: row i
 * is published when it is not parked and i <= through or i is in done
 * (co_outbox_published). Whether the broker did acknowledge the row is
 * a ghost (acked, ever), which only the properties read.
 *
 * One relay (src/relay/round.c, src/store/relay_sql.c): fetches
 * (store_relay_fetch) in two statements, with nothing of the relay's own
 * between them: reads through and done from one version of the cursor's
 * row (cursor_read), then the first row of each key above through that
 * is committed, not parked and not in done, unless that row is in flight
 * (a key whose first row is in flight offers nothing); a row in flight
 * is acknowledged and marked, its id added to done in one update of the
 * cursor's row (store_relay_mark), or fails and stays unpublished;
 * several rounds overlap (any set of rows in flight at once); it may
 * crash, forgetting what is in flight; and it moves the cursor in three
 * statements (store_relay_advance): (1) have all the barrier's
 * transactions ended, the barrier's sequence value and gen; (2) the
 * sequence's value now; (3) through moves to the barrier's value or just
 * below the first row above it that is committed, not parked and not in
 * done, whichever is lower, done drops the ids through passed, the new
 * barrier is (2)'s value and the transactions holding a
 * RowExclusiveLock on outbox now; nothing changes if another advance
 * moved the barrier or a row was opened again (gen) since (1).
 *
 * Every statement is one atomic step, as it reads one snapshot, but for
 * (3), an UPDATE of the cursor's row under READ COMMITTED: which outbox
 * rows are committed and which are parked it reads in its snapshot
 * (3a); through, done, gen and the barrier it reads on the latest
 * version of the cursor's row, re-checked when another transaction
 * updated it after the snapshot (3b). So whether a row is published is
 * read at (3b). The guards of the real code are G_* macros: a mutant
 * (model/mutants/relay_*) redefines one and includes this file.
 *
 * With MAX_REOPEN > 0 (scenario relay_reopen): the relay parks a row in
 * flight that cannot be produced (store_relay_park, at most MAX_PARK;
 * only a row not published), and an operator opens a row again,
 * republishing a published one or unparking a parked one (relay
 * --republish-*, --unpark): co_relay_reopen (sql/0027, called by the
 * republish and by the trigger outbox_reopen at an unpark) in one update
 * of the cursor's row moves into done the ids between the row and
 * through (less the row), lowers through below the row, takes the row
 * out of done and bumps gen; (3a) and (3b) are then two steps. P10 is
 * about first publications of rows never parked: a republished row goes
 * out again after later ones, an unparked one after the later rows of
 * its key, by design (docs/relay.md).
 *
 * Not modelled: shards (a relay holds all keys), the fetch's window and
 * limit (they delay, never reorder), several relays, relay_progress and
 * the retention (they read the cursor, never move it), published_at of
 * the rows published before 0027.
 */

#ifndef W
#define W 4 /* writer transactions, one row each: ids 1..W */
#endif
#define NK 2 /* message keys */
#ifndef MAX_CRASH
#define MAX_CRASH 1
#endif
#ifndef MAX_REOPEN
#define MAX_REOPEN 0 /* rows an operator opens again */
#endif
#ifndef MAX_PARK
#define MAX_PARK 0 /* rows the relay parks */
#endif

/* -DONLY=n: only property n is checked (a mutant's run) */
#ifndef ONLY
#define ONLY 0
#endif

/* the properties (the name is in spin's report of a failed assertion) */
bit P8_row_committed_above_cursor   = 1;
bit P9_cursor_passes_only_published = 1;
bit P10_key_order_kept              = 1;
#if ONLY == 0 || ONLY == 8
#define CHECK_P8(c) assert(P8_row_committed_above_cursor && (c))
#else
#define CHECK_P8(c) skip
#endif
#if ONLY == 0 || ONLY == 9
#define CHECK_P9(c) assert(P9_cursor_passes_only_published && (c))
#else
#define CHECK_P9(c) skip
#endif
#if ONLY == 0 || ONLY == 10
#define CHECK_P10(c) assert(P10_key_order_kept && (c))
#else
#define CHECK_P10(c) skip
#endif

/* the outbox row's state, by id (published or not is the cursor's) */
#define R_NONE 0      /* not drawn, or drawn by a transaction still open */
#define R_COMMITTED 1 /* committed, not parked */
#define R_ABORTED 2   /* its transaction rolled back: never visible */
#define R_PARKED 3    /* committed and parked (parked_at set) */

byte seq = 0;         /* the sequence's last value */
byte st[W + 1];       /* st[id] */
byte rkey[W + 1];     /* rkey[id] */
bit hold[W];          /* writer w holds its RowExclusiveLock on outbox */
bit ended[W];         /* writer w's transaction has ended */
byte nended = 0;      /* writers ended */
byte npend = 0;       /* ghost: rows committed, not parked, not acked */
byte acked = 0;       /* ghost: a bit per id, the broker acknowledged the
                       * row since it was committed or last opened again */
bit ever[W + 1];      /* ghost: ever[id], acknowledged at least once */
bit wasparked[W + 1]; /* ghost: wasparked[id], parked at least once */
byte gen = 0;         /* relay_cursor.gen */
bit opdone = (MAX_REOPEN == 0); /* the operator has finished */
byte through = 0;     /* relay_cursor.through */
byte done = 0;        /* relay_cursor.done: a bit per id */
bit bvalid = 0;       /* relay_cursor.barrier_seq IS NOT NULL */
byte bseq = 0;        /* relay_cursor.barrier_seq */
byte bset = 0;        /* relay_cursor.barrier_vxids: a bit per writer */

#define BIT(i) (1 << (i))
/* the bits of ids 0..t: done - int8multirange(int8range(NULL, t, '[]')) */
#define UPTO(t) (BIT((t) + 1) - 1)
/* co_outbox_published, on the cursor's row as it is now */
#define PUBLISHED(i) (st[i] == R_COMMITTED && ((i) <= through || (done & BIT(i))))

/* (1): the barrier's transactions have all ended */
#ifndef G_BARRIER_ENDED
#define G_BARRIER_ENDED(w) (!(bset & BIT(w)) || ended[w])
#endif
/* store_relay_fetch: the first unpublished row of a key is offered only
 * if it is not in flight (the in-flight ids are excluded after the
 * first row of each key is taken, never before) */
#ifndef G_FETCH_SKIPS_IN_FLIGHT_FIRST
#define G_FETCH_SKIPS_IN_FLIGHT_FIRST 0
#endif
/* ADVANCE_SQL: through stops below the first row above it that is
 * neither in done nor parked ("least($1, coalesce((SELECT o.id - 1 ...),
 * $1))") */
#ifndef G_CURSOR_STOPS_AT_UNPUBLISHED
#define G_CURSOR_STOPS_AT_UNPUBLISHED 1
#endif
/* co_relay_reopen (sql/0027): through = least(through, lo - 1), and the
 * ids between that through had passed go into done */
#ifndef G_REOPEN_LOWERS_CURSOR
#define G_REOPEN_LOWERS_CURSOR 1
#endif
/* co_relay_reopen's "- own": the row opened again leaves done */
#ifndef G_REOPEN_DROPS_OWN
#define G_REOPEN_DROPS_OWN 1
#endif
/* ADVANCE_SQL's "c.gen = $2": an advance computed before a row was
 * opened again changes nothing */
#ifndef G_ADVANCE_CHECKS_GEN
#define G_ADVANCE_CHECKS_GEN 1
#endif
/* store_relay_advance reads the sequence (2) before the writers (3) */
#ifndef G_WRITERS_BEFORE_SEQ
#define G_WRITERS_BEFORE_SEQ 0
#endif
#if MAX_REOPEN > 0
#define ADV3_BEGIN
#define ADV3_END
#else
#define ADV3_BEGIN atomic {
#define ADV3_END }
#endif

proctype writer(byte w)
{
	byte id;

	/* a key's later row: only after its earlier one's transaction */
	(w < NK || ended[w - NK]);
	d_step {
		hold[w] = 1; /* the INSERT's lock, taken before its id is drawn */
		printf("MSC: writer %d takes its lock on outbox\n", w)
	}
	d_step {
		seq++;
		id       = seq;
		rkey[id] = w % NK;
		printf("MSC: writer %d draws id %d (key %d)\n", w, id, w % NK)
	}
	if
	:: d_step {
		CHECK_P8(id > through);
		st[id]  = R_COMMITTED;
		npend++;
		hold[w] = 0;
		ended[w] = 1;
		nended++;
		printf("MSC: writer %d commits id %d (through %d)\n", w, id, through)
	}
	:: d_step {
		st[id]  = R_ABORTED;
		hold[w] = 0;
		ended[w] = 1;
		nended++;
		printf("MSC: writer %d rolls back id %d\n", w, id)
	}
	fi
}

/* every committed, unparked row at or below the cursor was acknowledged
 * since it was committed or last opened again */
inline check_cursor()
{
	i = 1;
	do
	:: i > W -> break
	:: i <= W ->
		CHECK_P9(i > through || st[i] != R_COMMITTED ||
			 (acked & BIT(i)));
		i++
	od
}

proctype relay()
{
	byte thr, tdone; /* the cursor's row as the fetch read it */
	byte infl = 0;   /* the rows in flight: a bit per id */
	byte crashes = 0;
	byte parks = 0;
	byte a_gen, a_cand; /* (1)'s gen; (3a)'s committed, unparked rows, a bit per id */
	byte astep = 0;  /* store_relay_advance: 0 idle, 1 after (1), 2 after (2) */
	bit a_bvalid;
	byte a_bseq, a_seq, a_set, w, i, k, r, first;
	bit resolved;

	do
	/* store_relay_fetch: cursor_read (through and done, one version of
	 * the cursor's row), then the fetch's statement (one snapshot of the
	 * outbox); the relay does nothing else in between */
	:: d_step {
		thr   = through;
		tdone = done;
		printf("MSC: relay reads the cursor: through %d, done %d\n",
		       thr, tdone)
	};
	   d_step {
		k = 0;
		do
		:: k == NK -> break
		:: k < NK ->
			first = 0;
			i     = thr + 1;
			do
			:: i > W -> break
			:: i <= W && first == 0 && rkey[i] == k && i <= seq &&
			   st[i] == R_COMMITTED && !(tdone & BIT(i)) &&
			   (!G_FETCH_SKIPS_IN_FLIGHT_FIRST || !(infl & BIT(i))) ->
				first = i;
				i++
			:: else -> i++
			od;
			if
			:: first != 0 && !(infl & BIT(first)) ->
				infl = infl | BIT(first);
				printf("MSC: relay fetches id %d (key %d)\n", first, k)
			:: else -> skip
			fi;
			k++
		od;
		k = 0; i = 0; first = 0; thr = 0; tdone = 0
	}
	/* a row in flight acknowledged, and marked: store_relay_mark adds
	 * its id to done (if above through and not in it), one update of the
	 * cursor's row */
	:: infl != 0 ->
		select (r : 1 .. W);
		if
		:: (infl & BIT(r)) ->
			d_step {
				i = 1;
				do
				:: i >= r -> break
				:: i < r ->
					CHECK_P10(ever[r] || wasparked[r] ||
						  rkey[i] != rkey[r] ||
						  st[i] != R_COMMITTED || ever[i] ||
						  wasparked[i]);
					i++
				od;
				if
				:: st[r] == R_COMMITTED && !(acked & BIT(r)) ->
					npend--
				:: else -> skip
				fi;
				acked   = acked | BIT(r);
				ever[r] = 1;
				if
				:: r > through -> done = done | BIT(r)
				:: else -> skip
				fi;
				infl = infl & ~BIT(r);
				printf("MSC: relay publishes id %d (key %d): done %d\n",
				       r, rkey[r], done);
				i = 0
			}
		:: else -> skip
		fi;
		r = 0
	/* a row in flight failed: it stays unpublished */
	:: infl != 0 ->
		select (r : 1 .. W);
		if
		:: (infl & BIT(r)) ->
			d_step {
				infl = infl & ~BIT(r);
				printf("MSC: relay: id %d failed\n", r)
			}
		:: else -> skip
		fi;
		r = 0
	/* a row in flight that can never be produced: parked, if it is not
	 * published (store_relay_park) */
	:: parks < MAX_PARK && infl != 0 ->
		select (r : 1 .. W);
		if
		:: (infl & BIT(r)) ->
			d_step {
				if
				:: st[r] == R_COMMITTED && !PUBLISHED(r) ->
					st[r]        = R_PARKED;
					wasparked[r] = 1;
					if
					:: !(acked & BIT(r)) -> npend--
					:: else -> skip
					fi;
					printf("MSC: relay parks id %d\n", r)
				:: else ->
					printf("MSC: relay: id %d not parked (published)\n", r)
				fi;
				parks++;
				infl = infl & ~BIT(r)
			}
		:: else -> skip
		fi;
		r = 0
	/* the relay crashes and restarts: nothing in flight */
	:: crashes < MAX_CRASH ->
		d_step {
			crashes++;
			infl  = 0;
			astep = 0;
			printf("MSC: relay crashes\n")
		}
	/* (1) */
	:: astep == 0 ->
		d_step {
			resolved = 1;
			w        = 0;
			do
			:: w == W -> break
			:: w < W ->
				resolved = resolved && G_BARRIER_ENDED(w);
				w++
			od;
			if
			:: resolved ->
				a_bvalid = bvalid;
				a_bseq   = bseq;
				a_gen    = gen;
				astep    = 1;
				printf("MSC: relay (1): the barrier's writers have ended\n")
			:: else -> skip
			fi;
			if
			:: G_WRITERS_BEFORE_SEQ ->
				a_set = 0;
				w     = 0;
				do
				:: w == W -> break
				:: w < W ->
					if
					:: hold[w] -> a_set = a_set | BIT(w)
					:: else -> skip
					fi;
					w++
				od
			:: else -> skip
			fi;
			w = 0; resolved = 0
		}
	/* (2) */
	:: astep == 1 ->
		d_step {
			a_seq = seq;
			astep = 2;
			printf("MSC: relay (2): the sequence is at %d\n", a_seq)
		}
	/* (3): it reads the outbox in its snapshot (3a: which rows are
	 * committed, which parked), then updates relay_cursor, re-checking
	 * its WHERE and computing through and done on the row as it is then
	 * (3b: gen, the barrier, through, done); without an operator nothing
	 * else writes that row in between (the marks are the relay's own
	 * statements), and the two are one step */
	:: astep == 2 ->
		ADV3_BEGIN
		d_step {
			a_cand = 0;
			i      = 1;
			do
			:: i > W -> break
			:: i <= W && st[i] == R_COMMITTED ->
				a_cand = a_cand | BIT(i);
				i++
			:: else -> i++
			od;
			if
			:: !G_WRITERS_BEFORE_SEQ ->
				a_set = 0;
				w     = 0;
				do
				:: w == W -> break
				:: w < W ->
					if
					:: hold[w] -> a_set = a_set | BIT(w)
					:: else -> skip
					fi;
					w++
				od
			:: else -> skip
			fi;
			printf("MSC: relay (3a) reads the outbox: committed, not parked %d\n",
			       a_cand);
			i = 0;
			w = 0
		};
		d_step {
			if
			:: bvalid == a_bvalid && bseq == a_bseq &&
			   (!G_ADVANCE_CHECKS_GEN || gen == a_gen) ->
				if
				:: a_bvalid ->
					first = 0;
					i     = through + 1;
					do
					:: i > W -> break
					:: i <= W && first == 0 &&
					   (a_cand & BIT(i)) && !(done & BIT(i)) ->
						first = i; i++
					:: else -> i++
					od;
					if
					:: G_CURSOR_STOPS_AT_UNPUBLISHED && first != 0 &&
					   first - 1 < a_bseq ->
						k = first - 1
					:: else -> k = a_bseq
					fi;
					if
					:: k > through -> through = k
					:: else -> skip
					fi
				:: else -> skip
				fi;
				done   = done & ~UPTO(through);
				bvalid = 1;
				bseq   = a_seq;
				bset   = a_set;
				printf("MSC: relay (3b): the cursor at %d, done %d, barrier %d and writers %d\n",
				       through, done, bseq, bset)
			:: else ->
				printf("MSC: relay (3b): the barrier or gen moved: nothing changes\n")
			fi;
			astep = 0;
			check_cursor();
			i = 0; k = 0; w = 0; first = 0;
			a_bvalid = 0; a_bseq = 0; a_seq = 0; a_set = 0;
			a_gen = 0; a_cand = 0
		}
		ADV3_END
	/* done: every writer ended, nothing left to publish (a row lost
	 * below the cursor or in done keeps npend above 0: the relay never
	 * ends, and P8 or P9 has failed first) */
	:: infl == 0 && nended == W && npend == 0 && opdone -> break
	od
}

/* relay --republish-* or --unpark: a published or parked row opened
 * again; co_relay_reopen (sql/0027) in the same transaction, one update
 * of the cursor's row */
proctype operator()
{
	byte r, n = 0;

	do
	:: n < MAX_REOPEN ->
		select (r : 1 .. W);
		/* what the republish or the unpark selects, and the reopen, in
		 * one transaction */
		d_step {
			if
			:: PUBLISHED(r) || st[r] == R_PARKED ->
				if
				:: st[r] == R_PARKED || (acked & BIT(r)) -> npend++
				:: else -> skip
				fi;
				st[r] = R_COMMITTED;
				acked = acked & ~BIT(r);
				if
				:: G_REOPEN_LOWERS_CURSOR && through >= r ->
					done    = done | (UPTO(through) & ~UPTO(r - 1));
					through = r - 1
				:: else -> skip
				fi;
				if
				:: G_REOPEN_DROPS_OWN -> done = done & ~BIT(r)
				:: else -> skip
				fi;
				gen++;
				n++;
				printf("MSC: operator opens id %d again (cursor %d, done %d, gen %d)\n",
				       r, through, done, gen)
			:: else -> skip
			fi;
			r = 0
		}
	:: break
	od;
	opdone = 1
}

init {
	atomic {
		byte w = 0;
		do
		:: w == W -> break
		:: w < W -> run writer(w); w++
		od;
		run relay();
		if
		:: MAX_REOPEN > 0 -> run operator()
		:: else -> skip
		fi
	}
}
