"""The synchronous budget of the one-derivation design (issue "One derivation path", step 0).

A save there acknowledges once these are durable: the crash row (raw, or processed cells and
state), its queue pointers, the ``submitted_time`` index row, and a durable record of the
change (a change cell in the crash row, beside a change pointer written with the pointers).
Everything else is derived later, many crashes per call: the other indexes (legacy submitted
time, signature, hang), every counter, the rankings, the first-seen and hang-pair detections.

:func:`sync_only` turns a store into that budget, for a benchmark: the store's own code runs
(its group commit, claims, check-and-puts, queue pointers), while

* counters and detections are not sent (``live_counters.send`` keeps the queue counters only:
  the processors' empty-poll gate reads them);
* writes to the derived indexes are dropped, and a call left with nothing is not made;
* every crash row written gets a change cell (:data:`CHANGE_CELL_BYTES`), and every save a
  change pointer row, in the same call as its first pointer write: the raw save's index call, and
  in place of the processed save's signature pointer.

Bench code only: it patches one store object's backend and counters.
"""

from socorro_store.backends import RowMutation
from socorro_store.schema import keys as K

#: the indexes a deriver would write (Socorro's readers need only submitted_time and the queues)
DERIVED_INDEXES = (K.LEGACY_SUBMITTED_TIME, K.HANG_ID, K.HANG_ID_SUBMITTED_TIME, K.SIGNATURE_OOID)
#: where the change pointers go in this emulation (any table: one more row in the same call)
CHANGES_TABLE = K.SIGNATURES_SEEN
#: a change record's size: the keys the crash was derived under (signature, product, version,
#: OS, process type, times), msgpack-encoded
CHANGE_CELL_BYTES = 120
COL_CHANGE = b"flags:change"


def _pointer(row):
    return RowMutation(b"~chg/" + row[:1] + row, {b"seen:c": b"1"})


def _with_change(mutation):
    if not mutation.puts or mutation.delete_row:
        return mutation
    return RowMutation(mutation.row, {**mutation.puts, COL_CHANGE: b"c" * CHANGE_CELL_BYTES}, mutation.deletes)


def sync_only(store):
    """Patch ``store`` (its backend object and live counters) to the synchronous budget."""
    backend = store.backend
    mutate_rows, mutate_tables, check_and_put_many = backend.mutate_rows, backend.mutate_tables, backend.check_and_put_many

    def patched_mutate_tables(by_table, *args, **kwargs):
        out = {}
        for table, mutations in by_table.items():
            if table in DERIVED_INDEXES:
                continue
            if table == K.CRASH_REPORTS:
                mutations = [_with_change(m) for m in mutations]
            out.setdefault(table, []).extend(mutations)
        if K.SUBMITTED_TIME in by_table:  # a raw save's pointers: its change pointers go with them
            out.setdefault(CHANGES_TABLE, []).extend(_pointer(m.row) for m in by_table[K.SUBMITTED_TIME])
        if out:
            return mutate_tables(out, *args, **kwargs)
        return None

    def patched_mutate_rows(table, mutations, *args, **kwargs):
        if table == K.SIGNATURE_OOID:  # a processed save's first write: its change pointer instead
            puts = [m for m in mutations if m.puts]
            if puts:
                return mutate_rows(CHANGES_TABLE, [_pointer(m.row) for m in puts], *args, **kwargs)
            return None
        if table in DERIVED_INDEXES:
            return None
        if table == K.CRASH_REPORTS:
            mutations = [_with_change(m) for m in mutations]
        return mutate_rows(table, mutations, *args, **kwargs)

    def patched_check_and_put_many(table, items):
        if table == K.CRASH_REPORTS:
            items = [(row, column, expected, {**puts, COL_CHANGE: b"c" * CHANGE_CELL_BYTES})
                     for row, column, expected, puts in items]
        return check_and_put_many(table, items)

    backend.mutate_rows = patched_mutate_rows
    backend.mutate_tables = patched_mutate_tables
    backend.check_and_put_many = patched_check_and_put_many
    send = store.live_counters.send
    # the queue counters stay: processors' empty polls read them (queue_scans.EmptyPollGate), and
    # without them every poll would look empty until a rescan; one row, sent in the background
    store.live_counters.send = lambda increments, detect=None: send(
        [inc for inc in increments if inc.table == K.METRICS and inc.row == K.QUEUE_ROW])
    return store
