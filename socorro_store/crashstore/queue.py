"""The processing queues: salted merged scans and claims with leases.

Three queues, each a salted time index whose rows point at crashes (``ids:ooid``):

=========  ==============================================  ====================================
queue      table                                           row key (:mod:`socorro_store.schema.keys`)
=========  ==============================================  ====================================
standard   crash_reports_index_unprocessed_flag            salt + submitted time + crash id
legacy     crash_reports_index_legacy_unprocessed_flag     salt + submitted time + crash id
priority   crash_reports_index_unprocessed_flag            ``priority/`` + salt + request time + id
=========  ==============================================  ====================================

Taking work (:func:`take`) yields crash ids in submission (or request) order across the 16 salt
buckets, holding at most 16 pages of rows (:func:`queue_rows`).  A queue that keeps up is short,
so it is first read with one scan over all buckets and sorted in memory: one scanner instead of
sixteen (3 round trips instead of 48 on HBase's Thrift1).  A longer queue is read by merging the
16 paged bucket scans with :func:`heapq.merge`.

Claims live in one row, :data:`~socorro_store.schema.keys.CLAIMS_ROW` of the unprocessed_flag table:
a ``processor_state:<crash id>`` cell per claimed crash, whichever queue it came from (so a crash
in both the standard and the legacy queue is processed once).  The cell is the crash's claim
history: a sequence of msgpack maps ``{"processor": str, "claimed": ms, "expires": ms}``.  Its
owner is found by walking the history (:func:`owner_of`): the first claim owns, and a later
claim takes over only if it was made at or after the owner's lease expired.

Taking a group of crashes (:func:`take`) costs three calls, whatever the group's size:

1. one read of the group's claim cells, to skip crashes under a live lease;
2. one ``append`` of a claim to each remaining cell (HBase's Append is atomic on the row, and
   returns each cell's resulting history with our claim last): a claim whose walk ends on it
   won, so exactly one of racing processors wins each crash;
3. one read of the won queue rows: a crash processed between the scan and the append has lost
   its queue row (processing deletes the queue rows first, then the claim cells), so it is
   dropped instead of processed twice.

A claim whose lease expired (its processor died) is taken over by the next append, so dead
processors' crashes come back after ``lease_seconds``.  Saving the processed crash deletes the
queue rows, then the claim cells.
"""

import heapq
import itertools
import os
import socket
import threading
import time

import msgpack

from ..backends.base import RowMutation
from ..checks import is_int, is_number
from ..errors import InvalidArgument
from ..schema.keys import (
    CLAIMS_ROW,
    COL_OOID,
    CRASH_REPORTS,
    LEGACY_UNPROCESSED_FLAG,
    PRIORITY_PREFIX,
    SALTS,
    UNPROCESSED_FLAG,
    claim_column,
    crash_row_key,
    time_index_order,
    time_index_range,
)

#: queue name -> (table, row prefix before the salt)
QUEUES = {
    "standard": (UNPROCESSED_FLAG, b""),
    "legacy": (LEGACY_UNPROCESSED_FLAG, b""),
    "priority": (UNPROCESSED_FLAG, PRIORITY_PREFIX),
}
DEFAULT_LEASE_SECONDS = 300
DEFAULT_PAGE_SIZE = 256
CLAIM_GROUP = 16  # claims per call when the caller gave no limit


def queue_table(queue):
    """``(table, prefix)`` of a queue name; InvalidArgument for an unknown one."""
    try:
        return QUEUES[queue]
    except (KeyError, TypeError):
        raise InvalidArgument(f"unknown queue {queue!r}: expected standard, legacy or priority") from None


def encode_claim(processor_id, claimed_ms, expires_ms):
    return msgpack.packb({"processor": processor_id, "claimed": claimed_ms, "expires": expires_ms})


def decode_claims(raw):
    """The claim history of a claim cell, oldest first (a foreign value decodes to no claims)."""
    if not raw:
        return []
    try:
        claims = list(_unpack_all(raw))
    except Exception:  # noqa: BLE001 - a cell this library did not write holds no claim
        return []
    return [c for c in claims if isinstance(c, dict) and isinstance(c.get("claimed"), int)
            and isinstance(c.get("expires"), int)]


def _unpack_all(raw):
    unpacker = msgpack.Unpacker(raw=False, max_buffer_size=max(1, len(raw)))
    unpacker.feed(raw)
    return unpacker


def owner_of(claims):
    """Index of the claim that owns the crash in a history (None for no claims).

    The first claim owns; a later one takes over when it was made at or after the owner's lease
    expired.  Every reader of the same history finds the same owner.
    """
    owner = None
    for i, claim in enumerate(claims):
        if owner is None or claim["claimed"] >= claims[owner]["expires"]:
            owner = i
    return owner


def live_claim(claims, now_ms):
    """The owning claim of a history if its lease is still running at ``now_ms``, else None."""
    owner = owner_of(claims)
    if owner is None or claims[owner]["expires"] <= now_ms:
        return None
    return claims[owner]


def default_processor_id():
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def merged_scan(backend, table, prefix=b"", columns=None, start=None, end=None,
                page_size=DEFAULT_PAGE_SIZE):
    """Rows of the 16 salt buckets under ``prefix``, merged in (time, crash id) order.

    ``start``/``end`` bound the time part (``end`` exclusive).  Each bucket is one paged scan;
    :func:`heapq.merge` pulls one row at a time from each, so memory stays within 16 pages.
    """
    iterators = []
    for salt_char in SALTS:
        low, high = time_index_range(salt_char, start, end, prefix)
        iterators.append(backend.scan(table, start=low, stop=high, columns=columns,
                                      page_size=page_size))
    return heapq.merge(*iterators, key=lambda item: time_index_order(item[0], prefix))


def queue_rows(backend, table, prefix=b"", columns=None, page_size=DEFAULT_PAGE_SIZE):
    """Every row of a queue in (time, crash id) order, with at most 16 pages in memory.

    One scan reads up to 16 pages over the whole key range of the 16 buckets; if the queue is
    that short, its rows are sorted in memory.  Otherwise the 16 bucket scans are merged
    (:func:`merged_scan`), and the probe's rows are dropped.  Rows between the buckets (keys
    whose first byte after ``prefix`` is not a salt) are not queue rows and are skipped, as the
    merged scan would.
    """
    cap = len(SALTS) * page_size
    low = time_index_range(SALTS[0], prefix=prefix)[0]
    high = time_index_range(SALTS[-1], prefix=prefix)[1]
    rows = list(backend.scan(table, start=low, stop=high, columns=columns, limit=cap + 1, page_size=cap + 1))
    if len(rows) > cap:
        del rows
        return merged_scan(backend, table, prefix, columns=columns, page_size=page_size)
    salt_at = len(prefix)
    rows = [item for item in rows if item[0][salt_at:salt_at + 1] in _SALT_BYTES]
    rows.sort(key=lambda item: time_index_order(item[0], prefix))
    return iter(rows)


_SALT_BYTES = frozenset(salt_char.encode("ascii") for salt_char in SALTS)


def take(backend, limit=None, queue="standard", processor_id=None, lease_seconds=DEFAULT_LEASE_SECONDS,
         page_size=DEFAULT_PAGE_SIZE):
    """Claim crashes from ``queue`` in order; return an iterator of crash ids.

    Arguments are validated now; rows are scanned and claimed lazily, a group at a time, as the
    caller iterates.  ``limit`` caps the number of claims; without one, a caller that stops
    iterating may leave up to :data:`CLAIM_GROUP` crashes claimed until their lease expires.
    """
    table, prefix = queue_table(queue)
    if limit is not None and (not is_int(limit) or limit < 0):
        raise InvalidArgument(f"limit must be a non-negative int or None: {limit!r}")
    if not is_number(lease_seconds) or not lease_seconds > 0:
        raise InvalidArgument(f"lease_seconds must be a positive number: {lease_seconds!r}")
    if processor_id is None:
        processor_id = default_processor_id()
    elif not isinstance(processor_id, str) or not processor_id:
        raise InvalidArgument(f"processor_id must be a non-empty string: {processor_id!r}")
    if limit is not None:
        page_size = max(1, min(page_size, limit * 2))
    return _take(backend, table, prefix, limit, processor_id, lease_seconds, page_size)


def _take(backend, table, prefix, limit, processor_id, lease_seconds, page_size):
    if limit == 0:
        return
    claimed = 0
    rows = queue_rows(backend, table, prefix, columns=[COL_OOID], page_size=page_size)
    rows = ((row, cells[COL_OOID]) for row, cells in rows if cells.get(COL_OOID))  # half-deleted: repair's job
    candidates = with_crash_rows(backend, rows, lambda item: item[1], page_size)
    while True:
        # Claim in groups, never more than the limit still allows, and without a limit in small
        # groups: a caller that stops iterating leaves at most a group claimed, and those come
        # back when their lease expires.
        want = CLAIM_GROUP if limit is None else min(page_size, limit - claimed)
        group = list(itertools.islice(candidates, want))
        if not group:
            return
        for crash_id in claim_group(backend, table, group, processor_id, lease_seconds):
            claimed += 1
            yield crash_id
        if limit is not None and claimed >= limit:
            return


def claim_group(backend, table, group, processor_id, lease_seconds):
    """Claim the crashes of ``[(queue row, crash id bytes)]`` not under a live lease; return the
    crash ids won, in the group's order (three calls: see the module docstring)."""
    ids = {}
    for row, raw_id in group:
        crash_id = raw_id.decode("ascii")
        ids.setdefault(claim_column(crash_id), (row, crash_id))  # a crash once, if queued twice
    now_ms = int(time.time() * 1000)
    current = backend.get_rows(UNPROCESSED_FLAG, [CLAIMS_ROW], columns=list(ids)).get(CLAIMS_ROW, {})
    free = [column for column in ids if live_claim(decode_claims(current.get(column)), now_ms) is None]
    if not free:
        return []
    claim = encode_claim(processor_id, now_ms, now_ms + int(lease_seconds * 1000))
    [result] = backend.append_many(UNPROCESSED_FLAG, [(CLAIMS_ROW, {column: claim for column in free})])
    won = []
    for column in free:
        history = decode_claims(result.get(column, b""))
        if history and owner_of(history) == len(history) - 1:
            won.append(column)
    if not won:
        return []
    queued = backend.get_rows(table, [ids[column][0] for column in won], columns=[COL_OOID])
    gone = [column for column in won if ids[column][0] not in queued]
    if gone:  # processed since the scan read them: give their claims back
        backend.mutate_rows(UNPROCESSED_FLAG, [RowMutation(CLAIMS_ROW, deletes=gone)])
    return [ids[column][1] for column in won if ids[column][0] in queued]


def with_crash_rows(backend, items, crash_id_of, chunk=DEFAULT_PAGE_SIZE, columns=(COL_OOID,), accept=None):
    """Pass through the items whose crash row exists, checking ``chunk`` of them per call.

    Pointers are written before the crash row, so a reader can meet a pointer whose crash is
    still being written (or whose write failed): such pointers are skipped, never claimed.
    ``accept(cells)``, given the crash row's ``columns``, can also reject a stale pointer.
    """
    while True:
        batch = list(itertools.islice(items, chunk))
        if not batch:
            return
        keyed = [(_crash_row(crash_id_of(item)), item) for item in batch]
        keyed = [(row, item) for row, item in keyed if row is not None]
        found = backend.get_rows(CRASH_REPORTS, [row for row, _item in keyed], columns=list(columns))
        for row, item in keyed:
            if row in found and (accept is None or accept(found[row])):
                yield item


def _crash_row(crash_id):
    """The crash row key of a pointer's crash id; None for a pointer that holds garbage."""
    try:
        return crash_row_key(crash_id.decode("ascii") if isinstance(crash_id, bytes) else crash_id)
    except (InvalidArgument, UnicodeDecodeError):
        return None


def claims_of(backend, crash_ids):
    """``{crash id: claim history}`` of the crashes that have a claim cell."""
    columns = {claim_column(crash_id): crash_id for crash_id in crash_ids}
    cells = backend.get_rows(UNPROCESSED_FLAG, [CLAIMS_ROW], columns=list(columns)).get(CLAIMS_ROW, {})
    return {columns[column]: decode_claims(raw) for column, raw in cells.items()}


def release_claims(crash_ids):
    """The mutation deleting the claim cells of processed crashes (after their queue rows)."""
    return RowMutation(CLAIMS_ROW, deletes=[claim_column(crash_id) for crash_id in crash_ids])
