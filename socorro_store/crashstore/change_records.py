"""Change records: what a save writes so that derived views (the search index) follow it.

See :mod:`~socorro_store.schema.change_keys` for the layout and :mod:`.search_feed` for how they
are consumed.  A store writes records once its ``crash_report_changes`` table exists: a store
created before the table existed writes none until ``create-tables`` adds it (seen within
:data:`RECHECK_SECONDS`); ``search reindex --since`` the upgrade day fills in what came before.
"""

import threading
import time
import weakref

from ..backends import RowMutation
from ..errors import InvalidArgument
from ..schema import change_keys as C
from ..schema import keys as K

RECHECK_SECONDS = 60.0
_exists = weakref.WeakKeyDictionary()  # backend -> (checked at, exists)
_exists_lock = threading.Lock()


def enabled(backend, now=time.monotonic):
    """Whether saves on ``backend`` write change records: its ``crash_report_changes`` table
    exists.  Once seen, remembered; a missing table is looked for again once a minute."""
    with _exists_lock:
        found = _exists.get(backend)
    if found is None or (not found[1] and now() - found[0] > RECHECK_SECONDS):
        found = (now(), backend.table_exists(K.CHANGES))
        with _exists_lock:
            _exists[backend] = found
    return found[1]


def new_records(crash_ids, search=True, derive=None):
    """``{crash id: (stamp, RowMutation of its change record)}``, one fresh stamp per crash.

    ``search``: the record is one for the search feed (``change:ooid``); ``derive`` (``b"S"``
    a save, ``b"D"`` a deletion): one for the counter deriver (``change:derive``).  Each
    consumer deletes its own cell, and a record with neither left is gone."""
    out = {}
    for crash_id in crash_ids:
        stamp = C.new_stamp()
        cells = {K.COL_CHANGE_ID: crash_id.encode("ascii")} if search else {}
        if derive is not None:
            cells[K.COL_CHANGE_DERIVE] = derive
        out[crash_id] = (stamp, RowMutation(C.change_record_key(crash_id, stamp), cells))
    return out


def forget(backend, crash_ids, limit=100_000):
    """Delete every change record naming one of ``crash_ids``, and their feed dead letters (a
    deletion: privacy reaches the records).  One scan of the records waiting (up to ``limit``:
    the feed's backlog), one mutate.  Returns how many records went."""
    wanted = set(crash_ids)
    if not wanted or not enabled(backend):
        return 0
    doomed = [RowMutation(row, delete_row=True)
              for row, _cells in backend.scan(K.CHANGES, stop=C.RECORDS_STOP,
                                              columns=[K.COL_CHANGE_ID, K.COL_CHANGE_DERIVE], limit=limit)
              if _crash_of(row) in wanted]
    wanted = {cid.encode("ascii") for cid in wanted}
    dead_letters = [RowMutation(C.FEED_DEAD_PREFIX + cid, delete_row=True) for cid in sorted(wanted)]
    backend.mutate_rows(K.CHANGES, doomed + dead_letters)
    return len(doomed)


def _crash_of(key):
    try:
        return C.parse_change_record_key(key)[0]
    except InvalidArgument:
        return None  # not a record: left alone


def record_deletions(backend, crash_ids):
    """Write a record for each deleted crash, so a feed removes it from the derived views later.

    Only where they could not be told at once (the search engine unreachable): the record names
    the crash (its id, no data) until the feed consumes it.  Called once the crash rows are
    gone: a feed pass that read a row before its deletion could otherwise consume the record
    and leave the crash indexed."""
    if crash_ids and enabled(backend):
        backend.mutate_rows(K.CHANGES, [mutation for _stamp, mutation in new_records(crash_ids).values()])


def record_derived_deletions(backend, crash_ids, expired=False):
    """Write a deletion record for each deleted crash, once its rows are gone: the deriver
    takes back what it counted (``change:derive`` = ``D``, :mod:`.counter_deriver`), or, for
    crashes ``expired`` by retention (``E``), keeps their counts and moves only their queues.
    Returns the records' stamps."""
    records = new_records(crash_ids, search=False, derive=b"E" if expired else b"D")
    if records:
        backend.mutate_rows(K.CHANGES, [mutation for _stamp, mutation in records.values()])
    return [stamp for stamp, _mutation in records.values()]


def read_records(backend, column, start, size):
    """Up to ``size`` records holding ``column`` (a consumer's cell), from ``start`` on and then
    wrapping round to the first: ``({crash id: [(key, stamp, value)]}, resume, full)``, where
    ``resume`` is where the next read starts (empty: from the first) and ``full`` whether the
    read found ``size`` records.  Rows that are not records are left alone."""
    found = list(backend.scan(K.CHANGES, start=start or None, stop=C.RECORDS_STOP, columns=[column], limit=size))
    full = len(found) == size
    if not full and start:
        found += backend.scan(K.CHANGES, start=None, stop=start, columns=[column], limit=size - len(found))
        resume = b""
    else:
        resume = found[-1][0] + b"\x00" if full else b""
    records = {}
    for key, cells in found:
        try:
            crash_id, stamp = C.parse_change_record_key(key)
        except InvalidArgument:
            continue
        records.setdefault(crash_id, []).append((key, stamp, cells.get(column)))
    return records, resume, full


def records_waiting(backend, column, limit=10_000):
    """``(records holding column, age in seconds of the oldest, or None)``: how far a consumer
    lags, from one bounded scan (up to ``limit`` counted)."""
    oldest, count = None, 0
    for key, _cells in backend.scan(K.CHANGES, stop=C.RECORDS_STOP, columns=[column], limit=limit):
        try:
            stamp = C.parse_change_record_key(key)[1]
        except InvalidArgument:
            continue
        count += 1
        made = C.stamp_time_ns(stamp)
        oldest = made if oldest is None else min(oldest, made)
    return count, (None if oldest is None else max(0.0, (time.time_ns() - oldest) / 1e9))
