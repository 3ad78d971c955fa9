"""A crash's processing state, as the crash row's state cells say it.

Shared by the queue (a take reads it while checking the crash row exists, and keeps it for the
save) and by :mod:`crashes` (saving, reprocessing requests, ``get_processing_state``).
"""

import threading
import time
import weakref

from ..errors import CrashIDNotFound
from ..schema import keys as K
from ..schema.crash_facts import COL_PRODUCT, COL_VERSION
from ..schema.stored import SOCORRO_QUEUE_ROW, stored_legacy, stored_processed, stored_time, time_index_key_forms

#: ``flags:dead_lettered``: the failed attempts of a crash the queue stopped handing out (our
#: addition; see :mod:`socorro_store.schema.queue_keys`).
COL_DEAD_LETTERED = b"flags:dead_lettered"
RAW_DIMENSION_COLUMNS = (COL_PRODUCT, COL_VERSION, K.COL_PROCESS_TYPE)  # process type: for the pt rankings
STATE_COLUMNS = [b"flags", K.COL_SUBMITTED, K.COL_PROCESSED_AT, K.COL_HANG, K.COL_SIGNATURE]


def crash_state(cells, crash_id):
    """The processing state of a crash row's state cells; CrashIDNotFound without a crash row."""
    if K.COL_SUBMITTED not in cells:
        raise CrashIDNotFound(f"no crash {crash_id}")
    dead = cells.get(COL_DEAD_LETTERED)
    return {  # stored data: read in Socorro's formats too (schema/stored.py)
        "submitted": stored_time(cells[K.COL_SUBMITTED]),
        "processed": stored_processed(cells),
        # the stored flag itself: a save's first-processing check-and-put expects it (N -> Y)
        "processed_flag": cells.get(K.COL_PROCESSED),
        # written by this store's collector (Socorro's never writes flags:process_type): its
        # queue pointers are the ones that collector counted, in our key form
        "own_pointers": K.COL_PROCESS_TYPE in cells,
        "error": cells.get(K.COL_PROCESSING_ERROR) == b"1",
        "error_flag": cells.get(K.COL_PROCESSING_ERROR),  # as stored: a reprocessing's check expects it
        "legacy": stored_legacy(cells.get(K.COL_LEGACY)),
        "priority": cells.get(K.COL_PRIORITY),
        "signature": cells[K.COL_SIGNATURE].decode("utf-8", "surrogatepass") if K.COL_SIGNATURE in cells else None,
        "processed_at": cells.get(K.COL_PROCESSED_AT),
        "hang": cells.get(K.COL_HANG),
        "dead_lettered": int(dead) if dead and dead.isdigit() else None,
        # the raw crash's product and version: a processed crash without its own falls back to them
        "raw_dimensions": {column: cells[column] for column in RAW_DIMENSION_COLUMNS if column in cells},
    }


def out_of_queue(state):
    """Whether a crash whose standard or legacy pointer is still there is out of those queues
    all the same: processed, and queued by this store's collector, whose first processing on a
    cut-over store leaves the pointer to the deriver (:mod:`.dequeue`).  A take skips it, and
    :func:`~.crashes.get_processing_state` lists it in neither queue, with no claim."""
    return state["processed"] and state["own_pointers"]


def queue_pointer_forms(crash_id, submitted, own_pointers):
    """``(own form or None, [other forms])`` of a crash's queue pointer keys.

    The own form is the one key this store's collector wrote (for a crash row holding
    ``flags:process_type``): the dequeue of its standard pointer is decided by the crash row's
    ``flags:processed`` N -> Y.  Its legacy pointer (which Socorro's processors take) and the
    others (Socorro's 19-character form; every form of a crash Socorro's collector wrote) may be
    taken by another writer, each by a check of its own."""
    own = K.time_index_key(crash_id, submitted) if own_pointers else None
    return own, [form for form in time_index_key_forms(crash_id, submitted) if form != own]


def read_states(backend, crash_ids):
    """``{crash_id: state}`` for crashes that exist; raise CrashIDNotFound for the first missing."""
    rows = {K.crash_row_key(cid): cid for cid in crash_ids}
    found = backend.get_rows(K.CRASH_REPORTS, list(rows), columns=STATE_COLUMNS)
    return {crash_id: crash_state(found.get(row, {}), crash_id) for row, crash_id in rows.items()}


#: Socorro's legacy queue counter: its collectors and processors move it, and nothing else does
COL_SOCORRO_LEGACY_SIZE = b"counters:current_legacy_unprocessed_size"
#: how long a process trusts what it read of whether Socorro's processors run beside it
SOCORRO_BESIDE_REFRESH_S = 60.0
_socorro_beside = weakref.WeakKeyDictionary()  # backend -> (read at, answer)
_socorro_beside_lock = threading.Lock()


def socorro_queue_counter_exists(backend):
    """Whether Socorro's legacy queue counter exists (one read, now): Socorro's code runs here."""
    cells = backend.get_row(K.METRICS, SOCORRO_QUEUE_ROW, columns=[COL_SOCORRO_LEGACY_SIZE])
    return COL_SOCORRO_LEGACY_SIZE in cells


def socorro_takes_legacy(backend, now=time.monotonic):
    """Whether Socorro's own code runs on this store's tables: its legacy queue counter exists.

    Socorro's processors take (delete) legacy pointers, this store's included, so where they run
    a save counts a legacy dequeue only for a pointer it took by its own check; where they never
    ran, the first-processing check decides it, at no call of its own.  Read once a minute per
    backend: Socorro's code starting beside a running store is seen within that time (until
    then, a legacy pointer it took is counted twice, until ``reconcile-queue``)."""
    with _socorro_beside_lock:
        found = _socorro_beside.get(backend)
    if found is None or now() - found[0] > SOCORRO_BESIDE_REFRESH_S:
        found = (now(), socorro_queue_counter_exists(backend))
        with _socorro_beside_lock:
            _socorro_beside[backend] = found
    return found[1]
