"""Saving processed crashes: what is written, in which order, and who counts what.

A crash's state (processed?, signature, priority request) is read before the save (by the take
that handed it out, or here), and may be stale by the time of the write: after a lease takeover,
two processors each hold a state saying "unprocessed", and both save.  Counting from that state
would count the crash twice (signature counters, queue sizes, processed_legacy).  So each count
that depends on a transition is decided by an atomic check-and-put on the crash row, and only the
save whose check-and-put applies sends it:

* first processing (``flags:processed`` N -> Y): ``inserts_processed_legacy``, the signature's
  interval counters, first-seen detection and a processing error;
* a priority request served (``flags:priority_processing`` <stamp> -> empty): the priority queue
  counters;
* a reprocessing's moves (``processed_data:signature`` old -> new: the old signature's counts
  -1 and the new one's +1, dimensioned columns included; ``flags:processing_error`` old -> new:
  the processing errors +-1): only the save whose check applies moves them, so two processors
  saving one reprocessed crash (a priority lease taken over) move its counts once;
* the queue pointers this store's collector wrote (our key form, of a crash row holding
  ``flags:process_type``, which Socorro's collector never writes): dequeued by the first
  processing, so ``deletes_unprocessed`` (and ``deletes_unprocessed_legacy``) go with the N -> Y
  check that counts the crash, and the pointers are deleted with the clean-up.  That collector
  counted them once (``inserts_*``) and exactly one save wins the N -> Y, so the counters stay
  equal to the pointers with no check of their own.  Except the legacy pointer where Socorro's
  own code runs beside this store (:func:`~.states.socorro_takes_legacy`): Socorro's
  ``new_crashes()`` takes legacy pointers, ours included, so there it is taken by its own check
  like the next kind;
* any other pointer (Socorro's key forms, a crash Socorro's collector wrote): taken by a check
  of its own (``ids:ooid`` <crash id> -> empty, on the pointer row), and counted only by the
  save that took it: one Socorro's ``new_crashes()`` already deleted, or another save took, is
  not counted again.  So a counter moves only for a pointer this store dequeued, and after
  ``reconcile-queue`` set the counters to the pointers there are, they stay equal to them.

On a cut-over store (:mod:`.counter_deriver`) no count is the save's, the queue counters
included: it writes a change record, and the deriver moves the crash from what it was counted
under to what its row holds.  So none of the checks above is made but the priority request's
(which keeps a request made since from being erased): the first processing's ``Y``, the new
signature and error go with the row's other cells, and there is no first-seen detection.  The
deriver writes its signature pointer too (and deletes the stale one), and takes the queue
pointers of a crash this store's collector queued (:mod:`.dequeue`): that first processing
sends no clean-up at all.  Its claim stays live until then, a take skips a processed crash
(:func:`~.states.out_of_queue`), and the store's takes pass over the pointers of its own recent
saves unread.  Beside Socorro's processors (which would take the legacy pointer meanwhile), for
a served priority request and for any other crash, the clean-up stays the save's.

A save that loses a check counted nothing for it: another save of the same crash did.  (Two
processors that give one crash different signatures leave it counted under the first one to
store its flag, until ``rollup``; of two concurrent reprocessings with different signatures,
the second's move check fails, so its crash stays counted under the first's until ``rollup``,
and its processed JSON and signature pointer disagree with the stored signature until the next
save or ``verify-indexes --repair``.)  A row whose flag is not ``N`` (Socorro's happybase storage wrote ``""``)
is counted from its state, as before.

Write order, each step one round trip on the critical path (its calls go out at once,
``Backend.overlap``):

1. the change record (:mod:`.change_records`) and, on a store not cut over, the signature
   pointer (harmless side first), one ``mutate_tables``; the crash row gets the record's stamp
   (``flags:changed``) and an emptied ``flags:dead_lettered`` (a processed crash is no dead
   letter; an empty flag reads as none);
2. the crash row, conditional on it still naming its crash (:func:`~.queue.put_if_crash_exists`:
   a deleted crash stays deleted, :class:`~socorro_store.errors.CrashDeleted`).  Where a
   multi-cell check-and-put is atomic (embedded, Bigtable, HBase's Thrift2), a first processing
   writes its whole row by its ``flags:processed`` N -> Y check instead, which also proves the
   crash exists (:func:`_write_first_processings`): one check for the two.  On HBase's Thrift1
   only the first cell is atomic with a check, and that cell must be the processed JSON, so the
   two checks stay apart there;
3. once the row is written, the transitions above (one ``check_and_put_many``) and, beside them,
   the pointer checks of pointers another writer may take (both queue tables at once; for a
   crash this store collected, only its legacy pointer, and only beside Socorro's code).  The transitions never go beside the row: one that applied
   while the row's write failed would leave the crash flagged processed (or its signature
   moved) with no processed data, and the retry would find the flag set and count nothing.  A
   pointer taken before the row would leave a crash out of the queue unprocessed;
4. the counters (handed to the store's live counters, sent in the background on a remote
   backend), and beside them one ``mutate_tables``: the queue pointers and their claim
   histories (``done``), a stale signature pointer (not cut over), the served priority
   request's queue row (its flag stays, emptied: "none pending", so a request made since is
   never deleted), and the queue table's dead-letter marks: a crash processed at last (even by
   a save that follows a dead-lettering it did not know about) is no longer a dead letter.
   These are idempotent deletes, redone by every save of the crash; the counts are decided
   before them, so their failure loses none.

So a first processing of a crash this store collected costs, per group, four round trips on
Thrift1 (three where the check-and-put is atomic: step 3 has nothing to send), and two
check-and-puts per crash (one); beside Socorro's code, one more for a legacy crash.  On a
cut-over store, two round trips (the change records, the crash rows) and one check-and-put per
crash on every backend (the row's existence check; step 3 sends only a served priority
request's, step 4 nothing but the clean-up the deriver does not do).

Upgrading: a save by an older version of this library takes our-form pointers by their own
check, which a save by this version no longer empties; with both versions processing one
crash at once, its queue counters can move twice until ``reconcile-queue``.

A failure at 2 or 3 (ambiguous: applied or not) is the one place a count can be lost without trace
in a retry (the retry sees the flag Y, or the pointer taken); it is tallied in ``live_counters.failures``
(``"uncertain"``), and the next ``rollup`` recomputes the counts.
"""

from ..backends import RowMutation
from ..errors import BackendError, BackendUnavailable, CrashDeleted
from ..schema import keys as K
from . import change_records, counters
from .dequeue import claims_done_mutations, dequeue_mutations
from .queue import put_if_crash_exists
from .states import COL_DEAD_LETTERED, queue_pointer_forms, read_states, socorro_takes_legacy

FLAG_UNPROCESSED = b"N"


def write_processed(backend, crashes, live_counters, held=None):
    """Write prepared processed crashes (see the module docstring for the order and counting).

    :class:`CrashIDNotFound` (nothing written) for a crash unknown when the call starts.  A crash
    deleted after that (:mod:`deletion`, e.g. while a processor held it) is not written: the
    crash-row write is a check-and-put conditional on the row still naming its crash
    (``ids:ooid``), so a save never brings back a deleted crash's processed data, signature
    pointer, claim history or counts.  The other crashes are written, then
    :class:`CrashDeleted` names the deleted ones.

    ``held`` (the store's :class:`~.claims.HeldClaims`): the states its takes read are used, and
    their claims forgotten; only crashes not taken through it have their state read here.
    """
    known = held.pop_many([c.crash_id for c in crashes], saving=True) if held is not None else {}
    try:
        deleted = _write_processed(backend, crashes, live_counters, known)
    except BaseException:
        if known:
            held.saving_failed(known.values())
        raise
    if deleted:
        raise CrashDeleted(deleted)


class Plan:
    """What saving one crash over its (possibly stale) state writes and may count (no I/O)."""

    def __init__(self, crash, state, socorro_beside=False, change=None, derived=False):
        self.crash, self.state = crash, state
        submitted = state["submitted"]
        row = K.crash_row_key(crash.crash_id)
        # the deriver writes a cut-over store's signature pointers, from the rows
        self.sig_put = None if derived else RowMutation(K.signature_index_key(crash.signature, submitted, crash.crash_id),
                                                        {K.COL_OOID: crash.crash_id.encode("ascii")})
        puts = dict(crash.puts)
        # Whatever the state said (a dead-lettering may have happened since it was read), a
        # processed crash is no dead letter: emptied with the row (an empty flag reads as none)
        puts[COL_DEAD_LETTERED] = b""
        self.change = change  # (stamp, record mutation) of its change record, when records are written
        if change is not None:
            puts[K.COL_CHANGED] = change[0]  # lands with the row: the feed's proof the save landed
        self.checks = []  # (row, column, expected, puts, increments, fresh) decided by check-and-put
        self.takes = {K.UNPROCESSED_FLAG: [], K.LEGACY_UNPROCESSED_FLAG: []}  # pointer rows to take
        self.increments, self.fresh = [], []  # counted by this save whatever others do
        self.cleanup = {K.UNPROCESSED_FLAG: [], K.LEGACY_UNPROCESSED_FLAG: [], K.SIGNATURE_OOID: []}
        self.claims_done = []
        legacy = state["legacy"] == 0
        dimension_cells = {**state.get("raw_dimensions", {}), **crash.puts}  # processed values win
        own_form, others = queue_pointer_forms(crash.crash_id, submitted, state.get("own_pointers"))
        # The queue pointers go every time, not only on first processing: deletes are idempotent,
        # and a retry after a save whose clean-up failed must not leave the crash queued forever.
        # Except the first processing of a crash this store's collector queued, on a cut-over
        # store: the deriver dequeues it when it derives the processing (its claim stays live
        # until then, and a take skips a processed crash).  Not beside Socorro's processors
        # (they would take its legacy pointer meanwhile), nor with a priority request served.
        self.dequeue = (crash.crash_id, submitted, state["legacy"])
        if derived and own_form is not None and not state["processed"] and not state["priority"] and not socorro_beside:
            self.dequeue = None
        if not derived:  # (the deriver moves a cut-over store's queue counters: the clean-up takes them)
            for form in others:  # a pointer another writer may take: taken by its own check
                self.takes[K.UNPROCESSED_FLAG].append(form)
            if legacy:
                self.takes[K.LEGACY_UNPROCESSED_FLAG] += others
                if own_form is not None and socorro_beside:  # Socorro's processors take ours too
                    self.takes[K.LEGACY_UNPROCESSED_FLAG].append(own_form)
        # On a cut-over store nothing counts on a transition (the deriver counts from the row):
        # the Y and the stamp go with the row's other cells, with no check of their own.
        if not derived and not state["processed"]:
            first = counters.queue_increments(inserts_processed_legacy=int(legacy))
            if own_form is not None:  # the pointers this store's collector counted, dequeued once
                first += counters.queue_increments(deletes_unprocessed=1,
                                                   deletes_unprocessed_legacy=int(legacy and not socorro_beside))
            first += counters.signature_increments(crash.signature, submitted, cells=dimension_cells)
            if crash.error:
                first += counters.metric_increments(submitted, [counters.PROCESSING_ERRORS])
            fresh = [(crash.signature, submitted)]
            if state.get("processed_flag") == FLAG_UNPROCESSED:
                del puts[K.COL_PROCESSED]  # written by the check-and-put that decides who counts
                transition = {K.COL_PROCESSED: b"Y"}
                if change is not None:
                    # the stamp lands with the Y, not before it with the row: a feed or deriver
                    # reading the row between the two (Thrift1 writes them apart) must see the
                    # save as still in flight, not derive a processed crash flagged unprocessed
                    transition[K.COL_CHANGED] = puts.pop(K.COL_CHANGED)
                self.checks.append((row, K.COL_PROCESSED, FLAG_UNPROCESSED, transition, first, fresh))
            else:  # no N/Y flag (Socorro's happybase rows): counted from the state, as before
                self.increments += first
                self.fresh += fresh
        elif not derived:
            # A reprocessing moves its counts from the state it read, which two processors (a
            # priority lease taken over) both read: each move is decided by a check-and-put of
            # the cell it changes, from the value read to the new one, so only one save moves it.
            if state["signature"] != crash.signature:  # reprocessed with a new signature: move its count
                old = state["signature"]
                moved = counters.signature_increments(crash.signature, submitted, cells=dimension_cells)
                if old is not None:
                    self.cleanup[K.SIGNATURE_OOID].append(
                        RowMutation(K.signature_index_key(old, submitted, crash.crash_id), delete_row=True))
                    moved = counters.signature_increments(old, submitted, -1, cells=dimension_cells) + moved
                expected = old.encode("utf-8", "surrogatepass") if old is not None else None
                self.checks.append((row, K.COL_SIGNATURE, expected, {K.COL_SIGNATURE: puts.pop(K.COL_SIGNATURE)},
                                    moved, [(crash.signature, submitted)]))
            if crash.error != bool(state.get("error")):  # counted once per crash: move it
                moved = counters.metric_increments(submitted, [counters.PROCESSING_ERRORS], 1 if crash.error else -1)
                self.checks.append((row, K.COL_PROCESSING_ERROR, state.get("error_flag"),
                                    {K.COL_PROCESSING_ERROR: puts.pop(K.COL_PROCESSING_ERROR)}, moved, []))
        if state["priority"]:
            requested = K.parse_key_timestamp(state["priority"])
            priority_row = K.priority_key(crash.crash_id, requested)
            self.cleanup[K.UNPROCESSED_FLAG].append(RowMutation(priority_row, delete_row=True))
            self.claims_done.append(priority_row)
            served = [] if derived else counters.queue_increments(deletes_unprocessed_priority=1,
                                                                  inserts_processed_priority=1)
            # the request is served once, emptied by a check-and-put; the empty flag stays (it
            # means "none pending"): a clean-up deleting it would delete a request made since
            self.checks.append((row, K.COL_PRIORITY, state["priority"], {K.COL_PRIORITY: b""}, served, []))
        self.row = RowMutation(row, puts)


def _write_processed(backend, crashes, live_counters, known):
    states = {crash_id: claim.state for crash_id, claim in known.items()}
    unknown = [c.crash_id for c in crashes if c.crash_id not in states]
    if unknown:
        states.update(read_states(backend, unknown))
    beside = any(state["legacy"] == 0 for state in states.values()) and socorro_takes_legacy(backend)
    derived = live_counters.deriver() is not None
    changes = {}
    if derived or change_records.enabled(backend):
        changes = change_records.new_records({c.crash_id for c in crashes}, search=change_records.enabled(backend),
                                             derive=b"S" if derived else None)
    plans = [Plan(crash, states[crash.crash_id], beside, changes.get(crash.crash_id), derived) for crash in crashes]
    # the pointer and the change record first: without the row they are harmless, a row without
    # them would be missing from the signature index and the search index
    first = {K.SIGNATURE_OOID: [p.sig_put for p in plans if p.sig_put is not None],
             K.CHANGES: [mutation for _stamp, mutation in changes.values()]}
    backend.mutate_tables(first)  # a table with no mutation is not written
    written = _write_first_processings(backend, plans, live_counters) if backend.atomic_check_and_put else set()
    increments, fresh, failed, deleted = [], [], None, []
    stored = [p for p in plans if id(p) in written]  # the plans whose counts are decided so far
    try:
        deleted = put_if_crash_exists(backend, [p.row for p in plans if id(p) not in written])
        gone = [p for p in plans if p.crash.crash_id in deleted]
        plans = stored = [p for p in plans if p.crash.crash_id not in deleted]
        if gone:
            # Deleted since its state was read (a processor held it through a privacy deletion):
            # the pointer and the record just written go, and nothing else is written or counted.
            gone_rows = {K.SIGNATURE_OOID: [RowMutation(p.sig_put.row, delete_row=True) for p in gone if p.sig_put],
                         # and so does its change record: nothing may name a deleted crash
                         K.CHANGES: [RowMutation(p.change[1].row, delete_row=True) for p in gone if p.change]}
            backend.mutate_tables(gone_rows)
        _decide_transitions(backend, plans, live_counters, increments, fresh)
    except (BackendUnavailable, BackendError) as exc:
        failed = exc  # what was decided before the failure is still sent
    for plan in stored:
        increments += plan.increments
        fresh += plan.fresh
    # first-seen detection counts unique signatures live; the deriver counts them from the
    # signature counters it writes
    detect = None if derived else (lambda: counters.first_seen(backend, fresh, live_counters.seen_markers))
    calls = [lambda: live_counters.send(increments, detect)]
    if failed is None and plans:
        cleanup = {table: [m for p in plans for m in p.cleanup[table]] for table in plans[0].cleanup}
        cleanup[K.UNPROCESSED_FLAG] += claims_done_mutations([row for p in plans for row in p.claims_done])
        # whatever the state said (a dead-lettering may have happened since it was read), the
        # dead-letter mark goes with the pointers
        for table, mutations in dequeue_mutations([p.dequeue for p in plans if p.dequeue]).items():
            cleanup[table] += mutations
        # the queue pointers go once the processed crash is stored; the counters are already
        # decided, so they go beside the clean-up, and its failure cannot lose them
        calls.append(lambda: backend.mutate_tables(cleanup))
    backend.overlap(calls)
    if derived:
        live_counters.changed([p.change[0] for p in stored])
    if failed is not None:
        raise failed
    return sorted(deleted)


def _decide_transitions(backend, plans, live_counters, increments, fresh):
    """Send the plans' transition checks (their remaining ``checks``) and their pointer takes at
    once, once their crash rows are written; add the increments of what this save won to
    ``increments`` (its first-seen candidates to ``fresh``), even when a call failed.  Raises the
    first failure, after every call ended.

    They follow the crash row, never go beside it: a transition that applied while the row's
    write failed would leave the crash flagged processed (or its signature moved) with no
    processed data, and a retry would find the flag set and count nothing.  The checks and the
    takes touch different rows, so neither waits for the other.
    """
    checks = [(plan, check) for plan in plans for check in plan.checks]
    decided = {}

    def decide():
        try:
            decided["won"] = backend.check_and_put_many(K.CRASH_REPORTS, [check[:4] for _plan, check in checks])
        except (BackendUnavailable, BackendError):
            # applied or not: a retry that finds the flag set counts nothing, so say so
            live_counters.tally("uncertain", sum(len(check[4]) for _plan, check in checks))
            raise

    calls = [lambda: increments.extend(_take_pointers(backend, plans, live_counters))]
    if checks:
        calls.append(decide)
    try:
        backend.overlap(calls)
    finally:
        for (_plan, check), applied in zip(checks, decided.get("won", ())):
            if applied:
                increments += check[4]
                fresh += check[5]


def _write_first_processings(backend, plans, live_counters):
    """Write the crash row of each plan whose first processing a ``flags:processed`` N -> Y
    check decides by that check alone, on a backend whose multi-cell check-and-put is atomic
    (:attr:`~socorro_store.backends.base.Backend.atomic_check_and_put`); return the ``id()`` of
    the plans written, their counts added to the plans' ``increments`` and ``fresh``.

    The check also proves the crash exists: a raw save writes the ``N`` with ``ids:ooid``, a
    deletion removes the whole row, and no stub row ever holds an ``N`` (a save's other cells
    never carry it).  So a check that applies wrote the processed JSON, every other cell and the
    ``Y`` only where the crash exists, in one call instead of two.  A check that does not apply
    (processed meanwhile, or deleted) wrote nothing: its plan takes the two-check path, where
    its existence check writes or finds it deleted, and its flag check counts nothing.
    """
    chosen = []
    for plan in plans:
        for check in plan.checks:
            if check[1] == K.COL_PROCESSED and not plan.row.deletes:
                chosen.append((plan, check))
    if not chosen:
        return set()
    items = [(row, column, expected, {**plan.row.puts, **puts})  # the processed JSON stays first
             for plan, (row, column, expected, puts, _inc, _fresh) in chosen]
    try:
        won = backend.check_and_put_many(K.CRASH_REPORTS, items)
    except (BackendUnavailable, BackendError):
        live_counters.tally("uncertain", sum(len(check[4]) for _plan, check in chosen))
        raise
    written = set()
    for (plan, check), applied in zip(chosen, won):
        if applied:
            plan.checks.remove(check)
            plan.increments += check[4]
            plan.fresh += check[5]
            written.add(id(plan))
    return written


#: the queue counter of each queue table's pointers
_DELETES = {K.UNPROCESSED_FLAG: "deletes_unprocessed", K.LEGACY_UNPROCESSED_FLAG: "deletes_unprocessed_legacy"}


def _take_pointers(backend, plans, live_counters):
    """Take the plans' queue pointers (``ids:ooid`` crash id -> empty, one check-and-put call per
    table with any) and return the queue increments of those this call took."""
    out = []
    for table, counter in _DELETES.items():
        items = [(form, K.COL_OOID, p.crash.crash_id.encode("ascii"), {K.COL_OOID: b""})
                 for p in plans for form in p.takes[table]]
        if not items:
            continue
        try:
            won = backend.check_and_put_many(table, items)
        except (BackendUnavailable, BackendError):
            live_counters.tally("uncertain", len(items))  # taken or not: a retry counts nothing
            raise
        out += counters.queue_increments(**{counter: sum(1 for applied in won if applied)})
    return out
