"""The cut-over mark: whether a store's derived data is the deriver's, and moving a store to it.

A store created by this version holds the mark (``~derive/since`` in ``crash_report_derived``)
from its creation on; a store written by an older version is moved by :func:`cut_over` (the
steps are in docs/derivation.md).  Once marked, its saves write change records and no derived
data, and one deriver (:mod:`.counter_deriver`) writes it all.
"""

import threading
import time
import weakref

from ..backends import RowMutation
from ..errors import InvalidArgument, TableNotFound
from ..schema import derived_keys as D
from ..schema import keys as K
from .contributions import COLUMNS as FACT_COLUMNS
from .contributions import capped, facts_of
from .states import socorro_queue_counter_exists

#: seconds a process trusts that a store is not cut over (the mark is looked for again after)
RECHECK_SECONDS = 60.0
#: what is read of a crash row to know what it counts for: ``flags`` holds ``flags:changed``
#: too (naming a column of a family asked for whole would narrow HBase's read of that family)
ROW_COLUMNS = list(FACT_COLUMNS) + [K.COL_OOID]
_enabled = weakref.WeakKeyDictionary()  # backend -> (checked at, enabled)
_enabled_lock = threading.Lock()


def enabled(backend, now=time.monotonic):
    """Whether ``backend``'s store is cut over: its counters are derived, not incremented live
    (the ``~derive/since`` mark; a store without the ``crash_report_derived`` table is not)."""
    with _enabled_lock:
        found = _enabled.get(backend)
    if found is None or (not found[1] and now() - found[0] > RECHECK_SECONDS):
        found = (now(), cut_over_at(backend) is not None)
        with _enabled_lock:
            _enabled[backend] = found
    return found[1]


def forget(backend):
    """Look for the cut-over mark again at the next save (tables were just created)."""
    with _enabled_lock:
        _enabled.pop(backend, None)


def cut_over_at(backend):
    """The UTC ISO time of the store's cut-over to derived counters, or None."""
    try:
        raw = backend.get_row(K.DERIVED, D.SINCE_ROW, [D.COL_SINCE]).get(D.COL_SINCE)
    except TableNotFound:
        return None
    return raw.decode("ascii") if raw else None


def mark_cut_over(backend, moment):
    """Write the cut-over mark (see :func:`cut_over`): from now on this store's counters are
    derived.  Remembered at once for ``backend``."""
    backend.mutate_rows(K.DERIVED, [RowMutation(D.SINCE_ROW, {D.COL_SINCE: moment.isoformat().encode("ascii")})])
    with _enabled_lock:
        _enabled[backend] = (time.monotonic(), True)


def cut_over(backend, admitted, now, progress=None, page=500):
    """Move ``backend``'s store to derived counters; returns ``{"since", "crashes"}``.

    Every crash row's facts are recorded as counted (``derived:counted``: the counters as they
    stand are taken to count them, so run ``rollup --since`` the first day first on a store that
    has seen failures), then the mark is written.  Stop every writer of an older version first:
    it would go on incrementing what the deriver writes.  A store already cut over is left as
    it is.  ``progress(n)`` is called as crashes are recorded.  InvalidArgument beside Socorro's
    own code (its queue counter exists): it increments the same counters, so they stay live."""
    since = cut_over_at(backend)
    if since is not None:
        return {"since": since, "crashes": 0}
    if socorro_queue_counter_exists(backend):
        raise InvalidArgument("Socorro's own code writes beside this store (its queue counter exists) and increments "
                              "the same counters: they stay incremented live")
    done, batch = 0, []

    def flush():
        if batch:
            backend.mutate_rows(K.DERIVED, list(batch))
            if progress is not None:
                progress(len(batch))
            batch.clear()

    for row, cells in backend.scan(K.CRASH_REPORTS, columns=ROW_COLUMNS):
        facts = capped(facts_of(cells), admitted) if K.COL_OOID in cells else None
        crash_id = cells.get(K.COL_OOID, b"").decode("ascii", "replace")
        if facts is None:
            continue
        try:
            if row != K.crash_row_key(crash_id):
                continue  # Socorro's pre-salt key form: never counted by this store
        except InvalidArgument:
            continue
        batch.append(RowMutation(D.counted_row(crash_id), {D.COL_COUNTED: D.encode_facts(facts)}))
        done += 1
        if len(batch) >= page:
            flush()
    flush()
    mark_cut_over(backend, now)
    return {"since": now.isoformat(), "crashes": done}
