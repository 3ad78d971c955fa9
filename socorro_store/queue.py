"""The processing queues: salted merged scans and claims with leases.

Three queues, each a salted time index whose rows point at crashes (``ids:ooid``):

=========  ==============================================  ====================================
queue      table                                           row key (:mod:`socorro_store.keys`)
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

Claims live in the queue row's ``processor_state`` family (5 versions keep the claim history):

* ``processor_state:claim`` — msgpack map ``{"processor": str, "claimed": ms, "expires": ms}``;
  an unclaimed row holds :data:`UNCLAIMED` (msgpack ``{}``), written with the pointer itself.

The claim is that one cell, so a claim is one check-and-put on every backend (HBase's Thrift1
checkAndPut writes a single cell; a second cell would cost a second round trip).

A processor claims a row with ``check_and_put`` on ``processor_state:claim`` expecting the exact
value it read (the unclaimed marker or an expired claim).  Exactly one processor wins a race.
Every pointer this library writes (saving, priority requests, repair) carries the unclaimed
marker, so the expected value is not empty and a row deleted (processed) after the scan read it
cannot be claimed again: the check fails on the missing cell.  (A pointer written by something
else without a claim cell is claimed expecting absence; if it is deleted in between, the claim
leaves a claim-only row that readers skip and ``verify-indexes --repair`` deletes.)  A claim
whose lease expired (a processor died) is taken over the same way, so dead processors' crashes
come back after ``lease_seconds``.  Saving the processed crash deletes the queue rows.
"""

import heapq
import itertools
import os
import socket
import threading
import time

import msgpack

from .errors import InvalidArgument
from .keys import (COL_CLAIM, COL_OOID, CRASH_REPORTS, LEGACY_UNPROCESSED_FLAG, PRIORITY_PREFIX, SALTS,
                   UNPROCESSED_FLAG, crash_row_key, time_index_order, time_index_range)

#: queue name -> (table, row prefix before the salt)
QUEUES = {
    "standard": (UNPROCESSED_FLAG, b""),
    "legacy": (LEGACY_UNPROCESSED_FLAG, b""),
    "priority": (UNPROCESSED_FLAG, PRIORITY_PREFIX),
}
UNCLAIMED = msgpack.packb({})
DEFAULT_LEASE_SECONDS = 300
DEFAULT_PAGE_SIZE = 256
CLAIM_GROUP = 16  # claims per call when the caller gave no limit


def queue_table(queue):
    """``(table, prefix)`` of a queue name; InvalidArgument for an unknown one."""
    try:
        return QUEUES[queue]
    except (KeyError, TypeError):
        raise InvalidArgument(f"unknown queue {queue!r}: expected standard, legacy or priority") from None


def pointer_puts(crash_id):
    """The cells of a new queue row: the pointer and the unclaimed marker."""
    return {COL_OOID: crash_id.encode("ascii"), COL_CLAIM: UNCLAIMED}


def encode_claim(processor_id, claimed_ms, expires_ms):
    return msgpack.packb({"processor": processor_id, "claimed": claimed_ms, "expires": expires_ms})


def decode_claim(raw):
    """The claim map of a cell (``{}`` for unclaimed or unreadable)."""
    if not raw:
        return {}
    try:
        claim = msgpack.unpackb(raw)
    except Exception:  # a foreign value: treat as unclaimed-but-unmatchable by expiry 0
        return {"processor": None, "claimed": 0, "expires": 0}
    return claim if isinstance(claim, dict) else {}


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
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise InvalidArgument(f"limit must be a non-negative int or None: {limit!r}")
    if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, (int, float)) or not lease_seconds > 0:
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
    rows = queue_rows(backend, table, prefix, columns=[COL_OOID, COL_CLAIM], page_size=page_size)
    rows = ((row, cells) for row, cells in rows if cells.get(COL_OOID))  # half-deleted: repair's job
    candidates = with_crash_rows(backend, rows, lambda item: item[1][COL_OOID], page_size)
    while True:
        # Claim in groups (one check_and_put_many each), never more than the limit still allows,
        # and without a limit in small groups: a caller that stops iterating leaves at most a
        # group claimed, and those come back when their lease expires.
        want = CLAIM_GROUP if limit is None else min(page_size, limit - claimed)
        now_ms = int(time.time() * 1000)
        group = []
        for row, cells in candidates:
            current = cells.get(COL_CLAIM)
            if current is not None and decode_claim(current).get("expires", 0) > now_ms:
                continue  # held by a live lease
            group.append((row, cells[COL_OOID], current))
            if len(group) >= want:
                break
        if not group:
            return
        claim = encode_claim(processor_id, now_ms, now_ms + int(lease_seconds * 1000))
        won = backend.check_and_put_many(
            table, [(row, COL_CLAIM, current, {COL_CLAIM: claim}) for row, _cid, current in group])
        for (_row, crash_id, _current), ok in zip(group, won):
            if ok:
                claimed += 1
                yield crash_id.decode("ascii")
        if limit is not None and claimed >= limit:
            return


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


def claim_of(backend, table, row):
    """The current claim map of a queue row, or None when the row does not exist."""
    cells = backend.get_row(table, row, columns=[COL_OOID, COL_CLAIM])
    if not cells:
        return None
    return decode_claim(cells.get(COL_CLAIM))
