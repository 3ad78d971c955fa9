"""Deleting crashes (a privacy request): the crash row, every pointer to it, its queue rows and claim.

What goes, for each crash (layouts in :mod:`socorro_store.schema.keys`):

* the crash row in ``crash_reports`` (annotations, dumps, processed crash);
* its rows in the salted time indexes (submitted_time, unprocessed_flag, legacy_unprocessed_flag,
  legacy_submitted_time, hang_id_submitted_time), its pending priority request, its
  signature_ooid pointer, and its side of the hang-id row;
* the rows in Socorro's layouts that name it (a store shared with Socorro's code, or migrated
  from it): its ``signature + crash_id`` signature pointer, and its side of its
  ``hang_id[0] + time + hang_id`` row in hang_id_submitted_time;
* its claim histories (cells named after its queue rows in the minute's claim row) and its
  dead-letter record, if any;
* its change records (:func:`~.change_records.forget`), and its search document, through
  ``on_deleted`` (the store's search: :meth:`~.search_access.StoreSearch.crashes_deleted`).

What moves with it, when the caller passes its ``live_counters`` (the store does): the counters
the crash row accounts for (``metrics``, ``crash_report_signatures``, the rankings:
:func:`~.contributions.stored_counts`), taken back, so the counts follow the crash rows and a
later ``rollup`` of the day finds nothing to correct.  What stays: the first-seen markers, the
unique-signature and hang-pair counts (``rollup`` recounts them from the crash rows left), and
every count when no ``live_counters`` is given (retention: old crashes go, their closed days'
counts stay).  On a cut-over store the deriver takes them back: a deletion record per crash
(``D``), derived before this returns (:mod:`.counter_deriver`); retention writes a record of its
own (``E``): the deriver keeps the crashes' counts and moves only their queues.

What moves: the queue sizes (``crash_report_queues``) of a crash deleted while queued.  On a
cut-over store the deriver moves them, from the same records.  Else they move as a save moves
them, decided by the same checks so that a deletion racing a save moves them once
(:func:`_dequeue`): this store's own standard pointer by the crash row's ``flags:processed``
N -> Y (whoever wins it, save or deletion, dequeues it; its legacy pointer too, except beside
Socorro's code, whose processors take those), any other pointer by its own check, a
pending priority request by its flag's stamp -> empty.  Else ``queue_sizes()`` would show the
crash queued until ``reconcile-queue``, and every empty poll would scan.

Order: the crash row goes first.  A pointer left behind by a failure half-way is an orphan that
readers skip and ``verify-indexes --repair`` deletes; the crash data itself is gone at once.
Pointers are found from the crash's own cells (submitted time, signature, hang id, priority
request), so deleting one crash never scans an index.
"""

import logging

from ..backends import RowMutation
from ..errors import CrashIDNotFound
from ..schema import keys as K
from ..schema.crash_facts import process_type_of
from ..schema.queue_keys import claim_cell, dead_letter_key
from ..schema.stored import (
    presalt_crash_row_key,
    socorro_hang_time_key,
    socorro_signature_key,
    stored_legacy,
    stored_time,
    time_index_key_forms,
)
from . import change_records, counter_deriver, counters, cut_over
from .contributions import stored_counts
from .crashes import unique_crash_ids
from .states import queue_pointer_forms, socorro_takes_legacy

_log = logging.getLogger("socorro_store")

_COLUMNS = [b"flags", K.COL_SUBMITTED, K.COL_HANG, K.COL_SIGNATURE, K.COL_META]
_TIME_INDEXES = (K.SUBMITTED_TIME, K.UNPROCESSED_FLAG, K.LEGACY_UNPROCESSED_FLAG, K.LEGACY_SUBMITTED_TIME,
                 K.HANG_ID_SUBMITTED_TIME)


def delete_crashes(backend, crash_ids, missing_ok=False, live_counters=None, on_deleted=None):
    """Delete crashes and everything that points at them; return the ids deleted.

    Every id is validated before anything is deleted (InvalidCrashID).  An id with no crash row
    raises :class:`CrashIDNotFound` before anything is deleted, unless ``missing_ok`` (then it
    is skipped: deleting twice is not an error).  ``live_counters``: where the counts the crashes
    accounted for are taken back (see the module docstring); None keeps them.  ``on_deleted``:
    called with the ids deleted once everything else is gone (the store removes them from its
    search index there).
    """
    crash_ids = unique_crash_ids(crash_ids)
    if not crash_ids:
        return []
    # our key and Socorro's pre-salt one (its 2013 client still read it): no row naming the crash stays
    keys = {cid: (K.crash_row_key(cid), presalt_crash_row_key(cid)) for cid in crash_ids}
    found = backend.get_rows(K.CRASH_REPORTS, [row for pair in keys.values() for row in pair], columns=_COLUMNS)
    present = {}
    for crash_id, (row, presalt) in keys.items():
        cells = found.get(row) if K.COL_SUBMITTED in found.get(row, {}) else found.get(presalt, {})
        if K.COL_SUBMITTED in cells:
            present[crash_id] = cells
        elif not missing_ok:
            raise CrashIDNotFound(f"no crash {crash_id}")
    if not present:
        return []
    derived = cut_over.enabled(backend)
    dequeued = [] if derived else _dequeue(backend, present)
    backend.mutate_rows(K.CRASH_REPORTS, [RowMutation(row, delete_row=True) for cid in present for row in keys[cid]
                                          if row in found])
    if live_counters is not None and not derived:  # the rows are gone: what they counted goes with them
        live_counters.send([inc for cells in present.values() for inc in stored_counts(cells, -1)])
    deletes = {table: [] for table in _TIME_INDEXES + (K.SIGNATURE_OOID,)}
    hang_sides, socorro_hang_times = {}, {}
    for crash_id, cells in present.items():
        submitted = stored_time(cells[K.COL_SUBMITTED])  # Socorro's forms too
        # every key form of its pointers: ours, and Socorro's 19-character one (microsecond 0),
        # under which a save also ends a claim history
        forms = time_index_key_forms(crash_id, submitted)
        for table in _TIME_INDEXES:
            deletes[table] += [RowMutation(form, delete_row=True) for form in forms]
        deletes[K.UNPROCESSED_FLAG].append(RowMutation(dead_letter_key(crash_id), delete_row=True))
        queue_rows = list(forms)
        if cells.get(K.COL_PRIORITY):
            requested = K.parse_key_timestamp(cells[K.COL_PRIORITY])
            queue_rows.append(K.priority_key(crash_id, requested))
            deletes[K.UNPROCESSED_FLAG].append(RowMutation(queue_rows[-1], delete_row=True))
        for queue_row in queue_rows:
            claim_row, column = claim_cell(queue_row)
            deletes[K.UNPROCESSED_FLAG].append(RowMutation(claim_row, deletes=[column]))
        if K.COL_SIGNATURE in cells:
            signature = cells[K.COL_SIGNATURE].decode("utf-8", "surrogatepass")
            deletes[K.SIGNATURE_OOID] += [  # ours, and Socorro's ``signature + crash_id``
                RowMutation(K.signature_index_key(signature, submitted, crash_id), delete_row=True),
                RowMutation(socorro_signature_key(signature, crash_id), delete_row=True)]
        if cells.get(K.COL_HANG):
            hang_id = cells[K.COL_HANG].decode("utf-8", "surrogatepass")
            column = K.hang_column(process_type_of(cells.get(K.COL_META, b"{}")))
            hang_sides.setdefault(cells[K.COL_HANG], []).append((column, crash_id.encode("ascii")))
            if hang_id:  # Socorro's ``hang_id[0] + time + hang_id`` row holds its side too
                socorro_hang_times.setdefault(socorro_hang_time_key(hang_id, submitted), []).append(
                    (column, crash_id.encode("ascii")))
    for table, mutations in deletes.items():
        if mutations:
            backend.mutate_rows(table, mutations)
    if hang_sides:
        _delete_hang_sides(backend, K.HANG_ID, hang_sides)
    if socorro_hang_times:
        _delete_hang_sides(backend, K.HANG_ID_SUBMITTED_TIME, socorro_hang_times)
    if dequeued and live_counters is not None:
        live_counters.send(dequeued)
    elif dequeued:
        try:
            backend.increment_many(counters.coalesce(dequeued))
        except Exception as exc:  # noqa: BLE001 - any error: the crash is gone, which is what was asked
            _log.warning("queue counters not moved for deleted crashes (reconcile-queue repairs them): %s", exc)
    change_records.forget(backend, list(present))
    if derived and live_counters is not None:  # the deriver takes back what it counted them under
        live_counters.changed(change_records.record_derived_deletions(backend, list(present)))
        # and consumes the records (the last rows naming the crashes) before this returns
        live_counters.settle()
    elif derived:  # retention: their counts stay; the deriver moves their queues, forgets the rest
        change_records.record_derived_deletions(backend, list(present), expired=True)
        counter_deriver.catch_up(backend)  # before this returns, as above
    if on_deleted is not None:
        on_deleted(sorted(present))
    return list(present)


def _dequeue(backend, present):
    """The queue counter increments of the crashes of ``present`` (``{crash id: cells}``) that this
    deletion takes off their queues, each decided by an atomic check (see the module docstring)."""
    checks, takes = [], {K.UNPROCESSED_FLAG: [], K.LEGACY_UNPROCESSED_FLAG: []}
    beside = any(stored_legacy(cells.get(K.COL_LEGACY)) == 0 for cells in present.values()) and \
        socorro_takes_legacy(backend)
    for crash_id, cells in present.items():
        row, submitted = K.crash_row_key(crash_id), stored_time(cells[K.COL_SUBMITTED])
        legacy = stored_legacy(cells.get(K.COL_LEGACY)) == 0
        own, others = queue_pointer_forms(crash_id, submitted, K.COL_PROCESS_TYPE in cells)
        if cells.get(K.COL_PROCESSED) == b"N":
            if own is not None:
                checks.append(((row, K.COL_PROCESSED, b"N", {K.COL_PROCESSED: b"Y"}), counters.queue_increments(
                    deletes_unprocessed=1, deletes_unprocessed_legacy=int(legacy and not beside))))
            for form in others:
                takes[K.UNPROCESSED_FLAG].append((form, K.COL_OOID, crash_id.encode("ascii"), {K.COL_OOID: b""}))
            if legacy:  # beside Socorro's processors ours may be taken too: counted only if taken here
                for form in ([own] if own is not None and beside else []) + others:
                    takes[K.LEGACY_UNPROCESSED_FLAG].append((form, K.COL_OOID, crash_id.encode("ascii"),
                                                             {K.COL_OOID: b""}))
        if cells.get(K.COL_PRIORITY):
            checks.append(((row, K.COL_PRIORITY, cells[K.COL_PRIORITY], {K.COL_PRIORITY: b""}),
                           counters.queue_increments(deletes_unprocessed_priority=1)))
    out = []
    if checks:
        won = backend.check_and_put_many(K.CRASH_REPORTS, [item for item, _incs in checks])
        out += [inc for (_item, incs), applied in zip(checks, won) if applied for inc in incs]
    for table, counter in ((K.UNPROCESSED_FLAG, "deletes_unprocessed"),
                           (K.LEGACY_UNPROCESSED_FLAG, "deletes_unprocessed_legacy")):
        if takes[table]:
            taken = sum(backend.check_and_put_many(table, takes[table]))
            out += counters.queue_increments(**{counter: taken})
    return out


def _delete_hang_sides(backend, table, hang_sides):
    """Remove each crash's column from its hang row of ``table`` (the hang-id row, or Socorro's
    ``hang_id_submitted_time`` row), only if it still names that crash; a row left with no side
    at all goes entirely (the hang-id row's pair marker included)."""
    rows = backend.get_rows(table, list(hang_sides), columns=[b"ids"])
    mutations = []
    for row, sides in hang_sides.items():
        cells = rows.get(row, {})
        gone = [column for column, crash_id in sides if cells.get(column) == crash_id]
        left = [c for c in cells if K.is_hang_column(c) and c not in gone]
        if not left:
            mutations.append(RowMutation(row, delete_row=True))
        elif gone:
            mutations.append(RowMutation(row, deletes=gone))
    if mutations:
        backend.mutate_rows(table, mutations)
