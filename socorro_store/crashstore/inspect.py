"""What an operator asks of one crash, of a day of crashes and of the queues.

* :func:`crash_summary`: a crash's processing state (queues, claim), times, signature, product,
  version, and the names and sizes of its dumps;
* :func:`list_crashes`: crash ids of a time range (optionally of one signature), in submission
  order, with their signature and state on request;
* :func:`queue_status`: per queue, its size by the counters and by the index, its oldest item
  and the crashes under a live lease; the dead-lettered crashes (:func:`dead_lettered`).

Everything here only reads.
"""

import itertools
import json
import time
from datetime import datetime, timezone

from ..checks import is_int
from ..errors import InvalidArgument
from ..schema import keys as K
from ..schema.stored import parse_stored_time_index_key, stored_processed
from . import counters, crashes, queue
from .claims import lease_of
from .queue import QUEUES, queue_rows, read_claims, readable_rows, with_crash_rows

_LIST_COLUMNS = (K.COL_OOID, K.COL_PROCESSED, K.COL_SIGNATURE, K.COL_PRIORITY)


def crash_summary(backend, crash_id):
    """``{processing state…, attempts, product, version, dumps: {name: size}}`` of one crash.

    ``attempts`` counts the claims whose lease ended without a save (see
    :func:`crashes.get_processing_state`).
    The dump sizes are read from the ``raw_data`` family: the backend contract has no size-only
    read, so the dumps cross the wire once (one crash, never a day of them).
    """
    state = crashes.get_processing_state(backend, crash_id)
    cells = backend.get_row(K.CRASH_REPORTS, K.crash_row_key(crash_id), columns=[K.COL_META, K.FAMILY_RAW])
    try:
        raw = json.loads(cells.get(K.COL_META, b"{}"))
    except (ValueError, RecursionError):  # unreadable annotations (another client's): no summary of them
        raw = {}
    raw = raw if isinstance(raw, dict) else {}
    dumps = {K.dump_name_from_column(c): len(v) for c, v in sorted(cells.items())
             if c.startswith(K.FAMILY_RAW + b":")}
    claim = state["claim"]
    if claim is not None:
        claim = {**claim, "live": claim["expires"] > int(time.time() * 1000)}
    return {**state, "claim": claim, "product": raw.get("ProductName"), "version": raw.get("Version"),
            "process_type": raw.get("ProcessType"), "dumps": dumps}


def _check_limit(limit):
    if limit is not None and (not is_int(limit) or limit < 0):
        raise InvalidArgument(f"limit must be a non-negative int: {limit!r}")


def list_crashes(backend, start, end, signature=None, limit=None, details=False, page_size=1000, settle=None):
    """Crash ids submitted in ``[start, end)`` (of ``signature`` if given), in submission order.

    With ``details``, yield ``{"crash_id", "submitted", "signature", "state"}`` instead, where
    state is ``processed``, ``queued`` or ``priority`` (a pending reprocessing request).
    Returns a lazy iterator: rows are read page by page.  ``settle``: see
    :func:`~.listings.crashes_by_signature`.
    """
    _check_limit(limit)
    if signature is None:
        ids = crashes.crashes_submitted(backend, start, end, page_size)
    else:
        ids = crashes.crashes_by_signature(backend, signature, start, end, page_size, settle=settle)
    ids = itertools.islice(ids, limit)
    if not details:
        return ids
    return _with_details(backend, ids, page_size)


def _with_details(backend, ids, page_size):
    while True:
        batch = list(itertools.islice(ids, page_size))
        if not batch:
            return
        rows = backend.get_rows(K.CRASH_REPORTS, [K.crash_row_key(cid) for cid in batch],
                                columns=list(_LIST_COLUMNS) + [K.COL_SUBMITTED])
        for crash_id in batch:
            cells = rows.get(K.crash_row_key(crash_id), {})
            if K.COL_SUBMITTED not in cells:
                continue  # deleted since the index was read
            if cells.get(K.COL_PRIORITY):
                state = "priority"
            else:
                # any writer's form: Socorro's happybase storage left flags:processed empty
                state = "processed" if stored_processed(cells) else "queued"
            signature = cells.get(K.COL_SIGNATURE)
            yield {"crash_id": crash_id, "submitted": cells[K.COL_SUBMITTED].decode("ascii", "replace"),
                   "signature": signature.decode("utf-8", "surrogatepass") if signature is not None else None,
                   "state": state}


def dead_lettered(backend):
    """Crash ids the queue set aside after too many expired claims (see
    :func:`queue.dead_lettered_crashes`)."""
    return [record["crash_id"] for record in queue.dead_lettered_crashes(backend)]


def queue_status(backend, now=None, page_size=1000):
    """Per queue (standard, legacy, priority): ``counted`` (crash_report_queues), ``indexed``
    (pointers whose crash row exists), ``oldest`` (its queue time) and ``oldest_age_s``, and
    ``leased`` (crashes of the queue under a live claim); plus ``dead_lettered``.

    Reads each queue index once, in bounded memory (16 pages; see :func:`queue.queue_rows`), and
    the claims of the crashes it finds.
    """
    now = datetime.now(timezone.utc) if now is None else K.parse_timestamp(now, "now")
    now_ms = int(now.timestamp() * 1000)
    sizes = counters.queue_sizes(backend)
    out = {}
    for name, (table, prefix) in QUEUES.items():
        rows = queue_rows(backend, table, prefix, columns=[K.COL_OOID], page_size=page_size)
        # a row whose key is unreadable is skipped (verify-indexes reports it), never fatal
        rows = readable_rows(rows, lambda row, cut=len(prefix): parse_stored_time_index_key(row[cut:]), table)
        rows = ((row, cells[K.COL_OOID], moment) for row, cells, (_cid, moment) in rows if cells.get(K.COL_OOID))
        valid = with_crash_rows(backend, rows, lambda item: item[1], page_size)
        indexed, leased, oldest = 0, 0, None
        while True:
            batch = list(itertools.islice(valid, page_size))
            if not batch:
                break
            if batch and oldest is None:
                oldest = batch[0][2]
            indexed += len(batch)
            leased += _leased(backend, [row for row, _raw, _moment in batch], now_ms)
        age = (now - oldest).total_seconds() if oldest is not None else None
        out[name] = {"counted": sizes[name], "indexed": indexed, "leased": leased,
                     "oldest": K.format_timestamp(oldest).decode() if oldest is not None else None,
                     "oldest_age_s": round(age, 3) if age is not None else None}
    dead = list(dead_lettered(backend))
    return {"queues": out, "dead_lettered": len(dead), "dead_lettered_ids": dead[:100]}


def _leased(backend, queue_keys, now_ms):
    """How many of these queue rows' crashes are under a live lease.  A claim is the history of
    the unprocessed_flag row with the same key (a legacy crash is claimed on its standard row)."""
    histories, _cells = read_claims(backend, queue_keys)
    return sum(1 for history in histories.values() if lease_of(history).live(now_ms))


def crash_exists(backend, crash_id):
    """True when a crash row is stored under ``crash_id`` (validated)."""
    K.validate_crash_id(crash_id)
    return bool(backend.get_row(K.CRASH_REPORTS, K.crash_row_key(crash_id), columns=[K.COL_SUBMITTED]))

